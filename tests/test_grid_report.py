"""The stage-1 grid report on hand-made compact logs with known answers."""

import gzip
import json
import os

import numpy as np
import pytest

from benchmark import aggregate, compact, hparams, report


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
    L = report.section(
        str(logs), min_seeds=3, results_dir=str(tmp_path / "res"), figures_dir=str(tmp_path / "fig"), reps=200
    )
    text = "\n".join(L)
    cells = {(r["task"], r["algo"]): r for r in aggregate.cell_rows(aggregate.load_cells(str(logs)))}
    smac = cells[("CartPole", "smac")]
    assert (
        smac["n"] == 3 and smac["mean"] == pytest.approx(989.5) and smac["inside"] == "paper below"
    )  # CI ~[989.499, 989.501], paper 973.4
    assert cells[("CartPole", "sgd")]["n_div"] == 1 and "(n=3, +1 diverged)" in text
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
    assert "2 task(s) (Acrobot, CartPole) with 3 seed(s)" in text and "partial" in text


def test_grid_section_without_runs(tmp_path):
    assert "No stage-1 run has finished yet" in "\n".join(report.section(str(tmp_path / "none")))


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
    text = "\n".join(report.headline_section(d))
    assert "| HalfCheetah | SMAC | **2115 ± 7.1** – (n=2) / 2936 ± 946; Welch p 0.12 |" in text
    assert "SMAC − AC-CG at 5M: 2000 (Welch p 1.2e-05, seeds 2 / 2); the paper's table: 1170." in text
    assert "bins of 50k steps" in text and "4 of 10 runs in" in text
    # steady rise: each seed's peak is its last bin, so peak = final
    assert (
        "- HalfCheetah SMAC: seed 1 2110 (5M) → 2110; seed 2 2120 (5M) → 2120 (mean drop from peak 0)" in text
    )
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
    assert "1 diverged run(s) count as the random policy" in "\n".join(report.lines(c))


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
    head = report.lines(c)[1]
    assert "0–5 seeds per cell (n in each cell)" in head  # CartPole AC-SGD: its only run is short
    assert "8 of 9 × 6 × 5 = 270 runs (and 1 more that stopped short of the budget" in head
    assert f"budgets: {report.budgets_text()} steps" in head and "MuJoCo" in report.budgets_text()


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
    assert "not comparable" in report.cell_text(hopper) and "Welch" not in report.cell_text(hopper)
    assert acrobot["comparable"] and acrobot["p_vs_paper"] < 0.05 and acrobot["inside"] == "paper above"
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


def test_the_committed_claims_table_has_no_claim_beyond_budget():
    # issue 37: the claims that needed 5M are judged on the 5M runs (or wait for them), never "beyond budget"
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "benchmark", "report", "claims.md")
    rows = [line for line in open(path, encoding="utf-8") if line.startswith("| ") and "|---" not in line]
    finals = [row.rstrip().rstrip("|").rsplit("|", 1)[-1].strip() for row in rows[1:23]]
    assert len(finals) == 22 and "**beyond budget**" not in finals, finals


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
    assert report.plain({"a": (1.23456789, float("nan")), "b": np.float64(2.0), "c": np.bool_(True)}) == {
        "a": [1.23457, None],
        "b": 2.0,
        "c": True,
    }
