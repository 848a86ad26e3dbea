"""Measure the paper-silent normalization defaults (docs/implementation.md).

    python benchmark/defaults_sweep.py --workers 15 --out docs/defaults_sweep.csv

Grid: 4 normalization settings x {CartPole-v1, Pendulum-v1, Hopper-v4} x {smac, sgd, adam}
(the paper's rows for each) x seeds. Rule, fixed before running: the default is the setting
with the highest mean, over every env x algorithm cell, of the min-max normalized final
return (min and max taken per env over all settings and algorithms); final return = mean
episodic return over the last 10% of training steps, averaged over seeds.
"""

import argparse
import csv
import itertools
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTINGS = {
    "obs+reward": ["--norm-obs", "--norm-reward", "--no-norm-adv"],
    "obs": ["--norm-obs", "--no-norm-reward", "--no-norm-adv"],
    "none": ["--no-norm-obs", "--no-norm-reward", "--no-norm-adv"],
    "obs+reward+adv": ["--norm-obs", "--norm-reward", "--norm-adv"],
}
# the paper's hyperparameter rows (eta, alpha, lambda)
ROWS = {
    "CartPole-v1": {"smac": (5e-3, 1e-3, 0.1), "sgd": (7e-3, 1e-3, None), "adam": (7e-5, 1e-3, None)},
    "Pendulum-v1": {"smac": (6e-3, 1e-3, 0.1), "sgd": (5e-2, 1e-3, None), "adam": (7e-4, 1e-3, None)},
    "Hopper-v4": {"smac": (1e-2, 1e-4, 1.0), "sgd": (1e-3, 1e-4, None), "adam": (1e-4, 1e-4, None)},
}


def final_return(run_dir: str, total: int) -> float:
    with open(os.path.join(run_dir, "episodes.csv")) as f:
        rows = list(csv.DictReader(f))
    tail = [float(r["episodic_return"]) for r in rows if int(r["global_step"]) > 0.9 * total]
    return sum(tail) / len(tail) if tail else float("nan")


def run(job, runs_dir):
    setting, env_id, algo, seed, total = job
    eta, alpha, lam = ROWS[env_id][algo]
    cmd = [sys.executable, "-m", "benchmark.trainer", "--env-id", env_id, "--optimizer", algo,
           "--learning-rate", str(eta), "--critic-learning-rate", str(alpha), "--seed", str(seed),
           "--total-timesteps", str(total), "--no-tensorboard",
           "--exp-name", f"{setting}-{algo}", "--runs-dir", os.path.join(runs_dir, f"{setting}-{env_id}-{algo}-{seed}"),
           *SETTINGS[setting]] + (["--damping", str(lam)] if lam else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    sub = os.path.join(runs_dir, f"{setting}-{env_id}-{algo}-{seed}")
    run_dir = os.path.join(sub, os.listdir(sub)[0])
    status = json.load(open(os.path.join(run_dir, "summary.json")))["status"]
    return {"setting": setting, "env_id": env_id, "algo": algo, "seed": seed, "steps": total,
            "status": status, "final_return": final_return(run_dir, total), "exit": proc.returncode}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--steps", default="CartPole-v1=200000,Pendulum-v1=200000,Hopper-v4=500000")
    p.add_argument("--out", default="docs/defaults_sweep.csv")
    opts = p.parse_args()
    steps = {k: int(v) for k, v in (kv.split("=") for kv in opts.steps.split(","))}
    jobs = [(s, e, a, seed, steps[e]) for s, e, a, seed in
            itertools.product(SETTINGS, ROWS, ["smac", "sgd", "adam"], range(1, opts.seeds + 1))]
    jobs.sort(key=lambda j: -j[4])  # longest first
    os.makedirs(os.path.dirname(os.path.abspath(opts.out)), exist_ok=True)
    fields = ["setting", "env_id", "algo", "seed", "steps", "status", "final_return", "exit"]
    with tempfile.TemporaryDirectory() as runs_dir, ThreadPoolExecutor(opts.workers) as pool, \
            open(opts.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for future in as_completed([pool.submit(run, j, runs_dir) for j in jobs]):
            w.writerow(future.result())  # written as each run finishes, so a cut-off sweep keeps its rows
            f.flush()
    summarize(opts.out)


def summarize(path):
    rows = list(csv.DictReader(open(path)))
    cells = {}
    for r in rows:
        cells.setdefault((r["setting"], r["env_id"], r["algo"]), []).append(float(r["final_return"]))
    mean = {k: sum(v) / len(v) for k, v in cells.items()}
    if len(mean) < len(SETTINGS) * len(ROWS) * 3:
        print(f"incomplete sweep: {len(mean)} of {len(SETTINGS) * len(ROWS) * 3} cells")
        return
    envs = sorted({k[1] for k in mean})
    lo = {e: min(v for k, v in mean.items() if k[1] == e) for e in envs}
    hi = {e: max(v for k, v in mean.items() if k[1] == e) for e in envs}
    print("setting          " + "  ".join(f"{e}/{a}"[:18].rjust(18) for e in envs for a in ("smac", "sgd", "adam"))
          + "   score")
    scores = {}
    for s in SETTINGS:
        norm = [(mean[(s, e, a)] - lo[e]) / (hi[e] - lo[e] + 1e-12) for e in envs for a in ("smac", "sgd", "adam")]
        scores[s] = sum(norm) / len(norm)
        print(f"{s:16s} " + "  ".join(f"{mean[(s, e, a)]:18.1f}" for e in envs for a in ("smac", "sgd", "adam"))
              + f"   {scores[s]:.3f}")
    print("chosen by the rule:", max(scores, key=scores.get))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--summarize":
        summarize(sys.argv[2])
    else:
        main()
