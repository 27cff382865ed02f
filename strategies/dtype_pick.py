"""Drawing a dtype that satisfies a condition, within what the user allowed.

Kinds such as ``conj`` need a complex dtype, ``view_as_complex`` a float one.
They must still respect the ``dtype=`` argument, which reaches them only as
``cfg.dtypes`` (a strategy).  :func:`draw_dtype_where` draws from the allowed
dtypes that satisfy the condition, simplest first, and returns None when the
user's choice rules every such dtype out, so the kind can fall back to a case
that needs no such dtype.
"""

from __future__ import annotations

from typing import Any, Callable

from hypothesis import strategies as st

from .config import GenConfig


def allowed_dtypes(cfg: GenConfig) -> tuple[Any, ...] | None:
    """The dtypes ``cfg.dtypes`` can produce, in its order, when that is
    knowable (a plain ``sampled_from``/``just``, which is what ``dtype=None``,
    a single dtype and a list give); None for an arbitrary user strategy."""
    strategy = cfg.dtypes
    elements = getattr(strategy, "elements", None)
    if elements is None or getattr(strategy, "_transformations", ()):
        return None
    return tuple(elements)


def draw_dtype_where(
    draw: Any, cfg: GenConfig, condition: Callable[[Any], bool], *, tries: int = 4
) -> Any | None:
    """A dtype allowed by ``cfg`` for which ``condition`` holds, or None."""
    known = allowed_dtypes(cfg)
    if known is not None:
        fitting = [d for d in known if condition(d)]
        return draw(st.sampled_from(fitting)) if fitting else None
    for _ in range(tries):  # opaque user strategy: a few plain draws
        dtype = draw(cfg.dtypes)
        if condition(dtype):
            return dtype
    return None


def is_complex(dtype: Any) -> bool:
    return bool(dtype.is_complex)


def complex_capable_real(dtype: Any) -> bool:
    """Real dtypes ``view_as_complex`` accepts (half, float, double)."""
    import torch

    return dtype in (torch.float16, torch.float32, torch.float64)
