"""The ``seedbench`` command line.

    seedbench run --agent grpo --env sokoban [--model M] [--seed S] [--iterations K] [--config Y]
                  [--output DIR] [--resume [DIR]] [--allow-config-changes] [--track tensorboard,wandb,mlflow]
                  [--set key=value ...]
    seedbench eval <run dir|checkpoint dir|smollm2-135m|random|scripted> [--env sokoban] [--episodes N] [--set k=v ...]
    seedbench config [--agent NAME]          every run config field: type, default, documentation
    seedbench envs | agents
    seedbench check-env NAME [--seeds N] [--expert-tasks N] [--kwarg KEY=VALUE ...]
    seedbench data alfworld [...]
    seedbench sft-analyzer --env E --annotator A [--config Y] [--set k=v ...] [...]
    seedbench sft-policy --env E [--config Y] [--set k=v ...] [--demos N] [--epochs E] [--lr LR] [--output DIR]
    seedbench experiment SPEC.yaml | report RUNS --out DIR | leaderboard submit|validate|build
    seedbench view RUN [--out DIR] [--serve]   trajectory-and-skill viewer of a run
    seedbench probe-skills RUN --model M [--out DIR]   does a skill move the policy? (gap, gate, decisive action)
    seedbench --version

Bad input (unknown env or agent, bad config key, missing file) is a one-line error naming the valid
choices, never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from seedbench import __version__
from seedbench.registry import UnknownNameError, agent_entries, env_entries, load_object


class CLIError(Exception):
    """An error shown as one line without a traceback."""


def _parse_set(pairs: list[str]) -> dict:
    """``--set`` pairs as overrides (`seedbench.config.parse_set_pairs`; imported here only when used, so
    ``seedbench --help`` stays fast)."""
    from seedbench.config import parse_set_pairs

    return parse_set_pairs(pairs)


def _run_overrides(args) -> dict:
    from seedbench.config import set_dotted

    values = _parse_set(args.set or [])
    for flag, key in (("agent", "agent"), ("env", "env"), ("model", "model.name"), ("seed", "seed"), ("engine", "engine"),
                      ("iterations", "iterations"), ("output", "output")):
        value = getattr(args, flag, None)
        if value is not None:
            set_dotted(values, key, value)
    if getattr(args, "track", None):
        values["track"] = list(args.track)
    return values


def cmd_run(args) -> int:
    from seedbench.config import build_config

    if args.seeds and len(args.seeds) > 1:
        return _run_seeds_as_experiment(args)
    overrides = _run_overrides(args)
    if args.seeds:
        overrides["seed"] = args.seeds[0]
    if args.resume is not None:
        config = _resume_config(args, overrides)
    else:
        config = build_config(args.config, overrides)
    from seedbench.training.memory_plan import check_before_run
    from seedbench.training.trainer import train

    import os

    check_before_run(config)  # CUDA only: warns, with the fix, when the predicted peak exceeds the GPU
    path = train(config, resume=args.resume is not None, allow_config_changes=args.allow_config_changes)
    if os.environ.get("RANK", "0") == "0":  # under torchrun, one screen for the run, not one per rank
        print(f"seedbench: run complete: {path}")
        _closing_screen(path, config.report)
    return 0


def _closing_screen(path, with_report: bool) -> None:
    """Print the finished run's closing screen (`seedbench.report.run_screen`), after building its HTML
    report into ``RUN/report/`` when the config asks for one."""
    from seedbench.report.run_screen import closing_screen

    html = None
    if with_report:
        from seedbench.report.build import build_report

        html = build_report([path], path / "report", title=f"seedbench run {path.name}").html
    print(closing_screen(path, html), flush=True)


def _resume_config(args, overrides: dict):
    """`--resume DIR` or `--resume --output DIR`: the run's saved config.yaml with this command's flags on top
    (`seedbench.training.resume_config`); the trainer refuses changes the run cannot take."""
    from pathlib import Path

    from seedbench.training.resume_config import resume_base

    directory = args.resume if isinstance(args.resume, str) else args.output
    if directory is None:
        raise CLIError("--resume needs the run directory: --resume DIR or --resume --output DIR")
    if isinstance(args.resume, str) and args.output and Path(args.output).resolve() != Path(args.resume).resolve():
        raise CLIError(f"--resume {args.resume} and --output {args.output} name two directories; give the run once")
    overrides.pop("output", None)
    return resume_base(Path(directory), args.config, overrides)


def _run_seeds_as_experiment(args) -> int:
    """`run --seeds 0 1 2` is a one-env, one-agent experiment: same skip/resume and executors."""
    argv = ["--env", args.env or "sokoban", "--agent", args.agent or "grpo", "--seeds", *map(str, args.seeds),
            "--model", args.model or "smollm2-135m"]
    for flag, value in (("--iterations", args.iterations), ("--config", args.config), ("--output", args.output)):
        if value is not None:
            argv += [flag, str(value)]
    if args.set:
        argv += ["--set", *args.set]
    if args.track:
        argv += ["--set", "track=[" + ",".join(args.track) + "]"]
    return _run_delegated("experiment", argv)


def cmd_eval(args) -> int:
    import json

    from seedbench.training.evaluate import evaluate_agent

    if (args.target is None) == (args.agent is None):
        raise CLIError("seedbench eval: name what to evaluate once, `seedbench eval RUN` or `seedbench eval --agent RUN`")
    args.agent = args.agent or args.target
    result = evaluate_agent(args.agent, args.env, episodes=args.episodes, split=args.split, seed=args.seed,
                            temperature=args.temperature, max_new_tokens=args.max_new_tokens, engine=args.engine,
                            set_values=_parse_set(args.set or []))
    for line in result["overrides"]:
        print(f"seedbench: eval: overriding the run's config: {line}")
    for record in result["records"]:
        print(f"seedbench: {args.agent} on {args.env or 'its env'} ({record['split']}, {record['num_tasks']} tasks, "
              f"iteration {record['iteration']}): success micro={record['success_micro']:.3f} "
              f"macro={record['success_macro']:.3f}" + (f" score={record['score']:.3f}" if "score" in record else ""))
        for task_type, rate in record["per_type"].items():
            print(f"  {task_type}: {rate:.3f} ({record['per_type_counts'][task_type]} tasks)")
        episodes = [e for e in result["episodes"] if e["phase"] == f"eval/{record['split']}"]
        steps = sum(len(e["steps"]) for e in episodes)
        if steps:  # LLM agents: how often the answer parsed into an action the env accepted
            valid = steps - sum(e["num_invalid"] for e in episodes)
            print(f"  valid actions: {valid} / {steps} steps ({valid / steps:.3f})")
    if args.records:
        with open(args.records, "w") as handle:
            handle.writelines(json.dumps(record) + "\n" for record in result["records"])
    return 0


def cmd_config(args) -> int:
    from seedbench.config import RunConfig, agent_config, describe, format_fields

    print("# seedbench run config: YAML recipe keys (--config) and --set KEY=VALUE paths\n")
    print(format_fields(describe(RunConfig())))
    if args.agent:
        print(f"\n[algo]  coefficients of agent {args.agent} (with its registered overrides)")
        print(format_fields(describe(agent_config(RunConfig(agent=args.agent)), "algo.")))
    else:
        print("\n(`seedbench config --agent NAME` adds the agent's algo.* fields)")
    return 0


def cmd_envs(args) -> int:
    from seedbench.extras import missing_packages
    entries = sorted(env_entries().items())
    alias_width = max(len(alias) for alias, _ in entries)
    id_width = max(len(entry.env_id) for _, entry in entries)
    for alias, entry in entries:
        extra = f"  [needs seedbench[{entry.requires}]]" if entry.requires and missing_packages(entry.requires) else ""
        print(f"{alias:<{alias_width}} {entry.env_id:<{id_width}} {entry.description}{extra}")
    return 0


def cmd_agents(args) -> int:
    for name, entry in sorted(agent_entries().items()):
        also = f" (also: {', '.join(entry.aliases)})" if getattr(entry, "aliases", ()) else ""
        print(f"{name:<22} {entry.description}{also}")
    return 0


DELEGATED = {
    "data": ("seedbench.envs.data_command:main", "generate env data (e.g. `seedbench data alfworld`)"),
    "check-env": ("seedbench.envs.checks:main", "check an env (built-in or plugin) against the env contract"),
    "sft-analyzer": ("seedbench.agents.seed.stage1:main", "SEED stage 1: analyzer SFT"),
    "sft-policy": ("seedbench.training.warm_start:main",
                   "behaviour-cloning warm start: fine-tune the policy on the env's expert episodes"),
    "experiment": ("seedbench.training.experiments.cli:main", "run an experiment spec (envs × agents × seeds)"),
    "report": ("seedbench.report:main", "build a report from runs or an experiment directory"),
    "leaderboard": ("seedbench.leaderboard:main", "submit | validate | build leaderboards"),
    "serve-retriever": ("seedbench.envs.search.serve:main",
                        "serve a bm25s index with Search-R1's POST /retrieve API (Search-QA)"),
    "view": ("seedbench.viewer:main", "HTML viewer of a run's episodes, skills and per-token signals"),
    "probe-skills": ("seedbench.report.skill_probe:main",
                     "re-score a SEED run's episodes under their own, a shuffled and no skill (gap, gate, decisive action)"),
    "plan": ("seedbench.training.memory_plan:main",
             "predict a run's peak GPU memory from its config, before anything loads, and what to change to fit"),
}
"""Subcommands with their own argparse parser; their arguments are passed through untouched."""


def _run_delegated(name: str, argv: list[str]) -> int:
    return int(load_object(DELEGATED[name][0])(argv) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedbench", description="Agentic RL benchmark and trainers (SEED, GRPO, GiGPO).")
    parser.add_argument("--version", action="version", version=f"seedbench {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train an agent on an env",
                         epilog="Every config field (type, default, documentation): `seedbench config`; an agent's "
                                "algo.* fields: `seedbench config --agent NAME`.")
    run.add_argument("--agent", help="agent name (see `seedbench agents`)")
    run.add_argument("--env", help="env alias or id (see `seedbench envs`)")
    run.add_argument("--model", help="HF hub id, local checkpoint, smollm2-135m (embedded default), tiny, or the vision models smollm2-vl / tiny-vlm (docs/vlm.md)")
    run.add_argument("--engine", choices=["auto", "hf", "vllm"], help="generation engine (default auto: vLLM when installed)")
    run.add_argument("--seed", type=int)
    run.add_argument("--seeds", type=int, nargs="+", help="run several seeds one after another")
    run.add_argument("--iterations", type=int, help="RL updates (CPU default: 2)")
    run.add_argument("--config", help="YAML recipe (see configs/)")
    run.add_argument("--output", help="exact run directory (default runs/<env>__<agent>__<model>__s<seed>__<time>)")
    run.add_argument("--resume", nargs="?", const=True, default=None,
                     help="continue the run in --output (or the given directory) from its last checkpoint, under its "
                          "saved config.yaml; flags that change it are an error except iterations, --track, "
                          "checkpointing and process layout (docs/architecture.md)")
    run.add_argument("--allow-config-changes", action="store_true",
                     help="with --resume: accept flags that change other fields of the run's config.yaml (the "
                          "old file is kept as config.previous-N.yaml); without --resume nothing to accept")
    run.add_argument("--set", nargs="+", action="extend", metavar="KEY=VALUE",
                     help="config overrides, e.g. optim.lr=1e-6 (all fields: `seedbench config`)")
    run.add_argument("--track", action="append", metavar="SINK",
                     help="experiment tracking: tensorboard, wandb, mlflow (repeat or comma-separate; docs/tracking.md)")
    run.set_defaults(func=cmd_run)

    ev = sub.add_parser(
        "eval", help="evaluate a run, a checkpoint or a built-in agent (random, scripted)",
        description="A run (or one of its checkpoints) is evaluated exactly as the trainer evaluates it, under its "
                    "own config.yaml; each flag overrides one field of it (printed). Other agents get the default "
                    "run config for --env. Defaults come from the run config (`seedbench config`).")
    ev.add_argument("target", nargs="?", metavar="AGENT", help="the same as --agent (`seedbench eval RUN`)")
    ev.add_argument("--agent", help="run directory, checkpoint directory, HF checkpoint, the embedded base model "
                    "('smollm2-135m'), 'random' or 'scripted'")
    ev.add_argument("--env", help="env (required unless --agent is a run); sets env")
    ev.add_argument("--episodes", type=int, help="sets eval.num_tasks")
    ev.add_argument("--split", help="sets eval.splits to this one split")
    ev.add_argument("--seed", type=int, help="sets seed (the evaluation RNG stream derives from it)")
    ev.add_argument("--temperature", type=float, help="sets eval.temperature")
    ev.add_argument("--max-new-tokens", type=int, help="sets eval.max_new_tokens")
    ev.add_argument("--engine", choices=["auto", "hf", "vllm"], help="sets engine")
    ev.add_argument("--set", nargs="+", action="extend", metavar="KEY=VALUE", help="other run config overrides, e.g. rollout.history_length=2")
    ev.add_argument("--records", metavar="FILE", help="also write the eval records (eval.jsonl format) to FILE")
    ev.set_defaults(func=cmd_eval)

    cfg = sub.add_parser("config", help="list every run config field with its type, default and documentation")
    cfg.add_argument("--agent", help="also list this agent's algo.* fields")
    cfg.set_defaults(func=cmd_config)

    sub.add_parser("envs", help="list registered environments").set_defaults(func=cmd_envs)
    sub.add_parser("agents", help="list registered agents").set_defaults(func=cmd_agents)

    for name, (_, help_text) in DELEGATED.items():
        sub.add_parser(name, help=help_text, add_help=False)  # listed in --help; parsed by the target
    return parser


def main(argv: list[str] | None = None) -> int:
    from seedbench import threads

    threads.configure()  # OpenMP wait policy, before anything imports torch (seedbench.threads)
    if not sys.warnoptions:  # a plugin's use of a deprecated default reaches whoever runs it (once per line)
        import warnings

        from seedbench.envs.action_parsing import PARSE_CHOICE_DEFAULT_WARNING
        warnings.filterwarnings("default", message=PARSE_CHOICE_DEFAULT_WARNING, category=DeprecationWarning)
    from seedbench.config import ConfigError
    from seedbench.envs.contract import EnvContractError
    from seedbench.jsonio import DiskFullError, RunFileError
    from seedbench.paths import UnsafePathError
    from seedbench.training.warm_start import WarmStartError
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in DELEGATED:
            return _run_delegated(argv[0], argv[1:])
        args = build_parser().parse_args(argv)
        return args.func(args)
    except (CLIError, ConfigError, UnknownNameError, EnvContractError, FileNotFoundError, ImportError, DiskFullError,
            RunFileError, UnsafePathError, WarmStartError) as err:
        print(f"seedbench: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("seedbench: interrupted; continue with --resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `seedbench envs | head`: the reader has gone, which is not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush does not raise
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
