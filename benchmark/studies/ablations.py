"""The paper's SMAC ablations: do the paper's statements about SMAC's design choices hold in our lab? The Fisher's
form (batch-mean against Algorithm 1's per-sample step, its cost and returns), the damping lambda, the previous
updates' empirical Fisher (prev-EF) and the batch size, each section one flag changed from the paper's SMAC row of its
tasks. Exploratory (PREREGISTRATION None): the sections' answer rules (VOCAB and the constants below) were written
with the code, not registered before the runs.

    python -m benchmark.sweep --study ablations --workers 2   # the runs (resumable; committed logs count as done)
    python -m benchmark.costs ablation-costs                 # isolated update costs -> results/ablations/
    python -m benchmark.studies.ablations                     # CSVs, figures and ABLATIONS.md from the compact logs
    python -m benchmark.report                               # REPORT.md, and ABLATIONS.md through this module

Sections (hparams.SECTIONS; every run: the paper's SMAC row of its task, 300,000 steps, seeds 1-3, one flag changed):
  fisher      HalfCheetah, Hopper: --fisher batch-mean (the row) | per-sample (Algorithm 1) | per-sample-parallel,
              and AC-SGD at its own row for reference
  damping     Hopper, Swimmer, Walker2d: --damping 0.1 | 1 (= the row) | 10, and --damping 0.1 --step-normalization
  prev_ef     Swimmer, Hopper, Walker2d: the row | --prev-ef-beta 0.5 --prev-ef-rank 8 --prev-ef-damping fixed
  batch_size  Hopper, HalfCheetah: --num-steps 250 | 500 | 1000 (= the row) | 2000
A cell equal to the paper's row is run once per task, logged as `batch-mean`:
benchmark/results/logs/ablations/{task}/{batch-mean | variant | sgd}/seed{n}.json.gz.

ABLATIONS.md is benchmark/templates/ablations.md.j2 rendered on page_data's numbers and answer words (VOCAB),
committed as benchmark/results/ablations/ablations.json beside the CSVs.

Protocol of benchmark/protocol.py (100 bins, carry-forward, EWM 0.1, mean and ddof-1 std over seeds; final = last
smoothed bin of runs that reached the budget). Actor-update share of a run = sum(actor_update_ms) / wall_time_s.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import warnings
from typing import Optional

import numpy as np

from benchmark import compact, hparams, pages
from benchmark.aggregate import classify
from benchmark.hparams import SECTIONS, VARIANTS, Cell, all_cells
from benchmark.protocol import ALPHA, DDOF, N_BINS, across_seeds, smoothed_curve
from benchmark.stats import save, welch_test, write_csv
from benchmark.studies import REPO

NAME = "ablations"
# the sweep's options its jobs honour (besides --sections)
SWEEP_OPTIONS = ("seeds", "budget", "runs_dir", "logs_dir", "checkpoint_every")
PREREGISTRATION = (
    None  # exploratory: the answer rules were written with the code, not registered before the runs
)
COMMITTED_ONLY = True

RESULTS = os.path.join(REPO, "benchmark", "results", "ablations")
FIGURES = os.path.join(REPO, "docs", "figures")
REPORT = os.path.join(REPO, "benchmark", "ABLATIONS.md")
LOGS = hparams.ABLATION_LOGS
BUDGET = hparams.ABLATION_BUDGET
SEEDS = hparams.ABLATION_SEEDS
EARLY_BIN = 24  # smoothed return at 25% of the budget ("early improvement")
COLORS = {
    "batch-mean": "tab:red",
    "per-sample": "tab:blue",
    "per-sample-parallel": "tab:green",
    "lambda0.1": "tab:blue",
    "lambda1": "tab:red",
    "lambda10": "tab:green",
    "lambda0.1-norm": "tab:purple",
    "prev-ef0.5": "tab:blue",
    "T250": "tab:blue",
    "T500": "tab:green",
    "T1000": "tab:red",
    "T2000": "tab:purple",
    "sgd": "grey",
}


# the words ABLATIONS.md may use: compare's answers, then the sections' verdicts (fisher: time, returns vs Algorithm 1
# and vs AC-SGD, the parallel mode's cost target; damping; prev-EF: the paper's claim per task, its parts, the
# direction; batch size)
VOCAB = (
    "higher",
    "lower",
    "within noise",
    "n/a",
    "agree",
    "higher on the |t| > 2 screen only (Welch p ≥ 0.05)",
    "disagree",
    "disagree: larger saving",
    "disagree: smaller saving",
    "split across the estimates",
    "inconclusive",
    "not reproducible with the paper's η",
    "not shown here",
    "not contradicted (within noise; closeness not shown)",
    "met",
    "missed",
    "slower",
    "not slower",
    "faster early, less stable",
    "slower, larger variance",
    "faster",
    "not faster",
    "less stable",
    "not less stable",
    "larger",
    "not larger",
    "agrees",
    "does not agree",
    "the best",
    "not the best",
)
JSON_DIGITS = 6
JSON_NAME = "ablations.json"  # page_data, beside the CSVs
PAPER_BUDGET = 5_000_000  # the paper's MuJoCo budget
# the paper's "roughly 80%" holds when all three estimates lie in this range, fails when all lie on one side, and is
# split otherwise: an amendment made after the runs (the rule fixed before them read estimate (a) alone)
SAVING_RULE = (0.7, 0.9)
PARALLEL_TARGET = 3.0  # per-sample-parallel should cost at most this many batch-mean updates
CLEAR_T = 2.0  # compare's |t| for a clear difference
MORE_REL = 0.1  # more's tolerance


# ---- the job list
def add_options(parser: argparse.ArgumentParser) -> None:
    """--sections: which of hparams.SECTIONS the sweep runs."""
    parser.add_argument(
        "--sections", default="all", help=f"ablations: comma list of {', '.join(hparams.SECTIONS)} or all"
    )


def jobs(args) -> list:
    """The study's jobs from the sweep's flags (--sections, --seeds, --budget, --runs-dir, --logs-dir,
    --checkpoint-every)."""
    from benchmark import sweep

    logs = sweep.logs_dir_of(args, LOGS)
    return ablation_jobs(
        sweep._names(args.sections, hparams.SECTIONS, "section"),
        hparams.parse_seeds(args.seeds or SEEDS),
        args.runs_dir,
        int(args.budget or BUDGET),
        logs,
        args.checkpoint_every,
    )


def ablation_jobs(
    sections=None, seeds=(1, 2, 3), runs_dir=None, budget=BUDGET, logs_dir=LOGS, checkpoint_every=10
):
    """Seed-major (every section's seed 1, then seed 2, ...): the paper's SMAC row once per task (`batch-mean`),
    every other variant, and AC-SGD (`sgd`) for reference, one job per run directory."""
    from benchmark import sweep

    runs_dir = os.path.abspath(runs_dir or f"{sweep.DEFAULT_RUNS}_ablations")
    cells = [(c.task, c.run_variant, c.flags) for c in hparams.all_cells(sections)]
    cells += [(t, "sgd", hparams.lookup(t, "sgd")) for t in hparams.ABLATION_REF_TASKS]
    logs_dir, first = sweep.logs_under(logs_dir), {}
    out = [
        sweep._job(
            runs_dir, task, variant, seed, budget, flags, checkpoint_every, logs_dir=logs_dir, tag="ablations"
        )
        for seed in sorted(seeds)
        for task, variant, flags in cells
    ]
    return [j for j in out if first.setdefault(j.seed_dir, j) is j]  # the first job per run directory


def load_run(task: str, variant: str, seed: int, logs_dir: str = LOGS) -> Optional[dict]:
    """A run's compact log (compact.load) with its timing, or None if there is none."""
    path = compact.log_path(logs_dir, task, variant, seed)
    if not os.path.isfile(path):
        return None
    run = compact.load(path)
    return {**run, "timing": actor_time_share(run)}


def actor_time_share(run: dict) -> dict:
    """Actor-update time of a run's last trainer session vs that session's wall time (wall_time_s is per session):
    actor_s = sum(actor_update_ms of the updates after resumed_from_step) / 1000; share = actor_s / wall_time_s;
    per_update_ms = median actor_update_ms; steps = environment steps of that session."""
    start = run.get("resumed_from_step", 0)
    ms = run["updates"]["actor_update_ms"][run["updates"]["global_step"] > start]
    ms = ms[np.isfinite(ms)]
    wall, actor_s = run.get("wall_time_s"), float(ms.sum()) / 1e3
    return {
        "wall_s": float(wall) if wall else math.nan,
        "actor_s": actor_s,
        "steps": int(run["last_step"]) - start,
        "share": actor_s / float(wall) if wall else math.nan,
        "per_update_ms": float(np.median(ms)) if ms.size else math.nan,
        "updates": int(ms.size),
        "resumed": start > 0,
    }


def _ms(x) -> tuple[float, float]:
    x = np.asarray([v for v in x if np.isfinite(v)], dtype=float)
    return (float(x.mean()) if x.size else math.nan, float(x.std(ddof=1)) if x.size > 1 else math.nan)


def _flag(flags: list, name: str, default):
    return flags[flags.index(name) + 1] if name in flags else default


def cell_stats(cell: Cell, seeds, logs_dir=LOGS, budget=BUDGET) -> dict:
    per_seed = {"final": [], "early": [], "auc": [], "drawdown": []}
    medians = {"cos_g_step": [], "ell_sq": [], "step_norm": []}  # per seed: median over the run's updates
    curves, timings, classes = [], [], {}
    for seed in seeds:
        run = load_run(cell.task, cell.run_variant, seed, logs_dir)
        classes[seed] = cls = "missing" if run is None else classify(run, budget)
        if cls in ("missing", "incomplete"):
            continue
        last = min(run["last_step"], budget) if cls == "diverged" else budget
        c = smoothed_curve(run["episodes"]["global_step"], run["episodes"]["episodic_return"], budget, last)
        curves.append(c)
        per_seed["early"].append(c[EARLY_BIN])  # _ms drops non-finite values
        if cls == "complete" and np.isfinite(c[-1]):
            per_seed["final"].append(c[-1])
            per_seed["auc"].append(float(np.nanmean(c)))
            per_seed["drawdown"].append(float(np.nanmax(c) - c[-1]))
        t = dict(run["timing"])
        if t["steps"] > 0:  # complete or diverged: times scaled to the budget (a diverged run stopped early)
            t["wall_s"], t["actor_s"] = t["wall_s"] * budget / t["steps"], t["actor_s"] * budget / t["steps"]
            timings.append(t)
        for key, values in medians.items():
            u = run["updates"][key]
            if u.size and np.isfinite(u).any():
                values.append(float(np.nanmedian(u)))
    mean, std, n = across_seeds(np.array(curves)) if curves else (np.full(N_BINS, np.nan),) * 3
    m = {k: _ms(v) for k, v in per_seed.items()}
    tm = {k: _ms([t[k] for t in timings]) for k in ("wall_s", "actor_s", "share", "per_update_ms")}
    scale, lam = displacement_scale(cell.flags), float(_flag(cell.flags, "--damping", "nan"))
    med = {
        "cos_g_step": medians["cos_g_step"],
        "dtheta": [scale * x for x in medians["step_norm"]],
        "ell_sq_over_lambda": [x / lam for x in medians["ell_sq"]],
    }
    return {
        "section": cell.section,
        "task": cell.task,
        "variant": cell.variant,
        "source": cell.source,
        "n": len(per_seed["final"]),
        "n_diverged": sum(v == "diverged" for v in classes.values()),
        "n_missing": sum(v in ("missing", "incomplete") for v in classes.values()),
        "final_mean": m["final"][0],
        "final_std": m["final"][1],
        "finals": per_seed["final"],
        "early_mean": m["early"][0],
        "early_std": m["early"][1],
        "auc_mean": m["auc"][0],
        "auc_std": m["auc"][1],
        "drawdown_mean": m["drawdown"][0],
        "wall_s": tm["wall_s"][0],
        "actor_s": tm["actor_s"][0],
        "share": tm["share"][0],
        "share_std": tm["share"][1],
        "per_update_ms": tm["per_update_ms"][0],
        **{k: float(np.median(v)) if v else math.nan for k, v in med.items()},
        "curve_mean": mean,
        "curve_std": std,
        "curve_n": n,
    }


def displacement_scale(flags: list) -> float:
    """|delta theta| per update = scale * updates.csv step_norm: eta for batch-mean (and AC-SGD), eta * B for the
    per-sample modes, whose step_norm is |mean_i F_i^-1 g_i| while theta moves by the sum
    (docs/ablation_modes.md section 1)."""
    per_sample = _flag(flags, "--fisher", "batch-mean") in ("per-sample", "per-sample-parallel")
    batch = float(_flag(flags, "--num-steps", 1000)) * float(_flag(flags, "--num-envs", 1))
    return float(_flag(flags, "--learning-rate", "nan")) * (batch if per_sample else 1.0)


def run_costs(results_dir=RESULTS) -> str:
    """Isolated update costs (python -m benchmark.costs ablation-costs) into results_dir."""
    os.makedirs(results_dir, exist_ok=True)
    out = subprocess.run(
        [sys.executable, "-m", "benchmark.costs", "ablation-costs"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    with open(os.path.join(results_dir, "ablation_costs.txt"), "w") as f:
        f.write(out)
    write_csv(os.path.join(results_dir, "ablation_costs.csv"), parse_costs(out))
    return out


def parse_costs(text: str) -> list[dict]:
    matches = [
        re.match(r"^(.+?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*(.*)$", line)
        for line in text.splitlines()
        if not line.startswith(("#", "mode"))
    ]
    return [
        {
            "mode": m.group(1).strip(),
            "median_ms": float(m.group(2)),
            "min_ms": float(m.group(3)),
            "x_batch_mean": float(m.group(4)),
            "note": m.group(5).strip(),
        }
        for m in matches
        if m
    ]


def read_costs(results_dir=RESULTS) -> tuple[list[dict], str]:
    """The isolated update costs saved by run_costs (parse_costs) and their header line; ([], "") where there are
    none."""
    path = os.path.join(results_dir, "ablation_costs.txt")
    if not os.path.isfile(path):
        return [], ""
    with open(path) as f:
        text = f.read()
    return parse_costs(text), (text.splitlines()[0] if text else "")


def more(a: float, b: float, rel: float = MORE_REL) -> bool:
    """a exceeds b by more than rel * |b| (differences of a few percent count as equal)."""
    return bool(np.isfinite(a) and np.isfinite(b) and a > b + rel * abs(b))


def compare(a: dict, b: dict) -> str:
    """Final return of a vs b by Welch's t of the per-seed finals (benchmark/stats.py, scipy): 'higher' / 'lower'
    (|t| > 2, called a clear difference) / 'within noise' / 'n/a'."""
    w = welch_test(a["finals"], b["finals"])
    if w is None or math.isnan(w["t"]):
        return "n/a"
    return "higher" if w["t"] > CLEAR_T else "lower" if w["t"] < -CLEAR_T else "within noise"


def _label(variant):
    return (
        VARIANTS[variant][2] if variant in VARIANTS else ("AC-SGD (its row)" if variant == "sgd" else variant)
    )


def _num(x):
    x = float(x)
    return f"{x:.6g}" if math.isfinite(x) else ""


def get(stats, section, task, variant):
    return next(s for s in stats if s["section"] == section and s["task"] == task and s["variant"] == variant)


def _cells(stats, section, task) -> list[dict]:
    return [get(stats, section, task, v) for v in SECTIONS[section]["variants"]]


def plot_section(section, stats, refs, path, budget=BUDGET):
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    tasks = SECTIONS[section]["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.6 * len(tasks), 3.5), squeeze=False)
    x = (np.arange(N_BINS) + 1) * budget / N_BINS
    for ax, task in zip(axes[0], tasks):
        for st in [s for s in stats + refs if s["task"] == task]:
            m, s = st["curve_mean"], st["curve_std"]
            if not np.isfinite(m).any():
                continue
            color = COLORS.get(st["variant"], "black")
            nmax = int(np.nanmax(st["curve_n"])) if np.isfinite(st["curve_n"]).any() else 0
            ax.plot(
                x,
                m,
                color=color,
                ls="--" if st["variant"] == "sgd" else "-",
                lw=1.4,
                label=f"{_label(st['variant'])} (n={nmax})",
            )
            ax.fill_between(x, m - np.nan_to_num(s), m + np.nan_to_num(s), color=color, alpha=0.15, lw=0)
        ax.set(title=task, xlabel="environment steps", ylabel="return (binned, EWM 0.1)")
        ax.xaxis.set_major_formatter(
            matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1e3:g}k" if v else "0")
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    save(fig, path, SECTIONS[section]["title"] + f" — mean ± std over seeds, {budget:,} steps")


def plot_update_time(stats, costs, path):
    import matplotlib.pyplot as plt

    fisher = [s for s in stats if s["section"] == "fisher"]
    prev = [c for c in costs if c["mode"].startswith("prev-EF")]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
    tasks, w = SECTIONS["fisher"]["tasks"], 0.25
    for j, v in enumerate(SECTIONS["fisher"]["variants"]):
        vals = [
            next((s["per_update_ms"] for s in fisher if s["task"] == t and s["variant"] == v), np.nan)
            for t in tasks
        ]
        ax.bar(np.arange(len(tasks)) + (j - 1) * w, vals, w, color=COLORS[v], label=_label(v))
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set(yscale="log", ylim=(0.5, None), ylabel="ms per actor update")
    ax.set_title("Training runs (updates.csv median, mean over seeds), T = 1000", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    if prev:
        r = [int(c["mode"].split("r=")[1]) for c in prev]
        base = next((c for c in costs if c["mode"] == "batch-mean"), None)
        ax2.plot(r, [c["median_ms"] for c in prev], "o-", color="tab:blue", label="prev-EF β = 0.5, median")
        ax2.plot(r, [c["min_ms"] for c in prev], "o--", color="tab:blue", alpha=0.5, label="prev-EF, min")
        if base:
            ax2.axhline(base["median_ms"], color="tab:red", label="batch-mean, median")
            ax2.axhline(base["min_ms"], color="tab:red", ls="--", alpha=0.5, label="batch-mean, min")
        ax2.set_xscale("log", base=2)
        ax2.set(xlabel="r (kept terms)", ylabel="ms per actor update")
        ax2.legend(fontsize=7)
    ax2.set_title("python -m benchmark.costs ablation-costs: update time vs r")
    ax2.grid(alpha=0.3)
    save(fig, path)


def aggregate_all(seeds, logs_dir=LOGS, results_dir=RESULTS, budget=BUDGET):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        stats = [cell_stats(c, seeds, logs_dir, budget) for c in all_cells()]
        # AC-SGD at its own row, for reference, through the same code path
        refs = [
            cell_stats(Cell("ref", t, "sgd", hparams.lookup(t, "sgd"), "ablation"), seeds, logs_dir, budget)
            for t in SECTIONS["fisher"]["tasks"]
        ]
    os.makedirs(results_dir, exist_ok=True)
    scalar = [k for k in stats[0] if k not in ("curve_mean", "curve_std", "curve_n", "finals")]
    write_csv(
        os.path.join(results_dir, "final.csv"),
        [
            {
                **{k: (_num(s[k]) if isinstance(s[k], float) else s[k]) for k in scalar},
                "finals": ";".join(f"{v:.6g}" for v in s["finals"]),
            }
            for s in stats + [dict(r, section="fisher-ref") for r in refs]
        ],
    )
    # a (task, variant) in several sections is one cell with the same runs: one row per (task, variant) [and seed]
    unique: dict = {}
    for s in stats + refs:
        unique.setdefault((s["task"], s["variant"]), s)
    write_csv(
        os.path.join(results_dir, "curves.csv"),
        [
            {
                "task": s["task"],
                "variant": s["variant"],
                "source": s["source"],
                "bin": k,
                "step": int(round((k + 1) * budget / N_BINS)),
                "mean": _num(s["curve_mean"][k]),
                "std": _num(s["curve_std"][k]),
                "n": int(s["curve_n"][k]) if np.isfinite(s["curve_n"][k]) else 0,
            }
            for s in unique.values()
            for k in range(N_BINS)
        ],
    )
    run_rows, seen = [], set()
    for c, seed in ((c, seed) for c in all_cells() for seed in seeds):
        run = load_run(c.task, c.run_variant, seed, logs_dir)
        if run is not None and (c.task, c.variant, seed) not in seen:
            seen.add((c.task, c.variant, seed))
            t = run["timing"]
            run_rows.append(
                {
                    "task": c.task,
                    "variant": c.variant,
                    "source": c.source,
                    "seed": seed,
                    "status": run["status"],
                    "global_step": run["last_step"],
                    "wall_s": _num(t["wall_s"]),
                    "actor_s": _num(t["actor_s"]),
                    "share": _num(t["share"]),
                    "per_update_ms": _num(t["per_update_ms"]),
                    "updates": t["updates"],
                    "resumed": t["resumed"],
                }
            )
    write_csv(os.path.join(results_dir, "runs.csv"), run_rows)
    return stats, refs


def _row(s: dict, label: str) -> dict:
    """A cell's numbers as the sections' tables print them: final and early as [mean, std] over seeds."""
    keys = (
        "task",
        "n",
        "n_diverged",
        "auc_mean",
        "drawdown_mean",
        "wall_s",
        "actor_s",
        "share",
        "per_update_ms",
        "dtheta",
        "cos_g_step",
        "ell_sq_over_lambda",
    )
    return {
        "label": label,
        "final": [s["final_mean"], s["final_std"]],
        "early": [s["early_mean"], s["early_std"]],
        **{k: s[k] for k in keys},
        "cv": s["final_std"] / abs(s["final_mean"]) if s["final_mean"] else math.nan,
    }


def _section_rows(stats, section, refs=(), t_label=False) -> list[dict]:
    """A section's table: per task, one row per variant, then the task's reference rows."""
    return [
        _row(s, s["variant"][1:] if t_label else _label(s["variant"]))
        for task in SECTIONS[section]["tasks"]
        for s in _cells(stats, section, task) + [r for r in refs if r["task"] == task]
    ]


def saving_word(savings: list[float]) -> str:
    """The verdict on the paper's "roughly 80%" time saving from the three estimates (SAVING_RULE's amendment)."""
    if all(s > SAVING_RULE[1] for s in savings):
        return "disagree: larger saving"
    if all(s < SAVING_RULE[0] for s in savings):
        return "disagree: smaller saving"
    if all(SAVING_RULE[0] <= s <= SAVING_RULE[1] for s in savings):
        return "agree"
    return "split across the estimates"


def _fisher(stats, refs) -> dict:
    """Section 1-2: per task the time savings of batch-mean over Algorithm 1 and the verdicts on time and returns."""
    tasks = []
    for task in SECTIONS["fisher"]["tasks"]:
        bm, ps, pp = _cells(stats, "fisher", task)
        sgd = next(r for r in refs if r["task"] == task)
        save_in = ps["share"] * (1 - bm["per_update_ms"] / ps["per_update_ms"])
        r_pp = pp["per_update_ms"] / bm["per_update_ms"]
        savings = [save_in, 1 - pp["wall_s"] / ps["wall_s"], 1 - bm["wall_s"] / ps["wall_s"]]
        c1, c2 = compare(bm, ps), compare(bm, sgd)
        if ps["n"] == 0 and ps["n_diverged"] > 0:
            returns_answer = "not reproducible with the paper's η"
        elif c1 == "within noise":
            returns_answer = "not contradicted (within noise; closeness not shown)"
        elif c1 in ("higher", "lower"):
            returns_answer = "disagree"
        else:
            returns_answer = "inconclusive"
        sgd_answers = {"higher": "agree", "within noise": "not shown here", "lower": "disagree"}
        if c2 == "higher" and welch_test(bm["finals"], sgd["finals"])["p"] >= 0.05:  # clear by |t|, p >= 0.05
            sgd_answers["higher"] = "higher on the |t| > 2 screen only (Welch p ≥ 0.05)"
        tasks.append(
            {
                "task": task,
                "within_run": save_in,
                "vs_parallel": savings[1],
                "vs_batch_mean": savings[2],
                "time_inside": sum(SAVING_RULE[0] <= s <= SAVING_RULE[1] for s in savings),
                "actor": 1 - bm["actor_s"] / ps["actor_s"],
                "ratio_per_sample": ps["per_update_ms"] / bm["per_update_ms"],
                "ratio_parallel": r_pp,
                "time_shown": bool(np.isfinite(save_in)),
                "time_answer": saving_word(savings),
                "per_sample_share": ps["share"],
                "per_sample_ms": ps["per_update_ms"],
                "batch_mean_share": bm["share"],
                "batch_mean_ms": bm["per_update_ms"],
                "batch_mean_final": [bm["final_mean"], bm["final_std"]],
                "per_sample_final": [ps["final_mean"], ps["final_std"]],
                "per_sample_diverged": ps["n_diverged"],
                "diverged_shown": ps["n_diverged"] > 0,
                "vs_per_sample": c1,
                "returns_answer": returns_answer,
                "sgd_final": [sgd["final_mean"], sgd["final_std"]],
                "vs_sgd": c2,
                "sgd_answer": sgd_answers.get(c2, "inconclusive"),
                "parallel_final": [pp["final_mean"], pp["final_std"]],
                "parallel_vs_batch_mean": compare(pp, bm),
                "parallel_vs_per_sample": compare(pp, ps),
                "parallel_ms": pp["per_update_ms"],
                "parallel_answer": "met" if r_pp <= PARALLEL_TARGET else "missed",
                "parallel_speedup": ps["per_update_ms"] / pp["per_update_ms"],
            }
        )
    return {"rows": _section_rows(stats, "fisher", refs), "tasks": tasks}


def _damping(stats) -> dict:
    """Section 3: per task the three claims' numbers and how many tasks agree with each."""
    tasks = []
    for task in SECTIONS["damping"]["tasks"]:
        a, b, c, n = _cells(stats, "damping", task)
        order = sorted(
            [(x["final_mean"], _label(x["variant"])) for x in (a, b, c) if np.isfinite(x["final_mean"])],
            reverse=True,
        )
        tasks.append(
            {
                "task": task,
                "auc_10": c["auc_mean"],
                "auc_1": b["auc_mean"],
                "slower": "slower" if c["auc_mean"] < b["auc_mean"] else "not slower",
                "final_10_vs_1": compare(c, b),
                "std_01": a["final_std"],
                "std_1": b["final_std"],
                "drawdown_01": a["drawdown_mean"],
                "drawdown_1": b["drawdown_mean"],
                "noisy": bool(a["final_std"] > b["final_std"] and a["drawdown_mean"] > b["drawdown_mean"]),
                "order": [{"label": label, "final": m} for m, label in order],
                "best_is_1": bool(order) and order[0][1] == _label("lambda1"),
                "final_1_vs": [compare(b, a), compare(b, c)],  # λ = 1 against λ = 0.1 and λ = 10
                "norm_final": [n["final_mean"], n["final_std"]],
                "norm_auc": n["auc_mean"],
                "final_01": [a["final_mean"], a["final_std"]],
                "final_1": [b["final_mean"], b["final_std"]],
                "norm_vs_01": compare(n, a),
                "norm_vs_1": compare(n, b),
            }
        )
    return {
        "rows": _section_rows(stats, "damping"),
        "tasks": tasks,
        "n_tasks": len(tasks),
        "n_slower": sum(t["slower"] == "slower" for t in tasks),
        "n_noisy": sum(t["noisy"] for t in tasks),
        "n_best": sum(t["best_is_1"] for t in tasks),
        "n_best_clear": sum(t["best_is_1"] and t["final_1_vs"] == ["higher", "higher"] for t in tasks),
    }


def _prev_ef(stats, costs) -> dict:
    """Section 4: the paper's claim per task against plain SMAC (more's 10% rule), ‖ℓ̄‖²/λ, update time vs r."""
    verdicts = []
    for task in SECTIONS["prev_ef"]["tasks"]:
        b, p = _cells(stats, "prev_ef", task)
        faster = more(p["early_mean"], b["early_mean"])
        less_stable = more(p["drawdown_mean"], b["drawdown_mean"]) or more(p["final_std"], b["final_std"])
        slower = more(b["auc_mean"], p["auc_mean"])
        larger = more(p["final_std"], b["final_std"])
        if task == "Swimmer":
            claim, ok = "faster early, less stable", faster and less_stable
        else:
            claim, ok = "slower, larger variance", slower and larger
        final = compare(p, b)
        verdicts.append(
            {
                "task": task,
                "claim": claim,
                "early": [p["early_mean"], b["early_mean"]],
                "drawdown": [p["drawdown_mean"], b["drawdown_mean"]],
                "std": [p["final_std"], b["final_std"]],
                "auc": [p["auc_mean"], b["auc_mean"]],
                "faster": "faster" if faster else "not faster",
                "less_stable": "less stable" if less_stable else "not less stable",
                "slower": "slower" if slower else "not slower",
                "larger": "larger" if larger else "not larger",
                "final": final,
                "answer": "agrees" if ok else "does not agree",
                "noise_shown": final == "within noise",
            }
        )
    ratios = [
        get(stats, "prev_ef", t, "batch-mean")["ell_sq_over_lambda"] for t in SECTIONS["prev_ef"]["tasks"]
    ]
    prev = [c for c in costs if c["mode"].startswith("prev-EF")]
    base = next((c for c in costs if c["mode"] == "batch-mean"), None)
    ell_shown = bool(np.isfinite(ratios).any())
    ell_range = [math.nan, math.nan]
    if ell_shown:
        ell_range = [float(np.nanmin(ratios)), float(np.nanmax(ratios))]
    return {
        "rows": _section_rows(stats, "prev_ef"),
        "verdicts": verdicts,
        "ell_shown": ell_shown,
        "ell_range": ell_range,
        "costs_shown": bool(prev and base),
        "costs": [
            {
                "r": int(c["mode"].split("r=")[1]),
                "median_ms": c["median_ms"],
                "x_batch_mean": c["x_batch_mean"],
            }
            for c in prev
        ],
        "batch_mean_ms": base["median_ms"] if base else math.nan,
    }


def _final_mean(s: dict) -> float:
    """A cell's mean final return (the key of the best cell)."""
    return s["final_mean"]


def _batch_size(stats, budget) -> dict:
    """Section 5: the sizes and their updates per run; per task the best T by mean final return and each T against
    T = 1000."""
    tasks = SECTIONS["batch_size"]["tasks"]
    sizes = [
        {"T": int(c["variant"][1:]), "updates": budget // int(c["variant"][1:]), "row": c["source"] == "grid"}
        for c in _cells(stats, "batch_size", tasks[0])
    ]
    verdicts = []
    for task in tasks:
        ss = _cells(stats, "batch_size", task)
        t1000 = get(stats, "batch_size", task, "T1000")
        finite = [s for s in ss if np.isfinite(s["final_mean"])]
        best = max(finite, key=_final_mean, default=None)
        verdicts.append(
            {
                "task": task,
                "best": int(best["variant"][1:]) if best else None,
                "vs_1000": [
                    {"T": int(s["variant"][1:]), "answer": compare(s, t1000)}
                    for s in ss
                    if s["variant"] != "T1000"
                ],
                "answer": "the best" if best is t1000 else "not the best",
            }
        )
    return {
        "rows": _section_rows(stats, "batch_size", t_label=True),
        "sizes": sizes,
        "n_sizes": len(sizes),
        "verdicts": verdicts,
    }


def page_data(stats, refs, costs, costs_header, seeds, budget=BUDGET) -> dict:
    """Every number, list and answer word (VOCAB) of ABLATIONS.md; benchmark/templates/ablations.md.j2 only formats
    them."""
    return {
        "budget": budget,
        "budget_share": budget / PAPER_BUDGET,
        "seeds": list(seeds),
        "n_seeds": len(seeds),
        "n_bins": N_BINS,
        "ewm": ALPHA,
        "ddof": DDOF,
        "early_bin": EARLY_BIN + 1,
        "early_step": (EARLY_BIN + 1) * budget // N_BINS,
        "clear_t": CLEAR_T,
        "more_rel": MORE_REL,
        "saving_rule_pct": [round(100 * x) for x in SAVING_RULE],
        "parallel_target": PARALLEL_TARGET,
        "titles": {sec: SECTIONS[sec]["title"] for sec in SECTIONS},
        "costs_header": costs_header.lstrip("# "),
        "costs": costs,
        "costs_shown": bool(costs),
        "fisher_rows": [
            {
                "task": t,
                "lr": hparams.settings(t, "smac")["learning_rate"],
                "damping": hparams.settings(t, "smac")["damping"],
            }
            for t in SECTIONS["fisher"]["tasks"]
        ],
        "fisher": _fisher(stats, refs),
        "damping": _damping(stats),
        "prev_ef": _prev_ef(stats, costs),
        "batch_size": _batch_size(stats, budget),
    }


def plain(data: dict) -> dict:
    """page_data as JSON, floats to JSON_DIGITS significant digits."""
    return pages.plain(data, JSON_DIGITS)


def render(data: dict) -> str:
    """ABLATIONS.md from page_data's JSON (benchmark/templates/ablations.md.j2)."""
    return pages.render("ablations.md.j2", data)


def write_report(stats, refs, costs, costs_header, seeds, path=REPORT, budget=BUDGET, json_path=None) -> dict:
    """ABLATIONS.md rendered from page_data's data as JSON, which goes to json_path where given."""
    data = pages.committed(page_data(stats, refs, costs, costs_header, seeds, budget), json_path, JSON_DIGITS)
    with open(path, "w", encoding="utf-8") as f:
        f.write(render(data))
    return data


def aggregated(seeds, logs_dir=LOGS, results_dir=RESULTS, budget=BUDGET) -> Optional[dict]:
    """The cells' numbers (aggregate_all, which writes final.csv, curves.csv and runs.csv into results_dir) and the
    isolated update costs: {"seeds", "stats", "refs", "costs", "header", "results", "budget"}; None (and nothing
    written) without logs."""
    if not any(load_run(c.task, c.run_variant, s, logs_dir) for c in all_cells() for s in seeds):
        return None
    stats, refs = aggregate_all(seeds, logs_dir, results_dir, budget)
    costs, header = read_costs(results_dir)
    return {
        "seeds": seeds,
        "stats": stats,
        "refs": refs,
        "costs": costs,
        "header": header,
        "results": results_dir,
        "budget": budget,
    }


def written(res: dict, figures_dir=FIGURES, report_path=REPORT) -> list[str]:
    """aggregated's numbers as the five figures, ablations.json (beside the CSVs) and ABLATIONS.md; their paths."""
    stats, refs, costs, budget = res["stats"], res["refs"], res["costs"], res["budget"]
    os.makedirs(figures_dir, exist_ok=True)
    figs = []
    for sec in SECTIONS:
        figs.append(os.path.join(figures_dir, f"ablation_{sec}.png"))
        plot_section(
            sec, [s for s in stats if s["section"] == sec], refs if sec == "fisher" else [], figs[-1], budget
        )
    figs.append(os.path.join(figures_dir, "ablation_update_time.png"))
    plot_update_time(stats, costs, figs[-1])
    json_path = os.path.join(res["results"], JSON_NAME)
    write_report(stats, refs, costs, res["header"], res["seeds"], report_path, budget, json_path)
    return [report_path, json_path, *figs]


def write_all(
    seeds=None, logs_dir=LOGS, results_dir=RESULTS, figures_dir=FIGURES, report_path=REPORT, budget=BUDGET
) -> Optional[str]:
    """CSVs, the five figures, ablations.json and ABLATIONS.md from the compact logs; None (and nothing written)
    without logs."""
    res = aggregated(hparams.parse_seeds(seeds or SEEDS), logs_dir, results_dir, budget)
    if res is None:
        return None
    written(res, figures_dir, report_path)
    return report_path


# ---- the study's contract
def analyze(where, done: dict) -> dict:
    """{"ablations": aggregated on the committed logs (None without them)}: the CSVs are written here, into
    RESULTS."""
    return {"ablations": aggregated(hparams.parse_seeds(SEEDS), LOGS, RESULTS, BUDGET)}


def write(result: dict, where) -> list[str]:
    """The five figures (into where.figures), ablations.json and ABLATIONS.md (REPORT); [] without logs."""
    if result["ablations"] is None:
        return []
    return written(result["ablations"], where.figures, REPORT)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=("report", "costs"),
        default="report",
        help="report: CSVs, figures, ABLATIONS.md from the compact logs (default); costs: "
        "benchmark/costs.py ablation-costs into the results directory",
    )
    p.add_argument("--seeds", default=SEEDS, help="seeds to aggregate (default: %(default)s)")
    for option, default in (
        ("--logs-dir", LOGS),
        ("--results-dir", RESULTS),
        ("--figures-dir", FIGURES),
        ("--report-path", REPORT),
    ):
        p.add_argument(option, default=default)
    args = p.parse_args(argv)
    if args.action == "costs":
        print(run_costs(args.results_dir))
        return 0
    if write_all(args.seeds, args.logs_dir, args.results_dir, args.figures_dir, args.report_path) is None:
        print(
            f"error: no ablation compact logs under {args.logs_dir}; run `python -m benchmark.sweep --study "
            f"ablations` first; {args.report_path} and its CSVs and figures are left as they are",
            file=sys.stderr,
        )
        return 2
    print(
        f"wrote {args.results_dir}/*.csv, {args.results_dir}/{JSON_NAME}, {args.figures_dir}/ablation_*.png, "
        f"{args.report_path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
