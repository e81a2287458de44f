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

``--deferred`` also lists every import of a seedbench module made inside a function, grouped by why it
is not at the module top. The reasons are computed from the graph where they can be (`deferrals`): the
target loads a heavy package (`HEAVY`) or an optional extra (`OPTIONAL_EXTRAS`) at import time that the
importer does not; the import at the top would close an import-time loop through a package ``__init__``;
a light module (`LIGHT`: the command line, the run config) loads the importer and would load more. Any
other reason is written next to the import as ``# deferred: <reason>``; an import with none is "unknown",
and tests/test_import_cycles.py fails on it: hoist it.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "seedbench"

HEAVY = frozenset({"torch", "transformers", "peft", "accelerate", "tokenizers", "gguf", "scipy", "pandas",
                   "matplotlib"})
"""Required packages whose import alone costs a tenth of a second or more: a light module (the CLI's
argument parsing, `seedbench.config`) must not load them when it is imported. gymnasium and numpy are not
among them: ``import seedbench`` registers the built-in envs with Gymnasium, so every seedbench import loads
both."""
OPTIONAL_EXTRAS = {"vllm": "vllm", "ray": "ray", "PIL": "vision", "minigrid": "minigrid",
                   "alfworld": "alfworld", "textworld": "alfworld", "bm25s": "webshop", "thefuzz": "webshop",
                   "rapidfuzz": "webshop", "countryinfo": "search", "pyarrow": "search",
                   "tensorboard": "tensorboard", "wandb": "wandb", "mlflow": "mlflow", "trl": "trl",
                   "rliable": "stats"}
"""Import name → the pyproject extra that installs it: a module that imports one at its top cannot be
imported by a module that must work without that extra."""
LIGHT = {"seedbench.cli": "`seedbench --help`", "seedbench.config": "`import seedbench.config`"}
"""Modules whose import stays small: the command line parses its arguments before any subcommand's code
loads, and agents, envs and plugins import the run config without the trainer behind it."""
DEFERRED_COMMENT = re.compile(r"#\s*deferred:\s*(.+)$")
"""``# deferred: <reason>`` on an in-function import (or the line above it) states why it is not at the
module top, where no reason can be computed."""

HEAVY_TARGET = "the target loads a heavy package at import time (transitively) that the importer does not"
KEEPS_LIGHT = "keeps a light entry point small (LIGHT): the target adds modules it does not load"
EXTRA_TARGET = "the target needs an optional extra at import time (transitively)"
IMPORT_LOOP = "a top-level import would close an import-time loop"
DECLARED = "declared in a `# deferred:` comment"
UNKNOWN = "unknown: hoist it to the module top or give a `# deferred: <reason>` comment"


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
    external: dict[str, set[str]] = field(default_factory=dict)
    """Module name → the top-level names of the other packages it imports when it is imported (top level,
    outside ``if TYPE_CHECKING:``)."""
    comments: dict[tuple[Path, int], str] = field(default_factory=dict)
    """(file, line) → the reason a ``# deferred: <reason>`` comment on that line gives."""

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


def _external_names(node: ast.Import | ast.ImportFrom, package: str) -> set[str]:
    """The top-level package names of the non-`package` modules an import statement loads."""
    if isinstance(node, ast.ImportFrom):
        names = [] if node.level else [node.module or ""]
    else:
        names = [alias.name for alias in node.names]
    return {name.split(".")[0] for name in names if name and name.split(".")[0] != package}


def _imports_of(tree: ast.AST, importer: str, path: Path, modules: dict[str, Path],
                external: set[str] | None = None, package: str = PACKAGE) -> list[Import]:
    """Every import of a `package` module in `tree`; the other packages it loads at import time are added
    to `external`."""
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in sorted(_targets(child, importer, is_package, modules)):
                    found.append(Import(importer, target, path, child.lineno, in_function, type_checking))
                if external is not None and not in_function and not type_checking:
                    external.update(_external_names(child, package))
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
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
        graph.external[name] = set()
        graph.imports.extend(_imports_of(tree, name, path, graph.modules, graph.external[name], package))
        for number, line in enumerate(text.splitlines(), 1):
            if (match := DEFERRED_COMMENT.search(line)) is not None:
                graph.comments[(path, number)] = match.group(1).strip()
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


def import_time_edges(graph: ImportGraph) -> dict[str, set[str]]:
    """What importing each module runs first: its top-level imports outside ``if TYPE_CHECKING:`` and its
    parent package (Python runs ``seedbench/training/__init__`` before ``seedbench.training.update``)."""
    edges: dict[str, set[str]] = {name: set() for name in graph.modules}
    for imp in graph.imports:
        if not imp.in_function and not imp.type_checking and imp.source != imp.target:
            edges[imp.source].add(imp.target)
    for name in graph.modules:
        parent = name.rpartition(".")[0]
        if parent in graph.modules:
            edges[name].add(parent)
    return edges


def _path(edges: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A shortest chain of edges from `start` to `goal` (breadth first), or None."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            chain = [node]
            while (step := previous[chain[-1]]) is not None:
                chain.append(step)
            return chain[::-1]
        for succ in sorted(edges.get(node, ())):
            if succ not in previous:
                previous[succ] = node
                queue.append(succ)
    return None


def _closure(edges: dict[str, set[str]], start: str) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for succ in edges.get(stack.pop(), ()):
            if succ not in seen:
                seen.add(succ)
                stack.append(succ)
    return seen


@dataclass(frozen=True)
class Deferral:
    """Why an in-function import is not at its module's top: a `reason` shared by a group of imports, and
    the `detail` that shows it for this one."""

    imp: Import
    reason: str
    detail: str


def deferrals(graph: ImportGraph) -> list[Deferral]:
    """Every import of a seedbench module made inside a function, with its reason, in this order: a
    ``# deferred:`` comment; the target loads an optional extra the importer does not; the target loads a
    heavy package the importer does not; the import at the module top would close an import-time loop; a
    light module (`LIGHT`) loads the importer at import time and would load more with the import at the top;
    otherwise `UNKNOWN`."""
    edges = import_time_edges(graph)
    closures = {name: _closure(edges, name) for name in graph.modules}

    def loads(name: str) -> set[str]:
        return set().union(*(graph.external[member] for member in closures[name]))

    found = []
    for imp in sorted(graph.imports, key=lambda i: (i.source, i.line, i.target)):
        if not imp.in_function or imp.type_checking or imp.source == imp.target:
            continue
        comment = graph.comments.get((imp.path, imp.line)) or graph.comments.get((imp.path, imp.line - 1))
        added = loads(imp.target) - loads(imp.source)
        extras = sorted(f"{OPTIONAL_EXTRAS[name]} ({name})" for name in added if name in OPTIONAL_EXTRAS)
        heavy = sorted(added & HEAVY)
        loop = _path(edges, imp.target, imp.source)
        light = [f"{LIGHT[name]} would load {len(closures[imp.target] - closures[name])} more"
                 for name in sorted(LIGHT) if name in graph.modules and imp.source in closures[name]
                 and not closures[imp.target] <= closures[name]]
        if comment:
            found.append(Deferral(imp, DECLARED, comment))
        elif extras:
            found.append(Deferral(imp, EXTRA_TARGET, ", ".join(extras)))
        elif heavy:
            found.append(Deferral(imp, HEAVY_TARGET, ", ".join(heavy)))
        elif loop is not None:
            found.append(Deferral(imp, IMPORT_LOOP, " -> ".join([imp.source, *loop])))
        elif light:
            found.append(Deferral(imp, KEEPS_LIGHT, "; ".join(light)))
        else:
            found.append(Deferral(imp, UNKNOWN, ""))
    return found


def deferred_report(graph: ImportGraph, root: Path, package: str = PACKAGE) -> str:
    """The in-function imports grouped by reason, largest group first."""
    groups: dict[str, list[Deferral]] = {}
    for deferral in deferrals(graph):
        groups.setdefault(deferral.reason, []).append(deferral)
    total = sum(len(group) for group in groups.values())
    lines = [f"{total} imports of {package} modules inside functions"]
    for reason, group in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"{len(group)}  {reason}")
        for deferral in group:
            imp = deferral.imp
            detail = f": {deferral.detail}" if deferral.detail else ""
            lines.append(f"      {imp.source} -> {imp.target}  ({imp.path.relative_to(root)}:{imp.line}){detail}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=SRC, help="the source root holding the seedbench package")
    parser.add_argument("--deferred", action="store_true",
                        help="also list every import made inside a function, grouped by why it is deferred")
    args = parser.parse_args(argv)
    graph = build_graph(args.src)
    print(report(graph, args.src.parent))
    if args.deferred:
        print(deferred_report(graph, args.src.parent))
    return 1 if cycles(graph) else 0


if __name__ == "__main__":
    sys.exit(main())
