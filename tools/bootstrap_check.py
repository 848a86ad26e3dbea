"""The stage-1 grid's printed bootstrap bounds checked at many more replicates.

    python tools/bootstrap_check.py                 # 200,000 replicates: about 10 minutes on one core
    python tools/bootstrap_check.py --reps 2000     # the report's own count: its stage1/*.csv bounds

The report (`python -m benchmark.report`) computes the grid's rliable aggregates and probabilities of
improvement with 2,000 stratified-bootstrap replicates (benchmark/stats.py); at that count a bound's last
printed digit can move with the bootstrap's seed. This tool runs the same bootstrap (the committed stage-1
logs, the same scores, seed 0) at --reps replicates and writes benchmark/results/stage1/bootstrap_check.csv:
per bound, its value at 2,000 replicates and at --reps. The report prints each bound at --reps replicates, at
three decimals rounded outward (aggregate.checked, stats.checked_estimate), and only while the check's
2,000-replicate values are its own: rerun this tool when the stage-1 logs change. It does not replace a check
of more replicates than --reps unless --force.

rliable's IQM (scipy's trim_mean) and probability of improvement (scipy's Mann-Whitney U per task) are
replaced here by numpy equivalents for speed; the tool stops unless they give the committed 2,000-replicate
bounds to the digit.
"""

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from rliable import metrics  # noqa: E402

from benchmark import aggregate, hparams, stats  # noqa: E402


def iqm(x) -> float:
    """rliable's aggregate_iqm (scipy.stats.trim_mean(x, 0.25, axis=None)): the mean of the middle half."""
    a = np.sort(np.asarray(x).ravel())
    cut = int(0.25 * a.size)
    return float(np.mean(a[cut : a.size - cut]))


def improvement(x, y) -> float:
    """rliable's probability_of_improvement: per task P(X > Y) + P(X = Y) / 2 over run pairs, averaged."""
    greater = (x[:, None, :] > y[None, :, :]).sum(axis=(0, 1))
    ties = (x[:, None, :] == y[None, :, :]).sum(axis=(0, 1))
    return float(np.mean((greater + 0.5 * ties) / (x.shape[0] * y.shape[0])))


def bounds(reps: int) -> dict:
    """{(x, y): (lo, hi)}: ("algo", metric) for the aggregates, ("smac", algo) for P(SMAC > algo), at reps."""
    cells = aggregate.load_cells(aggregate.stage1_logs())
    algos = [a for a in hparams.algos() if any((t, a) in cells for t in hparams.tasks())]
    scores = aggregate.normalized(cells, 5, algos)[0]
    out = {}
    for a, d in stats.aggregate_intervals(scores, reps=reps).items():
        out.update({(a, m): v[1:] for m, v in d.items()})
    for b in algos:
        if b != "smac":
            out[("smac", b)] = stats.improvement_probability(scores["smac"], scores[b], reps=reps)[1:]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200_000)
    parser.add_argument("--force", action="store_true", help="replace a check of more replicates than --reps")
    args = parser.parse_args(argv)
    reps = args.reps
    if reps < 1:
        print(f"error: --reps {reps}: the bootstrap needs at least 1 replicate", file=sys.stderr)
        return 2
    before = max((int(r["reps"]) for r in aggregate.read_check().values()), default=0)
    if before > reps and not args.force:
        print(
            f"error: {aggregate.CHECK} holds a check at {before:,} replicates; --reps {reps} would replace"
            " it with fewer (--force to replace it)",
            file=sys.stderr,
        )
        return 2
    metrics.aggregate_iqm, metrics.probability_of_improvement = iqm, improvement
    base = bounds(2000)
    stage1 = os.path.join(ROOT, "benchmark", "results", "stage1")
    # the report's own CSVs: aggregates.csv at 6 significant digits, improvement.csv at 4 decimals
    committed = {
        (r["algo"], r["metric"]): (r["lo"], r["hi"], ".6g")
        for r in stats.read_csv(f"{stage1}/aggregates.csv")
    }
    committed.update(
        {(r["x"], r["y"]): (r["lo"], r["hi"], ".4f") for r in stats.read_csv(f"{stage1}/improvement.csv")}
    )
    for key, (lo, hi, spec) in committed.items():
        if (format(base[key][0], spec), format(base[key][1], spec)) != (lo, hi):
            sys.exit(f"{key}: the bounds at 2,000 replicates, {base[key]}, are not the committed {lo}, {hi}")
    many = base if reps == 2000 else bounds(reps)
    rows = [
        {
            "x": x,
            "y": y,
            "reps": reps,
            "lo_2000": f"{lo:.6g}",
            "hi_2000": f"{hi:.6g}",
            "lo": f"{a:.6g}",
            "hi": f"{b:.6g}",
        }
        for (x, y), (lo, hi) in base.items()
        for a, b in [many[(x, y)]]
    ]
    stats.write_csv(aggregate.CHECK, rows)
    print(f"wrote {len(rows)} bounds at {reps} replicates to {aggregate.CHECK}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
