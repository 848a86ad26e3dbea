"""The stage-1 grid (issue 12) from its committed compact logs: per-cell finals with bootstrap CIs beside
the paper, and the aggregates the field now reports (Agarwal et al. 2021) via rliable.

    python benchmark/grid_report.py                  # logs of hyperparams.toml's stage-1 reading
    python benchmark/grid_report.py --logs benchmark/results/logs/literal --min-seeds 3

Writes benchmark/results/grid/{cells,aggregates,improvement}.csv, docs/figures/grid_{aggregate,
sample_efficiency}.png, and returns the markdown section REPORT.md includes.

Per cell (task x algorithm): the final value of each finished seed (last of 100 EWM(0.1)-smoothed bins,
the paper's protocol), mean ± std, a 95 % percentile bootstrap CI of the mean (scipy), and whether the
paper's value lies inside it. Diverged runs are counted and listed, not averaged. Across tasks: scores
normalized per task to [random policy (benchmark/results/random_scores.csv) = 0, best of the paper's
table = 1]; IQM, mean, median and optimality gap with stratified-bootstrap CIs, probability of
improvement of SMAC over each baseline, and sample-efficiency curves (IQM of the normalized smoothed
curve at each tenth of the budget). Aggregates use the tasks where every algorithm has at least
--min-seeds finished seeds (the first that many seeds of each), and say which.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from typing import Optional

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import compact, hparams, random_scores, stats  # noqa: E402
from benchmark.aggregate import N_BINS, smoothed_curve  # noqa: E402

RESULTS = os.path.join(REPO, "benchmark", "results", "grid")
FIGURES = os.path.join(REPO, "docs", "figures")
STAGE1_BUDGETS = {"classic": 500_000, "mujoco": 1_000_000, "Pendulum": 2_000_000}


def stage1_budget(task: str) -> int:
    return STAGE1_BUDGETS.get(task, STAGE1_BUDGETS[hparams.task_info(task)["group"]])


def fmt(x: Optional[float]) -> str:
    """The one number format of this report: 4 significant digits, '–' for missing."""
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.4g}" if abs(x) < 1e5 else f"{x:.3e}"


def load_cells(logs_dir: str) -> dict:
    """{(task, algo): {"finished": [(seed, final, curve)], "diverged": [seeds], "short": [seeds]}}."""
    cells: dict = {}
    for run in compact.discover_logs(logs_dir):
        task, algo = run["task"], run["algo"]
        budget = stage1_budget(task)
        cell = cells.setdefault((task, algo), {"finished": [], "diverged": [], "short": []})
        if run["status"] == "diverged":
            cell["diverged"].append(run["seed"])
        elif run["status"] == "finished" and run["last_step"] >= budget:
            curve = smoothed_curve(run["episodes"]["global_step"], run["episodes"]["episodic_return"], budget)
            cell["finished"].append((run["seed"], float(curve[-1]), curve))
        else:
            cell["short"].append(run["seed"])
    for cell in cells.values():
        cell["finished"].sort(key=lambda x: x[0])
    return cells


# --- row specifications: each column is (header, function of a cell row) --------------------------------
CELL_COLUMNS = [
    ("Task", lambda r: r["task"]),
    ("Algorithm", lambda r: hparams.algo_label(r["algo"])),
    ("seeds", lambda r: f"{r['n']}" + (f" (+{r['n_div']} diverged)" if r["n_div"] else "")),
    ("ours: mean ± std", lambda r: f"{fmt(r['mean'])} ± {fmt(r['std'])}"),
    ("95 % CI of the mean", lambda r: f"[{fmt(r['lo'])}, {fmt(r['hi'])}]"),
    ("paper", lambda r: "–" if r["paper"] is None else f"{r['paper']:g}"),
    ("paper inside CI?", lambda r: r["inside"]),
]


def cell_rows(cells: dict) -> list[dict]:
    rows = []
    for task in hparams.tasks():
        for algo in hparams.ALGOS:
            cell = cells.get((task, algo))
            if not cell:
                continue
            finals = [f for _, f, _ in cell["finished"]]
            lo, hi = stats.bootstrap_mean_ci(finals) if len(finals) >= 2 else (np.nan, np.nan)
            paper = hparams.paper_result(task, algo)[0] if algo in hparams.PAPER_ALGOS else None
            inside = "–" if paper is None or not np.isfinite(lo) else ("yes" if lo <= paper <= hi else "no")
            rows.append({"task": task, "algo": algo, "n": len(finals), "n_div": len(cell["diverged"]),
                         "mean": float(np.mean(finals)) if finals else np.nan,
                         "std": float(np.std(finals, ddof=1)) if len(finals) > 1 else np.nan,
                         "lo": lo, "hi": hi, "paper": paper, "inside": inside,
                         "finals": ";".join(f"{f:.6g}" for f in finals),
                         "diverged_seeds": ";".join(map(str, cell["diverged"]))})
    return rows


def table(rows: list[dict], columns) -> list[str]:
    return (["| " + " | ".join(h for h, _ in columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(str(f(r)) for _, f in columns) + " |" for r in rows])


def normalized(cells: dict, min_seeds: int, algos=hparams.PAPER_ALGOS) -> tuple[dict, list[str], dict]:
    """({algo: (min_seeds, tasks) normalized finals}, tasks used, {algo: (min_seeds, tasks, 10) curves})."""
    rand = random_scores.read()
    tasks = [t for t in hparams.tasks() if t in rand and all(len(cells.get((t, a), {}).get("finished", [])) >= min_seeds
                                                           for a in algos)]
    scores, curves = {}, {}
    for a in algos:
        s = np.zeros((min_seeds, len(tasks)))
        c = np.zeros((min_seeds, len(tasks), 10))
        for j, t in enumerate(tasks):
            best = max(hparams.paper_result(t, b)[0] for b in hparams.PAPER_ALGOS)
            for i, (_, final, curve) in enumerate(cells[(t, a)]["finished"][:min_seeds]):
                s[i, j] = stats.normalize(final, rand[t], best)
                c[i, j] = stats.normalize(curve[N_BINS // 10 - 1::N_BINS // 10], rand[t], best)
        scores[a], curves[a] = s, c
    return scores, tasks, curves


def plots(scores: dict, curves: dict, agg: dict, tasks: list[str], path_agg: str, path_eff: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import metrics
    algos = list(scores)
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.2))
    for k, name in enumerate(("IQM", "Mean", "Median", "Optimality gap")):
        ax = axes[k]
        for i, a in enumerate(algos):
            p, lo, hi = agg[a][name]
            ax.barh(i, hi - lo, left=lo, height=0.6, color=f"C{i}", alpha=0.75)
            ax.plot([p, p], [i - 0.3, i + 0.3], color="k")
        ax.set_yticks(range(len(algos)), [hparams.algo_label(a) for a in algos] if k == 0 else [""] * len(algos))
        ax.set_title(name)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"normalized score (random = 0, best of the paper's table = 1), 95 % stratified bootstrap CIs; "
                 f"tasks: {', '.join(tasks)}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path_agg, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.arange(1, 11) / 10
    for i, a in enumerate(algos):
        iqm = [metrics.aggregate_iqm(curves[a][:, :, k]) for k in range(10)]
        ax.plot(x, iqm, marker="o", color=f"C{i}", label=hparams.algo_label(a))
    ax.set(xlabel="fraction of the stage-1 budget", ylabel="IQM normalized score",
           title="sample efficiency (IQM over runs x tasks)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path_eff, dpi=110)
    plt.close(fig)


def section(logs_dir: Optional[str] = None, min_seeds: int = 5, results_dir: str = RESULTS,
            figures_dir: str = FIGURES, reps: int = 2000) -> list[str]:
    reading = hparams.load()["meta"]["grid_readings"]["stage1"]
    logs_dir = logs_dir or os.path.join(REPO, "benchmark", "results", "logs", reading)
    cells = load_cells(logs_dir) if os.path.isdir(logs_dir) else {}
    n_runs = sum(len(c["finished"]) + len(c["diverged"]) + len(c["short"]) for c in cells.values())
    L = ["## Stage-1 grid: 5 seeds, classic 500k (Pendulum 2M), MuJoCo 1M steps (issue 12)\n",
         f"Reading `{reading}` (`hyperparams.toml` `[meta] grid_readings`), compact logs in "
         f"`{os.path.relpath(logs_dir, REPO)}/` ({n_runs} runs so far of 9 × 6 × 5 = 270); regenerate with "
         "`python benchmark/report.py`. Cells: finished seeds only, final = last of 100 EWM(0.1) bins; "
         "CI: 95 % percentile bootstrap of the mean over seeds (`scipy.stats.bootstrap`).\n"]
    rows = cell_rows(cells)
    if not rows:
        return L + ["No stage-1 run has finished yet.\n"]
    os.makedirs(results_dir, exist_ok=True)
    with open(os.path.join(results_dir, "cells.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[k for k in rows[0]])
        w.writeheader()
        w.writerows(rows)
    L += table(rows, CELL_COLUMNS) + [""]
    seeds_avail = [min(len(cells.get((t, a), {}).get("finished", [])) for a in hparams.PAPER_ALGOS) for t in hparams.tasks()]
    use = min_seeds if any(s >= min_seeds for s in seeds_avail) else max([s for s in seeds_avail if s >= 2], default=0)
    if use < 2:
        return L + ["Aggregates across tasks need at least one task where all five algorithms have 2 finished "
                    "seeds; not yet.\n"]
    scores, tasks, curves = normalized(cells, use)
    agg = stats.aggregate_intervals(scores, reps=reps)
    imp = {b: stats.improvement_probability(scores["smac"], scores[b], reps=reps)
           for b in hparams.PAPER_ALGOS if b != "smac"}
    with open(os.path.join(results_dir, "aggregates.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algo", "metric", "point", "lo", "hi", "tasks", "seeds_per_task"])
        for a, d in agg.items():
            for name, (p, lo, hi) in d.items():
                w.writerow([a, name, f"{p:.6g}", f"{lo:.6g}", f"{hi:.6g}", ";".join(tasks), use])
    with open(os.path.join(results_dir, "improvement.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["x", "y", "P(x>y)", "lo", "hi"])
        for b, (p, lo, hi) in imp.items():
            w.writerow(["smac", b, f"{p:.4f}", f"{lo:.4f}", f"{hi:.4f}"])
    os.makedirs(figures_dir, exist_ok=True)
    plots(scores, curves, agg, tasks, os.path.join(figures_dir, "grid_aggregate.png"),
          os.path.join(figures_dir, "grid_sample_efficiency.png"))
    partial = "" if use == min_seeds and len(tasks) == 9 else " **(partial: not every cell has its seeds yet)**"
    L.append(f"**Aggregates across tasks** (rliable, {reps} stratified bootstrap resamples) over {len(tasks)} task(s) "
             f"({', '.join(tasks)}) with {use} seed(s) each{partial}; normalized score 0 = random policy, "
             "1 = the best of the paper's table for that task. Figures: `docs/figures/grid_aggregate.png`, "
             "`docs/figures/grid_sample_efficiency.png`.\n")
    agg_cols = [("Algorithm", lambda r: hparams.algo_label(r[0]))] + [
        (name, lambda r, n=name: f"{fmt(r[1][n][0])} [{fmt(r[1][n][1])}, {fmt(r[1][n][2])}]")
        for name in ("IQM", "Mean", "Median", "Optimality gap")]
    L += table(list(agg.items()), agg_cols) + [""]
    L += table([(b, v) for b, v in imp.items()],
               [("SMAC vs", lambda r: hparams.algo_label(r[0])),
                ("P(SMAC > baseline) [95 % CI]", lambda r: f"{r[1][0]:.2f} [{r[1][1]:.2f}, {r[1][2]:.2f}]")]) + [""]
    return L


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--logs", default=None)
    p.add_argument("--min-seeds", type=int, default=5)
    a = p.parse_args(argv)
    print("\n".join(section(a.logs, a.min_seeds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
