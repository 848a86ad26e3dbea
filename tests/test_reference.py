"""The reference file itself (issue 25): standalone, within its budgets, and its own run behaviour
(checkpoint at the end, exit codes, progress lines when nobody watches), independent of the lab."""

import ast
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
import tokenize
import types

import helpers
import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "smac_a2c.py")


def standalone(tmp_path, *argv, **kw):
    """Run smac_a2c.py copied ALONE into an empty directory, with nothing of this repository importable."""
    if not os.path.exists(tmp_path / "smac_a2c.py"):
        shutil.copy(REFERENCE, tmp_path / "smac_a2c.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def only_run(tmp_path):
    (run,) = [os.path.join(tmp_path, "runs", d) for d in os.listdir(tmp_path / "runs")]
    return run


# Issue 35 asked for <= 450 lines above the run-management banner and <= 800 in all, "steered by, never met by
# packing". Written plainly, with the features the reference keeps, it measures 573 and 1013 lines (the closing
# note of issue 35 lists what would have to move to the lab to meet the targets); these ceilings keep it from
# growing without a decision. Flags: the 25.
ALGORITHM_LINES, FILE_LINES, FLAGS = 580, 1020, 25


def test_budgets_and_plain_style():
    source = open(REFERENCE).read()
    lines = source.splitlines()
    banner = [i + 1 for i, line in enumerate(lines) if line.startswith("# ==== Run management")]
    assert len(banner) == 1 and banner[0] - 1 <= ALGORITHM_LINES and len(lines) <= FILE_LINES
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    assert not [n for n in nodes if isinstance(n, (ast.NamedExpr, ast.Lambda))]  # no walrus, no lambda
    run_for_effect = (ast.IfExp, ast.BoolOp, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    assert not [n.lineno for n in nodes if isinstance(n, ast.Expr) and isinstance(n.value, run_for_effect)]
    # a, b, c = x, y, z: a parallel assignment of more than two values
    assignments = [n for n in nodes if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple)]
    assert not [n.lineno for n in assignments if isinstance(n.value, ast.Tuple) and len(n.value.elts) > 2]
    assert not [n.lineno for n in nodes if isinstance(n, ast.Assign) and len(n.targets) > 1]  # a = b = x
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    assert not [t for t in tokens if t.type == tokenize.OP and t.string == ";"]  # one statement per line
    compound = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.ClassDef)
    assert not [n.lineno for n in nodes if isinstance(n, compound) and n.body[0].lineno == n.lineno]
    # nothing used before it is defined; train() alone calls into the run layer below the banner, by design
    defined = {n.name: n.lineno for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in tree.body:
        if isinstance(n, ast.Assign):
            defined.update({t.id: n.lineno for t in n.targets if isinstance(t, ast.Name)})
    for n in tree.body:
        if getattr(n, "name", None) == "train":
            continue
        early = {m.id for m in ast.walk(n) if isinstance(m, ast.Name) and defined.get(m.id, 0) > n.lineno}
        assert not early, (getattr(n, "name", n.lineno), early)
    # the paper's equations and Algorithm 1's lines, cited where they are implemented (the PDF's numbers)
    algorithm = "\n".join(lines[: banner[0]])
    for cite in (
        "eq. (4)",
        "eq. (5)",
        "eq. (14)",
        "eq. (15)",
        "Algorithm 1, line 2",
        "line 4:",
        "line 5:",
        "lines 6-9",
        "line 7:",
        "line 8:",
        "line 10:",
        "descent on -J",
    ):
        assert cite in algorithm, cite
    imports = [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = {a.name.split(".")[0] for n in imports for a in n.names}
    names |= {n.module.split(".")[0] for n in imports if isinstance(n, ast.ImportFrom) and n.module}
    assert not names & {"benchmark", "smac_numpy", "tests"}  # imports nothing from this repository
    import smac_a2c

    help_text = subprocess.run([sys.executable, REFERENCE, "--help"], capture_output=True, text=True).stdout
    flags = {
        line.strip("│ ").split()[0].rstrip(",")
        for line in help_text.splitlines()
        if line.strip("│ ").startswith("-")
    }  # the first word of each option's line: -h, --exp-name, ...
    assert len(flags) <= FLAGS and len(flags) == len(__import__("dataclasses").fields(smac_a2c.Args)) + 1


def copy_block(source: str) -> list:
    """The function names the copy block's banner lists: the comment directly above the first one's def."""
    lines = source.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("def sherman_morrison_direction("))
    comment = []
    for line in reversed(lines[:first]):
        if not line.startswith("#"):
            break
        comment.insert(0, line.lstrip("# "))
    text = " ".join(comment)
    listed = re.search(r"copy these (\w+) functions \(.*?\): (.*?)\. Then", text)
    assert listed, f"no copy block banner directly above sherman_morrison_direction: {text!r}"
    names = [name.strip() for name in listed.group(2).split(",")]
    number = {"three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}[listed.group(1)]
    assert len(names) == number and names[0] == "sherman_morrison_direction"
    return names


def test_the_copy_block_alone_runs_the_readme_snippet(monkeypatch):
    """Issue 35: the banner said "copy these four functions", but smac_direction calls one above it. Copy exactly
    the functions the banner names (with torch, math and torch.nn imported) into an empty module, and run README's
    snippet against it; its direction is the explicit solve."""
    source = open(REFERENCE).read()
    tree = ast.parse(source)
    lines = source.splitlines()
    copied = ["import math", "import torch", "import torch.nn as nn"]
    for name in copy_block(source):
        (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        copied.append("\n".join(lines[first - 1 : node.end_lineno]))
    module = types.ModuleType("smac_a2c")
    exec(compile("\n\n".join(copied), "copy_block", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "smac_a2c", module)
    readme = open(os.path.join(ROOT, "README.md")).read()
    snippet = re.search(r"<!-- smac-snippet -->\s*```python\n(.*?)```", readme, re.S).group(1)
    torch.manual_seed(0)
    namespace = {}
    exec(
        compile(snippet.replace("lr=1e-2", "lr=0.0"), "README.md", "exec"), namespace
    )  # keep the policy as is
    policy, obs, actions, adv = (namespace[k] for k in ("policy", "obs", "actions", "advantages"))
    params = list(policy.parameters())
    rows = []
    for i in range(len(obs)):
        logp = (
            torch.distributions.Categorical(logits=policy(obs[i : i + 1])).log_prob(actions[i : i + 1]).sum()
        )
        rows.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(logp, params)]))
    scores = torch.stack(rows).double()
    ell, g = scores.mean(0), (scores * adv.double()[:, None]).mean(0)
    explicit = torch.linalg.solve(torch.eye(ell.numel(), dtype=torch.float64) + torch.outer(ell, ell), g)
    torch.testing.assert_close(namespace["direction"].double(), explicit, rtol=1e-4, atol=1e-6)


def test_copied_alone_it_trains_and_leaves_a_checkpoint(tmp_path):
    proc = standalone(
        tmp_path,
        "smac_a2c.py",
        "--env-id",
        "CartPole-v1",
        "--total-timesteps",
        "3000",
        "--num-steps",
        "500",
        "--learning-rate",
        "5e-3",
        "--damping",
        "0.1",
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    run = only_run(tmp_path)
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "finished" and summary["global_step"] == 3000 and summary["updates"] == 6
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)  # by default, loads no code
    assert ckpt["global_step"] == 3000 and ckpt["args"]["env_id"] == "CartPole-v1"
    rows = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert len(rows) == 7 and rows[0].startswith("update,global_step,value_loss")
    # not a terminal: plain progress lines (every 10 updates or 30 s; this run: the clock), no tqdm bar
    assert (
        "\r" not in out
        and "it/s" not in out + err
        and out.strip().splitlines()[-1].startswith("finished: 3000")
    )
    # the drop-in functions import from the copy alone
    proc = standalone(tmp_path, "-c", "from smac_a2c import smac_direction, apply_step_; print('ok')")
    assert proc.communicate(timeout=120)[0].strip() == "ok" and proc.returncode == 0


def test_progress_line_every_10_updates_when_not_a_terminal(tmp_path):
    proc = standalone(
        tmp_path,
        "smac_a2c.py",
        "--env-id",
        "CartPole-v1",
        "--total-timesteps",
        "3000",
        "--num-steps",
        "100",
        "--no-tensorboard",
    )
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    lines = [line for line in out.splitlines() if line.startswith("step ")]
    assert [line.split(" | ")[1] for line in lines] == ["update 10", "update 20", "update 30"]
    assert all("SPS" in line and "mean return of the last 10 episodes" in line for line in lines)


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_signal_checkpoints_and_exits(tmp_path, sig, code):
    proc = standalone(
        tmp_path,
        "smac_a2c.py",
        "--env-id",
        "CartPole-v1",
        "--total-timesteps",
        "100000000",
        "--num-steps",
        "200",
        "--no-tensorboard",
    )
    deadline = time.time() + 120
    while time.time() < deadline:  # wait until a few updates are logged
        runs = os.listdir(tmp_path / "runs") if os.path.isdir(tmp_path / "runs") else []
        path = os.path.join(tmp_path, "runs", runs[0], "updates.csv") if runs else None
        if path and os.path.exists(path) and len(open(path).read().splitlines()) > 3:
            break
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code and "Traceback" not in err, err
    run = only_run(tmp_path)
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "interrupted" and summary["signal"] == signal.Signals(sig).name
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)
    updates = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert (
        ckpt["update"] == summary["updates"] == len(updates) - 1
        and ckpt["global_step"] == summary["global_step"]
    )


def test_divergence_exits_3_with_the_last_good_state(tmp_path):
    proc = standalone(
        tmp_path,
        "smac_a2c.py",
        "--env-id",
        "Pendulum-v1",
        "--num-steps",
        "100",
        "--total-timesteps",
        "2000",
        "--optimizer",
        "sgd",
        "--learning-rate",
        "1e30",
        "--no-tensorboard",
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 3 and "diverged at update" in err and "Traceback" not in err
    run = only_run(tmp_path)
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "diverged"
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)
    assert all(torch.isfinite(v).all() for v in ckpt["actor"].values())
    assert ckpt["update"] == len(open(os.path.join(run, "updates.csv")).read().splitlines()) - 1


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--damping", "0"], "--damping"),
        (["--env-id", "NoSuchEnv-v0"], "--env-id"),
        (["--hidden-sizes", "0"], "--hidden-sizes"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, needle):
    proc = standalone(tmp_path, "smac_a2c.py", *argv)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1 and needle in err
    assert not os.path.exists(tmp_path / "runs")


def test_reference_and_lab_runs_are_identical(tmp_path):
    """The lab (python -m benchmark.trainer) runs the reference's loop: at the lab's defaults the same flags give
    the same episodes and updates, bitwise on the CPU. (AC-SGD here: the lab's SMAC step is its one-backward
    fast path, equal to smac_direction to float32 rounding, test_smac_direction.py, so SMAC runs drift apart.)"""
    argv = [
        "--env-id",
        "Pendulum-v1",
        "--num-steps",
        "200",
        "--total-timesteps",
        "2000",
        "--seed",
        "3",
        "--optimizer",
        "sgd",
        "--learning-rate",
        "5e-2",
        "--norm-obs",
        "--norm-reward",
        "--no-tensorboard",
    ]
    os.makedirs(tmp_path / "ref")
    assert standalone(tmp_path / "ref", "smac_a2c.py", *argv).wait(timeout=300) == 0
    lab = subprocess.run(
        [sys.executable, "-m", "benchmark.trainer", *argv, "--runs-dir", str(tmp_path / "lab")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert lab.returncode == 0, lab.stderr
    a, b = only_run(tmp_path / "ref"), os.path.join(tmp_path / "lab", os.listdir(tmp_path / "lab")[0])
    assert open(os.path.join(a, "episodes.csv")).read() == open(os.path.join(b, "episodes.csv")).read()

    def cols(run):
        with open(os.path.join(run, "updates.csv")) as f:
            return [line.split(",")[:11] for line in f]

    assert cols(a) == cols(b) and len(cols(a)) == 11


def _train_with_a_signal_in_the_update(tmp_path, total, diverge):
    """smac_a2c.train in this process, with an actor step that sends this process SIGTERM during the 2nd update
    (and, with diverge, also makes the actor NaN there)."""
    import smac_a2c

    calls = []

    def step(actor, batch, args, state):
        calls.append(1)
        diag = smac_a2c.sgd_step(actor, batch, args, state)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            if diverge:
                with torch.no_grad():
                    actor.linears[0].weight.fill_(float("nan"))
        return diag

    args = smac_a2c.Args(env_id="CartPole-v1", num_steps=100, total_timesteps=total, tensorboard=False)
    run_dir, outcome = smac_a2c.train(args, {"smac": step}, run_dir=str(tmp_path))
    return run_dir, outcome, json.load(open(os.path.join(run_dir, "summary.json")))


def test_a_signal_during_the_last_update_leaves_a_finished_run(tmp_path):
    """Issue 26 #1: `interrupted` implies global_step < budget. A SIGTERM during the last update of the budget
    used to leave status interrupted at the full budget (and exit 143)."""
    _, outcome, summary = _train_with_a_signal_in_the_update(tmp_path, 200, diverge=False)
    assert outcome == "finished" and summary["status"] == "finished" and summary["global_step"] == 200
    assert summary["signal"] is None


def test_divergence_wins_over_a_signal_in_the_same_update(tmp_path):
    """Issue 26 #7: the update that diverges while a SIGTERM arrives ends as diverged (exit 3), not interrupted."""
    run_dir, outcome, summary = _train_with_a_signal_in_the_update(tmp_path, 1000, diverge=True)
    assert outcome == "diverged" and summary["status"] == "diverged" and summary["updates"] == 1
    ckpt = torch.load(os.path.join(run_dir, "checkpoint.pt"), weights_only=True)
    assert all(torch.isfinite(v).all() for v in ckpt["actor"].values())


OffsetActions = helpers.OffsetActions


def test_discrete_actions_with_an_offset_reach_the_environment_shifted(tmp_path):
    """Issue 26 #6: a Discrete(n, start=k) space got actions 0..n-1 (outside the space); the policy's index is
    now shifted by k on the way to the environment (and stays an index for the log-probabilities)."""
    import gymnasium as gym

    import smac_a2c

    gym.register("OffsetActions-v0", entry_point=OffsetActions)
    args = smac_a2c.Args(env_id="OffsetActions-v0", num_steps=50, total_timesteps=200, tensorboard=False)
    _, outcome = smac_a2c.train(args, run_dir=str(tmp_path))
    assert outcome == "finished"
    rows = open(os.path.join(tmp_path, "episodes.csv")).read().splitlines()
    assert len(rows) == 1 + 20  # 200 steps of 10-step episodes, every action accepted by the space


def test_a_namespaced_environment_id_trains_in_one_run_directory(tmp_path, monkeypatch):
    """Issue 26 #5: `ns/Env-v0` (and so ALE/...) used to nest the run directory (runs/ns/Env-v0__...) and fail
    with an error blaming --runs-dir. Both trainers now name the directory ns-Env-v0__..."""
    import gymnasium as gym

    import smac_a2c
    from benchmark import trainer

    gym.register("testns/Offset-v0", entry_point=OffsetActions)
    monkeypatch.chdir(tmp_path)
    assert (
        smac_a2c.main(
            [
                "--env-id",
                "testns/Offset-v0",
                "--num-steps",
                "50",
                "--total-timesteps",
                "100",
                "--no-tensorboard",
            ]
        )
        == 0
    )
    (run,) = os.listdir(tmp_path / "runs")
    assert run.startswith("testns-Offset-v0__") and os.path.isfile(tmp_path / "runs" / run / "checkpoint.pt")
    assert (
        trainer.main(
            [
                "--env-id",
                "testns/Offset-v0",
                "--num-steps",
                "50",
                "--total-timesteps",
                "100",
                "--no-tensorboard",
                "--runs-dir",
                str(tmp_path / "lab"),
            ]
        )
        == 0
    )
    (run,) = os.listdir(tmp_path / "lab")
    assert run.startswith("testns-Offset-v0__")


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--no-such-flag"], "--no-such-flag"),
        (["--learning-rate", "abc"], "--learning-rate"),
        (["--optimizer", "foo"], "--optimizer"),
    ],
)
def test_argument_errors_are_tyros_message_and_exit_2(tmp_path, argv, needle):
    """An unknown flag or a value tyro cannot parse: tyro's own message naming the flag, exit 2, no traceback,
    no run directory. (Issue 35 moved the reduction of tyro's box to one line into the lab, whose test is
    tests/test_conveniences.py::test_lab_argument_errors_are_one_line_exit_2.)"""
    proc = standalone(tmp_path, "smac_a2c.py", *argv)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and needle in err and "Traceback" not in err, err
    assert not os.path.exists(tmp_path / "runs")


RaisesAfter = helpers.RaisesAt250


__import__("gymnasium").register(
    "RaisesAfter-v0", entry_point=RaisesAfter
)  # `--env-id test_reference:RaisesAfter-v0`


@pytest.mark.parametrize("failure", ["environment", "full disk"])
def test_a_crash_keeps_the_runs_tail(tmp_path, failure):
    """Issue 26 #3 (the reference's half): an exception after the run directory existed (an environment raising
    mid-episode; a full disk, here a file-size limit that cuts the first checkpoint save short) left a traceback
    on stderr, no status in summary.json and a checkpoint.pt.tmp. Now, as the lab: summary.json status crashed
    with the error's line, RUN/traceback.txt, the last good checkpoint kept, no .tmp, one stderr line, exit 1."""
    shutil.copy(REFERENCE, tmp_path / "smac_a2c.py")
    here = os.path.dirname(
        os.path.abspath(__file__)
    )  # this module (the env's home) and tests/helpers.py's imports
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.path.dirname(here)])}
    env_id = "test_reference:RaisesAfter-v0" if failure == "environment" else "CartPole-v1"
    limit = (
        (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000)))
        if failure == "full disk"
        else None
    )
    proc = subprocess.run(
        [
            sys.executable,
            "smac_a2c.py",
            "--env-id",
            env_id,
            "--num-steps",
            "100",
            "--total-timesteps",
            "1000",
            "--checkpoint-every",
            "1",
            "--no-tensorboard",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    err = proc.stderr.strip().splitlines()
    run = only_run(tmp_path)
    rel = os.path.relpath(run, tmp_path)  # as the run printed it: runs/...
    assert proc.returncode == 1 and len(err) == 1 and os.path.join(rel, "traceback.txt") in err[0], (
        proc.stderr
    )
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "crashed" and summary["run_dir"] == rel and summary["error"] in err[0]
    assert "Traceback" in open(os.path.join(run, "traceback.txt")).read()
    assert not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))
    if failure == "environment":  # the checkpoint of update 2, the last before the crash
        assert summary["error"] == "RuntimeError: the simulator fell over"
        assert torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)["update"] == 2
    else:  # the first save failed: there is no good checkpoint, and no half-written one
        assert not os.path.exists(os.path.join(run, "checkpoint.pt"))


def test_a_crash_in_process_returns_1_and_restores_the_signal_handlers(tmp_path, monkeypatch, capsys):
    """Issue 26 #3: smac_a2c.main() called in a process that goes on (a notebook, a test) left the run's signal
    handlers installed after a crash, so Ctrl-C no longer interrupted that process."""
    import smac_a2c

    monkeypatch.chdir(tmp_path)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    assert (
        smac_a2c.main(
            [
                "--env-id",
                "RaisesAfter-v0",
                "--num-steps",
                "100",
                "--total-timesteps",
                "1000",
                "--no-tensorboard",
            ]
        )
        == 1
    )
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert capsys.readouterr().err.startswith("crashed: RuntimeError: the simulator fell over (traceback in ")
