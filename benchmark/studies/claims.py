"""The paper's timestep claims: does each speed claim of the paper's Results section ("SMAC reaches X by step N",
"AC-CG learns twice as slowly", ...) hold in our runs, under the rules fixed with the claims before the stage-1 runs
(RULES) and under the stricter names that came after them (STRICT)?

The claims, their rules and their evaluation are this module's CLAIMS / evaluate / combined (the fidelity study and
MuJoCo at 5M judge them too; `python -m benchmark.studies.claims LOGS` judges them on any compact logs). This study
runs no jobs of its own: it judges the claims on the stage-1 grid's runs (the grid study's, `python -m
benchmark.sweep --study grid`) and HalfCheetah SMAC / AC-CG's 5M headline block, and takes the claims that need more
than the stage-1 budget from MuJoCo at 5M's block A (`--study mujoco-5M`), whose rules, stricter names included, were
pre-registered before those runs in benchmark/preregistration_5M.toml (whose text calls RULES and STRICT
aggregate.RULES and aggregate.STRICT). The stage-1 claims have no pre-registration toml: their rules are written down
here (RULES).

The report writes report/claims.md (and, committing, benchmark/results/claims.json); the verdict's row "claims", its
point "held" and the design's count of claims are this study's.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Optional

import numpy as np

from benchmark import aggregate, compact, hparams, pages, stats
from benchmark import verdict as vd
from benchmark.aggregate import PAPER_BUDGET, cell_curves, first_crossing, fmt_step
from benchmark.compact import discover
from benchmark.protocol import N_BINS, across_seeds
from benchmark.stats import markdown_table
from benchmark.studies import REPO
from benchmark.studies.grid import PAGE_DIGITS, Data, cell_data

NAME = None  # its runs are the grid study's and MuJoCo at 5M's
PREREGISTRATION = None  # the stage-1 claims' rules are RULES; the 5M claims': preregistration_5M.toml
COMMITTED_ONLY = False

N_HEADLINE = 2 * 5  # the 5M block: HalfCheetah SMAC and AC-CG x 5 seeds
CLAIMS_JSON = os.path.join(REPO, "benchmark", "results", "claims.json")
CLAIMS_VOCAB = (  # every word report/claims.md's verdict columns may use (evaluate, combined)
    "held",
    "direction only",
    "baseline never reaches it",
    "not held",
    "beyond budget",
    "no runs",
    "waiting",
    "bin width",  # change_cause: why the other span's verdict differs
    "run length",
)


# ---- the paper's timestep claims (section Results) as data, their rules and their judgement
TOL = 1.25  # reach_by: within 25 % of the paper's step (or earlier)
RULES = {  # kind of claim -> when it holds; the report quotes these
    "reach_by": f"the algorithm reaches the threshold by {TOL:g} x the paper's step (earlier is fine)",
    "slower": "the algorithm reaches the threshold later than SMAC (or never while SMAC does): the direction, "
    "not the size; the measured ratio stands beside the paper's",
    "faster": "the algorithm reaches the threshold before the reference",
    "never_above": "the algorithm's seed-mean curve stays at or below the threshold over the whole run",
    "below_until": "the algorithm's curve lies below the reference's on average up to the paper's step",
}

NOT_JUDGED = (  # the Results section's other statements, and where the report deals with them
    'the Results text\'s final-return gaps (HalfCheetah "surpassing ... AC-CG, by over 1100 points", Hopper '
    '"approximately 30 points", Swimmer "approximately 5 points"): the final-returns table and the 5M block; '
    'MuJoCo "outperforms the other baselines ... in all but one task": the orderings; qualitative statements '
    '(Acrobot "unstable training until approximately 125000 timesteps"; stability comparisons; Walker2d "learns '
    'faster than the baselines in the first 60% of the timesteps", i.e. the first 3M of 5M): not judged.'
)


def _slower(cid, task, algo, thr, ratio, ref_step, text, ref="smac"):
    needs = int(ref_step * ratio) if ref_step else None  # no step in the paper: judged once either crosses
    return {
        "id": cid,
        "task": task,
        "kind": "slower",
        "algo": algo,
        "ref": ref,
        "threshold": thr,
        "ratio": ratio,
        "needs": needs,
        "text": text,
    }


def _reach(cid, task, algo, thr, step, text, rival=None, share=None):
    """rival: the algorithm whose final in the paper's table is the threshold ("SMAC matches the final of AC-CG");
    share: the paper's step as it states it, a share of its budget ("1/3"), where `step` is that share of
    PAPER_BUDGET."""
    return {
        "id": cid,
        "task": task,
        "kind": "reach_by",
        "algo": algo,
        "threshold": thr,
        "step": step,
        "needs": step,
        "text": text,
        "rival": rival,
        "share": share,
    }


CLAIMS = [
    _reach(
        "acrobot-smac-40k",
        "Acrobot",
        "smac",
        -400,
        40_000,
        "SMAC only requires 40000 timesteps to pass the average return threshold of -400",
    ),
    _slower("acrobot-adam-70", "Acrobot", "adam", -400, 1.70, 40_000, "AC-Adam requires 70% more timesteps"),
    _slower("acrobot-sgd-35", "Acrobot", "sgd", -400, 1.35, 40_000, "AC-SGD requires 35% more timesteps"),
    _slower("acrobot-cg-50", "Acrobot", "cg", -400, 1.50, 40_000, "AC-CG requires 50% more timesteps"),
    _slower(
        "acrobot-kfac-235", "Acrobot", "kfac", -400, 3.35, 40_000, "AC-KFAC requires 235% more timesteps"
    ),
    _reach(
        "cartpole-smac-87k",
        "CartPole",
        "smac",
        750,
        87_000,
        "SMAC agents achieve 75% of the maximum return possible in 87000 timesteps",
    ),
    _slower(
        "cartpole-cg-10", "CartPole", "cg", 750, 1.10, 87_000, "AC-CG needs approximately 10% more timesteps"
    ),
    _slower("cartpole-adam-28", "CartPole", "adam", 750, 1.28, 87_000, "AC-Adam requires 28% more timesteps"),
    _slower("cartpole-sgd-62", "CartPole", "sgd", 750, 1.62, 87_000, "AC-SGD requires 62% more timesteps"),
    {
        "id": "cartpole-kfac-40pct",
        "task": "CartPole",
        "kind": "never_above",
        "algo": "kfac",
        "threshold": 400,
        "needs": 141_000,
        "text": "the average performance of AC-KFAC never improves above 40% of the optimal policy's return",
    },
    _reach(
        "pendulum-cg-1.5M",
        "Pendulum",
        "cg",
        -2226,
        1_500_000,
        "AC-CG requires only 1.5 million timesteps to match the final performance of SMAC [-2226]",
    ),
    _reach(
        "halfcheetah-smac-3.4M",
        "HalfCheetah",
        "smac",
        1766,
        3_400_000,
        "SMAC matches the final performance of AC-CG [1766] after only 3.4 million timesteps",
        rival="cg",
    ),
    {
        "id": "halfcheetah-smac-slower-2M",
        "task": "HalfCheetah",
        "kind": "below_until",
        "algo": "smac",
        "ref": "cg",
        "step": 2_000_000,
        "needs": 2_000_000,
        "text": "it [SMAC] learns more slowly [than AC-CG] for the first 2 million timesteps",
    },
    _reach(
        "hopper-smac-3x",
        "Hopper",
        "smac",
        303.8,
        PAPER_BUDGET // 3,
        "SMAC achieves the final performance of AC-Adam [303.8] using almost three times fewer timesteps "
        "[read: by 5M/3]",
        rival="adam",
        share="1/3",
    ),
    _slower(
        "swimmer-cg-2x",
        "Swimmer",
        "cg",
        23.8,
        2.0,
        None,
        "matching the peak performance of AC-CG almost twice as fast [read: AC-CG's table final, 23.8; the "
        "paper prints no peak]",
    ),
    _reach(
        "walker-smac-410k",
        "Walker2d",
        "smac",
        115,
        410_000,
        "SMAC reaches the threshold of 115 in only 410000 timesteps",
    ),
    _slower("walker-cg-39", "Walker2d", "cg", 115, 1.39, 410_000, "AC-CG itself needs 39% more"),
    _reach(
        "humanoid-smac-adam-59pct",
        "Humanoid",
        "smac",
        3105,
        int(0.59 * PAPER_BUDGET),
        "SMAC matches the final performance of AC-Adam [3105] after 59% of the budget",
        rival="adam",
        share="59%",
    ),
    _reach(
        "humanoid-smac-cg-59pct",
        "Humanoid",
        "smac",
        3175,
        int(0.59 * PAPER_BUDGET),
        "SMAC matches the final performance of AC-CG [3175] after 59% of the budget",
        rival="cg",
        share="59%",
    ),
    {
        "id": "humanoid-sgd-faster",
        "task": "Humanoid",
        "kind": "faster",
        "algo": "sgd",
        "ref": "smac",
        "threshold": 3105,
        "needs": None,
        "text": "AC-SGD is slightly faster than our method [read: to AC-Adam's final, 3105]",
    },
    _slower(
        "pusher-cg-21", "Pusher", "cg", -441, 1.21, None, "passing the -441 threshold 21% faster than AC-CG"
    ),
    _slower(
        "pusher-sgd-9", "Pusher", "sgd", -441, 1.09, None, "passing the -441 threshold 9% faster than AC-SGD"
    ),
]


STRICT = {  # the stricter names for the verdict of a "slower" / "faster" claim that holds on its direction
    "held": "the measured ratio within a factor 1.25 of the paper's, and the per-seed crossings separate (every seed "
    "of the faster algorithm crosses before every seed of the slower one)",
    "direction only": "the order is the paper's, but the ratio is not within 1.25x of the paper's or the seeds overlap",
    "baseline never reaches it": "the paper says the slower algorithm reaches the threshold later; ours never does",
}
ORDER = CLAIMS_VOCAB[:4]  # a claim's verdicts, the most favourable first: combined()'s less favourable wins
# the claims table: its headers, and a claim's (a row of evaluate()) cells under them
CLAIM_HEADERS = [
    "Task",
    "Claim (paper, section Results; [ ]: ours)",
    "Measured (seed-mean curve)",
    "Per seed",
    "Verdict",
]


def claim_cells(r: dict) -> list:
    """A claim's cells under CLAIM_HEADERS."""
    return [r["task"], r["claim"], r["measured"], r["seeds"], f"**{r['verdict']}**"]


def strict_verdict(verdict: str, t, t_ref, fast_seeds: list, slow_seeds: list, paper_ratio) -> str:
    """The stricter verdict of a slower / faster claim (STRICT): t is the slower algorithm's crossing, t_ref the
    faster one's; *_seeds their per-seed crossings (None: never)."""
    if verdict != "held":
        return verdict
    if t is None:
        return "baseline never reaches it"
    never_last = [[math.inf if s is None else s for s in seeds] for seeds in (fast_seeds, slow_seeds)]
    size_ok = paper_ratio is None or (paper_ratio / TOL <= t / t_ref <= paper_ratio * TOL)
    return "held" if max(never_last[0]) < min(never_last[1]) and size_ok else "direction only"


def seed_mean_crossing(cell: tuple, threshold: float) -> Optional[int]:
    """The first crossing of the seed-mean curve of a cell_curves entry (span, curves, ...), or None."""
    span, curves = cell[0], cell[1]
    return first_crossing(across_seeds(curves)[0], threshold, span)


def evaluate(runs: list[dict], tasks=None, claims=CLAIMS, windows: Optional[dict] = None) -> list[dict]:
    """One row per claim; a judged one has steps: (crossing step or None,) for reach_by, (algo's, ref's) with
    paper_ratio for slower / faster. windows: {task: steps} the 100 bins span instead of the runs' budget."""
    cells = cell_curves(runs, windows)
    rows = []
    for c in claims:
        if tasks and c["task"] not in tasks:
            continue
        rows.append(judge_claim(c, cells))
    return rows


def judge_claim(c: dict, cells: dict) -> dict:
    """A claim's row on the cells (cell_curves): "no runs" where a cell it needs is missing, "beyond budget" where
    the runs stop before the step it needs, else the judgement of its kind (JUDGES)."""
    task, algo = c["task"], c["algo"]
    row = dict(
        id=c["id"], task=task, claim=c["text"], kind=c["kind"], algo=algo, measured="", seeds="", verdict=""
    )
    needed = [algo] + ([c["ref"]] if "ref" in c else [])
    if any((task, a) not in cells for a in needed):
        return {**row, "verdict": "no runs"}
    budget = min(cells[(task, a)][2] for a in needed)
    if c["needs"] is not None and budget < c["needs"]:
        return {
            **row,
            "measured": f"budget {fmt_step(budget)} < {fmt_step(c['needs'])}",
            "verdict": "beyond budget",
        }
    if c["kind"] not in JUDGES:
        raise ValueError(f"unknown claim kind {c['kind']!r}")
    return JUDGES[c["kind"]](c, row, cells, budget)


def _crossings(cells: dict, task: str, algo: str, thr: float) -> tuple:
    """A cell's crossings of thr: the seed-mean curve's first crossing, the per-seed ones, and those sorted as
    text."""
    span, curves, _ = cells[(task, algo)]
    seeds = [first_crossing(c, thr, span) for c in curves]
    spread = ", ".join(fmt_step(s) for s in sorted(seeds, key=lambda s: math.inf if s is None else s))
    return seed_mean_crossing(cells[(task, algo)], thr), seeds, spread


def _judged(row: dict, held: bool) -> dict:
    """The row with its verdict, and its strict verdict where the judgement set none."""
    verdict = "held" if held else "not held"
    return {**row, "verdict": verdict, "strict": row.get("strict") or verdict}


def _judge_reach_by(c: dict, row: dict, cells: dict, budget: int) -> dict:
    """reach_by: the seed-mean curve crosses the threshold by TOL x the paper's step."""
    algo, thr = c["algo"], c["threshold"]
    t, _, spread = _crossings(cells, c["task"], algo, thr)
    held = t is not None and t <= TOL * c["step"]
    row.update(
        measured=f"{algo} "
        + (f"reaches {thr:g} at {fmt_step(t)}" if t is not None else f"does not reach {thr:g}")
        + f" ({paper_step(c)})",
        seeds=spread,
        steps=(t,),
    )
    return _judged(row, held)


def paper_step(c: dict) -> str:
    """The paper's step of a reach_by claim: "paper 1.50M", or for a share of its budget "paper: 1/3 of its
    budget, 1.67M if that is 5.00M"."""
    if not c.get("share"):
        return f"paper {fmt_step(c['step'])}"
    return f"paper: {c['share']} of its budget, {fmt_step(c['step'])} if that is {fmt_step(PAPER_BUDGET)}"


def _judge_order(c: dict, row: dict, cells: dict, budget: int) -> dict:
    """slower / faster: the faster algorithm crosses the threshold, and before the slower one (or the slower one
    never does), over the span both cells cover; its strict verdict weighs the ratio and the seeds (STRICT)."""
    task, algo, thr = c["task"], c["algo"], c["threshold"]
    t, seeds, spread = _crossings(cells, task, algo, thr)
    t_ref, seeds_ref, spread_ref = _crossings(cells, task, c["ref"], thr)
    # compare over the span both cells cover: a crossing past the shorter one was not seen by the other
    t, t_ref = (None if x is None or x > budget else x for x in (t, t_ref))
    if c["needs"] is None and t is None and t_ref is None and budget < PAPER_BUDGET:
        return {
            **row,
            "verdict": "beyond budget",
            "measured": f"neither reaches {thr:g} by "
            f"{fmt_step(budget)} (the paper gives no step; its budget: {fmt_step(PAPER_BUDGET)})",
        }
    pairs = ((t, seeds), (t_ref, seeds_ref))
    (slow, slow_seeds), (fast, fast_seeds) = pairs if c["kind"] == "slower" else pairs[::-1]
    held = fast is not None and (slow is None or slow > fast)
    row["strict"] = strict_verdict(
        "held" if held else "not held", slow, fast, fast_seeds, slow_seeds, c.get("ratio")
    )
    ratio = f"{t / t_ref:.2f}x" if t and t_ref else "n/a"
    paper = f", paper {c['ratio']:.2f}x" if "ratio" in c else ""
    row.update(
        measured=f"{algo} {fmt_step(t)} vs {c['ref']} {fmt_step(t_ref)}: {ratio}{paper}",
        seeds=f"{algo}: {spread}; {c['ref']}: {spread_ref}",
        steps=(t, t_ref),
        per_seed=(seeds, seeds_ref),
        reach=budget,
        paper_ratio=c.get("ratio"),
    )
    return _judged(row, held)


def _judge_never_above(c: dict, row: dict, cells: dict, budget: int) -> dict:
    """never_above: the seed-mean curve's peak stays at or below the threshold."""
    algo, thr = c["algo"], c["threshold"]
    curves = cells[(c["task"], algo)][1]
    peak = float(np.nanmax(across_seeds(curves)[0]))
    row.update(
        measured=f"{algo} peak {peak:.1f} (threshold {thr:g})",
        seeds=", ".join(f"{np.nanmax(x):.0f}" for x in curves),
    )
    return _judged(row, peak <= thr)


def _judge_below_until(c: dict, row: dict, cells: dict, budget: int) -> dict:
    """below_until: the seed-mean curve lies below the reference's on average up to the paper's step."""
    task, algo = c["task"], c["algo"]
    span, curves, _ = cells[(task, algo)]
    k = int(np.ceil(c["step"] / span * N_BINS))
    diff = float(np.nanmean(across_seeds(curves)[0][:k] - across_seeds(cells[(task, c["ref"])][1])[0][:k]))
    row.update(measured=f"mean({algo} - {c['ref']}) over the first {fmt_step(c['step'])}: {diff:.1f}")
    return _judged(row, diff < 0)


# a claim's kind -> its judgement (c, row, cells, budget) -> the judged row
JUDGES = {
    "reach_by": _judge_reach_by,
    "slower": _judge_order,
    "faster": _judge_order,
    "never_above": _judge_never_above,
    "below_until": _judge_below_until,
}


def combined(row: dict) -> str:
    """The claim's verdict over both readings (our bins, and the paper's bin width in row["other"]): the less
    favourable of the two; a reading that cannot judge it (beyond budget, no runs) does not count."""
    mine, other = row.get("strict") or row["verdict"], row.get("other")
    theirs = (other.get("strict") or other["verdict"]) if other else None
    return max(mine, theirs, key=ORDER.index) if mine in ORDER and theirs in ORDER else mine


# ---- the claims, judged
def other_bin_widths() -> dict:
    """{task: steps the 100 bins span} for the claims' second reading (a crossing step moves with the bin width: the
    EWM(0.1) lags about 10 bins): Acrobot and CartPole over their first hparams.FIDELITY_BUDGET steps as in the
    fidelity study, MuJoCo at the paper's own bin width (its budget / 100), Pendulum none (budget not stated)."""
    return {
        **{t: hparams.FIDELITY_BUDGET for t in hparams.FIDELITY_TASKS},
        **{t: PAPER_BUDGET for t in hparams.tasks("mujoco")},
    }


def change_cause(c: dict) -> str:
    """Why a claim's verdict differs at the other span: "run length" where that span is shorter than the runs and the
    claim looks past it (a "never above" claim; a crossing step after the span), "bin width" otherwise."""
    span = other_bin_widths()[c["task"]]
    past = c["kind"] == "never_above" or any(t is not None and t > span for t in c.get("steps", ()))
    return "run length" if span < aggregate.stage1_budget(c["task"]) and past else "bin width"


def evaluate_claims(d: Data, at_5M: list = ()) -> list[dict]:
    """The paper's claims on the stage-1 runs, HalfCheetah SMAC / AC-CG from the 5M block where it has runs (its claims
    need 2M and 3.4M steps); `other`: the same claim at other_bin_widths() (None for a task without one). `at_5M`:
    MuJoCo at 5M's block A rows, which replace the claims that need more than the stage-1 budget."""
    block = {(r["task"], r["algo"]) for r in d.headline}
    runs = [r for r in d.runs if (r["task"], r["algo"]) not in block] + d.headline
    widths = other_bin_widths()
    other = {r["id"]: r for r in evaluate(runs, tasks=tuple(widths), windows=widths)}
    five = {r["id"]: {"seeds": "", **r, "other": None, "at_5M": True} for r in at_5M}
    return [five.get(r["id"], {**r, "other": other.get(r["id"])}) for r in evaluate(runs)]


def pre_run_verdict(c: dict) -> str:
    """A claim's verdict under the rules fixed before its runs: RULES at our bins for the stage-1 claims
    (the stricter names and the less-favourable-span rule came after those runs were in); the 5M claims' rules,
    stricter names included, were pre-registered before their runs (benchmark/preregistration_5M.toml)."""
    return combined(c) if c.get("at_5M") else c["verdict"]


def analyze(where, done: dict) -> dict:
    """The claims on the grid study's runs (its Data: stage-1 runs, their cells, the 5M headline block) with MuJoCo
    at 5M's block A in place of the claims beyond the stage-1 budget: {"claims": evaluate_claims' rows, "data": the
    grid study's Data (its `claims` set to them, as claims_data reads it), "logs": the stage-1 logs dir it read}."""
    d = done["grid"]["data"]
    res5 = done["mujoco_5M"]["res5"]
    d.claims = evaluate_claims(d, res5["claims"])
    return {"claims": d.claims, "data": d, "logs": done["grid"]["logs"]}


# ---- report/claims.md
def claim_data(r: dict) -> dict:
    """One claim's row: evaluate_claims' texts, its verdict at our bins and the stricter name where that differs
    (None where not), the other span's (None where there is none; `at_5M`: judged on the 5M runs), the final."""
    other = r.get("other")
    if other is not None and not r.get("at_5M"):
        other = {
            "verdict": other["verdict"],
            "strict": other["strict"] if other.get("strict") not in (None, other["verdict"]) else None,
            "measured": other["measured"] or None,
            "cause": change_cause(r) if other["verdict"] != r["verdict"] else None,
        }
    else:
        other = None
    return {
        "task": r["task"],
        "claim": r["claim"],
        "measured": r["measured"],
        "seeds": r["seeds"],
        "verdict": r["verdict"],
        "strict": r["strict"] if r.get("strict") not in (None, r["verdict"]) else None,
        "at_5M": bool(r.get("at_5M")),
        "other": other,
        "final": combined(r),
    }


def claims_data(d: Data, logs_dir: str) -> dict:
    """Every number, list and word of report/claims.md: the claims (d.claims) with their rules and bins, and the
    5M block (headline_data)."""
    head = os.path.relpath(os.path.join(REPO, hparams.load()["meta"]["headline"]["logs"]), REPO)
    block = max(int(r["job_budget"] or r["last_step"]) for r in d.headline) // 100 if d.headline else None
    return {
        "logs": os.path.relpath(logs_dir, REPO),
        "runs": len(d.runs),
        "headline_logs": head,
        "headline_runs": len(d.headline),
        "n_5M": sum(bool(c.get("at_5M")) for c in d.claims),
        "waiting": any(combined(c) == "waiting" for c in d.claims),
        "not_judged": NOT_JUDGED,
        "rules": [[k, rule] for k, rule in RULES.items()],
        "strict_rules": [[k, rule] for k, rule in STRICT.items()],
        "bins": [{"task": t, "bin": aggregate.stage1_budget(t) // 100} for t in hparams.tasks()],
        "block_bin": block,
        "fidelity_tasks": list(hparams.FIDELITY_TASKS),
        "fidelity_budget": hparams.FIDELITY_BUDGET,
        "fidelity_bin": hparams.FIDELITY_BUDGET // 100,
        "paper_budget": PAPER_BUDGET,
        "paper_bin": PAPER_BUDGET // 100,
        "claims": [claim_data(c) for c in d.claims],
        "headline": headline_data(d),
    }


def headline_data(d: Data) -> dict:
    """The 5M block: HalfCheetah SMAC and AC-CG at the paper's budget, their cells beside the paper's table
    (cell_data), each finished seed's peak → final, and SMAC − AC-CG by Welch's test beside the paper's gap; its
    speed claims are in the claims table."""
    block = hparams.load()["meta"]["headline"]
    budget, tasks = int(block["budget"]), block["tasks"].split(",")
    out = {
        "tasks": tasks,
        "algos": [hparams.algo_label(a) for a in block["algos"].split(",")],
        "budget": budget,
        "bin": budget // 100,
        "logs": block["logs"],
        "runs": len(d.headline),
        "expected": N_HEADLINE,
        "run": bool(d.headline),
        "rows": [],
        "peaks": [],
        "gaps": [],
    }
    if not d.headline:
        return out
    budgets = {t: budget for t in tasks}
    cells = aggregate.load_cells(d.headline, budgets=budgets)
    for r in aggregate.cell_rows(cells, budgets=budgets):
        out["rows"].append({"task": r["task"], "algo": hparams.algo_label(r["algo"]), "cell": cell_data(r)})
    for t, a in sorted(cells, key=lambda k: (k[0], hparams.algos().index(k[1]))):
        p = aggregate.peaks(cells[(t, a)], budget)
        out["peaks"].append(
            {
                "task": t,
                "algo": hparams.algo_label(a),
                "seeds": [{"seed": s, "peak": pk, "step": at, "final": f} for s, pk, at, f in p],
                "drop": float(np.mean([pk - f for _, pk, _, f in p])),
            }
        )
    for t in tasks:
        finals = {
            a: [f for _, f, _ in cells[(t, a)]["finished"]] if (t, a) in cells else [] for a in ("smac", "cg")
        }
        w = stats.welch_test(finals["smac"], finals["cg"])
        if w is not None:
            out["gaps"].append(
                {
                    "task": t,
                    "diff": w["diff"],
                    "p": w["p"],
                    "n": [len(finals["smac"]), len(finals["cg"])],
                    "paper": hparams.paper_result(t, "smac")[0] - hparams.paper_result(t, "cg")[0],
                }
            )
    return out


def write(result: dict, where) -> list[str]:
    """report/claims.md (claims_data rendered by templates/claims.md.j2), and where.commit,
    benchmark/results/claims.json."""
    data = claims_data(result["data"], result["logs"])
    title = "The paper's timestep claims, claim by claim, and the 5M block"
    return pages.write_study_page(where, "claims.md", title, data, CLAIMS_JSON, PAGE_DIGITS)


# ---- the held claims: does each show SMAC ahead?
def crossing_pair(
    task: str, algos: tuple, threshold: float, runs: list, windows: Optional[dict] = None
) -> dict:
    """{algo: the seed-mean crossing of `threshold` (None: never)} over `runs`, at windows[task] / 100 bins."""
    cells = aggregate.cell_curves([r for r in runs if r["task"] == task and r["algo"] in algos], windows)
    return {a: seed_mean_crossing(cells[(task, a)], threshold) for a in algos if (task, a) in cells}


def bin_width(c: dict, other: bool) -> int:
    """The bin width of a claim's reading: its runs' budget / 100, the other reading's span / 100."""
    if other:
        return other_bin_widths()[c["task"]] // N_BINS
    budget = PAPER_BUDGET if c.get("at_5M") else aggregate.stage1_budget(c["task"])
    return budget // N_BINS


def _reach_by_reading(c: dict, d: Data, claim: dict, out: dict) -> dict:
    """held_reading of a "reach_by" claim: another algorithm's milestone, SMAC's rival first in our runs, or ahead."""
    if c["algo"] != "smac":
        smac = aggregate.by_cell(d.cells).get((c["task"], "smac"))
        return {
            **out,
            "reason": "another algorithm's milestone",
            "algo": hparams.algo_label(c["algo"]),
            "step": c["steps"][0],
            "smac_final": smac["mean"] if smac else None,
        }
    rival = claim.get("rival")
    budget = aggregate.stage1_budget(c["task"])
    ours = crossing_pair(c["task"], ("smac", rival), claim["threshold"], d.runs) if rival else {}
    if ours.get(rival) is None or ours[rival] >= c["steps"][0]:
        return {**out, "ahead": True}
    paper = crossing_pair(c["task"], ("smac", rival), claim["threshold"], d.runs, {c["task"]: PAPER_BUDGET})
    return {
        **out,
        "reason": "our rival first",
        "rival": hparams.algo_label(rival),
        "step": c["steps"][0],
        "budget": budget,
        "bins": [budget // N_BINS, PAPER_BUDGET // N_BINS],
        "rival_steps": [ours[rival], paper.get(rival)],
        "smac_steps": [ours.get("smac"), paper.get("smac")],
    }


def _last(steps):  # a seed that never crosses comes after every seed that does
    return max(math.inf if t is None else t for t in steps)


def _first(steps):
    return min(math.inf if t is None else t for t in steps)


def _never(readings: list, slow_i: int) -> Optional[dict]:
    """The reading whose slower algorithm has the most seeds that never cross (its seed mean's crossing step, the
    bin width, whether that step is the end of the span), None where every seed crosses."""
    never = None
    for row, width in readings:
        n = sum(t is None for t in row["per_seed"][slow_i])
        if n and (never is None or n > never["n"]):
            t = row["steps"][slow_i]
            never = {
                "n": n,
                "of": len(row["per_seed"][slow_i]),
                "bin": width,
                "step": t,
                "end": t >= row["reach"],
            }
    return never


def _speed_reading(c: dict, out: dict) -> dict:
    """held_reading of a "slower" / "faster" claim: SMAC ahead where it is the faster algorithm and every one of its
    seeds crosses before every seed of the slower one at each bin width read."""
    slow_i = 0 if c["kind"] == "slower" else 1
    slow_algo = c["algo"] if c["kind"] == "slower" else c.get("ref", "smac")
    fast_algo = c.get("ref", "smac") if c["kind"] == "slower" else c["algo"]
    readings = [(row, bin_width(c, other)) for row, other in ((c, False), (c.get("other"), True))]
    readings = [(row, width) for row, width in readings if row and "per_seed" in row]
    separated = [
        row for row, _ in readings if _last(row["per_seed"][1 - slow_i]) < _first(row["per_seed"][slow_i])
    ]
    never = _never(readings, slow_i)
    out.update(slow=hparams.algo_label(slow_algo), never=never)
    if fast_algo == "smac" and readings and len(separated) == len(readings):
        seeds = readings[0][0]["per_seed"]
        span = {
            k: [min((t for t in s if t is not None), default=None), None if None in s else max(s)]
            for k, s in (("fast", seeds[1 - slow_i]), ("slow", seeds[slow_i]))
        }
        return {
            **out,
            "ahead": True,
            "reason": "every SMAC seed first",
            "bins": [w for _, w in readings],
            "smac_seeds": span["fast"],
            "slow_seeds": span["slow"],
        }
    return {**out, "reason": "seeds never cross" if never else None}


def held_reading(c: dict, d: Data) -> dict:
    """Whether a held claim shows SMAC ahead, and the reason (a word the template knows) with its numbers.
    reach_by: another algorithm's milestone (SMAC's own final beside it) is not SMAC ahead ("another algorithm's
    milestone"), nor is SMAC reaching a rival's paper final that our rival reaches sooner in its stage-1 runs
    ("our rival first"; both crossings also at the paper's bin width). slower / faster: SMAC ahead where it is the
    faster algorithm and every one of its seeds crosses before every seed of the slower one at each bin width read
    ("every SMAC seed first"); a slower algorithm's crossing that only its seed mean makes (seeds that never cross)
    is given as `never`, since it weakens the ratio, not the order."""
    claim = next((x for x in CLAIMS if x["id"] == c.get("id")), {})
    out = {
        "task": c["task"],
        "threshold": claim.get("threshold", c.get("threshold")),
        "ahead": False,
        "reason": None,
        "never": None,
    }
    if c["kind"] == "reach_by":
        return _reach_by_reading(c, d, claim, out)
    if c["kind"] not in ("slower", "faster"):
        return out
    return _speed_reading(c, out)


# ---- the verdict
def claims_row(claims: list, block: tuple = ()) -> dict:
    """The verdict's row "claims": every claim's final word (the stricter names, the less favourable span), beside
    the words under the rules fixed before the runs, and the 5M claims' words with their tasks; how many claims
    rest on 5M runs (the 5M claims and those of the 5M block's tasks, `block`) and the stage-1 budgets
    ([min, max]) of the others."""
    strict = [vd.CLAIM_WORD[combined(c)] for c in claims]
    five = [c for c in claims if c.get("at_5M")]
    stage1 = [
        aggregate.stage1_budget(c["task"]) for c in claims if not c.get("at_5M") and c["task"] not in block
    ]
    return {
        "id": "claims",
        "numbers": {
            "n": len(claims),
            "pre_run": vd.tally([vd.CLAIM_WORD[pre_run_verdict(c)] for c in claims]),
            "at_5M": vd.tally([vd.CLAIM_WORD[combined(c)] for c in five]),
            "n_5M": len(five),
            "at_5M_tasks": {
                w: list(dict.fromkeys(c["task"] for c in five if vd.CLAIM_WORD[combined(c)] == w))
                for w, _ in vd.tally([vd.CLAIM_WORD[combined(c)] for c in five])
            },
            # the 5M claims no algorithm's seed mean reaches within 5M
            "at_5M_never": sum(bool(c.get("steps")) and all(t is None for t in c["steps"]) for c in five),
            "on_5M_runs": len(claims) - len(stage1),
            "stage1_budgets": [min(stage1), max(stage1)] if stage1 else None,
        },
        "answer": vd.tally(strict),
        "links": ["report/claims.md"],
    }


def held_point(claims: list, d: Data) -> dict:
    """The verdict's point "held": the held claims, split by whether each shows SMAC ahead (held_reading)."""
    held = [c for c in claims if combined(c) == "held"]
    readings = [held_reading(c, d) for c in held]
    return {
        "n": len(held),
        "ahead": [r for r in readings if r["ahead"]],
        "not_ahead": [r for r in readings if not r["ahead"]],
        "n_ahead": sum(r["ahead"] for r in readings),
        "n_not_ahead": sum(not r["ahead"] for r in readings),
    }


def verdict(result: dict, done: dict) -> dict:
    """The row "claims", the point "held" and the design's number of claims."""
    claims = result["claims"]
    return {
        "rows": [claims_row(claims, tuple({r["task"] for r in result["data"].headline}))],
        "points": {"held": held_point(claims, result["data"])},
        "design": {"claims": len(claims)},
    }


# ---- command line
def main(argv=None) -> int:
    """python -m benchmark.studies.claims LOGS [--raw]: the paper's timestep claims judged on any runs, as a table."""
    p = argparse.ArgumentParser(
        prog="python -m benchmark.studies.claims", description="the paper's timestep claims on some runs"
    )
    p.add_argument(
        "source", help="compact logs root ({task}/{algo}/seed{n}.json.gz) or, with --raw, a runs dir"
    )
    p.add_argument("--raw", action="store_true", help="source is a sweep runs directory")
    a = p.parse_args(argv)
    claims = evaluate(discover(a.source) if a.raw else compact.discover_logs(a.source))
    print("\n".join(markdown_table(CLAIM_HEADERS, [claim_cells(r) for r in claims])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
