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
        alias="sokoban-vision",
        env_id="seedbench/SokobanVision-v0",
        entry_point="seedbench.envs.sokoban:SokobanEnv",
        description="Sokoban with RGB frames in info['image'] (the paper's vision setting: 6x6, 1 box, 15 steps)",
        kwargs={"image": True},
    ),
    EnvEntry(
        alias="sokoban-vision-7x7",
        env_id="seedbench/SokobanVision7x7-v0",
        entry_point="seedbench.envs.sokoban:SokobanEnv",
        description="sokoban-vision in a 7x7 room, 30 steps (size generalization)",
        kwargs={"image": True, "dim_room": (7, 7), "max_steps": 30},
    ),
    EnvEntry(
        alias="sokoban-vision-2boxes",
        env_id="seedbench/SokobanVision2Boxes-v0",
        entry_point="seedbench.envs.sokoban:SokobanEnv",
        description="sokoban-vision with 2 boxes, 30 steps (box-count generalization)",
        kwargs={"image": True, "num_boxes": 2, "max_steps": 30},
    ),
    EnvEntry(
        alias="sokoban-vision-boxoban",
        env_id="seedbench/SokobanVisionBoxoban-v0",
        entry_point="seedbench.envs.boxoban:BoxobanEnv",
        description="sokoban-vision on Boxoban level files, split 'hard' (needs env_kwargs.levels or "
                    "$SEEDBENCH_BOXOBAN_LEVELS)",
        kwargs={"image": True},
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
