"""Paths named inside shared files (episodes.jsonl frames, experiment specs, data-pool manifests) never
reach outside their folder: `seedbench.paths.inside`, and the viewer that copies the frames a run names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seedbench.paths import UnsafePathError, inside
from seedbench.viewer.build import build_viewer

VICTIM = "secret of another user\n"


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}


def run_with_frames(run: Path, images: list[str]) -> Path:
    """A run of one episode whose steps name the given frames."""
    run.mkdir(parents=True)
    steps = [{"step": i, "prompt": "observation", "output": "go", "action": "go", "valid": True, "reward": 0.0,
              "image": image} for i, image in enumerate(images)]
    (run / "episodes.jsonl").write_text(json.dumps({"iteration": 1, "phase": "train", "episode_id": "e0",
                                                     "group_id": 0, "won": True, "steps": steps}) + "\n")
    return run


def shown_images(out: Path) -> list[str | None]:
    text = (out / "data" / "chunk_0.js").read_text()
    (episode,) = json.loads(text[text.index(", ") + 2: text.rindex(")")])
    return [step.get("img") for step in episode["steps"]]


# -- the helper -------------------------------------------------------------------------------------------
def test_inside_accepts_paths_that_stay_and_rejects_every_way_out(tmp_path):
    base = tmp_path / "base"
    (base / "frames").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (base / "frames" / "out").symlink_to(tmp_path / "elsewhere")
    (base / "frames" / "here").symlink_to(base / "frames")
    assert inside(base, "frames/a.png") == base / "frames" / "a.png"
    assert inside(base, "frames/../b.png") == base / "frames" / ".." / "b.png"  # ".." that stays is fine
    assert inside(base, "frames/here/c.png") == base / "frames" / "here" / "c.png"  # a link that stays in
    for bad in ("../victim.txt", "frames/../../victim.txt", "/etc/passwd", str(tmp_path / "elsewhere" / "x"),
                "frames/out/x.png", "C:\\Windows\\x", "\\\\host\\share\\x", "a\x00b", "a\nb", ""):
        with pytest.raises(UnsafePathError):
            inside(base, bad)


# -- the viewer ---------------------------------------------------------------------------------------------
def test_viewer_never_reads_or_writes_outside_run_and_out_for_the_exact_reproduction(tmp_path, capsys):
    """``"image": "../../victim.txt"`` used to copy <tmp>/victim.txt over <tmp>/output/victim.txt."""
    (tmp_path / "victim.txt").write_text(VICTIM)
    shared = tmp_path / "shared"
    run = run_with_frames(shared / "run", ["../../victim.txt", "frames/ok.png"])
    (run / "frames").mkdir()
    (run / "frames" / "ok.png").write_bytes(b"png")
    out = tmp_path / "output" / "view"
    before = files_under(tmp_path)
    build_viewer(run, out)
    after = files_under(tmp_path)
    written = {name for name in after if before.get(name) != after[name]}
    assert written and all(name.startswith("output/view/") for name in written)
    assert not any(VICTIM.encode() in after[name] for name in written)
    assert shown_images(out) == [None, "frames/ok.png"]  # the bad frame is dropped, the good one kept
    assert (out / "frames" / "ok.png").read_bytes() == b"png"
    err = capsys.readouterr().err
    assert err.count("seedbench: warning: 1 step frame(s) not shown") == 1 and "../../victim.txt" in err


def test_viewer_drops_absolute_frames_and_links_out_of_the_run(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    run = run_with_frames(tmp_path / "run", [str(victim), "frames/link.png", "https:/evil.example/x.png"])
    (run / "frames").mkdir()
    (run / "frames" / "link.png").symlink_to(victim)
    (run / "https:" / "evil.example").mkdir(parents=True)
    (run / "https:" / "evil.example" / "x.png").write_bytes(b"png")
    out = tmp_path / "view"
    build_viewer(run, out)
    images = shown_images(out)
    assert images[:2] == [None, None]
    assert images[2] == "https%3A/evil.example/x.png"  # a file in the run, shown as a relative URL
    assert not any(VICTIM.encode() in data for data in files_under(out).values())
    assert "2 step frame(s) not shown" in capsys.readouterr().err


def test_viewer_in_a_shared_run_replaces_planted_links_instead_of_writing_through_them(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    run = run_with_frames(tmp_path / "run", [])
    (run / "viewer").mkdir()
    (run / "viewer" / "index.html").symlink_to(victim)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    (run / "viewer" / "data").symlink_to(elsewhere)
    page = build_viewer(run)
    assert victim.read_text() == VICTIM and (elsewhere / "keep.txt").read_text() == "keep"
    assert not page.is_symlink() and "SEEDBENCH" in page.read_text()


def test_view_cli_refuses_a_default_output_folder_that_links_out_of_the_run(tmp_path, capsys):
    from seedbench.cli import main

    run = run_with_frames(tmp_path / "run", [])
    (tmp_path / "elsewhere").mkdir()
    (run / "viewer").symlink_to(tmp_path / "elsewhere")
    assert main(["view", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seedbench: error: path 'viewer' leaves") and "Traceback" not in err
    assert os.listdir(tmp_path / "elsewhere") == []


# -- other files that name paths ----------------------------------------------------------------------------
def test_experiment_runs_named_after_spec_strings_stay_in_the_output(tmp_path):
    from seedbench.training import experiments as ex

    spec = ex.parse_spec({"envs": ["../../../escaped"], "agents": ["grpo"], "budget": {"iterations": 1}},
                         tmp_path, tmp_path / "exp")
    with pytest.raises(ex.ExperimentError, match="not a plain folder name"):
        ex.expand(spec)
    spec = ex.parse_spec({"envs": ["seedbench/Choice-v0"], "agents": ["grpo"], "budget": {"iterations": 1}},
                         tmp_path, tmp_path / "exp")
    (run,) = ex.expand(spec)  # an env id's slash makes a subfolder, which stays inside
    assert run.run_dir == tmp_path / "exp" / "seedbench" / "Choice-v0__grpo__tiny__s0"


def test_alfworld_pool_manifest_and_progress_name_files_inside_the_pool(tmp_path):
    from seedbench.envs.alfworld.data import _trial_game
    from seedbench.envs.alfworld.env import GamePool

    pool = tmp_path / "pool"
    trial = pool / "json_2.1.1" / "train" / "pick-x" / "trial_S0_000000"
    trial.mkdir(parents=True)
    (trial / "game.tw-pddl").write_text("{}")
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "game.tw-pddl").write_text("{}")
    assert _trial_game(pool, "json_2.1.1/train/pick-x/trial_S0_000000/game.tw-pddl") == trial / "game.tw-pddl"
    # a surplus trial is deleted with its folder: a record naming the victim's folder must not be kept
    for bad in ("../victim/game.tw-pddl", "json_2.1.1/../../victim/game.tw-pddl", str(tmp_path / "victim" / "game.tw-pddl"),
                "json_2.1.1/game.tw-pddl", None):
        assert _trial_game(pool, bad) is None
    games = [{"id": "a", "split": "train", "task_type": "pick", "path": "../victim/game.tw-pddl"}]
    (pool / "manifest.json").write_text(json.dumps({"games": games}))
    with pytest.raises(UnsafePathError, match="game 'a'.*leaves"):
        GamePool.from_manifest(pool)
