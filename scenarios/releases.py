"""Hudi releases as presets of the ``[protocol]`` switches (docs/scenarios.md, ``[protocol]``).

``[protocol] release`` names a Hudi release; every switch the scenario file leaves out takes the
value that release ships, and a switch written in the file keeps its value. :data:`PRESETS`
holds, for every switch and release, the value and where it comes from: the apache/hudi issue,
pull request or JIRA, and the release or commit where the rule was read or the fix landed.

What a release is here: ``1.0`` and ``1.1`` are Apache Hudi's ``master`` at the cut of release
1.0.0 (2024-12-06, commit d2aef6dd) and of release 1.1.0 (2025-10-07, commit 4f80914b);
fixes cherry-picked into later patch releases (1.0.x, 1.1.x) are not verified. ``latest`` is the
rules with every known fix, which is also what each switch defaults to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Release = Literal["1.0", "1.1", "latest"]
RELEASES: tuple[str, ...] = get_args(Release)
"""The releases ``[protocol] release`` may name, oldest first."""
LATEST = "latest"
"""The default release: the real rules, with the known fixes."""


@dataclass(frozen=True)
class Preset:
    """One switch's value in one release, and the evidence for it."""

    value: str | bool
    why: str
    """One line: the Hudi issue, pull request or JIRA, and the release or commit it rests on."""


_NO_RELEASE = "no Hudi release ships the known-bad value; the real rule"

PRESETS: dict[str, dict[str, Preset]] = {
    "file_slicing": {
        "1.0": Preset(
            "completion_time",
            "RFC-66: HUDI-6642/HUDI-6743 (apache/hudi#9776, 2023-10) slice by completion time "
            "from 1.0.0 on",
        ),
        "1.1": Preset("completion_time", "RFC-66 (apache/hudi#9776), as in 1.0.0"),
        "latest": Preset("completion_time", "RFC-66 (apache/hudi#9776), as in 1.0.0"),
    },
    "slice_anchor": {
        "1.0": Preset(
            "earliest_log",
            "apache/hudi#19774: HoodieFileGroup.getBaseInstantTime anchors a file group without "
            "slices on the first log added, whatever its state (1.0.0 cut d2aef6dd)",
        ),
        "1.1": Preset(
            "earliest_log",
            "apache/hudi#19774: the same HoodieFileGroup.getBaseInstantTime at the 1.1.0 cut "
            "(4f80914b)",
        ),
        "latest": Preset(
            "earliest_completed",
            "fixed by apache/hudi#19785 (2026-08): HoodieFileGroup.addLogFiles anchors on the "
            "earliest completed log",
        ),
    },
    "archived_completion_lookup": {
        "1.0": Preset(
            True,
            "apache/hudi#14365 is in the 1.0.0 cut (d2aef6dd: LSMTimeline.isFileInRange skips an "
            "LSM file whose instant range holds the whole lookup range), but the switch's false "
            "misses every archived lookup, a superset of Hudi's corner case: kept true until "
            "the corner case itself is modelled",
        ),
        "1.1": Preset(
            True,
            "apache/hudi#14365 is in the 1.1.0 cut (4f80914b) too; kept true as for 1.0",
        ),
        "latest": Preset(
            True,
            "fixed by apache/hudi#14379 (merged 2025-11-27, after the 1.1.0 cut): "
            "TimeRangeFilter.hasOverlappingInRange",
        ),
    },
    "persist_write_meta": {
        "1.0": Preset(
            True,
            "AbstractStreamWriteFunction keeps write-metadata-state and re-sends it at bootstrap; "
            "HUDI-9570 came with async instants (apache/hudi#13285, 2025-05) and was fixed before "
            "the 1.1.0 cut (apache/hudi#13543, 2025-07): no release ships it",
        ),
        "1.1": Preset(True, "HUDI-9570 fixed before the 1.1.0 cut (apache/hudi#13543, 2025-07)"),
        "latest": Preset(True, "HUDI-9570 fixed by apache/hudi#13543 (2025-07)"),
    },
    "put_if_absent": {
        release: Preset(True, f"{_NO_RELEASE}: timeline files are created only if absent")
        for release in RELEASES
    },
    "commit_scope": {
        release: Preset(
            "all_below",
            f"{_NO_RELEASE}: a notification commits every buffered instant below its checkpoint",
        )
        for release in RELEASES
    },
    "snapshot_partial_buffers": {
        "1.0": Preset(
            False,
            "1.0.0's checkpointCoordinator stores no buffers (empty bytes), so apache/hudi#19215 "
            "cannot happen; modelled as the fixed rule",
        ),
        "1.1": Preset(
            True,
            "apache/hudi#19215: EventBuffers.getAllCompletedEvents keeps buffers whose slots are "
            "null or last batches, all-null ones included (1.1.0 cut 4f80914b; reported on "
            "1.1.1)",
        ),
        "latest": Preset(
            False,
            "fixed by apache/hudi#19237 (2026-07): only complete buffers are checkpointed",
        ),
    },
    "reset_recommit": {
        "1.0": Preset(
            "immediate",
            "1.0.0's resetToCheckpoint is a no-op and its restarted tasks always re-send their "
            "events (d2aef6dd), so nothing waits on a reset; modelled as apache/hudi#19237's rule",
        ),
        "1.1": Preset(
            "next_notification",
            "apache/hudi#19215: 1.1's resetToCheckpoint only puts the restored buffers; they "
            "are committed by the next notification (4f80914b)",
        ),
        "latest": Preset(
            "immediate",
            "fixed by apache/hudi#19237 (2026-07): a reset on a started coordinator recommits",
        ),
    },
    "restored_checkpoint_id": {
        "1.0": Preset(
            "attempt_gt_0",
            "1.0.0 has no checkpoint-keyed buffers (one buffer per instant, d2aef6dd); modelled "
            "with 1.1's initCheckpointId (apache/hudi#19922)",
        ),
        "1.1": Preset(
            "attempt_gt_0",
            "apache/hudi#19922: AbstractStreamWriteFunction#initCheckpointId adopts the restored "
            "id only at attempt > 0 of the same job (4f80914b)",
        ),
        "latest": Preset(
            "always",
            "fixed by apache/hudi#19952 (2026-09): a restored task always adopts the restored id",
        ),
    },
    "restored_events_resend": {
        "1.0": Preset(
            "every_attempt",
            "1.0.0's AbstractStreamWriteFunction#restoreWriteMetadata re-sends every pending "
            "restored event whatever the attempt (d2aef6dd); 1.1 stopped (HUDI-9570)",
        ),
        "1.1": Preset(
            "attempt_0",
            "1.1's sendBootstrapEvent sends an empty bootstrap at attempt > 0 (4f80914b; the "
            "restart HUDI-9570, apache/hudi#13530, describes)",
        ),
        "latest": Preset(
            "attempt_0",
            "unchanged after 1.1 (apache/hudi#19237 recommits on the coordinator side only); a "
            "hazard the testbed finds (restart_before_bootstrap), not reported upstream",
        ),
    },
    "recommit_baseline": {
        "1.0": Preset(
            "coordinator",
            "apache/hudi#19024: a new coordinator's write client has no transaction baseline "
            "(reported on 1.0.0 and 1.1.0)",
        ),
        "1.1": Preset(
            "coordinator",
            "apache/hudi#19024: the recommit after a restart conflicts with the job's own "
            "commits (4f80914b)",
        ),
        "latest": Preset(
            "job",
            "open in Hudi (apache/hudi#19024); the rule of its pull request apache/hudi#19023",
        ),
    },
    "checkpoint_deferred_recommits": {
        "1.0": Preset(
            False,
            "1.0.0 has no deferred recommit (d2aef6dd: the bootstrap waits for every task); "
            "modelled with 1.1's rule (apache/hudi#19922)",
        ),
        "1.1": Preset(
            False,
            "apache/hudi#19922: getAllCompletedEvents leaves out a buffer of bootstrap events "
            "(4f80914b)",
        ),
        "latest": Preset(
            True,
            "open in Hudi (testDeferredRecommitSurvivesAnotherRestart is @Disabled); the remedy "
            "proposed in the review of apache/hudi#19952",
        ),
    },
    "pending_file_ids": {
        "1.0": Preset(
            "ignored",
            "BucketStreamWriteFunction#bootstrapIndexIfNeed reads getLatestFileSlices of the "
            "committed view only (0410c255), the race of apache/hudi#19907",
        ),
        "1.1": Preset(
            "ignored",
            "as 1.0; reproduced on 1.1.1 in apache/hudi#19907 (duplicate fileId after a restart "
            "before the first commit)",
        ),
        "latest": Preset(
            "adopted",
            "EventBuffers#getPendingWriteFileIds, pinned by TestBucketStreamWriteRecommitRace "
            "(03d0a190; PR apache/hudi#19951)",
        ),
    },
    "instant_request": {
        "1.0": Preset(
            "polled",
            "no instant RPC before HUDI-9381 (apache/hudi#13285, 1.1): a 1.0 task polls the "
            "checkpoint metadata for the next instant every second (instantToWrite, TimeWait)",
        ),
        "1.1": Preset(
            "blocked",
            "CommitGuard.blockFor on the single-thread instantRequestExecutor "
            "(StreamWriteOperatorCoordinator#handleInstantRequest, HUDI-9534, apache/hudi#13464; "
            "RPC timeouts reported in apache/hudi#19902)",
        ),
        "latest": Preset(
            "polled",
            "answered at once, the task polls, the guarded creation runs apart "
            "(apache/hudi#19960: master 7430134280ae, release-1.1.2 b799fd41c1f)",
        ),
    },
    "record_write_failure": {
        "1.0": Preset(
            "mark",
            "HoodieAppendHandle#bufferRecord and HoodieWriteMergeHandle#writeRecord mark a failed "
            "record (WriteStatus#markFailure) and go on; StreamWriteOperatorCoordinator#doCommit "
            "then rolls the instant back and throws: apache/hudi#18051",
        ),
        "1.1": Preset(
            "mark",
            "as 1.0 (the 1.1-era handles); apache/hudi#18051 was reported on 1.2-SNAPSHOT",
        ),
        "latest": Preset(
            "throw",
            "open in Hudi (apache/hudi#18051); the remedy its review proposes, a write function "
            "that throws as the append function does (apache/hudi#13417), which master's "
            "handles do when hoodie.write.ignore.failed is false (HoodieWriteMergeHandle"
            "#writeRecord at 00ee6a6e, HoodieAppendHandle#writeRecord)",
        ),
    },
    "marker_write_failure": {
        "1.0": Preset(
            "swallow",
            "MarkerDirState#flushMarkersToFile closes the MARKERS<n> writer with closeQuietly in "
            "a finally block (d2aef6dd): a PUT failing at close() is swallowed, apache/hudi#19368",
        ),
        "1.1": Preset("swallow", "as 1.0 (4f80914b); fixed by apache/hudi#19368 (2026-07)"),
        "latest": Preset(
            "fail",
            "apache/hudi#19368: the writer is closed inside the try and a failed flush fails the "
            "batch's requests, its names removed",
        ),
    },
    "marker_answer": {
        release: Preset(
            "after_write",
            f"{_NO_RELEASE}: MarkerDirState#processMarkerCreationRequests completes the futures "
            "after flushMarkersToFile",
        )
        for release in RELEASES
    },
    "partial_update_merge": {
        release: Preset(
            "column_group",
            f"{_NO_RELEASE}: per-group ordering is HUDI-4882 (apache/hudi#6868, not merged)",
        )
        for release in RELEASES
    },
    "index_state": {
        release: Preset(
            "restored",
            f"{_NO_RELEASE}: BucketAssignFunction keeps its index in Flink keyed state "
            "(indexState), restored with every checkpoint",
        )
        for release in RELEASES
    },
    "index_state_refresh": {
        "1.0": Preset(
            "every_record",
            "BucketAssignFunction#processRecord writes the index state for every changing record "
            '("always refresh the index", 1.0.0 cut d2aef6dd), as master did until after '
            "apache/hudi#17867",
        ),
        "1.1": Preset(
            "every_record",
            "as 1.0 (the 1.1.0 cut 4f80914b), as master did until after apache/hudi#17867",
        ),
        "latest": Preset(
            "every_record",
            "master writes the entry only when the location changes (after apache/hudi#17867, "
            "2026-01, still after #18759: BucketAssignFunction at 060bcfcd, 1bbaae90), so with "
            "index.state.ttl an entry updated in place expires and its key is inserted again "
            "(the testbed's finding, flink_state_ttl_not_refreshed); latest keeps 1.1's rule, "
            "the remedy",
        ),
    },
    "index_bootstrap_deletes": {
        release: Preset(
            "loaded",
            "BootstrapOperator#loadRecords sends every key of a slice's logs, deletes included "
            "(HoodieMergedLogRecordScanner#processNextDeletedRecord keeps them; master's file "
            "group reader runs with emitDelete): no Hudi release skips them, a finding of the "
            "testbed (global_index_bootstrap_deleted_copy), related to apache/hudi#4508",
        )
        for release in RELEASES
    },
    "index_bootstrap_reads": {
        release: Preset(
            "at_deploy",
            "BootstrapOperator#initializeState reads the timeline when its task is deployed; the "
            "write tasks' bootstrap events recommit the last checkpoint's instant meanwhile "
            "(handleBootstrapEvent): no release orders the two; upstream made the record-level "
            "index bootstrap wait (apache/hudi#18434), a finding of the testbed for the Flink "
            "state index (global_index_bootstrap_jm_late_commit)",
        )
        for release in RELEASES
    },
    "early_conflict_heartbeats": {
        release: Preset(
            "expired_skipped",
            f"{_NO_RELEASE}: MarkerUtils#getCandidateInstants keeps an older instant only while "
            "HoodieHeartbeatUtils#isHeartbeatExpired is false (RFC-56, Hudi 0.13 and later)",
        )
        for release in RELEASES
    },
    "append_clean": {
        "1.0": Preset(
            "flink_conf",
            "HUDI-6540 (apache/hudi#9211, 0.14): HoodieTableSink's append branch adds "
            "Pipelines.clean only if OptionsResolver#isLazyFailedWritesCleanPolicy(conf), which "
            "reads the Flink options alone (default EAGER), so an OCC append job has no cleaner",
        ),
        "1.1": Preset(
            "flink_conf",
            "as 1.0 (HUDI-6540, the 1.1.0 cut 4f80914b), where FlinkWriteClients"
            "#getHoodieClientConfig also forces LAZY on the write config only (HUDI-9534): a lone "
            "async append job cleans nothing",
        ),
        "latest": Preset(
            "write_config",
            "master still reads the Flink conf (OptionsResolver, HoodieTableSink, HUDI-6540); not "
            "reported upstream, the testbed's finding (append_never_cleans); latest asks the "
            "write config, the remedy",
        ),
    },
    "failed_writes_cleaning": {
        "1.0": Preset(
            "auto",
            "EAGER for one writer, LAZY inferred for multi-writer (HUDI-4676, apache/hudi#6459; "
            "Flink: HUDI-6540, apache/hudi#9211)",
        ),
        "1.1": Preset(
            "auto",
            "as 1.0, and FlinkWriteClients forces LAZY for non-blocking instant generation "
            "(HUDI-9534, apache/hudi#13464)",
        ),
        "latest": Preset("auto", "as 1.1 (HUDI-4676, HUDI-9534)"),
    },
}
"""Switch -> release -> :class:`Preset`: every ``[protocol]`` switch, every release."""


def preset_values(release: str) -> dict[str, str | bool]:
    """Switch -> the value ``release`` ships (``KeyError`` for an unknown release)."""
    if release not in RELEASES:
        raise KeyError(release)
    return {switch: by_release[release].value for switch, by_release in PRESETS.items()}


__all__ = ["LATEST", "PRESETS", "RELEASES", "Preset", "Release", "preset_values"]
