"""The paper's quantitative speed claims (section "Results") as data, and their evaluation on our runs.

    python benchmark/milestones.py benchmark/results/logs          # evaluate on compact logs
    python benchmark/milestones.py benchmark/runs --raw            # on a sweep runs directory

Protocol (the paper's, as for the results table): per seed, returns binned into 100 bins over the
run's budget and smoothed by an EWM with alpha 0.1; the curve of a cell is the mean over seeds.
A cell *reaches* a threshold at the end of the first bin where that mean curve is >= the threshold.
The seed spread is the range of the per-seed crossing steps (a seed that never crosses: "never").

Verdicts, per kind of claim (rule fixed with the claims, before any fidelity run): `RULES` below.
"beyond budget" when our runs are shorter than the step the claim needs (`needs`), or, for a claim
without a step in the paper (`needs` None: "twice as fast", "21% faster"), when neither algorithm
reaches the threshold within our runs and they are shorter than the paper's budget; "no runs" when a
cell has no runs.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark.protocol import N_BINS, across_seeds, smoothed_curve  # noqa: E402
from benchmark.stats import table  # noqa: E402

TOL = 1.25  # reach_by: within 25 % of the paper's step (or earlier)
RULES = {  # kind of claim -> when it holds; the report quotes these
    "reach_by": f"the algorithm reaches the threshold by {TOL:g} x the paper's step (earlier is fine)",
    "slower": "the algorithm reaches the threshold later than SMAC (or never while SMAC does): the direction, "
              "not the size; the measured ratio stands beside the paper's",
    "faster": "the algorithm reaches the threshold before the reference",
    "never_above": "the algorithm's seed-mean curve stays at or below the threshold over the whole run",
    "below_until": "the algorithm's curve lies below the reference's on average up to the paper's step",
}
PAPER_BUDGET = 5_000_000  # the paper's MuJoCo budget, inferred: HalfCheetah's 3.4M steps are "68% of the training budget"
PAPER_BUDGET_NOTE = "inferred from its HalfCheetah text: 3.4 million timesteps are 68% of the training budget"
NOT_JUDGED = (  # the Results section's other statements, and where the report deals with them
    "the Results text's final-return gaps (HalfCheetah \"surpassing ... AC-CG, by over 1100 points\", Hopper "
    "\"approximately 30 points\", Swimmer \"approximately 5 points\"): the final-returns table and the 5M block; "
    "MuJoCo \"outperforms the other baselines ... in all but one task\": the orderings; qualitative statements "
    "(Acrobot \"unstable training until approximately 125000 timesteps\"; stability comparisons; Walker2d \"learns "
    "faster than the baselines in the first 60% of the timesteps\", i.e. the first 3M of 5M): not judged.")


def _slower(cid, task, algo, thr, ratio, ref_step, text, ref="smac"):
    needs = int(ref_step * ratio) if ref_step else None  # no step in the paper: judged once either crosses
    return {"id": cid, "task": task, "kind": "slower", "algo": algo, "ref": ref, "threshold": thr,
            "ratio": ratio, "needs": needs, "text": text}


CLAIMS = [
    {"id": "acrobot-smac-40k", "task": "Acrobot", "kind": "reach_by", "algo": "smac", "threshold": -400,
     "step": 40_000, "needs": 40_000, "text": "SMAC only requires 40000 timesteps to pass the average return threshold of -400"},
    _slower("acrobot-adam-70", "Acrobot", "adam", -400, 1.70, 40_000, "AC-Adam requires 70% more timesteps"),
    _slower("acrobot-sgd-35", "Acrobot", "sgd", -400, 1.35, 40_000, "AC-SGD requires 35% more timesteps"),
    _slower("acrobot-cg-50", "Acrobot", "cg", -400, 1.50, 40_000, "AC-CG requires 50% more timesteps"),
    _slower("acrobot-kfac-235", "Acrobot", "kfac", -400, 3.35, 40_000, "AC-KFAC requires 235% more timesteps"),
    {"id": "cartpole-smac-87k", "task": "CartPole", "kind": "reach_by", "algo": "smac", "threshold": 750,
     "step": 87_000, "needs": 87_000, "text": "SMAC agents achieve 75% of the maximum return possible in 87000 timesteps"},
    _slower("cartpole-cg-10", "CartPole", "cg", 750, 1.10, 87_000, "AC-CG needs approximately 10% more timesteps"),
    _slower("cartpole-adam-28", "CartPole", "adam", 750, 1.28, 87_000, "AC-Adam requires 28% more timesteps"),
    _slower("cartpole-sgd-62", "CartPole", "sgd", 750, 1.62, 87_000, "AC-SGD requires 62% more timesteps"),
    {"id": "cartpole-kfac-40pct", "task": "CartPole", "kind": "never_above", "algo": "kfac", "threshold": 400,
     "needs": 141_000, "text": "the average performance of AC-KFAC never improves above 40% of the optimal policy's return"},
    {"id": "pendulum-cg-1.5M", "task": "Pendulum", "kind": "reach_by", "algo": "cg", "threshold": -2226,
     "step": 1_500_000, "needs": 1_500_000, "text": "AC-CG requires only 1.5 million timesteps to match the final performance of SMAC [-2226]"},
    {"id": "halfcheetah-smac-3.4M", "task": "HalfCheetah", "kind": "reach_by", "algo": "smac", "threshold": 1766,
     "step": 3_400_000, "needs": 3_400_000, "text": "SMAC matches the final performance of AC-CG [1766] after only 3.4 million timesteps"},
    {"id": "halfcheetah-smac-slower-2M", "task": "HalfCheetah", "kind": "below_until", "algo": "smac", "ref": "cg",
     "step": 2_000_000, "needs": 2_000_000, "text": "it [SMAC] learns more slowly [than AC-CG] for the first 2 million timesteps"},
    {"id": "hopper-smac-3x", "task": "Hopper", "kind": "reach_by", "algo": "smac", "threshold": 303.8,
     "step": PAPER_BUDGET // 3, "needs": PAPER_BUDGET // 3,
     "text": "SMAC achieves the final performance of AC-Adam [303.8] using almost three times fewer timesteps [read: by 5M/3]"},
    _slower("swimmer-cg-2x", "Swimmer", "cg", 23.8, 2.0, None,
            "matching the peak performance of AC-CG almost twice as fast [read: AC-CG's table final, 23.8; the "
            "paper prints no peak]"),
    {"id": "walker-smac-410k", "task": "Walker2d", "kind": "reach_by", "algo": "smac", "threshold": 115,
     "step": 410_000, "needs": 410_000, "text": "SMAC reaches the threshold of 115 in only 410000 timesteps"},
    _slower("walker-cg-39", "Walker2d", "cg", 115, 1.39, 410_000, "AC-CG itself needs 39% more"),
    {"id": "humanoid-smac-adam-59pct", "task": "Humanoid", "kind": "reach_by", "algo": "smac", "threshold": 3105,
     "step": int(0.59 * PAPER_BUDGET), "needs": int(0.59 * PAPER_BUDGET),
     "text": "SMAC matches the final performance of AC-Adam [3105] after 59% of the budget"},
    {"id": "humanoid-smac-cg-59pct", "task": "Humanoid", "kind": "reach_by", "algo": "smac", "threshold": 3175,
     "step": int(0.59 * PAPER_BUDGET), "needs": int(0.59 * PAPER_BUDGET),
     "text": "SMAC matches the final performance of AC-CG [3175] after 59% of the budget"},
    {"id": "humanoid-sgd-faster", "task": "Humanoid", "kind": "faster", "algo": "sgd", "ref": "smac", "threshold": 3105,
     "needs": None, "text": "AC-SGD is slightly faster than our method [read: to AC-Adam's final, 3105]"},
    _slower("pusher-cg-21", "Pusher", "cg", -441, 1.21, None, "passing the -441 threshold 21% faster than AC-CG"),
    _slower("pusher-sgd-9", "Pusher", "sgd", -441, 1.09, None, "passing the -441 threshold 9% faster than AC-SGD"),
]


def cell_curves(runs: list[dict], windows: Optional[dict] = None) -> dict:
    """{(task, algo): (span, seeds x bins smoothed curves, reach)} from run dicts (aggregate.discover /
    compact.load). The 100 bins span the runs' budget, or windows[task] steps where given: a shorter span
    keeps only the episodes inside it (narrower bins), a longer one leaves the bins past the runs empty
    (wider bins). reach = the steps the runs cover inside the span."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["task"], r["algo"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        budget = max(int(r["job_budget"] or r["last_step"]) for r in rs)
        span = (windows or {}).get(key[0], budget)
        curves = np.array([smoothed_curve(r["episodes"]["global_step"], r["episodes"]["episodic_return"], span,
                                          last_step=r["last_step"]) for r in rs])
        out[key] = (span, curves, min(budget, span))
    return out


def first_crossing(curve: np.ndarray, threshold: float, budget: int) -> Optional[int]:
    """End step of the first bin where curve >= threshold, or None."""
    hit = np.flatnonzero(np.nan_to_num(curve, nan=-np.inf) >= threshold)
    return None if hit.size == 0 else int(round((hit[0] + 1) * budget / N_BINS))


def fmt_step(s) -> str:
    """34_500 -> '34.5k', 150_000 -> '150k', 1_680_000 -> '1.68M', None -> 'never'."""
    if s is None:
        return "never"
    return f"{s / 1e6:.2f}M" if s >= 1e6 else f"{s / 1e3:.1f}".rstrip("0").rstrip(".") + "k"


def _per_seed(cells, task, algo, thr) -> list:
    span, curves, _ = cells[(task, algo)]
    return [first_crossing(c, thr, span) for c in curves]


def _cross(cells, task, algo, thr):
    span, curves, _ = cells[(task, algo)]
    mean = across_seeds(curves)[0]
    per_seed = _per_seed(cells, task, algo, thr)
    spread = ", ".join(fmt_step(s) for s in sorted(per_seed, key=lambda s: float("inf") if s is None else s))
    return first_crossing(mean, thr, span), spread


STRICT = {  # issue 27's names for the verdict of a "slower" / "faster" claim that holds on its direction
    "held": "the measured ratio within a factor 1.25 of the paper's, and the per-seed crossings separate (every seed "
            "of the faster algorithm crosses before every seed of the slower one)",
    "direction only": "the order is the paper's, but the ratio is not within 1.25x of the paper's or the seeds overlap",
    "baseline never reaches it": "the paper says the slower algorithm reaches the threshold later; ours never does",
}


def strict_verdict(verdict: str, t, t_ref, fast_seeds: list, slow_seeds: list, paper_ratio) -> str:
    """The stricter verdict of a slower / faster claim (STRICT): t is the slower algorithm's crossing, t_ref the
    faster one's; *_seeds their per-seed crossings (None: never)."""
    if verdict != "held":
        return verdict
    if t is None:
        return "baseline never reaches it"
    inf = float("inf")
    separate = max((s if s is not None else inf) for s in fast_seeds) < min((s if s is not None else inf)
                                                                           for s in slow_seeds)
    size_ok = paper_ratio is None or (paper_ratio / TOL <= t / t_ref <= paper_ratio * TOL)
    return "held" if separate and size_ok else "direction only"


def evaluate(runs: list[dict], tasks=None, claims=CLAIMS, windows: Optional[dict] = None) -> list[dict]:
    """One row per claim: id, task, claim, kind, algo, measured, seeds, verdict, and for a judged claim
    steps: (crossing step or None,) for reach_by, (algo's, ref's) with paper_ratio for slower / faster.
    windows: {task: steps} the 100 bins span instead of the runs' budget (cell_curves)."""
    cells = cell_curves(runs, windows)
    rows = []
    for c in claims:
        if tasks and c["task"] not in tasks:
            continue
        row = {"id": c["id"], "task": c["task"], "claim": c["text"], "kind": c["kind"], "algo": c["algo"],
               "measured": "", "seeds": "", "verdict": ""}
        needed = [c["algo"]] + ([c["ref"]] if "ref" in c else [])
        if any((c["task"], a) not in cells for a in needed):
            rows.append({**row, "verdict": "no runs"})
            continue
        budget = min(cells[(c["task"], a)][2] for a in needed)
        if c["needs"] is not None and budget < c["needs"]:
            rows.append({**row, "measured": f"budget {fmt_step(budget)} < {fmt_step(c['needs'])}",
                         "verdict": "beyond budget"})
            continue
        kind = c["kind"]
        if kind == "reach_by":
            t, spread = _cross(cells, c["task"], c["algo"], c["threshold"])
            held = t is not None and t <= TOL * c["step"]
            row.update(measured=f"{c['algo']} " + (f"reaches {c['threshold']:g} at {fmt_step(t)}" if t is not None
                                                      else f"does not reach {c['threshold']:g}")
                       + f" (paper {fmt_step(c['step'])})", seeds=spread, steps=(t,))
        elif kind in ("slower", "faster"):
            t, spread = _cross(cells, c["task"], c["algo"], c["threshold"])
            t_ref, spread_ref = _cross(cells, c["task"], c["ref"], c["threshold"])
            # compare over the span both cells cover: a crossing past the shorter one was not seen by the other
            t, t_ref = (None if x is None or x > budget else x for x in (t, t_ref))
            if c["needs"] is None and t is None and t_ref is None and budget < PAPER_BUDGET:
                rows.append({**row, "verdict": "beyond budget",
                             "measured": f"neither reaches {c['threshold']:g} by {fmt_step(budget)} (the paper gives "
                                         f"no step; its budget: {fmt_step(PAPER_BUDGET)})"})
                continue
            if kind == "slower":
                held = t_ref is not None and (t is None or t > t_ref)
            else:
                held = t is not None and (t_ref is None or t < t_ref)
            slow, fast = (t, t_ref) if kind == "slower" else (t_ref, t)
            seeds_algo = _per_seed(cells, c["task"], c["algo"], c["threshold"])
            seeds_ref = _per_seed(cells, c["task"], c["ref"], c["threshold"])
            slow_seeds, fast_seeds = (seeds_algo, seeds_ref) if kind == "slower" else (seeds_ref, seeds_algo)
            row["strict"] = strict_verdict("held" if held else "not held", slow, fast, fast_seeds, slow_seeds,
                                           c.get("ratio"))
            ratio = f"{t / t_ref:.2f}x" if t and t_ref else "n/a"
            paper = f", paper {c['ratio']:.2f}x" if "ratio" in c else ""
            row.update(measured=f"{c['algo']} {fmt_step(t)} vs {c['ref']} {fmt_step(t_ref)}: {ratio}{paper}",
                       seeds=f"{c['algo']}: {spread}; {c['ref']}: {spread_ref}", steps=(t, t_ref),
                       paper_ratio=c.get("ratio"))
        elif kind == "never_above":
            curves = cells[(c["task"], c["algo"])][1]
            peak = float(np.nanmax(across_seeds(curves)[0]))
            held = peak <= c["threshold"]
            row.update(measured=f"{c['algo']} peak {peak:.1f} (threshold {c['threshold']:g})",
                       seeds=", ".join(f"{np.nanmax(x):.0f}" for x in curves))
        elif kind == "below_until":
            b_a, ca, _ = cells[(c["task"], c["algo"])]
            cr = cells[(c["task"], c["ref"])][1]
            k = int(np.ceil(c["step"] / b_a * N_BINS))
            diff = float(np.nanmean(across_seeds(ca)[0][:k] - across_seeds(cr)[0][:k]))
            held = diff < 0
            row.update(measured=f"mean({c['algo']} - {c['ref']}) over the first {fmt_step(c['step'])}: {diff:.1f}")
        else:
            raise ValueError(f"unknown claim kind {kind!r}")
        verdict = "held" if held else "not held"
        rows.append({**row, "verdict": verdict, "strict": row.get("strict") or verdict})
    return rows


ORDER = ("held", "direction only", "baseline never reaches it", "not held")


def combined(row: dict) -> str:
    """The claim's verdict over both readings (our bins, and the paper's bin width in row["other"]): the less
    favourable of the two; a reading that cannot judge it (beyond budget, no runs) does not count."""
    mine = row.get("strict") or row["verdict"]
    other = row.get("other")
    theirs = (other.get("strict") or other["verdict"]) if other else None
    if mine not in ORDER or theirs not in ORDER:
        return mine
    return max(mine, theirs, key=ORDER.index)


COLUMNS = [("Task", lambda r: r["task"]), ("Claim (paper, section Results; [ ]: ours)", lambda r: r["claim"]),
           ("Measured (seed-mean curve)", lambda r: r["measured"]), ("Per seed", lambda r: r["seeds"]),
           ("Verdict", lambda r: f"**{r['verdict']}**")]


def markdown(rows: list[dict]) -> list[str]:
    return table(rows, COLUMNS)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", help="compact logs root ({task}/{algo}/seed{n}.json.gz) or, with --raw, a runs dir")
    p.add_argument("--raw", action="store_true", help="source is a sweep runs directory")
    a = p.parse_args(argv)
    if a.raw:
        from benchmark.compact import discover
        runs = discover(a.source)
    else:
        from benchmark.compact import discover_logs
        runs = discover_logs(a.source)
    print("\n".join(markdown(evaluate(runs))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
