"""Where an update's time goes, pass by pass, in every run's metrics.

An update is several passes over the same samples: π_old's scoring pass (when ``optim.old_logprobs`` needs
one), the frozen reference's scoring pass (KL), the loss forwards with gradient, the agent's loss, the
backwards, the casts between the fp32 master weights and the bf16 compute copy, and the gradient sync,
clipping and optimizer step. Their shares change with the dtype and the layout (docs/performance.md: in bf16
the matrix products are a third of the update), so the split is measured on every update, not only in a
profiler run: ``time/update_<pass>_s`` in metrics.jsonl (docs/metrics.md).

CUDA kernels run asynchronously; on a CUDA device each timed pass synchronizes before and after, so its
seconds are the pass's and not the next one's. On a CPU the passes run synchronously and nothing is added.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Iterator

PASSES = ("old_logprobs", "reference", "forward", "loss", "backward", "casts", "step")
"""The timed passes, in the order an update runs them (`PassClock.metrics` reports each, zero if it did not run)."""


class PassClock:
    """Wall seconds per pass of one update (`timed`), summed over its mini-batches and micro-batches."""

    def __init__(self, device: Any = None, now: Callable[[], float] = time.perf_counter):
        self.seconds = {name: 0.0 for name in PASSES}
        self.cuda = getattr(device, "type", None) == "cuda"
        self.now = now

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    @contextlib.contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """Add the wall time of the block to pass `name` (one of `PASSES`)."""
        if name not in self.seconds:
            raise KeyError(f"unknown update pass {name!r}; passes: {', '.join(PASSES)}")
        self._sync()
        start = self.now()
        try:
            yield
        finally:
            self._sync()
            self.seconds[name] += self.now() - start

    def metrics(self) -> dict[str, float]:
        """``time/update_<pass>_s`` for every pass of `PASSES`."""
        return {f"time/update_{name}_s": seconds for name, seconds in self.seconds.items()}
