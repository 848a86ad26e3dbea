"""The normalization-defaults sweep: which of the paper-silent normalization settings (observation, reward and
advantage normalization on or off: SETTINGS) should the lab's trainer default to? 4 settings x 3 tasks (CartPole,
Pendulum, Hopper on their registered horizons) x the paper's SMAC, AC-SGD and AC-Adam rows x 5 seeds. The rule, fixed
before it ran (its pre-registration: the comment at SETTINGS, no toml): the default is the setting with the highest
mean, over every task x algorithm cell, of the min-max normalized final return (min and max per task over all
settings and algorithms); final return = mean episodic return over the last 10% of training steps, averaged over
seeds.

    python -m benchmark.sweep --study defaults --workers 2   # the runs (resumable; committed logs count as done)
    python -m benchmark.studies.defaults                     # each setting's score and the rule's choice

Its compact logs are committed under benchmark/results/logs/defaults/<setting>; the report writes one row per run
to docs/defaults_sweep.csv (docs/implementation.md quotes it).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from typing import Optional

import numpy as np

from benchmark import compact, hparams
from benchmark.stats import write_csv
from benchmark.studies import REPO

NAME = "defaults"
# the sweep's options its jobs honour; each task's budget is its own
SWEEP_OPTIONS = ("seeds", "runs_dir", "logs_dir", "checkpoint_every")
PREREGISTRATION = None  # the rule was fixed before the runs, in the comment at SETTINGS (no toml)
COMMITTED_ONLY = True

# The paper-silent normalization defaults (docs/implementation.md): 4 settings x 3 tasks x 3 algorithms x 5 seeds.
# Rule, fixed before running: the default is the setting with the highest mean, over every task x algorithm cell, of
# the min-max normalized final return (min and max per task over all settings and algorithms); final return = mean
# episodic return over the last 10% of training steps, averaged over seeds.
SETTINGS = {
    "obs+reward": ["--norm-obs", "--norm-reward", "--no-norm-adv"],
    "obs": ["--norm-obs", "--no-norm-reward", "--no-norm-adv"],
    "none": ["--no-norm-obs", "--no-norm-reward", "--no-norm-adv"],
    "obs+reward+adv": ["--norm-obs", "--norm-reward", "--norm-adv"],
}
ROWS = {  # the paper's rows (eta, alpha, lambda), on the registered (gym) horizons
    "CartPole-v1": {"smac": (5e-3, 1e-3, 0.1), "sgd": (7e-3, 1e-3, None), "adam": (7e-5, 1e-3, None)},
    "Pendulum-v1": {"smac": (6e-3, 1e-3, 0.1), "sgd": (5e-2, 1e-3, None), "adam": (7e-4, 1e-3, None)},
    "Hopper-v4": {"smac": (1e-2, 1e-4, 1.0), "sgd": (1e-3, 1e-4, None), "adam": (1e-4, 1e-4, None)},
}
# as run (docs/defaults_sweep.csv)
STEPS = {
    "CartPole-v1": 200_000,
    "Pendulum-v1": 200_000,
    "Hopper-v4": 300_000,
}
LOGS = os.path.join(REPO, "benchmark", "results", "logs", "defaults")
SEEDS = "1-5"
ALGOS = ("smac", "sgd", "adam")
CSV = os.path.join(REPO, "docs", "defaults_sweep.csv")


# ---- the job list
def jobs(args) -> list:
    """The study's jobs from the sweep's flags (--seeds, --runs-dir, --logs-dir, --checkpoint-every)."""
    from benchmark import sweep

    logs = sweep.logs_dir_of(args, LOGS)
    seeds = hparams.parse_seeds(args.seeds or SEEDS)
    return defaults_jobs(seeds, args.runs_dir, logs, args.checkpoint_every)


def defaults_jobs(seeds, runs_dir=None, logs_dir=LOGS, checkpoint_every=10) -> list:
    """Every setting x task x algorithm x seed, longest first."""
    from benchmark import sweep

    runs_dir = runs_dir or f"{sweep.DEFAULT_RUNS}_defaults"
    out = []
    for setting, env_id, algo, seed in itertools.product(SETTINGS, ROWS, ALGOS, seeds):
        eta, alpha, lam = ROWS[env_id][algo]
        flags = [
            "--env-id",
            env_id,
            "--optimizer",
            algo,
            "--learning-rate",
            str(eta),
            "--critic-learning-rate",
            str(alpha),
        ] + (["--damping", str(lam)] if lam else [])
        out.append(
            sweep._job(
                os.path.join(runs_dir, setting),
                env_id.split("-v")[0],
                algo,
                seed,
                STEPS[env_id],
                flags,
                checkpoint_every,
                extra_flags=SETTINGS[setting],
                logs_dir=sweep.logs_under(logs_dir, setting),
                tag=setting,
            )
        )
    return sorted(out, key=lambda j: -j.budget)


# ---- the runs' final returns, the rule's score
def defaults_rows(logs_dir: str = LOGS) -> list[dict]:
    """One row per run: final return = mean episodic return over the last 10% of the run's steps."""
    rows = []
    for setting in SETTINGS:
        for run in compact.discover_logs(os.path.join(logs_dir, setting)):
            ep, steps = run["episodes"], int(run["job_budget"])
            tail = ep["episodic_return"][ep["global_step"] > 0.9 * steps]
            rows.append(
                {
                    "setting": setting,
                    "env_id": run["cfg"]["env_id"],
                    "algo": run["algo"],
                    "seed": run["seed"],
                    "steps": steps,
                    "status": run["status"],
                    "final_return": f"{tail.mean():.6g}" if tail.size else "",
                }
            )
    return rows


def write_rows(rows: list[dict], path: str = CSV) -> Optional[str]:
    """docs/defaults_sweep.csv from defaults_rows' rows, sorted (None, and nothing written, without rows)."""
    if rows:
        write_csv(path, sorted(rows, key=lambda r: (r["setting"], r["env_id"], r["algo"], r["seed"])))
    return path if rows else None


def scores(rows: list[dict], settings=SETTINGS) -> tuple[dict, list[str], dict]:
    """(seed-mean final by (setting, env_id, algo), the env ids, each setting's score): the mean over the task x
    algorithm cells of the seed-mean final min-max normalized per task over every setting and algorithm."""
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["setting"], r["env_id"], r["algo"]), []).append(float(r["final_return"]))
    mean = {k: float(np.mean(v)) for k, v in cells.items()}
    envs = sorted({k[1] for k in mean})
    lo, hi = ({e: extreme(v for k, v in mean.items() if k[1] == e) for e in envs} for extreme in (min, max))
    score = {
        s: float(np.mean([(mean[(s, e, a)] - lo[e]) / (hi[e] - lo[e] + 1e-12) for e in envs for a in ALGOS]))
        for s in settings
    }
    return mean, envs, score


# ---- the study's contract
def analyze(where, done: dict) -> dict:
    """{"rows": defaults_rows of the committed logs}."""
    return {"rows": defaults_rows(LOGS)}


def write(result: dict, where) -> list[str]:
    """docs/defaults_sweep.csv ([] and nothing written without runs)."""
    path = write_rows(result["rows"], CSV)
    return [path] if path else []


# ---- command line
def main(argv=None) -> int:
    """Score = mean over the task x algorithm cells of the seed-mean final return min-max normalized per task over
    every setting and algorithm; the rule picks the highest."""
    argparse.ArgumentParser(
        prog="python -m benchmark.studies.defaults",
        description="the normalization-defaults sweep: final "
        "returns per setting, each setting's score and the rule's choice",
    ).parse_args(argv)
    rows = defaults_rows(LOGS)
    if len(rows) < len(SETTINGS) * len(ROWS) * 3:
        print(
            f"error: {len(rows)} runs in {LOGS}; run `python -m benchmark.sweep --study defaults`",
            file=sys.stderr,
        )
        return 2
    mean, envs, score = scores(rows)
    print("| setting | " + " | ".join(f"{e.split('-v')[0]} {a}" for e in envs for a in ALGOS) + " | score |")
    for s in SETTINGS:
        print(
            f"| {s} | "
            + " | ".join(f"{mean[(s, e, a)]:.1f}" for e in envs for a in ALGOS)
            + f" | {score[s]:.3f} |"
        )
    print(f"chosen by the rule: {max(score, key=score.get)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
