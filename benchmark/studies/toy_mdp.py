"""The toy MDP's cosine study: how close is the Sherman-Morrison step to the natural gradient on the two-state MDP of
smac_numpy.py (which keeps the MDP's core), along SM-expected's own run [A'], at the same policies on a grid of
log-odds [B], and over the damping [C]? It runs no jobs and reads no logs (NAME None, no analysis of its own): its
command prints the three tables (docs/numpy_port.md reads them).

    python -m benchmark.studies.toy_mdp [--damping 0.1] [--damping-sweep 0.01 0.1 1 10] [--n-samples 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import smac_numpy as sn  # noqa: E402

NAME = None  # no jobs: the study is its command
PREREGISTRATION = None  # exploratory


def toy_sm_expected(theta: np.ndarray, lam_p: float, damping: float) -> np.ndarray:
    """Exact expectation of the per-sample SM step over (x, a) ~ d(x) pi(a|x), sum_{x,a} d(x) pi(a|x) ell A /
    (damping + |ell|^2). As damping -> 0 this tends to NPG-printed / (2 - pi0): each one-sample step is A/ell,
    the compatible weight of its state, but x=1 is sampled only with d(1)."""
    d = sn.toy_visitation(theta, lam_p)
    out = np.zeros(2)
    for x, a in ((0, 0), (0, 1), (1, 0), (1, 1)):
        ell = sn.toy_score(theta, lam_p, x, a)
        out += (
            d[x]
            * sn.toy_prob(theta, lam_p, x, a)
            * ell
            * sn.toy_advantage(theta, lam_p, x, a)
            / (damping + ell @ ell)
        )
    return out


def direction(method, theta, lam_p, damping, n_samples, rng):
    """smac_numpy.toy_direction, plus "SM-expected"."""
    if method == "SM-expected":
        return toy_sm_expected(theta, lam_p, damping)
    return sn.toy_direction(method, theta, lam_p, damping, n_samples, rng)


def toy_grid_cosines(
    method: str,
    lam_p: float,
    damping: float,
    n_samples: int,
    seed: int,
    reference: str = "NPG",
    half_width: float = 4.0,
    n: int = 21,
) -> np.ndarray:
    """Cosine of `method` to `reference` at the same policies: an n x n grid of log-odds (u0, u1) in [-w, w]^2."""
    rng = np.random.default_rng(seed)
    us = np.linspace(-half_width, half_width, n)
    thetas = [np.array([-u0 / lam_p, -u1]) for u0 in us for u1 in us]
    return np.array(
        [
            sn._cos(
                direction(method, theta, lam_p, damping, n_samples, rng),
                direction(reference, theta, lam_p, damping, n_samples, rng),
            )
            for theta in thetas
        ]
    )


def main(argv=None) -> int:
    """python -m benchmark.studies.toy_mdp: SM-expected along its run [A'], the cosine grid [B], the damping sweep
    [C]."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--damping", type=float, default=0.1)
    p.add_argument("--damping-sweep", type=float, nargs="+", default=[0.01, 0.1, 1.0, 10.0])
    p.add_argument("--n-samples", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    def mean_min(cosines) -> str:
        return f"{np.nanmean(cosines):+.3f} [{np.nanmin(cosines):+.3f}]"

    print(
        "[A'] SM-expected along its own trajectory (smac_numpy.py toy-mdp's defaults), cosine to NPG / NPG-w, "
        "mean [min] over iterations"
    )
    for lp in sn.TOY_LAMBDA_PS:
        r = sn.toy_run(
            "SM-expected", lp, damping=a.damping, n_samples=a.n_samples, seed=a.seed, direction=direction
        )
        hit = np.nonzero(r["J"] >= 1.9)[0]
        print(
            f"  lambda_p={lp:<5} {'SM-expected':<14} cos(NPG) {mean_min(r['cos_npg'])}   cos(NPG-w) "
            f"{mean_min(r['cos_npg_weighted'])}   final J {r['J'][-1]:.4f}   first J>=1.9 at iter "
            f"{hit[0] if len(hit) else 'never'}"
        )
    print("[B] cosine to NPG / NPG-w at the same policies: 21x21 grid of log-odds in [-4,4]^2, mean [min]")
    for lp in sn.TOY_LAMBDA_PS:
        for m in ("PG", "SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean"):
            c1, c2 = (
                toy_grid_cosines(m, lp, a.damping, a.n_samples, a.seed, ref)
                for ref in ("NPG", "NPG-weighted")
            )
            print(f"  lambda_p={lp:<5} {m:<14} cos(NPG) {mean_min(c1)}   cos(NPG-w) {mean_min(c2)}")
    print("[C] damping sweep: mean cosine to NPG (printed F) on the grid of [B]")
    print("  lambda_p  damping   SM-printed  SM-expected  SM-sampled  SM-batch-mean   (PG)")
    for lp in sn.TOY_LAMBDA_PS:
        pg = np.nanmean(toy_grid_cosines("PG", lp, 1.0, a.n_samples, a.seed))
        for dmp in a.damping_sweep:
            c = [
                np.nanmean(toy_grid_cosines(m, lp, dmp, a.n_samples, a.seed))
                for m in ("SM-printed", "SM-expected", "SM-sampled", "SM-batch-mean")
            ]
            print(
                f"  {lp:<9} {dmp:<9} {c[0]:+.3f}      {c[1]:+.3f}       {c[2]:+.3f}      {c[3]:+.3f}"
                f"         ({pg:+.3f})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
