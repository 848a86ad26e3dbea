import os
import signal
import sys
import warnings

import pytest

# Tests import smac_a2c / smac_numpy from the repository root.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# subprocesses run `python -m benchmark.trainer` from anywhere
os.environ["PYTHONPATH"] = ROOT + (
    os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""
)
warnings.filterwarnings("ignore", category=DeprecationWarning)  # gymnasium's "-v4 is out of date"


@pytest.fixture
def reference_here(tmp_path, monkeypatch):
    """smac_a2c.main or train in this process, its runs in tmp_path/runs; the signal handlers it installs undone
    afterwards. Yields tmp_path."""
    monkeypatch.chdir(tmp_path)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield tmp_path
    for s, handler in handlers.items():
        signal.signal(s, handler)
