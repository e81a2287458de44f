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
        alias="webshop",
        env_id="seedbench/WebShop-v0",
        entry_point="seedbench.envs.webshop.env:WebShopEnv",
        description="WebShop text shopping: original pages, BM25 search and reward; generated 1,000-product catalogue "
                    "or official data (needs the [webshop] extra)",
        requires="webshop",
        data_generator="seedbench.envs.webshop.catalogue:main",
    ),
    EnvEntry(
        alias="webshop-score",
        env_id="seedbench/WebShop-Score-v0",
        entry_point="seedbench.envs.webshop.env:WebShopEnv",
        description="WebShop with the purchase score in [0, 1] as reward instead of 10 for a perfect purchase",
        kwargs={"reward": "score"},
        requires="webshop",
    ),
]
