"""`seedbench check-env NAME`: prove that an env keeps the env contract (`seedbench.envs.text_env`).

What Gymnasium's `check_env` cannot see, because it does not know what a task is:

- ``reset(seed=s, options={"split": x})`` is deterministic: two plays of the same (split, seed) with the
  same actions give the same episode, also with other resets in between. An env that picks its task
  with Python's `random`, a counter or the clock passes `check_env` and fails here;
- different seeds reach different tasks (a reset that ignores the seed fails);
- no task is in two splits: neither the same ``task_id`` nor the same behaviour (task text, first
  observation and the episode a fixed probe policy plays), unless the env declares
  ``splits_disjoint = False`` (then overlaps are a note);
- every ``info`` key the prompt builder, agents and reports read is present with the right type;
- garbage text is an invalid action, never an exception;
- the scripted expert (``expert_plan``, when the env has one) solves a sample of tasks;
- a vision env (``image_shape`` set) returns in every reset and step ``info["image"]`` a ``uint8 (H, W, 3)``
  frame of that shape that is not blank, the same frame for the same (split, seed); frames take part in
  the determinism and disjointness fingerprints (by digest). Text-only envs pass with no frames.

Each check gives one line; the command exits 1 when any check fails. Tests call `run_checks`.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from seedbench.envs.contract import RESET_INFO_KEYS, STEP_INFO_KEYS, EnvContractError, short
from seedbench.frames import frame_id, frame_problem, is_blank
from seedbench.envs.text_env import TextEnv
from seedbench.registry import ENVS, make_env, resolve_env
from seedbench.yamlio import YAMLFileError, parse_yaml

if TYPE_CHECKING:
    from seedbench.envs.text_env import TextEnv

PROBE_STEPS = 6  # steps of the probe policy whose episode fingerprints a task


def _random_unicode(seed: int, length: int = 200) -> str:
    rng = random.Random(seed)
    chars = []
    while len(chars) < length:
        code = rng.randint(1, 0x10FFFF)
        if not 0xD800 <= code <= 0xDFFF:  # surrogates are not valid str content for encoders
            chars.append(chr(code))
    return "".join(chars)


def well_formed(command: str) -> str:
    """A response every projection accepts: a think block, then the command in an action tag."""
    return f"<think>check</think><action>{command}</action>"


GARBAGE = ["", "<action>", "</action>", "<action></action>", "<action> </action>", "<action><action>",
           "\x00\n\t", _random_unicode(0), _random_unicode(1) + "<action>" + _random_unicode(2)]
"""Model outputs no env may accept as an action nor crash on."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str  # "ok", "FAIL" or "note" (a check that does not apply, or an accepted exception)
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == "FAIL"


class CheckFailed(Exception):
    """Raised inside a check with the one-line reason."""


def _one_line(err: BaseException) -> str:
    """Our own errors already read as a sentence; anything else the env raised keeps its type name."""
    text = str(err) if isinstance(err, (CheckFailed, EnvContractError)) else f"{type(err).__name__}: {err}"
    return " ".join(text.split())


# ----------------------------------------------------------------------------------------------------
# Playing tasks


def _probe_command(env: TextEnv, info: dict, step: int, plan: list[str]) -> str:
    """The probe policy: a fixed function of what the env shows, so equal tasks give equal episodes."""
    actions = info.get("admissible_actions")
    if actions:
        return actions[(3 * step) % len(actions)]
    if env.has_expert():
        if not plan:
            plan.extend(env.expert_plan() or [])
        if plan:
            return plan.pop(0)
    return "look"


@dataclass(frozen=True)
class Fingerprint:
    """What a task looks like to the probe policy: its id, the repr of everything the env returned
    (observations, rewards, flags, infos), and the same without the ids that name the split and seed."""

    task_id: str
    episode: str
    behaviour: str


def _fingerprint(env: Any, split: str, seed: int) -> Fingerprint:
    """Reset to (split, seed) and play the probe policy for a few steps."""
    obs, info = env.reset(seed=seed, options={"split": split})
    record: list[tuple] = [(obs, info)]
    plan: list[str] = []
    for step in range(min(PROBE_STEPS, env.max_steps)):
        result = env.step(well_formed(_probe_command(env, info, step, plan)))
        record.append(result)
        info = result[4]
        if result[2] or result[3]:
            break
    record = [item[:-1] + (_digest_image(item[-1]),) for item in record]
    anonymous = [item[:-1] + ({k: v for k, v in item[-1].items() if k not in ("task_id", "split")},)
                 for item in record]
    return Fingerprint(str(record[0][1].get("task_id")), repr(record), repr(anonymous))


def _digest_image(info: dict) -> dict:
    """`info` with its frame replaced by the frame's id: numpy's repr elides most pixels, the id does not."""
    if "image" not in info:
        return info
    image = info["image"]
    return {**info, "image": f"frame {frame_id(image)}" if hasattr(image, "tobytes") else image}


def _first_difference(a: str, b: str) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at character {at}: {short(a[max(0, at - 20):at + 40])} vs {short(b[max(0, at - 20):at + 40])}"


def probe_reset_seeding(env: Any, name: str, seed: int = 0) -> None:
    """The cheap start-up form of the determinism check, for `seedbench run` and `seedbench eval`: reset
    `env` to `seed`, to another seed, to `seed` and to the other seed again (first split), and require each
    seed's two resets to agree: the observation, the info, and the state of the env's ``np_random``. An
    env whose reset ignores its seed would otherwise give a group's members different tasks and change the
    eval tasks under the same task hash, silently. Comparing ``np_random`` fails an env that never passes
    its seed to ``super().reset`` even when two of its draws happen to land on one task; one drawing from
    Python's or NumPy's global stream passes only if both pairs of draws coincide (under 1 in 3000 with 60
    tasks, where one pair alone coincides 1 time in 60). `seedbench check-env` runs the full check.
    The global `random` and NumPy streams are restored afterwards, so a run draws exactly what it would
    have drawn without the probe. Raises `EnvContractError` (one line: the env, the call, the fix)."""
    import numpy as np

    split = env.splits[0]
    saved = random.getstate(), np.random.get_state()
    try:
        seen = [(probe_seed, _reset_fingerprint(env, split, probe_seed)) for probe_seed in (seed, seed + 1) * 2]
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
    for (probe_seed, first), (_, again) in zip(seen[:2], seen[2:]):
        if first != again:
            raise EnvContractError(
                f"env {name!r}: reset(seed={probe_seed}, options={{'split': {split!r}}}) gave a different first "
                f"observation, info or np_random state the second time ({_first_difference(first, again)}); envs "
                "must honour "
                f"reset(seed=...): pick the task from (split, seed) and draw randomness only from self.np_random "
                f"after super().reset(seed=seed) (`seedbench check-env {name}`; probe_env_seeding=false skips "
                "this probe)")


def _reset_fingerprint(env: Any, split: str, seed: int) -> str:
    """What a reset to (split, seed) shows: observation, info (frame by its id), then the env's
    ``np_random`` state, last so that a difference there is reported only when all else agrees."""
    obs, info = env.reset(seed=seed, options={"split": split})
    generator = getattr(getattr(env, "unwrapped", env), "_np_random", None)
    state = generator.bit_generator.state if generator is not None else None
    return repr((obs, _digest_image(info), state))


# ----------------------------------------------------------------------------------------------------
# The checks


class _Checker:
    def __init__(self, name: str, make: Callable[[], Any], seeds: int, expert_tasks: int):
        self.name, self.make, self.seeds, self.expert_tasks = name, make, seeds, expert_tasks
        self.env: Any = None
        self.fingerprints: dict[tuple[str, int], Fingerprint] = {}

    def check_make(self) -> str:
        self.env = self.make()
        if not isinstance(self.env, TextEnv):
            raise CheckFailed(f"{type(self.env).__name__} is not a seedbench.envs.text_env.TextEnv subclass")
        return f"{type(self.env).__name__}, a TextEnv"

    def check_attributes(self) -> str:
        env = self.env
        splits = env.splits
        if not (isinstance(splits, tuple) and splits and all(isinstance(s, str) for s in splits)):
            raise CheckFailed(f"splits must be a non-empty tuple of names, got {short(splits)}")
        if env.eval_split not in splits:
            raise CheckFailed(f"eval_split {env.eval_split!r} is not one of splits {list(splits)}")
        for attr, low in (("max_steps", 1), ("history_length", 0), ("invalid_action_penalty", 0)):
            value = getattr(env, attr)
            if not isinstance(value, (int, float)) or value < low:
                raise CheckFailed(f"{attr} must be a number >= {low}, got {short(value)}")
        if not isinstance(env.instruction, str):
            raise CheckFailed(f"instruction must be str, got {short(env.instruction)}")
        return f"splits {list(splits)}, eval split {env.eval_split!r}, max_steps {env.max_steps}"

    def check_gymnasium(self) -> str:
        from gymnasium.utils.env_checker import check_env

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            check_env(self.env)
        # Only gymnasium's own "WARN: ..." lines (coloured); the env's libraries may warn about other things.
        messages = [re.sub(r"\x1b\[[0-9;]*m", "", str(w.message)) for w in caught]
        gym_warnings = [" ".join(m.split()) for m in messages if m.startswith("WARN:")]
        if gym_warnings:
            raise CheckFailed(f"gymnasium check_env warned: {gym_warnings[0]}")
        return "passed, render included, no warnings"

    def check_info_keys(self) -> str:
        env = self.env
        obs, info = env.reset(seed=0, options={"split": env.splits[0]})
        self._check_info("reset", info, RESET_INFO_KEYS)
        if info["won"] is not False:
            raise CheckFailed("reset info 'won' must be False")
        actions = info["admissible_actions"]
        text = well_formed(actions[0] if actions else "look")
        _, reward, terminated, truncated, info = env.step(text)
        self._check_info("step", info, STEP_INFO_KEYS)
        if actions and info["action_valid"] is not True:
            raise CheckFailed(f"step({text!r}) with the first admissible action gave action_valid="
                              f"{info['action_valid']!r}")
        return f"reset and step info carry {', '.join(STEP_INFO_KEYS)}"

    def _check_info(self, call: str, info: dict, keys: tuple[str, ...]) -> None:
        missing = [k for k in keys if k not in info]
        if missing:
            raise CheckFailed(f"{call} info lacks {', '.join(missing)}")
        types = {"task": str, "won": bool, "task_id": str, "task_type": str, "split": str, "action_valid": bool}
        for key in keys:
            if key in types and not isinstance(info[key], types[key]):
                raise CheckFailed(f"{call} info[{key!r}] must be {types[key].__name__}, got {short(info[key])}")
        if not info["task"] or not info["task_id"] or not info["task_type"]:
            raise CheckFailed(f"{call} info task, task_id and task_type must be non-empty")
        if info["admissible_actions"] is not None and not (
                isinstance(info["admissible_actions"], list) and all(isinstance(a, str) for a in info["admissible_actions"])):
            raise CheckFailed(f"{call} info['admissible_actions'] must be a list of str or None, got "
                              f"{short(info['admissible_actions'])}")
        if info["split"] not in self.env.splits:
            raise CheckFailed(f"{call} info['split'] {info['split']!r} is not one of {list(self.env.splits)}")

    def check_image(self) -> str:
        """Frames of a vision env: present, well-formed, not blank, the same for the same (split, seed)."""
        env = self.env
        shape = env.image_shape
        if shape is None:
            return "text-only env (image_shape None), no frames expected"
        seen = 0
        for split in env.splits:
            for seed in range(min(self.seeds, 3)):
                _, info = env.reset(seed=seed, options={"split": split})
                first = self._frame(info, f"reset(seed={seed}, split {split!r})")
                actions = info["admissible_actions"]
                _, _, _, _, step_info = env.step(well_formed(actions[0] if actions else "look"))
                self._frame(step_info, f"step after reset(seed={seed}, split {split!r})")
                env.reset(seed=seed + 1, options={"split": split})
                _, again = env.reset(seed=seed, options={"split": split})
                if frame_id(again["image"]) != frame_id(first):
                    raise CheckFailed(f"reset(seed={seed}, options={{'split': {split!r}}}) drew a different frame the "
                                      "second time; draw the frame from the task's state only")
                seen += 2
        return f"{seen} frames of {shape[0]}x{shape[1]} uint8 RGB, none blank, the same for the same (split, seed)"

    def _frame(self, info: dict, call: str):
        if "image" not in info:
            raise CheckFailed(f"{call} info lacks image; an env with image_shape returns its frame on every reset and step")
        problem = frame_problem(info["image"], self.env.image_shape)
        if problem:
            raise CheckFailed(f"{call} info['image'] is {problem}")
        if is_blank(info["image"]):
            raise CheckFailed(f"{call} info['image'] is blank (one colour everywhere); draw the observation")
        return info["image"]

    def check_garbage(self) -> str:
        env = self.env
        done = True
        for text in GARBAGE:
            command, valid = env.parse_action(text)
            if not isinstance(command, str) or valid is not False:
                raise CheckFailed(f"parse_action({short(text)}) returned {short((command, valid))}; garbage must be "
                                  "(str, False)")
            if done:
                env.reset(seed=0, options={"split": env.splits[0]})
            _, _, terminated, truncated, info = env.step(text)
            if info["action_valid"] is not False:
                raise CheckFailed(f"step({short(text)}) gave action_valid={info['action_valid']!r}; garbage is invalid")
            done = terminated or truncated
        return f"{len(GARBAGE)} garbage texts parsed and stepped as invalid, no exception"

    def check_determinism(self) -> str:
        env = self.env
        for split in env.splits:
            for seed in range(self.seeds):
                self.fingerprints[(split, seed)] = _fingerprint(env, split, seed)
        for split in env.splits:
            for seed in range(self.seeds):
                again = _fingerprint(env, split, seed)
                first = self.fingerprints[(split, seed)]
                if again.episode != first.episode:
                    raise CheckFailed(
                        f"reset(seed={seed}, options={{'split': {split!r}}}) gave a different episode the second "
                        f"time ({_first_difference(first.episode, again.episode)}); pick the task from (split, seed) and draw "
                        "randomness only from self.np_random after super().reset(seed=seed)")
        return f"{self.seeds} seeds x {len(env.splits)} splits replayed identically"

    def check_seeds_reach_tasks(self) -> CheckResult | str:
        counts = {split: len({self.fingerprints[(split, seed)].task_id for seed in range(self.seeds)})
                  for split in self.env.splits}
        summary = ", ".join(f"{split} {count}" for split, count in counts.items())
        if self.seeds > 1 and all(count == 1 for count in counts.values()):
            raise CheckFailed(f"reset(seed=0..{self.seeds - 1}) gave a single task in every split: reset ignores the "
                              "seed; pick the task from (split, seed)")
        if self.seeds > 1 and 1 in counts.values():
            return CheckResult("seeds reach tasks", "note", f"distinct tasks from {self.seeds} seeds: {summary} (a "
                               "split with one task is fine if that is all it holds)")
        return f"distinct tasks from {self.seeds} seeds: {summary}"

    def check_splits_disjoint(self) -> CheckResult | str:
        """By id, and by behaviour when the probe policy tells tasks apart (within each split, different
        ids play differently): then two splits playing one episode identically hold the same task."""
        env = self.env
        informative = all(
            len({p.task_id for (s, _), p in self.fingerprints.items() if s == split})
            == len({p.behaviour for (s, _), p in self.fingerprints.items() if s == split})
            for split in env.splits)
        owner_of_id: dict[str, str] = {}
        owner_of_behaviour: dict[str, tuple[str, int]] = {}
        overlaps = []
        for (split, seed), print_ in self.fingerprints.items():
            other = owner_of_id.setdefault(print_.task_id, split)
            if other != split:
                overlaps.append(f"task_id {print_.task_id!r} is in splits {other!r} and {split!r}")
                continue
            first = owner_of_behaviour.setdefault(print_.behaviour, (split, seed))
            if informative and first[0] != split:
                overlaps.append(f"{first[0]} seed {first[1]} and {split} seed {seed} play identically (the same "
                                "task under two ids)")
        if overlaps:
            detail = f"{len(overlaps)} sampled tasks are in two splits, e.g. {overlaps[0]}"
            if not getattr(env, "splits_disjoint", True):
                return CheckResult("splits disjoint", "note", f"{detail}; accepted: the env declares splits_disjoint = False")
            raise CheckFailed(detail + "; draw each split's tasks from disjoint sets")
        if len(env.splits) < 2:
            return CheckResult("splits disjoint", "note", "the env has a single split")
        how = "by id and by behaviour" if informative else ("by id only: the probe policy plays different tasks "
                                                            "identically")
        return f"no task in two splits ({len(self.fingerprints)} sampled, compared {how})"

    def check_expert(self) -> CheckResult | str:
        env = self.env
        if not env.has_expert():
            return CheckResult("expert", "note", "no expert_plan(): `seedbench eval --agent scripted` is unavailable")
        unsolved = []
        for seed in range(self.expert_tasks):
            env.reset(seed=seed, options={"split": env.eval_split})
            plan: list[str] = []
            won = False
            for _ in range(env.max_steps):
                if not plan:
                    plan = list(env.expert_plan() or [])
                    if not plan:
                        break
                _, _, terminated, truncated, info = env.step(well_formed(plan.pop(0)))
                won = bool(info["won"])
                if terminated or truncated:
                    break
            if not won:
                unsolved.append(seed)
        if unsolved:
            raise CheckFailed(f"expert_plan() left {len(unsolved)} of {self.expert_tasks} {env.eval_split!r} tasks "
                              f"unsolved (seeds {', '.join(map(str, unsolved))})")
        return f"expert_plan() solved {self.expert_tasks}/{self.expert_tasks} {env.eval_split!r} tasks"


CHECKS = [
    ("make", "check_make"),
    ("attributes", "check_attributes"),
    ("gymnasium check_env", "check_gymnasium"),
    ("info keys", "check_info_keys"),
    ("image", "check_image"),
    ("garbage text", "check_garbage"),
    ("determinism", "check_determinism"),
    ("seeds reach tasks", "check_seeds_reach_tasks"),
    ("splits disjoint", "check_splits_disjoint"),
    ("expert", "check_expert"),
]
DEPENDS = {"seeds reach tasks": "determinism", "splits disjoint": "determinism"}


def run_checks(name: str, *, seeds: int = 8, expert_tasks: int = 5, env_kwargs: dict | None = None) -> list[CheckResult]:
    """Run every check on the registered env `name`; a check that cannot run (its env could not be made,
    or the check it builds on failed) is a note. Never raises for a broken env."""
    checker = _Checker(name, lambda: make_env(name, **(env_kwargs or {})), seeds, expert_tasks)
    results: list[CheckResult] = []
    for label, method in CHECKS:
        if checker.env is None and label != "make":
            results.append(CheckResult(label, "note", "not run: the env could not be made"))
            continue
        needed = DEPENDS.get(label)
        if needed and any(r.name == needed and r.failed for r in results):
            results.append(CheckResult(label, "note", f"not run: needs a passing {needed} check"))
            continue
        try:
            outcome = getattr(checker, method)()
        except Exception as err:  # noqa: BLE001 - every failure of the env under test becomes one line
            results.append(CheckResult(label, "FAIL", _one_line(err)))
            continue
        results.append(outcome if isinstance(outcome, CheckResult) else CheckResult(label, "ok", outcome))
    if checker.env is not None:
        checker.env.close()
    return results


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedbench check-env",
                                     description="Check an env (built-in or plugin) against the env contract.")
    parser.add_argument("name", help="env alias or Gymnasium id (see `seedbench envs`)")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per split for determinism and disjointness")
    parser.add_argument("--expert-tasks", type=int, default=5, help="eval-split tasks the expert must solve")
    parser.add_argument("--kwarg", nargs="+", default=[], metavar="KEY=VALUE",
                        help="env constructor arguments (YAML values), e.g. data_dir=/data/alfworld")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    kwargs = {}
    for pair in args.kwarg:
        key, sep, raw = pair.partition("=")
        if not sep:
            print(f"seedbench: error: --kwarg expects KEY=VALUE, got {pair!r}", file=sys.stderr)
            return 2
        try:
            kwargs[key] = parse_yaml(raw, f"--kwarg {key}")
        except YAMLFileError as err:
            print(f"seedbench: error: {err}", file=sys.stderr)
            return 2
    entry = resolve_env(args.name)
    print(f"check-env {entry.alias} ({entry.env_id}, {entry.entry_point}; {ENVS.origin(entry.alias)})")
    results = run_checks(entry.alias, seeds=args.seeds, expert_tasks=args.expert_tasks, env_kwargs=kwargs)
    for result in results:
        print(f"  {result.status:<5} {result.name}: {result.detail}")
    failed = [r.name for r in results if r.failed]
    if failed:
        print(f"seedbench: check-env {entry.alias}: {len(failed)} of {len(results)} checks failed ({', '.join(failed)})")
        return 1
    print(f"seedbench: check-env {entry.alias}: passed")
    return 0
