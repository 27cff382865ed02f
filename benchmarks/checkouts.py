"""This checkout and, side by side, a baseline commit in a temporary git worktree."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def checkouts(baseline: str | None) -> Iterator[dict[str, Path]]:
    """label -> root: the baseline's first (when given), then this checkout's."""
    if not baseline:
        yield {"this checkout": ROOT}
        return
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(old),
                        baseline], check=True)
        try:
            yield {f"baseline {baseline}": old, "this checkout": ROOT}
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                           check=False)
