"""Scalars: 0-dim CPU tensors whose value the converter reads.

``FakeTensorConverter.from_real_tensor`` has a branch of its own for them:
converting a plain 0-dim CPU tensor of int64, int32, int16, int8 or float64
with a ``ShapeEnv`` and a source (``fake-dynamic``, ``fake-real-dynamic``)
reads ``t.item()`` and, unless the value is NaN or infinite, makes an
unspecified symbol for it; for int64 and float64 the fake remembers it as
``item_memo`` (a SymInt, a SymFloat) whose hint is the value.  The ``oracle``
check compares that hint with the real ``item()``.

Drawn: int64 first (shrinking ends at an int64 zero), then float64, int32,
int16 and int8, the dtypes torch reads (int64 and float64, which it
remembers a symbol for, twice as often), and float32, bool, uint8 and
float16 as controls (torch reads none of them); those ``dtype=`` allows.
Values include 0, 1, -1, the dtype's limits and their neighbours, any
integer in range; for floats -0.0, NaN, inf, -inf, the largest and the
smallest subnormal, 2**53 + 1, any float.  Cases: a leaf; a float leaf
requiring grad (float64, float32, float16); a 0-dim view selected from a
1-dim tensor (``item()`` reads at its storage offset); a 0-dim view with the
negative bit (``torch._neg_view``, signed dtypes: ``item()`` reads the
negated value).  The device is drawn from ``devices=`` (a non-CPU scalar is
a control too).  Always 0-dim, whatever ``shape=`` allows: the kind is about
0-dim tensors.  Every value is written out in the recipe exactly (``repr``
of ints and floats, ``float('nan')``, ``float('inf')``, ``-0.0``), so the
reproducer rebuilds the value that failed.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import assume, event
from hypothesis import strategies as st

from .config import GenConfig
from .dtype_pick import allowed_dtypes, draw_dtype_where
from .kinds import kind
from .recipe import RecipeBuilder

# Simplest first: shrinking ends at an int64 zero.  The first five are the
# dtypes from_real_tensor reads with item(); the rest are controls.
SCALAR_DTYPES = ("int64", "float64", "int32", "int16", "int8",
                 "float32", "bool", "uint8", "float16")
# Drawn twice as often as the others: the dtypes torch remembers a symbol
# for (item_memo), which the oracle compares.
MEMO_DTYPES = ("int64", "float64")
ITEM_READ = ("int64", "int32", "int16", "int8", "float64")
# Simplest first.
CASES = ("leaf", "requires_grad", "select", "neg_view")
_FLOAT_SPECIALS = (0.0, math.nan, math.inf, -math.inf, -0.0, 1.0, -1.0, 0.5,
                   2.0 ** 53 + 1, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                   -1.7976931348623157e308)


def scalar_dtypes() -> tuple[Any, ...]:
    """The scalar dtypes this torch has, int64 first."""
    import torch

    return tuple(getattr(torch, n) for n in SCALAR_DTYPES if hasattr(torch, n))


def _draw_dtype(draw: Any, cfg: GenConfig) -> Any | None:
    """A scalar dtype ``cfg`` allows, in this kind's order (int64 first),
    or None."""
    known = allowed_dtypes(cfg)
    if known is None:  # an opaque user strategy: a few plain draws
        return draw_dtype_where(draw, cfg, lambda d: d in scalar_dtypes())
    fitting = [d for d in scalar_dtypes() if d in known]
    fitting += [d for d in fitting if str(d).removeprefix("torch.") in MEMO_DTYPES]
    return draw(st.sampled_from(fitting)) if fitting else None


def value_literal(value: Any) -> str:
    """Python source that evaluates to exactly ``value`` (a bool, an int or
    a float: NaN, the infinities and -0.0 too)."""
    if isinstance(value, bool) or isinstance(value, int):
        return repr(value)
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "-float('inf')"
    return repr(float(value))  # repr round-trips; '-0.0' keeps its sign


def _values(dtype: Any) -> st.SearchStrategy[Any]:
    import torch

    # Every dtype draws its value the same way (one branch of a one_of,
    # then a value): the same number of choices, so that shrinking compares
    # the dtypes and ends at int64's first special value, 0.
    if dtype is torch.bool:
        return st.one_of(st.sampled_from((False, True)), st.booleans())
    if dtype.is_floating_point:
        specials = st.sampled_from(_FLOAT_SPECIALS)
        # NaN and the infinities (where from_real_tensor makes no symbol)
        # also as a branch of their own: a third of the values.
        non_finite = st.sampled_from((math.nan, math.inf, -math.inf))
        # Any float for float32 and float16 too: torch rounds it (to inf
        # where it overflows), the same way each time the recipe runs.
        return st.one_of(specials, non_finite, st.floats())
    info = torch.iinfo(dtype)
    edges = [0, 1, -1, 2, info.max, info.min, info.max - 1, info.min + 1]
    edges = [v for v in edges if info.min <= v <= info.max]
    return st.one_of(st.sampled_from(edges), st.integers(info.min, info.max))


def _value_event(value: Any, dtype: Any) -> str:
    import torch

    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == 0:
            return "-0.0" if math.copysign(1.0, value) < 0 else "0"
        return "negative" if value < 0 else "positive"
    if isinstance(value, bool):
        return str(value)
    if dtype is not torch.bool:
        info = torch.iinfo(dtype)
        if value in (info.max, info.min):
            return "a limit of the dtype"
    return "0" if value == 0 else ("negative" if value < 0 else "positive")


def draw_scalar(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> str:
    """Add a 0-dim tensor to ``b``; returns its name.  Rejects the example
    where the user's dtypes allow no scalar dtype."""
    dtype = _draw_dtype(draw, cfg)
    if dtype is None:
        event("scalar: no scalar dtype allowed")
    assume(dtype is not None)
    device = draw(cfg.devices)
    value = draw(_values(dtype))
    case = draw(st.sampled_from(CASES))
    if case == "requires_grad" and not (dtype.is_floating_point and draw(cfg.requires_grad)):
        case = "leaf"
    if case == "neg_view" and not dtype.is_signed:  # bool, uint8: no negation
        case = "leaf"
    name = str(dtype).removeprefix("torch.")
    dev = "" if device == "cpu" else f", device={device!r}"
    literal = value_literal(value)
    if case == "select":
        index = draw(st.integers(0, 2))
        row = ", ".join(literal if i == index else "0" for i in range(3))
        made = b.let(f"torch.tensor([{row}], dtype=torch.{name}{dev})[{index}]")
    elif case == "neg_view":
        # The negated value first, so that the view holds ``value`` again;
        # where negating overflows (the int minimum) the view holds it anyway.
        base = b.let(f"torch.tensor({literal}, dtype=torch.{name}{dev}).neg()")
        made = b.try_let(f"torch._neg_view({base})")
        if made is None:  # a torch without _neg_view
            case, made = "leaf", base
    else:
        made = b.let(f"torch.tensor({literal}, dtype=torch.{name}{dev})")
        if case == "requires_grad":
            b.stmt(f"{made}.requires_grad_()")
    event(f"scalar: {case}")
    event(f"scalar dtype: {name}{' (item() read)' if name in ITEM_READ else ''}")
    event(f"scalar value: {_value_event(value, dtype)}")
    return made


@kind(
    "scalar",
    "0-dim tensors whose value from_real_tensor reads (int64, int32, int16, int8, float64) and "
    "controls (float32, bool, uint8, float16): 0, 1, -1, dtype limits, -0.0, NaN, inf; leaf, "
    "requiring grad, a selected 0-dim view, a negative-bit view",
    cost_ms=3,
)
def scalar_kind(draw: Any, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    return [draw_scalar(draw, b, cfg)]
