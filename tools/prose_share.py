"""How much of a module is prose in Python: the share of its lines that hold an f-string or a string literal
over 40 characters (docstrings left out), at a git revision.

    python tools/prose_share.py HEAD benchmark/report.py benchmark/ablations.py
"""

import ast
import subprocess
import sys

LONG = 40  # characters: a string literal at least this long counts as prose


def docstring_lines(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    out.update(range(first.lineno, first.end_lineno + 1))
    return out


def prose_lines(source: str) -> tuple[int, int]:
    """(lines holding prose, all lines) of a module's source."""
    tree = ast.parse(source)
    skip = docstring_lines(tree)
    lines = set()
    for node in ast.walk(tree):
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > LONG
        if isinstance(node, ast.JoinedStr) or literal:
            lines.update(set(range(node.lineno, node.end_lineno + 1)) - skip)
    return len(lines), len(source.splitlines())


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python tools/prose_share.py REV MODULE [MODULE ...]", file=sys.stderr)
        return 2
    rev, paths = argv[0], argv[1:]
    for path in paths:
        show = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
        if show.returncode != 0:
            print(f"error: {rev}:{path}: {show.stderr.strip()}", file=sys.stderr)
            return 2
        prose, total = prose_lines(show.stdout)
        print(f"{rev}:{path}: {prose}/{total} lines = {100 * prose / total:.0f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
