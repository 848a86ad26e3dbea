"""Compact run logs: what the reports need from one run, in one small gzipped JSON file.

    benchmark/results/logs/{task}/{algo}/seed{n}.json.gz            (the grid, issue 12)
    benchmark/results/fidelity/logs/{reading}/{task}/{algo}/seed{n}.json.gz   (the fidelity study)

A file holds the run's status, budget and flags, every finished episode (global_step, return,
length) and every update's diagnostics (the columns of updates.csv), numbers to 6 significant
digits, NaN as null. A few tens to a few hundred KB per run; checkpoints and TensorBoard files
stay out of git. sweep.py writes one when a run finishes or diverges and treats a committed one
as a finished run, so a grid continues across sessions where the last one stopped.

    python benchmark/compact.py pack benchmark/runs --logs benchmark/results/logs   # pack every finished run
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import math
import os
import sys
from typing import Optional

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

EPISODE_COLS = ["global_step", "episodic_return", "episodic_length"]
UPDATE_COLS = ["update", "global_step", "value_loss", "mean_logprob", "entropy", "ell_sq", "g_norm", "step_norm",
               "cos_g_step", "step_par_norm", "step_perp_norm", "actor_update_ms", "sps"]
FORMAT = 1


def log_path(logs_dir: str, task: str, algo: str, seed: int) -> str:
    return os.path.join(logs_dir, task, algo, f"seed{seed}.json.gz")


def _num(x: float):
    if x is None or not math.isfinite(x):
        return None
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(f"{x:.6g}")


def _columns(path: str, cols: list[str]) -> dict:
    from benchmark.aggregate import read_csv_columns  # drops torn lines of a killed run
    data = read_csv_columns(path, cols)
    return {c: [_num(v) for v in data[c].tolist()] for c in cols}


def pack(run_dir: str, out_path: str, task: str, algo: str, seed: int, budget: Optional[int] = None) -> str:
    """Write run_dir's compact log to out_path (atomic). Returns out_path."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    cfg = {}
    if os.path.isfile(os.path.join(run_dir, "config.json")):
        with open(os.path.join(run_dir, "config.json")) as f:
            cfg = json.load(f)
    record = {"format": FORMAT, "task": task, "algo": algo, "seed": seed, "budget": budget,
              "status": summary.get("status"), "global_step": summary.get("global_step"),
              "updates_done": summary.get("updates"), "wall_time_s": summary.get("wall_time_s"),
              "args": cfg.get("args", {}), "versions": {k: cfg.get(k) for k in ("torch", "gymnasium", "mujoco",
                                                                                 "numpy", "python", "device")},
              "episodes": _columns(os.path.join(run_dir, "episodes.csv"), EPISODE_COLS),
              "updates": _columns(os.path.join(run_dir, "updates.csv"), UPDATE_COLS)}
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    tmp = out_path + ".tmp"
    with gzip.open(tmp, "wt", compresslevel=9) as f:
        json.dump(record, f, separators=(",", ":"))
    os.replace(tmp, out_path)
    return out_path


def load(path: str) -> dict:
    """A compact log as the dict aggregate.discover() gives for a run directory (arrays as numpy)."""
    with gzip.open(path, "rt") as f:
        rec = json.load(f)
    arr = lambda v: np.asarray([np.nan if x is None else x for x in v], dtype=np.float64)
    args = rec.get("args", {})
    return {"task": rec["task"], "algo": rec["algo"], "seed": int(rec["seed"]), "seed_dir": None, "run_dir": path,
            "job_budget": rec.get("budget"), "status": rec.get("status") or "running?",
            "last_step": int(rec.get("global_step") or 0), "damping": args.get("damping"),
            "num_steps": args.get("num_steps"), "cfg": args,
            "episodes": {c: arr(v) for c, v in rec["episodes"].items()},
            "updates": {c: arr(v) for c, v in rec["updates"].items()}}


def header(path: str) -> Optional[dict]:
    """(status, global_step, budget) of a compact log, or None if it is missing or unreadable."""
    try:
        with gzip.open(path, "rt") as f:
            rec = json.load(f)
        return {"status": rec.get("status"), "global_step": int(rec.get("global_step") or 0),
                "budget": rec.get("budget")}
    except (OSError, ValueError, EOFError):
        return None


def discover_logs(logs_dir: str) -> list[dict]:
    """Every {task}/{algo}/seed{n}.json.gz under logs_dir, loaded."""
    return [load(p) for p in sorted(glob.glob(os.path.join(logs_dir, "*", "*", "seed*.json.gz")))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Pack finished runs of a sweep runs directory into compact logs.")
    p.add_argument("cmd", choices=["pack"])
    p.add_argument("runs_dir", help="a sweep runs directory ({task}/{algo}/seed{n}/)")
    p.add_argument("--logs", required=True, help="output root of {task}/{algo}/seed{n}.json.gz")
    a = p.parse_args(argv)
    from benchmark.sweep import find_run_dir, read_summary
    n = 0
    for seed_dir in sorted(glob.glob(os.path.join(a.runs_dir, "*", "*", "seed*"))):
        task, algo = seed_dir.split(os.sep)[-3:-1]
        run_dir = find_run_dir(seed_dir)
        summary = read_summary(run_dir)
        if summary and summary.get("status") in ("finished", "diverged"):
            budget = None
            if os.path.isfile(os.path.join(seed_dir, "job.json")):
                with open(os.path.join(seed_dir, "job.json")) as f:
                    budget = json.load(f).get("budget")
            pack(run_dir, log_path(a.logs, task, algo, int(seed_dir.rsplit("seed", 1)[1])), task, algo,
                 int(seed_dir.rsplit("seed", 1)[1]), budget)
            n += 1
    print(f"packed {n} runs into {a.logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
