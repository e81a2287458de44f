"""Frames of vision envs: what a valid one is, its id, and its PNG file in a run directory.

A vision env returns each observation's frame in ``info["image"]`` (`seedbench.envs.text_env`): a
``uint8`` array of shape ``(H, W, 3)``. Run directories never store frames inline in JSON (a 336×336
frame is 339 KB of pixels, a few KB of PNG); each distinct frame is written once as
``frames/<id>.png``, where the id is the first 16 hex digits of the SHA-1 of the array's bytes, and the
episode records name that file. The contract guard, `seedbench check-env` and the run directory share
the rules below, so they agree on what a frame is.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

FRAMES_DIR = "frames"
PILLOW_HINT = "pip install 'seedbench[vision]'  (or: pip install pillow)"


def frame_problem(image: Any, shape: tuple[int, int]) -> str | None:
    """Why `image` is not a frame of `shape` ``(H, W)`` (one phrase), or None when it is one."""
    if not isinstance(image, np.ndarray):
        return f"a {type(image).__name__}, not a numpy.ndarray"
    if image.dtype != np.uint8:
        return f"dtype {image.dtype}, not uint8"
    if image.shape != (shape[0], shape[1], 3):
        return f"shape {image.shape}, not {(shape[0], shape[1], 3)} (image_shape + 3 RGB channels)"
    return None


def is_blank(image: np.ndarray) -> bool:
    """True when every pixel has the colour of the first one (an env that forgot to draw)."""
    flat = image.reshape(-1, image.shape[-1])
    return bool((flat == flat[0]).all())


def frame_id(image: np.ndarray) -> str:
    """The first 16 hex digits of the SHA-1 of the frame's bytes (C order): equal frames, equal ids."""
    return hashlib.sha1(np.ascontiguousarray(image).tobytes()).hexdigest()[:16]


def frame_name(image: np.ndarray) -> str:
    """``frames/<id>.png``: how episode records name a frame, relative to the run directory."""
    return f"{FRAMES_DIR}/{frame_id(image)}.png"


def write_png(image: np.ndarray, path: str | Path) -> None:
    """Write `image` as a PNG atomically (a temporary file, then a rename): readers see the whole file
    or none. Needs Pillow; its absence is one line with the install command."""
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError(f"saving frames of a vision env needs Pillow: {PILLOW_HINT}") from err
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    Image.fromarray(np.ascontiguousarray(image)).save(tmp, format="PNG")
    os.replace(tmp, path)


def read_png(path: str | Path) -> np.ndarray:
    """A saved frame back as a ``uint8 (H, W, 3)`` array (reports, tests)."""
    from PIL import Image

    with Image.open(path) as picture:
        return np.asarray(picture.convert("RGB"))


class FrameStore:
    """The ``frames/`` folder of one run directory: `save` writes each distinct frame once and returns
    the name episode records use."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._known: set[str] = set()

    def save(self, image: np.ndarray) -> str:
        name = frame_name(image)
        if name not in self._known:
            path = self.root / name
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                write_png(image, path)
            self._known.add(name)
        return name
