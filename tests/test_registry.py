"""The lab's registry of algorithms: a sixth optimizer (a toy sign-SGD step) added from this module, as a
researcher would add one (its step, one registry entry, its rows in a copy of hyperparams.toml), runs through the
sweep (tiny budget), the aggregation and the report into a temporary directory; hyperparams.toml is validated on
load (a typo'd key, a missing row, an unregistered algorithm: one line naming file, table and key, exit 2)."""

import json
import os
import subprocess
import sys

import torch

from benchmark import algorithms

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
TOML = os.path.join(ROOT, "benchmark", "hyperparams.toml")
TASKS = (
    "Acrobot",
    "CartPole",
    "Pendulum",
    "HalfCheetah",
    "Hopper",
    "Swimmer",
    "Walker2d",
    "Humanoid",
    "Pusher",
)


def sign_sgd_step(actor, batch, args, state):
    """The toy optimizer: theta <- theta + eta sign(g)."""
    import smac_a2c

    params = list(actor.parameters())
    objective = (actor.log_prob(batch["obs"], batch["actions"]) * batch["advantages"]).mean()
    g = smac_a2c.flat_grad(objective, params)
    step = torch.sign(g)
    smac_a2c.apply_step_(params, step, args.learning_rate)
    return {"g": g, "step": step}


TOY = algorithms.Algorithm("sign-sgd", "Sign-SGD (toy)", "tab:brown", "test_registry:sign_sgd_step")
if "test_registry" in os.environ.get("BENCHMARK_PLUGINS", ""):  # imported as a plugin: the lab's processes
    algorithms.register(TOY)


def toml_with(tmp_path, extra: str, replace=("", "")) -> str:
    path = tmp_path / "hyperparams.toml"
    path.write_text(open(TOML).read().replace(*replace) + extra)
    return str(path)


def lab(*argv, env, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_a_toy_optimizer_runs_through_sweep_aggregate_and_report(tmp_path):
    rows = "".join(
        f"\n[hp.{task}.sign-sgd]\nlearning_rate = 1e-3\ncritic_learning_rate = 1e-3\nnum_steps = 1000\n"
        f'gamma = 0.99\ngae_lambda = 0.9\nsource = "ours"\n'
        for task in TASKS
    )
    env = {
        **os.environ,
        "BENCHMARK_HYPERPARAMS": toml_with(tmp_path, rows),
        "BENCHMARK_PLUGINS": "test_registry",
        "PYTHONPATH": os.pathsep.join([HERE, ROOT]),
    }
    sweep = lab(
        "benchmark.sweep", "--tasks", "CartPole", "--algos", "sign-sgd,sgd", "--seeds", "1-2", "--budget", "600",
        "--num-steps", "100", "--runs-dir", str(tmp_path / "runs"), "--logs-dir", str(tmp_path / "logs"),
        "--workers", "2", "--allow-dirty", env=env,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    logs = sorted(os.listdir(tmp_path / "logs" / "CartPole"))
    assert logs == ["sgd", "sign-sgd"] and len(os.listdir(tmp_path / "logs" / "CartPole" / "sign-sgd")) == 2
    report = lab(
        "benchmark.report", "--logs", str(tmp_path / "logs"), "--out-dir", str(tmp_path / "out"), env=env
    )
    assert report.returncode == 0, report.stdout + report.stderr
    data = json.load(open(tmp_path / "out" / "results" / "report.json"))  # what its REPORT.md prints
    assert data["algos"] == ["AC-SGD", "Sign-SGD (toy)"] and data["runs"] == 4
    assert [c["n"] for c in data["rows"][0]["cells"]] == [2, 2]
    assert os.path.isfile(tmp_path / "out" / "returns_smoothed.png")
    assert os.path.isfile(tmp_path / "out" / "results" / "final.csv")
    # the committed report was not touched
    assert not subprocess.run(["git", "status", "--porcelain", "benchmark/REPORT.md"], cwd=ROOT, capture_output=True,
                              text=True).stdout  # fmt: skip


def test_a_typo_in_hyperparams_toml_is_refused_by_name(tmp_path):
    """`lerning_rate = 0.5` under [hp.Hopper.smac] is refused, not silently dropped (the paper's value run)."""
    bad = toml_with(tmp_path, "", ("[hp.Hopper.smac]\n", "[hp.Hopper.smac]\nlerning_rate = 0.5\n"))
    env = {**os.environ, "BENCHMARK_HYPERPARAMS": bad}
    proc = lab("benchmark.sweep", "--tasks", "Hopper", "--algos", "smac", "--dry-run", env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "hyperparams.toml" in lines[0] and "[hp.Hopper.smac]" in lines[0] and "'lerning_rate'" in lines[0]


def test_a_missing_row_and_an_unregistered_algorithm_are_refused(tmp_path):
    missing = toml_with(tmp_path, "", ("[hp.Swimmer.cg]\n", "[hp.Swimmer.cg-removed]\n"))
    proc = lab("benchmark.report", env={**os.environ, "BENCHMARK_HYPERPARAMS": missing})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "[hp.Swimmer.cg-removed]" in lines[0], proc.stderr
    os.remove(missing)
    extra = toml_with(tmp_path, "\n[hp.Swimmer.sign-sgd]\nlearning_rate = 0.1\n")
    proc = lab("benchmark.sweep", "--dry-run", env={**os.environ, "BENCHMARK_HYPERPARAMS": extra})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "'sign-sgd'" in lines[0], proc.stderr


def test_the_registry_drives_the_trainers_choices_and_the_flag_order():
    from benchmark import hparams, trainer

    assert algorithms.optimizers() == ("smac", "sgd", "adam", "cg", "kfac")
    assert tuple(trainer.ACTOR_STEPS) == algorithms.optimizers()
    assert trainer.ACTOR_STEPS["cg"] is trainer.cg_step
    assert hparams.flag_keys()[:6] == algorithms.COMMON_FLAGS + ("damping",)
    assert hparams.algo_label("sgd-matched") == "AC-SGD matched (ours)"
