"""SMAC, the Sherman-Morrison Actor-Critic: A2C + GAE with a rank-1 natural policy gradient.

Paper: "Rank-1 Approximation of Inverse Fisher for Natural Policy Gradients in Deep Reinforcement
Learning" (Huo et al., TMLR 2026). The actor's step preconditions the policy gradient with a damped
rank-1 empirical Fisher, inverted in closed form by the Sherman-Morrison formula in O(d).

Run (the defaults are the paper's Hopper row; the other rows: benchmark/hyperparams.toml):
    python smac_a2c.py --env-id Hopper-v4                                        # SMAC
    python smac_a2c.py --env-id Hopper-v4 --optimizer sgd --learning-rate 1e-3   # AC-SGD
    python smac_a2c.py --env-id Hopper-v4 --optimizer adam --learning-rate 1e-4  # AC-Adam
Logs: runs/<run>/ (`tensorboard --logdir runs`), the final state in runs/<run>/checkpoint.pt.

Read top to bottom: Args, the SMAC step (the copy block), the four actor steps, GAE, the networks,
and train(), Algorithm 1's loop, whose own additions are labelled OURS or TRY NOT TO MODIFY. Stop
at the end of train(): what follows is ours (kl_step_, fast acting, normalization, signals, main).
"""

import atexit
import copy
import os
import random
import signal
import sys
import time
from dataclasses import asdict, dataclass
from typing import Literal, Optional

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import tyro
from torch.utils.tensorboard import SummaryWriter

FLOAT32_MAX = float(torch.finfo(torch.float32).max)  # the networks compute in float32


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
    """actor step size eta"""
    target_kl: float = 0.0
    """ours: > 0 sets batch-mean SMAC's step by the KL it causes (TRPO's 0.01); 0: the fixed eta"""
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
# To use SMAC in your own loop, copy these seven functions (two after train(); only `import torch`):
# sherman_morrison_direction, trainable_parameters, mean_score_and_gradient, smac_direction,
# apply_step_, kl_step_, refuse_stale. Then, with log_probs the batch's log pi(a|s) with graph:
#     direction = smac_direction(policy, log_probs, advantages, damping=1.0)
#     apply_step_(policy, direction, lr=1e-2)  # the paper's fixed eta, OR (ours, after train()):
#     eta = kl_step_(policy, direction, log_prob_fn, target_kl=0.01)  # log_prob_fn(): log pi(a|s) now
# The rules (a shared trunk, the batch size, eta): docs/drop_in.md.
def sherman_morrison_direction(g: torch.Tensor, ell: torch.Tensor, damping: float) -> torch.Tensor:
    """(lambda I + l l^T)^-1 g for flat 1-D tensors g and l: two dot products and one axpy, O(d)."""
    # eq. (4): (lambda I + l l^T)^-1 = I / lambda - l l^T / (lambda^2 + lambda l^T l). Applied to g:
    # eq. (5) without eta, (1/lambda) (g - l (l^T g) / (lambda + l^T l)). No d x d matrix.
    # Ours: g's component across l is divided by lambda, along l by lambda + |l|^2. On-policy E[l] = 0,
    # so a batch mean's |l|^2 shrinks like 1/B; with |l|^2 << lambda, SMAC is SGD with step eta / lambda.
    return (g - ell * (torch.dot(ell, g) / (damping + torch.dot(ell, ell)))) / damping


def trainable_parameters(params) -> list:
    """A module's (or a list's) parameters with requires_grad; their order fixes the flat layout."""
    if isinstance(params, torch.nn.Module):
        params = params.parameters()
    params = [p for p in params if p.requires_grad]
    if not params:
        raise ValueError("no trainable parameters: pass a module or a list, not a used generator")
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
    if not damping > 0:
        raise ValueError(f"damping must be > 0 (the paper's rows: 0.01 to 1), got {damping}")
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
    transitions. With --target-kl it only returns the direction: train() calls kl_step_."""
    # The paper's Practical Method writes theta - eta [g / lambda - ...] with g the gradient of J:
    # literally a descent on J. Here: ascent, as eq. (5) and Algorithm 1, line 8.
    log_probs = actor(batch["obs"]).log_prob(batch["actions"])
    # smac_direction, in its two halves so that l_bar can be logged
    ell, g = mean_score_and_gradient(actor, log_probs, batch["advantages"])
    step = sherman_morrison_direction(g, ell, args.damping)
    if args.target_kl == 0:
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
    # Algorithm 1, lines 6-9: for all samples k (i here; line 3's k is the iteration)
    for i in range(n):
        log_prob = actor(batch["obs"][i : i + 1]).log_prob(batch["actions"][i : i + 1])
        ell = flat_grad(log_prob.sum(), params)
        # line 7: g = grad log pi(a|s) A(s, a)
        g = ell * batch["advantages"][i]
        # line 8: theta <- theta + eta F^-1 g, with eq. (5)
        step = sherman_morrison_direction(g, ell, args.damping)
        apply_step_(params, step, args.learning_rate)
        g_sum = g_sum + g
        step_sum = step_sum + step
        ell_sq_sum = ell_sq_sum + torch.dot(ell, ell)
    return {"g": g_sum / n, "step": step_sum / n, "ell_sq_mean": ell_sq_sum / n}


def sgd_step(actor: nn.Module, batch: dict, args: Args) -> dict:
    """AC-SGD: theta <- theta + eta g, g = grad mean_i log pi(a_i|s_i) A_i."""
    objective = (actor(batch["obs"]).log_prob(batch["actions"]) * batch["advantages"]).mean()
    g = flat_grad(objective, list(actor.parameters()))
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


# ==== GAE and the critic (the paper's section 4.4) ================================================
def compute_gae(rewards, values, next_values, terminations, dones, gamma: float, gae_lambda: float):
    """(advantages, critic targets R = A + V) from (T, N) arrays: terminations[t] / dones[t] are 1
    where an episode terminated / ended at t, next_values[t] is V(s_{t+1}) (at an end: the final obs)."""
    # eq. (14): delta_t = r_t + gamma V(s_{t+1}) - V(s_t), every t at once. Ours, where the paper is
    # silent: a truncation bootstraps from V(final observation), a termination does not (a select:
    # a NaN value of a terminal observation must not leak into the advantages)
    deltas = rewards + gamma * np.where(terminations > 0, 0.0, next_values) - values
    decay = gamma * gae_lambda * (1.0 - dones)
    advantages = np.zeros_like(rewards)
    last = np.zeros_like(rewards[0])
    # eq. (15): A_t = delta_t + gamma lambda_GAE A_{t+1}, cut where an episode ends
    for t in reversed(range(rewards.shape[0])):
        last = deltas[t] + decay[t] * last
        advantages[t] = last
    return advantages, advantages + values


def critic_step(critic: nn.Module, optimizer: torch.optim.Optimizer, obs, returns) -> float:
    """One Adam step (rate alpha) on L_critic = mean_t (R_t - V_phi(s_t))^2 (section 4.4)."""
    loss = (returns - critic(obs)).pow(2).mean()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss.item()


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
        # validate_args=False: the loop checks finiteness itself (NaN: exit 3 with a checkpoint)
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


# ==== Training: Algorithm 1's loop ================================================================
def train(args: Args) -> int:
    """Train; the exit code: 0 finished, 3 diverged (NaN/Inf), 130 / 143 Ctrl-C / SIGTERM, 1 no
    checkpoint.pt (it holds the last completed update's state)."""
    # TRY NOT TO MODIFY: signals, the run directory, logging, seeding (helpers after train())
    stop = StopRequest()
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
    actor_opt = torch.optim.Adam(actor.parameters(), lr=args.learning_rate, maximize=True)
    normalizer = Normalizer(obs_dim, args.num_envs, args.gamma, args.norm_obs, args.norm_reward)
    parts = {"actor": actor, "critic": critic, "critic_opt": critic_opt, "actor_opt": actor_opt}
    parts["normalizer"] = normalizer
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
    finished = []  # (step, return, length) of the episodes that end in this rollout
    obs = np.stack([env.reset(seed=args.seed + i)[0] for i, env in enumerate(envs)])
    global_step = 0
    update = 0
    no_step = 0  # --target-kl: updates whose step kl_step_ refused
    exit_code = 0
    start_time = time.time()
    # the state after the last completed update: what checkpoint.pt keeps if the next one goes bad
    last_good = checkpoint_state(args, global_step, update, parts)
    stop.stop_now_at = 2  # a first signal ends the run after its update, a second at once
    try:
        # Algorithm 1, line 3: for iteration k = 0, 1, ... (k: `update` here)
        while global_step < budget and not stop.signal:
            # ALGO LOGIC: line 4: roll out T steps in every environment with the current policy
            for t in range(T):
                if not np.abs(obs).max() <= FLOAT32_MAX:  # NaN, Inf, or beyond float32 (as 1e39)
                    raise Diverged("NaN/Inf in an observation")
                # a ~ pi(.|s): what acting(obs).sample() draws, faster (ours, after train())
                action = act(acting, tensor(normalizer.obs(obs), "cpu")).numpy()
                # Discrete(n, start): the index shifted; a Box: the action clipped (as CleanRL)
                env_action = (
                    action + act_space.start if discrete else action.clip(act_space.low, act_space.high)
                )
                buf_obs[t] = obs
                buf_actions[t] = action
                # not a SyncVectorEnv: s_{t+1} is an ending episode's final observation
                for i, env in enumerate(envs):
                    next_obs, reward, terminated, truncated, _ = env.step(env_action[i])
                    buf_rewards[t, i] = reward
                    buf_terminations[t, i] = terminated
                    buf_dones[t, i] = terminated or truncated
                    buf_next_obs[t, i] = next_obs
                    ep_return[i] = ep_return[i] + reward
                    ep_length[i] = ep_length[i] + 1
                    if terminated or truncated:
                        finished.append((global_step + (t + 1) * N, ep_return[i], ep_length[i]))
                        recent_returns.append(ep_return[i])
                        ep_return[i] = 0.0
                        ep_length[i] = 0
                        next_obs, _ = env.reset()
                    obs[i] = next_obs
            global_step += T * N
            for at, episodic_return, length in finished:  # in one burst, not during the rollout
                writer.add_scalar("charts/episodic_return", episodic_return, at)
                writer.add_scalar("charts/episodic_length", length, at)
            finished = []

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
            if args.target_kl > 0:  # OURS: eta set by the KL the step causes (after train())
                step = diagnostics["step"]
                kl_eta = kl_step_(actor, step, recompute_log_probs(actor, batch), args.target_kl)
                diagnostics["step"] = step * kl_eta / args.learning_rate  # logged on the others' scale
                diagnostics["kl_eta"] = kl_eta
                no_step += int(kl_eta == 0.0)
            # ALGO LOGIC: line 10: the critic step
            value_loss = critic_step(critic, critic_opt, b_obs, tensor(returns, device).reshape(-1))
            # observation statistics: updated after the update that used them
            normalizer.obs_rms.update(buf_obs.reshape(-1, obs_dim))
            if not finite_state(value_loss, actor, critic, normalizer, b_obs, buf_rewards):
                raise Diverged("NaN/Inf after the update")
            update += 1
            last_good = checkpoint_state(args, global_step, update, parts)
            if acting is not actor:
                acting.load_state_dict(actor.state_dict())

            # TRY NOT TO MODIFY: losses, SMAC's diagnostics, a progress line every 10 updates
            log_update(writer, actor, batch, value_loss, diagnostics, global_step)
            if update % 10 == 0 or global_step >= budget:
                mean_return = np.mean(recent_returns[-10:]) if recent_returns else float("nan")
                sps = int(global_step / (time.time() - start_time))
                refused = f", no step in {no_step} of {update} updates" if args.target_kl > 0 else ""
                line = f"step {global_step}/{budget}, {sps} SPS, return {mean_return:.1f} (last 10)"
                print(line + refused, flush=True)
    except (Diverged, FloatingPointError) as error:  # apply_step_'s non-finite direction
        print(f"diverged at update {update + 1} ({error})", file=sys.stderr)
        exit_code = 3
    except StopNow:  # a second signal: the update under way is dropped
        pass
    stop.stop_now_at = 0  # no StopNow: while the checkpoint is written, signals are only remembered
    if stop.signal and exit_code == 0 and last_good["global_step"] < budget:
        exit_code = 128 + stop.signal  # the first signal's: 130 after Ctrl-C, 143 after SIGTERM
    if not save_checkpoint(last_good, os.path.join(run_dir, "checkpoint.pt")):
        exit_code = 1
    for env in envs:
        env.close()
    writer.close()
    stop.release()
    return exit_code


# ==== The method ends here. =======================================================================
# Below: ours, not the paper's. kl_step_, the copy block's optional step size; then what a CleanRL
# user expects of a script (acting, normalization, signals, the checkpoint, checks, logging, main).


def refuse_stale(first: torch.Tensor, second: torch.Tensor, moved: dict) -> None:
    """kl_step_'s stale rule, on two outputs of log_prob_fn() at one theta with their graphs: each
    moved parameter ({name: tensor}) must be reached from `second` through nodes built in that call
    (not in `first`'s graph: a stale tensor, made before it, ignores trial steps), or a ValueError."""
    known = set()  # every node of the first call's graph, those made before the call included
    todo = [first.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and node not in known:
            known.add(node)
            todo.extend(child for child, _ in node.next_functions)
    reached = {id(node.variable) for node in known if type(node).__name__ == "AccumulateGrad"}
    fresh = set()  # the parameters the second call reaches through nodes built in it (not known)
    todo = [second.grad_fn]
    while todo:
        node = todo.pop()
        if type(node).__name__ == "AccumulateGrad":
            fresh.add(id(node.variable))
        elif node is not None and node not in known:
            known.add(node)
            todo.extend(child for child, _ in node.next_functions)
    if not reached & {id(p) for p in moved.values()}:
        raise ValueError(
            "log_prob_fn() reaches none of the parameters kl_step_ moves (stored values, another "
            "module, or no_grad): recompute log pi(a|s) from them in each call"
        )
    stale = [name for name, p in moved.items() if id(p) not in fresh]
    if stale:
        raise ValueError(
            f"log_prob_fn() does not recompute from {', '.join(stale)} (reached only through "
            "tensors made before the call, or not at all): recompute in each call the part of the "
            "forward pass that uses them, or leave them out of params"
        )


@torch.no_grad()
def kl_step_(params, direction, log_prob_fn, target_kl: float = 0.01, max_change: float = 0.1) -> float:
    """theta <- theta + eta * direction, eta such that the policy moves by about target_kl on the
    batch (PPO's approx_kl over the taken actions). Returns eta; 0: no step, every parameter as it was.
    log_prob_fn() recomputes the batch's log pi(a|s), shape (B,), from the current parameters, the
    same at every call at one theta (eval mode). A step is kept when its KL is in [target_kl / 2,
    1.5 target_kl], or below at the cap (no parameter moves by more than max_change). A ValueError,
    nothing moved: bad arguments, a log_prob_fn that varies, changes buffers or is stale (refuse_stale).
    Typically 4 forward passes. The whole contract, and from which batch size: docs/drop_in.md."""
    if not 0 < target_kl < float("inf") or not 0 < max_change < float("inf"):
        raise ValueError(f"target_kl, max_change: finite numbers > 0, not {target_kl}, {max_change}")
    buffers = []
    names = {}  # for refuse_stale's message
    if isinstance(params, torch.nn.Module):
        buffers = list(params.buffers())
        names = {id(p): name for name, p in params.named_parameters()}
    params = trainable_parameters(params)
    labels = [names.get(id(p), f"params[{i}]") for i, p in enumerate(params)]
    sizes = [p.numel() for p in params]
    if direction.numel() != sum(sizes):
        raise ValueError(f"direction has {direction.numel()} entries, the parameters {sum(sizes)}")
    moved = [(p, d.view_as(p)) for p, d in zip(params, direction.split(sizes)) if d.any()]
    largest = direction.abs().max().item()
    if not moved or not largest < float("inf"):  # a zero direction, or NaN/Inf in it: no step
        return 0.0
    buffers_before = [b.clone() for b in buffers]
    with torch.enable_grad():  # two calls with their graphs, for the stale rule
        first = log_prob_fn()
        second = log_prob_fn()
    for out in (first, second):
        if not isinstance(out, torch.Tensor) or out.dim() != 1:
            raise ValueError("log_prob_fn() must return log pi(a|s) as a torch tensor (B,)")
    if not torch.equal(first, second):
        raise ValueError("log_prob_fn() differs between two calls at one theta: use eval mode")
    if not all(torch.equal(b, b0) for b, b0 in zip(buffers, buffers_before)):
        for b, b0 in zip(buffers, buffers_before):
            b.copy_(b0)
        raise ValueError("log_prob_fn() changes the module's buffers (BatchNorm): use eval mode")
    refuse_stale(first, second, {n: p for n, p, d in zip(labels, params, direction.split(sizes)) if d.any()})
    old = first.detach()
    del first, second  # their graphs
    start = [p.clone() for p, _ in moved]
    eta_max = max_change / largest
    eta = min(1e-3 / largest, eta_max)  # a probe: no parameter moves by more than 1e-3
    too_short = 0.0  # the largest eta so far whose KL was below the band
    too_long = float("inf")  # the smallest eta so far whose KL was above it, or NaN
    kept = False
    try:  # whatever happens below, unless a step is kept, every parameter ends as it was (finally)
        for _ in range(20):  # at most 20 trials
            for (p, d), p0 in zip(moved, start):
                p.copy_(p0 + eta * d)
            if eta == eta_max and all(torch.equal(p, p0) for (p, _), p0 in zip(moved, start)):
                return 0.0  # even the cap moves no parameter
            try:
                new = log_prob_fn()
            except ValueError as error:  # a validating distribution refusing this trial's parameters
                if "found invalid values" not in str(error):
                    raise
                new = torch.full_like(old, float("nan"))
            log_ratio = new - old
            kl = (torch.expm1(log_ratio) - log_ratio).mean().item()
            if target_kl / 2 <= kl <= 1.5 * target_kl or (kl < target_kl / 2 and eta == eta_max):
                kept = True
                return eta
            if kl < target_kl / 2:
                too_short = eta
            else:
                too_long = eta
            # KL ~ eta^2 at small eta: rescale by that, 10x at most (NaN: / 10); else bisect the bracket
            factor = 0.1
            if kl < float("inf"):
                factor = min(max((target_kl / max(kl, 1e-30)) ** 0.5, 0.1), 10.0)
            eta = min(eta * factor, eta_max)
            if not too_short < eta < too_long:
                eta = (too_short * too_long) ** 0.5
    finally:
        if not kept:
            for (p, _), p0 in zip(moved, start):
                p.copy_(p0)
    return 0.0


def recompute_log_probs(actor: nn.Module, batch: dict):
    """train()'s log_prob_fn for kl_step_: the batch's log pi(a|s) from the current parameters."""

    def batch_log_probs():
        return actor(batch["obs"]).log_prob(batch["actions"])

    return batch_log_probs


# ---- acting without torch.distributions: 60 us an action faster ----------------------------------
def policy_output(actor: Actor, obs: torch.Tensor) -> torch.Tensor:
    """The actor's logits or action means, as forward() computes them, without the module calls."""
    *hidden, last = actor.linears
    h = obs
    for linear in hidden:
        h = torch.tanh(nn.functional.linear(h, linear.weight, linear.bias))
    return nn.functional.linear(h, last.weight, last.bias)


@torch.inference_mode()
def act(actor: Actor, obs: torch.Tensor) -> torch.Tensor:
    """a ~ pi(.|s) per row: bitwise what actor(obs).sample() draws, the RNG left in the same state."""
    out = policy_output(actor, obs)
    if actor.discrete:
        # as Categorical(logits=out).sample(): it subtracts logsumexp, then takes the softmax
        probs = torch.softmax(out - out.logsumexp(-1, keepdim=True), -1)
        return torch.multinomial(probs, 1, True).squeeze(-1)
    return out + torch.randn_like(out) * torch.exp(actor.log_std)  # as Normal.sample: mean + noise * std


def tensor(x: np.ndarray, device) -> torch.Tensor:
    return torch.from_numpy(x.astype(np.float32)).to(device)  # (twice as fast as torch.as_tensor for one row)


# ---- normalization (--norm-obs, --norm-reward), and NaN / Inf anywhere: exit 3 -------------------
class Normalizer:
    """--norm-obs, --norm-reward as CleanRL's gym wrappers, the statistics updated once per rollout."""

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


class Diverged(Exception):
    """NaN or Inf in an observation or after an update."""


def finite_state(value_loss: float, actor, critic, normalizer: Normalizer, obs, rewards: np.ndarray) -> bool:
    """No NaN/Inf in the critic's loss, the networks, their outputs, the statistics or the rewards."""
    arrays = [normalizer.obs_rms.mean, normalizer.obs_rms.var, normalizer.ret_rms.var, rewards]
    tensors = list(actor.parameters()) + list(critic.parameters())
    with torch.no_grad():
        tensors.append(policy_output(actor, obs))
    finite = all(torch.isfinite(x).all() for x in tensors) and all(np.isfinite(x).all() for x in arrays)
    return bool(np.isfinite(value_loss) and finite)


# ---- signals (the first ends the run after its update, a second at once) and the checkpoint ------
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopNow(BaseException):  # not an Exception: no `except Exception` on its way catches it
    """A signal before the loop, or a second one in it: stop at once (args[0]: the first signal)."""


class StopRequest:
    """Ctrl-C and SIGTERM until release() gives back the handlers it found: the first signal's
    code wins; the stop_now_at-th signal (the 1st before the loop, 2nd in it, 0: none) raises StopNow."""

    def __init__(self):
        self.signal = 0
        self.count = 0
        self.stop_now_at = 1
        self.found = {}
        for signum in STOP_SIGNALS:
            self.found[signum] = signal.signal(signum, self.handle)

    def release(self) -> None:
        for signum, handler in self.found.items():
            signal.signal(signum, handler)

    def handle(self, signum, frame):
        if not self.signal:
            self.signal = signum
        self.count += 1
        if self.count == self.stop_now_at:
            raise StopNow(self.signal)


def checkpoint_state(args: Args, global_step: int, update: int, parts: dict) -> dict:
    """What checkpoint.pt holds, copied: flags, counters, each part's state_dict() (weights_only loads it)."""
    state = {"args": asdict(args), "global_step": global_step, "update": update}
    for name, part in parts.items():
        state[name] = part.state_dict()
    return copy.deepcopy(state)


def save_checkpoint(state: dict, path: str) -> bool:
    """Written to a temporary file, then renamed (never cut off); a failure (a full disk): one line, False."""
    try:
        torch.save(state, path + ".tmp")
        os.replace(path + ".tmp", path)
        return True
    except (OSError, RuntimeError) as error:  # torch.save's writer raises RuntimeError
        print(f"error: could not write {path}: {str(error).splitlines()[0]}", file=sys.stderr)
        if os.path.exists(path + ".tmp"):
            os.remove(path + ".tmp")
        return False


# ---- input checks (bad input: one line, exit 2), the run directory, environments and video -------
class ConfigError(Exception):
    """Bad input: one line on stderr and exit code 2, before anything is written."""


def run_name(args: Args) -> str:
    """{env_id}__{exp_name}__{seed}__{unix time} ('/' in a namespaced id becomes '-')."""
    return f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}".replace("/", "-")


def create_run_dir(args: Args) -> str:
    """runs/<run_name>, made by this run alone: one started in the same second gets -2, -3, ..."""
    name = run_name(args)
    if len(name.encode()) + len("-999") > 255:  # the longest name ext4, APFS and NTFS take
        raise ConfigError(f"--exp-name: no room left for a -999 suffix ({len(args.exp_name)} chars)")
    base = os.path.join("runs", name)
    os.makedirs("runs", exist_ok=True)
    for k in range(1, 1000):
        path = base if k == 1 else f"{base}-{k}"
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"999 runs named {os.path.basename(base)} already")


POSITIVE = ("learning_rate", "damping", "critic_learning_rate", "total_timesteps", "num_envs", "num_steps")


def check_args(args: Args) -> None:
    for name in POSITIVE:
        value = getattr(args, name)
        # NaN fails too; float32 must hold each, and 10 alpha (Adam's first step: alpha / (1 - beta1))
        if not 0 < value <= FLOAT32_MAX / 10:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} must be a number in (0, {FLOAT32_MAX / 10:.3g}], got {value!r}")
    if not 0 <= args.gamma <= 1 or not 0 <= args.gae_lambda <= 1:
        raise ConfigError(f"--gamma, --gae-lambda must be in [0, 1], got {args.gamma!r}, {args.gae_lambda!r}")
    if not 0 <= args.target_kl < float("inf"):
        raise ConfigError(f"--target-kl must be a finite number >= 0, got {args.target_kl!r}")
    if args.target_kl > 0 and (args.optimizer != "smac" or args.fisher != "batch-mean"):
        raise ConfigError("--target-kl sets batch-mean SMAC's step: use --optimizer smac --fisher batch-mean")
    if not 0 <= args.seed < 2**32:
        raise ConfigError(f"--seed must be in [0, 2**32), got {args.seed!r}")
    if len(args.hidden_sizes) == 0 or min(args.hidden_sizes) <= 0:
        raise ConfigError(f"--hidden-sizes must be one or more positive widths, got {args.hidden_sizes!r}")
    if not args.exp_name or "/" in args.exp_name or args.exp_name.startswith("."):
        raise ConfigError(f"--exp-name must be a plain name (no '/', no leading '.'), got {args.exp_name!r}")
    if len(run_name(args).encode()) > 255:  # the longest file name of ext4, APFS and NTFS
        raise ConfigError(f"--exp-name: a directory name over 255 bytes ({len(args.exp_name)} chars)")
    if args.total_timesteps < args.num_steps * args.num_envs:
        raise ConfigError("--total-timesteps must be at least one rollout (--num-steps x --num-envs)")
    if args.norm_adv and args.num_steps * args.num_envs < 2:
        raise ConfigError("--norm-adv needs at least 2 transitions per rollout (--num-steps x --num-envs)")


def make_env(args: Args, run_dir: str, i: int) -> gym.Env:
    """Environment i, a plain gymnasium one; with --capture-video the first records videos."""
    if not args.capture_video or i > 0:
        return gym.make(args.env_id, disable_env_checker=True)
    env = gym.make(args.env_id, disable_env_checker=True, render_mode="rgb_array")
    return gym.wrappers.RecordVideo(env, os.path.join(run_dir, "videos"), disable_logger=True)


def set_render_backend() -> None:
    """--capture-video: MUJOCO_GL, glfw with a display, else EGL, before mujoco's import (no EGL:
    ConfigError). Call it before the first environment."""
    os.environ.setdefault("MUJOCO_GL", "glfw" if os.environ.get("DISPLAY") else "egl")
    if os.environ["MUJOCO_GL"] != "egl" or "mujoco" in sys.modules:
        return
    try:
        import mujoco  # noqa: F401
    except ImportError:  # no mujoco here: nothing renders with it
        return
    except Exception as error:  # PyOpenGL without an EGL library: AttributeError on 'NoneType'
        raise ConfigError(
            f"--capture-video: MuJoCo cannot load EGL here ({type(error).__name__}: {error}); set "
            "MUJOCO_GL=osmesa (or glfw with a display), or install EGL's libraries (libEGL)"
        ) from None


def check_env(env_id: str, capture_video: bool = False) -> tuple[gym.Space, gym.Space]:
    """The (observation, action) spaces, or a ConfigError; --capture-video: one frame rendered."""
    try:
        if capture_video:
            import moviepy  # noqa: F401  (RecordVideo writes with it)

            env = gym.make(env_id, render_mode="rgb_array")
            env.reset(seed=0)
            if env.render() is None:
                raise RuntimeError("render() gave no frame")
        else:
            env = gym.make(env_id, disable_env_checker=True)
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
    box = isinstance(act_space, gym.spaces.Box) and len(act_space.shape) == 1 and act_space.shape[0] > 0
    if not flat or not (box or isinstance(act_space, gym.spaces.Discrete)):
        raise ConfigError(
            f"--env-id {env_id!r}: spaces {obs_space} -> {act_space} are unsupported (need non-empty "
            f"1-D Box observations and Discrete or non-empty 1-D Box actions)"
        )
    return obs_space, act_space


# ---- logging: TensorBoard, W&B, SMAC's diagnostics -----------------------------------------------
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
    """How far SMAC's step departs from SGD with step eta / lambda: norms, cos(g, step), the step along
    l_bar and across it. diag: {"g", "step"} and "ell" (batch-mean) or "ell_sq_mean" (per-sample)."""
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


def log_update(writer: SummaryWriter, actor: Actor, batch: dict, value_loss: float, diagnostics: dict, step):
    """Critic loss, mean log pi of the taken actions (the paper's diagnostic), entropy, SMAC's."""
    with torch.no_grad():
        policy = actor(batch["obs"])
        writer.add_scalar("losses/mean_logprob", policy.log_prob(batch["actions"]).mean().item(), step)
        writer.add_scalar("losses/entropy", policy.entropy().mean().item(), step)
    writer.add_scalar("losses/value_loss", value_loss, step)
    for key, value in step_diagnostics(diagnostics).items():
        writer.add_scalar(f"losses/{key}", value, step)
    if "kl_eta" in diagnostics:
        writer.add_scalar("losses/kl_eta", diagnostics["kl_eta"], step)


def main(argv=None) -> int:
    """The exit code (train()'s, 2 for bad input); the signal handlers it found are back on every return."""
    stop = StopRequest()  # a signal before training starts: one line, exit 130 / 143 (train() has its own)
    try:
        args = tyro.cli(Args, args=argv)  # a flag tyro cannot parse: its message, exit code 2
        torch.set_num_threads(1)  # fastest for these small networks, and deterministic
        # here, before any EGL context (--capture-video): CUDA torch imports triton, which crashes after one
        torch.use_deterministic_algorithms(True, warn_only=True)
        check_args(args)
        if args.capture_video:
            set_render_backend()
        check_env(args.env_id, args.capture_video)
        if args.track:
            import wandb

            # without a login W&B would prompt; offline mode needs none
            offline = os.environ.get("WANDB_MODE", "").lower() in ("offline", "disabled", "dryrun")
            if not offline and not wandb.login(prompt=False, verify=False):
                raise ConfigError("--track: no W&B login here; run `wandb login` or set WANDB_MODE=offline")
        return train(args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except StopNow as stopped:
        print(f"stopped by {signal.Signals(stopped.args[0]).name} before training started", file=sys.stderr)
        return 128 + stopped.args[0]
    finally:
        stop.release()


if __name__ == "__main__":
    # Ignored outside main(), so that none changes its exit code. Python's shutdown gives the default
    # action back to handled signals: these at-exit callbacks, registered first, run last and ignore them
    for signum in STOP_SIGNALS:
        atexit.register(signal.signal, signum, signal.SIG_IGN)
        signal.signal(signum, signal.SIG_IGN)
    exit_code = main()

    def exit_at_once(signum, frame):  # during the at-exit callbacks (W&B's upload)
        os._exit(exit_code)

    for signum in STOP_SIGNALS:
        signal.signal(signum, exit_at_once)
    sys.exit(exit_code)
