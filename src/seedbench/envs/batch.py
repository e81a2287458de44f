"""A batch of env instances behind one written interface, stepped in this process or in worker processes.

The rollout schedules (`seedbench.rollout.lockstep`, `seedbench.rollout.continuous`) see envs only
through `EnvBatch`: a fixed number of env *slots* addressed by index, reset and stepped several at a time.
Two implementations:

- `LocalEnvs` (here): the instances live in this process and step one after another; right for fast envs
  (Sokoban, the test envs) whose step costs less than a round trip to another process;
- `seedbench.envs.pool.EnvPool`: the instances live in worker processes that step concurrently, with
  per-call timeouts and restarts; right for slow envs (ALFWorld's TextWorld engine; WebShop, Search-QA).

Which one a run gets is the trainer's choice (an env asks for worker processes with its
``worker_processes`` attribute); a rollout works the same with either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable

StepResult = tuple[str, float, bool, bool, dict]
"""What ``env.step`` returns: ``(observation, reward, terminated, truncated, info)``."""

ResetRequest = tuple[int, "int | None", "dict | None"]
"""``(slot index, seed, options)`` for ``env.reset(seed=seed, options=options)``."""

class EnvUnavailable(RuntimeError):
    """Raised by an env's `step` when a service it depends on (a retrieval server, a web backend) is gone.

    Not a bug in the env and not a reason to stop a run: the batch drops that slot's episode (`step_many`
    returns ``None`` for it, the rollout marks the trajectory dropped and counts it) and the next reset
    starts afresh. `EnvPool` already drops an episode whose env raises anything; `LocalEnvs` drops only
    for this exception and lets every other one through (a real bug should stop the run)."""


LOCAL_STEP_THREADS = 16
"""Most threads worth stepping in-process envs with: they share one interpreter (the GIL), so threads only
help while an env waits (I/O, sleep, native code), and a handful already covers that."""


class EnvBatch(ABC):
    """``len(batch)`` env slots addressed by index ``0..len-1``; what the rollout schedules use.

    A slot is reset before it is stepped. A step result of ``None`` means the slot's episode was *dropped*
    (its worker process died, the call timed out, the env raised): the rollout marks that trajectory
    dropped and never steps the slot again until it is reset. Implementations may run the requests of one
    call concurrently, but results always come back in request order.
    """

    @abstractmethod
    def __len__(self) -> int:
        """Number of slots."""

    @property
    @abstractmethod
    def concurrency(self) -> int:
        """How many threads may usefully call `step_many` at the same time on *different* slots (an
        asynchronous rollout steps each episode from its own thread). ``1`` means calls must not overlap."""

    @abstractmethod
    def reset_many(self, requests: list[ResetRequest]) -> list[tuple[str, dict]]:
        """Reset the given slots: one ``(observation, info)`` per request, in request order. A reset that
        cannot be done raises (a broken env is a configuration error, not a dropped episode)."""

    @abstractmethod
    def step_many(self, actions: list[tuple[int, str]]) -> list[StepResult | None]:
        """Step the given slots with the model's raw text: one `StepResult`, or ``None`` for a dropped
        episode, per ``(index, text)``, in request order."""

    @abstractmethod
    def close(self) -> None:
        """Release the envs (and processes); idempotent."""

    def reset(self, index: int, seed: int | None, options: dict | None = None) -> tuple[str, dict]:
        """Reset one slot (a shorthand for `reset_many` with one request)."""
        return self.reset_many([(index, seed, options)])[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalEnvs(EnvBatch):
    """`num` env instances stepped in this process, one after another."""

    def __init__(self, make: Callable[[], Any], num: int):
        self.envs = [make() for _ in range(num)]
        self.dropped_episodes = 0  # episodes lost to `EnvUnavailable`

    def __len__(self) -> int:
        return len(self.envs)

    @property
    def concurrency(self) -> int:
        # Separate instances share no state, so different slots may step from different threads.
        return max(1, min(len(self.envs), LOCAL_STEP_THREADS))

    def reset_many(self, requests: list[ResetRequest]) -> list[tuple[str, dict]]:
        return [self.envs[index].reset(seed=seed, options=options) for index, seed, options in requests]

    def step_many(self, actions: list[tuple[int, str]]) -> list[StepResult | None]:
        return [self._step(index, text) for index, text in actions]

    def _step(self, index: int, text: str) -> StepResult | None:
        try:
            return self.envs[index].step(text)
        except EnvUnavailable:
            self.dropped_episodes += 1
            return None

    def close(self) -> None:
        for env in self.envs:
            env.close()
