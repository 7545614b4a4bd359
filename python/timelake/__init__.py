"""Timelake: the open time-series lakehouse, from Python.

Arrow data in, SQL and pyarrow Tables out, stored as plain Apache Iceberg tables of Parquet
files on object storage or local disk::

    >>> import datetime as dt
    >>> import pyarrow as pa
    >>> import timelake
    >>> lake = timelake.Lake("warehouse")  # a local path, or a URL such as "s3://bucket/wh"
    >>> schema = pa.schema([("time", pa.timestamp("us", tz="UTC")),
    ...                     ("device_id", pa.int32()), ("temp", pa.float64())])
    >>> table = lake.create_table("iot.readings", schema, time_column="time",
    ...                           series_key=["device_id"])
    >>> now = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    >>> table.append(pa.table({"time": [now, now], "device_id": [1, 2],
    ...                        "temp": [20.5, 21.0]}, schema=schema))["rows"]
    2
    >>> lake.sql("SELECT avg(temp) AS temp FROM iot.readings").to_pylist()
    [{'temp': 20.75}]
    >>> lake.latest("iot.readings").num_rows  # the newest row of every device
    2

Data goes in from anything that speaks the Arrow PyCapsule interface (pyarrow Tables,
RecordBatches and RecordBatchReaders, polars DataFrames, DuckDB relations) and from pandas
DataFrames; results come out as ``pyarrow.Table`` (``Lake.sql``) or streamed
(``Lake.sql_reader``), sharing the engine's buffers without a copy. Every error is a
:class:`TimelakeError` of the kind the engine reported (:class:`NotFoundError`,
:class:`InvalidError`, :class:`ConflictError`, :class:`StorageError`, ...).

The package binds Timelake's C++ API; it is built against the Arrow C++ libraries of the
``pyarrow`` it is installed beside, so one Arrow is loaded and batches cross as they are.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import numbers as _numbers
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

# pyarrow first: the extension links the libarrow that pyarrow loads.
import pyarrow as _pa

from . import _timelake
from ._errors import (
    ERROR_CLASSES as _ERROR_CLASSES,
    AlreadyExistsError,
    ConfigError,
    ConflictError,
    CorruptError,
    InternalError,
    InvalidError,
    NotFoundError,
    StorageError,
    TimelakeError,
    UnsupportedError,
)
from ._types import (
    AppendResult,
    ArrowArrayExportable,
    ArrowSchemaExportable,
    ArrowStreamExportable,
    MaintainReport,
    SnapshotInfo,
    TableInfo,
    UpgradeReport,
)

__all__ = [
    "AlreadyExistsError",
    "AppendResult",
    "ArrowArrayExportable",
    "ArrowSchemaExportable",
    "ArrowStreamExportable",
    "ConfigError",
    "ConflictError",
    "CorruptError",
    "FORMAT_VERSION",
    "InternalError",
    "InvalidError",
    "Lake",
    "MaintainReport",
    "NotFoundError",
    "SnapshotInfo",
    "StorageError",
    "Table",
    "TableInfo",
    "TimelakeError",
    "UnsupportedError",
    "UpgradeReport",
    "__version__",
    "flush",
]

__version__: str = _timelake.__version__
#: The version of Timelake's on-storage format that this package writes.
FORMAT_VERSION: str = _timelake.FORMAT_VERSION

_timelake._set_error_classes(dict(_ERROR_CLASSES))

#: Rows per commit of ``Table.append`` unless told otherwise (as ``timelake append``'s).
DEFAULT_COMMIT_ROWS = 1_000_000


def flush() -> None:
    """Waits for the background writes of this process (version hints, head objects).

    Runs by itself at interpreter exit; call it before handing the warehouse to another
    process that should find those hints at once. Their failures are not reported
    (readers do without them).
    """
    _timelake.flush()


atexit.register(_timelake.flush)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _str_arg(value: Any, what: str) -> str:
    """``value`` when it is a str; a TypeError naming the argument otherwise (the native
    layer's own would only list the signatures)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {_type_name(value)}")
    return value


def _text(value: Any, what: str = "value") -> str:
    """A setting's or property's value as the engine reads it: text, a number, a bool
    or a ``timedelta``. Anything else (a list, None, bytes, an object) is a TypeError
    naming ``what`` rather than its ``str()`` stored as the value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.timedelta):
        millis = round(value.total_seconds() * 1000)
        return f"{millis}ms"
    if isinstance(value, (str, _numbers.Real)):
        return str(value)
    raise TypeError(
        f"{what} must be a str, number, bool or datetime.timedelta, got {_type_name(value)}"
    )


def _text_map(values: Optional[Mapping[str, Any]], what: str) -> dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise TypeError(f"{what} must be a mapping of names to values, got {_type_name(values)}")
    return {_str_arg(k, f"a key of {what}"): _text(v, f"{what}[{k!r}]") for k, v in values.items()}


def _arrow_data(data: Any) -> Any:
    """``data`` as something with ``__arrow_c_stream__`` or ``__arrow_c_array__``."""
    if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
        # pandas DataFrames speak the interface too, but would bring their index.
        if not _is_pandas(data):
            return data
    if _is_pandas(data):
        return _pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        "data must be Arrow data (an object with __arrow_c_stream__ or __arrow_c_array__: a "
        "pyarrow Table, RecordBatch or RecordBatchReader, a polars DataFrame, a DuckDB "
        f"relation) or a pandas DataFrame, got {type(data).__module__}.{type(data).__qualname__}"
    )


def _read_all(result: Any) -> _pa.Table:
    """A native result (``__arrow_c_stream__``) as a ``pyarrow.Table``, without a copy.
    Not ``pyarrow.table()``: it imports pandas to ask whether its argument is a
    DataFrame, which made a process's first query 0.45 s slower."""
    return _pa.RecordBatchReader.from_stream(result).read_all()


def _is_pandas(data: Any) -> bool:
    cls = type(data)
    return cls.__name__ == "DataFrame" and cls.__module__.split(".")[0] == "pandas"


class Table:
    """A Timelake table: an Iceberg table of Parquet files laid out for time series.

    A handle is at one committed version (``version``). Methods that commit (``append``,
    ``maintain``, ``set_properties``) advance the handle to the version they made;
    ``refresh()`` moves it to the newest version other writers committed. Handles are
    cheap; several may point at the same table. Get one from ``Lake.table`` or
    ``Lake.create_table``.
    """

    __slots__ = ("_lake", "_native")

    def __init__(self, lake: "Lake", native: "_timelake.Table") -> None:
        self._lake = lake
        self._native = native

    def __repr__(self) -> str:
        return f"Table({self.name}, v{self.version})"

    @property
    def name(self) -> str:
        """The full name, ``"namespace.table"``."""
        return self._native.name

    @property
    def location(self) -> str:
        """The table's root URL (what DuckDB's ``iceberg_scan`` or PyIceberg read)."""
        return self._native.location

    @property
    def version(self) -> int:
        """The metadata version this handle is at (N of ``vN.metadata.json``)."""
        return self._native.version

    @property
    def snapshot_id(self) -> Optional[int]:
        """The current Iceberg snapshot id, or None before the first append."""
        return self._native.snapshot_id

    @property
    def schema(self) -> _pa.Schema:
        """The table's schema as a ``pyarrow.Schema`` (fields carry ``PARQUET:field_id``)."""
        return _pa.schema(self._native.schema)

    @property
    def time_column(self) -> Optional[str]:
        """The time column, or None for a plain table."""
        return self._native.time_column

    @property
    def series_key(self) -> list[str]:
        """The columns that identify one series (may be empty)."""
        return list(self._native.series_key)

    @property
    def properties(self) -> dict[str, str]:
        """The table properties, the ``timelake.*`` contract included."""
        return dict(self._native.properties)

    def info(self) -> TableInfo:
        """Contract, size and layout of the current version.

        Keys: name, version, location, snapshot_id, time_column, series_key, chunk, dedup,
        rows, files, bytes, snapshots, properties.
        """
        return TableInfo(**self._native.info())  # type: ignore[typeddict-item]

    def refresh(self) -> "Table":
        """Moves this handle to the newest committed version and returns it.

        Raises NotFoundError when the table was dropped.
        """
        self._native = self._native.refresh()
        return self

    def set_properties(self, properties: Mapping[str, Any]) -> None:
        """Sets table settings and properties in one commit; ``None`` removes one.

        ``timelake.*`` keys are settings (any spelling: ``timelake.retention``,
        ``timelake.target_file_size``) and are checked; other keys are plain Iceberg
        properties. Values may be strings, numbers, booleans or ``datetime.timedelta``.
        Raises InvalidError for unknown settings, bad values and settings fixed at create
        (time column, series key, chunk); nothing is written then.
        """
        if not isinstance(properties, Mapping):
            raise TypeError(
                f"properties must be a mapping of names to values, got {type(properties).__name__}"
            )
        changes = {
            _str_arg(k, "a key of properties"): (
                None if v is None else _text(v, f"properties[{k!r}]")
            )
            for k, v in properties.items()
        }
        self._native = self._native.set_properties(changes)

    def append(
        self,
        data: Any,
        batch_id: Optional[str] = None,
        maintain: Optional[bool] = None,
        *,
        commit_rows: Optional[int] = DEFAULT_COMMIT_ROWS,
        max_commit_attempts: int = 20,
    ) -> AppendResult:
        """Appends Arrow data and returns commit statistics.

        ``data`` is anything with ``__arrow_c_stream__`` or ``__arrow_c_array__`` (pyarrow
        Table, RecordBatch, RecordBatchReader; polars DataFrame; DuckDB relation) or a
        pandas DataFrame. Columns are matched to the table by name and cast; missing
        nullable columns become nulls. Its buffers are read where they are, not copied.

        Up to ``commit_rows`` rows commit at once, so data of at most that many rows is one
        atomic commit; a longer stream commits every ``commit_rows`` rows and never holds
        more than that in memory (a reader of any length streams in bounded memory).
        ``commit_rows=None`` makes everything one commit, held in memory at once.

        ``batch_id`` makes the append idempotent: data appended before under the same id
        commits nothing again (``duplicate`` is then true and ``rows`` 0). Commits of a
        longer stream are tagged ``"<batch_id>#<first row>-<end row>"``, so re-running an
        interrupted append of the same data adds only what is missing.

        ``maintain`` runs inline maintenance after the commit (True), skips it (False), or
        follows the table's ``timelake.auto-maintain`` (None). That maintenance runs in the
        background, beside whatever comes next; the next append of the table reports it
        (``maintenance``: what finished during the call), ``maintain()`` waits for it, and
        so does ``flush()`` (called at exit). A failure of that maintenance does not fail
        the append: it is reported as ``maintenance_error``.

        Each commit is optimistic: when another writer committed first, it is rebased onto
        that commit and tried again, up to ``max_commit_attempts`` attempts (values below 1
        count as 1) before ConflictError.

        Returns the statistics: rows, input_rows, files, bytes, partitions, version,
        snapshot_id, sequence_number, commit_ms, write_ms, attempts, conflicts_rebased,
        commits, duplicate, and ``maintenance`` (a MaintainReport) when maintenance finished
        during the call.

        Raises InvalidError for data that does not fit the schema (extra columns, wrong
        types, null times; nothing is written), ConflictError when other writers kept
        winning, StorageError when storage failed.
        """
        if commit_rows is not None and (
            isinstance(commit_rows, bool) or not isinstance(commit_rows, int)
        ):
            raise TypeError(f"commit_rows must be an int or None, got {type(commit_rows).__name__}")
        native, result = self._native.append(
            _arrow_data(data), batch_id, maintain, commit_rows, int(max_commit_attempts)
        )
        self._native = native
        return AppendResult(**result)  # type: ignore[typeddict-item]

    def maintain(
        self,
        compact: bool = True,
        retention: bool = True,
        expire: bool = True,
        rollups: bool = True,
        *,
        clean_orphans: bool = True,
        orphan_age: Union[None, str, _dt.timedelta] = None,
        max_commit_attempts: int = 20,
    ) -> MaintainReport:
        """Runs maintenance now and returns what it did.

        In order: retention (drops partitions older than ``timelake.retention``),
        compaction (rewrites partitions into sorted, duplicate-free files of about
        ``timelake.target-file-size``), snapshot expiry (and deletion of the files only
        expired snapshots used), and the sweep of orphan files older than ``orphan_age``
        (default 24 hours; a duration such as ``"1h"`` or a ``datetime.timedelta``). Each
        step can be turned off; each commit is tried up to ``max_commit_attempts`` times
        over other writers' commits. Then, with ``rollups``, every materialized rollup of
        the table is refreshed (each listed under ``rollups`` in the report, with its
        ``error`` if it failed).

        Returns a MaintainReport: partitions_compacted, files_rewritten, files_written,
        rows_rewritten, duplicates_removed, bytes_rewritten, bytes_written,
        partitions_dropped, files_dropped, rows_dropped, snapshots_expired, files_deleted,
        orphans_deleted, objects_deleted, commits, conflicts, version, seconds; and
        rollups (when any was refreshed): a list of dicts rollup, rows, ranges, rebuilt,
        source_snapshot_id, files_rewritten and, when they failed, error and
        maintenance_error.

        Raises ConflictError when a rewrite's input files changed meanwhile (the steps
        before it stay committed), InvalidError for a malformed setting of the table.
        """
        age_ms: Optional[int] = None
        if isinstance(orphan_age, _dt.timedelta):
            age_ms = round(orphan_age.total_seconds() * 1000)
        elif isinstance(orphan_age, str):
            age_ms = _timelake.parse_duration(orphan_age)
        elif orphan_age is not None:
            raise TypeError(
                f"orphan_age must be a duration text or a timedelta, got {type(orphan_age).__name__}"
            )
        native, report = self._native.maintain(
            bool(retention), bool(compact), bool(expire), bool(clean_orphans), age_ms,
            int(max_commit_attempts), bool(rollups),
        )
        self._native = native
        return MaintainReport(**report)  # type: ignore[typeddict-item]

    def upgrade(
        self,
        dry_run: bool = False,
        compact: bool = True,
        keep_snapshots: Union[str, _dt.timedelta] = "7d",
        *,
        time_column: Optional[str] = None,
        series_key: Optional[Sequence[str]] = None,
        dedup: Optional[bool] = None,
        max_commit_attempts: int = 20,
    ) -> UpgradeReport:
        """Brings the table to this package's format, one commit per step, and says how.

        The steps, each made only when the table lacks what it adds: protect the snapshots
        from before the upgrade from expiry for ``keep_snapshots`` (a duration such as
        ``"7d"`` or a ``datetime.timedelta``), so that ``rollback`` to them stays possible;
        record the format version; add the time-series contract (properties, the
        ``_ingest_ts`` column, the sort order); build a missing last-value index; rewrite
        unsorted or small files (unless ``compact`` is False); write the head object.
        ``dry_run`` lists them and changes nothing. A run stopped part-way is finished by
        the next one; a current table gives no steps.

        ``time_column`` (with ``series_key`` and ``dedup``, as for ``create_table``) adopts a
        plain Iceberg table another engine wrote as a time-series table.

        Returns an UpgradeReport: ``steps`` (one line each), ``version_before``,
        ``snapshot_before`` (a rollback target), ``keep_snapshots_until_ms`` (when this run
        protected the snapshots), and ``dry_run``, ``from_format``, ``to_format``,
        ``version``, ``files_rewritten``, ``files_written``, ``rows_rewritten``,
        ``seconds``, ``step_details`` (``step``, ``description``, ``done``, ``version``).

        Raises InvalidError for a time column or series key that does not fit (nothing is
        written), UnsupportedError for a partitioning Timelake does not write or a newer
        table format, ConflictError when a step's commit kept losing races (the steps
        before it stay).
        """
        if isinstance(keep_snapshots, _dt.timedelta):
            keep_ms = round(keep_snapshots.total_seconds() * 1000)
        elif isinstance(keep_snapshots, str):
            keep_ms = _timelake.parse_duration(keep_snapshots)
        else:
            raise TypeError(
                "keep_snapshots must be a duration text or a timedelta, got "
                f"{type(keep_snapshots).__name__}"
            )
        if isinstance(series_key, str):
            series_key = [series_key]
        before = self._native.refresh()
        native, report = self._native.upgrade(
            bool(dry_run), bool(compact), keep_ms, time_column, list(series_key or []),
            dedup, int(max_commit_attempts),
        )
        self._native = native
        details = report.pop("steps")
        protected = next(
            (d for d in details if d["step"] == "protect-snapshots" and d["done"]), None
        )
        until = None
        if protected is not None:
            until = int(self.properties.get("timelake.keep-snapshots-until", "0")) or None
        return UpgradeReport(  # type: ignore[typeddict-item]
            steps=[d["description"] for d in details],
            version_before=before.version,
            snapshot_before=before.snapshot_id,
            keep_snapshots_until_ms=until,
            step_details=details,
            **report,
        )

    def rollback(self, snapshot_id: int) -> None:
        """Makes an earlier snapshot, one the table still keeps, the current one.

        A metadata-only commit: the table then reads exactly as it did at that snapshot,
        ``latest`` follows, and the batch ids of the snapshots left behind may be appended
        again. ``snapshots()`` lists the ids. Raises NotFoundError for a snapshot the table
        does not keep (nothing is written).
        """
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, _numbers.Integral):
            raise TypeError(
                f"snapshot_id must be an int (an id from snapshots()), got {_type_name(snapshot_id)}"
            )
        self._native = self._native.rollback(int(snapshot_id))

    def snapshots(self) -> list[SnapshotInfo]:
        """The snapshots this version keeps, oldest first (no storage request).

        Each: snapshot_id, parent_id, sequence_number, timestamp_ms, operation, rows,
        files, batch_id, current, in_history (false for those a rollback left behind).
        """
        return [SnapshotInfo(**s) for s in self._native.snapshots()]  # type: ignore[typeddict-item]

    def evolve_schema(
        self,
        *,
        add: Optional[Mapping[str, Any]] = None,
        rename: Optional[Mapping[str, str]] = None,
        widen: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """Changes the schema in one metadata-only commit; columns keep their field ids.

        ``rename`` maps old names to new ones, ``widen`` names to wider pyarrow types
        (int32 to int64, float32 to float64, a decimal to a larger precision), ``add``
        new nullable columns to their pyarrow types; they apply in that order. Data
        written before reads under the new schema (an added column as null), here and in
        other Iceberg engines. The time column, series key, ``_ingest_ts`` and the
        partition and sort columns keep their name and type.

        Raises InvalidError naming the change that cannot be made; nothing is written then.
        """
        changes: list[tuple[str, str, str, Any]] = []
        for old, new in (rename or {}).items():
            changes.append(("rename", str(old), str(new), None))
        for name, type_ in (widen or {}).items():
            changes.append(("widen", str(name), "", _pa.schema([_pa.field(str(name), type_)])))
        for name, type_ in (add or {}).items():
            changes.append(("add", str(name), "", _pa.schema([_pa.field(str(name), type_)])))
        if not changes:
            raise ValueError("evolve_schema needs add, rename or widen")
        self._native = self._native.evolve_schema(changes)


class Lake:
    """A warehouse of Timelake tables on object storage or local disk.

    ``location`` is a local path, ``"file:///abs/dir"``, ``"memory://"``,
    ``"s3://bucket/prefix"``, ``"gs://…"`` or ``"az://…"``. ``storage_options`` are the
    storage client's options, e.g. ``{"aws_endpoint": "http://localhost:9000",
    "aws_region": "us-east-1", "aws_allow_http": "true"}`` (credentials may also come from
    the environment). ``settings`` are session settings of every query, by SQL name,
    e.g. ``{"timelake.read_dedup": False}``; ``SET`` statements in ``sql`` change them
    later.

    A Lake holds one SQL session; threads may share it (their queries are planned one at a
    time and run concurrently). Raises ConfigError for a bad URL, scheme or option, and
    InvalidError for an unknown setting or a bad value.
    """

    __slots__ = ("_native",)

    def __init__(
        self,
        location: Union[str, "os.PathLike[str]"],
        storage_options: Optional[Mapping[str, Any]] = None,
        settings: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if not isinstance(location, (str, os.PathLike)):
            raise TypeError(
                "location must be a str or os.PathLike (a path, or a URL such as "
                f"'s3://bucket/prefix'), got {_type_name(location)}"
            )
        path = os.fspath(location)
        if not isinstance(path, str):
            raise TypeError(f"location must be a text path, got {_type_name(path)}")
        self._native = _timelake.Lake(
            path,
            _text_map(storage_options, "storage_options"),
            _text_map(settings, "settings"),
        )

    def __repr__(self) -> str:
        return f'Lake("{self.location}")'

    @property
    def location(self) -> str:
        """The warehouse URL, e.g. ``"file:///data/warehouse"``."""
        return self._native.url

    def namespaces(self) -> list[str]:
        """Namespaces holding at least one table, sorted."""
        return list(self._native.list_namespaces())

    def tables(self, namespace: Optional[str] = None) -> list[str]:
        """Names of all tables (or those of one namespace) as ``"namespace.table"``, sorted."""
        return list(self._native.list_tables(namespace or ""))

    def table(self, name: str) -> Table:
        """Opens an existing table at its newest version.

        ``name`` is ``"namespace.table"`` or ``"table"`` (namespace ``default``). Raises
        NotFoundError when there is no such table, InvalidError for a bad name,
        CorruptError for metadata that does not parse.
        """
        return Table(self, self._native.load_table(_str_arg(name, "name")))

    def create_table(
        self,
        name: str,
        schema: Any,
        time_column: Optional[str] = None,
        series_key: Union[None, str, Iterable[str]] = None,
        chunk: Optional[str] = None,
        retention: Union[None, str, _dt.timedelta] = None,
        dedup: Optional[bool] = None,
        properties: Optional[Mapping[str, Any]] = None,
    ) -> Table:
        """Creates a table from a pyarrow schema (or anything with ``__arrow_c_schema__``
        or a ``.schema``, such as a pyarrow Table).

        ``time_column`` makes a time-series table (the column becomes NOT NULL,
        microseconds UTC, and partitions by ``chunk``: ``"hour"``, ``"day"`` (default) or
        ``"month"``); without it the table is a plain one, e.g. device metadata.
        ``series_key`` names the columns of one series (a name or a list). ``retention``
        drops partitions older than it (``"90d"`` or a ``timedelta``). ``dedup`` keeps one
        row per (series, time), the latest write winning; by default it is on exactly when
        there is a series key. ``properties`` are further ``timelake.*`` settings and plain
        Iceberg properties.

        Raises InvalidError for a bad name, schema or option (nothing is written) and
        AlreadyExistsError when the table exists.
        """
        if isinstance(series_key, str):
            keys = [series_key]
        else:
            keys = [str(k) for k in (series_key or [])]
        props = _text_map(properties, "properties")
        if retention is not None:
            props["timelake.retention"] = _text(retention, "retention")
        return Table(
            self,
            self._native.create_table(
                name, schema, time_column, keys, chunk, dedup, props
            ),
        )

    def drop_table(self, name: str) -> None:
        """Deletes a table and all its files (metadata first).

        Raises NotFoundError when there is no such table.
        """
        self._native.drop_table(_str_arg(name, "name"))

    def sql(self, query: str, namespace: str = "default") -> _pa.Table:
        """Runs one SQL statement and returns its result as a ``pyarrow.Table``.

        Tables are ``namespace.table``; unqualified names resolve in ``namespace``. Any
        statement DataFusion runs works (SELECT, SHOW, EXPLAIN, ...), plus Timelake's
        functions (``time_bucket``, ...) and ``SET timelake.x = ...``, which changes this
        lake's session. The result's buffers are the engine's own (no copy). Ctrl-C stops
        the query. Raises InvalidError for SQL that does not parse or plan (with
        DataFusion's message), NotFoundError, StorageError, CorruptError.
        """
        return _read_all(
            self._native.sql(_str_arg(query, "query"), _str_arg(namespace, "namespace"))
        )

    def sql_reader(self, query: str, namespace: str = "default") -> _pa.RecordBatchReader:
        """Runs one SQL statement and streams its result as a ``pyarrow.RecordBatchReader``.

        The query runs as the reader is read, so a large result never needs to fit in
        memory. The reader speaks ``__arrow_c_stream__``: ``polars.from_arrow(reader)``,
        DuckDB (``duckdb.sql("SELECT ... FROM reader")``) and pyarrow consume it directly.
        It can be read once. Errors of planning raise here (as ``sql``); errors while
        running surface from the reader as pyarrow's exceptions with the engine's message.
        """
        return _pa.RecordBatchReader.from_stream(
            self._native.sql_reader(_str_arg(query, "query"), _str_arg(namespace, "namespace"))
        )

    def latest(self, table: Union[str, Table]) -> _pa.Table:
        """The newest row of every series of a table, as a ``pyarrow.Table``.

        Answered from the table's last-value index when it is current, else by a scan.
        Raises InvalidError for a plain table (no time column), NotFoundError.
        """
        name = table.name if isinstance(table, Table) else _str_arg(table, "table")
        return _read_all(self._native.latest(name))

    def explain_analyze(self, query: str) -> str:
        """EXPLAIN ANALYZE of a query: Timelake's file pruning per table scan, then
        DataFusion's executed plan with its metrics."""
        return self._native.explain_analyze(_str_arg(query, "query"))
