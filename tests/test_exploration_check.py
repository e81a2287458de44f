"""scripts/exploration_check.py's figures on hand-built trajectories (hand-computed)."""

from seedbench.rollout.types import StepSample, TaskRef, Trajectory


def _episode(seed: int, won: bool, actions: list[str], logp: float) -> Trajectory:
    steps = [StepSample(step=i, user_content="", prompt_ids=[1], response_ids=[2, 3], sampled_logprobs=[logp, logp],
                        response_text="", observation="", action=a, action_valid=True, env_reward=0.0)
             for i, a in enumerate(actions)]
    return Trajectory(episode_id=f"{seed}-{len(actions)}", group_id=0, task=TaskRef("train", seed), steps=steps, won=won)


def test_mixed_groups_distinct_sequences_and_token_nll(script_module):
    exploration = script_module("exploration_check").exploration
    trajectories = [
        _episode(1, True, ["down", "right"], -0.1), _episode(1, False, ["down", "down"], -0.3),  # mixed, 2 sequences
        _episode(2, True, ["right"], -0.2), _episode(2, True, ["right"], -0.2),  # one outcome, 1 sequence
    ]
    figures = exploration(trajectories)
    assert figures["success"] == 0.75
    assert figures["mixed_groups"] == "1/2"
    assert figures["distinct_action_sequences_per_group"] == 1.5
    # tokens: 4 at 0.1, 4 at 0.3, 2 + 2 at 0.2 -> mean 0.2
    assert abs(figures["nll_per_sampled_token"] - 0.2) < 1e-12
