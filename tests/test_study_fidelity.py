"""The fidelity study (benchmark/studies/fidelity.py): its jobs against the sweep's, the rule's choice and the
rescoring by hand, the Adam check on a short run, the earlier literal grid beside the stage-1 runs by hand, the
committed readings.json and CSVs against the data of the committed logs, and the committed page against its template
on the committed JSON."""

import json
import os
import types

import numpy as np
import pytest
from helpers import stepped_run
from scipy import stats as sps

from benchmark import compact, hparams, pages, stats, sweep
from benchmark import verdict as vd
from benchmark.studies import REPO, Where
from benchmark.studies import claims as claims_study
from benchmark.studies import fidelity as fid

BUDGET = 100_000


def committed_json(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def detail_body(name: str) -> str:
    """A committed detail page's body; the page must be page.md.j2 around it."""
    with open(os.path.join(REPO, "benchmark", "report", name), encoding="utf-8") as f:
        text = f.read()
    title, _, _, _, body = text.split("\n", 4)
    assert text == pages.render("page.md.j2", {"title": title[len("# ") :], "body": body})
    return body


def grid_data(runs: list) -> types.SimpleNamespace:
    """What the study reads of the grid study's Data: the stage-1 runs and the literal_vs_norm cache."""
    return types.SimpleNamespace(runs=runs, readings=None)


@pytest.fixture(scope="module")
def stage1_runs(committed_done):
    """The committed stage-1 runs, as the grid study loaded them."""
    return committed_done["grid"]["data"].runs


def test_readings_is_the_studys_option_and_an_unknown_reading_is_refused():
    import argparse

    p = argparse.ArgumentParser()
    fid.add_options(p)
    assert p.parse_args([]).readings == "all"
    args = sweep.build_parser().parse_args(["--study", "fidelity", "--readings", "no-such-reading"])
    with pytest.raises((KeyError, ValueError)):
        fid.jobs(args)


# ---- the rule's choice, the rescoring, the Adam check
def test_fidelity_choice_rule():
    rows = [
        {"reading": "literal", "held": 2, "changes": 0},
        {"reading": "sum", "held": 5, "changes": 1},
        {"reading": "minibatch-100", "held": 5, "changes": 1},
        {"reading": "norm", "held": 1, "changes": 1},
    ]
    assert fid.fidelity_choose(rows) == "sum"  # tie on score and changes: fewer actor steps per rollout
    rows[1]["held"] = 4
    assert fid.fidelity_choose(rows) == "minibatch-100"
    tie = [{"reading": "literal", "held": 3, "changes": 0}, {"reading": "relu", "held": 3, "changes": 1}]
    assert fid.fidelity_choose(tie) == "literal"
    assert hparams.reading_flags("sum+minibatch-10") == ["--loss-reduction", "sum", "--num-minibatches", "10"]
    # rescored without a claim: relu held 2 (one of them the dropped claim), literal 1 -> tie -> literal
    rows = [{"reading": "literal", "held": 1, "changes": 0}, {"reading": "relu", "held": 2, "changes": 1}]
    verdicts = {
        "literal": {"a": {"verdict": "held"}, "k": {"verdict": "not held"}},
        "relu": {"a": {"verdict": "held"}, "k": {"verdict": "held"}},
    }
    assert fid.fidelity_choose(rows) == "relu"
    rest = fid.rescored(rows, verdicts, {"k"})
    assert [r["held"] for r in rest] == [1, 1] and fid.fidelity_choose(rest) == "literal"


def test_adam_check_moves_within_adams_bound_and_loads_its_checkpoint_safely():
    """3 Adam steps of the paper's CartPole AC-Adam row: no parameter moves more than 3.2 eta per step
    ((1 - beta1) / sqrt(1 - beta2) = 3.16); the checkpoint is read by the trainer's weights_only loader."""
    c = fid.adam_check(budget=3000)
    assert c["adam_steps"] == 3 and c["seed"] == 1
    assert 0 < c["max_param_change"] <= c["bound"] == pytest.approx(3.2 * c["eta"] * 3)


# ---- the earlier literal grid beside the stage-1 runs
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
    finals, dropped = fid.first_steps_finals(runs, 300_000)
    assert sorted(finals[("Hopper", "smac")]) == pytest.approx([100.0, 200.0])
    assert dropped[("Hopper", "smac")] == 1
    final = {("Hopper", "smac"): {"budget": "300000", "finals": "175.24;172.047;279.989", "n_diverged": "0"}}
    steps, pairs = fid.reading_pairs(final, runs)
    row = pairs[("Hopper", "smac")]
    p = sps.ttest_ind([100.0, 200.0], [175.24, 172.047, 279.989], equal_var=False).pvalue
    assert steps == 300_000 and row["p"] == pytest.approx(p) and row["dropped"] == 1
    assert fid.reading_verdict(row) == "not distinguishable"  # p = 0.44
    assert fid.reading_verdict({**row, "p": 0.01}) == "behind"  # norm mean 150 < literal 209
    assert fid.reading_verdict({**row, "p": 0.01, "norm": np.array([300.0])}) == "ahead"
    assert fid.reading_verdict({**row, "p": None, "literal": np.array([209.0])}) == "not tested"  # one seed
    cell = fid.pair_data(row)
    assert cell["literal"] == pytest.approx((175.24 + 172.047 + 279.989) / 3)
    assert cell["norm"] == pytest.approx(150)
    assert (cell["n_literal"], cell["n_norm"]) == (3, 2) and cell["p"] == pytest.approx(p)
    assert cell["notes"] == [[1, "norm"]]  # the run that stopped before 300k; no literal seed diverged
    assert fid.pair_data({**row, "dropped": 0})["notes"] is None
    assert fid.pair_data({**row, "n_div": 2, "dropped": 0})["notes"] == [[2, "literal"]]
    assert fid.pair_data(None) is None


def test_literal_vs_norm_is_computed_once_and_groups_the_tasks():
    """Acrobot SMAC runs beside the earlier literal grid's finals at 300k: not distinguishable; no AC-SGD runs, no
    groups; the pairs are cached on the Data."""
    runs = [
        stepped_run("Acrobot", "smac", s, 20_000, low=-1000.0, high=-100.0, budget=500_000) for s in (1, 2)
    ]
    d = grid_data(runs)
    pairs = fid.literal_vs_norm(d)[1]
    assert fid.reading_by_verdict(pairs, "smac") == {"not distinguishable": ["Acrobot"]}
    assert fid.reading_by_verdict(pairs, "sgd") == {}
    assert d.readings is not None and fid.literal_vs_norm(d) is d.readings


def test_a_grid_cell_keeps_its_seeds_and_its_diverged_ones():
    row = {"final_mean": "-3363.2", "final_std": "", "n_seeds": "1", "n_diverged": "2"}
    assert fid.final_data(row) == {"mean": -3363.2, "std": None, "n": 1, "diverged": 2}
    row = {"final_mean": "12.5", "final_std": "0.5", "n_seeds": "3", "n_diverged": "0"}
    assert fid.final_data(row) == {"mean": 12.5, "std": 0.5, "n": 3, "diverged": None}
    none = {"final_mean": "", "final_std": "", "n_seeds": "0", "n_diverged": "3"}
    assert fid.final_data(none) == {"mean": None, "std": None, "n": 0, "diverged": 3}
    assert fid.final_data(None) is None


# ---- the committed page, JSON and CSVs
def test_the_committed_readings_page_is_its_template_on_the_committed_json():
    assert detail_body("readings.md") == pages.render("readings.md.j2", committed_json(fid.READINGS_JSON))


def test_the_committed_readings_json_is_readings_data_on_the_committed_logs(stage1_runs):
    assert committed_json(fid.READINGS_JSON) == pages.committed(fid.readings_data(grid_data(stage1_runs)))


def test_write_gives_the_committed_page_json_and_csvs(stage1_runs, tmp_path, monkeypatch):
    """Not committing: the page only; committing (the JSON and the CSVs redirected): the committed bytes."""
    where = Where(pages=str(tmp_path / "pages"), commit=False)
    paths = fid.write(fid.analyze(where, {"grid": {"data": grid_data(stage1_runs)}}), where)
    committed = os.path.join(REPO, "benchmark", "report", "readings.md")
    assert paths == [str(tmp_path / "pages" / "readings.md")]
    assert open(paths[0], "rb").read() == open(committed, "rb").read()
    results = tmp_path / "fidelity"
    results.mkdir()
    (results / "adam_check.json").write_bytes(open(os.path.join(fid.RESULTS, "adam_check.json"), "rb").read())
    monkeypatch.setattr(fid, "RESULTS", str(results))
    monkeypatch.setattr(fid, "READINGS_JSON", str(tmp_path / "readings.json"))
    where = Where(pages=str(tmp_path / "pages2"), commit=True)
    paths = fid.write(fid.analyze(where, {"grid": {"data": grid_data(stage1_runs)}}), where)
    assert paths[1] == str(tmp_path / "readings.json")
    assert (
        open(paths[1], "rb").read()
        == open(os.path.join(REPO, "benchmark", "results", "readings.json"), "rb").read()
    )
    assert open(paths[0], "rb").read() == open(committed, "rb").read()
    for name in ("scores.csv", "claims.csv", "finals.csv"):
        assert (results / name).read_bytes() == open(
            os.path.join(hparams.FIDELITY_RESULTS, name), "rb"
        ).read()


def test_the_committed_fidelity_csvs_are_what_the_committed_logs_give(tmp_path):
    fid.fidelity_score(results_dir=str(tmp_path))
    for name in ("scores.csv", "claims.csv", "finals.csv"):
        committed = open(os.path.join(hparams.FIDELITY_RESULTS, name), "rb").read()
        assert (tmp_path / name).read_bytes() == committed, name


def test_the_fidelity_section_reads_the_csvs_it_has_just_written(tmp_path):
    """The fidelity data writes the study's CSVs before its finals table reads them: its finals are those of the
    file it has just written."""
    data = fid.fidelity_data(results_dir=str(tmp_path), write=True)
    written = stats.read_csv(str(tmp_path / "finals.csv"))
    assert written and data["finals"] is not None
    by = {(r["reading"], r["task"], r["algo"]): float(r["final"]) for r in written}
    cols = [(t, a) for t in hparams.FIDELITY_TASKS for a in hparams.PAPER_ALGOS]
    assert [(c["task"], c["algo"]) for c in data["finals"]["columns"]] == [
        (t, hparams.algo_label(a)) for t, a in cols
    ]
    assert [r["reading"] for r in data["finals"]["rows"]] == data["names"]
    for row in data["finals"]["rows"]:
        assert row["finals"] == [by.get((row["reading"], t, a)) for t, a in cols]


def test_the_earlier_grid_and_the_two_readings_recomputed(stage1_runs):
    """The literal grid's cells are its final.csv; each pair of readings: the literal seeds' mean, the stage-1
    runs' finals over the first 300k steps, Welch's p by scipy; the verdict sentence groups the tasks by them."""
    g = committed_json(fid.READINGS_JSON)["grid_300k"]
    final = {(r["task"], r["algo"]): r for r in stats.read_csv(os.path.join(fid.GRID_300K, "final.csv"))}
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
    norm, dropped = fid.first_steps_finals(stage1_runs, 300_000)
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
            if c["p"] is None:
                word = "not tested"
            elif c["p"] >= 0.05:
                word = "not distinguishable"
            else:
                word = "ahead" if c["norm"] > c["literal"] else "behind"
            by.setdefault(word, []).append(row["task"])
        assert verdict["algo"] == label and verdict["groups"] == sorted([w, ts] for w, ts in by.items())
        assert {w for w, _ in verdict["groups"]} <= set(fid.READING_WORDS)
    sb3 = [t for t in hparams.tasks() if (t, "sb3-a2c") in final]
    assert [r["task"] for r in g["sb3"]] == sb3 and len(sb3) == 6
    for r in g["sb3"]:
        assert r["sb3"]["mean"] == pytest.approx(float(final[(r["task"], "sb3-a2c")]["final_mean"]), rel=1e-5)
        assert r["smac"] == g["rows"][hparams.tasks().index(r["task"])]["cells"][0]


def test_the_fidelity_scores_choice_and_rescoring_follow_the_claim_matrix():
    """Each reading's score is its claims held in the matrix, the table sorted by it; the choice is a top score;
    without the whole-run claim each score loses that claim where it held; the finals are finals.csv's."""
    f = committed_json(fid.READINGS_JSON)["fidelity"]
    assert f["has_runs"] and f["budget"] == hparams.FIDELITY_BUDGET == 150_000
    assert f["bins"] == [1_500, 5_000] and f["stage1_budget"] == 500_000
    assert f["rule"] == fid.FIDELITY_RULE.splitlines()
    claims = [c for c in claims_study.CLAIMS if c["task"] in hparams.FIDELITY_TASKS]
    assert [c["id"] for c in f["claims"]] == [c["id"] for c in claims] and len(claims) == 10
    column = {n: [c["verdicts"][i] for c in f["claims"]] for i, n in enumerate(f["names"])}
    assert {v for vs in column.values() for v in vs} <= set(vd.CLAIM_WORD)
    held = [r["held"] for r in f["readings"]]
    assert held == sorted(held, reverse=True)
    assert sorted(r["reading"] for r in f["readings"]) == sorted(f["names"])
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
    f = committed_json(fid.READINGS_JSON)["fidelity"]
    assert [v["reading"] for v in f["walker2d"]] == [f["chosen"]] * 2 + ["literal"] * 2
    for v in f["walker2d"]:
        logs = os.path.join(REPO, "benchmark", "results", "logs", v["reading"])
        runs = [r for r in compact.discover_logs(logs) if r["task"] == "Walker2d"]
        assert v["runs"] == [sum(r["algo"] == a for r in runs) for a in ("smac", "cg")]
        assert v["verdict"] in vd.CLAIM_WORD
    assert f["walker2d"][-1]["runs"][1] == 0 and f["walker2d"][-1]["verdict"] == "no runs"


def test_the_readings_template_renders_without_runs_or_grid(tmp_path):
    """No fidelity logs, no literal grid: the data says so (has_runs, grid_300k None) and the template renders."""
    data = fid.fidelity_data(logs_dir=str(tmp_path), results_dir=str(tmp_path / "res"))
    assert data["has_runs"] is False and data["adam_check"] is None
    assert pages.render("readings.md.j2", {"fidelity": data, "grid_300k": None})
