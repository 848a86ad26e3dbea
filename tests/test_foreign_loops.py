"""python -m benchmark.foreign_loops --batch-sizes: kl_step_ in both A2C loops, one row per loop, rollout length and
seed."""

import numpy as np

from benchmark import foreign_loops


def batch_rows(out: str) -> list:
    """The batch-size table's rows, each a list of its cells."""
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("| a2c")
    ]


def test_batch_sizes_run_both_a2c_loops_one_row_per_loop_size_and_seed(capsys):
    foreign_loops.main(["--loops", "--batch-sizes", "5", "8", "--seeds", "1", "2", "--budget", "200"])
    rows = batch_rows(capsys.readouterr().out)
    assert [row[:4] for row in rows] == [
        [loop, str(size), str(seed), str(200 // size)]
        for loop in ("a2c", "a2c-shared-trunk")
        for size in (5, 8)
        for seed in (1, 2)
    ]
    kl = [float(row[8]) for row in rows]
    assert all(0.005 <= value <= 0.015 for value in kl), kl  # kl_step_ moved each policy by about 0.01
    taken = [float(row[9]) for row in rows]
    assert all(0.5 <= p <= 1.0 for p in taken), taken  # two actions: the taken one is at least as likely


def test_a_batch_row_counts_the_updates_without_a_step_and_at_the_cap():
    run = foreign_loops.Run("kl")
    run.returns = [10.0] * 5 + [200.0] * 20
    run.solved_at = 4000
    run.etas = [0.0, 0.5, 0.2, 0.3, 0.1, 0.4, 0.2, 0.1]
    # the largest parameter change of each step: the cap (0.1) on three of them, one within rounding of it
    run.largest_change = [0.0, 0.1, 0.02, 0.1 * (1 + 1e-12), 0.05, 0.1, 0.099, 0.03]
    run.kl = [0.0, 0.004, 0.01, 0.012, 0.009, 0.003, 0.011, 0.01]
    run.taken_prob = [0.5] * 7 + [0.9]
    cells = batch_rows(foreign_loops.batch_row("a2c", 5, 1, run))[0]
    assert cells[3:] == ["8", "200.0", "4000", "12.5%", "37.5%", f"{np.median(run.kl):.2e}", "0.900"]
