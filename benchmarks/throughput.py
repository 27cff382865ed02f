"""Cost of check_faithful against the bare conversion it checks.

    .venv/bin/python benchmarks/throughput.py [CASES_PER_GROUP] [ROUNDS] [GROUP,...]

Draws CASES_PER_GROUP (default 200) cases per group of kinds once
(derandomized Hypothesis, so every run measures the same tensors), builds
them, then times, in ONE process and interleaved round by round (the best of
ROUNDS rounds, default 3, counts; times are the process's CPU time, which
other load on a shared machine disturbs far less than wall time):

* ``bare``: torch alone -- a fresh ``FakeTensorMode().from_tensor`` for
  ``fake``; a mode with a ``ShapeEnv`` and every dimension dynamic for
  ``fake-dynamic`` -- converting the case's tensors, then torch's
  ``assert_metadata_eq`` on each pair (``skip_symbolic`` for dynamic);
* ``metadata``: ``check_faithful(..., checks=["metadata"])``;
* ``all checks``: ``check_faithful(...)`` with every check.

It prints milliseconds per case and the ratios to ``bare`` side by side.
Goal (issue #10): all checks at most 2x bare for ``fake`` and
``fake-dynamic`` on dense tensors and views.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import time
import warnings
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GROUPS = {
    "dense+view": ["dense", "view"],
    "families": ["set_alias", "view_family", "grad_alias", "subclass_family"],
    "sparse": ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"],
    "subclasses": ["two_tensor", "two_tensor_nested", "subclass_view", "subclass_ctx",
                   "nested_jagged"],
}
CONVERTERS = ("fake", "fake-dynamic")


def draw_cases(kinds: list[str], n: int) -> list[tuple[Any, ...]]:
    """n tuples of tensors of ``kinds`` (one tensor, or a family), built."""
    from pytest_metafidelity.strategies import available_kinds, recipes

    kinds = [k for k in kinds if k in available_kinds()]
    cases: list[tuple[Any, ...]] = []

    @settings(max_examples=n, database=None, deadline=None, derandomize=True,
              phases=["generate"], suppress_health_check=list(HealthCheck))
    @given(st.data())
    def collect(data: Any) -> None:
        recipe = data.draw(recipes(kinds=kinds, family=None))
        if recipe.contexts:
            return
        cases.append(tuple(recipe.build()))

    collect()
    return cases


def bare(converter: str) -> Callable[[tuple[Any, ...]], None]:
    """Torch alone: a fresh mode converts the case's tensors (as the
    ``fake`` / ``fake-dynamic`` converters do), then assert_metadata_eq on
    each pair.  Nothing of this package runs but the symbolic context
    (every dimension dynamic) handed to ``from_tensor``."""
    from torch._dynamo.source import ConstantSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch._subclasses.meta_utils import assert_metadata_eq
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from pytest_metafidelity.converters import all_dynamic_context

    dynamic = converter == "fake-dynamic"

    def fail(a: Any, b: Any) -> None:
        if a != b:
            raise AssertionError

    def convert(mode: Any, t: Any, i: int) -> Any:
        if not dynamic:
            return mode.from_tensor(t)
        source = ConstantSource(f"input{i}")
        return mode.from_tensor(t, source=source,
                                symbolic_context=all_dynamic_context(t, source))

    def run(tensors: tuple[Any, ...]) -> None:
        mode = (FakeTensorMode(shape_env=ShapeEnv(), static_shapes=False) if dynamic
                else FakeTensorMode())
        try:
            fakes = [convert(mode, t, i) for i, t in enumerate(tensors)]
        except Exception:
            return  # a refusal: the checked path pays it too
        for t, f in zip(tensors, fakes):
            try:
                assert_metadata_eq(fail, t, f, skip_symbolic=dynamic)
            except Exception:
                pass  # a difference or a layout torch's function refuses

    return run


def checked(converter: str, checks: list[str] | None) -> Callable[[tuple[Any, ...]], None]:
    from pytest_metafidelity.faithful import check_faithful

    def run(tensors: tuple[Any, ...]) -> None:
        check_faithful(*tensors, converters=[converter], checks=checks)

    return run


def time_rounds(paths: dict[str, Callable], cases: list, rounds: int) -> dict[str, float]:
    """Best total CPU seconds per path over ``rounds``; paths interleaved per round."""
    best = {name: float("inf") for name in paths}
    for _ in range(rounds):
        for name, fn in paths.items():
            gc.collect()
            start = time.process_time()
            for tensors in cases:
                fn(tensors)
            best[name] = min(best[name], time.process_time() - start)
    return best


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    groups = sys.argv[3].split(",") if len(sys.argv) > 3 else list(GROUPS)
    warnings.simplefilter("ignore")
    # torch logs (at ERROR) the meta kernels that fail inside its own probing.
    logging.getLogger("torch").setLevel(logging.CRITICAL)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {__import__('torch').__version__}, {n} cases per group, best of {rounds} "
          f"rounds, CPU time, load average {load:.2f} on {os.cpu_count()} CPUs")
    # Warm up imports (torch._dynamo for dynamic shapes) outside the timings.
    warm = draw_cases(["dense"], 2)
    for converter in CONVERTERS:
        for fn in (bare(converter), checked(converter, None)):
            for t in warm:
                fn(t)
    header = (f"{'group':12} {'converter':13} {'bare ms':>8} {'metadata ms':>12} "
              f"{'all ms':>8} {'metadata/bare':>14} {'all/bare':>9}")
    print(header)
    print("-" * len(header))
    for group in groups:
        cases = draw_cases(GROUPS[group], n)
        if not cases:
            continue
        for converter in CONVERTERS:
            t = time_rounds({
                "bare": bare(converter),
                "metadata": checked(converter, ["metadata"]),
                "all": checked(converter, None),
            }, cases, rounds)
            ms = {k: v / len(cases) * 1e3 for k, v in t.items()}
            print(f"{group:12} {converter:13} {ms['bare']:8.2f} {ms['metadata']:12.2f} "
                  f"{ms['all']:8.2f} {ms['metadata'] / ms['bare']:13.2f}x "
                  f"{ms['all'] / ms['bare']:8.2f}x", flush=True)


if __name__ == "__main__":
    main()
