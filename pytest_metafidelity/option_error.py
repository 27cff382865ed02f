"""The error a bad option value raises.

A module of its own, below everything that reads options: options,
databases and shards all raise it, and options builds the database and the
shard, so neither may import it from options.
"""

from __future__ import annotations


class OptionError(ValueError):
    """A bad option value; the message names it and lists the valid ones."""
