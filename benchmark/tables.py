"""Markdown tables from row specifications, and the one number format of the reports.

A table is a list of rows (dicts, tuples, anything) and a list of columns (header, function of a row):

    table(rows, [("Task", lambda r: r["task"]), ("final", lambda r: fmt(r["mean"]))])

so adding, removing or reordering a column is one line. `fmt` is the only way a report prints a measured
number; `mean_std`, `interval` and `estimate` print a spread or a confidence interval beside it, to the
decimal place the spread warrants; `pct` and `steps` print fractions and step counts.
"""
from __future__ import annotations

import csv
import math
import os
from typing import Callable, Iterable, Optional, Sequence

MISSING = "–"


def num(x) -> Optional[float]:
    """A CSV field (or any value) as a finite float, else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


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
    if v is None:
        return MISSING
    return f"{100 * v:.2g}%" if abs(v) < 0.01 else f"{100 * v:.0f}%"


def steps(n) -> str:
    """Environment steps: 75000 -> '75k', 1500000 -> '1.5M'."""
    v = num(n)
    if v is None:
        return MISSING
    return f"{v / 1e6:g}M" if v >= 1e6 else (f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}")


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
    return f"[{fmt(a)}, {fmt(b)}]" if d is None else f"[{_fixed(a, d)}, {_fixed(b, d)}]"


def estimate(x, lo, hi) -> str:
    """'x [lo, hi]', an estimate and its confidence interval printed to the same decimal place (`interval`'s):
    (0.82, 0.7856, 0.861) -> '0.820 [0.786, 0.861]'; `fmt(x)` alone when the interval is missing."""
    v, a, b = num(x), num(lo), num(hi)
    if v is None or a is None or b is None:
        return fmt(x)
    d = _interval_decimals(a, b)
    return f"{fmt(v) if d is None or abs(v) >= 1e5 else _fixed(v, d)} {_interval_at(a, b, d)}"


Column = tuple[str, Callable]


def table(rows: Iterable, columns: Sequence[Column]) -> list[str]:
    """Markdown lines: header, separator, one line per row; cells are str(column function(row)), with '|'
    escaped so a cell cannot break the table."""
    cell = lambda v: str(v).replace("|", "\\|")  # noqa: E731
    return (["| " + " | ".join(h for h, _ in columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(cell(f(r)) for _, f in columns) + " |" for r in rows])


def read_csv(path: str) -> list[dict]:
    """Rows of a CSV as dicts ([] when the file does not exist)."""
    if not os.path.isfile(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def write_csv(path: str, rows: list[dict]) -> None:
    """Rows (dicts) to CSV; the header is the union of their keys in first-seen order."""
    fields = list(rows[0].keys()) if rows else []
    for r in rows:
        for k in r:
            if k not in fields:
                fields.append(k)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
