"""Sokoban's ``hindsight_facts`` hook (`seedbench.envs.hindsight`): what the pushes of one finished episode
did, read from the grids the agent saw. Cells are ``(row, column)`` from 0 at the top-left of the grid.

Facts, most decisive first: a box wedged into a corner (a dead end: a box against two walls that meet
can never be pushed out), a box put on or pushed off a target, the box never pushed at all, where it ended
relative to the nearest target, moves blocked by a wall or by a box that could not move.
"""

from __future__ import annotations

import numpy as np

from seedbench.envs.hindsight import EpisodeRecord
from seedbench.envs.sokoban.room import (ACTIONS, BOX, BOX_ON_TARGET, CHANGE_COORDINATES, PLAYER, TARGET, WALL,
                                         parse_room)

MAX_FACTS = 4


def _grid(observation: str):
    try:
        return parse_room(observation)
    except ValueError:
        return None


def _boxes(state: np.ndarray) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in np.argwhere(np.isin(state, (BOX, BOX_ON_TARGET)))}


def _cell(position) -> str:
    return f"({int(position[0])}, {int(position[1])})"


def _cornered(fixed: np.ndarray, box: tuple[int, int]) -> bool:
    r, c = box
    vertical = fixed[r - 1, c] == WALL or fixed[r + 1, c] == WALL
    horizontal = fixed[r, c - 1] == WALL or fixed[r, c + 1] == WALL
    return fixed[r, c] != TARGET and vertical and horizontal


def sokoban_facts(episode: EpisodeRecord) -> list[str]:
    ranked: list[tuple[int, str]] = []
    blocked_seen: set[str] = set()
    pushes = 0
    last_grid = None
    for step in episode.steps:
        before, after = _grid(step.observation), _grid(step.next_observation)
        if before is None or after is None:
            continue
        last_grid = after
        if not step.valid or step.action not in ACTIONS:
            continue
        fixed, state = before
        old_boxes, new_boxes = _boxes(state), _boxes(after[1])
        moved_from, moved_to = old_boxes - new_boxes, new_boxes - old_boxes
        move = f"pushing {step.action} at step {step.index}"
        if moved_to:
            pushes += 1
            (source,), (box,) = moved_from, moved_to
            if fixed[box] == TARGET:
                ranked.append((0 if episode.won and step is episode.steps[-1] else 1,
                               f"{move} put a box on the target at {_cell(box)}"))
            elif fixed[source] == TARGET:
                ranked.append((1, f"{move} pushed a box off the target at {_cell(source)}"))
            elif _cornered(fixed, box):
                ranked.append((0, f"{move} wedged the box into the corner at {_cell(box)}, from where it can "
                                  f"never reach a target"))
            else:
                ranked.append((4, f"{move} moved a box to {_cell(box)}"))
            continue
        player = np.argwhere(state == PLAYER)
        if player.size and (after[1] == state).all():
            ahead = tuple(player[0] + np.array(CHANGE_COORDINATES[ACTIONS.index(step.action)]))
            what = "a wall" if fixed[ahead] == WALL else "a box that could not move"
            if what not in blocked_seen:
                blocked_seen.add(what)
                ranked.append((3, f"moving {step.action} at step {step.index} ran into {what} at {_cell(ahead)}"))
    if last_grid is not None and not episode.won:
        fixed, state = last_grid
        loose = sorted(b for b in _boxes(state) if fixed[b] != TARGET)
        targets = [(int(r), int(c)) for r, c in np.argwhere((fixed == TARGET) & (state != BOX_ON_TARGET))]
        if not pushes:
            ranked.append((1, f"no box was pushed in {len(episode.steps)} steps"))
        if loose and targets:
            box = loose[0]
            target = min(targets, key=lambda t: abs(t[0] - box[0]) + abs(t[1] - box[1]))
            distance = abs(target[0] - box[0]) + abs(target[1] - box[1])
            cells = f"{distance} cell{'s' if distance != 1 else ''}"
            ranked.append((2, f"the box ended at {_cell(box)}, {cells} from the target at {_cell(target)}"))
    ranked.sort(key=lambda item: item[0])
    return [text for _, text in ranked[:MAX_FACTS]]
