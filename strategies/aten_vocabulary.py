"""aten's view ops and in-place ops, read from the installed torch's operator schemas.

The ``behaviour`` check's programs are worth most where they exercise what a
conversion had to rebuild: views of converted tensors and in-place changes to
them.  Which operators are views and which write in place is written in their
schemas' alias annotations, so the vocabulary is read from there, not listed by
hand:

* a *view op* takes ``Tensor(a) self`` without writing to it and returns
  tensors that alias it (``-> Tensor(a)``; ``Tensor(a -> *) self`` for the
  ops that return a list of views);
* an *in-place op* is named ``..._``, takes ``Tensor(a!) self`` and has no
  ``out=`` argument.

An op applies to strided CPU tensors when one of its overloads is a dispatcher
operator with a kernel for CPU or a composite key, unless :data:`NOT_STRIDED`
says why not (kernels that refuse a strided tensor: sparse-only, nested-only).
:func:`vocabulary` gives every op with its group and, where it does not apply,
the reason; ``benchmarks/program_vocabulary.py`` prints how much of it the
programs draw.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

Group = Literal["view", "in-place"]

# Keys whose kernel serves a strided CPU tensor.
STRIDED_CPU_KEYS = ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd",
                    "CompositeExplicitAutogradNonFunctional")

# Ops with a kernel under one of STRIDED_CPU_KEYS that still refuse a strided
# CPU tensor (their composite kernel raises for the strided layout), by name;
# tests/test_aten_vocabulary.py checks that each still does.
NOT_STRIDED: dict[str, str] = dict.fromkeys(
    ("indices", "values", "crow_indices", "col_indices", "ccol_indices", "row_indices",
     "coalesce"),
    "sparse layouts only: a strided tensor raises")


@dataclasses.dataclass(frozen=True)
class AtenOp:
    """One aten operator (all its overloads) of the vocabulary."""

    name: str                # as programs call it: ``t.select(...)``, ``t.add_(...)``
    group: Group
    overloads: tuple[str, ...]  # dispatcher names, e.g. ``aten::select.int``
    not_applicable: str | None  # why it does not apply to strided CPU tensors, or None

    @property
    def applies(self) -> bool:
        return self.not_applicable is None


def _qualified(schema: object) -> str:
    overload = getattr(schema, "overload_name")
    return getattr(schema, "name") + (f".{overload}" if overload else "")


def _group(schema: object) -> Group | None:
    arguments = getattr(schema, "arguments")
    returns = getattr(schema, "returns")
    if not arguments or str(arguments[0].type) != "Tensor" or arguments[0].alias_info is None:
        return None
    if any(a.is_out for a in arguments) or not returns:
        return None
    self_alias = arguments[0].alias_info
    if self_alias.is_write:
        name = getattr(schema, "name")
        if name.endswith("_") and returns[0].alias_info is not None:
            return "in-place"
        return None
    if "*" in self_alias.after_set or any(
            r.alias_info is not None and r.alias_info.before_set & self_alias.before_set
            for r in returns):
        return "view"
    return None


def _kernels(qualified: str) -> tuple[str, ...] | None:
    """The keys of STRIDED_CPU_KEYS with a kernel for the overload, or None when
    it is no dispatcher operator (a TorchScript-only builtin)."""
    import torch

    try:
        return tuple(key for key in STRIDED_CPU_KEYS
                     if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key))
    except RuntimeError:
        return None


@functools.cache
def vocabulary() -> tuple[AtenOp, ...]:
    """Every aten view op and in-place op of the installed torch, by name."""
    import torch

    found: dict[tuple[str, Group], list[str]] = {}
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        group = _group(schema)
        if group is not None:
            found.setdefault((schema.name[len("aten::"):], group), []).append(_qualified(schema))
    ops = []
    for (name, group), overloads in sorted(found.items()):
        kernels = {q: _kernels(q) for q in overloads}
        dispatched = [q for q, keys in kernels.items() if keys is not None]
        if not dispatched:
            reason: str | None = "no dispatcher operator (TorchScript-only schemas)"
        elif not any(kernels[q] for q in dispatched):
            reason = "no kernel for CPU or a composite key (other backends or layouts only)"
        else:
            reason = NOT_STRIDED.get(name)
        ops.append(AtenOp(name, group, tuple(sorted(overloads)), reason))
    return tuple(ops)


# Python spellings of aten ops whose names differ.
_PYTHON_SPELLINGS = {"T": "numpy_T", "H": "matrix_H"}


def operators_in(statement: str) -> set[str]:
    """The aten op names a statement of a program calls, as written in its
    source: methods and attributes (``t.select(0, 1)``, ``t.real``,
    ``torch.ops.aten.alias(t)``) and indexing (``t[0:2]`` is ``slice``,
    ``t[1]`` is ``select``)."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(statement)):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            names.add(_PYTHON_SPELLINGS.get(node.attr, node.attr))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names.add(node.func.id)
        elif isinstance(node, ast.Subscript):
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if any(isinstance(i, ast.Slice) for i in index):
                names.add("slice")
            if any(isinstance(i, ast.Constant) and isinstance(i.value, int) for i in index):
                names.add("select")
    return names
