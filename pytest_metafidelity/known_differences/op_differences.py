"""Operator differences: where an operator acts differently on fake or meta
tensors than on real ones, whether or not they were converted.

The ``behaviour`` check runs a program on the real tensors and on their
converted counterparts; when a step differs, it replays the program on a
*control* (the same tensors made directly under a ``FakeTensorMode``, or on
the meta device), never converted.  When the control differs the same way,
the difference belongs to the operator (its meta kernel or fake impl), not
to the conversion, and is judged against this registry, not counted against
the converter:

* a registered, active entry (torch version in ``[since, until)``, its
  converters) whose ``statement`` pattern matches the step (``re.search``
  on the step's source, its ``with`` line included) and whose ``attribute``
  pattern matches the attribute that differs (``re.fullmatch``) explains
  it; when every difference of the step is explained, each entry is reported
  as ``op-difference <id>``, a known difference (entry ``op:<id>`` of
  :mod:`.definitions.behaviour`);
* an unregistered one fails as ``op-difference: <attribute>``, so that it
  is looked at and registered here.

Each entry carries a minimal reproducer on plain (unconverted) fake or meta
tensors, which the project's tests run.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Iterable, Sequence

from ..converters import where
from . import BY_DESIGN, UNFILED
from .core import PredicateError

# Also the reproducer of the registry's behaviour entry that follows from it.
DEGENERATE_STRIDES_REPRODUCER = (
    "import torch\n"
    "from torch._subclasses.fake_tensor import FakeTensorMode\n"
    "assert torch.empty_strided((0,), (4,)).view(-1).stride() == (4,)\n"
    "with FakeTensorMode():\n"
    "    assert torch.empty_strided((0,), (4,)).view(-1).stride() == (1,)\n"
)


@dataclasses.dataclass(frozen=True)
class OpDifference:
    id: str
    statement: str  # regular expression searched for in the step's source (with its context)
    attribute: str  # regular expression, full match against the differing attribute
    reason: str
    link: str  # the upstream issue, BY_DESIGN or UNFILED
    # None: every converter; else a selection by capability (converters.where)
    converters: Iterable[str] | None = None
    since: str | None = None
    until: str | None = None
    reproducer: str = ""
    # Optional: holds for a mismatch (its ``real``/``fake`` sides), given every
    # mismatch of the step at the same path.
    applies: Callable[[Any, Sequence[Any]], bool] | None = None
    # Optional: holds for a mismatch given the shape of the real tensor it is
    # on (None where it is on none).
    applies_to_shape: Callable[[Any, tuple[int, ...] | None], bool] | None = None
    # The step's errors alone show it (eager has no kernel; both sides state
    # the same broken rule in their own words): it is also judged where no
    # control can be built.
    errors_decide: bool = False

    def active(self, converter: str, version: Any = None) -> bool:
        from . import version_in_range

        if self.converters is not None and converter not in self.converters:
            return False
        return version_in_range(version, self.since, self.until)

    def explains(self, statement: str, mismatch: Any, same_path: Sequence[Any] = (),
                 real_shape: tuple[int, ...] | None = None) -> bool:
        """Whether this entry explains ``mismatch`` of the step ``statement``;
        ``same_path``: the step's mismatches at its path (itself included);
        ``real_shape``: the shape of the real tensor at that path."""
        if re.search(self.statement, statement) is None:
            return False
        if re.fullmatch(self.attribute, mismatch.attribute) is None:
            return False
        try:
            if self.applies is not None and not self.applies(mismatch, same_path or (mismatch,)):
                return False
            if self.applies_to_shape is not None and not self.applies_to_shape(mismatch,
                                                                               real_shape):
                return False
        except Exception as e:
            # A bug of ours: an internal error of the check that asked, never "does not apply".
            raise PredicateError(
                f"the predicate of operator difference {self.id!r} raised on "
                f"{mismatch.attribute!r} at {mismatch.path}: {type(e).__name__}: {e}") from e
        return True


def _raised(pattern: str, side: str = "fake") -> Callable[[Any, Sequence[Any]], bool]:
    """A ``raised`` mismatch shows ``pattern`` on ``side``."""
    def applies(m: Any, same_path: Sequence[Any]) -> bool:
        return m.attribute != "raised" or re.search(pattern, str(getattr(m, side))) is not None
    return applies


# Operator differences show on fake tensors, whichever way they were made.
FAKE_TENSOR_CONVERTERS = where(fake_tensors=True)

# What differs when a view is not a view (aliasing's and oracle's attributes).
NOT_A_VIEW = (r"storage identity|version counter sharing|_is_view\(\)|_base is None|"
              r"_base identity|object identity")

# What differs too when a view op's output was made on a storage of its own.
NOT_A_VIEW_OFFSET = r"storage_offset\(\)"


def made_on_own_storage(m: Any, same_path: Sequence[Any]) -> bool:
    """A difference of a view op's output that is not a view: a NOT_A_VIEW
    attribute, or its ``storage_offset()`` -- 0 on the fake side, where the
    same output's storage identity differs too (the output was made on a
    storage of its own, by empty_strided)."""
    if m.attribute != "storage_offset()":
        return True
    return str(m.fake) == "0" and any(x.attribute == "storage identity" for x in same_path)


# A broadcast that fails, in eager's words (TensorIterator, infer_size) and in
# those of the meta implementations (torch._refs._broadcast_shapes).
EAGER_BROADCAST_ERROR = re.compile(
    r"RuntimeError: The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
    r"at non-singleton dimension \d+")
META_BROADCAST_ERROR = re.compile(
    r"RuntimeError: Attempting to broadcast a dimension of length (\w+) at -\d+! "
    r"Mismatching argument at index \d+ had torch\.Size")


def same_broadcast_failure(m: Any, same_path: Sequence[Any]) -> bool:
    """Both sides raised for shapes that do not broadcast, and the length
    the fake side names is one eager names (or symbolic: ``s3``)."""
    eager = EAGER_BROADCAST_ERROR.match(str(m.real))
    meta = META_BROADCAST_ERROR.match(str(m.fake))
    if eager is None or meta is None:
        return False
    length = meta.group(1)
    return length in eager.groups() or re.fullmatch(r"[su]\d+", length) is not None


def only_degenerate_strides(real: Sequence[int], fake: Sequence[int],
                            shape: Sequence[int] | None) -> bool:
    """Strides of a tensor of ``shape`` that differ only where they move
    through no memory: at dimensions of size 1, or anywhere in a tensor
    with no elements."""
    if shape is None or not len(real) == len(fake) == len(shape):
        return False
    return 0 in shape or all(r == f or n == 1 for r, f, n in zip(real, fake, shape))


ZERO_ELEMENT_VIEW_REPRODUCER = (
    "import torch\n"
    "from torch._subclasses.fake_tensor import FakeTensorMode\n"
    "S = lambda t: t.untyped_storage()._cdata\n"
    "x = torch.zeros(0)\n"
    "assert S(x.view(-1)) == S(x) and S(x.reshape((0,))) == S(x)\n"
    "FakeTensorMode.cache_clear()\n"
    "with FakeTensorMode():\n"
    "    y = torch.zeros(0)\n"
    "    y.view(-1)\n"
    "    assert S(y.reshape((0,))) != S(y)  # a cache hit: not a view of y\n"
    "    z = torch.empty(0).set_(y.untyped_storage(), 1, (0,), (1,))\n"
    "    z.view(-1)\n"
    "    assert z.reshape((0,)).storage_offset() == 0  # eager: 1\n"
)

OP_DIFFERENCES: list[OpDifference] = [
    OpDifference(
        id="fake-view-replay-after-metadata-op",
        statement=r"\.\w+_\(",
        attribute="raised",
        applies=_raised("^IndexError: Dimension out of range"),
        converters=FAKE_TENSOR_CONVERTERS,
        reason=(
            "an in-place op on a view of a view whose dimensions an in-place metadata op "
            "(unsqueeze_) changed: autograd replays the view chain on the base, and on fake "
            "tensors the replay raises 'Dimension out of range' where eager's runs"
        ),
        link=UNFILED,
        reproducer=(
            'import torch\n'
            'from torch._subclasses.fake_tensor import FakeTensorMode\n'
            'def program():\n'
            '    x = torch.zeros((), requires_grad=True)\n'
            '    v = (x * 2).unsqueeze(0)\n'
            '    v.unsqueeze_(0)\n'
            '    v.transpose(0, 1).zero_()\n'
            'program()\n'
            'with FakeTensorMode():\n'
            '    try:\n'
            '        program()\n'
            '    except IndexError as e:\n'
            "        assert 'Dimension out of range' in str(e)\n"
            '    else:\n'
            "        raise AssertionError('fake zero_ ran')\n"
        ),
    ),
    OpDifference(
        id="zero-element-view-dispatch-cache",
        statement=r"\.(view|reshape|view_as|expand|transpose|t|unsqueeze|detach)\(|\[",
        attribute=f"{NOT_A_VIEW}|{NOT_A_VIEW_OFFSET}",
        applies=made_on_own_storage,
        converters=FAKE_TENSOR_CONVERTERS,
        reason=(
            "FakeTensorMode's dispatch cache: a view op on a tensor with no elements, served "
            "from the cache, returns a tensor that is not a view of its input (another "
            "storage, at storage offset 0), where eager returns a view; whether it does "
            "depends on earlier cache hits"
        ),
        link="https://github.com/pytorch/pytorch/issues/159151",
        reproducer=ZERO_ELEMENT_VIEW_REPRODUCER,
    ),
    OpDifference(
        id="bool-in-place-promotion",
        statement=r"\.(add_|mul_)\(",
        attribute="raised",
        applies=_raised("can't be cast to the desired output type", side="real"),
        reason=(
            "an in-place add_/mul_ of a bool tensor by an int: eager refuses the promotion "
            "('result type Long can't be cast to the desired output type Bool'); the meta "
            "kernel of mul_ accepts it and FakeTensorMode's add_ refuses with another error"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "try:\n"
            "    torch.zeros(2, dtype=torch.bool).mul_(2)\n"
            "except RuntimeError as e:\n"
            "    assert \"can't be cast\" in str(e)\n"
            "else:\n"
            "    raise AssertionError('real promoted')\n"
            "torch.zeros(2, dtype=torch.bool, device='meta').mul_(2)\n"
        ),
    ),
    OpDifference(
        id="fake-in-place-op-on-inference-view",
        statement=r"\.\w+_\(",
        attribute="raised",
        applies=_raised("Inplace update to inference tensor outside InferenceMode", side="real"),
        converters=FAKE_TENSOR_CONVERTERS,
        reason=(
            "an in-place op (set_, t_, ...; zero_ on an alias when served from the dispatch "
            "cache) on a view of an inference tensor outside inference mode: eager refuses "
            "('Inplace update to inference tensor outside InferenceMode'), FakeTensorMode lets "
            "it through (add_ on the same fake is refused)"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "with torch.inference_mode():\n"
            "    x = torch.zeros(1)\n"
            "try:\n"
            "    x.select(0, 0).set_()\n"
            "except RuntimeError as e:\n"
            "    assert 'Inplace update to inference tensor' in str(e)\n"
            "else:\n"
            "    raise AssertionError('real set_')\n"
            "with FakeTensorMode():\n"
            "    with torch.inference_mode():\n"
            "        y = torch.zeros(1)\n"
            "    y.select(0, 0).set_()\n"
            "    y.as_strided((1,), (1,), 0).t_()\n"
        ),
    ),
    OpDifference(
        id="fake-backward-through-emptied-view",
        statement=r"\.backward\(",
        attribute="raised",
        applies=_raised("returned an invalid gradient", side="fake"),
        converters=FAKE_TENSOR_CONVERTERS,
        reason=(
            "a view with no elements emptied by set_() in no_grad mode: eager's backward through "
            "it runs, FakeTensorMode's raises 'Function SumBackward0 returned an invalid "
            "gradient' (the gradient takes the view's new sizes)"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "def program():\n"
            "    x = torch.zeros(1, dtype=torch.complex64, requires_grad=True)\n"
            "    v = x.unsqueeze(0)[0:0]\n"
            "    with torch.no_grad():\n"
            "        v.set_()\n"
            "    v.sum().abs().backward()\n"
            "program()\n"
            "with FakeTensorMode():\n"
            "    try:\n"
            "        program()\n"
            "    except RuntimeError as e:\n"
            "        assert 'returned an invalid gradient' in str(e)\n"
            "    else:\n"
            "        raise AssertionError('fake backward ran')\n"
        ),
    ),
    OpDifference(
        id="unchecked-internal-overlap",
        statement=r"\.\w+_\(",
        attribute="raised",
        applies=_raised("refers? to a single memory location", side="real"),
        reason=(
            "eager in-place ops refuse to write to a tensor whose elements overlap in memory "
            "(a zero stride: 'unsupported operation: more than one element of the written-to "
            "tensor refers to a single memory location'), or that overlaps its input (copy_: "
            "'some elements of the input tensor and the written-to tensor refer to a single "
            "memory location'); meta kernels and fake impls do not check for overlap"
        ),
        link=BY_DESIGN,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "try:\n"
            "    torch.zeros(1).expand(3).mul_(2)\n"
            "except RuntimeError as e:\n"
            "    assert 'more than one element of the written-to tensor' in str(e)\n"
            "else:\n"
            "    raise AssertionError('real wrote')\n"
            "torch.zeros(1, device='meta').expand(3).mul_(2)\n"
            "with FakeTensorMode():\n"
            "    torch.zeros(1).expand(3).mul_(2)\n"
        ),
    ),
    OpDifference(
        id="view-replay-unchecked-storage-bounds",
        statement=r"\.set_\(\)|\.resize_\(0\)",
        attribute=r"is_leaf",
        applies=lambda m, same_path: m.real is None and m.fake is not None,
        reason=(
            "a view whose base was changed in place under no_grad regenerates its autograd "
            "history when its is_leaf is read, by replaying the view on the base; after the "
            "base's storage was emptied (set_() with no arguments, untyped_storage().resize_(0)) "
            "eager's replay checks the storage bounds and raises (setStorage: '... out of "
            "bounds for storage of size 0'), so is_leaf cannot be read, while meta and fake "
            "views replay without checking and answer False"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "def is_leaf(x):\n"
            "    v = x.real\n"
            "    with torch.no_grad():\n"
            "        x.set_()\n"
            "    return v.is_leaf\n"
            "try:\n"
            "    is_leaf(torch.zeros(1, dtype=torch.complex64, requires_grad=True))\n"
            "except RuntimeError as e:\n"
            "    assert 'out of bounds for storage' in str(e)\n"
            "else:\n"
            "    raise AssertionError('real is_leaf read')\n"
            "m = torch.zeros(1, dtype=torch.complex64, device='meta', requires_grad=True)\n"
            "assert is_leaf(m) is False\n"
            "with FakeTensorMode():\n"
            "    assert is_leaf(torch.zeros(1, dtype=torch.complex64, requires_grad=True)) is False\n"
        ),
    ),
    OpDifference(
        id="fake-in-place-op-breaks-view-autograd",
        statement=r"\.\w+_\(",
        attribute=r"is_leaf|requires_grad|grad is not None|_is_view\(\)|_base is None",
        converters=FAKE_TENSOR_CONVERTERS,
        reason=(
            "an in-place op (unsqueeze_, set_, detach_, zero_ under no_grad, ...) on a fake "
            "view of a leaf requiring grad, or on a fake aliasing one, corrupts the autograd "
            "metadata of the view: reading its is_leaf raises an INTERNAL ASSERT ('new_fn') or "
            "its requires_grad/is_leaf change, where eager's stay as they were"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "t = torch.zeros((2, 0)).view_as(torch.zeros((2, 0))).requires_grad_()\n"
            "v = t.view(-1)\n"
            "v.detach().unsqueeze_(0)\n"
            "assert not v.is_leaf\n"
            "with FakeTensorMode():\n"
            "    t = torch.zeros((2, 0)).view_as(torch.zeros((2, 0))).requires_grad_()\n"
            "    v = t.view(-1)\n"
            "    v.detach().unsqueeze_(0)\n"
            "    try:\n"
            "        v.is_leaf\n"
            "    except RuntimeError as e:\n"
            "        assert 'INTERNAL ASSERT FAILED' in str(e)\n"
            "    else:\n"
            "        raise AssertionError('is_leaf read')\n"
        ),
    ),
    OpDifference(
        id="fake-view-accepts-incompatible-strides",
        statement=r"\.view\(",
        attribute="raised",
        applies=_raised("view size is not compatible with input tensor", side="real"),
        converters=FAKE_TENSOR_CONVERTERS,
        reason=(
            "FakeTensorMode's view succeeds for some sizes and strides eager (and the meta "
            "kernel) refuse as not viewable ('view size is not compatible with input "
            "tensor's size and stride'), e.g. a channels_last_3d tensor with size-1 dimensions"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "args = ((1, 2, 1, 4, 1), (8, 1, 8, 2, 2))\n"
            "for device in ('cpu', 'meta'):\n"
            "    try:\n"
            "        torch.empty_strided(*args, device=device).view(-1)\n"
            "    except RuntimeError as e:\n"
            "        assert 'view size is not compatible' in str(e)\n"
            "    else:\n"
            "        raise AssertionError(device)\n"
            "with FakeTensorMode():\n"
            "    assert torch.empty_strided(*args).view(-1).shape == (8,)\n"
        ),
    ),
    OpDifference(
        id="kernel-missing-for-dtype",
        statement=r".",
        attribute="raised",
        applies=lambda m, same_path: (
            m.attribute != "raised"
            or re.search(r"not implemented for '\w+'", str(m.real)) is not None),
        errors_decide=True,
        reason=(
            "eager CPU kernels are not implemented for some dtypes (float8, bits, sub-byte "
            "integers, unsigned integers, complex32: 'not implemented for ...'), their meta "
            "kernels and fake impls only compute metadata and do not refuse them"
        ),
        link=BY_DESIGN,
        reproducer=(
            "import torch\n"
            "try:\n"
            "    torch.zeros(2, dtype=torch.uint32).add_(1)\n"
            "except NotImplementedError as e:\n"
            "    assert 'not implemented for' in str(e)\n"
            "torch.zeros(2, dtype=torch.uint32, device='meta').add_(1)\n"
        ),
    ),
    OpDifference(
        id="inference-mode-views-of-normal-tensors",
        statement=r"^with torch\.inference_mode\(\):\n    \w+ = ",
        attribute=r"_is_view\(\)|version counter sharing|requires_grad|_base is None",
        reason=(
            "a view of a normal tensor taken in inference mode is, in eager, a view sharing "
            "its base's version counter (and requires_grad); on fake and meta tensors the same "
            "op in inference mode gives a fresh tensor that is not a view"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "from torch._subclasses.fake_tensor import FakeTensorMode\n"
            "x = torch.zeros(2, dtype=torch.complex64)\n"
            "with torch.inference_mode():\n"
            "    assert x.real._is_view()\n"
            "with FakeTensorMode():\n"
            "    y = torch.zeros(2, dtype=torch.complex64)\n"
            "    with torch.inference_mode():\n"
            "        assert not y.real._is_view()\n"
        ),
    ),
    OpDifference(
        id="view-unchecked-storage-bounds",
        statement=r".",
        attribute="raised",
        applies=_raised("out of bounds for storage", side="real"),
        reason=(
            "eager view ops and in-place metadata ops (unsqueeze_, ...) check that the result "
            "fits in the storage (setStorage: '... out of bounds for storage of size N'); their "
            "meta kernels and fake impls do not always, so on a tensor whose storage was shrunk "
            "(untyped_storage().resize_(0)) they succeed on meta and fake tensors, converted or "
            "not"
        ),
        link=UNFILED,
        reproducer=(
            "import torch\n"
            "x = torch.zeros(()); x.untyped_storage().resize_(0)\n"
            "try:\n"
            "    x.expand(2)\n"
            "except RuntimeError as e:\n"
            "    assert 'out of bounds for storage' in str(e)\n"
            "m = torch.zeros((), device='meta'); m.untyped_storage().resize_(0)\n"
            "assert m.expand(2).shape == (2,)\n"
        ),
    ),
    OpDifference(
        id="broadcast-error-wording",
        statement=r".",
        attribute="raised",
        applies=same_broadcast_failure,
        errors_decide=True,
        reason=(
            "a broadcast that fails (an in-place or binary op on shapes that do not broadcast; "
            "a backward accumulating a gradient into a .grad of another shape, after an "
            "in-place transpose_ of the leaf) raises in other words on meta and fake tensors: "
            "eager says 'The size of tensor a (2) must match the size of tensor b (3) at "
            "non-singleton dimension 1', the meta implementations (torch._refs) 'Attempting to "
            "broadcast a dimension of length 3 at -2! ...': the same rule, the same sizes"
        ),
        link=BY_DESIGN,
        reproducer=(
            "import torch\n"
            "def message(device):\n"
            "    try:\n"
            "        torch.zeros(3, 2, 1, device=device).add_(torch.zeros(2, 3, 1, device=device))\n"
            "    except RuntimeError as e:\n"
            "        return str(e)\n"
            "assert message('cpu').startswith('The size of tensor a (2) must match the size of "
            "tensor b (3)')\n"
            "assert message('meta').startswith('Attempting to broadcast a dimension of length 3 "
            "at -2!')\n"
        ),
    ),
    OpDifference(
        id="degenerate-strides",
        statement=r"\.(view|reshape|set_)\(|backward\(",
        attribute=r"stride\(\)",
        applies_to_shape=lambda m, shape: only_degenerate_strides(m.real, m.fake, shape),
        reason=(
            "strides of dimensions that do not move through memory (a tensor with no elements, "
            "dimensions of size 1) are computed differently: FakeTensorMode's view/reshape and "
            "the meta kernel of set_() give contiguous strides where eager keeps the input's; "
            "fake kernels give an empty tensor other strides there (arange(0).reshape((0, 1, 1, "
            "2)).to(torch.float32): (2, 2, 2, 1), eager (2, 0, 0, 1)), which a .grad after "
            "backward follows"
        ),
        link=UNFILED,
        reproducer=DEGENERATE_STRIDES_REPRODUCER,
    ),
]


def registry() -> list[OpDifference]:
    return list(OP_DIFFERENCES)


def match_op_differences(conv: Any, step: Any, mismatches: Sequence[Any], *,
                         without_control: bool = False,
                         real_shapes: dict[str, Any] | None = None) -> list[OpDifference] | None:
    """For each of the step's differences, the active entry explaining it;
    None unless every one is explained.  ``without_control``: no control
    could be built, and only entries the step's errors decide are asked.
    ``real_shapes``: the shape of the real tensor at each mismatch's path."""
    name = getattr(conv.converter, "name", "?")
    active = [e for e in OP_DIFFERENCES if e.active(name)
              and (e.errors_decide or not without_control)]
    found = []
    for m in mismatches:
        same_path = [x for x in mismatches if x.path == m.path]
        shape = (real_shapes or {}).get(m.path)
        entry = next((e for e in active if e.explains(step.source, m, same_path, shape)), None)
        if entry is None:
            return None
        found.append(entry)
    return found
