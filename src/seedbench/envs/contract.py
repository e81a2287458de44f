"""The env contract, enforced where an env meets the rest of seedbench (`seedbench.registry.make_env`).

A third-party env that breaks a rule of `seedbench.envs.text_env` (a `parse_action` that raises, a
`reset` that returns a dict as the observation, an `info` without ``task_id``) would otherwise fail
deep inside a rollout, in code its author never wrote. The guard checks each call's result at the
boundary and fails with one line naming the env and the rule (`EnvContractError`).

It guards in place rather than with a `gymnasium.Wrapper`: the env's class becomes a subclass of its
own class that adds the checks, so the env stays an instance of its class (``isinstance(env,
SokobanEnv)``) with every attribute and extra method the trainer, prompt builder and agents read. Only
results are checked; an exception the env raises on purpose (unknown split, step after the end) passes
through unchanged. A vision env (``image_shape`` set) must also return a frame of that shape in every
reset and step ``info["image"]`` (`seedbench.frames.frame_problem`); a text-only env must not return one,
so nothing downstream has to guess whether an env has images. The full, slower checks (determinism, disjoint splits, the expert) are
`seedbench check-env` (`seedbench.envs.checks`).
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from seedbench.frames import frame_problem

RESET_INFO_KEYS = ("task", "admissible_actions", "won", "task_id", "task_type", "split")
STEP_INFO_KEYS = RESET_INFO_KEYS + ("action_valid",)


class EnvContractError(RuntimeError):
    """An env broke a rule of the env contract; the one-line message names the env and the rule."""


def env_label(env_or_cls: Any, name: str | None = None) -> str:
    """``'guess' (guess_env:GuessEnv)``: how messages name an env."""
    cls = env_or_cls if isinstance(env_or_cls, type) else type(env_or_cls)
    cls = getattr(cls, "_contract_unguarded", cls)
    where = f"{cls.__module__}:{cls.__qualname__}"
    return f"{name!r} ({where})" if name else where


def short(value: Any, limit: int = 60) -> str:
    """A one-line repr cut to `limit` characters (messages stay one line whatever the env returned)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _broken(env: Any, rule: str) -> EnvContractError:
    return EnvContractError(f"env {env_label(env, env._contract_env_name)} broke the env contract: {rule}")


def _check_info(env: Any, call: str, info: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(info, dict):
        raise _broken(env, f"{call} returned info {short(info)}; info must be a dict")
    missing = [key for key in keys if key not in info]
    if missing:
        raise _broken(env, f"{call} info lacks {', '.join(missing)}; every reset info needs "
                           f"{', '.join(RESET_INFO_KEYS)}, and step info also action_valid")


def _check_image(env: Any, call: str, info: dict) -> None:
    shape = env.image_shape
    if shape is None:
        if "image" in info:
            raise _broken(env, f"{call} info carries an 'image' but the env declares no image_shape; set the "
                               "class attribute image_shape = (H, W)")
        return
    if "image" not in info:
        raise _broken(env, f"{call} info lacks image; an env with image_shape {tuple(shape)} returns its frame "
                           "(uint8, (H, W, 3)) in info['image'] on every reset and step")
    problem = frame_problem(info["image"], shape)
    if problem:
        raise _broken(env, f"{call} info['image'] is {problem}; frames are uint8 arrays of shape (H, W, 3) with "
                           f"(H, W) = image_shape {tuple(shape)}")


def check_image_shape(env: Any) -> None:
    """``image_shape`` is None or ``(H, W)``, two positive ints; checked once, when the env is guarded."""
    shape = getattr(env, "image_shape", None)
    if shape is None:
        return
    if not (isinstance(shape, tuple) and len(shape) == 2
            and all(isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > 0 for n in shape)):
        raise _broken(env, f"image_shape is {short(shape)}; it must be None (text-only) or (H, W), two positive ints")


def _check_parse(env: Any, text: Any, parse: Any) -> tuple[str, bool]:
    try:
        result = parse(text)
    except Exception as err:  # noqa: BLE001 - any exception here is the contract violation
        raise _broken(env, f"parse_action({short(text)}) raised {type(err).__name__}: {short(str(err), 120)}; "
                           "it must be total: return (text, False) for text it cannot parse") from err
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str)
            and isinstance(result[1], (bool, np.bool_))):
        raise _broken(env, f"parse_action({short(text)}) returned {short(result)}; it must return "
                           "(command: str, valid: bool)")
    return result


def _check_reset(env: Any, result: Any) -> None:
    if not (isinstance(result, tuple) and len(result) == 2):
        raise _broken(env, f"reset() returned {short(result)}; it must return (observation: str, info: dict)")
    observation, info = result
    if not isinstance(observation, str):
        raise _broken(env, f"reset() returned a {type(observation).__name__} observation ({short(observation)}); "
                           "observations must be str")
    _check_info(env, "reset()", info, RESET_INFO_KEYS)
    _check_image(env, "reset()", info)


def _check_step(env: Any, result: Any) -> None:
    if not (isinstance(result, tuple) and len(result) == 5):
        raise _broken(env, f"step() returned {short(result)}; it must return (observation, reward, terminated, "
                           "truncated, info)")
    observation, reward, terminated, truncated, info = result
    if not isinstance(observation, str):
        raise _broken(env, f"step() returned a {type(observation).__name__} observation ({short(observation)}); "
                           "observations must be str")
    if not isinstance(reward, numbers.Real):
        raise _broken(env, f"step() returned reward {short(reward)}; rewards must be float")
    for flag_name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, (bool, np.bool_)):
            raise _broken(env, f"step() returned {flag_name}={short(flag)}; it must be bool")
    _check_info(env, "step()", info, STEP_INFO_KEYS)
    _check_image(env, "step()", info)


def _guarded_class(cls: type, name: str) -> type:
    """A direct subclass of `cls` (so an instance's __class__ can be switched to it) whose `reset`,
    `step` and `parse_action` call `cls`'s and check the result."""

    def parse_action(self, text):
        return _check_parse(self, text, super(guarded, self).parse_action)

    def reset(self, *, seed=None, options=None):
        result = super(guarded, self).reset(seed=seed, options=options)
        _check_reset(self, result)
        return result

    def step(self, action):
        result = super(guarded, self).step(action)
        _check_step(self, result)
        return result

    guarded = type(cls.__name__, (cls,), {
        "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
        "_contract_env_name": name, "_contract_unguarded": cls,
        "parse_action": parse_action, "reset": reset, "step": step})
    return guarded


_GUARDED: dict[tuple[type, str], type] = {}


def guard(env: Any, name: str) -> Any:
    """Put `env` (registered as `name`) behind the contract checks, in place, and return it."""
    cls = getattr(type(env), "_contract_unguarded", type(env))
    guarded = _GUARDED.get((cls, name))
    if guarded is None:
        guarded = _GUARDED[(cls, name)] = _guarded_class(cls, name)
    env.__class__ = guarded
    check_image_shape(env)
    return env
