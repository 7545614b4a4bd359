"""`timelake upgrade` killed with SIGKILL at random points (issue #18): the
table it leaves opens and holds every row, and the next upgrade finishes the
job (a third one finds nothing to do). The table is a plain Iceberg table
PyIceberg wrote (unpartitioned: PyIceberg's partitioned writes need its
optional native package), unsorted, in several small files, so that an
upgrade is five commits and a head: protect, format, contract, last-value
index, the rewrite. Seeded (TIMELAKE_CRASH_SEED). Once on a local
warehouse (each kill on a copy of the same table), once on an S3 server (a
plain table `timelake append --create` wrote afresh for each kill: pyarrow's
S3 client, which PyIceberg writes with, fails some multipart uploads on the
test server)."""

import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.parquet as pq

from compat_helpers import BIN, cli_query, run_cli
from compat_helpers import s3_server, s3_warehouse  # noqa: F401  (fixtures)

SEED = int(os.environ.get("TIMELAKE_CRASH_SEED", "20260114"))
T0 = dt.datetime(2026, 2, 1, tzinfo=dt.timezone.utc)
DAYS = 6
APPENDS = 6
ADOPT = ["--time-column", "time", "--series-key", "host"]


def chunk(i):
    """Day d, hour h, host k of append i: unique keys, in no sorted order."""
    rows = [(T0 + dt.timedelta(days=d, hours=h, minutes=i), f"h{k}", float(i * 10000 + d * 100
                                                                          + h * 4 + k))
            for d in range(DAYS) for h in range(0, 24, 3) for k in range(4)]
    random.Random(i).shuffle(rows)
    return pa.table({"time": pa.array([r[0] for r in rows], pa.timestamp("us", tz="UTC")),
                     "host": pa.array([r[1] for r in rows], pa.string()),
                     "v": pa.array([r[2] for r in rows], pa.float64())})


def write_pyiceberg_table(url, tmp_path, properties):
    """The plain table py.t PyIceberg writes at `url` (a local path)."""
    from pyiceberg.catalog.sql import SqlCatalog

    local = "://" not in url
    root = f"file://{url}" if local else url
    db = tmp_path / f"catalog-{time.monotonic_ns()}.db"
    catalog = SqlCatalog("crash", uri=f"sqlite:///{db}", warehouse=root, **properties)
    catalog.create_namespace("py")
    data = [chunk(i) for i in range(APPENDS)]
    table = catalog.create_table("py.t", schema=data[0].schema, location=f"{root}/py/t")
    for d in data:
        table.append(d)
    return pa.concat_tables(data)


def write_plain_table(url, env, tmp_path):
    """The same rows as a plain table (no time column) our CLI wrote."""
    data = [chunk(i) for i in range(APPENDS)]
    for i, d in enumerate(data):
        path = tmp_path / f"chunk-{i}.parquet"
        pq.write_table(d, path)
        run_cli("-w", url, "append", "py.t", path, *(["--create"] if i == 0 else []), env=env)
    return pa.concat_tables(data)


def spawn(url, env, delay=None):
    """Runs the upgrade; with `delay`, SIGKILLs it that many seconds in.
    Returns ("ok" | "killed", seconds)."""
    argv = [BIN, "-w", url, "upgrade", "py.t", *ADOPT]
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    if delay is not None:
        time.sleep(delay)
        proc.kill()
    out, err = proc.communicate(timeout=300)
    seconds = time.monotonic() - start
    if proc.returncode == 0:
        return "ok", seconds
    if proc.returncode == -signal.SIGKILL:
        return "killed", seconds
    raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}):\n{out}\n{err}")


def check(url, env, expected, tmp_path):
    """The table opens and every row is there."""
    got = cli_query(url, "SELECT count(*) AS n, sum(v) AS s FROM py.t", tmp_path,
                    env=env).to_pylist()[0]
    assert got == {"n": expected.num_rows, "s": sum(expected.column("v").to_pylist())}


def upgraded(url, env):
    """The steps a further upgrade would make (none once it is done)."""
    out = run_cli("-w", url, "upgrade", "py.t", *ADOPT, "--dry-run", "--format", "json",
                  env=env).stdout
    return [s["step"] for s in json.loads(out)["steps"]]


def run_kills(make, kills, tmp_path, rng):
    """`make()` gives a fresh (url, env, expected) each time."""
    url, env, expected = make()
    _, typical = spawn(url, env)
    assert upgraded(url, env) == []
    statuses = {"ok": 0, "killed": 0}
    for _ in range(kills):
        url, env, expected = make()
        status, _ = spawn(url, env, typical * rng.random() ** 0.5)
        statuses[status] += 1
        check(url, env, expected, tmp_path)
        # The next run finishes the job; after it nothing is left to do.
        assert spawn(url, env)[0] == "ok"
        assert upgraded(url, env) == []
        check(url, env, expected, tmp_path)
        info = json.loads(run_cli("-w", url, "info", "py.t", "--format", "json",
                                  env=env).stdout)
        assert info["time_column"] == "time" and info["series_key"] == ["host"]
        assert info["files"] == 1, info
    assert statuses["killed"] > 0, statuses
    return statuses


def test_killed_upgrades_on_local_disk(tmp_path):
    rng = random.Random(SEED)
    source = tmp_path / "source"
    source.mkdir()
    expected = write_pyiceberg_table(str(source), tmp_path, {})
    copies = iter(range(100))

    def make():
        copy = tmp_path / f"w{next(copies)}"
        shutil.copytree(source, copy)
        return str(copy), None, expected

    statuses = run_kills(make, 6, tmp_path, rng)
    print(f"local: {statuses}")


def test_killed_upgrades_on_s3(s3_server, tmp_path):
    import uuid

    rng = random.Random(SEED + 1)

    def make():
        url = f"s3://{s3_server.bucket}/up-{uuid.uuid4().hex[:12]}"
        expected = write_plain_table(url, s3_server.env(), tmp_path)
        return url, s3_server.env(), expected

    statuses = run_kills(make, 3, tmp_path, rng)
    print(f"s3: {statuses}")
