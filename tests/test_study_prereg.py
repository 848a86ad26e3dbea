"""The pre-registered study at 1M (benchmark/studies/prereg.py, benchmark/preregistration.toml): its job lists, the
statistics of its decision rules against hand computation and scipy, its page and JSON, its verdict row "rank1"."""

import json
import math
import operator
import os
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import aggregate, hparams, pages, stats, sweep
from benchmark import verdict as vd
from benchmark.studies import REPO, Where, prereg

LOGS = os.path.join(REPO, "benchmark", "results", "logs")


def test_job_lists_follow_the_toml():
    reg = prereg.load()
    jobs = prereg.block_jobs(reg, runs_root="/tmp/runs", logs_root="/tmp/repo")
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


def sweep_args(*argv):
    """The sweep's flags for the study, its own --blocks added as the registry does."""
    parser = sweep.build_parser()
    if not any(a.option_strings == ["--blocks"] for a in parser._actions):
        prereg.add_options(parser)
    return parser.parse_args(["--study", "prereg", *argv])


def test_the_sweep_flags_choose_the_blocks_and_where_the_logs_go(tmp_path):
    assert len(prereg.jobs(sweep_args())) == 100
    jobs = prereg.jobs(sweep_args("--blocks", "equivalence", "--logs-dir", str(tmp_path)))
    assert len(jobs) == 60 and {j.tag for j in jobs} == {"equivalence"}
    assert {j.logs_dir for j in jobs} == {str(tmp_path / "benchmark/results/logs/prereg/equivalence")}
    assert {j.tag for j in prereg.jobs(sweep_args("--blocks", "lambda,literal_5M"))} == {
        "lam0.001",
        "lam0.1",
        "lam1",
        "literal_5M",
    }
    with pytest.raises(KeyError, match="--blocks"):
        prereg.jobs(sweep_args("--blocks", "equivalence,nope"))


def test_the_power_calculation_gives_the_numbers_the_toml_states():
    reg = prereg.load()
    p = reg["power"]
    for task, (sd, n, reach) in prereg.power(reg).items():
        assert round(sd, 3) == p["sd_paired_diff"][task]
        assert n == p["seeds_for_margin_0_1"][task]
        assert round(reach, 3) == p["reachable_margin_at_20"][task]


def test_paired_tost_and_t_test_by_hand():
    x, y = {1: 1.0, 2: 2.0, 3: 4.0, 9: 7.0}, {1: 0.5, 2: 1.0, 3: 3.0}  # seed 9 has no pair
    r = stats.paired(x, y, [1, 2, 3, 9], margin=2.0)
    d = [0.5, 1.0, 1.0]
    mean, sd = statistics.mean(d), statistics.stdev(d)
    half = (
        sps.t.ppf(0.95, 2) * sd / math.sqrt(3)
    )  # 90 % two-sided t-interval = the two one-sided tests at 5 %
    assert r["n"] == 3 and r["mean"] == pytest.approx(mean) and r["sd"] == pytest.approx(sd)
    assert r["ci"] == pytest.approx((mean - half, mean + half))
    t = mean / (sd / math.sqrt(3))
    assert r["p"] == pytest.approx(2 * sps.t.sf(t, 2))
    assert r["equivalent"] and not stats.paired(x, y, [1, 2, 3], margin=1.0)["equivalent"]
    assert r["reach"] == pytest.approx(mean + half)


def test_holm_by_hand():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


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


def test_rank1_figures_by_hand():
    """Two SMAC runs on a task at lambda 0.01 (HalfCheetah): ||l||^2 = 0.01 and 0.03 -> removed 1/2 and 3/4 per run;
    a task with lambda above 0.01, and other algorithms, are left out."""
    lam = hparams.settings("HalfCheetah", "smac")["damping"]
    assert lam == 0.01
    big = next(t for t in hparams.tasks() if hparams.settings(t, "smac")["damping"] > 0.01)

    def run(task, algo, ell, cos):
        return {"task": task, "algo": algo, "updates": {"ell_sq": np.array(ell), "cos_g_step": np.array(cos)}}

    runs = [
        run("HalfCheetah", "smac", [0.01, 0.01, np.nan], [0.9, 0.8, 0.7]),
        run("HalfCheetah", "smac", [0.03, 0.03, 0.03], [1.0, 0.6, 0.9]),
        run("HalfCheetah", "sgd", [1.0], [0.0]),
        run(big, "smac", [1.0], [0.5]),
    ]
    (r,) = prereg.rank1_figures(runs)
    assert (r["task"], r["damping"], r["n"]) == ("HalfCheetah", 0.01, 2)
    assert r["removed"] == pytest.approx((0.625, 0.5, 0.75))
    assert r["cos"] == pytest.approx((0.85, 0.8, 0.9)) and r["min_cos"] == 0.6


# ---- report/prereg.md: page_prereg's data, by scipy and by hand
@pytest.fixture(scope="module")
def committed(committed_done):
    """The pre-registered study on the committed logs: (reg, its results)."""
    return committed_done["prereg"]["reg"], committed_done["prereg"]["pre"]


def test_the_committed_prereg_page_is_its_template_on_the_committed_json(committed):
    with open(prereg.PAGE_PREREG_JSON, encoding="utf-8") as f:
        data = json.load(f)
    with open(os.path.join(REPO, "benchmark", "report", "prereg.md"), encoding="utf-8") as f:
        title, _, part, _, body = f.read().split("\n", 4)
    assert title == "# The pre-registered study" and part.startswith("Part of [the reproduction report]")
    assert body == pages.render("prereg.md.j2", data)
    assert data == pages.plain(prereg.page_prereg(*committed))


def ttest_by_hand(d: np.ndarray, level: float) -> tuple:
    """Mean, the two-sided one-sample t-test's p against 0 and the t-interval at `level`, written out."""
    n, mean, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    t = mean / (sd / math.sqrt(n))
    half = sps.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return mean, 2 * sps.t.sf(abs(t), n - 1), [mean - half, mean + half]


def check_block1(reg: dict, page: dict, sc: dict) -> None:
    """Block 1: seeds 1-20, d = SMAC - sgd-matched per seed; Holm over the two tasks by hand."""
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


def check_block2(page: dict, sc: dict) -> None:
    """Block 2: per lambda d against the one sgd-matched cell; the per-seed OLS slope on log10 lambda."""
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
        cell = (
            sc if lam == 1e-2 else aggregate.scores([os.path.join(LOGS, "prereg", "lambda", f"lam{lam:g}")])
        )
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


def check_block3(page: dict) -> None:
    """Block 3: raw finals at 5M under the literal reading; the paper's difference 2936 - 1766 by hand."""
    b3 = page["block3"]
    lit = aggregate.scores([os.path.join(LOGS, "prereg", "literal_5M")], 5_000_000)
    norm = aggregate.scores([os.path.join(LOGS, "norm_5M")], 5_000_000)
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


def test_the_prereg_page_numbers_on_the_committed_logs_by_scipy(committed):
    reg, res = committed
    page = prereg.page_prereg(reg, res)
    assert page["margin"] == 0.1 and page["levels"] == {"tost": 90, "slope": 95, "table": 95}
    assert page["power"] == 0.8 and page["block1"]["damping"] == [0.01]
    sc = aggregate.scores(
        [os.path.join(LOGS, "norm"), os.path.join(LOGS, "prereg", "equivalence")], 1_000_000
    )
    check_block1(reg, page, sc)
    check_block2(page, sc)
    check_block3(page)
    b2, b3 = page["block2"], page["block3"]
    words = [r[k] for r in page["block1"]["rows"] for k in ("answer", "reach_answer")]
    words += [r["answer"] for r in b2["rows"]] + [b2["slope"]["answer"], b3["answer"]]
    assert set(words) <= set(prereg.VOCAB_PREREG)


def made_up_result(p_holm: list, slope: dict, w) -> dict:
    """results' shape as page_prereg reads it: block 1 rows with the given Holm p (the first inside ±0.1), one
    lambda, block 3 with the given SMAC - AC-CG test."""
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
    assert [r["p_paper"] for r in b3["rows"]] == [None, None]
    assert [r["p_norm"] for r in b3["rows"]] == [0.3, 0.3]
    assert b3["smac_vs_cg"] == {"tested": False, "diff": None, "p": None, "paper_diff": 2000.0}
    assert b3["answer"] == "pending (runs not all in)"
    pages.render("prereg.md.j2", page)  # every field the template prints is there
    slope = {"n": 10, "complete": True, "mean": -0.2, "p": 0.01, "ci": (-0.3, -0.1)}
    res = made_up_result([0.001], slope, {"diff": 5.0, "p": 0.04})
    page = prereg.page_prereg(reg, res)
    assert page["block2"]["slope"]["answer"] == "the rank-1 term matters (dose-response)"
    assert page["block3"]["smac_vs_cg"] == {"tested": True, "diff": 5.0, "p": 0.04, "paper_diff": 2000.0}
    pages.render("prereg.md.j2", page)
    res["lambda"]["slope"]["p"] = 0.05  # the toml: p < 0.05
    assert prereg.page_prereg(reg, res)["block2"]["slope"]["answer"] == "no dose-response detected"


def test_block_1_uses_the_interval_level_the_toml_states(committed):
    reg, _ = committed
    reg = {**reg, "common": {**reg["common"], "ci_level_tost": 0.95}}
    sc = aggregate.scores(
        [os.path.join(LOGS, "norm"), os.path.join(LOGS, "prereg", "equivalence")], 1_000_000
    )
    for r in prereg.results(reg)["equivalence"]:
        x = np.array([sc[(r["task"], "smac")][s] for s in range(1, 21)])
        y = np.array([sc[(r["task"], "sgd-matched")][s] for s in range(1, 21)])
        assert r["ci"] == pytest.approx(ttest_by_hand(x - y, 0.95)[2])


# ---- the study through its contract: analyze, write, verdict
@pytest.fixture(scope="module")
def study(committed_done):
    """analyze's result on the committed logs, the grid study's runs being the stage-1 compact logs."""
    return committed_done["prereg"]


def test_write_renders_the_page_and_commits_the_json_only_when_asked(study, tmp_path, monkeypatch):
    monkeypatch.setattr(prereg, "PAGE_PREREG_JSON", str(tmp_path / "prereg.json"))
    where = Where(pages=str(tmp_path / "report"), commit=False)
    assert prereg.write(study, where) == [str(tmp_path / "report" / "prereg.md")]
    assert not (tmp_path / "prereg.json").exists()
    where.commit = True
    assert prereg.write(study, where)[1] == str(tmp_path / "prereg.json")
    for name, committed_path in (
        ("report/prereg.md", os.path.join(REPO, "benchmark", "report", "prereg.md")),
        ("prereg.json", os.path.join(REPO, "benchmark", "results", "prereg.json")),
    ):
        with open(tmp_path / name, encoding="utf-8") as a, open(committed_path, encoding="utf-8") as b:
            assert a.read() == b.read(), name


def test_the_verdict_row_is_the_committed_one_and_counts_what_it_lists(study):
    part = pages.plain(prereg.verdict(study, {}))
    with open(vd.VERDICT_JSON, encoding="utf-8") as f:
        committed = json.load(f)
    (row,) = part["rows"]
    assert row == next(r for r in committed["rows"] if r["id"] == "rank1")
    assert part["design"] == {k: committed["design"][k] for k in ("paired_seeds", "paired_budget", "damping")}
    tasks = row["numbers"]["tasks"]
    assert row["answer"] == vd.tally([t["answer"] for t in tasks]) and row["of"] == len(tasks) == 2
    for t in tasks:
        inside = -t["reach_margin"] < t["ci"][0] and t["ci"][1] < t["reach_margin"]
        assert t["reach_answer"] == ("secondary passes" if inside else "secondary fails"), t
        inside = -vd.EQUIV_MARGIN < t["ci"][0] and t["ci"][1] < vd.EQUIV_MARGIN
        assert (t["answer"] == vd.EQUIVALENT) == inside, t
    slope = row["numbers"]["slope"]
    assert slope["decades"] == pytest.approx(3.0)
    assert slope["span"] == pytest.approx([slope["decades"] * x for x in slope["ci"]], rel=1e-4)
    assert part["design"] == {"paired_seeds": 20, "paired_budget": 1_000_000, "damping": [0.01]}


def test_the_rank1_figures_cover_the_stage1_and_block1_smac_runs(study):
    """Every task whose SMAC row has lambda <= 0.01: its 5 stage-1 seeds, and on block 1's tasks seeds 6-20 too."""
    block1 = prereg.load()["blocks"]["equivalence"]["tasks"]
    low = [t for t in hparams.tasks() if hparams.settings(t, "smac")["damping"] <= 0.01]
    assert set(block1) <= set(low)
    assert [(r["task"], r["n"]) for r in study["rank1"]] == [(t, 20 if t in block1 else 5) for t in low]
    for r in study["rank1"]:
        assert r["removed"][1] <= r["removed"][0] <= r["removed"][2] and r["min_cos"] <= r["cos"][1]


def test_the_command_line_prints_the_power_calculation(capsys):
    assert prereg.main(["power"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == ["HalfCheetah", "Pusher"]
    assert "113" in out[0] and "474" in out[1]
