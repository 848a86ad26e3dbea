"""Our use of rliable and scipy (benchmark/stats.py) on hand-made data with known answers."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from benchmark import stats


def test_normalize_random_zero_best_one():
    assert stats.normalize([-1000.0, -500.0, 0.0], -1000.0, 0.0).tolist() == [0.0, 0.5, 1.0]
    assert stats.normalize(30.0, 10.0, 20.0) == pytest.approx(2.0)


def test_iqm_mean_median_and_optimality_gap_by_hand():
    # 8 runs x 1 task: IQM = mean of the middle 50 % = mean(2, 3, 4, 5) = 3.5
    scores = {"a": np.arange(8, dtype=float)[:, None] / 4.0}  # 0, .25, ..., 1.75
    out = stats.aggregate_intervals(scores, reps=200)["a"]
    assert out["IQM"][0] == pytest.approx(3.5 / 4.0)
    assert out["Mean"][0] == pytest.approx(np.mean(np.arange(8) / 4.0))
    assert out["Median"][0] == pytest.approx(np.median(np.arange(8) / 4.0))
    gap = np.mean(np.maximum(1.0 - np.arange(8) / 4.0, 0.0))  # mean of max(1 - x, 0)
    assert out["Optimality gap"][0] == pytest.approx(gap)
    for name, (point, lo, hi) in out.items():
        assert lo <= point <= hi, name


def test_probability_of_improvement_extremes():
    x, y = np.full((5, 3), 2.0), np.full((5, 3), 1.0)
    assert stats.improvement_probability(x, y, reps=100)[0] == pytest.approx(1.0)
    assert stats.improvement_probability(y, x, reps=100)[0] == pytest.approx(0.0)
    assert stats.improvement_probability(x, x, reps=100)[0] == pytest.approx(0.5)  # ties count one half


def test_performance_profile_fractions():
    prof = stats.performance_profile({"a": np.array([[0.1], [0.5], [0.9], [1.2]])}, [0.0, 0.5, 1.0])
    assert prof["a"].tolist() == pytest.approx([1.0, 0.5, 0.25])  # fraction of runs with score > tau


def test_t_mean_ci_by_hand():
    # (1, 2, 3, 4): mean 2.5, sd sqrt(5/3), t_0.975,3 = 3.182446 -> 2.5 -+ 3.182446 * sqrt(5/3) / 2
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert stats.t_mean_ci([1.0, 2.0, 3.0, 4.0]) == pytest.approx((2.5 - half, 2.5 + half), rel=1e-12)
    assert stats.t_mean_ci([1.0, 2.0, 3.0, 4.0], level=0.9)[1] == pytest.approx(
        2.5 + 2.353363 * math.sqrt(5 / 3) / 2
    )
    assert stats.t_mean_ci([5.0, 5.0]) == (5.0, 5.0)
    assert all(math.isnan(v) for v in stats.t_mean_ci([5.0]))


def test_iqm_over_steps_by_hand():
    # 4 runs x 1 task x 2 checkpoints: IQM of (0, 1, 2, 10) = mean(1, 2) = 1.5; of (3, 3, 3, 3) = 3
    curves = {"a": np.array([[[0.0, 3.0]], [[1.0, 3.0]], [[2.0, 3.0]], [[10.0, 3.0]]])}
    iqm, lo, hi = stats.iqm_over_steps(curves, reps=100)["a"]
    assert iqm.tolist() == pytest.approx([1.5, 3.0])
    assert lo[1] == pytest.approx(3.0) and hi[1] == pytest.approx(3.0) and lo[0] <= 1.5 <= hi[0]


def test_welch_vs_summary_matches_welch_on_the_raw_sample():
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0]
    vs = stats.welch_vs_summary(a, np.mean(b), np.std(b, ddof=1), len(b))
    full = stats.welch_test(a, b)
    assert vs["t"] == pytest.approx(full["t"]) and vs["p"] == pytest.approx(full["p"])
    assert vs["diff"] == pytest.approx(2.5 - 6.0) and stats.welch_vs_summary([1.0], 0.0, 1.0, 5) is None


def test_plots_save_titles_lays_out_writes_and_closes(tmp_path):
    import matplotlib.image
    import matplotlib.pyplot as plt

    from benchmark import stats

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    path = str(tmp_path / "f.png")
    stats.save(fig, path, "title", dpi=50, rect=(0, 0, 1, 0.9), fontsize=7)
    assert matplotlib.image.imread(path).shape[:2] == (100, 150)  # 3 x 2 inches at 50 dpi
    assert fig._suptitle.get_text() == "title" and fig._suptitle.get_fontsize() == 7
    assert not plt.fignum_exists(fig.number)  # closed


def test_unpaired_is_welch_in_paireds_shape_by_hand():
    """x = (1, 2, 3), y = (0, 0, 3): diff 1, se^2 = 1/3 + 3/3, Welch-Satterthwaite df = (4/3)^2 / ((1/3)^2/2 + 1/2)."""
    out = stats.unpaired({1: 1.0, 2: 2.0, 3: 3.0}, {1: 0.0, 2: 0.0, 3: 3.0}, [1, 2, 3], margin=0.5)
    se, df = math.sqrt(4 / 3), (4 / 3) ** 2 / ((1 / 3) ** 2 / 2 + 1 / 2)
    half = float(sps.t.ppf(0.95, df)) * se
    assert out["n"] == 3 and out["mean"] == pytest.approx(1.0)
    assert out["ci"] == pytest.approx((1 - half, 1 + half))
    assert out["p"] == pytest.approx(2 * sps.t.sf(1 / se, df))
    assert not out["equivalent"] and out["reach"] == pytest.approx(1 + half)


def test_the_tost_p_is_the_larger_one_sided_p_and_below_alpha_exactly_where_the_interval_is_inside():
    """Paired differences d: the TOST p at margin m is max(P one-sided t-test mean > -m, mean < +m), by hand from
    the t distribution; below 0.05 exactly where paired's 90 % interval lies inside (-m, m)."""
    from scipy import stats as sps

    d = np.array([0.03, -0.02, 0.05, 0.01, -0.04])
    se = d.std(ddof=1) / math.sqrt(5)
    by_hand = max(sps.t.sf((d.mean() + 0.1) / se, 4), sps.t.cdf((d.mean() - 0.1) / se, 4))
    assert stats.tost_p(d, 0.1) == pytest.approx(by_hand)
    x = {s: float(v) for s, v in enumerate(d, 1)}
    zero = {s: 0.0 for s in x}
    for margin in (0.02, 0.05, 0.06, 0.1):
        row = stats.paired(x, zero, list(x), margin)
        assert row["p_tost"] == pytest.approx(stats.tost_p(d, margin))
        assert (row["p_tost"] < 0.05) == row["equivalent"], margin
    assert stats.tost_p([0.01] * 3, 0.1) == 0.0 and stats.tost_p([0.2] * 3, 0.1) == 1.0
    assert math.isnan(stats.paired({1: 0.0}, {1: 0.0}, [1], 0.1)["p_tost"])
