"""Resource accounting of a run: CPU-seconds and GPU-seconds, kept in summary.json (``resources``).

What a run cost is part of its result (two agents at equal success are not equal if one took twice the
compute), and on a cluster it is what the allocation is billed in. The meter counts, for every process
of the run (all ranks under torchrun), the CPU time of the process and of its finished children
(`resource.getrusage`), and wall time × GPUs the process holds. The totals are written to summary.json
at the start, at every checkpoint and at the end; a resumed run adds to the totals of the run directory it
continues, so the figures include work lost to a kill and redone (it was spent), up to the kill's last
checkpoint.
Env worker processes still alive when the summary is written are not counted.
"""

from __future__ import annotations

import os
import time
from typing import Any


def process_cpu_seconds() -> float:
    """User + system CPU time of this process and its reaped children."""
    try:
        import resource
    except ImportError:  # Windows: this process only
        times = os.times()
        return times.user + times.system
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def gpus_held(device: Any) -> int:
    """GPUs this process trains on: one when the policy lives on a CUDA device, else none."""
    return 1 if str(device).startswith("cuda") else 0


class ResourceMeter:
    """Totals since this process started metering, plus ``previous`` (the run directory's totals so far)."""

    def __init__(self, previous: dict[str, Any] | None = None):
        self.previous = dict(previous or {})
        self.start_wall = time.monotonic()
        self.start_cpu = process_cpu_seconds()
        self.gpus = 0

    def current(self) -> dict[str, float]:
        """This process's share since metering began."""
        wall = time.monotonic() - self.start_wall
        return {"cpu_seconds": process_cpu_seconds() - self.start_cpu, "gpu_seconds": wall * self.gpus,
                "wall_seconds": wall}

    def totals(self, ranks: list[dict[str, float]]) -> dict[str, Any]:
        """The ``resources`` entry of summary.json from every rank's `current` (one entry per process)."""
        before = self.previous
        totals = {
            "cpu_seconds": round(float(before.get("cpu_seconds", 0.0)) + sum(r["cpu_seconds"] for r in ranks), 2),
            "gpu_seconds": round(float(before.get("gpu_seconds", 0.0)) + sum(r["gpu_seconds"] for r in ranks), 2),
            "wall_seconds": round(float(before.get("wall_seconds", 0.0)) + max(r["wall_seconds"] for r in ranks), 2),
            "processes": len(ranks),
            "gpus": sum(1 for r in ranks if r["gpu_seconds"] > 0),
            "sessions": int(before.get("sessions", 0)) + 1,
        }
        if before.get("incomplete"):  # earlier sessions' totals were lost (a damaged summary.json): say so for good
            totals["incomplete"] = before["incomplete"]
        return totals

    def gathered_totals(self, parallel: Any) -> dict[str, Any]:
        """`totals` over every rank of `parallel` (a collective: every rank calls it; each gets the totals)."""
        return self.totals(parallel.all_gather_object(self.current()))
