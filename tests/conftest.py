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

# Under pytest-xdist (README's `-n 2`) a worker is handed one unit at a time: a test file, or every file with a test
# that reads committed_done, so that a module fixture and the analysis of the committed logs are computed once; the
# units in FIRST (the longest) are handed out first, the others in file order.
COMMITTED = "committed-logs"
FIRST = (COMMITTED, "test_report_regeneration.py")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "xdist_group(name): the tests pytest-xdist hands to one worker together"
    )
    if getattr(config.option, "dist", "no") == "load":  # `-n N` without a --dist of one's own
        config.option.dist = "loadgroup"
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    shared = {item.path for item in items if "committed_done" in item.fixturenames}
    rank = {}
    for item in items:
        group = COMMITTED if item.path in shared else item.path.name
        item.add_marker(pytest.mark.xdist_group(group))
        rank[item.nodeid] = FIRST.index(group) if group in FIRST else len(FIRST)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: rank[item.nodeid])


@pytest.fixture(scope="session")
def committed_where(tmp_path_factory):
    """Where the studies' analysis of the committed logs reads them (the defaults) and writes its CSVs, figures and
    pages (a scratch directory, never the repository's files)."""
    from benchmark.studies import Where

    tmp = tmp_path_factory.mktemp("committed")
    return Where(results=str(tmp / "stage1"), figures=str(tmp / "figures"), pages=str(tmp / "report"))


@pytest.fixture(scope="session")
def committed_done(committed_where):
    """report.analyze over the committed logs: {key: result, with its "verdict" part} of every study that is not
    COMMITTED_ONLY (grid, prereg, mujoco_5M, claims, fidelity), as the report command computes them. Computed once
    per pytest run (once per xdist worker that runs a test asking for it); tests read it and change nothing in it."""
    from benchmark import report

    return report.analyze(committed_where)


@pytest.fixture
def reference_here(tmp_path, monkeypatch):
    """smac_a2c.main or train in this process, its runs in tmp_path/runs; the signal handlers it installs undone
    afterwards. Yields tmp_path."""
    monkeypatch.chdir(tmp_path)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield tmp_path
    for s, handler in handlers.items():
        signal.signal(s, handler)
