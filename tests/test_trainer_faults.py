"""The lab's trainer under faults found by issue 44's probe: empty paths, a resume that raced another, flags a
checkpoint stores, a signal while the environment is built or during a long rollout, non-finite observations,
and a diverged run resumed at its budget. Each case failed on the code before the fix."""

import json
import os
import shutil
import signal
import time

import gymnasium as gym
import helpers
import numpy as np
import pytest
import torch
from helpers import CARTPOLE, checkpoint, lab_process, only_run, run_main, summary

import smac_a2c
from benchmark import runlayer, trainer

gym.register("SlowToBuild-v0", entry_point=helpers.SlowToBuild)
gym.register("InfObservationAt155-v0", entry_point=helpers.InfObservationAt155)
gym.register("NanFinalObservation-v0", entry_point=helpers.NanFinalObservation)


def wait_for(path, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.listdir(path):
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear")


# 5. an empty path is bad input, not "no path" ------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
def test_an_empty_path_is_bad_input(tmp_path, capsys, flag):
    assert run_main(tmp_path / "runs", *CARTPOLE, flag, "", "--total-timesteps", "200") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]
    assert not os.path.exists(tmp_path / "runs")


# 6. --resume reads the checkpoint under the run's lock --------------------------------------------------------
def test_resume_continues_from_the_checkpoint_it_finds_under_the_lock(tmp_path, monkeypatch):
    """Trainer B loaded the 200-step checkpoint, then waited for the lock while trainer A continued the run to 400
    steps: B must continue from 400 (A's work kept), not cut the logs back to 200 and retrain."""
    runs = tmp_path / "runs"
    assert run_main(runs, *CARTPOLE, "--total-timesteps", "200") == 0
    run = only_run(runs)
    shutil.copy(os.path.join(run, "checkpoint.pt"), tmp_path / "at200.pt")
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0  # trainer A
    shutil.copy(os.path.join(run, "checkpoint.pt"), tmp_path / "at400.pt")
    a_rows = open(os.path.join(run, "updates.csv")).read().splitlines()[1:]
    shutil.copy(tmp_path / "at200.pt", os.path.join(run, "checkpoint.pt"))  # what B read before the lock

    class LockAfterA(runlayer.RunLock):
        def __enter__(self):
            shutil.copy(tmp_path / "at400.pt", os.path.join(run, "checkpoint.pt"))  # A finished meanwhile
            return super().__enter__()

    monkeypatch.setattr(trainer, "RunLock", LockAfterA)
    assert trainer.main(["--resume", run, "--total-timesteps", "600"]) == 0  # trainer B
    rows = open(os.path.join(run, "updates.csv")).read().splitlines()[1:]
    assert len(rows) == 6 and [r.split(",")[0] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    keep = [r.split(",")[:5] for r in a_rows]  # A's updates 3 and 4, bitwise as A logged them
    assert [r.split(",")[:5] for r in rows[:4]] == keep
    assert json.load(open(os.path.join(run, "config.json")))["resumed_from_step"] == 400


# 7. the flags a checkpoint stores are validated like flags on the command line --------------------------------
STORED = [
    ("optimizer", "no-such-optimizer"),
    ("fisher", "mean"),
    ("activation", "gelu"),
    ("num_envs", "4"),
    ("gamma", "0.9x"),
    ("hidden_sizes", "64"),
    ("learning_rate", -1.0),
]


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
@pytest.mark.parametrize("field,value", STORED, ids=[f for f, _ in STORED])
def test_stored_flags_are_validated_before_anything_is_touched(tmp_path, capsys, flag, field, value):
    runs = tmp_path / "runs"
    assert run_main(runs, *CARTPOLE, "--total-timesteps", "200") == 0
    run = only_run(runs)
    before = open(os.path.join(run, "summary.json")).read()
    ckpt = checkpoint(run)
    ckpt["args"][field] = value
    torch.save(runlayer.with_hash(ckpt), os.path.join(run, "checkpoint.pt"))
    capsys.readouterr()
    code = trainer.main([flag, run, "--total-timesteps", "400"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error:"), err
    assert open(os.path.join(run, "summary.json")).read() == before  # the finished run is untouched


# 8. a signal at any moment after the run directory exists leaves an interrupted run -----------------------------
def test_a_signal_while_the_environment_is_built_leaves_an_interrupted_run(tmp_path):
    argv = ["--env-id", "test_trainer_faults:SlowToBuild-v0", "--num-steps", "20", "--no-tensorboard"]
    proc = lab_process(tmp_path, *argv, text=True)
    wait_for(tmp_path / "runs")
    time.sleep(1.0)  # the directory exists; the trainer builds the environment (3 s)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "interrupted" and summary(run)["global_step"] == 0
    assert checkpoint(run)["global_step"] == 0


# 11. a signal ends a long rollout at once ---------------------------------------------------------------------
def test_a_signal_ends_a_long_rollout_and_keeps_the_last_completed_update(tmp_path):
    """--num-steps 5,000,000: the old loop finished the whole rollout (minutes on CartPole) before it looked at the
    signal. Now the rollout is dropped: the state after the last completed update (here: none) is checkpointed,
    the logs end there, exit 143."""
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
    wait_for(tmp_path / "runs")
    run = only_run(tmp_path / "runs")
    deadline = time.time() + 60
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


# 9. an infinite observation never reaches the saved normalization statistics ------------------------------------
def test_an_infinite_observation_is_a_divergence_with_clean_statistics(tmp_path):
    argv = ["--env-id", "test_trainer_faults:InfObservationAt155-v0", "--num-steps", "100", "--norm-obs"]
    proc = lab_process(tmp_path, *argv, "--total-timesteps", "1000", "--no-tensorboard", text=True)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    run = only_run(tmp_path / "runs")
    ckpt = checkpoint(run)
    assert ckpt["update"] == 1  # the state before the update whose rollout saw the infinite observation
    obs_rms = ckpt["normalizer"]["obs_rms"]
    assert np.isfinite(obs_rms["mean"]).all() and np.isfinite(obs_rms["var"]).all()


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
def test_non_finite_statistics_in_a_checkpoint_are_refused(tmp_path, capsys, flag):
    runs = tmp_path / "runs"
    assert run_main(runs, *CARTPOLE, "--total-timesteps", "200", "--norm-obs") == 0
    run = only_run(runs)
    ckpt = checkpoint(run)
    ckpt["normalizer"]["obs_rms"]["mean"][0] = float("inf")
    ckpt["normalizer"]["obs_rms"]["var"][0] = float("nan")
    torch.save(runlayer.with_hash(ckpt), os.path.join(run, "checkpoint.pt"))
    capsys.readouterr()
    assert trainer.main([flag, run, "--total-timesteps", "400"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NaN or Inf" in err[0]


# 10. a terminal state is never bootstrapped, so its NaN observation is never used --------------------------------
def test_gae_ignores_the_value_of_a_terminal_observation():
    rewards = np.array([[1.0], [2.0], [3.0]])
    values = np.array([[0.5], [0.25], [0.125]])
    next_values = np.array([[0.25], [np.nan], [0.5]])  # step 1 ends its episode by termination
    terminations = np.array([[0.0], [1.0], [0.0]])
    advantages, returns = smac_a2c.compute_gae(
        rewards, values, next_values, terminations, terminations, 0.5, 1.0
    )
    # by hand: delta = r + 0.5 V' (1 - term) - V = [0.625, 1.75, 3.125]; A_1 = delta_1 (cut), A_0 = delta_0
    # + 0.5 A_1 (the episode goes on), A_2 = delta_2
    np.testing.assert_allclose(advantages[:, 0], [0.625 + 0.5 * 1.75, 1.75, 3.125])
    assert np.isfinite(returns).all()


def test_a_nan_terminal_observation_trains_in_both_trainers(tmp_path, monkeypatch):
    env_id = "test_trainer_faults:NanFinalObservation-v0"
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


# 12. a diverged run is not relabelled finished ------------------------------------------------------------------
def test_resume_at_the_budget_keeps_a_diverged_status(tmp_path, capsys):
    runs = tmp_path / "runs"
    assert run_main(runs, *CARTPOLE, "--total-timesteps", "400") == 0
    run = only_run(runs)
    diverged = {**summary(run), "status": "diverged"}  # as a run that diverged after its 4th update
    runlayer.write_json(os.path.join(run, "summary.json"), diverged)
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 3
    assert summary(run)["status"] == "diverged"


# 1 (the trainer's half). a budget that is not a whole number of rollouts ------------------------------------------
def test_resume_at_the_rounded_budget_has_nothing_to_do(tmp_path):
    """--total-timesteps 250 with --num-steps 100 trains 200 steps; resuming that run with the same budget used to
    start a 0-step run that overwrote summary.json (sps 0, no mean return)."""
    runs = tmp_path / "runs"
    assert run_main(runs, *CARTPOLE, "--total-timesteps", "250") == 0
    run = only_run(runs)
    before = open(os.path.join(run, "summary.json")).read()
    assert json.loads(before)["global_step"] == 200
    assert trainer.main(["--resume", run, "--total-timesteps", "250"]) == 0
    assert open(os.path.join(run, "summary.json")).read() == before


# 13. a full disk: one line, no temporary file ---------------------------------------------------------------------
def test_a_full_disk_with_tensorboard_is_one_line_and_leaves_no_temporary_file(tmp_path):
    """Files above 30 kB fail (RLIMIT_FSIZE, as a full disk would): TensorBoard's writer thread used to print its
    own traceback (about 15 lines) beside the crash path's one line."""
    import resource

    def full_disk():
        resource.setrlimit(resource.RLIMIT_FSIZE, (30_000, 30_000))

    argv = ["--env-id", "CartPole-v1", "--num-steps", "100", "--total-timesteps", "20000"]
    proc = lab_process(tmp_path, *argv, text=True, preexec_fn=full_disk)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and len(err.strip().splitlines()) == 1, err
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "crashed"
    assert not [f for f in os.listdir(run) if f.endswith(".tmp")]


def test_a_json_that_cannot_be_written_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / "summary.json")
    runlayer.write_json(path, {"status": "finished"})

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runlayer.json, "dump", no_space)
    with pytest.raises(OSError):
        runlayer.write_json(path, {"status": "crashed"})
    assert json.load(open(path)) == {"status": "finished"} and os.listdir(tmp_path) == ["summary.json"]
