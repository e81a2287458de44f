"""Every member of the distillation family trains on the tiny model: two updates each, the family's loss terms
logged, no NaN anywhere; RetireOPD's two phases chained as docs/method.md §9.1 describes (phase 1's final
model and eval success feed phase 2)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SKILLS = str(Path(__file__).resolve().parents[1] / "configs" / "skills" / "frozenlake")
SELF_TEACHERS = ["sdar", "opsd", "grpo-opd", "skill-sd", "rlsd"]


def run(tmp_path: Path, agent: str, save_final_model: bool = False, **algo) -> tuple[list[dict], Path]:
    from seedbench.config import build_config
    from seedbench.training.rundir import read_jsonl
    from seedbench.training.trainer import train

    out = tmp_path / agent
    config = build_config(overrides={
        "env": "frozenlake", "agent": agent, "model": {"name": "tiny"}, "iterations": 2, "seed": 0,
        "output": str(out), "algo": {"skill_library": SKILLS, **algo}, "save_final_model": save_final_model,
        "keep_final_checkpoint": True,
        "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2, "max_steps": 2},
        "eval": {"num_tasks": 1}})
    train(config)
    metrics = list(read_jsonl(out / "metrics.jsonl"))
    assert [m["iteration"] for m in metrics] == [1, 2]
    bad = [(m["iteration"], k) for m in metrics for k, v in m.items() if isinstance(v, float) and not math.isfinite(v)]
    assert not bad, f"{agent}: non-finite metrics {bad}"
    return metrics, out


@pytest.mark.parametrize("agent", SELF_TEACHERS + ["opd"])
def test_each_distilling_member_trains_two_updates_with_its_teacher_scored(tmp_path, agent):
    metrics, _ = run(tmp_path, agent)
    for m in metrics:
        assert m["distill/teacher_scored_samples"] > 0  # the teacher re-scored this update's samples
        assert "train/loss" in m and m["distill/retired"] == 0
        if agent == "rlsd":  # no extra loss: the teacher reweights the token advantages, λ warming down from 0.5
            assert m["distill/coef"] == 0 and 0 < m["rlsd/lambda"] <= 0.5
        else:
            assert m["distill/coef"] > 0 and "distill/loss" in m


def test_retire_opd_phase_two_reads_phase_one_model_and_success(tmp_path):
    _, teacher_run = run(tmp_path, "retire-opd-teacher", save_final_model=True)
    summary = json.loads((teacher_run / "summary.json").read_text())
    records = [json.loads(line) for line in (teacher_run / "eval.jsonl").read_text().splitlines()]
    success = records[-1]["success_micro"]
    metrics, student_run = run(tmp_path, "retire-opd", teacher_model=str(teacher_run / "final_model"),
                               teacher_success=success)
    assert summary["complete"] is True
    assert all(m["distill/teacher_scored_samples"] > 0 for m in metrics)
    # neither gap nor success can satisfy the retirement rule within 2 updates (patience 3)
    assert [m["distill/retired"] for m in metrics] == [0, 0]
    config = (student_run / "config.yaml").read_text()
    assert str(teacher_run / "final_model") in config
