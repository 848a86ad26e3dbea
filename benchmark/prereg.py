"""The pre-registered study of issue 27 (benchmark/preregistration.toml): its power calculation and its analysis.

    python -m benchmark.sweep --study prereg --workers 2   # every block's runs, in the pre-registered order
    python -m benchmark.prereg power                        # the power calculation written into the toml
    python -m benchmark.prereg analyze                      # the pre-registered tests on the committed logs
The runs' compact logs are committed under each block's `logs` directory; report.py writes report/prereg.md."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np
from scipy import stats as sps

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import aggregate, compact, hparams, pages, stats  # noqa: E402

load = hparams.load_prereg


def power(reg: dict) -> dict:
    """{task: (sd of paired differences, seeds needed for margin 0.1, margin reachable at the cap)}."""
    p, out = reg["power"], {}
    sc = _scores([os.path.join(REPO, p["source_logs"])])
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


# ---- The pre-registered analysis: exactly the tests and decision rules of preregistration.toml
def _scores(logs_dirs: list[str], budget: int | None = None) -> dict:
    """{(task, algo): {seed: normalized final}} over compact logs (a diverged run scores 0, the toml's rule),
    with the raw finals under key (task, algo, "raw"), and the runs under (task, algo, "runs")."""
    rand, out = compact.read_random_scores(), {}
    for d in filter(os.path.isdir, logs_dirs):
        runs = compact.discover_logs(d)
        cells = aggregate.load_cells(runs, budgets={r["task"]: budget for r in runs} if budget else None)
        for (task, algo), cell in cells.items():
            best = max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS)
            for seed, final, _ in aggregate.scored_runs(cell):
                score = 0.0 if final is None else stats.normalize(final, rand[task], best)
                out.setdefault((task, algo), {})[seed] = score
                out.setdefault((task, algo, "raw"), {})[seed] = final
        for r in runs:
            out.setdefault((r["task"], r["algo"], "runs"), {})[r["seed"]] = r
    return out


def paired(x: dict, y: dict, seeds: list[int], margin: float, level: float = 0.90) -> dict:
    """Paired differences d_s = x_s - y_s over the seeds both have: mean, sd, the t-interval at `level` (TOST
    at `margin` = that interval inside (-margin, margin)), the two-sided paired t-test and Welch's test."""
    common = [s for s in seeds if s in x and s in y]
    d = np.array([x[s] - y[s] for s in common])
    out = {"n": len(common), "seeds": common, "mean": float(d.mean()) if len(d) else math.nan}
    if len(d) < 2:
        return {
            **out,
            "sd": math.nan,
            "ci": (math.nan, math.nan),
            "p": math.nan,
            "p_welch": math.nan,
            "equivalent": False,
            "reach": math.nan,
        }
    sd = float(d.std(ddof=1))
    half = float(sps.t.ppf(0.5 + level / 2, len(d) - 1)) * sd / math.sqrt(len(d))
    ci = (out["mean"] - half, out["mean"] + half)
    xs, ys = [x[s] for s in common], [y[s] for s in common]
    p = float(sps.ttest_rel(xs, ys).pvalue) if sd > 0 else 1.0
    p_welch = float(sps.ttest_ind(xs, ys, equal_var=False).pvalue)
    return {
        **out,
        "sd": sd,
        "ci": ci,
        "p": p,
        "p_welch": p_welch,
        "equivalent": -margin < ci[0] and ci[1] < margin,
        "reach": max(abs(ci[0]), abs(ci[1])),
    }


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (the toml's multiplicity rule for block 1)."""
    adjusted, running = [0.0] * len(pvalues), 0.0
    for rank, i in enumerate(sorted(range(len(pvalues)), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


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


def _mean(xs: list) -> float:
    return float(np.mean(xs)) if xs else math.nan


def analyze(reg: dict, root: str = REPO) -> dict:
    margin, alpha = reg["common"]["margin"], reg["common"]["alpha"]
    level = reg["common"]["ci_level_tost"]  # the TOST interval's level, as the page states it
    # block 1
    b = reg["blocks"]["equivalence"]
    sc = _scores(
        [os.path.join(root, "benchmark/results/logs/norm"), os.path.join(root, b["logs"])], b["budget"]
    )
    seeds = hparams.parse_seeds(b["seeds"])
    rows = [
        {"task": t, **paired(sc.get((t, "smac"), {}), sc.get((t, "sgd-matched"), {}), seeds, margin, level)}
        for t in b["tasks"]
    ]
    for r, p_adj in zip(rows, holm([r["p"] for r in rows])):
        reach = reg["power"]["reachable_margin_at_20"][r["task"]]
        r.update(
            reach_margin=reach,
            equivalent_reach=r["ci"][0] > -reach and r["ci"][1] < reach,
            p_holm=p_adj,
            complete=r["n"] == len(seeds),
            verdict=(
                "equivalent at ±%g" % margin
                if r["equivalent"]
                else "different (Holm p %.3g)" % p_adj
                if p_adj < alpha
                else "inconclusive (equivalence only at ±%.2f)" % r["reach"]
            ),
        )
    # block 2
    b2 = reg["blocks"]["lambda"]
    seeds2 = hparams.parse_seeds(b2["seeds"])
    control = sc.get(("HalfCheetah", "sgd-matched"), {})
    per_lam, fractions = {}, {}
    for lam in b2["damping"]:
        s2 = sc if lam == 1e-2 else _scores([os.path.join(root, b2["logs"], f"lam{lam:g}")], b2["budget"])
        smac, runs = s2.get(("HalfCheetah", "smac"), {}), s2.get(("HalfCheetah", "smac", "runs"), {})
        per_lam[lam] = {"smac": smac, **paired(smac, control, seeds2, margin, level)}
        fr = [step_fraction_removed(runs[s], lam) for s in seeds2 if s in runs]
        ch = [step_change(runs[s], lam) for s in seeds2 if s in runs]
        fractions[lam] = {
            "removed": (_mean(fr), min(fr, default=math.nan), max(fr, default=math.nan)),
            "cos": _mean([c for c, _ in ch]),
            "change": _mean([c for _, c in ch]),
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
    # block 3
    b3 = reg["blocks"]["literal_5M"]
    lit, norm = (
        _scores([os.path.join(root, d)], b3["budget"]) for d in (b3["logs"], "benchmark/results/logs/norm_5M")
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
            "mean": _mean(raw),
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
    return {
        "equivalence": rows,
        "lambda": {"per_lambda": per_lam, "fractions": fractions, "slope": slope},
        "literal_5M": res3,
    }


# the words report/prereg.md may use: a block 1 row and its reachable margin, a block 2 row's TOST, the slope test,
# block 3's verdict (prereg.analyze's literal_5M words)
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


def page_prereg(reg: dict, res: dict) -> dict:
    """Every number and word of report/prereg.md, from analyze's result: counts, lists and words of VOCAB_PREREG;
    benchmark/templates/prereg.md.j2 only formats them."""
    common, alpha = reg["common"], reg["common"]["alpha"]
    b1, b2, b3 = (reg["blocks"][k] for k in ("equivalence", "lambda", "literal_5M"))
    lam, lit, slope = res["lambda"], res["literal_5M"], res["lambda"]["slope"]
    if "p" not in slope:
        slope_answer = "too few seeds"
    elif slope["p"] < alpha:
        slope_answer = "the rank-1 term matters (dose-response)"
    else:
        slope_answer = "no dose-response detected"
    w = lit["smac_vs_cg"]
    return {
        "margin": common["margin"],
        # paired's interval (the toml's), the slope test's and stats.t_mean_ci's
        "levels": {"tost": round(100 * common["ci_level_tost"]), "slope": 95, "table": 95},
        "power": reg["power"]["target_power"],
        "block1": {
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
                    "answer": "equivalent"
                    if r["equivalent"]
                    else "different (Holm)"
                    if r["p_holm"] < alpha
                    else "inconclusive",
                    "reach": r["reach"],
                    "complete": r["complete"],
                }
                for r in res["equivalence"]
            ],
        },
        "block2": {
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
        },
        "block3": {
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
        },
    }


def render_prereg(data: dict) -> str:
    """report/prereg.md's body from page_prereg's JSON (benchmark/templates/prereg.md.j2)."""
    return pages.render("prereg.md.j2", data)


def markdown(reg: dict, res: dict, json_path: str | None = None) -> list:
    """report/prereg.md: the pre-registered study in full, rules applied as written, rendered from page_prereg's data as
    JSON (6 significant digits), which goes to json_path where given."""
    data = pages.committed(page_prereg(reg, res), json_path)
    return [render_prereg(data)]


# ---- Issue 37's pre-registered 5M runs (benchmark/preregistration_5M.toml): the same rules, applied per block
def load_5M() -> dict:
    return hparams.load_prereg(hparams.PREREG_5M)


def expected_5M(reg: dict) -> list:
    """(task, algo) of every cell the 5M study needs: its runs, and HalfCheetah's headline block."""
    cells = [(task, algo) for algo, tasks in reg["runs"].items() for task in tasks]
    return cells + [("HalfCheetah", "smac"), ("HalfCheetah", "cg")]


def fifths(run: dict, damping: float, budget: int) -> dict:
    """Block D per run: the medians over updates of ell_sq / lambda, the removed fraction and cos(g, step) in the
    first fifth (global_step <= budget / 5) and the last fifth (> 4 budget / 5), and the smallest cos."""
    u = run["updates"]
    out = {"min_cos": float(np.nanmin(u["cos_g_step"]))}
    for name, keep in (
        ("first", u["global_step"] <= budget / 5),
        ("last", u["global_step"] > 4 * budget / 5),
    ):
        ell = u["ell_sq"][keep]
        out[name] = {
            "ell_over_lambda": float(np.nanmedian(ell / damping)),
            "removed": float(np.nanmedian(ell / (damping + ell))),
            "cos": float(np.nanmedian(u["cos_g_step"][keep])),
        }
    return out


def last_tenth_length(runs, budget: int) -> float:
    """The median over runs of each run's mean episode length over its episodes after 0.9 budget."""
    per_run = []
    for r in runs:
        keep = r["episodes"]["global_step"] > 0.9 * budget
        per_run.append(float(np.mean(r["episodes"]["episodic_length"][keep])))
    return float(np.median(per_run))


def first_episode(run: dict) -> tuple:
    return float(run["episodes"]["episodic_return"][0]), int(run["episodes"]["episodic_length"][0])


def halfcheetah_pairing(sc: dict, reruns: dict, seeds: list) -> dict:
    """Amendment 1 of preregistration_5M.toml: the seeds whose SMAC run and sgd-matched rerun log the same first
    episode; block C uses the reruns on HalfCheetah only when all five are in and paired."""
    smac_runs = sc.get(("HalfCheetah", "smac", "runs"), {})
    rerun_runs = reruns.get(("HalfCheetah", "sgd-matched", "runs"), {})
    same = [
        s
        for s in seeds
        if s in smac_runs and s in rerun_runs and first_episode(smac_runs[s]) == first_episode(rerun_runs[s])
    ]
    return {
        "runs_in": sorted(rerun_runs),
        "paired_seeds": same,
        "paired": same == list(seeds),
        "scores": reruns.get(("HalfCheetah", "sgd-matched"), {}),
    }


def below_random(sc: dict, task: str, algos: list, budget: int) -> list:
    """The cells of `task` whose mean normalized final is below 0 (the random policy): per cell the raw and
    normalized mean final, and the peak of its seed-mean curve (100 bins over the budget) with the bin's end step."""
    rand, best = (
        compact.read_random_scores()[task],
        max(hparams.paper_result(task, a)[0] for a in hparams.PAPER_ALGOS),
    )
    out = []
    for algo in algos:
        score = _mean(list(sc.get((task, algo), {}).values()))
        if not score < 0:
            continue
        span, curves, _ = aggregate.cell_curves(list(sc[(task, algo, "runs")].values()), {task: budget})[
            (task, algo)
        ]
        mean = aggregate.across_seeds(curves)[0]
        top = int(np.nanargmax(mean))
        out.append(
            {
                "algo": algo,
                "mean": _mean([v for v in sc[(task, algo, "raw")].values() if v is not None]),
                "normalized": score,
                "peak": float(mean[top]),
                "peak_normalized": stats.normalize(float(mean[top]), rand, best),
                "peak_step": int(round((top + 1) * span / len(mean))),
            }
        )
    return out


def analyze_5M(reg: dict, root: str = REPO) -> dict:
    """Every block of preregistration_5M.toml on the committed logs; a cell is judged only once its five seeds are
    in (finished or diverged), and the report says how many runs are in."""
    common = reg["common"]
    budget, seeds, alpha, margin = (
        common["budget"],
        hparams.parse_seeds(common["seeds"]),
        common["alpha"],
        common["margin"],
    )
    logs = os.path.join(root, common["logs"])
    sc = _scores([logs], budget)
    done = {cell: sorted(sc.get(cell, {})) for cell in expected_5M(reg)}
    complete = {cell for cell, got in done.items() if got == seeds}
    planned = {(task, algo) for algo, tasks in reg["runs"].items() for task in tasks}
    earlier = [
        cell for cell in done if cell not in planned
    ]  # HalfCheetah's headline block, run before the rules
    out = {
        "runs_in": sum(len(v) for v in done.values()),
        "runs_expected": len(done) * len(seeds),
        "done": done,
        "before_rules": {"cells": earlier, "runs": sum(len(done[cell]) for cell in earlier)},
    }
    # Block A: the six claims, on the 5M runs of the cells each needs (100 bins over 5M = the paper's bin width)
    wanted = set(reg["blocks"]["claims"]["claims"])
    claims = [c for c in aggregate.CLAIMS if c["id"] in wanted]
    runs = [r for cell in complete for r in sc.get((*cell, "runs"), {}).values()]
    rows = []
    for c in claims:
        needs = [(c["task"], c["algo"])] + ([(c["task"], c["ref"])] if "ref" in c else [])
        if all(cell in complete for cell in needs):
            rows += aggregate.evaluate(runs, claims=[c])
        else:
            waiting = ", ".join(
                f"{t} {hparams.algo_label(a)} {len(done.get((t, a), []))}/5" for t, a in needs
            )
            rows.append(
                {
                    "id": c["id"],
                    "task": c["task"],
                    "kind": c["kind"],
                    "algo": c["algo"],
                    "claim": c["text"],
                    "verdict": "waiting",
                    "measured": "runs in: " + waiting,
                }
            )
    out["claims"] = rows
    # Block B: our 5M cells against the paper's table (Welch from summary statistics; the t-interval at n = 5)
    table = []
    for task, algo in sorted(complete):
        raw = [v for v in sc[(task, algo, "raw")].values() if v is not None]
        paper = hparams.paper_result(task, algo) if algo in hparams.PAPER_ALGOS else None
        if paper is None or len(raw) < 2:
            continue
        mean, sd, n = float(np.mean(raw)), float(np.std(raw, ddof=1)), len(raw)
        p = float(sps.ttest_ind_from_stats(mean, sd, n, paper[0], paper[1], 5, equal_var=False).pvalue)
        table.append(
            {
                "task": task,
                "algo": algo,
                "mean": mean,
                "sd": sd,
                "n": n,
                "ci": stats.t_mean_ci(raw),
                "paper": paper,
                "p": p,
                "differs": p < alpha,
                "length": last_tenth_length(sc[(task, algo, "runs")].values(), budget),
            }
        )
    out["table"] = table
    # tasks where every complete cell ends below the random policy (normalized < 0), with each cell's peak
    algos_of = {}
    for task, algo in sorted(complete):
        algos_of.setdefault(task, []).append(algo)
    out["below_random"] = []
    for task, algos in algos_of.items():
        cells = below_random(sc, task, algos, budget)
        if len(cells) == len(algos):
            out["below_random"].append(
                {"task": task, "random": compact.read_random_scores()[task], "cells": cells}
            )
    # Block C: SMAC vs sgd-matched, paired TOST at 0.1 (Holm over the tasks for "different")
    eq = reg["blocks"]["equivalence"]
    ready = [t for t in eq["tasks"] if (t, "smac") in complete and (t, "sgd-matched") in complete]
    block_c = dict(sc)
    amendment = reg.get("amendments", {}).get("halfcheetah_pairing")
    if amendment is not None:  # amendment 1: HalfCheetah's sgd-matched arm rerun on the SMAC arm's machine
        pairing = halfcheetah_pairing(sc, _scores([os.path.join(root, amendment["logs"])], budget), seeds)
        out["halfcheetah_pairing"] = pairing
        ready = [t for t in ready if t != "HalfCheetah"]
        if pairing["paired"]:
            block_c[("HalfCheetah", "sgd-matched")] = pairing["scores"]
            ready = [t for t in eq["tasks"] if t in ready or t == "HalfCheetah"]
    rows = [
        {"task": t, **paired(block_c[(t, "smac")], block_c[(t, "sgd-matched")], seeds, margin)} for t in ready
    ]
    # the 1M result of the same seeds, printed beside (exploratory)
    stage1 = _scores([os.path.join(root, os.path.relpath(aggregate.stage1_logs(), REPO))])
    for r in rows:
        r["at_1M"] = paired(
            stage1.get((r["task"], "smac"), {}), stage1.get((r["task"], "sgd-matched"), {}), seeds, margin
        )
    for r, p_adj in zip(
        rows, holm([r["p"] for r in rows]) if len(rows) == len(eq["tasks"]) else [math.nan] * len(rows)
    ):
        reach = eq["reachable_margin_at_5"][r["task"]]
        r.update(
            reach_margin=reach,
            equivalent_reach=r["ci"][0] > -reach and r["ci"][1] < reach,
            p_holm=p_adj,
            below_random=all(
                _mean(list(block_c[(r["task"], a)].values())) < 0 for a in ("smac", "sgd-matched")
            ),
        )
        if r["equivalent"]:
            r["verdict"] = f"equivalent at ±{margin:g}"
        elif p_adj < alpha:
            r["verdict"] = f"different (Holm p {p_adj:.3g})"
        else:
            r["verdict"] = f"inconclusive (equivalence only at ±{r['reach']:.2f})"
    out["equivalence"] = rows
    # Block D: ||l_bar||^2 / lambda and cos(g, step), first vs last fifth, per task (SMAC's runs)
    diag = []
    for task in reg["blocks"]["diagnostics"]["tasks"]:
        if (task, "smac") not in complete:
            continue
        damping = hparams.settings(task, "smac")["damping"]
        per_run = [fifths(r, damping, budget) for r in sc[(task, "smac", "runs")].values()]
        logs_ratio = [
            math.log10(f["last"]["ell_over_lambda"] / f["first"]["ell_over_lambda"]) for f in per_run
        ]
        test = sps.ttest_1samp(logs_ratio, 0.0)
        grows = test.pvalue < alpha and np.mean(logs_ratio) > 0
        shrinks = test.pvalue < alpha and np.mean(logs_ratio) < 0
        diag.append(
            {
                "task": task,
                "damping": damping,
                "runs": per_run,
                "log_ratio": float(np.mean(logs_ratio)),
                "p": float(test.pvalue),
                "verdict": "grows late in training" if grows else "shrinks" if shrinks else "no change shown",
            }
        )
    out["diagnostics"] = diag
    return out


# the words the 5M page may use: a claim's verdict (aggregate.evaluate), a Welch row, a block C row and its reachable
# margin, amendment 1's state, a block D row (report.VOCAB's where the page shares them)
VOCAB_5M = (
    "held",
    "direction only",
    "baseline never reaches it",
    "not held",
    "waiting",
    "differs",
    "not shown to differ",
    "equivalent",
    "different (Holm)",
    "inconclusive",
    "inside",
    "not inside",
    "used",
    "not used yet",
    "grows late in training",
    "shrinks",
    "no change shown",
)
PAGE_5M_JSON = os.path.join(REPO, "benchmark", "results", "mujoco_5M.json")
HEADLINE_DATE, FIRST_MATCHED_DATE = (
    "2026-11-23",
    "2026-11-25",
)  # issue 12's block; the unpaired sgd-matched runs


def _spread(values: list) -> list:
    """[median, min, max] of `values`."""
    return [float(np.median(values)), float(min(values)), float(max(values))]


def page_5M(reg: dict, res: dict) -> dict:
    """Every number and word of report/mujoco_5M.md, from analyze_5M's result: counts, lists and words of VOCAB_5M;
    benchmark/templates/mujoco_5M.md.j2 only formats them."""
    common, before, budget = reg["common"], res["before_rules"], reg["common"]["budget"]
    seeds = hparams.parse_seeds(common["seeds"])
    label = hparams.algo_label
    out = {
        "logs": common["logs"],
        "reading": common["reading"],
        "seeds": common["seeds"],
        "n_seeds": len(seeds),
        "budget": budget,
        "fifths": [budget // 5, 4 * budget // 5],
        "horizon": 1000,  # MuJoCo's episode limit
        "margin": common["margin"],
        "levels": {"table": 95, "block_c": 90},  # stats.t_mean_ci's and paired's intervals
        "runs_in": res["runs_in"],
        "runs_expected": res["runs_expected"],
        "after_rules": res["runs_expected"] - before["runs"],
        "before_rules": {
            "runs": before["runs"],
            "cells": [f"{t} {label(a)}" for t, a in before["cells"]],
            "date": HEADLINE_DATE,
        },
        "done": [{"cell": f"{t} {label(a)}", "n": len(v)} for (t, a), v in sorted(res["done"].items())],
        "n_claims": len(res["claims"]),
        "claims": [
            {
                "id": r["id"],
                "task": r["task"],
                "measured": r.get("measured", ""),
                "answer": r.get("strict") or r["verdict"],
            }
            for r in res["claims"]
        ],
        "table": [
            {
                "task": r["task"],
                "algo": label(r["algo"]),
                "mean": r["mean"],
                "sd": r["sd"],
                "ci": list(r["ci"]),
                "paper": list(r["paper"]),
                "p": r["p"],
                "answer": "differs" if r["differs"] else "not shown to differ",
                "length": r["length"],
            }
            for r in res["table"]
        ],
        "below_random": [
            {
                "task": b["task"],
                "random": b["random"],
                "cells": [{**c, "algo": label(c["algo"])} for c in b["cells"]],
            }
            for b in res["below_random"]
        ],
        "block_c": {
            "holm_waits": len(res["equivalence"]) < len(reg["blocks"]["equivalence"]["tasks"]),
            "rows": [
                {
                    "task": r["task"],
                    "n": r["n"],
                    "mean": r["mean"],
                    "ci": list(r["ci"]),
                    "reach_margin": r["reach_margin"],
                    "reach_answer": "inside" if r["equivalent_reach"] else "not inside",
                    "answer": "equivalent"
                    if r["equivalent"]
                    else "different (Holm)"
                    if r["p_holm"] < common["alpha"]
                    else "inconclusive",
                    "p_holm": r["p_holm"],
                    "reach": r["reach"],
                    "at_1M": {"mean": r["at_1M"]["mean"], "ci": list(r["at_1M"]["ci"])},
                }
                for r in res["equivalence"]
            ],
            "collapsed": [r["task"] for r in res["equivalence"] if r["below_random"]],
        },
        "diagnostics": [
            {
                "task": r["task"],
                "damping": r["damping"],
                **{
                    f"{part}_{key}": _spread([x[part][key] for x in r["runs"]])
                    for part, key in (
                        ("first", "ell_over_lambda"),
                        ("last", "ell_over_lambda"),
                        ("last", "removed"),
                        ("first", "cos"),
                        ("last", "cos"),
                    )
                },
                "min_cos": min(x["min_cos"] for x in r["runs"]),
                "answer": r["verdict"],
                "p": r["p"],
            }
            for r in res["diagnostics"]
        ],
    }
    pairing = res.get("halfcheetah_pairing")
    if pairing is not None:
        out["pairing"] = {
            "date": reg["amendments"]["halfcheetah_pairing"]["date"],
            "unpaired_date": FIRST_MATCHED_DATE,
            "runs_in": pairing["runs_in"],
            "paired_seeds": pairing["paired_seeds"],
            "answer": "used" if pairing["paired"] else "not used yet",
        }
    return out


def render_5M(data: dict) -> str:
    """report/mujoco_5M.md's body from page_5M's JSON (benchmark/templates/mujoco_5M.md.j2)."""
    return pages.render("mujoco_5M.md.j2", data)


DIGITS_5M = 7  # 6 would turn a last-fifth median of 125.5505 into 125.55, printed 125.5 at 4 digits


def plain_5M(x):
    """page_5M as JSON, floats to DIGITS_5M significant digits."""
    return pages.plain(x, DIGITS_5M)


def markdown_5M(reg: dict, res: dict, json_path: str | None = None) -> list:
    """report/mujoco_5M.md: what the 5M runs show so far, by the pre-registered rules, rendered from page_5M's data
    as JSON (plain_5M), which goes to json_path where given."""
    data = pages.committed(page_5M(reg, res), json_path, DIGITS_5M)
    return [render_5M(data)]


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
        print(json.dumps(analyze(reg), indent=1, default=lambda o: None))
        return 0
    for task, (sd, n, m) in power(reg).items():
        print(
            f"{task}: sd(paired diff) {sd:.3f}; seeds for margin {reg['common']['margin']}: {n}; "
            f"margin at {reg['power']['seeds_per_side']} seeds: {m:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
