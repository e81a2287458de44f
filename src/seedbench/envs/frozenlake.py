"""FrozenLake: Gymnasium's ``FrozenLake-v1`` on seeded random maps, in text and image.

Description
    Cross a frozen lake from the start (top-left) to the goal (bottom-right) without falling into a
    hole. The dynamics are Gymnasium's own ``FrozenLakeEnv`` (toy_text), played on maps from Gymnasium's
    ``generate_random_map`` (each tile frozen with probability ``p``, redrawn until a path exists).
    Gymnasium's default is slippery (the agent moves in the intended direction with probability 1/3 and
    to either side otherwise); seedbench's default is **not** slippery, so a task has a sure solution and
    the breadth-first expert solves every map; ``is_slippery=True`` restores Gymnasium's dynamics (its
    slips are drawn from the env's seeded generator, so an episode still replays exactly).
Task text
    "walk from the start S to the goal G without falling into a hole H"
Action grammar
    ``<action>left</action>``, ``down``, ``right`` or ``up`` (Gymnasium's actions 0-3, case-insensitive),
    after a ``<think>…</think>`` block (``projection="reference"``; ``"seedbench"``: no think block, the
    last tag counts). Anything else is an invalid action: a no-op step that still counts towards the cap.
Observation
    Text: the map, one row per line, tiles separated by spaces, the player as ``P`` (Gymnasium's ``ansi``
    render marks the player only with a colour escape code, which a text policy cannot see once the
    codes are stripped; this is that render with the player written in), then a legend. With
    ``show_neighbours=True`` (alias ``frozenlake-neighbours``; not in any reference) a line between the map
    and the legend names the four tiles one move away (``Next to you: left edge, down H, right F, up F.``),
    so the decision at each step can be read locally instead of by finding ``P`` in the grid: the easier
    variant the CPU quick start learns on. ``up`` is
    towards the first line. Image: ``info["image"]``, a ``frame_size`` x ``frame_size`` (default 192)
    uint8 RGB frame drawn here with Pillow (Gymnasium's ``rgb_array`` needs pygame): ice light blue,
    holes dark blue, the start grey, the goal gold, the player a red disc; tiles are
    ``frame_size // size`` pixels, the rest is a black border.
Rewards
    Gymnasium's: 1 on reaching the goal, 0 otherwise (also for falling into a hole).
Termination vs truncation
    Terminates in the goal (``info["won"] = True``) or in a hole. Truncates after ``max_steps`` (default
    100, Gymnasium's ``max_episode_steps`` for ``FrozenLake-v1``).
Registered ids
    ``seedbench/FrozenLake-v0`` (alias ``frozenlake``): 4x4 maps, p = 0.8, not slippery; splits ``train``
    and ``test`` (4x4) and ``test_large`` (``large_size``, default 6x6: the size-shift generalization
    split). ``frozenlake-8x8`` trains and tests on 8x8 maps with 10x10 as the shift. Kwargs: ``size``,
    ``large_size``, ``p``, ``is_slippery``, ``max_steps``, ``frame_size``, ``projection``, ``show_neighbours``,
    ``hard_share``.
Hard maps
    A map whose tile left of the goal is a hole (``hole_left_of_goal``) can only be finished by walking down
    the last column, and a policy that heads for the goal along the bottom row falls in. Split ``test_hard``
    holds held-out maps of that kind only (test-split maps, redrawn until hard). ``hard_share`` (default 0:
    Gymnasium's own distribution, where about 15 % of the 4x4 training maps are hard) forces that share of the
    training maps to be hard: map k of ``train`` is redrawn until hard when a draw seeded by k falls below the
    share, so a training run sees more of the kind (alias ``frozenlake-neighbours-hard``: a share of 0.5, so
    about 57 % hard). The maps not forced are the same as without the option.
Data source
    Procedural; no files. Map ``frozenlake-{split}-{seed}`` is drawn by ``generate_random_map`` from a seed
    derived from (seed, split name); the train and test splits are disjoint sets of maps (a hash of the
    map picks its split and the generator redraws until they agree); ``test_large`` has another size.
    ``test_hard`` holds test-split maps only. ``reset(options={"desc": ["SFFF", ...]})`` plays a hand-made map.
"""

from __future__ import annotations

import functools
import hashlib
import re
import zlib
from collections import deque

import numpy as np

from seedbench.envs.action_parsing import check_projection, parse_choice
from seedbench.envs.text_env import TextEnv

ACTIONS: tuple[str, ...] = ("left", "down", "right", "up")  # Gymnasium's action order
MOVES = {"left": (0, -1), "down": (1, 0), "right": (0, 1), "up": (-1, 0)}
LEGEND = "Legend: P player, S start, F frozen ice (safe), H hole, G goal."
NEIGHBOURS_PREFIX = "Next to you:"
TASK = "walk from the start S to the goal G without falling into a hole H"
TILE_COLOURS = {"F": (180, 220, 245), "H": (20, 40, 90), "S": (200, 200, 200), "G": (240, 190, 40)}
PLAYER_COLOUR = (220, 30, 30)
_TASK_ID_RE = re.compile(r"^frozenlake-(?P<split>[A-Za-z0-9_]+)-(?P<seed>\d+)$")


def _require_pillow() -> None:
    try:
        import PIL  # noqa: F401
    except ImportError as err:
        raise ImportError("the FrozenLake frames are drawn with Pillow: pip install 'pillow>=10.1'") from err


def shortest_path(desc: list[str], start: tuple[int, int]) -> list[str] | None:
    """The shortest action list from `start` to the goal over safe tiles (non-slippery moves), or None."""
    size_r, size_c = len(desc), len(desc[0])
    parents: dict[tuple[int, int], tuple[tuple[int, int], str] | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if desc[cell[0]][cell[1]] == "G":
            plan = []
            while parents[cell] is not None:
                cell, action = parents[cell]
                plan.append(action)
            return plan[::-1]
        for action in ACTIONS:
            dr, dc = MOVES[action]
            nxt = (min(max(cell[0] + dr, 0), size_r - 1), min(max(cell[1] + dc, 0), size_c - 1))
            if nxt not in parents and desc[nxt[0]][nxt[1]] != "H":
                parents[nxt] = (cell, action)
                queue.append(nxt)
    return None


def best_slippery_actions(transitions: dict, num_states: int, sweeps: int = 500) -> list[int]:
    """Per state, the action that maximises the probability of reaching the goal under Gymnasium's
    slippery transitions ``P[s][a] = [(prob, next, reward, terminated)]`` (value iteration)."""
    values = np.zeros(num_states)
    for _ in range(sweeps):
        q = np.array([[sum(p * (r + (0.0 if done else values[n])) for p, n, r, done in transitions[s][a])
                       for a in range(len(ACTIONS))] for s in range(num_states)])
        new = q.max(axis=1)
        if np.abs(new - values).max() < 1e-10:
            break
        values = new
    return [int(a) for a in q.argmax(axis=1)]


@functools.lru_cache(maxsize=64)
def _background(desc: tuple[str, ...], frame_size: int) -> np.ndarray:
    from PIL import Image, ImageDraw

    size = len(desc)
    tile = frame_size // size
    offset = (frame_size - tile * size) // 2
    image = Image.new("RGB", (frame_size, frame_size), (0, 0, 0))
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(desc):
        for c, kind in enumerate(row):
            x, y = offset + c * tile, offset + r * tile
            draw.rectangle((x, y, x + tile - 1, y + tile - 1), fill=TILE_COLOURS[kind], outline=(90, 110, 130))
    return np.asarray(image, dtype=np.uint8).copy()


def draw_frame(desc: list[str], player: tuple[int, int], frame_size: int) -> np.ndarray:
    """The frame: the cached map tiles plus the player's disc."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(_background(tuple(desc), frame_size))
    tile = frame_size // len(desc)
    offset = (frame_size - tile * len(desc)) // 2
    x, y, margin = offset + player[1] * tile, offset + player[0] * tile, max(2, tile // 5)
    ImageDraw.Draw(image).ellipse((x + margin, y + margin, x + tile - 1 - margin, y + tile - 1 - margin),
                                  fill=PLAYER_COLOUR)
    return np.asarray(image, dtype=np.uint8).copy()


def render_map(desc: list[str], player: tuple[int, int]) -> str:
    return "\n".join(" ".join("P" if (r, c) == player else kind for c, kind in enumerate(row))
                     for r, row in enumerate(desc))


def neighbours_line(desc: list[str], player: tuple[int, int]) -> str:
    """``Next to you: left edge, down H, right F, up F.``: the four tiles one move away, in the action
    order, read off the visible map (``show_neighbours``)."""
    words = [f"{action} {tile}" for action, tile in neighbour_tiles(desc, player).items()]
    return f"{NEIGHBOURS_PREFIX} {', '.join(words)}."


def neighbour_tiles(desc: list[str], player: tuple[int, int]) -> dict[str, str]:
    """Action → the tile it moves onto (``S``, ``F``, ``H``, ``G``), or ``edge`` outside the map."""
    r, c = player
    tiles = {}
    for action in ACTIONS:
        dr, dc = MOVES[action]
        inside = 0 <= r + dr < len(desc) and 0 <= c + dc < len(desc[0])
        tiles[action] = desc[r + dr][c + dc] if inside else "edge"
    return tiles


def _map_rows(observation: str) -> list[list[str]] | None:
    """The map of an observation as rows of tiles (the player as ``P``), or None when it is not one."""
    rows = [line.split() for line in observation.splitlines()
            if line.strip() and not line.startswith(("Legend", NEIGHBOURS_PREFIX))]
    if not rows or len({len(r) for r in rows}) != 1 or any(t not in "SFHGP" or len(t) != 1 for r in rows for t in r):
        return None
    return rows


def _player_cell(rows: list[list[str]]) -> tuple[int, int] | None:
    return next(((r, c) for r, row in enumerate(rows) for c, tile in enumerate(row) if tile == "P"), None)


def hole_left_of_goal(desc: list[str]) -> bool:
    """The hard map kind: the goal (bottom-right) has a hole on its left, so only the last column reaches it."""
    return desc[-1][-2] == "H"


def _map_split(desc: list[str], num_splits: int) -> int:
    digest = hashlib.blake2b("\n".join(desc).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") % num_splits


class FrozenLakeEnv(TextEnv):
    history_length = 2
    max_steps = 100
    invalid_action_penalty = 0.1
    splits = ("train", "test", "test_large", "test_hard")
    eval_split = "test"
    image_shape = (192, 192)
    generator_version = "1"
    seed_rule = ("reset(seed=k, options={'split': s}) plays map k of split s: generate_random_map seeded from "
                 "(k, s), redrawn until the map's hash picks split s (train/test)")
    instruction = (
        "You are playing FrozenLake. Walk from the start (S, top-left) to the goal (G, bottom-right) over the "
        "frozen ice (F) without stepping into a hole (H), which ends the game. You are P. Each action moves "
        "you one tile left, down, right or up (up is towards the first line); walking into the edge leaves "
        f"you where you are. {LEGEND} Answer with exactly one action in the form "
        "<action>left|down|right|up</action>, for example <action>down</action>.")

    def __init__(self, size: int = 4, large_size: int = 6, p: float = 0.8, is_slippery: bool = False,
                 max_steps: int = 100, frame_size: int = 192, projection: str = "reference",
                 show_neighbours: bool = False, hard_share: float = 0.0, render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        _require_pillow()
        try:
            from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake, generate_random_map
        except ImportError as err:  # toy_text ships with gymnasium; only a stripped install lacks it
            raise ImportError("FrozenLake needs gymnasium's toy_text envs: pip install 'gymnasium>=1.0'") from err
        self._gym_env_cls, self._generate_map = GymFrozenLake, generate_random_map
        self.projection = check_projection(projection)
        if projection != "reference":
            self.parse_action = lambda text: parse_choice(text, ACTIONS, self.projection)
        if (min(size, large_size) < 2 or not 0 < p <= 1 or max_steps < 1 or frame_size < 2 * max(size, large_size)
                or not 0 <= hard_share <= 1):
            raise ValueError(f"FrozenLake needs size, large_size >= 2, 0 < p <= 1, max_steps >= 1, frame_size at "
                             f"least 2 px per tile and 0 <= hard_share <= 1; got size={size}, large_size={large_size}, "
                             f"p={p}, max_steps={max_steps}, frame_size={frame_size}, hard_share={hard_share}")
        self.size, self.large_size, self.p = int(size), int(large_size), float(p)
        self.is_slippery, self.max_steps = bool(is_slippery), int(max_steps)
        self.frame_size = int(frame_size)
        self.show_neighbours = bool(show_neighbours)
        self.hard_share = float(hard_share)
        self.image_shape = (self.frame_size, self.frame_size)
        self.desc: list[str] = []
        self.gym_env = None
        self._split, self._task_id = self.splits[0], ""

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        return parse_choice(text, ACTIONS, "reference")

    # -- maps -----------------------------------------------------------------------------------------

    def generate_map(self, split: str, seed: int) -> list[str]:
        """The map ``frozenlake-{split}-{seed}``. Pure in (split, seed, size, p, hard_share)."""
        self._check_split(split)
        size = self.large_size if split == "test_large" else self.size
        rng = np.random.default_rng([int(seed), zlib.crc32(split.encode())])
        side = ("train", "test").index("train" if split == "train" else "test")
        hard = self._forced_hard(split, seed)
        for _ in range(10_000):
            desc = self._generate_map(size=size, p=self.p, seed=int(rng.integers(2**31)))
            if split == "test_large" or (_map_split(desc, 2) == side and (not hard or hole_left_of_goal(desc))):
                return desc
        raise RuntimeError(f"could not draw a {size}x{size} FrozenLake map for split {split!r}")

    def _forced_hard(self, split: str, seed: int) -> bool:
        """Whether map `seed` of `split` must be of the hard kind: every ``test_hard`` map, and the
        ``hard_share`` of the training maps (a draw of its own, so the other maps stay unchanged)."""
        if split == "test_hard":
            return True
        return split == "train" and self.hard_share > 0 and (
            np.random.default_rng([int(seed), zlib.crc32(b"hard")]).random() < self.hard_share)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        split = self._check_split(options.get("split", self.splits[0]))
        if "desc" in options:  # a hand-made map: rows of S, F, H, G
            desc = [str(row) for row in options["desc"]]
            if not desc or len({len(r) for r in desc}) != 1 or set("".join(desc)) - set("SFHG") or desc[0][0] != "S":
                raise ValueError("options['desc'] must be equal-length rows of S, F, H, G with S at the top-left")
            map_seed = zlib.crc32("\n".join(desc).encode())
            task_id = f"frozenlake-map-{map_seed:08x}"
        else:
            if "task_id" in options:
                match = _TASK_ID_RE.match(str(options["task_id"]))
                if match is None:
                    raise ValueError(f"bad FrozenLake task_id {options['task_id']!r}; "
                                     "expected 'frozenlake-<split>-<seed>'")
                split, map_seed = self._check_split(match["split"]), int(match["seed"])
            elif seed is not None:
                map_seed = int(seed)
            else:
                map_seed = int(self.np_random.integers(2**31))
            desc, task_id = self.generate_map(split, map_seed), f"frozenlake-{split}-{map_seed}"
        self.desc = desc
        self.gym_env = self._gym_env_cls(desc=self.desc, is_slippery=self.is_slippery)
        # The slips are seeded by the task, so the same (split, seed) and actions replay the same episode.
        self.gym_env.reset(seed=int(np.random.default_rng([map_seed, zlib.crc32(split.encode()), 1]).integers(2**31)))
        self._split, self._task_id = split, task_id
        self._slippery_policy = None
        return self._observation(), self._info()

    # -- state, text and image ------------------------------------------------------------------------

    @property
    def player(self) -> tuple[int, int]:
        return divmod(int(self.gym_env.s), len(self.desc[0]))

    def _tile(self) -> str:
        r, c = self.player
        return self.desc[r][c]

    def _observation(self) -> str:
        if self.show_neighbours:
            return f"{render_map(self.desc, self.player)}\n{neighbours_line(self.desc, self.player)}\n{LEGEND}"
        return f"{render_map(self.desc, self.player)}\n{LEGEND}"

    def render_image(self) -> np.ndarray:
        return draw_frame(self.desc, self.player, self.frame_size)

    def render(self) -> str:
        return render_map(self.desc, self.player) if self.desc else ""

    def _info(self) -> dict:
        return {"task": TASK, "admissible_actions": list(ACTIONS), "won": bool(self.desc) and self._tile() == "G",
                "task_id": self._task_id, "task_type": f"frozenlake-{len(self.desc)}x{len(self.desc)}",
                "split": self._split, "image": self.render_image()}

    def _apply_action(self, command: str, valid: bool):
        if not valid:
            return self._observation(), 0.0, False, False
        _, reward, terminated, _, _ = self.gym_env.step(ACTIONS.index(command))
        return self._observation(), float(reward), bool(terminated), True

    # -- hindsight ------------------------------------------------------------------------------------

    @staticmethod
    def hindsight_facts(episode) -> list[str]:
        """Facts about one finished episode from the maps the agent saw (`seedbench.envs.hindsight`), cells
        as ``(row, column)`` from 0 at the top-left, most decisive first: the move into the hole or onto
        the goal, slips (the player landed elsewhere than the action pointed), bumps into the edge, and
        where a failed walk stopped. A tile is read from the observation *before* the player covers it."""
        ranked: list[tuple[int, str]] = []
        bumped = False
        position = None
        for step in episode.steps:
            before, after = _map_rows(step.observation), _map_rows(step.next_observation)
            if before is None or after is None or not step.valid or step.action not in MOVES:
                continue
            start, position = _player_cell(before), _player_cell(after)
            if start is None or position is None:
                continue
            move = f"moving {step.action} at step {step.index}"
            tile = before[position[0]][position[1]] if position != start else "P"
            intended = (start[0] + MOVES[step.action][0], start[1] + MOVES[step.action][1])
            if position != start and position != intended:
                ranked.append((2, f"{move} slipped to {position} instead"))
            if tile == "H":
                ranked.append((0, f"{move} walked into the hole at {position}"))
            elif tile == "G":
                ranked.append((0, f"{move} reached the goal at {position}"))
            elif position == start and not bumped:
                bumped = True
                ranked.append((3, f"{move} bumped into the edge and stayed at {position}"))
        if position is not None and not episode.won and not any(rank == 0 for rank, _ in ranked):
            rows = _map_rows(episode.steps[-1].next_observation) or []
            goal = next(((r, c) for r, row in enumerate(rows) for c, tile in enumerate(row) if tile == "G"), None)
            if goal is not None:
                distance = abs(goal[0] - position[0]) + abs(goal[1] - position[1])
                moves = f"{distance} move{'s' if distance != 1 else ''}"
                ranked.append((1, f"the walk stopped at {position}, {moves} from the goal at {goal}"))
        ranked.sort(key=lambda item: item[0])
        return [text for _, text in ranked[:4]]

    # -- expert ---------------------------------------------------------------------------------------

    def expert_thought(self, command: str) -> str:
        """The think text of a demonstration step (``seedbench sft-policy``): the four tiles next to the
        player, read off the visible map, the moves that do not end in a hole or against the edge, then
        the move. Said right before the action, it is the part of the observation the move depends on,
        so a small model imitating it picks among the safe moves instead of learning the most frequent
        move."""
        tiles = neighbour_tiles(self.desc, self.player)
        near = ", ".join(f"{a} {t}" for a, t in tiles.items())
        safe = ", ".join(a for a, t in tiles.items() if t in "SFG") or "none"
        return f"Next to me: {near}. Safe: {safe}. Go {command}."

    def expert_plan(self) -> list[str] | None:
        """Not slippery: the shortest safe path (BFS). Slippery: one step of the policy that maximises the
        probability of reaching the goal (value iteration on Gymnasium's transition table)."""
        if not self.desc:
            raise RuntimeError("expert_plan() called before reset()")
        if not self.is_slippery:
            return shortest_path(self.desc, self.player)
        if self._slippery_policy is None:
            self._slippery_policy = best_slippery_actions(self.gym_env.P, len(self.desc) ** 2)
        return [ACTIONS[self._slippery_policy[int(self.gym_env.s)]]]
