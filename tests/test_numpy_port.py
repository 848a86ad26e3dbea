"""Tests of smac_numpy.py: Sherman-Morrison vs explicit / exact solves, the log-linear policy and its SMAC
direction (against explicit solves, Algorithm 1 by hand, the torch drop-in, finite differences), the CLI.

Tolerances (float64, eps = 2.2e-16, F = lambda I + ell ell^T, kappa = (lambda + |ell|^2)/lambda):

* The SM formula (g - ell (ell^T g)/(lambda + ell^T ell)) / lambda rounds each of its
  two dot products (error <= d eps |ell||g|), one division and one subtraction, and the
  cancellation in the subtraction costs at most eps (|g| + |ell c|) <= 2 eps |g| absolute.
  So |x_sm - x| <= C (d + 4) eps |g| / lambda = C (d + 4) eps |F^-1| |g|, i.e. a relative
  error bounded by (d + 4) eps * cond(F, g), with cond(F, g) = |F^-1||g|/|F^-1 g| in
  [1, kappa]. This is the conditioning of the problem itself: perturbing g by eps|g|
  moves x by up to eps|g|/lambda. We compare against the *exact* answer for the float
  inputs, computed in rational arithmetic (fractions.Fraction), with C = 4.
* numpy.linalg.solve (LU, partial pivoting) is backward stable: (F + E) x_ex = g with
  |E| <~ d eps |F|, so |x_ex - x| <~ d eps kappa |x_ex|. SM vs explicit therefore gets the
  sum of both bounds (C = 4 on each). When kappa reaches 1e12..1e18 (lambda = 1e-6,
  |ell| = 1e6) this bound is loose: the explicit solve itself is inaccurate there, which
  is why the tight check is against the rational reference.
  When kappa * eps >~ 1 the d x d matrix is numerically singular and
  numpy.linalg.solve may raise LinAlgError; the test accepts that only in that regime.
* Residual: |F x_sm - g| = |F (x_sm - x)| <= |F| C (d+4) eps |g|/lambda = C (d+4) eps kappa |g|.
"""

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import smac_numpy as sn

EPS = np.finfo(np.float64).eps
ROOT = Path(__file__).resolve().parent.parent


def exact_direction(g: np.ndarray, ell: np.ndarray, damping: float) -> np.ndarray:
    """F^-1 g in exact rational arithmetic for the given float inputs, rounded once to float64."""
    G = [Fraction(float(v)) for v in g]
    L = [Fraction(float(v)) for v in ell]
    lam = Fraction(float(damping))
    c = sum(a * b for a, b in zip(L, G)) / (lam + sum(a * a for a in L))
    return np.array([float((gi - li * c) / lam) for gi, li in zip(G, L)])


@st.composite
def sm_problem(draw):
    """(g, ell, damping, mode): d in [1, 300], damping, |ell|, |g| log-uniform in [1e-6, 1e6]."""
    d = draw(st.integers(1, 300))
    lam = 10.0 ** draw(st.floats(-6, 6))
    nl = 10.0 ** draw(st.floats(-6, 6))
    ng = 10.0 ** draw(st.floats(-6, 6))
    mode = draw(st.sampled_from(["generic", "ell_zero", "g_parallel", "g_antiparallel", "g_perp"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    v = rng.standard_normal(d)
    ell = nl * u
    if mode == "ell_zero":
        ell = np.zeros(d)
    if mode == "g_parallel":
        g = ng * u
    elif mode == "g_antiparallel":
        g = -ng * u
    elif mode == "g_perp":
        w = v - (v @ u) * u
        g = ng * w / np.linalg.norm(w) if np.linalg.norm(w) > 0 else np.zeros(d)
    else:
        g = ng * v / np.linalg.norm(v)
    return g, ell, lam, mode


PROP = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROP
@given(sm_problem())
def test_sm_matches_exact_rational(p):
    g, ell, lam, _ = p
    x = sn.sherman_morrison_direction(g, ell, lam)
    ref = exact_direction(g, ell, lam)
    bound = 4 * (g.size + 4) * EPS * np.linalg.norm(g) / lam
    assert np.linalg.norm(x - ref) <= bound + 1e-300


@PROP
@given(sm_problem())
def test_sm_matches_explicit_solve(p):
    g, ell, lam, _ = p
    x = sn.sherman_morrison_direction(g, ell, lam)
    kappa = (lam + ell @ ell) / lam
    try:
        xe = sn.explicit_direction(g, ell, lam)
    except np.linalg.LinAlgError:
        # lambda I + ell ell^T rounds to the rank-1 ell ell^T: only allowed when kappa ~ 1/eps
        assert kappa * EPS > 1e-3
        return
    bound = 4 * (g.size + 4) * EPS * (np.linalg.norm(g) / lam + kappa * np.linalg.norm(xe))
    assert np.linalg.norm(x - xe) <= bound + 1e-300


@PROP
@given(sm_problem())
def test_fisher_times_direction_returns_g(p):
    g, ell, lam, _ = p
    x = sn.sherman_morrison_direction(g, ell, lam)
    r = lam * x + ell * (ell @ x) - g  # F x - g without forming F
    kappa = (lam + ell @ ell) / lam
    assert np.linalg.norm(r) <= 4 * (g.size + 4) * EPS * kappa * np.linalg.norm(g) + 1e-300


def test_well_conditioned_cases_are_tight():
    """Where cond(F, g) is small the relative error must be at the eps level (guards
    against the bounds above being so loose that they could never fail)."""
    rng = np.random.default_rng(1)
    worst = 0.0
    for _ in range(200):
        d = int(rng.integers(1, 300))
        g, ell, lam = rng.standard_normal(d), rng.standard_normal(d), 10.0 ** rng.uniform(-1, 2)
        x, ref = sn.sherman_morrison_direction(g, ell, lam), exact_direction(g, ell, lam)
        worst = max(worst, np.linalg.norm(x - ref) / np.linalg.norm(ref))
    assert worst < 1e-13
    # a sign error in the formula would be caught at O(1):
    g, ell = rng.standard_normal(5), rng.standard_normal(5)
    wrong = (g + ell * (ell @ g) / (1.0 + ell @ ell)) / 1.0
    assert np.linalg.norm(wrong - exact_direction(g, ell, 1.0)) > 1e-3


def test_ell_zero_is_exactly_g_over_lambda():
    g = np.array([1e-6, -3.0, 7e5])
    assert np.array_equal(sn.sherman_morrison_direction(g, np.zeros(3), 0.3), g / 0.3)


def test_one_sample_eigenvector_identity():
    """NOTES 2: g = ell A makes ell an eigenvector, F^-1 g = ell A / (lambda + |ell|^2)."""
    rng = np.random.default_rng(2)
    ell, A, lam = rng.standard_normal(50), 1.7, 0.1
    x = sn.sherman_morrison_direction(ell * A, ell, lam)
    np.testing.assert_allclose(x, ell * A / (lam + ell @ ell), rtol=1e-12, atol=0)


def test_cancellation_regime_is_within_conditioning_bound():
    """g parallel to ell with |ell|^2/lambda = 1e18: the exact answer is ~ell * 1e-12, the
    SM formula returns 0 (total cancellation: c rounds to 1.0). The relative error is 100 %,
    but the absolute error is within (d+4) eps |g|/lambda: the problem's own conditioning."""
    ell = np.full(4, 5e5)  # |ell| = 1e6
    lam = 1e-6
    x = sn.sherman_morrison_direction(ell, ell, lam)
    ref = exact_direction(ell, ell, lam)
    assert np.all(x == 0.0) and np.all(ref > 0)
    assert np.linalg.norm(x - ref) <= 4 * 8 * EPS * np.linalg.norm(ell) / lam


def test_batched_matches_loop():
    rng = np.random.default_rng(3)
    G, L = rng.standard_normal((17, 9)), rng.standard_normal((17, 9)) * 10.0 ** rng.uniform(-3, 3, (17, 1))
    L[4] = 0.0
    G[5] = 2.5 * L[5]
    batched = sn.sherman_morrison_direction_batched(G, L, 0.3)
    loop = np.stack([sn.sherman_morrison_direction(g, ell, 0.3) for g, ell in zip(G, L)])
    assert batched.shape == (17, 9)
    np.testing.assert_allclose(batched, loop, rtol=1e-13, atol=1e-13 * np.abs(loop).max())


def test_damping_must_be_positive():
    with pytest.raises(ValueError):
        sn.sherman_morrison_direction(np.ones(2), np.ones(2), 0.0)
    with pytest.raises(ValueError):
        sn.sherman_morrison_direction_batched(np.ones((1, 2)), np.ones((1, 2)), -1.0)


# --------------------------------------------------------------------------- torch cross-check


def test_torch_and_numpy_give_the_same_direction():
    smac_a2c = pytest.importorskip("smac_a2c")
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    cases = [
        (
            rng.standard_normal(d) * 10.0 ** rng.uniform(-6, 6),
            rng.standard_normal(d) * 10.0 ** rng.uniform(-6, 6),
            10.0 ** rng.uniform(-6, 6),
        )
        for d in (1, 2, 10, 300, 1000)
        for _ in range(6)
    ]
    cases.append((np.ones(3), np.zeros(3), 0.5))
    cases.append((np.full(4, 5e5), np.full(4, 5e5), 1e-6))
    for g, ell, lam in cases:
        xn = sn.sherman_morrison_direction(g, ell, lam)
        xt = smac_a2c.sherman_morrison_direction(torch.from_numpy(g), torch.from_numpy(ell), lam)
        assert xt.dtype == torch.float64
        xt = xt.numpy()
        # both implement the same float64 formula; only summation order may differ
        bound = 8 * (g.size + 4) * EPS * np.linalg.norm(g) / lam
        assert np.linalg.norm(xt - xn) <= bound + 1e-300
        assert np.linalg.norm(xt - exact_direction(g, ell, lam)) <= bound + 1e-300


# --------------------------------------------------------------------------- log-linear policy


def test_score_matches_finite_differences_of_log_prob():
    rng = np.random.default_rng(5)
    pol = sn.LogLinearPolicy(obs_dim=4, n_actions=3)
    theta = rng.standard_normal(pol.dim)
    obs = rng.standard_normal((6, 4))
    acts = rng.integers(0, 3, 6)
    S = pol.score(theta, obs, acts)
    assert S.shape == (6, pol.dim)
    h = 1e-6
    fd = np.zeros_like(S)
    for j in range(pol.dim):
        e = np.zeros(pol.dim)
        e[j] = h
        fd[:, j] = (pol.log_prob(theta + e, obs, acts) - pol.log_prob(theta - e, obs, acts)) / (2 * h)
    np.testing.assert_allclose(S, fd, rtol=0, atol=1e-8)


def test_score_has_zero_mean_under_the_policy():
    rng = np.random.default_rng(6)
    pol = sn.LogLinearPolicy(obs_dim=3, n_actions=4)
    theta, obs = rng.standard_normal(pol.dim), rng.standard_normal((1, 3))
    p = np.exp(pol.log_probs(theta, obs))[0]
    mean = sum(p[a] * pol.score(theta, obs, np.array([a]))[0] for a in range(4))
    np.testing.assert_allclose(mean, 0.0, atol=1e-15)


def test_log_probs_are_stable_for_huge_logits():
    pol = sn.LogLinearPolicy(obs_dim=2, n_actions=3)
    theta = np.array([1e4, 0, 0, -1e4, 0, 0, 0, 0, 0.0])
    lp = pol.log_probs(theta, np.array([[1.0, 0.0]]))
    assert np.all(np.isfinite(lp))
    np.testing.assert_allclose(np.exp(lp).sum(), 1.0, rtol=1e-15)
    np.testing.assert_allclose(lp[0], [0.0, -2e4, -1e4], rtol=1e-12)


# --------------------------------------------------------------------------- imports and CLI


def test_import_does_not_pull_torch_or_matplotlib():
    code = "import sys, smac_numpy; bad = [m for m in ('torch', 'matplotlib') if m in sys.modules]; print(bad); sys.exit(len(bad))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["toy-mdp", "--damping", "-1"],
        ["toy-mdp", "--damping", "abc"],
        ["toy-mdp", "--start-pi0", "1.5"],
        ["cartpole"],
        ["toy-mdp", "--iters", "0"],
        ["nonsense"],
    ],
)
def test_cli_bad_input_is_one_line_exit_2(argv):
    r = subprocess.run([sys.executable, "smac_numpy.py", *argv], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr


# --------------------------------------------------------------------------- the log-linear policy's SMAC direction


def log_linear_batch(rng, B, obs_dim=3, n_actions=4):
    policy = sn.LogLinearPolicy(obs_dim, n_actions)
    theta = rng.standard_normal(policy.dim)
    obs = rng.standard_normal((B, obs_dim))
    actions = rng.integers(0, n_actions, B)
    return policy, theta, obs, actions, rng.standard_normal(B)


@pytest.mark.parametrize("B", [1, 7, 100, 1000])
@pytest.mark.parametrize("damping", [1e-4, 1e-2, 1.0, 10.0])
@pytest.mark.parametrize("sizes", [(1, 2), (3, 4), (8, 5)])
def test_log_linear_direction_is_the_explicit_solve(B, damping, sizes):
    """From the policy's own per-sample scores: l_bar and g built by hand, (lambda I + l_bar l_bar^T) solved."""
    rng = np.random.default_rng(B * 100 + sizes[0])
    policy, theta, obs, actions, adv = log_linear_batch(rng, B, *sizes)
    L = np.stack([policy.score(theta, obs[i : i + 1], actions[i : i + 1])[0] for i in range(B)])
    ell, g = L.mean(0), (L * adv[:, None]).mean(0)
    expected = np.linalg.solve(damping * np.eye(policy.dim) + np.outer(ell, ell), g)
    got = sn.log_linear_smac_direction(policy, theta, obs, actions, adv, damping)
    kappa = (damping + ell @ ell) / damping
    assert got.shape == theta.shape
    np.testing.assert_allclose(
        got, expected, rtol=0, atol=1e3 * kappa * EPS * np.abs(expected).max() + 1e-300
    )


def test_algorithm1_is_explicit_per_sample_solves_in_order():
    rng = np.random.default_rng(11)
    policy, theta, obs, actions, adv = log_linear_batch(rng, 25)
    lr, damping, th = 0.3, 0.05, theta.copy()
    for i in range(25):  # by hand: the score at the CURRENT theta, the d x d solve, the step
        ell = policy.score(th, obs[i : i + 1], actions[i : i + 1])[0]
        th = th + lr * np.linalg.solve(damping * np.eye(policy.dim) + np.outer(ell, ell), ell * adv[i])
    got = sn.log_linear_algorithm1(policy, theta, obs, actions, adv, damping, lr)
    np.testing.assert_allclose(got, th, rtol=1e-11, atol=1e-13)
    assert np.abs(got - theta).max() > 1e-2  # the steps moved theta: the loop is not trivially equal


def test_log_linear_direction_equals_the_torch_drop_in():
    """The design card's cross-check: smac_a2c.smac_direction on an nn.Linear softmax policy with the same
    weights (nn.Linear's weight (n_actions, obs_dim) and bias (n_actions,) are theta's W without / with its
    last column), float64, to 1e-10."""
    torch = pytest.importorskip("torch")
    smac_a2c = pytest.importorskip("smac_a2c")
    rng = np.random.default_rng(5)
    for B, damping in ((1, 1.0), (64, 0.1), (500, 1e-3)):
        policy, theta, obs, actions, adv = log_linear_batch(rng, B, 6, 3)
        W = theta.reshape(3, 7)
        net = torch.nn.Linear(6, 3).double()
        with torch.no_grad():
            net.weight.copy_(torch.from_numpy(W[:, :6]))
            net.bias.copy_(torch.from_numpy(W[:, 6]))
        logp = torch.log_softmax(net(torch.from_numpy(obs)), -1)[torch.arange(B), torch.from_numpy(actions)]
        d = smac_a2c.smac_direction(net, logp, torch.from_numpy(adv), damping).numpy()
        d_as_theta = np.concatenate([d[:18].reshape(3, 6), d[18:].reshape(3, 1)], axis=1).reshape(-1)
        expected = sn.log_linear_smac_direction(policy, theta, obs, actions, adv, damping)
        np.testing.assert_allclose(
            d_as_theta, expected, rtol=0, atol=1e-10 * max(1.0, np.abs(expected).max())
        )


def test_log_linear_gradient_matches_finite_differences_of_the_surrogate():
    """g = grad_theta mean_i log pi(a_i|s_i) A_i: the direction at a huge damping is g / lambda."""
    rng = np.random.default_rng(9)
    policy, theta, obs, actions, adv = log_linear_batch(rng, 40)

    def surrogate(th):
        return float((policy.log_prob(th, obs, actions) * adv).mean())

    h = 1e-6
    fd = np.array(
        [(surrogate(theta + h * e) - surrogate(theta - h * e)) / (2 * h) for e in np.eye(policy.dim)]
    )
    lam = 1e12  # (lambda I + l l^T)^-1 g -> g / lambda
    g = sn.log_linear_smac_direction(policy, theta, obs, actions, adv, lam) * lam
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
