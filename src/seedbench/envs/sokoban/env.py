"""Sokoban: gym-sokoban's procedurally generated puzzles, played in text.

Description
    A faithful reimplementation of gym-sokoban (Schrader, 2018) ``SokobanEnv`` with a text observation
    (the package itself does not run with numpy 2). Rooms come from gym-sokoban's reverse-play
    generator: a random walk with 3x3 masks carves the floor, the player and the boxes are placed with
    every box on its target, then a depth-first search plays the game *backwards* (the player moves and
    pulls boxes) and keeps the arrangement with the highest score, (number of pulls) x (total Manhattan
    distance of the boxes from their targets), among those where no box is left on a target. Every level
    is therefore solvable; `solve` (a breadth-first search) proves it and is the scripted expert.
    Defaults follow the verl-agent / RAGEN text-Sokoban setting: 6x6 room, one box, 15 steps.
Task text
    "push every box onto a target"
Action grammar
    ``<action>up</action>``, ``<action>down</action>``, ``<action>left</action>``,
    ``<action>right</action>`` (case-insensitive), after a ``<think>…</think>`` block and with no CJK
    character; the first action tag counts (``projection="reference"``, verl-agent's rule; ``"seedbench"``:
    no think block needed, the last tag counts). Moving into a box pushes it when the
    cell behind it is free. Anything else is an invalid action: a no-op step that still costs the step
    penalty and counts towards the step cap (``info["action_valid"] = False``).
Observation
    The room as a grid of space-separated symbols, one row per line, followed by a one-line legend::

        # wall   _ floor   O target   X box   * box on target   P player   + player on target

    (gym-sokoban's text renderers use ``√`` and ``S``; those are replaced by the printable-ASCII
    ``*`` and ``+`` of the standard XSB notation so the observation fits the Text space's charset.)
    ``up`` is towards the first line.
Observation (image)
    With ``image=True`` (``sokoban-vision`` and its variants) every reset and step ``info["image"]`` is
    the same room drawn from tiles (`seedbench.envs.sokoban.image`: brick wall, dark floor, red target
    ring, wooden box, green box on target, blue player disc, the disc inside the ring for the player on
    a target), ``uint8`` of shape ``image_shape + (3,)`` with ``image_shape = (rows · tile_size, cols ·
    tile_size)``; ``tile_size`` defaults to 56 pixels (a 6×6 room is 336×336, 144 Qwen2.5-VL image
    tokens; the reference's gym-sokoban sprites are 16 pixels, ``tile_size=16``). The text observation
    is unchanged. ``render_mode="rgb_array"`` makes `render` return the frame (any ``image`` setting).
Rewards
    gym-sokoban's constants: -0.1 every step, +1 when a box is pushed onto a target, -1 when a box is
    pushed off a target, +10 when all boxes are on targets. Invalid actions get only the -0.1 here; the
    trainer subtracts ``invalid_action_penalty`` (0.1) from the step sample separately.
Termination vs truncation
    Terminates when every box is on a target (``info["won"] = True``). Truncates after ``max_steps``
    (default 15) steps otherwise.
Registered ids
    ``seedbench/Sokoban-v0`` (alias ``sokoban``): 6x6, 1 box, 15 steps. Other sizes are kwargs
    (``dim_room``, ``num_boxes``, ``max_steps``, ``num_gen_steps``). With frames: ``sokoban-vision``
    (the paper's vision setting, 6x6, 1 box, 15 steps), and the generalization variants
    ``sokoban-vision-7x7`` (a larger room) and ``sokoban-vision-2boxes`` (6x6, two boxes), both with 30
    steps: 15 is too few for some of their levels (the shortest solutions of 300 sampled test levels
    reach 20 and 23 steps; 0.7 % of 7x7 levels need more than 15);
    ``sokoban-vision-boxoban`` plays Boxoban level files (`seedbench.envs.sokoban.boxoban`).
Data source
    Procedural; no files. Level ``sokoban-{split}-{seed}`` is generated from a generator seeded with
    (seed, split name), so the same (split, seed) is always the same level (given numpy's Generator
    streams, which numpy keeps stable in practice but does not promise across versions). The splits are disjoint *sets*
    of levels by construction: a level belongs to the split picked by a hash of its layout and the
    generator redraws (deterministically) until the two agree, so no test level can appear in training.
    ``reset(seed=None)`` draws the level seed from ``self.np_random``; ``info["task_id"]`` always names
    the level, and ``reset(options={"task_id": ...})`` replays it. ``reset(options={"level": text})``
    plays a hand-made level written in the observation's symbols.

Deviations from gym-sokoban, all deliberate: randomness comes from the env's ``np_random`` instead of
the global ``random``/``np.random`` modules (so levels are reproducible, not bit-identical to the
package's); the box-on-target count starts from the actual level instead of 0 (identical for generated
levels, which never start with a box on a target, but correct for hand-made ones); failed generation is
retried in a loop instead of by recursion. The generator keeps gym-sokoban's quirks that shape the level
distribution: the DFS hands the *parent's* ``last_pull`` to its children, so every pull counts as a
"box swap" in the score, and states are deduplicated on the room alone (first visit wins).
"""

from __future__ import annotations

import hashlib
import re
import zlib

import numpy as np

from seedbench.envs.action_parsing import check_projection, parse_choice
from seedbench.envs.sokoban.generator import (MAX_GENERATION_ATTEMPTS, P_CHANGE_DIRECTIONS, GenerationError,
                                              generate_room)
from seedbench.envs.sokoban.image import DEFAULT_TILE_SIZE, render_frame, tiles
from seedbench.envs.sokoban.room import (ACTIONS, BOX, BOX_ON_TARGET, CHANGE_COORDINATES, FLOOR, LEGEND, PLAYER,
                                         TARGET, parse_room, render_room)
from seedbench.envs.sokoban.solver import solve
from seedbench.envs.text_env import TextEnv

# gym-sokoban's SokobanEnv reward constants.
PENALTY_FOR_STEP = -0.1
REWARD_BOX_ON_TARGET = 1.0
PENALTY_BOX_OFF_TARGET = -1.0
REWARD_FINISHED = 10.0

IMAGE_LEGEND = ("The image shows the same room, one square per cell: red bricks are walls, dark squares floor, a "
                "red square ring a target, a wooden crate a box, a green crate a box on a target, and the blue "
                "disc is you.")
TASK = "push every box onto a target"

_TASK_ID_RE = re.compile(r"^sokoban-(?P<split>[A-Za-z0-9_]+)-(?P<seed>\d+)$")


def _split_of_room(room_fixed: np.ndarray, room_state: np.ndarray, num_splits: int) -> int:
    """Which split a level belongs to: a stable hash of its layout, so the splits are disjoint sets."""
    digest = hashlib.blake2b(room_fixed.astype(np.uint8).tobytes() + room_state.astype(np.uint8).tobytes() +
                             np.asarray(room_fixed.shape, dtype=np.int64).tobytes(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % num_splits


class SokobanEnv(TextEnv):
    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    history_length = 2
    max_steps = 15
    invalid_action_penalty = 0.1
    splits = ("train", "test")
    eval_split = "test"
    instruction = (
        "You are playing Sokoban. You are the player (P) in a room surrounded by walls (#). Your goal is to "
        "push every box (X) onto a target (O); a box on a target is shown as *, and the player standing on a "
        "target as +. Each action moves you one cell up (towards the first line), down, left or right. "
        "Walking into a box pushes it one cell in the same direction if the cell behind it is floor (_) or a "
        "target; you cannot pull boxes, push two boxes at once, or walk through walls. "
        f"{LEGEND} "
        "Answer with exactly one action in the form <action>up|down|left|right</action>, for example "
        "<action>left</action>."
    )

    def __init__(self, dim_room: tuple[int, int] = (6, 6), num_boxes: int = 1, max_steps: int = 15,
                 num_gen_steps: int | None = None, projection: str = "reference", image: bool = False,
                 tile_size: int = DEFAULT_TILE_SIZE, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.projection = check_projection(projection)
        if projection != "reference":  # the class-level rule is the reference one
            self.parse_action = lambda text: parse_choice(text, ACTIONS, self.projection)
        self.dim_room = (int(dim_room[0]), int(dim_room[1]))
        if min(self.dim_room) < 4:
            raise ValueError(f"dim_room must be at least (4, 4), got {dim_room!r}")
        if num_boxes < 1:
            raise ValueError(f"num_boxes must be >= 1, got {num_boxes!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
        self.num_boxes = int(num_boxes)
        self.max_steps = int(max_steps)
        self.tile_size = int(tile_size)
        tiles(self.tile_size)  # draws (and caches) the tiles; a size too small to draw fails here, not at reset
        self.image = bool(image)
        self._set_image_shape()
        # gym-sokoban's default walk length for the room topology.
        self.num_gen_steps = int(1.7 * sum(self.dim_room)) if num_gen_steps is None else int(num_gen_steps)
        self.room_fixed: np.ndarray | None = None
        self.room_state: np.ndarray | None = None
        self._split = self.splits[0]
        self._task_id = ""
        self._boxes_on_target = 0

    # ------------------------------------------------------------------ text protocol

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        """The reference projection (`seedbench.envs.action_parsing`); an env made with
        ``projection="seedbench"`` replaces it on the instance."""
        return parse_choice(text, ACTIONS, "reference")

    def _observation(self) -> str:
        return f"{render_room(self.room_fixed, self.room_state)}\n{LEGEND}"

    def _info(self) -> dict:
        info = {
            "task": TASK,
            "admissible_actions": list(ACTIONS),
            "won": self._all_boxes_on_target(),
            "task_id": self._task_id,
            "task_type": "sokoban",
            "split": self._split,
        }
        if self.image:
            info["image"] = self.frame()
        return info

    def _set_image_shape(self) -> None:
        """Frames (and the prompt's words about them) only with ``image=True``: a text-only Sokoban stays
        exactly the text env it was."""
        if self.image:
            self.image_shape = (self.dim_room[0] * self.tile_size, self.dim_room[1] * self.tile_size)
            self.instruction = f"{type(self).instruction} {IMAGE_LEGEND}"

    def frame(self) -> np.ndarray:
        """The current room as an RGB frame (`seedbench.envs.sokoban.image.render_frame`)."""
        if self.room_state is None:
            raise RuntimeError("frame() called before reset()")
        return render_frame(self.room_fixed, self.room_state, self.tile_size)

    # ------------------------------------------------------------------ levels

    def generate_level(self, split: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The level ``sokoban-{split}-{seed}``: ``(room_fixed, room_state)``. Pure in (split, seed, config)."""
        split_index = self.splits.index(self._check_split(split))
        rng = np.random.default_rng([int(seed), zlib.crc32(split.encode())])
        for _ in range(MAX_GENERATION_ATTEMPTS):
            try:
                room_fixed, room_state = generate_room(rng, self.dim_room, P_CHANGE_DIRECTIONS, self.num_gen_steps,
                                                       self.num_boxes)
            except GenerationError:
                continue  # gym-sokoban's reset retries the same way
            if _split_of_room(room_fixed, room_state, len(self.splits)) == split_index:
                return room_fixed, room_state
        raise RuntimeError(f"could not generate a {self.dim_room} Sokoban room with {self.num_boxes} boxes in "
                           f"{MAX_GENERATION_ATTEMPTS} attempts; use a larger dim_room or fewer boxes")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        room_fixed, room_state, split, task_id = self._select_level(seed, options or {})
        if self.image and room_fixed.shape != self.dim_room:
            raise ValueError(f"a {room_fixed.shape[0]}x{room_fixed.shape[1]} level in an env whose frames are "
                             f"{self.dim_room[0]}x{self.dim_room[1]} rooms; make the env with dim_room={room_fixed.shape}")
        self.room_fixed, self.room_state = room_fixed, room_state.copy()
        self._split, self._task_id = split, task_id
        self._boxes_on_target = self._count_boxes_on_target()
        return self._observation(), self._info()

    def _select_level(self, seed: int | None, options: dict) -> tuple[np.ndarray, np.ndarray, str, str]:
        """``(room_fixed, room_state, split, task_id)`` for a reset: a hand-made ``level``, a ``task_id``,
        or level ``seed`` of the split (drawn from ``np_random`` when None)."""
        split = self._check_split(options.get("split", self.splits[0]))
        if "level" in options:
            room_fixed, room_state = parse_room(options["level"])
            task_id = str(options.get("task_id", f"sokoban-level-{zlib.crc32(options['level'].encode()):08x}"))
            return room_fixed, room_state, split, task_id
        if "task_id" in options:
            match = _TASK_ID_RE.match(str(options["task_id"]))
            if match is None:
                raise ValueError(f"bad Sokoban task_id {options['task_id']!r}; expected 'sokoban-<split>-<seed>'")
            split, level_seed = self._check_split(match["split"]), int(match["seed"])
        elif seed is not None:
            level_seed = int(seed)
        else:
            level_seed = int(self.np_random.integers(2**31))
        room_fixed, room_state = self.generate_level(split, level_seed)
        return room_fixed, room_state, split, f"sokoban-{split}-{level_seed}"

    # ------------------------------------------------------------------ dynamics (gym-sokoban _push/_move)

    def _player_position(self) -> np.ndarray:
        return np.argwhere(self.room_state == PLAYER)[0]

    def _move(self, action: str) -> bool:
        """Push when a box is ahead and the cell behind it is free, else step onto free floor."""
        change = np.array(CHANGE_COORDINATES[ACTIONS.index(action)])
        current = self._player_position()
        new_position = current + change
        box_position = new_position + change
        height, width = self.room_state.shape
        if not (0 <= new_position[0] < height and 0 <= new_position[1] < width):
            return False
        target_cell = self.room_state[tuple(new_position)]
        if target_cell in (BOX, BOX_ON_TARGET):
            if not (0 <= box_position[0] < height and 0 <= box_position[1] < width):
                return False
            if self.room_state[tuple(box_position)] not in (FLOOR, TARGET):
                return False
            self.room_state[tuple(box_position)] = (
                BOX_ON_TARGET if self.room_fixed[tuple(box_position)] == TARGET else BOX)
        elif target_cell not in (FLOOR, TARGET):
            return False
        self.room_state[tuple(new_position)] = PLAYER
        self.room_state[tuple(current)] = self.room_fixed[tuple(current)]
        return True

    def _count_boxes_on_target(self) -> int:
        # gym-sokoban counts uncovered targets (a player standing on one hides it, not fills it).
        uncovered = (self.room_state == TARGET) | ((self.room_fixed == TARGET) & (self.room_state == PLAYER))
        return int((self.room_fixed == TARGET).sum() - uncovered.sum())

    def _all_boxes_on_target(self) -> bool:
        if self.room_state is None:
            return False
        uncovered = (self.room_state == TARGET) | ((self.room_fixed == TARGET) & (self.room_state == PLAYER))
        return not uncovered.any()

    def _apply_action(self, command: str, valid: bool):
        """One gym-sokoban step: move or push when the command is valid (an invalid one is a no-op), then
        the step penalty and the box-on/off-target and finish rewards."""
        if valid:
            self._move(command)
        reward = PENALTY_FOR_STEP
        boxes_on_target = self._count_boxes_on_target()
        if boxes_on_target > self._boxes_on_target:
            reward += REWARD_BOX_ON_TARGET
        elif boxes_on_target < self._boxes_on_target:
            reward += PENALTY_BOX_OFF_TARGET
        self._boxes_on_target = boxes_on_target
        won = self._all_boxes_on_target()
        if won:
            reward += REWARD_FINISHED
        return self._observation(), reward, won, valid

    # ------------------------------------------------------------------ expert and rendering

    def expert_plan(self) -> list[str] | None:
        """The shortest action list that solves the level from the current state (None if impossible)."""
        if self.room_state is None:
            raise RuntimeError("expert_plan() called before reset()")
        return solve(self.room_state, self.room_fixed)

    @staticmethod
    def hindsight_facts(episode) -> list[str]:
        """Facts about one finished episode from its grids (`seedbench.envs.hindsight`): pushes onto, off
        and into corners, blocked moves, where the box ended (`seedbench.envs.sokoban.hindsight`)."""
        from seedbench.envs.sokoban.hindsight import sokoban_facts

        return sokoban_facts(episode)

    def render(self):
        """``ansi`` (or no render mode): the text grid; ``rgb_array``: the frame (Gymnasium's modes)."""
        if self.room_state is None:
            return None if self.render_mode == "rgb_array" else ""
        if self.render_mode == "rgb_array":
            return self.frame()
        return render_room(self.room_fixed, self.room_state)
