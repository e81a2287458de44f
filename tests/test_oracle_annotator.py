"""The ``oracle`` annotator states the answer the env rewarded in the trajectory's own episode: the text
choice env's configured side, and the image choice env's side for that task's colour (task 0 red = left,
task 1 blue = right), whichever task the annotator's env saw last."""

import pytest

from seedbench.agents.seed.annotators import make_annotator
from seedbench.registry import make_env
from seedbench.rollout.types import StepSample, TaskRef, Trajectory


def played(alias: str, seed: int, answer: str, **kwargs) -> Trajectory:
    """One episode of `alias` task `seed` answering `answer`, recorded as the rollout records it."""
    env = make_env(alias, **kwargs)
    obs, info = env.reset(seed=seed, options={"split": "train"})
    traj = Trajectory(episode_id=f"{alias}-{seed}", group_id=0, task=TaskRef("train", seed), task_text=info["task"])
    text = f"<action>{answer}</action>"
    _, reward, _, _, info = env.step(text)
    traj.steps.append(StepSample(0, "", [], [], [], text, obs, answer, info["action_valid"], reward))
    traj.won, traj.done = info["won"], True
    return traj


@pytest.mark.parametrize("alias, kwargs, rewarded", [
    ("choice", {}, {0: "right", 1: "right"}),
    ("choice", {"rewarded": "left"}, {0: "left", 1: "left"}),
    ("image-choice", {}, {0: "left", 1: "right"}),
])
def test_the_oracle_states_the_episodes_rewarded_answer(alias, kwargs, rewarded):
    oracle = make_annotator("oracle", make_env=lambda: make_env(alias, **kwargs))
    for seed in (1, 0, 1):  # its own env's last task is never the one asked about
        other = {"left": "right", "right": "left"}[rewarded[seed]]
        won = played(alias, seed, rewarded[seed], **kwargs)
        lost = played(alias, seed, other, **kwargs)
        assert won.won and not lost.won  # the env did reward that side
        assert oracle.analyse(won)["episode_skill"] == f"Choose {rewarded[seed]}: it is the rewarded answer."
        assert oracle.analyse(lost)["episode_skill"] == f"Do not choose {other}; choose {rewarded[seed]}."
