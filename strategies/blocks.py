"""Helpers for kind generators: statements recorded as one ``with`` block, and
statements whose validity is torch's to decide.

Shared by the autograd, wrappers and subclasses kinds.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from .recipe import RecipeBuilder

R = TypeVar("R")


def draw_block(b: RecipeBuilder, context_expr: str, make: Callable[[RecipeBuilder], R]) -> R:
    """Run ``make(sub)`` with ``context_expr`` active and record every line it
    adds as the body of one ``with context_expr:`` block of ``b``.

    ``sub`` is a builder sharing ``b``'s namespace and variable counter, so the
    block may use the tensors built so far, and what it binds stays visible
    after the block (as it does in Python).  Use it for tensors that must be
    made under ``torch.no_grad()``, ``torch.inference_mode()``, or with
    functorch disabled inside a live level.
    """
    sub = RecipeBuilder()
    sub.namespace = b.namespace
    sub.imports = set(b.imports)
    sub._counter = b._counter
    with eval(compile(context_expr, "<metafidelity recipe>", "eval"), b.namespace):
        result = make(sub)
    b._counter = sub._counter
    b.imports |= sub.imports
    if sub.lines:
        b.lines.append(f"with {context_expr}:")
        b.lines.extend("    " + line for line in sub.lines)
    for k in sub.kinds:
        b.kind(k)
    return result


def try_stmt(b: RecipeBuilder, code: str) -> bool:
    """Run ``code`` and record it if torch accepts it; return whether it did.

    For single operations that either fail before changing anything (shape,
    dtype and overlap checks) or succeed.
    """
    try:
        exec(compile(code, "<metafidelity recipe>", "exec"), b.namespace)
    except Exception:
        return False
    b.lines.extend(code.splitlines())
    return True
