"""Checkpoint files that are whole or absent: atomic `torch.save`, and loads that name the broken file.

A kill or a full disk in the middle of `torch.save` leaves a truncated zip archive; loading one raises a
bare torch error ("PytorchStreamReader failed reading zip archive", "unexpected pos"). Here a file is
saved to ``FILE.tmp`` through a Python file object (so a full device surfaces as ENOSPC, not as torch's
"unexpected pos"), fsynced, and renamed over ``FILE``; a failed save removes the temporary file and says
"no space left on device while saving FILE". A failed load raises `CheckpointFileError` naming the file,
which the trainer answers by falling back to the previous complete checkpoint.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import torch

from seedbench.jsonio import DiskFullError, RunFileError


class CheckpointFileError(RunFileError):
    """A checkpoint file is missing, truncated or not a torch archive."""


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


def load_torch_file(path: Path, **kwargs: Any) -> Any:
    """`torch.load(path, **kwargs)`, or `CheckpointFileError` naming `path` when it is missing or damaged."""
    path = Path(path)
    if not path.exists():
        raise CheckpointFileError(f"{path} is missing")
    try:
        return torch.load(path, **kwargs)
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
