"""Runs that survive a shared cluster (issue 14): each defect found, as a test that fails on the old code."""

import json
import os
import signal
import time

import helpers
import pytest
import torch
from helpers import CARTPOLE, lab_process, only_run, rows, run_main, wait_for_updates

from benchmark import runlayer, sweep, trainer


def save_edited(ckpt, path):
    """Save an edited checkpoint as a tool that edits checkpoints would: its sha256 updated (runlayer.with_hash),
    so that the checkpoint is refused, or not, for its contents, not as a damaged file."""
    torch.save(runlayer.with_hash(ckpt), path)


# 2. SIGTERM and Ctrl-C ---------------------------------------------------------------------------------
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_is_a_clean_interruption(tmp_path, sig, code):
    proc = lab_process(tmp_path, "--runs-dir", str(tmp_path), *CARTPOLE, "--total-timesteps", "100000000")
    run = wait_for_updates(tmp_path, 2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    summary = helpers.summary(run)
    assert summary["status"] == "interrupted" and summary["signal"] == sig.name
    ckpt = trainer.load_checkpoint(run)
    assert ckpt["update"] == summary["updates"] and b"Traceback" not in err


# 3. --resume continues the run as it was started ---------------------------------------------------------
def test_bare_resume_keeps_budget_and_checkpointing_and_refuses_other_changes(tmp_path, capsys):
    assert (
        run_main(
            tmp_path,
            *CARTPOLE,
            "--total-timesteps",
            "300",
            "--checkpoint-every",
            "1",
            "--learning-rate",
            "0.02",
        )
        == 0
    )
    run = only_run(tmp_path)
    # interrupted at 300 of a 600-step budget: pretend the run was started with 600
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)
    ckpt["args"]["total_timesteps"] = 600
    save_edited(ckpt, os.path.join(run, "checkpoint.pt"))
    assert trainer.main(["--resume", run]) == 0  # bare: budget 600 and checkpoint-every 1 kept
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["global_step"] == 600 and trainer.load_checkpoint(run)["update"] == 6
    assert json.load(open(os.path.join(run, "config.json")))["args"]["checkpoint_every"] == 1
    capsys.readouterr()
    assert (
        trainer.main(
            ["--resume", run, "--total-timesteps", "800", "--learning-rate", "0.5", "--env-id", "Acrobot-v1"]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--learning-rate" in err and "--env-id" in err
    assert trainer.main(["--resume", run, "--total-timesteps", "800", "--learning-rate", "0.02"]) == 0
    assert json.load(open(os.path.join(run, "summary.json")))["global_step"] == 800


# 4. logs after a hard kill ----------------------------------------------------------------------------
def test_resume_after_sigkill_leaves_strictly_increasing_logs(tmp_path):
    proc = lab_process(
        tmp_path,
        "--runs-dir",
        str(tmp_path),
        *CARTPOLE,
        "--total-timesteps",
        "100000000",
        "--checkpoint-every",
        "3",
        "--num-steps",
        "1000",
    )  # ~0.1-0.3 s per update
    run = wait_for_updates(tmp_path, 4)
    while len(rows(os.path.join(run, "updates.csv"))) % 3 != 2:  # kill between two periodic checkpoints
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    logged = len(rows(os.path.join(run, "updates.csv")))
    saved = trainer.load_checkpoint(run)["update"]
    assert logged > saved  # the logs ran ahead of the last periodic checkpoint
    budget = (logged + 3) * 1000
    assert trainer.main(["--resume", run, "--total-timesteps", str(budget)]) == 0
    up = rows(os.path.join(run, "updates.csv"))
    assert [int(r["update"]) for r in up] == list(range(1, budget // 1000 + 1))
    steps = [int(r["global_step"]) for r in up]
    assert all(b > a for a, b in zip(steps, steps[1:]))
    ep = [int(r["global_step"]) for r in rows(os.path.join(run, "episodes.csv"))]
    assert all(b > a for a, b in zip(ep, ep[1:]))


# 5. concurrent writers -----------------------------------------------------------------------------------
def test_second_trainer_on_a_live_run_directory_is_refused(tmp_path, capsys):
    assert run_main(tmp_path, *CARTPOLE, "--total-timesteps", "200") == 0
    run = only_run(tmp_path)
    before = open(os.path.join(run, "updates.csv")).read()
    capsys.readouterr()
    with trainer.RunLock(run):  # a live owner
        assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 2
        err = capsys.readouterr().err
        assert "in use" in err and str(os.getpid()) in err and len(err.strip().splitlines()) == 1
        assert sweep.find_run_dir(str(tmp_path)) == run and trainer.run_dir_locked(run)
    assert open(os.path.join(run, "updates.csv")).read() == before
    assert not trainer.run_dir_locked(run)  # released with its owner
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0


# 6. untrusted checkpoints ------------------------------------------------------------------------------
class Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("flag", ["--eval-checkpoint", "--resume"])
def test_crafted_checkpoint_runs_no_code(tmp_path, capsys, flag):
    marker = tmp_path / "pwned"
    bad = tmp_path / "checkpoint.pt"
    torch.save({"args": Payload(str(marker)), "actor": {}, "critic": {}, "normalizer": {}}, bad)
    assert trainer.main([flag, str(bad), "--runs-dir", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert not marker.exists() and len(err.splitlines()) == 1 and "not loaded" in err
    assert not (tmp_path / "runs").exists()


# 7. divergence rolls the normalization statistics back too; non-finite flags are bad input ----------------
def test_divergence_rolls_back_reward_normalization(tmp_path, monkeypatch):
    real, calls = trainer.critic_step, {"n": 0}

    def critic_step(*a, **k):
        calls["n"] += 1
        return float("nan") if calls["n"] == 3 else real(*a, **k)

    monkeypatch.setattr(trainer, "critic_step", critic_step)
    assert (
        run_main(
            tmp_path,
            *CARTPOLE,
            "--total-timesteps",
            "1000",
            "--norm-reward",
            "--norm-obs",
            "--checkpoint-every",
            "1",
        )
        == 3
    )
    ckpt = trainer.load_checkpoint(only_run(tmp_path))
    assert ckpt["update"] == 2
    assert ckpt["normalizer"]["ret_rms"]["count"] == pytest.approx(1e-4 + 200)  # 2 rollouts, not 3
    assert ckpt["normalizer"]["obs_rms"]["count"] == pytest.approx(1e-4 + 200)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--log-std-init", "nan"], "--log-std-init"),
        (["--ent-coef", "inf"], "--ent-coef"),
        (["--max-grad-norm", "inf"], "--max-grad-norm"),
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**32)], "--seed"),
        (["--exp-name", "x" * 300], "too long"),
        (["--exp-name", "a/b"], "--exp-name"),
        (["--exp-name", ".."], "--exp-name"),
    ],
)
def test_bad_flags_one_line_exit_2_and_no_run_directory(tmp_path, capsys, argv, needle):
    assert run_main(tmp_path / "runs", *CARTPOLE, *argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err
    assert not (tmp_path / "runs").exists() or not os.listdir(tmp_path / "runs")


def test_runs_dir_that_is_a_file_is_bad_input(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert run_main(f, *CARTPOLE, "--total-timesteps", "100") == 2
    assert "--runs-dir" in capsys.readouterr().err


# 8. finished runs --------------------------------------------------------------------------------------
def test_final_checkpoint_is_the_final_state_and_a_finished_resume_changes_nothing(tmp_path):
    assert run_main(tmp_path, *CARTPOLE, "--total-timesteps", "500", "--checkpoint-every", "2") == 0
    run = only_run(tmp_path)
    assert trainer.load_checkpoint(run)["update"] == 5  # not 4, the last periodic one
    summary = open(os.path.join(run, "summary.json")).read()
    open(os.path.join(run, "checkpoint.pt.tmp"), "w").write("half-written")
    assert trainer.main(["--resume", run]) == 0
    assert open(os.path.join(run, "summary.json")).read() == summary
    assert trainer.main(["--resume", run, "--total-timesteps", "600"]) == 0
    assert not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))


# 9. the sweep --------------------------------------------------------------------------------------------
def test_sweep_recovers_from_a_stale_extra_directory_and_spares_a_live_one(tmp_path, capsys):
    seed_dir = tmp_path / "CartPole" / "sgd" / "seed1"
    assert run_main(seed_dir, *CARTPOLE, "--total-timesteps", "200") == 0
    good = only_run(seed_dir)
    stale = seed_dir / "CartPole-v1__sgd__1__1"
    stale.mkdir()
    assert sweep.find_run_dir(str(seed_dir)) == good and not stale.exists()
    assert "stale" in capsys.readouterr().out
    live = seed_dir / "CartPole-v1__sgd__1__2"
    live.mkdir()
    with trainer.RunLock(str(live)):
        with pytest.raises(RuntimeError, match="run directories"):
            sweep.find_run_dir(str(seed_dir))
    assert live.exists()


# 10. files: missing keys, another env's networks, valid JSON summary ---------------------------------------
def test_incomplete_or_mismatched_checkpoints_are_bad_input(tmp_path, capsys):
    assert run_main(tmp_path / "runs", *CARTPOLE, "--total-timesteps", "100") == 0
    run = only_run(tmp_path / "runs")
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)
    partial = tmp_path / "partial.pt"
    torch.save({"args": ckpt["args"], "actor": ckpt["actor"]}, partial)
    other = tmp_path / "other_env.pt"
    ckpt["args"]["env_id"] = "Acrobot-v1"  # CartPole networks declared as Acrobot's: size mismatch
    save_edited(ckpt, other)
    capsys.readouterr()
    for path, needle in ((partial, "missing"), (other, "does not fit")):
        for flag in ("--eval-checkpoint", "--resume"):
            assert trainer.main([flag, str(path), "--total-timesteps", "300"]) == 2
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and needle in err, err


def test_divergence_stops_with_status_and_keeps_last_good_checkpoint(tmp_path):
    argv = [
        "--env-id",
        "Pendulum-v1",
        "--total-timesteps",
        "2000",
        "--optimizer",
        "sgd",
        "--learning-rate",
        "1e30",
    ]
    assert run_main(tmp_path, *CARTPOLE, *argv) == 3
    run = only_run(tmp_path)
    text = open(os.path.join(run, "summary.json")).read()
    assert (
        json.loads(text, parse_constant=lambda c: pytest.fail(f"summary.json holds {c}"))["status"]
        == "diverged"
    )
    ckpt = trainer.load_checkpoint(run)
    assert all(torch.isfinite(v).all() for v in ckpt["actor"].values())
    assert os.path.exists(os.path.join(run, "episodes.csv"))


def test_trainer_of_a_dead_sweep_does_not_start(tmp_path):
    """A sweep killed while its trainers start: the child finds its parent gone and exits before training."""
    import functools

    proc = lab_process(
        tmp_path,
        "--runs-dir",
        str(tmp_path),
        *CARTPOLE,
        "--total-timesteps",
        "1000",
        preexec_fn=functools.partial(sweep._child_preexec, os.getpid() + 10**6),
    )  # not our pid
    proc.communicate(timeout=60)
    assert proc.returncode == 1 and not os.listdir(tmp_path)


def test_sweep_skips_a_job_whose_run_directory_is_live(tmp_path):
    job = sweep.make_jobs(["CartPole"], ["sgd"], [1], {"CartPole": 400}, str(tmp_path), num_steps=100)[0]
    assert run_main(job.seed_dir, *CARTPOLE, "--total-timesteps", "200") == 0  # resumable
    run = only_run(job.seed_dir)
    with trainer.RunLock(run):
        assert sweep.prepare(job) == ("busy", None)
    assert sweep.prepare(job)[0] == "resume"


def test_a_pre_split_checkpoint_resumes(tmp_path):
    """Checkpoints written before the trainer split name the critic's parameters net.0.weight, ... (a Critic module
    around an nn.Sequential); the lab loads them into today's critic (0.weight, ...) and resumes."""
    import torch

    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = only_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    ckpt = torch.load(path, weights_only=True)
    ckpt["critic"] = {f"net.{k}": v for k, v in ckpt["critic"].items()}
    ckpt.pop("sha256", None)  # written before checkpoints carried one
    torch.save(ckpt, path)
    assert trainer.load_checkpoint(run)["critic"].keys() == {k[4:] for k in ckpt["critic"]}
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert json.load(open(os.path.join(run, "summary.json")))["global_step"] == 400


def test_a_checkpoint_naming_the_old_horizon_module_resumes(tmp_path):
    """The 1000-step ids moved from benchmark/envs.py to benchmark/hparams.py (issue 29): a checkpoint whose env_id
    is benchmark.envs:CartPole_T1000-v1 resumes on benchmark.hparams:CartPole_T1000-v1."""
    import torch

    assert (
        trainer.main(
            [
                "--env-id",
                "benchmark.hparams:CartPole_T1000-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = only_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    ckpt = torch.load(path, weights_only=True)
    ckpt["args"]["env_id"] = "benchmark.envs:CartPole_T1000-v1"
    save_edited(ckpt, path)
    assert trainer.load_checkpoint(run)["args"]["env_id"] == "benchmark.hparams:CartPole_T1000-v1"
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert json.load(open(os.path.join(run, "summary.json")))["global_step"] == 400


def test_resume_after_the_logs_were_deleted_or_emptied_writes_their_headers(tmp_path):
    """Issue 26 #4 (part): a resumed run whose episodes.csv was deleted and whose updates.csv was emptied writes
    each file's header before its first row (they were header-less before)."""
    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = only_run(tmp_path)
    os.remove(os.path.join(run, "episodes.csv"))
    open(os.path.join(run, "updates.csv"), "w").close()
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert open(os.path.join(run, "episodes.csv")).readline().startswith("global_step,episodic_return")
    lines = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert lines[0].startswith("update,global_step,value_loss") and len(lines) == 3  # header + 2 new updates


@pytest.mark.parametrize("damage", ["interrupted", "missing"])
def test_resuming_a_run_at_its_budget_repairs_its_summary(tmp_path, damage):
    """Issue 26 #1: a run whose checkpoint reached the budget but whose summary says `interrupted` (or is gone)
    was resumed by every sweep launch, 'nothing to do', exit 0, and never packed. The resume now rewrites the
    summary as finished at the checkpoint's step."""
    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = only_run(tmp_path)
    path = os.path.join(run, "summary.json")
    if damage == "missing":
        os.remove(path)
    else:
        summary = json.load(open(path))
        json.dump({**summary, "status": "interrupted", "signal": "SIGTERM"}, open(path, "w"))
    assert trainer.main(["--resume", run]) == 0
    summary = json.load(open(path))
    assert summary["status"] == "finished" and summary["global_step"] == 200 and summary["signal"] is None
    assert damage in summary["repaired"] or "interrupted" in summary["repaired"]


def test_a_checkpoint_outside_its_run_resumes_into_a_new_run_and_a_garbled_header_is_refused(
    tmp_path, capsys
):
    """Issue 26 #4: `--resume best/my.pt` turned best/ into a run with header-less CSVs; a garbled header crashed
    the log truncation with a traceback."""
    import shutil

    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = os.path.join(tmp_path / "runs", os.listdir(tmp_path / "runs")[0])
    os.makedirs(tmp_path / "best")
    shutil.copy(os.path.join(run, "checkpoint.pt"), tmp_path / "best" / "my.pt")
    assert trainer.main(["--resume", str(tmp_path / "best" / "my.pt"), "--total-timesteps", "300"]) == 0
    assert os.listdir(tmp_path / "best") == ["my.pt"]  # best/ did not become a run
    new = [d for d in os.listdir(tmp_path / "runs") if os.path.join(tmp_path / "runs", d) != run]
    assert len(new) == 1
    lines = open(os.path.join(tmp_path / "runs", new[0], "updates.csv")).read().splitlines()
    assert lines[0].startswith("update,global_step") and len(lines) == 2  # its header, then update 3
    capsys.readouterr()
    open(os.path.join(run, "updates.csv"), "w").write("garbage,here\n1,2\n")
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "garbled header" in err


@pytest.mark.parametrize("damage", ["rng_torch", "rng_numpy", "global_step_str", "normalizer_shape"])
def test_checkpoints_with_bad_contents_are_one_line_exit_2(tmp_path, capsys, damage):
    """Issue 26 #9 (part): checkpoints that load but hold bad contents crashed with exit 1 and a traceback."""
    import torch

    assert (
        trainer.main(
            [
                "--env-id",
                "CartPole-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = only_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    ckpt = torch.load(path, weights_only=True)
    if damage == "rng_torch":
        ckpt["rng"]["torch"] = torch.zeros(3, dtype=torch.uint8)
    elif damage == "rng_numpy":
        ckpt["rng"]["numpy"] = {"bit_generator": "PCG64", "state": "nonsense"}
    elif damage == "global_step_str":
        ckpt["global_step"] = "200"
    else:
        ckpt["normalizer"]["obs_rms"]["mean"] = [0.0] * 7
    save_edited(ckpt, path)  # bad contents, not a damaged file
    capsys.readouterr()
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not fit" in err, err


RaisesMidRun = helpers.RaisesAt250


def test_an_exception_mid_run_leaves_a_crashed_summary_and_a_traceback(tmp_path, capsys):
    """Issue 26 #3 (the lab's half): an unexpected exception after the run directory existed lost the run's tail
    (no status, a traceback on stderr, handlers left installed). Now: summary.json status crashed with the
    error's line, RUN/traceback.txt, the last good checkpoint kept, no .tmp, one stderr line, exit 1."""
    import signal as sig

    import gymnasium as gym

    gym.register("RaisesMidRun-v0", entry_point=RaisesMidRun)
    before = sig.getsignal(sig.SIGINT)
    code = trainer.main(
        [
            "--env-id",
            "RaisesMidRun-v0",
            "--num-steps",
            "100",
            "--total-timesteps",
            "1000",
            "--checkpoint-every",
            "1",
            "--runs-dir",
            str(tmp_path),
            "--no-tensorboard",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "the simulator fell over" in err[0] and "traceback" in err[0]
    run = only_run(tmp_path)
    summary = json.load(open(os.path.join(run, "summary.json")))
    assert summary["status"] == "crashed" and "RuntimeError" in summary["error"]
    assert "the simulator fell over" in open(os.path.join(run, "traceback.txt")).read()
    assert trainer.load_checkpoint(run)["update"] == 2 and not os.path.exists(
        os.path.join(run, "checkpoint.pt.tmp")
    )
    assert sig.getsignal(sig.SIGINT) is before  # Ctrl-C works again in this process


def test_a_run_that_dies_before_logging_anything_leaves_no_directory(tmp_path, capsys, monkeypatch):
    """Issue 26 #3: `--hidden-sizes 100000 100000` (an allocation failure) left a run directory holding only .lock."""

    def too_big(*a, **k):
        raise MemoryError("cannot allocate 40 GB")

    monkeypatch.setattr(trainer, "lab_networks", too_big)
    assert trainer.main(["--env-id", "CartPole-v1", "--runs-dir", str(tmp_path), "--no-tensorboard"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "MemoryError" in err[0] and "removed" in err[0]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
def test_a_flipped_byte_in_a_checkpoint_is_refused_as_corrupt(tmp_path, capsys, flag):
    """Issue 26 #9: a checkpoint damaged inside a tensor's data loaded silently (torch.load checks no CRC) and was
    trained on or evaluated. Checkpoints now carry the sha256 of their contents (runlayer.with_hash), checked on
    loading: one line naming the checkpoint, exit 2, nothing written."""
    assert run_main(tmp_path / "runs", *CARTPOLE, "--total-timesteps", "200") == 0
    run = only_run(tmp_path / "runs")
    path = os.path.join(run, "checkpoint.pt")
    weights = (
        torch.load(path, weights_only=True)["actor"]["linears.1.weight"].numpy().tobytes()
    )  # 64 x 64 floats
    raw = bytearray(open(path, "rb").read())
    at = raw.find(weights)  # the tensor's storage, stored as it is in the zip
    assert at > 0 and raw.find(weights, at + 1) < 0
    raw[at + 4 * 1000] ^= 0x01  # the lowest mantissa bit of one weight
    open(path, "wb").write(raw)
    before = {name: open(os.path.join(run, name)).read() for name in ("updates.csv", "summary.json")}
    capsys.readouterr()
    assert trainer.main([flag, run, "--total-timesteps", "400"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is corrupt" in err and path in err, err
    assert {name: open(os.path.join(run, name)).read() for name in before} == before


@pytest.mark.parametrize(
    "damage,flag",
    [
        ("normalizer_var", "--resume"),
        ("normalizer_count", "--resume"),
        ("critic_opt_shape", "--resume"),
        ("normalizer_mean", "--eval-checkpoint"),
    ],
)
def test_checkpoint_contents_that_broke_the_run_later_are_one_line_exit_2(tmp_path, capsys, damage, flag):
    """Issue 26 #9: contents that load into their objects unchecked (normalizer statistics of another shape or a
    count that is no number, Adam moments of another shape) crashed the resumed run at its first update (exit 1)
    or the evaluation with a traceback. load_checkpoint now refuses them: one line, exit 2."""
    assert (
        trainer.main(
            [
                "--env-id",
                "Pendulum-v1",
                "--num-steps",
                "100",
                "--total-timesteps",
                "200",
                "--norm-obs",
                "--runs-dir",
                str(tmp_path),
                "--no-tensorboard",
            ]
        )
        == 0
    )
    run = only_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    assert (
        trainer.load_checkpoint(run)["update"] == 2
    )  # undamaged (Box actions: log_std leads the actor's state)
    ckpt = torch.load(path, weights_only=True)
    if damage == "normalizer_var":
        ckpt["normalizer"]["obs_rms"]["var"] = [1.0] * 7
    elif damage == "normalizer_count":
        ckpt["normalizer"]["obs_rms"]["count"] = "many"
    elif damage == "critic_opt_shape":
        ckpt["critic_opt"]["state"][0]["exp_avg"] = torch.zeros(3)
    else:
        ckpt["normalizer"]["obs_rms"]["mean"] = [0.0] * 7
    save_edited(ckpt, path)
    capsys.readouterr()
    assert trainer.main([flag, run, "--total-timesteps", "400"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not fit" in err and path in err, err
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "finished"
