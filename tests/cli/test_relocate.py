# Copyright 2026 The Timelake Authors. Apache-2.0.
"""A warehouse copied or moved with `cp -a` / `mv` (issue #23, item 5).

Iceberg metadata records absolute locations. A table found somewhere else
than its metadata says reads, writes and maintains the files where it is
found; the original, when it is still there, is never read or changed.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
import shutil
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TIMELAKE_BIN", ROOT / "build" / "release" / "timelake"))
TABLE = "iot.readings"
START = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
SENSORS = ["s1", "s2", "s3"]


def run(warehouse, *args, expect=0):
    env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
    argv = [str(BIN), "-w", str(warehouse), *map(str, args)]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == expect, (
        f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc


def batch_file(path, day, hours):
    """One reading per sensor and hour of `day` (days since START)."""
    times, sensors, values = [], [], []
    for h in range(hours):
        for i, s in enumerate(SENSORS):
            times.append(START + dt.timedelta(days=day, hours=h))
            sensors.append(s)
            values.append(float(day * 1000 + h * 10 + i))
    pq.write_table(
        pa.table(
            {
                "time": pa.array(times, pa.timestamp("us", tz="UTC")),
                "sensor": pa.array(sensors),
                "v": pa.array(values),
            }
        ),
        path,
    )
    return sum(values), len(values)


def answer(warehouse):
    out = run(warehouse, "sql", "--format", "csv", f"SELECT count(*), sum(v) FROM {TABLE}")
    count, total = out.stdout.strip().splitlines()[-1].split(",")
    return int(count), float(total)


def newest(warehouse):
    out = run(warehouse, "latest", TABLE, "--format", "csv")
    return sorted(out.stdout.strip().splitlines()[1:])


def files_of(warehouse):
    """Every file below the warehouse with its size and mtime."""
    return {
        p.relative_to(warehouse): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in pathlib.Path(warehouse).rglob("*")
        if p.is_file()
    }


@pytest.fixture
def original(tmp_path):
    """A table of three commits (day partitions) with its index and head."""
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make release` or set TIMELAKE_BIN")
    wh = tmp_path / "wh"
    wh.mkdir()
    expected = [0.0, 0]
    for day in range(3):
        f = tmp_path / f"day{day}.parquet"
        total, rows = batch_file(f, day, hours=4)
        expected[0] += total
        expected[1] += rows
        create = ["--create", "--time-column", "time", "--series-key", "sensor"] if day == 0 else []
        run(wh, "append", TABLE, f, *create)
    return wh, (expected[1], expected[0])


def test_moved_warehouse_reads_writes_and_maintains_where_it_is(original, tmp_path):
    wh, expected = original
    before_latest = newest(wh)
    moved = tmp_path / "moved"
    shutil.move(str(wh), str(moved))
    assert not wh.exists()

    # Queries, `latest` (index) and `info` work where the table now is.
    assert answer(moved) == expected
    assert newest(moved) == before_latest
    info = run(moved, "info", TABLE).stdout
    assert str(moved) in info and str(wh) + "/" not in info, info

    # An append and a full maintenance (expiry, orphans) at the new place.
    f = tmp_path / "day3.parquet"
    total, rows = batch_file(f, 3, hours=4)
    run(moved, "append", TABLE, f)
    expected = (expected[0] + rows, expected[1] + total)
    run(moved, "alter", TABLE, "--set", "timelake.snapshot-retention=0s")
    run(moved, "maintain", TABLE, "--orphan-age", "0s")
    assert answer(moved) == expected

    # Moved once more, after commits made at the first new place: files
    # recorded under two old roots.
    again = tmp_path / "again"
    shutil.move(str(moved), str(again))
    assert answer(again) == expected
    assert len(newest(again)) == len(SENSORS)
    run(again, "maintain", TABLE, "--orphan-age", "0s")
    assert answer(again) == expected


def test_copied_warehouse_leaves_the_original_alone(original, tmp_path):
    wh, expected = original
    copy = tmp_path / "copy"
    shutil.copytree(wh, copy, symlinks=True)
    untouched = files_of(wh)

    assert answer(copy) == expected
    f = tmp_path / "day9.parquet"
    total, rows = batch_file(f, 9, hours=2)
    run(copy, "append", TABLE, f)
    run(copy, "alter", TABLE, "--set", "timelake.snapshot-retention=0s")
    run(copy, "maintain", TABLE, "--orphan-age", "0s")
    assert answer(copy) == (expected[0] + rows, expected[1] + total)

    # The original: same files, same answer; the copy reads none of them
    # (it still answers with the original gone).
    assert files_of(wh) == untouched
    assert answer(wh) == expected
    shutil.rmtree(wh)
    assert answer(copy) == (expected[0] + rows, expected[1] + total)
