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
import json
import math
import os
import sys
import warnings
from typing import Optional, Union

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import smac_numpy as sn  # noqa: E402
from benchmark import compact, hparams, stats  # noqa: E402
from benchmark.compact import DEFAULT_RUNS, discover  # noqa: E402
from benchmark.hparams import READINGS, parse_budget, reading_flags  # noqa: E402
from benchmark.protocol import N_BINS, across_seeds, bin_quantiles, smoothed_curve  # noqa: E402
from benchmark.stats import bootstrap_diff_ci, permutation_test, table, welch_test, write_csv  # noqa: E402

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


# ------------------------------------------------------------------------------------------
# The paper's timestep claims (section Results) as data, and their evaluation on our runs
# ------------------------------------------------------------------------------------------
TOL = 1.25  # reach_by: within 25 % of the paper's step (or earlier)


RULES = {  # kind of claim -> when it holds; the report quotes these
    "reach_by": f"the algorithm reaches the threshold by {TOL:g} x the paper's step (earlier is fine)",
    "slower": "the algorithm reaches the threshold later than SMAC (or never while SMAC does): the direction, "
              "not the size; the measured ratio stands beside the paper's",
    "faster": "the algorithm reaches the threshold before the reference",
    "never_above": "the algorithm's seed-mean curve stays at or below the threshold over the whole run",
    "below_until": "the algorithm's curve lies below the reference's on average up to the paper's step",
}


PAPER_BUDGET = 5_000_000  # the paper's MuJoCo budget, inferred: HalfCheetah's 3.4M steps are "68% of the training budget"


PAPER_BUDGET_NOTE = "inferred from its HalfCheetah text: 3.4 million timesteps are 68% of the training budget"


NOT_JUDGED = (  # the Results section's other statements, and where the report deals with them
    "the Results text's final-return gaps (HalfCheetah \"surpassing ... AC-CG, by over 1100 points\", Hopper "
    "\"approximately 30 points\", Swimmer \"approximately 5 points\"): the final-returns table and the 5M block; "
    "MuJoCo \"outperforms the other baselines ... in all but one task\": the orderings; qualitative statements "
    "(Acrobot \"unstable training until approximately 125000 timesteps\"; stability comparisons; Walker2d \"learns "
    "faster than the baselines in the first 60% of the timesteps\", i.e. the first 3M of 5M): not judged.")


def _slower(cid, task, algo, thr, ratio, ref_step, text, ref="smac"):
    needs = int(ref_step * ratio) if ref_step else None  # no step in the paper: judged once either crosses
    return {"id": cid, "task": task, "kind": "slower", "algo": algo, "ref": ref, "threshold": thr,
            "ratio": ratio, "needs": needs, "text": text}


CLAIMS = [
    {"id": "acrobot-smac-40k", "task": "Acrobot", "kind": "reach_by", "algo": "smac", "threshold": -400,
     "step": 40_000, "needs": 40_000, "text": "SMAC only requires 40000 timesteps to pass the average return threshold of -400"},
    _slower("acrobot-adam-70", "Acrobot", "adam", -400, 1.70, 40_000, "AC-Adam requires 70% more timesteps"),
    _slower("acrobot-sgd-35", "Acrobot", "sgd", -400, 1.35, 40_000, "AC-SGD requires 35% more timesteps"),
    _slower("acrobot-cg-50", "Acrobot", "cg", -400, 1.50, 40_000, "AC-CG requires 50% more timesteps"),
    _slower("acrobot-kfac-235", "Acrobot", "kfac", -400, 3.35, 40_000, "AC-KFAC requires 235% more timesteps"),
    {"id": "cartpole-smac-87k", "task": "CartPole", "kind": "reach_by", "algo": "smac", "threshold": 750,
     "step": 87_000, "needs": 87_000, "text": "SMAC agents achieve 75% of the maximum return possible in 87000 timesteps"},
    _slower("cartpole-cg-10", "CartPole", "cg", 750, 1.10, 87_000, "AC-CG needs approximately 10% more timesteps"),
    _slower("cartpole-adam-28", "CartPole", "adam", 750, 1.28, 87_000, "AC-Adam requires 28% more timesteps"),
    _slower("cartpole-sgd-62", "CartPole", "sgd", 750, 1.62, 87_000, "AC-SGD requires 62% more timesteps"),
    {"id": "cartpole-kfac-40pct", "task": "CartPole", "kind": "never_above", "algo": "kfac", "threshold": 400,
     "needs": 141_000, "text": "the average performance of AC-KFAC never improves above 40% of the optimal policy's return"},
    {"id": "pendulum-cg-1.5M", "task": "Pendulum", "kind": "reach_by", "algo": "cg", "threshold": -2226,
     "step": 1_500_000, "needs": 1_500_000, "text": "AC-CG requires only 1.5 million timesteps to match the final performance of SMAC [-2226]"},
    {"id": "halfcheetah-smac-3.4M", "task": "HalfCheetah", "kind": "reach_by", "algo": "smac", "threshold": 1766,
     "step": 3_400_000, "needs": 3_400_000, "text": "SMAC matches the final performance of AC-CG [1766] after only 3.4 million timesteps"},
    {"id": "halfcheetah-smac-slower-2M", "task": "HalfCheetah", "kind": "below_until", "algo": "smac", "ref": "cg",
     "step": 2_000_000, "needs": 2_000_000, "text": "it [SMAC] learns more slowly [than AC-CG] for the first 2 million timesteps"},
    {"id": "hopper-smac-3x", "task": "Hopper", "kind": "reach_by", "algo": "smac", "threshold": 303.8,
     "step": PAPER_BUDGET // 3, "needs": PAPER_BUDGET // 3,
     "text": "SMAC achieves the final performance of AC-Adam [303.8] using almost three times fewer timesteps [read: by 5M/3]"},
    _slower("swimmer-cg-2x", "Swimmer", "cg", 23.8, 2.0, None,
            "matching the peak performance of AC-CG almost twice as fast [read: AC-CG's table final, 23.8; the "
            "paper prints no peak]"),
    {"id": "walker-smac-410k", "task": "Walker2d", "kind": "reach_by", "algo": "smac", "threshold": 115,
     "step": 410_000, "needs": 410_000, "text": "SMAC reaches the threshold of 115 in only 410000 timesteps"},
    _slower("walker-cg-39", "Walker2d", "cg", 115, 1.39, 410_000, "AC-CG itself needs 39% more"),
    {"id": "humanoid-smac-adam-59pct", "task": "Humanoid", "kind": "reach_by", "algo": "smac", "threshold": 3105,
     "step": int(0.59 * PAPER_BUDGET), "needs": int(0.59 * PAPER_BUDGET),
     "text": "SMAC matches the final performance of AC-Adam [3105] after 59% of the budget"},
    {"id": "humanoid-smac-cg-59pct", "task": "Humanoid", "kind": "reach_by", "algo": "smac", "threshold": 3175,
     "step": int(0.59 * PAPER_BUDGET), "needs": int(0.59 * PAPER_BUDGET),
     "text": "SMAC matches the final performance of AC-CG [3175] after 59% of the budget"},
    {"id": "humanoid-sgd-faster", "task": "Humanoid", "kind": "faster", "algo": "sgd", "ref": "smac", "threshold": 3105,
     "needs": None, "text": "AC-SGD is slightly faster than our method [read: to AC-Adam's final, 3105]"},
    _slower("pusher-cg-21", "Pusher", "cg", -441, 1.21, None, "passing the -441 threshold 21% faster than AC-CG"),
    _slower("pusher-sgd-9", "Pusher", "sgd", -441, 1.09, None, "passing the -441 threshold 9% faster than AC-SGD"),
]


def cell_curves(runs: list[dict], windows: Optional[dict] = None) -> dict:
    """{(task, algo): (span, seeds x bins smoothed curves, reach)} from run dicts (aggregate.discover /
    compact.load). The 100 bins span the runs' budget, or windows[task] steps where given: a shorter span
    keeps only the episodes inside it (narrower bins), a longer one leaves the bins past the runs empty
    (wider bins). reach = the steps the runs cover inside the span."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["task"], r["algo"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        budget = max(int(r["job_budget"] or r["last_step"]) for r in rs)
        span = (windows or {}).get(key[0], budget)
        curves = np.array([smoothed_curve(r["episodes"]["global_step"], r["episodes"]["episodic_return"], span,
                                          last_step=r["last_step"]) for r in rs])
        out[key] = (span, curves, min(budget, span))
    return out


def first_crossing(curve: np.ndarray, threshold: float, budget: int) -> Optional[int]:
    """End step of the first bin where curve >= threshold, or None."""
    hit = np.flatnonzero(np.nan_to_num(curve, nan=-np.inf) >= threshold)
    return None if hit.size == 0 else int(round((hit[0] + 1) * budget / N_BINS))


def fmt_step(s) -> str:
    """34_500 -> '34.5k', 150_000 -> '150k', 1_680_000 -> '1.68M', None -> 'never'."""
    if s is None:
        return "never"
    return f"{s / 1e6:.2f}M" if s >= 1e6 else f"{s / 1e3:.1f}".rstrip("0").rstrip(".") + "k"


def _per_seed(cells, task, algo, thr) -> list:
    span, curves, _ = cells[(task, algo)]
    return [first_crossing(c, thr, span) for c in curves]


def _cross(cells, task, algo, thr):
    span, curves, _ = cells[(task, algo)]
    mean = across_seeds(curves)[0]
    per_seed = _per_seed(cells, task, algo, thr)
    spread = ", ".join(fmt_step(s) for s in sorted(per_seed, key=lambda s: float("inf") if s is None else s))
    return first_crossing(mean, thr, span), spread


STRICT = {  # issue 27's names for the verdict of a "slower" / "faster" claim that holds on its direction
    "held": "the measured ratio within a factor 1.25 of the paper's, and the per-seed crossings separate (every seed "
            "of the faster algorithm crosses before every seed of the slower one)",
    "direction only": "the order is the paper's, but the ratio is not within 1.25x of the paper's or the seeds overlap",
    "baseline never reaches it": "the paper says the slower algorithm reaches the threshold later; ours never does",
}


def strict_verdict(verdict: str, t, t_ref, fast_seeds: list, slow_seeds: list, paper_ratio) -> str:
    """The stricter verdict of a slower / faster claim (STRICT): t is the slower algorithm's crossing, t_ref the
    faster one's; *_seeds their per-seed crossings (None: never)."""
    if verdict != "held":
        return verdict
    if t is None:
        return "baseline never reaches it"
    inf = float("inf")
    separate = max((s if s is not None else inf) for s in fast_seeds) < min((s if s is not None else inf)
                                                                           for s in slow_seeds)
    size_ok = paper_ratio is None or (paper_ratio / TOL <= t / t_ref <= paper_ratio * TOL)
    return "held" if separate and size_ok else "direction only"


def evaluate(runs: list[dict], tasks=None, claims=CLAIMS, windows: Optional[dict] = None) -> list[dict]:
    """One row per claim: id, task, claim, kind, algo, measured, seeds, verdict, and for a judged claim
    steps: (crossing step or None,) for reach_by, (algo's, ref's) with paper_ratio for slower / faster.
    windows: {task: steps} the 100 bins span instead of the runs' budget (cell_curves)."""
    cells = cell_curves(runs, windows)
    rows = []
    for c in claims:
        if tasks and c["task"] not in tasks:
            continue
        row = {"id": c["id"], "task": c["task"], "claim": c["text"], "kind": c["kind"], "algo": c["algo"],
               "measured": "", "seeds": "", "verdict": ""}
        needed = [c["algo"]] + ([c["ref"]] if "ref" in c else [])
        if any((c["task"], a) not in cells for a in needed):
            rows.append({**row, "verdict": "no runs"})
            continue
        budget = min(cells[(c["task"], a)][2] for a in needed)
        if c["needs"] is not None and budget < c["needs"]:
            rows.append({**row, "measured": f"budget {fmt_step(budget)} < {fmt_step(c['needs'])}",
                         "verdict": "beyond budget"})
            continue
        kind = c["kind"]
        if kind == "reach_by":
            t, spread = _cross(cells, c["task"], c["algo"], c["threshold"])
            held = t is not None and t <= TOL * c["step"]
            row.update(measured=f"{c['algo']} " + (f"reaches {c['threshold']:g} at {fmt_step(t)}" if t is not None
                                                      else f"does not reach {c['threshold']:g}")
                       + f" (paper {fmt_step(c['step'])})", seeds=spread, steps=(t,))
        elif kind in ("slower", "faster"):
            t, spread = _cross(cells, c["task"], c["algo"], c["threshold"])
            t_ref, spread_ref = _cross(cells, c["task"], c["ref"], c["threshold"])
            # compare over the span both cells cover: a crossing past the shorter one was not seen by the other
            t, t_ref = (None if x is None or x > budget else x for x in (t, t_ref))
            if c["needs"] is None and t is None and t_ref is None and budget < PAPER_BUDGET:
                rows.append({**row, "verdict": "beyond budget",
                             "measured": f"neither reaches {c['threshold']:g} by {fmt_step(budget)} (the paper gives "
                                         f"no step; its budget: {fmt_step(PAPER_BUDGET)})"})
                continue
            if kind == "slower":
                held = t_ref is not None and (t is None or t > t_ref)
            else:
                held = t is not None and (t_ref is None or t < t_ref)
            slow, fast = (t, t_ref) if kind == "slower" else (t_ref, t)
            seeds_algo = _per_seed(cells, c["task"], c["algo"], c["threshold"])
            seeds_ref = _per_seed(cells, c["task"], c["ref"], c["threshold"])
            slow_seeds, fast_seeds = (seeds_algo, seeds_ref) if kind == "slower" else (seeds_ref, seeds_algo)
            row["strict"] = strict_verdict("held" if held else "not held", slow, fast, fast_seeds, slow_seeds,
                                           c.get("ratio"))
            ratio = f"{t / t_ref:.2f}x" if t and t_ref else "n/a"
            paper = f", paper {c['ratio']:.2f}x" if "ratio" in c else ""
            row.update(measured=f"{c['algo']} {fmt_step(t)} vs {c['ref']} {fmt_step(t_ref)}: {ratio}{paper}",
                       seeds=f"{c['algo']}: {spread}; {c['ref']}: {spread_ref}", steps=(t, t_ref),
                       paper_ratio=c.get("ratio"))
        elif kind == "never_above":
            curves = cells[(c["task"], c["algo"])][1]
            peak = float(np.nanmax(across_seeds(curves)[0]))
            held = peak <= c["threshold"]
            row.update(measured=f"{c['algo']} peak {peak:.1f} (threshold {c['threshold']:g})",
                       seeds=", ".join(f"{np.nanmax(x):.0f}" for x in curves))
        elif kind == "below_until":
            b_a, ca, _ = cells[(c["task"], c["algo"])]
            cr = cells[(c["task"], c["ref"])][1]
            k = int(np.ceil(c["step"] / b_a * N_BINS))
            diff = float(np.nanmean(across_seeds(ca)[0][:k] - across_seeds(cr)[0][:k]))
            held = diff < 0
            row.update(measured=f"mean({c['algo']} - {c['ref']}) over the first {fmt_step(c['step'])}: {diff:.1f}")
        else:
            raise ValueError(f"unknown claim kind {kind!r}")
        verdict = "held" if held else "not held"
        rows.append({**row, "verdict": verdict, "strict": row.get("strict") or verdict})
    return rows


ORDER = ("held", "direction only", "baseline never reaches it", "not held")


def combined(row: dict) -> str:
    """The claim's verdict over both readings (our bins, and the paper's bin width in row["other"]): the less
    favourable of the two; a reading that cannot judge it (beyond budget, no runs) does not count."""
    mine = row.get("strict") or row["verdict"]
    other = row.get("other")
    theirs = (other.get("strict") or other["verdict"]) if other else None
    if mine not in ORDER or theirs not in ORDER:
        return mine
    return max(mine, theirs, key=ORDER.index)


COLUMNS = [("Task", lambda r: r["task"]), ("Claim (paper, section Results; [ ]: ours)", lambda r: r["claim"]),
           ("Measured (seed-mean curve)", lambda r: r["measured"]), ("Per seed", lambda r: r["seeds"]),
           ("Verdict", lambda r: f"**{r['verdict']}**")]


def markdown(rows: list[dict]) -> list[str]:
    return table(rows, COLUMNS)


# ------------------------------------------------------------------------------------------
# The fidelity study (issue 11): which reading of what the paper leaves unsaid reproduces its claims?
# ------------------------------------------------------------------------------------------
# Written before any fidelity run; the runs and the score follow it, not the other way round.
FIDELITY_RULE = """\
Score of a reading = the number of the paper's classic-control milestone claims (benchmark/milestones.py,
Acrobot and CartPole: 10 claims, all within the 150k-step budget; Pendulum's only quantitative claim is at
1.5M steps, beyond this study's budget) that hold on 3 seeds x 150k steps with all five algorithms at the
paper's rows, judged on the seed-mean of the paper's protocol (100 bins, EWM 0.1).
Round 1: every single-change reading above. Round 2: if at least two readings score above `literal`,
the union of the two best (ties by fewer actor steps per rollout) is run as one more reading.
The chosen reading is the highest score; ties go to fewer changes from `literal`, then to fewer actor
steps per rollout (cheaper), then to the order of READINGS. If nothing scores above `literal`, the
harness keeps `literal` and the report says that no reading reproduced the claims."""


CLAIM_COLUMNS = ("id", "task", "claim", "measured", "seeds", "verdict")  # claims.csv, after "reading"


def fidelity_score(logs_dir=hparams.FIDELITY_LOGS, results_dir=hparams.FIDELITY_RESULTS, write=True) -> list[dict]:
    """Evaluate every classic-control claim for every reading with logs; write scores.csv and claims.csv."""
    rows, claim_rows, final_rows = [], [], []
    for r in sorted(os.listdir(logs_dir)) if os.path.isdir(logs_dir) else []:
        runs = compact.discover_logs(os.path.join(logs_dir, r))
        if not runs:
            continue
        verdicts = evaluate(runs, tasks=hparams.FIDELITY_TASKS)
        held = sum(v["verdict"] == "held" for v in verdicts)
        evaluable = sum(v["verdict"] in ("held", "not held") for v in verdicts)
        n_changes = READINGS[r][1] if r in READINGS else len(r.split("+"))
        rows.append({"reading": r, "flags": " ".join(reading_flags(r)), "changes": n_changes,
                     "held": held, "evaluable": evaluable, "runs": len(runs),
                     "diverged": sum(x["status"] == "diverged" for x in runs)})
        claim_rows += [{"reading": r, **{k: v[k] for k in CLAIM_COLUMNS}} for v in verdicts]
        for (task, algo), (budget, curves, _) in sorted(cell_curves(runs).items()):
            mean = across_seeds(curves)[0]
            final_rows.append({"reading": r, "task": task, "algo": algo, "seeds": len(curves),
                               "final": f"{mean[-1]:.4g}", "peak": f"{np.nanmax(mean):.4g}",
                               "finals_per_seed": ";".join(f"{c[-1]:.4g}" for c in curves)})
    if write and rows:
        os.makedirs(results_dir, exist_ok=True)
        for name, data in (("scores.csv", rows), ("claims.csv", claim_rows), ("finals.csv", final_rows)):
            with open(os.path.join(results_dir, name), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(data[0]))
                w.writeheader()
                w.writerows(data)
    return rows


def steps_per_rollout(name: str) -> int:
    flags = reading_flags(name)
    get = lambda flag, default: int(flags[flags.index(flag) + 1]) if flag in flags else default
    return get("--num-minibatches", 1) * get("--update-epochs", 1)


def rescored(rows: list[dict], verdicts: dict, drop: set) -> list[dict]:
    """The score rows with "held" recounted from verdicts ({reading: {claim id: row}}) without the claims in drop."""
    return [{**r, "held": sum(v["verdict"] == "held" for cid, v in verdicts[r["reading"]].items() if cid not in drop)}
            for r in rows]


def fidelity_choose(rows: list[dict]) -> str:
    """The rule's choice among scored readings."""
    order = list(READINGS)
    key = lambda r: (-r["held"], r["changes"], steps_per_rollout(r["reading"]),
                     order.index(r["reading"]) if r["reading"] in order else len(order))
    best = sorted(rows, key=key)[0]
    literal = next((r for r in rows if r["reading"] == "literal"), None)
    return "literal" if literal and best["held"] <= literal["held"] else best["reading"]


def adam_check(budget: int = 111_000, seed: int = 1) -> dict:
    """Run the paper's CartPole AC-Adam row (paper-literal) and measure how far the actor moved:
    max |theta - theta_0| over parameters against the bound 3.2 * eta * (number of Adam steps)."""
    import tempfile

    import torch

    from benchmark import trainer as sa
    flags = hparams.lookup("CartPole", "adam")
    with tempfile.TemporaryDirectory() as tmp:
        argv = flags + ["--total-timesteps", str(budget), "--seed", str(seed), "--runs-dir", tmp,
                        "--no-tensorboard"]
        assert sa.main(argv) == 0
        run = os.path.join(tmp, os.listdir(tmp)[0])
        ckpt = sa.load_checkpoint(run)  # weights_only: loading runs no code
        args = sa.args_from_checkpoint(ckpt["args"])
        torch.manual_seed(args.seed)  # the trainer's initialization, rebuilt
        init = sa.Actor(4, 2, True, args.hidden_sizes, args.log_std_init, args.activation)
        moved = max((ckpt["actor"][k] - v).abs().max().item() for k, v in init.state_dict().items())
        import json
        summary = json.load(open(os.path.join(run, "summary.json")))
    return {"seed": seed, "adam_steps": ckpt["update"], "eta": args.learning_rate, "max_param_change": moved,
            "bound": 3.2 * args.learning_rate * ckpt["update"], "mean_return_last10": summary["mean_return_last10"]}


# ------------------------------------------------------------------------------------------
# The toy MDP's cosine study (smac_numpy.py keeps the MDP's core): python benchmark/aggregate.py toy
# ------------------------------------------------------------------------------------------
def toy_sm_expected(theta: np.ndarray, lam_p: float, damping: float) -> np.ndarray:
    """Exact expectation of the per-sample SM step over (x, a) ~ d(x) pi(a|x):

        sum_{x,a} d(x) pi(a|x) ell A / (damping + |ell|^2).

    As damping -> 0 this tends to NPG-printed / (2 - pi0): each one-sample step is
    A/ell, the compatible weight of its state, but x=1 is sampled only with d(1).
    """
    d = sn.toy_visitation(theta, lam_p)
    out = np.zeros(2)
    for x in (0, 1):
        for a in (0, 1):
            ell = sn.toy_score(theta, lam_p, x, a)
            out += (d[x] * sn.toy_prob(theta, lam_p, x, a) * ell * sn.toy_advantage(theta, lam_p, x, a)
                    / (damping + ell @ ell))
    return out


def direction(method, theta, lam_p, damping, n_samples, rng):
    """smac_numpy.toy_direction, plus "SM-expected"."""
    if method == "SM-expected":
        return toy_sm_expected(theta, lam_p, damping)
    return sn.toy_direction(method, theta, lam_p, damping, n_samples, rng)


def toy_grid_cosines(method: str, lam_p: float, damping: float, n_samples: int, seed: int,
                     reference: str = "NPG", half_width: float = 4.0, n: int = 21) -> np.ndarray:
    """Cosine of `method` to `reference` on an n x n grid of log-odds (u0, u1) in [-w, w]^2: every direction
    evaluated at the same policies (no trajectories). Returns shape (n*n,)."""
    rng = np.random.default_rng(seed)
    us = np.linspace(-half_width, half_width, n)
    out = []
    for u0 in us:
        for u1 in us:
            theta = np.array([-u0 / lam_p, -u1])
            out.append(sn._cos(direction(method, theta, lam_p, damping, n_samples, rng),
                               direction(reference, theta, lam_p, damping, n_samples, rng)))
    return np.array(out)


def toy_main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--damping", type=float, default=0.1)
    p.add_argument("--damping-sweep", type=float, nargs="+", default=[0.01, 0.1, 1.0, 10.0])
    p.add_argument("--n-samples", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    print("[A'] SM-expected along its own trajectory (smac_numpy.py toy-mdp's defaults), cosine to NPG / NPG-w, "
          "mean [min] over iterations")
    for lp in sn.TOY_LAMBDA_PS:
        r = sn.toy_run("SM-expected", lp, damping=a.damping, n_samples=a.n_samples, seed=a.seed, direction=direction)
        hit = np.nonzero(r["J"] >= 1.9)[0]
        print(f"  lambda_p={lp:<5} {'SM-expected':<14} cos(NPG) {np.nanmean(r['cos_npg']):+.3f} "
              f"[{np.nanmin(r['cos_npg']):+.3f}]   cos(NPG-w) {np.nanmean(r['cos_npg_weighted']):+.3f} "
              f"[{np.nanmin(r['cos_npg_weighted']):+.3f}]   final J {r['J'][-1]:.4f}   first J>=1.9 at iter "
              f"{hit[0] if len(hit) else 'never'}")
    print("[B] cosine to NPG / NPG-w at the same policies: 21x21 grid of log-odds in [-4,4]^2, mean [min]")
    for lp in sn.TOY_LAMBDA_PS:
        for m in ("PG", "SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean"):
            c1 = toy_grid_cosines(m, lp, a.damping, a.n_samples, a.seed, "NPG")
            c2 = toy_grid_cosines(m, lp, a.damping, a.n_samples, a.seed, "NPG-weighted")
            print(f"  lambda_p={lp:<5} {m:<14} cos(NPG) {np.nanmean(c1):+.3f} [{np.nanmin(c1):+.3f}]"
                  f"   cos(NPG-w) {np.nanmean(c2):+.3f} [{np.nanmin(c2):+.3f}]")
    print("[C] damping sweep: mean cosine to NPG (printed F) on the grid of [B]")
    print("  lambda_p  damping   SM-printed  SM-expected  SM-sampled  SM-batch-mean   (PG)")
    for lp in sn.TOY_LAMBDA_PS:
        pg = np.nanmean(toy_grid_cosines("PG", lp, 1.0, a.n_samples, a.seed))
        for dmp in a.damping_sweep:
            c = [np.nanmean(toy_grid_cosines(m, lp, dmp, a.n_samples, a.seed))
                 for m in ("SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean")]
            print(f"  {lp:<9} {dmp:<9} {c[0]:+.3f}      {c[1]:+.3f}       {c[2]:+.3f}      {c[3]:+.3f}         ({pg:+.3f})")
    return 0


def fidelity_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="aggregate.py fidelity", description="score the fidelity study's readings")
    p.add_argument("cmd", choices=["score", "adam-check", "rule"])
    a = p.parse_args(argv)
    if a.cmd == "rule":
        print(FIDELITY_RULE)
    elif a.cmd == "adam-check":
        res = adam_check()
        os.makedirs(hparams.FIDELITY_RESULTS, exist_ok=True)
        with open(os.path.join(hparams.FIDELITY_RESULTS, "adam_check.json"), "w") as f:
            json.dump(res, f, indent=2)
        print(res)
    else:
        rows = fidelity_score()
        for r in rows:
            print(f"{r['reading']:28s} held {r['held']}/{r['evaluable']}  runs {r['runs']}  diverged {r['diverged']}")
        if rows:
            print(f"chosen by the rule: {fidelity_choose(rows)}")
    return 0


# ------------------------------------------------------------------------------------------
# The stage-1 grid's cells and the aggregates across tasks (rliable)
# ------------------------------------------------------------------------------------------
METRICS = ("IQM", "Mean", "Median", "Optimality gap")


N_POINTS = 10  # sample-efficiency checkpoints: each tenth of the budget


def stage1_budget(task: str) -> int:
    return stage1_budgets()[task]


def load_cells(source: Union[str, list], budgets: Optional[dict] = None) -> dict:
    """{(task, algo): {"finished": [(seed, final, curve)], "diverged": [(seed, curve)], "short": [seeds]}} from a
    compact-logs directory or a list of loaded runs, binned over each task's stage-1 budget or `budgets[task]`.
    A diverged run's curve stops (NaN) where it diverged; a finished run without a finite final value (no
    episode at all) counts as short."""
    runs = compact.discover_logs(source) if isinstance(source, str) else source
    cells: dict = {}
    for run in runs:
        task, algo = run["task"], run["algo"]
        budget = (budgets or {}).get(task) or stage1_budget(task)
        cell = cells.setdefault((task, algo), {"finished": [], "diverged": [], "short": []})
        curve = smoothed_curve(run["episodes"]["global_step"], run["episodes"]["episodic_return"], budget,
                               last_step=min(run["last_step"], budget))
        if run["status"] == "diverged":
            cell["diverged"].append((run["seed"], curve))
        elif run["status"] == "finished" and run["last_step"] >= budget and np.isfinite(curve[-1]):
            cell["finished"].append((run["seed"], float(curve[-1]), curve))
        else:
            cell["short"].append(run["seed"])
    for cell in cells.values():
        cell["finished"].sort(key=lambda x: x[0])
        cell["diverged"].sort(key=lambda x: x[0])
    return cells


def peaks(cell: dict, budget: int) -> list[tuple[int, float, int, float]]:
    """(seed, peak, step of the peak, final) of each finished run's smoothed curve: a final alone hides a run
    that rose and then fell. The step is the end of the peak's bin."""
    out = []
    for seed, final, curve in cell["finished"]:
        i = int(np.nanargmax(curve))
        out.append((seed, float(curve[i]), (i + 1) * budget // len(curve), final))
    return out


MIN_CI_SEEDS = 3  # with 2 seeds the percentile bootstrap of the mean is just [min, max]: no CI, no check


def cell_rows(cells: dict) -> list[dict]:
    """One row per (task, algorithm) with runs: finals, mean, std, bootstrap CI (>= MIN_CI_SEEDS finished seeds),
    the paper's mean ± std, whether the paper's mean is inside our CI, and Welch's test of our seeds against the
    paper's mean ± std as a 5-seed sample (scipy.stats.ttest_ind_from_stats), since the paper's mean is an
    estimate too."""
    rows = []
    for task in hparams.tasks():
        for algo in hparams.ALGOS:
            cell = cells.get((task, algo))
            if not cell:
                continue
            finals = [f for _, f, _ in cell["finished"]]
            lo, hi = stats.bootstrap_mean_ci(finals) if len(finals) >= MIN_CI_SEEDS else (np.nan, np.nan)
            paper = hparams.paper_result(task, algo) if algo in hparams.PAPER_ALGOS else None
            inside = ("–" if paper is None or not np.isfinite(lo) else
                      "yes" if lo <= paper[0] <= hi else ("paper above" if paper[0] > hi else "paper below"))
            vs = stats.welch_vs_summary(finals, paper[0], paper[1], PAPER_SEEDS) if paper else None
            rows.append({"task": task, "algo": algo, "n": len(finals), "n_div": len(cell["diverged"]),
                         "mean": float(np.mean(finals)) if finals else np.nan,
                         "std": float(np.std(finals, ddof=1)) if len(finals) > 1 else np.nan,
                         "lo": lo, "hi": hi, "paper": None if paper is None else paper[0],
                         "paper_std": None if paper is None else paper[1], "inside": inside,
                         "p_vs_paper": np.nan if vs is None else vs["p"],
                         "finals": ";".join(f"{f:.6g}" for f in finals),
                         "diverged_seeds": ";".join(str(seed) for seed, _ in cell["diverged"])})
    return rows


PAPER_SEEDS = 5  # the paper's tab:performance: 5 seeds per cell


def scored_runs(cell: dict) -> list[tuple]:
    """(seed, final, curve) of every finished or diverged run of a cell, by seed. A diverged run scores as the
    random policy (normalized 0) from the bin where it diverged on, final included: it ends with no usable
    policy, and leaving it out would favour the algorithms that diverge."""
    runs = list(cell["finished"]) + [(seed, None, curve) for seed, curve in cell["diverged"]]
    return sorted(runs, key=lambda x: x[0])


def normalized(cells: dict, n_runs: int, algos=hparams.PAPER_ALGOS) -> tuple[dict, list[str], dict]:
    """({algo: (n_runs, tasks) normalized finals}, tasks used, {algo: (n_runs, tasks, N_POINTS) curves}) over the
    tasks where every algorithm has n_runs finished or diverged runs (the first n_runs by seed)."""
    rand = compact.read_random_scores()
    tasks = [t for t in hparams.tasks() if t in rand and all(len(scored_runs(cells.get((t, a), {"finished": [],
                                                                                               "diverged": []})))
                                                           >= n_runs for a in algos)]
    scores, curves = {}, {}
    every = N_BINS // N_POINTS
    for a in algos:
        s = np.zeros((n_runs, len(tasks)))
        c = np.zeros((n_runs, len(tasks), N_POINTS))
        for j, t in enumerate(tasks):
            best = max(hparams.paper_result(t, b)[0] for b in hparams.PAPER_ALGOS)
            for i, (_, final, curve) in enumerate(scored_runs(cells[(t, a)])[:n_runs]):
                s[i, j] = 0.0 if final is None else stats.normalize(final, rand[t], best)
                c[i, j] = np.nan_to_num(stats.normalize(curve[every - 1::every], rand[t], best), nan=0.0)
        scores[a], curves[a] = s, c
    return scores, tasks, curves


def aggregates(cells: dict, min_seeds: int, results_dir: str, reps: int) -> Optional[dict]:
    """rliable aggregates over the tasks where all the algorithms run (the paper's five and sgd-matched) have `use` finished or diverged runs
    (scored_runs), `use` in 2..min_seeds chosen for the most tasks, then the most runs.
    Writes aggregates.csv and improvement.csv (report.compute draws the figures); None (and no stale CSVs) if
    no task qualifies."""
    empty = {"finished": [], "diverged": []}
    algos = [a for a in hparams.ALGOS if any((t, a) in cells for t in hparams.tasks())]  # sgd-matched too (issue 27)
    per_task = [min(len(scored_runs(cells.get((t, a), empty))) for a in algos) for t in hparams.tasks()]
    # runs per task: the most tasks first (a 3-seed grid over nine tasks says more than 5 seeds on two), then
    # the most runs; at least 2
    use = max(range(2, min_seeds + 1), key=lambda n: (sum(s >= n for s in per_task), n))
    use = use if any(s >= use for s in per_task) else 0
    if use < 2:
        for name in ("aggregates.csv", "improvement.csv"):  # no stale aggregates beside fresh cells
            if os.path.isfile(os.path.join(results_dir, name)):
                os.remove(os.path.join(results_dir, name))
        return None
    scores, tasks, curves = normalized(cells, use, algos)
    agg = stats.aggregate_intervals(scores, reps=reps)
    imp = {b: stats.improvement_probability(scores["smac"], scores[b], reps=reps) for b in algos if b != "smac"}
    eff = stats.iqm_over_steps(curves, reps=reps)
    taus = np.linspace(-0.5, 1.5, 81)
    profile = stats.performance_profile(scores, taus)
    write_csv(os.path.join(results_dir, "aggregates.csv"),
              [{"algo": a, "metric": m, "point": f"{p:.6g}", "lo": f"{lo:.6g}", "hi": f"{hi:.6g}",
                "tasks": ";".join(tasks), "seeds_per_task": use} for a, d in agg.items() for m, (p, lo, hi) in d.items()])
    write_csv(os.path.join(results_dir, "improvement.csv"),
              [{"x": "smac", "y": b, "P(x>y)": f"{p:.4f}", "lo": f"{lo:.4f}", "hi": f"{hi:.4f}"}
               for b, (p, lo, hi) in imp.items()])
    return {"use": use, "tasks": tasks, "agg": agg, "imp": imp, "eff": eff, "profile": profile, "taus": taus}


def claims_main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="aggregate.py claims", description="the paper's timestep claims on some runs")
    p.add_argument("source", help="compact logs root ({task}/{algo}/seed{n}.json.gz) or, with --raw, a runs dir")
    p.add_argument("--raw", action="store_true", help="source is a sweep runs directory")
    a = p.parse_args(argv)
    runs = discover(a.source) if a.raw else compact.discover_logs(a.source)
    print("\n".join(markdown(evaluate(runs))))
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    sub = {"toy": toy_main, "fidelity": fidelity_main, "claims": claims_main}
    if argv and argv[0] in sub:
        return sub[argv[0]](argv[1:])
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
