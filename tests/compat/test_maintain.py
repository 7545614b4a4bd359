"""Maintenance (SPEC §7) seen by the peers and by concurrent writers: tables we
compact and expire stay readable, with the same rows, by PyIceberg, DuckDB and
Timelake 0.7; we maintain tables 0.7 wrote; compaction running beside appends
from another process loses and doubles nothing and leaves no stray file."""

import concurrent.futures as cf
import datetime as dt
import json
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from conftest import (BIN, cli_query, duckdb_connection, referenced_files, run_cli,
                      run_tl07)
from test_concurrency import target  # noqa: F401  (fixture: local and S3 warehouses)

T0 = dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc)


def batch_file(tmp_path, name, start, n, hosts=5, value=0.0):
    """n timestamps (1 s apart from `start` seconds after T0) x `hosts` hosts."""
    times, hs, vs = [], [], []
    for i in range(n):
        for h in range(hosts):
            times.append(T0 + dt.timedelta(seconds=start + i))
            hs.append(f"h{h}")
            vs.append(value + start + i + h)
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"time": pa.array(times, pa.timestamp("us", tz="UTC")),
                             "host": hs, "v": vs}), path)
    return path


def newest_metadata(table_dir):
    versions = sorted(table_dir.glob("metadata/v*.metadata.json"),
                      key=lambda p: int(p.name[1:].split(".")[0]))
    return versions[-1]


def answer(warehouse, table, tmp_path):
    got = cli_query(warehouse, f"SELECT count(*) AS n, sum(v) AS s, "
                               f"count(DISTINCT host) AS h FROM {table}", tmp_path)
    return got.to_pylist()[0]


def test_peers_read_what_maintenance_wrote(warehouse, tmp_path):
    # 12 appends of one day; the second half repeats the keys of the first
    # with other values (dedup keeps the later ones).
    for a in range(12):
        f = batch_file(tmp_path, f"a{a}", (a % 6) * 100, 100, value=1000.0 * (a // 6))
        create = ["--create", "--time-column", "time", "--series-key", "host"] if a == 0 else []
        run_cli("-w", warehouse, "append", "m", f, "--no-maintain", *create)
    before = answer(warehouse, "m", tmp_path)
    assert before["n"] == 6 * 100 * 5
    out = run_cli("-w", warehouse, "maintain", "m", "--format", "json").stdout
    report = json.loads(out)
    assert report["partitions_compacted"] == 1 and report["files_rewritten"] == 12
    assert report["duplicates_removed"] == 6 * 100 * 5
    assert answer(warehouse, "m", tmp_path) == before

    table_dir = warehouse / "default" / "m"
    metadata = newest_metadata(table_dir)
    snapshot = json.loads(metadata.read_text())["snapshots"][-1]
    assert snapshot["summary"]["operation"] == "replace"
    assert snapshot["summary"]["deleted-data-files"] == "12"

    # PyIceberg and DuckDB's iceberg extension: exactly our rows.
    static = StaticTable.from_metadata(str(metadata))
    rows = static.scan().to_arrow()
    assert rows.num_rows == before["n"]
    assert abs(sum(rows.column("v").to_pylist()) - before["s"]) < 1e-6
    con = duckdb_connection()
    n, s = con.execute(f"SELECT count(*), sum(v) FROM iceberg_scan('{metadata}')").fetchone()
    assert (n, abs(s - before["s"]) < 1e-6) == (before["n"], True)

    # Timelake 0.7 reads it, its latest agrees, and it appends and maintains.
    more = batch_file(tmp_path, "more07", 5000, 10)
    out = run_tl07("""
import sys, json, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
t = lake.table("m")
n = lake.sql("SELECT count(*) AS n, sum(v) AS s FROM m").to_pylist()[0]
latest = lake.latest("m").num_rows
t.append(pq.read_table(sys.argv[2]))
report = t.maintain()
print(json.dumps([n, latest, report["files_written"]]))
""", warehouse, more)
    n, latest, _ = json.loads(out.strip().splitlines()[-1])
    assert n["n"] == before["n"] and abs(n["s"] - before["s"]) < 1e-6
    assert latest == 5
    after = answer(warehouse, "m", tmp_path)
    assert after["n"] == before["n"] + 50


def tl07_table(warehouse, files, name="theirs"):
    """A table `name` Timelake 0.7 creates and appends `files` to, one commit each."""
    run_tl07("""
import sys, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
first = pq.read_table(sys.argv[3])
t = lake.create_table(sys.argv[2], first.schema, time_column="time", series_key=["host"])
for path in sys.argv[3:]:
    t.append(pq.read_table(path))
""", warehouse, name, *files)


def test_we_maintain_a_table_timelake_07_wrote(warehouse, tmp_path):
    files = [batch_file(tmp_path, f"b{a}", a * 50, 50) for a in range(6)]
    tl07_table(warehouse, files)
    before = answer(warehouse, "theirs", tmp_path)
    report = json.loads(run_cli("-w", warehouse, "maintain", "theirs", "--format",
                                "json").stdout)
    assert report["files_written"] >= 1 and report["files_rewritten"] >= 2, report
    assert answer(warehouse, "theirs", tmp_path) == before
    out = run_tl07("""
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
print(json.dumps([lake.sql("SELECT count(*) AS n FROM theirs").to_pylist()[0]["n"],
                  lake.latest("theirs").num_rows]))
""", warehouse)
    assert json.loads(out.strip().splitlines()[-1]) == [before["n"], 5]


def test_compaction_beside_appends_from_another_process(target, tmp_path):
    """Local disk and the S3 server (`target` of test_concurrency)."""
    appends = 40
    first = batch_file(tmp_path, "c0", 0, 20)
    run_cli("-w", target.url, "append", "c.t", first, "--no-maintain", "--create",
            "--time-column", "time", "--series-key", "host", env=target.env)
    inputs = [batch_file(tmp_path, f"c{a}", a * 20, 20) for a in range(1, appends)]

    def appender():
        for f in inputs:
            proc = subprocess.run([BIN, "-w", target.url, "append", "c.t", str(f),
                                   "--no-maintain"],
                                  capture_output=True, text=True, timeout=300, env=target.env)
            assert proc.returncode == 0, proc.stderr  # appends rebase over rewrites
        return len(inputs)

    def maintainer():
        runs, conflicts = 0, 0
        while runs < 25:
            proc = subprocess.run([BIN, "-w", target.url, "maintain", "c.t",
                                   "--orphan-age", "1h", "--format", "json"],
                                  capture_output=True, text=True, timeout=300, env=target.env)
            runs += 1
            if proc.returncode != 0:
                assert "conflict" in proc.stderr, proc.stderr
                conflicts += 1
        return runs, conflicts

    with cf.ThreadPoolExecutor(2) as pool:
        appended = pool.submit(appender)
        maintained = pool.submit(maintainer)
        assert appended.result() == appends - 1
        runs, conflicts = maintained.result()
    print(f"\n{target.url}: {appends} appends beside {runs} maintain runs "
          f"({conflicts} reported a conflict)")
    got = cli_query(target.url, "SELECT host, time FROM c.t", tmp_path, env=target.env)
    keys = list(zip(got.column("host").to_pylist(), got.column("time").to_pylist()))
    assert len(keys) == appends * 20 * 5  # nothing lost
    assert len(set(keys)) == len(keys)  # nothing doubled

    # No data or manifest file that no snapshot references.
    files = target.files("c/t")
    versions = sorted((u for u in files if re.search(r"/metadata/v\d+\.metadata\.json$", u)),
                      key=lambda u: int(u.rsplit("/v", 1)[1].split(".")[0]))
    static = StaticTable.from_metadata(versions[-1], properties=target.properties)
    referenced = referenced_files(static)
    on_storage = {u for u in files if u.endswith((".parquet", ".avro"))}
    assert on_storage - referenced == set(), (runs, conflicts)
    # A last maintain leaves one sorted file.
    run_cli("-w", target.url, "maintain", "c.t", env=target.env)
    info = json.loads(run_cli("-w", target.url, "info", "c.t", "--format", "json",
                              env=target.env).stdout)
    assert info["files"] == 1 and info["rows"] == appends * 20 * 5


def test_bad_maintain_arguments_change_nothing(warehouse, tmp_path):
    f = batch_file(tmp_path, "x", 0, 10)
    run_cli("-w", warehouse, "append", "x", f, "--create", "--time-column", "time",
            "--series-key", "host")
    before = sorted(p.relative_to(warehouse) for p in warehouse.rglob("*"))
    proc = run_cli("-w", warehouse, "maintain", "x", "--orphan-age", "soon", check=False)
    assert proc.returncode == 2 and "--orphan-age" in proc.stderr
    proc = run_cli("-w", warehouse, "maintain", "nope", check=False)
    assert proc.returncode == 1 and "nope" in proc.stderr
    assert sorted(p.relative_to(warehouse) for p in warehouse.rglob("*")) == before
    assert re.search(r"maintained default\.x", run_cli("-w", warehouse, "maintain",
                                                         "x").stdout)
