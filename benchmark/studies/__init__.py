"""The lab's studies, one module each, and their registry.

A study is everything one question of the lab needs, in one module under benchmark/studies/:

    NAME             what `python -m benchmark.sweep --study NAME` runs; None: the study runs no jobs of its own
    PREREGISTRATION  the repo-relative path of the toml that fixed its rule before its runs; None: exploratory
    add_options(p)   (optional) its own flags on the sweep's argparse parser, e.g. the fidelity study's --readings
    SWEEP_OPTIONS    the sweep's study-dependent options (STUDY_OPTIONS, or another study's own) its jobs
                     honour, as argparse names them ("seeds", "extra_flags"); any other of them, given, is refused
    jobs(args)       its job list (sweep.Job) from the sweep's parsed flags; KeyError / ValueError on bad input
    command(job, state, run_dir) -> list[str] | None
                     (optional) the command line of one of its jobs that does not run the lab trainer (SB3's A2C),
                     None for any other job; such a job's flags are not the trainer's to check
    run(args)        (instead of jobs, optional) a study that measures in-process rather than through jobs;
                     returns an exit code
    analyze(where, done) -> result
                     its analysis of the committed compact logs: a dict (`where`: Where, the directories it reads and
                     writes, every one of them; `done`: {key: result} of the studies before it in REGISTRY); a study
                     with nothing to analyze (the toy MDP's, whose result its own command prints; the random policy's
                     CSV, which is the measurement; SB3's, whose finals the fidelity page reads) has no analyze and no
                     write
    write(result, where) -> list[str]
                     its page(s) rendered from the data (benchmark/templates/), and where.commit, the data as JSON
                     (benchmark/results/); returns the paths written
    verdict(result, done) -> dict
                     (optional) its part of the verdict: {"rows": [...], "points": {...}, "design": {...},
                     "summary": {...}} (benchmark/verdict.py puts the parts in the table's order; a row, point,
                     design key or summary part its ROWS, POINTS, DESIGN or SUMMARY does not list is an error)
    report(result, done) -> dict
                     (optional) its part of REPORT.md's own data (report.OWN lists the keys and their order)
    COMMITTED_ONLY   True: analyzed only by `python -m benchmark.report` over the committed logs, not by
                     report.write_report on other logs (a study that reads paths Where does not name)

The core (sweep.py, report.py, aggregate.py, verdict.py and every other module outside benchmark/studies/) imports
no study module and names no study's key: it reads the studies through this registry and the contract above
(tests/test_registry.py checks it with ast).

Its tests are tests/test_study_<key>.py. Adding a study: one module here (and its entry in REGISTRY), one template,
one pre-registration toml, one test file, and where it runs jobs or answers the verdict the lists named in
docs/harness.md ("Add ... a study"), which walks through the KL-step study and names every file a new study touches.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(REPO, "benchmark", "results")

# the sweep's options whose meaning is a study's (with every option a study adds in add_options): a study takes those
# it names in SWEEP_OPTIONS and its own; any other of them, given, is refused before anything runs
STUDY_OPTIONS = (
    "tasks",
    "algos",
    "seeds",
    "budget",
    "extra_flags",
    "runs_dir",
    "logs_dir",
    "checkpoint_every",
)

# the studies in the order the report analyzes them (a study reads the results of those before it)
REGISTRY = (
    "grid",
    "prereg",
    "mujoco_5M",
    "claims",
    "fidelity",
    "kl_step",
    "ablations",
    "defaults",
    "sb3",
    "random_policy",
    "toy_mdp",
)


@dataclass
class Where:
    """Where the studies read and write. The defaults are the committed files (the report command, with commit=True);
    a test or a report of one's own points them elsewhere."""

    root: str = REPO  # the repository whose committed logs the studies read where their tomls name them
    logs: str = ""  # the stage-1 compact logs ("": aggregate.stage1_logs())
    headline: str = ""  # the 5M block's compact logs ("": hyperparams.toml's [meta.headline] logs)
    results: str = os.path.join(RESULTS, "stage1")  # the stage-1 CSVs (aggregate.py's)
    figures: str = os.path.join(REPO, "docs", "figures")
    pages: str = os.path.join(REPO, "benchmark", "report")  # REPORT.md's detail pages
    reps: int = 2000  # bootstrap replicates of the aggregates
    commit: bool = False  # also write the committed JSON and the fidelity study's CSVs (the report command)


def modules() -> list[ModuleType]:
    """The study modules in REGISTRY's order."""
    return [importlib.import_module(f"benchmark.studies.{key}") for key in REGISTRY]


def key(study: ModuleType) -> str:
    """A study module's key: its module name (benchmark.studies.<key>)."""
    return study.__name__.rsplit(".", 1)[1]


def named() -> dict[str, ModuleType]:
    """{NAME: module} of the studies the sweep can run, in REGISTRY's order."""
    return {s.NAME: s for s in modules() if s.NAME is not None}


def job_command(job, state: str, run_dir: Optional[str]) -> Optional[list[str]]:
    """The command line a study supplies for one of its jobs (its `command`), or None: the job runs the lab trainer."""
    for study in modules():
        if hasattr(study, "command"):
            cmd = study.command(job, state, run_dir)
            if cmd is not None:
                return cmd
    return None
