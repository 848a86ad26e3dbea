"""Cost measurements, one subcommand each: python -m benchmark.costs COMMAND [flags] (COMMAND --help for the flags).

throughput: both trainers against the raw environment and Stable-Baselines3 A2C, in one process so the ratios share
the machine's state (Hopper-v4, 1 env, --steps per measurement, 1 torch thread): the real limit of a 1-env trainer
(env.step, actions drawn beforehand), the older baseline (action_space.sample() in the loop), the lab's trainer
(python -m benchmark.trainer, what the sweeps run) with smac and sgd, the reference smac_a2c.py with smac (updates and
logs included; it acts with the torch actor), SB3 A2C (n_steps=1000) if installed, one actor update (T=1000) inside
training and interleaved (the reference's smac_direction step, the lab's one-backward fast path, sgd), and the cost of
choosing an action. Targets: the lab's trainer >= 0.85x the limit; the reference: none (clarity decides
there), its ratio printed beside SB3's.
    python -m benchmark.costs throughput [--steps 100000] [--no-sb3] [--json FILE]

update-cost: ONE actor update versus policy size d for sgd, adam, smac (the trainer's one-backward fast path),
smac-generic (the public smac_direction + apply_step_), smac-2bw (the same solve with two flat_grad calls), smac-ps
(Algorithm 1), cg and kfac, with the trainer's defaults, on a Gaussian MLP with Hopper's dims and two tanh layers of
width w (d = w^2 + 16 w + 6), T = --batch random samples. Time: median of --repeats calls after --warmup (K-FAC in
steady state); smac-ps is first timed on 20 samples and skipped past --per-sample-limit-s. Memory beyond sgd: on the
CPU each (size, method) runs in a fresh subprocess with MALLOC_MMAP_THRESHOLD_=64 KiB, and after a warm-up update,
malloc_trim and a VmHWM reset, the peak RSS rise of one update plus the exact bytes of the state a step keeps (Adam's
moments, K-FAC's factors); on CUDA max_memory_allocated - memory_allocated. Writes docs/update_cost.{csv,png}
(docs/update_cost_cuda.* with --device cuda; --out STEM) and prints a markdown table.
    python -m benchmark.costs update-cost [--device cuda] [--threads 2 --widths 64 256]

ablation-costs: actor update time of the SMAC ablation modes, the trainer's smac_step with each mode's flags on one
batch (Hopper dims, 64-64 actor, T = --batch): batch-mean (+ --step-normalization), per-sample (Algorithm 1, timed on
--per-sample-subset samples x T / subset, marked extrapolated), per-sample-parallel (+ --step-normalization), prev-EF
beta=0.5 rank r in steady state. --repeats interleaved rounds after warm-up, theta restored after every call; median
and min per mode, ratio of medians. benchmark/ablations.py parses this output.
    python -m benchmark.costs ablation-costs [--batch 2000 --repeats 50 --threads 2]

device-check: CPU versus CUDA: training steps/s on Hopper-v4 with smac (--steps, 20k) on the CPU and with --cuda,
side by side with their ratio: the lab's trainer at 64-64 and the reference smac_a2c.py at 64-64 and 1024-1024
(each after a warm-up run); then one actor update (T=1000) of smac batch-mean and sgd on each device for hidden
widths 64 to 2048 (--update-widths). Without CUDA it prints the CPU rows and one line saying the --cuda rows were
skipped.
    python -m benchmark.costs device-check [--steps 20000] [--update-widths 64 1024]

direction-cost: the public drop-in SMAC step (smac_direction + apply_step_) against the trainer's one-backward fast
path, smac_direction_batched (one vmapped vector-Jacobian product), the same solve with two flat_grad calls and SGD
(Hopper-dims MLP, T = 1000, interleaved); the median per method and its ratio to SGD; writes
docs/smac_direction_cost.csv.
    python -m benchmark.costs direction-cost [--widths 64 --rounds 50 --device cuda]

kl-step-cost: one batch-mean SMAC update with kl_step_ (smac_direction, then kl_step_ at target 0.01 with
log_prob_fn recomputing the batch's log pi) against one SGD step (Hopper-dims Gaussian MLP, 64-64, T = 1000, one
thread), median of --rounds interleaved rounds and its ratio to SGD; --compare FILE times FILE's kl_step_ (e.g.
`git show REV:smac_kl.py > FILE`, or an older smac_a2c.py that held it) in the same rounds.
    python -m benchmark.costs kl-step-cost [--rounds 100] [--compare OLD_smac_kl.py]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import importlib.util
import io
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import smac_a2c  # noqa: E402
import smac_kl  # noqa: E402
from benchmark import algorithms  # noqa: E402
from benchmark import trainer as lab  # noqa: E402
from benchmark.stats import write_csv  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)
OBS_DIM, ACT_DIM = 11, 3  # Hopper
DOC = {p.split(":")[0]: p for p in __doc__.split("\n\n")[1:]}  # each subcommand's paragraph


def setup(width: int, batch: int, device: str, seed: int = 0):
    """Gaussian actor (Hopper dims, two hidden layers of `width`) and a random batch of `batch` samples."""
    torch.manual_seed(seed)
    actor = lab.Actor(OBS_DIM, ACT_DIM, False, (width, width)).to(device)
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    data = {
        "obs": torch.randn(batch, OBS_DIM, generator=g),
        "actions": torch.randn(batch, ACT_DIM, generator=g),
        "advantages": torch.randn(batch, generator=g),
    }
    return actor, {k: v.to(device) for k, v in data.items()}


def timed(call, device="cpu") -> float:
    """Seconds of one call, CUDA-synchronized before and after on a GPU."""
    sync = torch.cuda.synchronize if str(device).startswith("cuda") else (lambda: None)
    sync()
    t0 = time.perf_counter()
    call()
    sync()
    return time.perf_counter() - t0


def interleaved_ms(calls: dict, rounds: int, warmup: int, device="cpu", after=None) -> dict:
    """warmup + rounds rounds, each timing every call once in turn (load from other processes hits all alike), then
    after() untimed; the ms of the last `rounds` rounds per name."""
    times = {name: [] for name in calls}
    for r in range(warmup + rounds):
        for name, call in calls.items():
            dt = timed(call, device)
            if after:
                after()
            if r >= warmup:
                times[name].append(dt * 1e3)
    return times


def update_ms(steps: dict, width=64, device="cpu", T=1000, repeats=200, warmup=20) -> dict:
    """Median ms of one actor update per step function, interleaved, on one random batch (eta 1e-6, fresh state)."""
    actor, batch = setup(width, T, device)
    args = lab.Args(learning_rate=1e-6)
    calls = {name: (lambda step=step: step(actor, batch, args, {})) for name, step in steps.items()}
    return {k: statistics.median(v) for k, v in interleaved_ms(calls, repeats, warmup, device).items()}


def env_limit_sps(env_id: str, steps: int, sample_each_step: bool) -> float:
    """env.step()s per second with random actions drawn beforehand (the limit) or sampled in the loop (old baseline)."""
    env = gym.make(env_id, disable_env_checker=True)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(steps)] if not sample_each_step else None
    start = time.perf_counter()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(actions[i] if actions else env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def trainer_sps(env_id: str, steps: int, optimizer: str, runs_dir: str) -> tuple[float, float]:
    """Training steps/s of the lab's trainer (its logs included) and the median actor update ms inside training."""
    args = lab.Args(
        env_id=env_id,
        optimizer=optimizer,
        total_timesteps=steps,
        tensorboard=False,
        exp_name=f"throughput-{optimizer}",
        runs_dir=runs_dir,
    )
    with contextlib.redirect_stdout(io.StringIO()):  # the progress lines
        # includes env construction, like SB3's timing
        start = time.perf_counter()
        run_dir, _ = lab.train(args)
        elapsed = time.perf_counter() - start
    with open(os.path.join(run_dir, "updates.csv")) as f:
        rows = f.read().splitlines()[1:]
    return steps / elapsed, statistics.median(float(r.split(",")[11]) for r in rows)


def reference_sps(env_id: str, steps: int, runs_dir: str, **flags) -> float:
    """Training steps/s of smac_a2c.train with its defaults (SMAC; TensorBoard and progress lines included), and
    `flags` (Args fields: hidden_sizes, cuda)."""
    args = smac_a2c.Args(env_id=env_id, total_timesteps=steps, exp_name="throughput-reference", **flags)
    cwd = os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    os.chdir(runs_dir)  # the reference writes runs/ where it runs
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            elapsed = timed(lambda: smac_a2c.train(args))
    finally:
        os.chdir(cwd)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return steps / elapsed


def policy_sample_us(obs_dim=11, act_dim=3, repeats=20_000) -> dict:
    """Microseconds per batch-1 action, 5 interleaved blocks: the lab's numpy copy of the 64-64 actor
    (RolloutPolicy.sample) against the reference's torch actor (smac_a2c.Actor's distribution's sample(), as its loop acts)."""
    actor, n = lab.Actor(obs_dim, act_dim, False), repeats // 5
    policy, rng = lab.RolloutPolicy(actor), np.random.default_rng(0)
    reference_actor = smac_a2c.Actor(obs_dim, act_dim, False)
    obs_np, obs_t = np.zeros((1, obs_dim)), torch.zeros(1, obs_dim)

    def numpy_block():
        for _ in range(n):
            policy.sample(obs_np, rng)

    def torch_block():
        for _ in range(n):
            with torch.inference_mode():
                reference_actor(obs_t).sample().numpy()

    with torch.no_grad():
        times = interleaved_ms({"numpy": numpy_block, "torch": torch_block}, rounds=5, warmup=0)
    return {k: statistics.median(v) / n * 1e3 for k, v in times.items()}


def sb3_sps(env_id: str, steps: int):
    try:
        from stable_baselines3 import A2C
    except ImportError:
        return None
    A2C("MlpPolicy", gym.make(env_id), n_steps=1000, seed=0, device="cpu", verbose=0).learn(2000)  # warm-up
    model = A2C("MlpPolicy", gym.make(env_id), n_steps=1000, seed=0, device="cpu", verbose=0)
    return steps / timed(lambda: model.learn(total_timesteps=steps))


def reference_step(step):
    """The reference's actor steps take (actor, batch, args) with its own Actor, whose forward() gives a distribution;
    update_ms calls (the lab's actor, batch, args, state): the step runs on a reference Actor holding the lab actor's
    first weights (the same layout), made at the first call."""
    twin = {}

    def call(actor, batch, args, state):
        if "actor" not in twin:
            hidden = [layer.out_features for layer in actor.linears[:-1]]
            twin["actor"] = smac_a2c.Actor(OBS_DIM, ACT_DIM, False, hidden).to(batch["obs"].device)
            twin["actor"].load_state_dict(actor.state_dict())
        return step(twin["actor"], batch, args)

    return call


def throughput(opts) -> None:
    torch.set_num_threads(1)
    limit = env_limit_sps(opts.env_id, opts.steps, sample_each_step=False)
    raw = env_limit_sps(opts.env_id, opts.steps, sample_each_step=True)
    with tempfile.TemporaryDirectory() as tmp:
        for optimizer in ("smac", "sgd"):  # warm-up: first-call costs (imports, allocator) out of the timing
            trainer_sps(opts.env_id, 2000, optimizer, tmp)
        reference_sps(opts.env_id, 2000, tmp)
        smac, smac_ms = trainer_sps(opts.env_id, opts.steps, "smac", tmp)
        sgd, sgd_ms = trainer_sps(opts.env_id, opts.steps, "sgd", tmp)
        reference = reference_sps(opts.env_id, opts.steps, tmp)
    sb3 = None if opts.no_sb3 else sb3_sps(opts.env_id, opts.steps)
    micro = update_ms(
        {
            "smac": reference_step(smac_a2c.smac_batch_mean_step),
            "smac fast path": lab.smac_step,
            "sgd": reference_step(smac_a2c.sgd_step),
        }
    )
    sample = policy_sample_us()

    print(
        f"{opts.env_id}, 1 env, {opts.steps} steps per measurement, torch threads 1, "
        f"{time.strftime('%Y-%m-%d')}, {platform.node()} ({os.cpu_count()} cores)"
    )
    print(f"  env.step limit (actions drawn beforehand) {limit:8.0f} steps/s = 1.00")
    print(f"  env.step + action_space.sample() (old baseline) {raw:8.0f} steps/s = {raw / limit:.2f}x limit")
    print(
        f"  lab trainer --optimizer smac {smac:8.0f} steps/s = {smac / limit:.2f}x limit (target >= 0.85x), "
        f"{smac / raw:.2f}x old baseline"
    )
    print(
        f"  lab trainer --optimizer sgd  {sgd:8.0f} steps/s = {sgd / limit:.2f}x limit, "
        f"{sgd / raw:.2f}x old baseline"
    )
    print(
        f"  smac_a2c.py (reference, smac) {reference:8.0f} steps/s = {reference / limit:.2f}x limit (target >= 0.45x)"
    )
    print(
        f"  SB3 A2C (n_steps=1000)       {sb3:8.0f} steps/s = {sb3 / limit:.2f}x limit (the reference is "
        f"{reference / sb3:.2f}x SB3 (target >= 1.7x), the lab {smac / sb3:.2f}x)"
        if sb3 is not None
        else "  SB3 A2C: stable-baselines3 not installed (pip install stable-baselines3), skipped"
    )
    print(
        f"  actor update, T=1000, in the lab's training: smac {smac_ms:.2f} ms, sgd {sgd_ms:.2f} ms "
        f"= {smac_ms / sgd_ms:.2f}x   (target <= 1.30x)"
    )
    print(
        f"  actor update, T=1000, interleaved microbenchmark: smac (smac_direction) {micro['smac']:.2f} ms, "
        f"lab fast path {micro['smac fast path']:.2f} ms, sgd {micro['sgd']:.2f} ms = "
        f"{micro['smac'] / micro['sgd']:.2f}x / {micro['smac fast path'] / micro['sgd']:.2f}x"
    )
    print(
        f"  per step: limit {1e6 / limit:.0f} us, lab trainer {1e6 / smac:.0f} us, reference {1e6 / reference:.0f} us; "
        f"choosing the action: lab's numpy copy {sample['numpy']:.1f} us, reference's torch actor {sample['torch']:.1f} us"
    )
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(
                {
                    "env_id": opts.env_id,
                    "steps": opts.steps,
                    "limit_sps": limit,
                    "raw_sps": raw,
                    "smac_sps": smac,
                    "sgd_sps": sgd,
                    "reference_sps": reference,
                    "sb3_sps": sb3,
                    "smac_update_ms": smac_ms,
                    "sgd_update_ms": sgd_ms,
                    "micro_ms": micro,
                },
                f,
                indent=2,
            )


SMAC_VARIANTS = ["smac-generic", "smac-2bw", "smac-ps"]  # SMAC's other code paths (make_step)
# every registered optimizer (benchmark/algorithms.py)
METHODS = list(algorithms.optimizers()) + SMAC_VARIANTS


def direction_step(direction_fn):
    """An actor step from a direction function: log-probs with their graph -> direction_fn -> apply_step_."""

    def step(actor, batch, args, state):
        log_probs = actor.log_prob(batch["obs"], batch["actions"])
        direction = direction_fn(actor, log_probs, batch["advantages"], args.damping)
        lab.apply_step_(actor, direction, args.learning_rate)
        return {"g": direction, "step": direction}

    return step


generic_smac_step = direction_step(lab.smac_direction)  # the drop-in path (smac-generic)
batched_smac_step = direction_step(lab.smac_direction_batched)


def two_backward_smac_step(actor, batch, args, state):
    """Reference for smac-generic: l_bar and g from two separate backward passes."""
    params = list(actor.parameters())
    log_probs = actor.log_prob(batch["obs"], batch["actions"])
    ell = lab.flat_grad(log_probs.mean(), params, retain_graph=True)
    g = lab.flat_grad((log_probs * batch["advantages"]).mean(), params)
    direction = lab.sherman_morrison_direction(g, ell, args.damping)
    lab.apply_step_(params, direction, args.learning_rate)
    return {"g": g, "step": direction}


def make_step(method: str):
    """(step function, Args) with the trainer's defaults; a tiny eta so repeated calls stay finite."""
    if method == "smac-ps":
        return lab.ACTOR_STEPS["smac"], lab.Args(optimizer="smac", fisher="per-sample", learning_rate=1e-5)
    if method in ("smac-generic", "smac-2bw"):
        step = generic_smac_step if method == "smac-generic" else two_backward_smac_step
        return step, lab.Args(optimizer="smac", learning_rate=1e-5)
    return lab.ACTOR_STEPS[method], lab.Args(optimizer=method, learning_rate=1e-5)


def state_bytes(x) -> int:
    """Bytes of the tensors in a step's persistent state (nested dicts, lists, tuples)."""
    if torch.is_tensor(x):
        return x.numel() * x.element_size()
    items = x.values() if isinstance(x, dict) else x if isinstance(x, (list, tuple)) else ()
    return sum(state_bytes(v) for v in items)


def time_method(method, actor0, batch, a):
    """Median ms of one update, repeats used, persistent state bytes, and smac-ps's estimate (s) where skipped."""
    step, args = make_step(method)
    actor, state = copy.deepcopy(actor0), {}
    repeats, warmup = a.repeats, a.warmup
    if method == "smac-ps":  # estimate on 20 samples first; T backward passes can be very slow
        small = {k: v[:20] for k, v in batch.items()}
        step(actor, small, args, state)  # warm-up
        estimate = timed(lambda: step(actor, small, args, state), a.device) * batch["obs"].shape[0] / 20
        if estimate > a.per_sample_limit_s:
            return None, 0, 0, estimate
        repeats, warmup = max(1, min(a.repeats, int(a.method_budget_s / estimate))), 0
    t0 = time.perf_counter()
    for _ in range(warmup):
        step(actor, batch, args, state)
        if time.perf_counter() - t0 > a.method_budget_s / 3:
            break  # large sizes: one warm-up call is enough
    times = []
    for _ in range(repeats):
        times.append(timed(lambda: step(actor, batch, args, state), a.device))
        if method != "smac-ps" and sum(times) > a.method_budget_s and len(times) >= 3:
            break  # large sizes: at least 3 repeats, then stop at the time budget
    return statistics.median(times) * 1e3, len(times), state_bytes(lab.actor_state_dict(state)), None


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith(key)).split()[1])


def memory_probe(width: int, method: str, batch: int, threads: int) -> float:
    """In a fresh process: peak RSS rise (MiB) during one steady-state update (after a warm-up call)."""
    import ctypes
    import gc

    torch.set_num_threads(threads)
    actor, data = setup(width, batch, "cpu")
    step, args = make_step(method)
    state: dict = {}
    step(actor, {k: v[:20] for k, v in data.items()} if method == "smac-ps" else data, args, state)  # warm-up
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # give freed heap memory back, so RSS is live memory
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak-RSS mark (VmHWM) to the current RSS
    before = _status_kb("VmRSS")
    step(actor, data, args, state)
    return (_status_kb("VmHWM") - before) / 1024


def memory_cpu(width, method, a) -> float:
    out = subprocess.run(
        [
            sys.executable,
            os.path.abspath(__file__),
            "update-cost",
            "--_probe",
            str(width),
            method,
            "--batch",
            str(a.batch),
            "--threads",
            str(a.threads),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"},  # mmap, unmapped on free
    )
    return float(out.stdout.strip().splitlines()[-1])


def memory_cuda(method, actor0, batch) -> float:
    step, args = make_step(method)
    actor, state = copy.deepcopy(actor0), {}
    step(actor, batch, args, state)  # warm-up (lazy initialization, optimizer state)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    step(actor, batch, args, state)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 2**20


def update_cost(a) -> None:
    if a._probe:
        print(memory_probe(int(a._probe[0]), a._probe[1], a.batch, a.threads))
        return
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device available")
    torch.set_num_threads(a.threads)
    stem = a.out or os.path.join(ROOT, "docs", "update_cost" + ("_cuda" if a.device == "cuda" else ""))
    device_name = torch.cuda.get_device_name() if a.device == "cuda" else f"cpu ({a.threads} thread(s))"
    methods = ["sgd"] + [m for m in a.methods if m != "sgd"]  # sgd first: the reference
    sgd_ms = sgd_mem = None
    rows, t_start = [], time.time()
    for width in a.widths:
        actor0, batch = setup(width, a.batch, a.device)
        d = sum(p.numel() for p in actor0.parameters())
        for method in methods:
            ms, reps, sbytes, estimate = time_method(method, actor0, batch, a)
            ok, mem, transient = ms is not None, None, None
            if ok and not a.no_memory:
                transient = (
                    memory_cuda(method, actor0, batch) if a.device == "cuda" else memory_cpu(width, method, a)
                )
                mem = transient + sbytes / 2**20  # what one update needs beyond actor + batch
            if method == "sgd":
                sgd_ms, sgd_mem = ms, mem
            row = {
                "device": device_name,
                "threads": a.threads,
                "batch": a.batch,
                "width": width,
                "d": d,
                "method": method,
                "status": "ok" if ok else "skipped",
                "ms": ms,
                "repeats": reps,
                "ratio_to_sgd": ms / sgd_ms if ok else None,
                "transient_peak_mb": transient,
                "peak_delta_mb": mem,
                "extra_mb": (mem - sgd_mem) if mem is not None and sgd_mem is not None else None,
                "state_mb": sbytes / 2**20 if ok else None,
                "note": "" if ok else f"estimated {estimate:.0f} s per call > {a.per_sample_limit_s:g} s",
            }
            rows.append(row)
            print(
                f"w={width:5d} d={d:9d} {method:8s} "
                + (
                    f"{ms:10.2f} ms  x{row['ratio_to_sgd']:6.2f}  "
                    f"mem+{mem if mem is not None else float('nan'):8.1f} MiB  ({reps} reps)"
                    if ok
                    else row["note"]
                ),
                file=sys.stderr,
                flush=True,
            )
    write_csv(stem + ".csv", rows)
    plot(rows, stem + ".png", device_name, a.batch)
    print(markdown(rows, methods))
    print(
        f"\n{device_name}, torch {torch.__version__}, T = {a.batch}, total benchmark time "
        f"{time.time() - t_start:.0f} s; wrote {os.path.relpath(stem, ROOT)}.csv/.png",
        file=sys.stderr,
    )


def markdown(rows, methods) -> str:
    by = {(r["width"], r["method"]): r for r in rows}

    def table(cell) -> list:
        lines = ["| width | d | " + " | ".join(methods) + " |", "|---:|---:|" + "---:|" * len(methods)]
        return lines + [
            f"| {w} | {by[(w, 'sgd')]['d']:,} | "
            + " | ".join(cell(by.get((w, m)), m) for m in methods)
            + " |"
            for w in sorted({r["width"] for r in rows})
        ]

    def memory(r, m) -> str:
        if r is None or r["peak_delta_mb"] is None:
            return "skipped"
        return (f"{r['peak_delta_mb']:.1f}" if m == "sgd" else f"{r['extra_mb']:+.1f}") + (
            f" [{r['state_mb']:.1f}]" if r["state_mb"] else ""
        )

    def timing(r, m) -> str:
        if r is None or r["ms"] is None:
            return "skipped"
        return f"{r['ms']:.1f} ms ({r['ratio_to_sgd']:.2f}x)"

    lines = table(timing)
    if any(r["peak_delta_mb"] is not None for r in rows):
        lines += [
            "",
            "Extra memory beyond sgd for one update, MiB: transient peak + state kept between updates "
            "(sgd column: sgd's own transient peak; the state alone in brackets where non-zero):",
            "",
            *table(memory),
        ]
    return "\n".join(lines)


def plot(rows, path, device_name, batch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for m in METHODS:
        pts = sorted((r["d"], r["ms"]) for r in rows if r["method"] == m and r["ms"] is not None)
        if pts:
            ax.plot(*zip(*pts), marker="o", label=m)
    ax.set(xscale="log", yscale="log", xlabel="actor parameters d", ylabel="one actor update (ms)")
    ax.set_title(f"Actor update cost, T = {batch}, Hopper dims, {device_name}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def ablation_costs(opts) -> None:
    torch.set_num_threads(opts.threads)
    actor, batch = setup(opts.width, opts.batch, "cpu")
    d, T = sum(p.numel() for p in actor.parameters()), opts.batch
    n = min(opts.per_sample_subset, T)
    sub = {k: v[:n] for k, v in batch.items()}
    # (name, args, batch, factor, note): time = factor * measured time
    modes = [
        ("batch-mean", lab.Args(), batch, 1.0, ""),
        ("batch-mean + --step-normalization", lab.Args(step_normalization=True), batch, 1.0, ""),
        (
            "per-sample (Algorithm 1)",
            lab.Args(fisher="per-sample"),
            sub,
            T / n,
            f"extrapolated: {n} samples timed, x {T / n:g}" if n < T else "all T samples timed",
        ),
        ("per-sample-parallel", lab.Args(fisher="per-sample-parallel"), batch, 1.0, ""),
        (
            "per-sample-parallel + --step-normalization",
            lab.Args(fisher="per-sample-parallel", step_normalization=True),
            batch,
            1.0,
            "",
        ),
    ]
    modes += [
        (
            f"prev-EF beta=0.5, r={r}",
            lab.Args(prev_ef_beta=0.5, prev_ef_rank=r),
            batch,
            1.0,
            f"state U: {r * d * 4 / 1024:.0f} KiB",
        )
        for r in opts.ranks
    ]
    saved = {k: v.clone() for k, v in actor.state_dict().items()}
    states = [{} for _ in modes]
    calls = {
        i: (lambda args=m[1], b=m[2], st=st: lab.smac_step(actor, b, args, st))
        for i, (m, st) in enumerate(zip(modes, states))
    }
    # every call sees the same theta
    times = interleaved_ms(
        calls,
        opts.repeats,
        opts.warmup + max(opts.ranks) + 2,  # warm-up fills prev-EF's r slots
        after=lambda: actor.load_state_dict(saved),
    )
    for (name, args, *_), state in zip(modes, states):
        if args.prev_ef_beta > 0:
            assert state["prev_ef_U"].shape == (args.prev_ef_rank, d), name
    print(
        f"# actor update time, Gaussian MLP {OBS_DIM}-{opts.width}-{opts.width}-{ACT_DIM}, d = {d}, T = {T}, "
        f"float32, {opts.threads} thread(s), torch {torch.__version__}; {opts.repeats} interleaved rounds"
    )
    ms = [[t * factor for t in times[i]] for i, (*_, factor, _) in enumerate(modes)]
    base = statistics.median(ms[0])
    print(f"{'mode':44s} {'median ms':>9s} {'min ms':>8s} {'x batch-mean':>12s}  note")
    for (name, *_, note), ts in zip(modes, ms):
        med = statistics.median(ts)
        print(f"{name:44s} {med:9.2f} {min(ts):8.2f} {med / base:12.2f}  {note}")


def lab_sps(steps: int, runs_dir: str, hidden_sizes: tuple, cuda: bool) -> float:
    """Training steps/s of the lab's trainer with smac on Hopper-v4 (no TensorBoard), after a warm-up run."""
    args = lab.Args(
        env_id="Hopper-v4",
        total_timesteps=steps,
        hidden_sizes=hidden_sizes,
        cuda=cuda,
        tensorboard=False,
        runs_dir=runs_dir,
    )
    with contextlib.redirect_stdout(io.StringIO()):  # the progress lines
        lab.train(lab.Args(**{**args.__dict__, "total_timesteps": min(2000, steps)}))  # warm-up
        return steps / timed(functools.partial(lab.train, args))


def reference_device_sps(steps: int, runs_dir: str, hidden_sizes: tuple, cuda: bool) -> float:
    """Training steps/s of the reference smac_a2c.py on Hopper-v4 (its defaults), after a warm-up run."""
    reference_sps("Hopper-v4", min(2000, steps), runs_dir, hidden_sizes=hidden_sizes, cuda=cuda)
    return reference_sps("Hopper-v4", steps, runs_dir, hidden_sizes=hidden_sizes, cuda=cuda)


DEVICE_TRAINERS = {"lab trainer": lab_sps, "smac_a2c.py": reference_device_sps}
DEVICE_PAIRS = [("lab trainer", (64, 64)), ("smac_a2c.py", (64, 64)), ("smac_a2c.py", (1024, 1024))]


def device_check_rows(cuda_here: bool) -> list:
    """device-check's training rows, (trainer, hidden sizes, the --cuda values it runs): each pair on the CPU,
    and with --cuda where CUDA is here."""
    devices = (False, True) if cuda_here else (False,)
    return [(trainer, hidden, devices) for trainer, hidden in DEVICE_PAIRS]


def device_training(steps: int) -> None:
    """Steps/s of device_check_rows, one line per row: CPU and --cuda side by side with their ratio; without
    CUDA, the CPU figures and one line saying the --cuda runs were skipped."""
    cuda_here = torch.cuda.is_available()
    print(f"training Hopper-v4, smac, {steps} steps per run, steps/s (a warm-up run before each):")
    with tempfile.TemporaryDirectory() as tmp:
        for trainer, hidden, devices in device_check_rows(cuda_here):
            sps = {cuda: DEVICE_TRAINERS[trainer](steps, tmp, hidden, cuda) for cuda in devices}
            line = f"  {trainer:12s} {'-'.join(map(str, hidden)):10s} cpu {sps[False]:7.0f}"
            if cuda_here:
                line = line + f"   --cuda {sps[True]:7.0f}   --cuda / cpu {sps[True] / sps[False]:.2f}x"
            print(line, flush=True)
    if not cuda_here:
        print("  --cuda runs skipped: no CUDA device here (torch.cuda.is_available() is False)")


def device_check(opts) -> None:
    torch.set_num_threads(1)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    print("GPU:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
    device_training(opts.steps)
    for width in opts.update_widths:
        for device in devices:
            ms = update_ms(
                {"smac": lab.ACTOR_STEPS["smac"], "sgd": lab.ACTOR_STEPS["sgd"]},
                width,
                device,
                repeats=50,
                warmup=10,
            )
            print(
                f"actor update T=1000 hidden={(width, width)} {device.type:4s}: smac {ms['smac']:7.2f} ms  "
                f"sgd {ms['sgd']:7.2f} ms  ratio {ms['smac'] / ms['sgd']:.2f}"
            )


def direction_cost(a) -> None:
    methods = {
        "sgd": lab.sgd_step,
        "smac (fast path)": lab.smac_step,
        "smac_direction": generic_smac_step,
        "smac_direction batched=True": batched_smac_step,
        "two flat_grad calls": two_backward_smac_step,
    }
    torch.set_num_threads(a.threads)
    rows = []
    for w in a.widths:
        med = update_ms(methods, w, a.device, T=1000, repeats=a.rounds, warmup=2)
        d = w * w + 16 * w + 6  # parameters of the Hopper-dims actor
        for m in methods:
            x = med[m] / med["sgd"]
            rows.append({"width": w, "d": d, "method": m, "median_ms": f"{med[m]:.3f}", "x_sgd": f"{x:.2f}"})
            print(f"width {w:5d} d {d:9,d}  {m:26s} {med[m]:9.2f} ms  x{x:5.2f} sgd", flush=True)
    write_csv(a.out, rows)
    print(
        f"{a.device}, {a.threads} thread(s), torch {torch.__version__}, {a.rounds} interleaved rounds; wrote {a.out}"
    )


def kl_step_update(module):
    """An actor step: smac_a2c.smac_direction, then module.kl_step_ at its default target (eta set by the KL it
    causes)."""

    def step(actor, batch, args, state):
        def log_prob_fn():
            return actor.log_prob(batch["obs"], batch["actions"])

        direction = smac_a2c.smac_direction(actor, log_prob_fn(), batch["advantages"], args.damping)
        return {"eta": module.kl_step_(actor, direction, log_prob_fn)}

    return step


def kl_step_cost(a) -> None:
    steps = {"sgd": lab.sgd_step, "smac_direction + kl_step_": kl_step_update(smac_kl)}
    if a.compare:
        spec = importlib.util.spec_from_file_location("compared_block", a.compare)
        compared = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(compared)
        steps[f"the same, {a.compare}"] = kl_step_update(compared)
    torch.set_num_threads(1)
    med = update_ms(steps, 64, "cpu", T=1000, repeats=a.rounds, warmup=5)
    for name, ms in med.items():
        print(f"{name:40s} {ms:8.3f} ms  x{ms / med['sgd']:5.2f} sgd")
    print(f"64-64, T = 1000, 1 thread, torch {torch.__version__}, median of {a.rounds} interleaved rounds")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", metavar="command", required=True)

    def command(name, fn, summary):
        sp = sub.add_parser(
            name, help=summary, description=DOC[name], formatter_class=argparse.RawDescriptionHelpFormatter
        )
        sp.set_defaults(fn=fn)
        return sp.add_argument

    add = command(
        "throughput", throughput, "trainer steps/s against env.step and SB3 A2C; update and action costs"
    )
    add("--env-id", default="Hopper-v4")
    add("--steps", type=int, default=30_000)
    add("--no-sb3", action="store_true", help="skip Stable-Baselines3 even if installed")
    add("--json", default=None, help="also write the figures to this JSON file")

    add = command(
        "update-cost", update_cost, "one actor update's time and memory versus policy size, every optimizer"
    )
    add("--widths", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2000])
    add("--batch", type=int, default=1000, help="T, samples per update")
    add("--methods", nargs="+", default=METHODS, choices=METHODS)
    add("--repeats", type=int, default=7)
    add("--warmup", type=int, default=2)
    add(
        "--method-budget-s",
        type=float,
        default=15.0,
        help="stop repeating a method at a size after this many seconds (at least 3 repeats)",
    )
    add(
        "--per-sample-limit-s",
        type=float,
        default=10.0,
        help="skip smac-ps where one call is estimated to take longer than this",
    )
    add("--threads", type=int, default=1, help="torch.set_num_threads")
    add("--device", choices=["cpu", "cuda"], default="cpu")
    add("--no-memory", action="store_true", help="skip the memory measurement")
    add("--out", default=None, help="output stem (default docs/update_cost, docs/update_cost_cuda on cuda)")
    add("--_probe", nargs=2, help=argparse.SUPPRESS)

    add = command(
        "ablation-costs", ablation_costs, "update time of the SMAC ablation modes (read by ablations.py)"
    )
    add("--batch", type=int, default=1000, help="T, transitions per update")
    add("--width", type=int, default=64, help="hidden width (two layers)")
    add("--repeats", type=int, default=100, help="rounds; each round times every mode once")
    add("--warmup", type=int, default=3)
    add("--threads", type=int, default=1)
    add("--per-sample-subset", type=int, default=100, help="samples timed for Algorithm 1")
    add("--ranks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])

    add = command("device-check", device_check, "CPU versus CUDA: training steps/s and actor update times")
    add("--steps", type=int, default=20_000, help="training steps per run")
    add(
        "--update-widths",
        type=int,
        nargs="*",
        default=[64, 256, 1024, 2048],
        help="hidden widths of the actor-update rows (none: no update rows)",
    )

    add = command("direction-cost", direction_cost, "the drop-in smac_direction step against the batched one")
    add("--widths", type=int, nargs="+", default=[64, 256, 1024])
    add("--rounds", type=int, default=21)
    add("--threads", type=int, default=1)
    add("--device", choices=["cpu", "cuda"], default="cpu")
    add("--out", default=os.path.join(ROOT, "docs", "smac_direction_cost.csv"))

    add = command("kl-step-cost", kl_step_cost, "smac_direction + kl_step_ against an SGD step")
    add("--rounds", type=int, default=100)
    add("--compare", default=None, help="another file's kl_step_ (an older smac_kl.py), timed alongside")

    opts = p.parse_args(argv)
    opts.fn(opts)


if __name__ == "__main__":
    main()
