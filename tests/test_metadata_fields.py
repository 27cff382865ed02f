"""The ``metadata`` check compares what torch's ``assert_metadata_eq``
compares: the same values, in the same order, under the same conditions --
and names each field as ``torch.testing`` does, whatever torch's source
lines say."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.meta_utils import (
    MetaConverter,
    MetaTensorDescriber,
    assert_metadata_eq,
)

from pytest_metafidelity.checks.metadata import first_difference, metadata_fields

# The pseudo-field our walk adds where torch asserts instead of comparing.
_BASE_PRESENT = "_base is not None"


def _leaf_with_grad() -> torch.Tensor:
    x = torch.randn(3, 4, requires_grad=True)
    x.grad = torch.randn(4, 3).t()
    return x


def _view_of_requires_grad() -> torch.Tensor:
    return torch.randn(4, 4, requires_grad=True)[1:, ::2]


def _inference_view() -> torch.Tensor:
    with torch.inference_mode():
        return torch.randn(5)[2:]


TENSORS: dict[str, Callable[[], torch.Tensor]] = {
    "dense": lambda: torch.randn(3, 4),
    "offset-view": lambda: torch.arange(20.).reshape(4, 5)[1:, 2:],
    "view-of-view": lambda: torch.randn(6, 6)[1:].t()[2:],
    "leaf-with-grad": _leaf_with_grad,
    "view-of-requires-grad": _view_of_requires_grad,
    "non-leaf": lambda: torch.randn(3, requires_grad=True) * 2,
    "conj": lambda: torch.randn(3, dtype=torch.complex64).conj(),
    "neg": lambda: torch._neg_view(torch.randn(3, dtype=torch.complex64)),
    "inference-view": _inference_view,
    "sparse-coo": lambda: torch.eye(3).to_sparse(),
    "sparse-coo-hybrid": lambda: torch.randn(2, 3).to_sparse(1),
    "sparse-csr": lambda: torch.randn(2, 3).to_sparse_csr(),
}


def torch_comparisons(real: torch.Tensor, fake: torch.Tensor, skip: bool) -> list[tuple[Any, Any]]:
    """Every (real, converted) pair torch's assert_metadata_eq compares."""
    pairs: list[tuple[Any, Any]] = []
    assert_metadata_eq(lambda a, b: pairs.append((a, b)), real, fake, skip_symbolic=skip)
    return pairs


def our_comparisons(real: torch.Tensor, fake: torch.Tensor, skip: bool) -> list[tuple[Any, Any]]:
    desc = MetaTensorDescriber().describe_tensor(real)
    return [(a, b) for name, a, b, _ in metadata_fields(desc, fake, skip_symbolic=skip)
            if name != _BASE_PRESENT]


def _convert(name: str, real: torch.Tensor) -> torch.Tensor:
    if name == "meta":
        return MetaConverter()(real)
    return FakeTensorMode().from_tensor(real)


@pytest.mark.parametrize("converter", ["meta", "fake"])
@pytest.mark.parametrize("kind", list(TENSORS))
def test_the_same_fields_as_torchs_assert_metadata_eq(kind: str, converter: str) -> None:
    real = TENSORS[kind]()
    fake = _convert(converter, real)
    skip = real.layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)
    for skip_symbolic in {skip, True}:
        ours = our_comparisons(real, fake, skip_symbolic)
        assert ours == torch_comparisons(real, fake, skip_symbolic)
        assert len(ours) >= 9  # dtype .. grad at least: something was compared
        assert first_difference(real, fake, skip_symbolic=skip_symbolic) is None


class _Differs(Exception):
    pass


def _first_torch_difference(real: torch.Tensor, fake: torch.Tensor) -> tuple[Any, Any]:
    def assert_eq(a: Any, b: Any) -> None:
        if a != b:
            raise _Differs(a, b)

    with pytest.raises(_Differs) as found:
        assert_metadata_eq(assert_eq, real, fake)
    return found.value.args


@pytest.mark.parametrize(("field", "real", "make_fake", "values"), [
    ("stride()", lambda: torch.randn(3, 4),
     lambda r: torch.empty_strided((3, 4), (1, 3), device="meta"), ((4, 1), (1, 3))),
    ("storage_offset()", lambda: torch.arange(20.)[7:],
     lambda r: torch.empty(13, device="meta"), (7, 0)),
    ("dtype", lambda: torch.randn(3), lambda r: torch.empty(3, dtype=torch.float64, device="meta"),
     (torch.float32, torch.float64)),
    ("is_conj()", lambda: torch.randn(3, dtype=torch.complex64).conj(),
     lambda r: torch.empty(3, dtype=torch.complex64, device="meta"), (True, False)),
    ("requires_grad", lambda: torch.randn(3, requires_grad=True),
     lambda r: torch.empty(3, device="meta"), (True, False)),
    ("_is_view()", lambda: torch.randn(4)[:3], lambda r: torch.empty(3, device="meta"),
     (True, False)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_names_the_first_differing_field_as_torch_testing_does(
        field: str, real: Callable[[], torch.Tensor], make_fake: Callable[[Any], Any],
        values: tuple[Any, Any] | None) -> None:
    r = real()
    fake = make_fake(r)
    found = first_difference(r, fake, skip_symbolic=False)
    assert found is not None and found[0] == field
    # The same values torch's function finds first.
    assert found[1:3] == _first_torch_difference(r, fake)
    if values is not None:
        assert found[1:3] == values


def test_a_difference_in_the_base_is_reported_on_the_base() -> None:
    base = torch.randn(4, 4, requires_grad=True)
    view = base[1:]
    fake = MetaConverter()(view)
    fake._base.requires_grad_(False)
    field, real_value, fake_value, on = first_difference(view, fake, skip_symbolic=False)
    assert (field, real_value, fake_value) == ("requires_grad", True, False)
    assert on is fake._base
