"""The update benchmarks run end to end on tiny shapes and write the figures they print."""

import json

import pytest

from tests.benchmark_loader import load_benchmark as _load

TINY = ["--config", "", "--model", "tiny", "--set", "env=choice", "rollout.max_new_tokens=3",
        "rollout.tasks_per_batch=2", "rollout.group_size=2"]



def test_update_speed_compares_variants_on_one_recorded_batch(tmp_path, capsys):
    bench = _load("update_speed")
    out, batch = tmp_path / "update.json", tmp_path / "batch.pkl"
    assert bench.main([*TINY, "--repeats", "1", "--seed-repeats", "1", "--batch", str(batch), "--out", str(out),
                       "--forward-batch-sizes", "4"]) == 0
    result = json.loads(out.read_text())
    assert batch.is_file() and result["batch"]["samples"] == 4  # 2 tasks x 2 episodes of one step
    assert set(result["speedup_vs_plain"]) == {"plain", "optimised", "optimised_forward4"}
    assert result["speedup_vs_plain"]["plain"] == pytest.approx(1.0)
    for variant in ("optimised", "optimised_forward4"):  # the same update up to float summation order
        difference = result["parameter_difference_vs_plain"][variant]
        assert 0 < difference["largest_change"] and difference["max_abs"] < 1e-6
    assert result["seed_vs_grpo"]["ratio"] > 0 and len(result["seed_vs_grpo"]["seed_s"]) == 1
    assert "load average" in capsys.readouterr().out


def test_a_variant_sets_its_switches_for_its_own_update_only(tmp_path):
    """What a variant leaves out, the recipe decides: the optimised variant runs the recipe's
    ``optim.forward_batch_size`` even after a variant that set another."""
    bench = _load("update_speed")
    args = bench.parse_args([*TINY, "optim.forward_batch_size=4"])
    trainer = bench.make_trainer(args, "grpo", tmp_path)
    trajectories, rewards = bench.record_batch(trainer, tmp_path / "batch.pkl")
    prepared = trainer.agent.prepare(trajectories, rewards, 1)
    initial = {k: v.detach().clone() for k, v in trainer.policy.model.state_dict().items()}
    seen = []
    real_update = trainer.update
    trainer.update = lambda *a: seen.append(trainer.config.optim.forward_batch_size) or real_update(*a)
    for name in ("plain", "optimised"):
        bench.timed_update(trainer, initial, prepared, trajectories, bench.VARIANTS[name])
    assert seen == [None, 4] and trainer.config.optim.forward_batch_size == 4
    trainer.close()


@pytest.mark.parametrize("dtype, mode", [("fp32", "auto"), ("bf16", "autocast"), ("bf16", "param_copy")])
def test_the_replay_benchmarks_pin_the_trainers_dtype(tmp_path, dtype, mode):
    """``--dtype`` reaches the trainer's ``model.dtype`` (the TRL comparison once ran seedbench at ``auto``, bf16
    on an AMX CPU, against TRL's fp32) and ``--bf16-compute`` its ``model.bf16_compute``; ``--set model.dtype=...``
    and ``--set model.bf16_compute=...`` still win. Each script's printed line: tests/test_benchmark_dtypes.py."""
    bench = _load("update_speed")
    args = bench.parse_args(["--dtype", dtype, "--bf16-compute", mode, *TINY])
    trainer = bench.make_trainer(args, "grpo", tmp_path / dtype)
    assert (trainer.config.model.dtype, trainer.config.model.bf16_compute) == (dtype, mode)
    assert bench.ran_dtype(trainer) == "float32"  # the tiny model always computes in fp32 (exact tests)
    assert trainer.policy.bf16_compute == ("param_copy" if mode == "auto" else mode)  # settled by the trainer
    trainer.close()
    args = bench.parse_args(["--dtype", dtype, "--bf16-compute", mode, *TINY, "model.dtype=fp16",
                             "model.bf16_compute=autocast"])
    config = bench.make_trainer(args, "grpo", tmp_path / "set").config
    assert (config.model.dtype, config.model.bf16_compute) == ("fp16", "autocast")


def test_trl_update_says_how_to_install_trl_when_missing(monkeypatch, capsys):
    bench = _load("trl_update")
    monkeypatch.setattr(bench, "trl_available", lambda: False)
    assert bench.main(["--model", "tiny"]) == 2
    assert "pip install 'seedbench[bench]'" in capsys.readouterr().err


def test_trl_update_feeds_trl_the_same_tokens(tmp_path, capsys):
    pytest.importorskip("trl")  # the [bench] extra; the message above covers its absence
    bench = _load("trl_update")
    out = tmp_path / "trl.json"
    assert bench.main([*TINY, "--repeats", "1", "--batch", str(tmp_path / "batch.pkl"), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["dtypes"] == {"seedbench": "float32", "trl": "float32"}  # --dtype fp32, the default
    assert (result["dtype"], result["bf16_compute"], result["precision"]) == ("float32", None, "float32")
    assert result["sequences"] == 4 and result["tokens"] == result["trl_tokens"] > 0
    assert set(result["median_s"]) == {"seedbench_plain", "seedbench_optimised", "trl"}
    assert all(value > 0 for value in result["median_s"].values())
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("dtype:")] == [
        "dtype: float32; TRL float32"]


def test_analysis_speed_times_both_prefills_on_the_same_prompts(tmp_path, capsys):
    bench = _load("analysis_speed")
    out, batch = tmp_path / "analysis.json", tmp_path / "batch.pkl"
    tiny = [*TINY, "algo.analysis_max_new_tokens=6"]
    assert bench.main([*tiny, "--repeats", "1", "--batch", str(batch), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["trajectories"] == 4 and len(result["prompt_tokens"]) == 4 and min(result["prompt_tokens"]) > 20
    assert result["answers_equal"] is True  # the prefill switch changes no greedy answer
    assert set(result["median_s"]) == set(result["prefill_median_s"]) == {"padded", "per_prompt"}
    assert all(len(v) == 1 and v[0] > 0 for v in result["prefill_seconds"].values())
    assert (result["dtype"], result["bf16_compute"], result["precision"]) == ("float32", None, "float32")
    printed = capsys.readouterr().out
    assert "its prefill alone" in printed and printed.startswith("dtype: float32\n")  # generation only: no mode


def test_prefill_speed_generates_each_recorded_step_both_ways(tmp_path, capsys):
    bench = _load("prefill_speed")
    out, batch = tmp_path / "prefill.json", tmp_path / "batch.pkl"
    assert bench.main([*TINY, "--repeats", "2", "--batch", str(batch), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert len(result["prompt_tokens"]) == 1 and len(result["prompt_tokens"][0]) == 4  # one step of 4 episodes
    assert result["outputs_equal"] is True and result["max_new_tokens"] == 3
    assert all(len(v) == 2 and min(v) > 0 for v in result["seconds"].values())
    assert (result["dtype"], result["bf16_compute"], result["precision"]) == ("float32", None, "float32")
    printed = capsys.readouterr().out
    assert "outputs equal: True" in printed and printed.startswith("dtype: float32\n")


def test_few_row_linear_times_both_forms_of_the_same_product(tmp_path, capsys):
    bench = _load("few_row_linear")
    out = tmp_path / "few.json"
    assert bench.main(["--matrices", "k_v,q_o", "--rows", "2,4", "--dtypes", "float32", "--repeats", "1",
                       "--out", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    assert [(r["matrix"], r["rows"]) for r in results] == [("k_v", 2), ("k_v", 4), ("q_o", 2), ("q_o", 4)]
    assert all(r["x_wt_ms"] > 0 and r["w_xt_ms"] > 0 and r["max_relative_difference"] < 1e-5 for r in results)
    assert "(W@x^T)^T" in capsys.readouterr().out


def test_bf16_speed_prints_every_part_in_both_dtypes(tmp_path, capsys):
    """At tiny size: every part timed fp32 and bf16, the CPU's flags, the update's FLOPs and its share of
    the bf16 GEMM rate, the dtype each side ran (the tiny model always runs fp32, so both say float32)."""
    bench = _load("bf16_speed")
    out = tmp_path / "bf16.json"
    argv = ["--tokens", "16", "--repeats", "1", "--batch", str(tmp_path / "batch.pkl"), "--out", str(out), *TINY]
    assert bench.main(argv) == 0
    result = json.loads(out.read_text())
    assert set(result["cpu"]) >= {"amx_bf16", "avx512_bf16", "avx2", "model_name"}
    assert result["dtypes"] == {"fp32": "float32", "bf16": "float32"}
    assert set(result["gemm"]) == {"16x64x128", "16x128x64", "16x64x64", "decode 16x64x128"}  # tiny: 64, MLP 128
    for part in (*result["gemm"].values(), result["hf"]["forward_backward"], result["scoring"],
                 *result["update"].values()):
        assert all(len(v) == 1 and v[0] > 0 for v in part["seconds"].values())
        assert part["bf16_speedup"] == pytest.approx(part["median_s"]["fp32"] / part["median_s"]["bf16"])
    for part in result["hf"].values():  # the bare model's passes in the update's three sides
        assert set(part["seconds"]) == {"fp32", "bf16", "param_copy"}
        assert part["param_copy_speedup"] == pytest.approx(part["median_s"]["fp32"] / part["median_s"]["param_copy"])
    plain, optimised = result["update"]["plain"], result["update"]["optimised"]
    for part in (plain, optimised):  # the update's third side: the bf16 compute copy, wall and CPU seconds
        assert set(part["seconds"]) == set(part["cpu_seconds"]) == {"fp32", "bf16", "param_copy"}
        for runs in part["pass_seconds"].values():  # the update's split by pass (seedbench.training.pass_clock)
            assert len(runs) == 1 and runs[0]["time/update_forward_s"] > 0 and runs[0]["time/update_backward_s"] > 0
        assert part["param_copy_vs_autocast"] == pytest.approx(part["median_s"]["bf16"] / part["median_s"]["param_copy"])
    assert plain["gflop"] > optimised["gflop"] > 0  # the optimised update skips the π_old pass and the padding
    assert optimised["bf16_share_of_bf16_gemm_rate"] == pytest.approx(
        optimised["gflop_per_s"]["bf16"] / result["bf16_gemm_gflop_per_s"])
    printed = capsys.readouterr().out
    assert "amx_bf16=" in printed and "dtypes ran: fp32 side float32, bf16 side float32" in printed
    assert "bf16 compute copy" in printed.split("HF forward+backward")[1].splitlines()[1]
    assert "passes, param_copy (s): old_logprobs " in printed


def test_update_flops_count_the_layouts_tokens():
    """FLOPs by hand for two samples: padded rows count their padding, the shared prefix once."""
    bench = _load("bf16_speed")
    assert bench.layout_tokens([[1, 2, 3], [1, 2]], [[4], [5, 6]], "off") == 2 * (3 + 2)
    assert bench.layout_tokens([[1, 2, 3], [1, 2]], [[4], [5, 6]], "packed") == 4 + 4
    assert bench.layout_tokens([[1, 2, 3], [1, 2, 7]], [[4], [5]], "shared_prefix") == 2 + 2 + 2


def test_bf16_speed_times_the_warm_start_sft_on_three_sides(tmp_path, capsys):
    """The sft part fine-tunes the same expert steps from the same weights on every side (fp32, bf16
    autocast, bf16 compute copy), timed in wall and CPU seconds."""
    bench = _load("bf16_speed")
    out = tmp_path / "bf16.json"
    tiny = [arg if arg != "env=choice" else "env=frozenlake" for arg in TINY]
    argv = ["--parts", "sft", "--sft-demos", "1", "--repeats", "1", "--out", str(out), *tiny]
    assert bench.main(argv) == 0
    sft = json.loads(out.read_text())["sft"]
    assert sft["examples"] >= 1
    assert set(sft["seconds"]) == set(sft["cpu_seconds"]) == {"fp32", "bf16", "param_copy"}
    assert all(len(v) == 1 and v[0] > 0 for v in sft["seconds"].values())
    assert sft["param_copy_vs_autocast"] == pytest.approx(sft["median_s"]["bf16"] / sft["median_s"]["param_copy"])
    assert "warm-start SFT" in capsys.readouterr().out


def test_bf16_speed_times_stage1_sft_on_a_builds_parsed_analyses(tmp_path, capsys):
    """--sft-annotations: the sft part trains on a stage-1 build's analyses, the parsed ones only (a record
    with ok=false or an unparseable answer is left out), as `seedbench sft-analyzer` does."""
    bench = _load("bf16_speed")
    answer = json.dumps({"episode_summary": "Success: reached G.", "episode_skill": "In this won episode, go right."})
    records = [{"ok": True, "raw": answer, "analyzer_prompt": "task: walk to G\nstep 1: right"},
               {"ok": True, "raw": answer, "analyzer_prompt": "task: walk to G\nstep 1: down"},
               {"ok": False, "raw": "no json here", "analyzer_prompt": "task: walk to G"}]
    annotations = tmp_path / "annotations.jsonl"
    annotations.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "bf16.json"
    argv = ["--parts", "sft", "--sft-annotations", str(annotations), "--sft-batch-size", "2", "--repeats", "1",
            "--out", str(out), *TINY]
    assert bench.main(argv) == 0
    sft = json.loads(out.read_text())["sft"]
    assert sft["examples"] == 2 and set(sft["seconds"]) == {"fp32", "bf16", "param_copy"}
    assert "stage-1 analyzer SFT (2 analyses)" in capsys.readouterr().out
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(records[2]) + "\n")
    with pytest.raises(SystemExit, match="no parsed analysis"):
        bench.main(["--parts", "sft", "--sft-annotations", str(empty), "--repeats", "1", "--out", str(out), *TINY])


def test_a_recorded_batch_is_replayed_only_for_its_own_recipe(monkeypatch, tmp_path):
    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path))
    update_speed = _load("update_speed")
    parse = update_speed.replay_parser("doc", "repeats", 1, "out.json").parse_args
    default = update_speed.batch_path(parse([]))
    assert default.name == "update_batch_smollm2-135m.pkl"
    frozenlake = ["--config", "configs/quickstart_frozenlake.yaml"]
    paths = {update_speed.batch_path(parse(argv)) for argv in (
        [], frozenlake, frozenlake + ["--set", "env=frozenlake-neighbours"], ["--model", "tiny"],
        ["--model", str(tmp_path / "checkpoint")])}
    assert len(paths) == 5 and all(p.parent == default.parent and "/" not in p.name for p in paths)
    assert str(update_speed.batch_path(parse(["--batch", "mine.pkl"]))) == "mine.pkl"
