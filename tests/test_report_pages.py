"""REPORT.md's own body, report/readings.md and report/deviations.md: their data (report.report_data,
readings_data, deviations_data) against independent recomputations, the committed JSON against the data functions
on the committed logs, and the committed pages against their templates on the committed JSON."""

import json
import os
import re

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import aggregate, compact, hparams, pages, prereg, report, stats


def committed_json(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def committed_page(name: str) -> str:
    with open(os.path.join(report.REPO, "benchmark", name), encoding="utf-8") as f:
        return f.read()


def detail_body(name: str) -> str:
    """A committed detail page's body; the page must be page.md.j2 around it."""
    text = committed_page(os.path.join("report", name))
    title, _, _, _, body = text.split("\n", 4)
    assert text == pages.render("page.md.j2", {"title": title[len("# ") :], "body": body})
    return body


@pytest.fixture(scope="module")
def stage1():
    """The committed stage-1 runs as report.Data, with their cells (no bootstrap)."""
    runs = compact.discover_logs(aggregate.stage1_logs())
    d = report.Data(runs=runs, headline=[], final={}, diag={})
    d.cells = aggregate.cell_rows(aggregate.load_cells(runs))
    return d


# ---------------------------------------------------------------------------------------------
# readings.md
# ---------------------------------------------------------------------------------------------
def test_norm_runs_over_their_first_steps_beside_the_literal_grid():
    """Each run judged over its first 300k steps of a 1M budget: constant returns give that constant; a run that
    diverged before 300k is left out and counted; the literal grid's seeds are compared by Welch's test."""
    runs = []
    for seed, value, last in ((1, 100.0, 1_000_000), (2, 200.0, 1_000_000), (3, 300.0, 250_000)):
        steps = np.arange(1000, last + 1, 1000)
        returns = np.where(steps <= 300_000, value, 5000.0)  # what happens after 300k must not count
        runs.append(
            {
                "task": "Hopper",
                "algo": "smac",
                "seed": seed,
                "job_budget": 1_000_000,
                "last_step": last,
                "status": "finished" if last == 1_000_000 else "diverged",
                "episodes": {"global_step": steps, "episodic_return": returns},
            }
        )
    finals, dropped = report.first_steps_finals(runs, 300_000)
    assert sorted(finals[("Hopper", "smac")]) == pytest.approx([100.0, 200.0])
    assert dropped[("Hopper", "smac")] == 1
    final = {("Hopper", "smac"): {"budget": "300000", "finals": "175.24;172.047;279.989", "n_diverged": "0"}}
    steps, pairs = report.reading_pairs(final, runs)
    row = pairs[("Hopper", "smac")]
    p = sps.ttest_ind([100.0, 200.0], [175.24, 172.047, 279.989], equal_var=False).pvalue
    assert steps == 300_000 and row["p"] == pytest.approx(p) and row["dropped"] == 1
    assert report.reading_verdict(row) == "not distinguishable"  # p = 0.44
    assert report.reading_verdict({**row, "p": 0.01}) == "behind"  # norm mean 150 < literal 209
    assert report.reading_verdict({**row, "p": 0.01, "norm": np.array([300.0])}) == "ahead"
    cell = report.pair_data(row)
    assert cell["literal"] == pytest.approx((175.24 + 172.047 + 279.989) / 3) and cell[
        "norm"
    ] == pytest.approx(150)
    assert (cell["n_literal"], cell["n_norm"]) == (3, 2) and cell["p"] == pytest.approx(p)
    assert cell["notes"] == [[1, "norm"]]  # the run that stopped before 300k; no literal seed diverged
    assert report.pair_data({**row, "dropped": 0})["notes"] is None
    assert report.pair_data({**row, "n_div": 2, "dropped": 0})["notes"] == [[2, "literal"]]
    assert report.pair_data(None) is None


def test_a_grid_cell_keeps_its_seeds_and_its_diverged_ones():
    row = {"final_mean": "-3363.2", "final_std": "", "n_seeds": "1", "n_diverged": "2"}
    assert report.final_data(row) == {"mean": -3363.2, "std": None, "n": 1, "diverged": 2}
    row = {"final_mean": "12.5", "final_std": "0.5", "n_seeds": "3", "n_diverged": "0"}
    assert report.final_data(row) == {"mean": 12.5, "std": 0.5, "n": 3, "diverged": None}
    none = {"final_mean": "", "final_std": "", "n_seeds": "0", "n_diverged": "3"}
    assert report.final_data(none) == {"mean": None, "std": None, "n": 0, "diverged": 3}
    assert report.final_data(None) is None


def test_the_committed_readings_page_is_its_template_on_the_committed_json():
    assert detail_body("readings.md") == report.render_readings(committed_json(report.READINGS_JSON))


def test_the_committed_readings_json_is_readings_data_on_the_committed_logs(stage1):
    d = report.Data(runs=stage1.runs, headline=[], final={}, diag={})
    assert committed_json(report.READINGS_JSON) == pages.committed(report.readings_data(d))


def test_the_earlier_grid_and_the_two_readings_recomputed(stage1):
    """The literal grid's cells are its final.csv; each pair of readings: the literal seeds' mean, the stage-1
    runs' finals over the first 300k steps, Welch's p by scipy; the verdict sentence groups the tasks by them."""
    g = committed_json(report.READINGS_JSON)["grid_300k"]
    final = {(r["task"], r["algo"]): r for r in stats.read_csv(os.path.join(report.GRID_300K, "final.csv"))}
    assert g["algos"] == [hparams.algo_label(a) for a in hparams.algos()]
    for row in g["rows"]:
        for a, cell in zip(hparams.algos(), row["cells"]):
            r = final[(row["task"], a)]
            assert cell["mean"] == pytest.approx(float(r["final_mean"]), rel=1e-5)
            assert cell["n"] == int(r["n_seeds"]) and (cell["diverged"] or 0) == int(r["n_diverged"] or 0)
    p = g["pairs"]
    assert p["span"] == 300_000
    algos = ["smac"] + [a for a in hparams.algos() if a != "smac"]
    assert p["algos"] == [hparams.algo_label(a) for a in algos]
    norm, dropped = report.first_steps_finals(stage1.runs, 300_000)
    for row in p["rows"]:
        for a, cell in zip(algos, row["cells"]):
            key = (row["task"], a)
            literal = [float(x) for x in final[key]["finals"].split(";") if stats.num(x) is not None]
            assert cell["literal"] == pytest.approx(np.mean(literal), rel=1e-5)
            assert cell["norm"] == pytest.approx(np.mean(norm[key]), rel=1e-5)
            assert (cell["n_literal"], cell["n_norm"]) == (len(literal), len(norm[key]))
            if len(literal) < 2:
                assert cell["p"] is None
            else:
                welch = sps.ttest_ind(norm[key], literal, equal_var=False).pvalue
                assert cell["p"] == pytest.approx(welch, rel=1e-5)
            assert dropped[key] == 0 and cell["notes"] == (
                [[int(final[key]["n_diverged"]), "literal"]] if int(final[key]["n_diverged"] or 0) else None
            )
    for label, verdict in zip(p["algos"], p["verdicts"]):
        col = p["algos"].index(label)
        by: dict = {}
        for row in p["rows"]:
            c = row["cells"][col]
            word = (
                "not distinguishable"
                if c["p"] is None or c["p"] >= 0.05
                else "ahead"
                if c["norm"] > c["literal"]
                else "behind"
            )
            by.setdefault(word, []).append(row["task"])
        assert verdict["algo"] == label and verdict["groups"] == sorted([w, ts] for w, ts in by.items())
        assert {w for w, _ in verdict["groups"]} <= set(report.READING_WORDS)
    sb3 = [t for t in hparams.tasks() if (t, "sb3-a2c") in final]
    assert [r["task"] for r in g["sb3"]] == sb3 and len(sb3) == 6
    for r in g["sb3"]:
        assert r["sb3"]["mean"] == pytest.approx(float(final[(r["task"], "sb3-a2c")]["final_mean"]), rel=1e-5)
        assert r["smac"] == g["rows"][hparams.tasks().index(r["task"])]["cells"][0]


def test_the_fidelity_scores_choice_and_rescoring_follow_the_claim_matrix():
    """Each reading's score is its claims held in the matrix, the table sorted by it; the choice is a top score;
    without the whole-run claim each score loses that claim where it held; the finals are finals.csv's."""
    f = committed_json(report.READINGS_JSON)["fidelity"]
    assert f["has_runs"] and f["budget"] == hparams.FIDELITY_BUDGET == 150_000
    assert f["bins"] == [1_500, 5_000] and f["stage1_budget"] == 500_000
    claims = [c for c in aggregate.CLAIMS if c["task"] in hparams.FIDELITY_TASKS]
    assert [c["id"] for c in f["claims"]] == [c["id"] for c in claims] and len(claims) == 10
    column = {n: [c["verdicts"][i] for c in f["claims"]] for i, n in enumerate(f["names"])}
    words = {v for vs in column.values() for v in vs}
    assert words <= set(report.CLAIM_WORD)
    held = [r["held"] for r in f["readings"]]
    assert held == sorted(held, reverse=True) and sorted(r["reading"] for r in f["readings"]) == sorted(
        f["names"]
    )
    for r in f["readings"]:
        assert r["held"] == column[r["reading"]].count("held") and r["evaluable"] == 10
        assert (r["union"] is None) == (r["reading"] in hparams.READINGS)
    top = {r["reading"] for r in f["readings"] if r["held"] == held[0]}
    assert f["chosen"] in top and f["chosen"] == "norm"
    whole = [c["id"] for c in claims if c["kind"] == "never_above"]
    assert f["rescored"]["without"] == whole == ["cartpole-kfac-40pct"]
    index = [c["id"] for c in f["claims"]].index(whole[0])
    rest = dict(f["rescored"]["scores"])
    for r in f["readings"]:
        assert rest[r["reading"]] == r["held"] - (column[r["reading"]][index] == "held")
    assert rest[f["rescored"]["chosen"]] == max(rest.values())
    fin = stats.read_csv(os.path.join(hparams.FIDELITY_RESULTS, "finals.csv"))
    by = {(r["reading"], r["task"], r["algo"]): float(r["final"]) for r in fin}
    cols = [(t, a) for t in hparams.FIDELITY_TASKS for a in hparams.PAPER_ALGOS]
    assert [c["paper"] for c in f["finals"]["columns"]] == [hparams.paper_result(t, a)[0] for t, a in cols]
    for row in f["finals"]["rows"]:
        assert row["finals"] == pytest.approx([by[(row["reading"], t, a)] for t, a in cols], rel=1e-5)
    assert f["envs_caveat"] == any("envs-8" in n for n in f["names"])
    check = committed_json(os.path.join(hparams.FIDELITY_RESULTS, "adam_check.json"))
    assert f["adam_check"]["steps"] == check["adam_steps"]
    assert f["adam_check"]["max_change"] <= f["adam_check"]["bound"]


def test_the_walker2d_check_counts_the_runs_of_each_reading():
    f = committed_json(report.READINGS_JSON)["fidelity"]
    assert [v["reading"] for v in f["walker2d"]] == [f["chosen"]] * 2 + ["literal"] * 2
    for v in f["walker2d"]:
        logs = os.path.join(report.REPO, "benchmark", "results", "logs", v["reading"])
        runs = [r for r in compact.discover_logs(logs) if r["task"] == "Walker2d"]
        assert v["runs"] == [sum(r["algo"] == a for r in runs) for a in ("smac", "cg")]
        assert v["verdict"] in report.CLAIM_WORD
    assert f["walker2d"][-1]["runs"][1] == 0 and f["walker2d"][-1]["verdict"] == "no runs"


def test_the_readings_template_renders_without_runs_or_grid(tmp_path):
    """No fidelity logs, no literal grid: the data says so (has_runs, grid_300k None) and the template renders."""
    data = report.fidelity_data(logs_dir=str(tmp_path), results_dir=str(tmp_path / "res"))
    assert data["has_runs"] is False and data["adam_check"] is None
    assert report.render_readings({"fidelity": data, "grid_300k": None})


# ---------------------------------------------------------------------------------------------
# deviations.md
# ---------------------------------------------------------------------------------------------
def test_the_committed_deviations_page_is_its_template_on_the_committed_json(stage1):
    data = committed_json(report.DEVIATIONS_JSON)
    assert detail_body("deviations.md") == pages.render("deviations.md.j2", data)
    assert data == pages.committed(report.deviations_data(stage1))


def test_the_budget_groups_cover_every_task_once_at_its_budget():
    groups = report.budget_groups()
    named = {"MuJoCo": hparams.tasks("mujoco")}
    tasks = [t for g in groups for n in g["names"] for t in named.get(n, [n])]
    assert sorted(tasks) == sorted(hparams.tasks())
    for g in groups:
        for n in g["names"]:
            assert all(aggregate.stage1_budget(t) == g["budget"] for t in named.get(n, [n]))
    assert [g["budget"] for g in groups] == [500_000, 2_000_000, 1_000_000]


def test_deviations_list_the_diverged_runs(stage1):
    assert committed_json(report.DEVIATIONS_JSON)["diverged"] is None
    assert not any(r["status"] == "diverged" for r in stage1.runs)
    run = {"task": "Hopper", "algo": "smac", "seed": 3, "status": "diverged", "last_step": 123_000}
    d = report.Data(runs=[{**run, "status": "finished"}, run], headline=[], final={}, diag={})
    data = report.deviations_data(d)
    assert data["diverged"] == [{"task": "Hopper", "algo": "smac", "seed": 3, "step": 123_000}]
    meta = hparams.load()["meta"]
    assert (data["kfac_fill_rule"], data["sgd_matched_rule"]) == (
        meta["kfac_fill_rule"],
        meta["sgd_matched_rule"],
    )


# ---------------------------------------------------------------------------------------------
# REPORT.md
# ---------------------------------------------------------------------------------------------
def equivalence(logs_dir: str, pre: dict) -> dict:
    """write_report's per-task paired comparisons: the stage-1 seeds 1-5, the pre-registered tasks' 20 seeds."""
    sc = prereg._scores([logs_dir])
    out = {
        t: prereg.paired(sc.get((t, "smac"), {}), sc.get((t, "sgd-matched"), {}), list(range(1, 6)), 0.1)
        for t in hparams.tasks()
    }
    out.update({r["task"]: r for r in pre["equivalence"]})
    return out


def test_the_committed_report_is_its_template_on_the_committed_json():
    text = committed_page("REPORT.md")
    date = re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", text).group(0)
    verdict = report.render_verdict(committed_json(report.VERDICT_JSON))
    assert text == pages.render(
        "report.md.j2", committed_json(report.REPORT_JSON), date=date, verdict=verdict
    )
    assert "date" not in committed_json(report.REPORT_JSON)


def test_the_committed_report_json_is_report_data_on_the_committed_logs(stage1):
    pre = prereg.analyze(prereg.load())
    res5 = prereg.analyze_5M(prereg.load_5M())
    data = report.report_data(stage1, equivalence(aggregate.stage1_logs(), pre), res5)
    assert committed_json(report.REPORT_JSON) == pages.committed(data)


def test_the_per_task_rows_recomputed():
    """SMAC, sgd-matched and the best paper baseline from cells.csv; the step ratio from the paper's rows; the TOST
    word from the 90 % CI against ±0.1; SMAC at 5M from the 5M page's data; the paper's SMAC from its table."""
    rows = committed_json(report.REPORT_JSON)["per_task"]
    cells = {(r["task"], r["algo"]): r for r in stats.read_csv(os.path.join(report.STAGE1, "cells.csv"))}
    five = {r["task"]: r for r in committed_json(prereg.PAGE_5M_JSON)["table"] if r["algo"] == "SMAC"}
    block1 = prereg.load()["blocks"]["equivalence"]["tasks"]
    assert [r["task"] for r in rows] == hparams.tasks()
    for r in rows:
        t = r["task"]
        for key, algo in (("smac", "smac"), ("matched", "sgd-matched")):
            assert r[key]["mean"] == pytest.approx(float(cells[(t, algo)]["mean"]), rel=1e-5)
            assert r[key]["std"] == pytest.approx(float(cells[(t, algo)]["std"]), rel=1e-5)
        base = {a: float(cells[(t, a)]["mean"]) for a in hparams.PAPER_ALGOS if a != "smac"}
        best = max(base, key=base.get)
        assert r["best"]["algo"] == hparams.algo_label(best)
        assert r["best"]["mean"] == pytest.approx(base[best], rel=1e-5)
        smac, sgd = hparams.settings(t, "smac"), hparams.settings(t, "sgd")
        ratio = smac["learning_rate"] / smac["damping"] / sgd["learning_rate"]
        assert r["step_ratio"] == pytest.approx(ratio, rel=1e-5)
        assert r["paper"] == list(hparams.paper_result(t, "smac"))
        e = r["equivalence"]
        assert e["n"] == (20 if t in block1 else 5)
        assert e["ci"][0] <= e["mean"] <= e["ci"][1]
        assert (e["answer"] == "equivalent") == (-0.1 < e["ci"][0] and e["ci"][1] < 0.1), t
        assert e["answer"] in report.EQUIV_WORDS and r["at_5M"]["kind"] in report.AT_5M_KINDS
        if hparams.group(t) == "mujoco":
            at5 = r["at_5M"]
            assert at5["kind"] == "final"
            assert [at5["mean"], at5["std"], at5["p"]] == pytest.approx(
                [five[t]["mean"], five[t]["sd"], five[t]["p"]], rel=1e-5
            )
        else:
            assert r["at_5M"] == {"kind": "same as stage 1"}


# ---------------------------------------------------------------------------------------------
# the report of a user's own logs (python -m benchmark.report --logs ... --out-dir ...)
# ---------------------------------------------------------------------------------------------
def test_a_report_of_ones_own_logs_is_its_template_on_its_json(tmp_path):
    """Constant returns: each final is that constant; mean ± std (ddof 1) and n over the seeds by hand; a cell not
    run is None; the algorithms in the registry's order; the page is the template on results/report.json."""
    from test_grid_report import write_log

    logs, out = tmp_path / "logs", tmp_path / "out"
    for seed, value in ((1, 400.0), (2, 410.0), (3, 430.0)):
        write_log(logs, "CartPole", "smac", seed, value)
    write_log(logs, "CartPole", "cg", 1, 300.0)
    write_log(logs, "Hopper", "sgd", 1, 50.0)
    write_log(logs, "Hopper", "sgd", 2, 0.0, status="diverged")
    path = report.logs_report(str(logs), str(out))
    data = committed_json(os.path.join(out, "results", "report.json"))
    assert data["runs"] == 6 and data["algos"] == ["SMAC", "AC-SGD", "AC-CG"]
    cart, hopper = data["rows"]
    assert (cart["task"], cart["budget"]) == ("CartPole", aggregate.stage1_budget("CartPole"))
    smac = cart["cells"][0]
    assert smac["n"] == 3 and smac["mean"] == pytest.approx(np.mean([400, 410, 430]), rel=1e-5)
    assert smac["std"] == pytest.approx(np.std([400, 410, 430], ddof=1), rel=1e-5)
    assert cart["cells"][1] is None and cart["cells"][2] == {
        "mean": pytest.approx(300.0),
        "std": None,
        "n": 1,
    }
    assert hopper["cells"][0] is None and hopper["cells"][1]["n"] == 1 and hopper["cells"][2] is None
    assert data["figures"] == sorted(f for f in os.listdir(out) if f.endswith(".png")) and data["figures"]
    with open(path, encoding="utf-8") as f:
        assert f.read() == pages.render("logs_report.md.j2", data)


def test_the_design_the_report_states_is_the_committed_grid_and_prereg():
    d = report.design()
    runs = compact.discover_logs(aggregate.stage1_logs())
    assert d["runs"] == len(runs) == d["tasks"] * d["algos"] * d["seeds"]
    assert {r["task"] for r in runs} == set(hparams.tasks()) and len({r["task"] for r in runs}) == d["tasks"]
    assert {r["algo"] for r in runs} == set(hparams.algos()) and len({r["algo"] for r in runs}) == d["algos"]
    assert sorted({r["seed"] for r in runs}) == list(range(1, d["seeds"] + 1))
    pre = prereg.page_prereg(prereg.load(), prereg.analyze(prereg.load()))
    assert {r["n"] for r in pre["block1"]["rows"]} == {d["paired_seeds"]}
    assert d["level"] == pre["levels"]["tost"] and d["margin"] == pre["margin"]
