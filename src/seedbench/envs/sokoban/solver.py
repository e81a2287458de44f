"""The scripted expert: the shortest solution of a Sokoban room by breadth-first search."""

from __future__ import annotations

from collections import deque

import numpy as np

from seedbench.envs.sokoban.room import (ACTIONS, BOX, BOX_ON_TARGET, CHANGE_COORDINATES, FLOOR, PLAYER, TARGET,
                                         WALL)


def solve(room_state: np.ndarray, room_fixed: np.ndarray | None = None,
          max_states: int = 1_000_000) -> list[str] | None:
    """Shortest action list that puts every box on a target, by BFS over (player, box positions).

    `room_state` uses gym-sokoban's codes. It cannot show a target under the player; pass `room_fixed`
    when that can happen (the env always does). Returns None when the level is unsolvable or the search
    exceeds `max_states`.
    """
    room_state = np.asarray(room_state)
    height, width = room_state.shape
    if room_fixed is None:
        room_fixed = np.where(room_state == WALL, WALL, np.where(np.isin(room_state, (TARGET, BOX_ON_TARGET)),
                                                                 TARGET, FLOOR))
    flat_fixed = np.asarray(room_fixed).ravel()
    flat_state = room_state.ravel()
    walls = frozenset(np.flatnonzero(flat_fixed == WALL).tolist())
    targets = frozenset(np.flatnonzero(flat_fixed == TARGET).tolist())
    player = int(np.flatnonzero(flat_state == PLAYER)[0])
    boxes = tuple(sorted(np.flatnonzero(np.isin(flat_state, (BOX, BOX_ON_TARGET))).tolist()))
    offsets = tuple(dr * width + dc for dr, dc in CHANGE_COORDINATES)
    size = height * width

    def solved(box_tuple):
        return targets.issubset(box_tuple)

    start = (player, boxes)
    if solved(boxes):
        return []
    parents: dict = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        pos, box_tuple = state
        box_set = set(box_tuple)
        for action, offset in enumerate(offsets):
            nxt = pos + offset
            if not 0 <= nxt < size or nxt in walls:
                continue
            new_boxes = box_tuple
            if nxt in box_set:
                behind = nxt + offset
                if not 0 <= behind < size or behind in walls or behind in box_set:
                    continue
                new_boxes = tuple(sorted(behind if b == nxt else b for b in box_tuple))
            child = (nxt, new_boxes)
            if child in parents:
                continue
            parents[child] = (state, action)
            if solved(new_boxes):
                plan = []
                node = child
                while parents[node] is not None:
                    node, act = parents[node]
                    plan.append(ACTIONS[act])
                return plan[::-1]
            if len(parents) >= max_states:
                return None
            queue.append(child)
    return None


# ----------------------------------------------------------------------------------------------------
# The env
