"""The head object `metadata/timelake-head` (issue #6): written after every
commit in Timelake 0.7's layout, read by a cold process together with the
listing of metadata/, so that `latest` costs one round trip (the head and the
listing in parallel) and a filtered query needs nothing else before its data
files. A stale or corrupt head never changes an answer.
"""

import datetime as dt
import os
import shutil
import struct
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import cli_query, run_cli, run_tl07

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 4, 1, tzinfo=UTC)
SERIES = 10_000


def trace(warehouse, *args):
    """Storage requests of one cold CLI run: (method, key) in order."""
    proc = run_cli("-w", warehouse, *args, env={**os.environ, "TIMELAKE_TRACE": "storage"})
    lines = [line.split() for line in proc.stderr.splitlines()
             if line.startswith("timelake storage:")]
    return [(parts[2], parts[3]) for parts in lines], proc.stdout


def footer_paths(warehouse, table):
    """The data file paths whose footers the table's head inlines."""
    raw = (warehouse / "default" / table / "metadata" / "timelake-head").read_bytes()
    at = 5 + 8 + 1 + raw[13]
    while at < len(raw):
        length = struct.unpack_from("<Q", raw, at)[0]
        section = pa.ipc.open_stream(raw[at + 8:at + 8 + length]).read_all()
        at += 8 + length
        if (section.schema.metadata or {}).get(b"timelake.section") == b"footers":
            return section["path"].to_pylist()
    return []


def make_table(warehouse, tmp_path, name="s", appends=3, properties=()):
    rows_per = SERIES
    for i in range(appends):
        t = pa.table({
            "time": pa.array([T0 + dt.timedelta(minutes=i) for _ in range(rows_per)],
                             pa.timestamp("us", tz="UTC")),
            "sensor": pa.array([f"s{j:05d}" for j in range(rows_per)]),
            "value": pa.array([float(i * rows_per + j) for j in range(rows_per)]),
        })
        f = tmp_path / f"{name}{i}.parquet"
        pq.write_table(t, f)
        args = ["-w", warehouse, "append", name, f]
        if i == 0:
            args += ["--create", "--time-column", "time", "--series-key", "sensor"]
            for p in properties:
                args += ["--set", p]
        run_cli(*args)


def test_cold_latest_and_filtered_query_round_trips(warehouse, tmp_path):
    make_table(warehouse, tmp_path)
    head = warehouse / "default" / "s" / "metadata" / "timelake-head"
    assert head.read_bytes()[:4] == b"TLHD"

    requests, out = trace(warehouse, "latest", "s", "--format", "csv")
    # One round trip: the head and the listing, issued together.
    assert sorted(m for m, _ in requests) == ["GET", "LIST"], requests
    assert requests[0][1].endswith("timelake-head") or requests[1][1].endswith("timelake-head")
    lines = out.strip().splitlines()
    assert len(lines) == SERIES + 1 and lines[1].startswith("2026-04-01 00:02:00,s00000,20000")

    requests, out = trace(warehouse, "sql", "SELECT count(*) AS n FROM s WHERE sensor = 's00042' "
                          "AND time >= '2026-04-01T00:01:00Z'", "--format", "csv")
    before_data = []
    for method, key in requests:
        if "/data/" in key:
            break
        before_data.append(method)
    assert sorted(before_data) == ["GET", "LIST"], requests  # at most 3 allowed; 1 round trip
    assert out.strip().splitlines()[1] == "2"

    # The SQL forms of "newest row per series" and "newest row of one
    # series" read the index the head holds: nothing after the head.
    for sql in ["SELECT sensor, value FROM (SELECT *, row_number() OVER (PARTITION BY sensor "
                "ORDER BY time DESC) AS rn FROM s) WHERE rn = 1 ORDER BY sensor",
                "SELECT sensor, value FROM s WHERE sensor = 's00042' ORDER BY time DESC "
                "LIMIT 1"]:
        requests, out = trace(warehouse, "sql", sql, "--format", "csv")
        assert sorted(m for m, _ in requests) == ["GET", "LIST"], (sql, requests)
        lines = out.strip().splitlines()
        assert lines[1] == ("s00042,20042" if "LIMIT 1" in sql else "s00000,20000"), lines[:2]
        if "LIMIT 1" not in sql:
            assert len(lines) == SERIES + 1


def test_one_statement_loads_each_table_once(warehouse, tmp_path):
    """A statement asks for a table's schema, then for its scan; a new
    process loads the table while its engine starts. Each table is loaded
    once for the statement (one head, one listing), even with a
    version-check-interval of 0, which makes every statement look for a
    newer version, and the statement reads that one version throughout."""
    make_table(warehouse, tmp_path, name="a", appends=1,
               properties=["timelake.version-check-interval=0s"])
    make_table(warehouse, tmp_path, name="b", appends=1)
    sql = ("SELECT count(*) AS n FROM a JOIN b ON a.sensor = b.sensor AND a.time = b.time "
           "WHERE a.sensor = 's00042'")
    requests, out = trace(warehouse, "sql", sql, "--format", "csv")
    metadata = Counter((m, k.split("/")[1]) for m, k in requests if "/metadata" in k)
    assert metadata == {("GET", "a"): 1, ("LIST", "a"): 1, ("GET", "b"): 1,
                        ("LIST", "b"): 1}, requests
    assert out.strip().splitlines()[1] == "1"
    # A CTE of the same name as no table, and a table that does not exist:
    # the statement fails as it did, naming the table.
    proc = run_cli("-w", warehouse, "sql", "WITH c AS (SELECT * FROM a) SELECT * FROM c "
                   "JOIN nope ON true", check=False)
    assert proc.returncode != 0 and "nope" in proc.stderr, proc.stderr


def test_stale_or_corrupt_head_gives_the_same_answers(warehouse, tmp_path):
    make_table(warehouse, tmp_path, appends=1)
    metadata = warehouse / "default" / "s" / "metadata"
    old_head = tmp_path / "old-head"
    shutil.copy(metadata / "timelake-head", old_head)
    f = tmp_path / "more.parquet"
    pq.write_table(pa.table({"time": pa.array([T0 + dt.timedelta(hours=1)],
                                              pa.timestamp("us", tz="UTC")),
                             "sensor": ["s00007"], "value": [-1.0]}), f)
    run_cli("-w", warehouse, "append", "s", f)
    want = cli_query(warehouse, "SELECT sensor, value FROM s WHERE sensor = 's00007' "
                     "ORDER BY time", tmp_path).to_pylist()
    assert want == [{"sensor": "s00007", "value": 7.0}, {"sensor": "s00007", "value": -1.0}]

    for content in [old_head.read_bytes(), b"TLHD\x01garbage", b"", b"not a head at all"]:
        (metadata / "timelake-head").write_bytes(content)
        got = cli_query(warehouse, "SELECT sensor, value FROM s WHERE sensor = 's00007' "
                        "ORDER BY time", tmp_path).to_pylist()
        assert got == want
        latest = run_cli("-w", warehouse, "latest", "s", "--format", "csv").stdout
        assert "2026-04-01 01:00:00,s00007,-1" in latest


def test_timelake07_reads_our_head_and_we_read_its(warehouse, tmp_path):
    make_table(warehouse, tmp_path, name="ours", appends=1)
    src = tmp_path / "theirs.parquet"
    pq.write_table(pa.table({"time": pa.array([T0, T0 + dt.timedelta(minutes=5)],
                                              pa.timestamp("us", tz="UTC")),
                             "sensor": ["x", "x"], "value": [1.0, 2.0]}), src)
    # Our head inlines the footer of our file; 0.7 plans its filtered query
    # with it (or reads the file's own) and gets the same answer.
    assert footer_paths(warehouse, "ours")
    out = run_tl07(
        """
import sys, json, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
data = pq.read_table(sys.argv[2])
lake.create_table("theirs", data.schema, time_column="time", series_key=["sensor"]).append(data)
print(json.dumps([lake.latest("ours").num_rows,
                  lake.sql("SELECT count(*) AS n FROM ours").to_pylist()[0]["n"],
                  lake.sql("SELECT sum(value) AS v FROM ours WHERE sensor = 's00042'")
                      .to_pylist()[0]["v"]]))
""", warehouse, src)
    assert out.strip().splitlines()[-1] == f"[{SERIES}, {SERIES}, 42.0]"
    assert (warehouse / "default" / "theirs" / "metadata" / "timelake-head").exists()
    requests, out = trace(warehouse, "latest", "theirs", "--format", "csv")
    assert sorted(m for m, _ in requests) == ["GET", "LIST"], requests
    assert out.strip().splitlines()[1].startswith("2026-04-01 00:05:00,x,2")
    # 0.7's head inlines its file's footer: a cold query of ours reads
    # that file once, for its data only.
    assert footer_paths(warehouse, "theirs")
    requests, out = trace(warehouse, "sql", "SELECT sum(value) AS v FROM theirs "
                          "WHERE time >= '2026-04-01T00:01:00Z'", "--format", "csv")
    assert float(out.strip().splitlines()[1]) == 2.0
    data = [key for _, key in requests if "/data/" in key]
    assert len(data) == 1, requests


def test_an_index_over_head_inline_bytes_stays_in_its_file(warehouse, tmp_path):
    make_table(warehouse, tmp_path, appends=1)
    run_cli("-w", warehouse, "alter", "s", "--set", "timelake.head-inline-bytes=1000")
    make_table_more = tmp_path / "more.parquet"
    pq.write_table(pa.table({"time": pa.array([T0 + dt.timedelta(hours=2)],
                                              pa.timestamp("us", tz="UTC")),
                             "sensor": ["s00001"], "value": [5.0]}), make_table_more)
    run_cli("-w", warehouse, "append", "s", make_table_more)
    requests, out = trace(warehouse, "latest", "s", "--format", "csv")
    # Head and listing, then the index file: the head no longer holds it.
    assert [m for m, _ in requests].count("GET") == 2, requests
    assert any("/lvi-" in key for _, key in requests), requests
    lines = out.strip().splitlines()
    assert len(lines) == SERIES + 1
    assert "2026-04-01 02:00:00,s00001,5" in out


def test_the_head_carries_footers_so_a_cold_query_reads_data_only(warehouse, tmp_path):
    make_table(warehouse, tmp_path)
    files = sorted(p.name for p in (warehouse / "default" / "s" / "data").rglob("*.parquet"))
    # Each append's process carries the footers of the head it read forward.
    assert sorted(p.rsplit("/", 1)[1] for p in footer_paths(warehouse, "s")) == files
    sql = ("SELECT count(*) AS n, sum(value) AS v FROM s WHERE sensor = 's00042' "
           "AND time >= '2026-04-01T00:01:00Z'")
    requests, out = trace(warehouse, "sql", sql, "--format", "csv")
    n, v = out.strip().splitlines()[1].split(",")
    assert (int(n), float(v)) == (2, 30084.0)
    # No footer or page-index read: each file the query needs is read once,
    # for the pages it needs.
    reads = Counter(key for _, key in requests if "/data/" in key)
    assert reads and set(reads.values()) == {1}, requests

    # A head without footers (head-inline-bytes 0): the same answer, after
    # reading each file's footer and page index from the file too.
    run_cli("-w", warehouse, "alter", "s", "--set", "timelake.head-inline-bytes=0")
    assert footer_paths(warehouse, "s") == []
    requests, out_without = trace(warehouse, "sql", sql, "--format", "csv")
    assert out_without == out
    reads_without = Counter(key for _, key in requests if "/data/" in key)
    assert reads_without.keys() == reads.keys()
    assert min(reads_without.values()) >= 2, requests


def test_filters_evaluated_in_the_scan_read_each_file_once(warehouse, tmp_path):
    make_table(warehouse, tmp_path)
    # The files are sorted, so the scan evaluates the filters row by row
    # (filter-pushdown auto) and decodes the rest only for the rows that
    # pass; the filters' pages and the rest are still one request per file.
    sql = ("SELECT count(*) AS n, sum(value) AS v FROM s "
           "WHERE time >= '2026-04-01T00:01:00Z' AND value > 15000")
    assert "FilterExec" not in run_cli("-w", warehouse, "sql", "EXPLAIN " + sql).stdout
    requests, out = trace(warehouse, "sql", sql, "--format", "csv")
    n, v = out.strip().splitlines()[1].split(",")
    # Appends 1 and 2 (minutes 1 and 2): 15001..19999 and 20000..29999.
    assert (int(n), float(v)) == (14999, 337477500.0)
    reads = Counter(key for _, key in requests if "/data/" in key)
    assert reads and set(reads.values()) == {1}, requests

    # Switched off, the filters run above the scan, with the same answer.
    off = "SET timelake.filter_pushdown = 'false'; "
    assert "FilterExec" in run_cli("-w", warehouse, "sql", f"{off}EXPLAIN {sql};").stdout
    assert run_cli("-w", warehouse, "sql", f"{off}{sql};", "--format", "csv").stdout == out
