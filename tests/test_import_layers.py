"""No import runs back up a layer: the layer order of docs/architecture.md, checked on the module graph of
scripts/import_cycles.py (imports inside functions and under TYPE_CHECKING count), with each named
exception the architecture gives and nothing else."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("seedbench.config.schema", "seedbench.config.errors", "seedbench.config.fields",
                    "seedbench.jsonio", "seedbench.paths", "seedbench.seeding", "seedbench.progress",
                    "seedbench.threads", "seedbench.extras", "seedbench.frames", "seedbench.prompt",
                    "seedbench.provenance", "seedbench.machine", "seedbench.locking", "seedbench.stats",
                    "seedbench.yamlio")),
    # `import seedbench` registers the built-in envs; the config resolver checks names against the catalogue
    ("envs", ("seedbench", "seedbench.envs", "seedbench.registry", "seedbench.config", "seedbench.text_env",
              "seedbench.action_parsing")),
    ("models and engines", ("seedbench.models", "seedbench.engines")),
    ("rollout", ("seedbench.rollout",)),
    ("agents", ("seedbench.agents", "seedbench.tracking")),
    ("training", ("seedbench.training",)),
    ("readers of run directories", ("seedbench.report", "seedbench.leaderboard", "seedbench.viewer")),
    ("the command line", ("seedbench.cli", "seedbench.__main__")),
]
"""Layer order, lowest first (docs/architecture.md, "Layers"): a module imports from its own layer and the
layers before it. A module belongs to the layer of the longest prefix that names it; ``seedbench`` names
the package itself only."""

UPWARD = {
    ("seedbench.config.resolve", "seedbench.agents"): "validate_config checks the agent a config names (in a function)",
    ("seedbench.config.resolve", "seedbench.models"): "... the model (in a function)",
    ("seedbench.config.resolve", "seedbench.tracking"): "... the tracking sinks (in a function)",
    ("seedbench.agents.base", "seedbench.training.rundir"): "an annotation only (TYPE_CHECKING)",
    ("seedbench.agents.seed.agent", "seedbench.training.origin"): "SEED reads the provenance marker of its start",
    ("seedbench.agents.seed.stage1", "seedbench.training"): "stage 1 is a fine-tuning command on training/sft.py",
    ("seedbench.training.experiments", "seedbench.report"): "an experiment summarises and archives its runs",
}
"""The imports that cross a layer upwards, each for the reason docs/architecture.md names."""


def layer_of(module: str) -> int:
    best = max(((len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
                if module == prefix or (prefix != "seedbench" and module.startswith(prefix + "."))), default=None)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS and to docs/architecture.md")
    return best[1]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def upward_imports(graph) -> list[str]:
    """One line per import that runs back up a layer and is not a named exception (with its condition:
    the resolver's only in functions, `agents.base`'s only under TYPE_CHECKING)."""
    found = []
    for imp in graph.imports:
        source, target = layer_of(imp.source), layer_of(imp.target)
        if target <= source:
            continue
        allowed = next((key for key in UPWARD if _within(imp.source, key[0]) and _within(imp.target, key[1])), None)
        if allowed is not None and allowed[0] == "seedbench.config.resolve" and not imp.in_function:
            allowed = None
        if allowed is not None and allowed[0] == "seedbench.agents.base" and not imp.type_checking:
            allowed = None
        if allowed is None:
            found.append(f"{imp.source} ({LAYERS[source][0]}) -> {imp.target} ({LAYERS[target][0]}), "
                         f"{imp.path.name}:{imp.line}, {imp.kind}")
    return sorted(found)


@pytest.fixture(scope="module")
def import_cycles():
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts" / "import_cycles.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_no_import_runs_back_up_a_layer(import_cycles):
    graph = import_cycles.build_graph()
    for module in graph.modules:
        layer_of(module)  # every module has its layer
    assert upward_imports(graph) == []


def test_each_named_exception_is_still_taken_and_documented(import_cycles):
    """A named exception nothing takes any more is a stale line in docs/architecture.md."""
    graph = import_cycles.build_graph()
    taken = {key for imp in graph.imports for key in UPWARD
             if _within(imp.source, key[0]) and _within(imp.target, key[1])}
    assert taken == set(UPWARD)
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    for name, _ in LAYERS:
        assert f"**{name[0].upper()}{name[1:]}**" in architecture, name


def test_an_import_back_up_a_layer_is_named(import_cycles, tmp_path):
    """The old imports this test guards against: the trainer's evaluator on the report package, and the model
    builders on training's lock module."""
    src = tmp_path / "src"
    for name, text in {"__init__.py": "", "stats.py": "", "report/__init__.py": "", "report/stats.py": "",
                       "training/__init__.py": "", "training/evaluator.py": "from seedbench.report.stats import x\n",
                       "training/run_lock.py": "", "models/__init__.py": "",
                       "models/embedded.py": "def f():\n    from seedbench.training.run_lock import build_lock\n",
                       "models/tiny.py": "from seedbench.stats import y\n"}.items():
        path = src / "seedbench" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    graph = import_cycles.build_graph(src, "seedbench")
    assert upward_imports(graph) == [
        "seedbench.models.embedded (models and engines) -> seedbench.training.run_lock (training), embedded.py:2, "
        "in a function",
        "seedbench.training.evaluator (training) -> seedbench.report.stats (readers of run directories), "
        "evaluator.py:1, top level"]
