"""The package's import graph: no import cycle but the known ones (#23).

The graph is built from source with ``ast``, without importing anything:
one node per module of ``pytest_metafidelity`` and of ``strategies`` (which
ships as ``pytest_metafidelity.strategies``, the name used here), one edge
per import of one of them -- at module level, inside a function, or under
``if TYPE_CHECKING:``.  A function-level import still ties the two modules
together (it only hides the tie from the interpreter), and so does a
type-checking one (the one module's types come from the other): one
direction of flow holds for both.  ``importlib.import_module`` calls (the
registries of kinds and checks) name no module ``ast`` can see and are left
out.

A cycle is a strongly connected component of more than one module (Tarjan).
Each one the project still has is in :data:`KNOWN_CYCLES`, with the imports
that close it; a new cycle fails, and so does a known one that is gone, so
the list only shrinks.

``python tests/test_import_graph.py`` prints the figures (cycles, modules
in cycles, function-level imports of package modules) and every cycle with
its edges.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "pytest_metafidelity"
# Source folder -> the package name it is imported as.
SOURCES = {ROOT / "pytest_metafidelity": PACKAGE, ROOT / "strategies": f"{PACKAGE}.strategies"}

_P = PACKAGE + "."
# Every cycle the package still has, as the sorted modules of its strongly
# connected component.  Remove an entry when its cycle is broken (the test
# says so); never add one without a plan to remove it.  (The last two --
# the checking core's 13 modules, and the registry with its triage -- were
# broken at stop 31: findings, snapshots and outcomes became modules of
# their own, the describer moved to strategies/, program runs became a
# loop inside check_faithful, and reproducers are re-run by a callable
# faithful hands over.)
KNOWN_CYCLES: set[tuple[str, ...]] = set()

# The strategies are the lowest layer: the plugin imports them, never the
# other way round -- but for these imports (strategy module -> plugin
# module), each with what it is for.  Remove an entry when it goes (the test
# says so).
STRATEGIES_MAY_IMPORT: dict[tuple[str, str], str] = {}

# The layers, bottom to top: a module imports modules of its own layer or
# of the layers below, never above.  A module is in the layer that names it
# exactly, else in the one whose ``prefix.*`` is its longest match.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # What tensors are drawn from, and the facts about a tensor every layer asks.
    ("strategies", ("strategies", "strategies.*")),
    # Plain values and helpers that know no check: findings, errors, the
    # crash-proof child process, torch's caches, the checks' shared readings.
    ("foundations", ("findings", "symbolic", "option_error", "child", "crash_guards", "torch_caches",
                     "hypofuzz_runs",
                     "checks._util", "checks._dispatch_keys", "checks.step_time_limit")),
    # Converting, and what is read around a conversion.
    ("converters", ("converters", "converter_model", "snapshots", "outcomes", "properties")),
    # The checks, those that run programs too: what they ask of the registry
    # is handed to them (a ``checks.Judge``), never imported.
    ("checks", ("checks", "checks.*", "property_values")),
    # The registry of known differences, and how a mismatch is judged against it.
    ("known differences", ("known_differences", "known_differences.*")),
    # Reproducers, then check_faithful, which runs everything above.
    ("reproducers", ("reproducer",)),
    ("checking", ("faithful", "upstream")),
    # The suite: options, shards and example databases, its runs and reports.
    ("options", ("options", "databases", "shards")),
    ("suite", ("suite", "suite.*", "report", "report.*", "report_cli", "report_html",
               "report_merge")),
    # The pytest plugin and the package's lazy names.
    ("plugin", ("plugin", "")),
]


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module``'s layer, or None."""
    name = module.removeprefix(PACKAGE).removeprefix(".")
    best: tuple[int, int] | None = None  # (length of the match, layer)
    for i, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if pattern == name:
                return i
            prefix = pattern.removesuffix("*")
            if pattern.endswith(".*") and name.startswith(prefix):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), i)
    return best[1] if best is not None else None


@dataclasses.dataclass(frozen=True)
class Import:
    """One import statement's tie from ``source`` to the package module ``target``."""

    source: str
    target: str
    line: int
    in_function: bool
    for_type_checking: bool


def module_files() -> dict[str, Path]:
    """Every module of the package, by its import name."""
    modules = {}
    for folder, package in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement, whether it is inside a function, and whether it
    is under ``if TYPE_CHECKING:``."""

    def walk(node: ast.AST, in_function: bool,
             for_type_checking: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function, for_type_checking
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), in_function, True)
                for statement in child.orelse:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), in_function,
                                    for_type_checking)
            else:
                yield from walk(child, in_function or isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)), for_type_checking)

    return walk(tree, False, False)


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """``name``, or the longest enclosing module of ``name``, if in the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def imports_of(module: str, modules: dict[str, Path]) -> list[Import]:
    """The imports of package modules in ``module``'s source."""
    path = modules[module]
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node, in_function, for_type_checking in _import_nodes(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from pkg import module` imports the module; `from pkg import name`, pkg.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        targets = {_known(name, modules) for name in names} - {None, module}
        found += [Import(module, target, node.lineno, in_function, for_type_checking)
                  for target in sorted(targets)]
    return found


def import_graph() -> tuple[dict[str, set[str]], list[Import]]:
    """Each module's package imports, and every import found."""
    modules = module_files()
    imports = [imp for module in modules for imp in imports_of(module, modules)]
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for imp in imports:
        graph[imp.source].add(imp.target)
    return graph, imports


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The import cycles: components of more than one module, each sorted."""
    return {tuple(c) for c in strongly_connected(graph) if len(c) > 1}


@dataclasses.dataclass(frozen=True)
class Figures:
    cycles: int
    modules_in_cycles: int
    function_level_imports: int


def figures() -> Figures:
    graph, imports = import_graph()
    found = cycles(graph)
    return Figures(
        cycles=len(found),
        modules_in_cycles=sum(len(c) for c in found),
        function_level_imports=len({(i.source, i.line) for i in imports if i.in_function}),
    )


def describe(cycle: tuple[str, ...], imports: list[Import]) -> str:
    """The cycle's modules and the imports that tie them together."""
    members = set(cycle)
    edges = sorted({(i.source, i.target, i.line, i.in_function, i.for_type_checking)
                    for i in imports if i.source in members and i.target in members})
    lines = [f"cycle of {len(cycle)} modules: {', '.join(cycle)}"]
    lines += [f"    {s} -> {t}  (line {n}{', in a function' if f else ''}"
              f"{', for type checking' if tc else ''})" for s, t, n, f, tc in edges]
    return "\n".join(lines)


def test_the_graph_sees_the_package() -> None:
    graph, imports = import_graph()
    assert f"{PACKAGE}.plugin" in graph and f"{PACKAGE}.strategies.programs" in graph
    # A relative import, `from pkg import module`, and a function-level import resolve.
    assert f"{PACKAGE}.strategies.recipe" in graph[f"{PACKAGE}.strategies.api"]
    assert any(i.in_function for i in imports)


def test_strongly_connected_finds_a_cycle_and_leaves_a_chain() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == {("a", "b", "c")}


def test_no_import_cycle_but_the_known_ones() -> None:
    graph, imports = import_graph()
    found = cycles(graph)
    new = sorted(found - KNOWN_CYCLES)
    assert not new, (
        "new import cycles (break them; a module imported by the one that imports it "
        "belongs lower, or the shared part moves to a module of its own):\n"
        + "\n".join(describe(c, imports) for c in new))
    gone = sorted(KNOWN_CYCLES - found)
    assert not gone, f"known cycles no longer there (remove them from KNOWN_CYCLES): {gone}"
    print(figures())


def test_strategies_import_no_plugin_module_but_the_allowed_ones() -> None:
    graph, imports = import_graph()
    strategies = _P + "strategies"
    upward = {(i.source, i.target): i.line for i in imports
              if (i.source == strategies or i.source.startswith(strategies + "."))
              and not (i.target == strategies or i.target.startswith(strategies + "."))}
    unexpected = sorted(f"{source} -> {target} (line {line})"
                        for (source, target), line in upward.items()
                        if (source, target) not in STRATEGIES_MAY_IMPORT)
    assert not unexpected, (
        "strategies import plugin modules (move what they need into strategies/, and "
        "re-export it from the plugin's module):\n" + "\n".join(unexpected))
    gone = sorted(set(STRATEGIES_MAY_IMPORT) - set(upward))
    assert not gone, f"allowed imports no longer there (remove from STRATEGIES_MAY_IMPORT): {gone}"


def test_every_module_is_in_a_layer() -> None:
    missing = sorted(m for m in module_files() if layer_of(m) is None)
    assert not missing, f"modules in no layer (add each to LAYERS, where it belongs): {missing}"


def test_layer_of_prefers_the_exact_name_and_the_longest_prefix() -> None:
    names = [name for name, _ in LAYERS]
    assert names[layer_of(_P + "checks.behaviour")] == "checks"
    assert names[layer_of(_P + "checks.metadata")] == "checks"
    assert names[layer_of(_P + "checks")] == "checks"
    assert names[layer_of(_P + "checks._util")] == "foundations"
    assert names[layer_of(_P + "strategies.tensor_facts")] == "strategies"
    assert names[layer_of(PACKAGE)] == "plugin"


def upward_imports(imports: list[Import]) -> list[Import]:
    """The imports of a module in a higher layer by one in a lower layer."""
    return [i for i in imports if (layer_of(i.target) or 0) > (layer_of(i.source) or 0)]


def test_upward_imports_are_found() -> None:
    down = Import(_P + "faithful", _P + "checks", 1, False, False)
    up = Import(_P + "checks.metadata", _P + "faithful", 2, True, False)
    typed = Import(_P + "findings", _P + "outcomes", 3, False, True)
    assert upward_imports([down, up, typed]) == [up, typed]


def test_no_module_imports_a_higher_layer() -> None:
    graph, imports = import_graph()
    names = [name for name, _ in LAYERS]
    upward = sorted(
        f"{i.source} ({names[layer_of(i.source) or 0]}) -> {i.target} "
        f"({names[layer_of(i.target) or 0]}), line {i.line}"
        for i in upward_imports(imports))
    assert not upward, (
        "imports from a lower layer into a higher one (data flows one way: move the shared "
        "part down, or hand what is needed over as a value):\n" + "\n".join(upward))


if __name__ == "__main__":
    graph, imports = import_graph()
    print(figures())
    for cycle in sorted(cycles(graph), key=len):
        print(describe(cycle, imports))
