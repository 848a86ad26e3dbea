"""The random policy's scores (benchmark/studies/random_policy.py): the dry run measures and writes nothing and says
what it would do as the sweep does; the measurement reproduces the committed CartPole row."""

import io
from contextlib import redirect_stdout

import pytest

from benchmark import compact, stats, sweep
from benchmark.studies import random_policy


@pytest.mark.parametrize(
    "argv", [[], ["--tasks", "CartPole,Hopper"], ["--tasks", "CartPole", "--budget", "1000"]]
)
def test_the_dry_run_says_what_the_sweep_says_and_measures_nothing(argv, monkeypatch):
    args = sweep.build_parser().parse_args(["--study", "random", "--dry-run"] + argv)
    with redirect_stdout(io.StringIO()) as theirs:
        assert sweep.main(["--study", "random", "--dry-run"] + argv) == 0
    monkeypatch.setattr(random_policy, "random_scores", lambda *a, **k: pytest.fail("a dry run measured"))
    with redirect_stdout(io.StringIO()) as mine:
        assert random_policy.run(args) == 0
    assert mine.getvalue() == theirs.getvalue() and mine.getvalue().count("\n") == 1


def test_the_measurement_reproduces_the_committed_cartpole_row(tmp_path):
    committed = {r["task"]: r for r in stats.read_csv(compact.RANDOM_SCORES)}
    with redirect_stdout(io.StringIO()):
        rows = random_policy.random_scores(
            ["CartPole"], int(committed["CartPole"]["steps"]), out=str(tmp_path / "r.csv")
        )
    assert {k: str(v) for k, v in rows[0].items()} == committed["CartPole"]
    assert stats.read_csv(str(tmp_path / "r.csv")) == [committed["CartPole"]]
