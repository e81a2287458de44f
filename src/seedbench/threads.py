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
(``auto``, the default): PASSIVE when the machine is shared at start, i.e. at least `SHARED_LOAD` other
processes are runnable (one other busy process: already the measured 3.3× case), and the runtime's own policy
otherwise. "At start" is read off the kernel's count of runnable tasks (``procs_running`` in /proc/stat),
sampled a few times over a tenth of a second, not the 1-minute load average: that average lags by a minute,
so a run started right after a pip install or another job (README command 1 is both in one line) would see
a machine that was busy, not one that is, and pay PASSIVE's cost on cores of its own. Where /proc/stat is
missing, the 1-minute load average is used.

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
"""Other runnable processes (on average over the samples) from which ``auto`` counts the machine as shared."""
LOAD_SAMPLES = 5
LOAD_SAMPLE_INTERVAL_S = 0.025


def procs_running(stat_path: str = "/proc/stat") -> int | None:
    """The kernel's count of runnable tasks now (``procs_running``, this process included), or None where
    the file or the line is missing (not Linux)."""
    try:
        with open(stat_path, encoding="ascii") as stat:
            for line in stat:
                if line.startswith("procs_running "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def other_runnable(read=None, samples: int = LOAD_SAMPLES,
                   interval_s: float = LOAD_SAMPLE_INTERVAL_S) -> float | None:
    """Runnable processes besides this one, averaged over `samples` readings `interval_s` apart (this process
    is single-threaded and runnable while it reads, hence the 1 taken off); None where `read` (default
    `procs_running`) cannot tell."""
    import time

    read = read or procs_running
    counts = []
    for i in range(samples):
        if i:
            time.sleep(interval_s)
        count = read()
        if count is None:
            return None
        counts.append(max(count - 1, 0))
    return sum(counts) / len(counts)


def current_load() -> float:
    """Other runnable processes now (`other_runnable`); the 1-minute load average where that cannot be read,
    0 where neither can."""
    load = other_runnable()
    if load is not None:
        return load
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def machine_shared(load: float | None = None) -> bool:
    """Whether other jobs use the CPUs: `load` (default `current_load`) is at least `SHARED_LOAD`."""
    return (current_load() if load is None else load) >= SHARED_LOAD


def resolve_wait_policy(policy: str, load: float | None = None) -> str:
    """``auto`` → ``passive`` on a shared machine (`machine_shared`), ``default`` otherwise; others unchanged."""
    if policy == "auto":
        return "passive" if machine_shared(load) else "default"
    return policy


def configure(environ: dict | None = None, load: float | None = None) -> dict[str, str]:
    """Set ``OMP_WAIT_POLICY`` (and ``OMP_NUM_THREADS`` when ``SEEDBENCH_NUM_THREADS`` asks) in `environ`
    (default ``os.environ``) unless already set; returns what it set. Call before ``import torch``. `load`:
    the other runnable processes ``auto`` decides on (default: `current_load`, read only when ``auto`` needs it).

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
