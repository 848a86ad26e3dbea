"""The lab's bad input: a flag, a path, an environment, a package or a login it cannot use is refused before a run
directory is made, in one line on stderr naming the flag, path or id it is about, with exit 2 and no traceback.
In this process (trainer.main) or as `python -m benchmark.trainer` where the command line itself is the case."""

import errno
import os
import shutil

import gymnasium as gym
import helpers
import numpy as np
import pytest
from helpers import CARTPOLE, ROOT, lab_process, lab_run, one_line_error, only_run, run_main, summary

from benchmark import trainer

THIS = "test_lab_bad_input"  # `--env-id test_lab_bad_input:Env-v0` in a subprocess
X300 = "x" * 300

# (argv, the flag or path the one line names); "BAD" stands for a file of garbage
BAD_FLAGS = [
    ([*CARTPOLE, "--log-std-init", "nan"], "--log-std-init"),
    ([*CARTPOLE, "--ent-coef", "inf"], "--ent-coef"),
    ([*CARTPOLE, "--max-grad-norm", "inf"], "--max-grad-norm"),
    ([*CARTPOLE, "--seed", "-1"], "--seed"),
    ([*CARTPOLE, "--seed", str(2**32)], "--seed"),
    ([*CARTPOLE, "--exp-name", X300], "--exp-name"),  # a run directory name the file system cannot hold
    ([*CARTPOLE, "--exp-name", "a/b"], "--exp-name"),
    ([*CARTPOLE, "--exp-name", ".."], "--exp-name"),
    ([*CARTPOLE, "--target-kl", "inf"], "--target-kl"),
    (
        [*CARTPOLE, "--optimizer", "sgd", "--target-kl", "0.01"],
        "--target-kl",
    ),  # it sets batch-mean SMAC's step
    (["--env-id", "NoSuchEnv-v0"], "--env-id"),
    (["--env-id", "Pusher-v4"], "Pusher-v5"),
    (["--damping", "0"], "--damping"),
    (["--damping", "-1"], "--damping"),
    (["--learning-rate", "-0.1"], "--learning-rate"),
    (["--critic-learning-rate", "0"], "--critic-learning-rate"),
    (["--total-timesteps", "0"], "--total-timesteps"),
    (["--num-steps", "-5"], "--num-steps"),
    (["--gamma", "1.5"], "--gamma"),
    (["--gae-lambda", "-0.1"], "--gae-lambda"),
    (["--resume", "/nonexistent/checkpoint.pt"], "/nonexistent/checkpoint.pt"),
    (["--eval-checkpoint", "BAD"], "BAD"),
    ([*CARTPOLE, "--resume", ""], "--resume"),  # an empty path is bad input, not "no path"
    ([*CARTPOLE, "--eval-checkpoint", ""], "--eval-checkpoint"),
]


@pytest.mark.parametrize("argv,names", BAD_FLAGS, ids=lambda x: x if isinstance(x, str) else None)
def test_bad_flags_are_one_line_exit_2_and_no_run_directory(tmp_path, capsys, argv, names):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    argv = [str(bad) if a == "BAD" else a for a in argv]
    code = run_main(tmp_path / "runs", *argv)
    line = one_line_error(capsys.readouterr().err, code, str(bad) if names == "BAD" else names)
    assert line.startswith("error:")
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


def test_a_run_name_leaves_room_for_its_suffix(tmp_path, capsys, monkeypatch):
    """Run names of 254-255 bytes were accepted, then a second run started in the same second failed on `-2` ("File
    name too long"). Now a name is refused at the flag check unless a -9999 suffix fits within 255 bytes; at that
    limit two runs in one second each get their own directory."""

    def one_second(args):  # every run started in the same second
        return f"{args.env_id}__{args.exp_name}__{args.seed}__1800000000"

    monkeypatch.setattr(trainer.runlayer, "run_name", one_second)
    prefix = "CartPole-v1____1__1800000000"
    code = run_main(
        tmp_path / "runs", *CARTPOLE, "--total-timesteps", "100", "--exp-name", "x" * (254 - len(prefix))
    )
    one_line_error(capsys.readouterr().err, code, "--exp-name", "-9999")
    longest = "x" * (250 - len(prefix))
    for _ in range(2):
        assert run_main(tmp_path / "runs", *CARTPOLE, "--total-timesteps", "100", "--exp-name", longest) == 0
    runs = sorted(os.listdir(tmp_path / "runs"))
    assert [len(name.encode()) for name in runs] == [250, 252] and runs[1] == runs[0] + "-2"


@pytest.mark.parametrize(
    "argv,name",
    [
        (["--damping", "0"], "--damping"),
        (["--num-steps", "1", "--norm-adv"], "--norm-adv"),
        (["--learning-rate", "1e300"], "--learning-rate"),  # float32 cannot hold it
        (["--critic-learning-rate", "1e38"], "--critic-learning-rate"),
        (["--exp-name", X300], "--exp-name"),
    ],
)
def test_bad_input_on_the_command_line_is_one_line_and_exit_2(tmp_path, argv, name):
    """As `python -m benchmark.trainer`: one line, no traceback, no run directory."""
    proc = lab_process(tmp_path, "--env-id", "CartPole-v1", "--total-timesteps", "1000", *argv, text=True)
    _, err = proc.communicate(timeout=120)
    one_line_error(err, proc.returncode, name)
    assert "Traceback" not in err
    assert not os.listdir(tmp_path / "runs") if os.path.isdir(tmp_path / "runs") else True


@pytest.mark.parametrize(
    "argv,name",
    [
        (["--learning-rate", "abc"], "--learning-rate"),
        (["--optimizer", "foo"], "--optimizer"),
        (["--no-such-flag", "1"], "--no-such-flag"),
        (["--seed"], "--seed"),
    ],
)
def test_lab_argument_errors_are_one_line_exit_2(argv, name):
    """The lab reduces tyro's 5-9 line error box to one line naming the flag (and, for a choice,
    the choices)."""
    p = lab_run(ROOT, *argv)
    line = one_line_error(p.stderr, p.returncode, name)
    assert line.startswith("error:")
    if name == "--optimizer":
        assert all(f"'{choice}'" in line for choice in ("sgd", "adam", "cg", "kfac"))


def test_the_budget_is_rounded_down_to_whole_rollouts_and_one_rollout_is_the_least(tmp_path):
    """--total-timesteps 250 with rollouts of 100 trains 200 steps (a note on stderr names both numbers); a budget
    under one rollout is bad input."""
    proc = lab_process(tmp_path, *CARTPOLE, "--total-timesteps", "250", text=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    (note,) = [line for line in err.splitlines() if "--total-timesteps" in line]
    assert "250" in note and "200" in note
    run = only_run(tmp_path / "runs")
    assert summary(run)["status"] == "finished" and summary(run)["global_step"] == 200
    shutil.rmtree(tmp_path / "runs")
    code = run_main(tmp_path / "runs", *CARTPOLE, "--total-timesteps", "10")
    assert code == 2 and not os.path.exists(tmp_path / "runs")


def test_runs_dir_that_is_a_file_is_bad_input(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    code = run_main(f, *CARTPOLE, "--total-timesteps", "100")
    one_line_error(capsys.readouterr().err, code, "--runs-dir", str(f))


def test_a_run_directory_that_cannot_be_made_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
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
    code = trainer.main([*CARTPOLE, "--total-timesteps", "100"])
    one_line_error(capsys.readouterr().err, code, "--runs-dir", "'runs'")


# ---- environments that cannot be used ------------------------------------------------------------------------
class RaisesKeyError(gym.Env):
    def __init__(self):
        raise KeyError("no such model file")


class RaisesOSError(gym.Env):
    def __init__(self):
        raise OSError(2, "No such file or directory", "assets/robot.xml")


class RaisesTypeError(gym.Env):
    def __init__(self):
        raise TypeError("needs an argument")


class EmptyActions(helpers.RaisesAt250):
    def __init__(self):
        super().__init__()
        self.action_space = gym.spaces.Box(-1.0, 1.0, (0,), np.float32)


class EmptyObservations(helpers.RaisesAt250):
    def __init__(self):
        super().__init__()
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (0,), np.float64)


for _cls in (RaisesKeyError, RaisesOSError, RaisesTypeError, EmptyActions, EmptyObservations):
    gym.register(f"{_cls.__name__}-v0", entry_point=_cls)


@pytest.mark.parametrize("error", ["KeyError", "OSError", "TypeError"])
def test_an_environment_that_raises_anything_is_one_line(tmp_path, capsys, error):
    """The lab's environment check catches each exception type an environment raises: one line, no traceback."""
    env_id = f"Raises{error}-v0"
    code = trainer.main(["--env-id", env_id, "--runs-dir", str(tmp_path)])
    one_line_error(capsys.readouterr().err, code, env_id, error)
    assert not os.listdir(tmp_path)


def test_a_module_with_a_syntax_error_is_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "broken_env_module.py").write_text("def oops(:\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code = trainer.main(["--env-id", "broken_env_module:Broken-v0", "--runs-dir", str(tmp_path / "runs")])
    one_line_error(capsys.readouterr().err, code, "SyntaxError")


@pytest.mark.parametrize("env_id", ["EmptyActions-v0", "EmptyObservations-v0"])
def test_spaces_of_shape_zero_are_refused(tmp_path, env_id):
    proc = lab_process(
        tmp_path, "--env-id", f"{THIS}:{env_id}", "--num-steps", "100", "--total-timesteps", "200"
    )
    _, err = proc.communicate(timeout=120)
    one_line_error(err.decode(), proc.returncode, "--env-id", env_id)
    assert not os.path.exists(tmp_path / "runs")


def test_a_missing_package_is_named_not_called_an_unregistered_id(capsys):
    """CarRacing without Box2D is reported by the missing package's name, not as "not a registered gymnasium
    environment"."""
    if __import__("importlib").util.find_spec("Box2D") is not None:
        pytest.skip("Box2D is installed here")
    code = trainer.main(["--env-id", "CarRacing-v3"])
    line = one_line_error(capsys.readouterr().err, code, "--env-id", "CarRacing-v3")
    assert "box2d" in line.lower()


# ---- --track without wandb or without a login ------------------------------------------------------------------
def test_track_without_wandb_is_one_line(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_wandb(name, *a, **k):
        if name == "wandb":
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_wandb)
    code = trainer.main(
        ["--env-id", "CartPole-v1", "--track", "--runs-dir", str(tmp_path), "--no-tensorboard"]
    )
    one_line_error(capsys.readouterr().err, code, "--track", "wandb")
    assert not os.listdir(tmp_path)  # refused before a run directory was made


def test_track_without_a_wandb_login_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """--track without a W&B login is refused before W&B's interactive prompt (on a terminal) or its UsageError
    after the run directory exists: one line naming --track and
    WANDB_MODE=offline, exit 2, no run directory and no wandb/ directory; an API key or a netrc login passes."""
    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code = trainer.main(["--env-id", "CartPole-v1", "--track", "--runs-dir", "runs"])
    one_line_error(capsys.readouterr().err, code, "--track", "WANDB_MODE=offline")
    assert not os.path.exists(tmp_path / "runs") and not os.path.exists(tmp_path / "wandb")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    trainer.runlayer.check_wandb_login()  # passes: no ConfigError
    monkeypatch.delenv("WANDB_API_KEY")
    (tmp_path / "netrc").write_text("machine api.wandb.ai\n  login user\n  password " + "y" * 40 + "\n")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    trainer.runlayer.check_wandb_login()  # passes: no ConfigError
