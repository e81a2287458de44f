"""scripts/import_cycles.py: the module graph it builds from the source, the cycles it finds, and the
layering of `seedbench.config` it guards (no import cycle runs through a config module)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def import_cycles():
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts" / "import_cycles.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_cycles_count_imports_inside_functions_and_type_checking_blocks(import_cycles, tmp_path, capsys):
    src = _package(tmp_path, {
        "__init__.py": "",
        "a.py": "from pkg import b\n",                                   # a -> b, top level
        "b.py": "def f():\n    from . import a\n",                        # b -> a, in a function
        "c.py": "import pkg.a\nfrom pkg.a import thing\n",               # c -> a twice (thing is not a module)
        "sub/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..d import X\n",
        "d.py": "import os\nfrom pkg.sub import y\n",                    # d -> sub; sub -> d only for typing
    })
    graph = import_cycles.build_graph(src, "pkg")
    assert sorted(graph.modules) == ["pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.sub"]
    edges = graph.edges()
    assert edges["pkg.c"] == {"pkg.a"} and edges["pkg.sub"] == {"pkg.d"} and edges["pkg.b"] == {"pkg.a"}
    assert import_cycles.cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.d", "pkg.sub"]]
    text = import_cycles.report(graph, tmp_path, "pkg")
    assert text.splitlines()[:2] == ["6 modules, 6 imports of pkg modules, 1 of them inside functions",
                                     "cycles (strongly connected components): 2"]
    assert "pkg.b -> pkg.a  (pkg/b.py:2, in a function)" in text
    assert "pkg.sub -> pkg.d  (pkg/sub/__init__.py:3, top level, type checking only)" in text
    assert import_cycles.main(["--src", str(src)]) == 0  # the seedbench package is not under this root
    (src / "seedbench").mkdir()
    (src / "seedbench" / "__init__.py").write_text("")
    (src / "seedbench" / "x.py").write_text("def f():\n    import seedbench.y\n")
    (src / "seedbench" / "y.py").write_text("import seedbench.x\n")
    capsys.readouterr()
    assert import_cycles.main(["--src", str(src)]) == 1
    assert "1. 2 modules: seedbench.x, seedbench.y" in capsys.readouterr().out


def test_a_long_chain_closes_one_component(import_cycles):
    """The search is iterative: a chain longer than Python's recursion limit is one component."""
    n = 3000
    edges = {f"m{i}": {f"m{(i + 1) % n}"} for i in range(n)}
    edges["lone"] = {"m0"}
    (component,) = import_cycles.strongly_connected(edges)
    assert len(component) == n and "lone" not in component


@pytest.fixture(scope="module")
def seedbench_graph(import_cycles):
    return import_cycles.build_graph()


def test_seedbench_has_no_import_cycle(import_cycles, seedbench_graph):
    """Counting imports inside functions and under TYPE_CHECKING: a deferred import that closes a loop is
    still a loop (the layers are env -> prompt -> engine -> agent -> training; docs/architecture.md)."""
    graph = seedbench_graph
    assert {"seedbench.config", "seedbench.config.schema", "seedbench.config.resolve"} <= set(graph.modules)
    assert import_cycles.cycles(graph) == []


def test_the_config_schema_and_error_import_nothing_from_seedbench(seedbench_graph):
    """Agents, envs and plugins annotate their fields with the schema's types; what those modules import
    must not reach back into the resolver."""
    edges = seedbench_graph.edges()
    assert edges["seedbench.config.schema"] == set() and edges["seedbench.config.errors"] == set()
    assert edges["seedbench.config.fields"] == {"seedbench.config.errors", "seedbench.config.schema", "seedbench.yamlio"}
    assert edges["seedbench.yamlio"] == set()  # the one YAML reader: a leaf


def test_each_import_inside_a_function_gets_the_reason_the_graph_gives(import_cycles, tmp_path):
    """The reasons are computed from the module graph: a heavy package or an optional extra the target loads
    at import time and the importer does not, an import-time loop through a package ``__init__``, a light
    entry point the target would grow, a ``# deferred:`` comment; anything else is unknown."""
    src = _package(tmp_path, {
        "__init__.py": "",
        "light.py": "import json\n",
        "heavy.py": "import torch\n",
        "uses_heavy.py": "from pkg import heavy\n",                      # torch, transitively
        "extra.py": "import vllm\n",
        "cli.py": "def a():\n    from pkg import uses_heavy\n"           # heavy, transitively: torch
                  "def b():\n    from pkg import extra\n"                # optional extra: vllm
                  "def c():\n    from pkg import light\n"                # the light entry point would grow
                  "def d():\n    # deferred: read when the plugin is named\n    from pkg import light\n",
        "config/__init__.py": "from pkg.config.resolve import build\n",
        "config/resolve.py": "def build():\n    from pkg import agent\n",  # agent -> config -> resolve
        "agent.py": "from pkg.config import build\n",
        "worker.py": "import torch\ndef f():\n    from pkg import heavy, light\n",
    })
    graph = import_cycles.build_graph(src, "pkg")
    assert graph.external["pkg.heavy"] == {"torch"} and graph.external["pkg.light"] == {"json"}
    import_cycles.LIGHT["pkg.cli"] = "`pkg --help`"
    try:
        found = import_cycles.deferrals(graph)
        text = import_cycles.deferred_report(graph, tmp_path, "pkg")
    finally:
        del import_cycles.LIGHT["pkg.cli"]
    reasons = {(d.imp.source, d.imp.line, d.imp.target): (d.reason, d.detail) for d in found}
    assert reasons[("pkg.cli", 2, "pkg.uses_heavy")] == (import_cycles.HEAVY_TARGET, "torch")
    assert reasons[("pkg.cli", 4, "pkg.extra")] == (import_cycles.EXTRA_TARGET, "vllm (vllm)")
    assert reasons[("pkg.cli", 6, "pkg.light")] == (import_cycles.KEEPS_LIGHT, "`pkg --help` would load 1 more")
    assert reasons[("pkg.cli", 9, "pkg.light")] == (import_cycles.DECLARED, "read when the plugin is named")
    assert reasons[("pkg.config.resolve", 2, "pkg.agent")] == (
        import_cycles.IMPORT_LOOP, "pkg.config.resolve -> pkg.agent -> pkg.config -> pkg.config.resolve")
    # worker already loads torch, and `heavy`/`light` add nothing else: no reason to defer either.
    assert reasons[("pkg.worker", 3, "pkg.heavy")] == reasons[("pkg.worker", 3, "pkg.light")] == (
        import_cycles.UNKNOWN, "")
    assert len(found) == 7
    assert text.splitlines()[0] == "7 imports of pkg modules inside functions"
    assert f"2  {import_cycles.UNKNOWN}" in text and "      pkg.worker -> pkg.heavy  (pkg/worker.py:3)" in text


def test_every_import_seedbench_defers_has_a_reason(import_cycles, seedbench_graph):
    """Every import of a seedbench module made inside a function says why it is not at the module top
    (``python scripts/import_cycles.py --deferred`` lists them grouped by reason)."""
    unknown = {}
    for deferral in import_cycles.deferrals(seedbench_graph):
        if deferral.reason == import_cycles.UNKNOWN:
            path = str(deferral.imp.path.relative_to(ROOT))
            unknown.setdefault(path, []).append(f"{deferral.imp.source} -> {deferral.imp.target}:{deferral.imp.line}")
    assert unknown == {}, unknown
    reasons = {d.reason for d in import_cycles.deferrals(seedbench_graph)}
    assert import_cycles.HEAVY_TARGET in reasons and import_cycles.KEEPS_LIGHT in reasons
