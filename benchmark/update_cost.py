"""Cost of ONE actor update versus policy size d, for every actor step in smac_a2c.py.

    python benchmark/update_cost.py                      # CPU, 1 thread: docs/update_cost.{csv,png} + markdown table
    python benchmark/update_cost.py --device cuda        # GPU: docs/update_cost_cuda.{csv,png}
    python benchmark/update_cost.py --threads 2 --widths 64 256

Setup: Gaussian actor MLP with Hopper's dimensions (obs 11, act 3), two tanh hidden layers of
width w (d = w^2 + 16 w + 6: w = 64 -> 5.1e3, w = 2000 -> 4.0e6), batch T = 1000 of random
normal observations, actions and advantages. Every method calls the trainer's own step function
(smac_a2c.ACTOR_STEPS) with its default flags, in the same process, on the same batch:
sgd, adam, smac (batch-mean, the trainer's one-backward fast path), smac-generic (the public
smac_direction + apply_step_, any network: two backward passes), smac-2bw (the same solve written out
with two flat_grad calls), smac-ps (per-sample, Algorithm 1:
T backward passes), cg, kfac.

Time: median over --repeats calls after --warmup calls (K-FAC's first call creates its factors,
so its timed calls are steady-state: EMA update + eigendecompositions, every call with the default
--kfac-update-freq 1). torch.set_num_threads(--threads), 1 by default like the trainer. smac-ps is
first timed on 20 samples; if T/20 times that exceeds --per-sample-limit-s it is marked skipped.

Memory ("extra beyond sgd"): on the CPU, each (size, method) runs in a fresh subprocess with
glibc's mmap threshold fixed at 64 KiB (freed tensors leave the RSS instead of being silently
reused): build the actor and batch, one warm-up update (lazy initialization; creates Adam's or
K-FAC's state), malloc_trim, reset the peak-RSS mark to the current RSS (writing 5 to
/proc/self/clear_refs), run one update and read transient_peak = VmHWM - VmRSS_before: the
process's real high-water mark during a steady-state update (activations, gradients, CG's
double-backward graph, K-FAC's temporaries, allocator slack), not an estimate. state_mb = bytes
of the tensors a step keeps between updates (Adam's moments, K-FAC's factors and eigenvectors),
counted exactly. peak_delta = transient_peak + state; extra_mb = peak_delta(method) -
peak_delta(sgd); allocator noise is about +-1 MiB. On CUDA the same, with
torch.cuda.max_memory_allocated() - memory_allocated() in-process (tensors held by
the caching allocator, not its slack).
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from benchmark import trainer as S  # noqa: E402

OBS_DIM, ACT_DIM = 11, 3  # Hopper
METHODS = ["sgd", "adam", "smac", "smac-generic", "smac-2bw", "smac-ps", "cg", "kfac"]


def generic_smac_step(actor, batch, args, state):
    """The drop-in path: log-probs with their graph -> smac_direction -> apply_step_."""
    direction = S.smac_direction(actor, actor.log_prob(batch["obs"], batch["actions"]), batch["advantages"],
                                 args.damping)
    S.apply_step_(actor, direction, args.learning_rate)
    return {"g": direction, "step": direction}


def two_backward_smac_step(actor, batch, args, state):
    """Reference for smac-generic: l_bar and g from two separate backward passes."""
    params = list(actor.parameters())
    log_probs = actor.log_prob(batch["obs"], batch["actions"])
    ell = S.flat_grad(log_probs.mean(), params, retain_graph=True)
    g = S.flat_grad((log_probs * batch["advantages"]).mean(), params)
    direction = S.sherman_morrison_direction(g, ell, args.damping)
    S.apply_step_(params, direction, args.learning_rate)
    return {"g": g, "step": direction}


def setup(width: int, batch: int, device: str, seed: int = 0):
    torch.manual_seed(seed)
    actor = S.Actor(OBS_DIM, ACT_DIM, False, (width, width)).to(device)
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    data = {"obs": torch.randn(batch, OBS_DIM, generator=g), "actions": torch.randn(batch, ACT_DIM, generator=g),
            "advantages": torch.randn(batch, generator=g)}
    return actor, {k: v.to(device) for k, v in data.items()}


def make_step(method: str):
    """(step function, Args) with the trainer's defaults; a tiny eta so repeated calls stay finite."""
    if method == "smac-ps":
        return S.ACTOR_STEPS["smac"], S.Args(optimizer="smac", fisher="per-sample", learning_rate=1e-5)
    if method in ("smac-generic", "smac-2bw"):
        return ({"smac-generic": generic_smac_step, "smac-2bw": two_backward_smac_step}[method],
                S.Args(optimizer="smac", learning_rate=1e-5))
    return S.ACTOR_STEPS[method], S.Args(optimizer=method, learning_rate=1e-5)


def state_bytes(state: dict) -> int:
    total = 0
    for v in S.actor_state_dict(state).values():
        stack = [v]
        while stack:
            x = stack.pop()
            if torch.is_tensor(x):
                total += x.numel() * x.element_size()
            elif isinstance(x, dict):
                stack += list(x.values())
            elif isinstance(x, (list, tuple)):
                stack += list(x)
    return total


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_method(method, actor0, batch, args_cli):
    """Median wall time (ms) of one update, plus repeats used and persistent state size."""
    step, args = make_step(method)
    actor, state = copy.deepcopy(actor0), {}
    if method == "smac-ps":  # estimate on 20 samples first; T backward passes can be very slow
        small = {k: v[:20] for k, v in batch.items()}
        step(actor, small, args, state)  # warm-up
        sync(args_cli.device)
        t0 = time.perf_counter()
        step(actor, small, args, state)
        sync(args_cli.device)
        estimate = (time.perf_counter() - t0) * batch["obs"].shape[0] / 20
        if estimate > args_cli.per_sample_limit_s:
            return None, 0, 0, estimate
        repeats, warmup = max(1, min(args_cli.repeats, int(args_cli.method_budget_s / estimate))), 0
    else:
        repeats, warmup = args_cli.repeats, args_cli.warmup
    t0 = time.perf_counter()
    for _ in range(warmup):
        step(actor, batch, args, state)
        if time.perf_counter() - t0 > args_cli.method_budget_s / 3:
            break  # large sizes: one warm-up call is enough
    sync(args_cli.device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step(actor, batch, args, state)
        sync(args_cli.device)
        times.append(time.perf_counter() - t0)
        if method != "smac-ps" and sum(times) > args_cli.method_budget_s and len(times) >= 3:
            break  # large sizes: at least 3 repeats, then stop at the time budget
    return statistics.median(times) * 1e3, len(times), state_bytes(state), None


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    raise KeyError(key)


def memory_probe(width: int, method: str, batch: int, threads: int) -> float:
    """Run in a fresh process: peak RSS increase (MiB) during one steady-state update of `method`
    (after a warm-up call, which does lazy initialization and creates Adam's / K-FAC's state)."""
    torch.set_num_threads(threads)
    actor, data = setup(width, batch, "cpu")
    step, args = make_step(method)
    state: dict = {}
    step(actor, {k: v[:20] for k, v in data.items()} if method == "smac-ps" else data, args, state)  # warm-up
    import ctypes
    import gc
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # give freed heap memory back, so RSS is live memory
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak-RSS mark (VmHWM) to the current RSS
    before = _status_kb("VmRSS")
    step(actor, data, args, state)
    return (_status_kb("VmHWM") - before) / 1024


def memory_cpu(width, method, args_cli) -> float:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--_probe", str(width), method,
                          "--batch", str(args_cli.batch), "--threads", str(args_cli.threads)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"})  # large tensors: mmap, unmapped on free
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--widths", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2000])
    p.add_argument("--batch", type=int, default=1000, help="T, samples per update")
    p.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--method-budget-s", type=float, default=15.0,
                   help="stop repeating a method at a size after this many seconds (at least 3 repeats)")
    p.add_argument("--per-sample-limit-s", type=float, default=10.0,
                   help="skip smac-ps where one call is estimated to take longer than this")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    p.add_argument("--out", default=None, help="output stem (default docs/update_cost, docs/update_cost_cuda on cuda)")
    p.add_argument("--_probe", nargs=2, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a._probe:
        print(memory_probe(int(a._probe[0]), a._probe[1], a.batch, a.threads))
        return
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device available")
    torch.set_num_threads(a.threads)
    stem = a.out or os.path.join(ROOT, "docs", "update_cost" + ("_cuda" if a.device == "cuda" else ""))
    device_name = torch.cuda.get_device_name() if a.device == "cuda" else f"cpu ({a.threads} thread(s))"
    methods = ["sgd"] + [m for m in a.methods if m != "sgd"]  # sgd first: the reference
    rows, t_start = [], time.time()
    for width in a.widths:
        actor0, batch = setup(width, a.batch, a.device)
        d = sum(p.numel() for p in actor0.parameters())
        sgd_ms = sgd_mem = None
        for method in methods:
            ms, reps, sbytes, estimate = time_method(method, actor0, batch, a)
            mem = transient = None
            if ms is not None and not a.no_memory:
                transient = (memory_cuda(method, actor0, batch) if a.device == "cuda"
                             else memory_cpu(width, method, a))
                mem = transient + sbytes / 2**20  # what one update needs beyond actor + batch
            if method == "sgd":
                sgd_ms, sgd_mem = ms, mem
            row = {"device": device_name, "threads": a.threads, "batch": a.batch, "width": width, "d": d,
                   "method": method, "status": "ok" if ms is not None else "skipped",
                   "ms": ms, "repeats": reps, "ratio_to_sgd": ms / sgd_ms if ms is not None else None,
                   "transient_peak_mb": transient, "peak_delta_mb": mem, "extra_mb": (mem - sgd_mem) if mem is not None and sgd_mem is not None else None,
                   "state_mb": sbytes / 2**20 if ms is not None else None,
                   "note": "" if ms is not None else f"estimated {estimate:.0f} s per call > {a.per_sample_limit_s:g} s"}
            rows.append(row)
            print(f"w={width:5d} d={d:9d} {method:8s} " + (f"{ms:10.2f} ms  x{row['ratio_to_sgd']:6.2f}  "
                  f"mem+{mem if mem is not None else float('nan'):8.1f} MiB  ({reps} reps)" if ms is not None
                  else row["note"]), file=sys.stderr, flush=True)
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, stem + ".png", device_name, a.batch)
    print(markdown(rows, methods))
    print(f"\n{device_name}, torch {torch.__version__}, T = {a.batch}, total benchmark time "
          f"{time.time() - t_start:.0f} s; wrote {os.path.relpath(stem, ROOT)}.csv/.png", file=sys.stderr)


def markdown(rows, methods) -> str:
    by = {(r["width"], r["method"]): r for r in rows}
    widths = sorted({r["width"] for r in rows})
    lines = ["| width | d | " + " | ".join(methods) + " |", "|---:|---:|" + "---:|" * len(methods)]
    for w in widths:
        cells = []
        for m in methods:
            r = by.get((w, m))
            cells.append("skipped" if r is None or r["ms"] is None else f"{r['ms']:.1f} ms ({r['ratio_to_sgd']:.2f}x)")
        lines.append(f"| {w} | {by[(w, 'sgd')]['d']:,} | " + " | ".join(cells) + " |")
    if any(r["peak_delta_mb"] is not None for r in rows):
        lines += ["", "Extra memory beyond sgd for one update, MiB: transient peak + state kept between updates "
                  "(sgd column: sgd's own transient peak; the state alone in brackets where non-zero):", "",
                  "| width | d | " + " | ".join(methods) + " |", "|---:|---:|" + "---:|" * len(methods)]
        for w in widths:
            cells = []
            for m in methods:
                r = by.get((w, m))
                if r is None or r["peak_delta_mb"] is None:
                    cells.append("skipped")
                    continue
                val = r["peak_delta_mb"] if m == "sgd" else r["extra_mb"]
                cells.append(f"{val:+.1f}" if m != "sgd" else f"{val:.1f}")
                if r["state_mb"]:
                    cells[-1] += f" [{r['state_mb']:.1f}]"
            lines.append(f"| {w} | {by[(w, 'sgd')]['d']:,} | " + " | ".join(cells) + " |")
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
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("actor parameters d")
    ax.set_ylabel("one actor update (ms)")
    ax.set_title(f"Actor update cost, T = {batch}, Hopper dims, {device_name}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
