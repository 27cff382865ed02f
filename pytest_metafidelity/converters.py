"""The converters under test: each turns real tensors into meta or fake ones.

A converter instance converts one family of tensors (in an order the caller
chooses), so its memo and aliasing bookkeeping are exercised across tensors.
A documented refusal by torch (NotImplemented, UnsupportedFakeTensorException,
Dynamo's "unimplemented") is raised as :class:`Unsupported`.

Each converter's docstring is its documentation (shown in option help and the
README): say exactly what it does.

Converters:

``meta``
    ``MetaConverter`` with its default callback: meta tensors.
``fake``
    ``FakeTensorMode().from_tensor``, static shapes.
``fake-dynamic``
    ``FakeTensorMode`` with a ``ShapeEnv``; every dimension dynamic.
``fake-real`` / ``fake-real-dynamic``
    As ``fake`` / ``fake-dynamic``, with
    ``torch._functorch.config.fake_tensor_propagate_real_tensors`` on, so each
    fake carries a copy of its real tensor (``fake.real_tensor``).
``refake`` / ``refake-fresh``
    A ``fake-dynamic`` fake converted again by a second ``FakeTensorMode``
    sharing the first one's ``ShapeEnv`` / with a fresh ``ShapeEnv``.
``functional``
    A ``fake`` fake wrapped as a ``FunctionalTensor`` under
    ``FunctionalTensorMode`` and converted again by a fresh ``FakeTensorMode``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from .crash_guards import (ConversionCrash, known_crash, refuse_crashing_copy,
                           refuse_crashing_item_read)
from .strategies.tensor_facts import COMPRESSED_LAYOUTS, any_grad, family_of

if TYPE_CHECKING:
    import torch


class _QuietTraceLog:
    """Keep torch's structured-trace DEBUG records (one per symbol created)
    out of the logs that pytest captures (pytest attaches its handler to
    non-propagating loggers too).  With TORCH_TRACE set the user asked for
    those traces, and they are left alone.

    The logger's handlers are detached too: torch's ``trace_structured``
    builds each record (a captured Python stack per symbol: about a third
    of a dynamic conversion) whenever the logger has a handler, before
    logging drops it.  Torch's own lazy handler, installed at import, only
    removes itself when it first emits, which a disabled logger never
    does.  (A class rather than a generator: it wraps every conversion.)"""

    logger = logging.getLogger("torch.__trace")

    def __enter__(self) -> None:
        logger = self.logger
        self.quieted = not (os.environ.get("TORCH_TRACE") or logger.disabled)
        if self.quieted:
            self.handlers = logger.handlers
            logger.disabled = True
            logger.handlers = []

    def __exit__(self, *exc: Any) -> None:
        if self.quieted:
            self.logger.handlers = self.handlers
            self.logger.disabled = False


_quiet_trace_log = _QuietTraceLog


@functools.cache
def _fillable(dtype: torch.dtype) -> bool:
    """Whether torch can fill uninitialized memory of ``dtype``."""
    import torch

    with _FilledUninitializedMemory():
        try:
            torch.empty(1, dtype=dtype)
        except (NotImplementedError, RuntimeError):
            return False
    return True


def fills_uninitialized_memory(t: torch.Tensor) -> bool:
    """Whether torch can fill the uninitialized memory of every tensor a
    conversion of ``t`` touches (its family's dtypes)."""
    return all(_fillable(u.dtype) for u in family_of(t))


class _FilledUninitializedMemory:
    """Fill the memory that torch allocates uninitialized (``torch.empty``,
    ``empty_strided``) with NaN (the largest integer; True) while a
    converter that carries real tensors converts: the carried copy is
    ``empty_strided`` and then ``copy_`` of what MetaConverter copies, so a
    byte it does not copy holds whatever the allocator handed out.  Left
    alone, that is the bytes of a freed tensor, or fresh zeroed pages: a
    carried copy of zeros that was never copied then equals the original
    in some processes and not in others, and an item's outcome depends on
    what ran before it in the worker.  Filled, a byte not copied differs
    every time (unless the original is that same fill value).

    Torch fills only while ``torch.use_deterministic_algorithms`` is on, so
    that is turned on too (``warn_only``: no operator raises for it; the
    conversion runs no non-deterministic operator) unless the user had it on
    already.  Both settings are restored on exit, as they were found.

    Torch has no fill for some dtypes (bit-packed ``float4_e2m1fn_x2``,
    ``bits8``, ...: ``torch.empty`` then raises): a tensor that reaches one
    is converted unfilled (:func:`fills_uninitialized_memory`), as the
    user's program would convert it."""

    def __enter__(self) -> None:
        import torch

        # (torch.utils.deterministic.fill_uninitialized_memory reads and sets these)
        self.saved = (torch.are_deterministic_algorithms_enabled(),
                      torch._C._get_deterministic_fill_uninitialized_memory())
        if not self.saved[0]:
            torch.use_deterministic_algorithms(True, warn_only=True)
        torch._C._set_deterministic_fill_uninitialized_memory(True)

    def __exit__(self, *exc: Any) -> None:
        import torch

        enabled, fill = self.saved
        torch._C._set_deterministic_fill_uninitialized_memory(fill)
        if not enabled:
            torch.use_deterministic_algorithms(False)


class Unsupported(Exception):
    """The converter refused the tensor in a way torch documents."""


@dataclasses.dataclass(frozen=True)
class ConverterSpec:
    name: str
    summary: str
    factory: Callable[[], "Converter"]
    # Returns None when usable with the installed torch, else why not.
    unavailable: Callable[[], str | None] = lambda: None


class Converter:
    """Base class.  Subclasses implement :meth:`_convert`.

    Attributes the checks read:

    ``symbolic``
        True when converted sizes/strides may be SymInts (the checks then
        compare the SymInts' hints, and torch's ``assert_metadata_eq`` runs
        with ``skip_symbolic``).
    ``carries_real``
        True when each converted tensor carries a copy of its real tensor in
        ``.real_tensor`` (``fake_tensor_propagate_real_tensors``).
    ``fake_tensors``
        True when the converted tensors are FakeTensors of a
        ``FakeTensorMode`` (False: meta tensors).
    ``refakes``
        True when the real tensor is converted to a fake first and that fake
        is converted again by a second ``FakeTensorMode``.
    ``functional``
        True when a fake is wrapped as a ``FunctionalTensor`` on the way
        (AOTAutograd's functionalization).

    These capabilities (:data:`CAPABILITIES`) are all the registry of known
    differences knows of a converter: its entries select converters with
    :func:`where`, so a new converter is judged by what it declares here.
    """

    name = "?"
    symbolic = False
    carries_real = False
    fake_tensors = False
    refakes = False
    functional = False

    def convert(self, t: torch.Tensor) -> torch.Tensor:
        try:
            with _quiet_trace_log(), (
                    _FilledUninitializedMemory()
                    if self.carries_real and fills_uninitialized_memory(t)
                    else contextlib.nullcontext()):
                r = self._convert(t)
        except Unsupported:
            raise
        except Exception as e:
            from torch._subclasses.fake_tensor import UnsupportedFakeTensorException

            if isinstance(e, UnsupportedFakeTensorException):
                raise Unsupported(f"UnsupportedFakeTensorException: {e.reason}") from e
            if type(e).__name__ in ("Unsupported", "UncapturedHigherOrderOpError") and type(
                e
            ).__module__.startswith("torch._dynamo"):
                raise Unsupported(f"dynamo unimplemented: {e}") from e
            raise
        if r is NotImplemented:
            raise Unsupported(f"{type(self).__name__} returned NotImplemented")
        return r

    def _convert(self, t: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Release what the converter holds (modes, memo)."""

    def fresh(self) -> "Converter":
        """A new, independent instance configured like this one (the ``memo``
        check converts through one to see converted tensors released)."""
        return type(self)()

    def fake_device(self, real: torch.Tensor) -> torch.device:
        """The device a converted tensor must report for ``real``: fake
        tensors report the real device; meta tensors report ``meta``."""
        return real.device


# -- meta ---------------------------------------------------------------------


class MetaConverterAdapter(Converter):
    """``MetaConverter`` with its default callback: meta tensors.  Their device
    is ``meta``; everything else (shape, strides, aliasing, autograd
    metadata) must match the real tensor."""

    name = "meta"

    def __init__(self) -> None:
        from torch._subclasses.meta_utils import MetaConverter

        self.impl: Any = MetaConverter()

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        return self.impl(t)

    def fake_device(self, real: torch.Tensor) -> torch.device:
        import torch

        return torch.device("meta")


# -- fake ---------------------------------------------------------------------


def _fake_mode(*, dynamic: bool, real: bool = False, shape_env: Any = None) -> Any:
    """A FakeTensorMode: static, or with a ShapeEnv (``shape_env`` or a new
    one); with ``real``, made while ``fake_tensor_propagate_real_tensors`` is
    on (the mode reads the flag when it is created)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    kwargs: dict[str, Any] = {}
    if dynamic:
        if shape_env is None:
            from torch.fx.experimental.symbolic_shapes import ShapeEnv

            shape_env = ShapeEnv()
        kwargs.update(shape_env=shape_env, static_shapes=False)
    if not real:
        return FakeTensorMode(**kwargs)
    import torch._functorch.config as functorch_config

    with functorch_config.patch(fake_tensor_propagate_real_tensors=True):
        mode = FakeTensorMode(**kwargs)
    if not getattr(mode, "propagate_real_tensors", False):
        raise Unsupported("this torch's FakeTensorMode does not propagate real tensors")
    return mode


def _from_tensor(mode: Any, t: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """``mode.from_tensor`` without structured-trace logging where supported."""
    try:
        return mode.from_tensor(t, trace=False, **kwargs)
    except TypeError as e:
        if "trace" not in str(e):
            raise
        return mode.from_tensor(t, **kwargs)


class FakeConverter(Converter):
    """``FakeTensorMode().from_tensor`` with static shapes."""

    name = "fake"
    fake_tensors = True

    def __init__(self) -> None:
        self.mode = _fake_mode(dynamic=False)

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        return self.mode.from_tensor(t)


class DynamicFakeConverter(Converter):
    """``FakeTensorMode`` with a ``ShapeEnv``, handed each tensor as Dynamo
    hands over a graph input marked dynamic: inside a ``TracingContext``,
    with a source and a ``StatefulSymbolicContext`` making every dimension
    dynamic, structured-trace logging on (``from_tensor``'s default), the
    context then recorded in the tracing context's ``tensor_to_context``.
    The tensor is then asked for once more with no source or context, as a
    later stage of the same compilation may ask (note [Tensor Fakification
    and Symbol Caching]): torch must find Dynamo's context and give back the
    same fake, and that answer is the converted tensor.  Sizes, strides and
    offsets are SymInts; the checks compare their hints."""

    name = "fake-dynamic"
    symbolic = True
    fake_tensors = True
    real = False

    def __init__(self) -> None:
        from torch._guards import TracingContext

        self.mode = _fake_mode(dynamic=True, real=self.real)
        self._count = 0
        self._tracing_context = TracingContext(self.mode)

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        refuse_crashing_item_read(t, lambda: self._convert_with_source(t))
        return self._convert_with_source(t)

    def _convert_with_source(self, t: torch.Tensor) -> torch.Tensor:
        from torch._dynamo.source import ConstantSource
        from torch._guards import tracing

        self._count += 1
        source = ConstantSource(f"input{self._count}")
        context = all_dynamic_context(t, source, stateful=True)
        with tracing(self._tracing_context):
            # (held while asked again: torch's memo holds fakes weakly, and
            # Dynamo's graph holds its inputs' fakes)
            dynamo = self.mode.from_tensor(t, source=source, symbolic_context=context)
            self._tracing_context.tensor_to_context[t] = context
            later = self.mode.from_tensor(t)
        del dynamo
        return later


class RealFakeConverter(FakeConverter):
    """Like ``fake``, with ``torch._functorch.config.fake_tensor_propagate_real_tensors``
    on (``copy_data``): each fake carries a copy of its real tensor in
    ``.real_tensor``.  The carried tensor must equal the original: same
    metadata, same values, and the same aliasing among the carried tensors as
    among the originals.  A tensor whose storage is smaller than the tensor
    (``untyped_storage().resize_(0)``) is not converted -- torch segfaults
    copying it -- and the conversion is reported as failed."""

    name = "fake-real"
    carries_real = True

    def __init__(self) -> None:
        self.mode = _fake_mode(dynamic=False, real=True)

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        refuse_crashing_copy(t, lambda: super(RealFakeConverter, self)._convert(t))
        return super()._convert(t)


class RealDynamicFakeConverter(DynamicFakeConverter):
    """Like ``fake-dynamic`` (a ``ShapeEnv``, every dimension dynamic), with
    ``fake_tensor_propagate_real_tensors`` on: each fake carries a copy of
    its real tensor, which must equal the original.  Tensors with a storage
    smaller than the tensor are refused as by ``fake-real``."""

    name = "fake-real-dynamic"
    carries_real = True
    real = True

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        refuse_crashing_copy(t, lambda: super(RealDynamicFakeConverter, self)._convert(t))
        return super()._convert(t)


def _real_unavailable() -> str | None:
    try:
        import torch._functorch.config as functorch_config
    except Exception as e:  # pragma: no cover - depends on torch
        return f"torch._functorch.config: {e}"
    if not hasattr(functorch_config, "fake_tensor_propagate_real_tensors"):
        return "torch._functorch.config has no fake_tensor_propagate_real_tensors"
    return None


# -- refake -------------------------------------------------------------------


class RefakeConverter(Converter):
    """A fake tensor converted again into a second mode: the real tensor is
    first converted as by ``fake-dynamic`` (mode A, a ``ShapeEnv``, every
    dimension dynamic); that fake is then converted by a second
    ``FakeTensorMode`` B sharing A's ``ShapeEnv``, which reuses the fake's
    SymInts (as AOTAutograd does when it re-fakeifies Dynamo's inputs).  The
    result (a fake of B) must be faithful to the original real tensor.  The
    converter keeps A's fakes alive until it is closed, as the tracer that
    made them would."""

    name = "refake"
    symbolic = True
    fake_tensors = True
    refakes = True
    fresh_shape_env = False

    def __init__(self) -> None:
        self.first = DynamicFakeConverter()
        if self.fresh_shape_env:
            self.mode = _fake_mode(dynamic=True)
        else:
            self.mode = _fake_mode(dynamic=True, shape_env=self.first.mode.shape_env)
        self._keep: dict[int, Any] = {}
        self._count = 0

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        from torch._dynamo.source import ConstantSource

        first = self.first._convert(t)
        self._keep[id(first)] = first
        self._count += 1
        source = ConstantSource(f"refake{self._count}")
        return _from_tensor(
            self.mode, first, source=source, symbolic_context=all_dynamic_context(first, source)
        )

    def close(self) -> None:
        self._keep.clear()


class FreshRefakeConverter(RefakeConverter):
    """Like ``refake``, but the second ``FakeTensorMode`` has a fresh
    ``ShapeEnv``: the fake's symbols are transferred from the foreign
    ``ShapeEnv`` (every dimension dynamic again), as when fakes cross from
    one compilation into another."""

    name = "refake-fresh"
    fresh_shape_env = True


# -- functional -----------------------------------------------------------------


class FunctionalConverter(Converter):
    """Functional round trip.  The real tensor is converted by a static
    ``FakeTensorMode`` A (as ``fake``); that fake is wrapped as a
    ``FunctionalTensor`` under this converter's ``FunctionalTensorMode`` with
    ``FunctionalTensor.to_functional`` (as AOTAutograd wraps graph inputs),
    and the wrapper is converted again, with the ``FunctionalTensorMode``
    still active, by a second, fresh static ``FakeTensorMode`` B.  The result
    is a plain fake of B and must be faithful to the original real tensor.

    Views are not wrapped directly (``to_functional`` of a view gives a
    wrapper that is not a view): the view's base is wrapped and the view is
    re-created on the wrapped base with ``as_strided`` (and the dtype view
    ``view(dtype)`` / ``view_as_real`` / ``view_as_complex`` where dtypes
    differ), under ``no_grad`` for leaf views, with the fake view's
    ``requires_grad``, conj/neg bits and creation meta -- so the wrappers
    alias exactly as the fakes do.  A fake's ``.grad`` is wrapped and set as
    the wrapper's ``.grad``.  Wrappers and A's fakes are kept alive until
    the converter is closed.  Not applicable (reported unsupported, with the
    reason) to tensors that are already functional, functorch-wrapped, or
    traceable wrapper subclasses.  A sparse compressed tensor that requires grad is not converted -- wrapping
    it aborts the process -- and the conversion is reported as failed."""

    name = "functional"
    fake_tensors = True
    functional = True

    def __init__(self) -> None:
        from torch._subclasses.functional_tensor import FunctionalTensorMode

        self.first = _fake_mode(dynamic=False)
        self.functional_mode = FunctionalTensorMode()
        self.mode = _fake_mode(dynamic=False)
        self._wrapped: dict[int, tuple[Any, Any]] = {}

    def _convert(self, t: torch.Tensor) -> torch.Tensor:
        if any(_compressed_requiring_grad(u) for u in family_of(t)):
            known_crash(
                "FunctionalTensor.to_functional of a sparse compressed tensor that requires "
                "grad aborts the process (c10::Error 'layout_impl is only implemented for "
                "TensorImpl subclasses' thrown through autograd's InputMetadata)",
                lambda: self._functional_fake(t))
        reason = _not_functionalizable(t)
        if reason is not None:
            raise Unsupported(f"not applicable: {reason}")
        return self._functional_fake(t)

    def _functional_fake(self, t: torch.Tensor) -> torch.Tensor:
        first = self.first.from_tensor(t)
        with self.functional_mode:
            wrapper = self._wrap(first)
            return self.mode.from_tensor(wrapper)

    @contextlib.contextmanager
    def _grad_mode(self, enabled: bool) -> Iterator[None]:
        import torch

        with torch.set_grad_enabled(enabled):
            yield

    def _wrap(self, f: torch.Tensor) -> torch.Tensor:
        import torch
        from torch._subclasses.functional_tensor import FunctionalTensor

        hit = self._wrapped.get(id(f))
        if hit is not None and hit[0] is f:
            return hit[1]
        if f._is_view() and f._base is not None:
            base = self._wrap(f._base)
            if not f.is_leaf and base.requires_grad != f.requires_grad:
                # As MetaConverter: a leaf view that requires grad in between.
                with torch.no_grad():
                    base = base.view(base.shape)
                base.requires_grad_(f.requires_grad)
            with self._grad_mode(not f.is_leaf):
                b = base
                if b.dtype != f.dtype:
                    if b.dtype.is_complex and not f.dtype.is_complex and b.dtype.to_real() == f.dtype:
                        b = torch.view_as_real(b)
                    elif f.dtype.is_complex and f.dtype.to_real() == b.dtype:
                        b = torch.view_as_complex(b)
                    else:
                        b = b.view(f.dtype)
                w = b.as_strided(f.size(), f.stride(), f.storage_offset())
            if f.is_leaf and f.requires_grad != w.requires_grad:
                w.requires_grad_(f.requires_grad)
            get_cm = getattr(torch._C._autograd, "_get_creation_meta", None)
            set_cm = getattr(torch._C._autograd, "_set_creation_meta", None)
            if get_cm is not None and set_cm is not None and w._is_view():
                set_cm(w, get_cm(f))
            torch._C._set_conj(w, f.is_conj())
            torch._C._set_neg(w, f.is_neg())
        else:
            w = FunctionalTensor.to_functional(f)
        grad = any_grad(f)
        if grad is not None:
            w.grad = self._wrap(grad)
        self._wrapped[id(f)] = (f, w)
        return w

    def close(self) -> None:
        self._wrapped.clear()


def _not_functionalizable(t: torch.Tensor) -> str | None:
    """Why the functional round trip does not apply to ``t`` (or its base,
    grad), or None."""
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from torch._subclasses.functional_tensor import FunctionalTensor

    fns = getattr(torch._C, "_functorch", None)
    for u in family_of(t):
        if isinstance(u, FunctionalTensor) or torch._is_functional_tensor(u):
            return "the tensor is already functional (FunctionalTensor.to_functional refuses it)"
        if fns is not None and fns.is_functorch_wrapped_tensor(u):
            return "functorch-wrapped tensors are not wrapped as FunctionalTensors"
        if is_traceable_wrapper_subclass(u):
            return ("tensor subclasses are functionalized inside, by AOTAutograd, not wrapped "
                    "as FunctionalTensors")
    return None


def _compressed_requiring_grad(t: torch.Tensor) -> bool:
    layout = str(t.layout).removeprefix("torch.")
    return layout in COMPRESSED_LAYOUTS and t.requires_grad


def _functional_unavailable() -> str | None:
    try:
        from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on torch
        return f"torch._subclasses.functional_tensor: {e}"
    if not hasattr(FunctionalTensor, "to_functional"):
        return "FunctionalTensor.to_functional is missing"
    return None


def all_dynamic_context(t: Any, source: Any = None, stateful: bool = False) -> Any:
    """A symbolic context making every dimension of ``t`` dynamic, recursing
    into traceable-wrapper-subclass inner tensors and view bases (``source``
    names ``t`` for subclass contexts, which need one).  ``stateful``: a
    ``StatefulSymbolicContext`` with ``source`` as its tensor source (what
    Dynamo makes, and what a ``TracingContext`` must hold) for every tensor,
    not only subclasses."""
    from torch.fx.experimental.symbolic_shapes import (
        DimDynamic,
        StatefulSymbolicContext,
        StatelessSymbolicContext,
        SubclassSymbolicContext,
    )
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if source is None:
        from torch._dynamo.source import ConstantSource

        source = ConstantSource("t")
    ndim = t.dim()
    base = t._base if t._is_view() and t._base is not None else None
    view_base_context = None
    if base is not None:
        from torch._dynamo.source import AttrSource

        view_base_context = all_dynamic_context(base, AttrSource(source, "_base"), stateful)
    common: dict[str, Any] = dict(
        dynamic_sizes=[DimDynamic.DYNAMIC] * ndim,
        constraint_sizes=[None] * ndim,
        view_base_context=view_base_context,
    )
    if is_traceable_wrapper_subclass(t):
        from torch._dynamo.source import AttrSource

        from .strategies.tensor_facts import inner_tensors

        # (opaque attributes, which hold no tensor, get no context)
        inner = {a: all_dynamic_context(x, AttrSource(source, a), stateful)
                 for a, x in inner_tensors(t)}
        try:
            return SubclassSymbolicContext(inner_contexts=inner, tensor_source=source, **common)
        except TypeError:  # torch without tensor_source
            return SubclassSymbolicContext(inner_contexts=inner, **common)
    if stateful:
        return StatefulSymbolicContext(tensor_source=source, **common)
    return StatelessSymbolicContext(**common)


def _spec(cls: type[Converter], unavailable: Callable[[], str | None] = lambda: None) -> ConverterSpec:
    doc = " ".join((cls.__doc__ or "").split())
    return ConverterSpec(cls.name, doc, cls, unavailable)


CONVERTERS: dict[str, ConverterSpec] = {
    spec.name: spec
    for spec in (
        _spec(MetaConverterAdapter),
        _spec(FakeConverter),
        _spec(DynamicFakeConverter),
        _spec(RealFakeConverter, _real_unavailable),
        _spec(RealDynamicFakeConverter, _real_unavailable),
        _spec(RefakeConverter),
        _spec(FreshRefakeConverter),
        _spec(FunctionalConverter, _functional_unavailable),
    )
}


def register_converter(cls: type[Converter],
                       unavailable: Callable[[], str | None] = lambda: None) -> ConverterSpec:
    """Add a converter (a :class:`Converter` subclass with a unique ``name``
    and a docstring saying what it does) to every run: the suite, the
    options and ``check_faithful``.  Reproducers of its failures import the
    module that defines it.  Returns its spec; ``unregister_converter``
    takes it out again."""
    if not (isinstance(cls, type) and issubclass(cls, Converter)) or cls.name in ("", "?"):
        raise ValueError(f"register_converter: {cls!r} must be a Converter subclass with a name")
    if cls.name in CONVERTERS:
        raise ValueError(f"register_converter: a converter named {cls.name!r} exists already")
    spec = CONVERTERS[cls.name] = _spec(cls, unavailable)
    return spec


def unregister_converter(name: str) -> None:
    CONVERTERS.pop(name, None)


# The capability attributes of :class:`Converter`.
CAPABILITIES = ("symbolic", "carries_real", "fake_tensors", "refakes", "functional")


@dataclasses.dataclass(frozen=True)
class Selection:
    """The registered converters whose capabilities have the given values
    (made by :func:`where`).  Read from :data:`CONVERTERS` each time it is
    asked, so a converter registered later belongs to it as soon as its
    class declares those capabilities.  ``name in selection`` tests one
    converter; iterating gives the names."""

    required: tuple[tuple[str, bool], ...]

    def __contains__(self, name: object) -> bool:
        spec = CONVERTERS.get(name) if isinstance(name, str) else None
        return spec is not None and self.selects(spec.factory)

    def selects(self, cls: Any) -> bool:
        return all(bool(getattr(cls, key, False)) == value for key, value in self.required)

    def names(self) -> tuple[str, ...]:
        return tuple(n for n, spec in CONVERTERS.items() if self.selects(spec.factory))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __str__(self) -> str:
        said = ", ".join(f"{key}={value}" for key, value in self.required)
        return f"the converters where {said}" if said else "every converter"


def where(**capabilities: bool) -> Selection:
    """The converters with these capabilities (:data:`CAPABILITIES`), e.g.
    ``where(symbolic=True, carries_real=False)``."""
    for key, value in capabilities.items():
        if key not in CAPABILITIES:
            raise ValueError(f"where: unknown capability {key!r}; known: {', '.join(CAPABILITIES)}")
        if not isinstance(value, bool):
            raise ValueError(f"where: {key}={value!r} must be True or False")
    return Selection(tuple(capabilities.items()))


def available_converters() -> list[str]:
    """The converters usable with the installed torch."""
    return [n for n, s in CONVERTERS.items() if s.unavailable() is None]


def clear_dispatch_cache() -> None:
    """Empty FakeTensorMode's dispatch cache.  The cache is shared by every
    FakeTensorMode of the process, and what a conversion gives can depend on
    what it holds (https://github.com/pytorch/pytorch/issues/159151: a view
    of a zero-element fake tensor aliases its input or not depending on
    earlier cache hits); emptied before each conversion, a conversion's
    result depends on its tensors alone -- as in a reproducer's fresh
    process."""
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
    except Exception:  # pragma: no cover - depends on torch
        return
    clear = getattr(FakeTensorMode, "cache_clear", None)
    if clear is not None:
        clear()


def make_converter(name: str) -> Converter:
    """A new converter named ``name``, with FakeTensorMode's dispatch cache
    emptied (:func:`clear_dispatch_cache`)."""
    clear_dispatch_cache()
    try:
        spec = CONVERTERS[name]
    except KeyError:
        raise ValueError(
            f"unknown converter {name!r}; allowed: {', '.join(CONVERTERS)}"
        ) from None
    reason = spec.unavailable()
    if reason is not None:
        raise Unsupported(f"converter {name!r} is not available with this torch: {reason}")
    return spec.factory()


def convert_all(converter: Converter, tensors: Sequence[torch.Tensor],
                order: Sequence[int]) -> list[torch.Tensor]:
    """Convert ``tensors`` through one converter, visiting them in ``order``
    (None for a tensor ``order`` leaves out)."""
    converted: list[Any] = [None] * len(tensors)
    for i in order:
        converted[i] = converter.convert(tensors[i])
    return converted
