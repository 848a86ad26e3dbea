"""The stage-1 grid: the paper's table at our budgets. Does our lab reproduce the paper's final returns of its nine
tasks (Acrobot, CartPole, Pendulum and six MuJoCo tasks) for its five algorithms (SMAC, AC-SGD, AC-Adam, AC-CG,
AC-KFAC) and SGD with step eta/lambda (sgd-matched), five seeds per cell, at the stage-1 budgets (classic control
500k, Pendulum 2M, MuJoCo 1M; the paper's MuJoCo budget is 5M)? Exploratory: no rule was fixed before its runs
(PREREGISTRATION None); the pre-registered studies (prereg, mujoco_5M) took up its questions afterwards.

    python -m benchmark.sweep --reading norm --seeds 1-5 --budget classic=500000,mujoco=1000000,Pendulum=2000000

The compact logs are committed under benchmark/results/logs/<reading> (hyperparams.toml [meta] grid_readings
stage1). The analysis writes the stage-1 CSVs (benchmark/results/stage1/, aggregate.py's, and cells.csv with the
rliable aggregates), the figures (docs/figures/), and report/grid.md: every cell beside the paper's, the aggregates,
the orderings, SMAC's step diagnostics (and, committing, benchmark/results/grid.json). The verdict's row
"sgd_stage1" (SMAC against sgd-matched, paired over the five seeds) and its point "step_size" are this study's.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Optional, Union

from benchmark import aggregate, compact, hparams, pages, protocol, stats
from benchmark import verdict as vd
from benchmark.figures import figures, grid_plots
from benchmark.stats import num, read_csv, write_csv
from benchmark.studies import REPO, RESULTS, STUDY_OPTIONS

NAME = "grid"
# the sweep's options its jobs honour (besides its own, add_options): every study-dependent one
SWEEP_OPTIONS = STUDY_OPTIONS
PREREGISTRATION = None  # exploratory: the stage-1 grid ran before any rule was fixed
COMMITTED_ONLY = False

STAGE1 = os.path.join(RESULTS, "stage1")
FIGURES = os.path.join(REPO, "docs", "figures")
STAGE1_SEEDS = 5  # seeds 1-5 per stage-1 cell, as the paper's table
PAGE_TITLE = "The stage-1 grid: every cell, aggregates, orderings, SMAC vs SGD with step η/λ"


# ---- the job list
def add_options(parser: argparse.ArgumentParser) -> None:
    """The grid's own flags: --reading, --extend-from, --horizon, --num-steps."""
    add = parser.add_argument
    add(
        "--reading",
        default="literal",
        help="grid: the hparams.READINGS entry whose trainer flags every job gets (default: literal)",
    )
    add(
        "--extend-from",
        default=None,
        help="runs root of a smaller-budget grid whose finished run of the same job a "
        "job with nothing in --runs-dir continues (a copy)",
    )
    add(
        "--horizon",
        choices=hparams.HORIZONS,
        default="paper",
        help="paper: 1000-step episodes (the paper's "
        "protocol); gym: each id's registered TimeLimit (default: paper)",
    )
    add("--num-steps", type=int, default=None, help="override T (steps per update); tests only")


def jobs(args) -> list:
    """--tasks x --algos x --seeds at --budget, each with its row's flags and --reading's; runs under
    benchmark/runs (literal) or benchmark/runs_<reading>, compact logs (with that default --runs-dir) under
    benchmark/results/logs/<reading>."""
    from benchmark import sweep

    tasks = sweep.select(args.tasks, "task")
    algos, seeds = sweep.select(args.algos, "algo"), sweep.parse_seeds(args.seeds or sweep.DEFAULT_SEEDS)
    budgets = sweep.parse_budget(args.budget or sweep.DEFAULT_BUDGET, tasks)
    reading_flags = hparams.reading_flags(args.reading)
    default_runs = sweep.DEFAULT_RUNS if args.reading == "literal" else f"{sweep.DEFAULT_RUNS}_{args.reading}"
    args.runs_dir = args.runs_dir or default_runs
    own = os.path.abspath(args.runs_dir) == default_runs  # the default runs: their reading's logs by default
    logs = sweep.logs_dir_of(args, os.path.join(sweep.DEFAULT_LOGS, args.reading) if own else None)
    return sweep.make_jobs(
        tasks,
        algos,
        seeds,
        budgets,
        args.runs_dir,
        args.checkpoint_every,
        args.horizon,
        args.num_steps,
        reading_flags + args.extra_flags.split(),
        logs,
        extend_from=args.extend_from,
    )


# ---- the analysis: the stage-1 logs, their CSVs, cells and aggregates
@dataclass
class Data:
    """The stage-1 grid's data, loaded once: everything the report's pages read of it."""

    runs: list  # stage-1 compact logs, loaded
    headline: list  # HalfCheetah SMAC / AC-CG at 5M, loaded
    final: dict  # stage1/final.csv by (task, algo)
    diag: dict  # stage1/diagnostics_summary.csv by task (SMAC)
    claims: list = field(default_factory=list)
    cells: list = field(default_factory=list)  # aggregate.cell_rows
    grid: Optional[dict] = None  # aggregates output
    readings: Optional[tuple] = None  # literal_vs_norm output, computed once


def load(
    logs_dir: Optional[str] = None, headline_dir: Optional[str] = None, results_dir: str = STAGE1
) -> Data:
    """The stage-1 runs (logs_dir, default: aggregate.stage1_logs()) and the 5M headline block's HalfCheetah SMAC
    and AC-CG runs (headline_dir, default: hyperparams.toml [meta.headline] logs), loaded; the stage-1 CSVs
    (aggregate.aggregate) written to results_dir and read back."""
    meta = hparams.load()["meta"]
    logs_dir = logs_dir or aggregate.stage1_logs()
    headline_dir = headline_dir or os.path.join(REPO, meta["headline"]["logs"])
    runs = compact.discover_logs(logs_dir) if os.path.isdir(logs_dir) else []
    headline = compact.discover_logs(headline_dir) if os.path.isdir(headline_dir) else []
    # the block's own cells: the same directory holds the MuJoCo-at-5M study's runs, which its own page reports
    block = meta["headline"]
    cells = {(t, a) for t in block["tasks"].split(",") for a in block["algos"].split(",")}
    headline = [r for r in headline if (r["task"], r["algo"]) in cells]
    if runs:
        aggregate.aggregate(None, results_dir, meta["stage1_budget"], runs=runs)

    def res(name: str) -> list[dict]:
        return read_csv(os.path.join(results_dir, name))

    return Data(
        runs=runs,
        headline=headline,
        final=aggregate.by_cell(res("final.csv")),
        diag={r["task"]: r for r in res("diagnostics_summary.csv") if r["algo"] == "smac"},
    )


def compute(
    source: Union[str, list, None] = None,
    min_seeds: int = 5,
    results_dir: str = STAGE1,
    figures_dir: str = FIGURES,
    reps: int = 2000,
) -> dict:
    """Cells, their rows (written to cells.csv) and the aggregates (None until a task qualifies) of `source`, a
    compact-logs dir or loaded runs (default: the stage-1 logs)."""
    source = aggregate.stage1_logs() if source is None else source
    cells = aggregate.load_cells(source) if not isinstance(source, str) or os.path.isdir(source) else {}
    rows = aggregate.cell_rows(cells)
    out = {
        "source": source,
        "cells": cells,
        "rows": rows,
        "min_seeds": min_seeds,
        "reps": reps,
        "aggregates": None,
    }
    if rows:
        os.makedirs(results_dir, exist_ok=True)
        write_csv(os.path.join(results_dir, "cells.csv"), rows)
        out["aggregates"] = a = aggregate.aggregates(cells, min_seeds, results_dir, reps)
        if a is not None:
            os.makedirs(figures_dir, exist_ok=True)
            grid_plots(a["agg"], a["eff"], a["profile"], a["taus"], a["tasks"], figures_dir)
    return out


def stage1_equiv(logs_dir: str) -> dict:
    """{task: SMAC - sgd-matched} on the normalized finals of logs_dir, paired over the stage-1 seeds 1-5
    (stats.paired, TOST at the margin): exploratory, no rule fixed before the runs; `means`: every algorithm's
    seed-mean normalized final on the task (aggregate.seed_means); `step_change`: aggregate.step_change of SMAC's
    runs."""
    sc = aggregate.scores([logs_dir])
    return {
        t: {
            **stats.paired(
                sc.get((t, "smac"), {}),
                sc.get((t, "sgd-matched"), {}),
                list(range(1, STAGE1_SEEDS + 1)),
                vd.EQUIV_MARGIN,
            ),
            "means": aggregate.seed_means(sc, t),
            "step_change": aggregate.step_change(sc.get((t, "smac", "runs"), {})),
        }
        for t in hparams.tasks()
    }


def analyze(where, done: dict) -> dict:
    """The grid on where.logs (and the 5M headline block on where.headline): the stage-1 CSVs into where.results,
    the figures into where.figures, the aggregates at where.reps bootstrap replicates. Returns

        "data"   Data: the runs and headline runs loaded, final.csv and the SMAC diagnostics by cell, `cells`
                 (aggregate.cell_rows) and `grid` (aggregate.aggregates; None until a task qualifies) set;
                 `claims` is left empty for the claims study to fill
        "grid"   compute's output: {source, cells, rows, min_seeds, reps, aggregates}
        "equiv"  {task: stats.paired row}: SMAC - sgd-matched over the stage-1 seeds 1-5 (stage1_equiv)
        "logs"   the stage-1 compact logs directory read
    """
    logs = where.logs or aggregate.stage1_logs()
    d = load(logs, where.headline or None, where.results)
    grid = compute(d.runs, results_dir=where.results, figures_dir=where.figures, reps=where.reps)
    d.cells, d.grid = grid["rows"], grid["aggregates"]
    if d.runs:
        figures(where.results, where.figures, d.runs)
    return {"data": d, "grid": grid, "equiv": stage1_equiv(logs), "logs": logs}


# ---- report/grid.md
GRID_JSON = os.path.join(REPO, "benchmark", "results", "grid.json")
PAGE_DIGITS = 10  # grid.json and claims.json: significant digits kept (a printed digit never moves)
GRID_VOCAB = (  # every word a cell of report/grid.md and the 5M block may use
    "compared",  # a cell beside the paper's at a comparable budget
    "not comparable",  # a MuJoCo cell at 1M beside the paper's 5M
    "yes",  # the paper's mean inside our interval (aggregate.cell_rows); the same best algorithm
    "paper above",
    "paper below",
    "no",  # not the same best algorithm
)


def design() -> dict:
    """The study's fixed design as REPORT.md and grid.md state it: the stage-1 grid's size and reading, the
    protocol's bins and smoothing, the paper's seeds and budget, the equivalence margin, level and paired seeds."""
    reg = hparams.load()
    n_tasks, n_algos = len(hparams.tasks()), len(hparams.algos())
    pre = hparams.load_prereg()
    return {
        "tasks": n_tasks,
        "algos": n_algos,
        "seeds": STAGE1_SEEDS,
        "runs": n_tasks * n_algos * STAGE1_SEEDS,
        "reading": reg["meta"]["grid_readings"]["stage1"],
        "bins": protocol.N_BINS,
        "ewm": protocol.ALPHA,
        "paper_seeds": aggregate.PAPER_SEEDS,
        "paper_budget": aggregate.PAPER_BUDGET,
        "margin": vd.EQUIV_MARGIN,
        "level": round(100 * pre["common"]["ci_level_tost"]),
        "paired_seeds": len(hparams.parse_seeds(pre["blocks"]["equivalence"]["seeds"])),
    }


# a task group's name where all its tasks share a budget
GROUP_NAMES = {"mujoco": "MuJoCo", "classic": "classic control"}


def budget_groups() -> list[dict]:
    """The stage-1 budgets as [{names, budget}], tasks grouped by budget, a whole task group by its name
    (Acrobot, CartPole 500k; Pendulum 2M; MuJoCo 1M)."""
    by, groups = {}, {}
    for t in hparams.tasks():
        by.setdefault(aggregate.stage1_budget(t), []).append(t)
        groups.setdefault(hparams.group(t), []).append(t)
    names = {tuple(ts): GROUP_NAMES.get(g, g) for g, ts in groups.items()}
    out = []
    for b, ts in by.items():
        out.append({"names": [names[tuple(ts)]] if tuple(ts) in names else ts, "budget": b})
    return out


def cell_data(r: Optional[dict], paper: Optional[tuple] = None) -> dict:
    """One cell of the stage-1 table (or the 5M block's) from an aggregate.cell_rows row (None: not run): our
    finals' mean, std, 95 % t-interval (None where missing, as below MIN_CI_SEEDS), seeds, diverged ones (None where
    none); the paper's mean ± std (`paper` where not run); `compare`: "compared" or "not comparable" (None without
    the paper's value or runs); where compared, `inside` (cell_rows' word, None without an interval), Welch's p."""
    out = {
        "run": r is not None,
        "mean": None,
        "std": None,
        "ci": [None, None],
        "n": 0,
        "n_div": None,
        "paper": None if paper is None else list(paper),
        "compare": None,
        "inside": None,
        "p": None,
    }
    if r is None:
        return out
    out.update(mean=num(r["mean"]), std=num(r["std"]), ci=[num(r["lo"]), num(r["hi"])], n=r["n"])
    out["n_div"] = r["n_div"] or None
    out["paper"] = None if r["paper"] is None else [r["paper"], r["paper_std"]]
    if r["paper"] is None:
        return out
    out["compare"] = "compared" if r["comparable"] else "not comparable"
    if r["comparable"]:
        out["inside"] = None if r["inside"] == "–" else r["inside"]
        out["p"] = num(r["p_vs_paper"])
    return out


def ordering_data(d: Data) -> list[dict]:
    """Per task, the five paper algorithms by stage-1 final mean (best first) and by the paper's; whether the best
    is the same (None below two run; `only`: how many run where not all); the pairs (of those run) in the paper's
    order (None where no pair is run)."""
    n_algos = len(hparams.PAPER_ALGOS)
    rows = []
    for t in hparams.tasks():
        ours = {
            a: num(d.final[(t, a)]["final_mean"])
            for a in hparams.PAPER_ALGOS
            if (t, a) in d.final and num(d.final[(t, a)]["final_mean"]) is not None
        }
        paper = {a: hparams.paper_result(t, a)[0] for a in hparams.PAPER_ALGOS}
        rp = sorted(paper, key=paper.get, reverse=True)
        have = [a for a in rp if a in ours]
        pairs = [(x, y) for i, x in enumerate(have) for y in have[i + 1 :]]
        agree = sum((ours[x] > ours[y]) == (paper[x] > paper[y]) for x, y in pairs)
        ranked = sorted(ours, key=ours.get, reverse=True)
        same_best = None
        if len(ranked) >= 2:
            same_best = "yes" if ranked[0] == have[0] else "no"
        rows.append(
            {
                "task": t,
                "ours": [hparams.algo_label(a) for a in ranked],
                "paper": [hparams.algo_label(a) for a in rp],
                "same_best": same_best,
                "only": None if same_best is None or len(ranked) == n_algos else len(ranked),
                "of": n_algos,
                "pairs": [agree, len(pairs)] if pairs else None,
            }
        )
    return rows


def diagnostics_data(d: Data) -> list[dict]:
    """Per task, the stage-1 SMAC runs' diagnostics (stage1/diagnostics_summary.csv): λ, ‖ℓ̄‖²/λ and the removed
    fraction as [median, min, max] over seeds and their last-10 % medians, cos(g, step), ‖step‖/‖g/λ‖."""
    rows = []
    for t in hparams.tasks():
        if t not in d.diag:
            continue
        r = d.diag[t]
        rows.append(
            {
                "task": t,
                "damping": num(r["damping"]),
                "ell": [num(r[f"ell_sq_over_lambda_{k}"]) for k in ("median", "min_run", "max_run")],
                "ell_last": num(r["ell_sq_over_lambda_last10pct_median"]),
                "cos": num(r["cos_g_step_median"]),
                "removed": [num(r[f"removed_frac_{k}"]) for k in ("median", "min_run", "max_run")],
                "removed_last": num(r["removed_frac_last10pct_median"]),
                "step_ratio": num(r.get("step_over_sgd_median")),
            }
        )
    return rows


def stage1_data(c: dict) -> dict:
    """The stage-1 table and the aggregates from compute(): the runs counted (finished + diverged; `short`: those
    that stopped short, None where none), the seed range over cells ([n] where every cell has n), every task x
    algorithm cell (cell_data; the paper's value also where not run), the rliable aggregates (None until a task
    qualifies; `partial` where not every cell has its seeds, `n_div`: diverged runs, None where none; `unchecked`:
    how many of their intervals lack a check)."""
    cells = c["cells"].values()
    seeds = sorted({len(x["finished"]) + len(x["diverged"]) for x in cells}) or [0]
    out = {
        "design": design(),
        "reading": hparams.load()["meta"]["grid_readings"]["stage1"],
        "seeds": sorted({seeds[0], seeds[-1]}),
        "budgets": budget_groups(),
        "runs": sum(len(x["finished"]) + len(x["diverged"]) for x in cells),
        "short": sum(len(x["short"]) for x in cells) or None,
        "min_ci_seeds": aggregate.MIN_CI_SEEDS,
        "mujoco_budget": aggregate.stage1_budget("Hopper"),
        "paper_budget": aggregate.PAPER_BUDGET,
        "algos": [hparams.algo_label(a) for a in hparams.algos()],
        "rows": [],
        "aggregates": None,
    }
    if not c["rows"]:
        return out
    by = aggregate.by_cell(c["rows"])
    for t in hparams.tasks():
        row = []
        for a in hparams.algos():
            paper = hparams.paper_result(t, a) if a in hparams.PAPER_ALGOS else None
            row.append(cell_data(by.get((t, a)), paper))
        out["rows"].append({"task": t, "cells": row})
    agg = c["aggregates"]
    if agg is None:
        return out
    out["aggregates"] = {
        "reps": c["reps"],
        "check_reps": agg.get("check_reps"),
        "tasks": agg["tasks"],
        "n_tasks": len(agg["tasks"]),
        "seeds": agg["use"],
        "partial": agg["use"] != c["min_seeds"] or len(agg["tasks"]) != len(hparams.tasks()),
        "n_div": sum(len(x["diverged"]) for x in cells) or None,
        "metrics": list(aggregate.METRICS),
        "rows": [
            {"algo": hparams.algo_label(a), "values": [list(m[k]) for k in aggregate.METRICS]}
            for a, m in agg["agg"].items()
        ],
        "improvement": [{"algo": hparams.algo_label(a), "p": list(p)} for a, p in agg["imp"].items()],
        "unchecked": sum(v[3] is None for m in [*agg["agg"].values(), agg["imp"]] for v in m.values()),
    }
    return out


def grid_data(d: Data, c: dict) -> dict:
    """Every number, list and word of report/grid.md: the stage-1 table and aggregates (stage1_data of compute's
    `c`), the orderings, the SMAC diagnostics."""
    return {**stage1_data(c), "ordering": ordering_data(d), "diagnostics": diagnostics_data(d)}


def write(result: dict, where) -> list[str]:
    """report/grid.md (grid_data rendered by templates/grid.md.j2) and report/deviations.md (deviations_data), and
    where.commit, benchmark/results/grid.json and deviations.json."""
    data = grid_data(result["data"], result["grid"])
    out = pages.write_study_page(where, "grid.md", PAGE_TITLE, data, GRID_JSON, PAGE_DIGITS)
    deviations = deviations_data(result["data"])
    return out + pages.write_study_page(where, "deviations.md", DEVIATIONS_TITLE, deviations, DEVIATIONS_JSON)


# ---- report/deviations.md
DEVIATIONS_JSON = os.path.join(REPO, "benchmark", "results", "deviations.json")
DEVIATIONS_TITLE = "Deviations from the paper"


def deviations_data(d) -> dict:
    """deviations.md's data: the stage-1 budgets, the paper's budget note, the filling rules of `[meta]`, the
    diverged stage-1 runs (None: none)."""
    meta = hparams.load()["meta"]
    diverged = [
        {"task": r["task"], "algo": r["algo"], "seed": r["seed"], "step": r["last_step"]}
        for r in d.runs
        if r["status"] == "diverged"
    ]
    return {
        "budgets": budget_groups(),
        "paper_budget_note": aggregate.PAPER_BUDGET_NOTE,
        "kfac_fill_rule": meta["kfac_fill_rule"],
        "sgd_matched_rule": meta["sgd_matched_rule"],
        "diverged": diverged or None,
    }


# ---- REPORT.md's part
def report(result: dict, done: dict) -> dict:
    """The grid's part of REPORT.md's own data: its design, the stage-1 budgets and the paper's budget note."""
    return {"design": design(), "budgets": budget_groups(), "paper_budget_note": aggregate.PAPER_BUDGET_NOTE}


# ---- the verdict
def step_ratio(task: str) -> float:
    """SMAC's effective step eta/lambda over the paper's AC-SGD eta on the same task (the step-size confound)."""
    smac, sgd = hparams.settings(task, "smac"), hparams.settings(task, "sgd")
    return smac["learning_rate"] / smac["damping"] / sgd["learning_rate"]


def sgd_stage1_row(equiv: dict) -> dict:
    """The verdict's row "sgd_stage1": SMAC against SGD with step eta/lambda at the stage-1 budget (exploratory), per
    task the paired TOST word (verdict.block_c_word), Holm over the tasks with runs for "different" only. Its numbers'
    `tasks` ({word: [task, ...]}) and `of` (the tasks judged) are the stage-1 per-task words the 5M study reads;
    `p_tost` ({task: [TOST p, that p Holm-adjusted over the tasks]}) the equivalence test's p, the adjusted one for
    information (the word "equivalent" takes no Holm); `curvature` (verdict.curvature_cells): of the equivalent tasks,
    which can speak to curvature by verdict.curvature_word's rule on the grid's seed means and step changes."""
    one = {t: r for t, r in equiv.items() if r.get("n")}
    p_holm = dict(zip(one, stats.holm([r["p"] for r in one.values()])))
    p_tost_holm = dict(zip(one, stats.holm([r["p_tost"] for r in one.values()])))
    stage1 = [{"task": t, "answer": vd.block_c_word({**r, "p_holm": p_holm[t]})} for t, r in one.items()]
    budgets = aggregate.stage1_budgets()
    numbers = {
        "budgets": [min(budgets.values()), max(budgets.values())],
        "tasks": {
            w: [r["task"] for r in stage1 if r["answer"] == w]
            for w, _ in vd.tally([r["answer"] for r in stage1])
        },
        "p_tost": {t: [r["p_tost"], p_tost_holm[t]] for t, r in one.items()},
        "curvature": vd.curvature_cells(
            {r["task"]: one[r["task"]] for r in stage1 if r["answer"] == vd.EQUIVALENT}
        ),
    }
    return vd.tallied_row("sgd_stage1", numbers, stage1, "report/grid.md")


def step_size_point(grid: Optional[dict]) -> dict:
    """The verdict's point "step_size": SMAC's step eta/lambda over AC-SGD's eta ([min, max] over the tasks), SMAC's
    probability of improvement over AC-SGD and over sgd-matched with their 95 % CIs and their checks (`unchecked`
    where a check is missing), the IQMs of SMAC and sgd-matched, and the tasks pooled (how many, their stage-1
    budgets [min, max])."""
    g = grid or {"agg": {}, "imp": {}, "tasks": []}
    tasks = g.get("tasks", [])
    budgets = [aggregate.stage1_budget(t) for t in tasks]
    imp, iqm = g["imp"], {a: v["IQM"][0] for a, v in g["agg"].items()}
    ratios = [step_ratio(t) for t in hparams.tasks()]
    return {
        "ratio": [min(ratios), max(ratios)],
        "p_vs_sgd": imp["sgd"][0] if "sgd" in imp else None,
        "p_vs_matched": imp["sgd-matched"][0] if "sgd-matched" in imp else None,
        "iqm": [iqm.get("smac"), iqm.get("sgd-matched")],
        "ci_vs_sgd": list(imp["sgd"][1:]) if "sgd" in imp else [None, None],
        "ci_vs_matched": list(imp["sgd-matched"][1:]) if "sgd-matched" in imp else [None, None],
        "unchecked": any(imp[b][3] is None for b in ("sgd", "sgd-matched") if b in imp),
        "n_tasks": len(tasks),
        "budgets": [min(budgets), max(budgets)] if budgets else [None, None],
    }


def verdict(result: dict, done: dict) -> dict:
    """The row "sgd_stage1" (sgd_stage1_row), the point "step_size" (step_size_point), and the design's level,
    margin, seeds per stage-1 cell, the stage-1 MuJoCo budget and the paper's, and the reading its runs use."""
    reading = hparams.load()["meta"]["grid_readings"]["stage1"]
    design = {
        "alpha": vd.ALPHA,
        "margin": vd.EQUIV_MARGIN,
        "seeds": STAGE1_SEEDS,
        "mujoco_budget": aggregate.stage1_budget("Hopper"),
        "paper_budget": aggregate.PAPER_BUDGET,
        "reading": {"name": reading, "description": hparams.READINGS[reading][2]},
    }
    return {
        "rows": [sgd_stage1_row(result["equiv"])],
        "points": {"step_size": step_size_point(result["data"].grid)},
        "design": design,
    }
