"""Run a study's jobs (the paper's grid: task x algorithm x seed) with the lab trainer, locally or on Ray; resumable.

    python -m benchmark.sweep --tasks Hopper,Swimmer --algos smac,sgd-matched --seeds 1-5 --workers 2
    python -m benchmark.sweep --study ablations --backend ray --ray-address auto --dry-run

{runs}/{task}/{algo}/seed{n}/ holds job.json, sweep.log (the trainer's output) and the trainer's run directory. A
job is done, diverged, to resume or fresh (inspect_job); what each means, what the sweep checks before any job starts,
its claims on jobs, damaged logs and Ctrl-C: docs/harness.md ("Commands").
"""

from __future__ import annotations

import argparse
import collections
import fcntl
import functools
import glob
import itertools
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import compact, hparams, provenance, studies  # noqa: E402
from benchmark.compact import DEFAULT_RUNS, find_run_dir, read_summary, run_args  # noqa: E402,F401
from benchmark.hparams import parse_budget, parse_seeds  # noqa: E402,F401
from benchmark.studies import STUDY_OPTIONS  # noqa: E402

TRAINER = ["-m", "benchmark.trainer"]  # the lab trainer, run from the repository root (PYTHONPATH)
DEFAULT_LOGS = os.path.join(REPO, "benchmark", "results", "logs")
DEFAULT_BUDGET = "classic=500000,mujoco=1000000"
DEFAULT_SEEDS = "1-3"


@dataclass
class Job:
    task: str
    algo: str
    seed: int
    budget: int
    seed_dir: str  # {runs}/{task}/{algo}/seed{n}
    flags: list = field(default_factory=list)  # hyper-parameter flags from the table
    checkpoint_every: int = 10
    horizon: str = "paper"
    num_steps: Optional[int] = None  # T override (tests only)
    python: str = sys.executable
    extra_flags: list = field(default_factory=list)  # a reading's trainer flags
    logs_dir: Optional[str] = None  # compact logs root: a committed log there counts as a finished run
    tag: str = ""  # prefix of the name (e.g. a fidelity reading), so names stay unique
    extend_from: Optional[str] = (
        None  # runs root of a smaller-budget grid whose finished runs this one continues
    )

    @property
    def name(self) -> str:
        return f"{self.tag + '/' if self.tag else ''}{self.task}/{self.algo}/seed{self.seed}"


def _job(root: str, task: str, algo: str, seed: int, budget: int, flags=(), *args, **kwargs) -> Job:
    return Job(
        task, algo, seed, budget, os.path.join(root, task, algo, f"seed{seed}"), list(flags), *args, **kwargs
    )


def make_jobs(
    tasks,
    algos,
    seeds,
    budgets,
    runs_dir,
    checkpoint_every=10,
    horizon="paper",
    num_steps=None,
    extra_flags=(),
    logs_dir=None,
    tag="",
    extend_from=None,
) -> list[Job]:
    """The grid's jobs, tasks x algos x seeds, each with its row's flags (hparams.lookup)."""
    logs_dir, extend_from = (os.path.abspath(p) if p else None for p in (logs_dir, extend_from))
    return [
        _job(
            os.path.abspath(runs_dir),
            task,
            algo,
            seed,
            budgets[task],
            hparams.lookup(task, algo, horizon=horizon, num_steps=num_steps),
            checkpoint_every,
            horizon,
            num_steps,
            extra_flags=list(extra_flags),
            logs_dir=logs_dir,
            tag=tag,
            extend_from=extend_from,
        )
        for task, algo, seed in itertools.product(tasks, algos, seeds)
    ]


def committed_log(job: Job) -> Optional[str]:
    return compact.log_path(job.logs_dir, job.task, job.algo, job.seed) if job.logs_dir else None


def set_aside_damaged_log(job: Job) -> Optional[str]:
    """Rename a committed log that cannot be read (compact.damage) to <name>.damaged (-2, -3, ... if taken; never
    deleted), with one line: the job is no longer done by it. Returns the new path, or None (nothing to do)."""
    log = committed_log(job)
    why = compact.damage(log)
    if why is None:
        return None
    aside, n = log + ".damaged", 1
    while os.path.exists(aside):
        n += 1
        aside = f"{log}.damaged-{n}"
    try:
        os.rename(log, aside)
    except FileNotFoundError:  # another sweep set it aside first
        return None
    print(f"[sweep] {why}; set aside as {os.path.basename(aside)}, the job is not done by it", flush=True)
    return aside


def save_compact_log(job: Job) -> Optional[str]:
    """Pack a finished or diverged run into job.logs_dir (then `git add` it)."""
    path = committed_log(job)
    if path is None:
        return None
    run_dir = find_run_dir(job.seed_dir)
    summary = read_summary(run_dir)
    if summary and summary.get("status") in ("finished", "diverged"):
        return compact.pack(run_dir, path, job.task, job.algo, job.seed, job.budget)
    return None


def trained_budget(budget: int, args: Optional[dict]) -> int:
    """The steps a run of `budget` trains: whole rollouts of num_steps x num_envs steps (the trainer rounds the budget
    down to them; --budget 2500 at T = 1000 trains 2000), by the run's own flags (its config.json's args, or its
    compact log's header); without them (an SB3 run, an older log), the budget itself."""
    args = args or {}
    try:
        rollout = int(args.get("num_steps") or 1) * int(args.get("num_envs") or 1)
    except (TypeError, ValueError):
        return budget
    if rollout < 1 or rollout > budget:
        return budget
    return budget - budget % rollout


def _settled(summary: Optional[dict], budget: int) -> Optional[str]:
    """done (finished at least `budget` steps: trained_budget's) / diverged / None, from a summary.json or a compact
    log's header."""
    status = (summary or {}).get("status")
    if status == "finished" and summary.get("global_step", 0) >= budget:
        return "done"
    return "diverged" if status == "diverged" else None


def inspect_job(job: Job) -> tuple[str, Optional[str]]:
    """(state, run_dir), state done / diverged / resume / fresh (docs/harness.md); a committed compact log that
    finished the budget or diverged decides first (the raw run directory may be gone)."""
    log = committed_log(job)
    # a damaged log's header is None too: not done by it (prepare sets it aside)
    head = compact.header(log) if log and os.path.isfile(log) else None
    state = _settled(head, trained_budget(job.budget, head))
    if state:
        return state, None
    run_dir = find_run_dir(job.seed_dir)  # compact.RunDirConflict for two run directories
    if run_dir is None:
        return "fresh", None
    state = _settled(read_summary(run_dir), trained_budget(job.budget, run_args(run_dir)))
    if state:
        return state, run_dir
    return ("resume" if os.path.isfile(os.path.join(run_dir, "checkpoint.pt")) else "fresh"), run_dir


def plan(job: Job) -> tuple[str, Optional[str], Optional[str]]:
    """(state, run_dir, src): inspect_job's, and for a fresh job the smaller grid's run it continues ("extend")."""
    state, run_dir = inspect_job(job)
    src = extension_source(job) if state == "fresh" else None
    return ("extend" if src else state), run_dir, src


def extension_source(job: Job) -> Optional[str]:
    """The run directory in job.extend_from this job may continue (same task, algo, seed and job.json flags, finished
    at a budget <= this job's, checkpointed), or None; no schedule depends on --total-timesteps, so it is exact."""
    if not job.extend_from:
        return None
    src_seed = os.path.join(job.extend_from, job.task, job.algo, f"seed{job.seed}")
    src = find_run_dir(src_seed)
    summary = read_summary(src)
    if not (
        src
        and summary
        and summary.get("status") == "finished"
        and summary.get("global_step", 0) <= job.budget
        and os.path.isfile(os.path.join(src, "checkpoint.pt"))
    ):
        return None  # not a finished checkpointed run
    from benchmark import trainer  # (imports torch: only when there is a candidate)

    if trainer.run_dir_locked(src):
        return None  # a live trainer is extending it itself
    asked = compact.read_json(os.path.join(src_seed, "job.json"))
    keys = ("flags", "extra_flags", "horizon", "num_steps")
    return src if asked is not None and all(asked.get(k) == getattr(job, k) for k in keys) else None


def command(job: Job, state: str, run_dir: Optional[str]) -> list[str]:
    """The job's command line: its study's own (studies.job_command), else the lab trainer's."""
    own = studies.job_command(job, state, run_dir)
    if own is not None:
        return own
    if state == "resume":
        every = ["--checkpoint-every", str(job.checkpoint_every)]
        return [job.python, *TRAINER, "--resume", run_dir, "--total-timesteps", str(job.budget), *every]
    return [job.python, *TRAINER, *fresh_argv(job)]


def fresh_argv(job: Job, where: bool = True) -> list[str]:
    """The trainer's flags for a fresh start of the job (command's); where=False leaves out --seed and --runs-dir."""
    seed = ["--seed", str(job.seed)] if where else []
    runs_dir = ["--runs-dir", job.seed_dir] if where else []
    return [
        *job.flags,
        *job.extra_flags,
        *seed,
        "--exp-name",
        job.algo,
        *runs_dir,
        "--total-timesteps",
        str(job.budget),
        "--checkpoint-every",
        str(job.checkpoint_every),
        "--no-tensorboard",
    ]


@functools.lru_cache(maxsize=None)
def _checked_args(argv: tuple):
    from benchmark import trainer  # (imports torch)

    return trainer.checked_args(list(argv))


def job_args(job: Job):
    """The trainer's flags for the job, as the trainer's own parser and checks take its command line (command's);
    trainer.ConfigError (one line) for flags it would refuse. Jobs that differ only in seed and seed directory share
    one parse: on the command line those two come after every flag of the job's own, so the last of each is these
    values, as set here."""
    import dataclasses

    args = _checked_args(tuple(fresh_argv(job, where=False)))
    return dataclasses.replace(args, seed=job.seed, runs_dir=job.seed_dir)


class Refused(ValueError):
    """A sweep that must not start: a job's flags the trainer refuses, or a log or run directory of another job."""


def disagreement(job: Job, args) -> Optional[str]:
    """Why the job's committed compact log or run directory is not the job's (the flag, its value there and the
    job's: trainer.flag_disagreement on RUN_FLAGS), or None. A log that does not load is not compared (the sweep
    sets it aside); two run directories are the job's failure, in its turn."""
    from benchmark import trainer

    log = committed_log(job)
    found = []
    if log and os.path.isfile(log):
        try:
            record = compact.load(log)
        except compact.DamagedLog:
            record = None
        why = compact.misplaced(record, log) if record is not None else None
        if why is not None:  # the report's keys
            return why
        if record is not None:
            found.append((log, record["cfg"]))
    try:
        run_dir = find_run_dir(job.seed_dir)
    except compact.RunDirConflict:
        run_dir = None
    if run_dir is not None and os.path.isfile(os.path.join(run_dir, "config.json")):
        found.append((run_dir, run_args(run_dir)))
    for where, stored in found:
        differ = trainer.flag_disagreement(args, stored if isinstance(stored, dict) else {})
        if differ is not None:
            flag, there, asked = differ
            return f"{where} was run with {flag} {there!r}, the job {job.name} asks {asked!r}"
    return None


def check_extra_flags(extra_flags: str, jobs: list[Job]) -> None:
    """--extra-flags (added to every job) as the trainer takes them, given `jobs`, this invocation's jobs built
    without them: Refused (one line) for flags the trainer refuses, a trainer action that is not a run (--resume,
    --eval-checkpoint, --plot: every job would become something else), or a flag a job already passes (its row, its
    reading, the sweep's own) set to another value, which would silently override the job's or be overridden."""
    from benchmark import trainer

    tokens = extra_flags.split()
    try:
        extra = trainer.parse_args(tokens)
    except trainer.ConfigError as e:
        raise Refused(f"--extra-flags {extra_flags!r}: {e}") from None
    given = trainer.flags_given(tokens)
    actions = sorted(f"--{name.replace('_', '-')}" for name in given & set(trainer.RUN_ACTIONS))
    if actions:
        raise Refused(
            f"--extra-flags {extra_flags!r}: {', '.join(actions)} runs something other than the job; nothing was "
            "started"
        )
    for job in jobs:
        passed = sorted(given & trainer.flags_given(fresh_argv(job)))
        if not passed:
            continue
        try:
            args = job_args(job)
        except trainer.ConfigError:
            continue  # check_jobs names a job whose own flags the trainer refuses
        for name in passed:
            if getattr(extra, name) != getattr(args, name):
                raise Refused(
                    f"--extra-flags {extra_flags!r}: --{name.replace('_', '-')} is the job's own (job {job.name} "
                    f"passes {getattr(args, name)!r}, --extra-flags {getattr(extra, name)!r}); nothing was started"
                )


def check_jobs(jobs: list[Job]) -> None:
    """Before any job starts (--dry-run too): every job's flags as the trainer takes them, and every committed log
    and run directory of a job made with the job's flags. Refused (one line) otherwise: the first problem, and how
    many jobs have one. Nothing is renamed or removed."""
    from benchmark import trainer

    refused, other_runs = [], []
    for job in jobs:
        if studies.job_command(job, "fresh", None) is not None:  # not the lab trainer's
            continue
        try:
            args = job_args(job)
        except trainer.ConfigError as e:
            refused.append(f"{job.name}: the trainer refuses its flags {' '.join(fresh_argv(job))}: {e}")
            continue
        why = disagreement(job, args)
        if why is not None:
            other_runs.append(why)
    for problems, advice in (
        (refused, ""),
        (other_runs, ": give this sweep another --runs-dir / --logs-dir, or move those runs away"),
    ):
        if problems:
            more = f" (and {len(problems) - 1} more jobs like it)" if len(problems) > 1 else ""
            raise Refused(f"{problems[0]}{more}; nothing was started{advice}")


def check_sources(jobs: list[Job]) -> None:
    """Refused (one line) when tracked sources differ from the checked-out commit and a job has something to run:
    its runs would record a commit that is not their code (--allow-dirty starts them; the diff's hash then names the
    code). Untracked files (the sweep's new logs) do not count; outside a git checkout there is nothing to compare."""
    changed = provenance.changed_sources()
    if not changed or all(settled_now(j) for j in jobs):
        return
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    raise Refused(
        f"tracked sources differ from commit {provenance.commit()[:12]} ({shown}); commit them, or pass "
        "--allow-dirty to run on them (each run then records a hash of the changed files)"
    )


CLAIMS = {}  # seed_dir -> the open .sweep.lock of a job this process has claimed


def claim(job: Job) -> bool:
    """Claim the job for this process: an exclusive flock on {seed_dir}/.sweep.lock (holding the pid), taken without
    waiting and held until release(job); False when another sweep holds it. The kernel drops it when the process
    ends, however it ends, so a claim is never stale."""
    os.makedirs(job.seed_dir, exist_ok=True)
    f = open(os.path.join(job.seed_dir, ".sweep.lock"), "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return False
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    CLAIMS[job.seed_dir] = f
    return True


def release(job: Job) -> None:
    """Let go of claim(job)'s lock (no-op if this process holds none)."""
    f = CLAIMS.pop(job.seed_dir, None)
    if f is not None:
        f.close()  # closing releases the flock


def claimed_elsewhere(job: Job) -> bool:
    """Whether another sweep holds the job's claim (for --dry-run: a shared flock tried and dropped at once)."""
    path = os.path.join(job.seed_dir, ".sweep.lock")
    if job.seed_dir in CLAIMS or not os.path.isfile(path):
        return False
    try:
        with open(path) as f:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def claim_owner(job: Job) -> str:
    """The pid written in the job's .sweep.lock by the sweep that claimed it, or '?'."""
    try:
        with open(os.path.join(job.seed_dir, ".sweep.lock")) as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"


def bad_job(e: Exception) -> bool:
    """Whether e is one job's fault, not the sweep's: a damaged checkpoint or updates.csv (ConfigError), two run
    directories (compact.RunDirConflict), a file that cannot be read or written (OSError), bad contents (ValueError).
    Such a job fails with one line and the sweep goes on."""
    from benchmark import trainer  # (imports torch; only on this path)

    return isinstance(e, (trainer.ConfigError, compact.RunDirConflict, OSError, ValueError))


def prepare(job: Job) -> tuple[str, Optional[list[str]]]:
    """Decide and set up one job: returns (state, command or None when nothing is to run). A job with something to
    run is claimed first and decided again under the claim (another sweep may have moved it on); the claim is held
    when a command is returned (release(job) after its trainer ends), dropped otherwise. A job another sweep has
    claimed is "running"."""
    aside = set_aside_damaged_log(job)
    state, _, _ = plan(job)
    if state in ("done", "diverged"):
        if aside:
            save_compact_log(job)  # the raw run's log again, in place of the damaged one
        return state, None
    if not claim(job):
        print(
            f"[sweep] {job.name}: another sweep (pid {claim_owner(job)}) is running it; skipped", flush=True
        )
        return "running", None
    try:
        state, cmd = _prepare_claimed(job)
    except BaseException:
        release(job)
        raise
    if cmd is None:
        release(job)
    return state, cmd


def _prepare_claimed(job: Job) -> tuple[str, Optional[list[str]]]:
    """prepare's work on a claimed job."""
    state, run_dir, src = plan(job)
    if state in ("done", "diverged"):
        return state, None
    from benchmark import trainer

    if run_dir is not None and trainer.run_dir_locked(run_dir):
        print(f"[sweep] {job.name}: a live trainer holds {run_dir} (another sweep?); skipped", flush=True)
        return "busy", None
    if state in ("fresh", "extend") and run_dir is not None:
        shutil.rmtree(run_dir)  # started but never checkpointed: nothing to resume from
        run_dir = None
    if state == "extend":  # continue the smaller grid's finished run (a copy; the source stays)
        run_dir = os.path.join(job.seed_dir, os.path.basename(src))
        shutil.copytree(src, run_dir, ignore=shutil.ignore_patterns("*.lock", "events.out.tfevents*"))
        print(
            f"[sweep] {job.name}: continues {src} from step {read_summary(src)['global_step']:,}", flush=True
        )
        state, run_dir = inspect_job(job)
        if state == "done":
            save_compact_log(job)
            return state, None
    if state == "resume":  # cut the logs back to the checkpoint (rows after it, written before a hard kill)
        ckpt = trainer.load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))  # weights_only: loads no code
        trainer.truncate_logs_to(run_dir, int(ckpt["global_step"]), int(ckpt["update"]))
    os.makedirs(job.seed_dir, exist_ok=True)
    with open(os.path.join(job.seed_dir, "job.json"), "w") as f:
        json.dump({**asdict(job), "state_at_start": state, "time": time.time()}, f, indent=2)
    return state, command(job, state, run_dir)


def _child_preexec(parent_pid: int):
    """In the trainer: own session (Ctrl-C reaches only the sweep, which sends one SIGINT), SIGINT when the parent
    dies (PR_SET_PDEATHSIG = 1), and no start at all if the parent died before that was armed (no orphan)."""
    os.setsid()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGINT), 0, 0, 0)
    except Exception:
        pass
    if os.getppid() != parent_pid:
        os._exit(1)


def launch(job: Job, cmd: list[str]) -> subprocess.Popen:
    """Start cmd in job.seed_dir (output appended to sweep.log), in its own session."""
    env = {
        "PYTHONWARNINGS": "ignore::DeprecationWarning",
        **os.environ,
        "PYTHONPATH": REPO + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
    }
    with open(os.path.join(job.seed_dir, "sweep.log"), "a") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        return subprocess.Popen(
            cmd,
            cwd=job.seed_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=functools.partial(_child_preexec, os.getpid()),
        )


def outcome(job: Job, returncode: Optional[int]) -> str:
    """finished / interrupted / diverged / failed, from summary.json (written by the trainer)."""
    try:
        run_dir = find_run_dir(job.seed_dir)
    except compact.RunDirConflict:
        return "failed"
    summary = read_summary(run_dir) or {}
    if summary.get("status") == "finished":
        done = summary.get("global_step", 0) >= trained_budget(job.budget, run_args(run_dir))
        return "finished" if done else "failed"
    if summary.get("status") in ("interrupted", "diverged"):
        return summary["status"]
    return "interrupted" if returncode in (130, -signal.SIGINT) else "failed"


def run_job_blocking(job_dict: dict) -> dict:
    """Prepare, run and wait for one job (a Ray task); on ray.cancel the trainer gets one SIGINT and is waited for."""
    job = Job(**job_dict)
    try:
        state, cmd = prepare(job)
    except Exception as e:
        if not bad_job(e):
            raise
        return {
            "name": job.name,
            "state": "failed",
            "outcome": "failed",
            "rc": None,
            "ran": False,
            "error": str(e),
        }
    if cmd is None:
        return {"name": job.name, "state": state, "outcome": state, "rc": 0, "ran": False}
    try:
        proc = launch(job, cmd)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            rc = proc.wait()
        save_compact_log(job)
    finally:
        release(job)
    return {"name": job.name, "state": state, "outcome": outcome(job, rc), "rc": rc}


def last_global_step(seed_dir: str) -> int:
    """global_step of the last complete row of updates.csv (0 if none); reads only the file's tail."""
    try:
        run_dir = find_run_dir(seed_dir)
        if run_dir is None:
            return 0
        with open(os.path.join(run_dir, "updates.csv"), "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            lines = f.read().decode(errors="ignore").splitlines()
        for line in reversed(lines[1:]):
            parts = line.split(",")
            if len(parts) >= 13:
                return int(float(parts[1]))
    except (OSError, ValueError, RuntimeError):
        pass
    return 0


def fmt_time(s: float) -> str:
    if s != s or s == float("inf"):
        return "?"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def parse_duration(spec: str) -> float:
    """'2h40m' -> 9600.0; '90m', '45s', '3600' (seconds) also; ValueError naming --time-limit for anything else."""
    match = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*", spec)
    if match is None or not any(match.groups()):
        raise ValueError(f"--time-limit {spec!r}: give a duration like 2h40m, 90m or 3600 (seconds)")
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = 3600 * hours + 60 * minutes + seconds
    if total <= 0:
        raise ValueError(f"--time-limit {spec!r}: the duration must be positive")
    return float(total)


def _logged_speeds(pattern: str) -> list[float]:
    """Steps per second (steps since any resume over wall time) of the compact logs matching a glob pattern."""
    speeds = []
    for path in glob.glob(pattern):
        head = compact.header(path)
        if head is None or not head["wall_time_s"]:
            continue
        speeds.append((head["global_step"] - head["resumed_from_step"]) / head["wall_time_s"])
    return speeds


def measured_speed(job: Job) -> Optional[float]:
    """Steps per second of this study's finished runs (the compact logs in job.logs_dir): the median over the runs
    of the job's task and algorithm, else over its task's; for a task with none yet, the slowest run of any task
    (so a run of unknown speed is not started near the limit); None when the logs dir has no finished run."""
    if not job.logs_dir:
        return None
    for algo in (job.algo, "*"):
        speeds = _logged_speeds(os.path.join(job.logs_dir, job.task, algo, "seed*.json.gz"))
        if speeds:
            return float(statistics.median(speeds))
    speeds = _logged_speeds(os.path.join(job.logs_dir, "*", "*", "seed*.json.gz"))
    return min(speeds) if speeds else None


def past_time_limit(job: Job, deadline: float) -> Optional[str]:
    """Why the job, started now, would end after `deadline` (epoch seconds), or None: at measured_speed its steps
    left end in time, it has nothing to run, or no run of the study has finished yet (no speed to go by). Raises
    compact.RunDirConflict as inspect_job does."""
    state, _ = inspect_job(job)
    if state in ("done", "diverged"):
        return None
    steps_left = job.budget - min(last_global_step(job.seed_dir), job.budget)
    speed = measured_speed(job)
    if speed is None or time.time() + steps_left / speed <= deadline:
        return None
    needs = fmt_time(steps_left / speed)
    left = fmt_time(max(deadline - time.time(), 0.0))
    return f"its {steps_left:,} steps need {needs} at {speed:,.0f} steps/s, {left} left"


def count_done(results: dict) -> int:
    """Results that ended a job (finished, done, diverged, failed): not the interrupted or not started ones."""
    return sum(
        1 for r in results.values() if r["outcome"] != "interrupted" and not r["outcome"].startswith("not")
    )


class Progress:
    """done/running/left and an ETA from the steps done in this session (all jobs together)."""

    def __init__(self, jobs: list[Job], interval: float):
        self.jobs, self.interval, self.t0, self.last = jobs, interval, time.time(), 0.0
        self.start = {j.name: min(last_global_step(j.seed_dir), j.budget) for j in jobs}
        self.tty = sys.stdout.isatty()
        self.reached = {}  # name -> global step where a job of this session stopped (finished or not)

    def skip(self, name: str) -> None:
        """A job done before this session (a committed log, a finished run) or not started: no steps count here."""
        self.start[name] = next(j.budget for j in self.jobs if j.name == name)
        self.reached[name] = self.start[name]

    def stopped(self, job: Job) -> None:
        """A job of this session ended (finished, diverged, failed, interrupted): its steps so far count."""
        self.reached[job.name] = max(min(last_global_step(job.seed_dir), job.budget), self.start[job.name])

    def show(self, done: int, running: list[Job], left: int, force: bool = False, not_started: int = 0):
        """Print the progress line: every `interval` seconds in place on a terminal, or now on its own line."""
        now = time.time()
        if not force and now - self.last < self.interval:
            return
        self.last, elapsed = now, now - self.t0
        moved = sum(min(last_global_step(j.seed_dir), j.budget) - self.start[j.name] for j in running)
        gained = moved + sum(
            self.reached[j.name] - self.start[j.name] for j in self.jobs if j.name in self.reached
        )
        remaining = sum(j.budget - self.reached.get(j.name, self.start[j.name]) for j in self.jobs) - moved
        rate = gained / elapsed if elapsed > 0 else 0.0
        eta = fmt_time(remaining / rate if rate > 0 else float("nan")) if remaining else "0m00s"
        msg = (
            f"[sweep] done {done}/{len(self.jobs)} | running {len(running)} | left {left} | "
            + (f"not started {not_started} | " if not_started else "")
            + f"{rate:,.0f} steps/s | elapsed {fmt_time(elapsed)} | ETA {eta}"
        )
        inline = self.tty and not force
        print(("\r" + msg + " " * 4) if inline else msg, end="" if inline else "\n", flush=True)


def settled_now(job: Job) -> bool:
    """Whether inspect_job finds the job done or diverged (False when it cannot tell: the job fails in its turn)."""
    try:
        return inspect_job(job)[0] in ("done", "diverged")
    except compact.RunDirConflict:
        return False


def run_local(
    jobs: list[Job], workers: int, progress_interval: float, deadline: Optional[float] = None
) -> dict:
    """Run the jobs with `workers` trainer processes on this machine; {"results": {name: result}, "interrupted"}.
    With a deadline (epoch seconds) a job is started only if past_time_limit finds it ends in time; the others are
    "not started (time limit)", and the next job of the queue that fits is tried instead."""
    results, running, interrupted = {}, {}, False  # running: name -> (job, proc, state)
    # the jobs with nothing to run first (same order otherwise): the first progress line counts every one of them as
    # done, where the queue's order left some among "left" until the workers reached them
    settled = [j for j in jobs if settled_now(j)]
    queue = settled + [j for j in jobs if j not in settled]
    prog = Progress(jobs, progress_interval)
    try:
        while queue or running:
            while queue and len(running) < workers:
                _start_job(queue.pop(0), deadline, results, running, prog)
            _reap(running, results, prog, block=False, quiet=False)
            prog.show(
                count_done(results),
                [r[0] for r in running.values()],
                len(queue),
                not_started=_timed_out(results),
            )
            time.sleep(0.2)
    except KeyboardInterrupt:
        interrupted = True
        _interrupt(running, results, prog, queue)
    prog.show(count_done(results), [], len(queue), force=True, not_started=_timed_out(results))
    return {"results": results, "interrupted": interrupted}


def _timed_out(results: dict) -> int:
    """How many jobs were not started because they would end past the time limit."""
    return sum(1 for r in results.values() if r["outcome"] == "not started (time limit)")


def _start_job(job: Job, deadline: Optional[float], results: dict, running: dict, prog: Progress) -> None:
    """Launch the job's trainer into `running`, or record in `results` why it does not run: it would end past the
    deadline, it failed to prepare or launch, or it has nothing to run (done or diverged)."""
    try:
        reason = past_time_limit(job, deadline) if deadline is not None else None
        state, cmd = (None, None) if reason is not None else prepare(job)
        proc = None if cmd is None else launch(job, cmd)
    except Exception as e:
        release(job)
        if not bad_job(e):
            raise
        results[job.name] = {"name": job.name, "state": "failed", "outcome": "failed", "rc": None}
        prog.skip(job.name)
        print(("\n" if prog.tty else "") + f"[sweep] {job.name}: failed: {e}", flush=True)
        return
    if reason is not None:
        results[job.name] = {
            "name": job.name,
            "state": "not started",
            "outcome": "not started (time limit)",
            "rc": None,
        }
        prog.skip(job.name)
        print(f"[sweep] {job.name}: not started: {reason}", flush=True)
        return
    if cmd is None:
        results[job.name] = {"name": job.name, "state": state, "outcome": state, "rc": 0}
        prog.skip(job.name)
    else:
        running[job.name] = (job, proc, state)


def _reap(running: dict, results: dict, prog: Progress, block: bool, quiet: bool) -> None:
    """Collect the running trainers that ended (with block, wait for each): record their results, write their
    compact logs and release their run directories; quiet: print no outcome lines (after Ctrl-C)."""
    for name, (job, proc, state) in list(running.items()):
        rc = proc.wait() if block else proc.poll()
        if rc is not None:
            result = {"name": name, "state": state, "outcome": outcome(job, rc), "rc": rc}
            results[name] = result
            try:
                save_compact_log(job)
            except Exception as e:
                if not bad_job(e):
                    raise
                print(f"[sweep] {name}: its compact log was not written: {e}", flush=True)
            release(job)
            prog.stopped(job)
            del running[name]
            if not quiet:
                print(
                    ("\n" if prog.tty else "") + f"[sweep] {name}: {result['outcome']} (exit {rc})",
                    flush=True,
                )


def _interrupt(running: dict, results: dict, prog: Progress, queue: list[Job]) -> None:
    """After Ctrl-C: send SIGINT to the running trainers, wait for them to save (through further Ctrl-Cs), and
    record the queue's jobs as not started."""
    print(
        f"\n[sweep] Ctrl-C: sending SIGINT to {len(running)} trainer(s) and waiting for them "
        f"to write checkpoint.pt and summary.json ...",
        flush=True,
    )
    for _job, proc, _ in running.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    while running:
        try:
            _reap(running, results, prog, block=True, quiet=True)
        except KeyboardInterrupt:
            print("[sweep] still waiting for the trainers to stop (they are saving)", flush=True)
    for job in queue:
        results[job.name] = {
            "name": job.name,
            "state": "not started",
            "outcome": "not started",
            "rc": None,
        }


def run_ray(jobs: list[Job], address: str, workers: int, progress_interval: float) -> dict:
    """run_local's work as Ray tasks (run_job_blocking), on a local Ray instance or a cluster at `address`."""
    import ray

    from benchmark import sweep  # by reference, not __main__, so workers import it

    runtime_env = {"env_vars": {"PYTHONPATH": REPO, "PYTHONWARNINGS": "ignore::DeprecationWarning"}}
    if not ray.is_initialized():
        where = (
            {"num_cpus": workers, "include_dashboard": False}
            if address in ("local", "", None)
            else {"address": address}
        )
        ray.init(**where, runtime_env=runtime_env, log_to_driver=False)
    remote = ray.remote(num_cpus=1, max_retries=0)(sweep.run_job_blocking)
    prog = Progress(jobs, progress_interval)
    refs = {remote.remote(asdict(j)): j for j in jobs}
    results, interrupted, pending = {}, False, list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)
            for ref in ready:
                job = refs[ref]
                result = results[job.name] = ray.get(ref)
                if result.get("ran", True):
                    prog.stopped(job)
                else:
                    prog.skip(job.name)
                why = f"({result['error']})" if "error" in result else f"(exit {result['rc']})"
                print(f"[sweep] {job.name}: {result['outcome']} {why}", flush=True)
            running = [refs[r] for r in pending if last_global_step(refs[r].seed_dir) > 0]
            prog.show(len(results), running, len(pending) - len(running))
    except KeyboardInterrupt:
        interrupted = True
        print("\n[sweep] Ctrl-C: cancelling Ray tasks (each sends SIGINT to its trainer) ...", flush=True)
        for ref in pending:
            ray.cancel(ref, force=False)
        for ref in pending:
            job = refs[ref]
            try:
                results[job.name] = ray.get(ref, timeout=120)
            except Exception:
                results[job.name] = {"name": job.name, "state": "?", "outcome": outcome(job, 130), "rc": None}
    prog.show(len(results), [], 0, force=True)
    return {"results": results, "interrupted": interrupted}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=options_table(),
    )
    add = p.add_argument
    add(
        "--study",
        choices=tuple(studies.named()),
        default="grid",
        help="the study whose jobs to run: "
        + ", ".join(studies.named())
        + " (benchmark/studies/: each module "
        "says what its study runs; default: grid, --tasks x --algos x --seeds)",
    )
    add(
        "--tasks",
        default=None,
        help="comma list of tasks, or all, classic, mujoco (default: the study's; grid all; studies that take it: "
        "below)",
    )
    add(
        "--algos",
        default=None,
        help=f"comma list of {', '.join(hparams.algos())}, or all, paper (default: the study's; grid all)",
    )
    add("--seeds", default=None, help="e.g. 1-3 or 1,2,5 (default: the study's; grid 1-3)")
    add(
        "--budget",
        default=None,
        help="steps per run: N or classic=N,mujoco=M,<Task>=K (a task wins over its group) "
        f"(default: the study's; grid {DEFAULT_BUDGET})",
    )
    add(
        "--runs-dir",
        default=None,
        help="root of {task}/{algo}/seed{n}/ (default: benchmark/runs for the literal "
        "grid, else benchmark/runs_<reading or study>)",
    )
    add(
        "--logs-dir",
        default=None,
        help="compact logs root: finished runs are packed there and count as done "
        "(default: the study's; grid: results/logs/<reading> with the default --runs-dir; 'none': off)",
    )
    add(
        "--extra-flags",
        default="",
        help="trainer flags added to every job, e.g. '--num-minibatches 10' or '--norm-obs' (refused: one that "
        "changes a flag a job already passes)",
    )
    add("--workers", type=int, default=os.cpu_count() or 1, help="parallel trainers, or Ray CPUs")
    add("--backend", choices=("local", "ray"), default="local")
    add("--ray-address", default="local", help="local (start Ray here), auto or host:port (a cluster)")
    add("--checkpoint-every", type=int, default=10, help="checkpoint period in updates (default: 10)")
    add(
        "--time-limit",
        default=None,
        help="wall time this sweep may use, e.g. 2h40m (a batch job's end): a run is started only "
        "if it ends in time at the speed of the finished runs of its task in --logs-dir (a task with none: the "
        "slowest run there; local backend)",
    )
    add("--progress-interval", type=float, default=10.0, help="seconds between progress lines")
    add("--dry-run", action="store_true", help="list each job's state and command; run nothing")
    add(
        "--allow-dirty",
        action="store_true",
        help="start jobs although tracked sources differ from the checked-out commit (refused otherwise; each run "
        "records a hash of the changed files)",
    )
    for study in studies.modules():  # each study's own flags
        if hasattr(study, "add_options"):
            study.add_options(p)
    return p


def own_options(study) -> list[str]:
    """The options a study adds to the sweep's parser (add_options), as argparse names them."""
    if not hasattr(study, "add_options"):
        return []
    parser = argparse.ArgumentParser(add_help=False)
    study.add_options(parser)
    return list(vars(parser.parse_args([])))


def taken_options(study) -> list[str]:
    """The study-dependent options the study honours: its SWEEP_OPTIONS, then its own."""
    return [*getattr(study, "SWEEP_OPTIONS", ()), *own_options(study)]


def flag(option: str) -> str:
    """An option's flag: extra_flags -> --extra-flags."""
    return "--" + option.replace("_", "-")


OPTIONS_TABLE = """options each study takes (any other of --tasks, --algos, --seeds, --budget, --extra-flags, --runs-dir,
--logs-dir, --checkpoint-every or a study's own options, given, is refused before anything runs):"""


def options_table() -> str:
    """--help's list of the study-dependent options each study takes."""
    lines = [OPTIONS_TABLE]
    for name, study in studies.named().items():
        taken = " ".join(flag(o) for o in taken_options(study)) or "(none)"
        lines += textwrap.wrap(taken, 110, initial_indent=f"  {name:11s}", subsequent_indent=" " * 13)
    return "\n".join(lines)


def given_options(argv: list[str]) -> set[str]:
    """The options written on the sweep's command line (argparse's names), its defaults left out: argparse sets a
    default only where the namespace it fills has no value yet."""
    parser, unset = build_parser(), object()
    blank = argparse.Namespace(**dict.fromkeys(vars(parser.parse_args([])), unset))
    return {k for k, v in vars(parser.parse_args(argv, namespace=blank)).items() if v is not unset}


def check_options(study, given: set[str]) -> None:
    """ValueError (one line) naming every study-dependent option given that the study does not take."""
    dependent = set(STUDY_OPTIONS).union(*(own_options(s) for s in studies.modules()))
    taken = taken_options(study)
    ordered = [*STUDY_OPTIONS, *sorted(dependent - set(STUDY_OPTIONS))]
    refused = [o for o in ordered if o in given and o not in taken]
    if refused:
        takes = " ".join(flag(o) for o in taken) or "none of them"
        raise ValueError(
            f"--study {study.NAME} does not take {', '.join(flag(o) for o in refused)} (it takes {takes}; "
            "--help lists each study's); nothing was started"
        )


def joined_extra_flags(argv: list[str]) -> list[str]:
    """argv with `--extra-flags VALUE` written as `--extra-flags=VALUE`, so that a one-token value that looks like an
    option (--extra-flags --norm-obs) is the option's value, as argparse takes the second spelling."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == "--extra-flags" and i + 1 < len(argv):
            out.append(f"--extra-flags={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def select(spec: Optional[str], kind: str) -> list[str]:
    """The tasks or algorithms a --tasks / --algos value names (None, not given: all)."""
    spec = (spec or "all").strip()
    if kind == "task":
        if spec in ("all", "classic", "mujoco"):
            return hparams.tasks() if spec == "all" else hparams.tasks(spec)
        return [hparams.resolve_task(s) for s in spec.split(",") if s.strip()]
    if spec in ("all", "paper"):
        return list(hparams.algos() if spec == "all" else hparams.PAPER_ALGOS)
    return [hparams.resolve_algo(s) for s in spec.split(",") if s.strip()]


def main(argv=None) -> int:
    """The CLI; returns the exit code (0, 1 if a run failed, 2 on bad input, 130 if interrupted)."""
    # Ctrl-C (even when started in a script's background, which ignores SIGINT) and SIGTERM stop it resumably
    previous = {
        sig: signal.signal(sig, signal.default_int_handler)
        for sig in (signal.SIGINT, signal.SIGTERM)
        if threading.current_thread() is threading.main_thread()
    }
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: a reader that left shows here, not at exit
        return code
    except BrokenPipeError as e:  # `sweep.py --dry-run | head`: the reader left (Python docs' recipe, exit 1)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        print(f"[sweep] stopped: {e.strerror} (the output's reader left?)", file=sys.stderr)
        return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _names(spec: str, known=None, what: str = "") -> Optional[list[str]]:
    """A comma list's names (None for 'all'); a name not in `known` raises KeyError naming the --{what}s flag."""
    names = None if spec == "all" else [x.strip() for x in spec.split(",") if x.strip()]
    for name in names or ():
        if known is not None and name not in known:
            raise KeyError(f"--{what}s: unknown {what} {name!r}; known: {', '.join(known)}")
    return names


def logs_dir_of(args, default: Optional[str] = None) -> Optional[str]:
    """The compact-log root the sweep's --logs-dir names for a study's jobs: None for 'none' (no compact logs),
    `default` where the flag is not given, else the flag's directory."""
    if (args.logs_dir or "").lower() == "none":
        return None
    return args.logs_dir or default


def logs_under(root: Optional[str], *parts: str) -> Optional[str]:
    """root/parts, absolute: a study's compact logs below the root logs_dir_of gives; None (off) stays None."""
    return os.path.abspath(os.path.join(root, *parts)) if root else None


def study_jobs(args) -> list[Job]:
    """The chosen study's job list (benchmark/studies/<module>.jobs; raises KeyError / ValueError on bad input)."""
    return studies.named()[args.study].jobs(args)


def _main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    argv = joined_extra_flags(argv)
    args = build_parser().parse_args(argv)
    if args.workers < 1 or (args.num_steps is not None and args.num_steps < 1) or args.checkpoint_every < 1:
        print("error: --workers, --num-steps and --checkpoint-every must be >= 1", file=sys.stderr)
        return 2
    try:
        deadline = None if args.time_limit is None else time.time() + parse_duration(args.time_limit)
        if deadline is not None and args.backend == "ray":
            raise ValueError("--time-limit works with the local backend only")
        study = studies.named()[args.study]
        check_options(study, given_options(argv))
        if hasattr(study, "run"):  # a study that measures in-process (the random policy's scores)
            return study.run(args)
        jobs = study_jobs(args)
        if args.extra_flags.strip():
            check_extra_flags(
                args.extra_flags, study_jobs(argparse.Namespace(**{**vars(args), "extra_flags": ""}))
            )
        check_jobs(jobs)
        if not args.dry_run and not args.allow_dirty:
            check_sources(jobs)
    except (KeyError, ValueError) as e:
        print(f"error: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2
    budgets = {}
    for j in jobs:
        budgets.setdefault(j.task, j.budget)
    print(
        f"[sweep] {args.study}: {len(jobs)} runs; budgets: "
        + ", ".join(f"{t}={b:,}" for t, b in budgets.items())
        + (
            f"; runs under {os.path.dirname(os.path.dirname(os.path.dirname(jobs[0].seed_dir)))}"
            if jobs
            else ""
        ),
        flush=True,
    )
    if args.dry_run:
        if not args.allow_dirty:
            try:
                check_sources(jobs)
            except Refused as e:  # what a run would refuse; the dry run still lists the jobs
                print(f"[sweep] a run would refuse: {e}")
        for job in jobs:
            why = compact.damage(committed_log(job))
            if why is not None:
                print(f"[sweep] {why}; a run sets it aside, the job is not done by it")
            try:
                state, run_dir, src = plan(job)
            except compact.RunDirConflict as e:
                print(f"{job.name:32s} {'failed':8s} {e}")
                continue
            run_dir = os.path.join(job.seed_dir, os.path.basename(src)) if src is not None else run_dir
            if state not in ("done", "diverged") and claimed_elsewhere(job):
                print(
                    f"{job.name:32s} {'running':8s} (skip: another sweep, pid {claim_owner(job)}, is running it)"
                )
                continue
            cmd = None if state in ("done", "diverged") else command(job, "resume" if src else state, run_dir)
            print(
                f"{job.name:32s} {state:8s} "
                + (f"cd {job.seed_dir} && " + " ".join(cmd) if cmd else "(skip)")
            )
        return 0
    out = (
        run_ray(jobs, args.ray_address, args.workers, args.progress_interval)
        if args.backend == "ray"
        else run_local(jobs, args.workers, args.progress_interval, deadline)
    )
    counts = collections.Counter(r["outcome"] for r in out["results"].values())
    print("[sweep] " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), flush=True)
    if out["interrupted"]:
        print("[sweep] interrupted; run the same command again to resume", flush=True)
        return 130
    if counts.get("not started (time limit)"):
        print("[sweep] time limit: run the same command again to start the rest", flush=True)
    return 1 if counts.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
