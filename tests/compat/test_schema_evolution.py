"""Schema evolution by Iceberg field id (`timelake alter --add-column,
--rename-column, --widen-column`, issue #18): appends before and after an
add + rename + widen read the same in ours, PyIceberg and DuckDB, and in
Timelake 0.7 once compaction has rewritten the files written before the
rename (0.7 finds columns by name); a bad evolution (retyping the time
column, renaming to a name taken) is one clear error and changes nothing on
storage."""

import datetime as dt
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import cli_query, duckdb_connection, run_cli, run_tl07, sorted_rows
from test_upgrade import newest_metadata, Where, static_table

T0 = dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc)
D = decimal.Decimal


def before_rows(tmp_path):
    """time, dev, temp float32, n int32, price decimal(9, 2): two days."""
    path = tmp_path / "before.parquet"
    pq.write_table(pa.table({
        "time": pa.array([T0, T0 + dt.timedelta(hours=30), T0 + dt.timedelta(hours=1)],
                         pa.timestamp("us", tz="UTC")),
        "dev": ["a", "b", "b"],
        "temp": pa.array([1.5, 2.5, 3.5], pa.float32()),
        "n": pa.array([1, 2, 3], pa.int32()),
        "price": pa.array([D("1.25"), D("2.50"), None], pa.decimal128(9, 2)),
    }), path)
    return path


def after_rows(tmp_path):
    """The same columns after the evolution, by their new names, and the new
    one; values an int32 or a decimal(9, 2) could not hold."""
    path = tmp_path / "after.parquet"
    pq.write_table(pa.table({
        "time": pa.array([T0 + dt.timedelta(hours=2), T0 + dt.timedelta(hours=40)],
                         pa.timestamp("us", tz="UTC")),
        "dev": ["a", "c"],
        "temperature": pa.array([4.25, 5.25], pa.float64()),
        "n": pa.array([5_000_000_000, 6], pa.int64()),
        "price": pa.array([D("12345678901.25"), D("0.75")], pa.decimal128(14, 2)),
        "humidity": pa.array([0.5, None], pa.float64()),
    }), path)
    return path


COLUMNS = ["time", "dev", "temperature", "n", "price", "humidity"]


def expected():
    rows = [
        (T0, "a", 1.5, 1, D("1.25"), None),
        (T0 + dt.timedelta(hours=30), "b", 2.5, 2, D("2.50"), None),
        (T0 + dt.timedelta(hours=1), "b", 3.5, 3, None, None),
        (T0 + dt.timedelta(hours=2), "a", 4.25, 5_000_000_000, D("12345678901.25"), 0.5),
        (T0 + dt.timedelta(hours=40), "c", 5.25, 6, D("0.75"), None),
    ]
    return sorted(rows)


def test_add_rename_widen_read_alike_in_every_peer(warehouse, tmp_path):
    run_cli("-w", warehouse, "append", "ev.m", before_rows(tmp_path), "--create",
            "--time-column", "time", "--series-key", "dev")
    out = run_cli("-w", warehouse, "alter", "ev.m", "--rename-column", "temp:temperature",
                  "--widen-column", "temperature:float64", "--widen-column", "n:int64",
                  "--widen-column", "price:decimal(14,2)", "--add-column", "humidity:double",
                  "--format", "json").stdout
    report = json.loads(out)
    assert report["version"] == 3
    assert report["changes"] == [
        "renamed column temp to temperature", "widened column temperature to float64",
        "widened column n to int64", "widened column price to decimal128(14, 2)",
        "added column humidity (float64)"]
    info = json.loads(run_cli("-w", warehouse, "info", "ev.m", "--format", "json").stdout)
    assert [(c["name"], c["type"]) for c in info["columns"]] == [
        ("time", "timestamp[us, tz=+00:00] not null"), ("dev", "string"),
        ("temperature", "double"), ("n", "int64"), ("price", "decimal128(14, 2)"),
        ("_ingest_ts", "timestamp[us, tz=+00:00] not null"), ("humidity", "double")]
    run_cli("-w", warehouse, "append", "ev.m", after_rows(tmp_path))

    want = expected()
    ours = cli_query(warehouse, "SELECT " + ", ".join(COLUMNS) + " FROM ev.m", tmp_path)
    assert sorted_rows(ours, COLUMNS) == want
    where = Where(str(warehouse), None, lambda: {str(p): p.stat().st_size
                                                 for p in warehouse.rglob("*") if p.is_file()},
                  {}, True)
    static = static_table(where, "ev.m")
    assert sorted_rows(static.scan().to_arrow(), COLUMNS) == want
    con = duckdb_connection()
    got = con.execute("SELECT " + ", ".join(COLUMNS) + " FROM iceberg_scan("
                      f"'{newest_metadata(where, 'ev.m')}')").fetch_arrow_table()
    assert sorted_rows(got, COLUMNS) == want
    # Timelake 0.7 finds a data file's columns by name, not by field id: it
    # reads the added and the widened columns right, and the renamed one as
    # null in the files written before the rename...
    before_rename = {("a", 1.5), ("b", 2.5), ("b", 3.5)}  # (dev, temp) of before_rows
    assert tl07_rows(warehouse) == [
        (dev, None if (dev, temp) in before_rename else temp, n,
         None if price is None else str(price), hum)
        for dev, temp, n, price, hum in by_dev(want)]

    # ...until compaction rewrites those files in the new schema: then the
    # same answers everywhere.
    run_cli("-w", warehouse, "maintain", "ev.m")
    ours = cli_query(warehouse, "SELECT " + ", ".join(COLUMNS) + " FROM ev.m", tmp_path)
    assert sorted_rows(ours, COLUMNS) == want
    static = static_table(where, "ev.m")
    assert sorted_rows(static.scan().to_arrow(), COLUMNS) == want
    assert tl07_rows(warehouse) == [
        (dev, temp, n, None if price is None else str(price), hum)
        for dev, temp, n, price, hum in by_dev(want)]


def by_dev(rows):
    """(dev, temperature, n, price, humidity) of `rows`, sorted by (dev, time)."""
    return [(dev, temp, n, price, hum)
            for _, dev, temp, n, price, hum in sorted(rows, key=lambda r: (r[1], r[0]))]


def tl07_rows(warehouse):
    """What Timelake 0.7 reads of ev.m, as by_dev gives them."""
    out = run_tl07("""
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
t = lake.sql("SELECT dev, temperature, n, CAST(price AS VARCHAR) AS price, humidity "
             "FROM ev.m ORDER BY dev, time")
print(json.dumps(t.to_pylist()))
""", warehouse)
    return [(r["dev"], r["temperature"], r["n"], r["price"], r["humidity"])
            for r in json.loads(out.strip().splitlines()[-1])]


def test_bad_evolutions_are_refused_and_change_nothing(warehouse, tmp_path):
    run_cli("-w", warehouse, "append", "ev.m", before_rows(tmp_path), "--create",
            "--time-column", "time", "--series-key", "dev")
    sizes = lambda: {str(p): p.stat().st_size for p in warehouse.rglob("*")  # noqa: E731
                     if p.is_file()}
    stored = sizes()
    for args, message in [
        (["--widen-column", "time:int64"],
         "widening column 'time': it is the time column, whose type is fixed"),
        (["--rename-column", "temp:n"],
         "renaming column 'temp' to 'n': the table has a column 'n' already"),
        (["--rename-column", "dev:device"], "it is a series key column"),
        (["--widen-column", "n:float64"], "from int to double: not a widening"),
        (["--widen-column", "price:decimal(12,3)"], "from decimal(9, 2) to decimal(12, 3)"),
        (["--add-column", "temp:double"], "the table has a column 'temp' already"),
        (["--add-column", "humidity:double", "--rename-column", "nope:x"],
         "renaming column 'nope' to 'x': the table has no such column"),
    ]:
        proc = run_cli("-w", warehouse, "alter", "ev.m", *args, check=False)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr == f"timelake: error: changing the schema of ev.m: {message}\n" or (
            proc.stderr.startswith("timelake: error: changing the schema of ev.m: ")
            and message in proc.stderr and proc.stderr.count("\n") == 1), proc.stderr
    for args in (["--add-column", "x:complex"], ["--rename-column", "temp"],
                 ["--widen-column", ":int64"]):
        proc = run_cli("-w", warehouse, "alter", "ev.m", *args, check=False)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
    assert sizes() == stored
