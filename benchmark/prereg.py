"""The pre-registered blocks of issue 27 (benchmark/preregistration.toml) as job lists for the sweep's runner.

    python -m benchmark.prereg run --workers 2     # every block, in the pre-registered order; resumable
    python -m benchmark.prereg run --dry-run       # each job's state and command
    python -m benchmark.prereg power               # the power calculation written into the toml

Each finished run is packed into its block's compact-logs directory (the toml's `logs`); a committed log there
counts as done, so the blocks continue across sessions. Raw runs go to benchmark/runs_prereg/ (gitignored).
"""
from __future__ import annotations

import argparse
import os
import sys
import tomllib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import hparams, sweep  # noqa: E402

PREREG = os.path.join(REPO, "benchmark", "preregistration.toml")
RUNS = os.path.join(REPO, "benchmark", "runs_prereg")


def load(path: str = PREREG) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def _override(flags: list[str], **values) -> list[str]:
    """flags with each `--name value` pair replaced (name given as python identifier)."""
    out = list(flags)
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")
        i = out.index(flag)
        out[i + 1] = f"{value:g}"
    return out


def lambda_tag(lam: float) -> str:
    return f"lam{lam:g}"


def block_jobs(name: str, seeds: list[int], reg: dict, runs_root: str = RUNS,
               logs_root: str = REPO, checkpoint_every: int = 10) -> list[sweep.Job]:
    """The jobs of one block for the given seeds (runs that the toml says are reused are not listed)."""
    b, common = reg["blocks"][name], reg["common"]
    extra = list(common[f"reading_flags_{b['reading']}"])
    logs = os.path.join(logs_root, b["logs"])
    runs = os.path.join(runs_root, name)
    jobs = []
    if name == "lambda":
        reused = {float(x) for x in [1e-2]}  # the paper's row: block 1's runs (toml `reuse`)
        for lam in b["damping"]:
            if lam in reused:
                continue
            flags = _override(hparams.lookup(b["task"], "smac"), damping=lam, learning_rate=b["eta_over_lambda"] * lam)
            tag = lambda_tag(lam)
            for seed in seeds:
                jobs.append(sweep.Job(b["task"], "smac", seed, b["budget"],
                                      os.path.join(runs, tag, b["task"], "smac", f"seed{seed}"), flags,
                                      checkpoint_every, extra_flags=extra, logs_dir=os.path.join(logs, tag), tag=tag))
        return jobs
    for task in ([b["task"]] if "task" in b else b["tasks"]):
        for algo in b["algos"]:
            for seed in seeds:
                jobs.append(sweep.Job(task, algo, seed, b["budget"], os.path.join(runs, task, algo, f"seed{seed}"),
                                      hparams.lookup(task, algo), checkpoint_every, extra_flags=extra,
                                      logs_dir=logs, tag=name))
    return jobs


def ordered_jobs(reg: dict, runs_root: str = RUNS, logs_root: str = REPO) -> list[sweep.Job]:
    """Every block's jobs in the toml's [execution] order ("block" or "block:seeds")."""
    jobs = []
    for item in reg["execution"]["order"]:
        name, _, seeds = item.partition(":")
        seed_list = sweep.parse_seeds(seeds or reg["blocks"][name]["seeds"])
        if name == "equivalence":
            seed_list = [s for s in seed_list if s > 5]  # seeds 1-5: the stage-1 runs (toml `reuse`)
        jobs += block_jobs(name, seed_list, reg, runs_root, logs_root)
    return jobs


def power(reg: dict) -> dict:
    """{task: (sd of paired differences, seeds needed for margin 0.1, margin reachable at the cap)}."""
    import numpy as np
    from scipy import stats as sps

    from benchmark import grid_report, random_scores, stats
    p = reg["power"]
    cells = grid_report.load_cells(os.path.join(REPO, p["source_logs"]))
    rand = random_scores.read()
    out = {}
    for task in reg["blocks"]["equivalence"]["tasks"]:
        best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
        score = {a: {s: (0.0 if f is None else stats.normalize(f, rand[task], best))
                     for s, f, _ in grid_report.scored_runs(cells[(task, a)])} for a in ("smac", "sgd-matched")}
        d = np.array([score["smac"][s] - score["sgd-matched"][s] for s in p["source_seeds"]])
        sd = float(d.std(ddof=1))
        z = p["target_power"]
        margin = lambda n: (sps.t.ppf(0.95, n - 1) + sps.t.ppf(0.5 + z / 2, n - 1)) * sd / np.sqrt(n)  # noqa: E731
        n = 3
        while margin(n) > reg["common"]["margin"]:
            n += 1
        out[task] = (sd, n, float(margin(p["seeds_per_side"])))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the blocks' jobs (resumable)")
    r.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    r.add_argument("--blocks", default="all", help="comma list of block names, or all (default)")
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--progress-interval", type=float, default=60.0)
    r.add_argument("--logs-root", default=REPO, help="checkout whose benchmark/results/logs/prereg/ receives the "
                   "compact logs (default: this one; another when the runs go from a frozen copy of the code)")
    sub.add_parser("power", help="print the power calculation")
    args = ap.parse_args(argv)
    reg = load()
    if args.cmd == "power":
        for task, (sd, n, m) in power(reg).items():
            print(f"{task}: sd(paired diff) {sd:.3f}; seeds for margin {reg['common']['margin']}: {n}; "
                  f"margin at {reg['power']['seeds_per_side']} seeds: {m:.3f}")
        return 0
    jobs = ordered_jobs(reg, logs_root=os.path.abspath(getattr(args, "logs_root", REPO)))
    if args.blocks != "all":
        keep = set(args.blocks.split(","))
        jobs = [j for j in jobs if j.tag.split("/")[0] in keep or (j.tag.startswith("lam") and "lambda" in keep)]
    print(f"[prereg] {len(jobs)} jobs", flush=True)
    if args.dry_run:
        for job in jobs:
            state, run_dir, _ = sweep.plan(job)
            print(f"{job.name:44s} {state}")
        return 0
    out = sweep.run_local(jobs, args.workers, args.progress_interval)
    return 130 if out["interrupted"] else 0


if __name__ == "__main__":
    sys.exit(main())
