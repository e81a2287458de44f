"""Experiments: every (env, agent, model, seed) of a spec as one ``seedbench run``, skipped when done,
resumed when partial.

A spec is YAML (see ``configs/experiments/tiny_choice.yaml``)::

    name: tiny-choice
    output: experiments/tiny-choice   # where run directories go (--output overrides)
    envs: [choice]
    agents: [grpo, seed]              # or {name: seed, config: my_seed.yaml, set: {algo.opd_coef: 0.02}}
                                      # or {name: grpo, label: control, set: {optim.lr: 0}}: an arm
                                      # or {name: grpo, label: start, iterations: 0}: evaluate the start only
    seeds: [0, 1, 2]
    model: tiny                       # or models: [tiny, smollm2-135m]
    budget: {iterations: 4}           # or {trajectories: 64}: iterations = ceil(64 / (tasks_per_batch × group_size))
    config: null                      # YAML recipe passed as --config (relative to the spec file)
    set: {eval.every: 2}              # --set overrides for every run
    resources: {gpus_per_run: 0, cpus_per_run: 1}

Each run is a subprocess (``python -m seedbench run ... --output <run dir> [--resume]``), so a crash or a
kill of one run never corrupts another, and a killed experiment restarts cleanly: a run directory whose
summary.json says ``complete: true`` is skipped, one with any content is continued with ``--resume``
(the trainer resumes from its last checkpoint), and a missing one starts fresh, unless the spec's
``archive`` folder holds it complete (a study continued on another machine): then it is skipped too. Run directories are
``<output>/<env>__<arm>__<model>__s<seed>`` and logs ``<output>/logs/<same name>.log``; the arm is the
entry's ``label`` (default: the agent's name), recorded in the run directory as ``arm.json`` (`arm`), which
reports and leaderboards group by. Two entries of one agent need distinct labels.

Executors: ``local`` runs up to ``--workers`` runs at once (default 1; ``auto`` sizes the pool to the
machine: CPUs / cpus_per_run, and GPUs / gpus_per_run with each run pinned to its own GPUs through
``CUDA_VISIBLE_DEVICES``). ``--ray-address`` submits each run as a Ray task that requests its GPUs and
CPUs; the output directory must then be on storage every Ray node sees. Ray is the ``[ray]`` extra.

One module per job: the spec and its runs (`spec`), an arm's label and ``arm.json`` (`arm`), a run's state on disk (`status`), the executors
(`local`, `ray_executor`), driving an experiment (`driver`) and the command line (`cli`); this package
gives all their names.
"""

from seedbench.training.experiments.arm import ARM_FILE, label_problem, read_arm, write_arm
from seedbench.training.experiments.cli import build_parser, main
from seedbench.training.experiments.driver import run_experiment
from seedbench.training.experiments.local import LocalExecutor, auto_workers, default_command_prefix, visible_gpus
from seedbench.training.experiments.ray_executor import RayExecutor
from seedbench.training.experiments.spec import (
    SPEC_KEYS,
    AgentSpec,
    ExperimentError,
    ExperimentSpec,
    RunSpec,
    expand,
    load_spec,
    parse_spec,
    trajectories_per_iteration,
)
from seedbench.training.experiments.status import Outcome, run_status

__all__ = [
    "ARM_FILE", "label_problem", "read_arm", "write_arm",
    "SPEC_KEYS", "AgentSpec", "ExperimentError", "ExperimentSpec", "LocalExecutor", "Outcome", "RayExecutor", "RunSpec",
    "auto_workers", "build_parser", "default_command_prefix", "expand", "load_spec", "main", "parse_spec",
    "run_experiment", "run_status", "trajectories_per_iteration", "visible_gpus",
]
