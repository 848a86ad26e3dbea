"""The repository's style: `ruff format` and `ruff check` with pyproject.toml's rules, pinned in
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


def product_text() -> dict:
    """{path: text} of the text a reader gets: the page templates, README.md, docs/*.md, the generated pages and
    benchmark/hyperparams.toml (whose notes reach the pages)."""
    import glob

    paths = glob.glob(os.path.join(ROOT, "benchmark", "templates", "*.j2"))
    paths += [os.path.join(ROOT, "README.md"), *glob.glob(os.path.join(ROOT, "docs", "*.md"))]
    paths += [os.path.join(ROOT, "benchmark", p) for p in ("REPORT.md", "ABLATIONS.md", "hyperparams.toml")]
    paths += glob.glob(os.path.join(ROOT, "benchmark", "report", "*.md"))
    return {p: open(p, encoding="utf-8").read() for p in paths}


ISSUE_NUMBER = r"\b[Ii]ssues? #?\d+"


def python_files() -> list:
    """Every Python file of the checkout, outside hidden folders (.venv, .git)."""
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        found += [os.path.join(folder, f) for f in files if f.endswith(".py")]
    return sorted(found)


def comments_and_docstrings(path: str) -> list:
    """(line, text) of each comment (tokenize) and each module, class or function docstring (ast) of a file."""
    import ast
    import io
    import tokenize

    source = open(path, encoding="utf-8").read()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    found = [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, documented) and ast.get_docstring(node, clean=False) is not None:
            found.append((node.body[0].lineno, ast.get_docstring(node, clean=False)))
    return found


def test_every_command_the_pages_name_is_a_module():
    """Each `python -m benchmark...` the pages and docs name resolves to a module of this checkout."""
    import importlib.util
    import re

    named = {
        (os.path.relpath(p, ROOT), m)
        for p, text in product_text().items()
        for m in re.findall(r"python -m (benchmark(?:\.\w+)+)", text)
    }
    assert named
    missing = sorted((p, m) for p, m in named if importlib.util.find_spec(m) is None)
    assert missing == []


def test_the_templates_readme_docs_and_pages_name_no_issue_number():
    """Product text says what a thing is, not which issue made it (the pre-registration tomls, records, are not
    read)."""
    import re

    hits = {os.path.relpath(p, ROOT): re.findall(ISSUE_NUMBER, text) for p, text in product_text().items()}
    assert {p: h for p, h in hits.items() if h} == {}


def test_no_python_comment_or_docstring_names_an_issue_number():
    """The comments and docstrings of every Python file (tests and tools included) say what the code is."""
    import re

    hits = [
        f"{os.path.relpath(path, ROOT)}:{line}: {match}"
        for path in python_files()
        for line, text in comments_and_docstrings(path)
        for match in re.findall(ISSUE_NUMBER, text)
    ]
    assert python_files() and hits == []


def test_the_issue_number_check_reads_comments_and_docstrings(tmp_path):
    """A comment and a docstring that cite an issue are found; the same words in an ordinary string are not."""
    import re

    path = tmp_path / "example.py"
    path.write_text(
        '"""Module (issue 3)."""\n\nX = "issue 4"  # see issue 5\n\n\ndef f():\n    """Issues 6."""\n'
    )
    texts = [text for _, text in comments_and_docstrings(str(path))]
    assert sorted(m for t in texts for m in re.findall(ISSUE_NUMBER, t)) == ["Issues 6", "issue 3", "issue 5"]
