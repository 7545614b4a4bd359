"""Deleting rows (`timelake delete`, SQL DELETE; issue #23 item 6) seen by the
peers: PyIceberg, DuckDB and Timelake 0.7 see exactly the rows that stay, on
local disk and on the S3 server; `--purge` removes the old files now; a bad
predicate changes nothing; tables 0.7 wrote can be deleted from."""

import datetime as dt
import json

from pyiceberg.table import StaticTable

from conftest import cli_query, duckdb_connection, referenced_files, run_cli, run_tl07
from test_concurrency import target  # noqa: F401  (fixture: local and S3 warehouses)
from test_maintain import batch_file, newest_metadata, tl07_table

DAY = 86400


def day_files(tmp_path, days=3):
    """One file per day from T0 (2026-04-01): 20 timestamps x 5 hosts."""
    return [batch_file(tmp_path, f"d{d}", d * DAY, 20) for d in range(days)]


def create(url, files, env=None):
    for i, f in enumerate(files):
        create = ["--create", "--time-column", "time", "--series-key", "host"] if i == 0 else []
        run_cli("-w", url, "append", "m", f, "--no-maintain", *create, env=env)


def delete(url, where, *flags, env=None):
    out = run_cli("-w", url, "delete", "m", "--where", where, "--format", "json", *flags,
                  env=env).stdout
    return json.loads(out)


def counts(url, tmp_path, env=None):
    got = cli_query(url, "SELECT count(*) AS n, count(DISTINCT host) AS h, "
                         "count(DISTINCT date_trunc('day', time)) AS d FROM m", tmp_path, env)
    return got.to_pylist()[0]


def test_peers_see_exactly_the_rows_that_stay(target, tmp_path):  # noqa: F811
    create(target.url, day_files(tmp_path), env=target.env)
    assert counts(target.url, tmp_path, target.env) == {"n": 300, "h": 5, "d": 3}
    # One sensor's rows, then a wrong day, then everything before a time.
    one = delete(target.url, "host = 'h1'", env=target.env)
    assert (one["rows_deleted"], one["files_removed"], one["files_written"]) == (60, 3, 3)
    day = delete(target.url, "time >= '2026-04-02' AND time < '2026-04-03'", env=target.env)
    assert (day["rows_deleted"], day["files_removed"], day["files_written"]) == (80, 1, 0)
    # Two of the 20 timestamps of the first day.
    before = delete(target.url, "time < '2026-04-01T00:00:02Z'", env=target.env)
    assert before["rows_deleted"] == 2 * 4
    assert counts(target.url, tmp_path, target.env) == {"n": 300 - 60 - 80 - 8, "h": 4, "d": 2}

    # PyIceberg and DuckDB read the newest metadata: the same rows.
    state = json.loads(run_cli("-w", target.url, "info", "m", "--format", "json",
                               env=target.env).stdout)
    metadata = state["location"].rstrip("/") + "/metadata/v%d.metadata.json" % state["version"]
    static = StaticTable.from_metadata(metadata, properties=target.properties)
    rows = static.scan().to_arrow()
    assert rows.num_rows == 152
    assert "h1" not in set(rows.column("host").to_pylist())
    assert static.metadata.snapshots[-1].summary.operation.value == "overwrite"
    if target.env is None:
        con = duckdb_connection()
        n, hosts = con.execute(f"SELECT count(*), count(DISTINCT host) "
                               f"FROM iceberg_scan('{metadata}')").fetchone()
        assert (n, hosts) == (152, 4)


def test_timelake_07_reads_after_a_delete_and_we_delete_from_its_tables(warehouse, tmp_path):
    create(warehouse, day_files(tmp_path, days=2))
    run_cli("-w", warehouse, "sql", "DELETE FROM m WHERE host IN ('h3', 'h4')")
    out = run_tl07("""
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
n = lake.sql("SELECT count(*) AS n FROM m").to_pylist()[0]["n"]
print(json.dumps([n, sorted(lake.latest("m").column("host").to_pylist())]))
""", warehouse)
    assert json.loads(out.strip().splitlines()[-1]) == [2 * 20 * 3, ["h0", "h1", "h2"]]

    tl07_table(warehouse, day_files(tmp_path, days=2))
    report = json.loads(run_cli("-w", warehouse, "delete", "theirs", "--where", "host = 'h0'",
                                "--format", "json").stdout)
    assert report["rows_deleted"] == 40
    out = run_tl07("""
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
print(json.dumps([lake.sql("SELECT count(*) AS n FROM theirs").to_pylist()[0]["n"],
                  lake.latest("theirs").num_rows]))
""", warehouse)
    assert json.loads(out.strip().splitlines()[-1]) == [160, 4]


def test_purge_removes_the_old_files_now(warehouse, tmp_path):
    create(warehouse, day_files(tmp_path))
    table_dir = warehouse / "default" / "m"
    plain = delete(warehouse, "host = 'h0'")
    assert plain["snapshots_expired"] == 0
    static = StaticTable.from_metadata(str(newest_metadata(table_dir)))
    # Without --purge the old files stay for the older snapshots.
    assert len(static.metadata.snapshots) == 4
    purged = delete(warehouse, "host = 'h1'", "--purge")
    assert purged["snapshots_expired"] == 4 and purged["files_deleted"] >= 6
    static = StaticTable.from_metadata(str(newest_metadata(table_dir)))
    assert len(static.metadata.snapshots) == 1
    on_disk = {f"file://{p}" for p in table_dir.rglob("*.parquet")}
    assert on_disk <= referenced_files(static)
    assert static.scan().to_arrow().num_rows == 3 * 20 * 3


def test_bad_predicates_are_refused_and_change_nothing(warehouse, tmp_path):
    create(warehouse, day_files(tmp_path, days=1))
    table_dir = warehouse / "default" / "m"
    before = sorted(str(p) for p in table_dir.rglob("*"))
    for where, says in [("sensor = 'x'", "sensor"), ("host = ", "deleting from default.m"),
                        ("", "--where needs a predicate")]:
        proc = run_cli("-w", warehouse, "delete", "m", "--where", where, check=False)
        assert proc.returncode != 0, where
        assert says in proc.stderr, proc.stderr
    proc = run_cli("-w", warehouse, "sql", "DELETE FROM m USING other WHERE true", check=False)
    assert proc.returncode != 0
    assert "expected DELETE FROM table [WHERE predicate]" in proc.stderr, proc.stderr
    assert sorted(str(p) for p in table_dir.rglob("*")) == before
    assert counts(warehouse, tmp_path) == {"n": 100, "h": 5, "d": 1}
    # A predicate that matches nothing commits nothing.
    out = run_cli("-w", warehouse, "delete", "m", "--where", "v < 0").stdout
    assert "nothing deleted" in out
    assert sorted(str(p) for p in table_dir.rglob("*")) == before


def test_delete_at_time_zone_boundaries_uses_utc(warehouse, tmp_path):
    """'2026-04-02' as a bound is midnight UTC, as queries read it."""
    create(warehouse, day_files(tmp_path, days=2))
    report = delete(warehouse, "time < '2026-04-02'")
    assert report["rows_deleted"] == 100
    got = cli_query(warehouse, "SELECT min(time) AS t FROM m", tmp_path).to_pylist()[0]["t"]
    assert got == dt.datetime(2026, 4, 2, tzinfo=dt.timezone.utc)
