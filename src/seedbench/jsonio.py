"""JSON and JSONL files that survive a kill: whole-line appends, atomic writes, tolerant reads.

Run directories, skill libraries and reports all read files that a killed process may have left with a
torn last line (or a half-written summary). There is one copy of each rule here: an append is one
`write` of a whole line on an O_APPEND file, flushed and fsynced, so at most the last line is torn; a
reader skips a torn, corrupt, too deeply nested or non-object line instead of failing; a JSON document is
replaced atomically, and a reader of one gets ``{}`` when it is missing or unreadable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator


def append_jsonl(path: str | Path, record: dict[str, Any]) -> None:
    """Append `record` as one line (one write, fsynced)."""
    line = (json.dumps(record, ensure_ascii=False, default=_json_default) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, one a line; a torn, corrupt or non-object line is skipped and a
    missing file has none."""
    if not Path(path).exists():
        return
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # torn, corrupt, or nested too deep to decode
                continue
            if isinstance(record, dict):
                yield record


def read_json(path: str | Path) -> dict[str, Any]:
    """A JSON object from `path`, or ``{}`` when the file is missing, unreadable or not an object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # missing, corrupt, or nested too deep to decode
        return {}
    return data if isinstance(data, dict) else {}


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON; readers see the old file or the new one, never half of it."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=_json_default))
    os.replace(tmp, path)


def _json_default(obj: Any):
    if hasattr(obj, "item"):  # numpy and torch scalars
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
