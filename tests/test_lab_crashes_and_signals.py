"""The lab's run layer never loses a run (issue 35's cases, against the reference until issue 43 moved the run
machinery to benchmark/runlayer.py): output that cannot be written, signals at any moment, crashes (also when the
crash path cannot write), budgets, learning rates float32 cannot hold, run directories, empty spaces, W&B without
a login, and the order of things that kept --capture-video alive with CUDA builds of torch. Each case runs
`python -m benchmark.trainer` in tmp_path (its runs in tmp_path/runs), or its functions in this process."""

import errno
import json
import os
import pty
import resource
import select
import shutil
import signal
import subprocess
import time

import gymnasium as gym
import helpers
import numpy as np
import pytest
import torch
from helpers import CARTPOLE, checkpoint, lab_process, only_run, summary, wait_for_updates


# ---- 1, 2: output that cannot be written never stops training -------------------------------------------
def test_a_reader_that_leaves_does_not_stop_the_run(tmp_path):
    """`smac_a2c.py ... | head -1`: the first progress line is read, then the pipe breaks."""
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "4000")
    assert proc.stdout.readline().startswith(b"step 1,000/4,000 | update 10")
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "finished" and checkpoint(run)["global_step"] == 4000


def test_a_closed_stdout_does_not_stop_the_run(tmp_path):
    """`smac_a2c.py ... >&-`: Python starts with sys.stdout None."""
    proc = lab_process(
        tmp_path, *CARTPOLE, "--total-timesteps", "2000", stdout=None, preexec_fn=lambda: os.close(1)
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "finished" and checkpoint(run)["global_step"] == 2000


def test_a_terminal_that_disappears_does_not_stop_the_run(tmp_path):
    """An SSH drop: stdout is a terminal (the progress bar draws), then its other end closes: writes give EIO."""
    master, slave = pty.openpty()
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "40000", stdout=slave)
    os.close(slave)
    ready, _, _ = select.select([master], [], [], 120)
    assert ready and os.read(master, 1000)  # the bar drew something
    os.close(master)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "finished" and checkpoint(run)["global_step"] == 40000


def test_sighup_with_a_broken_stdout_is_an_interruption(tmp_path):
    """A closing SSH session: SIGHUP, and the terminal gone. The closing line fails; the run is still
    `interrupted`, exit 129 (it was `crashed`, exit 1: the crash path overwrote the summary)."""
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "100000000", "--num-steps", "200")
    wait_for_updates(tmp_path / "runs", 3)
    proc.stdout.close()
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 129 and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "interrupted" and summary(run)["signal"] == "SIGHUP"
    assert checkpoint(run)["update"] == summary(run)["updates"]


# ---- 3, 4: crashes keep the last good state; the crash path itself never raises ----------------------
class RemovesItsRunThenRaises(helpers.RaisesAt250):
    """On its 250th step removes runs/ (the run directory with it), then raises."""

    def step(self, action):
        if self.steps == 249:
            shutil.rmtree("runs")
        return super().step(action)


gym.register("RaisesAt250-v0", entry_point=helpers.RaisesAt250)
gym.register("RemovesItsRunThenRaises-v0", entry_point=RemovesItsRunThenRaises)


def test_a_crash_at_default_flags_keeps_the_last_completed_update(tmp_path):
    """No --checkpoint-every: the crash in the third rollout keeps the state after update 2 as checkpoint.pt."""
    proc = lab_process(tmp_path, "--env-id", "test_run_layer:RaisesAt250-v0", "--num-steps", "100")
    _, err = proc.communicate(timeout=300)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("crashed: RuntimeError"), err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "crashed"
    ckpt = checkpoint(run)
    assert ckpt["update"] == 2 and ckpt["global_step"] == 200
    assert len(open(os.path.join(run, "updates.csv")).read().splitlines()) == 1 + 2
    assert "the simulator fell over" in open(os.path.join(run, "traceback.txt")).read()


def test_a_crash_path_that_cannot_write_says_so_in_one_line(tmp_path):
    """The run directory removed before the crash: no chained tracebacks, one line naming what was lost."""
    env_id = "test_run_layer:RemovesItsRunThenRaises-v0"
    proc = lab_process(tmp_path, "--env-id", env_id, "--num-steps", "100", "--no-tensorboard")
    _, err = proc.communicate(timeout=300)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in err.decode(), err
    assert "could not write checkpoint.pt, traceback.txt, summary.json" in lines[0]


def test_a_full_disk_during_the_crash_path_keeps_the_run_consistent(tmp_path):
    """Every file above 20 kB fails (RLIMIT_FSIZE): the checkpoint cannot be saved at all; the crash is still
    one line, the traceback and the summary are written, and no half-written checkpoint stays."""

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    proc = lab_process(
        tmp_path, "--env-id", "test_run_layer:RaisesAt250-v0", "--num-steps", "100", preexec_fn=small_files
    )
    _, err = proc.communicate(timeout=300)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, err
    assert "traceback in" in lines[0] and "could not write checkpoint.pt" in lines[0]
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "crashed" and not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))


# ---- 5: signals from the moment the run directory exists ---------------------------------------------
class SignalsOnItsSecondBuild(gym.Env):
    """Sends this process a signal when built the second time: main's check has built it once, the run
    directory exists, and train() builds it again (before its loop)."""

    builds = 0
    signal_name = "SIGTERM"

    def __init__(self):
        SignalsOnItsSecondBuild.builds += 1
        if SignalsOnItsSecondBuild.builds == 2:
            os.kill(os.getpid(), getattr(signal, os.environ["SEND_SIGNAL"]))
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), 1.0, False, False, {}


gym.register("SignalsOnItsSecondBuild-v0", entry_point=SignalsOnItsSecondBuild)


@pytest.mark.parametrize("name,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_before_the_first_rollout_is_a_clean_interruption(tmp_path, name, code):
    env = {**os.environ, "SEND_SIGNAL": name}
    proc = lab_process(
        tmp_path, "--env-id", "test_run_layer:SignalsOnItsSecondBuild-v0", *CARTPOLE[2:], env=env
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "interrupted" and summary(run)["signal"] == name
    assert checkpoint(run)["global_step"] == 0


# ---- 6, 7, 8: budgets, --norm-adv on one transition, learning rates float32 cannot hold ----------------
def test_the_budget_is_rounded_down_to_whole_rollouts_and_one_rollout_is_the_least(tmp_path):
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "250")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and b"trains 200 steps" in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "finished" and summary(run)["global_step"] == 200
    shutil.rmtree(tmp_path / "runs")
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "10")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and b"--total-timesteps" in err
    assert not os.path.exists(tmp_path / "runs")


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--num-steps", "1", "--norm-adv"], "--norm-adv"),
        (["--learning-rate", "1e300"], "--learning-rate"),
        (["--critic-learning-rate", "1e38"], "--critic-learning-rate"),
        (["--exp-name", "x" * 300], "File name too long"),
    ],
)
def test_bad_input_of_the_probe_is_one_line_and_exit_2(tmp_path, argv, needle):
    proc = lab_process(tmp_path, "--env-id", "CartPole-v1", "--total-timesteps", "1000", *argv)
    _, err = proc.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and needle in lines[0], err
    assert not os.listdir(tmp_path / "runs") if os.path.isdir(tmp_path / "runs") else True


def test_a_critic_that_blows_up_is_a_divergence(tmp_path):
    """A critic rate that float32 holds but the critic does not survive: its parameters are checked with the
    actor's, so the run ends diverged (exit 3) with finite networks in the checkpoint."""
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "1000", "--critic-learning-rate", "1e37")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3 and b"diverged at update" in err and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    ckpt = checkpoint(run)
    assert all(torch.isfinite(v).all() for v in ckpt["critic"].values())
    assert all(torch.isfinite(v).all() for v in ckpt["actor"].values())


# ---- 9, 10, 11, 12: run directories, empty spaces, W&B ---------------------------------------------------
def test_a_run_directory_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    from benchmark import trainer

    mkdir, makedirs = os.mkdir, os.makedirs

    def read_only(make):
        def refuse(path, *a, **k):
            if str(path).startswith("runs"):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
            return make(path, *a, **k)

        return refuse

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "mkdir", read_only(mkdir))
    monkeypatch.setattr(os, "makedirs", read_only(makedirs))
    assert trainer.main([*CARTPOLE, "--total-timesteps", "100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Read-only file system" in err[0]


class EmptyActions(helpers.RaisesAt250):
    def __init__(self):
        super().__init__()
        self.action_space = gym.spaces.Box(-1.0, 1.0, (0,), np.float32)


class EmptyObservations(helpers.RaisesAt250):
    def __init__(self):
        super().__init__()
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (0,), np.float64)


gym.register("EmptyActions-v0", entry_point=EmptyActions)
gym.register("EmptyObservations-v0", entry_point=EmptyObservations)


@pytest.mark.parametrize("env_id", ["test_run_layer:EmptyActions-v0", "test_run_layer:EmptyObservations-v0"])
def test_spaces_of_shape_zero_are_refused(tmp_path, env_id):
    proc = lab_process(tmp_path, "--env-id", env_id, "--num-steps", "100", "--total-timesteps", "200")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and b"unsupported" in err, err
    assert not os.path.exists(tmp_path / "runs")


def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path, monkeypatch):
    from benchmark import runlayer, trainer

    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    args = trainer.Args(env_id="CartPole-v1", runs_dir=str(tmp_path))
    first = runlayer.create_run_dir(args)
    second = runlayer.create_run_dir(args)
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
    assert second == first + "-2"


def test_track_without_a_wandb_login_is_one_line_and_leaves_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB")}
    env.update(HOME=str(tmp_path), NETRC=str(tmp_path / "no-netrc"))
    proc = lab_process(
        tmp_path, *CARTPOLE, "--total-timesteps", "200", "--track", env=env, stdin=subprocess.DEVNULL
    )
    _, err = proc.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, err
    assert "wandb login" in lines[0] and "WANDB_MODE=offline" in lines[0]
    assert not os.path.exists(tmp_path / "runs") and not os.path.exists(tmp_path / "wandb")


# ---- 13: deterministic algorithms before any environment renders (CUDA torch imports triton then) -------
def test_deterministic_algorithms_are_on_before_the_video_probe(tmp_path, monkeypatch):
    """With a CUDA build of torch, torch.use_deterministic_algorithms imports triton, whose import crashes once
    an EGL context exists: the reference's main() and the lab switch it on before check_env renders its probe
    frame."""
    import smac_a2c
    from benchmark import trainer

    seen = []

    def probe(env_id, capture_video=False):
        seen.append(torch.are_deterministic_algorithms_enabled())
        raise smac_a2c.ConfigError("stop here")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(smac_a2c, "check_env", probe)
    torch.use_deterministic_algorithms(False)
    assert smac_a2c.main(["--env-id", "CartPole-v1", "--capture-video"]) == 2
    torch.use_deterministic_algorithms(False)
    assert trainer.main(["--env-id", "CartPole-v1", "--capture-video", "--runs-dir", str(tmp_path)]) == 2
    assert seen == [True, True]


# ---- moved from tests/test_reference.py with the run machinery (issue 43) ----------------------------------
RaisesAfter = helpers.RaisesAt250


gym.register("RaisesAfter-v0", entry_point=RaisesAfter)  # `--env-id test_run_layer:RaisesAfter-v0`


@pytest.mark.parametrize("failure", ["environment", "full disk"])
def test_a_crash_keeps_the_runs_tail(tmp_path, failure):
    """Issue 26 #3 (the reference's half until issue 43 moved it here): an exception after the run directory
    existed (an environment raising mid-episode; a full disk, here a file-size limit that cuts the first
    checkpoint save short) left a traceback on stderr, no status in summary.json and a checkpoint.pt.tmp. Now:
    summary.json status crashed with the error's line, RUN/traceback.txt, the last good checkpoint kept, no .tmp,
    one stderr line, exit 1."""
    env_id = "test_run_layer:RaisesAfter-v0" if failure == "environment" else "CartPole-v1"
    limit = (
        (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)))
        if failure == "full disk"
        else None
    )
    argv = ["--env-id", env_id, "--num-steps", "100", "--total-timesteps", "1000", "--checkpoint-every", "1"]
    proc = lab_process(tmp_path, *argv, "--no-tensorboard", text=True, preexec_fn=limit)
    _, stderr = proc.communicate(timeout=300)
    err = stderr.strip().splitlines()
    run = only_run(tmp_path / "runs")
    rel = os.path.relpath(run, tmp_path)  # as the run printed it: runs/...
    assert proc.returncode == 1 and len(err) == 1 and os.path.join(rel, "traceback.txt") in err[0], stderr
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "crashed" and summary["run_dir"] == rel and summary["error"] in err[0]
    assert "Traceback" in open(os.path.join(run, "traceback.txt")).read()
    assert not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))
    if failure == "environment":  # the checkpoint of update 2, the last before the crash
        assert summary["error"] == "RuntimeError: the simulator fell over"
        assert torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)["update"] == 2
    else:  # the first save failed: there is no good checkpoint, and no half-written one
        assert not os.path.exists(os.path.join(run, "checkpoint.pt"))


def test_a_crash_in_process_returns_1_and_restores_the_signal_handlers(tmp_path, monkeypatch, capsys):
    """Issue 26 #3: main() called in a process that goes on (a notebook, a test) left the run's signal
    handlers installed after a crash, so Ctrl-C no longer interrupted that process."""
    from benchmark import trainer

    monkeypatch.chdir(tmp_path)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert (
        trainer.main(
            [
                "--env-id",
                "RaisesAfter-v0",
                "--num-steps",
                "100",
                "--total-timesteps",
                "1000",
                "--no-tensorboard",
            ]
        )
        == 1
    )
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert capsys.readouterr().err.startswith("crashed: RuntimeError: the simulator fell over (traceback in ")


def _lab_run_with_a_signal_in_the_update(tmp_path, monkeypatch, total, diverge):
    """The lab's train() in this process, with an actor step that sends this process SIGTERM during the 2nd update
    (and, with diverge, also makes the actor NaN there)."""
    from benchmark import trainer

    calls = []

    def step(actor, batch, args, state):
        calls.append(1)
        diag = trainer.sgd_step(actor, batch, args, state)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            if diverge:
                with torch.no_grad():
                    actor.linears[0].weight.fill_(float("nan"))
        return diag

    monkeypatch.setitem(trainer.ACTOR_STEPS, "smac", step)
    args = trainer.Args(
        env_id="CartPole-v1", num_steps=100, total_timesteps=total, tensorboard=False, runs_dir=str(tmp_path)
    )
    run_dir, outcome = trainer.train(args)
    return run_dir, outcome, json.load(open(os.path.join(run_dir, "summary.json")))


def test_a_signal_during_the_last_update_leaves_a_finished_run(tmp_path, monkeypatch):
    """Issue 26 #1: `interrupted` implies global_step < budget. A SIGTERM during the last update of the budget
    used to leave status interrupted at the full budget (and exit 143)."""
    _, outcome, summary = _lab_run_with_a_signal_in_the_update(tmp_path, monkeypatch, 200, diverge=False)
    assert outcome == "finished" and summary["status"] == "finished" and summary["global_step"] == 200
    assert summary["signal"] is None


def test_divergence_wins_over_a_signal_in_the_same_update(tmp_path, monkeypatch):
    """Issue 26 #7: the update that diverges while a SIGTERM arrives ends as diverged (exit 3), not interrupted."""
    run_dir, outcome, summary = _lab_run_with_a_signal_in_the_update(
        tmp_path, monkeypatch, 1000, diverge=True
    )
    assert outcome == "diverged" and summary["status"] == "diverged" and summary["updates"] == 1
    ckpt = torch.load(os.path.join(run_dir, "checkpoint.pt"), weights_only=True)
    assert all(torch.isfinite(v).all() for v in ckpt["actor"].values())
