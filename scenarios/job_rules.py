"""Rules on one job's keys that Hudi enforces or that the modelled options require (a
:class:`~scenarios.errors.RuleViolation` names the key to change)."""

from __future__ import annotations

from scenarios.errors import RuleViolation
from scenarios.tables import JobSpec


def check_job_rules(job: JobSpec, index: int) -> None:
    """Every rule below for ``jobs[index]``."""
    check_partition_moves(job, index)
    check_early_conflict_detection(job, index)
    check_clean_operator(job, index)


def check_clean_operator(job: JobSpec, index: int) -> None:
    """The clean operator is one of the table-services job's operators in the model."""
    if job.clean_operator and not job.table_services:
        raise RuleViolation(
            "clean_operator belongs to the job that runs table services",
            key=f"jobs[{index}].clean_operator",
            allowed="false, or table_services = true",
        )


def check_partition_moves(job: JobSpec, index: int) -> None:
    """``partition_period_s`` moves the keys of whole-record upserts between partitions."""
    if job.partition_period_s and (job.operation != "upsert" or job.columns):
        raise RuleViolation(
            "partition_period_s moves the keys of whole-record upserts",
            key=f"jobs[{index}].partition_period_s",
            allowed='0, or a job with operation = "upsert" and no columns',
        )


def check_early_conflict_detection(job: JobSpec, index: int) -> None:
    """Early conflict detection runs on top of OCC only (``HoodieWriteConfig.Builder#validate``)."""
    if job.early_conflict_detection and job.concurrency != "occ":
        raise RuleViolation(
            "To use early conflict detection, set hoodie.write.concurrency.mode="
            "OPTIMISTIC_CONCURRENCY_CONTROL",
            key=f"jobs[{index}].early_conflict_detection",
            allowed='false, or concurrency = "occ"',
        )


__all__ = [
    "check_clean_operator",
    "check_early_conflict_detection",
    "check_job_rules",
    "check_partition_moves",
]
