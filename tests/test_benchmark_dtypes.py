"""Every benchmark that builds a trainer, a policy or an engine pins the dtype it claims (``--dtype``; for bf16
training passes also ``--bf16-compute``) and prints the one it ran as one ``dtype: …`` line, the same as its
JSON's ``dtype``, ``bf16_compute`` and ``precision``.

The tiny model always computes in fp32 (exact tests); `tiny_as_asked` lets it compute in the ``model.dtype``
asked for, so that the bf16 lines are checked on it too."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.benchmark_loader import load_benchmark

TINY = ["--config", "", "--model", "tiny", "--set", "env=choice", "rollout.max_new_tokens=3",
        "rollout.tasks_per_batch=2", "rollout.group_size=2"]
COPY, AUTOCAST = "bfloat16 (bf16 compute copy)", "bfloat16 (autocast over fp32 weights)"


@pytest.fixture
def tiny_as_asked(monkeypatch):
    """`load_policy` with the tiny model's compute dtype the one ``model.dtype`` asks for (not always fp32),
    for the benchmarks that load a policy themselves and for the trainer's."""
    from seedbench.models import policy as policy_module
    from seedbench.training import build

    real = policy_module.load_policy

    def load_policy(config, **kwargs):
        policy = real(config, **kwargs)
        policy.compute_dtype = policy_module.resolve_dtype(config.dtype, policy.device)
        return policy

    monkeypatch.setattr(policy_module, "load_policy", load_policy)
    monkeypatch.setattr(build, "load_policy", load_policy)


def dtype_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("dtype:")]


def ran(record: dict) -> tuple:
    return record["dtype"], record["bf16_compute"], record["precision"]


# -- the shared helper (benchmarks/update_speed.py) ----------------------------------------------------------


def test_the_line_names_the_dtype_and_for_bf16_training_passes_how_they_ran(capsys):
    bench = load_benchmark("update_speed")
    assert bench.precision(torch.float32) == {"dtype": "float32", "bf16_compute": None, "precision": "float32"}
    assert bench.precision(None, "param_copy")["precision"] == "float32"  # fp32 runs ignore model.bf16_compute
    assert bench.precision(torch.bfloat16, "param_copy") == {"dtype": "bfloat16", "bf16_compute": "param_copy",
                                                             "precision": COPY}
    assert bench.precision("bfloat16", "autocast")["precision"] == AUTOCAST
    assert bench.precision(torch.bfloat16)["precision"] == "bfloat16"  # generation only: no training pass
    assert bench.print_precision(bench.precision(torch.bfloat16, "autocast"), "; TRL bfloat16")["dtype"] == "bfloat16"
    assert dtype_lines(capsys) == [f"dtype: {AUTOCAST}; TRL bfloat16"]


def test_a_policys_auto_mode_is_the_copy_as_an_unsharded_trainer_settles_it():
    bench = load_benchmark("update_speed")
    policy = SimpleNamespace(compute_dtype=torch.bfloat16, bf16_compute="auto")
    assert bench.policy_precision(policy)["precision"] == COPY
    assert bench.policy_precision(SimpleNamespace(compute_dtype=torch.bfloat16, bf16_compute="autocast")) == {
        "dtype": "bfloat16", "bf16_compute": "autocast", "precision": AUTOCAST}
    assert bench.policy_precision(policy, training=False)["precision"] == "bfloat16"


def test_a_runs_precision_is_read_from_its_summary_and_printed_once(tmp_path, capsys):
    bench = load_benchmark("update_speed")
    assert bench.run_precision(tmp_path) is None and bench.announce_run_precision(tmp_path, None) is None
    (tmp_path / "summary.json").write_text(json.dumps({"machine": {"compute_dtype": "bfloat16",
                                                                   "bf16_compute": "autocast"}}))
    first = bench.announce_run_precision(tmp_path, None)
    assert bench.announce_run_precision(tmp_path, first) is first and first["precision"] == AUTOCAST
    assert dtype_lines(capsys) == [f"dtype: {AUTOCAST}"]


# -- the benchmarks, end to end on tiny shapes -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("dtype, mode, line", [("fp32", "param_copy", "float32"), ("bf16", "param_copy", COPY),
                                               ("bf16", "autocast", AUTOCAST)], ids=["fp32", "bf16-copy", "bf16-autocast"])
def test_update_speed(tmp_path, capsys, tiny_as_asked, dtype, mode, line):
    bench = load_benchmark("update_speed")
    out = tmp_path / "update.json"
    assert bench.main(["--dtype", dtype, "--bf16-compute", mode, *TINY, "--repeats", "1", "--seed-repeats", "0",
                       "--batch", str(tmp_path / "batch.pkl"), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert ran(result) == ("float32" if dtype == "fp32" else "bfloat16", None if dtype == "fp32" else mode, line)
    assert result["batch"]["dtype"] == result["dtype"] and dtype_lines(capsys) == [f"dtype: {line}"]


@pytest.mark.slow
def test_loss_aggregation(tmp_path, capsys, tiny_as_asked):
    bench = load_benchmark("loss_aggregation")
    out = tmp_path / "agg.json"
    assert bench.main(["--dtype", "bf16", *TINY, "--batch", str(tmp_path / "batch.pkl"), "--out", str(out)]) == 0
    assert ran(json.loads(out.read_text())) == ("bfloat16", "param_copy", COPY)  # --bf16-compute auto
    assert dtype_lines(capsys) == [f"dtype: {COPY}"]


@pytest.mark.slow
def test_iteration_speed(tmp_path, capsys, tiny_as_asked):
    bench = load_benchmark("iteration_speed")
    out = tmp_path / "speed"
    assert bench.main(["--env", "choice", "--model", "tiny", "--iterations", "1", "--output", str(out), "--agents",
                       "grpo", "--dtype", "bf16", "--bf16-compute", "autocast", "--set", "rollout.max_new_tokens=3",
                       "rollout.tasks_per_batch=1", "rollout.group_size=2"]) == 0
    result = json.loads((out / "iteration_speed.json").read_text())
    assert ran(result) == ("bfloat16", "autocast", AUTOCAST) and result["dtypes"] == {"grpo": "bfloat16"}
    assert dtype_lines(capsys) == [f"dtype: {AUTOCAST}"]


@pytest.mark.slow
def test_engine_speed(tmp_path, capsys, tiny_as_asked):
    """Both engines generate in bf16; the trainer's recomputation it compares with runs under autocast."""
    bench = load_benchmark("engine_speed")
    out = tmp_path / "engine.json"
    assert bench.main(["--model", "tiny", "--dtype", "bf16", "--engines", "hf", "--batch", "2", "--max-new-tokens", "2",
                       "--repeats", "1", "--greedy-prompts", "1", "--out", str(out)]) == 0
    assert ran(json.loads(out.read_text())) == ("bfloat16", "autocast", AUTOCAST)
    assert dtype_lines(capsys) == [f"dtype: {AUTOCAST}"]


@pytest.mark.slow
def test_rollout_speed(tmp_path, capsys, tiny_as_asked):
    bench = load_benchmark("rollout_speed")
    out = tmp_path / "rollout.json"
    assert bench.main(["--model", "tiny", "--dtype", "bf16", "--engines", "hf", "--envs", "alfworld-sized",
                       "--schedules", "lockstep", "--tasks", "1", "--group", "2", "--max-new-tokens", "2",
                       "--alfworld-steps", "3", "--env-latency-ms", "0", "--repeats", "1", "--out", str(out)]) == 0
    assert ran(json.loads(out.read_text())) == ("bfloat16", None, "bfloat16")  # generation only
    assert dtype_lines(capsys) == ["dtype: bfloat16"]


@pytest.mark.slow
def test_scoring_speed(tmp_path, capsys, tiny_as_asked):
    bench = load_benchmark("scoring_speed")
    out = tmp_path / "scoring.json"
    bench.main(["--model", "tiny", "--dtype", "bf16", "--samples", "2", "--response-tokens", "2", "--repeats", "1",
                "--out", str(out)])
    assert ran(json.loads(out.read_text())) == ("bfloat16", "autocast", AUTOCAST)
    assert dtype_lines(capsys) == [f"dtype: {AUTOCAST}"]


@pytest.mark.slow
@pytest.mark.parametrize("dtype, name, size", [("fp32", "float32", 4), ("bf16", "bfloat16", 2)])
def test_decode_floor_decodes_and_prices_its_floor_in_the_dtype_asked(tmp_path, capsys, tiny_as_asked, monkeypatch,
                                                                       dtype, name, size):
    bench = load_benchmark("decode_floor")
    monkeypatch.setattr(bench, "read_bandwidth_gbs", lambda: 10.0)  # not a 1 GiB read in a test
    out = tmp_path / "decode.json"
    assert bench.main(["--model", "tiny", "--dtype", dtype, "--batches", "2", "--group", "2", "--new-tokens", "3",
                       "--repeats", "1", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert ran(record) == (name, None, name) and dtype_lines(capsys) == [f"dtype: {name}"]
    from seedbench.models.tiny import tiny_model

    model = tiny_model()
    assert record["weight_bytes"] == size * sum(p.numel() for p in model.parameters())
    assert record["kv_bytes_per_token"] == bench.kv_bytes_per_token(model.config, size)


@pytest.mark.slow
def test_peak_memory_pins_the_runs_dtype_and_prints_the_one_it_ran(tmp_path, capsys):
    """A `seedbench run` in a child process: its precision is read from its own summary.json."""
    bench = load_benchmark("peak_memory")
    out = tmp_path / "peak.json"
    assert bench.main(["--quick", "--dtype", "fp32", "--bf16-compute", "autocast", "--out", str(out), "--",
                       "--model", "tiny", "--env", "choice", "--set", "rollout.tasks_per_batch=1",
                       "rollout.group_size=2", "rollout.max_new_tokens=3"]) == 0
    record = json.loads(out.read_text())
    assert "--set model.dtype=fp32 model.bf16_compute=autocast" in record["run_command"]
    assert ran(record) == ("float32", None, "float32") and dtype_lines(capsys) == ["dtype: float32"]


@pytest.mark.slow
def test_quickstart_speed_prints_the_first_runs_precision_and_keeps_every_variants(tmp_path, capsys):
    bench = load_benchmark("quickstart_speed")
    out = tmp_path / "qs.json"
    assert bench.main(["--agent", "grpo", "--env", "choice", "--model", "tiny", "--config", "", "--variants",
                       "optimised", "--dtype", "fp32", "--bf16-compute", "autocast", "--set",
                       "rollout.tasks_per_batch=1", "rollout.group_size=2", "rollout.max_new_tokens=3",
                       "eval.num_tasks=1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert ran(result) == ran(result["variants"]["optimised"]) == ("float32", None, "float32")
    assert dtype_lines(capsys) == ["dtype: float32"]


@pytest.mark.slow
def test_trl_update_in_bf16_pins_autocast_as_trl_runs_it(tmp_path, capsys, tiny_as_asked):
    pytest.importorskip("trl")  # the [bench] extra
    bench = load_benchmark("trl_update")
    out = tmp_path / "trl.json"
    assert bench.main([*TINY, "--dtype", "bf16", "--repeats", "1", "--batch", str(tmp_path / "batch.pkl"),
                       "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert ran(result) == ("bfloat16", "autocast", AUTOCAST) and result["dtypes"]["trl"] == "bfloat16"
    assert dtype_lines(capsys) == [f"dtype: {AUTOCAST}; TRL bfloat16"]


@pytest.mark.slow
def test_gpu_check_prints_the_parts_and_the_iterations_precision(tmp_path):
    """bf16 by design: the update part under autocast, the iterations through the bf16 compute copy (each
    iteration's own precision comes from its run's summary.json, `run_precision` above)."""
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "gpu_check.json"
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "gpu_check.py"), "--tiny", "--parts", "update",
                           "--out", str(out)], env=dict(os.environ, PYTHONPATH=str(root / "src")),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [line for line in proc.stdout.splitlines() if line.startswith("dtype:")] == [
        f"dtype: {AUTOCAST}; iterations {COPY}"]
    record = json.loads(out.read_text())
    assert ran(record["precision"]) == ("bfloat16", "autocast", AUTOCAST)
    assert record["models"]["qwen2-tiny"]["model"]["precision"] == AUTOCAST  # as loaded
