"""SMAC: Sherman-Morrison Actor-Critic, the reference implementation in one file (A2C + GAE + rank-1 NPG).

Paper: "Rank-1 Approximation of Inverse Fisher for Natural Policy Gradients in Deep Reinforcement Learning"
(Huo et al., TMLR 2026). The actor step preconditions the policy gradient g with a damped rank-1 empirical
Fisher, inverted in closed form by the Sherman-Morrison formula (the paper's eq. (4) and (5)):
    (lambda I + l l^T)^-1 g = (1/lambda) (g - l (l^T g) / (lambda + l^T l)),    O(d) time and memory.

    python smac_a2c.py --env-id Hopper-v4 --damping 1.0     # train: runs/<run>/, `tensorboard --logdir runs`

Read top to bottom: Args -> environment -> networks -> the SMAC math (the copy block) -> actor steps -> GAE
and critic -> train(). Below the "Run management" banner sits what a reader of the method can skip.
To use SMAC in your own loop with any policy network, copy the five functions the copy block names, then
    apply_step_(policy, smac_direction(policy, log_probs, advantages, damping), lr)
AC-CG, AC-KFAC, SMAC's ablations, resume and evaluation are the lab's: `python -m benchmark.trainer --help`.
"""

import contextlib
import copy
import csv
import hashlib
import json
import math
import netrc
import os
import random
import signal
import sys
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from typing import Literal, Optional
from urllib.parse import urlparse

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro
from tqdm import tqdm

# gymnasium's note that a -v4 MuJoCo id is out of date: once per run, not once per environment
warnings.filterwarnings("once", message=".*is out of date.*")
# MuJoCo renders (--capture-video) through EGL where there is no display
os.environ.setdefault("MUJOCO_GL", "glfw" if os.environ.get("DISPLAY") else "egl")


@dataclass
class Args:
    exp_name: str = "smac_a2c"
    """name of the experiment, part of the run directory runs/{env_id}__{exp_name}__{seed}__{unix time}"""
    seed: int = 1
    """seed of torch, numpy and the environments"""
    cuda: bool = False
    """networks and updates on the GPU if there is one (the rollout stays in numpy on the CPU)"""
    track: bool = False
    """log scalars and flags to Weights & Biases (needs `wandb login`, or WANDB_MODE=offline)"""
    wandb_project_name: str = "smac"
    """W&B project for --track"""
    wandb_entity: Optional[str] = None
    """W&B entity (team or user) for --track; default: your W&B default entity"""
    capture_video: bool = False
    """record episodes of the first environment into RUN/videos/ (gymnasium's RecordVideo)"""
    tensorboard: bool = True
    """write TensorBoard scalars into the run directory"""
    checkpoint_every: int = 0
    """also save RUN/checkpoint.pt every N updates (always saved at the end, on signals, NaN and crashes)"""
    env_id: str = "Hopper-v4"
    """gymnasium environment id (1-D Box observations; Discrete or 1-D Box actions)"""
    total_timesteps: int = 1_000_000
    """total environment steps, rounded down to whole rollouts (as CleanRL does)"""
    optimizer: Literal["smac", "sgd", "adam"] = "smac"
    """actor step: smac (Sherman-Morrison natural gradient), sgd (AC-SGD) or adam (AC-Adam)"""
    fisher: Literal["batch-mean", "per-sample"] = "batch-mean"
    """smac: batch-mean (the paper's Practical Method, one step per rollout) or per-sample (Algorithm 1)"""
    learning_rate: float = 1e-2
    """actor step size eta"""
    damping: float = 1.0
    """smac damping lambda > 0 in F = lambda I + l l^T"""
    critic_learning_rate: float = 1e-4
    """critic Adam learning rate alpha"""
    num_envs: int = 1
    """parallel environments (the paper: 1); a rollout holds num_steps * num_envs transitions"""
    num_steps: int = 1000
    """T: steps per environment per rollout (one actor step per rollout)"""
    gamma: float = 0.99
    """discount factor gamma"""
    gae_lambda: float = 0.9
    """GAE trace-decay lambda_GAE"""
    norm_obs: bool = False
    """normalize observations by running mean and std (updated once per rollout, saved in the checkpoint)"""
    norm_reward: bool = False
    """scale rewards by the running std of the discounted return, clipped to [-10, 10]"""
    norm_adv: bool = False
    """normalize advantages to zero mean and unit std per rollout"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """hidden layer widths of the actor and the critic (tanh MLPs)"""


# ==== Environment: plain gymnasium environments; normalization runs in the loop, once per rollout
def make_env(env_id: str, video_dir: Optional[str] = None) -> gym.Env:
    if video_dir is None:
        return gym.make(env_id, disable_env_checker=True)
    env = gym.make(env_id, disable_env_checker=True, render_mode="rgb_array")
    return gym.wrappers.RecordVideo(env, video_dir, disable_logger=True)


class RunningMeanStd:
    """Running mean and variance of a stream of arrays (Chan et al.'s parallel update)."""

    def __init__(self, shape=()):
        self.mean = np.zeros(shape)
        self.var = np.ones(shape)
        self.count = 1e-4

    def update(self, x: np.ndarray) -> None:
        batch_mean = x.mean(axis=0)
        batch_var = x.var(axis=0)
        n = x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + n
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.mean = self.mean + delta * n / total
        self.count = total


class Normalizer:
    """--norm-obs and --norm-reward as CleanRL's wrappers do them, with the statistics updated once per
    rollout instead of every step (and saved in the checkpoint, so an evaluation sees what training saw)."""

    def __init__(self, obs_dim: int, num_envs: int, gamma: float, norm_obs: bool, norm_reward: bool):
        self.obs_rms = RunningMeanStd((obs_dim,))
        self.ret_rms = RunningMeanStd(())
        self.norm_obs = norm_obs
        self.norm_reward = norm_reward
        self.gamma = gamma
        self.discounted_return = np.zeros(num_envs)

    def obs(self, obs: np.ndarray) -> np.ndarray:
        if not self.norm_obs:
            return obs
        return np.clip((obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + 1e-8), -10.0, 10.0)

    def rewards(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """(T, N) rewards scaled by the running std of the discounted return (statistics updated first)."""
        if not self.norm_reward:
            return rewards
        returns = np.empty_like(rewards)
        for t in range(rewards.shape[0]):
            self.discounted_return = self.discounted_return * self.gamma + rewards[t]
            returns[t] = self.discounted_return
            self.discounted_return = self.discounted_return * (1.0 - dones[t])
        self.ret_rms.update(returns.reshape(-1))
        return np.clip(rewards / np.sqrt(self.ret_rms.var + 1e-8), -10.0, 10.0)

    def state_dict(self) -> dict:
        """Plain Python values, so that a checkpoint loads with torch.load(weights_only=True)."""
        state = {"discounted_return": self.discounted_return.tolist()}
        for key, rms in (("obs_rms", self.obs_rms), ("ret_rms", self.ret_rms)):
            state[key] = {"mean": np.asarray(rms.mean).tolist(), "var": np.asarray(rms.var).tolist()}
            state[key]["count"] = rms.count
        return state

    def load_state_dict(self, state: dict) -> None:
        for rms, saved in ((self.obs_rms, state["obs_rms"]), (self.ret_rms, state["ret_rms"])):
            rms.mean = np.asarray(saved["mean"])
            rms.var = np.asarray(saved["var"])
            rms.count = saved["count"]
        self.discounted_return = np.asarray(state["discounted_return"])


# ==== Networks: separate actor and critic MLPs (CleanRL's: 64-64 tanh, orthogonal initialization)
def numpy_relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


ACTIVATIONS = {"tanh": (torch.tanh, np.tanh), "relu": (torch.relu, numpy_relu)}  # (torch, numpy)


def layer_init(layer: nn.Linear, std: float = math.sqrt(2)) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class Actor(nn.Module):
    """pi_theta(a|s) = Categorical(logits=MLP(s)) or Normal(MLP(s), exp(log_std)); theta: MLP and log_std."""

    def __init__(
        self, obs_dim, act_dim, discrete, hidden_sizes=(64, 64), log_std_init=0.0, activation="tanh"
    ):
        super().__init__()
        self.discrete = discrete
        self.activation = activation
        sizes = [obs_dim, *hidden_sizes]
        self.linears = nn.ModuleList(layer_init(nn.Linear(i, o)) for i, o in zip(sizes[:-1], sizes[1:]))
        # the output layer starts near zero: a near-uniform first policy
        self.linears.append(layer_init(nn.Linear(sizes[-1], act_dim), std=0.01))
        if not discrete:
            self.log_std = nn.Parameter(torch.full((act_dim,), float(log_std_init)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Observations (B, obs_dim) -> logits or action means (B, act_dim)."""
        for linear in self.linears[:-1]:
            h = ACTIVATIONS[self.activation][0](linear(h))
        return self.linears[-1](h)

    def log_prob_from_output(self, out: torch.Tensor, actions: torch.Tensor, log_std=None) -> torch.Tensor:
        """log pi(a|s) per row, shape (B,)."""
        if self.discrete:
            return torch.log_softmax(out, dim=-1).gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        if log_std is None:
            log_std = self.log_std
        z = (actions - out) * torch.exp(-log_std)
        return (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    def log_prob(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return self.log_prob_from_output(self(obs), actions)

    def entropy(self, obs: torch.Tensor) -> torch.Tensor:
        if self.discrete:
            logp = torch.log_softmax(self(obs), dim=-1)
            return -(logp.exp() * logp).sum(-1)
        return (self.log_std + 0.5 * math.log(2 * math.pi * math.e)).sum().expand(obs.shape[0])


def make_networks(
    args: Args, obs_dim: int, act_dim: int, discrete: bool, activation="tanh", log_std_init=0.0
):
    """The actor, and the critic V_phi(s): an MLP with a scalar output, shape (B,)."""
    actor = Actor(obs_dim, act_dim, discrete, args.hidden_sizes, log_std_init, activation)
    sizes = [obs_dim, *args.hidden_sizes]
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers.append(layer_init(nn.Linear(n_in, n_out)))
        layers.append(nn.Tanh() if activation == "tanh" else nn.ReLU())
    critic = nn.Sequential(*layers, layer_init(nn.Linear(sizes[-1], 1), std=1.0), nn.Flatten(-2))
    return actor, critic


def numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()


class RolloutPolicy:
    """The actor's numpy copy, acting in the rollout: a batch-1 forward in numpy costs a third of torch's."""

    def __init__(self, actor: Actor):
        self.layers = [(numpy(m.weight), numpy(m.bias)) for m in actor.linears]
        self.discrete = actor.discrete
        self.act = ACTIVATIONS[actor.activation][1]
        self.std = None if actor.discrete else np.exp(numpy(actor.log_std))

    def forward(self, h: np.ndarray) -> np.ndarray:
        """Observations (B, obs_dim) -> the actor's output."""
        for w, b in self.layers[:-1]:
            h = self.act(h @ w.T + b)
        return h @ self.layers[-1][0].T + self.layers[-1][1]

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = self.forward(obs)
        if self.discrete:
            # Gumbel-max: argmax(logits + Gumbel noise) ~ Categorical(logits)
            return np.argmax(out - np.log(-np.log(rng.random(out.shape))), axis=-1)
        return out + self.std * rng.standard_normal(out.shape)


# ==== The SMAC math ====================================================================================
# Copy block: to use SMAC in your own loop, copy these five functions (they need `import torch`,
# `import torch.nn as nn`): sherman_morrison_direction, trainable_parameters, mean_score_and_gradient,
# smac_direction, apply_step_. Then: apply_step_(policy, smac_direction(policy, log_probs, adv, damping), lr)
def sherman_morrison_direction(g: torch.Tensor, ell: torch.Tensor, damping: float) -> torch.Tensor:
    """(lambda I + l l^T)^-1 g for flat 1-D tensors g and l: two dot products and one axpy, O(d)."""
    # eq. (4): (lambda I + l l^T)^-1 = I / lambda - l l^T / (lambda^2 + lambda l^T l). Applied to g it is
    # eq. (5) without its step size eta: (1/lambda) (g - l (l^T g) / (lambda + l^T l)). No d x d matrix.
    return (g - ell * (torch.dot(ell, g) / (damping + torch.dot(ell, ell)))) / damping


def trainable_parameters(params) -> list:
    """An nn.Module's (or an iterable's) parameters with requires_grad; their order fixes the flat layout."""
    if isinstance(params, nn.Module):
        params = params.parameters()
    return [p for p in params if p.requires_grad]


def mean_score_and_gradient(params, log_probs: torch.Tensor, advantages: torch.Tensor):
    """Flat (l_bar, g) of the Practical Method: l_bar = grad (1/B) sum_i log pi(a_i|s_i) and
    g = grad (1/B) sum_i log pi(a_i|s_i) A_i, from two backward passes through the same graph."""
    params = trainable_parameters(params)
    if log_probs.dim() != 1 or advantages.shape != log_probs.shape:
        raise ValueError(f"log_probs, advantages need shape (B,), got {log_probs.shape}, {advantages.shape}")
    batch_size = len(log_probs)
    score_weights = torch.full_like(log_probs, 1.0 / batch_size)
    gradient_weights = advantages.detach() / batch_size
    ell_parts = torch.autograd.grad(
        log_probs, params, grad_outputs=score_weights, retain_graph=True, allow_unused=True
    )
    g_parts = torch.autograd.grad(log_probs, params, grad_outputs=gradient_weights, allow_unused=True)
    # flat vectors; a parameter the log-probabilities do not depend on has a zero gradient
    ell = torch.cat(
        [(torch.zeros_like(p) if d is None else d).reshape(-1) for p, d in zip(params, ell_parts)]
    )
    g = torch.cat([(torch.zeros_like(p) if d is None else d).reshape(-1) for p, d in zip(params, g_parts)])
    return ell, g


def smac_direction(params, log_probs: torch.Tensor, advantages: torch.Tensor, damping: float) -> torch.Tensor:
    """F~^-1 g with F~ = damping I + l_bar l_bar^T, for any policy. params: an nn.Module or parameters;
    log_probs (B,) WITH their graph; advantages (B,). Flat (d,), laid out as the parameters (apply_step_)."""
    ell, g = mean_score_and_gradient(params, log_probs, advantages)
    return sherman_morrison_direction(g, ell, damping)


@torch.no_grad()
def apply_step_(params, direction: torch.Tensor, lr: float) -> None:
    """theta <- theta + lr * direction (ascent on J), for smac_direction's flat layout."""
    params = trainable_parameters(params)
    sizes = [p.numel() for p in params]
    if direction.numel() != sum(sizes):
        raise ValueError(f"direction has {direction.numel()} entries, the trainable parameters {sum(sizes)}")
    for p, d in zip(params, direction.split(sizes)):
        p.add_(d.view_as(p), alpha=lr)


# ==== Actor steps: step(actor, batch, args, state) -> diagnostics; batch = {obs, actions, advantages} ====
def flat_grad(output: torch.Tensor, params, retain_graph=False) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(output, params, retain_graph=retain_graph)])


def smac_batch_mean_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """SMAC as the paper's experiments run it (Practical Method): one step per rollout of B = T transitions,
    with the batch-mean score l_bar in the damped rank-1 Fisher F~ = lambda I + l_bar l_bar^T."""
    log_probs = actor.log_prob(batch["obs"], batch["actions"])
    # smac_direction, in its two halves so that l_bar can be logged
    ell, g = mean_score_and_gradient(actor, log_probs, batch["advantages"])
    step = sherman_morrison_direction(g, ell, args.damping)
    # theta <- theta + eta F~^-1 g. The paper writes the Practical Method as descent on -J
    # (theta - eta [...]); the code ascends J, so the same step carries a plus sign here.
    apply_step_(actor, step, args.learning_rate)
    return {"g": g, "step": step, "ell": ell}


def smac_per_sample_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """SMAC as Algorithm 1 writes it: one step per transition, in rollout order, each with its own
    one-sample Fisher lambda I + l l^T, l = grad log pi(a|s). Costs T backward passes per rollout."""
    params = trainable_parameters(actor)
    obs, actions = batch["obs"], batch["actions"]
    n = obs.shape[0]
    g_sum = 0.0
    step_sum = 0.0
    ell_sq_sum = 0.0
    # Algorithm 1, lines 6-9: for all samples k
    for i in range(n):
        ell = flat_grad(actor.log_prob(obs[i : i + 1], actions[i : i + 1]).sum(), params)
        # line 7: g = grad log pi(a|s) A(s, a)
        g = ell * batch["advantages"][i]
        # line 8: theta <- theta + eta F^-1 g, with eq. (5)
        step = sherman_morrison_direction(g, ell, args.damping)
        apply_step_(params, step, args.learning_rate)
        g_sum = g_sum + g
        step_sum = step_sum + step
        ell_sq_sum = ell_sq_sum + torch.dot(ell, ell)
    return {"g": g_sum / n, "step": step_sum / n, "ell_sq_mean": ell_sq_sum / n}


def smac_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """SMAC: --fisher batch-mean (the Practical Method) or per-sample (Algorithm 1)."""
    if args.fisher == "per-sample":
        return smac_per_sample_step(actor, batch, args, state)
    return smac_batch_mean_step(actor, batch, args, state)


def sgd_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-SGD: theta <- theta + eta g, g = grad mean_i log pi(a_i|s_i) A_i."""
    objective = (actor.log_prob(batch["obs"], batch["actions"]) * batch["advantages"]).mean()
    g = flat_grad(objective, list(actor.parameters()))
    apply_step_(actor, g, args.learning_rate)
    return {"g": g, "step": g}


def adam_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-Adam: one Adam step (learning rate eta) on the same objective, its state_dict in state["adam"]."""
    params = list(actor.parameters())
    optimizer = torch.optim.Adam(params, lr=args.learning_rate, maximize=True)
    if "adam" in state:
        optimizer.load_state_dict(state["adam"])
    objective = (actor.log_prob(batch["obs"], batch["actions"]) * batch["advantages"]).mean()
    g = flat_grad(objective, params)
    before = nn.utils.parameters_to_vector(params).detach()
    for p, gp in zip(params, g.split([p.numel() for p in params])):
        p.grad = gp.view_as(p).clone()
    optimizer.step()
    state["adam"] = optimizer.state_dict()
    step = (nn.utils.parameters_to_vector(params).detach() - before) / args.learning_rate
    return {"g": g, "step": step}


ACTOR_STEPS = {"smac": smac_step, "sgd": sgd_step, "adam": adam_step}


# ==== GAE and the critic (section SM-ActorCritic) ======================================================
def compute_gae(rewards, values, next_values, terminations, dones, gamma: float, gae_lambda: float):
    """(advantages A, critic targets R = A + V), from (T, N) arrays. next_values[t] = V(s_{t+1}): the final
    observation where an episode ended at t, so a time-limit truncation bootstraps and a termination does
    not."""
    # eq. (14): delta_t = r_t + gamma V(s_{t+1}) - V(s_t), every t at once
    deltas = rewards + gamma * next_values * (1.0 - terminations) - values
    decay = gamma * gae_lambda * (1.0 - dones)
    advantages = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    # eq. (15): A_t = sum_l (gamma lambda_GAE)^l delta_{t+l}, i.e. A_t = delta_t + gamma lambda_GAE A_{t+1},
    # cut where an episode ends
    for t in reversed(range(rewards.shape[0])):
        last = deltas[t] + decay[t] * last
        advantages[t] = last
    return advantages, advantages + values


def critic_step(critic: nn.Module, optimizer: torch.optim.Optimizer, obs, returns, args: Args) -> float:
    """One Adam step (learning rate alpha) on L_critic = (1/T) sum_t (R_t - V_phi(s_t))^2."""
    loss = (returns - critic(obs)).pow(2).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


# ==== Training: Algorithm 1's loop ======================================================================
def tensor(x: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(x, dtype=torch.float32, device=device)


def all_finite(value_loss: float, actor: nn.Module, critic: nn.Module) -> bool:
    params = list(actor.parameters()) + list(critic.parameters())
    return math.isfinite(value_loss) and all(torch.isfinite(p).all() for p in params)


def train(
    args: Args,
    actor_steps: dict = ACTOR_STEPS,
    make_env=make_env,
    make_networks=make_networks,
    critic_step=critic_step,
    run_dir: Optional[str] = None,
    resume: Optional[dict] = None,
    stop=None,
):
    """Train; returns (run directory, outcome): finished, diverged, or the signal that stopped it; raises
    RunCrashed after keeping the last good state. The keywords are the lab's way in (benchmark/trainer.py:
    other algorithms, ablations, resume). check_env, new_run_dir, StopSignals, RunLog, snapshot, restore,
    save_checkpoint and record_crash are the run management below the banner."""
    obs_space, act_space = check_env(args.env_id, args.capture_video)
    run_dir = run_dir or new_run_dir(args)
    signals = StopSignals() if stop is None else contextlib.nullcontext(stop)
    last_good = None
    with signals as stop:
        try:
            device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
            # seeding (as CleanRL): python, numpy, torch; environment i resets with seed + i
            random.seed(args.seed)
            np.random.seed(args.seed)
            torch.manual_seed(args.seed)
            torch.use_deterministic_algorithms(True, warn_only=True)
            rng = np.random.default_rng(args.seed)
            discrete = isinstance(act_space, gym.spaces.Discrete)
            T = args.num_steps
            N = args.num_envs
            budget = args.total_timesteps - args.total_timesteps % (T * N)
            obs_dim = obs_space.shape[0]
            act_dim = act_space.n if discrete else act_space.shape[0]
            # Algorithm 1, line 2: initialise theta (the actor) and phi (the critic)
            actor, critic = make_networks(args, obs_dim, act_dim, discrete)
            actor = actor.to(device)
            critic = critic.to(device)
            critic_opt = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate)
            normalizer = Normalizer(obs_dim, N, args.gamma, args.norm_obs, args.norm_reward)
            nets = {"actor": actor, "critic": critic, "critic_opt": critic_opt, "normalizer": normalizer}
            global_step = 0
            update = 0
            actor_state = {}
            if resume is not None:
                global_step, update, actor_state = restore(resume, nets, rng)
            log = RunLog(args, run_dir, device, global_step, budget)
            video_dir = os.path.join(run_dir, "videos") if args.capture_video else None
            envs = [make_env(args.env_id, video_dir if i == 0 else None) for i in range(N)]
            obs = np.stack([env.reset(seed=args.seed + update * N + i)[0] for i, env in enumerate(envs)])
            buf_obs = np.zeros((T, N, obs_dim))
            buf_next_obs = np.zeros((T, N, obs_dim))
            buf_actions = np.zeros((T, N) if discrete else (T, N, act_dim))
            buf_rewards = np.zeros((T, N))
            buf_terminations = np.zeros((T, N))
            buf_dones = np.zeros((T, N))
            ep_return = np.zeros(N)
            ep_length = np.zeros(N, dtype=np.int64)
            policy = RolloutPolicy(actor)
            status = "finished"
            # Algorithm 1, line 3: for iteration k = 0, 1, ...
            while global_step < budget and stop.name is None:
                # the state after the last completed update: where a bad update rolls back to, and what a
                # crash keeps as the checkpoint
                last_good = snapshot(args, nets, actor_state, rng, global_step, update)
                # line 4: roll out T steps in every environment, acting with the current policy
                for t in range(T):
                    action = policy.sample(normalizer.obs(obs), rng)
                    # Discrete(n, start): the policy's index shifted; a Box: the action clipped into it
                    env_action = (
                        action + act_space.start if discrete else action.clip(act_space.low, act_space.high)
                    )
                    buf_obs[t] = obs
                    buf_actions[t] = action
                    for i, env in enumerate(envs):
                        next_obs, reward, terminated, truncated, _ = env.step(env_action[i])
                        buf_rewards[t, i] = reward
                        buf_terminations[t, i] = terminated
                        buf_dones[t, i] = terminated or truncated
                        # s_{t+1}: the final observation if the episode ends here
                        buf_next_obs[t, i] = next_obs
                        ep_return[i] = ep_return[i] + buf_rewards[t, i]
                        ep_length[i] = ep_length[i] + 1
                        if terminated or truncated:
                            log.episode(global_step + (t + 1) * N, ep_return[i], ep_length[i])
                            ep_return[i] = 0.0
                            ep_length[i] = 0
                            next_obs, _ = env.reset()
                        obs[i] = next_obs
                global_step += T * N
                # line 5: advantages with GAE, from the critic before its update
                with torch.no_grad():
                    b_obs = tensor(normalizer.obs(buf_obs), device).reshape(T * N, obs_dim)
                    values = critic(b_obs).reshape(T, N).cpu().numpy()
                    next_values = critic(tensor(normalizer.obs(buf_next_obs), device)).cpu().numpy()
                rewards = normalizer.rewards(buf_rewards, buf_dones)
                advantages, returns = compute_gae(
                    rewards, values, next_values, buf_terminations, buf_dones, args.gamma, args.gae_lambda
                )
                advantages = tensor(advantages, device).reshape(-1)
                if args.norm_adv:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                actions = tensor(buf_actions, device).reshape(T * N, *buf_actions.shape[2:])
                batch = {"obs": b_obs, "actions": actions, "advantages": advantages}
                # lines 6-9: the actor step (SMAC, AC-SGD or AC-Adam; the lab adds its own)
                start = time.perf_counter()
                diagnostics = actor_steps[args.optimizer](actor, batch, args, actor_state)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                actor_ms = (time.perf_counter() - start) * 1e3
                # line 10: the critic step
                value_loss = critic_step(critic, critic_opt, b_obs, tensor(returns, device).reshape(-1), args)
                if not all_finite(value_loss, actor, critic):
                    # NaN or Inf: back to the state before this rollout and update, checkpoint it, exit 3
                    global_step, update, actor_state = restore(last_good, nets, rng)
                    status = "diverged"
                    break
                update += 1
                # observation statistics: updated after the update that used them
                normalizer.obs_rms.update(buf_obs.reshape(-1, obs_dim))
                policy = RolloutPolicy(actor)
                with torch.no_grad():
                    mean_logprob = actor.log_prob(batch["obs"], batch["actions"]).mean().item()
                    entropy = actor.entropy(batch["obs"]).mean().item()
                log.update(update, global_step, value_loss, mean_logprob, entropy, diagnostics, actor_ms)
                if args.checkpoint_every and update % args.checkpoint_every == 0:
                    save_checkpoint(run_dir, snapshot(args, nets, actor_state, rng, global_step, update))
            if status == "finished" and stop.name is not None and global_step < budget:
                status = "interrupted"
            # always: at the end, on a signal, on divergence
            save_checkpoint(run_dir, snapshot(args, nets, actor_state, rng, global_step, update))
            for env in envs:
                env.close()
            log.close(status, stop.name, update, global_step)
        except Exception as error:
            raise RunCrashed(record_crash(run_dir, error, last_good)) from None
    if status == "interrupted":
        return run_dir, stop.name
    return run_dir, status


# ==== Run management: checks, run directories, signals, checkpoints, logs, crashes, main ================
class ConfigError(Exception):
    """Bad input: one line on stderr, exit code 2, before a run directory exists."""


class RunCrashed(Exception):
    """An exception inside a run, after its last good state, traceback and status were saved: exit 1."""


EXIT_CODES = {"finished": 0, "crashed": 1, "diverged": 3, "SIGHUP": 129, "SIGINT": 130, "SIGTERM": 143}
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # Ctrl-C, what Slurm / Kubernetes send, SSH closing
FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_wandb_login() -> None:
    """--track never waits at W&B's login prompt: offline mode, an API key, or a ~/.netrc login for W&B."""
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise ConfigError("--track needs wandb (pip install -r requirements.txt)") from None
    if os.environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun"):
        return
    if os.environ.get("WANDB_API_KEY"):
        return
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname
    try:
        login = netrc.netrc(os.environ.get("NETRC")).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        login = None
    if login is None:
        raise ConfigError("--track: W&B is not logged in here; run `wandb login`, or set WANDB_MODE=offline")


def check_args(args: Args) -> None:
    # > 0 and finite in float32 (NaN fails too); a learning rate also in Adam's first step, 10x the rate
    limits = {
        "learning_rate": FLOAT32_MAX / 10,
        "damping": FLOAT32_MAX,
        "critic_learning_rate": FLOAT32_MAX / 10,
    }
    for name, limit in limits.items():
        value = getattr(args, name)
        if not 0 < value <= limit:
            raise ConfigError(
                f"--{name.replace('_', '-')} must be a number in (0, {limit:.3g}], got {value!r}"
            )
    for name in ("total_timesteps", "num_envs", "num_steps"):
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)!r}")
    if not 0 <= args.gamma <= 1 or not 0 <= args.gae_lambda <= 1:
        raise ConfigError(
            f"--gamma and --gae-lambda must be in [0, 1], got {args.gamma!r}, {args.gae_lambda!r}"
        )
    if args.checkpoint_every < 0:
        raise ConfigError(f"--checkpoint-every must be >= 0, got {args.checkpoint_every!r}")
    if not 0 <= args.seed < 2**32:
        raise ConfigError(f"--seed must be in [0, 2**32), got {args.seed!r}")
    if len(args.hidden_sizes) == 0 or min(args.hidden_sizes) <= 0:
        raise ConfigError(f"--hidden-sizes must be one or more positive widths, got {args.hidden_sizes!r}")
    if not args.exp_name or "/" in args.exp_name or args.exp_name.startswith("."):
        raise ConfigError(f"--exp-name must be a plain name (no '/', no leading '.'), got {args.exp_name!r}")
    rollout = args.num_steps * args.num_envs
    if args.total_timesteps < rollout:
        raise ConfigError(
            f"--total-timesteps must be at least one rollout (--num-steps x --num-envs = {rollout}), "
            f"got {args.total_timesteps}"
        )
    if args.norm_adv and rollout < 2:
        raise ConfigError("--norm-adv needs at least 2 transitions per rollout (--num-steps x --num-envs)")
    if args.track:
        check_wandb_login()


def check_env(env_id: str, capture_video: bool = False) -> tuple[gym.Space, gym.Space]:
    """The environment's (observation, action) spaces, or a ConfigError; with --capture-video also moviepy and
    one rendered frame, so that a machine that cannot record fails here, not mid-run."""
    try:
        if capture_video:
            import moviepy  # noqa: F401  (RecordVideo writes with it)

            env = gym.make(env_id, render_mode="rgb_array")
            env.reset(seed=0)
            if env.render() is None:
                raise RuntimeError("render() gave no frame")
        else:
            env = make_env(env_id)
    except Exception as e:
        hint = " Use Pusher-v5: Pusher-v4 needs mujoco < 3." if env_id.startswith("Pusher-v4") else ""
        what = f"{type(e).__name__}: {str(e)[:150]}".replace("\n", " ")
        raise ConfigError(
            f"--env-id {env_id!r} cannot be built (or rendered, --capture-video) here ({what}).{hint}"
        ) from None
    obs_space = env.observation_space
    act_space = env.action_space
    env.close()
    flat = isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1 and obs_space.shape[0] > 0
    box_actions = (
        isinstance(act_space, gym.spaces.Box) and len(act_space.shape) == 1 and act_space.shape[0] > 0
    )
    if not flat or not (box_actions or isinstance(act_space, gym.spaces.Discrete)):
        raise ConfigError(
            f"--env-id {env_id!r}: spaces {obs_space} -> {act_space} are unsupported (need non-empty "
            f"1-D Box observations and Discrete or non-empty 1-D Box actions)"
        )
    return obs_space, act_space


def new_run_dir(args: Args, parent: str = "runs") -> str:
    """parent/{env_id}__{exp_name}__{seed}__{unix time}, created exclusively (runs started in the same second
    get -2, -3, ...); a directory that cannot be created there is bad input."""
    name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}".replace("/", "-")  # ALE/Pong-v5
    try:
        os.makedirs(parent, exist_ok=True)
        for k in range(1, 1000):
            path = os.path.join(parent, name if k == 1 else f"{name}-{k}")
            with contextlib.suppress(FileExistsError):
                os.mkdir(path)
                return path
    except OSError as e:
        raise ConfigError(
            f"cannot create a run directory {os.path.join(parent, name)!r} ({e.strerror})"
        ) from None
    raise ConfigError(f"too many runs named {name!r} in {parent!r}")


class StopSignals:
    """Ctrl-C, SIGTERM and SIGHUP ask the run to stop after its current update (the first signal's name in
    .name) instead of killing it; the previous handlers come back on exit."""

    def __init__(self):
        self.name = None
        self.previous = {}

    def __enter__(self):
        for sig in SIGNALS:
            self.previous[sig] = signal.signal(sig, self.handle)
        return self

    def handle(self, signum, frame):
        if self.name is None:
            self.name = signal.Signals(signum).name

    def __exit__(self, *exc_info):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def snapshot(args: Args, nets: dict, actor_state: dict, rng, global_step: int, update: int) -> dict:
    """All the training state, copied: a checkpoint, or the point a bad update rolls back to."""
    rngs = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state(), "python": random.getstate()}
    state = {"args": asdict(args), "global_step": global_step, "update": update, "rng": rngs}
    state["actor_state"] = actor_state
    for key, module in nets.items():
        state[key] = module.state_dict()
    return copy.deepcopy(state)


def restore(state: dict, nets: dict, rng) -> tuple[int, int, dict]:
    """Load a snapshot into the networks, optimizers and RNGs; returns (global_step, update, actor_state)."""
    for key, module in nets.items():
        module.load_state_dict(state[key])
    rng.bit_generator.state = state["rng"]["numpy"]
    torch.set_rng_state(state["rng"]["torch"])
    random.setstate(state["rng"]["python"])
    return state["global_step"], state["update"], copy.deepcopy(state["actor_state"])


def with_hash(state: dict) -> dict:
    """The checkpoint plus "sha256", a hash of its other contents as JSON (a tensor: dtype, shape, bytes)."""

    def describe(t: torch.Tensor) -> list:
        return [str(t.dtype), list(t.shape), hashlib.sha256(t.detach().cpu().numpy().tobytes()).hexdigest()]

    contents = {k: v for k, v in state.items() if k != "sha256"}
    text = json.dumps(contents, default=describe)
    return {**state, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def save_checkpoint(run_dir: str, state: dict) -> None:
    """RUN/checkpoint.pt via a .tmp file; torch.load(weights_only=True) loads it without running code."""
    path = os.path.join(run_dir, "checkpoint.pt")
    torch.save(with_hash(state), path + ".tmp")
    os.replace(path + ".tmp", path)


def write_json(path: str, obj: dict) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=2, allow_nan=False)
    os.replace(path + ".tmp", path)


def is_terminal(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError):
        return False


def say(text: str, stream=None) -> None:
    """Print a line if the stream takes it: a broken pipe, a closed stream or a vanished terminal (EIO) never
    stops a run. After a failure the stream's file descriptor points at /dev/null, so later lines (and
    Python's flush at exit) go nowhere instead of failing."""
    stream = sys.stdout if stream is None else stream
    try:
        print(text, file=stream, flush=True)
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def step_diagnostics(diag: dict) -> dict:
    """Norms, cos(g, step), and SMAC's step split along l_bar (shrunk by the rank-1 term) and orthogonal to it
    (exactly g_perp / lambda): how far the step departs from SGD with step eta / lambda."""
    g = diag["g"].double()
    step = diag["step"].double()
    ell_sq = float(diag.get("ell_sq_mean", math.nan))
    par = math.nan
    perp = math.nan
    if "ell" in diag:
        ell = diag["ell"].double()
        ell_sq = torch.dot(ell, ell).item()
        par = (torch.dot(ell, step).abs() / (ell.norm() + 1e-300)).item()
        perp = math.sqrt(max(step.norm().item() ** 2 - par**2, 0.0))
    cos = (torch.dot(g, step) / (g.norm() * step.norm() + 1e-300)).item()
    return {
        "ell_sq": ell_sq,
        "g_norm": g.norm().item(),
        "step_norm": step.norm().item(),
        "cos_g_step": cos,
        "step_par_norm": par,
        "step_perp_norm": perp,
    }


class RunLog:
    """A run's outputs: config.json, episodes.csv and updates.csv (with TensorBoard and W&B), the progress
    bar (or a plain line every 10 updates or 30 s when stdout is not a terminal), summary.json, the closing
    line."""

    def __init__(self, args: Args, run_dir: str, device, global_step: int, budget: int):
        self.args = args
        self.run_dir = run_dir
        self.budget = budget
        config = {"args": asdict(args), "device": str(device), "torch": torch.__version__}
        config["gymnasium"] = gym.__version__
        config["numpy"] = np.__version__
        config["python"] = sys.version.split()[0]
        config["resumed_from_step"] = global_step
        config["mujoco"] = getattr(
            sys.modules.get("mujoco"), "__version__", None
        )  # None: a run without MuJoCo
        write_json(os.path.join(run_dir, "config.json"), config)
        self.writer = None
        if args.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            # a resumed run hides the events that a killed process logged after its checkpoint
            self.writer = SummaryWriter(run_dir, purge_step=global_step + 1 if global_step else None)
        self.wandb_run = None
        if args.track:
            import wandb

            # a resumed run continues the same W&B run: its id comes from the run directory
            run_id = hashlib.sha1(os.path.abspath(run_dir).encode()).hexdigest()[:16]
            self.wandb_run = wandb.init(
                project=args.wandb_project_name,
                entity=args.wandb_entity,
                dir=run_dir,
                config=asdict(args),
                name=os.path.basename(run_dir),
                resume="allow",
                id=run_id,
                settings=wandb.Settings(init_timeout=60),
            )
            self.wandb_run.define_metric("*", step_metric="global_step")
        if budget != args.total_timesteps:
            say(
                f"note: --total-timesteps {args.total_timesteps} trains {budget} steps (whole rollouts)",
                sys.stderr,
            )
        self.recent_returns = []
        self.start_time = time.time()
        self.start_step = global_step
        self.last_line = time.time()
        self.bar = tqdm(
            total=budget,
            initial=global_step,
            unit="step",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not is_terminal(sys.stdout),
            file=sys.stdout,
        )

    def write_row(self, name: str, row: dict) -> None:
        """RUN/{name}.csv (its header first in a new or empty file), TensorBoard and W&B."""
        path = os.path.join(self.run_dir, f"{name}.csv")
        new_file = not os.path.isfile(path) or os.path.getsize(path) == 0
        with open(path, "a", newline="") as f:
            writer = csv.writer(f)
            if new_file:
                writer.writerow(list(row))
            writer.writerow(list(row.values()))
        scalars = {}
        for key, value in row.items():
            if key in ("update", "global_step"):
                continue
            group = "losses" if name == "updates" and key != "sps" else "charts"
            scalars[f"{group}/{key}"] = value
        if self.writer is not None:
            for key, value in scalars.items():
                self.writer.add_scalar(key, value, row["global_step"])
        if self.wandb_run is not None:
            self.wandb_run.log({**scalars, "global_step": row["global_step"]})

    def episode(self, global_step: int, episodic_return, episodic_length) -> None:
        row = {"global_step": global_step, "episodic_return": float(episodic_return)}
        row["episodic_length"] = int(episodic_length)
        self.write_row("episodes", row)
        self.recent_returns = (self.recent_returns + [float(episodic_return)])[-10:]

    def update(self, update, global_step, value_loss, mean_logprob, entropy, diagnostics, actor_ms) -> None:
        """A row of updates.csv: losses, SMAC's diagnostics (the mean over the lab's minibatch steps), time"""
        if not isinstance(diagnostics, list):
            diagnostics = [diagnostics]
        parts = [step_diagnostics(d) for d in diagnostics]
        row = {"update": update, "global_step": global_step, "value_loss": value_loss}
        row["mean_logprob"] = mean_logprob
        row["entropy"] = entropy
        for key in parts[0]:
            row[key] = float(np.mean([p[key] for p in parts]))
        row["actor_update_ms"] = actor_ms
        row["sps"] = (global_step - self.start_step) / max(time.time() - self.start_time, 1e-9)
        self.write_row("updates", row)
        ret10 = f"{np.mean(self.recent_returns):.1f}" if self.recent_returns else "-"
        try:
            self.bar.update(row["global_step"] - self.bar.n)
            self.bar.set_postfix(sps=f"{row['sps']:.0f}", ret10=ret10, refresh=False)
        except (OSError, ValueError):  # the terminal went away: plain lines from now on (best effort)
            self.bar.disable = True
        if self.bar.disable and (row["update"] % 10 == 0 or time.time() - self.last_line >= 30):
            line = (
                f"step {row['global_step']:,}/{self.budget:,} | update {row['update']} | {row['sps']:.0f} SPS"
            )
            say(f"{line} | mean return of the last 10 episodes {ret10}")
            self.last_line = time.time()

    def close(self, status: str, signal_name: Optional[str], update: int, global_step: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.bar.close()
        if self.writer is not None:
            self.writer.close()
        if self.wandb_run is not None:
            self.wandb_run.finish()
        wall = time.time() - self.start_time
        mean10 = float(np.mean(self.recent_returns)) if self.recent_returns else math.nan
        summary = {"status": status, "signal": signal_name if status == "interrupted" else None}
        summary["updates"] = update
        summary["global_step"] = global_step
        summary["wall_time_s"] = wall
        summary["sps"] = (global_step - self.start_step) / wall
        summary["mean_return_last10"] = mean10 if math.isfinite(mean10) else None
        summary["run_dir"] = self.run_dir
        write_json(os.path.join(self.run_dir, "summary.json"), summary)
        if status == "diverged":
            checkpoint = os.path.join(self.run_dir, "checkpoint.pt")
            say(f"diverged at update {update + 1} (NaN/Inf); the state before it: {checkpoint}", sys.stderr)
        trained = global_step - self.start_step
        say(
            f"{status}: {global_step} steps ({trained} in {wall:.1f}s, {summary['sps']:.0f} SPS), "
            f"mean return of the last 10 episodes {mean10:.2f}; run dir {self.run_dir}"
        )


def record_crash(run_dir: str, error: BaseException, last_good: Optional[dict]) -> str:
    """The one crash path: the last good state as checkpoint.pt, RUN/traceback.txt, status crashed in
    summary.json. It never raises: what it cannot write (a full disk, a removed directory) is named in the
    one-line message it returns."""
    line = f"{type(error).__name__}: {(str(error).splitlines() or [''])[0][:300]}"
    failed = []
    if last_good is not None:
        try:
            save_checkpoint(run_dir, last_good)
        except Exception:
            failed.append("checkpoint.pt")
    with contextlib.suppress(OSError):
        os.remove(os.path.join(run_dir, "checkpoint.pt.tmp"))
    trace = os.path.join(run_dir, "traceback.txt")
    try:
        with open(trace, "w") as f:
            f.write("".join(traceback.format_exception(error)))
    except Exception:
        failed.append("traceback.txt")
    try:
        write_json(
            os.path.join(run_dir, "summary.json"), {"status": "crashed", "error": line, "run_dir": run_dir}
        )
    except Exception:
        failed.append("summary.json")
    saved = []
    if "traceback.txt" not in failed:
        saved.append(f"traceback in {trace}")
    if "summary.json" not in failed:
        saved.append("status crashed in summary.json")
    if failed:
        saved.append(f"could not write {', '.join(failed)} in {run_dir}")
    return f"{line} ({'; '.join(saved)})"


def main(argv=None) -> int:
    torch.set_num_threads(1)  # fastest for these small networks, and deterministic
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:  # started with it closed (`>&-`): keep fd 1 / 2 off the run's files
            setattr(sys, name, open(os.devnull, "w"))
    try:
        args = tyro.cli(Args, args=argv)  # a flag tyro cannot parse: its message, exit code 2
    except SystemExit as request:
        return request.code
    # before any environment renders: with CUDA builds of torch this imports triton, whose import crashes
    # once an EGL context exists (--capture-video's probe)
    torch.use_deterministic_algorithms(True, warn_only=True)
    with StopSignals() as stop:
        try:
            check_args(args)
            check_env(args.env_id, args.capture_video)
            if stop.name is not None:  # a signal before the run began: nothing was written
                return EXIT_CODES[stop.name]
            run_dir = new_run_dir(args)
        except ConfigError as error:
            say(f"error: {error}", sys.stderr)
            return 2
        try:
            outcome = train(args, run_dir=run_dir, stop=stop)[1]
        except RunCrashed as crash:
            say(f"crashed: {crash}", sys.stderr)
            outcome = "crashed"
    return EXIT_CODES[outcome]


if __name__ == "__main__":
    sys.exit(main())
