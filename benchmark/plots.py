"""The paper's figures from our runs -> PNGs under docs/figures/ (benchmark/report.py draws them for the
stage-1 grid; this command draws them for any aggregate.py results directory).

    python benchmark/plots.py --results-dir benchmark/results/stage1

  returns_smoothed.png  per task: binned + EWM-smoothed return, mean over seeds, shaded ± std
                        (<results>/curves_return.csv; the paper's Figs. results / classic)
  returns_raw.png       per task: raw episodic returns of every run, unbinned and unsmoothed
                        (run directories or compact logs)
  logprob.png           per task: mean log-probability of the taken actions, smoothed like the returns
                        (<results>/curves_logprob.csv)
  diagnostics.png       SMAC: |l_bar|^2/lambda, cos(g, step) and the fraction removed by the rank-1
                        correction over training, median and 10-90% band across seeds
                        (<results>/diagnostics.csv)
  smac_diagnostics.png  issue 8, one row per task: SMAC vs sgd-matched return curves, then |l_bar|^2/lambda,
                        cos(g, step) and the fraction removed (curves_return.csv + diagnostics.csv)
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import hparams  # noqa: E402
from benchmark.aggregate import DEFAULT_RESULTS, discover  # noqa: E402
from benchmark.stats import read_csv as read  # noqa: E402,F401  (plots.read: rows of a results CSV)

DEFAULT_FIGURES = os.path.join(REPO, "docs", "figures")
COLORS = {"smac": "tab:red", "sgd": "tab:blue", "adam": "tab:green", "cg": "tab:purple", "kfac": "tab:orange",
          "sgd-matched": "tab:cyan"}


def col(rows, name):
    return np.array([float(r[name]) if r[name] not in ("", None) else np.nan for r in rows])


def grid(n):
    cols = 3
    rows = max(1, -(-n // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    return fig, axes.flat


def tasks_in(rows):
    present = {r["task"] for r in rows}
    return [t for t in hparams.tasks() if t in present] + sorted(present - set(hparams.tasks()))


def save(fig, path: str, title: Optional[str] = None, dpi: int = 110, rect=None, **title_kw) -> None:
    """The tail every figure shares: optional suptitle, tight layout (inside `rect`), PNG at `dpi`, close."""
    if title:
        fig.suptitle(title, **title_kw)
    fig.tight_layout(**({"rect": rect} if rect else {}))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def plot_curves(rows, ylabel, title, path) -> bool:
    tasks = tasks_in(rows)
    if not tasks:
        return False
    fig, axes = grid(len(tasks))
    for ax, task in zip(axes, tasks):
        for algo in hparams.ALGOS:
            sel = [r for r in rows if r["task"] == task and r["algo"] == algo]
            if not sel:
                continue
            x, m, s, n = col(sel, "step"), col(sel, "mean"), col(sel, "std"), col(sel, "n")
            ax.plot(x, m, color=COLORS[algo], lw=1.4, label=f"{hparams.algo_label(algo)} (n={int(np.nanmax(n))})")
            ax.fill_between(x, m - np.nan_to_num(s), m + np.nan_to_num(s), color=COLORS[algo], alpha=0.18, lw=0)
        ax.set_title(task)
        ax.set_xlabel("environment steps")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    save(fig, path, title)
    return True


def plot_raw(source, path) -> bool:
    """source: a sweep runs directory, or loaded runs (aggregate.discover / compact.discover_logs)."""
    runs = [r for r in (discover(source) if isinstance(source, str) else source) if r["episodes"]["global_step"].size]
    if not runs:
        return False
    tasks = [t for t in hparams.tasks() if any(r["task"] == t for r in runs)]
    fig, axes = grid(len(tasks))
    for ax, task in zip(axes, tasks):
        seen = set()
        for r in sorted((r for r in runs if r["task"] == task), key=lambda r: (r["algo"], r["seed"])):
            label = hparams.algo_label(r["algo"]) if r["algo"] not in seen and r["algo"] in COLORS else None
            seen.add(r["algo"])
            ax.plot(r["episodes"]["global_step"], r["episodes"]["episodic_return"], lw=0.4, alpha=0.6,
                    color=COLORS.get(r["algo"], "grey"), label=label)
        ax.set_title(task)
        ax.set_xlabel("environment steps")
        ax.set_ylabel("episodic return (raw)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    save(fig, path, "Raw episodic returns, every run (unbinned, unsmoothed)")
    return True


def plot_diagnostics(rows, path) -> bool:
    rows = [r for r in rows if r["algo"] == "smac"]
    tasks = tasks_in(rows)
    if not tasks:
        return False
    names = [("ell_sq_over_lambda", "|l̄|² / λ", True), ("cos_g_step", "cos(g, step)", False),
             ("removed_frac", "fraction removed by rank-1 term", True)]
    fig, axes = plt.subplots(len(names), len(tasks), figsize=(3.0 * len(tasks), 2.6 * len(names)), squeeze=False)
    for j, task in enumerate(tasks):
        sel = [r for r in rows if r["task"] == task]
        x = col(sel, "step")
        for i, (name, label, logy) in enumerate(names):
            ax = axes[i][j]
            med, lo, hi = col(sel, name + "_median"), col(sel, name + "_p10"), col(sel, name + "_p90")
            ax.plot(x, med, color="tab:red", lw=1.2)
            ax.fill_between(x, lo, hi, color="tab:red", alpha=0.2, lw=0)
            if logy and np.nanmax(np.where(med > 0, med, np.nan), initial=0) > 0:
                ax.set_yscale("log")
            if i == 0:
                ax.set_title(f"{task} (n={sel[0]['n']})")
            if j == 0:
                ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=6)
    save(fig, path, "SMAC diagnostics over training (median, 10–90% across seeds)")
    return True


def plot_smac_vs_matched(curve_rows, diag_rows, path) -> bool:
    """Issue 8, one row per task: return curves of SMAC and sgd-matched (mean ± std over seeds), then
    |l_bar|^2/lambda (log, dashed line at 1), cos(g, step) and the fraction of g/lambda removed by the rank-1
    term (median and 10-90% band across seeds, binned like the return curves); cos is drawn as 1 - cos on a log
    axis (floored at 1e-9) so that 0.9999 and 0.4 are both readable."""
    diag_rows = [r for r in diag_rows if r["algo"] == "smac"]
    curve_rows = [r for r in curve_rows if r["algo"] in ("smac", "sgd-matched")]
    tasks = [t for t in tasks_in(curve_rows + diag_rows)]
    if not tasks:
        return False
    names = [("ell_sq_over_lambda", "‖ℓ̄‖² / λ", True), ("cos_g_step", "1 − cos(g, step)  (log)", True),
             ("removed_frac", "removed: ‖g/λ − step‖ / ‖g/λ‖", False)]
    fig, axes = plt.subplots(len(tasks), 1 + len(names), figsize=(14, 2.3 * len(tasks) + 0.6), squeeze=False)
    for i, task in enumerate(tasks):
        ax = axes[i][0]
        for algo in ("smac", "sgd-matched"):
            sel = [r for r in curve_rows if r["task"] == task and r["algo"] == algo]
            if not sel:
                continue
            x, m, s_, n = col(sel, "step"), col(sel, "mean"), col(sel, "std"), col(sel, "n")
            ax.plot(x, m, color=COLORS[algo], lw=1.3, label=f"{hparams.algo_label(algo)} (n={int(np.nanmax(n))})")
            ax.fill_between(x, m - np.nan_to_num(s_), m + np.nan_to_num(s_), color=COLORS[algo], alpha=0.18, lw=0)
        ax.set_ylabel(f"{task}\nreturn", fontsize=8)
        ax.legend(fontsize=6, loc="best")
        sel = [r for r in diag_rows if r["task"] == task]
        lam = hparams.settings(task, "smac")["damping"] if task in hparams.tasks() else None
        for j, (name, label, logy) in enumerate(names, start=1):
            ax = axes[i][j]
            if not sel:
                ax.text(0.5, 0.5, "no SMAC diagnostics", ha="center", va="center", transform=ax.transAxes, fontsize=7)
            else:
                x = col(sel, "step")
                med, lo, hi = col(sel, name + "_median"), col(sel, name + "_p10"), col(sel, name + "_p90")
                if name == "cos_g_step":  # 1 - cos is monotone: median and band map over (band reversed)
                    med, lo, hi = 1.0 - med, 1.0 - hi, 1.0 - lo
                    floor = 1e-9  # cos rounds to 1 in float64 when the correction is negligible
                    med, lo, hi = (np.maximum(v, floor) for v in (med, lo, hi))
                    ax.set_yscale("log")
                ax.plot(x, med, color="tab:red", lw=1.2)
                ax.fill_between(x, lo, hi, color="tab:red", alpha=0.2, lw=0)
                if name == "ell_sq_over_lambda":
                    ax.axhline(1.0, color="k", ls="--", lw=0.8)
                    if np.nanmax(np.where(lo > 0, lo, np.nan), initial=0) > 0:
                        ax.set_yscale("log")
                    ax.set_title(f"{task}: λ = {lam:g}, n = {sel[0]['n']} seeds" if lam else task, fontsize=8)
                if name == "removed_frac":
                    ax.set_ylim(0, 1)
            if i == 0 and name != "ell_sq_over_lambda":
                ax.set_title(label, fontsize=8)
            elif i == 0:
                ax.set_title(f"{label}\n" + ax.get_title(), fontsize=8)
        for ax in axes[i]:
            ax.grid(alpha=0.3)
            ax.tick_params(which="both", labelsize=6)
            if i == len(tasks) - 1:
                ax.set_xlabel("environment steps", fontsize=7)
    axes[0][0].set_title("return: 100 bins, EWM 0.1, mean ± std", fontsize=8)
    save(fig, path, "Is batch-mean SMAC more than SGD with step η/λ? SMAC vs sgd-matched, and SMAC's step "
         "diagnostics (median, 10–90% band across seeds)", dpi=100, rect=(0, 0, 1, 0.985), fontsize=10)
    return True


def figures(results_dir: str, out_dir: str, raw_source) -> dict:
    """Every figure of the module docstring from an aggregate.py results directory; raw_source: a runs directory
    or loaded runs for returns_raw.png. Returns {file name: written?}."""
    os.makedirs(out_dir, exist_ok=True)
    res = lambda name: read(os.path.join(results_dir, name))  # noqa: E731
    out = lambda name: os.path.join(out_dir, name)  # noqa: E731
    return {
        "returns_smoothed.png": plot_curves(res("curves_return.csv"), "episodic return",
                                            "Return: 100 bins, EWM 0.1, mean ± std over seeds", out("returns_smoothed.png")),
        "returns_raw.png": plot_raw(raw_source, out("returns_raw.png")),
        "logprob.png": plot_curves(res("curves_logprob.csv"), "mean log π(a|s)",
                                   "Mean log-probability of taken actions: 100 bins, EWM 0.1, mean ± std",
                                   out("logprob.png")),
        "diagnostics.png": plot_diagnostics(res("diagnostics.csv"), out("diagnostics.png")),
        "smac_diagnostics.png": plot_smac_vs_matched(res("curves_return.csv"), res("diagnostics.csv"),
                                                     out("smac_diagnostics.png")),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Plot the aggregated benchmark results (benchmark/report.py draws them "
                                "too, for the stage-1 grid).")
    p.add_argument("--results-dir", default=DEFAULT_RESULTS)
    p.add_argument("--runs-dir", default=None, help="raw runs for returns_raw.png (default: the stage-1 grid's "
                   "compact logs, matching the default --results-dir)")
    p.add_argument("--out-dir", default=DEFAULT_FIGURES)
    args = p.parse_args(argv)
    raw = args.runs_dir
    if raw is None:
        from benchmark import compact
        from benchmark.aggregate import stage1_logs
        raw = compact.discover_logs(stage1_logs())
    for name, ok in figures(args.results_dir, args.out_dir, raw).items():
        path = os.path.join(args.out_dir, name)
        print(f"{'wrote  ' if ok else 'skipped'} {path}" + ("" if ok else " (no data)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
