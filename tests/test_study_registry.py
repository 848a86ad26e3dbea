"""The studies' registry and its contract (benchmark/studies/__init__.py): the core (every module of benchmark/ outside
benchmark/studies/) imports no study module and dispatches on no study's key, a study supplies its own job command,
its part of REPORT.md and of the verdict, and a part the report or the verdict does not list is an error."""

import ast
import glob
import os

import pytest

from benchmark import report, studies, sweep, verdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = sorted(glob.glob(os.path.join(ROOT, "benchmark", "*.py")))


def study_keys() -> set:
    """What names a study: its registry key, its NAME and the algorithm its jobs run outside the algorithms' registry
    (sb3.ALGO); less the verdict's own ids (its rows, points, design keys and summary parts), which the studies'
    verdict parts carry ("claims" is the claims study's key and the verdict's row of the claims)."""
    keys = set()
    for study in studies.modules():
        keys |= {studies.key(study), study.NAME, getattr(study, "ALGO", None)}
    return (keys - {None}) - set(verdict.ROWS + verdict.POINTS + verdict.DESIGN + verdict.SUMMARY)


# comparisons with a word that is also a study's key but, on this field, is the module's own word: hparams.Cell.source
# "grid" says an ablation cell is the paper's SMAC row (the word of the ablation cells, not a choice of study)
OWN_WORDS = {("benchmark/hparams.py", "source")}


def names_a_study(node, keys: set) -> bool:
    """A constant (or a tuple, list or set of constants) that is a study's key."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(names_a_study(e, keys) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in keys


def core_offences(path: str, keys: set) -> list[str]:
    """Where a module imports a study module or dispatches on a study's key: a comparison with it (`==`, `in`), a
    subscript by it (`done["grid"]`), a .get / .pop / .setdefault of it."""
    out = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        what = None
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmark.studies."):
            what = f"imports {node.module}"
        elif isinstance(node, ast.ImportFrom) and node.module == "benchmark.studies":
            named = [a.name for a in node.names if a.name in studies.REGISTRY]
            what = f"imports benchmark.studies.{named[0]}" if named else None
        elif isinstance(node, ast.Import):
            named = [a.name for a in node.names if a.name.startswith("benchmark.studies.")]
            what = f"imports {named[0]}" if named else None
        elif isinstance(node, ast.Compare) and any(
            names_a_study(n, keys) for n in [node.left, *node.comparators]
        ):
            fields = {n.attr for n in [node.left, *node.comparators] if isinstance(n, ast.Attribute)}
            mine = any((os.path.relpath(path, ROOT), f) in OWN_WORDS for f in fields)
            what = None if mine else "compares with a study's key"
        elif isinstance(node, ast.Subscript) and names_a_study(node.slice, keys):
            what = f"reads [{node.slice.value!r}]"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
            and names_a_study(node.args[0], keys)
        ):
            what = f"reads .{node.func.attr}({node.args[0].value!r})"
        if what:
            out.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {what}")
    return out


def test_the_core_imports_no_study_module_and_dispatches_on_no_studys_key():
    keys = study_keys()
    assert {"grid", "prereg", "mujoco_5M", "mujoco-5M", "sb3", "sb3-a2c", "random"} <= keys
    offences = [o for path in CORE for o in core_offences(path, keys)]
    assert offences == []


def test_the_core_check_finds_an_import_and_a_dispatch_but_not_the_word(tmp_path):
    """The check on a hand-made module: the study imports and the dispatches are found, the word "grid" in a string,
    a docstring or an argument is not."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""the grid and a random policy"""\n'
        "from benchmark.studies import mujoco_5M\n"
        "from benchmark.studies.grid import design\n"
        "from benchmark.studies import Where\n"
        "x = done['grid']\n"
        "if job.algo == 'sb3-a2c':\n    pass\n"
        "y = name in ('prereg', 'other')\n"
        "z = parts.get('mujoco_5M')\n"
        "print('grid', f(grid=1), 'random')\n"
    )
    found = core_offences(str(module), study_keys())
    assert [o.split(" ", 1)[1] for o in found] == [
        "imports benchmark.studies.mujoco_5M",
        "imports benchmark.studies.grid",
        "reads ['grid']",
        "compares with a study's key",
        "compares with a study's key",
        "reads .get('mujoco_5M')",
    ]


def test_a_study_supplies_its_own_job_command():
    """An SB3 job runs its study's command (not the lab trainer, whose flags are not checked on it); a lab job the
    trainer."""
    args = sweep.build_parser().parse_args(
        ["--study", "sb3", "--tasks", "Hopper", "--seeds", "1", "--runs-dir", "r"]
    )
    (job,) = studies.named()["sb3"].jobs(args)
    cmd = sweep.command(job, "fresh", None)
    assert cmd[1:] == ["-m", "benchmark.studies.sb3", "Hopper", "1", "300000", job.seed_dir]
    sweep.check_jobs([job])  # not parsed by the trainer
    (lab,) = sweep.make_jobs(["CartPole"], ["smac"], [1], {"CartPole": 1000}, "r")
    assert (
        sweep.command(lab, "fresh", None)[1:3] == sweep.TRAINER
        and studies.job_command(lab, "fresh", None) is None
    )


def test_a_verdict_row_point_or_design_key_the_table_does_not_list_is_an_error():
    row = {"id": "ell", "numbers": {"tasks": []}, "answer": [], "of": 0, "links": []}
    assert [r["id"] for r in verdict.assemble([{"rows": [row]}])["rows"]] == ["ell"]
    for part, name in (
        ({"rows": [{**row, "id": "new_row"}]}, "ROWS"),
        ({"points": {"new_point": {}}}, "POINTS"),
        ({"design": {"new_key": 1}}, "DESIGN"),
        ({"summary": {"new_part": 1}}, "SUMMARY"),
    ):
        with pytest.raises(ValueError, match=f"verdict.{name}"):
            verdict.assemble([{"rows": [row]}, part])


def test_the_summary_takes_what_the_studies_declare():
    table = {"cells": 10, "differ": 7, "matched": True}
    out = verdict.assemble([{"summary": {"table": table}}])["summary"]
    assert out["table"] == table and out["headline"] is None


def test_a_part_of_report_md_the_report_does_not_list_is_an_error(monkeypatch):
    """REPORT.md's data in report.OWN's order, whatever order a study returns its part in; a key OWN does not list:
    ValueError naming OWN."""
    from benchmark.studies import grid

    def listed(result, done):
        return {"budgets": [1], "design": {}}

    def unlisted(result, done):
        return {"budgets": [], "new_part": 1}

    monkeypatch.setattr(report, "study_logs", list)
    monkeypatch.setattr(grid, "report", listed)
    assert list(report.report_data({"grid": {}})) == ["design", "budgets", "provenance"]
    monkeypatch.setattr(grid, "report", unlisted)
    with pytest.raises(ValueError, match="report.OWN"):
        report.report_data({"grid": {}})


def test_the_studies_the_report_runs_on_any_logs_read_their_committed_files_under_where_root(tmp_path):
    """Every study that report.write_report runs on logs of one's own (not COMMITTED_ONLY) and that reads files its
    toml or the repository names reads them under where.root: an empty root, nothing read."""
    from benchmark.studies import fidelity, grid, mujoco_5M, prereg

    where = studies.Where(root=str(tmp_path))
    none = grid.Data(runs=[], headline=[], final={}, diag={})
    assert mujoco_5M.analyze(where, {})["res5"]["runs_in"] == 0
    pre = prereg.analyze(where, {"grid": {"data": none}})
    assert pre["rank1"] == [] and all(r["n"] == 0 for r in pre["pre"]["equivalence"])
    readings = fidelity.analyze(where, {"grid": {"data": none}})["readings"]
    assert readings["fidelity"]["has_runs"] is False and readings["grid_300k"] is None
    assert [studies.key(s) for s in studies.modules() if hasattr(s, "analyze") and not s.COMMITTED_ONLY] == [
        "grid",
        "prereg",
        "mujoco_5M",
        "claims",
        "fidelity",
    ]
