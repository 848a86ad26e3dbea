"""The lab's trainer: the paper's other algorithms, SMAC's ablations, and run management for long and many runs.

    python -m benchmark.trainer --env-id Hopper-v4 --optimizer cg --learning-rate 1e-2      # AC-CG, paper's Hopper row
    python -m benchmark.trainer --env-id Hopper-v4 --optimizer kfac --learning-rate 1e-3    # AC-KFAC
    python -m benchmark.trainer --env-id Hopper-v4 --fisher per-sample-parallel             # an ablation
    python -m benchmark.trainer --resume runs/<run dir> --total-timesteps 2000000           # continue a run
    python -m benchmark.trainer --eval-checkpoint runs/<run dir> --eval-episodes 10         # evaluate
    python -m benchmark.trainer --plot runs/<run A> runs/<run B>                            # one PNG

smac_a2c.py is the reference (SMAC, AC-SGD, AC-Adam and its own plain loop). This module is the lab's trainer: its
Args extend the reference's (LabArgs), its loop (train_loop) is built from
the reference's algorithm functions (the SMAC math, GAE, normalization) and the run management of
benchmark/runlayer.py (locked run directories, signals, rollback, checkpoints with a hash, CSV logs, crash path), and
it acts with a numpy copy of the actor (RolloutPolicy). Its steps: SMAC with every ablation mode and the one-backward
fast path; AC-SGD / AC-Adam with entropy bonus, clipping and --loss-reduction; AC-CG; AC-KFAC; minibatches / epochs;
--video-every, --no-bootstrap-truncation; --activation, --log-std-init, --critic-updates, --max-grad-norm; --resume,
--eval-checkpoint, --plot.
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import csv
import functools
import math
import os
import random
import signal
import sys
import time
import warnings
from dataclasses import dataclass, fields
from typing import Literal, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import smac_a2c  # noqa: E402
from benchmark import algorithms, plotting, provenance, runlayer  # noqa: E402
from benchmark.runlayer import (  # noqa: E402
    EXIT_CODES,
    FLOAT32_MAX,
    ConfigError,
    RunCrashed,
    RunLock,
    RunLog,
    StopSignals,
    create_run_dir,
    record_crash,
    restore,
    run_dir_locked,  # noqa: F401  (sweep.py's)
    save_checkpoint,
    snapshot,
)
from smac_a2c import (  # noqa: E402
    apply_step_,
    compute_gae,
    layer_init,
    mean_score_and_gradient,
    sherman_morrison_direction,
    smac_direction,  # noqa: F401  (re-exported)
    step_diagnostics,  # noqa: F401  (re-exported)
    tensor,
    trainable_parameters,
)
from smac_kl import kl_step_  # noqa: E402

warnings.filterwarnings("ignore", message=".*is out of date.*")  # check_env_id explains it once


@dataclass
class LabArgs(smac_a2c.Args):
    target_kl: float = 0.0
    """ours: > 0 sets batch-mean SMAC's step by the KL it causes (smac_kl.kl_step_; TRPO's 0.01); 0: the fixed eta"""
    tensorboard: bool = True
    """write TensorBoard scalars into the run directory"""
    checkpoint_every: int = 0
    """also save RUN/checkpoint.pt every N updates (always saved at the end, on signals, NaN and crashes)"""
    torch_threads: int = 1
    """torch CPU threads; 1 is fastest for these small networks and keeps runs deterministic"""
    runs_dir: str = "runs"
    """parent directory of run directories runs/{env_id}__{exp_name}__{seed}__{unix_time}"""
    resume: Optional[str] = None
    """checkpoint file (or run directory) to continue as it was started: its saved flags are used; only --total-timesteps, --checkpoint-every, --tensorboard, --torch-threads, --cuda, --capture-video, --video-every and the --track flags may be given anew (any other flag with a different value is refused)"""
    eval_checkpoint: Optional[str] = None
    """evaluate this checkpoint with the deterministic policy and exit (no training)"""
    eval_episodes: int = 10
    """number of episodes for --eval-checkpoint"""
    eval_max_steps: int = 27_000
    """--eval-checkpoint: end an episode after this many steps (an environment without a time limit; 27,000 as the Atari convention)"""
    video_every: int = 0
    """with --capture-video: record every N-th episode (0: gymnasium's default schedule, as CleanRL: episodes 0, 1, 8, 27, ..., k^3 up to 1000, then every 1000th)"""
    plot: tuple[str, ...] = ()
    """plot these run directories into one PNG and exit: returns (raw and the paper's 100 bins + EWM 0.1) and, for SMAC runs, |l_bar|^2/lambda and cos(g, step) over training"""
    plot_out: Optional[str] = None
    """PNG path for --plot (default: RUN/plot.png for one run, runs_dir/plot_<unix time>.png for several)"""
    optimizer: Literal[algorithms.optimizers()] = "smac"
    """actor step, one per algorithm in benchmark/algorithms.py: smac (Sherman-Morrison natural gradient), sgd (AC-SGD), adam (AC-Adam), cg (AC-CG), kfac (AC-KFAC), or a plugin's"""
    fisher: Literal["batch-mean", "per-sample", "per-sample-parallel"] = "batch-mean"
    """smac only: batch-mean (paper's Practical Method, one step per rollout), per-sample (Algorithm 1, one step per transition) or per-sample-parallel (Algorithm 1's per-sample steps l_i A_i / (lambda + |l_i|^2) all taken at the same theta and SUMMED, not averaged: equal to Algorithm 1's total displacement to first order in eta, so --learning-rate means the same as with per-sample)"""
    prev_ef_beta: float = 0.0
    """smac batch-mean only: previous-EF mixing F_k = beta F_{k-1} + (1-beta) l_k l_k^T (paper's ablation: 0.5), kept as lambda_k I + sum of the last --prev-ef-rank terms and solved by Woodbury in O(d r + r^3); 0 disables"""
    prev_ef_rank: int = 8
    """smac with --prev-ef-beta > 0: keep the r most recent batch-mean scores l_j (weights (1-beta) beta^(k-j); terms with w_j |l_j|^2 <= 1e-12 lambda_k are dropped earlier)"""
    prev_ef_damping: Literal["fixed", "decay"] = "fixed"
    """smac with --prev-ef-beta > 0: fixed (lambda_k = lambda: the recursion mixes the undamped EF, F_0 = 0, damping added at use) or decay (recursion on the damped matrix from F_0 = lambda I: lambda_k = beta^k lambda, floored at 1e-30)"""
    step_normalization: bool = False
    """smac batch-mean / per-sample-parallel: rescale the SMAC direction to the norm of the (clipped) policy gradient g, so eta alone sets the step size and lambda only its shape"""
    critic_updates: int = 1
    """full-batch Adam steps on the critic per rollout (paper: one)"""
    ent_coef: float = 0.0
    """entropy bonus coefficient added to the actor objective (paper: none)"""
    max_grad_norm: float = 0.0
    """clip the norm of the policy gradient g (before preconditioning) and of the critic gradient; 0 disables"""
    bootstrap_truncation: bool = True
    """on time-limit truncation bootstrap from V(final observation); off treats truncation as termination"""
    log_std_init: float = 0.0
    """initial value of the state-independent Gaussian log-std (Box actions)"""
    activation: Literal["tanh", "relu"] = "tanh"
    """hidden-layer activation of the actor and the critic (CleanRL: tanh)"""
    num_minibatches: int = 1
    """actor steps per pass over the rollout: its T*N transitions are split into this many minibatches, one actor step on each (CleanRL/PPO's --num-minibatches). 1 (paper-literal): one full-batch step per rollout; T*N with --no-shuffle-minibatches: one step per transition in rollout order, Algorithm 1's loop, for every optimizer"""
    update_epochs: int = 1
    """passes over the rollout per update, each split into --num-minibatches (CleanRL/PPO's --update-epochs; paper-literal: 1)"""
    shuffle_minibatches: bool = False
    """reshuffle the transitions before splitting them into minibatches in every pass (CleanRL's PPO does); off: minibatches in rollout order"""
    loss_reduction: Literal["mean", "sum"] = "mean"
    """how per-sample terms combine over a (mini)batch of B: mean (paper's Practical Method: l_bar and g are means) or sum (B l_bar and B g: SGD's step grows B-fold, SMAC's rank-1 term B^2-fold; Adam is unchanged; the curvature of AC-CG and AC-KFAC stays a mean)"""
    cg_iters: int = 10
    """cg only: at most this many conjugate-gradient iterations (Fisher-vector products) to solve (F + delta I) x = g"""
    cg_damping: float = 0.1
    """cg only: damping delta added to the KL-Hessian Fisher F in the CG solve"""
    cg_max_kl: float = 0.0
    """cg only: if > 0, rescale the update to this KL radius (TRPO's full step, no line search; --learning-rate is then unused); 0: theta += eta x"""
    kfac_decay: float = 0.99
    """kfac only: decay of the exponential moving averages of the Kronecker factors A = E[a a^T], G = E[g g^T]"""
    kfac_damping: float = 1e-3
    """kfac only: damping lambda > 0 in (A (x) G + lambda I)^-1 (ACKTR's convention, applied in the factors' eigenbases)"""
    kfac_update_freq: int = 1
    """kfac only: recompute the factors' eigendecompositions every N actor updates (statistics are updated every update)"""
    kfac_kl_clip: float = 1e-3
    """kfac only: ACKTR's KL clip, step scaled by min(1, sqrt(kl_clip / (eta^2 g^T step))); 0 disables it (paper's wording is ambiguous: docs/baselines.md)"""


Args = LabArgs  # the name the harness and the tests use


POSITIVE = ("learning_rate", "damping", "critic_learning_rate", "total_timesteps", "num_envs", "num_steps")
SUFFIX_ROOM = len("-9999")  # runlayer.create_run_dir's suffix for runs started in the same second


def check_algorithm_args(args: LabArgs) -> None:
    """The ranges of the flags the lab shares with the reference (smac_a2c.Args) and --target-kl, also for an
    evaluation's stored flags: a ConfigError naming the first flag that fails."""
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
    # the longest file name of ext4, APFS and NTFS, with room for a -9999 suffix
    if len(runlayer.run_name(args).encode()) + SUFFIX_ROOM > 255:
        raise ConfigError(
            f"--exp-name: a run directory name over {255 - SUFFIX_ROOM} bytes, with no room for a -9999 "
            f"suffix ({len(args.exp_name)} chars)"
        )
    if args.total_timesteps < args.num_steps * args.num_envs:
        raise ConfigError("--total-timesteps must be at least one rollout (--num-steps x --num-envs)")
    if args.norm_adv and args.num_steps * args.num_envs < 2:
        raise ConfigError("--norm-adv needs at least 2 transitions per rollout (--num-steps x --num-envs)")


def check_args(args: LabArgs, training: bool = True) -> None:
    """The shared flags' ranges (for a training run: its budget, rates, W&B), then the lab's flags (in this order:
    the first failing check is reported)."""
    if training:
        check_algorithm_args(args)
        # finite in float32 too; a learning rate also in Adam's first step, 10x the rate
        limits = {
            "learning_rate": FLOAT32_MAX / 10,
            "damping": FLOAT32_MAX,
            "critic_learning_rate": FLOAT32_MAX / 10,
        }
        for name, limit in limits.items():
            if not getattr(args, name) <= limit:
                raise ConfigError(
                    f"--{name.replace('_', '-')} must be a number in (0, {limit:.3g}], got {getattr(args, name)!r}"
                )
        if args.checkpoint_every < 0:
            raise ConfigError(f"--checkpoint-every must be >= 0, got {args.checkpoint_every!r}")
        if args.track:  # a W&B login or offline mode, never a prompt
            runlayer.check_wandb_login()

    def require(flags: str, ok, what: str) -> None:
        for flag in flags.split():
            value = getattr(args, flag[2:].replace("-", "_"))
            if not ok(value):
                raise ConfigError(f"{flag} must be {what}, got {value}")

    def finite_positive(v) -> bool:
        return v > 0 and math.isfinite(v)

    def finite_nonnegative(v) -> bool:
        return v >= 0 and math.isfinite(v)

    require(
        "--critic-updates --eval-episodes --eval-max-steps --torch-threads",
        finite_positive,
        "a finite number > 0",
    )
    require("--ent-coef --max-grad-norm", finite_nonnegative, "a finite number >= 0")
    require("--log-std-init", math.isfinite, "a finite number")
    require("--video-every", lambda v: v >= 0, ">= 0")
    require("--num-minibatches --update-epochs", lambda v: v >= 1, ">= 1")
    if args.num_minibatches > args.num_steps * args.num_envs:
        raise ConfigError(
            f"--num-minibatches {args.num_minibatches} exceeds the rollout's "
            f"{args.num_steps * args.num_envs} transitions (--num-steps x --num-envs)"
        )
    if (
        args.optimizer == "smac"
        and args.fisher != "batch-mean"
        and (args.num_minibatches > 1 or args.update_epochs > 1)
    ):
        raise ConfigError(
            f"--num-minibatches / --update-epochs > 1 need --fisher batch-mean, got --fisher {args.fisher}"
        )
    # baselines
    require("--cg-iters --kfac-damping --kfac-update-freq", finite_positive, "a finite number > 0")
    require("--cg-damping --cg-max-kl --kfac-kl-clip", finite_nonnegative, "a finite number >= 0")
    require("--kfac-decay", lambda v: 0.0 <= v <= 1.0, "in [0, 1]")
    require("--prev-ef-beta", lambda v: 0.0 <= v < 1.0, "in [0, 1)")  # SMAC's ablation modes
    require("--prev-ef-rank", lambda v: v >= 1, ">= 1")
    if args.optimizer == "smac" and args.prev_ef_beta > 0 and args.fisher != "batch-mean":
        raise ConfigError(f"--prev-ef-beta > 0 needs --fisher batch-mean, got --fisher {args.fisher}")
    if args.optimizer == "smac" and args.step_normalization and args.fisher == "per-sample":
        raise ConfigError(
            "--step-normalization with --fisher per-sample would turn every step into "
            "the per-sample SGD step l A; use batch-mean or per-sample-parallel"
        )


# --- Networks: the actor and critic MLPs, and the actor's numpy copy that acts in the rollout ---
def numpy_relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


ACTIVATIONS = {"tanh": (torch.tanh, np.tanh), "relu": (torch.relu, numpy_relu)}  # (torch, numpy)


class Actor(nn.Module):
    """The lab's actor (the one every lab log was made with; tools/logs_snapshot.py checks them bitwise): a
    hand-written Gaussian whose log_prob_from_output takes a per-sample log_std (the fast paths), --activation and
    --log-std-init."""

    # pi_theta(a|s) = Categorical(logits=MLP(s)) or Normal(MLP(s), exp(log_std)); theta: MLP and log_std

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
        with np.errstate(over="ignore"):  # an infinite std is a diverged actor: the loop says so in one line
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


class Normalizer(smac_a2c.Normalizer):
    """The reference's normalization, loadable from a checkpoint (resume, evaluation)."""

    def load_state_dict(self, state: dict) -> None:
        for rms, saved in ((self.obs_rms, state["obs_rms"]), (self.ret_rms, state["ret_rms"])):
            rms.mean = np.asarray(saved["mean"])
            rms.var = np.asarray(saved["var"])
            rms.count = saved["count"]
        self.discounted_return = np.asarray(state["discounted_return"])


# --- Environments, networks and the critic step with the lab's flags ---
class TruncationAsTermination(gym.Wrapper):
    """--no-bootstrap-truncation: a time-limit truncation is reported as a termination (no bootstrap)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or truncated, False, info


def make_env(
    env_id: str,
    video_dir: Optional[str] = None,
    video_every: int = 0,
    bootstrap_truncation: bool = True,
    video_prefix: str = "rl-video",
):
    """video_prefix: RecordVideo's file names; a resumed run gets its own (its episode counter restarts at 0,
    and the same names would overwrite the earlier videos)."""
    env = gym.make(env_id, disable_env_checker=True, **({"render_mode": "rgb_array"} if video_dir else {}))
    if video_dir:
        trigger = (lambda episode: episode % video_every == 0) if video_every > 0 else None
        env = gym.wrappers.RecordVideo(
            env, video_dir, episode_trigger=trigger, name_prefix=video_prefix, disable_logger=True
        )
    return env if bootstrap_truncation else TruncationAsTermination(env)


def lab_networks(args: LabArgs, obs_dim: int, act_dim: int, discrete: bool):
    return make_networks(args, obs_dim, act_dim, discrete, args.activation, args.log_std_init)


def action_dims(act_space: gym.Space) -> tuple[bool, int]:
    """(discrete, act_dim): a Discrete space's n actions, or a Box's size."""
    discrete = isinstance(act_space, gym.spaces.Discrete)
    return discrete, act_space.n if discrete else act_space.shape[0]


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


def check_video(env_id: str) -> None:
    """--capture-video: moviepy (RecordVideo writes with it) and one frame rendered, or a ConfigError."""
    try:
        import moviepy  # noqa: F401

        env = gym.make(env_id, render_mode="rgb_array")
        env.reset(seed=0)
        if env.render() is None:
            raise RuntimeError("render() gave no frame")
        env.close()
    except Exception as e:
        what = f"{type(e).__name__}: {str(e)[:150]}".replace("\n", " ")
        raise ConfigError(
            f"--env-id {env_id!r} cannot be rendered here for --capture-video ({what})"
        ) from None


def check_env_id(env_id: str) -> tuple[gym.Space, gym.Space]:
    """(observation_space, action_space), or a ConfigError with a hint; one note for an out-of-date id (Hopper-v4)."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            env = gym.make(env_id, disable_env_checker=True)
        if any("out of date" in str(w.message) for w in caught):
            print(
                f"note: {env_id} is out of date for gymnasium; the MuJoCo -v4 ids are this project's default "
                f"because they are the paper's era, and the -v5 ids work too (e.g. --env-id "
                f"{env_id.rsplit('-v', 1)[0]}-v5)",
                file=sys.stderr,
            )
    except gym.error.DependencyNotInstalled as e:  # e.g. CarRacing without Box2D: a package missing
        raise ConfigError(
            f"--env-id {env_id!r} needs a package that is not installed: {str(e).splitlines()[0]}"
        ) from None
    except gym.error.Error as e:
        raise ConfigError(
            f"--env-id {env_id!r} is not a registered gymnasium environment ({type(e).__name__}: {e})"
        ) from None
    except ImportError as e:  # e.g. Pusher-v4 needs mujoco < 3
        hint = " Use Pusher-v5: Pusher-v4 needs mujoco < 3." if env_id.startswith("Pusher-v4") else ""
        raise ConfigError(
            f"--env-id {env_id!r} cannot be built with the installed packages ({e}).{hint}"
        ) from None
    except Exception as e:
        # the environment's constructor or module raised (TypeError, KeyError, OSError, SyntaxError, ...)
        raise ConfigError(
            f"--env-id {env_id!r}: its constructor raised {type(e).__name__}: "
            f"{str(e).splitlines()[0][:200] if str(e) else ''}"
        ) from None
    obs_space, act_space = env.observation_space, env.action_space
    env.close()
    if not (isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1 and obs_space.shape[0] > 0):
        raise ConfigError(
            f"--env-id {env_id!r}: observation space {obs_space} is unsupported (need a non-empty 1-D Box)"
        )
    if not (
        isinstance(act_space, gym.spaces.Discrete)
        or (isinstance(act_space, gym.spaces.Box) and len(act_space.shape) == 1 and act_space.shape[0] > 0)
    ):
        raise ConfigError(
            f"--env-id {env_id!r}: action space {act_space} is unsupported (need Discrete or a non-empty 1-D Box)"
        )
    return obs_space, act_space


def flat_grad(output: torch.Tensor, params, retain_graph=False) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in torch.autograd.grad(output, params, retain_graph=retain_graph)])


# --- Actor steps. One signature: step(actor, batch, args, state) -> diagnostics ---
# an actor step's state as a checkpoint holds it (plain tensors and containers)
actor_state_dict = copy.deepcopy


def load_actor_state(saved: dict, actor: Actor, args: LabArgs) -> dict:
    return copy.deepcopy(saved)


def smac_direction_batched(params, log_probs: torch.Tensor, advantages: torch.Tensor, damping: float):
    """smac_a2c.smac_direction from ONE vmapped vector-Jacobian product (same numbers; no faster: costs.py)."""
    params, B = trainable_parameters(params), log_probs.shape[0]
    weights = torch.stack([torch.full_like(log_probs, 1.0 / B), advantages.detach().to(log_probs.dtype) / B])
    grads = torch.autograd.grad(
        log_probs, params, grad_outputs=weights, is_grads_batched=True, allow_unused=True
    )
    flat = torch.cat(
        [
            torch.zeros(2, p.numel(), dtype=p.dtype, device=p.device) if gr is None else gr.reshape(2, -1)
            for p, gr in zip(params, grads)
        ],
        dim=1,
    )
    return sherman_morrison_direction(flat[1], flat[0], damping)


def clip_norm(v: torch.Tensor, max_norm: float) -> torch.Tensor:
    return v if max_norm <= 0 else v * torch.clamp(max_norm / (v.norm() + 1e-12), max=1.0)


def actor_layer_io(actor: Actor, obs: torch.Tensor) -> tuple[list, list, torch.Tensor]:
    """The actor's only forward (Actor.forward calls it): (xs, zs, out), each Linear layer's input x and
    pre-activation z = W x + b, and the network output (logits or means)."""
    act = ACTIVATIONS[actor.activation][0]
    xs, zs, h = [], [], obs
    for i, linear in enumerate(actor.linears):
        xs.append(h)
        zs.append(linear(h))
        h = act(zs[-1]) if i < len(actor.linears) - 1 else zs[-1]
    return xs, zs, h


def per_sample_score_factors(actor: Actor, obs: torch.Tensor, actions: torch.Tensor):
    """One forward and ONE backward to the pre-activations: per layer inputs x_i, delta_i = d log pi_i / d z_i and
    d log pi_i / d log_std (None if Categorical); sample i's score is l_i = [delta_i x_i^T, delta_i] per layer."""
    xs, zs, h = actor_layer_io(actor, obs)
    if actor.discrete:
        return xs, list(torch.autograd.grad(actor.log_prob_from_output(h, actions).sum(), zs)), None
    log_std = actor.log_std.expand_as(h)  # per-sample view: its gradient comes out per sample
    grads = torch.autograd.grad(actor.log_prob_from_output(h, actions, log_std).sum(), zs + [log_std])
    return xs, list(grads[:-1]), grads[-1]


def mean_score_and_policy_gradient(
    actor: Actor, obs: torch.Tensor, actions: torch.Tensor, advantages: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """l_bar = grad mean_i log pi(a_i|s_i), g = grad mean_i log pi(a_i|s_i) A_i from ONE backward: per layer
    z = W x + b, grad_W sum_i w_i log pi_i = sum_i w_i delta_i x_i^T (delta_i = d log pi_i / d z_i, w_i = 1/B, A_i/B)"""
    xs, deltas, dlog_std = per_sample_score_factors(actor, obs, actions)
    with torch.no_grad():
        # parts: parameter -> (its part of sum_i l_i, of sum_i A_i l_i)
        adv = advantages.unsqueeze(-1)
        parts = {}
        if dlog_std is not None:
            parts[actor.log_std] = (dlog_std.sum(0), (dlog_std * adv).sum(0))
        for linear, x, delta in zip(actor.linears, xs, deltas):
            weighted = delta * adv  # A_i delta_i
            # sum_i (A_i) delta_i x_i^T
            parts[linear.weight] = ((delta.T @ x).reshape(-1), (weighted.T @ x).reshape(-1))
            parts[linear.bias] = (delta.sum(0), weighted.sum(0))
        params = list(actor.parameters())  # the flat layout is read from the module, not assumed
        if len(parts) != len(params) or any(p not in parts for p in params):
            raise TypeError(
                "mean_score_and_policy_gradient: the actor has parameters outside its Linear layers "
                "and log_std; use mean_score_and_gradient (the generic path)"
            )
        return tuple(torch.cat([parts[p][k] for p in params]) / obs.shape[0] for k in (0, 1))


def smac_per_sample_step(actor: Actor, batch: dict, args: Args, params) -> dict:
    """Algorithm 1: for each sample in rollout order, at the current theta, l = grad log pi(a|s), g = l A,
    theta <- theta + eta (lambda I + l l^T)^-1 g."""
    obs, actions, adv = batch["obs"], batch["actions"], batch["advantages"]
    g_sum, step_sum, ell_sq, n = 0.0, 0.0, 0.0, obs.shape[0]
    for i in range(n):  # Algorithm 1: "for all samples k"
        ell = flat_grad(actor.log_prob(obs[i : i + 1], actions[i : i + 1]).sum(), params)
        g = clip_norm(ell * adv[i], args.max_grad_norm)  # g^k = grad log pi(a|s) A(s, a)
        step = sherman_morrison_direction(g, ell, args.damping)  # eq. (matrixfree) / eta
        apply_step_(params, step, args.learning_rate)
        g_sum, step_sum, ell_sq = g_sum + g, step_sum + step, ell_sq + torch.dot(ell, ell)
    return {"g": g_sum / n, "step": step_sum / n, "ell_sq_mean": ell_sq / n}


def smac_per_sample_parallel_step(actor: Actor, batch: dict, args: Args, params) -> dict:
    """Algorithm 1's per-sample steps, all at the same theta, summed (one backward, no per-sample loop):

        theta <- theta + eta * sum_i c_i l_i,   c_i = A_i s_i / (lambda + |l_i|^2)

    since (lambda I + l_i l_i^T)^-1 l_i A_i = l_i A_i / (lambda + |l_i|^2). The SUM, not the mean: Algorithm 1 moves
    theta by eta sum_i F_i^-1 g_i + O(eta^2), so the two agree to first order in eta at the same --learning-rate.
    s_i = min(1, max_grad_norm / |l_i A_i|) clips each g_i as per-sample does; no entropy bonus (as per-sample).
    Diagnostics, as per-sample: g = mean_i g_i, step = mean_i F_i^-1 g_i (theta moves by eta * B * step)."""
    if type(actor) is not Actor:
        raise TypeError(
            "--fisher per-sample-parallel needs the trainer's Actor MLP (per-layer score factors)"
        )
    obs, adv = batch["obs"], batch["advantages"]
    xs, deltas, dlog_std = per_sample_score_factors(actor, obs, batch["actions"])
    with torch.no_grad():
        sq, a = per_sample_score_sq_norms(xs, deltas, dlog_std), adv
        if args.max_grad_norm > 0:  # clip_norm of each g_i = A_i l_i, |g_i| = |A_i| |l_i|
            a = adv * torch.clamp(args.max_grad_norm / (adv.abs() * sq.sqrt() + 1e-12), max=1.0)
        g_sum, step_sum = weighted_score_sums(
            xs, deltas, dlog_std, torch.stack([a, a / (args.damping + sq)], 1)
        )
        if args.step_normalization:
            step_sum = normalize_step(step_sum, g_sum)
        apply_step_(params, step_sum, args.learning_rate)
        return {"g": g_sum / obs.shape[0], "step": step_sum / obs.shape[0], "ell_sq_mean": sq.mean()}


def smac_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """SMAC. batch-mean (Practical Method): F~ = lambda I + l_bar l_bar^T, one step per rollout (--prev-ef-beta > 0:
    F_k = lambda_k I + sum_j w_j l_bar_j l_bar_j^T instead, by Woodbury); per-sample (Algorithm 1) and
    per-sample-parallel: the two functions above. --step-normalization rescales the direction to |g|."""
    params = trainable_parameters(actor)
    obs, actions, adv = batch["obs"], batch["actions"], batch["advantages"]
    if args.fisher == "per-sample":
        return smac_per_sample_step(actor, batch, args, params)
    if args.fisher == "per-sample-parallel":
        return smac_per_sample_parallel_step(actor, batch, args, params)
    if type(actor) is Actor:  # the trainer's own MLP: one backward to the pre-activations (fast path)
        ell, g = mean_score_and_policy_gradient(actor, obs, actions, adv)
    else:  # any other network (a subclass may change the forward): the generic path of smac_direction
        ell, g = mean_score_and_gradient(params, actor.log_prob(obs, actions), adv)
    # a Gaussian's entropy depends on log_std alone: other gradients are zeros, not an error
    if args.ent_coef > 0:
        grads = torch.autograd.grad(
            actor.entropy(obs).mean(), params, allow_unused=True, materialize_grads=True
        )
        g = g + args.ent_coef * torch.cat([gr.reshape(-1) for gr in grads])
    if args.loss_reduction == "sum":  # sums over the batch instead of means: B l_bar, B g
        ell, g = ell * obs.shape[0], g * obs.shape[0]
    g = clip_norm(g, args.max_grad_norm)
    if args.prev_ef_beta > 0:  # previous-EF mixing: F_k^-1 g by Woodbury, O(d r + r^3)
        prev_ef_push_(state, ell, args.prev_ef_beta, args.prev_ef_rank, args.damping, args.prev_ef_damping)
        step = woodbury_direction(
            g, *(state[k] for k in ("prev_ef_U", "prev_ef_w", "prev_ef_damping", "prev_ef_gram"))
        )
    else:
        step = sherman_morrison_direction(g, ell, args.damping)  # F~^-1 g, Practical Method
    if args.step_normalization:
        step = normalize_step(step, g)
    if args.target_kl > 0:  # ours, not the paper's: eta from the KL the step causes (smac_kl.kl_step_)

        def batch_log_probs():
            return actor.log_prob(obs, actions)

        eta = kl_step_(params, step, batch_log_probs, args.target_kl)
        return {"g": g, "step": step * eta / args.learning_rate, "ell": ell, "kl_eta": eta}
    apply_step_(params, step, args.learning_rate)  # theta <- theta + eta F~^-1 g
    return {"g": g, "step": step, "ell": ell}


def actor_update(actor: Actor, batch: dict, args: Args, state: dict) -> list[dict]:
    """All actor steps of one update (a list of their diagnostics): --update-epochs passes, --num-minibatches each."""
    step = ACTOR_STEPS[args.optimizer]
    if args.num_minibatches == 1 and args.update_epochs == 1:
        return [step(actor, batch, args, state)]
    n, diags = batch["obs"].shape[0], []
    for _ in range(args.update_epochs):
        order = torch.randperm(n) if args.shuffle_minibatches else torch.arange(n)
        for idx in torch.tensor_split(order.to(batch["obs"].device), args.num_minibatches):
            diags.append(step(actor, {k: v[idx] for k, v in batch.items()}, args, state))
    return diags


def critic_step(critic: nn.Module, optimizer: torch.optim.Optimizer, obs, returns, args: Args) -> float:
    """L_critic = (1/T) sum_t (R_t - V_phi(s_t))^2, minimized with Adam (learning rate alpha)."""
    for _ in range(args.critic_updates):
        loss = (returns - critic(obs)).pow(2).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if args.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(critic.parameters(), args.max_grad_norm)
        optimizer.step()
    return loss.item()


# --- AC-SGD and AC-Adam with the lab's entropy bonus, clipping and --loss-reduction ---
def policy_objective(actor: Actor, batch: dict, args: Args, log_probs=None) -> torch.Tensor:
    """mean_i log pi(a_i|s_i) A_i + ent_coef * mean entropy (sums with --loss-reduction sum): its gradient is g."""
    log_probs = actor.log_prob(batch["obs"], batch["actions"]) if log_probs is None else log_probs
    reduce = torch.sum if args.loss_reduction == "sum" else torch.mean
    objective = reduce(log_probs * batch["advantages"])
    if args.ent_coef > 0:
        objective = objective + args.ent_coef * reduce(actor.entropy(batch["obs"]))
    return objective


def sgd_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-SGD: theta <- theta + eta g, g = grad mean_i log pi(a_i|s_i) A_i (+ entropy bonus)."""
    params = list(actor.parameters())
    g = clip_norm(flat_grad(policy_objective(actor, batch, args), params), args.max_grad_norm)
    apply_step_(params, g, args.learning_rate)
    return {"g": g, "step": g}


def adam_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-Adam: one Adam step (learning rate eta) ascending the same objective. state["adam"] holds the
    optimizer's state_dict (plain tensors, so checkpoints and rollbacks are deep copies)."""
    params = list(actor.parameters())
    optimizer = torch.optim.Adam(params, lr=args.learning_rate, maximize=True)
    if "adam" in state:
        optimizer.load_state_dict(state["adam"])
    g = clip_norm(flat_grad(policy_objective(actor, batch, args), params), args.max_grad_norm)
    before = torch.cat([p.detach().reshape(-1) for p in params])
    for p, g_part in zip(params, g.split([p.numel() for p in params])):
        p.grad = g_part.view_as(p).clone()
    optimizer.step()
    state["adam"] = optimizer.state_dict()
    return {
        "g": g,
        "step": (torch.cat([p.detach().reshape(-1) for p in params]) - before) / args.learning_rate,
    }


# --- The paper's natural-gradient baselines: AC-CG (TRPO's Fisher-vector products) and AC-KFAC (ACKTR's K-FAC) ---
def fisher_vector_product(actor: Actor, obs: torch.Tensor):
    """v -> F v = grad_theta (grad_theta KL . v) by double backward. KL = mean_s KL(pi_old(.|s) || pi_theta(.|s)),
    pi_old = pi_theta detached, is zero at theta_old; its Hessian there is F = mean_s E_{a~pi(.|s)}[l l^T] (TRPO)."""
    out = actor(obs)
    if actor.discrete:
        logp = torch.log_softmax(out, dim=-1)
        kl = (logp.detach().exp() * (logp.detach() - logp)).sum(-1).mean()
    else:
        log_std, mu_old, log_std_old = actor.log_std, out.detach(), actor.log_std.detach()
        # KL(N(mu_o, s_o^2) || N(mu, s^2)) = log s - log s_o + (s_o^2 + (mu_o - mu)^2) / (2 s^2) - 1/2, per action dim
        spread = (torch.exp(2 * log_std_old) + (mu_old - out).pow(2)) / (2 * torch.exp(2 * log_std))
        kl = (log_std - log_std_old - 0.5 + spread).sum(-1).mean()
    params = list(actor.parameters())
    grad_kl = torch.cat([g.reshape(-1) for g in torch.autograd.grad(kl, params, create_graph=True)])
    return lambda v: torch.cat(
        [
            h.reshape(-1)
            for h in torch.autograd.grad(
                torch.dot(grad_kl, v), params, retain_graph=True, materialize_grads=True
            )
        ]
    )


def conjugate_gradient(fvp, b: torch.Tensor, iters: int, residual_tol: float = 1e-10) -> torch.Tensor:
    """Solve M x = b for symmetric positive-definite M, given only v -> M v (CG as in TRPO's code), from x = 0."""
    x, r, p = torch.zeros_like(b), b.clone(), b.clone()  # residual r = b - M x, first search direction p = r
    rr = torch.dot(r, r)
    for _ in range(iters):
        if rr < residual_tol:
            break
        Mp = fvp(p)
        pMp = torch.dot(p, Mp)
        if not pMp > 0:  # no curvature along p (M singular there): keep the current x
            break
        alpha = rr / pMp  # minimizer of 1/2 x^T M x - b^T x along p
        x, r = x + alpha * p, r - alpha * Mp
        rr_new = torch.dot(r, r)
        p, rr = r + (rr_new / rr) * p, rr_new  # next direction, M-conjugate to the previous ones
    return x


def cg_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-CG: x ~= (F + delta I)^-1 g with --cg-iters CG iterations on Fisher-vector products; theta <- theta + eta x.
    --cg-max-kl kappa > 0: TRPO's full step (no line search) instead, beta = sqrt(2 kappa / x^T (F + delta I) x)."""
    params = list(actor.parameters())
    g = clip_norm(flat_grad(policy_objective(actor, batch, args), params), args.max_grad_norm)
    fvp = fisher_vector_product(actor, batch["obs"])

    def damped(v):
        return fvp(v) + args.cg_damping * v  # (F + delta I) v

    step = x = conjugate_gradient(damped, g, args.cg_iters)
    eta = args.learning_rate  # theta's change = eta x (updates.csv's eta)
    if args.cg_max_kl > 0:  # eta * step = beta x
        scale = torch.sqrt(2 * args.cg_max_kl / torch.dot(x, damped(x)).clamp_min(1e-30)) / args.learning_rate
        step, eta = x * scale, args.learning_rate * scale.item()
    apply_step_(params, step, args.learning_rate)
    return {"g": g, "step": step, "eta": eta}


def sample_actions(actor: Actor, out: torch.Tensor) -> torch.Tensor:
    """Fresh actions a~ ~ pi(.|s) from the network output (torch's RNG), detached."""
    with torch.no_grad():
        if actor.discrete:
            return torch.multinomial(torch.softmax(out, dim=-1), 1).squeeze(-1)
        return out + torch.exp(actor.log_std) * torch.randn_like(out)


def kfac_step(actor: Actor, batch: dict, args: Args, state: dict) -> dict:
    """AC-KFAC: ACKTR's K-FAC natural gradient for the actor (no momentum, no critic curvature). Per Linear layer
    z = W x + b, the Fisher block of [W b] is A (x) G (Martens & Grosse 2015), EMAs of the batch factors
    A = mean_i a_i a_i^T, a_i = [x_i, 1], G = mean_i g_i g_i^T, g_i = d log pi(a~_i|s_i) / d z_i, a~_i ~ pi(.|s_i);
    step_[W b] = (A (x) G + lambda I)^-1 vec(g_[W b]); log_std's exact Fisher block is 2 I: step = g / (2 + lambda).
    KL clip (ACKTR): step *= nu = min(1, sqrt(kl_clip / (eta^2 g^T step)))."""
    params = list(actor.parameters())
    xs, zs, out = actor_layer_io(actor, batch["obs"])
    # output gradients of log-probabilities of actions SAMPLED from the policy (true Fisher, as ACKTR)
    gs = torch.autograd.grad(
        actor.log_prob_from_output(out, sample_actions(actor, out)).sum(), zs, retain_graph=True
    )
    objective = policy_objective(actor, batch, args, actor.log_prob_from_output(out, batch["actions"]))
    g = clip_norm(flat_grad(objective, params), args.max_grad_norm)
    with torch.no_grad():
        for key in ("kfac_A", "kfac_G", "kfac_eig_A", "kfac_eig_G"):  # after a resume onto another device
            if key in state:
                state[key] = [
                    tuple(t.to(g.device) for t in v) if isinstance(v, (tuple, list)) else v.to(g.device)
                    for v in state[key]
                ]
        with_bias = [torch.cat([x, torch.ones_like(x[:, :1])], dim=1) for x in xs]
        stats = [(a.T @ a / x.shape[0], gz.T @ gz / x.shape[0]) for x, a, gz in zip(xs, with_bias, gs)]
        if "kfac_A" not in state:  # first update: the factors start at the first batch's statistics (ACKTR)
            state["kfac_A"] = [a for a, _ in stats]
            state["kfac_G"] = [gg for _, gg in stats]
            state["kfac_updates"] = 0
        else:  # exponential moving averages: A <- decay A + (1 - decay) A_batch, same for G
            d = args.kfac_decay
            state["kfac_A"] = [d * A + (1 - d) * a for A, (a, _) in zip(state["kfac_A"], stats)]
            state["kfac_G"] = [d * G + (1 - d) * gg for G, (_, gg) in zip(state["kfac_G"], stats)]
        if state["kfac_updates"] % args.kfac_update_freq == 0:  # eigenbases, clamped to PSD as ACKTR does

            def eig(M):
                return tuple(t.contiguous() for t in torch.linalg.eigh(M))

            state["kfac_eig_A"] = [(e[0].clamp_min(0), e[1]) for e in map(eig, state["kfac_A"])]
            state["kfac_eig_G"] = [(e[0].clamp_min(0), e[1]) for e in map(eig, state["kfac_G"])]
        state["kfac_updates"] += 1
        grads = dict(zip(params, g.split([p.numel() for p in params])))  # views of g per parameter
        out_parts = {}
        for linear, (d_a, q_a), (d_g, q_g) in zip(actor.linears, state["kfac_eig_A"], state["kfac_eig_G"]):
            grad_wb = torch.cat(
                [grads[linear.weight].view_as(linear.weight), grads[linear.bias][:, None]], dim=1
            )
            # G^-1 grad A^-1 -> Q_g [(Q_g^T grad Q_a) / (d_g d_a^T + damping)] Q_a^T (elementwise /, ACKTR's damping)
            v = q_g @ ((q_g.T @ grad_wb @ q_a) / (d_g[:, None] * d_a[None, :] + args.kfac_damping)) @ q_a.T
            out_parts[linear.weight], out_parts[linear.bias] = v[:, :-1].reshape(-1), v[:, -1]
        if not actor.discrete:  # log_std: exact Fisher block 2 I
            out_parts[actor.log_std] = grads[actor.log_std] / (2.0 + args.kfac_damping)
        step = torch.cat([out_parts[p] for p in params])  # in actor.parameters() order, like g
        nu = 1.0
        if args.kfac_kl_clip > 0:  # eta^2 g^T F^-1 g ~= 2 KL of the update (ACKTR code: no factor 2)
            vg = args.learning_rate**2 * torch.dot(g, step).item()
            nu = min(1.0, math.sqrt(args.kfac_kl_clip / vg)) if vg > 0 else 1.0
        step = step * nu
    apply_step_(params, step, args.learning_rate)
    return {"g": g, "step": step, "kl_clip_scale": nu}


# --- SMAC's ablation modes (off by default): --fisher per-sample-parallel, --prev-ef-beta, --step-normalization ---
def per_sample_score_sq_norms(xs, deltas, dlog_std) -> torch.Tensor:
    """|l_i|^2 for every sample, shape (B,): |delta_i x_i^T|_F^2 = |delta_i|^2 |x_i|^2, so
    |l_i|^2 = sum_layers |delta_i|^2 (|x_i|^2 + 1) + |d log pi_i / d log_std|^2."""
    sq = 0.0
    for x, delta in zip(xs, deltas):
        sq = sq + delta.pow(2).sum(1) * (x.pow(2).sum(1) + 1.0)
    if dlog_std is not None:
        sq = sq + dlog_std.pow(2).sum(1)
    return sq


def weighted_score_sums(xs, deltas, dlog_std, weights: torch.Tensor) -> torch.Tensor:
    """sum_i weights[i, k] l_i per column k of weights (B, K): shape (K, d), laid out as cat(actor.parameters())."""
    K, parts = weights.shape[1], [] if dlog_std is None else [weights.T @ dlog_std]  # (K, act_dim)
    for x, delta in zip(xs, deltas):
        wd = (weights[:, :, None] * delta[:, None, :]).reshape(delta.shape[0], -1)  # (B, K * n_out)
        parts += [(wd.T @ x).reshape(K, -1), weights.T @ delta]  # sum_i c_i delta_i x_i^T, sum_i c_i delta_i
    return torch.cat(parts, dim=1)


def woodbury_direction(
    g: torch.Tensor, U: torch.Tensor, w: torch.Tensor, damping: float, gram: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """F^-1 g for F = damping*I + U^T diag(w) U, U of shape (m, d) holding l_j as rows, w > 0, by Woodbury:
    F^-1 g = (1/lambda) * (g - U^T (lambda diag(1/w) + U U^T)^-1 U g), the m x m solve in float64; gram = U U^T."""
    if U.shape[0] == 0:
        return g / damping
    M = (U @ U.T if gram is None else gram).double() + torch.diag(damping / w.double())
    y = torch.linalg.solve(M, (U @ g).double())
    return (g - U.T @ y.to(g.dtype)) / damping


def prev_ef_push_(state: dict, ell: torch.Tensor, beta: float, rank: int, damping: float, mode: str) -> None:
    """Advance F_{k-1} -> F_k = beta F_{k-1} + (1-beta) l_k l_k^T in state (prev_ef_U (m, d) rows l_j, prev_ef_w (m,)
    weights (1-beta) beta^(k-j), prev_ef_gram = U U^T (float64), prev_ef_damping = lambda_k). fixed: lambda_k = lambda
    (undamped EF from F_0 = 0); decay: lambda_k = max(beta lambda_{k-1}, 1e-30) (damped, from F_0 = lambda I). Keeps
    the `rank` newest terms, dropping earlier any with w_j |l_j|^2 <= 1e-12 lambda_k (changes F by < 1e-12 relative)."""
    with torch.no_grad():
        if "prev_ef_U" in state:  # .to: after a resume onto another device
            U = state["prev_ef_U"].to(ell.device, ell.dtype)
            w, gram = state["prev_ef_w"].to(ell.device), state["prev_ef_gram"].to(ell.device)
            lam = float(state["prev_ef_damping"])
        else:
            U, lam = ell.new_zeros((0, ell.numel())), damping
            w = torch.zeros(0, dtype=torch.float64, device=ell.device)
            gram = torch.zeros(0, 0, dtype=torch.float64, device=ell.device)
        lam = max(beta * lam, 1e-30) if mode == "decay" else damping
        cross, m = (U @ ell).double(), U.shape[0]  # l_j^T l_k for the kept terms: O(d m), keeps U U^T current
        new_gram = gram.new_empty(m + 1, m + 1)
        new_gram[:m, :m], new_gram[:m, m], new_gram[m, :m] = gram, cross, cross
        new_gram[m, m] = torch.dot(ell, ell).double()
        U, w = torch.cat([U, ell.detach()[None]]), torch.cat([w * beta, w.new_tensor([1.0 - beta])])
        keep = torch.nonzero(w * torch.diagonal(new_gram) > 1e-12 * lam).flatten()[-rank:]
        state["prev_ef_U"], state["prev_ef_w"] = U[keep].contiguous(), w[keep]
        state["prev_ef_gram"], state["prev_ef_damping"] = new_gram[keep][:, keep], lam


def normalize_step(step: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """--step-normalization: step * |g| / |step| (unchanged when step = 0)."""
    n = step.norm()
    return step * (g.norm() / n) if n > 0 else step


def registered_steps() -> dict:
    """{--optimizer: its actor step} for every algorithm in the registry (benchmark/algorithms.py): this module's
    own steps by name, a plugin's imported from its module."""
    steps = {}
    for name in algorithms.optimizers():
        module, function = algorithms.step_path(name)
        steps[name] = globals()[function] if module == "benchmark.trainer" else algorithms.step_function(name)
    return steps


ACTOR_STEPS = registered_steps()
# the steps defined here (step_length knows their eta), not a plugin's
OWN_STEPS = frozenset(n for n in ACTOR_STEPS if algorithms.step_path(n)[0] == "benchmark.trainer")


def step_length(diag: dict, args: Args) -> float:
    """updates.csv's eta for one actor step: the step length it applied, the scalar with theta's change = eta *
    the optimizer's own direction (its logged step is theta's change / --learning-rate, so step_norm * eta_paper /
    eta is the direction's norm): batch-mean SMAC the eta kl_step_ chose under --target-kl (0: no step), otherwise
    --learning-rate (F~^-1 g, also with --step-normalization and --prev-ef-beta; the per-sample modes move by it
    times each sample's or the summed F_i^-1 g_i); AC-SGD and AC-Adam --learning-rate (Adam's step size); AC-CG
    --learning-rate, or TRPO's beta with --cg-max-kl; AC-KFAC --learning-rate times ACKTR's KL-clip factor nu. A
    step that reports "eta" (a plugin's) gives its own; another plugin's step: NaN."""
    if "eta" in diag:
        return float(diag["eta"])
    if "kl_eta" in diag:
        return float(diag["kl_eta"])
    if args.optimizer not in OWN_STEPS:
        return math.nan
    return args.learning_rate * float(diag.get("kl_clip_scale", 1.0))


def add_csv_columns(path: str, header: list) -> None:
    """A CSV begun by an earlier trainer with fewer columns, its header a prefix of `header` (a run resumed from
    before updates.csv had eta): rewritten with `header`, the new columns empty ("" reads as NaN) in its rows and
    a row of another length (torn) dropped, as truncate_logs_to does; atomic. Any other file is left as it is."""
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        return
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    old = rows[0] if rows else []
    if not old or len(old) >= len(header) or header[: len(old)] != old:
        return
    pad = [""] * (len(header) - len(old))
    with open(path + ".tmp", "w", newline="") as f:
        csv.writer(f).writerows([header] + [r + pad for r in rows[1:] if len(r) == len(old)])
    os.replace(path + ".tmp", path)


class LabRunLog(RunLog):
    """runlayer.RunLog whose updates.csv ends with the column eta: step_length of the update's actor steps (their
    mean with --num-minibatches / --update-epochs > 1, as the other diagnostics). A run's updates.csv from before
    the column gets it at the first row this trainer writes (add_csv_columns)."""

    eta = math.nan
    checked_header = False

    def update(self, update, global_step, value_loss, mean_logprob, entropy, diagnostics, actor_ms) -> None:
        steps = diagnostics if isinstance(diagnostics, list) else [diagnostics]
        self.eta = float(np.mean([step_length(d, self.args) for d in steps]))
        super().update(update, global_step, value_loss, mean_logprob, entropy, diagnostics, actor_ms)

    def write_row(self, name: str, row: dict) -> None:
        if name == "updates":
            row = {**row, "eta": self.eta}
            if not self.checked_header:
                add_csv_columns(os.path.join(self.run_dir, "updates.csv"), list(row))
                self.checked_header = True
        super().write_row(name, row)


# --- Run management: run directories, locks, checkpoints, resume, evaluation ---
def truncate_logs_to(run_dir: str, global_step: int, update: int) -> None:
    """Cut episodes.csv / updates.csv back to a checkpoint (after a hard kill the logs run ahead of it): rows after it
    and a torn last line are dropped, atomically."""
    for name, column, limit in (
        ("episodes.csv", "global_step", global_step),
        ("updates.csv", "update", update),
    ):
        path = os.path.join(run_dir, name)
        if not os.path.isfile(path):
            continue
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if not rows:
            continue
        if column not in rows[0]:  # a garbled or missing header: refuse rather than guess which rows to keep
            raise ConfigError(
                f"{path} has no {column!r} column in its first line (garbled header); repair the "
                "header or remove the file (a fresh one is written on resume)"
            )
        header, i = rows[0], rows[0].index(column)
        keep = [
            r
            for r in rows[1:]
            if len(r) == len(header) and _as_int(r[i]) is not None and _as_int(r[i]) <= limit
        ]
        if len(keep) != len(rows) - 1:
            with open(path + ".tmp", "w", newline="") as f:
                csv.writer(f).writerows([header] + keep)
            os.replace(path + ".tmp", path)


def _as_int(x: str) -> Optional[int]:
    try:
        return int(float(x))
    except ValueError:
        return None


CHECKPOINT_KEYS = {
    "args",
    "global_step",
    "update",
    "actor",
    "critic",
    "critic_opt",
    "actor_state",
    "normalizer",
    "rng",
}


def load_checkpoint(path: str) -> dict:
    """Load a checkpoint without executing code: torch.load(weights_only=True), tensors and plain containers only."""
    path = os.path.join(path, "checkpoint.pt") if os.path.isdir(path) else path
    if not os.path.isfile(path):
        raise ConfigError(f"checkpoint {path!r} does not exist")
    numpy_globals = [np.ndarray, np.dtype, type(np.dtype(np.float64))]  # what older checkpoints' arrays need
    for mod in ("numpy._core.multiarray", "numpy.core.multiarray"):
        with contextlib.suppress(ImportError, AttributeError):
            numpy_globals.append(__import__(mod, fromlist=["_reconstruct"])._reconstruct)
    try:
        with torch.serialization.safe_globals(numpy_globals):
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ConfigError(
            f"checkpoint {path!r} is corrupt, not a smac_a2c checkpoint, or holds objects that "
            f"could run code ({type(e).__name__}); it was not loaded"
        ) from None
    if isinstance(ckpt, dict) and "sha256" in ckpt:  # runlayer.with_hash's (older checkpoints have none)
        try:
            intact = runlayer.with_hash(ckpt)["sha256"] == ckpt["sha256"]
        except Exception:  # contents that with_hash never wrote
            intact = False
        if not intact:  # a flipped byte, in a tensor's data too
            raise ConfigError(
                f"checkpoint {path!r} is corrupt: its contents do not match the sha256 saved with them "
                "(a damaged file, or one edited without runlayer.with_hash); it was not loaded"
            )
    missing = CHECKPOINT_KEYS - set(ckpt) if isinstance(ckpt, dict) else CHECKPOINT_KEYS
    if missing:
        raise ConfigError(
            f"checkpoint {path!r} is not a complete smac_a2c checkpoint (missing: {', '.join(sorted(missing))})"
        )
    if not all(
        isinstance(ckpt[k], int) and not isinstance(ckpt[k], bool) and ckpt[k] >= 0
        for k in ("global_step", "update")
    ):
        raise ConfigError(
            f"checkpoint {path!r} does not fit a run: its global_step / update are not counts "
            f"({ckpt['global_step']!r}, {ckpt['update']!r})"
        )
    # Critic.net.*
    if isinstance(ckpt["critic"], dict) and any(str(k).startswith("net.") for k in ckpt["critic"]):
        ckpt["critic"] = {k[4:] if k.startswith("net.") else k: v for k, v in ckpt["critic"].items()}
    try:  # contents that load into the objects unchecked, and break a run or an evaluation later
        obs_dim = next(v for v in ckpt["actor"].values() if v.dim() == 2).shape[1]  # the first layer's inputs
        critic_params = list(ckpt["critic"].values())
        for key, shape in (("obs_rms", (obs_dim,)), ("ret_rms", ())):  # the normalizer fits the actor's input
            rms = ckpt["normalizer"][key]
            mean, var = (np.asarray(rms[k], dtype=np.float64) for k in ("mean", "var"))
            if mean.shape != shape or var.shape != shape or not float(rms["count"]) > 0:
                raise ValueError(
                    f"normalizer {key} of shapes {mean.shape}, {var.shape} and count {rms['count']!r}"
                )
            if not (
                np.isfinite(mean).all() and np.isfinite(var).all() and math.isfinite(float(rms["count"]))
            ):
                raise ValueError(f"normalizer {key} holds NaN or Inf (mean {mean}, var {var})")
        # Adam's moments fit the critic's parameters
        for i, param_state in ckpt["critic_opt"]["state"].items():
            for v in param_state.values():
                if torch.is_tensor(v) and v.dim() and v.shape != critic_params[i].shape:
                    raise ValueError(
                        f"critic optimizer state of shape {tuple(v.shape)} for a parameter of "
                        f"{tuple(critic_params[i].shape)}"
                    )
    except Exception as e:
        raise ConfigError(
            f"checkpoint {path!r} does not fit a run: its contents are malformed "
            f"({type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''})"
        ) from None
    ckpt["path"] = path
    if not isinstance(ckpt["args"], dict):
        raise ConfigError(
            f"checkpoint {path!r} does not fit a run: its stored flags (args) are a "
            f"{type(ckpt['args']).__name__}, not a dict of flags"
        )
    if "env_id" in ckpt["args"]:
        ckpt["args"]["env_id"] = current_env_id(ckpt["args"]["env_id"])
    return ckpt


def current_env_id(env_id):
    """A stored --env-id as this trainer names it: the 1000-step ids' earlier module benchmark.envs is now
    benchmark.hparams (anything else as it is)."""
    if isinstance(env_id, str) and env_id.startswith("benchmark.envs:"):
        return "benchmark.hparams:" + env_id.split(":", 1)[1]
    return env_id


# flags that say what to do with a run, not how it trains: a checkpoint's copies of them are not read back
RUN_ACTIONS = ("resume", "eval_checkpoint", "plot", "plot_out")


def stored_type_ok(default, value) -> bool:
    """Whether a stored flag has the type of its field (read off the field's default), as a checkpoint writes it."""
    if default is None:  # Optional[str]
        return value is None or isinstance(value, str)
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int):
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, tuple):
        return isinstance(value, (list, tuple)) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
    return isinstance(value, type(default))


def flags_as_argv(saved: dict) -> list[str]:
    """A checkpoint's stored flags written back as a command line (the fields this trainer knows), each first
    checked to have its field's type: a string where a number belongs is refused, not parsed."""
    argv = []
    for f in fields(Args):
        if f.name not in saved or f.name in RUN_ACTIONS:
            continue
        value = saved[f.name]
        if not stored_type_ok(f.default, value):
            raise ConfigError(
                f"--{f.name.replace('_', '-')} is stored as {value!r}, not of its type ({type(f.default).__name__})"
            )
        flag = "--" + f.name.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            argv.append(flag if value else "--no-" + f.name.replace("_", "-"))
        elif isinstance(value, (list, tuple)):  # an empty one too: refused by the checks, not defaulted
            argv += [flag, *map(str, value)]
        else:
            argv.append(f"{flag}={value}")
    return argv


def args_from_checkpoint(saved: dict, training: bool = False) -> Args:
    """The flags a checkpoint holds, validated as flags typed by hand are (tyro's types and choices, then
    check_args): a value no command line could give (a string for --num-envs, an optimizer or --fisher that does
    not exist) is bad input, refused before anything is touched."""
    if not isinstance(saved, dict):
        raise ConfigError(f"checkpoint flags are unreadable (a {type(saved).__name__}, not a dict)")
    try:
        args = parse_args(flags_as_argv(saved))
        check_args(args, training=training)
        check_algorithm_args(args)  # the algorithm's own ranges, also for an evaluation
    except ConfigError as e:
        raise ConfigError(f"the checkpoint's stored flags are refused: {e}") from None
    return args


def evaluate(
    ckpt: dict, episodes: int, seed: int, capture_video: bool = False, max_steps: int = 27_000
) -> tuple[float, float]:
    """Mean and std of undiscounted returns of the deterministic policy (mean action / argmax)."""
    args = args_from_checkpoint(ckpt["args"], training=False)
    obs_space, act_space = check_env_id(args.env_id)
    discrete, act_dim = action_dims(act_space)
    actor = Actor(
        obs_space.shape[0], act_dim, discrete, args.hidden_sizes, args.log_std_init, args.activation
    )
    normalizer = Normalizer(obs_space.shape[0], args.num_envs, args.gamma, args.norm_obs, args.norm_reward)
    try:
        actor.load_state_dict(ckpt["actor"])
        normalizer.load_state_dict(ckpt["normalizer"])
    except (RuntimeError, KeyError, ValueError, TypeError) as e:
        raise ConfigError(
            f"checkpoint {ckpt['path']!r} does not fit its own environment or networks "
            f"({type(e).__name__}: {str(e).splitlines()[0][:200]})"
        ) from None
    if not all(torch.isfinite(p).all() for p in actor.parameters()):
        raise ConfigError(
            f"checkpoint {ckpt['path']!r} holds non-finite (NaN/Inf) actor weights; not evaluated"
        )
    video_dir = os.path.join(os.path.dirname(ckpt["path"]), "videos", "eval") if capture_video else None
    if capture_video:
        check_video(args.env_id)
    try:
        env = make_env(args.env_id, video_dir, 1)
    except OSError as e:  # RecordVideo makes RUN/videos/eval: a read-only run directory
        raise ConfigError(
            f"--capture-video: cannot write videos into {video_dir!r} ({e.strerror or e})"
        ) from None
    policy, returns = RolloutPolicy(actor), []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        done, total, t = False, 0.0, 0
        while not done and t < max_steps:  # an environment without a time limit still ends
            t += 1
            out = policy.forward(normalizer.obs(obs[None]))[0]  # the mean action, or the most likely one
            # as in training: a Discrete(n, start) action is the policy's index shifted by start
            action = (
                np.argmax(out) + act_space.start if discrete else np.clip(out, act_space.low, act_space.high)
            )
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns)), float(np.std(returns))


# others stay on --resume
RESUME_MAY_CHANGE = (
    "total_timesteps",
    "checkpoint_every",
    "tensorboard",
    "torch_threads",
    "cuda",
    "capture_video",
    "video_every",
    "track",
    "wandb_project_name",
    "wandb_entity",
    "resume",
)
# flags --resume refuses to change that still do not define a run's numbers: where it is written, its name, what an
# evaluation does
NOT_THE_RUNS_NUMBERS = ("runs_dir", "exp_name", "eval_episodes", "eval_max_steps")
# the flags that define a run's numbers: the sweep's "same flags" (sweep.disagreement) compares these
RUN_FLAGS = tuple(
    f.name for f in fields(LabArgs) if f.name not in RESUME_MAY_CHANGE + RUN_ACTIONS + NOT_THE_RUNS_NUMBERS
)


def checked_args(argv: list[str]) -> LabArgs:
    """A fresh run's flags as this trainer's main takes them (tyro, then every check of a training run); ConfigError
    (one line) for what it would refuse."""
    args = parse_args(argv)
    check_args(args, training=True)
    return args


def flag_disagreement(args: LabArgs, stored: dict) -> Optional[tuple[str, object, object]]:
    """The first of RUN_FLAGS whose value stored by a run (its config.json's or compact log's args) differs from
    args's: (flag, stored value, args's value); None when they agree. A flag the record predates reads as its
    default; keys this trainer no longer has are not compared."""
    defaults = LabArgs()
    for name in RUN_FLAGS:
        asked = getattr(args, name)
        value = stored.get(name, getattr(defaults, name))
        if name == "env_id":
            value = current_env_id(value)
        if isinstance(asked, tuple) and isinstance(value, list):
            value = tuple(value)
        if value != asked or isinstance(value, bool) != isinstance(asked, bool):
            return "--" + name.replace("_", "-"), value, asked
    return None


def flags_given(argv: list[str]) -> set[str]:
    """Field names of the flags written on the command line (--x, --x=v, --no-x)."""
    names, out = {f.name for f in fields(Args)}, set()
    for name in (tok[2:].split("=", 1)[0].replace("-", "_") for tok in argv if tok.startswith("--")):
        name = name[3:] if name.startswith("no_") and name[3:] in names else name
        if name in names:
            out.add(name)
    return out


def resume_args(args: Args, argv: list[str], resume: dict) -> Args:
    """The resumed run's flags: the saved ones, only RESUME_MAY_CHANGE taken from the command line (others refused)."""
    saved, given = args_from_checkpoint(resume["args"], training=False), flags_given(argv)
    refused = sorted(f for f in given - set(RESUME_MAY_CHANGE) if getattr(args, f) != getattr(saved, f))
    if refused:
        raise ConfigError(
            f"--resume continues the run as it was started; {', '.join('--' + f.replace('_', '-') for f in refused)} "
            f"cannot change (saved: {', '.join(f'{getattr(saved, f)!r}' for f in refused)}); only "
            f"{', '.join('--' + f.replace('_', '-') for f in RESUME_MAY_CHANGE[:-1])} may"
        )
    for f in given & set(RESUME_MAY_CHANGE):
        setattr(saved, f, getattr(args, f))
    saved.resume = args.resume
    return saved


def all_finite(value_loss: float, actor: nn.Module, critic: nn.Module) -> bool:
    params = list(actor.parameters()) + list(critic.parameters())
    return math.isfinite(value_loss) and all(torch.isfinite(p).all() for p in params)


def stats_finite(normalizer: Normalizer) -> bool:
    """The normalization statistics hold no NaN or Inf (an infinite observation or reward would poison them)."""
    parts = (normalizer.obs_rms.mean, normalizer.obs_rms.var, normalizer.ret_rms.mean, normalizer.ret_rms.var)
    return all(np.isfinite(p).all() for p in parts)


def seed_all(seed: int) -> np.random.Generator:
    """Seeding as CleanRL: python, numpy and torch (deterministic algorithms); returns the rollout's generator."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return np.random.default_rng(seed)


def build_nets(args: LabArgs, obs_space, act_space, device: torch.device) -> dict:
    """Algorithm 1, line 2: theta (the actor) and phi (the critic) initialised, the critic's Adam and the
    normalization, as runlayer's snapshot and restore name them."""
    discrete, act_dim = action_dims(act_space)
    obs_dim = obs_space.shape[0]
    actor, critic = lab_networks(args, obs_dim, act_dim, discrete)
    actor = actor.to(device)
    critic = critic.to(device)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate)
    normalizer = Normalizer(obs_dim, args.num_envs, args.gamma, args.norm_obs, args.norm_reward)
    return {"actor": actor, "critic": critic, "critic_opt": critic_opt, "normalizer": normalizer}


class Rollout:
    """The N environments, their current observations, one rollout's buffers (T steps by N environments) and each
    environment's episode so far. Environment i first resets with seed + update * N + i; only the first records
    videos."""

    def __init__(self, args: LabArgs, run_dir: str, make_env, obs_space, act_space, update: int):
        T = args.num_steps
        N = args.num_envs
        obs_dim = obs_space.shape[0]
        video_dir = os.path.join(run_dir, "videos") if args.capture_video else None
        self.envs = [make_env(args.env_id, video_dir if i == 0 else None) for i in range(N)]
        self.obs = np.stack(
            [env.reset(seed=args.seed + update * N + i)[0] for i, env in enumerate(self.envs)]
        )
        self.act_space = act_space
        self.discrete, act_dim = action_dims(act_space)
        self.buf_obs = np.zeros((T, N, obs_dim))
        self.buf_next_obs = np.zeros((T, N, obs_dim))
        self.buf_actions = np.zeros((T, N) if self.discrete else (T, N, act_dim))
        self.buf_rewards = np.zeros((T, N))
        self.buf_terminations = np.zeros((T, N))
        self.buf_dones = np.zeros((T, N))
        self.ep_return = np.zeros(N)
        self.ep_length = np.zeros(N, dtype=np.int64)

    def collect(
        self, policy: RolloutPolicy, normalizer: Normalizer, rng, log: RunLog, global_step: int, stop
    ) -> bool:
        """Algorithm 1, line 4: T steps in every environment, acting with the current policy; each episode that
        ends is logged. False when a signal came first: the rollout is then incomplete."""
        N = len(self.envs)
        for t in range(self.buf_obs.shape[0]):
            if stop.name is not None:
                return False
            action = policy.sample(normalizer.obs(self.obs), rng)
            # Discrete(n, start): the policy's index shifted; a Box: the action clipped into it
            if self.discrete:
                env_action = action + self.act_space.start
            else:
                env_action = action.clip(self.act_space.low, self.act_space.high)
            self.buf_obs[t] = self.obs
            self.buf_actions[t] = action
            for i, env in enumerate(self.envs):
                next_obs, reward, terminated, truncated, _ = env.step(env_action[i])
                self.buf_rewards[t, i] = reward
                self.buf_terminations[t, i] = terminated
                self.buf_dones[t, i] = terminated or truncated
                # s_{t+1}: the final observation if the episode ends here
                self.buf_next_obs[t, i] = next_obs
                self.ep_return[i] = self.ep_return[i] + self.buf_rewards[t, i]
                self.ep_length[i] = self.ep_length[i] + 1
                if terminated or truncated:
                    log.episode(global_step + (t + 1) * N, self.ep_return[i], self.ep_length[i])
                    self.ep_return[i] = 0.0
                    self.ep_length[i] = 0
                    next_obs, _ = env.reset()
                self.obs[i] = next_obs
        return True

    def close(self) -> None:
        for env in self.envs:
            env.close()


def rollout_batch(
    args: LabArgs, rollout: Rollout, nets: dict, device: torch.device
) -> tuple[dict, torch.Tensor]:
    """Algorithm 1, line 5: the rollout as the batch {obs, actions, advantages} (GAE from the critic before its
    update; --norm-adv normalizes the advantages) and the critic's targets, the returns."""
    T, N, obs_dim = rollout.buf_obs.shape
    normalizer = nets["normalizer"]
    with torch.no_grad():
        b_obs = tensor(normalizer.obs(rollout.buf_obs), device).reshape(T * N, obs_dim)
        values = nets["critic"](b_obs).reshape(T, N).cpu().numpy()
        next_values = nets["critic"](tensor(normalizer.obs(rollout.buf_next_obs), device)).cpu().numpy()
    rewards = normalizer.rewards(rollout.buf_rewards, rollout.buf_dones)
    advantages, returns = compute_gae(
        rewards, values, next_values, rollout.buf_terminations, rollout.buf_dones, args.gamma, args.gae_lambda
    )
    advantages = tensor(advantages, device).reshape(-1)
    if args.norm_adv:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    actions = tensor(rollout.buf_actions, device).reshape(T * N, *rollout.buf_actions.shape[2:])
    batch = {"obs": b_obs, "actions": actions, "advantages": advantages}
    return batch, tensor(returns, device).reshape(-1)


def update_nets(
    args: LabArgs, nets: dict, batch: dict, returns, rollout: Rollout, actor_state: dict, device
) -> tuple[list, float, float, bool]:
    """Algorithm 1, lines 6-10: the actor step(s) of --optimizer (with --num-minibatches and --update-epochs),
    timed, then the critic step; the observation statistics take in the rollout after the update that used them.
    (diagnostics, actor_ms, value_loss, finite): finite is False on a NaN or Inf in the loss, the networks or the
    statistics, or a non-finite direction (apply_step_'s FloatingPointError)."""
    start = time.perf_counter()
    try:
        diagnostics = actor_update(nets["actor"], batch, args, actor_state)
    except FloatingPointError:  # apply_step_'s non-finite direction: this update diverged
        diagnostics = None
    if device.type == "cuda":
        torch.cuda.synchronize()
    actor_ms = (time.perf_counter() - start) * 1e3
    value_loss = critic_step(nets["critic"], nets["critic_opt"], batch["obs"], returns, args)
    normalizer = nets["normalizer"]
    normalizer.obs_rms.update(rollout.buf_obs.reshape(-1, rollout.buf_obs.shape[2]))
    finite = diagnostics is not None and all_finite(value_loss, nets["actor"], nets["critic"])
    finite = finite and stats_finite(normalizer)
    return diagnostics, actor_ms, value_loss, finite


def record_update(log: RunLog, actor: Actor, batch: dict, update: int, global_step: int, *measured) -> None:
    """updates.csv's row of an update: its `measured` (value_loss, diagnostics, actor_ms) with the mean
    log-probability and entropy of the updated actor on the batch."""
    value_loss, diagnostics, actor_ms = measured
    with torch.no_grad():
        mean_logprob = actor.log_prob(batch["obs"], batch["actions"]).mean().item()
        entropy = actor.entropy(batch["obs"]).mean().item()
    log.update(update, global_step, value_loss, mean_logprob, entropy, diagnostics, actor_ms)


def train_loop(
    args: LabArgs,
    run_dir: str,
    resume: Optional[dict],
    make_env,
    obs_space,
    act_space,
    stop: StopSignals,
    start: Optional[dict] = None,
) -> str:
    """The lab's training loop (its logs checked bitwise by tools/logs_snapshot.py): returns the outcome, finished,
    diverged, or the signal that stopped it; raises RunCrashed after keeping
    the last good state (the one crash path, runlayer.record_crash). A signal (stop.name, set by the caller's
    StopSignals) ends the run after the update in progress; during a rollout it ends the rollout at once, the
    partial rollout is dropped (no update was made from it) and the state after the last completed update is
    kept, so that a run stops within a step whatever --num-steps is. `start`: where the run came from
    (provenance.record, taken when the trainer started), for config.json."""
    last_good = None
    try:
        device = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
        rng = seed_all(args.seed)
        steps_per_rollout = args.num_steps * args.num_envs
        budget = args.total_timesteps - args.total_timesteps % steps_per_rollout
        nets = build_nets(args, obs_space, act_space, device)
        global_step = 0
        update = 0
        actor_state = {}
        if resume is not None:
            global_step, update, actor_state = restore(resume, nets, rng)
        log = LabRunLog(args, run_dir, device, global_step, budget, start)
        rollout = Rollout(args, run_dir, make_env, obs_space, act_space, update)
        policy = RolloutPolicy(nets["actor"])
        status = "finished"
        cut = False
        # Algorithm 1, line 3: for iteration k = 0, 1, ...
        while global_step < budget and stop.name is None:
            # the state after the last completed update: where a bad update rolls back to, and what a
            # crash keeps as the checkpoint
            last_good = snapshot(args, nets, actor_state, rng, global_step, update)
            cut = not rollout.collect(policy, nets["normalizer"], rng, log, global_step, stop)
            if cut:  # a signal: this rollout is dropped, the run ends now
                global_step, update, actor_state = restore(last_good, nets, rng)
                break
            global_step += steps_per_rollout
            batch, returns = rollout_batch(args, rollout, nets, device)
            diagnostics, actor_ms, value_loss, finite = update_nets(
                args, nets, batch, returns, rollout, actor_state, device
            )
            if not finite:  # NaN or Inf: back to the state before this rollout and update, checkpoint it
                global_step, update, actor_state = restore(last_good, nets, rng)
                status = "diverged"
                break
            update += 1
            policy = RolloutPolicy(nets["actor"])
            record_update(log, nets["actor"], batch, update, global_step, value_loss, diagnostics, actor_ms)
            if args.checkpoint_every and update % args.checkpoint_every == 0:
                save_checkpoint(run_dir, snapshot(args, nets, actor_state, rng, global_step, update))
        if status == "finished" and stop.name is not None and global_step < budget:
            status = "interrupted"
        # always: at the end, on a signal, on divergence
        save_checkpoint(run_dir, snapshot(args, nets, actor_state, rng, global_step, update))
        rollout.close()
        log.close(status, stop.name, update, global_step)
        if cut:  # the episodes of the dropped rollout are not the run's: the logs end at the checkpoint
            truncate_logs_to(run_dir, global_step, update)
    except Exception as error:
        raise RunCrashed(record_crash(run_dir, error, last_good, fresh=resume is None)) from None
    if status == "interrupted":
        return stop.name
    return status


def check_resume_fits(args: LabArgs, resume: dict, obs_space, act_space) -> None:
    """A checkpoint that does not fit its flags is refused: it is loaded into throwaway objects first."""
    discrete, act_dim = action_dims(act_space)
    actor, critic = lab_networks(args, obs_space.shape[0], act_dim, discrete)
    try:
        actor.load_state_dict(resume["actor"])
        critic.load_state_dict(resume["critic"])
        torch.optim.Adam(critic.parameters(), lr=args.critic_learning_rate).load_state_dict(
            resume["critic_opt"]
        )
        norm = Normalizer(obs_space.shape[0], args.num_envs, args.gamma, False, False)
        norm.load_state_dict(resume["normalizer"])
        if norm.obs_rms.mean.shape != (obs_space.shape[0],) or norm.discounted_return.shape != (
            args.num_envs,
        ):
            raise ValueError(
                f"normalizer statistics of shape {norm.obs_rms.mean.shape}, {norm.discounted_return.shape}"
            )
        # the three RNG states, on throwaways
        np.random.default_rng().bit_generator.state = resume["rng"]["numpy"]
        torch.Generator().set_state(resume["rng"]["torch"])
        random.Random().setstate(resume["rng"]["python"])
    except (RuntimeError, KeyError, ValueError, TypeError) as e:
        raise ConfigError(
            f"checkpoint {resume['path']!r} does not fit this run's networks or environment "
            f"({type(e).__name__}: {str(e).splitlines()[0][:200]})"
        ) from None


def finish_at_budget(run_dir: str, resume: dict, args: LabArgs) -> str:
    """--resume of a run whose checkpoint reached the budget: nothing to train. A missing or `interrupted`
    summary.json (a kill after the last checkpoint) is rewritten as finished, so that the sweep packs the run
    instead of resuming it forever; any other status (diverged, crashed) is kept, and is the outcome."""
    path = os.path.join(run_dir, "summary.json")
    summary = provenance.read_summary(run_dir) or {}
    status = summary.get("status")
    if status not in (None, "interrupted", "finished"):
        print(
            f"nothing to do: {run_dir} already has {resume['global_step']} >= {args.total_timesteps} steps; "
            f"its status {status!r} is kept"
        )
        return status
    if status != "finished" or summary.get("global_step") != resume["global_step"]:
        repaired = f"status {status or 'missing'!r} -> finished on resume at the budget"
        summary.update(
            status="finished",
            signal=None,
            global_step=int(resume["global_step"]),
            updates=int(resume["update"]),
            repaired=repaired,
        )
        summary.setdefault("run_dir", run_dir)
        runlayer.write_json(path, summary)
        print(f"repaired {path}: {summary['repaired']}", file=sys.stderr)
    print(f"nothing to do: {run_dir} already has {resume['global_step']} >= {args.total_timesteps} steps")
    return "finished"


def train(args: LabArgs, resume: Optional[dict] = None) -> tuple[Optional[str], str]:
    """train_loop in a locked run directory of its own (or the resumed one), after every check of the input.
    Returns (run_dir, outcome): finished, diverged, or the signal that interrupted it; (None, "finished") for a
    checkpoint outside a run directory that already holds the budget (nothing to train, nothing created). The
    signal handlers are in place before the run directory exists, so a signal at any moment after it leaves an
    `interrupted` run."""
    start = provenance.record()  # where the run comes from, taken at the trainer's start (config.json)
    # before any environment renders (the video probe): with CUDA builds of torch this imports triton, whose
    # import crashes once an EGL context exists
    torch.use_deterministic_algorithms(True, warn_only=True)
    obs_space, act_space = check_env_id(args.env_id)  # bad input is refused before a run directory exists
    if args.capture_video:  # the reference's probe of a frame and moviepy, also before a run directory exists
        check_video(args.env_id)
    if resume is not None:
        check_resume_fits(args, resume, obs_space, act_space)
    # the budget as the loop trains it: whole rollouts
    budget = args.total_timesteps - args.total_timesteps % (args.num_steps * args.num_envs)
    with StopSignals() as stop:
        run_dir = create_run_dir(args) if resume is None else os.path.dirname(os.path.abspath(resume["path"]))
        loose = resume is not None and not os.path.isfile(os.path.join(run_dir, "config.json"))
        if loose and resume["global_step"] >= budget:  # nothing to train: no run directory for it either
            print(f"nothing to do: {resume['path']} already has {resume['global_step']} >= {budget} steps")
            return None, "finished"
        if loose:
            # a checkpoint copied out of its run: continue it in a run directory of its own
            run_dir = create_run_dir(args)
            print(
                f"note: {resume['path']} is not inside a run directory; the resumed run goes to {run_dir}",
                file=sys.stderr,
            )
        with RunLock(run_dir):
            if resume is not None:
                # read again under the lock: another trainer may have continued the run since the first read
                resume = load_checkpoint(resume["path"])
                check_resume_fits(args, resume, obs_space, act_space)
            if resume is not None and resume["global_step"] >= budget:
                return run_dir, finish_at_budget(run_dir, resume, args)
            if os.path.exists(os.path.join(run_dir, "checkpoint.pt.tmp")):
                # a kill during a save; checkpoint.pt is intact
                os.remove(os.path.join(run_dir, "checkpoint.pt.tmp"))
            if resume is not None:
                truncate_logs_to(run_dir, int(resume["global_step"]), int(resume["update"]))
                trace = os.path.join(run_dir, "traceback.txt")
                if os.path.exists(trace):  # an earlier crash: kept beside, no longer the run's state
                    os.replace(
                        trace,
                        os.path.join(run_dir, f"traceback-before-resume-at-{resume['global_step']}.txt"),
                    )
            prefix = "rl-video" if resume is None else f"rl-video-resumed-at-{resume['global_step']}"
            env = functools.partial(
                make_env,
                video_every=args.video_every,
                bootstrap_truncation=args.bootstrap_truncation,
                video_prefix=prefix,
            )
            try:
                outcome = train_loop(args, run_dir, resume, env, obs_space, act_space, stop, start)
            except (RunCrashed, ConfigError, KeyboardInterrupt):
                raise
            except Exception as e:  # outside the loop's own crash path: the logs' truncation, ...
                raise RunCrashed(record_crash(run_dir, e, fresh=resume is None)) from None

    if args.track and args.capture_video:
        upload_videos(run_dir, args)
    return run_dir, outcome


def upload_videos(run_dir: str, args: LabArgs) -> None:
    """--track --capture-video: the run's videos go to its W&B run too (continued by its id, as runlayer.RunLog
    names it)."""
    import glob

    import wandb

    run = wandb.init(
        project=args.wandb_project_name,
        entity=args.wandb_entity,
        dir=run_dir,
        id=runlayer.wandb_run_id(run_dir),
        resume="allow",
        settings=wandb.Settings(init_timeout=60),
    )
    for video in sorted(glob.glob(os.path.join(run_dir, "videos", "*.mp4"))):
        run.log({"videos": wandb.Video(video)})
    run.finish()


def parse_args(argv=None, cls=LabArgs, prog: str = "python -m benchmark.trainer"):
    """tyro.cli(cls), with tyro's multi-line error box reduced to one line (a ConfigError); the
    reference keeps tyro's own message and exit code 2."""
    import io

    import tyro

    try:
        with contextlib.redirect_stderr(io.StringIO()) as box:
            return tyro.cli(cls, args=argv)
    except SystemExit as e:  # an error (--help exits 0): the box's first paragraph, under its title, one line
        if not e.code:
            raise
        message = " ".join(box.getvalue().partition("\n")[2].partition("──")[0].replace("│", "").split())
        raise ConfigError(f"{message or 'bad input'} (see: {prog} --help)") from None


class TerminatedBeforeTraining(BaseException):
    """SIGTERM before the run's own handlers (runlayer.StopSignals) are in place: one line, exit 143."""


def terminate_before_training(signum, frame):
    raise TerminatedBeforeTraining


def main(argv=None) -> int:
    """The exit code; the SIGTERM handler it found is back on every return."""
    argv = sys.argv[1:] if argv is None else list(argv)
    found = signal.signal(signal.SIGTERM, terminate_before_training)  # train() puts StopSignals over it
    try:
        args = parse_args(argv)  # tyro's error box as one line: exit 2
        for flag, value in (("--resume", args.resume), ("--eval-checkpoint", args.eval_checkpoint)):
            if value is not None and not value.strip():
                raise ConfigError(f"{flag} needs a checkpoint file or run directory, got an empty path")
        if not args.runs_dir.strip() or any(not p.strip() for p in args.plot):
            raise ConfigError("--runs-dir and --plot need non-empty paths")
        if not args.resume:  # a resumed run is checked with its saved flags, below
            check_args(args, training=not (args.plot or args.eval_checkpoint))
        torch.set_num_threads(args.torch_threads)
        if args.plot:
            out = plotting.plot_path(args.plot_out, args.plot, args.runs_dir)
            print(f"wrote {plotting.plot_runs(args.plot, out)}")
            return 0
        if args.eval_checkpoint:
            ckpt = load_checkpoint(args.eval_checkpoint)
            if "env_id" in flags_given(argv) and args.env_id != ckpt["args"]["env_id"]:
                raise ConfigError(
                    f"--eval-checkpoint evaluates on the checkpoint's own environment "
                    f"{ckpt['args']['env_id']!r}; --env-id {args.env_id!r} does not match"
                )
            if args.capture_video:  # before the first environment: mujoco reads MUJOCO_GL at its import
                set_render_backend()
            mean, std = evaluate(ckpt, args.eval_episodes, args.seed, args.capture_video, args.eval_max_steps)
            print(
                f"eval {ckpt['args']['env_id']}: {mean:.2f} +- {std:.2f} over {args.eval_episodes} episodes "
                f"(deterministic policy, {ckpt['path']})"
            )
            return 0
        resume = load_checkpoint(args.resume) if args.resume else None
        if resume is not None:
            args = resume_args(args, argv, resume)
            check_args(args)
        if args.capture_video:  # before the first environment: mujoco reads MUJOCO_GL at its import
            set_render_backend()
        run_dir, status = train(args, resume)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RunCrashed as e:
        print(f"crashed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C before training started or during --eval-checkpoint: nothing to save
        print("interrupted (Ctrl-C) before training; nothing was written", file=sys.stderr)
        return 130
    except TerminatedBeforeTraining:
        print("interrupted (SIGTERM) before training; nothing was written", file=sys.stderr)
        return 143
    finally:
        signal.signal(signal.SIGTERM, found)
    return EXIT_CODES[status]


if __name__ == "__main__":
    atexit.register(runlayer.ignore_signals)  # before wandb.init registers W&B's: runs after them, the last
    runlayer.exit_with(main())
