"""Program steps for aten's view and in-place ops, built from their schemas.

:mod:`.aten_vocabulary` reads which of aten's operators are views and which
write in place; this module turns each of them into a program step, with
arguments built from the operator's schema rather than written by hand, so
that a new operator in torch becomes a step without a line here.

A step calls the op as a method of the tensor, as users write it
(``t.exp2_()``, ``t.index_fill_(0, index, 2)``: the arguments built for
one overload select it), or, where the tensor has no such method, the
overload itself (``torch.ops.aten.lift_fresh.default(t)``).  Each required
argument is built from its type and name against the tensor the step acts
on:

* a ``Tensor``: the tensor itself or another live tensor of its shape and
  dtype; an index (``index``, ``indices``) is ``t.new_zeros(..., dtype=
  torch.long)`` and a ``mask`` is ``t.new_zeros(t.shape, dtype=torch.bool)``
  -- made with ``new_zeros`` so that they live where ``t`` lives (on the
  meta device, as fakes under a fake mode);
* a ``Scalar``: a value of the tensor's dtype kind; an ``int`` named like a
  dimension: a dimension of the tensor, else a small count; ``int[]``: the
  tensor's sizes, or its dimensions reversed where it names dimensions;
  ``bool``, ``float``, ``str`` (``reduce``): a value torch accepts;
* a ``Generator`` (optional, so otherwise left out): a fresh one seeded 0
  -- the real tensors and the values a converter carries then draw the same
  numbers, and torch's global generator is left as it was.

Arguments with defaults are left out.  An overload that needs what cannot be
built (a ``Storage``, a ``Device``) is not drawn; an op none of whose
overloads can be built, or that :data:`NOT_DRAWN` keeps out, is listed with
its reason (``benchmarks/program_vocabulary.py`` prints them).  A step still
may raise (a dimension that does not fit the op, a dtype it refuses): it
must then raise on the converted tensors too.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
from typing import Any, Protocol, Sequence

from .aten_vocabulary import AtenOp, vocabulary
from .tensor_facts import reaches_past_storage

# Ops the programs never draw, with why.  Internal ops that trust their
# arguments (no bounds or shape checks) could read or write outside a
# tensor's storage and crash the process rather than raise.
_TRUSTS_ITS_ARGUMENTS = ("an internal op that trusts its arguments (no bounds checks): wrong "
                         "ones crash the process instead of raising")
NOT_DRAWN: dict[str, str] = {
    **dict.fromkeys(("_sobol_engine_ff_", "_sobol_engine_initialize_state_",
                     "_sobol_engine_scramble_", "_index_put_impl_", "_nested_view_from_buffer",
                     "_amp_update_scale_"), _TRUSTS_ITS_ARGUMENTS),
    "_test_autograd_multiple_dispatch_view": "a test op of torch's own suite",
    "_add_relu_": ("a fused kernel internal to TorchScript: its CPU kernel fails an internal "
                   "assertion on dtypes its meta kernel accepts"),
    "lift_fresh": ("FakeTensorMode's entry point for constants (it lifts a real tensor into the "
                   "mode, making a new fake), not an op programs run on a tensor of the mode"),
    "pin_memory": "needs an accelerator (pinned host memory)",
}

# Argument names of an int that is a dimension of the tensor.
_DIM_NAMES = frozenset({"dim", "dim0", "dim1", "dim2", "source", "destination", "axis",
                        "axis0", "axis1", "start_dim", "end_dim", "dimension"})
# Argument names of an int[] that lists dimensions.
_DIMS_NAMES = frozenset({"dims", "dim", "perm", "source", "destination"})
_INDEX_NAMES = frozenset({"index", "indices"})
# Tensors whose values set the shape of the result (tensor_split's
# tensor_indices_or_sections): a fake has no values to read, so the overload
# is data-dependent on every fake by design; the op's other overloads stay.
_SHAPE_FROM_VALUES = frozenset({"tensor_indices_or_sections"})
# The dtypes whose tensors these steps act on.  A kernel reached with one of
# the others (bits, uint1..7, float8, quantized) may read it through the
# wrong C++ type -- ``tensor_split`` with a uint7 tensor of indices crashes
# the process -- so they keep to the steps written by hand.
_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128", "uint8",
           "int8", "int16", "int32", "int64", "bool")
_GENERATOR_TYPES = ("Optional[Generator]", "Generator")


class Choices(Protocol):
    """Where a step's choices come from (programs.Choices)."""

    def integer(self, lo: int, hi: int) -> int: ...

    def boolean(self) -> bool: ...

    def pick(self, items: Sequence[Any]) -> Any: ...


class Unbuildable(Exception):
    """An argument the steps cannot build (its type, by name)."""


@dataclasses.dataclass(frozen=True)
class AtenStep:
    """One aten op as a program step: its overloads whose arguments can be
    built, simplest first."""

    op: AtenOp
    schemas: tuple[Any, ...]  # torch._C.FunctionSchema

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def binds(self) -> bool:
        """A view binds its result to a new name; an in-place op is a statement."""
        return self.op.group == "view"

    @property
    def method(self) -> bool:
        """Whether the step calls it as a method of the tensor (as users
        do; the method picks the overload its arguments fit), rather than as
        ``torch.ops.aten.<name>.<overload>``."""
        import torch

        return hasattr(torch.Tensor, self.name)

    def applies(self, t: Any) -> bool:
        # Not on a tensor of a dtype few kernels know (_DTYPES).  Every one
        # of these may read or write the elements (a view op such as
        # contiguous() or to() copies): never on a tensor reaching past its
        # storage, nor on a conj or neg view of a storage of 0 bytes (stock
        # torch crashes copying one).
        if str(t.dtype).removeprefix("torch.") not in _DTYPES or reaches_past_storage(t):
            return False
        if (t.is_conj() or t.is_neg()) and t.untyped_storage().nbytes() == 0:
            return False
        return True

    def make(self, ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
        schema = ch.pick(self.schemas)
        args: list[str] = [n]
        kwargs: list[str] = []
        for argument in schema.arguments[1:]:
            kind = str(argument.type)
            if kind in _GENERATOR_TYPES:
                kwargs.append(f"{argument.name}=torch.Generator().manual_seed(0)")
            elif argument.name == "min" and argument.has_default_value():
                # (clamp_ and clip_ refuse to run with neither bound)
                kwargs.append(f"min={_value(ch, self.name, argument, n, t, live)}")
            elif argument.has_default_value():
                continue
            elif argument.kwarg_only:
                kwargs.append(f"{argument.name}={_value(ch, self.name, argument, n, t, live)}")
            else:
                args.append(_value(ch, self.name, argument, n, t, live))
        arguments = ", ".join(args[1:] + kwargs)
        if self.method:
            call = f"{n}.{self.name}({arguments})"
        else:
            overload = schema.overload_name or "default"
            call = f"torch.ops.aten.{self.name}.{overload}({', '.join(args + kwargs)})"
        if self.binds and (str(schema.returns[0].type).startswith("List[")
                           or len(schema.returns) > 1):
            # views returned as a list, or with other results (_unpack_dual's
            # primal and tangent): the first
            return call + "[0]"
        return call


def _value(ch: Choices, op: str, argument: Any, n: str, t: Any, live: dict[str, Any]) -> str:
    """Source text of a value for a required ``argument`` of ``op`` on ``t``."""
    kind, name = str(argument.type), argument.name
    if kind == "Optional[Tensor]" and name == "min":
        kind = "Tensor"  # clip_.Tensor's bound: a tensor, not None
    dims = max(t.dim(), 1)
    if kind == "Tensor":
        if name in _SHAPE_FROM_VALUES:
            raise Unbuildable(f"Tensor {name} (values that set the output's shape)")
        if name in _INDEX_NAMES:
            # scatter_*'s index has the tensor's dimensions; the others' one
            shape = (1,) * dims if op.startswith("scatter") else (1,)
            return f"{n}.new_zeros({shape}, dtype=torch.long)"
        if name == "mask":
            return f"{n}.new_zeros({tuple(t.shape)}, dtype=torch.bool)"
        # Itself (which some ops refuse: its elements overlap the written
        # ones), a copy of it, or another live tensor of its shape and dtype.
        others = [m for m, u in live.items() if m != n and u.dtype == t.dtype
                  and tuple(u.shape) == tuple(t.shape) and not reaches_past_storage(u)]
        return ch.pick([n, f"{n}.clone()", *others])
    if kind in ("List[Tensor]", "List[Optional[Tensor]]") and name in _INDEX_NAMES:
        return f"[{n}.new_zeros((1,), dtype=torch.long)]"
    if kind in ("number", "Optional[number]"):
        if t.dtype == _torch().bool:
            return ch.pick(("True", "False"))
        if t.dtype.is_floating_point or t.dtype.is_complex:
            return ch.pick(("2", "0.5", "-1"))
        return ch.pick(("2", "1", "-1"))
    if kind in ("int", "SymInt"):
        if name in _DIM_NAMES:
            return str(ch.integer(-dims, dims - 1))
        if name == "p":  # mvlgamma_'s dimension, at least 1
            return str(ch.integer(1, 3))
        return str(ch.integer(0, 2))
    if kind in ("List[int]", "List[SymInt]"):
        if name == "stride":
            return str(list(t.stride()))
        if name in _DIMS_NAMES:
            order = list(range(t.dim()))
            return str(order[::-1] if ch.boolean() else order)
        if name == "split_sizes":  # of dimension 0 (the default dim): all, or 1 and the rest
            first = t.shape[0] if t.dim() else 0
            return str([first] if first < 2 or not ch.boolean() else [1, first - 1])
        if name == "shape":  # reshape's: the same, or flat
            return str(list(t.shape) if ch.boolean() else [-1])
        # sizes (view, expand, resize_, ...): the same, or one more leading 1
        return str(list(t.shape) if ch.boolean() else [1, *t.shape])
    if kind == "float":
        return ch.pick(("0.5", "2.0"))
    if kind == "bool":
        if name == "train":
            # Dropout in training draws from torch's global generator: other
            # numbers on each side, and the global state changed.
            return "False"
        return str(ch.boolean())
    if kind in ("str", "Optional[str]") and name == "reduce":
        return ch.pick(("'sum'", "'add'", "'amax'"))
    if kind == "ScalarType":
        return f"{n}.dtype"
    if kind.startswith("Optional["):
        return "None"
    raise Unbuildable(f"{kind} {name}")


def _torch() -> Any:
    import torch

    return torch


def _schemas() -> dict[str, Any]:
    import torch

    return {(s.name + (f".{s.overload_name}" if s.overload_name else "")): s
            for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}


def _buildable(schema: Any) -> str | None:
    """Why the programs cannot build ``schema``'s required arguments, or None."""
    import torch

    class _Probe:
        def integer(self, lo: int, hi: int) -> int:
            return lo

        def boolean(self) -> bool:
            return False

        def pick(self, items: Sequence[Any]) -> Any:
            return items[0]

    t = torch.zeros(2, 2)
    for argument in schema.arguments[1:]:
        if argument.has_default_value() or str(argument.type) in _GENERATOR_TYPES:
            continue
        try:
            _value(_Probe(), getattr(schema, "name"), argument, "t", t, {})
        except Unbuildable as e:
            return f"needs a {e}, which programs do not build"
    return None


@functools.cache
def aten_steps() -> tuple[tuple[AtenStep, ...], dict[str, str]]:
    """(every op of the vocabulary the programs can draw as a step, simplest
    overload first; every applicable op they cannot, with why)."""
    schemas = _schemas()
    steps: list[AtenStep] = []
    not_drawn: dict[str, str] = {}
    for op in vocabulary():
        if not op.applies:
            continue
        if op.name in NOT_DRAWN:
            not_drawn[op.name] = NOT_DRAWN[op.name]
            continue
        usable, reasons = [], []
        for qualified in op.overloads:
            schema = schemas.get(qualified)
            if schema is None or keyword.iskeyword(schema.overload_name):
                continue  # (an overload named ``from`` cannot be spelt as an attribute)
            reason = _buildable(schema)
            if reason is None:
                usable.append(schema)
            else:
                reasons.append(reason)
        if usable:
            usable.sort(key=lambda s: (s.overload_name not in ("", "default"), len(s.arguments),
                                       s.overload_name))
            steps.append(AtenStep(op, tuple(usable)))
        else:
            not_drawn[op.name] = reasons[0] if reasons else "no overload of it is a dispatcher operator"
    return tuple(steps), not_drawn
