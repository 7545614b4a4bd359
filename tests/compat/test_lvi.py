"""The last-value index (issue #6): the newest row of every series, kept per
snapshot in `metadata/lvi-<snapshot>-<uuid>.parquet` and named by the summary
key `timelake.last-value-index`, in Timelake 0.7's layout.

- Our index after several appends (ties included) equals the newest row per
  series that DuckDB computes over the table's data files with QUALIFY.
- Timelake 0.7 answers `latest` on our table, we answer it on 0.7's, both
  through the index (the storage trace shows the index being read), with the
  same rows.
"""

import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import cli_query, duckdb_connection, run_cli, run_tl07
from test_peers import latest_metadata


def reads_data_files(warehouse, sql):
    """Whether a cold run of `sql` reads any data file (else it was answered
    from the last-value index, inlined in the head or in its own file)."""
    proc = run_cli("-w", warehouse, "sql", sql, "--format", "csv",
                   env={**os.environ, "TIMELAKE_TRACE": "storage"})
    return any("/data/" in line for line in proc.stderr.splitlines()
               if line.startswith("timelake storage:"))

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 2, 1, tzinfo=UTC)


def batch(rows):
    """rows: (minutes after T0, device, value)."""
    return pa.table({
        "time": pa.array([T0 + dt.timedelta(minutes=m) for m, _, _ in rows],
                         pa.timestamp("us", tz="UTC")),
        "device": pa.array([d for _, d, _ in rows]),
        "value": pa.array([float(v) for _, _, v in rows]),
    })


def append(warehouse, tmp_path, name, rows, i, create=False):
    f = tmp_path / f"{name}-{i}.parquet"
    pq.write_table(batch(rows), f)
    args = ["-w", warehouse, "append", name, f]
    if create:
        args += ["--create", "--time-column", "time", "--series-key", "device"]
    run_cli(*args)


def latest_by_duckdb(warehouse, name):
    """Newest row per device over the current snapshot's data files: later
    time, then later insertion, then the later commit (sequence number)."""
    from pyiceberg.table import StaticTable
    static = StaticTable.from_metadata(str(latest_metadata(warehouse / "default" / name)))
    files = [(t.file.file_path.removeprefix("file://"), t.file)
             for t in static.scan().plan_files()]
    seq = {e["file_path"].removeprefix("file://"): e["sequence_number"]
           for e in static.inspect.entries().to_pylist()
           for e in [dict(e, file_path=e["data_file"]["file_path"])]}
    con = duckdb_connection()
    union = " UNION ALL ".join(
        f"SELECT *, {seq[p]} AS seq FROM read_parquet('{p}')" for p, _ in files)
    return con.execute(
        f"SELECT device, time, value FROM ({union}) QUALIFY row_number() OVER "
        "(PARTITION BY device ORDER BY time DESC, _ingest_ts DESC, seq DESC) = 1 "
        "ORDER BY device").fetchall()


def index_of(warehouse, name):
    meta = json.loads(latest_metadata(warehouse / "default" / name).read_text())
    current = [s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"]]
    return current[0]["summary"].get("timelake.last-value-index")


def test_our_index_is_the_newest_row_per_series(warehouse, tmp_path):
    append(warehouse, tmp_path, "m", [(0, "a", 1), (5, "a", 2), (3, "b", 3), (9, "c", 4)], 0,
           create=True)
    # Newer for a; an older row for b (b keeps 3); a tie for c at minute 9
    # (the later commit wins); d is new; two days later for a.
    append(warehouse, tmp_path, "m", [(9, "c", 40), (1, "b", 30), (7, "d", 5)], 1)
    append(warehouse, tmp_path, "m", [(2 * 1440, "a", 6)], 2)

    uri = index_of(warehouse, "m")
    assert uri and "/metadata/lvi-" in uri and uri.endswith(".parquet")
    index = pq.read_table(uri.removeprefix("file://"))
    assert index.column_names == ["time", "device", "value", "_ingest_ts"]
    want = latest_by_duckdb(warehouse, "m")
    assert [(r["device"], r["time"], r["value"]) for r in index.to_pylist()] == want
    assert [(d, v) for d, _, v in want] == [("a", 6.0), ("b", 3.0), ("c", 40.0), ("d", 5.0)]

    # `timelake latest` reads the index (inlined in the head object, or the
    # index file without a head), never a data file.
    proc = run_cli("-w", warehouse, "latest", "m", "--format", "csv",
                   env={**os.environ, "TIMELAKE_TRACE": "storage"})
    gets = [line for line in proc.stderr.splitlines() if " GET " in line]
    assert any("/timelake-head" in g for g in gets) and not any("/data/" in g for g in gets)
    (warehouse / "default" / "m" / "metadata" / "timelake-head").unlink()
    proc = run_cli("-w", warehouse, "latest", "m", "--format", "csv",
                   env={**os.environ, "TIMELAKE_TRACE": "storage"})
    gets = [line for line in proc.stderr.splitlines() if " GET " in line]
    assert any("/lvi-" in g for g in gets) and not any("/data/" in g for g in gets), gets
    got = cli_query(warehouse, "SELECT device, time, value FROM m", tmp_path)  # sanity
    assert got.num_rows == 7


def test_timelake07_and_we_answer_latest_from_each_others_index(warehouse, tmp_path):
    append(warehouse, tmp_path, "ours", [(0, "a", 1), (4, "b", 2)], 0, create=True)
    append(warehouse, tmp_path, "ours", [(4, "b", 20), (8, "a", 3)], 1)
    src = tmp_path / "theirs.parquet"
    pq.write_table(batch([(0, "x", 1), (6, "y", 2), (2, "x", 7)]), src)
    out = run_tl07(
        """
import sys, json, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
data = pq.read_table(sys.argv[2])
t = lake.create_table("theirs", data.schema, time_column="time", series_key=["device"])
t.append(data)
rows = lake.latest("ours").select(["device", "value"]).to_pylist()
print(json.dumps(rows))
""", warehouse, src)
    assert json.loads(out.strip().splitlines()[-1]) == [{"device": "a", "value": 3.0},
                                                        {"device": "b", "value": 20.0}]
    assert index_of(warehouse, "theirs")  # 0.7 wrote one
    # Without 0.7's head object (tests/compat/test_head.py reads that), its
    # index file answers.
    (warehouse / "default" / "theirs" / "metadata" / "timelake-head").unlink()
    proc = run_cli("-w", warehouse, "latest", "theirs", "--format", "json",
                   env={**os.environ, "TIMELAKE_TRACE": "storage"})
    assert any("/lvi-" in line for line in proc.stderr.splitlines()), proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [(r["device"], r["value"]) for r in rows] == [("x", 7.0), ("y", 2.0)]


def test_newest_row_per_series_sql_reads_the_index(warehouse, tmp_path):
    append(warehouse, tmp_path, "q", [(0, "a", 1), (5, "a", 2), (3, "b", 3)], 0, create=True)
    append(warehouse, tmp_path, "q", [(9, "c", 4), (1, "b", 30), (5, "a", 20)], 1)
    sql = ("SELECT device, time, value FROM (SELECT device, time, value, ROW_NUMBER() OVER "
           "(PARTITION BY device ORDER BY time DESC) AS rn FROM q) WHERE rn = 1 ORDER BY device")
    plan = run_cli("-w", warehouse, "sql", f"EXPLAIN {sql}", "--format", "json").stdout
    assert "WindowAggr" not in plan and not reads_data_files(warehouse, sql), plan
    got = cli_query(warehouse, sql, tmp_path)
    assert [(r["device"], r["time"], r["value"]) for r in got.to_pylist()] == \
        latest_by_duckdb(warehouse, "q")
    # The same question under a subquery alias, as a CTE, and with a
    # projection between filter and window (which the optimizer merges
    # first): each reads the index and gives the same rows.
    inner = ("SELECT device, time, value, ROW_NUMBER() OVER "
             "(PARTITION BY device ORDER BY time DESC) AS rn FROM q")
    for variant in [f"SELECT t.device, t.time, t.value FROM ({inner}) AS t WHERE t.rn = 1 "
                    "ORDER BY device",
                    f"WITH newest AS ({inner}) SELECT device, time, value FROM newest "
                    "WHERE 1 = rn ORDER BY device",
                    f"SELECT device, time, value FROM (SELECT device, time, value, rn "
                    f"FROM ({inner})) WHERE rn = 1 ORDER BY device"]:
        plan = run_cli("-w", warehouse, "sql", f"EXPLAIN {variant}", "--format", "json").stdout
        assert "WindowAggr" not in plan and not reads_data_files(warehouse, variant), plan
        got = cli_query(warehouse, variant, tmp_path)
        assert [(r["device"], r["time"], r["value"]) for r in got.to_pylist()] == \
            latest_by_duckdb(warehouse, "q"), variant
    # An expression of the row number the subquery does not name keeps the
    # name DataFusion gave it, so `SELECT *` above still finds it; it is 1.
    computed = ("SELECT * FROM (SELECT device, time, value, ROW_NUMBER() OVER "
                "(PARTITION BY device ORDER BY time DESC) AS rn, ROW_NUMBER() OVER "
                "(PARTITION BY device ORDER BY time DESC) + 10 FROM q) WHERE rn = 1 "
                "ORDER BY device")
    assert not reads_data_files(warehouse, computed)
    got = cli_query(warehouse, computed, tmp_path)
    assert got.num_columns == 5 and "+ Int64(10)" in got.column_names[4], got.schema
    assert [tuple(r.values()) for r in got.to_pylist()] == \
        [(d, t, v, 1, 11) for d, t, v in latest_by_duckdb(warehouse, "q")]
    # A cast that changes which row numbers equal 1 is a different question:
    # every row number is true as a BOOLEAN, so every row counts.
    cast = ("SELECT count(*) AS n FROM (SELECT device, ROW_NUMBER() OVER (PARTITION BY device "
            "ORDER BY time DESC) AS rn FROM q) WHERE CAST(rn AS BOOLEAN) = CAST(1 AS BOOLEAN)")
    plan = run_cli("-w", warehouse, "sql", f"EXPLAIN {cast}", "--format", "json").stdout
    assert "WindowAggr" in plan, plan
    every_row = cli_query(warehouse, "SELECT count(*) AS n FROM q", tmp_path).to_pylist()
    assert every_row == [{"n": 5}]  # 6 appended, one key twice (dedup)
    assert cli_query(warehouse, cast, tmp_path).to_pylist() == every_row
    # A filter inside the window's input changes the question: no rewrite.
    filtered = sql.replace("FROM q)", "FROM q WHERE value < 10)")
    plan = run_cli("-w", warehouse, "sql", f"EXPLAIN {filtered}", "--format", "json").stdout
    assert "WindowAggr" in plan and reads_data_files(warehouse, filtered), plan
    got = cli_query(warehouse, filtered, tmp_path)
    assert [(r["device"], r["value"]) for r in got.to_pylist()] == [("a", 1.0), ("b", 3.0),
                                                                     ("c", 4.0)]


def test_newest_row_of_one_series_reads_the_index(warehouse, tmp_path):
    append(warehouse, tmp_path, "one", [(0, "a", 1), (5, "a", 2), (3, "b", 3)], 0, create=True)
    append(warehouse, tmp_path, "one", [(9, "b", 4), (2, "a", 30)], 1)
    sql = "SELECT device, time, value FROM one WHERE device = 'a' ORDER BY time DESC LIMIT 1"
    plan = run_cli("-w", warehouse, "sql", f"EXPLAIN {sql}", "--format", "json").stdout
    assert not reads_data_files(warehouse, sql), plan
    got = cli_query(warehouse, sql, tmp_path).to_pylist()
    assert [(r["device"], r["value"]) for r in got] == [("a", 2.0)]
    # Anything besides the series key in the filter, or LIMIT 2, is a scan.
    for other in [sql.replace("WHERE device = 'a'", "WHERE device = 'a' AND value > 1"),
                  sql.replace("LIMIT 1", "LIMIT 2")]:
        assert reads_data_files(warehouse, other), other
    got = cli_query(warehouse, sql.replace("LIMIT 1", "LIMIT 2"), tmp_path).to_pylist()
    assert [r["value"] for r in got] == [2.0, 30.0]
