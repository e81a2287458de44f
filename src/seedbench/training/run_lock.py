"""One training process per run directory: an advisory lock on ``RUN/.lock``, held while the run trains.

Two processes training into one run directory (a ``--resume`` started while the first still runs, an
experiment restarted beside a run it left behind) would interleave their log lines and checkpoints without
a word. The operating system drops the lock when its process ends, however it ends, so a killed run never
leaves a stale lock behind and a resume after a crash needs no clean-up.
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path
from typing import IO

from seedbench.jsonio import RunFileError

LOCK_FILE = ".lock"


class RunDirInUse(RunFileError):
    """Another live process holds the run directory's lock (the CLI prints it as one line)."""


def lock_run_dir(path: Path) -> IO[str]:
    """Take `path`'s lock (creating `path` if needed) and return its open handle: the lock lasts while the
    handle is open. Raises `RunDirInUse`, naming the holder, when another process (or another handle) has it."""
    path.mkdir(parents=True, exist_ok=True)
    handle = open(path / LOCK_FILE, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "a process that did not say which"
        handle.close()
        raise RunDirInUse(f"{path} is in use by another seedbench process ({holder}); wait for it to end or "
                          "stop it, then run the command again") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    handle.flush()
    return handle
