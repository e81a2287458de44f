"""OpenMP settings for a machine shared with other jobs, applied before torch is imported.

torch's CPU kernels run on an OpenMP thread pool. By default its idle threads *spin* while they wait for
the next parallel region; on a machine where another process (CI, an env worker pool, an experiment's
other runs) wants the same cores, the spinning threads and the other process steal each other's time
slices and a training pass collapses: measured on the 2-core CI machine, one busy process beside a
forward/backward made it 3.3× slower with the default policy (a fair share would be ~1.9×) and 1.7×
slower with ``OMP_WAIT_POLICY=PASSIVE`` (idle threads sleep), which costs ~4 % when the machine is idle
(docs/performance.md, "Shared cores"). So seedbench sets PASSIVE by default.

The OpenMP runtime reads these variables once, when torch loads it, so `configure` must run before the
first ``import torch``: the ``seedbench`` command calls it first thing (`seedbench.cli.main`,
``python -m seedbench``). Child processes (env worker pools, an experiment's runs) inherit the variables.

Overrides, strongest first:

* the user's own ``OMP_WAIT_POLICY`` / ``OMP_NUM_THREADS`` in the environment are never changed;
* ``SEEDBENCH_OMP_WAIT_POLICY`` (``passive``, ``active`` or ``default`` = leave the runtime's own) and
  ``SEEDBENCH_NUM_THREADS`` (an integer; unset = torch's own choice, one thread per core it may use).

Thread count: torch's default (one per available core) is kept. With PASSIVE, 2 threads under one busy
process were still faster than 1 thread (which has a core to itself), see docs/performance.md.
"""

from __future__ import annotations

import os
import sys

DEFAULT_WAIT_POLICY = "passive"
WAIT_POLICIES = ("passive", "active", "default")


def configure(environ: dict | None = None) -> dict[str, str]:
    """Set ``OMP_WAIT_POLICY`` (and ``OMP_NUM_THREADS`` when ``SEEDBENCH_NUM_THREADS`` asks) in `environ`
    (default ``os.environ``) unless already set; returns what it set. Call before ``import torch``.

    When torch is already imported (the CLI called in-process, as tests do) the runtime has read its
    settings; the variables are still set, for child processes (`torch_loaded` tells)."""
    env = os.environ if environ is None else environ
    chosen: dict[str, str] = {}
    policy = env.get("SEEDBENCH_OMP_WAIT_POLICY", DEFAULT_WAIT_POLICY).strip().lower()
    if policy not in WAIT_POLICIES:
        raise ValueError(f"SEEDBENCH_OMP_WAIT_POLICY={policy!r}: use one of {', '.join(WAIT_POLICIES)}")
    if policy != "default" and "OMP_WAIT_POLICY" not in env:
        chosen["OMP_WAIT_POLICY"] = policy.upper()
    threads = env.get("SEEDBENCH_NUM_THREADS", "").strip()
    if threads:
        if not threads.isdigit() or int(threads) < 1:
            raise ValueError(f"SEEDBENCH_NUM_THREADS={threads!r}: use a positive integer")
        if "OMP_NUM_THREADS" not in env:
            chosen["OMP_NUM_THREADS"] = threads
    env.update(chosen)
    return chosen


def torch_loaded() -> bool:
    """True when torch is already imported, i.e. `configure` can only reach child processes."""
    return "torch" in sys.modules
