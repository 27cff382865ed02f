"""Hypothesis strategies for every kind of tensor PyTorch's fakeification
handles.  Installed as ``pytest_metafidelity.strategies``.

Where is a tensor kind generated?  In the module named after it (see
``kinds.KIND_MODULES``); each registers its generator with ``@kind``.
"""

from .api import meta_tensors, recipes, select_kinds, tensor_families
from .config import supported_dtypes
from .kinds import Kind, all_kinds, available_kinds
from .recipe import Recipe, RecipeBuilder, recipe_of

__all__ = [
    "Kind",
    "Recipe",
    "RecipeBuilder",
    "all_kinds",
    "available_kinds",
    "meta_tensors",
    "recipe_of",
    "recipes",
    "select_kinds",
    "supported_dtypes",
    "tensor_families",
]
