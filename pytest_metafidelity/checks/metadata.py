"""`metadata`: the fields torch's ``assert_metadata_eq`` compares, on each pair.

The real tensor is described as torch describes it for that function
(``MetaTensorDescriber``) and compared with the converted tensor field by
field, in ``assert_metadata_eq``'s order and under its conditions: dtype,
shape, requires_grad, is_leaf, is_sparse, is_inference(), is_conj(),
is_neg(), whether there is a grad (and the grad, recursively); for sparse
COO the layout, dense_dim(), sparse_dim() and is_coalesced(); otherwise
stride(), storage_offset(), _is_view() and the base (recursively).  The
first differing field is reported, named as ``torch.testing`` names
attributes (``stride()``, ``storage_offset()``, ``is_conj()``, ``dtype``),
on the path of the tensor it was found on (``t0._base``, ``t0.grad``, ...).
The project's tests hold the comparison to torch's: the same fields, the
same values, in the same order.

``skip_symbolic`` -- and the mismatch detail says so -- where the converted
sizes are symbolic (a converter with a ShapeEnv, or any SymInt in the
converted tensor): shape, strides and storage offset are not compared here,
the ``oracle`` check compares them through the SymInts' hints instead.  It
is also used for compressed sparse layouts (CSR/CSC/BSR/BSC), whose strides
cannot be read; ``assert_metadata_eq`` meant to compare their layout and
dense/sparse dims, but its test for them never holds for a description, so
(as there) they go through the strided fields.  The ``sparse`` check
compares their structure.
"""

from __future__ import annotations

from typing import Any, Iterator

from . import Conversion, Mismatch, check
from ..strategies.tensor_facts import COMPRESSED_LAYOUTS, layout_name
from ._util import has_symbolic, related



def _is_compressed(t: Any) -> bool:
    return layout_name(t) in COMPRESSED_LAYOUTS


def _inference_mode_disabled() -> bool:
    from torch._subclasses import meta_utils

    return bool(getattr(meta_utils.tls, "disable_inference_mode", False))


def metadata_fields(desc: Any, fake: Any, *, skip_symbolic: bool
                    ) -> Iterator[tuple[str, Any, Any, Any]]:
    """(field, real value, converted value, converted tensor) for each field
    ``assert_metadata_eq`` compares, in its order; ``desc`` describes the
    real tensor (``MetaTensorDescriber().describe_tensor``).  A grad or base
    is visited only while the fields before it agree (the caller stops at
    the first difference)."""
    from torch._subclasses.meta_utils import _expect_safe_grad, safe_grad

    yield "dtype", desc.dtype, fake.dtype, fake
    if not skip_symbolic:
        yield "shape", desc.shape, fake.shape, fake
    yield "requires_grad", desc.requires_grad, fake.requires_grad, fake
    yield "is_leaf", desc.is_leaf, fake.is_leaf, fake
    yield "is_sparse", desc.is_sparse, fake.is_sparse, fake
    inference = False if _inference_mode_disabled() else fake.is_inference()
    yield "is_inference()", desc.is_inference, inference, fake
    yield "is_conj()", desc.is_conj, fake.is_conj(), fake
    yield "is_neg()", desc.is_neg, fake.is_neg(), fake
    yield "grad is not None", desc.grad is not None, safe_grad(fake) is not None, fake
    if desc.grad is not None:
        yield from metadata_fields(desc.grad, _expect_safe_grad(fake), skip_symbolic=skip_symbolic)
    if desc.is_sparse:
        yield "layout", desc.layout, fake.layout, fake
        yield "dense_dim()", desc.dense_dim, fake.dense_dim(), fake
        yield "sparse_dim()", desc.sparse_dim, fake.sparse_dim(), fake
        yield "is_coalesced()", desc.is_coalesced, fake.is_coalesced(), fake
        return
    if not skip_symbolic:
        yield "stride()", desc.stride, fake.stride(), fake
        yield "storage_offset()", desc.storage_offset, fake.storage_offset(), fake
    yield "_is_view()", desc.is_view, fake._is_view(), fake
    if desc.is_view:
        bases = desc.base is not None, fake._base is not None
        yield "_base is not None", bases[0], bases[1], fake
        if all(bases):
            yield from metadata_fields(desc.base, fake._base, skip_symbolic=skip_symbolic)


def first_difference(real: Any, fake: Any, *, skip_symbolic: bool
                     ) -> tuple[str, Any, Any, Any] | None:
    """The first field (as :func:`metadata_fields`) on which ``fake``
    differs from ``real``, else None."""
    from torch._subclasses.meta_utils import MetaTensorDescriber

    desc = MetaTensorDescriber().describe_tensor(real)
    for field in metadata_fields(desc, fake, skip_symbolic=skip_symbolic):
        if field[1] != field[2]:
            return field
    return None


@check("metadata", "the fields of torch's assert_metadata_eq (shape, strides, offset, dtype, "
                   "bits, grad, base)")
def metadata_check(conv: Conversion) -> list[Mismatch]:
    paths = {id(f): p for p, _, f in related(conv, inner=False)}
    found: list[Mismatch] = []
    for name, real, fake in conv.pairs():
        symbolic = bool(getattr(conv.converter, "symbolic", False)) or has_symbolic(fake)
        skip = symbolic or _is_compressed(real)
        why = ""
        if skip:
            why = ("; skip_symbolic: sizes are symbolic" if symbolic
                   else "; skip_symbolic: compressed sparse layout")
        difference = first_difference(real, fake, skip_symbolic=skip)
        if difference is None:
            continue
        attribute, a, b, on = difference
        path = paths.get(id(on), name)
        if any(m.path == path and m.attribute == attribute for m in found):
            continue  # the same tensor reached from another tensor under test
        found.append(Mismatch(
            check="metadata", path=path, attribute=attribute, real=a, fake=b,
            detail="first differing field of torch's assert_metadata_eq" + why))
    return found
