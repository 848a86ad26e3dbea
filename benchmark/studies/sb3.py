"""The outside reference: Stable-Baselines3's A2C with SB3's own defaults on the paper's tasks. How does a widely used
actor-critic implementation, untuned, do on the tasks and budgets of the earlier literal grid? Exploratory
(PREREGISTRATION None): a reference for scale, no claim is tested on it.

    pip install stable-baselines3
    python -m benchmark.sweep --study sb3 [--tasks Hopper,Walker2d] [--seeds 1-3] [--budget 300000]

Each job runs `python -m benchmark.studies.sb3 TASK SEED BUDGET SEED_DIR` (command, sb3_run): SB3 A2C (n_steps 5,
RMSprop 7e-4, ent_coef 0, vf_coef 0.5, max_grad_norm 0.5, gae_lambda 1, 64-64 tanh, shared optimizer) on 1000-step
episodes, writing episodes.csv, summary.json and config.json as the lab's trainer does. Its finals are the `sb3-a2c` rows of the earlier literal grid (benchmark/results/grid_300k/
final.csv), which the fidelity study's page (report/readings.md) prints beside SMAC and AC-SGD; this study has no page
of its own.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time

from benchmark import hparams

NAME = "sb3"
SWEEP_OPTIONS = ("tasks", "seeds", "budget", "runs_dir")  # the sweep's options its jobs honour
PREREGISTRATION = None  # a reference for scale, no rule
COMMITTED_ONLY = True  # nothing of its own to analyze: its finals are in the earlier literal grid's CSV

ALGO = "sb3-a2c"
SEEDS = "1-3"
BUDGET = 300_000


# ---- the job list
def jobs(args) -> list:
    """SB3 A2C on --tasks (default: the MuJoCo tasks), --seeds (default 1-3), --budget (default 300k steps), under
    --runs-dir (default benchmark/runs)."""
    from benchmark import sweep

    tasks = sweep.select(args.tasks, "task")
    tasks = tasks if args.tasks not in (None, "all") else hparams.tasks("mujoco")
    seeds = hparams.parse_seeds(args.seeds or SEEDS)
    budget = int(args.budget or BUDGET)
    root = os.path.abspath(args.runs_dir or sweep.DEFAULT_RUNS)
    return [sweep._job(root, t, ALGO, s, budget) for s in seeds for t in tasks]


def command(job, state: str, run_dir) -> list[str] | None:
    """The runner's command for one of this study's jobs (an SB3 run, not the lab trainer's; an unfinished run starts
    over), None for any other job."""
    if job.algo != ALGO:
        return None
    return [job.python, "-m", "benchmark.studies.sb3", job.task, str(job.seed), str(job.budget), job.seed_dir]


# ---- one run
def _config(env_id: str, seed: int, budget: int) -> dict:
    """config.json's record: the run's settings and SB3's version."""
    import stable_baselines3

    return {
        "args": {
            "env_id": env_id,
            "seed": seed,
            "total_timesteps": budget,
            "algo": "sb3-a2c defaults",
        },
        "stable_baselines3": stable_baselines3.__version__,
    }


def sb3_run(task: str, seed: int, budget: int, seed_dir: str) -> int:
    """One SB3 A2C run with SB3's own defaults (n_steps 5, RMSprop 7e-4, ent_coef 0, vf_coef 0.5, max_grad_norm 0.5,
    gae_lambda 1, 64-64 tanh, shared optimizer), 1000-step episodes, writing episodes.csv, summary.json and config.json
    (what the harness reads) to seed_dir/sb3; an unfinished run starts over (needs `pip install stable-baselines3`)."""
    import gymnasium as gym
    import stable_baselines3
    import torch
    from stable_baselines3.common.callbacks import BaseCallback

    hparams.register_horizons()
    torch.set_num_threads(1)
    env_id, out = hparams.trainer_env_id(task).split(":")[-1], os.path.join(seed_dir, "sb3")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(_config(env_id, seed, budget), f, indent=2)
    with open(os.path.join(out, "episodes.csv"), "w", newline="") as episodes:
        writer = csv.writer(episodes)
        writer.writerow(["global_step", "episodic_return", "episodic_length"])

        class LogEpisodes(BaseCallback):  # SB3 calls _on_step after every environment step
            def _on_step(self) -> bool:
                for info in self.locals["infos"]:
                    if "episode" in info:  # added by SB3's Monitor wrapper when an episode ends
                        writer.writerow([self.num_timesteps, info["episode"]["r"], info["episode"]["l"]])
                return True

        start = time.time()
        model = stable_baselines3.A2C("MlpPolicy", gym.make(env_id), seed=seed, device="cpu", verbose=0)
        model.learn(total_timesteps=budget, callback=LogEpisodes())
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(
            {
                "status": "finished",
                "global_step": budget,
                "wall_time_s": time.time() - start,
                "sps": budget / (time.time() - start),
            },
            f,
            indent=2,
        )
    return 0


def main(argv=None) -> int:
    """`TASK SEED BUDGET SEED_DIR`, the runner's command for one job (command); a leading `sb3-run` is ignored."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["sb3-run"]:
        argv = argv[1:]
    return sb3_run(argv[0], int(argv[1]), int(argv[2]), argv[3])


if __name__ == "__main__":
    sys.exit(main())
