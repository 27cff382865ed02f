"""Programs: short sequences of steps run on a family of tensors.

A program is what ``torch.compile`` does to its inputs after fakeifying
them: views, in-place ops and autograd, on the tensors under test and on the
results of earlier steps (the *live* tensors).  Each :class:`Step` is one
Python statement (optionally inside ``torch.no_grad()``,
``torch.inference_mode()`` or ``torch.enable_grad()``), so a program is
runnable source, like a recipe: the ``behaviour`` check runs exactly that
source on the real tensors and on the converted ones, and its reproducer
prints it.

Steps are drawn against the real tensors, executed as they are drawn on a
scratch copy built from the recipe, so that each step's arguments fit the
tensor it acts on (dims in range, slices within sizes, ``as_strided``
within the storage): programs mostly run rather than mostly raise.  A step
may still raise (an in-place op on a leaf requiring grad, on a view made in
no_grad mode, ``t()`` of a 3-d tensor); it stays in the program: it must
then raise on the converted tensors too.  Never drawn, as eager would
crash the process rather than raise: ops that read or write the elements
of a tensor reaching past the end of its storage
(``untyped_storage().resize_(0)``), a backward where any tensor of the
family does, an in-place op on a tensor holding the indices of a sparse or
nested jagged tensor (:func:`index_storages`), ``resize_`` of a zero
tensor or ``set_`` onto its storage (it holds no data), and ``resize_`` of a
tensor in shared memory.  A ``resize_`` that grows the storage zeroes the
tensor (``resize_(n).zero_()``), and grows only a storage that reaches the
tensor's offset, so no step reads uninitialized memory.  Nor is a backward
drawn into the history of a non-leaf the tensors were made from: its fake
is an example input, whose backward raises by design.

Why not a ``RuleBasedStateMachine``: a program must run inside the suite's
existing ``@given`` items (one item per kind and converter, with its recipe
and conversion), be replayed on three sides (real, converted, control) and
be printed as one reproducer.  A plain strategy drawing a list of steps
against the tracked real state does that; it shrinks toward fewer steps
(the loop's "one more step?" shrinks to no) and simpler ones (the op
vocabulary is ordered simplest first, no context before any context).

The vocabulary has two parts.  The steps written here reach the state a
conversion rebuilt (views and their bases, autograd links, grad modes,
storages), and most steps come from them.  One step in :data:`ATEN_ODDS` at
most (one in :data:`ATEN_ODDS_GRAD` on a tensor that requires grad) comes
from the rest of aten's view and in-place ops
(:mod:`.aten_steps`: each called with arguments built from its schema), so
that an operator torch adds is drawn without a line here.

Sparse COO, sparse compressed and nested jagged tensors draw from
vocabularies of their own layout's ops (:data:`VOCABULARIES`); a wrapper
subclass draws the strided one, run on its inner tensors by its dispatch.

Two drivers draw from the same vocabulary: :func:`programs` (a Hypothesis
strategy) and :func:`seeded_programs` (a seeded ``random.Random``, for
``assert_faithful(..., programs=N)`` outside Hypothesis).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import random
import textwrap
import warnings
from typing import Any, Callable, Iterator, Sequence

from hypothesis import event, target
from hypothesis.errors import InvalidArgument
from hypothesis import strategies as st

from .aten_steps import aten_steps
from .described import recipe_for
from .kinds import all_kinds
from .recipe import Recipe, recipe_of
from .tensor_facts import (COMPRESSED_LAYOUTS, base_of, in_shared_memory, is_functorch_wrapped,
                           is_wrapper_subclass, is_zero_tensor, layout_name, reaches_past_storage,
                           storage_too_small, walk_real)
from .torch_errors import release_frames

MAX_STEPS = 6
# The start of vmap's UserWarning about an op without a batching rule.
NO_BATCHING_RULE = "There is a performance drop because we have not yet implemented the batching rule"
# Names of the tensors a program makes: p0, p1, ... (recipes use t, s, ...).
OUTPUT_PREFIX = "p"
# Contexts a step may run in; index 0 (none) is what shrinking prefers.
CONTEXTS = (None, None, None, None, None, "torch.no_grad()", "torch.inference_mode()",
            "torch.enable_grad()")
# Which kinds a program runs on is each kind's declaration (``@kind(...,
# programs=True or why not)``): kinds.program_kinds().


@dataclasses.dataclass(frozen=True)
class Step:
    """One statement of a program.  ``op``: the vocabulary entry (for
    events and reports); ``output``: the name it binds, or None;
    ``context``: the context manager expression it runs in, or None."""

    op: str
    statement: str
    output: str | None = None
    context: str | None = None

    @property
    def source(self) -> str:
        if self.context is None:
            return self.statement
        return f"with {self.context}:\n    {self.statement}"


@dataclasses.dataclass(frozen=True)
class Program:
    """Steps over the tensors ``inputs`` (the recipe's outputs).  Empty
    (no steps) when programs do not apply to the tensors; ``reason`` says
    why."""

    inputs: tuple[str, ...]
    steps: tuple[Step, ...] = ()
    reason: str = ""
    # How much of the state the conversion made the program exercised
    # (:func:`exercised`); what the Hypothesis driver targets.
    exercised: int = dataclasses.field(default=0, compare=False)

    @property
    def source(self) -> str:
        return "\n".join(s.source for s in self.steps)

    def __str__(self) -> str:
        return self.source

    def __len__(self) -> int:
        return len(self.steps)

    def prefix(self, n: int) -> "Program":
        """The first ``n`` steps."""
        return dataclasses.replace(self, steps=self.steps[:n])

    @classmethod
    def parse(cls, source: str, inputs: Sequence[str]) -> "Program":
        """A program from source written by hand or printed by a reproducer:
        one step per top-level statement (a ``with`` block is one step)."""
        import ast

        if not isinstance(source, str):
            raise TypeError(f"program must be source text or a Program, not {type(source).__name__}")
        source = textwrap.dedent(source).strip("\n")
        try:
            tree = ast.parse(source)
        except SyntaxError as e:
            raise ValueError(f"program is not valid Python: {e}: {source!r}") from None
        steps = []
        for node in tree.body:
            context = None
            body = node
            if isinstance(node, ast.With) and len(node.items) == 1 and len(node.body) == 1:
                context = ast.unparse(node.items[0].context_expr)
                body = node.body[0]
            output = None
            if isinstance(body, ast.Assign) and len(body.targets) == 1 and isinstance(
                    body.targets[0], ast.Name):
                output = body.targets[0].id
            steps.append(Step("parsed", ast.unparse(body), output, context))
        _check_names(tree, inputs, [s.output for s in steps if s.output])
        return cls(tuple(inputs), tuple(steps))


def _check_names(tree: Any, inputs: Sequence[str], outputs: Sequence[str]) -> None:
    """Every name a program reads is ``torch``, a builtin, one of the
    tensors or what an earlier step bound."""
    import ast
    import builtins

    known = {"torch", *inputs, *outputs, *dir(builtins)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in known:
            raise ValueError(
                f"program uses {node.id!r}, which is not one of the tensors "
                f"({', '.join(inputs)}: the names their reproducer gives them) nor bound by "
                "an earlier step")


def run_step(step: Step, namespace: dict[str, Any]) -> BaseException | None:
    """Execute ``step`` in ``namespace``; the exception it raised (without
    its traceback), or None.

    The step leaves torch's dispatch key sets (thread-local) as they were.
    Some of torch's error paths do not: with real-tensor propagation, a
    metadata mismatch whose message fails to format (``_local_scalar_dense``
    of a bits dtype) leaves stale exclusions behind, applied when the
    traceback's frames are freed -- at the next garbage collection, long
    after the step, where they break unrelated examples (a later ``* 2``
    that no longer requires grad; see :mod:`.torch_errors`).  So the frames
    are cleared and the traceback dropped inside a guard restoring the key
    sets.  vmap's notice that an op has no batching rule (it runs one
    example at a time) is not news about the conversion: it is silenced."""
    import torch

    with torch._C._PreserveDispatchKeyGuard(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=NO_BATCHING_RULE)
        try:
            exec(compile(step.source, "<metafidelity program>", "exec"), namespace)
        except Exception as e:
            release_frames(e, drop_tracebacks=True)
            return e
    return None


# -- choices: one vocabulary, two drivers -------------------------------------------------


class Choices:
    """Where a program's choices come from: Hypothesis or a seeded random."""

    def integer(self, lo: int, hi: int) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def boolean(self) -> bool:
        return self.integer(0, 1) == 1

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self.integer(0, len(items) - 1)]


class DrawnChoices(Choices):
    def __init__(self, draw: Callable[..., Any]) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def boolean(self) -> bool:
        return self.draw(st.booleans())


class RandomChoices(Choices):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


# -- the vocabulary -------------------------------------------------------------------------

# An op: (name, kind, applies(t), make(choices, name, t, live) -> expression or statement).
# kind "view" binds the expression to a new name; "inplace" and "autograd" are statements,
# except "grad", which binds t.grad.


@dataclasses.dataclass(frozen=True)
class Op:
    name: str
    binds: bool
    applies: Callable[[Any], bool]
    make: Callable[[Choices, str, Any, dict[str, Any]], str]


def _storage_elements(t: Any) -> int:
    try:
        return t.untyped_storage().nbytes() // t.element_size()
    except Exception:
        return 0


def _is_complex(t: Any) -> bool:
    return t.dtype.is_complex


def _slice(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    d = ch.integer(0, t.dim() - 1)
    size = t.shape[d]
    start = ch.integer(0, size)
    stop = ch.integer(start, size)
    step = ch.integer(1, 2)
    index = ":, " * d + f"{start}:{stop}" + (f":{step}" if step != 1 else "")
    return f"{n}[{index}]"


def _select(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    dims = [d for d in range(t.dim()) if t.shape[d] > 0]
    d = ch.pick(dims)
    return f"{n}.select({d}, {ch.integer(0, t.shape[d] - 1)})"


def _transpose(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    return f"{n}.transpose({ch.integer(0, t.dim() - 1)}, {ch.integer(0, t.dim() - 1)})"


def _view(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    if ch.boolean():
        return f"{n}.view({tuple(t.shape) + (1,)})"
    return f"{n}.view(-1)"


def _reshape(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    if ch.boolean():
        return f"{n}.reshape({tuple(reversed(t.shape))})"
    return f"{n}.reshape(-1)"


def _expand(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    ones = [d for d in range(t.dim()) if t.shape[d] == 1]
    if ones and ch.boolean():
        sizes = list(t.shape)
        sizes[ch.pick(ones)] = 3
        return f"{n}.expand({tuple(sizes)})"
    return f"{n}.expand({(2,) + tuple(t.shape)})"


def _strided_args(ch: Choices, t: Any) -> str:
    elements = _storage_elements(t)
    offset = ch.integer(0, max(elements - 1, 0))
    left = max(elements - offset, 0)
    if ch.boolean() and left >= 2:
        rows = ch.integer(1, 2)
        cols = ch.integer(1, max(left // rows, 1))
        cols = min(cols, left // rows)
        return f"({rows}, {cols}), (1, {rows}), {offset}"
    return f"({ch.integer(0, left)},), (1,), {offset}"


def _as_strided(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    return f"{n}.as_strided({_strided_args(ch, t)})"


def _same_shape_other(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    """A live tensor of t's shape (t itself when there is no other)."""
    others = [m for m, u in live.items() if m != n and tuple(u.shape) == tuple(t.shape)
              and not reaches_past_storage(u)]
    return ch.pick(others) if others and ch.boolean() else n


def _zeroable(t: Any) -> bool:
    import torch

    if t.is_inference() and not torch.is_inference_mode_enabled():
        return False
    try:
        torch.empty(1, dtype=t.dtype).zero_()
    except Exception:
        return False
    return True


def _resize(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    room = max(_storage_elements(t) - t.storage_offset(), 0)
    # Growing the storage leaves new elements uninitialized, so a growing
    # resize_ is followed by zero_(); where zero_ cannot run (an inference
    # tensor outside inference mode, a dtype without the kernel) it stays
    # within the storage.  zero_() writes the tensor's elements only: a
    # storage that ends before the tensor's offset would grow uninitialized
    # bytes below it too (which as_strided_ may read), so it is not grown.
    grows = _zeroable(t) and _storage_elements(t) >= t.storage_offset()
    size = ch.integer(0, room + 4 if grows else room)
    # (resize_ to the sizes a tensor already has does not grow a storage
    # that was shrunk under it: zeroing it then writes past its end.)
    if size > room and not reaches_past_storage(t):
        # Growing the storage leaves new elements uninitialized: give them values.
        return f"{n}.resize_({size}).zero_()"
    return f"{n}.resize_({size})"


def _set(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    # (never a plain tensor onto a wrapper subclass's storage, which holds no
    # bytes: eager then writes through a null pointer -- a plain
    # t.set_(wrapper) then resize_().zero_() or fill_ segfaulted a 30-minute run)
    # (nor onto a zero tensor's storage, which holds no data either)
    others = [m for m, u in live.items() if m != n and u.dtype == t.dtype
              and (is_wrapper_subclass(t) or not is_wrapper_subclass(u))
              and not is_zero_tensor(u)]
    if not others or ch.integer(0, 2) == 0:
        return f"{n}.set_()"
    other = ch.pick(others)
    if ch.boolean():
        return f"{n}.set_({other})"
    return f"{n}.set_({other}.untyped_storage(), {_strided_args(ch, live[other])})"


def _always(t: Any) -> bool:
    return True


def _has_dims(t: Any) -> bool:
    return t.dim() > 0


VIEW_OPS = (
    Op("detach", True, _always, lambda ch, n, t, live: f"{n}.detach()"),
    Op("alias", True, _always, lambda ch, n, t, live: f"torch.ops.aten.alias({n})"),
    Op("t", True, lambda t: t.dim() <= 2, lambda ch, n, t, live: f"{n}.t()"),
    Op("transpose", True, _has_dims, _transpose),
    Op("unsqueeze", True, _always, lambda ch, n, t, live: f"{n}.unsqueeze({ch.integer(0, t.dim())})"),
    Op("slice", True, _has_dims, _slice),
    Op("select", True, lambda t: any(s > 0 for s in t.shape), _select),
    Op("view", True, _always, _view),
    Op("reshape", True, _always, _reshape),
    Op("expand", True, _always, _expand),
    Op("as_strided", True, lambda t: _storage_elements(t) > 0, _as_strided),
    Op("conj", True, _always, lambda ch, n, t, live: f"{n}.conj()"),
    Op("_neg_view", True, _always, lambda ch, n, t, live: f"torch._neg_view({n})"),
    Op("real", True, _is_complex, lambda ch, n, t, live: f"{n}.real"),
    Op("imag", True, _is_complex, lambda ch, n, t, live: f"{n}.imag"),
    Op("view_as_real", True, _is_complex, lambda ch, n, t, live: f"torch.view_as_real({n})"),
    Op("view_as_complex", True,
       lambda t: t.dim() > 0 and t.shape[-1] == 2 and t.dtype.is_floating_point,
       lambda ch, n, t, live: f"torch.view_as_complex({n})"),
)

INPLACE_OPS = (
    Op("zero_", False, _always, lambda ch, n, t, live: f"{n}.zero_()"),
    Op("fill_", False, _always, lambda ch, n, t, live: f"{n}.fill_(2)"),
    Op("add_", False, _always, lambda ch, n, t, live: f"{n}.add_(1)"),
    Op("mul_", False, _always, lambda ch, n, t, live: f"{n}.mul_(2)"),
    Op("copy_", False, _always,
       lambda ch, n, t, live: f"{n}.copy_({_same_shape_other(ch, n, t, live)})"),
    Op("requires_grad_", False, _always,
       lambda ch, n, t, live: f"{n}.requires_grad_({ch.boolean()})"),
    Op("detach_", False, _always, lambda ch, n, t, live: f"{n}.detach_()"),
    Op("t_", False, lambda t: t.dim() <= 2, lambda ch, n, t, live: f"{n}.t_()"),
    Op("transpose_", False, _has_dims,
       lambda ch, n, t, live: f"{n}.transpose_({ch.integer(0, t.dim() - 1)}, "
                              f"{ch.integer(0, t.dim() - 1)})"),
    Op("unsqueeze_", False, _always,
       lambda ch, n, t, live: f"{n}.unsqueeze_({ch.integer(0, t.dim())})"),
    Op("as_strided_", False, lambda t: _storage_elements(t) > 0,
       lambda ch, n, t, live: f"{n}.as_strided_({_strided_args(ch, t)})"),
    # (never of a zero tensor, whose storage holds no data, nor of a tensor in
    # shared memory: eager segfaults growing either storage)
    Op("resize_", False, lambda t: not is_zero_tensor(t) and not in_shared_memory(t), _resize),
    Op("set_", False, _always, _set),
)

AUTOGRAD_OPS = (
    Op("retain_grad", False, _always, lambda ch, n, t, live: f"{n}.retain_grad()"),
    Op("backward", False, _always, lambda ch, n, t, live: f"{n}.sum().abs().backward()"),
    Op("grad", True, _always, lambda ch, n, t, live: f"{n}.grad"),
)

# Simplest first (shrinking goes toward index 0).
OPS = VIEW_OPS + INPLACE_OPS + AUTOGRAD_OPS
OP_NAMES = tuple(op.name for op in OPS)
_BY_NAME = {op.name: op for op in OPS}


# -- the vocabularies of other layouts ---------------------------------------------------------
#
# A sparse or nested jagged tensor has few of the strided views and in-place
# ops; its own vocabulary reaches what its conversion rebuilt: the index and
# value tensors (views of the real ones, fakes of them on the other side),
# the coalesced flag, the dense form, and autograd through them.  What a
# step binds may be strided (``_values()``, ``to_dense()``): it then draws
# from the strided vocabulary.  Wrapper subclasses (TwoTensor, ...) draw the
# strided vocabulary: each op runs on the inner tensors by the subclass's
# own dispatch.


def _sparse_transpose(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    dims = max(int(t.sparse_dim()), 1)
    return f"{n}.transpose({ch.integer(0, dims - 1)}, {ch.integer(0, dims - 1)})"


def _compressed_indices(ch: Choices, n: str, t: Any, live: dict[str, Any]) -> str:
    row_major = layout_name(t) in ("sparse_csr", "sparse_bsr")
    if ch.boolean():
        return f"{n}.{'col_indices' if row_major else 'row_indices'}()"
    return f"{n}.{'crow_indices' if row_major else 'ccol_indices'}()"


_TO_DENSE = Op("to_dense", True, _always, lambda ch, n, t, live: f"{n}.to_dense()")


def _grad_steps(backward_through: str) -> tuple[Op, ...]:
    """The autograd steps of a layout whose backward goes through
    ``backward_through`` (a sparse ``sum()`` is not differentiable in every
    layout; ``to_dense()`` is)."""
    backward = Op("backward", False, _always,
                  lambda ch, n, t, live: f"{n}.{backward_through}.sum().abs().backward()")
    return (_BY_NAME["requires_grad_"], _BY_NAME["detach_"], _BY_NAME["retain_grad"], backward,
            _BY_NAME["grad"])

SPARSE_COO_OPS = (
    _BY_NAME["detach"],
    Op("coalesce", True, _always, lambda ch, n, t, live: f"{n}.coalesce()"),
    Op("_values", True, _always, lambda ch, n, t, live: f"{n}._values()"),
    Op("_indices", True, _always, lambda ch, n, t, live: f"{n}._indices()"),
    _TO_DENSE,
    Op("t", True, lambda t: t.dim() <= 2, lambda ch, n, t, live: f"{n}.t()"),
    Op("transpose", True, lambda t: t.sparse_dim() > 0, _sparse_transpose),
    _BY_NAME["zero_"],
    _BY_NAME["mul_"],
    Op("_coalesced_", False, _always,
       lambda ch, n, t, live: f"{n}._coalesced_({ch.boolean()})"),
    *_grad_steps("to_dense()"),
)

COMPRESSED_OPS = (
    _BY_NAME["detach"],
    Op("values", True, _always, lambda ch, n, t, live: f"{n}.values()"),
    Op("compressed_indices", True, _always, _compressed_indices),
    _TO_DENSE,
    Op("to_sparse_coo", True, lambda t: layout_name(t) in ("sparse_csr", "sparse_csc"),
       lambda ch, n, t, live: f"{n}.to_sparse()"),
    _BY_NAME["zero_"],
    _BY_NAME["mul_"],
    *_grad_steps("to_dense()"),
)

JAGGED_OPS = (
    _BY_NAME["detach"],
    Op("values", True, _always, lambda ch, n, t, live: f"{n}.values()"),
    Op("offsets", True, _always, lambda ch, n, t, live: f"{n}.offsets()"),
    Op("unbind", True, _always, lambda ch, n, t, live: f"{n}.unbind()[0]"),
    _BY_NAME["zero_"],
    _BY_NAME["fill_"],
    _BY_NAME["add_"],
    _BY_NAME["mul_"],
    *_grad_steps("values()"),
)


def _float32(t: Any) -> bool:
    import torch

    return t.dtype == torch.float32


# The MKLDNN layout's own ops.  zero_() of an MKLDNN tensor of any dtype but
# float32 corrupts eager's heap ("corrupted size vs. prev_size", torch 2.13):
# never drawn there.  (add_ refuses every MKLDNN tensor: 'itensor_from_mkldnn
# expects MKL-DNN tensor input'.)
MKLDNN_OPS = (
    _BY_NAME["detach"],
    _TO_DENSE,
    Op("clone", True, _always, lambda ch, n, t, live: f"{n}.clone()"),
    Op("zero_", False, _float32, lambda ch, n, t, live: f"{n}.zero_()"),
    _BY_NAME["mul_"],
    *_grad_steps("to_dense()"),
)

# Vocabulary by what a tensor is (:func:`vocabulary_kind`).
VOCABULARIES = {"strided": OPS, "sparse_coo": SPARSE_COO_OPS, "compressed": COMPRESSED_OPS,
                "jagged": JAGGED_OPS, "mkldnn": MKLDNN_OPS}


def vocabulary_kind(t: Any) -> str:
    """Which vocabulary a step on ``t`` draws from: ``"jagged"`` for a
    nested jagged tensor, ``"sparse_coo"``, ``"compressed"`` (CSR, CSC,
    BSR, BSC), ``"mkldnn"``, else ``"strided"``."""
    if _safe(lambda: bool(t.is_nested)):
        return "jagged"
    layout = layout_name(t)
    if layout == "sparse_coo":
        return "sparse_coo"
    if layout in COMPRESSED_LAYOUTS:
        return "compressed"
    if layout == "_mkldnn":
        return "mkldnn"
    return "strided"


# One step in ATEN_ODDS is drawn from the rest of aten's views and in-place
# ops (:mod:`.aten_steps`, built from their schemas), where one applies; the
# others from the vocabulary above, whose steps reach the state a conversion
# made (autograd links, grad modes, storage) more often than an arbitrary
# operator's.  On a tensor that requires grad, one in ATEN_ODDS_GRAD: its
# steps go to walking the graph.  Shrinking goes toward the vocabulary above.
ATEN_ODDS = 4
ATEN_ODDS_GRAD = 16
# Opt-in for now (METAFIDELITY_ATEN_STEPS=1): short derandomized runs still
# meet operator differences of these steps not yet registered.
ATEN_STEPS_VARIABLE = "METAFIDELITY_ATEN_STEPS"


def aten_steps_enabled() -> bool:
    import os

    return os.environ.get(ATEN_STEPS_VARIABLE, "") not in ("", "0")


@functools.cache
def aten_ops() -> tuple[Op, ...]:
    """aten's view and in-place ops not in the vocabulary above, as steps."""
    steps, _ = aten_steps()
    return tuple(Op(s.name, s.binds, s.applies, s.make) for s in steps if s.name not in OP_NAMES)


def _grad_fn(t: Any) -> Any:
    """``t.grad_fn``, or None where reading it raises (a no_grad view whose
    base was modified in place with grad mode enabled)."""
    try:
        return t.grad_fn
    except Exception:
        return None


def _graph_reaches(t: Any, forbidden: dict[int, Any], limit: int = 500) -> bool:
    """Whether ``t``'s autograd graph reaches one of the ``forbidden`` nodes.

    Nodes are compared by identity while every node visited is held: torch
    makes a node's Python object afresh once the last one was freed, so the
    ``id()`` of a freed one may be any other object's (which made the
    program drawn depend on the allocator: Hypothesis' "Inconsistent data
    generation")."""
    stack, seen = [_grad_fn(t)], {}
    base = base_of(t) if stack[0] is None else None
    if base is not None:
        # A view whose grad_fn cannot be read (torch's internal assert after
        # an in-place view op then a no_grad write) still backpropagates
        # into its base's graph.
        stack.append(_grad_fn(base))
    while stack and len(seen) < limit:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        if forbidden.get(id(node)) is node:
            return True
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    return False


def example_inputs(tensors: Sequence[Any]) -> dict[int, Any]:
    """Autograd nodes that a converted tensor does not have: the ``grad_fn``
    of every non-view non-leaf among the tensors, by ``id()`` (held, so
    that the ids stay theirs).  A fake of such a tensor is an *example
    input* whose ``grad_fn`` raises by design (``Tried to backward()
    through example input``; the ``autograd`` check covers it), so programs
    do not backpropagate into these."""
    nodes = {}
    for _, t in walk_real([f"t{i}" for i in range(len(tensors))], tensors):
        fn = _grad_fn(t)
        if fn is not None and not t._is_view():
            nodes[id(fn)] = fn
    return nodes


# Ops that read or write the tensor's elements: never drawn for a tensor that
# reaches past the end of its storage (torch segfaults,
# https://github.com/pytorch/pytorch/issues/171676).
TOUCH_ELEMENTS = frozenset({"zero_", "fill_", "add_", "mul_", "copy_", "backward"})


def _any_storage_too_small(tensors: Any) -> bool:
    """Whether a tensor, or one they reach (bases, grads), reaches past the
    end of its storage: a backward may read it (saved tensors) or
    accumulate into it (a .grad), and crash."""
    tensors = list(tensors)
    return any(storage_too_small(t)
               for _, t in walk_real([f"t{i}" for i in range(len(tensors))], tensors))


def index_storages(tensors: Any) -> set[int]:
    """Where the index tensors of the sparse and nested jagged tensors among
    ``tensors`` keep their elements (storage addresses).  Torch reads those
    indices unchecked: a step writing into them (``p0 = t.ccol_indices();
    p0.mul_(2)``) leaves an invalid tensor whose next read is out of bounds
    (a segfault met by a 30-minute run)."""
    found: set[int] = set()
    for t in tensors:
        kind = vocabulary_kind(t)
        try:
            if kind == "sparse_coo":
                indices: tuple[Any, ...] = (t._indices(),)
            elif kind == "compressed":
                row_major = layout_name(t) in ("sparse_csr", "sparse_bsr")
                indices = ((t.crow_indices(), t.col_indices()) if row_major
                           else (t.ccol_indices(), t.row_indices()))
            elif kind == "jagged":
                indices = (t.offsets(),)
            else:
                continue
            found.update(i.untyped_storage().data_ptr() for i in indices)
        except Exception:
            continue
    found.discard(0)  # (no bytes: nothing to write)
    return found


def _writes_indices(t: Any, guarded: set[int]) -> bool:
    """Whether ``t`` shares its storage with the indices of ``index_storages``."""
    return bool(guarded) and _safe(lambda: t.untyped_storage().data_ptr() in guarded)


def _applicable_ops(t: Any, grad_is_set: bool, may_backward: bool,
                    read_only: bool = False) -> list[Op]:
    """The vocabulary's ops that apply to ``t``; no in-place op where it is
    ``read_only`` (it holds a sparse tensor's indices)."""
    ops = []
    too_small = reaches_past_storage(t)
    for op in VOCABULARIES[vocabulary_kind(t)]:
        if too_small and op.name in TOUCH_ELEMENTS:
            continue
        if read_only and _FAMILY[op.name] == "inplace":
            continue
        if op.name == "grad" and not grad_is_set:
            continue
        if op.name == "backward" and not may_backward:
            continue
        try:
            if op.applies(t):
                ops.append(op)
        except Exception:
            continue
    return ops


def _grad_or_none(t: Any) -> Any:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return t.grad
        except Exception:
            return None


# -- bias: steps toward the state the tensors carry ---------------------------------------
#
# A converter fault that only a program shows sits in state the conversion
# made: the autograd links of a view to its base, retain_grad and .grad of
# converted non-leaves, the grad mode a tensor was made in, the dtype of a
# view's base.  Programs are drawn toward that state with Hypothesis' own
# tools rather than a scheduler: per program, a *swarm* choice of the op
# families it may use (a family left out makes the others' steps likelier);
# per step, weights from what the chosen tensor carries (requires grad, is
# a view, is an inference tensor, ...); per example, ``target()`` on
# :func:`exercised`.  The weights repeat an op in the pick; the ops a
# tensor's state favours come first, so that the simplest program drawn
# for it (index 0 everywhere) exercises that state.

# Families a swarm choice leaves in or out: the vocabulary's parts.
FAMILIES = (("view", VIEW_OPS), ("inplace", INPLACE_OPS), ("autograd", AUTOGRAD_OPS))
_FAMILY = {op.name: family for family, ops in FAMILIES for op in ops}
# The other layouts' own ops: the ones that bind are views (or a tensor
# derived from one), the others change the tensor in place.
_FAMILY.update({op.name: "view" if op.binds else "inplace"
                for ops in VOCABULARIES.values() for op in ops if op.name not in _FAMILY})
# Contexts for a tensor whose state depends on the grad mode (it requires
# grad, or is an inference tensor): a mode change is likelier.
MODE_CONTEXTS = (None, None, "torch.no_grad()", "torch.inference_mode()", "torch.enable_grad()")
# Ops that read or change autograd state, and their extra weight on a
# tensor that requires grad: walking the graph (a backward, then reading
# the .grad it left) first.
_GRAD_STATE_WEIGHTS = {"grad": 10, "backward": 6, "retain_grad": 5, "requires_grad_": 2,
                       "detach": 2}
_GRAD_STATE_OPS = frozenset(_GRAD_STATE_WEIGHTS)
_WRITES_VALUES = frozenset({"zero_", "fill_", "add_", "mul_", "copy_"})
# The contexts that turn grad off, and the extra weight of a view there.
_GRAD_OFF = frozenset({"torch.no_grad()", "torch.inference_mode()"})
_VIEW_WEIGHT_GRAD_OFF = 3


def _safe(fn: Callable[[], Any], default: Any = False) -> Any:
    try:
        return fn()
    except Exception:
        return default


def op_weight(op: Op, t: Any, context: str | None = None) -> int:
    """How many times ``op`` counts in the pick of an op for ``t``, run in
    ``context``, by the state ``t`` carries (1: no bias)."""
    weight = 1
    if (context in _GRAD_OFF and op.binds and _FAMILY[op.name] == "view"
            and _safe(lambda: bool(t.requires_grad))):
        # what a mode with grad off changes about a view of a tensor that
        # requires grad: its autograd link and creation meta
        weight += _VIEW_WEIGHT_GRAD_OFF
    if (context not in _GRAD_OFF and _safe(lambda: bool(t.requires_grad))
            and op.name in _GRAD_STATE_OPS):
        # (with grad off, the views come first: what that mode changes; and
        # retain_grad on a leaf does nothing: a leaf keeps its .grad anyway)
        if op.name != "retain_grad" or not _safe(lambda: t.is_leaf, True):
            weight += _GRAD_STATE_WEIGHTS[op.name]
    if _safe(lambda: bool(t._is_view())):
        if op.name in _WRITES_VALUES | {"requires_grad_", "t_", "transpose_"}:
            weight += 2
        if op.binds and _FAMILY[op.name] == "view" and _safe(lambda: t._base.dtype != t.dtype):
            weight += 2  # views of a view of another dtype than its base
    if _safe(lambda: t.is_inference()) and op.name in _WRITES_VALUES:
        weight += 2
    return weight


def contexts_for(t: Any) -> tuple[str | None, ...]:
    """The contexts a step on ``t`` is drawn from (index 0: none)."""
    if _safe(lambda: bool(t.requires_grad) or bool(t.is_inference())):
        return MODE_CONTEXTS
    return CONTEXTS


def one_more_step(ch: Choices, steps: Sequence[Step]) -> bool:
    """Whether a program goes on: one time in two, three in four after a
    step on autograd state (a backward is worth its .grad reads)."""
    if steps and steps[-1].op in _GRAD_STATE_OPS:
        return ch.integer(0, 3) != 0
    return ch.boolean()


def swarm(ch: Choices) -> frozenset[str]:
    """The op families a program leaves out (swarm testing): each family is
    out in some programs, never all of them; 0, what shrinking goes toward,
    leaves none out."""
    mask = ch.integer(0, 2 ** len(FAMILIES) - 2)
    return frozenset(name for i, (name, _) in enumerate(FAMILIES) if mask >> i & 1)


def _weighted(ops: list[Op], t: Any, left_out: frozenset[str],
              context: str | None = None) -> list[Op]:
    """``ops`` without the families left out, each repeated in place by its
    weight for ``t`` in ``context``.  Where that leaves none, or only autograd ops on a
    tensor that does not require grad (they would all raise), the swarm
    choice does not hold for this step: all of ``ops``."""
    kept = [op for op in ops if _FAMILY[op.name] not in left_out]
    if not kept or (all(_FAMILY[op.name] == "autograd" for op in kept)
                    and not _safe(lambda: bool(t.requires_grad))):
        kept = ops
    weights = {op.name: op_weight(op, t, context) for op in kept}
    # The ops the tensor's state favours first (in the vocabulary's order
    # among equals): the simplest program on a tensor carrying state -- a
    # suite item's first example, what a failure shrinks toward --
    # exercises that state.  A plain tensor's order is the vocabulary's.
    kept = sorted(kept, key=lambda op: -weights[op.name])
    return [op for op in kept for _ in range(weights[op.name])]


def exercised(steps: Sequence[Step], raised: Sequence[bool], inputs: Sequence[str]) -> int:
    """How much of the state the conversion made a program exercised: one
    for each step that ran, one more where it acts on autograd state or
    runs in a grad mode, one more where it names a converted tensor."""
    import re

    score = 0
    for step, failed in zip(steps, raised):
        if failed:
            continue
        score += 1 + (step.op in _GRAD_STATE_OPS or step.context is not None)
        words = set(re.findall(r"[A-Za-z_]\w*", step.statement))
        score += any(n in words for n in inputs)
    return score


# Who is told of each step before it runs on the scratch copy (the suite's
# journal: a step that crashes torch there then keeps its case, program and all).
_BEFORE_STEP: contextvars.ContextVar[Callable[[Program], None] | None] = (
    contextvars.ContextVar("metafidelity_before_step", default=None))


@contextlib.contextmanager
def telling_steps(before_step: Callable[[Program], None]) -> Iterator[None]:
    """Within the block, programs being drawn call ``before_step`` with the
    program so far, its last step the one about to run on the scratch copy."""
    token = _BEFORE_STEP.set(before_step)
    try:
        yield
    finally:
        _BEFORE_STEP.reset(token)


def draw_steps(ch: Choices, inputs: Sequence[str], tensors: Sequence[Any],
               max_steps: int = MAX_STEPS) -> Program:
    """Draw a program over ``tensors`` (named ``inputs``), executing each
    step on them as it is drawn: ``tensors`` must be a scratch copy."""
    import torch

    namespace: dict[str, Any] = {"torch": torch, **dict(zip(inputs, tensors))}
    live = dict(zip(inputs, tensors))
    forbidden = example_inputs(tensors)
    steps: list[Step] = []
    failed: list[bool] = []
    left_out = swarm(ch)
    while len(steps) < max_steps and (not steps or one_more_step(ch, steps)):
        name = ch.pick(list(live))
        t = live[name]
        may_backward = (t.requires_grad and not _graph_reaches(t, forbidden)
                        and not _any_storage_too_small(live.values()))
        read_only = _writes_indices(t, index_storages(live.values()))
        aten = ([op for op in aten_ops() if _safe(lambda: op.applies(t))]
                if aten_steps_enabled() and vocabulary_kind(t) == "strided" and not read_only
                else [])
        contexts = contexts_for(t)
        context = contexts[ch.integer(0, len(contexts) - 1)]
        odds = ATEN_ODDS_GRAD if _safe(lambda: bool(t.requires_grad)) else ATEN_ODDS
        if aten and ch.integer(0, odds - 1) == odds - 1:
            op = ch.pick(aten)
        else:
            ops = _applicable_ops(t, _grad_or_none(t) is not None, may_backward, read_only)
            op = ch.pick(_weighted(ops, t, left_out, context))
        text = op.make(ch, name, t, live)
        output = f"{OUTPUT_PREFIX}{len(steps)}" if op.binds else None
        statement = f"{output} = {text}" if output else text
        step = Step(op.name, statement, output, context)
        steps.append(step)
        before_step = _BEFORE_STEP.get()
        if before_step is not None:
            before_step(Program(tuple(inputs), tuple(steps)))
        raised = run_step(step, namespace)
        failed.append(raised is not None)
        if output is not None and raised is None and isinstance(namespace.get(output),
                                                                 torch.Tensor):
            live[output] = namespace[output]
    return Program(tuple(inputs), tuple(steps),
                   exercised=exercised(steps, failed, inputs))


# -- drivers ------------------------------------------------------------------------------


def applicable(recipe: Recipe) -> str | None:
    """Why programs do not apply to the recipe's tensors, or None."""
    registry = all_kinds()
    for name in recipe.kinds:
        if name == "described":  # tensors made by hand: why_no_programs() judges them
            continue
        declared = registry.get(name)
        if declared is None:
            return f"programs run on the kinds that declare them, not unregistered kind {name!r}"
        if not declared.runs_programs:
            return f"programs do not run on kind {name!r}: {declared.programs}"
    return None


def as_program(program: "Program | str", names: Sequence[str]) -> Program:
    """A ``Program`` from a ``Program`` or its source text (whose tensors
    have the names ``names``, the reproducer's)."""
    if isinstance(program, Program):
        if len(program.inputs) != len(names):
            raise ValueError(f"the program runs on {len(program.inputs)} tensor(s) "
                             f"{list(program.inputs)}, but {len(names)} were given")
        return program
    return Program.parse(program, names)


def why_not_plain(tensors: Sequence[Any]) -> str | None:
    """Why ``tensors`` (and what they reach) are not all plain strided
    tensors with values, or None (what the ``reconvert`` check's in-place
    changes apply to)."""
    import torch

    for path, t in walk_real([f"t{i}" for i in range(len(tensors))], tensors):
        if type(t) not in (torch.Tensor, torch.nn.Parameter):
            return f"{path} is a {type(t).__name__}, not a plain tensor"
        if t.layout != torch.strided:
            return f"{path} has layout {t.layout}"
        if torch._is_functional_tensor(t):
            return f"{path} is a functional tensor"
        if t.device.type == "meta":
            return f"{path} is a meta tensor: no values to compare"
    return None


def why_no_programs(tensors: Sequence[Any]) -> str | None:
    """Why programs cannot run on ``tensors`` (and what they reach), or
    None: plain strided tensors, sparse COO and compressed tensors, nested
    jagged tensors, MKLDNN tensors, traceable wrapper subclasses and C++
    functional tensors run them, each with its vocabulary (:func:`vocabulary_kind`)."""
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    for path, t in walk_real([f"t{i}" for i in range(len(tensors))], tensors):
        if t.device.type == "meta":
            return f"{path} is a meta tensor: no values to compare"
        if torch._is_functional_tensor(t) and reaches_past_storage(t):
            # (even a view op reads its value: transpose(0, 0) segfaults eager)
            return (f"{path} is a C++ functional tensor whose value reaches past the end of "
                    "its storage: any op on it crashes eager")
        if is_functorch_wrapped(t) and reaches_past_storage(t):
            return (f"{path} is a functorch wrapper whose inner tensor reaches past the end of "
                    "its storage: an op on it crashes eager (torch._neg_view segfaults)")
        if _safe(lambda: bool(t.is_quantized)):
            return f"{path} is quantized"
        if layout_name(t) not in ("strided", "sparse_coo", *COMPRESSED_LAYOUTS, "jagged",
                                  "_mkldnn"):
            return f"{path} has layout {t.layout}"
        if type(t) not in (torch.Tensor, torch.nn.Parameter) and not (
                is_traceable_wrapper_subclass(t)):
            return f"{path} is a {type(t).__name__}, not a traceable wrapper subclass"
    return None


def _recipe_of(tensors: Any) -> Recipe:
    if isinstance(tensors, Recipe):
        return tensors
    if not isinstance(tensors, (tuple, list)):
        tensors = (tensors,)
    recipe = recipe_of(tensors[0]) if tensors else None
    if recipe is None or any(recipe_of(t) is not recipe for t in tensors):
        recipe = recipe_for(tensors)
    return recipe


@contextlib.contextmanager
def _scratch(recipe: Recipe) -> Iterator[tuple[tuple[Any, ...] | None, str | None]]:
    """A fresh copy of the recipe's tensors to draw against, or why not;
    built, and drawn against, inside the recipe's contexts (a functorch
    level), which stay active until the block ends."""
    reason = applicable(recipe)
    if reason is not None:
        yield None, reason
        return
    with recipe.active_contexts() as namespace:
        tensors: tuple[Any, ...] | None = None
        try:
            tensors = recipe.build_in(namespace)
        except Exception as e:
            reason = f"rebuilding the tensors from their recipe raised {type(e).__name__}: {e}"
        unmade = [name for name, t in zip(recipe.outputs, tensors or ()) if t is None]
        if unmade:  # (a recipe written from tensors whose metadata could not be read)
            reason = f"{', '.join(unmade)}: not made (the recipe could not describe it)"
        elif tensors is not None:
            reason = why_no_programs(tensors)
        yield (None, reason) if reason is not None else (tensors, None)


def programs(tensors: Any, *, max_steps: int = MAX_STEPS) -> st.SearchStrategy[Program]:
    """Programs of 1 to ``max_steps`` steps over ``tensors``: a recipe, or
    tensors drawn from this package's strategies (or made by hand: their
    recipe is then written from their metadata).  A recipe whose tensors
    live in a functorch level has its program drawn inside that level.
    Where programs do not apply (quantized tensors, a kind that declares
    why not), the program is empty and its ``reason`` says why; nothing is
    drawn."""
    if not isinstance(max_steps, int) or not 1 <= max_steps <= 50:
        from hypothesis.errors import InvalidArgument

        raise InvalidArgument(f"max_steps={max_steps!r} must be an int from 1 to 50")
    return _draw_program(_recipe_of(tensors), max_steps)


# At module level: Hypothesis reads the source of a function decorated with
# @composite (about 1 ms), which one defined inside programs() would pay on
# every call -- the suite asks for a program strategy per example.
@st.composite
def _draw_program(draw: Any, recipe: Any, max_steps: int) -> Program:
    with _scratch(recipe) as (scratch, reason):
        if scratch is None:
            return Program(recipe.outputs, reason=reason or "")
        program = draw_steps(DrawnChoices(draw), recipe.outputs, scratch, max_steps)
    for step in program.steps:
        event(f"program op: {step.op}")
    event(f"program steps: {len(program)}")
    try:
        target(float(program.exercised), label="program: conversion state exercised")
    except InvalidArgument:
        pass  # a second program in one test case (a user's test drawing several)
    return program


def seeded_programs(tensors: Any, n: int, *, seed: int = 0,
                    max_steps: int = MAX_STEPS) -> list[Program]:
    """``n`` programs over ``tensors`` from the same vocabulary as
    :func:`programs`, drawn by ``random.Random(seed)`` (no Hypothesis):
    the same programs every run."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"programs={n!r} must be a non-negative int")
    recipe = _recipe_of(tensors)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        with _scratch(recipe) as (scratch, reason):
            if scratch is None:
                return [Program(recipe.outputs, reason=reason or "")]
            out.append(draw_steps(RandomChoices(rng), recipe.outputs, scratch, max_steps))
    return out
