"""pytest-metafidelity: prove PyTorch's fakeification faithful.

Importing this package is cheap: torch and Hypothesis load only when one of
the names below is first used, so the pytest plugin costs nothing in runs
without ``--metafidelity``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "assert_faithful": "faithful",
    "check_faithful": "faithful",
    "FidelityError": "faithful",
    "FidelityResult": "faithful",
    "Outcome": "faithful",
    "ProgramNotRun": "outcomes",
    "KnownDifference": "known_differences",
    "KNOWN_DIFFERENCES": "known_differences",
    "UnexpectedlyPassing": "known_differences",
    "Mismatch": "checks",
    "all_checks": "checks",
    "CONVERTERS": "converters",
    "Unsupported": "converters",
    "meta_tensors": "strategies",
    "tensor_families": "strategies",
    "recipes": "strategies",
    "recipe_of": "strategies",
    "all_kinds": "strategies",
    "register_subclass": "strategies",
    "unregister_subclass": "strategies",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_metafidelity' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
