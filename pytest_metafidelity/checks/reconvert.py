"""`reconvert`: converted again after a change, the fake matches the tensor as it is now.

Within one trace torch converts a real tensor again each time it meets it
(``FakeTensorConverter.from_real_tensor`` / ``MetaConverter.__call__``
look it up in their memo first).  Between two conversions the real tensor
may have changed in place.  This check does, on copies of the tensors
rebuilt from their recipe (the tensors under test are never touched):

1. a fresh instance of the item's converter converts one copy (with its
   base and grad: the memo entry the second conversion meets is its own);
2. that copy is changed in place by one *change*: its metadata (``t_()``,
   ``resize_``, ``set_`` onto a fresh storage, ``as_strided_``) or its
   autograd state (``requires_grad_``, ``detach_``, ``.grad =`` a tensor or
   None);
3. the same converter instance converts that copy again, and the second
   converted tensor is compared with the copy *as it is now*: the
   ``oracle`` reading (shape, stride, storage offset, requires_grad,
   is_leaf, grad presence and the grad itself, ...) and the ``storage``
   size.  Reported, named ``<attribute> after <change>``: what differs
   there and did not differ between the copy and its first conversion; and,
   unless the converter handed back its first object unchanged (stale: the
   memo's difference, whatever else differs), did not differ between the
   changed copy and a fresh converter's conversion of it either (what any
   conversion gets wrong of a tensor is the instantaneous checks' business,
   and their known differences': the invariant here is that converting
   again is as faithful as converting afresh).

Which copy and which change: a seeded choice, the seed a digest of the
tensors' oracle reading (not of the recipe's text, which a reproducer
written from the metadata does not share), so the suite's shrunk example
and its reproducer (``assert_faithful(..., checks=['reconvert'])``) apply
the very same change.  Under a suite item the tensors are drawn by
Hypothesis, so the change varies with them, without a drawn value of its
own that every other check would have to carry.  The change is drawn among
those that alter the tensor (``Change.alters``: not a no-op such as ``t_()``
of a 1-d tensor, not refused for a reason known beforehand such as
``requires_grad_`` of an integer tensor); one the real copy still refuses
(it raises, changing nothing) gives way to the next of them, so nearly
every example checks one.  Why not program steps (``behaviour``)?
A program runs on the converted tensors in lockstep with real ones, never
converting again: a conversion in the middle of a program would need the
real side's tensors to be the ones converted, which the lockstep does not
hold.

What each second conversion did is recorded on the conversion
(``reconvert_records``: the change, whether the converter handed back the
very object of the first conversion, and whether that object still reads as
the copy did before the change): the known differences of this check
(:mod:`..known_differences.definitions.reconvert`) are judged on it.

Skipped for the inner conversions of the ``wrappers`` check, for converters
without ``fresh``, and where the recipe does not rebuild the tensors
faithfully or programs do not apply (``strategies.programs.why_not_plain``:
sparse layouts, subclasses, functional and functorch wrappers, meta tensors).
"""

from __future__ import annotations

import dataclasses
import warnings
import zlib
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..findings import Reconverted
from ..strategies.tensor_facts import grad_of
from . import Conversion, Mismatch, check

if TYPE_CHECKING:
    import torch

    from ..converters import Converter

CHECK = "reconvert"


@dataclasses.dataclass(frozen=True)
class Change:
    """One in-place change of a tensor between two conversions.

    ``source``: the change as Python, applied to a tensor named ``t``;
    ``kind``: ``"metadata"`` or ``"autograd"``; ``apply``: does it;
    ``alters``: whether it would alter ``t`` at all (False: a no-op, or
    refused for a reason known beforehand -- the change is not drawn)."""

    name: str
    kind: str
    source: str
    apply: Callable[[torch.Tensor], None]
    alters: Callable[[torch.Tensor], bool] = lambda t: True


def _t_(t: torch.Tensor) -> None:
    t.t_()


def _resize_(t: torch.Tensor) -> None:
    t.resize_(t.numel() + 3)


def _set_(t: torch.Tensor) -> None:
    import torch

    source = torch.zeros(t.numel() + 2, dtype=t.dtype, device=t.device)
    t.set_(source)  # type: ignore[call-overload]  # (set_(Tensor) is missing from torch's stubs)


def _as_strided_(t: torch.Tensor) -> None:
    t.as_strided_((1,), (1,), 0)


def _requires_grad_(t: torch.Tensor) -> None:
    t.requires_grad_(not t.requires_grad)


def _detach_(t: torch.Tensor) -> None:
    t.detach_()


def _grad_set(t: torch.Tensor) -> None:
    import torch

    # torch.zeros, not zeros_like: zeros_like of a neg view whose storage
    # holds no bytes crashes the process (torch 2.13)
    # (grad_of: a non-leaf's .grad is read without the warning reading it gives)
    t.grad = None if grad_of(t) is not None else torch.zeros(t.shape, dtype=t.dtype,
                                                             device=t.device)


def _can_require_grad(t: torch.Tensor) -> bool:
    return bool(t.is_leaf and (t.dtype.is_floating_point or t.dtype.is_complex))


CHANGES: tuple[Change, ...] = (
    # t_() of a 0- or 1-d tensor is a no-op; of more dimensions, refused
    Change("t_()", "metadata", "t.t_()", _t_, lambda t: t.dim() == 2),
    Change("resize_", "metadata", "t.resize_(t.numel() + 3)", _resize_),
    Change("set_", "metadata", "t.set_(torch.zeros(t.numel() + 2, dtype=t.dtype, device=t.device))",
           _set_),
    Change("as_strided_", "metadata", "t.as_strided_((1,), (1,), 0)", _as_strided_,
           lambda t: (tuple(t.shape), t.stride(), t.storage_offset()) != ((1,), (1,), 0)),
    # requires_grad_(False) of a non-leaf is refused; only floating point
    # and complex tensors can require grad
    Change("requires_grad_", "autograd", "t.requires_grad_(not t.requires_grad)",
           _requires_grad_, _can_require_grad),
    # a no-op where the tensor neither requires grad nor has a grad_fn
    Change("detach_", "autograd", "t.detach_()", _detach_, lambda t: bool(t.requires_grad)),
    # (a non-leaf's .grad too: the oracle reads it, and so does the converter)
    Change(".grad =", "autograd",
           "t.grad = None if t.grad is not None else "
           "torch.zeros(t.shape, dtype=t.dtype, device=t.device)", _grad_set),
)
CHANGES_BY_NAME = {c.name: c for c in CHANGES}


def choose(real: Sequence[torch.Tensor]) -> tuple[int, int]:
    """(index of the tensor to change, a number choosing the change among
    those that alter it): a digest of the tensors' oracle reading."""
    from .oracle import read

    digest = zlib.crc32(repr([sorted((k, repr(v)) for k, v in read(t).items())
                              for t in real]).encode())
    return digest % max(len(real), 1), digest // 7


@check(CHECK, "converted again after an in-place change, the fake matches the tensor as it is now",
       default=False)
def reconvert_check(conv: Conversion) -> list[Mismatch]:
    if conv.inner or not conv.real or any(f is None for f in conv.fake):
        return []
    if getattr(conv.converter, "fresh", None) is None:
        return []
    from ..strategies.programs import why_not_plain

    if why_not_plain(conv.real) is not None:
        return []
    index, pick = choose(conv.real)
    t = conv.real[index]
    candidates = [c for c in CHANGES if _safe_alters(c, t)]
    if not candidates:
        return []
    start = pick % len(candidates)
    return reconvert(conv, index, candidates[start:] + candidates[:start])


def _safe_alters(change: Change, t: torch.Tensor) -> bool:
    try:
        return change.alters(t)
    except Exception:
        return False


def reconvert(conv: Conversion, index: int, changes: Sequence[Change]) -> list[Mismatch]:
    """Rebuild the tensors, convert them with a fresh converter, apply the
    first of ``changes`` that the real copy of tensor ``index`` accepts,
    convert that copy again and compare.  (The check's body; tests call it
    with one change.)"""
    from ..strategies.described import recipe_for
    from .behaviour import rebuild

    recipe = conv.recipe if conv.recipe is not None else recipe_for(conv.real)
    copies = rebuild(recipe, conv.real, recipe.outputs)
    if copies is None:
        return []
    name = conv.names[index]
    converter = conv.converter.fresh()
    try:
        return _reconvert(conv, converter, list(copies), index, name, changes)
    finally:
        converter.close()


def _reconvert(conv: Conversion, converter: Converter, copies: list[torch.Tensor], index: int, name: str,
               changes: Sequence[Change]) -> list[Mismatch]:
    from ..converters import Unsupported
    from ..crash_guards import ConversionCrash
    from ..strategies.torch_errors import release_frames

    copy = copies[index]
    try:
        # Only the copy to change (with its base and grad): the memo entry
        # converting again meets is its own.
        first = converter.convert(copy)
    except (Unsupported, ConversionCrash):
        return []
    except Exception as e:  # converting the copy fails: the conversion check's business
        release_frames(e)
        return []
    baseline = {(m.path, m.attribute) for m in _compare(name, copy, first, converter)}
    before = _reading(name, copy)
    first_reading = _reading(name, first)
    raised = ""
    for change in changes:
        try:
            if not _safe_alters(change, copy):
                continue
            with warnings.catch_warnings():  # torch's warnings about the copy are not news
                warnings.simplefilter("ignore")
                change.apply(copy)
        except Exception as e:
            release_frames(e)
            if _reading(name, copy) == before:
                continue  # the real tensor refused this change: try the next
            # Refused, yet changed (resize_ of an inference tensor outside
            # inference mode resizes it, then raises): converted again as it is.
            raised = f"; it raised {type(e).__name__} but changed the tensor"
        break
    else:
        return []
    try:
        again = converter.convert(copy)
    except (Unsupported, ConversionCrash):
        return []
    except Exception as e:
        release_frames(e)
        if _fresh_differences(conv, name, copy) is None:
            # A fresh converter cannot convert the tensor as it is now either
            # (resize_ leaves a .grad of the old size, which conversion refuses)
            return []
        return [Mismatch(
            check=CHECK, path=name, attribute=f"convert() again after {change.name}",
            real="converts", fake=f"raised {type(e).__name__}: {e}",
            detail=_detail(change, index) + raised)]
    same_object = again is first
    found = [m for m in _compare(name, copy, again, converter)
             if (m.path, m.attribute) not in baseline]
    stale = same_object and _reading(name, again) == first_reading
    if found and not stale:
        # What a fresh converter gets wrong of the tensor as it is now is the
        # instantaneous checks' business (and their known differences').
        # (A stale object is the memo's difference whatever else differs: no
        # fresh conversion needed to judge it.)
        fresh = _fresh_differences(conv, name, copy)
        if fresh is None:
            return []
        baseline |= fresh
        found = [m for m in found if (m.path, m.attribute) not in fresh]
    after = _reading(name, copy)
    # Read on paths reached before and after (a grad or base that comes or
    # goes shows in its holder's "grad is not None" / "_is_view()").
    changed = tuple(sorted(
        f"{key[0]}: {key[1]}" for key in set(before) & set(after)
        if before[key] != after[key] and key not in baseline))
    _record(conv, Reconverted(name, change.name, same_object, stale, changed))
    return [Mismatch(check=CHECK, path=m.path, attribute=f"{m.attribute} after {change.name}",
                     real=m.real, fake=m.fake,
                     detail=_detail(change, index, same_object=same_object) + raised)
            for m in found]


def _fresh_differences(conv: Conversion, name: str, copy: torch.Tensor) -> set[tuple[str, str]] | None:
    """(path, attribute) of what a fresh converter's conversion of ``copy``
    reads differently from it; None where that conversion fails."""
    from ..converters import Unsupported
    from ..crash_guards import ConversionCrash
    from ..strategies.torch_errors import release_frames

    converter = conv.converter.fresh()
    try:
        return {(m.path, m.attribute)
                for m in _compare(name, copy, converter.convert(copy), converter)}
    except (Unsupported, ConversionCrash):
        return None
    except Exception as e:  # the conversion of the tensor as it is now fails: not ours to judge
        release_frames(e)
        return None
    finally:
        converter.close()


def _compare(name: str, real: torch.Tensor, fake: torch.Tensor, converter: Converter) -> list[Mismatch]:
    """The ``oracle`` and ``storage`` checks on one tensor (and what it reaches)."""
    from .oracle import oracle_check
    from .storage import storage_check

    conv = Conversion((name,), (real,), (fake,), converter)
    return oracle_check(conv) + storage_check(conv)


def _reading(name: str, t: torch.Tensor) -> dict[tuple[str, str], str]:
    """What a tensor reads as -- the ``oracle`` reading and the storage size,
    of it and of what it reaches -- by (path, attribute)."""
    from ._util import related
    from .oracle import read
    from .storage import storage_nbytes

    out: dict[tuple[str, str], str] = {}
    for path, u, _ in related(Conversion((name,), (t,), (t,), None), inner=False):
        for attr, value in read(u).items():
            out[(path, attr)] = repr(value)
        out[(path, "untyped_storage().nbytes()")] = repr(storage_nbytes(u))
    return out


def _detail(change: Change, index: int, *, same_object: bool | None = None) -> str:
    text = (f"tensor {index} changed by `{change.source}` ({change.kind}) after its first "
            f"conversion, then converted again by the same converter")
    if same_object is not None:
        text += ("; the converter handed back the first conversion's object" if same_object
                 else "; the converter made a new object")
    return text


def _record(conv: Conversion, record: Reconverted) -> None:
    conv.reconvert_records.append(record)
