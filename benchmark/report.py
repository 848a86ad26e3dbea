"""Write benchmark/REPORT.md, its detail pages and README's Results block from the committed compact logs:
`python -m benchmark.report`.

The report is a loop over the lab's studies (benchmark/studies/, in their registry's order): each study analyzes
its logs (`analyze`), writes its page(s) (`write`) and answers its questions of the verdict (`verdict`);
benchmark/verdict.py puts the answers in the table's order. What is left here is the report's own page: the
per-task table, the deviations from the paper and which code and machines made each study's logs. Every number
comes from the committed logs or the paper's table (benchmark/hyperparams.toml).

    python -m benchmark.report                               # the committed report, pages, JSON and README block
    python -m benchmark.report --logs DIR --out-dir OUT      # a report of any compact logs into OUT
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from collections import Counter
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import aggregate, algorithms, compact, figures, hparams, pages, provenance, studies, verdict  # noqa: E402
from benchmark.stats import num, read_csv  # noqa: E402
from benchmark.studies import Where, mujoco_5M  # noqa: E402
from benchmark.studies.grid import budget_groups, design, step_ratio  # noqa: E402

REPORT = os.path.join(REPO, "benchmark", "REPORT.md")
DEVIATIONS_JSON = os.path.join(REPO, "benchmark", "results", "deviations.json")
REPORT_JSON = os.path.join(REPO, "benchmark", "results", "report.json")
EQUIV_WORDS = ("equivalent", "different", "not shown")  # the per-task table's paired TOST column
AT_5M_KINDS = ("same as stage 1", "runs in", "final")  # the per-task table's SMAC-at-5M column


def analyze(where: Where) -> dict:
    """{key: result} of every study in the registry's order: its analysis, and its part of the verdict under
    "verdict" (a study reads the results of those before it). The studies marked COMMITTED_ONLY run only when
    where.commit (the report command over the committed logs)."""
    done = {}
    for study in studies.modules():
        if not hasattr(study, "analyze") or (study.COMMITTED_ONLY and not where.commit):
            continue
        key = studies.key(study)
        done[key] = study.analyze(where, done)
        if hasattr(study, "verdict"):
            done[key]["verdict"] = study.verdict(done[key], done)
    return done


def write_report(path: str = REPORT, where: Optional[Where] = None) -> str:
    """REPORT.md at `path`, every study's page(s) and, where.commit, their JSON (benchmark/results/). Returns
    REPORT.md's text."""
    where = where or Where()
    done = analyze(where)
    for study in studies.modules():
        if studies.key(study) in done:
            study.write(done[studies.key(study)], where)
    grid = done["grid"]["data"]
    pages.write_page(
        where.pages,
        "deviations.md",
        "Deviations from the paper",
        [
            pages.render(
                "deviations.md.j2",
                pages.committed(deviations_data(grid), DEVIATIONS_JSON if where.commit else None),
            )
        ],
    )
    parts = [done[k]["verdict"] for k in done if "verdict" in done[k]]
    data = pages.committed(verdict.assemble(parts), verdict.VERDICT_JSON if where.commit else None)
    own = pages.committed(report_data(done), REPORT_JSON if where.commit else None)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = pages.render("report.md.j2", own, date=date, verdict=verdict.render(data))
    with open(path, "w") as f:
        f.write(text)
    return text


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


def per_task_data(d, equiv: dict, res5: dict) -> list[dict]:
    """REPORT.md's per-task rows: SMAC, the best baseline, sgd-matched at the stage-1 budget ({mean, std}); SMAC -
    sgd-matched (normalized, paired; `answer` a word of EQUIV_WORDS); the step ratio; SMAC at 5M (MuJoCo, `kind`
    "same as stage 1" / "runs in" / "final") beside the paper's SMAC, the one pair of columns at the same budget."""
    by = aggregate.by_cell(d.cells)
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


def report_data(done: dict) -> dict:
    """REPORT.md's own numbers (its verdict is the studies'): the stage-1 budgets, the paper's budget note, the
    per-task rows, which code and machines made each study's logs. The per-task paired comparisons are the grid
    study's (the stage-1 seeds 1-5) and, for the tasks of its block 1, the pre-registered study's (20 paired seeds).
    The generation date is not data: write_report passes it to the template."""
    equiv = dict(done["grid"]["equiv"])
    equiv.update({r["task"]: {**r, "prereg": True} for r in done["prereg"]["pre"]["equivalence"]})
    return {
        "design": design(),
        "budgets": budget_groups(),
        "paper_budget_note": aggregate.PAPER_BUDGET_NOTE,
        "per_task": per_task_data(done["grid"]["data"], equiv, done["mujoco_5M"]["res5"]),
        "provenance": provenance_data(study_logs()),
        "mujoco_5M": mujoco_5M.details(done["mujoco_5M"]),
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


def logs_report_data(logs_dir: str, n_runs: int, final: list[dict], pictures: list[str]) -> dict:
    """A report of any compact logs as data: the runs, the algorithms (the registry's order, then any other by
    name) and per task its budget and each algorithm's final {mean, std, n} (None: not run), the figures, which
    commits and hosts made the logs (provenance_data)."""
    algos = [a for a in hparams.algos() if any(r["algo"] == a for r in final)]
    algos += sorted({r["algo"] for r in final} - set(algos))
    cells = aggregate.by_cell(final)
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
    figures.figures(results, out_dir, runs)
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
        description="Write REPORT.md, every study's page(s) and data (benchmark/report/, benchmark/results/, "
        "ABLATIONS.md, docs/defaults_sweep.csv, the figures) and README's Results block from the committed compact "
        "logs; or, with --logs and --out-dir, a report of any compact logs into a directory of your own."
    )
    p.add_argument("--out", default=REPORT)
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
    write_report(args.out, Where(commit=True))
    print(f"wrote {args.out}, every study's pages and {verdict.VERDICT_JSON}")
    with open(verdict.VERDICT_JSON, encoding="utf-8") as f:
        if verdict.write_readme(json.load(f)):
            print(f"wrote {verdict.README}'s Results block")
    return 0


if __name__ == "__main__":
    sys.exit(main())
