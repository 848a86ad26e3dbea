"""The normalization-defaults sweep (benchmark/studies/defaults.py): its jobs against the sweep's, the rule's score
by hand, docs/defaults_sweep.csv from the committed logs, and the command's refusal without the runs."""

import os

import numpy as np
import pytest

from benchmark.studies import REPO, Where, defaults


def test_the_jobs_cover_every_setting_task_algorithm_and_seed_longest_first():
    jobs = defaults.defaults_jobs([1, 2], runs_dir="/tmp/r", logs_dir="/tmp/l")
    assert len(jobs) == 4 * 3 * 3 * 2
    assert [j.budget for j in jobs] == sorted((j.budget for j in jobs), reverse=True)
    hopper = [j for j in jobs if j.task == "Hopper" and j.algo == "smac" and j.tag == "none"][0]
    assert hopper.flags[hopper.flags.index("--damping") + 1] == "1.0" and hopper.budget == 300_000
    assert hopper.extra_flags == defaults.SETTINGS["none"] and hopper.logs_dir == "/tmp/l/none"
    assert all("--damping" not in j.flags for j in jobs if j.algo != "smac")


def test_the_rules_score_by_hand():
    """Two settings, one task, the three algorithms: min-max per task over every setting and algorithm, the mean
    over the cells of each setting."""
    rows = []
    finals = {
        "a": {"smac": [10.0, 20.0], "sgd": [0.0, 0.0], "adam": [30.0, 30.0]},
        "b": {"smac": [40.0, 40.0]},
    }
    finals["b"].update(sgd=[20.0, 20.0], adam=[10.0, 10.0])
    for setting, by_algo in finals.items():
        for algo, values in by_algo.items():
            rows += [
                {"setting": setting, "env_id": "X-v1", "algo": algo, "final_return": str(v)} for v in values
            ]
    mean, envs, score = defaults.scores(rows, settings={"a": [], "b": []})
    assert envs == ["X-v1"] and mean[("a", "X-v1", "smac")] == 15.0
    assert score["a"] == pytest.approx(np.mean([15 / 40, 0.0, 30 / 40]), rel=1e-9)
    assert score["b"] == pytest.approx(np.mean([1.0, 0.5, 0.25]), rel=1e-9)


def test_write_gives_the_committed_csv(tmp_path, monkeypatch):
    monkeypatch.setattr(defaults, "CSV", str(tmp_path / "defaults_sweep.csv"))
    where = Where(pages=str(tmp_path))
    assert defaults.write(defaults.analyze(where, {}), where) == [str(tmp_path / "defaults_sweep.csv")]
    committed = os.path.join(REPO, "docs", "defaults_sweep.csv")
    assert (tmp_path / "defaults_sweep.csv").read_bytes() == open(committed, "rb").read()


def test_without_runs_nothing_is_written_and_the_command_refuses(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(defaults, "LOGS", str(tmp_path / "logs"))
    monkeypatch.setattr(defaults, "CSV", str(tmp_path / "defaults_sweep.csv"))
    where = Where(pages=str(tmp_path))
    assert defaults.write(defaults.analyze(where, {}), where) == []
    assert not (tmp_path / "defaults_sweep.csv").exists()
    assert defaults.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: 0 runs")


def test_the_command_prints_every_settings_score_and_the_rules_choice(capsys):
    assert defaults.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + len(defaults.SETTINGS) + 1 and out[-1].split(": ")[1] in defaults.SETTINGS
