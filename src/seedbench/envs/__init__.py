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
        alias="image-choice",
        env_id="seedbench/ImageChoice-v0",
        entry_point="seedbench.envs.image_choice:ImageChoiceEnv",
        description="one-step vision test env: red image → left, blue → right (the answer is only in the image)",
    ),
    EnvEntry(
        alias="image-choice-blank",
        env_id="seedbench/ImageChoiceBlank-v0",
        entry_point="seedbench.envs.image_choice:ImageChoiceEnv",
        description="image-choice with a uniform grey frame: the control that stays at chance",
        kwargs={"blank": True},
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
]
