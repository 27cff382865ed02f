"""Example traceable wrapper subclasses that the strategies wrap tensors in.

They live in an importable module so that a recipe's source (the reproducer)
can import them: ``from pytest_metafidelity.strategies.example_subclasses
import ScaledTensor``.

``ScaledTensor`` exists to exercise the converter's handling of a *non-None*
flatten context: its ``__tensor_flatten__`` returns one inner tensor and a
``(scale, label)`` tuple of plain Python values, which fakeification must hand
back unchanged to ``__tensor_unflatten__``.

``ModeTensor`` exercises an *opaque* inner attribute: its ``__tensor_flatten__``
names, beside its inner tensor, an attribute holding an opaque value (an
``Enum`` member, the scaling granularity of a float8-style tensor), which the
describer keeps as it is (``MetaTensorDesc.opaque_attrs``) and fakeification
passes through to ``__tensor_unflatten__`` among the inner tensors.
"""

from __future__ import annotations

import enum
from typing import Any

import torch
from torch.utils._python_dispatch import return_and_correct_aliasing
from torch.utils._pytree import tree_flatten, tree_map_only, tree_unflatten

__all__ = ["ModeTensor", "ScaledTensor", "ScalingMode"]


def _wrapper_like(cls: Any, data: torch.Tensor, outer_size: Any, outer_stride: Any) -> Any:
    """An instance of the wrapper subclass ``cls`` mirroring ``data``'s sizes
    (or ``outer_size``), strides (or ``outer_stride``), storage offset, dtype,
    device, layout and requires_grad."""
    size = data.size() if outer_size is None else outer_size
    stride = data.stride() if outer_stride is None else outer_stride
    return torch.Tensor._make_wrapper_subclass(
        cls, size, strides=stride, storage_offset=data.storage_offset(), dtype=data.dtype,
        device=data.device, layout=data.layout, requires_grad=data.requires_grad)


class ScaledTensor(torch.Tensor):
    """A wrapper around one inner tensor ``_data`` carrying a Python float
    ``scale`` and a string ``label`` in its flatten context.

    It is a metadata carrier, not a numerics library: every op runs on the
    inner tensor and each tensor result is rewrapped with the context of the
    first ``ScaledTensor`` argument.  The outer tensor mirrors the inner one's
    sizes, strides, storage offset, dtype, device, layout and requires_grad.
    """

    _data: torch.Tensor
    _scale: float
    _label: str

    @staticmethod
    def __new__(
        cls,
        data: torch.Tensor,
        scale: float = 1.0,
        label: str = "",
        outer_size: Any = None,
        outer_stride: Any = None,
    ) -> "ScaledTensor":
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"ScaledTensor wraps a tensor, got {type(data).__name__}")
        if not isinstance(scale, (int, float)) or isinstance(scale, bool):
            raise TypeError(f"ScaledTensor scale must be a Python float, got {scale!r}")
        if not isinstance(label, str):
            raise TypeError(f"ScaledTensor label must be a str, got {label!r}")
        out = _wrapper_like(cls, data, outer_size, outer_stride)
        out._data = data
        out._scale = float(scale)
        out._label = label
        return out

    def __repr__(self) -> str:  # type: ignore[override]
        return f"ScaledTensor({self._data!r}, scale={self._scale!r}, label={self._label!r})"

    def __tensor_flatten__(self) -> tuple[list[str], tuple[float, str]]:
        return ["_data"], (self._scale, self._label)

    @staticmethod
    def __tensor_unflatten__(
        inner_tensors: dict[str, Any], ctx: tuple[float, str], outer_size: Any, outer_stride: Any
    ) -> "ScaledTensor":
        scale, label = ctx
        return ScaledTensor(inner_tensors["_data"], scale, label, outer_size, outer_stride)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        ctx: tuple[float, str] | None = None
        for a in tree_flatten((args, kwargs))[0]:
            if isinstance(a, ScaledTensor):
                ctx = (a._scale, a._label)
                break
        assert ctx is not None, "ScaledTensor.__torch_dispatch__ without a ScaledTensor argument"
        inner_args, inner_kwargs = tree_map_only(ScaledTensor, lambda t: t._data, (args, kwargs))
        out = func(*inner_args, **inner_kwargs)
        flat, spec = tree_flatten(out)
        flat = [ScaledTensor(o, *ctx) if isinstance(o, torch.Tensor) else o for o in flat]
        return return_and_correct_aliasing(func, args, kwargs, tree_unflatten(flat, spec))


class ScalingMode(enum.Enum):
    """The granularity of a float8-style tensor's scales: an opaque value
    (torch registers every ``Enum`` as an opaque value type)."""

    TENSORWISE = "tensorwise"
    ROWWISE = "rowwise"


class ModeTensor(torch.Tensor):
    """A wrapper around one inner tensor ``_data`` whose other flattened
    attribute, ``_mode``, is no tensor: a :class:`ScalingMode`.  Like
    :class:`ScaledTensor`, a metadata carrier: every op runs on the inner
    tensor and each tensor result is rewrapped with the first argument's mode."""

    _data: torch.Tensor
    _mode: ScalingMode

    @staticmethod
    def __new__(cls, data: torch.Tensor, mode: ScalingMode = ScalingMode.TENSORWISE,
                outer_size: Any = None, outer_stride: Any = None) -> "ModeTensor":
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"ModeTensor wraps a tensor, got {type(data).__name__}")
        if not isinstance(mode, ScalingMode):
            raise TypeError(f"ModeTensor mode must be a ScalingMode, got {mode!r}")
        out = _wrapper_like(cls, data, outer_size, outer_stride)
        out._data = data
        out._mode = mode
        return out

    def __repr__(self) -> str:  # type: ignore[override]
        return f"ModeTensor({self._data!r}, {self._mode})"

    def __tensor_flatten__(self) -> tuple[list[str], None]:
        return ["_data", "_mode"], None

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, Any], ctx: None, outer_size: Any,
                             outer_stride: Any) -> "ModeTensor":
        return ModeTensor(inner["_data"], inner["_mode"], outer_size, outer_stride)

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        mode = next((a._mode for a in tree_flatten((args, kwargs))[0]
                     if isinstance(a, ModeTensor)), None)
        assert mode is not None, "ModeTensor.__torch_dispatch__ without a ModeTensor argument"
        inner_args, inner_kwargs = tree_map_only(ModeTensor, lambda t: t._data, (args, kwargs))
        out = func(*inner_args, **inner_kwargs)
        flat, spec = tree_flatten(out)
        flat = [ModeTensor(o, mode) if isinstance(o, torch.Tensor) else o for o in flat]
        return return_and_correct_aliasing(func, args, kwargs, tree_unflatten(flat, spec))
