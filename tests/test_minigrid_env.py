"""MiniGrid/BabyAI through the real `minigrid` package: the egocentric text on a known layout, word
actions, MiniGrid's reward, layout-disjoint splits and the size shift, frames, the experts (BFS and
BabyAIBot) against a random agent, `check-env` on every registered variant, one tiny GRPO iteration."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("minigrid",
                    reason="the grid-world envs need the [minigrid] extra: pip install 'seedbench[minigrid]'")

import gymnasium as gym  # noqa: E402

from seedbench.envs.checks import run_checks  # noqa: E402
from seedbench.envs.minigrid_env import (ACTIONS, MiniGridTextEnv, egocentric_text, full_grid_text,  # noqa: E402
                                         relative_phrase)
from seedbench.registry import make_env  # noqa: E402
from tests.image_checks import (assert_frame, assert_frames_deterministic, expert_policy, random_policy,  # noqa: E402
                                success_rate)

VARIANTS = ["minigrid-empty", "minigrid-empty-8x8", "minigrid-doorkey", "minigrid-doorkey-6x6", "babyai-gotoredball",
            "babyai-gotoobj"]


def test_relative_phrases():
    assert relative_phrase(2, -1) == "2 steps forward and 1 step left"
    assert relative_phrase(1, 0) == "1 step forward"
    assert relative_phrase(0, 3) == "3 steps right"


def test_egocentric_text_of_the_fixed_empty_5x5_layout():
    # Empty-5x5: agent at (1, 1) facing east, goal at (3, 3), walls around. Facing east, south is right.
    env = gym.make("MiniGrid-Empty-5x5-v0").unwrapped
    env.reset(seed=0)
    lines = egocentric_text(env).splitlines()
    assert lines[0] == "Mission: get to the green goal square"
    assert lines[1] == "You are facing east. You are carrying nothing."
    assert lines[2] == "In front of you: nothing."
    assert "- the green goal 2 steps forward and 2 steps right" in lines
    assert lines[-1] == "Nearest walls: 3 steps forward, 1 step left, 3 steps right."
    grid = full_grid_text(env).splitlines()
    assert grid[1] == "WG WG WG WG WG" and grid[2] == "WG >> .. .. WG" and grid[4] == "WG .. .. GG WG"


def test_word_actions_and_minigrid_reward():
    env = make_env("minigrid-empty")
    assert env.parse_action("<think>t</think><action>Turn  Left</action>") == ("turn left", True)
    assert env.parse_action("<think>t</think><action>pickup</action>") == ("pick up", True)
    assert env.parse_action("<think>t</think><action>jump</action>")[1] is False
    assert env.parse_action("<action>forward</action>")[1] is False  # the reference projection needs <think>
    _, info = env.reset(seed=0, options={"split": "test"})
    assert info["admissible_actions"] == list(ACTIONS) and info["task"] == "get to the green goal square"
    _, reward, terminated, _, info = env.step("nonsense")
    assert (reward, terminated, info["action_valid"], env.env.step_count) == (0.0, False, False, 0)  # no MiniGrid step
    plan = env.expert_plan()
    for command in plan:
        _, reward, terminated, truncated, info = env.step(f"<think>t</think><action>{command}</action>")
    assert terminated and info["won"] and not truncated
    assert reward == pytest.approx(1 - 0.9 * len(plan) / env.max_steps)  # MiniGrid's success reward


def test_doorkey_expert_picks_up_the_key_and_unlocks_the_door():
    env = make_env("minigrid-doorkey")
    env.reset(seed=1, options={"split": "test"})
    plan = env.expert_plan()
    assert "pick up" in plan and "toggle" in plan and plan.index("pick up") < plan.index("toggle")


def test_splits_are_disjoint_layouts_and_test_large_is_bigger():
    env = make_env("minigrid-doorkey")
    layouts = {}
    for split in env.splits:
        layouts[split] = set()
        for seed in range(12):
            env.reset(seed=seed, options={"split": split})
            layouts[split].add((env.env.grid.encode().tobytes(), tuple(env.env.agent_pos), env.env.agent_dir))
            assert (env.env.width, split == "test_large") in ((5, False), (6, True))
    assert not layouts["train"] & layouts["test"] and len(layouts["test"]) >= 8


def test_frames_agent_view_and_full_grid():
    env = make_env("minigrid-doorkey")
    _, info = env.reset(seed=0, options={"split": "test"})
    assert env.image_shape == (224, 224)
    assert_frame(env, info)
    assert_frames_deterministic(env, "test")
    turned = env.step("<think>t</think><action>turn left</action>")[4]["image"]
    assert not np.array_equal(info["image"], turned)
    full = MiniGridTextEnv(env_id="MiniGrid-DoorKey-5x5-v0", large_env_id=None, image_view="full", text_view="full")
    obs, info = full.reset(seed=0, options={"split": "test"})
    frame = assert_frame(full, info)
    assert full.splits == ("train", "test") and len(obs.splitlines()) == 1 + 5 + 1
    assert (frame[:2] == 0).all()  # 5 tiles of 44 px = 220: a 2-px black border


def test_experts_solve_every_sampled_task_and_a_random_agent_rarely_does():
    doorkey = make_env("minigrid-doorkey", max_steps=60)
    assert success_rate(doorkey, "test", range(12), expert_policy) == 1.0
    assert success_rate(doorkey, "test_large", range(4), expert_policy) == 1.0
    assert success_rate(doorkey, "test", range(12), random_policy) < 0.5
    babyai = make_env("babyai-gotoredball")
    assert success_rate(babyai, "test", range(6), expert_policy) == 1.0
    assert success_rate(babyai, "test_large", range(3), expert_policy) == 1.0


def test_provenance_names_the_minigrid_version():
    import minigrid

    record = make_env("minigrid-empty").provenance()
    assert record["generator_version"] == f"1+minigrid-{minigrid.__version__}" and record["data_source"] == "procedural"


@pytest.mark.parametrize("name", VARIANTS)
def test_check_env_passes_for_every_variant(name):
    results = run_checks(name, seeds=3, expert_tasks=3)
    assert not [r for r in results if r.failed], [r for r in results if r.failed]


@pytest.mark.slow
def test_one_grpo_iteration_on_the_tiny_model(tmp_path):
    from seedbench.config import build_config
    from seedbench.training.rundir import read_jsonl
    from seedbench.training.trainer import train

    config = build_config(overrides={
        "env": "minigrid-empty", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1,
        "output": str(tmp_path / "run"), "eval": {"num_tasks": 2},
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2, "max_steps": 3}})
    train(config)
    assert [m["iteration"] for m in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == [1]
    episodes = [e for e in read_jsonl(tmp_path / "run" / "episodes.jsonl") if e["phase"] != "eval/test"]
    assert len(episodes) == 4 and all(e["task_id"].startswith("MiniGrid-Empty-Random-5x5-train-") for e in episodes)
