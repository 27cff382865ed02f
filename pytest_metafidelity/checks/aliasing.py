"""`aliasing`: the same sharing structure on both sides.

Builds the graph of every involved tensor -- the tensors under test and their
``_base`` chains -- and requires that (1) the partition by storage identity,
(2) the partition by Python object identity and (3) which node is whose
``_base`` are identical for the real and the converted tensors.
"""

from __future__ import annotations

from typing import Any

from . import Conversion, Mismatch, check


def related(conv: Conversion) -> list[tuple[str, Any, Any]]:
    """(path, real, fake) for every tensor under test and the ``_base`` (and
    ``.grad``) reachable from it, walked in lockstep on both sides."""
    out: list[tuple[str, Any, Any]] = []

    def walk(path: str, r: Any, f: Any, depth: int) -> None:
        out.append((path, r, f))
        if depth > 8:
            return
        rb = r._base if _is_view(r) else None
        fb = f._base if _is_view(f) else None
        if rb is not None and fb is not None:
            walk(f"{path}._base", rb, fb, depth + 1)
        rg, fg = _grad(r), _grad(f)
        if rg is not None and fg is not None:
            walk(f"{path}.grad", rg, fg, depth + 1)

    for name, r, f in conv.pairs():
        walk(name, r, f, 0)
    return out


def _is_view(t: Any) -> bool:
    try:
        return bool(t._is_view())
    except Exception:
        return False


def _grad(t: Any) -> Any:
    try:
        return t.grad if t.is_leaf else None
    except Exception:
        return None


def storage_key(t: Any) -> Any:
    """Identity of ``t``'s storage, or None when it has none (sparse, ...)."""
    try:
        return t.untyped_storage()._cdata
    except Exception:
        return None


def _partition(keys: list[Any]) -> list[int]:
    """Canonical labels: node i gets the index of the first node with its key."""
    first: dict[Any, int] = {}
    return [first.setdefault(k, i) if k is not None else -1 for i, k in enumerate(keys)]


@check("aliasing", "same storage sharing, object identity and _base links among all tensors")
def aliasing_check(conv: Conversion) -> list[Mismatch]:
    nodes = related(conv)
    found: list[Mismatch] = []
    paths = [p for p, _, _ in nodes]

    def compare(what: str, real_keys: list[Any], fake_keys: list[Any]) -> None:
        rp, fp = _partition(real_keys), _partition(fake_keys)
        for i, (a, b) in enumerate(zip(rp, fp)):
            if a != b:
                shares_real = [paths[j] for j, x in enumerate(rp) if x == a and j != i and a >= 0]
                shares_fake = [paths[j] for j, x in enumerate(fp) if x == b and j != i and b >= 0]
                found.append(Mismatch(
                    "aliasing", paths[i], what,
                    f"shared with {shares_real or 'nothing'}",
                    f"shared with {shares_fake or 'nothing'}",
                ))
                return

    compare("storage identity", [storage_key(r) for _, r, _ in nodes],
            [storage_key(f) for _, _, f in nodes])
    compare("object identity", [id(r) for _, r, _ in nodes], [id(f) for _, _, f in nodes])
    for path, r, f in nodes:
        if _is_view(r) != _is_view(f):
            found.append(Mismatch("aliasing", path, "_is_view()", _is_view(r), _is_view(f)))
        elif _is_view(r) and (r._base is None) != (f._base is None):
            found.append(Mismatch("aliasing", path, "_base is None", r._base is None, f._base is None))
    return found
