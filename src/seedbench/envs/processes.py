"""Worker processes with a deadline: the plumbing under `seedbench.envs.pool.EnvPool`, and `run_tasks`
for one-shot jobs (ALFWorld game generation) that may hang or crash.

Workers are started with the ``spawn`` method (no fork of a parent that holds model weights and threads);
as with any spawn-based multiprocessing, a script that starts workers needs the
``if __name__ == "__main__":`` guard. A worker answers over a duplex pipe with ``(kind, key, payload)``
messages: ``ready``/``fatal`` once at start, then ``ok``/``error`` per call.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

DEFAULT_STARTUP_TIMEOUT_S = 300.0  # importing the env stack in a fresh process is slow on a busy machine


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def load_callable(path: str):
    """Import ``"package.module:attr"`` (in a worker, where only picklable names can travel)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


class WorkerStartError(RuntimeError):
    """A worker could not start (import error, bad env kwargs, missing data): a configuration error."""


class WorkerProcess:
    """One child process running ``target(conn, *args)`` and the parent's end of its duplex pipe."""

    def __init__(self, ctx, target: Callable, args: tuple):
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=target, args=(child, *args), daemon=True)
        self.process.start()
        child.close()
        self.ready = False

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the worker reported ``ready``; raise `WorkerStartError` on a failed or slow start."""
        if self.ready:
            return
        if not self.conn.poll(timeout_s):
            self.kill()
            raise WorkerStartError(f"worker {self.pid} did not start within {timeout_s:.0f} s")
        try:
            kind, _, detail = self.conn.recv()
        except EOFError as err:
            raise WorkerStartError(f"worker {self.pid} died while starting") from err
        if kind != "ready":
            self.kill()
            raise WorkerStartError(f"worker failed to start:\n{detail}")
        self.ready = True

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()

    def close(self) -> None:
        """Ask the worker to finish, kill it if it does not within 5 s."""
        try:
            self.conn.send(("close",))
        except (OSError, BrokenPipeError):
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()


# ----------------------------------------------------------------------------------------------------
# One-shot tasks


def serve_requests(conn: Connection, setup: Callable[[], Any], handle: Callable[[Any, tuple], None],
                   close: Callable[[Any], None] = lambda state: None) -> None:
    """A worker process's main loop: build its state with `setup` (any failure is sent as ``fatal`` so
    the parent can say why the worker never started), report ``ready``, then pass every message to
    ``handle(state, message)`` until ``("close",)`` or the parent hangs up."""
    try:
        state = setup()
    except BaseException:  # noqa: BLE001 - report any failure to the parent
        conn.send(("fatal", None, traceback.format_exc()))
        return
    conn.send(("ready", None, None))
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "close":
            close(state)
            return
        handle(state, message)


def _task_worker(conn: Connection, fn_path: str) -> None:
    def run(fn, message):
        try:
            conn.send(("ok", None, fn(*message[1])))
        except Exception:  # noqa: BLE001 - a failing task is reported, the worker stays
            conn.send(("error", None, traceback.format_exc()))

    serve_requests(conn, lambda: load_callable(fn_path), run)


@dataclass
class TaskFailure:
    """What `run_tasks` yields instead of a result: ``kind`` is ``"timeout"``, ``"crash"`` or ``"error"``."""

    kind: str
    detail: str = ""


def run_tasks(fn_path: str, next_task: Callable[[], tuple[Any, tuple] | None], num_workers: int,
              timeout_s: float, startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
              start_method: str = "spawn") -> Iterator[tuple[Any, Any]]:
    """Run ``fn(*args)`` for tasks pulled from ``next_task() -> (key, args) | None`` in worker processes.

    Yields ``(key, result)`` in completion order; ``result`` is a `TaskFailure` when the task raised,
    crashed its worker or ran past `timeout_s` (the worker is then killed and replaced). `next_task` is
    called whenever a worker is free, so the caller can decide what to run next from the results so far;
    the iteration ends when it returns None and nothing is running."""
    ctx = mp.get_context(start_method)
    workers: list[WorkerProcess | None] = [None] * max(1, num_workers)  # started when first needed
    running: dict[int, tuple[Any, float]] = {}
    try:
        while True:
            batch = []
            for w in range(len(workers)):
                if w in running:
                    continue
                task = next_task()
                if task is None:
                    break
                if workers[w] is None:
                    workers[w] = WorkerProcess(ctx, _task_worker, (fn_path,))  # the batch's workers start together
                batch.append((w, task))
            for w, (key, args) in batch:
                workers[w].wait_ready(startup_timeout_s)
                workers[w].conn.send(("call", args))
                running[w] = (key, time.monotonic() + timeout_s)
            if not running:
                return
            conns = {workers[w].conn: w for w in running}
            remaining = max(0.0, min(deadline for _, deadline in running.values()) - time.monotonic())
            for conn in wait(list(conns), timeout=remaining):
                w = conns[conn]
                key, _ = running.pop(w)
                try:
                    kind, _, payload = conn.recv()
                except (EOFError, OSError):
                    workers[w].kill()
                    workers[w] = None
                    yield key, TaskFailure("crash", "worker process died")
                    continue
                yield key, payload if kind == "ok" else TaskFailure("error", payload)
            now = time.monotonic()
            for w in [w for w, (_, deadline) in running.items() if deadline <= now]:
                key, _ = running.pop(w)
                workers[w].kill()
                workers[w] = None
                yield key, TaskFailure("timeout", f"exceeded {timeout_s:.0f} s")
    finally:
        for worker in workers:
            if worker is not None:
                worker.close()
