"""The logs a change must not alter: the lab's trainer (python -m benchmark.trainer) on 15 fixed flag sets
(the paper's rows, the norm reading, per-sample, 2 envs, checkpoints, AC-CG, AC-KFAC, the ablation modes,
--target-kl); keeps episodes.csv, updates.csv (timing columns dropped) and summary.json's status and counts.
The first eight are the reference's flag sets, whose loop the lab runs; REFERENCE_VIA=reference runs them
through smac_a2c.py instead (for commits where the reference held that loop).

    python tools/logs_snapshot.py REPO_BEFORE /tmp/before && python tools/logs_snapshot.py . /tmp/after
    diff -r /tmp/before /tmp/after && echo identical        # trailing names run a subset
"""

import csv
import json
import os
import shutil
import subprocess
import sys

HC = "--env-id HalfCheetah-v4 --learning-rate 8e-4 --damping 0.01 --critic-learning-rate 6e-4"
NORM = "--norm-obs --norm-reward --norm-adv"
REFERENCE = {
    "cartpole_smac": "--env-id CartPole-v1 --learning-rate 5e-3 --damping 0.1 --critic-learning-rate 1e-3 "
    "--total-timesteps 20000",
    "hopper_smac": "--env-id Hopper-v4 --damping 1.0 --total-timesteps 20000",
    "hopper_sgd": "--env-id Hopper-v4 --optimizer sgd --learning-rate 1e-3 --total-timesteps 10000",
    "hopper_adam": "--env-id Hopper-v4 --optimizer adam --learning-rate 1e-4 --total-timesteps 10000",
    "hopper_persample": "--env-id Hopper-v4 --fisher per-sample --total-timesteps 3000",
    "halfcheetah_norm": f"{HC} {NORM} --total-timesteps 20000",
    "pendulum_envs2": "--env-id Pendulum-v1 --num-envs 2 --num-steps 500 --norm-obs --total-timesteps 20000",
    "acrobot_ckpt": "--env-id Acrobot-v1 --learning-rate 5e-2 --critic-learning-rate 1e-3 "
    "--checkpoint-every 3 --total-timesteps 10000",
}
LAB = {
    "lab_hopper_cg": "--env-id Hopper-v4 --optimizer cg --learning-rate 1e-2 --total-timesteps 10000",
    "lab_hopper_kfac": "--env-id Hopper-v4 --optimizer kfac --learning-rate 1e-3 --total-timesteps 10000",
    "lab_hc_smac_norm": f"{HC} {NORM} --total-timesteps 20000 --checkpoint-every 10",
    "lab_pusher_sgdm": f"--env-id benchmark.hparams:Pusher_T1000-v5 --optimizer sgd --learning-rate 1e-3 "
    f"{NORM} --total-timesteps 10000",
    "lab_cartpole_prevef": "--env-id CartPole-v1 --prev-ef-beta 0.5 --total-timesteps 10000",
    "lab_hopper_pspar": "--env-id Hopper-v4 --fisher per-sample-parallel --total-timesteps 5000",
    "lab_cartpole_target_kl": "--env-id CartPole-v1 --target-kl 0.01 --num-steps 200 --total-timesteps 10000",
}
TIMING = {"actor_update_ms", "sps"}


def dump(run: str, out: str) -> None:
    os.makedirs(out, exist_ok=True)
    for name in ("episodes.csv", "updates.csv"):
        rows = list(csv.reader(open(os.path.join(run, name))))
        keep = [i for i, column in enumerate(rows[0]) if column not in TIMING]
        with open(os.path.join(out, name), "w") as f:
            for row in rows:
                f.write(",".join(row[i] for i in keep) + "\n")
    summary = json.load(open(os.path.join(run, "summary.json")))
    kept = {k: summary.get(k) for k in ("status", "updates", "global_step")}
    json.dump(kept, open(os.path.join(out, "summary.json"), "w"))


def main(repo: str, out: str, only: list) -> None:
    env = {**os.environ, "PYTHONPATH": repo}
    for name, flags in {**REFERENCE, **LAB}.items():
        if only and name not in only:
            continue
        tmp = f"/tmp/logs_snapshot_{name}"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        if name in LAB or os.environ.get("REFERENCE_VIA", "lab") == "lab":
            cmd = [sys.executable, "-m", "benchmark.trainer", *flags.split(), "--runs-dir", tmp + "/runs"]
            cwd = repo
        else:
            cmd = [sys.executable, os.path.join(repo, "smac_a2c.py"), *flags.split()]
            cwd = tmp
        proc = subprocess.run([*cmd, "--no-tensorboard"], cwd=cwd, capture_output=True, text=True, env=env)
        runs = os.path.join(tmp, "runs")
        dump(os.path.join(runs, os.listdir(runs)[0]), os.path.join(out, name))
        print(name, "exit", proc.returncode, flush=True)


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:])
