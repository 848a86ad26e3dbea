"""Where a run came from: the code (git commit, and whether tracked sources differ from it, with a hash
of the changed files), the machine (host name, CPU model) and the versions of Python and the libraries that set its
numbers, taken by the lab trainer at each start. runlayer.RunLog writes them into config.json, compact.pack into the
compact log's header; the sweep refuses to start jobs on a tree whose tracked sources differ from its commit
(`--allow-dirty` to start them anyway), and the report says per study which commits and hosts made its logs.

Sources are the tracked files less what runs write or only describe (NOT_SOURCES): the compact logs and results,
documentation. Untracked files never count (a sweep's new logs are untracked).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import sys
import time
from typing import Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_A_CHECKOUT = "not a checkout"
NOT_RECORDED = "not recorded"  # a start before this record existed (an older run or compact log)
# tracked files that are not the code of a run: what runs and the report write, and documentation
NOT_SOURCES = ("benchmark/results", "docs", "*.md")
LIBRARIES = ("torch", "numpy", "gymnasium", "mujoco")


def _git(repo: str, *argv: str) -> Optional[bytes]:
    """git's stdout in repo, or None when git is missing or fails (not a checkout)."""
    try:
        proc = subprocess.run(
            ["git", "-C", repo, *argv], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _pathspec() -> list[str]:
    return ["--", ".", *(f":(exclude){p}" for p in NOT_SOURCES)]


def commit(repo: str = REPO) -> Optional[str]:
    """The commit checked out at repo (the repository's own top level, not one it sits inside), or None."""
    out = _git(repo, "rev-parse", "--show-toplevel", "HEAD")
    if out is None:
        return None
    lines = out.decode(errors="replace").split()
    if len(lines) != 2 or os.path.realpath(lines[0]) != os.path.realpath(repo):
        return None
    return lines[1]


def changed_sources(repo: str = REPO) -> list[str]:
    """The tracked source files that differ from the checked-out commit (staged or not); [] outside a checkout.
    Names as git stores them (-z: no quoting), renames as a deletion and an addition."""
    if commit(repo) is None:
        return []
    out = _git(repo, "diff", "--no-ext-diff", "--no-renames", "--name-only", "-z", "HEAD", *_pathspec())
    return [name for name in out.decode(errors="surrogateescape").split("\0") if name] if out else []


def diff_hash(repo: str = REPO) -> Optional[str]:
    """sha256 over the changed source files' names and contents ("deleted" for a removed one), or None when none
    differ: what names the code of an edited tree. Not a hash of `git diff`'s text, which a user's git settings
    (prefixes, colour, diff algorithm, textconv) change for the same edit."""
    names = changed_sources(repo)
    if not names:
        return None
    digest = hashlib.sha256()
    for name in sorted(names):
        path = os.path.join(repo, name)
        content = "deleted"
        if os.path.isfile(path):
            with open(path, "rb") as f:
                content = hashlib.sha256(f.read()).hexdigest()
        digest.update(f"{name}\0{content}\n".encode(errors="surrogateescape"))
    return digest.hexdigest()


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux; platform's elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def version(name: str) -> Optional[str]:
    """An installed distribution's version, or None (not installed: a run without MuJoCo)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def record(step: int = 0, repo: str = REPO) -> dict:
    """This start of a run: the step it starts from, the UTC time, the commit ("not a checkout" outside one),
    whether tracked sources differ from it and the hash of their diff, the host, the CPU, the versions."""
    head = commit(repo)
    dirty = bool(changed_sources(repo)) if head else None
    out = {
        "step": int(step),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": head or NOT_A_CHECKOUT,
        "dirty": dirty,
        "diff_sha256": diff_hash(repo) if dirty else None,
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "python": sys.version.split()[0],
    }
    for name in LIBRARIES:
        out[name] = version(name)
    return out


def starts(recorded) -> list[dict]:
    """A config.json's or a compact log's `provenance` as a list of starts; [] where it records none (older runs)."""
    if not isinstance(recorded, list):
        return []
    return [s for s in recorded if isinstance(s, dict)]


def code_of(start: dict) -> str:
    """One start's code in a word: the short commit, "+ edits <diff hash>" when sources differed from it."""
    head = str(start.get("commit") or NOT_RECORDED)
    short = head[:12] if head not in (NOT_A_CHECKOUT, NOT_RECORDED) else head
    if start.get("dirty"):
        return f"{short} + edits {str(start.get('diff_sha256') or '?')[:12]}"
    return short


def host_of(start: dict) -> str:
    """One start's machine in a word: its host name and, where recorded, its CPU model."""
    host = str(start.get("host") or NOT_RECORDED)
    cpu = start.get("cpu")
    return f"{host} ({cpu})" if cpu and host != NOT_RECORDED else host


# ---- a run directory's JSON files (the runner, the trainer, the report and --plot read them)
def read_json(path: str, default=None):
    """A JSON file's contents, or `default` when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def read_summary(run_dir: Optional[str]) -> Optional[dict]:
    return read_json(os.path.join(run_dir, "summary.json")) if run_dir else None


def run_args(run_dir: Optional[str]) -> dict:
    """The trainer's flags of a run directory (config.json's args), or {}."""
    cfg = read_json(os.path.join(run_dir, "config.json")) if run_dir else None
    args = cfg.get("args") if isinstance(cfg, dict) else None
    return args if isinstance(args, dict) else {}
