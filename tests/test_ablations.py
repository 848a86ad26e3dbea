"""Tests for benchmark/ablations.py: each section's cells and flags, the job list (sweep.ablation_jobs), the paper's
row logged once as batch-mean, the resume rule, and the actor-update share of wall time (hand-made compact logs).
No trainer is started; the file runs in about a second."""

import csv
import json
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmark import (  # noqa: E402
    ablations,  # noqa: E402
    compact,
    hparams,
    sweep,
)


def flag(flags, name):
    """Value after `name` in a flag list (None if absent); asserts it appears at most once."""
    assert flags.count(name) <= 1, (name, flags)
    return flags[flags.index(name) + 1] if name in flags else None


def cells(section):
    return {(c.task, c.variant): c for c in hparams.section_cells(section)}


def without(flags, *names):
    """flags minus the named flags and their values (boolean flags: no value)."""
    out, skip = [], False
    for tok in flags:
        if skip:
            skip = False
            continue
        if tok in names:
            skip = tok != "--step-normalization"
            continue
        out.append(tok)
    return out


# ------------------------------------------------------------------------------------------
# Job lists per section
# ------------------------------------------------------------------------------------------
def test_fisher_section():
    cs = cells("fisher")
    assert set(cs) == {
        (t, v) for t in ("HalfCheetah", "Hopper") for v in ("batch-mean", "per-sample", "per-sample-parallel")
    }
    for task in ("HalfCheetah", "Hopper"):
        row = hparams.lookup(task, "smac")
        assert cs[(task, "batch-mean")].source == "grid" and cs[(task, "batch-mean")].flags == row
        for mode in ("per-sample", "per-sample-parallel"):
            c = cs[(task, mode)]
            assert c.source == "ablation"
            assert flag(c.flags, "--fisher") == mode
            assert without(c.flags, "--fisher") == row  # nothing else changed (η, λ, T of the paper's row)
            assert flag(c.flags, "--num-steps") == "1000"


def test_damping_section():
    cs = cells("damping")
    for task in ("Hopper", "Swimmer", "Walker2d"):
        row = hparams.lookup(task, "smac")
        assert float(flag(row, "--damping")) == 1.0  # the paper's row is λ = 1 ...
        assert cs[(task, "lambda1")].source == "grid"  # ... so λ = 1 is the grid's SMAC run
        for v, lam in (("lambda0.1", 0.1), ("lambda10", 10.0), ("lambda0.1-norm", 0.1)):
            c = cs[(task, v)]
            assert c.source == "ablation"
            assert float(flag(c.flags, "--damping")) == lam
            assert ("--step-normalization" in c.flags) == (v == "lambda0.1-norm")
            assert without(c.flags, "--damping", "--step-normalization") == without(row, "--damping")
            assert flag(c.flags, "--learning-rate") == flag(row, "--learning-rate")  # untuned


def test_prev_ef_section():
    cs = cells("prev_ef")
    for task in ("Swimmer", "Hopper", "Walker2d"):
        assert cs[(task, "batch-mean")].source == "grid"
        c = cs[(task, "prev-ef0.5")]
        assert c.source == "ablation"
        assert (
            flag(c.flags, "--prev-ef-beta"),
            flag(c.flags, "--prev-ef-rank"),
            flag(c.flags, "--prev-ef-damping"),
        ) == ("0.5", "8", "fixed")
        assert flag(c.flags, "--fisher") is None  # batch-mean (prev-EF needs it)


def test_batch_size_section():
    cs = cells("batch_size")
    for task in ("Hopper", "HalfCheetah"):
        ts = {v: int(flag(cs[(task, v)].flags, "--num-steps")) for v in ("T250", "T500", "T1000", "T2000")}
        assert ts == {"T250": 250, "T500": 500, "T1000": 1000, "T2000": 2000}
        assert cs[(task, "T1000")].source == "grid"
        assert [cs[(task, v)].source for v in ("T250", "T500", "T2000")] == ["ablation"] * 3


def test_cells_equal_to_the_paper_row_log_as_batch_mean():
    for c in ablations.all_cells():
        assert c.run_variant == ("batch-mean" if c.source == "grid" else c.variant)
    assert {c.task for c in ablations.all_cells() if c.source == "grid"} == {
        "HalfCheetah",
        "Hopper",
        "Swimmer",
        "Walker2d",
    }


def test_make_jobs_counts_order_and_budget(tmp_path):
    jobs = sweep.ablation_jobs(seeds=[1, 2, 3], runs_dir=str(tmp_path), logs_dir=str(tmp_path / "logs"))
    # fisher 2x2, damping 3x3, prev-EF 3, batch size 2x3 = 22 variant cells, + the paper's row (batch-mean) and AC-SGD
    # on 4 tasks = 30 runs per seed
    assert len(jobs) == 90 and len({j.seed_dir for j in jobs}) == 90
    assert all(j.algo not in ("lambda1", "T1000") for j in jobs)
    assert sum(j.algo == "batch-mean" for j in jobs) == 12 and sum(j.algo == "sgd" for j in jobs) == 12
    assert [j.seed for j in jobs] == sorted(j.seed for j in jobs)  # seed-major: seed 3 comes last
    assert all(j.budget == 300_000 and j.logs_dir == str(tmp_path / "logs") for j in jobs)
    cmd = sweep.command(jobs[0], "fresh", None)
    assert cmd[cmd.index("--total-timesteps") + 1] == "300000"
    assert cmd[cmd.index("--exp-name") + 1] == jobs[0].algo
    assert (
        len(sweep.ablation_jobs(["damping"], seeds=[1], runs_dir=str(tmp_path))) == 16
    )  # 9 + 3 rows + 4 AC-SGD


# ------------------------------------------------------------------------------------------
# Resume rule (sweep.inspect_job on ablation jobs)
# ------------------------------------------------------------------------------------------
def _fake_run(seed_dir, summary=None, checkpoint=False):
    run_dir = os.path.join(seed_dir, "Hopper-v4__lambda10__1__123")
    os.makedirs(run_dir)
    if summary is not None:
        with open(os.path.join(run_dir, "summary.json"), "w") as f:
            json.dump(summary, f)
    if checkpoint:
        open(os.path.join(run_dir, "checkpoint.pt"), "wb").close()
    return run_dir


def test_resume_rule(tmp_path):
    jobs = {
        j.algo: j
        for j in sweep.ablation_jobs(
            ["damping"], seeds=[1], runs_dir=str(tmp_path), logs_dir=str(tmp_path / "logs")
        )
        if j.task == "Hopper"
    }
    done, short, broken = jobs["lambda10"], jobs["lambda0.1"], jobs["lambda0.1-norm"]
    _fake_run(done.seed_dir, {"status": "finished", "global_step": 300_000})
    _fake_run(short.seed_dir, {"status": "finished", "global_step": 100_000}, checkpoint=True)
    stale = _fake_run(broken.seed_dir, {"status": "interrupted", "global_step": 5000})  # no checkpoint
    assert sweep.inspect_job(done)[0] == "done"
    assert sweep.prepare(done) == ("done", None)  # skipped
    assert sweep.inspect_job(short)[0] == "resume"  # finished at a smaller budget
    assert sweep.inspect_job(broken)[0] == "fresh"
    state, cmd = sweep.prepare(broken)
    assert state == "fresh" and not os.path.exists(stale) and "--damping" in cmd
    # run_local starts nothing for a job that is done
    out = sweep.run_local([done], workers=1, progress_interval=1e9)
    assert out["results"][done.name]["outcome"] == "done"


# ------------------------------------------------------------------------------------------
# Actor-update share of wall time
# ------------------------------------------------------------------------------------------
COLUMNS = [
    "update",
    "global_step",
    "value_loss",
    "mean_logprob",
    "entropy",
    "ell_sq",
    "g_norm",
    "step_norm",
    "cos_g_step",
    "step_par_norm",
    "step_perp_norm",
    "actor_update_ms",
    "sps",
]


def _write_run(run_dir, actor_ms, wall, resumed_from=None):
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "updates.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, ms in enumerate(actor_ms, 1):
            w.writerow([i, 1000 * i, 1, -1, 1, 0.1, 1, 1, 0.9, 0.1, 1, ms, 100])
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"status": "finished", "global_step": 1000 * len(actor_ms), "wall_time_s": wall}, f)
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        json.dump({"args": {}, "resumed_from_step": resumed_from or 0}, f)


def _packed(run_dir, logs, task="Hopper", variant="lambda10", seed=1, budget=None):
    """The run directory as the runner commits it (compact.pack), loaded as ablations.load_run does."""
    compact.pack(run_dir, compact.log_path(logs, task, variant, seed), task, variant, seed, budget)
    return ablations.load_run(task, variant, seed, logs)


def test_actor_time_share_hand_example(tmp_path):
    run_dir = str(tmp_path / "run")
    _write_run(run_dir, [200.0, 300.0, 250.0, 250.0], wall=4.0)  # 1.0 s of actor updates in 4 s
    t = _packed(run_dir, str(tmp_path / "logs"))["timing"]
    assert t["actor_s"] == pytest.approx(1.0)
    assert t["share"] == pytest.approx(0.25)
    assert t["per_update_ms"] == pytest.approx(250.0)
    assert t["updates"] == 4 and not t["resumed"]


def test_actor_time_share_counts_only_the_last_session(tmp_path):
    # resumed at step 2000: wall_time_s covers updates 3-4 only (150 + 50 ms in 0.8 s)
    run_dir = str(tmp_path / "run")
    _write_run(run_dir, [1000.0, 1000.0, 150.0, 50.0], wall=0.8, resumed_from=2000)
    t = _packed(run_dir, str(tmp_path / "logs"))["timing"]
    assert t["actor_s"] == pytest.approx(0.2) and t["share"] == pytest.approx(0.25)
    assert t["updates"] == 2 and t["resumed"]


def test_cell_stats_timing_and_returns(tmp_path):
    # two seeds of a 4-update run at budget 4000; returns constant per seed -> final = that constant
    cell = ablations.Cell("damping", "Hopper", "lambda10", [], "ablation")
    for seed, (ms, wall, ret) in {1: ([100.0] * 4, 2.0, 10.0), 2: ([50.0] * 4, 1.0, 20.0)}.items():
        run_dir = str(tmp_path / f"run{seed}")
        _write_run(run_dir, ms, wall)
        with open(os.path.join(run_dir, "episodes.csv"), "w") as f:
            f.write("global_step,episodic_return,episodic_length\n")
            for step in range(40, 4001, 40):
                f.write(f"{step},{ret},40\n")
        _packed(run_dir, str(tmp_path / "logs"), seed=seed, budget=4000)
    s = ablations.cell_stats(cell, [1, 2], str(tmp_path / "logs"), budget=4000)
    assert s["n"] == 2 and s["final_mean"] == pytest.approx(15.0)
    assert s["final_std"] == pytest.approx(np.std([10, 20], ddof=1))
    assert s["share"] == pytest.approx(0.2)  # 0.4 s / 2 s and 0.2 s / 1 s
    assert s["wall_s"] == pytest.approx(1.5) and s["actor_s"] == pytest.approx(0.3)
    assert s["per_update_ms"] == pytest.approx(75.0)
    assert ablations.compare(s, dict(s, finals=[10.0, 20.0])) == "within noise"


def test_parse_costs():
    text = (
        "# actor update time, ...\n"
        "mode                                         median ms   min ms x batch-mean  note\n"
        "batch-mean                                        1.32     1.17         1.00  \n"
        "per-sample (Algorithm 1)                        196.60   192.70       148.00  extrapolated: 100 samples\n"
        "prev-EF beta=0.5, r=8                             1.37     1.30         1.03  state U: 160 KiB\n"
    )
    rows = ablations.parse_costs(text)
    assert [r["mode"] for r in rows] == ["batch-mean", "per-sample (Algorithm 1)", "prev-EF beta=0.5, r=8"]
    assert rows[1]["median_ms"] == 196.6 and rows[2]["x_batch_mean"] == 1.03


def test_cell_stats_scales_a_diverged_runs_times_to_the_budget(tmp_path):
    cell = ablations.Cell(
        "fisher",
        "HalfCheetah",
        "per-sample",
        ["--learning-rate", "0.001", "--num-steps", "1000", "--fisher", "per-sample"],
        "ablation",
    )
    run_dir = str(tmp_path / "run")
    _write_run(run_dir, [300.0, 300.0], wall=1.0)  # 2 updates = 2000 steps in 1 s
    with open(os.path.join(run_dir, "summary.json"), "w") as f:
        json.dump({"status": "diverged", "global_step": 2000, "wall_time_s": 1.0}, f)
    _packed(run_dir, str(tmp_path / "logs"), "HalfCheetah", "per-sample", budget=4000)
    s = ablations.cell_stats(cell, [1], str(tmp_path / "logs"), budget=4000)
    assert s["n"] == 0 and s["n_diverged"] == 1  # no final return ...
    assert s["wall_s"] == pytest.approx(2.0) and s["actor_s"] == pytest.approx(1.2)  # ... but its times count
    assert s["share"] == pytest.approx(0.6)
    # |delta theta| per update: eta * B * step_norm for the per-sample modes (step_norm = 1 in _write_run)
    assert s["dtheta"] == pytest.approx(0.001 * 1000)
    assert ablations.displacement_scale(["--learning-rate", "0.01"]) == pytest.approx(0.01)


def test_more_has_a_tolerance():
    assert (
        ablations.more(1.2, 1.0) and not ablations.more(1.05, 1.0) and not ablations.more(float("nan"), 1.0)
    )
    assert ablations.more(-0.85, -1.0) and not ablations.more(-0.95, -1.0)


# ------------------------------------------------------------------------------------------
# Figures (hand-made stats): drawn through plots.save, one line per variant that has data
# ------------------------------------------------------------------------------------------
def test_ablation_figures_draw_each_variant_with_data_and_save_through_plots_save(tmp_path, monkeypatch):
    import matplotlib.image

    saved = []
    real_save = ablations.save
    monkeypatch.setattr(
        ablations,
        "save",
        lambda fig, path, title=None, **kw: (
            saved.append((path, title, [[ln.get_label() for ln in ax.get_lines()] for ax in fig.axes])),
            real_save(fig, path, title, **kw),
        ),
    )
    n = ablations.N_BINS

    def curve(v):
        return {
            "curve_mean": np.full(n, v, float),
            "curve_std": np.full(n, 1.0),
            "curve_n": np.full(n, 3.0),
        }

    stats = [
        {
            "section": "fisher",
            "task": "HalfCheetah",
            "variant": "batch-mean",
            "per_update_ms": 2.0,
            **curve(1),
        },
        {
            "section": "fisher",
            "task": "HalfCheetah",
            "variant": "per-sample",
            "per_update_ms": 40.0,
            **curve(2),
        },
        {
            "section": "fisher",
            "task": "Hopper",
            "variant": "per-sample",
            "per_update_ms": 30.0,
            "curve_mean": np.full(n, np.nan),
            "curve_std": np.full(n, np.nan),
            "curve_n": np.full(n, np.nan),
        },
    ]
    refs = [{"task": "Hopper", "variant": "sgd", **curve(0)}]
    path = str(tmp_path / "fisher.png")
    ablations.plot_section("fisher", stats, refs, path, budget=1000)
    assert saved[-1] == (
        path,
        ablations.SECTIONS["fisher"]["title"] + " — mean ± std over seeds, 1,000 steps",
        [["batch-mean (paper's row) (n=3)", "per-sample (Algorithm 1) (n=3)"], ["AC-SGD (its row) (n=3)"]],
    )  # Hopper's all-NaN per-sample curve is skipped
    assert matplotlib.image.imread(path).shape[:2] == (round(3.5 * 110), round(4.6 * 2 * 110))
    costs = [{"mode": f"prev-EF r={r}", "median_ms": float(r), "min_ms": r / 2} for r in (1, 4)] + [
        {"mode": "batch-mean", "median_ms": 1.0, "min_ms": 0.5}
    ]
    path = str(tmp_path / "time.png")
    ablations.plot_update_time(stats, costs, path)
    assert saved[-1][:2] == (path, None) and saved[-1][2][1] == [
        "prev-EF β = 0.5, median",
        "prev-EF, min",
        "batch-mean, median",
        "batch-mean, min",
    ]
    assert os.path.isfile(path)


def test_report_without_logs_refuses_and_keeps_the_committed_report(tmp_path, capsys):
    """On a fresh clone the ablation runs are not there: `report` used to overwrite ABLATIONS.md, its CSVs and
    figures with empty tables and exit 0. It now refuses in one line, exit 2, and writes nothing."""
    report = tmp_path / "ABLATIONS.md"
    report.write_text("committed\n")
    code = ablations.main(
        [
            "report",
            "--logs-dir",
            str(tmp_path / "none"),
            "--results-dir",
            str(tmp_path / "res"),
            "--figures-dir",
            str(tmp_path / "figs"),
            "--report-path",
            str(report),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: no ablation compact logs")
    assert (
        report.read_text() == "committed\n"
        and not (tmp_path / "res").exists()
        and not (tmp_path / "figs").exists()
    )
