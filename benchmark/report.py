"""Write benchmark/REPORT.md from the committed compact logs and result CSVs: `python -m benchmark.report`.

Aggregates the stage-1 logs (benchmark/results/logs/<reading>/) with the paper's protocol (benchmark/aggregate.py),
computes statistics (benchmark/stats.py) and figures, evaluates the paper's claims, and adds the fidelity study and
the earlier literal grid (benchmark/results/grid_300k/). Every number comes from those files or from the paper's table
(benchmark/hyperparams.toml). Each page is a function returning its data (`*_data`: numbers, lists, words of a fixed
vocabulary), written to benchmark/results/*.json and rendered by its template in benchmark/templates/ (pages.py).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional, Union

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import (  # noqa: E402
    ablations,
    aggregate,
    algorithms,
    compact,
    hparams,
    kl_step,
    pages,
    protocol,
    provenance,
    stats,
)
from benchmark.stats import (
    num,
    read_csv,
    save,
    write_csv,
)

STAGE1 = os.path.join(REPO, "benchmark", "results", "stage1")
GRID_300K = os.path.join(REPO, "benchmark", "results", "grid_300k")
FIGURES = os.path.join(REPO, "docs", "figures")
NOT_RUN = "not run yet"
N_HEADLINE = 2 * 5  # the 5M block: HalfCheetah SMAC and AC-CG x 5 seeds
EQUIV_MARGIN = 0.1  # normalized score, the margin of the pre-registration (benchmark/preregistration.toml)
ARM = {
    "sgd-matched": "SGD with step η/λ"
}  # the verdict's name for an algorithm where it differs from algo_label


@dataclass
class Data:
    """Everything the sections read, loaded once."""

    runs: list  # stage-1 compact logs, loaded
    headline: list  # HalfCheetah SMAC / AC-CG at 5M, loaded
    final: dict  # stage1/final.csv by (task, algo)
    diag: dict  # stage1/diagnostics_summary.csv by task (SMAC)
    claims: list = field(default_factory=list)
    cells: list = field(default_factory=list)  # aggregate.cell_rows
    grid: Optional[dict] = None  # aggregates output
    readings: Optional[tuple] = None  # literal_vs_norm output, computed once


def by_cell(rows) -> dict:
    return {(r["task"], r["algo"]): r for r in rows}


def load(
    logs_dir: Optional[str] = None, headline_dir: Optional[str] = None, results_dir: str = STAGE1
) -> Data:
    meta = hparams.load()["meta"]
    logs_dir = logs_dir or aggregate.stage1_logs()
    headline_dir = headline_dir or os.path.join(REPO, meta["headline"]["logs"])
    runs = compact.discover_logs(logs_dir) if os.path.isdir(logs_dir) else []
    headline = compact.discover_logs(headline_dir) if os.path.isdir(headline_dir) else []
    # the block's own cells: the same directory holds issue 37's 5M runs, which its own section reports
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
        final=by_cell(res("final.csv")),
        diag={r["task"]: r for r in res("diagnostics_summary.csv") if r["algo"] == "smac"},
    )


def other_bin_widths() -> dict:
    """{task: steps the 100 bins span} for the claims' second reading (a crossing step moves with the bin width: the
    EWM(0.1) lags about 10 bins): Acrobot and CartPole over their first hparams.FIDELITY_BUDGET steps as in the
    fidelity study, MuJoCo at the paper's own bin width (its budget / 100), Pendulum none (budget not stated)."""
    return {
        **{t: hparams.FIDELITY_BUDGET for t in hparams.FIDELITY_TASKS},
        **{t: aggregate.PAPER_BUDGET for t in hparams.tasks("mujoco")},
    }


def change_cause(c: dict) -> str:
    """Why a claim's verdict differs at the other span: "run length" where that span is shorter than the runs and the
    claim looks past it (a "never above" claim; a crossing step after the span), "bin width" otherwise."""
    span = other_bin_widths()[c["task"]]
    past = c["kind"] == "never_above" or any(t is not None and t > span for t in c.get("steps", ()))
    return "run length" if span < aggregate.stage1_budget(c["task"]) and past else "bin width"


def evaluate_claims(d: Data, at_5M: list = ()) -> list[dict]:
    """The paper's claims on the stage-1 runs, HalfCheetah SMAC / AC-CG from the 5M block where it has runs (its claims
    need 2M and 3.4M steps); `other`: the same claim at other_bin_widths() (None for a task without one). `at_5M`:
    issue 37's block A rows (prereg.analyze_5M), which replace the claims that need more than the stage-1 budget."""
    block = {(r["task"], r["algo"]) for r in d.headline}
    runs = [r for r in d.runs if (r["task"], r["algo"]) not in block] + d.headline
    widths = other_bin_widths()
    other = {r["id"]: r for r in aggregate.evaluate(runs, tasks=tuple(widths), windows=widths)}
    five = {r["id"]: {"seeds": "", **r, "other": None, "at_5M": True} for r in at_5M}
    return [five.get(r["id"], {**r, "other": other.get(r["id"])}) for r in aggregate.evaluate(runs)]


def pre_run_verdict(c: dict) -> str:
    """A claim's verdict under the rules fixed before its runs: aggregate.RULES at our bins for the stage-1 claims
    (the stricter names and the less-favourable-span rule came after those runs were in); the 5M claims' rules,
    stricter names included, were pre-registered before their runs (benchmark/preregistration_5M.toml)."""
    return aggregate.combined(c) if c.get("at_5M") else c["verdict"]


GRID_JSON = os.path.join(REPO, "benchmark", "results", "grid.json")
PAGE_DIGITS = 10  # grid.json and claims.json: significant digits kept (a printed digit never moves)
CLAIMS_JSON = os.path.join(REPO, "benchmark", "results", "claims.json")
GRID_VOCAB = (  # every word a cell of report/grid.md and the 5M block may use
    "compared",  # a cell beside the paper's at a comparable budget
    "not comparable",  # a MuJoCo cell at 1M beside the paper's 5M
    "yes",  # the paper's mean inside our interval (aggregate.cell_rows); the same best algorithm
    "paper above",
    "paper below",
    "no",  # not the same best algorithm
)
CLAIMS_VOCAB = (  # every word report/claims.md's verdict columns may use (aggregate.evaluate, aggregate.combined)
    "held",
    "direction only",
    "baseline never reaches it",
    "not held",
    "beyond budget",
    "no runs",
    "waiting",
    "bin width",  # change_cause: why the other span's verdict differs
    "run length",
)


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


def claim_data(r: dict) -> dict:
    """One claim's row: evaluate_claims' texts, its verdict at our bins and the stricter name where that differs
    (None where not), the other span's (None where there is none; `at_5M`: judged on the 5M runs), the final."""
    other = r.get("other")
    if other is not None and not r.get("at_5M"):
        other = {
            "verdict": other["verdict"],
            "strict": other["strict"] if other.get("strict") not in (None, other["verdict"]) else None,
            "measured": other["measured"] or None,
            "cause": change_cause(r) if other["verdict"] != r["verdict"] else None,
        }
    else:
        other = None
    return {
        "task": r["task"],
        "claim": r["claim"],
        "measured": r["measured"],
        "seeds": r["seeds"],
        "verdict": r["verdict"],
        "strict": r["strict"] if r.get("strict") not in (None, r["verdict"]) else None,
        "at_5M": bool(r.get("at_5M")),
        "other": other,
        "final": aggregate.combined(r),
    }


def claims_data(d: Data, logs_dir: str) -> dict:
    """Every number, list and word of report/claims.md: the claims (d.claims) with their rules and bins, and the
    5M block (headline_data)."""
    head = os.path.relpath(os.path.join(REPO, hparams.load()["meta"]["headline"]["logs"]), REPO)
    block = max(int(r["job_budget"] or r["last_step"]) for r in d.headline) // 100 if d.headline else None
    return {
        "logs": os.path.relpath(logs_dir, REPO),
        "runs": len(d.runs),
        "headline_logs": head,
        "headline_runs": len(d.headline),
        "n_5M": sum(bool(c.get("at_5M")) for c in d.claims),
        "waiting": any(aggregate.combined(c) == "waiting" for c in d.claims),
        "not_judged": aggregate.NOT_JUDGED,
        "rules": [[k, rule] for k, rule in aggregate.RULES.items()],
        "strict_rules": [[k, rule] for k, rule in aggregate.STRICT.items()],
        "bins": [{"task": t, "bin": aggregate.stage1_budget(t) // 100} for t in hparams.tasks()],
        "block_bin": block,
        "fidelity_tasks": list(hparams.FIDELITY_TASKS),
        "fidelity_budget": hparams.FIDELITY_BUDGET,
        "fidelity_bin": hparams.FIDELITY_BUDGET // 100,
        "paper_budget": aggregate.PAPER_BUDGET,
        "paper_bin": aggregate.PAPER_BUDGET // 100,
        "claims": [claim_data(c) for c in d.claims],
        "headline": headline_data(d),
    }


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


READING_WORDS = ("ahead", "behind", "not distinguishable")  # norm vs literal on one cell (reading_verdict)
EQUIV_WORDS = ("equivalent", "different", "not shown")  # the per-task table's paired TOST column
AT_5M_KINDS = ("same as stage 1", "runs in", "final")  # the per-task table's SMAC-at-5M column
READINGS_JSON = os.path.join(REPO, "benchmark", "results", "readings.json")
DEVIATIONS_JSON = os.path.join(REPO, "benchmark", "results", "deviations.json")
REPORT_JSON = os.path.join(REPO, "benchmark", "results", "report.json")


def final_data(r: Optional[dict]) -> Optional[dict]:
    """A final.csv row as a cell's numbers: mean, std, n seeds, diverged seeds (None where none); None: no row."""
    if r is None:
        return None
    return {
        "mean": num(r["final_mean"]),
        "std": num(r["final_std"]),
        "n": int(r["n_seeds"] or 0),
        "diverged": int(r["n_diverged"] or 0) or None,
    }


def first_steps_finals(runs: list[dict], span: int) -> tuple[dict, Counter]:
    """({(task, algo): per-seed finals}, {(task, algo): runs left out}): each run judged over its first `span` steps
    (100 bins over that span), as if its budget were `span`; a run that stopped before `span` is left out, counted."""
    ok = [r for r in runs if int(r["last_step"]) >= span]
    dropped = Counter((r["task"], r["algo"]) for r in runs if int(r["last_step"]) < span)
    out = {}
    for key, (_, curves, _) in aggregate.cell_curves(ok, {r["task"]: span for r in ok}).items():
        finals = curves[:, -1][np.isfinite(curves[:, -1])]
        if finals.size:
            out[key] = finals
    return out, dropped


def literal_vs_norm(d: Data) -> tuple[int, dict]:
    """reading_pairs of the earlier literal grid and the stage-1 runs, computed once per report."""
    if d.readings is None:
        d.readings = reading_pairs(by_cell(read_csv(os.path.join(GRID_300K, "final.csv"))), d.runs)
    return d.readings


def reading_pairs(final: dict, runs: list[dict]) -> tuple[int, dict]:
    """(span, {(task, algo): row}) with row = literal (per-seed finals of the earlier grid), n_div (its diverged
    seeds), norm (the stage-1 runs' finals over the same first steps), dropped (stage-1 runs that stopped before),
    p (Welch, None below 2 seeds a side)."""
    budgets = {int(r["budget"]) for r in final.values() if num(r["budget"])}
    if len(budgets) != 1 or not runs:
        return 0, {}
    span = budgets.pop()
    norm, dropped = first_steps_finals(runs, span)
    out = {}
    for key, r in final.items():
        literal = np.array([float(x) for x in r["finals"].split(";") if num(x) is not None])
        if key not in norm or not literal.size:
            continue
        test = stats.welch_test(norm[key], literal)
        out[key] = {
            "literal": literal,
            "n_div": int(r["n_diverged"] or 0),
            "norm": norm[key],
            "dropped": dropped[key],
            "p": None if test is None else test["p"],
        }
    return span, out


def reading_verdict(row: dict) -> str:
    """norm vs literal on one cell: a word of READING_WORDS, 'ahead' / 'behind' (Welch p < 0.05) or
    'not distinguishable'."""
    if row["p"] is None or row["p"] >= 0.05:
        return "not distinguishable"
    return "ahead" if row["norm"].mean() > row["literal"].mean() else "behind"


def reading_by_verdict(pairs: dict, algo: str) -> dict:
    """{verdict: [tasks]} of reading_verdict for one algorithm, in the paper's task order."""
    out: dict = {}
    for t in hparams.tasks():
        if (t, algo) in pairs:
            out.setdefault(reading_verdict(pairs[(t, algo)]), []).append(t)
    return out


def pair_data(row: Optional[dict]) -> Optional[dict]:
    """One cell of the two readings' table: the seed means and counts, Welch's p, and the notes on seeds left out
    ([count, side]: the literal grid's diverged seeds, the stage-1 runs that stopped before the span)."""
    if row is None:
        return None
    return {
        "literal": float(row["literal"].mean()),
        "norm": float(row["norm"].mean()),
        "n_literal": int(row["literal"].size),
        "n_norm": int(row["norm"].size),
        "p": row["p"],
        "notes": [[row[k], side] for k, side in (("n_div", "literal"), ("dropped", "norm")) if row[k]]
        or None,
    }


def grid_300k_data(d: Data) -> Optional[dict]:
    """The earlier literal grid (3 seeds x 300k steps, results/grid_300k/) and the stage-1 runs over its first steps
    beside it (`pairs`: None without them); `sb3`: the SB3 A2C reference rows (None without them). None: no grid."""
    final = by_cell(read_csv(os.path.join(GRID_300K, "final.csv")))
    if not final:
        return None
    out = {
        "algos": [hparams.algo_label(a) for a in hparams.algos()],
        "rows": [
            {"task": t, "cells": [final_data(final.get((t, a))) for a in hparams.algos()]}
            for t in hparams.tasks()
        ],
        "pairs": None,
        "sb3": None,
    }
    span, pairs = literal_vs_norm(d)
    if pairs:  # the stage-1 `norm` runs over the literal grid's first steps (same protocol)
        algos = ("smac",) + tuple(a for a in hparams.algos() if a != "smac")
        out["pairs"] = {
            "span": span,
            "algos": [hparams.algo_label(a) for a in algos],
            "rows": [
                {"task": t, "cells": [pair_data(pairs.get((t, a))) for a in algos]} for t in hparams.tasks()
            ],
            "verdicts": [
                {
                    "algo": hparams.algo_label(a),
                    "groups": [list(g) for g in sorted(reading_by_verdict(pairs, a).items())],
                }
                for a in algos
            ],
        }
    sb3 = [
        {
            "task": t,
            "sb3": final_data(final[(t, "sb3-a2c")]),
            "smac": final_data(final.get((t, "smac"))),
            "sgd": final_data(final.get((t, "sgd"))),
        }
        for t in hparams.tasks()
        if (t, "sb3-a2c") in final
    ]
    if sb3:
        out["sb3"] = sb3
    return out


def readings_data(d: Data, write: bool = False) -> dict:
    """readings.md's data: the fidelity study (fidelity_data; write: its CSVs) and the earlier literal grid."""
    return {"fidelity": fidelity_data(write=write), "grid_300k": grid_300k_data(d)}


def render_readings(data: dict) -> str:
    """readings.md's body from readings_data's JSON (benchmark/templates/readings.md.j2)."""
    return pages.render("readings.md.j2", data)


def headline_data(d: Data) -> dict:
    """The 5M block: HalfCheetah SMAC and AC-CG at the paper's budget, their cells beside the paper's table
    (cell_data), each finished seed's peak → final, and SMAC − AC-CG by Welch's test beside the paper's gap; its
    speed claims are in the claims table."""
    block = hparams.load()["meta"]["headline"]
    budget, tasks = int(block["budget"]), block["tasks"].split(",")
    out = {
        "tasks": tasks,
        "algos": [hparams.algo_label(a) for a in block["algos"].split(",")],
        "budget": budget,
        "bin": budget // 100,
        "logs": block["logs"],
        "runs": len(d.headline),
        "expected": N_HEADLINE,
        "run": bool(d.headline),
        "rows": [],
        "peaks": [],
        "gaps": [],
    }
    if not d.headline:
        return out
    budgets = {t: budget for t in tasks}
    cells = aggregate.load_cells(d.headline, budgets=budgets)
    for r in aggregate.cell_rows(cells, budgets=budgets):
        out["rows"].append({"task": r["task"], "algo": hparams.algo_label(r["algo"]), "cell": cell_data(r)})
    for t, a in sorted(cells, key=lambda k: (k[0], hparams.algos().index(k[1]))):
        p = aggregate.peaks(cells[(t, a)], budget)
        out["peaks"].append(
            {
                "task": t,
                "algo": hparams.algo_label(a),
                "seeds": [{"seed": s, "peak": pk, "step": at, "final": f} for s, pk, at, f in p],
                "drop": float(np.mean([pk - f for _, pk, _, f in p])),
            }
        )
    for t in tasks:
        finals = {
            a: [f for _, f, _ in cells[(t, a)]["finished"]] if (t, a) in cells else [] for a in ("smac", "cg")
        }
        w = stats.welch_test(finals["smac"], finals["cg"])
        if w is not None:
            out["gaps"].append(
                {
                    "task": t,
                    "diff": w["diff"],
                    "p": w["p"],
                    "n": [len(finals["smac"]), len(finals["cg"])],
                    "paper": hparams.paper_result(t, "smac")[0] - hparams.paper_result(t, "cg")[0],
                }
            )
    return out


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


def deviations_data(d: Data) -> dict:
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


def step_ratio(task: str) -> float:
    """SMAC's effective step eta/lambda over the paper's AC-SGD eta on the same task (the step-size confound)."""
    smac, sgd = hparams.settings(task, "smac"), hparams.settings(task, "sgd")
    return smac["learning_rate"] / smac["damping"] / sgd["learning_rate"]


def per_task_data(d: Data, equiv: dict, res5: dict) -> list[dict]:
    """REPORT.md's per-task rows: SMAC, the best baseline, sgd-matched at the stage-1 budget ({mean, std}); SMAC -
    sgd-matched (normalized, paired; `answer` a word of EQUIV_WORDS); the step ratio; SMAC at 5M (MuJoCo, `kind`
    "same as stage 1" / "runs in" / "final") beside the paper's SMAC, the one pair of columns at the same budget."""
    by = by_cell(d.cells)
    at5 = {r["task"]: r for r in res5["table"] if r["algo"] == "smac"}

    def cell(r: Optional[dict]) -> Optional[dict]:
        return None if r is None else {"mean": r["mean"], "std": r["std"]}

    def equivalence(r: dict) -> Optional[dict]:
        if not r.get("n"):
            return None
        word = "equivalent" if r["equivalent"] else "different" if r["p"] < 0.05 else "not shown"
        return {"mean": r["mean"], "ci": list(r["ci"]), "answer": word, "n": r["n"]}

    def smac_5M(task: str) -> dict:
        if hparams.group(task) != "mujoco":
            return {"kind": "same as stage 1"}
        r = at5.get(task)
        if r is None:
            return {"kind": "runs in", "n": len(res5["done"].get((task, "smac"), [])), "of": 5}
        return {"kind": "final", "mean": r["mean"], "std": r["sd"], "p": r["p"]}

    rows = []
    for t in hparams.tasks():
        base = [by[(t, a)] for a in hparams.PAPER_ALGOS if a != "smac" and (t, a) in by]
        best = max(base, key=lambda r: r["mean"]) if base else None
        rows.append(
            {
                "task": t,
                "smac": cell(by.get((t, "smac"))),
                "best": None if best is None else {"algo": hparams.algo_label(best["algo"]), **cell(best)},
                "matched": cell(by.get((t, "sgd-matched"))),
                "equivalence": equivalence(equiv[t]),
                "step_ratio": step_ratio(t),
                "at_5M": smac_5M(t),
                "paper": list(hparams.paper_result(t, "smac")),
            }
        )
    return rows


STAGE1_SEEDS = 5  # seeds 1-5 per stage-1 cell, as the paper's table


def design() -> dict:
    """The study's fixed design as REPORT.md and grid.md state it: the stage-1 grid's size and reading, the
    protocol's bins and smoothing, the paper's seeds and budget, the equivalence margin, level and paired seeds."""
    reg = hparams.load()
    n_tasks, n_algos = len(hparams.tasks()), len(hparams.algos())
    from benchmark import prereg

    pre = prereg.load()
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
        "margin": EQUIV_MARGIN,
        "level": round(100 * pre["common"]["ci_level_tost"]),
        "paired_seeds": len(hparams.parse_seeds(pre["blocks"]["equivalence"]["seeds"])),
    }


def report_data(d: Data, equiv: dict, res5: dict) -> dict:
    """REPORT.md's own numbers (its verdict is verdict_data's): the stage-1 budgets, the paper's budget note, the
    per-task rows, which code and machines made each study's logs. The generation date is not data: write_report
    passes it to the template."""
    return {
        "design": design(),
        "budgets": budget_groups(),
        "paper_budget_note": aggregate.PAPER_BUDGET_NOTE,
        "per_task": per_task_data(d, equiv, res5),
        "provenance": provenance_data(study_logs()),
    }


LOGS_ROOTS = (  # the committed compact logs: a study per directory under each
    os.path.join(REPO, "benchmark", "results", "logs"),
    os.path.join(REPO, "benchmark", "results", "fidelity", "logs"),
)


def study_logs(roots=LOGS_ROOTS) -> list[str]:
    """The studies' log directories: benchmark/results/logs/<study> (the grid's readings, the 5M blocks, prereg, the
    ablations, the defaults sweep, kl_step) and the fidelity study's logs, each one study."""
    dirs = []
    for root in roots:
        if root.endswith(os.path.join("fidelity", "logs")):
            dirs.append(root)
            continue
        if os.path.isdir(root):
            dirs += sorted(
                os.path.join(root, d) for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
            )
    return dirs


def tallied(counts: Counter) -> list[list]:
    """[name, logs] pairs, the most logs first (then by name); "not recorded" last."""
    order = sorted(counts.items(), key=lambda kv: (kv[0] == provenance.NOT_RECORDED, -kv[1], kv[0]))
    return [[name, n] for name, n in order]


def provenance_data(dirs: list[str]) -> list[dict]:
    """Per study (a directory of compact logs, every level below it): its logs, and how many of them each commit
    (provenance.code_of: the short commit, "+ edits <diff hash>" when tracked sources differed) and each host (its
    name and CPU) made; a log made over several starts counts once for each. A log from before runs recorded this
    counts as "not recorded"; one that does not load is left out (the report names it where it reads it)."""
    rows = []
    for path in dirs:
        logs = sorted(glob.glob(os.path.join(path, "**", "seed*.json.gz"), recursive=True))
        commits, hosts, n = Counter(), Counter(), 0
        for log in logs:
            try:
                starts = compact.load(log)["provenance"]
            except compact.DamagedLog:
                continue
            n += 1
            if not starts:
                starts = [{"commit": provenance.NOT_RECORDED, "host": provenance.NOT_RECORDED}]
            for code in {provenance.code_of(s) for s in starts}:
                commits[code] += 1
            for host in {provenance.host_of(s) for s in starts}:
                hosts[host] += 1
        if n:
            rows.append(
                {
                    "study": os.path.relpath(path, REPO),
                    "logs": n,
                    "commits": tallied(commits),
                    "hosts": tallied(hosts),
                }
            )
    return rows


# ---------------------------------------------------------------------------------------------
# The verdict as data (verdict_data) and its rendering (benchmark/templates/verdict.md.j2)
# ---------------------------------------------------------------------------------------------
ALPHA = 0.05
TEMPLATES = os.path.join(REPO, "benchmark", "templates")
VERDICT_JSON = os.path.join(REPO, "benchmark", "results", "verdict.json")
README = os.path.join(REPO, "README.md")
README_MARKERS = ("<!-- results:begin -->", "<!-- results:end -->")
CLAIM_WORD = {  # a claim's verdict (aggregate.evaluate, aggregate.combined) as the verdict says it
    "held": "held",
    "direction only": "on direction only",
    "baseline never reaches it": "baseline never reaches it",
    "not held": "not held",
    "waiting": "not yet judged",
    "beyond budget": "beyond budget",
    "no runs": "no runs",
}
EQUIVALENT = f"equivalent at ±{EQUIV_MARGIN:g}"
DIFFERENT = "different (Holm)"
NOT_SHOWN = "not shown either way"
LITERAL_WORD = {  # prereg.analyze's literal_5M verdict
    "pending (runs not all in)": "not yet judged",
    "headline reproduced under the literal reading": "reproduced",
    "normalization caused the failure": "normalization caused the failure",
    "the literal reading does not rescue the headline": "not rescued",
}
DIAG_WORD = {"grows late in training": "grows", "shrinks": "shrinks", "no change shown": "no change shown"}
VOCAB = (  # every word an answer may use, in the order counts are listed
    *CLAIM_WORD.values(),
    EQUIVALENT,
    DIFFERENT,
    NOT_SHOWN,
    "secondary passes",
    "secondary fails",
    "different (Welch)",
    "below the paper's",
    "above the paper's",
    "not shown to differ",
    "reproduced",
    "not reproduced",
    *LITERAL_WORD.values(),
    "dose-response",
    "no dose-response detected",
    *DIAG_WORD.values(),
    # the notes a row's task may carry
    "both arms below the random policy",
    "SGD arm rerun to pair the seeds (amendment 1)",
    f"{EQUIVALENT} at the stage-1 budget",
)


def tally(words: list[str]) -> list[list]:
    """[[word, count], ...] in VOCAB's order, zeros left out."""
    by = Counter(words)
    return [[w, by[w]] for w in dict.fromkeys(VOCAB) if by[w]]


def tallied_row(row_id: str, numbers: dict, items: list[dict], link: str) -> dict:
    """A verdict row whose answer counts its items' answers (tally) out of how many there are."""
    answers = [r["answer"] for r in items]
    return {"id": row_id, "numbers": numbers, "answer": tally(answers), "of": len(answers), "links": [link]}


def block_c_word(r: dict) -> str:
    """A paired TOST row (prereg.paired plus p_holm): equivalent at the margin, different after Holm, or neither."""
    if r["equivalent"]:
        return EQUIVALENT
    return DIFFERENT if num(r.get("p_holm")) is not None and r["p_holm"] < ALPHA else NOT_SHOWN


def crossing_pair(
    task: str, algos: tuple, threshold: float, runs: list, windows: Optional[dict] = None
) -> dict:
    """{algo: the seed-mean crossing of `threshold` (None: never)} over `runs`, at windows[task] / 100 bins."""
    cells = aggregate.cell_curves([r for r in runs if r["task"] == task and r["algo"] in algos], windows)
    return {a: aggregate.seed_mean_crossing(cells[(task, a)], threshold) for a in algos if (task, a) in cells}


def bin_width(c: dict, other: bool) -> int:
    """The bin width of a claim's reading: its runs' budget / 100, the other reading's span / 100."""
    if other:
        return other_bin_widths()[c["task"]] // aggregate.N_BINS
    budget = aggregate.PAPER_BUDGET if c.get("at_5M") else aggregate.stage1_budget(c["task"])
    return budget // aggregate.N_BINS


def held_reading(c: dict, d: Data) -> dict:
    """Whether a held claim shows SMAC ahead, and the reason (a word the template knows) with its numbers.
    reach_by: another algorithm's milestone (SMAC's own final beside it) is not SMAC ahead ("another algorithm's
    milestone"), nor is SMAC reaching a rival's paper final that our rival reaches sooner in its stage-1 runs
    ("our rival first"; both crossings also at the paper's bin width). slower / faster: SMAC ahead where it is the
    faster algorithm and every one of its seeds crosses before every seed of the slower one at each bin width read
    ("every SMAC seed first"); a slower algorithm's crossing that only its seed mean makes (seeds that never cross)
    is given as `never`, since it weakens the ratio, not the order."""
    claim = next((x for x in aggregate.CLAIMS if x["id"] == c.get("id")), {})
    out = {
        "task": c["task"],
        "threshold": claim.get("threshold", c.get("threshold")),
        "ahead": False,
        "reason": None,
        "never": None,
    }
    if c["kind"] == "reach_by":
        if c["algo"] != "smac":
            smac = by_cell(d.cells).get((c["task"], "smac"))
            return {
                **out,
                "reason": "another algorithm's milestone",
                "algo": hparams.algo_label(c["algo"]),
                "step": c["steps"][0],
                "smac_final": smac["mean"] if smac else None,
            }
        rival = claim.get("rival")
        budget = aggregate.stage1_budget(c["task"])
        ours = crossing_pair(c["task"], ("smac", rival), claim["threshold"], d.runs) if rival else {}
        if ours.get(rival) is None or ours[rival] >= c["steps"][0]:
            return {**out, "ahead": True}
        paper = crossing_pair(
            c["task"], ("smac", rival), claim["threshold"], d.runs, {c["task"]: aggregate.PAPER_BUDGET}
        )
        return {
            **out,
            "reason": "our rival first",
            "rival": hparams.algo_label(rival),
            "step": c["steps"][0],
            "budget": budget,
            "bins": [budget // aggregate.N_BINS, aggregate.PAPER_BUDGET // aggregate.N_BINS],
            "rival_steps": [ours[rival], paper.get(rival)],
            "smac_steps": [ours.get("smac"), paper.get("smac")],
        }
    if c["kind"] not in ("slower", "faster"):
        return out
    slow_i = 0 if c["kind"] == "slower" else 1
    slow_algo = c["algo"] if c["kind"] == "slower" else c.get("ref", "smac")
    fast_algo = c.get("ref", "smac") if c["kind"] == "slower" else c["algo"]
    readings = [(row, bin_width(c, other)) for row, other in ((c, False), (c.get("other"), True))]
    readings = [(row, width) for row, width in readings if row and "per_seed" in row]

    def last(steps):  # a seed that never crosses comes after every seed that does
        return max(math.inf if t is None else t for t in steps)

    def first(steps):
        return min(math.inf if t is None else t for t in steps)

    separated = [
        row for row, _ in readings if last(row["per_seed"][1 - slow_i]) < first(row["per_seed"][slow_i])
    ]
    never = None
    for row, width in readings:
        n = sum(t is None for t in row["per_seed"][slow_i])
        if n and (never is None or n > never["n"]):
            t = row["steps"][slow_i]
            never = {
                "n": n,
                "of": len(row["per_seed"][slow_i]),
                "bin": width,
                "step": t,
                "end": t >= row["reach"],
            }
    out.update(slow=hparams.algo_label(slow_algo), never=never)
    if fast_algo == "smac" and readings and len(separated) == len(readings):
        seeds = readings[0][0]["per_seed"]
        span = {
            k: [min((t for t in s if t is not None), default=None), None if None in s else max(s)]
            for k, s in (("fast", seeds[1 - slow_i]), ("slow", seeds[slow_i]))
        }
        return {
            **out,
            "ahead": True,
            "reason": "every SMAC seed first",
            "bins": [w for _, w in readings],
            "smac_seeds": span["fast"],
            "slow_seeds": span["slow"],
        }
    return {**out, "reason": "seeds never cross" if never else None}


def rank1_figures(runs: list[dict]) -> list[dict]:
    """Per task where SMAC's λ ≤ 0.01, from its runs' per-update logs: the fraction of the step's ℓ̄-component the
    rank-1 term removes, ‖ℓ̄‖²/(λ + ‖ℓ̄‖²), and cos(g, step), each the median over a run's updates, then the median
    over runs [min, max]; and the smallest cos(g, step) of a single update."""
    out = []
    for task in hparams.tasks():
        damping = hparams.settings(task, "smac")["damping"]
        mine = [r for r in runs if r["task"] == task and r["algo"] == "smac"]
        if damping > 0.01 or not mine:
            continue
        ell = [r["updates"]["ell_sq"] for r in mine]
        removed = [float(np.nanmedian(e / (damping + e))) for e in ell]
        cos = [float(np.nanmedian(r["updates"]["cos_g_step"])) for r in mine]
        out.append(
            {
                "task": task,
                "damping": damping,
                "n": len(mine),
                "removed": (float(np.median(removed)), min(removed), max(removed)),
                "cos": (float(np.median(cos)), min(cos), max(cos)),
                "min_cos": min(float(np.nanmin(r["updates"]["cos_g_step"])) for r in mine),
            }
        )
    return out


def verdict_data(d: Data, pre: dict, stage1_equiv: dict, res5: dict, rank1: list[dict]) -> dict:
    """The verdict as data: {"design": the tests' settings, "rows": one per question (id, numbers, answer, links;
    the question and its test are the template's words, by id), "points": the numbers of at most five prose points}. Every answer is a word of VOCAB, or [[word, count], ...] (tally).
    stage1_equiv: {task: SMAC - sgd-matched paired over the stage-1 seeds 1-5}; pre: prereg.analyze; res5:
    prereg.analyze_5M; rank1: rank1_figures."""
    from benchmark import prereg

    rows = []
    # the paper's claims: under the rules fixed before the runs, then the stricter ones
    strict = [CLAIM_WORD[aggregate.combined(c)] for c in d.claims]
    five = [c for c in d.claims if c.get("at_5M")]
    rows.append(
        {
            "id": "claims",
            "numbers": {
                "n": len(d.claims),
                "pre_run": tally([CLAIM_WORD[pre_run_verdict(c)] for c in d.claims]),
                "at_5M": tally([CLAIM_WORD[aggregate.combined(c)] for c in five]),
                "n_5M": len(five),
                "at_5M_tasks": {
                    w: list(dict.fromkeys(c["task"] for c in five if CLAIM_WORD[aggregate.combined(c)] == w))
                    for w, _ in tally([CLAIM_WORD[aggregate.combined(c)] for c in five])
                },
                # the 5M claims no algorithm's seed mean reaches within 5M
                "at_5M_never": sum(bool(c.get("steps")) and all(t is None for t in c["steps"]) for c in five),
            },
            "answer": tally(strict),
            "links": ["report/claims.md"],
        }
    )
    # the table at matched budgets: classic control at ours (the paper states none), MuJoCo at 5M
    matched = [r for r in d.cells if r["comparable"] and num(r["p_vs_paper"]) is not None]
    table5 = res5["table"]
    smac5 = []
    for r in table5:
        if r["algo"] == "smac":
            side = "above the paper's" if r["mean"] > r["paper"][0] else "below the paper's"
            smac5.append(
                {
                    "task": r["task"],
                    "mean": r["mean"],
                    "paper": r["paper"][0],
                    "p": r["p"],
                    "answer": side if r["differs"] else "not shown to differ",
                }
            )
    order = {w: i for i, w in enumerate(VOCAB)}
    smac5.sort(key=lambda r: order[r["answer"]])
    classic_differ = sum(r["p_vs_paper"] < ALPHA for r in matched)
    mujoco_differ = sum(bool(r["differs"]) for r in table5)
    rows.append(
        {
            "id": "table",
            "numbers": {
                "cells": len(matched) + len(table5),
                "classic": {"cells": len(matched), "differ": classic_differ},
                "mujoco_5M": {"cells": len(table5), "differ": mujoco_differ},
                "smac_5M": smac5,
            },
            "answer": [["different (Welch)", classic_differ + mujoco_differ]],
            "links": ["report/grid.md", "report/mujoco_5M.md"],
        }
    )
    # the headline: HalfCheetah at 5M, SMAC vs AC-CG, and under the paper-literal reading
    cells5 = aggregate.load_cells(d.headline, budgets={"HalfCheetah": 5_000_000}) if d.headline else {}
    f5 = {
        a: [f for _, f, _ in cells5.get(("HalfCheetah", a), {"finished": []})["finished"]]
        for a in ("smac", "cg")
    }
    w5 = stats.welch_test(f5["smac"], f5["cg"])
    lit = pre["literal_5M"]
    wl = lit["smac_vs_cg"]
    rows.append(
        {
            "id": "headline",
            "numbers": {
                "smac": float(np.mean(f5["smac"])) if f5["smac"] else None,
                "cg": float(np.mean(f5["cg"])) if f5["cg"] else None,
                "p": w5["p"] if w5 else None,
                "paper": [hparams.paper_result("HalfCheetah", a)[0] for a in ("smac", "cg")],
                "literal": {
                    "smac": lit["smac"]["mean"],
                    "cg": lit["cg"]["mean"],
                    "p": wl["p"] if wl else None,
                    "answer": LITERAL_WORD[lit["verdict"]],
                },
            },
            "answer": "reproduced" if w5 and w5["diff"] > 0 and w5["p"] < ALPHA else "not reproduced",
            "links": ["report/mujoco_5M.md", "report/prereg.md"],
        }
    )
    # SMAC vs SGD with step eta/lambda at the stage-1 budget (exploratory), Holm over the tasks
    one = {t: r for t, r in stage1_equiv.items() if r.get("n")}
    p_holm = dict(zip(one, prereg.holm([r["p"] for r in one.values()])))
    stage1 = [{"task": t, "answer": block_c_word({**r, "p_holm": p_holm[t]})} for t, r in one.items()]
    budgets = aggregate.stage1_budgets()
    numbers = {
        "budgets": [min(budgets.values()), max(budgets.values())],
        "tasks": {
            w: [r["task"] for r in stage1 if r["answer"] == w]
            for w, _ in tally([r["answer"] for r in stage1])
        },
    }
    rows.append(tallied_row("sgd_stage1", numbers, stage1, "report/grid.md"))
    # ... at 5M (pre-registered, block C)
    eq5 = []
    one_eq = {r["task"] for r in stage1 if r["answer"] == EQUIVALENT}
    for r in res5["equivalence"]:
        word = block_c_word(r)
        notes = []
        if r["task"] == "HalfCheetah" and res5.get("halfcheetah_pairing", {}).get("paired"):
            notes.append("SGD arm rerun to pair the seeds (amendment 1)")
        if r["below_random"]:
            notes.append("both arms below the random policy")
        if r["task"] in one_eq and word != EQUIVALENT:
            notes.append(f"{EQUIVALENT} at the stage-1 budget")
        eq5.append(
            {
                "task": r["task"],
                "mean": r["mean"],
                "ci": list(r["ci"]),
                "answer": word,
                "reach_margin": r["reach_margin"],
                "reach_answer": "secondary passes" if r["equivalent_reach"] else "secondary fails",
                "notes": notes,
            }
        )
    eq5.sort(key=lambda r: order[r["answer"]])
    rows.append(tallied_row("sgd_5M", {"tasks": eq5}, eq5, "report/mujoco_5M.md"))
    # where the rank-1 term is largest: lambda = 0.01, 20 paired seeds; the lambda dose-response
    sl = pre["lambda"]["slope"]
    lams = list(pre["lambda"]["per_lambda"])
    decades = math.log10(max(lams) / min(lams)) if lams else math.nan
    largest = [
        {
            "task": r["task"],
            "n": r["n"],
            "mean": r["mean"],
            "ci": list(r["ci"]),
            "answer": block_c_word(r),
            "reach_margin": r["reach_margin"],
            "reach_answer": "secondary passes" if r["equivalent_reach"] else "secondary fails",
        }
        for r in pre["equivalence"]
    ]
    slope = {
        "task": "HalfCheetah",  # block 2 of benchmark/preregistration.toml
        "mean": sl.get("mean"),
        "ci": list(sl.get("ci", (None, None))),
        "p": sl.get("p"),
        "lambdas": [min(lams), max(lams)] if lams else [],
        "decades": decades,
        "span": [decades * x for x in sl["ci"]] if "ci" in sl else [None, None],
        "answer": "dose-response" if sl.get("p", 1.0) < ALPHA else "no dose-response detected",
    }
    rows.append(tallied_row("rank1", {"tasks": largest, "slope": slope}, largest, "report/prereg.md"))
    # ||l||^2 / lambda over the 5M runs (block D): first vs last fifth, medians over seeds
    diag = [
        {
            "task": r["task"],
            "damping": r["damping"],
            "first": float(np.median([x["first"]["ell_over_lambda"] for x in r["runs"]])),
            "last": float(np.median([x["last"]["ell_over_lambda"] for x in r["runs"]])),
            "last_max": max(x["last"]["ell_over_lambda"] for x in r["runs"]),
            "p": r["p"],
            "answer": DIAG_WORD[r["verdict"]],
        }
        for r in res5["diagnostics"]
    ]
    diag.sort(key=lambda r: r["damping"])
    rows.append(tallied_row("ell", {"tasks": diag}, diag, "report/mujoco_5M.md"))
    # the points: the held claims' readings; collapsed tasks; the step-size confound; the curvature effect
    held = [c for c in d.claims if aggregate.combined(c) == "held"]
    readings = [held_reading(c, d) for c in held]
    g = d.grid or {"agg": {}, "imp": {}}
    imp, iqm = g["imp"], {a: v["IQM"][0] for a, v in g["agg"].items()}
    ratios = [step_ratio(t) for t in hparams.tasks()]
    low = [r for r in res5["diagnostics"] if r["damping"] <= 0.01]
    points = {
        "held": {
            "n": len(held),
            "ahead": [r for r in readings if r["ahead"]],
            "not_ahead": [r for r in readings if not r["ahead"]],
            "n_ahead": sum(r["ahead"] for r in readings),
            "n_not_ahead": sum(not r["ahead"] for r in readings),
        },
        "below_random": [
            {
                "task": b["task"],
                "random": b["random"],
                "cells": [
                    {
                        "algo": ARM.get(c["algo"], hparams.algo_label(c["algo"])),
                        "mean": c["mean"],
                        "normalized": c["normalized"],
                        "peak_normalized": c["peak_normalized"],
                        "peak_step": c["peak_step"],
                    }
                    for c in b["cells"]
                ],
            }
            for b in res5["below_random"]
        ],
        "step_size": {
            "ratio": [min(ratios), max(ratios)],
            "p_vs_sgd": imp["sgd"][0] if "sgd" in imp else None,
            "p_vs_matched": imp["sgd-matched"][0] if "sgd-matched" in imp else None,
            "iqm": [iqm.get("smac"), iqm.get("sgd-matched")],
        },
        "curvature": {
            "equivalent": {
                "stage1": [len(one_eq), len(stage1)],
                "5M": [sum(r["answer"] == EQUIVALENT for r in eq5), len(eq5)],
            },
            "rank1": [
                {
                    "task": r["task"],
                    "damping": r["damping"],
                    "n": r["n"],
                    "removed": list(r["removed"]),
                    "cos": list(r["cos"]),
                    "min_cos": r["min_cos"],
                    "min_cos_5M": next(
                        (min(x["min_cos"] for x in b["runs"]) for b in low if b["task"] == r["task"]), None
                    ),
                }
                for r in rank1
            ],
            "late": [
                {
                    "task": r["task"],
                    "last": float(np.median([x["last"]["ell_over_lambda"] for x in r["runs"]])),
                }
                for r in low
            ],
        },
    }
    reg = prereg.load()
    design = {
        "claims": len(d.claims),
        "alpha": ALPHA,
        "margin": EQUIV_MARGIN,
        "seeds": STAGE1_SEEDS,
        "seeds_5M": len(hparams.parse_seeds(prereg.load_5M()["common"]["seeds"])),
        "paired_seeds": len(hparams.parse_seeds(reg["blocks"]["equivalence"]["seeds"])),
        "paired_budget": reg["blocks"]["equivalence"]["budget"],
        "damping": sorted(
            {hparams.settings(t, "smac")["damping"] for t in reg["blocks"]["equivalence"]["tasks"]}
        ),
        "mujoco_budget": aggregate.stage1_budget("Hopper"),
        "paper_budget": aggregate.PAPER_BUDGET,
    }
    return {"design": design, "rows": rows, "points": points}


def render_verdict(data: dict, base: str = "") -> str:
    """The verdict table and points (benchmark/templates/verdict.md.j2) from verdict_data's JSON; `base`: the
    links' prefix (README: "benchmark/")."""
    return pages.render("verdict.md.j2", data, base=base)


def write_readme(data: dict, path: str = README) -> bool:
    """README's Results block, between README_MARKERS, rendered from `data`; False where the markers are absent."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = README_MARKERS
    if begin not in text or end not in text:
        return False
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    new = f"{head}{begin}\n{render_verdict(data, base='benchmark/')}{end}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return True


def fidelity_data(
    logs_dir=hparams.FIDELITY_LOGS, results_dir=hparams.FIDELITY_RESULTS, write: bool = False
) -> dict:
    """The fidelity study for readings.md: the rule, the Adam check, every reading's score and per-claim verdicts
    (words of aggregate.evaluate), the finals, the choice, the Walker2d check; write: the study's CSVs first,
    before they are read. `has_runs` False: no fidelity runs (then only the rule and the Adam check)."""
    fid = hparams.FIDELITY_BUDGET
    out = {"budget": fid, "rule": aggregate.FIDELITY_RULE.splitlines(), "adam_check": None, "has_runs": False}
    check = os.path.join(results_dir, "adam_check.json")
    if os.path.isfile(check):
        with open(check) as f:
            c = json.load(f)
        out["adam_check"] = {
            "steps": c["adam_steps"],
            "max_change": c["max_param_change"],
            "bound": c["bound"],
            "last10": c["mean_return_last10"],
            "seed": c.get("seed", 1),
        }
    rows = aggregate.fidelity_score(logs_dir, results_dir, write=write)
    if not rows:
        return out
    verdicts = {}
    for r in sorted(os.listdir(logs_dir)):
        runs = compact.discover_logs(os.path.join(logs_dir, r))
        if runs:
            verdicts[r] = {v["id"]: v for v in aggregate.evaluate(runs, tasks=hparams.FIDELITY_TASKS)}
    names = [r["reading"] for r in rows]
    claims = [c for c in aggregate.CLAIMS if c["task"] in hparams.FIDELITY_TASKS]
    fin = {(r["reading"], r["task"], r["algo"]): r for r in read_csv(os.path.join(results_dir, "finals.csv"))}
    cols = [(t, a) for t in hparams.FIDELITY_TASKS for a in hparams.PAPER_ALGOS]
    chosen = aggregate.fidelity_choose(rows)
    stage1 = aggregate.stage1_budgets()[hparams.FIDELITY_TASKS[0]]
    whole_run = sorted(c["id"] for c in claims if c["kind"] == "never_above")
    ranked = sorted(rows, key=lambda r: -r["held"])  # best score first; ties in the study's order
    out.update(
        {
            "has_runs": True,
            "readings": [
                {
                    "reading": r["reading"],
                    "description": hparams.READINGS[r["reading"]][2]
                    if r["reading"] in hparams.READINGS
                    else None,
                    "union": None if r["reading"] in hparams.READINGS else r["reading"].split("+"),
                    "flags": r["flags"] or None,
                    "held": r["held"],
                    "evaluable": r["evaluable"],
                    "runs": r["runs"],
                    "diverged": r["diverged"],
                }
                for r in ranked
            ],
            "names": names,
            "claims": [
                {"id": c["id"], "verdicts": [verdicts[n][c["id"]]["verdict"] for n in names]} for c in claims
            ],
            "finals": None,
            "envs_caveat": any("envs-8" in n for n in names),
            "chosen": chosen,
            "stage1_budget": stage1,
            "bins": [fid // aggregate.N_BINS, stage1 // aggregate.N_BINS],
            "rescored": None,
            "walker2d_budget": aggregate.stage1_budgets()["Walker2d"],
            "walker2d": [],
        }
    )
    if fin:
        out["finals"] = {
            "columns": [
                {"task": t, "algo": hparams.algo_label(a), "paper": hparams.paper_result(t, a)[0]}
                for t, a in cols
            ],
            "rows": [
                {
                    "reading": n,
                    "finals": [num(fin[(n, t, a)]["final"]) if (n, t, a) in fin else None for t, a in cols],
                }
                for n in names
            ],
        }
    if whole_run:
        rest = aggregate.rescored(rows, verdicts, set(whole_run))
        rest_ranked = sorted(rest, key=lambda r: -r["held"])
        out["rescored"] = {
            "without": whole_run,
            "chosen": aggregate.fidelity_choose(rest),
            "scores": [[r["reading"], r["held"]] for r in rest_ranked],
        }
    for r in dict.fromkeys([chosen, "literal"]):
        grid_logs = os.path.join(REPO, "benchmark", "results", "logs", r)
        runs = compact.discover_logs(grid_logs) if os.path.isdir(grid_logs) else []
        runs = [x for x in runs if x["task"] == "Walker2d"]
        n = Counter(x["algo"] for x in runs)
        for v in aggregate.evaluate(runs, tasks=("Walker2d",)):
            out["walker2d"].append(
                {
                    "reading": r,
                    "claim": v["claim"],
                    "measured": v["measured"] or None,
                    "seeds": v["seeds"] or None,
                    "runs": [n["smac"], n["cg"]],
                    "verdict": v["verdict"],
                }
            )
    return out


def write_report(
    path: str = os.path.join(REPO, "benchmark", "REPORT.md"),
    logs_dir: Optional[str] = None,
    headline_dir: Optional[str] = None,
    results_dir: str = STAGE1,
    figures_dir: str = FIGURES,
    reps: int = 2000,
    write_fidelity: bool = False,
    verdict_json: Optional[str] = None,
) -> str:
    """REPORT.md and benchmark/report/*.md; write_fidelity: also the fidelity study's CSVs (the report command);
    verdict_json: where verdict_data's JSON goes (the report command: VERDICT_JSON; then also prereg.PAGE_5M_JSON,
    READINGS_JSON, DEVIATIONS_JSON and REPORT_JSON)."""
    from benchmark import prereg

    logs_dir = logs_dir or aggregate.stage1_logs()
    d = load(logs_dir, headline_dir, results_dir)
    reg5 = prereg.load_5M()
    res5 = prereg.analyze_5M(reg5)
    d.claims = evaluate_claims(d, res5["claims"])
    grid = compute(d.runs, results_dir=results_dir, figures_dir=figures_dir, reps=reps)
    d.cells, d.grid = grid["rows"], grid["aggregates"]
    if d.runs:
        figures(results_dir, figures_dir, d.runs)
    reg = prereg.load()
    pre = prereg.analyze(reg)
    # {task: paired comparison SMAC - sgd-matched} on normalized finals: the stage-1 seeds 1-5, and for the
    # pre-registered block 1 tasks its 20 paired seeds
    sc = prereg._scores([logs_dir])
    equiv = {
        t: prereg.paired(
            sc.get((t, "smac"), {}), sc.get((t, "sgd-matched"), {}), list(range(1, 6)), EQUIV_MARGIN
        )
        for t in hparams.tasks()
    }
    stage1_equiv = dict(equiv)  # 5 seeds on every task: the exploratory 1M result
    equiv.update({r["task"]: {**r, "prereg": True} for r in pre["equivalence"]})
    # benchmark/report/ for REPORT.md
    details = os.path.join(os.path.dirname(os.path.abspath(path)), "report")
    detail_pages = [
        (
            "prereg.md",
            "The pre-registered study",
            prereg.markdown(reg, pre, prereg.PAGE_PREREG_JSON if verdict_json else None),
        ),
        (
            "mujoco_5M.md",
            "The paper's budget: MuJoCo at 5M",
            prereg.markdown_5M(reg5, res5, prereg.PAGE_5M_JSON if verdict_json else None),
        ),
        (
            "grid.md",
            "The stage-1 grid: every cell, aggregates, orderings, SMAC vs SGD with step η/λ",
            grid_markdown(d, grid, GRID_JSON if verdict_json else None),
        ),
        (
            "claims.md",
            "The paper's timestep claims, claim by claim, and the 5M block",
            claims_markdown(d, logs_dir, CLAIMS_JSON if verdict_json else None),
        ),
        (
            "readings.md",
            "Which reading of the paper: the fidelity study and the earlier literal grid",
            [
                render_readings(
                    pages.committed(readings_data(d, write_fidelity), READINGS_JSON if verdict_json else None)
                )
            ],
        ),
        (
            "deviations.md",
            "Deviations from the paper",
            [
                pages.render(
                    "deviations.md.j2",
                    pages.committed(deviations_data(d), DEVIATIONS_JSON if verdict_json else None),
                )
            ],
        ),
    ]
    os.makedirs(details, exist_ok=True)
    for name, title, body in detail_pages:  # written for REPORT.md, links moved one directory down
        body = [
            line.replace("](../docs/", "](../../docs/").replace("](REPORT.md", "](../REPORT.md")
            for line in body
        ]
        with open(os.path.join(details, name), "w") as f:
            f.write(pages.render("page.md.j2", {"title": title, "body": "\n".join(body)}))
    # the rank-1 term's size where lambda <= 0.01: every SMAC run at the paper's row, stage 1 and block 1's seeds
    block1 = os.path.join(REPO, reg["blocks"]["equivalence"]["logs"])
    rank1 = rank1_figures(d.runs + (compact.discover_logs(block1) if os.path.isdir(block1) else []))
    data = pages.committed(verdict_data(d, pre, stage1_equiv, res5, rank1), verdict_json)
    own = pages.committed(report_data(d, equiv, res5), REPORT_JSON if verdict_json else None)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = pages.render("report.md.j2", own, date=date, verdict=render_verdict(data))
    with open(path, "w") as f:
        f.write(text)
    return text


def col(rows, name):
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
    """Issue 8, one row per task: return curves of SMAC and sgd-matched (mean ± std over seeds), then |l_bar|^2/lambda
    (log, dashed line at 1), cos(g, step) and the fraction of g/lambda removed by the rank-1 term (median and 10-90%
    band across seeds); cos is drawn as 1 - cos on a log axis (floored at 1e-9) so 0.9999 and 0.4 are both readable."""
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


def grid_plots(agg: dict, eff: dict, profile: dict, taus, tasks: list[str], figures_dir: str) -> None:
    algos = list(agg)
    label = f"tasks: {', '.join(tasks)}; 95 % stratified bootstrap CIs (rliable)"
    fig, axes = plt.subplots(1, len(aggregate.METRICS), figsize=(15, 3.2))
    for ax, name in zip(axes, aggregate.METRICS):
        for i, a in enumerate(algos):
            p, lo, hi = agg[a][name]
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


def stage1_data(c: dict) -> dict:
    """The stage-1 table and the aggregates from compute(): the runs counted (finished + diverged; `short`: those
    that stopped short, None where none), the seed range over cells ([n] where every cell has n), every task x
    algorithm cell (cell_data; the paper's value also where not run), the rliable aggregates (None until a task
    qualifies; `partial` where not every cell has its seeds, `n_div`: diverged runs, None where none)."""
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
    by = by_cell(c["rows"])
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
    }
    return out


def grid_data(d: Data, c: dict) -> dict:
    """Every number, list and word of report/grid.md: the stage-1 table and aggregates (stage1_data of compute's
    `c`), the orderings, the SMAC diagnostics."""
    return {**stage1_data(c), "ordering": ordering_data(d), "diagnostics": diagnostics_data(d)}


def grid_markdown(d: Data, c: dict, json_path: Optional[str] = None) -> list[str]:
    """report/grid.md's body: grid_data as JSON (to json_path where given) rendered by templates/grid.md.j2."""
    data = pages.committed(grid_data(d, c), json_path, PAGE_DIGITS)
    return [pages.render("grid.md.j2", data)]


def claims_markdown(d: Data, logs_dir: str, json_path: Optional[str] = None) -> list[str]:
    """report/claims.md's body: claims_data as JSON (to json_path where given) rendered by templates/claims.md.j2."""
    data = pages.committed(claims_data(d, logs_dir), json_path, PAGE_DIGITS)
    return [pages.render("claims.md.j2", data)]


def logs_report_data(logs_dir: str, n_runs: int, final: list[dict], pictures: list[str]) -> dict:
    """A report of any compact logs as data: the runs, the algorithms (the registry's order, then any other by
    name) and per task its budget and each algorithm's final {mean, std, n} (None: not run), the figures, which
    commits and hosts made the logs (provenance_data)."""
    algos = [a for a in hparams.algos() if any(r["algo"] == a for r in final)]
    algos += sorted({r["algo"] for r in final} - set(algos))
    cells = {(r["task"], r["algo"]): r for r in final}
    rows = []
    for task in dict.fromkeys(r["task"] for r in final):
        row = []
        for a in algos:
            r = cells.get((task, a))
            row.append(
                None
                if r is None
                else {"mean": num(r["final_mean"]), "std": num(r["final_std"]), "n": int(r["n_seeds"])}
            )
        budget = next(r["budget"] for r in final if r["task"] == task)
        rows.append({"task": task, "budget": int(budget), "cells": row})
    return {
        "logs": logs_dir,
        "runs": n_runs,
        "algos": [hparams.algo_label(a) if a in algorithms.REGISTRY else a for a in algos],
        "rows": rows,
        "figures": pictures,
        "provenance": provenance_data([logs_dir]),
    }


def logs_report(logs_dir: str, out_dir: str) -> str:
    """A report of any compact logs (a sweep of your own: any tasks, algorithms, readings, budgets) into out_dir:
    results/*.csv (aggregate.py's), the curve figures, results/report.json (logs_report_data) and REPORT.md
    (benchmark/templates/logs_report.md.j2) with the finals per task and algorithm."""
    runs = compact.discover_logs(logs_dir)
    if not runs:
        raise ValueError(
            f"--logs {logs_dir!r}: no compact logs there (the sweep writes them with --logs-dir)"
        )
    results = os.path.join(out_dir, "results")
    aggregate.aggregate(results_dir=results, runs=runs)
    figures(results, out_dir, runs)
    final = read_csv(os.path.join(results, "final.csv"))
    pictures = [f for f in sorted(os.listdir(out_dir)) if f.endswith(".png")]
    data = pages.committed(
        logs_report_data(logs_dir, len(runs), final, pictures), os.path.join(results, "report.json")
    )
    path = os.path.join(out_dir, "REPORT.md")
    with open(path, "w") as f:
        f.write(pages.render("logs_report.md.j2", data))
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description="Write REPORT.md (with benchmark/report/*.md, the stage-1 CSVs and the "
        "figures), report/kl_step.md, ABLATIONS.md (with its CSVs and figures), the fidelity study's CSVs and "
        "docs/defaults_sweep.csv from the committed compact logs; or, with --logs and --out-dir, a report of any "
        "compact logs into a directory of your own."
    )
    p.add_argument("--out", default=os.path.join(REPO, "benchmark", "REPORT.md"))
    p.add_argument(
        "--logs", default=None, help="compact logs to report on (a sweep's --logs-dir); needs --out-dir"
    )
    p.add_argument("--out-dir", default=None, help="with --logs: the directory the report is written to")
    args = p.parse_args(argv)
    if args.logs is not None or args.out_dir is not None:
        if args.logs is None or args.out_dir is None:
            print("error: --logs and --out-dir go together", file=sys.stderr)
            return 2
        try:
            os.makedirs(args.out_dir, exist_ok=True)
            print(f"wrote {logs_report(args.logs, args.out_dir)}")
        except (ValueError, KeyError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        hparams.load()
    except hparams.TableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_report(args.out, write_fidelity=True, verdict_json=VERDICT_JSON)
    print(f"wrote {args.out} and {VERDICT_JSON} (and the fidelity study's CSVs)")
    with open(VERDICT_JSON, encoding="utf-8") as f:
        if write_readme(json.load(f)):
            print(f"wrote {README}'s Results block")
    print(f"wrote {kl_step.write()}")
    abl = ablations.write_all()
    print(f"wrote {abl}" if abl else "no ablation compact logs: ABLATIONS.md left as it is")
    dfl = aggregate.write_defaults_csv()
    print(f"wrote {dfl}" if dfl else "no defaults-sweep compact logs: docs/defaults_sweep.csv left as it is")
    return 0


if __name__ == "__main__":
    sys.exit(main())
