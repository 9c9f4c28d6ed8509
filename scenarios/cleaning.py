"""The failed-writes cleaning a scenario's jobs end up with when the file leaves it to Hudi: the
write client's policy (``[protocol] failed_writes_cleaning = "auto"``) and whether each job's
pipeline has a clean operator (``[[jobs]] clean_operator``), resolved from the raw TOML tables
before field validation (:mod:`scenarios.schema`)."""

from __future__ import annotations

from typing import Any

from scenarios.releases import LATEST, RELEASES, preset_values


def auto_cleaning(jobs: list[Any], release: object) -> str:
    """The failed-writes cleaning policy Hudi's Flink sink ends up with when none is set
    (``hoodie.cleaner.policy.failed.writes``, default EAGER): LAZY for several writers or OCC
    (``HoodieWriteConfig.Builder#autoAdjustConfigsForConcurrencyMode``); from Hudi 1.1, also
    LAZY for a job whose instant generation is not blocking (``FlinkWriteClients
    #getHoodieClientConfig``, HUDI-9534 apache/hudi#13464). Keys of the wrong type are left to
    field validation."""
    items = [job if isinstance(job, dict) else {} for job in jobs]
    if len(items) != 1 or items[0].get("concurrency") == "occ":
        return "LAZY"
    blocking = items[0].get("instant_generation", "async") == "blocking"
    return "EAGER" if blocking or release == "1.0" else "LAZY"


def clean_operator(job: dict[str, Any], protocol: dict[str, Any], written: object) -> bool:
    """Whether Hudi's Flink sink builds a clean operator for ``job`` (``HoodieTableSink
    #getSinkRuntimeProvider``): in the table-services job only (the model's other jobs run no
    table service); an upsert job always has one (``Pipelines.compact`` or ``Pipelines.clean``);
    an insert job runs in append mode (``OptionsResolver#isAppendMode``) and gets
    ``Pipelines.clean`` only if ``isLazyFailedWritesCleanPolicy``: the Flink options say LAZY
    (``append_clean = "flink_conf"``, ``written`` is the value in the file) or, as remedied, the
    write client's policy is LAZY. Keys of the wrong type are left to field validation."""
    if job.get("table_services") is not True:
        return False
    if job.get("operation", "upsert") != "insert":
        return True
    release = protocol.get("release", LATEST)
    rule = protocol.get("append_clean")
    if rule is None and isinstance(release, str) and release in RELEASES:
        rule = preset_values(release)["append_clean"]
    if rule == "flink_conf":
        return written == "LAZY"
    return protocol.get("failed_writes_cleaning") == "LAZY"


__all__ = ["auto_cleaning", "clean_operator"]
