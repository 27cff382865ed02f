"""Validated generation settings shared by every kind generator.

The public strategies take arguments in the style of
``hypothesis.extra.numpy.arrays`` (a value or a strategy everywhere); this
module checks them once, with an ``InvalidArgument`` that names the argument
and what is allowed, and turns them into a :class:`GenConfig`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .torch_errors import printable
from .torch_notices import quiet_torch_notices

# Simplest first: sampled_from shrinks toward index 0.
_DTYPE_ORDER = (
    "float32", "float64", "int64", "int32", "bool", "float16", "bfloat16",
    "int16", "int8", "uint8", "uint16", "uint32", "uint64",
    "complex64", "complex128", "complex32",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
    "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7",
    "int1", "int2", "int3", "int4", "int5", "int6", "int7",
)


@functools.cache
def supported_dtypes() -> tuple[Any, ...]:
    """Every dtype the installed torch can allocate, fill and fakeify on the
    CPU, simplest first.  Feature-detected: names the torch at hand lacks, or
    that it cannot build (quantized dtypes), are left out."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    found = []
    for name in _DTYPE_ORDER:
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            continue
        try:
            with quiet_torch_notices():  # our probe, not the user's code
                t = torch.zeros(4, dtype=dtype)
                FakeTensorMode().from_tensor(t[1:])
        except Exception:
            continue
        found.append(dtype)
    return tuple(found)


@functools.cache
def printable_dtypes() -> tuple[Any, ...]:
    """The supported dtypes whose tensors torch can print: the default for
    strategies that hand tensors to the user's test, which Hypothesis prints
    when it fails.  Shell dtypes (bits8, uint3, float4_e2m1fn_x2, ...) stay
    available by asking for them with ``dtype=``."""
    import torch

    found = []
    for dtype in supported_dtypes():
        try:
            # Scalars and empty tensors take other paths through torch's
            # printer (float4_e2m1fn_x2 prints at shape (2,), not at () or
            # (0,)); HypoFuzz prints every example, not only failing ones.
            with quiet_torch_notices():
                if not all(printable(torch.zeros(shape, dtype=dtype))
                           for shape in ((), (0,), (2,), (2, 3))):
                    continue
        except Exception:  # torch.zeros itself: a dtype with no factory
            continue
        found.append(dtype)
    return tuple(found)


def _convertible(dtype: Any) -> bool:
    import torch

    try:
        torch.zeros(1, dtype=torch.float64).to(dtype)
        return True
    except Exception:  # shell dtypes (uint3, bits8, ...) only allocate
        return False


def fill_expr(numel: int, dtype: Any, device: str) -> str:
    """Source for a new 1-D tensor of ``numel`` deterministic values."""
    return dense_expr((numel,), dtype, device)


def dense_expr(shape: tuple[int, ...], dtype: Any, device: str, memory_format: str | None = None) -> str:
    """Source for a new (non-view) tensor of ``shape`` with deterministic,
    non-trivial values, optionally in ``memory_format`` (e.g. "channels_last")."""
    import math

    import torch

    dev = "" if device == "cpu" else f", device={device!r}"
    numel = math.prod(shape)
    fmt = f"memory_format=torch.{memory_format}" if memory_format else ""
    arange = f"torch.arange({numel}, dtype=torch.float64{dev})"
    if len(shape) != 1:
        arange += f".reshape({shape})"
    if not _convertible(dtype):
        return f"torch.empty({shape}, dtype={dtype}{dev}{', ' + fmt if fmt else ''})"
    if dtype is torch.bool:
        if fmt:
            arange += f".to({fmt})"
        return f"{arange}.remainder(3).eq(1)"
    return f"{arange}.remainder(7).to({dtype}{', ' + fmt if fmt else ''})"


def visible_devices() -> tuple[str, ...]:
    """cpu, meta and every visible GPU.  Never initialises CUDA, so that
    processes forked afterwards (HypoFuzz's workers) can use it: only
    ``torch.cuda.device_count()``, which asks NVML where it can, and not
    ``torch.cuda.is_available()``, which calls ``cuInit``."""
    import torch

    devices = ["cpu", "meta"]
    try:
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    except Exception:
        pass
    return tuple(devices)


def missing_gpu_reason(device: str) -> str:
    """Why ``device`` (``cuda:N``) is not among :func:`visible_devices`."""
    import torch

    if not torch.backends.cuda.is_built():
        return f"{device} skipped: this torch ({torch.__version__}) is a CPU-only build"
    count = torch.cuda.device_count()
    if count == 0:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        where = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
        return f"{device} skipped: no GPU is visible{where}"
    return f"{device} skipped: only {count} GPU(s) are visible (cuda:0 to cuda:{count - 1})"


@dataclasses.dataclass(frozen=True)
class GenConfig:
    """What every kind generator reads.  Strategies, never bare values."""

    dtypes: st.SearchStrategy[Any]
    shapes: st.SearchStrategy[tuple[int, ...]]
    devices: st.SearchStrategy[str]
    requires_grad: st.SearchStrategy[bool]
    max_storage_bytes: int
    device_names: tuple[str, ...]
    # Storages resized to zero bytes under a non-empty tensor: torch segfaults
    # on reading their values, and Hypothesis (or pytest's assertion
    # rewriting) reads them to print a failing example.  Only the suite and
    # recipes(), which print recipes instead of tensors, generate them.
    zero_byte_storages: bool = True


def _as_strategy(value: Any, name: str, check: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, st.SearchStrategy):
        return value.map(lambda v: check(v, name))
    return st.just(check(value, name))


def _check_dtype(value: Any, name: str) -> Any:
    import torch

    if isinstance(value, str):
        value = getattr(torch, value, value)
    if value not in supported_dtypes():
        raise InvalidArgument(
            f"{name}={value!r} is not a dtype this torch can generate; allowed: "
            + ", ".join(str(d).removeprefix("torch.") for d in supported_dtypes())
        )
    return value


def _check_shape(value: Any, name: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value
    ):
        raise InvalidArgument(f"{name}={value!r} must be an int >= 0 or a tuple of such ints")
    return tuple(value)


def _check_int(value: Any, name: str, low: int, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (
        high is not None and value > high
    ):
        allowed = f"an int in [{low}, {high}]" if high is not None else f"an int >= {low}"
        raise InvalidArgument(f"{name}={value!r} must be {allowed}")
    return value


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} must be True, False, None or a strategy of bools")
    return value


def make_config(
    *,
    dtype: Any = None,
    shape: Any = None,
    min_dims: int = 0,
    max_dims: int | None = None,
    min_side: int = 0,
    max_side: int | None = None,
    devices: Any = None,
    requires_grad: Any = None,
    max_storage_bytes: int = 1 << 16,
    printable: bool = False,
) -> GenConfig:
    """Validate the public arguments and build a :class:`GenConfig`.

    ``printable``: the tensors go to the user's test, which prints them when
    it fails; leave out, unless asked for, what torch cannot print (shell
    dtypes) or crashes printing (zero-byte storages)."""
    if dtype is None:
        dtypes = st.sampled_from(printable_dtypes() if printable else supported_dtypes())
    elif isinstance(dtype, (list, tuple)):
        if not dtype:
            raise InvalidArgument("dtype=[] is empty; give at least one dtype or None for all")
        dtypes = st.sampled_from([_check_dtype(d, "dtype") for d in dtype])
    else:
        dtypes = _as_strategy(dtype, "dtype", _check_dtype)

    _check_int(min_dims, "min_dims", 0, 8)
    # Default 5 so that channels_last (4-D) and channels_last_3d (5-D) occur.
    max_dims = max(min_dims, 5) if max_dims is None else _check_int(max_dims, "max_dims", 0, 8)
    if max_dims < min_dims:
        raise InvalidArgument(f"max_dims={max_dims} must be >= min_dims={min_dims}")
    _check_int(min_side, "min_side", 0)
    max_side = max(min_side, 4) if max_side is None else _check_int(max_side, "max_side", 0)
    if max_side < min_side:
        raise InvalidArgument(f"max_side={max_side} must be >= min_side={min_side}")
    if shape is None:
        shapes = st.lists(
            st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims
        ).map(tuple)
    else:
        shapes = _as_strategy(shape, "shape", _check_shape)

    known = visible_devices()

    def check_device(value: Any, name: str) -> str:
        value = str(value)
        if value == "cuda":
            value = "cuda:0"
        if value not in known:
            raise InvalidArgument(
                f"{name}={value!r} is not a device here; allowed: {', '.join(known)}"
            )
        return value

    if devices is None:
        device_names: tuple[str, ...] = ("cpu",)
    elif isinstance(devices, (list, tuple)):
        if not devices:
            raise InvalidArgument("devices=[] is empty; give at least one device or None for cpu")
        device_names = tuple(check_device(d, "devices") for d in devices)
    elif isinstance(devices, st.SearchStrategy):
        device_names = known
    else:
        device_names = (check_device(devices, "devices"),)
    device_strategy = (
        devices.map(lambda v: check_device(v, "devices"))
        if isinstance(devices, st.SearchStrategy)
        else st.sampled_from(device_names)
    )

    if requires_grad is None:
        grads = st.booleans()
    else:
        grads = _as_strategy(requires_grad, "requires_grad", _check_bool)

    _check_int(max_storage_bytes, "max_storage_bytes", 0)
    return GenConfig(dtypes, shapes, device_strategy, grads, max_storage_bytes, device_names,
                     zero_byte_storages=not printable)
