"""Where seedbench keeps generated data and converted models (never inside the git tree), and the one rule
for a path that a file names.

Run directories, submission folders, experiment specs and data pools are shared between people, so a
path read from one of them is untrusted: ``"image": "../../victim.txt"`` in episodes.jsonl must not make
the viewer read a file outside the run or write one outside its output folder. Every place that joins
such a path to a directory goes through `inside`.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath


MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
"""Linux's NAME_MAX and PATH_MAX: a longer name is refused by `inside` before a file call fails on it."""


class UnsafePathError(ValueError):
    """A path named in a file leaves the folder it must stay in."""


def cache_dir(*parts: str) -> Path:
    """``$SEEDBENCH_CACHE`` or ``~/.cache/seedbench``, joined with `parts` and created."""
    root = Path(os.environ.get("SEEDBENCH_CACHE") or Path.home() / ".cache" / "seedbench")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def inside(base: str | Path, relative: str | os.PathLike[str]) -> Path:
    """``base / relative``, provided it stays in `base`; raises `UnsafePathError` otherwise.

    Rejected: an empty path, an absolute one (POSIX or Windows: ``/etc/x``, ``C:\\x``, ``\\\\host\\x``), a
    NUL or other control character, a name longer than the file system takes, and anything that resolves
    outside `base` once ``..`` and symlinks are followed (a symlink inside `base` that points out of it
    counts as leaving). The returned path is
    the plain join, not the resolved one, so messages and outputs keep the names the file used.
    """
    text = os.fspath(relative)
    if not isinstance(text, str) or not text:
        raise UnsafePathError(f"expected a relative path inside {base}, got {relative!r}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in text):
        raise UnsafePathError(f"path {text!r} contains a control character")
    if PurePosixPath(text).is_absolute() or PureWindowsPath(text).anchor:
        raise UnsafePathError(f"path {text!r} is absolute; only paths relative to {base} are allowed")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES or any(
            len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES for part in PurePosixPath(text).parts):
        raise UnsafePathError(f"path {text[:40]!r}... is longer than a file system takes ({MAX_NAME_BYTES} bytes a "
                              f"name, {MAX_PATH_BYTES} in all)")
    base = Path(base)
    joined = base / text
    root = base.resolve()
    target = joined.resolve()
    if target != root and not target.is_relative_to(root):
        raise UnsafePathError(f"path {text!r} leaves {base} (it resolves to {target})")
    return joined
