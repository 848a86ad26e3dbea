"""What the tests share: small float64 actors and batches, toy environments, and the lab's trainer run in this
process or in a subprocess, with readers for the one run it leaves."""

import csv
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import torch

from benchmark import aggregate, compact, trainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(ROOT, "smac_a2c.py")
CARTPOLE = ["--env-id", "CartPole-v1", "--num-steps", "100", "--no-tensorboard"]
PROGRAMS = ["reference", "lab"]  # smac_a2c.py and python -m benchmark.trainer, for the promises both keep


def run_main(runs, *argv, tensorboard=False):
    """The lab's trainer in this process, its runs in `runs` (without TensorBoard unless asked); its exit code."""
    return trainer.main(["--runs-dir", str(runs), *([] if tensorboard else ["--no-tensorboard"]), *argv])


def lab_process(cwd, *argv, env=None, pythonpath=(), **kw):
    """`python -m benchmark.trainer *argv` in a subprocess run in `cwd` (its runs in cwd/runs unless --runs-dir),
    with this tests directory importable for its environments (after the directories `pythonpath`); stdout and
    stderr piped unless given."""
    env = {**(os.environ if env is None else env), "PYTHONPATH": os.pathsep.join([*pythonpath, HERE, ROOT])}
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "benchmark.trainer", *argv], cwd=cwd, env=env, **kw)


def standalone(cwd, *argv, env=None, pythonpath=(), **kw):
    """`python *argv` in `cwd` with smac_a2c.py copied ALONE there and nothing of this repository importable (only
    the directories `pythonpath`); stdout and stderr piped as text."""
    if not os.path.exists(os.path.join(cwd, "smac_a2c.py")):
        shutil.copy(REFERENCE, os.path.join(cwd, "smac_a2c.py"))
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, text=True, **kw)


def program_process(program, cwd, *argv, **kw):
    """The reference (smac_a2c.py alone, as standalone) or the lab's trainer run with `argv` in `cwd`, its runs in
    cwd/runs; stdout and stderr piped as text."""
    if program == "reference":
        return standalone(cwd, "smac_a2c.py", *argv, **kw)
    return lab_process(cwd, *argv, text=True, **kw)


def training_process(program, cwd):
    """program_process training CartPole (rollouts of 100, the lab without TensorBoard) towards a budget it never
    reaches, returned once it printed its first progress line (update 10): training is under way."""
    argv = ["--env-id", "CartPole-v1", "--num-steps", "100", "--total-timesteps", "100000000"]
    proc = program_process(program, cwd, *argv, *(["--no-tensorboard"] if program == "lab" else []))
    first = proc.stdout.readline()
    assert first.startswith("step 1"), first + proc.stderr.read()
    return proc


def train_in_process(program, tmp_path, monkeypatch, total, sigterm_at=None, nan_at=None):
    """The reference's or the lab's training on CartPole (rollouts of 100, runs in tmp_path/runs) in this process,
    with an AC-SGD actor step that records the actor before each update, sends this process SIGTERM during update
    `sigterm_at` and makes the actor NaN in update `nan_at`. Returns (exit code, the actor before each update, the
    checkpoint, summary.json or None for the reference, which writes none)."""
    import smac_a2c

    before = []

    def fault(actor):
        if len(before) == sigterm_at:
            os.kill(os.getpid(), signal.SIGTERM)
        if len(before) == nan_at:
            with torch.no_grad():
                actor.linears[0].weight.fill_(float("nan"))

    def reference_step(actor, batch, args):
        before.append({k: v.clone() for k, v in actor.state_dict().items()})
        diagnostics = real_reference_step(actor, batch, args)
        fault(actor)
        return diagnostics

    def lab_step(actor, batch, args, state):
        before.append({k: v.clone() for k, v in actor.state_dict().items()})
        diagnostics = trainer.sgd_step(actor, batch, args, state)
        fault(actor)
        return diagnostics

    real_reference_step = smac_a2c.sgd_step
    monkeypatch.chdir(tmp_path)
    if program == "reference":
        monkeypatch.setattr(smac_a2c, "sgd_step", reference_step)
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        args = smac_a2c.Args(env_id="CartPole-v1", optimizer="sgd", num_steps=100, total_timesteps=total)
        try:
            code = smac_a2c.train(args)
        finally:
            for s, handler in handlers.items():
                signal.signal(s, handler)
    else:
        monkeypatch.setitem(trainer.ACTOR_STEPS, "smac", lab_step)
        code = run_main("runs", *CARTPOLE, "--total-timesteps", str(total))
    run = only_run(tmp_path / "runs")
    return code, before, checkpoint(run), summary(run) if program == "lab" else None


def always_true(*args, **kwargs):
    """True: a stand-in for a check that is false here (torch.cuda.is_available on a machine without a GPU)."""
    return True


def lab_run(cwd, *argv, timeout=300, **kw):
    """lab_process to its end: a CompletedProcess with its stdout and stderr as text."""
    proc = lab_process(cwd, *argv, text=True, **kw)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def one_line_error(err, code, *names, exit_code=2):
    """A refusal: `code` is exit_code and stderr `err` is one line naming each of `names` (a flag, a path, a
    number); that line."""
    lines = err.strip().splitlines()
    assert code == exit_code and len(lines) == 1, err
    for name in names:
        assert str(name) in lines[0], (name, lines[0])
    return lines[0]


def evaluation(out):
    """(mean, std, episodes): the numbers of --eval-checkpoint's line on stdout (before its parenthesis, which
    names the checkpoint)."""
    (line,) = out.strip().splitlines()
    numbers = re.findall(r"-?\d+(?:\.\d+)?", line.split("(")[0])
    return float(numbers[-3]), float(numbers[-2]), int(numbers[-1])


def finished_run(runs, *argv, steps=200):
    """A finished CartPole run of `steps` steps (rollouts of 100) made by the lab in this process, in `runs`; its
    directory."""
    assert run_main(runs, *CARTPOLE, "--total-timesteps", str(steps), *argv) == 0
    return only_run(runs)


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


class NanObservationAt155(BadValueAt):
    value = float("nan")


class HugeObservationAt155(BadValueAt):
    """1e39: finite in float64, Inf in float32 (what the networks see)."""

    value = 1e39


class NanObservationAtReset(BadValueAt):
    """The first observation is NaN (then episodes as BadValueAt's)."""

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        return np.full(2, float("nan")) if self.total == 0 else obs, info


class SignalsTwiceMidRollout(BadValueAt):
    """Sends this process SIGTERM on its 1500th step and SIGINT on its 1501st (a second signal), mid-rollout at
    --num-steps 1000: the run must stop there, not at the end of that rollout and its update."""

    at = -1  # no bad value

    def step(self, action):
        if self.total + 1 in (1500, 1501):
            os.kill(os.getpid(), signal.SIGTERM if self.total + 1 == 1500 else signal.SIGINT)
            time.sleep(0.05)  # the handler runs here
        return super().step(action)


class SigtermAt150(BadValueAt):
    """Sends this process SIGTERM on its 150th step: at --num-steps 100 the run ends after its second update."""

    at = -1  # no bad value

    def step(self, action):
        if self.total + 1 == 150:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler runs here
        return super().step(action)


class SignalsWhenBuilt(BadValueAt):
    """Sends this process the signal named by the class attribute `signal_name` when built (during a trainer's
    environment check)."""

    signal_name = "SIGINT"

    def __init__(self):
        os.kill(os.getpid(), getattr(signal, self.signal_name))
        time.sleep(0.1)  # the handler runs here
        super().__init__()


class NanFinalObservation(BadValueAt):
    value, terminal = float("nan"), True


# The shared test environments, registered once: `--env-id RaisesAt250-v0` in this process, and
# `--env-id helpers:RaisesAt250-v0` in a subprocess (lab_process puts this directory on its path).
for _name, _cls in (
    ("RaisesAt250-v0", RaisesAt250),
    ("OffsetActions-v0", OffsetActions),
    ("InfObservationAt155-v0", InfObservationAt155),
    ("NanFinalObservation-v0", NanFinalObservation),
    ("NanObservationAt155-v0", NanObservationAt155),
    ("HugeObservationAt155-v0", HugeObservationAt155),
    ("NanObservationAtReset-v0", NanObservationAtReset),
    ("SignalsWhenBuilt-v0", SignalsWhenBuilt),
    ("SignalsTwiceMidRollout-v0", SignalsTwiceMidRollout),
    ("SigtermAt150-v0", SigtermAt150),
):
    gym.register(_name, entry_point=_cls)


def load_copy_block():
    """The functions smac_a2c.py's copy-block banner names, copied alone (with `import torch`, all they need), and
    smac_kl.py copied whole (kl_step_), into one fresh module: what a user pastes into their own loop."""
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
    copied.append(open(os.path.join(ROOT, "smac_kl.py")).read())
    module = types.ModuleType("copied_smac_block")
    exec(compile("\n\n".join(copied), "copy_block", "exec"), module.__dict__)
    return module


# hand-made runs and logs for the studies' tests
def write_log(logs, task, algo, seed, value, status="finished", last_step=None, budget=None, length=5):
    """A compact log of 200 episodes evenly over `budget` (default: the task's stage-1 budget), each returning
    `value` (or one value per episode), of `length` steps; a run not finished stops at last_step (default: half)."""
    budget = budget or aggregate.stage1_budget(task)
    steps = np.linspace(budget / 200, budget, 200)
    last = last_step or (budget if status == "finished" else budget // 2)
    rec = {
        "format": 1,
        "task": task,
        "algo": algo,
        "seed": seed,
        "budget": budget,
        "status": status,
        "global_step": last,
        "args": {"damping": 0.1},
        "episodes": {
            "global_step": steps.tolist(),
            "episodic_return": list(value) if np.ndim(value) else [value] * 200,
            "episodic_length": [length] * 200,
        },
        "updates": {c: [] for c in compact.UPDATE_COLS},
    }
    path = compact.log_path(str(logs), task, algo, seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump(rec, f)


def stepped_run(task, algo, seed, jump_at, low=0.0, high=1000.0, budget=100_000, status="finished"):
    """A loaded run (as compact.discover_logs gives it): one episode per 500 steps; return `low` before `jump_at`, `high` from it on."""
    steps = np.arange(500, budget + 1, 500, dtype=np.float64)
    returns = np.where(steps <= jump_at, low, high)
    return {
        "task": task,
        "algo": algo,
        "seed": seed,
        "job_budget": budget,
        "last_step": budget,
        "status": status,
        "episodes": {"global_step": steps, "episodic_return": returns},
    }


def raw_run(runs, task, algo, seed, budget, final_level, ell_sq, lam, T=1000):
    """A finished trainer run directory whose returns ramp to final_level; SMAC's updates log ell_sq, |g| 2,
    |step| 1.5, cos 0.99 and the step's part along l_bar 0.3."""
    rd = os.path.join(runs, task, algo, f"seed{seed}", f"{task}__{algo}__{seed}__0")
    os.makedirs(rd)
    with open(os.path.join(os.path.dirname(rd), "job.json"), "w") as f:
        json.dump({"task": task, "algo": algo, "seed": seed, "budget": budget}, f)
    with open(os.path.join(rd, "config.json"), "w") as f:
        json.dump(
            {"args": {"damping": lam if algo == "smac" else 1.0, "num_steps": T, "fisher": "batch-mean"}}, f
        )
    with open(os.path.join(rd, "summary.json"), "w") as f:
        json.dump({"status": "finished", "global_step": budget}, f)
    steps = np.arange(T, budget + 1, T)
    with open(os.path.join(rd, "episodes.csv"), "w") as f:
        f.write("global_step,episodic_return,episodic_length\n")
        for s in steps:
            f.write(f"{s},{final_level * s / budget},{T}\n")
    g_norm, par = 2.0, 0.3
    with open(os.path.join(rd, "updates.csv"), "w") as f:
        f.write(
            "update,global_step,value_loss,mean_logprob,entropy,ell_sq,g_norm,step_norm,cos_g_step,"
            "step_par_norm,step_perp_norm,actor_update_ms,sps\n"
        )
        for k, s in enumerate(steps, 1):
            if algo == "smac":
                f.write(f"{k},{s},1,-1,1,{ell_sq},{g_norm},1.5,0.99,{par},1.4,1,1\n")
            else:
                f.write(f"{k},{s},1,-1,1,nan,{g_norm},{g_norm},1,nan,nan,1,1\n")
    return g_norm, par
