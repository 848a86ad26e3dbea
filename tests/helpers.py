"""What the tests share: small float64 actors and batches, toy environments, and the lab's trainer run in this
process or in a subprocess, with readers for the one run it leaves."""

import csv
import json
import os
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import torch

from benchmark import compact, trainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
CARTPOLE = ["--env-id", "CartPole-v1", "--num-steps", "100", "--no-tensorboard"]


def run_main(runs, *argv, tensorboard=False):
    """The lab's trainer in this process, its runs in `runs` (without TensorBoard unless asked); its exit code."""
    return trainer.main(["--runs-dir", str(runs), *([] if tensorboard else ["--no-tensorboard"]), *argv])


def lab_process(cwd, *argv, env=None, **kw):
    """`python -m benchmark.trainer *argv` in a subprocess run in `cwd` (its runs in cwd/runs unless --runs-dir),
    with this tests directory importable for its environments; stdout and stderr piped unless given."""
    env = {**(os.environ if env is None else env), "PYTHONPATH": os.pathsep.join([HERE, ROOT])}
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "benchmark.trainer", *argv], cwd=cwd, env=env, **kw)


def lab_run(cwd, *argv, timeout=300, **kw):
    """lab_process to its end: a CompletedProcess with its stdout and stderr as text."""
    proc = lab_process(cwd, *argv, text=True, **kw)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def only_run(runs):
    """The one run directory in `runs`."""
    (run,) = os.listdir(runs)
    return os.path.join(runs, run)


def summary(run):
    return json.load(open(os.path.join(run, "summary.json")))


def checkpoint(run):
    return torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)


def seed_summary(seed_dir):
    """The summary of the one run in a sweep job's seed directory."""
    return compact.read_summary(compact.find_run_dir(seed_dir))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def wait_for_updates(runs, n, timeout=120):
    """Wait until the one run in `runs` has logged more than n updates; its run directory."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        dirs = os.listdir(runs) if os.path.isdir(runs) else []
        path = os.path.join(runs, dirs[0], "updates.csv") if dirs else None
        if path and os.path.exists(path) and len(open(path).read().splitlines()) > n:
            return os.path.join(runs, dirs[0])
        time.sleep(0.05)
    raise AssertionError("the run did not log its updates in time")


def tiny_actor(discrete, obs_dim=5, act_dim=3, seed=0):
    torch.manual_seed(seed)
    actor = trainer.Actor(obs_dim, act_dim, discrete, (8, 7), log_std_init=-0.3).double()
    with torch.no_grad():  # make the output layer non-trivial (its init std is 0.01)
        actor.linears[-1].weight.normal_()
    return actor


def tiny_batch(actor, B=40, seed=0):
    gen = torch.Generator().manual_seed(seed)
    obs = torch.randn(B, actor.linears[0].in_features, generator=gen, dtype=torch.float64)
    out_dim = actor.linears[-1].out_features
    if actor.discrete:
        actions = torch.randint(0, out_dim, (B,), generator=gen).double()
    else:
        actions = torch.randn(B, out_dim, generator=gen, dtype=torch.float64)
    adv = torch.randn(B, generator=gen, dtype=torch.float64)
    return {"obs": obs, "actions": actions, "advantages": adv}


def per_sample_grads(actor, batch):
    """(B, d) rows: grad log pi(a_i|s_i), one autograd call per sample (the reference)."""
    params = list(actor.parameters())
    return torch.stack(
        [
            trainer.flat_grad(
                actor.log_prob(batch["obs"][i : i + 1], batch["actions"][i : i + 1]).sum(), params
            )
            for i in range(batch["obs"].shape[0])
        ]
    )


class RaisesAt250(gym.Env):
    """Raises on its 250th step: in the third rollout of 100 steps, after two updates were logged and checkpointed."""

    def __init__(self):
        self.observation_space, self.action_space = (
            gym.spaces.Box(-1.0, 1.0, (2,), np.float64),
            gym.spaces.Discrete(2),
        )
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2), {}

    def step(self, action):
        self.steps += 1
        if self.steps == 250:
            raise RuntimeError("the simulator fell over")
        return np.zeros(2), 1.0, False, self.steps % 20 == 0, {}


class OffsetActions(gym.Env):
    """Discrete(2, start=5): the only valid actions are 5 and 6 (anything else raises); action 6 earns 1."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float64)
        self.action_space = gym.spaces.Discrete(2, start=5)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ValueError(f"action {action} outside {self.action_space}")
        self.t += 1
        return np.full(3, 0.1 * (action - 5)), float(action == 6), False, self.t >= 10, {}


class SlowToBuild(gym.Env):
    """CartPole-like dynamics do not matter here: building it takes 3 s (a simulator that loads assets)."""

    def __init__(self):
        import time

        time.sleep(3.0)
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2), 1.0, False, self.t >= 20, {}


class BadValueAt(gym.Env):
    """Episodes of 10 steps; on global step `at` (counted over episodes) the observation is `value` (inf, nan). With
    terminal=True the bad value comes only as the final observation of a terminated episode, every episode."""

    at, value, terminal = 155, float("inf"), False

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0
        self.total = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2), {}

    def step(self, action):
        self.t += 1
        self.total += 1
        terminated = self.t >= 10
        obs = np.full(2, 0.1 * self.t)
        if (self.terminal and terminated) or (not self.terminal and self.total == self.at):
            obs = np.full(2, self.value)
        return obs, float(action), terminated, False, {}


class InfObservationAt155(BadValueAt):
    pass


class NanFinalObservation(BadValueAt):
    value, terminal = float("nan"), True


def load_copy_block():
    """The functions smac_a2c.py's copy-block banner names, copied alone (with `import torch`, all they need)
    into a fresh module: what a user pastes into their own loop."""
    import ast
    import re
    import types

    path = os.path.join(ROOT, "smac_a2c.py")
    source = open(path).read()
    lines = source.splitlines()
    banner = " ".join(line.lstrip("# ") for line in lines if line.startswith("# "))
    names = re.search(r"copy these \w+ functions \(.*?\): (.*?)\. Then", banner).group(1)
    tree = ast.parse(source)
    copied = ["import torch"]
    for name in [n.strip() for n in names.split(",")]:
        (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        copied.append("\n".join(lines[first - 1 : node.end_lineno]))
    module = types.ModuleType("copied_smac_block")
    exec(compile("\n\n".join(copied), "copy_block", "exec"), module.__dict__)
    return module
