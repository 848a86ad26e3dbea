"""The random policy's score per task, measured with the paper's protocol (issue 12): the 0 of the
normalized scores that rliable aggregates (1 = the best of the paper's table).

    python benchmark/random_scores.py            # -> benchmark/results/random_scores.csv
    python benchmark/random_scores.py --steps 20000 --tasks CartPole,Hopper

Per task: uniformly random actions from the action space (seeded), the same 1000-step horizon as
the grid (benchmark/envs.py where the registered limit differs), --steps environment steps; the
episodes' returns go through the paper's protocol (100 bins over --steps, EWM 0.1) and the last
smoothed bin is the score, as for a trained run. Mean and std of the episode returns are kept too.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import hparams  # noqa: E402
from benchmark.protocol import smoothed_curve  # noqa: E402

OUT = os.path.join(REPO, "benchmark", "results", "random_scores.csv")


def random_score(task: str, steps: int, seed: int = 0) -> dict:
    import gymnasium as gym
    env = gym.make(hparams.trainer_env_id(task), disable_env_checker=True)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    ends, returns, total = [], [], 0.0
    for t in range(1, steps + 1):
        obs, r, term, trunc, _ = env.step(env.action_space.sample())
        total += float(r)
        if term or trunc:
            ends.append(t)
            returns.append(total)
            total = 0.0
            obs, _ = env.reset()
    env.close()
    curve = smoothed_curve(np.array(ends), np.array(returns), steps)
    return {"task": task, "env_id": hparams.task_info(task)["env_id"], "steps": steps, "episodes": len(returns),
            "score": f"{curve[-1]:.6g}", "mean_return": f"{np.mean(returns):.6g}",
            "std_return": f"{np.std(returns, ddof=1):.6g}" if len(returns) > 1 else ""}


def read(path: str = OUT) -> dict:
    """{task: score} from the CSV."""
    with open(path, newline="") as f:
        return {r["task"]: float(r["score"]) for r in csv.DictReader(f)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=50_000)
    p.add_argument("--tasks", default="all")
    p.add_argument("--out", default=OUT)
    a = p.parse_args(argv)
    tasks = hparams.tasks() if a.tasks == "all" else [hparams.resolve_task(t) for t in a.tasks.split(",")]
    rows = []
    for t in tasks:
        rows.append(random_score(t, a.steps))
        print(rows[-1], flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
