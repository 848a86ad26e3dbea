"""The sweep's faults, each a test: a budget that is not a whole
number of rollouts, a damaged compact log, one bad job among good ones, two sweeps of one study at once, a stale or
live extra run directory, and a trainer whose sweep died. Tiny budgets (T = 100 via --num-steps)."""

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest
from helpers import CARTPOLE, finished_run, lab_process, seed_summary

from benchmark import compact, report, sweep, trainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sweep_argv(runs, seeds, budget, *extra):
    """A grid of CartPole x sgd x seeds at T = 100, one worker."""
    argv = ["--tasks", "CartPole", "--algos", "sgd", "--seeds", seeds, "--num-steps", "100"]
    argv += [
        "--budget",
        str(budget),
        "--checkpoint-every",
        "1",
        "--workers",
        "1",
        "--progress-interval",
        "100",
        "--allow-dirty",  # tests run on a working tree with uncommitted edits
    ]
    return argv + ["--runs-dir", str(runs), *extra]


def seed_dir(runs, seed):
    return os.path.join(str(runs), "CartPole", "sgd", f"seed{seed}")


def train(runs, seed, steps):
    """A finished, checkpointed run of `steps` steps in the job's seed directory, made with the job's own flags (in
    process: no second start); returns its run directory."""
    before = set(os.listdir(seed_dir(runs, seed))) if os.path.isdir(seed_dir(runs, seed)) else set()
    job = sweep.make_jobs(
        ["CartPole"], ["sgd"], [seed], {"CartPole": steps}, str(runs), checkpoint_every=1, num_steps=100
    )[0]
    assert trainer.main(sweep.fresh_argv(job)) == 0
    (new,) = set(os.listdir(seed_dir(runs, seed))) - before
    return os.path.join(seed_dir(runs, seed), new)


def write_log(logs, seed, steps=200, budget=200):
    """A finished run's compact log, made by hand (deterministic bytes after the gzip header)."""
    rng = np.random.default_rng(seed)
    record = {
        "format": 1,
        "task": "CartPole",
        "algo": "sgd",
        "seed": seed,
        "budget": budget,
        "status": "finished",
        "global_step": steps,
        "updates_done": steps // 100,
        "wall_time_s": 1.0,
        "resumed_from_step": 0,
        "args": {"num_steps": 100, "num_envs": 1},
        "episodes": {
            "global_step": list(range(10, steps + 1, 10)),
            "episodic_return": [round(float(x), 3) for x in rng.uniform(10, 30, steps // 10)],
            "episodic_length": [10] * (steps // 10),
        },
        "updates": {c: [] for c in compact.UPDATE_COLS},
    }
    path = compact.log_path(str(logs), "CartPole", "sgd", seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(record, f)
    return path


def flip_a_byte(path):
    """One flipped byte in a compact log's deflate stream, the first from the middle on that makes reading it raise
    zlib.error (others make the CRC check fail)."""
    with open(path, "rb") as f:
        data = f.read()
    for i in range(len(data) // 2, len(data)):
        damaged = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :]
        try:
            zlib.decompress(damaged, 16 + zlib.MAX_WBITS)
        except zlib.error as e:
            if "incorrect data check" not in str(e):  # not the CRC: the stream itself
                break
    with open(path, "wb") as f:
        f.write(damaged)
    with pytest.raises(zlib.error):
        with gzip.open(path, "rt") as f:
            json.load(f)


def holding_a_list(path):
    """A gzip holding `[]`: valid JSON, not a log's record (AttributeError before)."""
    with gzip.open(path, "wt") as f:
        json.dump([], f)


# 1. a budget that is not a whole number of rollouts ------------------------------------------------------------
def test_a_budget_of_no_whole_rollouts_is_done_at_its_last_whole_rollout(tmp_path, capsys):
    """--budget 250 at T = 100 trains 200 steps: that is the job finished, not `failed (exit 0)`, and a second sweep
    leaves it alone (it relaunched a 0-step resume that rewrote summary.json)."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    argv = sweep_argv(runs, "1", 250, "--logs-dir", str(logs))
    assert sweep.main(argv) == 0, capsys.readouterr().out
    s = seed_summary(seed_dir(runs, 1))
    assert s["status"] == "finished" and s["global_step"] == 200
    path = os.path.join(compact.find_run_dir(seed_dir(runs, 1)), "summary.json")
    with open(path, "rb") as f:
        before = f.read()
    job = sweep.make_jobs(
        ["CartPole"], ["sgd"], [1], {"CartPole": 250}, str(runs), num_steps=100, logs_dir=logs
    )[0]
    assert sweep.inspect_job(job)[0] == "done"
    assert sweep.outcome(job, 0) == "finished"
    capsys.readouterr()
    assert sweep.main(argv) == 0
    assert "done: 1" in capsys.readouterr().out
    with open(path, "rb") as f:
        assert f.read() == before  # not rewritten
    assert len(open(os.path.join(seed_dir(runs, 1), "sweep.log")).read().split("\n$ ")) == 2  # one launch
    shutil.rmtree(compact.find_run_dir(seed_dir(runs, 1)))  # the compact log alone says done too
    assert sweep.inspect_job(job)[0] == "done"


# 2. a damaged compact log -----------------------------------------------------------------------------------------
def test_a_damaged_compact_log_is_named_set_aside_and_its_job_run_again(tmp_path, capsys):
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    flipped, listed = write_log(logs, 1), write_log(logs, 2)
    flip_a_byte(flipped)
    holding_a_list(listed)
    damaged = {}
    for path in (flipped, listed):
        with open(path, "rb") as f:
            damaged[path] = f.read()
    argv = sweep_argv(runs, "1,2", 200, "--logs-dir", str(logs))
    capsys.readouterr()
    assert sweep.main(argv + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    for seed, path in ((1, flipped), (2, listed)):
        assert len([line for line in out.splitlines() if path in line]) == 1, out
        job_line = next(line for line in out.splitlines() if line.startswith(f"CartPole/sgd/seed{seed} "))
        assert " fresh " in job_line, out  # not done
        assert os.path.isfile(path)  # a dry run moves nothing
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    assert "Traceback" not in out and "finished: 2" in out, out
    for path in (flipped, listed):
        assert [line for line in out.splitlines() if path in line], out
        with open(path + ".damaged", "rb") as f:
            assert f.read() == damaged[path]  # set aside, never deleted
        head = compact.header(path)  # the run's new log
        assert head["status"] == "finished" and head["global_step"] == 200


def test_the_report_skips_a_damaged_compact_log_and_names_it(tmp_path, capsys):
    logs, out_dir = tmp_path / "logs", tmp_path / "report"
    write_log(logs, 1)
    write_log(logs, 2)
    flipped, listed = write_log(logs, 3), write_log(logs, 4)
    flip_a_byte(flipped)
    holding_a_list(listed)
    capsys.readouterr()
    assert report.main(["--logs", str(logs), "--out-dir", str(out_dir)]) == 0
    err = capsys.readouterr().err
    for path in (flipped, listed):
        assert len([line for line in err.splitlines() if path in line]) == 1, err
    assert "Traceback" not in err
    with open(os.path.join(out_dir, "results", "report.json")) as f:  # what its REPORT.md prints
        assert json.load(f)["runs"] == 2
    assert [r["seed"] for r in compact.discover_logs(str(logs))] == [1, 2]


# 3. one bad job among good ones -------------------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["checkpoint", "updates header"])
def test_a_bad_job_fails_alone_and_the_jobs_after_it_run(tmp_path, capsys, damage):
    """A bit-flipped checkpoint.pt or a garbled updates.csv header in seed 1's run: seed 1 fails with one line (no
    ConfigError traceback, exit 1) and seed 2 runs to its budget."""
    runs = tmp_path / "runs"
    bad = train(runs, 1, 200)
    train(runs, 2, 200)
    if damage == "checkpoint":
        path = os.path.join(bad, "checkpoint.pt")
        with open(path, "rb") as f:
            data = bytearray(f.read())
        data[len(data) // 2] ^= 0xFF
        with open(path, "wb") as f:
            f.write(bytes(data))
    else:
        path = os.path.join(bad, "updates.csv")
        with open(path) as f:
            lines = f.read().splitlines()
        lines[0] = "upd@te,glob@l_step" + lines[0][len("update,global_step") :]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
    capsys.readouterr()
    assert sweep.main(sweep_argv(runs, "1,2", 400)) == 1  # some failed
    out = capsys.readouterr().out
    assert "Traceback" not in out
    failed = [
        line
        for line in out.splitlines()
        if line.startswith("[sweep] CartPole/sgd/seed1") and "failed" in line
    ]
    assert len(failed) == 1 and path in failed[0], out
    assert seed_summary(seed_dir(runs, 1))["global_step"] == 200  # untouched
    s = seed_summary(seed_dir(runs, 2))
    assert s["status"] == "finished" and s["global_step"] == 400
    assert "failed: 1" in out and "finished: 1" in out, out


# 4. two sweeps of one study at once -----------------------------------------------------------------------------------
def test_a_second_sweep_skips_a_job_the_first_is_running(tmp_path, capsys):
    """Sweep B starts while sweep A's trainer for the same job is still starting (no run directory yet): B skips the
    job A claimed (no second trainer, no second run directory)."""
    runs = tmp_path / "runs"
    argv = sweep_argv(runs, "1", 5000)
    first = subprocess.Popen(
        [sys.executable, "-m", "benchmark.sweep", *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.time() + 120
        while not os.path.isfile(os.path.join(seed_dir(runs, 1), "job.json")):  # A has launched its trainer
            assert first.poll() is None and time.time() < deadline, first.stdout.read()
            time.sleep(0.02)
        capsys.readouterr()
        assert sweep.main(argv) == 0
        out = capsys.readouterr().out
        assert first.poll() is None, "the first sweep ended before the second looked"
        assert "finished" not in out and "Traceback" not in out, out
        assert [line for line in out.splitlines() if line.startswith("[sweep] CartPole/sgd/seed1")], out
        assert sweep.main(argv + ["--dry-run"]) == 0
        job_line = capsys.readouterr().out.splitlines()[-1]
        assert job_line.startswith("CartPole/sgd/seed1 ") and " running " in job_line, job_line
        first_out, _ = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, first_out
    dirs = [d for d in os.listdir(seed_dir(runs, 1)) if os.path.isdir(os.path.join(seed_dir(runs, 1), d))]
    assert len(dirs) == 1, dirs
    assert seed_summary(seed_dir(runs, 1))["global_step"] == 5000
    capsys.readouterr()
    assert sweep.main(argv) == 0  # and now it is done
    assert "done: 1" in capsys.readouterr().out


def test_an_existing_double_run_directory_is_one_line_and_a_failed_job(tmp_path, capsys):
    """Two checkpointed run directories of one job (left by two sweeps at once): the job is reported and failed
    in one line, --dry-run included (no `RuntimeError: ... holds 2 run directories`); the others run."""
    runs = tmp_path / "runs"
    first = train(runs, 1, 200)
    second = train(runs, 1, 200)  # a run directory of its own (-2 when it starts in the same second)
    assert first != second
    capsys.readouterr()
    argv = sweep_argv(runs, "1,2", 300)
    assert sweep.main(argv + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if seed_dir(runs, 1) in line]
    assert len(lines) == 1 and "Traceback" not in out, out
    assert sweep.main(argv) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if seed_dir(runs, 1) in line]
    assert len(lines) == 1 and "failed" in lines[0], out
    assert "failed: 1" in out and "finished: 1" in out, out
    assert os.path.isdir(first) and os.path.isdir(second)  # both kept: the user chooses
    assert seed_summary(seed_dir(runs, 2))["global_step"] == 300


def test_sweep_recovers_from_a_stale_extra_directory_and_spares_a_live_one(tmp_path, capsys):
    seed_dir = tmp_path / "CartPole" / "sgd" / "seed1"
    good = finished_run(seed_dir)
    stale = seed_dir / "CartPole-v1__sgd__1__1"
    stale.mkdir()
    assert sweep.find_run_dir(str(seed_dir)) == good and not stale.exists()
    lines = [line for line in capsys.readouterr().out.splitlines() if stale.name in line]
    assert len(lines) == 1 and str(seed_dir) in lines[0]  # one line names the directory removed
    live = seed_dir / "CartPole-v1__sgd__1__2"
    live.mkdir()
    with trainer.RunLock(str(live)):
        with pytest.raises(compact.RunDirConflict) as conflict:
            sweep.find_run_dir(str(seed_dir))
    assert str(seed_dir) in str(conflict.value) and live.name in str(conflict.value)
    assert live.exists()


def test_trainer_of_a_dead_sweep_does_not_start(tmp_path):
    """A sweep killed while its trainers start: the child finds its parent gone and exits before training."""
    import functools

    proc = lab_process(
        tmp_path,
        "--runs-dir",
        str(tmp_path),
        *CARTPOLE,
        "--total-timesteps",
        "1000",
        preexec_fn=functools.partial(sweep._child_preexec, os.getpid() + 10**6),
    )  # not our pid
    proc.communicate(timeout=60)
    assert proc.returncode == 1 and not os.listdir(tmp_path)


def test_sweep_skips_a_job_whose_run_directory_is_live(tmp_path):
    job = sweep.make_jobs(["CartPole"], ["sgd"], [1], {"CartPole": 400}, str(tmp_path), num_steps=100)[0]
    run = finished_run(job.seed_dir)  # resumable
    with trainer.RunLock(run):
        assert sweep.prepare(job) == ("busy", None)
    assert sweep.prepare(job)[0] == "resume"
