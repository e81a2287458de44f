"""A run whose recipe asks for a warm start and SEED's stage 1 builds both once, in order, caches them by
their inputs, starts from the stage-1 checkpoint and records the chain; config.yaml keeps the recipe."""

import json
from pathlib import Path

import pytest
import yaml

from seedbench.cli import main as cli_main

pytestmark = pytest.mark.usefixtures("one_torch_thread")

RECIPE = ["--env", "frozenlake", "--agent", "seed", "--model", "tiny", "--iterations", "1", "--set",
          "warm_start.demos=2", "warm_start.lr=1e-3", "analyzer_sft.annotator=hindsight", "analyzer_sft.tasks=2",
          "analyzer_sft.group_size=2", "rollout.max_steps=8", "rollout.max_new_tokens=4", "rollout.tasks_per_batch=1",
          "eval.num_tasks=2", "algo.analysis_max_new_tokens=8", "algo.expect_analyzer_sft=false", "env_kwargs.p=0.9"]


def _built(cache: Path, kind: str) -> list[Path]:
    return sorted(p for p in (cache / "starting_models").glob(f"{kind}-*") if not p.name.startswith("."))


def test_warm_start_then_stage1_are_built_once_and_the_run_starts_from_them(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEEDBENCH_CACHE", str(cache))
    assert cli_main(["run", *RECIPE, "--output", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().out
    (warm,) = _built(cache, "warm-start")
    (stage1,) = _built(cache, "analyzer-sft")
    assert "warm-start: building it once" in first and "analyzer-sft: building it once" in first
    # the chain: stage 1 was trained from the warm start, which was trained from the base model
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    origin = summary["model"]["origin"]
    assert origin["command"] == "sft-analyzer" and origin["path"] == str((stage1 / "model").resolve())
    assert origin["provenance"]["base_origin"]["command"] == "sft-policy"
    assert origin["provenance"]["base_origin"]["path"] == str((warm / "model").resolve())
    assert origin["provenance"]["annotator"] == "hindsight"
    assert summary["model"]["source"] == str(stage1 / "model")
    # config.yaml keeps the recipe, not the cache path, so --resume and eval find the same checkpoint again
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert saved["model"]["name"] == "tiny" and saved["warm_start"]["demos"] == 2
    assert not list((cache / "starting_models").glob(".*"))  # no scratch folder left behind

    # the same recipe again: nothing is rebuilt
    assert cli_main(["run", *RECIPE, "--output", str(tmp_path / "b")]) == 0
    second = capsys.readouterr().out
    assert "building" not in second and second.count("using the cached checkpoint") == 2
    assert _built(cache, "warm-start") == [warm] and _built(cache, "analyzer-sft") == [stage1]



def test_the_cache_key_changes_with_what_decides_the_weights(tmp_path, monkeypatch):
    from seedbench.config import build_config
    from seedbench.training.starting_model import CACHE_FOLDER, base_identity, cache_key

    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path))
    base = build_config(overrides={"env": "frozenlake", "model": {"name": "tiny"}})
    key = cache_key("warm-start", base, "tiny", {"demos": 2})
    assert key == cache_key("warm-start", build_config(overrides={"env": "frozenlake", "model": {"name": "tiny"}}),
                            "tiny", {"demos": 2})
    others = [cache_key("warm-start", base, "tiny", {"demos": 3}), cache_key("analyzer-sft", base, "tiny", {"demos": 2}),
              cache_key("warm-start", base, "other", {"demos": 2}),
              cache_key("warm-start", build_config(overrides={"env": "frozenlake", "model": {"name": "tiny"},
                                                              "env_kwargs": {"p": 0.9}}), "tiny", {"demos": 2}),
              cache_key("warm-start", build_config(overrides={"env": "frozenlake", "model": {"name": "tiny"},
                                                              "rollout": {"history_length": 1}}), "tiny", {"demos": 2}),
              cache_key("warm-start", build_config(overrides={"env": "frozenlake", "model": {"name": "tiny",
                                                              "bf16_compute": "autocast"}}), "tiny", {"demos": 2}),
              cache_key("warm-start", build_config(overrides={"env": "frozenlake", "model": {"name": "tiny",
                                                              "lora_rank": 8}}), "tiny", {"demos": 2})]
    assert len({key, *others}) == 8
    # a step built on a cached checkpoint is keyed by that checkpoint's own key, not by its file sizes,
    # which two fine-tunes of one model share
    for name in ("warm-start-aaaa", "warm-start-bbbb"):
        (tmp_path / CACHE_FOLDER / name / "model").mkdir(parents=True)
        (tmp_path / CACHE_FOLDER / name / "model" / "config.json").write_text("{}")
    first = str(tmp_path / CACHE_FOLDER / "warm-start-aaaa" / "model")
    second = str(tmp_path / CACHE_FOLDER / "warm-start-bbbb" / "model")
    assert base_identity(first) == "warm-start-aaaa"
    assert cache_key("analyzer-sft", base, first, {}) != cache_key("analyzer-sft", base, second, {})


def test_a_failed_build_leaves_no_cached_checkpoint_and_no_run(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEEDBENCH_CACHE", str(cache))
    # choice has no expert: the warm start stops with one line before anything is cached or written
    rc = cli_main(["run", "--env", "choice", "--model", "tiny", "--set", "warm_start.demos=2",
                   "--output", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "has no scripted expert" in err
    # the run directory was settled before the build: it holds the config and no run, so the same command
    # meets the same error again, not "already exists"
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".lock", "config.yaml"]
    assert not [p for p in (cache / "starting_models").iterdir()]
    assert cli_main(["run", "--env", "choice", "--model", "tiny", "--set", "warm_start.demos=2",
                     "--output", str(tmp_path / "run")]) == 2
    assert "has no scripted expert" in capsys.readouterr().err


def test_an_unknown_annotator_is_one_line_before_any_build(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    rc = cli_main(["run", "--env", "frozenlake", "--model", "tiny", "--set", "warm_start.demos=2",
                   "analyzer_sft.annotator=hindsite", "--output", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "analyzer_sft.annotator: unknown 'hindsite'" in err
    assert not (tmp_path / "run").exists() and not (tmp_path / "cache" / "starting_models").exists()


def test_a_build_seed_shares_one_checkpoint_across_run_seeds():
    """`warm_start.seed` / `analyzer_sft.seed` fix the build's seed: runs of seeds 0 and 3 get one key; without
    it each run seed has its own, and the key of an unset seed is the run seed's."""
    from seedbench.config import build_config
    from seedbench.training.starting_model import build_config_of, cache_key, step_settings

    def key(run_seed, build_seed):
        config = build_config(overrides={"env": "frozenlake", "model": {"name": "tiny"}, "seed": run_seed,
                                         "warm_start": {"demos": 4, "seed": build_seed}})
        step = build_config_of(config, config.warm_start.seed)
        return cache_key("warm-start", step, "tiny", step_settings(step.warm_start))

    assert key(0, 7) == key(3, 7) == key(7, None)
    assert key(0, None) != key(3, None)


def test_sft_policy_with_the_recipe_builds_what_the_run_caches(tmp_path, monkeypatch):
    """`seedbench sft-policy --config R` takes R's warm_start section (demos, epochs, lr, batch, seed) where
    no flag is given, so it builds the checkpoint `seedbench run --config R` builds: the same weights."""
    import hashlib

    from seedbench.cli import main as cli_main
    from seedbench.config import build_config
    from seedbench.training.starting_model import warm_start_model

    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("env: frozenlake\nseed: 3\nmodel: {name: tiny}\n"
                      "warm_start: {demos: 3, epochs: 2, lr: 2.0e-3, batch_size: 4, seed: 1}\n")
    cached = warm_start_model(build_config(str(recipe)), "tiny")
    assert cli_main(["sft-policy", "--config", str(recipe), "--output", str(tmp_path / "cli")]) == 0
    built = tmp_path / "cli" / "model"
    digest = [hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest() for d in (cached, built)]
    assert digest[0] == digest[1]
    provenance = json.loads((built / "seedbench_policy_sft.json").read_text())
    assert (provenance["demos_requested"], provenance["epochs"], provenance["lr"], provenance["batch_size"],
            provenance["seed"]) == (3, 2.0, 2.0e-3, 4, 1)


def test_a_process_that_finds_a_build_under_way_waits_for_it_and_does_not_build_again(tmp_path, monkeypatch, capsys):
    """An experiment's parallel runs share one starting checkpoint: the second to ask waits on the first's
    lock (here held by the test, standing in for the other process) and then uses what it built."""
    import threading

    from seedbench.locking import exclusive_lock
    from seedbench.models.checkpoint import write_marker
    from seedbench.training.starting_model import cached_build, write_manifest

    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path))
    root = tmp_path / "starting_models"
    (tmp_path / "locks").mkdir()
    holder = exclusive_lock(tmp_path / "locks" / "warm-start-k.lock")  # the other process, mid-build
    builds, result = [], {}
    waiter = threading.Thread(target=lambda: result.update(path=cached_build("warm-start", "k", builds.append)))
    waiter.start()
    for _ in range(200):  # until the waiter has said that it waits
        if "another process is building it" in capsys.readouterr().out:
            break
        waiter.join(0.05)
    else:
        pytest.fail("cached_build did not report the build under way")
    assert waiter.is_alive() and builds == []
    landed = root / "warm-start-k" / "model"  # the other process's build lands, whole
    landed.mkdir(parents=True)
    (landed / "config.json").write_text("{}")
    write_marker(landed, "hub:base")
    write_manifest(root / "warm-start-k")
    holder.close()
    waiter.join(10)
    assert not waiter.is_alive() and builds == [] and result["path"] == root / "warm-start-k" / "model"
    assert "using the cached checkpoint" in capsys.readouterr().out
