"""The lab's run management: exclusive, locked run directories; signals
(Ctrl-C, SIGTERM, SIGHUP) that stop a run after its update; the rollback snapshot and checkpoints with their hash;
config.json, episodes.csv, updates.csv, summary.json, TensorBoard and W&B (RunLog); the progress bar with its
plain-line fallback; output that survives a broken pipe or a vanished terminal; the one crash path.

benchmark/trainer.py's loop uses it; nothing here knows an algorithm.
"""

import contextlib
import copy
import csv
import hashlib
import json
import math
import netrc
import os
import random
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict
from typing import Optional
from urllib.parse import urlparse

import gymnasium as gym
import numpy as np
import torch
from tqdm import tqdm

from benchmark import provenance
from smac_a2c import step_diagnostics


class ConfigError(Exception):
    """Bad input: one line on stderr and exit code 2, before anything is written."""


class RunCrashed(Exception):
    """An exception inside a run, after its last good state, traceback and status were saved: exit 1."""


EXIT_CODES = {"finished": 0, "crashed": 1, "diverged": 3, "SIGHUP": 129, "SIGINT": 130, "SIGTERM": 143}


SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, what Slurm / Kubernetes send, SSH closing


FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_wandb_login() -> None:
    """--track never waits at W&B's login prompt: offline mode, an API key, or a ~/.netrc login for W&B."""
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise ConfigError("--track needs wandb (pip install -r requirements.txt)") from None
    if os.environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun"):
        return
    if os.environ.get("WANDB_API_KEY"):
        return
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    try:
        login = netrc.netrc(os.environ.get("NETRC")).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        login = None
    if login is None:
        raise ConfigError("--track: W&B is not logged in here; run `wandb login`, or set WANDB_MODE=offline")


class StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP ask the run to stop after its current update (the first signal's name in
    .name) instead of killing it; the previous handlers come back on exit."""

    def __init__(self):
        self.name = None
        self.previous = {}

    def __enter__(self):
        for sig in SIGNALS:
            self.previous[sig] = signal.signal(sig, self.handle)
        return self

    def handle(self, signum, frame):
        if self.name is None:
            self.name = signal.Signals(signum).name

    def __exit__(self, *exc_info):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def ignore_signals() -> None:
    """SIGINT, SIGTERM and SIGHUP ignored to the process's end (the script's last atexit callback): Python's
    shutdown resets handled signals to the default (a kill with their code), not SIG_IGN (all threads)."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def exit_with(code: int) -> None:
    """The script's end: exit `code` (main()'s). A signal from here to ignore_signals (W&B's upload at exit)
    ends the process at once, with `code` if a signal decided it, else with its own."""

    def at_once(signum, frame):
        os._exit(code if code > 128 else 128 + signum)

    for sig in SIGNALS:
        signal.signal(sig, at_once)
    sys.exit(code)


def snapshot(args, nets: dict, actor_state: dict, rng, global_step: int, update: int) -> dict:
    """All the training state, copied: a checkpoint, or the point a bad update rolls back to."""
    rngs = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state(), "python": random.getstate()}
    state = {"args": asdict(args), "global_step": global_step, "update": update, "rng": rngs}
    state["actor_state"] = actor_state
    for key, module in nets.items():
        state[key] = module.state_dict()
    return copy.deepcopy(state)


def restore(state: dict, nets: dict, rng) -> tuple[int, int, dict]:
    """Load a snapshot into the networks, optimizers and RNGs; returns (global_step, update, actor_state)."""
    for key, module in nets.items():
        module.load_state_dict(state[key])
    rng.bit_generator.state = state["rng"]["numpy"]
    torch.set_rng_state(state["rng"]["torch"])
    random.setstate(state["rng"]["python"])
    return state["global_step"], state["update"], copy.deepcopy(state["actor_state"])


def with_hash(state: dict) -> dict:
    """The checkpoint plus "sha256", a hash of its other contents as JSON (a tensor: dtype, shape, bytes)."""

    def describe(t: torch.Tensor) -> list:
        return [str(t.dtype), list(t.shape), hashlib.sha256(t.detach().cpu().numpy().tobytes()).hexdigest()]

    contents = {k: v for k, v in state.items() if k != "sha256"}
    text = json.dumps(contents, default=describe)
    return {**state, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


def save_checkpoint(run_dir: str, state: dict) -> None:
    """RUN/checkpoint.pt via a .tmp file; torch.load(weights_only=True) loads it without running code. A save
    that fails (a full disk) leaves the previous checkpoint.pt and no .tmp."""
    path = os.path.join(run_dir, "checkpoint.pt")
    try:
        torch.save(with_hash(state), path + ".tmp")
        os.replace(path + ".tmp", path)
    except BaseException:
        remove_quietly(path + ".tmp")
        raise


def write_json(path: str, obj: dict) -> None:
    """path via a .tmp file: the previous file, or the new one, never a half-written one or a .tmp left behind."""
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(obj, f, indent=2, allow_nan=False)
        os.replace(path + ".tmp", path)
    except BaseException:
        remove_quietly(path + ".tmp")
        raise


def quiet_tensorboard_thread(hook_args) -> None:
    """threading.excepthook while a run logs to TensorBoard: the writer thread's error (a full disk) is raised
    again in the run's own thread at its next write, where the crash path reports it in one line; the thread's
    own traceback on stderr would only repeat it."""
    if type(hook_args.thread).__name__ == "_AsyncWriterThread":
        return
    threading.__excepthook__(hook_args)


def is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def say(text: str, stream=None) -> None:
    """Print a line if the stream takes it: a broken pipe, a closed stream or a vanished terminal (EIO) never
    stops a run. After a failure the stream's file descriptor points at /dev/null, so later lines (and
    Python's flush at exit) go nowhere instead of failing."""
    stream = sys.stdout if stream is None else stream
    try:
        print(text, file=stream, flush=True)
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def wandb_run_id(run_dir: str) -> str:
    """A run's W&B id, from its run directory: a resumed run continues the same W&B run."""
    return hashlib.sha1(os.path.abspath(run_dir).encode()).hexdigest()[:16]


class RunLog:
    """A run's outputs: config.json, episodes.csv and updates.csv (with TensorBoard and W&B), the progress
    bar (or a plain line every 10 updates or 30 s when stdout is not a terminal), summary.json, the closing
    line."""

    def __init__(
        self, args, run_dir: str, device, global_step: int, budget: int, start: Optional[dict] = None
    ):
        self.args = args
        self.run_dir = run_dir
        self.budget = budget
        config = {"args": asdict(args), "device": str(device), "torch": torch.__version__}
        config["gymnasium"] = gym.__version__
        config["numpy"] = np.__version__
        config["python"] = sys.version.split()[0]
        config["resumed_from_step"] = global_step
        config["mujoco"] = getattr(
            sys.modules.get("mujoco"), "__version__", None
        )  # None: a run without MuJoCo
        config["provenance"] = run_provenance(run_dir, global_step, start)
        write_json(os.path.join(run_dir, "config.json"), config)
        self.writer = None
        if args.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            # a resumed run hides the events that a killed process logged after its checkpoint
            self.writer = SummaryWriter(run_dir, purge_step=global_step + 1 if global_step else None)
            self.previous_excepthook = threading.excepthook
            threading.excepthook = quiet_tensorboard_thread
        self.wandb_run = None
        if args.track:
            import wandb

            self.wandb_run = wandb.init(
                project=args.wandb_project_name,
                entity=args.wandb_entity,
                dir=run_dir,
                config=asdict(args),
                name=os.path.basename(run_dir),
                resume="allow",
                id=wandb_run_id(run_dir),
                settings=wandb.Settings(init_timeout=60),
            )
            self.wandb_run.define_metric("*", step_metric="global_step")
        if budget != args.total_timesteps:
            say(
                f"note: --total-timesteps {args.total_timesteps} trains {budget} steps (whole rollouts)",
                sys.stderr,
            )
        self.recent_returns = []
        self.start_time = time.time()
        self.start_step = global_step
        self.last_line = time.time()
        self.bar = tqdm(
            total=budget,
            initial=global_step,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not is_terminal(sys.stdout),
            file=sys.stdout,
        )

    def write_row(self, name: str, row: dict) -> None:
        """RUN/{name}.csv (its header first in a new or empty file), TensorBoard and W&B."""
        path = os.path.join(self.run_dir, f"{name}.csv")
        new_file = not os.path.isfile(path) or os.path.getsize(path) == 0
        with open(path, "a", newline="") as f:
            writer = csv.writer(f)
            if new_file:
                writer.writerow(list(row))
            writer.writerow(list(row.values()))
        scalars = {}
        for key, value in row.items():
            if key in ("update", "global_step"):
                continue
            group = "losses" if name == "updates" and key != "sps" else "charts"
            scalars[f"{group}/{key}"] = value
        if self.writer is not None:
            for key, value in scalars.items():
                self.writer.add_scalar(key, value, row["global_step"])
        if self.wandb_run is not None:
            self.wandb_run.log({**scalars, "global_step": row["global_step"]})

    def episode(self, global_step: int, episodic_return, episodic_length) -> None:
        row = {"global_step": global_step, "episodic_return": float(episodic_return)}
        row["episodic_length"] = int(episodic_length)
        self.write_row("episodes", row)
        self.recent_returns = (self.recent_returns + [float(episodic_return)])[-10:]

    def update(self, update, global_step, value_loss, mean_logprob, entropy, diagnostics, actor_ms) -> None:
        """A row of updates.csv: losses, SMAC's diagnostics (the mean over the lab's minibatch steps), time"""
        if not isinstance(diagnostics, list):
            diagnostics = [diagnostics]
        parts = [step_diagnostics(d) for d in diagnostics]
        row = {"update": update, "global_step": global_step, "value_loss": value_loss}
        row["mean_logprob"] = mean_logprob
        row["entropy"] = entropy
        for key in parts[0]:
            row[key] = float(np.mean([p[key] for p in parts]))
        row["actor_update_ms"] = actor_ms
        row["sps"] = (global_step - self.start_step) / max(time.time() - self.start_time, 1e-9)
        self.write_row("updates", row)
        ret10 = f"{np.mean(self.recent_returns):.1f}" if self.recent_returns else "-"
        try:
            self.bar.update(row["global_step"] - self.bar.n)
            self.bar.set_postfix(sps=f"{row['sps']:.0f}", ret10=ret10, refresh=False)
        except (OSError, ValueError):  # the terminal went away: plain lines from now on (best effort)
            self.bar.disable = True
        if self.bar.disable and (row["update"] % 10 == 0 or time.time() - self.last_line >= 30):
            line = (
                f"step {row['global_step']:,}/{self.budget:,} | update {row['update']} | {row['sps']:.0f} SPS"
            )
            say(f"{line} | mean return of the last 10 episodes {ret10}")
            self.last_line = time.time()

    def close(self, status: str, signal_name: Optional[str], update: int, global_step: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.bar.close()
        if self.writer is not None:
            self.writer.close()
            threading.excepthook = self.previous_excepthook
        if self.wandb_run is not None:
            self.wandb_run.finish()
        wall = time.time() - self.start_time
        mean10 = float(np.mean(self.recent_returns)) if self.recent_returns else math.nan
        summary = {"status": status, "signal": signal_name if status == "interrupted" else None}
        summary["updates"] = update
        summary["global_step"] = global_step
        summary["wall_time_s"] = wall
        summary["sps"] = (global_step - self.start_step) / wall
        summary["mean_return_last10"] = mean10 if math.isfinite(mean10) else None
        summary["run_dir"] = self.run_dir
        write_json(os.path.join(self.run_dir, "summary.json"), summary)
        if status == "diverged":
            checkpoint = os.path.join(self.run_dir, "checkpoint.pt")
            say(f"diverged at update {update + 1} (NaN/Inf); the state before it: {checkpoint}", sys.stderr)
        trained = global_step - self.start_step
        say(
            f"{status}: {global_step} steps ({trained} in {wall:.1f}s, {summary['sps']:.0f} SPS), "
            f"mean return of the last 10 episodes {mean10:.2f}; run dir {self.run_dir}"
        )


def run_provenance(run_dir: str, global_step: int, start: Optional[dict] = None) -> list[dict]:
    """config.json's `provenance`: one record per start of the run (provenance.record, taken when the trainer
    started: `start`, or now), oldest first. A resumed run keeps its earlier starts from the config.json it had,
    those before the step it resumes from (a start whose steps were all cut back by the resume left nothing); a run
    resumed past a start that recorded none (an older run) begins with a "not recorded" one at step 0."""
    start = {**(start or provenance.record()), "step": int(global_step)}
    if not global_step:
        return [start]
    config = provenance.read_json(os.path.join(run_dir, "config.json"))
    before = config.get("provenance") if isinstance(config, dict) else None
    earlier = [
        s for s in provenance.starts(before) if isinstance(s.get("step"), int) and s["step"] < global_step
    ]
    if not earlier or earlier[0]["step"] > 0:
        earlier.insert(0, {"step": 0, "commit": provenance.NOT_RECORDED, "host": provenance.NOT_RECORDED})
    return earlier + [start]


def run_name(args) -> str:
    """{env_id}__{exp_name}__{seed}__{unix_time} ('/' in a namespaced id such as ALE/Pong-v5 becomes '-')."""
    return f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}".replace("/", "-")


def create_run_dir(args) -> str:
    """runs/<run_name>, created exclusively (same second: suffixes -2, -3, ..., -9999)."""
    base = os.path.join(args.runs_dir, run_name(args))
    try:
        os.makedirs(args.runs_dir, exist_ok=True)
        for k in range(1, 10_000):  # runs started in the same second: -2, -3, ...
            path = base if k == 1 else f"{base}-{k}"
            try:
                os.mkdir(path)
                return path
            except FileExistsError:
                continue
    except OSError as e:
        raise ConfigError(
            f"--runs-dir {args.runs_dir!r}: cannot create a run directory there ({e.strerror})"
        ) from None
    raise ConfigError(f"--runs-dir {args.runs_dir!r}: too many runs named {os.path.basename(base)}")


class RunLock:
    """An exclusive lock on a run directory (flock on run_dir/.lock, holding the owner's pid): a second trainer on
    it is refused with exit 2. The kernel releases the lock when its owner exits or dies: never stale."""

    def __init__(self, run_dir: str):
        self.path, self.file = os.path.join(run_dir, ".lock"), None

    def __enter__(self):
        import fcntl

        try:
            self.file = open(self.path, "a+")
        except OSError as e:  # a read-only run directory
            raise ConfigError(
                f"run directory {os.path.dirname(self.path)!r} cannot be written ({e.strerror or e})"
            ) from None
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.file.seek(0)
            owner = self.file.read().strip() or "?"
            self.file.close()
            raise ConfigError(
                f"run directory {os.path.dirname(self.path)!r} is in use by another trainer "
                f"(pid {owner}); wait for it to finish or stop it"
            ) from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()
        return self

    def __exit__(self, *_):
        self.file.close()  # closing releases the flock


def run_dir_locked(run_dir: str) -> bool:
    """Whether a live trainer holds run_dir's lock (for sweep.py)."""
    try:
        with RunLock(run_dir):
            return False
    except ConfigError:
        return True


def logged_anything(run_dir: str) -> bool:
    return any(
        os.path.exists(os.path.join(run_dir, n)) for n in ("checkpoint.pt", "episodes.csv", "updates.csv")
    )


def record_crash(
    run_dir: str, error: BaseException, last_good: Optional[dict] = None, fresh: bool = False
) -> str:
    """The one crash path: the last good state as checkpoint.pt, RUN/traceback.txt, status crashed in summary.json,
    and the one-line message it returns. A fresh run that died before it logged anything (e.g. too large networks)
    is removed instead. It never raises: what it cannot write (a full disk, a removed directory) is named in the
    message."""
    line = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:300]}"
    failed = []
    if last_good is not None:
        try:
            save_checkpoint(run_dir, last_good)
        except Exception:
            failed.append("checkpoint.pt")
    with contextlib.suppress(OSError):
        os.remove(os.path.join(run_dir, "checkpoint.pt.tmp"))
    if fresh and os.path.isdir(run_dir) and not logged_anything(run_dir):
        shutil.rmtree(run_dir, ignore_errors=True)
        return f"{line} (before the run logged anything; its directory {run_dir} was removed)"
    trace = os.path.join(run_dir, "traceback.txt")
    try:
        with open(trace, "w") as f:
            f.write("".join(traceback.format_exception(error)))
    except Exception:
        failed.append("traceback.txt")
        remove_quietly(trace)  # a full disk: no empty or cut-off traceback.txt beside the line that says so
    try:
        write_json(
            os.path.join(run_dir, "summary.json"), {"status": "crashed", "error": line, "run_dir": run_dir}
        )
    except Exception:
        failed.append("summary.json")
    saved = []
    if "traceback.txt" not in failed:
        saved.append(f"traceback in {trace}")
    if "summary.json" not in failed:
        saved.append("status crashed in summary.json")
    if failed:
        saved.append(f"could not write {', '.join(failed)} in {run_dir}")
    return f"{line} ({'; '.join(saved)})"
