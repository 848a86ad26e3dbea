"""smac_numpy.py: the Sherman-Morrison step in numpy alone (never imports torch), the independent
ground truth.

1. the damped rank-1 solve F^-1 g, F = lambda I + l l^T (eq. `sm_update` / `matrixfree`), batched, and
   explicit;
2. a log-linear softmax policy, its analytic score and its SMAC direction (batch-mean; Algorithm 1's loop);
3. the paper's two-state toy MDP: exact J, grad J, Fishers, the PG / NPG / SM flows and the figure.
CLI: python smac_numpy.py toy-mdp [--help]       (the cosine-grid study: python -m benchmark.studies.toy_mdp)
"""

import argparse
import sys
from pathlib import Path

import numpy as np

# ---- 1. Sherman-Morrison direction -----------------------------------------------------------------------


def sherman_morrison_direction(g: np.ndarray, ell: np.ndarray, damping: float) -> np.ndarray:
    """F^-1 g for F = damping I + ell ell^T in O(d), eq. `matrixfree`:
    (g - ell (ell^T g)/(lambda + ell^T ell))/lambda.
    g, ell: shape (d,). Same name and meaning as smac_a2c.sherman_morrison_direction (torch)."""
    g, ell = np.asarray(g, dtype=np.float64), np.asarray(ell, dtype=np.float64)
    if damping <= 0:
        raise ValueError(f"damping must be > 0, got {damping}")
    return (g - ell * (ell @ g) / (damping + ell @ ell)) / damping


def sherman_morrison_direction_batched(G: np.ndarray, L: np.ndarray, damping: float) -> np.ndarray:
    """Row-wise: row i is (damping I + L_i L_i^T)^-1 G_i, for G, L of shape (n, d)."""
    G, L = np.asarray(G, dtype=np.float64), np.asarray(L, dtype=np.float64)
    if damping <= 0:
        raise ValueError(f"damping must be > 0, got {damping}")
    lg = np.einsum("nd,nd->n", L, G)[:, None]  # (n, 1): ell_i^T g_i
    ll = np.einsum("nd,nd->n", L, L)[:, None]  # (n, 1): ell_i^T ell_i
    return (G - L * lg / (damping + ll)) / damping


def explicit_direction(g: np.ndarray, ell: np.ndarray, damping: float) -> np.ndarray:
    """The d x d matrix F = damping I + ell ell^T solved by LU (O(d^3)): what the tests compare against."""
    g, ell = np.asarray(g, dtype=np.float64), np.asarray(ell, dtype=np.float64)
    return np.linalg.solve(damping * np.eye(g.shape[0]) + np.outer(ell, ell), g)


# ---- 2. Log-linear (softmax) policy and its SMAC direction -----------------------------------------------
class LogLinearPolicy:
    """pi(a|s) = softmax_a(theta^T phi(s,a)), phi(s,a) = onehot(a) ⊗ [s, 1]: theta flat, shape (d,),
    d = n_actions (obs_dim + 1), viewed as W (n_actions, obs_dim + 1); obs (B, obs_dim), actions (B,)."""

    def __init__(self, obs_dim: int, n_actions: int):
        self.obs_dim, self.n_actions, self.dim = obs_dim, n_actions, n_actions * (obs_dim + 1)

    def _x(self, obs: np.ndarray) -> np.ndarray:
        obs = np.atleast_2d(np.asarray(obs, dtype=np.float64))
        return np.concatenate([obs, np.ones((obs.shape[0], 1))], axis=1)  # (B, obs_dim+1)

    def logits(self, theta: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """(B, n_actions) logits W [s, 1]."""
        return self._x(obs) @ theta.reshape(self.n_actions, self.obs_dim + 1).T

    def log_probs(self, theta: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """(B, n_actions) log pi(.|s), via log-sum-exp (max-shifted, no overflow)."""
        z = self.logits(theta, obs)
        m = z.max(axis=1, keepdims=True)
        return z - (m + np.log(np.exp(z - m).sum(axis=1, keepdims=True)))

    def log_prob(self, theta: np.ndarray, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """(B,) log pi(a_i|s_i)."""
        return np.take_along_axis(
            self.log_probs(theta, obs), np.asarray(actions, dtype=np.int64)[:, None], 1
        )[:, 0]

    def score(self, theta: np.ndarray, obs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """(B, d) analytic score ell = phi(s,a) - E_{a'~pi}[phi(s,a')] = (onehot(a) - pi) ⊗ [s,1]."""
        x = self._x(obs)
        p = np.exp(self.log_probs(theta, obs))
        onehot = np.eye(self.n_actions)[np.asarray(actions, dtype=np.int64)]
        return ((onehot - p)[:, :, None] * x[:, None, :]).reshape(x.shape[0], self.dim)


def log_linear_smac_direction(
    policy: LogLinearPolicy,
    theta: np.ndarray,
    obs: np.ndarray,
    actions: np.ndarray,
    advantages: np.ndarray,
    damping: float,
) -> np.ndarray:
    """The batch-mean SMAC direction (Practical Method) from the policy's analytic scores:
    l_bar = mean_i l_i, g = mean_i l_i A_i, returns (damping I + l_bar l_bar^T)^-1 g, shape (d,) laid out
    like theta."""
    L = policy.score(theta, obs, actions)
    g = (L * np.asarray(advantages, dtype=np.float64)[:, None]).mean(0)
    return sherman_morrison_direction(g, L.mean(0), damping)


def log_linear_algorithm1(
    policy: LogLinearPolicy,
    theta: np.ndarray,
    obs: np.ndarray,
    actions: np.ndarray,
    advantages: np.ndarray,
    damping: float,
    lr: float,
) -> np.ndarray:
    """Algorithm 1: for each sample in order, at the current theta, l = score, g = l A,
    theta <- theta + lr (damping I + l l^T)^-1 g. Returns the final theta."""
    theta = np.array(theta, dtype=np.float64)
    for i in range(len(actions)):
        ell = policy.score(theta, obs[i : i + 1], actions[i : i + 1])[0]
        theta = theta + lr * sherman_morrison_direction(ell * advantages[i], ell, damping)
    return theta


# ---- 3. The two-state toy MDP (paper: "A Toy Problem" + appendix derivation) -----------------------------
# x, a in {0, 1}: a = 0 self-loops (reward 1 at x=0, 2 at x=1), a = 1 switches (0); theta, directions: (2,).
# The printed J = pi0 + 2(1-pi0)pi1 is the return of the horizon-2 episode from x=0 in which the self-loop at
# x=0 ends it (docs/numpy_port.md; tests/test_toy_mdp.py enumerates it): Q(0,.) = (1, 2pi1), Q(1,.) = (2, 0).

TOY_LAMBDA_PS = (0.75, 1.0, 2.0)


def _sigmoid(z):  # stable logistic 1/(1+exp(-z))
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


def toy_fisher_printed(theta: np.ndarray, lam_p: float) -> np.ndarray:
    """Paper eq. (FIM): diag(lambda_p^2 pi0(1-pi0), pi1(1-pi1)) -- no state-visitation weighting."""
    pi0, pi1 = toy_pi(theta, lam_p)
    return np.diag([lam_p**2 * pi0 * (1 - pi0), pi1 * (1 - pi1)])


def toy_fisher_state(theta: np.ndarray, lam_p: float, x: int) -> np.ndarray:
    """Paper eq. `fim` by definition: F_x = sum_a pi(a|x) ell ell^T, shape (2, 2)."""
    return sum(
        toy_prob(theta, lam_p, x, a) * np.outer(toy_score(theta, lam_p, x, a), toy_score(theta, lam_p, x, a))
        for a in (0, 1)
    )


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
    """Paper eq. (SM direction) as printed, (1/lambda)(I - F/(lambda + Tr F)) grad J: eq. `sm_update` with
    ell ell^T -> F, ell^T ell -> Tr F; (lambda I + F)^-1 grad J only for a rank-1 F (the toy F has rank 2)."""
    F, gJ = toy_fisher_printed(theta, lam_p), toy_grad_J(theta, lam_p)
    return (gJ - F @ gJ / (damping + np.trace(F))) / damping


def toy_advantage(theta: np.ndarray, lam_p: float, x: int, a: int) -> float:
    """A(x,a) = Q(x,a) - V(x) in the terminal-self-loop H=2 MDP (see block comment above)."""
    pi0, pi1 = toy_pi(theta, lam_p)
    if x == 0:  # V(0) = J
        return (1.0 if a == 0 else 2.0 * pi1) - (pi0 + 2 * (1 - pi0) * pi1)
    return (2.0 if a == 0 else 0.0) - 2.0 * pi1  # V(1) = 2 pi1


def toy_sample_scores(theta: np.ndarray, lam_p: float, n: int, rng: np.random.Generator):
    """Draw n pairs (x, a) ~ d(x) pi(a|x); return scores ell (n, 2) and advantages A (n,)."""
    d, pi = toy_visitation(theta, lam_p), toy_pi(theta, lam_p)
    xs = (rng.random(n) >= d[0]).astype(int)
    acts = (rng.random(n) >= np.array(pi)[xs]).astype(int)
    table_l = np.array([[toy_score(theta, lam_p, x, a) for a in (0, 1)] for x in (0, 1)])  # (2, 2, 2)
    table_A = np.array([[toy_advantage(theta, lam_p, x, a) for a in (0, 1)] for x in (0, 1)])  # (2, 2)
    return table_l[xs, acts], table_A[xs, acts]


def toy_sm_sampled(
    theta: np.ndarray,
    lam_p: float,
    damping: float,
    n: int,
    rng: np.random.Generator,
    batch_mean: bool = False,
) -> np.ndarray:
    """SM direction from sampled scores ell_i, exact advantages A_i: per-sample (Algorithm 1 at a fixed
    theta), mean_i ell_i A_i / (lambda + |ell_i|^2); batch_mean (Practical Method):
    (lambda I + lbar lbar^T)^-1 gbar."""
    L, A = toy_sample_scores(theta, lam_p, n, rng)
    G = L * A[:, None]
    return (
        sherman_morrison_direction(G.mean(0), L.mean(0), damping)
        if batch_mean
        else sherman_morrison_direction_batched(G, L, damping).mean(0)
    )


def _cos(u: np.ndarray, v: np.ndarray) -> float:
    return (
        float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))
        if np.linalg.norm(u) * np.linalg.norm(v)
        else np.nan
    )


TOY_METHODS = ("PG", "NPG", "NPG-weighted", "SM-printed", "SM-sampled", "SM-batch-mean")


def toy_direction(
    method: str, theta: np.ndarray, lam_p: float, damping: float, n_samples: int, rng: np.random.Generator
) -> np.ndarray:
    """One of TOY_METHODS evaluated at theta, shape (2,)."""
    if method == "PG":
        return toy_grad_J(theta, lam_p)
    if method == "NPG":
        return toy_npg_printed(theta, lam_p)
    if method == "NPG-weighted":
        return toy_npg(theta, lam_p, weighted=True)
    if method == "SM-printed":
        return toy_sm_printed(theta, lam_p, damping)
    if method == "SM-sampled":
        return toy_sm_sampled(theta, lam_p, damping, n_samples, rng)
    if method == "SM-batch-mean":
        return toy_sm_sampled(theta, lam_p, damping, n_samples, rng, batch_mean=True)
    raise ValueError(f"unknown method {method!r}")


def toy_run(
    method: str,
    lam_p: float,
    *,
    start_pi: tuple[float, float] = (0.9, 0.2),
    step: float = 0.05,
    iters: int = 300,
    damping: float = 0.1,
    n_samples: int = 100,
    seed: int = 0,
    direction=None,
) -> dict:
    """Iterate theta <- theta + step dir/|dir| (fixed Euclidean length) from pi(a=0|x) = start_pi. Returns
    theta, log_odds (iters+1, 2), J (iters+1,), the cosines to the printed and weighted NPG before each step.
    direction(method, theta, lam_p, damping, n_samples, rng): another set of methods (default
    toy_direction)."""
    rng = np.random.default_rng(seed)
    theta = toy_theta_from_pi(*start_pi, lam_p)
    thetas, Js, cos_npg, cos_w = [theta.copy()], [toy_J(theta, lam_p)], [], []
    for _ in range(iters):
        d = (direction or toy_direction)(method, theta, lam_p, damping, n_samples, rng)
        cos_npg.append(_cos(d, toy_npg_printed(theta, lam_p)))
        cos_w.append(_cos(d, toy_npg(theta, lam_p, weighted=True)))
        nd = np.linalg.norm(d)
        if nd > 0:
            theta = theta + step * d / nd
        thetas.append(theta.copy())
        Js.append(toy_J(theta, lam_p))
    thetas = np.array(thetas)
    return {
        "theta": thetas,
        "log_odds": np.array([toy_log_odds(t, lam_p) for t in thetas]),
        "J": np.array(Js),
        "cos_npg": np.array(cos_npg),
        "cos_npg_weighted": np.array(cos_w),
    }


def toy_plot(runs: dict, path: Path, methods: tuple[str, ...]) -> None:
    """The paper's two panels: log-odds (x=0 vs x=1) and J per iteration; colour = method,
    style = lambda_p."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {
        "PG": "0.55",
        "NPG": "tab:blue",
        "NPG-weighted": "tab:purple",
        "SM-printed": "tab:red",
        "SM-expected": "tab:orange",
        "SM-sampled": "tab:green",
        "SM-batch-mean": "tab:olive",
    }
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
    ax0.set(
        xlim=(-12, 12),
        xlabel="log-odds of self-loop at x=0:  log π(0|0)/π(1|0)   (NPG runs exit right)",
        ylabel="log-odds of self-loop at x=1:  log π(0|1)/π(1|1)",
        title="trajectories in log-odds space (optimum: up-left)",
    )
    ax1.set(xlabel="iteration", ylabel="J(θ) = π0 + 2(1-π0)π1", title="return over iterations")
    ax1.legend(fontsize=6.5, ncol=2, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


# ---- CLI -------------------------------------------------------------------------------------------------
def run_toy(
    lambda_ps=TOY_LAMBDA_PS,
    start_pi0=0.9,
    start_pi1=0.2,
    step=0.05,
    iters=300,
    damping=0.1,
    n_samples=100,
    seed=0,
    out: Path = Path("docs/toy_mdp.png"),
) -> dict:
    """Every method on every lambda_p from the same start; prints the cosines along each run, writes the
    figure."""
    kw = dict(start_pi=(start_pi0, start_pi1), step=step, iters=iters, n_samples=n_samples, seed=seed)
    runs = {(m, lp): toy_run(m, lp, damping=damping, **kw) for lp in lambda_ps for m in TOY_METHODS}
    u = toy_log_odds(toy_theta_from_pi(start_pi0, start_pi1, 1.0), 1.0)
    print(
        "toy MDP (H=2, gamma=1, x=0 self-loop terminal; J = pi0 + 2(1-pi0)pi1). "
        f"start pi(a=0|x=0)={start_pi0}, "
        f"pi(a=0|x=1)={start_pi1} (log-odds {u[0]:+.3f}, {u[1]:+.3f}, same policy for every lambda_p)\n"
        f"step rule: theta += {step} * d/|d|, {iters} iterations; damping={damping}; "
        "SM-sampled/SM-batch-mean: "
        f"{n_samples} (x,a) ~ d(x)pi(a|x) per iteration, numpy default_rng({seed})\ncosine to NPG along each "
        "method's own trajectory, mean [min] over iterations; NPG = printed F, NPG-w = visitation-weighted F"
    )
    for lp in lambda_ps:
        for m in TOY_METHODS:
            r = runs[(m, lp)]
            hit = np.nonzero(r["J"] >= 1.9)[0]
            c = r["cos_npg"]
            print(
                f"  lambda_p={lp:<5} {m:<14} cos(NPG) {np.nanmean(c):+.3f} [{np.nanmin(c):+.3f}]"
                f"   cos(NPG-w) {np.nanmean(r['cos_npg_weighted']):+.3f}"
                f" [{np.nanmin(r['cos_npg_weighted']):+.3f}]"
                f"   final J {r['J'][-1]:.4f}   first J>=1.9 at iter {hit[0] if len(hit) else 'never'}"
            )
    toy_plot(runs, out, ("PG", "NPG", "NPG-weighted", "SM-printed", "SM-sampled"))
    print(f"wrote {out}")
    return runs


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # bad input: one line, exit 2 (argparse's own usage block is not printed)
        print(f"error: {message} (see: python smac_numpy.py toy-mdp --help)", file=sys.stderr)
        raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(description=__doc__.split("\n")[0])
    t = p.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser).add_parser(
        "toy-mdp", help="iterate PG / NPG / SM on the toy MDP, print cosines, write the figure"
    )
    t.add_argument("--lambda-ps", type=float, nargs="+", default=list(TOY_LAMBDA_PS), help="paper: 0.75 1 2")
    t.add_argument("--start-pi0", type=float, default=0.9, help="initial pi(a=0|x=0), the poor self-loop")
    t.add_argument("--start-pi1", type=float, default=0.2, help="initial pi(a=0|x=1)")
    t.add_argument(
        "--step", type=float, default=0.05, help="Euclidean step length in theta (theta += step d/|d|)"
    )
    t.add_argument("--iters", type=int, default=300, help="iterations per run")
    t.add_argument("--damping", type=float, default=0.1, help="Sherman-Morrison damping lambda")
    t.add_argument("--n-samples", type=int, default=100, help="(x, a) samples per iteration (SM-sampled)")
    t.add_argument("--seed", type=int, default=0, help="numpy default_rng seed of the sampled directions")
    t.add_argument("--out", type=Path, default=Path("docs/toy_mdp.png"), help="the two-panel figure")
    a = p.parse_args(argv)
    bad = [
        msg
        for ok, msg in [
            (all(lp > 0 for lp in a.lambda_ps), "--lambda-ps must be positive"),
            (0 < a.start_pi0 < 1 and 0 < a.start_pi1 < 1, "--start-pi0, -pi1 must be in (0, 1)"),
            (
                a.step > 0 and a.iters >= 1 and a.n_samples >= 1,
                "need --step > 0, --iters >= 1, --n-samples >= 1",
            ),
            (a.damping > 0, "--damping must be > 0"),
        ]
        if not ok
    ]
    if bad:
        p.error(bad[0])  # one line, exit 2
    run_toy(
        tuple(a.lambda_ps), a.start_pi0, a.start_pi1, a.step, a.iters, a.damping, a.n_samples, a.seed, a.out
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
