"""Sokoban: determinism, disjoint splits, gym-sokoban's reward constants, and solvability of every level."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from seedbench.envs.sokoban import (
    ACTIONS,
    LEGEND,
    SokobanEnv,
    parse_room,
    render_room,
    solve,
)


def act(name: str) -> str:
    return f"<think>plan</think><action>{name}</action>"


def grid(obs: str) -> str:
    """The observation without its legend line."""
    assert obs.endswith(LEGEND)
    return obs[: -len(LEGEND)].rstrip("\n")


def level_env(level: str, **kwargs) -> tuple[SokobanEnv, str]:
    env = SokobanEnv(**kwargs)
    obs, _ = env.reset(options={"level": level})
    return env, obs


# A two-box room, so pushing one box onto its target does not end the episode.
TWO_BOXES = """
# # # # # # #
# P X O _ _ #
# _ _ _ X O #
# # # # # # #
"""


def test_same_split_and_seed_give_the_same_level():
    a, b = SokobanEnv(), SokobanEnv()
    for split in ("train", "test"):
        for seed in (0, 1, 12345):
            obs_a, info_a = a.reset(seed=seed, options={"split": split})
            obs_b, info_b = b.reset(seed=seed, options={"split": split})
            assert obs_a == obs_b
            assert info_a == info_b
            assert info_a["task_id"] == f"sokoban-{split}-{seed}"
    # The level depends on nothing but (split, seed): not on what the env played before.
    obs_1, _ = a.reset(seed=3)
    a.step(act("left"))
    a.reset(seed=99)
    obs_2, _ = a.reset(seed=3)
    assert obs_1 == obs_2


def test_different_seeds_give_different_levels():
    env = SokobanEnv()
    levels = {env.reset(seed=seed)[0] for seed in range(40)}
    assert len(levels) > 30


def test_seedless_reset_names_a_replayable_level():
    env = SokobanEnv()
    env.reset(seed=5)
    obs, info = env.reset()
    replay_obs, replay_info = SokobanEnv().reset(options={"task_id": info["task_id"]})
    assert replay_obs == obs
    assert replay_info["task_id"] == info["task_id"]
    # task_id carries its split, so a test id replays the test level.
    test_obs, _ = env.reset(seed=7, options={"split": "test"})
    assert env.reset(options={"task_id": "sokoban-test-7"})[0] == test_obs


def test_splits_are_disjoint_sets_of_levels():
    env = SokobanEnv()
    train = {grid(env.reset(seed=s, options={"split": "train"})[0]) for s in range(150)}
    test = {grid(env.reset(seed=s, options={"split": "test"})[0]) for s in range(150)}
    assert train.isdisjoint(test)
    assert len(train) > 100 and len(test) > 100


def test_bad_split_and_task_id_are_rejected():
    env = SokobanEnv()
    with pytest.raises(ValueError, match="unknown split"):
        env.reset(seed=0, options={"split": "valid_seen"})
    with pytest.raises(ValueError, match="task_id"):
        env.reset(options={"task_id": "alfworld-7"})


def test_generated_levels_match_the_generator_contract():
    env = SokobanEnv()
    for seed in range(20):
        env.reset(seed=seed)
        fixed, state = env.room_fixed, env.room_state
        assert fixed.shape == (6, 6)
        assert (fixed[[0, -1], :] == 0).all() and (fixed[:, [0, -1]] == 0).all()
        assert (state == 5).sum() == 1
        assert (state == 4).sum() == (fixed == 2).sum() == 1  # one box, off its target
        assert (state == 3).sum() == 0


def test_render_and_parse_round_trip():
    env = SokobanEnv()
    obs, _ = env.reset(seed=11)
    fixed, state = parse_room(obs)
    assert np.array_equal(fixed, env.room_fixed) and np.array_equal(state, env.room_state)
    assert render_room(fixed, state) == grid(obs) == env.render()
    assert parse_room("#####\n#PXO#\n#####")[1].tolist()[1] == [0, 5, 4, 2, 0]
    with pytest.raises(ValueError):
        parse_room("# # #\n# P #\n# # #")  # no box


def test_push_onto_target_gives_plus_one():
    env, _ = level_env(TWO_BOXES)
    obs, reward, terminated, truncated, info = env.step(act("right"))
    assert reward == pytest.approx(1.0 - 0.1)
    assert not terminated and not truncated and not info["won"]
    assert grid(obs).splitlines()[1] == "# _ P * _ _ #"


def test_solving_gives_plus_ten_and_terminates():
    env, _ = level_env(TWO_BOXES)
    rewards = [env.step(act(a))[1] for a in ("right", "down", "right")]
    obs, reward, terminated, truncated, info = env.step(act("right"))
    assert rewards == pytest.approx([0.9, -0.1, -0.1])
    assert reward == pytest.approx(1.0 + 10.0 - 0.1)
    assert terminated and not truncated and info["won"] and info["action_valid"]
    with pytest.raises(RuntimeError):
        env.step(act("left"))


def test_push_off_target_gives_minus_one():
    env, _ = level_env("""
# # # # # #
# P * _ _ #
# _ X O _ #
# # # # # #
""")
    obs, reward, terminated, _, _ = env.step(act("right"))
    assert reward == pytest.approx(-1.0 - 0.1)
    assert not terminated
    assert grid(obs).splitlines()[1] == "# _ + X _ #"
    assert env._boxes_on_target == 0


def test_blocked_moves_and_player_on_target_cost_only_the_step():
    env, obs0 = level_env("""
# # # # # #
# P O X _ #
# _ _ _ _ #
# # # # # #
""")
    obs, reward, *_ = env.step(act("up"))  # wall
    assert reward == pytest.approx(-0.1) and obs == obs0
    obs, reward, *_ = env.step(act("right"))  # onto the target: hides it, is not a box on it
    assert reward == pytest.approx(-0.1)
    assert grid(obs).splitlines()[1] == "# _ + X _ #"
    obs, reward, *_ = env.step(act("right"))  # pushes the box away from the target
    assert reward == pytest.approx(-0.1)
    assert grid(obs).splitlines()[1] == "# _ O P X #"
    obs, reward, *_ = env.step(act("right"))  # box against the wall cannot move
    assert reward == pytest.approx(-0.1)
    assert grid(obs).splitlines()[1] == "# _ O P X #"


GARBAGE = ["", "<action>", "<action></action>", "up", "<action>jump</action>", "<action>up down</action>",
           "\u00e9\u2603\U0001f600<action>\u00fcp</action>", "<action>" * 50 + "up"]


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_invalid_action_is_a_counted_no_op(text):
    env = SokobanEnv()
    obs0, _ = env.reset(seed=0)
    command, valid = SokobanEnv.parse_action(text)
    assert isinstance(command, str) and valid is False
    obs, reward, terminated, truncated, info = env.step(text)
    assert obs == obs0
    assert reward == pytest.approx(-0.1)
    assert info["action_valid"] is False
    assert not terminated and not truncated
    assert env._steps == 1


def test_parse_action_accepts_the_grammar():
    # reference projection: think block required, no CJK, the first action tag counts
    assert SokobanEnv.parse_action("<think>I think</think> <action> Left </action>") == ("left", True)
    assert SokobanEnv.parse_action("<think>t</think><action>up</action> then <action>DOWN</action>") == ("up", True)
    assert SokobanEnv.parse_action("I think <action> Left </action>") == ("", False)
    assert SokobanEnv.parse_action("<think>\u5de6</think><action>left</action>") == ("", False)
    # seedbench projection: no think block needed, the last tag counts
    lenient = SokobanEnv(projection="seedbench")
    assert lenient.parse_action("I think <action> Left </action>") == ("left", True)
    assert lenient.parse_action("<action>up</action> then <action>DOWN</action>") == ("down", True)
    for name in ACTIONS:
        assert SokobanEnv.parse_action(act(name)) == (name, True)


def test_truncation_at_max_steps():
    assert SokobanEnv.max_steps == 15 and SokobanEnv().max_steps == 15
    env = SokobanEnv(max_steps=3)
    env.reset(seed=0)
    flags = [env.step("nothing")[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError):
        env.step(act("up"))


def test_info_keys():
    env = SokobanEnv()
    _, info = env.reset(seed=2, options={"split": "test"})
    assert info == {"task": "push every box onto a target", "admissible_actions": list(ACTIONS), "won": False,
                    "task_id": "sokoban-test-2", "task_type": "sokoban", "split": "test"}
    _, _, _, _, info = env.step(act("up"))
    assert set(info) == {"task", "admissible_actions", "won", "task_id", "task_type", "split", "action_valid"}


def test_solver_solves_generated_levels_and_its_plan_wins():
    env = SokobanEnv()
    for seed in range(50):
        split = ("train", "test")[seed % 2]
        env.reset(seed=seed, options={"split": split})
        plan = env.expert_plan()
        assert plan is not None and 1 <= len(plan) <= env.max_steps, (seed, split, plan)
        for i, action in enumerate(plan):
            _, reward, terminated, truncated, info = env.step(act(action))
            assert terminated == (i == len(plan) - 1) and not truncated
        assert info["won"] and reward >= 10.0 - 0.1 - 1e-9


def test_solver_edge_cases():
    fixed, state = parse_room("# # # # #\n# P X O #\n# # # # #")
    assert solve(state, fixed) == ["right"]
    assert solve(state) == ["right"]  # targets are visible in the state when the player is not on one
    solved_fixed, solved_state = parse_room("# # # #\n# P * #\n# # # #")
    assert solve(solved_state, solved_fixed) == []
    stuck_fixed, stuck_state = parse_room("# # # # #\n# X _ _ #\n# _ P O #\n# # # # #")  # box in a corner
    assert solve(stuck_state, stuck_fixed) is None
    # Mid-episode plans start from the current state.
    env, _ = level_env(TWO_BOXES)
    env.step(act("down"))
    plan = env.expert_plan()
    for action in plan:
        result = env.step(act(action))
    assert result[2] and result[4]["won"]


def test_bigger_rooms_and_more_boxes_are_solvable():
    env = SokobanEnv(dim_room=(7, 7), num_boxes=2, max_steps=60)
    for seed in range(3):
        env.reset(seed=seed)
        assert (env.room_state == 4).sum() == 2
        assert env.expert_plan() is not None


@pytest.mark.parametrize("kwargs", [{}, {"dim_room": (7, 7), "num_boxes": 2, "max_steps": 40}],
                         ids=["default", "7x7-2-boxes"])
def test_check_env_passes(kwargs):
    check_env(SokobanEnv(**kwargs), skip_render_check=True)  # render modes are checked via the registry test
