"""`timelake rollback` (Table::Rollback, issue #18) seen by the peers: after a
rollback PyIceberg, DuckDB and Timelake 0.7 read exactly the rows of the
snapshot restored (PyIceberg's own scan of that snapshot is the reference),
`latest` follows, and a batch id of a snapshot left behind appends again."""

import json

from pyiceberg.table import StaticTable

from conftest import cli_query, duckdb_connection, run_cli, run_tl07, sorted_rows
from test_maintain import batch_file, newest_metadata


def snapshots(warehouse):
    out = run_cli("-w", warehouse, "info", "m", "--snapshots", "--format", "json").stdout
    return json.loads(out)


def test_peers_read_the_restored_snapshot(warehouse, tmp_path):
    files = [batch_file(tmp_path, f"b{i}", i * 100, 10) for i in range(3)]
    for i, f in enumerate(files):
        create = ["--create", "--time-column", "time", "--series-key", "host"] if i == 0 else []
        run_cli("-w", warehouse, "append", "m", f, "--batch-id", f"b{i}", *create)
    kept = snapshots(warehouse)
    assert [s["batch_id"] for s in kept] == ["b0", "b1", "b2"]
    first = kept[0]["snapshot_id"]
    table_dir = warehouse / "default" / "m"
    # PyIceberg's scan of the first snapshot, before the rollback: the reference.
    reference = StaticTable.from_metadata(str(newest_metadata(table_dir))).scan(
        snapshot_id=first).to_arrow()
    assert reference.num_rows == 50

    out = run_cli("-w", warehouse, "rollback", "m", first).stdout
    assert out.strip() == f"rolled default.m back to snapshot {first}: version 5, 50 rows"
    after = snapshots(warehouse)
    assert [(s["current"], s["in_history"]) for s in after] == [
        (True, True), (False, False), (False, False)]
    text = run_cli("-w", warehouse, "info", "m", "--snapshots").stdout
    assert text.count("left by a rollback") == 2 and "current" in text

    columns = ["time", "host", "v"]
    ours = cli_query(warehouse, "SELECT time, host, v FROM m", tmp_path)
    assert sorted_rows(ours, columns) == sorted_rows(reference, columns)
    static = StaticTable.from_metadata(str(newest_metadata(table_dir)))
    assert static.metadata.current_snapshot_id == first
    assert sorted_rows(static.scan().to_arrow(), columns) == sorted_rows(reference, columns)
    con = duckdb_connection()
    n = con.execute(f"SELECT count(*) FROM iceberg_scan('{newest_metadata(table_dir)}')")
    assert n.fetchone()[0] == 50
    out = run_tl07("""
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
print(json.dumps([lake.sql("SELECT count(*) AS n FROM m").to_pylist()[0]["n"],
                  lake.latest("m").column("v").to_pylist()]))
""", warehouse)
    n, latest = json.loads(out.strip().splitlines()[-1])
    rows = reference.to_pylist()
    newest = max(r["time"] for r in rows)
    assert n == 50 and sorted(latest) == sorted(r["v"] for r in rows if r["time"] == newest)

    # b1 and b2 were left behind: they append again; b0 is still in the table.
    out = run_cli("-w", warehouse, "append", "m", files[1], "--batch-id", "b1").stdout
    assert "skipped" not in out, out
    out = run_cli("-w", warehouse, "append", "m", files[0], "--batch-id", "b0").stdout
    assert "skipped 1 batch already committed" in out, out
    assert cli_query(warehouse, "SELECT count(*) AS n FROM m", tmp_path).to_pylist() == [
        {"n": 100}]


def test_an_unknown_snapshot_is_refused_and_changes_nothing(warehouse, tmp_path):
    run_cli("-w", warehouse, "append", "m", batch_file(tmp_path, "a", 0, 5), "--create",
            "--time-column", "time", "--series-key", "host")
    table_dir = warehouse / "default" / "m"
    before = sorted(str(p) for p in table_dir.rglob("*"))
    proc = run_cli("-w", warehouse, "rollback", "m", "42", check=False)
    assert proc.returncode == 1
    assert "no snapshot 42" in proc.stderr and "info --snapshots" in proc.stderr, proc.stderr
    proc = run_cli("-w", warehouse, "rollback", "m", "x", check=False)
    assert proc.returncode == 2, proc.stderr
    assert sorted(str(p) for p in table_dir.rglob("*")) == before
