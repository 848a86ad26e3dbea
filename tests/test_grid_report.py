"""The stage-1 grid report on hand-made compact logs with known answers."""

import gzip
import itertools
import json
import os

import numpy as np
import pytest

from benchmark import aggregate, compact, hparams, pages, report, stats

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_log(logs, task, algo, seed, value, status="finished", last_step=None):
    budget = aggregate.stage1_budget(task)
    steps = np.linspace(budget / 200, budget, 200)
    last = last_step or (budget if status == "finished" else budget // 2)
    rec = {
        "format": 1,
        "task": task,
        "algo": algo,
        "seed": seed,
        "budget": budget,
        "status": status,
        "global_step": last,
        "args": {"damping": 0.1},
        "episodes": {
            "global_step": steps.tolist(),
            "episodic_return": list(value) if np.ndim(value) else [value] * 200,
            "episodic_length": [5] * 200,
        },
        "updates": {c: [] for c in compact.UPDATE_COLS},
    }
    path = compact.log_path(str(logs), task, algo, seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(rec, f)


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
    c = report.compute(
        str(logs), min_seeds=3, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=200
    )
    data = report.stage1_data(c)
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


def welch_vs_paper(x, mean, std):
    """Welch's test of our finals against the paper's mean ± std as a 5-seed sample, by scipy."""
    from scipy import stats as sps

    return sps.ttest_ind_from_stats(
        np.mean(x), np.std(x, ddof=1), len(x), mean, std, 5, equal_var=False
    ).pvalue


def test_grid_section_without_runs(tmp_path):
    data = report.stage1_data(report.compute(str(tmp_path / "none")))
    assert data["rows"] == [] and data["aggregates"] is None and data["runs"] == 0 and data["seeds"] == [0]


def test_report_takes_halfcheetah_claims_from_the_5M_block(tmp_path):
    """The HalfCheetah claims need 2M and 3.4M steps: report.evaluate_claims judges them on the headline block's
    5M logs, and everything else on the stage-1 logs."""
    from benchmark import report

    stage, head = tmp_path / "stage", tmp_path / "head"
    for algo in ("smac", "cg"):
        write_log(stage, "HalfCheetah", algo, 1, 100.0)  # 1M: too short for either claim
    # 5M block: SMAC at 2000 (+10 per seed) from the start (passes 1766 in the first bin), AC-CG at 0 (+10 per
    # seed) -> "learns more slowly [than AC-CG] for the first 2M" does not hold, "matches 1766 by 3.4M" holds.
    # Both gain 100 after 2M, which only a final taken over 5M (not the stage-1 1M) sees.
    for algo, value in (("smac", 2000.0), ("cg", 0.0)):
        for seed in (1, 2):
            steps = np.linspace(5_000_000 / 200, 5_000_000, 200)
            rec = {
                "format": 1,
                "task": "HalfCheetah",
                "algo": algo,
                "seed": seed,
                "budget": 5_000_000,
                "status": "finished",
                "global_step": 5_000_000,
                "args": {},
                "episodes": {
                    "global_step": steps.tolist(),
                    "episodic_return": (value + 10 * seed + 100 * (steps > 2_000_000)).tolist(),
                    "episodic_length": [1000] * 200,
                },
                "updates": {c: [] for c in compact.UPDATE_COLS},
            }
            path = compact.log_path(str(head), "HalfCheetah", algo, seed)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with gzip.open(path, "wt") as f:
                json.dump(rec, f)
    d = report.Data(
        runs=compact.discover_logs(str(stage)), headline=compact.discover_logs(str(head)), final={}, diag={}
    )
    v = {c["id"]: c["verdict"] for c in report.evaluate_claims(d)}
    assert v["halfcheetah-smac-3.4M"] == "held" and v["halfcheetah-smac-slower-2M"] == "not held"
    # the block's finals: over 5M (2115 / 115, not the stage-1 1M's 2015 / 15), beside the paper's 2936 / 1766
    from scipy import stats as sps

    h = report.headline_data(d)
    assert h["run"] and h["bin"] == 50_000 and h["runs"] == 4 and h["expected"] == 10
    cells = {r["algo"]: r["cell"] for r in h["rows"]}
    # the smoothed finals: the EWM still lags the step at 2M by about 0.2; the page prints 2115 ± 7.1
    assert cells["SMAC"]["mean"] == pytest.approx(2115, abs=0.5)
    assert cells["SMAC"]["std"] == pytest.approx(7.07, abs=0.01)
    assert cells["AC-CG"]["mean"] == pytest.approx(115, abs=0.5)
    block = aggregate.load_cells(d.headline, budgets={"HalfCheetah": 5_000_000})
    smac, cg = ([f for _, f, _ in block[("HalfCheetah", a)]["finished"]] for a in ("smac", "cg"))
    assert cells["SMAC"]["mean"] == pytest.approx(np.mean(smac))
    assert cells["SMAC"]["std"] == pytest.approx(np.std(smac, ddof=1))
    assert cells["SMAC"]["ci"] == [None, None] and cells["SMAC"]["n"] == 2  # no interval below 3 seeds
    assert cells["SMAC"]["paper"] == [2936, 946] and cells["SMAC"]["compare"] == "compared"
    assert cells["SMAC"]["inside"] is None
    assert cells["SMAC"]["p"] == pytest.approx(welch_vs_paper(smac, 2936, 946))  # 0.12
    (gap,) = h["gaps"]
    assert gap["diff"] == pytest.approx(2000, abs=0.01) and gap["n"] == [2, 2] and gap["paper"] == 2936 - 1766
    assert gap["p"] == pytest.approx(sps.ttest_ind(smac, cg, equal_var=False).pvalue)  # 1.2e-05
    # steady rise: each seed's peak is its last bin, so peak = final
    peaks = {p["algo"]: p for p in h["peaks"]}
    assert [(s["seed"], s["step"]) for s in peaks["SMAC"]["seeds"]] == [(1, 5_000_000), (2, 5_000_000)]
    assert [s["peak"] for s in peaks["SMAC"]["seeds"]] == pytest.approx(smac)
    assert [s["final"] for s in peaks["SMAC"]["seeds"]] == pytest.approx(smac)
    assert peaks["SMAC"]["drop"] == pytest.approx(0, abs=1e-9)
    d.headline = []
    v = {c["id"]: c["verdict"] for c in report.evaluate_claims(d)}
    assert (
        v["halfcheetah-smac-3.4M"] == "beyond budget" and v["halfcheetah-smac-slower-2M"] == "beyond budget"
    )


def test_peaks_find_a_run_that_rose_and_fell():
    """report.peaks: the maximum of each finished seed's smoothed curve, the end step of its bin, the final."""
    up_down = np.array([0.0, 5.0, 9.0, 4.0, -1.0])  # 5 bins of 200k over 1M: peak 9 in bin 3 (ends at 600k)
    flat = np.array([1.0, 1.0, 1.0, 1.0, 2.0])
    cell = {"finished": [(1, -1.0, up_down), (2, 2.0, flat)], "diverged": [], "short": []}
    assert aggregate.peaks(cell, 1_000_000) == [(1, 9.0, 600_000, -1.0), (2, 2.0, 1_000_000, 2.0)]


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
    c = report.compute(
        str(logs), min_seeds=3, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=100
    )
    out = c["aggregates"]
    assert out["tasks"] == ["Acrobot"] and out["use"] == 3
    assert out["agg"]["sgd"]["Mean"][0] == pytest.approx(2 / 3, abs=1e-6)  # (1 + 0 + 1) / 3
    assert out["agg"]["smac"]["Mean"][0] == pytest.approx(1.0, abs=1e-6)
    row = next(r for r in c["rows"] if r["algo"] == "sgd")
    assert row["n"] == 2 and row["n_div"] == 1 and np.isnan(row["lo"])  # no CI below 3 finished seeds
    assert report.stage1_data(c)["aggregates"]["n_div"] == 1


def test_aggregates_prefer_more_tasks_over_more_seeds(tmp_path):
    logs = tmp_path / "logs"
    for task, seeds in (("Acrobot", 5), ("CartPole", 3)):
        best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
        for algo in hparams.PAPER_ALGOS:
            for seed in range(1, seeds + 1):
                write_log(logs, task, algo, seed, best)
    out = report.compute(
        str(logs), min_seeds=5, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=50
    )["aggregates"]
    assert out["use"] == 3 and out["tasks"] == ["Acrobot", "CartPole"]
    write_log(logs, "CartPole", "smac", 4, 0.0)  # still 3 for the other algorithms: nothing changes
    out = report.compute(
        str(logs), min_seeds=5, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=50
    )["aggregates"]
    assert out["use"] == 3
    (tmp_path / "only").mkdir()
    for algo in hparams.PAPER_ALGOS:
        for seed in range(1, 6):
            write_log(tmp_path / "only", "Acrobot", algo, seed, -100.0)
    out = report.compute(
        str(tmp_path / "only"),
        min_seeds=5,
        results_dir=str(tmp_path / "res2"),
        figures_dir=str(tmp_path / "fig"),
        reps=50,
    )["aggregates"]
    assert out["use"] == 5 and out["tasks"] == ["Acrobot"]


def test_plots_save_titles_lays_out_writes_and_closes(tmp_path):
    import matplotlib.image
    import matplotlib.pyplot as plt

    from benchmark import stats

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    path = str(tmp_path / "f.png")
    stats.save(fig, path, "title", dpi=50, rect=(0, 0, 1, 0.9), fontsize=7)
    assert matplotlib.image.imread(path).shape[:2] == (100, 150)  # 3 x 2 inches at 50 dpi
    assert fig._suptitle.get_text() == "title" and fig._suptitle.get_fontsize() == 7
    assert not plt.fignum_exists(fig.number)  # closed


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
    c = report.compute(
        str(logs), results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=50
    )
    data = report.stage1_data(c)
    assert data["seeds"] == [0, 5]  # CartPole AC-SGD: its only run is short
    assert data["runs"] == 8 and data["short"] == 1
    groups = [
        {"names": ["Acrobot", "CartPole"], "budget": 500_000},
        {"names": ["Pendulum"], "budget": 2_000_000},
        {"names": ["MuJoCo"], "budget": 1_000_000},
    ]
    assert data["budgets"] == groups == report.budget_groups()
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
    cell = report.cell_data(hopper)
    assert cell["compare"] == "not comparable" and cell["p"] is None and cell["inside"] is None
    assert cell["paper"] == list(hparams.paper_result("Hopper", "smac"))
    assert acrobot["comparable"] and acrobot["p_vs_paper"] < 0.05 and acrobot["inside"] == "paper above"
    cell = report.cell_data(acrobot)
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


def test_a_held_claim_resting_on_seeds_that_never_cross_says_so():
    # AC-CG "slower" than SMAC: its seed mean crosses in the last bin of a 1M run, 3 of its 5 seeds never do; every
    # SMAC seed crosses before every AC-CG seed, so SMAC is ahead, the never-crossing seeds said beside it
    claim = {
        "id": "swimmer-cg-2x",
        "task": "Swimmer",
        "kind": "slower",
        "algo": "cg",
        "ref": "smac",
        "per_seed": ([None, None, None, 900_000, 950_000], [170_000, 180_000, 180_000, 190_000, 210_000]),
        "steps": (1_000_000, 190_000),
        "reach": 1_000_000,
        "other": None,
    }
    none = report.Data(runs=[], headline=[], final={}, diag={})
    reading = report.held_reading(claim, none)
    assert reading["ahead"] and reading["reason"] == "every SMAC seed first" and reading["slow"] == "AC-CG"
    assert reading["bins"] == [10_000] and reading["smac_seeds"] == [170_000, 210_000]
    assert reading["slow_seeds"] == [900_000, None]  # the last AC-CG seed never crosses
    assert reading["never"] == {"n": 3, "of": 5, "bin": 10_000, "step": 1_000_000, "end": True}
    every_seed = {**claim, "per_seed": ([800_000] * 5, claim["per_seed"][1])}
    assert report.held_reading(every_seed, none)["ahead"]
    assert report.held_reading(every_seed, none)["never"] is None
    # one AC-CG seed crossing before a SMAC seed: the order is not every seed's, SMAC is not shown ahead
    overlap = {**claim, "per_seed": ([None, None, None, 900_000, 200_000], claim["per_seed"][1])}
    assert not report.held_reading(overlap, none)["ahead"]
    assert report.held_reading(overlap, none)["reason"] == "seeds never cross"


def test_a_held_claim_that_our_rival_reaches_first_does_not_show_smac_ahead(tmp_path):
    # hopper-smac-3x: SMAC reaches the paper's AC-Adam final (303.8) at 1.80M of its 5M runs. Our AC-Adam's 1M runs
    # ramp 0 -> 600 (raw crossing at 506k, the EWM(0.1) of 10k bins lags ~90k behind); our SMAC's stay at 200.
    for seed in (1, 2, 3):
        write_log(tmp_path, "Hopper", "adam", seed, np.linspace(0.0, 600.0, 200))
        write_log(tmp_path, "Hopper", "smac", seed, 200.0)
    d = report.Data(runs=compact.discover_logs(str(tmp_path)), headline=[], final={}, diag={})
    claim = {
        "id": "hopper-smac-3x",
        "task": "Hopper",
        "kind": "reach_by",
        "algo": "smac",
        "steps": (1_800_000,),
    }
    reading = report.held_reading(claim, d)
    assert not reading["ahead"] and reading["reason"] == "our rival first" and reading["rival"] == "AC-Adam"
    assert reading["threshold"] == 303.8 and reading["step"] == 1_800_000 and reading["budget"] == 1_000_000
    assert reading["bins"] == [10_000, 50_000] and reading["smac_steps"] == [None, None]
    assert 506_000 < reading["rival_steps"][0] < 650_000
    # SMAC reaching the threshold before our rival does shows SMAC ahead: no caveat
    assert report.held_reading({**claim, "steps": (400_000,)}, d)["ahead"]
    # a rival that never reaches it in our runs: no caveat either
    for seed in (1, 2, 3):
        write_log(tmp_path, "Hopper", "adam", seed, 250.0)
    flat = report.Data(runs=compact.discover_logs(str(tmp_path)), headline=[], final={}, diag={})
    assert report.held_reading(claim, flat)["ahead"] and report.held_reading(claim, flat)["reason"] is None


def committed(name: str) -> dict:
    with open(os.path.join(REPO, "benchmark", "results", name), encoding="utf-8") as f:
        return json.load(f)


def committed_body(page: str, title: str) -> str:
    """A committed detail page without its title and 'Part of' lines."""
    with open(os.path.join(REPO, "benchmark", "report", page), encoding="utf-8") as f:
        head, _, part, _, body = f.read().split("\n", 4)
    assert head == f"# {title}" and part.startswith("Part of [the reproduction report]")
    return body


def test_the_committed_grid_and_claims_pages_are_their_templates_on_the_committed_json():
    from benchmark import pages

    title = "The stage-1 grid: every cell, aggregates, orderings, SMAC vs SGD with step η/λ"
    assert committed_body("grid.md", title) == pages.render("grid.md.j2", committed("grid.json"))
    title = "The paper's timestep claims, claim by claim, and the 5M block"
    assert committed_body("claims.md", title) == pages.render("claims.md.j2", committed("claims.json"))


@pytest.fixture(scope="module")
def committed_data(tmp_path_factory):
    """report.Data of the committed logs as write_report builds it (the stage-1 CSVs into a scratch directory),
    with the claims evaluated."""
    from benchmark import prereg

    d = report.load(results_dir=str(tmp_path_factory.mktemp("stage1")))
    d.claims = report.evaluate_claims(d, prereg.analyze_5M(prereg.load_5M())["claims"])
    return d


def test_the_committed_claims_json_is_the_data_of_the_committed_logs(committed_data):
    data = committed("claims.json")
    assert data == pages.committed(
        report.claims_data(committed_data, aggregate.stage1_logs()), None, report.PAGE_DIGITS
    )
    claims = data["claims"]
    # issue 37: the claims that needed 5M are judged on the 5M runs (or wait for them), never "beyond budget"
    assert len(claims) == 22 and "beyond budget" not in [c["final"] for c in claims]
    words = [c[k] for c in claims for k in ("verdict", "strict", "final") if c[k] is not None]
    words += [
        o[k] for o in (c["other"] for c in claims if c["other"]) for k in ("verdict", "strict", "cause")
    ]
    assert set(words) - {None} <= set(report.CLAIMS_VOCAB)
    assert data["n_5M"] == sum(c["at_5M"] for c in claims) == 6
    assert data["runs"] == 270 and data["headline_runs"] == 10
    for c in (
        claims
    ):  # the stricter name only where it differs; the cause only where the other span's verdict does
        assert c["strict"] != c["verdict"]
        if c["other"] is not None:
            assert (c["other"]["cause"] is None) == (c["other"]["verdict"] == c["verdict"]), c
            assert not c["at_5M"]
    # the verdict counts the same claims: the finals, and the verdicts under the rules fixed before the runs
    rows = {r["id"]: r for r in committed_verdict()["rows"]}
    finals = [report.CLAIM_WORD[c["final"]] for c in claims]
    assert rows["claims"]["answer"] == report.tally(finals)
    pre_run = [report.CLAIM_WORD[c["final"] if c["at_5M"] else c["verdict"]] for c in claims]
    assert rows["claims"]["numbers"]["pre_run"] == report.tally(pre_run)
    # the 5M block: SMAC - AC-CG is the difference of the two cells' means, over 5 seeds each
    h = data["headline"]
    cells = {r["algo"]: r["cell"] for r in h["rows"]}
    (gap,) = h["gaps"]
    assert gap["diff"] == pytest.approx(cells["SMAC"]["mean"] - cells["AC-CG"]["mean"], rel=1e-6)
    assert gap["n"] == [cells["SMAC"]["n"], cells["AC-CG"]["n"]] == [5, 5]
    for p in h["peaks"]:
        drops = [s["peak"] - s["final"] for s in p["seeds"]]
        assert p["drop"] == pytest.approx(np.mean(drops), rel=1e-6) and min(drops) >= 0


def test_the_committed_grid_json_is_the_data_of_the_committed_logs(committed_data):
    """The cells, orderings and diagnostics recomputed from the committed logs; the aggregates (a 2000-resample
    bootstrap) against the committed stage1/aggregates.csv and improvement.csv; every cell against its per-seed
    finals in the committed stage1/cells.csv, recomputed with numpy / scipy."""
    d = committed_data
    data = committed("grid.json")
    cells = aggregate.load_cells(d.runs)
    c = {"cells": cells, "rows": aggregate.cell_rows(cells), "min_seeds": 5, "reps": 2000, "aggregates": None}
    fresh = pages.committed(report.grid_data(d, c), None, report.PAGE_DIGITS)
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
        assert values[(r["algo"], r["metric"])] == pytest.approx(point, rel=1e-5, abs=1e-6)
    imp = {label[r["algo"]]: r["p"] for r in agg["improvement"]}
    for r in stats.read_csv(os.path.join(stage1, "improvement.csv")):
        assert imp[r["y"]] == pytest.approx([float(r[k]) for k in ("P(x>y)", "lo", "hi")], abs=5e-5)
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


def committed_verdict() -> dict:
    with open(report.VERDICT_JSON, encoding="utf-8") as f:
        return json.load(f)


def test_readme_results_block_is_the_rendering_of_the_committed_verdict():
    text = open(report.README, encoding="utf-8").read()
    begin, end = report.README_MARKERS
    block = text.split(begin, 1)[1].split(end, 1)[0]
    assert block == "\n" + report.render_verdict(committed_verdict(), base="benchmark/")
    path = os.path.join(os.path.dirname(report.README), "benchmark", "REPORT.md")
    assert report.render_verdict(committed_verdict()) in open(path, encoding="utf-8").read()
    assert os.path.getsize(path) <= 15_000


def answers(data: dict) -> list[str]:
    """Every answer word of a verdict: the rows' answers, their tasks' answers and notes, the readings' reasons."""
    out = []

    def walk(x, key=None):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            if key in ("answer", "pre_run", "at_5M") and x and isinstance(x[0], list):
                out.extend(w for w, _ in x)
            elif key == "notes":
                out.extend(x)
            else:
                for v in x:
                    walk(v)
        elif key in ("answer", "reach_answer") and isinstance(x, str):
            out.append(x)

    walk(data)
    return out


def test_the_committed_verdict_speaks_only_the_vocabulary_and_counts_what_it_lists():
    data = committed_verdict()
    words = answers(data)
    assert words and set(words) <= set(report.VOCAB), set(words) - set(report.VOCAB)
    rows = {r["id"]: r for r in data["rows"]}
    assert list(rows) == ["claims", "table", "headline", "sgd_stage1", "sgd_5M", "rank1", "ell"]
    claims = rows["claims"]
    assert sum(n for _, n in claims["answer"]) == sum(n for _, n in claims["numbers"]["pre_run"]) == 22
    assert sum(n for _, n in claims["numbers"]["at_5M"]) == claims["numbers"]["n_5M"] == 6
    table = rows["table"]["numbers"]
    assert table["cells"] == table["classic"]["cells"] + table["mujoco_5M"]["cells"] == 25
    assert rows["table"]["answer"] == [
        ["different (Welch)", table["classic"]["differ"] + table["mujoco_5M"]["differ"]]
    ]
    for s in table["smac_5M"]:  # each 5M SMAC cell on its side of the paper's
        side = {"below the paper's": s["mean"] < s["paper"], "above the paper's": s["mean"] > s["paper"]}
        assert side.get(s["answer"], s["p"] >= 0.05), s
    for key in ("sgd_stage1", "sgd_5M", "rank1", "ell"):  # each count is its tasks' answers counted
        r = rows[key]
        tasks = r["numbers"]["tasks"]
        listed = (
            [w for w, ts in tasks.items() for _ in ts]
            if isinstance(tasks, dict)
            else [t["answer"] for t in tasks]
        )
        assert r["answer"] == report.tally(listed) and r["of"] == len(listed), key
    for t in rows["sgd_5M"]["numbers"]["tasks"] + rows["rank1"]["numbers"]["tasks"]:
        inside = -t["reach_margin"] < t["ci"][0] and t["ci"][1] < t["reach_margin"]
        assert t["reach_answer"] == ("secondary passes" if inside else "secondary fails"), t
        inside = -report.EQUIV_MARGIN < t["ci"][0] and t["ci"][1] < report.EQUIV_MARGIN
        assert (t["answer"] == report.EQUIVALENT) == inside, t
    slope = rows["rank1"]["numbers"]["slope"]
    assert slope["span"] == pytest.approx([slope["decades"] * x for x in slope["ci"]], rel=1e-4)
    held = data["points"]["held"]
    assert len(held["ahead"]) + len(held["not_ahead"]) == held["n"] == dict(claims["answer"])["held"]


def test_the_committed_block_c_verdicts_are_mujoco_5M_pages():
    root = os.path.dirname(os.path.dirname(__file__))
    block = open(os.path.join(root, "benchmark", "report", "mujoco_5M.md"), encoding="utf-8").read()
    lines = block.split("### Block C", 1)[1].split("### Block D", 1)[0].splitlines()
    cells = [r.split(" | ") for r in lines if r.startswith("| ") and r.split(" | ")[1].strip() == "5"]
    page = {c[0].strip("| "): c[5].startswith("equivalent at ±0.1") for c in cells}
    rows = {r["id"]: r for r in committed_verdict()["rows"]}
    ours = {t["task"]: t["answer"] == report.EQUIVALENT for t in rows["sgd_5M"]["numbers"]["tasks"]}
    assert ours == page


def test_verdict_words_by_hand():
    assert report.tally(["not held", "held", "not held", report.NOT_SHOWN]) == [
        ["held", 1],
        ["not held", 2],
        [report.NOT_SHOWN, 1],
    ]
    r = {"equivalent": False, "p_holm": 0.01}
    assert report.block_c_word(r) == report.DIFFERENT
    assert report.block_c_word({**r, "p_holm": 0.2}) == report.NOT_SHOWN
    assert report.block_c_word({**r, "p_holm": float("nan")}) == report.NOT_SHOWN
    assert report.block_c_word({**r, "equivalent": True}) == report.EQUIVALENT == "equivalent at ±0.1"
    assert pages.committed({"a": (1.23456789, float("nan")), "b": np.float64(2.0), "c": np.bool_(True)}) == {
        "a": [1.23457, None],
        "b": 2.0,
        "c": True,
    }


def test_the_orderings_by_hand():
    """Acrobot with three of the five paper algorithms run: the paper orders AC-SGD (-86.2) > AC-Adam (-88.4) >
    SMAC (-94.1); ours AC-SGD -70 > SMAC -80 > AC-Adam -85: the same best, 2 of the 3 pairs in the paper's order."""
    final = {("Acrobot", a): {"final_mean": str(m)} for a, m in (("smac", -80), ("sgd", -70), ("adam", -85))}
    d = report.Data(runs=[], headline=[], final=final, diag={})
    rows = {r["task"]: r for r in report.ordering_data(d)}
    acrobot = rows["Acrobot"]
    assert acrobot["ours"] == ["AC-SGD", "SMAC", "AC-Adam"]
    assert acrobot["paper"] == ["AC-SGD", "AC-Adam", "AC-CG", "SMAC", "AC-KFAC"]
    assert acrobot["same_best"] == "yes" and acrobot["only"] == 3 and acrobot["of"] == 5
    assert acrobot["pairs"] == [2, 3]
    cartpole = rows["CartPole"]  # nothing run: no best, no pair
    assert cartpole["ours"] == [] and cartpole["same_best"] is None and cartpole["only"] is None
    assert cartpole["pairs"] is None


def test_the_committed_grid_speaks_only_its_vocabulary():
    grid, claims = committed("grid.json"), committed("claims.json")
    cells = [c for r in grid["rows"] for c in r["cells"]] + [r["cell"] for r in claims["headline"]["rows"]]
    words = [c[k] for c in cells for k in ("compare", "inside")] + [r["same_best"] for r in grid["ordering"]]
    assert set(words) - {None} <= set(report.GRID_VOCAB)
    # the paper algorithms: classic control compared, MuJoCo at 1M beside the paper's 5M; the 5M block compared
    compare = [c["compare"] for r in grid["rows"] for c in r["cells"][:5]]
    assert compare.count("compared") == 3 * 5 and compare.count("not comparable") == 6 * 5
    assert [r["cell"]["compare"] for r in claims["headline"]["rows"]] == ["compared", "compared"]
