"""EZPoints and Points24: gym-cards' rewards, validity and termination on hand-made deals, eval's
arithmetic, the deal distribution and splits, the formula solver as expert, frames, `check-env`."""

from __future__ import annotations

import numpy as np
import pytest

from seedbench.envs.cards import EZPointsEnv, Points24Env, evaluate_formula, solutions, tokenize
from seedbench.envs.checks import run_checks
from tests.image_checks import (assert_frame, assert_frames_deterministic, expert_policy, play, random_policy,
                                success_rate)

OPS24 = ("+", "-", "*", "/")


def test_formula_arithmetic_is_pythons_eval():
    for formula in ("6*2", "10+2", "2**3", "7//2", "1/3*3", "(10*10-4)/4", "-3+15", "8/(3-8/3)"):
        assert evaluate_formula(formula) == eval(formula)  # noqa: S307 - fixed literals
    assert evaluate_formula("8/(3-8/3)") != 24  # float rounding: gym-cards scores it wrong
    for broken in ("", "6 2", "6+", "(", "3(4)", "1/0", "6+ "):
        assert evaluate_formula(broken) is None
    assert evaluate_formula("10**10**10") is None  # gym-cards' eval would run for minutes


def test_solver_finds_solutions_only_where_eval_agrees():
    assert solutions((3, 3, 8, 8), 24, OPS24) == ()  # 8/(3-8/3) is its only solution, and floats miss it
    assert "5*(5-1/5)" in solutions((1, 5, 5, 5), 24, OPS24)
    assert solutions((6, 2), 12, ("+", "*")) == ("2*6", "6*2")
    assert solutions((10, 2), 12, ("+", "*")) == ("10+2", "2+10")
    assert tokenize("(10+2)*2") == ["(", "10", "+", "2", ")", "*", "2"]
    for formula in solutions((4, 4, 10, 10), 24, OPS24):
        numbers = sorted(int(t) for t in tokenize(formula) if t.isdigit())
        assert evaluate_formula(formula) == 24 and numbers == [4, 4, 10, 10]


def test_ezpoints_rewards_and_termination_follow_gym_cards():
    env = EZPointsEnv()
    obs, info = env.reset(options={"cards": ["H6", "SK"]})
    assert env.values == [6, 10] and "K of spades (value 10)" in obs
    assert info["admissible_actions"] == ["6", "10", "+", "*", "="]
    # a number the hand does not hold: -1, a space joins the formula, nothing else changes
    _, reward, terminated, _, info = env.step("<think>t</think><action>7</action>")
    assert (reward, terminated, info["action_valid"], env.formula) == (-1.0, False, False, [" "])
    env.reset(options={"cards": ["H6", "S2"]})
    results = play(env, ["6", "*", "2", "="])
    assert [r[1] for r in results] == [0.0, 0.0, 0.0, 10.0] and results[-1][2] and results[-1][4]["won"]
    env.reset(options={"cards": ["H6", "S2"]})
    results = play(env, ["6", "6"])  # the second 6 is not in the hand
    assert [r[1] for r in results] == [0.0, -1.0] and not results[-1][4]["action_valid"]
    env.reset(options={"cards": ["H6", "S2"]})
    results = play(env, ["6", "+", "2", "="])
    assert results[-1][1:3] == (-1.0, True) and not results[-1][4]["won"]
    env.reset(options={"cards": ["H6", "S2"]})
    results = play(env, ["6", "*", "="])  # a formula that does not parse, and an unused card
    assert results[-1][1:3] == (-1.0, True)


def test_ezpoints_truncates_on_the_step_after_the_formula_passed_five_tokens():
    env = EZPointsEnv()
    env.reset(options={"cards": ["H6", "S2"]})
    results = play(env, ["+"] * 7)
    assert len(results) == 7 and [r[1] for r in results] == [0.0] * 6 + [-1.0]
    assert results[-1][2:4] == (False, True) and env.formula == ["+"] * 6


def test_points24_plays_a_solution_with_parentheses():
    env = Points24Env()
    env.reset(options={"cards": ["H4", "SQ", "D4", "CK"]})  # 4 10 4 10
    assert (10 * 10 - 4) / 4 == 24
    results = play(env, ["(", "10", "*", "10", "-", "4", ")", "/", "4", "="])
    assert results[-1][1] == 10.0 and results[-1][4]["won"]
    env.reset(options={"cards": ["H4", "SQ", "D4", "CK"]})
    plan = env.expert_plan()
    assert plan[-1] == "=" and evaluate_formula("".join(plan[:-1])) == 24
    env.step("<think>t</think><action>(</action>")
    continued = env.expert_plan()  # the plan continues the formula typed so far
    assert continued is not None and evaluate_formula("(" + "".join(continued[:-1])) == 24


def test_face_cards_and_action_lists():
    assert Points24Env().actions[-7:] == ("+", "-", "*", "/", "(", ")", "=")
    assert Points24Env().numbers[-1] == "10" and Points24Env(treat_face_cards_as_10=False).numbers[-1] == "13"
    env = Points24Env(treat_face_cards_as_10=False)
    env.reset(options={"cards": ["HJ", "SQ", "DK", "CA"]})
    assert env.values == [11, 12, 13, 1]


def test_deals_follow_gym_cards_and_splits_are_disjoint():
    ez = EZPointsEnv()
    for seed in range(60):
        ez.reset(seed=seed, options={"split": "test"})
        a, b = ez.values
        assert a + b == 12 or a * b == 12  # every EZPoints deal is solvable by construction
    p24 = Points24Env()
    multisets = {split: {tuple(sorted(p24.deal(split, seed)[1])) for seed in range(25)} for split in p24.splits}
    assert not multisets["train"] & multisets["test"] and len(multisets["test"]) > 15
    deals = {split: {tuple(ez.deal(split, seed)[0]) for seed in range(50)} for split in ez.splits}
    assert not deals["train"] & deals["test"]


def test_unfiltered_points24_deals_include_unsolvable_hands():
    env = Points24Env(solvable_only=False)
    unsolvable = sum(not solutions(tuple(env.deal("test", seed)[1]), 24, OPS24) for seed in range(60))
    assert 3 <= unsolvable <= 30  # gym-cards deals any hand; 26.9 % of the 13**4 rank tuples have no solution


def test_experts_solve_every_sampled_deal_and_random_agents_rarely_do():
    for env in (EZPointsEnv(), Points24Env()):
        assert success_rate(env, "test", range(20), expert_policy) == 1.0
        assert success_rate(env, "test", range(20), random_policy) < 0.3


def test_frames():
    for env, cards in ((EZPointsEnv(), ["H6", "S2"]), (Points24Env(), ["H4", "SQ", "D4", "CK"])):
        _, info = env.reset(options={"cards": cards})
        frame = assert_frame(env, info)
        assert frame.shape == (300, 300, 3) and tuple(frame[2, 2]) == (0x35, 0x65, 0x4D)  # gym-cards' felt
        assert (frame == 255).all(axis=2).sum() > 2000  # white card faces
        later = env.step(f"<think>t</think><action>{env.values[0]}</action>")[4]["image"]
        assert not np.array_equal(frame, later)  # the formula is drawn
        assert_frames_deterministic(env, "test")


@pytest.mark.parametrize("name", ["ezpoints", "points24"])
def test_check_env_passes(name):
    results = run_checks(name, seeds=3, expert_tasks=3)
    assert not [r for r in results if r.failed], [r for r in results if r.failed]
