"""`EnvPool`: an `EnvBatch` whose env instances live in worker processes, for slow envs.

The pool hosts ``num_envs`` env instances spread over ``num_workers`` processes (default: one per
available CPU). The envs of one worker step one after another; different workers step at the same time,
so a batch of ALFWorld (or WebShop, Search-QA) episodes does not step serially in the trainer's process.

Failure handling, so one stuck or crashed game never stops a training run:

- every env call must answer within ``timeout_s`` (a worker reports each env's result as soon as it has
  it, so the limit is per call, not per batch);
- a worker that misses the deadline is killed; a worker that dies is noticed at its next call; either way
  it is restarted at once, and every episode it hosted is *dropped*: `step_many` returns ``None`` for it
  (now, or at its next step) until the env is reset again. Drops are counted in `stats`, and each
  restart that drops episodes prints a one-line warning to stderr;
- an exception inside one env's ``step`` drops only that episode (the worker lives on), except a broken
  env contract (`EnvContractError`: a ``parse_action`` that raises, say), which is a bug of the env on every
  episode: the pool raises it in the caller's process, the same one line an in-process env gives.

`EnvPool` is thread-safe: calls from several threads that touch different workers run in parallel (an
asynchronous rollout can step each episode from its own thread), calls that share a worker take turns;
hence its `concurrency` is the number of workers.

Each worker makes its envs through `seedbench.registry.make_env`, so anything registered works (or a
``"module:callable"`` path). Process plumbing: `seedbench.envs.processes`.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from seedbench.envs.batch import EnvBatch, ResetRequest, StepResult
from seedbench.envs.contract import EnvContractError
from seedbench.envs.processes import (DEFAULT_STARTUP_TIMEOUT_S, WorkerProcess, WorkerStartError, available_cpus,
                                      load_callable, serve_requests)
from seedbench.registry import make_env

__all__ = ["EnvPool", "PoolStats", "WorkerStartError"]


def _make_env(spec: tuple[str, dict]):
    name, kwargs = spec
    if ":" in name:  # "package.module:callable"
        return load_callable(name)(**kwargs)
    return make_env(name, **kwargs)


# ----------------------------------------------------------------------------------------------------
# Child process main loops


def _env_worker(conn: Connection, spec: tuple[str, dict], indices: list[int]) -> None:
    def answer(envs, message):
        op = message[0]
        for index, payload in message[1]:
            try:
                if op == "reset":
                    seed, options = payload
                    result = envs[index].reset(seed=seed, options=options)
                else:
                    result = envs[index].step(payload)
                conn.send(("ok", index, result))
            except EnvContractError as err:
                conn.send(("contract", index, str(err)))
            except Exception:  # noqa: BLE001 - an env error drops that episode, not the worker
                conn.send(("error", index, traceback.format_exc()))

    def close(envs):
        for env in envs.values():
            try:
                env.close()
            except Exception:  # noqa: BLE001
                pass

    serve_requests(conn, lambda: {index: _make_env(spec) for index in indices}, answer, close)


# ----------------------------------------------------------------------------------------------------
# Parent side


@dataclass
class PoolStats:
    """Counters of everything that went wrong (and was survived)."""

    dropped_episodes: int = 0
    worker_restarts: int = 0
    timeouts: int = 0
    env_errors: int = 0
    errors: list[str] = field(default_factory=list)  # last few error texts, for the run log

    def note(self, text: str) -> None:
        self.errors = (self.errors + [text])[-10:]


class EnvPool(EnvBatch):
    """`num_envs` env instances in `num_workers` processes, with per-call timeouts and worker restarts.

    ``make_fn_spec`` is ``(name, kwargs)``: a registered env name (``"alfworld"``) or a
    ``"module:callable"`` path, called in each worker as ``make(name, **kwargs)``.

    `step_many` returns, per requested env, the usual ``(obs, reward, terminated, truncated, info)`` or
    ``None`` when its episode was dropped (worker died, call timed out, env raised).
    """

    def __init__(self, make_fn_spec: tuple[str, dict], num_envs: int, num_workers: int | None = None,
                 timeout_s: float = 60.0, startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
                 start_method: str = "spawn"):
        if num_envs < 1:
            raise ValueError("num_envs must be >= 1")
        self.spec = (make_fn_spec[0], dict(make_fn_spec[1]))
        self.num_envs = num_envs
        self.num_workers = max(1, min(num_envs, num_workers or available_cpus()))
        self.timeout_s = timeout_s
        self.startup_timeout_s = startup_timeout_s
        self._ctx = mp.get_context(start_method)
        self.worker_of = [index % self.num_workers for index in range(num_envs)]
        self._hosted = [[i for i in range(num_envs) if self.worker_of[i] == w] for w in range(self.num_workers)]
        self._workers = [self._start(w) for w in range(self.num_workers)]
        self._live: set[int] = set()  # episodes that have state in a worker (reset, not finished)
        self._dropped: set[int] = set()  # episodes lost with their worker, reported as None until reset
        self.stats = PoolStats()
        # Thread safety: a call holds the locks of the workers it talks to (taken in worker order, so calls
        # never deadlock); calls on different workers run in parallel. `_state` guards the shared sets.
        self._worker_locks = [threading.Lock() for _ in range(self.num_workers)]
        self._state = threading.Lock()
        self._closed = False

    def __len__(self) -> int:
        return self.num_envs

    @property
    def concurrency(self) -> int:
        return self.num_workers

    def worker_pids(self) -> list[int | None]:
        return [worker.pid for worker in self._workers]

    # -- public API --------------------------------------------------------------------------------

    def reset_many(self, requests: list[ResetRequest]) -> list[tuple[str, dict]]:
        """Reset several envs concurrently. A reset that fails because its worker died or timed out is
        retried once on the restarted worker; a second failure (or an env exception) raises."""
        for index, _, _ in requests:
            self._check_index(index)
        with self._hold([index for index, _, _ in requests]):
            with self._state:
                for index, _, _ in requests:
                    self._dropped.discard(index)
                    self._live.discard(index)
            results = self._run("reset", [(i, (seed, options)) for i, seed, options in requests])
            retry = [(i, (seed, options)) for (i, seed, options), r in zip(requests, results) if r is _LOST]
            if retry:
                again = dict(zip([i for i, _ in retry], self._run("reset", retry)))
                results = [again.get(i, r) if r is _LOST else r for (i, _, _), r in zip(requests, results)]
            out = []
            for (index, _, _), result in zip(requests, results):
                if isinstance(result, _Failure) or result is _LOST:
                    detail = result.detail if isinstance(result, _Failure) else "worker lost twice"
                    raise RuntimeError(f"reset of env {index} failed: {detail}")
                with self._state:
                    self._live.add(index)
                out.append(result)
            return out

    def step_many(self, actions: list[tuple[int, str]]) -> list[StepResult | None]:
        """Step several envs concurrently (envs of different workers at the same time). Safe to call from
        several threads at once; calls that share a worker take turns."""
        for index, _ in actions:
            self._check_index(index)
        results: list[tuple | None] = [None] * len(actions)
        with self._hold([index for index, _ in actions]):
            todo = []
            with self._state:
                for position, (index, action) in enumerate(actions):
                    if index in self._dropped:
                        continue
                    if index not in self._live:
                        raise RuntimeError(f"step on env {index} before reset (or after its episode ended)")
                    todo.append((position, index, action))
            outcomes = self._run("step", [(index, action) for _, index, action in todo])
            with self._state:
                for (position, index, _), outcome in zip(todo, outcomes):
                    if outcome is _LOST or isinstance(outcome, _Failure):
                        if isinstance(outcome, _Failure):  # env raised: drop just this episode
                            self.stats.env_errors += 1
                            self.stats.dropped_episodes += 1
                            self.stats.note(outcome.detail)
                            self._live.discard(index)
                        continue  # lost episodes were counted when their worker died
                    results[position] = outcome
                    if outcome[2] or outcome[3]:
                        self._live.discard(index)
        return results

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for worker in self._workers:
            worker.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- internals ---------------------------------------------------------------------------------

    def _check_index(self, index: int) -> None:
        if not 0 <= index < self.num_envs:
            raise IndexError(f"env index {index} out of range 0..{self.num_envs - 1}")

    @contextmanager
    def _hold(self, indices: list[int]):
        workers = sorted({self.worker_of[index] for index in indices})
        for worker in workers:
            self._worker_locks[worker].acquire()
        try:
            yield
        finally:
            for worker in reversed(workers):
                self._worker_locks[worker].release()

    def _start(self, worker: int) -> WorkerProcess:
        return WorkerProcess(self._ctx, _env_worker, (self.spec, self._hosted[worker]))

    def _restart(self, worker: int, reason: str) -> None:
        self._workers[worker].kill()
        with self._state:
            lost = [i for i in self._hosted[worker] if i in self._live]
            self.stats.dropped_episodes += len(lost)
            self.stats.worker_restarts += 1
            self.stats.note(f"worker {worker}: {reason}; dropped episodes {lost}")
            self._live.difference_update(lost)
            self._dropped.update(lost)
        if lost:  # otherwise the run only shows a count in rollout/dropped_episodes
            print(f"seedbench: warning: env worker {worker} {reason}; restarted it, dropping {len(lost)} "
                  f"episode{'s' if len(lost) != 1 else ''} (envs {', '.join(map(str, lost))}; counted in "
                  "rollout/dropped_episodes)", file=sys.stderr, flush=True)
        self._workers[worker] = self._start(worker)

    def _run(self, op: str, calls: list[tuple[int, Any]]) -> list[Any]:
        """Send `calls` grouped by worker, collect one answer per call with a per-call deadline."""
        by_worker: dict[int, list[int]] = {}
        for position, (index, _) in enumerate(calls):
            by_worker.setdefault(self.worker_of[index], []).append(position)
        answers: list[Any] = [_LOST] * len(calls)
        pending: dict[int, list[int]] = {}
        deadline: dict[int, float] = {}
        for worker, positions in by_worker.items():
            try:
                self._workers[worker].wait_ready(self.startup_timeout_s)
                self._workers[worker].conn.send((op, [calls[p] for p in positions]))
            except WorkerStartError:
                raise
            except (OSError, BrokenPipeError, EOFError) as err:
                self._restart(worker, f"dead before {op} ({err!r})")
                continue
            pending[worker] = list(positions)
            deadline[worker] = time.monotonic() + self.timeout_s
        while pending:
            conns = {self._workers[w].conn: w for w in pending}
            remaining = max(0.0, min(deadline[w] for w in pending) - time.monotonic())
            for conn in wait(list(conns), timeout=remaining):
                worker = conns[conn]
                try:
                    kind, index, payload = conn.recv()
                except (EOFError, OSError):
                    self._restart(worker, f"died during {op}")
                    del pending[worker]
                    continue
                position = pending[worker].pop(0)
                if calls[position][0] != index:  # protocol invariant: answers come in order
                    raise RuntimeError(f"worker {worker} answered env {index}, expected {calls[position][0]}")
                answers[position] = {"ok": payload, "contract": _Breach(payload)}.get(kind, _Failure(payload))
                deadline[worker] = time.monotonic() + self.timeout_s
                if not pending[worker]:
                    del pending[worker]
            now = time.monotonic()
            for worker in [w for w in pending if deadline[w] <= now]:
                stuck = calls[pending[worker][0]][0]
                with self._state:
                    self.stats.timeouts += 1
                self._restart(worker, f"env {stuck} {op} exceeded {self.timeout_s:.0f} s")
                del pending[worker]
        breach = next((answer for answer in answers if isinstance(answer, _Breach)), None)
        if breach is not None:  # raised once every answer is in, so the workers' replies stay in order
            raise EnvContractError(breach.detail)
        return answers


class _LostType:
    def __repr__(self) -> str:
        return "<lost>"


_LOST = _LostType()  # the call's worker died or timed out


@dataclass
class _Failure:
    detail: str


@dataclass
class _Breach:
    """A broken env contract in a worker: its one-line message."""

    detail: str
