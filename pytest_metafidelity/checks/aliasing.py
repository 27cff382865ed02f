"""`aliasing`: the same sharing structure on both sides.

Builds the graph of every involved tensor -- the tensors under test, their
``_base`` chains, leaves' grads and traceable-wrapper-subclass inner tensors
-- and requires that these are identical for the real and the converted
tensors:

1. the partition by storage identity (which tensors share a storage);
2. the partition by Python object identity (the same real tensor reached by
   two paths is the same converted tensor, e.g. two views' ``_base``);
3. view-ness and ``_base`` (a view's ``_base`` is the converted tensor of the
   real view's ``_base``);
4. the partition by version counter: views share the version counter with
   their base on both sides (probed with
   ``torch.autograd.graph.increment_version`` and restored afterwards);
5. for converters whose fakes carry their real tensors, the partition of the
   carried real tensors by storage identity equals the originals'.
"""

from __future__ import annotations

from typing import Any, Callable

from . import Conversion, Mismatch, check
from ..strategies.tensor_facts import functional_value, storage_key, version_partition
from ._util import base_of, is_view, related, safe

__all__ = ["aliasing_check", "related", "storage_key", "version_partition"]


def _partition(keys: list[Any]) -> list[int]:
    """Canonical labels: node i gets the index of the first node with its
    key.  A node without a key (no storage: sparse, MKLDNN) shares with
    nothing, as a node alone on its storage does: its own index."""
    first: dict[Any, int] = {}
    return [first.setdefault(k, i) if k is not None else i for i, k in enumerate(keys)]


@check("aliasing", "same storage sharing, object identity, _base links and version counters")
def aliasing_check(conv: Conversion) -> list[Mismatch]:
    nodes = related(conv, unique=False)
    found: list[Mismatch] = []
    paths = [p for p, _, _ in nodes]

    def compare(what: str, real_keys: list[Any], fake_keys: list[Any], detail: str = "") -> None:
        rp, fp = _partition(real_keys), _partition(fake_keys)
        for i, (a, b) in enumerate(zip(rp, fp)):
            if a != b:
                shares_real = [paths[j] for j, x in enumerate(rp) if x == a and j != i]
                shares_fake = [paths[j] for j, x in enumerate(fp) if x == b and j != i]
                found.append(Mismatch(
                    check="aliasing", path=paths[i], attribute=what,
                    real=f"shared with {shares_real or 'nothing'}",
                    fake=f"shared with {shares_fake or 'nothing'}",
                    detail=detail,
                ))
                return

    compare("storage identity", [storage_key(r) for _, r, _ in nodes],
            [storage_key(f) for _, _, f in nodes])
    compare("object identity", [id(r) for _, r, _ in nodes], [id(f) for _, _, f in nodes])

    fake_of: dict[int, Any] = {}
    for _, r, f in nodes:
        fake_of.setdefault(id(r), f)
    for path, r, f in nodes:
        if is_view(r) != is_view(f):
            found.append(Mismatch(
                check="aliasing", path=path, attribute="_is_view()", real=is_view(r),
                fake=is_view(f)))
        elif is_view(r):
            rb, fb = base_of(r), base_of(f)
            if (rb is None) != (fb is None):
                found.append(Mismatch(
                    check="aliasing", path=path, attribute="_base is None", real=rb is None,
                    fake=fb is None))
            elif rb is not None and id(rb) in fake_of and fake_of[id(rb)] is not fb:
                found.append(Mismatch(check="aliasing", path=path, attribute="_base identity",
                                      real="the real _base", fake="not the converted real _base"))

    reals, fakes = [r for _, r, _ in nodes], [f for _, _, f in nodes]
    real_vc, fake_vc = version_partition(reals), version_partition(fakes)
    if any(x is not None for x in real_vc):
        # Compare only where both sides have a readable version counter.
        keep = [i for i in range(len(nodes)) if real_vc[i] is not None and fake_vc[i] is not None]
        rp = [real_vc[i] for i in keep]
        fp = [fake_vc[i] for i in keep]
        sub_paths = [paths[i] for i in keep]
        rl, fl = _partition(rp), _partition(fp)
        for k, (a, b) in enumerate(zip(rl, fl)):
            if a != b:
                real_shares = [sub_paths[j] for j, x in enumerate(rl) if x == a and j != k]
                fake_shares = [sub_paths[j] for j, x in enumerate(fl) if x == b and j != k]
                found.append(Mismatch(
                    check="aliasing", path=sub_paths[k], attribute="version counter sharing",
                    real=f"shared with {real_shares or 'nothing'}",
                    fake=f"shared with {fake_shares or 'nothing'}",
                    detail="an in-place op on one bumps the other's _version"))
                break

    if getattr(conv.converter, "carries_real", False):
        from ._util import carried_real

        carried = [carried_real(f) for f in fakes]
        # (a C++ functional fake carries its value's real tensor: the real
        # side's counterpart is the real functional tensor's value, not the
        # functional storage that its views and detach() share)
        values = [functional_value(r) for r in reals]
        if all(c is not None for c in carried):
            compare("carried real_tensor storage identity",
                    [storage_key(r if v is None else v) for r, v in zip(reals, values)],
                    [storage_key(c) for c in carried],
                    "the real tensors the fakes carry must alias as the originals do")
    return found
