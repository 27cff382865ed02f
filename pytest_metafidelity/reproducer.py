"""Reproducers: runnable Python that rebuilds the tensors and re-runs the check.

Tensors drawn from our strategies carry their recipe, which is replayed
verbatim.  For tensors made by hand, :func:`describe_as_recipe` writes a
recipe from their metadata (dense strided tensors, views and shared storages;
other layouts get a comment saying what could not be rebuilt), with the
storages' bytes when they are small enough to print.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Sequence

from .strategies.recipe import Recipe, recipe_of


def recipe_for(tensors: Sequence[Any]) -> Recipe:
    """The recipe that rebuilds ``tensors`` in order, outputs renamed if needed."""
    recipes = [recipe_of(t) for t in tensors]
    first = recipes[0] if recipes else None
    if first is not None and all(r is first for r in recipes):
        # Map each tensor to the output it is (the same recipe may have built
        # them in another order, or the user passes a subset).
        with_names = _outputs_matching(first, tensors)
        if with_names is not None:
            return Recipe(first.lines, with_names, first.imports, first.contexts, first.kinds)
    return describe_as_recipe(tensors)


def _outputs_matching(recipe: Recipe, tensors: Sequence[Any]) -> tuple[str, ...] | None:
    if len(tensors) == len(recipe.outputs):
        return recipe.outputs
    return None


# Storages up to this size are rebuilt with their bytes (values matter to the
# checks of carried real tensors); larger ones, and meta storages, are empty.
MAX_STORAGE_BYTES_KEPT = 4096


def describe_as_recipe(tensors: Sequence[Any]) -> Recipe:
    """Write a recipe from the tensors' metadata and, for storages of at most
    MAX_STORAGE_BYTES_KEPT bytes, their contents."""
    b = _Describer()
    names = [b.tensor(t) for t in tensors]
    return Recipe(tuple(b.lines), tuple(names), (), (), ("described",))


class _Describer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.storages: dict[int, str] = {}
        self.tensors: dict[int, str] = {}
        self.counter = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter - 1}"

    def tensor(self, t: Any) -> str:
        if id(t) in self.tensors:
            return self.tensors[id(t)]
        name = self.fresh("t")
        self.tensors[id(t)] = name
        try:
            self._describe(name, t)
        except Exception as e:  # wrappers without storage, exotic subclasses
            self.lines.append(
                f"{name} = None  # cannot rebuild a {type(t).__name__} from metadata alone "
                f"({type(e).__name__}); shape {tuple(t.shape)}, dtype {t.dtype}"
            )
        return name

    def _describe(self, name: str, t: Any) -> None:
        torch = _torch()
        dev = "" if t.device.type == "cpu" else f", device={str(t.device)!r}"
        plain = type(t) in (torch.Tensor, torch.nn.Parameter)
        if t.layout != torch.strided or t.is_nested or not plain:
            self.lines.append(
                f"{name} = None  # cannot rebuild a {type(t).__name__} ({t.layout}) from metadata "
                f"alone; shape {tuple(t.shape)}, dtype {t.dtype}"
            )
            return
        shape, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
        if t._is_view() and t._base is not None:
            base = self.tensor(t._base)
            self.lines.append(f"{name} = {base}.as_strided({shape}, {stride}, {offset})")
        else:
            storage = t.untyped_storage()
            key = storage._cdata
            if key not in self.storages:
                sname = self.fresh("s")
                self.storages[key] = sname
                self.lines.append(f"{sname} = {_storage_expr(storage, dev)}")
            self.lines.append(
                f"{name} = torch.empty(0, dtype={t.dtype}{dev}).set_("
                f"{self.storages[key]}, {offset}, {shape}, {stride})"
            )
            if t.requires_grad:
                self.lines.append(f"{name}.requires_grad_()")
        if t.is_conj():
            self.lines.append(f"{name} = {name}.conj()  # conj bit")
        if t.is_neg():
            self.lines.append(f"{name} = torch._neg_view({name})  # neg bit")


def _storage_expr(storage: Any, dev: str) -> str:
    """Source for a storage of the same size: with the same bytes when it is
    small and its bytes can be read, else uninitialized."""
    torch = _torch()
    nbytes = storage.nbytes()
    if 0 < nbytes <= MAX_STORAGE_BYTES_KEPT and storage.device.type != "meta":
        try:
            data = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
            hex_bytes = bytes(data.cpu().tolist()).hex()
        except Exception:  # a storage without readable data
            pass
        else:
            to = f".to({str(storage.device)!r})" if dev else ""
            return (f"torch.frombuffer(bytearray.fromhex({hex_bytes!r}), dtype=torch.uint8)"
                    f".clone(){to}.untyped_storage()")
    return f"torch.empty({nbytes}, dtype=torch.uint8{dev}).untyped_storage()"


def _torch() -> Any:
    import torch

    return torch


def reproducer_source(
    recipe: Recipe,
    *,
    converters: Sequence[str],
    checks: Sequence[str] | None,
    order: Sequence[int] | None = None,
    program: Any = None,
) -> str:
    """A standalone script: rebuild the tensors, then run the same check
    (with ``program``, a ``behaviour`` program: its source is printed
    between the recipe and the conversion)."""
    args = ", ".join(recipe.outputs)
    extra = f", checks={list(checks)!r}" if checks else ""
    if order is not None and list(order) != list(range(len(recipe.outputs))):
        extra += f", order={list(order)!r}"
    steps = ""
    if program is not None and getattr(program, "steps", ()):
        steps = ("\nfrom pytest_metafidelity.strategies.programs import Program\n"
                 f"program = Program.parse({_quoted(program.source)}, "
                 f"inputs={list(program.inputs)!r})\n")
        extra += ", program=program"
    epilogue = (
        f"{steps}\n" + converter_imports(converters)
        + "from pytest_metafidelity import assert_faithful\n"
        f"assert_faithful({args}, converters={list(converters)!r}{extra})"
    )
    return recipe.to_python(epilogue=epilogue)


def _quoted(source: str) -> str:
    """``source`` as a readable Python string literal (a triple-quoted block
    where it can be)."""
    if "'''" in source or "\\" in source:
        return repr(source)
    return "'''\n" + source + "\n'''"


def converter_imports(converters: Sequence[str]) -> str:
    """Source importing the modules that registered converters from outside
    this package (``register_converter``), so the reproducer has them too."""
    from .converters import CONVERTERS

    lines = []
    for name in converters:
        spec = CONVERTERS.get(name)
        module = getattr(spec.factory, "__module__", "") if spec else ""
        if not module or module.startswith("pytest_metafidelity"):
            continue
        path = getattr(sys.modules.get(module), "__file__", None)
        if path:
            folder = os.path.dirname(os.path.abspath(path))
            lines.append(f"import sys; sys.path.insert(0, {folder!r})")
        lines.append(f"import {module}  # registers converter {name!r}")
    return "".join(line + "\n" for line in lines)
