"""FrozenLake: Gymnasium's dynamics on seeded maps, the text and image observations, the splits, the
BFS expert against a random agent, `seedbench check-env`, and one tiny GRPO iteration."""

from __future__ import annotations

import pytest

from seedbench.envs.checks import run_checks
from seedbench.envs.frozenlake import FrozenLakeEnv, hole_left_of_goal, render_map, shortest_path
from tests.image_checks import (assert_frame, assert_frames_deterministic, expert_policy, play, random_policy,
                                success_rate)

MAP = ["SFFH", "FHFF", "FFFH", "HFFG"]


def test_text_shows_the_player_and_moves_follow_gymnasium():
    env = FrozenLakeEnv()
    obs, info = env.reset(options={"desc": MAP})
    assert obs.splitlines()[:4] == ["P F F H", "F H F F", "F F F H", "H F F G"]
    assert info["admissible_actions"] == ["left", "down", "right", "up"] and not info["won"]
    # up at the top edge stays put (Gymnasium clamps), right moves one column
    (_, r1, t1, _, i1), (_, r2, t2, _, i2) = play(env, ["up", "right"])
    assert env.player == (0, 1) and (r1, r2, t1, t2) == (0.0, 0.0, False, False) and i2["action_valid"]
    # down from (0, 1) is the hole at (1, 1): terminated, reward 0, not won
    _, reward, terminated, truncated, info = env.step("<think>t</think><action>down</action>")
    assert (reward, terminated, truncated, info["won"]) == (0.0, True, False, False)


def test_reaching_the_goal_pays_one_and_the_expert_path_is_shortest():
    env = FrozenLakeEnv()
    env.reset(options={"desc": MAP})
    plan = env.expert_plan()
    assert plan == shortest_path(MAP, (0, 0)) and len(plan) == 6  # 3 down and 3 right, avoiding the holes
    results = play(env, plan)
    assert [r[1] for r in results] == [0.0] * 5 + [1.0]
    assert results[-1][2] and results[-1][4]["won"] and env.player == (3, 3)


def test_invalid_text_is_a_counted_no_op_and_the_cap_truncates():
    env = FrozenLakeEnv(max_steps=3)
    env.reset(options={"desc": MAP})
    _, reward, terminated, truncated, info = env.step("jump")
    assert (reward, terminated, truncated, info["action_valid"], env.player) == (0.0, False, False, False, (0, 0))
    _, _, terminated, truncated, _ = play(env, ["left", "left"])[-1]
    assert (terminated, truncated) == (False, True)


def test_reference_projection_needs_a_think_block_and_seedbench_does_not():
    assert FrozenLakeEnv.parse_action("<action>down</action>") == ("", False)
    assert FrozenLakeEnv.parse_action("<think>x</think><action>Down</action>") == ("down", True)
    assert FrozenLakeEnv(projection="seedbench").parse_action("<action>down</action>") == ("down", True)


def test_frames_are_drawn_per_state():
    env = FrozenLakeEnv()
    _, info = env.reset(options={"desc": MAP})
    frame = assert_frame(env, info)
    tile = 192 // 4
    centre = frame[tile // 2, tile // 2]
    assert tuple(centre) == (220, 30, 30)  # the player's disc in the top-left tile
    assert tuple(frame[tile // 2, 3 * tile + tile // 2]) == (20, 40, 90)  # the hole at (0, 3)
    moved = play(env, ["right"])[-1][4]["image"]
    assert tuple(moved[tile // 2, tile // 2]) != (220, 30, 30)
    assert tuple(moved[tile // 2, tile + tile // 2]) == (220, 30, 30)
    assert_frames_deterministic(env, "test")
    large = FrozenLakeEnv()
    assert_frame(large, large.reset(seed=0, options={"split": "test_large"})[1])


def test_splits_are_disjoint_sets_of_maps_and_test_large_is_bigger():
    env = FrozenLakeEnv()
    maps = {split: {tuple(env.generate_map(split, seed)) for seed in range(40)} for split in env.splits}
    assert not maps["train"] & maps["test"]
    assert {len(m) for m in maps["test_large"]} == {6} and {len(m) for m in maps["test"]} == {4}
    assert len(maps["test"]) > 20  # seeds reach different maps


def test_hard_maps_have_a_hole_left_of_the_goal_and_stay_held_out():
    env = FrozenLakeEnv()
    train = {tuple(env.generate_map("train", seed)) for seed in range(60)}
    hard = [env.generate_map("test_hard", seed) for seed in range(30)]
    assert all(m[3][2] == "H" and m[3][3] == "G" for m in hard) and len({tuple(m) for m in hard}) > 20
    assert not train & {tuple(m) for m in hard}
    assert success_rate(env, "test_hard", range(10), expert_policy) == 1.0  # still solvable: down the last column
    assert hole_left_of_goal(["SF", "HG"]) and not hole_left_of_goal(["SH", "FG"])


def test_hard_share_forces_that_share_of_training_maps_and_leaves_the_rest_unchanged():
    plain, hard = FrozenLakeEnv(), FrozenLakeEnv(hard_share=0.5)
    maps = [(plain.generate_map("train", seed), hard.generate_map("train", seed)) for seed in range(200)]
    forced = [seed for seed, (a, b) in enumerate(maps) if a != b]
    assert all(hole_left_of_goal(maps[seed][1]) for seed in forced)
    natural = sum(hole_left_of_goal(a) for a, _ in maps) / len(maps)
    share = sum(hole_left_of_goal(b) for _, b in maps) / len(maps)
    assert natural < 0.25 and share > 0.45 and share > natural + 0.25
    assert plain.generate_map("test", 5) == hard.generate_map("test", 5)  # held-out splits are untouched
    with pytest.raises(ValueError, match="hard_share"):
        FrozenLakeEnv(hard_share=1.5)


def test_expert_solves_every_sampled_map_and_a_random_agent_rarely_does():
    env = FrozenLakeEnv(max_steps=30)
    expert = success_rate(env, "test", range(30), expert_policy)
    expert_large = success_rate(env, "test_large", range(10), expert_policy)
    random_agent = success_rate(env, "test", range(30), random_policy)
    assert expert == 1.0 and expert_large == 1.0
    assert random_agent < 0.5


def test_slippery_dynamics_replay_from_the_task_seed():
    env = FrozenLakeEnv(is_slippery=True)
    episodes = []
    for _ in range(2):
        env.reset(seed=3, options={"split": "test"})
        episodes.append([(r[0], r[1]) for r in play(env, ["right", "down"] * 5)])
    assert episodes[0] == episodes[1]
    env.reset(seed=3, options={"split": "test"})
    assert len(env.expert_plan()) == 1  # one step of the value-iteration policy


def test_render_map_marks_the_player():
    assert render_map(["SF", "HG"], (1, 1)) == "S F\nH P"


def test_check_env_passes():
    results = run_checks("frozenlake", seeds=3, expert_tasks=3)
    assert not [r for r in results if r.failed], [r for r in results if r.failed]


@pytest.mark.slow
def test_one_grpo_iteration_on_the_tiny_model(tmp_path):
    from seedbench.config import build_config
    from seedbench.training.rundir import read_jsonl
    from seedbench.training.trainer import train

    config = build_config(overrides={
        "env": "frozenlake", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1,
        "output": str(tmp_path / "run"),
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2, "max_steps": 3},
        "eval": {"num_tasks": 2}})
    run_dir = train(config)
    metrics = list(read_jsonl(tmp_path / "run" / "metrics.jsonl"))
    assert [m["iteration"] for m in metrics] == [1]
    episodes = [e for e in read_jsonl(tmp_path / "run" / "episodes.jsonl") if e["phase"] != "eval/test"]
    assert len(episodes) == 4 and all(e["task_id"].startswith("frozenlake-train-") for e in episodes)
    assert run_dir is not None


def test_speed_benchmark_script_measures_frames_and_success(tmp_path):
    import json

    from tests.benchmark_loader import load_benchmark

    bench = load_benchmark("grid_and_cards_speed")
    out = tmp_path / "speed.json"
    assert bench.main(["--envs", "frozenlake", "ezpoints", "--tasks", "3", "--steps", "10", "--out", str(out)]) == 0
    results = {r["env"]: r for r in json.loads(out.read_text())["results"]}
    assert results["frozenlake"]["frame_shape"] == [192, 192, 3] and results["ezpoints"]["frame_shape"] == [300, 300, 3]
    assert results["frozenlake"]["expert_success"] == 1.0 and results["frozenlake"]["expert_success_test_large"] == 1.0
    assert results["ezpoints"]["expert_success"] == 1.0 and results["ezpoints"]["expert_steps"] == 4.0  # a, op, b, =
    assert all(r["reset_ms"] > 0 and r["step_ms"] > 0 and r["frame_ms"] > 0 for r in results.values())


def test_neighbours_variant_names_the_four_tiles_next_to_the_player():
    """`frozenlake-neighbours`: the map, then the tiles one move away in action order (edge outside the
    map); the hindsight hook still reads the map from such an observation."""
    from seedbench.envs.hindsight import EpisodeRecord, StepRecord
    from seedbench.registry import make_env

    env = make_env("frozenlake-neighbours")
    obs, _ = env.reset(options={"desc": ["SFFF", "FHFH", "FFFH", "HFFG"]})
    assert obs.splitlines()[4] == "Next to you: left edge, down F, right F, up edge."
    obs, *_ = env.step("<think>.</think><action>right</action>")
    assert obs.splitlines()[4] == "Next to you: left S, down H, right F, up edge."
    fell, *_ = env.step("<think>.</think><action>down</action>")
    step = StepRecord(index=1, observation=obs, action="down", valid=True, reward=0.0, next_observation=fell)
    assert FrozenLakeEnv.hindsight_facts(EpisodeRecord(task="t", steps=(step,), won=False, truncated=False)) == [
        "moving down at step 1 walked into the hole at (1, 1)"]
    assert "Next to you" not in make_env("frozenlake").reset(seed=1)[0]
