"""The stage-1 grid (issue 12) from its committed compact logs: per-cell finals with bootstrap CIs beside
the paper, and the aggregates the field now reports (Agarwal et al. 2021) via rliable.

    python benchmark/grid_report.py                  # logs of hyperparams.toml's stage-1 reading
    python benchmark/grid_report.py --logs benchmark/results/logs/literal --min-seeds 3

Writes benchmark/results/stage1/{cells,aggregates,improvement}.csv, docs/figures/grid_{aggregate,
sample_efficiency,profile}.png, and returns the markdown section REPORT.md includes.

Per cell (task x algorithm): the final value of each finished seed (last of 100 EWM(0.1)-smoothed bins,
the paper's protocol), mean ± std, a 95 % percentile bootstrap CI of the mean (scipy), and whether the
paper's value lies inside it. Diverged runs are counted and listed, not averaged. Across tasks: scores
normalized per task to [random policy (benchmark/results/random_scores.csv) = 0, best of the paper's
table = 1]; IQM, mean, median and optimality gap with stratified-bootstrap CIs, probability of
improvement of SMAC over each baseline, performance profiles, and sample-efficiency curves (IQM of the
normalized smoothed curve at each tenth of the budget, with CIs). Aggregates use the tasks where every
algorithm has n finished or diverged runs (the first n seeds of each), n <= --min-seeds chosen to cover the
most tasks, and say which.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Union

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import compact, hparams, random_scores, stats  # noqa: E402
from benchmark.aggregate import stage1_budgets, stage1_logs  # noqa: E402
from benchmark.protocol import N_BINS, smoothed_curve  # noqa: E402
from benchmark.stats import estimate, interval, mean_std, steps, table, write_csv  # noqa: E402

RESULTS = os.path.join(REPO, "benchmark", "results", "stage1")
FIGURES = os.path.join(REPO, "docs", "figures")
METRICS = ("IQM", "Mean", "Median", "Optimality gap")
N_POINTS = 10  # sample-efficiency checkpoints: each tenth of the budget


def stage1_budget(task: str) -> int:
    return stage1_budgets()[task]


def budgets_text(sep: str = "; ") -> str:
    """The stage-1 budgets with tasks grouped by budget, a whole group by its name: 'Acrobot, CartPole 500k;
    Pendulum 2M; MuJoCo 1M' (groups joined by `sep`)."""
    by: dict = {}
    for t in hparams.tasks():
        by.setdefault(stage1_budget(t), []).append(t)
    groups = {}
    for t in hparams.tasks():
        groups.setdefault(hparams.group(t), []).append(t)
    names = {tuple(ts): {"mujoco": "MuJoCo", "classic": "classic control"}.get(g, g) for g, ts in groups.items()}
    return sep.join(f"{names.get(tuple(ts), ', '.join(ts))} {steps(b)}" for b, ts in by.items())


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
INSIDE_MARK = {"yes": "✓", "paper above": "✗ (paper above)", "paper below": "✗ (paper below)", "–": ""}


def cell_text(r: Optional[dict], paper: Optional[tuple] = None) -> str:
    """One matrix cell: **mean ± std** [95 % CI] (n, diverged) / paper mean ± std, mark."""
    if r is None:
        return "not run yet" + (f" / {paper[0]:g} ± {paper[1]:g}" if paper else "")
    ours = f"**{mean_std(r['mean'], r['std'])}** {interval(r['lo'], r['hi'])} (n={r['n']}" + (
        f", +{r['n_div']} diverged)" if r["n_div"] else ")")
    if r["paper"] is None:
        return ours
    p = "" if np.isnan(r["p_vs_paper"]) else f"; Welch p {r['p_vs_paper']:.2g}"
    return f"{ours} / {r['paper']:g} ± {r['paper_std']:g} {INSIDE_MARK[r['inside']]}".rstrip() + p


def matrix(rows: list[dict]) -> list[str]:
    """All nine tasks x six algorithms, one cell_text per cell (the paper's value also where we have no run)."""
    by = {(r["task"], r["algo"]): r for r in rows}
    paper = lambda t, a: hparams.paper_result(t, a) if a in hparams.PAPER_ALGOS else None  # noqa: E731
    cols = [("Task", lambda t: t)] + [(hparams.algo_label(a), lambda t, a=a: cell_text(by.get((t, a)), paper(t, a)))
                                      for a in hparams.ALGOS]
    return table(hparams.tasks(), cols)


def scored_runs(cell: dict) -> list[tuple]:
    """(seed, final, curve) of every finished or diverged run of a cell, by seed. A diverged run scores as the
    random policy (normalized 0) from the bin where it diverged on, final included: it ends with no usable
    policy, and leaving it out would favour the algorithms that diverge."""
    runs = list(cell["finished"]) + [(seed, None, curve) for seed, curve in cell["diverged"]]
    return sorted(runs, key=lambda x: x[0])


def normalized(cells: dict, n_runs: int, algos=hparams.PAPER_ALGOS) -> tuple[dict, list[str], dict]:
    """({algo: (n_runs, tasks) normalized finals}, tasks used, {algo: (n_runs, tasks, N_POINTS) curves}) over the
    tasks where every algorithm has n_runs finished or diverged runs (the first n_runs by seed)."""
    rand = random_scores.read()
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


def plots(agg: dict, eff: dict, profile: dict, taus, tasks: list[str], figures_dir: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmark.plots import save as save_figure
    algos = list(agg)
    label = f"tasks: {', '.join(tasks)}; 95 % stratified bootstrap CIs (rliable)"
    fig, axes = plt.subplots(1, len(METRICS), figsize=(15, 3.2))
    for ax, name in zip(axes, METRICS):
        for i, a in enumerate(algos):
            p, lo, hi = agg[a][name]
            ax.barh(i, hi - lo, left=lo, height=0.6, color=f"C{i}", alpha=0.75)
            ax.plot([p, p], [i - 0.3, i + 0.3], color="k")
        ax.set_yticks(range(len(algos)), [hparams.algo_label(a) for a in algos] if name == METRICS[0] else [""] * len(algos))
        ax.set_title(name)
        ax.grid(axis="x", alpha=0.3)
    save_figure(fig, os.path.join(figures_dir, "grid_aggregate.png"),
                f"normalized score (random = 0, best of the paper's table = 1); {label}", fontsize=8)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = np.arange(1, N_POINTS + 1) / N_POINTS
    for i, a in enumerate(algos):
        iqm, lo, hi = eff[a]
        ax.plot(x, iqm, marker="o", color=f"C{i}", label=hparams.algo_label(a))
        ax.fill_between(x, lo, hi, color=f"C{i}", alpha=0.15)
    ax.set(xlabel="fraction of the stage-1 budget", ylabel="IQM normalized score", title="sample efficiency")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.text(0.01, 0.01, label, fontsize=6)
    save_figure(fig, os.path.join(figures_dir, "grid_sample_efficiency.png"), rect=(0, 0.03, 1, 1))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for i, a in enumerate(algos):
        ax.plot(taus, profile[a], color=f"C{i}", label=hparams.algo_label(a))
    ax.set(xlabel="normalized score τ", ylabel="fraction of runs with score > τ", title="performance profile")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, os.path.join(figures_dir, "grid_profile.png"))


def aggregates(cells: dict, min_seeds: int, results_dir: str, figures_dir: str, reps: int) -> Optional[dict]:
    """rliable aggregates over the tasks where all the algorithms run (the paper's five and sgd-matched) have `use` finished or diverged runs
    (scored_runs), `use` in 2..min_seeds chosen for the most tasks, then the most runs.
    Writes aggregates.csv, improvement.csv and the three figures; None (and no stale CSVs) if no task
    qualifies."""
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
    os.makedirs(figures_dir, exist_ok=True)
    plots(agg, eff, profile, taus, tasks, figures_dir)
    return {"use": use, "tasks": tasks, "agg": agg, "imp": imp, "eff": eff}


def compute(source: Union[str, list, None] = None, min_seeds: int = 5, results_dir: str = RESULTS,
            figures_dir: str = FIGURES, reps: int = 2000) -> dict:
    """Cells, their rows (written to cells.csv) and the aggregates (None until a task qualifies).
    source: compact-logs dir or loaded runs (default: the stage-1 logs)."""
    source = stage1_logs() if source is None else source
    cells = load_cells(source) if not isinstance(source, str) or os.path.isdir(source) else {}
    rows = cell_rows(cells)
    out = {"source": source, "cells": cells, "rows": rows, "min_seeds": min_seeds, "reps": reps, "aggregates": None}
    if rows:
        os.makedirs(results_dir, exist_ok=True)
        write_csv(os.path.join(results_dir, "cells.csv"), rows)
        out["aggregates"] = aggregates(cells, min_seeds, results_dir, figures_dir, reps)
    return out


def lines(c: dict) -> list[str]:
    """The REPORT section from compute(): the matrix of cells, then the aggregates."""
    reading = hparams.load()["meta"]["grid_readings"]["stage1"]
    n_runs = sum(len(x["finished"]) + len(x["diverged"]) for x in c["cells"].values())
    n_div = sum(len(x["diverged"]) for x in c["cells"].values())
    n_short = sum(len(x["short"]) for x in c["cells"].values())
    seeds = sorted({len(x["finished"]) + len(x["diverged"]) for x in c["cells"].values()}) or [0]
    seed_range = f"{seeds[0]}" if seeds[0] == seeds[-1] else f"{seeds[0]}–{seeds[-1]}"
    L = ["## Stage-1 grid: final returns, ours vs the paper\n",
         f"Reading `{reading}` (`hyperparams.toml` `[meta]`), {seed_range} seeds per cell (n in each cell), budgets: "
         f"{budgets_text()} steps (the paper: 5M for MuJoCo, inferred from its HalfCheetah text); {n_runs} of "
         "9 × 6 × 5 = 270 runs" + (f" (and {n_short} more that stopped short of the budget or logged no episode; not "
                                   "counted)" if n_short else "") + ". Each cell: "
         "**mean ± std** (ddof = 1) of the seeds' finals [95 % percentile bootstrap CI of the mean, "
         f"`scipy.stats.bootstrap`] (n finished seeds, + diverged; no CI below {MIN_CI_SEEDS} seeds) / the paper's "
         "mean ± std, ✓ where the paper's mean lies inside our CI, ✗ where it does not; then Welch p, the test of "
         "our seeds against the paper's mean ± std as a 5-seed sample (`scipy.stats.ttest_ind_from_stats`). With "
         f"{MIN_CI_SEEDS} to 5 seeds the percentile bootstrap under-covers and the paper's mean is itself a 5-seed "
         "estimate, so a ✗ with Welch p ≥ 0.05 is not a difference the seeds can show; the summary counts Welch's test. "
         "Final = last of 100 EWM(0.1)-smoothed bins. Every cell with its per-seed finals: "
         "`benchmark/results/stage1/cells.csv`.\n"]
    if not c["rows"]:
        return L + ["No stage-1 run has finished yet.\n"]
    L += matrix(c["rows"]) + [""]
    L.append("## Across tasks: IQM, optimality gap, probability of improvement (rliable)\n")
    out = c["aggregates"]
    if out is None:
        return L + ["Aggregates across tasks need at least one task where all five algorithms have 2 finished "
                    "seeds; not yet.\n"]
    use, tasks, agg, imp = out["use"], out["tasks"], out["agg"], out["imp"]
    partial = "" if use == c["min_seeds"] and len(tasks) == 9 else " **(partial: not every cell has its seeds yet)**"
    div_note = (f" {n_div} diverged run(s) count as the random policy (normalized 0) from the bin where they "
                "diverged." if n_div else " Diverged runs would count as the random policy (normalized 0).")
    L.append(f"rliable, {c['reps']} stratified bootstrap resamples, 95 % CIs, over {len(tasks)} task(s) "
             f"({', '.join(tasks)}) with {use} seed(s) each{partial}. Normalized score: 0 = the random policy "
             "(`benchmark/results/random_scores.csv`, same protocol), 1 = the best of the paper's table for that "
             "task." + div_note + " Files: `benchmark/results/stage1/{aggregates,improvement}.csv`.\n")
    L += table(agg.items(), [("Algorithm", lambda r: hparams.algo_label(r[0]))]
               + [(m, lambda r, m=m: estimate(*r[1][m])) for m in METRICS]) + [""]
    L += table(imp.items(), [("SMAC vs", lambda r: hparams.algo_label(r[0])),
                             ("P(SMAC > baseline) [95 % CI]", lambda r: estimate(*r[1]))])
    L += ["", "![aggregates](../docs/figures/grid_aggregate.png)\n",
          "![sample efficiency: IQM of the normalized smoothed curve at each tenth of the budget, 95 % CI bands]"
          "(../docs/figures/grid_sample_efficiency.png) ![performance profile](../docs/figures/grid_profile.png)\n"]
    return L


def section(source: Union[str, list, None] = None, min_seeds: int = 5, results_dir: str = RESULTS,
            figures_dir: str = FIGURES, reps: int = 2000) -> list[str]:
    return lines(compute(source, min_seeds, results_dir, figures_dir, reps))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--logs", default=None)
    p.add_argument("--min-seeds", type=int, default=5)
    a = p.parse_args(argv)
    print("\n".join(section(a.logs, a.min_seeds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
