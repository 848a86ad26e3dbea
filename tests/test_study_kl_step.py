"""The KL-step study (benchmark/studies/kl_step.py): its jobs, now named, against the command its pre-registration
gives and against its committed logs; results' numbers against scipy and hand computation, its words from VOCAB;
the committed page = its template on the committed JSON, and write's bytes the committed ones."""

import gzip
import json
import math
import os
import shlex
import shutil

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import compact, pages, sweep
from benchmark.studies import REPO, Where, kl_step

LOGS = os.path.join(REPO, "benchmark", "results", "logs")
# the command in preregistration_kl_step.toml's header, less --workers
HEADER = (
    "--tasks CartPole,Pendulum,Hopper,HalfCheetah --algos smac --seeds 1-5 --reading norm "
    "--budget classic=500000,mujoco=1000000,Pendulum=2000000 --extra-flags '--target-kl 0.01' "
    "--runs-dir benchmark/runs_kl_step --logs-dir benchmark/results/logs/kl_step"
)


@pytest.fixture(scope="module")
def res():
    """results on the committed logs."""
    return kl_step.results()


@pytest.fixture
def at_repo(monkeypatch):
    """The sweep's relative paths (the header's) resolved from the repository root, as the sweep is run."""
    monkeypatch.chdir(REPO)


def holm_by_hand(p: list) -> list:
    """Holm's adjusted p-values, written out: the k-th smallest times (m - k), running maximum, capped at 1."""
    order = sorted(range(len(p)), key=p.__getitem__)
    out, running = [0.0] * len(p), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - k) * p[i]))
        out[i] = running
    return out


# ---- the job list
def test_the_jobs_are_the_header_commands(at_repo):
    parse = sweep.build_parser().parse_args
    jobs = kl_step.jobs(parse([]))
    assert len(jobs) == 20 and jobs == sweep.study_jobs(parse(shlex.split(HEADER)))
    assert {j.extra_flags[-2:] == ["--target-kl", "0.01"] for j in jobs} == {True}


def test_runs_and_logs_dirs_given_override_the_defaults(at_repo, tmp_path):
    parse = sweep.build_parser().parse_args
    runs, logs = str(tmp_path / "runs"), str(tmp_path / "logs")
    header = HEADER.replace("benchmark/runs_kl_step", runs).replace("benchmark/results/logs/kl_step", logs)
    mine = kl_step.jobs(parse(["--runs-dir", runs, "--logs-dir", logs]))
    assert mine == sweep.study_jobs(parse(shlex.split(header)))
    off = HEADER.replace("--logs-dir benchmark/results/logs/kl_step", "--logs-dir none")
    assert kl_step.jobs(parse(["--logs-dir", "none"])) == sweep.study_jobs(parse(shlex.split(off)))


def test_every_committed_log_is_the_done_log_of_one_job(at_repo):
    """The 20 committed logs: each the done log of one job (it loads, its task, algo and seed are the job's, its
    flags agree with the job's), and no job without one."""
    jobs = kl_step.jobs(sweep.build_parser().parse_args([]))
    committed = sorted(
        os.path.join(d, f)
        for d, _, fs in os.walk(os.path.join(LOGS, "kl_step"))
        for f in fs
        if f.endswith(".json.gz")
    )
    assert len(committed) == 20
    assert sorted(sweep.committed_log(j) for j in jobs) == committed
    for job in jobs:
        run = compact.load(sweep.committed_log(job))
        assert (run["task"], run["algo"], run["seed"]) == (job.task, job.algo, job.seed)
        assert sweep.inspect_job(job)[0] == "done"
        assert sweep.disagreement(job, sweep.job_args(job)) is None


# ---- the rule on the committed logs
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


def test_welchs_branch_is_the_welch_satterthwaite_interval_written_out():
    """compare's unpaired branch (stats.welch_test) gives exactly what the formula written out gives."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        kl = {s: float(rng.normal()) for s in range(1, 6)}
        fixed = {s: float(rng.normal(0.3, 2.0)) for s in range(1, 6)}
        a, b = np.array(list(kl.values())), np.array(list(fixed.values()))
        va, vb = a.var(ddof=1) / 5, b.var(ddof=1) / 5
        dof = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
        half = float(sps.t.ppf(0.975, dof) * math.sqrt(va + vb))
        mean = float(np.array([a.mean() - b.mean()]).mean())
        p = float(sps.ttest_ind(a, b, equal_var=False).pvalue)
        got = kl_step.compare(kl, fixed, [1, 2, 3, 4, 5], False)
        assert got["mean"] == mean and got["p"] == p
        assert got["ci"] == pytest.approx([mean - half, mean + half], rel=1e-14, abs=1e-14)


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
    res = kl_step.results(root=str(tmp_path))
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


# ---- the page and its JSON
def test_the_committed_page_is_its_template_on_the_committed_json(res):
    with open(kl_step.RESULTS, encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(REPO, "benchmark", "report", kl_step.PAGE), encoding="utf-8") as f:
        assert f.read() == kl_step.markdown(data)
    assert data == pages.plain(res)


def test_write_gives_the_committed_bytes(tmp_path, monkeypatch):
    committed = {
        "page": os.path.join(REPO, "benchmark", "report", kl_step.PAGE),
        "json": os.path.join(REPO, "benchmark", "results", "kl_step.json"),
    }
    where = Where(pages=str(tmp_path / "a"), commit=False)
    paths = kl_step.write(kl_step.analyze(where, {}), where)
    assert paths == [str(tmp_path / "a" / kl_step.PAGE)]
    assert open(paths[0], "rb").read() == open(committed["page"], "rb").read()
    monkeypatch.setattr(kl_step, "RESULTS", str(tmp_path / "kl_step.json"))
    where = Where(pages=str(tmp_path / "b"), commit=True)
    page, data = kl_step.write(kl_step.analyze(where, {}), where)
    assert open(page, "rb").read() == open(committed["page"], "rb").read()
    assert open(data, "rb").read() == open(committed["json"], "rb").read()
