"""Loader for benchmark/hyperparams.toml: the paper's hyper-parameter tables as smac_a2c.py flags.

    >>> from benchmark import hparams
    >>> hparams.lookup("Hopper", "smac")
    ['--env-id', 'Hopper-v4', '--optimizer', 'smac', '--learning-rate', '0.01', ...]
    >>> hparams.settings("Pendulum", "kfac")["source"]
    'ours'

Tasks are keyed by short name (Acrobot, CartPole, Pendulum, HalfCheetah, Hopper, Swimmer, Walker2d,
Humanoid, Pusher); env ids ("Hopper-v4") and the paper's names ("Half Cheetah") resolve too.
Algorithms: smac, sgd, adam, cg, kfac (the paper's five) and sgd-matched (ours, issue 8).
"""
from __future__ import annotations

import functools
import os
import sys
import tomllib
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:  # so `python benchmark/hparams.py` can import benchmark.envs
    sys.path.insert(0, REPO)

TOML_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hyperparams.toml")
ALGOS = ("smac", "sgd", "adam", "cg", "kfac", "sgd-matched")
PAPER_ALGOS = ("sgd", "adam", "cg", "kfac", "smac")  # column order of tab:performance
# trainer flags a table cell may set, in the order they are emitted
FLAG_KEYS = ("learning_rate", "critic_learning_rate", "num_steps", "gamma", "gae_lambda", "damping",
             "kfac_damping", "kfac_decay", "kfac_kl_clip", "kfac_update_freq")
HORIZONS = ("paper", "gym")


@functools.lru_cache(maxsize=None)
def load(path: str = TOML_PATH) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def tasks(group: Optional[str] = None) -> list[str]:
    """Task keys in the paper's order (classic control, then MuJoCo); `group` ("classic" or "mujoco") keeps one."""
    return [t for t, info in load()["tasks"].items() if group is None or info["group"] == group]


def task_info(task: str) -> dict:
    return load()["tasks"][resolve_task(task)]


def group(task: str) -> str:
    """"classic" or "mujoco" (hyperparams.toml's `group`)."""
    return task_info(task)["group"]


def resolve_task(name: str) -> str:
    """Short name, env id or paper name (case-insensitive) -> task key."""
    table = load()["tasks"]
    key = name.strip().lower().replace(" ", "")
    for task, info in table.items():
        names = {task.lower(), info["env_id"].lower(), info["paper_name"].lower().replace(" ", ""),
                 info["env_id"].split("-v")[0].lower()}
        if key in names:
            return task
    raise KeyError(f"unknown task {name!r}; known: {', '.join(table)}")


def resolve_algo(name: str) -> str:
    key = name.strip().lower().replace("ac-", "").replace("_", "-")
    if key not in ALGOS:
        raise KeyError(f"unknown algorithm {name!r}; known: {', '.join(ALGOS)}")
    return key


def trainer_env_id(task: str, horizon: str = "paper") -> str:
    """The --env-id to pass to smac_a2c.py. horizon='paper': 1000-step episodes everywhere (the
    paper's protocol), through benchmark/envs.py where the registered limit differs;
    horizon='gym': the id's registered TimeLimit."""
    if horizon not in HORIZONS:
        raise ValueError(f"horizon must be one of {HORIZONS}, got {horizon!r}")
    info = task_info(task)
    env_id = info["env_id"]
    if horizon == "paper" and info["gym_max_episode_steps"] != load()["meta"]["horizon"]:
        from benchmark.envs import horizon_id  # noqa: WPS433 (light import; registers the ids)
        return f"benchmark.envs:{horizon_id(env_id, load()['meta']['horizon'])}"
    return env_id


def settings(task: str, algo: str) -> dict:
    """Every setting of one (task, algorithm) cell, with metadata:
    optimizer, the flag values (FLAG_KEYS present), source ('paper' | 'ours' | 'derived'),
    ours (the keys we filled), rule (how; for 'ours'/'derived')."""
    task, algo = resolve_task(task), resolve_algo(algo)
    meta, hp = load()["meta"], load()["hp"][task]
    if algo == "sgd-matched":
        smac = hp["smac"]
        cell = {k: smac[k] for k in ("critic_learning_rate", "num_steps", "gamma", "gae_lambda")}
        cell["learning_rate"] = float(f"{smac['learning_rate'] / smac['damping']:.12g}")  # 5e-3/0.1 -> 0.05
        return {"task": task, "algo": algo, "optimizer": "sgd", **cell, "source": "derived",
                "ours": list(FLAG_KEYS[:5]), "rule": meta["sgd_matched_rule"]}
    if algo not in hp:
        raise KeyError(f"no hyper-parameters for ({task}, {algo}) in {TOML_PATH}")
    cell = dict(hp[algo])
    source = cell.pop("source")
    ours = cell.pop("ours", [])
    if algo == "kfac":
        cell = {**meta["kfac_defaults"], **cell}
    out = {"task": task, "algo": algo, "optimizer": algo, **cell, "source": source, "ours": ours}
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
    for key in FLAG_KEYS:
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
    return load()["meta"]["algo_labels"][resolve_algo(algo)]


if __name__ == "__main__":  # print the whole table as flags
    for t in tasks():
        for a in ALGOS:
            s = settings(t, a)
            print(f"{t:12s} {a:12s} {s['source']:8s} " + " ".join(lookup(t, a)))
