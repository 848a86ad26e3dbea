"""Tests of the paper's two-state toy MDP in smac_numpy.py (and the toy study in benchmark/studies/toy_mdp.py)
("A Toy Problem" + appendix).

Every printed closed form is checked against finite differences and against brute-force
enumeration of the MDP's trajectories; where the printed formula and the MDP disagree, a
test pins the disagreement (named test_discrepancy_*).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import smac_numpy as sn
from benchmark.studies import toy_mdp

# ---- brute force over the MDP's trajectories, and the paper's printed SM expansion (they exist only to check
# ---- the printed formulas)


def toy_enumerate(theta: np.ndarray, lam_p: float, horizon: int = 2, terminal_self_loop: bool = True):
    """Brute force: every trajectory from x=0 of at most `horizon` steps.

    Returns a list of (prob, undiscounted return, [(x_t, a_t), ...]).  With
    terminal_self_loop=True the self-loop at x=0 ends the episode (the MDP whose
    return is the paper's printed J); with False it is the drawn MDP run for
    exactly `horizon` steps.
    """
    out = []

    def rec(x, t, prob, ret, path):
        if t == horizon:
            out.append((prob, ret, path))
            return
        for a in (0, 1):
            p = prob * sn.toy_prob(theta, lam_p, x, a)
            r = (1.0 if x == 0 else 2.0) if a == 0 else 0.0
            nxt = x if a == 0 else 1 - x
            if terminal_self_loop and x == 0 and a == 0:
                out.append((p, ret + r, path + [(x, a)]))
            else:
                rec(nxt, t + 1, p, ret + r, path + [(x, a)])

    rec(0, 0, 1.0, 0.0, [])
    return out


def toy_bruteforce(
    theta: np.ndarray, lam_p: float, horizon: int = 2, terminal_self_loop: bool = True
) -> dict:
    """From the enumeration: J, grad J (likelihood ratio), trajectory Fisher, visit counts.

    J        = sum_tau P(tau) R(tau)
    grad_J   = sum_tau P(tau) R(tau) sum_t ell(x_t, a_t)
    F_traj   = sum_tau P(tau) (sum_t ell_t)(sum_t ell_t)^T   (Fisher of the trajectory law)
    visits   = D(x) = expected number of visits to x per episode
    """
    J, grad, F, visits = 0.0, np.zeros(2), np.zeros((2, 2)), np.zeros(2)
    for p, ret, path in toy_enumerate(theta, lam_p, horizon, terminal_self_loop):
        s = sum(sn.toy_score(theta, lam_p, x, a) for x, a in path)
        J += p * ret
        grad += p * ret * s
        F += p * np.outer(s, s)
        for x, _ in path:
            visits[x] += p
    return {"J": J, "grad_J": grad, "F_traj": F, "visits": visits}


def toy_sm_printed_components(theta: np.ndarray, lam_p: float, damping: float) -> np.ndarray:
    """The paper's component-wise expansion of the SM direction, copied term by term.

    It does NOT equal `toy_sm_printed`: the second term of each component carries
    the wrong sign (-F_ii * gradJ_i / (...) with gradJ_i < 0 should give '+').
    Kept only so a test can pin the discrepancy.
    """
    pi0, pi1 = sn.toy_pi(theta, lam_p)
    lam = damping
    den = lam**2 + lam * (lam_p**2 * pi0 * (1 - pi0) + pi1 * (1 - pi1))
    c0 = (1 / lam) * (-lam_p * pi0 * (1 - pi0) * (1 - 2 * pi1)) - lam_p**3 * pi0**2 * (1 - pi0) ** 2 * (
        1 - 2 * pi1
    ) / den
    c1 = (1 / lam) * (-2 * (1 - pi0) * pi1 * (1 - pi1)) - 2 * pi1**2 * (1 - pi1) ** 2 * (1 - pi0) / den
    return np.array([c0, c1])


LAM_PS = (0.75, 1.0, 2.0)
PROP = settings(max_examples=60, deadline=None)
thetas = st.tuples(st.floats(-5, 5), st.floats(-5, 5)).map(np.array)
lam_ps = st.sampled_from(LAM_PS + (0.3, 3.0))


@PROP
@given(thetas, lam_ps)
def test_printed_J_is_the_terminal_self_loop_H2_return(theta, lam_p):
    bf = toy_bruteforce(theta, lam_p, horizon=2, terminal_self_loop=True)
    assert abs(bf["J"] - sn.toy_J(theta, lam_p)) < 1e-14
    probs = [p for p, _, _ in toy_enumerate(theta, lam_p)]
    assert abs(sum(probs) - 1.0) < 1e-14


@PROP
@given(thetas, lam_ps)
def test_discrepancy_printed_J_is_not_the_plain_H2_return(theta, lam_p):
    """Running the drawn MDP for 2 steps gives pi0 + pi0^2 + 2(1-pi0)pi1, not the printed J."""
    pi0, pi1 = sn.toy_pi(theta, lam_p)
    plain = toy_bruteforce(theta, lam_p, horizon=2, terminal_self_loop=False)["J"]
    assert abs(plain - (pi0 + pi0**2 + 2 * (1 - pi0) * pi1)) < 1e-14
    assert abs(plain - sn.toy_J(theta, lam_p) - pi0**2) < 1e-14


@PROP
@given(thetas, lam_ps)
def test_grad_J_matches_finite_differences_and_likelihood_ratio(theta, lam_p):
    gJ = sn.toy_grad_J(theta, lam_p)
    h = 1e-6
    fd = np.array(
        [(sn.toy_J(theta + h * e, lam_p) - sn.toy_J(theta - h * e, lam_p)) / (2 * h) for e in np.eye(2)]
    )
    np.testing.assert_allclose(gJ, fd, rtol=0, atol=1e-9)
    np.testing.assert_allclose(gJ, toy_bruteforce(theta, lam_p)["grad_J"], rtol=0, atol=1e-14)


@PROP
@given(thetas, lam_ps)
def test_score_matches_finite_differences(theta, lam_p):
    h = 1e-6
    for x in (0, 1):
        for a in (0, 1):
            fd = [
                (
                    np.log(sn.toy_prob(theta + h * e, lam_p, x, a))
                    - np.log(sn.toy_prob(theta - h * e, lam_p, x, a))
                )
                / (2 * h)
                for e in np.eye(2)
            ]
            np.testing.assert_allclose(
                sn.toy_score(theta, lam_p, x, a), fd, rtol=0, atol=1e-8
            )  # h^2 f''' + eps/h


@PROP
@given(thetas, lam_ps)
def test_policy_gradient_theorem_with_exact_advantages(theta, lam_p):
    """sum_x D(x) sum_a pi(a|x) ell(x,a) A(x,a) = grad J, with D = expected visits (1, 1-pi0)."""
    D = toy_bruteforce(theta, lam_p)["visits"]
    pi0, _ = sn.toy_pi(theta, lam_p)
    np.testing.assert_allclose(D, [1.0, 1.0 - pi0], atol=1e-15)
    pg = sum(
        D[x]
        * sn.toy_prob(theta, lam_p, x, a)
        * sn.toy_score(theta, lam_p, x, a)
        * sn.toy_advantage(theta, lam_p, x, a)
        for x in (0, 1)
        for a in (0, 1)
    )
    np.testing.assert_allclose(pg, sn.toy_grad_J(theta, lam_p), rtol=0, atol=1e-14)


@PROP
@given(thetas, lam_ps)
def test_printed_fisher_is_the_unweighted_sum_of_per_state_fishers(theta, lam_p):
    """Printed FIM = F_{x=0} + F_{x=1}, each F_x = sum_a pi(a|x) ell ell^T by enumeration."""
    F_enum = sn.toy_fisher_state(theta, lam_p, 0) + sn.toy_fisher_state(theta, lam_p, 1)
    np.testing.assert_allclose(
        sn.toy_fisher_printed(theta, lam_p), F_enum, rtol=1e-10, atol=1e-15
    )  # 1-pi cancels near 0/1


@PROP
@given(thetas, lam_ps)
def test_discrepancy_fisher_of_the_trajectory_law_is_visitation_weighted(theta, lam_p):
    """E_tau[(sum_t ell_t)(sum_t ell_t)^T] = diag(F00, (1-pi0) F11) = (2-pi0) * F_rho: the
    x=1 block carries the visit probability 1-pi0 that the printed FIM omits."""
    pi0, pi1 = sn.toy_pi(theta, lam_p)
    F_traj = toy_bruteforce(theta, lam_p)["F_traj"]
    Fp = sn.toy_fisher_printed(theta, lam_p)
    np.testing.assert_allclose(F_traj, np.diag([Fp[0, 0], (1 - pi0) * Fp[1, 1]]), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        F_traj, (2 - pi0) * sn.toy_fisher_weighted(theta, lam_p), rtol=1e-12, atol=1e-15
    )
    if Fp[1, 1] > 1e-12 and pi0 > 0.01:
        assert abs(F_traj[1, 1] - Fp[1, 1]) > 0.005 * Fp[1, 1]


@PROP
@given(st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(np.array), lam_ps)
def test_printed_npg_equals_solve_with_printed_fisher(theta, lam_p):
    """The printed NPG components are NOT swapped: they equal numpy.linalg.solve(F_printed, grad J)."""
    np.testing.assert_allclose(
        sn.toy_npg_printed(theta, lam_p), sn.toy_npg(theta, lam_p), rtol=1e-9, atol=1e-12
    )


@PROP
@given(st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(np.array), lam_ps)
def test_discrepancy_weighted_npg_differs_from_printed(theta, lam_p):
    """With the visitation-weighted Fisher, NPG = (2-pi0) [-(1-2pi1)/lambda_p, -2]; the printed
    second component -2(1-pi0) is that times d(1)/d(0) = 1-pi0."""
    pi0, pi1 = sn.toy_pi(theta, lam_p)
    w = sn.toy_npg(theta, lam_p, weighted=True)
    np.testing.assert_allclose(w, (2 - pi0) * np.array([-(1 - 2 * pi1) / lam_p, -2.0]), rtol=1e-9, atol=1e-12)
    p = sn.toy_npg_printed(theta, lam_p)
    np.testing.assert_allclose(p, w / (2 - pi0) * np.array([1.0, 1 - pi0]), rtol=1e-9, atol=1e-12)


def test_npg_log_odds_velocity_is_invariant_to_lambda_p():
    """Same policy, different lambda_p: NPG moves the log-odds (u0 = -lambda_p theta0) identically;
    PG does not."""
    vel = {}
    for lp in LAM_PS:
        th = sn.toy_theta_from_pi(0.9, 0.2, lp)
        J = np.diag([-lp, -1.0])  # du/dtheta
        vel[lp] = (
            J @ sn.toy_npg_printed(th, lp),
            J @ sn.toy_npg(th, lp, weighted=True),
            J @ sn.toy_grad_J(th, lp),
        )
    for lp in LAM_PS:
        np.testing.assert_allclose(vel[lp][0], vel[1.0][0], rtol=1e-12)
        np.testing.assert_allclose(vel[lp][1], vel[1.0][1], rtol=1e-12)
    assert abs(vel[2.0][2][0] - vel[1.0][2][0]) > 0.1 * abs(vel[1.0][2][0])


@PROP
@given(
    st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(np.array),
    lam_ps,
    st.floats(-3, 2).map(lambda e: 10.0**e),
)
def test_discrepancy_printed_sm_components_have_the_wrong_sign(theta, lam_p, damping):
    """Printed matrix form (1/lam)(I - F/(lam+TrF)) gradJ has components gradJ_i (1 - F_ii/(lam+TrF))/lam;
    the printed component expansion has gradJ_i (1 + F_ii/(lam+TrF))/lam."""
    F = sn.toy_fisher_printed(theta, lam_p)
    gJ = sn.toy_grad_J(theta, lam_p)
    den = damping + np.trace(F)
    m = sn.toy_sm_printed(theta, lam_p, damping)
    c = toy_sm_printed_components(theta, lam_p, damping)
    np.testing.assert_allclose(m, gJ * (1 - np.diag(F) / den) / damping, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(c, gJ * (1 + np.diag(F) / den) / damping, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(m + c, 2 * gJ / damping, rtol=1e-12, atol=1e-300)


@PROP
@given(
    st.tuples(st.floats(-3, 3), st.floats(-3, 3)).map(np.array),
    lam_ps,
    st.floats(-2, 1).map(lambda e: 10.0**e),
)
def test_discrepancy_printed_sm_is_not_the_inverse_of_damped_fisher(theta, lam_p, damping):
    """(1/lam)(I - F/(lam+TrF)) is (lam I + F)^-1 only for rank-1 F; check with explicit solve."""
    F = sn.toy_fisher_printed(theta, lam_p)
    gJ = sn.toy_grad_J(theta, lam_p)
    exact = np.linalg.solve(damping * np.eye(2) + F, gJ)
    m = sn.toy_sm_printed(theta, lam_p, damping)
    # they differ by (1/lam) F_00 F_11 ... : nonzero whenever both diagonal entries are
    diff = np.linalg.norm(m - exact)
    if F[0, 0] * F[1, 1] > 1e-6 and np.min(np.abs(gJ)) > 1e-6:
        assert diff > 1e-9 * np.linalg.norm(exact)
    # ... and for a rank-1 F (ell ell^T) the same formula IS the inverse (eq. sm_update):
    ell = np.array([0.3, -1.2])
    np.testing.assert_allclose(
        (gJ - np.outer(ell, ell) @ gJ / (damping + ell @ ell)) / damping,
        sn.explicit_direction(gJ, ell, damping),
        rtol=1e-12,
    )


def test_printed_sm_tends_to_npg_only_because_d_equals_2():
    """Cayley-Hamilton for 2x2: I - F/TrF = det(F) F^-1 / TrF, so lam * SM_printed -> det/Tr * NPG."""
    for lp in LAM_PS:
        th = sn.toy_theta_from_pi(0.9, 0.2, lp)
        F = sn.toy_fisher_printed(th, lp)
        lam = 1e-9
        np.testing.assert_allclose(
            lam * sn.toy_sm_printed(th, lp, lam),
            np.linalg.det(F) / np.trace(F) * sn.toy_npg_printed(th, lp),
            rtol=1e-6,
        )


def test_expected_per_sample_sm_tends_to_printed_npg():
    """E[ell A / (lam + |ell|^2)] over (x,a) ~ d pi -> NPG_printed / (2 - pi0) as lam -> 0."""
    for lp in LAM_PS:
        th = sn.toy_theta_from_pi(0.9, 0.2, lp)
        pi0, _ = sn.toy_pi(th, lp)
        np.testing.assert_allclose(
            toy_mdp.toy_sm_expected(th, lp, 1e-10), sn.toy_npg_printed(th, lp) / (2 - pi0), rtol=1e-7
        )


def test_sampled_sm_converges_to_its_expectation():
    rng = np.random.default_rng(0)
    th = sn.toy_theta_from_pi(0.7, 0.4, 1.0)
    n = 200_000
    L, A = sn.toy_sample_scores(th, 1.0, n, rng)
    per = sn.sherman_morrison_direction_batched(L * A[:, None], L, 0.1)
    se = per.std(0) / np.sqrt(n)
    np.testing.assert_array_less(np.abs(per.mean(0) - toy_mdp.toy_sm_expected(th, 1.0, 0.1)), 5 * se)


@pytest.mark.parametrize("lam_p", LAM_PS)
@pytest.mark.parametrize("weighted", [False, True])
def test_return_increases_monotonically_under_small_npg_steps(lam_p, weighted):
    th = sn.toy_theta_from_pi(0.9, 0.2, lam_p)
    Js = [sn.toy_J(th, lam_p)]
    for _ in range(300):
        d = sn.toy_npg(th, lam_p, weighted=weighted)
        np.testing.assert_allclose(d, sn.toy_npg_printed(th, lam_p) if not weighted else d)
        th = th + 1e-2 * d
        Js.append(sn.toy_J(th, lam_p))
    assert np.all(np.diff(Js) > 0)


def test_measured_trap_of_printed_npg_from_the_stated_start():
    """From pi(a=0|x=0)=0.9, pi(a=0|x=1)=0.2 the printed-Fisher NPG walks into the x=0 self-loop
    (J -> 1, a local optimum while pi1 < 1/2); the visitation-weighted NPG and PG reach J > 1.9."""
    for lp in LAM_PS:
        assert sn.toy_run("NPG", lp)["J"][-1] < 1.001
        assert sn.toy_run("NPG-weighted", lp)["J"][-1] > 1.9
        assert sn.toy_run("PG", lp)["J"][-1] > 1.9


def test_toy_cli_writes_figure(tmp_path, capsys):
    out = tmp_path / "toy.png"
    sn.run_toy(iters=20, out=out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = capsys.readouterr().out
    assert "cos(NPG)" in text and str(out) in text  # the figure's column and the path written


def test_toy_study_grid_cosines_of_npg_to_itself_are_one():
    c = toy_mdp.toy_grid_cosines("NPG", 1.0, 0.1, 10, 0, reference="NPG", n=5)
    np.testing.assert_allclose(c, 1.0, rtol=1e-12)
    c = toy_mdp.toy_grid_cosines("SM-expected", 1.0, 1e-10, 10, 0, reference="NPG", n=5)
    np.testing.assert_allclose(c, 1.0, rtol=1e-6)  # SM-expected -> NPG / (2 - pi0): parallel
