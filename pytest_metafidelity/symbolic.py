"""Reading sizes that may be symbolic (SymInt, SymFloat, SymBool) without
adding guards: whether a value is symbolic, its hint (the example value its
ShapeEnv recorded), and equality where a hint is unknown.  The checks, the
known differences and the experiments read converted tensors' sizes through
these."""

from __future__ import annotations

from typing import Any, Iterable

from .strategies.torch_errors import safe

__all__ = ["UNKNOWN", "has_symbolic", "hint", "hints", "is_symbolic", "same"]

# Returned by :func:`hint` for a SymInt whose value the ShapeEnv does not know
# (unbacked): comparisons against it are skipped.
UNKNOWN = type("UnknownHint", (), {"__repr__": lambda self: "<no hint>"})()


_SYMBOLIC_TYPES: tuple[type, ...] = ()


def is_symbolic(x: Any) -> bool:
    global _SYMBOLIC_TYPES
    if type(x) is int:  # the common case, answered without torch
        return False
    if not _SYMBOLIC_TYPES:
        import torch

        _SYMBOLIC_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)
    return isinstance(x, _SYMBOLIC_TYPES)


def hint(x: Any) -> Any:
    """The concrete value of an int or SymInt (or a float or SymFloat),
    without adding guards: a symbol's hint is the example value its
    ShapeEnv recorded."""
    if not is_symbolic(x):
        return x
    node = x.node
    h = getattr(node, "hint", None)
    if h is not None:
        return h
    try:
        number = float if safe(lambda: node.is_float(), False) else int
        expr = node.expr
        if getattr(expr, "is_number", False):
            return number(expr)
        import warnings

        with warnings.catch_warnings():
            # (torch 2.13 deprecates size_hint; its replacements guard or
            # guess, which a reading must not)
            warnings.simplefilter("ignore", FutureWarning)
            value = node.shape_env.size_hint(expr, allow_none=True)
        return UNKNOWN if value is None else number(value)
    except Exception:
        return UNKNOWN


def hints(xs: Iterable[Any]) -> tuple[Any, ...]:
    xs = tuple(xs)
    if all(type(x) is int for x in xs):  # no SymInt: nothing to look up
        return xs
    return tuple(hint(x) for x in xs)


def has_symbolic(t: Any) -> bool:
    try:
        if any(is_symbolic(s) for s in t.shape):
            return True
        import torch

        if t.layout == torch.strided:
            return any(is_symbolic(s) for s in t.stride()) or is_symbolic(t.storage_offset())
    except Exception:
        return False
    return False


def same(a: Any, b: Any) -> bool:
    """Equality where an unknown hint on either side matches anything."""
    if a is UNKNOWN or b is UNKNOWN:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
