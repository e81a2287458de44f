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
    the same room drawn from tiles (`seedbench.envs.sokoban_image`: brick wall, dark floor, red target
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
    ``sokoban-vision-boxoban`` plays Boxoban level files (`seedbench.envs.boxoban`).
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
from collections import deque

import numpy as np

from seedbench.envs.action_parsing import check_projection, parse_choice
from seedbench.envs.sokoban_image import DEFAULT_TILE_SIZE, render_frame, tiles
from seedbench.envs.text_env import TextEnv

ACTIONS: tuple[str, ...] = ("up", "down", "left", "right")
# gym-sokoban's CHANGE_COORDINATES, (row, col) deltas in ACTIONS order.
CHANGE_COORDINATES: tuple[tuple[int, int], ...] = ((-1, 0), (1, 0), (0, -1), (0, 1))

# gym-sokoban's cell codes (room_fixed uses 0-2, room_state 0-5).
WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER = 0, 1, 2, 3, 4, 5

# gym-sokoban's SokobanEnv reward constants.
PENALTY_FOR_STEP = -0.1
REWARD_BOX_ON_TARGET = 1.0
PENALTY_BOX_OFF_TARGET = -1.0
REWARD_FINISHED = 10.0

SYMBOLS = {"wall": "#", "floor": "_", "target": "O", "box": "X", "box_on_target": "*", "player": "P",
           "player_on_target": "+"}
LEGEND = "Legend: # wall, _ floor, O target, X box, * box on target, P player, + player on target."
IMAGE_LEGEND = ("The image shows the same room, one square per cell: red bricks are walls, dark squares floor, a "
                "red square ring a target, a wooden crate a box, a green crate a box on a target, and the blue "
                "disc is you.")
TASK = "push every box onto a target"

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
_TASK_ID_RE = re.compile(r"^sokoban-(?P<split>[A-Za-z0-9_]+)-(?P<seed>\d+)$")


class GenerationError(RuntimeError):
    """One generation attempt failed (too little floor, or no reverse play moved the boxes)."""


# ----------------------------------------------------------------------------------------------------
# Generator (gym-sokoban room_utils, with an explicit numpy Generator)


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
        return parse_choice(text, ACTIONS)

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
        """The current room as an RGB frame (`seedbench.envs.sokoban_image.render_frame`)."""
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
        and into corners, blocked moves, where the box ended (`seedbench.envs.sokoban_hindsight`)."""
        from seedbench.envs.sokoban_hindsight import sokoban_facts

        return sokoban_facts(episode)

    def render(self):
        """``ansi`` (or no render mode): the text grid; ``rgb_array``: the frame (Gymnasium's modes)."""
        if self.room_state is None:
            return None if self.render_mode == "rgb_array" else ""
        if self.render_mode == "rgb_array":
            return self.frame()
        return render_room(self.room_fixed, self.room_state)
