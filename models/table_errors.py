"""The errors of the protocol code: :class:`HoodieException`, the base of every error the models
raise, and :class:`CorruptTableError`, the one every reader of table files raises for a damaged
table.

A leaf module so that any module of ``models`` can raise them without importing the modules that
use them (:mod:`models.view.table` imports the readers that raise :class:`CorruptTableError`).
"""

from __future__ import annotations


class HoodieException(Exception):
    """Hudi's ``HoodieException``: the protocol refused or failed an operation. Every error class
    of ``models`` derives from it (besides its Python base, ``ValueError`` or ``RuntimeError``).
    In a Flink job such an error fails the job, which Flink restarts (Hudi's ``NonThrownExecutor``
    hands it to ``context.failJob``; a task's error fails its task); it never ends the run."""


class CorruptTableError(HoodieException, ValueError):
    """An instant file or table file could not be read; the message names it (one line)."""


class HoodieIOException(HoodieException, OSError):
    """A storage operation of the protocol failed (Hudi's ``HoodieIOException``)."""


__all__ = ["CorruptTableError", "HoodieException", "HoodieIOException"]
