"""Behaviour-only faults injected into the converter, for ``benchmarks/first_failure.py``.

The faults of ``converter_faults.py`` get one field of a tensor's
description wrong: every static check sees them right after conversion.
These do not: each leaves every reading the static checks take (metadata,
oracle, aliasing partitions, storage, memo, autograd, purity) exactly as it
was, and breaks only what a converted tensor *does* -- a backward, a grad
hook, ``retain_grad``, an in-place op, a later view -- so only the
``behaviour`` check, which runs programs on the converted tensors, can find
them.

Loaded as a pytest plugin (``-p behaviour_faults``, with this folder on
``PYTHONPATH``), it patches ``MetaConverter.__call__`` -- the entry of every
conversion: the ``meta`` converter calls it, and ``FakeTensorMode.from_tensor``
calls it for every fake converter -- in the processes that run the suite's
examples; the environment variable ``METAFIDELITY_FAULT`` names the fault.
The patch leaves the conversion as it was and then *injects* the fault into
the converted tensor and the bases it reaches: a grad-function hook, a
tensor hook, or a per-object replacement of one Python-level method
(``retain_grad``, ``add_``, ``t_``, ...) -- the state the static checks never
read.  Tensors made directly under a ``FakeTensorMode`` (the ``behaviour``
check's control) are not converted, so the control stays correct and every
finding is classified as a conversion bug.

Every injected callable holds its tensor weakly: a fault must not keep a
converted tensor alive (the ``memo`` check sees converted tensors released).

Each :class:`BehaviourFault` documents what it breaks, the kinds and
converters it shows on, and why no static check sees it.  ``python
benchmarks/behaviour_faults.py`` lists them.
"""

from __future__ import annotations

import dataclasses
import os
import weakref
from typing import Any, Callable

FAULT_VARIABLE = "METAFIDELITY_FAULT"


@dataclasses.dataclass(frozen=True)
class Converted:
    """What a fault may look at: the converted tensor and how it was converted."""

    tensor: Any
    symbolic: bool  # converted with a ShapeEnv (sizes are SymInts)
    carries_real: bool  # a fake carrying its real tensor (``.real_tensor``)


@dataclasses.dataclass(frozen=True)
class BehaviourFault:
    """``applies(c)``: whether the fault is injected into the converted
    tensor ``c``; ``inject(c)`` injects it.  ``kinds``: the tensor kinds it
    shows on, first in collection order first; ``converters``: which
    converters (by capability); ``breaks``: what goes wrong; ``unseen``: why
    no static check sees it.  ``witness``: tensors it applies to (recipe
    lines, outputs), a program that shows it, and a converter it shows
    on: every static check passes on them, the ``behaviour`` check fails
    (``witness_outcomes``)."""

    kinds: tuple[str, ...]
    converters: str
    breaks: str
    unseen: str
    applies: Callable[[Converted], bool]
    inject: Callable[[Converted], None]
    witness: tuple[tuple[str, ...], tuple[str, ...], str, str]


# -- helpers ----------------------------------------------------------------------------------


def _replace_method(t: Any, name: str,
                    faulty: Callable[[Callable[..., Any], Any, tuple, dict], Any]) -> None:
    """Replace ``t.<name>`` for this object only: ``faulty(original, self,
    args, kwargs)`` runs instead, ``original`` being the class's method.  The
    replacement holds ``t`` weakly."""
    original = getattr(type(t), name)
    ref = weakref.ref(t)

    def method(*args: Any, **kwargs: Any) -> Any:
        self = ref()
        if self is None:  # pragma: no cover - the tensor owns the method
            raise ReferenceError(f"{name} of a released tensor")
        return faulty(original, self, args, kwargs)

    setattr(t, name, method)


def _base(t: Any) -> Any:
    try:
        return t._base if t._is_view() else None
    except Exception:
        return None


def _is_leaf_requiring_grad(t: Any) -> bool:
    return t is not None and bool(t.requires_grad) and bool(t.is_leaf)


def _view_of_grad_leaf(c: Converted) -> bool:
    t = c.tensor
    return (_base(t) is not None and bool(t.requires_grad) and not t.is_leaf
            and _is_leaf_requiring_grad(_base(t)) and t.grad_fn is not None)


def _fake_mode_off() -> Any:
    """Outside the fake mode a step runs in: where a carried real tensor is
    an ordinary tensor."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


# -- the faults -------------------------------------------------------------------------------


def _drop_grad_at_view(c: Converted) -> None:
    # The view's backward node receives no gradient: nothing reaches the base.
    c.tensor.grad_fn.register_prehook(lambda grads: tuple(None for _ in grads))


def _ignore_retain_grad(c: Converted) -> None:
    _replace_method(c.tensor, "retain_grad", lambda original, self, args, kwargs: None)


def _double_leaf_grad(c: Converted) -> None:
    c.tensor.register_hook(lambda grad: grad * 2)


def _dtype_view(c: Converted) -> bool:
    t, base = c.tensor, _base(c.tensor)
    return base is not None and t.dtype != base.dtype


def _view_in_base_dtype(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    out = original(self, *args, **kwargs)
    base = _base(self)
    if base is None or any(not isinstance(a, (int, tuple, list)) for a in args):
        return out  # a view(dtype): as asked
    import torch

    return torch.Tensor.view(out, base.dtype)  # reinterpreted in the base's dtype


def _views_in_base_dtype(c: Converted) -> None:
    for name in ("detach", "view", "reshape", "unsqueeze", "transpose", "expand"):
        _replace_method(c.tensor, name, _view_in_base_dtype)


def _inference(c: Converted) -> bool:
    return bool(c.tensor.is_inference())


def _in_inference_mode(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    with torch.inference_mode():
        return original(self, *args, **kwargs)


def _inplace_in_inference_mode(c: Converted) -> None:
    for name in ("add_", "mul_", "zero_", "fill_", "copy_"):
        _replace_method(c.tensor, name, _in_inference_mode)


def _view_requires_grad_ignored(c: Converted) -> None:
    _replace_method(c.tensor, "requires_grad_", lambda original, self, args, kwargs: self)


def _transpose_not_done(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    return self


def _inplace_transposes_ignored(c: Converted) -> None:
    for name in ("t_", "transpose_"):
        _replace_method(c.tensor, name, _transpose_not_done)


def _reshape_copying(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    return original(self, *args, **kwargs).clone()


def _reshape_copies(c: Converted) -> None:
    _replace_method(c.tensor, "reshape", _reshape_copying)


def _add_leaving_carried_stale(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    carried = getattr(self, "real_tensor", None)
    if carried is None:
        return original(self, *args, **kwargs)
    with _fake_mode_off():
        saved = carried.clone()
    out = original(self, *args, **kwargs)
    with _fake_mode_off():
        import torch

        with torch.no_grad(), torch.inference_mode(False):
            carried.copy_(saved)
    return out


def _carried_not_updated(c: Converted) -> None:
    for name in ("add_", "mul_"):
        _replace_method(c.tensor, name, _add_leaving_carried_stale)


def _views_tracking_grad_anyway(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    with torch.enable_grad():
        return original(self, *args, **kwargs)


def _no_grad_views_track_grad(c: Converted) -> None:
    for name in ("unsqueeze", "expand", "view", "transpose"):
        _replace_method(c.tensor, name, _views_tracking_grad_anyway)


def _keep_version(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    before = self._version
    out = original(self, *args, **kwargs)
    torch._C._autograd._unsafe_set_version_counter((self,), (before,))
    return out


def _view_inplace_version_lost(c: Converted) -> None:
    for name in ("zero_", "fill_", "add_", "mul_"):
        _replace_method(c.tensor, name, _keep_version)


def _not_coalescing(original: Any, self: Any, args: tuple, kwargs: dict) -> Any:
    import torch

    out = original(self, *args, **kwargs)
    version = out._version
    out._coalesced_(False)  # (which bumps its version: set back)
    torch._C._autograd._unsafe_set_version_counter((out,), (version,))
    return out


def _sparse_coo(c: Converted) -> bool:
    import torch

    return c.tensor.layout == torch.sparse_coo


def _coalesce_not_marked(c: Converted) -> None:
    _replace_method(c.tensor, "coalesce", _not_coalescing)


def _wrapper_subclass(c: Converted) -> bool:
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    return is_traceable_wrapper_subclass(c.tensor) and not c.tensor.is_nested


def _requires_grad(c: Converted) -> bool:
    return bool(c.tensor.requires_grad)


def _is_view(c: Converted) -> bool:
    return _base(c.tensor) is not None


FAULTS: dict[str, BehaviourFault] = {
    "view-backward-stops-at-view": BehaviourFault(
        ("autograd_view", "parameter"), "every converter",
        "a backward through a converted view of a leaf that requires grad stops at the view: "
        "the base gets no .grad",
        "the view's grad_fn, its type and its graph are intact (a pre-hook drops the "
        "gradient); no static check runs a backward through a view of a leaf",
        _view_of_grad_leaf, _drop_grad_at_view,
        (("t1 = torch.zeros(3, 4, requires_grad=True)", "t0 = t1[1:]"), ("t0",),
         "t0.sum().abs().backward()", "fake")),
    "retain-grad-ignored": BehaviourFault(
        ("autograd_view", "parameter"), "every converter",
        "retain_grad() on a converted non-leaf (a view of a leaf requiring grad) does nothing: "
        "after a backward its .grad stays None",
        "retains_grad is False on both sides until a program calls retain_grad()",
        _view_of_grad_leaf, _ignore_retain_grad,
        (("t1 = torch.zeros(3, 4, requires_grad=True)", "t0 = t1[1:]"), ("t0",),
         "t0.retain_grad()\nt0.sum().abs().backward()\np0 = t0.grad", "meta")),
    "leaf-grad-doubled": BehaviourFault(
        ("autograd_leaf", "grad_attached", "parameter"), "carries_real",
        "a converted leaf requiring grad doubles every gradient accumulated into it: the "
        "carried real tensor of its .grad has other values than the real .grad",
        "a tensor hook is not read; .grad values are only compared after a backward, and "
        "only carried real tensors have values",
        lambda c: c.carries_real and _is_leaf_requiring_grad(c.tensor), _double_leaf_grad,
        (("t0 = torch.ones(3, 4, requires_grad=True)",), ("t0",), "t0.sum().abs().backward()",
         "fake-real")),
    "dtype-view-views-in-base-dtype": BehaviourFault(
        ("dtype_view",), "every converter",
        "a view (detach, view, reshape, unsqueeze, transpose, expand) of a converted "
        "dtype-changing view (view_as_real, .real, .imag, view_as_complex) is reinterpreted "
        "in the base's dtype: another dtype and last size, or an error where the real view "
        "has none",
        "the converted view's dtype, sizes and strides are right; only a later view shows it",
        _dtype_view, _views_in_base_dtype,
        (("t1 = torch.ones(3, 4, dtype=torch.complex64)", "t0 = torch.view_as_real(t1)"),
         ("t0",), "p0 = t0.view(-1)", "fake")),
    "inference-inplace-allowed": BehaviourFault(
        ("inference",), "every converter",
        "in-place ops (add_, mul_, zero_, fill_, copy_) on a converted inference tensor run "
        "outside inference mode, where the real tensor's raise",
        "is_inference() and every other reading are right; only an in-place op outside "
        "inference mode shows it",
        _inference, _inplace_in_inference_mode,
        (("with torch.inference_mode():", "    t0 = torch.ones(3, 4)"), ("t0",), "t0.add_(1)",
         "fake")),
    "view-requires-grad-ignored": BehaviourFault(
        ("view", "dtype_view", "view_family", "autograd_view"), "every converter",
        "requires_grad_() on a converted view does nothing: requires_grad_(True) on a leaf "
        "view leaves it not requiring grad, requires_grad_(False) on a non-leaf view does not "
        "raise",
        "requires_grad is right at conversion; only a program changes it",
        _is_view, _view_requires_grad_ignored,
        (("t1 = torch.zeros(3, 4)", "t0 = t1[1:]"), ("t0",), "t0.requires_grad_(True)", "meta")),
    "dynamic-transpose-ignored": BehaviourFault(
        ("dense", "view"), "symbolic",
        "t_() / transpose_() on a converted tensor with symbolic sizes leave its sizes and "
        "strides as they were",
        "sizes and strides are right at conversion; only an in-place transpose shows it",
        lambda c: c.symbolic, _inplace_transposes_ignored,
        (("t0 = torch.zeros(3, 4)",), ("t0",), "t0.t_()", "fake-dynamic")),
    "dynamic-reshape-copies": BehaviourFault(
        ("dense", "view"), "symbolic",
        "reshape() of a converted tensor with symbolic sizes copies where the real one "
        "returns a view (the result is no view and has a storage of its own)",
        "no static check reshapes; the aliasing partitions of the converted tensors are right",
        lambda c: c.symbolic, _reshape_copies,
        (("t0 = torch.zeros(3, 4)",), ("t0",), "p0 = t0.reshape(-1)", "refake")),
    "carried-values-stale": BehaviourFault(
        ("dense", "view"), "carries_real",
        "add_() / mul_() on a converted tensor leave its carried real tensor's values as they "
        "were (the fake's metadata is updated, the carried copy is not)",
        "the carried values are right at conversion; only an in-place op makes them stale",
        lambda c: c.carries_real, _carried_not_updated,
        (("t0 = torch.zeros(3, 4)",), ("t0",), "t0.add_(1)", "fake-real-dynamic")),
    "no-grad-views-track-grad": BehaviourFault(
        ("autograd_leaf", "grad_attached", "parameter", "autograd_view"), "every converter",
        "views (unsqueeze, expand, view, transpose) of a converted tensor requiring grad, taken "
        "under no_grad or inference_mode, still require grad and have a grad_fn",
        "views made by a program are no part of the conversion; every converted tensor is right",
        _requires_grad, _no_grad_views_track_grad,
        (("t0 = torch.zeros(3, 4, requires_grad=True)",), ("t0",),
         "with torch.no_grad():\n    p0 = t0.unsqueeze(0)", "fake")),
    "sparse-coalesce-unmarked": BehaviourFault(
        ("sparse_coo",), "every converter",
        "coalesce() of a converted sparse COO tensor returns a tensor not marked coalesced "
        "(is_coalesced() is False), where the real one is",
        "the converted tensor's coalesced flag, sparse dims, index dtype and nnz are right; "
        "only a program that coalesces it sees the result",
        _sparse_coo, _coalesce_not_marked,
        (("i0 = torch.empty((2, 0), dtype=torch.int64)", "v0 = torch.empty((0,))",
          "t0 = torch.sparse_coo_tensor(i0, v0, (2, 3))"), ("t0",), "p0 = t0.coalesce()",
         "fake")),
    "subclass-inplace-version-lost": BehaviourFault(
        ("two_tensor", "two_tensor_nested", "subclass_ctx", "user_subclass"), "every converter",
        "an in-place op (zero_, fill_, add_, mul_) called on a converted wrapper subclass "
        "(TwoTensor, ScaledTensor, ...) does not bump its version counter",
        "the wrapper's and its inner tensors' version counters are right at conversion; "
        "only an in-place op shows it",
        _wrapper_subclass, _view_inplace_version_lost,
        (("from torch.testing._internal.two_tensor import TwoTensor",
          "t0 = TwoTensor(torch.zeros(3, 4), torch.zeros(3, 4))"), ("t0",), "t0.zero_()",
         "fake")),
    "view-inplace-version-lost": BehaviourFault(
        ("view", "set_alias", "view_family"), "every converter",
        "an in-place op (zero_, fill_, add_, mul_) called on a converted view does not bump the "
        "version counter it shares with its base",
        "the version counters are shared as they should be (the aliasing check's partition "
        "bumps them with torch.autograd.graph.increment_version, not through the view's "
        "methods)",
        _is_view, _view_inplace_version_lost,
        (("t1 = torch.zeros(3, 4)", "t0 = t1[1:]"), ("t0",), "t0.zero_()", "fake")),
}


def install(name: str) -> Callable[[], None]:
    """Patch ``MetaConverter.__call__`` so that the fault ``name`` is
    injected into every converted tensor (and the bases it reaches) it
    applies to; the function that takes the patch off."""
    from torch._subclasses import meta_utils

    if name not in FAULTS:
        raise SystemExit(f"{FAULT_VARIABLE}={name!r}: no such behaviour fault; expected one of "
                         f"{', '.join(FAULTS)}")
    fault = FAULTS[name]
    convert = meta_utils.MetaConverter.__call__
    # id -> weak reference of the tensors injected (tensors compare by value,
    # so no set of them)
    injected: dict[int, Any] = {}

    def faulty_convert(self: Any, t: Any, shape_env: Any = None, **kwargs: Any) -> Any:
        out = convert(self, t, shape_env, **kwargs)
        symbolic = shape_env is not None
        u = out
        while u is not None:
            seen = injected.get(id(u))
            if seen is None or seen() is not u:
                c = Converted(u, symbolic, getattr(u, "real_tensor", None) is not None)
                try:
                    applies = fault.applies(c)
                except Exception:
                    applies = False
                if applies:
                    fault.inject(c)
                    injected[id(u)] = weakref.ref(u)
            u = _base(u)
        return out

    meta_utils.MetaConverter.__call__ = faulty_convert  # type: ignore[method-assign]

    def uninstall() -> None:
        meta_utils.MetaConverter.__call__ = convert  # type: ignore[method-assign]

    return uninstall


def witness_outcomes(name: str) -> tuple[Any, Any]:
    """The fault's witness under the fault: (outcome of every check but
    ``behaviour``, outcome of ``behaviour`` running the witness program)."""
    from pytest_metafidelity import check_faithful
    from pytest_metafidelity.checks import default_checks
    from pytest_metafidelity.strategies import Recipe

    lines, outputs, program, converter = FAULTS[name].witness
    uninstall = install(name)
    try:
        tensors = Recipe(lines, outputs).build()
        static = [c for c in default_checks() if c != "behaviour"]
        return (check_faithful(*tensors, converters=[converter], checks=static).outcomes[0],
                check_faithful(*tensors, converters=[converter], checks=["behaviour"],
                               program=program).outcomes[0])
    finally:
        uninstall()


def pytest_configure(config: Any) -> None:
    from pytest_metafidelity.suite.isolation import is_distributing

    name = os.environ.get(FAULT_VARIABLE)
    # Not in an xdist controller: it converts nothing.
    if name and not is_distributing(config):
        install(name)


def main() -> None:
    """List the faults; with ``--witness``, run each one's witness: what
    the static checks and the behaviour check say."""
    import sys

    for fault_name, f in FAULTS.items():
        print(f"{fault_name}\n  breaks: {f.breaks}\n  kinds: {', '.join(f.kinds)}; "
              f"converters: {f.converters}\n  unseen: {f.unseen}")
        if "--witness" in sys.argv:
            static, behaviour = witness_outcomes(fault_name)
            found = [f"{m.path} {m.attribute}: real {m.real!r} vs {m.fake!r}"
                     for m in behaviour.mismatches][:1]
            print(f"  witness on {f.witness[3]}: static checks {static.status}, behaviour "
                  f"{behaviour.status} ({'; '.join(found)})")


if __name__ == "__main__":
    main()
