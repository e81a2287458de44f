"""A run's checkpoints: the model, the optimizer, the counters and every rank's RNG stream, written so
that a run killed at any point resumes to exactly the records of an uninterrupted one.

Each file is written atomically and ``COMPLETE`` (with the files' sizes) last (`RunDir.finish_checkpoint`),
so a checkpoint is either whole or ignored; a damaged one is set aside and the one before it is loaded.
Every rank calls both functions together: under ``fsdp`` the full tensors are gathered from the shards.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch

from seedbench.jsonio import RunFileError, RunFileWarning
from seedbench.training.checkpoint_files import CheckpointFileError, load_torch_file, save_torch_atomic
from seedbench.training.distributed import SingleProcess
from seedbench.training.rng import rng_state, set_rng_state
from seedbench.training.rundir import RunDir


def checkpoint_iteration(path: Path) -> int:
    """``checkpoints/it_12`` → 12."""
    return int(path.name.split("_")[1])


def save_checkpoint(parallel: SingleProcess, run_dir: RunDir, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, counters: dict[str, int], keep: int) -> Path | None:
    """Model, optimizer and state files, each written atomically; COMPLETE (with their sizes) last.
    Rank 0 writes (and returns the directory); the other ranks only take part in the gathers."""
    rng_ranks = parallel.all_gather_object(rng_state())  # each rank's stream; rank 0 saves them all
    model_state = parallel.model_state(model)
    optimizer_state = parallel.optimizer_state(optimizer)
    if not parallel.is_main:
        return None
    path = run_dir.new_checkpoint_dir(counters["iteration"])
    save_torch_atomic(dict(model_state), path / "model.pt")
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
            model_state = load_torch_file(candidate / "model.pt", map_location=device)
            optimizer_state = load_torch_file(candidate / "optimizer.pt", map_location=device)
            state = load_torch_file(candidate / "state.pt", weights_only=False)
        except CheckpointFileError as err:
            warnings.warn(f"checkpoint {candidate.name} is not usable: {err}; trying the one before it",
                          RunFileWarning, stacklevel=3)
            run_dir.set_aside_checkpoint(candidate, str(err))
            continue
        parallel.load_model_state(model, model_state)  # fsdp: each rank keeps its shard of the full tensors
        parallel.load_optimizer_state(optimizer, optimizer_state)
        set_rng_state(parallel.rng_state_of_rank(state))
        return dict(state["counters"])
    raise RunFileError(f"{run_dir.path}: no complete checkpoint can be loaded ({path.name} and every "
                       "earlier one is damaged, see the warnings); restore the files or start the run again "
                       "without --resume")
