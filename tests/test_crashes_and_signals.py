"""A run is never lost, in either trainer: a signal at any moment (Ctrl-C, SIGTERM, SIGHUP) finishes or drops the
update under way, checkpoints and exits 130 / 143 / 129; NaN or Inf (a learning rate too large, an infinite
observation) exits 3 with the state before the bad update; a crash (also when the crash path cannot write, or the
disk is full) leaves status `crashed`, traceback.txt and the last good checkpoint, exit 1; output that cannot be
written never stops training. The promises the reference (smac_a2c.py) keeps too (a signal during training, the
last update, a NaN terminal observation) are tested on both, as one parametrized test; the rest on the lab (`python
-m benchmark.trainer` in tmp_path, its runs in tmp_path/runs, or its functions in this process)."""

import json
import os
import pty
import resource
import select
import shutil
import signal
import subprocess
import sys
import time

import gymnasium as gym
import helpers
import numpy as np
import pytest
import torch
from helpers import (
    CARTPOLE,
    PROGRAMS,
    checkpoint,
    lab_process,
    one_line_error,
    only_run,
    program_process,
    run_main,
    summary,
    train_in_process,
    training_process,
    wait_for_updates,
)

import smac_a2c
from benchmark import runlayer, trainer

THIS = "test_crashes_and_signals"  # `--env-id test_crashes_and_signals:Env-v0` in a subprocess


def finite(state):
    """Every tensor of a state dict is finite."""
    return all(torch.isfinite(v).all() for v in state.values())


# ---- output that cannot be written never stops training ----------------------------------------------------
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


# ---- signals at any moment ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
@pytest.mark.parametrize("program", PROGRAMS)
def test_a_signal_mid_run_finishes_the_update_checkpoints_and_exits(tmp_path, program, sig, code):
    """Ctrl-C or SIGTERM after the first progress line (update 10): the update under way finishes, its state is
    checkpointed (no partial rollout counted), exit 130 / 143, no traceback; the lab's summary says which signal
    interrupted it, at the checkpoint's update."""
    proc = training_process(program, tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code and "Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    ckpt = checkpoint(run)
    assert ckpt["update"] >= 10 and ckpt["global_step"] == 100 * ckpt["update"]
    if program == "lab":
        assert summary(run)["status"] == "interrupted" and summary(run)["signal"] == sig.name
        assert summary(run)["updates"] == ckpt["update"]


def test_a_second_signal_while_the_process_ends_keeps_the_first_signals_code(tmp_path):
    """SIGTERM once training is under way, then SIGINT every 50 ms until the process has ended: exit 143, the
    first signal's code. Python gives back the default handlers while it shuts down (after the atexit
    callbacks), and a SIGINT then killed the process with its own code (130) under a summary that says
    SIGTERM."""
    proc = training_process("lab", tmp_path)
    proc.send_signal(signal.SIGTERM)
    deadline = time.time() + 120
    while proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in err, (proc.returncode, err)
    assert summary(only_run(tmp_path / "runs"))["signal"] == "SIGTERM"


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
def test_a_signal_while_the_environment_is_built_leaves_an_interrupted_run(tmp_path, name, code):
    """The signal arrives after the run directory exists, while train() builds the environment (before its first
    rollout): an interrupted run at step 0, its checkpoint at step 0."""
    env = {**os.environ, "SEND_SIGNAL": name}
    proc = lab_process(tmp_path, "--env-id", f"{THIS}:SignalsOnItsSecondBuild-v0", *CARTPOLE[2:], env=env)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == code and b"Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "interrupted" and summary(run)["signal"] == name
    assert summary(run)["global_step"] == 0 and checkpoint(run)["global_step"] == 0


def test_a_signal_ends_a_long_rollout_and_keeps_the_last_completed_update(tmp_path):
    """--num-steps 5,000,000: a signal ends the rollout at once (not minutes later on CartPole, at its end) and drops
    it: the state after the last completed update (here: none) is checkpointed, the logs end there, exit 143."""
    argv = [
        "--env-id",
        "CartPole-v1",
        "--num-steps",
        "5000000",
        "--total-timesteps",
        "10000000",
        "--no-tensorboard",
    ]
    proc = lab_process(tmp_path, *argv, text=True)
    deadline = time.time() + 120
    while not os.path.isdir(tmp_path / "runs") or not os.listdir(tmp_path / "runs"):
        assert time.time() < deadline, "no run directory"
        time.sleep(0.05)
    run = only_run(tmp_path / "runs")
    while not os.path.exists(os.path.join(run, "episodes.csv")) and time.time() < deadline:
        time.sleep(0.05)  # the rollout is under way: episodes are being logged
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert summary(run)["status"] == "interrupted" and summary(run)["global_step"] == 0
    ckpt = checkpoint(run)
    assert ckpt["global_step"] == 0 and ckpt["update"] == 0
    assert (
        open(os.path.join(run, "episodes.csv")).read().splitlines()[1:] == []
    )  # the dropped rollout's episodes


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_signal_during_the_last_update_finishes_the_run(tmp_path, monkeypatch, program):
    """`interrupted` implies global_step < budget: a SIGTERM during the update that completes the budget is a
    finished run, exit 0 (not status interrupted at the full budget, exit 143)."""
    code, _, ckpt, summary = train_in_process(program, tmp_path, monkeypatch, 200, sigterm_at=2)
    assert code == 0 and ckpt["global_step"] == 200 and ckpt["update"] == 2
    if program == "lab":
        assert summary["status"] == "finished" and summary["global_step"] == 200 and summary["signal"] is None


def test_divergence_wins_over_a_signal_in_the_same_update(tmp_path, monkeypatch):
    """The update that diverges while a SIGTERM arrives exits 3 (diverged, not interrupted), with the
    finite state of update 1."""
    code, _, ckpt, summary = train_in_process("lab", tmp_path, monkeypatch, 1000, sigterm_at=2, nan_at=2)
    assert code == 3 and ckpt["update"] == 1 and finite(ckpt["actor"])
    assert summary["status"] == "diverged" and summary["updates"] == 1


# ---- NaN or Inf: exit 3 with the state before the bad update --------------------------------------------------
def test_nan_exits_3_with_the_state_before_the_bad_update(tmp_path, monkeypatch):
    code, before, ckpt, _ = train_in_process("lab", tmp_path, monkeypatch, 1000, nan_at=3)
    assert code == 3 and len(before) == 3 and ckpt["update"] == 2 and ckpt["global_step"] == 200
    for key, value in before[2].items():  # bitwise the actor that update 3 started from
        assert torch.equal(ckpt["actor"][key], value), key


def test_a_non_finite_direction_exits_3_with_the_state_before_its_update(tmp_path, capsys, monkeypatch):
    """SMAC's direction turns NaN in the third update: apply_step_ raises FloatingPointError, which the lab treats as
    divergence: one line, exit 3, the checkpoint of update 2."""
    calls = []
    real = trainer.sherman_morrison_direction

    def nan_on_third(g, ell, damping):
        calls.append(1)
        direction = real(g, ell, damping)
        return direction * float("nan") if len(calls) == 3 else direction

    monkeypatch.setattr(trainer, "sherman_morrison_direction", nan_on_third)
    monkeypatch.chdir(tmp_path)
    code = run_main("runs", *CARTPOLE, "--total-timesteps", "1000")
    one_line_error(capsys.readouterr().err, code, exit_code=3)
    ckpt = checkpoint(only_run(tmp_path / "runs"))
    assert ckpt["update"] == 2 and ckpt["global_step"] == 200 and finite(ckpt["actor"])


def test_a_nan_direction_with_target_kl_exits_3_as_with_a_fixed_eta(tmp_path, capsys, monkeypatch):
    """--target-kl: kl_step_ returned eta 0 for a NaN direction, and the run went on with no step in every later
    update and exit 0. Now kl_step_ raises FloatingPointError, as apply_step_ does: exit 3, the checkpoint of update
    2."""
    calls = []
    real = trainer.sherman_morrison_direction

    def nan_from_third(g, ell, damping):
        calls.append(1)
        direction = real(g, ell, damping)
        return direction * float("nan") if len(calls) >= 3 else direction

    monkeypatch.setattr(trainer, "sherman_morrison_direction", nan_from_third)
    monkeypatch.chdir(tmp_path)
    code = run_main("runs", *CARTPOLE, "--total-timesteps", "1000", "--target-kl", "0.01")
    one_line_error(capsys.readouterr().err, code, exit_code=3)
    ckpt = checkpoint(only_run(tmp_path / "runs"))
    assert ckpt["update"] == 2 and finite(ckpt["actor"])


def test_a_sigterm_before_training_is_one_line_and_143(tmp_path):
    """SIGTERM before the run's own handlers are in place (the environment check, the W&B login check): the lab
    caught only Ctrl-C there, so SIGTERM killed it with no word. Now one line, exit 143, no run directory."""
    script = (
        "import os, signal, sys, time\n"
        "from benchmark import trainer\n"
        "real = trainer.check_env_id\n"
        "def terminated_while_checking(env_id):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.1)\n"
        "    return real(env_id)\n"
        "trainer.check_env_id = terminated_while_checking\n"
        "sys.exit(trainer.main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": helpers.ROOT}
    argv = [*CARTPOLE, "--runs-dir", str(tmp_path / "runs")]
    proc = subprocess.run(
        [sys.executable, "-c", script, *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    one_line_error(proc.stderr, proc.returncode, "SIGTERM", exit_code=143)
    assert not (tmp_path / "runs").exists()


PENDULUM_SGD = [
    "--env-id",
    "Pendulum-v1",
    "--num-steps",
    "100",
    "--total-timesteps",
    "2000",
    "--optimizer",
    "sgd",
]


@pytest.mark.parametrize(
    "program,argv",
    [
        ("lab", [*PENDULUM_SGD, "--learning-rate", "1e30"]),
        ("lab", [*CARTPOLE[:4], "--total-timesteps", "1000", "--critic-learning-rate", "1e37"]),
    ],
    ids=["lab", "lab-critic"],
)
def test_a_learning_rate_too_large_is_a_divergence(tmp_path, program, argv):
    """An actor rate of 1e30, or a critic rate float32 holds but the critic does not survive (its parameters are
    checked with the actor's): exit 3, no traceback, finite networks in the checkpoint, one line on stderr; the
    lab's summary says diverged in strict JSON (no NaN there) and its episodes are logged."""
    proc = program_process(program, tmp_path, *argv, *(["--no-tensorboard"] if program == "lab" else []))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3 and "Traceback" not in err, err
    run = only_run(tmp_path / "runs")
    ckpt = checkpoint(run)
    assert finite(ckpt["actor"]) and finite(ckpt["critic"])
    assert len(err.strip().splitlines()) == 1, err  # one line, no numpy warning before it
    if program == "lab":  # the line names the checkpoint kept
        assert os.path.join(os.path.relpath(run, tmp_path), "checkpoint.pt") in err
        text = open(os.path.join(run, "summary.json")).read()
        strict = json.loads(text, parse_constant=lambda c: pytest.fail(f"summary.json holds {c}"))
        assert strict["status"] == "diverged" and strict["updates"] == ckpt["update"]
        assert os.path.exists(os.path.join(run, "episodes.csv"))


def test_divergence_rolls_back_reward_normalization(tmp_path, monkeypatch):
    real, calls = trainer.critic_step, {"n": 0}

    def critic_step(*a, **k):
        calls["n"] += 1
        return float("nan") if calls["n"] == 3 else real(*a, **k)

    monkeypatch.setattr(trainer, "critic_step", critic_step)
    assert (
        run_main(
            tmp_path,
            *CARTPOLE,
            "--total-timesteps",
            "1000",
            "--norm-reward",
            "--norm-obs",
            "--checkpoint-every",
            "1",
        )
        == 3
    )
    ckpt = trainer.load_checkpoint(only_run(tmp_path))
    assert ckpt["update"] == 2
    assert ckpt["normalizer"]["ret_rms"]["count"] == pytest.approx(1e-4 + 200)  # 2 rollouts, not 3
    assert ckpt["normalizer"]["obs_rms"]["count"] == pytest.approx(1e-4 + 200)


def test_an_infinite_observation_is_a_divergence_with_clean_statistics(tmp_path):
    argv = ["--env-id", "helpers:InfObservationAt155-v0", "--num-steps", "100", "--norm-obs"]
    proc = lab_process(tmp_path, *argv, "--total-timesteps", "1000", "--no-tensorboard", text=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "diverged"
    ckpt = checkpoint(run)
    assert ckpt["update"] == 1  # the state before the update whose rollout saw the infinite observation
    obs_rms = ckpt["normalizer"]["obs_rms"]
    assert np.isfinite(obs_rms["mean"]).all() and np.isfinite(obs_rms["var"]).all()


def test_a_nan_terminal_observation_trains_in_both_trainers(tmp_path, monkeypatch):
    env_id = "helpers:NanFinalObservation-v0"
    argv = ["--env-id", env_id, "--num-steps", "100", "--total-timesteps", "500", "--no-tensorboard"]
    proc = lab_process(tmp_path, *argv, text=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert summary(only_run(tmp_path / "runs"))["status"] == "finished"
    monkeypatch.chdir(tmp_path)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    args = smac_a2c.Args(env_id="NanFinalObservation-v0", num_steps=100, total_timesteps=500)
    try:
        assert smac_a2c.train(args) == 0
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)


# ---- crashes keep the last good state; the crash path itself never raises ------------------------------------
class RemovesItsRunThenRaises(helpers.RaisesAt250):
    """On its 250th step removes runs/ (the run directory with it), then raises."""

    def step(self, action):
        if self.steps == 249:
            shutil.rmtree("runs")
        return super().step(action)


gym.register("RemovesItsRunThenRaises-v0", entry_point=RemovesItsRunThenRaises)


def test_a_crash_keeps_the_runs_tail(tmp_path):
    """An exception after the run directory existed (an environment raising mid-episode, at default flags: no
    --checkpoint-every) is one stderr line naming the error and RUN/traceback.txt (no traceback on stderr), exit 1; summary.json status crashed with the error's line; the state after update 2 (the
    last completed) as checkpoint.pt, the logs ending there, no .tmp."""
    proc = lab_process(tmp_path, "--env-id", "helpers:RaisesAt250-v0", "--num-steps", "100", text=True)
    _, err = proc.communicate(timeout=300)
    run = only_run(tmp_path / "runs")
    rel = os.path.relpath(run, tmp_path)  # as the run printed it: runs/...
    line = one_line_error(
        err, proc.returncode, "RuntimeError", os.path.join(rel, "traceback.txt"), exit_code=1
    )
    assert summary(run)["status"] == "crashed" and summary(run)["run_dir"] == rel
    assert summary(run)["error"] == "RuntimeError: the simulator fell over" and summary(run)["error"] in line
    ckpt = checkpoint(run)
    assert ckpt["update"] == 2 and ckpt["global_step"] == 200
    assert len(open(os.path.join(run, "updates.csv")).read().splitlines()) == 1 + 2
    traceback = open(os.path.join(run, "traceback.txt")).read()
    assert "Traceback" in traceback and "the simulator fell over" in traceback
    assert not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))


def test_a_crash_in_process_returns_1_and_restores_the_signal_handlers(tmp_path, monkeypatch, capsys):
    """main() called in a process that goes on (a notebook, a test) removes the run's signal handlers after a
    crash, so that Ctrl-C still interrupts that process. With --checkpoint-every 1 the last
    periodic checkpoint (update 2) is kept."""
    monkeypatch.chdir(tmp_path)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    argv = [
        "--env-id",
        "RaisesAt250-v0",
        "--num-steps",
        "100",
        "--total-timesteps",
        "1000",
        "--checkpoint-every",
        "1",
    ]
    code = run_main("runs", *argv)
    assert {sig: signal.getsignal(sig) for sig in before} == before
    run = only_run(tmp_path / "runs")
    traceback = os.path.join(os.path.relpath(run, tmp_path), "traceback.txt")
    one_line_error(
        capsys.readouterr().err, code, "RuntimeError: the simulator fell over", traceback, exit_code=1
    )
    assert (
        summary(run)["status"] == "crashed"
        and summary(run)["error"] == "RuntimeError: the simulator fell over"
    )
    assert "the simulator fell over" in open(traceback).read()
    assert checkpoint(run)["update"] == 2 and not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))


def test_a_crash_path_that_cannot_write_names_the_files_it_lost(tmp_path):
    """The run directory removed before the crash: no chained tracebacks, one line naming what was lost."""
    env_id = f"{THIS}:RemovesItsRunThenRaises-v0"
    proc = lab_process(tmp_path, "--env-id", env_id, "--num-steps", "100", "--no-tensorboard", text=True)
    _, err = proc.communicate(timeout=300)
    one_line_error(err, proc.returncode, "checkpoint.pt", "traceback.txt", "summary.json", exit_code=1)
    assert "Traceback" not in err


def test_a_full_disk_during_the_crash_path_keeps_the_run_consistent(tmp_path):
    """Every file above 20 kB fails (RLIMIT_FSIZE): the checkpoint cannot be saved at all; the crash is still
    one line naming traceback.txt and the checkpoint it could not write, the traceback and the summary are written,
    and no half-written checkpoint stays."""

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    argv = ["--env-id", "helpers:RaisesAt250-v0", "--num-steps", "100"]
    proc = lab_process(tmp_path, *argv, preexec_fn=small_files, text=True)
    _, err = proc.communicate(timeout=300)
    one_line_error(err, proc.returncode, "traceback.txt", "checkpoint.pt", exit_code=1)
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "crashed" and not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))
    assert os.path.exists(os.path.join(run, "traceback.txt")) and not os.path.exists(
        os.path.join(run, "checkpoint.pt")
    )


@pytest.mark.parametrize("tensorboard", [False, True])
def test_a_full_disk_is_a_crash_in_one_line_with_no_temporary_file(tmp_path, tensorboard):
    """A file-size limit (RLIMIT_FSIZE, as a full disk would) cuts a save short, without TensorBoard at the first
    checkpoint (--checkpoint-every 1, 20 kB), with TensorBoard (30 kB) in its writer thread: status crashed with the
    error's line, traceback.txt, one stderr line (no writer traceback beside it), exit 1, no .tmp file."""
    limit = 30_000 if tensorboard else 20_000

    def full_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    argv = ["--env-id", "CartPole-v1", "--num-steps", "100"]
    if tensorboard:
        argv += ["--total-timesteps", "20000"]
    else:
        argv += ["--total-timesteps", "1000", "--checkpoint-every", "1", "--no-tensorboard"]
    proc = lab_process(tmp_path, *argv, text=True, preexec_fn=full_disk)
    _, err = proc.communicate(timeout=300)
    line = one_line_error(err, proc.returncode, exit_code=1)
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "crashed"
    assert not [f for f in os.listdir(run) if f.endswith(".tmp")]
    if not tensorboard:  # the first save failed: there is no good checkpoint, and no half-written one
        assert summary(run)["error"] in line
        assert os.path.join(os.path.relpath(run, tmp_path), "traceback.txt") in line
        assert "Traceback" in open(os.path.join(run, "traceback.txt")).read()
        assert not os.path.exists(os.path.join(run, "checkpoint.pt"))


def test_a_json_that_cannot_be_written_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / "summary.json")
    runlayer.write_json(path, {"status": "finished"})

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runlayer.json, "dump", no_space)
    with pytest.raises(OSError):
        runlayer.write_json(path, {"status": "crashed"})
    assert json.load(open(path)) == {"status": "finished"} and os.listdir(tmp_path) == ["summary.json"]


def test_a_run_that_dies_before_logging_anything_leaves_no_directory(tmp_path, capsys, monkeypatch):
    """`--hidden-sizes 100000 100000` (an allocation failure) leaves no run directory holding only .lock."""

    def too_big(*a, **k):
        raise MemoryError("cannot allocate 40 GB")

    monkeypatch.setattr(trainer, "lab_networks", too_big)
    assert trainer.main(["--env-id", "CartPole-v1", "--runs-dir", str(tmp_path), "--no-tensorboard"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "MemoryError" in err[0] and str(tmp_path) in err[0]
    )  # it names the directory it removed
    assert os.listdir(tmp_path) == []


# ---- run directories; deterministic algorithms before any render --------------------------------------------
def test_runs_started_in_the_same_second_get_their_own_directories(tmp_path, monkeypatch):
    from benchmark import runlayer, trainer

    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    args = trainer.Args(env_id="CartPole-v1", runs_dir=str(tmp_path))
    first = runlayer.create_run_dir(args)
    second = runlayer.create_run_dir(args)
    assert first != second and os.path.isdir(first) and os.path.isdir(second)
    assert second == first + "-2"


def test_deterministic_algorithms_are_on_before_the_video_probe(tmp_path, monkeypatch):
    """With a CUDA build of torch, torch.use_deterministic_algorithms imports triton, whose import crashes once
    an EGL context exists: the lab switches it on before check_video renders its probe frame, the reference's main()
    before its first environment."""
    seen = []

    class Stop(Exception):
        pass

    def probe(env_id):
        seen.append(torch.are_deterministic_algorithms_enabled())
        raise trainer.ConfigError("stop here")

    def first_env(args, run_dir, i):
        seen.append(torch.are_deterministic_algorithms_enabled())
        raise Stop

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(
        "MUJOCO_GL", "egl"
    )  # both set it only if unset; this test's value is restored after it
    monkeypatch.setattr(trainer, "check_video", probe)
    monkeypatch.setattr(smac_a2c, "make_env", first_env)
    torch.use_deterministic_algorithms(False)
    with pytest.raises(Stop):
        smac_a2c.main(["--env-id", "CartPole-v1", "--capture-video"])
    torch.use_deterministic_algorithms(False)
    assert trainer.main(["--env-id", "CartPole-v1", "--capture-video", "--runs-dir", str(tmp_path)]) == 2
    assert seen == [True, True]


def test_a_traceback_a_full_disk_cuts_short_is_not_left_behind(tmp_path):
    """A disk that fills while the crash path writes traceback.txt leaves no traceback.txt (not an empty or cut-off
    one) beside the one line that says it could not be written; the rest is kept."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "episodes.csv").write_text("global_step,episodic_return,episodic_length\n")  # the run logged
    script = (
        "import sys\nfrom benchmark import runlayer\n"
        "try:\n    raise RuntimeError('the simulator fell over ' + 'x' * 20000)\n"
        "except RuntimeError as e:\n    print(runlayer.record_crash(sys.argv[1], e))\n"
    )

    def small_disk():  # files of at most 4 kB: summary.json fits, the traceback (20 kB) does not
        resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))

    proc = subprocess.run(
        [sys.executable, "-c", script, str(run)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_disk,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.strip().splitlines()
    assert "traceback.txt" in line and str(run) in line
    assert not os.path.exists(run / "traceback.txt")
    assert summary(str(run))["status"] == "crashed"
