"""`seedbench data <env> ...`: run the data generator an env's catalogue line names.

An `EnvEntry` with ``data_generator="module:function"`` gets the command; the function takes the rest
of the command line (a list of strings) and returns an exit code. Plugin envs ship one the same way.
"""

from __future__ import annotations

import sys

from seedbench.registry import ENVS, UnknownNameError, env_entries, load_object


def generators() -> dict[str, str]:
    """Env alias -> its data generator, for every registered env that has one."""
    return {alias: entry.data_generator for alias, entry in sorted(env_entries().items()) if entry.data_generator}


def main(argv: list[str]) -> int:
    available = generators()
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: seedbench data {{{','.join(available)}}} [options]")
        return 0
    try:
        entry = ENVS.resolve(argv[0])
    except UnknownNameError:
        entry = None
    if entry is None or not entry.data_generator:
        print(f"seedbench: error: no data generator for {argv[0]!r}; choose one of: {', '.join(available)}",
              file=sys.stderr)
        return 2
    return int(load_object(entry.data_generator)(argv[1:]) or 0)
