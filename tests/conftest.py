import os
import sys
import warnings

# Tests import smac_a2c / smac_numpy from the repository root.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# subprocesses run `python -m benchmark.trainer` from anywhere
os.environ["PYTHONPATH"] = ROOT + (
    os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""
)
warnings.filterwarnings("ignore", category=DeprecationWarning)  # gymnasium's "-v4 is out of date"
