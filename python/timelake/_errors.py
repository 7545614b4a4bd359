"""The exception classes of Timelake: one per kind of error the C++ API reports.

Every failure of the engine arrives as a subclass of :class:`TimelakeError` with the
engine's own message (it names the operation, the object and the cause). Each class also
derives from the built-in exception a Python user would expect (``NotFoundError`` is a
``KeyError``, ``InvalidError`` a ``ValueError``, ``StorageError`` an ``OSError``, ...), so
code written against Timelake 0.7, which raised those built-ins, keeps catching them.
"""

from __future__ import annotations


class TimelakeError(Exception):
    """Base class of every error Timelake raises.

    ``kind`` is the engine's lower-case error kind ("not found", "conflict", ...);
    ``retryable`` tells whether trying again may succeed (set on transient storage errors).
    """

    kind: str = "internal"
    retryable: bool = False

    def __str__(self) -> str:
        # KeyError would quote the message; the engine's text is shown as it is.
        return str(self.args[0]) if self.args else ""


class NotFoundError(TimelakeError, KeyError):
    """A table, namespace, snapshot or object does not exist."""


class AlreadyExistsError(TimelakeError, FileExistsError):
    """A table (or object) exists already."""


class InvalidError(TimelakeError, ValueError):
    """A bad name, schema, option, setting, SQL statement or data."""


class ConflictError(TimelakeError, RuntimeError):
    """Another writer committed first and the operation could not be rebased onto its commit."""


class CorruptError(TimelakeError, RuntimeError):
    """Stored metadata or data that does not parse."""


class StorageError(TimelakeError, OSError):
    """A storage failure; ``retryable`` tells whether it may pass.

    After a failed commit the commit may or may not have landed: refresh the table and look
    before appending again (or append with a ``batch_id``, which makes retrying safe).
    """


class ConfigError(TimelakeError, ValueError):
    """A bad storage URL, storage option or lake configuration."""


class UnsupportedError(TimelakeError, NotImplementedError):
    """Valid, but not supported (yet, or by this storage backend)."""


class InternalError(TimelakeError, RuntimeError):
    """A bug in Timelake; please report it with the message."""


for _cls in (TimelakeError, NotFoundError, AlreadyExistsError, InvalidError, ConflictError,
             CorruptError, StorageError, ConfigError, UnsupportedError, InternalError):
    _cls.__module__ = "timelake"

ERROR_CLASSES = {
    cls.__name__: cls
    for cls in (
        TimelakeError,
        NotFoundError,
        AlreadyExistsError,
        InvalidError,
        ConflictError,
        CorruptError,
        StorageError,
        ConfigError,
        UnsupportedError,
        InternalError,
    )
}
