"""Tensor subclasses: ``TwoTensor``, nested ``TwoTensor``, views of
subclasses, a subclass with a non-None flatten context (``ScaledTensor``),
subclasses registered by the user with :func:`register_subclass`, nested
jagged tensors, and families of subclass instances whose inner tensors alias.

The subclasses a tensor is wrapped in are drawn from a pool: the built-in
``TwoTensor`` and ``ScaledTensor``, then every registered subclass.  Inner
tensors of one instance share their metadata (size, strides, offset, dtype,
device, requires_grad), as wrapper subclasses like ``TwoTensor`` require;
each has its own storage unless the draw makes them alias.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import string
from typing import Any, Callable

from hypothesis import assume, event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .autograd import COMPUTE_LAYOUTS
from .config import GenConfig, dense_expr, fill_expr
from .dense import LAYOUTS, draw_dense, grad_capable, required_numel
from .kinds import kind
from .recipe import RecipeBuilder
from .views import draw_view_chain

__all__ = ["RegisteredSubclass", "register_subclass", "registered_subclasses", "unregister_subclass"]

Draw = Callable[..., Any]


@dataclasses.dataclass(frozen=True)
class SubclassSpec:
    """How recipes build instances of one wrapper subclass.

    ``template(draw)`` returns source text with ``{cls}`` (the class
    expression) and ``{0}``, ``{1}``, ... (the inner tensors' names).
    """

    name: str
    import_line: str
    class_expr: str
    n_inner: int
    template: Callable[[Draw], str]

    def expr(self, draw: Draw, inner: list[str]) -> str:
        return self.template(draw).format(*inner, cls=self.class_expr)


# -- built-in subclasses --------------------------------------------------------

def _two_tensor_unavailable() -> str | None:
    try:
        importlib.import_module("torch.testing._internal.two_tensor")
    except Exception as e:  # pragma: no cover - depends on the torch build
        return f"cannot import torch.testing._internal.two_tensor: {e}"
    return None


TWO_TENSOR = SubclassSpec(
    "TwoTensor", "from torch.testing._internal.two_tensor import TwoTensor", "TwoTensor", 2,
    lambda draw: "{cls}({0}, {1})",
)


def _scaled_template(draw: Draw) -> str:
    scale = draw(st.sampled_from([1.0, 0.5, -2.0, 1e-3]))
    label = draw(st.sampled_from(["", "q", "scaled tensor"]))
    return "{cls}({0}, " + repr(scale) + ", " + repr(label).replace("{", "{{").replace("}", "}}") + ")"


SCALED_TENSOR = SubclassSpec(
    "ScaledTensor", "from pytest_metafidelity.strategies.example_subclasses import ScaledTensor",
    "ScaledTensor", 1, _scaled_template,
)


def _opaque_attrs_unavailable() -> str | None:
    """Why this torch cannot convert a subclass with an opaque inner
    attribute, or None."""
    from torch._subclasses.meta_utils import MetaTensorDesc

    if "opaque_attrs" not in {f.name for f in dataclasses.fields(MetaTensorDesc)}:
        return "this torch's MetaTensorDesc has no opaque_attrs"
    return None


MODE_TENSOR = SubclassSpec(
    "ModeTensor",
    "from pytest_metafidelity.strategies.example_subclasses import ModeTensor, ScalingMode",
    "ModeTensor", 1,
    lambda draw: "{cls}({0}, ScalingMode." + draw(st.sampled_from(["TENSORWISE", "ROWWISE"])) + ")",
)


# -- user registration ------------------------------------------------------------

_REGISTERED: dict[str, "RegisteredSubclass"] = {}


@dataclasses.dataclass(frozen=True)
class RegisteredSubclass:
    """A subclass added by :func:`register_subclass`.  Use it as a context
    manager (``with register_subclass(...):``) or call :meth:`unregister` to
    take it out of the strategies again."""

    cls: type
    make: str
    name: str
    spec: SubclassSpec

    def unregister(self) -> None:
        if _REGISTERED.get(self.name) is self:
            del _REGISTERED[self.name]

    def __enter__(self) -> "RegisteredSubclass":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unregister()


def _inner_count(make: str) -> int:
    """Number of inner tensors ``make`` takes ({0}..{n-1}); InvalidArgument if
    its placeholders are not exactly ``{cls}`` and ``{0}``..``{n-1}``."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(make) if f is not None]
    except ValueError as e:
        raise InvalidArgument(f"register_subclass: make={make!r} is not a valid template: {e}") from None
    indices = set()
    for field in fields:
        if field == "cls":
            continue
        if not field.isdigit():
            raise InvalidArgument(
                f"register_subclass: make={make!r} has placeholder {{{field}}}; use {{cls}} for the "
                "class and {0}, {1}, ... for the inner tensors (write literal braces as {{ and }})"
            )
        indices.add(int(field))
    if not indices:
        raise InvalidArgument(
            f"register_subclass: make={make!r} uses no inner tensor; write e.g. '{{cls}}({{0}})'"
        )
    if indices != set(range(len(indices))):
        raise InvalidArgument(
            f"register_subclass: make={make!r} must number its inner tensors {{0}}..{{{len(indices) - 1}}} "
            f"without gaps, got {sorted(indices)}"
        )
    return len(indices)


def _import_path(cls: type) -> tuple[str, str]:
    """(import line, class expression) that find ``cls`` again in a fresh
    process; InvalidArgument if there is none."""
    module, qualname = getattr(cls, "__module__", None), getattr(cls, "__qualname__", "")
    if not module or module == "__main__" or "<locals>" in qualname:
        raise InvalidArgument(
            f"register_subclass: cls={cls!r} is not importable (module {module!r}, qualname "
            f"{qualname!r}); define it at module level of an importable module so that "
            "reproducers can import it"
        )
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception as e:
        raise InvalidArgument(
            f"register_subclass: cls={cls!r} cannot be found again as {module}.{qualname}: {e}"
        ) from None
    if found is not cls:
        raise InvalidArgument(
            f"register_subclass: {module}.{qualname} is not cls={cls!r} (was it redefined?)"
        )
    top = qualname.split(".")[0]
    clash = any(
        s.class_expr.split(".")[0] == top and s.import_line != f"from {module} import {top}"
        for s in _pool(include_builtins=True)
    )
    if clash:  # another class of the same name: use the module's full path
        return f"import {module}", f"{module}.{qualname}"
    return f"from {module} import {top}", qualname


def register_subclass(
    cls: type, make: str | None = None, *, name: str | None = None
) -> RegisteredSubclass:
    """Add a traceable wrapper subclass to what the strategies wrap tensors in.

    ``cls``: a ``torch.Tensor`` subclass with ``__tensor_flatten__`` and
    ``__tensor_unflatten__``, defined at module level of an importable module
    (recipes import it to rebuild tensors).

    ``make``: source text of an expression building an instance, with
    ``{cls}`` for the class and ``{0}``, ``{1}``, ... for its inner tensors;
    default ``"{cls}({0})"``.  The inner tensors of one instance have equal
    sizes, strides, storage offset, dtype, device and requires_grad.  For
    example ``register_subclass(TwoTensor, "{cls}({0}, {1})")``.

    ``name``: the label in events and reports (default: the class name).

    Registered subclasses are drawn by the ``user_subclass`` kind and wrap
    tensors in the other subclass kinds.  Returns a handle: call
    ``.unregister()``, use it as a context manager, or call
    :func:`unregister_subclass`.  Raises ``InvalidArgument`` for a class that
    is not a traceable wrapper subclass or not importable, a malformed
    ``make``, or a name already registered.
    """
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass_type

    if not (isinstance(cls, type) and issubclass(cls, torch.Tensor)
            and is_traceable_wrapper_subclass_type(cls)):
        raise InvalidArgument(
            f"register_subclass: cls={cls!r} is not a traceable wrapper subclass: expected a "
            "torch.Tensor subclass defining __tensor_flatten__ and __tensor_unflatten__"
        )
    if make is None:
        make = "{cls}({0})"
    if not isinstance(make, str):
        raise InvalidArgument(
            f"register_subclass: make={make!r} must be source text such as '{{cls}}({{0}})', "
            f"not {type(make).__name__}"
        )
    n_inner = _inner_count(make)
    if name is None:
        name = cls.__qualname__
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"register_subclass: name={name!r} must be a non-empty str")
    if name in _REGISTERED or name in (TWO_TENSOR.name, SCALED_TENSOR.name):
        raise InvalidArgument(
            f"register_subclass: name={name!r} is already registered; unregister_subclass({name!r}) "
            "first or pass another name="
        )
    import_line, class_expr = _import_path(cls)
    inner_names = [f"_inner{i}" for i in range(n_inner)]
    source = make.format(*inner_names, cls=class_expr)
    try:
        code = compile(source, "<register_subclass make>", "eval")
    except SyntaxError as e:
        raise InvalidArgument(
            f"register_subclass: make={make!r} is not a Python expression ({source!r}: {e.msg})"
        ) from None
    # A trial build, so a bad template fails here rather than inside a test.
    namespace: dict[str, Any] = {"torch": torch}
    exec(import_line, namespace)
    for n in inner_names:
        namespace[n] = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    try:
        built = eval(code, namespace)
    except Exception as e:
        raise InvalidArgument(
            f"register_subclass: make={make!r} failed to build a {cls.__qualname__} from float32 "
            f"tensors of shape (2, 3): {type(e).__name__}: {e}"
        ) from None
    if not isinstance(built, cls):
        raise InvalidArgument(
            f"register_subclass: make={make!r} built a {type(built).__name__}, not a {cls.__qualname__}"
        )
    spec = SubclassSpec(name, import_line, class_expr, n_inner, lambda draw, _m=make: _m)
    handle = RegisteredSubclass(cls, make, name, spec)
    _REGISTERED[name] = handle
    return handle


def unregister_subclass(cls_or_name: type | str) -> None:
    """Undo :func:`register_subclass` (by class or by name)."""
    for key, handle in list(_REGISTERED.items()):
        if cls_or_name is handle.cls or cls_or_name == key:
            del _REGISTERED[key]
            return
    raise InvalidArgument(
        f"unregister_subclass: {cls_or_name!r} is not registered; registered: "
        f"{', '.join(_REGISTERED) or 'none'}"
    )


def registered_subclasses() -> dict[str, RegisteredSubclass]:
    """The subclasses registered now, by name."""
    return dict(_REGISTERED)


def _pool(*, include_builtins: bool = True) -> list[SubclassSpec]:
    """Subclasses to wrap tensors in, simplest first."""
    pool = []
    if include_builtins:
        if _two_tensor_unavailable() is None:
            pool.append(TWO_TENSOR)
        pool.append(SCALED_TENSOR)
        if _opaque_attrs_unavailable() is None:
            pool.append(MODE_TENSOR)
    pool.extend(h.spec for h in _REGISTERED.values())
    return pool


# -- building -----------------------------------------------------------------------

def twin(b: RecipeBuilder, name: str) -> str:
    """A new plain tensor with the size, strides, storage offset, storage size,
    dtype, device and requires_grad of tensor ``name``, in its own storage."""
    t = b[name]
    device = str(t.device)
    itemsize = max(t.element_size(), 1)
    needed = required_numel(tuple(t.shape), tuple(t.stride()), t.storage_offset())
    numel = max(needed, t.untyped_storage().nbytes() // itemsize)
    dev = "" if device == "cpu" else f", device={device!r}"
    made = b.let(
        f"torch.empty(0, dtype={t.dtype}{dev}).set_({fill_expr(numel, t.dtype, device)}.untyped_storage(), "
        f"{t.storage_offset()}, {tuple(t.shape)}, {tuple(t.stride())})"
    )
    if t.untyped_storage().nbytes() == 0 and numel:
        b.stmt(f"{made}.untyped_storage().resize_(0)")
    if t.requires_grad:
        b.stmt(f"{made}.requires_grad_()")
    return made


def draw_inner(draw: Draw, b: RecipeBuilder, first: str, n: int, *, allow_alias: bool = True) -> list[str]:
    """``n`` inner tensors like ``first``: ``first`` itself, then twins (or,
    when drawn, ``first`` again, so that the inner tensors alias)."""
    inner = [first]
    for _ in range(n - 1):
        if allow_alias and draw(st.booleans()):
            event("subclass: inner tensors are one tensor")
            inner.append(first)
        else:
            inner.append(twin(b, first))
    return inner


def wrap(draw: Draw, b: RecipeBuilder, spec: SubclassSpec, inner: list[str]) -> str:
    """Bind ``spec``'s constructor applied to ``inner``; rejects the example
    when the subclass refuses these inner tensors."""
    b.need(spec.import_line)
    made = b.try_let(spec.expr(draw, inner))
    if made is None:
        event(f"subclass: {spec.name} refused its inner tensors")
    assume(made is not None)
    event(f"subclass: {spec.name}")
    return made  # type: ignore[return-value]


def draw_wrapped(
    draw: Draw, b: RecipeBuilder, cfg: GenConfig, specs: list[SubclassSpec], *,
    layouts: tuple[str, ...] = LAYOUTS, allow_alias: bool = True, first: str | None = None,
) -> str:
    """Wrap dense tensors in ``specs`` (outermost first): every level's
    instances are built from instances of the next, alike in metadata."""
    leaves_needed = math.prod(s.n_inner for s in specs)
    first = draw_dense(draw, b, cfg, layouts=layouts) if first is None else first
    level = draw_inner(draw, b, first, leaves_needed, allow_alias=allow_alias)
    for spec in reversed(specs):
        level = [wrap(draw, b, spec, level[i:i + spec.n_inner]) for i in range(0, len(level), spec.n_inner)]
    return level[0]


def _view_of(draw: Draw, b: RecipeBuilder, base: str) -> str:
    view = draw_view_chain(draw, b, base)
    if view == base or not b[view]._is_view():
        # Nothing applied, or reshape had to copy: take a plain alias view.
        view = b.let(f"{base}[...]")
    return view


def _autograd_case(draw: Draw, b: RecipeBuilder, s: str, kind_name: str) -> str:
    """Optionally make the wrapper require grad itself, or be a non-leaf."""
    t = b[s]
    case = draw(st.sampled_from(["as_built", "outer_requires_grad", "nonleaf"]))
    if case == "outer_requires_grad" and grad_capable(t.dtype) and not t.requires_grad:
        if b.try_let(f"{s}.requires_grad_()") is not None:
            event(f"{kind_name}: wrapper made to require grad")
    elif case == "nonleaf" and t.requires_grad:
        made = b.try_let(f"{s} * 2")
        if made is not None:
            event(f"{kind_name}: non-leaf wrapper")
            return made
    return s


# -- kinds ---------------------------------------------------------------------------


@kind("two_tensor", "TwoTensor of two dense tensors alike in metadata (or one tensor twice)",
      unavailable=_two_tensor_unavailable, cost_ms=8)
def two_tensor_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    s = draw_wrapped(draw, b, cfg, [TWO_TENSOR], layouts=COMPUTE_LAYOUTS)
    return [_autograd_case(draw, b, s, "two_tensor")]


@kind("two_tensor_nested", "subclass of subclass: TwoTensor of TwoTensors, and mixes with ScaledTensor "
      "and registered subclasses",
      unavailable=_two_tensor_unavailable, cost_ms=9)
def two_tensor_nested_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    pool = _pool()
    outer = draw(st.sampled_from(pool))
    inner = draw(st.sampled_from(pool))
    depth = draw(st.integers(2, 3))
    specs = [outer, inner] + [TWO_TENSOR] * (depth - 2)
    event(f"two_tensor_nested: {' > '.join(s.name for s in specs)}")
    return [draw_wrapped(draw, b, cfg, specs)]


@kind("subclass_view", "views (view-op chains) of wrapper subclass instances",
      cost_ms=21)
def subclass_view_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    pool = _pool()
    specs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=2))
    s = draw_wrapped(draw, b, cfg, specs, layouts=("contiguous", "strided", "channels_last"))
    return [_view_of(draw, b, s)]


@kind("subclass_ctx", "a subclass with a non-None flatten context (ScaledTensor: float scale, str label), "
      "of a dense tensor, a view, or another subclass", cost_ms=10)
def subclass_ctx_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    case = draw(st.sampled_from(["dense", "of_view", "of_subclass", "view_of_it"]))
    event(f"subclass_ctx: {case}")
    if case == "of_subclass":
        inner = draw(st.sampled_from(_pool()))
        return [draw_wrapped(draw, b, cfg, [SCALED_TENSOR, inner])]
    if case == "of_view":
        x = draw_dense(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
        return [wrap(draw, b, SCALED_TENSOR, [_view_of(draw, b, x)])]
    s = draw_wrapped(draw, b, cfg, [SCALED_TENSOR], layouts=COMPUTE_LAYOUTS)
    if case == "view_of_it":
        return [_view_of(draw, b, s)]
    return [_autograd_case(draw, b, s, "subclass_ctx")]


def _user_unavailable() -> str | None:
    if not _REGISTERED:
        return "no subclass is registered; add one with pytest_metafidelity.strategies.register_subclass()"
    return None


@kind("user_subclass", "subclasses registered with register_subclass(): plain, viewed, inside TwoTensor",
      unavailable=_user_unavailable)
def user_subclass_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    users = [h.spec for h in _REGISTERED.values()]
    if not users:
        raise InvalidArgument(
            "kind 'user_subclass': no subclass is registered any more (was it unregistered "
            "while the strategy was in use?)"
        )
    spec = draw(st.sampled_from(users))
    case = draw(st.sampled_from(["plain", "view", "wrapped"]))
    event(f"user_subclass: {case}")
    if case == "wrapped":
        outer = draw(st.sampled_from(_pool()))
        return [draw_wrapped(draw, b, cfg, [outer, spec])]
    s = draw_wrapped(draw, b, cfg, [spec],
                     layouts=COMPUTE_LAYOUTS if case == "plain" else ("contiguous", "strided"))
    if case == "view":
        return [_view_of(draw, b, s)]
    return [_autograd_case(draw, b, s, "user_subclass")]


def _njt_unavailable() -> str | None:
    import torch

    if not hasattr(getattr(torch, "nested", None), "nested_tensor_from_jagged"):
        return "this torch has no torch.nested.nested_tensor_from_jagged"
    return None


@kind("nested_jagged", "nested jagged tensors (NJT): from values+offsets, with lengths, from a list, "
      "transposed, requiring grad",
      unavailable=_njt_unavailable, cost_ms=18)
def nested_jagged_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    # Requiring grad is a choice of its own, drawn first (half the examples,
    # not one case in five, shrinking to False); any construction may.
    requires_grad = draw(st.booleans())
    case = draw(st.sampled_from(["offsets", "lengths", "from_list", "transposed"]))
    event(f"nested_jagged: {case}" + (", requiring grad" if requires_grad else ""))
    dtype = draw(cfg.dtypes.filter(grad_capable) if requires_grad else cfg.dtypes)
    device = draw(cfg.devices)
    dev = "" if device == "cpu" else f", device={device!r}"
    lengths = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    inner = tuple(draw(st.lists(st.integers(1, 3), min_size=1 if case == "transposed" else 0, max_size=2)))
    total = sum(lengths)
    offsets = [0]
    for n in lengths:
        offsets.append(offsets[-1] + n)
    if case == "from_list":
        parts = [fill_expr(max(n, 0) * math.prod(inner), dtype, device) + f".reshape({(n, *inner)})"
                 for n in lengths]
        grad = ", requires_grad=True" if requires_grad else ""
        made = b.try_let(f"torch.nested.nested_tensor([{', '.join(parts)}], layout=torch.jagged{grad})")
        assume(made is not None)
        return [made]  # type: ignore[list-item]
    values_shape = (total, *inner)
    values = b.let(dense_expr(values_shape, dtype, device))
    if requires_grad:
        b.stmt(f"{values}.requires_grad_()")
    off = b.let(f"torch.tensor({offsets}{dev})")
    if case == "lengths":
        # Non-contiguous: each component may stop short of the next offset.
        lens = [draw(st.integers(0, n)) for n in lengths]
        ln = b.let(f"torch.tensor({lens}{dev})")
        made = b.try_let(f"torch.nested.nested_tensor_from_jagged({values}, {off}, {ln})")
    else:
        made = b.try_let(f"torch.nested.nested_tensor_from_jagged({values}, {off})")
    assume(made is not None)
    if case == "transposed":
        # Ragged dimension moves off dim 1.
        t = b.try_let(f"{made}.transpose(1, 2)")
        made = t or made
    return [made]  # type: ignore[list-item]


@kind("subclass_dense_view", "a plain view of a traceable wrapper subclass: the values() of a "
      "nested jagged tensor that is not itself a view (made by an op: clone()), or a slice of "
      "them", unavailable=_njt_unavailable, cost_ms=18)
def subclass_dense_view_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    """MetaConverter replays such a view from its base's fake through the
    view function (a view of a dense base replays as as_strided; a
    nested_tensor_from_jagged NJT is itself a view of its values)."""
    (njt,) = nested_jagged_kind(draw, b, cfg)
    copy = b.try_let(f"{njt}.clone()")  # (torch has no copy kernel for some dtypes)
    assume(copy is not None)
    # (values() of a complex NJT requiring grad: no autograd formula)
    values = b.try_let(f"{copy}.values()", prefix="values")
    assume(values is not None)
    if b[values].dim() and b[values].shape[0] > 1 and draw(st.booleans()):
        event("subclass_dense_view: a slice of the values")
        values = b.let(f"{values}[1:]", prefix="values")
    return [values]


@kind("subclass_family", "subclass instances whose inner tensors alias: shared inner tensor, inner "
      "views of another's inner tensors, a wrapper and its view, a wrapper and its own inner tensor",
      family=True, cost_ms=14)
def subclass_family_kind(draw: Draw, b: RecipeBuilder, cfg: GenConfig) -> list[str]:
    spec = draw(st.sampled_from(_pool()))
    case = draw(st.sampled_from(["shared_inner", "inner_views", "wrapper_and_view", "wrapper_and_inner"]))
    event(f"subclass_family: {case} ({spec.name})")
    first = draw_dense(draw, b, cfg, layouts=("contiguous", "strided", "channels_last"))
    inner = draw_inner(draw, b, first, spec.n_inner)
    s1 = wrap(draw, b, spec, inner)
    if case == "shared_inner":
        # Another instance around the same first inner tensor.
        other = draw_inner(draw, b, first, spec.n_inner)
        return [s1, wrap(draw, b, spec, other)]
    if case == "inner_views":
        # The same view of each inner tensor, wrapped anew: the two instances'
        # inner tensors alias though neither instance is a view of the other.
        v0 = _view_of(draw, b, inner[0])
        t = b[v0]
        size, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
        views = [v0] + [
            v0 if name == inner[0] else b.let(f"{name}.as_strided({size}, {stride}, {offset})")
            for name in inner[1:]
        ]
        return [s1, wrap(draw, b, spec, views)]
    if case == "wrapper_and_view":
        return [s1, _view_of(draw, b, s1)]
    return [s1, inner[0]]
