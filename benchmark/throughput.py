"""Throughput of the trainer against the raw environment and Stable-Baselines3 A2C, in one run.

    python benchmark/throughput.py                 # Hopper-v4, 1 env, 30k steps per measurement
    python benchmark/throughput.py --steps 100000  # longer, less noisy

Prints, in one process so the ratios share the machine's state:
  raw env steps/s (random actions), the trainer's vector env vs gymnasium's plain one, smac and sgd training steps/s (updates included),
  SB3 A2C steps/s (n_steps=1000, same env) when stable-baselines3 is installed,
  and the time of one actor update (T=1000) for smac batch-mean vs sgd.
Targets (issue 3): training >= 0.7x raw env; SMAC batch-mean update <= 1.3x SGD update.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

import gymnasium as gym
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import smac_a2c as sa  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)


def raw_env_sps(env_id: str, steps: int) -> float:
    env = gym.make(env_id)
    env.reset(seed=0)
    env.action_space.seed(0)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def vector_env_sps(env_id: str, steps: int, trainer: bool) -> float:
    """Random-action steps/s through the trainer's vector env (sa.make_vector_env: copy=False, per-step info
    dropped) or through gymnasium's plain SyncVectorEnv (copy=True, info stacked) in the same SAME_STEP mode."""
    envs = sa.make_vector_env(env_id, 1) if trainer else gym.vector.SyncVectorEnv(
        [lambda: gym.make(env_id)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    envs.reset(seed=0)
    envs.action_space.seed(0)
    actions = [envs.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for a in actions:
        envs.step(a)
    sps = steps / (time.perf_counter() - start)
    envs.close()
    return sps


def trainer_sps(env_id: str, steps: int, optimizer: str, runs_dir: str) -> tuple[float, float]:
    """Training steps/s of smac_a2c.py (rollout + GAE + critic + actor updates) and the median actor update ms."""
    args = sa.Args(env_id=env_id, optimizer=optimizer, total_timesteps=steps, tensorboard=False,
                   progress=False, runs_dir=runs_dir, exp_name=f"throughput-{optimizer}")
    start = time.perf_counter()
    run_dir, status = sa.train(args)
    elapsed = time.perf_counter() - start  # includes env construction, like SB3's timing below
    with open(os.path.join(run_dir, "updates.csv")) as f:
        rows = f.read().splitlines()[1:]
    ms = statistics.median(float(r.split(",")[11]) for r in rows)
    return steps / elapsed, ms


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
    """Median time of one actor update on a random batch, smac batch-mean vs sgd, interleaved."""
    torch.set_num_threads(1)
    actor = sa.Actor(obs_dim, act_dim, False)
    batch = {"obs": torch.randn(T, obs_dim), "actions": torch.randn(T, act_dim), "advantages": torch.randn(T)}
    times = {"smac": [], "sgd": []}
    args = sa.Args(learning_rate=1e-6)
    for i in range(repeats + 20):
        for name in ("smac", "sgd"):
            start = time.perf_counter()
            sa.ACTOR_STEPS[name](actor, batch, args, {})
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

    raw = raw_env_sps(opts.env_id, opts.steps)
    vec = {"trainer": [], "plain": []}
    for _ in range(3):  # interleaved, median of 3
        for kind in vec:
            vec[kind].append(vector_env_sps(opts.env_id, opts.steps // 3, kind == "trainer"))
    vec = {k: statistics.median(v) for k, v in vec.items()}
    with tempfile.TemporaryDirectory() as tmp:
        for optimizer in ("smac", "sgd"):  # warm-up: first-call costs (imports, allocator) out of the timing
            trainer_sps(opts.env_id, 2000, optimizer, tmp)
        smac, smac_ms = trainer_sps(opts.env_id, opts.steps, "smac", tmp)
        sgd, sgd_ms = trainer_sps(opts.env_id, opts.steps, "sgd", tmp)
    sb3 = None if opts.no_sb3 else sb3_sps(opts.env_id, opts.steps)
    micro = update_ms()

    print(f"{opts.env_id}, 1 env, {opts.steps} steps per measurement, torch threads 1")
    print(f"  raw env (random actions)  {raw:8.0f} steps/s")
    print(f"  vector env, trainer's     {vec['trainer']:8.0f} steps/s  = {vec['trainer'] / vec['plain']:.2f}x gymnasium's "
          f"plain SyncVectorEnv ({vec['plain']:.0f} steps/s; copy=False + per-step info dropped)")
    print(f"  smac_a2c --optimizer smac {smac:8.0f} steps/s  = {smac / raw:.2f}x raw   (target >= 0.70x)")
    print(f"  smac_a2c --optimizer sgd  {sgd:8.0f} steps/s  = {sgd / raw:.2f}x raw")
    if sb3 is not None:
        print(f"  SB3 A2C (n_steps=1000)    {sb3:8.0f} steps/s  = {sb3 / raw:.2f}x raw   "
              f"(smac_a2c smac is {smac / sb3:.1f}x SB3)")
    else:
        print("  SB3 A2C: stable-baselines3 not installed (pip install stable-baselines3), skipped")
    print(f"  actor update, T=1000, in training: smac {smac_ms:.2f} ms, sgd {sgd_ms:.2f} ms "
          f"= {smac_ms / sgd_ms:.2f}x")
    print(f"  actor update, T=1000, interleaved microbenchmark: smac {micro['smac']:.2f} ms, "
          f"sgd {micro['sgd']:.2f} ms = {micro['smac'] / micro['sgd']:.2f}x   (target <= 1.30x)")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"env_id": opts.env_id, "steps": opts.steps, "raw_sps": raw, "vector_env_sps": vec["trainer"],
                       "plain_vector_env_sps": vec["plain"], "smac_sps": smac, "sgd_sps": sgd,
                       "sb3_sps": sb3, "smac_update_ms": smac_ms, "sgd_update_ms": sgd_ms,
                       "micro_smac_ms": micro["smac"], "micro_sgd_ms": micro["sgd"]}, f, indent=2)


if __name__ == "__main__":
    main()
