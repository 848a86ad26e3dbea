"""Tests for the reproduction harness (benchmark/): the aggregation protocol against a hand-computed
example, the hyper-parameter table, sweep resume after Ctrl-C and after a hard kill, and the Ray
backend. Tiny budgets (T = 200 via --num-steps); the whole file takes well under 90 s on 2 cores."""

import csv
import gzip
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers import seed_summary

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmark import (  # noqa: E402
    aggregate,  # noqa: E402
    compact,
    hparams,
    protocol,
    sweep,
)
from benchmark.studies import random_policy  # noqa: E402

PY = sys.executable
SWEEP = ["-m", "benchmark.sweep"]  # the one way in: python -m benchmark.<module>


# ------------------------------------------------------------------------------------------
# Aggregation: bins, carry-forward, EWM, seeds, ddof (hand-computed)
# ------------------------------------------------------------------------------------------
def test_bin_index_is_right_closed():
    # bin k = (k B/n, (k+1) B/n]; step 0 -> 0; beyond the budget -> dropped (-1)
    assert protocol.bin_index([0, 1, 10_000, 10_001, 999_999, 1_000_000, 1_000_001], 1_000_000).tolist() == [
        0,
        0,
        0,
        1,
        99,
        99,
        -1,
    ]


def test_aggregation_hand_example():
    B, n = 1000, 4  # bins (0,250], (250,500], (500,750], (750,1000]
    # seed A: bin0 = mean(1, 3) = 2; bin1 empty -> carried 2; bin2 = 10; bin3 = 20; step 1200 > B dropped
    a = protocol.bin_means([100, 200, 600, 1000, 1200], [1, 3, 10, 20, 99], B, n)
    np.testing.assert_allclose(a, [2, 2, 10, 20])
    # EWM 0.1: s0 = 2; s1 = .1*2 + .9*2 = 2; s2 = .1*10 + .9*2 = 2.8; s3 = .1*20 + .9*2.8 = 4.52
    sa = protocol.ewm(a)
    np.testing.assert_allclose(sa, [2, 2, 2.8, 4.52])
    # seed B: no episode in bin0 (leading NaN, skipped); bin1 = 5; bin2 carried 5; bin3 = 7
    b = protocol.bin_means([300, 800], [5, 7], B, n)
    np.testing.assert_allclose(b, [np.nan, 5, 5, 7])
    sb = protocol.ewm(b)  # starts at bin1: 5, 5, .1*7 + .9*5 = 5.2
    np.testing.assert_allclose(sb, [np.nan, 5, 5, 5.2])
    mean, std, cnt = aggregate.across_seeds(np.array([sa, sb]))
    np.testing.assert_allclose(mean, [2, 3.5, 3.9, 4.86])
    # ddof = 1: two values x, y -> |x - y| / sqrt(2); one value -> NaN
    np.testing.assert_allclose(std[1:], np.abs(sa[1:] - sb[1:]) / np.sqrt(2))
    assert np.isnan(std[0]) and cnt.tolist() == [1, 2, 2, 2]
    np.testing.assert_allclose(aggregate.across_seeds(np.array([sa, sb]), ddof=0)[1][3], 0.34)
    # a run that stopped (diverged) at step 400: bins starting at or after 400 stay empty
    d = protocol.bin_means([100, 200], [1, 3], B, n, last_step=400)
    np.testing.assert_allclose(d, [2, 2, np.nan, np.nan])
    assert np.isnan(protocol.ewm(d)[2:]).all()


def test_ewm_matches_pandas_recursion():
    x = np.random.default_rng(0).normal(size=50)
    s, ref = protocol.ewm(x), [x[0]]
    for v in x[1:]:
        ref.append(0.1 * v + 0.9 * ref[-1])
    np.testing.assert_allclose(s, ref, rtol=1e-12)


# ------------------------------------------------------------------------------------------
# The hyper-parameter table
# ------------------------------------------------------------------------------------------
def test_every_task_and_algorithm_resolves_to_valid_trainer_flags():
    import gymnasium as gym
    import tyro

    from benchmark import trainer

    assert len(hparams.tasks()) == 9
    for task in hparams.tasks():
        for horizon in ("paper", "gym"):
            env = gym.make(hparams.trainer_env_id(task, horizon), disable_env_checker=True)
            expected = 1000 if horizon == "paper" else hparams.task_info(task)["gym_max_episode_steps"]
            assert env.spec.max_episode_steps == expected, (task, horizon)
            env.close()
        for algo in hparams.algos():
            flags = hparams.lookup(task, algo)
            args = tyro.cli(trainer.Args, args=flags)
            trainer.check_args(args)
            s = hparams.settings(task, algo)
            assert args.optimizer == ("sgd" if algo == "sgd-matched" else algo)
            assert args.learning_rate == s["learning_rate"] and args.num_steps == 1000
            assert args.gamma == 0.99 and args.gae_lambda == 0.9
            if algo == "smac":
                assert args.damping == s["damping"]
            if algo in hparams.PAPER_ALGOS:
                assert hparams.paper_result(task, algo) is not None


def test_filled_and_derived_cells_are_marked_and_follow_the_rule():
    filled = {
        (t, a)
        for t in hparams.tasks()
        for a in hparams.PAPER_ALGOS
        if hparams.settings(t, a)["source"] == "ours"
    }
    assert filled == {("Pendulum", "kfac"), ("Hopper", "kfac"), ("Humanoid", "kfac")}
    for task in ("Pendulum", "Hopper", "Humanoid"):
        s = hparams.settings(task, "kfac")
        others = {hparams.settings(task, a)["critic_learning_rate"] for a in ("smac", "sgd", "adam", "cg")}
        assert s["learning_rate"] == 1e-3 and {s["critic_learning_rate"]} == others and "rule" in s
    assert (
        hparams.settings("Pendulum", "kfac")["kfac_update_freq"],
        hparams.settings("Humanoid", "kfac")["kfac_damping"],
        hparams.settings("Hopper", "kfac")["kfac_decay"],
    ) == (16, 1.5e-2, 0.99)
    for task in hparams.tasks():  # sgd-matched: eta = eta_SMAC / lambda, the rest from SMAC's row
        m, sm = hparams.settings(task, "sgd-matched"), hparams.settings(task, "smac")
        assert m["source"] == "derived" and m["optimizer"] == "sgd"
        assert m["learning_rate"] == pytest.approx(sm["learning_rate"] / sm["damping"], rel=1e-12)
        assert m["critic_learning_rate"] == sm["critic_learning_rate"]
    assert hparams.resolve_task("Walker2d-v4") == hparams.resolve_task("walker") == "Walker2d"
    assert hparams.resolve_task("Half Cheetah") == "HalfCheetah"
    assert hparams.tasks("classic") == ["Acrobot", "CartPole", "Pendulum"] == sweep.select("classic", "task")
    assert (
        hparams.tasks("mujoco") == [t for t in hparams.tasks() if hparams.group(t) == "mujoco"]
        and len(hparams.tasks("mujoco")) == 6
        and hparams.tasks("classic") + hparams.tasks("mujoco") == hparams.tasks()
    )


def test_budget_and_seed_parsing():
    b = sweep.parse_budget("classic=500000,mujoco=1e6,Pendulum=2000000")
    assert (b["CartPole"], b["Pendulum"], b["Humanoid"]) == (500_000, 2_000_000, 1_000_000)
    assert set(sweep.parse_budget("5000").values()) == {5000}
    assert sweep.parse_seeds("1-3,7") == [1, 2, 3, 7]


# ------------------------------------------------------------------------------------------
# Sweep: resume after Ctrl-C, after a hard kill, and the Ray backend
# ------------------------------------------------------------------------------------------
def _update_ids(seed_dir):
    with open(os.path.join(sweep.find_run_dir(seed_dir), "updates.csv")) as f:
        return [int(r["update"]) for r in csv.DictReader(f)]


def test_sweep_ctrl_c_then_resume_skips_finished_runs(tmp_path):
    runs = str(tmp_path / "runs")
    base = [
        PY,
        *SWEEP,
        "--tasks",
        "CartPole,Pendulum",
        "--algos",
        "smac",
        "--seeds",
        "1",
        "--num-steps",
        "200",
        "--budget",
        "CartPole=2000,Pendulum=20000",
        "--workers",
        "1",
        "--checkpoint-every",
        "2",
        "--progress-interval",
        "1",
        "--runs-dir",
        runs,
        "--allow-dirty",  # tests run on a working tree with uncommitted edits
    ]
    cart, pend = (
        os.path.join(runs, "CartPole", "smac", "seed1"),
        os.path.join(runs, "Pendulum", "smac", "seed1"),
    )
    proc = subprocess.Popen(base, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while time.time() < deadline:  # wait until CartPole is done and Pendulum has a checkpoint
        rd = sweep.find_run_dir(pend)
        if (
            rd
            and os.path.isfile(os.path.join(rd, "checkpoint.pt"))
            and (seed_summary(cart) or {}).get("status") == "finished"
        ):
            break
        assert proc.poll() is None, proc.stdout.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # Ctrl-C on the sweep
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    assert seed_summary(cart)["status"] == "finished"
    s = seed_summary(pend)
    assert s["status"] == "interrupted" and 0 < s["global_step"] < 20000, out
    cart_mtime = os.path.getmtime(os.path.join(sweep.find_run_dir(cart), "summary.json"))

    out = subprocess.run(base, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (
        os.path.getmtime(os.path.join(sweep.find_run_dir(cart), "summary.json")) == cart_mtime
    )  # not redone
    s = seed_summary(pend)
    assert s["status"] == "finished" and s["global_step"] == 20000
    with open(os.path.join(sweep.find_run_dir(pend), "config.json")) as f:
        assert json.load(f)["resumed_from_step"] > 0
    ids = _update_ids(pend)  # no duplicated rows. 99 instead of 100 when the Ctrl-C landed between the
    assert ids == list(range(1, len(ids) + 1)) and len(ids) in (
        99,
        100,
    )  # trainer's step count and its update
    with open(os.path.join(sweep.find_run_dir(pend), "updates.csv")) as f:
        steps = [int(r["global_step"]) for r in csv.DictReader(f)]
    assert steps == sorted(set(steps)) and steps[-1] == 20000
    assert "done: 1" in out.stdout and "finished: 1" in out.stdout


def test_hard_kill_logs_are_cut_back_to_the_checkpoint_and_budget_extends(tmp_path):
    runs = str(tmp_path / "runs")
    base = [
        "--tasks",
        "CartPole",
        "--algos",
        "sgd",
        "--seeds",
        "1",
        "--num-steps",
        "200",
        "--checkpoint-every",
        "2",
        "--runs-dir",
        runs,
        "--workers",
        "1",
        "--progress-interval",
        "100",
        "--allow-dirty",
    ]
    assert sweep.main(base + ["--budget", "2000"]) == 0
    seed_dir = os.path.join(runs, "CartPole", "sgd", "seed1")
    rd = sweep.find_run_dir(seed_dir)
    # simulate a hard kill after the checkpoint: rows past it, a torn line, no fresh summary
    with open(os.path.join(rd, "updates.csv"), "a") as f:
        f.write("11,2200,0,0,0,,0,0,1,,,0,0\n12,2400,0,0")
    with open(os.path.join(rd, "episodes.csv"), "a") as f:
        f.write("2100,1.0,5\n2300,2.0,5\n")
    os.remove(os.path.join(rd, "summary.json"))
    job = sweep.make_jobs(["CartPole"], ["sgd"], [1], {"CartPole": 2400}, runs, num_steps=200)[0]
    assert sweep.inspect_job(job)[0] == "resume"
    assert sweep.main(base + ["--budget", "2400"]) == 0
    assert seed_summary(seed_dir)["global_step"] == 2400
    assert _update_ids(seed_dir) == list(range(1, 13))
    with open(os.path.join(rd, "episodes.csv")) as f:
        steps = [int(r["global_step"]) for r in csv.DictReader(f)]
    assert 2100 not in steps and steps == sorted(steps)
    assert sweep.main(base + ["--budget", "2400", "--dry-run"]) == 0  # now "done"
    assert sweep.inspect_job(job)[0] == "done"


def test_ray_backend_two_runs(tmp_path):
    pytest.importorskip("ray")
    import ray

    runs = str(tmp_path / "runs")
    try:
        rc = sweep.main(
            [
                "--backend",
                "ray",
                "--ray-address",
                "local",
                "--workers",
                "2",
                "--tasks",
                "CartPole",
                "--algos",
                "smac,sgd",
                "--seeds",
                "1",
                "--budget",
                "1000",
                "--num-steps",
                "200",
                "--runs-dir",
                runs,
                "--progress-interval",
                "100",
                "--allow-dirty",
            ]
        )
    finally:
        ray.shutdown()
    assert rc == 0
    for algo in ("smac", "sgd"):
        s = seed_summary(os.path.join(runs, "CartPole", algo, "seed1"))
        assert s["status"] == "finished" and s["global_step"] == 1000
    out = aggregate.aggregate(runs, str(tmp_path / "results"))
    assert out["cells"] == 2
    with open(tmp_path / "results" / "final.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["algo"] for r in rows} == {"smac", "sgd"} and all(r["n_seeds"] == "1" for r in rows)


def test_extend_from_continues_a_copy_of_the_smaller_grids_finished_run(tmp_path, capsys):
    small, big = str(tmp_path / "small"), str(tmp_path / "big")
    base = [
        "--tasks",
        "CartPole",
        "--algos",
        "sgd",
        "--seeds",
        "1",
        "--num-steps",
        "200",
        "--workers",
        "1",
        "--progress-interval",
        "100",
        "--logs-dir",
        "none",
        "--allow-dirty",
    ]
    assert sweep.main(base + ["--runs-dir", small, "--budget", "1000"]) == 0
    src_seed, dst_seed = (os.path.join(r, "CartPole", "sgd", "seed1") for r in (small, big))
    src_eps = open(os.path.join(sweep.find_run_dir(src_seed), "episodes.csv")).read().splitlines()
    # a job asked with other flags is not continued from it
    other = sweep.make_jobs(
        ["CartPole"],
        ["sgd"],
        [1],
        {"CartPole": 2000},
        big,
        num_steps=200,
        extra_flags=["--norm-obs"],
        extend_from=small,
    )[0]
    assert sweep.extension_source(other) is None
    job = sweep.make_jobs(
        ["CartPole"], ["sgd"], [1], {"CartPole": 2000}, big, num_steps=200, extend_from=small
    )[0]
    assert sweep.plan(job) == ("extend", None, sweep.find_run_dir(src_seed))
    capsys.readouterr()
    assert (
        sweep.main(base + ["--runs-dir", big, "--budget", "2000", "--extend-from", small, "--dry-run"]) == 0
    )
    line = capsys.readouterr().out.splitlines()[-1].split()
    assert (
        line[1] == "extend"
        and "--resume" in line
        and line[line.index("--resume") + 1]
        == os.path.join(dst_seed, os.path.basename(sweep.find_run_dir(src_seed)))
    )
    assert not os.path.exists(dst_seed)  # the dry run copies nothing
    assert sweep.main(base + ["--runs-dir", big, "--budget", "2000", "--extend-from", small]) == 0
    rd = sweep.find_run_dir(dst_seed)
    assert os.path.basename(rd) == os.path.basename(sweep.find_run_dir(src_seed))
    assert (
        seed_summary(dst_seed)["global_step"] == 2000 and seed_summary(src_seed)["global_step"] == 1000
    )  # source kept
    with open(os.path.join(rd, "config.json")) as f:
        assert json.load(f)["resumed_from_step"] == 1000
    assert _update_ids(dst_seed) == list(range(1, 11))
    eps = open(os.path.join(rd, "episodes.csv")).read().splitlines()
    assert eps[: len(src_eps)] == src_eps and len(eps) > len(src_eps)  # the small run is its prefix
    # a budget below the source's is not an extension
    lower = sweep.make_jobs(
        ["CartPole"], ["sgd"], [1], {"CartPole": 800}, str(tmp_path / "x"), num_steps=200, extend_from=small
    )[0]
    assert sweep.extension_source(lower) is None


def test_benchmark_imports_have_no_cycle():
    """Imports in benchmark/ go one way: walk every module with ast, counting imports inside functions
    too, and fail on any cycle. (A module importing itself by name, sweep.py's Ray hook, is not a cycle.)"""
    import ast
    import glob

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmark")
    mods = {os.path.basename(p)[:-3]: p for p in glob.glob(os.path.join(root, "*.py"))}
    graph = {}
    for name, path in mods.items():
        deps = set()
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.ImportFrom) and node.module == "benchmark":
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmark."):
                deps.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                deps |= {a.name.split(".")[1] for a in node.names if a.name.startswith("benchmark.")}
        graph[name] = (deps & set(mods)) - {name}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph[m]):
            assert state.get(d) != "open", "import cycle: " + " -> ".join(path + [d])
            if d not in state:
                visit(d, path + [d])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert (
        graph["compact"] <= {"trainer", "provenance"} and "sweep" not in graph["aggregate"]
    )  # leaves stay leaves
    assert (
        graph["provenance"] == set()
    )  # the standard library only: the runner, the trainer and the report read it


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--seeds", "3-1"], "--seeds"),
        (["--seeds", "a"], "--seeds"),
        (["--budget", "abc"], "--budget"),
        (["--budget", "mujoco=x"], "--budget"),
        (["--num-steps", "0"], "--num-steps"),
        (["--time-limit", "soon"], "--time-limit"),
        (["--time-limit", "1h", "--backend", "ray"], "--time-limit"),
    ],
)
def test_sweep_bad_flags_are_one_line_exit_2_even_with_dry_run(argv, needle, capsys):
    """`--seeds 3-1` (no runs), `--budget abc` and `--num-steps 0` are refused, even under --dry-run, naming the
    flag."""
    assert sweep.main([*argv, "--dry-run", "--tasks", "CartPole", "--algos", "smac"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and needle in err, err


def test_random_study_dry_run_measures_and_writes_nothing(monkeypatch, capsys):
    """`--study random --dry-run` ran the measurement and rewrote benchmark/results/random_scores.csv."""
    monkeypatch.setattr(
        random_policy, "random_scores", lambda *a, **k: pytest.fail("a dry run measured the random policy")
    )
    assert sweep.main(["--study", "random", "--dry-run", "--tasks", "CartPole,Hopper"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "CartPole" in line]
    assert "Hopper" in line and "50,000" in line  # the tasks it would measure, at their budget


def test_a_dry_run_piped_into_head_ends_without_a_traceback():
    """`sweep.py --dry-run | head -1` ended in a BrokenPipeError traceback."""
    p = subprocess.Popen(
        [sys.executable, *SWEEP, "--study", "ablations", "--dry-run"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().startswith("[sweep] ablations")
    p.stdout.close()  # the reader leaves, as head does
    err = p.stderr.read()
    assert p.wait(timeout=120) in (0, 1) and "Traceback" not in err and len(err.splitlines()) <= 1, err


COSTS = ["-m", "benchmark.costs"]
COST_COMMANDS = ["throughput", "update-cost", "ablation-costs", "device-check", "direction-cost"]


def test_costs_help_names_every_subcommand():
    """benchmark/costs.py (the five cost scripts merged): --help and each subcommand's --help exit 0."""
    argvs = [["--help"]] + [[c, "--help"] for c in COST_COMMANDS]
    procs = [
        subprocess.Popen(
            [PY, *COSTS, *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in argvs
    ]  # in parallel: each start imports torch
    outs = [(p.communicate(timeout=120), p.returncode) for p in procs]
    for argv, ((out, err), rc) in zip(argvs, outs):
        assert rc == 0, (argv, err)
        if argv == ["--help"]:
            assert all(c in out for c in COST_COMMANDS), out
        else:
            assert (
                out.startswith(f"usage: costs.py {argv[0]}") and f"python -m benchmark.costs {argv[0]}" in out
            ), out


def test_costs_bad_subcommand_is_exit_2_naming_it():
    out = subprocess.run([PY, *COSTS, "no-such-cost"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    last = out.stderr.strip().splitlines()[-1]
    assert "'no-such-cost'" in last, out.stderr


def test_no_raw_run_outputs_are_committed():
    """Checkpoints and TensorBoard files stay out of git (a run directory with its checkpoint.pt was committed once)."""
    try:
        files = subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    raw = [f for f in files.splitlines() if f.endswith((".pt", ".pt.tmp", ".lock")) or "tfevents" in f]
    assert not raw, raw


def test_progress_counts_only_the_steps_of_this_session(tmp_path, capsys):
    # three 1000-step jobs: one done before the session (a committed log), one half-way, one not started
    jobs = [sweep._job(str(tmp_path), "CartPole", "smac", seed, 1000) for seed in (1, 2, 3)]
    prog = sweep.Progress(jobs, interval=0.0)
    prog.skip(jobs[0].name)
    prog.reached[jobs[1].name] = 1000  # ran its 1000 steps in this session
    prog.t0 = time.time() - 10.0
    prog.show(2, [], 1, force=True)
    line = capsys.readouterr().out
    # 1000 steps in 10 s: 100 steps/s, 1000 steps left -> ETA 10 s (the skipped job adds neither)
    assert "| 100 steps/s |" in line and "ETA 0m10s" in line, line


def _fake_log(logs_dir, task, algo, seed, steps, wall_time_s):
    """A compact log of a finished run of `steps` steps in `wall_time_s`, with every episode and update column, empty
    (a header alone, or a log missing a column, is no log: the report's loader, which the runner uses too, refuses
    it)."""
    path = os.path.join(logs_dir, task, algo, f"seed{seed}.json.gz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = {"task": task, "algo": algo, "seed": seed, "status": "finished", "global_step": steps}
    episodes = {"global_step": [], "episodic_return": [], "episodic_length": []}
    record.update(
        budget=steps,
        wall_time_s=wall_time_s,
        episodes=episodes,
        updates={c: [] for c in compact.REQUIRED_UPDATE_COLS},
    )
    with gzip.open(path, "wt") as f:
        json.dump(record, f)


def test_time_limit_starts_only_the_runs_that_end_in_time(tmp_path, capsys):
    """--time-limit: a run whose measured speed says it would end after the limit is not started (a batch job's end
    would cut it off and lose it); the next run of the queue that fits starts instead."""
    runs, logs = str(tmp_path / "runs"), str(tmp_path / "logs")
    _fake_log(logs, "CartPole", "smac", 9, 2000, 2000.0)  # CartPole smac: 1 step/s in this study
    _fake_log(logs, "Acrobot", "sgd", 9, 2000, 10.0)  # Acrobot: 200 steps/s (another algorithm of the task)
    job = sweep.make_jobs(
        ["CartPole"], ["smac"], [1], {"CartPole": 2000}, runs, num_steps=200, logs_dir=logs
    )[0]
    assert sweep.measured_speed(job) == 1.0
    why = sweep.past_time_limit(job, time.time() + 60)
    assert "2,000" in why and "33m20s" in why and "1 steps/s" in why  # budget, time needed, measured speed
    assert sweep.past_time_limit(job, time.time() + 3000) is None
    # a task with no finished run yet goes by the slowest run of the study (CartPole's 1 step/s here)
    pendulum = sweep.make_jobs(["Pendulum"], ["smac"], [1], {"Pendulum": 2000}, runs, logs_dir=logs)[0]
    assert sweep.measured_speed(pendulum) == 1.0 and sweep.past_time_limit(pendulum, time.time() + 60)
    argv = ["--tasks", "CartPole,Acrobot", "--algos", "smac", "--seeds", "1", "--num-steps", "200"]
    argv += ["--budget", "2000", "--workers", "1", "--progress-interval", "100"]
    argv += ["--runs-dir", runs, "--logs-dir", logs, "--time-limit", "2m", "--allow-dirty"]
    assert sweep.main(argv) == 0
    out = capsys.readouterr().out
    (cartpole,) = [line for line in out.splitlines() if "CartPole/smac/seed1" in line]
    assert "2,000" in cartpole and "33m20s" in cartpole and "1 steps/s" in cartpole, out
    assert [line for line in out.splitlines() if "Acrobot/smac/seed1" in line and "finished" in line], out
    assert "not started (time limit): 1" in out, out  # the tally
    assert not os.path.exists(os.path.join(runs, "CartPole"))  # nothing of it was started
    assert os.path.isfile(os.path.join(logs, "Acrobot", "smac", "seed1.json.gz"))
    # the finished run's own log now gives Acrobot smac's speed (its measured steps over its wall time)
    acrobot = sweep.make_jobs(["Acrobot"], ["smac"], [1], {"Acrobot": 2000}, runs, logs_dir=logs)[0]
    head = sweep.compact.header(os.path.join(logs, "Acrobot", "smac", "seed1.json.gz"))
    assert sweep.measured_speed(acrobot) == pytest.approx(2000 / head["wall_time_s"])


def test_time_limit_parsing():
    assert [sweep.parse_duration(s) for s in ("2h40m", "90m", "45s", "3600")] == [9600, 5400, 45, 3600]
    for bad in ("abc", "0", "", "2x", "-5m"):
        with pytest.raises(ValueError, match="--time-limit"):
            sweep.parse_duration(bad)


def test_progress_counts_an_interrupted_run_by_the_steps_it_made(tmp_path, capsys, monkeypatch):
    """A run interrupted at step 400 of 1000 adds 400 steps to the rate, and its 600 steps stay to do; it counted
    as 1000 steps done (Ctrl-C after 3 minutes printed 49,573 steps/s and 'done 14/70')."""
    jobs = [sweep._job(str(tmp_path), "CartPole", "smac", seed, 1000) for seed in (1, 2)]
    steps = {jobs[0].seed_dir: 0, jobs[1].seed_dir: 0}
    monkeypatch.setattr(sweep, "last_global_step", steps.get)
    prog = sweep.Progress(jobs, interval=0.0)
    steps[jobs[0].seed_dir] = 400
    prog.stopped(jobs[0])  # interrupted at 400
    prog.t0 = time.time() - 10.0
    results = {jobs[0].name: {"outcome": "interrupted"}, jobs[1].name: {"outcome": "not started"}}
    prog.show(sweep.count_done(results), [], 1, force=True)
    line = capsys.readouterr().out
    # 400 steps in 10 s: 40 steps/s; 600 + 1000 steps left -> 40 s
    assert "done 0/2" in line and "| 40 steps/s |" in line and "ETA 0m40s" in line, line


def test_progress_counts_every_job_done_before_the_session_from_its_first_line(tmp_path, capsys, monkeypatch):
    """A job done before the sweep started but queued behind a running one counts as done from the first progress
    line (not as "left" until a worker reaches it: "done 62/70 | running 2 | left 6" with 65 logs committed)."""
    runs, logs = str(tmp_path / "runs"), str(tmp_path / "logs")
    _fake_log(logs, "CartPole", "smac", 2, 1000, 10.0)  # seed 2: done before the session
    jobs = sweep.make_jobs(["CartPole"], ["smac"], [1, 2], {"CartPole": 1000}, runs, logs_dir=logs)
    assert [sweep.inspect_job(j)[0] for j in jobs] == ["fresh", "done"]

    class Trainer:  # a trainer that runs through one poll, then exits
        polls = 0

        def poll(self):
            self.polls += 1
            return None if self.polls == 1 else 1

    def launch(job, cmd):
        return Trainer()

    monkeypatch.setattr(sweep, "launch", launch)
    sweep.run_local(jobs, workers=1, progress_interval=0.0)
    first = capsys.readouterr().out.splitlines()[0]
    assert "done 1/2 | running 1 | left 0" in first, first
