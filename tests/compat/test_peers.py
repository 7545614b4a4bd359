"""Peers read what Timelake writes, and Timelake reads what peers write
(SPEC §13): PyIceberg, DuckDB 1.4.4 with the iceberg extension, Timelake 0.7."""

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import cli_query, duckdb_connection, run_cli, run_tl07, sorted_rows

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)
COLUMNS = ["time", "device_id", "temp"]


def readings(n, start=0, day_span=3):
    """n rows over `day_span` days and 5 devices, with deterministic values."""
    times = [T0 + dt.timedelta(hours=(start + i) * 7 % (24 * day_span), seconds=start + i)
             for i in range(n)]
    return pa.table({
        "time": pa.array(times, pa.timestamp("us", tz="UTC")),
        "device_id": pa.array([(start + i) % 5 for i in range(n)], pa.int32()),
        "temp": pa.array([float(start + i) / 4 for i in range(n)], pa.float64()),
    })


def write_with_cli(warehouse, tmp_path, name, tables):
    for i, t in enumerate(tables):
        f = tmp_path / f"in-{name}-{i}.parquet"
        pq.write_table(t, f)
        args = ["-w", warehouse, "append", name, f]
        if i == 0:
            args += ["--create", "--time-column", "time", "--series-key", "device_id"]
        run_cli(*args)


def latest_metadata(table_dir):
    files = sorted((table_dir / "metadata").glob("v*.metadata.json"),
                   key=lambda p: int(p.name[1:].split(".")[0]))
    return files[-1]


def test_pyiceberg_and_duckdb_read_our_table(warehouse, tmp_path):
    a, b = readings(200), readings(150, start=200)
    write_with_cli(warehouse, tmp_path, "iot.readings", [a, b])
    expected = sorted_rows(pa.concat_tables([a, b]), COLUMNS)
    table_dir = warehouse / "iot" / "readings"

    from pyiceberg.table import StaticTable
    static = StaticTable.from_metadata(str(latest_metadata(table_dir)))
    got = static.scan().to_arrow()
    assert got.num_rows == 350
    assert sorted_rows(got, COLUMNS) == expected
    assert static.metadata.format_version == 2
    assert [f.name for f in static.schema().fields][:3] == COLUMNS

    con = duckdb_connection()
    rows = con.execute(
        f"SELECT time, device_id, temp FROM iceberg_scan('{table_dir}')").fetchall()
    assert sorted(rows) == expected


def test_timelake07_reads_and_appends_to_our_table(warehouse, tmp_path):
    a = readings(120)
    write_with_cli(warehouse, tmp_path, "iot.readings", [a])
    out = run_tl07(
        """
import sys, json, timelake, datetime as dt, pyarrow as pa
lake = timelake.Lake(sys.argv[1])
t = lake.sql("SELECT count(*) AS n, sum(temp) AS s FROM iot.readings").to_pylist()[0]
table = lake.table("iot.readings")
extra = pa.table({"time": pa.array([dt.datetime(2026, 1, 5, tzinfo=dt.timezone.utc)],
                                   pa.timestamp("us", tz="UTC")),
                  "device_id": pa.array([99], pa.int32()), "temp": pa.array([1.5])})
table.append(extra)
print(json.dumps(t))
""", warehouse)
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["n"] == 120
    assert seen["s"] == sum(a.column("temp").to_pylist())
    # And we read 0.7's append to our table.
    result = cli_query(warehouse, "SELECT count(*) AS n, max(device_id) AS m FROM iot.readings",
                       tmp_path)
    assert result.to_pylist() == [{"n": 121, "m": 99}]


def test_we_read_and_append_to_a_timelake07_table(warehouse, tmp_path):
    a = readings(80)
    src = tmp_path / "tl07.parquet"
    pq.write_table(a, src)
    run_tl07(
        """
import sys, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
data = pq.read_table(sys.argv[2])
t = lake.create_table("iot.old", data.schema, time_column="time", series_key=["device_id"])
t.append(data)
""", warehouse, src)
    got = cli_query(warehouse, "SELECT time, device_id, temp FROM iot.old", tmp_path)
    assert sorted_rows(got, COLUMNS) == sorted_rows(a, COLUMNS)

    b = readings(30, start=500)
    f = tmp_path / "more.parquet"
    pq.write_table(b, f)
    run_cli("-w", warehouse, "append", "iot.old", f)
    out = run_tl07(
        """
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
print(json.dumps(lake.sql("SELECT count(*) AS n, sum(temp) AS s FROM iot.old").to_pylist()[0]))
""", warehouse)
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["n"] == 110
    assert abs(seen["s"] - sum(a.column("temp").to_pylist() + b.column("temp").to_pylist())) < 1e-9


def test_we_read_a_pyiceberg_table(warehouse, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("peers", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{warehouse}")
    catalog.create_namespace("py")
    data = readings(60)
    table = catalog.create_table("py.events", schema=data.schema,
                                 location=f"file://{warehouse}/py/events")
    table.append(data)
    table.append(readings(10, start=100))
    got = cli_query(warehouse, "SELECT time, device_id, temp FROM py.events", tmp_path)
    assert sorted_rows(got, COLUMNS) == sorted_rows(
        pa.concat_tables([data, readings(10, start=100)]), COLUMNS)

    # We append to it, and PyIceberg reads our commit from the new metadata file.
    more = readings(25, start=300)
    f = tmp_path / "more.parquet"
    pq.write_table(more, f)
    run_cli("-w", warehouse, "append", "py.events", f)
    from pyiceberg.table import StaticTable
    newest = latest_metadata(warehouse / "py" / "events")
    assert newest.name == "v3.metadata.json"  # after PyIceberg's 00000-, 00001-, 00002-
    static = StaticTable.from_metadata(str(newest))
    expected = pa.concat_tables([data, readings(10, start=100), more])
    assert sorted_rows(static.scan().to_arrow(), COLUMNS) == sorted_rows(expected, COLUMNS)
