"""Statistics for comparing training methods over seeds (rliable's protocol, on scipy.stats).

A foundation module (NumPy at import, SciPy inside the functions that need it): reports and leaderboards
aggregate with it, and the trainer's closing before/after line takes its paired interval from it.

Everything here follows Agarwal et al. 2021 ("Deep RL at the Edge of the Statistical Precipice", the
rliable library): report a point estimate *and* a 95 % stratified-bootstrap interval over runs, prefer
the interquartile mean (IQM) to the median, and compare methods by the probability of improvement.

Scores are laid out as rliable lays them out: ``scores[run, task]`` (runs = seeds; tasks = envs or task
types), or a 1-D array of per-seed values for a single task. A *stratified* bootstrap resamples runs
independently within each task; here each task column is passed to `scipy.stats.bootstrap` as its own
sample (``paired=False`` resamples samples independently), which is exactly that scheme and lets
tasks have different numbers of runs. rliable's own bootstrap draws from NumPy's *global* random state;
scipy's takes an explicit ``rng``, so reports and leaderboards built twice are byte-identical.

Deviation from rliable: intervals use the percentile method (rliable's default) but a single run yields
a NaN interval instead of a zero-width one; a zero-width "interval" from one seed would look like
certainty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["CONFIDENCE", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "EXACT_PERMUTATION_MAX", "EXACT_SIGN_FLIP_MAX", "CurveBand", "Interval", "bootstrap_ci", "common_grid",
           "curve_band", "interpolate", "iqm", "normalized_auc", "paired_difference_ci", "permutation_p",
           "probability_of_improvement", "probability_of_improvement_ci", "sign_flip_p", "x_to_reach"]

DEFAULT_RESAMPLES = 2000  # rliable uses 50,000; 2,000 keeps reports fast and moves bounds < 0.5 pt
DEFAULT_SEED = 0  # fixed so a report or leaderboard build is reproducible byte for byte
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (``low``/``high`` are NaN when undefined)."""

    point: float
    low: float
    high: float
    n: int  # number of runs the estimate is based on (summed over tasks)

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


# ----------------------------------------------------------------------------------------------------
# Aggregates


def iqm(scores: np.ndarray | Sequence[float], axis: int | None = None) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50 % of all values (25 % trimmed each side).

    Matches ``rliable.metrics.aggregate_iqm`` (``scipy.stats.trim_mean(x, 0.25, axis=None)``).
    """
    from scipy.stats import trim_mean

    return trim_mean(np.asarray(scores, dtype=float), proportiontocut=0.25, axis=axis)


def _as_strata(scores) -> list[np.ndarray]:
    """Normalise input to a list of 1-D per-task arrays of run scores (NaNs dropped)."""
    if isinstance(scores, (list, tuple)) and scores and np.ndim(scores[0]) == 1:
        strata = [np.asarray(s, dtype=float) for s in scores]
    else:
        arr = np.asarray(scores, dtype=float)
        if arr.ndim == 1:
            strata = [arr]
        elif arr.ndim == 2:
            strata = [arr[:, j] for j in range(arr.shape[1])]
        else:
            raise ValueError(f"scores must be 1-D (runs) or 2-D (runs x tasks), got shape {arr.shape}")
    strata = [s[~np.isnan(s)] for s in strata]
    if not strata or any(s.size == 0 for s in strata):
        raise ValueError("every task needs at least one finite score")
    return strata


_STATISTICS: dict[str, Callable[..., np.ndarray]] = {}


def _stat_mean(*strata: np.ndarray, axis: int = -1) -> np.ndarray:
    # Mean over tasks of the per-task mean over runs (rliable's aggregate_mean).
    return np.mean([np.mean(s, axis=axis) for s in strata], axis=0)


def _stat_iqm(*strata: np.ndarray, axis: int = -1) -> np.ndarray:
    # IQM over all (run, task) scores pooled, per bootstrap replicate.
    pooled = np.concatenate([np.moveaxis(s, axis, -1) for s in strata], axis=-1)
    return iqm(pooled, axis=-1)


_STATISTICS["mean"] = _stat_mean
_STATISTICS["iqm"] = _stat_iqm


def bootstrap_ci(
    scores,
    statistic: str = "mean",
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Point estimate and stratified-bootstrap percentile interval of an aggregate over runs.

    ``scores``: 1-D per-run values, a 2-D ``(runs, tasks)`` array, or a list of per-task 1-D arrays
    (unequal run counts allowed). ``statistic``: ``"mean"`` (mean of per-task means) or ``"iqm"``.
    Returns NaN bounds when every task has a single run (nothing to resample).
    """
    strata = _as_strata(scores)
    func = _STATISTICS[statistic]
    point = float(func(*strata, axis=-1))
    n = int(sum(s.size for s in strata))
    if all(s.size < 2 for s in strata):
        return Interval(point, math.nan, math.nan, n)
    if all(np.ptp(s) == 0 for s in strata):  # degenerate: every resample gives the same value
        return Interval(point, point, point, n)
    low, high = _percentile_bootstrap(tuple(strata), func, -1, confidence, n_resamples, seed)
    return Interval(point, float(low), float(high), n)


def _percentile_bootstrap(samples: tuple[np.ndarray, ...], statistic, axis: int, confidence: float,
                          n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scipy's percentile bootstrap of a vectorized `statistic`, each sample resampled on its own (the
    stratified, independent resampling of rliable), with the seeded generator every interval here uses."""
    from scipy.stats import bootstrap

    res = bootstrap(samples, statistic, n_resamples=n_resamples, vectorized=True, paired=False, axis=axis,
                    confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    return res.confidence_interval.low, res.confidence_interval.high


def probability_of_improvement(scores_x, scores_y) -> float:
    """P(X > Y) + ½·P(X = Y) for a random run of X against a random run of Y, averaged over tasks.

    The Mann–Whitney U statistic divided by n_x·n_y (rliable's definition); identical score sets give
    exactly 0.5. Inputs as in `bootstrap_ci`; both must have the same tasks.
    """
    from scipy.stats import mannwhitneyu

    sx, sy = _as_strata(scores_x), _as_strata(scores_y)
    if len(sx) != len(sy):
        raise ValueError(f"X has {len(sx)} tasks, Y has {len(sy)}")
    probs = []
    for x, y in zip(sx, sy):
        if x.size == y.size and np.array_equal(np.sort(x), np.sort(y)):
            probs.append(0.5)
            continue
        u = mannwhitneyu(x, y, alternative="greater").statistic
        probs.append(float(u) / (x.size * y.size))
    return float(np.mean(probs))


def _poi_pairwise(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Vectorised P(X>Y)+½P(X=Y) along the last axis (for bootstrap replicates)."""
    diff = x[..., :, None] - y[..., None, :]
    return np.mean(np.where(diff > 0, 1.0, np.where(diff == 0, 0.5, 0.0)), axis=(-2, -1))


def probability_of_improvement_ci(
    scores_x,
    scores_y,
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """`probability_of_improvement` with a bootstrap interval resampling X and Y runs independently
    within each task (rliable's ``StratifiedIndependentBootstrap``)."""
    sx, sy = _as_strata(scores_x), _as_strata(scores_y)
    if len(sx) != len(sy):
        raise ValueError(f"X has {len(sx)} tasks, Y has {len(sy)}")
    point = probability_of_improvement(sx, sy)
    n = int(sum(s.size for s in sx) + sum(s.size for s in sy))
    k = len(sx)
    if any(s.size < 2 for s in sx + sy):  # one run on a side (an experiment in progress): no interval
        return Interval(point, math.nan, math.nan, n)

    def stat(*samples, axis=-1):
        xs, ys = samples[:k], samples[k:]
        return np.mean([_poi_pairwise(np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)) for a, b in zip(xs, ys)], axis=0)

    if all(np.ptp(s) == 0 for s in sx + sy):
        return Interval(point, point, point, n)
    low, high = _percentile_bootstrap(tuple(sx + sy), stat, -1, confidence, n_resamples, seed)
    return Interval(point, float(low), float(high), n)


# ----------------------------------------------------------------------------------------------------
# Curves


def common_grid(xs: Sequence[Sequence[float]], num: int = 101) -> np.ndarray:
    """An evenly spaced x-grid covering the range *every* run covers (no extrapolation)."""
    if not xs:
        raise ValueError("no curves")
    lo = max(float(np.min(x)) for x in xs)
    hi = min(float(np.max(x)) for x in xs)
    if hi < lo:
        raise ValueError(f"curves do not overlap (common range would be [{lo}, {hi}])")
    if hi == lo:
        return np.array([lo])
    return np.linspace(lo, hi, num)


def interpolate(x: Sequence[float], y: Sequence[float], grid: np.ndarray) -> np.ndarray:
    """Piecewise-linear interpolation of one run's curve onto ``grid``; NaN outside the run's range.

    Duplicate x values (several evaluations at the same budget) are averaged first.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if x.size == 0:
        return np.full(len(grid), np.nan)
    ux, inv = np.unique(x, return_inverse=True)
    uy = np.bincount(inv, weights=y) / np.bincount(inv)
    out = np.interp(grid, ux, uy)
    out[(grid < ux[0]) | (grid > ux[-1])] = np.nan
    return out


@dataclass(frozen=True)
class CurveBand:
    """Mean curve over runs with a pointwise bootstrap band, on a common grid."""

    grid: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    runs: np.ndarray  # (n_runs, len(grid)) interpolated per-run curves


def curve_band(
    curves: Sequence[tuple[Sequence[float], Sequence[float]]],
    grid: np.ndarray | None = None,
    *,
    num: int = 101,
    confidence: float = CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> CurveBand:
    """Interpolate each run's ``(x, y)`` onto a common grid and bootstrap the mean at every grid point.

    With a single task (one env) the stratified bootstrap reduces to resampling runs; the band is NaN
    with fewer than two runs.
    """
    if grid is None:
        grid = common_grid([c[0] for c in curves], num=num)
    runs = np.stack([interpolate(x, y, grid) for x, y in curves])
    mean = np.nanmean(runs, axis=0) if runs.size else np.full(len(grid), np.nan)
    low = np.full(len(grid), np.nan)
    high = np.full(len(grid), np.nan)
    complete = ~np.isnan(runs).any(axis=0)
    if runs.shape[0] >= 2 and complete.any():
        block = runs[:, complete]
        varying = np.ptp(block, axis=0) > 0
        lo_c, hi_c = block.mean(axis=0), block.mean(axis=0)
        if varying.any():
            lo_c[varying], hi_c[varying] = _percentile_bootstrap(
                (block[:, varying],), np.mean, 0, confidence, n_resamples, seed)
        low[complete], high[complete] = lo_c, hi_c
    return CurveBand(grid=np.asarray(grid, dtype=float), mean=mean, low=low, high=high, runs=runs)


def normalized_auc(x: Sequence[float], y: Sequence[float]) -> float:
    """Area under ``y(x)`` (trapezoid rule) divided by the x-range: the average success over the budget.

    1.0 means perfect from the first trajectory on; it rewards reaching a level *early*, which a final
    number cannot show. NaNs are dropped; a single point returns its y.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    if x.size == 0:
        return math.nan
    if x.size == 1 or x[-1] == x[0]:
        return float(np.mean(y))
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    return float(np.trapezoid(y, x) / (x[-1] - x[0]))


def x_to_reach(x: Sequence[float], y: Sequence[float], threshold: float) -> float:
    """The first x at which the piecewise-linear curve reaches ``threshold`` (NaN if it never does)."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    for i in range(x.size):
        if y[i] >= threshold:
            if i == 0:
                return float(x[0])
            frac = (threshold - y[i - 1]) / (y[i] - y[i - 1])
            return float(x[i - 1] + frac * (x[i] - x[i - 1]))
    return math.nan


# ----------------------------------------------------------------------------------------------------
# One run, before vs after


def paired_difference_ci(
    before: Sequence[float],
    after: Sequence[float],
    *,
    confidence: float = CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Mean of ``after - before`` over the same tasks, with a paired percentile-bootstrap interval.

    One run evaluated on a fixed task list before and after training gives two outcomes per task; the
    tasks (not the two evaluations) are the sampling unit, so a resample draws task indices with
    replacement and keeps each task's pair together. The interval is about the task list's sampling
    noise only: a single training seed says nothing about seed-to-seed variation (that needs several
    runs and `bootstrap_ci`). Fewer than two tasks give a NaN interval.
    """
    x = np.asarray(before, dtype=float)
    y = np.asarray(after, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"before and after need one value per task each; got shapes {x.shape} and {y.shape}")
    diff = y - x
    point = float(diff.mean()) if diff.size else math.nan
    if diff.size < 2:
        return Interval(point, math.nan, math.nan, int(diff.size))
    if np.ptp(diff) == 0:
        return Interval(point, point, point, int(diff.size))
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(n_resamples, diff.size))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Interval(point, float(low), float(high), int(diff.size))


# ----------------------------------------------------------------------------------------------------
# Tests for few seeds: sign-flip (paired) and permutation (two samples)

EXACT_SIGN_FLIP_MAX = 16
"""Up to this many pairs the sign-flip test enumerates all 2^n sign assignments (65,536 at 16)."""
EXACT_PERMUTATION_MAX = 20_000
"""Up to this many label splits the permutation test enumerates them all; more are sampled."""


def sign_flip_p(differences: Sequence[float], *, n_resamples: int = 20_000, seed: int = DEFAULT_SEED) -> float:
    """Two-sided p-value of "the paired differences are symmetric about 0" (mean 0) by sign flipping: the
    share of sign assignments whose |mean| is at least the observed |mean|. With few seeds a percentile
    bootstrap interval is too narrow (it never reaches past the sample's extremes); this test is exact.

    Exact over all 2^n assignments for n ≤ `EXACT_SIGN_FLIP_MAX`, else `n_resamples` random ones (the
    observed one counted in, so p > 0). The smallest attainable p is 2 / 2^n: 0.0625 at 5 seeds, so 5
    paired seeds can never give p < 0.05. NaN without differences; 1.0 when all are 0."""
    d = np.asarray([x for x in differences if x is not None and not math.isnan(x)], dtype=float)
    if d.size == 0:
        return math.nan
    observed = abs(d.mean())
    tolerance = 1e-12 * max(1.0, float(np.abs(d).max()))
    if d.size <= EXACT_SIGN_FLIP_MAX:
        codes = np.arange(2 ** d.size)[:, None] >> np.arange(d.size)[None, :] & 1
        means = np.abs(((1 - 2 * codes) * d).mean(axis=1))
        return float(np.mean(means >= observed - tolerance))
    rng = np.random.default_rng(seed)
    signs = rng.choice((-1.0, 1.0), size=(n_resamples, d.size))
    hits = int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - tolerance))
    return (hits + 1) / (n_resamples + 1)


def permutation_p(x: Sequence[float], y: Sequence[float], *, n_resamples: int = 20_000,
                  seed: int = DEFAULT_SEED) -> float:
    """Two-sided p-value of "x and y come from one distribution" by relabelling: the share of splits of the
    pooled values into groups of |x| and |y| whose |mean difference| is at least the observed one. It pairs
    nothing, so it suits arms without shared seeds, and is the unpaired companion of `sign_flip_p`.

    Exact over all C(n+m, n) splits up to `EXACT_PERMUTATION_MAX`, else `n_resamples` random ones (the
    observed split counted in). NaN when either group is empty."""
    from itertools import combinations

    a = np.asarray([v for v in x if v is not None and not math.isnan(v)], dtype=float)
    b = np.asarray([v for v in y if v is not None and not math.isnan(v)], dtype=float)
    if a.size == 0 or b.size == 0:
        return math.nan
    pooled, n = np.concatenate([a, b]), a.size
    observed = abs(a.mean() - b.mean())
    tolerance = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    total = pooled.sum()
    if math.comb(pooled.size, n) <= EXACT_PERMUTATION_MAX:
        firsts = np.array(list(combinations(range(pooled.size), n)))
        sums = pooled[firsts].sum(axis=1)
        diffs = np.abs(sums / n - (total - sums) / b.size)
        return float(np.mean(diffs >= observed - tolerance))
    rng = np.random.default_rng(seed)
    sums = np.array([pooled[rng.permutation(pooled.size)[:n]].sum() for _ in range(n_resamples)])
    hits = int(np.sum(np.abs(sums / n - (total - sums) / b.size) >= observed - tolerance))
    return (hits + 1) / (n_resamples + 1)
