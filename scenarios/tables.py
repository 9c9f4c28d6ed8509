"""The tables of a scenario file other than ``[[faults.schedule]]``: ``[scenario]``, ``[table]``,
``[time]``, ``[[jobs]]``, ``[protocol]``, ``[expect]``, ``[sim]`` (docs/scenarios.md, key by key)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, get_args

from pydantic import Field, model_validator

from scenarios.errors import RuleViolation, show
from scenarios.fields import (
    MAX_RECORDS,
    MAX_SEED,
    MS_PER_HOUR,
    SECONDS_PER_DAY,
    ColumnName,
    InvariantName,
    JobName,
    Milliseconds,
    ScenarioName,
    Seconds,
    Spec,
    integer_in,
    number_in,
)
from scenarios.releases import LATEST, RELEASES, Release, preset_values

# ---------------------------------------------------------------------------------------------
# the tables


ScenarioTag = Literal["large", "finding"]
SCENARIO_TAGS: tuple[str, ...] = get_args(ScenarioTag)
"""Tags a ``[scenario] tags`` list may use (docs/scenarios.md)."""
LARGE_TAG = "large"
"""A scenario too big for the default suites and test runs (it is run by name)."""
FINDING_TAG = "finding"
"""A scenario that runs Hudi's own rules and expects a violation: a hazard the testbed found."""


class ScenarioInfo(Spec):
    """``[scenario]``: what the scenario is and how long it runs."""

    name: ScenarioName
    """Identifies the scenario in reports and run folders (so it is never a path); catalog files
    use their file stem."""
    description: str = ""
    """One or two sentences on what the scenario shows, printed in the report."""
    duration_s: Seconds = 60.0
    """Simulated seconds of load and faults; then the source stops and the run drains."""
    seed: integer_in(0, MAX_SEED) = 0
    """Seed of every random draw; same scenario + seed + code = the same history."""
    tags: Annotated[tuple[ScenarioTag, ...], Field(strict=False)] = ()
    """Labels that change where the scenario runs, not what it does: ``large`` (millions of
    records, minutes of CPU) keeps a catalog scenario out of the ``"*"`` suite patterns and the
    default test runs; it runs only where named (the ``large`` suite)."""


class TableSpec(Spec):
    """``[table]``: the Hudi table all jobs write to."""

    type: Literal["MERGE_ON_READ", "COPY_ON_WRITE"] = "MERGE_ON_READ"
    """Hudi table type; NBCC between several jobs needs MERGE_ON_READ."""
    storage: Literal["memory", "local"] = "memory"
    """Where the table's files go: in memory (fast) or a real folder (readable by hudi-rs)."""
    storage_profile: Literal["local", "object_store"] = "local"
    """What each storage request costs in simulated time (:mod:`sim.storage_profiles`):
    ``local``, every request ``[sim] storage_latency_ms`` and writes at 1 MB per ms; or
    ``object_store``, a latency per request kind (tens of ms) and 100 MB/s both ways."""
    markers: Literal["direct", "timeline_server"] = "direct"
    """How write tasks create markers (Hudi's ``hoodie.write.markers.type``; Flink's default is
    ``direct``): one marker file per data file, or names sent to the coordinator's embedded
    timeline server, which batches them into ``MARKERS<n>`` files (:mod:`sim.marker_server`)."""
    marker_batch_interval_ms: integer_in(1, 60_000) = 50
    """``timeline_server``: how often the server writes a batch of marker requests (Hudi's
    ``hoodie.markers.timeline_server_based.batch.interval_ms``)."""
    marker_batch_threads: integer_in(1, 1000) = 20
    """``timeline_server``: the server's batch workers, each with its ``MARKERS<n>`` file (Hudi's
    ``hoodie.markers.timeline_server_based.batch.num_threads``)."""
    partitions: integer_in(1, 1000) = 2
    """Number of partitions records are spread over."""
    buckets_per_partition: integer_in(1, 1000) = 4
    """Bucket-index buckets (file groups) per partition; a key always maps to the same bucket."""
    merge_mode: Literal["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"] = "EVENT_TIME_ORDERING"
    """Which version of a key wins when merging: highest event time, or latest commit."""


class TimeSpec(Spec):
    """``[time]``: how instant times are generated and how wrong the clocks are."""

    generator: Literal["truetime", "local_clock", "time_service"] = "truetime"
    """Instant-time generator: Hudi's TrueTime (lock + wait out skew), a bare local clock, or a
    central time service."""
    max_expected_skew_ms: Milliseconds = 200
    """TrueTime's assumed bound on clock skew (Hudi's max expected clock skew); it waits this out."""
    clock_skew_ms: Milliseconds = 50
    """Each process's clock offset is drawn uniformly from [-clock_skew_ms, clock_skew_ms]."""
    clock_drift_ppm: number_in(0, 100_000) = 0.0
    """Each process's clock rate error is drawn uniformly from [-x, x] parts per million."""
    lock_latency_ms: integer_in(0, 60_000) = 5
    """Time to acquire the timeline lock that TrueTime takes."""


class JobSpec(Spec):
    """``[[jobs]]``: one Flink job writing to the table (one coordinator, several writers).

    ``name`` and ``table_services`` default by position inside a :class:`Scenario` (``job<i>``;
    true only for the first job). Standalone, a ``JobSpec`` has the first job's defaults.
    """

    name: JobName = "job0"
    """Unique name of the job; default ``job<i>`` by position (job0, job1, ...)."""
    writers: integer_in(1, 256) = 4
    """Parallelism of the write operator (number of write tasks)."""
    instant_generation: Literal["async", "blocking", "minibatch"] = "async"
    """Coordinator mode: async (Hudi 1.1), blocking (one instant at a time), minibatch (proposal)."""
    checkpoint_interval_s: number_in(0.01, 3600) = 5.0
    """Flink checkpoint interval."""
    checkpoint_timeout_s: number_in(0.01, SECONDS_PER_DAY) = 60.0
    """A checkpoint not complete after this long fails."""
    commit_ack_timeout_s: number_in(0.01, SECONDS_PER_DAY) = 300.0
    """Blocking mode: how long the coordinator refuses a task's instant request while an earlier
    instant waits for its commit before it fails the job (Hudi's ``write.commit.ack.timeout``,
    the ``CommitGuard``'s wait; 300 s in Hudi 1.1)."""
    records_per_s: number_in(0, 1_000_000, open_low=True) = 1000.0
    """Source rate of the whole job, spread over its writers by key."""
    write_batch_size_mb: number_in(0, 1_000_000, open_low=True) = 256.0
    """Hudi's ``write.batch.size``: a writer flushes a bucket (file group) holding more than
    this many MB of records at once, between checkpoints (an eager flush, a mini-batch)."""
    write_task_max_size_mb: number_in(0, 1_000_000, open_low=True) = 1024.0
    """Hudi's ``write.task.max.size``: a writer's memory; its buffers get what is left after
    the merge reader's 100 MB and ``write_merge_max_memory_mb``, and when they are full the
    largest bucket is flushed."""
    write_merge_max_memory_mb: number_in(0, 1_000_000) = 100.0
    """Hudi's ``write.merge.max_memory``."""
    write_memory_segment_page_size_bytes: integer_in(16, 1 << 30) = 32768
    """Hudi's ``write.memory.segment.page.size``: the page size of a writer's buffer memory."""
    record_payload_bytes: integer_in(0, 1 << 30) = 0
    """Bytes each record carries besides the columns the model writes (a payload it does not
    materialise), counted in the write buffers' sizes only; a record's size is its Flink
    ``BinaryRowData`` size plus this."""
    allow_empty_commit: bool = True
    """Hudi's ``hoodie.allow.empty.commit`` (true from 1.0): a checkpoint without data commits
    an empty instant; false: the coordinator drops it, stops its heartbeat, and failed-writes
    cleaning rolls it back later (EAGER at the next instant, LAZY at the next clean)."""
    write_ignore_failed: bool = False
    """Hudi's ``write.ignore.failed`` (false from 0.13, HUDI-4686): records a write handle fails
    to write are left out and the instant still commits (true: they are lost, the checkpoint
    moving past them), or they fail the write (false: the task fails, or the coordinator rolls
    the instant back and fails the job, as ``[protocol] record_write_failure`` says)."""
    buffer_records: integer_in(0, MAX_RECORDS) = 0
    """Not Hudi's (older scenario files): a cap on the records a writer buffers; reaching it
    flushes the largest bucket, as a full buffer memory does. 0: no cap."""
    operation: Literal["upsert", "insert"] = "upsert"
    """Write operation; insert never deduplicates, so a re-written batch shows up twice."""
    key_space: integer_in(1, 1_000_000_000) = 10000
    """Number of distinct record keys the source draws from."""
    table_services: bool = True
    """Whether this job schedules and runs compaction, clean and archive; default true for the
    first job, false for the others; at most one job may run them."""
    clean_operator: bool = True
    """Whether the table-services job's pipeline has Hudi's clean operator (``clean_commits``,
    the only place a LAZY job rolls back failed writes). Default: what Hudi's
    ``HoodieTableSink#getSinkRuntimeProvider`` builds: always for an upsert job, for an insert
    (append) job as ``[protocol] append_clean`` says; false for a job without table services."""
    compaction_every_commits: integer_in(1, 100_000) = 5
    """Schedule a compaction after this many delta commits (MERGE_ON_READ)."""
    concurrency: Literal["nbcc", "occ"] = "nbcc"
    """Concurrency control between jobs: non-blocking (NBCC) or optimistic (OCC)."""
    early_conflict_detection: bool = False
    """Hudi's ``hoodie.write.concurrency.early.conflict.detection.enable`` (OCC only): before a
    write task creates a new log file's marker it looks for a marker of the same file group from
    an older instant whose heartbeat is live, and fails the task on one
    (``SimpleDirectMarkerBasedDetectionStrategy``); with ``[table] markers =
    "timeline_server"`` the server checks every ``async_conflict_detector_period_ms`` and refuses
    the markers of an instant it found in conflict (``AsyncTimelineServerBasedDetectionStrategy``).
    The OCC check at commit stays."""
    async_conflict_detector_period_ms: integer_in(1, 3_600_000) = 30_000
    """Hudi's ``hoodie.write.concurrency.async.conflict.detector.period_ms``: how often the
    timeline server's early conflict detection checks (timeline-server markers only)."""
    index: Literal["bucket", "flink_state"] = "bucket"
    """Hudi's ``index.type`` for upserts: ``bucket`` (a file group per hashed bucket; what NBCC
    requires) or ``flink_state`` (Hudi's Flink default: a bucket-assigner operator keeps each
    key's file group in Flink state and packs new keys into small files or new file groups)."""
    index_bootstrap: bool = False
    """Hudi's ``index.bootstrap.enabled`` (``flink_state`` only): at every start and restore the
    record keys of the table's latest file slices are loaded into the assigners' keyed state
    before any record passes (``BootstrapOperator``); after a restore only when an instant
    requested after the checkpoint's last pending one has completed."""
    index_state_ttl_days: number_in(0, 36_500) = 0.0
    """Hudi's ``index.state.ttl`` (``flink_state`` only), in days: a key whose index entry was
    not written for this long reads as unknown and takes the insert path (Flink state TTL on
    processing time, refreshed by every record of the key). 0: never expires (Hudi's default
    from 0.10; 0.9 had 1.5 days, apache/hudi#4508)."""
    index_global: bool = True
    """Hudi's ``index.global.enabled`` (``flink_state`` only, default true): a key whose record
    names another partition than its index entry is deleted from the old partition's file group
    and inserted into the new partition (``BucketAssignFunction#processRecord``); false: it is
    inserted into the new partition and its old copy stays. Only a job with
    ``partition_period_s`` moves keys."""
    partition_period_s: number_in(0, 86_400) = 0.0
    """Upsert: the table is partitioned by event time in periods of this many seconds, each key's
    partition moving to the next one at every period's start (a table partitioned by update
    time); 0: a key stays in its partition. Only the global Flink state index (``index =
    "flink_state"``, ``index_global = true``) deletes the old copy of a moved key; under any other
    index the key stays live in both partitions, which the checkers flag (a key is judged across
    the table once keys move)."""
    parquet_max_file_size_mb: number_in(0, 1_000_000, open_low=True) = 120.0
    """Hudi's ``write.parquet.max.file.size``: under ``flink_state``, a file group is a small
    file with room for ``(this - its size) / 1024`` more records (1024 bytes: Hudi's record size
    estimate); a small value makes new file groups appear at the testbed's sizes."""
    failover: Literal["region", "full"] = "region"
    """Flink's ``jobmanager.execution.failover-strategy``: a failed write task restarts its
    region, the coordinator keeping its state (region, Flink's default), or the whole job with
    the coordinator reset to the checkpoint (full)."""
    columns: Annotated[tuple[ColumnName, ...], Field(strict=False)] = ()
    """Multi-stream partial updates (docs/protocol.md section 5.3): the column group this job writes (its records
    carry only these columns besides key, part, ts, offset, job); empty: whole records. When one
    job has columns every job must, and no two jobs may write the same column."""
    ordering_field: str = ""
    """The column holding this job's column-group ordering value; default ``<name>_ts`` for a job
    with ``columns``, empty (the table's ``ts``) for whole records."""


class ProtocolSpec(Spec):
    """``[protocol]``: variant switches of the protocol; the default is always the real Hudi rule.

    This class IS the list of variants: one line per switch, a ``Literal`` of its choices with
    the real rule as default. :data:`PROTOCOL_VARIANTS` is derived from it. ``release`` is not a
    switch: it names a Hudi release whose values (:data:`scenarios.releases.PRESETS`) fill every
    switch not given, so the defaults are the ``latest`` preset.
    """

    release: Release = LATEST
    """The Hudi release whose rules the switches not given take (``1.0``, ``1.1``, or
    ``latest``: the real rules, with the known fixes); a switch given explicitly wins."""
    file_slicing: Literal["completion_time", "base_instant"] = "completion_time"
    """Place a log file by its completion time (Hudi 1.x, RFC-66) or by its base instant (0.x)."""
    slice_anchor: Literal["earliest_completed", "earliest_log"] = "earliest_completed"
    """For a file group with only log files, which log anchors its first slice: the earliest
    completed one (the fix) or the earliest whatever its state (apache/hudi#19774)."""
    archived_completion_lookup: bool = True
    """Completion-time lookup falls back to the archived timeline (true), or reads only the active
    one (false: apache/hudi#14365, logs of archived instants drop out of compaction plans)."""
    persist_write_meta: bool = True
    """A write task keeps its write-metadata events in its checkpoint state and re-sends them after
    a failover (true), or keeps nothing (false: HUDI-9570's data loss; docs/protocol.md 6.6)."""
    put_if_absent: bool = True
    """Timeline files are created only if absent, so a time collision aborts the second writer
    (true), or storage silently overwrites them (false: the collision hides a lost write)."""
    commit_scope: Literal["all_below", "latest_only"] = "all_below"
    """On the ACK for checkpoint n the coordinator commits every buffered instant below n in order
    (all_below, Flink's subsume contract), or only the newest, dropping those whose ACK was lost."""
    snapshot_partial_buffers: bool = False
    """The coordinator's checkpoint keeps only fully received event buffers (false), or also ones
    whose slots are empty or last batches (true: Hudi 1.1, apache/hudi#19215: a buffer stored
    empty overwrites the filled one on a global failover and its instant is dropped)."""
    reset_recommit: Literal["immediate", "next_notification"] = "immediate"
    """A global failover's reset re-commits the restored instants at once (immediate:
    apache/hudi#19237), or leaves them to the next notification (Hudi 1.1, which with
    snapshot_partial_buffers loses a completed checkpoint's data: apache/hudi#19215)."""
    restored_checkpoint_id: Literal["always", "attempt_gt_0"] = "always"
    """A restored write task takes the restored checkpoint id as its own always (apache/hudi#19952)
    or only at attempt > 0 (Hudi 1.1: after a JobManager failover or a rescale it asks for
    instants under -1 and can be handed a restored instant: apache/hudi#19922)."""
    restored_events_resend: Literal["attempt_0", "every_attempt"] = "attempt_0"
    """A restarted write task re-sends the pending events of its restored state only when Flink
    deployed it afresh (attempt_0: Hudi 1.1 and later, which loses them when a task restarts
    before its attempt-0 bootstrap reached a new coordinator) or at every attempt
    (every_attempt: Hudi 1.0)."""
    recommit_baseline: Literal["job", "coordinator"] = "job"
    """OCC: the instants a job committed before stay out of its recommit's conflict check
    (job: the rule apache/hudi#19023 proposes) or a new coordinator forgets them (coordinator:
    every Hudi release; after a JobManager failover the recommit conflicts with the job's own
    commits and the job restarts forever, apache/hudi#19024)."""
    checkpoint_deferred_recommits: bool = True
    """The coordinator's checkpoint keeps a restored instant waiting for its deferred recommit
    (true: the remedy proposed on apache/hudi#19922), or drops it (false: every Hudi release; a
    second restart before the deferred commit loses the batch)."""
    pending_file_ids: Literal["adopted", "ignored"] = "adopted"
    """A bucket-index write task loading a partition's file ids takes the coordinator's pending
    ones too (adopted: Hudi master, EventBuffers#getPendingWriteFileIds) or only the committed
    view's (ignored: Hudi 1.1; a task restarted before its bucket's first commit mints a second
    file id for the bucket, apache/hudi#19907)."""
    index_state: Literal["restored", "lost"] = "restored"
    """The Flink state index's keyed state (key -> file group) comes back with the checkpoint a
    job restores (restored: Flink's keyed state), or the assigner starts empty at every restart
    (lost: a job started without its state, apache/hudi#9174; known keys are inserted again,
    into whatever small or new file group the assigner picks)."""
    index_state_refresh: Literal["every_record", "location_change"] = "every_record"
    """The Flink state index with a TTL (``index_state_ttl_days``): the bucket assigner writes a
    key's entry for every record, restarting its TTL (every_record: Hudi 1.0 and 1.1, "always
    refresh the index"), or only when the key's location changes (location_change: Hudi master
    since early 2026, after apache/hudi#17867; an entry updated in place expires a TTL after the
    key's insert, and its next record is inserted again, into a second file group)."""
    index_bootstrap_deletes: Literal["loaded", "skipped"] = "loaded"
    """The Flink state index's bootstrap (``index_bootstrap``) sends a key whose last log entry
    in a file slice is a delete like any key of the slice (loaded: every Hudi release; the last
    location a key gets wins, so with the global index a moved key's old location can replace
    its live one), or leaves it out (skipped: a bootstrap of live keys only, the remedy)."""
    index_bootstrap_reads: Literal["at_deploy", "after_recommit"] = "at_deploy"
    """When the index bootstrap (``index_bootstrap``) reads the table after a restore: as soon as
    its task is deployed, after the coordinator's restart step (at_deploy: every Hudi release,
    ``BootstrapOperator#initializeState``; after a job manager failover the instant of the last
    completed checkpoint is recommitted only once the write tasks' bootstrap events are in), or
    once every write task's bootstrap event is in and what they re-sent is recommitted
    (after_recommit: the remedy, as upstream did for the record-level index bootstrap,
    apache/hudi#18434)."""
    instant_request: Literal["polled", "blocked"] = "polled"
    """Blocking instant generation: a request for an instant the commit guard holds back is
    answered at once with "not yet" and the task asks again, the guarded creation running apart
    (polled: apache/hudi#19960, Hudi 1.1.2 and master), or waits on the guard inside the
    coordinator's one instant-request thread, every other request queued behind it (blocked:
    Hudi 1.1.0; a task that must flush a mini-batch into the current instant before its barrier
    cannot, and nothing commits until write.commit.ack.timeout fails the job; its RPC times out
    first, apache/hudi#19902)."""
    record_write_failure: Literal["throw", "mark"] = "throw"
    """A record a write handle fails to write throws and fails the write task before its
    checkpoint (throw: Hudi master's handles unless ``write.ignore.failed``; the batch is
    replayed), or is marked failed in the write status and left out while the rest is written
    (mark: Hudi 1.1 and before; the coordinator's ``doCommit`` then rolls the instant back and
    fails the job after the checkpoint completed, so the batch is lost: apache/hudi#18051)."""
    partial_update_merge: Literal["column_group", "row"] = "column_group"
    """Multi-stream partial updates (jobs with ``columns``): merge each column group by its own
    ordering value (column_group, the real rule: PartialUpdateAvroPayload with HUDI-4882's
    per-group ordering), or merge whole rows on ``ts`` (row: the table left as an ordinary
    EVENT_TIME_ORDERING table, so a newer record of one stream wipes the other's columns)."""
    marker_write_failure: Literal["fail", "swallow"] = "fail"
    """Timeline-server markers (``[table] markers = "timeline_server"``): a ``MARKERS<n>`` file
    the server fails to write fails the batch's requests and drops its names (fail:
    apache/hudi#19368), or the failure is swallowed (swallow: Hudi 1.0 and 1.1 close the file
    with ``closeQuietly`` in ``MarkerDirState#flushMarkersToFile``): the requests are answered
    as created and the names live only in the server's memory, so a rollback, which reads the
    files, misses the data files they name."""
    marker_answer: Literal["after_write", "before_write"] = "after_write"
    """Timeline-server markers: a batch of marker requests is answered once its ``MARKERS<n>``
    file is written (after_write, every Hudi release: ``processMarkerCreationRequests``), or as
    soon as it is accepted in memory (before_write: a hypothetical server that saves the write's
    latency; a crash before the write loses markers of data files the tasks go on to write)."""
    early_conflict_heartbeats: Literal["expired_skipped", "expired_as_live"] = "expired_skipped"
    """Early conflict detection (``[[jobs]] early_conflict_detection``): an older instant whose
    heartbeat expired is no candidate, its writer presumed dead (expired_skipped: every Hudi
    release, ``MarkerUtils#getCandidateInstants`` filters on ``isHeartbeatExpired``), or its
    markers count as a live writer's (expired_as_live: a check that ignores heartbeats; a zombie's
    markers then fail every newer writer of its file groups until a cleaner rolls it back)."""
    append_clean: Literal["write_config", "flink_conf"] = "write_config"
    """Whether an insert (append) job's pipeline gets the clean operator: when its write client
    cleans failed writes LAZY, whatever made it so (write_config: the remedy; LAZY inferred for
    OCC or forced for async instants then rolls back failed writes), or only when LAZY is set in
    its Flink options (flink_conf: ``OptionsResolver#isLazyFailedWritesCleanPolicy`` reads the
    Flink conf, default EAGER, HUDI-6540 apache/hudi#9211, Hudi 0.14 to master; an append job
    that is LAZY by inference or by 1.1's forcing has no cleaner and leaves failed writes
    pending for good)."""
    failed_writes_cleaning: Literal["auto", "EAGER", "LAZY"] = "auto"
    """Rollback of failed writes: EAGER (before each write) or LAZY (by heartbeat expiry); auto is
    what Hudi's Flink sink ends up with: LAZY for several jobs or OCC; for one job EAGER under
    blocking instant generation (and always in release 1.0), else LAZY. Resolved when the
    scenario is validated."""

    @model_validator(mode="before")
    @classmethod
    def _fill_from_release(cls, data: Any) -> Any:
        """Every switch not given takes the value its ``release`` ships."""
        if not isinstance(data, dict):
            return data
        release = data.get("release", LATEST)
        if not isinstance(release, str) or release not in RELEASES:
            problem = f"unknown release {show(release)}"
            if isinstance(release, int | float) and not isinstance(release, bool):
                problem = f"{show(release)} is a number; a release is a string"
            raise RuleViolation(
                problem,
                key="protocol.release",
                allowed=", ".join(show(name) for name in RELEASES),
            )
        return {**preset_values(release), **data}

    def switches(self) -> dict[str, str | bool]:
        """Switch -> the value this run uses (``release`` left out): what the history's
        ``setup`` event records; a switch of :data:`RECORDED_WHEN_SET` only when it is not the
        real rule."""
        return {
            name: getattr(self, name)
            for name in PROTOCOL_VARIANTS
            if name not in RECORDED_WHEN_SET
            or getattr(self, name) != ProtocolSpec.model_fields[name].default
        }


class ExpectSpec(Spec):
    """``[expect]``: the verdict the scenario must get; a different one fails the suite."""

    violations: Annotated[tuple[InvariantName, ...], Field(strict=False)] = ()
    """Invariants this scenario must violate (known-bad variants); all others must hold."""

    @model_validator(mode="after")
    def _no_duplicates(self) -> Self:
        seen: set[str] = set()
        for index, name in enumerate(self.violations):
            if name in seen:
                raise RuleViolation(
                    f"{show(name)} is listed twice",
                    key=f"expect.violations[{index}]",
                    allowed="each invariant at most once",
                )
            seen.add(name)
        return self


class SimSpec(Spec):
    """``[sim]``: tuning knobs of the simulated world that scenarios rarely change."""

    drain_timeout_s: Seconds = 120.0
    """After duration_s, faults stop and the source stops; the run then drains until everything
    checkpointed is committed, and fails liveness if that takes longer than this."""
    restart_delay_ms: Milliseconds = 1000
    """Time from a crash to the restart of the failed task or job."""
    network_delay_ms: integer_in(0, 60_000) = 2
    """One-way delay of an RPC between tasks and the coordinator."""
    rpc_ask_timeout_ms: integer_in(1, MS_PER_HOUR) = 10000
    """Flink's ``pekko.ask.timeout``: a write task's instant request not answered within this
    fails the task ("Error requesting the instant time from the coordinator")."""
    storage_latency_ms: integer_in(0, 60_000) = 5
    """Latency of one storage operation (create, read, list)."""
    heartbeat_interval_ms: integer_in(1, MS_PER_HOUR) = 60000
    """Writer heartbeat interval (hoodie.client.heartbeat.interval_in_ms)."""
    heartbeat_tolerable_misses: integer_in(1, 1000) = 2
    """Missed heartbeats before a write counts as failed, for LAZY cleaning."""
    archive_max_active: integer_in(2, 100_000) = 30
    """Archive when the active timeline holds more completed instants than this."""
    archive_min_active: integer_in(1, 100_000) = 20
    """Completed instants the active timeline keeps after archiving; below archive_max_active."""
    max_wall_s: number_in(0, 7 * SECONDS_PER_DAY, open_low=True) = 3600.0
    """Wall-clock seconds a run may take before it is stopped as a runaway (an error, and a
    partial run folder marked as such); it never changes what a finished run records."""

    @model_validator(mode="after")
    def _archive_window(self) -> Self:
        if self.archive_min_active >= self.archive_max_active:
            raise RuleViolation(
                f"{self.archive_min_active} is not below archive_max_active "
                f"({self.archive_max_active})",
                key="sim.archive_min_active",
                allowed=f"an integer >= 1 and < archive_max_active ({self.archive_max_active})",
            )
        return self


RECORDED_WHEN_SET = frozenset(
    {
        "marker_write_failure",
        "marker_answer",
        "index_state_refresh",
        "index_bootstrap_deletes",
        "index_bootstrap_reads",
        "early_conflict_heartbeats",
        "append_clean",
    }
)
"""Switches a history's ``setup`` event names only when a run departs from the real rule (a
run on the real rules records none of them)."""

PROTOCOL_VARIANTS: dict[str, tuple[str | bool, ...]] = {
    name: (field.default, not field.default)
    if field.annotation is bool
    else get_args(field.annotation)
    for name, field in ProtocolSpec.model_fields.items()
    if name != "release"
}
"""Switch name -> its choices, the real rule (the default) first, derived from
:class:`ProtocolSpec` (for sweeps and reports); ``release`` is a preset, not a switch."""
