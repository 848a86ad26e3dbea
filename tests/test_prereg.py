"""The pre-registered study (issue 27, benchmark/preregistration.toml): its job lists and the statistics of its
decision rules, against hand computation."""

import math
import operator
import os
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import hparams, prereg, sweep


def test_job_lists_follow_the_toml():
    reg = prereg.load()
    jobs = sweep.prereg_jobs(reg, runs_root="/tmp/runs", logs_root="/tmp/repo")
    by_tag = {}
    for j in jobs:
        by_tag.setdefault(j.tag, []).append(j)
    eq = by_tag["equivalence"]
    assert len(eq) == 2 * 2 * 15 and {j.seed for j in eq} == set(range(6, 21))  # seeds 1-5: the stage-1 runs
    assert {(j.task, j.algo) for j in eq} == {
        (t, a) for t in ("HalfCheetah", "Pusher") for a in ("smac", "sgd-matched")
    }
    assert all(
        j.extra_flags == ["--norm-obs", "--norm-reward", "--norm-adv"] and j.budget == 1_000_000 for j in eq
    )
    assert eq[0].flags == hparams.lookup(eq[0].task, eq[0].algo)
    assert "lam0.01" not in by_tag  # the paper's row: block 1's runs serve it
    for lam in (1e-3, 1e-1, 1.0):
        lj = by_tag[f"lam{lam:g}"]
        assert len(lj) == 10 and all(j.task == "HalfCheetah" and j.algo == "smac" for j in lj)
        flags = dict(zip(lj[0].flags[::2], lj[0].flags[1::2]))
        assert float(flags["--damping"]) == lam and float(flags["--learning-rate"]) == pytest.approx(
            0.08 * lam
        )
        assert lj[0].logs_dir.endswith(f"prereg/lambda/lam{lam:g}")
    lit = by_tag["literal_5M"]
    assert len(lit) == 10 and all(j.extra_flags == [] and j.budget == 5_000_000 for j in lit)
    assert len(jobs) == 60 + 30 + 10


def test_paired_tost_and_t_test_by_hand():
    x, y = {1: 1.0, 2: 2.0, 3: 4.0, 9: 7.0}, {1: 0.5, 2: 1.0, 3: 3.0}  # seed 9 has no pair
    r = prereg.paired(x, y, [1, 2, 3, 9], margin=2.0)
    d = [0.5, 1.0, 1.0]
    mean, sd = statistics.mean(d), statistics.stdev(d)
    half = (
        sps.t.ppf(0.95, 2) * sd / math.sqrt(3)
    )  # 90 % two-sided t-interval = the two one-sided tests at 5 %
    assert r["n"] == 3 and r["mean"] == pytest.approx(mean) and r["sd"] == pytest.approx(sd)
    assert r["ci"] == pytest.approx((mean - half, mean + half))
    t = mean / (sd / math.sqrt(3))
    assert r["p"] == pytest.approx(2 * sps.t.sf(t, 2))
    assert r["equivalent"] and not prereg.paired(x, y, [1, 2, 3], margin=1.0)["equivalent"]
    assert r["reach"] == pytest.approx(mean + half)


def test_holm_by_hand():
    assert prereg.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert prereg.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_step_diagnostics_of_a_run_by_hand():
    run = {
        "updates": {
            "ell_sq": np.array([0.01, 0.02, 0.03, np.nan]),
            "g_norm": np.array([2.0, 2.0, 2.0, 2.0]),
            "step_norm": np.array([2.0, 2.0, 2.0, 2.0]),
            "cos_g_step": np.array([1.0, 0.0, 0.0, 1.0]),
        }
    }
    assert prereg.step_fraction_removed(run, 0.01) == pytest.approx(np.median([0.5, 2 / 3, 0.75]))
    cos, change = prereg.step_change(
        run, 1.0
    )  # g / lambda = 2: change 0 when aligned, |(2,0)-(0,2)|/2 at 90 deg
    assert cos == pytest.approx(0.5) and change == pytest.approx(
        np.median([0.0, math.sqrt(8) / 2, math.sqrt(8) / 2, 0.0])
    )


def test_the_5M_diagnostics_split_a_run_into_its_first_and_last_fifth():
    """Issue 37's block D on a hand example: ell_sq 1 in the first fifth, 9 in the last, lambda 0.5."""
    import numpy as np

    from benchmark import prereg

    steps = np.arange(1, 11) * 500  # ten updates over a 5000-step budget
    ell_sq = np.array([1.0, 1.0, 4, 4, 4, 4, 4, 4, 9.0, 9.0])
    cos = np.array([0.9, 0.8, 1, 1, 1, 1, 1, 1, 0.5, 0.7])
    out = prereg.fifths({"updates": {"global_step": steps, "ell_sq": ell_sq, "cos_g_step": cos}}, 0.5, 5000)
    assert out["first"] == pytest.approx({"ell_over_lambda": 2.0, "removed": 1.0 / 1.5, "cos": 0.85})
    assert out["last"]["ell_over_lambda"] == 18.0 and out["last"]["removed"] == 9.0 / 9.5
    assert out["last"]["cos"] == 0.6 and out["min_cos"] == 0.5


def test_the_5M_study_judges_a_cell_only_with_its_five_seeds():
    from benchmark import prereg

    reg = prereg.load_5M()
    res = prereg.analyze_5M(reg)
    assert res["runs_expected"] == 80  # the 70 new runs and HalfCheetah's 10 of issue 12
    from benchmark import aggregate

    claims = {c["id"]: c for c in aggregate.CLAIMS}
    for row in res["claims"]:
        c = claims[row["id"]]
        needs = [(c["task"], c["algo"])] + ([(c["task"], c["ref"])] if "ref" in c else [])
        incomplete = any(len(res["done"].get(cell, [])) < 5 for cell in needs)
        assert (row["verdict"] == "waiting") == incomplete, row


def write_5M_log(root, task, algo, seed, value, updates=None, logs=None):
    """A finished 5M compact log whose episodes return value(step) (a number: the same at every step), under logs
    (default: the 5M study's)."""
    import gzip
    import json
    import os

    from benchmark import compact

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
    path = compact.log_path(os.path.join(root, logs or prereg.load_5M()["common"]["logs"]), task, algo, seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(rec, f)


def pusher_sgd_ramp(step: float) -> float:
    """-1000 at the start, -300 at 5M: passes -441 at about 4M."""
    return -1000.0 + 700.0 * step / 5e6


def test_the_5M_study_applies_its_rules_to_complete_cells_by_hand(tmp_path):
    from benchmark import compact

    reg = prereg.load_5M()
    rand = compact.read_random_scores()
    offsets = [0.01, -0.01, 0.02, 0.0, -0.02]  # paired differences d_s (normalized) of SMAC - sgd-matched
    level = {  # constant returns per cell; SMAC at the paper's SMAC final, so every SMAC claim threshold is passed
        "sgd": {"Humanoid": 1000.0},
        "cg": {"HalfCheetah": 1766.0, "Pusher": -1000.0},  # Pusher AC-CG never passes -441
    }
    for task, algo in prereg.expected_5M(reg):
        best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
        smac = hparams.paper_result(task, "smac")[0]
        damping = hparams.settings(task, "smac")["damping"]
        for seed in range(1, 6):
            updates = None
            if algo == "smac":
                steps = np.linspace(50_000, 5_000_000, 100)
                ratio = 10 ** (1 + 0.01 * seed)  # ||l||^2 / lambda: 1 in the first fifth, ratio in the last
                ell = np.where(steps <= 1e6, 1.0, np.where(steps > 4e6, ratio, 2.0)) * damping
                updates = {c: [] for c in compact.UPDATE_COLS}
                updates.update(
                    global_step=steps.tolist(),
                    ell_sq=ell.tolist(),
                    cos_g_step=np.where(steps > 4e6, 0.95, 0.99).tolist(),
                )
                value = smac + (seed - 3)
            elif algo == "sgd-matched":
                shift = (0.5 if task == "Pusher" else 0.0) + offsets[seed - 1]
                value = smac + (seed - 3) - shift * (best - rand[task])
                if task == "HalfCheetah":  # amendment 1: the rerun block C pairs, its first episode SMAC's
                    rerun = lambda s, v=value, first=smac + (seed - 3): first if s <= 5e6 / 400 else v  # noqa: E731
                    logs = reg["amendments"]["halfcheetah_pairing"]["logs"]
                    write_5M_log(str(tmp_path), task, algo, seed, rerun, logs=logs)
            elif task == "Pusher" and algo == "sgd":
                value = pusher_sgd_ramp
            else:
                value = level[algo][task] + (seed - 3)
            write_5M_log(str(tmp_path), task, algo, seed, value, updates)
    res = prereg.analyze_5M(reg, root=str(tmp_path))
    assert res["runs_in"] == res["runs_expected"] == 80
    # Block A: SMAC passes every threshold in the first bin; AC-SGD never reaches 3105 on Humanoid; AC-CG never
    # passes -441 on Pusher; AC-SGD does, about 80x later than SMAC (the paper: 1.09x)
    verdicts = {r["id"]: r.get("strict") or r["verdict"] for r in res["claims"]}
    assert verdicts == {
        "hopper-smac-3x": "held",
        "humanoid-smac-adam-59pct": "held",
        "humanoid-smac-cg-59pct": "held",
        "humanoid-sgd-faster": "not held",
        "pusher-cg-21": "baseline never reaches it",
        "pusher-sgd-9": "direction only",
    }
    # Block B: the mean, the t-interval by hand (sd of (-2, -1, 0, 1, 2) = sqrt(2.5)), Welch from the summaries
    table = {(r["task"], r["algo"]): r for r in res["table"]}
    assert len(table) == 10
    hopper = table[("Hopper", "smac")]
    half = 2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5)
    assert hopper["mean"] == pytest.approx(331.2) and hopper["ci"] == pytest.approx(
        (331.2 - half, 331.2 + half)
    )
    assert not hopper["differs"] and table[("Humanoid", "sgd")]["differs"]
    assert hopper["length"] == 500.0
    # Block C: d = offsets (mean 0, sd sqrt(2.5e-4)): equivalent at 0.1; Pusher d = 0.5 + offsets: different after Holm
    eq = {r["task"]: r for r in res["equivalence"]}
    assert res["halfcheetah_pairing"]["paired_seeds"] == [1, 2, 3, 4, 5]
    assert set(eq) == set(reg["blocks"]["equivalence"]["tasks"])
    half = 2.131846786326649 * math.sqrt(2.5e-4) / math.sqrt(5)
    assert eq["Hopper"]["mean"] == pytest.approx(0.0, abs=1e-9)
    assert eq["Hopper"]["ci"] == pytest.approx((-half, half), abs=1e-9)
    assert eq["Hopper"]["verdict"] == "equivalent at ±0.1"
    assert eq["Pusher"]["mean"] == pytest.approx(0.5) and eq["Pusher"]["verdict"].startswith(
        "different (Holm p"
    )
    p_pusher = sps.ttest_1samp(0.5 + np.array(offsets), 0.0).pvalue
    assert eq["Pusher"]["p_holm"] == pytest.approx(6 * p_pusher)  # the smallest of six p-values, times six
    # Block D: ||l||^2 / lambda from 1 to 10^(1 + 0.01 s): log-ratio 1.03 on average, grows late in training
    diag = {r["task"]: r for r in res["diagnostics"]}
    assert len(diag) == 6 and diag["Hopper"]["verdict"] == "grows late in training"
    assert diag["Hopper"]["log_ratio"] == pytest.approx(1.03)
    assert diag["Hopper"]["runs"][0]["min_cos"] == pytest.approx(0.95)
    # the page's data: the same numbers, words of VOCAB_5M, medians [min, max] over the seeds by hand
    page = prereg.page_5M(reg, res)
    assert (page["runs_in"], page["runs_expected"], page["after_rules"], page["before_rules"]["runs"]) == (
        80,
        80,
        70,
        10,
    )
    assert page["before_rules"]["cells"] == ["HalfCheetah SMAC", "HalfCheetah AC-CG"]
    assert [c["n"] for c in page["done"]] == [5] * 16
    assert [r["answer"] for r in page["claims"]] == list(verdicts.values())
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
    assert set(words) <= set(prereg.VOCAB_5M)
    assert prereg.render_5M(prereg.plain_5M(page)) == prereg.markdown_5M(reg, res)[0]


def test_the_committed_5M_page_is_its_template_on_the_committed_json():
    import json

    with open(prereg.PAGE_5M_JSON, encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(prereg.REPO, "benchmark", "report", "mujoco_5M.md"), encoding="utf-8") as f:
        title, _, part, _, body = f.read().split("\n", 4)
    assert title == "# The paper's budget: MuJoCo at 5M" and part.startswith(
        "Part of [the reproduction report]"
    )
    assert body == prereg.render_5M(data)
    assert data == prereg.plain_5M(prereg.page_5M(prereg.load_5M(), prereg.analyze_5M(prereg.load_5M())))


# ---- report/prereg.md: prereg.page_prereg's data, by scipy and by hand
@pytest.fixture(scope="module")
def committed():
    """The pre-registered study on the committed logs: (reg, analyze's result)."""
    reg = prereg.load()
    return reg, prereg.analyze(reg)


def test_the_committed_prereg_page_is_its_template_on_the_committed_json(committed):
    import json

    from benchmark import pages

    with open(prereg.PAGE_PREREG_JSON, encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(prereg.REPO, "benchmark", "report", "prereg.md"), encoding="utf-8") as f:
        title, _, part, _, body = f.read().split("\n", 4)
    assert title == "# The pre-registered study" and part.startswith("Part of [the reproduction report]")
    assert body == prereg.render_prereg(data)
    assert data == pages.plain(prereg.page_prereg(*committed))


def ttest_by_hand(d: np.ndarray, level: float) -> tuple:
    """Mean, the two-sided one-sample t-test's p against 0 and the t-interval at `level`, written out."""
    n, mean, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    t = mean / (sd / math.sqrt(n))
    half = sps.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return mean, 2 * sps.t.sf(abs(t), n - 1), [mean - half, mean + half]


def test_the_prereg_page_numbers_on_the_committed_logs_by_scipy(committed):
    reg, res = committed
    page = prereg.page_prereg(reg, res)
    logs = os.path.join(prereg.REPO, "benchmark", "results", "logs")
    assert page["margin"] == 0.1 and page["levels"] == {"tost": 90, "slope": 95, "table": 95}
    assert page["power"] == 0.8 and page["block1"]["damping"] == [0.01]
    # block 1: seeds 1-20, d = SMAC - sgd-matched per seed; Holm over the two tasks by hand
    sc = prereg._scores([os.path.join(logs, "norm"), os.path.join(logs, "prereg", "equivalence")], 1_000_000)
    rows = {r["task"]: r for r in page["block1"]["rows"]}
    assert list(rows) == ["HalfCheetah", "Pusher"]
    for task, r in rows.items():
        x = np.array([sc[(task, "smac")][s] for s in range(1, 21)])
        y = np.array([sc[(task, "sgd-matched")][s] for s in range(1, 21)])
        mean, p, ci = ttest_by_hand(x - y, 0.90)
        assert r["n"] == 20 and r["complete"]
        assert (
            r["mean"] == pytest.approx(mean) and r["p"] == pytest.approx(p) and r["ci"] == pytest.approx(ci)
        )
        assert r["p_welch"] == pytest.approx(sps.ttest_ind(x, y, equal_var=False).pvalue)
        assert r["reach"] == pytest.approx(max(abs(ci[0]), abs(ci[1])))
        assert r["reach_margin"] == reg["power"]["reachable_margin_at_20"][task]
        inside_reach = -r["reach_margin"] < ci[0] and ci[1] < r["reach_margin"]
        assert r["reach_answer"] == ("equivalent" if inside_reach else "not shown")
    lo, hi = sorted(rows.values(), key=operator.itemgetter("p"))
    assert lo["p_holm"] == pytest.approx(min(1.0, 2 * lo["p"]))
    assert hi["p_holm"] == pytest.approx(max(lo["p_holm"], hi["p"]))
    for r in rows.values():  # the CI is not inside ±0.1 and no Holm p is below 0.05 on the committed logs
        assert not (-0.1 < r["ci"][0] and r["ci"][1] < 0.1) and r["p_holm"] >= 0.05
        assert r["answer"] == "inconclusive"
    # block 2: per lambda d against the one sgd-matched cell; the per-seed OLS slope on log10 lambda
    b2 = page["block2"]
    assert (b2["task"], b2["eta_over_lambda"], b2["seeds"], b2["n_damping"]) == (
        "HalfCheetah",
        0.08,
        "1-10",
        4,
    )
    control = np.array([sc[("HalfCheetah", "sgd-matched")][s] for s in range(1, 11)])
    lambdas = [1e-3, 1e-2, 1e-1, 1.0]
    d_of = {}
    for lam, r in zip(lambdas, b2["rows"]):
        cell = sc if lam == 1e-2 else prereg._scores([os.path.join(logs, "prereg", "lambda", f"lam{lam:g}")])
        smac = np.array([cell[("HalfCheetah", "smac")][s] for s in range(1, 11)])
        d_of[lam] = smac - control
        mean, p, ci = ttest_by_hand(d_of[lam], 0.90)
        assert r["damping"] == lam and r["n"] == 10
        assert (
            r["mean"] == pytest.approx(mean) and r["p"] == pytest.approx(p) and r["ci"] == pytest.approx(ci)
        )
        assert r["answer"] == ("equivalent" if -0.1 < ci[0] and ci[1] < 0.1 else "not shown")
        removed = []
        for s in range(1, 11):
            ell = cell[("HalfCheetah", "smac", "runs")][s]["updates"]["ell_sq"]
            ell = ell[np.isfinite(ell)]
            removed.append(np.median(ell / (lam + ell)))
        assert r["removed"] == pytest.approx([np.mean(removed), min(removed), max(removed)])
    slopes = np.array(
        [sps.linregress(np.log10(lambdas), [d_of[lam][i] for lam in lambdas]).slope for i in range(10)]
    )
    mean, p, ci = ttest_by_hand(slopes, 0.95)
    s = b2["slope"]
    assert s["n"] == 10 and s["complete"]
    assert s["mean"] == pytest.approx(mean) and s["p"] == pytest.approx(p) and s["ci"] == pytest.approx(ci)
    assert p >= 0.05 and s["answer"] == "no dose-response detected"
    # block 3: raw finals at 5M under the literal reading; the paper's difference 2936 - 1766 by hand
    b3 = page["block3"]
    lit = prereg._scores([os.path.join(logs, "prereg", "literal_5M")], 5_000_000)
    norm = prereg._scores([os.path.join(logs, "norm_5M")], 5_000_000)
    finals = {}
    for algo, r in zip(("smac", "cg"), b3["rows"]):
        x = np.array([v for v in lit[("HalfCheetah", algo, "raw")].values() if v is not None])
        y = np.array([v for v in norm[("HalfCheetah", algo, "raw")].values() if v is not None])
        finals[algo] = x
        paper = hparams.paper_result("HalfCheetah", algo)
        half = sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
        assert r["algo"] == hparams.algo_label(algo) and r["n"] == 5
        assert r["mean"] == pytest.approx(x.mean()) and r["std"] == pytest.approx(x.std(ddof=1))
        assert r["ci"] == pytest.approx([x.mean() - half, x.mean() + half]) and r["paper"] == list(paper)
        assert r["norm_mean"] == pytest.approx(y.mean())
        assert r["p_norm"] == pytest.approx(sps.ttest_ind(x, y, equal_var=False).pvalue)
        welch = sps.ttest_ind_from_stats(
            x.mean(), x.std(ddof=1), len(x), paper[0], paper[1], 5, equal_var=False
        )
        assert r["p_paper"] == pytest.approx(welch.pvalue)
    w = b3["smac_vs_cg"]
    assert w["tested"] and w["paper_diff"] == 2936 - 1766
    assert w["diff"] == pytest.approx(finals["smac"].mean() - finals["cg"].mean())
    assert w["p"] == pytest.approx(sps.ttest_ind(finals["smac"], finals["cg"], equal_var=False).pvalue)
    # SMAC below AC-CG and below its own norm run: neither rule of the toml fires
    assert w["diff"] < 0 and b3["rows"][0]["mean"] < b3["rows"][0]["norm_mean"]
    assert b3["answer"] == "the literal reading does not rescue the headline"
    words = [r[k] for r in page["block1"]["rows"] for k in ("answer", "reach_answer")]
    words += [r["answer"] for r in b2["rows"]] + [b2["slope"]["answer"], b3["answer"]]
    assert set(words) <= set(prereg.VOCAB_PREREG)


def made_up_result(p_holm: list, slope: dict, w) -> dict:
    """analyze's result in the shape page_prereg reads: block 1 rows with the given Holm p (the first inside ±0.1),
    one lambda, block 3 with the given SMAC - AC-CG test."""
    eq = [
        {
            "task": f"T{i}",
            "n": 20,
            "mean": 0.0,
            "ci": (-0.05, 0.05) if i == 0 else (-0.3, 0.4),
            "p": p / 2,
            "p_holm": p,
            "p_welch": p,
            "reach_margin": 0.2,
            "equivalent_reach": i == 0,
            "equivalent": i == 0,
            "reach": 0.05 if i == 0 else 0.4,
            "complete": i != 1,
        }
        for i, p in enumerate(p_holm)
    ]
    cell = {
        "n": 9,
        "mean": 0.01,
        "ci": (-0.2, 0.2),
        "p": 0.5,
        "equivalent": False,
        "removed": (0.5, 0.4, 0.6),
        "cos": 0.99,
        "change": 0.1,
    }
    algo = {
        "n": 5,
        "mean": 1.0,
        "std": 1.0,
        "ci": (0.0, 2.0),
        "paper": (3000.0, 1000.0),
        "vs_paper": None,
        "norm_mean": 2.0,
        "vs_norm": {"p": 0.3},
    }
    return {
        "equivalence": eq,
        "lambda": {"per_lambda": {0.5: cell}, "fractions": {0.5: cell}, "slope": slope},
        "literal_5M": {
            "smac": algo,
            "cg": {**algo, "paper": (1000.0, 10.0)},
            "smac_vs_cg": w,
            "verdict": "pending (runs not all in)",
        },
    }


def test_the_prereg_page_chooses_its_words_by_the_toml_rules():
    reg = prereg.load()
    res = made_up_result([0.001, 0.01, 0.2], {"n": 1, "complete": False}, None)
    page = prereg.page_prereg(reg, res)
    rows = page["block1"]["rows"]
    assert [r["answer"] for r in rows] == ["equivalent", "different (Holm)", "inconclusive"]
    assert [r["reach_answer"] for r in rows] == ["equivalent", "not shown", "not shown"]
    assert [r["complete"] for r in rows] == [True, False, True]
    assert page["block2"]["rows"][0]["damping"] == 0.5 and page["block2"]["rows"][0]["answer"] == "not shown"
    assert page["block2"]["slope"] == {
        "n": 1,
        "complete": False,
        "answer": "too few seeds",
        "mean": None,
        "p": None,
        "ci": [None, None],
    }
    b3 = page["block3"]
    assert [r["p_paper"] for r in b3["rows"]] == [None, None] and [r["p_norm"] for r in b3["rows"]] == [
        0.3,
        0.3,
    ]
    assert b3["smac_vs_cg"] == {"tested": False, "diff": None, "p": None, "paper_diff": 2000.0}
    assert b3["answer"] == "pending (runs not all in)"
    prereg.render_prereg(page)  # every field the template prints is there
    slope = {"n": 10, "complete": True, "mean": -0.2, "p": 0.01, "ci": (-0.3, -0.1)}
    res = made_up_result([0.001], slope, {"diff": 5.0, "p": 0.04})
    page = prereg.page_prereg(reg, res)
    assert page["block2"]["slope"]["answer"] == "the rank-1 term matters (dose-response)"
    assert page["block3"]["smac_vs_cg"] == {"tested": True, "diff": 5.0, "p": 0.04, "paper_diff": 2000.0}
    prereg.render_prereg(page)
    res["lambda"]["slope"]["p"] = 0.05  # the toml: p < 0.05
    assert prereg.page_prereg(reg, res)["block2"]["slope"]["answer"] == "no dose-response detected"


def test_block_1_uses_the_interval_level_the_toml_states(committed):
    reg, _ = committed
    reg = {**reg, "common": {**reg["common"], "ci_level_tost": 0.95}}
    logs = os.path.join(prereg.REPO, "benchmark", "results", "logs")
    sc = prereg._scores([os.path.join(logs, "norm"), os.path.join(logs, "prereg", "equivalence")], 1_000_000)
    for r in prereg.analyze(reg)["equivalence"]:
        x = np.array([sc[(r["task"], "smac")][s] for s in range(1, 21)])
        y = np.array([sc[(r["task"], "sgd-matched")][s] for s in range(1, 21)])
        assert r["ci"] == pytest.approx(ttest_by_hand(x - y, 0.95)[2])
