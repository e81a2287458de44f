"""How a run spreads over processes: one interface (`SingleProcess`'s methods), three implementations.

- ``single``: `seedbench.training.distributed.SingleProcess`, every method the identity;
- ``ddp``: `seedbench.training.distributed.DataParallel`, replicated parameters, one all-reduce per step;
- ``fsdp``: `seedbench.training.fsdp.ShardedDataParallel`, parameters, gradients and AdamW state sharded.

The trainer touches the interface in three places only: at build time (`seedbench.training.build`: the
starting model and run directory name chosen by rank 0, rank 0's weights on every rank, the model sharded,
the rollout function sharded once), inside the update (`seedbench.training.update`: the global sample
layout, the gradient sync, the summed metrics), and for the run directory (rank 0 writes it; checkpoints
and the summary gather what every rank holds first, `seedbench.training.run_state` and ``records``).
"""

from __future__ import annotations

import os

from seedbench.training.distributed import DataParallel, SingleProcess
from seedbench.training.fsdp import ShardedDataParallel

STRATEGIES = {"ddp": DataParallel, "fsdp": ShardedDataParallel}


def from_environment(strategy: str = "ddp") -> SingleProcess:
    """Under a launcher that set ``WORLD_SIZE`` > 1 (torchrun, accelerate): `DataParallel` (``ddp``,
    replicated parameters) or `ShardedDataParallel` (``fsdp``); else `SingleProcess` whatever the strategy."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return SingleProcess()
    return STRATEGIES.get(strategy, DataParallel)()
