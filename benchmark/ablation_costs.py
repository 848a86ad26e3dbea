"""Actor update time of the SMAC ablation modes, in one process, on one batch.

    python benchmark/ablation_costs.py                    # T = 1000, Hopper dims, 64-64 actor, 1 thread
    python benchmark/ablation_costs.py --batch 2000 --repeats 50 --threads 2

Setup: Gaussian actor MLP with Hopper's dimensions (obs 11, act 3), two tanh hidden layers of 64
(d = 5,126 parameters), float32, one batch of T random normal observations, actions and advantages.
Every mode calls the trainer's own smac_a2c.smac_step with the mode's flags (default lambda = 1,
eta = 1e-2):

    batch-mean            --fisher batch-mean (paper's Practical Method)
    batch-mean+norm       ... --step-normalization
    per-sample            --fisher per-sample (Algorithm 1: T sequential backward passes). Timed on the
                          first --per-sample-subset samples of the batch and multiplied by T / subset
                          (the loop body costs the same for every sample), marked "extrapolated"
    per-sample-parallel   --fisher per-sample-parallel (one backward, per-sample factors)
    prev-EF r             --prev-ef-beta 0.5 --prev-ef-rank r, in steady state (r terms kept: the
                          warm-up rounds fill all r slots before timing)

Time: --repeats rounds, each timing every mode once in turn (interleaved, so load from other processes
on shared cores hits all modes alike), after warm-up rounds; median and min per mode; the ratio is of
medians. The actor's parameters are restored after every call (outside the timed region), so every
call sees the same theta. torch.set_num_threads(--threads), 1 by default like the trainer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from benchmark import trainer as S  # noqa: E402

OBS_DIM, ACT_DIM = 11, 3  # Hopper


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=1000, help="T, transitions per update")
    p.add_argument("--width", type=int, default=64, help="hidden width (two layers)")
    p.add_argument("--repeats", type=int, default=100, help="rounds; each round times every mode once")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--per-sample-subset", type=int, default=100, help="samples timed for Algorithm 1")
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    opts = p.parse_args()
    torch.set_num_threads(opts.threads)
    torch.manual_seed(0)
    actor = S.Actor(OBS_DIM, ACT_DIM, False, (opts.width, opts.width))
    d = sum(p.numel() for p in actor.parameters())
    gen = torch.Generator().manual_seed(1)
    T = opts.batch
    batch = {"obs": torch.randn(T, OBS_DIM, generator=gen), "actions": torch.randn(T, ACT_DIM, generator=gen),
             "advantages": torch.randn(T, generator=gen)}
    n = min(opts.per_sample_subset, T)
    sub = {k: v[:n] for k, v in batch.items()}
    # (name, args, batch, factor, note): time = factor * measured time
    modes = [("batch-mean", S.Args(), batch, 1.0, ""),
             ("batch-mean + --step-normalization", S.Args(step_normalization=True), batch, 1.0, ""),
             ("per-sample (Algorithm 1)", S.Args(fisher="per-sample"), sub, T / n,
              f"extrapolated: {n} samples timed, x {T / n:g}" if n < T else "all T samples timed"),
             ("per-sample-parallel", S.Args(fisher="per-sample-parallel"), batch, 1.0, ""),
             ("per-sample-parallel + --step-normalization",
              S.Args(fisher="per-sample-parallel", step_normalization=True), batch, 1.0, "")]
    modes += [(f"prev-EF beta=0.5, r={r}", S.Args(prev_ef_beta=0.5, prev_ef_rank=r), batch, 1.0,
               f"state U: {r * d * 4 / 1024:.0f} KiB") for r in opts.ranks]
    saved = {k: v.clone() for k, v in actor.state_dict().items()}
    states = [{} for _ in modes]
    times = [[] for _ in modes]
    for rnd in range(opts.warmup + max(opts.ranks) + 2 + opts.repeats):  # warm-up fills prev-EF's r slots
        for i, (name, args, b, factor, _) in enumerate(modes):
            t0 = time.perf_counter()
            S.smac_step(actor, b, args, states[i])
            dt = time.perf_counter() - t0
            actor.load_state_dict(saved)  # every call sees the same theta
            if rnd >= opts.warmup + max(opts.ranks) + 2:
                times[i].append(dt * factor * 1e3)
    for (name, args, *_), state in zip(modes, states):
        if args.prev_ef_beta > 0:
            assert state["prev_ef_U"].shape == (args.prev_ef_rank, d), name
    print(f"# actor update time, Gaussian MLP {OBS_DIM}-{opts.width}-{opts.width}-{ACT_DIM}, d = {d}, T = {T}, "
          f"float32, {opts.threads} thread(s), torch {torch.__version__}; {opts.repeats} interleaved rounds")
    base = statistics.median(times[0])
    print(f"{'mode':44s} {'median ms':>9s} {'min ms':>8s} {'x batch-mean':>12s}  note")
    for (name, *_, note), ts in zip(modes, times):
        med = statistics.median(ts)
        print(f"{name:44s} {med:9.2f} {min(ts):8.2f} {med / base:12.2f}  {note}")


if __name__ == "__main__":
    main()
