"""The KL-step study: does SMAC with kl_step_ (ours, not the paper's: each step's length set by the KL it causes on
the batch, target 0.01) end higher or lower than SMAC with the paper's fixed step eta? CartPole, Pendulum, Hopper and
HalfCheetah, 5 seeds at the stage-1 budgets under the stage-1 grid's reading (norm), against the stage-1 grid's SMAC
runs; the rule (endpoint, pairing, test with Holm over the four tasks) is benchmark/preregistration_kl_step.toml,
fixed before the runs. Exploratory: the paper makes no claim about this option.

    python -m benchmark.sweep --study kl-step --workers 2   # the runs: the toml's [common], resumable
    python -m benchmark.studies.kl_step                     # committed logs -> benchmark/results/kl_step.json,
                                                            # benchmark/report/kl_step.md (the report writes them too)

The same jobs, spelled out (the toml's header): python -m benchmark.sweep --tasks CartPole,Pendulum,Hopper,HalfCheetah
--algos smac --seeds 1-5 --reading norm --budget classic=500000,mujoco=1000000,Pendulum=2000000 --extra-flags
'--target-kl 0.01' --runs-dir benchmark/runs_kl_step --logs-dir benchmark/results/logs/kl_step.

results() returns the numbers and the words (VOCAB); markdown() renders them with benchmark/templates/kl_step.md.j2.
Beside the rule, the toml's `also`: the step length eta the KL arm chose against the paper's eta, read from updates.csv's
eta where a log has it and reconstructed (eta_ratio) for the logs written before that column, the study's own.
"""

from __future__ import annotations

import math
import os
import sys
import tomllib

import numpy as np
import scipy.stats as sps

from benchmark import aggregate, hparams, pages, stats
from benchmark.studies import REPO

NAME = "kl-step"
# the sweep's options its jobs honour; its tasks, seeds and budgets are the toml's
SWEEP_OPTIONS = (
    "extra_flags",
    "runs_dir",
    "logs_dir",
    "checkpoint_every",
    "horizon",
    "num_steps",
    "extend_from",
)
PREREGISTRATION = "benchmark/preregistration_kl_step.toml"
COMMITTED_ONLY = True

PREREG = os.path.join(REPO, PREREGISTRATION)
RESULTS = os.path.join(REPO, "benchmark", "results", "kl_step.json")
PAGE = "kl_step.md"  # in benchmark/report/
RUNS = os.path.join(REPO, "benchmark", "runs_kl_step")  # the sweep's default --runs-dir
VOCAB = ("KL step higher", "KL step lower", "not shown to differ", "waiting")  # a task's verdict


def load() -> dict:
    """The pre-registration (benchmark/preregistration_kl_step.toml)."""
    with open(PREREG, "rb") as f:
        return tomllib.load(f)


# ---- the job list
def jobs(args) -> list:
    """The toml's [common] runs: its tasks x SMAC x its seeds at its budgets, under its reading with --target-kl, the
    jobs of the command in the toml's header. --runs-dir (default benchmark/runs_kl_step) and --logs-dir (default the
    toml's logs) override; --checkpoint-every, --horizon, --num-steps, --extend-from and --extra-flags (added after
    the study's) are the sweep's as for any grid."""
    from benchmark import sweep

    common = load()["common"]
    logs = sweep.logs_dir_of(args, os.path.join(REPO, common["logs"]))
    flags = hparams.reading_flags(common["reading"]) + ["--target-kl", f"{common['target_kl']:g}"]
    return sweep.make_jobs(
        common["tasks"],
        ["smac"],
        hparams.parse_seeds(common["seeds"]),
        common["budgets"],
        args.runs_dir or RUNS,
        args.checkpoint_every,
        args.horizon,
        args.num_steps,
        flags + args.extra_flags.split(),
        logs,
        extend_from=args.extend_from,
    )


# ---- the step length eta: logged by runs since updates.csv has the column, reconstructed for the older logs
ETA_COLUMNS = ("g_norm", "ell_sq", "step_par_norm", "step_perp_norm")  # what eta_ratio reads


def eta_ratio(updates: dict, damping: float) -> np.ndarray:
    """eta / eta_paper of every update of a batch-mean SMAC run (eta: the step length applied, kl_step_'s under
    --target-kl; eta_paper: the run's --learning-rate), from its updates.csv / compact log columns and its damping
    lambda (the run's --damping, hyperparams.toml's SMAC row):

        r = sqrt((P lambda)^2 + (Q (lambda + L))^2) / G

    What the trainer logs (smac_a2c.step_diagnostics on benchmark.trainer.smac_step's diagnostics, float64 of the
    float32 vectors): G = g_norm = |g|, g the policy gradient after its entropy bonus, --loss-reduction and
    --max-grad-norm clipping (the g the direction is computed from); L = ell_sq = |l|^2, l = l_bar as the direction
    used it; the logged step s = r d, d = (lambda I + l l^T)^-1 g = (g - l (l.g) / (lambda + L)) / lambda the
    Sherman-Morrison direction (theta's change is eta d, and s = that change / eta_paper: kl_step_'s eta times
    d / eta_paper, or d itself with the fixed eta); Q = step_par_norm = |l.s| / |l|, P = step_perp_norm =
    sqrt(|s|^2 - Q^2). Writing g = g_par + g_perp along l and across it, l (l.g) = L g_par, so
    d = g_perp / lambda + g_par / (lambda + L): P = r |g_perp| / lambda, Q = r |g_par| / (lambda + L), and
    |g|^2 = |g_perp|^2 + |g_par|^2 gives r above. One actor step per update (--num-minibatches 1, --update-epochs
    1: with more, the row holds the means of each step's norms and r is not exact); not for --step-normalization,
    --prev-ef-beta or the per-sample modes (there P and Q are NaN, so r is). 0 for an update in which kl_step_
    took no step; NaN where a column is missing or NaN, or g = 0.

    Accuracy: on the fixed-eta arm's committed logs (benchmark/results/logs/norm) r = 1 to within 3e-5 on every
    update of the study's four tasks, a median error of about 1e-6 per run on every task: their numbers have 6
    significant digits, and Q, the float32 step's component along l, carries float32 rounding of |s|, amplified
    where L >> lambda (Pusher, lambda = 0.01, L up to 133: up to 6e-4 on single updates). On a fresh run's
    updates.csv (full precision) it matched the logged eta / eta_paper to 1e-5 (tests/test_study_kl_step.py)."""
    n = max((len(v) for v in updates.values()), default=0)
    if any(c not in updates for c in ETA_COLUMNS):
        return np.full(n, np.nan)
    g, L, Q, P = (np.asarray(updates[c], dtype=np.float64) for c in ETA_COLUMNS)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.hypot(P * damping, Q * (damping + L)) / g
    return np.where(g > 0, r, np.nan)


def run_eta_ratio(run: dict) -> tuple[np.ndarray, int]:
    """(eta / eta_paper of every update of one compact log, how many of them the log holds): updates.csv's eta over
    the run's --learning-rate where the update logged it, eta_ratio's reconstruction (with the run's damping) where
    the log has no column eta or the update none (the rows of a run begun before the column)."""
    u = run["updates"]
    r = eta_ratio(u, run["cfg"]["damping"])
    if "eta" not in u:
        return r, 0
    logged = np.asarray(u["eta"], dtype=np.float64)
    have = np.isfinite(logged)
    return np.where(have, logged / run["cfg"]["learning_rate"], r), int(have.sum())


def eta_of_arms(kl_runs: dict, fixed_runs: dict) -> dict:
    """The KL arm's step length against the paper's eta (preregistration_kl_step.toml's `also`): the median over runs
    of each run's median eta / eta_paper, with the runs' medians and how many updates logged eta / were
    reconstructed; and the reconstruction's check on the fixed-eta arm, where eta / eta_paper is 1 by construction:
    the largest |eta_ratio - 1| over its updates."""
    per_run, logged, n = [], 0, 0
    for seed in sorted(kl_runs):
        r, k = run_eta_ratio(kl_runs[seed])
        per_run.append(float(np.nanmedian(r)))
        logged, n = logged + k, n + len(r)
    fixed = [eta_ratio(run["updates"], run["cfg"]["damping"]) for run in fixed_runs.values()]
    return {
        "eta_ratio": float(np.median(per_run)),
        "eta_ratio_runs": per_run,
        "eta_updates": n,
        "eta_logged": logged,
        "eta_check": float(max(np.nanmax(np.abs(r - 1)) for r in fixed)),
        "eta_check_updates": sum(len(r) for r in fixed),
    }


# ---- the rule on the committed logs
def median_step_norm(runs: dict) -> float:
    """The median over runs of each run's median |theta change| / eta_paper (updates.csv's step_norm): the parameter
    change, not the step length eta (it is eta times the direction's norm, which the arms do not share)."""
    return float(np.median([np.nanmedian(r["updates"]["step_norm"]) for r in runs.values()]))


def compare(kl: dict, fixed: dict, seeds: list, paired_test: bool) -> dict:
    """d = kl - fixed over the seeds: the mean, its 95 % t-interval and the two-sided p of the rule's test (paired, or
    Welch's: stats.welch_test). The paired branch is not stats.paired: that one rounds its interval's half width in
    another order (t * sd / sqrt(n), here t * (sd / sqrt(n))) and gives p 1 where every difference is the same."""
    if paired_test:
        d = np.array([kl[s] - fixed[s] for s in seeds])
        p = float(sps.ttest_rel([kl[s] for s in seeds], [fixed[s] for s in seeds]).pvalue)
        sem = float(d.std(ddof=1) / math.sqrt(len(d)))
        mean = float(d.mean())
        dof = len(d) - 1
    else:
        w = stats.welch_test([kl[s] for s in seeds if s in kl], [fixed[s] for s in seeds if s in fixed])
        p, sem, mean, dof = w["p"], w["se"], w["diff"], w["df"]
    half = float(sps.t.ppf(0.975, dof) * sem)
    return {"mean": mean, "ci": [mean - half, mean + half], "p": p}


def _task_row(task: str, common: dict, seeds: list, root: str) -> dict:
    """One task's row: the runs in, and once all are, both arms' finals, the pairing and compare's test."""
    budget = common["budgets"][task]
    kl = aggregate.scores([os.path.join(root, common["logs"])], budget)
    fixed = aggregate.scores([os.path.join(root, common["baseline_logs"])], budget)
    kl_runs = kl.get((task, "smac", "runs"), {})
    fixed_runs = fixed.get((task, "smac", "runs"), {})
    row = {
        "task": task,
        "budget": budget,
        "runs_in": sorted(kl_runs),
        "n_runs_in": len(kl_runs),
        "holm": False,
        "verdict": "waiting",
    }
    if sorted(kl_runs) != seeds:
        return {**row, "complete": False}
    same = [
        s
        for s in seeds
        if s in fixed_runs and aggregate.first_episode(kl_runs[s]) == aggregate.first_episode(fixed_runs[s])
    ]
    paired_test = same == seeds
    kl_scores = kl[(task, "smac")]
    fixed_scores = fixed[(task, "smac")]
    row.update(
        complete=True,
        paired=paired_test,
        paired_seeds=same,
        n_paired=len(same),
        kl_finals=[kl_scores[s] for s in seeds],
        fixed_finals=[fixed_scores[s] for s in seeds],
        kl_raw=[kl[(task, "smac", "raw")][s] for s in seeds],
        fixed_raw=[fixed[(task, "smac", "raw")][s] for s in seeds],
        param_change_ratio=median_step_norm(kl_runs) / median_step_norm(fixed_runs),
        **eta_of_arms(kl_runs, {s: fixed_runs[s] for s in seeds if s in fixed_runs}),
        **compare(kl_scores, fixed_scores, seeds, paired_test),
    )
    return row


def eta_summary(done: list) -> dict | None:
    """Over the complete tasks' rows: the KL arm's updates, how many logged eta (the others reconstructed), and the
    reconstruction's check on the fixed-eta arm (the largest |eta_ratio - 1| over its updates). None before any."""
    if not done:
        return None
    return {
        "updates": sum(r["eta_updates"] for r in done),
        "logged": sum(r["eta_logged"] for r in done),
        "check": max(r["eta_check"] for r in done),
        "check_updates": sum(r["eta_check_updates"] for r in done),
    }


def results(root: str = REPO) -> dict:
    """The rule of preregistration_kl_step.toml on the committed logs: per task the finals of both arms, the test
    (paired when all seeds pair) and, once every task is in, Holm's p and the verdict (a word of VOCAB)."""
    common = load()["common"]
    seeds = hparams.parse_seeds(common["seeds"])
    alpha = common["alpha"]
    rows = [_task_row(task, common, seeds, root) for task in common["tasks"]]
    done = [r for r in rows if r["complete"]]
    if len(done) == len(rows):  # Holm over the four tasks once every task is in
        for r, p_holm in zip(done, stats.holm([r["p"] for r in done])):
            higher = p_holm < alpha and r["mean"] > 0
            lower = p_holm < alpha and r["mean"] < 0
            r["p_holm"] = p_holm
            r["holm"] = True
            r["verdict"] = "KL step higher" if higher else "KL step lower" if lower else "not shown to differ"
    return {
        "target_kl": common["target_kl"],
        "reading": common["reading"],
        "seeds": seeds,
        "n_seeds": len(seeds),
        "tasks": rows,
        "eta": eta_summary(done),
    }


def markdown(res: dict) -> str:
    """report/kl_step.md from results' data (as JSON): benchmark/templates/kl_step.md.j2."""
    return pages.render("kl_step.md.j2", res)


# ---- the study's contract
def analyze(where, done: dict) -> dict:
    """{"kl_step": results on the committed logs}."""
    return {"kl_step": results()}


def write(result: dict, where) -> list[str]:
    """report/kl_step.md (the template's whole page, no page.md.j2 around it), and where.commit,
    benchmark/results/kl_step.json."""
    json_path = RESULTS if where.commit else None
    res = pages.committed(result["kl_step"], json_path)
    os.makedirs(where.pages, exist_ok=True)
    path = os.path.join(where.pages, PAGE)
    with open(path, "w") as f:
        f.write(markdown(res))
    return [path] + ([json_path] if json_path else [])


def main() -> int:
    """kl_step.json and report/kl_step.md from the committed logs."""
    from benchmark.studies import Where

    written = write(analyze(Where(commit=True), {}), Where(commit=True))
    print(f"wrote {' and '.join(reversed(written))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
