"""Write benchmark/REPORT.md, its detail pages and README's Results block from the committed compact logs:
`python -m benchmark.report`.

The report is a loop over the lab's studies (benchmark/studies/, in their registry's order): each study analyzes
its logs (`analyze`), writes its page(s) (`write`) and answers its questions of the verdict (`verdict`);
benchmark/verdict.py puts the answers in the table's order. What is left here is the report's own page: the parts
of it the studies return (`report`: the per-task table, the stage-1 design and budgets, the line on the 5M runs) and
which code and machines made each study's logs. Every number comes from the committed logs or the paper's table
(benchmark/hyperparams.toml).

    python -m benchmark.report                               # the committed report, pages, JSON and README block
    python -m benchmark.report --logs DIR --out-dir OUT      # a report of any compact logs into OUT
"""

from __future__ import annotations

import argparse
import fnmatch
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
from benchmark.studies import Where  # noqa: E402

REPORT = os.path.join(REPO, "benchmark", "REPORT.md")
REPORT_JSON = os.path.join(REPO, "benchmark", "results", "report.json")
OWN = (
    "design",
    "budgets",
    "paper_budget_note",
    "per_task",
    "provenance",
    "mujoco_5M",
)  # REPORT.md's data, in order


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
    parts = [done[k]["verdict"] for k in done if "verdict" in done[k]]
    data = pages.committed(verdict.assemble(parts), verdict.VERDICT_JSON if where.commit else None)
    own = pages.committed(report_data(done), REPORT_JSON if where.commit else None)
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = pages.render("report.md.j2", own, date=date, verdict=verdict.render(data))
    with open(path, "w") as f:
        f.write(text)
    return text


def report_data(done: dict) -> dict:
    """REPORT.md's own numbers (its verdict is the studies'), in OWN's order: each study's part (its `report`, in the
    registry's order: the stage-1 design, budgets and the paper's budget note, the per-task rows, the line on the 5M
    runs) and which code and machines made each study's logs. A part OWN does not list is an error (ValueError
    naming it). The generation date is not data: write_report passes it to the template."""
    parts = {}
    for study in studies.modules():
        key = studies.key(study)
        if key in done and hasattr(study, "report"):
            parts.update(study.report(done[key], done))
    parts["provenance"] = provenance_data(study_logs())
    unlisted = [k for k in parts if k not in OWN]
    if unlisted:
        raise ValueError(f"a study's part of REPORT.md {unlisted[0]!r} is not in report.OWN: list it there")
    return {k: parts[k] for k in OWN if k in parts}


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


def tree_logs(top: str) -> list[str]:
    """Every seed*.json.gz under top, at any depth, following no directory link: a link (a loop, a link up or out
    of the logs would count logs again, or without end) is named in one line on stderr and left out."""
    found = []
    for here, dirs, files in os.walk(top):
        for d in dirs:
            link = os.path.join(here, d)
            if os.path.islink(link):
                print(
                    f"warning: {link}: a directory link ({os.readlink(link)}), not followed; left out",
                    file=sys.stderr,
                )
        found += [os.path.join(here, f) for f in files if fnmatch.fnmatch(f, "seed*.json.gz")]
    return sorted(found)


def provenance_data(dirs: list[str]) -> list[dict]:
    """Per study (a directory of compact logs, every level below it: tree_logs): its logs, and how many of them each
    commit (provenance.code_of: the short commit, "+ edits <diff hash>" when tracked sources differed) and each host
    (its name and CPU) made; a log made over several starts counts once for each. A log from before runs recorded this
    counts as "not recorded"; one that does not load is left out (the report names it where it reads it)."""
    rows = []
    for path in dirs:
        logs = tree_logs(path)
        commits, hosts, n = Counter(), Counter(), 0
        for log in logs:
            try:
                starts = compact.load_found(log)["provenance"]
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
