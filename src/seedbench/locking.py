"""One process per directory: advisory locks on a lock file, held while the process works there.

Two processes training into one run directory (a ``--resume`` started while the first still runs, an
experiment restarted beside a run it left behind) would interleave their log lines and checkpoints without
a word; two experiment drivers on one output would train the same runs twice. The operating system drops a
lock when its process ends, however it ends, so a killed process never leaves a stale lock behind and a
resume after a crash needs no clean-up. Where there is no ``flock`` (Windows) nothing is locked.

A foundation module (it imports only `seedbench.jsonio` and `seedbench.paths`): the trainer locks run
directories with it, and the model builders (`seedbench.models.embedded`, `seedbench.models.tiny_vlm`) their
cached conversions.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from contextlib import contextmanager
from typing import IO, Callable, Iterator

from seedbench.jsonio import RunFileError
from seedbench.paths import cache_dir

try:
    import fcntl
except ImportError:  # Windows: no advisory locks, no protection
    fcntl = None

__all__ = ["LOCK_FILE", "LockHeld", "RunDirInUse", "build_lock", "exclusive_lock", "lock_run_dir"]

LOCK_FILE = ".lock"


class LockHeld(Exception):
    """Another open handle (another process, or another handle in this one) holds the lock; the message is
    what the holder wrote into the lock file."""


class RunDirInUse(RunFileError):
    """Another live process holds the run directory's lock (the CLI prints it as one line)."""


def exclusive_lock(file: Path, on_wait: Callable[[str], None] | None = None) -> IO[str] | None:
    """Take the lock of `file` (created if missing) and write ``pid N on HOST`` into it; return its open
    handle, the lock lasting while the handle is open (None where the platform cannot lock). When the lock
    is taken: raise `LockHeld` naming the holder, or, given `on_wait`, call ``on_wait(holder)`` once and
    wait until the holder lets go."""
    if fcntl is None:
        return None
    handle = open(file, "a+", encoding="utf-8")  # not "w": the holder's text stays readable to the refused
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "a process that did not say which"
        if on_wait is None:
            handle.close()
            raise LockHeld(holder) from None
        on_wait(holder)
        fcntl.flock(handle, fcntl.LOCK_EX)
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
    handle.flush()
    return handle


def lock_run_dir(path: Path) -> IO[str] | None:
    """Take `path`'s lock (creating `path` if needed) and return its open handle: the lock lasts while the
    handle is open. Raises `RunDirInUse`, naming the holder, when another process (or another handle) has it."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        return exclusive_lock(path / LOCK_FILE)
    except LockHeld as held:
        raise RunDirInUse(f"{path} is in use by another seedbench process ({held}); wait for it to end or "
                          "stop it, then run the command again") from None


@contextmanager
def build_lock(name: str, what: str) -> Iterator[None]:
    """Hold ``<cache>/locks/<name>.lock`` while a cached artefact is checked for and built: parallel processes
    that need the same one (an experiment's runs) wait, saying so, and then find it built."""
    def waiting(holder: str) -> None:
        print(f"seedbench: {what}: another process is building it ({holder}); waiting for it", flush=True)

    try:
        handle = exclusive_lock(cache_dir("locks") / f"{name}.lock", on_wait=waiting)
    except OSError:  # a read-only cache: whatever is cached there is used as it is, unlocked
        handle = None
    try:
        yield
    finally:
        if handle is not None:
            handle.close()
