"""Dynamic sampling: train only on groups whose episodes disagree (`rollout.filter_groups`).

A group whose episodes all earn the same reward has GRPO advantage 0 for every token: it costs an update's
compute and moves the weights only through the KL term and the optimizer's momentum. DAPO's dynamic sampling
(verl's ``algorithm.filter_groups``) drops such groups and rolls out more tasks until the batch holds
`tasks_per_batch` groups with a reward spread. It is off by default, as in SEED's and SDAR's recipes.

One difference from verl, which raises when its last allowed generation batch still leaves the batch short:
here the batch is filled up with groups without a spread (in the order they were played), so an update always
sees `tasks_per_batch` groups, and the metrics say how many of them disagree.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Callable

from seedbench.rollout.types import RolloutStats, Trajectory


def groups_in_order(trajectories: list[Trajectory]) -> list[list[Trajectory]]:
    """The trajectories split by `group_id`, groups in order of first appearance, members in order."""
    groups: dict[int, list[Trajectory]] = {}
    for traj in trajectories:
        groups.setdefault(traj.group_id, []).append(traj)
    return list(groups.values())


def has_spread(group: list[Trajectory], reward: Callable[[Trajectory], float]) -> bool:
    """Whether the group's kept (not dropped) episodes earned at least two different rewards."""
    return len({reward(t) for t in group if not t.dropped}) > 1


def add_stats(total: RolloutStats, part: RolloutStats) -> RolloutStats:
    """`total` + `part`, field by field (counts and seconds both add up over sequential batches)."""
    return RolloutStats(**{f.name: getattr(total, f.name) + getattr(part, f.name) for f in fields(RolloutStats)})


def sample_informative_groups(play: Callable[[int], tuple[list[Trajectory], RolloutStats]], *, groups_needed: int,
                              max_batches: int, reward: Callable[[Trajectory], float],
                              ) -> tuple[list[Trajectory], RolloutStats, dict[str, float]]:
    """Call ``play(batch)`` for batch 0, 1, ... (at most `max_batches`) until `groups_needed` groups with a
    reward spread are collected. Returns the batch's trajectories: the first `groups_needed` such groups, then,
    if too few were found, groups without a spread in the order played; group ids renumbered 0, 1, ... in that
    order. Also the summed rollout stats, and the ``rollout/filter_…`` counts: groups and episodes generated
    (dropped ones included), groups in the batch with a spread, rollout batches played, success over every
    generated episode."""
    informative: list[list[Trajectory]] = []
    uniform: list[list[Trajectory]] = []
    stats, won, played, batches = RolloutStats(), [], 0, 0
    while batches < max_batches and len(informative) < groups_needed:
        trajectories, part = play(batches)
        batches += 1
        stats = add_stats(stats, part)
        for group in groups_in_order(trajectories):
            (informative if has_spread(group, reward) else uniform).append(group)
        won += [t.won for t in trajectories if not t.dropped]
        played += len(trajectories)
    batch = (informative + uniform)[:groups_needed]
    for new_id, group in enumerate(batch):
        for traj in group:
            traj.group_id = new_id
    metrics = {"rollout/filter_generated_groups": len(informative) + len(uniform),
               "rollout/filter_generated_episodes": played,
               "rollout/filter_kept_groups": min(len(informative), groups_needed),
               "rollout/filter_batches": batches,
               "rollout/filter_generated_success": sum(won) / len(won) if won else 0.0}
    return [t for group in batch for t in group], stats, metrics
