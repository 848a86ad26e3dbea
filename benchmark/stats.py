"""Statistics for the reports, on the field's libraries (issue 12): scipy.stats for the per-task
two-sample tests and bootstrap intervals, rliable (Agarwal et al. 2021) for aggregates across tasks.

Per task (per-seed final values of two algorithms):
    welch_test           Welch's t-test (scipy.stats.ttest_ind, equal_var=False) + the smallest detectable
                         difference at p < 0.05 (t_{0.975, df} * se)
    bootstrap_diff_ci    percentile bootstrap CI of mean(a) - mean(b) (scipy.stats.bootstrap)
    bootstrap_mean_ci    percentile bootstrap CI of one cell's mean
    welch_vs_summary     Welch's t-test of our seeds against a paper's mean ± std over n seeds
    permutation_test     exact two-sided permutation test of the difference of means (scipy.stats.permutation_test)
Across tasks (scores normalized per task to [random policy = 0, best of the paper's table = 1]):
    normalize            the normalization
    aggregate_intervals  IQM, mean, median, optimality gap with stratified-bootstrap CIs (rliable)
    improvement_probability  P(X > Y) of rliable with its CI
    performance_profile  rliable's score distributions
    iqm_over_steps       IQM at each checkpoint of the normalized curves, with CIs (sample efficiency)
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
from scipy import stats as sps


def welch_test(a, b) -> Optional[dict]:
    """Welch's unequal-variance t-test of mean(a) - mean(b); None with fewer than 2 values per side.
    Returns diff, se, t, df (Welch-Satterthwaite), p (two-sided) and mdd = t_{0.975, df} * se."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        return None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff, se = float(a.mean() - b.mean()), math.sqrt(va + vb)
    if se == 0.0:
        return {"diff": diff, "se": 0.0, "t": math.copysign(math.inf, diff) if diff else 0.0,
                "df": float(a.size + b.size - 2), "p": 0.0 if diff else 1.0, "mdd": 0.0}
    res = sps.ttest_ind(a, b, equal_var=False)
    df = float(res.df)
    return {"diff": diff, "se": se, "t": float(res.statistic), "df": df, "p": float(res.pvalue),
            "mdd": float(sps.t.ppf(0.975, df)) * se}


def welch_vs_summary(a, mean_b: float, std_b: float, n_b: int) -> Optional[dict]:
    """Welch's t-test of mean(a) against a sample known only by its mean, std and size (a paper's table cell:
    scipy.stats.ttest_ind_from_stats, equal_var=False); None with fewer than 2 values in a."""
    a = np.asarray(a, dtype=np.float64)
    if a.size < 2:
        return None
    res = sps.ttest_ind_from_stats(a.mean(), a.std(ddof=1), a.size, mean_b, std_b, n_b, equal_var=False)
    return {"diff": float(a.mean() - mean_b), "t": float(res.statistic), "p": float(res.pvalue)}


def _mean_diff(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def bootstrap_diff_ci(a, b, level: float = 0.95, n_resamples: int = 20_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of mean(a) - mean(b), each group resampled on its own (scipy.stats.bootstrap)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        return (math.nan, math.nan)
    res = sps.bootstrap((a, b), _mean_diff, n_resamples=n_resamples, confidence_level=level, method="percentile",
                        paired=False, vectorized=True, rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def bootstrap_mean_ci(x, level: float = 0.95, n_resamples: int = 20_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of mean(x) (scipy.stats.bootstrap); NaNs with fewer than 2 values."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2 or np.all(x == x[0]):
        return (float(x[0]), float(x[0])) if x.size >= 1 and np.all(x == x[0]) else (math.nan, math.nan)
    res = sps.bootstrap((x,), np.mean, n_resamples=n_resamples, confidence_level=level, method="percentile",
                        vectorized=True, rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def permutation_test(a, b) -> tuple[float, float]:
    """Exact two-sided permutation test of the difference of means over all splits of the pooled values
    (scipy.stats.permutation_test). Returns (p, the smallest p any data could give with these group
    sizes: scipy's p for completely separated groups); NaNs with fewer than 2 values in a group."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return (math.nan, math.nan)
    if a.size < 2 or b.size < 2:  # scipy needs two observations per group
        return (math.nan, math.nan)
    splits = math.comb(a.size + b.size, a.size)
    test = lambda x, y: float(min(1.0, sps.permutation_test(
        (x, y), _mean_diff, permutation_type="independent", alternative="two-sided",
        n_resamples=splits + 1, vectorized=True).pvalue))
    separated = (np.arange(a.size) + b.size + 1.0, np.arange(b.size, dtype=np.float64))  # the most extreme data
    return test(a, b), test(*separated)


# ------------------------------------------------------------------------------------------------
# Across tasks (rliable)
# ------------------------------------------------------------------------------------------------
def normalize(score, random_score: float, best_score: float):
    """(score - random) / (best - random): 0 = the random policy, 1 = the best of the paper's table."""
    return (np.asarray(score, dtype=np.float64) - random_score) / (best_score - random_score)


def aggregate_intervals(score_dict: dict, reps: int = 2000, seed: int = 0) -> dict:
    """{algo: {"IQM": (point, lo, hi), "Mean": ..., "Median": ..., "Optimality gap": ...}} from
    score_dict = {algo: array (runs, tasks)} of normalized scores (rliable, stratified bootstrap, 95 %)."""
    from rliable import library as rly
    from rliable import metrics
    fn = lambda x: np.array([metrics.aggregate_iqm(x), metrics.aggregate_mean(x), metrics.aggregate_median(x),
                             metrics.aggregate_optimality_gap(x)])
    np.random.seed(seed)  # rliable's bootstrap draws from numpy's global RNG
    points, cis = rly.get_interval_estimates(score_dict, fn, reps=reps)
    names = ("IQM", "Mean", "Median", "Optimality gap")
    return {a: {n: (float(points[a][i]), float(cis[a][0, i]), float(cis[a][1, i])) for i, n in enumerate(names)}
            for a in score_dict}


def improvement_probability(x, y, reps: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """P(X > Y) (rliable's probability of improvement, averaged over tasks) with its 95 % stratified
    bootstrap CI; x, y: arrays (runs, tasks) of normalized scores."""
    from rliable import library as rly
    from rliable import metrics
    np.random.seed(seed)
    points, cis = rly.get_interval_estimates({"x,y": (np.asarray(x), np.asarray(y))},
                                             metrics.probability_of_improvement, reps=reps)
    ci = np.asarray(cis["x,y"]).ravel()
    return float(np.asarray(points["x,y"]).ravel()[0]), float(ci[0]), float(ci[1])


def performance_profile(score_dict: dict, taus) -> dict:
    """{algo: fraction of runs with normalized score > tau, for each tau} (rliable)."""
    from rliable import library as rly
    dist, _ = rly.create_performance_profile(score_dict, np.asarray(taus))
    return {a: np.asarray(v) for a, v in dist.items()}


def iqm_over_steps(curve_dict: dict, reps: int = 2000, seed: int = 0) -> dict:
    """{algo: (iqm, lo, hi)}, each an array over the checkpoints, from curve_dict = {algo: array (runs, tasks,
    checkpoints)} of normalized scores: IQM across runs x tasks at each checkpoint with its 95 % stratified
    bootstrap CI (rliable; the sample-efficiency curve of Agarwal et al. 2021)."""
    from rliable import library as rly
    from rliable import metrics
    n = next(iter(curve_dict.values())).shape[-1]
    fn = lambda x: np.array([metrics.aggregate_iqm(x[..., k]) for k in range(n)])  # noqa: E731
    np.random.seed(seed)
    points, cis = rly.get_interval_estimates(curve_dict, fn, reps=reps)
    return {a: (np.asarray(points[a]), np.asarray(cis[a][0]), np.asarray(cis[a][1])) for a in curve_dict}
