"""Checkpoint files that are whole or absent: atomic `torch.save`, and loads that name the broken file.

A kill or a full disk in the middle of `torch.save` leaves a truncated zip archive; loading one raises a
bare torch error ("PytorchStreamReader failed reading zip archive", "unexpected pos"). Here a file is
saved to ``FILE.tmp`` through a Python file object (so a full device surfaces as ENOSPC, not as torch's
"unexpected pos"), fsynced, and renamed over ``FILE``; a failed save removes the temporary file and says
"no space left on device while saving FILE". A failed load raises `CheckpointFileError` naming the file,
which the trainer answers by falling back to the previous complete checkpoint.

Every load is ``weights_only=True``: tensors and plain data (dicts, lists, tuples, numbers, text) only, so a
file from someone else's run directory (a leaderboard submission, a colleague's run) cannot run code when it
is loaded. A file that names any other class raises `UnsafeCheckpointError`, which is never answered by a
fallback: the run directory is not to be trusted, and the command stops with one line naming the file.
"""

from __future__ import annotations

import errno
import os
import pickle
import re
from pathlib import Path
from typing import Any, Sequence

import torch

from seedbench.jsonio import DiskFullError, RunFileError


class CheckpointFileError(RunFileError):
    """A checkpoint file is missing, truncated or not a torch archive."""


class UnsafeCheckpointError(RunFileError):
    """A checkpoint file holds an object of a class that a checkpoint never holds (it could run code when
    unpickled); it is not loaded."""


def save_torch_atomic(obj: Any, path: Path) -> None:
    """`torch.save(obj)` to `path`: readers (and a resume after a kill) see the old file or the whole new
    one. Raises `DiskFullError` naming `path` when the device fills up."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            torch.save(obj, handle)
            handle.flush()
            os.fsync(handle.fileno())
    except (OSError, RuntimeError) as err:
        tmp.unlink(missing_ok=True)
        if _disk_full(err):
            raise DiskFullError(path, "saving") from err
        raise
    os.replace(tmp, path)


def load_torch_file(path: Path, *, map_location: Any = None, allow: Sequence[Any] = ()) -> Any:
    """``torch.load(path, weights_only=True)``: tensors and plain data, plus the classes in `allow` (an
    allow-list for one known file layout). `CheckpointFileError` naming `path` when it is missing or damaged;
    `UnsafeCheckpointError` when it names any other class."""
    path = Path(path)
    if not path.exists():
        raise CheckpointFileError(f"{path} is missing")
    try:
        if not allow:
            return torch.load(path, map_location=map_location, weights_only=True)
        scoped = getattr(torch.serialization, "safe_globals", None)
        if scoped is None:  # torch 2.4: only the process-wide list (what `allow` names is data, never code)
            torch.serialization.add_safe_globals(list(allow))
            return torch.load(path, map_location=map_location, weights_only=True)
        with scoped(list(allow)):
            return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+)", str(err))
        if found is None:
            raise CheckpointFileError(f"{path} is truncated or corrupt (not a readable pickle)") from err
        raise UnsafeCheckpointError(
            f"{path} names {found.group(1).rstrip('.,')}, which a seedbench checkpoint never holds (unpickling it "
            "could run code); it is not loaded: restore the file from a copy you trust or delete its checkpoint "
            "folder") from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointFileError(f"{path} is truncated or corrupt ({first})") from err


def _disk_full(err: BaseException) -> bool:
    """True for a full device, also when torch reports it as a short write ("unexpected pos")."""
    while err is not None:
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(err, RuntimeError) and ("unexpected pos" in str(err) or "file write failed" in str(err)):
            return True
        err = err.__cause__ or err.__context__
    return False
