"""smac_numpy.py -- a pure-numpy port of the Sherman-Morrison natural-gradient step.

This file is the project's numerical ground truth. It needs numpy only (plus
gymnasium for CartPole, tyro for the CLI and, lazily, matplotlib for the figure);
importing it never imports torch.

Contents, top to bottom:

1. The damped rank-1 Fisher solve  F^-1 g  with  F = lambda*I + ell ell^T
   (Sherman-Morrison, paper "Preliminaries" and eq. `sm_update` / `matrixfree`),
   a batched form, and an explicit d x d solve used only by tests and the toy MDP.
2. A log-linear (softmax) policy  pi(a|s) ∝ exp(theta^T phi(s,a)),
   phi(s,a) = onehot(a) ⊗ [s, 1], with stable log-probabilities and analytic score.
3. The paper's two-state toy MDP (section "A Toy Problem" and the appendix
   "Detailed Derivation of the Toy Problem"): exact J, grad J, Fishers, and the
   PG / NPG / SM directions, both as printed in the paper and as derived from the
   MDP's definition, plus the iteration that draws the figure.
4. A small numpy actor-critic (linear policy, linear critic, GAE) trained on
   CartPole-v1 with the SMAC batch-mean step ("Practical Method") or plain SGD.
5. CLI:  python smac_numpy.py toy-mdp   |   python smac_numpy.py cartpole
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Annotated, Union

import numpy as np

# =============================================================================
# 1. Sherman-Morrison direction
# =============================================================================


def sherman_morrison_direction(g: np.ndarray, ell: np.ndarray, damping: float) -> np.ndarray:
    """Return F^-1 g for F = damping*I + ell ell^T, in O(d) time and memory.

    Paper, "Preliminaries" (Sherman-Morrison) and eq. `matrixfree`:
        F^-1 g = (1/lambda) * (g - ell (ell^T g) / (lambda + ell^T ell)).

    g, ell: shape (d,) float arrays.  damping: lambda > 0.  Returns shape (d,).
    Same name and meaning as `smac_a2c.sherman_morrison_direction` (torch).
    """
    g = np.asarray(g, dtype=np.float64)
    ell = np.asarray(ell, dtype=np.float64)
    if damping <= 0:
        raise ValueError(f"damping must be > 0, got {damping}")
    return (g - ell * (ell @ g) / (damping + ell @ ell)) / damping


def sherman_morrison_direction_batched(G: np.ndarray, L: np.ndarray, damping: float) -> np.ndarray:
    """Row-wise Sherman-Morrison: row i is (damping*I + L_i L_i^T)^-1 G_i.

    G, L: shape (n, d).  Returns shape (n, d).  Equivalent to a Python loop of
    `sherman_morrison_direction` over the rows, with two row-wise dot products.
    """
    G = np.asarray(G, dtype=np.float64)
    L = np.asarray(L, dtype=np.float64)
    if damping <= 0:
        raise ValueError(f"damping must be > 0, got {damping}")
    lg = np.einsum("nd,nd->n", L, G)[:, None]  # (n, 1): ell_i^T g_i
    ll = np.einsum("nd,nd->n", L, L)[:, None]  # (n, 1): ell_i^T ell_i
    return (G - L * lg / (damping + ll)) / damping


def explicit_direction(g: np.ndarray, ell: np.ndarray, damping: float) -> np.ndarray:
    """Build the d x d matrix F = damping*I + ell ell^T and solve F x = g (LU).

    O(d^2) memory, O(d^3) time: for tests and the toy MDP only.
    g, ell: shape (d,).  Returns shape (d,).
    """
    g = np.asarray(g, dtype=np.float64)
    ell = np.asarray(ell, dtype=np.float64)
    F = damping * np.eye(g.shape[0]) + np.outer(ell, ell)
    return np.linalg.solve(F, g)


# =============================================================================
# 2. Log-linear (softmax) policy
# =============================================================================


class LogLinearPolicy:
    """pi(a|s) = softmax_a(theta^T phi(s,a)),  phi(s,a) = onehot(a) ⊗ [s, 1].

    theta is a flat vector of shape (d,), d = n_actions * (obs_dim + 1); viewed as
    a matrix W of shape (n_actions, obs_dim + 1), the logits are W @ [s, 1].
    All batched methods take obs of shape (B, obs_dim) and actions of shape (B,).
    """

    def __init__(self, obs_dim: int, n_actions: int):
        self.obs_dim = obs_dim
        self.n_actions = n_actions
        self.dim = n_actions * (obs_dim + 1)

    def _x(self, obs: np.ndarray) -> np.ndarray:
        obs = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return np.concatenate([obs, np.ones((obs.shape[0], 1))], axis=1)  # (B, obs_dim+1)

    def logits(self, theta: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """(B, n_actions) logits."""
        W = theta.reshape(self.n_actions, self.obs_dim + 1)
        return self._x(obs) @ W.T

    def log_probs(self, theta: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """(B, n_actions) log pi(.|s), via log-sum-exp (max-shifted, no overflow)."""
        z = self.logits(theta, obs)
        m = z.max(axis=1, keepdims=True)
        return z - (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True)))

    def log_prob(self, theta: np.ndarray, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """(B,) log pi(a_i|s_i)."""
        lp = self.log_probs(theta, obs)
        return lp[np.arange(lp.shape[0]), np.asarray(actions, dtype=np.int64)]

    def score(self, theta: np.ndarray, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """(B, d) analytic score ell = phi(s,a) - E_{a'~pi}[phi(s,a')] = (onehot(a) - pi) ⊗ [s,1]."""
        x = self._x(obs)
        p = np.exp(self.log_probs(theta, obs))
        onehot = np.eye(self.n_actions)[np.asarray(actions, dtype=np.int64)]
        return ((onehot - p)[:, :, None] * x[:, None, :]).reshape(x.shape[0], self.dim)


# =============================================================================
# 3. The two-state toy MDP (paper: "A Toy Problem" + appendix derivation)
# =============================================================================
#
# States x in {0, 1}, actions a in {0, 1}.  a = 0 self-loops with reward +1 (x=0)
# or +2 (x=1); a = 1 switches state with reward 0.  Start at x = 0.
#   pi0 = pi(a=0|x=0) = 1/(1+exp(lambda_p theta0)),  pi1 = pi(a=0|x=1) = 1/(1+exp(theta1)).
# Log-odds of the self-loop action: u0 = log(pi0/(1-pi0)) = -lambda_p theta0, u1 = -theta1.
#
# Which MDP does the printed J = pi0 + 2 (1-pi0) pi1 describe?  It is NOT the plain
# horizon-2 return of the drawn MDP (that is pi0 + pi0^2 + 2(1-pi0)pi1, see
# `toy_enumerate(..., terminal_self_loop=False)`).  It is the undiscounted (gamma = 1)
# return of the horizon-2 episode in which the self-loop at x=0 ends the episode:
#   t=0 at x=0:  a=0 -> r=1, episode over;   a=1 -> r=0, go to x=1;
#   t=1 at x=1:  a=0 -> r=2;                 a=1 -> r=0;   episode over (H = 2).
# Then x=0 is visited only at t=0 and x=1 only at t=1, so Q and V are per-state:
#   Q(0,0)=1, Q(0,1)=2 pi1, V(0)=J;   Q(1,0)=2, Q(1,1)=0, V(1)=2 pi1,
# and the expected visit counts are D(0) = 1, D(1) = 1 - pi0.  The tests verify all
# of this by enumerating the trajectories.
#
# theta: shape (2,).  "direction" functions return shape (2,).

TOY_LAMBDA_PS = (0.75, 1.0, 2.0)


def _sigmoid(z):
    """Stable logistic 1/(1+exp(-z))."""
    return np.exp(-np.logaddexp(0.0, -z))


def toy_pi(theta: np.ndarray, lam_p: float) -> tuple[float, float]:
    """(pi0, pi1) = (pi(a=0|x=0), pi(a=0|x=1)), the paper's parametrization."""
    return float(_sigmoid(-lam_p * theta[0])), float(_sigmoid(-theta[1]))


def toy_theta_from_pi(pi0: float, pi1: float, lam_p: float) -> np.ndarray:
    """Inverse of `toy_pi`: theta with pi(a=0|x=0) = pi0 and pi(a=0|x=1) = pi1."""
    return np.array([np.log((1 - pi0) / pi0) / lam_p, np.log((1 - pi1) / pi1)])


def toy_log_odds(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """(u0, u1) = log-odds of the self-loop action a=0 in x=0 and x=1: (-lambda_p theta0, -theta1)."""
    return np.array([-lam_p * theta[0], -theta[1]])


def toy_J(theta: np.ndarray, lam_p: float) -> float:
    """Paper eq. (toy objective): J = pi0 + 2 (1 - pi0) pi1."""
    pi0, pi1 = toy_pi(theta, lam_p)
    return pi0 + 2.0 * (1.0 - pi0) * pi1


def toy_grad_J(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """Paper eq. (analytic policy gradient): [-lambda_p pi0(1-pi0)(1-2pi1), -2(1-pi0)pi1(1-pi1)]."""
    pi0, pi1 = toy_pi(theta, lam_p)
    return np.array([-lam_p * pi0 * (1 - pi0) * (1 - 2 * pi1), -2.0 * (1 - pi0) * pi1 * (1 - pi1)])


def toy_score(theta: np.ndarray, lam_p: float, x: int, a: int) -> np.ndarray:
    """Appendix eq. (score cases): grad_theta log pi(a|x), shape (2,)."""
    pi0, pi1 = toy_pi(theta, lam_p)
    if x == 0:
        return np.array([-lam_p * (1 - pi0) if a == 0 else lam_p * pi0, 0.0])
    return np.array([0.0, -(1 - pi1) if a == 0 else pi1])


def toy_prob(theta: np.ndarray, lam_p: float, x: int, a: int) -> float:
    """pi(a|x), each action's probability computed directly (no 1 - p cancellation)."""
    z = lam_p * theta[0] if x == 0 else theta[1]  # pi(a=0|x) = sigmoid(-z)
    return float(_sigmoid(-z) if a == 0 else _sigmoid(z))


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
            p = prob * toy_prob(theta, lam_p, x, a)
            r = (1.0 if x == 0 else 2.0) if a == 0 else 0.0
            nxt = x if a == 0 else 1 - x
            if terminal_self_loop and x == 0 and a == 0:
                out.append((p, ret + r, path + [(x, a)]))
            else:
                rec(nxt, t + 1, p, ret + r, path + [(x, a)])

    rec(0, 0, 1.0, 0.0, [])
    return out


def toy_bruteforce(theta: np.ndarray, lam_p: float, horizon: int = 2, terminal_self_loop: bool = True) -> dict:
    """From the enumeration: J, grad J (likelihood ratio), trajectory Fisher, visit counts.

    J        = sum_tau P(tau) R(tau)
    grad_J   = sum_tau P(tau) R(tau) sum_t ell(x_t, a_t)
    F_traj   = sum_tau P(tau) (sum_t ell_t)(sum_t ell_t)^T   (Fisher of the trajectory law)
    visits   = D(x) = expected number of visits to x per episode
    """
    J, grad, F, visits = 0.0, np.zeros(2), np.zeros((2, 2)), np.zeros(2)
    for p, ret, path in toy_enumerate(theta, lam_p, horizon, terminal_self_loop):
        s = sum(toy_score(theta, lam_p, x, a) for x, a in path)
        J += p * ret
        grad += p * ret * s
        F += p * np.outer(s, s)
        for x, _ in path:
            visits[x] += p
    return {"J": J, "grad_J": grad, "F_traj": F, "visits": visits}


def toy_fisher_printed(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """Paper eq. (FIM): diag(lambda_p^2 pi0(1-pi0), pi1(1-pi1)) -- no state-visitation weighting."""
    pi0, pi1 = toy_pi(theta, lam_p)
    return np.diag([lam_p**2 * pi0 * (1 - pi0), pi1 * (1 - pi1)])


def toy_fisher_state(theta: np.ndarray, lam_p: float, x: int) -> np.ndarray:
    """Paper eq. `fim` by definition: F_x = sum_a pi(a|x) ell ell^T, shape (2, 2)."""
    return sum(toy_prob(theta, lam_p, x, a) * np.outer(toy_score(theta, lam_p, x, a), toy_score(theta, lam_p, x, a))
               for a in (0, 1))


def toy_visitation(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """State-visitation distribution d(x) = D(x) / sum D, D = (1, 1-pi0) (gamma = 1, H = 2, start x=0)."""
    pi0, _ = toy_pi(theta, lam_p)
    D = np.array([1.0, 1.0 - pi0])
    return D / D.sum()


def toy_fisher_weighted(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """F_rho = E_{x~d}[F_x] (paper "Preliminaries"), d = `toy_visitation`: diag(F00, (1-pi0) F11)/(2-pi0)."""
    d = toy_visitation(theta, lam_p)
    return d[0] * toy_fisher_state(theta, lam_p, 0) + d[1] * toy_fisher_state(theta, lam_p, 1)


def toy_npg_printed(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """Paper eq. (NPG direction), as printed: [-(1-2pi1)/lambda_p, -2(1-pi0)]."""
    pi0, pi1 = toy_pi(theta, lam_p)
    return np.array([-(1 - 2 * pi1) / lam_p, -2.0 * (1 - pi0)])


def toy_npg(theta: np.ndarray, lam_p: float, weighted: bool = False) -> np.ndarray:
    """F^-1 grad J by numpy.linalg.solve; printed Fisher, or visitation-weighted if `weighted`."""
    F = toy_fisher_weighted(theta, lam_p) if weighted else toy_fisher_printed(theta, lam_p)
    return np.linalg.solve(F, toy_grad_J(theta, lam_p))


def toy_sm_printed(theta: np.ndarray, lam_p: float, damping: float) -> np.ndarray:
    """Paper eq. (SM direction), matrix form as printed: (1/lambda)(I - F/(lambda + Tr F)) grad J.

    This is eq. `sm_update` with ell ell^T -> F and ell^T ell -> Tr F.  It equals
    (lambda I + F)^-1 grad J only when F has rank 1; the toy F is rank 2.
    """
    F = toy_fisher_printed(theta, lam_p)
    gJ = toy_grad_J(theta, lam_p)
    return (gJ - F @ gJ / (damping + np.trace(F))) / damping


def toy_sm_printed_components(theta: np.ndarray, lam_p: float, damping: float) -> np.ndarray:
    """The paper's component-wise expansion of the SM direction, copied term by term.

    It does NOT equal `toy_sm_printed`: the second term of each component carries
    the wrong sign (-F_ii * gradJ_i / (...) with gradJ_i < 0 should give '+').
    Kept only so a test can pin the discrepancy.
    """
    pi0, pi1 = toy_pi(theta, lam_p)
    lam = damping
    den = lam**2 + lam * (lam_p**2 * pi0 * (1 - pi0) + pi1 * (1 - pi1))
    c0 = (1 / lam) * (-lam_p * pi0 * (1 - pi0) * (1 - 2 * pi1)) - lam_p**3 * pi0**2 * (1 - pi0) ** 2 * (1 - 2 * pi1) / den
    c1 = (1 / lam) * (-2 * (1 - pi0) * pi1 * (1 - pi1)) - 2 * pi1**2 * (1 - pi1) ** 2 * (1 - pi0) / den
    return np.array([c0, c1])


def toy_advantage(theta: np.ndarray, lam_p: float, x: int, a: int) -> float:
    """A(x,a) = Q(x,a) - V(x) in the terminal-self-loop H=2 MDP (see block comment above)."""
    pi0, pi1 = toy_pi(theta, lam_p)
    if x == 0:
        q = 1.0 if a == 0 else 2.0 * pi1
        return q - (pi0 + 2 * (1 - pi0) * pi1)
    q = 2.0 if a == 0 else 0.0
    return q - 2.0 * pi1


def toy_sample_scores(theta: np.ndarray, lam_p: float, n: int, rng: np.random.Generator):
    """Draw n pairs (x, a) ~ d(x) pi(a|x); return scores ell (n, 2) and advantages A (n,)."""
    d = toy_visitation(theta, lam_p)
    pi = toy_pi(theta, lam_p)
    xs = (rng.random(n) >= d[0]).astype(int)
    acts = (rng.random(n) >= np.array(pi)[xs]).astype(int)
    table_l = np.array([[toy_score(theta, lam_p, x, a) for a in (0, 1)] for x in (0, 1)])  # (2, 2, 2)
    table_A = np.array([[toy_advantage(theta, lam_p, x, a) for a in (0, 1)] for x in (0, 1)])  # (2, 2)
    return table_l[xs, acts], table_A[xs, acts]


def toy_sm_sampled(theta: np.ndarray, lam_p: float, damping: float, n: int, rng: np.random.Generator,
                   batch_mean: bool = False) -> np.ndarray:
    """SM direction from sampled scores ell_i with exact advantages A_i.

    per-sample (Algorithm 1, eq. `matrixfree`, theta held fixed over the batch):
        mean_i (lambda I + ell_i ell_i^T)^-1 ell_i A_i  =  mean_i ell_i A_i / (lambda + |ell_i|^2)
    batch_mean=True ("Practical Method"):
        (lambda I + lbar lbar^T)^-1 gbar,  lbar = mean_i ell_i,  gbar = mean_i ell_i A_i.
    """
    L, A = toy_sample_scores(theta, lam_p, n, rng)
    G = L * A[:, None]
    if batch_mean:
        return sherman_morrison_direction(G.mean(0), L.mean(0), damping)
    return sherman_morrison_direction_batched(G, L, damping).mean(0)


def toy_sm_expected(theta: np.ndarray, lam_p: float, damping: float) -> np.ndarray:
    """Exact expectation of the per-sample SM step over (x, a) ~ d(x) pi(a|x):

        sum_{x,a} d(x) pi(a|x) ell A / (damping + |ell|^2).

    As damping -> 0 this tends to NPG-printed / (2 - pi0): each one-sample step is
    A/ell, the compatible weight of its state, but x=1 is sampled only with d(1).
    """
    d = toy_visitation(theta, lam_p)
    out = np.zeros(2)
    for x in (0, 1):
        for a in (0, 1):
            ell = toy_score(theta, lam_p, x, a)
            out += d[x] * toy_prob(theta, lam_p, x, a) * ell * toy_advantage(theta, lam_p, x, a) / (damping + ell @ ell)
    return out


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    return float(u @ v / (nu * nv)) if nu > 0 and nv > 0 else float("nan")


TOY_METHODS = ("PG", "NPG", "NPG-weighted", "SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean")


def toy_direction(method: str, theta: np.ndarray, lam_p: float, damping: float, n_samples: int,
                  rng: np.random.Generator) -> np.ndarray:
    """One of TOY_METHODS evaluated at theta, shape (2,)."""
    if method == "PG":
        return toy_grad_J(theta, lam_p)
    if method == "NPG":
        return toy_npg_printed(theta, lam_p)
    if method == "NPG-weighted":
        return toy_npg(theta, lam_p, weighted=True)
    if method == "SM-printed":
        return toy_sm_printed(theta, lam_p, damping)
    if method == "SM-expected":
        return toy_sm_expected(theta, lam_p, damping)
    if method == "SM-sampled":
        return toy_sm_sampled(theta, lam_p, damping, n_samples, rng)
    if method == "SM-batch-mean":
        return toy_sm_sampled(theta, lam_p, damping, n_samples, rng, batch_mean=True)
    raise ValueError(f"unknown method {method!r}")


def toy_run(method: str, lam_p: float, *, start_pi: tuple[float, float] = (0.9, 0.2), step: float = 0.05,
            iters: int = 300, damping: float = 0.1, n_samples: int = 100, seed: int = 0) -> dict:
    """Iterate theta <- theta + step * dir / |dir| (fixed Euclidean step length in theta).

    Start: pi(a=0|x=0) = start_pi[0], pi(a=0|x=1) = start_pi[1] (same policy for every lambda_p).
    Returns arrays: theta (iters+1, 2), log_odds (iters+1, 2), J (iters+1,), and cos to the
    printed NPG and to the weighted NPG at every iterate before the step (iters,).
    """
    rng = np.random.default_rng(seed)
    theta = toy_theta_from_pi(*start_pi, lam_p)
    thetas, Js, cos_npg, cos_w = [theta.copy()], [toy_J(theta, lam_p)], [], []
    for _ in range(iters):
        d = toy_direction(method, theta, lam_p, damping, n_samples, rng)
        cos_npg.append(_cos(d, toy_npg_printed(theta, lam_p)))
        cos_w.append(_cos(d, toy_npg(theta, lam_p, weighted=True)))
        nd = np.linalg.norm(d)
        if nd > 0:
            theta = theta + step * d / nd
        thetas.append(theta.copy())
        Js.append(toy_J(theta, lam_p))
    thetas = np.array(thetas)
    return {"theta": thetas, "log_odds": np.array([toy_log_odds(t, lam_p) for t in thetas]),
            "J": np.array(Js), "cos_npg": np.array(cos_npg), "cos_npg_weighted": np.array(cos_w)}


def toy_plot(runs: dict, path: Path, methods: tuple[str, ...]) -> None:
    """Two panels as in the paper's figure: log-odds (x=0 vs x=1) and J over iterations.

    runs[(method, lam_p)] = output of `toy_run`.  Colour = method, line style = lambda_p.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"PG": "0.55", "NPG": "tab:blue", "NPG-weighted": "tab:purple", "SM-printed": "tab:red",
              "SM-expected": "tab:orange", "SM-sampled": "tab:green", "SM-batch-mean": "tab:olive"}
    styles = {0.75: ":", 1.0: "--", 2.0: "-"}
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 5))
    for (m, lp), r in runs.items():
        if m not in methods:
            continue
        kw = dict(ls=styles.get(lp, "-."), color=colors[m], lw=1.4, label=f"{m}, λp={lp}")
        ax0.plot(r["log_odds"][:, 0], r["log_odds"][:, 1], **kw)
        ax1.plot(r["J"], **kw)
    start = next(iter(runs.values()))["log_odds"][0]
    ax0.plot(*start, "ko", ms=5)
    ax0.annotate("start", start, textcoords="offset points", xytext=(6, -10))
    ax0.set_xlim(-12, 12)
    ax0.set_xlabel("log-odds of self-loop at x=0:  log π(0|0)/π(1|0)   (NPG runs exit right)")
    ax0.set_ylabel("log-odds of self-loop at x=1:  log π(0|1)/π(1|1)")
    ax0.set_title("trajectories in log-odds space (optimum: up-left)")
    ax1.set_xlabel("iteration")
    ax1.set_ylabel("J(θ) = π0 + 2(1-π0)π1")
    ax1.set_title("return over iterations")
    ax1.legend(fontsize=6.5, ncol=2, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


# =============================================================================
# 4. Numpy actor-critic on CartPole-v1 (SMAC batch-mean step or plain SGD)
# =============================================================================


class Adam:
    """Plain Adam (Kingma & Ba) for one flat parameter vector of shape (d,)."""

    def __init__(self, dim: int, lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
        self.lr, self.b1, self.b2, self.eps = lr, b1, b2, eps
        self.m, self.v, self.t = np.zeros(dim), np.zeros(dim), 0

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad**2
        mhat = self.m / (1 - self.b1**self.t)
        vhat = self.v / (1 - self.b2**self.t)
        return params - self.lr * mhat / (np.sqrt(vhat) + self.eps)


def gae(rewards, values, next_values, dones, gamma: float, lam: float) -> np.ndarray:
    """Paper eq. (GAE): delta_t = r_t + gamma V(s_{t+1}) - V(s_t); A_t = sum_l (gamma lam)^l delta_{t+l}.

    All inputs shape (T,).  next_values[t] is 0 when step t terminated and V(s_{t+1})
    otherwise (also on truncation: we bootstrap from the final observation).  dones[t]
    (terminated or truncated) cuts the trace, so advantages never cross episodes.
    """
    T = len(rewards)
    adv = np.zeros(T)
    last = 0.0
    for t in reversed(range(T)):
        delta = rewards[t] + gamma * next_values[t] - values[t]
        last = delta + gamma * lam * (1.0 - dones[t]) * last
        adv[t] = last
    return adv


def train_cartpole(method: str = "smac", total_steps: int = 100_000, T: int = 1000, eta: float = 0.1,
                   damping: float = 0.1, gamma: float = 0.99, gae_lambda: float = 0.9, critic_lr: float = 0.01,
                   critic_steps: int = 20, norm_adv: bool = True, seed: int = 0) -> dict:
    """Train the log-linear policy on CartPole-v1; return episode returns and update diagnostics.

    Per update (T transitions): GAE advantages A (T,), critic = linear V(s) = w^T [s, 1]
    fitted by `critic_steps` full-batch Adam steps on mean (R_t - V(s_t))^2, then ONE actor step:
      smac ("Practical Method"):  lbar = mean_t ell_t, g = mean_t ell_t A_t,
                                  theta += eta * (damping I + lbar lbar^T)^-1 g
      sgd  (AC-SGD baseline):     theta += eta * g
    """
    import gymnasium as gym

    if method not in ("smac", "sgd"):
        raise ValueError(f"method must be 'smac' or 'sgd', got {method!r}")
    env = gym.make("CartPole-v1")
    obs_dim, n_act = env.observation_space.shape[0], env.action_space.n
    pol = LogLinearPolicy(obs_dim, n_act)
    theta = np.zeros(pol.dim)
    w = np.zeros(obs_dim + 1)
    critic_opt = Adam(obs_dim + 1, critic_lr)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    ep_ret, ep_returns, diag = 0.0, [], []
    n_updates = max(1, total_steps // T)
    for _ in range(n_updates):
        O = np.zeros((T, obs_dim)); NO = np.zeros((T, obs_dim))
        A_ = np.zeros(T, dtype=np.int64); R = np.zeros(T); TERM = np.zeros(T); DONE = np.zeros(T)
        W = theta.reshape(n_act, obs_dim + 1)
        for t in range(T):
            z = W[:, :-1] @ obs + W[:, -1]
            p = np.exp(z - z.max()); p /= p.sum()
            a = int(np.searchsorted(np.cumsum(p), rng.random() * p.sum() * (1 - 1e-12)))
            nobs, r, term, trunc, _ = env.step(a)
            O[t], NO[t], A_[t], R[t], TERM[t], DONE[t] = obs, nobs, a, r, term, term or trunc
            ep_ret += r
            if term or trunc:
                ep_returns.append(ep_ret); ep_ret = 0.0
                obs, _ = env.reset()
            else:
                obs = nobs
        X = np.concatenate([O, np.ones((T, 1))], 1)
        NX = np.concatenate([NO, np.ones((T, 1))], 1)
        values = X @ w
        next_values = (NX @ w) * (1.0 - TERM)  # bootstrap on truncation, not on termination
        adv = gae(R, values, next_values, DONE, gamma, gae_lambda)
        returns = adv + values  # R_t = A_t + V(s_t), the critic target
        for _ in range(critic_steps):
            w = critic_opt.step(w, 2.0 * X.T @ (X @ w - returns) / T)
        if norm_adv:
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        S = pol.score(theta, O, A_)  # (T, d)
        g = (S * adv[:, None]).mean(0)
        if method == "smac":
            lbar = S.mean(0)
            step = sherman_morrison_direction(g, lbar, damping)
        else:
            lbar = S.mean(0)
            step = g
        theta = theta + eta * step
        diag.append({"lbar_sq": float(lbar @ lbar), "cos_g_step": _cos(g, step)})
    env.close()
    return {"episode_returns": np.array(ep_returns), "diag": diag, "theta": theta}


# =============================================================================
# 5. CLI
# =============================================================================


@dataclasses.dataclass
class ToyMDP:
    """Iterate PG / NPG / SM directions on the paper's two-state MDP, print cosines, write the figure."""

    lambda_ps: tuple[float, ...] = TOY_LAMBDA_PS
    """policy scalings lambda_p (paper: 0.75, 1, 2)"""
    start_pi0: float = 0.9
    """initial pi(a=0|x=0), probability of the poor self-loop"""
    start_pi1: float = 0.2
    """initial pi(a=0|x=1)"""
    step: float = 0.05
    """Euclidean step length in theta per iteration (theta += step * d/|d|)"""
    iters: int = 300
    """iterations per run"""
    damping: float = 0.1
    """Sherman-Morrison damping lambda for the SM directions"""
    n_samples: int = 100
    """(x, a) samples per iteration for SM-sampled / SM-batch-mean"""
    seed: int = 0
    """seed of numpy.random.default_rng for the sampled directions"""
    damping_sweep: tuple[float, ...] = (0.01, 0.1, 1.0, 10.0)
    """dampings for the extra cosine table"""
    out: Path = Path("docs/toy_mdp.png")
    """where to write the two-panel figure"""


@dataclasses.dataclass
class CartPole:
    """Train the numpy log-linear actor-critic on CartPole-v1 with SMAC and with SGD."""

    total_steps: int = 100_000
    """environment steps per run"""
    seeds: tuple[int, ...] = (0, 1, 2)
    """seeds (env reset + action sampling)"""
    methods: tuple[str, ...] = ("smac", "sgd")
    """which actor steps to run: smac and/or sgd"""
    eta_smac: float = 0.1
    """SMAC actor step size eta (paper, CartPole: 5e-3 with a neural policy; too slow for this linear one)"""
    eta_sgd: float = 1.0
    """SGD actor step size (SMAC with lbar ~ 0 is SGD with step eta/damping = 0.1/0.1 = 1.0)"""
    damping: float = 0.1
    """Sherman-Morrison damping lambda (paper, CartPole: 0.1)"""
    T: int = 1000
    """steps per update (paper: 1000)"""
    gamma: float = 0.99
    """discount (paper: 0.99)"""
    gae_lambda: float = 0.9
    """GAE lambda (paper: 0.9)"""
    critic_lr: float = 0.01
    """critic Adam learning rate"""
    critic_steps: int = 20
    """full-batch critic Adam steps per update"""
    norm_adv: bool = True
    """normalize advantages per batch (paper silent)"""
    last_episodes: int = 20
    """report the mean return of this many final episodes"""


def _validate(args) -> None:
    if isinstance(args, ToyMDP):
        if not args.lambda_ps or any(lp <= 0 for lp in args.lambda_ps):
            raise ValueError("--lambda-ps must be positive")
        if not (0 < args.start_pi0 < 1 and 0 < args.start_pi1 < 1):
            raise ValueError("--start-pi0 and --start-pi1 must lie strictly between 0 and 1")
        if args.step <= 0 or args.iters < 1 or args.n_samples < 1:
            raise ValueError("--step must be > 0, --iters and --n-samples >= 1")
        if args.damping <= 0 or any(d <= 0 for d in args.damping_sweep):
            raise ValueError("--damping and --damping-sweep must be > 0")
    else:
        if args.total_steps < args.T or args.T < 1:
            raise ValueError("need --T >= 1 and --total-steps >= --T")
        if any(m not in ("smac", "sgd") for m in args.methods) or not args.methods:
            raise ValueError("--methods takes smac and/or sgd")
        if args.damping <= 0 or args.eta_smac <= 0 or args.eta_sgd <= 0 or args.critic_lr <= 0:
            raise ValueError("--damping, --eta-smac, --eta-sgd, --critic-lr must be > 0")
        if not (0 < args.gamma <= 1 and 0 <= args.gae_lambda <= 1) or args.last_episodes < 1:
            raise ValueError("need 0 < gamma <= 1, 0 <= gae-lambda <= 1, last-episodes >= 1")


def toy_grid_cosines(method: str, lam_p: float, damping: float, n_samples: int, seed: int,
                     reference: str = "NPG", half_width: float = 4.0, n: int = 21) -> np.ndarray:
    """Cosine of `method` to `reference` on an n x n grid of log-odds (u0, u1) in [-w, w]^2.

    Trajectory-free comparison: every direction is evaluated at the same policies.
    Returns shape (n*n,).
    """
    rng = np.random.default_rng(seed)
    us = np.linspace(-half_width, half_width, n)
    out = []
    for u0 in us:
        for u1 in us:
            theta = np.array([-u0 / lam_p, -u1])
            out.append(_cos(toy_direction(method, theta, lam_p, damping, n_samples, rng),
                            toy_direction(reference, theta, lam_p, damping, n_samples, rng)))
    return np.array(out)


def run_toy_cli(args: ToyMDP) -> None:
    methods = ("PG", "NPG", "NPG-weighted", "SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean")
    kw = dict(start_pi=(args.start_pi0, args.start_pi1), step=args.step, iters=args.iters,
              n_samples=args.n_samples, seed=args.seed)
    runs = {(m, lp): toy_run(m, lp, damping=args.damping, **kw) for lp in args.lambda_ps for m in methods}
    u = toy_log_odds(toy_theta_from_pi(args.start_pi0, args.start_pi1, 1.0), 1.0)
    print(f"toy MDP (H=2, gamma=1, x=0 self-loop terminal; J = pi0 + 2(1-pi0)pi1). start pi(a=0|x=0)={args.start_pi0}, "
          f"pi(a=0|x=1)={args.start_pi1} (log-odds {u[0]:+.3f}, {u[1]:+.3f}, same policy for every lambda_p)")
    print(f"step rule: theta += {args.step} * d/|d| (fixed Euclidean length in theta), {args.iters} iterations; "
          f"damping={args.damping}; SM-sampled/SM-batch-mean: {args.n_samples} (x,a) ~ d(x)pi(a|x) per iteration, "
          f"numpy default_rng({args.seed})")
    print("[A] cosine to NPG along each method's own trajectory, mean [min] over iterations;"
          " NPG = printed F (no visitation weighting), NPG-w = visitation-weighted F")
    for lp in args.lambda_ps:
        for m in methods:
            r = runs[(m, lp)]
            hit = np.nonzero(r["J"] >= 1.9)[0]
            print(f"  lambda_p={lp:<5} {m:<14} cos(NPG) {np.nanmean(r['cos_npg']):+.3f} [{np.nanmin(r['cos_npg']):+.3f}]"
                  f"   cos(NPG-w) {np.nanmean(r['cos_npg_weighted']):+.3f} [{np.nanmin(r['cos_npg_weighted']):+.3f}]"
                  f"   final J {r['J'][-1]:.4f}   first J>=1.9 at iter {hit[0] if len(hit) else 'never'}")
    print("[B] cosine to NPG / NPG-w at the same policies: 21x21 grid of log-odds in [-4,4]^2, mean [min]")
    for lp in args.lambda_ps:
        for m in ("PG", "SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean"):
            c1 = toy_grid_cosines(m, lp, args.damping, args.n_samples, args.seed, "NPG")
            c2 = toy_grid_cosines(m, lp, args.damping, args.n_samples, args.seed, "NPG-weighted")
            print(f"  lambda_p={lp:<5} {m:<14} cos(NPG) {np.nanmean(c1):+.3f} [{np.nanmin(c1):+.3f}]"
                  f"   cos(NPG-w) {np.nanmean(c2):+.3f} [{np.nanmin(c2):+.3f}]")
    print("[C] damping sweep: mean cosine to NPG (printed F) on the grid of [B]")
    print("  lambda_p  damping   SM-printed  SM-expected  SM-sampled  SM-batch-mean   (PG)")
    for lp in args.lambda_ps:
        pg = np.nanmean(toy_grid_cosines("PG", lp, 1.0, args.n_samples, args.seed))
        for dmp in args.damping_sweep:
            c = [np.nanmean(toy_grid_cosines(m, lp, dmp, args.n_samples, args.seed))
                 for m in ("SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean")]
            print(f"  {lp:<9} {dmp:<9} {c[0]:+.3f}      {c[1]:+.3f}       {c[2]:+.3f}      {c[3]:+.3f}         ({pg:+.3f})")
    toy_plot(runs, args.out, ("PG", "NPG", "NPG-weighted", "SM-printed", "SM-sampled"))
    print(f"wrote {args.out}")


def run_cartpole_cli(args: CartPole) -> None:
    print(f"CartPole-v1, log-linear policy, {args.total_steps} steps per run, T={args.T}, gamma={args.gamma}, "
          f"gae_lambda={args.gae_lambda}, damping={args.damping}, norm_adv={args.norm_adv}; "
          f"mean return of the last {args.last_episodes} episodes (random policy ~22)")
    import gymnasium as gym

    env, rng, rand = gym.make("CartPole-v1"), np.random.default_rng(0), []
    for ep in range(200):
        env.reset(seed=ep)
        ret, done = 0.0, False
        while not done:
            _, r, term, trunc, _ = env.step(int(rng.integers(2)))
            ret, done = ret + r, term or trunc
        rand.append(ret)
    print(f"  random policy: mean return {np.mean(rand):.1f} over 200 episodes")
    for m in args.methods:
        finals = []
        for s in args.seeds:
            t0 = time.perf_counter()
            out = train_cartpole(m, args.total_steps, args.T, args.eta_smac if m == "smac" else args.eta_sgd,
                                 args.damping, args.gamma, args.gae_lambda, args.critic_lr, args.critic_steps,
                                 args.norm_adv, s)
            dt = time.perf_counter() - t0
            er = out["episode_returns"]
            final = float(er[-args.last_episodes:].mean()) if len(er) else float("nan")
            finals.append(final)
            lsq = np.mean([d["lbar_sq"] for d in out["diag"]])
            cs = np.mean([d["cos_g_step"] for d in out["diag"]])
            print(f"  {m:<5} seed {s}: last-{args.last_episodes} mean return {final:7.1f}  ({len(er)} episodes, "
                  f"mean |lbar|^2 {lsq:.2e}, mean cos(g, step) {cs:.6f}, {dt:.1f} s)")
        print(f"  {m:<5} mean over seeds: {np.mean(finals):.1f}  (min {np.min(finals):.1f})")


def main(argv: list[str] | None = None) -> int:
    import tyro

    Cmd = Union[Annotated[ToyMDP, tyro.conf.subcommand("toy-mdp")],
                Annotated[CartPole, tyro.conf.subcommand("cartpole")]]
    import contextlib
    import io

    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            args = tyro.cli(Cmd, args=argv, description=__doc__.split("\n")[0])
    except SystemExit as e:
        if e.code in (0, None):  # --help: tyro wrote it to stdout; pass stderr through
            sys.stderr.write(captured.getvalue())
            return 0
        # tyro draws a multi-line box; keep its first message line, on one line.
        lines = [ln.strip(" │╭╮╰╯─\t") for ln in captured.getvalue().splitlines()]
        lines = [ln for ln in lines if ln]
        msg = lines[1] if len(lines) > 1 else (lines[0] if lines else "invalid arguments")
        print(f"error: {msg} (see: python smac_numpy.py --help)", file=sys.stderr)
        return 2
    try:
        _validate(args)
        if isinstance(args, ToyMDP):
            run_toy_cli(args)
        else:
            run_cartpole_cli(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
