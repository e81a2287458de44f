"""JSON and JSONL files that survive a kill or a full disk: whole-line appends, atomic writes, reads that say
what they skip.

Run directories, skill libraries and reports all read files that a killed process may have left with a
torn last line (or a half-written summary). There is one copy of each rule here:

- an append writes one whole line on an O_APPEND file, checks that every byte went out (a full disk
  gives a short write, then ENOSPC), flushes and fsyncs; a failed append is cut back to the file's
  previous length, so a torn line can only be the last one, left by a kill;
- before appending, a file whose last line is torn has that tail moved aside to ``FILE.corrupt-<n>``,
  so a new record is never glued to a torn one (which would lose both);
- a reader skips a torn, corrupt or non-object line with a `RunFileWarning` naming the file and
  line, instead of failing;
- a JSON document is replaced atomically (temporary file, fsync, rename); `read_json` gives ``{}`` when
  it is missing or unreadable, and `read_json_checked` says which of the two it was.
"""

from __future__ import annotations

import errno
import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterator


class RunFileWarning(UserWarning):
    """Part of a run file was torn or corrupt (an interrupted write, a damaged disk, an edit) and was skipped
    or set aside."""


class RunFileError(Exception):
    """A run file is damaged beyond what resume can repair; the message names the file and the fix."""


class DiskFullError(OSError):
    """The device filled up while a run file was written; the file was left as it was before the write."""

    def __init__(self, path: str | Path, action: str = "writing"):
        super().__init__(errno.ENOSPC, f"no space left on device while {action} {path}; free space and "
                                       "continue with --resume")
        self.filename = str(path)

    def __str__(self) -> str:
        return self.strerror


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    """Append `record` as one line: all bytes written (or none, and `DiskFullError` on a full disk),
    fsynced."""
    line = (json.dumps(record, ensure_ascii=False, default=_json_default) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = _set_aside_torn_tail(fd, Path(path))
        try:
            _write_all(fd, line)
            os.fsync(fd)
        except OSError as err:
            os.ftruncate(fd, start)  # no torn line left behind a failed append
            if err.errno == errno.ENOSPC:
                raise DiskFullError(path) from err
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """`os.write` until every byte is out; a write that makes no progress is a full device."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _set_aside_torn_tail(fd: int, path: Path) -> int:
    """Length of the file once a torn last line (no final newline) is moved to ``FILE.corrupt-<n>``."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    block = 1 << 16
    end = size
    while end > 0:  # find the last newline, reading backwards
        begin = max(0, end - block)
        cut = os.pread(fd, end - begin, begin).rfind(b"\n")
        if cut >= 0:
            end = begin + cut + 1
            break
        end = begin
    tail = os.pread(fd, size - end, end)
    kept = keep_dropped(path, tail)
    os.ftruncate(fd, end)
    warnings.warn(f"{path}: its last line was torn (an interrupted write); {len(tail)} bytes moved to {kept} "
                  "before appending", RunFileWarning, stacklevel=3)
    return end


def keep_dropped(path: str | Path, data: bytes | str) -> Path:
    """Save `data` dropped from `path` as the next free ``FILE.corrupt-<n>`` beside it; returns that path."""
    path = Path(path)
    n = 1
    while (copy := path.with_name(f"{path.name}.corrupt-{n}")).exists():
        n += 1
    copy.write_bytes(data.encode() if isinstance(data, str) else data)
    return copy


def read_jsonl_lines(path: str | Path) -> Iterator[tuple[int, str, dict[str, Any] | None]]:
    """(line number, raw line, record or None when the line is not a JSON object) for each non-blank line."""
    if not Path(path).exists():
        return
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # torn, corrupt, or nested too deep to decode
                record = None
            yield number, raw, record if isinstance(record, dict) else None


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, one a line; a torn, corrupt or non-object line is skipped with a
    `RunFileWarning` naming the file and line, and a missing file has none."""
    for number, raw, record in read_jsonl_lines(path):
        if record is None:
            warnings.warn(f"{path} line {number}: not a JSON object (torn or corrupt), skipped: {raw.strip()[:80]!r}",
                          RunFileWarning, stacklevel=2)
            continue
        yield record


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON object from `path`, or ``{}`` when the file is missing, unreadable or not an object."""
    data, _ = read_json_checked(path)
    return data


def read_json_checked(path: str | Path) -> tuple[dict[str, Any], str | None]:
    """(the JSON object in `path`, None), ``({}, None)`` when it is missing, or ``({}, why)`` when it
    exists but is unreadable, not JSON, or not an object."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as err:
        return {}, f"unreadable ({err})"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:  # corrupt, or nested too deep to decode
        return {}, f"not valid JSON ({err})"
    return (data, None) if isinstance(data, dict) else ({}, "not a JSON object")


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON; readers see the old file or the new one, never half of it (also
    after a power cut: the new file is fsynced before it replaces the old)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    payload = json.dumps(data, indent=2, sort_keys=True, default=_json_default).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, payload)
        os.fsync(fd)
    except OSError as err:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        if err.errno == errno.ENOSPC:
            raise DiskFullError(path) from err
        raise
    os.close(fd)
    os.replace(tmp, path)


def _json_default(obj: Any):
    if hasattr(obj, "item"):  # numpy and torch scalars
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
