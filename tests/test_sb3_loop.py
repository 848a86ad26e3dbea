"""benchmark/sb3_loop.py: the copy block (copied alone, helpers.load_copy_block) as the actor's step of SB3's A2C
on CartPole-v1. A few updates on real rollouts: the SMAC step writes the policy net alone and moves it by a KL in
kl_step_'s band (or at its cap), the optimizer moves the critic alone; the fixed-eta rule on known numbers. The
SB3 tests skip without stable-baselines3."""

import helpers
import numpy as np
import pytest
import torch

from benchmark import foreign_loops, sb3_loop

BLOCK = helpers.load_copy_block()


def snapshot(policy) -> dict:
    return {name: p.detach().clone() for name, p in policy.named_parameters()}


def is_critic(name: str) -> bool:
    return "value_net" in name  # mlp_extractor.value_net.* and value_net.*: SB3's separate critic


def watched_model(n_steps=32, eta=None, seed=0, **kwargs):
    """A SmacA2C recording, per update, the parameters before and after the actor's step and after train()."""
    pytest.importorskip("stable_baselines3")
    SmacA2C = sb3_loop.smac_a2c_class()

    class Watched(SmacA2C):
        seen = []

        def actor_step(self, obs, actions, direction):
            self.seen.append({"before": snapshot(self.policy), "direction": direction.clone()})
            eta = super().actor_step(obs, actions, direction)
            self.seen[-1]["after_step"] = snapshot(self.policy)
            self.seen[-1]["eta"] = eta
            return eta

        def train(self):
            super().train()
            self.seen[-1]["after_train"] = snapshot(self.policy)

    Watched.seen = []
    return Watched(
        "MlpPolicy", "CartPole-v1", n_steps=n_steps, seed=seed, device="cpu", block=BLOCK, eta=eta, **kwargs
    )


def test_fixed_eta_is_the_median_scaled_by_the_root_of_the_batch_ratio():
    # median 0.2 (the zero counts), sqrt(5 / 125) = 0.2
    assert sb3_loop.fixed_eta([0.1, 0.3, 0.2, 0.0, 0.5], 5, 125) == pytest.approx(0.04, rel=1e-12)
    assert sb3_loop.fixed_eta([0.05, 0.07], 128, 128) == pytest.approx(0.06, rel=1e-12)


def test_the_reading_rule_and_the_eta_criterion_on_hand_made_runs():
    def run(solved_at, last, etas, changes):
        r = foreign_loops.Run("kl")
        r.solved_at = solved_at
        r.returns = [last] * 20
        r.etas = etas
        r.largest_change = changes
        return r

    clean = run(5000, 300.0, [0.1] * 100, [0.01] * 100)
    two_percent_at_cap = run(5000, 300.0, [0.1] * 100, [0.01] * 98 + [foreign_loops.MAX_CHANGE] * 2)
    one_percent_no_step = run(5000, 300.0, [0.1] * 99 + [0.0], [0.01] * 99 + [0.0])
    assert sb3_loop.holds([clean, one_percent_no_step])
    assert not sb3_loop.holds([clean, two_percent_at_cap])
    assert not sb3_loop.holds([clean, run(None, 300.0, [0.1] * 100, [0.01] * 100)])
    never = run(None, 150.0, [0.01], [0.0])
    assert sb3_loop.eta_rule_succeeds([clean, clean, never])
    assert not sb3_loop.eta_rule_succeeds([clean, never, never])
    assert not sb3_loop.eta_rule_succeeds([clean, clean, run(None, 99.0, [0.01], [0.0])])


def test_kl_step_writes_the_policy_net_alone_in_its_band_and_the_optimizer_the_critic_alone():
    model = watched_model(n_steps=32)
    model.learn(total_timesteps=32 * 4, callback=sb3_loop.episode_recorder(model.smac_run))
    assert len(model.seen) == 4 and len(model.smac_run.etas) == 4
    for update, kl in zip(model.seen, model.smac_run.kl):
        before, after_step, after_train = update["before"], update["after_step"], update["after_train"]
        sizes = [p.numel() for p in before.values()]
        parts = dict(zip(before, update["direction"].split(sizes)))
        assert update["eta"] > 0
        for name, p0 in before.items():
            if is_critic(name):
                assert not parts[name].any()  # its direction is zero
                assert torch.equal(after_step[name], p0)  # not written by the SMAC step
                assert not torch.equal(after_train[name], p0)  # moved by SB3's RMSprop
            else:  # moved by eta * direction, and by nothing else in train()
                expected = p0 + update["eta"] * parts[name].view_as(p0)
                torch.testing.assert_close(after_step[name], expected, rtol=0, atol=1e-7)
                assert torch.equal(after_train[name], after_step[name])
        at_cap = np.isclose(update["eta"] * update["direction"].abs().max().item(), foreign_loops.MAX_CHANGE)
        assert 0.005 <= kl <= 0.015 or (at_cap and kl < 0.005)
    # the episodes SB3's Monitor saw, with the step count at the last one's end (CartPole: 1 per step)
    returns = model.smac_run.returns
    assert returns and sum(returns) == model.smac_run.steps <= 32 * 4


def test_a_fixed_eta_is_applied_as_given():
    model = watched_model(n_steps=5, eta=0.02, normalize_advantage=True)
    model.learn(total_timesteps=5 * 3)
    assert model.smac_run.etas == [0.02] * 3
    for update in model.seen:
        before, after = update["before"], update["after_step"]
        sizes = [p.numel() for p in before.values()]
        for (name, p0), d in zip(before.items(), update["direction"].split(sizes)):
            torch.testing.assert_close(after[name], p0 + 0.02 * d.view_as(p0), rtol=0, atol=1e-7)


def test_an_entropy_term_is_refused():
    with pytest.raises(ValueError, match="ent_coef"):
        watched_model(ent_coef=0.01)


@pytest.mark.parametrize(
    "argv,name",
    [
        (["--n-steps", "0"], "--n-steps"),
        (["--n-steps", "1", "--normalize", "on"], "--n-steps"),
        (["--seeds", "-1"], "--seeds"),
        (["--budget", "0"], "--budget"),
        (["--budget", "3", "--eta-rule"], "--budget"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(capsys, argv, name):
    """--n-steps 0 and --seeds -1 were tracebacks, --budget 0 a row of NaN: now one line naming the flag, exit 2,
    before any run (this test needs no stable-baselines3 when it is missing: that is the line then)."""
    pytest.importorskip("stable_baselines3")
    code = sb3_loop.main(argv)
    helpers.one_line_error(capsys.readouterr().err, code, name)


def test_without_stable_baselines3_one_line_names_what_to_install(capsys, monkeypatch):
    """Without SB3 the command was a ModuleNotFoundError traceback; now one line with the pip command, exit 2."""
    import sys

    monkeypatch.setitem(
        sys.modules, "stable_baselines3", None
    )  # `import stable_baselines3` raises ImportError
    code = sb3_loop.main(["--n-steps", "32"])
    helpers.one_line_error(capsys.readouterr().err, code, "pip install stable-baselines3")
