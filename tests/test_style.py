"""The repository's style (issue 35): `ruff format` and `ruff check` with pyproject.toml's rules, pinned in
requirements.txt, so CI enforces them."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ruff(*argv):
    return subprocess.run([sys.executable, "-m", "ruff", *argv], cwd=ROOT, capture_output=True, text=True)


def test_ruff_format_leaves_every_file_as_it_is():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_check_finds_nothing():
    result = ruff("check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pinned_ruff_is_the_one_that_runs():
    pinned = [
        line.split("==")[1].strip()
        for line in open(os.path.join(ROOT, "requirements.txt"))
        if line.startswith("ruff==")
    ]
    assert pinned and ruff("--version").stdout.split()[-1] == pinned[0]


def product_text() -> dict:
    """{path: text} of the text a reader gets: the page templates, README.md, docs/*.md and the generated pages."""
    import glob

    paths = glob.glob(os.path.join(ROOT, "benchmark", "templates", "*.j2"))
    paths += [os.path.join(ROOT, "README.md"), *glob.glob(os.path.join(ROOT, "docs", "*.md"))]
    paths += [os.path.join(ROOT, "benchmark", p) for p in ("REPORT.md", "ABLATIONS.md")]
    paths += glob.glob(os.path.join(ROOT, "benchmark", "report", "*.md"))
    return {p: open(p, encoding="utf-8").read() for p in paths}


def test_every_command_the_pages_name_is_a_module():
    """Each `python -m benchmark...` the pages and docs name resolves to a module of this checkout."""
    import importlib.util
    import re

    named = {
        (os.path.relpath(p, ROOT), m)
        for p, text in product_text().items()
        for m in re.findall(r"python -m (benchmark(?:\.\w+)+)", text)
    }
    assert named
    missing = sorted((p, m) for p, m in named if importlib.util.find_spec(m) is None)
    assert missing == []


def test_the_templates_readme_and_docs_name_no_issue_number():
    """Product text says what a thing is, not which issue made it (the tomls, registrations, are not checked)."""
    import re

    hits = {
        os.path.relpath(p, ROOT): re.findall(r"\b[Ii]ssues? \d+", text)
        for p, text in product_text().items()
        if p.endswith((".j2", "README.md")) or os.sep + "docs" + os.sep in p
    }
    assert {p: h for p, h in hits.items() if h} == {}
