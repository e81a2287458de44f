"""Starts one run of an experiment so that it ends with the driver that started it.

`guarded` prefixes a run's command with a few lines of Python (run with ``python -c``, importing nothing
of seedbench, so the run starts as fast as before) that ask the Linux kernel to send the process SIGTERM
when its parent dies (``prctl(PR_SET_PDEATHSIG)``), check that the parent is still the driver (it may have
died before the request), then replace the process with the run's command. A driver killed with SIGKILL,
which runs no clean-up of its own, therefore takes its running runs with it instead of leaving them
training beside the next driver. The request survives the ``exec``; the run's own children are not
covered (their parent is the run). Where there is no ``prctl`` (macOS, Windows) the command runs unguarded.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence

GUARD = """
import ctypes, os, signal, sys
parent, cmd = int(sys.argv[1]), sys.argv[2:]
if ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0) != 0:  # 1 = PR_SET_PDEATHSIG
    print("seedbench experiment: prctl failed; this run does not end with its driver", file=sys.stderr)
if os.getppid() != parent:  # the driver died before the request was in place
    sys.exit(128 + int(signal.SIGTERM))
os.execvp(cmd[0], cmd)
"""
"""The program `guarded` runs before the command: argv is the driver's pid, then the command."""


def guarded(cmd: Sequence[str]) -> list[str]:
    """`cmd` wrapped so that it ends with this process (on Linux); `cmd` itself elsewhere."""
    if not sys.platform.startswith("linux"):
        return list(cmd)
    return [sys.executable, "-c", GUARD, str(os.getpid()), *cmd]
