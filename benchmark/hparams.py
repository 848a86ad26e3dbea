"""Loader for benchmark/hyperparams.toml: the paper's hyper-parameter tables as smac_a2c.py flags.

    >>> from benchmark import hparams
    >>> hparams.lookup("Hopper", "smac")
    ['--env-id', 'Hopper-v4', '--optimizer', 'smac', '--learning-rate', '0.01', ...]
    >>> hparams.settings("Pendulum", "kfac")["source"]
    'ours'

Tasks are keyed by short name (Acrobot, CartPole, Pendulum, HalfCheetah, Hopper, Swimmer, Walker2d,
Humanoid, Pusher); env ids ("Hopper-v4") and the paper's names ("Half Cheetah") resolve too.
Algorithms: smac, sgd, adam, cg, kfac (the paper's five) and sgd-matched (ours: AC-SGD with SMAC's eta/lambda).
"""

from __future__ import annotations

import functools
import os
import sys
import tomllib
from dataclasses import dataclass
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import algorithms  # noqa: E402

# the paper's tables as data; BENCHMARK_HYPERPARAMS points the whole lab (the sweep's trainers too) at another copy
TOML_PATH = os.environ.get(
    "BENCHMARK_HYPERPARAMS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "hyperparams.toml")
)
HORIZONS = ("paper", "gym")
ROW_KEYS = ("source", "ours")  # a row's provenance: "paper" | "ours" (and the keys we filled)


class TableError(ValueError):
    """hyperparams.toml that cannot be used: one line naming the file, the table and the key (exit 2)."""


@functools.lru_cache(maxsize=None)
def load(path: str = TOML_PATH) -> dict:
    with open(path, "rb") as f:
        table = tomllib.load(f)
    validate(table, path)
    return table


def validate(table: dict, path: str) -> None:
    """Every [hp.<Task>.<algo>] row names a registered algorithm and only keys that algorithm's flags allow;
    every task has a row for every registered algorithm that is not derived; every table is one the lab reads."""
    where = os.path.relpath(path, REPO) if path.startswith(REPO) else path
    known_tables = {"meta", "tasks", "hp", "paper_results"}
    for name in table:
        if name not in known_tables:
            raise TableError(
                f"{where}: [{name}] is not a table the lab reads (known: {', '.join(sorted(known_tables))})"
            )
    for task in table["tasks"]:
        rows = table["hp"].get(task, {})
        for algo, row in rows.items():
            if algo not in algorithms.REGISTRY or algorithms.REGISTRY[algo].derived:
                raise TableError(
                    f"{where}: [hp.{task}.{algo}]: {algo!r} is no registered algorithm with rows "
                    f"(benchmark/algorithms.py; registered: {', '.join(algorithms.names())})"
                )
            allowed = algorithms.COMMON_FLAGS + algorithms.REGISTRY[algo].flags + ROW_KEYS
            for key in row:
                if key not in allowed:
                    raise TableError(
                        f"{where}: [hp.{task}.{algo}] unknown key {key!r} (allowed: {', '.join(allowed)})"
                    )
        for algo, entry in algorithms.REGISTRY.items():
            if not entry.derived and algo not in rows:
                raise TableError(
                    f"{where}: [hp.{task}.{algo}] is missing: every task needs a row for every "
                    f"registered algorithm"
                )
    for task, row in table["paper_results"].items():
        if not isinstance(row, dict):  # seeds, note
            continue
        for algo in row:
            if algo != "text_std" and algo not in algorithms.REGISTRY:
                raise TableError(f"{where}: [paper_results.{task}] {algo!r} is no registered algorithm")


def algos() -> tuple:
    """Every registered algorithm (benchmark/algorithms.py), in its order."""
    return algorithms.names()


def flag_keys() -> tuple:
    """The trainer flags a row may set, in the order they are emitted."""
    return algorithms.flag_keys()


# the paper's algorithms, in tab:performance's column order
PAPER_ALGOS = (
    "sgd",
    "adam",
    "cg",
    "kfac",
    "smac",
)


def tasks(group: Optional[str] = None) -> list[str]:
    """Task keys in the paper's order (classic control, then MuJoCo); `group` ("classic" or "mujoco") keeps one."""
    return [t for t, info in load()["tasks"].items() if group is None or info["group"] == group]


def task_info(task: str) -> dict:
    return load()["tasks"][resolve_task(task)]


def group(task: str) -> str:
    """ "classic" or "mujoco" (hyperparams.toml's `group`)."""
    return task_info(task)["group"]


def resolve_task(name: str) -> str:
    """Short name, env id or paper name (case-insensitive) -> task key."""
    table = load()["tasks"]
    key = name.strip().lower().replace(" ", "")
    for task, info in table.items():
        names = {
            task.lower(),
            info["env_id"].lower(),
            info["paper_name"].lower().replace(" ", ""),
            info["env_id"].split("-v")[0].lower(),
        }
        if key in names:
            return task
    raise KeyError(f"unknown task {name!r}; known: {', '.join(table)}")


def resolve_algo(name: str) -> str:
    key = name.strip().lower().replace("ac-", "").replace("_", "-")
    if key not in algos():
        raise KeyError(f"unknown algorithm {name!r}; known: {', '.join(algos())}")
    return key


def trainer_env_id(task: str, horizon: str = "paper") -> str:
    """The --env-id to pass to smac_a2c.py. horizon='paper': 1000-step episodes everywhere (the
    paper's protocol), through a copy registered below where the registered limit differs
    (`benchmark.hparams:CartPole_T1000-v1`); horizon='gym': the id's registered TimeLimit."""
    if horizon not in HORIZONS:
        raise ValueError(f"horizon must be one of {HORIZONS}, got {horizon!r}")
    info = task_info(task)
    env_id = info["env_id"]
    if horizon == "paper" and info["gym_max_episode_steps"] != load()["meta"]["horizon"]:
        # this process may make it (gym.make imports this module once)
        register_horizons(load()["meta"]["horizon"])
        return f"benchmark.hparams:{horizon_id(env_id, load()['meta']['horizon'])}"
    return env_id


def settings(task: str, algo: str) -> dict:
    """Every setting of one (task, algorithm) cell, with metadata:
    optimizer, the flag values (flag_keys() present), source ('paper' | 'ours' | 'derived'),
    ours (the keys we filled), rule (how; for 'ours'/'derived')."""
    task, algo = resolve_task(task), resolve_algo(algo)
    meta, hp = load()["meta"], load()["hp"][task]
    if algo == "sgd-matched":
        smac = hp["smac"]
        cell = {k: smac[k] for k in ("critic_learning_rate", "num_steps", "gamma", "gae_lambda")}
        cell["learning_rate"] = float(f"{smac['learning_rate'] / smac['damping']:.12g}")  # 5e-3/0.1 -> 0.05
        return {
            "task": task,
            "algo": algo,
            "optimizer": "sgd",
            **cell,
            "source": "derived",
            "ours": list(algorithms.COMMON_FLAGS),
            "rule": meta["sgd_matched_rule"],
        }
    if algo not in hp:
        raise KeyError(f"no hyper-parameters for ({task}, {algo}) in {TOML_PATH}")
    cell = dict(hp[algo])
    source = cell.pop("source")
    ours = cell.pop("ours", [])
    if algo == "kfac":
        cell = {**meta["kfac_defaults"], **cell}
    optimizer = algorithms.REGISTRY[algo].trainer_optimizer
    out = {"task": task, "algo": algo, "optimizer": optimizer, **cell, "source": source, "ours": ours}
    if source == "ours":
        out["rule"] = meta["kfac_fill_rule"]
    return out


def _fmt(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def lookup(task: str, algo: str, horizon: str = "paper", num_steps: Optional[int] = None) -> list[str]:
    """smac_a2c.py flags for one cell: --env-id, --optimizer and every hyper-parameter of the cell.
    num_steps overrides T (tests and smoke runs only; the paper uses T = 1000 everywhere)."""
    s = settings(task, algo)
    flags = ["--env-id", trainer_env_id(task, horizon), "--optimizer", s["optimizer"]]
    for key in flag_keys():
        if key in s:
            value = num_steps if (key == "num_steps" and num_steps is not None) else s[key]
            flags += ["--" + key.replace("_", "-"), _fmt(value)]
    return flags


def paper_result(task: str, algo: str) -> Optional[tuple[float, float]]:
    """(mean, std) of tab:performance, or None (sgd-matched is not in the paper)."""
    row = load()["paper_results"][resolve_task(task)]
    algo = resolve_algo(algo)
    return tuple(row[algo]) if algo in row else None


def paper_text_std(task: str, algo: str) -> Optional[float]:
    """The different +- the paper's Results section prints for the same cell, if any."""
    return load()["paper_results"][resolve_task(task)].get("text_std", {}).get(resolve_algo(algo))


def algo_label(algo: str) -> str:
    return algorithms.label(resolve_algo(algo))


# ---------------------------------------------------------------------------------------------
# Budgets, seeds and readings as data (the sweep's --budget / --seeds syntax; the fidelity study's readings)
# ---------------------------------------------------------------------------------------------
def parse_budget(spec: str, tasks: Optional[list] = None) -> dict:
    """'5000' -> every task; 'classic=500000,mujoco=1000000,Pendulum=2000000' -> per group/task.
    A task key wins over its group. Returns {task: steps} for `tasks` (default: all nine)."""
    spec = spec.strip()
    per_group, per_task, default = {}, {}, None
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, value = (s.strip() for s in part.split("=", 1)) if "=" in part else ("all", part)
        try:
            steps = int(float(value))
        except ValueError:
            raise ValueError(
                f"--budget {spec!r}: {value!r} is not a step count"
                + ("" if "=" in part else " (e.g. 1000000, or classic=500000,mujoco=1000000)")
            ) from None
        if key.lower() in ("classic", "mujoco"):
            per_group[key.lower()] = steps
        elif key.lower() in ("all", "*"):
            default = steps
        else:
            per_task[resolve_task(key)] = steps
    out = {}
    # `tasks` is the argument here; every task in the toml's order
    for task in tasks or list(load()["tasks"]):
        steps = per_task.get(task, per_group.get(group(task), default))
        if steps is None:
            raise ValueError(f"--budget {spec!r} gives no budget for {task}")
        if steps <= 0:
            raise ValueError(f"--budget: {task} needs a positive step count, got {steps}")
        out[task] = steps
    return out


def parse_seeds(spec: str) -> list[int]:
    """'1-3' -> [1, 2, 3]; '1,4,7' -> [1, 4, 7]; '2' -> [2]. ValueError naming --seeds for anything else,
    a reversed range such as 3-1 included (it would give no seeds, and so no runs, silently)."""
    seeds = []
    try:
        for part in filter(None, (p.strip() for p in spec.split(","))):
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo:
                    raise ValueError
                seeds += list(range(lo, hi + 1))
            else:
                seeds.append(int(part))
    except ValueError:
        raise ValueError(
            f"--seeds {spec!r}: give seeds like 1-5 or 1,3,7 (a range low-high with low <= high)"
        ) from None
    if not seeds:
        raise ValueError(f"--seeds {spec!r} names no seed")
    return sorted(set(seeds))


# The readings of what the paper leaves unsaid (the fidelity study: `sweep.py --study fidelity` runs them,
# aggregate.py scores them): name -> (trainer flags, changes from the literal reading, description).
READINGS = {
    "literal": (
        [],
        0,
        "paper-literal: one full-batch actor step per rollout of T = 1000, mean over the batch, "
        "no normalization, 64-64 tanh, 1 env",
    ),
    "minibatch-10": (
        ["--num-minibatches", "10"],
        1,
        "10 actor steps per rollout on consecutive minibatches of 100 (Algorithm 1's loop over chunks)",
    ),
    "minibatch-100": (
        ["--num-minibatches", "100"],
        1,
        "100 actor steps per rollout on consecutive minibatches of 10",
    ),
    "sum": (["--loss-reduction", "sum"], 1, "sum over the batch instead of the mean (g and l_bar x 1000)"),
    "ppo-epochs": (
        ["--num-minibatches", "4", "--update-epochs", "4", "--shuffle-minibatches"],
        1,
        "CleanRL ppo.py's 4 epochs x 4 shuffled minibatches (16 actor steps per rollout), no clipping",
    ),
    "norm": (
        ["--norm-obs", "--norm-reward", "--norm-adv"],
        1,
        "observation, reward and advantage normalization (CleanRL's continuous-control defaults)",
    ),
    "envs-8": (
        ["--num-envs", "8", "--num-steps", "125"],
        1,
        "8 parallel envs x 125 steps (1000 transitions per update)",
    ),
    "relu": (["--activation", "relu"], 1, "ReLU instead of tanh"),
    "wide": (["--hidden-sizes", "256", "256"], 1, "256-256 instead of 64-64"),
}


def reading_flags(name: str) -> list[str]:
    if name in READINGS:
        return list(READINGS[name][0])
    if "+" in name:  # round 2: a union of two readings
        return [f for part in name.split("+") for f in READINGS[part][0]]
    raise KeyError(f"unknown reading {name!r}; known: {', '.join(READINGS)} (or a+b)")


# The fidelity study: the readings above on classic control, 3 seeds x 150k steps
FIDELITY_TASKS = ("Acrobot", "CartPole")
FIDELITY_BUDGET = 150_000  # the latest classic-control claim needs 40k * 3.35 = 134k (Acrobot, AC-KFAC)
FIDELITY_SEEDS = "1-3"
FIDELITY_RESULTS = os.path.join(REPO, "benchmark", "results", "fidelity")
FIDELITY_LOGS = os.path.join(FIDELITY_RESULTS, "logs")


# The pre-registered study: its blocks, tests and decision rules
PREREG = os.path.join(REPO, "benchmark", "preregistration.toml")
# The pre-registered 5M runs: the paper's MuJoCo table and its six unjudged claims at its own budget
PREREG_5M = os.path.join(REPO, "benchmark", "preregistration_5M.toml")


def load_prereg(path: str = PREREG) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


# The ablations: the paper's SMAC row of a task with one thing changed, 3 seeds x 300k steps
ABLATION_BUDGET = 300_000
ABLATION_SEEDS = "1-3"
ABLATION_LOGS = os.path.join(REPO, "benchmark", "results", "logs", "ablations")
ABLATION_REF_TASKS = ["HalfCheetah", "Hopper", "Swimmer", "Walker2d"]  # AC-SGD beside them, for reference
PREV_EF = ["--prev-ef-beta", "0.5", "--prev-ef-rank", "8", "--prev-ef-damping", "fixed"]

# variant -> (flag overrides of the paper's SMAC row, extra flags, label)
VARIANTS = {
    "batch-mean": ({}, [], "batch-mean (paper's row)"),
    "per-sample": ({}, ["--fisher", "per-sample"], "per-sample (Algorithm 1)"),
    "per-sample-parallel": ({}, ["--fisher", "per-sample-parallel"], "per-sample-parallel"),
    "lambda0.1": ({"--damping": 0.1}, [], "λ = 0.1"),
    "lambda1": ({"--damping": 1.0}, [], "λ = 1"),
    "lambda10": ({"--damping": 10.0}, [], "λ = 10"),
    "lambda0.1-norm": ({"--damping": 0.1}, ["--step-normalization"], "λ = 0.1 + step normalization"),
    "prev-ef0.5": ({}, PREV_EF, "prev-EF β = 0.5, r = 8, fixed λ"),
    "T250": ({"--num-steps": 250}, [], "T = 250"),
    "T500": ({"--num-steps": 500}, [], "T = 500"),
    "T1000": ({"--num-steps": 1000}, [], "T = 1000"),
    "T2000": ({"--num-steps": 2000}, [], "T = 2000"),
}
SECTIONS = {
    "fisher": {
        "tasks": ["HalfCheetah", "Hopper"],
        "variants": ["batch-mean", "per-sample", "per-sample-parallel"],
        "title": "1–2. Per-sample (Algorithm 1) vs batch-mean vs per-sample-parallel",
    },
    "damping": {
        "tasks": ["Hopper", "Swimmer", "Walker2d"],
        "variants": ["lambda0.1", "lambda1", "lambda10", "lambda0.1-norm"],
        "title": "3. Damping λ ∈ {0.1, 1, 10} and step normalization",
    },
    "prev_ef": {
        "tasks": ["Swimmer", "Hopper", "Walker2d"],
        "variants": ["batch-mean", "prev-ef0.5"],
        "title": "4. Previous-EF mixing, β = 0.5",
    },
    "batch_size": {
        "tasks": ["Hopper", "HalfCheetah"],
        "variants": ["T250", "T500", "T1000", "T2000"],
        "title": "5. Batch size T",
    },
}


def _canon(flags: list) -> list:
    """Flags with numeric values as floats, so '1.0' == '1' == 1."""
    out = []
    for tok in flags:
        try:
            out.append(float(tok))
        except (TypeError, ValueError):
            out.append(tok)
    return out


def variant_flags(task: str, variant: str) -> list[str]:
    """The paper's SMAC row of `task` (lookup) with the variant's overrides and extra flags."""
    overrides, extra, _ = VARIANTS[variant]
    flags = list(lookup(task, "smac"))
    for flag, value in overrides.items():
        i = flags.index(flag)  # every override replaces a flag the row sets
        flags[i + 1] = repr(float(value)) if flag == "--damping" else str(value)
    return flags + list(extra)


@dataclass
class Cell:
    section: str
    task: str
    variant: str
    flags: list
    source: str  # "grid" (equal to the paper's SMAC row) or "ablation"

    @property
    def run_variant(self) -> str:
        """The variant its runs are logged under: the paper's row is run once per task, as `batch-mean`."""
        return "batch-mean" if self.source == "grid" else self.variant


def section_cells(section: str) -> list[Cell]:
    spec = SECTIONS[section]
    cells = []
    for task in spec["tasks"]:
        base = _canon(lookup(task, "smac"))
        for variant in spec["variants"]:
            flags = variant_flags(task, variant)
            cells.append(Cell(section, task, variant, flags, "grid" if _canon(flags) == base else "ablation"))
    return cells


def all_cells(sections=None) -> list[Cell]:
    return [c for s in (sections or SECTIONS) for c in section_cells(s)]


# The paper's 1000-step horizon ("In all environments, episodes have a horizon of 1000 timesteps") for ids registered
# shorter (Acrobot-v1 and CartPole-v1 500, Pendulum-v1 200, Pusher-v5 100): copies with a 1000-step TimeLimit, same
# entry point and kwargs, reached through gymnasium's `module:id` syntax: --env-id benchmark.hparams:CartPole_T1000-v1
HORIZON_BASE_IDS = ("Acrobot-v1", "CartPole-v1", "Pendulum-v1", "Pusher-v5")


def horizon_id(env_id: str, horizon: int = 1000) -> str:
    """'CartPole-v1' -> 'CartPole_T1000-v1' (the id registered by register_horizons)."""
    name, version = env_id.rsplit("-v", 1)
    return f"{name}_T{horizon}-v{version}"


def register_horizons(horizon: int = 1000) -> None:
    import gymnasium as gym

    for base in HORIZON_BASE_IDS:
        if horizon_id(base, horizon) not in gym.registry:
            spec = gym.spec(base)
            gym.register(
                id=horizon_id(base, horizon),
                entry_point=spec.entry_point,
                kwargs=dict(spec.kwargs),
                max_episode_steps=horizon,
                reward_threshold=spec.reward_threshold,
                nondeterministic=spec.nondeterministic,
            )


# imported by gym.make("benchmark.hparams:..."), or by a process that makes envs
if "gymnasium" in sys.modules:
    register_horizons()


if __name__ == "__main__":  # print the whole table as flags
    for t in tasks():
        for a in algos():
            s = settings(t, a)
            print(f"{t:12s} {a:12s} {s['source']:8s} " + " ".join(lookup(t, a)))
