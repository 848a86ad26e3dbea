"""kl_step_: a step size for SMAC (or any direction) set by the KL divergence the step causes.

Ours, not the paper's: the paper takes a fixed eta per task. Copy this file beside your training loop
(it imports only torch), or import it from this repository:

    from smac_a2c import smac_direction        # or your own direction, flat in the parameters' order
    from smac_kl import kl_step_

    direction = smac_direction(policy, log_prob_fn(), advantages, damping=1.0)
    eta = kl_step_(policy, direction, log_prob_fn, target_kl=0.01)  # theta <- theta + eta * direction

log_prob_fn() recomputes the batch's log pi(a|s), shape (B,), from the policy's current parameters.
The rules (which batch size, stale log-probabilities, a shared trunk) and their measurements:
docs/drop_in.md. The lab runs it with `python -m benchmark.trainer --target-kl 0.01`.
"""

import torch


def trainable_parameters(params) -> list:
    """A module's (or a list's) parameters with requires_grad; their order fixes the flat layout.
    A ValueError for none, for a parameter listed twice, or for a dict (pass its .values())."""
    if isinstance(params, dict):
        raise ValueError("params: a module or a list of parameters, not a dict (pass its .values())")
    if isinstance(params, torch.nn.Module):
        params = params.parameters()
    params = [p for p in params if p.requires_grad]
    if not params:
        raise ValueError("no trainable parameters: pass a module or a list, not a used generator")
    if len({id(p) for p in params}) < len(params):
        raise ValueError("a parameter is listed twice in params: a step would move it twice")
    return params


def refuse_stale(first: torch.Tensor, second: torch.Tensor, moved: dict) -> None:
    """kl_step_'s stale rule, on two outputs of log_prob_fn() at one theta with their graphs: each
    moved parameter ({name: tensor}) must be reached from `second` through nodes built in that call
    (not in `first`'s graph: a stale tensor, made before it, ignores trial steps), or a ValueError."""
    known = set()  # every node of the first call's graph, those made before the call included
    todo = [first.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in known:
            known.add(node)
            todo.extend(child for child, _ in node.next_functions)
    reached = {id(node.variable) for node in known if type(node).__name__ == "AccumulateGrad"}
    fresh = set()  # the parameters the second call reaches through nodes built in it (not known)
    todo = [second.grad_fn]
    while todo:
        node = todo.pop()
        if type(node).__name__ == "AccumulateGrad":
            fresh.add(id(node.variable))
        elif node is not None and node not in known:
            known.add(node)
            todo.extend(child for child, _ in node.next_functions)
    if not reached & {id(p) for p in moved.values()}:
        raise ValueError(
            "log_prob_fn() reaches none of the parameters kl_step_ moves (stored values, another "
            "module, or no_grad): recompute log pi(a|s) from them in each call"
        )
    stale = [name for name, p in moved.items() if id(p) not in fresh]
    if stale:
        raise ValueError(
            f"log_prob_fn() does not recompute from {', '.join(stale)} (reached only through "
            "tensors made before the call, or not at all): recompute in each call the part of the "
            "forward pass that uses them, or leave them out of params"
        )


@torch.no_grad()
def kl_step_(params, direction, log_prob_fn, target_kl: float = 0.01, max_change: float = 0.1) -> float:
    """theta <- theta + eta * direction, eta such that the policy moves by about target_kl on the
    batch (PPO's approx_kl over the taken actions). Returns eta; 0: no step, every parameter as it was.
    log_prob_fn() recomputes the batch's log pi(a|s), shape (B,), from the current parameters, the
    same at every call at one theta (eval mode). A step is kept when its KL is in [target_kl / 2,
    1.5 target_kl], or below at the cap (no parameter moves by more than max_change). Nothing moves
    and: a FloatingPointError for NaN/Inf in the direction (as apply_step_); a ValueError for bad
    arguments, or a log_prob_fn that gives NaN, varies, changes buffers or is stale (refuse_stale).
    Typically 4 forward passes. The whole contract, and from which batch size: docs/drop_in.md."""
    if not 0 < target_kl < float("inf") or not 0 < max_change < float("inf"):
        raise ValueError(f"target_kl, max_change: finite numbers > 0, not {target_kl}, {max_change}")
    buffers = []
    names = {}  # for refuse_stale's message
    if isinstance(params, torch.nn.Module):
        buffers = list(params.buffers())
        names = {id(p): name for name, p in params.named_parameters()}
    params = trainable_parameters(params)
    labels = [names.get(id(p), f"params[{i}]") for i, p in enumerate(params)]
    sizes = [p.numel() for p in params]
    if direction.numel() != sum(sizes):
        raise ValueError(f"direction has {direction.numel()} entries, the parameters {sum(sizes)}")
    if not torch.isfinite(direction).all():
        raise FloatingPointError("NaN or Inf in the direction (a diverged step); nothing was moved")
    moved = [(p, d.view_as(p)) for p, d in zip(params, direction.split(sizes)) if d.any()]
    if not moved:  # a zero direction: no step
        return 0.0
    largest = direction.abs().max().item()
    buffers_before = [b.clone() for b in buffers]
    with torch.enable_grad():  # two calls with their graphs, for the stale rule
        first = log_prob_fn()
        second = log_prob_fn()
    for out in (first, second):
        if not isinstance(out, torch.Tensor) or out.dim() != 1:
            raise ValueError("log_prob_fn() must return log pi(a|s) as a torch tensor (B,)")
    if torch.isnan(first).any() or torch.isnan(second).any():
        raise ValueError("log_prob_fn() gives NaN at the current parameters: no KL can be measured")
    if not torch.equal(first, second):
        raise ValueError("log_prob_fn() differs between two calls at one theta: use eval mode")
    if not all(torch.equal(b, b0) for b, b0 in zip(buffers, buffers_before)):
        for b, b0 in zip(buffers, buffers_before):
            b.copy_(b0)
        raise ValueError("log_prob_fn() changes the module's buffers (BatchNorm): use eval mode")
    refuse_stale(first, second, {n: p for n, p, d in zip(labels, params, direction.split(sizes)) if d.any()})
    old = first.detach()
    del first, second  # their graphs
    start = [p.clone() for p, _ in moved]
    eta_max = max_change / largest
    eta = min(1e-3 / largest, eta_max)  # a probe: no parameter moves by more than 1e-3
    too_short = 0.0  # the largest eta so far whose KL was below the band
    too_long = float("inf")  # the smallest eta so far whose KL was above it, or NaN
    kept = False
    try:  # whatever happens below, unless a step is kept, every parameter ends as it was (finally)
        for _ in range(20):  # at most 20 trials
            for (p, d), p0 in zip(moved, start):
                p.copy_(p0 + eta * d)
            if eta == eta_max and all(torch.equal(p, p0) for (p, _), p0 in zip(moved, start)):
                return 0.0  # even the cap moves no parameter
            try:
                new = log_prob_fn()
            except ValueError as error:  # a validating distribution refusing this trial's parameters
                if "found invalid values" not in str(error):
                    raise
                new = torch.full_like(old, float("nan"))
            log_ratio = new - old
            kl = (torch.expm1(log_ratio) - log_ratio).mean().item()
            if target_kl / 2 <= kl <= 1.5 * target_kl or (kl < target_kl / 2 and eta == eta_max):
                kept = True
                return eta
            if kl < target_kl / 2:
                too_short = eta
            else:
                too_long = eta
            # KL ~ eta^2 at small eta: rescale by that, 10x at most (NaN: / 10); else bisect the bracket
            factor = 0.1
            if kl < float("inf"):
                factor = min(max((target_kl / max(kl, 1e-30)) ** 0.5, 0.1), 10.0)
            eta = min(eta * factor, eta_max)
            if not too_short < eta < too_long:
                eta = (too_short * too_long) ** 0.5
    finally:
        if not kept:
            for (p, _), p0 in zip(moved, start):
                p.copy_(p0)
    return 0.0
