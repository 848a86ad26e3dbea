"""What the lab gives besides training: the -v4 note once, a progress bar only on a terminal, --capture-video,
--track offline, and --eval-checkpoint (its numbers, its refusals); --plot's tests are in test_plotting.py."""

import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import ROOT, evaluation, finished_run, lab_run, one_line_error, only_run, run_main

from benchmark import runlayer, trainer

CARTPOLE_1000 = [
    "--no-tensorboard",
    "--env-id",
    "CartPole-v1",
    "--num-steps",
    "200",
    "--total-timesteps",
    "1000",
]


@pytest.mark.parametrize("env_id,notes", [("Hopper-v4", 1), ("Hopper-v5", 0)])
def test_v4_deprecation_is_explained_once(tmp_path, env_id, notes):
    p = lab_run(
        ROOT,
        "--no-tensorboard",
        "--env-id",
        env_id,
        "--num-steps",
        "200",
        "--total-timesteps",
        "400",
        "--runs-dir",
        str(tmp_path),
    )
    assert p.returncode == 0, p.stderr
    lines = [
        line for line in p.stderr.splitlines() if env_id in line
    ]  # the note names the id, and the -v5 one
    assert len(lines) == notes and all("Hopper-v5" in line for line in lines), p.stderr


def test_no_progress_output_when_stdout_is_not_a_terminal(tmp_path):
    p = lab_run(
        ROOT,
        *CARTPOLE_1000,
        "--runs-dir",
        str(tmp_path),
    )
    assert p.returncode == 0 and "\r" not in p.stdout and "it/s" not in p.stdout + p.stderr
    assert p.stdout.strip().startswith("finished:")


@pytest.mark.parametrize("env_id,size", [("CartPole-v1", (400, 600)), ("Hopper-v4", (480, 480))])
def test_capture_video_training_and_evaluation(tmp_path, env_id, size):
    import csv

    import imageio.v3 as iio

    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    p = lab_run(
        ROOT,
        "--no-tensorboard",
        "--env-id",
        env_id,
        "--num-steps",
        "100",
        "--total-timesteps",
        "200",
        "--capture-video",
        "--runs-dir",
        str(tmp_path),
        env=env,
    )
    assert p.returncode == 0, p.stderr
    run = os.path.join(tmp_path, os.listdir(tmp_path)[0])
    first = next(csv.DictReader(open(os.path.join(run, "episodes.csv"))))
    frames = iio.imread(os.path.join(run, "videos", "rl-video-episode-0.mp4"))
    assert frames.shape == (int(first["episodic_length"]) + 1, *size, 3)  # the reset frame, then one per step
    assert frames.std() > 5.0  # not blank
    p = lab_run(
        ROOT, "--no-tensorboard", "--eval-checkpoint", run, "--eval-episodes", "1", "--capture-video", env=env
    )
    assert p.returncode == 0, p.stderr
    ev = iio.imread(os.path.join(run, "videos", "eval", "rl-video-episode-0.mp4"))
    assert ev.shape[1:] == (*size, 3) and ev.shape[0] > 1 and ev.std() > 5.0


def test_track_offline_holds_the_logged_keys(tmp_path):
    """--track with WANDB_MODE=offline: the run's local W&B file holds every scalar name and the flags
    (W&B 0.31 stores records as protobuf in run-*.wandb; the names are plain bytes there)."""
    import csv
    import glob

    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    p = lab_run(
        ROOT,
        *CARTPOLE_1000,
        "--track",
        "--wandb-project-name",
        "smac-test",
        "--runs-dir",
        str(tmp_path),
        env=env,
    )
    assert p.returncode == 0, p.stderr
    run = os.path.join(tmp_path, os.listdir(tmp_path)[0])
    data = open(glob.glob(os.path.join(run, "wandb", "offline-run-*", "run-*.wandb"))[0], "rb").read()
    episodes = len(list(csv.DictReader(open(os.path.join(run, "episodes.csv")))))
    assert data.count(b"charts/episodic_return") >= episodes
    for key in (
        "losses/value_loss",
        "losses/ell_sq",
        "losses/cos_g_step",
        "losses/mean_logprob",
        "charts/sps",
    ):
        assert data.count(key.encode()) >= 5, key  # one per update
    for flag in (b"learning_rate", b"damping", b"env_id", b"CartPole-v1"):
        assert flag in data


class Endless(gym.Env):
    """No time limit and no termination: an evaluation must end it."""

    def __init__(self):

        self.observation_space, self.action_space = (
            gym.spaces.Box(-1.0, 1.0, (2,), np.float64),
            gym.spaces.Discrete(2),
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), 1.0, False, False, {}


def test_evaluation_ends_an_endless_episode_and_refuses_another_env(tmp_path, capsys):
    """--eval-checkpoint stops each episode at --eval-max-steps (an environment without a time limit returns). An
    explicit --env-id other than the checkpoint's is refused in one line naming both ids (never the checkpoint's
    own environment evaluated silently)."""

    gym.register("EndlessTest-v0", entry_point=Endless)
    assert (
        trainer.main(
            [
                "--env-id",
                "EndlessTest-v0",
                "--num-steps",
                "50",
                "--total-timesteps",
                "100",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = os.path.join(tmp_path, os.listdir(tmp_path)[0])
    capsys.readouterr()
    assert trainer.main(["--eval-checkpoint", run, "--eval-episodes", "2", "--eval-max-steps", "300"]) == 0
    assert evaluation(capsys.readouterr().out) == (300.0, 0.0, 2)  # reward 1 per step, 300 steps each
    code = trainer.main(["--eval-checkpoint", run, "--env-id", "CartPole-v1"])
    one_line_error(capsys.readouterr().err, code, "--env-id", "CartPole-v1", "EndlessTest-v0")


def test_ctrl_c_during_evaluation_is_one_line_and_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C during --eval-checkpoint (or before training starts) is one line, not a traceback."""
    run = finished_run(tmp_path, steps=100)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer, "evaluate", ctrl_c)
    capsys.readouterr()
    code = trainer.main(["--eval-checkpoint", run])
    one_line_error(capsys.readouterr().err, code, exit_code=130)


def test_evaluation_sends_the_environment_the_actions_training_did(tmp_path, capsys):
    """1. Discrete(n, start): training shifts the policy's index by start; the evaluation did not."""
    argv = ["--env-id", "OffsetActions-v0", "--num-steps", "50", "--total-timesteps", "200"]
    assert run_main(tmp_path, *argv, tensorboard=True) == 0
    run = only_run(tmp_path)
    capsys.readouterr()
    code = trainer.main(["--eval-checkpoint", run, "--eval-episodes", "3"])
    score, _, episodes = evaluation(capsys.readouterr().out)
    assert code == 0 and episodes == 3 and 0.0 <= score <= 10.0  # ten steps, each worth 0 or 1


def test_evaluation_refuses_non_finite_weights(tmp_path, capsys):
    """2. A checkpoint whose actor went NaN scored a believable number (CartPole "9.50 +- 0.50")."""
    run = finished_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    ckpt = torch.load(path, weights_only=True)
    first = next(k for k in ckpt["actor"] if k.endswith("weight"))
    ckpt["actor"][first] = torch.full_like(ckpt["actor"][first], float("nan"))
    torch.save(runlayer.with_hash(ckpt), path)
    code = trainer.main(["--eval-checkpoint", run])
    one_line_error(capsys.readouterr().err, code, path)
