"""The stage-1 grid (benchmark/studies/grid.py): its job list and flags, its cells and aggregates on hand-made
compact logs with known answers, its page and JSON on the committed logs, its verdict row and point, and the figures
(benchmark/figures.py) it draws."""

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import raw_run, write_log

from benchmark import aggregate, compact, figures, hparams, pages, stats, sweep
from benchmark import verdict as vd
from benchmark.studies import REPO, Where, grid

GRID_COMMAND = [
    "--reading",
    "norm",
    "--seeds",
    "1-5",
    "--budget",
    "classic=500000,mujoco=1000000,Pendulum=2000000",
]


def test_the_committed_command_runs_the_grid_the_design_states(tmp_path):
    jobs = grid.jobs(sweep.build_parser().parse_args(GRID_COMMAND))
    d = grid.design()
    assert len(jobs) == d["runs"] == 270 and {j.seed for j in jobs} == set(range(1, d["seeds"] + 1))
    assert {(j.task, j.budget) for j in jobs} == set(aggregate.stage1_budgets().items())
    assert all(j.extra_flags == hparams.reading_flags("norm") for j in jobs)
    assert {j.logs_dir for j in jobs} == {os.path.join(sweep.DEFAULT_LOGS, "norm")}
    argv = GRID_COMMAND + ["--runs-dir", str(tmp_path / "r")]  # a runs dir of one's own: no compact logs
    assert {j.logs_dir for j in grid.jobs(sweep.build_parser().parse_args(argv))} == {None}


# ---- cells and aggregates on hand-made logs


def test_grid_section_by_hand(tmp_path):
    logs = tmp_path / "logs"
    rand = compact.read_random_scores()
    for task in ("Acrobot", "CartPole"):
        best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
        for algo in hparams.PAPER_ALGOS:
            # SMAC at the best of the paper (normalized 1), every baseline half way from random (0.5)
            target = best if algo == "smac" else (rand[task] + best) / 2
            for seed in (1, 2, 3):
                write_log(logs, task, algo, seed, target + (seed - 2) * 1e-3)
    write_log(logs, "CartPole", "sgd", 4, 0.0, status="diverged")
    c = grid.compute(
        str(logs), min_seeds=3, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=200
    )
    data = grid.stage1_data(c)
    cells = {(r["task"], r["algo"]): r for r in aggregate.cell_rows(aggregate.load_cells(str(logs)))}
    smac = cells[("CartPole", "smac")]
    assert (
        smac["n"] == 3 and smac["mean"] == pytest.approx(989.5) and smac["inside"] == "paper below"
    )  # CI ~[989.499, 989.501], paper 973.4
    assert cells[("CartPole", "sgd")]["n_div"] == 1
    row = {r["task"]: r["cells"] for r in data["rows"]}["CartPole"]
    by_algo = dict(zip(hparams.algos(), row))
    assert by_algo["sgd"]["n"] == 3 and by_algo["sgd"]["n_div"] == 1 and by_algo["smac"]["n_div"] is None
    finals = [989.5 - 1e-3, 989.5, 989.5 + 1e-3]  # SMAC at CartPole's best of the paper, seeds 1-3
    ours = by_algo["smac"]
    assert ours["mean"] == pytest.approx(np.mean(finals)) and ours["std"] == pytest.approx(
        np.std(finals, ddof=1)
    )
    assert ours["ci"] == pytest.approx(list(stats_t_interval(finals)), abs=1e-6)
    assert (
        ours["paper"] == [973.4, 49.5] and ours["compare"] == "compared" and ours["inside"] == "paper below"
    )
    assert ours["p"] == pytest.approx(welch_vs_paper(finals, 973.4, 49.5))
    assert not by_algo["sgd-matched"]["run"] and by_algo["sgd-matched"]["paper"] is None
    rows = {
        (r[0], r[1]): float(r[2])
        for r in (
            line.split(",") for line in open(tmp_path / "res" / "aggregates.csv").read().splitlines()[1:]
        )
    }
    assert rows[("smac", "IQM")] == pytest.approx(1.0, abs=1e-4)
    assert rows[("sgd", "IQM")] == pytest.approx(0.5, abs=1e-4)
    assert rows[("sgd", "Optimality gap")] == pytest.approx(0.5, abs=1e-4)
    imp = open(tmp_path / "res" / "improvement.csv").read()
    assert "smac,sgd,1.0000" in imp
    assert os.path.getsize(tmp_path / "fig" / "grid_aggregate.png") > 10_000
    assert os.path.getsize(tmp_path / "fig" / "grid_sample_efficiency.png") > 10_000
    agg = data["aggregates"]
    assert agg["tasks"] == ["Acrobot", "CartPole"] and agg["seeds"] == 3 and agg["partial"]
    values = {r["algo"]: dict(zip(agg["metrics"], r["values"])) for r in agg["rows"]}
    assert values["SMAC"]["IQM"][0] == pytest.approx(rows[("smac", "IQM")])
    assert values["AC-SGD"]["Optimality gap"][0] == pytest.approx(rows[("sgd", "Optimality gap")])
    assert {r["algo"]: r["p"][0] for r in agg["improvement"]}["AC-SGD"] == pytest.approx(1.0)
    assert agg["check_reps"] is None and values["SMAC"]["IQM"][3:] == [None, None]  # no bootstrap check there


def test_a_bounds_check_counts_only_for_the_bounds_it_was_run_on():
    """aggregate.checked: the check's bounds follow (point, lo, hi) where its 2,000-replicate bounds are these
    (6 significant digits, as tools/bootstrap_check.py writes them); else, or without a check, None."""
    row = {"lo_2000": "0.373201", "hi_2000": "0.613402", "lo": "0.373333", "hi": "0.617778"}
    assert aggregate.checked((0.49, 0.3732014, 0.6134021), row) == (
        0.49,
        0.3732014,
        0.6134021,
        0.373333,
        0.617778,
    )
    assert aggregate.checked((0.49, 0.3732014, 0.6134), row) == (
        0.49,
        0.3732014,
        0.6134,
        None,
        None,
    )  # other logs
    assert aggregate.checked((0.49, 0.37, 0.61), None) == (0.49, 0.37, 0.61, None, None)


GOOD_CHECK = "x,y,reps,lo_2000,hi_2000,lo,hi\nsmac,IQM,200000,0.592574,0.72127,0.592633,0.720823\n"


@pytest.mark.parametrize(
    "damage",
    [
        bytes(np.random.default_rng(0).integers(0, 256, 400, dtype=np.uint8)),  # random bytes
        GOOD_CHECK.replace("200000", "many").encode(),  # a non-number in reps
        GOOD_CHECK.replace("lo_2000", "low_2000").encode(),  # a renamed header
        GOOD_CHECK.replace("200000", "0").encode(),  # no replicates
    ],
)
def test_a_damaged_bounds_check_is_named_in_one_line_and_its_bounds_print_unchecked(tmp_path, capsys, damage):
    """A damaged tools/bootstrap_check.py CSV once crashed the whole report; now, as a missing one, it checks
    nothing: one line names it, and every interval it covers prints its own bounds marked unchecked."""
    path = tmp_path / "bootstrap_check.csv"
    path.write_text(GOOD_CHECK)
    assert aggregate.read_check(str(path))[("smac", "IQM")]["lo"] == "0.592633"
    assert capsys.readouterr().err == ""
    path.write_bytes(damage)
    assert aggregate.read_check(str(path)) == {}
    (line,) = capsys.readouterr().err.splitlines()
    assert str(path) in line
    v = aggregate.checked((0.65, 0.592574, 0.72127), aggregate.read_check(str(path)).get(("smac", "IQM")))
    assert stats.checked_estimate(*v) == f"{stats.estimate(*v[:3])}{stats.UNCHECKED}"
    assert aggregate.read_check(str(tmp_path / "none.csv")) == {}  # missing: no check, and nothing to say
    assert capsys.readouterr().err.count("\n") == 1


def test_the_bounds_check_tool_refuses_no_replicates_and_keeps_a_larger_check(tmp_path):
    """tools/bootstrap_check.py: --reps below 1 once gave a traceback, and --reps 1 replaced the committed check of
    200,000 replicates; now each is refused in one line with exit 2, before any bootstrap, the check untouched."""
    before = open(aggregate.CHECK, "rb").read()
    for reps, named in (("0", "--reps 0"), ("-3", "--reps -3"), ("1", "--force")):
        done = subprocess.run(
            [sys.executable, os.path.join(REPO, "tools", "bootstrap_check.py"), "--reps", reps],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert named in done.stderr
    assert open(aggregate.CHECK, "rb").read() == before


def welch_vs_paper(x, mean, std):
    """Welch's test of our finals against the paper's mean ± std as a 5-seed sample, by scipy."""
    from scipy import stats as sps

    return sps.ttest_ind_from_stats(
        np.mean(x), np.std(x, ddof=1), len(x), mean, std, 5, equal_var=False
    ).pvalue


def test_grid_section_without_runs(tmp_path):
    data = grid.stage1_data(grid.compute(str(tmp_path / "none")))
    assert data["rows"] == [] and data["aggregates"] is None and data["runs"] == 0 and data["seeds"] == [0]


def test_a_diverged_run_scores_as_the_random_policy_in_the_aggregates(tmp_path):
    """A task stays in the aggregates when a seed diverged; that run counts as normalized 0 (random policy)."""
    logs = tmp_path / "logs"
    best = max(hparams.paper_result("Acrobot", a)[0] for a in hparams.PAPER_ALGOS)
    for algo in hparams.PAPER_ALGOS:
        for seed in (1, 2, 3):
            if algo == "sgd" and seed == 2:
                write_log(logs, "Acrobot", algo, seed, 0.0, status="diverged")
            else:
                write_log(logs, "Acrobot", algo, seed, best)
    c = grid.compute(
        str(logs), min_seeds=3, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=100
    )
    out = c["aggregates"]
    assert out["tasks"] == ["Acrobot"] and out["use"] == 3
    assert out["agg"]["sgd"]["Mean"][0] == pytest.approx(2 / 3, abs=1e-6)  # (1 + 0 + 1) / 3
    assert out["agg"]["smac"]["Mean"][0] == pytest.approx(1.0, abs=1e-6)
    row = next(r for r in c["rows"] if r["algo"] == "sgd")
    assert row["n"] == 2 and row["n_div"] == 1 and np.isnan(row["lo"])  # no CI below 3 finished seeds
    assert grid.stage1_data(c)["aggregates"]["n_div"] == 1


def test_aggregates_prefer_more_tasks_over_more_seeds(tmp_path):
    logs = tmp_path / "logs"
    for task, seeds in (("Acrobot", 5), ("CartPole", 3)):
        best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
        for algo in hparams.PAPER_ALGOS:
            for seed in range(1, seeds + 1):
                write_log(logs, task, algo, seed, best)
    out = grid.compute(
        str(logs), min_seeds=5, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=50
    )["aggregates"]
    assert out["use"] == 3 and out["tasks"] == ["Acrobot", "CartPole"]
    write_log(logs, "CartPole", "smac", 4, 0.0)  # still 3 for the other algorithms: nothing changes
    out = grid.compute(
        str(logs), min_seeds=5, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=50
    )["aggregates"]
    assert out["use"] == 3
    (tmp_path / "only").mkdir()
    for algo in hparams.PAPER_ALGOS:
        for seed in range(1, 6):
            write_log(tmp_path / "only", "Acrobot", algo, seed, -100.0)
    out = grid.compute(
        str(tmp_path / "only"),
        min_seeds=5,
        results_dir=str(tmp_path / "res2"),
        figures_dir=str(tmp_path / "fig"),
        reps=50,
    )["aggregates"]
    assert out["use"] == 5 and out["tasks"] == ["Acrobot"]


def test_grid_section_counts_finished_and_diverged_seeds_and_leaves_short_runs_out(tmp_path):
    """The stage-1 section's header: the seed range over cells, the runs in (finished + diverged), the short
    ones named apart, the budgets grouped by task group."""
    logs = tmp_path / "logs"
    for seed in (1, 2, 3):
        write_log(logs, "Acrobot", "smac", seed, -100.0)
    for seed in (1, 2, 3, 4):
        write_log(logs, "CartPole", "smac", seed, 500.0)
    write_log(logs, "CartPole", "smac", 5, 0.0, status="diverged")
    write_log(logs, "CartPole", "sgd", 1, 500.0, last_step=1000)  # stopped short of its budget
    c = grid.compute(str(logs), results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=50)
    data = grid.stage1_data(c)
    assert data["seeds"] == [0, 5]  # CartPole AC-SGD: its only run is short
    assert data["runs"] == 8 and data["short"] == 1
    groups = [
        {"names": ["Acrobot", "CartPole"], "budget": 500_000},
        {"names": ["Pendulum"], "budget": 2_000_000},
        {"names": ["MuJoCo"], "budget": 1_000_000},
    ]
    assert data["budgets"] == groups == grid.budget_groups()
    for g in groups:  # each group's tasks at its budget
        tasks = hparams.tasks("mujoco") if g["names"] == ["MuJoCo"] else g["names"]
        assert {aggregate.stage1_budget(t) for t in tasks} == {g["budget"]}


def test_mujoco_cells_are_compared_with_the_paper_only_at_its_budget(tmp_path):
    # Hopper SMAC at the paper's 331.2 ± 20.9 and Acrobot SMAC far from the paper: one a 1M cell, one classic control
    logs = tmp_path / "logs"
    for seed in (1, 2, 3):
        write_log(logs, "Hopper", "smac", seed, 100.0 + seed)
        write_log(logs, "Acrobot", "smac", seed, -400.0 + seed)
    cells = aggregate.load_cells(str(logs))
    rows = {r["task"]: r for r in aggregate.cell_rows(cells)}
    hopper, acrobot = rows["Hopper"], rows["Acrobot"]
    assert not hopper["comparable"] and np.isnan(hopper["p_vs_paper"]) and hopper["inside"] == "–"
    cell = grid.cell_data(hopper)
    assert cell["compare"] == "not comparable" and cell["p"] is None and cell["inside"] is None
    assert cell["paper"] == list(hparams.paper_result("Hopper", "smac"))
    assert acrobot["comparable"] and acrobot["p_vs_paper"] < 0.05 and acrobot["inside"] == "paper above"
    cell = grid.cell_data(acrobot)
    assert cell["compare"] == "compared" and cell["inside"] == "paper above"
    assert cell["p"] == pytest.approx(welch_vs_paper([-399.0, -398.0, -397.0], -94.1, 17.0))
    # the same finals read as 5M cells are compared (Welch p of 101..103 against 331.2 ± 20.9 over 5 seeds)
    at5 = {r["task"]: r for r in aggregate.cell_rows(cells, budgets={"Hopper": aggregate.PAPER_BUDGET})}
    assert at5["Hopper"]["comparable"] and at5["Hopper"]["p_vs_paper"] < 0.001
    # the interval is the t-interval of the three finals
    assert (hopper["lo"], hopper["hi"]) == pytest.approx(stats_t_interval([101.0, 102.0, 103.0]))


def stats_t_interval(x):
    from scipy import stats as sps

    m, sem = np.mean(x), np.std(x, ddof=1) / np.sqrt(len(x))
    return sps.t.interval(0.95, len(x) - 1, loc=m, scale=sem)


def test_the_orderings_by_hand():
    """Acrobot with three of the five paper algorithms run: the paper orders AC-SGD (-86.2) > AC-Adam (-88.4) >
    SMAC (-94.1); ours AC-SGD -70 > SMAC -80 > AC-Adam -85: the same best, 2 of the 3 pairs in the paper's order."""
    final = {("Acrobot", a): {"final_mean": str(m)} for a, m in (("smac", -80), ("sgd", -70), ("adam", -85))}
    d = grid.Data(runs=[], headline=[], final=final, diag={})
    rows = {r["task"]: r for r in grid.ordering_data(d)}
    acrobot = rows["Acrobot"]
    assert acrobot["ours"] == ["AC-SGD", "SMAC", "AC-Adam"]
    assert acrobot["paper"] == ["AC-SGD", "AC-Adam", "AC-CG", "SMAC", "AC-KFAC"]
    assert acrobot["same_best"] == "yes" and acrobot["only"] == 3 and acrobot["of"] == 5
    assert acrobot["pairs"] == [2, 3]
    cartpole = rows["CartPole"]  # nothing run: no best, no pair
    assert cartpole["ours"] == [] and cartpole["same_best"] is None and cartpole["only"] is None
    assert cartpole["pairs"] is None


def test_the_budget_groups_cover_every_task_once_at_its_budget():
    groups = grid.budget_groups()
    named = {"MuJoCo": hparams.tasks("mujoco")}
    tasks = [t for g in groups for n in g["names"] for t in named.get(n, [n])]
    assert sorted(tasks) == sorted(hparams.tasks())
    for g in groups:
        for n in g["names"]:
            assert all(aggregate.stage1_budget(t) == g["budget"] for t in named.get(n, [n]))
    assert [g["budget"] for g in groups] == [500_000, 2_000_000, 1_000_000]


def test_the_design_the_report_states_is_the_committed_grid_and_prereg():
    d = grid.design()
    runs = compact.discover_logs(aggregate.stage1_logs())
    assert d["runs"] == len(runs) == d["tasks"] * d["algos"] * d["seeds"]
    assert {r["task"] for r in runs} == set(hparams.tasks()) and len({r["task"] for r in runs}) == d["tasks"]
    assert {r["algo"] for r in runs} == set(hparams.algos()) and len({r["algo"] for r in runs}) == d["algos"]
    assert sorted({r["seed"] for r in runs}) == list(range(1, d["seeds"] + 1))
    pre = committed(
        "prereg.json"
    )  # the pre-registered study's page data (its test checks it against its logs)
    assert {r["n"] for r in pre["block1"]["rows"]} == {d["paired_seeds"]}
    assert d["level"] == pre["levels"]["tost"] and d["margin"] == pre["margin"]


# ---- the study on synthetic runs: raw runs -> compact logs -> analyze -> write


def test_the_study_on_synthetic_runs(tmp_path):
    """Humanoid SMAC and sgd-matched on three seeds, Hopper SMAC on one: analyze writes the CSVs and figures, write
    the page rendered from its data; the SMAC diagnostics and the paired comparison as made."""
    runs, logs = str(tmp_path / "runs"), str(tmp_path / "logs")
    budget = aggregate.stage1_budgets()["Humanoid"]
    lam = hparams.settings("Humanoid", "smac")["damping"]
    for seed, (a, b) in enumerate([(300, 200), (310, 190), (305, 230)], 1):
        g_norm, par = raw_run(runs, "Humanoid", "smac", seed, budget, a, ell_sq=2.0 * lam, lam=lam)
        raw_run(runs, "Humanoid", "sgd-matched", seed, budget, b, ell_sq=0.0, lam=lam)
    raw_run(runs, "Hopper", "smac", 1, budget, 10, ell_sq=0.01, lam=1.0)  # no sgd-matched: no comparison
    assert compact.main(["pack", runs, "--logs", logs]) == 0
    res, figs = tmp_path / "res", tmp_path / "figs"
    where = Where(
        logs=logs,
        headline=str(tmp_path / "none"),
        results=str(res),
        figures=str(figs),
        pages=str(tmp_path / "p"),
        reps=100,
    )
    out = grid.analyze(where, {})
    assert out["logs"] == logs and len(out["data"].runs) == 7 and out["data"].headline == []
    assert out["data"].cells == out["grid"]["rows"]
    agg = out["data"].grid  # the aggregates over the one task every algorithm run has three seeds on
    assert agg is out["grid"]["aggregates"] and agg["tasks"] == ["Humanoid"] and agg["use"] == 3
    rows = [
        r for r in stats.read_csv(os.path.join(res, "diagnostics_summary.csv")) if r["task"] == "Humanoid"
    ]
    assert [r["algo"] for r in rows] == ["smac"]
    r = rows[0]
    assert float(r["ell_sq_over_lambda_median"]) == pytest.approx(2.0)
    assert float(r["removed_frac_median"]) == pytest.approx(par * 2.0 * lam / g_norm, rel=1e-5)
    assert float(r["step_over_sgd_median"]) == pytest.approx(1.5 * lam / g_norm, rel=1e-5)
    assert sorted(os.listdir(figs)) == [
        "grid_aggregate.png",
        "grid_profile.png",
        "grid_sample_efficiency.png",
        "logprob.png",
        "returns_raw.png",
        "returns_smoothed.png",
        "smac_diagnostics.png",
    ]
    # the paired comparison: the three Humanoid seeds; none on the tasks without both arms
    equiv = out["equiv"]
    assert equiv["Humanoid"]["n"] == 3 and equiv["Hopper"]["n"] == 0 and list(equiv) == hparams.tasks()
    path, deviations = grid.write(out, where)
    data = pages.committed(grid.grid_data(out["data"], out["grid"]), None, grid.PAGE_DIGITS)
    with open(path, encoding="utf-8") as f:
        assert f.read().split("\n", 4)[4] == pages.render("grid.md.j2", data)
    with open(deviations, encoding="utf-8") as f:  # the deviations page, from the same runs
        text = f.read().split("\n", 4)[4]
    assert text == pages.render("deviations.md.j2", pages.committed(grid.deviations_data(out["data"])))
    diag = {r["task"]: r for r in data["diagnostics"]}["Humanoid"]
    assert diag["damping"] == lam and diag["ell"] == pytest.approx([2.0, 2.0, 2.0])
    assert diag["removed"][0] == pytest.approx(par * 2.0 * lam / g_norm, rel=1e-5)
    assert data["seeds"] == [1, 3] and data["runs"] == 7  # every run counted, once
    picture = str(tmp_path / "smac_diagnostics.png")
    assert figures.plot_smac_vs_matched(
        stats.read_csv(os.path.join(res, "curves_return.csv")),
        stats.read_csv(os.path.join(res, "diagnostics.csv")),
        picture,
    )
    assert os.path.getsize(picture) > 10_000
    # the verdict: one task with both arms, judged; SMAC above sgd-matched on every seed, no AC-SGD runs
    part = grid.verdict(out, {})
    (row,) = part["rows"]
    assert row["id"] == "sgd_stage1" and row["of"] == 1
    assert [t for ts in row["numbers"]["tasks"].values() for t in ts] == ["Humanoid"]
    point = part["points"]["step_size"]
    assert point["p_vs_sgd"] is None and point["p_vs_matched"] == 1.0
    assert point["iqm"] == [agg["agg"]["smac"]["IQM"][0], agg["agg"]["sgd-matched"]["IQM"][0]]


# ---- the verdict by hand
def test_the_stage1_row_holms_over_the_tasks_with_runs():
    """Three judged tasks (a fourth without runs is left out): raw p 0.01, 0.02, 0.04 -> Holm 0.03, 0.04, 0.04;
    one interval inside the margin. The TOST p stands beside each task, Holm-adjusted only for information: TOST p
    0.5, 0.9, 0.02 -> Holm 1, 1, 0.06, and Pendulum stays equivalent (Holm is the difference test's)."""
    equiv = {
        "Acrobot": {"n": 5, "p": 0.01, "p_tost": 0.5, "equivalent": False},
        "CartPole": {"n": 5, "p": 0.04, "p_tost": 0.9, "equivalent": False},
        "Pendulum": {
            "n": 5,
            "p": 0.02,
            "p_tost": 0.02,
            "equivalent": True,
            "means": {"smac": 0.61, "sgd-matched": 0.6, "adam": 1.58, "cg": 0.56},
            "step_change": 0.2,
        },
        "Hopper": {"n": 0, "p": float("nan"), "p_tost": float("nan"), "equivalent": False},
    }
    row = grid.sgd_stage1_row(equiv)
    assert row["numbers"]["p_tost"] == {
        "Acrobot": [0.5, 1.0],
        "CartPole": [0.9, 1.0],
        "Pendulum": [0.02, pytest.approx(0.06)],
    }
    # the equivalent task's arms, more than the margin below AC-Adam's best and above half the paper's, its rank-1
    # term changing SGD's step by 20 %: can speak
    curvature = row["numbers"]["curvature"]
    assert curvature["can"] == ["Pendulum"] and curvature["n_can"] == 1
    (cell,) = curvature["groups"][vd.SPEAKS]
    assert cell == {
        "task": "Pendulum",
        "arms": [0.61, 0.6],
        "best": 1.58,
        "best_algo": "AC-Adam",
        "n_algos": 4,
        "change": 0.2,
        "answer": vd.SPEAKS,
    }
    assert row["id"] == "sgd_stage1" and row["of"] == 3 and row["links"] == ["report/grid.md"]
    assert row["numbers"]["tasks"] == {vd.EQUIVALENT: ["Pendulum"], vd.DIFFERENT: ["Acrobot", "CartPole"]}
    assert row["answer"] == [[vd.EQUIVALENT, 1], [vd.DIFFERENT, 2]]
    assert row["numbers"]["budgets"] == [500_000, 2_000_000]
    equiv["CartPole"]["p"] = 0.03  # Holm: 3 x 0.01, 2 x 0.02 = 0.04, 0.04 -> still below 0.05
    assert grid.sgd_stage1_row(equiv)["numbers"]["tasks"][vd.DIFFERENT] == ["Acrobot", "CartPole"]
    equiv["Acrobot"]["p"] = 0.02  # 3 x 0.02 = 0.06: nothing shown
    assert grid.sgd_stage1_row(equiv)["answer"] == [[vd.EQUIVALENT, 1], [vd.NOT_SHOWN, 2]]


def test_the_step_ratio_is_smacs_eta_over_lambda_over_sgds_eta():
    for task in hparams.tasks():
        smac, sgd = hparams.settings(task, "smac"), hparams.settings(task, "sgd")
        assert grid.step_ratio(task) == pytest.approx(
            smac["learning_rate"] / smac["damping"] / sgd["learning_rate"]
        )
    imp = {
        "sgd": (0.7, 0.6, 0.8, 0.59, 0.81),
        "sgd-matched": (0.5, 0.4, 0.6, None, None),
    }  # the second unchecked
    agg = {"smac": {"IQM": (0.9, 0.8, 1.0)}, "sgd-matched": {"IQM": (0.85, 0.7, 0.9)}}
    point = grid.step_size_point({"agg": agg, "imp": imp, "tasks": ["CartPole", "Pendulum", "Hopper"]})
    ratios = [grid.step_ratio(t) for t in hparams.tasks()]
    assert point == {
        "ratio": [min(ratios), max(ratios)],
        "p_vs_sgd": 0.7,
        "p_vs_matched": 0.5,
        "iqm": [0.9, 0.85],
        "ci_vs_sgd": [0.6, 0.8, 0.59, 0.81],
        "ci_vs_matched": [0.4, 0.6, None, None],
        "unchecked": True,
        "n_tasks": 3,
        "budgets": [500_000, 2_000_000],
    }


# ---- the study on the committed logs
@pytest.fixture(scope="module")
def study(committed_done, committed_where):
    """analyze on the committed logs (2000 bootstrap replicates; the report's, shared by the run), its CSVs and
    figures in a scratch directory: (its result, that Where)."""
    return committed_done["grid"], committed_where


def test_analyze_writes_the_committed_csvs_and_figures(study):
    out, where = study
    assert out["logs"] == aggregate.stage1_logs() and len(out["data"].runs) == 270
    assert len(out["data"].headline) == 10  # HalfCheetah SMAC and AC-CG at 5M, five seeds each
    for name in os.listdir(where.results):
        with open(os.path.join(where.results, name), "rb") as a:
            with open(os.path.join(grid.STAGE1, name), "rb") as b:
                assert a.read() == b.read(), name
    pictures = os.listdir(where.figures)
    assert len(pictures) == 7
    for name in pictures:
        with open(os.path.join(where.figures, name), "rb") as a:
            with open(os.path.join(grid.FIGURES, name), "rb") as b:
                assert a.read() == b.read(), name


def test_write_renders_the_page_and_commits_the_json_only_when_asked(study, tmp_path, monkeypatch):
    out, where = study
    monkeypatch.setattr(grid, "GRID_JSON", str(tmp_path / "grid.json"))
    monkeypatch.setattr(grid, "DEVIATIONS_JSON", str(tmp_path / "deviations.json"))
    where = Where(pages=str(tmp_path / "report"), commit=False)
    pages_written = [str(tmp_path / "report" / name) for name in ("grid.md", "deviations.md")]
    assert grid.write(out, where) == pages_written
    assert not (tmp_path / "grid.json").exists() and not (tmp_path / "deviations.json").exists()
    where.commit = True
    json_written = [str(tmp_path / name) for name in ("grid.json", "deviations.json")]
    assert grid.write(out, where) == [pages_written[0], json_written[0], pages_written[1], json_written[1]]
    for name, committed_path in (
        ("report/grid.md", os.path.join(REPO, "benchmark", "report", "grid.md")),
        ("grid.json", os.path.join(REPO, "benchmark", "results", "grid.json")),
        ("report/deviations.md", os.path.join(REPO, "benchmark", "report", "deviations.md")),
        ("deviations.json", os.path.join(REPO, "benchmark", "results", "deviations.json")),
    ):
        with open(tmp_path / name, encoding="utf-8") as a, open(committed_path, encoding="utf-8") as b:
            assert a.read() == b.read(), name


def test_the_verdict_part_is_the_committed_one_and_counts_what_it_lists(study):
    out, _ = study
    part = pages.plain(grid.verdict(out, {}))
    committed_v = committed("verdict.json")
    (row,) = part["rows"]
    assert row == next(r for r in committed_v["rows"] if r["id"] == "sgd_stage1")
    assert part["points"] == {"step_size": committed_v["points"]["step_size"]}
    assert part["design"] == {k: committed_v["design"][k] for k in part["design"]}
    assert list(part["design"]) == ["alpha", "margin", "seeds", "mujoco_budget", "paper_budget", "reading"]
    listed = [w for w, ts in row["numbers"]["tasks"].items() for _ in ts]
    assert row["answer"] == vd.tally(listed) and row["of"] == len(listed) == len(hparams.tasks())
    for t, r in out["equiv"].items():  # a task equivalent exactly where its interval lies inside the margin
        inside = -vd.EQUIV_MARGIN < r["ci"][0] and r["ci"][1] < vd.EQUIV_MARGIN
        assert (t in row["numbers"]["tasks"].get(vd.EQUIVALENT, [])) == inside, t
        assert r["n"] == grid.STAGE1_SEEDS


def committed(name: str) -> dict:
    with open(os.path.join(REPO, "benchmark", "results", name), encoding="utf-8") as f:
        return json.load(f)


def committed_body(page: str, title: str) -> str:
    """A committed detail page without its title and 'Part of' lines."""
    with open(os.path.join(REPO, "benchmark", "report", page), encoding="utf-8") as f:
        head, _, part, _, body = f.read().split("\n", 4)
    assert head == f"# {title}" and part.startswith("Part of [the reproduction report]")
    return body


def test_the_committed_grid_page_is_its_template_on_the_committed_json():
    title = "The stage-1 grid: every cell, aggregates, orderings, SMAC vs SGD with step η/λ"
    assert title == grid.PAGE_TITLE
    assert committed_body("grid.md", title) == pages.render("grid.md.j2", committed("grid.json"))


def test_the_committed_grid_json_is_the_data_of_the_committed_logs(study):
    """The cells, orderings and diagnostics recomputed from the committed logs; the aggregates (a 2000-resample
    bootstrap) against the committed stage1/aggregates.csv and improvement.csv; every cell against its per-seed
    finals in the committed stage1/cells.csv, recomputed with numpy / scipy."""
    d = study[0]["data"]
    data = committed("grid.json")
    cells = aggregate.load_cells(d.runs)
    c = {"cells": cells, "rows": aggregate.cell_rows(cells), "min_seeds": 5, "reps": 2000, "aggregates": None}
    fresh = pages.committed(grid.grid_data(d, c), None, grid.PAGE_DIGITS)
    assert {**data, "aggregates": None} == fresh
    stage1 = os.path.join(REPO, "benchmark", "results", "stage1")
    by_row = {r["task"]: dict(zip(hparams.algos(), r["cells"])) for r in data["rows"]}
    for r in stats.read_csv(os.path.join(stage1, "cells.csv")):
        cell = by_row[r["task"]][r["algo"]]
        finals = [float(x) for x in r["finals"].split(";")]
        assert cell["n"] == len(finals) == 5 and cell["n_div"] is None
        tol = 1e-5 * max(abs(f) for f in finals)  # cells.csv keeps 6 significant digits
        assert cell["mean"] == pytest.approx(np.mean(finals), abs=tol)
        assert cell["std"] == pytest.approx(np.std(finals, ddof=1), abs=tol)
        assert cell["ci"] == pytest.approx(list(stats_t_interval(finals)), abs=tol)
        paper = hparams.paper_result(r["task"], r["algo"]) if r["algo"] in hparams.PAPER_ALGOS else None
        if paper is None:
            assert cell["compare"] is None
        elif hparams.group(r["task"]) == "mujoco":  # 1M beside the paper's 5M
            assert cell["compare"] == "not comparable" and cell["p"] is None and cell["inside"] is None
        else:
            lo, hi = cell["ci"]
            side = "yes" if lo <= paper[0] <= hi else "paper above" if paper[0] > hi else "paper below"
            assert cell["compare"] == "compared" and cell["inside"] == side
            assert cell["p"] == pytest.approx(welch_vs_paper(finals, *paper), rel=1e-3)
    agg = data["aggregates"]
    assert (
        agg["tasks"] == hparams.tasks() and agg["seeds"] == 5 and not agg["partial"] and agg["reps"] == 2000
    )
    label = {hparams.algo_label(a): a for a in hparams.algos()}
    values = {(label[r["algo"]], m): v for r in agg["rows"] for m, v in zip(agg["metrics"], r["values"])}
    csv_rows = stats.read_csv(os.path.join(stage1, "aggregates.csv"))
    assert len(csv_rows) == len(values) == 24
    for r in csv_rows:
        point = [float(r[k]) for k in ("point", "lo", "hi")]
        assert values[(r["algo"], r["metric"])][:3] == pytest.approx(point, rel=1e-5, abs=1e-6)
    imp = {label[r["algo"]]: r["p"] for r in agg["improvement"]}
    for r in stats.read_csv(os.path.join(stage1, "improvement.csv")):
        assert imp[r["y"]][:3] == pytest.approx([float(r[k]) for k in ("P(x>y)", "lo", "hi")], abs=5e-5)
    # every printed bound has its check (tools/bootstrap_check.py), run on these very bounds
    check = {(r["x"], r["y"]): r for r in stats.read_csv(aggregate.CHECK)}
    assert agg["check_reps"] == 200_000 and len(check) == 24 + len(imp)
    for (a, m), v in values.items():
        assert v[3:] == pytest.approx([float(check[(a, m)][k]) for k in ("lo", "hi")])
    for y, p in imp.items():
        assert p[3:] == pytest.approx([float(check[("smac", y)][k]) for k in ("lo", "hi")])
    # the orderings: our ranks by the cells' means, pairs in the paper's order counted pair by pair
    for o in data["ordering"]:
        means = {a: by_row[o["task"]][a]["mean"] for a in hparams.PAPER_ALGOS}
        paper = {a: hparams.paper_result(o["task"], a)[0] for a in hparams.PAPER_ALGOS}
        assert o["ours"] == [hparams.algo_label(a) for a in sorted(means, key=means.get, reverse=True)]
        pairs = list(itertools.combinations(hparams.PAPER_ALGOS, 2))
        agree = sum((means[x] > means[y]) == (paper[x] > paper[y]) for x, y in pairs)
        assert o["pairs"] == [agree, 10] and o["only"] is None
        best = max(means, key=means.get) == max(paper, key=paper.get)
        assert o["same_best"] == ("yes" if best else "no")
    diag = {
        r["task"]: r
        for r in stats.read_csv(os.path.join(stage1, "diagnostics_summary.csv"))
        if r["algo"] == "smac"
    }
    for r in data["diagnostics"]:
        s = diag[r["task"]]
        assert r["ell"] == pytest.approx(
            [float(s[f"ell_sq_over_lambda_{k}"]) for k in ("median", "min_run", "max_run")]
        )
        assert r["removed_last"] == pytest.approx(float(s["removed_frac_last10pct_median"]))
        assert r["damping"] == hparams.settings(r["task"], "smac")["damping"]


def test_the_committed_grid_speaks_only_its_vocabulary():
    page, claims = committed("grid.json"), committed("claims.json")
    cells = [c for r in page["rows"] for c in r["cells"]] + [r["cell"] for r in claims["headline"]["rows"]]
    words = [c[k] for c in cells for k in ("compare", "inside")] + [r["same_best"] for r in page["ordering"]]
    assert set(words) - {None} <= set(grid.GRID_VOCAB)
    # the paper algorithms: classic control compared, MuJoCo at 1M beside the paper's 5M; the 5M block compared
    compare = [c["compare"] for r in page["rows"] for c in r["cells"][:5]]
    assert compare.count("compared") == 3 * 5 and compare.count("not comparable") == 6 * 5
    assert [r["cell"]["compare"] for r in claims["headline"]["rows"]] == ["compared", "compared"]
