"""The statistics of reports and leaderboards, on inputs whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from seedbench import stats


def test_iqm_is_the_mean_of_the_middle_half():
    assert stats.iqm(np.arange(1, 9)) == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    assert stats.iqm([0.0, 0.0, 1.0, 1.0, 100.0, -100.0, 0.5, 0.5]) == pytest.approx(0.5)


def test_iqm_and_probability_of_improvement_match_rliable():
    metrics = pytest.importorskip("rliable.metrics")
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(5, 3)), rng.normal(0.4, 1, size=(7, 3))
    assert stats.iqm(x) == pytest.approx(metrics.aggregate_iqm(x))
    assert stats.probability_of_improvement(x, y) == pytest.approx(metrics.probability_of_improvement(x, y))


@pytest.mark.parametrize("draw, true_mean, n", [
    (lambda rng, n: rng.normal(0.3, 1.0, n), 0.3, 20),
    (lambda rng, n: rng.binomial(1, 0.6, n).astype(float), 0.6, 30),  # per-seed success-like scores
    (lambda rng, n: rng.exponential(1.0, n), 1.0, 40),  # skewed
])
def test_bootstrap_ci_covers_the_true_mean_at_about_95_percent(draw, true_mean, n):
    rng = np.random.default_rng(12345)
    trials = 300
    hits = sum(stats.bootstrap_ci(draw(rng, n), n_resamples=1000, seed=i).contains(true_mean) for i in range(trials))
    # Percentile intervals run a little short for small n (about 92-94 % here); a broken interval (e.g. one
    # built from the standard deviation instead of the standard error) lands far outside this window.
    assert 0.88 <= hits / trials <= 0.99, hits / trials


def test_stratified_bootstrap_covers_the_mean_of_task_means():
    rng = np.random.default_rng(7)
    trials, hits = 200, 0
    for i in range(trials):
        scores = [rng.normal(0.2, 0.5, 15), rng.normal(0.8, 0.1, 10)]  # two tasks, unequal runs
        hits += stats.bootstrap_ci(scores, n_resamples=1000, seed=i).contains(0.5)
    assert 0.88 <= hits / trials <= 0.99


def test_stratified_bootstrap_keeps_tasks_apart():
    # Pooling both tasks would resample "which task" too and widen the interval enormously.
    scores = np.column_stack([np.full(10, 0.0) + np.linspace(-0.01, 0.01, 10), np.full(10, 1.0)])
    ci = stats.bootstrap_ci(scores)
    assert ci.point == pytest.approx(0.5)
    assert ci.high - ci.low < 0.02


def test_interval_edge_cases():
    one = stats.bootstrap_ci([0.7])
    assert one.point == 0.7 and math.isnan(one.low) and math.isnan(one.high)
    same = stats.bootstrap_ci([0.5, 0.5, 0.5])
    assert (same.low, same.point, same.high) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError):
        stats.bootstrap_ci([])


def test_bootstrap_is_reproducible():
    x = np.random.default_rng(0).normal(size=8)
    assert stats.bootstrap_ci(x, seed=4) == stats.bootstrap_ci(x, seed=4)
    assert stats.bootstrap_ci(x, "iqm", seed=1) == stats.bootstrap_ci(x, "iqm", seed=1)


def test_probability_of_improvement_of_identical_agents_is_one_half():
    x = np.array([0.2, 0.5, 0.5, 0.9])
    assert stats.probability_of_improvement(x, x) == 0.5
    assert stats.probability_of_improvement(x, x[::-1]) == 0.5
    # independent draws from one distribution: ≈ 0.5 on average
    rng = np.random.default_rng(1)
    values = [stats.probability_of_improvement(rng.normal(size=5), rng.normal(size=5)) for _ in range(400)]
    assert np.mean(values) == pytest.approx(0.5, abs=0.03)
    ci = stats.probability_of_improvement_ci(rng.normal(size=10), rng.normal(size=10))
    assert ci.contains(0.5)


def test_probability_of_improvement_limits_and_ties():
    assert stats.probability_of_improvement([0.9, 0.8], [0.1, 0.2, 0.3]) == 1.0
    assert stats.probability_of_improvement([0.1], [0.9]) == 0.0
    assert stats.probability_of_improvement([1.0, 0.0], [1.0]) == 0.25  # one tie (½) and one loss
    assert stats.probability_of_improvement_ci([0.9, 0.8, 0.95], [0.1, 0.2, 0.15]).low == 1.0
    # one run on one side (an experiment part-way through): the point, and no interval instead of an error
    one_side = stats.probability_of_improvement_ci([0.5], [0.25, 0.75])
    assert one_side.point == 0.5 and math.isnan(one_side.low) and math.isnan(one_side.high)


def test_interpolation_onto_a_grid():
    grid = np.array([-1.0, 0.0, 5.0, 10.0, 15.0])
    out = stats.interpolate([0, 10], [0.0, 1.0], grid)
    assert np.isnan(out[0]) and np.isnan(out[-1])  # no extrapolation
    assert out[1:4] == pytest.approx([0.0, 0.5, 1.0])
    # repeated x (two evaluations at the same budget) are averaged
    assert stats.interpolate([0, 0, 10], [0.0, 1.0, 1.0], np.array([0.0]))[0] == pytest.approx(0.5)


def test_common_grid_covers_only_the_shared_range():
    grid = stats.common_grid([[0, 10, 20], [0, 12, 25], [2, 18]], num=5)
    assert grid[0] == 2 and grid[-1] == 18 and len(grid) == 5
    with pytest.raises(ValueError):
        stats.common_grid([[0, 1], [5, 6]])


def test_curve_band():
    curves = [([0, 10, 20], [0.0, 0.5, 1.0]), ([0, 5, 20], [0.2, 0.4, 0.6]), ([0, 20], [0.1, 0.8])]
    band = stats.curve_band(curves, num=11)
    assert band.runs.shape == (3, 11)
    assert band.mean[0] == pytest.approx(0.1)
    assert np.all(band.low <= band.mean + 1e-12) and np.all(band.mean <= band.high + 1e-12)
    same = stats.curve_band([([0, 1], [0.0, 1.0])] * 3, num=3)
    assert same.low == pytest.approx(same.mean) and same.high == pytest.approx(same.mean)
    single = stats.curve_band([([0, 1], [0.0, 1.0])], num=3)
    assert np.isnan(single.low).all()


def test_normalized_auc_and_x_to_reach():
    assert stats.normalized_auc([0, 10], [0.4, 0.4]) == pytest.approx(0.4)
    assert stats.normalized_auc([0, 1, 2], [0.0, 0.5, 1.0]) == pytest.approx(0.5)
    assert stats.normalized_auc([5], [0.3]) == 0.3
    assert stats.x_to_reach([0, 10, 20], [0.0, 0.4, 0.8], 0.6) == pytest.approx(15.0)
    assert stats.x_to_reach([0, 10], [0.7, 0.9], 0.5) == 0.0
    assert math.isnan(stats.x_to_reach([0, 10], [0.1, 0.2], 0.5))


def test_sign_flip_p_by_hand():
    # [1, 2, 3]: of the 8 sign assignments only all-plus and all-minus reach |mean| 2 -> 2/8
    assert stats.sign_flip_p([1, 2, 3]) == pytest.approx(0.25)
    # [2, -1, 1]: signed sums 4, 2, 2, 0 and their negatives; |sum| >= 2 in 6 of 8
    assert stats.sign_flip_p([2, -1, 1]) == pytest.approx(0.75)
    assert stats.sign_flip_p([0.1] * 5) == pytest.approx(2 / 32)  # the floor at five seeds: 0.0625
    assert stats.sign_flip_p([0, 0]) == 1.0 and math.isnan(stats.sign_flip_p([]))
    # beyond 16 pairs: sampled, the observed assignment counted in
    assert stats.sign_flip_p(list(range(1, 21)), n_resamples=999) == pytest.approx(1 / 1000)


def test_permutation_p_by_hand():
    # pooled [1, 2, 3, 4] split 2 / 2: mean differences -2, -1, 0, 0, 1, 2; |d| >= 2 in 2 of 6
    assert stats.permutation_p([1, 2], [3, 4]) == pytest.approx(1 / 3)
    # [0, 1] vs [1]: splits ({0,1}|1: -0.5), ({0,1}|1: -0.5), ({1,1}|0: 1); |d| >= 0.5 in all 3
    assert stats.permutation_p([0, 1], [1]) == pytest.approx(1.0)
    assert stats.permutation_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert math.isnan(stats.permutation_p([], [1.0]))
    assert stats.permutation_p([0] * 12, [1] * 12, n_resamples=999) == pytest.approx(1 / 1000)  # sampled
