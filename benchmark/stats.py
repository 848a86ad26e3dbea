"""Statistics for the reports, on the field's libraries: scipy.stats for the per-task
two-sample tests and t-intervals, rliable (Agarwal et al. 2021) for aggregates across tasks.

Per task (per-seed final values of two algorithms):
    welch_test           Welch's t-test (scipy.stats.ttest_ind, equal_var=False)
    t_mean_ci            Student-t interval of one cell's mean (n = 5 seeds: the bootstrap under-covers)
    paired               paired differences: mean, t-interval, TOST at a margin (and its p), paired t-test, Welch's
    unpaired             the same by Welch's test, for arms whose seeds do not pair
    holm                 Holm's step-down adjusted p-values over several tests
    welch_vs_summary     Welch's t-test of our seeds against a paper's mean ± std over n seeds
Across tasks (scores normalized per task to [random policy = 0, best of the paper's table = 1]):
    normalize            the normalization
    aggregate_intervals  IQM, mean, median, optimality gap with stratified-bootstrap CIs (rliable)
    improvement_probability  P(X > Y) of rliable with its CI
    performance_profile  rliable's score distributions
    iqm_over_steps       IQM at each checkpoint of the normalized curves, with CIs (sample efficiency)

Tables and numbers (every report prints through these): `markdown_table(headers, rows)` builds a markdown
table from rows of cells the caller has computed; `fmt` is the one format of a measured number;
`mean_std`, `interval`, `estimate` print a spread or CI to the decimals it warrants; `pct`, `steps` fractions
and step counts; `read_csv` / `write_csv` the results CSVs.
"""

from __future__ import annotations

import csv
import math
import os
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Iterable, Optional, Sequence

import numpy as np
from scipy import stats as sps


def welch_test(a, b) -> Optional[dict]:
    """Welch's unequal-variance t-test of mean(a) - mean(b); None with fewer than 2 values per side.
    Returns diff, se, t, df (Welch-Satterthwaite) and p (two-sided)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        return None
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff, se = float(a.mean() - b.mean()), math.sqrt(va + vb)
    if se == 0.0:
        t, p = (math.copysign(math.inf, diff), 0.0) if diff else (0.0, 1.0)
        return {"diff": diff, "se": 0.0, "t": t, "df": float(a.size + b.size - 2), "p": p}
    res = sps.ttest_ind(a, b, equal_var=False)
    return {"diff": diff, "se": se, "t": float(res.statistic), "df": float(res.df), "p": float(res.pvalue)}


def paired(x: dict, y: dict, seeds: list[int], margin: float, level: float = 0.90) -> dict:
    """Paired differences d_s = x_s - y_s over the seeds both have: mean, sd, the t-interval at `level`, TOST at
    `margin` (equivalent: that interval inside (-margin, margin), the two one-sided tests at (1 - level) / 2 each)
    with the TOST p (tost_p), the two-sided paired t-test and Welch's test."""
    common = [s for s in seeds if s in x and s in y]
    d = np.array([x[s] - y[s] for s in common])
    out = {"n": len(common), "seeds": common, "mean": float(d.mean()) if len(d) else math.nan}
    if len(d) < 2:
        nan = math.nan
        return dict(out, sd=nan, ci=(nan, nan), p=nan, p_welch=nan, p_tost=nan, equivalent=False, reach=nan)
    sd = float(d.std(ddof=1))
    half = float(sps.t.ppf(0.5 + level / 2, len(d) - 1)) * sd / math.sqrt(len(d))
    ci = (out["mean"] - half, out["mean"] + half)
    xs, ys = [x[s] for s in common], [y[s] for s in common]
    p = float(sps.ttest_rel(xs, ys).pvalue) if sd > 0 else 1.0
    p_welch = float(sps.ttest_ind(xs, ys, equal_var=False).pvalue)
    return {
        **out,
        "sd": sd,
        "ci": ci,
        "p": p,
        "p_welch": p_welch,
        "p_tost": tost_p(d, margin),
        "equivalent": -margin < ci[0] and ci[1] < margin,
        "reach": max(abs(ci[0]), abs(ci[1])),
    }


def unpaired(x: dict, y: dict, seeds: list[int], margin: float, level: float = 0.90) -> dict:
    """mean(x) - mean(y) over the seeds each has, by Welch's test (welch_test), in paired's shape: n (the seeds in
    both), the Welch t-interval at `level` (Welch-Satterthwaite df), TOST at `margin` on it, the two-sided p."""
    xs, ys = [x[s] for s in seeds if s in x], [y[s] for s in seeds if s in y]
    w = welch_test(xs, ys)
    out = {"n": min(len(xs), len(ys)), "seeds": [s for s in seeds if s in x and s in y], "sd": math.nan}
    if w is None:
        nan = math.nan
        return dict(out, mean=nan, ci=(nan, nan), p=nan, p_welch=nan, equivalent=False, reach=nan)
    half = float(sps.t.ppf(0.5 + level / 2, w["df"])) * w["se"]
    ci = (w["diff"] - half, w["diff"] + half)
    equivalent, reach = -margin < ci[0] and ci[1] < margin, max(abs(ci[0]), abs(ci[1]))
    return dict(out, mean=w["diff"], ci=ci, p=w["p"], p_welch=w["p"], equivalent=equivalent, reach=reach)


def tost_p(d, margin: float) -> float:
    """The p-value of TOST at `margin` on paired differences d: the larger of the two one-sided one-sample t-tests,
    mean(d) > -margin and mean(d) < +margin (scipy.stats.ttest_1samp); below (1 - level) / 2 exactly where paired's
    interval at `level` lies inside (-margin, margin). Where every d is the same: 0 inside the margin, else 1."""
    d = np.asarray(d, dtype=np.float64)
    if d.std() == 0.0:
        return 0.0 if abs(float(d.mean())) < margin else 1.0
    lower = sps.ttest_1samp(d, -margin, alternative="greater").pvalue
    upper = sps.ttest_1samp(d, margin, alternative="less").pvalue
    return float(max(lower, upper))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values."""
    adjusted, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(sorted(range(len(pvalues)), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def welch_vs_summary(a, mean_b: float, std_b: float, n_b: int) -> Optional[dict]:
    """Welch's t-test of mean(a) against a sample known only by its mean, std and size (a paper's table cell:
    scipy.stats.ttest_ind_from_stats, equal_var=False); None with fewer than 2 values in a."""
    a = np.asarray(a, dtype=np.float64)
    if a.size < 2:
        return None
    res = sps.ttest_ind_from_stats(a.mean(), a.std(ddof=1), a.size, mean_b, std_b, n_b, equal_var=False)
    return {"diff": float(a.mean() - mean_b), "t": float(res.statistic), "p": float(res.pvalue)}


def t_mean_ci(x, level: float = 0.95) -> tuple[float, float]:
    """Student-t interval of mean(x): mean ± t_{(1+level)/2, n-1} · sd / sqrt(n) (scipy.stats.t); NaNs with fewer
    than 2 values, a point where every value is the same."""
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return (math.nan, math.nan)
    mean = float(x.mean())
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    if sem == 0.0:
        return (mean, mean)
    lo, hi = sps.t.interval(level, x.size - 1, loc=mean, scale=sem)
    return (float(lo), float(hi))


def normalize(score, random_score: float, best_score: float):
    """(score - random) / (best - random): 0 = the random policy, 1 = the best of the paper's table."""
    return (np.asarray(score, dtype=np.float64) - random_score) / (best_score - random_score)


def aggregate_intervals(score_dict: dict, reps: int = 2000, seed: int = 0) -> dict:
    """{algo: {"IQM": (point, lo, hi), "Mean": ..., "Median": ..., "Optimality gap": ...}} from
    score_dict = {algo: array (runs, tasks)} of normalized scores (rliable, stratified bootstrap, 95 %)."""
    from rliable import library as rly
    from rliable import metrics

    fns = [getattr(metrics, f"aggregate_{n}") for n in ("iqm", "mean", "median", "optimality_gap")]

    def fn(x):
        return np.array([f(x) for f in fns])

    np.random.seed(seed)  # rliable's bootstrap draws from numpy's global RNG
    points, cis = rly.get_interval_estimates(score_dict, fn, reps=reps)
    return {
        a: {
            n: (float(points[a][i]), float(cis[a][0, i]), float(cis[a][1, i]))
            for i, n in enumerate(("IQM", "Mean", "Median", "Optimality gap"))
        }
        for a in score_dict
    }


def improvement_probability(x, y, reps: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """P(X > Y) (rliable's probability of improvement, averaged over tasks) with its 95 % stratified
    bootstrap CI; x, y: arrays (runs, tasks) of normalized scores."""
    from rliable import library as rly
    from rliable import metrics

    np.random.seed(seed)
    points, cis = rly.get_interval_estimates(
        {"x,y": (np.asarray(x), np.asarray(y))}, metrics.probability_of_improvement, reps=reps
    )
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

    def iqm_per_checkpoint(x):
        return np.array([metrics.aggregate_iqm(x[..., k]) for k in range(n)])

    np.random.seed(seed)
    points, cis = rly.get_interval_estimates(curve_dict, iqm_per_checkpoint, reps=reps)
    return {a: (np.asarray(points[a]), np.asarray(cis[a][0]), np.asarray(cis[a][1])) for a in curve_dict}


MISSING = "–"


def num(x) -> Optional[float]:
    """A CSV field (or any value) as a finite float, else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def mean_or_nan(xs: list) -> float:
    """The mean of xs as a float; NaN where xs is empty (a cell without runs)."""
    return float(np.mean(xs)) if xs else math.nan


def fmt(x) -> str:
    """Measured numbers: 4 significant digits (Python's 'g': an exponent only below 1e-4), whole numbers from
    1000 to 1e5 in magnitude, an exponent from 1e5 up, '–' for missing or non-finite."""
    v = num(x)
    if v is None:
        return MISSING
    if abs(v) >= 1e5:
        return f"{v:.3e}"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    return f"{v:.4g}"


def pct(x) -> str:
    """A fraction as a percentage: 0.361 -> '36%', 0.004 -> '0.4%'."""
    v = num(x)
    return MISSING if v is None else f"{100 * v:.2g}%" if abs(v) < 0.01 else f"{100 * v:.0f}%"


def steps(n) -> str:
    """Environment steps: 75000 -> '75k', 1500000 -> '1.5M'."""
    v = num(n)
    return (
        MISSING if v is None else f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"
    )


def _two_digit_decimals(x: float) -> int:
    """Decimal places that show |x| to 2 significant digits (negative for |x| >= 100)."""
    return 1 - math.floor(math.log10(abs(x)))


def mean_std(mean, std) -> str:
    """'mean ± std', the mean by `fmt` and the std to the same decimal place, kept to at least 2 significant
    digits: (-86.9031, 0.7523) -> '-86.9 ± 0.75', (4237.2, 19.36) -> '4237 ± 19', (3.25, 0.5) -> '3.25 ± 0.50'."""
    m, s = fmt(mean), num(std)
    if s is None:
        return m
    if "e" in m or s == 0 or abs(s) >= 1e5:
        return f"{m} ± {fmt(s)}"
    decimals = len(m.split(".")[1]) if "." in m else 0
    decimals = max(decimals, _two_digit_decimals(s))  # 2 significant digits of the std at least
    return f"{m} ± {s:.{max(decimals, 0)}f}"


def _interval_decimals(lo: float, hi: float) -> Optional[int]:
    """Decimal places that give the interval's width 2 significant digits (0 at least); None when the width is
    0, below 1e-6, or the numbers are large enough for `fmt`'s exponent."""
    width = hi - lo
    if width <= 1e-6 or max(abs(lo), abs(hi)) >= 1e5:
        return None
    return max(_two_digit_decimals(width), 0)


def _fixed(v: float, d: int) -> str:
    s = f"{v:.{d}f}"
    return s[1:] if s.startswith("-") and not s.strip("-0.") else s  # no '-0.00'


def interval(lo, hi) -> str:
    """'[lo, hi]' at the decimal place that gives the width 2 significant digits: (-87.46, -86.29) ->
    '[-87.5, -86.3]', (0.7856, 0.861) -> '[0.786, 0.861]'; `fmt` for both ends when that rule does not apply."""
    a, b = num(lo), num(hi)
    if a is None or b is None:
        return MISSING
    return _interval_at(a, b, _interval_decimals(a, b))


def _interval_at(a: float, b: float, d: Optional[int]) -> str:
    ends = [fmt(a), fmt(b)] if d is None else [_fixed(x, d) for x in (a, b)]
    return f"[{ends[0]}, {ends[1]}]"


def estimate(x, lo, hi) -> str:
    """'x [lo, hi]', an estimate and its confidence interval printed to the same decimal place (`interval`'s):
    (0.82, 0.7856, 0.861) -> '0.820 [0.786, 0.861]'; `fmt(x)` alone when the interval is missing."""
    v, a, b = num(x), num(lo), num(hi)
    if v is None or a is None or b is None:
        return fmt(x)
    d = _interval_decimals(a, b)
    return f"{fmt(v) if d is None or abs(v) >= 1e5 else _fixed(v, d)} {_interval_at(a, b, d)}"


CHECK_DECIMALS = 3  # a checked bootstrap bound's decimals
UNCHECKED = "†"  # marks a bootstrap interval whose check is missing or damaged (the page's footnote says so)


def checked_estimate(x, lo, hi, lo_check=None, hi_check=None) -> str:
    """A bootstrap estimate that tools/bootstrap_check.py covers: x at `estimate`'s decimals and the check's bounds
    (the same bounds at many more replicates) at CHECK_DECIMALS, rounded outward (lower down, upper up), so that the
    printed interval holds the check's: (0.4933, 0.3732, 0.6134, 0.3733, 0.6178) -> '0.49 [0.373, 0.618]'. Without
    a check, `estimate`'s interval (of the report's own replicates) marked UNCHECKED; without an interval,
    `estimate`."""
    if num(lo) is None or num(hi) is None:
        return estimate(x, lo, hi)
    if num(lo_check) is None or num(hi_check) is None:
        return f"{estimate(x, lo, hi)}{UNCHECKED}"
    point = estimate(x, lo, hi).split(" [")[0]
    lo_out = _outward(lo_check, ROUND_FLOOR)
    hi_out = _outward(hi_check, ROUND_CEILING)
    return f"{point} [{lo_out}, {hi_out}]"


def _outward(bound, rounding: str) -> str:
    """A bound at CHECK_DECIMALS, rounded in decimal (`rounding`: down for a lower bound, up for an upper)."""
    at = Decimal(repr(float(bound))).quantize(Decimal(1).scaleb(-CHECK_DECIMALS), rounding=rounding)
    return _fixed(float(at), CHECK_DECIMALS)


def _table_cell(value) -> str:
    """A value as a markdown table cell: str(value) with '|' escaped so the cell cannot break the table."""
    return str(value).replace("|", "\\|")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence]) -> list[str]:
    """Markdown lines: header, separator, one line per row of cells (values already computed, one per header),
    each printed by `_table_cell`."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        lines.append("| " + " | ".join(_table_cell(v) for v in row) + " |")
    return lines


def read_csv(path: str) -> list[dict]:
    """Rows of a CSV as dicts ([] when the file does not exist)."""
    if os.path.isfile(path):
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    return []


def write_csv(path: str, rows: list[dict]) -> None:
    """Rows (dicts) to CSV; the header is the union of their keys in first-seen order."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def save(fig, path: str, title: Optional[str] = None, dpi: int = 110, rect=None, **title_kw) -> None:
    """The tail every figure shares: optional suptitle, tight layout (inside `rect`), PNG at `dpi`, close."""
    import matplotlib.pyplot as plt

    if title:
        fig.suptitle(title, **title_kw)
    fig.tight_layout(**({"rect": rect} if rect else {}))
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def json_plain(x, digits: int):
    """x as plain JSON: tuples as lists, numpy scalars as Python's, non-finite floats as null, floats to `digits`
    significant digits (so a committed JSON does not move with the last bits of a platform's arithmetic)."""
    if isinstance(x, dict):
        return {str(k): json_plain(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_plain(v, digits) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(f"{float(x):.{digits}g}") if math.isfinite(x) else None
    return x
