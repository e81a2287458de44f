"""`seedbench check-env`: the built-ins and the docs' example pass; each broken variant fails exactly the
check for the rule it breaks, with one line (variants in tests/plugin_variants.py)."""

from __future__ import annotations

import pytest

from seedbench.cli import main
from seedbench.envs.checks import CHECKS, run_checks
from seedbench.registry import ENVS, register_env
from tests import plugin_variants


@pytest.fixture
def variants():
    """Register the example and its variants for one test; forget them afterwards."""
    for alias in ("guess", *plugin_variants.VARIANTS):
        register_env(plugin_variants.entry(alias))
    yield
    ENVS.reload()


def _by_name(results):
    assert [r.name for r in results] == [label for label, _ in CHECKS]
    for result in results:
        assert "\n" not in result.detail, result
    return {r.name: r for r in results}


def test_sokoban_passes_every_check_and_its_expert_solves():
    results = _by_name(run_checks("sokoban", seeds=4, expert_tasks=3))
    assert {r.status for r in results.values()} == {"ok"}
    assert results["expert"].detail == "expert_plan() solved 3/3 'test' tasks"
    assert results["determinism"].detail == "4 seeds x 2 splits replayed identically"
    assert "by id and by behaviour" in results["splits disjoint"].detail


def test_choice_passes_with_its_declared_shared_task_and_no_expert_as_notes():
    results = _by_name(run_checks("choice", seeds=4))
    assert not any(r.failed for r in results.values())
    assert results["splits disjoint"].status == "note" and "splits_disjoint = False" in results["splits disjoint"].detail
    assert results["expert"].status == "note" and "no expert_plan()" in results["expert"].detail


def test_the_docs_example_passes(variants):
    results = _by_name(run_checks("guess"))
    assert {r.status for r in results.values()} == {"ok"}, [r for r in results.values() if r.status != "ok"]
    assert results["seeds reach tasks"].detail == "distinct tasks from 8 seeds: train 8, test 8"


@pytest.mark.parametrize("alias, failing, words", [
    # reset ignores the seed (Python's random picks the number): caught by replaying each (split, seed)
    ("guess-seed-ignoring", "determinism", ["reset(seed=0, options={'split': 'train'}) gave a different episode",
                                            "self.np_random"]),
    # reset ignores the seed but deterministically: every seed is the same task
    ("guess-constant", "seeds reach tasks", ["gave a single task in every split: reset ignores the seed"]),
    # train seed s and test seed s hide the same number under ids that differ: caught by behaviour
    ("guess-leaky", "splits disjoint", ["train seed 0 and test seed 0 play identically"]),
    ("guess-raising-parse", "garbage text", ["env 'guess-raising-parse' (tests.plugin_variants:RaisingParseGuess)",
                                             "parse_action('') raised TypeError", "must be total"]),
    ("guess-dict-observation", "info keys", ["reset() returned a dict observation", "observations must be str"]),
    ("guess-wrong-expert", "expert", ["expert_plan() left 4 of 5 'test' tasks unsolved (seeds 1, 2, 3, 4)"]),
])
def test_each_broken_rule_fails_its_check_with_one_line(variants, alias, failing, words):
    results = _by_name(run_checks(alias))
    assert results[failing].failed
    for word in words:
        assert word in results[failing].detail
    assert results["make"].status == "ok"


def test_the_seed_ignoring_variant_fails_only_where_the_seed_matters(variants):
    failed = {r.name for r in run_checks("guess-seed-ignoring") if r.failed}
    # Gymnasium's own step-determinism check notices the changing task_id too; ours names the rule.
    assert failed == {"gymnasium check_env", "determinism"}


def test_check_env_command_output_and_exit_codes(variants, capsys):
    assert main(["check-env", "guess", "--seeds", "3", "--expert-tasks", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "check-env guess (seedbench/Guess-v0, tests.plugin_example.guess_env:GuessEnv; register_env())"
    assert len(out) == 1 + len(CHECKS) + 1 and out[-1] == "seedbench: check-env guess: passed"
    assert "  ok    expert: expert_plan() solved 2/2 'test' tasks" in out

    assert main(["check-env", "guess-constant", "--seeds", "3"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ("seedbench: check-env guess-constant: 2 of 10 checks failed (seeds reach tasks, splits "
                       "disjoint)")
    assert sum(line.startswith("  FAIL") for line in out) == 2


def test_check_env_of_an_unknown_env_is_one_line(capsys):
    assert main(["check-env", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seedbench: error: unknown env 'nope'; choose one of: ") and err.count("\n") == 1


# ----------------------------------------------------------------------------------------------------
# The start-up seeding probe of run and eval (probe_reset_seeding)


class NoSeedGuess(plugin_variants.GuessEnv):
    """Never hands its seed on: ``np_random`` is seeded once, and every reset draws the next number from it."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=None, options=options)


def test_the_probe_fails_an_env_that_never_seeds_np_random_even_when_two_draws_coincide():
    import numpy as np

    from seedbench.envs.checks import probe_reset_seeding
    from seedbench.envs.contract import EnvContractError

    env = NoSeedGuess()
    env._np_random = np.random.default_rng(54)  # its draws: numbers 24, 17, 24, ...: the same task twice
    with pytest.raises(EnvContractError, match=r"^env 'no-seed': reset\(seed=0, options=\{'split': 'train'\}\) gave "
                                               r"a different first observation, info or np_random state the second "
                                               r"time \(first difference at character \d+: \" 'state': \{'state': "):
        probe_reset_seeding(env, "no-seed")


def test_the_probe_fails_an_env_drawing_from_the_global_stream_even_when_one_pair_coincides():
    import random

    from seedbench.envs.checks import probe_reset_seeding
    from seedbench.envs.contract import EnvContractError

    random.seed(126)  # the variant's draws: 92, 9, 92, 96: seed 0 twice agrees, seed 1 twice does not
    with pytest.raises(EnvContractError, match=r"reset\(seed=1, options=\{'split': 'train'\}\) gave a different"):
        probe_reset_seeding(plugin_variants.SeedIgnoringGuess(), "guess-seed-ignoring")


def test_the_probe_passes_the_built_in_and_example_envs():
    from seedbench.envs.checks import probe_reset_seeding
    from seedbench.registry import make_env
    from tests.plugin_example.guess_env import GuessEnv

    for name in ("choice", "sokoban", "frozenlake", "minigrid-empty", "webshop", "search"):
        probe_reset_seeding(make_env(name), name)
    probe_reset_seeding(GuessEnv(), "guess")
