"""The copy block in other people's loops, using only the functions a user copies (helpers.load_copy_block,
`import torch` alone): a whole actor-critic module, a shared trunk, inputs given the wrong way, and three loop
shapes nobody here wrote (benchmark/foreign_loops.py: REINFORCE, A2C with a shared trunk, PPO-style minibatches)
learning CartPole-v1 with the README's settings: damping 1, kl_step_ at its default target 0.01, normalized
advantages."""

import helpers
import numpy as np
import pytest
import torch

from benchmark import foreign_loops

BLOCK = helpers.load_copy_block()
DAMPING = 1.0  # README's "Choosing eta and lambda": lambda = 1 with kl_step_'s default target


ActorCritic = foreign_loops.ActorCritic


def separate_heads(seed=0):
    """An actor MLP and a critic MLP in one module (SB3's MlpPolicy shape): no parameter shared."""
    torch.manual_seed(seed)
    module = torch.nn.ModuleDict(
        {
            "pi": torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)),
            "vf": torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)),
        }
    )
    return module


def batch(n=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, 4, generator=gen),
        torch.randint(0, 2, (n,), generator=gen),
        torch.randn(n, generator=gen),
    )


# ---- 1. the whole policy module: the critic's parameters are not touched -----------------------------------------
def test_a_whole_actor_critic_module_leaves_the_critic_alone():
    """SB3's A2C builds the value loss, then the policy step runs, then the value loss's backward: apply_step_ on the
    whole module used to add 0 in place to the critic's weights, and that backward failed."""
    module = separate_heads()
    obs, actions, adv = batch()
    values = module["vf"](obs).squeeze(-1)
    value_loss = (values - adv).pow(2).mean()  # its graph holds the critic's weights
    critic_before = [p.detach().clone() for p in module["vf"].parameters()]
    versions = [p._version for p in module["vf"].parameters()]
    log_probs = torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)
    direction = BLOCK.smac_direction(module, log_probs, adv, DAMPING)
    BLOCK.apply_step_(module, direction, 0.1)
    value_loss.backward()  # raised "modified by an inplace operation" before
    assert all(torch.equal(p, q) for p, q in zip(module["vf"].parameters(), critic_before))
    assert [p._version for p in module["vf"].parameters()] == versions  # not even a zero added


# ---- 2. a shared trunk: the graph kept for the critic's backward ---------------------------------------------------
def test_a_shared_trunk_keeps_its_graph_for_the_critic():
    torch.manual_seed(0)
    net = ActorCritic(width=8)
    obs, actions, adv = batch()
    logits, values = net(obs)  # one forward for both heads
    log_probs = torch.distributions.Categorical(logits=logits).log_prob(actions)
    direction = BLOCK.smac_direction(net.actor_parameters(), log_probs, adv, DAMPING, retain_graph=True)
    (values - adv).pow(2).mean().backward()  # through the trunk again: needs the kept graph
    assert all(p.grad is not None for p in net.trunk.parameters())
    # the direction is the explicit solve on the actor's parameters (trunk and actor head)
    params = net.actor_parameters()
    rows = []
    for i in range(len(obs)):
        logp = (
            torch.distributions.Categorical(logits=net(obs[i : i + 1])[0]).log_prob(actions[i : i + 1]).sum()
        )
        rows.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(logp, params)]))
    scores = torch.stack(rows).double()
    ell, g = scores.mean(0), (scores * adv.double()[:, None]).mean(0)
    explicit = torch.linalg.solve(
        DAMPING * torch.eye(ell.numel(), dtype=torch.float64) + torch.outer(ell, ell), g
    )
    torch.testing.assert_close(direction.double(), explicit, rtol=1e-4, atol=1e-6)


def test_the_shared_trunk_snippet_works_and_the_other_order_is_the_documented_failure(monkeypatch):
    """docs/drop_in.md's shared-trunk example with the copied functions alone: the value loss's backward before the step
    works (the trunk gets the critic's gradient, the step keeps the KL in its band); with the step first, the
    backward meets the trunk's parameters moved in place: torch's "modified by an inplace operation"."""
    import os
    import re
    import sys

    monkeypatch.setitem(sys.modules, "smac_a2c", BLOCK)
    monkeypatch.setitem(sys.modules, "smac_kl", BLOCK)
    page = open(os.path.join(helpers.ROOT, "docs", "drop_in.md")).read()
    snippet = re.search(r"<!-- shared-trunk-snippet -->\s*```python\n(.*?)```", page, re.S).group(1)
    torch.manual_seed(0)
    namespace = {}
    exec(compile(snippet, "drop_in.md", "exec"), namespace)
    assert namespace["eta"] > 0 and all(p.grad is not None for p in namespace["trunk"].parameters())
    lines = snippet.splitlines()
    backward = next(i for i, line in enumerate(lines) if line.startswith("value_loss.backward()"))
    step = next(i for i, line in enumerate(lines) if line.startswith("eta = kl_step_("))
    lines[backward], lines[step] = lines[step], lines[backward]
    torch.manual_seed(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        exec(compile("\n".join(lines), "drop_in.md, the other order", "exec"), {})


# ---- 4. inputs given the wrong way: accepted, or refused with the fix named ----------------------------------------
def test_numpy_advantages_are_accepted():
    module = separate_heads()
    obs, actions, adv = batch()

    def log_probs():
        return torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)

    from_numpy = BLOCK.smac_direction(module["pi"], log_probs(), adv.numpy().astype(np.float64), DAMPING)
    from_tensor = BLOCK.smac_direction(module["pi"], log_probs(), adv, DAMPING)
    torch.testing.assert_close(from_numpy, from_tensor)


@pytest.mark.parametrize("mistake", ["no_grad", "used-up generator", "damping 0"])
def test_input_mistakes_are_refused_with_a_message(mistake):
    module = separate_heads()
    obs, actions, adv = batch()
    params = module["pi"].parameters()  # a generator
    damping = 0.0 if mistake == "damping 0" else DAMPING
    if mistake == "no_grad":
        with torch.no_grad():
            log_probs = torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)
    else:
        log_probs = torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)
    if mistake == "used-up generator":
        direction = BLOCK.smac_direction(params, log_probs, adv, damping)  # uses the generator up
        with pytest.raises(ValueError, match="generator"):
            BLOCK.apply_step_(params, direction, 0.1)
        return
    with pytest.raises(ValueError, match="no_grad" if mistake == "no_grad" else "damping"):
        BLOCK.smac_direction(params, log_probs, adv, damping)


# ---- kl_step_: the measured KL lands at the target -------------------------------------------------------------------
def test_kl_step_moves_the_policy_by_the_target_kl():
    module = separate_heads()
    obs, actions, adv = batch(n=256)

    def log_probs():
        return torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)

    with torch.no_grad():
        before = torch.distributions.Categorical(logits=module["pi"](obs))
    direction = BLOCK.smac_direction(module["pi"], log_probs(), adv, DAMPING)
    eta = BLOCK.kl_step_(module["pi"], direction, log_probs, target_kl=0.01)
    with torch.no_grad():
        after = torch.distributions.Categorical(logits=module["pi"](obs))
        log_ratio = after.log_prob(actions) - before.log_prob(actions)
        approx_kl = (torch.expm1(log_ratio) - log_ratio).mean().item()
        exact_kl = torch.distributions.kl_divergence(before, after).mean().item()
    assert eta > 0 and 0.005 <= approx_kl <= 0.015
    assert 0.002 <= exact_kl <= 0.03  # the estimator on 256 taken actions tracks the exact KL of the batch


# ---- kl_step_ in any loop: never NaN, never unbounded, nothing it cannot measure -------------------------------------
def likely_actions_batch(n=5, seed=0):
    """A policy and a small batch whose taken actions are already likely (p about 0.999), positive advantages:
    SB3's n_steps=5. No step size brings the measured KL to the target."""
    torch.manual_seed(seed)
    policy = torch.nn.Linear(4, 2)
    with torch.no_grad():
        policy.bias.copy_(torch.tensor([3.5, -3.5]))
    obs = 0.1 * torch.randn(n, 4)
    actions = torch.zeros(n, dtype=torch.long)
    return policy, obs, actions, torch.ones(n)


def categorical_log_probs(module, obs, actions):
    def log_prob_fn():
        return torch.distributions.Categorical(logits=module(obs)).log_prob(actions)

    return log_prob_fn


def flat(module):
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def approx_kl(before, after):
    log_ratio = after - before
    return (torch.expm1(log_ratio) - log_ratio).mean().item()


def test_kl_step_leaves_a_whole_modules_critic_alone():
    """SB3's ActorCriticPolicy passed whole: kl_step_ wrote every parameter in place, the critic's too, and the value
    loss built before the step failed its backward ("modified by an inplace operation")."""
    module = separate_heads()
    obs, actions, adv = batch(n=256)
    value_loss = (module["vf"](obs).squeeze(-1) - adv).pow(2).mean()
    versions = [p._version for p in module["vf"].parameters()]
    log_prob_fn = categorical_log_probs(module["pi"], obs, actions)
    direction = BLOCK.smac_direction(module, log_prob_fn(), adv, DAMPING)
    eta = BLOCK.kl_step_(module, direction, log_prob_fn)
    value_loss.backward()
    assert eta > 0 and [p._version for p in module["vf"].parameters()] == versions


@pytest.mark.parametrize("case", ["likely actions", "zero advantages"])
def test_kl_step_on_a_batch_that_cannot_reach_the_target_is_bounded(case):
    """A batch of five already likely actions: the old search grew eta without bound (the policy saturated, a
    distribution raised on NaN inside kl_step_, the parameters were left NaN). Now the step stops where its largest
    parameter change is max_change, and the eta returned is the one applied. Zero advantages: no step at all."""
    policy, obs, actions, adv = likely_actions_batch()
    if case == "zero advantages":
        adv = torch.zeros_like(adv)
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    before = flat(policy)
    old = log_prob_fn().detach()
    direction = BLOCK.smac_direction(policy, log_prob_fn(), adv, DAMPING)
    eta = BLOCK.kl_step_(policy, direction, log_prob_fn, target_kl=0.01)
    after = flat(policy)
    assert torch.isfinite(after).all()
    if case == "zero advantages":
        assert eta == 0.0 and torch.equal(after, before)
        return
    torch.testing.assert_close(after, before + eta * direction, rtol=1e-5, atol=1e-7)  # the eta applied
    assert (after - before).abs().max().item() == pytest.approx(0.1, rel=1e-4)  # max_change, its default
    assert approx_kl(old, log_prob_fn()) < 0.005  # below the band: what the cap allowed


def test_kl_step_returns_the_eta_it_applied():
    module = separate_heads()
    obs, actions, adv = batch(n=256)
    log_prob_fn = categorical_log_probs(module["pi"], obs, actions)
    before = flat(module["pi"])
    direction = BLOCK.smac_direction(module["pi"], log_prob_fn(), adv, DAMPING)
    eta = BLOCK.kl_step_(module["pi"], direction, log_prob_fn)
    torch.testing.assert_close(flat(module["pi"]), before + eta * direction, rtol=1e-5, atol=1e-7)


def test_kl_step_survives_a_trial_step_its_distribution_refuses():
    """logits = log(w), the taken action's w = 0.05 and pushed down: a trial step that makes it negative gives NaN
    logits, and a distribution that validates its arguments raises inside log_prob_fn. The old kl_step_ let that
    ValueError out (or kept a NaN eta); now a refused trial is a step too long, and the step kept is in the band."""
    w = torch.nn.Parameter(torch.tensor([0.95, 0.05], dtype=torch.float64))
    actions = torch.ones(64, dtype=torch.long)

    def log_prob_fn():
        logits = torch.log(w).expand(64, 2)
        return torch.distributions.Categorical(logits=logits, validate_args=True).log_prob(actions)

    old = log_prob_fn().detach()
    direction = BLOCK.smac_direction([w], log_prob_fn(), -torch.ones(64, dtype=torch.float64), DAMPING)
    eta = BLOCK.kl_step_([w], direction, log_prob_fn, target_kl=1.0, max_change=1.0)
    assert torch.isfinite(w).all() and (w > 0).all()
    assert eta > 0 and 0.5 <= approx_kl(old, log_prob_fn()) <= 1.5


def dropout_policy():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Dropout(0.5), torch.nn.Linear(16, 2))


@pytest.mark.parametrize(
    "mistake", ["stored log-probs", "stored with their graph", "another module", "dropout"]
)
def test_kl_step_refuses_a_log_prob_fn_it_cannot_measure_with(mistake):
    """A log_prob_fn that returns stored values (or reads another module) gave KL 0 for every eta: eta 4.5e18 was
    kept. Dropout made the KL noise. Both are refused with the fix named, every parameter as it was. Stored with
    their graph (kept by retain_graph=True, as a shared trunk does) they pass autograd's test, and are refused as
    the very tensor returned before."""
    policy = dropout_policy() if mistake == "dropout" else separate_heads()["pi"]
    obs, actions, adv = batch(n=256)
    log_probs = torch.distributions.Categorical(logits=policy(obs)).log_prob(actions)
    stored = log_probs.detach()
    if mistake == "stored log-probs":

        def log_prob_fn():
            return stored

    elif mistake == "stored with their graph":

        def log_prob_fn():
            return log_probs

    elif mistake == "another module":
        other = separate_heads(seed=1)["pi"]
        log_prob_fn = categorical_log_probs(other, obs, actions)
    else:
        log_prob_fn = categorical_log_probs(policy, obs, actions)
    direction = BLOCK.smac_direction(policy, log_probs, adv, DAMPING, retain_graph=True)
    before = flat(policy)
    with pytest.raises(ValueError, match="eval mode" if mistake == "dropout" else "recompute"):
        BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert torch.equal(flat(policy), before)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_kl_step_raises_on_a_non_finite_direction_as_apply_step_does(bad):
    """A NaN or Inf in the direction (a diverged step): kl_step_ returned eta 0, "no step", and a loop went on with no
    step in every later update. Now FloatingPointError, as apply_step_ raises, every parameter as it was."""
    policy = separate_heads()["pi"]
    obs, actions, adv = batch()
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    direction = BLOCK.smac_direction(policy, log_prob_fn(), adv, DAMPING)
    direction[3] = bad
    before = flat(policy)
    with pytest.raises(FloatingPointError):
        BLOCK.kl_step_(policy, direction, log_prob_fn)
    with pytest.raises(FloatingPointError):
        BLOCK.apply_step_(policy, direction, 0.1)
    assert torch.equal(flat(policy), before)


def test_kl_step_names_a_nan_in_the_log_probabilities():
    """log_prob_fn() giving NaN (a NaN observation in the batch) was refused as "differs between two calls ... use eval
    mode", which names the wrong fix. Now the refusal names the NaN; nothing moves."""
    policy = separate_heads()["pi"]
    obs, actions, adv = batch()
    direction = BLOCK.smac_direction(policy, categorical_log_probs(policy, obs, actions)(), adv, DAMPING)
    obs[5, 0] = float("nan")

    def log_prob_fn():  # without argument checks, as a loop that checks finiteness itself writes it
        return torch.distributions.Categorical(logits=policy(obs), validate_args=False).log_prob(actions)

    before = flat(policy)
    with pytest.raises(ValueError, match="NaN"):
        BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert torch.equal(flat(policy), before)


@pytest.mark.parametrize("function", ["smac_direction", "apply_step_", "kl_step_"])
def test_a_parameter_listed_twice_or_a_dict_of_parameters_is_refused(function):
    """params naming one parameter twice were accepted, and the step then moved it twice (1.99x); a dict (as
    dict(model.named_parameters())) was an AttributeError. Both are now a ValueError that names the fix, for every
    function that takes params; nothing moves."""
    policy = separate_heads()["pi"]
    obs, actions, adv = batch()
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    direction = BLOCK.smac_direction(policy, log_prob_fn(), adv, DAMPING)
    weight = policy[0].weight
    twice = [weight, *policy.parameters()]
    as_dict = dict(policy.named_parameters())
    before = flat(policy)
    for params, match in ((twice, "twice"), (as_dict, "dict")):
        with pytest.raises(ValueError, match=match):
            if function == "smac_direction":
                BLOCK.smac_direction(params, log_prob_fn(), adv, DAMPING)
            elif function == "apply_step_":
                BLOCK.apply_step_(params, torch.cat([direction[: weight.numel()], direction]), 0.1)
            else:
                BLOCK.kl_step_(params, torch.cat([direction[: weight.numel()], direction]), log_prob_fn)
    assert torch.equal(flat(policy), before)
    import smac_a2c
    import smac_kl

    for module in (smac_a2c, smac_kl):  # the two files' own copies refuse the same
        with pytest.raises(ValueError, match="twice"):
            module.trainable_parameters(twice)
        with pytest.raises(ValueError, match="dict"):
            module.trainable_parameters(as_dict)


def test_kl_step_does_not_refuse_a_policy_flat_at_its_probe():
    """A policy whose log-probabilities do not change at kl_step_'s first, small trial (a saturated softmax on a
    small batch; here logits rounded to whole numbers) still depends on its parameters: not refused as stale (the
    A2C loop on rollouts of 4 hit this), but searched on, to the cap."""
    policy = torch.nn.Linear(4, 2)
    with torch.no_grad():
        policy.bias.copy_(torch.tensor([0.2, -0.2]))
    obs = torch.zeros(4, 4)
    actions = torch.zeros(4, dtype=torch.long)

    def log_prob_fn():
        return torch.distributions.Categorical(logits=torch.round(policy(obs))).log_prob(actions)

    log_probs = torch.distributions.Categorical(logits=policy(obs)).log_prob(actions)
    direction = BLOCK.smac_direction(policy, log_probs, torch.ones(4), DAMPING)
    bias = policy.bias.detach().clone()
    version = policy.weight._version
    eta = BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert eta > 0 and (policy.bias.detach() - bias).abs().max().item() == pytest.approx(0.1, rel=1e-5)
    assert policy.weight._version == version  # its direction is zero: not written


@pytest.mark.parametrize("net", ["linear", "mlp"])
@pytest.mark.parametrize("stored", ["clone", "times one", "stacked list"])
def test_kl_step_refuses_stored_log_probs_whose_graph_is_alive(net, stored):
    """log_prob_fn returning the stored log-probabilities while their graph lives (retain_graph=True): on
    nn.Linear(64, 4) every trial measured KL 0 and the step went to the cap (true KL 0.059 at target 0.01); on an
    MLP torch's own "modified by an inplace operation" escaped. Both are refused now, every parameter as it was."""
    torch.manual_seed(0)
    if net == "linear":
        policy = torch.nn.Linear(64, 4)
    else:
        policy = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    obs = torch.randn(128, 64)
    actions = torch.randint(0, 4, (128,))
    rows = [
        torch.distributions.Categorical(logits=policy(obs[i : i + 1])).log_prob(actions[i])
        for i in range(128)
    ]
    log_probs = torch.cat(rows)

    def log_prob_fn():
        if stored == "clone":
            return log_probs.clone()
        if stored == "times one":
            return log_probs * 1.0
        return torch.cat(rows)

    direction = BLOCK.smac_direction(policy, log_probs, torch.randn(128), DAMPING, retain_graph=True)
    before = flat(policy)
    with pytest.raises(ValueError, match="recompute"):
        BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert torch.equal(flat(policy), before)
    if (
        net == "linear"
    ):  # the user's graph is kept (no parameter it saved was written): it still backpropagates
        torch.autograd.grad(log_probs.sum(), [policy.weight])


@pytest.mark.parametrize("gap", [12.0, 20.0, 30.0])
def test_kl_step_does_not_refuse_a_truly_saturated_softmax(gap):
    """Logit gaps of 12 to 30 with the likely action taken: the log-probabilities round to the same floats under
    the probe step (their derivative is 1e-5 to 1e-13, times a change of 1e-3), and autograd's prediction of that
    change is below rounding: a saturated policy, not a stale log_prob_fn. The search goes on, to the cap."""
    policy = torch.nn.Linear(4, 3)
    with torch.no_grad():
        policy.weight.zero_()
        policy.bias.copy_(torch.tensor([gap, 0.0, 0.0]))
    obs = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    actions = torch.zeros(64, dtype=torch.long)
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    direction = torch.cat([torch.full((12,), 0.01), torch.tensor([0.0, 1.0, -1.0])])
    before = log_prob_fn()
    eta = BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert eta > 0 and (policy.bias.detach()[1:] - torch.tensor([0.1, -0.1])).abs().max() < 1e-6
    assert approx_kl(before, log_prob_fn()) < 0.005


@pytest.mark.parametrize("seed", [0, 2])
def test_kl_step_does_not_refuse_a_live_policy_whose_first_trial_rounds_away(seed):
    """Near-certain taken actions (logit gap 11 at logits of 20): the first, small trial changes each
    log-probability by less than the rounding of the logits' scale, while autograd predicts a change above the
    output's own rounding. The policy is live: a larger step moves it, so it is not refused as stale."""
    signs = 2 * torch.randint(0, 2, (5,), generator=torch.Generator().manual_seed(0)) - 1
    policy = torch.nn.Linear(64, 5)
    with torch.no_grad():
        policy.weight.zero_()
        policy.bias.copy_(torch.tensor([20.0] + [9.0] * 4))
    obs = torch.randn(5, 64, generator=torch.Generator().manual_seed(seed))
    actions = torch.zeros(5, dtype=torch.long)
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    # the top action's weights, moving each row's logit along the sign kl_step_'s stale check projects on
    weights = obs.T @ torch.linalg.solve(obs @ obs.T, signs.float())
    direction = torch.cat([weights / weights.abs().max(), torch.zeros(4 * 64 + 5)])
    before = log_prob_fn()
    eta = BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert eta > 0 and not torch.equal(log_prob_fn(), before)


@pytest.mark.parametrize("gap", [10.0, 11.0])
def test_kl_step_does_not_refuse_a_live_policy_that_even_the_cap_leaves_unchanged(gap):
    """The direction's largest entry on a weight whose input is 0 (it moves nothing), a small one on the taken
    action's bias: the cap's step changes log pi by less than the rounding at the logits' scale (20), while
    autograd predicts a change above the rounding of log pi's own scale. A larger step along the gradient moves
    it: live, not stale. kl_step_ keeps the cap's step, no parameter over the cap."""
    policy = torch.nn.Linear(8, 5)
    with torch.no_grad():
        policy.weight.zero_()
        policy.bias.copy_(torch.tensor([20.0] + [20.0 - gap] * 4))
    obs = torch.randn(1, 8, generator=torch.Generator().manual_seed(0))
    obs[:, 0] = 0.0
    actions = torch.zeros(1, dtype=torch.long)
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    direction = torch.zeros(5 * 8 + 5)
    direction[0] = 1.0
    direction[40] = 0.1 if gap == 11.0 else 0.05
    before = [p.detach().clone() for p in policy.parameters()]
    eta = BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert eta == pytest.approx(0.1)
    moved = torch.cat([(p.detach() - p0).reshape(-1) for p, p0 in zip(policy.parameters(), before)])
    torch.testing.assert_close(moved, eta * direction)


def test_kl_step_with_a_cap_too_small_to_move_any_parameter_returns_0():
    """max_change=1e-12 moves no float32 parameter of order 0.1: eta > 0 was returned for a step that moved
    nothing. Now 0, the parameters bitwise as they were."""
    module = separate_heads()
    obs, actions, adv = batch(n=64)
    log_prob_fn = categorical_log_probs(module["pi"], obs, actions)
    with torch.no_grad():
        for p in module["pi"].parameters():
            p.copy_(p.sign() * (p.abs() + 0.1))  # no parameter near 0, where 1e-12 would show
    direction = BLOCK.smac_direction(module["pi"], log_prob_fn(), adv, DAMPING)
    before = flat(module["pi"])
    assert BLOCK.kl_step_(module["pi"], direction, log_prob_fn, max_change=1e-12) == 0.0
    assert torch.equal(flat(module["pi"]), before)


def test_kl_step_refuses_batchnorm_in_train_mode_and_keeps_its_statistics():
    """A BatchNorm in train mode gives the same output on two calls (batch statistics) but moves its running
    statistics at every call: kl_step_'s trials updated them. Refused now, the statistics as they were."""
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 2))
    obs, actions, adv = batch(n=64)
    log_prob_fn = categorical_log_probs(policy, obs, actions)
    direction = BLOCK.smac_direction(policy, log_prob_fn(), adv, DAMPING)
    state = {k: v.clone() for k, v in policy.state_dict().items()}
    with pytest.raises(ValueError, match="eval mode"):
        BLOCK.kl_step_(policy, direction, log_prob_fn)
    assert all(torch.equal(v, state[k]) for k, v in policy.state_dict().items())
    policy.eval()
    assert BLOCK.kl_step_(policy, direction, log_prob_fn) > 0


@pytest.mark.parametrize("name", ["target_kl", "max_change"])
@pytest.mark.parametrize("value", [-0.01, 0.0, float("nan"), float("inf")])
def test_kl_step_refuses_a_target_or_cap_that_is_not_a_positive_number(name, value):
    """A negative max_change stepped against the direction (descent on J); a target <= 0 raised a TypeError or
    gave eta 5e-8. Both are refused, and a direction of the wrong length too."""
    module = separate_heads()
    obs, actions, adv = batch()
    log_prob_fn = categorical_log_probs(module["pi"], obs, actions)
    direction = BLOCK.smac_direction(module["pi"], log_prob_fn(), adv, DAMPING)
    before = flat(module["pi"])
    with pytest.raises(ValueError, match=name):
        BLOCK.kl_step_(module["pi"], direction, log_prob_fn, **{name: value})
    with pytest.raises(ValueError, match="entries"):
        BLOCK.kl_step_(module["pi"], direction[:-1], log_prob_fn)
    assert torch.equal(flat(module["pi"]), before)


@pytest.mark.parametrize("error", [RuntimeError, ValueError])
def test_kl_step_leaves_every_parameter_as_it_was_when_log_prob_fn_raises(error):
    """An error of the user's own log_prob_fn mid-search (here on its fourth call) propagates, and the trial step
    it interrupted is undone; a ValueError too, unless it is a torch distribution refusing invalid parameters."""
    module = separate_heads()
    obs, actions, adv = batch(n=256)
    inner = categorical_log_probs(module["pi"], obs, actions)
    calls = []

    def log_prob_fn():
        calls.append(1)
        if len(calls) == 4:
            raise error("the user's own bug")
        return inner()

    direction = BLOCK.smac_direction(module["pi"], inner(), adv, DAMPING)
    before = flat(module["pi"])
    with pytest.raises(error, match="own bug"):
        BLOCK.kl_step_(module["pi"], direction, log_prob_fn, target_kl=1e-6)
    assert len(calls) == 4 and torch.equal(flat(module["pi"]), before)


def test_numpy_log_probabilities_are_refused_like_those_without_a_graph():
    module = separate_heads()
    obs, actions, adv = batch()
    log_prob_fn = categorical_log_probs(module["pi"], obs, actions)
    with torch.no_grad():
        no_graph = log_prob_fn()
    for log_probs in (no_graph, log_prob_fn().detach().numpy()):
        with pytest.raises(ValueError, match="no_grad"):
            BLOCK.smac_direction(module["pi"], log_probs, adv, DAMPING)
    direction = BLOCK.smac_direction(module["pi"], log_prob_fn(), adv, DAMPING)

    def numpy_log_probs():
        return log_prob_fn().detach().numpy()

    with pytest.raises(ValueError, match="torch tensor"):
        BLOCK.kl_step_(module["pi"], direction, numpy_log_probs)


# ---- three loops nobody here wrote, CartPole-v1, the README's settings ------------------------------------------------
BUDGET = 200_000  # steps per run; every loop stops once the last 20 episodes average >= 195


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("loop", list(foreign_loops.LOOPS))
def test_the_copied_block_learns_cartpole_in_foreign_loops(loop, seed):
    run = foreign_loops.run_loop(BLOCK, loop, "kl", seed, BUDGET)
    assert run.solved_at is not None, (loop, seed, np.mean(run.returns[-20:]))
    assert np.median(run.kl) <= 0.015  # every step moved the policy by about the target, 0.01


# ---- kl_step_'s stale rule: every moved parameter reached through autograd nodes built in log_prob_fn()'s call ------
GAP = {
    "live": None,
    "saturated": 25.0,
}  # a logit gap of 25 (taken action's p = 1 - 3e-11): log pi rounds to 0


class TrunkAndHead(torch.nn.Module):
    """An MLP or GRU trunk and a linear head over 3 actions; at a saturated policy the head's bias puts the taken
    action (0) `gap` logits ahead and its weights are small, so that every parameter still gets a direction."""

    def __init__(self, trunk="mlp", gap=None):
        super().__init__()
        torch.manual_seed(0)
        if trunk == "gru":
            self.trunk = torch.nn.GRU(4, 16, batch_first=True)
        else:
            self.trunk = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh())
        self.head = torch.nn.Linear(16, 3)
        if gap is not None:
            with torch.no_grad():
                self.head.weight.mul_(0.01)
                self.head.bias.copy_(torch.tensor([gap, 0.0, 0.0]))

    def features(self, obs):
        if isinstance(self.trunk, torch.nn.GRU):
            return self.trunk(obs)[0].reshape(-1, 16)  # (B, T, 16) -> (B T, 16): one action per step
        return self.trunk(obs)

    def forward(self, obs):
        return self.head(self.features(obs))


def stale_rule_case(case, state):
    """(policy, params, direction, log_prob_fn) for one case of the stale rule at a live or saturated policy."""
    gap = GAP[state]
    gru = case in ("gru", "half-stale gru")
    policy = TrunkAndHead("gru" if gru else "mlp", gap)
    gen = torch.Generator().manual_seed(1)
    obs = torch.randn(8, 6, 4, generator=gen) if gru else torch.randn(48, 4, generator=gen)
    actions = torch.zeros(48, dtype=torch.long) if gap else torch.randint(0, 3, (48,), generator=gen)
    adv = torch.randn(48, generator=gen)
    params = policy
    if case in ("earlier features", "encoder with its own optimizer"):
        features = policy.features(obs)  # once per update, its graph kept for the critic
        value_loss = features.pow(2).mean()  # stands in for the critic's loss through the trunk
        params = policy.head

        def log_prob_fn():
            return torch.distributions.Categorical(logits=policy.head(features)).log_prob(actions)

        log_probs = log_prob_fn()
        if case == "encoder with its own optimizer":
            encoder_opt = torch.optim.SGD(policy.trunk.parameters(), lr=0.1)
            value_loss.backward(retain_graph=True)
            encoder_opt.step()  # the encoder moves; the features keep their graph
    elif case == "half-stale gru":
        features = policy.features(obs)  # stored GRU outputs with their graph, only the head recomputed

        def log_prob_fn():
            return torch.distributions.Categorical(logits=policy.head(features)).log_prob(actions)

        log_probs = torch.distributions.Categorical(logits=policy(obs)).log_prob(actions)
    else:
        model = policy
        if case == "compiled":
            # aot_eager: the CompiledFunctionBackward node inductor builds too, without its minute of compiling
            model = torch.compile(policy, backend="aot_eager")

        def log_prob_fn():
            if case == "functional_call":
                logits = torch.func.functional_call(policy, dict(policy.named_parameters()), (obs,))
            else:
                logits = model(obs)
            return torch.distributions.Categorical(logits=logits).log_prob(actions)

        log_probs = log_prob_fn()
        stored = log_probs.detach()
        if case == "stored without graph":

            def log_prob_fn():
                return stored

        elif case == "stored with graph":

            def log_prob_fn():
                return log_probs.clone()

    direction = BLOCK.smac_direction(params, log_probs, adv, DAMPING, retain_graph=True)
    return policy, params, direction, log_prob_fn


CORRECT = ["earlier features", "encoder with its own optimizer", "functional_call", "compiled", "gru"]


@pytest.mark.parametrize("state", list(GAP))
@pytest.mark.parametrize("case", CORRECT)
def test_kl_step_takes_a_correct_log_prob_fn_at_a_live_and_a_saturated_policy(case, state, monkeypatch):
    """Each recomputes log pi from the parameters kl_step_ moves. At a logit gap of 25 the earlier rule ("two calls
    share no autograd node") refused the first two, whose features keep a graph from a forward through layers
    kl_step_ does not move (a shared trunk at 5 transitions per update stopped at update 3,530 on it)."""
    # torch.compile turns torch.distributions' argument checks off for the whole process: back on after the test
    monkeypatch.setattr(torch.distributions.Distribution, "_validate_args", True)
    policy, params, direction, log_prob_fn = stale_rule_case(case, state)
    moved = [p for p in BLOCK.trainable_parameters(params)]
    before = [p.detach().clone() for p in moved]
    old = log_prob_fn().detach()
    eta = BLOCK.kl_step_(params, direction, log_prob_fn)
    change = torch.cat([(p.detach() - p0).reshape(-1) for p, p0 in zip(moved, before)])
    assert eta > 0
    torch.testing.assert_close(change, eta * direction)  # the step is eta times the direction, every entry
    kl = approx_kl(old, log_prob_fn().detach())
    assert 0.005 <= kl <= 0.015 or (kl < 0.005 and change.abs().max().item() == pytest.approx(0.1, rel=1e-4))


def test_kl_step_takes_a_near_deterministic_gaussian_head():
    """std 1e-4, fixed: log pi moves only through the mean, by (a - mu) / sigma^2 per unit of mean: a step of
    about 7e-7 in the mean's weights already moves the policy by the target KL."""
    torch.manual_seed(0)
    mean = torch.nn.Linear(4, 2)
    obs = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        actions = mean(obs) + 1e-4 * torch.randn(64, 2, generator=torch.Generator().manual_seed(1))

    def log_prob_fn():
        return torch.distributions.Normal(mean(obs), 1e-4).log_prob(actions).sum(-1)

    old = log_prob_fn().detach()
    direction = BLOCK.smac_direction(mean, log_prob_fn(), torch.randn(64), DAMPING)
    eta = BLOCK.kl_step_(mean, direction, log_prob_fn)
    assert eta > 0 and 0.005 <= approx_kl(old, log_prob_fn().detach()) <= 0.015


@pytest.mark.parametrize("state", list(GAP))
@pytest.mark.parametrize("case", ["stored without graph", "stored with graph", "half-stale gru"])
def test_kl_step_refuses_a_stale_log_prob_fn_at_a_live_and_a_saturated_policy(case, state):
    """Stored log-probabilities reach no parameter through a node built in the call (with their graph: every one
    through nodes from before it, and those are named; without: none at all); the half-stale function
    (stored GRU outputs with their graph, the head recomputed, params the whole policy) reaches the GRU's only
    through the stored outputs: at a live policy the earlier rule kept its step, having measured only the head's
    part of the change (here a KL of 0.0049; the whole policy's, 0.0069). Refused, naming the parameters, every one as it was."""
    policy, params, direction, log_prob_fn = stale_rule_case(case, state)
    before = flat(policy)
    with pytest.raises(ValueError, match="recompute") as refused:
        BLOCK.kl_step_(params, direction, log_prob_fn)
    assert torch.equal(flat(policy), before)
    named = [name for name, _ in policy.named_parameters()]
    listed = [name for name in named if name in str(refused.value)]
    stale = {  # the parameters the call reaches only through nodes from before it
        "stored without graph": [],  # none reached at all
        "stored with graph": named,
        "half-stale gru": [name for name in named if name.startswith("trunk.")],
    }
    assert listed == stale[case]
