"""The report's table builder and its one number formatter (benchmark/stats.py)."""

import math

import numpy as np

from benchmark.stats import (
    UNCHECKED,
    checked_estimate,
    estimate,
    fmt,
    interval,
    markdown_table,
    mean_std,
    num,
    pct,
    steps,
)


def test_fmt_by_hand():
    assert [fmt(x) for x in (-86.9031, 0.75234, 4625.4, -6649.2, 2.5e6, 0.0, None, math.nan, "12.5", "")] == [
        "-86.9",
        "0.7523",
        "4625",
        "-6649",
        "2.500e+06",
        "0",
        "–",
        "–",
        "12.5",
        "–",
    ]
    assert pct(0.361) == "36%" and pct(0.004) == "0.4%" and pct(None) == "–"
    assert steps(75_000) == "75k" and steps(1_500_000) == "1.5M" and steps(500) == "500"
    assert mean_std(10.0, None) == "10" and mean_std("3.25", "0.5") == "3.25 ± 0.50"
    # the std at the mean's decimal place, never fewer than 2 significant digits (was '-86.9 ± 0.7523')
    assert [
        mean_std(*p)
        for p in (
            (-86.9031, 0.75234),
            (4237.2, 19.36),
            (1863.1, 1041.2),
            (32.48, 0.002349),
            (56.99, 5.566),
            (5.0, 0.0),
            (2.5e6, 1e5),
            (-4924.0, 67.98),
        )
    ] == [
        "-86.9 ± 0.75",
        "4237 ± 19",
        "1863 ± 1041",
        "32.48 ± 0.0023",
        "56.99 ± 5.57",
        "5 ± 0",
        "2.500e+06 ± 1.000e+05",
        "-4924 ± 68",
    ]
    assert num("inf") is None and num("x") is None and num(3) == 3.0


def test_intervals_print_to_the_decimal_place_their_width_warrants():
    # 2 significant digits of the width (was '[-87.46, -86.29]', '0.82 [0.7856, 0.861]': 4 digits each)
    assert interval(-87.46, -86.29) == "[-87.5, -86.3]" and interval(1.0, None) == "–"
    assert interval(-1.5, 2) == "[-1.5, 2.0]" and interval(3, 3) == "[3, 3]"  # width 0: fmt
    assert estimate(0.82, 0.7856, 0.861) == "0.820 [0.786, 0.861]"
    assert estimate(0.89, 0.81, 0.97) == "0.89 [0.81, 0.97]"
    assert estimate(-1019.2, -1877.4, -514.3) == "-1019 [-1877, -514]"
    assert estimate(-993.7, -1518, -97.85) == "-994 [-1518, -98]"
    assert estimate(0.0002, -0.0004, 0.0101) == "0.000 [0.000, 0.010]"  # never '-0.000'
    assert estimate(2.5e6, 2.4e6, 2.6e6) == "2.500e+06 [2.400e+06, 2.600e+06]"
    assert estimate(0.5, None, 1) == "0.5" and estimate(None, 0, 1) == "–"


def test_a_checked_bootstrap_interval_prints_its_checks_bounds_rounded_outward():
    """A covered bootstrap interval prints the same bounds at many more replicates (its check) at three decimals,
    the lower rounded down and the upper up, so that it holds the check's; the point keeps the decimals of the
    report's own interval; without a check the report's own interval, marked unchecked."""
    assert checked_estimate(0.4933, 0.3732, 0.6134, 0.3733, 0.6178) == "0.49 [0.373, 0.618]"
    assert checked_estimate(0.7234, 0.66, 0.79, 0.655, 0.7901) == "0.72 [0.655, 0.791]"  # 0.655: no lower
    # AC-KFAC's IQM: a lower bound of 0.6085 once printed 0.609
    assert checked_estimate(0.65, 0.6, 0.7, 0.6085, 0.6178) == "0.65 [0.608, 0.618]"
    assert checked_estimate(0.0002, -0.0004, 0.0101, -0.0004, 0.0101) == "0.000 [-0.001, 0.011]"
    assert checked_estimate(0.4933, 0.3732, 0.6134) == f"0.49 [0.37, 0.61]{UNCHECKED}"
    assert checked_estimate(0.4933, 0.3732, 0.6134, None, 0.6178) == f"0.49 [0.37, 0.61]{UNCHECKED}"
    assert checked_estimate(0.5, None, None) == "0.5"  # no interval, nothing to check
    rng = np.random.default_rng(0)
    for k in range(500):
        lo, hi = sorted(round(float(x), k % 5 + 2) for x in rng.uniform(-2, 2, 2))
        printed = checked_estimate((lo + hi) / 2, lo, hi, lo, hi).split(" [")[1].rstrip("]").split(", ")
        a, b = float(printed[0]), float(printed[1])
        assert a <= lo < a + 1e-3 + 1e-12 and b - 1e-3 - 1e-12 < hi <= b, (lo, hi, printed)
        assert all(len(x.split(".")[1]) == 3 for x in printed)


def test_markdown_table_from_rows_of_cells():
    rows = [{"task": "Hopper", "v": 1.23456}, {"task": "a|b", "v": None}]
    lines = markdown_table(["Task", "value"], [[r["task"], fmt(r["v"])] for r in rows])
    assert lines == ["| Task | value |", "|---|---|", "| Hopper | 1.235 |", "| a\\|b | – |"]
