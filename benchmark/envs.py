"""The paper's 1000-step horizon for environments whose registered TimeLimit is shorter.

"In all environments, episodes have a horizon of 1000 timesteps" (paper, Experimental Setup).
Acrobot-v1 and CartPole-v1 register 500 steps, Pendulum-v1 200 and Pusher-v5 100. Importing this
module registers copies of them with a 1000-step TimeLimit, e.g. ``CartPole_T1000-v1``, and
the trainers reach them through gymnasium's ``module:id`` syntax:

    python -m benchmark.trainer --env-id benchmark.envs:CartPole_T1000-v1 ...

Only ``max_episode_steps`` differs from the original registration (same entry point and kwargs).
"""
from __future__ import annotations

import gymnasium as gym

HORIZON = 1000
BASE_IDS = ("Acrobot-v1", "CartPole-v1", "Pendulum-v1", "Pusher-v5")


def horizon_id(env_id: str, horizon: int = HORIZON) -> str:
    """'CartPole-v1' -> 'CartPole_T1000-v1' (the id registered by this module)."""
    name, version = env_id.rsplit("-v", 1)
    return f"{name}_T{horizon}-v{version}"


def register_all(horizon: int = HORIZON) -> None:
    for base in BASE_IDS:
        new_id = horizon_id(base, horizon)
        if new_id in gym.registry:
            continue
        spec = gym.spec(base)
        gym.register(id=new_id, entry_point=spec.entry_point, kwargs=dict(spec.kwargs),
                     max_episode_steps=horizon, reward_threshold=spec.reward_threshold,
                     nondeterministic=spec.nondeterministic)


register_all()
