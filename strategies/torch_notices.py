"""Torch's notices about experimental dtypes and beta layouts, kept quiet.

Our strategies build complex32 tensors, sparse compressed layouts,
tensors whose sparse invariants are not checked, quantized tensors (deprecated
in torch 2.13), nested tensors of the strided layout and zero-stride tensors whose
grads do not obey the gradient layout contract, and our programs copy complex
values into real tensors, on purpose; torch warns about each the first time.  Those notices are about our choices, not the user's
code, so drawing and building tensors (and the suite) run with them ignored
-- inside ``warnings.catch_warnings``, so the process's warning filters are
the same afterwards.  One notice torch logs, through the ``logging``
module: a filter on its logger drops it within the block.
"""

from __future__ import annotations

import contextlib
import logging
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
    # the nested_strided kind's torch.nested.nested_tensor of the strided layout
    "The PyTorch API of nested tensors is in prototype stage",
)


# Notices torch logs rather than warns: logger -> the start of the message.
# (building a nested jagged tensor asks torch.fx whether it is tracing, which
# logs a deprecation notice for the question, torch >= 2.13)
TORCH_LOG_NOTICES = {
    "torch.fx._symbolic_trace": "is_fx_tracing will return true",
}


class _DropNotice(logging.Filter):
    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


@contextlib.contextmanager
def quiet_torch_notices() -> Iterator[None]:
    """Ignore :data:`TORCH_NOTICES` (and drop :data:`TORCH_LOG_NOTICES`) within the block."""
    filters = [(logging.getLogger(name), _DropNotice(start))
               for name, start in TORCH_LOG_NOTICES.items()]
    for logger, drop in filters:
        logger.addFilter(drop)
    try:
        with warnings.catch_warnings():
            for message in TORCH_NOTICES:
                warnings.filterwarnings("ignore", message=message, category=UserWarning)
            yield
    finally:
        for logger, drop in filters:
            logger.removeFilter(drop)
