"""Types of the values the timelake package takes and returns."""

from __future__ import annotations

from typing import Any, Optional, Protocol, TypedDict, runtime_checkable


@runtime_checkable
class ArrowSchemaExportable(Protocol):
    """An Arrow schema through the Arrow PyCapsule interface, e.g. a ``pyarrow.Schema``."""

    def __arrow_c_schema__(self) -> Any:
        """Returns a PyCapsule holding an ``ArrowSchema``."""
        ...


@runtime_checkable
class ArrowArrayExportable(Protocol):
    """One batch of Arrow data, e.g. a ``pyarrow.RecordBatch``."""

    def __arrow_c_array__(self, requested_schema: Optional[Any] = None) -> tuple[Any, Any]:
        """Returns PyCapsules holding an ``ArrowSchema`` and an ``ArrowArray``."""
        ...


@runtime_checkable
class ArrowStreamExportable(Protocol):
    """A stream of Arrow data, e.g. a ``pyarrow.Table``, a polars DataFrame, a DuckDB relation."""

    def __arrow_c_stream__(self, requested_schema: Optional[Any] = None) -> Any:
        """Returns a PyCapsule holding an ``ArrowArrayStream``."""
        ...


class MaintainReport(TypedDict):
    """What a maintenance run did (``Table.maintain()``, or inline after an append)."""

    partitions_compacted: int
    files_rewritten: int
    files_written: int
    rows_rewritten: int
    duplicates_removed: int
    bytes_rewritten: int
    bytes_written: int
    partitions_dropped: int
    files_dropped: int
    rows_dropped: int
    snapshots_expired: int
    files_deleted: int
    orphans_deleted: int
    objects_deleted: int
    commits: int
    conflicts: int
    version: int
    seconds: float


class _AppendResultBase(TypedDict):
    rows: int
    input_rows: int
    files: int
    bytes: int
    partitions: int
    version: int
    snapshot_id: Optional[int]
    sequence_number: int
    commit_ms: float
    write_ms: float
    attempts: int
    conflicts_rebased: int
    commits: int
    duplicate: bool


class AppendResult(_AppendResultBase, total=False):
    """Statistics of one ``Table.append``.

    ``maintenance`` is present when inline maintenance ran; ``maintenance_error`` when it
    failed after the append committed (the data is in the table: run ``Table.maintain()``
    later instead of retrying the append). A skipped duplicate batch reports 0 rows, files
    and bytes with ``duplicate`` set. ``commits`` counts the commits made (an append longer
    than ``commit_rows`` makes several).
    """

    maintenance: MaintainReport
    maintenance_error: str


class TableInfo(TypedDict):
    """Contract, size and layout of a table version (``Table.info()``)."""

    name: str
    version: int
    location: str
    snapshot_id: Optional[int]
    time_column: Optional[str]
    series_key: list[str]
    chunk: Optional[str]
    dedup: bool
    rows: int
    files: int
    bytes: int
    snapshots: int
    properties: dict[str, str]


class UpgradeStepDetail(TypedDict):
    """One step of ``Table.upgrade``: its kind (``protect-snapshots``,
    ``record-format-version``, ``add-contract``, ``build-last-value-index``,
    ``rewrite-files``, ``write-head``), what it changes, whether it was made, and the
    table version it committed (None for a dry run or the head)."""

    step: str
    description: str
    done: bool
    version: Optional[int]


class UpgradeReport(TypedDict):
    """What ``Table.upgrade`` did (or, with ``dry_run``, would do).

    ``steps``, ``version_before``, ``snapshot_before`` and ``keep_snapshots_until_ms`` as
    Timelake 0.7 reports them; the rest is this package's.
    """

    steps: list[str]
    version_before: int
    snapshot_before: Optional[int]
    keep_snapshots_until_ms: Optional[int]
    dry_run: bool
    from_format: str
    to_format: str
    version: int
    files_rewritten: int
    files_written: int
    rows_rewritten: int
    seconds: float
    step_details: list[UpgradeStepDetail]


class SnapshotInfo(TypedDict):
    """One snapshot a table keeps (``Table.snapshots()``)."""

    snapshot_id: int
    parent_id: Optional[int]
    sequence_number: int
    timestamp_ms: int
    operation: str
    rows: int
    files: int
    batch_id: Optional[str]
    current: bool
    in_history: bool
