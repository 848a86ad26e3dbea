"""The sgd-matched control and the SMAC step diagnostics.

- `sgd-matched` resolves to AC-SGD with eta = eta_SMAC / lambda, everything else as SMAC's row, for every task.
- The split of the SMAC step along l_bar / orthogonal to it sums back to the step (float64), and its two parts
  are g_par/(lambda + |l_bar|^2) and g_perp/lambda.
- The diagnostics the trainer writes (smac_a2c.step_diagnostics on smac_step's diag) equal their definitions
  recomputed from a saved batch with explicit per-sample gradients and an explicit d x d solve; the
  "fraction removed" formula of benchmark/aggregate.py equals |g/lambda - step| / |g/lambda|.
- Welch's test as the report uses it, against its formula; the pipeline raw runs -> compact logs -> report on
  synthetic runs.
Fast: well under 10 s."""

import copy
import math
import os
import sys

import numpy as np
import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from helpers import raw_run  # noqa: E402

from benchmark import (  # noqa: E402
    aggregate,  # noqa: E402
    hparams,
    stats,
    trainer,  # noqa: E402
)


# ------------------------------------------------------------------------------------------
# sgd-matched in the hyper-parameter table
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task", hparams.tasks())
def test_sgd_matched_is_eta_over_lambda_and_otherwise_smac(task):
    smac, matched = hparams.settings(task, "smac"), hparams.settings(task, "sgd-matched")
    assert matched["optimizer"] == "sgd"
    assert matched["learning_rate"] == pytest.approx(smac["learning_rate"] / smac["damping"], rel=1e-12)
    assert "damping" not in matched  # SGD has no lambda: it only enters through eta / lambda
    for key in hparams.flag_keys():
        if key not in ("learning_rate", "damping"):
            assert matched.get(key) == smac.get(key), (task, key)
    # the trainer flags: SMAC's, with --optimizer sgd, --learning-rate eta/lambda and no --damping
    fs, fm = hparams.lookup(task, "smac"), hparams.lookup(task, "sgd-matched")
    ds, dm = dict(zip(fs[::2], fs[1::2])), dict(zip(fm[::2], fm[1::2]))
    assert dm.pop("--optimizer") == "sgd" and ds.pop("--optimizer") == "smac"
    assert float(dm.pop("--learning-rate")) == pytest.approx(
        float(ds.pop("--learning-rate")) / float(ds.pop("--damping")), rel=1e-12
    )
    assert dm == ds


# ------------------------------------------------------------------------------------------
# A tiny float64 actor and batch; per-sample gradients the slow, explicit way
# ------------------------------------------------------------------------------------------
def tiny_problem(discrete: bool, seed: int = 0, B: int = 13, obs_dim: int = 4, act_dim: int = 3):
    torch.manual_seed(seed)
    actor = trainer.Actor(obs_dim, act_dim, discrete, (6, 5), log_std_init=-0.2).double()
    with torch.no_grad():  # move off the near-zero output init so l_bar is not tiny
        for p in actor.parameters():
            p.add_(0.3 * torch.randn_like(p))
    obs = torch.randn(B, obs_dim, dtype=torch.float64)
    with torch.no_grad():
        out = actor(obs)
        actions = (
            torch.distributions.Categorical(logits=out).sample()
            if discrete
            else out + torch.exp(actor.log_std) * torch.randn_like(out)
        )
    adv = torch.randn(B, dtype=torch.float64) * 2.0 + 0.5
    return actor, {"obs": obs, "actions": actions, "advantages": adv}


def explicit_quantities(actor, batch, damping):
    """l_i = grad log pi(a_i|s_i) one sample at a time; l_bar, g, and F~^-1 g by a dense solve."""
    params = list(actor.parameters())
    scores = torch.stack(
        [
            trainer.flat_grad(
                actor.log_prob(batch["obs"][i : i + 1], batch["actions"][i : i + 1]).sum(), params
            )
            for i in range(batch["obs"].shape[0])
        ]
    )
    ell = scores.mean(0)
    g = (scores * batch["advantages"][:, None]).mean(0)
    F = damping * torch.eye(ell.numel(), dtype=torch.float64) + torch.outer(ell, ell)
    step = torch.linalg.solve(F, g)
    return ell, g, step


@pytest.mark.parametrize("discrete", [False, True])
@pytest.mark.parametrize("damping", [1e-2, 1.0])
def test_trainer_diagnostics_equal_definitions_from_saved_batch(tmp_path, discrete, damping):
    actor, batch = tiny_problem(discrete)
    path = tmp_path / "batch.pt"
    torch.save({"batch": batch, "actor": copy.deepcopy(actor.state_dict())}, path)

    args = trainer.Args(optimizer="smac", damping=damping, learning_rate=0.05)
    before = torch.cat([p.detach().reshape(-1).clone() for p in actor.parameters()])
    diag = trainer.smac_step(actor, batch, args, {})
    after = torch.cat([p.detach().reshape(-1) for p in actor.parameters()])
    row = trainer.step_diagnostics(diag)

    # recompute everything from the saved batch and the saved (pre-step) parameters
    saved = torch.load(path)
    ref_actor = trainer.Actor(4, 3, discrete, (6, 5)).double()
    ref_actor.load_state_dict(saved["actor"])
    ell, g, step = explicit_quantities(ref_actor, saved["batch"], damping)
    torch.testing.assert_close(after - before, args.learning_rate * step, rtol=1e-10, atol=1e-13)

    ell_sq = torch.dot(ell, ell).item()
    u = ell / ell.norm()
    par, perp = abs(torch.dot(u, step).item()), (step - torch.dot(u, step) * u).norm().item()
    cos = (torch.dot(g, step) / (g.norm() * step.norm())).item()
    assert row["ell_sq"] == pytest.approx(ell_sq, rel=1e-10)
    assert row["g_norm"] == pytest.approx(g.norm().item(), rel=1e-10)
    assert row["step_norm"] == pytest.approx(step.norm().item(), rel=1e-10)
    assert row["cos_g_step"] == pytest.approx(cos, rel=1e-10, abs=1e-13)
    assert row["step_par_norm"] == pytest.approx(par, rel=1e-9)
    assert row["step_perp_norm"] == pytest.approx(perp, rel=1e-9)
    assert ell_sq / damping > 1e-3  # the correction is not negligible in this example

    # "fraction removed" (benchmark/aggregate.py) = |g/lambda - step| / |g/lambda|, computed explicitly
    explicit_removed = ((g / damping - step).norm() / (g / damping).norm()).item()
    cols = {k: np.array([row[k]]) for k in ("ell_sq", "g_norm", "step_norm", "cos_g_step", "step_par_norm")}
    d = aggregate.smac_diagnostics(cols, damping)
    assert d["removed_frac"][0] == pytest.approx(explicit_removed, rel=1e-9)
    assert explicit_removed > 1e-4
    # ... = s/(lambda + s) |cos(g, l_bar)|, and the step length relative to g/lambda
    cos_g_ell = abs(torch.dot(g, u).item()) / g.norm().item()
    assert d["removed_frac"][0] == pytest.approx(ell_sq / (damping + ell_sq) * cos_g_ell, rel=1e-9)
    assert d["step_over_sgd"][0] == pytest.approx(step.norm().item() / (g / damping).norm().item(), rel=1e-10)
    assert d["ell_sq_over_lambda"][0] == pytest.approx(ell_sq / damping, rel=1e-10)
    assert d["cos_g_ell"][0] == pytest.approx(cos_g_ell, rel=1e-9)


@pytest.mark.parametrize("discrete", [False, True])
def test_step_decomposition_sums_back_to_the_step(discrete):
    damping = 0.05
    actor, batch = tiny_problem(discrete, seed=3)
    diag = trainer.smac_step(
        actor, batch, trainer.Args(optimizer="smac", damping=damping, learning_rate=1e-3), {}
    )
    g, step, ell = diag["g"].double(), diag["step"].double(), diag["ell"].double()
    assert g.dtype == torch.float64
    u = ell / ell.norm()
    par_vec = torch.dot(u, step) * u
    perp_vec = step - par_vec
    torch.testing.assert_close(par_vec + perp_vec, step, rtol=0, atol=1e-15)
    row = trainer.step_diagnostics(diag)
    assert row["step_par_norm"] ** 2 + row["step_perp_norm"] ** 2 == pytest.approx(
        step.norm().item() ** 2, rel=1e-12
    )
    assert row["step_par_norm"] == pytest.approx(par_vec.norm().item(), rel=1e-12)
    assert row["step_perp_norm"] == pytest.approx(perp_vec.norm().item(), rel=1e-9)
    # the orthogonal part is exactly g_perp / lambda, the parallel part g_par / (lambda + |l_bar|^2)
    g_par = torch.dot(u, g) * u
    s = torch.dot(ell, ell)
    torch.testing.assert_close(perp_vec, (g - g_par) / damping, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(par_vec, g_par / (damping + s), rtol=1e-10, atol=1e-14)
    # so |g_par| = step_par_norm (lambda + s)
    assert g_par.norm().item() == pytest.approx(row["step_par_norm"] * (damping + s.item()), rel=1e-10)


def test_removed_fraction_in_aggregate_is_nan_for_non_plain_runs():
    u = {k: np.array([0.5]) for k in ("ell_sq", "g_norm", "step_norm", "cos_g_step", "step_par_norm")}
    d = aggregate.smac_diagnostics(u, 0.1, {"fisher": "batch-mean", "step_normalization": True})
    assert np.isnan(d["removed_frac"]).all() and np.isnan(d["step_over_sgd"]).all()
    assert d["ell_sq_over_lambda"][0] == pytest.approx(5.0)


# ------------------------------------------------------------------------------------------
# Statistics: our use of scipy.stats on hand-made data (benchmark/stats.py; more in tests/test_stats.py)
# ------------------------------------------------------------------------------------------
def test_welch_hand_example():
    from scipy import stats as sps

    a, b = [1.0, 2.0, 4.0], [5.0, 7.0, 10.0]
    w = stats.welch_test(a, b)
    va, vb = np.var(a, ddof=1) / 3, np.var(b, ddof=1) / 3
    assert w["diff"] == pytest.approx(-5.0)
    assert w["t"] == pytest.approx(-5.0 / math.sqrt(va + vb))
    assert w["df"] == pytest.approx((va + vb) ** 2 / (va**2 / 2 + vb**2 / 2))
    assert w["p"] == pytest.approx(2 * sps.t.sf(abs(w["t"]), w["df"]))
    assert stats.welch_test([1.0], b) is None


# ------------------------------------------------------------------------------------------
# aggregate -> report -> figure on synthetic run directories (no training)
# ------------------------------------------------------------------------------------------


def test_pipeline_on_synthetic_runs(tmp_path):
    """raw runs -> compact logs -> `report.write_report` (every study in turn: aggregate, statistics, pages) on
    hand-made runs: REPORT.md, its verdict, and the SMAC diagnostics by hand (the grid study's own page and figures:
    tests/test_study_grid.py)."""
    from benchmark import compact, report
    from benchmark.studies import Where

    runs, logs, res, figs = (str(tmp_path / n) for n in ("runs", "logs", "res", "figs"))
    B = aggregate.stage1_budgets()["Humanoid"]
    lam = hparams.settings("Humanoid", "smac")["damping"]
    for seed, (a, b) in enumerate([(300, 200), (310, 190), (305, 230)], 1):
        g_norm, par = raw_run(runs, "Humanoid", "smac", seed, B, a, ell_sq=2.0 * lam, lam=lam)
        raw_run(runs, "Humanoid", "sgd-matched", seed, B, b, ell_sq=0.0, lam=lam)
    raw_run(runs, "Hopper", "smac", 1, B, 10, ell_sq=0.01, lam=1.0)  # no sgd-matched: no comparison row
    assert compact.main(["pack", runs, "--logs", logs]) == 0
    where = Where(
        logs=logs,
        headline=str(tmp_path / "none"),
        results=res,
        figures=figs,
        pages=str(tmp_path / "report"),
        reps=100,
    )
    text = report.write_report(str(tmp_path / "REPORT.md"), where)
    assert text.startswith("# Reproduction report") and "## Verdict" in text and len(text) <= 15_000
    assert sorted(os.listdir(tmp_path / "report")) == [
        "claims.md",
        "deviations.md",
        "grid.md",
        "mujoco_5M.md",
        "prereg.md",
        "readings.md",
    ]
    rows = [
        r for r in stats.read_csv(os.path.join(res, "diagnostics_summary.csv")) if r["task"] == "Humanoid"
    ]
    assert [r["algo"] for r in rows] == ["smac"]
    r = rows[0]
    assert float(r["ell_sq_over_lambda_median"]) == pytest.approx(2.0)
    assert float(r["removed_frac_median"]) == pytest.approx(par * 2.0 * lam / g_norm, rel=1e-5)
    assert float(r["step_over_sgd_median"]) == pytest.approx(1.5 * lam / g_norm, rel=1e-5)
    assert not os.path.exists(os.path.join(res, "smac_vs_matched.csv"))  # no unpaired tests
