"""Minimum detectable effect of a paired seed-level comparison, from the CPU study's archived noise.

    python docs/results/scale-study/mde.py            # from the repository root

Reads docs/results/cpu-study/runs (build B: grpo and seed seeds 0-4, control seed 0), takes each run's
final held-out success per split, pairs seed with grpo by seed, and prints the paired SD, the MDE at 80 %
power and two-sided alpha 0.05 for n seeds (t and normal quantiles), the sign-flip floor 2 / 2^n, and the
binomial evaluation noise of a success rate over N tasks.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from scipy import stats as st

from seedbench.report.data import read_runs
from seedbench.report.stats import permutation_p, sign_flip_p
from seedbench.report.tables import final_eval

RUNS = Path("docs/results/cpu-study/runs")
ALPHA, POWER = 0.05, 0.80


def finals(arm: str, split: str) -> dict[int, float]:
    out = {}
    for run in read_runs([RUNS]):
        if run.arm == arm:
            record = final_eval(run, split)
            if record:
                out[run.seed] = 100.0 * float(record["success_micro"])
    return out


def mde(sd: float, n: int, quantiles: str = "t") -> float:
    if quantiles == "t":
        return (st.t.ppf(1 - ALPHA / 2, n - 1) + st.t.ppf(POWER, n - 1)) * sd / math.sqrt(n)
    return (st.norm.ppf(1 - ALPHA / 2) + st.norm.ppf(POWER)) * sd / math.sqrt(n)


for split in ("test", "test_large"):
    seed, grpo = finals("seed", split), finals("grpo", split)
    shared = sorted(set(seed) & set(grpo))
    diffs = np.array([seed[s] - grpo[s] for s in shared])
    sd = float(diffs.std(ddof=1))
    corr = float(np.corrcoef([seed[s] for s in shared], [grpo[s] for s in shared])[0, 1]) if sd else float("nan")
    print(f"== {split}: seed - grpo by seed " + ", ".join(f"s{s} {d:+.2f}" for s, d in zip(shared, diffs)))
    print(f"   mean {diffs.mean():+.2f} pts, paired SD {sd:.2f} pts (sd seed {np.std(list(seed.values()), ddof=1):.2f}, "
          f"sd grpo {np.std(list(grpo.values()), ddof=1):.2f}, r {corr:+.2f})")
    if sd:
        t = diffs.mean() / (sd / math.sqrt(len(diffs)))
        half = st.t.ppf(0.975, len(diffs) - 1) * sd / math.sqrt(len(diffs))
        print(f"   t-interval [{diffs.mean() - half:+.1f}, {diffs.mean() + half:+.1f}], t = {t:+.2f}; "
              f"sign-flip p = {sign_flip_p(diffs):.4f}; permutation p = "
              f"{permutation_p(list(seed.values()), list(grpo.values())):.4f}")
        for n in (5, 6, 8, 10, 12, 16):
            print(f"   n = {n:2d} seeds: MDE(t) = ({st.t.ppf(0.975, n - 1):.3f} + {st.t.ppf(POWER, n - 1):.3f}) "
                  f"x {sd:.2f} / sqrt({n}) = {mde(sd, n):5.1f} pts; MDE(normal) {mde(sd, n, 'normal'):5.1f}; "
                  f"sign-flip floor 2/2^{n} = {2 / 2 ** n:.4f}")

print("== evaluation noise of one success rate, p = 0.5 (the worst case): sqrt(p (1 - p) / N)")
for n_tasks in (32, 64, 128, 256, 512):
    one = 100 * math.sqrt(0.25 / n_tasks)
    print(f"   N = {n_tasks:3d} tasks: SD {one:4.1f} pts per arm; {one * math.sqrt(2):4.1f} pts on a difference "
          "of two independent evaluations")
