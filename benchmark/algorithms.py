"""The lab's one registry of algorithms: name, label, plot colour, actor step and the hyper-parameters its rows in
hyperparams.toml may set. The trainer's --optimizer choices, the sweep's --algos, the aggregation's order, the
figures' colours and the cost script all read it.

Adding an optimizer (docs/harness.md): write its step, step(actor, batch, args, state) -> {"g": ..., "step": ...}
(benchmark.trainer.sgd_step is the smallest example), register it here or from a module of your own, and give it a row per
task in hyperparams.toml. A module of your own is imported by every lab process (the sweep's trainers too) when
it is named in BENCHMARK_PLUGINS (a comma list of importable modules) and calls register().

This module is a leaf: it imports nothing of torch, and a step is named as "module:function", imported on use.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass

# The hyper-parameters every algorithm's rows set (learning_rate = eta, critic_learning_rate = alpha, num_steps = T)
COMMON_FLAGS = ("learning_rate", "critic_learning_rate", "num_steps", "gamma", "gae_lambda")


@dataclass(frozen=True)
class Algorithm:
    name: str  # the key in hyperparams.toml, the logs' directories and --algos
    label: str  # its name in tables and figures
    color: str  # its colour in figures (matplotlib)
    step: str  # "module:function": its actor step
    flags: tuple = ()  # the hyper-parameters its rows may set beyond COMMON_FLAGS (trainer flags, as toml keys)
    optimizer: str = ""  # the trainer's --optimizer it runs (default: its name)
    derived: bool = False  # its rows are computed from another algorithm's (none in hyperparams.toml)

    @property
    def trainer_optimizer(self) -> str:
        return self.optimizer or self.name


REGISTRY: dict[str, Algorithm] = {}


class RegistryError(ValueError):
    """A registry entry that cannot work (one line, exit 2 in the CLIs)."""


def register(algorithm: Algorithm) -> Algorithm:
    if not algorithm.name or not algorithm.label:
        raise RegistryError(f"algorithm {algorithm.name!r}: a registry entry needs a name and a label")
    if ":" not in algorithm.step:
        raise RegistryError(
            f"algorithm {algorithm.name!r}: step must be 'module:function', got {algorithm.step!r}"
        )
    REGISTRY[algorithm.name] = algorithm
    return algorithm


def names() -> tuple:
    """Every registered algorithm, in registration order (the tables' and figures' order)."""
    return tuple(REGISTRY)


def optimizers() -> tuple:
    """The trainer's --optimizer choices: one per step (sgd-matched runs the sgd step)."""
    return tuple(dict.fromkeys(a.trainer_optimizer for a in REGISTRY.values()))


def label(name: str) -> str:
    return REGISTRY[name].label


def color(name: str) -> str:
    return REGISTRY[name].color


def flag_keys() -> tuple:
    """Every hyper-parameter a row may set, in the order the trainer flags are emitted."""
    keys = list(COMMON_FLAGS)
    for algorithm in REGISTRY.values():
        keys += [k for k in algorithm.flags if k not in keys]
    return tuple(keys)


def step_path(name: str) -> tuple:
    """(module, function) of an optimizer's actor step (name: an --optimizer choice)."""
    algorithm = next(a for a in REGISTRY.values() if a.trainer_optimizer == name and not a.derived)
    module, function = algorithm.step.split(":")
    return module, function


def step_function(name: str):
    """The actor step of an optimizer, imported from its "module:function"."""
    module, function = step_path(name)
    return getattr(importlib.import_module(module), function)


register(Algorithm("smac", "SMAC", "tab:red", "benchmark.trainer:smac_step", ("damping",)))
register(Algorithm("sgd", "AC-SGD", "tab:blue", "benchmark.trainer:sgd_step"))
register(Algorithm("adam", "AC-Adam", "tab:green", "benchmark.trainer:adam_step"))
register(Algorithm("cg", "AC-CG", "tab:purple", "benchmark.trainer:cg_step"))
KFAC_FLAGS = ("kfac_damping", "kfac_decay", "kfac_kl_clip", "kfac_update_freq")
register(Algorithm("kfac", "AC-KFAC", "tab:orange", "benchmark.trainer:kfac_step", KFAC_FLAGS))
# sgd-matched: AC-SGD with eta = eta_SMAC / lambda_SMAC, everything else from SMAC's row (hparams.settings derives it)
register(
    Algorithm(
        "sgd-matched", "AC-SGD matched (ours)", "tab:cyan", "benchmark.trainer:sgd_step", (), "sgd", True
    )
)

for plugin in filter(None, os.environ.get("BENCHMARK_PLUGINS", "").split(",")):
    importlib.import_module(plugin.strip())
