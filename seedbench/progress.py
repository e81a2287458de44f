"""Progress bars (tqdm) that stay quiet when output is not a terminal unless asked for."""

from __future__ import annotations

import os
import sys


def progress_bar(total: int | None = None, desc: str = "", unit: str = "it", **kwargs):
    from tqdm.auto import tqdm

    disable = os.environ.get("SEEDBENCH_PROGRESS", "auto")
    off = disable == "0" or (disable == "auto" and not sys.stderr.isatty())
    return tqdm(total=total, desc=desc, unit=unit, disable=off, leave=False, dynamic_ncols=True, **kwargs)
