"""Boxoban: Sokoban played on DeepMind's Boxoban level files, a hard held-out split.

Description
    `SokobanEnv` (same dynamics, rewards, text and image observations) whose levels come from files in
    the text format of deepmind/boxoban-levels (Apache-2.0; Guez et al., 2018): blocks of a ``; N``
    header line followed by the room, one line per row, in XSB symbols ``#`` wall, space floor,
    ``.`` target, ``$`` box, ``@`` player (``*`` box on target, ``+`` player on target and ``-``/``_``
    floor are accepted too). Boxoban rooms are 10×10 with 4 boxes: a size, box count and difficulty
    shift from the 6×6 one-box training rooms, meant for evaluation only.
Task text, action grammar, observation, rewards
    As `seedbench.envs.sokoban.env`.
Termination vs truncation
    Terminates when every box is on a target; truncates after ``max_steps`` (default 120, the step budget
    of DeepMind's Boxoban agents; hard levels need far more than 15 steps).
Registered ids
    ``seedbench/SokobanVisionBoxoban-v0`` (alias ``sokoban-vision-boxoban``): frames on, one split,
    ``hard``.
Data source
    Files, never downloaded by seedbench: clone or unpack deepmind/boxoban-levels yourself and pass
    ``levels`` (env kwarg) or set ``$SEEDBENCH_BOXOBAN_LEVELS`` to a level file or to a directory (every
    ``*.txt`` below it, in sorted path order; e.g. ``boxoban-levels/hard``). ``reset(seed=k)`` plays level
    ``k mod n`` of that ordered list, so seeds ``0..n-1`` are every level once; ``info["task_id"]`` is
    ``boxoban-<file stem>-<N>``. The provenance checksum hashes every level's text, so runs on other
    files never compare as equal. The expert is Sokoban's breadth-first `solve` with its state cap: hard
    levels may exceed it (``expert_plan()`` then returns None).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seedbench.envs.sokoban.env import SokobanEnv
from seedbench.envs.sokoban.image import DEFAULT_TILE_SIZE
from seedbench.envs.sokoban.room import BOX, BOX_ON_TARGET, FLOOR, PLAYER, TARGET, WALL

LEVELS_ENV_VAR = "SEEDBENCH_BOXOBAN_LEVELS"
SPLIT = "hard"
_HEADER = re.compile(r"^;\s*(\S+)\s*$")
# XSB symbol -> (room_fixed code, room_state code), gym-sokoban's codes.
_XSB = {"#": (WALL, WALL), " ": (FLOOR, FLOOR), "-": (FLOOR, FLOOR), "_": (FLOOR, FLOOR),
        ".": (TARGET, TARGET), "$": (FLOOR, BOX), "*": (TARGET, BOX_ON_TARGET), "@": (FLOOR, PLAYER),
        "+": (TARGET, PLAYER)}


@dataclass(frozen=True)
class BoxobanLevel:
    task_id: str
    room_fixed: np.ndarray
    room_state: np.ndarray
    text: str


def parse_level(rows: list[str], where: str) -> tuple[np.ndarray, np.ndarray]:
    """``(room_fixed, room_state)`` from the XSB rows of one level (short rows padded with floor)."""
    width = max(len(row) for row in rows)
    try:
        codes = [[_XSB[c] for c in row.ljust(width)] for row in rows]
    except KeyError as err:
        raise ValueError(f"{where}: unknown Boxoban symbol {err.args[0]!r}; use {sorted(_XSB)}") from None
    room_fixed = np.array([[f for f, _ in row] for row in codes], dtype=np.int64)
    room_state = np.array([[s for _, s in row] for row in codes], dtype=np.int64)
    border = np.concatenate([room_fixed[0], room_fixed[-1], room_fixed[:, 0], room_fixed[:, -1]])
    boxes = int(np.isin(room_state, (BOX, BOX_ON_TARGET)).sum())
    if (border != WALL).any():
        raise ValueError(f"{where}: the room is not enclosed by walls")
    if (room_state == PLAYER).sum() != 1:
        raise ValueError(f"{where}: a level needs exactly one player '@'")
    if boxes == 0 or boxes != int((room_fixed == TARGET).sum()):
        raise ValueError(f"{where}: a level needs at least one box and as many targets as boxes")
    return room_fixed, room_state


def parse_file(text: str, stem: str) -> list[BoxobanLevel]:
    """Every ``; N`` block of one Boxoban file, in file order."""
    levels, number, rows = [], None, []

    def close() -> None:
        if number is not None:
            if not rows:
                raise ValueError(f"{stem}: level {number} has no rows")
            fixed, state = parse_level(rows, f"{stem} level {number}")
            levels.append(BoxobanLevel(f"boxoban-{stem}-{number}", fixed, state, "\n".join(rows)))

    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            close()
            number, rows = header[1], []
        elif line.strip():
            if number is None:
                raise ValueError(f"{stem}: room rows before the first '; N' header line")
            rows.append(line.rstrip("\n"))
    close()
    return levels


def load_levels(path: str | os.PathLike) -> list[BoxobanLevel]:
    """The levels of a Boxoban file, or of every ``*.txt`` below a directory in sorted path order."""
    root = Path(path).expanduser()
    files = sorted(root.rglob("*.txt")) if root.is_dir() else [root]
    if not root.exists() or not files:
        raise FileNotFoundError(f"no Boxoban level files at {root} (a .txt file, or a directory holding some)")
    levels = [level for file in files for level in parse_file(file.read_text(), file.stem)]
    if not levels:
        raise ValueError(f"no '; N' level blocks in the Boxoban files at {root}")
    shapes = {level.room_fixed.shape for level in levels}
    if len(shapes) != 1:
        raise ValueError(f"Boxoban levels at {root} have several room sizes {sorted(shapes)}; use one size per env")
    return levels


class BoxobanEnv(SokobanEnv):
    splits = (SPLIT,)
    eval_split = SPLIT
    max_steps = 120
    seed_rule = "reset(seed=k) plays level k mod n of the sorted level files"

    def __init__(self, levels: str | os.PathLike | None = None, max_steps: int = 120, projection: str = "reference",
                 image: bool = False, tile_size: int = DEFAULT_TILE_SIZE, render_mode: str | None = None):
        path = levels if levels is not None else os.environ.get(LEVELS_ENV_VAR) or None
        if path is None:
            raise FileNotFoundError(
                "Boxoban needs level files: get deepmind/boxoban-levels (Apache-2.0) and pass "
                f"env_kwargs.levels=/path/to/boxoban-levels/hard or set ${LEVELS_ENV_VAR}")
        self.levels = load_levels(path)
        self.levels_path = str(path)
        first = self.levels[0]
        boxes = int(np.isin(first.room_state, (BOX, BOX_ON_TARGET)).sum())
        super().__init__(dim_room=first.room_fixed.shape, num_boxes=boxes, max_steps=max_steps, projection=projection,
                         image=image, tile_size=tile_size, render_mode=render_mode)
        self._by_id = {level.task_id: level for level in self.levels}

    def _select_level(self, seed: int | None, options: dict) -> tuple[np.ndarray, np.ndarray, str, str]:
        split = self._check_split(options.get("split", SPLIT))
        if "level" in options:
            return super()._select_level(seed, options)
        if "task_id" in options:
            level = self._by_id.get(str(options["task_id"]))
            if level is None:
                raise ValueError(f"unknown Boxoban task_id {options['task_id']!r} in {self.levels_path}")
        else:
            index = int(seed) if seed is not None else int(self.np_random.integers(len(self.levels)))
            level = self.levels[index % len(self.levels)]
        return level.room_fixed, level.room_state, split, level.task_id

    def task_ids(self, split: str = SPLIT) -> list[str]:
        """The ordered level ids (``reset(seed=k)`` plays ``task_ids()[k % n]``)."""
        self._check_split(split)
        return [level.task_id for level in self.levels]

    def provenance(self) -> dict[str, str]:
        """The level files' checksum (every level's id and text, in play order)."""
        digest = hashlib.sha256()
        for level in self.levels:
            digest.update(f"{level.task_id}\n{level.text}\n".encode())
        return {"data_source": "official", "manifest_checksum": digest.hexdigest()[:16],
                "generator_version": self.generator_version}
