"""Dynamic sampling (`rollout.filter_groups`): which groups a batch keeps, how many rollouts it plays, the ids
and counts it reports, and a tiny-model run with the filter on."""

from __future__ import annotations

import pytest

from seedbench.rollout.group_filter import has_spread, sample_informative_groups
from seedbench.rollout.types import RolloutStats, TaskRef, Trajectory


def group(batch: int, gid: int, outcomes: list[int], dropped: tuple[int, ...] = ()) -> list[Trajectory]:
    return [Trajectory(episode_id=f"b{batch}-{gid}-{m}", group_id=gid, task=TaskRef("train", 100 * batch + gid),
                       won=bool(o), env_return=float(o), dropped=m in dropped)
            for m, o in enumerate(outcomes)]


def player(batches: list[list[list[int]]]):
    """A `play(batch)` over fixed outcomes: batches[b][g] = the outcomes of group g of rollout b."""
    calls = []

    def play(batch: int):
        calls.append(batch)
        trajectories = [t for g, outcomes in enumerate(batches[batch]) for t in group(batch, g, outcomes)]
        return trajectories, RolloutStats(env_time_s=1.0, generation_time_s=2.0, generated_tokens=10, env_steps=4)
    return play, calls


def reward(traj: Trajectory) -> float:
    return traj.env_return


def test_a_group_needs_two_different_rewards_among_its_kept_episodes():
    assert has_spread(group(0, 0, [1, 0]), reward)
    assert not has_spread(group(0, 0, [1, 1]), reward)
    assert not has_spread(group(0, 0, [1, 0], dropped=(1,)), reward)  # the 0 died with its env


def test_second_rollout_fills_the_batch_and_ids_are_renumbered_in_order():
    play, calls = player([[[1, 1], [0, 1], [0, 0]],      # one group with a spread
                          [[1, 0], [1, 1], [0, 1]]])     # two more
    trajectories, stats, metrics = sample_informative_groups(play, groups_needed=2, max_batches=3, reward=reward)
    assert calls == [0, 1]  # stopped as soon as 2 groups disagree
    assert [t.episode_id for t in trajectories] == ["b0-1-0", "b0-1-1", "b1-0-0", "b1-0-1"]
    assert [t.group_id for t in trajectories] == [0, 0, 1, 1]
    assert (stats.env_time_s, stats.generation_time_s, stats.generated_tokens, stats.env_steps) == (2.0, 4.0, 20, 8)
    assert metrics == {"rollout/filter_generated_groups": 6, "rollout/filter_generated_episodes": 12,
                       "rollout/filter_kept_groups": 2,
                       "rollout/filter_batches": 2, "rollout/filter_generated_success": 7 / 12}


def test_when_the_rollouts_run_out_the_batch_is_filled_with_uniform_groups():
    play, calls = player([[[1, 1], [0, 1], [0, 0]], [[0, 0], [1, 1], [1, 1]]])
    trajectories, _, metrics = sample_informative_groups(play, groups_needed=3, max_batches=2, reward=reward)
    assert calls == [0, 1]
    # the one informative group first, then uniform groups in the order played
    assert [t.episode_id.rsplit("-", 1)[0] for t in trajectories[::2]] == ["b0-1", "b0-0", "b0-2"]
    assert [t.group_id for t in trajectories] == [0, 0, 1, 1, 2, 2]
    assert metrics["rollout/filter_kept_groups"] == 1 and metrics["rollout/filter_batches"] == 2


@pytest.mark.slow
def test_one_tiny_grpo_iteration_with_the_filter(tmp_path):
    from seedbench.config import build_config
    from seedbench.training.rundir import read_jsonl
    from seedbench.training.trainer import train

    config = build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "seed": 3,
        "output": str(tmp_path / "run"),
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 4, "filter_groups": True,
                    "max_rollout_batches": 3, "reward": "success"},
        "eval": {"num_tasks": 2}})
    train(config)
    [metrics] = list(read_jsonl(tmp_path / "run" / "metrics.jsonl"))
    episodes = [e for e in read_jsonl(tmp_path / "run" / "episodes.jsonl") if e["phase"] == "train"]
    assert len(episodes) == 8 and sorted({e["group_id"] for e in episodes}) == [0, 1]
    assert metrics["rollout/filter_generated_groups"] == 2 * metrics["rollout/filter_batches"]
    assert metrics["trajectories"] == metrics["rollout/filter_generated_episodes"] == 8 * metrics["rollout/filter_batches"]
    spread = sum(len({e["won"] for e in episodes if e["group_id"] == g}) > 1 for g in (0, 1))
    assert metrics["rollout/filter_kept_groups"] == spread
    assert spread == 2 or metrics["rollout/filter_batches"] == 3
    if spread == 1:  # the group with a spread comes first, whichever rollout played it
        assert len({e["won"] for e in episodes if e["group_id"] == 0}) == 2


def test_the_filter_refuses_several_ranks(monkeypatch, tmp_path):
    from seedbench.config import ConfigError, build_config
    from seedbench.training import parallel
    from seedbench.training.distributed import SingleProcess
    from seedbench.training.trainer import Trainer

    class TwoRanks(SingleProcess):
        world_size = 2

    monkeypatch.setattr(parallel, "from_environment", lambda strategy: TwoRanks())
    config = build_config(overrides={"env": "choice", "agent": "grpo", "model": {"name": "tiny"},
                                     "output": str(tmp_path / "run"), "rollout": {"filter_groups": True}})
    with pytest.raises(ConfigError, match="rollout.filter_groups runs in one process"):
        Trainer(config)
    assert not (tmp_path / "run").exists()
