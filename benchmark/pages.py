"""The report's pages: analysis data as committed JSON, rendered to markdown by Jinja2 templates.

Every page of the report is written the same way: an analysis function returns a dict of numbers, lists and answer
words; `write_json` commits it (benchmark/results/...json, floats rounded so the file does not move with the last bits
of a platform's arithmetic); `render` formats it with a template in benchmark/templates/. Templates format numbers
with the filters below and nothing else: no test, no count, no choice of words happens in them.
"""

from __future__ import annotations

import json
import os
from typing import Optional

import jinja2

from benchmark import stats
from benchmark.stats import MISSING, num

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(REPO, "benchmark", "templates")
SPELLED = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def step(s) -> str:
    """A step count in the claims' units: 1800000 -> '1.80M', 890000 -> '890k' (aggregate.fmt_step)."""
    from benchmark import aggregate

    return aggregate.fmt_step(s)


def signed(x, digits: int = 3) -> str:
    """+0.012 style, '–' where missing."""
    return MISSING if num(x) is None else f"{x:+.{digits}f}"


def fixed(x, digits: int = 2) -> str:
    """A fixed number of decimals, '–' where missing."""
    return MISSING if num(x) is None else f"{x:.{digits}f}"


def pvalue(x) -> str:
    """A p-value to 2 significant digits."""
    return MISSING if num(x) is None else f"{x:.2g}"


def ci(c) -> str:
    """A signed interval [lo, hi] to 3 decimals."""
    return MISSING if c is None or None in c else f"[{c[0]:+.3f}, {c[1]:+.3f}]"


def percent(x) -> str:
    """A fraction as a percentage to one decimal, without the sign: 0.9731 -> '97.3'."""
    return MISSING if num(x) is None else f"{100 * x:.1f}"


def spelled(n: int) -> str:
    """Counts below ten in words."""
    return SPELLED[n] if 0 <= n < 10 else str(n)


def formatted(x, spec: str) -> str:
    """format(x, spec), '–' where missing."""
    return MISSING if x is None else format(x, spec)


def plus_minus(pair, spec: str = ",.1f") -> str:
    """[mean, std] as 'mean ± std' in format spec; the mean alone where the std is missing, '–' where the mean is."""
    mean, std = pair
    if num(mean) is None:
        return MISSING
    if num(std) is None:
        return format(mean, spec)
    return f"{format(mean, spec)} ± {format(std, spec)}"


def cell(x) -> str:
    """A value as a markdown table cell: '|' escaped."""
    return str(x).replace("|", "\\|")


FILTERS = {
    "num": stats.fmt,
    "steps": stats.steps,
    "step": step,
    "signed": signed,
    "fixed": fixed,
    "p": pvalue,
    "ci": ci,
    "percent": percent,
    "spelled": spelled,
    "f": formatted,
    "pct": stats.pct,
    "mean_std": stats.mean_std,
    "interval": stats.interval,
    "estimate": stats.estimate,
    "checked_estimate": stats.checked_estimate,
    "cell": cell,
    "pm": plus_minus,
}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def render(template: str, data: dict, **extra) -> str:
    """benchmark/templates/<template> rendered with the keys of `data` (and `extra`) as its variables."""
    return environment().get_template(template).render(**data, **extra)


def plain(data, digits: int = 6):
    """data as plain JSON values, floats to `digits` significant digits (stats.json_plain)."""
    return stats.json_plain(data, digits)


def committed(data, path: Optional[str] = None, digits: int = 6):
    """data as plain JSON (`plain`), written to path (nothing where None): what the report commits and renders."""
    out = plain(data, digits)
    write_json(path, out)
    return out


def write_page(pages_dir: str, name: str, title: str, body: list[str]) -> str:
    """A detail page of REPORT.md, pages_dir/name (benchmark/report/): page.md.j2 around `body` (rendered lines
    written for REPORT.md's directory, their links moved one directory down). Returns its path."""
    body = [
        line.replace("](../docs/", "](../../docs/").replace("](REPORT.md", "](../REPORT.md") for line in body
    ]
    os.makedirs(pages_dir, exist_ok=True)
    path = os.path.join(pages_dir, name)
    with open(path, "w") as f:
        f.write(render("page.md.j2", {"title": title, "body": "\n".join(body)}))
    return path


def write_study_page(where, name: str, title: str, data, json_path: str, digits: int = 6) -> list[str]:
    """A study's detail page from its data: the data as plain JSON (`committed`, to json_path where where.commit),
    rendered by benchmark/templates/<name>.j2 and written as where.pages/name under `title` (write_page); where:
    studies.Where. Returns the paths written, the page first."""
    path_json = json_path if where.commit else None
    body = [render(name + ".j2", committed(data, path_json, digits))]
    path = write_page(where.pages, name, title, body)
    return [path] + ([path_json] if path_json else [])


def write_json(path: Optional[str], data) -> None:
    """data (already plain) to path as indented UTF-8 JSON; nothing where path is None."""
    if path is None:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
