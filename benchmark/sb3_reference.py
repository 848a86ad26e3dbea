"""Outside reference row: Stable-Baselines3 A2C with its own defaults on the MuJoCo tasks.

    pip install stable-baselines3            # not in requirements.txt: only this script needs it
    python benchmark/sb3_reference.py --budget 300000 --seeds 1-3 --workers 2

Each run writes benchmark/runs/{task}/sb3-a2c/seed{n}/sb3/ with the same files the harness reads
from smac_a2c.py runs (episodes.csv: global_step, episodic_return, episodic_length; summary.json
with status and global_step; config.json), so `python benchmark/aggregate.py --runs-dir benchmark/runs
--results-dir OUT` bins and smooths it with the paper's protocol like any other algorithm. SB3's defaults are used unchanged (A2C:
n_steps=5, RMSprop lr 7e-4, ent_coef 0, vf_coef 0.5, max_grad_norm 0.5, gae_lambda 1, 64-64 tanh
MLP with shared optimizer); the environments are the harness's (1000-step episodes). A finished run
(summary.json says finished with at least the budget) is skipped, so the command resumes a grid;
an unfinished run is started over (SB3 runs are not checkpointed here).
"""

import argparse
import csv
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

MUJOCO = ["HalfCheetah", "Hopper", "Swimmer", "Walker2d", "Humanoid", "Pusher"]


def run_one(task: str, seed: int, budget: int, runs_dir: str) -> str:
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    import gymnasium as gym
    import torch
    from stable_baselines3 import A2C
    from stable_baselines3.common.callbacks import BaseCallback

    from benchmark import hparams

    torch.set_num_threads(1)
    env_id = hparams.trainer_env_id(task)
    out = os.path.join(runs_dir, task, "sb3-a2c", f"seed{seed}", "sb3")
    summary_path = os.path.join(out, "summary.json")
    if os.path.exists(summary_path):
        summary = json.load(open(summary_path))
        if summary.get("status") == "finished" and summary.get("global_step", 0) >= budget:
            return f"{task}/sb3-a2c/seed{seed}: done, skipped"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"args": {"env_id": env_id, "seed": seed, "total_timesteps": budget, "algo": "sb3-a2c defaults"},
                   "stable_baselines3": __import__("stable_baselines3").__version__}, f, indent=2)
    episodes = open(os.path.join(out, "episodes.csv"), "w", newline="")
    writer = csv.writer(episodes)
    writer.writerow(["global_step", "episodic_return", "episodic_length"])

    class LogEpisodes(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:  # added by SB3's Monitor wrapper when an episode ends
                    writer.writerow([self.num_timesteps, info["episode"]["r"], info["episode"]["l"]])
            return True

    if env_id.startswith("benchmark.envs:"):
        import benchmark.envs  # noqa: F401  (registers the 1000-step ids)
        env_id = env_id.split(":", 1)[1]
    start = time.time()
    model = A2C("MlpPolicy", gym.make(env_id), seed=seed, device="cpu", verbose=0)
    model.learn(total_timesteps=budget, callback=LogEpisodes())
    episodes.close()
    with open(summary_path, "w") as f:
        json.dump({"status": "finished", "global_step": budget, "wall_time_s": time.time() - start,
                   "sps": budget / (time.time() - start)}, f, indent=2)
    return f"{task}/sb3-a2c/seed{seed}: finished in {time.time() - start:.0f}s"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(MUJOCO))
    p.add_argument("--seeds", default="1-3")
    p.add_argument("--budget", type=int, default=300_000)
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--runs-dir", default=os.path.join(REPO, "benchmark", "runs"))
    opts = p.parse_args()
    lo, _, hi = opts.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    jobs = [(t, s) for s in seeds for t in opts.tasks.split(",")]
    with ProcessPoolExecutor(opts.workers) as pool:
        futures = [pool.submit(run_one, t, s, opts.budget, opts.runs_dir) for t, s in jobs]
        for future in as_completed(futures):
            print(future.result(), flush=True)


if __name__ == "__main__":
    main()
