"""The error every reader of table files raises for a damaged table.

A leaf module so that the modules reading single kinds of table files (the LSM archive, log files)
can raise it without importing :mod:`models.view.table`, which imports them.
"""

from __future__ import annotations


class CorruptTableError(ValueError):
    """An instant file or table file could not be read; the message names it (one line)."""


__all__ = ["CorruptTableError"]
