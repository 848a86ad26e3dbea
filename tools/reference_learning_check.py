"""The learning check of the reference: 3 seeds of the paper's CartPole and Hopper rows, same flags and
budgets, for one or more copies of smac_a2c.py (e.g. the file before and after a change); prints, per file and
task, each seed's mean episodic return over the last 20 % of steps. Reads episodes.csv where a version
wrote one, else the TensorBoard scalar charts/episodic_return.

    git show <old commit>:smac_a2c.py > /tmp/smac_a2c_old.py
    python tools/reference_learning_check.py /tmp/smac_a2c_old.py smac_a2c.py
"""

import csv
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

TASKS = {
    "CartPole": "--env-id CartPole-v1 --learning-rate 5e-3 --damping 0.1 --critic-learning-rate 1e-3 "
    "--total-timesteps 100000",
    "Hopper": "--env-id Hopper-v4 --damping 1.0 --total-timesteps 200000",
}
SEEDS = (1, 2, 3)


def episodes(run: str) -> np.ndarray:
    """(global_step, episodic_return) rows of a run directory."""
    path = os.path.join(run, "episodes.csv")
    if os.path.exists(path):
        rows = list(csv.DictReader(open(path)))
        return np.array([[float(r["global_step"]), float(r["episodic_return"])] for r in rows])
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(run, size_guidance={"scalars": 0})
    events.Reload()
    return np.array([[e.step, e.value] for e in events.Scalars("charts/episodic_return")])


def last_fifth_mean(reference: str, flags: str, seed: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, os.path.abspath(reference), *flags.split(), "--seed", str(seed)]
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        (run,) = glob.glob(os.path.join(tmp, "runs", "*"))
        ep = episodes(run)
    return float(ep[ep[:, 0] > 0.8 * ep[:, 0].max(), 1].mean())


def main(files: list) -> None:
    for task, flags in TASKS.items():
        for path in files:
            values = [last_fifth_mean(path, flags, seed) for seed in SEEDS]
            per_seed = ", ".join(f"{v:.1f}" for v in values)
            print(
                f"{task} {path}: seeds {per_seed}; mean {np.mean(values):.1f} +- {np.std(values, ddof=1):.1f}"
            )


if __name__ == "__main__":
    main(sys.argv[1:])
