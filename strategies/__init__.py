"""Hypothesis strategies for every kind of tensor PyTorch's fakeification
handles.  Installed as ``pytest_metafidelity.strategies``.

Where is a tensor kind generated?  In the module named after it (see
``kinds.KIND_MODULES``); each registers its generator with ``@kind``, which
declares what the kind supports (programs, cost per example, family).
"""

from .api import meta_tensors, recipes, select_kinds, tensor_families
from .config import supported_dtypes
from .kinds import Kind, all_kinds, available_kinds
from .recipe import Recipe, RecipeBuilder, recipe_of

__all__ = [
    "Kind",
    "Recipe",
    "RecipeBuilder",
    "RegisteredSubclass",
    "all_kinds",
    "available_kinds",
    "meta_tensors",
    "recipe_of",
    "recipes",
    "register_subclass",
    "registered_subclasses",
    "select_kinds",
    "supported_dtypes",
    "tensor_families",
    "unregister_subclass",
]

# The user-subclass API lives in the ``subclasses`` kind module.  It is loaded
# on first use, after every kind module before it (all_kinds() imports them in
# KIND_MODULES order), so that importing this package registers no kind out of
# order.
_SUBCLASS_API = ("RegisteredSubclass", "register_subclass", "registered_subclasses", "unregister_subclass")


def __getattr__(name: str) -> object:
    if name in _SUBCLASS_API:
        all_kinds()
        from . import subclasses

        value = getattr(subclasses, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
