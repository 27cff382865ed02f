"""Where torch's conversion code is, its branch arcs, and keys for them
that survive line shifts across torch versions.

The nine functions every converter of the suite goes through (the describer,
``MetaConverter`` and the fake-tensor layer over it) are found by name with
``ast`` in the installed torch, never by line number.  A branch arc is
coverage.py's: a pair (line, destination) from a line with more than one
way out, the destination negative for leaving the code object that starts at
that line.  Its key names the function, the branch's statement and the
destination's statement by their text (tokens, so whitespace and comments do
not count), and which occurrence of that pair it is in the function: the same
key finds the same arc when torch adds lines above it.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import tokenize
from pathlib import Path
from typing import NamedTuple

# file under torch/ -> "Class.method" names of the conversion code in it
CONVERSION_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "_subclasses/meta_utils.py": (
        "MetaTensorDescriber.describe_storage",
        "MetaTensorDescriber.describe_tensor",
        "MetaConverter.meta_storage",
        "MetaConverter.meta_tensor",
        "MetaConverter._empty_create_subclass",
        "MetaConverter.__call__",
    ),
    "_subclasses/fake_tensor.py": (
        "FakeTensorConverter.from_real_tensor",
        "FakeTensorConverter.from_meta_and_device",
        "FakeTensorMode.from_tensor",
    ),
}


@dataclasses.dataclass(frozen=True)
class Function:
    """One function of the conversion code: its lines, nested functions
    included."""

    name: str  # "Class.method"
    path: Path
    first_line: int  # the ``def`` line (or its first decorator)
    last_line: int

    def holds(self, line: int) -> bool:
        return self.first_line <= line <= self.last_line


class ArcKey(NamedTuple):
    """An arc by the text of its two ends; ``occurrence`` counts from 1 among
    the arcs of ``function`` with the same two texts, in line order."""

    function: str
    branch: str  # the branch's statement
    destination: str  # the destination's statement, or "exit <def statement>"
    occurrence: int = 1


class Arc(NamedTuple):
    line: int
    destination: int  # negative: leaves the code object defined at -destination
    key: ArcKey


def installed_torch_dir() -> Path:
    import torch

    return Path(torch.__file__).resolve().parent


def locate_functions(path: Path, source: str, names: tuple[str, ...]) -> list[Function]:
    """The functions ``names`` ("Class.method") of ``source``, in that order.
    Raises ValueError naming any that is missing or defined more than once."""
    found: dict[str, list[ast.AST]] = {name: [] for name in names}
    for node in ast.parse(source, filename=str(path)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            name = f"{node.name}.{getattr(item, 'name', '')}"
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in found:
                found[name].append(item)
    missing = [name for name, nodes in found.items() if not nodes]
    repeated = [name for name, nodes in found.items() if len(nodes) > 1]
    if missing or repeated:
        raise ValueError(f"{path}: conversion functions not found: {missing or 'none'}; "
                         f"defined more than once: {repeated or 'none'}")
    functions = []
    for name in names:
        (node,) = found[name]
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        functions.append(Function(name, path, first, node.end_lineno))
    return functions


def conversion_functions(torch_dir: Path | None = None) -> list[Function]:
    """The nine functions of CONVERSION_FUNCTIONS in the torch at
    ``torch_dir`` (default: the installed one)."""
    torch_dir = torch_dir or installed_torch_dir()
    functions = []
    for relative, names in CONVERSION_FUNCTIONS.items():
        path = torch_dir / relative
        functions += locate_functions(path, path.read_text(), names)
    return functions


def statement_texts(source: str) -> dict[int, str]:
    """Each line's logical line as its tokens joined by single spaces
    (comments left out): the same text for every physical line of it."""
    texts: dict[int, str] = {}
    tokens: list[str] = []
    first_row = None
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
               tokenize.ENCODING, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in skipped:
            continue
        if first_row is None:
            first_row = token.start[0]
        if token.type == tokenize.NEWLINE:
            text = " ".join(tokens)
            for row in range(first_row, token.end[0] + 1):
                texts[row] = text
            tokens, first_row = [], None
        else:
            tokens.append(token.string)
    return texts


def _parsed(source: str):
    from coverage.parser import PythonParser

    parser = PythonParser(text=source)
    parser.parse_source()
    return parser


def branch_arcs(source: str) -> set[tuple[int, int]]:
    """coverage.py's branch arcs of ``source``: the arcs from lines with more
    than one way out (what its branch coverage counts)."""
    parser = _parsed(source)
    exits = parser.exit_counts()
    return {(a, b) for a, b in parser.arcs() if exits.get(a, 0) > 1}


def statement_arcs(source: str, measured: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Arcs as measured (between the lines the tracer saw run) as arcs
    between statements' first lines, as branch_arcs names them."""
    return set(_parsed(source).translate_arcs(measured))


def keyed_arcs(function: Function, source: str, arcs: set[tuple[int, int]]) -> list[Arc]:
    """The arcs of ``arcs`` that start in ``function``, in line order, with
    their keys."""
    texts = statement_texts(source)
    seen: dict[tuple[str, str], int] = {}
    keyed = []
    for line, destination in sorted(a for a in arcs if function.holds(a[0])):
        if line not in texts or abs(destination) not in texts:
            raise ValueError(f"{function.path}: arc {line}->{destination} of {function.name} "
                             f"starts or ends on a line with no statement")
        if destination < 0:
            to = "exit " + texts[-destination]
        else:
            to = texts[destination]
        occurrence = seen[(texts[line], to)] = seen.get((texts[line], to), 0) + 1
        keyed.append(Arc(line, destination, ArcKey(function.name, texts[line], to, occurrence)))
    return keyed
