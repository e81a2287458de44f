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
  mini-batch and divides by the mini-batch's *global* response-token count, and the gradients are summed
  over the ranks, so the step is the one-process token-mean step on the same samples. The forwards run
  through torch's `DistributedDataParallel` (`training_module`), whose bucketed all-reduces overlap the
  backward pass; a rank's earlier forward batches of a mini-batch run under ``no_sync``
  (`backward_context`), so only its last backward reduces, the gradients accumulated by all of them. A rank
  without members in a mini-batch joins that reduction with a zero-loss pass in `all_reduce_grads`
  (every rank takes the same optimizer steps).
- logging: `gather_rollout` brings every rank's trajectories to every rank for metrics; only rank 0
  writes the run directory (`run_dir` gives the others a `RunDirReader`, which reads but never writes).

Parameters are broadcast from rank 0 at start and identical afterwards (same summed gradient, same
optimizer). DDP's reduction is a plain sum (`_sum_hook`; DDP's own divides by the world size, and the loss
already has the global token count) in fp32. With the bf16 compute copy (``model.bf16_compute=param_copy``)
DDP wraps the copy, and its hook (`_fold_into_master_hook`) reduces, per bucket, the fp32 master gradients
the earlier forward batches accumulated plus this backward's bf16 ones, and writes the sum into the master
``.grad``: accumulation and reduction stay fp32, as in one process. Models too big for one device use
``distributed.strategy: fsdp`` (`seedbench.training.fsdp.ShardedDataParallel`: the same group with
FSDP2-sharded parameters).
"""

from __future__ import annotations

import atexit
import contextlib
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

    def training_module(self, module: torch.nn.Module, compute: Any = None) -> torch.nn.Module:
        """The module the update's forwards run through (`module` itself here; DDP's wrapper under ``ddp``).
        `compute`: the bf16 `ComputeCopy` whose ``model`` is `module`, if any."""
        return module

    def backward_context(self, last: bool) -> Any:
        """Around one forward and backward of a mini-batch; `last`: this rank's last one before the step."""
        return contextlib.nullcontext()

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

    def training_module(self, module: torch.nn.Module, compute: Any = None) -> torch.nn.Module:
        """`module` wrapped once in `DistributedDataParallel` (the same wrapper on every later call)."""
        wrapped = self._wrapped.get(id(module)) if hasattr(self, "_wrapped") else None
        if wrapped is None:
            from torch.nn.parallel import DistributedDataParallel

            class Replicated(DistributedDataParallel):
                """DDP whose attribute lookups fall through to the model (``config``, ``dtype``, ...)."""

                def __getattr__(self, name: str) -> Any:
                    try:
                        return super().__getattr__(name)
                    except AttributeError:
                        return getattr(self.module, name)

            device = next(module.parameters()).device
            wrapped = Replicated(module, device_ids=[device] if device.type == "cuda" else None,
                                 broadcast_buffers=False, init_sync=False)  # identical already (prepare_model)
            if compute is not None and compute.model is module:
                masters = {id(low): master for master, low in compute.pairs}
                wrapped.register_comm_hook(masters, _fold_into_master_hook)
            else:
                wrapped.register_comm_hook(None, _sum_hook)
            self._wrapped = {**getattr(self, "_wrapped", {}), id(module): wrapped}
        self._current = wrapped
        return wrapped

    def backward_context(self, last: bool) -> Any:
        """DDP's ``no_sync`` for all but this rank's last forward and backward of the mini-batch."""
        ddp = getattr(self, "_current", None)
        if ddp is None:
            return contextlib.nullcontext()
        if last:
            self._synced = True
            return contextlib.nullcontext()
        return ddp.no_sync()

    def all_reduce_grads(self, parameters: Iterable[torch.nn.Parameter]) -> None:
        """The gradients were summed by DDP in this rank's last backward; a rank that had no member in the
        mini-batch (no backward) joins that reduction here with one zero-loss pass on a one-token input."""
        ddp = getattr(self, "_current", None)
        if ddp is not None and not getattr(self, "_synced", False):
            ids = torch.zeros((1, 1), dtype=torch.long, device=next(ddp.module.parameters()).device)
            (ddp(input_ids=ids).logits.float().sum() * 0.0).backward()
        self._synced = False

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


def _sum_hook(state, bucket):  # unannotated: DDP checks a hook's annotations against its own types
    """DDP communication hook: the bucket's gradients summed over ranks (in fp32, whatever their dtype)."""
    import torch.distributed as dist

    buffer = bucket.buffer()
    flat = buffer.float() if buffer.dtype != torch.float32 else buffer
    future = dist.all_reduce(flat, async_op=True).get_future()
    return future.then(lambda f: f.value()[0].to(buffer.dtype))


def _fold_into_master_hook(masters, bucket):  # unannotated: DDP checks a hook's annotations
    """DDP communication hook for the bf16 compute copy: per bucket, the fp32 master gradients accumulated by
    the earlier (``no_sync``) backwards plus this backward's bf16 ones, summed over ranks in fp32 and written
    into the master ``.grad``; the copy's own gradients come back zero (`ComputeCopy.move_grads` adds them)."""
    import torch.distributed as dist

    pairs = [(masters[id(p)], g) for p, g in zip(bucket.parameters(), bucket.gradients())]
    flat = torch.cat([(g.float() if m.grad is None else m.grad + g.float()).reshape(-1) for m, g in pairs])
    buffer = bucket.buffer()

    def write(future: Any) -> torch.Tensor:
        total, start = future.value()[0], 0
        for master, _ in pairs:
            n = master.numel()
            master.grad = total[start : start + n].view_as(master)
            start += n
        return torch.zeros_like(buffer)

    return dist.all_reduce(flat, async_op=True).get_future().then(write)


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

