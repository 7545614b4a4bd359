"""A local disk that fills up (SPEC §14, issue #22): a warehouse on a small
tmpfs that the test mounts, appended to until the disk is full. An append
that fails says so ("No space left on device", the file, what it was doing)
and exits non-zero; the table still opens and holds exactly the appends that
reported success (our CLI and PyIceberg agree); once space is freed, every
failed batch appends once and maintenance runs.

First large appends until one no longer fits; then, with exactly 1, 2, 3, ...
pages left free each time, a small append, so that the disk runs out at
each of the objects an append writes in turn (data file, manifest, manifest
list, last-value index, the version itself, head, version hint) and in the
compaction that follows it.

Mounting needs root (or CAP_SYS_ADMIN); without it the test is skipped and
says why."""

import json
import os
import re
import subprocess

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from compat_helpers import run_cli

DISK = "8m"
BIG = 20_000  # rows of a large append: ~280 KiB of Parquet (random doubles)
SMALL = 200  # rows of a small one: one 4 KiB page
# The small appends: with 1..PAGES pages free. An append of SMALL rows
# needs 7 (data file, manifest, manifest list, index, the version: 3).
PAGES = 8
VERSION = re.compile(r"^v(\d+)\.metadata\.json$")


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of DISK at a fresh directory, unmounted at the end."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "none",
                           str(mount_point)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a {DISK} tmpfs to fill up (needs root or CAP_SYS_ADMIN): "
                    f"{proc.stderr.strip()}")
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)]).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=True)


def write(path, rows, seed):
    """`rows` rows at one-second steps from day `seed % 10` (one partition a
    day); returns (path, sum of v)."""
    rng = np.random.default_rng(seed)
    v = rng.random(rows)
    start = np.datetime64("2026-01-01", "us") + np.timedelta64(seed % 10, "D")
    pq.write_table(pa.table({
        "time": pa.array(start + np.arange(rows) * np.timedelta64(1_000_000, "us")
                         + np.timedelta64(seed, "us"), pa.timestamp("us", tz="UTC")),
        "v": pa.array(v),
    }), path)
    return path, float(v.sum())


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def leave_free(disk, nbytes):
    """Resizes disk/filler so that about `nbytes` stay free."""
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    size = free_bytes(disk) - nbytes
    if size > 0:
        filler.write_bytes(b"\0" * size)


def failed_object(stderr):
    """What an append that ran out of space was writing."""
    key = re.search(r"file://\S+?/default/t/(\S+?): ", stderr).group(1)
    if re.fullmatch(r"metadata/v\d+\.metadata\.json", key):
        return "version"
    for prefix, kind in (("data/", "data file"), ("metadata/snap-", "manifest list"),
                         ("metadata/lvi-", "index")):
        if key.startswith(prefix):
            return kind
    return "manifest" if key.endswith(".avro") else key


def count_and_sum(warehouse):
    out = run_cli("-w", warehouse, "sql", "SELECT count(*) AS n, sum(v) AS s FROM t",
                  "--format", "json")
    got = json.loads(out.stdout.splitlines()[0])
    return got["n"], got["s"] or 0.0


def pyiceberg_count_and_sum(warehouse):
    metadata = warehouse / "default" / "t" / "metadata"
    versions = {int(m.group(1)): p for p in metadata.iterdir()
                if (m := VERSION.match(p.name))}
    table = StaticTable.from_metadata(str(versions[max(versions)])).scan().to_arrow()
    return table.num_rows, float(pc.sum(table["v"]).as_py() or 0.0)


class Batches:
    """Appends with batch ids and what each reported."""

    def __init__(self, warehouse, inputs):
        self.warehouse = warehouse
        self.inputs = inputs
        self.done = {}  # batch id -> (rows, sum): reported success
        self.failed = {}  # batch id -> (path, rows, sum, stderr)

    def append(self, rows, seed):
        batch = f"b{seed}"
        path, total = write(self.inputs / f"{seed}.parquet", rows, seed)
        proc = run_cli("-w", self.warehouse, "append", "t", path, "--batch-id", batch,
                       check=False)
        if proc.returncode == 0:
            assert f"appended {rows:,} rows" in proc.stdout, proc.stdout
            self.done[batch] = (rows, total)
            return None
        self.failed[batch] = (path, rows, total, proc.stderr)
        # What failed, where, and why; and whether anything landed.
        assert "No space left on device" in proc.stderr, proc.stderr
        assert "appending to default.t" in proc.stderr, proc.stderr
        assert f"file://{self.warehouse}/default/t/" in proc.stderr, proc.stderr
        assert "panic" not in proc.stderr.lower(), proc.stderr
        assert "nothing was committed" in proc.stderr, proc.stderr
        return proc.stderr

    def expected(self):
        return (sum(r for r, _ in self.done.values()),
                pytest.approx(sum(s for _, s in self.done.values())))


def test_a_disk_that_fills_up(small_disk, tmp_path):
    warehouse = small_disk / "wh"
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    batches = Batches(warehouse, inputs)
    path, first = write(inputs / "0.parquet", BIG, 0)
    run_cli("-w", warehouse, "append", "t", path, "--create", "--time-column", "time")
    batches.done["create"] = (BIG, first)
    leave_free(small_disk, 3 << 19)

    # Large appends until one does not fit.
    for seed in range(1, 20):
        if batches.append(BIG, seed) is not None:
            break
    assert len(batches.failed) == 1 and len(batches.done) >= 3, batches.failed
    assert count_and_sum(warehouse) == batches.expected()

    # The disk running out at every step of an append.
    stderr = {}
    for pages in range(1, PAGES + 1):
        leave_free(small_disk, pages * 4096)
        stderr[pages] = batches.append(SMALL, 100 + pages)
        # Nothing of a failed append is visible; everything reported is.
        assert count_and_sum(warehouse) == batches.expected(), (pages, stderr[pages])
    assert stderr[1] is not None and stderr[PAGES] is None, stderr
    # The disk ran out at each object an append writes before it commits.
    failed_at = {failed_object(e) for _, _, _, e in batches.failed.values()}
    assert failed_at == {"data file", "manifest", "manifest list", "index", "version"}, stderr
    assert pyiceberg_count_and_sum(warehouse) == batches.expected()
    info = json.loads(run_cli("-w", warehouse, "info", "t", "--format", "json").stdout)
    assert info["rows"] == batches.expected()[0], info

    # Space freed: each failed batch appends once (a second run adds
    # nothing), and maintenance runs and changes no row.
    (small_disk / "filler").unlink()
    for batch, (path, rows, total, _) in batches.failed.items():
        run_cli("-w", warehouse, "append", "t", path, "--batch-id", batch)
        out = run_cli("-w", warehouse, "append", "t", path, "--batch-id", batch)
        assert "appended 0 rows" in out.stdout, out.stdout
        batches.done[batch] = (rows, total)
    run_cli("-w", warehouse, "maintain", "t", "--orphan-age", "0s")
    assert count_and_sum(warehouse) == batches.expected()
    assert pyiceberg_count_and_sum(warehouse) == batches.expected()
