"""The suite's example database: ``--metafidelity-database=SPEC``.

SPEC is one database or several, comma-separated (several are combined with
Hypothesis' ``MultiplexedDatabase``: reads see all of them, writes go to
every writable one).  Each is one of

=========================================  ===========================================
``PATH``                                   ``DirectoryBasedExampleDatabase(PATH)``
``redis://HOST[:PORT][/DB]``               ``hypothesis.extra.redis.RedisExampleDatabase``
                                           (needs the ``redis`` client:
                                           ``pip install pytest-metafidelity[redis]``)
``github-artifact:OWNER/REPO[:ARTIFACT]``  ``GitHubArtifactDatabase``, always read-only
=========================================  ===========================================

and ``ro:`` before any of them makes it read-only (``ReadOnlyDatabase``).

:func:`parse` only reads the text (a bad SPEC is a usage error at start-up);
:func:`suite_database` builds the databases when pytest starts (in every
process of the run), registers them as the Hypothesis settings profile
``metafidelity`` and loads it, so the items' settings inherit the database
from the profile -- and so do the user's own ``@given`` tests collected in
the same run, which is what HypoFuzz requires of the tests it fuzzes.

A shared database is only useful between runners of one Hypothesis version
(its stored format changed in 6.124 and may change again): the database
keeps a marker of the Hypothesis version that last wrote to it, and a run
with another version warns.  A remote database that stops answering (a
Redis server lost mid-run) becomes one warning and is skipped for the rest
of the run; the run's results are unaffected.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
import warnings
from typing import Any, Iterable

from .option_error import OptionError

OPTION = "--metafidelity-database"
PROFILE = "metafidelity"
# The key under which a database records the Hypothesis version writing to it.
VERSION_KEY = b"pytest-metafidelity:hypothesis-version"
ALLOWED = ("a directory PATH, redis://HOST[:PORT][/DB], github-artifact:OWNER/REPO[:ARTIFACT], "
           "each optionally prefixed with ro: (read-only), comma-separated to combine several")
_NAME = r"[A-Za-z0-9_.-]+"
_GITHUB = re.compile(rf"github-artifact:({_NAME})/({_NAME})(?::({_NAME}))?")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class DatabaseWarning(UserWarning):
    """The example database is unavailable or was written by another
    Hypothesis version; the run goes on."""


@dataclasses.dataclass(frozen=True)
class DatabaseSpec:
    """One database of the SPEC, as written (``text``) and as understood."""

    text: str
    kind: str  # "directory" | "redis" | "github-artifact"
    target: str  # the path, the redis URL, or OWNER/REPO
    artifact: str | None = None
    read_only: bool = False


def _redacted(text: str) -> str:
    """``text`` with the password of a URL in it hidden (it goes to logs)."""
    return re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", text)


def _bad(text: str, why: str) -> OptionError:
    return OptionError(f"{OPTION}: {_redacted(text)!r} {why}; allowed: {ALLOWED}")


def _parse_one(part: str) -> DatabaseSpec:
    text, read_only = part, False
    if part.startswith("ro:"):
        part, read_only = part[3:].strip(), True
    if not part:
        raise _bad(text, "names no database")
    if part.startswith("github-artifact:"):
        match = _GITHUB.fullmatch(part)
        if match is None:
            raise _bad(text, "is not github-artifact:OWNER/REPO or github-artifact:OWNER/REPO:ARTIFACT")
        owner, repo, artifact = match.groups()
        # GitHubArtifactDatabase cannot write: always read-only.
        return DatabaseSpec(text, "github-artifact", f"{owner}/{repo}", artifact, read_only=True)
    if _URL.match(part):
        from urllib.parse import urlsplit

        url = urlsplit(part)
        if url.scheme not in ("redis", "rediss"):
            raise _bad(text, f"has the unknown scheme {url.scheme!r}")
        try:
            url.port  # noqa: B018 (raises ValueError on a bad port)
            well_formed = bool(url.hostname) and not url.query
        except ValueError:
            well_formed = False
        db_number = url.path.strip("/")
        if not well_formed or (db_number and not db_number.isdigit()):
            raise _bad(text, "is not redis://HOST[:PORT][/DB] (PORT and DB numbers)")
        if importlib.util.find_spec("redis") is None:
            raise OptionError(
                f"{OPTION}: {_redacted(text)!r} needs the redis client, which is not installed: "
                "pip install 'pytest-metafidelity[redis]' (or pip install redis)")
        return DatabaseSpec(_redacted(text), "redis", part, read_only=read_only)
    return DatabaseSpec(text, "directory", part, read_only=read_only)


def parse(spec: str | None) -> tuple[DatabaseSpec, ...]:
    """The databases SPEC names; ``()`` for none.  Raises OptionError naming
    the bad part and what is allowed."""
    if spec is None or not str(spec).strip():
        return ()
    parts = [p.strip() for p in str(spec).split(",")]
    if any(not p for p in parts):
        raise _bad(str(spec), "has an empty part")
    return tuple(_parse_one(p) for p in parts)


def _tolerant_class() -> Any:
    """The wrapper class (built on first use: this module imports Hypothesis
    only when a database is built)."""
    from hypothesis.database import ExampleDatabase

    class Tolerant(ExampleDatabase):
        """Passes everything to ``db``; the first error it raises (a server
        gone, a network down) becomes one DatabaseWarning, after which the
        database is skipped for the rest of the run: reads find nothing and
        writes are dropped, so the test outcome is what it would have been
        without a database."""

        def __init__(self, db: Any, name: str) -> None:
            super().__init__()
            self.db, self.name, self.lost = db, name, False

        def __repr__(self) -> str:
            return f"Tolerant({self.db!r})"

        def _lose(self, error: BaseException) -> None:
            self.lost = True
            _warn(f"metafidelity: the example database {self.name} is unavailable "
                  f"({type(error).__name__}: {error}); the run goes on without it "
                  "(its results are reported as usual, nothing more is stored there)")

        def fetch(self, key: bytes) -> Iterable[bytes]:
            if self.lost:
                return []
            try:
                return list(self.db.fetch(key))
            except Exception as e:
                self._lose(e)
                return []

        def _write(self, method: str, *args: bytes) -> None:
            if self.lost:
                return
            try:
                getattr(self.db, method)(*args)
            except Exception as e:
                self._lose(e)

        def save(self, key: bytes, value: bytes) -> None:
            self._write("save", key, value)

        def delete(self, key: bytes, value: bytes) -> None:
            self._write("delete", key, value)

        def move(self, src: bytes, dest: bytes, value: bytes) -> None:
            self._write("move", src, dest, value)

    return Tolerant


def _warn(message: str) -> None:
    try:
        warnings.warn(message, DatabaseWarning, stacklevel=2)
    except Warning:
        # -W error: a database problem must not end the run; say it anyway.
        print(message, file=sys.stderr)


def build(specs: Iterable[DatabaseSpec]) -> Any:
    """The Hypothesis database for the specs (None for none)."""
    from hypothesis.database import (DirectoryBasedExampleDatabase, GitHubArtifactDatabase,
                                     MultiplexedDatabase, ReadOnlyDatabase)

    tolerant = _tolerant_class()
    databases = []
    for spec in specs:
        if spec.kind == "directory":
            db = DirectoryBasedExampleDatabase(spec.target)
        elif spec.kind == "redis":
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase

            client = redis.Redis.from_url(spec.target, socket_connect_timeout=3, socket_timeout=10)
            db = tolerant(RedisExampleDatabase(client), spec.text)
        else:
            owner, repo = spec.target.split("/")
            kwargs = {"artifact_name": spec.artifact} if spec.artifact else {}
            db = tolerant(GitHubArtifactDatabase(owner, repo, **kwargs), spec.text)
        databases.append(ReadOnlyDatabase(db) if spec.read_only else db)
    if not databases:
        return None
    return databases[0] if len(databases) == 1 else MultiplexedDatabase(*databases)


def check_version(db: Any, spec_text: str) -> None:
    """Warn when the database was last written by another Hypothesis
    version, then mark it as written by this one (where writable)."""
    import hypothesis

    ours = hypothesis.__version__.encode()
    theirs = sorted(v for v in db.fetch(VERSION_KEY) if v != ours)
    if theirs:
        _warn(
            f"metafidelity: the example database {spec_text} was written by Hypothesis "
            f"{', '.join(v.decode(errors='replace') for v in theirs)}, this run uses "
            f"{hypothesis.__version__}: stored examples may not replay (the format changed in "
            "6.124); every runner sharing a database must run the same Hypothesis version")
        for value in theirs:
            db.delete(VERSION_KEY, value)
    db.save(VERSION_KEY, ours)


_built: dict[tuple[DatabaseSpec, ...], Any] = {}


def suite_database(specs: tuple[DatabaseSpec, ...]) -> Any:
    """Build the databases once per process, check their Hypothesis version,
    and load them as the settings profile ``metafidelity`` (the current
    profile with this database), from which the suite items' settings
    inherit.  Returns the database (None when SPEC is empty)."""
    if not specs:
        return None
    from hypothesis import settings

    if specs not in _built:
        db = build(specs)
        check_version(db, ",".join(s.text for s in specs))
        _built[specs] = db
    db = _built[specs]
    # Loaded again whenever another profile has been loaded since: Hypothesis'
    # own pytest plugin loads its "ci" profile (no database, derandomized)
    # under CI=true after this plugin has configured.  A shared database is
    # for exploring: never derandomized (HypoFuzz also refuses such tests).
    if settings.default.database is not db or settings.default.derandomize:
        settings.register_profile(PROFILE, parent=settings.default, database=db,
                                  derandomize=False)
        settings.load_profile(PROFILE)
    return db
