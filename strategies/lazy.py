"""Strategies whose arguments are checked when a test runs, not when it is defined.

A public strategy (``meta_tensors(kinds=['view'])``) is usually written in a
decorator or at module level, so an argument error raised while making it
would break the import or pytest's collection of the whole file.  Like
Hypothesis' own strategies, ours make the real strategy on first use
instead: ``@given`` validates its strategies when the test runs, so a bad
argument fails that test alone, with ``InvalidArgument``.  The repr is the
call as written, for Hypothesis' messages.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from hypothesis import strategies as st

T = TypeVar("T")


class LazyStrategy(st.SearchStrategy[T], Generic[T]):
    """``make(**arguments)`` (which validates them and returns the strategy
    to draw from), made on first validation or draw.  Shown as
    ``name(arguments)``, leaving out arguments at their default."""

    def __init__(self, name: str, make: Callable[..., st.SearchStrategy[T]],
                 arguments: dict[str, Any], defaults: dict[str, Any]) -> None:
        super().__init__()
        self._name = name
        self._make = make
        self._arguments = arguments
        self._defaults = defaults
        self._made: st.SearchStrategy[T] | None = None

    @property
    def wrapped_strategy(self) -> st.SearchStrategy[T]:
        """The strategy the arguments make; raises InvalidArgument for bad ones."""
        if self._made is None:
            self._made = self._make(**self._arguments)
        return self._made

    def do_validate(self) -> None:
        self.wrapped_strategy.validate()

    def do_draw(self, data: Any) -> T:
        return data.draw(self.wrapped_strategy)

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self._arguments.items()
                 if not _is_default(v, self._defaults.get(k, _NO_DEFAULT))]
        return f"{self._name}({', '.join(shown)})"


_NO_DEFAULT = object()


def _is_default(value: Any, default: Any) -> bool:
    if value is default:
        return True
    try:
        return bool(default is not _NO_DEFAULT and value == default)
    except Exception:  # values without a plain ==
        return False


def lazy(public: Callable[..., Any], make: Callable[..., st.SearchStrategy[T]],
         arguments: dict[str, Any]) -> LazyStrategy[T]:
    """``make(**arguments)`` as a :class:`LazyStrategy` shown as a call of
    the public function ``public``, whose defaults are left out of the repr."""
    import inspect

    defaults = {p.name: p.default for p in inspect.signature(public).parameters.values()
                if p.default is not inspect.Parameter.empty}
    return LazyStrategy(public.__name__, make, arguments, defaults)
