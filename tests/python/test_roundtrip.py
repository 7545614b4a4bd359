"""Data into a table from pyarrow, polars, pandas and DuckDB, and back out."""

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import timelake

from pyhelpers import SCHEMA, lake, readings, table, user_columns  # noqa: F401 (fixtures)

ORDER = "SELECT time, device_id, site, temp FROM iot.readings ORDER BY time, device_id"


def as_table_schema(data):
    return data.cast(SCHEMA)


@pytest.mark.parametrize("kind", ["table", "batch", "reader"])
def test_pyarrow_round_trip(table, lake, kind):
    data = readings(500)
    source = {
        "table": data,
        "batch": data.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(SCHEMA, data.to_batches(max_chunksize=64)),
    }[kind]
    stats = table.append(source)
    assert stats["rows"] == 500 and stats["input_rows"] == 500
    assert stats["commits"] == 1 and not stats["duplicate"]
    assert stats["version"] == table.version
    assert lake.sql(ORDER).equals(as_table_schema(data).cast(lake.sql(ORDER).schema))


def test_polars_round_trip(table, lake):
    data = readings(300)
    frame = pl.from_arrow(data)
    assert isinstance(frame, pl.DataFrame)
    assert table.append(frame)["rows"] == 300
    back = pl.from_arrow(lake.sql(ORDER))
    assert back.equals(frame.select(["time", "device_id", "site", "temp"]))
    # A streaming result goes to polars as well.
    streamed = pl.from_arrow(lake.sql_reader(ORDER))
    assert streamed.equals(back)


def test_pandas_round_trip(table, lake):
    data = readings(250)
    frame = data.to_pandas()
    # A non-default index must not become a column.
    frame.index = pd.RangeIndex(1000, 1250)
    assert table.append(frame)["rows"] == 250
    back = lake.sql(ORDER).to_pandas()
    pd.testing.assert_frame_equal(back, frame.reset_index(drop=True), check_dtype=False)


def test_duckdb_relation_in(table, lake):
    data = readings(200)
    relation = duckdb.sql("SELECT * FROM data")
    assert table.append(relation)["rows"] == 200
    assert lake.sql("SELECT count(*) AS n FROM iot.readings").column("n").to_pylist() == [200]
    assert user_columns(lake.sql(ORDER)).cast(SCHEMA).equals(data)


def test_duckdb_reads_results(table, lake):
    table.append(readings(100))
    result = lake.sql("SELECT device_id, temp FROM iot.readings")
    assert duckdb.sql("SELECT count(*) FROM result").fetchone()[0] == 100
    reader = lake.sql_reader("SELECT device_id, temp FROM iot.readings")
    assert duckdb.sql("SELECT count(*) FROM reader").fetchone()[0] == 100


def test_sql_reader_streams_once(table, lake):
    table.append(readings(100))
    reader = lake.sql_reader("SELECT * FROM iot.readings")
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().num_rows == 100


def test_latest_and_namespace(table, lake):
    data = readings(70, devices=7)
    table.append(data)
    latest = lake.latest("iot.readings")
    assert latest.num_rows == 7
    assert sorted(latest.column("device_id").to_pylist()) == list(range(7))
    # The newest time of each device, as the data has it.
    newest = duckdb.sql("SELECT device_id, max(time) AS t FROM data GROUP BY device_id "
                        "ORDER BY device_id").fetch_arrow_table()
    got = latest.sort_by("device_id")
    assert got.column("time").to_pylist() == newest.column("t").to_pylist()
    # Unqualified names resolve in the namespace given.
    assert lake.sql("SELECT count(*) AS n FROM readings", namespace="iot").column(
        "n").to_pylist() == [70]
    # ... and afterwards in "default" again.
    with pytest.raises(timelake.InvalidError):
        lake.sql("SELECT count(*) FROM readings")


def test_table_handle(lake, table):
    assert table.name == "iot.readings"
    assert table.location.startswith("file://") and table.location.endswith("/iot/readings")
    assert table.schema.names == ["time", "device_id", "site", "temp", "_ingest_ts"]
    assert table.schema.field("time").metadata[b"PARQUET:field_id"] == b"1"
    assert table.time_column == "time" and table.series_key == ["device_id"]
    v = table.version
    table.append(readings(10))
    assert table.version > v
    other = lake.table("iot.readings")
    assert other.version == table.version
    table.append(readings(10, seed=1))
    assert other.refresh() is other and other.version == table.version
    assert lake.tables() == ["iot.readings"]
    assert lake.namespaces() == ["iot"]
    info = table.info()
    assert info["rows"] == 20 and info["time_column"] == "time" and info["dedup"] is True
    assert info["chunk"] == "day"
    assert repr(table) == f"Table(iot.readings, v{table.version})"


def test_set_properties(table):
    assert table.set_properties({"timelake.retention": "400d", "owner": "ops"}) is None
    assert table.properties["timelake.retention"] == "400d"
    assert table.properties["owner"] == "ops"
    table.set_properties({"timelake.retention": None})
    assert "timelake.retention" not in table.properties


def test_batch_id_is_idempotent(table, lake):
    data = readings(100)
    assert table.append(data, batch_id="load-1")["rows"] == 100
    again = table.append(data, batch_id="load-1")
    assert again["duplicate"] is True and again["rows"] == 0
    assert lake.sql("SELECT count(*) AS n FROM iot.readings").column("n").to_pylist() == [100]


def test_commit_rows_splits_and_resumes(table, lake):
    data = readings(1000)
    first = table.append(data.slice(0, 600), batch_id="b", commit_rows=300)
    assert first["commits"] == 2 and first["rows"] == 600
    # The same input again, whole: the first two commits are skipped.
    again = table.append(data, batch_id="b", commit_rows=300)
    assert again["commits"] == 2 and again["rows"] == 400
    assert lake.sql("SELECT count(*) AS n FROM iot.readings").column("n").to_pylist() == [1000]


def test_maintain(table):
    for seed in range(3):
        table.append(readings(50, seed=seed), maintain=False)
    report = table.maintain()
    assert report["partitions_compacted"] >= 1
    assert report["files_rewritten"] >= 3 and report["files_written"] >= 1
    assert report["version"] == table.version
    assert table.info()["files"] == report["files_written"]


def test_create_table_options(lake):
    t = lake.create_table("plain", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    assert t.time_column is None and t.name == "default.plain"
    t.append(pa.table({"id": [1, 2], "name": ["a", "b"]}))
    assert lake.sql("SELECT sum(id) AS s FROM plain").column("s").to_pylist() == [3]
    h = lake.create_table("m.hourly", readings(1), time_column="time", series_key="device_id",
                          chunk="hour", retention="30d", dedup=False)
    info = h.info()
    assert info["chunk"] == "hour" and info["dedup"] is False
    assert info["series_key"] == ["device_id"]
    assert h.properties["timelake.retention"] == "30d"
    lake.drop_table("m.hourly")
    assert lake.tables() == ["default.plain"]
