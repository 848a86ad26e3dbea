"""REPORT.md, its verdict and README's Results block (benchmark/report.py, benchmark/verdict.py): the report's own
data (per-task rows, deviations) against independent recomputations, the committed JSON against the data functions on
the committed logs, the committed pages against their templates on the committed JSON, the verdict's words and counts,
and the whole loop over the studies on hand-made runs."""

import json
import os
import re

import numpy as np
import pytest
from helpers import write_log

from benchmark import aggregate, hparams, pages, report, stats, verdict
from benchmark.studies import grid, mujoco_5M, prereg


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
def stage1(committed_done):
    """The committed stage-1 runs as the grid study's Data, with their cells."""
    return committed_done["grid"]["data"]


def test_the_committed_deviations_page_is_its_template_on_the_committed_json(stage1):
    data = committed_json(grid.DEVIATIONS_JSON)
    assert detail_body("deviations.md") == pages.render("deviations.md.j2", data)
    assert data == pages.committed(grid.deviations_data(stage1))


def test_deviations_list_the_diverged_runs(stage1):
    assert committed_json(grid.DEVIATIONS_JSON)["diverged"] is None
    assert not any(r["status"] == "diverged" for r in stage1.runs)
    run = {"task": "Hopper", "algo": "smac", "seed": 3, "status": "diverged", "last_step": 123_000}
    d = grid.Data(runs=[{**run, "status": "finished"}, run], headline=[], final={}, diag={})
    data = grid.deviations_data(d)
    assert data["diverged"] == [{"task": "Hopper", "algo": "smac", "seed": 3, "step": 123_000}]
    meta = hparams.load()["meta"]
    assert (data["kfac_fill_rule"], data["sgd_matched_rule"]) == (
        meta["kfac_fill_rule"],
        meta["sgd_matched_rule"],
    )


def test_the_committed_report_is_its_template_on_the_committed_json():
    text = committed_page("REPORT.md")
    date = re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", text).group(0)
    rendered = verdict.render(committed_json(verdict.VERDICT_JSON))
    assert text == pages.render(
        "report.md.j2", committed_json(report.REPORT_JSON), date=date, verdict=rendered
    )
    assert "date" not in committed_json(report.REPORT_JSON)


def test_the_committed_report_json_is_report_data_on_the_committed_logs(committed_done):
    """report_data from the studies' results: the grid's Data and its stage-1 paired comparisons (seeds 1-5), the
    pre-registered study's block 1 (20 seeds), MuJoCo at 5M."""
    assert committed_json(report.REPORT_JSON) == pages.committed(report.report_data(committed_done))


def test_the_per_task_rows_recomputed():
    """SMAC, sgd-matched and the best paper baseline from cells.csv; the step ratio from the paper's rows; the TOST
    word from the 90 % CI against ±0.1; SMAC at 5M from the 5M page's data; the paper's SMAC from its table."""
    rows = committed_json(report.REPORT_JSON)["per_task"]
    cells = {(r["task"], r["algo"]): r for r in stats.read_csv(os.path.join(grid.STAGE1, "cells.csv"))}
    five = {r["task"]: r for r in committed_json(mujoco_5M.PAGE_5M_JSON)["table"] if r["algo"] == "SMAC"}
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
        assert e["answer"] in mujoco_5M.EQUIV_WORDS and r["at_5M"]["kind"] in mujoco_5M.AT_5M_KINDS
        if hparams.group(t) == "mujoco":
            at5 = r["at_5M"]
            assert at5["kind"] == "final"
            assert [at5["mean"], at5["std"], at5["p"]] == pytest.approx(
                [five[t]["mean"], five[t]["sd"], five[t]["p"]], rel=1e-5
            )
        else:
            assert r["at_5M"] == {"kind": "same as stage 1"}


def test_a_report_of_ones_own_logs_is_its_template_on_its_json(tmp_path):
    """Constant returns: each final is that constant; mean ± std (ddof 1) and n over the seeds by hand; a cell not
    run is None; the algorithms in the registry's order; the page is the template on results/report.json."""
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


def committed_verdict() -> dict:
    with open(verdict.VERDICT_JSON, encoding="utf-8") as f:
        return json.load(f)


def test_readme_results_block_is_the_rendering_of_the_committed_verdict():
    text = open(verdict.README, encoding="utf-8").read()
    begin, end = verdict.README_MARKERS
    block = text.split(begin, 1)[1].split(end, 1)[0]
    assert block == "\n" + verdict.render(committed_verdict(), base="benchmark/", short=True)
    path = os.path.join(os.path.dirname(verdict.README), "benchmark", "REPORT.md")
    assert verdict.render(committed_verdict()) in open(path, encoding="utf-8").read()
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
    assert words and set(words) <= set(verdict.VOCAB), set(words) - set(verdict.VOCAB)
    rows = {r["id"]: r for r in data["rows"]}
    assert list(rows) == ["claims", "table", "headline", "sgd_stage1", "sgd_5M", "rank1", "ell"]
    claims = rows["claims"]
    assert sum(n for _, n in claims["answer"]) == sum(n for _, n in claims["numbers"]["pre_run"]) == 22
    assert sum(n for _, n in claims["numbers"]["at_5M"]) == claims["numbers"]["n_5M"] == 6
    table = rows["table"]["numbers"]
    assert table["cells"] == table["classic"]["cells"] + table["mujoco_5M"]["cells"] == 25
    matched = [
        g for g in (table["classic"], table["mujoco_5M"]) if g["matched"]
    ]  # the answer counts these only
    assert rows["table"]["answer"] == [["different (Welch)", sum(g["differ"] for g in matched)]]
    assert rows["table"]["of"] == sum(g["cells"] for g in matched) == 10
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
        assert r["answer"] == verdict.tally(listed) and r["of"] == len(listed), key
    for t in rows["sgd_5M"]["numbers"]["tasks"] + rows["rank1"]["numbers"]["tasks"]:
        inside = -t["reach_margin"] < t["ci"][0] and t["ci"][1] < t["reach_margin"]
        assert t["reach_answer"] == ("secondary passes" if inside else "secondary fails"), t
        inside = -verdict.EQUIV_MARGIN < t["ci"][0] and t["ci"][1] < verdict.EQUIV_MARGIN
        assert (t["answer"] == verdict.EQUIVALENT) == inside, t
    slope = rows["rank1"]["numbers"]["slope"]
    assert slope["span"] == pytest.approx([slope["decades"] * x for x in slope["ci"]], rel=1e-4)
    held = data["points"]["held"]
    assert len(held["ahead"]) + len(held["not_ahead"]) == held["n"] == dict(claims["answer"])["held"]


def test_verdict_words_by_hand():
    assert verdict.tally(["not held", "held", "not held", verdict.NOT_SHOWN]) == [
        ["held", 1],
        ["not held", 2],
        [verdict.NOT_SHOWN, 1],
    ]
    r = {"equivalent": False, "p_holm": 0.01}
    assert verdict.block_c_word(r) == verdict.DIFFERENT
    assert verdict.block_c_word({**r, "p_holm": 0.2}) == verdict.NOT_SHOWN
    assert verdict.block_c_word({**r, "p_holm": float("nan")}) == verdict.NOT_SHOWN
    assert verdict.block_c_word({**r, "equivalent": True}) == verdict.EQUIVALENT == "equivalent at ±0.1"
    assert pages.committed({"a": (1.23456789, float("nan")), "b": np.float64(2.0), "c": np.bool_(True)}) == {
        "a": [1.23457, None],
        "b": 2.0,
        "c": True,
    }


def test_the_opening_sentences_say_no_more_than_the_rows():
    """verdict.summary on the committed rows and the numbers the 5M study declares beside them (mujoco_5M.verdict):
    each number is its row's, recounted here from the row's own task lists, or the point's; the curvature word is
    NOT_SHOWN exactly when no task of either row is different after Holm."""
    committed = committed_verdict()
    rows = {r["id"]: r for r in committed["rows"]}
    points = committed["points"]
    declared = {k: committed["summary"][k] for k in ("table",)}
    declared["sgd_5M"] = {"can_speak": committed["summary"]["sgd_5M"]["can_speak"]}
    s = verdict.summary(rows, points, declared)
    assert s["table"] == rows["table"]["numbers"]["mujoco_5M"]  # the MuJoCo cells at 5M
    assert s["headline"]["answer"] == rows["headline"]["answer"]
    assert [s["headline"]["smac"], s["headline"]["cg"], s["headline"]["p"]] == [
        rows["headline"]["numbers"][k] for k in ("smac", "cg", "p")
    ]
    claims = rows["claims"]
    assert (
        s["claims"]["held"] == dict(claims["answer"]).get("held", 0)
        and s["claims"]["of"] == claims["numbers"]["n"]
    )
    five = [t["answer"] for t in rows["sgd_5M"]["numbers"]["tasks"]]
    speaks = points["curvature"]["speaks"]["5M"]["groups"].get("can speak to curvature", [])
    assert s["sgd_5M"] == {
        "equivalent": five.count(verdict.EQUIVALENT),
        "different": five.count(verdict.DIFFERENT),
        "of": len(five),
        "can_speak": len(speaks),
        "holm": [  # still equivalent with TOST's p Holm-adjusted
            t["task"]
            for t in rows["sgd_5M"]["numbers"]["tasks"]
            if t["answer"] == verdict.EQUIVALENT and t["p_tost_holm"] < 0.05
        ],
    }
    largest = [t["answer"] for t in rows["rank1"]["numbers"]["tasks"]]
    assert s["rank1"]["neither"] == largest.count(verdict.NOT_SHOWN) and s["rank1"]["of"] == len(largest)
    different = five.count(verdict.DIFFERENT) + largest.count(verdict.DIFFERENT)
    assert s["curvature"] == (verdict.DIFFERENT if different else verdict.NOT_SHOWN)
    rows["sgd_5M"] = {
        **rows["sgd_5M"],
        "answer": [[verdict.DIFFERENT, 1]],
    }  # one task apart: the word follows
    assert verdict.summary(rows, points, declared)["curvature"] == verdict.DIFFERENT
    assert verdict.summary({}, {})["curvature"] is None  # no rows, no sentences


def test_readme_results_are_at_most_five_lines_before_a_short_table():
    """README's own rendering: a summary of at most five lines, then a table of three columns (question, answer,
    link) with a row per question of the full verdict, then at most one line (its terms); REPORT.md keeps the full
    table."""
    text = open(verdict.README, encoding="utf-8").read()
    block = text.split(verdict.README_MARKERS[0], 1)[1].split(verdict.README_MARKERS[1], 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    table = [i for i, line in enumerate(lines) if line.startswith("|")]
    assert 0 < table[0] <= 5 and table == list(range(table[0], table[-1] + 1)) and len(lines) - table[-1] <= 2
    assert {line.count("|") for line in lines[table[0] : table[-1] + 1]} == {4}
    assert len(table) - 2 == len(committed_verdict()["rows"])


def test_readme_results_name_the_reading_and_give_the_paper_literal_headline():
    """README's results say which reading every run behind them uses (the stage-1 grid's, the one the fidelity study
    chose) and give the headline under the paper-literal reading beside it, from the pre-registered study's block 3."""
    data = committed_verdict()
    reading = data["design"]["reading"]
    assert reading["name"] == hparams.load()["meta"]["grid_readings"]["stage1"]
    assert (
        reading["name"]
        == committed_json(os.path.join(report.REPO, "benchmark", "results", "readings.json"))["fidelity"][
            "chosen"
        ]
    )
    assert reading["description"] == hparams.READINGS[reading["name"]][2]
    literal = next(r for r in data["rows"] if r["id"] == "headline")["numbers"]["literal"]
    block3 = committed_json(os.path.join(report.REPO, "benchmark", "results", "prereg.json"))["block3"]
    assert [literal["smac"], literal["cg"]] == [r["mean"] for r in block3["rows"][:2]]
    assert literal["p"] == block3["smac_vs_cg"]["p"]
    short = verdict.render(data, short=True)
    head = short.split("\n|", 1)[0]
    for number in (literal["smac"], literal["cg"], data["summary"]["headline"]["smac"]):
        assert stats.fmt(number) in head
    assert f"`{reading['name']}`" in head and reading["description"] in head
