"""Run provenance: the env's data checksum, the one task-list hash, eval_tasks.json, plugin versions, and
a real tiny training run that passes leaderboard validation with a data checksum."""

import hashlib
import json
from datetime import date

import pytest
import yaml

import seedbench.leaderboard as lb
from seedbench.config import build_config
from seedbench.envs.choice import TwoChoiceEnv
from seedbench.provenance import env_provenance, task_list_hash
from seedbench.registry import make_env
from seedbench.training.rundir import package_versions
from seedbench.training.trainer import train


def test_task_list_hash_covers_ids_in_order_and_the_data_checksum():
    expected = hashlib.sha256(b'{"data_checksum":"abc","task_ids":["t-0","t-1"]}').hexdigest()[:16]
    assert task_list_hash(["t-0", "t-1"], "abc") == expected
    assert task_list_hash(["t-1", "t-0"], "abc") != expected
    assert task_list_hash(["t-0", "t-1"], "abd") != expected  # same ids, other data
    with pytest.raises(ValueError, match="data checksum"):
        task_list_hash(["t-0"], None)


def test_generator_provenance_changes_with_version_kwargs_and_class():
    default = make_env("choice").provenance()
    assert default["data_source"] == "procedural" and default["generator_version"] == "1"
    assert make_env("choice").provenance() == default  # stable across instances
    assert make_env("choice", rewarded="left").provenance()["manifest_checksum"] != default["manifest_checksum"]

    class Regenerated(TwoChoiceEnv):
        generator_version = "2"

    assert Regenerated().provenance()["manifest_checksum"] != TwoChoiceEnv().provenance()["manifest_checksum"]
    assert make_env("sokoban").provenance()["manifest_checksum"] != default["manifest_checksum"]


def test_env_provenance_rejects_an_incomplete_record():
    class Broken(TwoChoiceEnv):
        def provenance(self):
            return {"data_source": "procedural", "manifest_checksum": None, "generator_version": "1"}

    with pytest.raises(ValueError, match="Broken.provenance.. must give non-empty strings .*missing or empty: manifest_checksum"):
        env_provenance(Broken())


# The generators' output, pinned. When one of these fails, a (split, seed) now gives another task: bump the
# env's `generator_version` (so runs on the old and new tasks never share a task-list hash), then update
# the pin here.
GENERATOR_PINS = {"choice": ("1", "bad31de01665fed8"), "sokoban": ("1", "da2f21e4f893d497")}


@pytest.mark.parametrize("alias", sorted(GENERATOR_PINS))
def test_generated_tasks_match_their_generator_version(alias):
    env = make_env(alias)
    tasks = []
    for split in env.splits:
        for seed in range(4):
            observation, info = env.reset(seed=seed, options={"split": split})
            tasks.append([observation, info["task"], info["task_id"], info["task_type"], info["admissible_actions"]])
    digest = hashlib.sha256(json.dumps(tasks).encode()).hexdigest()[:16]
    version, pinned = GENERATOR_PINS[alias]
    assert (env.generator_version, digest) == (version, pinned), (
        f"{alias}: the generated tasks changed; bump {type(env).__name__}.generator_version and the pin")


def test_package_versions_include_plugin_distributions(tmp_path, monkeypatch):
    for name, version, entry_points in (("guess-env", "0.3", "[seedbench.envs]\nguess = guess_env:entry\n"),
                                        ("unrelated", "1.0", "[console_scripts]\nunrelated = unrelated:main\n")):
        dist = tmp_path / f"{name.replace('-', '_')}-{version}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        (dist / "entry_points.txt").write_text(entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    versions = package_versions()
    assert versions["guess-env"] == "0.3" and "unrelated" not in versions
    assert versions["torch"] and versions["seedbench"]


def test_package_versions_cover_every_installed_requirement_and_extra():
    from importlib import metadata

    from seedbench.training.rundir import _requirement_name

    assert _requirement_name('textworld[pddl]==1.7.0; extra == "alfworld"') == "textworld"
    assert _requirement_name("bm25s>=0.2.6") == "bm25s" and _requirement_name("tokenizers") == "tokenizers"
    versions = package_versions()
    for requirement in metadata.requires("seedbench"):
        name = _requirement_name(requirement)
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            assert name not in versions
        else:
            assert versions[name] == installed, name


def test_a_real_tiny_run_records_its_provenance_and_passes_leaderboard_validation(tmp_path):
    out = train(build_config(overrides={
        "env": "choice", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1, "seed": 0,
        "output": str(tmp_path / "runs" / "grpo" / "s0"), "eval": {"num_tasks": 4},
        "rollout": {"max_new_tokens": 3, "tasks_per_batch": 2, "group_size": 2}}))
    summary = json.loads((out / "summary.json").read_text())
    checksum = TwoChoiceEnv().provenance()["manifest_checksum"]
    assert summary["protocol"]["data_checksum"] == checksum and summary["data"]["data_source"] == "procedural"
    ids = [f"choice-{k}" for k in range(4)]  # task k of a split is reset(seed=k): choice-k
    assert summary["eval_task_ids"] == {"test": ids}
    assert summary["eval_task_hash"] == {"test": task_list_hash(ids, checksum)}
    import torch

    machine = summary["machine"]  # the tiny model trains in fp32 on the CPU, with this process's threads
    assert (machine["device"], machine["compute_dtype"], machine["torch_threads"]) == (
        "cpu", "float32", torch.get_num_threads())
    evals = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    assert {r["task_list_hash"] for r in evals} == {summary["eval_task_hash"]["test"]}
    tasks = json.loads((out / "eval_tasks.json").read_text())
    assert tasks["data"] == summary["data"]
    assert tasks["splits"]["test"] == {"task_list_hash": summary["eval_task_hash"]["test"], "tasks": [
        {"split": "test", "seed": k, "task_id": f"choice-{k}", "task_type": "choice"} for k in range(4)]}

    root = tmp_path / "leaderboards"
    board = root / "twochoice-v0__tiny__1it"
    board.mkdir(parents=True)
    metric = "eval/test/success_micro"
    (board / "board.yaml").write_text(yaml.safe_dump({
        "title": "TwoChoice · tiny · 1 update", "env": "choice", "env_id": "seedbench/TwoChoice-v0", "model": "tiny",
        "budget": {"iterations": 1}, "splits": ["test"], "primary_metric": metric, "metrics": [metric],
        "min_seeds": 1, "eval_task_hash": {"test": task_list_hash(ids, checksum)}}))
    folder = lb.submit([tmp_path / "runs" / "grpo"], root=root, method="GRPO", authors=["Ada"], when=date(2026, 1, 2))
    assert lb.main(["validate", "--root", str(root)]) == 0
    submitted = json.loads((folder / "summary.json").read_text())
    assert submitted["protocol"]["data_checksum"] == checksum
    assert submitted["eval_task_ids"] == {"test": ids}


def test_package_versions_from_a_source_tree_that_was_never_installed(monkeypatch):
    """PYTHONPATH=src without `pip install` (the GPU check): no crash; seedbench is marked as a source tree
    and the tree's declared requirements (here torch and pyyaml) are still recorded."""
    from importlib import metadata

    from seedbench import __version__

    real = metadata.version

    def without_seedbench(name, *args):
        if name == "seedbench":
            raise metadata.PackageNotFoundError(name)
        return real(name, *args)

    def requires(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "requires", requires)
    monkeypatch.setattr(metadata, "version", without_seedbench)
    versions = package_versions()
    assert versions["seedbench"] == f"{__version__} (source tree, not installed)"
    assert versions["torch"] == real("torch") and versions["pyyaml"] == real("pyyaml")
