"""The ``hindsight`` stage-1 annotator writes analyses from the finished trajectory alone: it never makes an
env or reads hidden state, states the true outcome, and its skills name their own episode's steps."""

import json

import pytest

from seedbench.agents.seed.analysis import parse_analysis
from seedbench.agents.seed.annotators import AnnotationRequest, make_annotator
from seedbench.agents.seed.hindsight import generic_findings, episode_record, loop_free_path
from seedbench.envs.choice import TwoChoiceEnv
from seedbench.envs.frozenlake import FrozenLakeEnv
from seedbench.envs.sokoban import SokobanEnv
from seedbench.registry import make_env
from seedbench.rollout.types import StepSample, TaskRef, Trajectory


def trajectory(steps, *, won, truncated=False, final="end", task="reach the exit"):
    """A Trajectory from ``(observation, response, action, valid, reward)`` tuples."""
    traj = Trajectory(episode_id="e", group_id=0, task=TaskRef("train", 0), task_text=task, won=won,
                      truncated=truncated, done=True, final_observation=final)
    for i, (obs, response, action, valid, reward) in enumerate(steps):
        traj.steps.append(StepSample(i, "", [], [], [], response, obs, action, valid, reward))
    return traj


def play(alias, moves, *, seed=0, options=None):
    """Play `moves` (action payloads; None = an invalid answer) in a real env, recorded as the rollout does."""
    env = make_env(alias)
    obs, info = env.reset(seed=seed, options={"split": "train", **(options or {})})
    traj = Trajectory(episode_id=f"{alias}-{seed}", group_id=0, task=TaskRef("train", seed), task_text=info["task"])
    for k, move in enumerate(moves):
        text = "I am not sure" if move is None else f"<think>go</think><action>{move}</action>"
        next_obs, reward, terminated, truncated, info = env.step(text)
        traj.steps.append(StepSample(k, "", [], [], [], text, obs, env.parse_action(text)[0], info["action_valid"],
                                     reward))
        traj.won, obs = info["won"], next_obs
        if terminated or truncated or k == len(moves) - 1:
            traj.done, traj.truncated, traj.final_observation = True, not terminated, obs
            break
    return traj


class SecretEnv:
    """An env whose every hidden part raises: the hindsight annotator must never need it."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("the hindsight annotator constructed an env")

    def expert_plan(self):
        raise AssertionError("the hindsight annotator read the expert plan")

    @property
    def rewarded(self):
        raise AssertionError("the hindsight annotator read the rewarded answer")

    @staticmethod
    def hindsight_facts(episode):
        return [f"the door opened after {episode.steps[-1].action} at step {episode.steps[-1].index}"] if episode.won else []


def never_make_env():
    raise AssertionError("the hindsight annotator called make_env")


WON = trajectory([("hall", "<action>north</action>", "north", True, 0.0),
                  ("porch", "hmm", "", False, 0.0),
                  ("corridor", "<action>open door</action>", "open door", True, 1.0)], won=True, final="outside")
LOST = trajectory([("hall", "<action>west</action>", "west", True, 0.0),
                   ("cellar", "<action>east</action>", "east", True, 0.0),
                   ("hall", "<action>west</action>", "west", True, 0.0)], won=False, truncated=True, final="cellar")


def test_hindsight_needs_no_env_and_states_the_true_outcome():
    annotator = make_annotator("hindsight", make_env=never_make_env, env_cls=SecretEnv)
    annotator.check()
    answers = annotator.annotate([AnnotationRequest("prompt", WON), AnnotationRequest("prompt", LOST)])
    won, lost = (parse_analysis(a) for a in answers)
    assert won.summary.startswith("Success: the agent completed the task in 3 step(s) (1 invalid).")
    assert won.skill.startswith("In this won episode, the door opened after open door at step 3. Workflow that worked: "
                                "north, open door")
    assert lost.summary.startswith("Failure: the agent did not complete the task in 3 step(s) (0 invalid).")
    assert "east at step 2 went back to the state of step 1" in lost.skill  # the loop hall -> cellar -> hall
    # the oracle, by contrast, cannot work without building the env
    with pytest.raises(AssertionError, match="constructed an env"):
        make_annotator("oracle", make_env=SecretEnv)


def test_generic_rules_without_an_env_hook():
    """No env class (a plugin env that cannot be imported here): the generic rules alone, hand-checked."""
    findings = {f.kind: f.text for f in generic_findings(episode_record(WON), [s.response_text for s in WON.steps])}
    assert findings == {"invalid": 'step 2 gave no valid action (step 2 answered "hmm")',
                        "decisive": "open door at step 3 completed the task"}
    stuck = trajectory([("a", "x", "push", True, 0.0), ("a", "x", "push", True, 0.0), ("a", "x", "push", True, 0.0),
                        ("a", "x", "pull", True, -1.0)], won=False, final="b")
    texts = {f.kind: f.text for f in generic_findings(episode_record(stuck), ["x"] * 4)}
    assert texts == {"no_progress": "push at step 1, push at step 2, push at step 3 changed nothing",
                     "repeat": "push was repeated 3 times (steps 1-3)",
                     "fatal": "pull at step 4 ended the episode in failure"}
    babble = trajectory([("a", "um", "", False, 0.0)] * 8, won=False, truncated=True, final="a")
    assert generic_findings(episode_record(babble), ["um"] * 8)[0].text == (
        '8 steps (1, 2, 3, 4, 5, 6, ...) gave no valid action (step 1 answered "um")')
    skill = parse_analysis(json.dumps(make_annotator("hindsight", make_env=never_make_env).analyse(stuck))).skill
    assert skill == ("In this lost episode, pull at step 4 ended the episode in failure. Avoid playing pull from the state "
                     "of step 4; warning sign: that state coming back.")


def test_loop_free_path_cuts_detours():
    # a -> b -> a (detour) -> c -> c (no change) -> d
    traj = trajectory([("a", "", "1", True, 0), ("b", "", "2", True, 0), ("a", "", "3", True, 0),
                       ("c", "", "4", True, 0), ("c", "", "5", True, 0)], won=True, final="d")
    assert [s.action for s in loop_free_path(episode_record(traj))] == ["3", "5"]


FROZEN_MAP = ["SFFF", "FHFH", "FFFH", "HFFG"]


def test_frozenlake_facts_name_the_hole_and_the_goal():
    fell = play("frozenlake", ["up", "right", "down"], options={"desc": FROZEN_MAP})
    assert not fell.won and fell.steps[-1].action == "down"
    facts = FrozenLakeEnv.hindsight_facts(episode_record(fell))
    assert facts == ["moving down at step 3 walked into the hole at (1, 1)",
                     "moving up at step 1 bumped into the edge and stayed at (0, 0)"]
    analysis = make_annotator("hindsight", make_env=never_make_env, env_cls=FrozenLakeEnv).analyse(fell)
    assert analysis["episode_skill"].startswith("In this lost episode, moving down at step 3 walked into the hole at (1, 1).")
    # the env's facts already tell how it ended and that step 1 went nowhere: the generic "down at step 3
    # ended the episode" and "up at step 1 changed nothing" are not repeated
    assert analysis["episode_summary"] == (
        "Failure: the agent did not complete the task in 3 step(s) (0 invalid). Moving down at step 3 walked into "
        "the hole at (1, 1). Moving up at step 1 bumped into the edge and stayed at (0, 0).")
    reached = play("frozenlake", ["down", "down", "right", "left", "right", "right", "down", "right"],
                   options={"desc": FROZEN_MAP})
    assert reached.won
    analysis = make_annotator("hindsight", make_env=never_make_env, env_cls=FrozenLakeEnv).analyse(reached)
    assert analysis["episode_skill"] == (
        "In this won episode, moving right at step 8 reached the goal at (3, 3). Workflow that worked: down, down, right, "
        "right, down, right; skip the 2 moves that went nowhere (steps 3 and 4).")


LEVEL = "\n".join(["# # # # # #",
                   "# _ _ _ _ #",
                   "# _ X _ O #",
                   "# _ P _ _ #",
                   "# # # # # #"])


CORNER_LEVEL = "\n".join(["# # # # # #",
                          "# _ X P _ #",
                          "# _ _ _ O #",
                          "# _ _ _ _ #",
                          "# # # # # #"])


def test_sokoban_facts_name_pushes_onto_targets_and_into_corners():
    solved = play("sokoban", ["left", "up", "right", "right"], options={"level": LEVEL})
    assert solved.won
    facts = SokobanEnv.hindsight_facts(episode_record(solved))
    assert facts == ["pushing right at step 4 put a box on the target at (2, 4)", "pushing right at step 3 moved a box "
                                                                                      "to (2, 3)"]
    cornered = play("sokoban", ["left", "up", "down", "down", "down"], options={"level": CORNER_LEVEL})
    assert not cornered.won
    assert SokobanEnv.hindsight_facts(episode_record(cornered)) == [
        "pushing left at step 1 wedged the box into the corner at (1, 1), from where it can never reach a target",
        "the box ended at (1, 1), 4 cells from the target at (2, 4)",
        "moving up at step 2 ran into a wall at (0, 2)"]


def test_distinct_trajectories_get_distinct_skills_and_true_outcomes():
    """Real episodes of three envs; every distinct action sequence gets its own skill, and every summary
    starts with the episode's true outcome."""
    episodes = [play("frozenlake", moves, options={"desc": FROZEN_MAP}) for moves in (
        ["right", "down"], ["down", "right"], ["down", "down", "right", "right", "down", "right"],
        ["right", "right", "down", "down", "down", "right"], ["up", "left", "down", "down", "down"],
        [None, "down", "down", "right", "up"])]
    episodes += [play("sokoban", moves, options={"level": LEVEL}) for moves in (
        ["left", "up", "right", "right"], ["up"], ["right", "up", "left"], ["left", None, "up", "right", "right"],
        ["down", "down", "left"])]
    episodes += [play("choice", [move]) for move in ("left", "right", None)]
    annotators = {"frozenlake": FrozenLakeEnv, "sokoban": SokobanEnv, "choice": TwoChoiceEnv}
    skills = set()
    for traj in episodes:
        env_cls = annotators[traj.episode_id.split("-")[0]]
        analysis = parse_analysis(json.dumps(make_annotator("hindsight", make_env=never_make_env,
                                                            env_cls=env_cls).analyse(traj)))
        assert analysis.summary.startswith("Success:" if traj.won else "Failure:"), analysis.summary
        assert analysis.skill.startswith("In this won episode, " if traj.won else "In this lost episode, ")
        skills.add(analysis.skill)
    assert len(skills) == len(episodes) == 14
    assert sum(t.won for t in episodes) == 5  # both outcomes are covered


def test_the_oracle_reads_env_hooks_not_env_names():
    """The oracle annotator asks any env for `oracle_skill` and `expert_plan` (`TextEnv`'s defaults: none), so an
    env it has never heard of gets its stated answer, and TextEnv's default expert says clearly that it has none."""
    from seedbench.envs.text_env import TextEnv

    class Riddle(TwoChoiceEnv):
        def oracle_skill(self, won):
            return "Say right; the riddle's answer never changes." if won else "Say right, not left."

    oracle = make_annotator("oracle", make_env=lambda: Riddle())
    steps = [("A riddle.", "left", "left", True, 0.0)]
    assert oracle.analyse(trajectory(steps, won=False))["episode_skill"] == "Say right, not left."
    won = oracle.analyse(trajectory(steps, won=True))["episode_skill"]
    assert won == "Say right; the riddle's answer never changes."
    assert not TwoChoiceEnv.has_expert() and SokobanEnv.has_expert() and FrozenLakeEnv.has_expert()
    with pytest.raises(NotImplementedError, match="TwoChoiceEnv has no scripted expert"):
        TwoChoiceEnv().expert_plan()
    assert TextEnv.oracle_skill(TwoChoiceEnv(), True) is None
