"""What "done" means for a sweep's job: a compact log counts
only when it loads with the report's own loader (compact.load) and was made with the job's flags; a log or run
directory of other flags is refused before any job starts, a log the report would leave out is set aside and its
job run again; --extra-flags go through the trainer's parser before anything runs; every study's --dry-run over the
committed logs finds nothing to run; a cut-off last CSV line is not packed as a row. Tiny budgets (T = 100)."""

import gzip
import json
import os
import shutil

import pytest
from helpers import finished_run, one_line_error
from test_sweep_faults import sweep_argv, train, write_log

from benchmark import compact, report, sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOGS = os.path.join(ROOT, "benchmark", "results", "logs")
STAGE1 = "classic=500000,mujoco=1000000,Pendulum=2000000"


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def rewrite(path, edit):
    """A compact log rewritten with edit(record) applied."""
    with gzip.open(path, "rt") as f:
        record = json.load(f)
    edit(record)
    with gzip.open(path, "wt") as f:
        json.dump(record, f)


def job_lines(out):
    """{seed: state} of a --dry-run's job lines."""
    states = {}
    for line in out.splitlines():
        if line.startswith("CartPole/sgd/seed"):
            name, state = line.split()[:2]
            states[int(name.rsplit("seed", 1)[1])] = state
    return states


def tree(path):
    """Every file under path with its bytes."""
    out = {}
    for root, _, names in os.walk(path):
        for name in names:
            out[os.path.join(root, name)] = read_bytes(os.path.join(root, name))
    return out


def listing(path):
    """Every file under path with its size and modification time."""
    out = {}
    for root, _, names in os.walk(path):
        for name in names:
            stat = os.stat(os.path.join(root, name))
            out[os.path.join(root, name)] = (stat.st_size, stat.st_mtime_ns)
    return out


# 1. a log the report leaves out is no log for the sweep either ------------------------------------------------------
def foreign(record):
    record.clear()
    record.update({"hello": "world", "status": "finished", "global_step": 200, "budget": 200})


def header_only(record):
    del record["episodes"], record["updates"]


def column_missing(record: dict) -> None:
    del record["episodes"]["episodic_return"]


def column_cut_short(record: dict) -> None:
    record["episodes"]["global_step"] = record["episodes"]["global_step"][:-1]


@pytest.mark.parametrize(
    "damage",
    [foreign, header_only, column_missing, column_cut_short],
    ids=["foreign JSON", "header without body", "a column missing", "a column cut short"],
)
def test_a_log_the_report_leaves_out_is_set_aside_and_its_job_run_again(tmp_path, capsys, damage):
    """Valid gzip, but foreign JSON or a "finished" header without its body: the sweep printed `done (skip)` while the
    report left the log out (KeyError), so the job never ran and the table lost a seed. Now the sweep reads it with
    the report's loader: not done, set aside (renamed, the same bytes), the job run again, its new log read by both."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    path = write_log(logs, 1)
    rewrite(path, damage)
    damaged = read_bytes(path)
    assert compact.discover_logs(str(logs)) == []  # the report leaves it out
    capsys.readouterr()
    argv = sweep_argv(runs, "1", 200, "--logs-dir", str(logs))
    assert sweep.main(argv + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert job_lines(out) == {1: "fresh"}, out
    assert len([line for line in out.splitlines() if path in line]) == 1, out  # named once, not moved
    assert read_bytes(path) == damaged
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    assert "finished: 1" in out and "Traceback" not in out, out
    assert read_bytes(path + ".damaged") == damaged  # set aside, never deleted or overwritten
    (run,) = compact.discover_logs(str(logs))  # the run's new log, which the report reads
    assert run["seed"] == 1 and run["status"] == "finished" and run["last_step"] == 200


def update_column_missing(record: dict) -> None:
    del record["updates"]["ell_sq"]


def update_column_cut_short(record: dict) -> None:
    """Two updates, one column holding one of them."""
    record["updates"] = {c: [1.0, 2.0] for c in compact.UPDATE_COLS}
    record["updates"]["step_par_norm"] = [1.0]


def optional_column_cut_short(record: dict) -> None:
    """An optional update column (one a log may lack) that it holds, shorter than the table."""
    update_column_cut_short(record)
    record["updates"]["step_par_norm"] = [1.0, 2.0]
    record["updates"]["eta"] = [1.0]


def optional_column_absent(record: dict) -> None:
    del record["updates"]["eta"]


@pytest.mark.parametrize(
    "damage",
    [update_column_missing, update_column_cut_short, optional_column_cut_short],
    ids=["an update column missing", "an update column cut short", "an optional update column cut short"],
)
def test_a_log_without_every_update_column_whole_is_not_done(tmp_path, capsys, damage):
    """A log whose updates lack a column the report reads (ell_sq), or hold one shorter than the others: `done (skip)`
    for the sweep, then the report stopped on it (`error: 'ell_sq'`, or numpy's broadcast error) without naming it.
    Now the sweep's dry run names it and lists its job as fresh, and the report's reader leaves it out."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    path = write_log(logs, 1)
    rewrite(path, damage)
    assert compact.discover_logs(str(logs)) == []
    assert "damaged compact log" in capsys.readouterr().err
    assert sweep.main(sweep_argv(runs, "1", 200, "--logs-dir", str(logs), "--dry-run")) == 0
    out = capsys.readouterr().out
    assert job_lines(out) == {1: "fresh"}, out
    assert len([line for line in out.splitlines() if path in line]) == 1, out


def test_a_log_without_an_optional_column_is_whole(tmp_path):
    """eta, which no committed log holds, is not required: such a log is read, and not damaged for the sweep."""
    path = write_log(tmp_path / "logs", 1)
    rewrite(path, optional_column_absent)
    (run,) = compact.discover_logs(str(tmp_path / "logs"))
    assert "eta" not in run["updates"] and len(run["updates"]) == len(compact.UPDATE_COLS) - 1
    assert compact.damage(path) is None


def test_the_report_names_and_leaves_out_a_log_it_cannot_read_in_full(tmp_path, capsys):
    """Among whole logs, one without ell_sq and one with step_par_norm cut short: the report exited 2 (`error:
    'ell_sq'`), every log lost and none named. Now each is named on stderr in one line and the others are reported."""
    logs, out_dir = tmp_path / "logs", tmp_path / "report"
    write_log(logs, 1)
    write_log(logs, 2)
    missing, short = write_log(logs, 3), write_log(logs, 4)
    for path, damage in ((missing, update_column_missing), (short, update_column_cut_short)):
        rewrite(path, damage)
    capsys.readouterr()
    assert report.main(["--logs", str(logs), "--out-dir", str(out_dir)]) == 0
    err = capsys.readouterr().err
    for path in (missing, short):
        assert len([line for line in err.splitlines() if path in line]) == 1, err
    with open(os.path.join(out_dir, "results", "report.json")) as f:
        assert json.load(f)["runs"] == 2


def gone_or_another(path, fault):
    """The log at path made a link to a file that is not there (fault "link": the log moved away, its link left
    behind), or one that stores another seed (seed1.json.gz copied over it), task or algorithm than its path's."""
    if fault == "link":
        os.remove(path)
        os.symlink(path + ".moved", path)
    elif fault == "seed":
        shutil.copy(os.path.join(os.path.dirname(path), "seed1.json.gz"), path)
    else:

        def edit(record):
            record[fault] = {"task": "Acrobot", "algo": "smac"}[fault]

        rewrite(path, edit)


@pytest.mark.parametrize("fault", ["link", "seed", "task", "algo"])
def test_the_report_names_and_leaves_out_a_log_gone_or_not_its_paths(tmp_path, capsys, fault):
    """Beside two whole logs, a dangling link (the report exited 2, `No such file or directory`, and wrote nothing),
    or a log whose stored seed, task or algorithm is not its path's (it entered final.csv as another run, a copy of
    seed 1 as a third seed): now named on stderr in one line and left out, the two others reported."""
    logs, out_dir = tmp_path / "logs", tmp_path / "report"
    write_log(logs, 1)
    write_log(logs, 2)
    bad = write_log(logs, 3)
    gone_or_another(bad, fault)
    capsys.readouterr()
    assert report.main(["--logs", str(logs), "--out-dir", str(out_dir)]) == 0
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if bad in line]) == 1, err
    with open(os.path.join(out_dir, "results", "report.json")) as f:
        assert json.load(f)["runs"] == 2
    assert [(r["task"], r["algo"], r["seed"]) for r in compact.discover_logs(str(logs))] == [
        ("CartPole", "sgd", 1),
        ("CartPole", "sgd", 2),
    ]


# 2. other flags, same directory -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra,flag,there,asked",
    [
        (["--reading", "relu"], "--activation", "'tanh'", "'relu'"),
        (["--extra-flags", "--ent-coef 0.5"], "--ent-coef", "0.0", "0.5"),
    ],
    ids=["reading", "extra-flags"],
)
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_a_log_of_other_flags_is_refused_before_any_job_starts(
    tmp_path, capsys, extra, flag, there, asked, dry_run
):
    """The same --runs-dir / --logs-dir again with `--reading relu` or `--extra-flags "--ent-coef 0.5"`: one line naming
    the flag and both values (the log says tanh, ent_coef 0), exit 2, nothing renamed or run (not `done (skip)`)."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    argv = sweep_argv(runs, "1,2", 200, "--logs-dir", str(logs))
    assert sweep.main(argv) == 0
    before = {**tree(runs), **tree(logs)}
    capsys.readouterr()
    code = sweep.main(argv + extra + (["--dry-run"] if dry_run else []))
    out, err = capsys.readouterr()
    one_line_error(err, code, flag, there, asked, compact.log_path(str(logs), "CartPole", "sgd", 1))
    assert job_lines(out) == {}  # no job listed, none started
    assert {**tree(runs), **tree(logs)} == before  # nothing renamed, removed or written


def test_a_log_at_another_jobs_path_is_refused(tmp_path, capsys):
    """A log of CartPole/sgd copied to CartPole/smac's path is refused in one line naming the log (not done for
    smac while the report counts it under sgd, reading task and algo from the record)."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    path = write_log(logs, 1)
    elsewhere = compact.log_path(str(logs), "CartPole", "smac", 1)
    os.makedirs(os.path.dirname(elsewhere))
    os.rename(path, elsewhere)
    argv = sweep_argv(runs, "1", 200, "--logs-dir", str(logs))
    argv[argv.index("sgd")] = "smac"
    capsys.readouterr()
    code = sweep.main(argv + ["--dry-run"])
    one_line_error(capsys.readouterr().err, code, elsewhere, "CartPole/sgd")


def test_a_run_directory_of_other_flags_is_refused_not_resumed(tmp_path, capsys):
    """A half-done run in the seed directory and `--extra-flags "--ent-coef 0.5"`: refused in one line naming the run
    directory, exit 2, nothing started (not resumed with its old flags, ent_coef 0)."""
    runs = tmp_path / "runs"
    run = train(runs, 1, 200)
    before = tree(runs)
    capsys.readouterr()
    code = sweep.main(sweep_argv(runs, "1", 400, "--extra-flags", "--ent-coef 0.5"))
    one_line_error(capsys.readouterr().err, code, run, "--ent-coef", "0.0", "0.5")
    assert tree(runs) == before
    assert sweep.main(sweep_argv(runs, "1", 400)) == 0  # the job's own flags resume it
    assert compact.read_summary(run)["global_step"] == 400


def test_a_log_agrees_when_it_predates_a_flag_or_keeps_retired_ones(tmp_path, capsys):
    """What every committed log looks like: no key for a flag added after it ran (read as its default), keys this
    trainer no longer has, and the absolute --runs-dir of the machine that ran it: done, and left as it is."""
    runs, logs = tmp_path / "runs", tmp_path / "logs"
    argv = sweep_argv(runs, "1", 200, "--logs-dir", str(logs))
    assert sweep.main(argv) == 0
    path = compact.log_path(str(logs), "CartPole", "sgd", 1)

    def older(record):
        del record["args"]["target_kl"]
        record.pop("provenance", None)
        record["args"].update(progress=False, save_model=True, runs_dir="/elsewhere/benchmark/runs/seed1")

    rewrite(path, older)
    kept = read_bytes(path)
    capsys.readouterr()
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    assert "done: 1" in out, out
    assert read_bytes(path) == kept


# 6. --extra-flags through the trainer's parser ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "extra,name",
    [
        ("--no-such-flag 1", "--no-such-flag"),
        ("--ent-coef abc", "abc"),
        ("--eval-checkpoint /nonexistent.pt", "--eval-checkpoint"),
        ("--resume /nonexistent", "--resume"),
        ("--seed 7", "--seed"),
        ("--runs_dir /tmp/elsewhere", "--runs-dir"),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_extra_flags_the_trainer_refuses_are_one_line_before_anything_runs(
    tmp_path, capsys, extra, name, dry_run
):
    """`--extra-flags "--no-such-flag 1"` started every job, each `failed (exit 2)` with the reason only in its
    sweep.log, and --dry-run showed nothing wrong. Now one line naming it, exit 2, no job started. The same for a
    flag the sweep sets for each job (silently overridden before) or a trainer action that is not a run (every job
    would have resumed or evaluated another path)."""
    runs = tmp_path / "runs"
    capsys.readouterr()
    code = sweep.main(
        sweep_argv(runs, "1,2", 200, "--extra-flags", extra) + (["--dry-run"] if dry_run else [])
    )
    out, err = capsys.readouterr()
    one_line_error(err, code, "--extra-flags", name)
    assert job_lines(out) == {} and not os.path.exists(runs)


# every study over the committed logs --------------------------------------------------------------------------------
STUDIES = {  # each committed logs directory, and the command that made it (docs/harness.md, the tomls)
    "grid (norm)": ["--reading", "norm", "--seeds", "1-5", "--budget", STAGE1, "--logs-dir", f"{LOGS}/norm"],
    "grid (literal)": [
        "--tasks",
        "Walker2d",
        "--algos",
        "smac",
        "--seeds",
        "1,2",
        "--logs-dir",
        f"{LOGS}/literal",
    ],
    "headline 5M": ["--reading", "norm", "--seeds", "1-5", "--tasks", "HalfCheetah", "--algos", "smac,cg"]
    + ["--budget", "5000000", "--logs-dir", f"{LOGS}/norm_5M"],
    "mujoco-5M": ["--study", "mujoco-5M"],
    "paired reruns": [
        "--reading",
        "norm",
        "--seeds",
        "1-5",
        "--tasks",
        "HalfCheetah",
        "--algos",
        "sgd-matched",
    ]
    + ["--budget", "5000000", "--logs-dir", f"{LOGS}/norm_5M_paired"],
    "kl_step": ["--study", "kl-step"],  # the study its pre-registration names, by name
    "prereg": ["--study", "prereg"],
    "ablations": ["--study", "ablations"],
    "defaults": ["--study", "defaults"],
    "fidelity": ["--study", "fidelity"],
    "fidelity (norm+envs-8)": ["--study", "fidelity", "--readings", "norm+envs-8"],
}


def dry_run_states(argv, capsys):
    """The sweep's --dry-run of argv: (its study's jobs, the state its line gives each job, its stdout)."""
    capsys.readouterr()
    assert sweep.main(argv + ["--dry-run"]) == 0, (argv, capsys.readouterr().err)
    out = capsys.readouterr().out
    jobs = sweep.study_jobs(sweep.build_parser().parse_args(argv))
    states = [line.split()[1] for line in out.splitlines() if line.split()[0] in {j.name for j in jobs}]
    return jobs, states, out


@pytest.mark.parametrize("study", ["prereg", "mujoco-5M", "fidelity", "ablations", "defaults"])
def test_logs_dir_none_leaves_every_job_of_a_fresh_runs_dir_to_run(tmp_path, capsys, study):
    """`--logs-dir none` ('none': off), as for the grid and kl-step: no compact log counts or is written, so in a
    fresh runs directory every job is to run. These five studies took their committed logs instead: all done."""
    argv = ["--study", study, "--runs-dir", str(tmp_path / "runs"), "--logs-dir", "none"]
    jobs, states, out = dry_run_states(argv, capsys)
    assert len(states) == len(jobs) > 0 and set(states) == {"fresh"}, out
    assert {j.logs_dir for j in jobs} == {None}


def test_every_studys_dry_run_over_the_committed_logs_finds_nothing_to_run(tmp_path, capsys):
    """Every committed log is the done log of a job of the study that made it: it loads whole (every required update
    and episode column, each of its table's length), its flags agree (1,024 of them predate --target-kl, 682 carry
    retired keys, all store an absolute --runs-dir), nothing is set aside."""
    before = listing(os.path.join(ROOT, "benchmark", "results"))
    covered = set()
    for name, argv in STUDIES.items():
        argv = argv + ["--runs-dir", str(tmp_path / "runs" / name.split()[0])]
        jobs, states, out = dry_run_states(argv, capsys)
        assert "damaged compact log" not in out, (name, out)
        assert len(states) == len(jobs) and set(states) <= {"done", "diverged"}, (name, out)
        covered |= {sweep.committed_log(j) for j in jobs}
    committed = {p for p in before if p.endswith(".json.gz") and os.path.basename(p).startswith("seed")}
    assert committed and committed <= covered
    assert listing(os.path.join(ROOT, "benchmark", "results")) == before  # nothing set aside or written


# 3. a cut-off last CSV line -----------------------------------------------------------------------------------------
def test_a_cut_off_last_csv_line_is_not_packed_as_a_row(tmp_path):
    """A finished run whose episodes.csv ends in `39` (a cut-off 3990...) and updates.csv in `8,40`, with no line end:
    neither cut-off line is packed (no episode at step 39 with no return after step 3,984, no update 8 at step 40)."""
    run = finished_run(tmp_path / "runs", steps=400)
    log = compact.log_path(str(tmp_path / "logs"), "CartPole", "sgd", 1)
    whole = compact.load(compact.pack(run, log, "CartPole", "sgd", 1, 400))
    with open(os.path.join(run, "episodes.csv"), "a") as f:
        f.write("39")
    with open(os.path.join(run, "updates.csv"), "a") as f:
        f.write("8,40")
    cut = compact.load(compact.pack(run, log, "CartPole", "sgd", 1, 400))
    for part in ("episodes", "updates"):
        assert whole[part].keys() == cut[part].keys()
        for column, values in whole[part].items():
            assert cut[part][column].tolist() == pytest.approx(values.tolist(), nan_ok=True), (part, column)
    assert cut["updates"]["update"].tolist() == [1, 2, 3, 4]
    assert cut["episodes"]["global_step"].max() <= 400 and 39 not in cut["episodes"]["global_step"].tolist()


# every study's job list, as the sweep built it before the studies became modules -------------------------------------
def test_every_studys_job_list_is_the_one_the_sweep_built_before_the_studies_moved():
    """tests/data/study_jobs.json: the digest of each command's jobs, made by the sweep when each study's job list
    still lived in sweep.py (tests/study_jobs.py says how); the sweep over benchmark/studies/ builds the same."""
    import study_jobs

    with open(os.path.join(ROOT, "tests", "data", "study_jobs.json"), encoding="utf-8") as f:
        assert study_jobs.digests() == json.load(f)


def test_the_kl_step_study_by_name_runs_the_jobs_its_logs_came_from(monkeypatch):
    """`--study kl-step` builds exactly the jobs of the command its pre-registration gives (a grid with
    --extra-flags '--target-kl 0.01'), whose digest was made before the study had a name."""
    import study_jobs

    with open(os.path.join(ROOT, "tests", "data", "study_jobs.json"), encoding="utf-8") as f:
        registered = json.load(f)["grid (KL step's command)"]
    monkeypatch.chdir(ROOT)
    jobs = sweep.study_jobs(sweep.build_parser().parse_args(["--study", "kl-step", "--runs-dir", "runs"]))
    assert [len(jobs), study_jobs.digest(jobs)] == registered
