"""Every run records where it came from: the start time,
the git commit, whether tracked sources differed from it and the hash of their diff, the host, the CPU and the
versions, in config.json and in the compact log's header ("not a checkout" outside a git checkout); a resumed run
keeps its earlier starts; the sweep refuses to start jobs on a tree whose tracked sources differ from their commit
unless --allow-dirty (untracked files, its own new logs among them, never count); the report says per study which
commits and hosts made its logs ("not recorded" for older logs). The sweep's tests run in a git repository of their
own in tmp_path, made from this working tree's code, so they pass whatever is uncommitted here."""

import calendar
import hashlib
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
from helpers import ROOT, finished_run, one_line_error, run_main
from test_sweep_faults import write_log

from benchmark import compact, provenance, report

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None or not os.path.isdir(os.path.join(ROOT, ".git")), reason="no git")


def config(run):
    with open(os.path.join(run, "config.json")) as f:
        return json.load(f)


def git(repo, *argv):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    proc = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, env=env, check=True)
    return proc.stdout


def files_hash(repo, names):
    """sha256 over the files' names and contents' sha256, computed here from the files themselves."""
    digest = hashlib.sha256()
    for name in sorted(names):
        with open(os.path.join(repo, name), "rb") as f:
            digest.update(f"{name}\0{hashlib.sha256(f.read()).hexdigest()}\n".encode())
    return digest.hexdigest()


def the_machine_and_versions(start):
    """A start's host, CPU and versions are this machine's and this environment's."""
    assert start["host"] == socket.gethostname() and start["cpu"]
    assert start["python"] == sys.version.split()[0]
    for name in ("torch", "numpy", "gymnasium", "mujoco"):
        assert start[name] == importlib.metadata.version(name), name


@needs_git
def test_a_run_records_its_commit_machine_and_versions_in_config_and_compact_log(tmp_path):
    before = time.time()
    run = finished_run(tmp_path / "runs")
    (start,) = config(run)["provenance"]
    head = git(ROOT, "rev-parse", "HEAD").decode().strip()
    assert start["commit"] == head and start["step"] == 0
    started = calendar.timegm(time.strptime(start["started"], "%Y-%m-%dT%H:%M:%SZ"))
    assert before - 2 <= started <= time.time()
    # tracked sources differ from the commit here exactly when `git diff HEAD` over them names a file
    sources = [".", *(f":(exclude){p}" for p in provenance.NOT_SOURCES)]
    names = git(ROOT, "diff", "--name-only", "--no-renames", "HEAD", "--", *sources).decode().split()
    assert start["dirty"] == bool(names)
    present = all(os.path.isfile(os.path.join(ROOT, n)) for n in names)
    if present:
        assert start["diff_sha256"] == (files_hash(ROOT, names) if names else None)
    the_machine_and_versions(start)
    log = compact.pack(run, str(tmp_path / "seed1.json.gz"), "CartPole", "smac", 1, 200)
    assert compact.read_record(log)["provenance"] == [start]  # the compact log's header
    assert compact.load(log)["provenance"] == [start]


def test_a_resumed_run_keeps_its_earlier_starts(tmp_path):
    run = finished_run(tmp_path / "runs")
    (first,) = config(run)["provenance"]
    assert run_main(tmp_path / "runs", "--resume", run, "--total-timesteps", "400") == 0
    earlier, second = config(run)["provenance"]
    assert earlier == first and second["step"] == 200 and second["started"] >= first["started"]


def test_a_run_resumed_past_starts_it_did_not_record_says_so(tmp_path):
    """A run from before this record, resumed: its steps before the resume are marked "not recorded"."""
    run = finished_run(tmp_path / "runs")
    cfg = config(run)
    del cfg["provenance"]
    with open(os.path.join(run, "config.json"), "w") as f:
        json.dump(cfg, f)
    assert run_main(tmp_path / "runs", "--resume", run, "--total-timesteps", "400") == 0
    unknown, second = config(run)["provenance"]
    assert unknown["step"] == 0 and unknown["commit"] == unknown["host"] == provenance.NOT_RECORDED
    assert second["step"] == 200 and second["host"] == socket.gethostname()


def copy_of_the_code(dst):
    """This working tree's code (benchmark/ without its results and runs, smac_a2c.py, smac_kl.py, smac_numpy.py) and
    a README, in dst."""
    shutil.copytree(
        os.path.join(ROOT, "benchmark"),
        os.path.join(dst, "benchmark"),
        ignore=shutil.ignore_patterns("results", "runs*", "__pycache__"),
    )
    for name in (
        "smac_a2c.py",
        "smac_kl.py",
        "smac_numpy.py",
    ):  # the reference, kl_step_'s module, and the numpy port aggregate.py's toy study uses
        shutil.copy(os.path.join(ROOT, name), dst)
    with open(os.path.join(dst, "README.md"), "w") as f:
        f.write("a copy\n")
    return str(dst)


def in_copy(repo, module, *argv):
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.run(
        [sys.executable, "-m", module, *argv], cwd=repo, env=env, capture_output=True, text=True, timeout=600
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_outside_a_git_checkout_a_run_records_not_a_checkout(tmp_path):
    repo = copy_of_the_code(tmp_path / "code")
    argv = ["--env-id", "CartPole-v1", "--num-steps", "100", "--total-timesteps", "100", "--no-tensorboard"]
    code, out, err = in_copy(repo, "benchmark.trainer", *argv)
    assert code == 0, err
    (run,) = os.listdir(os.path.join(repo, "runs"))
    (start,) = config(os.path.join(repo, "runs", run))["provenance"]
    assert (
        start["commit"] == provenance.NOT_A_CHECKOUT
        and start["dirty"] is None
        and start["diff_sha256"] is None
    )
    the_machine_and_versions(start)


def logs_of(repo):
    return os.path.join(repo, "benchmark", "results", "logs", "test")


def logged_start(repo, seed):
    """The one start recorded in the copy's compact log of CartPole x sgd x seed."""
    (start,) = compact.load(compact.log_path(logs_of(repo), "CartPole", "sgd", seed))["provenance"]
    return start


def sweep_in(repo, runs, seeds, *extra):
    """The copy's sweep on CartPole x sgd at T = 100, 100 steps a run, its logs in the copy's results (untracked)."""
    logs = logs_of(repo)
    argv = [
        "--tasks",
        "CartPole",
        "--algos",
        "sgd",
        "--seeds",
        seeds,
        "--num-steps",
        "100",
        "--budget",
        "100",
    ]
    argv += ["--workers", "1", "--progress-interval", "100", "--runs-dir", str(runs), "--logs-dir", logs]
    return in_copy(repo, "benchmark.sweep", *argv, *extra)


@needs_git
def test_the_sweep_refuses_tracked_sources_that_differ_from_their_commit(tmp_path, monkeypatch):
    repo = copy_of_the_code(tmp_path / "repo")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "the code")
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    runs = tmp_path / "runs"
    # untracked files (a new module, the sweep's own new logs) and a changed README do not count
    with open(os.path.join(repo, "benchmark", "scratch.py"), "w") as f:
        f.write("x = 1\n")
    with open(os.path.join(repo, "README.md"), "a") as f:
        f.write("an edit of the documentation\n")
    code, out, err = sweep_in(repo, runs, "1")
    assert code == 0, out + err
    code, out, err = sweep_in(repo, runs, "1-2")  # seed 1's new log is untracked: the sweep goes on
    assert code == 0, out + err
    for seed in (1, 2):
        start = logged_start(repo, seed)
        assert start["commit"] == head and start["dirty"] is False and start["diff_sha256"] is None
    # a tracked source edited: one line naming it, exit 2, nothing started; --dry-run still lists the jobs
    with open(os.path.join(repo, "benchmark", "hparams.py"), "a") as f:
        f.write("# an uncommitted edit\n")
    listed = sorted(os.listdir(runs))
    code, out, err = sweep_in(repo, runs, "1-3")
    one_line_error(err, code, os.path.join("benchmark", "hparams.py"))
    assert sorted(os.listdir(runs)) == listed and not os.path.exists(runs / "CartPole" / "sgd" / "seed3")
    code, out, err = sweep_in(repo, runs, "1-3", "--dry-run")
    assert code == 0 and "CartPole/sgd/seed3" in out, out + err
    # --allow-dirty: the run records that the sources differed, and the hash of their diff
    code, out, err = sweep_in(repo, runs, "1-3", "--allow-dirty")
    assert code == 0, out + err
    start = logged_start(repo, 3)
    assert start["commit"] == head and start["dirty"] is True
    assert start["diff_sha256"] == files_hash(repo, ["benchmark/hparams.py"])
    # the hash names the code, whatever the user's git settings do to `git diff`'s text
    settings = {"diff.noprefix": "true", "color.diff": "always", "diff.mnemonicPrefix": "true"}
    settings["diff.algorithm"] = "histogram"
    monkeypatch.setenv("GIT_CONFIG_COUNT", str(len(settings)))
    for i, (key, value) in enumerate(settings.items()):
        monkeypatch.setenv(f"GIT_CONFIG_KEY_{i}", key)
        monkeypatch.setenv(f"GIT_CONFIG_VALUE_{i}", value)
    assert provenance.diff_hash(str(repo)) == start["diff_sha256"]


def test_the_report_says_per_study_which_commits_and_hosts_made_its_logs(tmp_path):
    older, newer = tmp_path / "logs" / "older", tmp_path / "logs" / "newer"
    write_log(older, 1)  # a log from before the record
    write_log(older, 2)
    run = finished_run(tmp_path / "runs")
    compact.pack(run, compact.log_path(str(newer), "CartPole", "smac", 1), "CartPole", "smac", 1, 200)
    (start,) = config(run)["provenance"]
    rows = {r["study"]: r for r in report.provenance_data([str(older), str(newer)])}
    old = rows[os.path.relpath(older, report.REPO)]
    assert old["logs"] == 2
    assert old["commits"] == old["hosts"] == [[provenance.NOT_RECORDED, 2]]
    new = rows[os.path.relpath(newer, report.REPO)]
    assert new["logs"] == 1 and new["commits"] == [[provenance.code_of(start), 1]]
    assert new["hosts"] == [[provenance.host_of(start), 1]] and socket.gethostname() in new["hosts"][0][0]


def test_the_report_follows_no_directory_link_in_the_logs(tmp_path, capsys):
    """Links back up the logs tree once made the report count a log many times (one link) or never end (two); each
    is named in one line and left out, and the count is the logs'."""
    logs = tmp_path / "logs"
    for seed in (1, 2, 3, 4):
        write_log(logs, seed)
    os.symlink("..", logs / "CartPole" / "m1")
    assert report.provenance_data([str(logs)])[0]["logs"] == 4
    (line,) = capsys.readouterr().err.splitlines()
    assert str(logs / "CartPole" / "m1") in line
    os.symlink("..", logs / "CartPole" / "m2")

    def stop(*_):
        raise TimeoutError("the report did not finish in 20 s")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    try:
        assert report.provenance_data([str(logs)])[0]["logs"] == 4
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before)
    assert len(capsys.readouterr().err.splitlines()) == 2
