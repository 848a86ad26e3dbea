"""Are two copies of smac_a2c.py's runs bitwise the same? Runs each copy alone (as a user copies it) on
the learning check's commands (tools/reference_learning_check.py: the paper's CartPole and Hopper rows,
3 seeds) and on six short flag sets covering the other paths (AC-SGD, AC-Adam, Algorithm 1, normalization,
2 environments, Acrobot), then compares every checkpoint part both write (actor, critic, optimizers,
normalizer, counters) with torch.equal and every TensorBoard scalar both write (step and value, NaN equal
to NaN), and lists the parts and tags only one of them writes (identical: no difference in what both write):

    git show <old commit>:smac_a2c.py > /tmp/smac_a2c_old.py
    python tools/reference_bitwise.py /tmp/smac_a2c_old.py smac_a2c.py [--short-only]
"""

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile

import torch
from reference_learning_check import SEEDS, TASKS
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

SHORT = {
    "hopper_sgd": "--env-id Hopper-v4 --optimizer sgd --learning-rate 1e-3 --total-timesteps 10000",
    "hopper_adam": "--env-id Hopper-v4 --optimizer adam --learning-rate 1e-4 --total-timesteps 10000",
    "hopper_per_sample": "--env-id Hopper-v4 --fisher per-sample --total-timesteps 3000",
    "halfcheetah_norm": "--env-id HalfCheetah-v4 --learning-rate 8e-4 --damping 0.01 "
    "--critic-learning-rate 6e-4 --norm-obs --norm-reward --norm-adv --total-timesteps 20000",
    "pendulum_2_envs": "--env-id Pendulum-v1 --num-envs 2 --num-steps 500 --norm-obs --total-timesteps 20000",
    "acrobot": "--env-id Acrobot-v1 --learning-rate 5e-2 --critic-learning-rate 1e-3 --total-timesteps 10000",
}


def run(reference: str, flags: str, workdir: str) -> str:
    """The run directory of `python smac_a2c.py flags`, the file copied alone into workdir."""
    os.makedirs(workdir)
    shutil.copy(reference, os.path.join(workdir, "smac_a2c.py"))
    subprocess.run(
        [sys.executable, "smac_a2c.py", *flags.split()], cwd=workdir, check=True, stdout=subprocess.DEVNULL
    )
    (name,) = os.listdir(os.path.join(workdir, "runs"))
    return os.path.join(workdir, "runs", name)


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


def scalars(run_dir: str) -> dict:
    events = EventAccumulator(run_dir, size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def compare(run_a: str, run_b: str) -> str:
    ckpt_a = torch.load(os.path.join(run_a, "checkpoint.pt"), weights_only=True)
    ckpt_b = torch.load(os.path.join(run_b, "checkpoint.pt"), weights_only=True)
    # every part both checkpoints hold (actor, critic, optimizers, normalizer, counters) but their flags
    parts = sorted((set(ckpt_a) & set(ckpt_b)) - {"args"})
    differ = [k for k in parts if not same(ckpt_a[k], ckpt_b[k])]
    parts_in_one = sorted(set(ckpt_a) ^ set(ckpt_b))
    tags_a = scalars(run_a)
    tags_b = scalars(run_b)
    common = sorted(set(tags_a) & set(tags_b))
    differ_tags = [t for t in common if not same(tags_a[t], tags_b[t])]
    episodes = len(tags_b.get("charts/episodic_return", []))
    only_a = sorted(set(tags_a) - set(tags_b))
    only_b = sorted(set(tags_b) - set(tags_a))
    verdict = "identical" if not differ and not differ_tags else "DIFFERENT"
    return (
        f"{verdict}: {len(parts)} checkpoint parts compared, differing {differ or 'none'}; {len(common)} "
        f"scalar tags, differing {differ_tags or 'none'}; {episodes} episodes; in one run only: checkpoint "
        f"parts {parts_in_one or 'none'}, tags {only_a + only_b or 'none'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--short-only", action="store_true", help="only the six short flag sets")
    opts = parser.parse_args()
    sets = dict(SHORT)
    if not opts.short_only:
        for task, flags in TASKS.items():
            for seed in SEEDS:
                sets[f"{task}_seed{seed}"] = f"{flags} --seed {seed}"
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in sets.items():
            run_a = run(opts.first, flags, os.path.join(tmp, "a", name))
            run_b = run(opts.second, flags, os.path.join(tmp, "b", name))
            print(f"{name}: {compare(run_a, run_b)}", flush=True)


if __name__ == "__main__":
    main()
