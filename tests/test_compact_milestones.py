"""Compact run logs (pack/load, the sweep skipping committed runs) and the milestone evaluator on
hand-made curves whose crossing steps are computed by hand."""

import csv
import math
import os

import numpy as np
from helpers import stepped_run

from benchmark import aggregate, compact, sweep, trainer
from benchmark.studies import claims as claims_study

BUDGET = 100_000


def test_first_crossing_by_hand():
    # bins of 1000 steps; a jump after bin 49 -> EWM(0.1) s_k = 1000 (1 - 0.9^(k-49)) for k >= 50;
    # >= 750 first when 0.9^m <= 0.25, m = 14 (0.9^13 = 0.254, 0.9^14 = 0.229): bin 63, step 64k
    run = stepped_run("CartPole", "smac", 1, 50_000)
    _, curves, _ = aggregate.cell_curves([run])[("CartPole", "smac")]
    assert aggregate.first_crossing(curves[0], 750, BUDGET) == 64_000
    assert aggregate.first_crossing(curves[0], 1001, BUDGET) is None
    assert math.isclose(curves[0][63], 1000 * (1 - 0.9**14))


CLAIMS = [
    {
        "id": "reach",
        "task": "CartPole",
        "kind": "reach_by",
        "algo": "smac",
        "threshold": 750,
        "step": 60_000,
        "needs": 60_000,
        "text": "smac reaches 750 by 60k",
    },
    {
        "id": "reach-late",
        "task": "CartPole",
        "kind": "reach_by",
        "algo": "smac",
        "threshold": 750,
        "step": 40_000,
        "needs": 40_000,
        "text": "smac reaches 750 by 40k",
    },
    claims_study._slower("cg-slower", "CartPole", "cg", 750, 1.1, 60_000, "cg slower"),
    claims_study._slower("sgd-slower", "CartPole", "sgd", 750, 1.6, 60_000, "sgd slower"),
    {
        "id": "kfac-low",
        "task": "CartPole",
        "kind": "never_above",
        "algo": "kfac",
        "threshold": 400,
        "needs": 90_000,
        "text": "kfac never above 400",
    },
    {
        "id": "far",
        "task": "CartPole",
        "kind": "reach_by",
        "algo": "smac",
        "threshold": 750,
        "step": 1_500_000,
        "needs": 1_500_000,
        "text": "beyond",
    },
    {
        "id": "missing",
        "task": "Hopper",
        "kind": "reach_by",
        "algo": "smac",
        "threshold": 1,
        "step": 1,
        "needs": 1,
        "text": "no runs",
    },
]


def test_claim_verdicts_by_hand():
    runs = [stepped_run("CartPole", "smac", s, 50_000) for s in (1, 2)]
    runs += [stepped_run("CartPole", "cg", 1, 60_000)]  # crosses at 74k: slower than smac -> held
    runs += [stepped_run("CartPole", "sgd", 1, 40_000)]  # crosses at 54k: faster -> "sgd slower" not held
    runs += [stepped_run("CartPole", "kfac", 1, 0, high=300.0)]  # constant 300: never above 400 -> held
    rows = {r["id"]: r for r in claims_study.evaluate(runs, claims=CLAIMS)}
    assert rows["reach"]["verdict"] == "held" and "64k" in rows["reach"]["measured"]
    assert rows["reach-late"]["verdict"] == "not held"  # 64k > 1.25 x 40k
    assert rows["cg-slower"]["verdict"] == "held" and "1.16x" in rows["cg-slower"]["measured"]
    assert rows["sgd-slower"]["verdict"] == "not held" and "0.84x" in rows["sgd-slower"]["measured"]
    assert rows["kfac-low"]["verdict"] == "held"
    assert rows["far"]["verdict"] == "beyond budget" and rows["missing"]["verdict"] == "no runs"
    assert rows["reach"]["seeds"] == "64k, 64k"


def test_crossing_step_moves_with_the_bin_width():
    """A jump at 20k in a 100k run; EWM(0.1) needs 14 bins to pass 750 after a jump (0.9^14 < 0.25 < 0.9^13):
    1k bins (over the budget) -> bin 19 + 14 = 33 ends at 34k; 2k bins (100 bins over a 200k window, the
    last 50 empty) -> bin 9 + 14 = 23 ends at 48k; 500-step bins (over the first 50k) -> bin 39 + 14 = 53
    ends at 27k."""
    runs = [stepped_run("CartPole", "smac", 1, 20_000)]
    for windows, step in ((None, 34_000), ({"CartPole": 200_000}, 48_000), ({"CartPole": 50_000}, 27_000)):
        span, curves, reach = aggregate.cell_curves(runs, windows)[("CartPole", "smac")]
        assert aggregate.first_crossing(curves[0], 750, span) == step
        assert reach == min(BUDGET, span)
    reach = {
        "id": "r",
        "task": "CartPole",
        "kind": "reach_by",
        "algo": "smac",
        "threshold": 750,
        "step": 30_000,
        "needs": 30_000,
        "text": "r",
    }
    late = {**reach, "id": "late", "step": 120_000, "needs": 120_000}
    v = {r["id"]: r for r in claims_study.evaluate(runs, claims=[reach, late], windows={"CartPole": 50_000})}
    assert v["r"]["verdict"] == "held" and "27k" in v["r"]["measured"]  # 27k <= 1.25 x 30k
    assert v["late"]["verdict"] == "beyond budget"  # the window covers 50k only
    v = {r["id"]: r for r in claims_study.evaluate(runs, claims=[reach])}
    assert v["r"]["verdict"] == "held"  # 34k <= 37.5k
    v = {r["id"]: r for r in claims_study.evaluate(runs, claims=[reach], windows={"CartPole": 200_000})}
    assert v["r"]["verdict"] == "not held" and "48k" in v["r"]["measured"]


def test_claims_without_a_paper_step_are_judged_once_either_algorithm_crosses():
    """needs None ("twice as fast", no step in the paper): beyond budget only while neither crosses."""
    claim = claims_study._slower("x", "CartPole", "cg", 750, 2.0, None, "cg twice as slow")
    assert claim["needs"] is None
    flat = [stepped_run("CartPole", a, 1, BUDGET) for a in ("smac", "cg")]  # neither ever jumps
    row = claims_study.evaluate(flat, claims=[claim])[0]
    # the verdict word, and the threshold named
    assert row["verdict"] == "beyond budget" and "750" in row["measured"]
    runs = [stepped_run("CartPole", "smac", 1, 20_000), stepped_run("CartPole", "cg", 1, BUDGET)]
    row = claims_study.evaluate(runs, claims=[claim])[0]
    assert row["verdict"] == "held" and row["steps"] == (None, 34_000)  # cg never, smac at 34k
    runs = [stepped_run("CartPole", "smac", 1, BUDGET), stepped_run("CartPole", "cg", 1, 20_000)]
    assert claims_study.evaluate(runs, claims=[claim])[0]["verdict"] == "not held"
    row = claims_study.evaluate(flat, claims=[CLAIMS[0]])[0]
    assert row["verdict"] == "not held" and row["measured"] == "smac does not reach 750 (paper 60k)"


def test_pack_load_round_trip_and_sweep_skips_committed_runs(tmp_path):
    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "300",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run_dir = os.path.join(tmp_path / "runs", os.listdir(tmp_path / "runs")[0])
    logs = tmp_path / "logs"
    path = compact.pack(
        run_dir, compact.log_path(str(logs), "CartPole", "smac", 1), "CartPole", "smac", 1, 300
    )
    rec = compact.load(path)
    with open(os.path.join(run_dir, "episodes.csv")) as f:
        rows = list(csv.DictReader(f))
    assert rec["status"] == "finished" and rec["last_step"] == 300 and rec["job_budget"] == 300
    assert np.array_equal(rec["episodes"]["global_step"], [float(r["global_step"]) for r in rows])
    assert np.allclose(
        rec["episodes"]["episodic_return"], [float(r["episodic_return"]) for r in rows], rtol=1e-6
    )
    assert rec["updates"]["update"].tolist() == [1, 2, 3] and rec["cfg"]["env_id"] == "CartPole-v1"
    # a committed finished log counts as done although the raw run directory is absent ...
    job = sweep.make_jobs(
        ["CartPole"], ["smac"], [1], {"CartPole": 300}, str(tmp_path / "grid"), logs_dir=str(logs)
    )[0]
    assert sweep.inspect_job(job) == ("done", None)
    # ... but not for a larger budget
    job = sweep.make_jobs(
        ["CartPole"], ["smac"], [1], {"CartPole": 600}, str(tmp_path / "grid"), logs_dir=str(logs)
    )[0]
    assert sweep.inspect_job(job)[0] == "fresh"
    assert len(compact.discover_logs(str(logs))) == 1


def test_sweep_packs_a_finished_run(tmp_path):
    logs = tmp_path / "logs"
    assert (
        sweep.main(
            [
                "--tasks",
                "CartPole",
                "--algos",
                "sgd",
                "--seeds",
                "1",
                "--budget",
                "400",
                "--num-steps",
                "200",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--logs-dir",
                str(logs),
                "--workers",
                "1",
                "--extra-flags",
                "--num-minibatches 2",
                "--allow-dirty",  # tests run on a working tree with uncommitted edits
            ]
        )
        == 0
    )
    rec = compact.load(compact.log_path(str(logs), "CartPole", "sgd", 1))
    assert rec["status"] == "finished" and rec["cfg"]["num_minibatches"] == 2 and rec["job_budget"] == 400


def test_strict_verdict_names_by_hand():
    """The stricter names for a slower claim that holds on its direction: held only when the ratio is within 1.25x
    of the paper's and the per-seed crossings separate; 'baseline never reaches it' when it never crosses."""
    smac = [stepped_run("CartPole", "smac", s, 50_000) for s in (1, 2)]  # both seeds cross at 64k
    late = [
        stepped_run("CartPole", "cg", s, j) for s, j in ((1, 60_000), (2, 62_000))
    ]  # 74k, 76k: 1.16x-1.19x
    mixed = [
        stepped_run("CartPole", "sgd", s, j) for s, j in ((1, 60_000), (2, 45_000))
    ]  # 74k and 59k: overlap
    never = [stepped_run("CartPole", "adam", 1, 10**9)]
    claims = [
        claims_study._slower("size-ok", "CartPole", "cg", 750, 1.15, 60_000, "cg 15% more"),
        claims_study._slower("size-off", "CartPole", "cg", 750, 2.0, 40_000, "cg 100% more"),
        claims_study._slower("overlap", "CartPole", "sgd", 750, 1.05, 60_000, "sgd 5% more"),
        claims_study._slower("never", "CartPole", "adam", 750, 1.3, 60_000, "adam 30% more"),
    ]
    rows = {r["id"]: r for r in claims_study.evaluate(smac + late + mixed + never, claims=claims)}
    assert rows["size-ok"]["verdict"] == "held" and rows["size-ok"]["strict"] == "held"
    assert rows["size-off"]["strict"] == "direction only"  # 1.17x against the paper's 2.0x
    assert (
        rows["overlap"]["verdict"] == "held" and rows["overlap"]["strict"] == "direction only"
    )  # seeds overlap
    assert rows["never"]["verdict"] == "held" and rows["never"]["strict"] == "baseline never reaches it"
    # the final verdict is the less favourable reading; a reading that cannot judge does not count
    row = {**rows["size-ok"], "other": {**rows["size-off"]}}
    assert claims_study.combined(row) == "direction only"
    assert claims_study.combined({**rows["size-ok"], "other": {"verdict": "beyond budget"}}) == "held"


def test_peaks_find_a_run_that_rose_and_fell():
    """aggregate.peaks: the maximum of each finished seed's smoothed curve, the end step of its bin, the final."""
    up_down = np.array([0.0, 5.0, 9.0, 4.0, -1.0])  # 5 bins of 200k over 1M: peak 9 in bin 3 (ends at 600k)
    flat = np.array([1.0, 1.0, 1.0, 1.0, 2.0])
    cell = {"finished": [(1, -1.0, up_down), (2, 2.0, flat)], "diverged": [], "short": []}
    assert aggregate.peaks(cell, 1_000_000) == [(1, 9.0, 600_000, -1.0), (2, 2.0, 1_000_000, 2.0)]
