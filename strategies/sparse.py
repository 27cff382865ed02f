"""Sparse tensors: COO (coalesced and not, hybrid, leaf requiring grad and
non-leaf) and the compressed layouts CSR, CSC, BSR and BSC (batch dims, dense
dims, int32 and int64 indices, non-trivial blocks).

Every tensor is built from explicit index tensors written out in the recipe,
so the reproducer shows the exact sparsity pattern, and the indices are
valid by construction (``torch._validate_sparse_*`` accepts them: the tests
check it).  Compressed tensors are sometimes built by converting a dense one
instead (``to_sparse_csr`` and friends), the way most users make them.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig, dense_expr
from .dense import grad_capable
from .kinds import kind
from .recipe import RecipeBuilder

# How a sparse tensor that requires grad is made, simplest first: a leaf
# given requires_grad_(), a non-leaf built from values that require grad, a
# non-leaf result of an op on a leaf.
GRAD_MODES = ("leaf", "from_values", "op")

MAX_NNZ = 6


def _layout_unavailable(layout: str, constructor: str) -> Any:
    def unavailable() -> str | None:
        import torch

        if not isinstance(getattr(torch, layout, None), torch.layout):
            return f"this torch has no torch.{layout} layout"
        if not callable(getattr(torch, constructor, None)):
            return f"this torch has no torch.{constructor}"
        return None

    return unavailable


def _dev(device: str) -> str:
    return "" if device == "cpu" else f", device={device!r}"


def _nested(flat: list[int], shape: tuple[int, ...]) -> Any:
    """``flat`` (row-major) as nested lists of ``shape``."""
    if len(shape) <= 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def index_expr(flat: list[int], shape: tuple[int, ...], index_dtype: str, device: str) -> str:
    """Source for an index tensor of ``shape`` holding ``flat``, written out."""
    if math.prod(shape) == 0:
        return f"torch.empty({shape}, dtype=torch.{index_dtype}{_dev(device)})"
    return f"torch.tensor({_nested(flat, shape)}, dtype=torch.{index_dtype}{_dev(device)})"


def _unravel(k: int, sizes: tuple[int, ...]) -> list[int]:
    out = []
    for s in reversed(sizes):
        out.append(k % s)
        k //= s
    return out[::-1]


def _draw_grad(draw: Any, cfg: GenConfig, dtype: Any, allow_grad: bool) -> str | None:
    """The grad mode for a new sparse tensor, or None for no grad.  Drawn
    whatever the dtype, so that no dtype makes shorter examples (Hypothesis
    shrinks toward shorter ones, not toward the first dtype, otherwise)."""
    wants = allow_grad and draw(cfg.requires_grad)
    mode = draw(st.sampled_from(GRAD_MODES)) if wants else None
    return mode if grad_capable(dtype) else None


def _subset(draw: Any, n: int, k: int) -> list[int]:
    """``k`` distinct numbers from ``range(n)``, sorted.  Drawn without
    rejection (unlike a unique ``st.lists`` with ``k`` close to ``n``);
    shrinks toward ``[0, 1, ..., k - 1]``."""
    remaining = list(range(n))
    return sorted(remaining.pop(draw(st.integers(0, len(remaining) - 1))) for _ in range(k))


def _draw_nnz(draw: Any, cells: int) -> int:
    """How many of ``cells`` places are specified.  Hypothesis favours the
    low end of a range, so a plain ``integers(0, n)`` made most tensors
    empty: empty is its own 1-in-4 choice instead."""
    nnz = draw(st.integers(min(cells, 1), min(cells, MAX_NNZ)))
    return 0 if draw(st.integers(0, 3)) == 3 else nnz


def _sizes(draw: Any, n: int, low: int, high: int, most: int) -> tuple[int, ...]:
    """``n`` sizes; always ``most`` draws, so a smaller ``n`` is no shortcut
    for the shrinker."""
    drawn = draw(st.lists(st.integers(low, high), min_size=most, max_size=most))
    return tuple(drawn[:n])


def _finish_grad(draw: Any, b: RecipeBuilder, name: str, mode: str | None, ops: tuple[str, ...]) -> str:
    """Apply a grad mode to the sparse tensor ``name`` (built from values
    that already require grad when ``mode == "from_values"``)."""
    if mode is None:
        return name
    event(f"sparse grad: {mode}")
    if mode == "from_values":
        return name
    b.stmt(f"{name}.requires_grad_()")
    if mode == "op":
        op = draw(st.sampled_from(ops))
        made = b.try_let(op.format(name))
        if made is not None:
            event(f"sparse non-leaf op: {op.format('t')}")
            return made
        event("sparse grad: op refused, leaf kept")
    return name


def _values(b: RecipeBuilder, shape: tuple[int, ...], dtype: Any, device: str, grad_mode: str | None) -> str:
    values = b.let(dense_expr(shape, dtype, device), prefix="v")
    if grad_mode == "from_values":
        b.stmt(f"{values}.requires_grad_()")
    return values


def draw_sparse_coo(draw: Any, b: RecipeBuilder, cfg: GenConfig, *, allow_grad: bool = True) -> str:
    """Add a sparse COO tensor to ``b``; returns its name."""
    dtype = draw(cfg.dtypes)
    device = draw(cfg.devices)
    sparse_dim = draw(st.sampled_from((1, 2, 3, 0)))
    dense_dim = draw(st.integers(0, 2))
    sparse_sizes = _sizes(draw, sparse_dim, 1, 4, 3)
    dense_sizes = _sizes(draw, dense_dim, 0, 3, 2)
    empty_dim = draw(st.integers(0, 3))  # 1 in 4: a sparse dim of size 0
    if empty_dim == 3 and sparse_dim:
        sparse_sizes = (0, *sparse_sizes[1:])
        event("sparse_coo: zero-size sparse dim")
    cells = math.prod(sparse_sizes)  # 1 for sparse_dim 0: one scalar "cell"
    uncoalesced = draw(st.booleans()) and cells > 0
    if uncoalesced:
        # At least two entries, so torch does not call it coalesced; any
        # order, duplicates allowed (shrinks to a duplicated first cell).
        nnz = draw(st.integers(2, MAX_NNZ))
        linear = draw(st.lists(st.integers(0, cells - 1), min_size=nnz, max_size=nnz))
        if len(set(linear)) < len(linear):
            event("sparse_coo: duplicate indices")
        if linear != sorted(linear):
            event("sparse_coo: unsorted indices")
    else:
        nnz = _draw_nnz(draw, cells)
        linear = _subset(draw, cells, nnz)
    values_shape = (nnz, *dense_sizes)
    assume(math.prod(values_shape) * max(dtype.itemsize, 1) <= cfg.max_storage_bytes)
    coords = [_unravel(k, sparse_sizes) for k in linear]  # nnz x sparse_dim
    flat = [coords[j][i] for i in range(sparse_dim) for j in range(nnz)]
    grad_mode = _draw_grad(draw, cfg, dtype, allow_grad)
    indices = b.let(index_expr(flat, (sparse_dim, nnz), "int64", device), prefix="i")
    values = _values(b, values_shape, dtype, device, grad_mode)
    size = (*sparse_sizes, *dense_sizes)
    flag = "" if uncoalesced else ", is_coalesced=True"
    name = b.let(f"torch.sparse_coo_tensor({indices}, {values}, {size}{flag})")
    event(f"sparse_coo: {'uncoalesced' if uncoalesced else 'coalesced'}")
    if dense_dim:
        event("sparse_coo: hybrid (dense dims)")
    if sparse_dim == 0:
        event("sparse_coo: sparse_dim 0")
    if nnz == 0:
        event("sparse_coo: nnz 0")
    return _finish_grad(draw, b, name, grad_mode, ("{0} * 2", "{0}.coalesce()", "{0}.clone()", "{0} + {0}"))


def draw_sparse_compressed(
    draw: Any, b: RecipeBuilder, cfg: GenConfig, layout: str, *, allow_grad: bool = True
) -> str:
    """Add a CSR/CSC/BSR/BSC tensor (``layout`` is e.g. "sparse_csr")."""
    dtype = draw(cfg.dtypes)
    device = draw(cfg.devices)
    blocked = layout in ("sparse_bsr", "sparse_bsc")
    row_major = layout in ("sparse_csr", "sparse_bsr")
    batch = _sizes(draw, draw(st.integers(0, 2)), 1, 3, 2)
    dense_sizes = _sizes(draw, draw(st.integers(0, 2)), 0, 3, 2)
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))  # in blocks
    empty = draw(st.integers(0, 7))  # 1 in 4: no rows or no columns
    if empty >= 6:
        rows, cols = (0, cols) if empty == 6 else (rows, 0)
        event(f"{layout}: zero rows or columns")
    block_drawn = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    block = block_drawn if blocked else ()
    index_dtype = draw(st.sampled_from(("int64", "int32")))
    grad_mode = _draw_grad(draw, cfg, dtype, allow_grad)
    if grad_mode == "from_values" and dtype.is_complex:
        # torch: "sparse_compressed_tensor does not support automatic
        # differentiation for outputs with complex dtype".
        event(f"{layout}: complex values requiring grad refused, grad op instead")
        grad_mode = "op"
    size = (*batch, rows * (block[0] if blocked else 1), cols * (block[1] if blocked else 1), *dense_sizes)
    ops = ("{0} * 2", "{0}.clone()", "{0} + {0}")

    # The sparsity pattern, drawn even when the tensor is then made by
    # conversion, so that conversion is no shortcut for the shrinker.
    n_compressed, n_plain = (rows, cols) if row_major else (cols, rows)
    cells = rows * cols
    nnz = _draw_nnz(draw, cells)
    n_batches = math.prod(batch)
    compressed: list[int] = []
    plain: list[int] = []
    for _ in range(n_batches):
        # Cell k is (k // n_plain, k % n_plain) in (compressed, plain)
        # coordinates; sorted cells give the order the format requires.
        picked = _subset(draw, cells, nnz)
        counts = [0] * n_compressed
        for k in picked:
            counts[k // n_plain] += 1
        running = [0]
        for c in counts:
            running.append(running[-1] + c)
        compressed += running
        plain += [k % n_plain for k in picked]

    if draw(st.booleans()) and not batch:  # by conversion from a dense tensor
        dense_shape = size
        assume(math.prod(dense_shape) * max(dtype.itemsize, 1) <= cfg.max_storage_bytes)
        dense = b.let(dense_expr(dense_shape, dtype, device), prefix="d")
        if grad_mode == "from_values":
            b.stmt(f"{dense}.requires_grad_()")
        convert = "to_" + layout
        args = [f"{block}"] if blocked else []
        if dense_sizes:
            args.append(f"dense_dim={len(dense_sizes)}")
        name = b.try_let(f"{dense}.{convert}({', '.join(args)})")
        if name is not None:
            event(f"{layout}: converted from dense")
            if grad_mode == "from_values":
                event("sparse grad: from_values")
                return name
            return _finish_grad(draw, b, name, grad_mode, ops)
        event(f"{layout}: conversion refused, built from indices")
        if grad_mode == "from_values":
            grad_mode = "leaf"

    values_shape = (*batch, nnz, *block, *dense_sizes)
    assume(math.prod(values_shape) * max(dtype.itemsize, 1) <= cfg.max_storage_bytes)
    c_name = b.let(index_expr(compressed, (*batch, n_compressed + 1), index_dtype, device), prefix="i")
    p_name = b.let(index_expr(plain, (*batch, nnz), index_dtype, device), prefix="i")
    values = _values(b, values_shape, dtype, device, grad_mode)
    name = b.let(f"torch.{layout}_tensor({c_name}, {p_name}, {values}, {size})")
    event(f"{layout}: index dtype {index_dtype}")
    if batch:
        event(f"{layout}: batch dims")
    if dense_sizes:
        event(f"{layout}: dense dims")
    if blocked and block != (1, 1):
        event(f"{layout}: non-trivial blocksize")
    if nnz == 0:
        event(f"{layout}: nnz 0")
    return _finish_grad(draw, b, name, grad_mode, ops)


@kind(
    "sparse_coo",
    "sparse COO: coalesced and not, hybrid (dense dims), leaf requiring grad, non-leaf",
    unavailable=_layout_unavailable("sparse_coo", "sparse_coo_tensor"),
    cost_ms=7,
)
def sparse_coo_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_sparse_coo(draw, b, cfg)]


def _register_compressed(layout: str, summary: str, cost_ms: float) -> None:
    @kind(layout, summary, unavailable=_layout_unavailable(layout, f"{layout}_tensor"),
          cost_ms=cost_ms)
    def compressed_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
        return [draw_sparse_compressed(draw, b, cfg, layout)]


_register_compressed("sparse_csr", "sparse CSR: batch dims, dense dims, int32/int64 indices, grad", 5)
_register_compressed("sparse_csc", "sparse CSC: batch dims, dense dims, int32/int64 indices, grad", 5)
_register_compressed("sparse_bsr", "sparse BSR: block sizes, batch dims, dense dims, index dtypes, grad", 6)
_register_compressed("sparse_bsc", "sparse BSC: block sizes, batch dims, dense dims, index dtypes, grad", 5)


COMPONENT_LAYOUTS = ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")

PROGRAMS_NOT_RUN_VALUES_VIEW = (
    "no converted tensor to run a program on: every converter refuses a view of a sparse COO "
    "tensor (UnsupportedFakeTensorException, by design) and raises on a view of a compressed "
    "one (compressed-values-view-unconvertible)"
)


def _values_view_unavailable() -> str | None:
    return _layout_unavailable("sparse_csr", "sparse_csr_tensor")()


@kind(
    "sparse_values_view",
    "values() of a sparse COO or compressed tensor (a dense view whose base is sparse), or a "
    "slice of it: what a function is handed that takes a sparse tensor's values",
    unavailable=_values_view_unavailable, programs=PROGRAMS_NOT_RUN_VALUES_VIEW, cost_ms=4,
)
def sparse_values_view_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    layout = draw(st.sampled_from(COMPONENT_LAYOUTS))
    event(f"sparse_values_view: of {layout}")
    if layout == "sparse_coo":
        s = draw_sparse_coo(draw, b, cfg)
        # (values() of an uncoalesced tensor raises: of its coalesced copy then,
        # or, where coalesce() has no kernel (the meta device), of the tensor marked
        # coalesced)
        v = (b.try_let(f"{s}.values()", prefix="values")
             or b.try_let(f"{s}.coalesce().values()", prefix="values"))
        if v is None:
            b.stmt(f"with torch.no_grad():\n    {s}._coalesced_(True)")
            v = b.let(f"{s}.values()", prefix="values")
    else:
        v = b.let(f"{draw_sparse_compressed(draw, b, cfg, layout)}.values()", prefix="values")
    if b[v].dim() and b[v].shape[0] > 1 and draw(st.booleans()):
        event("sparse_values_view: a slice of the values")
        v = b.let(f"{v}[1:]", prefix="values")
    return [v]
