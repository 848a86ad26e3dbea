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
