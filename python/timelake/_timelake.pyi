"""Type stubs of timelake._timelake, the native half of the package (python/src/).

Use the timelake package; this module's API follows the C++ one and may change.
"""

from typing import Any, Optional

__version__: str
FORMAT_VERSION: str

def _set_error_classes(classes: dict[str, type[BaseException]]) -> None:
    """Hands over the exception classes, by name (NotFoundError, ...)."""

def flush() -> None:
    """Waits for this process's background writes (version hints, head objects)."""

def parse_duration(text: str) -> int:
    """Milliseconds of a duration such as "90d" or "3 hours"."""

class ResultStream:
    """A query result: Arrow data through __arrow_c_stream__."""

    def __arrow_c_stream__(self, requested_schema: Optional[Any] = None) -> Any:
        """A PyCapsule of an ArrowArrayStream over the result."""
    def __arrow_c_schema__(self) -> Any:
        """A PyCapsule of the result's ArrowSchema."""
    @property
    def num_rows(self) -> Optional[int]:
        """Rows of a collected result; None for a streaming one."""
    def buffer_addresses(self) -> list[int]:
        """Addresses of the collected result's buffers (0 for an absent one)."""

class Schema:
    """An Arrow schema through __arrow_c_schema__."""

    def __arrow_c_schema__(self) -> Any:
        """A PyCapsule of the ArrowSchema."""

class Table:
    """One committed version of a table."""

    @property
    def name(self) -> str: ...
    @property
    def location(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def snapshot_id(self) -> Optional[int]: ...
    @property
    def time_column(self) -> Optional[str]: ...
    @property
    def series_key(self) -> list[str]: ...
    @property
    def properties(self) -> dict[str, str]: ...
    @property
    def schema(self) -> Schema: ...
    def info(self) -> dict[str, Any]:
        """Summary of this version."""
    def refresh(self) -> "Table":
        """The newest committed version."""
    def set_properties(self, changes: dict[str, Optional[str]]) -> "Table":
        """Sets (a value) or removes (None) properties; returns the new version."""
    def append(
        self,
        data: Any,
        batch_id: Optional[str] = None,
        auto_maintain: Optional[bool] = None,
        commit_rows: Optional[int] = None,
        max_commit_attempts: int = 20,
    ) -> tuple["Table", dict[str, Any]]:
        """Appends Arrow data; returns the new version and the statistics."""
    def maintain(
        self,
        retention: bool = True,
        compact: bool = True,
        expire: bool = True,
        clean_orphans: bool = True,
        orphan_age_ms: Optional[int] = None,
        max_commit_attempts: int = 20,
        rollups: bool = True,
    ) -> tuple["Table", dict[str, Any]]:
        """Runs maintenance; returns the new version and the report."""
    def upgrade(
        self,
        dry_run: bool = False,
        compact: bool = True,
        keep_snapshots_ms: Optional[int] = None,
        time_column: Optional[str] = None,
        series_key: list[str] = ...,
        dedup: Optional[bool] = None,
        max_commit_attempts: int = 20,
    ) -> tuple["Table", dict[str, Any]]:
        """Upgrades the table; returns the new version and the report."""
    def rollback(self, snapshot_id: int) -> "Table":
        """Makes a kept snapshot the current one; returns the new version."""
    def evolve_schema(self, changes: list[tuple[str, str, str, Any]]) -> "Table":
        """Changes the schema in one commit: (kind, column, new_name, type schema)
        tuples; returns the new version."""
    def snapshots(self) -> list[dict[str, Any]]:
        """The snapshots this version keeps, oldest first."""

class Lake:
    """A warehouse and its SQL session."""

    def __init__(
        self,
        url: str,
        options: dict[str, str],
        settings: dict[str, str],
        target_partitions: int = 0,
    ) -> None: ...
    @property
    def url(self) -> str: ...
    def list_namespaces(self) -> list[str]: ...
    def list_tables(self, ns: str = "") -> list[str]: ...
    def create_table(
        self,
        name: str,
        schema: Any,
        time_column: Optional[str] = None,
        series_key: list[str] = ...,
        chunk: Optional[str] = None,
        dedup: Optional[bool] = None,
        properties: dict[str, str] = ...,
    ) -> Table: ...
    def load_table(self, name: str) -> Table: ...
    def drop_table(self, name: str) -> None: ...
    def sql(self, query: str, namespace: str = "default") -> ResultStream: ...
    def sql_reader(self, query: str, namespace: str = "default") -> ResultStream: ...
    def latest(self, table: str) -> ResultStream: ...
    def explain_analyze(self, query: str) -> str: ...
