"""Progress bars (tqdm). On a terminal they redraw; in a log file they print at most every 30 s.
``SEEDBENCH_PROGRESS=0`` turns them off (the test suite does)."""

from __future__ import annotations

import os
import sys


def progress_bar(total: int | None = None, desc: str = "", unit: str = "it", **kwargs):
    """A tqdm bar. One made without a total waits two seconds before its first frame, because most such bars
    get their total from the engine a moment later (``reset(total=...)``); otherwise a log would start each one
    with a bare ``0token`` frame."""
    from tqdm.auto import tqdm

    off = os.environ.get("SEEDBENCH_PROGRESS", "1") == "0"
    interval = 0.1 if sys.stderr.isatty() else 30.0
    return tqdm(total=total, desc=desc, unit=unit, disable=off, leave=False, dynamic_ncols=True,
                mininterval=interval, **{"delay": 0.0 if total is not None else 2.0, **kwargs})
