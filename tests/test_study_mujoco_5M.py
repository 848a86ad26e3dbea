"""MuJoCo at 5M (benchmark/studies/mujoco_5M.py, benchmark/preregistration_5M.toml): its job list, its four blocks
on hand-made logs and on the committed ones, its page and JSON, its verdict rows and points."""

import gzip
import json
import math
import os

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import aggregate, compact, hparams, pages, sweep
from benchmark import verdict as vd
from benchmark.studies import REPO, Where, mujoco_5M
from benchmark.studies import claims as claims_study


def test_the_jobs_follow_the_toml_execution_order(tmp_path):
    reg = mujoco_5M.load_5M()
    args = sweep.build_parser().parse_args(["--study", "mujoco-5M"])
    jobs = mujoco_5M.jobs(args)
    assert len(jobs) == 70 and [j.seed for j in jobs[:5]] == [1, 2, 3, 4, 5]
    assert list(dict.fromkeys(f"{j.task}/{j.algo}" for j in jobs)) == reg["execution"]["order"]
    assert all(j.budget == 5_000_000 and j.extra_flags == hparams.reading_flags("norm") for j in jobs)
    assert {j.logs_dir for j in jobs} == {os.path.join(REPO, reg["common"]["logs"])}
    argv = ["--study", "mujoco-5M", "--runs-dir", str(tmp_path / "r"), "--logs-dir", str(tmp_path / "l")]
    jobs = mujoco_5M.jobs(sweep.build_parser().parse_args(argv))
    assert {j.logs_dir for j in jobs} == {str(tmp_path / "l")}
    assert all(j.seed_dir.startswith(str(tmp_path / "r")) for j in jobs)


def test_the_5M_diagnostics_split_a_run_into_its_first_and_last_fifth():
    """Block D on a hand example: ell_sq 1 in the first fifth, 9 in the last, lambda 0.5."""
    steps = np.arange(1, 11) * 500  # ten updates over a 5000-step budget
    ell_sq = np.array([1.0, 1.0, 4, 4, 4, 4, 4, 4, 9.0, 9.0])
    cos = np.array([0.9, 0.8, 1, 1, 1, 1, 1, 1, 0.5, 0.7])
    out = mujoco_5M.fifths(
        {"updates": {"global_step": steps, "ell_sq": ell_sq, "cos_g_step": cos}}, 0.5, 5000
    )
    assert out["first"] == pytest.approx({"ell_over_lambda": 2.0, "removed": 1.0 / 1.5, "cos": 0.85})
    assert out["last"]["ell_over_lambda"] == 18.0 and out["last"]["removed"] == 9.0 / 9.5
    assert out["last"]["cos"] == 0.6 and out["min_cos"] == 0.5


@pytest.fixture(scope="module")
def committed(committed_done):
    """The study on the committed logs: (the toml, analyze_5M's result)."""
    return committed_done["mujoco_5M"]["reg"], committed_done["mujoco_5M"]["res5"]


def test_the_5M_study_judges_a_cell_only_with_its_five_seeds(committed):
    _, res = committed
    assert res["runs_expected"] == 80  # the 70 new runs and HalfCheetah's 10 of the headline block
    claims = {c["id"]: c for c in claims_study.CLAIMS}
    for row in res["claims"]:
        c = claims[row["id"]]
        needs = [(c["task"], c["algo"])] + ([(c["task"], c["ref"])] if "ref" in c else [])
        incomplete = any(len(res["done"].get(cell, [])) < 5 for cell in needs)
        assert (row["verdict"] == "waiting") == incomplete, row


def write_5M_log(root, task, algo, seed, value, updates=None, logs=None):
    """A finished 5M compact log whose episodes return value(step) (a number: the same at every step), under logs
    (default: the 5M study's)."""
    budget = 5_000_000
    steps = np.linspace(budget / 400, budget, 400)
    returns = [float(value(s)) if callable(value) else float(value) for s in steps]
    lengths = np.where(steps > 4_500_000, 500, 100).tolist()  # episodes of 500 steps in the last tenth
    rec = {
        "format": 1,
        "task": task,
        "algo": algo,
        "seed": seed,
        "budget": budget,
        "status": "finished",
        "global_step": budget,
        "args": {},
        "episodes": {
            "global_step": steps.tolist(),
            "episodic_return": returns,
            "episodic_length": lengths,
        },
        "updates": updates or {c: [] for c in compact.UPDATE_COLS},
    }
    logs = logs or mujoco_5M.load_5M()["common"]["logs"]
    path = compact.log_path(os.path.join(root, logs), task, algo, seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(rec, f)


def pusher_sgd_ramp(step: float) -> float:
    """-1000 at the start, -300 at 5M: passes -441 at about 4M."""
    return -1000.0 + 700.0 * step / 5e6


OFFSETS = [0.01, -0.01, 0.02, 0.0, -0.02]  # paired differences d_s (normalized) of SMAC - sgd-matched


def smac_updates(task: str, seed: int) -> dict:
    """SMAC's updates: ||l||^2 / lambda 1 in the first fifth, 10^(1 + 0.01 seed) in the last; cos 0.95 there."""
    damping = hparams.settings(task, "smac")["damping"]
    steps = np.linspace(50_000, 5_000_000, 100)
    ratio = 10 ** (1 + 0.01 * seed)
    ell = np.where(steps <= 1e6, 1.0, np.where(steps > 4e6, ratio, 2.0)) * damping
    updates = {c: [None] * len(steps) for c in compact.UPDATE_COLS}  # what a log holds: every column, whole
    updates.update(
        global_step=steps.tolist(),
        ell_sq=ell.tolist(),
        cos_g_step=np.where(steps > 4e6, 0.95, 0.99).tolist(),
    )
    return updates


def write_hand_logs(root: str, reg: dict) -> None:
    """Every cell's five seeds: SMAC at the paper's SMAC final (every SMAC claim threshold passed in the first bin);
    sgd-matched OFFSETS below it (Pusher 0.5 more), HalfCheetah's rerun pairing by its first episode; AC-SGD never
    reaching 3105 on Humanoid and ramping on Pusher; AC-CG never passing -441 on Pusher."""
    rand = compact.read_random_scores()
    level = {"sgd": {"Humanoid": 1000.0}, "cg": {"HalfCheetah": 1766.0, "Pusher": -1000.0}}
    for task, algo in mujoco_5M.expected_5M(reg):
        best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
        smac = hparams.paper_result(task, "smac")[0]
        for seed in range(1, 6):
            updates = None
            if algo == "smac":
                updates = smac_updates(task, seed)
                value = smac + (seed - 3)
            elif algo == "sgd-matched":
                shift = (0.5 if task == "Pusher" else 0.0) + OFFSETS[seed - 1]
                value = smac + (seed - 3) - shift * (best - rand[task])
                if task == "HalfCheetah":  # amendment 1: the rerun block C pairs, its first episode SMAC's
                    rerun = lambda s, v=value, first=smac + (seed - 3): first if s <= 5e6 / 400 else v  # noqa: E731
                    logs = reg["amendments"]["halfcheetah_pairing"]["logs"]
                    write_5M_log(root, task, algo, seed, rerun, logs=logs)
            elif task == "Pusher" and algo == "sgd":
                value = pusher_sgd_ramp
            else:
                value = level[algo][task] + (seed - 3)
            write_5M_log(root, task, algo, seed, value, updates)


@pytest.fixture(scope="module")
def hand(tmp_path_factory):
    """The study on the hand-made logs of write_hand_logs: (the toml, analyze_5M's result)."""
    root = str(tmp_path_factory.mktemp("hand"))
    reg = mujoco_5M.load_5M()
    write_hand_logs(root, reg)
    return reg, mujoco_5M.analyze_5M(reg, root=root)


HAND_VERDICTS = {
    "hopper-smac-3x": "held",
    "humanoid-smac-adam-59pct": "held",
    "humanoid-smac-cg-59pct": "held",
    "humanoid-sgd-faster": "not held",
    "pusher-cg-21": "baseline never reaches it",
    "pusher-sgd-9": "direction only",
}


def test_the_5M_study_applies_its_rules_to_complete_cells_by_hand(hand):
    reg, res = hand
    assert res["runs_in"] == res["runs_expected"] == 80
    # Block A: SMAC passes every threshold in the first bin; AC-SGD never reaches 3105 on Humanoid; AC-CG never
    # passes -441 on Pusher; AC-SGD does, about 80x later than SMAC (the paper: 1.09x)
    assert {r["id"]: r.get("strict") or r["verdict"] for r in res["claims"]} == HAND_VERDICTS
    # Block B: the mean, the t-interval by hand (sd of (-2, -1, 0, 1, 2) = sqrt(2.5)), Welch from the summaries
    table = {(r["task"], r["algo"]): r for r in res["table"]}
    assert len(table) == 10
    hopper = table[("Hopper", "smac")]
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert hopper["mean"] == pytest.approx(331.2)
    assert hopper["ci"] == pytest.approx((331.2 - half, 331.2 + half))
    assert not hopper["differs"] and table[("Humanoid", "sgd")]["differs"]
    assert hopper["length"] == 500.0
    # Block C: d = OFFSETS (mean 0, sd sqrt(2.5e-4)): equivalent at 0.1; Pusher d = 0.5 + OFFSETS: different (Holm)
    eq = {r["task"]: r for r in res["equivalence"]}
    assert res["halfcheetah_pairing"]["paired_seeds"] == [1, 2, 3, 4, 5]
    assert set(eq) == set(reg["blocks"]["equivalence"]["tasks"])
    half = 2.131846786326649 * math.sqrt(2.5e-4) / math.sqrt(5)
    assert eq["Hopper"]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert eq["Hopper"]["ci"] == pytest.approx((-half, half), abs=1e-9)
    assert eq["Hopper"]["equivalent"] and vd.block_c_word(eq["Hopper"]) == vd.EQUIVALENT
    assert eq["Pusher"]["mean"] == pytest.approx(0.5) and vd.block_c_word(eq["Pusher"]) == vd.DIFFERENT
    p_pusher = sps.ttest_1samp(0.5 + np.array(OFFSETS), 0.0).pvalue
    assert eq["Pusher"]["p_holm"] == pytest.approx(6 * p_pusher)  # the smallest of six p-values, times six
    # the TOST p; d = OFFSETS on five tasks (to rounding): about the same p, the smallest x 6 by Holm, carried on
    se = math.sqrt(2.5e-4) / math.sqrt(5)
    p_tost = sps.t.sf(0.1 / se, 4)  # both one-sided tests at mean 0
    assert eq["Hopper"]["p_tost"] == pytest.approx(p_tost) and eq["Pusher"]["p_tost"] > 0.99
    assert eq["Hopper"]["p_tost_holm"] == pytest.approx(6 * p_tost, rel=1e-4)
    # Block D: ||l||^2 / lambda from 1 to 10^(1 + 0.01 s): log-ratio 1.03 on average, grows late in training
    diag = {r["task"]: r for r in res["diagnostics"]}
    assert len(diag) == 6 and diag["Hopper"]["verdict"] == "grows late in training"
    assert diag["Hopper"]["log_ratio"] == pytest.approx(1.03)
    assert diag["Hopper"]["runs"][0]["min_cos"] == pytest.approx(0.95)


def test_the_halfcheetah_arms_by_their_leading_episodes_and_both_block_c_rows_by_hand(hand):
    """Amendment 1 on the hand-made logs: the rerun logs SMAC's first episode, then the first sgd-matched arm's value,
    which that arm logs throughout (SMAC's own on seed 4, whose offset is 0); SMAC's first update comes at 50k steps,
    after four 12.5k-step episodes. The first arm pairs on seed 4 only, so its block C row is Welch's."""
    reg, res = hand
    pairing = res["halfcheetah_pairing"]
    shared = {r["seed"]: r for r in pairing["shared_episodes"]}
    assert [shared[s]["rerun_smac"] for s in range(1, 6)] == [1, 1, 1, 400, 1]
    assert [shared[s]["rerun_original"] for s in range(1, 6)] == [0, 0, 0, 400, 0]
    assert [shared[s]["original_smac"] for s in range(1, 6)] == [0, 0, 0, 400, 0]
    assert {shared[s]["rerun_stage1"] for s in range(1, 6)} == {None}  # no stage-1 logs under the hand root
    assert pairing["original_paired_seeds"] == [4] and pairing["episodes_before_update"] == [4]
    rand = compact.read_random_scores()["HalfCheetah"]
    best = max(hparams.paper_result("HalfCheetah", a)[0] for a in hparams.PAPER_ALGOS)
    smac = [
        (hparams.paper_result("HalfCheetah", "smac")[0] + s - 3 - rand) / (best - rand) for s in range(1, 6)
    ]
    first = [x - o for x, o in zip(smac, OFFSETS)]
    row = pairing["original_arm"]
    assert row["test"] == "Welch" and row["n"] == 5
    assert row["mean"] == pytest.approx(np.mean(smac) - np.mean(first))
    assert row["p"] == pytest.approx(sps.ttest_ind(smac, first, equal_var=False).pvalue)
    p_six = [row["p"] if r["task"] == "HalfCheetah" else r["p"] for r in res["equivalence"]]
    assert row["p_holm"] == pytest.approx(sorted(p_six)[-1])  # p 1 here: Holm leaves the largest as it is
    assert row["equivalent"]
    page = mujoco_5M.page_5M(reg, res)["pairing"]
    assert [(a["test"], a["answer"]) for a in page["arms"]] == [
        ("paired", "equivalent"),
        ("Welch", "equivalent"),
    ]
    assert page["arms"][0]["mean"] == next(
        r["mean"] for r in res["equivalence"] if r["task"] == "HalfCheetah"
    )
    assert page["shared_episodes"] == pairing["shared_episodes"] and not page["original_paired"]


def leading_alike(a: dict, b: dict) -> int:
    """The leading episodes two runs log alike, by numpy: the first index where return or length differ."""
    n = min(len(a["episodes"]["episodic_return"]), len(b["episodes"]["episodic_return"]))
    differ = np.flatnonzero(
        (np.asarray(a["episodes"]["episodic_return"][:n]) != np.asarray(b["episodes"]["episodic_return"][:n]))
        | (
            np.asarray(a["episodes"]["episodic_length"][:n])
            != np.asarray(b["episodes"]["episodic_length"][:n])
        )
    )
    return int(differ[0]) if differ.size else n


def test_the_committed_halfcheetah_arms_share_only_the_episode_before_the_first_update(committed):
    """On the committed logs: the rerun shares with the SMAC run its first episode, the one before the first update,
    and nothing more; the first sgd-matched runs share none with either; their block C row is Welch's."""
    reg, res = committed
    pairing = res["halfcheetah_pairing"]
    sc = aggregate.scores([os.path.join(REPO, reg["common"]["logs"])], 5_000_000)
    rr = aggregate.scores([os.path.join(REPO, reg["amendments"]["halfcheetah_pairing"]["logs"])], 5_000_000)
    s1 = aggregate.scores([aggregate.stage1_logs()])
    smac, first = sc[("HalfCheetah", "smac", "runs")], sc[("HalfCheetah", "sgd-matched", "runs")]
    rerun, stage1 = rr[("HalfCheetah", "sgd-matched", "runs")], s1[("HalfCheetah", "sgd-matched", "runs")]
    by_hand = [
        {
            "seed": s,
            "rerun_smac": leading_alike(rerun[s], smac[s]),
            "rerun_original": leading_alike(rerun[s], first[s]),
            "original_smac": leading_alike(first[s], smac[s]),
            "rerun_stage1": leading_alike(rerun[s], stage1[s]),
        }
        for s in range(1, 6)
    ]
    assert pairing["shared_episodes"] == by_hand
    assert [r["rerun_smac"] for r in by_hand] == [1] * 5 and pairing["episodes_before_update"] == [1]
    assert [r["rerun_original"] for r in by_hand] == [0] * 5 == [r["original_smac"] for r in by_hand]
    assert pairing["original_paired_seeds"] == []
    x = [sc[("HalfCheetah", "smac")][s] for s in range(1, 6)]
    y = [sc[("HalfCheetah", "sgd-matched")][s] for s in range(1, 6)]
    row = pairing["original_arm"]
    assert row["test"] == "Welch" and row["mean"] == pytest.approx(np.mean(x) - np.mean(y))
    assert row["p"] == pytest.approx(sps.ttest_ind(x, y, equal_var=False).pvalue)
    assert not row["equivalent"] and row["reach"] > reg["common"]["margin"]


def test_the_5M_page_data_on_the_hand_made_logs(hand):
    """The page's data: the same numbers, words of VOCAB_5M, medians [min, max] over the seeds by hand."""
    reg, res = hand
    eq = {r["task"]: r for r in res["equivalence"]}
    page = mujoco_5M.page_5M(reg, res)
    counts = (page["runs_in"], page["runs_expected"], page["after_rules"], page["before_rules"]["runs"])
    assert counts == (80, 80, 70, 10)
    assert page["before_rules"]["cells"] == ["HalfCheetah SMAC", "HalfCheetah AC-CG"]
    assert [c["n"] for c in page["done"]] == [5] * 16
    assert [r["answer"] for r in page["claims"]] == list(HAND_VERDICTS.values())
    rows = {r["task"]: r for r in page["block_c"]["rows"]}
    assert rows["Pusher"]["mean"] == pytest.approx(0.5) and rows["Pusher"]["n"] == 5
    assert rows["Pusher"]["answer"] == "different (Holm)" and rows["Hopper"]["answer"] == "equivalent"
    assert rows["Pusher"]["p_holm"] == eq["Pusher"]["p_holm"] and not page["block_c"]["holm_waits"]
    assert page["pairing"]["answer"] == "used" and page["pairing"]["paired_seeds"] == [1, 2, 3, 4, 5]
    hopper_d = next(r for r in page["diagnostics"] if r["task"] == "Hopper")
    assert hopper_d["first_ell_over_lambda"] == pytest.approx([1.0, 1.0, 1.0])
    assert hopper_d["last_ell_over_lambda"] == pytest.approx([10**1.03, 10**1.01, 10**1.05])
    assert hopper_d["min_cos"] == pytest.approx(0.95) and hopper_d["answer"] == "grows late in training"
    words = [r["answer"] for key in ("claims", "table", "diagnostics") for r in page[key]]
    words += [w for r in page["block_c"]["rows"] for w in (r["answer"], r["reach_answer"])]
    assert set(words) <= set(mujoco_5M.VOCAB_5M)
    pages.render(
        "mujoco_5M.md.j2", pages.plain(page, mujoco_5M.DIGITS_5M)
    )  # every field the template prints is there


def test_the_verdict_rows_on_the_hand_made_logs(hand):
    """sgd_5M: Pusher different, the rest equivalent, HalfCheetah noted as rerun; a task equivalent at the stage-1
    budget but not here is noted; ell: every task grows."""
    _, res = hand
    tasks = {t["task"]: t for t in mujoco_5M.sgd_5M_tasks(res, {"Pusher"})}
    eq = {r["task"]: r for r in res["equivalence"]}
    for t in tasks.values():  # the TOST p and, for information, its Holm-adjusted value
        assert [t["p_tost"], t["p_tost_holm"]] == [eq[t["task"]]["p_tost"], eq[t["task"]]["p_tost_holm"]]
    assert [t["answer"] for t in mujoco_5M.sgd_5M_tasks(res, set())] == [vd.EQUIVALENT] * 5 + [vd.DIFFERENT]
    assert tasks["HalfCheetah"]["notes"] == ["SGD arm rerun to pair the seeds (amendment 1)"]
    assert tasks["Pusher"]["notes"] == [f"{vd.EQUIVALENT} at the stage-1 budget"]
    ell = mujoco_5M.ell_tasks(res)
    assert [t["damping"] for t in ell] == sorted(t["damping"] for t in ell)
    assert {t["answer"] for t in ell} == {"grows"}
    assert all(t["first"] == pytest.approx(1.0) and t["last"] == pytest.approx(10**1.03) for t in ell)


def test_the_table_row_counts_only_the_cells_at_a_matched_budget():
    """Classic control (the paper states no budget) stands beside the answer, not in it: the answer counts the 5M
    MuJoCo cells only, out of those cells."""
    classic = [  # two classic-control cells that differ from the paper's, one that does not, one not comparable
        {"comparable": True, "p_vs_paper": 0.01},
        {"comparable": True, "p_vs_paper": 0.001},
        {"comparable": True, "p_vs_paper": 0.5},
        {"comparable": False, "p_vs_paper": 0.001},
        {"comparable": True, "p_vs_paper": "–"},  # no p: left out
    ]
    five = [
        {
            "task": "Hopper",
            "algo": "smac",
            "mean": 100.0,
            "paper": (331.2, 10.0),
            "p": 0.001,
            "differs": True,
        },
        {"task": "Pusher", "algo": "cg", "mean": -500.0, "paper": (-449.2, 5.0), "p": 0.3, "differs": False},
    ]
    row = mujoco_5M.table_row(classic, {"table": five})
    n = row["numbers"]
    assert n["classic"] == {"cells": 3, "differ": 2, "matched": False}
    assert n["mujoco_5M"] == {"cells": 2, "differ": 1, "matched": True}
    assert n["cells"] == 5  # every cell compared stays in the data
    assert row["answer"] == [["different (Welch)", 1]] and row["of"] == 2
    assert [s["answer"] for s in n["smac_5M"]] == ["below the paper's"]


def test_an_equivalence_speaks_to_curvature_only_with_room_below_the_best_and_above_half_the_papers():
    """verdict.curvature_word on the stage-1 seed means (SMAC / SGD with step eta/lambda, the grid's best) and step
    changes: at the ceiling, failing alike, or between; between, only where the rank-1 term changes SGD's step by
    at least STEP_CHANGE (Hopper's and Swimmer's 1.2 % and 0.9 % do not)."""
    cases = {
        "Acrobot": ([0.999, 0.998], 1.003, 0.015, vd.AT_BEST),  # within 0.1 of AC-CG's 1.003
        "CartPole": ([1.009, 1.009], 1.009, 0.012, vd.AT_BEST),
        "Pendulum": (
            [0.306, 0.307],
            0.956,
            0.064,
            vd.FAIL_ALIKE,
        ),  # below 0.5 (room below the best does not help)
        "Humanoid": (
            [0.056, 0.057],
            0.073,
            0.046,
            vd.FAIL_ALIKE,
        ),  # below 0.5 and at the best: failing comes first
        "Hopper": ([0.609, 0.600], 1.581, 0.0125, vd.BARELY),
        "Swimmer": ([0.970, 0.969], 1.130, 0.0094, vd.BARELY),
        "acting": ([0.609, 0.600], 1.581, 0.15, vd.SPEAKS),
        "at the line": ([0.609, 0.600], 1.581, vd.STEP_CHANGE, vd.SPEAKS),
        "not measured": ([0.609, 0.600], 1.581, float("nan"), vd.BARELY),
        "just below": ([0.6, 0.5], 0.7, 0.5, vd.AT_BEST),  # 0.6 is not more than 0.1 below 0.7
        "half": ([0.5, 0.55], 0.9, 0.5, vd.SPEAKS),  # exactly half the paper's best is enough
    }
    for task, (arms, best, change, word) in cases.items():
        assert vd.curvature_word(arms, best, change) == word, task
    means = {"smac": 0.609, "sgd-matched": 0.6, "adam": 1.581}
    out = vd.curvature_cells({"Hopper": {"means": means, "step_change": 0.2}})
    assert out["can"] == ["Hopper"] and out["groups"][vd.SPEAKS][0]["best_algo"] == "AC-Adam"
    assert out["groups"][vd.SPEAKS][0]["n_algos"] == 3  # how many algorithms the best is taken over
    assert out["groups"][vd.SPEAKS][0]["change"] == 0.2
    out = vd.curvature_cells({"Hopper": {"means": means, "step_change": 0.0125}})
    assert out["can"] == [] and out["n_can"] == 0 and list(out["groups"]) == [vd.BARELY]


def logged_update(g, ell, damping):
    """What the trainer logs of one batch-mean SMAC update (fixed eta): the step s = (lambda I + l l^T)^-1 g by
    Sherman-Morrison, |l|^2, |g|, |s|, cos(g, s), and s's norms along l and across it."""
    s = (g - ell * (ell @ g) / (damping + ell @ ell)) / damping
    par = abs(ell @ s) / np.linalg.norm(ell)
    return {
        "ell_sq": ell @ ell,
        "g_norm": np.linalg.norm(g),
        "step_norm": np.linalg.norm(s),
        "cos_g_step": g @ s / (np.linalg.norm(g) * np.linalg.norm(s)),
        "step_par_norm": par,
        "step_perp_norm": np.sqrt(max(s @ s - par**2, 0.0)),
        "direct": np.linalg.norm(s - g / damping) / np.linalg.norm(g / damping),
    }


def test_the_step_change_is_the_share_of_sgds_step_the_rank1_term_changes():
    """aggregate.step_change from the logged diagnostics against |s - g/lambda| / |g/lambda| computed on the vectors
    themselves (float64, d = 30): per seed the median over its updates, then the median over seeds."""
    rng = np.random.default_rng(0)
    damping = 0.1
    runs, direct = {}, []
    for seed in (1, 2, 3):
        rows = []
        for _ in range(41):
            g = rng.normal(size=30)
            ell = rng.normal(size=30) * rng.uniform(0.01, 1.0) + 0.5 * rng.uniform() * g / np.linalg.norm(g)
            rows.append(logged_update(g, ell, damping))
        u = {k: np.array([r[k] for r in rows]) for k in rows[0]}
        direct.append(float(np.median(u.pop("direct"))))
        runs[seed] = {"updates": u, "damping": damping, "cfg": {"fisher": "batch-mean"}}
    assert aggregate.step_change(runs) == pytest.approx(float(np.median(direct)), rel=1e-9)
    assert 0.01 < aggregate.step_change(runs) < 0.9  # the rank-1 term acts here, to very different degrees
    assert np.isnan(aggregate.step_change({}))


def test_the_curvature_point_on_the_hand_made_logs(hand):
    """Five tasks equivalent at 5M on the hand-made logs, both arms at the best seed mean of the task's 5M cells
    (HalfCheetah: AC-CG 0.64 below SMAC's 1, with the rerun arm; Humanoid: AC-SGD 0.20): none can speak to
    curvature; the stage-1 part is the grid row's, passed through."""
    _, res = hand
    eq5 = mujoco_5M.sgd_5M_tasks(res, set())
    stage1 = {"numbers": {"tasks": {vd.EQUIVALENT: ["Hopper"]}, "curvature": {"can": ["Hopper"]}}, "of": 9}
    point = mujoco_5M.curvature_point(res, stage1, eq5, [])
    assert point["equivalent"] == {"stage1": [1, 9], "5M": [5, 6]}
    assert point["speaks"]["stage1"] == {"can": ["Hopper"]}
    five = point["speaks"]["5M"]
    assert five["n_can"] == 0 and five["can"] == [] and list(five["groups"]) == [vd.AT_BEST]
    cells = {c["task"]: c for c in five["groups"][vd.AT_BEST]}
    assert list(cells) == ["HalfCheetah", "Hopper", "Swimmer", "Walker2d", "Humanoid"]
    for task in ("HalfCheetah", "Hopper", "Swimmer", "Humanoid"):  # SMAC at the paper's best: 1
        assert cells[task]["arms"] == pytest.approx([1.0, 1.0]) and cells[task]["best"] == pytest.approx(1.0)
    assert point["rule"] == {"half": vd.HALF, "margin": vd.EQUIV_MARGIN, "step_change": vd.STEP_CHANGE}


def test_the_committed_5M_page_is_its_template_on_the_committed_json(committed):
    with open(mujoco_5M.PAGE_5M_JSON, encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(REPO, "benchmark", "report", "mujoco_5M.md"), encoding="utf-8") as f:
        title, _, part, _, body = f.read().split("\n", 4)
    assert title == f"# {mujoco_5M.TITLE}" and part.startswith("Part of [the reproduction report]")
    assert body == pages.render("mujoco_5M.md.j2", data)
    assert data == pages.plain(mujoco_5M.page_5M(*committed), mujoco_5M.DIGITS_5M)


def committed_verdict() -> dict:
    with open(vd.VERDICT_JSON, encoding="utf-8") as f:
        return json.load(f)


def test_the_committed_block_c_verdicts_are_mujoco_5M_pages():
    block = open(os.path.join(REPO, "benchmark", "report", "mujoco_5M.md"), encoding="utf-8").read()
    lines = block.split("### Block C", 1)[1].split("### Block D", 1)[0].splitlines()
    cells = [r.split(" | ") for r in lines if r.startswith("| ") and r.split(" | ")[1].strip() == "5"]
    page = {c[0].strip("| "): c[5].startswith("equivalent at ±0.1") for c in cells}
    rows = {r["id"]: r for r in committed_verdict()["rows"]}
    ours = {t["task"]: t["answer"] == vd.EQUIVALENT for t in rows["sgd_5M"]["numbers"]["tasks"]}
    assert ours == page


# ---- the study through its contract: analyze, write, verdict
@pytest.fixture(scope="module")
def done(committed_done):
    """The studies as the report hands them over: the grid study's data (stage-1 runs, their cells, the headline
    block's runs) and its verdict row sgd_stage1, the pre-registered study, this one."""
    return committed_done


@pytest.fixture(scope="module")
def study(committed_done):
    """mujoco_5M.analyze on the committed logs, as the report ran it."""
    return committed_done["mujoco_5M"]


def test_write_renders_the_page_and_commits_the_json_only_when_asked(study, tmp_path, monkeypatch):
    monkeypatch.setattr(mujoco_5M, "PAGE_5M_JSON", str(tmp_path / "mujoco_5M.json"))
    where = Where(pages=str(tmp_path / "report"), commit=False)
    assert mujoco_5M.write(study, where) == [str(tmp_path / "report" / "mujoco_5M.md")]
    assert not (tmp_path / "mujoco_5M.json").exists()
    where.commit = True
    assert mujoco_5M.write(study, where)[1] == str(tmp_path / "mujoco_5M.json")
    for name, committed_path in (
        ("report/mujoco_5M.md", os.path.join(REPO, "benchmark", "report", "mujoco_5M.md")),
        ("mujoco_5M.json", os.path.join(REPO, "benchmark", "results", "mujoco_5M.json")),
    ):
        with open(tmp_path / name, encoding="utf-8") as a, open(committed_path, encoding="utf-8") as b:
            assert a.read() == b.read(), name


def test_the_below_random_point_counts_the_algorithms_run_and_names_the_others(study, done):
    """Each task of the point "below_random": n_run = the cells it lists = the task's complete 5M cells; those and
    the ones not run are the stage-1 grid's algorithms, each once. On the committed logs: Pusher, 4 of 6."""
    points = pages.plain(mujoco_5M.verdict(study, done))["points"]["below_random"]
    labels = [vd.ARM.get(a, hparams.algo_label(a)) for a in hparams.algos()]
    seeds = hparams.parse_seeds(study["reg"]["common"]["seeds"])
    for b in points:
        listed = [c["algo"] for c in b["cells"]]
        complete = [a for (t, a), got in study["res5"]["done"].items() if t == b["task"] and got == seeds]
        assert b["n_run"] == len(listed) == len(complete) and b["n_algos"] == len(labels)
        assert sorted(listed + b["not_run"]) == sorted(labels)
    assert [(b["task"], b["n_run"], b["n_algos"], len(b["not_run"])) for b in points] == [("Pusher", 4, 6, 2)]


def test_the_verdict_part_is_the_committed_one_and_counts_what_it_lists(study, done):
    part = pages.plain(mujoco_5M.verdict(study, done))
    committed = committed_verdict()
    rows = {r["id"]: r for r in committed["rows"]}
    assert [r["id"] for r in part["rows"]] == ["table", "headline", "sgd_5M", "ell"]
    for row in part["rows"]:
        assert row == rows[row["id"]], row["id"]
    assert part["points"] == {k: committed["points"][k] for k in ("below_random", "curvature")}
    assert part["design"] == {"seeds_5M": committed["design"]["seeds_5M"]} == {"seeds_5M": 5}
    mine = {r["id"]: r for r in part["rows"]}
    table = mine["table"]["numbers"]
    assert table["cells"] == table["classic"]["cells"] + table["mujoco_5M"]["cells"]
    assert table["mujoco_5M"]["cells"] == len(study["res5"]["table"]) == mine["table"]["of"]
    assert mine["table"]["answer"] == [["different (Welch)", table["mujoco_5M"]["differ"]]]
    for s in table["smac_5M"]:  # each 5M SMAC cell on its side of the paper's
        side = {"below the paper's": s["mean"] < s["paper"], "above the paper's": s["mean"] > s["paper"]}
        assert side.get(s["answer"], s["p"] >= 0.05), s
    for key in ("sgd_5M", "ell"):  # each count is its tasks' answers counted
        tasks = mine[key]["numbers"]["tasks"]
        assert mine[key]["answer"] == vd.tally([t["answer"] for t in tasks]) and mine[key]["of"] == len(tasks)
    for t in mine["sgd_5M"]["numbers"]["tasks"]:
        inside = -vd.EQUIV_MARGIN < t["ci"][0] and t["ci"][1] < vd.EQUIV_MARGIN
        assert (t["answer"] == vd.EQUIVALENT) == inside, t
    curvature = part["points"]["curvature"]
    stage1 = done["grid"]["verdict"]["rows"][0]
    assert curvature["equivalent"]["stage1"] == [len(stage1["numbers"]["tasks"][vd.EQUIVALENT]), stage1["of"]]
    # of the tasks equivalent at the stage-1 budget, Hopper and Swimmer would speak to curvature but for the rank-1
    # term, which changes SGD's step by about 1 % there; none can, at either budget
    assert curvature["speaks"]["stage1"]["can"] == [] and curvature["speaks"]["5M"]["n_can"] == 0
    barely = {c["task"]: c["change"] for c in curvature["speaks"]["stage1"]["groups"][vd.BARELY]}
    assert list(barely) == ["Hopper", "Swimmer"] and max(barely.values()) < 0.02
    runs = aggregate.scores([aggregate.stage1_logs()])
    for task, change in barely.items():
        assert change == pytest.approx(aggregate.step_change(runs[(task, "smac", "runs")]), rel=1e-5)
    for budget, (n, _) in curvature["equivalent"].items():
        assert sum(len(cs) for cs in curvature["speaks"][budget]["groups"].values()) == n, budget
    assert [r["task"] for r in curvature["rank1"]] == [r["task"] for r in done["prereg"]["rank1"]]


def test_report_details_count_the_runs_before_the_rules_and_date_the_amendment(committed):
    """REPORT.md's line on the study: 80 runs; those of the cells the toml's [runs] does not list (the headline
    block, run before the rules) counted by their seeds in the logs; the amendment after the first sgd-matched runs;
    the committed report.json holds the same."""
    reg, res = committed
    out = mujoco_5M.details({"reg": reg, "res5": res})
    planned = {(t, a) for a, tasks in reg["runs"].items() for t in tasks}
    logs = os.path.join(REPO, reg["common"]["logs"])
    earlier = [(t, a) for t, a in mujoco_5M.expected_5M(reg) if (t, a) not in planned]
    n_earlier = sum(len(os.listdir(os.path.join(logs, t, a))) for t, a in earlier)
    assert earlier == [("HalfCheetah", "smac"), ("HalfCheetah", "cg")]
    assert (out["runs"], out["before_rules"], out["after_rules"]) == (80, n_earlier, 80 - n_earlier)
    assert n_earlier == 10
    amendment = reg["amendments"]["halfcheetah_pairing"]
    assert out["amendment"]["date"] == amendment["date"] and out["amendment"]["reruns"] == 5
    assert out["amendment"]["after_first_runs"] and out["amendment"]["first_runs_date"] < amendment["date"]
    with open(os.path.join(REPO, "benchmark", "results", "report.json"), encoding="utf-8") as f:
        assert json.load(f)["mujoco_5M"] == out
