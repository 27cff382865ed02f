"""`autograd`: autograd metadata the converter must reproduce.

1. ``creation_meta`` of views is equal (it decides whether an in-place op on
   a view -- e.g. one made under ``no_grad`` or by a multi-output op --
   raises: it must fail on both sides or on neither).  Read with
   ``torch._C._autograd._get_creation_meta`` where torch has it.
2. Non-leaves stay non-leaves, and backward through a converted non-leaf
   whose history the converter cut (a non-leaf that is not a view, or a view
   of a non-leaf) raises the converter's designed error, "Tried to backward()
   through example input" (for functional tensors, whose autograd metadata is
   mirrored, "Cannot backprop through mirrored meta") -- never silently
   computes gradients.  The probe
   uses ``torch.autograd.grad``, so no ``.grad`` is accumulated anywhere.
3. ``grad_dtype`` of leaves that require grad (where torch has it).
4. ``retains_grad`` of non-leaves.
"""

from __future__ import annotations

from typing import Any

from ..strategies.torch_errors import release_frames
from . import Conversion, Mismatch, check
from ..strategies.tensor_facts import creation_meta, leaves_reached
from ._util import base_of, is_view, related, safe

DESIGNED_ERROR = "Tried to backward() through example input"
# The converter's designed errors: DelayedError for a cut history; the Error
# node torch._mirror_autograd_meta_to gives (C++) functional tensors.
DESIGNED_ERRORS = (DESIGNED_ERROR, "Cannot backprop through mirrored meta")


def backward_probe(t: Any) -> str | None:
    """Run a backward through ``t`` without accumulating grads; the error
    message, or None when it succeeded."""
    import torch

    try:
        with torch.enable_grad():
            leaves = leaves_reached(t)
            grad_out = torch.ones_like(t)
            if leaves:
                torch.autograd.grad(t, leaves, grad_outputs=grad_out, allow_unused=True)
            else:  # no leaf to accumulate into: a plain backward has no side effect
                torch.autograd.backward(t, grad_tensors=grad_out)
    except Exception as e:
        release_frames(e)
        return f"{type(e).__name__}: {e}"
    return None


def _cut_history(real: Any) -> bool:
    """True when the converter must cut ``real``'s autograd history: it is a
    non-leaf and so is the root of its view chain."""
    root = base_of(real) if is_view(real) else real
    if root is None:
        root = real
    return bool(real.requires_grad and not real.is_leaf and not root.is_leaf)


@check("autograd", "creation_meta, non-leaf-ness and its designed backward error, grad_dtype, retains_grad")
def autograd_check(conv: Conversion) -> list[Mismatch]:
    found: list[Mismatch] = []
    for path, real, fake in related(conv, inner=False):
        rc, fc = creation_meta(real), creation_meta(fake)
        if rc is not None and fc is not None and rc != fc:
            found.append(Mismatch(
                check="autograd", path=path, attribute="creation_meta", real=rc, fake=fc,
                detail="decides whether an in-place op on the view raises"))
        real_leaf, fake_leaf = safe(lambda: real.is_leaf), safe(lambda: fake.is_leaf)
        if real_leaf is False and fake_leaf is True:
            found.append(Mismatch(
                check="autograd", path=path, attribute="non-leaf stays non-leaf", real=True,
                fake=False))
        elif real_leaf is False and _cut_history(real):
            # Probe where the converter cut the history: the root of the view
            # chain (a view's own backward may not run on symbolic sizes).
            root = base_of(fake) if is_view(fake) else fake
            err = backward_probe(root if root is not None else fake)
            if err is None or not any(designed in err for designed in DESIGNED_ERRORS):
                found.append(Mismatch(
                    check="autograd", path=path,
                    attribute="backward() through a converted non-leaf",
                    real=f"raises {DESIGNED_ERROR!r}", fake=err or "succeeded"))
        if real_leaf and real.requires_grad and hasattr(real, "grad_dtype"):
            rg, fg = safe(lambda: real.grad_dtype), safe(lambda: fake.grad_dtype)
            if rg != fg:
                found.append(Mismatch(
                    check="autograd", path=path, attribute="grad_dtype", real=rg, fake=fg))
        if real_leaf is False:
            rr, fr = safe(lambda: real.retains_grad), safe(lambda: fake.retains_grad)
            if rr != fr:
                found.append(Mismatch(
                    check="autograd", path=path, attribute="retains_grad", real=rr, fake=fr))
    return found
