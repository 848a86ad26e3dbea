"""Cost of the public drop-in SMAC step (smac_direction + apply_step_) against the trainer's one-backward
fast path, smac_direction with batched=True (one vmapped vector-Jacobian product), the same solve
written with two flat_grad calls, and SGD, on the trainer's Gaussian MLP
(Hopper dims, T = 1000), interleaved round-robin so that machine noise hits every method alike.

    python benchmark/smac_direction_cost.py                 # widths 64 256 1024, 1 thread
    python benchmark/smac_direction_cost.py --widths 64 --rounds 50 --device cuda

Prints the median time per method and its ratio to SGD measured in the same rounds; writes
docs/smac_direction_cost.csv.
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from benchmark import trainer as S  # noqa: E402
from benchmark.update_cost import generic_smac_step, setup, two_backward_smac_step  # noqa: E402

def batched_smac_step(actor, batch, args, state):
    direction = S.smac_direction_batched(actor, actor.log_prob(batch["obs"], batch["actions"]),
                                         batch["advantages"], args.damping)
    S.apply_step_(actor, direction, args.learning_rate)
    return {}


METHODS = {"sgd": S.sgd_step, "smac (fast path)": S.smac_step, "smac_direction": generic_smac_step,
           "smac_direction batched=True": batched_smac_step, "two flat_grad calls": two_backward_smac_step}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024])
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "smac_direction_cost.csv"))
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    rows = []
    for w in a.widths:
        actor, batch = setup(w, 1000, a.device)
        args = S.Args(learning_rate=1e-6)
        times = {m: [] for m in METHODS}
        for r in range(a.rounds + 2):
            for m, step in METHODS.items():
                if a.device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                step(actor, batch, args, {})
                if a.device == "cuda":
                    torch.cuda.synchronize()
                if r >= 2:  # two warm-up rounds
                    times[m].append(time.perf_counter() - t0)
        base = statistics.median(times["sgd"])
        d = sum(p.numel() for p in actor.parameters())
        for m in METHODS:
            med = statistics.median(times[m])
            rows.append({"width": w, "d": d, "method": m, "median_ms": f"{med * 1e3:.3f}", "x_sgd": f"{med / base:.2f}"})
            print(f"width {w:5d} d {d:9,d}  {m:26s} {med * 1e3:9.2f} ms  x{med / base:5.2f} sgd", flush=True)
    with open(a.out, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    print(f"{a.device}, {a.threads} thread(s), torch {torch.__version__}, {a.rounds} interleaved rounds; wrote {a.out}")


if __name__ == "__main__":
    main()
