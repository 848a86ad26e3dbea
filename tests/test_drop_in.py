"""The copy block in other people's loops (issue 46), using only the functions a user copies (helpers.load_copy_block,
`import torch` alone): a whole actor-critic module, a shared trunk, inputs given the wrong way, and three loop
shapes nobody here wrote (REINFORCE, A2C with a shared trunk, PPO-style minibatches) learning CartPole-v1 with the
README's settings: damping 1, kl_step_ at its default target 0.01, normalized advantages."""

import gymnasium as gym
import helpers
import numpy as np
import pytest
import torch

BLOCK = helpers.load_copy_block()
DAMPING = 1.0  # README's "Choosing eta and lambda": lambda = 1 with kl_step_'s default target


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


def separate_heads(seed=0):
    """An actor MLP and a critic MLP in one module (SB3's MlpPolicy shape): no parameter shared."""
    torch.manual_seed(seed)
    module = torch.nn.ModuleDict(
        {
            "pi": torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)),
            "vf": torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)),
        }
    )
    return module


def batch(n=32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, 4, generator=gen),
        torch.randint(0, 2, (n,), generator=gen),
        torch.randn(n, generator=gen),
    )


# ---- 1. the whole policy module: the critic's parameters are not touched -----------------------------------------
def test_a_whole_actor_critic_module_leaves_the_critic_alone():
    """SB3's A2C builds the value loss, then the policy step runs, then the value loss's backward: apply_step_ on the
    whole module used to add 0 in place to the critic's weights, and that backward failed."""
    module = separate_heads()
    obs, actions, adv = batch()
    values = module["vf"](obs).squeeze(-1)
    value_loss = (values - adv).pow(2).mean()  # its graph holds the critic's weights
    critic_before = [p.detach().clone() for p in module["vf"].parameters()]
    versions = [p._version for p in module["vf"].parameters()]
    log_probs = torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)
    direction = BLOCK.smac_direction(module, log_probs, adv, DAMPING)
    BLOCK.apply_step_(module, direction, 0.1)
    value_loss.backward()  # raised "modified by an inplace operation" before
    assert all(torch.equal(p, q) for p, q in zip(module["vf"].parameters(), critic_before))
    assert [p._version for p in module["vf"].parameters()] == versions  # not even a zero added


# ---- 2. a shared trunk: the graph kept for the critic's backward ---------------------------------------------------
def test_a_shared_trunk_keeps_its_graph_for_the_critic():
    torch.manual_seed(0)
    net = ActorCritic(width=8)
    obs, actions, adv = batch()
    logits, values = net(obs)  # one forward for both heads
    log_probs = torch.distributions.Categorical(logits=logits).log_prob(actions)
    direction = BLOCK.smac_direction(net.actor_parameters(), log_probs, adv, DAMPING, retain_graph=True)
    (values - adv).pow(2).mean().backward()  # through the trunk again: needs the kept graph
    assert all(p.grad is not None for p in net.trunk.parameters())
    # the direction is the explicit solve on the actor's parameters (trunk and actor head)
    params = net.actor_parameters()
    rows = []
    for i in range(len(obs)):
        logp = (
            torch.distributions.Categorical(logits=net(obs[i : i + 1])[0]).log_prob(actions[i : i + 1]).sum()
        )
        rows.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(logp, params)]))
    scores = torch.stack(rows).double()
    ell, g = scores.mean(0), (scores * adv.double()[:, None]).mean(0)
    explicit = torch.linalg.solve(
        DAMPING * torch.eye(ell.numel(), dtype=torch.float64) + torch.outer(ell, ell), g
    )
    torch.testing.assert_close(direction.double(), explicit, rtol=1e-4, atol=1e-6)


# ---- 4. inputs given the wrong way: accepted, or refused with the fix named ----------------------------------------
def test_numpy_advantages_are_accepted():
    module = separate_heads()
    obs, actions, adv = batch()

    def log_probs():
        return torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)

    from_numpy = BLOCK.smac_direction(module["pi"], log_probs(), adv.numpy().astype(np.float64), DAMPING)
    from_tensor = BLOCK.smac_direction(module["pi"], log_probs(), adv, DAMPING)
    torch.testing.assert_close(from_numpy, from_tensor)


@pytest.mark.parametrize("mistake", ["no_grad", "used-up generator", "damping 0"])
def test_input_mistakes_are_refused_with_a_message(mistake):
    module = separate_heads()
    obs, actions, adv = batch()
    params = module["pi"].parameters()  # a generator
    damping = 0.0 if mistake == "damping 0" else DAMPING
    if mistake == "no_grad":
        with torch.no_grad():
            log_probs = torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)
    else:
        log_probs = torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)
    if mistake == "used-up generator":
        direction = BLOCK.smac_direction(params, log_probs, adv, damping)  # uses the generator up
        with pytest.raises(ValueError, match="generator"):
            BLOCK.apply_step_(params, direction, 0.1)
        return
    with pytest.raises(ValueError, match="no_grad" if mistake == "no_grad" else "damping"):
        BLOCK.smac_direction(params, log_probs, adv, damping)


# ---- kl_step_: the measured KL lands at the target -------------------------------------------------------------------
def test_kl_step_moves_the_policy_by_the_target_kl():
    module = separate_heads()
    obs, actions, adv = batch(n=256)

    def log_probs():
        return torch.distributions.Categorical(logits=module["pi"](obs)).log_prob(actions)

    with torch.no_grad():
        before = torch.distributions.Categorical(logits=module["pi"](obs))
    direction = BLOCK.smac_direction(module["pi"], log_probs(), adv, DAMPING)
    eta = BLOCK.kl_step_(module["pi"], direction, log_probs, target_kl=0.01)
    with torch.no_grad():
        after = torch.distributions.Categorical(logits=module["pi"](obs))
        log_ratio = after.log_prob(actions) - before.log_prob(actions)
        approx_kl = (torch.expm1(log_ratio) - log_ratio).mean().item()
        exact_kl = torch.distributions.kl_divergence(before, after).mean().item()
    assert eta > 0 and 0.005 <= approx_kl <= 0.015
    assert 0.002 <= exact_kl <= 0.03  # the estimator on 256 taken actions tracks the exact KL of the batch


# ---- three loops nobody here wrote, CartPole-v1, the README's settings ------------------------------------------------
def rollout(env, obs, policy, steps, episode):
    """`steps` transitions with the current policy: arrays (obs, actions, rewards, terminated, done, next_obs)."""
    out = {k: [] for k in ("obs", "actions", "rewards", "terminated", "done", "next_obs")}
    returns = []
    for _ in range(steps):
        with torch.no_grad():
            logits = policy(torch.as_tensor(obs, dtype=torch.float32))
        action = torch.distributions.Categorical(logits=logits).sample().item()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        for key, value in zip(out, (obs, action, reward, terminated, terminated or truncated, next_obs)):
            out[key].append(value)
        episode[0] = episode[0] + reward
        if terminated or truncated:
            returns.append(episode[0])
            episode[0] = 0.0
            next_obs, _ = env.reset()
        obs = next_obs
    return obs, {k: np.array(v) for k, v in out.items()}, returns


def gae(data, values, next_values, gamma=0.99, lam=0.95):
    advantages = np.zeros(len(values))
    last = 0.0
    for t in reversed(range(len(values))):
        bootstrap = 0.0 if data["terminated"][t] else next_values[t]
        last = data["rewards"][t] + gamma * bootstrap - values[t] + gamma * lam * (1 - data["done"][t]) * last
        advantages[t] = last
    return advantages


def normalized(x):
    return (x - x.mean()) / (x.std() + 1e-8)


def mlp(out):
    return torch.nn.Sequential(
        torch.nn.Linear(4, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, out),
    )


def reinforce(env, obs, returns_log, budget):
    policy = mlp(2)
    episode = [0.0]
    for _ in range(budget // 2000):
        obs, data, returns = rollout(env, obs, policy, 2000, episode)
        returns_log += returns
        if len(returns_log) >= 20 and np.mean(returns_log[-20:]) >= 195:
            return
        to_go = np.zeros(2000)
        g = 0.0
        for t in reversed(range(2000)):  # returns-to-go, cut where an episode ends
            g = data["rewards"][t] + 0.99 * g * (1 - data["done"][t])
            to_go[t] = g
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])

        def log_probs(o=o, a=a):
            return torch.distributions.Categorical(logits=policy(o)).log_prob(a)

        direction = BLOCK.smac_direction(policy, log_probs(), normalized(to_go), DAMPING)
        BLOCK.kl_step_(policy, direction, log_probs)


def a2c_shared_trunk(env, obs, returns_log, budget):
    net = ActorCritic()
    critic_opt = torch.optim.Adam(list(net.trunk.parameters()) + list(net.critic.parameters()), lr=1e-3)
    episode = [0.0]

    def act(o):
        return net(o)[0]

    for _ in range(budget // 1000):
        obs, data, returns = rollout(env, obs, act, 1000, episode)
        returns_log += returns
        if len(returns_log) >= 20 and np.mean(returns_log[-20:]) >= 195:
            return
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])
        logits, values = net(o)  # one forward for both heads
        with torch.no_grad():
            next_values = net(torch.as_tensor(data["next_obs"], dtype=torch.float32))[1].numpy()
        advantages = gae(data, values.detach().numpy(), next_values)
        targets = torch.as_tensor(advantages + values.detach().numpy(), dtype=torch.float32)
        log_probs = torch.distributions.Categorical(logits=logits).log_prob(a)
        direction = BLOCK.smac_direction(
            net.actor_parameters(), log_probs, normalized(advantages), DAMPING, True
        )
        critic_opt.zero_grad()
        (targets - values).pow(2).mean().backward()  # through the trunk: the graph smac_direction kept

        def new_log_probs(o=o, a=a):
            return torch.distributions.Categorical(logits=net(o)[0]).log_prob(a)

        BLOCK.kl_step_(net.actor_parameters(), direction, new_log_probs)
        critic_opt.step()


def ppo_style(env, obs, returns_log, budget, minibatches=4):
    actor, critic = mlp(2), mlp(1)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    episode = [0.0]
    for _ in range(budget // 1000):
        obs, data, returns = rollout(env, obs, actor, 1000, episode)
        returns_log += returns
        if len(returns_log) >= 20 and np.mean(returns_log[-20:]) >= 195:
            return
        o = torch.as_tensor(data["obs"], dtype=torch.float32)
        a = torch.as_tensor(data["actions"])
        with torch.no_grad():
            values = critic(o).squeeze(-1).numpy()
            next_values = critic(torch.as_tensor(data["next_obs"], dtype=torch.float32)).squeeze(-1).numpy()
        advantages = gae(data, values, next_values)
        targets = torch.as_tensor(advantages + values, dtype=torch.float32)
        for idx in torch.randperm(1000).chunk(minibatches):  # several SMAC steps per rollout

            def log_probs(o=o[idx], a=a[idx]):
                return torch.distributions.Categorical(logits=actor(o)).log_prob(a)

            direction = BLOCK.smac_direction(actor, log_probs(), normalized(advantages[idx.numpy()]), DAMPING)
            BLOCK.kl_step_(actor, direction, log_probs)
            critic_opt.zero_grad()
            (targets[idx] - critic(o[idx]).squeeze(-1)).pow(2).mean().backward()
            critic_opt.step()


LOOPS = {"reinforce": reinforce, "a2c-shared-trunk": a2c_shared_trunk, "ppo-style": ppo_style}
BUDGET = 200_000  # steps per run; every loop stops once the last 20 episodes average >= 195


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("loop", list(LOOPS))
def test_the_copied_block_learns_cartpole_in_foreign_loops(loop, seed):
    torch.manual_seed(seed)
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=seed)
    returns = []
    LOOPS[loop](env, obs, returns, BUDGET)
    assert len(returns) >= 20 and np.mean(returns[-20:]) >= 195, (loop, seed, np.mean(returns[-20:]))
