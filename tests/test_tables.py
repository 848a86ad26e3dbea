"""The report's table builder and its one number formatter (benchmark/stats.py)."""

import math

from benchmark.stats import estimate, fmt, interval, markdown_table, mean_std, num, pct, steps


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


def test_a_checked_bootstrap_bound_keeps_only_the_decimals_its_check_confirms():
    """Each bound against the same bound at many more replicates: the decimals (up to the interval's) on which
    the two print alike; no check, the interval's; the point is not a bootstrap number and keeps them."""
    assert estimate(0.4933, 0.3732, 0.6134, 0.3733, 0.6178) == "0.49 [0.37, 0.6]"  # 0.61 vs 0.62
    assert (
        estimate(0.5611, 0.5362, 0.5682, 0.5312, 0.5682) == "0.561 [0.5, 0.568]"
    )  # 0.536 / 0.54 vs 0.531 / 0.53
    assert estimate(0.4933, 0.3732, 0.6134, None, 0.6178) == "0.49 [0.37, 0.6]"  # the lower bound unchecked
    assert estimate(0.4933, 0.3732, 0.6134) == "0.49 [0.37, 0.61]"
    assert estimate(0.4933, 0.3732, 0.6134, 0.3732, 0.6134) == "0.49 [0.37, 0.61]"


def test_markdown_table_from_rows_of_cells():
    rows = [{"task": "Hopper", "v": 1.23456}, {"task": "a|b", "v": None}]
    lines = markdown_table(["Task", "value"], [[r["task"], fmt(r["v"])] for r in rows])
    assert lines == ["| Task | value |", "|---|---|", "| Hopper | 1.235 |", "| a\\|b | – |"]
