"""A run's checkpoints: the model, the optimizer, the counters and every rank's RNG stream, written so
that a run killed at any point resumes to exactly the records of an uninterrupted one.

Each file is written atomically and ``COMPLETE`` (with the files' sizes) last (`RunDir.finish_checkpoint`),
so a checkpoint is either whole or ignored; a damaged one is set aside and the one before it is loaded.
Every rank calls both functions together: under ``fsdp`` the full tensors are gathered from the shards.

Every file is tensors and plain data, read with ``weights_only=True`` (`load_torch_file`): ``state.pt``
holds the counters and the RNG streams as lists and numbers (`seedbench.training.rng.plain_rng_state`), so
resuming or evaluating a run directory from elsewhere never unpickles a class. A ``state.pt`` written before
that keeps numpy's RNG key as an array; `load_run_state` reads it with exactly numpy's array, dtype and
array-rebuild function allowed (data, not code), so those runs still resume.

A LoRA run's ``model.pt`` keeps the adapters only (`trainable_state`): the frozen base weights are the run's
starting model, which a resume loads by name and checks against its checksum, so saving them again would
only add the base model's size (0.54 GB for SmolLM2-135M) to every checkpoint. A checkpoint that holds the
full state (any full fine-tune, and LoRA checkpoints written before) loads as it always did.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch

from seedbench.jsonio import RunFileError, RunFileWarning
from seedbench.models.weights import is_lora
from seedbench.training.checkpoint_files import CheckpointFileError, load_torch_file, save_torch_atomic
from seedbench.training.distributed import SingleProcess
from seedbench.training.rng import plain_rng_state, rng_from_plain, rng_state, set_rng_state
from seedbench.training.rundir import RunDir


def checkpoint_iteration(path: Path) -> int:
    """``checkpoints/it_12`` → 12."""
    return int(path.name.split("_")[1])


def trainable_state(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """What a checkpoint keeps of `model`'s `state`: everything, or for a LoRA model its trainable tensors."""
    if not is_lora(model):
        return state
    trainable = {name for name, param in model.named_parameters() if param.requires_grad}
    return {name: tensor for name, tensor in state.items() if name in trainable}


def with_frozen_weights(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A checkpoint's `state` completed with `model`'s frozen tensors where it holds a LoRA model's trainable
    ones only; a `CheckpointFileError` when a trainable tensor is missing."""
    if not is_lora(model):
        return state
    full = model.state_dict()
    missing = {name for name, param in model.named_parameters() if param.requires_grad} - set(state)
    if missing:
        raise CheckpointFileError(f"model.pt lacks {len(missing)} of the LoRA adapters' tensors (e.g. {min(missing)})")
    return {**full, **state}


def save_checkpoint(parallel: SingleProcess, run_dir: RunDir, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, counters: dict[str, int], keep: int) -> Path | None:
    """Model, optimizer and state files, each written atomically; COMPLETE (with their sizes) last.
    Rank 0 writes (and returns the directory); the other ranks only take part in the gathers."""
    rng_ranks = parallel.all_gather_object(plain_rng_state(rng_state()))  # each rank's stream; rank 0 saves them all
    model_state = parallel.model_state(model)
    optimizer_state = parallel.optimizer_state(optimizer)
    if not parallel.is_main:
        return None
    path = run_dir.new_checkpoint_dir(counters["iteration"])
    save_torch_atomic(trainable_state(model, dict(model_state)), path / "model.pt")
    save_torch_atomic(optimizer_state, path / "optimizer.pt")
    state = {"counters": dict(counters), "rng": rng_ranks[0]}
    if len(rng_ranks) > 1:
        state["rng_ranks"] = rng_ranks
    save_torch_atomic(state, path / "state.pt")
    run_dir.finish_checkpoint(path, keep)
    return path


def load_checkpoint(parallel: SingleProcess, run_dir: RunDir, path: Path, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, device: Any) -> dict[str, int]:
    """Load checkpoint `path` into `model`, `optimizer` and this rank's RNG streams and return its counters;
    when one of its files is missing or damaged, the newest earlier complete checkpoint instead (with a
    warning naming the file; the damaged one is marked DAMAGED)."""
    candidates = [path] + [p for p in run_dir.complete_checkpoints() if checkpoint_iteration(p) < checkpoint_iteration(path)]
    for candidate in candidates:
        try:
            problem = run_dir.checkpoint_problem(candidate)
            if problem is not None:
                raise CheckpointFileError(problem)
            model_state = with_frozen_weights(model, load_torch_file(candidate / "model.pt", map_location=device))
            optimizer_state = load_torch_file(candidate / "optimizer.pt", map_location=device)
            state = load_run_state(candidate / "state.pt")
        except CheckpointFileError as err:
            warnings.warn(f"checkpoint {candidate.name} is not usable: {err}; trying the one before it",
                          RunFileWarning, stacklevel=3)
            run_dir.set_aside_checkpoint(candidate, str(err))
            continue
        parallel.load_model_state(model, model_state)  # fsdp: each rank keeps its shard of the full tensors
        parallel.load_optimizer_state(optimizer, optimizer_state)
        set_rng_state(rng_from_plain(parallel.rng_state_of_rank(state)))
        return dict(state["counters"])
    raise RunFileError(f"{run_dir.path}: no complete checkpoint can be loaded ({path.name} and every "
                       "earlier one is damaged, see the warnings); restore the files, or start the run again in a "
                       f"new directory: seedbench run --config {run_dir.path / 'config.yaml'} --output NEW_DIR")


def load_run_state(path: Path) -> dict[str, Any]:
    """A checkpoint's ``state.pt``: its counters and RNG streams, read as tensors and plain data (plus the
    numpy RNG key array of files written before the streams were saved as lists)."""
    state = load_torch_file(path, allow=_numpy_array_globals())
    if not isinstance(state, dict) or not isinstance(state.get("counters"), dict):
        raise CheckpointFileError(f"{path} is not a seedbench state file (no counters)")
    return state


def _numpy_array_globals() -> list[Any]:
    """What unpickling a plain numpy array needs: the array and dtype classes and numpy's rebuild function
    (also under numpy 1's module name, for files written with it, where torch can alias a name)."""
    import numpy as np

    rebuild = np._core.multiarray._reconstruct if hasattr(np, "_core") else np.core.multiarray._reconstruct
    allowed: list[Any] = [rebuild, np.ndarray, np.dtype, type(np.dtype(np.uint32))]
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 6):
        allowed.append((rebuild, "numpy.core.multiarray._reconstruct"))
    return allowed
