"""`seedbench data <env> ...`: dispatch to an env's data generator."""

from __future__ import annotations

import sys

GENERATORS = {"alfworld": "seedbench.envs.alfworld.data:main"}


def main(argv: list[str]) -> int:
    from seedbench.registry import load_object

    if not argv or argv[0] in ("-h", "--help") or argv[0] not in GENERATORS:
        choice = argv[0] if argv else ""
        if choice and choice not in ("-h", "--help"):
            print(f"seedbench: error: no data generator for {choice!r}; choose one of: {', '.join(GENERATORS)}", file=sys.stderr)
            return 2
        print(f"usage: seedbench data {{{','.join(GENERATORS)}}} [options]")
        return 0
    return int(load_object(GENERATORS[argv[0]])(argv[1:]) or 0)
