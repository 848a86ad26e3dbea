"""The outside reference (benchmark/studies/sb3.py): its jobs against the sweep's, and one short SB3 A2C run writing
what the harness reads."""

import csv
import json
import os

import pytest

from benchmark import sweep
from benchmark.studies import sb3


def test_the_default_jobs_are_the_mujoco_tasks_at_300k():
    jobs = sb3.jobs(sweep.build_parser().parse_args(["--study", "sb3"]))
    assert {j.algo for j in jobs} == {"sb3-a2c"} and {j.budget for j in jobs} == {300_000}
    assert len(jobs) == 6 * 3 and {j.seed for j in jobs} == {1, 2, 3}


def test_one_short_run_writes_what_the_harness_reads(tmp_path):
    pytest.importorskip("stable_baselines3")
    assert sb3.main(["sb3-run", "CartPole", "1", "600", str(tmp_path)]) == 0
    out = tmp_path / "sb3"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["global_step"] == 600
    config = json.loads((out / "config.json").read_text())
    assert config["args"]["seed"] == 1 and config["args"]["total_timesteps"] == 600
    with open(out / "episodes.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(0 < int(r["global_step"]) <= 600 for r in rows)
    assert os.path.basename(str(out)) == "sb3"
