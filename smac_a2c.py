"""SMAC, the Sherman-Morrison Actor-Critic: A2C + GAE with a rank-1 natural policy gradient.

Paper: "Rank-1 Approximation of Inverse Fisher for Natural Policy Gradients in Deep Reinforcement
Learning" (Huo et al., TMLR 2026). The actor's step preconditions the policy gradient g with a
damped rank-1 empirical Fisher, inverted in closed form by the Sherman-Morrison formula in O(d):
    theta <- theta + eta (lambda I + l l^T)^-1 g,   l = grad log pi(a|s)
The default is the paper's Practical Method, which its experiments run: l and g are means over a
rollout of B = 1000 transitions, one step per rollout. --fisher per-sample is its Algorithm 1.

Run it with the paper's Hopper rows (every task's rows: benchmark/hyperparams.toml):
    python smac_a2c.py --env-id Hopper-v4 --damping 1.0                          # SMAC (eta 1e-2)
    python smac_a2c.py --env-id Hopper-v4 --optimizer sgd --learning-rate 1e-3   # AC-SGD
    python smac_a2c.py --env-id Hopper-v4 --optimizer adam --learning-rate 1e-4  # AC-Adam
Logs: runs/<run>/ (`tensorboard --logdir runs`); the final state: runs/<run>/checkpoint.pt.

What the step tells you (TensorBoard's losses/ell_sq, cos_g_step, step_par_norm, step_perp_norm):
the step divides g's part across l by lambda and its part along l by lambda + |l|^2. With batch
means, E[l] = 0 on-policy, so |l_bar|^2 shrinks like 1/B; where |l_bar|^2 << lambda, SMAC is nearly
SGD with step eta / lambda (cos(g, step) near 1). Algorithm 1's per-sample step is SGD's per-sample
direction rescaled: A l / (lambda + |l|^2).

Read top to bottom: Args, the SMAC step (the copy block), the four actor steps, GAE, the networks,
normalization and the run's plumbing, then train() (Algorithm 1's loop) and main(). ALGO LOGIC
marks the paper's lines, "ours" a choice where the paper is silent. For long or many runs (resume,
crash-safe logs, input checks, AC-CG, AC-KFAC, ablations, a KL-set step): python -m benchmark.trainer.
"""

import copy
import os
import random
import signal
import time
from dataclasses import asdict, dataclass
from typing import Literal, Optional

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro
from torch.utils.tensorboard import SummaryWriter


@dataclass
class Args:
    exp_name: str = "smac_a2c"
    """name of the experiment, in the run directory runs/{env_id}__{exp_name}__{seed}__{time}"""
    seed: int = 1
    """seed of python, numpy, torch and the environments"""
    cuda: bool = False
    """networks and updates on the GPU if there is one; actions from a CPU copy of the actor"""
    track: bool = False
    """sync the TensorBoard scalars to Weights & Biases (`wandb login`, or WANDB_MODE=offline)"""
    wandb_project_name: str = "smac"
    """W&B project for --track"""
    wandb_entity: Optional[str] = None
    """W&B entity (team or user) for --track; default: your W&B default entity"""
    capture_video: bool = False
    """record episodes of the first environment into runs/<run>/videos (gymnasium's RecordVideo)"""
    env_id: str = "Hopper-v4"
    """gymnasium environment id (1-D Box observations; Discrete or 1-D Box actions)"""
    total_timesteps: int = 1_000_000
    """total environment steps, rounded down to whole rollouts (as CleanRL does)"""
    optimizer: Literal["smac", "sgd", "adam"] = "smac"
    """actor step: smac (Sherman-Morrison natural gradient), sgd (AC-SGD) or adam (AC-Adam)"""
    fisher: Literal["batch-mean", "per-sample"] = "batch-mean"
    """smac: batch-mean (Practical Method: a step per rollout) or per-sample (Algorithm 1)"""
    learning_rate: float = 1e-2
    """actor step size eta (the default is SMAC's Hopper row; AC-SGD's is 1e-3, AC-Adam's 1e-4)"""
    damping: float = 1.0
    """smac damping lambda > 0 in F = lambda I + l l^T"""
    critic_learning_rate: float = 1e-4
    """critic Adam learning rate alpha"""
    num_envs: int = 1
    """parallel environments (the paper: 1); a rollout holds num_steps * num_envs transitions"""
    num_steps: int = 1000
    """T: steps per environment per rollout (batch-mean: one actor step per rollout)"""
    gamma: float = 0.99
    """discount factor gamma"""
    gae_lambda: float = 0.9
    """GAE trace-decay lambda_GAE"""
    norm_obs: bool = False
    """normalize observations by their running mean and std (updated once per rollout)"""
    norm_reward: bool = False
    """scale rewards by the running std of the discounted return, clipped to [-10, 10]"""
    norm_adv: bool = False
    """normalize advantages to zero mean and unit std per rollout"""
    hidden_sizes: tuple[int, ...] = (64, 64)
    """hidden layer widths of the actor and the critic (tanh MLPs)"""


# ==== The SMAC step: the copy block ===============================================================
# The whole update (eq. (5) with the Practical Method's batch means; ascent on J):
#     theta <- theta + eta (lambda I + l_bar l_bar^T)^-1 g
#     l_bar = grad (1/B) sum_i log pi(a_i|s_i),   g = grad (1/B) sum_i log pi(a_i|s_i) A_i
# To use SMAC in your own loop, copy these five functions (only `import torch`):
# sherman_morrison_direction, trainable_parameters, mean_score_and_gradient, smac_direction,
# apply_step_. Then, with log_probs the batch's log pi(a|s) with their graph:
#     direction = smac_direction(policy, log_probs, advantages, damping=1.0)
#     apply_step_(policy, direction, lr=1e-2)  # the paper's fixed eta
# eta set by the KL the step causes instead: kl_step_, the file smac_kl.py (docs/drop_in.md).
def sherman_morrison_direction(g: torch.Tensor, ell: torch.Tensor, damping: float) -> torch.Tensor:
    """(lambda I + l l^T)^-1 g for flat 1-D tensors g and l: two dot products and one axpy, O(d)."""
    if not damping > 0:
        raise ValueError(f"damping must be > 0 (the paper's rows: 0.01 to 1), got {damping}")
    # eq. (4): (lambda I + l l^T)^-1 = I / lambda - l l^T / (lambda^2 + lambda l^T l). Applied to g:
    # eq. (5) without eta, (1/lambda) (g - l (l^T g) / (lambda + l^T l)). No d x d matrix.
    return (g - ell * (torch.dot(ell, g) / (damping + torch.dot(ell, ell)))) / damping


def trainable_parameters(params) -> list:
    """A module's (or a list's) parameters with requires_grad; their order fixes the flat layout.
    A ValueError for none, for a parameter listed twice, or for a dict (pass its .values())."""
    if isinstance(params, dict):
        raise ValueError("params: a module or a list of parameters, not a dict (pass .values())")
    if isinstance(params, torch.nn.Module):
        params = params.parameters()
    params = [p for p in params if p.requires_grad]
    if not params:
        raise ValueError("no trainable parameters: pass a module or a list, not a used generator")
    if len({id(p) for p in params}) < len(params):
        raise ValueError("a parameter is listed twice in params: a step would move it twice")
    return params


def mean_score_and_gradient(params, log_probs: torch.Tensor, advantages, retain_graph: bool = False):
    """Flat (l_bar, g) of the Practical Method, from two backward passes through the same graph.
    retain_graph: keep the graph for a later backward through it (a critic sharing the trunk)."""
    params = trainable_parameters(params)
    if not isinstance(log_probs, torch.Tensor) or not log_probs.requires_grad:
        raise ValueError("log_probs need their graph: compute them outside torch.no_grad()")
    advantages = torch.as_tensor(advantages, dtype=log_probs.dtype, device=log_probs.device)
    if log_probs.dim() != 1 or advantages.shape != log_probs.shape:
        shapes = f"{tuple(log_probs.shape)}, {tuple(advantages.shape)}"
        raise ValueError(f"log_probs, advantages need shape (B,), got {shapes}")
    batch_size = len(log_probs)
    score_weights = torch.full_like(log_probs, 1.0 / batch_size)
    # ours, where the paper is silent: g is a batch mean, as l_bar is
    adv_weights = advantages.detach() / batch_size
    zero_if_unused = {"allow_unused": True, "materialize_grads": True}  # not None where unused
    ell = torch.autograd.grad(log_probs, params, score_weights, retain_graph=True, **zero_if_unused)
    g = torch.autograd.grad(log_probs, params, adv_weights, retain_graph=retain_graph, **zero_if_unused)
    return torch.cat([d.reshape(-1) for d in ell]), torch.cat([d.reshape(-1) for d in g])


def smac_direction(params, log_probs, advantages, damping: float, retain_graph: bool = False) -> torch.Tensor:
    """F~^-1 g with F~ = damping I + l_bar l_bar^T, for any policy. params: a module or a list;
    log_probs (B,) WITH their graph; advantages (B,), a tensor or an array. Flat (d,)."""
    ell, g = mean_score_and_gradient(params, log_probs, advantages, retain_graph)
    return sherman_morrison_direction(g, ell, damping)


@torch.no_grad()
def apply_step_(params, direction: torch.Tensor, lr: float) -> None:
    """theta <- theta + lr * direction (ascent on J), in smac_direction's flat layout. A parameter
    whose direction is zero is not written (its version unchanged, a critic's graph stays valid).
    A non-finite lr: ValueError; NaN/Inf in direction: FloatingPointError; nothing moves."""
    if not abs(lr) < float("inf"):  # NaN fails every comparison: `not x < inf` refuses it too
        raise ValueError(f"lr must be a finite number, got {lr}")
    params = trainable_parameters(params)
    sizes = [p.numel() for p in params]
    if direction.numel() != sum(sizes):
        raise ValueError(f"direction has {direction.numel()} entries, the parameters {sum(sizes)}")
    if not torch.isfinite(direction).all():
        raise FloatingPointError("NaN or Inf in the direction (a diverged step); nothing was moved")
    for p, d in zip(params, direction.split(sizes)):
        if d.any():
            p.add_(d.view_as(p), alpha=lr)


# ==== The four actor steps: a batch {obs, actions, advantages} in, {g, step, ...} out =============
def flat_grad(output: torch.Tensor, params) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(output, params)])


def smac_batch_mean_step(actor: nn.Module, batch: dict, args: Args) -> dict:
    """SMAC as the paper's experiments run it (Practical Method): one step per rollout of B = T x N
    transitions, F~ = lambda I + l_bar l_bar^T."""
    log_probs = actor(batch["obs"]).log_prob(batch["actions"])
    # smac_direction, in its two halves so that l_bar can be logged
    ell, g = mean_score_and_gradient(actor, log_probs, batch["advantages"])
    step = sherman_morrison_direction(g, ell, args.damping)
    # The Practical Method writes theta - eta [g / lambda - ...], literally a descent on J; here an
    # ascent, as eq. (5) and Algorithm 1, line 8
    apply_step_(actor, step, args.learning_rate)
    return {"g": g, "step": step, "ell": ell}


def smac_per_sample_step(actor: nn.Module, batch: dict, args: Args) -> dict:
    """SMAC as Algorithm 1 writes it: one step per transition, in rollout order, each with its own
    one-sample Fisher lambda I + l l^T, l = grad log pi(a|s): B backward passes per rollout."""
    params = trainable_parameters(actor)
    n = len(batch["obs"])
    g_sum = 0.0
    step_sum = 0.0
    ell_sq_sum = 0.0
    # Algorithm 1, lines 6-9: for each sample, in rollout order
    for i in range(n):
        log_prob = actor(batch["obs"][i : i + 1]).log_prob(batch["actions"][i : i + 1])
        ell = flat_grad(log_prob.sum(), params)
        # line 7: g = grad log pi(a|s) A(s, a)
        g = ell * batch["advantages"][i]
        # line 8: theta <- theta + eta F^-1 g, with eq. (5); l is an eigenvector of F, so the
        # step is SGD's per-sample direction rescaled: A l / (lambda + |l|^2)
        step = sherman_morrison_direction(g, ell, args.damping)
        apply_step_(params, step, args.learning_rate)
        g_sum = g_sum + g
        step_sum = step_sum + step
        ell_sq_sum = ell_sq_sum + torch.dot(ell, ell)
    return {"g": g_sum / n, "step": step_sum / n, "ell_sq_mean": ell_sq_sum / n}


def sgd_step(actor: nn.Module, batch: dict, args: Args) -> dict:
    """AC-SGD: theta <- theta + eta g, g = grad mean_i log pi(a_i|s_i) A_i."""
    objective = (actor(batch["obs"]).log_prob(batch["actions"]) * batch["advantages"]).mean()
    g = flat_grad(objective, trainable_parameters(actor))
    apply_step_(actor, g, args.learning_rate)
    return {"g": g, "step": g}


def adam_step(actor: nn.Module, optimizer: torch.optim.Adam, batch: dict, args: Args) -> dict:
    """AC-Adam: one step of the actor's Adam (rate eta, maximize=True) on the same objective."""
    params = list(actor.parameters())
    before = nn.utils.parameters_to_vector(params).detach()
    objective = (actor(batch["obs"]).log_prob(batch["actions"]) * batch["advantages"]).mean()
    optimizer.zero_grad(set_to_none=True)
    objective.backward()
    g = torch.cat([p.grad.reshape(-1) for p in params])
    optimizer.step()
    # Adam's step, for the diagnostics: theta's change divided by eta, as sgd and batch-mean SMAC
    step = (nn.utils.parameters_to_vector(params).detach() - before) / args.learning_rate
    return {"g": g, "step": step}


# ==== GAE (the paper's section 4.4) =============================================================
def compute_gae(rewards, values, next_values, terminations, dones, gamma: float, gae_lambda: float):
    """(advantages, critic targets R = A + V) from (T, N) arrays: terminations[t] / dones[t] are 1
    where an episode terminated / ended at t; next_values[t] is V(s_{t+1}), at an end V(final obs)."""
    # eq. (14): delta_t = r_t + gamma V(s_{t+1}) - V(s_t), every t at once. Ours, where the paper is
    # silent: a truncation bootstraps from V(final observation), a termination does not (np.where,
    # not a product with 0: V of a terminal observation is unused, even where it is NaN)
    deltas = rewards + gamma * np.where(terminations > 0, 0.0, next_values) - values
    decay = gamma * gae_lambda * (1.0 - dones)
    advantages = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    # eq. (15): A_t = delta_t + gamma lambda_GAE A_{t+1}, cut where an episode ends
    for t in reversed(range(rewards.shape[0])):
        last = deltas[t] + decay[t] * last
        advantages[t] = last
    return advantages, advantages + values


# ==== Networks: separate actor and critic MLPs (CleanRL's: 64-64 tanh, orthogonal init) ===========
def layer_init(layer: nn.Linear, std: float = np.sqrt(2)) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, 0.0)
    return layer


class Actor(nn.Module):
    """pi_theta(a|s) = Categorical(logits=MLP(s)) or Normal(MLP(s), exp(log_std))."""

    def __init__(self, obs_dim: int, act_dim: int, discrete: bool, hidden_sizes=(64, 64)):
        super().__init__()
        self.discrete = discrete
        sizes = [obs_dim, *hidden_sizes]
        self.linears = nn.ModuleList(layer_init(nn.Linear(a, b)) for a, b in zip(sizes, sizes[1:]))
        # the output layer starts near zero: near-uniform logits, or means near 0 (std 1)
        self.linears.append(layer_init(nn.Linear(sizes[-1], act_dim), std=0.01))
        if not discrete:
            self.log_std = nn.Parameter(torch.zeros(act_dim))

    def forward(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        """The policy at observations (B, obs_dim); its log_prob(actions) has shape (B,)."""
        *hidden, last = self.linears
        h = obs
        for linear in hidden:
            h = torch.tanh(linear(h))
        out = last(h)
        # validate_args=False: no argument checks at each of the rollout's actions
        if self.discrete:
            return torch.distributions.Categorical(logits=out, validate_args=False)
        normal = torch.distributions.Normal(out, torch.exp(self.log_std), validate_args=False)
        return torch.distributions.Independent(normal, 1, validate_args=False)  # sums log pi


def make_networks(args: Args, obs_dim: int, act_dim: int, discrete: bool, device="cpu"):
    """The actor, and the critic V_phi(s), an MLP whose Flatten(-2) makes its (B, 1) output (B,)."""
    actor = Actor(obs_dim, act_dim, discrete, args.hidden_sizes)
    sizes = [obs_dim, *args.hidden_sizes]
    layers = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        layers.append(layer_init(nn.Linear(n_in, n_out)))
        layers.append(nn.Tanh())
    critic = nn.Sequential(*layers, layer_init(nn.Linear(sizes[-1], 1), std=1.0), nn.Flatten(-2))
    return actor.to(device), critic.to(device)


# ==== Normalization (ours, as CleanRL's wrappers), the run's plumbing and logging ================
class Normalizer:
    """--norm-obs, --norm-reward as CleanRL's gym wrappers; the statistics updated once per rollout."""

    def __init__(self, obs_dim: int, num_envs: int, gamma: float, norm_obs: bool, norm_reward: bool):
        self.obs_rms = gym.wrappers.utils.RunningMeanStd(shape=(obs_dim,))  # Chan et al.'s update
        self.ret_rms = gym.wrappers.utils.RunningMeanStd(shape=())
        self.norm_obs = norm_obs
        self.norm_reward = norm_reward
        self.gamma = gamma
        self.discounted_return = np.zeros(num_envs)

    def obs(self, obs: np.ndarray) -> np.ndarray:
        if not self.norm_obs:
            return obs
        return np.clip((obs - self.obs_rms.mean) / np.sqrt(self.obs_rms.var + 1e-8), -10.0, 10.0)

    def rewards(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """(T, N) rewards over the running std of the discounted return (statistics updated first)."""
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


def tensor(x: np.ndarray, device) -> torch.Tensor:
    return torch.from_numpy(x.astype(np.float32)).to(device)


def make_env(args: Args, run_dir: str, i: int) -> gym.Env:
    """Environment i, a plain gymnasium one; with --capture-video the first records videos."""
    if not args.capture_video or i > 0:
        return gym.make(args.env_id, disable_env_checker=True)
    env = gym.make(args.env_id, disable_env_checker=True, render_mode="rgb_array")
    return gym.wrappers.RecordVideo(env, os.path.join(run_dir, "videos"), disable_logger=True)


def run_name(args: Args) -> str:
    """{env_id}__{exp_name}__{seed}__{unix time} ('/' in a namespaced id becomes '-')."""
    return f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}".replace("/", "-")


def create_run_dir(args: Args) -> str:
    """runs/<run_name>, made by this run alone: one started in the same second gets -2, -3, ..."""
    base = os.path.join("runs", run_name(args))
    os.makedirs("runs", exist_ok=True)
    suffix = 1
    while True:
        path = base if suffix == 1 else f"{base}-{suffix}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            suffix += 1


class StopOnSignal:
    """Ctrl-C and SIGTERM set `signum`, which the loop reads once per update; a second signal is
    Python's KeyboardInterrupt. release() gives back the handlers it found."""

    def __init__(self):
        self.signum = 0
        self.found = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.found[signum] = signal.signal(signum, self.handle)

    def handle(self, signum, frame):
        if self.signum:
            raise KeyboardInterrupt
        self.signum = signum

    def release(self) -> None:
        for signum, handler in self.found.items():
            signal.signal(signum, handler)


def make_writer(args: Args, run_dir: str) -> SummaryWriter:
    """TensorBoard scalars in run_dir; with --track, W&B syncs them (as CleanRL does)."""
    if args.track:
        import wandb

        wandb.init(
            project=args.wandb_project_name,
            entity=args.wandb_entity,
            sync_tensorboard=True,
            config=asdict(args),
            name=os.path.basename(run_dir),
        )
    return SummaryWriter(run_dir)


def step_diagnostics(diag: dict) -> dict:
    """How far SMAC's step departs from SGD with step eta / lambda: norms, cos(g, step), the step
    along l_bar and across it. diag: g, step, and ell (batch-mean) or ell_sq_mean (per-sample);
    ell_sq is |l_bar|^2 for the batch-mean step, the mean of the samples' |l|^2 for the per-sample one."""
    g = diag["g"].double()
    step = diag["step"].double()
    ell_sq = float(diag.get("ell_sq_mean", float("nan")))
    par = float("nan")
    perp = float("nan")
    if "ell" in diag:
        ell = diag["ell"].double()
        ell_sq = torch.dot(ell, ell).item()
        par = (torch.dot(ell, step).abs() / (ell.norm() + 1e-300)).item()
        perp = max(step.norm().item() ** 2 - par**2, 0.0) ** 0.5
    cos = (torch.dot(g, step) / (g.norm() * step.norm() + 1e-300)).item()
    return {
        "ell_sq": ell_sq,
        "g_norm": g.norm().item(),
        "step_norm": step.norm().item(),
        "cos_g_step": cos,
        "step_par_norm": par,
        "step_perp_norm": perp,
    }


# ==== Training: Algorithm 1's loop ================================================================
def train(args: Args) -> int:
    """Train; the exit code: 0 finished, 130 / 143 stopped by Ctrl-C / SIGTERM after an update
    (checkpoint.pt holds the state after the last completed update either way)."""
    # TRY NOT TO MODIFY: the run directory, logging, seeding
    run_dir = create_run_dir(args)
    writer = make_writer(args, run_dir)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")

    # environments (the i-th resets with seed + i); Algorithm 1, line 2: initialise theta and phi
    envs = [make_env(args, run_dir, i) for i in range(args.num_envs)]
    act_space = envs[0].action_space
    discrete = isinstance(act_space, gym.spaces.Discrete)
    obs_dim = envs[0].observation_space.shape[0]
    act_dim = act_space.n if discrete else act_space.shape[0]
    actor, critic = make_networks(args, obs_dim, act_dim, discrete, device)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate)
    normalizer = Normalizer(obs_dim, args.num_envs, args.gamma, args.norm_obs, args.norm_reward)
    parts = {"actor": actor, "critic": critic, "critic_opt": critic_opt, "normalizer": normalizer}
    if args.optimizer == "adam":
        actor_opt = torch.optim.Adam(actor.parameters(), lr=args.learning_rate, maximize=True)
        parts["actor_opt"] = actor_opt
    # --cuda: act with a CPU copy of the actor, refreshed after each update (no GPU round trips)
    acting = actor if device.type == "cpu" else copy.deepcopy(actor).cpu()
    T = args.num_steps
    N = args.num_envs
    budget = args.total_timesteps - args.total_timesteps % (T * N)
    buf_obs = np.zeros((T, N, obs_dim))
    buf_next_obs = np.zeros((T, N, obs_dim))
    buf_actions = np.zeros((T, N) if discrete else (T, N, act_dim))
    buf_rewards = np.zeros((T, N))
    buf_terminations = np.zeros((T, N))
    buf_dones = np.zeros((T, N))
    ep_return = np.zeros(N)
    ep_length = np.zeros(N, dtype=np.int64)
    recent_returns = []
    obs = np.stack([env.reset(seed=args.seed + i)[0] for i, env in enumerate(envs)])
    global_step = 0
    update = 0
    start_time = time.time()
    stop = StopOnSignal()  # TRY NOT TO MODIFY: a first signal ends the run after its update
    try:
        # Algorithm 1, line 3: for iteration k = 0, 1, ... (k: `update` here)
        while global_step < budget and not stop.signum:
            # ALGO LOGIC: line 4: roll out T steps in every environment with the current policy
            for t in range(T):
                global_step += N
                with torch.inference_mode():
                    action = acting(tensor(normalizer.obs(obs), "cpu")).sample().numpy()
                if discrete:  # Discrete(n, start): the index shifted; a Box: clipped (as CleanRL)
                    env_action = action + act_space.start
                else:
                    env_action = action.clip(act_space.low, act_space.high)
                buf_obs[t] = obs
                buf_actions[t] = action
                # ours: a plain list, not gymnasium's vector API, so that an ending episode's s_{t+1}
                # is its true final observation (what a truncation bootstraps from)
                for i, env in enumerate(envs):
                    next_obs, reward, terminated, truncated, _ = env.step(env_action[i])
                    buf_rewards[t, i] = reward
                    buf_terminations[t, i] = terminated
                    buf_dones[t, i] = terminated or truncated
                    buf_next_obs[t, i] = next_obs
                    ep_return[i] = ep_return[i] + reward
                    ep_length[i] = ep_length[i] + 1
                    if terminated or truncated:
                        writer.add_scalar("charts/episodic_return", ep_return[i], global_step)
                        writer.add_scalar("charts/episodic_length", ep_length[i], global_step)
                        recent_returns.append(ep_return[i])
                        ep_return[i] = 0.0
                        ep_length[i] = 0
                        next_obs, _ = env.reset()
                    obs[i] = next_obs

            # ALGO LOGIC: line 5: advantages with GAE, from the critic before its update
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

            # ALGO LOGIC: lines 6-9: the actor step --optimizer and --fisher choose
            if args.optimizer == "sgd":
                diagnostics = sgd_step(actor, batch, args)
            elif args.optimizer == "adam":
                diagnostics = adam_step(actor, actor_opt, batch, args)
            elif args.fisher == "per-sample":
                diagnostics = smac_per_sample_step(actor, batch, args)
            else:
                diagnostics = smac_batch_mean_step(actor, batch, args)
            # ALGO LOGIC: line 10: an Adam step on L_critic = mean_t (R_t - V_phi(s_t))^2 (sec. 4.4)
            value_loss = (tensor(returns, device).reshape(-1) - critic(b_obs)).pow(2).mean()
            critic_opt.zero_grad(set_to_none=True)
            value_loss.backward()
            critic_opt.step()
            # ours: observation statistics updated after the update that used them
            normalizer.obs_rms.update(buf_obs.reshape(-1, obs_dim))
            update += 1
            if acting is not actor:
                acting.load_state_dict(actor.state_dict())

            # TRY NOT TO MODIFY: losses, SMAC's step diagnostics, a progress line every 10 updates
            with torch.no_grad():
                policy = actor(batch["obs"])
                mean_logprob = policy.log_prob(batch["actions"]).mean().item()
                entropy = policy.entropy().mean().item()
            # the paper's diagnostic: the mean log-probability of the taken actions
            writer.add_scalar("losses/mean_logprob", mean_logprob, global_step)
            writer.add_scalar("losses/entropy", entropy, global_step)
            writer.add_scalar("losses/value_loss", value_loss.item(), global_step)
            for key, value in step_diagnostics(diagnostics).items():
                writer.add_scalar(f"losses/{key}", value, global_step)
            if update % 10 == 0 or global_step >= budget:
                mean_return = np.mean(recent_returns[-10:]) if recent_returns else float("nan")
                sps = int(global_step / (time.time() - start_time))
                writer.add_scalar("charts/SPS", sps, global_step)
                line = f"step {global_step}/{budget}, {sps} SPS, return {mean_return:.1f} (last 10)"
                print(line, flush=True)
    finally:
        stop.release()

    # TRY NOT TO MODIFY: the final checkpoint, written whole (a temporary file, then renamed);
    # torch.load(path, weights_only=True) reads it
    state = {"args": asdict(args), "global_step": global_step, "update": update}
    for name, part in parts.items():
        state[name] = part.state_dict()
    path = os.path.join(run_dir, "checkpoint.pt")
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)
    for env in envs:
        env.close()
    writer.close()
    if stop.signum and global_step < budget:
        return 128 + stop.signum  # 130 after Ctrl-C, 143 after SIGTERM
    return 0


def main(argv=None) -> int:
    """Parse the flags (tyro: a bad one is its message and exit 2), then train; the exit code."""
    args = tyro.cli(Args, args=argv)
    torch.set_num_threads(1)  # fastest for these small networks, and deterministic
    # deterministic kernels, switched on before anything renders (with a CUDA build of torch this
    # call imports triton, whose import crashes once an EGL context exists)
    torch.use_deterministic_algorithms(True, warn_only=True)
    if args.capture_video:  # set only to render: training needs no display or EGL
        os.environ.setdefault("MUJOCO_GL", "glfw" if os.environ.get("DISPLAY") else "egl")
    return train(args)


if __name__ == "__main__":
    raise SystemExit(main())
