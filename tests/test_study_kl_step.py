"""The KL-step study (benchmark/studies/kl_step.py): its jobs, by name, against the command its pre-registration
gives and against its committed logs; results' numbers against scipy and hand computation, its words from VOCAB;
the step length eta: updates.csv's eta (benchmark.trainer.step_length) and its reconstruction from the other columns
(kl_step.eta_ratio, for the logs written before the column) on short lab runs with --target-kl (eta chosen per update)
and with the paper's fixed eta, on a run resumed from an updates.csv without the column and on the committed logs of
the fixed-eta arm; the committed page = its template on the committed JSON, and write's bytes the committed ones."""

import csv
import glob
import gzip
import json
import math
import os
import shlex
import shutil

import numpy as np
import pytest
from helpers import only_run, run_main
from scipy import stats as sps

from benchmark import compact, hparams, pages, sweep, trainer
from benchmark.studies import REPO, Where, kl_step

LOGS = os.path.join(REPO, "benchmark", "results", "logs")
# the command in preregistration_kl_step.toml's header, less --workers
HEADER = (
    "--tasks CartPole,Pendulum,Hopper,HalfCheetah --algos smac --seeds 1-5 --reading norm "
    "--budget classic=500000,mujoco=1000000,Pendulum=2000000 --extra-flags '--target-kl 0.01' "
    "--runs-dir benchmark/runs_kl_step --logs-dir benchmark/results/logs/kl_step"
)


@pytest.fixture(scope="module")
def study():
    """analyze on the committed logs."""
    return kl_step.analyze(Where(), {})


@pytest.fixture(scope="module")
def res(study):
    """results on the committed logs."""
    return study["kl_step"]


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


def test_the_committed_param_change_ratios_by_hand(res):
    """param_change_ratio = median over runs of each run's median step_norm, KL arm over the fixed-eta arm."""
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
        assert r["param_change_ratio"] == pytest.approx(medians["kl"] / medians["fixed"])


# ---- the step length eta: logged, and reconstructed for the logs from before the column
TWO = ["--env-id", "CartPole-v1", "--num-steps", "64", "--total-timesteps", "128"]  # two updates
SHORT = [
    "--num-steps",
    "64",
    "--total-timesteps",
    "320",
    "--learning-rate",
    "0.005",
    "--damping",
    "0.1",
]  # five


def updates_of(runs) -> dict:
    run = only_run(runs)
    data = compact.read_csv_columns(os.path.join(run, "updates.csv"), compact.UPDATE_COLS)
    assert len(data["update"]) == 5
    return data


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_reconstructed_eta_matches_the_logged_eta_under_target_kl(tmp_path, env_id):
    assert run_main(tmp_path, "--env-id", env_id, *SHORT, "--target-kl", "0.01") == 0
    u = updates_of(tmp_path)
    assert np.all(u["eta"] > 0) and np.ptp(u["eta"]) > 0  # chosen per update, not the fixed 0.005
    np.testing.assert_allclose(kl_step.eta_ratio(u, 0.1) * 0.005, u["eta"], rtol=1e-5)


def test_fixed_eta_is_logged_and_reconstructs_to_one(tmp_path):
    assert run_main(tmp_path, "--env-id", "CartPole-v1", *SHORT) == 0
    u = updates_of(tmp_path)
    assert np.all(u["eta"] == 0.005)
    np.testing.assert_allclose(kl_step.eta_ratio(u, 0.1), 1.0, rtol=1e-5)


def test_a_run_resumed_from_an_updates_csv_without_eta_gets_the_column(tmp_path):
    """A run begun before the column: its rows keep their values, eta empty (NaN); the new rows log eta."""
    assert run_main(tmp_path, *TWO) == 0
    run = only_run(tmp_path)
    path = os.path.join(run, "updates.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][-1] == "eta"
    with open(path, "w", newline="") as f:  # as the trainer wrote it before the column
        csv.writer(f).writerows(r[:-1] for r in rows)
    assert run_main(tmp_path, "--resume", run, "--total-timesteps", "256") == 0
    u = compact.read_csv_columns(path, compact.UPDATE_COLS)
    assert list(u["update"]) == [1, 2, 3, 4] and np.isnan(u["eta"][:2]).all()
    assert list(u["eta"][2:]) == [trainer.Args().learning_rate] * 2


def test_a_run_without_eta_packs_its_updates(tmp_path):
    """compact.pack of an updates.csv without eta keeps its rows (a log without the column, as the old ones)."""
    assert run_main(tmp_path, *TWO) == 0
    run = only_run(tmp_path)
    path = os.path.join(run, "updates.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(r[:-1] for r in rows)
    out = compact.pack(run, str(tmp_path / "seed1.json.gz"), "CartPole", "smac", 1)
    u = compact.load(out)["updates"]
    assert "eta" not in u and list(u["update"]) == [1, 2]


@pytest.mark.parametrize(
    "optimizer, flags, eta",
    [("sgd", [], 0.005), ("cg", ["--cg-max-kl", "0.01"], None), ("kfac", ["--kfac-kl-clip", "1e-9"], None)],
)
def test_step_length_of_the_baselines(tmp_path, optimizer, flags, eta):
    """AC-SGD: --learning-rate; AC-CG with --cg-max-kl: TRPO's beta = |theta change| / |x|, chosen per update;
    AC-KFAC: --learning-rate times ACKTR's clip factor (a tiny --kfac-kl-clip: below --learning-rate)."""
    assert run_main(tmp_path, *TWO, "--learning-rate", "0.005", "--optimizer", optimizer, *flags) == 0
    u = compact.read_csv_columns(os.path.join(only_run(tmp_path), "updates.csv"), compact.UPDATE_COLS)
    assert np.all(np.isfinite(u["eta"]))
    if eta is not None:
        assert np.all(u["eta"] == eta)
    else:
        assert np.all(u["eta"] > 0) and np.all(u["eta"] != 0.005)


@pytest.mark.parametrize("task", ["CartPole", "Pendulum", "Hopper", "HalfCheetah"])
def test_the_fixed_eta_arm_reconstructs_to_one(task):
    """The stage-1 grid's SMAC runs of the kl_step study's tasks (its fixed-eta arm), with hyperparams.toml's
    damping: eta_ratio = 1 on every update, to the logs' 6 significant digits and the float32 step's rounding."""
    paths = sorted(glob.glob(os.path.join(LOGS, f"norm/{task}/smac/seed*.json.gz")))
    if not paths:
        pytest.skip("no committed fixed-eta logs")
    for path in paths:
        r = kl_step.eta_ratio(compact.load(path)["updates"], hparams.settings(task, "smac")["damping"])
        assert len(r) > 0 and np.abs(r - 1).max() < 3e-5, path


def eta_by_hand(u: dict, damping: float) -> np.ndarray:
    """eta / eta_paper from a log's columns, written out: sqrt((P lambda)^2 + (Q (lambda + L))^2) / G."""
    g, ell, par, perp = (
        np.array(u[c], dtype=float) for c in ("g_norm", "ell_sq", "step_par_norm", "step_perp_norm")
    )
    return np.sqrt((perp * damping) ** 2 + (par * (damping + ell)) ** 2) / g


def test_the_committed_eta_ratios_by_hand(res):
    """The registered quantity: per task, the median over the KL arm's runs of each run's median eta / eta_paper,
    reconstructed (no committed log holds eta); the check, the largest |ratio - 1| over the fixed-eta arm's updates."""
    n, check, n_check = 0, 0.0, 0
    for r in res["tasks"]:
        damping = hparams.settings(r["task"], "smac")["damping"]
        per_run, errors = [], []
        for seed in res["seeds"]:
            kl = compact.load(os.path.join(LOGS, "kl_step", r["task"], "smac", f"seed{seed}.json.gz"))[
                "updates"
            ]
            fixed = compact.load(os.path.join(LOGS, "norm", r["task"], "smac", f"seed{seed}.json.gz"))[
                "updates"
            ]
            assert "eta" not in kl
            per_run.append(np.median(eta_by_hand(kl, damping)))
            errors.append(np.abs(eta_by_hand(fixed, damping) - 1))
            n += len(kl["update"])
        errors = np.concatenate(errors)
        assert r["eta_ratio_runs"] == pytest.approx(per_run, rel=1e-12)
        assert r["eta_ratio"] == pytest.approx(np.median(per_run), rel=1e-12)
        assert r["eta_check"] == pytest.approx(errors.max(), rel=1e-9) and r["eta_check_updates"] == len(
            errors
        )
        assert r["eta_logged"] == 0
        check, n_check = max(check, errors.max()), n_check + len(errors)
    assert res["eta"] == {"updates": n, "logged": 0, "check": pytest.approx(check), "check_updates": n_check}
    assert 0 < res["eta"]["check"] < 3e-5
    ratio = {r["task"]: r["eta_ratio"] for r in res["tasks"]}  # the KL arm's eta against the paper's
    assert ratio["CartPole"] > 10 and ratio["HalfCheetah"] < 1


def test_a_logged_eta_is_read_and_the_rows_without_it_reconstructed():
    """run_eta_ratio: the log's eta over the run's learning rate where an update has it, the reconstruction where it
    is NaN (rows of a run resumed from before the column), the reconstruction alone where the log has no column."""
    run = compact.load(os.path.join(LOGS, "kl_step", "CartPole", "smac", "seed1.json.gz"))
    lr, damping = run["cfg"]["learning_rate"], run["cfg"]["damping"]
    rebuilt = eta_by_hand(run["updates"], damping)
    r, logged = kl_step.run_eta_ratio(run)
    assert logged == 0 and r == pytest.approx(rebuilt, rel=1e-12)
    eta = np.full(len(rebuilt), 0.123)
    eta[:10] = np.nan
    run["updates"]["eta"] = eta
    r, logged = kl_step.run_eta_ratio(run)
    assert logged == len(rebuilt) - 10
    assert r[:10] == pytest.approx(rebuilt[:10], rel=1e-12) and np.all(r[10:] == 0.123 / lr)


def test_a_fresh_runs_compact_log_gives_its_logged_eta(tmp_path):
    """A --target-kl run packed as the study's logs are: run_eta_ratio reads every update's eta from it."""
    assert run_main(tmp_path, "--env-id", "CartPole-v1", *SHORT, "--target-kl", "0.01") == 0
    run = compact.load(
        compact.pack(only_run(tmp_path), str(tmp_path / "seed1.json.gz"), "CartPole", "smac", 1)
    )
    r, logged = kl_step.run_eta_ratio(run)
    assert logged == 5 and np.all(r == np.asarray(run["updates"]["eta"]) / 0.005)
    np.testing.assert_allclose(r, kl_step.eta_ratio(run["updates"], 0.1), rtol=1e-5)


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


def test_write_gives_the_committed_bytes(study, tmp_path, monkeypatch):
    committed = {
        "page": os.path.join(REPO, "benchmark", "report", kl_step.PAGE),
        "json": os.path.join(REPO, "benchmark", "results", "kl_step.json"),
    }
    where = Where(pages=str(tmp_path / "a"), commit=False)
    paths = kl_step.write(study, where)
    assert paths == [str(tmp_path / "a" / kl_step.PAGE)]
    assert open(paths[0], "rb").read() == open(committed["page"], "rb").read()
    monkeypatch.setattr(kl_step, "RESULTS", str(tmp_path / "kl_step.json"))
    where = Where(pages=str(tmp_path / "b"), commit=True)
    page, data = kl_step.write(study, where)
    assert open(page, "rb").read() == open(committed["page"], "rb").read()
    assert open(data, "rb").read() == open(committed["json"], "rb").read()
