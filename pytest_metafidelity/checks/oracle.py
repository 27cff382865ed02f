"""`oracle`: an independent reading of the real tensor through public tensor
APIs only, compared with the same reading of the converted tensor.

Read on both sides: shape, stride and storage offset (strided layouts),
dtype, layout, device (the converter's fake device: ``meta`` for the meta
converter, the real device for fake tensors), requires_grad, is_leaf,
whether it has a ``.grad`` (a leaf's, or a non-leaf's that retained one) and
the grad itself, recursively, is_inference, is_conj, is_neg, ``_is_view``
and Parameter-ness.

Three readings go beyond the public API, each compared only where both sides
can be read (they are not in :func:`read`):

* ``is_contiguous(memory_format=...)`` for every memory format
  ``is_contiguous`` accepts (introspected: the ``torch.memory_format``
  values in torch's namespace), on strided tensors -- not where the
  converted sizes are symbolic (reading it there would add guards);
* the dispatch keys (``torch._C._dispatch_keys(t)``) that name a state no
  other reading names: the Dense/Sparse/SparseCsr/Quantized/NestedTensor/
  Autograd functionality whatever the backend (the backend is the device,
  compared above), MkldnnCPU, ZeroTensor, ADInplaceOrView, AutogradOther and
  AutogradNestedTensor (see :mod:`._dispatch_keys`).  A key present on one
  side only is reported as ``<key> in torch._C._dispatch_keys(t)``;
* ``item()`` of a fake that remembers a symbol for its value
  (``item_memo``): converting a plain 0-dim CPU tensor of int64, int32,
  int16, int8 or float64 with a ``ShapeEnv`` and a source
  (``fake-dynamic``, ``fake-real-dynamic``), ``from_real_tensor`` reads
  ``t.item()`` and, for int64 (a SymInt) and float64 (a SymFloat), keeps the
  symbol it makes as ``item_memo``.  Where a fake has one (read guarded: no
  other fake has the attribute), its hint must be the real ``item()``: the
  same number, an int for an int and a float for a float, -0.0 apart from
  0.0, NaN equal to NaN.  For a NaN or infinite value torch makes no symbol:
  a fake remembering one for such a value is reported too.

Where the converted sizes, strides or offset are SymInts they are compared
through their hints (the example values the ShapeEnv recorded; reading a
hint adds no guard); where they are static they are compared exactly.

For converters whose fakes carry their real tensor (``fake-real``,
``fake-real-dynamic``), the carried ``fake.real_tensor`` must equal the
original: the same shape, strides, offset, dtype, layout, device and
conj/neg bits, and the same values (NaNs equal to NaNs).  Its autograd
metadata is not compared: it is data, not a graph input.  A functorch
wrapper (BatchedTensor, GradTrackingTensor) carries nothing itself: the
fake tensor inside it does -- real-tensor propagation runs where
FakeTensorMode sees the op, below every functorch level -- and is checked
at ``….unwrapped`` by the ``wrappers`` check.
"""

from __future__ import annotations

from typing import Any

from . import Conversion, Mismatch, check
from ..strategies.tensor_facts import functional_value, storage_too_small
from ._dispatch_keys import attribute as key_attribute
from ._dispatch_keys import compared_keys
from ._util import (UNKNOWN, fake_device, grad_of, has_symbolic, hint, hints, is_view, related,
                    safe, same)


def read(t: Any, *, device: Any = None) -> dict[str, Any]:
    """The oracle's reading of ``t`` (``device`` replaces ``t.device`` on the
    expected side: the device a converted tensor must report).  Read in one
    go; where a field cannot be read (it raises), field by field, that one
    as None."""
    try:
        return _read_in_one_go(t, device)
    except Exception:
        return _read_field_by_field(t, device)


def _read_in_one_go(t: Any, device: Any) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {
        "shape": hints(t.shape),
        "dtype": t.dtype,
        "layout": t.layout,
        "device": t.device if device is None else device,
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "grad is not None": grad_of(t) is not None,
        "is_inference()": t.is_inference(),
        "is_conj()": t.is_conj(),
        "is_neg()": t.is_neg(),
        "_is_view()": is_view(t),
        "isinstance(nn.Parameter)": isinstance(t, torch.nn.Parameter),
        # nn.Buffer's marks (nn.Module.register_buffer reads them)
        "_is_buffer": bool(getattr(t, "_is_buffer", False)),
        "persistent": getattr(t, "persistent", None),
    }
    if t.layout == torch.strided:
        out["stride()"] = hints(t.stride())
        out["storage_offset()"] = hint(t.storage_offset())
    return out


def _read_field_by_field(t: Any, device: Any) -> dict[str, Any]:
    import torch

    strided = safe(lambda: t.layout == torch.strided, False)
    out: dict[str, Any] = {
        "shape": safe(lambda: hints(t.shape)),
        "dtype": t.dtype,
        "layout": t.layout,
        "device": t.device if device is None else device,
        "requires_grad": t.requires_grad,
        "is_leaf": safe(lambda: t.is_leaf),
        "grad is not None": grad_of(t) is not None,
        "is_inference()": safe(lambda: t.is_inference()),
        "is_conj()": safe(lambda: t.is_conj()),
        "is_neg()": safe(lambda: t.is_neg()),
        "_is_view()": is_view(t),
        "isinstance(nn.Parameter)": isinstance(t, torch.nn.Parameter),
        # nn.Buffer's marks (nn.Module.register_buffer reads them)
        "_is_buffer": bool(getattr(t, "_is_buffer", False)),
        "persistent": getattr(t, "persistent", None),
    }
    if strided:
        out["stride()"] = safe(lambda: hints(t.stride()))
        out["storage_offset()"] = safe(lambda: hint(t.storage_offset()))
    return out


# What the carried real tensor of a fake must share with the original.
_DATA_FIELDS = ("shape", "stride()", "storage_offset()", "dtype", "layout", "device",
                "is_conj()", "is_neg()")


def _compare(path: str, expected: dict[str, Any], got: dict[str, Any],
             fields: Any = None, detail: str = "") -> list[Mismatch]:
    found = []
    for key in fields or expected:
        if key not in expected and key not in got:
            continue
        a, b = expected.get(key, "<absent>"), got.get(key, "<absent>")
        if not same(a, b):
            found.append(Mismatch(
                check="oracle", path=path, attribute=key, real=a, fake=b, detail=detail))
    return found


def values_equal(a: Any, b: Any) -> bool | None:
    """True/False when both tensors' values can be read, else None."""
    import torch

    # Only plain tensors' values are read: reading through a wrapper whose
    # inner storage was resized away crashes the process.
    plain = (torch.Tensor, torch.nn.Parameter)
    if type(a) not in plain or type(b) not in plain:
        return None
    if storage_too_small(a) or storage_too_small(b):
        return None
    try:
        with torch.no_grad():
            x = a.detach()
            y = b.detach()
            if x.layout != torch.strided:
                x = x.to_dense()
            if y.layout != torch.strided:
                y = y.to_dense()
            x = x.resolve_conj().resolve_neg()
            y = y.resolve_conj().resolve_neg()
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if x.dtype.is_floating_point or x.dtype.is_complex:
                both_nan = torch.isnan(x) & torch.isnan(y)
                return bool(((x == y) | both_nan).all())
            return bool(torch.equal(x, y))
    except Exception:
        return None


@check("oracle", "public-API reading of shape, strides, dtype, device, autograd bits, view-ness, grads")
def oracle_check(conv: Conversion) -> list[Mismatch]:
    found: list[Mismatch] = []
    carries_real = bool(getattr(conv.converter, "carries_real", False))
    symbolic = bool(getattr(conv.converter, "symbolic", False))
    for path, real, fake in related(conv, inner=False):
        found += _compare(path, read(real, device=fake_device(conv, real)), read(fake))
        if not symbolic and not has_symbolic(fake):
            found += _compare_contiguity(path, real, fake)
        found += _compare_dispatch_keys(path, real, fake)
        found += compare_item(path, real, fake)
        if carries_real:
            found += _carried(path, real, fake)
    return found


_UNREADABLE = object()


def item_memo(fake: Any) -> Any:
    """The symbol a fake remembers for its value (``FakeTensor.item_memo``:
    a SymInt, a SymFloat, or a plain number where the ShapeEnv made a
    constant), or None: no memo, or not a fake tensor."""
    return safe(lambda: getattr(fake, "item_memo", None))


def same_number(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same number: an int for an int and a float for
    a float, NaN equal to NaN, -0.0 apart from 0.0."""
    import math

    if isinstance(a, float) != isinstance(b, float):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


def _real_item(real: Any) -> Any:
    """``real.item()``, or _UNREADABLE where its value cannot be read safely
    (not one element, not strided, a storage smaller than the tensor)."""
    import torch

    if safe(lambda: real.layout == torch.strided and real.numel() == 1, False) is not True:
        return _UNREADABLE
    if storage_too_small(real):
        return _UNREADABLE
    return safe(lambda: real.item(), _UNREADABLE)


def compare_item(path: str, real: Any, fake: Any) -> list[Mismatch]:
    """``item()``: the hint of the fake's ``item_memo`` against the real
    ``item()``; [] where the fake has no memo."""
    import math

    memo = item_memo(fake)
    if memo is None:
        return []
    expected = _real_item(real)
    if expected is _UNREADABLE:
        return []
    got = hint(memo)
    if got is UNKNOWN:
        return []
    if isinstance(expected, float) and not math.isfinite(expected):
        return [Mismatch(
            check="oracle", path=path, attribute="item()", real=expected, fake=got,
            detail=f"the fake remembers a symbol for its value (item_memo = {memo!r}); torch "
                   "makes none for a NaN or infinite value")]
    if same_number(expected, got):
        return []
    return [Mismatch(
        check="oracle", path=path, attribute="item()", real=expected, fake=got,
        detail=f"the hint of the symbol the fake remembers for its value (item_memo = {memo!r})")]


def memory_formats() -> tuple[Any, ...]:
    """The memory formats ``is_contiguous`` accepts, in torch's namespace
    order, less ``preserve_format`` (an instruction to keep a tensor's
    format, read as ``contiguous_format`` here)."""
    import torch

    if not _MEMORY_FORMATS:
        probe = torch.empty(1, 1, 1, 1, 1)
        formats = {id(v): v for v in vars(torch).values()
                   if isinstance(v, torch.memory_format) and v is not torch.preserve_format}
        _MEMORY_FORMATS.extend(f for f in formats.values()
                               if safe(lambda: probe.is_contiguous(memory_format=f)) is not None)
    return tuple(_MEMORY_FORMATS)


_MEMORY_FORMATS: list[Any] = []


def contiguity_attribute(memory_format: Any) -> str:
    """``is_contiguous(memory_format=torch.channels_last)``."""
    return f"is_contiguous(memory_format={memory_format})"


def read_contiguity(t: Any) -> dict[str, Any]:
    """``is_contiguous(memory_format=...)`` of a strided tensor for each
    memory format; {} for other layouts, None where it raises."""
    import torch

    if safe(lambda: t.layout) != torch.strided:
        return {}
    return {contiguity_attribute(f): safe(lambda: bool(t.is_contiguous(memory_format=f)))
            for f in memory_formats()}


def _compare_contiguity(path: str, real: Any, fake: Any) -> list[Mismatch]:
    expected, got = read_contiguity(real), read_contiguity(fake)
    return [Mismatch(check="oracle", path=path, attribute=key, real=expected[key], fake=got[key])
            for key in expected
            if got.get(key) is not None and expected[key] is not None and expected[key] != got[key]]


def _compare_dispatch_keys(path: str, real: Any, fake: Any) -> list[Mismatch]:
    expected = safe(lambda: compared_keys(real), _UNREADABLE)
    got = safe(lambda: compared_keys(fake), _UNREADABLE)
    if expected is _UNREADABLE or got is _UNREADABLE:
        return []
    return [Mismatch(check="oracle", path=path, attribute=key_attribute(key),
                     real=expected.get(key), fake=got.get(key),
                     detail="a dispatch key present on one side only")
            for key in sorted(set(expected) ^ set(got))]


def _carried(path: str, real: Any, fake: Any) -> list[Mismatch]:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ._util import carried_real, functorch_unwrapped

    if functorch_unwrapped(real) is not None:
        return []  # carried by the innermost fake, checked at f"{path}.unwrapped"
    if is_traceable_wrapper_subclass(fake):
        return []  # a wrapper has no data: its inner fakes carry theirs (``wrappers``)
    carried = carried_real(fake)
    where = f"{path}.real_tensor"
    if carried is None:
        return [Mismatch(
            check="oracle", path=where, attribute="real_tensor is not None", real=True, fake=False,
            detail="a fake of a real-tensor-propagating mode must carry its real tensor")]
    found = _compare(where, read(real), read(carried), _DATA_FIELDS,
                     "the real tensor the fake carries")
    if not found and values_equal(_value(real), carried) is False:
        found.append(Mismatch(
            check="oracle", path=where, attribute="values", real="the original's values",
            fake="different values", detail="the real tensor the fake carries"))
    return found


def carried_values_differ(real: Any, carried: Any) -> bool:
    """What :func:`oracle_check` reports as ``values`` for a carried real
    tensor: its metadata matches the original's, its values do not."""
    return (not _compare("", read(real), read(carried), _DATA_FIELDS, "")
            and values_equal(_value(real), carried) is False)


def _value(real: Any) -> Any:
    """What a fake's carried real tensor holds the values of: the real
    tensor, or a C++ functional tensor's value as it stands (the fake
    carries its value's; reading the wrapper's values would first apply
    its pending updates, on the real side only)."""
    value = functional_value(real)
    return real if value is None else value
