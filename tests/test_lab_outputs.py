"""What researchers expect from a CleanRL-style script (issue 15): the -v4 note once, a library
progress bar only on a terminal, --plot of one or several runs."""

import os

import matplotlib.image
import numpy as np
import pytest
from helpers import ROOT, lab_run

from benchmark import trainer


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
    assert p.stderr.count("out of date") == notes
    if notes:
        assert "-v5 ids work too" in p.stderr and "paper" in p.stderr


def test_no_progress_output_when_stdout_is_not_a_terminal(tmp_path):
    p = lab_run(
        ROOT,
        "--no-tensorboard",
        "--env-id",
        "CartPole-v1",
        "--num-steps",
        "200",
        "--total-timesteps",
        "1000",
        "--runs-dir",
        str(tmp_path),
    )
    assert p.returncode == 0 and "\r" not in p.stdout and "it/s" not in p.stdout + p.stderr
    assert p.stdout.strip().startswith("finished:")


def test_plot_two_runs(tmp_path, capsys):
    for opt in ("smac", "sgd"):
        assert (
            trainer.main(
                [
                    "--env-id",
                    "CartPole-v1",
                    "--optimizer",
                    opt,
                    "--num-steps",
                    "200",
                    "--total-timesteps",
                    "4000",
                    "--runs-dir",
                    str(tmp_path / "runs"),
                    "--no-tensorboard",
                ]
            )
            == 0
        )
    runs = sorted(str(tmp_path / "runs" / d) for d in os.listdir(tmp_path / "runs"))
    out = str(tmp_path / "both.png")
    assert trainer.main(["--plot", *runs, "--plot-out", out]) == 0
    img = matplotlib.image.imread(out)
    assert img.shape[1] > 1.5 * img.shape[0]  # three panels side by side (a SMAC run is among them)
    assert img[..., :3].std() > 0.05  # not blank
    assert trainer.main(["--plot", runs[1]]) == 0 and os.path.isfile(os.path.join(runs[1], "plot.png"))
    single = matplotlib.image.imread(os.path.join(runs[1], "plot.png"))
    assert single.shape[1] < 1.7 * single.shape[0]  # sgd only: the return panel alone
    capsys.readouterr()
    assert trainer.main(["--plot", str(tmp_path / "nope")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_plot_curve_is_the_reports_protocol():
    """--plot bins over the run's budget as benchmark/protocol.py does (the removed protocol_curve binned over
    the last episode's step, so a run that stopped early disagreed with the report)."""
    from benchmark import protocol

    steps = np.arange(1, 101, dtype=float) * 10  # one episode per 10 steps, up to step 1000
    values = np.where(steps <= 500, 0.0, 100.0)
    ends, curve = trainer.plot_curve(steps, values)  # budget = the last step: one episode per bin
    assert ends[-1] == 1000 and curve[49] == 0.0
    assert curve[50] == pytest.approx(10.0) and curve[51] == pytest.approx(
        19.0
    )  # EWM 0.1: 0.1*100, 0.1*100 + 0.9*10
    ends, curve = trainer.plot_curve(steps, values, budget=2000)  # a run stopped at half its budget
    np.testing.assert_array_equal(curve, protocol.smoothed_curve(steps, values, 2000, last_step=1000))
    assert ends[-1] == 2000 and np.isnan(curve[50:]).all() and curve[49] == pytest.approx(100 * (1 - 0.9**25))


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
        "--no-tensorboard",
        "--env-id",
        "CartPole-v1",
        "--num-steps",
        "200",
        "--total-timesteps",
        "1000",
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


def test_track_without_wandb_is_one_line(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__
    monkeypatch.setattr(
        builtins,
        "__import__",
        lambda name, *a, **k: (
            (_ for _ in ()).throw(ImportError(name)) if name == "wandb" else real_import(name, *a, **k)
        ),
    )
    assert (
        trainer.main(["--env-id", "CartPole-v1", "--track", "--runs-dir", str(tmp_path), "--no-tensorboard"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--track needs wandb" in err
    assert not os.listdir(tmp_path)  # refused before a run directory was made


class Endless(__import__("gymnasium").Env):
    """No time limit and no termination: an evaluation must end it."""

    def __init__(self):
        import gymnasium as gym

        self.observation_space, self.action_space = (
            gym.spaces.Box(-1.0, 1.0, (2,), np.float64),
            gym.spaces.Discrete(2),
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        return np.zeros(2), 1.0, False, False, {}


class Broken(__import__("gymnasium").Env):
    def __init__(self):
        raise TypeError("needs an argument")


def test_evaluation_ends_an_endless_episode_and_refuses_another_env(tmp_path, capsys):
    """Issue 26 #11 and #13 (parts): --eval-checkpoint never returned on an environment without a time limit; it
    now stops each episode at --eval-max-steps. An explicit --env-id other than the checkpoint's is refused in one
    line (it evaluated the checkpoint's own environment silently). An environment constructor raising TypeError is
    one line, exit 2 (it was a traceback)."""
    import gymnasium as gym

    gym.register("EndlessTest-v0", entry_point=Endless)
    gym.register("BrokenTest-v0", entry_point=Broken)
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
    assert "300.00 +- 0.00 over 2 episodes" in capsys.readouterr().out  # reward 1 per step, 300 steps each
    assert trainer.main(["--eval-checkpoint", run, "--env-id", "CartPole-v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not match" in err
    assert trainer.main(["--env-id", "BrokenTest-v0", "--runs-dir", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "TypeError" in err and not os.path.exists(tmp_path / "b")


def test_ctrl_c_during_evaluation_is_one_line_and_130(tmp_path, capsys, monkeypatch):
    """Issue 26 #11 (part): Ctrl-C during --eval-checkpoint (or before training starts) was a traceback."""
    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "50",
                "--total-timesteps",
                "50",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = os.path.join(tmp_path, os.listdir(tmp_path)[0])
    monkeypatch.setattr(trainer, "evaluate", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    capsys.readouterr()
    assert trainer.main(["--eval-checkpoint", run]) == 130
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "interrupted" in err


def test_plot_of_damaged_runs_is_one_line_or_still_a_figure(tmp_path, capsys):
    """Issue 26 #10: --plot crashed on an empty CSV, a missing updates.csv, a bad config.json and an unwritable
    --plot-out, and drew an empty figure with exit 0 for header-less CSVs."""
    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "300",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = os.path.join(tmp_path / "runs", os.listdir(tmp_path / "runs")[0])
    os.remove(os.path.join(run, "updates.csv"))
    open(os.path.join(run, "config.json"), "w").write("{not json")
    assert (
        trainer.main(["--plot", run, "--plot-out", str(tmp_path / "ok.png")]) == 0
    )  # still plotted, unlabelled
    assert (tmp_path / "ok.png").stat().st_size > 1000
    capsys.readouterr()
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert (
        trainer.main(["--plot", run, "--plot-out", str(blocked / "x.png")]) == 2
    )  # a file where a directory is needed
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    for content, needle in (("", "nothing to plot"), ("1,2,3\n4,5,6\n", "header-less")):
        open(os.path.join(run, "episodes.csv"), "w").write(content)
        assert trainer.main(["--plot", run, "--plot-out", str(tmp_path / "x.png")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--learning-rate", "abc"], "--learning-rate"),
        (["--optimizer", "foo"], "'sgd', 'adam', 'cg', 'kfac'"),
        (["--no-such-flag", "1"], "--no-such-flag"),
        (["--seed"], "--seed"),
    ],
)
def test_lab_argument_errors_are_one_line_exit_2(argv, needle):
    """Issue 26 #12 (the lab's half): tyro's 5-9 line error box became one line naming the flag."""
    p = lab_run(ROOT, *argv)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], (
        p.stderr
    )


def test_track_without_a_wandb_login_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """Issue 26 #2: --track without a W&B login blocked on W&B's interactive prompt (on a terminal) or raised
    UsageError after the run directory existed. It is now refused before: one line naming `wandb login` and
    WANDB_MODE=offline, exit 2, no run directory; an API key or offline mode passes the check."""
    for var in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    assert trainer.main(["--env-id", "CartPole-v1", "--track", "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "wandb login" in err and "WANDB_MODE=offline" in err
    assert not os.path.exists(tmp_path / "runs")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    trainer.runlayer.check_wandb_login()  # passes: no ConfigError
    monkeypatch.delenv("WANDB_API_KEY")
    (tmp_path / "netrc").write_text("machine api.wandb.ai\n  login user\n  password " + "y" * 40 + "\n")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    trainer.runlayer.check_wandb_login()  # passes: no ConfigError


def test_a_missing_package_is_named_not_called_an_unregistered_id(capsys):
    """Issue 26 #12: CarRacing without Box2D was reported as "not a registered gymnasium environment"."""
    pytest.importorskip("gymnasium")
    if __import__("importlib").util.find_spec("Box2D") is not None:
        pytest.skip("Box2D is installed here")
    assert trainer.main(["--env-id", "CarRacing-v3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not installed" in err and "not a registered" not in err
