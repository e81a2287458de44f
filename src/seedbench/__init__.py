"""seedbench: benchmark suite and trainer library for agentic RL of LLM agents.

`import seedbench` is deliberately cheap: it loads no torch, transformers or environment code. Heavy
modules are imported where they are used (the CLI, the trainer, `gymnasium.make`). It does register the
built-in envs with Gymnasium (string entry points: nothing is imported until `gymnasium.make`), so
``import seedbench; gymnasium.make("seedbench/Sokoban-v0")`` works. Plugin envs register when the
registry first loads them (`seedbench.registry.env_entries()` or any seedbench command).
"""

from seedbench.registry import register_builtin_envs as _register_builtin_envs

__version__ = "0.1.0"

__all__ = ["__version__"]

_register_builtin_envs()
