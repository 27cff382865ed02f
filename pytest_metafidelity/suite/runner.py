"""How one suite item (a tensor kind through a converter) runs.

The item's test is a real Hypothesis ``@given`` test, so ``--hypothesis-seed``,
``--hypothesis-show-statistics`` and shrinking work as usual.  Each example
draws a recipe of the item's kind and a conversion order (:func:`draw_case`),
builds the tensors (inside the recipe's contexts), converts them through one
converter and runs the checks.  A failing example raises
:class:`FidelityError`, whose message carries the reproducer of the shrunk
example; one that exits Python (``SystemExit``) raises :class:`.crashes.ExampleCrashed`.

Before the conversion, the example is written to this process's journal
(:mod:`.journal`), so a native crash or a hang loses nothing.  With a time
budget an item runs in rounds (:mod:`.budget`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import random
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

from hypothesis import HealthCheck, Phase, Verbosity, event, given, seed, settings
from hypothesis import strategies as st

from ..checks import step_time_limit
from ..hypofuzz_runs import in_hypofuzz_run
from ..options import DEFAULT_EXAMPLE_TIMEOUT
from ..strategies.torch_notices import quiet_torch_notices
from .budget import FIRST_PASS_EXAMPLES
from .crashes import ExampleCrashed
from .journal import JournalEntry, RUNNING, encode_choices
from .run import SuiteRun

if TYPE_CHECKING:
    from ..options import SuiteOptions
    from ..strategies.programs import Program
    from ..strategies.recipe import Recipe


@dataclasses.dataclass(frozen=True)
class SuiteItem:
    kind: str
    converter: str

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.converter}"


# (kind, devices, the registered subclasses) -> the recipe strategy of a
# suite item: selecting a kind asks every kind whether this torch can build
# it, about 1 ms, which an item would otherwise pay on every example.
_CASE_STRATEGIES: dict[tuple[Any, ...], Any] = {}


def case_strategy(kind: str, devices: list[str] | None) -> Any:
    """The strategy of a suite item's recipes (made once per kind, devices
    and set of registered subclasses)."""
    from ..strategies.api import recipe_strategy
    from ..strategies.subclasses import registered_subclasses

    key = (kind, None if devices is None else tuple(devices),
           tuple(map(id, registered_subclasses().values())))
    found = _CASE_STRATEGIES.get(key)
    if found is None:
        if len(_CASE_STRATEGIES) > 512:
            _CASE_STRATEGIES.clear()
        found = _CASE_STRATEGIES[key] = recipe_strategy(kinds=[kind], family=None,
                                                        devices=devices)
    return found


def draw_case(data: Any, kind: str, devices: list[str] | None) -> tuple["Recipe", list[int]]:
    """An example's recipe of ``kind`` and its conversion order: the draws
    every suite example makes, in this order (crash shrinking replays them)."""
    recipe = data.draw(case_strategy(kind, devices), label="recipe")
    order = data.draw(st.permutations(range(len(recipe.outputs))), label="conversion order")
    return recipe, order


# Phases a suite item runs without, because the budget cannot bound them:
# - Phase.explain: once an example failed, it traces every line Python runs
#   while shrinking (sys.settrace), which makes shrinking a conversion many
#   times slower, to name lines of our own checks (the reproducer says more);
# - Phase.target: for a round of fewer than 1,000 examples, Hypothesis
#   hill-climbs the programs' target() score until no step improves it,
#   bounded by no count of examples: a 30-minute run spent 21 minutes of one
#   worker in one sparse_coo round, most of it replaying cached choices
#   without running an example.  Programs still report their target()
#   score; only the climbing is off (the first pass never ran it).
UNBOUNDED_PHASES = (Phase.explain, Phase.target)


def item_settings(run: SuiteRun, max_examples: int, *, derandomize: bool | None = None
                  ) -> settings:
    from ..databases import suite_database

    profile = run.options.profile if run.options is not None else None
    # --metafidelity-database loads the settings profile "metafidelity" holding
    # it, which these settings inherit; given explicitly it wins over a
    # profile without a database (ci), whose examples are then random, since
    # Hypothesis uses no database when derandomized.
    shared = suite_database(run.options.database) if run.options is not None else None
    # Under HypoFuzz the settings profile decides both (see hypofuzz_runs).
    fuzzing = in_hypofuzz_run()
    if derandomize is None:
        derandomize = bool(profile and profile.derandomize) and shared is None and not fuzzing
    kwargs: dict[str, Any] = dict(
        max_examples=max_examples,
        deadline=None,
        derandomize=derandomize,
        phases=tuple(p for p in settings().phases if p not in UNBOUNDED_PHASES),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.differing_executors],
    )
    if profile is not None and not profile.use_database and shared is None and not fuzzing:
        kwargs["database"] = None
    return settings(**kwargs)


def fidelity_test(run: SuiteRun | None = None, nodeid: str = "") -> Any:
    """The test function for suite items: ``test(metafidelity_item)``.

    With ``run`` None (as imported from the suite module) it uses default
    settings; the plugin swaps in a per-item version built with the run's
    options before the item runs: one Hypothesis run of the fixed number of
    examples, or rounds that spend the item's share of the time budget.
    """

    def test_fidelity(metafidelity_item: SuiteItem, data: Any) -> None:
        run_example(run, metafidelity_item, data, nodeid)

    if run is None:
        return given(data=st.data())(test_fidelity)
    # Every item its own example-database key, the same on every machine
    # (the node id's path part differs between installs).
    test_fidelity._hypothesis_internal_add_digest = item_digest(nodeid)  # type: ignore
    run.inner_tests[nodeid] = test_fidelity
    run.database_key(nodeid)  # now: HypoFuzz re-keys the function after collection
    if run.budget is None:
        assert run.options is not None and run.options.examples is not None
        # The item's own seed, as in a budget's rounds (below).
        test = seed(round_seed(_base_seed(run), nodeid, 0))(given(data=st.data())(test_fidelity))
        return item_settings(run, run.options.examples)(test)
    return _budget_rounds(run, nodeid, test_fidelity)


def item_digest(nodeid: str) -> bytes:
    """``test_fidelity[KIND-CONVERTER]``: the suite item's node id without
    the suite's path, added to its database key."""
    return nodeid.rsplit("::", 1)[-1].encode()


def _budget_rounds(run: SuiteRun, nodeid: str, inner: Callable[..., None]) -> Any:
    """An item that spends its slice of the budget in rounds.  Every round
    wraps the same inner function, so they share its database key (and the
    per-item digest pytest's Hypothesis plugin adds to it).  Its first round
    may have run already, in the first pass (``rounds.first_pass``)."""
    budget = run.budget
    assert budget is not None
    base_seed = _base_seed(run)

    def round_test(number: int, examples: int, *, first_pass: bool = False) -> Any:
        # Every round has the item's own seed, the first too: under a forced
        # or derandomized seed, Hypothesis would give every item the same
        # random stream (they share one inner function), so the items of a
        # kind -- one per converter -- would draw the same examples,
        # and a fault that needs an example other than the simplest (a
        # wrapper requiring grad) would wait for the rounds.
        test = seed(round_seed(base_seed, nodeid, number))(given(data=st.data())(inner))
        if number:  # later rounds: fresh examples
            return item_settings(run, examples, derandomize=False)(test)
        first = item_settings(run, examples)
        if first_pass:
            # A failure is only noted here (and saved to the example database):
            # the item's own turn, run at once, shrinks and reports it.
            first = settings(first, phases=(Phase.explicit, Phase.reuse, Phase.generate),
                             verbosity=Verbosity.quiet)
        return first(test)

    def rounds(metafidelity_item: SuiteItem) -> None:
        state = run.first_pass
        spending = run.spending[nodeid] = budget.start_item(
            state.items_left() if state is not None else None)
        earlier = state.passed(nodeid) if state is not None else None
        if earlier is not None:
            run.adopt_first_round(nodeid, earlier)
            budget.count_first_pass(spending, earlier.examples, earlier.seconds)
        try:
            while True:
                examples = budget.next_round(spending)
                if examples == 0:
                    return
                test = round_test(spending.rounds, examples)
                covered = len(run.coverage.get(nodeid, ()))
                done, started = run.examples_done, budget.now()
                try:
                    test(metafidelity_item)
                finally:
                    budget.finish_round(spending, run.examples_done - done,
                                        budget.now() - started,
                                        len(run.coverage.get(nodeid, ())) > covered)
        finally:
            budget.finish_item(spending)

    def first_pass(metafidelity_item: SuiteItem) -> bool:
        """The item's first round, ahead of its turn: True when it passed
        (recorded for the item's turn), False when it did not (the turn runs
        it again and reports it)."""
        from .first_pass import FirstPassRecord

        state = run.first_pass
        assert state is not None
        done, started = run.examples_done, budget.now()
        run.out_of_turn = True
        try:
            round_test(0, FIRST_PASS_EXAMPLES, first_pass=True)(metafidelity_item)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # a failure, a crash turned error, a skip: the turn's to report
            run.forget(nodeid)
            return False
        finally:
            run.out_of_turn = False
            if run.journal is not None:
                run.journal.end()
        state.record(nodeid, FirstPassRecord(
            examples=run.examples_done - done, seconds=budget.now() - started,
            tally=dict(run.tallies.get(nodeid, {})), known=dict(run.known.get(nodeid, {})),
            pid=os.getpid()))
        return True

    first = given(data=st.data())(inner)
    # Lets pytest's Hypothesis plugin treat the item as a Hypothesis test
    # (statistics, the per-item database key on the shared inner function).
    rounds.hypothesis = first.hypothesis  # type: ignore[attr-defined]
    rounds.is_hypothesis_test = True  # type: ignore[attr-defined]
    rounds.first_pass = first_pass  # type: ignore[attr-defined]
    return rounds


def round_seed(base_seed: int, nodeid: str, round_number: int) -> int:
    """The seed of an item's round: the same in every process and on
    every machine for the same base seed (``--hypothesis-seed``), item and
    round -- built from the item's digest, never from Python's ``hash()``,
    which differs between processes for strings."""
    key = b"%d\0%s\0%d" % (base_seed, item_digest(nodeid), round_number)
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big")


def _base_seed(run: SuiteRun) -> int:
    """``--hypothesis-seed`` as an integer (a seed that is no number:
    hashed stably), 0 for a derandomized profile, else random."""
    from hypothesis import core

    forced = core.global_force_seed
    if forced is not None:
        text = str(forced)
        return int(text) if text.isdigit() else int.from_bytes(
            hashlib.sha256(text.encode()).digest()[:8], "big")
    if run.options is not None and run.options.profile.derandomize:
        return 0
    return random.getrandbits(64)


def run_example(run: SuiteRun | None, item: SuiteItem, data: Any, nodeid: str) -> None:
    opts = run.options if run is not None else None
    devices = list(opts.devices) if opts else None
    with quiet_torch_notices():
        _run_example(run, item, data, nodeid, opts, devices)


def _run_example(
    run: SuiteRun | None, item: SuiteItem, data: Any, nodeid: str,
    opts: "SuiteOptions | None", devices: list[str] | None
) -> None:
    from ..checks import default_checks
    from ..faithful import FidelityError, check_faithful
    from ..reproducer import reproducer_source

    journal = run.journal if run is not None else None
    if journal is not None:
        journal.reported()  # the previous example's failure, if any
    checks = list(opts.checks) if opts and opts.checks != tuple(default_checks()) else None

    def journal_drawing(source: str) -> None:
        # Drawing the recipe runs its lines: one that crashes torch there is
        # recorded with the recipe so far (each line journaled before it
        # runs) and the choices drawn so far, which replay up to it.
        if journal is None or run is None:
            return
        journal.begin(JournalEntry(
            RUNNING, 0, nodeid=nodeid, kind=item.kind, converter=item.converter, checks=checks,
            devices=devices, choices=encode_choices(data),
            recipe=("# (the process died while this example's recipe was being drawn: at its "
                    "last line)\n" + source),
            database_key=run.database_key(nodeid),
            example=run.tallies.get(nodeid, Counter())["examples"],
            out_of_turn=run.out_of_turn,
        ))

    from ..strategies.recipe import telling_lines

    with telling_lines(journal_drawing) if journal is not None else contextlib.nullcontext():
        recipe, order = draw_case(data, item.kind, devices)

    def journal_case(program: "Program | None") -> None:
        if journal is None or run is None:
            return
        journal.begin(JournalEntry(
            RUNNING, 0, nodeid=nodeid, kind=item.kind, converter=item.converter, checks=checks,
            devices=devices, order=list(order), choices=encode_choices(data),
            recipe=reproducer_source(recipe, converters=[item.converter], checks=checks,
                                     order=order, program=program),
            database_key=run.database_key(nodeid),
            example=run.tallies.get(nodeid, Counter())["examples"],
            out_of_turn=run.out_of_turn,
        ))

    # Drawing a program runs its steps on a copy of the real tensors: a
    # step that crashes torch there is recorded with its recipe and the
    # program so far (each step journaled before it runs), then the case
    # again with its whole program.
    if program_drawn(opts):
        journal_case(None)
    from ..strategies.programs import telling_steps

    with telling_steps(journal_case) if journal is not None else contextlib.nullcontext():
        program = draw_program(data, recipe, opts)
    journal_case(program)
    example_timeout = opts.example_timeout if opts else DEFAULT_EXAMPLE_TIMEOUT
    failed = True  # until it passes: a failure stays in the journal while it is reported
    try:
        with recipe.active_contexts() as namespace, \
                step_time_limit.for_example_timeout(example_timeout):
            tensors = recipe.build_in(namespace)
            result = check_faithful(
                *tensors,
                converters=[item.converter],
                checks=checks,
                order=order,
                strict=opts.strict if opts else False,
                program=program,
            )
        failed = not result.ok
        if result.notes:  # (a program the behaviour check could not run: why, in the notes)
            event("the behaviour check did not run the program")
    except SystemExit as e:
        if run is not None:
            run.tallies.setdefault(nodeid, Counter())["examples"] += 1
        raise ExampleCrashed(e.code, reproducer_source(
            recipe, converters=[item.converter], checks=checks, order=order,
            program=program)) from None
    finally:
        if journal is not None:
            if failed:
                journal.reporting()
            else:
                journal.end()
    if run is not None:
        run.examples_done += 1
        digest = run.digests.setdefault(nodeid, hashlib.sha256())
        digest.update(f"{recipe.to_python()}{order}{program or ''}".encode())
        tally = run.tallies.setdefault(nodeid, Counter())
        tally["examples"] += 1
        covered = run.coverage.setdefault(nodeid, set())
        for outcome in result.outcomes:
            tally[outcome.status] += 1
            covered.add(outcome.status)
            covered.update(entry_id for entry_id, _ in outcome.known)
        events = getattr(getattr(data, "conjecture_data", None), "events", None) or {}
        covered.update(f"{k}={v}" for k, v in events.items())
        run.record_entries(nodeid, result)
    if not result.ok:  # failed, or a check met an internal error
        if run is not None and in_hypofuzz_run():
            run.keep_for_replay(nodeid, encode_choices(data))
        raise FidelityError(result)


def program_drawn(opts: "SuiteOptions | None") -> bool:
    """Whether examples draw a ``behaviour`` program (that check runs)."""
    return opts is None or "behaviour" in opts.checks


def draw_program(data: Any, recipe: "Recipe", opts: "SuiteOptions | None"
                 ) -> "Program | None":
    """The ``behaviour`` check's program, when that check runs (none is
    drawn where programs do not apply to the recipe's kind)."""
    if not program_drawn(opts):
        return None
    from ..strategies.programs import programs

    return data.draw(programs(recipe), label="program")
