"""One exception class per error kind, with the engine's messages."""

import hashlib
import pathlib

import pyarrow as pa
import pytest

import timelake

from pyhelpers import SCHEMA, lake, readings, table  # noqa: F401 (fixtures)


def test_hierarchy():
    for name in ["NotFoundError", "AlreadyExistsError", "InvalidError", "ConflictError",
                 "CorruptError", "StorageError", "ConfigError", "UnsupportedError",
                 "InternalError"]:
        assert issubclass(getattr(timelake, name), timelake.TimelakeError)
    # The built-ins Timelake 0.7 raised stay catchable.
    assert issubclass(timelake.NotFoundError, KeyError)
    assert issubclass(timelake.InvalidError, ValueError)
    assert issubclass(timelake.AlreadyExistsError, FileExistsError)
    assert issubclass(timelake.ConflictError, RuntimeError)
    assert issubclass(timelake.StorageError, OSError)


def test_not_found(lake):
    with pytest.raises(timelake.NotFoundError) as e:
        lake.table("nope")
    assert "default.nope" in str(e.value)
    assert e.value.kind == "not found" and e.value.retryable is False
    with pytest.raises(timelake.NotFoundError):
        lake.drop_table("iot.nope")


def test_already_exists(lake, table):
    with pytest.raises(timelake.AlreadyExistsError) as e:
        lake.create_table("iot.readings", SCHEMA, time_column="time")
    assert "iot.readings" in str(e.value)


def test_invalid(lake, table, tmp_path):
    with pytest.raises(timelake.InvalidError) as e:
        lake.table("bad name!")
    assert "bad name!" in str(e.value)
    with pytest.raises(timelake.InvalidError) as e:
        lake.create_table("x", SCHEMA, time_column="nope")
    assert "nope" in str(e.value)
    assert lake.tables() == ["iot.readings"]  # nothing written
    with pytest.raises(timelake.InvalidError) as e:
        table.append(pa.table({"zz": [1]}))
    assert "zz" in str(e.value)
    with pytest.raises(timelake.InvalidError) as e:
        table.set_properties({"timelake.bogus": "1"})
    assert "timelake.bogus" in str(e.value)
    with pytest.raises(timelake.InvalidError) as e:
        lake.sql("SELEC 1")
    assert "SELEC" in str(e.value)
    with pytest.raises(timelake.InvalidError):
        lake.create_table("y", SCHEMA, time_column="time", chunk="week")
    with pytest.raises(timelake.InvalidError):
        timelake.Lake(str(tmp_path / "w2"), settings={"timelake.no_such_setting": 1})
    with pytest.raises(timelake.InvalidError):
        table.append(readings(5), commit_rows=0)
    assert table.info()["rows"] == 0


def test_type_errors(table):
    with pytest.raises(TypeError, match="list"):
        table.append([1, 2])
    with pytest.raises(TypeError):
        table.append(readings(3), commit_rows="10")


def stored(root):
    """Every file below `root` with the SHA-256 of its contents."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(pathlib.Path(root).rglob("*")) if p.is_file()}


def test_wrong_types_name_the_argument_and_change_nothing(lake, table):
    """Each call with an argument of the wrong type raises TypeError naming the argument
    and the type it got (not the native layer's list of signatures, not a value quietly
    converted), before anything is written."""
    table.append(readings(20))
    timelake.flush()
    root = table.location.removeprefix("file://").rsplit("/iot/", 1)[0]
    snapshot = table.snapshot_id
    before = stored(root)
    calls = [
        ("location must be a str or os.PathLike .*got int",
         lambda: timelake.Lake(123)),
        ("location must be a str or os.PathLike .*got NoneType",
         lambda: timelake.Lake(None)),
        ("location must be a str or os.PathLike .*got bytes",
         lambda: timelake.Lake(b"/tmp/w")),
        (r"settings\['timelake.read_dedup'\] must be a str, number, bool or "
         r"datetime.timedelta, got list",
         lambda: timelake.Lake(root, settings={"timelake.read_dedup": [False]})),
        (r"settings\['timelake.read_dedup'\] .*got NoneType",
         lambda: timelake.Lake(root, settings={"timelake.read_dedup": None})),
        ("a key of settings must be a str, got int",
         lambda: timelake.Lake(root, settings={1: "x"})),
        ("storage_options must be a mapping of names to values, got str",
         lambda: timelake.Lake(root, storage_options="aws_region=x")),
        ("data must be Arrow data .*got builtins.str",
         lambda: table.append("not a table")),
        ("data must be Arrow data .*got builtins.NoneType",
         lambda: table.append(None)),
        ("query must be a str, got NoneType",
         lambda: lake.sql(None)),
        ("query must be a str, got bytes",
         lambda: lake.sql(b"SELECT 1")),
        ("namespace must be a str, got int",
         lambda: lake.sql("SELECT 1", namespace=1)),
        ("query must be a str, got int",
         lambda: lake.sql_reader(7)),
        ("name must be a str, got int",
         lambda: lake.table(5)),
        ("name must be a str, got NoneType",
         lambda: lake.drop_table(None)),
        ("table must be a str, got int",
         lambda: lake.latest(3)),
        ("snapshot_id must be an int .*got str",
         lambda: table.rollback("abc")),
        ("snapshot_id must be an int .*got str",
         lambda: table.rollback(str(snapshot))),
        ("snapshot_id must be an int .*got float",
         lambda: table.rollback(float(snapshot))),
        ("snapshot_id must be an int .*got bool",
         lambda: table.rollback(True)),
        (r"properties\['timelake.retention'\] must be a str, number, bool or "
         r"datetime.timedelta, got list",
         lambda: table.set_properties({"timelake.retention": ["90d"]})),
        ("properties must be a mapping of names to values, got list",
         lambda: table.set_properties([("owner", "ops")])),
        (r"properties\['owner'\] .*got dict",
         lambda: lake.create_table("iot.other", SCHEMA, properties={"owner": {"a": 1}})),
        ("retention must be a str, number, bool or datetime.timedelta, got list",
         lambda: lake.create_table("iot.other", SCHEMA, time_column="time",
                                      retention=["90d"])),
    ]
    for message, call in calls:
        with pytest.raises(TypeError, match=message):
            call()
        assert stored(root) == before, message
    assert lake.tables() == ["iot.readings"]
    assert lake.table("iot.readings").snapshot_id == snapshot


def test_config(tmp_path):
    with pytest.raises(timelake.ConfigError) as e:
        timelake.Lake("bogus://x")
    assert "bogus" in str(e.value)


def test_corrupt(lake, table):
    metadata = pathlib.Path(table.location.removeprefix("file://")) / "metadata"
    newest = max(metadata.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    newest.write_text("{ this is not json")
    with pytest.raises(timelake.CorruptError) as e:
        lake.table("iot.readings")
    assert newest.name in str(e.value)


def test_conflict(lake, table):
    # A handle one version behind, allowed a single commit attempt: its
    # put-if-absent of the next version loses to the commit made meanwhile,
    # and there is no attempt left to rebase onto it.
    stale = lake.table("iot.readings")
    table.append(readings(5))
    with pytest.raises(timelake.ConflictError) as e:
        stale.append(readings(5, seed=1), max_commit_attempts=1)
    assert "iot.readings" in str(e.value)
    assert lake.table("iot.readings").info()["rows"] == 5
    # With attempts left, the same append is rebased and lands.
    assert stale.append(readings(5, seed=1))["conflicts_rebased"] >= 1


def test_storage(tmp_path):
    # Nothing listens on port 9 (discard): every request fails to connect.
    lake = timelake.Lake("s3://bucket/warehouse", storage_options={
        "aws_endpoint": "http://127.0.0.1:9", "aws_allow_http": True,
        "aws_region": "us-east-1", "aws_access_key_id": "k", "aws_secret_access_key": "s"})
    with pytest.raises(timelake.StorageError) as e:
        lake.tables()
    assert isinstance(e.value.retryable, bool)
