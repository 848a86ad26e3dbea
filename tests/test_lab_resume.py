"""The lab's --resume and its checkpoints: a bare resume continues the run as it was started; a resume after a hard
kill, a crash or a race for the run's lock keeps each logged step once; a finished (or diverged) run resumed at its
budget changes nothing; a checkpoint that is crafted, damaged, incomplete, of another run or of bad contents is
refused in one line naming it, exit 2, with nothing written; checkpoints of older versions still resume."""

import json
import os
import shutil
import signal
import time

import gymnasium as gym
import helpers
import numpy as np
import pytest
import torch
from helpers import (
    CARTPOLE,
    checkpoint,
    finished_run,
    lab_process,
    one_line_error,
    only_run,
    rows,
    run_main,
    summary,
    wait_for_updates,
)

from benchmark import runlayer, sweep, trainer


def save_edited(ckpt, path):
    """Save an edited checkpoint as a tool that edits checkpoints would: its sha256 updated (runlayer.with_hash),
    so that the checkpoint is refused, or not, for its contents, not as a damaged file."""
    torch.save(runlayer.with_hash(ckpt), path)


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
    argv = ["--resume", run, "--total-timesteps", "800", "--learning-rate", "0.5", "--env-id", "Acrobot-v1"]
    code = trainer.main(argv)
    one_line_error(capsys.readouterr().err, code, "--learning-rate", "--env-id")
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
    run = finished_run(tmp_path)
    before = open(os.path.join(run, "updates.csv")).read()
    capsys.readouterr()
    with trainer.RunLock(run):  # a live owner
        code = trainer.main(["--resume", run, "--total-timesteps", "400"])
        one_line_error(capsys.readouterr().err, code, run, os.getpid())  # the run and its owner's pid
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
    code = trainer.main([flag, str(bad), "--runs-dir", str(tmp_path / "runs")])
    one_line_error(capsys.readouterr().err, code, str(bad))
    assert not marker.exists()
    assert not (tmp_path / "runs").exists()


# 8. finished runs --------------------------------------------------------------------------------------
def test_final_checkpoint_is_the_final_state_and_a_finished_resume_changes_nothing(tmp_path):
    run = finished_run(tmp_path, "--checkpoint-every", "2", steps=500)
    assert trainer.load_checkpoint(run)["update"] == 5  # not 4, the last periodic one
    summary = open(os.path.join(run, "summary.json")).read()
    open(os.path.join(run, "checkpoint.pt.tmp"), "w").write("half-written")
    assert trainer.main(["--resume", run]) == 0
    assert open(os.path.join(run, "summary.json")).read() == summary
    assert trainer.main(["--resume", run, "--total-timesteps", "600"]) == 0
    assert not os.path.exists(os.path.join(run, "checkpoint.pt.tmp"))


# 9. the sweep --------------------------------------------------------------------------------------------


# 10. files: missing keys, another env's networks, valid JSON summary ---------------------------------------
def test_incomplete_or_mismatched_checkpoints_are_bad_input(tmp_path, capsys):
    run = finished_run(tmp_path / "runs", steps=100)
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"), weights_only=True)
    partial = tmp_path / "partial.pt"
    torch.save({"args": ckpt["args"], "actor": ckpt["actor"]}, partial)
    other = tmp_path / "other_env.pt"
    ckpt["args"]["env_id"] = "Acrobot-v1"  # CartPole networks declared as Acrobot's: size mismatch
    save_edited(ckpt, other)
    capsys.readouterr()
    for path in (partial, other):
        for flag in ("--eval-checkpoint", "--resume"):
            code = trainer.main([flag, str(path), "--total-timesteps", "300"])
            one_line_error(capsys.readouterr().err, code, str(path))


def test_a_pre_split_checkpoint_resumes(tmp_path):
    """Checkpoints written before the trainer split name the critic's parameters net.0.weight, ... (a Critic module
    around an nn.Sequential); the lab loads them into today's critic (0.weight, ...) and resumes."""
    import torch

    run = finished_run(tmp_path)
    path = os.path.join(run, "checkpoint.pt")
    ckpt = torch.load(path, weights_only=True)
    ckpt["critic"] = {f"net.{k}": v for k, v in ckpt["critic"].items()}
    ckpt.pop("sha256", None)  # written before checkpoints carried one
    torch.save(ckpt, path)
    assert trainer.load_checkpoint(run)["critic"].keys() == {k[4:] for k in ckpt["critic"]}
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert json.load(open(os.path.join(run, "summary.json")))["global_step"] == 400


def test_a_checkpoint_naming_the_old_horizon_module_resumes(tmp_path):
    """The 1000-step ids live in benchmark/hparams.py (formerly benchmark/envs.py): a checkpoint whose env_id
    is benchmark.envs:CartPole_T1000-v1 resumes on benchmark.hparams:CartPole_T1000-v1."""
    import torch

    assert (
        run_main(
            tmp_path,
            "--env-id",
            "benchmark.hparams:CartPole_T1000-v1",
            "--num-steps",
            "100",
            "--total-timesteps",
            "200",
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
    """A resumed run whose episodes.csv was deleted and whose updates.csv was emptied writes each file's header
    before its first row."""
    run = finished_run(tmp_path)
    os.remove(os.path.join(run, "episodes.csv"))
    open(os.path.join(run, "updates.csv"), "w").close()
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert open(os.path.join(run, "episodes.csv")).readline().startswith("global_step,episodic_return")
    lines = open(os.path.join(run, "updates.csv")).read().splitlines()
    assert lines[0].startswith("update,global_step,value_loss") and len(lines) == 3  # header + 2 new updates


@pytest.mark.parametrize("damage", ["interrupted", "missing"])
def test_resuming_a_run_at_its_budget_repairs_its_summary(tmp_path, damage):
    """A run whose checkpoint reached the budget but whose summary says `interrupted` (or is gone): the resume
    rewrites the summary as finished at the checkpoint's step, so that a sweep packs it (not 'nothing to do',
    exit 0, at every launch)."""
    run = finished_run(tmp_path)
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
    """`--resume best/my.pt` does not turn best/ into a run with header-less CSVs, and a garbled header is one
    line, not a traceback from the log truncation."""
    import shutil

    run = finished_run(tmp_path / "runs")
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
    code = trainer.main(["--resume", run, "--total-timesteps", "400"])
    one_line_error(capsys.readouterr().err, code, os.path.join(run, "updates.csv"))


@pytest.mark.parametrize("damage", ["rng_torch", "rng_numpy", "global_step_str", "normalizer_shape"])
def test_checkpoints_with_bad_contents_are_one_line_exit_2(tmp_path, capsys, damage):
    """Checkpoints that load but hold bad contents are refused in one line, exit 2 (no traceback, no exit 1)."""
    import torch

    run = finished_run(tmp_path)
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
    code = trainer.main(["--resume", run, "--total-timesteps", "400"])
    one_line_error(capsys.readouterr().err, code, path)


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
def test_a_flipped_byte_in_a_checkpoint_is_refused_as_corrupt(tmp_path, capsys, flag):
    """A checkpoint damaged inside a tensor's data (torch.load checks no CRC) is neither trained on nor
    evaluated: checkpoints carry the sha256 of their contents (runlayer.with_hash), checked on
    loading: one line naming the checkpoint, exit 2, nothing written."""
    run = finished_run(tmp_path / "runs")
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
    code = trainer.main([flag, run, "--total-timesteps", "400"])
    one_line_error(capsys.readouterr().err, code, path)
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
    """Contents that load into their objects unchecked (normalizer statistics of another shape or a count that is
    no number, Adam moments of another shape) would crash the resumed run at its first update (exit 1) or the
    evaluation with a traceback: load_checkpoint refuses them, one line, exit 2."""
    assert (
        run_main(
            tmp_path,
            "--env-id",
            "Pendulum-v1",
            "--num-steps",
            "100",
            "--total-timesteps",
            "200",
            "--norm-obs",
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
    code = trainer.main([flag, run, "--total-timesteps", "400"])
    one_line_error(capsys.readouterr().err, code, path)
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "finished"


def test_resume_continues_from_the_checkpoint_it_finds_under_the_lock(tmp_path, monkeypatch):
    """Trainer B loaded the 200-step checkpoint, then waited for the lock while trainer A continued the run to 400
    steps: B must continue from 400 (A's work kept), not cut the logs back to 200 and retrain."""
    runs = tmp_path / "runs"
    run = finished_run(runs)
    shutil.copy(os.path.join(run, "checkpoint.pt"), tmp_path / "at200.pt")
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0  # trainer A
    shutil.copy(os.path.join(run, "checkpoint.pt"), tmp_path / "at400.pt")
    a_rows = open(os.path.join(run, "updates.csv")).read().splitlines()[1:]
    shutil.copy(tmp_path / "at200.pt", os.path.join(run, "checkpoint.pt"))  # what B read before the lock

    class LockAfterA(runlayer.RunLock):
        def __enter__(self):
            shutil.copy(tmp_path / "at400.pt", os.path.join(run, "checkpoint.pt"))  # A finished meanwhile
            return super().__enter__()

    monkeypatch.setattr(trainer, "RunLock", LockAfterA)
    assert trainer.main(["--resume", run, "--total-timesteps", "600"]) == 0  # trainer B
    rows = open(os.path.join(run, "updates.csv")).read().splitlines()[1:]
    assert len(rows) == 6 and [r.split(",")[0] for r in rows] == ["1", "2", "3", "4", "5", "6"]
    keep = [r.split(",")[:5] for r in a_rows]  # A's updates 3 and 4, bitwise as A logged them
    assert [r.split(",")[:5] for r in rows[:4]] == keep
    assert json.load(open(os.path.join(run, "config.json")))["resumed_from_step"] == 400


STORED = [
    ("optimizer", "no-such-optimizer"),
    ("fisher", "mean"),
    ("activation", "gelu"),
    ("num_envs", "4"),
    ("gamma", "0.9x"),
    ("hidden_sizes", "64"),
    ("learning_rate", -1.0),
]


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
@pytest.mark.parametrize("field,value", STORED, ids=[f for f, _ in STORED])
def test_stored_flags_are_validated_before_anything_is_touched(tmp_path, capsys, flag, field, value):
    runs = tmp_path / "runs"
    run = finished_run(runs)
    before = open(os.path.join(run, "summary.json")).read()
    ckpt = checkpoint(run)
    ckpt["args"][field] = value
    torch.save(runlayer.with_hash(ckpt), os.path.join(run, "checkpoint.pt"))
    capsys.readouterr()
    code = trainer.main([flag, run, "--total-timesteps", "400"])
    assert one_line_error(capsys.readouterr().err, code).startswith("error:")
    assert open(os.path.join(run, "summary.json")).read() == before  # the finished run is untouched


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
def test_non_finite_statistics_in_a_checkpoint_are_refused(tmp_path, capsys, flag):
    runs = tmp_path / "runs"
    run = finished_run(runs, "--norm-obs")
    ckpt = checkpoint(run)
    ckpt["normalizer"]["obs_rms"]["mean"][0] = float("inf")
    ckpt["normalizer"]["obs_rms"]["var"][0] = float("nan")
    torch.save(runlayer.with_hash(ckpt), os.path.join(run, "checkpoint.pt"))
    capsys.readouterr()
    code = trainer.main([flag, run, "--total-timesteps", "400"])
    one_line_error(capsys.readouterr().err, code, os.path.join(run, "checkpoint.pt"), "obs_rms")


def test_resume_at_the_budget_keeps_a_diverged_status(tmp_path, capsys):
    runs = tmp_path / "runs"
    run = finished_run(runs, steps=400)
    diverged = {**summary(run), "status": "diverged"}  # as a run that diverged after its 4th update
    runlayer.write_json(os.path.join(run, "summary.json"), diverged)
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 3
    assert summary(run)["status"] == "diverged"


def test_resume_at_the_rounded_budget_has_nothing_to_do(tmp_path):
    """--total-timesteps 250 with --num-steps 100 trains 200 steps; resuming that run with the same budget has
    nothing to do (no 0-step run overwriting summary.json with sps 0 and no mean return)."""
    runs = tmp_path / "runs"
    run = finished_run(runs, steps=250)
    before = open(os.path.join(run, "summary.json")).read()
    assert json.loads(before)["global_step"] == 200
    assert trainer.main(["--resume", run, "--total-timesteps", "250"]) == 0
    assert open(os.path.join(run, "summary.json")).read() == before


def test_a_resumed_run_keeps_its_earlier_videos(tmp_path):
    """3. RecordVideo's episode counter restarts at 0 on --resume: the same names overwrote the first videos."""
    run = finished_run(tmp_path, "--capture-video")
    videos = os.path.join(run, "videos")
    before = {name: open(os.path.join(videos, name), "rb").read() for name in os.listdir(videos)}
    assert before
    assert trainer.main(["--resume", run, "--total-timesteps", "400", "--capture-video"]) == 0
    after = os.listdir(videos)
    assert all(open(os.path.join(videos, name), "rb").read() == data for name, data in before.items())
    assert len(after) > len(before)  # the resumed segment's own videos, beside


def test_resume_takes_every_run_the_lab_makes(tmp_path, monkeypatch):
    """5. An --exp-name holding '..' and the longest run name (250 bytes: room for a -9999 suffix) are valid runs;
    --resume refused such runs once (the lab's own name checks, one of them counting a suffix resume never adds)."""
    monkeypatch.chdir(tmp_path)
    prefix = f"CartPole-v1____1__{int(__import__('time').time())}"
    for exp_name in ("a..b", "x" * (250 - len(prefix))):
        shutil.rmtree(tmp_path / "runs", ignore_errors=True)
        assert trainer.main([*CARTPOLE, "--total-timesteps", "100", "--exp-name", exp_name]) == 0
        (run,) = os.listdir(tmp_path / "runs")
        assert trainer.main(["--resume", os.path.join("runs", run), "--total-timesteps", "200"]) == 0
        assert json.load(open(os.path.join("runs", run, "summary.json")))["global_step"] == 200


def test_a_run_directory_that_cannot_be_written_is_one_line(tmp_path, capsys):
    """6. A read-only run directory: --resume and --eval-checkpoint --capture-video ended in an OSError
    traceback. (Here the lock file and the video folder are made impossible to create: tests run as root,
    for whom a directory's mode is no obstacle.)"""
    run = finished_run(tmp_path, steps=100)
    os.remove(os.path.join(run, ".lock"))
    os.mkdir(os.path.join(run, ".lock"))
    code = trainer.main(["--resume", run, "--total-timesteps", "200"])
    one_line_error(capsys.readouterr().err, code, run)
    open(os.path.join(run, "videos"), "w").close()
    code = trainer.main(["--eval-checkpoint", run, "--eval-episodes", "1", "--capture-video"])
    one_line_error(capsys.readouterr().err, code, "--capture-video", os.path.join(run, "videos"))


class Repaired(helpers.RaisesAt250):
    """RaisesAt250's spaces, without the crash."""

    def step(self, action):
        self.steps += 1
        return np.zeros(2), 1.0, False, self.steps % 20 == 0, {}


def test_a_resumed_crash_leaves_no_stale_traceback(tmp_path):
    """A crashed run resumed to `finished` keeps no traceback.txt beside its finished summary."""
    gym.register("MendedLater-v0", entry_point=helpers.RaisesAt250)
    code = run_main(tmp_path, "--env-id", "MendedLater-v0", "--num-steps", "100", "--total-timesteps", "1000")
    assert code == 1
    run = only_run(tmp_path)
    assert os.path.isfile(os.path.join(run, "traceback.txt"))
    gym.register("MendedLater-v0", entry_point=Repaired)  # the environment mended, the run resumed
    assert trainer.main(["--resume", run, "--total-timesteps", "400"]) == 0
    assert json.load(open(os.path.join(run, "summary.json")))["status"] == "finished"
    assert not os.path.exists(os.path.join(run, "traceback.txt"))
    assert os.path.isfile(os.path.join(run, "traceback-before-resume-at-200.txt"))


def test_after_a_hard_kill_tensorboard_holds_each_step_once(tmp_path):
    """8b. A run killed after its checkpoint (its logs ran ahead), then resumed: the CSVs were cut back to the
    checkpoint, but TensorBoard kept the killed segment's points, so the curves held every step twice."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert (
        run_main(
            tmp_path,
            "--env-id",
            "CartPole-v1",
            "--num-steps",
            "100",
            "--total-timesteps",
            "200",
            tensorboard=True,
        )
        == 0
    )
    run = only_run(tmp_path)
    kept = os.path.join(tmp_path, "checkpoint-at-200.pt")
    shutil.copy(os.path.join(run, "checkpoint.pt"), kept)
    assert trainer.main(["--resume", run, "--total-timesteps", "500"]) == 0
    shutil.copy(
        kept, os.path.join(run, "checkpoint.pt")
    )  # as if killed at 500 with its last checkpoint at 200
    assert trainer.main(["--resume", run, "--total-timesteps", "500"]) == 0
    events = EventAccumulator(run)
    events.Reload()
    steps = [e.step for e in events.Scalars("losses/value_loss")]
    assert steps == [100, 200, 300, 400, 500]


def test_a_loose_checkpoint_that_holds_the_budget_has_nothing_to_do_and_creates_nothing(tmp_path, capsys):
    """`--resume loose.pt` (a checkpoint copied out of its run) at its budget makes nothing (no new run directory
    holding only a made-up summary.json, "finished", "repaired", with no checkpoint or logs)."""
    runs = tmp_path / "runs"
    run = finished_run(runs)
    os.makedirs(tmp_path / "best")
    loose = str(tmp_path / "best" / "loose.pt")
    shutil.copy(os.path.join(run, "checkpoint.pt"), loose)
    before = {p: os.listdir(p) for p in (runs, run, tmp_path / "best")}
    capsys.readouterr()
    assert trainer.main(["--resume", loose, "--total-timesteps", "200"]) == 0
    assert capsys.readouterr().err == ""
    assert {p: os.listdir(p) for p in (runs, run, tmp_path / "best")} == before


@pytest.mark.parametrize("flag", ["--resume", "--eval-checkpoint"])
@pytest.mark.parametrize("stored", ["args a list", "hidden_sizes empty"])
def test_stored_flags_no_command_line_could_give_are_one_line_exit_2(tmp_path, capsys, flag, stored):
    """A checkpoint whose stored args is a list (its hash recomputed with runlayer.with_hash), or whose stored
    hidden_sizes is [] (never replaced by 64 64): one line naming the checkpoint or the flag, exit 2, the run
    untouched (no AttributeError traceback)."""
    runs = tmp_path / "runs"
    run = finished_run(runs)
    ckpt = checkpoint(run)
    if stored == "args a list":
        ckpt["args"] = sorted(ckpt["args"])
        name = os.path.join(run, "checkpoint.pt")
    else:
        ckpt["args"]["hidden_sizes"] = []
        name = "--hidden-sizes"
    save_edited(ckpt, os.path.join(run, "checkpoint.pt"))
    before = {f: open(os.path.join(run, f), "rb").read() for f in os.listdir(run)}
    capsys.readouterr()
    code = trainer.main([flag, run, "--total-timesteps", "400"])
    one_line_error(capsys.readouterr().err, code, name)
    assert {f: open(os.path.join(run, f), "rb").read() for f in os.listdir(run)} == before
    assert os.listdir(runs) == [os.path.basename(run)]
