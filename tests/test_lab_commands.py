"""The lab's commands never report a wrong number (issue 36): evaluation, resume, the environment check, read-only
run directories, --plot, and what a resumed run keeps of a crash or a hard kill. Each test failed on the code
before issue 36."""

import json
import os
import shutil

import gymnasium as gym
import helpers
import numpy as np
import pytest
import torch
from helpers import CARTPOLE, only_run, run_main

from benchmark import runlayer, trainer


def one_line_error(capsys, code, needle):
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and needle in err[0], err


class RaisesKeyError(gym.Env):
    def __init__(self):
        raise KeyError("no such model file")


class RaisesOSError(gym.Env):
    def __init__(self):
        raise OSError(2, "No such file or directory", "assets/robot.xml")


gym.register("OffsetActionsLab-v0", entry_point=helpers.OffsetActions)
gym.register("RaisesKeyError-v0", entry_point=RaisesKeyError)
gym.register("RaisesOSError-v0", entry_point=RaisesOSError)


def test_evaluation_sends_the_environment_the_actions_training_did(tmp_path, capsys):
    """1. Discrete(n, start): training shifts the policy's index by start; the evaluation did not."""
    argv = ["--env-id", "OffsetActionsLab-v0", "--num-steps", "50", "--total-timesteps", "200"]
    assert run_main(tmp_path, *argv, tensorboard=True) == 0
    run = only_run(tmp_path)
    capsys.readouterr()
    code = trainer.main(["--eval-checkpoint", run, "--eval-episodes", "3"])
    out = capsys.readouterr().out
    assert code == 0 and "over 3 episodes" in out
    score = float(out.split(": ")[1].split(" +- ")[0])
    assert 0.0 <= score <= 10.0  # ten steps, each worth 0 or 1


def test_evaluation_refuses_non_finite_weights(tmp_path, capsys):
    """2. A checkpoint whose actor went NaN scored a believable number (CartPole "9.50 +- 0.50")."""
    assert run_main(tmp_path, *CARTPOLE, "--total-timesteps", "200") == 0
    run = only_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    ckpt = torch.load(path, weights_only=True)
    first = next(k for k in ckpt["actor"] if k.endswith("weight"))
    ckpt["actor"][first] = torch.full_like(ckpt["actor"][first], float("nan"))
    torch.save(runlayer.with_hash(ckpt), path)
    code = trainer.main(["--eval-checkpoint", run])
    one_line_error(capsys, code, "non-finite")


def test_a_resumed_run_keeps_its_earlier_videos(tmp_path):
    """3. RecordVideo's episode counter restarts at 0 on --resume: the same names overwrote the first videos."""
    assert run_main(tmp_path, *CARTPOLE, "--total-timesteps", "200", "--capture-video") == 0
    run = only_run(tmp_path)
    videos = os.path.join(run, "videos")
    before = {name: open(os.path.join(videos, name), "rb").read() for name in os.listdir(videos)}
    assert before
    assert trainer.main(["--resume", run, "--total-timesteps", "400", "--capture-video"]) == 0
    after = os.listdir(videos)
    assert all(open(os.path.join(videos, name), "rb").read() == data for name, data in before.items())
    assert len(after) > len(before)  # the resumed segment's own videos, beside


@pytest.mark.parametrize(
    "env_id,needle", [("RaisesKeyError-v0", "KeyError"), ("RaisesOSError-v0", "OSError")]
)
def test_an_environment_that_raises_anything_is_one_line(tmp_path, capsys, env_id, needle):
    """4. The lab's environment check caught too few exception types."""
    code = trainer.main(["--env-id", env_id, "--runs-dir", str(tmp_path)])
    one_line_error(capsys, code, needle)
    assert not os.listdir(tmp_path)


def test_a_module_with_a_syntax_error_is_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "broken_env_module.py").write_text("def oops(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = trainer.main(["--env-id", "broken_env_module:Broken-v0", "--runs-dir", str(tmp_path / "runs")])
    one_line_error(capsys, code, "SyntaxError")


def test_resume_takes_every_run_the_lab_makes(tmp_path, monkeypatch):
    """5. An --exp-name holding '..' and a run name of 253-255 bytes are valid runs; --resume refused them (the
    lab's own name checks, one of them counting a suffix resume never adds). (Until issue 43 the runs came from
    the reference, whose checkpoints the lab no longer resumes.)"""
    monkeypatch.chdir(tmp_path)
    prefix = f"CartPole-v1____1__{int(__import__('time').time())}"
    for exp_name in ("a..b", "x" * (254 - len(prefix))):
        shutil.rmtree(tmp_path / "runs", ignore_errors=True)
        assert trainer.main([*CARTPOLE, "--total-timesteps", "100", "--exp-name", exp_name]) == 0
        (run,) = os.listdir(tmp_path / "runs")
        assert trainer.main(["--resume", os.path.join("runs", run), "--total-timesteps", "200"]) == 0
        assert json.load(open(os.path.join("runs", run, "summary.json")))["global_step"] == 200


def test_a_run_directory_that_cannot_be_written_is_one_line(tmp_path, capsys):
    """6. A read-only run directory: --resume and --eval-checkpoint --capture-video ended in an OSError
    traceback. (Here the lock file and the video folder are made impossible to create: tests run as root,
    for whom a directory's mode is no obstacle.)"""
    assert run_main(tmp_path, *CARTPOLE, "--total-timesteps", "100") == 0
    run = only_run(tmp_path)
    os.remove(os.path.join(run, ".lock"))
    os.mkdir(os.path.join(run, ".lock"))
    code = trainer.main(["--resume", run, "--total-timesteps", "200"])
    one_line_error(capsys, code, "cannot be written")
    open(os.path.join(run, "videos"), "w").close()
    code = trainer.main(["--eval-checkpoint", run, "--eval-episodes", "1", "--capture-video"])
    one_line_error(capsys, code, "cannot write videos")


def test_plot_of_damaged_inputs_and_its_output_paths(tmp_path, capsys):
    """7. --plot: a binary CSV, a torn non-numeric global_step, a non-numeric damping, an unknown extension,
    `--plot-out out` (wrote out.png, said "wrote out") and `--plot-out DIR/` (wrote a hidden DIR/.png)."""
    assert run_main(tmp_path / "runs", *CARTPOLE, "--total-timesteps", "1000") == 0
    run = only_run(tmp_path / "runs")
    with open(os.path.join(run, "episodes.csv"), "a") as f:
        f.write("garbled,1.0,2\n")  # a torn tail
    config = json.load(open(os.path.join(run, "config.json")))
    config["args"]["damping"] = "one"
    json.dump(config, open(os.path.join(run, "config.json"), "w"))
    capsys.readouterr()
    assert trainer.main(["--plot", run, "--plot-out", str(tmp_path / "out")]) == 0
    assert os.path.isfile(tmp_path / "out.png") and capsys.readouterr().out.strip().endswith("out.png")
    os.mkdir(tmp_path / "figs")
    assert trainer.main(["--plot", run, "--plot-out", str(tmp_path / "figs") + os.sep]) == 0
    assert os.listdir(tmp_path / "figs") == ["plot.png"]
    code = trainer.main(["--plot", run, "--plot-out", str(tmp_path / "out.xyz")])
    one_line_error(capsys, code, ".xyz")
    with open(os.path.join(run, "episodes.csv"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    code = trainer.main(["--plot", run])
    one_line_error(capsys, code, "not a readable CSV")


class Repaired(helpers.RaisesAt250):
    """RaisesAt250's spaces, without the crash."""

    def step(self, action):
        self.steps += 1
        return np.zeros(2), 1.0, False, self.steps % 20 == 0, {}


gym.register("LabRaisesAt250-v0", entry_point=helpers.RaisesAt250)


def test_a_resumed_crash_leaves_no_stale_traceback(tmp_path):
    """8a. A crashed run resumed to `finished` kept traceback.txt beside its finished summary."""
    code = trainer.main(
        [
            "--env-id",
            "LabRaisesAt250-v0",
            "--num-steps",
            "100",
            "--total-timesteps",
            "1000",
            "--no-tensorboard",
        ]
        + ["--runs-dir", str(tmp_path)]
    )
    assert code == 1
    run = only_run(tmp_path)
    assert os.path.isfile(os.path.join(run, "traceback.txt"))
    gym.register("LabRaisesAt250-v0", entry_point=Repaired)  # the environment mended, the run resumed
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "finished"
    assert not os.path.exists(os.path.join(run, "traceback.txt"))
    assert os.path.isfile(os.path.join(run, "traceback-before-resume-at-200.txt"))


def test_after_a_hard_kill_tensorboard_holds_each_step_once(tmp_path):
    """8b. A run killed after its checkpoint (its logs ran ahead), then resumed: the CSVs were cut back to the
    checkpoint, but TensorBoard kept the killed segment's points, so the curves held every step twice."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert (
        run_main(
            tmp_path,
            "--env-id",
            "CartPole-v1",
            "--num-steps",
            "100",
            "--total-timesteps",
            "200",
            tensorboard=True,
        )
        == 0
    )
    run = only_run(tmp_path)
    kept = os.path.join(tmp_path, "checkpoint-at-200.pt")
    shutil.copy(os.path.join(run, "checkpoint.pt"), kept)
    assert trainer.main(["--resume", run, "--total-timesteps", "500"]) == 0
    shutil.copy(
        kept, os.path.join(run, "checkpoint.pt")
    )  # as if killed at 500 with its last checkpoint at 200
    assert trainer.main(["--resume", run, "--total-timesteps", "500"]) == 0
    events = EventAccumulator(run)
    events.Reload()
    steps = [e.step for e in events.Scalars("losses/value_loss")]
    assert steps == [100, 200, 300, 400, 500]
