"""The pre-registered study at 1M steps (benchmark/preregistration.toml): does the rank-1 term of SMAC's step matter
where it is largest? Three blocks, their tests and decision rules fixed before the runs:

    equivalence  SMAC against SGD with step eta/lambda (sgd-matched) on the tasks where lambda = 0.01, 20 paired seeds
                 at 1M steps: paired TOST at the margin, Holm over the tasks for "different"
    lambda       HalfCheetah SMAC at lambda 0.001 to 1 with eta / lambda fixed: the paired difference against the
                 one sgd-matched cell per lambda, and the per-seed slope over log10 lambda (dose-response)
    literal_5M   HalfCheetah SMAC and AC-CG at 5M under the paper-literal reading: does it rescue the headline?

    python -m benchmark.sweep --study prereg --workers 2   # every block's runs, in the pre-registered order
    python -m benchmark.studies.prereg power                # the power calculation written into the toml
    python -m benchmark.studies.prereg analyze              # the pre-registered tests on the committed logs (JSON)

The runs' compact logs are committed under each block's `logs` directory; the report writes report/prereg.md (and,
committing, benchmark/results/prereg.json); the verdict's row "rank1" is this study's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np
from scipy import stats as sps

from benchmark import aggregate, compact, hparams, pages, stats
from benchmark import verdict as vd
from benchmark.studies import REPO

NAME = "prereg"
# the sweep's options its jobs honour (besides --blocks); the runs are the toml's
SWEEP_OPTIONS = ("runs_dir", "logs_dir", "checkpoint_every")
PREREGISTRATION = "benchmark/preregistration.toml"
COMMITTED_ONLY = False

load = hparams.load_prereg


# ---- the job list
def add_options(parser: argparse.ArgumentParser) -> None:
    """--blocks: which of the toml's blocks the sweep runs."""
    parser.add_argument(
        "--blocks", default="all", help="prereg: comma list of preregistration.toml's blocks or all"
    )


def jobs(args) -> list:
    """The study's jobs from the sweep's flags (--blocks, --runs-dir, --logs-dir, --checkpoint-every)."""
    from benchmark import sweep

    reg = load()
    return block_jobs(
        reg,
        sweep._names(args.blocks, reg["blocks"], "block"),
        args.runs_dir,
        sweep.logs_dir_of(args, REPO),
        args.checkpoint_every,
    )


def _lambda_cells(b: dict) -> list:
    """The lambda block's (sub-grid, task, algo, flags): one sub-grid per damping but the paper's 0.01 (block 1's
    runs serve it), named lam<value>; --damping becomes lam, --learning-rate eta_over_lambda * lam."""
    smac = hparams.lookup(b["task"], "smac")
    scale = {smac.index("--damping") + 1: 1, smac.index("--learning-rate") + 1: b["eta_over_lambda"]}
    return [
        (
            f"lam{lam:g}",
            b["task"],
            "smac",
            [f"{scale[i] * lam:g}" if i in scale else flag for i, flag in enumerate(smac)],
        )
        for lam in b["damping"]
        if lam != 1e-2
    ]


def block_jobs(reg: dict, blocks=None, runs_root=None, logs_root=REPO, checkpoint_every=10) -> list:
    """Every block's jobs in [execution] order ("block" or "block:seeds"), less the runs the toml reuses (block 1's
    seeds 1-5: the grid's; the lambda block's 0.01: block 1's); logs_root None: no compact logs."""
    from benchmark import sweep

    runs_root = runs_root or f"{sweep.DEFAULT_RUNS}_prereg"
    out = []
    for item in reg["execution"]["order"]:
        name, _, seeds = item.partition(":")
        b = reg["blocks"][name]
        seeds = hparams.parse_seeds(seeds or b["seeds"])
        if (blocks and name not in blocks) or not seeds:
            continue
        extra = list(reg["common"][f"reading_flags_{b['reading']}"])
        logs = sweep.logs_under(logs_root, b["logs"])
        # (sub-grid, task, algo, flags)
        if name == "lambda":
            cells = _lambda_cells(b)
        else:
            seeds = [s for s in seeds if s > 5] if name == "equivalence" else seeds
            cells = [
                ("", task, algo, hparams.lookup(task, algo))
                for task in ([b["task"]] if "task" in b else b["tasks"])
                for algo in b["algos"]
            ]
        out += [
            sweep._job(
                os.path.join(runs_root, name, sub),
                task,
                algo,
                s,
                b["budget"],
                flags,
                checkpoint_every,
                extra_flags=extra,
                logs_dir=sweep.logs_under(logs, sub),
                tag=sub or name,
            )
            for sub, task, algo, flags in cells
            for s in seeds
        ]
    return out


# ---- the power calculation
def power(reg: dict) -> dict:
    """{task: (sd of paired differences, seeds needed for margin 0.1, margin reachable at the cap)}."""
    p, out = reg["power"], {}
    sc = aggregate.scores([os.path.join(REPO, p["source_logs"])])
    for task in reg["blocks"]["equivalence"]["tasks"]:
        smac, matched = sc[(task, "smac")], sc[(task, "sgd-matched")]
        sd = float(np.array([smac[s] - matched[s] for s in p["source_seeds"]]).std(ddof=1))
        z = p["target_power"]

        def margin(n, sd=sd, z=z):
            return (sps.t.ppf(0.95, n - 1) + sps.t.ppf(0.5 + z / 2, n - 1)) * sd / np.sqrt(n)

        n = 3
        while margin(n) > reg["common"]["margin"]:
            n += 1
        out[task] = (sd, n, float(margin(p["seeds_per_side"])))
    return out


# ---- the pre-registered analysis: exactly the tests and decision rules of preregistration.toml
def step_fraction_removed(run: dict, damping: float) -> float:
    """Median over a run's updates of |l_bar|^2 / (lambda + |l_bar|^2): the fraction of the step's component
    along l_bar that the rank-1 term removes relative to SGD with step eta / lambda."""
    ell_sq = run["updates"]["ell_sq"]
    ell_sq = ell_sq[np.isfinite(ell_sq)]
    return float(np.median(ell_sq / (damping + ell_sq))) if ell_sq.size else math.nan


def step_change(run: dict, damping: float) -> tuple[float, float]:
    """Medians over a run's updates of cos(g, step) and of the whole step's relative change against SGD with
    step eta / lambda, |g/lambda - step| / |g/lambda|, from updates.csv's g_norm, step_norm and cos_g_step."""
    u = run["updates"]
    g, st, cos = u["g_norm"] / damping, u["step_norm"], u["cos_g_step"]
    change = np.sqrt(np.maximum(g**2 + st**2 - 2 * g * st * cos, 0.0)) / g
    ok = np.isfinite(change) & np.isfinite(cos)
    return (float(np.median(cos[ok])), float(np.median(change[ok]))) if ok.any() else (math.nan, math.nan)


def _equivalence(reg: dict, sc: dict) -> list:
    """Block 1: per task SMAC - sgd-matched paired over the block's seeds, TOST at the margin at the toml's
    interval level, Holm over the tasks for "different", the power calculation's reachable margin beside."""
    margin, alpha = reg["common"]["margin"], reg["common"]["alpha"]
    level = reg["common"]["ci_level_tost"]  # the TOST interval's level, as the page states it
    b = reg["blocks"]["equivalence"]
    seeds = hparams.parse_seeds(b["seeds"])
    rows = [
        {
            "task": t,
            **stats.paired(sc.get((t, "smac"), {}), sc.get((t, "sgd-matched"), {}), seeds, margin, level),
        }
        for t in b["tasks"]
    ]
    for r, p_adj in zip(rows, stats.holm([r["p"] for r in rows])):
        reach = reg["power"]["reachable_margin_at_20"][r["task"]]
        r.update(
            reach_margin=reach,
            equivalent_reach=r["ci"][0] > -reach and r["ci"][1] < reach,
            p_holm=p_adj,
            complete=r["n"] == len(seeds),
            verdict=vd.tost_verdict(r, p_adj, margin, alpha),
        )
    return rows


def _lambda(reg: dict, sc: dict, root: str) -> dict:
    """Block 2: per lambda HalfCheetah SMAC against the one sgd-matched cell (paired TOST) with the step's
    removed fraction and change; the per-seed slope over log10 lambda, t-tested against 0."""
    margin, alpha = reg["common"]["margin"], reg["common"]["alpha"]
    level = reg["common"]["ci_level_tost"]
    b2 = reg["blocks"]["lambda"]
    seeds2 = hparams.parse_seeds(b2["seeds"])
    control = sc.get(("HalfCheetah", "sgd-matched"), {})
    per_lam, fractions = {}, {}
    for lam in b2["damping"]:
        s2 = (
            sc
            if lam == 1e-2
            else aggregate.scores([os.path.join(root, b2["logs"], f"lam{lam:g}")], b2["budget"])
        )
        smac, runs = s2.get(("HalfCheetah", "smac"), {}), s2.get(("HalfCheetah", "smac", "runs"), {})
        per_lam[lam] = {"smac": smac, **stats.paired(smac, control, seeds2, margin, level)}
        fr = [step_fraction_removed(runs[s], lam) for s in seeds2 if s in runs]
        ch = [step_change(runs[s], lam) for s in seeds2 if s in runs]
        fractions[lam] = {
            "removed": (stats.mean_or_nan(fr), min(fr, default=math.nan), max(fr, default=math.nan)),
            "cos": stats.mean_or_nan([c for c, _ in ch]),
            "change": stats.mean_or_nan([c for _, c in ch]),
        }
    full = [s for s in seeds2 if s in control and all(s in per_lam[lam]["smac"] for lam in b2["damping"])]
    x = np.log10(np.array(b2["damping"]))
    slopes = [
        float(np.polyfit(x, [per_lam[lam]["smac"][s] - control[s] for lam in b2["damping"]], 1)[0])
        for s in full
    ]
    slope = {"n": len(slopes), "complete": len(slopes) == len(seeds2)}
    if len(slopes) >= 2:
        res = sps.ttest_1samp(slopes, 0.0)
        ci = res.confidence_interval(0.95)
        slope.update(mean=float(np.mean(slopes)), p=float(res.pvalue), ci=(float(ci.low), float(ci.high)))
        slope["verdict"] = (
            "the rank-1 term matters (dose-response): slope %+.3f per decade, p %.3g"
            % (slope["mean"], slope["p"])
            if slope["p"] < alpha
            else "no dose-response detected: slope %+.3f per decade of lambda, 95 %% CI [%+.3f, %+.3f]"
            % (slope["mean"], *slope["ci"])
        )
    return {"per_lambda": per_lam, "fractions": fractions, "slope": slope}


def _literal_5M(reg: dict, root: str) -> dict:
    """Block 3: HalfCheetah SMAC and AC-CG at 5M under the literal reading, their raw finals against the paper's
    (Welch from its summary), against the normalized reading's 5M block, and SMAC against AC-CG; the toml's words."""
    alpha = reg["common"]["alpha"]
    b3 = reg["blocks"]["literal_5M"]
    lit, norm = (
        aggregate.scores([os.path.join(root, d)], b3["budget"])
        for d in (b3["logs"], "benchmark/results/logs/norm_5M")
    )
    res3 = {}
    for algo in b3["algos"]:
        raw, raw_norm = (
            [v for v in scores.get(("HalfCheetah", algo, "raw"), {}).values() if v is not None]
            for scores in (lit, norm)
        )
        paper = hparams.paper_result("HalfCheetah", algo)
        res3[algo] = {
            "finals": raw,
            "n": len(lit.get(("HalfCheetah", algo), {})),
            "mean": stats.mean_or_nan(raw),
            "std": float(np.std(raw, ddof=1)) if len(raw) > 1 else math.nan,
            "ci": stats.t_mean_ci(raw),
            "vs_norm": stats.welch_test(raw, raw_norm),
            "norm_mean": float(np.mean(raw_norm)),
            "vs_paper": stats.welch_vs_summary(raw, paper[0], paper[1], 5),
            "paper": paper,
        }
    s = res3["smac"]
    w = res3["smac_vs_cg"] = stats.welch_test(s["finals"], res3["cg"]["finals"])
    res3["complete"] = all(res3[a]["n"] == len(hparams.parse_seeds(b3["seeds"])) for a in b3["algos"])
    reproduced = bool(w and w["diff"] > 0 and w["p"] < alpha and s["ci"][0] <= s["paper"][0] <= s["ci"][1])
    caused = bool(s["vs_norm"] and s["vs_norm"]["diff"] > 0 and s["vs_norm"]["p"] < alpha)
    res3["verdict"] = (
        "pending (runs not all in)"
        if not res3["complete"]
        else "headline reproduced under the literal reading"
        if reproduced
        else "normalization caused the failure"
        if caused
        else "the literal reading does not rescue the headline"
    )
    return res3


def results(reg: dict, root: str = REPO) -> dict:
    """Every block of preregistration.toml on the compact logs under root: {"equivalence": block 1's rows,
    "lambda": block 2's per-lambda tests, removed fractions and slope, "literal_5M": block 3}."""
    b = reg["blocks"]["equivalence"]
    sc = aggregate.scores(
        [os.path.join(root, "benchmark/results/logs/norm"), os.path.join(root, b["logs"])], b["budget"]
    )
    return {
        "equivalence": _equivalence(reg, sc),
        "lambda": _lambda(reg, sc, root),
        "literal_5M": _literal_5M(reg, root),
    }


def rank1_figures(runs: list[dict]) -> list[dict]:
    """Per task where SMAC's λ ≤ 0.01, from its runs' per-update logs: the fraction of the step's ℓ̄-component the
    rank-1 term removes, ‖ℓ̄‖²/(λ + ‖ℓ̄‖²), and cos(g, step), each the median over a run's updates, then the median
    over runs [min, max]; and the smallest cos(g, step) of a single update."""
    out = []
    for task in hparams.tasks():
        damping = hparams.settings(task, "smac")["damping"]
        mine = [r for r in runs if r["task"] == task and r["algo"] == "smac"]
        if damping > 0.01 or not mine:
            continue
        ell = [r["updates"]["ell_sq"] for r in mine]
        removed = [float(np.nanmedian(e / (damping + e))) for e in ell]
        cos = [float(np.nanmedian(r["updates"]["cos_g_step"])) for r in mine]
        out.append(
            {
                "task": task,
                "damping": damping,
                "n": len(mine),
                "removed": (float(np.median(removed)), min(removed), max(removed)),
                "cos": (float(np.median(cos)), min(cos), max(cos)),
                "min_cos": min(float(np.nanmin(r["updates"]["cos_g_step"])) for r in mine),
            }
        )
    return out


def analyze(where, done: dict) -> dict:
    """The study on the committed logs under where.root: {"reg": the toml, "pre": results(reg), "rank1": rank1_figures
    over every SMAC run at the paper's row where lambda <= 0.01, the grid study's stage-1 runs and block 1's seeds}."""
    reg = load()
    block1 = os.path.join(where.root, reg["blocks"]["equivalence"]["logs"])
    runs = done["grid"]["data"].runs + (compact.discover_logs(block1) if os.path.isdir(block1) else [])
    return {"reg": reg, "pre": results(reg, where.root), "rank1": rank1_figures(runs)}


# ---- report/prereg.md
# the words report/prereg.md may use: a block 1 row and its reachable margin, a block 2 row's TOST, the slope test,
# block 3's verdict (results' literal_5M words)
VOCAB_PREREG = (
    "equivalent",
    "different (Holm)",
    "inconclusive",
    "not shown",
    "the rank-1 term matters (dose-response)",
    "no dose-response detected",
    "too few seeds",
    "pending (runs not all in)",
    "headline reproduced under the literal reading",
    "normalization caused the failure",
    "the literal reading does not rescue the headline",
)
PAGE_PREREG_JSON = os.path.join(REPO, "benchmark", "results", "prereg.json")


def _block1_page(reg: dict, res: dict) -> dict:
    b1, alpha = reg["blocks"]["equivalence"], reg["common"]["alpha"]
    return {
        "damping": sorted({hparams.settings(t, "smac")["damping"] for t in b1["tasks"]}),
        "budget": b1["budget"],
        "reading": b1["reading"],
        "rows": [
            {
                "task": r["task"],
                "n": r["n"],
                "mean": r["mean"],
                "ci": list(r["ci"]),
                "p": r["p"],
                "p_holm": r["p_holm"],
                "p_welch": r["p_welch"],
                "reach_margin": r["reach_margin"],
                "reach_answer": "equivalent" if r["equivalent_reach"] else "not shown",
                "answer": vd.tost_page_word(r, alpha),
                "reach": r["reach"],
                "complete": r["complete"],
            }
            for r in res["equivalence"]
        ],
    }


def _block2_page(reg: dict, res: dict) -> dict:
    b2, alpha = reg["blocks"]["lambda"], reg["common"]["alpha"]
    lam, slope = res["lambda"], res["lambda"]["slope"]
    if "p" not in slope:
        slope_answer = "too few seeds"
    elif slope["p"] < alpha:
        slope_answer = "the rank-1 term matters (dose-response)"
    else:
        slope_answer = "no dose-response detected"
    return {
        "task": b2["task"],
        "eta_over_lambda": b2["eta_over_lambda"],
        "budget": b2["budget"],
        "reading": b2["reading"],
        "seeds": b2["seeds"],
        "n_damping": len(b2["damping"]),
        "rows": [
            {
                "damping": k,
                "n": v["n"],
                "mean": v["mean"],
                "ci": list(v["ci"]),
                "answer": "equivalent" if v["equivalent"] else "not shown",
                "p": v["p"],
                "removed": list(lam["fractions"][k]["removed"]),
                "cos": lam["fractions"][k]["cos"],
                "change": lam["fractions"][k]["change"],
            }
            for k, v in lam["per_lambda"].items()
        ],
        "slope": {
            "n": slope["n"],
            "complete": slope["complete"],
            "answer": slope_answer,
            "mean": slope.get("mean"),
            "p": slope.get("p"),
            "ci": list(slope.get("ci", (None, None))),
        },
    }


def _block3_page(reg: dict, res: dict) -> dict:
    b3, lit = reg["blocks"]["literal_5M"], res["literal_5M"]
    w = lit["smac_vs_cg"]
    return {
        "task": b3["task"],
        "budget": b3["budget"],
        "rows": [
            {
                "algo": hparams.algo_label(a),
                "n": lit[a]["n"],
                "mean": lit[a]["mean"],
                "std": lit[a]["std"],
                "ci": list(lit[a]["ci"]),
                "paper": list(lit[a]["paper"]),
                "p_paper": None if lit[a]["vs_paper"] is None else lit[a]["vs_paper"]["p"],
                "norm_mean": lit[a]["norm_mean"],
                "p_norm": lit[a]["vs_norm"]["p"] if lit[a]["vs_norm"] else None,
            }
            for a in ("smac", "cg")
        ],
        "smac_vs_cg": {
            "tested": bool(w),
            "diff": w["diff"] if w else None,
            "p": w["p"] if w else None,
            "paper_diff": lit["smac"]["paper"][0] - lit["cg"]["paper"][0],
        },
        "answer": lit["verdict"],
    }


def page_prereg(reg: dict, res: dict) -> dict:
    """Every number and word of report/prereg.md, from results(reg): counts, lists and words of VOCAB_PREREG;
    benchmark/templates/prereg.md.j2 only formats them."""
    common = reg["common"]
    return {
        "margin": common["margin"],
        # paired's interval (the toml's), the slope test's and stats.t_mean_ci's
        "levels": {"tost": round(100 * common["ci_level_tost"]), "slope": 95, "table": 95},
        "power": reg["power"]["target_power"],
        "block1": _block1_page(reg, res),
        "block2": _block2_page(reg, res),
        "block3": _block3_page(reg, res),
    }


def write(result: dict, where) -> list[str]:
    """report/prereg.md: the pre-registered study in full, rules applied as written, rendered from page_prereg's data
    as JSON (6 significant digits); and where.commit, that JSON, benchmark/results/prereg.json."""
    data = page_prereg(result["reg"], result["pre"])
    return pages.write_study_page(where, "prereg.md", "The pre-registered study", data, PAGE_PREREG_JSON)


# ---- the verdict
def rank1_row(pre: dict) -> dict:
    """The verdict's row "rank1": where the rank-1 term is largest (lambda = 0.01, block 1's paired seeds), each
    task's TOST word, and block 2's lambda dose-response."""
    sl = pre["lambda"]["slope"]
    lams = list(pre["lambda"]["per_lambda"])
    decades = math.log10(max(lams) / min(lams)) if lams else math.nan
    largest = [
        {
            "task": r["task"],
            "n": r["n"],
            "mean": r["mean"],
            "ci": list(r["ci"]),
            "answer": vd.block_c_word(r),
            "reach_margin": r["reach_margin"],
            "reach_answer": "secondary passes" if r["equivalent_reach"] else "secondary fails",
        }
        for r in pre["equivalence"]
    ]
    slope = {
        "task": "HalfCheetah",  # block 2 of benchmark/preregistration.toml
        "mean": sl.get("mean"),
        "ci": list(sl.get("ci", (None, None))),
        "p": sl.get("p"),
        "lambdas": [min(lams), max(lams)] if lams else [],
        "decades": decades,
        "span": [decades * x for x in sl["ci"]] if "ci" in sl else [None, None],
        "answer": "dose-response" if sl.get("p", 1.0) < vd.ALPHA else "no dose-response detected",
    }
    return vd.tallied_row("rank1", {"tasks": largest, "slope": slope}, largest, "report/prereg.md")


def verdict(result: dict, done: dict) -> dict:
    """The row "rank1" and the design's paired seeds, their budget and the damping of block 1's tasks."""
    reg = result["reg"]
    b = reg["blocks"]["equivalence"]
    design = {
        "paired_seeds": len(hparams.parse_seeds(b["seeds"])),
        "paired_budget": b["budget"],
        "damping": sorted({hparams.settings(t, "smac")["damping"] for t in b["tasks"]}),
    }
    return {"rows": [rank1_row(result["pre"])], "design": design}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "cmd",
        choices=("power", "analyze"),
        help="power: the power calculation written into the toml; "
        "analyze: the pre-registered tests on the committed logs (JSON)",
    )
    cmd, reg = ap.parse_args(argv).cmd, load()
    if cmd == "analyze":
        print(json.dumps(results(reg), indent=1, default=lambda o: None))
        return 0
    for task, (sd, n, m) in power(reg).items():
        print(
            f"{task}: sd(paired diff) {sd:.3f}; seeds for margin {reg['common']['margin']}: {n}; "
            f"margin at {reg['power']['seeds_per_side']} seeds: {m:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
