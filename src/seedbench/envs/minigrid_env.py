"""MiniGrid and BabyAI grid worlds (the real ``minigrid`` package) as seedbench text + image envs.

Description
    A wrapper that plays any MiniGrid or BabyAI env registered with Gymnasium by the ``minigrid``
    package (Chevalier-Boisvert et al., 2023) through seedbench's text protocol. The dynamics, layouts,
    missions and rewards are the package's own; this module only chooses the layout from (split, seed),
    writes the observation as text, draws the frame and parses the action words.
Task text
    The env's mission, e.g. "use the key to open the door and then get to the goal", "go to the red ball".
Action grammar
    ``<action>WORDS</action>`` after a ``<think>…</think>`` block (``projection="reference"``; ``"seedbench"``:
    no think block, the last tag counts), WORDS one of MiniGrid's seven actions: ``turn left``,
    ``turn right``, ``forward``, ``pick up``, ``drop``, ``toggle`` (open/close a door, open a box),
    ``done`` (case-insensitive; ``left``, ``right``, ``pickup`` are accepted too). All seven are always
    admissible, as in MiniGrid (a blocked ``forward`` is a no-op). Anything else is an invalid action:
    no MiniGrid step is taken, but it counts towards the cap.
Observation
    Text (``text_view="egocentric"``, default): the mission, the agent's heading and what it carries, the
    cell in front of it, and every object it can see in its 7x7 partial view (MiniGrid's field of view,
    walls occlude) with its position relative to the agent: "a yellow key 2 steps forward and 1 step
    left"; then the distance to the nearest visible wall straight ahead, left and right. ``"full"`` shows
    the whole grid instead, one 2-character cell per token (MiniGrid's ``pprint_grid`` codes, ``..`` for an
    empty cell). Image: ``info["image"]``, 224x224 uint8 RGB: ``image_view="agent"`` (default) is MiniGrid's
    rendering of the agent's 7x7 partial view (what the text describes) at 32 px per tile; ``"full"`` is
    the whole grid with the visible area highlighted, at ``224 // max(width, height)`` px per tile,
    centred on black.
Rewards
    MiniGrid's: ``1 - 0.9 * step_count / max_steps`` on success, 0 otherwise.
Termination vs truncation
    Terminates when MiniGrid terminates (goal reached, mission done, lava, ``done`` where the env ends on
    it); ``info["won"]`` is True when that termination carried a positive reward. Truncates after
    ``max_steps`` (default: the ``env_id`` MiniGrid env's own, e.g. 250 for DoorKey-5x5, 64 for
    BabyAI-GoToRedBall). That one cap is given to every split's MiniGrid env (the ``test_large`` one
    too), so the success reward uses the cap the episode really has.
Registered ids (``seedbench.envs`` catalogue; train/test env, then the ``test_large`` size shift)
    ``minigrid-empty``: MiniGrid-Empty-Random-5x5 / 6x6; ``minigrid-empty-8x8``: Empty-Random at size 8 /
    10; ``minigrid-doorkey``: DoorKey-5x5 / 6x6; ``minigrid-doorkey-6x6``: DoorKey-6x6 / 8x8;
    ``babyai-gotoredball``: BabyAI-GoToRedBall (8x8 room, 7 distractors) / the same level in a 10x10
    room; ``babyai-gotoobj``: BabyAI-GoToObjS6 (6x6 room) / GoToObj (8x8). Kwargs: ``env_id``,
    ``env_kwargs``, ``large_env_id`` (None: no ``test_large`` split), ``large_env_kwargs``, ``max_steps``,
    ``text_view``, ``image_view``, ``projection``.
Data source
    Procedural, by the ``minigrid`` package (version recorded in ``provenance()``). Splits ``train`` and
    ``test`` play ``env_id``, ``test_large`` (when ``large_env_id`` is set) plays the larger env: the size
    shift. Task ``{name}-{split}-{seed}`` (name: the Gymnasium id without its version, plus ``-key=value`` per
    env kwarg) resets MiniGrid with a seed drawn from (seed, split
    name), redrawn until a hash of the layout (grid, agent pose, mission) picks that split, so the train
    and test splits are disjoint sets of layouts, not only of seeds.

Expert: BabyAI levels use MiniGrid's own ``BabyAIBot`` (played to the end on a copy of the env); the
other envs a breadth-first planner over (position, heading, carried key, opened doors) that picks up
keys, unlocks doors and walks to the goal while avoiding lava.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import re
import zlib
from collections import deque

import numpy as np

from seedbench.envs.action_parsing import check_projection, project_action
from seedbench.envs.text_env import TextEnv
from seedbench.provenance import digest, generator_provenance

ACTIONS: tuple[str, ...] = ("turn left", "turn right", "forward", "pick up", "drop", "toggle", "done")
"""In MiniGrid's ``Actions`` order (left, right, forward, pickup, drop, toggle, done)."""
ALIASES = {"left": "turn left", "right": "turn right", "pickup": "pick up", "move forward": "forward",
           "go forward": "forward"}
HEADINGS = ("east", "south", "west", "north")  # MiniGrid's agent_dir 0-3
VIEW_SIZE = 7
IMAGE_SIZE = 224  # 7 tiles x 32 px
CODES = {"wall": "W", "floor": "F", "door": "D", "key": "K", "ball": "A", "box": "B", "goal": "G", "lava": "V"}
ARROWS = {0: ">", 1: "V", 2: "<", 3: "^"}
INSTALL = "pip install 'seedbench[minigrid]'  (or: pip install minigrid)"
_TASK_ID_RE = re.compile(r"^(?P<env>.+)-(?P<split>train|test|test_large)-(?P<seed>\d+)$")


def _import_minigrid():
    try:
        import minigrid  # noqa: F401  (registers the MiniGrid-* and BabyAI-* ids with Gymnasium)
    except ImportError as err:
        raise ImportError(f"the MiniGrid/BabyAI envs need the minigrid package: {INSTALL}") from err
    return minigrid


def _steps(n: int, word: str) -> str:
    return f"{n} step{'s' if n != 1 else ''} {word}"


def relative_phrase(forward: int, right: int) -> str:
    """``(2, -1)`` → "2 steps forward and 1 step left"."""
    parts = []
    if forward:
        parts.append(_steps(forward, "forward"))
    if right:
        parts.append(_steps(abs(right), "right" if right > 0 else "left"))
    return " and ".join(parts) if parts else "here"


def describe_object(obj) -> str:
    """MiniGrid object → "a red ball", "a locked yellow door", "the green goal"."""
    if obj.type == "door":
        state = "open" if obj.is_open else "locked" if obj.is_locked else "closed"
        return f"an {state} {obj.color} door" if state == "open" else f"a {state} {obj.color} door"
    if obj.type == "goal":
        return "the green goal" if obj.color == "green" else f"the {obj.color} goal"
    if obj.type == "lava":
        return "lava"
    if obj.type == "wall":
        return "a wall"
    return f"a {obj.color} {obj.type}"


def egocentric_text(env) -> str:
    """The agent's view as sentences (MiniGrid's partial view, walls occlude): see the module docstring."""
    grid, visible = env.gen_obs_grid()
    me_x, me_y = grid.width // 2, grid.height - 1
    lines = [f"Mission: {env.mission}",
             f"You are facing {HEADINGS[env.agent_dir]}. You are carrying "
             f"{describe_object(env.carrying) if env.carrying else 'nothing'}."]
    front = grid.get(me_x, me_y - 1)
    lines.append(f"In front of you: {describe_object(front) if front is not None else 'nothing'}.")
    seen = []
    for y in range(grid.height - 1, -1, -1):  # nearest rows first
        for x in range(grid.width):
            obj = grid.get(x, y)
            if (x, y) == (me_x, me_y) or obj is None or obj.type in ("wall", "floor") or not visible[x, y]:
                continue
            forward, right = me_y - y, x - me_x
            seen.append((abs(forward) + abs(right), f"- {describe_object(obj)} {relative_phrase(forward, right)}"))
    lines.append("You see:" if seen else "You see no objects.")
    lines.extend(text for _, text in sorted(seen, key=lambda item: item[0]))
    walls = []
    for name, (dx, dy) in (("forward", (0, -1)), ("left", (-1, 0)), ("right", (1, 0))):
        x, y, distance = me_x + dx, me_y + dy, 1
        while 0 <= x < grid.width and 0 <= y < grid.height and visible[x, y]:
            obj = grid.get(x, y)
            if obj is not None and obj.type == "wall":
                walls.append(_steps(distance, name))
                break
            x, y, distance = x + dx, y + dy, distance + 1
    lines.append(f"Nearest walls: {', '.join(walls)}." if walls else "No wall in sight straight ahead, left or right.")
    return "\n".join(lines)


def full_grid_text(env) -> str:
    """The whole grid, one 2-character cell per token (MiniGrid's ``pprint_grid`` codes, ``..`` empty)."""
    rows = []
    for y in range(env.grid.height):
        cells = []
        for x in range(env.grid.width):
            obj = env.grid.get(x, y)
            if (x, y) == tuple(env.agent_pos):
                cells.append(2 * ARROWS[env.agent_dir])
            elif obj is None:
                cells.append("..")
            elif obj.type == "door":
                cells.append("__" if obj.is_open else ("L" if obj.is_locked else "D") + obj.color[0].upper())
            else:
                cells.append(CODES[obj.type] + obj.color[0].upper())
        rows.append(" ".join(cells))
    carrying = describe_object(env.carrying) if env.carrying else "nothing"
    return (f"Mission: {env.mission}\n" + "\n".join(rows) +
            f"\nYou are the arrows ({HEADINGS[env.agent_dir]}-facing), carrying {carrying}. "
            "Cells: first letter W wall, D door, L locked door, __ open door, K key, A ball, B box, G goal, "
            "V lava, .. empty; second letter the colour. North is up.")


def plan_to_goal(env, max_states: int = 200_000) -> list[str] | None:
    """Breadth-first search over (position, heading, carried key colour, opened doors, taken keys) for the
    shortest action list that walks onto a goal tile; None when no goal is reachable."""
    from minigrid.core.constants import DIR_TO_VEC

    grid = env.grid
    carried = env.carrying.color if env.carrying is not None and env.carrying.type == "key" else None
    if env.carrying is not None and env.carrying.type != "key":
        return None
    start = (tuple(int(v) for v in env.agent_pos), int(env.agent_dir), carried, frozenset(), frozenset())
    parents = {start: None}
    queue = deque([start])
    while queue:
        state = queue.popleft()
        pos, heading, key, opened, taken = state
        here = grid.get(*pos)
        if here is not None and here.type == "goal":
            plan = []
            while parents[state] is not None:
                state, action = parents[state]
                plan.append(action)
            return plan[::-1]
        front = (pos[0] + int(DIR_TO_VEC[heading][0]), pos[1] + int(DIR_TO_VEC[heading][1]))
        obj = grid.get(*front) if 0 <= front[0] < grid.width and 0 <= front[1] < grid.height else None
        is_key = obj is not None and obj.type == "key" and front not in taken
        door_open = obj is not None and obj.type == "door" and (obj.is_open or front in opened)
        children = [((pos, (heading - 1) % 4, key, opened, taken), "turn left"),
                    ((pos, (heading + 1) % 4, key, opened, taken), "turn right")]
        passable = obj is None or (obj.type == "key" and front in taken) or obj.type in ("goal", "floor") or door_open
        if passable and 0 <= front[0] < grid.width and 0 <= front[1] < grid.height:
            children.append(((front, heading, key, opened, taken), "forward"))
        if is_key and key is None:
            children.append(((pos, heading, obj.color, opened, taken | {front}), "pick up"))
        if obj is not None and obj.type == "door" and not door_open and (not obj.is_locked or key == obj.color):
            children.append(((pos, heading, key, opened | {front}, taken), "toggle"))
        for child, action in children:
            if child not in parents:
                parents[child] = (state, action)
                queue.append(child)
        if len(parents) > max_states:
            return None
    return None


class MiniGridTextEnv(TextEnv):
    history_length = 2
    max_steps = 100
    invalid_action_penalty = 0.1
    splits = ("train", "test", "test_large")
    eval_split = "test"
    image_shape = (IMAGE_SIZE, IMAGE_SIZE)
    generator_version = "1"
    seed_rule = ("reset(seed=k, options={'split': s}) resets MiniGrid with seeds drawn from (k, s) until the layout's "
                 "hash picks split s (train/test); test_large plays large_env_id")

    def __init__(self, env_id: str = "MiniGrid-Empty-Random-5x5-v0",
                 large_env_id: str | None = "MiniGrid-Empty-Random-6x6-v0", env_kwargs: dict | None = None,
                 large_env_kwargs: dict | None = None, max_steps: int | None = None,
                 text_view: str = "egocentric", image_view: str = "agent", projection: str = "reference",
                 render_mode: str | None = None):
        super().__init__(render_mode=render_mode)
        _import_minigrid()
        import gymnasium as gym

        if text_view not in ("egocentric", "full"):
            raise ValueError(f"text_view: unknown {text_view!r}; choose egocentric or full")
        if image_view not in ("agent", "full"):
            raise ValueError(f"image_view: unknown {image_view!r}; choose agent or full")
        self.projection = check_projection(projection)
        if projection != "reference":  # the class-level rule is the reference one
            self.parse_action = functools.partial(MiniGridTextEnv.parse_action, projection=self.projection)
        self.text_view, self.image_view = text_view, image_view
        # Which MiniGrid env each split plays: train and test the same one, test_large the size shift.
        specs = {"train": (env_id, dict(env_kwargs or {}))}
        if large_env_id is None:
            self.splits = ("train", "test")
        else:
            specs["test_large"] = (large_env_id, dict(large_env_kwargs or {}))
        self._envs, self._names = {}, {}
        for key, (gym_id, kwargs) in specs.items():
            try:
                self._envs[key] = gym.make(gym_id, **kwargs).unwrapped
            except (gym.error.Error, TypeError) as err:
                raise ValueError(f"cannot make MiniGrid env {gym_id!r} with {kwargs}: {err}") from None
            self._names[key] = re.sub(r"-v\d+$", "", gym_id) + "".join(f"-{k}={v}" for k, v in sorted(kwargs.items()))
        self.env = self._envs["train"]
        # One cap for every split (env_id's own by default), given to MiniGrid too so its success reward
        # 1 - 0.9 * steps / max_steps uses the cap the episode really has.
        if max_steps is None:
            self._quiet_reset(self.env, 0)  # BabyAI levels set max_steps from the mission, at reset
            max_steps = self.env.max_steps
        self.max_steps = int(max_steps)
        for env in self._envs.values():
            env.max_steps = self.max_steps
        self._split, self._task_id, self._won = self.splits[0], "", False
        self.instruction = (
            "You are an agent in a grid world. Each step you can turn left, turn right, move one cell forward, "
            "pick up the object in front of you, drop what you carry, toggle (open or close a door, open a box; "
            "locked doors need the key of the same colour), or say done. Walls and closed doors block you. "
            "Positions are given relative to you: forward is where you are facing. Answer with exactly one "
            "action in the form <action>turn left|turn right|forward|pick up|drop|toggle|done</action>, for "
            "example <action>forward</action>.")

    # -- text protocol --------------------------------------------------------------------------------

    @staticmethod
    def parse_action(text: str, projection: str = "reference") -> tuple[str, bool]:
        """The action words, normalised (case, spaces, `ALIASES`), when they name one of `ACTIONS`."""
        payload = project_action(text, projection)
        if payload is None:
            return "", False
        words = " ".join(payload.lower().split())
        words = ALIASES.get(words, words)
        return (words, True) if words in ACTIONS else (payload, False)

    def _observation(self) -> str:
        return egocentric_text(self.env) if self.text_view == "egocentric" else full_grid_text(self.env)

    def render_image(self) -> np.ndarray:
        if self.image_view == "agent":
            frame = self.env.get_frame(highlight=False, tile_size=IMAGE_SIZE // VIEW_SIZE, agent_pov=True)
        else:
            tile = IMAGE_SIZE // max(self.env.width, self.env.height)
            inner = self.env.get_frame(highlight=True, tile_size=tile, agent_pov=False)
            frame = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), dtype=np.uint8)
            top, left = (IMAGE_SIZE - inner.shape[0]) // 2, (IMAGE_SIZE - inner.shape[1]) // 2
            frame[top:top + inner.shape[0], left:left + inner.shape[1]] = inner
        return np.ascontiguousarray(frame, dtype=np.uint8)

    def render(self) -> str:
        return self._observation() if self._task_id else ""

    def _info(self) -> dict:
        return {"task": self.env.mission, "admissible_actions": list(ACTIONS), "won": self._won,
                "task_id": self._task_id, "task_type": self._env_name(self._split), "split": self._split,
                "image": self.render_image()}

    # -- tasks ----------------------------------------------------------------------------------------

    def _env_name(self, split: str) -> str:
        return self._names["test_large" if split == "test_large" else "train"]

    def _layout_hash(self) -> int:
        env = self.env
        data = env.grid.encode().tobytes() + repr((tuple(int(v) for v in env.agent_pos), int(env.agent_dir),
                                                   env.mission)).encode()
        return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")

    @staticmethod
    def _quiet_reset(env, seed: int) -> None:
        """MiniGrid reset, without the "Sampling rejected: unreachable object" lines BabyAI prints."""
        with contextlib.redirect_stdout(io.StringIO()):
            env.reset(seed=seed)

    def _load(self, split: str, seed: int) -> None:
        """Reset MiniGrid to the layout of (split, seed), see the module docstring."""
        self.env = self._envs["test_large" if split == "test_large" else "train"]
        rng = np.random.default_rng([int(seed), zlib.crc32(split.encode())])
        for _ in range(10_000):
            self._quiet_reset(self.env, int(rng.integers(2**31)))
            self.env.max_steps = self.max_steps  # BabyAI levels recompute theirs on reset
            if split == "test_large" or self._layout_hash() % 2 == ("train", "test").index(split):
                return
        raise RuntimeError(f"no {self._env_name(split)} layout for split {split!r} in 10000 draws")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        split = self._check_split(options.get("split", self.splits[0]))
        if "task_id" in options:
            match = _TASK_ID_RE.match(str(options["task_id"]))
            if match is None or match["env"] != self._env_name(match["split"]):
                raise ValueError(f"bad task_id {options['task_id']!r}; expected '<env name>-<split>-<seed>'")
            split, task_seed = self._check_split(match["split"]), int(match["seed"])
        elif seed is not None:
            task_seed = int(seed)
        else:
            task_seed = int(self.np_random.integers(2**31))
        self._load(split, task_seed)
        self._split, self._won = split, False
        self._commands: list[str] = []  # the valid commands of this episode (the bot plan's bookkeeping)
        self._bot_cache: tuple[int, list[str] | None] = (0, None)
        self._task_id = f"{self._env_name(split)}-{split}-{task_seed}"
        return self._observation(), self._info()

    def _apply_action(self, command: str, valid: bool):
        if not valid:
            return self._observation(), 0.0, False, False
        self._commands.append(command)
        _, reward, terminated, _, _ = self.env.step(ACTIONS.index(command))
        self._won = bool(terminated and reward > 0)
        return self._observation(), float(reward), bool(terminated), True

    # -- expert and provenance ------------------------------------------------------------------------

    def expert_plan(self) -> list[str] | None:
        """BabyAI levels: MiniGrid's ``BabyAIBot`` played to the end on a copy of the env; other envs: the
        breadth-first `plan_to_goal`. None when the expert does not finish the task."""
        if not self._task_id:
            raise RuntimeError("expert_plan() called before reset()")
        if not hasattr(self.env, "instrs"):
            return plan_to_goal(self.env)
        # The bot explores what it has not seen, so a bot started afresh at every step may wander back
        # and forth; a plan computed once is followed while the episode keeps to it.
        start, plan = self._bot_cache
        done = self._commands[start:]
        if plan is None or done != plan[:len(done)]:
            start, plan = len(self._commands), self._bot_plan()
            self._bot_cache = (start, plan)
            done = []
        return None if plan is None else plan[len(done):]

    def _bot_plan(self) -> list[str] | None:
        from minigrid.utils.baby_ai_bot import BabyAIBot

        env = copy.deepcopy(self.env)
        bot, plan = BabyAIBot(env), []
        for _ in range(env.max_steps - env.step_count):
            action = int(bot.replan())
            plan.append(ACTIONS[action])
            _, reward, terminated, truncated, _ = env.step(action)
            if terminated:
                return plan if reward > 0 else None
            if truncated:
                return None
        return None

    def provenance(self) -> dict[str, str]:
        """The generator default, with the minigrid version folded in (its layouts are the data)."""
        record = generator_provenance(self)
        version = _import_minigrid().__version__
        record["generator_version"] = f"{self.generator_version}+minigrid-{version}"
        record["manifest_checksum"] = digest({"generator": record["manifest_checksum"], "minigrid": version})
        return record
