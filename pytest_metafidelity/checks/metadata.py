"""`metadata`: torch's own ``assert_metadata_eq`` on each pair.

``skip_symbolic=True`` is used where the converted sizes are symbolic and for
compressed sparse layouts (CSR/CSC/BSR/BSC), on which torch's function raises
unless told to skip: it calls ``is_sparse_compressed`` on a descriptor, which
is never a tensor.
"""

from __future__ import annotations

from typing import Any

from . import Conversion, Mismatch, check

_COMPRESSED = ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")


def _is_compressed(t: Any) -> bool:
    return str(t.layout).removeprefix("torch.") in _COMPRESSED


@check("metadata", "torch's assert_metadata_eq (shape, strides, offset, dtype, bits, grad, base)")
def metadata_check(conv: Conversion) -> list[Mismatch]:
    from torch._subclasses.meta_utils import assert_metadata_eq

    found: list[Mismatch] = []
    for name, real, fake in conv.pairs():
        skip = bool(getattr(conv.converter, "symbolic", False)) or _is_compressed(real)
        seen: list[tuple[Any, Any]] = []

        def assert_eq(a: Any, b: Any) -> None:
            if a != b:
                seen.append((a, b, _caller_source()))
                raise _Stop

        try:
            assert_metadata_eq(assert_eq, real, fake, skip_symbolic=skip)
        except _Stop:
            a, b, where = seen[0]
            found.append(
                Mismatch("metadata", name, where, a, b,
                         "first differing field in torch's assert_metadata_eq")
            )
        except AssertionError as e:
            found.append(Mismatch("metadata", name, "assert_metadata_eq", "-", str(e)))
    return found


class _Stop(Exception):
    pass


def _caller_source() -> str:
    """The ``assert_eq(m1.x, m2.x)`` line of torch's code that found the
    difference: it names the field (``m1`` is real, ``m2`` is fake)."""
    import linecache
    import sys

    frame = sys._getframe(2)
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return line.removeprefix("assert_eq(").removesuffix(")") or "assert_metadata_eq"
