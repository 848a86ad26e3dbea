"""The trainer's --plot: runs' returns (raw and the paper's protocol, benchmark/protocol.py) and, for SMAC runs,
|l_bar|^2 / lambda and cos(g, step) over training, drawn into one image.

    python -m benchmark.trainer --plot runs/<run A> runs/<run B> --plot-out both.png
"""

from __future__ import annotations

import math
import os
import time
from typing import Optional

import numpy as np

from benchmark import protocol, provenance
from benchmark.runlayer import ConfigError


def read_run_csv(path: str, required: tuple = ()) -> dict:
    """Columns of episodes.csv / updates.csv as float arrays (a torn last line is skipped); a missing or empty
    file reads as no rows; ConfigError when a `required` column is missing (a header-less or garbled file)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, on_bad_lines="skip")
    except (FileNotFoundError, pd.errors.EmptyDataError):
        frame = pd.DataFrame()
    except (UnicodeDecodeError, pd.errors.ParserError) as e:  # a binary or garbled file
        raise ConfigError(f"--plot: {path!r} is not a readable CSV ({type(e).__name__})") from None
    data = {k: pd.to_numeric(v, errors="coerce").to_numpy(dtype=float) for k, v in frame.items()}
    missing = [c for c in required if c not in data]
    if missing and data:
        raise ConfigError(f"--plot: {path!r} has no column {missing[0]!r} (header-less or garbled)")
    if "global_step" in data:  # rows without a step (a torn tail after a power loss) are dropped
        keep = np.isfinite(data["global_step"])
        data = {k: v[keep] for k, v in data.items()}
    return data or {c: np.array([]) for c in required}


def plot_curve(steps: np.ndarray, returns: np.ndarray, budget: Optional[int] = None) -> tuple:
    """(bin ends, curve) of the paper's protocol as the report computes it; budget defaults to the last step."""
    budget = int(budget or steps.max())
    curve = protocol.smoothed_curve(steps, returns, budget, last_step=min(int(steps.max()), budget))
    return np.arange(1, protocol.N_BINS + 1) * budget / protocol.N_BINS, curve


def plot_runs(run_dirs: tuple, out: str) -> str:
    """Plot the runs (run directories, or files in them) into the PNG `out`: each run's return, raw and by the
    paper's protocol, and for SMAC runs |l_bar|^2 / lambda and cos(g, step) over the steps; returns out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [_plotted_run(d) for d in run_dirs]  # (run directory, its flags, episodes.csv, updates.csv)
    if not any(ep["global_step"].size for _, _, ep, _ in runs):
        raise ConfigError(
            "--plot: no finished episode in " + ", ".join(repr(r[0]) for r in runs) + "; nothing to plot"
        )
    smac = [
        r
        for r in runs
        if r[1].get("optimizer", "smac") == "smac" and np.isfinite(r[3].get("ell_sq", [np.nan])).any()
    ]
    fig, axes = plt.subplots(1, 3 if smac else 1, figsize=(15 if smac else 6.5, 4.2), squeeze=False)
    axes = axes[0]
    _draw_runs(axes, runs, smac)
    _label_axes(axes, smac)
    fig.tight_layout()
    try:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        fig.savefig(out, dpi=110)
    except OSError as e:
        raise ConfigError(f"--plot-out {out!r}: cannot write there ({e.strerror or e})") from None
    finally:
        plt.close(fig)
    return out


def _plotted_run(d: str) -> tuple:
    """(run directory, its flags, episodes.csv, updates.csv) of a run directory or a file in one; its flags are
    {} when config.json is missing or unreadable (the run is still plotted, unlabelled)."""
    d = os.path.dirname(d) if os.path.isfile(d) else d
    if not os.path.isfile(os.path.join(d, "episodes.csv")):
        raise ConfigError(f"--plot: {d!r} is not a run directory (no episodes.csv)")
    return (
        d,
        provenance.run_args(d),
        read_run_csv(os.path.join(d, "episodes.csv"), ("global_step", "episodic_return")),
        read_run_csv(os.path.join(d, "updates.csv"), ("global_step", "ell_sq", "cos_g_step")),
    )


def _draw_runs(axes, runs: list[tuple], smac: list[tuple]) -> None:
    """Draw each run in its colour: its return (raw, faint; the protocol's curve, bold and labelled) on axes[0],
    and for the SMAC runs |l_bar|^2 / lambda on axes[1] and cos(g, step) on axes[2]."""
    for i, (d, cfg, ep, up) in enumerate(runs):
        color = f"C{i % 10}"
        run = os.path.basename(d)[-10:]
        label = f"{cfg.get('env_id', '?')} {cfg.get('optimizer', '?')} seed {cfg.get('seed', '?')} ({run})"
        if ep.get("global_step", np.array([])).size:
            axes[0].plot(ep["global_step"], ep["episodic_return"], color=color, alpha=0.25, lw=0.7)
            axes[0].plot(
                *plot_curve(ep["global_step"], ep["episodic_return"], cfg.get("total_timesteps")),
                color=color,
                lw=2,
                label=label,
            )
        if (d, cfg, ep, up) in smac and up["global_step"].size:
            axes[1].plot(up["global_step"], up["ell_sq"] / damping_of(cfg), color=color, lw=1)
            axes[2].plot(up["global_step"], up["cos_g_step"], color=color, lw=1)


def _label_axes(axes, smac: list[tuple]) -> None:
    """The plot's titles, axis labels, legend, grid and step ticks (the SMAC axes only where there are SMAC runs)."""
    import matplotlib.ticker

    axes[0].set(
        xlabel="environment steps",
        ylabel="episodic return",
        title="return: raw (faint) and the paper's protocol, benchmark/protocol.py (bold)",
    )
    axes[0].legend(fontsize=7)
    if smac:
        axes[1].set(
            xlabel="environment steps",
            ylabel="|l_bar|^2 / lambda",
            yscale="log",
            title="SMAC: rank-1 term relative to damping",
        )
        axes[2].set(
            xlabel="environment steps", ylabel="cos(g, step)", title="SMAC: cos(policy gradient, step)"
        )
        axes[2].ticklabel_format(axis="y", useOffset=False)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_formatter(matplotlib.ticker.EngFormatter())


def damping_of(cfg: dict) -> float:
    """A run's lambda from its config.json (1.0 when it is missing or not a positive number)."""
    try:
        damping = float(cfg.get("damping", 1.0))
    except (TypeError, ValueError):
        return 1.0
    return damping if damping > 0 and math.isfinite(damping) else 1.0


def plot_path(out: Optional[str], plot: tuple, runs_dir: str) -> str:
    """Where --plot writes: --plot-out as given with an image format matplotlib writes (none given: .png; a
    directory, or a path ending in '/': plot.png inside it), else RUN/plot.png or runs_dir/plot_<time>.png."""
    import matplotlib.figure

    if out is None:
        if len(plot) == 1:
            return os.path.join(plot[0], "plot.png")
        return os.path.join(runs_dir, f"plot_{int(time.time())}.png")
    if out.endswith(os.sep) or os.path.isdir(out):
        return os.path.join(out, "plot.png")
    extension = os.path.splitext(out)[1].lstrip(".").lower()
    if not extension:
        return out + ".png"
    formats = matplotlib.figure.Figure().canvas.get_supported_filetypes()
    if extension not in formats:
        raise ConfigError(
            f"--plot-out {out!r}: matplotlib cannot write .{extension}; use one of {', '.join(formats)}"
        )
    return out
