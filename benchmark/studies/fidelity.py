"""The fidelity study: which reading of what the paper leaves unsaid (observation, reward and advantage
normalization, the batch's split into minibatches and epochs, the activation, parallel environments) reproduces most
of the paper's own classic-control claims? Every reading keeps the paper's hyper-parameter rows and changes one
paper-silent choice; 3 seeds x 150k steps on Acrobot and CartPole with the paper's five algorithms, scored by
FIDELITY_RULE, written before any of its runs (the study's pre-registration: the rule is in this module, not a toml).

    python -m benchmark.sweep --study fidelity [--readings norm,relu]   # the runs (resumable)
    python -m benchmark.studies.fidelity score                          # scores.csv, claims.csv, finals.csv
    python -m benchmark.studies.fidelity adam-check                     # the Adam argument, measured
    python -m benchmark.studies.fidelity rule                           # the rule, as written before the runs

Its compact logs are committed under benchmark/results/fidelity/logs/<reading>. Its page, report/readings.md, also
holds the earlier literal grid (3 seeds x 300k steps, benchmark/results/grid_300k/) beside the stage-1 runs over
the same first steps: the two readings, literal and norm, cell by cell. Committing, the report writes the study's
CSVs (benchmark/results/fidelity/) and benchmark/results/readings.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections import Counter
from typing import Optional

import numpy as np

from benchmark import aggregate, compact, hparams, pages, stats
from benchmark.protocol import across_seeds
from benchmark.stats import num, read_csv, write_csv
from benchmark.studies import REPO
from benchmark.studies import claims as claims_study

NAME = "fidelity"
# the sweep's options its jobs honour (besides --readings)
SWEEP_OPTIONS = ("seeds", "budget", "runs_dir", "logs_dir")
PREREGISTRATION = None  # the rule, FIDELITY_RULE below, was written before any fidelity run
COMMITTED_ONLY = False

LOGS = hparams.FIDELITY_LOGS
RESULTS = hparams.FIDELITY_RESULTS  # scores.csv, claims.csv, finals.csv, adam_check.json
GRID_300K = os.path.join(REPO, "benchmark", "results", "grid_300k")
READINGS_JSON = os.path.join(REPO, "benchmark", "results", "readings.json")
READING_WORDS = ("ahead", "behind", "not distinguishable", "not tested")  # norm vs literal: reading_verdict
PAGE_TITLE = "Which reading of the paper: the fidelity study and the earlier literal grid"

# The rule was written before any fidelity run; the runs and the score follow it, not the other way round.
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


# ---- the job list
def add_options(parser: argparse.ArgumentParser) -> None:
    """--readings: which readings the sweep runs."""
    parser.add_argument(
        "--readings", default="all", help="fidelity: comma list of readings (a+b for a union) or all"
    )


def jobs(args) -> list:
    """The study's jobs from the sweep's flags (--readings, --seeds, --budget, --runs-dir, --logs-dir)."""
    from benchmark import sweep

    logs = sweep.logs_dir_of(args, hparams.FIDELITY_LOGS)
    readings = sweep._names(args.readings) or list(hparams.READINGS)
    for r in readings:
        hparams.reading_flags(r)
    budget = int(args.budget or hparams.FIDELITY_BUDGET)
    seeds = hparams.parse_seeds(args.seeds or hparams.FIDELITY_SEEDS)
    return fidelity_jobs(readings, seeds, budget, args.runs_dir, logs)


def fidelity_jobs(
    readings,
    seeds,
    budget=hparams.FIDELITY_BUDGET,
    runs_dir=None,
    logs_dir=hparams.FIDELITY_LOGS,
    tasks=hparams.FIDELITY_TASKS,
    algos=hparams.PAPER_ALGOS,
) -> list:
    """The grid of `tasks` x `algos` once per reading, its flags added."""
    from benchmark import sweep

    runs_dir = runs_dir or f"{sweep.DEFAULT_RUNS}_fidelity"
    return [
        j
        for r in readings
        for j in sweep.make_jobs(
            list(tasks),
            list(algos),
            seeds,
            {t: budget for t in tasks},
            os.path.join(runs_dir, r),
            extra_flags=hparams.reading_flags(r),
            logs_dir=sweep.logs_under(logs_dir, r),
            tag=r,
        )
    ]


# ---- the score, the rule's choice, the Adam check
def _final_rows(reading: str, runs: list[dict]) -> list[dict]:
    """finals.csv's rows of one reading: per cell the seed-mean's final and peak, and each seed's final."""
    rows = []
    for (task, algo), (_, curves, _) in sorted(aggregate.cell_curves(runs).items()):
        mean = across_seeds(curves)[0]
        rows.append(
            {
                "reading": reading,
                "task": task,
                "algo": algo,
                "seeds": len(curves),
                "final": f"{mean[-1]:.4g}",
                "peak": f"{np.nanmax(mean):.4g}",
                "finals_per_seed": ";".join(f"{c[-1]:.4g}" for c in curves),
            }
        )
    return rows


def fidelity_score(logs_dir=LOGS, results_dir=RESULTS, write=True) -> list[dict]:
    """Evaluate every classic-control claim for every reading with logs; write scores.csv and claims.csv."""
    rows, claim_rows, final_rows = [], [], []
    for r in sorted(os.listdir(logs_dir)) if os.path.isdir(logs_dir) else []:
        runs = compact.discover_logs(os.path.join(logs_dir, r))
        if not runs:
            continue
        verdicts = claims_study.evaluate(runs, tasks=hparams.FIDELITY_TASKS)
        rows.append(
            {
                "reading": r,
                "flags": " ".join(hparams.reading_flags(r)),
                "changes": hparams.READINGS[r][1] if r in hparams.READINGS else len(r.split("+")),
                "held": sum(v["verdict"] == "held" for v in verdicts),
                "evaluable": sum(v["verdict"] in ("held", "not held") for v in verdicts),
                "runs": len(runs),
                "diverged": sum(x["status"] == "diverged" for x in runs),
            }
        )
        claim_rows += [{"reading": r, **{k: v[k] for k in CLAIM_COLUMNS}} for v in verdicts]
        final_rows += _final_rows(r, runs)
    if write and rows:
        for name, data in (("scores.csv", rows), ("claims.csv", claim_rows), ("finals.csv", final_rows)):
            write_csv(os.path.join(results_dir, name), data)
    return rows


def rescored(rows: list[dict], verdicts: dict, drop: set) -> list[dict]:
    """The score rows with "held" recounted from verdicts ({reading: {claim id: row}}) without the claims in drop."""
    return [
        {
            **r,
            "held": sum(
                v["verdict"] == "held" for cid, v in verdicts[r["reading"]].items() if cid not in drop
            ),
        }
        for r in rows
    ]


def steps_per_rollout(name: str) -> int:
    """Actor steps per rollout of a reading: minibatches x epochs."""
    flags = hparams.reading_flags(name)
    return math.prod(
        int(flags[flags.index(f) + 1]) if f in flags else 1 for f in ("--num-minibatches", "--update-epochs")
    )


def fidelity_choose(rows: list[dict]) -> str:
    """The rule's choice among scored readings."""
    order = list(hparams.READINGS)

    def rank(r: dict) -> tuple:
        return (
            -r["held"],
            r["changes"],
            steps_per_rollout(r["reading"]),
            order.index(r["reading"]) if r["reading"] in order else len(order),
        )

    best = min(rows, key=rank)
    literal = next((r for r in rows if r["reading"] == "literal"), None)
    return "literal" if literal and best["held"] <= literal["held"] else best["reading"]


def adam_check(budget: int = 111_000, seed: int = 1) -> dict:
    """Run the paper's CartPole AC-Adam row (paper-literal) and measure how far the actor moved:
    max |theta - theta_0| over parameters against the bound 3.2 * eta * (number of Adam steps)."""
    import torch

    from benchmark import trainer

    with tempfile.TemporaryDirectory() as tmp:
        assert (
            trainer.main(
                hparams.lookup("CartPole", "adam")
                + [
                    "--total-timesteps",
                    str(budget),
                    "--seed",
                    str(seed),
                    "--runs-dir",
                    tmp,
                    "--no-tensorboard",
                ]
            )
            == 0
        )
        run = os.path.join(tmp, os.listdir(tmp)[0])
        ckpt = trainer.load_checkpoint(run)  # weights_only: loading runs no code
        args = trainer.args_from_checkpoint(ckpt["args"])
        torch.manual_seed(args.seed)  # the trainer's initialization, rebuilt
        init = trainer.Actor(4, 2, True, args.hidden_sizes, args.log_std_init, args.activation)
        moved = max((ckpt["actor"][k] - v).abs().max().item() for k, v in init.state_dict().items())
        summary = json.load(open(os.path.join(run, "summary.json")))
    return {
        "seed": seed,
        "adam_steps": ckpt["update"],
        "eta": args.learning_rate,
        "max_param_change": moved,
        "bound": 3.2 * args.learning_rate * ckpt["update"],
        "mean_return_last10": summary["mean_return_last10"],
    }


# ---- the fidelity study's part of readings.md
def _adam_check_data(results_dir: str) -> Optional[dict]:
    """adam_check.json's numbers as the page prints them; None without it."""
    check = os.path.join(results_dir, "adam_check.json")
    if not os.path.isfile(check):
        return None
    with open(check) as f:
        c = json.load(f)
    return {
        "steps": c["adam_steps"],
        "max_change": c["max_param_change"],
        "bound": c["bound"],
        "last10": c["mean_return_last10"],
        "seed": c.get("seed", 1),
    }


def _reading_data(r: dict) -> dict:
    """One reading's row of the scores table."""
    return {
        "reading": r["reading"],
        "description": hparams.READINGS[r["reading"]][2] if r["reading"] in hparams.READINGS else None,
        "union": None if r["reading"] in hparams.READINGS else r["reading"].split("+"),
        "flags": r["flags"] or None,
        "held": r["held"],
        "evaluable": r["evaluable"],
        "runs": r["runs"],
        "diverged": r["diverged"],
    }


def _finals_data(names: list[str], results_dir: str) -> Optional[dict]:
    """The finals table (finals.csv): a column per task x algorithm with the paper's final, a row per reading;
    None without finals.csv."""
    fin = {(r["reading"], r["task"], r["algo"]): r for r in read_csv(os.path.join(results_dir, "finals.csv"))}
    if not fin:
        return None
    cols = [(t, a) for t in hparams.FIDELITY_TASKS for a in hparams.PAPER_ALGOS]
    return {
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


def _walker2d_data(chosen: str, root: str = REPO) -> list[dict]:
    """The Walker2d claims on the stage-1 grid's runs (under root) under the chosen reading and the literal one."""
    out = []
    for r in dict.fromkeys([chosen, "literal"]):
        grid_logs = os.path.join(root, "benchmark", "results", "logs", r)
        runs = compact.discover_logs(grid_logs) if os.path.isdir(grid_logs) else []
        runs = [x for x in runs if x["task"] == "Walker2d"]
        n = Counter(x["algo"] for x in runs)
        for v in claims_study.evaluate(runs, tasks=("Walker2d",)):
            out.append(
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


def _verdicts(logs_dir: str) -> dict:
    """{reading: {claim id: claims_study.evaluate row}} of every reading with logs."""
    verdicts = {}
    for r in sorted(os.listdir(logs_dir)):
        runs = compact.discover_logs(os.path.join(logs_dir, r))
        if runs:
            verdicts[r] = {v["id"]: v for v in claims_study.evaluate(runs, tasks=hparams.FIDELITY_TASKS)}
    return verdicts


def fidelity_data(logs_dir=LOGS, results_dir=RESULTS, write: bool = False, root: str = REPO) -> dict:
    """The fidelity study for readings.md: the rule, the Adam check, every reading's score and per-claim verdicts
    (words of claims_study.evaluate), the finals, the choice, the Walker2d check; write: the study's CSVs first,
    before they are read; root: the repository of the grid's logs. `has_runs` False: no fidelity runs (then only the
    rule and the Adam check)."""
    fid = hparams.FIDELITY_BUDGET
    out = {"budget": fid, "rule": FIDELITY_RULE.splitlines(), "adam_check": None, "has_runs": False}
    out["adam_check"] = _adam_check_data(results_dir)
    rows = fidelity_score(logs_dir, results_dir, write=write)
    if not rows:
        return out
    verdicts = _verdicts(logs_dir)
    names = [r["reading"] for r in rows]
    claims = [c for c in claims_study.CLAIMS if c["task"] in hparams.FIDELITY_TASKS]
    chosen = fidelity_choose(rows)
    stage1 = aggregate.stage1_budgets()[hparams.FIDELITY_TASKS[0]]
    whole_run = sorted(c["id"] for c in claims if c["kind"] == "never_above")
    ranked = sorted(rows, key=lambda r: -r["held"])  # best score first; ties in the study's order
    out.update(
        {
            "has_runs": True,
            "readings": [_reading_data(r) for r in ranked],
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
    out["finals"] = _finals_data(names, results_dir)
    if whole_run:
        rest = rescored(rows, verdicts, set(whole_run))
        rest_ranked = sorted(rest, key=lambda r: -r["held"])
        out["rescored"] = {
            "without": whole_run,
            "chosen": fidelity_choose(rest),
            "scores": [[r["reading"], r["held"]] for r in rest_ranked],
        }
    out["walker2d"] = _walker2d_data(chosen, root)
    return out


# ---- the earlier literal grid beside the stage-1 runs: literal against norm, cell by cell
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


def literal_vs_norm(d, grid_300k: str = GRID_300K) -> tuple[int, dict]:
    """reading_pairs of the earlier literal grid (its CSVs in grid_300k) and the stage-1 runs (d: the grid study's
    Data), computed once per report (cached on d.readings)."""
    if d.readings is None:
        d.readings = reading_pairs(aggregate.by_cell(read_csv(os.path.join(grid_300k, "final.csv"))), d.runs)
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
    """norm vs literal on one cell: a word of READING_WORDS, 'ahead' / 'behind' (Welch p < 0.05),
    'not distinguishable', or 'not tested' (no Welch test: fewer than 2 seeds on a side)."""
    if row["p"] is None or row["p"] >= 0.05:
        return "not tested" if row["p"] is None else "not distinguishable"
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


def _pairs_data(span: int, pairs: dict) -> dict:
    """The stage-1 `norm` runs over the literal grid's first steps (same protocol), beside it: the table and each
    algorithm's tasks by reading_verdict."""
    algos = ("smac",) + tuple(a for a in hparams.algos() if a != "smac")
    return {
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


def grid_300k_data(d, grid_300k: str = GRID_300K) -> Optional[dict]:
    """The earlier literal grid (3 seeds x 300k steps, its CSVs in grid_300k) and the stage-1 runs over its first
    steps beside it (`pairs`: None without them); `sb3`: the SB3 A2C reference rows (None without them). None: no
    grid."""
    final = aggregate.by_cell(read_csv(os.path.join(grid_300k, "final.csv")))
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
    span, pairs = literal_vs_norm(d, grid_300k)
    if pairs:
        out["pairs"] = _pairs_data(span, pairs)
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


def readings_data(d, write: bool = False, root: str = REPO) -> dict:
    """readings.md's data: the fidelity study (fidelity_data; write: its CSVs) and the earlier literal grid, from
    the committed files under root (the repository's by default)."""

    def under(path: str) -> str:
        return os.path.join(root, os.path.relpath(path, REPO))

    fidelity = fidelity_data(under(LOGS), under(RESULTS), write=write, root=root)
    return {"fidelity": fidelity, "grid_300k": grid_300k_data(d, under(GRID_300K))}


# ---- the study's contract
def analyze(where, done: dict) -> dict:
    """readings.md's data on the grid study's stage-1 runs (done["grid"]["data"]: a Data with .runs and the
    .readings cache) and the committed files under where.root; committing (where.commit), the fidelity CSVs are
    written first. {"readings": readings_data}."""
    return {"readings": readings_data(done["grid"]["data"], write=where.commit, root=where.root)}


def write(result: dict, where) -> list[str]:
    """report/readings.md, and where.commit, benchmark/results/readings.json."""
    return pages.write_study_page(where, "readings.md", PAGE_TITLE, result["readings"], READINGS_JSON)


# ---- command line
def main(argv=None) -> int:
    """score: the readings' scores and the rule's choice (writes the CSVs); adam-check: the Adam argument, measured
    (adam_check.json); rule: the rule as written."""
    p = argparse.ArgumentParser(
        prog="python -m benchmark.studies.fidelity", description="score the fidelity study's readings"
    )
    p.add_argument("cmd", choices=["score", "adam-check", "rule"])
    cmd = p.parse_args(argv).cmd
    if cmd == "rule":
        print(FIDELITY_RULE)
    elif cmd == "adam-check":
        res = adam_check()
        os.makedirs(RESULTS, exist_ok=True)
        with open(os.path.join(RESULTS, "adam_check.json"), "w") as f:
            json.dump(res, f, indent=2)
        print(res)
    else:
        rows = fidelity_score()
        for r in rows:
            print(
                f"{r['reading']:28s} held {r['held']}/{r['evaluable']}  runs {r['runs']}  diverged {r['diverged']}"
            )
        if rows:
            print(f"chosen by the rule: {fidelity_choose(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
