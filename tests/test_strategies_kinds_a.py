"""The conj/neg, dtype-view, sparse and family kinds: each builds what it
claims to, and its printed source rebuilds exactly the same tensors.

PYTEST_DONT_REWRITE: pytest's rewritten asserts repr the tensors in a failing
expression, and reading a tensor whose storage was resized to zero bytes
crashes the interpreter (torch does not bounds-check it).  Plain asserts
here, with the recipe's source as the message.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import find, given, settings
from hypothesis import strategies as st

from helpers_strategies import (
    layout_name,
    namespace_of,
    shares_storage,
    storage_key,
    summaries_from_build,
    summaries_from_source,
    tensor_signature,
)
from hypothesis.errors import InvalidArgument, Unsatisfiable

from pytest_metafidelity.strategies import all_kinds, available_kinds, recipes

SINGLE_KINDS = (
    "conj_neg", "dtype_view",
    "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "scalar",
    "sparse_values_view",
)
FAMILY_KINDS = ("set_alias", "view_family")
KINDS = SINGLE_KINDS + FAMILY_KINDS
needs_quantized = pytest.mark.skipif(all_kinds()["quantized"].unavailable() is not None,
                                     reason=str(all_kinds()["quantized"].unavailable()))
needs_mkldnn = pytest.mark.skipif(all_kinds()["mkldnn"].unavailable() is not None,
                                  reason=str(all_kinds()["mkldnn"].unavailable()))


def only(recipe):
    (t,) = recipe.build()
    return t


def test_kinds_are_registered_and_available():
    usable = available_kinds()
    for name in KINDS:
        assert name in usable, name
        assert usable[name].family == (name in FAMILY_KINDS)
        assert not usable[name].needs_context


# -- conj and neg bits ------------------------------------------------------


@given(recipes(kinds=["conj_neg"]))
def test_conj_neg_sets_a_bit(recipe):
    t = only(recipe)
    assert t.layout == torch.strided
    assert t.is_conj() or t.is_neg(), recipe.to_python()
    if t.is_conj():
        assert t.dtype.is_complex


@given(recipes(kinds=["conj_neg"], dtype=torch.complex64))
def test_conj_neg_with_complex_dtype_uses_conj(recipe):
    t = only(recipe)
    assert t.is_conj() or t.is_neg()
    source = recipe.body()
    # With only complex dtypes every op is open: the bit is right for the op.
    if t.is_conj():
        assert "conj()" in source
    if t.dtype == torch.float32:  # conj().imag: a real view with the neg bit
        assert t.is_neg() and ".imag" in source


@given(recipes(kinds=["conj_neg"], dtype=torch.int64))
def test_conj_neg_falls_back_to_neg_without_complex_dtypes(recipe):
    t = only(recipe)
    assert t.dtype == torch.int64 and t.is_neg() and not t.is_conj()


# -- dtype views ------------------------------------------------------------


def _dtype_sources(t, namespace):
    """Tensors of another dtype whose storage ``t`` shares."""
    return [
        v for v in namespace.values()
        if isinstance(v, torch.Tensor) and v is not t and v.dtype != t.dtype and shares_storage(v, t)
    ]


@given(recipes(kinds=["dtype_view"]))
def test_dtype_view_shares_storage_with_another_dtype(recipe):
    namespace = namespace_of(recipe)
    t = namespace[recipe.outputs[0]]
    assert t.layout == torch.strided
    assert _dtype_sources(t, namespace), recipe.to_python()
    if t._is_view() and t._base is not None:
        # .real/.imag/view_as_real/view_as_complex are tracked views: their
        # base (or the base of the views taken after) has the other dtype,
        # unless the dtype change was a view(dtype), which autograd does not
        # track (its result is not a view: _is_view() is False).
        assert t._base.dtype != t.dtype or ".view(torch." in recipe.body()


@given(recipes(kinds=["dtype_view"], dtype=["float32", "complex64", "int16"]))
def test_dtype_view_element_sizes_are_consistent(recipe):
    namespace = namespace_of(recipe)
    t = namespace[recipe.outputs[0]]
    for src in _dtype_sources(t, namespace):
        nbytes = src.untyped_storage().nbytes()
        assert t.untyped_storage().nbytes() == nbytes, recipe.to_python()
        if t.numel() and nbytes:  # (storages resized to 0 bytes hold nothing)
            last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
            assert (last + 1) * t.element_size() <= nbytes


# -- sparse -----------------------------------------------------------------


def _check_grad_state(t, recipe):
    """Requires grad exactly when the recipe asked for it."""
    asked = "requires_grad_()" in recipe.body() or "requires_grad=True" in recipe.body()
    assert t.requires_grad == asked, recipe.to_python()


@given(recipes(kinds=["sparse_coo"]))
def test_sparse_coo_is_valid(recipe):
    t = only(recipe)
    assert t.layout == torch.sparse_coo
    indices, values = t._indices().detach(), t._values().detach()
    assert indices.dtype == torch.int64
    assert indices.shape == (t.sparse_dim(), t._nnz())
    assert values.shape == (t._nnz(), *t.shape[t.sparse_dim():])
    assert t.sparse_dim() + t.dense_dim() == t.dim()
    # torch's own invariant check; with is_coalesced=True it also requires
    # sorted, unique indices.
    torch._validate_sparse_coo_tensor_args(indices, values, t.shape, t.is_coalesced())
    if not t.is_coalesced():
        assert t._nnz() >= 2  # torch calls any tensor with <= 1 entry coalesced
    if "is_coalesced=True" in recipe.body():
        assert t.is_coalesced()
    _check_grad_state(t, recipe)


@given(recipes(kinds=["sparse_coo"], dtype=torch.float32, requires_grad=True))
def test_sparse_coo_requires_grad_leaf_and_non_leaf(recipe):
    t = only(recipe)
    assert t.requires_grad
    _check_grad_state(t, recipe)


_BLOCKED = ("sparse_bsr", "sparse_bsc")
_ROW = ("sparse_csr", "sparse_bsr")


def check_compressed(t, layout, recipe):
    assert layout_name(t) == layout
    row = layout in _ROW
    compressed = (t.crow_indices() if row else t.ccol_indices()).detach()
    plain = (t.col_indices() if row else t.row_indices()).detach()
    values = t.values().detach()
    assert compressed.dtype == plain.dtype
    assert compressed.dtype in (torch.int32, torch.int64)
    batch = compressed.dim() - 1
    assert t.sparse_dim() == 2
    assert batch + 2 + t.dense_dim() == t.dim()
    nnz = plain.shape[-1]
    if layout in _BLOCKED:
        block = tuple(values.shape[batch + 1:batch + 3])
        assert values.shape == (*t.shape[:batch], nnz, *block, *t.shape[batch + 2:])
        rows, cols = t.shape[batch] // block[0], t.shape[batch + 1] // block[1]
        assert (rows * block[0], cols * block[1]) == tuple(t.shape[batch:batch + 2])
    else:
        assert values.shape == (*t.shape[:batch], nnz, *t.shape[batch + 2:])
        rows, cols = t.shape[batch], t.shape[batch + 1]
    assert compressed.shape[-1] == (rows if row else cols) + 1
    torch._validate_sparse_compressed_tensor_args(compressed, plain, values, t.shape, t.layout)
    _check_grad_state(t, recipe)
    return compressed.dtype, batch, t.dense_dim()


@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"])
def test_sparse_compressed_is_valid(layout):
    @given(recipes(kinds=[layout]))
    def check(recipe):
        check_compressed(only(recipe), layout, recipe)

    check()


@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"])
def test_sparse_compressed_reaches_the_interesting_cases(layout):
    """Batch dims, dense dims, int32 indices, non-trivial blocks, grad."""
    strategy = recipes(kinds=[layout], dtype=torch.float32)
    wanted = {
        "int32 indices": lambda t: t.crow_indices().dtype == torch.int32
        if layout in _ROW else t.ccol_indices().dtype == torch.int32,
        "batch dims": lambda t: t.dim() - 2 - t.dense_dim() > 0,
        "dense dims": lambda t: t.dense_dim() > 0,
        "non-leaf": lambda t: t.requires_grad and not t.is_leaf,
    }
    if layout in _BLOCKED:
        def big_block(t):
            batch = t.dim() - 2 - t.dense_dim()
            return t.values().shape[batch + 1] * t.values().shape[batch + 2] > 1
        wanted["non-trivial blocksize"] = big_block
    for what, condition in wanted.items():
        found = find(strategy, lambda r, c=condition: c(only(r)),
                     settings=settings(max_examples=500, database=None))
        check_compressed(only(found), layout, found)


def test_sparse_coo_reaches_uncoalesced_hybrid_and_non_leaf():
    strategy = recipes(kinds=["sparse_coo"], dtype=torch.float64)
    for condition in (
        lambda t: not t.is_coalesced(),
        lambda t: t.dense_dim() > 0 and t._nnz() > 0,
        lambda t: t.requires_grad and not t.is_leaf,
        lambda t: t.requires_grad and t.is_leaf,
    ):
        find(strategy, lambda r, c=condition: c(only(r)),
             settings=settings(max_examples=500, database=None))


@given(recipes(kinds=["sparse_values_view"]))
def test_sparse_values_view_is_a_dense_view_of_a_sparse_tensor(recipe):
    t = only(recipe)
    assert t.layout == torch.strided and t._is_view()
    assert t._base.layout in (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc,
                              torch.sparse_bsr, torch.sparse_bsc)
    assert ".values()" in recipe.body()


def test_sparse_values_view_reaches_every_layout_and_a_slice():
    strategy = recipes(kinds=["sparse_values_view"])
    for layout in (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr,
                   torch.sparse_bsc):
        find(strategy, lambda r, layout=layout: only(r)._base.layout == layout,
             settings=settings(max_examples=500, database=None))
    find(strategy, lambda r: "[1:]" in r.body(), settings=settings(max_examples=500, database=None))


# -- families ---------------------------------------------------------------


@given(recipes(kinds=["set_alias"], family=True))
def test_set_alias_shares_storage_without_views(recipe):
    tensors = recipe.build()
    assert 2 <= len(tensors) <= 4
    assert len({id(t) for t in tensors}) == len(tensors)
    keys = {storage_key(t) for t in tensors}
    assert len(keys) == 1 and None not in keys
    nbytes = tensors[0].untyped_storage().nbytes()
    for t in tensors:
        assert not t._is_view()
        assert t.element_size() == tensors[0].element_size()
        if t.numel():
            last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
            assert (last + 1) * t.element_size() <= nbytes
        else:
            assert t.storage_offset() * t.element_size() <= nbytes


@given(recipes(kinds=["view_family"], family=True))
def test_view_family_views_one_storage(recipe):
    tensors = recipe.build()
    assert len(tensors) >= 2
    assert len({storage_key(t) for t in tensors}) == 1
    plain = [t for t in tensors if not t._is_view()]
    assert len(plain) <= 1  # the base, when it is among the outputs
    for t in tensors:
        if t._is_view():
            root = t._base
            assert root is not None and not root._is_view()
            if plain:  # the base, or the detached alias of it
                assert root is plain[0] or shares_storage(root, plain[0])


def test_view_family_reaches_mixed_requires_grad():
    strategy = recipes(kinds=["view_family"], family=True, dtype=torch.float32, requires_grad=True)

    def mixed(recipe):
        tensors = recipe.build()
        return len({t.requires_grad for t in tensors}) == 2

    found = find(strategy, mixed, settings=settings(max_examples=500, database=None))
    assert len(found.outputs) >= 2


# -- round trip: the printed source rebuilds the same tensors ---------------


@pytest.mark.parametrize("kind", [*KINDS, pytest.param("mkldnn", marks=needs_mkldnn),
                                  pytest.param("quantized", marks=needs_quantized)])
def test_source_rebuilds_identical_tensors(kind):
    @given(recipes(kinds=[kind], family=None))
    def check(recipe):
        assert summaries_from_source(recipe) == summaries_from_build(recipe), recipe.to_python()

    check()


# -- MKLDNN -----------------------------------------------------------------


def test_mkldnn_is_registered_and_left_out_exactly_where_torch_has_no_mkldnn(monkeypatch):
    from pytest_metafidelity.strategies import all_kinds

    spec = all_kinds()["mkldnn"]
    assert not spec.family and not spec.needs_context
    assert (spec.unavailable() is None) == torch.backends.mkldnn.is_available()
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)
    assert "torch.backends.mkldnn.is_available() is False" in spec.unavailable()
    assert "mkldnn" not in available_kinds()
    with pytest.raises(InvalidArgument, match="'mkldnn' cannot be built with this torch: .*"
                                              "is_available"):
        find(recipes(kinds=["mkldnn"]), lambda r: True)


def _mkldnn_case(recipe):
    t = only(recipe)
    if isinstance(t, torch.nn.Parameter):
        return "parameter"
    if not t.is_leaf:
        return "non_leaf"
    if t.grad is not None:
        return "grad"
    return "leaf_requires_grad" if t.requires_grad else "leaf"


@needs_mkldnn
@given(recipes(kinds=["mkldnn"]))
def test_mkldnn_is_an_mkldnn_cpu_tensor_of_a_dtype_this_build_accepts(recipe):
    from pytest_metafidelity.strategies.mkldnn import mkldnn_dtypes

    t = only(recipe)
    assert t.is_mkldnn and t.layout == torch._mkldnn and t.device.type == "cpu", recipe.to_python()
    assert t.dtype in mkldnn_dtypes() and 1 <= t.dim() <= 5, recipe.to_python()
    assert ".to_mkldnn()" in recipe.body()
    if t.requires_grad:
        assert t.dtype.is_floating_point
    if not t.is_leaf:  # to_mkldnn of a dense leaf requiring grad
        assert t.grad_fn is not None and t.requires_grad
    elif t.grad is not None:
        assert t.grad.is_mkldnn and t.grad.shape == t.shape


@needs_mkldnn
@pytest.mark.parametrize("case", ["leaf", "parameter", "leaf_requires_grad", "non_leaf", "grad",
                                  "bfloat16", "zero-size", "5-D"])
def test_mkldnn_reaches(case):
    from pytest_metafidelity.strategies.mkldnn import mkldnn_dtypes

    if case == "bfloat16" and torch.bfloat16 not in mkldnn_dtypes():
        pytest.skip("this CPU build's to_mkldnn refuses bfloat16")
    conditions = {
        "bfloat16": lambda r: only(r).dtype == torch.bfloat16,
        "zero-size": lambda r: only(r).numel() == 0,
        "5-D": lambda r: only(r).dim() == 5,
    }
    condition = conditions.get(case, lambda r: _mkldnn_case(r) == case)
    find(recipes(kinds=["mkldnn"]), condition, settings=settings(max_examples=2000, database=None))


@needs_mkldnn
@given(recipes(kinds=["mkldnn"], dtype=["float32", "int64"], requires_grad=False))
def test_mkldnn_keeps_to_the_dtypes_and_requires_grad_asked_for(recipe):
    t = only(recipe)
    assert t.dtype == torch.float32 and not t.requires_grad and t.grad is None


@needs_mkldnn
def test_mkldnn_fakes_are_strided_and_carried_copies_raise_as_registered():
    from pytest_metafidelity import check_faithful
    from pytest_metafidelity.converters import available_converters, where

    carries_real = set(where(carries_real=True))
    t = torch.arange(6.0).reshape(2, 3).to_mkldnn()
    for outcome in check_faithful(t, converters=available_converters()).outcomes:
        assert outcome.status == "known-difference", outcome.describe()
        entry = "mkldnn-real-tensor-copy" if outcome.converter in carries_real else \
            "mkldnn-converted-strided"
        assert {i for i, _ in outcome.known} == {entry}, outcome.describe()


# -- quantized --------------------------------------------------------------


def _quantized_root(t):
    return t._base if t._is_view() and t._base is not None else t


@needs_quantized
@given(recipes(kinds=["quantized"]))
def test_quantized_is_a_quantized_tensor_or_a_view_of_one(recipe):
    t = only(recipe)
    root = _quantized_root(t)
    assert t.is_quantized and root.is_quantized, recipe.to_python()
    assert t.dtype in (torch.qint8, torch.quint8, torch.qint32) and t.device.type == "cpu"
    assert not t.requires_grad
    assert root.qscheme() in (torch.per_tensor_affine, torch.per_channel_affine,
                              torch.per_channel_affine_float_qparams)
    if root.qscheme() == torch.per_channel_affine_float_qparams:
        assert root.dtype == torch.quint8


@needs_quantized
@pytest.mark.parametrize("case", ["per_tensor", "per_channel", "float_qparams", "qint32", "0-dim",
                                  "view", "view of per_channel"])
def test_quantized_reaches(case):
    def scheme(r):
        return _quantized_root(only(r)).qscheme()

    conditions = {
        "per_tensor": lambda r: scheme(r) == torch.per_tensor_affine,
        "per_channel": lambda r: scheme(r) == torch.per_channel_affine,
        "float_qparams": lambda r: scheme(r) == torch.per_channel_affine_float_qparams,
        "qint32": lambda r: only(r).dtype == torch.qint32,
        "0-dim": lambda r: only(r).dim() == 0 and not only(r)._is_view(),
        "view": lambda r: only(r)._is_view(),
        "view of per_channel": lambda r: only(r)._is_view()
        and scheme(r) == torch.per_channel_affine,
    }
    find(recipes(kinds=["quantized"]), conditions[case],
         settings=settings(max_examples=2000, database=None))


@needs_quantized
def test_quantized_is_drawn_only_where_float32_is_allowed():
    with pytest.raises(Unsatisfiable):
        find(recipes(kinds=["quantized"], dtype=["int64", "float64"]), lambda r: True,
             settings=settings(max_examples=50, database=None))


@needs_quantized
def test_every_converter_refuses_quantized_tensors_with_torchs_reason():
    from pytest_metafidelity import check_faithful
    from pytest_metafidelity.converters import available_converters
    from pytest_metafidelity.strategies.torch_notices import quiet_torch_notices

    with quiet_torch_notices():
        t = torch.quantize_per_tensor(torch.arange(6.0), 0.5, 1, torch.qint8)[1:]
    for outcome in check_faithful(t, converters=available_converters()).outcomes:
        assert outcome.status == "unsupported", outcome.describe()
        expected = ("returned NotImplemented" if outcome.converter == "meta"
                    else "UnsupportedFakeTensorException: quantized nyi in meta tensors")
        assert expected in outcome.reason, outcome.describe()


# -- scalar -----------------------------------------------------------------

ITEM_READ_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.float64)


def _exact(value):
    """A key equal for the same number only: NaN equal to NaN, -0.0 apart
    from 0.0, an int apart from a float."""
    return type(value).__name__, repr(value)


@given(recipes(kinds=["scalar"], requires_grad=None))
def test_scalar_is_a_0dim_tensor_of_a_scalar_dtype(recipe):
    from pytest_metafidelity.strategies.scalar import scalar_dtypes

    t = only(recipe)
    assert t.dim() == 0 and t.layout == torch.strided and type(t) is torch.Tensor
    assert t.dtype in scalar_dtypes(), recipe.to_python()
    if t.requires_grad:
        assert t.dtype.is_floating_point and t.is_leaf
    if t._is_view():
        assert t._base.dtype == t.dtype


@given(recipes(kinds=["scalar"], requires_grad=None))
def test_scalar_source_rebuilds_the_exact_value(recipe):
    def signature(t):
        return {**tensor_signature(t), "item()": _exact(t.item())}

    assert summaries_from_source(recipe, signature) == summaries_from_build(recipe, signature), \
        recipe.to_python()


@pytest.mark.parametrize("value", [0, -1, 2 ** 63 - 1, -2 ** 63, 0.0, -0.0, math.nan, math.inf,
                                   -math.inf, 5e-324, 1.7976931348623157e308, True])
def test_scalar_value_literal_evaluates_to_exactly_the_value(value):
    from pytest_metafidelity.strategies.scalar import value_literal

    assert _exact(eval(value_literal(value))) == _exact(value)


def _is(dtype, test=lambda v: True, case=None):
    def condition(r):
        t = only(r)
        if t.dtype != dtype or not test(t.item()):
            return False
        return case is None or case(t)
    return condition


@pytest.mark.parametrize("case", [
    "int64 0", "int64 max", "int64 min", "int64 negative", "int32 max", "int8 min", "float64 nan",
    "float64 inf", "float64 -inf", "float64 -0.0", "float64 requires_grad", "select view",
    "neg view", "float32 control", "bool control",
])
def test_scalar_reaches(case):
    conditions = {
        "int64 0": _is(torch.int64, lambda v: v == 0),
        "int64 max": _is(torch.int64, lambda v: v == 2 ** 63 - 1),
        "int64 min": _is(torch.int64, lambda v: v == -2 ** 63),
        "int64 negative": _is(torch.int64, lambda v: v < 0),
        "int32 max": _is(torch.int32, lambda v: v == 2 ** 31 - 1),
        "int8 min": _is(torch.int8, lambda v: v == -128),
        "float64 nan": _is(torch.float64, math.isnan),
        "float64 inf": _is(torch.float64, lambda v: v == math.inf),
        "float64 -inf": _is(torch.float64, lambda v: v == -math.inf),
        "float64 -0.0": _is(torch.float64, lambda v: v == 0 and math.copysign(1, v) < 0),
        "float64 requires_grad": _is(torch.float64, case=lambda t: t.requires_grad),
        "select view": lambda r: only(r)._is_view() and only(r).storage_offset() > 0,
        "neg view": lambda r: only(r).is_neg(),
        "float32 control": _is(torch.float32),
        "bool control": _is(torch.bool),
    }
    find(recipes(kinds=["scalar"], requires_grad=None), conditions[case],
         settings=settings(max_examples=3000, database=None))


def test_scalar_shrinks_to_an_int64_zero_leaf():
    t = only(find(recipes(kinds=["scalar"]), lambda r: True, settings=settings(database=None)))
    assert (t.dtype, t.item(), t._is_view()) == (torch.int64, 0, False)


def test_scalar_keeps_to_the_dtypes_allowed():
    found = find(recipes(kinds=["scalar"], dtype=["complex64", "float64"]),
                 lambda r: True, settings=settings(database=None))
    assert only(found).dtype == torch.float64
    with pytest.raises(Unsatisfiable):
        find(recipes(kinds=["scalar"], dtype=["complex64"]), lambda r: True,
             settings=settings(max_examples=50, database=None))


# -- dense coverage (channels_last_3d, odd storages) -------------------------


@pytest.mark.parametrize(
    "what",
    ["channels_last", "channels_last_3d", "oversized_storage", "zero_byte_storage"],
)
def test_dense_reaches_layout(what):
    strategy = recipes(kinds=["dense"], min_dims=4, max_dims=5, dtype=["float32", "int8"])

    def needed_bytes(t):
        if not t.numel():
            return 0
        return (t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()

    conditions = {
        "channels_last": lambda t: t.dim() == 4 and not t.is_contiguous()
        and t.is_contiguous(memory_format=torch.channels_last),
        "channels_last_3d": lambda t: t.dim() == 5 and not t.is_contiguous()
        and t.is_contiguous(memory_format=torch.channels_last_3d),
        "oversized_storage": lambda t: t.untyped_storage().nbytes() > needed_bytes(t) > 0,
        "zero_byte_storage": lambda t: t.untyped_storage().nbytes() == 0 and t.numel() > 0,
    }
    find(strategy, lambda r: conditions[what](only(r)),
         settings=settings(max_examples=1000, database=None))


@given(recipes(kinds=["dense"], dtype=st.sampled_from([torch.float32, torch.bool])))
def test_dense_storage_holds_the_tensor_unless_resized_to_zero(recipe):
    t = only(recipe)
    nbytes = t.untyped_storage().nbytes()
    if t.numel() and nbytes:
        last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
        assert (last + 1) * t.element_size() <= nbytes
    if nbytes == 0 and t.numel():
        assert "untyped_storage().resize_(0)" in recipe.body()
    assert math.prod(t.shape) == t.numel()


@given(recipes(kinds=["view"]))
def test_view_kind_output_is_a_view_of_its_base(recipe):
    # reshape is only drawn where it makes a view (it copies otherwise)
    t = only(recipe)
    assert t._is_view(), recipe.to_python()
    assert shares_storage(t, t._base), recipe.to_python()
