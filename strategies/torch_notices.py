"""Torch's notices about experimental dtypes and beta layouts, kept quiet.

Our strategies build complex32 tensors, sparse compressed layouts,
tensors whose sparse invariants are not checked, quantized tensors (deprecated
in torch 2.13) and zero-stride tensors whose
grads do not obey the gradient layout contract, and our programs copy complex
values into real tensors, on purpose; torch warns about each the first time.  Those notices are about our choices, not the user's
code, so drawing and building tensors (and the suite) run with them ignored
-- inside ``warnings.catch_warnings``, so the process's warning filters are
the same afterwards.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Iterator

TORCH_NOTICES = (
    "ComplexHalf support is experimental",
    "Sparse invariant checks are implicitly disabled",
    r"Sparse \w+ tensor support is in beta state",
    # backward into a grad with the zero strides our tensors have on purpose
    "grad and param do not obey the gradient layout contract",
    # a behaviour program's copy_ of a complex tensor into a real one
    "Casting complex values to real discards the imaginary part",
    # the quantized kind's quantize_per_tensor / quantize_per_channel (torch >= 2.13)
    r".*quantized tensor creation functions that produce tensors with dtype .* are deprecated",
)


@contextlib.contextmanager
def quiet_torch_notices() -> Iterator[None]:
    """Ignore :data:`TORCH_NOTICES` within the block."""
    with warnings.catch_warnings():
        for message in TORCH_NOTICES:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        yield
