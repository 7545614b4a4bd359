# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Gap filling and ASOF JOIN beyond the documented examples (issue #16):

- gap filling on random series equals a brute-force computation written
  here in Python from the raw rows (every bucket of the range per device,
  rows outside the range passed through, locf with and without
  treat_null_as_missing, interpolate), with the range from WHERE or from
  the arguments, grouped by series and not;
- the outer query's time filter still prunes files (TIMELAKE_TRACE=scan),
  for gap filling and for the left side of an ASOF JOIN;
- an ASOF JOIN of two tables whose files are sorted by (series, time)
  merges them instead of sorting (EXPLAIN);
- `timelake.time-weighted-mean`: `segments` refuses readings that arrive in
  overlapping stretches (files of a dedup-off table that overlap in time),
  `auto` and `merge` answer them, equal to each other, and a table's
  property is the default of its sessions; `segments` answers a table whose
  files do not overlap but were appended out of order, on every run.

The answers of ASOF JOIN against DuckDB's are in cases/asof.test.
"""

import datetime as dt
import math
import os
import random
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlcase import BIN, QueryError, run_cli, timelake_query

UTC = dt.timezone.utc
T0 = dt.datetime(2025, 3, 1, tzinfo=UTC)
HOUR = 3600 * 1_000_000
DEVICES = ["d0", "d1", "d2", "d3", "d4"]


def us(t):
    return int(t.timestamp()) * 1_000_000


# Where the lake fixture's appends cut the rows.
CUTS = [us(T0) + 30 * HOUR, us(T0) + 55 * HOUR]


def random_rows(rng):
    """(device, time in µs, value or None): 3 days, holes of many hours,
    some NULL values, device d4 only on the last day."""
    rows = []
    for d in DEVICES:
        t = us(T0) + rng.randrange(0, 2 * HOUR)
        if d == "d4":
            t += 48 * HOUR
        while t < us(T0) + 72 * HOUR:
            value = None if rng.random() < 0.1 else float(rng.randrange(-50, 50))
            rows.append((d, t, value))
            t += rng.choice([10, 20, 45]) * 60 * 1_000_000
            if rng.random() < 0.08:
                t += rng.randrange(2, 9) * HOUR  # a hole
    return rows


def table_of(rows):
    return pa.table({
        "time": pa.array([r[1] for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "device": pa.array([r[0] for r in rows], pa.string()),
        "value": pa.array([r[2] for r in rows], pa.float64()),
    })


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make release` or set TIMELAKE_BIN")
    root = tmp_path_factory.mktemp("ts-plans")
    rng = random.Random(1616)
    rows = random_rows(rng)
    warehouse = root / "w"
    # Three appends by time, one file per day partition each (no
    # maintenance merging them: files_of knows every file): pruning has
    # files to skip.
    parts = [[r for r in rows if r[1] < CUTS[0]],
             [r for r in rows if CUTS[0] <= r[1] < CUTS[1]],
             [r for r in rows if r[1] >= CUTS[1]]]
    for k, part in enumerate(parts):
        f = root / f"r{k}.parquet"
        pq.write_table(table_of(part), f)
        args = ["-w", warehouse, "append", "readings", f, "--no-maintain"]
        if k == 0:
            args += ["--create", "--time-column", "time", "--series-key", "device",
                     "--chunk", "day"]
        run_cli(*args)
    return warehouse, rows, root


# --- brute force ------------------------------------------------------------

def bucket(t, width):
    return t - t % width


def brute_gapfill(rows, width, start, end, grouped, treat_null=False):
    """Rows (bucket, group, count, avg, locf, interpolate) as the rules in
    docs/sql.md say, from raw (device, time, value) rows already filtered."""
    groups = {}
    for d, t, v in rows:
        groups.setdefault(d if grouped else None, []).append((t, v))
    first = bucket(start, width)
    buckets = list(range(first, end, width)) if first < end else []
    out = []
    for g, readings in groups.items():
        by_bucket = {}
        for t, v in readings:
            by_bucket.setdefault(bucket(t, width), []).append(v)
        present = []  # (bucket, count, avg) of existing rows
        for b, vs in by_bucket.items():
            vals = [v for v in vs if v is not None]
            present.append((b, len(vals), sum(vals) / len(vals) if vals else None))
        keyed = {b: (n, a) for b, n, a in present}
        times = sorted(set(keyed) | set(buckets))
        points = [(b, keyed[b][1]) for b in sorted(keyed) if keyed[b][1] is not None]
        last = None  # locf state: (value,) of the last existing row
        for b in times:
            if b in keyed:
                n, a = keyed[b]
                if not treat_null or a is not None:
                    last = (a,)
                locf = last[0] if last else None
                interp = a
            else:
                n, a = None, None
                locf = last[0] if last else None
                before = [p for p in points if p[0] < b]
                after = [p for p in points if p[0] > b]
                if before and after:
                    (t0, v0), (t1, v1) = before[-1], after[0]
                    interp = v0 + (v1 - v0) * (b - t0) / (t1 - t0)
                else:
                    interp = None
            out.append((b, g, n, a, locf, interp))
    return out


def as_us(v):
    if isinstance(v, dt.datetime):
        return int(v.timestamp() * 1_000_000)
    return v


def same(expected, got):
    exp = sorted(expected, key=lambda r: (str(r[1]), r[0]))
    got = sorted(got, key=lambda r: (str(r[1]), r[0]))
    assert len(exp) == len(got), f"{len(exp)} rows expected, got {len(got)}"
    for e, g in zip(exp, got):
        for x, y in zip(e, g):
            if isinstance(x, float) or isinstance(y, float):
                assert x is not None and y is not None and math.isclose(
                    x, y, rel_tol=1e-9, abs_tol=1e-9), (e, g)
            else:
                assert x == y, (e, g)


@pytest.mark.parametrize("width_hours,start_h,end_h,grouped,treat_null", [
    (1, 5, 60, True, False),
    (3, 0, 72, True, True),
    (1, 20, 30, False, False),
    (6, 1, 71, True, False),
])
def test_gapfill_equals_brute_force(lake, tmp_path, width_hours, start_h, end_h, grouped,
                                    treat_null):
    warehouse, rows, _ = lake
    width = width_hours * HOUR
    start, end = us(T0) + start_h * HOUR + 17 * 60 * 1_000_000, us(T0) + end_h * HOUR
    lo = dt.datetime.fromtimestamp(start / 1e6, UTC).isoformat()
    hi = dt.datetime.fromtimestamp(end / 1e6, UTC).isoformat()
    group = "device" if grouped else "NULL"
    sql = (f"SELECT time_bucket_gapfill(INTERVAL '{width_hours} hours', time) AS b, {group} AS g, "
           f"count(value) AS n, avg(value) AS a, "
           f"locf(avg(value), NULL, {'true' if treat_null else 'false'}) AS l, "
           f"interpolate(avg(value)) AS i FROM readings "
           f"WHERE time >= '{lo}' AND time < '{hi}' GROUP BY b"
           + (", device" if grouped else ""))
    got = timelake_query(warehouse, sql, tmp_path / "out.parquet").rows
    got = [(as_us(r[0]),) + tuple(r[1:]) for r in got]
    kept = [r for r in rows if start <= r[1] < end]
    same(brute_gapfill(kept, width, start, end, grouped, treat_null), got)


def test_gapfill_range_from_arguments_passes_other_rows(lake, tmp_path):
    warehouse, rows, _ = lake
    width = 2 * HOUR
    start, end = us(T0) + 40 * HOUR, us(T0) + 50 * HOUR
    lo = dt.datetime.fromtimestamp(start / 1e6, UTC).isoformat()
    hi = dt.datetime.fromtimestamp(end / 1e6, UTC).isoformat()
    sql = (f"SELECT time_bucket_gapfill(INTERVAL '2 hours', time, '{lo}', '{hi}') AS b, device, "
           f"count(value), avg(value), locf(avg(value)), interpolate(avg(value)) "
           f"FROM readings WHERE time >= '2025-03-02T12:00:00Z' GROUP BY b, device")
    got = timelake_query(warehouse, sql, tmp_path / "out.parquet").rows
    got = [(as_us(r[0]),) + tuple(r[1:]) for r in got]
    kept = [r for r in rows if r[1] >= us(T0) + 36 * HOUR]
    same(brute_gapfill(kept, width, start, end, True), got)


# --- pruning and plans ------------------------------------------------------

def traced(warehouse, sql):
    """The scan lines TIMELAKE_TRACE=scan prints for a query."""
    env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
    env["TIMELAKE_TRACE"] = "scan"
    proc = subprocess.run([str(BIN), "-w", str(warehouse), "sql", sql, "--format", "csv"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = re.findall(r"timelake scan: (\S+): (\d+) live files, (\d+) pruned, (\d+) read",
                       proc.stderr)
    assert found, f"no scan trace in:\n{proc.stderr}"
    return {t: (int(live), int(pruned), int(read)) for t, live, pruned, read in found}


def test_gapfill_time_filter_prunes_files(lake):
    warehouse, _, _ = lake
    everything = traced(warehouse, "SELECT count(*) FROM readings")["default.readings"]
    sql = ("SELECT time_bucket_gapfill(INTERVAL '1 hour', time) AS b, device, locf(avg(value)) "
           "FROM readings WHERE time >= '2025-03-03T02:00:00Z' AND time < '2025-03-03T05:00:00Z' "
           "GROUP BY b, device")
    live, pruned, read = traced(warehouse, sql)["default.readings"]
    assert everything[1] == 0 and live == everything[0]
    assert pruned > 0 and read < live, (live, pruned, read)


def explain(warehouse, sql):
    return run_cli("-w", warehouse, "sql", "EXPLAIN " + sql, "--format", "csv").stdout


def scan_lines(warehouse, sql):
    """(live, pruned, read) of every scan TIMELAKE_TRACE=scan prints for a
    query, in order (a self-join prints two lines for one table)."""
    env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
    env["TIMELAKE_TRACE"] = "scan"
    proc = subprocess.run([str(BIN), "-w", str(warehouse), "sql", sql, "--format", "csv"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = re.findall(r"(\d+) live files, (\d+) pruned, (\d+) read", proc.stderr)
    return [tuple(int(x) for x in line) for line in lines]


def files_of(rows):
    """The lake fixture's data files as (min, max) time: one per append and
    day."""
    files = {}
    for _, t, _ in rows:
        key = (sum(t >= c for c in CUTS), (t - us(T0)) // (24 * HOUR))
        lo, hi = files.get(key, (t, t))
        files[key] = (min(lo, t), max(hi, t))
    return list(files.values())


def test_asof_left_filter_prunes_and_sorted_inputs_are_merged(lake):
    warehouse, rows, _ = lake
    lo, hi = us(T0) + 50 * HOUR, us(T0) + 53 * HOUR
    sql = ("SELECT a.device, a.time, b.value FROM readings a ASOF JOIN readings b "
           "ON a.device = b.device AND a.time > b.time "
           "WHERE a.time >= '2025-03-03T02:00:00Z' AND a.time < '2025-03-03T05:00:00Z'")
    files = files_of(rows)
    overlapping = sum(1 for f_lo, f_hi in files if f_lo < hi and f_hi >= lo)
    assert 0 < overlapping < len(files)
    # The left side's filter reaches its scan: only the files whose time
    # range meets the filter's are read; the right side reads every file.
    scans = scan_lines(warehouse, sql)
    assert len(scans) == 2, scans
    reads = sorted(read for _, _, read in scans)
    assert all(live == len(files) for live, _, _ in scans), (scans, len(files))
    assert reads == [overlapping, len(files)], (scans, overlapping, len(files))
    plan = explain(warehouse, sql)
    assert "TimelakeAsofJoinExec" in plan, plan
    # Both sides are sorted files of one table: merged, never sorted.
    assert "SortExec" not in plan, plan
    assert "SortPreservingMergeExec" in plan, plan


def test_asof_pruning_counts(lake, tmp_path):
    warehouse, _, _ = lake
    left_only = ("SELECT count(*) FROM readings a ASOF JOIN readings b "
                 "ON a.device = b.device AND a.time > b.time "
                 "WHERE a.time >= '2025-03-03T02:00:00Z'")
    env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
    env["TIMELAKE_TRACE"] = "scan"
    proc = subprocess.run([str(BIN), "-w", str(warehouse), "sql", left_only], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = re.findall(r"(\d+) live files, (\d+) pruned, (\d+) read", proc.stderr)
    assert len(lines) == 2, proc.stderr
    pruned = sorted(int(p) for _, p, _ in lines)
    # The left scan prunes the earlier days; the right one reads them all.
    assert pruned[0] == 0 and pruned[1] > 0, lines


# --- timelake.time-weighted-mean ------------------------------------------

@pytest.fixture(scope="module")
def overlapping(tmp_path_factory):
    """A dedup-off table whose two files overlap in time for every series."""
    root = tmp_path_factory.mktemp("twm-modes")
    rng = random.Random(77)
    rows = []
    for s in ("a", "b", "c"):
        for i in range(400):
            rows.append((s, us(T0) + i * 60 * 1_000_000, float(rng.randrange(0, 100))))
    rng.shuffle(rows)
    warehouse = root / "w"
    for k, part in enumerate([rows[:600], rows[600:]]):
        f = root / f"p{k}.parquet"
        pq.write_table(table_of(part), f)
        args = ["-w", warehouse, "append", "t", f]
        if k == 0:
            args += ["--create", "--time-column", "time", "--series-key", "device", "--set",
                     "timelake.dedup=false"]
        run_cli(*args)
    return warehouse, rows


TWM = ("SELECT device, date_trunc('hour', time) AS h, time_weighted_mean(time, value) AS f, "
       "time_weighted_mean(time, value, 'linear') AS l FROM t GROUP BY device, h")


def brute_twm(rows, linear):
    groups = {}
    for s, t, v in rows:
        groups.setdefault((s, bucket(t, HOUR)), []).append((t, v))
    out = {}
    for k, pts in groups.items():
        pts.sort()
        if len(pts) == 1:
            out[k] = pts[0][1]
            continue
        area = 0.0
        for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
            area += ((v0 + v1) / 2 if linear else v0) * (t1 - t0)
        out[k] = area / (pts[-1][0] - pts[0][0])
    return out


def twm_rows(warehouse, tmp_path, *set_args):
    out = tmp_path / "twm.parquet"
    if out.exists():
        out.unlink()
    proc = subprocess.run([str(BIN), "-w", str(warehouse), *set_args, "sql", TWM, "--format",
                           "parquet", "-o", str(out)], capture_output=True, text=True,
                          timeout=60)
    if proc.returncode != 0:
        raise QueryError(proc.stderr.strip())
    return {(r["device"], as_us(r["h"])): (r["f"], r["l"])
            for r in pq.read_table(out).to_pylist()}


def test_time_weighted_mean_modes(overlapping, tmp_path):
    warehouse, rows = overlapping
    ff, lin = brute_twm(rows, False), brute_twm(rows, True)
    for mode in ("auto", "merge"):
        got = twm_rows(warehouse, tmp_path, "--set", f"timelake.time_weighted_mean={mode}")
        assert got.keys() == ff.keys(), mode
        for k, (f, l) in got.items():
            assert math.isclose(f, ff[k], rel_tol=1e-12), (mode, k, f, ff[k])
            assert math.isclose(l, lin[k], rel_tol=1e-12), (mode, k, l, lin[k])
    with pytest.raises(QueryError, match="segments"):
        twm_rows(warehouse, tmp_path, "--set", "timelake.time_weighted_mean=segments")


def test_time_weighted_mean_table_setting(overlapping, tmp_path):
    warehouse, _ = overlapping
    run_cli("-w", warehouse, "alter", "t", "--set", "timelake.time-weighted-mean=segments")
    try:
        with pytest.raises(QueryError, match="overlapping stretches"):
            twm_rows(warehouse, tmp_path)
        # A session's value wins over the table's.
        assert twm_rows(warehouse, tmp_path, "--set", "timelake.time_weighted_mean=auto")
    finally:
        run_cli("-w", warehouse, "alter", "t", "--set", "timelake.time-weighted-mean=auto")


def test_time_weighted_mean_merges_sorted_files(overlapping):
    warehouse, _ = overlapping
    plan = explain(warehouse, TWM)
    # One phase over readings merged by (group, time): no Partial/Final pair.
    assert "mode=SinglePartitioned" in plan or "mode=Single" in plan, plan
    assert "preserve_order=true" in plan or "SortPreservingMergeExec" in plan, plan


def test_time_weighted_mean_segments_on_files_written_out_of_order(tmp_path):
    """`segments` answers a dedup-off table whose files do not overlap in
    time but were appended out of order (0.7 fails on such a table at
    random), equal to the brute force, on every run."""
    rng = random.Random(99)
    rows = []
    for s in ("a", "b", "c", "d"):
        t = us(T0)
        for _ in range(600):
            t += rng.choice([7, 30, 60]) * 1_000_000
            rows.append((s, t, float(rng.randrange(0, 100))))
    ends = sorted(t for _, t, _ in rows)
    cuts = [ends[len(ends) * k // 4] for k in (1, 2, 3)]
    stretches = [[r for r in rows if lo <= r[1] < hi]
                 for lo, hi in zip([0] + cuts, cuts + [2**62])]
    warehouse = tmp_path / "w"
    # The newest stretch first, then the oldest, then the middle ones.
    for k, part in enumerate([stretches[3], stretches[0], stretches[2], stretches[1]]):
        f = tmp_path / f"s{k}.parquet"
        pq.write_table(table_of(part), f)
        args = ["-w", warehouse, "append", "t", f]
        if k == 0:
            args += ["--create", "--time-column", "time", "--series-key", "device", "--set",
                     "timelake.dedup=false"]
        run_cli(*args)
    ff, lin = brute_twm(rows, False), brute_twm(rows, True)
    for _ in range(3):
        got = twm_rows(warehouse, tmp_path, "--set", "timelake.time_weighted_mean=segments")
        assert got.keys() == ff.keys()
        for k, (f, l) in got.items():
            assert math.isclose(f, ff[k], rel_tol=1e-12), (k, f, ff[k])
            assert math.isclose(l, lin[k], rel_tol=1e-12), (k, l, lin[k])

