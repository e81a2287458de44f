"""Sokoban rooms as gym-sokoban encodes them, and their text form.

The cell codes, the four moves and the symbols of the text observation are shared by the generator
(`seedbench.envs.sokoban.generator`), the solver (`seedbench.envs.sokoban.solver`), the env
(`seedbench.envs.sokoban.env`) and its frames (`seedbench.envs.sokoban.image`); `render_room` and
`parse_room` turn a room into the observation's grid and back.
"""

from __future__ import annotations

import numpy as np

ACTIONS: tuple[str, ...] = ("up", "down", "left", "right")
# gym-sokoban's CHANGE_COORDINATES, (row, col) deltas in ACTIONS order.
CHANGE_COORDINATES: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))

# gym-sokoban's cell codes (room_fixed uses 0-2, room_state 0-5).
WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER = 0, 1, 2, 3, 4, 5

SYMBOLS = {"wall": "#", "floor": "_", "target": "O", "box": "X", "box_on_target": "*", "player": "P",
           "player_on_target": "+"}
LEGEND = "Legend: # wall, _ floor, O target, X box, * box on target, P player, + player on target."


def render_room(room_fixed: np.ndarray, room_state: np.ndarray) -> str:
    """The grid, one line per row, symbols separated by spaces (keeps columns countable for tokenizers)."""
    lookup = {WALL: SYMBOLS["wall"], FLOOR: SYMBOLS["floor"], TARGET: SYMBOLS["target"], BOX: SYMBOLS["box"],
              BOX_ON_TARGET: SYMBOLS["box_on_target"]}
    lines = []
    for fixed_row, state_row in zip(room_fixed, room_state):
        cells = []
        for fixed, state in zip(fixed_row, state_row):
            if state == PLAYER:
                cells.append(SYMBOLS["player_on_target"] if fixed == TARGET else SYMBOLS["player"])
            else:
                cells.append(lookup[int(state)])
        lines.append(" ".join(cells))
    return "\n".join(lines)


_PARSE = {"#": (WALL, WALL), "_": (FLOOR, FLOOR), "O": (TARGET, TARGET), "X": (FLOOR, BOX),
          "*": (TARGET, BOX_ON_TARGET), "P": (FLOOR, PLAYER), "+": (TARGET, PLAYER)}


def parse_room(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of `render_room`: ``(room_fixed, room_state)`` from grid text (spaces between cells optional).

    Lines starting with ``Legend`` are ignored. The room must be rectangular, enclosed by walls, have
    exactly one player and as many boxes as targets (at least one).
    """
    rows = []
    for line in text.strip("\n").splitlines():
        line = line.rstrip()
        if not line or line.startswith("Legend"):
            continue
        cells = line.split() if " " in line.strip() else list(line.strip())
        rows.append(cells)
    if not rows or len({len(r) for r in rows}) != 1:
        raise ValueError("a Sokoban room must be a non-empty rectangle of cells")
    try:
        codes = [[_PARSE[c] for c in row] for row in rows]
    except KeyError as err:
        raise ValueError(f"unknown Sokoban symbol {err.args[0]!r}; use {sorted(_PARSE)}") from None
    room_fixed = np.array([[f for f, _ in row] for row in codes], dtype=np.int64)
    room_state = np.array([[s for _, s in row] for row in codes], dtype=np.int64)
    border = np.concatenate([room_fixed[0], room_fixed[-1], room_fixed[:, 0], room_fixed[:, -1]])
    if (border != WALL).any():
        raise ValueError("a Sokoban room must be enclosed by walls")
    if (room_state == PLAYER).sum() != 1:
        raise ValueError("a Sokoban room needs exactly one player")
    num_boxes = int(np.isin(room_state, (BOX, BOX_ON_TARGET)).sum())
    if num_boxes == 0 or num_boxes != int((room_fixed == TARGET).sum()):
        raise ValueError("a Sokoban room needs at least one box and as many targets as boxes")
    return room_fixed, room_state
