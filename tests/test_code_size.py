"""The lab's size: no function in benchmark/ longer than 80 lines (its def line to its last line), so that each one
can be read whole; a longer one is split into functions that each do one named thing."""

import ast
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MAX_FUNCTION_LINES = 80


def function_lengths() -> dict:
    """{"path:name": lines} of every function and method under benchmark/."""
    lengths = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "benchmark", "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{os.path.relpath(path, ROOT)}:{node.name}"
                lengths[name] = max(lengths.get(name, 0), node.end_lineno - node.lineno + 1)
    return lengths


def test_no_function_in_the_lab_is_over_80_lines():
    lengths = function_lengths()
    assert "benchmark/trainer.py:train_loop" in lengths
    too_long = {name: n for name, n in lengths.items() if n > MAX_FUNCTION_LINES}
    assert too_long == {}
