"""seedbench: benchmark suite and trainer library for agentic RL of LLM agents.

`import seedbench` is deliberately cheap: it loads no torch, transformers or environment code. Heavy
modules are imported where they are used (the CLI, the trainer, `gymnasium.make`).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
