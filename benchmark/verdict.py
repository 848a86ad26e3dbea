"""The verdict's vocabulary and assembly: the words an answer may use, their tally, and the table the studies' rows
make (rendered by benchmark/templates/verdict.md.j2 into REPORT.md and README's Results block).

A study module (benchmark/studies/) that answers one of the verdict's questions returns its row(s) from
`verdict(result, done)`; `assemble` puts every study's rows, points and design keys in the table's order. This module
knows the words and the order, not the studies.
"""

from __future__ import annotations

import os
from collections import Counter

from benchmark import hparams, pages
from benchmark.stats import num

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALPHA = 0.05
EQUIV_MARGIN = 0.1  # normalized score, the margin of the pre-registration (benchmark/preregistration.toml)
VERDICT_JSON = os.path.join(REPO, "benchmark", "results", "verdict.json")
README = os.path.join(REPO, "README.md")
README_MARKERS = ("<!-- results:begin -->", "<!-- results:end -->")
ROWS = ("claims", "table", "headline", "sgd_stage1", "sgd_5M", "rank1", "ell")  # the table's rows, in order
POINTS = ("held", "below_random", "step_size", "curvature")  # the prose points, in order
SUMMARY = ("headline", "claims", "table", "sgd_5M", "rank1", "curvature")  # the opening sentences' parts
DESIGN = (  # the tests' settings, in order
    "claims",
    "alpha",
    "margin",
    "seeds",
    "seeds_5M",
    "paired_seeds",
    "paired_budget",
    "damping",
    "mujoco_budget",
    "paper_budget",
    "reading",
)
ARM = {
    "sgd-matched": "SGD with step η/λ"
}  # the verdict's name for an algorithm where it differs from algo_label
CLAIM_WORD = {  # a claim's verdict (studies/claims.py: evaluate, combined) as the verdict says it
    "held": "held",
    "direction only": "on direction only",
    "baseline never reaches it": "baseline never reaches it",
    "not held": "not held",
    "waiting": "not yet judged",
    "beyond budget": "beyond budget",
    "no runs": "no runs",
}
EQUIVALENT = f"equivalent at ±{EQUIV_MARGIN:g}"
DIFFERENT = "different (Holm)"
NOT_SHOWN = "not shown either way"
LITERAL_WORD = {  # the pre-registered study's literal_5M verdict
    "pending (runs not all in)": "not yet judged",
    "headline reproduced under the literal reading": "reproduced",
    "normalization caused the failure": "normalization caused the failure",
    "the literal reading does not rescue the headline": "not rescued",
}
# whether a task's equivalence of SMAC and SGD with step eta/lambda can speak to curvature (curvature_word)
SPEAKS, AT_BEST, FAIL_ALIKE = "can speak to curvature", "both at the task's best", "both fail alike"
HALF = 0.5  # normalized: half the best of the paper's table
# An amendment made after the runs: the share of SGD's step g/lambda that the rank-1 term changes (step_change) must
# be at least STEP_CHANGE, else SMAC's step is SGD's to within the precision the paper states its step sizes to
# (one significant digit: 6e-4 and 7e-4 are 15 % apart), and the arms' equivalence holds by construction.
STEP_CHANGE = 0.1
BARELY = f"rank-1 term changes the step by under {100 * STEP_CHANGE:g} %"
DIAG_WORD = {"grows late in training": "grows", "shrinks": "shrinks", "no change shown": "no change shown"}
VOCAB = (  # every word an answer may use, in the order counts are listed
    *CLAIM_WORD.values(),
    EQUIVALENT,
    DIFFERENT,
    NOT_SHOWN,
    "secondary passes",
    "secondary fails",
    "different (Welch)",
    "below the paper's",
    "above the paper's",
    "not shown to differ",
    "reproduced",
    "not reproduced",
    *LITERAL_WORD.values(),
    "dose-response",
    "no dose-response detected",
    *DIAG_WORD.values(),
    SPEAKS,
    AT_BEST,
    FAIL_ALIKE,
    BARELY,
    # the notes a row's task may carry
    "both arms below the random policy",
    "SGD arm rerun to pair the seeds (amendment 1)",
    f"{EQUIVALENT} at the stage-1 budget",
)
ORDER = {w: i for i, w in enumerate(VOCAB)}


def tally(words: list[str]) -> list[list]:
    """[[word, count], ...] in VOCAB's order, zeros left out."""
    by = Counter(words)
    return [[w, by[w]] for w in dict.fromkeys(VOCAB) if by[w]]


def tallied_row(row_id: str, numbers: dict, items: list[dict], link: str) -> dict:
    """A verdict row whose answer counts its items' answers (tally) out of how many there are."""
    answers = [r["answer"] for r in items]
    return {"id": row_id, "numbers": numbers, "answer": tally(answers), "of": len(answers), "links": [link]}


def block_c_word(r: dict) -> str:
    """A paired TOST row (stats.paired plus p_holm): equivalent at the margin, different after Holm, or neither."""
    if r["equivalent"]:
        return EQUIVALENT
    return DIFFERENT if num(r.get("p_holm")) is not None and r["p_holm"] < ALPHA else NOT_SHOWN


def tost_page_word(r: dict, alpha: float) -> str:
    """A paired TOST row's word on a study's page, in its pre-registration's words: "equivalent" at the margin,
    "different (Holm)" where the Holm-adjusted p is below alpha, else "inconclusive"."""
    if r["equivalent"]:
        return "equivalent"
    return "different (Holm)" if r["p_holm"] < alpha else "inconclusive"


def tost_verdict(r: dict, p_holm: float, margin: float, alpha: float) -> str:
    """A paired TOST row's verdict with its numbers: equivalent at the margin, different where the Holm-adjusted p
    is below alpha, else inconclusive, with the margin its interval does lie within."""
    if r["equivalent"]:
        return f"equivalent at ±{margin:g}"
    if p_holm < alpha:
        return f"different (Holm p {p_holm:.3g})"
    return f"inconclusive (equivalence only at ±{r['reach']:.2f})"


def count(row: dict, word: str) -> int:
    """How many of a tallied row's items answered `word` (0 where none)."""
    return dict(row["answer"]).get(word, 0)


def summary(rows: dict, points: dict, declared: dict | None = None) -> dict:
    """The numbers of the verdict's opening sentences, read from its rows so that they say no more than the table:
    the headline's answer, the claims held (strict names, and under the rules fixed before the runs), SMAC against
    SGD with step η/λ at 5M (equivalent, those still equivalent at Holm-adjusted TOST p, different after Holm, of
    how many tasks), and at the paper's smallest λ (neither shown, of how many; the λ slope's answer); "curvature":
    DIFFERENT where SMAC differs from SGD with step η/λ in either, else NOT_SHOWN. `declared`: the numbers the
    studies declare for the sentences beside their rows ({part: value}, a dict value added to the part's own), such
    as the MuJoCo cells at 5M that differ from the paper's table and how many of the equivalent tasks can speak to
    curvature. A part whose row is missing and that no study declares is None."""
    out = dict.fromkeys(SUMMARY)
    if "headline" in rows:
        h = rows["headline"]
        out["headline"] = {"answer": h["answer"], "smac": h["numbers"]["smac"], "cg": h["numbers"]["cg"]}
        out["headline"]["p"] = h["numbers"]["p"]
    if "claims" in rows:
        c = rows["claims"]
        held = count(c, CLAIM_WORD["held"])
        out["claims"] = {
            "held": held,
            "of": c["numbers"]["n"],
            "held_pre_run": dict(c["numbers"]["pre_run"]).get("held", 0),
        }
    if "sgd_5M" in rows:
        r = rows["sgd_5M"]
        out["sgd_5M"] = {"equivalent": count(r, EQUIVALENT), "different": count(r, DIFFERENT), "of": r["of"]}
        out["sgd_5M"]["holm"] = [
            t["task"] for t in r["numbers"]["tasks"] if t["answer"] == EQUIVALENT and t["p_tost_holm"] < ALPHA
        ]
    if "rank1" in rows:
        r = rows["rank1"]
        out["rank1"] = {
            "neither": count(r, NOT_SHOWN),
            "of": r["of"],
            "slope": r["numbers"]["slope"]["answer"],
        }
    if out["sgd_5M"] and out["rank1"]:  # a curvature effect: SMAC different from SGD with step η/λ somewhere
        shown = out["sgd_5M"]["different"] + count(rows["rank1"], DIFFERENT)
        out["curvature"] = DIFFERENT if shown else NOT_SHOWN
    for part, value in (declared or {}).items():
        out[part] = {**out[part], **value} if isinstance(out[part], dict) else value
    return out


def curvature_word(arms: list[float], best: float, change: float) -> str:
    """Whether an equivalence of SMAC and SGD with step eta/lambda on a task can speak to curvature, from the arms'
    seed-mean normalized finals `arms`, `best`, the best seed-mean final any algorithm reaches on that task in the
    same runs, and `change`, the share of SGD's step that SMAC's rank-1 term changes there (aggregate.step_change):
    only where both arms end at least HALF (half the best of the paper's table; else both fail alike, FAIL_ALIKE),
    both more than the margin below `best` (else both sit at the best the task shows, AT_BEST, where no algorithm is
    seen to do better and the arms cannot differ by more than the margin) and the rank-1 term changes the step by at
    least STEP_CHANGE (else, or where not measured, BARELY: the arms take nearly the same step)."""
    if min(arms) < HALF:
        return FAIL_ALIKE
    if max(arms) >= best - EQUIV_MARGIN:
        return AT_BEST
    if not change >= STEP_CHANGE:
        return BARELY
    return SPEAKS


def curvature_cells(rows: dict) -> dict:
    """{task: {"means": {algo: seed-mean normalized final}, "step_change": aggregate.step_change of SMAC's runs}} of
    the tasks where the two arms are equivalent -> {"groups": {word: [per task the arms' means, the best, its
    algorithm, how many algorithms ran and the step change]} by curvature_word's answer in VOCAB's order; "can": the
    tasks that can speak to curvature, "n_can": how many}."""
    cells = []
    for task, row in rows.items():
        m = row["means"]
        top = max(m, key=m.get)
        arms = [m["smac"], m["sgd-matched"]]
        cells.append(
            {
                "task": task,
                "arms": arms,
                "best": m[top],
                "best_algo": ARM.get(top, hparams.algo_label(top)),
                "n_algos": len(m),
                "change": row["step_change"],
                "answer": curvature_word(arms, m[top], row["step_change"]),
            }
        )
    can = [c["task"] for c in cells if c["answer"] == SPEAKS]
    return {
        "groups": {w: [c for c in cells if c["answer"] == w] for w, _ in tally([c["answer"] for c in cells])},
        "can": can,
        "n_can": len(can),
    }


def assemble(parts: list[dict]) -> dict:
    """The verdict as data from the studies' parts ({"rows", "points", "design", "summary"}, each optional):
    {"design": the tests' settings, "rows": one per question in ROWS' order, "points": the prose points in POINTS'
    order, "summary": the opening sentences' numbers (summary, with the parts' declared numbers)}. A row, point,
    design key or summary part that ROWS, POINTS, DESIGN or SUMMARY does not list is an error (ValueError naming it),
    never left out."""
    rows, points, design, declared = {}, {}, {}, {}
    for part in parts:
        for row in part.get("rows", ()):
            rows[row["id"]] = row
        points.update(part.get("points", {}))
        design.update(part.get("design", {}))
        declared.update(part.get("summary", {}))
    for what, got, listed, name in (
        ("row", rows, ROWS, "ROWS"),
        ("point", points, POINTS, "POINTS"),
        ("design key", design, DESIGN, "DESIGN"),
        ("summary part", declared, SUMMARY, "SUMMARY"),
    ):
        unlisted = [k for k in got if k not in listed]
        if unlisted:
            raise ValueError(
                f"a study's verdict {what} {unlisted[0]!r} is not in verdict.{name}: list it there (and give it "
                "its words in templates/verdict.md.j2)"
            )
    return {
        "design": {k: design[k] for k in DESIGN if k in design},
        "rows": [rows[k] for k in ROWS if k in rows],
        "points": {k: points[k] for k in POINTS if k in points},
        "summary": summary(rows, points, declared),
    }


def render(data: dict, base: str = "", short: bool = False) -> str:
    """The verdict table and points (benchmark/templates/verdict.md.j2) from the verdict's JSON; `base`: the links'
    prefix (README: "benchmark/"); short: README's rendering (four points, the table's answers)."""
    return pages.render("verdict.md.j2", data, base=base, short=short)


def write_readme(data: dict, path: str = README) -> bool:
    """README's Results block, between README_MARKERS, rendered from `data`; False where the markers are absent."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    begin, end = README_MARKERS
    if begin not in text or end not in text:
        return False
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    new = f"{head}{begin}\n{render(data, base='benchmark/', short=True)}{end}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    return True
