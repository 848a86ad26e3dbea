"""The step length eta of batch-mean SMAC, per update, relative to the paper's eta, from what a log holds.

The kl_step study's logs (benchmark/results/logs/kl_step, preregistration_kl_step.toml's `also`) were written before
updates.csv had the column eta; eta_ratio reconstructs it from the columns they have. Self-contained (numpy only).
"""

from __future__ import annotations

import numpy as np

COLUMNS = ("g_norm", "ell_sq", "step_par_norm", "step_perp_norm")  # what eta_ratio reads


def eta_ratio(updates: dict, damping: float) -> np.ndarray:
    """eta / eta_paper of every update of a batch-mean SMAC run (eta: the step length applied, kl_step_'s under
    --target-kl; eta_paper: the run's --learning-rate), from its updates.csv / compact log columns and its damping
    lambda (hyperparams.toml's SMAC row):

        r = sqrt((P lambda)^2 + (Q (lambda + L))^2) / G

    What the trainer logs (smac_a2c.step_diagnostics on benchmark.trainer.smac_step's diagnostics, float64 of the
    float32 vectors): G = g_norm = |g|, g the policy gradient after its entropy bonus, --loss-reduction and
    --max-grad-norm clipping (the g the direction is computed from); L = ell_sq = |l|^2, l = l_bar as the direction
    used it; the logged step s = r d, d = (lambda I + l l^T)^-1 g = (g - l (l.g) / (lambda + L)) / lambda the
    Sherman-Morrison direction (theta's change is eta d, and s = that change / eta_paper: kl_step_'s eta times
    d / eta_paper, or d itself with the fixed eta); Q = step_par_norm = |l.s| / |l|, P = step_perp_norm =
    sqrt(|s|^2 - Q^2). Writing g = g_par + g_perp along l and across it, l (l.g) = L g_par, so
    d = g_perp / lambda + g_par / (lambda + L): P = r |g_perp| / lambda, Q = r |g_par| / (lambda + L), and
    |g|^2 = |g_perp|^2 + |g_par|^2 gives r above. One actor step per update (--num-minibatches 1, --update-epochs
    1: with more, the row holds the means of each step's norms and r is not exact); not for --step-normalization,
    --prev-ef-beta or the per-sample modes (there P and Q are NaN, so r is). 0 for an update in which kl_step_
    took no step; NaN where a column is missing or NaN, or g = 0.

    Accuracy: on the fixed-eta arm's committed logs (benchmark/results/logs/norm) r = 1 to within 3e-5 on every
    update of the study's four tasks, a median error of about 1e-6 per run on every task: their numbers have 6
    significant digits, and Q, the float32 step's component along l, carries float32 rounding of |s|, amplified
    where L >> lambda (Pusher, lambda = 0.01, L up to 133: up to 6e-4 on single updates). On a fresh run's
    updates.csv (full precision) it matched the logged eta / eta_paper to 1e-5 (tests/test_kl_eta.py)."""
    n = max((len(v) for v in updates.values()), default=0)
    if any(c not in updates for c in COLUMNS):
        return np.full(n, np.nan)
    g, L, Q, P = (np.asarray(updates[c], dtype=np.float64) for c in COLUMNS)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.hypot(P * damping, Q * (damping + L)) / g
    return np.where(g > 0, r, np.nan)
