"""--plot (benchmark/plotting.py): of one or several runs, of damaged ones, the protocol's curve and the output
paths."""

import json
import os

import matplotlib.image
import numpy as np
import pytest
from helpers import finished_run, one_line_error

from benchmark import plotting, trainer


def test_plot_two_runs(tmp_path, capsys):
    for opt in ("smac", "sgd"):
        assert (
            trainer.main(
                [
                    "--env-id",
                    "CartPole-v1",
                    "--optimizer",
                    opt,
                    "--num-steps",
                    "200",
                    "--total-timesteps",
                    "4000",
                    "--runs-dir",
                    str(tmp_path / "runs"),
                    "--no-tensorboard",
                ]
            )
            == 0
        )
    runs = sorted(str(tmp_path / "runs" / d) for d in os.listdir(tmp_path / "runs"))
    out = str(tmp_path / "both.png")
    assert trainer.main(["--plot", *runs, "--plot-out", out]) == 0
    img = matplotlib.image.imread(out)
    assert img.shape[1] > 1.5 * img.shape[0]  # three panels side by side (a SMAC run is among them)
    assert img[..., :3].std() > 0.05  # not blank
    assert trainer.main(["--plot", runs[1]]) == 0 and os.path.isfile(os.path.join(runs[1], "plot.png"))
    single = matplotlib.image.imread(os.path.join(runs[1], "plot.png"))
    assert single.shape[1] < 1.7 * single.shape[0]  # sgd only: the return panel alone
    capsys.readouterr()
    code = trainer.main(["--plot", str(tmp_path / "nope")])
    one_line_error(capsys.readouterr().err, code, str(tmp_path / "nope"))


def test_plot_curve_is_the_reports_protocol():
    """--plot bins over the run's budget as benchmark/protocol.py does (the removed protocol_curve binned over
    the last episode's step, so a run that stopped early disagreed with the report)."""
    from benchmark import protocol

    steps = np.arange(1, 101, dtype=float) * 10  # one episode per 10 steps, up to step 1000
    values = np.where(steps <= 500, 0.0, 100.0)
    ends, curve = plotting.plot_curve(steps, values)  # budget = the last step: one episode per bin
    assert ends[-1] == 1000 and curve[49] == 0.0
    assert curve[50] == pytest.approx(10.0) and curve[51] == pytest.approx(
        19.0
    )  # EWM 0.1: 0.1*100, 0.1*100 + 0.9*10
    ends, curve = plotting.plot_curve(steps, values, budget=2000)  # a run stopped at half its budget
    np.testing.assert_array_equal(curve, protocol.smoothed_curve(steps, values, 2000, last_step=1000))
    assert ends[-1] == 2000 and np.isnan(curve[50:]).all() and curve[49] == pytest.approx(100 * (1 - 0.9**25))


def test_plot_of_damaged_runs_is_one_line_or_still_a_figure(tmp_path, capsys):
    """--plot on an empty CSV, a missing updates.csv, a bad config.json, an unwritable --plot-out or header-less
    CSVs: one line each, no crash and no empty figure with exit 0."""
    run = finished_run(tmp_path / "runs", steps=300)
    os.remove(os.path.join(run, "updates.csv"))
    open(os.path.join(run, "config.json"), "w").write("{not json")
    assert (
        trainer.main(["--plot", run, "--plot-out", str(tmp_path / "ok.png")]) == 0
    )  # still plotted, unlabelled
    assert (tmp_path / "ok.png").stat().st_size > 1000
    capsys.readouterr()
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert (
        trainer.main(["--plot", run, "--plot-out", str(blocked / "x.png")]) == 2
    )  # a file where a directory is needed
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    for content in ("", "1,2,3\n4,5,6\n"):  # no episode; a header-less file
        open(os.path.join(run, "episodes.csv"), "w").write(content)
        code = trainer.main(["--plot", run, "--plot-out", str(tmp_path / "x.png")])
        one_line_error(capsys.readouterr().err, code, "--plot", run)
        assert not os.path.exists(tmp_path / "x.png")


def test_plot_of_damaged_inputs_and_its_output_paths(tmp_path, capsys):
    """7. --plot: a binary CSV, a torn non-numeric global_step, a non-numeric damping, an unknown extension,
    `--plot-out out` (wrote out.png, said "wrote out") and `--plot-out DIR/` (wrote a hidden DIR/.png)."""
    run = finished_run(tmp_path / "runs", steps=1000)
    with open(os.path.join(run, "episodes.csv"), "a") as f:
        f.write("garbled,1.0,2\n")  # a torn tail
    config = json.load(open(os.path.join(run, "config.json")))
    config["args"]["damping"] = "one"
    json.dump(config, open(os.path.join(run, "config.json"), "w"))
    capsys.readouterr()
    assert trainer.main(["--plot", run, "--plot-out", str(tmp_path / "out")]) == 0
    assert os.path.isfile(tmp_path / "out.png") and capsys.readouterr().out.strip().endswith("out.png")
    os.mkdir(tmp_path / "figs")
    assert trainer.main(["--plot", run, "--plot-out", str(tmp_path / "figs") + os.sep]) == 0
    assert os.listdir(tmp_path / "figs") == ["plot.png"]
    code = trainer.main(["--plot", run, "--plot-out", str(tmp_path / "out.xyz")])
    one_line_error(capsys.readouterr().err, code, "--plot-out", ".xyz")
    with open(os.path.join(run, "episodes.csv"), "wb") as f:
        f.write(bytes(range(256)) * 4)
    code = trainer.main(["--plot", run])
    one_line_error(capsys.readouterr().err, code, os.path.join(run, "episodes.csv"))
