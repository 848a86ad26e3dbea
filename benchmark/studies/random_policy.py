"""The random policy's scores: what does a policy of seeded uniform actions score on each task? The 0 of every
normalized score the lab reports (normalized = (final - random) / (the paper's best - random)). Measured, not
trained: no runs, no pre-registration; seeded uniform actions, 1000-step episodes, 50,000 steps per task by default,
scored as a trained run is (the last bin of the paper's smoothed curve: 100 bins, EWM 0.1).

    python -m benchmark.sweep --study random [--tasks CartPole,Hopper] [--budget 50000] [--dry-run]

It writes benchmark/results/random_scores.csv (compact.RANDOM_SCORES), which compact.read_random_scores reads for every
study's normalized scores; it has no page of its own.
"""

from __future__ import annotations

import os

from benchmark import compact, hparams
from benchmark.stats import write_csv
from benchmark.studies import REPO

NAME = "random"
SWEEP_OPTIONS = ("tasks", "budget")  # the sweep's options its measurement honours
PREREGISTRATION = None  # a measurement, no rule
COMMITTED_ONLY = True  # nothing to analyze: the CSV is the measurement
STEPS = 50_000


def run(args) -> int:
    """Measure the random policy on --tasks at --budget steps (default 50,000) into compact.RANDOM_SCORES; with
    --dry-run, say what it would do."""
    from benchmark import sweep

    tasks, steps = sweep.select(args.tasks, "task"), int(args.budget or STEPS)
    if args.dry_run:
        print(
            f"[sweep] random: would measure {', '.join(tasks)} at {steps:,} steps "
            f"each and write {os.path.relpath(compact.RANDOM_SCORES, REPO)}"
        )
        return 0
    random_scores(tasks, steps)
    return 0


def _episodes(task: str, steps: int, seed: int) -> tuple[list, list]:
    """(the steps at which episodes ended, their returns) of seeded uniform actions over `steps` steps."""
    import gymnasium as gym

    env = gym.make(hparams.trainer_env_id(task), disable_env_checker=True)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    ends, returns, total = [], [], 0.0
    for t in range(1, steps + 1):
        _, r, term, trunc, _ = env.step(env.action_space.sample())
        total += float(r)
        if term or trunc:
            ends.append(t)
            returns.append(total)
            total = 0.0
            env.reset()
    env.close()
    return ends, returns


def random_scores(tasks, steps: int = STEPS, seed: int = 0, out: str = compact.RANDOM_SCORES) -> list[dict]:
    """The random policy's score per task (the 0 of the normalized scores): seeded uniform actions, 1000-step episodes,
    `steps` steps; the last bin of the paper's smoothed curve (100 bins over `steps`, EWM 0.1), as for a trained run."""
    import numpy as np

    from benchmark.protocol import smoothed_curve

    hparams.register_horizons()
    rows = []
    for task in tasks:
        ends, returns = _episodes(task, steps, seed)
        curve = smoothed_curve(np.array(ends), np.array(returns), steps)
        rows.append(
            {
                "task": task,
                "env_id": hparams.task_info(task)["env_id"],
                "steps": steps,
                "episodes": len(returns),
                "score": f"{curve[-1]:.6g}",
                "mean_return": f"{np.mean(returns):.6g}",
                "std_return": f"{np.std(returns, ddof=1):.6g}" if len(returns) > 1 else "",
            }
        )
        print(rows[-1], flush=True)
    write_csv(out, rows)
    return rows
