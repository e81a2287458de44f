"""The benchmark scripts run end to end on the tiny model and write the ratios they print."""

import json

import pytest

from tests.benchmark_loader import load_benchmark as _load




def test_iteration_speed_prices_every_agent_against_grpo(tmp_path, capsys):
    bench = _load("iteration_speed")
    out = tmp_path / "speed"
    assert bench.main(["--env", "choice", "--model", "tiny", "--iterations", "1", "--output", str(out),
                       "--agents", "grpo", "seed", "gigpo",
                       "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=2", "rollout.group_size=2"]) == 0
    result = json.loads((out / "iteration_speed.json").read_text())
    summary, ratios = result["summary"], result["ratios_to_grpo"]
    assert set(summary) == set(ratios) == {"grpo", "seed", "gigpo"}
    grpo = summary["grpo"]
    assert grpo["samples"] == 4  # 2 tasks x 2 episodes of one step
    assert grpo["update_s_per_sample"] == pytest.approx(grpo["time/update_s"] / 4)
    assert ratios["grpo"]["iteration"] == pytest.approx(1.0) and ratios["grpo"]["iteration_at_grpo_work"] == pytest.approx(1.0)
    seed = summary["seed"]
    expected = (grpo["time/rollout_s"] + seed["time/prepare_s"] + seed["update_s_per_sample"] * 4) / grpo["time/iteration_s"]
    assert ratios["seed"]["iteration_at_grpo_work"] == pytest.approx(expected)
    assert "time/analysis_s" in seed["iterations"][0] and "x grpo (equal work)" in capsys.readouterr().out
