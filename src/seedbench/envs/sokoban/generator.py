"""The room generator: gym-sokoban's reverse-play generator (room_utils) with an explicit numpy Generator.

A random walk with 3x3 masks carves the floor, the player and the boxes are placed with every box on its
target, then a depth-first search plays the game *backwards* and keeps the arrangement with the highest
score; every level it returns is solvable (the deviations from gym-sokoban are listed in
`seedbench.envs.sokoban.env`).
"""

from __future__ import annotations

import numpy as np

from seedbench.envs.sokoban.room import BOX, BOX_ON_TARGET, CHANGE_COORDINATES, FLOOR, PLAYER, TARGET, WALL

# Generator settings from gym-sokoban's room_utils.
P_CHANGE_DIRECTIONS = 0.35
GENERATION_TRIES = 4  # topologies tried per generate_room call before it gives up
REVERSE_PLAY_TTL = 300  # depth limit of the reverse-play DFS
REVERSE_PLAY_MAX_STATES = 300_000
MAX_GENERATION_ATTEMPTS = 10_000  # our guard against impossible settings (gym-sokoban retries forever)

_MASKS = (
    np.array([[0, 0, 0], [1, 1, 1], [0, 0, 0]]),
    np.array([[0, 1, 0], [0, 1, 0], [0, 1, 0]]),
    np.array([[0, 0, 0], [1, 1, 0], [0, 1, 0]]),
    np.array([[0, 0, 0], [1, 1, 0], [1, 1, 0]]),
    np.array([[0, 0, 0], [0, 1, 1], [0, 1, 0]]),
)
_WALK_DIRECTIONS = ((1, 0), (0, 1), (-1, 0), (0, -1))


class GenerationError(RuntimeError):
    """One generation attempt failed (too little floor, or no reverse play moved the boxes)."""


def room_topology_generation(rng: np.random.Generator, dim: tuple[int, int], p_change_directions: float,
                             num_steps: int) -> np.ndarray:
    """Carve floor (1) out of walls (0) with a random walk that stamps one of five 3x3 masks per step."""
    dim_x, dim_y = dim
    direction = _WALK_DIRECTIONS[rng.integers(len(_WALK_DIRECTIONS))]
    position = np.array([rng.integers(1, dim_x), rng.integers(1, dim_y)])  # randint(1, dim - 1), inclusive
    level = np.zeros(dim, dtype=int)
    for _ in range(num_steps):
        if rng.random() < p_change_directions:
            direction = _WALK_DIRECTIONS[rng.integers(len(_WALK_DIRECTIONS))]
        position = position + direction
        position[0] = max(min(position[0], dim_x - 2), 1)
        position[1] = max(min(position[1], dim_y - 2), 1)
        mask = _MASKS[rng.integers(len(_MASKS))]
        start = position - 1
        level[start[0]:start[0] + 3, start[1]:start[1] + 3] += mask
    level[level > 0] = FLOOR
    level[:, [0, dim_y - 1]] = WALL
    level[[0, dim_x - 1], :] = WALL
    return level


def place_boxes_and_player(rng: np.random.Generator, room: np.ndarray, num_boxes: int) -> np.ndarray:
    """Put the player (5) and `num_boxes` targets (2, each holding its box at first) on random floor."""
    rows, cols = np.where(room == FLOOR)
    if len(rows) <= num_boxes + 1:
        raise GenerationError(f"not enough free spots (#{len(rows)}) to place 1 player and {num_boxes} boxes")
    ind = rng.integers(len(rows))
    room[rows[ind], cols[ind]] = PLAYER
    for _ in range(num_boxes):
        rows, cols = np.where(room == FLOOR)
        ind = rng.integers(len(rows))
        room[rows[ind], cols[ind]] = TARGET
    return room


def reverse_playing(room_state: np.ndarray, room_structure: np.ndarray, ttl: int = REVERSE_PLAY_TTL,
                    max_states: int = REVERSE_PLAY_MAX_STATES) -> tuple[np.ndarray, int]:
    """gym-sokoban's reverse-play DFS: move and pull boxes away from their targets, return the best room.

    An explicit stack replaces the recursion (same visiting order); rooms are flat byte strings.
    Returns ``(best_room, best_score)``; the score is 0 unless every target is free of boxes and player.
    """
    height, width = room_state.shape
    structure = bytes(room_structure.astype(np.uint8).ravel())
    start = bytes(room_state.astype(np.uint8).ravel())
    targets = tuple(i for i, v in enumerate(structure) if v == TARGET)
    num_targets = len(targets)
    target_rc = tuple(divmod(t, width) for t in targets)
    offsets = tuple(dr * width + dc for dr, dc in CHANGE_COORDINATES)

    explored: set[bytes] = set()
    best_room, best_score = start, -1
    # (room, box positions in target order, box_swaps, ttl); children pushed reversed = recursion order.
    stack = [(start, targets, 0, ttl)]
    while stack:
        room, boxes, swaps, node_ttl = stack.pop()
        node_ttl -= 1
        if node_ttl <= 0 or len(explored) >= max_states or room in explored:
            continue
        score = 0
        if room.count(TARGET) == num_targets:
            displacement = 0
            for (tr, tc), pos in zip(target_rc, boxes):
                r, c = divmod(pos, width)
                displacement += abs(r - tr) + abs(c - tc)
            score = swaps * displacement
        if score > best_score:
            best_room, best_score = room, score
        explored.add(room)

        player = room.index(PLAYER)
        children = []
        for action in range(8):  # 0-3 pull up/down/left/right, 4-7 plain moves
            offset = offsets[action % 4]
            nxt = player + offset
            if room[nxt] not in (FLOOR, TARGET):
                continue  # the recursive original visits an already explored copy here
            new = bytearray(room)
            new[player] = structure[player]
            new[nxt] = PLAYER
            new_boxes, new_swaps = boxes, swaps
            if action < 4:
                behind = player - offset
                if new[behind] in (BOX_ON_TARGET, BOX):
                    new[player] = BOX_ON_TARGET
                    new[behind] = structure[behind]
                    new_boxes = tuple(player if b == behind else b for b in boxes)
                    new_swaps = swaps + 1  # last_pull_next != parent's last_pull: every pull counts
            children.append((bytes(new), new_boxes, new_swaps, node_ttl))
        stack.extend(reversed(children))
    best = np.frombuffer(best_room, dtype=np.uint8).reshape(height, width).astype(np.int64)
    return best, max(best_score, 0)


def generate_room(rng: np.random.Generator, dim: tuple[int, int] = (13, 13),
                  p_change_directions: float = P_CHANGE_DIRECTIONS, num_steps: int = 25, num_boxes: int = 3,
                  tries: int = GENERATION_TRIES) -> tuple[np.ndarray, np.ndarray]:
    """One gym-sokoban ``generate_room`` call: ``(room_fixed, room_state)``; raises GenerationError."""
    for _ in range(tries):
        room = room_topology_generation(rng, dim, p_change_directions, num_steps)
        room = place_boxes_and_player(rng, room, num_boxes)
        room_structure = room.copy()
        room_structure[room_structure == PLAYER] = FLOOR
        room_state = room.copy()
        room_state[room_state == TARGET] = BOX
        room_state, score = reverse_playing(room_state, room_structure)
        room_state[room_state == BOX_ON_TARGET] = BOX
        if score > 0:
            return room_structure, room_state
    raise GenerationError("generated room with score == 0")


# ----------------------------------------------------------------------------------------------------
# Text (render / parse) and the scripted solver
