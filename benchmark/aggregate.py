"""The paper's evaluation protocol over benchmark/runs -> small CSVs in benchmark/results/.

    python benchmark/aggregate.py                 # budgets from each run's job.json
    python benchmark/aggregate.py --budget classic=500000,mujoco=1000000 --report

Protocol ("Experimental Setup"), per run, for a task budget B and n = 100 bins:
  1. bins: bin k (k = 0..99) holds the episodes that ended at a global step in (k B/n, (k+1) B/n]
     (step 0 would go to bin 0; episodes after B are ignored); a bin's value is the mean episodic
     return of its episodes.
  2. empty bins: a bin with no episode ending in it takes the previous bin's value (carry
     forward); bins before the run's first episode stay empty (NaN) and are skipped; bins that
     start after the run's last step (a diverged run) stay empty.
  3. smoothing: exponentially weighted mean with factor 0.1 over the bins,
     s_0 = x_0,  s_k = 0.1 x_k + 0.9 s_{k-1}   (pandas ewm(alpha=0.1, adjust=False); numpy here),
     starting at the first non-empty bin.
  4. across seeds: per bin, mean and standard deviation with ddof = 1 (sample std; the paper does
     not say which; final.csv also gives ddof = 0) over the seeds that have a value there.
  "final" = the last smoothed bin (bin 99), over the runs that reached the budget.
The same binning and smoothing are applied to mean_logprob (updates.csv, one row per update).
Which runs count: finished with global_step >= B ("complete"); diverged runs (summary.json)
contribute their curve up to the divergence but no final value; runs that have not reached B
(interrupted / still running) are left out and counted as incomplete.

SMAC diagnostics (updates.csv): per update ell_sq / lambda, cos(g, step), and the fraction of the
step that the rank-1 correction removes, |g/lambda - step| / |g/lambda| = step_par_norm * ell_sq / g_norm
(the difference is along l_bar, where the correction shrinks g's component by lambda/(lambda + |l_bar|^2)).
Per bin: the median over the bin's updates in each run, then median and 10%/90% quantiles (linear
interpolation) across seeds.
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import math
import os
import sys
import warnings
from typing import Optional

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import hparams  # noqa: E402
from benchmark.sweep import DEFAULT_RUNS, find_run_dir, parse_budget, read_summary  # noqa: E402

DEFAULT_RESULTS = os.path.join(REPO, "benchmark", "results")
N_BINS = 100
ALPHA = 0.1
DDOF = 1


# ------------------------------------------------------------------------------------------
# The protocol, as pure functions (tests/test_harness.py checks them by hand)
# ------------------------------------------------------------------------------------------
def bin_index(steps: np.ndarray, budget: int, n_bins: int = N_BINS) -> np.ndarray:
    """Bin of each global step: (k B/n, (k+1) B/n] -> k; step 0 -> 0; > B -> -1 (dropped)."""
    steps = np.asarray(steps, dtype=np.int64)
    idx = np.where(steps <= 0, 0, (steps * n_bins - 1) // budget)
    return np.where(steps > budget, -1, idx)


def bin_means(steps, values, budget: int, n_bins: int = N_BINS, last_step: Optional[int] = None) -> np.ndarray:
    """Mean of `values` per bin, empty bins carried forward (module docstring, steps 1-2).
    last_step: the run's final global step (default: budget); bins starting at or after it stay NaN."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    idx = bin_index(steps, budget, n_bins)
    keep = (idx >= 0) & np.isfinite(values)
    sums = np.bincount(idx[keep], weights=values[keep], minlength=n_bins)
    counts = np.bincount(idx[keep], minlength=n_bins)
    out = np.full(n_bins, np.nan)
    out[counts > 0] = sums[counts > 0] / counts[counts > 0]
    last_step = budget if last_step is None else last_step
    covered = np.arange(n_bins) * budget / n_bins < last_step
    for k in range(1, n_bins):  # carry forward inside the covered range
        if np.isnan(out[k]) and covered[k] and not np.isnan(out[k - 1]):
            out[k] = out[k - 1]
    out[~covered] = np.nan
    return out


def ewm(x, alpha: float = ALPHA) -> np.ndarray:
    """s_0 = x_0, s_k = alpha x_k + (1 - alpha) s_{k-1} (pandas ewm(alpha, adjust=False)), starting
    at the first finite entry; leading NaNs stay NaN, and so does every NaN entry after it."""
    x = np.asarray(x, dtype=np.float64)
    s = np.full_like(x, np.nan)
    prev = np.nan
    for k, v in enumerate(x):
        if np.isnan(v):
            continue
        prev = v if np.isnan(prev) else alpha * v + (1 - alpha) * prev
        s[k] = prev
    return s


def across_seeds(curves: np.ndarray, ddof: int = DDOF) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, std, n) per bin over the rows (seeds) that are finite there; std is NaN where n <= ddof."""
    curves = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    ok = np.isfinite(curves)
    n = ok.sum(0)
    filled = np.where(ok, curves, 0.0)
    mean = np.where(n > 0, filled.sum(0) / np.maximum(n, 1), np.nan)
    sq = np.where(ok, (curves - mean) ** 2, 0.0).sum(0)
    std = np.where(n > ddof, np.sqrt(sq / np.maximum(n - ddof, 1)), np.nan)
    return mean, std, n


def smoothed_curve(steps, values, budget, last_step=None, n_bins=N_BINS) -> np.ndarray:
    return ewm(bin_means(steps, values, budget, n_bins, last_step))


def bin_quantiles(steps, values, budget, n_bins=N_BINS) -> np.ndarray:
    """Per-bin median of `values` (no carry-forward; NaN where a bin has none)."""
    idx = bin_index(steps, budget, n_bins)
    values = np.asarray(values, dtype=np.float64)
    out = np.full(n_bins, np.nan)
    for k in range(n_bins):
        v = values[(idx == k) & np.isfinite(values)]
        if v.size:
            out[k] = np.median(v)
    return out


# ------------------------------------------------------------------------------------------
# Reading runs
# ------------------------------------------------------------------------------------------
def read_csv_columns(path: str, columns: list[str]) -> dict:
    out = {c: [] for c in columns}
    if not os.path.isfile(path):
        return {c: np.array([]) for c in columns}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                vals = [float(row[c]) if row[c] not in ("", None) else math.nan for c in columns]
            except (ValueError, KeyError, TypeError):
                continue  # torn last line of a killed run
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
        job = {}
        if os.path.isfile(os.path.join(seed_dir, "job.json")):
            with open(os.path.join(seed_dir, "job.json")) as f:
                job = json.load(f)
        cfg = {}
        if os.path.isfile(os.path.join(run_dir, "config.json")):
            with open(os.path.join(run_dir, "config.json")) as f:
                cfg = json.load(f).get("args", {})
        summary = read_summary(run_dir) or {}
        ep = read_csv_columns(os.path.join(run_dir, "episodes.csv"), ["global_step", "episodic_return"])
        up = read_csv_columns(os.path.join(run_dir, "updates.csv"),
                              ["global_step", "mean_logprob", "ell_sq", "g_norm", "step_norm", "cos_g_step",
                               "step_par_norm"])
        last = int(max(summary.get("global_step", 0),
                       up["global_step"].max() if up["global_step"].size else 0))
        runs.append({"task": task, "algo": algo, "seed": int(seed_dir.rsplit("seed", 1)[1]), "seed_dir": seed_dir,
                     "run_dir": run_dir, "job_budget": job.get("budget"), "status": summary.get("status", "running?"),
                     "last_step": last, "damping": cfg.get("damping"), "num_steps": cfg.get("num_steps"),
                     "episodes": ep, "updates": up})
    return runs


# ------------------------------------------------------------------------------------------
# Aggregation
# ------------------------------------------------------------------------------------------
def task_budgets(runs: list[dict], budget_spec: Optional[str]) -> dict:
    if budget_spec:
        return parse_budget(budget_spec, sorted({r["task"] for r in runs}) or None)
    out = {}
    for r in runs:
        b = r["job_budget"] or r["last_step"]
        out[r["task"]] = max(out.get(r["task"], 0), int(b))
    return out


def classify(run: dict, budget: int) -> str:
    if run["status"] == "diverged":
        return "diverged"
    if run["last_step"] >= budget and run["status"] == "finished":
        return "complete"
    return "incomplete"


def aggregate(runs_dir: str = DEFAULT_RUNS, results_dir: str = DEFAULT_RESULTS,
              budget_spec: Optional[str] = None) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nan-medians of bins without any update
        return _aggregate(runs_dir, results_dir, budget_spec)


def _aggregate(runs_dir, results_dir, budget_spec) -> dict:
    runs = discover(runs_dir)
    budgets = task_budgets(runs, budget_spec)
    os.makedirs(results_dir, exist_ok=True)
    groups: dict = {}
    for r in runs:
        if r["task"] not in budgets:
            continue
        r["class"] = classify(r, budgets[r["task"]])
        groups.setdefault((r["task"], r["algo"]), []).append(r)

    def order(key):
        t, a = key
        ti = hparams.tasks().index(t) if t in hparams.tasks() else 99
        ai = hparams.ALGOS.index(a) if a in hparams.ALGOS else 99
        return (ti, ai, t, a)

    curve_rows, logp_rows, final_rows, diag_rows, diag_summary, run_rows = [], [], [], [], [], []
    for key in sorted(groups, key=order):
        task, algo = key
        budget = budgets[task]
        edges = (np.arange(N_BINS) + 1) * budget / N_BINS
        used = [r for r in groups[key] if r["class"] in ("complete", "diverged")]
        used.sort(key=lambda r: r["seed"])
        ret_curves, logp_curves = [], []
        for r in used:
            last = min(r["last_step"], budget) if r["class"] == "diverged" else budget
            ret_curves.append(smoothed_curve(r["episodes"]["global_step"], r["episodes"]["episodic_return"],
                                             budget, last))
            logp_curves.append(smoothed_curve(r["updates"]["global_step"], r["updates"]["mean_logprob"],
                                              budget, last))
        for r in groups[key]:
            run_rows.append({"task": task, "algo": algo, "seed": r["seed"], "budget": budget, "class": r["class"],
                             "status": r["status"], "global_step": r["last_step"],
                             "episodes": int(r["episodes"]["global_step"].size),
                             "final_smoothed": (f"{ret_curves[used.index(r)][-1]:.6g}"
                                                if r in used and r["class"] == "complete" else "")})
        if not used:
            continue
        for rows, curves in ((curve_rows, ret_curves), (logp_rows, logp_curves)):
            mean, std, n = across_seeds(np.array(curves))
            for k in range(N_BINS):
                rows.append({"task": task, "algo": algo, "bin": k, "step": int(round(edges[k])),
                             "mean": _f(mean[k]), "std": _f(std[k]), "n": int(n[k])})
        complete = [c[-1] for c, r in zip(ret_curves, used) if r["class"] == "complete" and np.isfinite(c[-1])]
        fin = np.array(complete)
        paper = hparams.paper_result(task, algo) if task in hparams.tasks() else None
        final_rows.append({
            "task": task, "algo": algo, "budget": budget, "n_seeds": len(fin),
            "seeds": ";".join(str(r["seed"]) for r in used if r["class"] == "complete"),
            "n_diverged": sum(r["class"] == "diverged" for r in groups[key]),
            "n_incomplete": sum(r["class"] == "incomplete" for r in groups[key]),
            "final_mean": _f(fin.mean()) if fin.size else "",
            "final_std": _f(fin.std(ddof=1)) if fin.size > 1 else "",
            "final_std_ddof0": _f(fin.std(ddof=0)) if fin.size else "",
            "finals": ";".join(f"{v:.6g}" for v in fin),
            "paper_mean": paper[0] if paper else "", "paper_std": paper[1] if paper else "",
            "paper_text_std": (hparams.paper_text_std(task, algo) or "") if paper else "",
        })
        # SMAC diagnostics (rows exist only where the trainer logged ell_sq, i.e. smac)
        per_seed = {"ell_sq_over_lambda": [], "cos_g_step": [], "removed_frac": []}
        for r in used:
            u, lam = r["updates"], r["damping"]
            if not u["ell_sq"].size or not np.isfinite(u["ell_sq"]).any() or not lam:
                continue
            ratio = u["ell_sq"] / lam
            removed = u["step_par_norm"] * u["ell_sq"] / np.where(u["g_norm"] > 0, u["g_norm"], np.nan)
            for name, v in (("ell_sq_over_lambda", ratio), ("cos_g_step", u["cos_g_step"]), ("removed_frac", removed)):
                per_seed[name].append(bin_quantiles(u["global_step"], v, budget))
        if per_seed["ell_sq_over_lambda"]:
            stats = {}
            for name, mats in per_seed.items():
                m = np.array(mats)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # bins with no update in any seed
                    stats[name] = (np.nanmedian(m, 0), np.nanquantile(m, 0.1, 0), np.nanquantile(m, 0.9, 0))
            for k in range(N_BINS):
                row = {"task": task, "algo": algo, "bin": k, "step": int(round(edges[k])), "n": len(per_seed["cos_g_step"])}
                for name, (med, lo, hi) in stats.items():
                    row.update({f"{name}_median": _f(med[k]), f"{name}_p10": _f(lo[k]), f"{name}_p90": _f(hi[k])})
                diag_rows.append(row)
            srow = {"task": task, "algo": algo, "damping": used[0]["damping"], "n_seeds": len(per_seed["cos_g_step"])}
            for name, mats in per_seed.items():
                run_medians = [np.nanmedian(m) for m in mats]  # each run: median over its bins
                srow[f"{name}_median"] = _f(np.median(run_medians))
                srow[f"{name}_min_run"] = _f(np.min(run_medians))
                srow[f"{name}_max_run"] = _f(np.max(run_medians))
                last_q = [m[-10:] for m in mats]  # last 10% of training
                srow[f"{name}_last10pct_median"] = _f(np.nanmedian(np.concatenate(last_q)))
            diag_summary.append(srow)

    _write(os.path.join(results_dir, "curves_return.csv"), curve_rows)
    _write(os.path.join(results_dir, "curves_logprob.csv"), logp_rows)
    _write(os.path.join(results_dir, "final.csv"), final_rows)
    _write(os.path.join(results_dir, "diagnostics.csv"), diag_rows)
    _write(os.path.join(results_dir, "diagnostics_summary.csv"), diag_summary)
    _write(os.path.join(results_dir, "runs.csv"), run_rows)
    return {"runs": len(runs), "cells": len(final_rows), "budgets": budgets}


def _f(x) -> str:
    x = float(x)
    return "" if not math.isfinite(x) else f"{x:.6g}"


def _write(path: str, rows: list[dict]) -> None:
    fields = list(rows[0].keys()) if rows else []
    for r in rows:
        for k in r:
            if k not in fields:
                fields.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Aggregate benchmark runs with the paper's protocol.")
    p.add_argument("--runs-dir", default=DEFAULT_RUNS)
    p.add_argument("--results-dir", default=DEFAULT_RESULTS)
    p.add_argument("--budget", default=None, help="as sweep.py --budget; default: each task's budget from job.json")
    p.add_argument("--report", action="store_true", help="also write the report (benchmark/report.py)")
    p.add_argument("--report-path", default=os.path.join(REPO, "benchmark", "REPORT.md"))
    args = p.parse_args(argv)
    out = aggregate(args.runs_dir, args.results_dir, args.budget)
    print(f"aggregated {out['runs']} runs into {out['cells']} task x algorithm cells -> {args.results_dir}")
    if args.report:
        from benchmark import report
        report.write_report(args.results_dir, args.report_path)
        print(f"wrote {args.report_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
