"""The sweep's flags are honoured or refused: --extra-flags may not change a flag the jobs already pass, each study
takes only the study-dependent options it honours (its SWEEP_OPTIONS and its own), and a one-token --extra-flags value
is a value. Every refusal is one line, exit 2, before anything runs; dry runs and tiny budgets (T = 100)."""

import dataclasses
import os

import pytest
from helpers import one_line_error
from test_sweep_done import STAGE1, job_lines
from test_sweep_faults import sweep_argv

from benchmark import studies, sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --extra-flags against the jobs' own flags ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra,flag,job,theirs",
    [
        (["--extra-flags", "--learning-rate 0.1"], "--learning-rate", "0.007", "0.1"),
        (["--extra-flags", "--num-steps 500"], "--num-steps", "100", "500"),
        (["--reading", "relu", "--extra-flags", "--activation tanh"], "--activation", "'relu'", "'tanh'"),
        (["--extra-flags", "--seed 7"], "--seed", "1", "7"),
    ],
    ids=["a row's flag", "the sweep's --num-steps", "a reading's flag", "the sweep's --seed"],
)
def test_extra_flags_that_change_a_flag_the_jobs_pass_are_refused_before_anything_runs(
    tmp_path, capsys, extra, flag, job, theirs
):
    """`--extra-flags "--learning-rate 0.1"` trained every job at 0.1 while its row says 0.007 (config.json recorded
    0.1), and `--num-steps` the same. Now one line naming the flag and both values, exit 2, no job started."""
    runs = tmp_path / "runs"
    capsys.readouterr()
    code = sweep.main(sweep_argv(runs, "1,2", 200, *extra))
    out, err = capsys.readouterr()
    one_line_error(err, code, "--extra-flags", flag, job, theirs)
    assert job_lines(out) == {} and not os.path.exists(runs)


@pytest.mark.parametrize(
    "argv",
    [
        ["--extra-flags", "--ent-coef 0.5"],
        ["--extra-flags", "--num-minibatches 10"],
        ["--extra-flags", "--learning-rate 0.007"],  # the value the row gives: nothing overridden
    ],
    ids=["ent-coef", "num-minibatches", "a row's own value"],
)
def test_extra_flags_the_jobs_do_not_pass_are_added(tmp_path, capsys, argv):
    capsys.readouterr()
    assert sweep.main(sweep_argv(tmp_path / "runs", "1", 200, *argv, "--dry-run")) == 0
    out = capsys.readouterr().out
    assert job_lines(out) == {1: "fresh"} and argv[1] in out, out


def test_the_kl_step_studys_target_kl_is_its_own_and_its_documented_command_passes(capsys, monkeypatch):
    """The command the KL-step pre-registration gives (a grid with --extra-flags '--target-kl 0.01') still finds its
    committed logs done; `--study kl-step` refuses another --target-kl and takes its own value."""
    monkeypatch.chdir(ROOT)
    grid = ["--reading", "norm", "--seeds", "1-5", "--tasks", "CartPole,Pendulum,Hopper,HalfCheetah"]
    grid += ["--algos", "smac", "--budget", STAGE1, "--logs-dir", "benchmark/results/logs/kl_step"]
    for argv in (grid, ["--study", "kl-step"]):
        capsys.readouterr()
        assert sweep.main(argv + ["--extra-flags", "--target-kl 0.01", "--dry-run"]) == 0
        states = [line.split()[1] for line in capsys.readouterr().out.splitlines() if "/smac/seed" in line]
        assert len(states) == 20 and set(states) == {"done"}
    code = sweep.main(["--study", "kl-step", "--extra-flags", "--target-kl 0.02", "--dry-run"])
    out, err = capsys.readouterr()
    one_line_error(err, code, "--target-kl", "0.01", "0.02")
    assert "/smac/seed" not in out


# a one-token --extra-flags value ------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", ["--norm-obs", "--no-tensorboard", "--ent-coef=0.5"])
def test_a_one_token_extra_flags_value_is_the_options_value(tmp_path, capsys, token):
    """`--extra-flags "--norm-obs"`: argparse's usage and "expected one argument", exit 2 (only the spelling
    --extra-flags=--norm-obs worked). Now the job's command line carries it."""
    capsys.readouterr()
    assert sweep.main(sweep_argv(tmp_path / "runs", "1", 200, "--extra-flags", token, "--dry-run")) == 0
    (line,) = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("CartPole/sgd/seed1 ")
    ]
    assert f" {token} " in line


# each study takes what it honours ------------------------------------------------------------------------------------
GIVEN = {  # a valid value of each study-dependent option
    "tasks": "CartPole",
    "algos": "smac",
    "seeds": "1",
    "budget": "1000",
    "extra_flags": "--ent-coef 0.5",
    "runs_dir": "elsewhere/runs",
    "logs_dir": "elsewhere/logs",
    "checkpoint_every": "5",
    "reading": "norm",
    "extend_from": "elsewhere/smaller",
    "horizon": "gym",
    "num_steps": "100",
    "blocks": "equivalence",
    "readings": "norm",
    "sections": "fisher",
}


def argv_of(options) -> list[str]:
    return [token for o in options for token in (sweep.flag(o), GIVEN[o])]


def test_every_study_dependent_option_has_a_probe():
    dependent = set(sweep.STUDY_OPTIONS).union(*(sweep.own_options(s) for s in studies.modules()))
    assert dependent == set(GIVEN)


@pytest.mark.parametrize("name", list(studies.named()))
def test_a_study_refuses_every_option_it_does_not_take_in_one_line(tmp_path, capsys, monkeypatch, name):
    """`--study kl-step --seeds 1 --budget 2000` listed the toml's 20 jobs (seeds 1-5, 500k-2M steps) and a real run
    started them all; prereg and mujoco-5M kept their jobs the same way, defaults ignored --budget. Now each option a
    study does not take is named in one line, exit 2, nothing listed or started; its default command still runs."""
    monkeypatch.chdir(tmp_path)
    study = studies.named()[name]
    refused = [o for o in GIVEN if o not in sweep.taken_options(study)]
    capsys.readouterr()
    code = sweep.main(["--study", name, *argv_of(refused), "--dry-run"])
    out, err = capsys.readouterr()
    one_line_error(err, code, f"--study {name}", *(sweep.flag(o) for o in refused))
    assert out == "" and os.listdir(tmp_path) == []
    assert sweep.given_options(["--study", name, "--workers", "2", "--dry-run"]) == {
        "study",
        "workers",
        "dry_run",
    }


HONOURED = ("tasks", "algos", "seeds", "budget", "extra_flags", "runs_dir", "logs_dir", "checkpoint_every")


@pytest.mark.parametrize("name", [n for n, s in studies.named().items() if hasattr(s, "jobs")])
def test_every_option_a_study_takes_changes_its_jobs(monkeypatch, tmp_path, name):
    """What a study declares it takes, it honours: each of those options, given, changes its job list."""
    monkeypatch.chdir(tmp_path)
    study = studies.named()[name]

    def jobs(argv):
        return [
            dataclasses.asdict(j)
            for j in sweep.study_jobs(sweep.build_parser().parse_args(["--study", name, *argv]))
        ]

    default = jobs([])
    for option in (o for o in sweep.taken_options(study) if o in HONOURED):
        assert jobs(argv_of([option])) != default, option


def test_help_lists_the_options_each_study_takes():
    table = sweep.build_parser().epilog.split(":\n", 1)[1]
    rows, name = {}, None
    for line in table.splitlines():
        if not line.startswith(" " * 13):
            name = line.split()[0]
        rows[name] = rows.get(name, []) + line[13:].split()
    assert rows == {n: [sweep.flag(o) for o in sweep.taken_options(s)] for n, s in studies.named().items()}
