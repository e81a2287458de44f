"""ALFWorld: the real engine, the official fixture game, generated games of every task type, splits.

Needs the ``[alfworld]`` extra. Generated games come from a tiny pool (one train game per task type, one
per validation split) built once and kept in pytest's cache folder, keyed by the generator's source, so
later runs reuse it; ``SEEDBENCH_ALFWORLD_TEST_POOL=<dir>`` points the tests at an existing pool instead.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="ALFWorld tests need the [alfworld] extra: pip install 'seedbench[alfworld]'")
pytest.importorskip("textworld", reason="ALFWorld tests need the [alfworld] extra: pip install 'seedbench[alfworld]'")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from seedbench.envs.alfworld import data  # noqa: E402
from seedbench.envs.alfworld.env import ALFWorldEnv, MissingGameDataError  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "alfworld"
FIXTURE_TASK = ("valid_seen/pick_heat_then_place_in_recep-Potato-None-SinkBasin-14/"
                "trial_T20190908_231731_054988")
needs_fixture = pytest.mark.skipif(not (FIXTURE / "gen").is_dir(),
                                   reason=f"the official ALFWorld fixture game is not at {FIXTURE}")


@pytest.fixture(scope="session")
def pool(request, tmp_path_factory) -> Path:
    given = os.environ.get("SEEDBENCH_ALFWORLD_TEST_POOL")
    if given:
        return Path(given)
    cache = getattr(request.config, "cache", None)  # absent under `-p no:cacheprovider`
    folder = cache.mkdir("alfworld") if cache is not None else tmp_path_factory.mktemp("alfworld")
    return data.build_test_pool(folder, workers=2)


@pytest.fixture(scope="session")
def manifest(pool) -> dict:
    return json.loads((pool / "manifest.json").read_text())


@pytest.fixture(scope="session")
def env(pool):
    env = ALFWorldEnv(data_dir=pool)
    yield env
    env.close()


def play(env: ALFWorldEnv, commands: list[str]):
    reward = 0.0
    terminated = truncated = False
    info: dict = {}
    for command in commands:
        _, reward, terminated, truncated, info = env.step(f"<think>next</think><action>{command}</action>")
        assert info["action_valid"], command
        if terminated or truncated:
            break
    return reward, terminated, truncated, info


# ----------------------------------------------------------------------------------------------------
# Projection (no engine needed)


@pytest.mark.parametrize("text, expected", [
    ("<think>a</think><action>go to cabinet 1</action>", ("go to cabinet 1", True)),
    ("<think></think><action> Go  To\nCabinet 1 </action>", ("go to cabinet 1", True)),
    ("<think>a</think><action>look</action> then <action>inventory</action>", ("look", True)),  # first tag
    ("<action>look</action>", ("", False)),  # reference: no think block
    ("<think>\u770b</think><action>look</action>", ("", False)),  # reference: a CJK character
    ("go to cabinet 1", ("", False)),
    ("<action></action>", ("", False)),
    ("", ("", False)),
])
def test_parse_action(text, expected):
    assert ALFWorldEnv.parse_action(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("<action> Go  To\nCabinet 1 </action>", ("go to cabinet 1", True)),  # no think block needed
    ("<think>a</think><action>look</action> then <action>inventory</action>", ("inventory", True)),  # last tag
    ("<think>\u770b</think><action>look</action>", ("look", True)),
    ("go to cabinet 1", ("", False)),
])
def test_parse_action_seedbench_projection(text, expected):
    from seedbench.envs.alfworld.env import parse_command

    assert parse_command(text, "seedbench") == expected


# ----------------------------------------------------------------------------------------------------
# The official fixture game


@needs_fixture
def test_official_fixture_game_loads_and_its_walkthrough_wins():
    env = ALFWorldEnv(data_dir=FIXTURE)
    assert env.pool.source == "official"
    obs, info = env.reset(seed=0, options={"split": "valid_seen"})
    assert obs.startswith("You are in the middle of a room. Looking quickly around you, you see a cabinet 8")
    assert "Welcome to TextWorld" not in obs
    assert obs.endswith("Your task is to: heat some potato and put it in sinkbasin.")
    assert info["task"] == "heat some potato and put it in sinkbasin."
    assert info["task_type"] == "heat" and info["split"] == "valid_seen" and info["floor_plan"] == 14
    assert info["task_id"] == FIXTURE_TASK
    assert "help" not in info["admissible_actions"] and "go to microwave 1" in info["admissible_actions"]
    walkthrough = env.expert_plan()
    assert len(walkthrough) == 16 and walkthrough[-1] == "move potato 2 to sinkbasin 1"  # 0.4.x: move, not put
    reward, terminated, truncated, info = play(env, walkthrough)
    assert (reward, terminated, truncated, info["won"]) == (10.0, True, False, True)
    env.close()


@needs_fixture
def test_generated_files_have_the_official_format(env, manifest):
    official_trial = FIXTURE / "gen" / FIXTURE_TASK
    official_game = json.loads((official_trial / "game.tw-pddl").read_text())
    game_info = manifest["games"][0]
    trial = env.pool.root / Path(game_info["path"]).parent
    game = json.loads((trial / "game.tw-pddl").read_text())
    assert set(game) == set(official_game)
    assert game["pddl_domain"] == official_game["pddl_domain"]
    assert game["solvable"] is True and game["walkthrough"][0] == "look"
    # the grammar is the shipped one with only the goal filled in, as alfworld-generate does
    goal = data._task_text(game["grammar"])
    assert goal and goal == game_info["task"]
    assert game["grammar"] == official_game["grammar"].replace(
        "heat some potato and put it in sinkbasin.", goal)
    assert (trial / "initial_state.pddl").read_text() == game["pddl_problem"]
    traj = json.loads((trial / "traj_data.json").read_text())
    official_traj = json.loads((FIXTURE / "json_2.1.1" / FIXTURE_TASK / "traj_data.json").read_text())
    for key in ("task_id", "task_type", "pddl_params", "scene", "turk_annotations"):
        assert key in traj and key in official_traj
    assert set(traj["pddl_params"]) == set(official_traj["pddl_params"])
    problem = game["pddl_problem"]
    for section in ("(:domain alfred)", "(:objects", "agent1 - agent", "(:init", "(:goal", "(atLocation agent1"):
        assert section in problem and section in official_game["pddl_problem"]


def test_stock_alfworld_generate_accepts_a_generated_game(manifest, pool, tmp_path):
    """The stock tool compiles our traj_data.json + initial_state.pddl into the same game and solves it."""
    game_info = next(g for g in manifest["games"] if g["task_type"] == "pick")
    trial = pool / Path(game_info["path"]).parent
    source = tmp_path / "json_2.1.1" / "train" / trial.parent.name / trial.name
    source.mkdir(parents=True)
    for name in ("traj_data.json", "initial_state.pddl"):
        shutil.copy(trial / name, source / name)
    tool = shutil.which("alfworld-generate") or str(Path(sys.executable).parent / "alfworld-generate")
    from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH

    # --end: the tool slices [start:end] and its default -1 would skip the last (here: only) game;
    # --domain/--grammar: its defaults point into $ALFWORLD_DATA, which only alfworld-download fills
    subprocess.run([sys.executable, tool, "--data_path", str(tmp_path / "json_2.1.1"), "--save_path",
                    str(tmp_path / "out"), "--end", "1000000", "--domain", ALFRED_PDDL_PATH,
                    "--grammar", ALFRED_TWL2_PATH], check=True, capture_output=True, timeout=600,
                   env={**os.environ, "ALFWORLD_DATA": str(tmp_path)})
    stock = json.loads((tmp_path / "out" / "train" / trial.parent.name / trial.name / "game.tw-pddl").read_text())
    ours = json.loads((trial / "game.tw-pddl").read_text())
    assert stock["solvable"] is True and stock["walkthrough"]
    assert stock["pddl_domain"] == ours["pddl_domain"] and stock["pddl_problem"] == ours["pddl_problem"]
    # the tool picks one of the task type's two goal templates with an unseeded RNG
    stock_goal, our_goal = data._task_text(stock["grammar"]), data._task_text(ours["grammar"])
    assert stock["grammar"].replace(stock_goal, our_goal) == ours["grammar"]


# ----------------------------------------------------------------------------------------------------
# Generated games


def test_pool_has_every_task_type_and_checksums(manifest, pool):
    train_types = [g["task_type"] for g in manifest["games"] if g["split"] == "train"]
    assert sorted(train_types) == sorted(data.TASK_TYPES.values())
    assert train_types == list(data.TASK_TYPES.values())  # interleaved: any prefix is balanced
    for game in manifest["games"]:
        assert data.sha256_file(pool / game["path"]) == game["sha256"]
        assert 1 <= game["expert_steps"] <= manifest["max_expert_steps"]
    assert manifest["alfworld_version"] == "0.4.2"


def test_provenance_is_the_pool_manifest_checksum(env, manifest):
    assert env.provenance() == {"data_source": "generated", "manifest_checksum": manifest["checksum"],
                                "generator_version": data.POOL_FORMAT}
    games = [dict(g) for g in manifest["games"]]
    assert data.pool_checksum(games) == manifest["checksum"]
    games[0]["sha256"] = "0" * 64  # one game file changed, same ids: another checksum
    assert data.pool_checksum(games) != manifest["checksum"]


@pytest.mark.parametrize("task_type", list(data.TASK_TYPES.values()))
def test_generated_game_of_each_type_is_won_by_its_walkthrough(env, manifest, task_type):
    game = next(g for g in manifest["games"] if g["split"] == "train" and g["task_type"] == task_type)
    obs, info = env.reset(options={"task_id": game["id"]})
    assert obs.startswith("You are in the middle of a room. Looking quickly around you, you see ")
    assert info["task_type"] == task_type and info["task"] == game["task"]
    reward, terminated, truncated, info = play(env, env.expert_plan())
    assert (reward, terminated, truncated, info["won"]) == (10.0, True, False, True)


def test_handcoded_expert_solves_pick_two_from_the_live_state(pool, manifest):
    """The expert (with the 0.4.x move/put fix) plays from the current state, step by step."""
    env = ALFWorldEnv(data_dir=pool, expert=True)
    game = next(g for g in manifest["games"] if g["task_type"] == "pick2")
    env.reset(options={"task_id": game["id"]})
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(f"<think>t</think><action>{env.expert_plan()[0]}</action>")
    assert terminated and info["won"] and reward == 10.0
    env.close()


def test_generation_resumes_where_it_was_killed(pool, manifest, tmp_path):
    """Rerunning `seedbench data alfworld` after a kill reuses every finished candidate in progress.jsonl
    (a line cut by the kill is skipped and ended), builds only what is missing and keeps the games it had;
    a snapshot written mid-run warns when the env opens it."""
    from seedbench.envs.alfworld.env import GamePool

    out = tmp_path / "pool"
    shutil.copytree(pool, out)
    with (out / "progress.jsonl").open("a") as log:
        log.write('{"split": "train", "task_ty')  # the kill cut this record short
    counts = {split: info["requested"] for split, info in manifest["splits"].items()}

    def generate(counts):
        return data.generate_pool(data.PoolConfig(out=out, counts=counts, seed=manifest["seed"], workers=1,
                                                  progress=False))

    again = generate(counts)
    assert again["last_run"]["new_candidates"] == 0
    assert [g["sha256"] for g in again["games"]] == [g["sha256"] for g in manifest["games"]]
    grown = generate({**counts, "valid_seen": counts["valid_seen"] + 1})
    assert grown["splits"]["valid_seen"]["games"] == counts["valid_seen"] + 1
    assert grown["last_run"]["new_candidates"] >= 1
    assert {g["sha256"] for g in manifest["games"]} <= {g["sha256"] for g in grown["games"]}
    assert generate({**counts, "valid_seen": counts["valid_seen"] + 1})["last_run"]["new_candidates"] == 0

    snapshot = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**snapshot, "complete": False}))
    with pytest.warns(UserWarning, match="still being generated"):
        GamePool.open(out)


def test_seen_and_unseen_splits_never_share_a_floor_plan(manifest, env):
    plans = data.split_floor_plans()
    assert set(plans["valid_unseen"]) == set(data.DEFAULT_UNSEEN_FLOOR_PLANS)
    assert not set(plans["valid_unseen"]) & (set(plans["train"]) | set(plans["valid_seen"]))
    assert len(plans["train"]) + len(plans["valid_unseen"]) == 120
    seen = {g["floor_plan"] for g in manifest["games"] if g["split"] != "valid_unseen"}
    unseen = {g["floor_plan"] for g in manifest["games"] if g["split"] == "valid_unseen"}
    assert unseen and seen and not seen & unseen
    assert unseen <= set(data.DEFAULT_UNSEEN_FLOOR_PLANS)
    assert {g.floor_plan for g in env.pool.games["valid_unseen"]} == unseen
    # the room of every valid_unseen game really is a held-out plan (checked from the game's own data)
    for game in env.pool.games["valid_unseen"]:
        traj = json.loads((game.path.parent / "traj_data.json").read_text())
        assert traj["scene"]["scene_num"] in data.DEFAULT_UNSEEN_FLOOR_PLANS


def test_check_env_passes(env):
    check_env(env, skip_render_check=True)


def test_reset_is_deterministic_and_task_ids_select(env):
    for split in env.splits:
        ids = env.task_ids(split)
        obs_1, info_1 = env.reset(seed=7, options={"split": split})
        obs_2, info_2 = env.reset(seed=7, options={"split": split})
        assert (obs_1, info_1["task_id"]) == (obs_2, info_2["task_id"])
        assert info_1["task_id"] == ids[7 % len(ids)]
        _, info_3 = env.reset(options={"task_id": ids[0]})
        assert info_3["task_id"] == ids[0] and info_3["split"] == split
    with pytest.raises(ValueError, match="unknown split"):
        env.reset(seed=0, options={"split": "test"})
    with pytest.raises(ValueError, match="unknown ALFWorld task_id"):
        env.reset(options={"task_id": "nope"})


def test_invalid_actions_never_crash_and_change_nothing(env):
    rng = random.Random(0)
    garbage = ["", "look", "<action>", "<action></action>", "<action>fly to the moon</action>",
               "<action>go to cabinet 999</action>", "<action>take everything</action>", "\x00\n\t" * 50,
               "<action>" + "x" * 10_000 + "</action>", "".join(chr(rng.randint(1, 0xD7FF)) for _ in range(300)),
               "<action>\u00e9t\u00e9 \U0001F600</action>", "<action>help</action>"]
    obs_0, info_0 = env.reset(seed=1, options={"split": "train"})
    for step, text in enumerate(garbage, start=1):
        obs, reward, terminated, truncated, info = env.step(text)
        assert obs == "Nothing happens." and reward == 0.0 and not terminated and not truncated
        assert info["action_valid"] is False and info["step"] == step
        assert info["admissible_actions"] == info_0["admissible_actions"]
    # the state did not move: the first walkthrough command still applies
    _, _, _, _, info = env.step(f"<think>t</think><action>{info_0['admissible_actions'][0]}</action>")
    assert info["action_valid"] is True


def test_reference_projection_sends_a_non_admissible_command_to_the_engine_without_penalty(env, pool):
    """verl-agent's rule: admissibility is not checked at projection; the engine answers "Nothing happens."
    and the step is valid. The seedbench projection rejects the command before the engine."""
    _, info_0 = env.reset(seed=1, options={"split": "train"})
    obs, reward, _, _, info = env.step("<think>t</think><action>fly to the moon</action>")
    assert (obs, reward, info["action_valid"]) == ("Nothing happens.", 0.0, True)
    assert info["admissible_actions"] == info_0["admissible_actions"]
    strict = ALFWorldEnv(data_dir=pool, projection="seedbench")
    strict.reset(seed=1, options={"split": "train"})
    assert strict.step("<action>fly to the moon</action>")[4]["action_valid"] is False
    assert strict.step(f"<action>{info_0['admissible_actions'][0]}</action>")[4]["action_valid"] is True
    strict.close()
    with pytest.raises(ValueError, match="projection"):
        ALFWorldEnv(data_dir=pool, projection="lenient")


def test_step_cap_truncates(pool):
    env = ALFWorldEnv(data_dir=pool, max_steps=3)
    env.reset(seed=0, options={"split": "valid_seen"})
    results = [env.step("<action>look</action>") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    with pytest.raises(RuntimeError, match="finished episode"):
        env.step("<action>look</action>")
    env.close()


def test_missing_data_says_how_to_generate_it(tmp_path, monkeypatch):
    monkeypatch.delenv("SEEDBENCH_ALFWORLD_DATA", raising=False)
    with pytest.raises(MissingGameDataError, match="seedbench data alfworld"):
        ALFWorldEnv(data_dir=tmp_path)
    monkeypatch.setenv("SEEDBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nothing"))
    with pytest.raises(MissingGameDataError, match=r"seedbench data alfworld` \(about 20 minutes"):
        ALFWorldEnv()


def test_registry_makes_it_with_data_dir(pool):
    from seedbench.registry import make_env

    env = make_env("alfworld", data_dir=str(pool), max_steps=12)
    assert isinstance(env, ALFWorldEnv) and env.max_steps == 12 and env.history_length == 5
    assert env.eval_split == "valid_seen" and env.splits == ("train", "valid_seen", "valid_unseen")
    env.close()


@needs_fixture
def test_engine_caches_change_no_output():
    """The engine speed-ups (memoised parsing and translation) give the same text and commands as stock,
    also when the same game is played again in the process."""
    script = (
        "import json, sys\n"
        "from seedbench.envs.alfworld.env import ALFWorldEnv\n"
        f"env = ALFWorldEnv(data_dir={str(FIXTURE)!r})\n"
        "out = []\n"
        "for episode in range(int(sys.argv[1])):\n"
        "    obs, info = env.reset(seed=0, options={'split': 'valid_seen'})\n"
        "    out.append((obs, info['admissible_actions']))\n"
        "    for a in env.expert_plan():\n"
        "        obs, r, te, tr, info = env.step('<action>' + a + '</action>')\n"
        "        out.append((obs, info['admissible_actions'], r))\n"
        "print(json.dumps(out))\n"
    )
    outputs = []
    for flag, episodes in (("1", 2), ("0", 1)):  # cached: play it twice (the replay hits the caches)
        run = subprocess.run([sys.executable, "-c", script, str(episodes)], capture_output=True, text=True,
                             timeout=600, check=True, env={**os.environ, "SEEDBENCH_ALFWORLD_ENGINE_CACHE": flag})
        outputs.append(json.loads(run.stdout.strip().splitlines()[-1]))
    cached, stock = outputs
    assert len(stock) == 17 and cached == stock + stock


def test_pool_of_alfworld_workers_survives_a_killed_worker(pool):
    import signal
    import time

    from seedbench.envs.pool import EnvPool

    with EnvPool(("alfworld", {"data_dir": str(pool)}), num_envs=2, num_workers=2, timeout_s=120) as envs:
        resets = envs.reset_many([(0, 0, {"split": "train"}), (1, 1, {"split": "train"})])
        first = [info["admissible_actions"][0] for _, info in resets]
        results = envs.step_many([(i, f"<think>t</think><action>{first[i]}</action>") for i in range(2)])
        assert all(r is not None and r[4]["action_valid"] for r in results)
        os.kill(envs.worker_pids()[envs.worker_of[0]], signal.SIGKILL)  # mid-episode
        time.sleep(0.2)
        results = envs.step_many([(i, "<action>look</action>") for i in range(2)])
        assert results[0] is None and results[1] is not None
        assert envs.stats.dropped_episodes == 1 and envs.stats.worker_restarts == 1
        obs, info = envs.reset(0, 0, {"split": "train"})  # the restarted worker serves the env again
        assert info["task_id"] == resets[0][1]["task_id"]
        assert envs.step_many([(0, "<action>look</action>")])[0] is not None
