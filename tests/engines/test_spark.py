"""Spark (PySpark 3.5 with Iceberg's Spark runtime) on our tables (issue #21):
by path (Iceberg's hadoop catalog over the warehouse) and by name through
`timelake serve`. One Spark session for the module (a cold start is ~10 s).

- Spark reads a table we wrote after appends and a late append: every row
  (it does not dedup on read: it sees the duplicates until compaction); after
  `timelake maintain`, exactly the rows and sums we return, and our
  partitioning in `t.partitions`.
- Spark appends through the catalog and we read its rows; our last-value
  index and head follow its commit.
- Spark (through the catalog) and our CLI (directly) append at the same time:
  every append lands exactly once.
"""

import datetime as dt
import json
import os
import signal
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine_helpers import Server, cli_query, run_cli, sorted_rows, spark_session

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 4, 1, tzinfo=UTC)
COLUMNS = ["time", "device", "value"]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("spark") / "warehouse"


@pytest.fixture(scope="module")
def server(warehouse):
    warehouse.mkdir(exist_ok=True)
    s = Server(warehouse)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def spark(server, warehouse):
    # PySpark installs its own SIGINT handler (cancel the running jobs) and
    # leaves it behind when the session stops; later tests that interrupt a
    # query with SIGINT need Python's own back.
    sigint = signal.getsignal(signal.SIGINT)
    session = spark_session(server.url, warehouse)
    try:
        yield session
    finally:
        session.stop()
        signal.signal(signal.SIGINT, sigint)


def rows(spec):
    """(hours after T0, device, value) tuples as a table."""
    return pa.table({
        "time": pa.array([T0 + dt.timedelta(hours=h) for h, _, _ in spec],
                         pa.timestamp("us", tz="UTC")),
        "device": pa.array([d for _, d, _ in spec]),
        "value": pa.array([float(v) for _, _, v in spec]),
    })


def append(warehouse, tmp_path, name, table, *extra, create=False):
    f = tmp_path / f"{name}-{abs(hash(str(table.to_pylist())))}.parquet"
    pq.write_table(table, f)
    args = ["-w", warehouse, "append", name, f, *extra]
    if create:
        args += ["--create", "--time-column", "time", "--series-key", "device"]
    return run_cli(*args)


def spark_rows(df):
    """A Spark DataFrame of time, device, value as sorted tuples in our types."""
    out = []
    for r in df.select(*COLUMNS).collect():
        t = r["time"]
        t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
        out.append((t, r["device"], r["value"]))
    return sorted(out)


def test_spark_reads_our_table_by_path_and_by_name(spark, warehouse, tmp_path):
    name = "iot.readings"
    first = rows([(h, f"d{h % 3}", h) for h in range(0, 60, 2)])       # 3 days
    second = rows([(h, f"d{h % 3}", 100 + h) for h in range(0, 60, 6)])  # same keys: newer
    late = rows([(-30 + h, "d9", h) for h in range(5)])                  # the day before
    append(warehouse, tmp_path, name, first, "--no-maintain", create=True)
    append(warehouse, tmp_path, name, second, "--no-maintain")
    append(warehouse, tmp_path, name, late, "--no-maintain")
    everything = pa.concat_tables([first, second, late])
    ours = cli_query(warehouse, f"SELECT time, device, value FROM {name}", tmp_path)
    assert ours.num_rows == first.num_rows + late.num_rows  # dedup on read

    for table in ["wh.iot.readings", "rest.iot.readings"]:
        # Before compaction Spark sees every stored row, duplicates included.
        assert spark_rows(spark.table(table)) == sorted_rows(everything, COLUMNS), table

    run_cli("-w", warehouse, "maintain", name)
    ours = cli_query(warehouse, f"SELECT time, device, value FROM {name}", tmp_path)
    total = cli_query(warehouse, f"SELECT count(*) AS n, sum(value) AS s FROM {name}",
                      tmp_path).to_pylist()[0]
    for table in ["wh.iot.readings", "rest.iot.readings"]:
        assert spark_rows(spark.table(table)) == sorted_rows(ours, COLUMNS), table
        got = spark.sql(f"SELECT count(*) AS n, sum(value) AS s FROM {table}").collect()[0]
        assert (got["n"], got["s"]) == (total["n"], total["s"])
        # Our partitioning: one partition per day, as many rows as we count there.
        parts = spark.sql(f"SELECT partition.time_day AS day, record_count "
                          f"FROM {table}.partitions").collect()
        per_day = cli_query(warehouse, f"SELECT CAST(date_trunc('day', time) AS DATE) AS day, "
                                       f"count(*) AS n FROM {name} GROUP BY 1", tmp_path)
        assert sorted((p["day"], p["record_count"]) for p in parts) == \
            sorted((r["day"], r["n"]) for r in per_day.to_pylist())
        assert len(parts) == 4


def test_spark_appends_through_the_catalog(spark, warehouse, tmp_path):
    name = "iot.sparky"
    ours = rows([(h, f"d{h % 2}", h) for h in range(10)])
    append(warehouse, tmp_path, name, ours, create=True)
    theirs = rows([(20 + h, f"d{h % 3}", 1000 + h) for h in range(6)])
    df = spark.createDataFrame(theirs.to_pandas()).selectExpr(
        "CAST(time AS TIMESTAMP) AS time", "device", "value",
        "current_timestamp() AS _ingest_ts")
    df.writeTo("rest.iot.sparky").append()

    got = cli_query(warehouse, f"SELECT time, device, value FROM {name}", tmp_path)
    assert sorted_rows(got, COLUMNS) == sorted_rows(pa.concat_tables([ours, theirs]), COLUMNS)
    # Spark's snapshot got a last-value index from us (the newest row per
    # device: Spark's rows are newer for d0 and d1, d2 only there), and `latest`
    # reads it through a current head, no data file.
    proc = run_cli("-w", warehouse, "latest", name, "--format", "json",
                   env={**os.environ, "TIMELAKE_TRACE": "storage"})
    latest = {r["device"]: r["value"] for r in
              (json.loads(line) for line in proc.stdout.splitlines() if line.strip())}
    assert latest == {"d0": 1003.0, "d1": 1004.0, "d2": 1005.0}
    gets = [line for line in proc.stderr.splitlines() if " GET " in line]
    assert not any("/data/" in g or ".metadata.json" in g for g in gets), gets
    # And we append after Spark: the index goes on from Spark's.
    append(warehouse, tmp_path, name, rows([(40, "d0", 7)]))
    latest = cli_query(warehouse, f"SELECT device, value FROM (SELECT device, value, "
                                  f"ROW_NUMBER() OVER (PARTITION BY device ORDER BY time DESC) "
                                  f"AS rn FROM {name}) WHERE rn = 1", tmp_path)
    assert {r["device"]: r["value"] for r in latest.to_pylist()} == \
        {"d0": 7.0, "d1": 1004.0, "d2": 1005.0}


def test_spark_and_our_cli_append_at_once(spark, warehouse, tmp_path):
    name = "iot.both"
    append(warehouse, tmp_path, name, rows([(0, "seed", 0)]), create=True)
    # Iceberg's Java client retries a commit 4 times by default; give it room.
    spark.sql("ALTER TABLE rest.iot.both SET TBLPROPERTIES "
              "('commit.retry.num-retries' = '30', 'commit.retry.min-wait-ms' = '20')")
    ours = [rows([(1 + i * 10 + k, f"cli{i}", i * 10 + k) for k in range(3)]) for i in range(6)]
    theirs = [rows([(100 + i * 10 + k, f"spark{i}", 500 + i * 10 + k) for k in range(3)])
              for i in range(4)]
    errors = []

    def cli_appends():
        try:
            for i, t in enumerate(ours):
                append(warehouse, tmp_path, name, t, "--batch-id", f"cli-{i}")
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    thread = threading.Thread(target=cli_appends)
    thread.start()
    for t in theirs:
        spark.createDataFrame(t.to_pandas()).selectExpr(
            "CAST(time AS TIMESTAMP) AS time", "device", "value",
            "current_timestamp() AS _ingest_ts").writeTo("rest.iot.both").append()
    thread.join()
    assert not errors, errors
    want = sorted_rows(pa.concat_tables([rows([(0, "seed", 0)]), *ours, *theirs]), COLUMNS)
    got = cli_query(warehouse, f"SELECT time, device, value FROM {name}", tmp_path)
    assert sorted_rows(got, COLUMNS) == want
    assert spark_rows(spark.table("rest.iot.both")) == want
