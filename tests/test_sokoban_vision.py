"""Sokoban with frames: tiles, the frame following the state, the same levels and rewards as text
Sokoban, the registered variants, the expert against a random agent, the Boxoban level loader, and a
tiny-model run whose run directory holds the frames by reference."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from seedbench.config import build_config
from seedbench.envs.sokoban.boxoban import BoxobanEnv, load_levels, parse_file
from seedbench.envs.checks import run_checks
from seedbench.envs.sokoban import BOX, FLOOR, PLAYER, TARGET, WALL, SokobanEnv
from seedbench.envs.sokoban.image import DEFAULT_TILE_SIZE, PLAYER_ON_TARGET, render_frame, tiles
from seedbench.frames import frame_id, is_blank, read_png
from seedbench.registry import make_env
from seedbench.training.rundir import read_jsonl
from seedbench.training.trainer import train

LEVEL = """# # # # # # #
# _ X O * # #
# X _ _ + # #
# X _ _ _ O #
# # # # # # #"""
"""Every cell kind once or more: wall, floor, box, target, box on target, player on target."""


def act(command: str) -> str:
    return f"<think>t</think><action>{command}</action>"


def cell(frame: np.ndarray, row: int, col: int, size: int = DEFAULT_TILE_SIZE) -> np.ndarray:
    return frame[row * size:(row + 1) * size, col * size:(col + 1) * size]


def test_the_seven_tiles_are_distinct_and_never_one_colour():
    stack = tiles(16)
    assert stack.shape == (7, 16, 16, 3) and stack.dtype == np.uint8
    flat = stack.reshape(7, -1)
    assert len({row.tobytes() for row in flat}) == 7
    assert all(not is_blank(tile) for kind, tile in enumerate(stack) if kind != FLOOR)
    with pytest.raises(ValueError, match="tile_size must be at least 4"):
        SokobanEnv(image=True, tile_size=3)


def test_each_cell_of_the_frame_is_the_tile_of_its_kind():
    env = SokobanEnv(image=True, dim_room=(5, 7))
    _, info = env.reset(options={"level": LEVEL})
    frame = info["image"]
    assert frame.shape == (5 * 56, 7 * 56, 3) == (*env.image_shape, 3)
    kinds = {(0, 0): WALL, (1, 1): FLOOR, (1, 2): BOX, (1, 3): TARGET, (1, 4): 3, (2, 4): PLAYER_ON_TARGET}
    for (row, col), kind in kinds.items():
        assert np.array_equal(cell(frame, row, col), tiles(56)[kind]), (row, col)


def test_the_frame_follows_the_state_cell_by_cell():
    env = SokobanEnv(image=True, dim_room=(5, 7))
    _, info = env.reset(options={"level": LEVEL})
    before = info["image"]
    # player on target (2, 4) walks left: the target reappears, the player stands on floor at (2, 3)
    _, reward, _, _, info = env.step(act("left"))
    after = info["image"]
    changed = {(r, c) for r in range(5) for c in range(7) if not np.array_equal(cell(before, r, c), cell(after, r, c))}
    assert changed == {(2, 3), (2, 4)}
    assert np.array_equal(cell(after, 2, 4), tiles(56)[TARGET]) and np.array_equal(cell(after, 2, 3), tiles(56)[PLAYER])
    assert reward == pytest.approx(-0.1)


def test_vision_sokoban_plays_the_same_levels_with_the_same_rewards_as_text_sokoban():
    text, vision = make_env("sokoban"), make_env("sokoban-vision")
    rng = random.Random(0)
    for seed in range(4):
        a = text.reset(seed=seed, options={"split": "test"})
        b = vision.reset(seed=seed, options={"split": "test"})
        assert a[0] == b[0] and a[1] == {k: v for k, v in b[1].items() if k != "image"}
        for _ in range(15):
            command = act(rng.choice(["up", "down", "left", "right", "jump"]))
            sa, sb = text.step(command), vision.step(command)
            assert sa[:4] == sb[:4] and sa[4] == {k: v for k, v in sb[4].items() if k != "image"}
            if sa[2] or sa[3]:
                break
    # the text env is untouched: no frame, no image words in its prompt
    assert text.image_shape is None and "image" not in text.instruction
    assert vision.instruction.startswith(text.instruction) and "blue disc is you" in vision.instruction


def test_rgb_array_render_mode_returns_the_frame():
    env = SokobanEnv(render_mode="rgb_array", tile_size=16)
    assert env.render() is None  # nothing to draw before reset
    env.reset(seed=1, options={"split": "train"})
    frame = env.render()
    assert frame.shape == (96, 96, 3) and np.array_equal(frame, render_frame(env.room_fixed, env.room_state, 16))
    assert isinstance(SokobanEnv(render_mode="ansi").render(), str)
    with pytest.raises(ValueError, match="render_mode must be one of"):
        SokobanEnv(render_mode="human")


@pytest.mark.parametrize("alias, shape, boxes, max_steps", [
    ("sokoban-vision", (336, 336), 1, 15),
    ("sokoban-vision-7x7", (392, 392), 1, 30),
    ("sokoban-vision-2boxes", (336, 336), 2, 30),
])
def test_registered_variants(alias, shape, boxes, max_steps):
    env = make_env(alias)
    _, info = env.reset(seed=0, options={"split": "test"})
    assert env.image_shape == shape and info["image"].shape == (*shape, 3) and env.max_steps == max_steps
    assert int(np.isin(env.room_state, (BOX, 3)).sum()) == boxes


def _play(env, seed: int, choose) -> bool:
    _, info = env.reset(seed=seed, options={"split": env.eval_split})
    for _ in range(env.max_steps):
        _, _, terminated, truncated, info = env.step(act(choose(env)))
        if terminated or truncated:
            break
    return bool(info["won"])


def test_the_expert_solves_every_sampled_level_and_a_random_agent_rarely_does():
    rng = random.Random(0)
    for alias in ("sokoban-vision", "sokoban-vision-7x7", "sokoban-vision-2boxes"):
        env = make_env(alias)
        expert = [_play(env, seed, lambda e: e.expert_plan()[0]) for seed in range(12)]
        randomly = [_play(env, seed, lambda e: rng.choice(["up", "down", "left", "right"])) for seed in range(12)]
        assert all(expert), alias
        assert sum(randomly) < 6, alias


def test_check_env_passes_on_the_paper_setting():
    results = run_checks("sokoban-vision", seeds=3, expert_tasks=3)
    assert {r.status for r in results} == {"ok"}, [r for r in results if r.status != "ok"]


# ----------------------------------------------------------------------------------------------------
# Boxoban level files

BOXOBAN_FILE = """; 0
#######
#@ $ .#
#     #
#######

; 7
#######
#.*   #
#+    #
#  $$ #
#     #
#######
"""


def test_boxoban_files_parse_into_levels(tmp_path):
    levels = parse_file(BOXOBAN_FILE, "017")
    assert [level.task_id for level in levels] == ["boxoban-017-0", "boxoban-017-7"]
    fixed, state = levels[1].room_fixed, levels[1].room_state
    assert fixed[1].tolist() == [WALL, TARGET, TARGET, FLOOR, FLOOR, FLOOR, WALL]
    assert state[1].tolist() == [WALL, TARGET, 3, FLOOR, FLOOR, FLOOR, WALL]
    assert state[2, 1] == PLAYER and fixed[2, 1] == TARGET and state[3, 3] == state[3, 4] == BOX
    assert levels[0].room_fixed.shape == (4, 7) and levels[1].room_fixed.shape == (6, 7)

    folder = tmp_path / "hard"
    folder.mkdir()
    level_7 = BOXOBAN_FILE[BOXOBAN_FILE.index("; 7"):]
    (folder / "001.txt").write_text(level_7.replace("; 7", "; 5") + "\n" + level_7.replace("; 7", "; 6"))
    (folder / "000.txt").write_text(level_7)
    assert [level.task_id for level in load_levels(folder)] == ["boxoban-000-7", "boxoban-001-5", "boxoban-001-6"]
    (folder / "002.txt").write_text(BOXOBAN_FILE)
    with pytest.raises(ValueError, match=r"several room sizes \[\(4, 7\), \(6, 7\)\]; use one size per env"):
        load_levels(folder)


@pytest.mark.parametrize("text, words", [
    ("#####\n#@$.#\n#####\n", "room rows before the first '; N' header line"),
    ("; 0\n#####\n#@$x#\n#####\n", "unknown Boxoban symbol 'x'"),
    ("; 0\n#####\n#@$ #\n#####\n", "as many targets as boxes"),
    ("; 0\n#####\n@ $.#\n#####\n", "not enclosed by walls"),
])
def test_bad_boxoban_files_fail_with_one_line(text, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        parse_file(text, "bad")


def test_boxoban_env_plays_the_levels_in_order_and_its_expert_solves_them(tmp_path, monkeypatch):
    path = tmp_path / "000.txt"
    level_7 = BOXOBAN_FILE[BOXOBAN_FILE.index("; 7"):]
    path.write_text(level_7 + "\n" + level_7.replace("; 7", "; 8").replace("#  $$ #", "# $$  #"))
    env = BoxobanEnv(levels=str(path), image=True, tile_size=28)
    assert env.splits == ("hard",) and env.dim_room == (6, 7) and env.image_shape == (168, 196)
    assert [env.reset(seed=k)[1]["task_id"] for k in range(3)] == ["boxoban-000-7", "boxoban-000-8", "boxoban-000-7"]
    obs, info = env.reset(options={"task_id": "boxoban-000-8"})
    assert obs.splitlines()[3] == "# _ X X _ _ #" and info["image"].shape == (168, 196, 3)
    for seed in range(2):
        assert _play(env, seed, lambda e: e.expert_plan()[0])
    before = env.provenance()["manifest_checksum"]
    path.write_text(level_7.replace("#     #", "#    @#").replace("#+    #", "#.    #"))
    assert BoxobanEnv(levels=str(path)).provenance()["manifest_checksum"] != before
    monkeypatch.delenv("SEEDBENCH_BOXOBAN_LEVELS", raising=False)
    with pytest.raises(FileNotFoundError, match=r"env_kwargs.levels=/path/to/boxoban-levels/hard or set \$SEEDBENCH_BOXOBAN_LEVELS"):
        BoxobanEnv()


# ----------------------------------------------------------------------------------------------------
# A text policy trains on sokoban-vision; the run directory keeps the frames by reference


def test_tiny_run_on_sokoban_vision_stores_frames_by_reference(tmp_path):
    config = build_config(overrides={
        "env": "sokoban-vision", "agent": "grpo", "model": {"name": "tiny"}, "iterations": 1,
        "output": str(tmp_path / "run"), "rollout": {"max_new_tokens": 4, "tasks_per_batch": 1, "group_size": 2,
                                                     "max_steps": 3},
        "eval": {"num_tasks": 1}})
    run = train(config)  # evaluation at iteration 0, one iteration, checkpoint, evaluation at iteration 1
    metrics = list(read_jsonl(run / "metrics.jsonl"))[-1]
    assert metrics["iteration"] == 1
    every = list(read_jsonl(run / "episodes.jsonl"))
    assert {e["phase"] for e in every} == {"train", "eval/test"} and len(every) == 2 + 2  # 2 train; 1 eval task at iterations 0 and 1
    episodes = [e for e in every if e["phase"] == "train"]
    assert sum(len(e["steps"]) for e in episodes) == metrics["env_steps"] > 0
    names = {s["image"] for e in every for s in e["steps"]}
    assert all(re.fullmatch(r"frames/[0-9a-f]{16}\.png", name) for name in names)
    assert {f"frames/{p.name}" for p in (run / "frames").iterdir()} == names  # each distinct frame once
    frame = read_png(run / sorted(names)[0])
    assert frame.shape == (336, 336, 3) and not is_blank(frame)
    assert f"frames/{frame_id(frame)}.png" == sorted(names)[0]  # the name is the hash of the pixels saved
    # the first step of both group members shows the same start frame, the level of their task
    split, seed = episodes[0]["task"].split(":")
    _, info = make_env("sokoban-vision").reset(seed=int(seed), options={"split": split})
    assert {e["steps"][0]["image"] for e in episodes} == {f"frames/{frame_id(info['image'])}.png"}
