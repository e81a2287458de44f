"""ALFWorld game data, offline: generate a seeded pool of games from what the `alfworld` package ships.

The official ALFWorld games (`alfworld-download`) need the internet. ALFWorld builds each of its games
from an ALFRED trial: ``traj_data.json`` (task type and targets) plus ``initial_state.pddl`` (the room as
a PDDL problem, recorded in AI2-THOR), compiled by ``alfworld-generate`` into ``game.tw-pddl`` (domain +
text grammar + problem + the handcoded expert's walkthrough). We write the first two files ourselves from
the package's 120 floor-plan layouts (``alfworld/gen/layouts``: which object and receptacle types each
room holds, and where its receptacles can be used from), its object/receptacle constants and its goal
library, then compile and check them exactly as ``alfworld-generate`` does. The result is in ALFWorld's
own layout, so the stock tools and loaders read it::

    <out>/manifest.json
    <out>/json_2.1.1/<split>/<task_type>-<Object>-<MRecep>-<Parent>-<floor plan>/trial_S<seed>_<n>/
        traj_data.json  initial_state.pddl  game.tw-pddl

How it deviates from the official data (say so in results): furniture missing from a layout file
(``*-openable.json`` only lists receptacles THOR could interact with) is added with fixed counts
(4 stove burners, 1 of anything else); objects are placed uniformly at random in receptacles that can hold
them (1–3 instances per type, the target 1–4, at least 2 for pick-two) instead of by THOR's physics; the
agent starts at a random reachable point; task text uses ALFWorld's templates (no human annotations).
Only games the handcoded expert wins within ``--max-expert-steps`` (default 30, the episode cap) and
``--timeout`` seconds are kept.

Splits mirror ALFRED's seen/unseen protocol: ``train`` and ``valid_seen`` use the same floor plans (new
games), ``valid_unseen`` uses held-out floor plans (default ALFRED's valid_unseen rooms 10, 219, 308, 424)
that never appear in the other two.

Run ``seedbench data alfworld`` (or ``python -m seedbench.envs.alfworld.data``); it is resumable (per
candidate results are appended to ``progress.jsonl``) and runs candidates in parallel worker processes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seedbench.envs.alfworld.engine import ALFWORLD_VERSION, make_engine, missing_alfworld_error
from seedbench.envs.processes import available_cpus, run_tasks
from seedbench.paths import UnsafePathError, cache_dir, inside
from seedbench.provenance import digest

POOL_FORMAT = "seedbench-alfworld-pool/1"
SPLITS = ("train", "valid_seen", "valid_unseen")
# ALFRED's valid_unseen rooms (one per room type). They cover all six task types.
DEFAULT_UNSEEN_FLOOR_PLANS = (10, 219, 308, 424)
DEFAULT_COUNTS = {"train": 600, "valid_seen": 140, "valid_unseen": 134}
MANIFEST_EVERY_S = 300.0  # snapshot the manifest this often while generating

# Full ALFRED task type -> the short name used in info["task_type"] and in reports.
TASK_TYPES = {
    "pick_and_place_simple": "pick",
    "look_at_obj_in_light": "look",
    "pick_clean_then_place_in_recep": "clean",
    "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool",
    "pick_two_obj_and_place": "pick2",
}
SHORT_TO_FULL = {short: full for full, short in TASK_TYPES.items()}
ROOM_TYPES = {"Kitchen": range(1, 31), "LivingRoom": range(201, 231), "Bedroom": range(301, 331),
              "Bathroom": range(401, 431)}
LAMP_TYPES = ("DeskLamp", "FloorLamp")
# Receptacles a lamp can stand on (ALFRED rooms put them on side tables, desks and dressers).
LAMP_HOSTS = ("SideTable", "Desk", "Dresser", "DiningTable", "CoffeeTable", "TVStand", "Shelf", "ArmChair", "Sofa",
              "Bed", "CounterTop")
EXTRA_RECEPTACLE_COUNTS = {"StoveBurner": 4}  # count for receptacle types absent from a layout file; else 1
PDDL_CHARS = {"-": "_minus_", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}


def _alfworld():
    try:
        import alfworld.gen.constants as constants
        import alfworld.gen.goal_library as goal_library
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise missing_alfworld_error(err) from err
    return constants, goal_library


def alfworld_package_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise missing_alfworld_error()
    return Path(list(spec.submodule_search_locations)[0])


def room_type(floor_plan: int) -> str:
    for name, numbers in ROOM_TYPES.items():
        if floor_plan in numbers:
            return name
    raise ValueError(f"unknown floor plan {floor_plan}")


def all_floor_plans() -> list[int]:
    layouts = alfworld_package_dir() / "gen" / "layouts"
    return sorted(int(p.name[len("FloorPlan"):].split("-")[0]) for p in layouts.glob("FloorPlan*-objects.json"))


def split_floor_plans(unseen: tuple[int, ...] = DEFAULT_UNSEEN_FLOOR_PLANS) -> dict[str, list[int]]:
    """Floor plans per split: seen splits share every plan except the held-out ``unseen`` ones."""
    plans = all_floor_plans()
    seen = [p for p in plans if p not in set(unseen)]
    return {"train": seen, "valid_seen": seen, "valid_unseen": sorted(unseen)}


def mangle(name: str) -> str:
    """ALFRED object id -> PDDL name (``Potato|+01.36|...`` -> ``Potato_bar__plus_01_dot_36...``)."""
    for char, word in PDDL_CHARS.items():
        name = name.replace(char, word)
    return name


def _coord(rng: random.Random) -> str:
    return "|".join(f"{rng.uniform(-5, 5):+06.2f}" for _ in range(3))


def _location(x: float, z: float, rotation: int, horizon: int) -> str:
    return f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{(rotation // 90) % 4}|{horizon}"


# ----------------------------------------------------------------------------------------------------
# Rooms


@dataclass(frozen=True)
class Room:
    """The fixed part of a floor plan: receptacle instances and where they are used from."""

    floor_plan: int
    object_types: frozenset[str]
    receptacles: dict[str, str]  # ALFRED receptacle id -> location id
    reachable: tuple[tuple[float, float], ...]

    @staticmethod
    def receptacle_type(receptacle_id: str) -> str:
        parts = receptacle_id.split("|")
        return parts[4] if len(parts) > 4 else parts[0]  # "Sink|x|y|z|SinkBasin" -> SinkBasin


def load_room(floor_plan: int) -> Room:
    """Read a floor plan's layout files; furniture absent from them is added deterministically."""
    import numpy as np

    constants, _ = _alfworld()
    layouts = alfworld_package_dir() / "gen" / "layouts"
    object_types = frozenset(json.loads((layouts / f"FloorPlan{floor_plan}-objects.json").read_text()))
    usable = json.loads((layouts / f"FloorPlan{floor_plan}-openable.json").read_text())
    reachable = tuple(tuple(float(v) for v in p) for p in np.load(layouts / f"FloorPlan{floor_plan}-layout.npy"))
    valid_types = set(constants.VAL_RECEPTACLE_OBJECTS) - set(constants.MOVABLE_RECEPTACLES)
    receptacles = {rid: _location(*point) for rid, point in usable.items() if Room.receptacle_type(rid) in valid_types}
    present = {Room.receptacle_type(rid) for rid in receptacles}
    rng = random.Random(f"room-{floor_plan}")
    wanted = {t for t in object_types if t in valid_types}
    if "Sink" in object_types:
        wanted.add("SinkBasin")
    if "Bathtub" in object_types:
        wanted.add("BathtubBasin")
    for rtype in sorted(wanted - present):
        for _ in range(EXTRA_RECEPTACLE_COUNTS.get(rtype, 1)):
            coord = _coord(rng)
            rid = f"{rtype[:-5]}|{coord}|{rtype}" if rtype.endswith("Basin") else f"{rtype}|{coord}"
            x, z = rng.choice(reachable)
            receptacles[rid] = _location(x, z, rng.choice((0, 90, 180, 270)), rng.choice((0, 30)))
    return Room(floor_plan, object_types, dict(sorted(receptacles.items())), reachable)


# ----------------------------------------------------------------------------------------------------
# Games


@dataclass
class GameSpec:
    """One game before compilation: the room, the object placement, the agent's start and the goal."""

    room: Room
    task_type: str  # full ALFRED name
    params: dict[str, Any]  # ALFRED pddl_params
    objects: dict[str, str] = field(default_factory=dict)  # object id -> receptacle id
    agent_location: str = ""

    def folder_name(self) -> str:
        p = self.params
        parent = p["parent_target"] or p["toggle_target"] or "None"
        return f"{self.task_type}-{p['object_target']}-{p['mrecep_target'] or 'None'}-{parent}-{self.room.floor_plan}"


def _pickupable_types(constants) -> set[str]:
    holdable = set().union(*constants.VAL_RECEPTACLE_OBJECTS.values())
    return {t for t in holdable if not t.endswith("Sliced") and t in constants.OBJECTS}


def sample_game(room: Room, task_type: str, rng: random.Random, tries: int = 20) -> GameSpec | None:
    """Sample a game of `task_type` in `room`, mirroring ALFRED's sampling constraints
    (`alfworld.gen.game_states.task_game_state.get_filter_crit`). None when the room cannot host it."""
    constants, _ = _alfworld()
    can_hold = constants.VAL_RECEPTACLE_OBJECTS
    actions = constants.VAL_ACTION_OBJECTS
    rtypes = {rid: Room.receptacle_type(rid) for rid in room.receptacles}
    present_rtypes = set(rtypes.values())
    pickupable = sorted(_pickupable_types(constants) & room.object_types)
    # the receptacle type where the state change happens; the target must not start there (ALFRED rule)
    station = {"pick_clean_then_place_in_recep": ("SinkBasin", "BathtubBasin"),
               "pick_heat_then_place_in_recep": ("Microwave",),
               "pick_cool_then_place_in_recep": ("Fridge",)}.get(task_type, ())
    needs = {"pick_clean_then_place_in_recep": "Cleanable", "pick_heat_then_place_in_recep": "Heatable",
             "pick_cool_then_place_in_recep": "Coolable"}.get(task_type)
    lamps = [t for t in LAMP_TYPES if t in room.object_types]
    lamp_hosts = [rid for rid, t in rtypes.items() if t in LAMP_HOSTS]
    if station and not present_rtypes & set(station):
        return None
    if task_type == "look_at_obj_in_light" and not (lamps and lamp_hosts):
        return None
    candidates = [t for t in pickupable if needs is None or t in actions[needs]]
    for _ in range(tries):
        if not candidates:
            return None
        target = rng.choice(candidates)
        params = {"object_target": target, "parent_target": "", "toggle_target": "", "mrecep_target": "",
                  "object_sliced": False}
        if task_type == "look_at_obj_in_light":
            params["toggle_target"] = rng.choice(lamps)
        else:
            parents = sorted({t for t in present_rtypes if target in can_hold.get(t, ()) and t not in station})
            if not parents:
                continue
            params["parent_target"] = rng.choice(parents)
        forbidden = set(station) | ({params["parent_target"]} if params["parent_target"] else set())
        objects: dict[str, str] = {}
        for otype in pickupable:
            if otype == target:
                count = rng.randint(2 if task_type == "pick_two_obj_and_place" else 1, constants.PICKUP_REPEAT_MAX)
                hosts = [rid for rid, t in rtypes.items() if otype in can_hold.get(t, ()) and t not in forbidden]
            else:
                count = rng.randint(1, constants.MAX_NUM_OF_OBJ_INSTANCES)
                hosts = [rid for rid, t in rtypes.items() if otype in can_hold.get(t, ())]
            if not hosts:
                continue
            for _ in range(count):
                objects[f"{otype}|{_coord(rng)}"] = rng.choice(hosts)
        if not any(oid.split("|")[0] == target for oid in objects):
            continue
        if task_type == "pick_two_obj_and_place" and sum(oid.split("|")[0] == target for oid in objects) < 2:
            continue
        for lamp in lamps:  # lamps are scenery in every game of a lit room, the toggle target in look games
            objects[f"{lamp}|{_coord(rng)}"] = rng.choice(lamp_hosts) if lamp_hosts else None
        objects = {oid: rid for oid, rid in objects.items() if rid is not None}
        return GameSpec(room, task_type, params, objects, _agent_start(room, rng))
    return None


def _agent_start(room: Room, rng: random.Random) -> str:
    """A reachable start pose that is no receptacle's location: the opening text must be "You are in the
    middle of a room" (the expert reads the room's receptacles from it)."""
    taken = set(room.receptacles.values())
    for _ in range(1000):
        x, z = rng.choice(room.reachable)
        location = _location(x, z, rng.choice((0, 90, 180, 270)), 30)
        if location not in taken:
            return location
    raise RuntimeError(f"no free start location in floor plan {room.floor_plan}")


def problem_pddl(spec: GameSpec, problem_name: str) -> str:
    """The PDDL problem in the layout of ALFWorld's ``initial_state.pddl`` files."""
    constants, goal_library = _alfworld()
    actions = constants.VAL_ACTION_OBJECTS
    static_rtypes = set(constants.RECEPTACLES) - set(constants.MOVABLE_RECEPTACLES)
    class_objects = sorted(set(constants.OBJECTS_SET) - static_rtypes)
    rtype_names = sorted(static_rtypes)
    receptacles = spec.room.receptacles
    objects = dict(sorted(spec.objects.items()))
    otype = {oid: oid.split("|")[0] for oid in objects}
    rtype = {rid: Room.receptacle_type(rid) for rid in receptacles}
    locations = sorted(set(receptacles.values()) | {spec.agent_location})
    present_otypes = set(otype.values())
    can_contain = sorted({(rt, ot) for rt in set(rtype.values()) for ot in present_otypes
                          if ot in constants.VAL_RECEPTACLE_OBJECTS.get(rt, ())})

    lines = [f"(define (problem plan_{problem_name})", "(:domain alfred)", "(:objects", "agent1 - agent"]
    lines += [f"        {name} - object" for name in class_objects]
    lines += [f"        {name}Type - otype" for name in class_objects]
    lines += [f"        {name}Type - rtype" for name in rtype_names]
    lines += [f"        {mangle(oid)} - object" for oid in objects]
    lines += [f"        {mangle(rid)} - receptacle" for rid in receptacles]
    lines += [f"        {mangle(loc)} - location" for loc in locations]
    lines += ["        )", "", "(:init"]
    init = [f"(receptacleType {mangle(r)} {t}Type)" for r, t in rtype.items()]
    init += [f"(objectType {mangle(o)} {t}Type)" for o, t in otype.items()]
    init += [f"(canContain {rt}Type {ot}Type)" for rt, ot in can_contain]
    init += [f"(pickupable {mangle(o)})" for o, t in otype.items() if t not in LAMP_TYPES]
    init += [f"(isReceptacleObject {mangle(o)})" for o, t in otype.items() if t in constants.MOVABLE_RECEPTACLES_SET]
    init += [f"(openable {mangle(r)})" for r, t in rtype.items() if t in constants.OPENABLE_CLASS_SET]
    init += [f"(atLocation agent1 {mangle(spec.agent_location)})"]
    for predicate, group in (("cleanable", "Cleanable"), ("heatable", "Heatable"), ("coolable", "Coolable"),
                             ("sliceable", "Sliceable"), ("toggleable", "Toggleable")):
        init += [f"({predicate} {mangle(o)})" for o, t in otype.items() if t in actions[group]]
    init += [f"(inReceptacle {mangle(o)} {mangle(r)})" for o, r in objects.items()]
    init += [f"(receptacleAtLocation {mangle(r)} {mangle(loc)})" for r, loc in receptacles.items()]
    init += [f"(objectAtLocation {mangle(o)} {mangle(receptacles[r])})" for o, r in objects.items()]
    lines += [f"        {fact}" for fact in init]
    lines += ["        )", ""]
    p = spec.params
    goal = goal_library.gdict[spec.task_type]["pddl"].format(
        obj=p["object_target"], recep=p["parent_target"], toggle=p["toggle_target"], mrecep=p["mrecep_target"])
    lines.append(goal.replace("#", "-"))
    return "\n".join(lines) + "\n"


def traj_data(spec: GameSpec, trial_id: str, seed: int) -> dict[str, Any]:
    """The fields of ALFRED's ``traj_data.json`` that ALFWorld's tools read (no images, no low-level plan)."""
    return {
        "task_id": trial_id,
        "task_type": spec.task_type,
        "pddl_params": dict(spec.params),
        "scene": {"floor_plan": f"FloorPlan{spec.room.floor_plan}", "scene_num": spec.room.floor_plan,
                  "random_seed": seed},
        "turk_annotations": {"anns": []},
        "seedbench": {"generator": POOL_FORMAT, "alfworld": ALFWORLD_VERSION},
    }


def write_game_files(spec: GameSpec, trial_dir: Path, trial_id: str, seed: int) -> Path:
    """Write traj_data.json, initial_state.pddl and an unsolved game.tw-pddl (what ``alfworld-generate``
    writes before it runs the expert). Returns the game file path."""
    from alfworld.agents.utils.misc import add_task_to_grammar
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    trial_dir.mkdir(parents=True, exist_ok=True)
    data = traj_data(spec, trial_id, seed)
    problem = problem_pddl(spec, trial_id)
    (trial_dir / "traj_data.json").write_text(json.dumps(data, indent=2))
    (trial_dir / "initial_state.pddl").write_text(problem)
    state = random.getstate()
    random.seed(seed)  # ALFWorld picks the task template with the global RNG
    try:
        grammar = add_task_to_grammar(Path(ALFRED_TWL2_PATH).read_text(), data, goal_desc_human_anns_prob=0.0,
                                      rng=random.Random(seed))
    finally:
        random.setstate(state)
    game = {"pddl_domain": Path(ALFRED_PDDL_PATH).read_text(), "grammar": grammar, "pddl_problem": problem,
            "solvable": None, "walkthrough": None}
    path = trial_dir / "game.tw-pddl"
    path.write_text(json.dumps(game))
    return path


_EXPERT_ENV = None


def expert_env():
    """The engine with ALFWorld's handcoded expert, as ``alfworld-generate`` sets it up (plus the fixes in
    `seedbench.envs.alfworld.engine`). One per process, reused across games."""
    global _EXPERT_ENV
    if _EXPERT_ENV is None:
        _EXPERT_ENV = make_engine(expert=True)
    return _EXPERT_ENV


def run_expert(game_path: str | Path, max_steps: int, seed: int = 0) -> list[str] | None:
    """Play the handcoded expert (as ``alfworld-generate --expert_type handcoded`` does, without random
    perturbation). Returns the walkthrough if it wins within `max_steps`, else None."""
    state_rng = random.getstate()
    random.seed(seed)  # the expert falls back to random.choice when stuck
    try:
        env = expert_env()
        env.load(str(game_path))
        state = env.reset()
        walkthrough: list[str] = []
        done = False
        while not done and len(walkthrough) < max_steps:
            command = state["extra.expert_plan"][0]
            state, _, done = env.step(command)
            walkthrough.append(command)
        # `help` (which the expert picks at random when stuck) changes nothing and is hidden from agents
        return [c for c in walkthrough if c != "help"] if state["won"] else None
    except Exception:  # the expert raises on its own step cap and on odd states: the game is not kept
        return None
    finally:
        random.setstate(state_rng)


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ----------------------------------------------------------------------------------------------------
# Candidates: one seeded attempt at a game; run in worker processes


def pool_checksum(games: list[dict[str, Any]]) -> str:
    """The data checksum of a game pool (`ALFWorldEnv.provenance`): every game's id, split, task type and
    game-file sha256, in split order. The manifest's timings and candidate statistics do not count, so a
    resumed or re-run generation that keeps the same games keeps the checksum."""
    return digest([[g["id"], g["split"], g["task_type"], g["sha256"]] for g in games])


def candidate_seed(base_seed: int, split: str, task_type: str, index: int) -> int:
    digest = hashlib.sha256(f"{base_seed}/{split}/{task_type}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


def build_candidate(out_dir: str, split: str, task_type: str, index: int, base_seed: int,
                    floor_plans: list[int], max_expert_steps: int) -> dict[str, Any]:
    """Sample, write and solve one candidate game. Runs in a worker; returns a progress record."""
    t0 = time.perf_counter()
    seed = candidate_seed(base_seed, split, task_type, index)
    rng = random.Random(seed)
    record: dict[str, Any] = {"split": split, "task_type": task_type, "index": index, "seed": seed}
    spec = None
    plans = [p for p in floor_plans if room_type(p) in _valid_rooms(task_type)]
    for _ in range(10):
        spec = sample_game(load_room(rng.choice(plans)), task_type, rng)
        if spec is not None:
            break
    if spec is None:
        return {**record, "status": "unsampleable", "seconds": time.perf_counter() - t0}
    trial_id = trial_name(base_seed, index)
    rel = Path("json_2.1.1") / split / spec.folder_name() / trial_id
    trial_dir = Path(out_dir) / rel
    game_path = write_game_files(spec, trial_dir, trial_id, seed)
    walkthrough = run_expert(game_path, max_expert_steps, seed)
    game = json.loads(game_path.read_text())
    game["solvable"] = walkthrough is not None
    game["walkthrough"] = walkthrough
    game_path.write_text(json.dumps(game))
    record.update(floor_plan=spec.room.floor_plan, path=str(rel / "game.tw-pddl"),
                  seconds=time.perf_counter() - t0)
    if walkthrough is None:
        remove_trial(trial_dir)
        return {**record, "status": "unsolved"}
    return {**record, "status": "ok", "expert_steps": len(walkthrough), "task": _task_text(game["grammar"]),
            "sha256": sha256_file(game_path), "problem_sha256": hashlib.sha256(game["pddl_problem"].encode()).hexdigest()}


def remove_trial(trial_dir: Path) -> None:
    shutil.rmtree(trial_dir, ignore_errors=True)
    try:
        trial_dir.parent.rmdir()  # the task folder, when no other trial is left in it
    except OSError:
        pass


def _trial_game(out: Path, path: Any) -> Path | None:
    """The game file a progress record names, when it exists inside the pool's ``json_2.1.1/`` tree at
    trial depth (``json_2.1.1/<split>/<task>/<trial>/game.tw-pddl``); None otherwise. A pool folder may
    be shared, and its trial folder is deleted when surplus, so the name is never trusted."""
    if not isinstance(path, str) or Path(path).parts[:1] != ("json_2.1.1",) or len(Path(path).parts) < 5:
        return None
    try:
        game = inside(out, path)
    except UnsafePathError:
        return None
    return game if game.is_file() else None


def trial_name(base_seed: int, index: int) -> str:
    return f"trial_S{base_seed}_{index:06d}"


def _task_text(grammar: str) -> str:
    marker = "Your task is to: "
    start = grammar.find(marker)
    if start < 0:
        return ""
    return grammar[start + len(marker):].split('"', 1)[0].strip()


def _valid_rooms(task_type: str) -> set[str]:
    constants, _ = _alfworld()
    return set(constants.GOALS_VALID[task_type])


# ----------------------------------------------------------------------------------------------------
# Pool generation (parallel, resumable) and the manifest


@dataclass
class PoolConfig:
    out: Path
    counts: dict[str, int]
    seed: int = 0
    workers: int = 0  # 0: one per available CPU
    timeout_s: float = 120.0  # per candidate; some pick-two games make the engine grind for minutes
    max_expert_steps: int = 30  # = the episode cap, so every kept game is winnable within an episode
    unseen_floor_plans: tuple[int, ...] = DEFAULT_UNSEEN_FLOOR_PLANS
    max_candidates_factor: int = 20  # give up on a (split, type) after this many candidates per wanted game
    progress: bool = True


def _quotas(counts: dict[str, int]) -> dict[tuple[str, str], int]:
    """Split each split's game count evenly over the six task types (balanced per-type evaluation)."""
    quotas = {}
    types = list(TASK_TYPES)
    for split, total in counts.items():
        for i, task_type in enumerate(types):
            quotas[(split, task_type)] = total // len(types) + (1 if i < total % len(types) else 0)
    return quotas


def _read_progress(progress_path: Path, config: PoolConfig) -> tuple[dict[tuple[str, str, int], dict], bool]:
    """The candidates an earlier call already tried, by ``(split, task type, index)``, and whether the log's
    last line was cut by a kill. Records of another seed or expert-step cap do not count, nor accepted
    games whose files are gone (pruned earlier: built again if needed)."""
    done: dict[tuple[str, str, int], dict] = {}
    if not progress_path.exists():
        return done, False
    text = progress_path.read_text()
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill
            continue
        if rec.get("seed_base") != config.seed or rec.get("max_expert_steps") != config.max_expert_steps:
            continue
        if rec["status"] == "ok" and _trial_game(progress_path.parent, rec.get("path")) is None:
            continue
        done[(rec["split"], rec["task_type"], rec["index"])] = rec
    return done, bool(text) and not text.endswith("\n")


def generate_pool(config: PoolConfig) -> dict[str, Any]:
    """Generate (or resume) the pool and write ``manifest.json``. Returns the manifest."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    plans = split_floor_plans(tuple(config.unseen_floor_plans))
    progress_path = out / "progress.jsonl"
    done, cut_line = _read_progress(progress_path, config)
    quotas = _quotas(config.counts)
    next_index = {key: 0 for key in quotas}
    in_flight = {key: 0 for key in quotas}

    def accepted(key) -> int:
        return sum(1 for (s, t, _), r in done.items() if (s, t) == key and r["status"] == "ok")

    def tried(key) -> int:
        return sum(1 for (s, t, _) in done if (s, t) == key)

    def wanted(key) -> bool:
        limit = config.max_candidates_factor * max(quotas[key], 1)
        return accepted(key) + in_flight[key] < quotas[key] and tried(key) + in_flight[key] < limit

    def next_task():
        # evaluation splits first (a usable eval set early), each (split, type) filled in step with the others
        order = sorted(quotas, key=lambda k: (k[0] == "train", (accepted(k) + in_flight[k]) / max(quotas[k], 1)))
        for key in order:
            if not wanted(key):
                continue
            while (key[0], key[1], next_index[key]) in done:
                next_index[key] += 1
            index = next_index[key]
            next_index[key] += 1
            in_flight[key] += 1
            return (key, index), (str(out), key[0], key[1], index, config.seed, plans[key[0]], config.max_expert_steps)
        return None

    total_wanted = sum(quotas.values())
    bar = None
    if config.progress:
        from tqdm import tqdm

        bar = tqdm(total=total_wanted, initial=min(total_wanted, sum(accepted(k) for k in quotas)),
                   desc="alfworld games", unit="game", dynamic_ncols=True)
    t0 = time.perf_counter()
    new_candidates = new_solved = 0
    last_manifest = time.monotonic()
    workers = config.workers or available_cpus()
    with progress_path.open("a") as log:
        if cut_line:
            log.write("\n")  # end the line a kill cut short, or the first new record would be glued to it
        for (key, index), result in run_tasks("seedbench.envs.alfworld.data:build_candidate", next_task,
                                               num_workers=workers, timeout_s=config.timeout_s):
            in_flight[key] -= 1
            new_candidates += 1
            if isinstance(result, dict):
                rec = result
            else:  # timeout or crash: remove what it wrote
                rec = {"split": key[0], "task_type": key[1], "index": index, "status": result.kind,
                       "detail": result.detail[-2000:]}
                for partial in (out / "json_2.1.1" / key[0]).glob(f"*/{trial_name(config.seed, index)}"):
                    if partial.parent.name.startswith(key[1] + "-"):
                        remove_trial(partial)
            rec.update(seed_base=config.seed, max_expert_steps=config.max_expert_steps)
            done[(key[0], key[1], index)] = rec
            new_solved += rec["status"] == "ok"
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if bar is not None and rec["status"] == "ok" and accepted(key) <= quotas[key]:
                bar.update(1)
            if time.monotonic() - last_manifest > MANIFEST_EVERY_S:  # a partial pool is usable meanwhile
                write_manifest(config, done, quotas, plans, time.perf_counter() - t0, new_candidates, new_solved,
                               complete=False)
                last_manifest = time.monotonic()
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - t0
    return write_manifest(config, done, quotas, plans, elapsed, new_candidates, new_solved, complete=True)


TEST_POOL_COUNTS = {"train": 6, "valid_seen": 1, "valid_unseen": 1}


def build_test_pool(cache_root: str | Path, workers: int = 0) -> Path:
    """A tiny pool for tests (one train game per task type, one game in each validation split) in a folder
    of `cache_root` named after the generator's source, so it is rebuilt when the generator changes and
    reused otherwise (generation is resumable: a second call costs nothing). Returns the pool folder."""
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join((here / name).read_bytes() for name in ("data.py", "engine.py"))).hexdigest()
    out = Path(cache_root) / f"alfworld-test-pool-{digest[:12]}"
    generate_pool(PoolConfig(out=out, counts=dict(TEST_POOL_COUNTS), seed=0, workers=workers, progress=False))
    return out


def _interleave_types(games: list[dict]) -> list[dict]:
    """Order each split as pick, look, clean, heat, cool, pick2, pick, look, ... so that any prefix of a
    split (e.g. the first 128 games of valid_seen) is balanced over task types."""
    ordered = []
    for split in SPLITS:
        queues = [[g for g in games if g["split"] == split and g["task_type"] == short] for short in TASK_TYPES.values()]
        while any(queues):
            for queue in queues:
                if queue:
                    ordered.append(queue.pop(0))
    return ordered


def write_manifest(config: PoolConfig, done: dict, quotas: dict, plans: dict, elapsed: float,
                   new_candidates: int, new_solved: int, complete: bool = True) -> dict[str, Any]:
    """Write ``manifest.json`` from the progress records: per (split, type) the first `quota` solved
    candidates by index (so the content does not depend on worker timing). ``complete`` is False for the
    snapshots written while generation runs; a game's position in its split can still change then."""
    out = Path(config.out)
    games, seen_problems = [], set()
    stats: dict[str, dict[str, int]] = {}
    for key in sorted(quotas):
        records = sorted((r for (s, t, _), r in done.items() if (s, t) == key), key=lambda r: r["index"])
        short = TASK_TYPES[key[1]]
        st = stats.setdefault(short, {"candidates": 0, "solved": 0, "unsolved": 0, "timeout": 0, "other": 0})
        kept = 0
        for rec in records:
            st["candidates"] += 1
            status = rec["status"]
            st["solved" if status == "ok" else status if status in ("unsolved", "timeout") else "other"] += 1
            if status != "ok":
                continue
            if kept >= quotas[key] or rec["problem_sha256"] in seen_problems:
                if complete:
                    remove_trial(_trial_game(out, rec["path"]).parent)  # surplus from parallel overshoot
                continue
            seen_problems.add(rec["problem_sha256"])
            kept += 1
            rel = Path(rec["path"])
            games.append({
                "id": str(rel.parent.relative_to(Path("json_2.1.1"))), "split": key[0], "task_type": short,
                "task_type_full": key[1], "floor_plan": rec["floor_plan"], "path": str(rel), "sha256": rec["sha256"],
                "expert_steps": rec["expert_steps"], "task": rec["task"], "seed": rec["seed"],
            })
    games = _interleave_types(games)
    for st in stats.values():
        st["solvable_fraction"] = round(st["solved"] / st["candidates"], 4) if st["candidates"] else None
    manifest = {
        "format": POOL_FORMAT,
        "complete": complete,  # False: a snapshot taken while generating
        "alfworld_version": _installed_version("alfworld"),
        "textworld_version": _installed_version("textworld"),
        "seed": config.seed,
        "max_expert_steps": config.max_expert_steps,
        "timeout_s": config.timeout_s,
        "splits": {split: {"floor_plans": plans[split], "requested": config.counts.get(split, 0),
                           "games": sum(g["split"] == split for g in games)} for split in SPLITS},
        "candidate_stats": stats,
        "last_run": {"seconds": round(elapsed, 1), "new_candidates": new_candidates, "new_solved": new_solved,
                     "workers": config.workers or available_cpus(),
                     "games_per_minute": round(60 * new_solved / elapsed, 2) if elapsed > 0 else None},
        "checksum": pool_checksum(games),  # the data checksum runs record (ALFWorldEnv.provenance)
        "games": games,
    }
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=1))
    tmp.replace(out / "manifest.json")
    return manifest


def _installed_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


# ----------------------------------------------------------------------------------------------------
# CLI


def default_out_dir() -> Path:
    return cache_dir("alfworld")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seedbench data alfworld",
        description="Generate a seeded, offline pool of ALFWorld games (train / valid_seen / valid_unseen) "
                    "from the layouts shipped with the alfworld package. Resumable.")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: $SEEDBENCH_CACHE/alfworld or ~/.cache/seedbench/alfworld)")
    parser.add_argument("--num-train", type=int, default=DEFAULT_COUNTS["train"], help="games in train")
    parser.add_argument("--num-valid-seen", type=int, default=DEFAULT_COUNTS["valid_seen"],
                        help="games in valid_seen (train floor plans, new games)")
    parser.add_argument("--num-valid-unseen", type=int, default=DEFAULT_COUNTS["valid_unseen"],
                        help="games in valid_unseen (held-out floor plans)")
    parser.add_argument("--seed", type=int, default=0, help="base seed of the pool")
    parser.add_argument("--workers", type=int, default=0, help="worker processes (default: one per CPU)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per candidate game")
    parser.add_argument("--max-expert-steps", type=int, default=30,
                        help="keep only games the handcoded expert wins within this many steps")
    parser.add_argument("--unseen-floor-plans", type=str, default=",".join(map(str, DEFAULT_UNSEEN_FLOOR_PLANS)),
                        help="comma-separated floor plans held out for valid_unseen")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # a killed run stops its workers too
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        _alfworld()
    except ImportError as err:
        print(err, file=sys.stderr)
        return 2
    config = PoolConfig(
        out=args.out or default_out_dir(),
        counts={"train": args.num_train, "valid_seen": args.num_valid_seen, "valid_unseen": args.num_valid_unseen},
        seed=args.seed, workers=args.workers, timeout_s=args.timeout, max_expert_steps=args.max_expert_steps,
        unseen_floor_plans=tuple(int(p) for p in args.unseen_floor_plans.split(",") if p.strip()),
        progress=not args.no_progress,
    )
    manifest = generate_pool(config)
    print(summary_text(manifest, config.out))
    short = [s for s, info in manifest["splits"].items() if info["games"] < info["requested"]]
    return 1 if short else 0


def summary_text(manifest: dict[str, Any], out: Path) -> str:
    lines = [f"ALFWorld pool in {out}"]
    for split, info in manifest["splits"].items():
        lines.append(f"  {split:13s} {info['games']:5d} / {info['requested']} games, "
                     f"{len(info['floor_plans'])} floor plans")
    lines.append("  solvable fraction per task type (expert wins within "
                 f"{manifest['max_expert_steps']} steps, {manifest['timeout_s']:.0f} s):")
    for short, st in manifest["candidate_stats"].items():
        lines.append(f"    {short:6s} {st['solved']:5d} / {st['candidates']:5d} = {st['solvable_fraction']}"
                     f"  (timeouts {st['timeout']})")
    run = manifest["last_run"]
    lines.append(f"  this run: {run['new_candidates']} candidates in {run['seconds']} s with {run['workers']} "
                 f"workers, {run['games_per_minute']} kept games per minute")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
