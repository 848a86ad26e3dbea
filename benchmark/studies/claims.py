"""The paper's timestep claims: does each speed claim of the paper's Results section ("SMAC reaches X by step N",
"AC-CG learns twice as slowly", ...) hold in our runs, under the rules fixed with the claims before the stage-1 runs
(aggregate.RULES) and under the stricter names that came after them (aggregate.STRICT)?

The claims, their rules and their evaluation are aggregate.CLAIMS / evaluate / combined (the fidelity study and
MuJoCo at 5M judge them too). This study runs no jobs of its own: it judges the claims on the stage-1 grid's runs
(the grid study's, `python -m benchmark.sweep --study grid`) and HalfCheetah SMAC / AC-CG's 5M headline block, and
takes the claims that need more than the stage-1 budget from MuJoCo at 5M's block A (`--study mujoco-5M`), whose
rules, stricter names included, were pre-registered before those runs in benchmark/preregistration_5M.toml. The
stage-1 claims have no pre-registration toml: their rules are written down in aggregate.py.

The report writes report/claims.md (and, committing, benchmark/results/claims.json); the verdict's row "claims", its
point "held" and the design's count of claims are this study's.
"""

from __future__ import annotations

import math
import os
from typing import Optional

import numpy as np

from benchmark import aggregate, hparams, pages, stats
from benchmark import verdict as vd
from benchmark.studies import REPO
from benchmark.studies.grid import PAGE_DIGITS, Data, cell_data

NAME = None  # its runs are the grid study's and MuJoCo at 5M's
PREREGISTRATION = (
    None  # the stage-1 claims' rules are aggregate.RULES; the 5M claims': preregistration_5M.toml
)
COMMITTED_ONLY = False

N_HEADLINE = 2 * 5  # the 5M block: HalfCheetah SMAC and AC-CG x 5 seeds
CLAIMS_JSON = os.path.join(REPO, "benchmark", "results", "claims.json")
CLAIMS_VOCAB = (  # every word report/claims.md's verdict columns may use (aggregate.evaluate, aggregate.combined)
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


# ---- the claims, judged
def other_bin_widths() -> dict:
    """{task: steps the 100 bins span} for the claims' second reading (a crossing step moves with the bin width: the
    EWM(0.1) lags about 10 bins): Acrobot and CartPole over their first hparams.FIDELITY_BUDGET steps as in the
    fidelity study, MuJoCo at the paper's own bin width (its budget / 100), Pendulum none (budget not stated)."""
    return {
        **{t: hparams.FIDELITY_BUDGET for t in hparams.FIDELITY_TASKS},
        **{t: aggregate.PAPER_BUDGET for t in hparams.tasks("mujoco")},
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
    other = {r["id"]: r for r in aggregate.evaluate(runs, tasks=tuple(widths), windows=widths)}
    five = {r["id"]: {"seeds": "", **r, "other": None, "at_5M": True} for r in at_5M}
    return [five.get(r["id"], {**r, "other": other.get(r["id"])}) for r in aggregate.evaluate(runs)]


def pre_run_verdict(c: dict) -> str:
    """A claim's verdict under the rules fixed before its runs: aggregate.RULES at our bins for the stage-1 claims
    (the stricter names and the less-favourable-span rule came after those runs were in); the 5M claims' rules,
    stricter names included, were pre-registered before their runs (benchmark/preregistration_5M.toml)."""
    return aggregate.combined(c) if c.get("at_5M") else c["verdict"]


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
        "final": aggregate.combined(r),
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
        "waiting": any(aggregate.combined(c) == "waiting" for c in d.claims),
        "not_judged": aggregate.NOT_JUDGED,
        "rules": [[k, rule] for k, rule in aggregate.RULES.items()],
        "strict_rules": [[k, rule] for k, rule in aggregate.STRICT.items()],
        "bins": [{"task": t, "bin": aggregate.stage1_budget(t) // 100} for t in hparams.tasks()],
        "block_bin": block,
        "fidelity_tasks": list(hparams.FIDELITY_TASKS),
        "fidelity_budget": hparams.FIDELITY_BUDGET,
        "fidelity_bin": hparams.FIDELITY_BUDGET // 100,
        "paper_budget": aggregate.PAPER_BUDGET,
        "paper_bin": aggregate.PAPER_BUDGET // 100,
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
    return {a: aggregate.seed_mean_crossing(cells[(task, a)], threshold) for a in algos if (task, a) in cells}


def bin_width(c: dict, other: bool) -> int:
    """The bin width of a claim's reading: its runs' budget / 100, the other reading's span / 100."""
    if other:
        return other_bin_widths()[c["task"]] // aggregate.N_BINS
    budget = aggregate.PAPER_BUDGET if c.get("at_5M") else aggregate.stage1_budget(c["task"])
    return budget // aggregate.N_BINS


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
    paper = crossing_pair(
        c["task"], ("smac", rival), claim["threshold"], d.runs, {c["task"]: aggregate.PAPER_BUDGET}
    )
    return {
        **out,
        "reason": "our rival first",
        "rival": hparams.algo_label(rival),
        "step": c["steps"][0],
        "budget": budget,
        "bins": [budget // aggregate.N_BINS, aggregate.PAPER_BUDGET // aggregate.N_BINS],
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
    claim = next((x for x in aggregate.CLAIMS if x["id"] == c.get("id")), {})
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
    strict = [vd.CLAIM_WORD[aggregate.combined(c)] for c in claims]
    five = [c for c in claims if c.get("at_5M")]
    stage1 = [
        aggregate.stage1_budget(c["task"]) for c in claims if not c.get("at_5M") and c["task"] not in block
    ]
    return {
        "id": "claims",
        "numbers": {
            "n": len(claims),
            "pre_run": vd.tally([vd.CLAIM_WORD[pre_run_verdict(c)] for c in claims]),
            "at_5M": vd.tally([vd.CLAIM_WORD[aggregate.combined(c)] for c in five]),
            "n_5M": len(five),
            "at_5M_tasks": {
                w: list(dict.fromkeys(c["task"] for c in five if vd.CLAIM_WORD[aggregate.combined(c)] == w))
                for w, _ in vd.tally([vd.CLAIM_WORD[aggregate.combined(c)] for c in five])
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
    held = [c for c in claims if aggregate.combined(c) == "held"]
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
