"""The paper's evaluation protocol as pure functions: episodes -> 100 bins -> EWM(0.1) -> across seeds.

Every report (aggregate.py, prereg.py, ablations.py, report.py), the random-policy scores and the trainer's --plot smooth curves
with these functions and nothing else; tests/test_harness.py checks them against hand computation.

Protocol ("Experimental Setup"), per run, for a task budget B and n = 100 bins:
  1. bins: bin k (k = 0..99) holds the episodes that ended at a global step in (k B/n, (k+1) B/n]
     (step 0 would go to bin 0; episodes after B are ignored); a bin's value is the mean episodic
     return of its episodes.
  2. empty bins: a bin with no episode ending in it takes the previous bin's value (carry
     forward); bins before the run's first episode stay empty (NaN) and are skipped; bins that
     start after the run's last step (a diverged run) stay empty.
  3. smoothing: exponentially weighted mean with factor 0.1 over the bins,
     s_0 = x_0,  s_k = 0.1 x_k + 0.9 s_{k-1}   (pandas ewm(alpha=0.1, adjust=False); numpy here),
     starting at the first non-empty bin.
  4. across seeds: per bin, mean and standard deviation with ddof = 1 (sample std; the paper does
     not say which; final.csv also gives ddof = 0) over the seeds that have a value there.
  "final" = the last smoothed bin (bin 99), over the runs that reached the budget.
The same binning and smoothing are applied to mean_logprob (updates.csv, one row per update).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

N_BINS = 100
ALPHA = 0.1
DDOF = 1


def bin_index(steps: np.ndarray, budget: int, n_bins: int = N_BINS) -> np.ndarray:
    """Bin of each global step: (k B/n, (k+1) B/n] -> k; step 0 -> 0; > B -> -1 (dropped)."""
    steps = np.asarray(steps, dtype=np.int64)
    idx = np.where(steps <= 0, 0, (steps * n_bins - 1) // budget)
    return np.where(steps > budget, -1, idx)


def bin_means(
    steps, values, budget: int, n_bins: int = N_BINS, last_step: Optional[int] = None
) -> np.ndarray:
    """Mean of `values` per bin, empty bins carried forward (module docstring, steps 1-2).
    last_step: the run's final global step (default: budget); bins starting at or after it stay NaN."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    idx = bin_index(steps, budget, n_bins)
    keep = (idx >= 0) & np.isfinite(values)
    sums = np.bincount(idx[keep], weights=values[keep], minlength=n_bins)
    counts = np.bincount(idx[keep], minlength=n_bins)
    out = np.full(n_bins, np.nan)
    out[counts > 0] = sums[counts > 0] / counts[counts > 0]
    last_step = budget if last_step is None else last_step
    covered = np.arange(n_bins) * budget / n_bins < last_step
    for k in range(1, n_bins):  # carry forward inside the covered range
        if np.isnan(out[k]) and covered[k] and not np.isnan(out[k - 1]):
            out[k] = out[k - 1]
    out[~covered] = np.nan
    return out


def ewm(x, alpha: float = ALPHA) -> np.ndarray:
    """s_0 = x_0, s_k = alpha x_k + (1 - alpha) s_{k-1} (pandas ewm(alpha, adjust=False)), starting
    at the first finite entry; leading NaNs stay NaN, and so does every NaN entry after it."""
    x = np.asarray(x, dtype=np.float64)
    s = np.full_like(x, np.nan)
    prev = np.nan
    for k, v in enumerate(x):
        if np.isnan(v):
            continue
        prev = v if np.isnan(prev) else alpha * v + (1 - alpha) * prev
        s[k] = prev
    return s


def across_seeds(curves: np.ndarray, ddof: int = DDOF) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, std, n) per bin over the rows (seeds) that are finite there; std is NaN where n <= ddof."""
    curves = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    ok = np.isfinite(curves)
    n = ok.sum(0)
    filled = np.where(ok, curves, 0.0)
    mean = np.where(n > 0, filled.sum(0) / np.maximum(n, 1), np.nan)
    sq = np.where(ok, (curves - mean) ** 2, 0.0).sum(0)
    std = np.where(n > ddof, np.sqrt(sq / np.maximum(n - ddof, 1)), np.nan)
    return mean, std, n


def smoothed_curve(steps, values, budget, last_step=None, n_bins=N_BINS) -> np.ndarray:
    return ewm(bin_means(steps, values, budget, n_bins, last_step))


def bin_quantiles(steps, values, budget, n_bins=N_BINS) -> np.ndarray:
    """Per-bin median of `values` (no carry-forward; NaN where a bin has none)."""
    idx = bin_index(steps, budget, n_bins)
    values = np.asarray(values, dtype=np.float64)
    out = np.full(n_bins, np.nan)
    for k in range(n_bins):
        v = values[(idx == k) & np.isfinite(values)]
        if v.size:
            out[k] = np.median(v)
    return out
