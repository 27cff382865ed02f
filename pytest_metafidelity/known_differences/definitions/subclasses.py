"""Known differences of traceable wrapper subclasses: views replayed with symbols, through the
Python dispatcher, or through FakeTensorMode's dispatch cache.

Each entry follows the predicate saying exactly when it occurs.
"""

from __future__ import annotations

from ...converters import where
from ..core import Case, KnownDifference, UNFILED
from ..experiments import (
    first_fake_replays_symbol,
    mismatch_signature,
    python_dispatcher_replay_differs,
)
from ..facts import family_wide, memo, needs

ENTRIES: list[KnownDifference] = []


@family_wide
@needs("subclass")
def subclass_view_replays_symbol(case: Case) -> bool:
    """A view of a traceable wrapper subclass whose fake (made with a
    ShapeEnv, every dimension dynamic) has a view function carrying SymInts
    -- the symbols view replay made for its size arguments, or its own
    symbolic sizes where the view replays as as_strided -- other than
    ones specialized to 0 or 1: converting that fake again hands them to
    ShapeEnv.create_symbol."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ...strategies.tensor_facts import is_view
    from ...strategies.torch_errors import safe

    return any(
        is_view(t) and t._base is not None and is_traceable_wrapper_subclass(t)
        and memo(case, ("refake-symint", id(t)),
                  lambda: safe(lambda: first_fake_replays_symbol(t), False))
        for t in case.family
    )


ENTRIES.append(KnownDifference(
    id="refake-subclass-view-symint",
    check="conversion",
    attribute=r"raised",
    applies=subclass_view_replays_symbol,
    converters=where(refakes=True),
    reason=(
        "a fake view of a traceable wrapper subclass made with a ShapeEnv records the "
        "SymInts its view replay created; converting that fake again replays its view "
        "function, whose symint_visitor_fn passes each SymInt to ShapeEnv.create_symbol, "
        "which hashes it: 'TypeError: unhashable type: non-nested SymInt'"
    ),
    link=UNFILED,
    related=(
        "https://github.com/pytorch/pytorch/issues/115782",
        "https://github.com/pytorch/pytorch/pull/118405",
    ),
    reproducer=(
        "import torch\n"
        "from torch._dynamo.source import ConstantSource\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "from torch.testing._internal.two_tensor import TwoTensor\n"
        "v = TwoTensor(torch.randn(2, 3), torch.randn(2, 3)).view(6)\n"
        "env = ShapeEnv()\n"
        "first = FakeTensorMode(shape_env=env, static_shapes=False).from_tensor(\n"
        "    v, source=ConstantSource('v'))\n"
        "try:\n"
        "    FakeTensorMode(shape_env=env, static_shapes=False).from_tensor(\n"
        "        first, source=ConstantSource('f'))\n"
        "except TypeError as e:\n"
        "    assert 'unhashable type: non-nested SymInt' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"^TypeError: unhashable type: non-nested SymInt",
))


@needs("subclass")
def dispatch_cache_zero_element_view(case: Case) -> bool:
    """The family has a zero-element view of a traceable wrapper subclass
    (MetaConverter replays such views op by op -- a dense view is rebuilt
    with as_strided, which the cache handles -- and a view of a
    zero-element tensor is computed through prims.as_strided), and
    converting the tensors again with FakeTensorMode's dispatch cache on
    finds a difference at ``case.path`` that converting them with the cache
    off does not: the difference comes from the cache (each conversion
    starts with an empty cache, so both runs are deterministic)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ...strategies.tensor_facts import is_view
    from ...strategies.torch_errors import safe

    if not memo(case, "zero-element-subclass-view", lambda: any(
            is_view(t) and safe(lambda: t.numel() == 0, False)
            and is_traceable_wrapper_subclass(t) for t in case.family)):
        return False

    def differs() -> frozenset:
        on = mismatch_signature(case, cache=True)
        if not on:  # nothing found with the cache on: nothing the cache made
            return frozenset()
        off = mismatch_signature(case, cache=False)
        return frozenset(path for _, path, _, _ in on - off)

    paths = memo(case, "dispatch-cache", lambda: safe(differs, frozenset()))
    return case.path in paths


ENTRIES.append(KnownDifference(
    id="dispatch-cache-zero-element-view",
    check=("conversion", "aliasing", "metadata", "oracle", "storage"),
    attribute=r"raised|storage identity|storage_offset\(\)|untyped_storage\(\)\.nbytes\(\)",
    applies=dispatch_cache_zero_element_view,
    converters=where(fake_tensors=True, carries_real=False, functional=False),
    reason=(
        "a view of a zero-element fake tensor is computed through prims.as_strided "
        "(_reshape_view_helper), which FakeTensorMode's dispatch cache does not treat as a "
        "view op: on a cache hit it rebuilds the output with empty_strided -- a new "
        "storage, storage offset 0.  View replay of zero-element views (the inner tensors "
        "of a subclass view one after another; a fake converted again) then gives fakes "
        "that do not share their base's storage, or inner tensors whose offsets disagree, "
        "which a subclass may refuse ('AssertionError: Expected a.storage_offset() == "
        "b.storage_offset()').  Modes with real-tensor propagation have no cache"
    ),
    link="https://github.com/pytorch/pytorch/issues/159151",
    reproducer=(
        "import torch\n"
        "from torch._dynamo.source import ConstantSource\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "from torch.testing._internal.two_tensor import TwoTensor\n"
        "FakeTensorMode.cache_clear()\n"
        "v = TwoTensor(torch.zeros(0), torch.zeros(0)).view(-1)\n"
        "f = FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False).from_tensor(\n"
        "    v, source=ConstantSource('v'))\n"
        "S = lambda t: t.untyped_storage()._cdata\n"
        "assert S(v.b) == S(v._base.b) and S(f.b) != S(f._base.b)\n"
    ),
))


@family_wide
@needs("subclass")
def subclass_view_replay_mismatch(case: Case) -> bool:
    """A view of a traceable wrapper subclass whose replay under the
    Python dispatcher does not reproduce its sizes, strides and storage
    offset -- e.g. an empty diagonal() with a non-zero offset: torch._refs
    computes the storage offset the offset would give (ATen leaves an empty
    diagonal at the input's offset)."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ...strategies.tensor_facts import is_view
    from ...strategies.torch_errors import safe

    return any(
        is_view(t) and t._base is not None and is_traceable_wrapper_subclass(t)
        and memo(case, ("replay-refs", id(t)),
                  lambda: safe(lambda: python_dispatcher_replay_differs(t), False))
        for t in case.family
    )


ENTRIES.append(KnownDifference(
    id="subclass-view-replay-refs",
    check="conversion",
    attribute=r"raised",
    applies=subclass_view_replay_mismatch,
    converters=where(carries_real=False, functional=False),
    reason=(
        "MetaConverter rebuilds a view of a traceable wrapper subclass by replaying its view "
        "function on the converted base under the Python dispatcher, then torch._check()s "
        "the result's sizes, strides and storage offset against the real view's.  Under the "
        "Python dispatcher meta view ops run their torch._refs, which can disagree with "
        "ATen: an empty diagonal() with offset k gets storage offset k * stride (ATen keeps "
        "the input's offset for an empty diagonal), and the check raises 'RuntimeError: "
        "Expected cond to be True, but got False'"
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/118405",),
    reproducer=(
        "import torch\n"
        "from torch._dispatch.python import enable_python_dispatcher\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.testing._internal.two_tensor import TwoTensor\n"
        "m = torch.zeros(1, 0, device='meta')\n"
        "with enable_python_dispatcher():\n"
        "    assert m.diagonal(1).storage_offset() == 1\n"
        "assert m.diagonal(1).storage_offset() == torch.zeros(1, 0).diagonal(1).storage_offset() == 0\n"
        "v = TwoTensor(torch.zeros(1, 0), torch.zeros(1, 0)).diagonal(1)\n"
        "try:\n"
        "    FakeTensorMode().from_tensor(v)\n"
        "except RuntimeError as e:\n"
        "    assert 'Expected cond to be True' in str(e)\n"
        "else:\n"
        "    raise AssertionError('converted')\n"
    ),
    raises=r"^RuntimeError: Expected cond to be True",
))


@family_wide
@needs("subclass")
def dense_view_of_a_subclass(case: Case) -> bool:
    """Some tensor converted is a plain (not subclass) view whose base is a
    traceable wrapper subclass: its fake is replayed from the base's fake
    through the view function, and is a FakeTensor whose own view function
    is FakeTensor's."""
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    from ...strategies.tensor_facts import base_of, is_view

    return any(
        is_view(t) and not is_traceable_wrapper_subclass(t)
        and is_traceable_wrapper_subclass(base_of(t))
        for t in case.family
    )


ENTRIES.append(KnownDifference(
    id="refake-dense-view-of-subclass",
    check="conversion",
    attribute=r"raised",
    applies=dense_view_of_a_subclass,
    converters=where(refakes=True),
    reason=(
        "converting a fake again, when it is a plain view of a traceable wrapper subclass "
        "(the values() of a nested jagged tensor that is not itself a view): MetaConverter "
        "replays it through its view function, and for a FakeTensor that is "
        "_FakeTensorViewFunc, whose apply passes MetaConverter's description of the tensor "
        "(a MetaTensorDesc), not the tensor, as self to FakeTensor._view_func_unsafe: "
        "\"TypeError: descriptor '_view_func_unsafe' for 'torch._C.TensorBase' objects "
        "doesn't apply to a 'MetaTensorDesc' object\""
    ),
    link=UNFILED,
    related=("https://github.com/pytorch/pytorch/pull/141926",),
    reproducer=(
        "import torch\n"
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "from torch.fx.experimental.symbolic_shapes import ShapeEnv\n"
        "nt = torch.nested.nested_tensor_from_jagged(torch.randn(6, 3), torch.tensor([0, 2, 6]))\n"
        "v = nt.clone().values()  # a dense view whose base is the nested tensor\n"
        "env = ShapeEnv()\n"
        "fake = FakeTensorMode(shape_env=env).from_tensor(v)\n"
        "try:\n"
        "    FakeTensorMode(shape_env=env).from_tensor(fake)\n"
        "except TypeError as e:\n"
        "    assert \"'_view_func_unsafe'\" in str(e) and \"'MetaTensorDesc'\" in str(e), e\n"
        "else:\n"
        "    raise AssertionError('converted again')\n"
    ),
    raises=(r"^TypeError: descriptor '_view_func_unsafe' for 'torch\._C\.TensorBase' objects "
            r"doesn't apply to a 'MetaTensorDesc' object$"),
))
