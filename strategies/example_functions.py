"""An example custom ``torch.autograd.Function`` whose output is a view of
its input: autograd marks such a view ``CreationMeta.IN_CUSTOM_FUNCTION``
(an in-place op on it is refused, since the Function's backward would not
see it), a state of a view that no built-in op makes and that the converter
must carry over.

It lives in an importable module so that a recipe's source (the reproducer)
can import it: ``from pytest_metafidelity.strategies.example_functions
import ViewOfInput``.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["ViewOfInput"]


class ViewOfInput(torch.autograd.Function):
    """Returns an alias view of its input; the gradient passes through."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad
