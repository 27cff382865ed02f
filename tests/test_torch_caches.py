"""Torch's unbounded caches are emptied during long runs, so memory stays
flat (benchmarks/memory_growth.py measures the effect)."""

from __future__ import annotations

import gc
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from pytest_metafidelity import check_faithful, torch_caches


def live_shape_envs() -> list[weakref.ref]:
    gc.collect()
    return [weakref.ref(o) for o in gc.get_objects() if type(o) is ShapeEnv]


def test_released_caches_let_go_of_the_shape_envs_of_dynamic_conversions() -> None:
    torch_caches.release_unbounded_caches()
    before = {id(ref()) for ref in live_shape_envs()}
    base = torch.randn(6, 4)
    check_faithful(base[1:, ::2], base, converters=["fake-dynamic"])
    kept = [ref for ref in live_shape_envs() if id(ref()) not in before]
    # Torch's caches keep the conversion's ShapeEnv after the conversion is
    # gone: the growth this module exists for.
    assert kept, "no ShapeEnv outlived its conversion: torch no longer needs the release"
    torch_caches.release_unbounded_caches()
    gc.collect()
    assert [ref() for ref in kept if ref() is not None] == []


def test_the_caches_known_to_grow_without_bound_are_found() -> None:
    names = {cache.__name__ for cache in torch_caches.shape_env_caches()}
    assert {"get_implications", "constrain_symbol_range"} <= names
    assert len(torch_caches.module_caches()) == len(torch_caches.UNBOUNDED_MODULE_CACHES)


def test_caches_are_released_every_so_many_conversions(monkeypatch) -> None:
    released = []
    monkeypatch.setattr(torch_caches, "RELEASE_EVERY", 3)
    monkeypatch.setattr(torch_caches, "_since_release", 0)
    monkeypatch.setattr(torch_caches, "release_unbounded_caches",
                        lambda: (released.append(True),
                                 setattr(torch_caches, "_since_release", 0)))
    for _ in range(7):
        torch_caches.conversion_done()
    assert len(released) == 2
    check_faithful(torch.ones(2), converters=["meta", "fake"])  # counts 2 conversions
    assert len(released) == 3


def test_releasing_keeps_the_fake_dispatch_cache_statistics() -> None:
    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.ones(3))
        x + x
        x + x
    info = FakeTensorMode.cache_info()
    torch_caches.release_unbounded_caches()
    after = FakeTensorMode.cache_info()
    assert after.size == 0
    assert (after.hits, after.misses) == (info.hits, info.misses)
