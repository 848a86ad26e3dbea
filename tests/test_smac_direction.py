"""The public drop-in SMAC step: smac_direction / apply_step_ on seven architectures,
against the explicit solve (lambda I + l_bar l_bar^T)^-1 g with per-sample gradients taken one by one,
in float64; the trainer's fast path against the generic path; README's snippet, executed as written."""

import os
import re

import pytest
import torch
import torch.nn as nn
from helpers import tiny_batch

from benchmark import trainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DT = torch.float64
B = 12


def explicit(params, log_prob_i, adv, lam):
    """Reference: per-sample gradients one at a time, then a dense solve."""
    params = [p for p in params if p.requires_grad]
    L = torch.stack(
        [torch.cat([g.reshape(-1) for g in torch.autograd.grad(log_prob_i(i), params)]) for i in range(B)]
    )
    ell, g = L.mean(0), (L * adv[:, None]).mean(0)
    return torch.linalg.solve(lam * torch.eye(ell.numel(), dtype=DT) + torch.outer(ell, ell), g)


class ReluMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(5, 16), nn.Linear(16, 3)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class ConvPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3)
        self.head = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):  # x: (B, 2, 6, 6)
        return self.head(torch.tanh(self.conv(x)).flatten(1))


class GRUPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 8, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x):  # x: (B, L, 3) -> logits from the last hidden state
        return self.head(self.gru(x)[1][-1])


class TransformerPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, 8)
        self.enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x):  # x: (B, L, 3)
        return self.head(self.enc(self.embed(x)).mean(1))


class StateDependentGaussian(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 16), nn.Tanh())
        self.mu, self.log_std = nn.Linear(16, 2), nn.Linear(16, 2)

    def log_prob(self, x, a):
        h = self.body(x)
        return torch.distributions.Normal(self.mu(h), self.log_std(h).exp()).log_prob(a).sum(-1)


def categorical(net, obs_shape, n_act):
    gen = torch.Generator().manual_seed(1)
    obs = torch.randn(B, *obs_shape, generator=gen, dtype=DT)
    act = torch.randint(0, n_act, (B,), generator=gen)

    def lp(sl):
        return torch.distributions.Categorical(logits=net(obs[sl])).log_prob(act[sl])

    return lp, (lambda i: lp(slice(i, i + 1)).sum())


def case(name):
    torch.manual_seed(0)
    if name == "relu-mlp":
        net = ReluMLP().double()
        lp, lpi = categorical(net, (5,), 3)
    elif name == "sequential-gaussian":
        net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        log_std = nn.Parameter(torch.full((2,), -0.3, dtype=DT))
        gen = torch.Generator().manual_seed(1)
        obs, act = torch.randn(B, 4, generator=gen, dtype=DT), torch.randn(B, 2, generator=gen, dtype=DT)

        def lp(sl):
            return torch.distributions.Normal(net(obs[sl]), log_std.exp()).log_prob(act[sl]).sum(-1)

        return (
            list(net.parameters()) + [log_std],
            lp(slice(None)),
            (lambda i: lp(slice(i, i + 1)).sum()),
            None,
        )
    elif name == "conv":
        net = ConvPolicy().double()
        lp, lpi = categorical(net, (2, 6, 6), 3)
    elif name == "gru":
        net = GRUPolicy().double()
        lp, lpi = categorical(net, (4, 3), 2)
    elif name == "transformer":
        net = TransformerPolicy().double().eval()
        lp, lpi = categorical(net, (4, 3), 2)
    elif name == "state-dependent-log-std":
        net = StateDependentGaussian().double()
        gen = torch.Generator().manual_seed(1)
        obs, act = torch.randn(B, 4, generator=gen, dtype=DT), torch.randn(B, 2, generator=gen, dtype=DT)

        def lp(sl):
            return net.log_prob(obs[sl], act[sl])

        return net, lp(slice(None)), (lambda i: lp(slice(i, i + 1)).sum()), None
    elif name == "frozen":
        net = ReluMLP().double()
        net.a.weight.requires_grad_(False)
        lp, lpi = categorical(net, (5,), 3)
        return net, lp(slice(None)), lpi, net.a.weight
    return net, lp(slice(None)), lpi, None


ARCHS = ["relu-mlp", "sequential-gaussian", "conv", "gru", "transformer", "state-dependent-log-std", "frozen"]


@pytest.mark.parametrize("arch", ARCHS)
def test_smac_direction_equals_explicit_solve(arch):
    params, log_probs, log_prob_i, frozen = case(arch)
    plist = list(params.parameters()) if isinstance(params, nn.Module) else params
    adv = torch.randn(B, generator=torch.Generator().manual_seed(2), dtype=DT)
    expected = explicit(plist, log_prob_i, adv, 0.05)
    params2, log_probs2, _, _ = case(arch)  # the same network again, for the vmapped path
    batched = trainer.smac_direction_batched(params2, log_probs2, adv, damping=0.05)
    direction = trainer.smac_direction(params, log_probs, adv, damping=0.05)
    assert direction.shape == expected.shape
    assert torch.allclose(direction, expected, rtol=1e-9, atol=1e-11)
    assert torch.allclose(batched, expected, rtol=1e-9, atol=1e-11)
    # apply_step_: theta + lr * direction on the trainable parameters; frozen ones untouched
    before = [p.detach().clone() for p in plist]
    trainer.apply_step_(params, direction, lr=0.3)
    trainable = [i for i, p in enumerate(plist) if p.requires_grad]
    moved = torch.cat([(plist[i].detach() - before[i]).reshape(-1) for i in trainable])
    assert torch.allclose(moved, 0.3 * direction, atol=1e-14)
    if frozen is not None:
        assert all(torch.equal(plist[i], before[i]) for i in range(len(plist)) if not plist[i].requires_grad)
        assert direction.numel() == sum(p.numel() for p in plist if p.requires_grad)


def test_smac_direction_rejects_bad_shapes_and_sizes():
    net = ReluMLP().double()
    lp = torch.randn(B, dtype=DT, requires_grad=True) + net.a.bias.sum()
    with pytest.raises(ValueError, match=r"shape \(B,\)"):
        trainer.smac_direction(net, lp, torch.randn(B + 1, dtype=DT), 1.0)
    n = sum(p.numel() for p in net.parameters())
    with pytest.raises(ValueError, match=rf"\b3\b.*\b{n}\b|\b{n}\b.*\b3\b"):  # names both sizes
        trainer.apply_step_(net, torch.zeros(3, dtype=DT), 0.1)


# --- the trainer's fast path: the same numbers as the generic path, or not taken at all -------------
@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("hidden", [(8,), (16, 16), (5, 7, 6)])
def test_fast_path_equals_generic_path(discrete, activation, hidden):
    torch.manual_seed(0)
    actor = trainer.Actor(5, 3, discrete, hidden, log_std_init=-0.3, activation=activation).double()
    with torch.no_grad():
        actor.linears[-1].weight.normal_()
    batch = tiny_batch(actor, B=30)
    fast = trainer.mean_score_and_policy_gradient(actor, batch["obs"], batch["actions"], batch["advantages"])
    generic = trainer.mean_score_and_gradient(
        actor, actor.log_prob(batch["obs"], batch["actions"]), batch["advantages"]
    )
    for f, g in zip(fast, generic):
        assert torch.allclose(f, g, atol=1e-12)


class ReluOverride(trainer.Actor):
    """A user's subclass that changes the forward (ReLU instead of the configured tanh)."""

    def forward(self, obs):
        h = obs
        for i, linear in enumerate(self.linears):
            h = linear(h)
            if i < len(self.linears) - 1:
                h = torch.relu(h)
        return h


@pytest.mark.parametrize("discrete", [True, False])
def test_subclass_with_its_own_forward_gets_the_right_smac_step(discrete):
    """A subclass with its own forward (relu) gets its own l_bar on the fast path, not a tanh network's (rel.
    error ~0.14)."""
    torch.manual_seed(0)
    actor = ReluOverride(5, 3, discrete, (8, 7), log_std_init=-0.3).double()
    with torch.no_grad():
        actor.linears[-1].weight.normal_()
    batch = tiny_batch(actor, B=B)
    params = list(actor.parameters())
    before = torch.cat([p.detach().reshape(-1) for p in params])
    expected = explicit(
        params,
        lambda i: actor.log_prob(batch["obs"][i : i + 1], batch["actions"][i : i + 1]).sum(),
        batch["advantages"],
        0.5,
    )
    trainer.smac_step(actor, batch, trainer.Args(damping=0.5, learning_rate=0.1), {})
    after = torch.cat([p.detach().reshape(-1) for p in params])
    assert torch.allclose(after - before, 0.1 * expected, rtol=1e-9, atol=1e-12)


def test_readme_snippet_runs_as_written():
    text = open(os.path.join(ROOT, "README.md")).read()
    block = re.search(r"<!-- smac-snippet -->\s*```python\n(.*?)```", text, re.S)
    assert block, "README lost its SMAC snippet"
    namespace = {}
    exec(compile(block.group(1), "README.md", "exec"), namespace)
    policy = namespace["policy"]
    assert namespace["direction"].numel() == sum(p.numel() for p in policy.parameters())
    assert torch.isfinite(namespace["direction"]).all()
