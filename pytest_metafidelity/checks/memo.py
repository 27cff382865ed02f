"""`memo`: the converter's memo.

1. Converting a tensor again through the same converter instance gives the
   very same converted object -- for the tensors under test and for the
   bases and grads reached from them (a view's ``_base`` converted on its own
   is the converted view's ``_base``).
2. Converted tensors are released when no longer referenced: once every
   reference to the converted tensors is dropped and the garbage collector
   has run, no converted tensor is still alive while the converter is open
   -- neither memo nor mode keeps them.  Under
   :func:`~pytest_metafidelity.faithful.check_faithful` this is probed on
   the conversion under test itself, after the other checks and the triage
   of known differences (``Conversion.release_probes``); on a Conversion
   without probes (built by hand) a fresh instance of the converter converts
   the tensors again (in the same order) and drops its results.

Skipped for the inner-tensor conversions of the ``wrappers`` check: inner
tensors are not converted on their own.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any, Callable

from ..strategies.torch_errors import release_frames
from . import Conversion, Mismatch, check
from ._util import related


@check("memo", "converting again gives the same object; converted tensors are released")
def memo_check(conv: Conversion) -> list[Mismatch]:
    if conv.inner:
        return []
    from ..converters import Unsupported
    from ..crash_guards import ConversionCrash

    found: list[Mismatch] = []
    for path, real, fake in related(conv, inner=False):
        try:
            again = conv.converter.convert(real)
        except (Unsupported, ConversionCrash):
            # Refused, or not attempted because torch would crash: the first
            # conversion may have changed the real tensor (functional tensors
            # are synced when described), which the purity check reports.
            continue
        except Exception as e:
            release_frames(e)
            found.append(Mismatch(
                check="memo", path=path, attribute="convert() again",
                real="the same converted tensor", fake=f"raised {type(e).__name__}: {e}"))
            continue
        if again is not fake:
            found.append(Mismatch(
                check="memo", path=path, attribute="convert() again is the same object", real=True,
                fake=False, detail=f"got another {type(again).__name__}"))
        del again
    if conv.release_probes is not None:
        conv.release_probes.append(release_probe(conv))
    else:
        found += _released(conv)
    return found


def _weak_refs(tensors: Any) -> list[Any]:
    refs: list[Any] = []
    for t in tensors:
        try:
            refs.append(weakref.ref(t))
        except TypeError:
            refs.append(None)
    return refs


def release_probe(conv: Conversion) -> Callable[[], list[Mismatch]]:
    """A probe holding only weak references to the converted tensors: called
    once every other reference is dropped, it reports those still alive.

    The checks probe the converted tensors, and what their probing leaves
    behind can keep one alive (torch logs an error raised inside a fake
    op with its traceback, and pytest keeps the log records until the test
    ends).  So a tensor still alive is not reported on that evidence: the
    probe then judges as the check does on its own, by converting the
    tensors again through a fresh converter that nothing else touches."""
    refs = _weak_refs(conv.fake)
    again = Conversion(conv.names, conv.real, (None,) * len(conv.real), conv.converter,
                       order=conv.order)

    def probe() -> list[Mismatch]:
        # No garbage collection here (~0.2 s with torch loaded): a tensor
        # alive now goes to the fresh converter, which collects if it must.
        if not any(ref is not None and ref() is not None for ref in refs):
            return []
        return _released(again)

    return probe


def _convert_fresh(conv: Conversion) -> tuple[list[Any], Any]:
    """Convert the tensors through a fresh converter, as the conversion under
    test did (same order, all results alive until the last is made); return
    weak references to the results."""
    fresh = getattr(conv.converter, "fresh", None)
    if fresh is None:
        return [], None
    converter = fresh()
    order = conv.order if conv.order is not None else range(len(conv.real))
    out: list[Any] = [None] * len(conv.real)
    for i in order:
        out[i] = converter.convert(conv.real[i])
    refs = _weak_refs(out)
    del out
    return refs, converter


def _released(conv: Conversion) -> list[Mismatch]:
    from ..converters import Unsupported
    from ..crash_guards import ConversionCrash

    try:
        refs, converter = _convert_fresh(conv)
    except (Unsupported, ConversionCrash):
        return []
    except Exception as e:
        release_frames(e)
        return [Mismatch(
            check="memo", path=", ".join(conv.names), attribute="fresh converter",
            real="converts again", fake=f"raised {type(e).__name__}: {e}")]
    try:
        return _still_alive(conv.names, refs)
    finally:
        if converter is not None:
            converter.close()


def _still_alive(names: tuple[str, ...], refs: list[Any]) -> list[Mismatch]:
    # Reference counting frees most converted tensors at once; a full
    # collection (~0.1 s with torch loaded) only when one is still alive.
    if any(ref is not None and ref() is not None for ref in refs):
        gc.collect()
    found = []
    for name, ref in zip(names, refs):
        alive = ref() if ref is not None else None
        if alive is not None:
            referrers = len(gc.get_referrers(alive))
            del alive
            found.append(Mismatch(
                check="memo", path=name, attribute="released when no longer referenced", real=True,
                fake=False,
                detail=f"the converted tensor is still alive after gc ({referrers} referrer(s)) "
                       "while the converter is open"))
    return found
