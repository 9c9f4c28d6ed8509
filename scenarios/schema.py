"""The scenario file format: its schema, its validation and its error messages.

A scenario is a TOML file that users write by hand and keep in scripts, so the format is a public
contract (documented key by key in ``docs/scenarios.md``) and the error for a bad file must be
ONE line naming the file, the dotted key and what is allowed: a user fixing a typo should never
have to read a pydantic traceback. That is why validation runs through pydantic (frozen, strict,
``extra="forbid"`` models, so a misspelt key is an error instead of a silently ignored default)
but every failure leaves this module as a :class:`ScenarioError`.

Some defaults depend on the whole file rather than on one key (a job's name is ``job<i>`` by its
position, only the first job runs table services, ``failed_writes_cleaning = "auto"`` is the
policy Hudi's Flink sink ends up with for the jobs and release, a job's ``clean_operator`` is
whether Hudi's sink builds one for it (:mod:`scenarios.cleaning`), ``[protocol] release`` gives every switch not written its
value in that Hudi release: :mod:`scenarios.releases`). They are filled in *before* field
validation, so a validated :class:`Scenario` holds only concrete values: the simulator never re-derives a default, and
:func:`resolved_toml` writes exactly what ran, which reads back to an equal scenario.

This layer imports nothing of ours (docs/design.md): the simulator, the CLI and the Spark sweeps all
depend on it, never the other way round.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any, Self

import tomli_w
from pydantic import BaseModel, Field, ValidationError, model_validator

from models.flink.write_buffer import MB, MERGE_READER_MB, MIN_REQUIRED_PAGES
from scenarios.cleaning import auto_cleaning, clean_operator
from scenarios.convert import convert, syntax_error
from scenarios.errors import RuleViolation, ScenarioError, number_text, show
from scenarios.faults import (
    FAULT_KINDS,
    FaultSpec,
    ScheduledFault,
    describe_targets,
    fault_targets,
    is_fault_target,
)
from scenarios.fields import INVARIANTS, MAX_RECORDS, Spec, check_column_name_at
from scenarios.job_rules import check_job_rules
from scenarios.releases import LATEST
from scenarios.tables import (
    FINDING_TAG,
    LARGE_TAG,
    PROTOCOL_VARIANTS,
    SCENARIO_TAGS,
    ExpectSpec,
    JobSpec,
    ProtocolSpec,
    ScenarioInfo,
    SimSpec,
    TableSpec,
    TimeSpec,
)

__all__ = [
    "FAULT_KINDS",
    "FINDING_TAG",
    "INVARIANTS",
    "LARGE_TAG",
    "PROTOCOL_VARIANTS",
    "SCENARIO_TAGS",
    "ExpectSpec",
    "FaultSpec",
    "JobSpec",
    "ProtocolSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioInfo",
    "ScheduledFault",
    "SimSpec",
    "TableSpec",
    "TimeSpec",
    "fault_targets",
    "load_scenario",
    "parse_scenario",
    "resolved_toml",
    "scenario_from_dict",
]


class Scenario(Spec):
    """A whole scenario file, validated, with every default (including positional ones) filled."""

    scenario: ScenarioInfo
    """``[scenario]``: required, because ``name`` is."""
    table: TableSpec = TableSpec()
    time: TimeSpec = TimeSpec()
    jobs: Annotated[tuple[JobSpec, ...], Field(strict=False, min_length=1)] = (JobSpec(),)
    faults: FaultSpec = FaultSpec()
    protocol: ProtocolSpec = ProtocolSpec(failed_writes_cleaning="LAZY")
    expect: ExpectSpec = ExpectSpec()
    sim: SimSpec = SimSpec()

    @model_validator(mode="before")
    @classmethod
    def _fill_contextual_defaults(cls, data: Any) -> Any:
        """Fill the defaults that depend on other keys, before the fields are validated.

        Anything malformed (``jobs`` not an array, a job not a table) is left alone for field
        validation to report with its precise key.
        """
        if not isinstance(data, dict):
            return data
        data = dict(data)
        jobs = data.get("jobs", [{}])
        if not isinstance(jobs, list | tuple):
            return data
        items = [_explicit_keys(job) for job in jobs]
        someone_explicit = any(
            item.get("table_services") is True for item in items if item is not None
        )
        filled: list[Any] = []
        for index, (job, item) in enumerate(zip(jobs, items, strict=True)):
            if item is None:
                filled.append(job)
                continue
            item.setdefault("name", f"job{index}")
            item.setdefault("table_services", index == 0 and not someone_explicit)
            if item.get("columns") and "ordering_field" not in item:
                item["ordering_field"] = f"{item['name']}_ts"
            filled.append(item)
        data["jobs"] = filled
        protocol = data.get("protocol", {})
        protocol = _explicit_keys(protocol)
        if protocol is not None:
            written = protocol.get("failed_writes_cleaning", "auto")
            if written == "auto":
                protocol["failed_writes_cleaning"] = auto_cleaning(
                    filled, protocol.get("release", LATEST)
                )
            for item in filled:
                if isinstance(item, dict) and "clean_operator" not in item:
                    item["clean_operator"] = clean_operator(item, protocol, written)
            data["protocol"] = protocol
        return data

    @model_validator(mode="after")
    def _multi_job_rules(self) -> Self:
        """Rules across jobs that Hudi itself enforces for multi-writer tables (docs/protocol.md section 7),
        and which index a job's options apply to."""
        names: dict[str, int] = {}
        for index, job in enumerate(self.jobs):
            if job.name in names:
                raise RuleViolation(
                    f"duplicate job name {show(job.name)} (also jobs[{names[job.name]}].name)",
                    key=f"jobs[{index}].name",
                    allowed="a name no other job has",
                )
            names[job.name] = index
            for option in ("index_bootstrap", "index_state_ttl_days"):
                if getattr(job, option) and job.index != "flink_state":
                    raise RuleViolation(
                        f"{option} applies to the Flink state index; the bucket index has none",
                        key=f"jobs[{index}].{option}",
                        allowed='the default, or index = "flink_state"',
                    )
            check_job_rules(job, index)
        services = [index for index, job in enumerate(self.jobs) if job.table_services]
        if len(services) > 1:
            raise RuleViolation(
                f"jobs[{services[0]}] already runs table services; only one job may",
                key=f"jobs[{services[1]}].table_services",
                allowed="true in at most one job",
            )
        if len(self.jobs) > 1:
            nbcc = [index for index, job in enumerate(self.jobs) if job.concurrency == "nbcc"]
            state = [i for i in nbcc if self.jobs[i].index != "bucket"]
            if state:
                raise RuleViolation(
                    f"jobs[{state[0]}] writes with NBCC through the {self.jobs[state[0]].index} "
                    "index; Hudi's NBCC requires the bucket index",
                    key=f"jobs[{state[0]}].index",
                    allowed='"bucket", or concurrency = "occ" in every job',
                )
            if nbcc and self.table.type != "MERGE_ON_READ":
                raise RuleViolation(
                    f"{self.table.type} cannot be written by several jobs with NBCC "
                    f"(jobs[{nbcc[0]}] uses nbcc; NBCC is MERGE_ON_READ + bucket index)",
                    key="table.type",
                    allowed='MERGE_ON_READ, or concurrency = "occ" in every job',
                )
            if self.protocol.failed_writes_cleaning == "EAGER":
                raise RuleViolation(
                    f"EAGER with {len(self.jobs)} jobs; Hudi requires LAZY for multi-writer",
                    key="protocol.failed_writes_cleaning",
                    allowed="LAZY, auto",
                )
        return self

    @model_validator(mode="after")
    def _column_group_rules(self) -> Self:
        """Multi-stream partial updates (docs/protocol.md section 5.3): every job writes its own column group of the
        same keys, on a MERGE_ON_READ table merged by event time."""
        grouped = [index for index, job in enumerate(self.jobs) if job.columns]
        for index, job in enumerate(self.jobs):
            if job.ordering_field and not job.columns:
                raise RuleViolation(
                    "only a job with columns has its own ordering field (whole records use ts)",
                    key=f"jobs[{index}].ordering_field",
                    allowed='"" without columns',
                )
        if not grouped:
            return self
        first = grouped[0]
        owner: dict[str, str] = {}
        for index, job in enumerate(self.jobs):
            if not job.columns:
                raise RuleViolation(
                    f"jobs[{first}] writes a column group, so every job must",
                    key=f"jobs[{index}].columns",
                    allowed="a non-empty array of column names",
                )
            if job.operation != "upsert":
                raise RuleViolation(
                    f"{show(job.operation)} with columns; a column group updates keys",
                    key=f"jobs[{index}].operation",
                    allowed="upsert",
                )
            named = [("ordering_field", job.ordering_field)]
            named += [(f"columns[{i}]", column) for i, column in enumerate(job.columns)]
            for where, column in named:
                key = f"jobs[{index}].{where}"
                if where == "ordering_field":
                    check_column_name_at(column, key)
                if column in owner:
                    raise RuleViolation(
                        f"column {show(column)} is already written by {owner[column]}",
                        key=key,
                        allowed="a column no other job or ordering field uses",
                    )
                owner[column] = f"jobs[{index}]" + (
                    " as its ordering field" if where == "ordering_field" else ""
                )
        if self.table.type != "MERGE_ON_READ":
            raise RuleViolation(
                f"{self.table.type} with column groups (jobs[{first}].columns); partial "
                "updates merge logs per column group",
                key="table.type",
                allowed="MERGE_ON_READ",
            )
        if self.table.merge_mode != "EVENT_TIME_ORDERING":
            raise RuleViolation(
                f"{self.table.merge_mode} with column groups (jobs[{first}].columns); each group "
                "is merged by its ordering value",
                key="table.merge_mode",
                allowed="EVENT_TIME_ORDERING",
            )
        return self

    @model_validator(mode="after")
    def _write_buffers_have_memory(self) -> Self:
        """A writer's buffer memory is positive (Hudi's check in ``MemorySegmentPoolFactory``)
        and holds a new bucket's pages."""
        for index, job in enumerate(self.jobs):
            if _buffer_pages(job) < MIN_REQUIRED_PAGES:
                least = (
                    MERGE_READER_MB
                    + job.write_merge_max_memory_mb
                    + (MIN_REQUIRED_PAGES * job.write_memory_segment_page_size_bytes / MB)
                )
                raise RuleViolation(
                    f"{number_text(job.write_task_max_size_mb)} MB leaves the write buffers less "
                    f"than {MIN_REQUIRED_PAGES} pages after the merge reader's 100 MB and "
                    "write_merge_max_memory_mb",
                    key=f"jobs[{index}].write_task_max_size_mb",
                    allowed=f"a number >= {least:.6g}",
                )
        return self

    @model_validator(mode="after")
    def _records_fit_in_memory(self) -> Self:
        """Every job's source records together stay below :data:`MAX_RECORDS`."""
        total = sum(job.records_per_s for job in self.jobs) * self.scenario.duration_s
        if total > MAX_RECORDS:
            raise RuleViolation(
                f"the jobs' records_per_s x duration_s is {total:.3g} records, more than a run "
                "holds in memory",
                key="scenario.duration_s",
                allowed=f"at most {MAX_RECORDS:,} records per run",
            )
        return self

    @model_validator(mode="after")
    def _fault_schedule_fits(self) -> Self:
        """Schedule entries name processes this scenario has, at times inside the run."""
        duration = number_text(self.scenario.duration_s)
        for index, entry in enumerate(self.faults.schedule):
            if entry.at_s >= self.scenario.duration_s:
                raise RuleViolation(
                    f"{number_text(entry.at_s)} is not before duration_s ({duration}); "
                    "faults stop when the run drains",
                    key=f"faults.schedule[{index}].at_s",
                    allowed=f"a number >= 0 and < {duration}",
                )
            if not is_fault_target(self, entry.kind, entry.target):
                raise RuleViolation(
                    f"unknown target {show(entry.target)} for kind {show(entry.kind)}",
                    key=f"faults.schedule[{index}].target",
                    allowed=describe_targets(self, entry.kind),
                )
        return self


def _buffer_pages(job: JobSpec) -> int:
    """Pages of a writer's buffer memory (``MemorySegmentPoolFactory``; none if not positive)."""
    memory_mb = job.write_task_max_size_mb - MERGE_READER_MB - job.write_merge_max_memory_mb
    return max(0, int(memory_mb * MB) // job.write_memory_segment_page_size_bytes)


def _explicit_keys(item: Any) -> dict[str, Any] | None:
    """The keys a user actually gave for one table (dict from TOML, or a model built in Python)."""
    if isinstance(item, dict):
        return dict(item)
    if isinstance(item, BaseModel):
        return {name: getattr(item, name) for name in item.model_fields_set}
    return None


# ---------------------------------------------------------------------------------------------
# reading and writing


def load_scenario(
    path: str | Path, *, seed: int | None = None, storage: str | None = None
) -> Scenario:
    """Read and validate a scenario file; ``seed`` and ``storage`` override the file (CLI flags).

    Overrides go through the same validation as the file, so ``--seed -1`` gets the same one-line
    error as ``seed = -1`` would.
    """
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise ScenarioError(
            source, "", f"cannot read the file: {error.strerror or error}"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ScenarioError(
            source, "", f"not UTF-8 text (byte {error.start})", "a UTF-8 TOML file"
        ) from None
    return parse_scenario(text, source, seed=seed, storage=storage)


def parse_scenario(
    text: str,
    source: str = "<string>",
    *,
    seed: int | None = None,
    storage: str | None = None,
) -> Scenario:
    """Validate scenario TOML text; ``source`` names it in errors (a file path or ``<string>``)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise syntax_error(source, error) from None
    return scenario_from_dict(data, source, seed=seed, storage=storage)


def scenario_from_dict(
    data: dict[str, Any],
    source: str = "<dict>",
    *,
    seed: int | None = None,
    storage: str | None = None,
) -> Scenario:
    """Validate an already parsed scenario (as TOML would give it); errors as :class:`ScenarioError`.

    For generators (property tests, sweeps) that build scenarios as data rather than text.
    """
    data = dict(data)
    overrides: dict[str, str] = {}
    if seed is not None:
        _override(data, "scenario", "seed", seed)
        overrides["scenario.seed"] = "--seed"
    if storage is not None:
        _override(data, "table", "storage", storage)
        overrides["table.storage"] = "--storage"
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        converted = convert(source, error, Scenario)
        flag = overrides.get(converted.key)
        if flag is None:
            raise converted from None
        raise ScenarioError(
            source, converted.key, f"{converted.message} (given by {flag})", converted.allowed
        ) from None


def _override(data: dict[str, Any], table: str, key: str, value: object) -> None:
    """Set ``[table] key`` in raw data; a malformed table is left for validation to report."""
    section = data.get(table, {})
    if isinstance(section, dict):
        data[table] = {**section, key: value}


def resolved_toml(scenario: Scenario) -> str:
    """The scenario with every default filled in, as TOML that reads back to an equal scenario.

    Written beside each run so the run can be repeated exactly, whatever defaults change later.
    Keys come in schema order, so equal scenarios give byte-identical text.
    """
    # mode="json" turns tuples into lists: tomli-w writes a list of dicts as [[jobs]] tables
    return tomli_w.dumps(scenario.model_dump(mode="json"))
