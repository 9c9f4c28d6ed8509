"""Checks Hudi makes on a write client's configuration when it is built.

``HoodieWriteConfig.Builder#validate`` (Hudi 1.0 and later): the non-blocking concurrency control
needs a MERGE_ON_READ table with the simple bucket index (or the metadata table), because only
there do two writers of one file group each add files of their own (log files) instead of each
replacing the group's base file. A Flink pipeline built against it fails before it writes
(``TestWriteCopyOnWrite#validateNonBlockingConcurrencyControlConditions``).
"""

from __future__ import annotations

from models.format.properties import TableConfig

SINGLE_WRITER = "SINGLE_WRITER"
OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"
NON_BLOCKING_CONCURRENCY_CONTROL = "NON_BLOCKING_CONCURRENCY_CONTROL"
WRITE_CONCURRENCY_MODES = (
    SINGLE_WRITER,
    OPTIMISTIC_CONCURRENCY_CONTROL,
    NON_BLOCKING_CONCURRENCY_CONTROL,
)
"""``hoodie.write.concurrency.mode`` (``WriteConcurrencyMode``)."""
NBCC_REQUIREMENT = (
    "Non-blocking concurrency control requires the MOR table with simple bucket index "
    "or it has to be Metadata table"
)


class InvalidWriteConfigError(ValueError):
    """A write configuration Hudi refuses (its ``IllegalArgumentException``)."""


def validate_write_config(
    config: TableConfig, concurrency_mode: str, *, simple_bucket_index: bool = True
) -> None:
    """Raise :class:`InvalidWriteConfigError` with Hudi's message where ``validate`` would."""
    if concurrency_mode not in WRITE_CONCURRENCY_MODES:
        raise InvalidWriteConfigError(
            f"hoodie.write.concurrency.mode must be one of {WRITE_CONCURRENCY_MODES}, "
            f"not {concurrency_mode!r}"
        )
    if concurrency_mode == NON_BLOCKING_CONCURRENCY_CONTROL and not (
        config.is_mor and simple_bucket_index
    ):
        raise InvalidWriteConfigError(NBCC_REQUIREMENT)


def job_concurrency_mode(concurrency: str, jobs_on_table: int) -> str:
    """The write concurrency mode of a scenario job: its ``[[jobs]] concurrency`` (``occ`` /
    ``nbcc``), except that ``nbcc``, the key's default, leaves a lone job a single writer."""
    if concurrency == "occ":
        return OPTIMISTIC_CONCURRENCY_CONTROL
    return NON_BLOCKING_CONCURRENCY_CONTROL if jobs_on_table > 1 else SINGLE_WRITER


__all__ = [
    "NBCC_REQUIREMENT",
    "NON_BLOCKING_CONCURRENCY_CONTROL",
    "OPTIMISTIC_CONCURRENCY_CONTROL",
    "SINGLE_WRITER",
    "WRITE_CONCURRENCY_MODES",
    "InvalidWriteConfigError",
    "job_concurrency_mode",
    "validate_write_config",
]
