"""Issue 46's lab measurement: SMAC with kl_step_ (ours: each step's length set by the KL it causes on the batch)
against the paper's fixed step eta, by the rule of benchmark/preregistration_kl_step.toml, fixed before the runs.

    python -m benchmark.kl_step          # committed logs -> benchmark/results/kl_step.json, benchmark/report/kl_step.md
                                         # (python -m benchmark.report writes them too)

analyze() returns the numbers and the words (VOCAB); markdown() renders them with benchmark/templates/kl_step.md.j2.
"""

from __future__ import annotations

import math
import os
import sys
import tomllib

import numpy as np
import scipy.stats as sps

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmark import hparams, pages, prereg  # noqa: E402

PREREG = os.path.join(REPO, "benchmark", "preregistration_kl_step.toml")
RESULTS = os.path.join(REPO, "benchmark", "results", "kl_step.json")
PAGE = os.path.join(REPO, "benchmark", "report", "kl_step.md")
VOCAB = ("KL step higher", "KL step lower", "not shown to differ", "waiting")  # a task's verdict


def median_step_norm(runs: dict) -> float:
    """The median over runs of each run's median |theta change| / eta_paper (updates.csv's step_norm)."""
    return float(np.median([np.nanmedian(r["updates"]["step_norm"]) for r in runs.values()]))


def compare(kl: dict, fixed: dict, seeds: list, paired_test: bool) -> dict:
    """d = kl - fixed over the seeds: the mean, its 95 % t-interval and the two-sided p of the rule's test."""
    if paired_test:
        d = np.array([kl[s] - fixed[s] for s in seeds])
        p = float(sps.ttest_rel([kl[s] for s in seeds], [fixed[s] for s in seeds]).pvalue)
        sem = float(d.std(ddof=1) / math.sqrt(len(d)))
        dof = len(d) - 1
    else:
        a = np.array([kl[s] for s in seeds if s in kl])
        b = np.array([fixed[s] for s in seeds if s in fixed])
        d = np.array([a.mean() - b.mean()])
        p = float(sps.ttest_ind(a, b, equal_var=False).pvalue)
        va = a.var(ddof=1) / len(a)
        vb = b.var(ddof=1) / len(b)
        sem = math.sqrt(va + vb)
        dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))  # Welch-Satterthwaite
    half = float(sps.t.ppf(0.975, dof) * sem)
    mean = float(d.mean())
    return {"mean": mean, "ci": [mean - half, mean + half], "p": p}


def analyze(root: str = REPO) -> dict:
    """The rule of preregistration_kl_step.toml on the committed logs: per task the finals of both arms, the test
    (paired when all seeds pair) and, once every task is in, Holm's p and the verdict (a word of VOCAB)."""
    reg = tomllib.load(open(PREREG, "rb"))
    common = reg["common"]
    seeds = hparams.parse_seeds(common["seeds"])
    alpha = common["alpha"]
    rows = []
    for task in common["tasks"]:
        budget = common["budgets"][task]
        kl = prereg._scores([os.path.join(root, common["logs"])], budget)
        fixed = prereg._scores([os.path.join(root, common["baseline_logs"])], budget)
        kl_runs = kl.get((task, "smac", "runs"), {})
        fixed_runs = fixed.get((task, "smac", "runs"), {})
        row = {
            "task": task,
            "budget": budget,
            "runs_in": sorted(kl_runs),
            "n_runs_in": len(kl_runs),
            "holm": False,
            "verdict": "waiting",
        }
        if sorted(kl_runs) != seeds:
            rows.append({**row, "complete": False})
            continue
        same = [
            s
            for s in seeds
            if s in fixed_runs and prereg.first_episode(kl_runs[s]) == prereg.first_episode(fixed_runs[s])
        ]
        paired_test = same == seeds
        kl_scores = kl[(task, "smac")]
        fixed_scores = fixed[(task, "smac")]
        row.update(
            complete=True,
            paired=paired_test,
            paired_seeds=same,
            n_paired=len(same),
            kl_finals=[kl_scores[s] for s in seeds],
            fixed_finals=[fixed_scores[s] for s in seeds],
            kl_raw=[kl[(task, "smac", "raw")][s] for s in seeds],
            fixed_raw=[fixed[(task, "smac", "raw")][s] for s in seeds],
            step_ratio=median_step_norm(kl_runs) / median_step_norm(fixed_runs),
            **compare(kl_scores, fixed_scores, seeds, paired_test),
        )
        rows.append(row)
    done = [r for r in rows if r["complete"]]
    if len(done) == len(rows):  # Holm over the four tasks once every task is in
        for r, p_holm in zip(done, prereg.holm([r["p"] for r in done])):
            higher = p_holm < alpha and r["mean"] > 0
            lower = p_holm < alpha and r["mean"] < 0
            r["p_holm"] = p_holm
            r["holm"] = True
            r["verdict"] = "KL step higher" if higher else "KL step lower" if lower else "not shown to differ"
    return {
        "target_kl": common["target_kl"],
        "reading": common["reading"],
        "seeds": seeds,
        "n_seeds": len(seeds),
        "tasks": rows,
    }


def markdown(res: dict) -> str:
    """report/kl_step.md from analyze's data (as JSON): benchmark/templates/kl_step.md.j2."""
    return pages.render("kl_step.md.j2", res)


def write() -> str:
    """kl_step.json and report/kl_step.md from the committed logs (also run by `python -m benchmark.report`)."""
    res = pages.committed(analyze(), RESULTS)
    with open(PAGE, "w") as f:
        f.write(markdown(res))
    return PAGE


def main() -> None:
    print(f"wrote {RESULTS} and {write()}")


if __name__ == "__main__":
    main()
