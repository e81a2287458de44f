"""Sokoban, a package of one module per job: the room's cell codes and text form (`room`), the reverse-play
generator (`generator`), the BFS solver that is the scripted expert (`solver`), the text env (`env`, whose
docstring is the env's spec sheet), its frames (`image`), Boxoban level files (`boxoban`) and the
``hindsight_facts`` hook (`hindsight`).

``seedbench.envs.sokoban`` itself gives the names plugins and the catalogue import from it (the entry point
``seedbench.envs.sokoban:SokobanEnv``, the cell codes, `solve`, `parse_room`, `render_room`, ...).
"""

from seedbench.envs.sokoban.env import (
    IMAGE_LEGEND,
    PENALTY_BOX_OFF_TARGET,
    PENALTY_FOR_STEP,
    REWARD_BOX_ON_TARGET,
    REWARD_FINISHED,
    TASK,
    SokobanEnv,
)
from seedbench.envs.sokoban.generator import (
    GENERATION_TRIES,
    MAX_GENERATION_ATTEMPTS,
    P_CHANGE_DIRECTIONS,
    REVERSE_PLAY_MAX_STATES,
    REVERSE_PLAY_TTL,
    GenerationError,
    generate_room,
    place_boxes_and_player,
    reverse_playing,
    room_topology_generation,
)
from seedbench.envs.sokoban.image import DEFAULT_TILE_SIZE, render_frame, tiles
from seedbench.envs.sokoban.room import (
    ACTIONS,
    BOX,
    BOX_ON_TARGET,
    CHANGE_COORDINATES,
    FLOOR,
    LEGEND,
    PLAYER,
    SYMBOLS,
    TARGET,
    WALL,
    parse_room,
    render_room,
)
from seedbench.envs.sokoban.solver import solve

__all__ = [
    "ACTIONS", "BOX", "BOX_ON_TARGET", "CHANGE_COORDINATES", "DEFAULT_TILE_SIZE", "FLOOR", "GENERATION_TRIES",
    "GenerationError", "IMAGE_LEGEND", "LEGEND", "MAX_GENERATION_ATTEMPTS", "PENALTY_BOX_OFF_TARGET",
    "PENALTY_FOR_STEP", "PLAYER", "P_CHANGE_DIRECTIONS", "REVERSE_PLAY_MAX_STATES", "REVERSE_PLAY_TTL",
    "REWARD_BOX_ON_TARGET", "REWARD_FINISHED", "SYMBOLS", "SokobanEnv", "TARGET", "TASK", "WALL", "generate_room",
    "parse_room", "place_boxes_and_player", "render_frame", "render_room", "reverse_playing",
    "room_topology_generation", "solve", "tiles",
]
