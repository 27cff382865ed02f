"""Faults injected into torch's conversion code, for ``benchmarks/first_failure.py``.

Loaded as a pytest plugin (``-p converter_faults``, with this folder on
``PYTHONPATH``), it patches torch in the processes that run the suite's
examples (xdist workers, or the only process with ``-n 0``); the
environment variable ``METAFIDELITY_FAULT`` names the fault.  Each fault
patches ``MetaTensorDescriber.describe_tensor`` -- the first step of every
conversion, shared by every converter -- so that one field of the
description is wrong for the tensors it names, exactly as a regression in
torch's describer would be.  The faults are chosen so that the items they
affect sit at the start, the middle and the end of the suite's collection
order (``KIND`` below is the first kind, in that order, that shows it).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

FAULT_VARIABLE = "METAFIDELITY_FAULT"


def _replace(**fields: Any) -> Callable[[Any], Any]:
    return lambda desc: dataclasses.replace(desc, **fields)


def _flip_coalesced(desc: Any) -> Any:
    return dataclasses.replace(desc, is_coalesced=not desc.is_coalesced)


def _grow_first_dim(desc: Any) -> Any:
    return dataclasses.replace(desc, size=(desc.size[0] + 1, *desc.size[1:]))


# name -> (the first kind in collection order it shows on, which tensors,
#          what is wrong in their description)
FAULTS: dict[str, tuple[str, Callable[[Any], bool], Callable[[Any], Any]]] = {
    "dense-offset": ("dense", lambda d: d.storage_offset > 0 and not d.is_view,
                     _replace(storage_offset=0)),
    "view-offset": ("view", lambda d: d.is_view and d.storage_offset > 0,
                    _replace(storage_offset=0)),
    "conj-dropped": ("conj_neg", lambda d: d.is_conj, _replace(is_conj=False)),
    "neg-dropped": ("conj_neg", lambda d: d.is_neg, _replace(is_neg=False)),
    "coalesced-flipped": ("sparse_coo", lambda d: d.is_sparse and d.is_coalesced is not None,
                          _flip_coalesced),
    "nonleaf-requires-grad-dropped": (
        "autograd_nonleaf", lambda d: d.requires_grad and not d.is_leaf and not d.is_view,
        _replace(requires_grad=False)),
    "grad-dropped": ("grad_attached", lambda d: d.grad is not None, _replace(grad=None)),
    "parameter-dropped": ("parameter", lambda d: d.is_parameter, _replace(is_parameter=False)),
    "inference-dropped": ("inference", lambda d: d.is_inference, _replace(is_inference=False)),
    "subclass-requires-grad-dropped": (
        "two_tensor", lambda d: d.is_traceable_wrapper_subclass and d.requires_grad,
        _replace(requires_grad=False)),
    "subclass-size": ("two_tensor", lambda d: d.is_traceable_wrapper_subclass and d.ndim > 0
                      and not d.is_nested, _grow_first_dim),
    "subclass-ctx-dropped": ("subclass_ctx", lambda d: d.is_traceable_wrapper_subclass
                             and d.ctx is not None and not d.is_nested, _replace(ctx=None)),
    "nested-requires-grad-dropped": ("nested_jagged", lambda d: d.is_nested and d.requires_grad,
                                     _replace(requires_grad=False)),
}


def install(name: str) -> None:
    """Patch torch's describer with the fault ``name``."""
    from torch._subclasses import meta_utils

    if name not in FAULTS:
        raise SystemExit(f"{FAULT_VARIABLE}={name!r}: no such fault; expected one of "
                         f"{', '.join(FAULTS)}")
    _, applies, wrong = FAULTS[name]
    describe = meta_utils.MetaTensorDescriber.describe_tensor

    def faulty_describe(self: Any, t: Any, **kwargs: Any) -> Any:
        desc = describe(self, t, **kwargs)
        return wrong(desc) if applies(desc) else desc

    meta_utils.MetaTensorDescriber.describe_tensor = faulty_describe  # type: ignore[method-assign]


def pytest_configure(config: Any) -> None:
    from pytest_metafidelity.suite.isolation import is_distributing

    name = os.environ.get(FAULT_VARIABLE)
    # Not in an xdist controller: it converts nothing, and importing torch
    # there would delay its workers' start.
    if name and not is_distributing(config):
        install(name)
