"""One SEED iteration on Search-QA with the tiny model: the env's prompt hook, stop strings and reward
path work inside the real trainer (the tiny model cannot search; success stays 0)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("bm25s", reason="Search-QA needs the [search] extra: pip install 'seedbench[search]'")

from seedbench.config import build_config  # noqa: E402
from seedbench.envs.search.env import FORMAT_INSTRUCTION, INSTRUCTION  # noqa: E402
from seedbench.training.rundir import read_jsonl  # noqa: E402
from seedbench.training.trainer import train  # noqa: E402


def test_seed_runs_one_iteration_on_search(tmp_path):
    config = build_config(overrides={
        "env": "search", "agent": "seed", "model": {"name": "tiny"}, "iterations": 1, "output": str(tmp_path / "run"),
        "env_kwargs": {"kb_size": "small", "max_turns": 1},
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 1, "group_size": 2, "history_length": 1},
        "eval": {"num_tasks": 1}, "algo": {"analysis_max_new_tokens": 4}})
    path = Path(train(config))
    metrics = list(read_jsonl(path / "metrics.jsonl"))
    assert len(metrics) == 1 and metrics[0]["rollout/dropped_episodes"] == 0
    assert 1.0 <= metrics[0]["rollout/episode_length"] <= 2.0  # max_turns 1 + the final answer turn
    episodes = [e for e in read_jsonl(path / "episodes.jsonl") if e["phase"] == "train"]
    prompt = episodes[0]["steps"][0]["prompt"]
    assert prompt.startswith(INSTRUCTION) and prompt.endswith(FORMAT_INSTRUCTION) and "<action>" not in prompt
    assert episodes[0]["task_type"] in ("single-hop", "bridge", "comparison")
