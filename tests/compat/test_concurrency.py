"""Concurrent writers in separate processes (SPEC §4.6, §14): every append that
reports success is in the table exactly once, every failure is a clear
conflict, and no file is left that no snapshot references. Once on a local
warehouse, once on an S3 server (put-if-absent as `If-None-Match: *`)."""

import concurrent.futures as cf
import dataclasses
import datetime as dt
import re
import subprocess
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from conftest import BIN, cli_query, referenced_files, run_cli

WORKERS = 8
APPENDS = 25
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


@dataclasses.dataclass
class Target:
    """Where the warehouse lives and how the test sees its files."""
    url: str
    env: Optional[dict]  # the binary's environment (None: inherited)
    files: Callable[[str], set]  # every file below a table folder, as URIs
    properties: dict  # PyIceberg FileIO properties


@pytest.fixture(params=["local", "s3"])
def target(request, tmp_path):
    if request.param == "local":
        warehouse = tmp_path / "warehouse"
        warehouse.mkdir()
        return Target(str(warehouse), None,
                      lambda table: {f"file://{p}" for p in (warehouse / table).rglob("*")
                                     if p.is_file()},
                      {})
    server = request.getfixturevalue("s3_server")
    url = request.getfixturevalue("s3_warehouse")
    prefix = url.split("/", 3)[3]
    return Target(url, server.env(),
                  lambda table: {f"s3://{server.bucket}/{k}"
                                 for k in server.keys(f"{prefix}/{table}")},
                  server.pyiceberg_properties())


def worker(target, tmp_path, w):
    ok, conflicts = [], []
    for i in range(APPENDS):
        f = tmp_path / f"w{w}-{i}.parquet"
        pq.write_table(pa.table({
            "time": pa.array([T0 + dt.timedelta(seconds=i)], pa.timestamp("us", tz="UTC")),
            "device_id": pa.array([w], pa.int32()),
            "seq": pa.array([i], pa.int64()),
        }), f)
        proc = subprocess.run([BIN, "-w", target.url, "append", "c.t", str(f)],
                              capture_output=True, text=True, timeout=300, env=target.env)
        if proc.returncode == 0:
            ok.append((w, i))
        else:
            assert "conflict" in proc.stderr, proc.stderr
            conflicts.append((w, i))
    return ok, conflicts


def test_eight_processes_append_concurrently(target, tmp_path):
    seed = tmp_path / "seed.parquet"
    pq.write_table(pa.table({
        "time": pa.array([T0 - dt.timedelta(days=1)], pa.timestamp("us", tz="UTC")),
        "device_id": pa.array([-1], pa.int32()),
        "seq": pa.array([-1], pa.int64()),
    }), seed)
    run_cli("-w", target.url, "append", "c.t", seed, "--create", "--time-column", "time",
            "--series-key", "device_id", env=target.env)

    with cf.ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda w: worker(target, tmp_path, w), range(WORKERS)))
    succeeded = sorted(x for ok, _ in results for x in ok)
    conflicts = [x for _, c in results for x in c]
    assert len(succeeded) + len(conflicts) == WORKERS * APPENDS

    got = cli_query(target.url, "SELECT device_id, seq FROM c.t WHERE device_id >= 0", tmp_path,
                    env=target.env)
    rows = sorted(zip(got.column("device_id").to_pylist(), got.column("seq").to_pylist()))
    assert rows == succeeded  # each success exactly once, nothing from failures

    # Every file in the table folder is referenced by the current version.
    files = target.files("c/t")
    versions = sorted((u for u in files if re.search(r"/metadata/v\d+\.metadata\.json$", u)),
                      key=lambda u: int(u.rsplit("/v", 1)[1].split(".")[0]))
    static = StaticTable.from_metadata(versions[-1], properties=target.properties)
    referenced = referenced_files(static)
    assert referenced - files == set()  # the listing sees what is referenced
    on_storage = {u for u in files if u.endswith((".parquet", ".avro"))}
    assert on_storage - referenced == set()
