"""Recipes: how a generated tensor is built, as Python source that travels with it.

A recipe is a list of Python statements plus the names of the tensors under
test.  Tensors are built by executing exactly that source, so the reproducer a
failure prints is, by construction, the code that built the failing tensors.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import textwrap
from typing import Any, Callable, Iterator, TypeVar

R = TypeVar("R")

# The file name a recipe's code runs under (in tracebacks, and for
# :func:`raised_by_recipe`).
RECIPE_FILENAME = "<metafidelity recipe>"

# Who is told of each recipe line before it runs (the suite's journal: a
# line that crashes torch while an example is being drawn keeps the recipe
# so far, that line last).
_BEFORE_LINE: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "metafidelity_before_line", default=None)


@contextlib.contextmanager
def telling_lines(before_line: Callable[[str], None]) -> Iterator[None]:
    """Within the block, recipe builders call ``before_line`` with a script
    of the recipe so far, its last line the one about to run."""
    token = _BEFORE_LINE.set(before_line)
    try:
        yield
    finally:
        _BEFORE_LINE.reset(token)

_RECIPES: Any = None  # WeakIdKeyDictionary tensor -> Recipe, created lazily


def _registry() -> Any:
    global _RECIPES
    if _RECIPES is None:
        from torch.utils.weak import WeakIdKeyDictionary

        _RECIPES = WeakIdKeyDictionary()
    return _RECIPES


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Source that rebuilds one or more tensors.

    ``lines``: statements, executed in order, with ``torch`` imported.
    ``outputs``: variable names of the tensors under test, in order.
    ``imports``: extra import statements the lines need.
    ``contexts``: context-manager expressions that must be active while the
    tensors are built, converted and checked (functorch levels, modes).
    ``kinds``: the generator kinds that produced it (for reports/events).
    """

    lines: tuple[str, ...]
    outputs: tuple[str, ...]
    imports: tuple[str, ...] = ()
    contexts: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()

    # -- source ---------------------------------------------------------
    def header(self) -> str:
        return "\n".join(("import torch", *sorted(set(self.imports))))

    def body(self) -> str:
        return "\n".join(self.lines)

    def to_python(self, epilogue: str = "") -> str:
        """A self-contained script that rebuilds the tensors.

        ``epilogue`` is appended inside the recipe's contexts, so it can use
        the tensors while e.g. a functorch level is still active.
        """
        return self._script(self.body() + ("\n" + epilogue if epilogue else ""))

    def to_python_function(self, name: str = "tensors", epilogue: str = "") -> str:
        """A self-contained script whose function ``name()`` makes the tensors
        anew on every call (the lines as its body), then binds them once at
        module level for ``epilogue`` -- which may hand ``name`` on, as
        ``assert_faithful(..., remake=name)``, so a check rebuilds them with
        this very code (their autograd history too), not from their metadata."""
        outputs = ", ".join(self.outputs) + ("," if len(self.outputs) == 1 else "")
        function = (f"def {name}():\n"
                    + textwrap.indent(self.body() + f"\nreturn {outputs}", "    ") + "\n")
        return self._script(function + f"\n\n{outputs} = {name}()"
                            + ("\n" + epilogue if epilogue else ""))

    def _script(self, body: str) -> str:
        """``body`` inside the recipe's contexts, after its imports."""
        if self.contexts:
            body = "with " + ", ".join(self.contexts) + ":\n" + textwrap.indent(body, "    ")
        kinds = f"# kinds: {', '.join(self.kinds)}\n" if self.kinds else ""
        return f"{kinds}{self.header()}\n\n{body}\n"

    def __str__(self) -> str:
        return self.to_python()

    # -- building -------------------------------------------------------
    @contextlib.contextmanager
    def active_contexts(self) -> Iterator[dict[str, Any]]:
        """Enter the recipe's contexts; yields the namespace to build in."""
        namespace: dict[str, Any] = {}
        exec(compile(self.header(), RECIPE_FILENAME, "exec"), namespace)
        with contextlib.ExitStack() as stack:
            for expr in self.contexts:
                stack.enter_context(eval(expr, namespace))
            yield namespace

    def build_in(self, namespace: dict[str, Any]) -> tuple[Any, ...]:
        """Execute the lines in ``namespace`` (from :meth:`active_contexts`)."""
        exec(compile(self.body(), RECIPE_FILENAME, "exec"), namespace)
        tensors = tuple(namespace[name] for name in self.outputs)
        registry = _registry()
        for t in tensors:
            if t is not None:  # (a described tensor that could not be rebuilt)
                registry[t] = self
        return tensors

    def build(self) -> tuple[Any, ...]:
        """Build the tensors.  Only for recipes that need no live context."""
        if self.contexts:
            raise RuntimeError(
                "this recipe's tensors only exist inside "
                f"{', '.join(self.contexts)}; use `with recipe.active_contexts() as ns: "
                "recipe.build_in(ns)`"
            )
        with self.active_contexts() as namespace:
            return self.build_in(namespace)

    def build_again(self) -> tuple[Any, ...]:
        """Build the tensors once more, for a check that runs on them.  A
        recipe whose tensors only exist inside its contexts (a functorch
        level) builds them inside the contexts active now -- the caller's,
        who entered them with :meth:`active_contexts` to make the tensors
        being checked -- so that the copies live at the same levels."""
        if not self.contexts:
            return self.build()
        namespace: dict[str, Any] = {}
        exec(compile(self.header(), RECIPE_FILENAME, "exec"), namespace)
        return self.build_in(namespace)


@dataclasses.dataclass(frozen=True)
class FunctionRecipe:
    """Tensors made again by calling ``make`` -- the user's own code that
    made them (``check_faithful(..., remake=make)``): what the program checks
    rebuild their real side and their control from, in place of a recipe.
    ``outputs``: the names the checks give the tensors."""

    make: Callable[[], Any]
    outputs: tuple[str, ...]

    def build(self) -> tuple[Any, ...]:
        made = self.make()
        return tuple(made) if isinstance(made, (tuple, list)) else (made,)

    def build_again(self) -> tuple[Any, ...]:
        return self.build()


def raised_by_recipe(error: BaseException, recipe: Recipe | FunctionRecipe) -> bool:
    """Whether ``error``, raised out of ``recipe.build()``, came from the
    recipe's own code (its lines, or the user's ``make``, and what torch ran
    for them: torch refusing to make the tensors there, under a mode or on
    the meta device), not from building machinery around it (a bug of ours)."""
    make = getattr(getattr(recipe, "make", None), "__code__", None)
    if isinstance(recipe, FunctionRecipe) and make is None:
        return True  # a callable without Python code of its own: all of it is the user's
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == RECIPE_FILENAME or code is make:
            return True
        tb = tb.tb_next
    return False


def recipe_of(tensor: Any) -> Recipe | None:
    """The recipe a generated tensor was built from, or None."""
    if _RECIPES is None:
        return None
    try:
        return _RECIPES.get(tensor)
    except TypeError:
        return None


class RecipeBuilder:
    """Accumulates recipe lines with fresh variable names, executing each line
    as it is added so that later draws can look at the real tensors built so
    far (``builder[name]``)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.imports: set[str] = {"import torch"}
        self.contexts: list[str] = []
        self.kinds: list[str] = []
        self.namespace: dict[str, Any] = {}
        self._stack = contextlib.ExitStack()
        self._counter = 0
        # (builder, context) of the block this builder's lines go in
        self._enclosing: tuple[RecipeBuilder, str] | None = None
        exec("import torch", self.namespace)

    def _lines_with(self, pending: list[str]) -> list[str]:
        """The whole recipe's lines so far, ``pending`` after this builder's."""
        lines = self.lines + pending
        if self._enclosing is None:
            return lines
        outer, context_expr = self._enclosing
        return outer._lines_with([f"with {context_expr}:", *("    " + x for x in lines)])

    def _tell(self, code: str) -> None:
        """Tell whoever listens (:func:`telling_lines`) of ``code`` before it runs."""
        before_line = _BEFORE_LINE.get()
        if before_line is None:
            return
        root = self
        while root._enclosing is not None:
            root = root._enclosing[0]
        lines = self._lines_with(code.splitlines() if code else [])
        before_line(Recipe(lines=tuple(lines) or ("pass",), outputs=(),
                           imports=tuple(sorted((root.imports | self.imports) - {"import torch"})),
                           contexts=tuple(root.contexts), kinds=tuple(root.kinds)).to_python())

    def __getitem__(self, name: str) -> Any:
        return self.namespace[name]

    def fresh(self, prefix: str = "t") -> str:
        name = f"{prefix}{self._counter}"
        self._counter += 1
        return name

    def stmt(self, code: str) -> None:
        """Run ``code`` now and record it."""
        self._tell(code)
        exec(compile(code, RECIPE_FILENAME, "exec"), self.namespace)
        self.lines.extend(code.splitlines())

    def let(self, expr: str, prefix: str = "t") -> str:
        """Bind ``expr`` to a fresh variable, run it, and return the name."""
        name = self.fresh(prefix)
        self.stmt(f"{name} = {expr}")
        return name

    def try_let(self, expr: str, prefix: str = "t") -> str | None:
        """Like :meth:`let`, but returns None (recording nothing) if torch
        rejects the expression, for ops whose validity is torch's to decide."""
        name = self.fresh(prefix)
        self._tell(f"{name} = {expr}")
        try:
            value = eval(compile(expr, RECIPE_FILENAME, "eval"), self.namespace)
        except Exception:
            return None
        self.namespace[name] = value
        self.lines.append(f"{name} = {expr}")
        return name

    def need(self, import_line: str) -> None:
        if import_line not in self.imports:
            exec(import_line, self.namespace)
            self.imports.add(import_line)

    def try_stmt(self, code: str) -> bool:
        """Run ``code`` and record it if torch accepts it; return whether it
        did.  For single operations that either fail before changing anything
        (shape, dtype and overlap checks) or succeed."""
        self._tell(code)
        try:
            exec(compile(code, RECIPE_FILENAME, "exec"), self.namespace)
        except Exception:
            return False
        self.lines.extend(code.splitlines())
        return True

    def within(self, context_expr: str, *, repeat: bool = False) -> None:
        """Make the whole recipe run inside ``context_expr``.  Call it before
        adding any line: the context is entered now and wraps every line.
        An expression already entered is skipped unless ``repeat`` (each
        functorch level entered is one more level)."""
        if context_expr in self.contexts and not repeat:
            return
        if self.lines:
            raise RuntimeError("RecipeBuilder.within() must come before any line")
        self.contexts.append(context_expr)
        self._tell("")
        self.contexts.pop()
        self._stack.enter_context(eval(context_expr, self.namespace))
        self.contexts.append(context_expr)

    def block(self, context_expr: str, make: Callable[["RecipeBuilder"], R]) -> R:
        """Run ``make(sub)`` with ``context_expr`` active and record every line
        it adds as the body of one ``with context_expr:`` block.

        ``sub`` shares this builder's namespace and variable counter, so the
        block may use the tensors built so far and what it binds stays
        visible after it (as in Python).  For tensors made under
        ``torch.no_grad()``, ``torch.inference_mode()``, or with functorch
        disabled inside a live level.
        """
        sub = RecipeBuilder()
        sub.namespace = self.namespace
        sub.imports = set(self.imports)
        sub._counter = self._counter
        sub._enclosing = (self, context_expr)
        with eval(compile(context_expr, RECIPE_FILENAME, "eval"), self.namespace):
            result = make(sub)
        self._counter = sub._counter
        self.imports |= sub.imports
        if sub.lines:
            self.lines.append(f"with {context_expr}:")
            self.lines.extend("    " + line for line in sub.lines)
        for k in sub.kinds:
            self.kind(k)
        return result

    def kind(self, name: str) -> None:
        if name not in self.kinds:
            self.kinds.append(name)

    def close(self) -> None:
        """Leave any context entered by :meth:`within`."""
        self._stack.close()

    def finish(self, outputs: list[str] | tuple[str, ...]) -> Recipe:
        self.close()
        return Recipe(
            lines=tuple(self.lines),
            outputs=tuple(outputs),
            imports=tuple(sorted(self.imports - {"import torch"})),
            contexts=tuple(self.contexts),
            kinds=tuple(self.kinds),
        )
