"""Time travel in SQL (`as_of(table, snapshot_id | time)`, `snapshots(table)`,
issue #18) against PyIceberg's scan of the same snapshot: after appends, a
compaction, a delete, a schema change and a rollback, every snapshot the
table keeps reads in ours exactly as PyIceberg reads it, by id and by the
time it was committed (PyIceberg's snapshot_as_of_timestamp). On local disk
and on the S3 server."""

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

from conftest import cli_query, run_cli, sorted_rows
from test_upgrade import static_table, where  # noqa: F401  (fixture: local and S3)

T0 = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)


def batch(tmp_path, i):
    path = tmp_path / f"b{i}.parquet"
    pq.write_table(pa.table({
        "time": pa.array([T0 + dt.timedelta(hours=10 * i + k) for k in range(6)],
                         pa.timestamp("us", tz="UTC")),
        "dev": [f"d{k % 3}" for k in range(6)],
        "v": [float(100 * i + k) for k in range(6)],
    }), path)
    return path


def test_every_kept_snapshot_reads_as_pyiceberg_reads_it(where, tmp_path):
    w, env = where.url, where.env
    for i in range(3):
        create = ["--create", "--time-column", "time", "--series-key", "dev"] if i == 0 else []
        run_cli("-w", w, "append", "tt.m", batch(tmp_path, i), "--no-maintain", *create,
                env=env)
    run_cli("-w", w, "maintain", "tt.m", "--no-expire", "--no-orphans", env=env)
    run_cli("-w", w, "delete", "tt.m", "--where", "v = 101", env=env)
    run_cli("-w", w, "alter", "tt.m", "--add-column", "note:string", env=env)
    run_cli("-w", w, "append", "tt.m", batch(tmp_path, 3), "--no-maintain", env=env)
    kept = json.loads(run_cli("-w", w, "info", "tt.m", "--snapshots", "--format", "json",
                              env=env).stdout)
    run_cli("-w", w, "rollback", "tt.m", kept[2]["snapshot_id"], env=env)
    kept = json.loads(run_cli("-w", w, "info", "tt.m", "--snapshots", "--format", "json",
                              env=env).stdout)
    assert [s["operation"] for s in kept] == [
        "append", "append", "append", "replace", "overwrite", "append"], kept

    static = static_table(where, "tt.m")
    columns = ["time", "dev", "v"]
    for s in kept:
        sid = s["snapshot_id"]
        reference = static.scan(snapshot_id=sid).to_arrow()
        ours = cli_query(w, f"SELECT * FROM as_of('tt.m', {sid})", tmp_path, env=env)
        # The schema of that snapshot: `note` only in the last one.
        assert ours.column_names == reference.column_names, sid
        assert sorted_rows(ours, columns) == sorted_rows(reference, columns), sid
        # By the time it was committed: the snapshot current then, as the
        # snapshot log (rollbacks included) says, as PyIceberg finds it.
        at = s["timestamp_ms"]
        current_then = static.snapshot_as_of_timestamp(at)
        reference = static.scan(snapshot_id=current_then.snapshot_id).to_arrow()
        stamp = dt.datetime.fromtimestamp(at / 1000, dt.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S.%f")[:-3]
        ours = cli_query(w, f"SELECT time, dev, v FROM as_of('tt.m', '{stamp}')", tmp_path,
                         env=env)
        assert sorted_rows(ours, columns) == sorted_rows(reference, columns), (sid, stamp)
    # Now (after the rollback): the rolled-back-to snapshot.
    ours = cli_query(w, "SELECT time, dev, v FROM as_of('tt.m', now())", tmp_path, env=env)
    current = cli_query(w, "SELECT time, dev, v FROM tt.m", tmp_path, env=env)
    assert sorted_rows(ours, columns) == sorted_rows(current, columns)
    assert sorted_rows(current, columns) == sorted_rows(
        static.scan(snapshot_id=kept[2]["snapshot_id"]).to_arrow(), columns)

    listed = cli_query(w, "SELECT snapshot_id, parent_id, operation, rows, current, "
                          "in_history FROM snapshots('tt.m') ORDER BY sequence_number",
                       tmp_path, env=env).to_pylist()
    assert [(r["snapshot_id"], r["parent_id"], r["operation"], r["rows"], r["current"],
             r["in_history"]) for r in listed] == [
        (s["snapshot_id"], s["parent_id"], s["operation"], s["rows"], s["current"],
         s["in_history"]) for s in kept]
