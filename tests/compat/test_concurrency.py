"""Concurrent writers in separate processes (SPEC §4.6, §14): every append that
reports success is in the table exactly once, every failure is a clear
conflict, and no file is left that no snapshot references."""

import concurrent.futures as cf
import datetime as dt
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from conftest import BIN, cli_query, run_cli

import subprocess

WORKERS = 8
APPENDS = 25
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def worker(warehouse, tmp_path, w):
    ok, conflicts = [], []
    for i in range(APPENDS):
        f = tmp_path / f"w{w}-{i}.parquet"
        pq.write_table(pa.table({
            "time": pa.array([T0 + dt.timedelta(seconds=i)], pa.timestamp("us", tz="UTC")),
            "device_id": pa.array([w], pa.int32()),
            "seq": pa.array([i], pa.int64()),
        }), f)
        proc = subprocess.run([BIN, "-w", str(warehouse), "append", "c.t", str(f)],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            ok.append((w, i))
        else:
            assert "conflict" in proc.stderr, proc.stderr
            conflicts.append((w, i))
    return ok, conflicts


def test_eight_processes_append_concurrently(warehouse, tmp_path):
    seed = tmp_path / "seed.parquet"
    pq.write_table(pa.table({
        "time": pa.array([T0 - dt.timedelta(days=1)], pa.timestamp("us", tz="UTC")),
        "device_id": pa.array([-1], pa.int32()),
        "seq": pa.array([-1], pa.int64()),
    }), seed)
    run_cli("-w", warehouse, "append", "c.t", seed, "--create", "--time-column", "time",
            "--series-key", "device_id")

    with cf.ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda w: worker(warehouse, tmp_path, w), range(WORKERS)))
    succeeded = sorted(x for ok, _ in results for x in ok)
    conflicts = [x for _, c in results for x in c]
    assert len(succeeded) + len(conflicts) == WORKERS * APPENDS

    got = cli_query(warehouse, "SELECT device_id, seq FROM c.t WHERE device_id >= 0", tmp_path)
    rows = sorted(zip(got.column("device_id").to_pylist(), got.column("seq").to_pylist()))
    assert rows == succeeded  # each success exactly once, nothing from failures

    # Every file in the table folder is referenced by the current version.
    table_dir = warehouse / "c" / "t"
    versions = sorted((table_dir / "metadata").glob("v*.metadata.json"),
                      key=lambda p: int(p.name[1:].split(".")[0]))
    static = StaticTable.from_metadata(str(versions[-1]))
    referenced = set()
    for snapshot in static.metadata.snapshots:
        referenced.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(static.io):
            referenced.add(manifest.manifest_path)
    for task in static.scan().plan_files():
        referenced.add(task.file.file_path)
    on_disk = {f"file://{p}" for p in table_dir.rglob("*")
               if p.is_file() and (p.suffix in (".parquet", ".avro"))}
    assert on_disk - referenced == set()
