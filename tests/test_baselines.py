"""AC-CG and AC-KFAC (benchmark/trainer.py), checked against explicit matrices in float64.

- The Fisher-vector product (double backward of the mean KL) equals the explicit Fisher built
  from per-sample scores, E_s E_{a~pi}[l l^T], with the expectation over actions computed exactly
  (Categorical: enumeration; Gaussian: Gauss-Hermite quadrature, exact because l l^T is a
  polynomial of degree <= 4 in the Gaussian noise), and equals the explicit KL Hessian.
- CG matches torch.linalg.solve and stops early.
- The K-FAC step of a single Linear layer equals (A (x) G + lambda I)^-1 vec(grad) built with
  torch.kron; the factors equal their per-sample-loop definitions; the state survives a checkpoint.
"""

import copy
import io
import json
import math
import os

import numpy as np
import pytest
import torch
from helpers import only_run, run_main, summary

from benchmark import trainer

DT = torch.float64


def tiny_actor(discrete, obs_dim=3, act_dim=2, hidden=(8, 8), seed=0, log_std_init=-0.3):
    torch.manual_seed(seed)
    actor = trainer.Actor(obs_dim, act_dim, discrete, hidden, log_std_init).to(DT)
    with torch.no_grad():  # larger last layer than the 0.01 init, so the policy is not uniform
        actor.linears[-1].weight.normal_(0, 0.5)
        actor.linears[-1].bias.normal_(0, 0.3)
    return actor


def flat_params(actor):
    return torch.cat([p.detach().reshape(-1) for p in actor.parameters()])


def score(actor, obs_row, action_row):
    """l = grad_theta log pi(a|s) for one (s, a)."""
    return trainer.flat_grad(actor.log_prob(obs_row[None], action_row[None]).sum(), list(actor.parameters()))


def explicit_fisher(actor, obs):
    """mean_s E_{a~pi(.|s)}[l l^T], exact in the actions."""
    d = flat_params(actor).numel()
    F = torch.zeros(d, d, dtype=DT)
    for s in obs:
        if actor.discrete:
            probs = torch.softmax(actor(s[None]), -1)[0].detach()
            for a in range(probs.numel()):
                ell = score(actor, s, torch.tensor(a, dtype=DT))
                F += probs[a] * torch.outer(ell, ell)
        else:  # Gauss-Hermite (probabilists'): E f(z) = sum_k w_k f(z_k) / sqrt(2 pi), exact to degree 2n-1
            z1, w1 = np.polynomial.hermite_e.hermegauss(5)
            w1 = w1 / math.sqrt(2 * math.pi)
            mu, std = actor(s[None])[0].detach(), actor.log_std.detach().exp()
            k = mu.numel()
            grids = np.meshgrid(*([z1] * k), indexing="ij")
            zs = torch.tensor(np.stack([g.reshape(-1) for g in grids], 1), dtype=DT)
            ws = torch.tensor(
                np.prod(np.stack(np.meshgrid(*([w1] * k), indexing="ij")).reshape(k, -1), 0), dtype=DT
            )
            for z, w in zip(zs, ws):
                ell = score(actor, s, mu + std * z)
                F += w * torch.outer(ell, ell)
    return F / obs.shape[0]


def fvp_matrix(actor, obs):
    fvp = trainer.fisher_vector_product(actor, obs)
    d = flat_params(actor).numel()
    return torch.stack([fvp(e) for e in torch.eye(d, dtype=DT)], 1)


def kl_hessian(actor, obs):
    """Hessian of mean_s KL(pi_theta0 || pi_theta) in theta at theta0, by torch.autograd.functional.hessian.
    The KL is written out here independently of smac_a2c.mean_kl."""
    names = [n for n, _ in actor.named_parameters()]
    shapes = [p.shape for p in actor.parameters()]
    theta0 = flat_params(actor)
    with torch.no_grad():
        out0 = actor(obs)

    def unflat(theta):
        d, off = {}, 0
        for n, sh in zip(names, shapes):
            k = math.prod(sh)
            d[n] = theta[off : off + k].view(sh)
            off += k
        return d

    def kl(theta):
        p = unflat(theta)
        out = torch.func.functional_call(actor, p, (obs,))
        if actor.discrete:
            lp0, lp = torch.log_softmax(out0, -1), torch.log_softmax(out, -1)
            return (lp0.exp() * (lp0 - lp)).sum(-1).mean()
        ls0, ls = actor.log_std.detach(), p["log_std"]
        var0, var = torch.exp(2 * ls0), torch.exp(2 * ls)
        return (ls - ls0 + (var0 + (out0 - out) ** 2) / (2 * var) - 0.5).sum(-1).mean()

    return torch.autograd.functional.hessian(kl, theta0)


def obs_batch(n=6, dim=3, seed=1):
    return torch.randn(n, dim, generator=torch.Generator().manual_seed(seed), dtype=DT)


@pytest.mark.parametrize("discrete", [True, False])
def test_fvp_equals_explicit_fisher_and_kl_hessian(discrete):
    actor = tiny_actor(discrete, act_dim=3 if discrete else 2)
    obs = obs_batch()
    d = flat_params(actor).numel()
    assert 100 <= d <= 500
    Fv = fvp_matrix(actor, obs)
    F = explicit_fisher(actor, obs)
    H = kl_hessian(actor, obs)
    scale = F.abs().max()
    assert scale > 1e-2  # a non-trivial Fisher
    torch.testing.assert_close(Fv, F, rtol=0, atol=1e-10 * scale)
    torch.testing.assert_close(Fv, H, rtol=0, atol=1e-10 * scale)
    if not discrete:  # the analytic Gaussian Fisher: mean_s J_mu^T diag(1/sigma^2) J_mu (+) 2 I for log_std
        params = list(actor.linears.parameters())  # the mean's parameters: all but log_std (first)
        k = actor.log_std.numel()
        F_an = torch.zeros(d, d, dtype=DT)
        inv_var = torch.exp(-2 * actor.log_std.detach())
        for s in obs:
            mu = actor(s[None])[0]
            J = torch.stack([trainer.flat_grad(mu[j], params, retain_graph=True) for j in range(mu.numel())])
            F_an[k:, k:] += J.T @ (inv_var[:, None] * J)
        F_an /= obs.shape[0]
        F_an[:k, :k] += 2 * torch.eye(k, dtype=DT)
        torch.testing.assert_close(Fv, F_an, rtol=0, atol=1e-10 * scale)


@pytest.mark.parametrize("discrete", [True, False])
def test_cg_matches_solve_and_cg_step(discrete):
    actor = tiny_actor(discrete)
    obs = obs_batch(8)
    d, damping = flat_params(actor).numel(), 0.1
    M = fvp_matrix(actor, obs) + damping * torch.eye(d, dtype=DT)
    b = torch.randn(d, dtype=DT, generator=torch.Generator().manual_seed(3))
    x = trainer.conjugate_gradient(lambda v: M @ v, b, iters=d, residual_tol=1e-28)
    torch.testing.assert_close(x, torch.linalg.solve(M, b), rtol=1e-8, atol=1e-10)
    few = trainer.conjugate_gradient(lambda v: M @ v, b, iters=2)
    assert (few - torch.linalg.solve(M, b)).norm() > 1e-3 * x.norm()  # 2 iterations are not a solve

    # the whole actor step: step = (F + delta I)^-1 g, theta <- theta + eta step
    batch = {
        "obs": obs,
        "actions": trainer.sample_actions(actor, actor(obs)),
        "advantages": torch.randn(obs.shape[0], dtype=DT, generator=torch.Generator().manual_seed(4)),
    }
    args = trainer.Args(optimizer="cg", learning_rate=0.05, cg_iters=d, cg_damping=damping)
    g = trainer.flat_grad(trainer.policy_objective(actor, batch, args), list(actor.parameters()))
    theta0 = flat_params(actor)
    diag = trainer.cg_step(actor, batch, args, {})
    expected = torch.linalg.solve(M, g)
    torch.testing.assert_close(diag["g"], g)
    # cg_step stops at TRPO's tolerance r^T r < 1e-10, so ||step - x*|| <= ||r|| / lambda_min(M) <= 1e-5 / delta
    residual = (M @ diag["step"] - g).norm()
    assert residual < 1e-5
    assert (diag["step"] - expected).norm() <= residual / damping
    assert (diag["step"] - expected).norm() < 1e-3 * expected.norm()
    torch.testing.assert_close(flat_params(actor), theta0 + 0.05 * diag["step"])


def test_cg_max_kl_puts_the_update_on_the_kl_radius():
    actor = tiny_actor(False)
    obs = obs_batch(8)
    batch = {
        "obs": obs,
        "actions": trainer.sample_actions(actor, actor(obs)),
        "advantages": torch.linspace(-1, 1, 8, dtype=DT),
    }
    d = flat_params(actor).numel()
    M = fvp_matrix(actor, obs) + 0.1 * torch.eye(d, dtype=DT)
    args = trainer.Args(optimizer="cg", learning_rate=0.3, cg_iters=d, cg_max_kl=0.01)
    theta0 = flat_params(actor)
    trainer.cg_step(actor, batch, args, {})
    delta = flat_params(actor) - theta0
    assert 0.5 * delta @ M @ delta == pytest.approx(
        0.01, rel=1e-6
    )  # 1/2 dtheta^T (F + delta I) dtheta = kappa


def test_cg_stops_early():
    d = 50
    Q, _ = torch.linalg.qr(torch.randn(d, d, dtype=DT, generator=torch.Generator().manual_seed(0)))
    M = Q @ torch.diag(torch.linspace(0.5, 5.0, d, dtype=DT)) @ Q.T
    calls = []

    def fvp(v):
        calls.append(1)
        return M @ v

    x = trainer.conjugate_gradient(fvp, Q[:, 7].clone(), iters=20)  # an eigenvector: solved in one step
    assert len(calls) == 1
    torch.testing.assert_close(x, Q[:, 7] / (Q[:, 7] @ M @ Q[:, 7]))  # x = b / eigenvalue
    calls.clear()
    assert torch.equal(
        trainer.conjugate_gradient(fvp, torch.zeros(d, dtype=DT), iters=20), torch.zeros(d, dtype=DT)
    )
    assert len(calls) == 0  # zero residual from the start: no product at all
    calls.clear()
    trainer.conjugate_gradient(fvp, torch.randn(d, dtype=DT), iters=5)
    assert len(calls) == 5  # a generic b uses the whole budget
    calls.clear()
    b = Q[:, :3] @ torch.tensor([1.0, -2.0, 0.5], dtype=DT)  # 3 eigen-directions: exact after 3 products
    trainer.conjugate_gradient(fvp, b, iters=20, residual_tol=1e-20)
    assert len(calls) == 3


def kfac_batch(actor, n=16, seed=5):
    obs = obs_batch(n, actor.linears[0].in_features, seed)
    with torch.no_grad():
        actions = trainer.sample_actions(actor, actor(obs))
    adv = torch.randn(n, dtype=DT, generator=torch.Generator().manual_seed(seed + 1))
    return {"obs": obs, "actions": actions, "advantages": adv}


def per_sample_factors(actor, obs, sampled):
    """The factor definitions, one sample at a time: A = mean a_i a_i^T, a_i = [x_i, 1];
    G = mean g_i g_i^T, g_i = d log pi(a~_i|s_i) / d z_i."""
    L = len(actor.linears)
    As, Gs = [0.0] * L, [0.0] * L
    for i in range(obs.shape[0]):
        xs, zs, out = trainer.actor_layer_io(actor, obs[i : i + 1])
        gs = torch.autograd.grad(actor.log_prob_from_output(out, sampled[i : i + 1]).sum(), zs)
        for k in range(L):
            a = torch.cat([xs[k][0].detach(), torch.ones(1, dtype=DT)])
            As[k] = As[k] + torch.outer(a, a) / obs.shape[0]
            Gs[k] = Gs[k] + torch.outer(gs[k][0], gs[k][0]) / obs.shape[0]
    return As, Gs


@pytest.mark.parametrize("discrete", [True, False])
def test_kfac_factors_equal_per_sample_definitions_and_ema(discrete):
    actor = tiny_actor(discrete, obs_dim=4, act_dim=3)
    batch = kfac_batch(actor)
    args = trainer.Args(optimizer="kfac", learning_rate=1e-2, kfac_decay=0.9)
    state = {}
    prev_A, prev_G = None, None
    for k in range(2):
        before = copy.deepcopy(actor)
        torch.manual_seed(100 + k)
        trainer.kfac_step(actor, batch, args, state)
        torch.manual_seed(100 + k)  # the same draw the step made: the first use of torch's RNG in it
        sampled = trainer.sample_actions(before, before(batch["obs"]))
        As, Gs = per_sample_factors(before, batch["obs"], sampled)
        if k == 0:  # first update: the batch statistics themselves
            exp_A, exp_G = As, Gs
        else:  # EMA
            exp_A = [0.9 * P + 0.1 * a for P, a in zip(prev_A, As)]
            exp_G = [0.9 * P + 0.1 * g for P, g in zip(prev_G, Gs)]
        for i in range(len(actor.linears)):
            torch.testing.assert_close(state["kfac_A"][i], exp_A[i], rtol=1e-12, atol=1e-14)
            torch.testing.assert_close(state["kfac_G"][i], exp_G[i], rtol=1e-12, atol=1e-14)
        prev_A, prev_G = [a.clone() for a in state["kfac_A"]], [g.clone() for g in state["kfac_G"]]
    # the sampled-action Fisher differs from the empirical one built on the batch's own actions
    assert not torch.allclose(Gs[-1], per_sample_factors(before, batch["obs"], batch["actions"])[1][-1])


@pytest.mark.parametrize("discrete", [True, False])
def test_kfac_single_layer_step_equals_kron_solve(discrete):
    actor = tiny_actor(discrete, obs_dim=5, act_dim=3, hidden=())  # one Linear layer: W (3, 5), b (3)
    batch = kfac_batch(actor, n=32)
    damping, eta = 1e-2, 0.1
    args = trainer.Args(optimizer="kfac", learning_rate=eta, kfac_damping=damping, kfac_kl_clip=0.0)
    actor_clip = copy.deepcopy(actor)
    state, state_clip = {}, {}
    torch.manual_seed(7)
    diag = trainer.kfac_step(actor, batch, args, state)
    A, G = state["kfac_A"][0], state["kfac_G"][0]  # (6, 6), (3, 3)
    g = diag["g"]
    o = 0 if discrete else 3  # log_std comes first in actor.parameters()
    assert [n for n, _ in actor.named_parameters()] == ([] if discrete else ["log_std"]) + [
        "linears.0.weight",
        "linears.0.bias",
    ]
    gW, gb = g[o : o + 15].view(3, 5), g[o + 15 : o + 18]
    grad = torch.cat([gW, gb[:, None]], 1)  # (out, in + 1)
    vec = grad.T.reshape(-1)  # column-stacking vec: vec(G X A) = (A^T (x) G) vec(X)
    sol = torch.linalg.solve(torch.kron(A, G) + damping * torch.eye(18, dtype=DT), vec)
    V = sol.view(6, 3).T  # un-vec: (in + 1, out) -> (out, in + 1)
    step = diag["step"]
    torch.testing.assert_close(step[o : o + 15].view(3, 5), V[:, :5], rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(step[o + 15 : o + 18], V[:, 5], rtol=1e-9, atol=1e-12)
    if not discrete:  # log_std: exact Fisher block 2 I
        torch.testing.assert_close(step[:3], g[:3] / (2 + damping))
    # the damping is not a no-op and the preconditioner is not the identity
    assert not torch.allclose(step, g, rtol=1e-3)
    # KL clip: the same step scaled by nu = min(1, sqrt(kl_clip / (eta^2 g^T step)))
    vg = eta**2 * torch.dot(g, step).item()
    kl_clip = 0.1 * vg  # forces nu < 1
    torch.manual_seed(7)
    diag_c = trainer.kfac_step(
        actor_clip,
        batch,
        trainer.Args(optimizer="kfac", learning_rate=eta, kfac_damping=damping, kfac_kl_clip=kl_clip),
        state_clip,
    )
    nu = math.sqrt(kl_clip / vg)
    assert diag_c["kl_clip_scale"] == pytest.approx(nu, rel=1e-12)
    torch.testing.assert_close(diag_c["step"], nu * step)


def test_kfac_update_freq_and_checkpoint_roundtrip():
    actor = tiny_actor(False, obs_dim=4, act_dim=2)
    batch = kfac_batch(actor)
    args = trainer.Args(optimizer="kfac", learning_rate=1e-2, kfac_update_freq=3)
    state, eigs = {}, []
    for _k in range(4):
        trainer.kfac_step(actor, batch, args, state)
        eigs.append(state["kfac_eig_A"][1][1].clone())
    assert torch.equal(eigs[0], eigs[1]) and torch.equal(eigs[1], eigs[2])  # reused between refreshes
    assert not torch.equal(eigs[2], eigs[3])  # refreshed at update 4 (= 1 + 3)
    # checkpoint round trip (as save_checkpoint/train do): the next step is identical
    buf = io.BytesIO()
    torch.save({"actor": actor.state_dict(), "actor_state": trainer.actor_state_dict(state)}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, weights_only=True)  # the actor state is tensors and plain Python only
    actor2 = tiny_actor(False, obs_dim=4, act_dim=2, seed=9)
    actor2.load_state_dict(ckpt["actor"])
    state2 = trainer.load_actor_state(ckpt["actor_state"], actor2, args)
    torch.manual_seed(11)
    d1 = trainer.kfac_step(actor, batch, args, state)
    torch.manual_seed(11)
    d2 = trainer.kfac_step(actor2, batch, args, state2)
    assert state2["kfac_updates"] == state["kfac_updates"] == 5
    torch.testing.assert_close(d1["step"], d2["step"], rtol=0, atol=0)


@pytest.mark.parametrize(
    "flag,value",
    [
        ("--cg-iters", "0"),
        ("--cg-damping", "-1"),
        ("--cg-max-kl", "-0.1"),
        ("--kfac-decay", "1.5"),
        ("--kfac-damping", "0"),
        ("--kfac-update-freq", "0"),
        ("--kfac-kl-clip", "nan"),
    ],
)
def test_bad_baseline_flags_are_config_errors(flag, value, tmp_path, capsys):
    assert trainer.main(["--env-id", "CartPole-v1", "--runs-dir", str(tmp_path), flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


def run(tmp_path, *extra):
    code = run_main(tmp_path, *extra)
    run_dir = only_run(tmp_path)
    return code, summary(run_dir), run_dir


@pytest.mark.parametrize("optimizer", ["cg", "kfac"])
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_smoke(optimizer, env_id, tmp_path):
    code, summary, _ = run(
        tmp_path,
        "--env-id",
        env_id,
        "--optimizer",
        optimizer,
        "--num-steps",
        "64",
        "--total-timesteps",
        "128",
    )
    assert code == 0 and summary["status"] == "finished" and summary["updates"] == 2


@pytest.mark.parametrize("optimizer,lr", [("cg", "8e-2"), ("kfac", "1e-3")])  # the paper's CartPole eta
def test_cartpole_short_run_does_not_diverge(optimizer, lr, tmp_path):
    code, summary, run_dir = run(
        tmp_path,
        "--env-id",
        "CartPole-v1",
        "--optimizer",
        optimizer,
        "--learning-rate",
        lr,
        "--critic-learning-rate",
        "1e-3",
        "--num-steps",
        "500",
        "--total-timesteps",
        "10000",
    )
    assert code == 0 and summary["status"] == "finished" and summary["updates"] == 20
    returns = np.loadtxt(os.path.join(run_dir, "episodes.csv"), delimiter=",", skiprows=1, ndmin=2)[:, 1]
    updates = np.loadtxt(os.path.join(run_dir, "updates.csv"), delimiter=",", skiprows=1, ndmin=2)
    assert (
        len(returns) > 10 and np.isfinite(returns).all() and np.isfinite(updates[:, [2, 3, 4, 6, 7, 8]]).all()
    )
    # resume from the checkpoint: K-FAC's factors come back with it
    ckpt = trainer.load_checkpoint(run_dir)
    if optimizer == "kfac":
        assert ckpt["actor_state"]["kfac_updates"] == 20 and len(ckpt["actor_state"]["kfac_A"]) == 3
    assert trainer.main(["--resume", run_dir, "--total-timesteps", "11000"]) == 0
    with open(os.path.join(run_dir, "summary.json")) as f:
        assert json.load(f)["updates"] == 22
