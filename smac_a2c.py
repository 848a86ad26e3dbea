"""SMAC: Sherman-Morrison Actor-Critic, the reference implementation in one file (A2C + GAE + rank-1 NPG).

Paper: "Rank-1 Approximation of Inverse Fisher for Natural Policy Gradients in Deep Reinforcement Learning"
(Huo et al., TMLR 2026). The actor step preconditions the policy gradient g with a damped rank-1 empirical
Fisher inverted in closed form: (lambda I + l l^T)^-1 g = (1/lambda) (g - l (l^T g) / (lambda + l^T l)), O(d).
    python smac_a2c.py --env-id Hopper-v4 --damping 1.0     # train: runs/<run>/, `tensorboard --logdir runs`
Read top to bottom: Args -> environment -> networks -> the SMAC math -> GAE -> logs -> train() -> main.
In your own loop, with any policy network: copy the four drop-in functions, then
    apply_step_(policy, smac_direction(policy, log_probs, advantages, damping), lr)
AC-CG, AC-KFAC, SMAC's ablations, resume and evaluation are the lab's: `python -m benchmark.trainer --help`.
"""

import contextlib
import copy
import csv
import glob
import hashlib
import io
import json
import math
import os
import random
import signal
import sys
import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from importlib.util import find_spec
from typing import Literal, Optional

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro
from tqdm import tqdm

warnings.filterwarnings("once", message=".*is out of date.*")  # gymnasium's -v4 note: once per run
os.environ.setdefault("MUJOCO_GL", "glfw" if os.environ.get("DISPLAY") else "egl")  # headless: EGL


@dataclass
class Args:
    exp_name: str = "smac_a2c"
    """name of the experiment, part of the run directory runs/{env_id}__{exp_name}__{seed}__{unix time}"""
    seed: int = 1
    """seed of torch, numpy and the environments"""
    cuda: bool = False
    """networks and updates on the GPU if there is one (the rollout stays in numpy on the CPU)"""
    track: bool = False
    """log scalars, flags and videos to Weights & Biases (WANDB_MODE=offline works without network)"""
    wandb_project_name: str = "smac"
    """W&B project for --track"""
    wandb_entity: Optional[str] = None
    """W&B entity (team or user) for --track; default: your W&B default entity"""
    capture_video: bool = False
    """record episodes of the first environment into RUN/videos/ (gymnasium's RecordVideo)"""
    tensorboard: bool = True
    """write TensorBoard scalars into the run directory"""
    checkpoint_every: int = 0
    """also save RUN/checkpoint.pt every N updates (always saved at the end, on Ctrl-C and on divergence)"""
    env_id: str = "Hopper-v4"
    """gymnasium environment id (1-D Box observations; Discrete or 1-D Box actions)"""
    total_timesteps: int = 1_000_000
    """total environment steps"""
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


class ConfigError(Exception):
    """Bad input: one line on stderr, exit code 2."""


def parse_args(argv=None, cls=Args, prog: str = "python smac_a2c.py"):
    """tyro.cli(cls), with tyro's multi-line error box reduced to one line (a ConfigError)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()) as box:
            return tyro.cli(cls, args=argv)
    except SystemExit as e:  # an error (--help exits 0): the box's first paragraph, under its title, one line
        message = " ".join(box.getvalue().partition("\n")[2].partition("──")[0].replace("│", "").split())
        raise (ConfigError(f"{message or 'bad input'} (see: {prog} --help)") if e.code else e) from None


def check_args(args: Args) -> None:
    positive = "learning_rate", "damping", "critic_learning_rate", "total_timesteps", "num_envs", "num_steps"
    rules = [(name, "a finite number > 0", lambda v: v > 0 and math.isfinite(v)) for name in positive] + [
        ("gamma", "in [0, 1]", lambda v: 0 <= v <= 1),
        ("gae_lambda", "in [0, 1]", lambda v: 0 <= v <= 1),
        ("checkpoint_every", ">= 0", lambda v: v >= 0),
        ("seed", "in [0, 2**32)", lambda v: 0 <= v < 2**32),
        ("hidden_sizes", "one or more positive widths", lambda v: len(v) > 0 and min(v) > 0),
        ("exp_name", "a plain name (no '/', no leading '.')", lambda v: v and "/" not in v and v[0] != "."),
        ("track", "off without wandb installed (requirements.txt)", lambda v: not v or find_spec("wandb")),
    ]
    for name, allowed, ok in rules:
        if not ok(getattr(args, name)):
            raise ConfigError(f"--{name.replace('_', '-')} must be {allowed}, got {getattr(args, name)!r}")


# ======== Environment: plain gymnasium envs; statistics, normalization, clipping in the loop, per rollout
def make_env(env_id: str, video_dir: Optional[str] = None) -> gym.Env:
    env = gym.make(env_id, disable_env_checker=True, **({"render_mode": "rgb_array"} if video_dir else {}))
    return gym.wrappers.RecordVideo(env, video_dir, disable_logger=True) if video_dir else env


def check_env(env_id: str, capture_video: bool = False) -> tuple[gym.Space, gym.Space]:
    try:
        env = gym.make(env_id, render_mode="rgb_array") if capture_video else make_env(env_id)
        if capture_video:  # moviepy and one frame now: a machine that cannot record fails with one line
            import moviepy  # noqa: F401  (RecordVideo writes with it)

            env.reset(seed=0)
            assert env.render() is not None
    except Exception as e:
        hint = " Use Pusher-v5: Pusher-v4 needs mujoco < 3." if env_id.startswith("Pusher-v4") else ""
        raise ConfigError(
            f"--env-id {env_id!r} cannot be built (or rendered, --capture-video) here "
            f"({type(e).__name__}: {str(e)[:150]}).{hint}".replace("\n", " ")
        ) from None
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    box = lambda space: isinstance(space, gym.spaces.Box) and len(space.shape) == 1  # noqa: E731
    if not box(obs_space) or not (box(act_space) or isinstance(act_space, gym.spaces.Discrete)):
        raise ConfigError(
            f"--env-id {env_id!r}: spaces {obs_space} -> {act_space} are unsupported (need "
            f"1-D Box observations and Discrete or 1-D Box actions)"
        )
    return obs_space, act_space


class RunningMeanStd:  # running mean and variance of a stream of arrays (Chan et al.'s parallel update)
    def __init__(self, shape=()):
        self.mean, self.var, self.count = np.zeros(shape), np.ones(shape), 1e-4

    def update(self, x: np.ndarray) -> None:
        batch_mean, batch_var, n = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta, total = batch_mean - self.mean, self.count + n
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.mean, self.count = self.mean + delta * n / total, total


class Normalizer:  # --norm-obs, --norm-reward (CleanRL's wrappers); statistics updated per rollout, not step
    def __init__(self, obs_dim: int, num_envs: int, gamma: float, norm_obs: bool, norm_reward: bool):
        self.obs_rms, self.ret_rms = RunningMeanStd((obs_dim,)), RunningMeanStd(())
        self.norm_obs, self.norm_reward, self.gamma = norm_obs, norm_reward, gamma
        self.discounted_return = np.zeros(num_envs)

    def obs(self, obs: np.ndarray) -> np.ndarray:
        if not self.norm_obs:
            return obs
        return np.clip((obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + 1e-8), -10.0, 10.0)

    def rewards(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:  # (T, N); statistics first
        if not self.norm_reward:
            return rewards
        returns = np.empty_like(rewards)
        for t in range(rewards.shape[0]):
            returns[t] = self.discounted_return = self.discounted_return * self.gamma + rewards[t]
            self.discounted_return = self.discounted_return * (1.0 - dones[t])
        self.ret_rms.update(returns.reshape(-1))
        return np.clip(rewards / np.sqrt(self.ret_rms.var + 1e-8), -10.0, 10.0)

    def state_dict(self) -> dict:  # plain Python, so checkpoints load with torch.load(weights_only=True)
        return {
            "discounted_return": self.discounted_return.tolist(),
            **{
                k: {"mean": np.asarray(r.mean).tolist(), "var": np.asarray(r.var).tolist(), "count": r.count}
                for k, r in (("obs_rms", self.obs_rms), ("ret_rms", self.ret_rms))
            },
        }

    def load_state_dict(self, d: dict) -> None:
        for rms, saved in ((self.obs_rms, d["obs_rms"]), (self.ret_rms, d["ret_rms"])):
            rms.mean, rms.var, rms.count = np.asarray(saved["mean"]), np.asarray(saved["var"]), saved["count"]
        self.discounted_return = np.asarray(d["discounted_return"])


# ======== Networks: separate actor and critic MLPs (CleanRL: 64-64 tanh, orthogonal init)
ACTIVATIONS = {"tanh": (torch.tanh, np.tanh), "relu": (torch.relu, lambda x: np.maximum(x, 0.0))}  # torch, np


def layer_init(layer: nn.Linear, std: float = math.sqrt(2)) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class Actor(nn.Module):
    """pi_theta(a|s) = Categorical(logits=MLP(s)) or Normal(MLP(s), exp(log_std)); theta: MLP and log_std."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        discrete: bool,
        hidden_sizes=(64, 64),
        log_std_init: float = 0.0,
        activation: str = "tanh",
    ):
        super().__init__()
        sizes, self.discrete, self.activation = [obs_dim, *hidden_sizes, act_dim], discrete, activation
        self.linears = nn.ModuleList(layer_init(nn.Linear(i, o)) for i, o in zip(sizes, sizes[1:-1]))
        self.linears.append(layer_init(nn.Linear(sizes[-2], act_dim), std=0.01))  # near-uniform first policy
        if not discrete:
            self.log_std = nn.Parameter(torch.full((act_dim,), float(log_std_init)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, obs_dim) -> logits or action means (B, act_dim)
        for linear in self.linears[:-1]:
            h = ACTIVATIONS[self.activation][0](linear(h))
        return self.linears[-1](h)

    def log_prob_from_output(self, out: torch.Tensor, actions: torch.Tensor, log_std=None) -> torch.Tensor:
        if self.discrete:  # log pi(a|s) per row, shape (B,)
            return torch.log_softmax(out, dim=-1).gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        log_std = self.log_std if log_std is None else log_std
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
    args: Args,
    obs_dim: int,
    act_dim: int,
    discrete: bool,
    activation: str = "tanh",
    log_std_init: float = 0.0,
) -> tuple[Actor, nn.Module]:
    """The actor, and the critic V_phi(s): an MLP with a scalar output, shape (B,)."""
    actor = Actor(obs_dim, act_dim, discrete, args.hidden_sizes, log_std_init, activation)
    sizes, layers = [obs_dim, *args.hidden_sizes], []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers += [layer_init(nn.Linear(n_in, n_out)), nn.Tanh() if activation == "tanh" else nn.ReLU()]
    return actor, nn.Sequential(*layers, layer_init(nn.Linear(sizes[-1], 1), std=1.0), nn.Flatten(-2))


class RolloutPolicy:  # the actor's numpy copy, acting in the rollout (a batch-1 forward: a third of torch's)
    def __init__(self, actor: Actor):
        self.layers = [
            (m.weight.detach().cpu().double().numpy(), m.bias.detach().cpu().double().numpy())
            for m in actor.linears
        ]
        self.discrete, self.act = actor.discrete, ACTIVATIONS[actor.activation][1]
        self.std = None if actor.discrete else np.exp(actor.log_std.detach().cpu().double().numpy())

    def forward(self, h: np.ndarray) -> np.ndarray:  # observations h (B, obs_dim) -> the actor's output
        for w, b in self.layers[:-1]:
            h = self.act(h @ w.T + b)
        return h @ self.layers[-1][0].T + self.layers[-1][1]

    def sample(self, obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = self.forward(obs)
        if self.discrete:  # Gumbel-max: argmax(logits + Gumbel noise) ~ Categorical(logits)
            return np.argmax(out - np.log(-np.log(rng.random(out.shape))), axis=-1)
        return out + self.std * rng.standard_normal(out.shape)


# ======== The SMAC math
def sherman_morrison_direction(g: torch.Tensor, ell: torch.Tensor, damping: float) -> torch.Tensor:
    """(lambda I + l l^T)^-1 g = (1/lambda) (g - l (l^T g) / (lambda + l^T l)): the paper's eq. (sm_update)
    applied to g, i.e. eq. (matrixfree) / eta. Flat 1-D tensors; two dot products and one axpy, O(d)."""
    return (g - ell * (torch.dot(ell, g) / (damping + torch.dot(ell, ell)))) / damping


# --- The drop-in SMAC step for any policy network: copy these four functions into your own loop ----
def trainable_parameters(params) -> list:
    """An nn.Module's (or an iterable's) parameters with requires_grad; their order fixes the flat layout."""
    return [p for p in (params.parameters() if isinstance(params, nn.Module) else params) if p.requires_grad]


def mean_score_and_gradient(params, log_probs: torch.Tensor, advantages: torch.Tensor):
    """Flat (l_bar, g): grad mean_i log pi(a_i|s_i) and grad mean_i log pi(a_i|s_i) A_i (Practical Method)."""
    params = trainable_parameters(params)
    if log_probs.dim() != 1 or advantages.shape != log_probs.shape:
        raise ValueError(f"log_probs, advantages need shape (B,), got {log_probs.shape}, {advantages.shape}")
    weights = (torch.full_like(log_probs, 1.0 / len(log_probs)), advantages.detach() / len(log_probs))
    grads = [
        torch.autograd.grad(log_probs, params, grad_outputs=w, retain_graph=i == 0, allow_unused=True)
        for i, w in enumerate(weights)
    ]  # two backward passes through the same graph
    ell, g = (
        torch.cat(
            [torch.zeros_like(p).reshape(-1) if gr is None else gr.reshape(-1) for p, gr in zip(params, gs)]
        )
        for gs in grads
    )
    return ell, g


def smac_direction(params, log_probs: torch.Tensor, advantages: torch.Tensor, damping: float) -> torch.Tensor:
    """F~^-1 g, F~ = damping I + l_bar l_bar^T, for any policy. params: an nn.Module or parameters;
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


# --- Actor steps: step(actor, batch, args, state) -> diagnostics; batch = {obs, actions, advantages} ---
def flat_grad(output: torch.Tensor, params, retain_graph=False) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(output, params, retain_graph=retain_graph)])


def smac_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """SMAC. batch-mean (Practical Method): theta <- theta + eta (lambda I + l_bar l_bar^T)^-1 g per rollout.
    per-sample (Algorithm 1): per transition, l = grad log pi(a|s): theta += eta (lambda I + l l^T)^-1 l A."""
    obs, actions, adv = batch["obs"], batch["actions"], batch["advantages"]
    if args.fisher == "per-sample":
        params, n, g_sum, step_sum, ell_sq = trainable_parameters(actor), obs.shape[0], 0.0, 0.0, 0.0
        for i in range(n):  # Algorithm 1: "for all samples k"
            ell = flat_grad(actor.log_prob(obs[i : i + 1], actions[i : i + 1]).sum(), params)
            step = sherman_morrison_direction(ell * adv[i], ell, args.damping)  # eq. (matrixfree) / eta
            apply_step_(params, step, args.learning_rate)
            g_sum, step_sum, ell_sq = g_sum + ell * adv[i], step_sum + step, ell_sq + torch.dot(ell, ell)
        return {"g": g_sum / n, "step": step_sum / n, "ell_sq_mean": ell_sq / n}
    ell, g = mean_score_and_gradient(actor, actor.log_prob(obs, actions), adv)  # smac_direction, in two
    step = sherman_morrison_direction(g, ell, args.damping)  # halves to log l_bar: F~^-1 g, Practical Method
    apply_step_(actor, step, args.learning_rate)  # theta <- theta + eta F~^-1 g
    return {"g": g, "step": step, "ell": ell}


def sgd_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-SGD: theta <- theta + eta g, g = grad mean_i log pi(a_i|s_i) A_i."""
    g = flat_grad(
        (actor.log_prob(batch["obs"], batch["actions"]) * batch["advantages"]).mean(),
        list(actor.parameters()),
    )
    apply_step_(actor, g, args.learning_rate)
    return {"g": g, "step": g}


def adam_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-Adam: one Adam step (learning rate eta) on the same objective, its state_dict in state["adam"]."""
    params = list(actor.parameters())
    optimizer = torch.optim.Adam(params, lr=args.learning_rate, maximize=True)
    if "adam" in state:
        optimizer.load_state_dict(state["adam"])
    g = flat_grad((actor.log_prob(batch["obs"], batch["actions"]) * batch["advantages"]).mean(), params)
    before = nn.utils.parameters_to_vector(params).detach()
    for p, gp in zip(params, g.split([p.numel() for p in params])):
        p.grad = gp.view_as(p).clone()
    optimizer.step()
    state["adam"] = optimizer.state_dict()
    return {"g": g, "step": (nn.utils.parameters_to_vector(params).detach() - before) / args.learning_rate}


ACTOR_STEPS = {"smac": smac_step, "sgd": sgd_step, "adam": adam_step}


def step_diagnostics(diag: dict) -> dict:
    """Norms, cos(g, step), SMAC's step split along l_bar (shrunk) and orthogonal to it (g_perp / lambda)."""
    g, step = diag["g"].double(), diag["step"].double()
    ell_sq, par, perp = float(diag.get("ell_sq_mean", math.nan)), math.nan, math.nan
    if "ell" in diag:
        ell = diag["ell"].double()
        ell_sq, par = torch.dot(ell, ell).item(), (torch.dot(ell, step).abs() / (ell.norm() + 1e-300)).item()
        perp = math.sqrt(max(step.norm().item() ** 2 - par**2, 0.0))
    return {
        "ell_sq": ell_sq,
        "g_norm": g.norm().item(),
        "step_norm": step.norm().item(),
        "cos_g_step": (torch.dot(g, step) / (g.norm() * step.norm() + 1e-300)).item(),
        "step_par_norm": par,
        "step_perp_norm": perp,
    }


def compute_gae(rewards, values, next_values, terminations, dones, gamma: float, gae_lambda: float):
    """GAE (SM-ActorCritic), (T, N) arrays: A_t = sum_l (gamma lambda_GAE)^l delta_{t+l}, R_t = A_t + V(s_t):
    the critic target. next_values[t] = V(s_{t+1}), the final observation where an episode ended at t."""
    deltas = rewards + gamma * next_values * (1.0 - terminations) - values  # every delta_t at once
    decay = gamma * gae_lambda * (1.0 - dones)
    advantages, last = np.zeros_like(rewards), np.zeros_like(rewards[0])
    for t in reversed(range(rewards.shape[0])):  # A_t = delta_t + gamma lambda_GAE A_{t+1}, cut where done
        last = advantages[t] = deltas[t] + decay[t] * last
    return advantages, advantages + values


def critic_step(critic: nn.Module, optimizer: torch.optim.Optimizer, obs, returns, args: Args) -> float:
    loss = (returns - critic(obs)).pow(2).mean()  # L_critic = (1/T) sum_t (R_t - V_phi(s_t))^2; one Adam step
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


def with_hash(state: dict) -> dict:
    """The checkpoint plus "sha256", a hash of its other contents as JSON (a tensor: dtype, shape, bytes)."""
    text = json.dumps(
        {k: v for k, v in state.items() if k != "sha256"},
        default=lambda t: [
            str(t.dtype),
            list(t.shape),
            hashlib.sha256(t.detach().cpu().numpy().tobytes()).hexdigest(),
        ],
    )
    return {**state, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def atomic_write(path: str, obj: dict, json_file: bool = True) -> None:
    """JSON, or a checkpoint (torch.load(weights_only=True) loads it, running no code), via a .tmp file."""
    with open(path + ".tmp", "w" if json_file else "wb") as f:
        json.dump(obj, f, indent=2, allow_nan=False) if json_file else torch.save(with_hash(obj), f)
    os.replace(path + ".tmp", path)


def new_run_dir(args: Args) -> str:
    name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}".replace("/", "-")  # ALE/Pong-v5
    os.makedirs(os.path.join("runs", name))
    return os.path.join("runs", name)


# ======== Training
def train(
    args: Args,
    actor_steps: dict = ACTOR_STEPS,
    make_env=make_env,
    make_networks=make_networks,
    critic_step=critic_step,
    run_dir: Optional[str] = None,
    resume: Optional[dict] = None,
):
    """Train; returns (run directory, finished / diverged / the signal that stopped it). The keywords are the
    lab's way in (benchmark/trainer.py: other algorithms, ablations, resume); main() passes only run_dir."""
    obs_space, act_space = check_env(args.env_id, args.capture_video)
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    for seed in (random.seed, np.random.seed, torch.manual_seed):
        seed(args.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    rng = np.random.default_rng(args.seed)
    discrete, T, N = isinstance(act_space, gym.spaces.Discrete), args.num_steps, args.num_envs
    obs_dim, act_dim = obs_space.shape[0], (act_space.n if discrete else act_space.shape[0])
    actor, critic = (net.to(device) for net in make_networks(args, obs_dim, act_dim, discrete))
    critic_opt, actor_state = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate), {}
    normalizer = Normalizer(obs_dim, N, args.gamma, args.norm_obs, args.norm_reward)
    global_step = update = 0
    stateful = {"actor": actor, "critic": critic, "critic_opt": critic_opt, "normalizer": normalizer}

    def snapshot() -> dict:  # all the training state: a checkpoint, or the rollback point of an update
        rngs = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state(), "python": random.getstate()}
        return copy.deepcopy(
            {
                "args": asdict(args),
                "global_step": global_step,
                "update": update,
                "rng": rngs,
                "actor_state": actor_state,
                **{k: v.state_dict() for k, v in stateful.items()},
            }
        )

    def restore(state: dict) -> None:
        nonlocal global_step, update, actor_state
        for key, module in stateful.items():
            module.load_state_dict(state[key])
        actor_state = copy.deepcopy(state["actor_state"])
        global_step, update = state["global_step"], state["update"]
        rng.bit_generator.state = state["rng"]["numpy"]
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])

    if resume is not None:  # the lab's --resume: continue exactly where the checkpoint stopped
        restore(resume)
    run_dir = run_dir or new_run_dir(args)
    atomic_write(
        os.path.join(run_dir, "config.json"),
        {
            "args": asdict(args),
            "device": str(device),
            "torch": torch.__version__,
            "gymnasium": gym.__version__,
            "numpy": np.__version__,
            "python": sys.version.split()[0],
            "resumed_from_step": global_step,
            "mujoco": getattr(sys.modules.get("mujoco"), "__version__", None),
        },
    )  # None: a run without MuJoCo
    ckpt_path, writer, wandb_run = os.path.join(run_dir, "checkpoint.pt"), None, None
    if args.tensorboard:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(run_dir)
    if args.track:  # a resumed run continues the same W&B run: its id comes from the run directory
        import wandb

        wandb_run = wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            dir=run_dir,
            config=asdict(args),
            name=os.path.basename(run_dir),
            resume="allow",
            id=hashlib.sha1(os.path.abspath(run_dir).encode()).hexdigest()[:16],
            settings=wandb.Settings(init_timeout=60),
        )  # a bounded wait without network
        wandb_run.define_metric("*", step_metric="global_step")

    def log(name: str, row: dict) -> None:  # RUN/{name}.csv (with its header), TensorBoard, W&B
        path = os.path.join(run_dir, f"{name}.csv")
        header = [list(row)] if not os.path.isfile(path) or os.path.getsize(path) == 0 else []
        with open(path, "a", newline="") as f:
            csv.writer(f).writerows(header + [list(row.values())])
        scalars = {
            f"{'losses' if name == 'updates' and k != 'sps' else 'charts'}/{k}": v
            for k, v in row.items()
            if k not in ("update", "global_step")
        }
        for k, v in scalars.items() if writer else ():
            writer.add_scalar(k, v, row["global_step"])
        if wandb_run:
            wandb_run.log({**scalars, "global_step": row["global_step"]})

    # environments seeded as gymnasium's vector envs seed them (env i: seed + i), rollout buffers (T, N, ...)
    video_dir = os.path.join(run_dir, "videos") if args.capture_video else None
    envs = [make_env(args.env_id, video_dir if i == 0 else None) for i in range(N)]
    obs = np.stack([env.reset(seed=args.seed + update * N + i)[0] for i, env in enumerate(envs)])
    buf_obs, buf_next_obs = np.zeros((T, N, obs_dim)), np.zeros((T, N, obs_dim))
    buf_actions = np.zeros((T, N) if discrete else (T, N, act_dim))
    buf_rewards, buf_terminations, buf_dones = np.zeros((T, N)), np.zeros((T, N)), np.zeros((T, N))
    ep_return, ep_length, recent_returns = np.zeros(N), np.zeros(N, dtype=np.int64), []
    policy, tensor = RolloutPolicy(actor), lambda x: torch.as_tensor(x, dtype=torch.float32, device=device)
    stop = []  # Ctrl-C / SIGTERM / SIGHUP: finish the current update, checkpoint, exit 130 / 143 / 129
    handlers = {sig: signal.signal(sig, lambda s, _: stop.append(signal.Signals(s).name)) for sig in SIGNALS}
    status, start_time, start_step, last_line = "finished", time.time(), global_step, time.time()
    bar = tqdm(
        total=args.total_timesteps,
        initial=global_step,
        unit="step",
        unit_scale=True,
        dynamic_ncols=True,
        disable=not sys.stdout.isatty(),
        file=sys.stdout,
    )
    while global_step < args.total_timesteps and not stop:
        # 1. rollout: T steps in every env, acting with the numpy copy of the current policy
        for t in range(T):
            action = policy.sample(normalizer.obs(obs), rng)
            env_action = action + act_space.start if discrete else action.clip(act_space.low, act_space.high)
            buf_obs[t], buf_actions[t] = obs, action
            for i, env in enumerate(envs):
                next_obs, buf_rewards[t, i], terminated, truncated, _ = env.step(env_action[i])
                buf_terminations[t, i], buf_dones[t, i] = terminated, terminated or truncated
                buf_next_obs[t, i] = next_obs  # s_{t+1}: the final observation if the episode ends here
                ep_return[i], ep_length[i] = ep_return[i] + buf_rewards[t, i], ep_length[i] + 1
                if terminated or truncated:
                    log(
                        "episodes",
                        {
                            "global_step": global_step + (t + 1) * N,
                            "episodic_return": float(ep_return[i]),
                            "episodic_length": int(ep_length[i]),
                        },
                    )
                    recent_returns = (recent_returns + [float(ep_return[i])])[-10:]
                    ep_return[i], ep_length[i] = 0.0, 0
                    next_obs, _ = env.reset()
                obs[i] = next_obs
        global_step += T * N
        good = snapshot()  # the state to roll back to if this update goes bad
        with torch.no_grad():  # 2. GAE, with the critic before its update
            b_obs = tensor(normalizer.obs(buf_obs)).reshape(T * N, obs_dim)
            values = critic(b_obs).reshape(T, N).cpu().numpy()
            next_values = critic(tensor(normalizer.obs(buf_next_obs))).cpu().numpy()
        adv, returns = compute_gae(
            normalizer.rewards(buf_rewards, buf_dones),
            values,
            next_values,
            buf_terminations,
            buf_dones,
            args.gamma,
            args.gae_lambda,
        )
        adv = tensor(adv).reshape(-1)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8) if args.norm_adv else adv
        actions = tensor(buf_actions).reshape(T * N, *(() if discrete else (act_dim,)))
        batch = {"obs": b_obs, "actions": actions, "advantages": adv}
        # 3. actor step (SMAC, AC-SGD or AC-Adam; the lab adds its own)
        t0 = time.perf_counter()
        diags = actor_steps[args.optimizer](actor, batch, args, actor_state)
        if device.type == "cuda":
            torch.cuda.synchronize()
        actor_ms = (time.perf_counter() - t0) * 1e3
        # 4. critic step
        value_loss = critic_step(critic, critic_opt, b_obs, tensor(returns).reshape(-1), args)
        if not (math.isfinite(value_loss) and all(torch.isfinite(p).all() for p in actor.parameters())):
            restore(good)  # NaN/Inf: back to the state before this update, checkpoint it, exit 3
            status = "diverged"
            break
        update += 1
        # 5. observation statistics (after the update that used them), logs, checkpoint, progress
        normalizer.obs_rms.update(buf_obs.reshape(-1, obs_dim))
        policy = RolloutPolicy(actor)
        with torch.no_grad():
            logp = actor.log_prob(batch["obs"], batch["actions"]).mean().item()
            entropy = actor.entropy(batch["obs"]).mean().item()
        steps = [step_diagnostics(d) for d in (diags if isinstance(diags, list) else [diags])]
        sps = (global_step - start_step) / max(time.time() - start_time, 1e-9)
        log(
            "updates",
            {
                "update": update,
                "global_step": global_step,
                "value_loss": value_loss,
                "mean_logprob": logp,
                "entropy": entropy,
                **{k: float(np.mean([s[k] for s in steps])) for k in steps[0]},
                "actor_update_ms": actor_ms,
                "sps": sps,
            },
        )
        if args.checkpoint_every and update % args.checkpoint_every == 0:
            atomic_write(ckpt_path, snapshot(), json_file=False)
        ret10 = f"{np.mean(recent_returns):.1f}" if recent_returns else "-"
        bar.update(global_step - bar.n)
        bar.set_postfix(sps=f"{sps:.0f}", ret10=ret10, refresh=False)
        if bar.disable and (update % 10 == 0 or time.time() - last_line >= 30):  # not a terminal: plain lines
            print(
                f"step {global_step:,}/{args.total_timesteps:,} | update {update} | {sps:.0f} SPS | "
                f"mean return of the last 10 episodes {ret10}",
                flush=True,
            )
            last_line = time.time()
    status = "interrupted" if stop and status == "finished" and global_step < args.total_timesteps else status
    atomic_write(ckpt_path, snapshot(), json_file=False)  # always: at the end, on Ctrl-C, on divergence
    for closable in envs + [bar] + ([writer] if writer else []):
        closable.close()
    for video in sorted(glob.glob(os.path.join(run_dir, "videos", "*.mp4"))) if wandb_run else []:
        wandb_run.log({"videos": wandb.Video(video)})  # with --capture-video, the run's videos go to W&B too
    wandb_run.finish() if wandb_run else None
    wall, mean10 = time.time() - start_time, float(np.mean(recent_returns)) if recent_returns else math.nan
    summary = {
        "status": status,
        "signal": stop[0] if status == "interrupted" else None,
        "updates": update,
        "global_step": global_step,
        "wall_time_s": wall,
        "sps": (global_step - start_step) / wall,
        "mean_return_last10": mean10 if math.isfinite(mean10) else None,
        "run_dir": run_dir,
    }
    atomic_write(os.path.join(run_dir, "summary.json"), summary)
    for sig, handler in handlers.items():  # the signal handlers go last: a second Ctrl-C still ends cleanly
        signal.signal(sig, handler)
    if status == "diverged":
        print(f"diverged at update {update + 1} (NaN/Inf); the state before it: {ckpt_path}", file=sys.stderr)
    print(
        f"{status}: {global_step} steps ({global_step - start_step} in {wall:.1f}s, {summary['sps']:.0f} "
        f"SPS), mean return of the last 10 episodes {mean10:.2f}; run dir {run_dir}"
    )
    return run_dir, stop[0] if status == "interrupted" else status


EXIT_CODES = {"finished": 0, "diverged": 3, "SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}
SIGNALS = signal.SIGINT, signal.SIGTERM, signal.SIGHUP  # Ctrl-C, what Slurm / Kubernetes send, SSH closing


def main(argv=None) -> int:
    torch.set_num_threads(1)  # fastest for these small networks, and deterministic
    try:
        args = parse_args(argv)
        check_args(args)
        check_env(args.env_id, args.capture_video)  # bad input is refused before a run directory exists
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    run, handlers = new_run_dir(args), {sig: signal.getsignal(sig) for sig in SIGNALS}
    try:
        return EXIT_CODES[train(args, run_dir=run)[1]]
    except Exception as e:  # an env raising mid-episode, a full disk, out of memory: keep the run's tail
        for sig, handler in handlers.items():  # train's handlers must not outlive its run
            signal.signal(sig, handler)
        if os.path.exists(tmp := os.path.join(run, "checkpoint.pt.tmp")):  # cut short: checkpoint.pt stays
            os.remove(tmp)
        with open(trace := os.path.join(run, "traceback.txt"), "w") as f:
            traceback.print_exception(e, file=f)
        msg = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"  # as the lab's record_crash
        atomic_write(os.path.join(run, "summary.json"), {"status": "crashed", "error": msg, "run_dir": run})
        print(f"crashed: {msg} (traceback in {trace}; status crashed in summary.json)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
