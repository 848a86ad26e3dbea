"""`python -m benchmark.report` on a fresh copy of the repository rewrites every committed file it generates
(REPORT.md, the detail pages, their JSON, README's Results block, the CSVs, the figures) to the same bytes, but for
the generation time."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT as REPO

STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True)
    return [p for p in out.stdout.decode().split("\0") if p and os.path.isfile(os.path.join(REPO, p))]


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def unstamped(data: bytes) -> bytes:
    """The bytes with every generation time replaced; binary files as they are."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    return STAMP.sub("<time>", text).encode("utf-8")


@pytest.mark.skipif(
    shutil.which("git") is None or not os.path.isdir(os.path.join(REPO, ".git")), reason="no git"
)
def test_the_report_command_leaves_every_committed_file_unchanged_but_its_time(tmp_path):
    files = tracked_files()
    for rel in files:
        dst = tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(REPO, rel), dst)
    before = {rel: read(tmp_path / rel) for rel in files}
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(tmp_path)}  # the copy's code, not this one
    run = subprocess.run(
        [sys.executable, "-m", "benchmark.report"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    changed = [rel for rel in files if read(tmp_path / rel) != before[rel]]
    differ = [rel for rel in changed if unstamped(read(tmp_path / rel)) != unstamped(before[rel])]
    assert differ == []
    tracked = set(files)
    new = []
    for root, dirs, names in os.walk(tmp_path):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__", ".pytest_cache")]
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), tmp_path)
            if rel not in tracked:
                new.append(rel)
    assert new == []  # nothing generated that is not committed
