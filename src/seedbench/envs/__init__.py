"""The environment catalogue: one line per built-in env (Gymnasium/Minigrid style).

Entry points are strings, so an env's heavy dependencies (ALFWorld's TextWorld engine, ...) load only
when it is made. An env with offline data names its generator (``data_generator``), which
`seedbench data <alias>` runs. Third-party packages add envs through the ``seedbench.envs`` entry-point
group, see docs/adding_an_env.md and `seedbench.registry`.
"""

from __future__ import annotations

from seedbench.registry import EnvEntry

CATALOGUE: list[EnvEntry] = [
    EnvEntry(
        alias="choice",
        env_id="seedbench/TwoChoice-v0",
        entry_point="seedbench.envs.choice:TwoChoiceEnv",
        description="trivial one-step test env: say 'left' or 'right', one of them is rewarded",
    ),
    EnvEntry(
        alias="sokoban",
        env_id="seedbench/Sokoban-v0",
        entry_point="seedbench.envs.sokoban:SokobanEnv",
        description="text Sokoban, 6x6 room, 1 box, 15 steps (gym-sokoban rules, reverse-play generator)",
    ),
    EnvEntry(
        alias="alfworld",
        env_id="seedbench/ALFWorld-v0",
        entry_point="seedbench.envs.alfworld.env:ALFWorldEnv",
        description="ALFWorld text household tasks on the TextWorld engine (needs the [alfworld] extra)",
        requires="alfworld",
        data_generator="seedbench.envs.alfworld.data:main",
    ),
    EnvEntry(
        alias="search",
        env_id="seedbench/SearchQA-v0",
        entry_point="seedbench.envs.search.env:SearchQAEnv",
        description="Search-R1 protocol: <search> a fictional-entity corpus (bm25s), <answer> scored by exact "
                    "match; splits train/test/ood (needs the [search] extra)",
        requires="search",
        data_generator="seedbench.envs.search.data:main",
    ),
    EnvEntry(
        alias="search-countries",
        env_id="seedbench/SearchQA-Countries-v0",
        entry_point="seedbench.envs.search.env:SearchQAEnv",
        description="Search-QA on real facts from countryinfo (realism check; needs the [search] extra)",
        kwargs={"dataset": "countryinfo"},
        requires="search",
        data_generator="seedbench.envs.search.data:main",
    ),
    EnvEntry(
        alias="search-files",
        env_id="seedbench/SearchQA-Files-v0",
        entry_point="seedbench.envs.search.env:SearchQAEnv",
        description="Search-QA on your Search-R1 question files and wiki-18 corpus (kwargs test_file, "
                    "corpus_file, train_file; needs the [search] extra)",
        kwargs={"dataset": "files"},
        requires="search",
    ),
]
