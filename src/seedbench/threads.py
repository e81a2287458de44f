"""OpenMP settings for a machine shared with other jobs, applied before torch is imported.

torch's CPU kernels run on an OpenMP thread pool. By default its idle threads *spin* while they wait for
the next parallel region; on a machine where another process (CI, an env worker pool, an experiment's
other runs) wants the same cores, the spinning threads and the other process steal each other's time
slices and a training pass collapses: measured on the 2-core CI machine, one busy process beside a
forward/backward made it 3.3× slower with the default policy (a fair share would be ~1.9×) and 1.7×
slower with ``OMP_WAIT_POLICY=PASSIVE`` (idle threads sleep), and with several other jobs the default
policy was 4-16× slower than PASSIVE (docs/performance.md, "Shared cores"). On a machine of its own,
though, the sleeping threads cost: ~4 % on an fp32 forward/backward, more in bf16, whose shorter parallel
regions wake the threads more often (docs/performance.md, "bf16 on CPU"). So the policy is chosen per run
(``auto``, the default): PASSIVE when the machine is shared at start, i.e. its 1-minute load average is at
least `SHARED_LOAD` (one other runnable process on average: already the measured 3.3× case), and the
runtime's own policy otherwise.

The OpenMP runtime reads these variables once, when torch loads it, so `configure` must run before the
first ``import torch``: the ``seedbench`` command calls it first thing (`seedbench.cli.main`,
``python -m seedbench``). Child processes (env worker pools, an experiment's runs) inherit the variables.

Overrides, strongest first:

* the user's own ``OMP_WAIT_POLICY`` / ``OMP_NUM_THREADS`` in the environment are never changed;
* ``SEEDBENCH_OMP_WAIT_POLICY`` (``auto``, the default, as above; ``passive``; ``active``; or ``default`` =
  leave the runtime's own) and
  ``SEEDBENCH_NUM_THREADS`` (an integer; unset = torch's own choice, one thread per core it may use).

Thread count: torch's default (one per available core) is kept. With PASSIVE, 2 threads under one busy
process were still faster than 1 thread (which has a core to itself), see docs/performance.md.
"""

from __future__ import annotations

import os
import sys

DEFAULT_WAIT_POLICY = "auto"
WAIT_POLICIES = ("auto", "passive", "active", "default")
SHARED_LOAD = 1.0
"""1-minute load average from which ``auto`` counts the machine as shared (before this process has started
any work, so the load is the other jobs')."""


def machine_shared(load: float | None = None) -> bool:
    """Whether other jobs use the CPUs: the 1-minute load average (`load`, default the system's) is at least
    `SHARED_LOAD`. Platforms without a load average count as not shared."""
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (AttributeError, OSError):
            return False
    return load >= SHARED_LOAD


def resolve_wait_policy(policy: str, load: float | None = None) -> str:
    """``auto`` → ``passive`` on a shared machine (`machine_shared`), ``default`` otherwise; others unchanged."""
    if policy == "auto":
        return "passive" if machine_shared(load) else "default"
    return policy


def configure(environ: dict | None = None, load: float | None = None) -> dict[str, str]:
    """Set ``OMP_WAIT_POLICY`` (and ``OMP_NUM_THREADS`` when ``SEEDBENCH_NUM_THREADS`` asks) in `environ`
    (default ``os.environ``) unless already set; returns what it set. Call before ``import torch``. `load`:
    the 1-minute load average ``auto`` decides on (default: the system's).

    When torch is already imported (the CLI called in-process, as tests do) the runtime has read its
    settings; the variables are still set, for child processes (`torch_loaded` tells)."""
    env = os.environ if environ is None else environ
    chosen: dict[str, str] = {}
    policy = env.get("SEEDBENCH_OMP_WAIT_POLICY", DEFAULT_WAIT_POLICY).strip().lower()
    if policy not in WAIT_POLICIES:
        raise ValueError(f"SEEDBENCH_OMP_WAIT_POLICY={policy!r}: use one of {', '.join(WAIT_POLICIES)}")
    if "OMP_WAIT_POLICY" not in env:
        policy = resolve_wait_policy(policy, load)
        if policy != "default":
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
