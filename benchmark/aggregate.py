"""Aggregate runs with the paper's protocol -> small CSVs (final values, curves, SMAC diagnostics,
SMAC vs sgd-matched) that benchmark/report.py turns into REPORT.md.

    python benchmark/aggregate.py                 # the stage-1 grid's committed compact logs -> results/stage1
    python benchmark/aggregate.py --runs-dir benchmark/runs --results-dir /tmp/res --budget 300000   # raw runs

The protocol (100 bins, carry-forward, EWM 0.1, mean and ddof-1 std across seeds, final = last bin)
is benchmark/protocol.py.
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
from benchmark.protocol import (ALPHA, DDOF, N_BINS, across_seeds, bin_index, bin_means,  # noqa: E402,F401
                                bin_quantiles, ewm, smoothed_curve)
from benchmark.stats import bootstrap_diff_ci, permutation_test, welch_test  # noqa: E402
from benchmark.stats import write_csv  # noqa: E402
from benchmark.compact import DEFAULT_RUNS, discover, find_run_dir, read_csv_columns, read_summary  # noqa: E402,F401
from benchmark.hparams import parse_budget  # noqa: E402

DEFAULT_RESULTS = os.path.join(REPO, "benchmark", "results", "stage1")


def stage1_logs() -> str:
    """Compact logs of the stage-1 grid: benchmark/results/logs/<reading of hyperparams.toml [meta]>."""
    return os.path.join(REPO, "benchmark", "results", "logs", hparams.load()["meta"]["grid_readings"]["stage1"])


def stage1_budgets() -> dict:
    """{task: steps} of the stage-1 grid (hyperparams.toml [meta] stage1_budget, sweep.py --budget syntax)."""
    return parse_budget(hparams.load()["meta"]["stage1_budget"])


# ------------------------------------------------------------------------------------------
# SMAC vs sgd-matched on per-seed final values (the tests are benchmark/stats.py: scipy.stats)
# ------------------------------------------------------------------------------------------
def matched_verdict(welch: Optional[dict], ci: tuple, alpha: float = 0.05) -> str:
    """'smac' / 'sgd-matched' (Welch p < alpha AND the bootstrap CI excludes 0 on the same side),
    'suggestive: smac' / 'suggestive: sgd-matched' (exactly one of the two), 'not distinguishable'
    (neither), '' (not enough seeds)."""
    if welch is None or not np.isfinite(ci[0]):
        return ""
    sig_t = welch["p"] < alpha
    sig_ci = ci[0] > 0 or ci[1] < 0
    better = "smac" if welch["diff"] > 0 else "sgd-matched"
    if sig_t and sig_ci:
        return better
    if sig_t or sig_ci:
        return "suggestive: " + better
    return "not distinguishable"


def _verdict_with_divergence(verdict: str, n_div_smac: int, n_div_matched: int) -> str:
    """Without a test (fewer than 2 finals on a side), a one-sided divergence is the outcome:
    'sgd-matched diverged' / 'smac diverged'; a test's verdict is kept (divergences are listed beside it)."""
    if verdict or n_div_smac == n_div_matched:
        return verdict
    return "sgd-matched diverged" if n_div_matched > n_div_smac else "smac diverged"


def same_start_counts(groups: dict) -> dict:
    """task -> (seeds whose SMAC and sgd-matched runs logged the same first-update value loss, i.e. the same
    initial networks and first rollout; seeds present in both)."""
    out = {}
    for (task, algo), runs in groups.items():
        if algo != "smac" or (task, "sgd-matched") not in groups:
            continue
        other = {r["seed"]: r for r in groups[(task, "sgd-matched")]}
        both = [(r, other[r["seed"]]) for r in runs if r["seed"] in other]
        same = sum(a["updates"]["value_loss"].size > 0 and b["updates"]["value_loss"].size > 0
                   and a["updates"]["value_loss"][0] == b["updates"]["value_loss"][0] for a, b in both)
        out[task] = (same, len(both))
    return out


def compare_matched(final_rows: list[dict], diag_summary: list[dict], same_start: Optional[dict] = None) -> list[dict]:
    """Per task: SMAC vs sgd-matched on the per-seed final values (final.csv's 'finals'), with
    Welch's t, the exact/MC bootstrap CI and the exact permutation p, next to the SMAC diagnostics
    (diagnostics_summary.csv). One row per task that has both cells. same_start: same_start_counts()."""
    fin = {(r["task"], r["algo"]): r for r in final_rows}
    diag = {r["task"]: r for r in diag_summary if r["algo"] == "smac"}
    out = []
    for task in sorted({t for t, _ in fin}, key=lambda t: hparams.tasks().index(t) if t in hparams.tasks() else 99):
        s, m = fin.get((task, "smac")), fin.get((task, "sgd-matched"))
        if s is None or m is None:
            continue
        fa = [float(x) for x in s["finals"].split(";")] if s["finals"] else []
        fb = [float(x) for x in m["finals"].split(";")] if m["finals"] else []
        w = welch_test(fa, fb)
        ci = ((*bootstrap_diff_ci(fa, fb), "scipy percentile, 20000 resamples") if len(fa) > 1 and len(fb) > 1
              else (math.nan, math.nan, ""))
        perm_p, perm_min = permutation_test(fa, fb)
        pooled = math.sqrt((np.var(fa, ddof=1) + np.var(fb, ddof=1)) / 2) if len(fa) > 1 and len(fb) > 1 else math.nan
        sm = hparams.settings(task, "smac") if task in hparams.tasks() else {}
        row = {"task": task, "damping": sm.get("damping", ""), "eta_smac": sm.get("learning_rate", ""),
               "eta_matched": (hparams.settings(task, "sgd-matched")["learning_rate"] if sm else ""),
               "budget": s["budget"], "n_smac": len(fa), "n_matched": len(fb),
               "n_diverged_smac": s["n_diverged"], "n_diverged_matched": m["n_diverged"],
               "smac_mean": _f(np.mean(fa)) if fa else "", "smac_std": _f(np.std(fa, ddof=1)) if len(fa) > 1 else "",
               "matched_mean": _f(np.mean(fb)) if fb else "",
               "matched_std": _f(np.std(fb, ddof=1)) if len(fb) > 1 else "",
               "smac_finals": s["finals"], "matched_finals": m["finals"],
               "diff": _f(w["diff"]) if w else "", "effect_size": _f(w["diff"] / pooled) if w and pooled > 0 else "",
               "welch_t": _f(w["t"]) if w else "", "welch_df": _f(w["df"]) if w else "",
               "welch_p": _f(w["p"]) if w else "", "welch_mdd": _f(w["mdd"]) if w else "",
               "boot_lo": _f(ci[0]), "boot_hi": _f(ci[1]), "boot_kind": ci[2],
               "perm_p": _f(perm_p), "perm_min_p": _f(perm_min),
               "verdict": _verdict_with_divergence(matched_verdict(w, ci), int(s["n_diverged"] or 0),
                                                   int(m["n_diverged"] or 0)),
               "same_start_seeds": same_start[task][0] if same_start and task in same_start else "",
               "paired_seeds": same_start[task][1] if same_start and task in same_start else ""}
        d = diag.get(task)
        for name in ("ell_sq_over_lambda_median", "ell_sq_over_lambda_last10pct_median", "cos_g_step_median",
                     "removed_frac_median", "removed_frac_last10pct_median", "step_over_sgd_median",
                     "cos_g_ell_median"):
            row[name] = d.get(name, "") if d else ""
        out.append(row)
    return out


# ------------------------------------------------------------------------------------------
# Reading runs
# ------------------------------------------------------------------------------------------
# ------------------------------------------------------------------------------------------
# Aggregation
# ------------------------------------------------------------------------------------------
DIAG_NAMES = ("ell_sq_over_lambda", "cos_g_step", "removed_frac", "step_over_sgd", "cos_g_ell")


def smac_diagnostics(u: dict, lam: float, cfg: Optional[dict] = None) -> dict:
    """Per-update SMAC diagnostics from updates.csv columns (arrays) and the damping lambda:

      ell_sq_over_lambda  |l_bar|^2 / lambda
      cos_g_step          cos(g, step)
      removed_frac        |g/lambda - step| / |g/lambda| = step_par_norm * |l_bar|^2 / |g|
      step_over_sgd       |step| / |g/lambda| = step_norm * lambda / |g|  (SMAC's step length relative to
                          the sgd-matched step g/lambda at the same g)
      cos_g_ell           |cos(g, l_bar)| = |g_par| / |g| = step_par_norm (lambda + |l_bar|^2) / |g|

    Derivation of removed_frac: step = g_perp/lambda + g_par/(lambda + s), s = |l_bar|^2, so
    g/lambda - step = g_par s / (lambda (lambda + s)), and |g_par| = step_par_norm (lambda + s);
    dividing by |g|/lambda gives step_par_norm * s / |g|  (= s/(lambda + s) * |cos(g, l_bar)|: a large
    s/lambda removes much only if g is aligned with l_bar).
    It holds for the plain batch-mean step only; runs with another --fisher, previous-EF mixing or step
    normalization (cfg from config.json) get NaN for removed_frac and step_over_sgd."""
    ell_sq, g_norm = u["ell_sq"], np.where(u["g_norm"] > 0, u["g_norm"], np.nan)
    plain = not cfg or (cfg.get("fisher", "batch-mean") == "batch-mean" and not cfg.get("prev_ef_beta")
                        and not cfg.get("step_normalization"))
    nan = np.full_like(ell_sq, np.nan)
    return {"ell_sq_over_lambda": ell_sq / lam,
            "cos_g_step": u["cos_g_step"],
            "removed_frac": u["step_par_norm"] * ell_sq / g_norm if plain else nan,
            "step_over_sgd": u["step_norm"] * lam / g_norm if plain else nan,
            "cos_g_ell": u["step_par_norm"] * (lam + ell_sq) / g_norm if plain else nan}


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


def aggregate(runs_dir: Optional[str] = DEFAULT_RUNS, results_dir: str = DEFAULT_RESULTS,
              budget_spec: Optional[str] = None, logs_dir: Optional[str] = None,
              runs: Optional[list] = None) -> dict:
    """Aggregate `runs` (run dicts, as discover() / compact.discover_logs() give), else the compact logs in
    logs_dir, else the run directories in runs_dir, into CSVs in results_dir."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nan-medians of bins without any update
        return _aggregate(runs_dir, results_dir, budget_spec, logs_dir, runs)


def _aggregate(runs_dir, results_dir, budget_spec, logs_dir=None, runs=None) -> dict:
    if runs is None:
        if logs_dir:  # committed compact logs (benchmark/compact.py) instead of raw run directories
            from benchmark.compact import discover_logs
            runs = discover_logs(logs_dir)
        else:
            runs = discover(runs_dir)
    if not runs:  # never overwrite committed results with nothing (e.g. a fresh clone without raw runs)
        print(f"aggregate: no runs found in {logs_dir or runs_dir}; {results_dir} left as it is", file=sys.stderr)
        return {"runs": 0, "cells": 0, "budgets": {}}
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
        paper = hparams.paper_result(task, algo) if task in hparams.tasks() and algo in hparams.ALGOS else None
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
        per_seed = {name: [] for name in DIAG_NAMES}
        for r in used:
            u, lam = r["updates"], r["damping"]
            if not u["ell_sq"].size or not np.isfinite(u["ell_sq"]).any() or not lam:
                continue
            for name, v in smac_diagnostics(u, lam, r.get("cfg")).items():
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

    write_csv(os.path.join(results_dir, "curves_return.csv"), curve_rows)
    write_csv(os.path.join(results_dir, "curves_logprob.csv"), logp_rows)
    write_csv(os.path.join(results_dir, "final.csv"), final_rows)
    write_csv(os.path.join(results_dir, "diagnostics.csv"), diag_rows)
    write_csv(os.path.join(results_dir, "diagnostics_summary.csv"), diag_summary)
    write_csv(os.path.join(results_dir, "runs.csv"), run_rows)
    write_csv(os.path.join(results_dir, "smac_vs_matched.csv"),
           compare_matched(final_rows, diag_summary, same_start_counts(groups)))
    return {"runs": len(runs), "cells": len(final_rows), "budgets": budgets}


def _f(x) -> str:
    x = float(x)
    return "" if not math.isfinite(x) else f"{x:.6g}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Aggregate benchmark runs with the paper's protocol. Without "
                                "--runs-dir/--logs-dir: the stage-1 grid's committed compact logs at its budgets.")
    p.add_argument("--runs-dir", default=None, help="raw sweep runs ({task}/{algo}/seed{n}/ run directories)")
    p.add_argument("--logs-dir", default=None, help="compact logs ({task}/{algo}/seed{n}.json.gz); default: the "
                   "stage-1 grid's, benchmark/results/logs/<reading>")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS, help="where the CSVs go (default: the stage-1 grid's, "
                   "benchmark/results/stage1; required with --runs-dir/--logs-dir)")
    p.add_argument("--budget", default=None, help="as sweep.py --budget; default: the stage-1 budgets for the "
                   "stage-1 logs, else each task's budget from job.json")
    args = p.parse_args(argv)
    if (args.runs_dir or args.logs_dir) and args.results_dir == DEFAULT_RESULTS:
        p.error("--runs-dir/--logs-dir need --results-dir: the default holds the stage-1 grid's committed results")
    if args.runs_dir is None and args.logs_dir is None:
        args.logs_dir = stage1_logs()
        args.budget = args.budget or hparams.load()["meta"]["stage1_budget"]
    out = aggregate(args.runs_dir, args.results_dir, args.budget, args.logs_dir)
    print(f"aggregated {out['runs']} runs into {out['cells']} task x algorithm cells -> {args.results_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
