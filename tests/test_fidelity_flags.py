"""The readings of the fidelity study as trainer flags, against hand computation:
--num-minibatches / --update-epochs / --shuffle-minibatches, --loss-reduction, --activation."""

import csv
import json
import os

import numpy as np
import pytest
import torch
from helpers import one_line_error, only_run, per_sample_grads, run_main, tiny_actor, tiny_batch

from benchmark import trainer


def args_for(**kw):
    return trainer.Args(**kw)


def flat_params(actor):
    return torch.cat([p.detach().reshape(-1) for p in actor.parameters()]).clone()


def explicit_smac_step(actor, batch, lam, eta, scale=1.0):
    """theta + eta (lam I + l l^T)^-1 g with l = scale * mean_i l_i, g = scale * mean_i l_i A_i, by
    per-sample gradients and a dense solve (independent of smac_step's code path)."""
    L = per_sample_grads(actor, batch)
    ell = scale * L.mean(0)
    g = scale * (L * batch["advantages"][:, None]).mean(0)
    F = lam * torch.eye(ell.numel(), dtype=torch.float64) + torch.outer(ell, ell)
    return flat_params(actor) + eta * torch.linalg.solve(F, g)


def set_flat(actor, vec):
    with torch.no_grad():
        offset = 0
        for p in actor.parameters():
            p.copy_(vec[offset : offset + p.numel()].view_as(p))
            offset += p.numel()


@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("M", [1, 3, 5])
def test_sequential_minibatch_smac_equals_M_explicit_solves(discrete, M):
    actor, ref = tiny_actor(discrete), tiny_actor(discrete)
    batch = tiny_batch(actor, B=30)
    args = args_for(optimizer="smac", damping=0.3, learning_rate=0.05, num_minibatches=M)
    trainer.actor_update(actor, batch, args, {})
    for idx in torch.tensor_split(torch.arange(30), M):  # rollout order, M steps at the moving theta
        set_flat(ref, explicit_smac_step(ref, {k: v[idx] for k, v in batch.items()}, 0.3, 0.05))
    assert torch.allclose(flat_params(actor), flat_params(ref), atol=1e-10, rtol=1e-9)


@pytest.mark.parametrize("discrete", [True, False])
def test_one_sample_minibatches_are_algorithm_1(discrete):
    """--num-minibatches T in rollout order with batch-mean SMAC is --fisher per-sample (Algorithm 1)."""
    a, b = tiny_actor(discrete), tiny_actor(discrete)
    batch = tiny_batch(a, B=12)
    trainer.actor_update(
        a, batch, args_for(optimizer="smac", damping=0.5, learning_rate=0.1, num_minibatches=12), {}
    )
    trainer.actor_update(
        b, batch, args_for(optimizer="smac", damping=0.5, learning_rate=0.1, fisher="per-sample"), {}
    )
    assert torch.allclose(flat_params(a), flat_params(b), atol=1e-11, rtol=1e-10)


def test_sgd_epochs_and_minibatches_equal_explicit_loop():
    actor, ref = tiny_actor(False), tiny_actor(False)
    batch = tiny_batch(actor, B=20)
    trainer.actor_update(
        actor, batch, args_for(optimizer="sgd", learning_rate=0.07, num_minibatches=4, update_epochs=3), {}
    )
    for _ in range(3):
        for idx in torch.tensor_split(torch.arange(20), 4):
            L = per_sample_grads(ref, {k: v[idx] for k, v in batch.items()})
            set_flat(ref, flat_params(ref) + 0.07 * (L * batch["advantages"][idx, None]).mean(0))
    assert torch.allclose(flat_params(actor), flat_params(ref), atol=1e-11)


def test_shuffled_minibatches_visit_every_sample_once_per_epoch(monkeypatch):
    seen = []
    monkeypatch.setitem(
        trainer.ACTOR_STEPS, "sgd", lambda actor, mb, args, state: seen.append(mb["advantages"].clone()) or {}
    )
    actor = tiny_actor(True)
    batch = tiny_batch(actor, B=23)
    batch["advantages"] = torch.arange(23, dtype=torch.float64)  # sample ids
    torch.manual_seed(0)
    diags = trainer.actor_update(
        actor,
        batch,
        args_for(optimizer="sgd", num_minibatches=4, update_epochs=2, shuffle_minibatches=True),
        {},
    )
    assert len(diags) == 8 and [len(s) for s in seen[:4]] == [6, 6, 6, 5]
    for epoch in (seen[:4], seen[4:]):
        assert sorted(torch.cat(epoch).tolist()) == list(range(23))
    assert torch.cat(seen[:4]).tolist() != list(range(23))  # shuffled,
    assert torch.cat(seen[:4]).tolist() != torch.cat(seen[4:]).tolist()  # afresh every pass


@pytest.mark.parametrize("discrete", [True, False])
def test_sum_reduction_smac_is_explicit_solve_with_B_times_scores(discrete):
    actor = tiny_actor(discrete)
    batch = tiny_batch(actor, B=25)
    expected = explicit_smac_step(actor, batch, 0.2, 0.01, scale=25.0)
    trainer.smac_step(
        actor, batch, args_for(optimizer="smac", damping=0.2, learning_rate=0.01, loss_reduction="sum"), {}
    )
    assert torch.allclose(flat_params(actor), expected, atol=1e-10, rtol=1e-9)


def test_sum_reduction_scales_sgd_cg_by_B_and_leaves_adam():
    batch = tiny_batch(tiny_actor(False), B=16)
    moved = {}
    for opt in ("sgd", "adam", "cg"):
        for red in ("mean", "sum"):
            actor = tiny_actor(False)
            before = flat_params(actor)
            trainer.ACTOR_STEPS[opt](
                actor,
                batch,
                args_for(optimizer=opt, learning_rate=1e-3, loss_reduction=red, cg_damping=0.1),
                {},
            )
            moved[opt, red] = flat_params(actor) - before
    assert torch.allclose(moved["sgd", "sum"], 16 * moved["sgd", "mean"], rtol=1e-10)
    assert torch.allclose(
        moved["cg", "sum"], 16 * moved["cg", "mean"], rtol=1e-8
    )  # F is the mean KL's Hessian
    assert torch.allclose(
        moved["adam", "sum"], moved["adam", "mean"], rtol=1e-4
    )  # Adam is scale-free (up to eps)


@pytest.mark.parametrize("discrete", [True, False])
def test_relu_actor_one_backward_path_equals_autograd_and_numpy_copy(discrete):
    torch.manual_seed(3)
    actor = trainer.Actor(5, 3, discrete, (8, 7), log_std_init=-0.3, activation="relu").double()
    with torch.no_grad():
        actor.linears[-1].weight.normal_()
    batch = tiny_batch(actor, B=30)
    ell, g = trainer.mean_score_and_policy_gradient(
        actor, batch["obs"], batch["actions"], batch["advantages"]
    )
    L = per_sample_grads(actor, batch)
    assert torch.allclose(ell, L.mean(0), atol=1e-12)
    assert torch.allclose(g, (L * batch["advantages"][:, None]).mean(0), atol=1e-12)
    out = trainer.RolloutPolicy(actor).forward(batch["obs"].numpy())
    assert np.allclose(out, actor(batch["obs"]).detach().numpy(), atol=1e-12)
    assert any((z < 0).any() for z in trainer.actor_layer_io(actor, batch["obs"])[1][:-1])  # ReLU is active


@pytest.mark.parametrize("opt", ["smac", "sgd", "adam", "cg", "kfac"])
def test_trainer_runs_with_minibatches_sum_and_relu(tmp_path, opt):
    assert (
        run_main(
            tmp_path,
            "--env-id",
            "CartPole-v1",
            "--optimizer",
            opt,
            "--num-steps",
            "64",
            "--total-timesteps",
            "128",
            "--num-minibatches",
            "4",
            "--update-epochs",
            "2",
            "--shuffle-minibatches",
            "--loss-reduction",
            "sum",
            "--activation",
            "relu",
            "--learning-rate",
            "1e-4",
        )
        == 0
    )
    run = only_run(tmp_path)
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "finished"
    rows = list(csv.DictReader(open(os.path.join(run, "updates.csv"))))
    assert len(rows) == 2 and all(
        np.isfinite(float(rows[1][k]))
        for k in ("value_loss", "mean_logprob", "g_norm", "step_norm", "cos_g_step")
    )


@pytest.mark.parametrize(
    "argv,names",
    [
        (["--num-minibatches", "0"], ["--num-minibatches"]),
        (["--update-epochs", "0"], ["--update-epochs"]),
        (["--num-steps", "10", "--num-minibatches", "11"], ["--num-minibatches", "11", "10"]),
        (["--fisher", "per-sample", "--num-minibatches", "2"], ["--num-minibatches", "batch-mean"]),
    ],
)
def test_bad_minibatch_flags_exit_2(tmp_path, capsys, argv, names):
    code = run_main(tmp_path, *argv)
    one_line_error(capsys.readouterr().err, code, *names)


def test_smac_with_an_entropy_bonus_on_a_gaussian_policy(tmp_path):
    """The entropy of a state-independent Gaussian depends on log_std only (no "differentiated Tensor ... not used
    in the graph" error): its gradient is log_std's (1/2 log(2 pi e) + log_std
    summed: d/d log_std = 1 each), zeros elsewhere."""
    actor = trainer.Actor(3, 2, False, (5,))
    batch = {"obs": torch.randn(16, 3), "actions": torch.randn(16, 2), "advantages": torch.zeros(16)}
    args = trainer.Args(ent_coef=0.5, damping=1.0)
    diag = trainer.smac_step(actor, batch, args, {})
    g = diag["g"]
    n_log_std = 2
    torch.testing.assert_close(g[:n_log_std], torch.full((2,), 0.5))  # log_std comes first in parameters()
    assert torch.count_nonzero(g[n_log_std:]) == 0  # zero advantages: nothing else
    assert (
        trainer.main(
            [
                "--env-id",
                "Pendulum-v1",
                "--num-steps",
                "50",
                "--total-timesteps",
                "100",
                "--ent-coef",
                "0.01",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
