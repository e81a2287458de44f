"""Leaderboards for training methods: data in git, validated and built by the library.

    seedbench leaderboard submit RUNS... --method NAME --authors A B [--board KEY] [--paper URL] ...
    seedbench leaderboard submit-experiment EXPERIMENT_DIR --authors A [--budget-label cpu-study] [--method ARM=NAME]
    seedbench leaderboard validate [FOLDER...]   (each action takes --root DIR, default leaderboards/)
    seedbench leaderboard build

See `seedbench.leaderboard.schema` for the layout and docs/leaderboard.md for the submission guide.
Boards are keyed by env version + base model + budget; rows copied from papers are marked
``paper-reported`` and shown apart from results produced by seedbench.
"""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path
from typing import Sequence

from seedbench.leaderboard.build import BuildError, build
from seedbench.leaderboard.schema import Board, Problem, board_key
from seedbench.leaderboard.study import submit_experiment
from seedbench.leaderboard.submit import SubmitError, submit
from seedbench.leaderboard.catalogue import Catalogue, load_catalogue

__all__ = ["Board", "BuildError", "Catalogue", "Problem", "SubmitError", "board_key", "build", "load_catalogue",
           "main", "submit", "submit_experiment"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="seedbench leaderboard", description="Submit, validate and build leaderboards.")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default="leaderboards", help="leaderboards directory (default: leaderboards/)")
    sub = parser.add_subparsers(dest="action", required=True)

    s = sub.add_parser("submit", parents=[common], help="make a submission folder from finished runs of one agent")
    s.add_argument("paths", nargs="+", help="run directories or an experiment directory (one env × agent × model)")
    s.add_argument("--board", help="board key (default: the board matching the runs' env, model and budget)")
    s.add_argument("--method", required=True, help="method name as it should appear on the board")
    s.add_argument("--authors", nargs="+", required=True)
    s.add_argument("--paper", help="paper URL")
    s.add_argument("--code", help="code URL")
    s.add_argument("--compute", help="compute used, e.g. '1x H100, 6 GPU-hours'")
    s.add_argument("--reproduced", action="store_true", help="someone other than the authors reran it")
    s.add_argument("--notes")
    s.add_argument("--date", help="YYYY-MM-DD for the folder name (default: today)")
    s.add_argument("--overwrite", action="store_true", help="replace an existing folder of the same name")

    e = sub.add_parser("submit-experiment", parents=[common],
                       help="one submission per arm of an experiment (creates the study's board when missing)")
    e.add_argument("paths", nargs="+", help="the experiment directory (or its run directories): one env × model")
    e.add_argument("--authors", nargs="+", required=True)
    e.add_argument("--board", help="board key (default: env version __ base model __ budget label or <N>it)")
    e.add_argument("--budget-label", help="name the budget in the board key, e.g. cpu-study")
    e.add_argument("--title", help="title of a board this creates")
    e.add_argument("--method", nargs="+", default=[], metavar="ARM=NAME",
                   help="row names per arm (default: the arm's label)")
    e.add_argument("--compute", help="compute used (default: training seconds per run from metrics.jsonl)")
    e.add_argument("--notes")
    e.add_argument("--date", help="YYYY-MM-DD for the folder names (default: today)")
    e.add_argument("--overwrite", action="store_true", help="replace existing folders of the same names")
    e.add_argument("--min-seeds", type=int, default=3,
                   help="seeds per submission a board this creates asks for (default 3); arms with fewer complete "
                        "seeds are held back until they have them")

    v = sub.add_parser("validate", parents=[common], help="check submissions; prints every problem with its field path")
    v.add_argument("paths", nargs="*", help="submission or board folders (default: everything under --root)")

    sub.add_parser("build", parents=[common], help="write README.md, leaderboard.csv and index.html under --root")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``seedbench leaderboard``; returns 0 (ok), 1 (invalid submissions) or 2 (bad usage)."""
    args = _parser().parse_args(argv)
    root = Path(args.root)
    try:
        if args.action == "submit":
            when = date.fromisoformat(args.date) if args.date else None
            folder = submit(args.paths, root=root, board=args.board, method=args.method, authors=args.authors,
                            paper=args.paper, code=args.code, compute=args.compute, reproduced=args.reproduced,
                            notes=args.notes, when=when, overwrite=args.overwrite)
            print(f"wrote {folder}; run `seedbench leaderboard build` and commit both")
            return 0
        if args.action == "submit-experiment":
            bad = [m for m in args.method if "=" not in m]
            if bad:
                raise SubmitError(f"--method expects ARM=NAME, got {bad[0]!r}")
            when = date.fromisoformat(args.date) if args.date else None
            result = submit_experiment(args.paths, root=root, authors=args.authors, board=args.board,
                                        budget_label=args.budget_label, title=args.title,
                                        methods=dict(m.split("=", 1) for m in args.method), compute=args.compute,
                                        notes=args.notes, when=when, overwrite=args.overwrite,
                                        min_seeds=args.min_seeds)
            print(f"{result.describe()}; run `seedbench leaderboard build` and commit them")
            return 0
        if args.action == "validate":
            catalogue = load_catalogue(root, only=[Path(p) for p in args.paths] or None)
            for problem in catalogue.problems:
                print(problem)
            count = len(catalogue.all_submissions())
            print(f"{count} submission(s) checked, {len(catalogue.problems)} problem(s)")
            return 1 if catalogue.problems else 0
        paths = build(root)
        print("wrote " + ", ".join(str(p) for p in paths))
        return 0
    except BuildError as err:
        print(err)
        print("leaderboard build: fix the problems above; nothing was written")
        return 1
    except SubmitError as err:
        print(f"seedbench leaderboard: error: {err}")
        return 1 if "does not validate" in str(err) else 2
    except (FileNotFoundError, ValueError) as err:
        print(f"seedbench leaderboard: error: {err}")
        return 2
