"""Compact run logs: what the reports need from one run, in one small gzipped JSON file.

    benchmark/results/logs/{task}/{algo}/seed{n}.json.gz            (the stage-1 grid)
    benchmark/results/fidelity/logs/{reading}/{task}/{algo}/seed{n}.json.gz   (the fidelity study)

A file holds the run's status, budget and flags, every finished episode (global_step, return,
length) and every update's diagnostics (the columns of updates.csv), numbers to 6 significant
digits, NaN as null. A few tens to a few hundred KB per run; checkpoints and TensorBoard files
stay out of git. sweep.py writes one when a run finishes or diverges and treats a committed one
as a finished run, so a grid resumes where an earlier sweep stopped.

    python -m benchmark.compact pack benchmark/runs --logs benchmark/results/logs   # pack every finished run
"""

from __future__ import annotations

import argparse
import csv
import glob
import gzip
import io
import json
import math
import os
import shutil
import sys
import zlib
from typing import Optional

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import provenance  # noqa: E402
from benchmark.provenance import read_json, read_summary, run_args  # noqa: E402, F401  (the sweep's, the report's)

EPISODE_COLS = ["global_step", "episodic_return", "episodic_length"]
UPDATE_COLS = [
    "update",
    "global_step",
    "value_loss",
    "mean_logprob",
    "entropy",
    "ell_sq",
    "g_norm",
    "step_norm",
    "cos_g_step",
    "step_par_norm",
    "step_perp_norm",
    "actor_update_ms",
    "sps",
    "eta",  # the step length the actor step applied (trainer.step_length); runs from before it lack it
]
OPTIONAL_UPDATE_COLS = ("eta",)  # columns that an older run's updates.csv (and its committed log) lacks
REQUIRED_UPDATE_COLS = [
    c for c in UPDATE_COLS if c not in OPTIONAL_UPDATE_COLS
]  # every whole log's updates hold
FORMAT = 1


DEFAULT_RUNS = os.path.join(REPO, "benchmark", "runs")  # the literal reading's sweep runs root


# ------------------------------------------------------------------------------------------
# Raw run directories (a sweep's {runs}/{task}/{algo}/seed{n}/RUN) and their CSVs: the harness's leaf I/O
# ------------------------------------------------------------------------------------------
class RunDirConflict(RuntimeError):
    """A seed directory holding more than one live or checkpointed run directory (find_run_dir)."""


def find_run_dir(seed_dir: str) -> Optional[str]:
    """The trainer's run directory inside seed_dir (the only subdirectory), or None. Extra directories
    that never reached a checkpoint and hold no live trainer (left by a sweep killed while its trainers
    were starting) are removed with a message; a live or checkpointed extra one is an error."""
    if not os.path.isdir(seed_dir):
        return None
    dirs = sorted(
        d for d in os.listdir(seed_dir) if os.path.isdir(os.path.join(seed_dir, d)) and not d.startswith(".")
    )
    if len(dirs) > 1:
        from benchmark import trainer  # a leaf: it imports only smac_a2c and benchmark.protocol

        for d in list(dirs):
            path = os.path.join(seed_dir, d)
            if not os.path.isfile(os.path.join(path, "checkpoint.pt")) and not trainer.run_dir_locked(path):
                print(
                    f"[sweep] {seed_dir}: removing stale run directory {d} (no checkpoint, no live trainer)",
                    flush=True,
                )
                shutil.rmtree(path, ignore_errors=True)
                dirs.remove(d)
                if len(dirs) == 1:
                    break
    if len(dirs) > 1:
        raise RunDirConflict(
            f"{seed_dir} holds {len(dirs)} run directories {dirs}; expected one. "
            f"Keep the one you want and delete the others."
        )
    return os.path.join(seed_dir, dirs[0]) if dirs else None


def read_csv_columns(path: str, columns: list[str]) -> dict:
    """The columns of a run's CSV as float arrays ("" as NaN). A cut-off last line (a kill or a full disk during a
    write: no line end) and a row with more or fewer fields than the header are dropped, not read as a row."""
    out = {c: [] for c in columns}
    if not os.path.isfile(path):
        return {c: np.array([]) for c in columns}
    with open(path, newline="") as f:
        text = f.read()
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # the last line was cut off
    for row in csv.DictReader(io.StringIO(text, newline="")):
        if None in row or None in row.values():  # more fields than the header, or fewer
            continue
        try:
            vals = [float(row[c]) if row[c] != "" else math.nan for c in columns]
        except (ValueError, KeyError):
            continue  # a garbled row
        for c, v in zip(columns, vals):
            out[c].append(v)
    return {c: np.asarray(v, dtype=np.float64) for c, v in out.items()}


def discover(runs_dir: str) -> list[dict]:
    """Every {task}/{algo}/seed{n}/ with a run directory."""
    runs = []
    for seed_dir in sorted(glob.glob(os.path.join(runs_dir, "*", "*", "seed*"))):
        task, algo = seed_dir.split(os.sep)[-3:-1]
        try:
            run_dir = find_run_dir(seed_dir)
        except RuntimeError as e:
            print(f"warning: {e}", file=sys.stderr)
            continue
        if run_dir is None:
            continue
        job = read_json(os.path.join(seed_dir, "job.json"), {})
        cfg = read_json(os.path.join(run_dir, "config.json"), {}).get("args", {})
        summary = read_summary(run_dir) or {}
        ep = read_csv_columns(os.path.join(run_dir, "episodes.csv"), ["global_step", "episodic_return"])
        up = read_csv_columns(
            os.path.join(run_dir, "updates.csv"),
            [
                "global_step",
                "mean_logprob",
                "ell_sq",
                "g_norm",
                "step_norm",
                "cos_g_step",
                "step_par_norm",
                "value_loss",
            ],
        )
        last = int(
            max(summary.get("global_step", 0), up["global_step"].max() if up["global_step"].size else 0)
        )
        runs.append(
            {
                "task": task,
                "algo": algo,
                "seed": int(seed_dir.rsplit("seed", 1)[1]),
                "seed_dir": seed_dir,
                "run_dir": run_dir,
                "job_budget": job.get("budget"),
                "status": summary.get("status", "running?"),
                "last_step": last,
                "damping": cfg.get("damping"),
                "num_steps": cfg.get("num_steps"),
                "episodes": ep,
                "updates": up,
                "cfg": cfg,
            }
        )
    return runs


# ------------------------------------------------------------------------------------------
# Compact logs
# ------------------------------------------------------------------------------------------
def log_path(logs_dir: str, task: str, algo: str, seed: int) -> str:
    return os.path.join(logs_dir, task, algo, f"seed{seed}.json.gz")


def _num(x: float):
    if x is None or not math.isfinite(x):
        return None
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(f"{x:.6g}")


def _columns(path: str, cols: list[str], optional: tuple = ()) -> dict:
    """cols of the CSV at path, numbers as _num; an `optional` column missing from its header is left out (read
    as required, it would drop every row)."""
    if optional and os.path.isfile(path):
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        cols = [c for c in cols if c not in optional or c in header]
    data = read_csv_columns(path, cols)
    return {c: [_num(v) for v in data[c].tolist()] for c in cols}


def pack(run_dir: str, out_path: str, task: str, algo: str, seed: int, budget: Optional[int] = None) -> str:
    """Write run_dir's compact log to out_path (atomic). Returns out_path."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    cfg = read_json(os.path.join(run_dir, "config.json"), {})
    record = {
        "format": FORMAT,
        "task": task,
        "algo": algo,
        "seed": seed,
        "budget": budget,
        "status": summary.get("status"),
        "global_step": summary.get("global_step"),
        "updates_done": summary.get("updates"),
        "wall_time_s": summary.get("wall_time_s"),
        "resumed_from_step": cfg.get("resumed_from_step") or 0,  # wall_time_s covers the steps after it
        "args": cfg.get("args", {}),
        "versions": {k: cfg.get(k) for k in ("torch", "gymnasium", "mujoco", "numpy", "python", "device")},
        # each start's commit, host, CPU and versions (provenance.record); None: a run from before they were kept
        "provenance": cfg.get("provenance"),
        "episodes": _columns(os.path.join(run_dir, "episodes.csv"), EPISODE_COLS),
        "updates": _columns(os.path.join(run_dir, "updates.csv"), UPDATE_COLS, OPTIONAL_UPDATE_COLS),
    }
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    tmp = out_path + ".tmp"
    with gzip.open(tmp, "wt", compresslevel=9) as f:
        json.dump(record, f, separators=(",", ":"))
    os.replace(tmp, out_path)
    return out_path


class DamagedLog(ValueError):
    """A compact log that cannot be read: a damaged gzip stream (a flipped byte), not JSON, or not a log's record."""


def read_record(path: str) -> dict:
    """A compact log's record; DamagedLog (one line naming the file) for anything but a readable one, and
    FileNotFoundError for a missing one."""
    try:
        with gzip.open(path, "rt") as f:
            rec = json.load(f)
    except FileNotFoundError:
        raise
    # a flipped byte: zlib.error, or a failed CRC (BadGzipFile, an OSError); bad UTF-8 or JSON: a ValueError
    except (OSError, EOFError, ValueError, zlib.error) as e:
        kind = "zlib.error" if isinstance(e, zlib.error) else type(e).__name__
        raise DamagedLog(f"{path}: damaged compact log ({kind}: {e})") from None
    if not isinstance(rec, dict):
        raise DamagedLog(f"{path}: damaged compact log (a JSON {type(rec).__name__}, not a record)")
    return rec


def check_columns(part: dict, what: str, required: list, optional: tuple = ()) -> None:
    """A log's `what` table (episodes or updates) holds every `required` column, and each of them and of the
    `optional` columns it holds has the table's one length; else ValueError naming the columns (a log missing one, or
    with one cut short, would be counted done by the sweep and then fail the report)."""
    missing = [c for c in required if c not in part]
    if missing:
        raise ValueError(f"its {what} lack {', '.join(missing)}")
    lengths = {c: len(part[c]) for c in [*required, *(c for c in optional if c in part)]}
    longest = max(lengths.values(), default=0)
    short = [c for c, n in lengths.items() if n < longest]
    if short:
        raise ValueError(f"its {what}' {', '.join(short)} shorter than the table's {longest} rows")


def load(path: str) -> dict:
    """A compact log as the dict aggregate.discover() gives for a run directory (arrays as numpy), plus its
    `provenance` (a list of starts, [] for a log from before they were kept); DamagedLog if it cannot be read in
    full (check_columns: every episode column and REQUIRED_UPDATE_COLS, each of its table's length; header fields
    with a default may be absent). The one reader of the logs: the report's (discover_logs) and the sweep's "done" (read_header) alike."""
    rec = read_record(path)

    def arr(v):
        return np.asarray([np.nan if x is None else x for x in v], dtype=np.float64)

    try:
        args = rec.get("args") or {}
        check_columns(rec["episodes"], "episodes", EPISODE_COLS)
        check_columns(rec["updates"], "updates", REQUIRED_UPDATE_COLS, OPTIONAL_UPDATE_COLS)
        return {
            "task": rec["task"],
            "algo": rec["algo"],
            "seed": int(rec["seed"]),
            "seed_dir": None,
            "run_dir": path,
            "job_budget": rec.get("budget"),
            "status": rec.get("status") or "running?",
            "last_step": int(rec.get("global_step") or 0),
            "damping": args.get("damping"),
            "num_steps": args.get("num_steps"),
            "cfg": args,
            "wall_time_s": rec.get("wall_time_s"),
            "resumed_from_step": int(rec.get("resumed_from_step") or 0),
            "episodes": {c: arr(v) for c, v in rec["episodes"].items()},
            "updates": {c: arr(v) for c, v in rec["updates"].items()},
            "provenance": provenance.starts(rec.get("provenance")),
        }
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise DamagedLog(f"{path}: damaged compact log ({type(e).__name__}: {e})") from None


def read_header(path: str) -> dict:
    """(status, global_step, budget, wall_time_s, resumed_from_step, num_steps, num_envs, args) of a compact log,
    read by load (a log the report would leave out is no log here either); DamagedLog if it cannot be read,
    FileNotFoundError if it is missing."""
    run = load(path)
    args = run["cfg"] if isinstance(run["cfg"], dict) else {}
    return {
        "status": run["status"] if run["status"] != "running?" else None,
        "global_step": run["last_step"],
        "budget": run["job_budget"],
        "wall_time_s": run["wall_time_s"],
        "resumed_from_step": run["resumed_from_step"],
        "num_steps": args.get("num_steps"),
        "num_envs": args.get("num_envs"),
        "args": args,
    }


def header(path: str) -> Optional[dict]:
    """read_header's, or None if the log is missing or unreadable."""
    try:
        return read_header(path)
    except (OSError, DamagedLog):
        return None


def damage(path: Optional[str]) -> Optional[str]:
    """Why the compact log at path cannot be read by load (one line naming it), or None: it reads, or there is
    none."""
    if not path or not os.path.isfile(path):
        return None
    try:
        read_header(path)
    except FileNotFoundError:
        return None
    except DamagedLog as e:
        return str(e)
    return None


def misplaced(run: dict, path: str) -> Optional[str]:
    """Why the loaded log `run` is not the run its path names (the sweep's check and the report's), or None: the
    task, algorithm and seed it stores name another {task}/{algo}/seed{n}.json.gz (seed1's copied as seed3's)."""
    own = log_path("", run["task"], run["algo"], run["seed"])
    if os.path.normpath(path).split(os.sep)[-3:] == own.split(os.sep):
        return None
    return f"{path} holds {run['task']}/{run['algo']}/seed{run['seed']}, not its path's run"


def load_found(path: str) -> dict:
    """load() of a log that a listing found; DamagedLog (one line naming it) also for one gone since (a dangling
    link, or removed meanwhile) and for a misplaced one."""
    try:
        run = load(path)
    except FileNotFoundError:
        raise DamagedLog(f"{path}: not there (a dangling link, or removed meanwhile)") from None
    why = misplaced(run, path)
    if why is not None:
        raise DamagedLog(why)
    return run


def discover_logs(logs_dir: str) -> list[dict]:
    """Every {task}/{algo}/seed{n}.json.gz under logs_dir, loaded; one that is damaged, gone (a dangling link) or
    misplaced (load_found) is left out with one line on stderr."""
    runs = []
    for path in sorted(glob.glob(os.path.join(logs_dir, "*", "*", "seed*.json.gz"))):
        try:
            runs.append(load_found(path))
        except DamagedLog as e:
            print(f"warning: {e}; left out", file=sys.stderr)
    return runs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Pack finished runs of a sweep runs directory into compact logs.")
    p.add_argument("cmd", choices=["pack"])
    p.add_argument("runs_dir", help="a sweep runs directory ({task}/{algo}/seed{n}/)")
    p.add_argument("--logs", required=True, help="output root of {task}/{algo}/seed{n}.json.gz")
    a = p.parse_args(argv)
    n = 0
    for r in discover(a.runs_dir):
        if r["status"] in ("finished", "diverged"):
            pack(
                r["run_dir"],
                log_path(a.logs, r["task"], r["algo"], r["seed"]),
                r["task"],
                r["algo"],
                r["seed"],
                r["job_budget"],
            )
            n += 1
    print(f"packed {n} runs into {a.logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


RANDOM_SCORES = os.path.join(REPO, "benchmark", "results", "random_scores.csv")  # `sweep.py --study random`


def read_random_scores(path: str = RANDOM_SCORES) -> dict:
    """{task: score} of the random policy: the 0 of the normalized scores."""
    with open(path, newline="") as f:
        return {r["task"]: float(r["score"]) for r in csv.DictReader(f)}
