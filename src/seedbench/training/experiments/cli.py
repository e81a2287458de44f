"""``seedbench experiment``: a spec file, or ``--agent``/``--env``/``--seeds`` instead; bad input is one
``seedbench experiment: error: ...`` line and exit 2."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from seedbench.training.experiments.driver import run_experiment
from seedbench.training.experiments.spec import ExperimentError, ExperimentSpec, load_spec, parse_spec
from seedbench.report import build_report
from seedbench.yamlio import YAMLFileError, parse_yaml


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seedbench experiment",
        description="Run envs × agents × seeds (× models) as separate `seedbench run`s; complete runs are "
                    "skipped and partial ones resumed, so rerunning after a kill finishes only what is missing.")
    parser.add_argument("spec", nargs="?", help="experiment spec YAML (or give --agent/--env/--seeds instead)")
    parser.add_argument("--output", help="experiment directory (overrides the spec's `output`)")
    parser.add_argument("--agent", nargs="+", help="agents (without a spec)")
    parser.add_argument("--env", nargs="+", help="envs (without a spec)")
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="seeds (without a spec; default 0); with a spec: run only these of its seeds")
    parser.add_argument("--arms", nargs="+", metavar="ARM",
                        help="with a spec: run only these arms (labels, or agent names of unlabelled entries)")
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", nargs="+", help="models (without a spec; default tiny)")
    parser.add_argument("--iterations", type=int, help="budget in RL updates (without a spec)")
    parser.add_argument("--trajectories", type=int, help="budget in trajectories (without a spec)")
    parser.add_argument("--config", help="YAML recipe for every run (without a spec)")
    parser.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE", help="config overrides for every run")
    parser.add_argument("--workers", default="1", help="local runs at once: a number or 'auto' (default 1)")
    parser.add_argument("--gpus-per-run", type=float, help="GPUs each run needs (overrides the spec)")
    parser.add_argument("--cpus-per-run", type=int, help="CPUs each run needs (overrides the spec)")
    parser.add_argument("--ray-address", help="run on a Ray cluster ('auto' or ray://host:port); needs seedbench[ray]")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the state of each run, run nothing")
    parser.add_argument("--report", action="store_true", help="build <output>/report when every run is complete")
    return parser


def _spec_from_args(args) -> ExperimentSpec:
    if not args.agent or not args.env:
        raise ExperimentError("give a spec file, or --agent, --env and --iterations (or --trajectories)")
    if (args.iterations is None) == (args.trajectories is None):
        raise ExperimentError("give exactly one of --iterations or --trajectories")
    seeds = args.seeds or ([args.seed] if args.seed is not None else [0])
    data = {"envs": args.env, "agents": args.agent, "seeds": seeds, "models": args.model or ["tiny"],
            "budget": {"iterations": args.iterations} if args.iterations else {"trajectories": args.trajectories},
            "config": args.config}
    output = args.output or Path("experiments") / f"{'-'.join(args.env)}__{'-'.join(args.agent)}"
    return parse_spec(data, Path("."), output)


def restrict(spec: ExperimentSpec, arms: list[str] | None, seeds: list[int] | None) -> None:
    """Keep only the named arms and seeds of `spec` (a study runs in parts: each part is the same runs, so
    a later full run skips them as complete)."""
    if arms:
        known = [a.arm for a in spec.agents]
        unknown = [a for a in arms if a not in known]
        if unknown:
            raise ExperimentError(f"--arms: unknown {', '.join(unknown)}; the spec's arms are {', '.join(known)}")
        spec.agents = [a for a in spec.agents if a.arm in arms]
    if seeds:
        unknown = [s for s in seeds if s not in spec.seeds]
        if unknown:
            raise ExperimentError(f"--seeds: {unknown} not in the spec's seeds {spec.seeds}")
        spec.seeds = [s for s in spec.seeds if s in seeds]


def main(argv: Sequence[str] | None = None) -> int:
    """``seedbench experiment SPEC.yaml`` or ``seedbench experiment --agent A B --env E --seeds 0 1 2 ...``."""
    args = build_parser().parse_args(argv)
    try:
        if args.workers != "auto" and not (args.workers.isdigit() and int(args.workers) >= 1):
            raise ExperimentError(f"--workers: expected a positive number or 'auto', got {args.workers!r}")
        spec = load_spec(args.spec, args.output) if args.spec else _spec_from_args(args)
        if args.spec:
            restrict(spec, arms=args.arms, seeds=args.seeds)
        elif args.arms:
            raise ExperimentError("--arms selects arms of a spec file; without one, name the agents with --agent")
        for pair in args.set:
            if "=" not in pair:
                raise ExperimentError(f"--set expects key=value, got {pair!r}")
            key, raw = pair.split("=", 1)
            try:
                spec.set[key.strip()] = parse_yaml(raw, f"--set {key.strip()}")
            except YAMLFileError as err:
                raise ExperimentError(str(err)) from None
        if args.gpus_per_run is not None:
            spec.gpus_per_run = args.gpus_per_run
        if args.cpus_per_run is not None:
            spec.cpus_per_run = args.cpus_per_run
        outcomes = run_experiment(spec, workers=args.workers, ray_address=args.ray_address, dry_run=args.dry_run)
    except KeyboardInterrupt:
        return 130
    except (ExperimentError, FileNotFoundError) as err:
        print(f"seedbench experiment: error: {err}")
        return 2
    except Exception as err:  # e.g. a ConfigError while sizing a trajectory budget
        if type(err).__name__ in ("ConfigError", "UnknownNameError"):
            print(f"seedbench experiment: error: {err}")
            return 2
        raise
    if args.dry_run:
        return 0
    failed = [o for o in outcomes if o.status not in ("skipped", "archived", "completed")]
    ran = sum(1 for o in outcomes if o.status == "completed")
    kept = sum(o.status == "archived" for o in outcomes)
    print(f"experiment {spec.name}: {ran} run(s) finished now, {sum(o.status == 'skipped' for o in outcomes)} "
          f"were already complete" + (f", {kept} already archived" if kept else "") + f", {len(failed)} failed")
    if failed:
        print("failed: " + ", ".join(o.run for o in failed) + f" (logs in {spec.output / 'logs'}); rerun to retry")
        return 1
    if args.report:
        files = build_report([spec.output], spec.output / "report")
        print(f"report: {files.html}")
    return 0
