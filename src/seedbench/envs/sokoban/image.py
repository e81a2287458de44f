"""Sokoban frames: a room drawn from square tiles, with numpy only.

Seven tiles, one per cell kind (gym-sokoban's cell codes 0-5 plus 6 for the player on a target): brick
wall, dark floor, target (a red square ring on the floor), box (a wooden crate with a cross), box on
target (the crate in green), player (a blue disc) and player on target (the disc inside the ring). Each
kind differs from the others in colour *and* shape, so it stays recognisable after a vision encoder's
resize. The tiles are drawn procedurally for any size (no sprite files: gym-sokoban's sprites are not
ours to ship) and cached; a frame is one fancy-indexing gather, about 0.1 ms for a 6×6 room.

Tile size. gym-sokoban (and so verl-agent and the SEED paper's vision runs) draws 16-pixel sprites: a
6×6 room is 96×96 pixels, which Qwen2.5-VL's default processor resizes to 84×84 (its side is rounded to
a multiple of 28) and encodes as 9 image tokens, fewer than one per cell, after a resample that blurs
the cell borders. `DEFAULT_TILE_SIZE` is 56: a multiple of 28, so the processor keeps the frame as it is
(``smart_resize`` changes nothing), every cell covers exactly 2×2 merged tokens (4×4 ViT patches of 14
pixels) and cell borders fall on patch borders. A 6×6 room is 336×336 pixels, 144 tokens; 7×7 is 196
tokens; a 10×10 Boxoban level 400. ``tile_size=28`` gives one token per cell (36 for 6×6),
``tile_size=16`` the reference's 96×96 frames.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from seedbench.envs.sokoban.room import PLAYER, TARGET

DEFAULT_TILE_SIZE = 56
MIN_TILE_SIZE = 4  # below this the shapes vanish; only colours would tell the tiles apart
PLAYER_ON_TARGET = 6  # the one cell kind gym-sokoban's room_state cannot express (player hides target)

FLOOR_RGB = (38, 38, 46)
WALL_RGB, MORTAR_RGB = (168, 72, 50), (104, 96, 90)
TARGET_RGB = (228, 64, 64)
BOX_RGB, BOX_EDGE_RGB = (214, 156, 66), (118, 78, 28)
BOX_ON_TARGET_RGB, BOX_ON_TARGET_EDGE_RGB = (84, 190, 96), (30, 100, 40)
PLAYER_RGB, PLAYER_EDGE_RGB = (80, 156, 244), (220, 236, 255)


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel-centre coordinates in [0, 1]: (row, col) arrays of shape (size, size)."""
    centres = (np.arange(size) + 0.5) / size
    return np.meshgrid(centres, centres, indexing="ij")


def _paint(tile: np.ndarray, mask: np.ndarray, rgb: tuple[int, int, int]) -> None:
    tile[mask] = rgb


def _wall(size: int) -> np.ndarray:
    y, x = _grid(size)
    tile = np.empty((size, size, 3), np.uint8)
    tile[:] = WALL_RGB
    line = max(1, size // 14) / size  # mortar thickness
    rows = (y % 0.5) < line  # two brick courses
    upper = y < 0.5
    joints = np.where(upper, (x % 0.5) < line, ((x + 0.25) % 0.5) < line)  # staggered joints
    _paint(tile, rows | joints, MORTAR_RGB)
    return tile


def _floor(size: int) -> np.ndarray:
    tile = np.empty((size, size, 3), np.uint8)
    tile[:] = FLOOR_RGB
    return tile


def _ring_mask(size: int) -> np.ndarray:
    y, x = _grid(size)
    edge = np.maximum(abs(y - 0.5), abs(x - 0.5))
    width = max(1.5, size / 10) / size
    return (edge <= 0.32) & (edge >= 0.32 - width)


def _target(size: int) -> np.ndarray:
    tile = _floor(size)
    _paint(tile, _ring_mask(size), TARGET_RGB)
    return tile


def _box(size: int, fill: tuple[int, int, int], edge_rgb: tuple[int, int, int]) -> np.ndarray:
    y, x = _grid(size)
    tile = _floor(size)
    edge = np.maximum(abs(y - 0.5), abs(x - 0.5))
    body = edge <= 0.42
    width = max(1.0, size / 12) / size
    border = body & (edge >= 0.42 - width)
    cross = body & ((abs(y - x) <= width * 0.75) | (abs(y + x - 1) <= width * 0.75))
    _paint(tile, body, fill)
    _paint(tile, border | cross, edge_rgb)
    return tile


def _player(base: np.ndarray) -> np.ndarray:
    size = base.shape[0]
    y, x = _grid(size)
    tile = base.copy()
    radius = np.hypot(y - 0.5, x - 0.5)
    _paint(tile, radius <= 0.27, PLAYER_RGB)
    _paint(tile, (radius <= 0.27) & (radius >= 0.27 - max(1.0, size / 16) / size), PLAYER_EDGE_RGB)
    return tile


@lru_cache(maxsize=8)
def tiles(size: int) -> np.ndarray:
    """The seven tiles of side `size`, shape ``(7, size, size, 3)`` uint8, indexed by cell kind:
    0 wall, 1 floor, 2 target, 3 box on target, 4 box, 5 player, 6 player on target. Read-only (cached)."""
    if int(size) < MIN_TILE_SIZE:
        raise ValueError(f"tile_size must be at least {MIN_TILE_SIZE} pixels, got {size!r}")
    size = int(size)
    stack = np.stack([
        _wall(size), _floor(size), _target(size),
        _box(size, BOX_ON_TARGET_RGB, BOX_ON_TARGET_EDGE_RGB), _box(size, BOX_RGB, BOX_EDGE_RGB),
        _player(_floor(size)), _player(_target(size)),
    ])
    stack.setflags(write=False)
    return stack


def cell_kinds(room_fixed: np.ndarray, room_state: np.ndarray) -> np.ndarray:
    """gym-sokoban's room_state codes, with the player standing on a target as `PLAYER_ON_TARGET`."""
    return np.where((room_state == PLAYER) & (room_fixed == TARGET), PLAYER_ON_TARGET, room_state)


def render_frame(room_fixed: np.ndarray, room_state: np.ndarray, tile_size: int = DEFAULT_TILE_SIZE) -> np.ndarray:
    """The room as an RGB frame, ``uint8`` of shape ``(rows · tile_size, cols · tile_size, 3)`` (a new
    array each call)."""
    kinds = cell_kinds(room_fixed, room_state)
    rows, cols = kinds.shape
    blocks = tiles(tile_size)[kinds]  # (rows, cols, t, t, 3)
    return blocks.transpose(0, 2, 1, 3, 4).reshape(rows * tile_size, cols * tile_size, 3)
