import importlib.util
import os
import shutil
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

# Under pytest-xdist (README's `-n 2`) a worker is handed one unit at a time: a test file, or together every file
# that asks for committed_done, so that a module fixture and the analysis of the committed logs are computed once
# per run; the units in FIRST (the longest) are handed out first, the others in file order.
COMMITTED = "committed-logs"
FIRST = (COMMITTED, "tests/test_report_regeneration.py")


def unit(rootpath, path: str) -> str:
    """The unit of the test file at `path` (relative to rootpath): COMMITTED when it names committed_done."""
    with open(os.path.join(rootpath, path), encoding="utf-8") as f:
        return COMMITTED if "committed_done" in f.read() else path


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N` without a --dist of one's own: xdist's loadscope with a unit per test file or COMMITTED."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit(config.rootpath, nodeid.split("::", 1)[0])

    config.option.loadscopereorder = (
        False  # the order of the workers' collection (pytest_collection_modifyitems)
    )
    return ByUnit(config, log)


def first(config, item) -> int:
    """The place of the item's unit among FIRST (after them: len(FIRST))."""
    path = os.path.relpath(item.path, config.rootpath)
    u = unit(config.rootpath, path)
    return FIRST.index(u) if u in FIRST else len(FIRST)


def pytest_collection_modifyitems(config, items):
    if os.environ.get(
        "PYTEST_XDIST_WORKER"
    ):  # a worker's collection, whose order the units are handed out in
        rank = {item.nodeid: first(config, item) for item in items}
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


@pytest.fixture(scope="session")
def broken_egl(tmp_path_factory):
    """A headless machine whose EGL cannot load, as a GPU server's image was: (env, pythonpath) for a subprocess,
    env without DISPLAY or MUJOCO_GL, pythonpath a copy of PyOpenGL whose EGL loader finds no library (PyOpenGL's
    EGL is then None, and `import mujoco` under MUJOCO_GL=egl raises AttributeError)."""
    directory = tmp_path_factory.mktemp("broken_egl")
    (source,) = importlib.util.find_spec("OpenGL").submodule_search_locations
    shutil.copytree(source, directory / "OpenGL")
    loader = directory / "OpenGL" / "platform" / "egl.py"
    text = loader.read_text()
    assert "    def EGL(self):\n" in text
    loader.write_text(text.replace("    def EGL(self):\n", "    def EGL(self):\n        return None\n", 1))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MUJOCO_GL", "PYOPENGL_PLATFORM")}
    return env, [str(directory)]
