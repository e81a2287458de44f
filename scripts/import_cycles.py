"""Import cycles between seedbench's own modules: ``python scripts/import_cycles.py``.

Every module under ``src/seedbench`` is parsed with `ast` (nothing is imported), and every import of a
seedbench module becomes an edge of a module graph: top-level ones, those inside functions (deferred
imports, often written to dodge a cycle at import time, still tie the two modules together) and those
under ``if TYPE_CHECKING:``. A cycle is a strongly connected component of more than one module. The
script prints each cycle with the import lines that close it, and the number of imports of seedbench
modules made inside functions. It exits 1 when there is a cycle, so it can gate a check.

An import names one module: ``from seedbench.config import ConfigError`` is an edge to
``seedbench.config``, ``from seedbench.tracking import base`` one to ``seedbench.tracking.base``. The
parent packages whose ``__init__`` Python also runs are not edges: each package's own imports are
counted where they are written, in its ``__init__``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "seedbench"


@dataclass(frozen=True)
class Import:
    """One import of a seedbench module: who imports whom, where, and whether inside a function."""

    source: str
    target: str
    path: Path
    line: int
    in_function: bool
    type_checking: bool = False
    """Under ``if TYPE_CHECKING:`` (never run, but still a dependency of the module's design)."""

    @property
    def kind(self) -> str:
        place = "in a function" if self.in_function else "top level"
        return f"{place}, type checking only" if self.type_checking else place


@dataclass
class ImportGraph:
    modules: dict[str, Path] = field(default_factory=dict)
    """Module name → its file."""
    imports: list[Import] = field(default_factory=list)

    def edges(self) -> dict[str, set[str]]:
        graph: dict[str, set[str]] = {name: set() for name in self.modules}
        for imp in self.imports:
            if imp.source != imp.target:
                graph[imp.source].add(imp.target)
        return graph


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _known_module(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of the dotted `name` that is a seedbench module (``seedbench.config.X`` where X
    is a name inside the module gives ``seedbench.config``)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _from_base(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` reads from, relative imports resolved."""
    if not node.level:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool,
             modules: dict[str, Path]) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = _from_base(node, importer, is_package)
        names = [f"{base}.{alias.name}" for alias in node.names]
    return {target for name in names if (target := _known_module(name, modules)) is not None}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports_of(tree: ast.AST, importer: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in sorted(_targets(child, importer, is_package, modules)):
                    found.append(Import(importer, target, path, child.lineno, in_function, type_checking))
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), inside, True)
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), inside, type_checking)
                continue
            visit(child, inside, type_checking)

    visit(tree, False, False)
    return found


def build_graph(src: Path = SRC, package: str = PACKAGE) -> ImportGraph:
    """Every module of `package` under `src` and every import of one of them by another."""
    graph = ImportGraph()
    for path in sorted((src / package).rglob("*.py")):
        graph.modules[module_name(path, src)] = path
    for name, path in graph.modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        graph.imports.extend(_imports_of(tree, name, path, graph.modules))
    return graph


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, each sorted, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    for root in sorted(edges):
        if root in index:
            continue
        # Iterative depth-first search: (node, iterator over its successors).
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components, key=lambda c: (-len(c), c))


def cycles(graph: ImportGraph) -> list[list[str]]:
    return strongly_connected(graph.edges())


def report(graph: ImportGraph, root: Path, package: str = PACKAGE) -> str:
    """The figures, then each cycle with the imports between its members."""
    found = cycles(graph)
    own = [imp for imp in graph.imports if imp.source != imp.target]
    in_function = sum(imp.in_function for imp in own)
    lines = [f"{len(graph.modules)} modules, {len(own)} imports of {package} modules, "
             f"{in_function} of them inside functions",
             f"cycles (strongly connected components): {len(found)}"]
    for number, component in enumerate(found, 1):
        members = set(component)
        lines.append(f"  {number}. {len(component)} modules: {', '.join(component)}")
        for imp in sorted(own, key=lambda i: (i.source, i.line)):
            if imp.source in members and imp.target in members:
                lines.append(f"       {imp.source} -> {imp.target}  "
                             f"({imp.path.relative_to(root)}:{imp.line}, {imp.kind})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=SRC, help="the source root holding the seedbench package")
    args = parser.parse_args(argv)
    graph = build_graph(args.src)
    print(report(graph, args.src.parent))
    return 1 if cycles(graph) else 0


if __name__ == "__main__":
    sys.exit(main())
