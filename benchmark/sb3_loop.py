"""The SMAC copy block in Stable-Baselines3's A2C as it ships, on CartPole-v1: README's batch-size rule for
`kl_step_`, and a fixed eta a user can compute for batches too small for it.

    pip install stable-baselines3==2.9.2
    python -m benchmark.sb3_loop [--seeds 1 2 3] [--budget 100000] [--n-steps 5 32 128] [--normalize off on]
    python -m benchmark.sb3_loop --eta-rule [--seeds 1 2 3] [--budget 100000] [--normalize off on]

SmacA2C subclasses `stable_baselines3.A2C` and overrides only `train()`: SB3's rollout buffer, its GAE (lambda 1),
its `normalize_advantage` flag (off by default), its value loss (vf_coef 0.5), its RMSprop (7e-4) with its grad
clipping (0.5, here over the critic's gradient alone) and its MlpPolicy (separate 64-64 tanh pi and vf nets) are
SB3's. The actor's step is the copy block's: smac_direction on the whole policy module (the value net's direction
is zero: the SMAC step does not write it) with lambda = 1, then kl_step_ at target 0.01 (cap 0.1), or
apply_step_ with a fixed eta. The entropy term is refused (ent_coef must be 0, SB3's default): the actor's whole
step is SMAC's.

The first command prints one row per (n_steps, normalize_advantage, seed), kl_step_ throughout. Budget, fixed
before the runs: seeds 1, 2, 3 x n_steps 5, 32, 128 x normalize_advantage off, on x 100,000 steps (18 runs).
Reading rule, fixed before the runs: a setting (n_steps, normalize_advantage) holds if every seed's last-20
episode mean reached 195 within the budget and, in every seed, eta = 0 and the cap together came in at most 1 %
of its updates. README's rule ("from 32 transitions per update") holds for a normalize setting if the settings at
32 and 128 both hold. Reported beside it, not part of the rule: each seed's last-20 mean at 100k (below 100: it
fell back after learning, or never learned).

The eta rule (`--eta-rule`), fixed before its runs. For a batch of b transitions per update too small for
kl_step_, a fixed eta computed from a short kl_step_ run at a larger batch B, in the same loop:
    eta_b = median(eta_1, ..., eta_K) * sqrt(b / B)
with eta_1..eta_K the eta kl_step_ (target 0.01) returned in its first K updates at batch B, zeros included.
Here K = 100, B = 128 (n_steps=128: 12,800 steps), b = 5 (SB3's default n_steps), lambda = 1 throughout, the
advantages normalized or not as in the run it is for. Why sqrt: at a small batch g's noise dominates, |g| grows
like 1/sqrt(b), so the step's length F~^-1 g does too, and the eta giving kl_step_'s KL per update shrinks like
sqrt(b / B). Each seed computes its own eta (its own calibration run, the seed of the run it is for), then trains
from scratch at n_steps=5 with apply_step_ at that eta. Success criterion, fixed before the runs: at n_steps=5,
at least 2 of the 3 seeds reach a last-20 mean of 195 within 100,000 steps and none ends (last-20 mean at
100,000) below 100. Judged for normalize_advantage off (SB3's default) and, separately, on.

What was run on the 2-core machine, fixed after one timing run and before the others: a kl_step_ run at
n_steps=5 took 663 s (100k steps; its row, n_steps 5, off, seed 1, was seen), too slow for the whole set within
an hour. In this order, each with seeds 1, 2, 3: `--eta-rule --normalize off` (the issue's setting, SB3's
default), then `--n-steps 32 128` (README's rule), then, as time allows, `--eta-rule --normalize on` and
`--n-steps 5`. What did not run is said where the results are (docs/drop_in.md).

tests/test_sb3_loop.py runs the subclass for a few updates (skipped without stable-baselines3).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark.foreign_loops import MAX_CHANGE, Run, at_cap, copy_block

DAMPING = 1.0  # README's lambda for kl_step_
TARGET_KL = 0.01  # kl_step_'s default (TRPO's)
CALIBRATION_UPDATES = 100  # K: the eta rule's kl_step_ updates at the larger batch
CALIBRATION_BATCH = 128  # B: the eta rule's larger batch (n_steps)
SMALL_BATCH = 5  # b: SB3's default n_steps


def fixed_eta(calibration_etas, small_batch: int, large_batch: int) -> float:
    """The eta rule: the median eta kl_step_ applied at the large batch, scaled by sqrt(small / large)."""
    return float(np.median(np.asarray(calibration_etas, dtype=float)) * np.sqrt(small_batch / large_batch))


def smac_a2c_class():
    """SmacA2C, built on first use so that this module imports without stable-baselines3."""
    import torch.nn.functional as F
    from gymnasium import spaces
    from stable_baselines3 import A2C
    from stable_baselines3.common.utils import explained_variance

    class SmacA2C(A2C):
        """SB3's A2C with the actor's step replaced by SMAC's (the copy block's functions, from `block`): kl_step_
        when eta is None, else apply_step_ at that eta. Per update the diagnostics go to `self.smac_run`."""

        def __init__(self, *args, block=None, eta=None, smac_run=None, **kwargs):
            super().__init__(*args, **kwargs)
            if self.ent_coef != 0:
                raise ValueError(
                    "SmacA2C takes no entropy term (ent_coef=0): the actor's step is SMAC's alone"
                )
            self.block = copy_block() if block is None else block
            self.eta = eta
            self.smac_run = smac_run if smac_run is not None else Run("kl" if eta is None else "fixed")

        def actor_step(self, obs, actions, direction) -> float:
            """kl_step_ (eta None) or apply_step_ at self.eta on the whole policy module, along smac_direction's
            direction (the value net's entries are zero: it is not written). Returns the eta applied."""
            if self.eta is not None:
                self.block.apply_step_(self.policy, direction, self.eta)
                return self.eta

            def log_prob_fn():  # evaluate_actions' log-probabilities without its critic's forward
                return self.policy.get_distribution(obs).log_prob(actions)

            return self.block.kl_step_(self.policy, direction, log_prob_fn, TARGET_KL, MAX_CHANGE)

        def train(self) -> None:
            """SB3's A2C.train with the actor's step SMAC's: the direction, the value loss's backward, the actor's
            step, then SB3's optimizer step (it holds every parameter; only the critic's have a gradient)."""
            self.policy.set_training_mode(True)
            self._update_learning_rate(self.policy.optimizer)
            for rollout_data in self.rollout_buffer.get(batch_size=None):
                obs = rollout_data.observations
                actions = rollout_data.actions
                if isinstance(self.action_space, spaces.Discrete):
                    actions = actions.long().flatten()
                values, log_prob, _ = self.policy.evaluate_actions(obs, actions)
                values = values.flatten()
                advantages = rollout_data.advantages
                if self.normalize_advantage:
                    advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
                value_loss = F.mse_loss(rollout_data.returns, values)
                self.policy.optimizer.zero_grad()
                # README's drop-in order: the direction (its graph kept, in case a features extractor is shared),
                # the value loss's backward, the actor's step, the optimizer's step. The value loss's gradient
                # reaches the value net only, so the optimizer's step moves the critic alone
                direction = self.block.smac_direction(
                    self.policy, log_prob, advantages, DAMPING, retain_graph=True
                )
                (self.vf_coef * value_loss).backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                eta = self.actor_step(obs, actions, direction)
                self.policy.optimizer.step()
                record_update(self.smac_run, self.policy, obs, actions, log_prob.detach(), eta, direction)
            explained_var = explained_variance(
                self.rollout_buffer.values.flatten(), self.rollout_buffer.returns.flatten()
            )
            self._n_updates += 1
            self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
            self.logger.record("train/explained_variance", explained_var)
            self.logger.record("train/value_loss", value_loss.item())
            self.logger.record("train/smac_eta", eta)

    return SmacA2C


def record_update(run: Run, policy, obs, actions, before, eta: float, direction) -> None:
    """Per update: eta, its largest parameter change (at_cap), the KL it caused, p(taken action)."""
    with torch.no_grad():
        log_ratio = policy.get_distribution(obs).log_prob(actions) - before
    run.etas.append(eta)
    run.largest_change.append(eta * direction.abs().max().item())
    run.kl.append((torch.expm1(log_ratio) - log_ratio).mean().item())
    run.taken_prob.append(before.exp().mean().item())


def episode_recorder(run: Run):
    """An SB3 callback appending each finished episode's return (SB3's Monitor) to `run`, with the step count."""
    from stable_baselines3.common.callbacks import BaseCallback

    class EpisodeRecorder(BaseCallback):
        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    run.returns.append(float(info["episode"]["r"]))
                    run.steps = self.num_timesteps
                    run.solved()
            return True

    return EpisodeRecorder()


def sb3_run(seed: int, n_steps: int, normalize: bool, budget: int, eta=None, block=None) -> Run:
    """One SmacA2C run on CartPole-v1 (SB3's defaults but n_steps and normalize_advantage): kl_step_, or
    apply_step_ at a fixed eta."""
    SmacA2C = smac_a2c_class()
    run = Run("kl" if eta is None else "fixed")
    model = SmacA2C(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=n_steps,
        normalize_advantage=normalize,
        seed=seed,
        device="cpu",
        block=block,
        eta=eta,
        smac_run=run,
    )
    model.learn(total_timesteps=budget, callback=episode_recorder(run))
    run.steps = model.num_timesteps
    model.env.close()
    return run


def sb3_row(n_steps: int, normalize: bool, seed: int, run: Run) -> str:
    """One row: returns, steps to 195, eta = 0 and cap shares, eta's and the KL's medians, late p(taken)."""
    etas = np.array(run.etas)
    tail = run.taken_prob[-max(len(run.taken_prob) // 10, 1) :]
    last = np.mean(run.returns[-20:]) if run.returns else float("nan")
    return (
        f"| {n_steps} | {'on' if normalize else 'off'} | {seed} | {len(etas)} | {last:.1f} | "
        f"{run.solved_at or 'never'} | {np.mean(etas == 0):.1%} | {np.mean(at_cap(run)):.1%} | "
        f"{np.median(etas):.3g} | {np.median(run.kl):.2e} | {np.mean(tail):.3f} |"
    )


SB3_HEADER = (
    "| n_steps | normalize_advantage | seed | updates | last-20 return at the end | steps to 195 | eta = 0 "
    "| at the cap | eta, median | KL per update, median | p(taken action), last 10% of updates |\n"
    "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def holds(runs: list) -> bool:
    """The reading rule: every seed reached 195 and had eta = 0 or the cap in at most 1 % of its updates."""
    return all(r.solved_at is not None and np.mean((np.array(r.etas) == 0) | at_cap(r)) <= 0.01 for r in runs)


def eta_rule_succeeds(runs: list) -> bool:
    """The eta rule's criterion: at least 2 of 3 seeds reached 195, none ended below 100 (last-20 mean)."""
    reached = sum(r.solved_at is not None for r in runs)
    return reached >= 2 and all(np.mean(r.returns[-20:]) >= 100 for r in runs)


def batch_size_table(opts) -> None:
    print(f"CartPole-v1, SB3 {sb3_version()} A2C, kl_step_ {TARGET_KL}, cap {MAX_CHANGE}, lambda {DAMPING}")
    print(f"{opts.budget} steps per run, seeds {opts.seeds}\n")
    print(SB3_HEADER, flush=True)
    verdicts = []
    for normalize in opts.normalize:
        for n_steps in opts.n_steps:
            runs = []
            for seed in opts.seeds:
                runs.append(sb3_run(seed, n_steps, normalize == "on", opts.budget))
                print(sb3_row(n_steps, normalize == "on", seed, runs[-1]), flush=True)
            verdicts.append(f"n_steps {n_steps}, normalize_advantage {normalize}: holds {holds(runs)}")
    print("\n" + "\n".join(verdicts), flush=True)


def eta_rule(opts) -> None:
    b = SMALL_BATCH
    B = CALIBRATION_BATCH
    K = CALIBRATION_UPDATES
    print(
        f"CartPole-v1, SB3 {sb3_version()} A2C, lambda {DAMPING}; eta rule: the median of kl_step_'s first {K}"
    )
    print(
        f"etas at n_steps={B}, times sqrt({b}/{B}); apply_step_ at it, n_steps={b}, {opts.budget} steps per run"
    )
    for normalize in opts.normalize:
        etas = {}
        for seed in opts.seeds:
            calibration = sb3_run(seed, B, normalize == "on", K * B)
            etas[seed] = fixed_eta(calibration.etas[:K], b, B)
            median = np.median(calibration.etas[:K])
            print(
                f"\nnormalize_advantage {normalize}, seed {seed}: median eta at n_steps={B}: {median:.4g}, ",
                end="",
            )
            print(f"eta at n_steps={b}: {etas[seed]:.4g}", flush=True)
        print("\n" + SB3_HEADER, flush=True)
        runs = []
        for seed in opts.seeds:
            runs.append(sb3_run(seed, b, normalize == "on", opts.budget, eta=etas[seed]))
            print(sb3_row(b, normalize == "on", seed, runs[-1]), flush=True)
        print(f"\nnormalize_advantage {normalize}: criterion met: {eta_rule_succeeds(runs)}", flush=True)


def sb3_version() -> str:
    import stable_baselines3

    return stable_baselines3.__version__


def bad_input(opts) -> str:
    """What is wrong with the flags (or a missing stable-baselines3), one line; "" if nothing."""
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        return "python -m benchmark.sb3_loop needs stable-baselines3: pip install stable-baselines3==2.9.2"
    if min(opts.seeds) < 0 or max(opts.seeds) >= 2**32:
        return f"--seeds must be in [0, 2**32), got {opts.seeds}"
    smallest = 2 if "on" in opts.normalize else 1  # a normalized advantage needs two transitions
    if min(opts.n_steps) < smallest:
        return f"--n-steps must be >= {smallest} (--normalize on normalizes over them), got {opts.n_steps}"
    batches = [SMALL_BATCH] if opts.eta_rule else opts.n_steps
    if opts.budget < max(batches):
        return f"--budget {opts.budget} holds no update of {max(batches)} steps (n_steps): give at least that"
    return ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.sb3_loop", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--n-steps", type=int, nargs="+", default=[5, 32, 128])
    parser.add_argument("--normalize", nargs="+", default=["off", "on"], choices=["off", "on"])
    parser.add_argument("--eta-rule", action="store_true", help="the fixed eta rule at n_steps=5 instead")
    opts = parser.parse_args(argv)
    error = bad_input(opts)
    if error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    if opts.eta_rule:
        eta_rule(opts)
    else:
        batch_size_table(opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
