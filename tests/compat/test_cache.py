"""The block cache of immutable objects (README, "Reads of data files, manifests and
last-value indexes go through a block cache"), counted through TIMELAKE_TRACE=storage on
the S3 test server: a second process with the disk cache warm reads the head and lists
`metadata/`, and nothing else; answers stay the same through appends and compaction;
the table versions and the head are never served from the cache."""

import datetime as dt
import re

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import run_cli

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
DEVICES = [f"d{i}" for i in range(20)]

QUERIES = [
    # a filtered read of a few pages
    "SELECT dev, count(*) AS n, max(v) AS top FROM t WHERE dev = 'd7' AND "
    "time >= TIMESTAMP '2026-01-01T06:00:00Z' GROUP BY dev",
    # every row group of every file
    "SELECT date_trunc('hour', time) AS hour, count(*) AS n, sum(v) AS total FROM t "
    "GROUP BY 1 ORDER BY 1",
    # answered from the last-value index
    "SELECT dev, time, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY dev ORDER BY "
    "time DESC) AS rn FROM t) WHERE rn = 1 ORDER BY dev",
]


def write(path, start_minute, minutes):
    times, devs, values = [], [], []
    for m in range(start_minute, start_minute + minutes):
        for i, d in enumerate(DEVICES):
            times.append(T0 + dt.timedelta(minutes=m))
            devs.append(d)
            values.append(float(m * 100 + i))
    pq.write_table(pa.table({"time": pa.array(times, pa.timestamp("us", tz="UTC")),
                             "dev": pa.array(devs), "v": pa.array(values)}), path)
    return path


def requests(stderr):
    """(method, key) of every storage request a traced process made."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^timelake storage: (\S+) (\S+) \d+ bytes", stderr, re.M)]


def query(warehouse, sql, env):
    proc = run_cli("-w", warehouse, "sql", sql, "--format", "csv", env=env)
    return proc.stdout, requests(proc.stderr)


def test_a_warm_disk_cache_leaves_one_request_besides_the_listing(s3_server, s3_warehouse,
                                                                  tmp_path):
    env = s3_server.env()
    w = s3_warehouse
    run_cli("-w", w, "append", "t", write(tmp_path / "a.parquet", 0, 600), "--create",
            "--time-column", "time", "--series-key", "dev", env=env)
    run_cli("-w", w, "append", "t", write(tmp_path / "b.parquet", 600, 600), env=env)
    for i, sql in enumerate(QUERIES):
        # A folder of its own: the small files are one block each, so the
        # folder of an earlier query would already hold this one's blocks.
        cache = tmp_path / f"cache-{i}"
        traced = dict(env, TIMELAKE_TRACE="storage", TIMELAKE_CACHE_DIR=str(cache))
        plain, reads = query(w, sql, dict(env, TIMELAKE_TRACE="storage"))
        # What a cold process reads without the folder: the data files too
        # (the index query reads the head only: it fits there).
        first, filling = query(w, sql, traced)
        assert first == plain
        second, warm = query(w, sql, traced)
        assert second == plain
        besides_listing = [r for r in warm if r[0] != "LIST"]
        assert len(besides_listing) <= 1, warm
        assert all(r[1].endswith("/metadata/timelake-head") for r in besides_listing), warm
        assert all(r[1].endswith("/metadata") for r in warm if r[0] == "LIST"), warm
        data = [r for r in filling if r[1].endswith(".parquet")]
        if "ROW_NUMBER" not in sql:
            assert data, ("the first process read data files", filling)
            assert any(r[1].endswith(".parquet") for r in reads), reads
            assert any(p.name.isdigit() for p in cache.rglob("*")), "the folder holds blocks"

    # New commits: new files, a new head; the cache serves only what is
    # still the same, and answers follow the table.
    run_cli("-w", w, "append", "t", write(tmp_path / "c.parquet", 1200, 600), env=env)
    run_cli("-w", w, "maintain", "t", "--orphan-age", "0s", env=env)
    for sql in QUERIES:
        plain, _ = query(w, sql, env)
        again, _ = query(w, sql, traced)
        assert again == plain, sql


def test_cache_options_are_checked_and_local_warehouses_cache_too(tmp_path):
    w = tmp_path / "wh"
    run_cli("-w", w, "append", "t", write(tmp_path / "a.parquet", 0, 120), "--create",
            "--time-column", "time", "--series-key", "dev")
    cache = tmp_path / "cache"
    opts = ["--storage-option", f"timelake_cache_dir={cache}",
            "--storage-option", "timelake_cache_disk=64MiB"]
    out = run_cli("-w", w, *opts, "sql", QUERIES[1], "--format", "csv").stdout
    assert out == run_cli("-w", w, "sql", QUERIES[1], "--format", "csv").stdout
    assert any(p.name.isdigit() for p in cache.rglob("*")), "blocks of the data file"
    proc = run_cli("-w", w, "--storage-option", "timelake_cache_disk=lots", "sql",
                   "SELECT 1", check=False)
    assert proc.returncode != 0
    assert "timelake_cache_disk" in proc.stderr and "not a size" in proc.stderr, proc.stderr
