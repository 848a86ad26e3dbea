"""Every study's job list as the sweep builds it, reduced to a digest per command: what `--dry-run` lists. The
committed digests (tests/data/study_jobs.json) were made by the sweep before the studies moved into
benchmark/studies/; test_sweep_done checks the sweep still builds the same jobs. Run as a script to print the
digests of this checkout: python tests/study_jobs.py"""

import hashlib
import json
import os
import sys
from dataclasses import asdict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGE1 = "classic=500000,mujoco=1000000,Pendulum=2000000"
L = "benchmark/results/logs"
COMMANDS = {  # the committed studies' commands and each study's defaults and options
    "grid (defaults)": [],
    "grid (norm)": ["--reading", "norm", "--seeds", "1-5", "--budget", STAGE1, "--logs-dir", f"{L}/norm"],
    "grid (literal)": [
        "--tasks",
        "Walker2d",
        "--algos",
        "smac",
        "--seeds",
        "1,2",
        "--logs-dir",
        f"{L}/literal",
    ],
    "grid (5M headline)": [
        "--reading",
        "norm",
        "--seeds",
        "1-5",
        "--tasks",
        "HalfCheetah",
        "--algos",
        "smac,cg",
    ]
    + ["--budget", "5000000", "--logs-dir", f"{L}/norm_5M"],
    "grid (KL step's command)": ["--reading", "norm", "--seeds", "1-5", "--tasks", "CartPole,Pendulum,Hopper"]
    + [",HalfCheetah", "--algos", "smac", "--budget", STAGE1, "--extra-flags", "--target-kl 0.01"]
    + ["--logs-dir", f"{L}/kl_step"],
    "mujoco-5M": ["--study", "mujoco-5M"],
    "prereg": ["--study", "prereg"],
    "prereg (equivalence)": ["--study", "prereg", "--blocks", "equivalence"],
    "ablations": ["--study", "ablations"],
    "ablations (fisher)": ["--study", "ablations", "--sections", "fisher"],
    "defaults": ["--study", "defaults"],
    "fidelity": ["--study", "fidelity"],
    "fidelity (norm+envs-8)": ["--study", "fidelity", "--readings", "norm+envs-8"],
    "sb3": ["--study", "sb3"],
}


def argv_of(name: str) -> list[str]:
    argv = COMMANDS[name]
    if name == "grid (KL step's command)":  # one --tasks value, split above only to keep lines short
        i = argv.index(",HalfCheetah")
        argv = argv[: i - 1] + [argv[i - 1] + argv[i]] + argv[i + 1 :]
    return argv + ["--runs-dir", "runs"]


def digest(jobs) -> str:
    """sha256 of the jobs as JSON, paths relative to the repository, the interpreter left out."""
    rows = []
    for job in jobs:
        row = asdict(job)
        row.pop("python")
        for key in ("seed_dir", "logs_dir", "extend_from"):
            if row[key] is not None:
                row[key] = os.path.relpath(row[key], REPO)
        rows.append(row)
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def digests() -> dict:
    """{command name: [number of jobs, digest]}, run from the repository root."""
    from benchmark import sweep

    out = {}
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        for name in COMMANDS:
            jobs = sweep.study_jobs(sweep.build_parser().parse_args(argv_of(name)))
            out[name] = [len(jobs), digest(jobs)]
    finally:
        os.chdir(cwd)
    return out


if __name__ == "__main__":
    sys.path.insert(0, REPO)
    print(json.dumps(digests(), indent=1))
