"""Images in the env contract: ``image_shape`` + ``info["image"]``, enforced by the guard and `check-env`,
carried by the rollout (`StepSample.image`, also through worker processes) and stored by the run
directory as ``frames/<sha1-16>.png`` named from the episode records. Text-only envs are unchanged."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from seedbench.engines.base import Generation
from seedbench.envs.batch import LocalEnvs
from seedbench.envs.checks import run_checks
from seedbench.envs.contract import EnvContractError, guard
from seedbench.envs.pool import EnvPool
from seedbench.frames import FrameStore, frame_id, is_blank, read_png
from seedbench.registry import ENVS, EnvEntry, make_env, register_env
from seedbench.rollout.episode import EpisodeRules, start_episodes
from seedbench.rollout.types import StepSample, TaskRef, Trajectory
from seedbench.training.rundir import RunDir
from seedbench.training.trainer import episode_record
from tests.fake_envs import CountdownEnv
from tests.test_env_registry import ENV_PARAMS, make_registered_env
from tests.plugin_example.guess_env import GuessEnv


class PaintedGuess(GuessEnv):
    """The docs' example env with a 4x10 frame: the columns still in the range left to search are lit."""

    image_shape = (4, 10)

    def frame(self) -> np.ndarray:
        image = np.zeros((4, 10, 3), np.uint8)
        image[:, self.low // 10: self.high // 10 + 1] = (200, 50, 10)
        image[0, 0] = (1, 2, 3)
        return image

    def _info(self):
        return {**super()._info(), "image": self.frame()}


class BlankFrames(PaintedGuess):
    def frame(self):
        return np.zeros((4, 10, 3), np.uint8)


class NoisyFrames(PaintedGuess):
    def frame(self):
        return np.random.default_rng().integers(0, 256, (4, 10, 3), dtype=np.uint8)


class FloatFrames(PaintedGuess):
    def frame(self):
        return super().frame().astype(np.float32)


class WrongShape(PaintedGuess):
    def frame(self):
        return np.ones((10, 4, 3), np.uint8) * np.arange(3, dtype=np.uint8)


class Undeclared(PaintedGuess):
    image_shape = None


class MissingFrame(PaintedGuess):
    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        del info["image"]
        return obs, reward, terminated, truncated, info


class PaintedCountdown(CountdownEnv):
    """CountdownEnv with a 4x6 frame: as many lit columns as steps left."""

    image_shape = (4, 6)

    def frame(self) -> np.ndarray:
        image = np.zeros((4, 6, 3), np.uint8)
        image[:, : self.left] = (200, 50, 10)
        return image

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed, options=options)
        return obs, {**info, "image": self.frame()}

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "image": self.frame()}


# ----------------------------------------------------------------------------------------------------
# The guard


def test_a_well_formed_vision_env_passes_the_guard():
    env = guard(PaintedGuess(), "painted")
    _, info = env.reset(seed=3, options={"split": "train"})
    assert info["image"].shape == (4, 10, 3) and info["image"].dtype == np.uint8
    assert env.step("<action>50</action>")[4]["image"].shape == (4, 10, 3)


@pytest.mark.parametrize("cls, call, words", [
    (FloatFrames, "reset", ["reset() info['image'] is dtype float32, not uint8"]),
    (WrongShape, "reset", ["shape (10, 4, 3), not (4, 10, 3)"]),
    (Undeclared, "reset", ["carries an 'image' but the env declares no image_shape"]),
    (MissingFrame, "step", ["step() info lacks image", "image_shape (4, 10)"]),
])
def test_the_guard_names_a_broken_frame_in_one_line(cls, call, words):
    env = guard(cls(), "broken")
    with pytest.raises(EnvContractError) as err:
        env.reset(seed=1, options={"split": "train"})
        env.step("<action>50</action>")
    message = str(err.value)
    assert "\n" not in message and message.startswith("env 'broken' (tests.test_vision_contract:")
    for word in words:
        assert word in message


@pytest.mark.parametrize("shape", [(4,), (0, 6), (4.0, 6), [4, 6], (True, 6)])
def test_a_malformed_image_shape_is_refused_when_the_env_is_guarded(shape):
    env = PaintedGuess()
    env.image_shape = shape
    with pytest.raises(EnvContractError, match="image_shape is .* it must be None"):
        guard(env, "odd")


def test_text_only_envs_carry_no_frame_and_records_have_no_image_key():
    env = make_env("sokoban")
    assert env.image_shape is None
    _, info = env.reset(seed=0)
    assert "image" not in info and "image" not in env.step("<think>x</think><action>up</action>")[4]
    step = StepSample(0, "p", [1], [2], [0.0], "out", "obs", "up", True, -0.1)
    record = episode_record(Trajectory("e", 0, TaskRef("train", 0), steps=[step]), 1, "train", 0.0,
                            save_frame=lambda image: pytest.fail("a text step has no frame to save"))
    assert list(record["steps"][0]) == ["step", "prompt", "output", "action", "valid", "reward"]


# ----------------------------------------------------------------------------------------------------
# check-env


@pytest.fixture
def frame_variants():
    for alias, cls in (("painted", "PaintedGuess"), ("blank", "BlankFrames"), ("noisy", "NoisyFrames")):
        register_env(EnvEntry(alias=alias, env_id=f"seedbench/Test{cls}-v0",
                              entry_point=f"tests.test_vision_contract:{cls}"))
    yield
    ENVS.reload()


def test_check_env_passes_a_vision_env_and_fails_blank_or_unstable_frames(frame_variants):
    good = {r.name: r for r in run_checks("painted", seeds=3)}
    assert {r.status for r in good.values()} == {"ok"}, good
    assert good["image"].detail == "12 frames of 4x10 uint8 RGB, none blank, the same for the same (split, seed)"

    blank = {r.name: r for r in run_checks("blank", seeds=3)}
    assert [name for name, r in blank.items() if r.failed] == ["image"]
    assert "info['image'] is blank (one colour everywhere)" in blank["image"].detail

    noisy = {r.name: r for r in run_checks("noisy", seeds=3)}
    assert noisy["image"].failed and "drew a different frame the second time" in noisy["image"].detail
    # frames are part of the episode fingerprint (by id), so replays with other frames are caught there too
    assert noisy["determinism"].failed


def test_check_env_reports_text_only_envs_as_fine():
    results = {r.name: r for r in run_checks("sokoban", seeds=2, expert_tasks=1)}
    assert results["image"].status == "ok" and "text-only" in results["image"].detail


@pytest.mark.parametrize("alias", ENV_PARAMS)
def test_every_registered_env_keeps_the_frame_rules(alias):
    """Registered, therefore tested: a vision env in the catalogue (or a plugin) returns stable, non-blank
    frames of its image_shape; a text-only one returns none."""
    env = make_registered_env(alias)
    split = env.splits[0]
    _, info = env.reset(seed=1, options={"split": split})
    if env.image_shape is None:
        assert "image" not in info
        return
    first = info["image"]
    assert first.shape == (*env.image_shape, 3) and first.dtype == np.uint8 and not is_blank(first)
    actions = info["admissible_actions"] or ["look"]
    step_info = env.step(f"<think>t</think><action>{actions[0]}</action>")[4]
    assert step_info["image"].shape == first.shape
    env.reset(seed=2, options={"split": split})
    assert frame_id(env.reset(seed=1, options={"split": split})[1]["image"]) == frame_id(first)
    env.close()


# ----------------------------------------------------------------------------------------------------
# Rollout and worker processes


def test_each_step_sample_keeps_the_frame_its_prompt_showed(tiny_tokenizer):
    envs = LocalEnvs(PaintedCountdown, 1)
    rules = EpisodeRules(PaintedCountdown(), tiny_tokenizer, history_length=2, max_steps=5)
    (episode,) = start_episodes(envs, [TaskRef("train", 3)], 1, rules)
    shown = [episode.info["image"]]
    while True:
        episode.prompt()
        result = envs.step_many([(episode.index, "go")])[0]
        if not episode.record(Generation(token_ids=[1], logprobs=[0.0], text="go"), result):
            break
        shown.append(result[4]["image"])
    steps = episode.trajectory.steps
    assert len(steps) == 4  # task 3 counts down 4 steps
    # step k's frame is the frame of the observation its prompt showed: 4, 3, 2, 1 lit columns
    assert [int((s.image[1] == (200, 50, 10)).all(axis=-1).sum()) for s in steps] == [4, 3, 2, 1]
    assert all(s.image is frame for s, frame in zip(steps, shown))


def test_frames_survive_worker_processes():
    local = make_env("sokoban-vision")
    with EnvPool(("sokoban-vision", {}), num_envs=2, num_workers=1, timeout_s=60) as pool:
        (obs, info), _ = pool.reset_many([(0, 4, {"split": "test"}), (1, 5, {"split": "test"})])
        want_obs, want = local.reset(seed=4, options={"split": "test"})
        assert obs == want_obs and np.array_equal(info["image"], want["image"])
        result = pool.step_many([(0, "<think>t</think><action>left</action>")])[0]
        expected = local.step("<think>t</think><action>left</action>")
        assert result[0] == expected[0] and np.array_equal(result[4]["image"], expected[4]["image"])
        assert result[4]["image"].dtype == np.uint8 and result[4]["image"].flags.writeable


# ----------------------------------------------------------------------------------------------------
# Run directory


def test_frame_store_writes_each_distinct_frame_once_named_by_sha1(tmp_path):
    store = FrameStore(tmp_path)
    a = np.zeros((4, 6, 3), np.uint8)
    a[1, 2] = (9, 8, 7)
    b = a.copy()
    b[3, 5] = 1
    name_a, name_b = store.save(a), store.save(b)
    assert name_a == f"frames/{hashlib.sha1(a.tobytes()).hexdigest()[:16]}.png" != name_b
    assert store.save(a.copy()) == name_a
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == sorted([name_a[7:], name_b[7:]])  # no temp files
    assert np.array_equal(read_png(tmp_path / name_a), a)


def test_episode_records_name_frames_and_hold_no_pixels(tmp_path):
    run = RunDir(tmp_path)
    frame = PaintedCountdown().frame()
    steps = [StepSample(k, "p", [1], [2], [0.0], "o", "obs", "go", True, 0.0, image=frame) for k in range(3)]
    record = episode_record(Trajectory("e", 0, TaskRef("train", 0), steps=steps), 1, "train", 0.0, run.save_frame)
    names = {s["image"] for s in record["steps"]}
    assert names == {f"frames/{frame_id(frame)}.png"} and len(list((tmp_path / "frames").iterdir())) == 1
    # the name is all the record gains: without a run directory to write to, frames are left out, never inline
    bare = episode_record(Trajectory("e", 0, TaskRef("train", 0), steps=steps), 1, "train", 0.0)
    assert "image" not in bare["steps"][0]
    for step in record["steps"]:
        del step["image"]
    assert json.dumps(record) == json.dumps(bare)


def test_the_benchmarks_token_rule_matches_qwen_processor_figures():
    """benchmarks/vision_envs.py counts image tokens by Qwen2.5-VL's smart_resize rule when the processor
    cannot be built; the figures quoted in issue 17 (96×96 → 9, 300×300 → 121) and hand-computed ones."""
    from tests.benchmark_loader import load_benchmark

    bench = load_benchmark("vision_envs")
    assert bench.smart_resize(96, 96) == (84, 84) and bench.rule_tokens(96, 96) == 9
    assert bench.smart_resize(300, 300) == (308, 308) and bench.rule_tokens(300, 300) == 121
    assert [bench.rule_tokens(s, s) for s in (168, 336, 392, 560)] == [36, 144, 196, 400]
    assert bench.smart_resize(2000, 2000) == (980, 980) and bench.rule_tokens(2000, 2000) == 1225  # capped
    assert bench.smart_resize(20, 30) == (56, 84)  # raised to min_pixels: beta = sqrt(3136 / 600)
