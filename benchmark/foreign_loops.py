"""The SMAC copy block in training loops written the way other people write them, on CartPole-v1: REINFORCE
(2000-step batches, returns-to-go), A2C with one module holding a shared trunk, an actor head and a critic head
(one forward, SMAC on trunk + actor head, the value loss backpropagated after it), a PPO-style loop (1000-step
rollouts, the critic in four minibatch steps; SMAC in four minibatch steps too, or in one step on the whole
rollout), and, for the batch-size measurement, A2C in SB3's default shape (separate actor and critic). The loops
touch SMAC only through the functions a user copies (the `block` argument: a module holding them), and measure
what "Choosing eta and lambda" in README states:

    python -m benchmark.foreign_loops [--seeds 1 2] [--budget 100000] [--loops ...] [--batch-sizes 5 32 128 1000]

prints, per loop and step rule (the paper's fixed step eta = 1e-2 with lambda = 1, on normalized or raw advantages;
kl_step_ at its default target 0.01), the mean return of the last 20 episodes, the steps to reach 195, and per
update the median KL the step caused (PPO's approx_kl on the batch), |l_bar|^2 / lambda and cos(g, step), and the
share of kl_step_'s updates that kept no step or stopped below its band at the cap, its forward passes and the
largest parameter change of its steps. --batch-sizes: the two A2C loops (--batch-loops: `a2c`, separate networks,
and `a2c-shared-trunk`) with kl_step_ on rollouts of those lengths, one row per loop, rollout length and seed: the
smallest batch with which kl_step_ learns. `--loops` with no name prints the batch-size table alone.
tests/test_drop_in.py runs the kl_step_ rule with the copied block alone.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import gymnasium as gym
import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

DAMPING = 1.0  # README's setting for kl_step_; lambda then shapes the direction only
FIXED_LR = 1e-2  # the README snippet's eta (the paper's Hopper row)
SOLVED = 195.0  # CartPole-v1's old "solved" level, over the last 20 episodes
MAX_CHANGE = 0.1  # kl_step_'s cap (its default): no parameter moves by more than this in one step


class ActorCritic(torch.nn.Module):
    """One module holding a shared trunk, an actor head and a critic head (SB3's and CleanRL's Atari shape)."""

    def __init__(self, obs_dim=4, act_dim=2, width=64):
        super().__init__()
        self.trunk = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, width), torch.nn.Tanh(), torch.nn.Linear(width, width), torch.nn.Tanh()
        )
        self.actor = torch.nn.Linear(width, act_dim)
        self.critic = torch.nn.Linear(width, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.actor(h), self.critic(h).squeeze(-1)

    def actor_parameters(self):
        return list(self.trunk.parameters()) + list(self.actor.parameters())


def mlp(out: int) -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(4, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, out),
    )


class Run:
    """One loop's run: the episodes' returns, and per SMAC step its diagnostics."""

    def __init__(self, rule: str):
        self.rule = rule  # "kl", "fixed" (normalized advantages) or "fixed-raw"
        self.returns = []
        self.steps = 0
        self.solved_at = None
        self.kl = []
        self.etas = []
        self.passes = []  # kl_step_'s forward passes over the batch, per step
        self.largest_change = []  # kl_step_'s largest parameter change, per step
        self.taken_prob = []  # mean probability of the batch's taken actions before the step (1: saturated)
        self.ell_over_lambda = []
        self.cos = []
        self.episode = 0.0

    def solved(self) -> bool:
        if len(self.returns) >= 20 and np.mean(self.returns[-20:]) >= SOLVED and self.solved_at is None:
            self.solved_at = self.steps
        return self.solved_at is not None

    def advantages(self, x: np.ndarray) -> np.ndarray:
        if self.rule == "fixed-raw":
            return x
        return (x - x.mean()) / (x.std() + 1e-8)

    def smac_step(self, block, params, log_probs_fn, advantages=None, scores=None, before=None) -> None:
        """One SMAC step with the copied functions, the paper's fixed eta or kl_step_, and its diagnostics.
        scores: (l_bar, g) computed already (a shared trunk: before the critic's backward), with `before` the
        batch's log-probabilities they came from."""
        if scores is None:
            log_probs = log_probs_fn()
            scores = block.mean_score_and_gradient(params, log_probs, advantages)
            before = log_probs.detach()
        ell, g = scores
        direction = block.sherman_morrison_direction(g, ell, DAMPING)
        if self.rule == "kl":
            calls = []

            def counted_log_probs():
                calls.append(1)
                return log_probs_fn()

            self.etas.append(block.kl_step_(params, direction, counted_log_probs, max_change=MAX_CHANGE))
            self.passes.append(len(calls))
            self.largest_change.append(self.etas[-1] * direction.abs().max().item())
        else:
            block.apply_step_(params, direction, FIXED_LR)
            self.etas.append(FIXED_LR)
        with torch.no_grad():
            log_ratio = log_probs_fn() - before
            self.kl.append((torch.expm1(log_ratio) - log_ratio).mean().item())
        self.taken_prob.append(before.exp().mean().item())
        self.ell_over_lambda.append(torch.dot(ell, ell).item() / DAMPING)
        self.cos.append((torch.dot(g, direction) / (g.norm() * direction.norm() + 1e-30)).item())


def rollout(env, obs, policy, steps: int, run: Run):
    """`steps` transitions with the current policy: (next obs, arrays obs/actions/rewards/terminated/done/next_obs)."""
    out = {k: [] for k in ("obs", "actions", "rewards", "terminated", "done", "next_obs")}
    for _ in range(steps):
        with torch.no_grad():
            logits = policy(torch.as_tensor(obs, dtype=torch.float32))
        action = torch.distributions.Categorical(logits=logits).sample().item()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in zip(out, (obs, action, reward, terminated, terminated or truncated, next_obs)):
            out[key].append(value)
        run.episode = run.episode + reward
        if terminated or truncated:
            run.returns.append(run.episode)
            run.episode = 0.0
            next_obs, _ = env.reset()
        obs = next_obs
    run.steps = run.steps + steps
    return obs, {k: np.array(v) for k, v in out.items()}


def gae(data: dict, values, next_values, gamma=0.99, lam=0.95) -> np.ndarray:
    advantages = np.zeros(len(values))
    last = 0.0
    for t in reversed(range(len(values))):
        bootstrap = 0.0 if data["terminated"][t] else next_values[t]
        last = data["rewards"][t] + gamma * bootstrap - values[t] + gamma * lam * (1 - data["done"][t]) * last
        advantages[t] = last
    return advantages


def critic_gae(critic, data: dict, o: torch.Tensor, lam=0.95) -> tuple:
    """GAE advantages on a separate critic's values, and the critic's targets (advantages + values)."""
    with torch.no_grad():
        values = critic(o).squeeze(-1).numpy()
        next_values = critic(torch.as_tensor(data["next_obs"], dtype=torch.float32)).squeeze(-1).numpy()
    advantages = gae(data, values, next_values, lam=lam)
    return advantages, torch.as_tensor(advantages + values, dtype=torch.float32)


def log_probs_of(policy, o: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    """log pi(a|o) under the policy's logits, computed afresh: partial(log_probs_of, policy, o, a) is a loop's
    log_prob_fn."""
    return torch.distributions.Categorical(logits=policy(o)).log_prob(a)


def reinforce(block, env, obs, run: Run, budget: int, stop_when_solved=True) -> None:
    policy = mlp(2)
    while run.steps < budget:
        obs, data = rollout(env, obs, policy, 2000, run)
        if run.solved() and stop_when_solved:
            return
        to_go = np.zeros(2000)
        g = 0.0
        for t in reversed(range(2000)):  # returns-to-go, cut where an episode ends
            g = data["rewards"][t] + 0.99 * g * (1 - data["done"][t])
            to_go[t] = g
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])
        run.smac_step(block, policy, functools.partial(log_probs_of, policy, o, a), run.advantages(to_go))


def a2c_shared_trunk(
    block, env, obs, run: Run, budget: int, stop_when_solved=True, rollout_steps=1000
) -> None:
    net = ActorCritic()
    critic_opt = torch.optim.Adam(list(net.trunk.parameters()) + list(net.critic.parameters()), lr=1e-3)

    def act(o):
        return net(o)[0]

    while run.steps < budget:
        obs, data = rollout(env, obs, act, rollout_steps, run)
        if run.solved() and stop_when_solved:
            return
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])
        logits, values = net(o)  # one forward for both heads
        with torch.no_grad():
            next_values = net(torch.as_tensor(data["next_obs"], dtype=torch.float32))[1].numpy()
        advantages = gae(data, values.detach().numpy(), next_values)
        targets = torch.as_tensor(advantages + values.detach().numpy(), dtype=torch.float32)
        log_probs = torch.distributions.Categorical(logits=logits).log_prob(a)
        new_log_probs = functools.partial(log_probs_of, act, o, a)
        # the SMAC direction keeps the graph (retain_graph) for the value loss's backward through the trunk; the
        # actor's step is applied after that backward, the critic's Adam step last
        params = net.actor_parameters()
        scores = block.mean_score_and_gradient(params, log_probs, run.advantages(advantages), True)
        critic_opt.zero_grad()
        (targets - values).pow(2).mean().backward()
        run.smac_step(block, params, new_log_probs, scores=scores, before=log_probs.detach())
        critic_opt.step()


def a2c(block, env, obs, run: Run, budget: int, stop_when_solved=True, rollout_steps=5) -> None:
    """A2C in SB3's default shape: separate actor and critic MLPs (64-64 tanh), rollouts of `rollout_steps`
    transitions (SB3's n_steps, 5 by default) with returns bootstrapped by the critic (GAE lambda 1, SB3's), one
    SMAC step on the actor and one critic step (RMSprop at 7e-4, SB3's) per rollout."""
    actor = mlp(2)
    critic = mlp(1)
    critic_opt = torch.optim.RMSprop(critic.parameters(), lr=7e-4, alpha=0.99, eps=1e-5)
    while run.steps < budget:
        obs, data = rollout(env, obs, actor, rollout_steps, run)
        if run.solved() and stop_when_solved:
            return
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])
        advantages, targets = critic_gae(critic, data, o, lam=1.0)
        run.smac_step(block, actor, functools.partial(log_probs_of, actor, o, a), run.advantages(advantages))
        critic_opt.zero_grad()
        (targets - critic(o).squeeze(-1)).pow(2).mean().backward()
        critic_opt.step()


def ppo_style(block, env, obs, run: Run, budget: int, stop_when_solved=True, per_minibatch=True) -> None:
    """1000-step rollouts, four minibatches: a critic step on each, and a SMAC step on each (per_minibatch) or one
    SMAC step on the whole rollout before them."""
    actor = mlp(2)
    critic = mlp(1)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    while run.steps < budget:
        obs, data = rollout(env, obs, actor, 1000, run)
        if run.solved() and stop_when_solved:
            return
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])
        advantages, targets = critic_gae(critic, data, o)
        if not per_minibatch:
            log_probs = functools.partial(log_probs_of, actor, o, a)
            run.smac_step(block, actor, log_probs, run.advantages(advantages))
        for idx in torch.randperm(1000).chunk(4):
            if per_minibatch:  # several SMAC steps per rollout
                log_probs = functools.partial(log_probs_of, actor, o[idx], a[idx])
                run.smac_step(block, actor, log_probs, run.advantages(advantages[idx.numpy()]))
            critic_opt.zero_grad()
            (targets[idx] - critic(o[idx]).squeeze(-1)).pow(2).mean().backward()
            critic_opt.step()


def ppo_one_step(block, env, obs, run: Run, budget: int, stop_when_solved=True) -> None:
    """The PPO-style loop with one SMAC step per rollout, on the whole rollout."""
    ppo_style(block, env, obs, run, budget, stop_when_solved, per_minibatch=False)


LOOPS = {
    "reinforce": reinforce,
    "a2c-shared-trunk": a2c_shared_trunk,
    "ppo-style": ppo_style,
    "ppo-one-step": ppo_one_step,
}

BATCH_LOOPS = {"a2c": a2c, "a2c-shared-trunk": a2c_shared_trunk}  # --batch-sizes: rollout_steps


def copy_block():
    """What a user copies, from where it lives: smac_a2c.py's step (its copy block's functions) and smac_kl.py's
    kl_step_, as one namespace (the tests build theirs from the copied source: helpers.load_copy_block)."""
    import types

    import smac_a2c
    import smac_kl

    return types.SimpleNamespace(
        mean_score_and_gradient=smac_a2c.mean_score_and_gradient,
        sherman_morrison_direction=smac_a2c.sherman_morrison_direction,
        smac_direction=smac_a2c.smac_direction,
        apply_step_=smac_a2c.apply_step_,
        kl_step_=smac_kl.kl_step_,
    )


def run_loop(block, loop: str, rule: str, seed: int, budget: int, stop_when_solved=True, **options) -> Run:
    torch.manual_seed(seed)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    run = Run(rule)
    {**LOOPS, **BATCH_LOOPS}[loop](block, env, obs, run, budget, stop_when_solved, **options)
    run.solved()
    env.close()
    return run


def row(name: str, rule: str, runs: list) -> str:
    """One table row: returns, steps to 195, medians of the per-update diagnostics, kl_step_'s refusals and caps."""
    last = ", ".join(f"{np.mean(r.returns[-20:]):.0f}" for r in runs)
    solved = ", ".join(str(r.solved_at) if r.solved_at else "never" for r in runs)
    kl = np.concatenate([r.kl for r in runs])
    ell = np.median(np.concatenate([r.ell_over_lambda for r in runs]))
    cos = np.median(np.concatenate([r.cos for r in runs]))
    etas = np.concatenate([r.etas for r in runs])
    if rule == "kl":
        no_step = np.mean(etas == 0)
        below = np.mean((etas > 0) & (kl < 0.005))
        passes = np.concatenate([r.passes for r in runs])
        change = np.concatenate([r.largest_change for r in runs])
        kl_step = (
            f"{no_step:.1%} / {below:.1%} / {np.median(passes):.0f} ({passes.max()}) / "
            f"{np.median(change):.2g} ({np.percentile(change, 99):.2g}, {change.max():.2g})"
        )
    else:
        kl_step = "-"
    return f"| {name} | {last} | {solved} | {np.median(kl):.2e} | {ell:.3f} | {cos:.4f} | {kl_step} |"


HEADER = (
    "| loop | step | last-20 return per seed | steps to 195 | KL per update | |l_bar|^2/lambda | cos(g, step) "
    "| kl_step_: no step / below the band / forward passes, median (max) / largest parameter change, median "
    "(99th percentile, max) |\n|---|---|---|---|---|---|---|---|"
)
RULES = {"fixed": "eta 1e-2, normalized A", "fixed-raw": "eta 1e-2, raw A", "kl": "kl_step_ 0.01"}


def at_cap(run: Run) -> np.ndarray:
    """Per kl_step_ update: True where its step moved some parameter by max_change, the cap."""
    return np.isclose(np.array(run.largest_change), MAX_CHANGE, rtol=1e-6, atol=0.0)


def batch_row(loop: str, size: int, seed: int, run: Run) -> str:
    """One batch-size row: kl_step_ in `loop` on rollouts of `size` transitions, one seed."""
    etas = np.array(run.etas)
    tail = run.taken_prob[-max(len(run.taken_prob) // 10, 1) :]
    last = np.mean(run.returns[-20:]) if run.returns else float("nan")
    return (
        f"| {loop} | {size} | {seed} | {len(etas)} | {last:.1f} | {run.solved_at or 'never'} | "
        f"{np.mean(etas == 0):.1%} | {np.mean(at_cap(run)):.1%} | {np.median(run.kl):.2e} | {np.mean(tail):.3f} |"
    )


BATCH_HEADER = (
    "| loop | transitions per update | seed | updates | last-20 return | steps to 195 | eta = 0 | at the cap "
    "| KL per update, median | p(taken action), last 10% of updates |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.foreign_loops", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="*",
        default=[],
        help="A2C rollouts for kl_step_ (e.g. 5 32 128 1000)",
    )
    parser.add_argument(
        "--batch-loops",
        nargs="+",
        default=list(BATCH_LOOPS),
        choices=list(BATCH_LOOPS),
        help="for --batch-sizes",
    )
    parser.add_argument("--loops", nargs="*", default=list(LOOPS), choices=list(LOOPS))
    opts = parser.parse_args(argv)
    torch.set_num_threads(1)
    block = copy_block()
    print(f"CartPole-v1, {opts.budget} steps per run, seeds {opts.seeds}, lambda = {DAMPING}")
    if opts.loops:
        print(HEADER)
    for loop in opts.loops:
        for rule in RULES:
            runs = [
                run_loop(block, loop, rule, seed, opts.budget, stop_when_solved=False) for seed in opts.seeds
            ]
            print(row(f"{loop} | {RULES[rule]}", rule, runs), flush=True)
    if opts.batch_sizes:
        print(f"\nkl_step_ at its default target 0.01, cap {MAX_CHANGE}, on rollouts of {opts.batch_sizes}")
        print(BATCH_HEADER)
    for loop in opts.batch_loops:
        for size in opts.batch_sizes:
            for seed in opts.seeds:
                run = run_loop(block, loop, "kl", seed, opts.budget, False, rollout_steps=size)
                print(batch_row(loop, size, seed, run), flush=True)


if __name__ == "__main__":
    main()
