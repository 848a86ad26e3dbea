"""Tests for the SMAC ablation modes in smac_a2c.py: --fisher per-sample-parallel, previous-EF mixing
(--prev-ef-beta/--prev-ef-rank/--prev-ef-damping, Woodbury) and --step-normalization.
Every mode is checked in float64 against an explicit computation (per-sample loops, d x d solves)."""

import json
import os

import helpers
import numpy as np
import pytest
import torch
from helpers import only_run, per_sample_grads, run_main, tiny_actor

from benchmark import compact, trainer


def tiny_batch(actor, B=30, seed=0):
    return helpers.tiny_batch(actor, B, seed)


def theta(actor):
    return torch.nn.utils.parameters_to_vector(actor.parameters()).detach().clone()


# ------------------------------------------------------------------------------------
# --fisher per-sample-parallel
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
def test_score_factors_give_per_sample_norms_and_weighted_sums(discrete):
    actor = tiny_actor(discrete)
    batch = tiny_batch(actor)
    scores = per_sample_grads(actor, batch)
    xs, deltas, dls = trainer.per_sample_score_factors(actor, batch["obs"], batch["actions"])
    torch.testing.assert_close(
        trainer.per_sample_score_sq_norms(xs, deltas, dls), (scores**2).sum(1), rtol=1e-12, atol=1e-12
    )
    weights = torch.randn(len(scores), 3, dtype=torch.float64)
    torch.testing.assert_close(
        trainer.weighted_score_sums(xs, deltas, dls, weights), weights.T @ scores, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
@pytest.mark.parametrize("max_grad_norm", [0.0, 0.5])
def test_per_sample_parallel_equals_explicit_loop_at_fixed_theta(discrete, max_grad_norm):
    actor = tiny_actor(discrete)
    batch = tiny_batch(actor)
    args = trainer.Args(
        fisher="per-sample-parallel", learning_rate=0.05, damping=0.3, max_grad_norm=max_grad_norm
    )
    theta0, scores = theta(actor), per_sample_grads(actor, batch)
    d = len(theta0)
    total, g_total = torch.zeros(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    for ell, a in zip(scores, batch["advantages"]):  # every sample at the SAME theta0
        g = trainer.clip_norm(ell * a, max_grad_norm)
        total += torch.linalg.solve(
            args.damping * torch.eye(d, dtype=torch.float64) + torch.outer(ell, ell), g
        )
        g_total += g
    diag = trainer.smac_step(actor, batch, args, {})
    torch.testing.assert_close(theta(actor), theta0 + args.learning_rate * total, rtol=1e-10, atol=1e-12)
    B = len(scores)
    torch.testing.assert_close(diag["step"], total / B, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(diag["g"], g_total / B, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(diag["ell_sq_mean"], (scores**2).sum(1).mean())


@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
def test_per_sample_parallel_matches_algorithm_1_to_first_order_in_eta(discrete):
    """The SUM convention: |theta_Alg1 - theta_parallel| = O(eta^2) while both displacements are O(eta)."""
    batch = tiny_batch(tiny_actor(discrete), B=12)
    rel = []
    for eta in (1e-2, 1e-3):
        moved = {}
        for fisher in ("per-sample", "per-sample-parallel"):
            actor = tiny_actor(discrete)
            theta0 = theta(actor)
            trainer.smac_step(actor, batch, trainer.Args(fisher=fisher, learning_rate=eta, damping=0.5), {})
            moved[fisher] = theta(actor) - theta0
        rel.append(
            ((moved["per-sample"] - moved["per-sample-parallel"]).norm() / moved["per-sample"].norm()).item()
        )
    assert rel[0] < 0.2 and rel[1] < 0.15 * rel[0]  # relative gap shrinks ~linearly in eta
    # the mean instead of the sum would be B times too small: relative gap 1 - 1/B
    assert rel[1] < 1e-2


# ------------------------------------------------------------------------------------
# previous-EF mixing
# ------------------------------------------------------------------------------------
def test_woodbury_matches_explicit_solve():
    gen = torch.Generator().manual_seed(3)
    d, m, lam = 40, 6, 0.07
    U = torch.randn(m, d, generator=gen, dtype=torch.float64)
    w = torch.rand(m, generator=gen, dtype=torch.float64) + 1e-3
    g = torch.randn(d, generator=gen, dtype=torch.float64)
    F = lam * torch.eye(d, dtype=torch.float64) + U.T @ torch.diag(w) @ U
    torch.testing.assert_close(
        trainer.woodbury_direction(g, U, w, lam), torch.linalg.solve(F, g), rtol=1e-10, atol=1e-12
    )
    torch.testing.assert_close(
        trainer.woodbury_direction(g, U, w, lam, U @ U.T), torch.linalg.solve(F, g), rtol=1e-10, atol=1e-12
    )
    torch.testing.assert_close(trainer.woodbury_direction(g, U[:0], w[:0], lam), g / lam)
    torch.testing.assert_close(
        trainer.woodbury_direction(g, U[:1], torch.ones(1, dtype=torch.float64), lam),
        trainer.sherman_morrison_direction(g, U[0], lam),
        rtol=1e-12,
        atol=1e-12,
    )


@pytest.mark.parametrize("mode", ["fixed", "decay"])
@pytest.mark.parametrize("rank", [2, 16])
@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
def test_prev_ef_steps_equal_explicit_d_by_d_recursion(mode, rank, discrete):
    """Six SMAC updates with prev-EF mixing against explicit d x d matrices. rank >= 6: the exact recursion
    F_k = beta F_{k-1} + (1-beta) l_k l_k^T (decay: on the damped matrix from F_0 = lambda I; fixed: on the
    undamped EF from F_0 = 0, lambda I added at use). rank 2: lambda_k I + the two newest weighted terms."""
    beta, lam, eta, K = 0.5, 0.2, 1e-3, 6
    actor, reference = tiny_actor(discrete), tiny_actor(discrete)
    args = trainer.Args(
        prev_ef_beta=beta, prev_ef_rank=rank, prev_ef_damping=mode, damping=lam, learning_rate=eta
    )
    d = len(theta(actor))
    eye = torch.eye(d, dtype=torch.float64)
    F = lam * eye if mode == "decay" else torch.zeros(d, d, dtype=torch.float64)
    history, state = [], {}
    for k in range(1, K + 1):
        batch = tiny_batch(actor, B=20, seed=k)
        scores = per_sample_grads(reference, batch)
        ell, g = scores.mean(0), (scores * batch["advantages"][:, None]).mean(0)
        F = beta * F + (1 - beta) * torch.outer(ell, ell)
        history.append(ell)
        if rank >= K:
            F_hat = F if mode == "decay" else lam * eye + F
        else:
            lam_k = lam * beta**k if mode == "decay" else lam
            F_hat = lam_k * eye + sum(
                (1 - beta) * beta ** (k - j) * torch.outer(history[j - 1], history[j - 1])
                for j in range(max(1, k - rank + 1), k + 1)
            )
        new = theta(reference) + eta * torch.linalg.solve(F_hat, g)
        torch.nn.utils.vector_to_parameters(new, reference.parameters())
        diag = trainer.smac_step(actor, batch, args, state)
        torch.testing.assert_close(theta(actor), new, rtol=1e-9, atol=1e-11)
        torch.testing.assert_close(diag["ell"], ell, rtol=1e-8, atol=1e-9)  # theta agrees to ~1e-11
        assert state["prev_ef_U"].shape == (min(k, rank), d)
        torch.testing.assert_close(state["prev_ef_gram"], state["prev_ef_U"] @ state["prev_ef_U"].T)
    assert state["prev_ef_damping"] == pytest.approx(lam * beta**K if mode == "decay" else lam)


@pytest.mark.parametrize("discrete", [True, False], ids=["categorical", "gaussian"])
def test_prev_ef_with_beta_zero_is_plain_smac(discrete):
    """beta = 0 in the mixing code path (fixed damping): old terms get weight 0, are dropped, and every
    step is the plain Sherman-Morrison step; and --prev-ef-beta 0 (off) is the plain batch-mean step."""
    actor, plain = tiny_actor(discrete), tiny_actor(discrete)
    state = {}
    for k in range(3):
        batch = tiny_batch(actor, seed=k)
        ell, g = trainer.mean_score_and_policy_gradient(
            actor, batch["obs"], batch["actions"], batch["advantages"]
        )
        trainer.prev_ef_push_(state, ell, 0.0, 8, 0.4, "fixed")
        assert state["prev_ef_U"].shape[0] == 1 and state["prev_ef_w"].item() == 1.0
        torch.testing.assert_close(
            trainer.woodbury_direction(
                g, state["prev_ef_U"], state["prev_ef_w"], state["prev_ef_damping"], state["prev_ef_gram"]
            ),
            trainer.sherman_morrison_direction(g, ell, 0.4),
            rtol=1e-12,
            atol=1e-12,
        )
        trainer.smac_step(actor, batch, trainer.Args(prev_ef_beta=0.0, damping=0.4), {})
        trainer.smac_step(plain, batch, trainer.Args(damping=0.4), {})
        assert torch.equal(theta(actor), theta(plain))


def test_prev_ef_state_survives_checkpoint_round_trip():
    actor = tiny_actor(False)
    args = trainer.Args(prev_ef_beta=0.5, prev_ef_rank=3, damping=0.2, learning_rate=0.05)
    state = {}
    for k in range(4):
        trainer.smac_step(actor, tiny_batch(actor, seed=k), args, state)
    restored = trainer.load_actor_state(trainer.actor_state_dict(state), actor, args)
    twin = tiny_actor(False)
    twin.load_state_dict(actor.state_dict())
    batch = tiny_batch(actor, seed=9)
    trainer.smac_step(actor, batch, args, state)
    trainer.smac_step(twin, batch, args, restored)
    assert torch.equal(theta(actor), theta(twin))
    for key in ("prev_ef_U", "prev_ef_w", "prev_ef_gram"):
        assert torch.equal(state[key], restored[key])


# ------------------------------------------------------------------------------------
# --step-normalization
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fisher,extra",
    [
        ("batch-mean", {}),
        ("per-sample-parallel", {}),
        ("batch-mean", {"prev_ef_beta": 0.5, "prev_ef_damping": "decay"}),
    ],
    ids=["batch-mean", "per-sample-parallel", "prev-ef-decay"],
)
def test_step_normalization_keeps_direction_and_takes_norm_of_g(fisher, extra):
    for discrete in (True, False):
        base = dict(fisher=fisher, damping=1e-3, learning_rate=0.01, **extra)
        a, b = tiny_actor(discrete), tiny_actor(discrete)
        theta0 = theta(a)
        sa_state, sb_state = {}, {}
        for k in range(3):  # several updates: decay mode has lambda_3 = lambda / 8
            batch = tiny_batch(a, seed=k)
            raw = trainer.smac_step(a, batch, trainer.Args(**base), sa_state)
            normed = trainer.smac_step(b, batch, trainer.Args(step_normalization=True, **base), sb_state)
            torch.testing.assert_close(normed["step"].norm(), normed["g"].norm(), rtol=1e-10, atol=0)
            torch.testing.assert_close(
                normed["step"], raw["step"] * (raw["g"].norm() / raw["step"].norm()), rtol=1e-8, atol=1e-12
            )
            torch.nn.utils.vector_to_parameters(theta(b), a.parameters())  # same theta for the next update
        assert not torch.equal(theta(a), theta0)


def test_step_normalization_with_per_sample_parallel_moves_theta_by_eta_times_sum_of_g():
    actor = tiny_actor(False)
    batch = tiny_batch(actor)
    theta0 = theta(actor)
    g_sum = (per_sample_grads(actor, batch) * batch["advantages"][:, None]).sum(0)
    trainer.smac_step(
        actor,
        batch,
        trainer.Args(fisher="per-sample-parallel", step_normalization=True, learning_rate=0.01),
        {},
    )
    torch.testing.assert_close((theta(actor) - theta0).norm(), 0.01 * g_sum.norm(), rtol=1e-10, atol=0)


# ------------------------------------------------------------------------------------
# the trainer: bad flag combinations, smoke runs for every mode
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--prev-ef-beta", "1.0"], "--prev-ef-beta"),
        (["--prev-ef-beta", "-0.1"], "--prev-ef-beta"),
        (["--prev-ef-rank", "0"], "--prev-ef-rank"),
        (["--prev-ef-beta", "0.5", "--fisher", "per-sample"], "--fisher batch-mean"),
        (["--prev-ef-beta", "0.5", "--fisher", "per-sample-parallel"], "--fisher batch-mean"),
        (["--step-normalization", "--fisher", "per-sample"], "--step-normalization"),
    ],
)
def test_bad_ablation_flags_one_line_exit_2(tmp_path, capsys, argv, needle):
    assert run_main(tmp_path, "--env-id", "CartPole-v1", *argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and needle in err


MODES = {
    "per-sample-parallel": ["--fisher", "per-sample-parallel"],
    "per-sample-parallel-norm": ["--fisher", "per-sample-parallel", "--step-normalization"],
    "prev-ef-fixed": ["--prev-ef-beta", "0.5", "--prev-ef-rank", "4"],
    "prev-ef-decay": ["--prev-ef-beta", "0.5", "--prev-ef-damping", "decay"],
    "step-normalization": ["--step-normalization", "--damping", "0.01"],
}


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
@pytest.mark.parametrize("mode", list(MODES))
def test_smoke_ablation_modes(tmp_path, env_id, mode):
    assert (
        run_main(tmp_path, "--env-id", env_id, "--num-steps", "64", "--total-timesteps", "128", *MODES[mode])
        == 0
    )
    run = only_run(tmp_path)
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "finished" and summary["global_step"] == 128
    rows = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert rows[0].split(",") == compact.UPDATE_COLS and len(rows) == 3
    assert all(np.isfinite(float(x)) for row in rows[1:] for x in row.split(",")[2:9])
    ckpt = trainer.load_checkpoint(run)
    if "prev-ef" in mode:
        assert ckpt["actor_state"]["prev_ef_U"].shape[0] == 2  # two updates, two terms kept
        assert run_main(tmp_path, "--resume", run, "--total-timesteps", "192") == 0  # state reloads
        assert json.load(open(os.path.join(run, "summary.json")))["global_step"] == 192
