"""The lab's trainer (benchmark/trainer.py): its math against explicit computations (Sherman-Morrison, GAE, the
batch-mean and per-sample SMAC steps, the rollout policy, autoreset transitions, in both trainers), then its runs
end to end (smoke runs, learning CartPole, seeds, checkpoint, resume and evaluation, --help)."""

import ast
import csv
import json
import os
import signal
import subprocess
import sys
from fractions import Fraction

import gymnasium as gym
import numpy as np
import pytest
import torch
from helpers import (
    evaluation,
    only_run,
    per_sample_grads,
    run_main,
    tiny_actor,
    tiny_batch,
)

import smac_a2c
from benchmark import trainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------------------------
# Sherman-Morrison direction
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(40))
def test_sherman_morrison_matches_explicit_solve(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 200))
    damping = float(10.0 ** rng.uniform(-4, 4))
    ell = torch.tensor(rng.normal(size=d) * 10.0 ** rng.uniform(-2, 2), dtype=torch.float64)
    g = torch.tensor(rng.normal(size=d) * 10.0 ** rng.uniform(-2, 2), dtype=torch.float64)
    F = damping * torch.eye(d, dtype=torch.float64) + torch.outer(ell, ell)
    expected = torch.linalg.solve(F, g)
    got = trainer.sherman_morrison_direction(g, ell, damping)
    scale = torch.linalg.norm(g) / damping  # |F^-1| |g|
    # The exact solution, in rational arithmetic on the same float64 inputs, checked to solve
    # (lambda I + l l^T) x = g exactly: the closed form is within rounding of it.
    ell_q = [Fraction(v) for v in ell.tolist()]
    g_q = [Fraction(v) for v in g.tolist()]
    lam_q = Fraction(damping)
    c = sum(a * b for a, b in zip(ell_q, g_q)) / (lam_q + sum(a * a for a in ell_q))
    exact = [(gi - li * c) / lam_q for gi, li in zip(g_q, ell_q)]
    ell_dot_exact = sum(a * b for a, b in zip(ell_q, exact))
    assert all(lam_q * x + li * ell_dot_exact == gi for x, li, gi in zip(exact, ell_q, g_q))
    exact = torch.tensor([float(x) for x in exact], dtype=torch.float64)
    assert torch.linalg.norm(got - exact) <= 1e-14 * scale
    # Against the explicit solve: LAPACK's LU is backward stable, so its own forward error reaches
    # cond(F) * eps * |x| (cond(F) = (lambda + |l|^2) / lambda, up to ~1e8 here), and it moves with the
    # thread count (seed 26: 6.1e-10 |g|/lambda with two threads, 1.3e-9 with one).
    cond = (damping + ell @ ell) / damping
    eps = torch.finfo(torch.float64).eps
    assert torch.linalg.norm(got - expected) <= (1e-12 + 10 * cond * eps) * scale
    # and F applied to the direction gives g back, up to the backward error eps * |F| |x|
    residual = torch.linalg.norm(F @ got - g)
    assert residual <= 1e-12 * (damping + ell @ ell) * torch.linalg.norm(got) + 1e-14 * torch.linalg.norm(g)


def test_one_sample_identity():
    """For g = l A, l is an eigenvector of F: F^-1 (l A) = l A / (lambda + |l|^2)."""
    rng = np.random.default_rng(0)
    for damping in [1e-4, 1e-2, 1.0, 1e2, 1e4]:
        ell = torch.tensor(rng.normal(size=50), dtype=torch.float64)
        A = float(rng.normal())
        got = trainer.sherman_morrison_direction(ell * A, ell, damping)
        expected = ell * A / (damping + ell @ ell)
        # g - l(l.g)/(lambda+|l|^2) cancels to a residue ~lambda/|l|^2 of g, then is divided by
        # lambda: the relative rounding error is ~eps (lambda + |l|^2) / lambda
        rtol = 1e-14 * (damping + ell @ ell).item() / damping
        assert torch.linalg.norm(got - expected) <= rtol * torch.linalg.norm(expected)


def test_sherman_morrison_float32_and_zero_score():
    g = torch.randn(1000)
    assert torch.equal(trainer.sherman_morrison_direction(g, torch.zeros(1000), 2.0), g / 2.0)
    assert trainer.sherman_morrison_direction(g, torch.randn(1000), 0.5).dtype == torch.float32


def test_sherman_morrison_ten_million_parameters():
    """d = 1e7: a d x d float64 matrix would need 800 TB; the closed form needs a few vectors.
    With g = 3 l + u, u orthogonal to l, the exact answer is 3 l / (lambda + |l|^2) + u / lambda."""
    d, damping = 10_000_000, 2.0
    gen = torch.Generator().manual_seed(0)
    ell = torch.randn(d, generator=gen, dtype=torch.float64) / 1000.0
    u = torch.randn(d, generator=gen, dtype=torch.float64)
    u -= ell * (ell @ u) / (ell @ ell)
    step = trainer.sherman_morrison_direction(3.0 * ell + u, ell, damping)
    expected = 3.0 * ell / (damping + ell @ ell) + u / damping
    assert torch.linalg.norm(step - expected) <= 1e-12 * torch.linalg.norm(expected)


# ------------------------------------------------------------------------------------
# GAE
# ------------------------------------------------------------------------------------
def naive_gae(rewards, values, next_values, terms, dones, gamma, lam):
    """Double loop straight from the definition: A_t = sum_l (gamma lam)^l delta_{t+l}, cut at episode ends."""
    T, N = rewards.shape
    adv = np.zeros((T, N))
    for n in range(N):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                delta = rewards[k, n] + gamma * next_values[k, n] * (1 - terms[k, n]) - values[k, n]
                total += coef * delta
                if dones[k, n]:
                    break
                coef *= gamma * lam
            adv[t, n] = total
    return adv


def test_gae_matches_naive_double_loop_with_terminations_and_truncations():
    rng = np.random.default_rng(0)
    T, N = 50, 3
    rewards, values, next_values = rng.normal(size=(T, N)), rng.normal(size=(T, N)), rng.normal(size=(T, N))
    terms = np.zeros((T, N))
    truncs = np.zeros((T, N))
    terms[[7, 30], 0] = 1
    truncs[[12, 40], 1] = 1
    terms[20, 2], truncs[21, 2] = 1, 1
    dones = np.maximum(terms, truncs)
    adv, ret = trainer.compute_gae(rewards, values, next_values, terms, dones, 0.99, 0.9)
    np.testing.assert_allclose(
        adv, naive_gae(rewards, values, next_values, terms, dones, 0.99, 0.9), atol=1e-12
    )
    np.testing.assert_allclose(ret, adv + values)
    # a truncated step bootstraps from V(final obs); a terminated one does not
    t = 12
    assert np.isclose(adv[t, 1], rewards[t, 1] + 0.99 * next_values[t, 1] - values[t, 1])
    assert np.isclose(adv[7, 0], rewards[7, 0] - values[7, 0])


# ------------------------------------------------------------------------------------
# Gradients: batch-mean l_bar and g, per-sample Algorithm 1
# ------------------------------------------------------------------------------------
@pytest.mark.parametrize("discrete", [True, False])
def test_batch_mean_score_and_gradient_equal_mean_of_per_sample_gradients(discrete):
    actor = tiny_actor(discrete)
    batch = tiny_batch(actor)
    ell_bar, g = trainer.mean_score_and_policy_gradient(
        actor, batch["obs"], batch["actions"], batch["advantages"]
    )
    scores = per_sample_grads(actor, batch)  # (B, d) rows: grad log pi(a_i|s_i)
    torch.testing.assert_close(ell_bar, scores.mean(0), rtol=1e-12, atol=1e-13)
    torch.testing.assert_close(g, (scores * batch["advantages"][:, None]).mean(0), rtol=1e-12, atol=1e-13)
    # and both equal plain autograd on the two objectives
    params = list(actor.parameters())
    logp = actor.log_prob(batch["obs"], batch["actions"])
    torch.testing.assert_close(g, trainer.flat_grad((logp * batch["advantages"]).mean(), params))


@pytest.mark.parametrize("discrete", [True, False])
def test_smac_batch_mean_step_is_explicit_natural_gradient_step(discrete):
    actor = tiny_actor(discrete)
    batch = tiny_batch(actor)
    args = trainer.Args(learning_rate=0.3, damping=0.05)
    theta0 = torch.nn.utils.parameters_to_vector(actor.parameters()).detach().clone()
    scores = per_sample_grads(actor, batch)
    ell_bar, g = scores.mean(0), (scores * batch["advantages"][:, None]).mean(0)
    F = args.damping * torch.eye(len(theta0), dtype=torch.float64) + torch.outer(ell_bar, ell_bar)
    expected = theta0 + args.learning_rate * torch.linalg.solve(F, g)  # ascent on J
    trainer.smac_step(actor, batch, args, {})
    torch.testing.assert_close(
        torch.nn.utils.parameters_to_vector(actor.parameters()), expected, rtol=1e-10, atol=1e-12
    )


@pytest.mark.parametrize("discrete", [True, False])
def test_per_sample_mode_equals_hand_written_algorithm_1(discrete):
    actor = tiny_actor(discrete)
    reference = tiny_actor(discrete)
    batch = tiny_batch(actor, B=12)
    args = trainer.Args(learning_rate=0.2, damping=0.5, fisher="per-sample")
    trainer.smac_step(actor, batch, args, {})
    # Algorithm 1 by hand with explicit matrices: for each sample, at the current theta
    params = list(reference.parameters())
    for i in range(12):
        theta = torch.nn.utils.parameters_to_vector(params).detach()
        ell = trainer.flat_grad(
            reference.log_prob(batch["obs"][i : i + 1], batch["actions"][i : i + 1]).sum(), params
        )
        F = args.damping * torch.eye(len(theta), dtype=torch.float64) + torch.outer(ell, ell)
        new = theta + args.learning_rate * torch.linalg.solve(F, ell * batch["advantages"][i])
        torch.nn.utils.vector_to_parameters(new, params)
    torch.testing.assert_close(
        torch.nn.utils.parameters_to_vector(actor.parameters()),
        torch.nn.utils.parameters_to_vector(params),
        rtol=1e-10,
        atol=1e-12,
    )


def test_sgd_step_is_theta_plus_eta_g():
    actor = tiny_actor(False)
    batch = tiny_batch(actor)
    theta0 = torch.nn.utils.parameters_to_vector(actor.parameters()).detach().clone()
    g = (per_sample_grads(actor, batch) * batch["advantages"][:, None]).mean(0)
    trainer.sgd_step(actor, batch, trainer.Args(learning_rate=0.1), {})
    torch.testing.assert_close(torch.nn.utils.parameters_to_vector(actor.parameters()), theta0 + 0.1 * g)


def test_rollout_policy_matches_torch_actor_and_samples_correctly():
    for discrete in (True, False):
        actor = tiny_actor(discrete)
        obs = np.random.default_rng(0).normal(size=(6, 5))
        np.testing.assert_allclose(
            trainer.RolloutPolicy(actor).forward(obs),
            actor(torch.tensor(obs)).detach().numpy(),
            rtol=1e-12,
            atol=1e-12,
        )
    # Gumbel-max sampling frequencies match softmax probabilities
    actor = tiny_actor(True)
    policy = trainer.RolloutPolicy(actor)
    obs = np.zeros((200_000, 5))
    counts = np.bincount(policy.sample(obs, np.random.default_rng(1)), minlength=3) / 200_000
    probs = torch.softmax(actor(torch.zeros(1, 5, dtype=torch.float64)), -1)[0].detach().numpy()
    np.testing.assert_allclose(counts, probs, atol=4e-3)  # 4 sigma of a binomial at n = 2e5


# ------------------------------------------------------------------------------------
# Environment stepping: autoreset semantics and truncation bootstrap
# ------------------------------------------------------------------------------------
class CounterEnv(gym.Env):
    """obs = [episode id, step within episode]; terminates after `length` steps if
    terminate=True, otherwise runs until the TimeLimit truncates it."""

    def __init__(self, length=5, terminate=True):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = gym.spaces.Discrete(2)
        self.length, self.terminate, self.episode, self.t = length, terminate, -1, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.episode, self.t = self.episode + 1, 0
        return np.array([self.episode, 0.0]), {}

    def step(self, action):
        self.t += 1
        return np.array([self.episode, self.t]), 1.0, self.terminate and self.t >= self.length, False, {}


gym.register("CounterTerminate-v0", entry_point=lambda: CounterEnv(5, True))
gym.register("CounterTruncate-v0", entry_point=lambda: CounterEnv(5, False), max_episode_steps=4)


class RecordingCritic(torch.nn.Module):
    """V(s) = s[..., 1], the step within the episode; records every batch of states it is asked about."""

    def __init__(self):
        super().__init__()
        self.w, self.inputs = torch.nn.Parameter(torch.zeros(())), []

    def forward(self, obs):
        self.inputs.append(obs.detach().clone())
        return obs[..., 1] + 0.0 * self.w


@pytest.mark.parametrize(
    "env_id,ep_len,terminated,bootstrap",
    [
        ("CounterTerminate-v0", 5, True, True),
        ("CounterTruncate-v0", 4, False, True),
        ("CounterTruncate-v0", 4, False, False),
    ],
)
@pytest.mark.parametrize("entry", ["reference", "lab"])
def test_autoreset_transitions(tmp_path, monkeypatch, entry, env_id, ep_len, terminated, bootstrap):
    """Each loop (smac_a2c.train, the lab's train_loop) on 2 envs x 23 steps: every stored transition is real
    (next_obs[t] is the step after obs[t] in the same episode, the final observation when it ended, never the next
    episode's reset observation), the step after a done starts the new episode at step 0, a termination
    zeroes the bootstrap and a truncation bootstraps from V(final observation) (unless the lab's
    --no-bootstrap-truncation). Checked on what the critic is asked about and on the advantages (lambda_GAE = 0)."""
    import smac_a2c

    if entry == "reference" and not bootstrap:
        pytest.skip("--no-bootstrap-truncation is the lab's")
    critic, batches = RecordingCritic(), []
    common = dict(num_envs=2, num_steps=23, total_timesteps=46, gae_lambda=0.0, gamma=0.9, learning_rate=1e-9)
    if entry == "reference":

        def reference_networks(args, obs_dim, act_dim, discrete, device="cpu"):
            return smac_a2c.Actor(obs_dim, act_dim, discrete, args.hidden_sizes), critic

        real_step = smac_a2c.smac_batch_mean_step

        def reference_step(actor, batch, args):
            batches.append(batch)
            return real_step(actor, batch, args)

        monkeypatch.setattr(smac_a2c, "make_networks", reference_networks)
        monkeypatch.setattr(smac_a2c, "smac_batch_mean_step", reference_step)
        monkeypatch.chdir(tmp_path)
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        status = "finished" if smac_a2c.train(smac_a2c.Args(env_id=env_id, **common)) == 0 else "failed"
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    else:

        def lab_networks(args, obs_dim, act_dim, discrete):
            return trainer.Actor(obs_dim, act_dim, discrete, args.hidden_sizes), critic

        def lab_step(actor, batch, args, state):
            batches.append(batch)
            return trainer.sgd_step(actor, batch, args, state)

        monkeypatch.setattr(trainer, "lab_networks", lab_networks)
        monkeypatch.setitem(trainer.ACTOR_STEPS, "smac", lab_step)
        args = trainer.Args(
            env_id=env_id, tensorboard=False, bootstrap_truncation=bootstrap, runs_dir=str(tmp_path), **common
        )
        run_dir, status = trainer.train(args)
    assert status == "finished"
    obs, next_obs = critic.inputs[0].reshape(23, 2, 2).numpy(), critic.inputs[1].numpy()
    assert np.all(next_obs[..., 0] == obs[..., 0])  # same episode id: no reset transitions
    assert np.all(next_obs[..., 1] == obs[..., 1] + 1)
    dones = next_obs[..., 1] == ep_len
    after_done = obs[1:][dones[:-1]]
    assert len(after_done) > 0 and np.all(after_done[:, 1] == 0)
    adv = batches[0]["advantages"].reshape(23, 2).numpy()  # A_t = 1 + gamma V(s') (1 - term) - V(s)
    bootstraps = not terminated and bootstrap
    expected = 1 + 0.9 * next_obs[..., 1] * np.where(dones, float(bootstraps), 1.0) - obs[..., 1]
    np.testing.assert_allclose(adv, expected, rtol=1e-6)
    if entry == "reference":
        return
    rows = list(csv.DictReader(open(os.path.join(run_dir, "episodes.csv"))))
    assert len(rows) == 2 * (23 // ep_len) and all(
        float(r["episodic_return"]) == ep_len == int(r["episodic_length"]) for r in rows
    )


# ------------------------------------------------------------------------------------
# The trainer end to end
# ------------------------------------------------------------------------------------
SMOKE_ENVS = ["CartPole-v1", "Acrobot-v1", "Pendulum-v1", "Hopper-v4", "HalfCheetah-v5", "Pusher-v5"]
SMOKE_OPTS = [
    ["--optimizer", "smac"],
    ["--optimizer", "smac", "--fisher", "per-sample"],
    ["--optimizer", "sgd"],
    ["--optimizer", "adam"],
    ["--optimizer", "cg"],
    ["--optimizer", "kfac"],
]


@pytest.mark.parametrize("env_id", SMOKE_ENVS)
@pytest.mark.parametrize("opt", SMOKE_OPTS, ids=lambda o: "-".join(o[1::2]))
def test_smoke(tmp_path, env_id, opt):
    assert run_main(tmp_path, "--env-id", env_id, "--num-steps", "32", "--total-timesteps", "64", *opt) == 0
    run = only_run(tmp_path)
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "finished" and summary["global_step"] == 64
    rows = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert len(rows) == 3 and all(np.isfinite(float(x)) for x in rows[1].split(",")[:5])
    config = json.load(open(os.path.join(run, "config.json")))
    assert config["args"]["env_id"] == env_id and config["torch"] == torch.__version__


def test_smac_learns_cartpole(tmp_path):
    """Paper's CartPole SMAC row. A uniformly random policy scores ~22 (benchmark/results/random_scores.csv),
    so 100 is a clear margin."""
    assert (
        run_main(
            tmp_path,
            "--env-id",
            "CartPole-v1",
            "--learning-rate",
            "5e-3",
            "--damping",
            "0.1",
            "--critic-learning-rate",
            "1e-3",
            "--total-timesteps",
            "100000",
        )
        == 0
    )
    summary = json.load(open(os.path.join(only_run(tmp_path), "summary.json")))
    assert summary["mean_return_last10"] > 100


def test_same_seed_gives_identical_episodes(tmp_path):
    def episodes(sub, seed):
        argv = [
            "--env-id",
            "Pendulum-v1",
            "--num-steps",
            "200",
            "--total-timesteps",
            "1000",
            "--seed",
            str(seed),
        ]
        assert run_main(tmp_path / sub, *argv) == 0
        return open(os.path.join(only_run(tmp_path / sub), "episodes.csv")).read()

    first = episodes("a", 7)
    assert episodes("b", 7) == first and len(first.splitlines()) == 6
    assert episodes("c", 8) != first


def test_checkpoint_resume_and_evaluate(tmp_path, capsys):
    common = [
        "--env-id",
        "CartPole-v1",
        "--num-steps",
        "100",
        "--optimizer",
        "adam",
        "--learning-rate",
        "1e-3",
    ]
    assert run_main(tmp_path, *common, "--total-timesteps", "300", "--checkpoint-every", "1") == 0
    run = only_run(tmp_path)
    ckpt = trainer.load_checkpoint(run)
    assert ckpt["global_step"] == 300 and ckpt["update"] == 3 and "adam" in ckpt["actor_state"]
    # resume to 500 steps: same run dir, logs appended, actor restored exactly before continuing
    assert trainer.main(["--resume", run, "--total-timesteps", "500"]) == 0
    updates = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert [int(r.split(",")[0]) for r in updates[1:]] == [1, 2, 3, 4, 5]
    assert json.load(open(os.path.join(run, "summary.json")))["global_step"] == 500
    # evaluate: deterministic policy, reproducible
    capsys.readouterr()
    assert (
        trainer.main(["--eval-checkpoint", os.path.join(run, "checkpoint.pt"), "--eval-episodes", "3"]) == 0
    )
    first = evaluation(capsys.readouterr().out)
    assert trainer.main(["--eval-checkpoint", run, "--eval-episodes", "3"]) == 0
    assert evaluation(capsys.readouterr().out) == first and first[2] == 3


def test_resume_restores_state_exactly(tmp_path):
    """Parameters, optimizer state and normalizer statistics survive a save/load round trip."""
    assert (
        run_main(tmp_path, "--env-id", "Pendulum-v1", "--num-steps", "100", "--total-timesteps", "200") == 0
    )
    ckpt = trainer.load_checkpoint(only_run(tmp_path))
    actor = trainer.Actor(3, 1, False)
    actor.load_state_dict(ckpt["actor"])
    assert torch.equal(actor.log_std.detach(), ckpt["actor"]["log_std"])
    norm = trainer.Normalizer(3, 1, 0.99, True, True)
    norm.load_state_dict(ckpt["normalizer"])
    assert norm.obs_rms.count == pytest.approx(200 + 1e-4)


def test_help_documents_every_flag():
    import dataclasses

    import smac_a2c

    for entry, args_class, path in (
        (["smac_a2c.py"], smac_a2c.Args, "smac_a2c.py"),
        (["-m", "benchmark.trainer"], trainer.Args, os.path.join("benchmark", "trainer.py")),
    ):
        proc = subprocess.run(
            [sys.executable, *entry, "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT
        )
        assert proc.returncode == 0
        for field in dataclasses.fields(args_class):
            flag = "--" + field.name.replace("_", "-")
            assert flag in proc.stdout, flag
        # every field has a docstring where it is declared (the reference's Args, or the lab's LabArgs for its own)
        documented = {}
        for file in ("smac_a2c.py", path):
            for cls in ast.parse(open(os.path.join(ROOT, file)).read()).body:
                if isinstance(cls, ast.ClassDef) and cls.name in ("Args", "LabArgs"):
                    for stmt, after in zip(cls.body, cls.body[1:]):
                        if isinstance(stmt, ast.AnnAssign):
                            docstring = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                            documented[stmt.target.id] = docstring and isinstance(after.value.value, str)
        for field in dataclasses.fields(args_class):
            assert documented.get(field.name), field.name


def test_gae_ignores_the_value_of_a_terminal_observation():
    rewards = np.array([[1.0], [2.0], [3.0]])
    values = np.array([[0.5], [0.25], [0.125]])
    next_values = np.array([[0.25], [np.nan], [0.5]])  # step 1 ends its episode by termination
    terminations = np.array([[0.0], [1.0], [0.0]])
    advantages, returns = smac_a2c.compute_gae(
        rewards, values, next_values, terminations, terminations, 0.5, 1.0
    )
    # by hand: delta = r + 0.5 V' (1 - term) - V = [0.625, 1.75, 3.125]; A_1 = delta_1 (cut), A_0 = delta_0
    # + 0.5 A_1 (the episode goes on), A_2 = delta_2
    np.testing.assert_allclose(advantages[:, 0], [0.625 + 0.5 * 1.75, 1.75, 3.125])
    assert np.isfinite(returns).all()
