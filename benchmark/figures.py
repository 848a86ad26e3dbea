"""The curve figures and the grid's aggregate figures, shared by the reports that draw them.

The stage-1 style curve figures (`figures`: the smoothed returns, every run's raw returns, the mean log-probability,
SMAC against SGD with step eta/lambda with SMAC's step diagnostics) from an aggregate.py results directory, and the
rliable aggregates of a grid (`grid_plots`: interval estimates, sample efficiency, performance profile). This module
knows no study: the grid study (benchmark/studies/grid.py) and report.logs_report, a report of any compact logs,
call it.
"""

from __future__ import annotations

import os

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from benchmark import aggregate, algorithms, hparams  # noqa: E402
from benchmark.stats import read_csv, save  # noqa: E402


def col(rows, name):
    """Column `name` of CSV rows as floats, NaN where empty."""
    return np.array([float(r[name]) if r[name] not in ("", None) else np.nan for r in rows])


def panels(tasks, ylabel):
    """One panel per task, three to a row (the unused ones hidden), titled and labelled; legends come last."""
    rows = max(1, -(-len(tasks) // 3))
    fig, axes = plt.subplots(rows, 3, figsize=(4.2 * 3, 3.2 * rows), squeeze=False)
    for ax in axes.flat[len(tasks) :]:
        ax.axis("off")
    for ax, task in zip(axes.flat, tasks):
        ax.set(title=task, xlabel="environment steps", ylabel=ylabel)
        ax.grid(alpha=0.3)
    return fig, axes.flat


def tasks_in(rows):
    """The tasks of the rows: the registry's in its order, then any other by name."""
    present = {r["task"] for r in rows}
    return [t for t in hparams.tasks() if t in present] + sorted(present - set(hparams.tasks()))


def mean_band(ax, rows, algo, lw) -> None:
    """One algorithm's curve rows (curves_*.csv) as its mean line and a ± std band, labelled with its seed count."""
    if not rows:
        return
    x, m, s, n = col(rows, "step"), col(rows, "mean"), col(rows, "std"), col(rows, "n")
    ax.plot(
        x, m, color=algorithms.color(algo), lw=lw, label=f"{hparams.algo_label(algo)} (n={int(np.nanmax(n))})"
    )
    ax.fill_between(
        x, m - np.nan_to_num(s), m + np.nan_to_num(s), color=algorithms.color(algo), alpha=0.18, lw=0
    )


def plot_curves(rows, ylabel, title, path) -> bool:
    """Curve rows (curves_*.csv) as one panel per task, each algorithm's mean ± std; False where there are none."""
    tasks = tasks_in(rows)
    if not tasks:
        return False
    fig, axes = panels(tasks, ylabel)
    for ax, task in zip(axes, tasks):
        for algo in hparams.algos():
            mean_band(ax, [r for r in rows if r["task"] == task and r["algo"] == algo], algo, 1.4)
        ax.legend(fontsize=6)
    save(fig, path, title)
    return True


def plot_raw(runs, path) -> bool:
    """Every run's raw episodic returns (loaded compact logs), a colour per algorithm."""
    runs = [r for r in runs if r["episodes"]["global_step"].size]
    if not runs:
        return False
    tasks = [t for t in hparams.tasks() if any(r["task"] == t for r in runs)]
    fig, axes = panels(tasks, "episodic return (raw)")
    for ax, task in zip(axes, tasks):
        seen = set()
        for r in sorted((r for r in runs if r["task"] == task), key=lambda r: (r["algo"], r["seed"])):
            label = (
                hparams.algo_label(r["algo"])
                if r["algo"] not in seen and r["algo"] in algorithms.REGISTRY
                else None
            )
            seen.add(r["algo"])
            ax.plot(
                r["episodes"]["global_step"],
                r["episodes"]["episodic_return"],
                lw=0.4,
                alpha=0.6,
                color=algorithms.color(r["algo"]) if r["algo"] in algorithms.REGISTRY else "grey",
                label=label,
            )
        ax.legend(fontsize=6)
    save(fig, path, "Raw episodic returns, every run (unbinned, unsmoothed)")
    return True


def plot_smac_vs_matched(curve_rows, diag_rows, path) -> bool:
    """SMAC against SGD with step η/λ, one row per task: return curves of SMAC and sgd-matched (mean ± std over
    seeds), then |l_bar|^2/lambda (log, dashed line at 1), cos(g, step) and the fraction of g/lambda removed by the
    rank-1 term (median and 10-90% band across seeds); cos is drawn as 1 - cos on a log axis (floored at 1e-9) so
    0.9999 and 0.4 are both readable."""
    diag_rows = [r for r in diag_rows if r["algo"] == "smac"]
    curve_rows = [r for r in curve_rows if r["algo"] in ("smac", "sgd-matched")]
    tasks = tasks_in(curve_rows + diag_rows)
    if not tasks:
        return False
    names = [
        ("ell_sq_over_lambda", "‖ℓ̄‖² / λ", True),
        ("cos_g_step", "1 − cos(g, step)  (log)", True),
        ("removed_frac", "removed: ‖g/λ − step‖ / ‖g/λ‖", False),
    ]
    fig, axes = plt.subplots(len(tasks), 1 + len(names), figsize=(14, 2.3 * len(tasks) + 0.6), squeeze=False)
    for i, task in enumerate(tasks):
        ax = axes[i][0]
        for algo in ("smac", "sgd-matched"):
            mean_band(ax, [r for r in curve_rows if r["task"] == task and r["algo"] == algo], algo, 1.3)
        ax.set_ylabel(f"{task}\nreturn", fontsize=8)
        ax.legend(fontsize=6, loc="best")
        sel = [r for r in diag_rows if r["task"] == task]
        lam = hparams.settings(task, "smac")["damping"] if task in hparams.tasks() else None
        for j, (name, label, _logy) in enumerate(names, start=1):
            ax = axes[i][j]
            if not sel:
                ax.text(
                    0.5,
                    0.5,
                    "no SMAC diagnostics",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                    fontsize=7,
                )
            else:
                x = col(sel, "step")
                med, lo, hi = col(sel, name + "_median"), col(sel, name + "_p10"), col(sel, name + "_p90")
                # 1 - cos is monotone (band reversed); floored: cos rounds to 1 in float64
                if name == "cos_g_step":
                    med, lo, hi = (np.maximum(v, 1e-9) for v in (1.0 - med, 1.0 - hi, 1.0 - lo))
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
            if i == 0:
                ax.set_title(
                    f"{label}\n" + ax.get_title() if name == "ell_sq_over_lambda" else label, fontsize=8
                )
        for ax in axes[i]:
            ax.grid(alpha=0.3)
            ax.tick_params(which="both", labelsize=6)
            if i == len(tasks) - 1:
                ax.set_xlabel("environment steps", fontsize=7)
    axes[0][0].set_title("return: 100 bins, EWM 0.1, mean ± std", fontsize=8)
    save(
        fig,
        path,
        "Is batch-mean SMAC more than SGD with step η/λ? SMAC vs sgd-matched, and SMAC's step "
        "diagnostics (median, 10–90% band across seeds)",
        dpi=100,
        rect=(0, 0, 1, 0.985),
        fontsize=10,
    )
    return True


def figures(results_dir: str, out_dir: str, runs: list) -> None:
    """The curve figures from an aggregate.py results directory and the loaded runs."""
    os.makedirs(out_dir, exist_ok=True)

    def res(name: str) -> list[dict]:
        return read_csv(os.path.join(results_dir, name))

    def out(name: str) -> str:
        return os.path.join(out_dir, name)

    plot_curves(
        res("curves_return.csv"),
        "episodic return",
        "Return: 100 bins, EWM 0.1, mean ± std over seeds",
        out("returns_smoothed.png"),
    )
    plot_raw(runs, out("returns_raw.png"))
    plot_curves(
        res("curves_logprob.csv"),
        "mean log π(a|s)",
        "Mean log-probability of taken actions: 100 bins, EWM 0.1, mean ± std",
        out("logprob.png"),
    )
    plot_smac_vs_matched(res("curves_return.csv"), res("diagnostics.csv"), out("smac_diagnostics.png"))


def grid_plots(agg: dict, eff: dict, profile: dict, taus, tasks: list[str], figures_dir: str) -> None:
    """The grid's rliable aggregates (aggregate.aggregates): grid_aggregate.png (each metric's point and interval per
    algorithm), grid_sample_efficiency.png (the IQM over the budget), grid_profile.png (the performance profile)."""
    algos = list(agg)
    label = f"tasks: {', '.join(tasks)}; 95 % stratified bootstrap CIs (rliable)"
    fig, axes = plt.subplots(1, len(aggregate.METRICS), figsize=(15, 3.2))
    for ax, name in zip(axes, aggregate.METRICS):
        for i, a in enumerate(algos):
            p, lo, hi = agg[a][name][:3]
            ax.barh(i, hi - lo, left=lo, height=0.6, color=f"C{i}", alpha=0.75)
            ax.plot([p, p], [i - 0.3, i + 0.3], color="k")
        ax.set_yticks(
            range(len(algos)), [hparams.algo_label(a) if name == aggregate.METRICS[0] else "" for a in algos]
        )
        ax.set_title(name)
        ax.grid(axis="x", alpha=0.3)
    save(
        fig,
        os.path.join(figures_dir, "grid_aggregate.png"),
        f"normalized score (random = 0, best of the paper's table = 1); {label}",
        fontsize=8,
    )
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = np.arange(1, aggregate.N_POINTS + 1) / aggregate.N_POINTS
    for i, a in enumerate(algos):
        iqm, lo, hi = eff[a]
        ax.plot(x, iqm, marker="o", color=f"C{i}", label=hparams.algo_label(a))
        ax.fill_between(x, lo, hi, color=f"C{i}", alpha=0.15)
    ax.set(xlabel="fraction of the stage-1 budget", ylabel="IQM normalized score", title="sample efficiency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, label, fontsize=6)
    save(fig, os.path.join(figures_dir, "grid_sample_efficiency.png"), rect=(0, 0.03, 1, 1))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, a in enumerate(algos):
        ax.plot(taus, profile[a], color=f"C{i}", label=hparams.algo_label(a))
    ax.set(xlabel="normalized score τ", ylabel="fraction of runs with score > τ", title="performance profile")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, os.path.join(figures_dir, "grid_profile.png"))
