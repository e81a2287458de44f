"""What a run asks of vLLM's offline ``LLM`` in one process: where the engine runs, its seed and its context
length. Pure functions of the process layout and the run's settings, so they are tested without vLLM
(tests/test_vllm_args.py); `seedbench.engines.vllm.VLLMEngine` passes what they return to ``LLM(...)``.

The layouts (docs/scaling.md):

* **one process**: vLLM's in-process executor on the trainer's GPU, which must be ``cuda:0`` (vLLM's own
  worker takes local rank 0; pick another GPU with ``CUDA_VISIBLE_DEVICES``);
* **one process, tensor parallelism** (``vllm.tensor_parallel_size: N``): vLLM starts its own worker
  processes on GPUs ``0..N-1``;
* **torchrun, N ranks**: every rank holds its own engine on ``cuda:LOCAL_RANK`` beside its trainer, built
  with ``distributed_executor_backend="external_launcher"`` (what TRL's ``vllm_mode="colocate"`` and verl
  do): vLLM then joins the process group torchrun made instead of starting workers, and takes the device
  from ``LOCAL_RANK``. Each rank rolls out its own tasks, so each gets its own sampling seed,
  ``seed + rank`` (TRL: ``process_index // tensor_parallel_size``; rank 0 keeps the run's seed).
  Tensor parallelism across torchrun ranks is refused: the ranks of a tensor-parallel group must submit the
  same prompts, and seedbench's ranks each play their own tasks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProcessLayout:
    """This process's place in the run: its rank, its rank on this machine and the number of ranks."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> "ProcessLayout":
        """Read ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE`` as torchrun sets them; absent = one process."""
        env = os.environ if environ is None else environ
        return cls(rank=int(env.get("RANK", 0)), local_rank=int(env.get("LOCAL_RANK", 0)),
                   world_size=int(env.get("WORLD_SIZE", 1)))


def engine_seed(seed: int, layout: ProcessLayout) -> int:
    """The engine's sampling seed on this rank: ranks play different tasks, so they draw different streams."""
    return seed + layout.rank


def placement_kwargs(device_type: str, device_index: int | None, layout: ProcessLayout,
                     tensor_parallel_size: int) -> dict[str, Any]:
    """The ``LLM`` arguments that put the engine on this process's device, or a ValueError naming the fix."""
    tp = max(1, int(tensor_parallel_size))
    if layout.world_size > 1:
        if tp > 1:
            raise ValueError(f"vllm.tensor_parallel_size={tp} under torchrun ({layout.world_size} ranks) is not supported: "
                             "every rank holds its own engine; set vllm.tensor_parallel_size=1, or run one process "
                             "with vllm.tensor_parallel_size N")
        if device_type == "cuda" and device_index not in (None, layout.local_rank):
            raise ValueError(f"rank {layout.rank} trains on cuda:{device_index}, but its vLLM engine runs on "
                             f"cuda:{layout.local_rank} (LOCAL_RANK); leave model.device at auto or cuda")
        return {"distributed_executor_backend": "external_launcher", "tensor_parallel_size": 1}
    if device_type == "cuda" and device_index not in (None, 0):
        raise ValueError(f"in one process vLLM runs on cuda:0, but model.device is cuda:{device_index}; choose the "
                         f"GPU with CUDA_VISIBLE_DEVICES={device_index} and model.device=cuda")
    return {"tensor_parallel_size": tp} if tp > 1 else {}


def engine_max_model_len(configured: int | None, required: int | None, model_limit: int | None) -> int | None:
    """The context length vLLM allocates for: ``vllm.max_model_len`` when set, else the run's own budget
    (`seedbench.config.required_context`), else None (vLLM sizes for the model's own limit). A length the
    model's positions cannot hold, or an explicit one below the run's budget, is a ValueError naming the fix."""
    length = configured if configured is not None else required
    if configured is not None and required is not None and configured < required:
        raise ValueError(f"vllm.max_model_len={configured} is shorter than the run's longest prompt + response "
                         f"({required}); raise it or leave it empty")
    if length is not None and model_limit is not None and length > model_limit:
        raise ValueError(f"the run needs {length} tokens of context but the model has {model_limit} positions "
                         "(max_position_embeddings); lower rollout.max_prompt_tokens, the response budgets or "
                         "algo.analysis_max_prompt_tokens")
    return length


def llm_kwargs(*, checkpoint_dir: str, dtype: str, seed: int, on_cpu: bool, layout: ProcessLayout,
               device_index: int | None = None, tensor_parallel_size: int = 1, max_model_len: int | None = None,
               max_num_seqs: int = 256, enable_prefix_caching: bool = True, enforce_eager: bool | None = None,
               gpu_memory_utilization: float = 0.3, cpu_kv_cache_gib: float = 2.0) -> dict[str, Any]:
    """Every ``LLM(...)`` argument of a text model's engine (a vision model's are added by the engine).

    ``enforce_eager`` None = eager on CPU (a shorter start-up than compiling) and CUDA graphs on a GPU; the
    KV cache is ``cpu_kv_cache_gib`` on CPU and a `gpu_memory_utilization` share of the GPU otherwise."""
    kwargs: dict[str, Any] = dict(
        model=checkpoint_dir, tokenizer=checkpoint_dir, dtype=dtype, seed=engine_seed(seed, layout),
        enable_prefix_caching=enable_prefix_caching, max_model_len=max_model_len, max_num_seqs=max_num_seqs,
        enforce_eager=on_cpu if enforce_eager is None else enforce_eager,
        logprobs_mode="processed_logprobs", max_logprobs=0,
    )
    if on_cpu:
        kwargs["kv_cache_memory_bytes"] = int(cpu_kv_cache_gib * (1 << 30))
    else:
        kwargs["gpu_memory_utilization"] = gpu_memory_utilization
    kwargs.update(placement_kwargs("cpu" if on_cpu else "cuda", device_index, layout, tensor_parallel_size))
    return kwargs
