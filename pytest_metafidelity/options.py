"""Command-line / ini / environment options of ``pytest --metafidelity``.

Each option is settable three ways, highest precedence first: the command
line, an environment variable (for HypoFuzz and CI systems that bypass the
command line), and an ini-file key.  This module only declares and parses;
names are validated against the registries in :func:`resolve`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from typing import Any

from .option_error import OptionError  # also importable from here, as it always was

# name, env var, help, kind ("bool" | "list" | "int" | "float" | "str")
OPTIONS = (
    ("metafidelity", "METAFIDELITY", "run the built-in fakeification fidelity suite", "bool"),
    ("metafidelity_kinds", "METAFIDELITY_KINDS",
     "comma-separated tensor kinds to generate (default: every kind this torch can build)", "list"),
    ("metafidelity_converters", "METAFIDELITY_CONVERTERS",
     "comma-separated converters to test (default: all)", "list"),
    ("metafidelity_checks", "METAFIDELITY_CHECKS",
     "comma-separated checks to run; 'default' stands for the default ones "
     "(default: every check but the opt-in ones, e.g. 'default,reconvert' adds one)", "list"),
    ("metafidelity_devices", "METAFIDELITY_DEVICES",
     "comma-separated devices for real tensors: cpu, meta, cuda, cuda:N "
     "(default: cpu, meta and every visible GPU)", "list"),
    ("metafidelity_examples", "METAFIDELITY_EXAMPLES",
     "Hypothesis examples per suite item (overrides the profile and the time budget)", "int"),
    ("metafidelity_budget", "METAFIDELITY_BUDGET",
     "total seconds for the suite, shared among its items (default from the profile)", "float"),
    ("metafidelity_profile", "METAFIDELITY_PROFILE",
     "ci (derandomized, fixed examples), dev (default, time budget) or nightly (many examples)",
     "str"),
    ("metafidelity_strict", "METAFIDELITY_STRICT",
     "known differences fail, and so does a known difference that no longer occurs", "bool"),
    ("metafidelity_report", "METAFIDELITY_REPORT", "write a JSON report to this path", "str"),
    ("metafidelity_reproducers", "METAFIDELITY_REPRODUCERS",
     "directory for standalone reproducer scripts (default: metafidelity-reproducers)", "str"),
    ("metafidelity_example_timeout", "METAFIDELITY_EXAMPLE_TIMEOUT",
     "seconds one example may take before it is reported as hung (default 300; 0: no limit)",
     "float"),
    ("metafidelity_run_known_crashes", "METAFIDELITY_RUN_KNOWN_CRASHES",
     "run the conversions the registry knows to crash torch, each in a child process, to see "
     "whether they still do", "bool"),
    ("metafidelity_shrink_crashes", "METAFIDELITY_SHRINK_CRASHES",
     "seconds spent shrinking crashed and hung cases, in child processes, at the end of the "
     "run (default 60; 0: do not shrink)", "float"),
    ("metafidelity_database", "METAFIDELITY_DATABASE",
     "Hypothesis example database(s) for the suite: PATH, redis://HOST:PORT/DB or "
     "github-artifact:OWNER/REPO[:ARTIFACT], ro: for read-only, comma-separated to combine "
     "(overrides the profile's database; every runner sharing one must run the same Hypothesis)",
     "str"),
    ("metafidelity_shard", "METAFIDELITY_SHARD",
     "run shard I of N of the suite items (I/N; the same split on every machine)", "str"),
)


@dataclasses.dataclass(frozen=True)
class Profile:
    """What a profile means for the suite's Hypothesis settings."""

    name: str
    examples: int | None  # fixed examples per item, or None for the time budget
    budget: float | None  # total seconds, when examples is None
    derandomize: bool
    use_database: bool
    summary: str


PROFILES = {
    p.name: p
    for p in (
        Profile("dev", None, 40.0, False, True,
                "time-boxed (40 s in all, 3 to 50 examples per item), random, example database on"),
        Profile("ci", 5, None, True, False,
                "5 examples per item, derandomized, no example database: the same cases every run"),
        Profile("nightly", 500, None, False, True,
                "500 examples per item, random: long fuzzing runs"),
    )
}
DEFAULT_EXAMPLE_TIMEOUT = 300.0
DEFAULT_SHRINK_CRASHES = 60.0


def add_options(parser: Any) -> None:
    group = parser.getgroup("metafidelity", "fakeification fidelity (pytest-metafidelity)")
    for name, env, help_text, kind in OPTIONS:
        flag = "--" + name.replace("_", "-")
        help_full = f"{help_text} [env {env}, ini {name}]"
        if kind == "bool":
            group.addoption(flag, action="store_true", default=None, dest=name, help=help_full)
            parser.addini(name, help_text, type="bool", default=False)
        else:
            group.addoption(flag, action="store", default=None, dest=name, help=help_full,
                            metavar=name.removeprefix("metafidelity_").upper())
            parser.addini(name, help_text, default="")


def raw_value(config: Any, name: str) -> Any:
    """The option's value: command line, else environment, else ini."""
    kind = next(k for n, _, _, k in OPTIONS if n == name)
    env = next(e for n, e, _, _ in OPTIONS if n == name)
    value = config.getoption(name)
    if value is None and os.environ.get(env):
        value = os.environ[env]
        if kind == "bool":
            value = value.strip().lower() not in ("", "0", "false", "no", "off")
    if value is None:
        value = config.getini(name)
        if value in ("", None) or (kind == "bool" and not value):
            value = None
    return value


def is_enabled(config: Any) -> bool:
    return bool(raw_value(config, "metafidelity"))


@dataclasses.dataclass(frozen=True)
class SuiteOptions:
    kinds: tuple[str, ...]
    converters: tuple[str, ...]
    checks: tuple[str, ...]
    devices: tuple[str, ...]
    profile: Profile
    examples: int | None
    budget: float | None
    strict: bool
    report: str | None
    reproducers: str
    example_timeout: float | None = DEFAULT_EXAMPLE_TIMEOUT  # None: no limit
    run_known_crashes: bool = False
    shrink_crashes: float = DEFAULT_SHRINK_CRASHES  # seconds; 0: off
    database: tuple[Any, ...] = ()  # databases.DatabaseSpec, from --metafidelity-database
    shard: tuple[int, int] | None = None  # (I, N) from --metafidelity-shard
    # (device, reason): GPUs asked for that this machine does not have; the
    # run goes on with the other devices (none left: the suite is skipped)
    skipped_devices: tuple[tuple[str, str], ...] = ()
    # False: kinds, converters, checks and devices are not resolved yet (an
    # xdist controller given none of them: see resolve's ``registries``)
    complete: bool = True


def _split(value: Any) -> list[str]:
    if value is None:
        return []
    return [v.strip() for v in str(value).split(",") if v.strip()]


def _choose(option: str, given: list[str], allowed: list[str], default: list[str]) -> tuple[str, ...]:
    for v in given:
        if v not in allowed:
            raise OptionError(
                f"--{option.replace('_', '-')}: unknown value {v!r}; valid: {', '.join(allowed)}"
            )
    return tuple(given or default)


def _number(option: str, value: Any, cast: Any, low: float) -> Any:
    if value is None:
        return None
    try:
        number = cast(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < low:
        raise OptionError(
            f"--{option.replace('_', '-')}: {value!r} is not valid; expected a number >= {low}"
        )
    return number


def _devices(given: list[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The devices to use, and the GPUs asked for but not visible here with
    why (a nightly GPU job may land on a machine without one)."""
    from .strategies.config import missing_gpu_reason, visible_devices

    known = list(visible_devices())
    if not given:
        return tuple(known), ()
    devices, skipped = [], []
    for device in ("cuda:0" if d == "cuda" else d for d in given):
        if device in known:
            devices.append(device)
        elif re.fullmatch(r"cuda:[0-9]+", device):
            skipped.append((device, missing_gpu_reason(device)))
        else:
            raise OptionError(f"--metafidelity-devices: unknown value {device!r}; valid: "
                              f"cpu, meta, cuda, cuda:N (here: {', '.join(known)})")
    return tuple(dict.fromkeys(devices)), tuple(dict.fromkeys(skipped))


# The options whose values name things in torch's or our registries.
REGISTRY_OPTIONS = ("metafidelity_kinds", "metafidelity_converters", "metafidelity_checks",
                    "metafidelity_devices")


def resolve(config: Any, *, registries: bool = True) -> SuiteOptions:
    """Validate every option against the registries (imports torch).

    ``registries=False`` (the xdist controller, which runs no example): when
    none of the options naming registry entries was given, there is nothing
    there to validate, and torch is not imported -- the workers start that
    much sooner.  The result is then not ``complete``: its kinds,
    converters, checks and devices are empty until resolved again."""
    if not registries and not any(raw_value(config, name) for name in REGISTRY_OPTIONS):
        return dataclasses.replace(_resolve_plain(config), complete=False)
    with warnings.catch_warnings():
        # torch warns at import when numpy is absent; numpy is not needed here.
        warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
        import torch  # noqa: F401

    from .checks import all_checks, default_checks
    from .converters import CONVERTERS
    from .strategies.kinds import all_kinds, available_kinds

    opts = _resolve_plain(config)
    registry, usable = all_kinds(), available_kinds()
    kinds = _choose("metafidelity_kinds", _split(raw_value(config, "metafidelity_kinds")),
                    list(registry), list(usable))
    unusable = [k for k in kinds if k not in usable]
    if unusable:
        raise OptionError(
            "--metafidelity-kinds: "
            + "; ".join(f"{k!r} cannot be built with this torch ({registry[k].unavailable()})"
                        for k in unusable)
        )
    available_converters = [n for n, s in CONVERTERS.items() if s.unavailable() is None]
    converters = _choose("metafidelity_converters",
                         _split(raw_value(config, "metafidelity_converters")),
                         list(CONVERTERS), available_converters)
    given = _split(raw_value(config, "metafidelity_checks"))
    # "default" stands for the checks run when none are named; an opt-in
    # check is added by name after it.
    given = [c for g in given for c in (default_checks() if g == "default" else [g])]
    checks = _choose("metafidelity_checks", list(dict.fromkeys(given)),
                     [*all_checks(), "default"], default_checks())
    devices, skipped_devices = _devices(_split(raw_value(config, "metafidelity_devices")))
    return dataclasses.replace(opts, kinds=kinds, converters=converters, checks=checks,
                               devices=devices, skipped_devices=skipped_devices)


def _resolve_plain(config: Any) -> SuiteOptions:
    """The options that name nothing in a registry (no torch import)."""
    from . import databases, shards

    profile_name = raw_value(config, "metafidelity_profile") or "dev"
    if profile_name not in PROFILES:
        raise OptionError(
            f"--metafidelity-profile: unknown value {profile_name!r}; valid: {', '.join(PROFILES)}"
        )
    profile = PROFILES[profile_name]
    examples = _number("metafidelity_examples", raw_value(config, "metafidelity_examples"), int, 1)
    budget = _number("metafidelity_budget", raw_value(config, "metafidelity_budget"), float, 0.1)
    if examples is None and budget is None:
        examples, budget = profile.examples, profile.budget
    timeout = _number("metafidelity_example_timeout",
                      raw_value(config, "metafidelity_example_timeout"), float, 0)
    shrink = _number("metafidelity_shrink_crashes",
                     raw_value(config, "metafidelity_shrink_crashes"), float, 0)
    return SuiteOptions(
        kinds=(),
        converters=(),
        checks=(),
        devices=(),
        profile=profile,
        examples=examples,
        budget=budget,
        strict=bool(raw_value(config, "metafidelity_strict")),
        report=raw_value(config, "metafidelity_report"),
        reproducers=raw_value(config, "metafidelity_reproducers") or "metafidelity-reproducers",
        example_timeout=DEFAULT_EXAMPLE_TIMEOUT if timeout is None else (timeout or None),
        run_known_crashes=bool(raw_value(config, "metafidelity_run_known_crashes")),
        shrink_crashes=DEFAULT_SHRINK_CRASHES if shrink is None else shrink,
        database=databases.parse(raw_value(config, "metafidelity_database")),
        shard=shards.parse(raw_value(config, "metafidelity_shard")),
    )
