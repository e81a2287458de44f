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
        entry_point="seedbench.envs.sokoban.boxoban:BoxobanEnv",
        description="sokoban-vision on Boxoban level files, split 'hard' (needs env_kwargs.levels or "
                    "$SEEDBENCH_BOXOBAN_LEVELS)",
        kwargs={"image": True},
    ),
    EnvEntry(
        alias="alfworld",
        env_id="seedbench/ALFWorld-v0",
        entry_point="seedbench.envs.alfworld.env:ALFWorldEnv",
        description="ALFWorld text household tasks on the TextWorld engine",
        requires="alfworld",
        data_generator="seedbench.envs.alfworld.data:main",
    ),
    EnvEntry(
        alias="frozenlake",
        env_id="seedbench/FrozenLake-v0",
        entry_point="seedbench.envs.frozenlake:FrozenLakeEnv",
        description="Gymnasium FrozenLake on seeded random 4x4 maps, not slippery; text + 192x192 image; "
                    "test_large split: 6x6",
    ),
    EnvEntry(
        alias="frozenlake-neighbours",
        env_id="seedbench/FrozenLakeNeighbours-v0",
        entry_point="seedbench.envs.frozenlake:FrozenLakeEnv",
        description="FrozenLake 4x4 whose text also names the four tiles next to the player (an easier "
                    "variant: the CPU quick start's env)",
        kwargs={"show_neighbours": True},
    ),
    EnvEntry(
        alias="frozenlake-neighbours-hard",
        env_id="seedbench/FrozenLakeNeighboursHard-v0",
        entry_point="seedbench.envs.frozenlake:FrozenLakeEnv",
        description="frozenlake-neighbours with half of the training maps forced to the hard kind (a hole left "
                    "of the goal; split test_hard: held-out maps of that kind)",
        kwargs={"show_neighbours": True, "hard_share": 0.5},
    ),
    EnvEntry(
        alias="frozenlake-8x8",
        env_id="seedbench/FrozenLake8x8-v0",
        entry_point="seedbench.envs.frozenlake:FrozenLakeEnv",
        description="FrozenLake on seeded random 8x8 maps (test_large: 10x10), 200 steps",
        kwargs={"size": 8, "large_size": 10, "max_steps": 200},
    ),
    EnvEntry(
        alias="ezpoints",
        env_id="seedbench/EZPoints-v0",
        entry_point="seedbench.envs.cards:EZPointsEnv",
        description="RL4VLM gym-cards EZPoints: two cards, build 12 with + and *, one token per step; 300x300 image",
    ),
    EnvEntry(
        alias="points24",
        env_id="seedbench/Points24-v0",
        entry_point="seedbench.envs.cards:Points24Env",
        description="RL4VLM gym-cards Points24: four cards, build 24 with + - * / ( ), solvable deals; 300x300 image",
    ),
    EnvEntry(
        alias="minigrid-empty",
        env_id="seedbench/MiniGrid-Empty-v0",
        entry_point="seedbench.envs.minigrid_env:MiniGridTextEnv",
        description="MiniGrid Empty-Random-5x5 (test_large: 6x6): reach the goal; egocentric text + 224x224 agent view",
        kwargs={"env_id": "MiniGrid-Empty-Random-5x5-v0", "large_env_id": "MiniGrid-Empty-Random-6x6-v0"},
        requires="minigrid",
    ),
    EnvEntry(
        alias="minigrid-empty-8x8",
        env_id="seedbench/MiniGrid-Empty-8x8-v0",
        entry_point="seedbench.envs.minigrid_env:MiniGridTextEnv",
        description="MiniGrid Empty with a random start, 8x8 (test_large: 10x10)",
        kwargs={"env_id": "MiniGrid-Empty-Random-5x5-v0", "env_kwargs": {"size": 8},
                "large_env_id": "MiniGrid-Empty-Random-5x5-v0", "large_env_kwargs": {"size": 10}},
        requires="minigrid",
    ),
    EnvEntry(
        alias="minigrid-doorkey",
        env_id="seedbench/MiniGrid-DoorKey-v0",
        entry_point="seedbench.envs.minigrid_env:MiniGridTextEnv",
        description="MiniGrid DoorKey-5x5 (test_large: 6x6): pick up the key, unlock the door, reach the goal",
        kwargs={"env_id": "MiniGrid-DoorKey-5x5-v0", "large_env_id": "MiniGrid-DoorKey-6x6-v0"},
        requires="minigrid",
    ),
    EnvEntry(
        alias="minigrid-doorkey-6x6",
        env_id="seedbench/MiniGrid-DoorKey-6x6-v0",
        entry_point="seedbench.envs.minigrid_env:MiniGridTextEnv",
        description="MiniGrid DoorKey-6x6 (test_large: 8x8)",
        kwargs={"env_id": "MiniGrid-DoorKey-6x6-v0", "large_env_id": "MiniGrid-DoorKey-8x8-v0"},
        requires="minigrid",
    ),
    EnvEntry(
        alias="babyai-gotoredball",
        env_id="seedbench/BabyAI-GoToRedBall-v0",
        entry_point="seedbench.envs.minigrid_env:MiniGridTextEnv",
        description="BabyAI GoToRedBall, 8x8 room with 7 distractors (test_large: a 10x10 room); BabyAIBot expert",
        kwargs={"env_id": "BabyAI-GoToRedBall-v0", "large_env_id": "BabyAI-GoToRedBall-v0",
                "large_env_kwargs": {"room_size": 10}},
        requires="minigrid",
    ),
    EnvEntry(
        alias="babyai-gotoobj",
        env_id="seedbench/BabyAI-GoToObj-v0",
        entry_point="seedbench.envs.minigrid_env:MiniGridTextEnv",
        description="BabyAI GoToObj in a 6x6 room (GoToObjS6; test_large: the 8x8 GoToObj); BabyAIBot expert",
        kwargs={"env_id": "BabyAI-GoToObjS6-v1", "large_env_id": "BabyAI-GoToObj-v0"},
        requires="minigrid",
    ),
    EnvEntry(
        alias="webshop",
        env_id="seedbench/WebShop-v0",
        entry_point="seedbench.envs.webshop.env:WebShopEnv",
        description="WebShop text shopping: original pages, BM25 search and reward; generated 1,000-product catalogue "
                    "or official data",
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
    EnvEntry(
        alias="search",
        env_id="seedbench/SearchQA-v0",
        entry_point="seedbench.envs.search.env:SearchQAEnv",
        description="Search-R1 protocol: <search> a fictional-entity corpus (bm25s), <answer> scored by exact "
                    "match; splits train/test/ood",
        requires="search",
        data_generator="seedbench.envs.search.data:main",
    ),
    EnvEntry(
        alias="search-countries",
        env_id="seedbench/SearchQA-Countries-v0",
        entry_point="seedbench.envs.search.env:SearchQAEnv",
        description="Search-QA on real facts from countryinfo (realism check)",
        kwargs={"dataset": "countryinfo"},
        requires="search",
        data_generator="seedbench.envs.search.data:main",
    ),
    EnvEntry(
        alias="search-files",
        env_id="seedbench/SearchQA-Files-v0",
        entry_point="seedbench.envs.search.env:SearchQAEnv",
        description="Search-QA on your Search-R1 question files and wiki-18 corpus (kwargs test_file, "
                    "corpus_file, train_file)",
        kwargs={"dataset": "files"},
        requires="search",
    ),
]
