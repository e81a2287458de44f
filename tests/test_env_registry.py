"""Every registered env is tested because it is registered (Gymnasium's tests/envs/test_envs.py pattern).

The parameters come from `seedbench.registry.env_entries()`, so a new catalogue line or plugin entry point
gets these checks for free. An env is skipped only when the optional extra it `requires` is not
importable, and the skip reason says how to install it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

from seedbench.registry import UnknownNameError, env_entries, load_object, make_env, resolve_env
from seedbench.envs.text_env import TextEnv
from seedbench.envs.checks import GARBAGE as CHECK_ENV_GARBAGE

RESET_INFO_KEYS = {"task", "admissible_actions", "won", "task_id", "task_type", "split"}
STEP_INFO_KEYS = RESET_INFO_KEYS | {"action_valid"}


# The garbage texts `seedbench check-env` feeds every env (random unicode, broken tags, control bytes).
GARBAGE = list(CHECK_ENV_GARBAGE)

EXTRA_MODULES = {"webshop": "bm25s", "search": "bm25s"}

# Catalogue lines that read the user's own data files get small files in the official format, so they are
# built and checked like every other line instead of being skipped.
SEARCH_FILES = Path(__file__).parent / "fixtures" / "search_files"
DATA_KWARGS = {"search-files": {"corpus_file": str(SEARCH_FILES / "wiki.jsonl"),
                                "test_file": str(SEARCH_FILES / "test.jsonl")}}


def make_registered_env(alias: str):
    """make_env(alias), with the test data files of a line that needs them."""
    return make_env(alias, **DATA_KWARGS.get(alias, {}))


def _env_params():
    params = []
    for alias, entry in sorted(env_entries().items()):
        marks = []
        # An extra counts as installed when its module imports: one of the same name (alfworld -> `alfworld`)
        # unless EXTRA_MODULES names another (the [webshop] extra has no `webshop` module).
        if entry.requires and importlib.util.find_spec(EXTRA_MODULES.get(entry.requires, entry.requires)) is None:
            reason = (f"env {alias!r} needs the optional [{entry.requires}] extra: "
                      f"pip install 'seedbench[{entry.requires}]'")
            marks.append(pytest.mark.skip(reason=reason))
        params.append(pytest.param(alias, id=alias, marks=marks))
    return params


ENV_PARAMS = _env_params()


@pytest.fixture
def env(request):
    env = make_registered_env(request.param)
    yield env
    env.close()


@pytest.mark.parametrize("env", ENV_PARAMS, indirect=True)
def test_check_env(env):
    check_env(env)


@pytest.mark.parametrize("env", ENV_PARAMS, indirect=True)
def test_text_env_attributes(env):
    assert isinstance(env, TextEnv)
    assert env.splits and env.eval_split in env.splits
    assert env.max_steps >= 1 and env.history_length >= 0 and env.invalid_action_penalty >= 0
    assert isinstance(env.instruction, str)


@pytest.mark.parametrize("env", ENV_PARAMS, indirect=True)
def test_reset_is_deterministic_per_split_and_seed(env):
    for split in env.splits:
        obs_1, info_1 = env.reset(seed=3, options={"split": split})
        env.reset(seed=4, options={"split": split})
        obs_2, info_2 = env.reset(seed=3, options={"split": split})
        assert obs_1 == obs_2
        assert info_1["task_id"] == info_2["task_id"]
        assert info_1["split"] == split


@pytest.mark.parametrize("env", ENV_PARAMS, indirect=True)
def test_info_has_the_documented_keys(env):
    _, info = env.reset(seed=0)
    assert RESET_INFO_KEYS <= set(info)
    assert isinstance(info["task"], str) and info["task"]
    assert info["admissible_actions"] is None or isinstance(info["admissible_actions"], list)
    assert info["won"] is False
    assert isinstance(info["task_id"], str) and info["task_id"]
    assert isinstance(info["task_type"], str) and info["task_type"]
    assert info["split"] in env.splits

    _, reward, terminated, truncated, info = env.step("not an action")
    assert STEP_INFO_KEYS <= set(info)
    assert info["action_valid"] is False
    assert isinstance(reward, float)

    if info["admissible_actions"] and not (terminated or truncated):
        _, _, _, _, info = env.step(f"<think>t</think><action>{info['admissible_actions'][0]}</action>")
        assert STEP_INFO_KEYS <= set(info)
        assert info["action_valid"] is True


@pytest.mark.parametrize("alias", ENV_PARAMS)
@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
def test_parse_action_is_total_on_garbage(alias, text):
    env_cls = load_object(resolve_env(alias).entry_point)
    command, valid = env_cls.parse_action(text)
    assert isinstance(command, str)
    assert valid is False


def test_aliases_and_ids_resolve_to_the_same_entry():
    for alias, entry in env_entries().items():
        assert resolve_env(alias) is entry
        assert resolve_env(entry.env_id) is entry
        assert entry.env_id.startswith("seedbench/")


def test_unknown_env_lists_the_valid_choices():
    with pytest.raises(UnknownNameError) as err:
        resolve_env("nope")
    message = str(err.value)
    assert "'nope'" in message
    for alias in env_entries():
        assert alias in message
    assert isinstance(err.value, ValueError)


def test_text_space_holds_non_ascii_observations():
    """Search-QA's countries include names outside ASCII (e.g. seed 18 of search-countries): the space
    used by check_env must contain them, and still reject non-strings and over-long text."""
    from seedbench.envs.text_env import text_space
    from seedbench.registry import make_env

    space = text_space(max_length=20)
    assert "Curaçao, Ștefan" in space and 3 not in space and "x" * 21 not in space
    env = make_env("search-countries")
    obs, _ = env.reset(seed=18)
    assert any(ord(c) > 126 for c in obs) and obs in env.observation_space
    env.close()
