"""A batch of env instances behind one interface, stepped in this process or in worker processes."""

from __future__ import annotations

from typing import Any, Callable


class LocalEnvs:
    """`num` env instances stepped in this process (the ALFWorld worker pool has the same methods)."""

    def __init__(self, make: Callable[[], Any], num: int):
        self.envs = [make() for _ in range(num)]

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self, index: int, seed: int, options: dict) -> tuple[str, dict]:
        return self.envs[index].reset(seed=seed, options=options)

    def reset_many(self, requests: list[tuple[int, int, dict]]) -> list[tuple[str, dict]]:
        """Reset several envs, given as (index, seed, options); the worker pool does them in parallel."""
        return [self.reset(index, seed, options) for index, seed, options in requests]

    def step_many(self, actions: list[tuple[int, str]]) -> list[tuple | None]:
        """Step several envs; an entry is None when that env died (the episode is dropped)."""
        return [self.envs[index].step(text) for index, text in actions]

    def close(self) -> None:
        for env in self.envs:
            env.close()
