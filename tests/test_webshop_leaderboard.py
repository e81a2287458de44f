"""A seedbench run of WebShop (tiny model, one update) is accepted by the shipped WebShop board.

The shipped board (`leaderboards/webshop-v0__qwen2.5-3b__150it`) is for Qwen2.5-3B at 150 updates and
three seeds; the test copies it with only the model, budget and seed count changed to the tiny run's,
so everything the env decides (env id, split, metrics incl. ``eval/test/score``, the task-list hash
with the catalogue checksum) is checked as the real board checks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytest.importorskip("bm25s", reason="WebShop needs the [webshop] extra")
pytest.importorskip("thefuzz", reason="WebShop needs the [webshop] extra")

import seedbench.leaderboard as lb  # noqa: E402
from seedbench.leaderboard.schema import board_key  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "leaderboards" / "webshop-v0__qwen2.5-3b__150it" / "board.yaml"


@pytest.mark.slow
def test_shipped_webshop_board_accepts_a_tiny_seedbench_run(tmp_path):
    from seedbench.config import build_config
    from seedbench.training.trainer import train

    run = train(build_config(overrides={
        "env": "webshop", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "output": str(tmp_path / "run"),
        "rollout": {"max_steps": 2, "max_new_tokens": 2, "tasks_per_batch": 1, "group_size": 2},
        "eval": {"num_tasks": 2}, "save_final_model": False}))
    evals = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()]
    assert evals[-1]["split"] == "test" and evals[-1]["task_ids"] == ["goal-0", "goal-1"]
    assert evals[-1]["score"] == 0.0  # two tokens per answer never buy anything

    board = yaml.safe_load(SHIPPED.read_text())
    assert board["env_id"] == "seedbench/WebShop-v0" and "eval/test/score" in board["metrics"]
    board.update(model="tiny", budget={"iterations": 1, "tasks_per_batch": 1, "group_size": 2}, min_seeds=1)
    root = tmp_path / "leaderboards"
    folder = root / board_key(board["env"], board["env_id"], board["model"], board["budget"])
    folder.mkdir(parents=True)
    (folder / "board.yaml").write_text(yaml.safe_dump(board, sort_keys=False))

    submitted = lb.submit([run], root=root, method="GRPO (tiny)", authors=["Ada"], compute="CPU")
    assert [str(p) for p in lb.load_catalogue(root).problems] == []
    summary = json.loads((submitted / "summary.json").read_text())
    final = summary["seeds"][0]["final"]
    assert final["eval/test/score"] == 0.0 and final["eval/test/success_micro"] == 0.0
    assert summary["protocol"]["data_checksum"] and summary["env_id"] == "seedbench/WebShop-v0"
