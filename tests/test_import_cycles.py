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
    assert edges["seedbench.config.fields"] == {"seedbench.config.errors", "seedbench.config.schema"}
