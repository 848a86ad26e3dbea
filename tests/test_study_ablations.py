"""The ablations (benchmark/studies/ablations.py): each section's cells and flags, the job list (jobs against the
sweep's, ablation_jobs), the paper's row logged once as batch-mean, the resume rule, the actor-update share of wall
time (hand-made compact logs), ABLATIONS.md's data on hand-made cell stats, and the committed page, JSON, CSVs and
figures against what the committed logs give. No trainer is started."""

import csv
import filecmp
import json
import os

import numpy as np
import pytest

from benchmark import compact, hparams, sweep
from benchmark.studies import REPO, Where, ablations


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
    jobs = ablations.ablation_jobs(seeds=[1, 2, 3], runs_dir=str(tmp_path), logs_dir=str(tmp_path / "logs"))
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
        len(ablations.ablation_jobs(["damping"], seeds=[1], runs_dir=str(tmp_path))) == 16
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
        for j in ablations.ablation_jobs(
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
    """On a fresh clone the ablation runs are not there: `report` refuses in one line, exit 2, and writes nothing
    (ABLATIONS.md, its CSVs and figures are not overwritten with empty tables)."""
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


# ------------------------------------------------------------------------------------------
# ABLATIONS.md's data (ablations.page_data on hand-made cell stats) and the committed page
# ------------------------------------------------------------------------------------------
def _hand_cell(finals, **fields) -> dict:
    """cell_stats' fields for a cell with these per-seed finals (mean and ddof-1 std by numpy), other fields fixed
    unless given."""
    f = np.asarray(finals, dtype=float)
    out = {
        "n": int(f.size),
        "n_diverged": 0,
        "finals": list(f),
        "final_mean": float(f.mean()) if f.size else float("nan"),
        "final_std": float(f.std(ddof=1)) if f.size > 1 else float("nan"),
        "early_mean": 10.0,
        "early_std": 1.0,
        "auc_mean": 10.0,
        "drawdown_mean": 1.0,
        "wall_s": 10.0,
        "actor_s": 1.0,
        "share": 0.1,
        "per_update_ms": 2.0,
        "dtheta": 0.01,
        "cos_g_step": 1.0,
        "ell_sq_over_lambda": 0.05,
    }
    out.update(fields)
    return out


# (section, task, variant) -> (finals, other fields); every other cell: finals [10, 11, 12], _hand_cell's fields
HAND = {
    # HalfCheetah: Algorithm 1 diverged in every run; (a) = 0.8 * (1 - 2/200) = 0.792; parallel 1.5x batch-mean
    ("fisher", "HalfCheetah", "batch-mean"): (
        [100, 110, 120],
        {"share": 0.04, "wall_s": 20.0, "actor_s": 0.8},
    ),
    ("fisher", "HalfCheetah", "per-sample"): (
        [],
        {"n_diverged": 3, "share": 0.8, "per_update_ms": 200.0, "wall_s": 100.0, "actor_s": 80.0},
    ),
    ("fisher", "HalfCheetah", "per-sample-parallel"): ([10, 12, 14], {"per_update_ms": 3.0, "wall_s": 19.0}),
    ("ref", "HalfCheetah", "sgd"): ([50, 150, 250], {}),
    # Hopper: (a) = 0.5 * (1 - 2/200) = 0.495; batch-mean clearly above Algorithm 1 and AC-SGD; parallel 4x
    ("fisher", "Hopper", "batch-mean"): ([200, 210, 220], {"share": 0.02, "wall_s": 30.0, "actor_s": 0.6}),
    ("fisher", "Hopper", "per-sample"): (
        [100, 105, 110],
        {"share": 0.5, "per_update_ms": 200.0, "wall_s": 60.0},
    ),
    ("fisher", "Hopper", "per-sample-parallel"): ([205, 215, 225], {"per_update_ms": 8.0}),
    ("ref", "Hopper", "sgd"): ([0, 1, 2], {}),
    # damping: Hopper has all three claims; Swimmer none (λ = 0.1 best); Walker2d: λ = 10 as fast as λ = 1
    ("damping", "Hopper", "lambda0.1"): ([0, 10, 20], {"drawdown_mean": 5.0}),
    ("damping", "Hopper", "lambda1"): ([20, 21, 22], {}),
    ("damping", "Hopper", "lambda10"): ([5, 6, 7], {"auc_mean": 5.0}),
    ("damping", "Swimmer", "lambda0.1"): ([30, 31, 32], {}),
    ("damping", "Swimmer", "lambda10"): ([1, 2, 3], {"auc_mean": 12.0}),
    ("damping", "Walker2d", "lambda0.1"): ([0, 10, 20], {"drawdown_mean": 0.5}),
    ("damping", "Walker2d", "lambda1"): ([12, 13, 14], {}),
    # prev-EF: Swimmer faster early (+20%) and larger drawdown: agrees; Hopper 5% slower only: does not agree;
    # Walker2d 20% slower and a larger seed std: agrees
    ("prev_ef", "Swimmer", "prev-ef0.5"): ([10, 11, 12], {"early_mean": 12.0, "drawdown_mean": 2.0}),
    ("prev_ef", "Hopper", "prev-ef0.5"): ([10, 11, 12], {"auc_mean": 9.5}),
    ("prev_ef", "Walker2d", "prev-ef0.5"): ([0, 11, 22], {"auc_mean": 8.0}),
    ("prev_ef", "Walker2d", "batch-mean"): ([10, 11, 12], {"ell_sq_over_lambda": 0.4}),
    ("prev_ef", "Swimmer", "batch-mean"): ([10, 11, 12], {"ell_sq_over_lambda": 0.02}),
    # batch size: Hopper best at T = 1000; HalfCheetah at T = 2000, clearly above T = 1000
    ("batch_size", "Hopper", "T1000"): ([20, 21, 22], {}),
    ("batch_size", "HalfCheetah", "T2000"): ([40, 41, 42], {}),
}
COSTS = [
    {"mode": "batch-mean", "median_ms": 1.5, "min_ms": 1.0, "x_batch_mean": 1.0, "note": ""},
    {"mode": "prev-EF beta=0.5, r=2", "median_ms": 1.8, "min_ms": 1.2, "x_batch_mean": 1.2, "note": ""},
    {"mode": "prev-EF beta=0.5, r=8", "median_ms": 3.0, "min_ms": 2.0, "x_batch_mean": 2.0, "note": ""},
]


def _hand_stats():
    def one(section, task, variant, source):
        finals, fields = HAND.get((section, task, variant), ([10, 11, 12], {}))
        return {
            "section": section,
            "task": task,
            "variant": variant,
            "source": source,
            **_hand_cell(finals, **fields),
        }

    stats = [one(c.section, c.task, c.variant, c.source) for c in ablations.all_cells()]
    refs = [one("ref", t, "sgd", "ablation") for t in ("HalfCheetah", "Hopper")]
    return stats, refs


def _welch_word(a, b):
    """compare's word recomputed with scipy: Welch's t of a's finals vs b's, clear beyond |t| = 2."""
    import scipy.stats

    t = scipy.stats.ttest_ind(a, b, equal_var=False).statistic
    return "higher" if t > 2 else "lower" if t < -2 else "within noise"


def _words(x):
    """Every string of the data that is not a label, a task, a title or a costs field."""
    if isinstance(x, dict):
        skip = ("task", "label", "titles", "costs_header", "costs", "mode", "note")
        return [w for k, v in x.items() if k not in skip for w in _words(v)]
    if isinstance(x, list):
        return [w for v in x for w in _words(v)]
    return [x] if isinstance(x, str) else []


@pytest.fixture
def hand_page():
    stats, refs = _hand_stats()
    return ablations.page_data(stats, refs, COSTS, "# actor update time, test", [1, 2, 3], budget=300_000)


def test_the_time_saving_verdict_reads_all_three_estimates():
    """The paper's "roughly 80%" (an amendment made after the runs): all three estimates within 70-90% agree, all
    below or all above disagree, else the estimates split (the committed Hopper: 67.9 %, 70.9 %, 71.4 %)."""
    assert ablations.saving_word([0.817, 0.832, 0.820]) == "agree"
    assert ablations.saving_word([0.679, 0.709, 0.714]) == "split across the estimates"
    assert ablations.saving_word([0.5, 0.6, 0.69]) == "disagree: smaller saving"
    assert ablations.saving_word([0.91, 0.95, 0.99]) == "disagree: larger saving"
    assert ablations.saving_word([0.65, 0.95, 0.8]) == "split across the estimates"


def test_page_data_setup_and_fisher_section(hand_page):
    d = hand_page
    assert (d["budget_share"], d["n_seeds"], d["early_bin"], d["early_step"]) == (0.06, 3, 25, 75_000)
    assert d["costs_header"] == "actor update time, test" and d["costs_shown"]
    assert set(_words(d)) <= set(ablations.VOCAB)
    hc, hop = d["fisher"]["tasks"]
    # HalfCheetah: the three time savings and ratios by hand
    assert hc["within_run"] == pytest.approx(0.8 * (1 - 2 / 200))
    assert hc["vs_parallel"] == pytest.approx(1 - 19 / 100) and hc["vs_batch_mean"] == pytest.approx(0.8)
    assert hc["actor"] == pytest.approx(1 - 0.8 / 80) and hc["ratio_per_sample"] == pytest.approx(100.0)
    assert hc["ratio_parallel"] == pytest.approx(1.5) and hc["parallel_speedup"] == pytest.approx(200 / 3)
    assert (hc["time_shown"], hc["time_answer"], hc["parallel_answer"]) == (True, "agree", "met")
    assert hc["vs_per_sample"] == "n/a" and hc["returns_answer"] == "not reproducible with the paper's η"
    assert hc["diverged_shown"] and hc["per_sample_diverged"] == 3
    assert hc["vs_sgd"] == _welch_word([100, 110, 120], [50, 150, 250]) == "within noise"
    assert hc["sgd_answer"] == "not shown here"
    assert hc["batch_mean_final"] == pytest.approx([110.0, 10.0])
    # Hopper: (a) and (c) below 70%, (b) inside; batch-mean clearly above Algorithm 1 (so not "close") and above
    # AC-SGD; parallel 4x
    assert hop["within_run"] == pytest.approx(0.495) and hop["time_answer"] == "split across the estimates"
    assert hop["time_inside"] == 1 and hc["time_inside"] == 3
    assert hop["vs_per_sample"] == _welch_word([200, 210, 220], [100, 105, 110]) == "higher"
    assert (hop["returns_answer"], hop["sgd_answer"], hop["diverged_shown"]) == ("disagree", "agree", False)
    assert hop["parallel_vs_batch_mean"] == _welch_word([205, 215, 225], [200, 210, 220])
    assert (hop["ratio_parallel"], hop["parallel_answer"]) == (pytest.approx(4.0), "missed")
    # the table: per task its three modes, then AC-SGD
    rows = d["fisher"]["rows"]
    assert [(r["task"], r["label"]) for r in rows][3:5] == [
        ("HalfCheetah", "AC-SGD (its row)"),
        ("Hopper", "batch-mean (paper's row)"),
    ]
    assert rows[1]["n"] == 0 and np.isnan(rows[1]["final"][0])


def test_page_data_damping_prev_ef_and_batch_size(hand_page):
    dm = hand_page["damping"]
    hop, swim, walk = dm["tasks"]
    assert [t["slower"] for t in dm["tasks"]] == ["slower", "not slower", "not slower"]
    assert [t["noisy"] for t in dm["tasks"]] == [True, False, False]  # Walker2d: larger std, smaller drawdown
    assert [o["label"] for o in hop["order"]] == ["λ = 1", "λ = 0.1", "λ = 10"]
    assert swim["order"][0]["label"] == "λ = 0.1" and not swim["best_is_1"]
    assert (dm["n_tasks"], dm["n_slower"], dm["n_noisy"], dm["n_best"]) == (3, 1, 1, 2)
    # λ = 1 against λ = 0.1 and λ = 10; best on Hopper and Walker2d, but within noise of λ = 0.1 on both
    assert hop["final_1_vs"] == [_welch_word([20, 21, 22], [0, 10, 20]), _welch_word([20, 21, 22], [5, 6, 7])]
    assert hop["final_1_vs"] == ["within noise", "higher"] and walk["final_1_vs"][0] == "within noise"
    assert dm["n_best_clear"] == 0
    assert hop["final_10_vs_1"] == _welch_word([5, 6, 7], [20, 21, 22]) == "lower"
    assert hop["std_01"] == pytest.approx(10.0) and hop["drawdown_01"] == 5.0
    assert walk["norm_vs_01"] == _welch_word([10, 11, 12], [0, 10, 20])
    row = dm["rows"][0]  # Hopper λ = 0.1: seed std / |mean| = 10 / 10
    assert row["label"] == "λ = 0.1" and row["cv"] == pytest.approx(1.0)
    pe = hand_page["prev_ef"]
    swim, hop, walk = pe["verdicts"]
    assert (swim["claim"], swim["faster"], swim["less_stable"], swim["answer"]) == (
        "faster early, less stable",
        "faster",
        "less stable",
        "agrees",
    )
    assert (hop["claim"], hop["slower"], hop["answer"]) == (
        "slower, larger variance",
        "not slower",
        "does not agree",
    )
    assert (walk["slower"], walk["larger"], walk["answer"]) == ("slower", "larger", "agrees")
    assert hop["noise_shown"] and hop["final"] == "within noise"
    assert pe["ell_shown"] and pe["ell_range"] == pytest.approx([0.02, 0.4])
    assert pe["costs_shown"] and [c["r"] for c in pe["costs"]] == [2, 8] and pe["batch_mean_ms"] == 1.5
    bs = hand_page["batch_size"]
    assert bs["sizes"] == [
        {"T": 250, "updates": 1200, "row": False},
        {"T": 500, "updates": 600, "row": False},
        {"T": 1000, "updates": 300, "row": True},
        {"T": 2000, "updates": 150, "row": False},
    ]
    hop, hc = bs["verdicts"]
    assert (hop["best"], hop["answer"]) == (1000, "the best")
    assert (hc["best"], hc["answer"]) == (2000, "not the best")
    assert hc["vs_1000"][-1] == {"T": 2000, "answer": _welch_word([40, 41, 42], [10, 11, 12])} and (
        hc["vs_1000"][-1]["answer"] == "higher"
    )
    assert [r["label"] for r in bs["rows"][:4]] == ["250", "500", "1000", "2000"]


def test_a_clear_lead_over_ac_sgd_that_welch_does_not_confirm_is_not_an_agreement():
    """Hopper's committed finals: batch-mean 175.24, 172.047, 279.99 against AC-SGD 128.109, 137.158, 135.797 is
    |t| 2.12 (clear by the page's screen) but Welch p 0.17: higher on the screen only, not "agree"."""
    import scipy.stats

    stats, refs = _hand_stats()
    bm, sgd = [175.24, 172.047, 279.99], [128.109, 137.158, 135.797]
    assert scipy.stats.ttest_ind(bm, sgd, equal_var=False).pvalue == pytest.approx(0.17, abs=0.01)
    for s in stats:
        if (s["section"], s["task"], s["variant"]) == ("fisher", "Hopper", "batch-mean"):
            s.update(_hand_cell(bm))
    refs[1].update(_hand_cell(sgd))
    hop = ablations.page_data(stats, refs, COSTS, "", [1, 2, 3], budget=300_000)["fisher"]["tasks"][1]
    assert hop["vs_sgd"] == _welch_word(bm, sgd) == "higher"
    assert hop["sgd_answer"] == "higher on the |t| > 2 screen only (Welch p ≥ 0.05)" != "agree"


def test_page_data_without_costs_or_finite_values():
    stats, refs = _hand_stats()
    for s in stats:
        if s["section"] == "prev_ef":
            s["ell_sq_over_lambda"] = float("nan")
    d = ablations.plain(ablations.page_data(stats, refs, [], "", [1, 2, 3], budget=300_000))
    assert not d["costs_shown"] and not d["prev_ef"]["costs_shown"] and not d["prev_ef"]["ell_shown"]
    assert d["prev_ef"]["ell_range"] == [None, None] and d["prev_ef"]["batch_mean_ms"] is None
    assert d["fisher"]["rows"][1]["final"] == [None, None]  # missing numbers are null in the JSON
    ablations.render(d)  # the template takes them


def test_write_report_writes_the_json_it_renders(tmp_path, hand_page):
    stats, refs = _hand_stats()
    path, json_path = tmp_path / "ABLATIONS.md", tmp_path / "ablations.json"
    data = ablations.write_report(
        stats, refs, COSTS, "# actor update time, test", [1, 2, 3], str(path), 300_000, str(json_path)
    )
    assert json.loads(json_path.read_text(encoding="utf-8")) == data == ablations.plain(hand_page)
    assert path.read_text(encoding="utf-8") == ablations.render(data)


def test_the_committed_page_is_its_template_on_the_committed_json(tmp_path):
    with open(os.path.join(ablations.RESULTS, ablations.JSON_NAME), encoding="utf-8") as f:
        data = json.load(f)
    with open(ablations.REPORT, encoding="utf-8") as f:
        assert f.read() == ablations.render(data)
    seeds = hparams.parse_seeds(ablations.SEEDS)
    stats, refs = ablations.aggregate_all(seeds, ablations.LOGS, str(tmp_path), ablations.BUDGET)
    costs, header = ablations.read_costs()
    assert data == ablations.plain(ablations.page_data(stats, refs, costs, header, seeds))
    # a few numbers against the committed final.csv (the same logs, written by aggregate_all)
    with open(os.path.join(ablations.RESULTS, "final.csv"), newline="") as f:
        final = {(r["section"], r["task"], r["variant"]): r for r in csv.DictReader(f)}
    bm, ps = final[("fisher", "Hopper", "batch-mean")], final[("fisher", "Hopper", "per-sample")]
    within = float(ps["share"]) * (1 - float(bm["per_update_ms"]) / float(ps["per_update_ms"]))
    assert data["fisher"]["tasks"][1]["within_run"] == pytest.approx(within, rel=1e-5)
    n_best = 0
    for t in ("Hopper", "Swimmer", "Walker2d"):
        means = [float(final[("damping", t, v)]["final_mean"]) for v in ("lambda0.1", "lambda1", "lambda10")]
        n_best += max(means) == means[1]
    assert data["damping"]["n_best"] == n_best
    assert set(_words(data)) <= set(ablations.VOCAB)


def test_sections_is_the_studys_option_and_an_unknown_section_is_refused():
    import argparse

    p = argparse.ArgumentParser()
    ablations.add_options(p)
    assert p.parse_args([]).sections == "all"
    with pytest.raises(KeyError):
        ablations.jobs(sweep.build_parser().parse_args(["--study", "ablations", "--sections", "curvature"]))


def test_analyze_and_write_give_the_committed_files(tmp_path, monkeypatch):
    """The CSVs, ablations.json, ABLATIONS.md and the five figures, written into tmp_path (the update costs copied
    there, as `costs` leaves them), are the committed bytes."""
    results = tmp_path / "ablations"
    results.mkdir()
    for name in ("ablation_costs.txt", "ablation_costs.csv"):
        (results / name).write_bytes(open(os.path.join(ablations.RESULTS, name), "rb").read())
    committed_results = ablations.RESULTS
    monkeypatch.setattr(ablations, "RESULTS", str(results))
    monkeypatch.setattr(ablations, "REPORT", str(tmp_path / "ABLATIONS.md"))
    where = Where(pages=str(tmp_path / "report"), figures=str(tmp_path / "figures"), commit=True)
    written = ablations.write(ablations.analyze(where, {}), where)
    assert written[:2] == [str(tmp_path / "ABLATIONS.md"), str(results / ablations.JSON_NAME)]
    assert len(written) == 7
    assert filecmp.cmp(written[0], os.path.join(REPO, "benchmark", "ABLATIONS.md"), shallow=False)
    for name in ("final.csv", "curves.csv", "runs.csv", ablations.JSON_NAME):
        assert filecmp.cmp(results / name, os.path.join(committed_results, name), shallow=False), name
    for path in written[2:]:
        committed = os.path.join(REPO, "docs", "figures", os.path.basename(path))
        assert filecmp.cmp(path, committed, shallow=False), path


def test_write_without_logs_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(ablations, "LOGS", str(tmp_path / "no-logs"))
    where = Where(pages=str(tmp_path), figures=str(tmp_path / "figures"))
    result = ablations.analyze(where, {})
    assert result == {"ablations": None} and ablations.write(result, where) == []
    assert not (tmp_path / "figures").exists()
