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
