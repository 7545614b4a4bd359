"""Writers killed while they refresh rollups (issue #17, SPEC §14): a rollup is
never ahead of or inconsistent with its raw table, and the next refresh
completes it.

A raw table with two rollups whose refresh interval is 0 s, so that every
append refreshes them inline; processes SIGKILLed at random points of an
`append` (commit, inline maintenance, the refreshes), of a `REFRESH
MATERIALIZED ROLLUP`, and of a `DELETE` followed by a refresh. After every
kill: every rollup's recorded source snapshot is in the raw table's history,
and routed queries (which read each rollup's clean buckets from it) answer
exactly what raw data answers. At the end an unkilled refresh leaves every
rollup up to date, holding exactly the aggregates of the raw rows."""

import datetime as dt
import json
import os
import random
import signal
import subprocess
import time

import pyarrow as pa
import pyarrow.parquet as pq
import timelake

from compat_helpers import BIN, run_cli

SEED = int(os.environ.get("TIMELAKE_CRASH_SEED", "20261205"))
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
ROWS = 300
KILLS = {"append": 10, "refresh": 6, "delete": 4}

ROLLUPS = [
    "CREATE MATERIALIZED ROLLUP crash.raw_1h AS SELECT dev, "
    "time_bucket(INTERVAL '1 hour', time) AS bucket, count(*), sum(v), max(v), avg(v) "
    "FROM crash.raw GROUP BY dev, bucket WITH (refresh_interval = '0s')",
    "CREATE MATERIALIZED ROLLUP crash.raw_1d AS SELECT date_trunc('day', time) AS day, "
    "count(*), min(v), m4(time, v) FROM crash.raw GROUP BY day WITH (refresh_interval = '0s')",
]
QUERIES = [
    "SELECT dev, time_bucket(INTERVAL '1 hour', time) AS b, count(*) AS n, sum(v) AS s, "
    "max(v) AS mx, avg(v) AS a FROM crash.raw GROUP BY dev, b",
    "SELECT date_trunc('day', time) AS b, count(*) AS n, max(v) AS mx FROM crash.raw GROUP BY b",
    "SELECT date_trunc('day', time) AS b, count(*) AS n, min(v) AS mn, m4(time, v) AS m "
    "FROM crash.raw GROUP BY b",
]
# The rollups' rows, recomputed from raw data, to compare with at the end.
EXPECTED = {
    "crash.raw_1h": ("SELECT dev, bucket, \"count\", sum_v, max_v FROM crash.raw_1h",
                     "SELECT dev, time_bucket(INTERVAL '1 hour', time) AS bucket, "
                     "count(*) AS \"count\", sum(v) AS sum_v, max(v) AS max_v "
                     "FROM crash.raw GROUP BY dev, bucket"),
    "crash.raw_1d": ("SELECT day, \"count\", min_v, m4_v FROM crash.raw_1d",
                     "SELECT date_trunc('day', time) AS day, count(*) AS \"count\", "
                     "min(v) AS min_v, m4(time, v) AS m4_v FROM crash.raw GROUP BY day"),
}


def write_input(path, i, rng):
    times = sorted(rng.sample(range(0, 4 * 24 * 3600), ROWS))
    pq.write_table(pa.table({
        "time": pa.array([T0 + dt.timedelta(seconds=s) for s in times],
                         pa.timestamp("us", tz="UTC")),
        "dev": pa.array([f"d{(s + i) % 4}" for s in times]),
        "v": pa.array([round(rng.uniform(0, 100), 2) for _ in times]),
    }), path)
    return path


def canonical(rows):
    def norm(v):
        if isinstance(v, float):
            return round(v, 6)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v if v is None or isinstance(v, (int, str)) else str(v)
    return sorted(json.dumps({k: norm(v) for k, v in r.items()}, sort_keys=True)
                  for r in rows)


def spawn(warehouse, args, delay):
    proc = subprocess.Popen([BIN, "-w", warehouse, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    proc.kill()
    out, err = proc.communicate(timeout=120)
    if proc.returncode == -signal.SIGKILL:
        return "killed"
    assert proc.returncode == 0, f"{args} failed without a kill:\n{out}\n{err}"
    return "ok"


def check(warehouse):
    """The invariants after a kill."""
    routed = timelake.Lake(warehouse)
    raw = timelake.Lake(warehouse, settings={"timelake.rollup_routing": "false"})
    info = routed.table("crash.raw").info()
    history = {s for s in _history(warehouse)}
    for r in info["rollups"]:
        if r["source_snapshot_id"] is not None:
            assert r["source_snapshot_id"] in history, f"{r['name']} ahead of its raw table"
    for q in QUERIES:
        assert canonical(routed.sql(q).to_pylist()) == canonical(raw.sql(q).to_pylist()), q
    return info


def _history(warehouse):
    out = run_cli("-w", warehouse, "info", "crash.raw", "--snapshots", "--format", "json").stdout
    return [s["snapshot_id"] for s in json.loads(out) if s["in_history"]]


def test_killed_refreshes_leave_rollups_right(tmp_path):
    rng = random.Random(SEED)
    warehouse = str(tmp_path / "warehouse")
    first = write_input(tmp_path / "in-0.parquet", 0, rng)
    run_cli("-w", warehouse, "append", "crash.raw", first, "--create", "--time-column", "time",
            "--series-key", "dev")
    for sql in ROLLUPS:
        run_cli("-w", warehouse, "sql", sql)
    # How long each command takes unkilled: the kills land inside it.
    typical = {}
    start = time.monotonic()
    run_cli("-w", warehouse, "append", "crash.raw", write_input(tmp_path / "in-1.parquet", 1, rng))
    typical["append"] = time.monotonic() - start
    start = time.monotonic()
    run_cli("-w", warehouse, "sql", "REFRESH MATERIALIZED ROLLUP crash.raw_1h")
    typical["refresh"] = max(time.monotonic() - start, 0.2)
    typical["delete"] = typical["refresh"] * 2
    check(warehouse)

    schedule = [op for op, n in KILLS.items() for _ in range(n)]
    rng.shuffle(schedule)
    outcomes = {op: {"ok": 0, "killed": 0} for op in KILLS}
    for k, op in enumerate(schedule, start=2):
        delay = typical[op] * rng.random() ** 0.5
        if op == "append":
            path = write_input(tmp_path / f"in-{k}.parquet", k, rng)
            status = spawn(warehouse, ["append", "crash.raw", str(path)], delay)
        elif op == "refresh":
            # Late rows first (not refreshed: the append is unkilled and told
            # not to), then the refresh that is killed.
            path = write_input(tmp_path / f"in-{k}.parquet", k, rng)
            run_cli("-w", warehouse, "append", "crash.raw", path, "--no-refresh")
            name = rng.choice(["crash.raw_1h", "crash.raw_1d"])
            status = spawn(warehouse, ["sql", f"REFRESH MATERIALIZED ROLLUP {name}"], delay)
        else:
            day = rng.randrange(4)
            run_cli("-w", warehouse, "sql",
                    f"DELETE FROM crash.raw WHERE dev = 'd{day}' AND "
                    f"time < '{(T0 + dt.timedelta(days=day + 1)).isoformat()}'")
            status = spawn(warehouse, ["sql", "REFRESH MATERIALIZED ROLLUP crash.raw_1h"], delay)
        outcomes[op][status] += 1
        check(warehouse)

    # An unkilled refresh of each completes it: up to date, and its rows are
    # exactly the aggregates of the raw rows.
    for name in EXPECTED:
        run_cli("-w", warehouse, "sql", f"REFRESH MATERIALIZED ROLLUP {name}")
    info = check(warehouse)
    assert all(r["behind"] == 0 and r["problem"] is None for r in info["rollups"]), info
    lake = timelake.Lake(warehouse, settings={"timelake.rollup_routing": "false"})
    for name, (stored, recomputed) in EXPECTED.items():
        assert canonical(lake.sql(stored).to_pylist()) == \
            canonical(lake.sql(recomputed).to_pylist()), name
    print(outcomes)
    killed = sum(o["killed"] for o in outcomes.values())
    assert killed >= len(schedule) // 2, outcomes


def test_refreshes_at_once_leave_rollups_right(tmp_path):
    """Two processes refresh the same rollups at the same moment, several
    times, with appends between: each refresh's rows are right for the raw
    snapshot it records, so whichever commits last, routed answers equal raw
    ones, and a last refresh leaves the rollup exactly the raw aggregates."""
    rng = random.Random(SEED + 1)
    warehouse = str(tmp_path / "warehouse")
    run_cli("-w", warehouse, "append", "crash.raw",
            write_input(tmp_path / "in-0.parquet", 0, rng), "--create", "--time-column",
            "time", "--series-key", "dev")
    for sql in ROLLUPS:
        run_cli("-w", warehouse, "sql", sql)
    for k in range(1, 5):
        run_cli("-w", warehouse, "append", "crash.raw",
                write_input(tmp_path / f"in-{k}.parquet", k, rng), "--no-refresh")
        procs = [subprocess.Popen([BIN, "-w", warehouse, "sql",
                                   f"REFRESH MATERIALIZED ROLLUP {name}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for name in ("crash.raw_1h", "crash.raw_1h", "crash.raw_1d")]
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
        check(warehouse)
    for name in EXPECTED:
        run_cli("-w", warehouse, "sql", f"REFRESH MATERIALIZED ROLLUP {name}")
    lake = timelake.Lake(warehouse, settings={"timelake.rollup_routing": "false"})
    for name, (stored, recomputed) in EXPECTED.items():
        assert canonical(lake.sql(stored).to_pylist()) == \
            canonical(lake.sql(recomputed).to_pylist()), name
