"""Shared frame checks for the vision envs' tests (the image convention of issue 17: ``info["image"]`` is a
uint8 (H, W, 3) ndarray on every reset and step, ``env.image_shape == (H, W)``)."""

from __future__ import annotations

import numpy as np


def assert_frame(env, info: dict) -> np.ndarray:
    """The frame of `info`, checked: dtype, shape equal to the env's declared image_shape, not blank."""
    frame = info["image"]
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
    assert frame.shape == (*env.image_shape, 3)
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) >= 4, "a blank or near-blank frame"
    return frame


def assert_frames_deterministic(env, split: str, seeds=range(3)) -> None:
    """The same (split, seed) draws the same frame; different seeds draw at least two different ones."""
    frames = []
    for seed in seeds:
        first = assert_frame(env, env.reset(seed=seed, options={"split": split})[1])
        env.reset(seed=seed + 100, options={"split": split})
        again = env.reset(seed=seed, options={"split": split})[1]["image"]
        assert np.array_equal(first, again), f"frame of ({split}, {seed}) differs between resets"
        frames.append(first.tobytes())
    assert len(set(frames)) >= 2


def play(env, commands, think: bool = True):
    """Step `commands` (payloads) in well-formed responses; returns the list of step results."""
    results = []
    for command in commands:
        text = f"<think>t</think><action>{command}</action>" if think else f"<action>{command}</action>"
        results.append(env.step(text))
        if results[-1][2] or results[-1][3]:
            break
    return results


def success_rate(env, split: str, seeds, policy) -> float:
    """Fraction of tasks won by `policy(env, info, rng) -> command`, replanning every step."""
    rng = np.random.default_rng(0)
    wins = 0
    for seed in seeds:
        _, info = env.reset(seed=seed, options={"split": split})
        for _ in range(env.max_steps):
            _, _, terminated, truncated, info = env.step(f"<think>t</think><action>{policy(env, info, rng)}</action>")
            if terminated or truncated:
                break
        wins += bool(info["won"])
    return wins / len(seeds)


def expert_policy(env, info, rng) -> str:
    plan = env.expert_plan()
    return plan[0] if plan else "none"


def random_policy(env, info, rng) -> str:
    actions = info["admissible_actions"]
    return actions[int(rng.integers(len(actions)))]
