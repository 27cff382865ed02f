"""Snapshots of real tensors and of torch's global state, and how two of them
differ: what the ``purity`` check compares (before vs after a conversion)
and what the ``behaviour`` check requires of the user's tensors after a
program ran on their converted counterparts.

A tensor's reading: shape, strides, offset, dtype, layout, device,
requires_grad, is_leaf, the version counter, the ``.grad`` object and its
version, the ``grad_fn`` object, conj/neg bits, the storage object and its
size, and its bytes (storages up to 1 MiB); for a C++ functional tensor,
the tensor it wraps.  torch's global state: grad mode, inference mode,
forward-AD mode, the dispatch key TLS, the functorch interpreter stack, the
torch-dispatch and torch-function mode stacks, functionalization's
reapply-views flag, the default dtype and device, and
``fake_tensor_propagate_real_tensors``.  Each query is feature-detected;
one torch lacks is left out of both snapshots.
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from .findings import Mismatch
from .strategies.tensor_facts import grad_of, walk_real
from .strategies.torch_errors import safe

if TYPE_CHECKING:
    import torch

MAX_VALUE_BYTES = 1 << 20
# The reading of what a C++ functional tensor wraps.
FUNCTIONAL_VALUE = "torch._from_functional_tensor()"


@dataclasses.dataclass
class Snapshot:
    tensors: list[tuple[str, Any, dict[str, Any]]]  # (path, tensor, reading)
    state: dict[str, Any]


class _Same:
    """Compares by identity (``is``), shown by type."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __repr__(self) -> str:
        return "None" if self.obj is None else f"<{type(self.obj).__name__} at {id(self.obj):#x}>"


class _DeviceContext:
    """The global device context torch.set_default_device() sets (None:
    none): equal when the same object with the same device; shown as its
    device."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.device = getattr(context, "device", None)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _DeviceContext) and other.context is self.context
                and other.device == self.device)

    def __repr__(self) -> str:
        return "cpu (none set)" if self.context is None else str(self.device)


class _Bytes:
    """A storage's bytes: a ``bytes`` object for a CPU storage (one memcpy,
    compared by ``==``), else a uint8 tensor copy on its device."""

    def __init__(self, copy: Any) -> None:
        self.copy = copy

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Bytes):
            return False
        a, b = self.copy, other.copy
        if isinstance(a, bytes) or isinstance(b, bytes):
            return a == b
        import torch

        return a.shape == b.shape and bool(torch.equal(a, b))

    def __repr__(self) -> str:
        n = len(self.copy) if isinstance(self.copy, bytes) else self.copy.numel()
        return f"<{n} storage bytes>"


def _storage_bytes(t: torch.Tensor) -> Any:
    """The bytes of ``t``'s storage (None where they cannot or need not be
    read: a wrapper subclass's storage, meta, dataless, over MAX_VALUE_BYTES)."""
    import torch

    s = t.untyped_storage()
    nbytes = s.nbytes()
    if s.device.type == "meta" or nbytes > MAX_VALUE_BYTES:
        return None
    if not nbytes:
        return _Bytes(b"")
    ptr = s.data_ptr()
    if not ptr:
        return None  # dataless storage
    if s.device.type == "cpu":
        return _Bytes(ctypes.string_at(ptr, nbytes))
    with torch.no_grad():
        view = torch.empty(0, dtype=torch.uint8, device=s.device)
        view.set_(s, 0, (nbytes,), (1,))
        return _Bytes(view.clone())


def _bytes_of_storage(t: torch.Tensor, copies: dict[int, Any] | None) -> Any:
    """``_storage_bytes(t)``, copied once per storage among ``copies`` (the
    tensors of one snapshot: a view and its base share one).  A wrapper
    subclass's storage holds no data: None."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if is_traceable_wrapper_subclass(t):
        return None
    if copies is None:
        return _storage_bytes(t)
    key = t.untyped_storage()._cdata
    if key not in copies:
        copies[key] = _storage_bytes(t)
    return copies[key]


def read_tensor(t: torch.Tensor, copies: dict[int, Any] | None = None) -> dict[str, Any]:
    """The reading of ``t`` the snapshots compare.  Read in one go; where a
    field cannot be read (it raises), field by field, that one as None.
    ``copies``: storage bytes already copied for this snapshot."""
    try:
        return _read_in_one_go(t, copies)
    except Exception:
        return _read_field_by_field(t, copies)


def _read_in_one_go(t: torch.Tensor, copies: dict[int, Any] | None) -> dict[str, Any]:
    import torch

    grad = grad_of(t)
    out: dict[str, Any] = {
        "shape": tuple(t.shape),
        "dtype": t.dtype,
        "layout": t.layout,
        "device": t.device,
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "_version": t._version,
        "grad": _Same(grad),
        "grad._version": None if grad is None else grad._version,
        "grad_fn": _Same(t.grad_fn),
        "is_conj()": t.is_conj(),
        "is_neg()": t.is_neg(),
    }
    if torch._is_functional_tensor(t):
        out[FUNCTIONAL_VALUE] = _Same(torch._from_functional_tensor(t))
    if t.layout == torch.strided and not t.is_nested:
        storage = t.untyped_storage()
        out["stride()"] = tuple(t.stride())
        out["storage_offset()"] = t.storage_offset()
        out["storage"] = storage._cdata
        out["storage nbytes"] = storage.nbytes()
        out["storage bytes"] = safe(lambda: _bytes_of_storage(t, copies))
    return out


def _read_field_by_field(t: torch.Tensor, copies: dict[int, Any] | None) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {
        "shape": safe(lambda: tuple(t.shape)),
        "dtype": t.dtype,
        "layout": t.layout,
        "device": safe(lambda: t.device),
        "requires_grad": t.requires_grad,
        "is_leaf": safe(lambda: t.is_leaf),
        "_version": safe(lambda: t._version),
        "grad": _Same(grad_of(t)),
        "grad._version": safe(lambda: grad_of(t)._version),
        "grad_fn": _Same(safe(lambda: t.grad_fn)),
        "is_conj()": safe(lambda: t.is_conj()),
        "is_neg()": safe(lambda: t.is_neg()),
    }
    if safe(lambda: bool(torch._is_functional_tensor(t)), False):
        out[FUNCTIONAL_VALUE] = _Same(safe(lambda: torch._from_functional_tensor(t)))
    if t.layout == torch.strided and not t.is_nested:
        out["stride()"] = safe(lambda: tuple(t.stride()))
        out["storage_offset()"] = safe(lambda: t.storage_offset())
        out["storage"] = safe(lambda: t.untyped_storage()._cdata)
        out["storage nbytes"] = safe(lambda: t.untyped_storage().nbytes())
        out["storage bytes"] = safe(lambda: _bytes_of_storage(t, copies))
    return out


def _state_queries() -> dict[str, Callable[[], Any]]:
    import torch

    # Each empty stack is read without building Python objects for it.
    def functorch_stack() -> Any:
        if torch._C._functorch.get_interpreter_stack() is None:
            return ()
        from torch._functorch.pyfunctorch import retrieve_all_functorch_interpreters

        return tuple((str(i.key()), i.level()) for i in retrieve_all_functorch_interpreters())

    def dispatch_modes() -> Any:
        if not torch._C._len_torch_dispatch_stack():
            return ()
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

        return tuple(_Same(m) for m in _get_current_dispatch_mode_stack())

    def function_modes() -> Any:
        if not torch._C._len_torch_function_stack():
            return ()
        from torch.overrides import _get_current_function_mode_stack

        return tuple(_Same(m) for m in _get_current_function_mode_stack())

    def propagate_real() -> Any:
        import torch._functorch.config as c

        return c.fake_tensor_propagate_real_tensors

    def meta_utils_tls() -> Any:
        from torch._subclasses import meta_utils

        return getattr(meta_utils.tls, "disable_inference_mode", None)

    def default_device() -> Any:
        # What torch.get_default_device() reads besides the function mode
        # stack (read on its own): the global device context.
        return _DeviceContext(getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None))

    return {
        "grad mode (torch.is_grad_enabled())": torch.is_grad_enabled,
        "inference mode (torch.is_inference_mode_enabled())": torch.is_inference_mode_enabled,
        "forward AD (torch._C._is_fwd_grad_enabled())": lambda: torch._C._is_fwd_grad_enabled(),
        "dispatch TLS included keys": lambda: torch._C._dispatch_tls_local_include_set(),
        "dispatch TLS excluded keys": lambda: torch._C._dispatch_tls_local_exclude_set(),
        "functorch interpreter stack": functorch_stack,
        "torch dispatch mode stack": dispatch_modes,
        "torch function mode stack": function_modes,
        "functionalization reapply_views": lambda: torch._C._functionalization_reapply_views_tls(),
        "default dtype": torch.get_default_dtype,
        "default device (torch.set_default_device())": default_device,
        "fake_tensor_propagate_real_tensors": propagate_real,
        "meta_utils disable_inference_mode": meta_utils_tls,
    }


_QUERIES: dict[str, Callable[[], Any]] = {}


def read_state() -> dict[str, Any]:
    if not _QUERIES:  # built once: the queries themselves are read each time
        _QUERIES.update(_state_queries())
    out = {}
    for key, query in _QUERIES.items():
        try:
            out[key] = query()
        except Exception:  # a query this torch lacks: left out
            pass
    return out


def capture(names: tuple[str, ...], tensors: tuple[torch.Tensor, ...]) -> Snapshot:
    """Snapshot of the real tensors (and what they reach) and global state."""
    copies: dict[int, Any] = {}
    return Snapshot([(p, t, read_tensor(t, copies)) for p, t in walk_real(names, tensors)],
                    read_state())


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def compare(before: Snapshot, after: Snapshot) -> list[Mismatch]:
    found: list[Mismatch] = []
    after_by_id = {id(t): reading for _, t, reading in after.tensors}
    for path, t, reading in before.tensors:
        now = after_by_id.get(id(t))
        if now is None:
            found.append(Mismatch(
                check="purity", path=path, attribute="reachable from the tensors", real=True,
                fake=False, detail="converting detached it from the family"))
            continue
        for key, value in reading.items():
            if key in now and not _equal(value, now[key]):
                found.append(Mismatch(
                    check="purity", path=path, attribute=key, real=value, fake=now[key],
                    detail="the real tensor before vs after conversion"))
    for key, value in before.state.items():
        if key in after.state and not _equal(value, after.state[key]):
            found.append(Mismatch(
                check="purity", path="torch", attribute=key, real=value, fake=after.state[key],
                detail="global state before vs after conversion"))
    return found
