"""Issue 46's page (benchmark/report/kl_step.md): kl_step.analyze's numbers against scipy and hand computation,
its words from kl_step.VOCAB, and the committed page = its template on the committed JSON."""

import gzip
import json
import math
import os
import shutil

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import kl_step, pages

LOGS = os.path.join(kl_step.REPO, "benchmark", "results", "logs")


@pytest.fixture(scope="module")
def res():
    """kl_step.analyze on the committed logs."""
    return kl_step.analyze()


def holm_by_hand(p: list) -> list:
    """Holm's adjusted p-values, written out: the k-th smallest times (m - k), running maximum, capped at 1."""
    order = sorted(range(len(p)), key=p.__getitem__)
    out, running = [0.0] * len(p), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - k) * p[i]))
        out[i] = running
    return out


def test_the_committed_rows_by_scipy(res):
    rows = res["tasks"]
    assert [r["task"] for r in rows] == ["CartPole", "Pendulum", "Hopper", "HalfCheetah"]
    assert res["seeds"] == [1, 2, 3, 4, 5] and res["n_seeds"] == 5 and res["target_kl"] == 0.01
    for r in rows:
        assert r["complete"] and r["paired"] and r["paired_seeds"] == [1, 2, 3, 4, 5] and r["n_paired"] == 5
        assert r["n_runs_in"] == 5 and r["holm"]
        d = np.array(r["kl_finals"]) - np.array(r["fixed_finals"])
        assert r["mean"] == pytest.approx(d.mean())
        assert r["p"] == pytest.approx(sps.ttest_rel(r["kl_finals"], r["fixed_finals"]).pvalue)
        lo, hi = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
        assert r["ci"] == pytest.approx([lo, hi])
    assert [r["p_holm"] for r in rows] == pytest.approx(holm_by_hand([r["p"] for r in rows]))
    for r in rows:
        if r["p_holm"] >= 0.05:
            assert r["verdict"] == "not shown to differ"
        else:
            assert r["verdict"] == ("KL step higher" if r["mean"] > 0 else "KL step lower")
    assert {r["verdict"] for r in rows} <= set(kl_step.VOCAB)


def test_the_committed_step_ratios_by_hand(res):
    """step_ratio = median over runs of each run's median step_norm, KL arm over the fixed-eta arm."""
    for r in res["tasks"]:
        medians = {}
        for arm, logs in (("kl", "kl_step"), ("fixed", "norm")):
            per_run = []
            for seed in res["seeds"]:
                path = os.path.join(LOGS, logs, r["task"], "smac", f"seed{seed}.json.gz")
                with gzip.open(path, "rt") as f:
                    step_norm = np.array(json.load(f)["updates"]["step_norm"], dtype=float)
                per_run.append(np.nanmedian(step_norm))
            medians[arm] = np.median(per_run)
        assert r["step_ratio"] == pytest.approx(medians["kl"] / medians["fixed"])


def copy_cartpole(root: str, unpair_seed: int) -> None:
    """CartPole's logs of both arms under root, the fixed-eta arm's seed `unpair_seed` with another first episode."""
    for logs in ("kl_step", "norm"):
        src = os.path.join(LOGS, logs, "CartPole", "smac")
        dst = os.path.join(root, "benchmark", "results", "logs", logs, "CartPole", "smac")
        shutil.copytree(src, dst)
    path = os.path.join(
        root, "benchmark", "results", "logs", "norm", "CartPole", "smac", f"seed{unpair_seed}.json.gz"
    )
    with gzip.open(path, "rt") as f:
        rec = json.load(f)
    rec["episodes"]["episodic_return"][0] += 1.0
    with gzip.open(path, "wt") as f:
        json.dump(rec, f)


def test_a_task_that_does_not_pair_gets_welch_and_holm_waits_for_every_task(tmp_path):
    copy_cartpole(str(tmp_path), unpair_seed=1)
    res = kl_step.analyze(root=str(tmp_path))
    rows = {r["task"]: r for r in res["tasks"]}
    for task in ("Pendulum", "Hopper", "HalfCheetah"):  # no logs: waiting, no run in
        assert not rows[task]["complete"] and rows[task]["n_runs_in"] == 0 and rows[task]["runs_in"] == []
        assert rows[task]["verdict"] == "waiting" and not rows[task]["holm"]
    cp = rows["CartPole"]
    assert cp["complete"] and not cp["paired"] and cp["paired_seeds"] == [2, 3, 4, 5] and cp["n_paired"] == 4
    assert cp["verdict"] == "waiting" and not cp["holm"] and "p_holm" not in cp
    a, b = np.array(cp["kl_finals"]), np.array(cp["fixed_finals"])
    assert cp["mean"] == pytest.approx(a.mean() - b.mean())
    assert cp["p"] == pytest.approx(sps.ttest_ind(a, b, equal_var=False).pvalue)
    va, vb = a.var(ddof=1) / 5, b.var(ddof=1) / 5
    dof = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    half = sps.t.ppf(0.975, dof) * math.sqrt(va + vb)
    assert cp["ci"] == pytest.approx([cp["mean"] - half, cp["mean"] + half])


def test_the_committed_page_is_its_template_on_the_committed_json(res):
    with open(kl_step.RESULTS, encoding="utf-8") as f:
        data = json.load(f)
    with open(kl_step.PAGE, encoding="utf-8") as f:
        assert f.read() == kl_step.markdown(data)
    assert data == pages.plain(res)
