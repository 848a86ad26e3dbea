"""MuJoCo at 5M steps, the budget the paper implies (benchmark/preregistration_5M.toml): the paper's MuJoCo table and
its six claims that the 1M grid could not judge, on five seeds per cell, by rules fixed before the runs:

    A  the six claims, judged on the 5M runs of the cells each needs
    B  our 5M cells against the paper's table (Welch from its mean and std; the t-interval at n = 5)
    C  SMAC against SGD with step eta/lambda (sgd-matched) per task, paired by seed: TOST at the margin, Holm over
       the six tasks for "different"; on HalfCheetah the sgd-matched arm rerun to pair the seeds (amendment 1)
    D  the rank-1 term over the whole budget: ||l_bar||^2 / lambda and cos(g, step), first against last fifth

    python -m benchmark.sweep --study mujoco-5M --workers 2   # the runs, in the toml's [execution] order

The compact logs share benchmark/results/logs/norm_5M with HalfCheetah SMAC and AC-CG's 5M headline block (run
before the rules); the report writes report/mujoco_5M.md (and, committing, benchmark/results/mujoco_5M.json); the
verdict's rows "table", "headline", "sgd_5M" and "ell" and its points "below_random" and "curvature" are this
study's.
"""

from __future__ import annotations

import math
import os
from typing import Optional

import numpy as np
from scipy import stats as sps

from benchmark import aggregate, compact, hparams, pages, stats
from benchmark import verdict as vd
from benchmark.stats import num
from benchmark.studies import REPO
from benchmark.studies import claims as claims_study
from benchmark.studies.grid import step_ratio

NAME = "mujoco-5M"
# the sweep's options its jobs honour; the runs are the toml's
SWEEP_OPTIONS = ("runs_dir", "logs_dir", "checkpoint_every")
PREREGISTRATION = "benchmark/preregistration_5M.toml"
COMMITTED_ONLY = False


# ---- the job list
def jobs(args) -> list:
    """The study's jobs from the sweep's flags (--runs-dir, --logs-dir, --checkpoint-every)."""
    from benchmark import sweep

    reg = load_5M()
    logs = sweep.logs_dir_of(args, os.path.join(REPO, reg["common"]["logs"]))
    return cell_jobs(reg, args.runs_dir, logs, args.checkpoint_every)


def cell_jobs(reg: dict, runs_dir=None, logs_dir=None, checkpoint_every=10) -> list:
    """Each [execution] item "task/algo" over the seeds, in that order, with the reading's flags; the compact logs
    (None: none) share a directory with the HalfCheetah 5M headline block."""
    from benchmark import sweep

    common = reg["common"]
    runs_dir = runs_dir or os.path.join(REPO, common["runs_dir"])
    out = []
    for item in reg["execution"]["order"]:
        task, algo = item.split("/")
        out += sweep.make_jobs(
            [task],
            [algo],
            hparams.parse_seeds(common["seeds"]),
            {task: common["budget"]},
            runs_dir,
            checkpoint_every,
            extra_flags=hparams.reading_flags(common["reading"]),
            logs_dir=logs_dir,
        )
    return out


# ---- the analysis: the rules of preregistration_5M.toml, applied per block
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


def shared_episodes(a: dict, b: dict) -> int:
    """How many leading episodes two runs log alike (return and length, as logged)."""
    ea, eb = a["episodes"], b["episodes"]
    n = min(len(ea["episodic_return"]), len(eb["episodic_return"]))
    same = [
        ea["episodic_return"][i] == eb["episodic_return"][i]
        and ea["episodic_length"][i] == eb["episodic_length"][i]
        for i in range(n)
    ]
    return same.index(False) if False in same else n


def episodes_before_update(run: dict) -> int | None:
    """How many episodes a run logs by its first update's step; None where it logs no update."""
    steps = run["updates"]["global_step"]
    if len(steps) == 0:
        return None
    return int(np.sum(np.asarray(run["episodes"]["global_step"]) <= steps[0]))


def _shared(a: dict | None, b: dict | None) -> int | None:
    return None if a is None or b is None else shared_episodes(a, b)


def halfcheetah_pairing(sc: dict, reruns: dict, seeds: list, stage1: dict | None = None) -> dict:
    """Amendment 1 of preregistration_5M.toml: the seeds whose SMAC run and sgd-matched rerun log the same first
    episode (block C uses the reruns on HalfCheetah only when all five are in and paired); the same for the first
    sgd-matched runs; per seed how many leading episodes the rerun shares with the SMAC run, with the first
    sgd-matched run and with the stage-1 grid's sgd-matched run (`stage1`: its scores), and the first run with the
    SMAC run; and how many episodes the runs log before their first update."""
    cell = ("HalfCheetah", "smac", "runs"), ("HalfCheetah", "sgd-matched", "runs")
    smac_runs, original_runs = sc.get(cell[0], {}), sc.get(cell[1], {})
    rerun_runs, stage1_runs = reruns.get(cell[1], {}), (stage1 or {}).get(cell[1], {})

    def same_first(runs):
        return [
            s
            for s in seeds
            if s in smac_runs
            and s in runs
            and aggregate.first_episode(smac_runs[s]) == aggregate.first_episode(runs[s])
        ]

    same = same_first(rerun_runs)
    shared = [
        {
            "seed": s,
            "rerun_smac": _shared(rerun_runs[s], smac_runs.get(s)),
            "rerun_original": _shared(rerun_runs[s], original_runs.get(s)),
            "original_smac": _shared(original_runs.get(s), smac_runs.get(s)),
            "rerun_stage1": _shared(rerun_runs[s], stage1_runs.get(s)),
        }
        for s in seeds
        if s in rerun_runs
    ]
    runs = [*smac_runs.values(), *original_runs.values(), *rerun_runs.values()]
    before = {episodes_before_update(r) for r in runs} - {None}
    return {
        "runs_in": sorted(rerun_runs),
        "paired_seeds": same,
        "paired": same == list(seeds),
        "original_paired_seeds": same_first(original_runs),
        "shared_episodes": shared,
        "episodes_before_update": sorted(before),
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
        score = stats.mean_or_nan(list(sc.get((task, algo), {}).values()))
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
                "mean": stats.mean_or_nan([v for v in sc[(task, algo, "raw")].values() if v is not None]),
                "normalized": score,
                "peak": float(mean[top]),
                "peak_normalized": stats.normalize(float(mean[top]), rand, best),
                "peak_step": int(round((top + 1) * span / len(mean))),
            }
        )
    return out


def _claims(reg: dict, sc: dict, done: dict, complete: set) -> list:
    """Block A: the six claims on the 5M runs of the cells each needs (100 bins over 5M = the paper's bin width);
    a claim whose cells are not all complete waits, with the runs in so far."""
    wanted = set(reg["blocks"]["claims"]["claims"])
    claims = [c for c in claims_study.CLAIMS if c["id"] in wanted]
    runs = [r for cell in complete for r in sc.get((*cell, "runs"), {}).values()]
    rows = []
    for c in claims:
        needs = [(c["task"], c["algo"])] + ([(c["task"], c["ref"])] if "ref" in c else [])
        if all(cell in complete for cell in needs):
            rows += claims_study.evaluate(runs, claims=[c])
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
    return rows


def _table(sc: dict, complete: set, budget: int, alpha: float) -> list:
    """Block B: our complete 5M cells against the paper's table (Welch from summary statistics; the t-interval at
    n = 5), with the median episode length of the last tenth."""
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
    return table


def _below_random_tasks(sc: dict, complete: set, budget: int) -> list:
    """The tasks where every complete cell ends below the random policy (normalized < 0), with each cell's peak, how
    many algorithms were run (complete) there of the stage-1 grid's (every registered one), and those not run."""
    algos_of = {}
    for task, algo in sorted(complete):
        algos_of.setdefault(task, []).append(algo)
    out = []
    for task, algos in algos_of.items():
        cells = below_random(sc, task, algos, budget)
        if len(cells) == len(algos):
            out.append(
                {
                    "task": task,
                    "random": compact.read_random_scores()[task],
                    "cells": cells,
                    "n_run": len(algos),
                    "n_algos": len(hparams.algos()),
                    "not_run": [a for a in hparams.algos() if a not in algos],
                }
            )
    return out


def _block_c_scores(
    reg: dict, sc: dict, complete: set, stage1: dict, root: str, out: dict
) -> tuple[dict, list]:
    """Block C's scores and the tasks ready for it: amendment 1's HalfCheetah reruns replace the sgd-matched arm
    there once all five pair (its state goes to out["halfcheetah_pairing"])."""
    common, eq = reg["common"], reg["blocks"]["equivalence"]
    seeds = hparams.parse_seeds(common["seeds"])
    ready = [t for t in eq["tasks"] if (t, "smac") in complete and (t, "sgd-matched") in complete]
    block_c = dict(sc)
    amendment = reg.get("amendments", {}).get("halfcheetah_pairing")
    if amendment is not None:  # amendment 1: HalfCheetah's sgd-matched arm rerun, paired by the first episode
        reruns = aggregate.scores([os.path.join(root, amendment["logs"])], common["budget"])
        pairing = halfcheetah_pairing(sc, reruns, seeds, stage1)
        out["halfcheetah_pairing"] = pairing
        ready = [t for t in ready if t != "HalfCheetah"]
        if pairing["paired"]:
            block_c[("HalfCheetah", "sgd-matched")] = pairing["scores"]
            ready = [t for t in eq["tasks"] if t in ready or t == "HalfCheetah"]
    return block_c, ready


def _tost_row(reg: dict, row: dict, p_adj: float, block_c: dict, p_tost_adj: float) -> dict:
    """A block C row's secondary margin, Holm p (and, for information, its TOST p Holm-adjusted), every algorithm's
    seed-mean normalized final on the task, the share of SGD's step SMAC's rank-1 term changes (aggregate.step_change),
    below-random flag and verdict (row: stats.paired's or unpaired's)."""
    alpha, margin = reg["common"]["alpha"], reg["common"]["margin"]
    reach = reg["blocks"]["equivalence"]["reachable_margin_at_5"][row["task"]]
    row.update(
        reach_margin=reach,
        equivalent_reach=row["ci"][0] > -reach and row["ci"][1] < reach,
        p_holm=p_adj,
        p_tost_holm=p_tost_adj,
        means=aggregate.seed_means(block_c, row["task"]),
        step_change=aggregate.step_change(block_c.get((row["task"], "smac", "runs"), {})),
        below_random=all(
            stats.mean_or_nan(list(block_c[(row["task"], a)].values())) < 0 for a in ("smac", "sgd-matched")
        ),
    )
    row["verdict"] = vd.tost_verdict(row, p_adj, margin, alpha)
    return row


def _equivalence(reg: dict, block_c: dict, ready: list, stage1: dict) -> list:
    """Block C: SMAC vs sgd-matched, paired TOST at the margin (Holm over the tasks for "different", once every
    task is in), with the 1M result of the same seeds beside (exploratory). p_tost_holm: the TOST p Holm-adjusted over
    the tasks, for information only (the registration applies Holm to "different", not to "equivalent"); `means`:
    every algorithm's seed-mean normalized final at 5M on the task (the arms block C compares)."""
    common, eq = reg["common"], reg["blocks"]["equivalence"]
    seeds, margin = hparams.parse_seeds(common["seeds"]), common["margin"]
    rows = [
        {"task": t, **stats.paired(block_c[(t, "smac")], block_c[(t, "sgd-matched")], seeds, margin)}
        for t in ready
    ]
    for r in rows:
        r["test"] = "paired"
        r["at_1M"] = stats.paired(
            stage1.get((r["task"], "smac"), {}), stage1.get((r["task"], "sgd-matched"), {}), seeds, margin
        )
    every = len(rows) == len(eq["tasks"])
    holm = stats.holm([r["p"] for r in rows]) if every else [math.nan] * len(rows)
    holm_tost = stats.holm([r["p_tost"] for r in rows]) if every else [math.nan] * len(rows)
    return [
        _tost_row(reg, r, p_adj, block_c, p_tost_adj) for r, p_adj, p_tost_adj in zip(rows, holm, holm_tost)
    ]


def original_arm_row(reg: dict, sc: dict, rows: list, pairing: dict) -> dict | None:
    """Block C on HalfCheetah with the first sgd-matched runs (of FIRST_MATCHED_DATE, in the study's logs)
    against the same SMAC runs (those runs are block C's pre-registered arm; this comparison is not
    pre-registered): the paired test where all its seeds pair with SMAC's by the first episode, otherwise
    Welch's (stats.unpaired; the rule preregistration_kl_step.toml fixed for arms that do not pair); its Holm
    p over block C's six tasks with it in the rerun's place. None until block C's HalfCheetah row is in."""
    seeds, margin = hparams.parse_seeds(reg["common"]["seeds"]), reg["common"]["margin"]
    if not any(r["task"] == "HalfCheetah" for r in rows):
        return None
    smac, original = sc.get(("HalfCheetah", "smac"), {}), sc.get(("HalfCheetah", "sgd-matched"), {})
    paired_test = pairing["original_paired_seeds"] == list(seeds)
    test = stats.paired if paired_test else stats.unpaired
    row = {
        "task": "HalfCheetah",
        **test(smac, original, seeds, margin),
        "test": "paired" if paired_test else "Welch",
    }
    family = [row["p"] if r["task"] == "HalfCheetah" else r["p"] for r in rows]
    holm = (
        stats.holm(family)
        if len(rows) == len(reg["blocks"]["equivalence"]["tasks"])
        else [math.nan] * len(rows)
    )
    p_adj = holm[[r["task"] for r in rows].index("HalfCheetah")]
    return _tost_row(reg, {"p_tost": math.nan, **row}, p_adj, sc, math.nan)


def _diagnostics(reg: dict, sc: dict, complete: set) -> list:
    """Block D: ||l_bar||^2 / lambda and cos(g, step), first vs last fifth, per task (SMAC's runs); the log-ratio
    of the fifths' medians t-tested against 0."""
    budget, alpha = reg["common"]["budget"], reg["common"]["alpha"]
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
    return diag


def analyze_5M(reg: dict, root: str = REPO) -> dict:
    """Every block of preregistration_5M.toml on the committed logs; a cell is judged only once its five seeds are
    in (finished or diverged), and the report says how many runs are in."""
    common = reg["common"]
    budget, seeds = common["budget"], hparams.parse_seeds(common["seeds"])
    sc = aggregate.scores([os.path.join(root, common["logs"])], budget)
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
    out["claims"] = _claims(reg, sc, done, complete)
    out["table"] = _table(sc, complete, budget, common["alpha"])
    out["below_random"] = _below_random_tasks(sc, complete, budget)
    stage1 = aggregate.scores([os.path.join(root, os.path.relpath(aggregate.stage1_logs(), REPO))])
    block_c, ready = _block_c_scores(reg, sc, complete, stage1, root, out)
    out["equivalence"] = _equivalence(reg, block_c, ready, stage1)
    if "halfcheetah_pairing" in out:
        out["halfcheetah_pairing"]["original_arm"] = original_arm_row(
            reg, sc, out["equivalence"], out["halfcheetah_pairing"]
        )
    out["diagnostics"] = _diagnostics(reg, sc, complete)
    return out


def analyze(where, done: dict) -> dict:
    """The study on the committed logs under where.root: {"reg": the toml, "res5": analyze_5M's result}."""
    reg5 = load_5M()
    return {"reg": reg5, "res5": analyze_5M(reg5, where.root)}


# ---- report/mujoco_5M.md
# the words the 5M page may use: a claim's verdict (claims_study.evaluate), a Welch row, a block C row and its reachable
# margin, amendment 1's state, a block D row (the verdict's vocabulary where the page shares them)
VOCAB_5M = (
    *claims_study.ORDER,
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
    "paired",
    "Welch",
    "grows late in training",
    "shrinks",
    "no change shown",
)
PAGE_5M_JSON = os.path.join(REPO, "benchmark", "results", "mujoco_5M.json")
HEADLINE_DATE, FIRST_MATCHED_DATE = (
    "2026-11-23",
    "2026-11-25",
)  # the HalfCheetah 5M headline block; the unpaired sgd-matched runs


def _spread(values: list) -> list:
    """[median, min, max] of `values`."""
    return [float(np.median(values)), float(min(values)), float(max(values))]


def _runs_page(reg: dict, res: dict) -> dict:
    """The page's settings and which runs are in: the toml's common block, the runs before and after the rules."""
    common, before, budget = reg["common"], res["before_rules"], reg["common"]["budget"]
    seeds = hparams.parse_seeds(common["seeds"])
    label = hparams.algo_label
    return {
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
    }


def _blocks_ab_page(res: dict) -> dict:
    """Blocks A and B on the page, and the tasks below the random policy."""
    label = hparams.algo_label
    return {
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
    }


def _block_c_page(reg: dict, res: dict) -> dict:
    """Block C on the page: per task the paired TOST, its reachable margin, the Holm word and the 1M result."""
    return {
        "holm_waits": len(res["equivalence"]) < len(reg["blocks"]["equivalence"]["tasks"]),
        "rows": [
            {
                "task": r["task"],
                "n": r["n"],
                "mean": r["mean"],
                "ci": list(r["ci"]),
                "reach_margin": r["reach_margin"],
                "reach_answer": "inside" if r["equivalent_reach"] else "not inside",
                "answer": vd.tost_page_word(r, reg["common"]["alpha"]),
                "p_holm": r["p_holm"],
                "reach": r["reach"],
                "at_1M": {"mean": r["at_1M"]["mean"], "ci": list(r["at_1M"]["ci"])},
            }
            for r in res["equivalence"]
        ],
        "collapsed": [r["task"] for r in res["equivalence"] if r["below_random"]],
    }


def _diagnostics_page(res: dict) -> list:
    """Block D on the page: per task the fifths' medians [median, min, max] over the seeds, the smallest cos."""
    return [
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
    ]


def page_5M(reg: dict, res: dict) -> dict:
    """Every number and word of report/mujoco_5M.md, from analyze_5M's result: counts, lists and words of VOCAB_5M;
    benchmark/templates/mujoco_5M.md.j2 only formats them."""
    out = {
        **_runs_page(reg, res),
        **_blocks_ab_page(res),
        "block_c": _block_c_page(reg, res),
        "diagnostics": _diagnostics_page(res),
    }
    pairing = res.get("halfcheetah_pairing")
    if pairing is not None:
        out["pairing"] = _pairing_page(reg, res, pairing)
    return out


def _arm_row(reg: dict, r: dict, arm: str) -> dict:
    """One row of the page's HalfCheetah block C with either sgd-matched arm: its test, numbers and word."""
    return {
        "arm": arm,
        "test": r["test"],
        "n": r["n"],
        "mean": r["mean"],
        "ci": list(r["ci"]),
        "p": r["p"],
        "answer": vd.tost_page_word(r, reg["common"]["alpha"]),
        "p_holm": r["p_holm"],
        "reach": r["reach"],
    }


def _pairing_page(reg: dict, res: dict, pairing: dict) -> dict:
    """Amendment 1 on the page: the reruns' pairing, the first arm's, the leading episodes each pair of runs
    shares per seed, and block C on HalfCheetah with each sgd-matched arm (the rerun's row is block C's)."""
    amendment = reg["amendments"]["halfcheetah_pairing"]
    rows = []
    used = next((r for r in res["equivalence"] if r["task"] == "HalfCheetah"), None)
    if used is not None and pairing["paired"]:
        rows.append(_arm_row(reg, used, f"rerun of {amendment['date']} (block C's)"))
    if pairing.get("original_arm") is not None:
        rows.append(
            _arm_row(
                reg,
                pairing["original_arm"],
                f"{FIRST_MATCHED_DATE} (the pre-registered arm; this test not pre-registered)",
            )
        )
    return {
        "date": amendment["date"],
        "logs": amendment["logs"],
        "unpaired_date": FIRST_MATCHED_DATE,
        "runs_in": pairing["runs_in"],
        "paired_seeds": pairing["paired_seeds"],
        "answer": "used" if pairing["paired"] else "not used yet",
        "original_paired_seeds": pairing["original_paired_seeds"],
        "original_paired": pairing["original_paired_seeds"] == hparams.parse_seeds(reg["common"]["seeds"]),
        "shared_episodes": pairing["shared_episodes"],
        "episodes_before_update": pairing["episodes_before_update"],
        "arms": rows,
    }


def details(result: dict) -> dict:
    """REPORT.md's line on this study: how many 5M runs the page judges, how many of them ran before the rules were
    written (the HalfCheetah headline block), and, where HalfCheetah's block C uses amendment 1's reruns, the
    amendment's date, its reruns and the date of the sgd-matched runs it was written after."""
    reg, res = result["reg"], result["res5"]
    before = res["before_rules"]
    out = {
        "runs": res["runs_expected"],
        "before_rules": before["runs"],
        "after_rules": res["runs_expected"] - before["runs"],
        "before_cells": [f"{t} {hparams.algo_label(a)}" for t, a in before["cells"]],
        "before_date": HEADLINE_DATE,
    }
    pairing = res.get("halfcheetah_pairing")
    if pairing is not None and pairing["paired"]:
        date = reg["amendments"]["halfcheetah_pairing"]["date"]
        out["amendment"] = {
            "date": date,
            "reruns": len(pairing["runs_in"]),
            "first_runs_date": FIRST_MATCHED_DATE,
            "after_first_runs": date > FIRST_MATCHED_DATE,
        }
    return out


# ---- REPORT.md's part: the per-task table (its last columns are SMAC at 5M) and the line on the 5M runs
EQUIV_WORDS = ("equivalent", "different", "not shown")  # the per-task table's paired TOST column
AT_5M_KINDS = ("same as stage 1", "runs in", "final")  # the per-task table's SMAC-at-5M column


def per_task_data(d, equiv: dict, res5: dict) -> list[dict]:
    """REPORT.md's per-task rows: SMAC, the best baseline, sgd-matched at the stage-1 budget ({mean, std}); SMAC -
    sgd-matched (normalized, paired; `answer` a word of EQUIV_WORDS); the step ratio; SMAC at 5M (MuJoCo, `kind`
    "same as stage 1" / "runs in" / "final") beside the paper's SMAC, the one pair of columns at the same budget."""
    by = aggregate.by_cell(d.cells)
    at5 = {r["task"]: r for r in res5["table"] if r["algo"] == "smac"}

    def cell(r: Optional[dict]) -> Optional[dict]:
        return None if r is None else {"mean": r["mean"], "std": r["std"]}

    def equivalence(r: dict) -> Optional[dict]:
        if not r.get("n"):
            return None
        word = "equivalent" if r["equivalent"] else "different" if r["p"] < 0.05 else "not shown"
        return {"mean": r["mean"], "ci": list(r["ci"]), "answer": word, "n": r["n"]}

    def smac_5M(task: str) -> dict:
        if hparams.group(task) != "mujoco":
            return {"kind": "same as stage 1"}
        r = at5.get(task)
        if r is None:
            return {"kind": "runs in", "n": len(res5["done"].get((task, "smac"), [])), "of": 5}
        return {"kind": "final", "mean": r["mean"], "std": r["sd"], "p": r["p"]}

    rows = []
    for t in hparams.tasks():
        base = [by[(t, a)] for a in hparams.PAPER_ALGOS if a != "smac" and (t, a) in by]
        best = max(base, key=lambda r: r["mean"]) if base else None
        rows.append(
            {
                "task": t,
                "smac": cell(by.get((t, "smac"))),
                "best": None if best is None else {"algo": hparams.algo_label(best["algo"]), **cell(best)},
                "matched": cell(by.get((t, "sgd-matched"))),
                "equivalence": equivalence(equiv[t]),
                "step_ratio": step_ratio(t),
                "at_5M": smac_5M(t),
                "paper": list(hparams.paper_result(t, "smac")),
            }
        )
    return rows


def report(result: dict, done: dict) -> dict:
    """This study's part of REPORT.md's own data: the per-task rows (per_task_data: the grid study's stage-1 cells and
    paired comparisons over seeds 1-5, for the tasks of its block 1 the pre-registered study's 20 paired seeds, and
    SMAC at 5M) and the line on the 5M runs (details)."""
    equiv = dict(done["grid"]["equiv"])
    equiv.update({r["task"]: {**r, "prereg": True} for r in done["prereg"]["pre"]["equivalence"]})
    return {
        "per_task": per_task_data(done["grid"]["data"], equiv, result["res5"]),
        "mujoco_5M": details(result),
    }


DIGITS_5M = 7  # 6 would turn a last-fifth median of 125.5505 into 125.55, printed 125.5 at 4 digits


# the paper states its MuJoCo budget nowhere; its HalfCheetah text implies 5M (aggregate.PAPER_BUDGET_NOTE)
TITLE = (
    "MuJoCo at 5M: the paper's budget on HalfCheetah (inferred from its text), assumed for the other tasks"
)


def write(result: dict, where) -> list[str]:
    """report/mujoco_5M.md: what the 5M runs show so far, by the pre-registered rules, rendered from page_5M's data
    as JSON (floats to DIGITS_5M significant digits); and where.commit, that JSON, benchmark/results/mujoco_5M.json."""
    data = page_5M(result["reg"], result["res5"])
    return pages.write_study_page(where, "mujoco_5M.md", TITLE, data, PAGE_5M_JSON, DIGITS_5M)


# ---- the verdict
def table_row(cells: list, res5: dict) -> dict:
    """The verdict's row "table": the paper's table, each cell by Welch against the paper's mean and std. Its answer
    counts the cells at a matched budget only, MuJoCo at 5M (block B: `matched` True); the classic-control cells at
    our budgets (the grid study's; the paper states none) stand beside, `matched` False, not counted. `cells`: every
    cell compared, `of`: the cells counted."""
    compared = [r for r in cells if r["comparable"] and num(r["p_vs_paper"]) is not None]
    table5 = res5["table"]
    smac5 = []
    for r in table5:
        if r["algo"] == "smac":
            side = "above the paper's" if r["mean"] > r["paper"][0] else "below the paper's"
            smac5.append(
                {
                    "task": r["task"],
                    "mean": r["mean"],
                    "paper": r["paper"][0],
                    "p": r["p"],
                    "answer": side if r["differs"] else "not shown to differ",
                }
            )
    smac5.sort(key=lambda r: vd.ORDER[r["answer"]])
    groups = {
        "classic": {
            "cells": len(compared),
            "differ": sum(r["p_vs_paper"] < vd.ALPHA for r in compared),
            "matched": False,
        },
        "mujoco_5M": {
            "cells": len(table5),
            "differ": sum(bool(r["differs"]) for r in table5),
            "matched": True,
        },
    }
    counted = [g for g in groups.values() if g["matched"]]
    return {
        "id": "table",
        "numbers": {"cells": len(compared) + len(table5), **groups, "smac_5M": smac5},
        "answer": [["different (Welch)", sum(g["differ"] for g in counted)]],
        "of": sum(g["cells"] for g in counted),
        "links": ["report/grid.md", "report/mujoco_5M.md"],
    }


def headline_row(headline: list, pre: dict) -> dict:
    """The verdict's row "headline": HalfCheetah at 5M, SMAC vs AC-CG (the headline block's runs, Welch), and under
    the paper-literal reading (the pre-registered study's block 3, `pre`: its results)."""
    cells5 = aggregate.load_cells(headline, budgets={"HalfCheetah": 5_000_000}) if headline else {}
    f5 = {
        a: [f for _, f, _ in cells5.get(("HalfCheetah", a), {"finished": []})["finished"]]
        for a in ("smac", "cg")
    }
    w5 = stats.welch_test(f5["smac"], f5["cg"])
    lit = pre["literal_5M"]
    wl = lit["smac_vs_cg"]
    return {
        "id": "headline",
        "numbers": {
            "smac": float(np.mean(f5["smac"])) if f5["smac"] else None,
            "cg": float(np.mean(f5["cg"])) if f5["cg"] else None,
            "p": w5["p"] if w5 else None,
            "paper": [hparams.paper_result("HalfCheetah", a)[0] for a in ("smac", "cg")],
            "literal": {
                "smac": lit["smac"]["mean"],
                "cg": lit["cg"]["mean"],
                "p": wl["p"] if wl else None,
                "answer": vd.LITERAL_WORD[lit["verdict"]],
            },
        },
        "answer": "reproduced" if w5 and w5["diff"] > 0 and w5["p"] < vd.ALPHA else "not reproduced",
        "links": ["report/mujoco_5M.md", "report/prereg.md"],
    }


def sgd_5M_tasks(res5: dict, one_eq: set) -> list:
    """The verdict's row "sgd_5M"'s tasks: block C's word per task, its TOST p (and, for information, that p
    Holm-adjusted over the tasks: the registration applies Holm to "different" only), its secondary margin, and its
    notes (the amendment's rerun, both arms below the random policy, equivalent at the stage-1 budget `one_eq` but
    not here)."""
    eq5 = []
    for r in res5["equivalence"]:
        word = vd.block_c_word(r)
        notes = []
        if r["task"] == "HalfCheetah" and res5.get("halfcheetah_pairing", {}).get("paired"):
            notes.append("SGD arm rerun to pair the seeds (amendment 1)")
        if r["below_random"]:
            notes.append("both arms below the random policy")
        if r["task"] in one_eq and word != vd.EQUIVALENT:
            notes.append(f"{vd.EQUIVALENT} at the stage-1 budget")
        eq5.append(
            {
                "task": r["task"],
                "mean": r["mean"],
                "ci": list(r["ci"]),
                "answer": word,
                "p_tost": r["p_tost"],
                "p_tost_holm": r["p_tost_holm"],
                "reach_margin": r["reach_margin"],
                "reach_answer": "secondary passes" if r["equivalent_reach"] else "secondary fails",
                "notes": notes,
            }
        )
    eq5.sort(key=lambda r: vd.ORDER[r["answer"]])
    return eq5


def ell_tasks(res5: dict) -> list:
    """The verdict's row "ell"'s tasks: ||l||^2 / lambda over the 5M runs (block D), first vs last fifth, medians
    over seeds, by damping."""
    diag = [
        {
            "task": r["task"],
            "damping": r["damping"],
            "first": float(np.median([x["first"]["ell_over_lambda"] for x in r["runs"]])),
            "last": float(np.median([x["last"]["ell_over_lambda"] for x in r["runs"]])),
            "last_max": max(x["last"]["ell_over_lambda"] for x in r["runs"]),
            "p": r["p"],
            "answer": vd.DIAG_WORD[r["verdict"]],
        }
        for r in res5["diagnostics"]
    ]
    diag.sort(key=lambda r: r["damping"])
    return diag


def below_random_point(res5: dict) -> list:
    """The verdict's point "below_random": the tasks where every algorithm run at 5M ends below the random policy,
    with how many were run of the stage-1 grid's and the names of those not run."""
    return [
        {
            "task": b["task"],
            "random": b["random"],
            "n_run": b["n_run"],
            "n_algos": b["n_algos"],
            "not_run": [vd.ARM.get(a, hparams.algo_label(a)) for a in b["not_run"]],
            "cells": [
                {
                    "algo": vd.ARM.get(c["algo"], hparams.algo_label(c["algo"])),
                    "mean": c["mean"],
                    "normalized": c["normalized"],
                    "peak_normalized": c["peak_normalized"],
                    "peak_step": c["peak_step"],
                }
                for c in b["cells"]
            ],
        }
        for b in res5["below_random"]
    ]


def curvature_point(res5: dict, stage1_row: dict, eq5: list, rank1: list) -> dict:
    """The verdict's point "curvature": how many tasks show equivalence at the stage-1 budget (the grid study's row
    "sgd_stage1") and at 5M, and of those which can speak to curvature (verdict.curvature_word: both arms at least
    half the paper's best and more than the margin below the best any algorithm reaches on the task in the same runs,
    and the rank-1 term changing SGD's step by at least verdict.STEP_CHANGE, an amendment made after the runs;
    at 5M on block C's scores and the 5M cells), the rank-1 term's size where lambda <= 0.01 (the pre-registered
    study's rank1 figures, with the smallest cos(g, step) at 5M), and ||l||^2 / lambda late in the 5M runs."""
    low = [r for r in res5["diagnostics"] if r["damping"] <= 0.01]
    one = stage1_row["numbers"]
    equivalent_5M = {t["task"] for t in eq5 if t["answer"] == vd.EQUIVALENT}
    return {
        "equivalent": {
            "stage1": [len(one["tasks"].get(vd.EQUIVALENT, [])), stage1_row["of"]],
            "5M": [len(equivalent_5M), len(eq5)],
        },
        "speaks": {
            "stage1": one["curvature"],
            "5M": vd.curvature_cells(
                {r["task"]: r for r in res5["equivalence"] if r["task"] in equivalent_5M}
            ),
        },
        "rule": {"half": vd.HALF, "margin": vd.EQUIV_MARGIN, "step_change": vd.STEP_CHANGE},
        "rank1": [
            {
                "task": r["task"],
                "damping": r["damping"],
                "n": r["n"],
                "removed": list(r["removed"]),
                "cos": list(r["cos"]),
                "min_cos": r["min_cos"],
                "min_cos_5M": next(
                    (min(x["min_cos"] for x in b["runs"]) for b in low if b["task"] == r["task"]), None
                ),
            }
            for r in rank1
        ],
        "late": [
            {
                "task": r["task"],
                "last": float(np.median([x["last"]["ell_over_lambda"] for x in r["runs"]])),
            }
            for r in low
        ],
    }


def verdict(result: dict, done: dict) -> dict:
    """The rows "table", "headline", "sgd_5M" and "ell", the points "below_random" and "curvature", the design's
    seeds per 5M cell, and the opening sentences' numbers of the 5M cells and of the tasks that can speak. Reads the grid study's Data (its cells and headline runs) and its verdict row "sgd_stage1"
    (the tasks equivalent at the stage-1 budget), and the pre-registered study's results and rank1 figures."""
    res5 = result["res5"]
    data, pre = done["grid"]["data"], done["prereg"]
    stage1_row = next(r for r in done["grid"]["verdict"]["rows"] if r["id"] == "sgd_stage1")
    one_eq = set(stage1_row["numbers"]["tasks"].get(vd.EQUIVALENT, []))
    eq5, diag = sgd_5M_tasks(res5, one_eq), ell_tasks(res5)
    table = table_row(data.cells, res5)
    rows = [
        table,
        headline_row(data.headline, pre["pre"]),
        vd.tallied_row("sgd_5M", {"tasks": eq5}, eq5, "report/mujoco_5M.md"),
        vd.tallied_row("ell", {"tasks": diag}, diag, "report/mujoco_5M.md"),
    ]
    points = {
        "below_random": below_random_point(res5),
        "curvature": curvature_point(res5, stage1_row, eq5, pre["rank1"]),
    }
    design = {"seeds_5M": len(hparams.parse_seeds(result["reg"]["common"]["seeds"]))}
    # the opening sentences: the 5M cells that differ from the paper's table, and how many of the tasks equivalent
    # at 5M can speak to curvature
    declared = {
        "table": table["numbers"]["mujoco_5M"],
        "sgd_5M": {"can_speak": points["curvature"]["speaks"]["5M"]["n_can"], "step_change": vd.STEP_CHANGE},
    }
    return {"rows": rows, "points": points, "design": design, "summary": declared}
