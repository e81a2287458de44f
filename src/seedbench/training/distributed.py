"""Data-parallel training of one run over several processes (torch.distributed), and its one-process no-op.

Launch with ``torchrun --nproc-per-node N -m seedbench run ...`` (docs/scaling.md). The trainer asks
`seedbench.training.parallel.from_environment()` for a `SingleProcess` (no ``WORLD_SIZE`` > 1 in the
environment: every method is the identity, so one process behaves exactly as before) or a `DataParallel`
group, and calls the same methods either way:

- rollout: `shard_rollout` wraps the rollout function so each rank plays a contiguous share of the task
  list; groups are whole tasks, so a group is never split across ranks and group statistics (GRPO's
  advantages) stay exact. Episode and group ids are renumbered to the global task index, so they are the
  ids one process would give. Evaluation uses the same wrapper with ``gather=True``.
- update: `sample_layout` makes mini-batches from the *global* sample list (rank 0's samples, then rank
  1's, …) with the same shuffle on every rank; each rank runs forward/backward on its own members of a
  mini-batch and divides by the mini-batch's *global* response-token count, and `all_reduce_grads` sums
  the gradients, so the step is the one-process token-mean step on the same samples. A rank without
  members in a mini-batch still joins the all-reduce (every rank takes the same optimizer steps).
- logging: `gather_rollout` brings every rank's trajectories to every rank for metrics; only rank 0
  writes the run directory (`run_dir` gives the others a `RunDirReader`, which reads but never writes).

Parameters are broadcast from rank 0 at start and identical afterwards (same summed gradient, same
optimizer), so there is no DDP wrapper; gradients are all-reduced once per optimizer step as one flat
tensor (``distributed.strategy: ddp``). Models too big for one device use ``distributed.strategy: fsdp``
(`seedbench.training.fsdp.ShardedDataParallel`: the same group with FSDP2-sharded parameters).
"""

from __future__ import annotations

import atexit
import gc
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import torch

from seedbench.jsonio import read_json
from seedbench.training.rundir import RunDir
from seedbench.config import ConfigError
from seedbench.models.policy import save_policy
from seedbench.seeding import seed_everything


@dataclass
class SampleLayout:
    """Where the update's samples live: the response lengths of the global sample list (ranks in order)
    and which global indices belong to this rank (``offset`` .. ``offset + count``)."""

    lengths: list[int]
    counts: list[int]
    rank: int

    @property
    def offset(self) -> int:
        return sum(self.counts[: self.rank])

    def local(self, global_indices: Sequence[int]) -> list[int]:
        """This rank's members of a global mini-batch, as indices into its own samples (order kept)."""
        lo, hi = self.offset, self.offset + self.counts[self.rank]
        return [i - lo for i in global_indices if lo <= i < hi]

    def passes_per_rank(self, global_indices: Sequence[int], micro_batch_size: int) -> list[int]:
        """Forward passes each rank takes for a global mini-batch (it cuts its own members in micro-batches)."""
        passes, start = [], 0
        for count in self.counts:
            members = sum(1 for i in global_indices if start <= i < start + count)
            passes.append(math.ceil(members / micro_batch_size))
            start += count
        return passes

    def micro_batches(self, global_indices: Sequence[int], micro_batch_size: int) -> int:
        """Forward passes the whole mini-batch takes over all ranks."""
        return sum(self.passes_per_rank(global_indices, micro_batch_size))


class SingleProcess:
    """One process: every method is the identity, so the trainer reads the same with or without ranks."""

    rank = 0
    world_size = 1
    is_main = True

    def shard_rollout(self, run_episodes: Callable, gather: bool = False) -> Callable:
        return run_episodes

    def run_dir(self, path) -> RunDir:
        return RunDir(path)

    def broadcast_object(self, value: Any) -> Any:
        return value

    def all_gather_object(self, value: Any) -> list[Any]:
        return [value]

    def prepare_model(self, model: torch.nn.Module, seed: int) -> None:
        """Make every rank start from rank 0's weights and draw its own sampling stream (no-op here)."""

    def shard_model(self, model: torch.nn.Module) -> None:
        """Split the model's parameters over the ranks before the optimizer is built (fsdp only)."""

    def gather_rollout(self, trajectories: list, stats: Any, metrics: dict) -> tuple[list, Any, dict]:
        return trajectories, stats, metrics

    def sample_layout(self, lengths: list[int]) -> SampleLayout:
        return SampleLayout(list(lengths), [len(lengths)], 0)

    def all_reduce_grads(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        pass

    def sum_values(self, values: dict[str, float]) -> dict[str, float]:
        return values

    def barrier(self) -> None:
        pass

    def rng_state_of_rank(self, state: dict[str, Any]) -> Any:
        """This rank's RNG state from a checkpoint's ``state.pt`` (rank 0's is ``rng``)."""
        return state["rng"]

    # -- checkpoints: every rank calls these together (fsdp gathers shards in them) ---------------
    def model_state(self, model: torch.nn.Module) -> dict[str, torch.Tensor]:
        return model.state_dict()

    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        return optimizer.state_dict()

    def load_model_state(self, model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
        model.load_state_dict(state)

    def load_optimizer_state(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        optimizer.load_state_dict(state)

    def save_final_model(self, policy: Any, path) -> None:
        """``final_model/``: an HF checkpoint of the full weights, written by rank 0."""
        if self.is_main:
            save_policy(policy, path)

    def close(self) -> None:
        pass


class DataParallel(SingleProcess):
    """A torch.distributed process group (gloo on CPU, nccl on GPUs) set up from torchrun's environment."""

    def __init__(self):
        import torch.distributed as dist

        self.dist = dist
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
        if not dist.is_initialized():
            dist.init_process_group(backend=backend)
            atexit.register(collect_process_group_holders)
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.is_main = self.rank == 0

    # -- rollout ----------------------------------------------------------------------------------
    def _share(self, n: int) -> tuple[int, int]:
        """Contiguous [start, stop) of n items for this rank; the first n % world ranks take one more."""
        base, extra = divmod(n, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return start, start + base + (self.rank < extra)

    def shard_rollout(self, run_episodes: Callable, gather: bool = False) -> Callable:
        def sharded(envs, env, engine, tokenizer, tasks, *args, episode_prefix: str = "", **kwargs):
            if len(tasks) < self.world_size:
                raise ConfigError(f"{len(tasks)} task(s) cannot be shared by {self.world_size} ranks; raise "
                                  "rollout.tasks_per_batch and eval.num_tasks to at least the number of processes")
            start, stop = self._share(len(tasks))
            trajectories, stats = run_episodes(envs, env, engine, tokenizer, tasks[start:stop], *args,
                                               episode_prefix=episode_prefix, **kwargs)
            for traj in trajectories:  # local task index → global, the ids one process would give
                member = traj.episode_id.rsplit("-", 1)[1]
                traj.group_id = traj.group_id + start
                traj.episode_id = f"{episode_prefix}{traj.group_id}-{member}"
            if gather:
                trajectories, stats, _ = self.gather_rollout(trajectories, stats, {})
            return trajectories, stats

        return sharded

    def gather_rollout(self, trajectories: list, stats: Any, metrics: dict) -> tuple[list, Any, dict]:
        """Every rank's trajectories (rank order = task order), summed counts, slowest rank's times, and the
        agent's metrics averaged over ranks (a mean of rank means)."""
        parts = self.all_gather_object((trajectories, stats, metrics))
        merged = [t for part, _, _ in parts for t in part]
        total = type(stats)()
        for _, s, _ in parts:
            for name, value in vars(s).items():
                combine = max if name.endswith("_s") else (lambda a, b: a + b)
                setattr(total, name, combine(getattr(total, name), value))
        averaged: dict[str, Any] = {}
        for key, own in metrics.items():
            values = [m.get(key) for _, _, m in parts]
            numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
            averaged[key] = float(sum(values) / len(values)) if numbers else own  # None or text: this rank's
        return merged, total, averaged

    # -- update -----------------------------------------------------------------------------------
    def sample_layout(self, lengths: list[int]) -> SampleLayout:
        everyone = self.all_gather_object(list(lengths))
        return SampleLayout([n for part in everyone for n in part], [len(part) for part in everyone], self.rank)

    def all_reduce_grads(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        """Sum gradients over ranks in one flat all-reduce. A parameter without a gradient on every rank
        keeps none (AdamW then skips it, as one process would)."""
        params = [p for p in parameters if p.requires_grad]
        if not params:
            return
        device = params[0].device
        has = torch.tensor([float(p.grad is not None) for p in params], device=device)
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float() for p in params])
        self.dist.all_reduce(has)
        self.dist.all_reduce(flat)
        start = 0
        for p, present in zip(params, has.tolist()):
            n = p.numel()
            p.grad = flat[start : start + n].view_as(p).to(p.dtype) if present else None
            start += n

    def sum_values(self, values: dict[str, float]) -> dict[str, float]:
        totals: dict[str, float] = {}
        for part in self.all_gather_object(dict(values)):
            for key, value in part.items():
                totals[key] = totals.get(key, 0.0) + float(value)
        return totals

    # -- plumbing ---------------------------------------------------------------------------------
    def run_dir(self, path) -> RunDir:
        return RunDir(path) if self.is_main else RunDirReader(path)

    def broadcast_object(self, value: Any) -> Any:
        box = [value]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def all_gather_object(self, value: Any) -> list[Any]:
        out: list[Any] = [None] * self.world_size
        self.dist.all_gather_object(out, value)
        return out

    def prepare_model(self, model: torch.nn.Module, seed: int) -> None:
        for tensor in list(model.parameters()) + list(model.buffers()):
            self.dist.broadcast(tensor.data, src=0)
        if self.rank:  # rank 0 keeps the one-process stream; the others sample differently
            seed_everything(seed + 1_000_003 * self.rank)

    def barrier(self) -> None:
        self.dist.barrier()

    def rng_state_of_rank(self, state: dict[str, Any]) -> Any:
        ranks = state.get("rng_ranks") or []
        return ranks[self.rank] if self.rank < len(ranks) else state["rng"]

    def close(self) -> None:
        if self.dist.is_initialized():
            self.dist.destroy_process_group()


def collect_process_group_holders() -> None:
    """Free, while the interpreter is still whole, the objects that keep a destroyed process group alive.

    `destroy_process_group` unregisters the groups, but an FSDP-sharded model still holds them (its DTensors'
    device mesh, its parameter groups), and the model sits in reference cycles (module hooks), so without a
    collection it is freed only during interpreter shutdown; gloo's group destroyed there aborts the process
    now and then ("terminate called without an active exception") after the run has finished. Registered
    at exit once the group is made, so it runs after the entry point has returned and dropped its trainer."""
    gc.collect()


class RunDirReader(RunDir):
    """The run directory as ranks other than 0 see it: readable, never written."""

    def log(self, name: str, record: dict[str, Any]) -> None:
        pass

    def write_config(self, config: dict[str, Any]) -> None:
        pass

    def read_summary(self) -> dict[str, Any]:
        return read_json(self.file("summary.json"))  # rank 0 alone sets a damaged one aside

    def update_summary(self, **fields: Any) -> dict[str, Any]:
        return self.read_summary()

    def finish_checkpoint(self, path, keep: int) -> None:
        pass

    def truncate_logs_after(self, iteration: int) -> None:
        pass

    def drop_records(self, name: str, unwanted) -> None:
        pass

    def set_aside_checkpoint(self, path, reason: str) -> None:
        pass

