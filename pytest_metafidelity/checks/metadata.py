"""`metadata`: torch's own ``assert_metadata_eq`` on each pair.

``assert_metadata_eq`` compares dtype, shape, requires_grad, is_leaf,
sparse-ness, is_inference, conj/neg bits, grad (recursively), strides,
storage offset, view-ness and the base (recursively).

``skip_symbolic=True`` is used -- and the mismatch detail says so -- where
the converted sizes are symbolic (a converter with a ShapeEnv, or any SymInt
in the converted tensor): torch then skips shape, strides and storage offset,
which the ``oracle`` check compares through the SymInts' hints instead.  It
is also used for compressed sparse layouts (CSR/CSC/BSR/BSC), on which
torch's function raises unless told to skip: it calls
``is_sparse_compressed`` on a descriptor, which is never a tensor.

The mismatch names the field by the line of torch's code that found it
(``m1`` is the real tensor's description, ``m2`` the converted tensor) and
the path of the tensor it was found on (``t0._base``, ``t0.grad``, ...).
"""

from __future__ import annotations

import sys
from typing import Any

from . import Conversion, Mismatch, check
from ._util import has_symbolic, related

_COMPRESSED = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def _is_compressed(t: Any) -> bool:
    return str(t.layout).removeprefix("torch.") in _COMPRESSED


@check("metadata", "torch's assert_metadata_eq (shape, strides, offset, dtype, bits, grad, base)")
def metadata_check(conv: Conversion) -> list[Mismatch]:
    from torch._subclasses.meta_utils import assert_metadata_eq

    paths = {id(f): p for p, _, f in related(conv, inner=False)}
    found: list[Mismatch] = []
    for name, real, fake in conv.pairs():
        symbolic = bool(getattr(conv.converter, "symbolic", False)) or has_symbolic(fake)
        skip = symbolic or _is_compressed(real)
        seen: list[tuple[Any, Any, str, str]] = []

        def assert_eq(a: Any, b: Any) -> None:
            if a != b:
                frame = sys._getframe(1)
                m2 = frame.f_locals.get("m2")
                seen.append((a, b, _caller_source(frame), paths.get(id(m2), name)))
                raise _Stop

        why = ""
        if skip:
            why = ("; skip_symbolic: sizes are symbolic" if symbolic
                   else "; skip_symbolic: compressed sparse layout")
        try:
            assert_metadata_eq(assert_eq, real, fake, skip_symbolic=skip)
        except _Stop:
            a, b, where, path = seen[0]
            if any(m.path == path and m.attribute == where for m in found):
                continue  # the same tensor reached from another tensor under test
            found.append(
                Mismatch("metadata", path, where, a, b,
                         "first differing field in torch's assert_metadata_eq" + why)
            )
        except AssertionError as e:
            found.append(Mismatch("metadata", name, "assert_metadata_eq", "-", str(e), why.lstrip("; ")))
    return found


class _Stop(Exception):
    pass


def _caller_source(frame: Any) -> str:
    """The ``assert_eq(m1.x, m2.x)`` line of torch's code that found the
    difference: it names the field (``m1`` is real, ``m2`` is fake)."""
    import linecache

    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return line.removeprefix("assert_eq(").removesuffix(")") or "assert_metadata_eq"
