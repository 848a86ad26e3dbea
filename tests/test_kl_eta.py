"""updates.csv's eta (benchmark.trainer.step_length) and its reconstruction from the other columns
(benchmark.kl_eta.eta_ratio, for the kl_step study's logs written before the column): short lab runs with
--target-kl (eta chosen per update) and with the paper's fixed eta, the reconstruction against the logged eta; a
run resumed from an updates.csv without the column; the committed logs of the fixed-eta arm."""

import csv
import glob
import os

import numpy as np
import pytest
from helpers import only_run, run_main

from benchmark import compact, hparams, kl_eta, trainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWO = ["--env-id", "CartPole-v1", "--num-steps", "64", "--total-timesteps", "128"]  # two updates
SHORT = [
    "--num-steps",
    "64",
    "--total-timesteps",
    "320",
    "--learning-rate",
    "0.005",
    "--damping",
    "0.1",
]  # five


def updates_of(runs) -> dict:
    run = only_run(runs)
    data = compact.read_csv_columns(os.path.join(run, "updates.csv"), compact.UPDATE_COLS)
    assert len(data["update"]) == 5
    return data


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_reconstructed_eta_matches_the_logged_eta_under_target_kl(tmp_path, env_id):
    assert run_main(tmp_path, "--env-id", env_id, *SHORT, "--target-kl", "0.01") == 0
    u = updates_of(tmp_path)
    assert np.all(u["eta"] > 0) and np.ptp(u["eta"]) > 0  # chosen per update, not the fixed 0.005
    np.testing.assert_allclose(kl_eta.eta_ratio(u, 0.1) * 0.005, u["eta"], rtol=1e-5)


def test_fixed_eta_is_logged_and_reconstructs_to_one(tmp_path):
    assert run_main(tmp_path, "--env-id", "CartPole-v1", *SHORT) == 0
    u = updates_of(tmp_path)
    assert np.all(u["eta"] == 0.005)
    np.testing.assert_allclose(kl_eta.eta_ratio(u, 0.1), 1.0, rtol=1e-5)


def test_a_run_resumed_from_an_updates_csv_without_eta_gets_the_column(tmp_path):
    """A run begun before the column: its rows keep their values, eta empty (NaN); the new rows log eta."""
    assert run_main(tmp_path, *TWO) == 0
    run = only_run(tmp_path)
    path = os.path.join(run, "updates.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][-1] == "eta"
    with open(path, "w", newline="") as f:  # as the trainer wrote it before the column
        csv.writer(f).writerows(r[:-1] for r in rows)
    assert run_main(tmp_path, "--resume", run, "--total-timesteps", "256") == 0
    u = compact.read_csv_columns(path, compact.UPDATE_COLS)
    assert list(u["update"]) == [1, 2, 3, 4] and np.isnan(u["eta"][:2]).all()
    assert list(u["eta"][2:]) == [trainer.Args().learning_rate] * 2


def test_a_run_without_eta_packs_its_updates(tmp_path):
    """compact.pack of an updates.csv without eta keeps its rows (a log without the column, as the old ones)."""
    assert run_main(tmp_path, *TWO) == 0
    run = only_run(tmp_path)
    path = os.path.join(run, "updates.csv")
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(r[:-1] for r in rows)
    out = compact.pack(run, str(tmp_path / "seed1.json.gz"), "CartPole", "smac", 1)
    u = compact.load(out)["updates"]
    assert "eta" not in u and list(u["update"]) == [1, 2]


@pytest.mark.parametrize(
    "optimizer, flags, eta",
    [("sgd", [], 0.005), ("cg", ["--cg-max-kl", "0.01"], None), ("kfac", ["--kfac-kl-clip", "1e-9"], None)],
)
def test_step_length_of_the_baselines(tmp_path, optimizer, flags, eta):
    """AC-SGD: --learning-rate; AC-CG with --cg-max-kl: TRPO's beta = |theta change| / |x|, chosen per update;
    AC-KFAC: --learning-rate times ACKTR's clip factor (a tiny --kfac-kl-clip: below --learning-rate)."""
    assert run_main(tmp_path, *TWO, "--learning-rate", "0.005", "--optimizer", optimizer, *flags) == 0
    u = compact.read_csv_columns(os.path.join(only_run(tmp_path), "updates.csv"), compact.UPDATE_COLS)
    assert np.all(np.isfinite(u["eta"]))
    if eta is not None:
        assert np.all(u["eta"] == eta)
    else:
        assert np.all(u["eta"] > 0) and np.all(u["eta"] != 0.005)


@pytest.mark.parametrize("task", ["CartPole", "Pendulum", "Hopper", "HalfCheetah"])
def test_the_fixed_eta_arm_reconstructs_to_one(task):
    """The stage-1 grid's SMAC runs of the kl_step study's tasks (its fixed-eta arm), with hyperparams.toml's
    damping: eta_ratio = 1 on every update, to the logs' 6 significant digits and the float32 step's rounding."""
    paths = sorted(glob.glob(os.path.join(ROOT, f"benchmark/results/logs/norm/{task}/smac/seed*.json.gz")))
    if not paths:
        pytest.skip("no committed fixed-eta logs")
    for path in paths:
        r = kl_eta.eta_ratio(compact.load(path)["updates"], hparams.settings(task, "smac")["damping"])
        assert len(r) > 0 and np.abs(r - 1).max() < 3e-5, path
