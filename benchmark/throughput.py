"""Throughput of the trainer against the raw environment and Stable-Baselines3 A2C, in one run.

    python benchmark/throughput.py                 # Hopper-v4, 1 env, 30k steps per measurement
    python benchmark/throughput.py --steps 100000  # longer, less noisy

Prints, in one process so the ratios share the machine's state: the real limit of a 1-env trainer (env.step
with actions drawn before the clock starts) and the older baseline (action_space.sample() in the loop), the
reference trainer's smac and sgd training steps/s (updates and logs included), SB3 A2C steps/s (n_steps=1000)
when stable-baselines3 is installed, and the time of one actor update (T=1000): smac vs sgd inside training,
and interleaved (the reference's smac_direction step, the lab's one-backward fast path, sgd).
Targets (issue 25): training >= 0.80x the limit on Hopper-v4; SMAC update <= 1.3x SGD's inside training.
"""

import argparse
import contextlib
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import smac_a2c as sa  # noqa: E402
from benchmark import trainer as lab  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


def env_limit_sps(env_id: str, steps: int, sample_each_step: bool) -> float:
    """Random-action env.step()s per second. sample_each_step=False: the actions are drawn before the clock
    starts, so this is the real limit of a 1-env trainer (env.step and resets only). True: the older baseline,
    action_space.sample() inside the loop (about a quarter of a Hopper step)."""
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
    """Training steps/s of the reference smac_a2c.train (rollout + GAE + critic + actor updates, logs
    included) and the median actor update ms inside training."""
    args = sa.Args(env_id=env_id, optimizer=optimizer, total_timesteps=steps, tensorboard=False,
                   exp_name=f"throughput-{optimizer}")
    run_dir = tempfile.mkdtemp(dir=runs_dir)
    with contextlib.redirect_stdout(io.StringIO()):  # the progress lines
        start = time.perf_counter()
        sa.train(args, run_dir=run_dir)
        elapsed = time.perf_counter() - start  # includes env construction, like SB3's timing below
    with open(os.path.join(run_dir, "updates.csv")) as f:
        rows = f.read().splitlines()[1:]
    ms = statistics.median(float(r.split(",")[11]) for r in rows)
    return steps / elapsed, ms


def policy_sample_us(obs_dim=11, act_dim=3, repeats=20_000) -> dict:
    """Microseconds per batch-1 action, interleaved: the reference's numpy copy of the actor (RolloutPolicy.sample)
    against the torch actor under inference_mode (forward + Gaussian noise), 64-64."""
    torch.set_num_threads(1)
    actor = sa.Actor(obs_dim, act_dim, False)
    policy, rng = sa.RolloutPolicy(actor), np.random.default_rng(0)
    obs_np, obs_t = np.zeros((1, obs_dim)), torch.zeros(1, obs_dim)
    times = {"numpy": [], "torch": []}
    with torch.inference_mode():
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(repeats // 5):
                policy.sample(obs_np, rng)
            times["numpy"].append(time.perf_counter() - start)
            start = time.perf_counter()
            for _ in range(repeats // 5):
                mu = actor(obs_t)
                (mu + torch.exp(actor.log_std) * torch.randn_like(mu)).numpy()
            times["torch"].append(time.perf_counter() - start)
    return {k: statistics.median(v) / (repeats // 5) * 1e6 for k, v in times.items()}


def sb3_sps(env_id: str, steps: int):
    try:
        from stable_baselines3 import A2C
    except ImportError:
        return None
    torch.set_num_threads(1)
    A2C("MlpPolicy", gym.make(env_id), n_steps=1000, seed=0, device="cpu", verbose=0).learn(2000)  # warm-up
    model = A2C("MlpPolicy", gym.make(env_id), n_steps=1000, seed=0, device="cpu", verbose=0)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return steps / (time.perf_counter() - start)


def update_ms(obs_dim=11, act_dim=3, T=1000, repeats=200) -> dict:
    """Median time of one actor update on a random batch, interleaved: the reference's SMAC step
    (smac_direction's two backward passes), the lab's one-backward fast path, and SGD."""
    torch.set_num_threads(1)
    actor = sa.Actor(obs_dim, act_dim, False)
    batch = {"obs": torch.randn(T, obs_dim), "actions": torch.randn(T, act_dim), "advantages": torch.randn(T)}
    steps = {"smac": sa.smac_step, "smac fast path": lab.smac_step, "sgd": sa.sgd_step}
    times = {name: [] for name in steps}
    args = lab.Args(learning_rate=1e-6)
    for i in range(repeats + 20):
        for name, step in steps.items():
            start = time.perf_counter()
            step(actor, batch, args, {})
            if i >= 20:
                times[name].append((time.perf_counter() - start) * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-id", default="Hopper-v4")
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--no-sb3", action="store_true", help="skip Stable-Baselines3 even if installed")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    opts = parser.parse_args()
    torch.set_num_threads(1)

    limit = env_limit_sps(opts.env_id, opts.steps, sample_each_step=False)
    raw = env_limit_sps(opts.env_id, opts.steps, sample_each_step=True)
    with tempfile.TemporaryDirectory() as tmp:
        for optimizer in ("smac", "sgd"):  # warm-up: first-call costs (imports, allocator) out of the timing
            trainer_sps(opts.env_id, 2000, optimizer, tmp)
        smac, smac_ms = trainer_sps(opts.env_id, opts.steps, "smac", tmp)
        sgd, sgd_ms = trainer_sps(opts.env_id, opts.steps, "sgd", tmp)
    sb3 = None if opts.no_sb3 else sb3_sps(opts.env_id, opts.steps)
    micro = update_ms()
    sample = policy_sample_us()

    print(f"{opts.env_id}, 1 env, {opts.steps} steps per measurement, torch threads 1, "
          f"{time.strftime('%Y-%m-%d')}, {platform.node()} ({os.cpu_count()} cores)")
    print(f"  env.step limit (actions drawn beforehand) {limit:8.0f} steps/s = 1.00")
    print(f"  env.step + action_space.sample() (old baseline) {raw:8.0f} steps/s = {raw / limit:.2f}x limit")
    print(f"  smac_a2c.py --optimizer smac {smac:8.0f} steps/s = {smac / limit:.2f}x limit (target >= 0.80x), "
          f"{smac / raw:.2f}x old baseline")
    print(f"  smac_a2c.py --optimizer sgd  {sgd:8.0f} steps/s = {sgd / limit:.2f}x limit, {sgd / raw:.2f}x old baseline")
    if sb3 is not None:
        print(f"  SB3 A2C (n_steps=1000)       {sb3:8.0f} steps/s = {sb3 / limit:.2f}x limit "
              f"(smac_a2c smac is {smac / sb3:.1f}x SB3)")
    else:
        print("  SB3 A2C: stable-baselines3 not installed (pip install stable-baselines3), skipped")
    print(f"  actor update, T=1000, in training: smac {smac_ms:.2f} ms, sgd {sgd_ms:.2f} ms "
          f"= {smac_ms / sgd_ms:.2f}x   (target <= 1.30x)")
    print(f"  actor update, T=1000, interleaved microbenchmark: smac (smac_direction) {micro['smac']:.2f} ms, "
          f"lab fast path {micro['smac fast path']:.2f} ms, sgd {micro['sgd']:.2f} ms = "
          f"{micro['smac'] / micro['sgd']:.2f}x / {micro['smac fast path'] / micro['sgd']:.2f}x")
    print(f"  per step: limit {1e6 / limit:.0f} us, trainer {1e6 / smac:.0f} us (the rest of the loop: "
          f"{1e6 / smac - 1e6 / limit:.0f} us); choosing the action: numpy copy {sample['numpy']:.1f} us, torch "
          f"actor {sample['torch']:.1f} us")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"env_id": opts.env_id, "steps": opts.steps, "limit_sps": limit, "raw_sps": raw,
                       "smac_sps": smac, "sgd_sps": sgd, "sb3_sps": sb3, "smac_update_ms": smac_ms,
                       "sgd_update_ms": sgd_ms, "micro_ms": micro}, f, indent=2)


if __name__ == "__main__":
    main()
