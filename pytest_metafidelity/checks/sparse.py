"""`sparse`: sparse structure.

For sparse COO tensors: ``is_coalesced()``, ``sparse_dim()``, ``dense_dim()``
and the index dtype (``_indices().dtype``).  For compressed layouts
(CSR/CSC/BSR/BSC): ``sparse_dim()``, ``dense_dim()``, the number of batch
dimensions (``ndim - sparse_dim - dense_dim``), the index dtype
(``crow_indices()``/``ccol_indices()``) and, for BSR/BSC, the block size
(``values().shape[batch + 1:batch + 3]``).

``_nnz()`` is compared too, and differs by design: the converter makes
sparse tensors with no specified elements (see the ``sparse-nnz`` entry of
:mod:`pytest_metafidelity.known_differences`), so a real tensor with
``nnz > 0`` yields a known difference, not a failure.
"""

from __future__ import annotations

from typing import Any

from . import Conversion, Mismatch, check
from ..strategies.tensor_facts import COMPRESSED_LAYOUTS, layout_name
from ._util import hint, quiet_fake_tensor_log, related, safe, same

_BLOCK = ("sparse_bsr", "sparse_bsc")
_ROW = ("sparse_csr", "sparse_bsr")


def is_sparse(t: Any) -> bool:
    return layout_name(t) in ("sparse_coo", *COMPRESSED_LAYOUTS)


def read_sparse(t: Any) -> dict[str, Any]:
    layout = layout_name(t)
    out: dict[str, Any] = {
        "layout": layout,
        "sparse_dim()": safe(lambda: t.sparse_dim()),
        "dense_dim()": safe(lambda: t.dense_dim()),
        "_nnz()": safe(lambda: hint(t._nnz())),
    }
    if layout == "sparse_coo":
        out["is_coalesced()"] = safe(lambda: t.is_coalesced())
        out["index dtype"] = safe(lambda: t._indices().dtype)
    elif layout in COMPRESSED_LAYOUTS:
        sd, dd = out["sparse_dim()"], out["dense_dim()"]
        batch = t.dim() - sd - dd if sd is not None and dd is not None else None
        out["batch dims"] = batch
        indices = (lambda: t.crow_indices()) if layout in _ROW else (lambda: t.ccol_indices())
        out["index dtype"] = safe(lambda: indices().dtype)
        if layout in _BLOCK and batch is not None:
            out["blocksize"] = safe(
                lambda: tuple(hint(s) for s in t.values().shape[batch + 1:batch + 3]))
    return out


@check("sparse", "is_coalesced, sparse/dense/batch dims, index dtype, block size (nnz: known)")
def sparse_check(conv: Conversion) -> list[Mismatch]:
    found: list[Mismatch] = []
    for path, real, fake in related(conv, inner=False):
        if not is_sparse(real) and not is_sparse(fake):
            continue
        with quiet_fake_tensor_log():  # (a dynamic sparse fake's _nnz() logs its assert)
            expected, got = read_sparse(real), read_sparse(fake)
        for key in expected.keys() | got.keys():
            a, b = expected.get(key, "<absent>"), got.get(key, "<absent>")
            if not same(a, b):
                detail = ("nnz is not preserved by design" if key == "_nnz()" else "")
                found.append(Mismatch(
                    check="sparse", path=path, attribute=key, real=a, fake=b, detail=detail))
    found.sort(key=lambda m: (m.path, m.attribute))
    return found
