# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Materialized rollups (issue #17, SPEC §8): routed queries against raw data.

The differential test writes random rows into a raw table through late and
duplicate appends, deletes, compaction and retention, keeps three rollups of it
(hourly by device and site, daily by device, monthly by site), and at every
step runs random GROUP BY queries (bucket widths, groupings, filters, every
aggregate a rollup stores) twice: once with routing (the default) and once with
`timelake.rollup_routing = false`. The answers must be equal every time (floats
to 1e-9 relative: sums are added in another order), and EXPLAIN must show that
most queries were in fact answered from a rollup, each rollup at least once.

The other tests cover the statements: their answers, their errors, the
rollup table's layout and what appends, maintain, drop and info do with it.
"""

import datetime as dt
import math
import random

import pyarrow as pa
import pytest
import timelake

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, tzinfo=UTC)
DAYS = 5
DEVICES = 6
SITES = ["north", "south", "east"]
REL_TOL = 1e-9

SCHEMA = pa.schema([
    ("time", pa.timestamp("us", tz="UTC")),
    ("device", pa.int32()),
    ("site", pa.string()),
    ("temp", pa.float64()),
    ("hum", pa.int64()),
])

ROLLUPS = {
    "iot.r_1h": """CREATE MATERIALIZED ROLLUP iot.r_1h AS
        SELECT device, site, time_bucket(INTERVAL '1 hour', time) AS bucket,
               count(*), count(temp), sum(temp), min(temp), max(temp), avg(temp),
               sum(hum), avg(hum), first_value(temp ORDER BY time),
               last_value(temp ORDER BY time), m4(time, temp),
               time_weighted_mean(time, temp),
               time_weighted_mean(time, temp, 'linear') AS twm_linear
        FROM iot.r GROUP BY device, site, bucket""",
    "iot.r_1d": """CREATE MATERIALIZED ROLLUP iot.r_1d AS
        SELECT device, date_trunc('day', time) AS day, count(*), max(temp), min(temp),
               avg(temp), m4(time, temp), time_weighted_mean(time, temp)
        FROM iot.r GROUP BY device, day""",
    "iot.r_1mo": """CREATE MATERIALIZED ROLLUP iot.r_1mo AS
        SELECT site, time_bucket(INTERVAL '1 month', time) AS month, count(*), sum(hum),
               max(temp), last_value(temp ORDER BY time)
        FROM iot.r GROUP BY site, month""",
}

BUCKETS = [
    "time_bucket(INTERVAL '1 hour', time)",
    "time_bucket(INTERVAL '3 hours', time)",
    "date_bin(INTERVAL '6 hours', time)",
    "date_trunc('hour', time)",
    "date_trunc('day', time)",
    "time_bucket(INTERVAL '2 days', time)",
    "date_trunc('week', time)",
    "date_trunc('month', time)",
    "time_bucket(INTERVAL '1 month', time)",
    "time_bucket(INTERVAL '30 minutes', time)",  # finer than every rollup
]
AGGREGATES = [
    "count(*)", "count(temp)", "sum(temp)", "min(temp)", "max(temp)", "avg(temp)",
    "sum(hum)", "avg(hum)", "first_value(temp ORDER BY time)",
    "last_value(temp ORDER BY time)", "m4(time, temp)", "time_weighted_mean(time, temp)",
    "time_weighted_mean(time, temp, 'linear')", "count(hum)",
]


class Rows:
    """Random rows: times unique across the table (so first/last values have no
    ties), some values null, duplicates reusing a (device, time) already written."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.used = set()
        self.written = []  # (device, time)

    def batch(self, n, start_h, span_h, duplicates=0):
        rng = self.rng
        rows = []
        for _ in range(n):
            while True:
                t = T0 + dt.timedelta(hours=start_h,
                                      microseconds=rng.randrange(int(span_h * 3600e6)))
                if t not in self.used:
                    break
            self.used.add(t)
            device = rng.randrange(DEVICES)
            self.written.append((device, t))
            rows.append((t, device))
        for _ in range(min(duplicates, len(self.written))):
            rows.append(tuple(reversed(rng.choice(self.written))))
        return pa.table({
            "time": [t for t, _ in rows],
            "device": [d for _, d in rows],
            "site": [rng.choice(SITES) for _ in rows],
            "temp": [None if rng.random() < 0.08 else round(rng.uniform(-10, 40), 3)
                     for _ in rows],
            "hum": [None if rng.random() < 0.05 else rng.randrange(0, 100) for _ in rows],
        }, schema=SCHEMA)


# What each rollup can answer: half the queries are drawn from one of these,
# so that every rollup is asked something it stores.
TARGETS = [
    (["device"], ["date_trunc('day', time)", "time_bucket(INTERVAL '2 days', time)",
                  "date_trunc('week', time)", "date_trunc('month', time)"],
     ["count(*)", "max(temp)", "min(temp)", "avg(temp)", "m4(time, temp)"]),
    (["site"], ["date_trunc('month', time)", "time_bucket(INTERVAL '1 month', time)",
                "date_trunc('quarter', time)", "date_trunc('year', time)"],
     ["count(*)", "sum(hum)", "max(temp)", "last_value(temp ORDER BY time)"]),
]


def query(rng):
    """A random GROUP BY query on the raw table."""
    bucket = rng.choice(BUCKETS)
    groups = [g for g in ("device", "site") if rng.random() < 0.5]
    aggregates = rng.sample(AGGREGATES, rng.randint(1, 4))
    if rng.random() < 0.5:
        columns, buckets, stored = rng.choice(TARGETS)
        groups = [g for g in columns if rng.random() < 0.7]
        bucket = rng.choice(buckets)
        aggregates = rng.sample(stored, rng.randint(1, len(stored)))
    where = []
    if rng.random() < 0.6:
        lo = T0 + dt.timedelta(minutes=rng.randrange(0, DAYS * 24 * 60, 15))
        hi = lo + dt.timedelta(minutes=rng.randrange(60, 3 * 24 * 60, 15))
        where.append(f"time >= '{lo.isoformat()}' AND time < '{hi.isoformat()}'")
    if rng.random() < 0.3:
        devices = rng.sample(range(DEVICES), rng.randint(1, 3))
        where.append(f"device IN ({', '.join(map(str, devices))})")
    if rng.random() < 0.15:
        where.append(f"site = '{rng.choice(SITES)}'")
    if rng.random() < 0.05:
        where.append("temp > 10")  # a value filter: never routed
    select = ", ".join(groups + [f"{bucket} AS b"] +
                       [f"{a} AS a{i}" for i, a in enumerate(aggregates)])
    group_by = ", ".join(groups + ["b"])
    sql = f"SELECT {select} FROM iot.r"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + f" GROUP BY {group_by}", groups + ["b"]


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def rows_of(result, keys):
    rows = result.to_pylist()
    return sorted(rows, key=lambda r: tuple((r[k] is None, r[k]) for k in keys))


def check_queries(routed, wh, rng, n, counts):
    # A lake of its own for the raw answers, opened now: a lake reuses a
    # loaded table version for its version-check-interval, and the commits
    # were made through `routed`.
    raw = timelake.Lake(wh, settings={"timelake.rollup_routing": "false"})
    for _ in range(n):
        sql, keys = query(rng)
        got = rows_of(routed.sql(sql), keys)
        want = rows_of(raw.sql(sql), keys)
        assert len(got) == len(want), sql
        for g, w in zip(got, want):
            assert all(same(g[k], w[k]) for k in w), f"{sql}\nrouted: {g}\nraw:    {w}"
        plan = "\n".join(routed.sql("EXPLAIN " + sql).column("plan").to_pylist())
        counts["queries"] += 1
        for name in ROLLUPS:
            if name.split(".")[1] in plan:
                counts[name] = counts.get(name, 0) + 1
                counts["routed"] += 1
                break


def test_routed_answers_equal_raw_answers(tmp_path):
    wh = str(tmp_path / "wh")
    routed = timelake.Lake(wh)
    table = routed.create_table("iot.r", SCHEMA, time_column="time", series_key=["device"])
    rows = Rows(17)
    rng = random.Random(4)
    counts = {"queries": 0, "routed": 0}
    # Three days of rows, then the rollups, then life goes on.
    for day in range(3):
        table.append(rows.batch(400, 24 * day, 24), maintain=False)
    for sql in ROLLUPS.values():
        assert routed.sql(sql).to_pylist()[0]["rows"] > 0
    check_queries(routed, wh, rng, 40, counts)

    # Newer rows, late rows and duplicates: the rollups lag (no refresh is
    # due within five minutes), routing reads what they lack from raw data.
    table.append(rows.batch(300, 72, 48, duplicates=40), maintain=False)
    table.append(rows.batch(60, 10, 30, duplicates=20), maintain=False)
    check_queries(routed, wh, rng, 40, counts)

    # Compaction changes no answer and dirties nothing.
    table.maintain()
    check_queries(routed, wh, rng, 30, counts)

    # Refreshes, then a delete: removed rows leave the rollups at the next
    # refresh, and are read from raw data until then.
    for name in ROLLUPS:
        routed.sql(f"REFRESH MATERIALIZED ROLLUP {name}")
    routed.sql("DELETE FROM iot.r WHERE device = 2 AND time < '2026-01-02T12:00:00Z'")
    check_queries(routed, wh, rng, 30, counts)
    routed.sql("REFRESH MATERIALIZED ROLLUP iot.r_1h")
    check_queries(routed, wh, rng, 30, counts)

    # Retention drops the first days' partitions.
    now = dt.datetime.now(UTC)
    keep = (now - (T0 + dt.timedelta(days=2))).days
    table.set_properties({"timelake.retention": f"{keep}d"})
    table.maintain()
    check_queries(routed, wh, rng, 40, counts)
    table.append(rows.batch(100, 0, DAYS * 24, duplicates=30), maintain=False)
    for name in ROLLUPS:
        routed.sql(f"REFRESH MATERIALIZED ROLLUP {name}")
    check_queries(routed, wh, rng, 40, counts)

    print(counts)
    assert counts["queries"] == 250
    assert counts["routed"] >= counts["queries"] // 3, counts
    for name in ROLLUPS:
        assert counts.get(name, 0) > 0, f"{name} never answered: {counts}"


def warehouse_files(path):
    """Every file of a warehouse with its size: what 'nothing changed' compares."""
    import pathlib
    return {str(p.relative_to(path)): p.stat().st_size
            for p in pathlib.Path(path).rglob("*") if p.is_file()}


@pytest.fixture
def small(tmp_path):
    wh = str(tmp_path / "wh")
    lake = timelake.Lake(wh)
    table = lake.create_table("iot.r", SCHEMA, time_column="time", series_key=["device"])
    table.append(Rows(3).batch(200, 0, 48))
    timelake.flush()
    return wh, lake


BAD = {
    "stddev(iot.r.temp) isn't an aggregate a rollup stores":
        "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, stddev(temp) FROM iot.r "
        "GROUP BY device, b",
    "needs GROUP BY time_bucket":
        "SELECT device, max(temp) FROM iot.r GROUP BY device",
    "WHERE isn't supported in a rollup":
        "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, max(temp) FROM iot.r "
        "WHERE temp > 3 GROUP BY device, b",
    "without the CAST":
        "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, "
        "max(CAST(temp AS INT)) FROM iot.r GROUP BY device, b",
    "DISTINCT cannot be rolled up":
        "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, count(DISTINCT site) "
        "FROM iot.r GROUP BY device, b",
    "buckets start at 1970-01-01":
        "SELECT device, time_bucket(INTERVAL '1 hour', time, TIMESTAMP '2026-01-01T00:10:00Z') "
        "AS b, max(temp) FROM iot.r GROUP BY device, b",
    "whole seconds":
        "SELECT device, time_bucket(INTERVAL '10 milliseconds', time) AS b, max(temp) FROM iot.r "
        "GROUP BY device, b",
    "reads one table":
        "SELECT a.device, time_bucket(INTERVAL '1 hour', a.time) AS b, max(a.temp) FROM iot.r a "
        "JOIN iot.r c ON a.device = c.device GROUP BY a.device, b",
    "have the same name":
        "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, max(temp) AS x, min(temp) AS x "
        "FROM iot.r GROUP BY device, b",
    "not found":
        "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, max(temp) FROM iot.nope "
        "GROUP BY device, b",
}


@pytest.mark.parametrize("expected", sorted(BAD))
def test_what_cannot_be_rolled_up_is_named_and_nothing_changes(small, expected):
    wh, lake = small
    before = warehouse_files(wh)
    with pytest.raises(Exception) as error:
        lake.sql(f"CREATE MATERIALIZED ROLLUP iot.bad AS {BAD[expected]}")
    assert expected.lower() in str(error.value).lower(), str(error.value)
    assert "iot.bad" in str(error.value)
    assert warehouse_files(wh) == before


def test_statements_answer_and_the_rollup_lives_and_dies_with_its_table(small, tmp_path):
    wh, lake = small
    create = ("CREATE MATERIALIZED ROLLUP {} iot.r_1h AS SELECT device, "
              "time_bucket(INTERVAL '1 hour', time) AS bucket, max(temp) AS hottest, avg(hum) "
              "FROM iot.r GROUP BY device, bucket WITH (refresh_interval = '0s')")
    answer = lake.sql(create.format("")).to_pylist()
    assert answer[0]["rollup"] == "iot.r_1h" and answer[0]["rows"] > 0
    with pytest.raises(Exception, match="already exists"):
        lake.sql(create.format(""))
    assert lake.sql(create.format("IF NOT EXISTS")).to_pylist() == [
        {"rollup": "iot.r_1h", "rows": 0}]
    # Its table: the bucket, the groups, the aggregates and their states.
    rollup = lake.table("iot.r_1h")
    assert rollup.schema.names == ["device", "bucket", "hottest", "avg_hum", "sum_hum",
                                   "count_hum"]
    props = rollup.info()["properties"]
    assert props["timelake.rollup-source"] == "iot.r"
    assert props["timelake.rollup-bucket"] == "1h"
    assert props["timelake.rollup-refresh-interval"] == "0s"
    assert rollup.info()["rollup_of"] == "iot.r"
    info = lake.table("iot.r").info()
    assert [(r["name"], r["bucket"], r["behind"], r["problem"]) for r in info["rollups"]] == [
        ("iot.r_1h", "1h", 0, None)]

    # Appends refresh it (its interval is 0 s) and say so; it takes no rows itself.
    report = lake.table("iot.r").append(Rows(5).batch(50, 10, 5))
    assert [r["rollup"] for r in report["rollups"]] == ["iot.r_1h"]
    assert report["rollups"][0]["rows"] > 0 and "error" not in report["rollups"][0]
    with pytest.raises(Exception, match="is a rollup of iot.r"):
        rollup.append(lake.sql("SELECT * FROM iot.r_1h"))
    with pytest.raises(Exception, match="is a rollup of iot.r"):
        lake.sql("DELETE FROM iot.r_1h WHERE device = 1")
    with pytest.raises(Exception, match="is not a rollup"):
        lake.sql("REFRESH MATERIALIZED ROLLUP iot.r")
    with pytest.raises(Exception, match="not found"):
        lake.sql("REFRESH MATERIALIZED ROLLUP iot.nope")

    # The CLI marks it and lists it with its freshness.
    import subprocess
    import os
    binary = os.environ.get("TIMELAKE_BIN", "build/release/timelake")
    ls = subprocess.run([binary, "-w", wh, "ls"], capture_output=True, text=True, check=True)
    assert "iot.r_1h  (rollup of iot.r)" in ls.stdout
    text = subprocess.run([binary, "-w", wh, "info", "iot.r"], capture_output=True, text=True,
                          check=True).stdout
    assert "iot.r_1h (1h): up to date" in text

    # DROP MATERIALIZED ROLLUP takes it off the list; so does dropping the table.
    lake.sql("CREATE MATERIALIZED ROLLUP iot.r_1d AS SELECT date_trunc('day', time) AS d, "
             "count(*) FROM iot.r GROUP BY d")
    assert lake.table("iot.r").info()["properties"]["timelake.rollups"] == "iot.r_1h,iot.r_1d"
    assert lake.sql("DROP MATERIALIZED ROLLUP iot.r_1h").to_pylist()[0]["rollup"] == "iot.r_1h"
    assert lake.sql("DROP MATERIALIZED ROLLUP IF EXISTS iot.r_1h").num_rows == 1
    with pytest.raises(Exception, match="not found"):
        lake.sql("DROP MATERIALIZED ROLLUP iot.r_1h")
    with pytest.raises(Exception, match="is not a rollup"):
        lake.sql("DROP MATERIALIZED ROLLUP iot.r")
    assert lake.table("iot.r").info()["properties"]["timelake.rollups"] == "iot.r_1d"
    lake.drop_table("iot.r_1d")
    assert "timelake.rollups" not in lake.table("iot.r").info()["properties"]

    # Dropping the raw table drops its rollups, and the CLI names them.
    lake.sql("CREATE MATERIALIZED ROLLUP iot.r_2h AS SELECT device, "
             "time_bucket(INTERVAL '2 hours', time) AS bucket, count(*) FROM iot.r "
             "GROUP BY device, bucket")
    out = subprocess.run([binary, "-w", wh, "drop", "iot.r"], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "dropped iot.r and its rollup iot.r_2h"
    assert timelake.Lake(wh).tables() == []


def test_rollups_of_rollups_refresh_after_the_rollup_they_read(small):
    wh, lake = small
    lake.sql("CREATE MATERIALIZED ROLLUP iot.r_1h AS SELECT device, "
             "time_bucket(INTERVAL '1 hour', time) AS bucket, max(temp) AS mx FROM iot.r "
             "GROUP BY device, bucket WITH (refresh_interval = '0s')")
    lake.sql("CREATE MATERIALIZED ROLLUP iot.r_1h_1d AS SELECT device, "
             "date_trunc('day', bucket) AS day, max(mx) AS mx FROM iot.r_1h "
             "GROUP BY device, day WITH (refresh_interval = '0s')")
    report = lake.table("iot.r").append(Rows(9).batch(40, 30, 10))
    assert [r["rollup"] for r in report["rollups"]] == ["iot.r_1h", "iot.r_1h_1d"]
    want = lake.sql("SELECT device, date_trunc('day', time) AS day, max(temp) AS mx "
                    "FROM iot.r GROUP BY device, day").to_pylist()
    got = lake.sql("SELECT device, day, mx FROM iot.r_1h_1d").to_pylist()
    key = lambda r: (r["device"], r["day"])  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)


def test_a_long_refresh_commits_a_partition_at_a_time(small):
    """A rollup of 15-minute buckets is partitioned by day: its first refresh
    over two days of rows writes one commit per day, and only the last one
    records the raw snapshot it reflects (until then queries read raw data)."""
    wh, lake = small
    lake.sql("CREATE MATERIALIZED ROLLUP iot.r_15m AS SELECT device, "
             "time_bucket(INTERVAL '15 minutes', time) AS bucket, count(*), max(temp) "
             "FROM iot.r GROUP BY device, bucket")
    import subprocess
    import json as js
    import os
    binary = os.environ.get("TIMELAKE_BIN", "build/release/timelake")
    snaps = js.loads(subprocess.run(
        [binary, "-w", wh, "info", "iot.r_15m", "--snapshots", "--format", "json"],
        capture_output=True, text=True, check=True).stdout)
    assert len(snaps) >= 2, snaps
    sql = ("SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, count(*) AS n, "
           "max(temp) AS m FROM iot.r GROUP BY device, b")
    raw = timelake.Lake(wh, settings={"timelake.rollup_routing": "false"})
    assert rows_of(lake.sql(sql), ["device", "b"]) == rows_of(raw.sql(sql), ["device", "b"])
    assert "r_15m" in "\n".join(lake.sql("EXPLAIN " + sql).column("plan").to_pylist())


def test_refreshes_keep_the_rollup_table_compact(small):
    """Each refresh writes a file of the buckets it recomputed, overlapping the
    previous ones (the newest hour is recomputed by every append): inline
    maintenance after the refresh, as after an append, keeps the rollup's file
    count bounded. With the rollup's auto-maintain off the files pile up."""
    wh, lake = small
    for name, auto in (("iot.r_tidy", "true"), ("iot.r_piled", "false")):
        lake.sql(f"CREATE MATERIALIZED ROLLUP {name} AS SELECT device, "
                 "time_bucket(INTERVAL '1 hour', time) AS bucket, count(*), max(temp), "
                 f"avg(temp) FROM iot.r GROUP BY device, bucket WITH (refresh_interval = '0s')")
        lake.table(name).set_properties({"timelake.auto-maintain": auto})
    table = lake.table("iot.r")
    rows = Rows(11)
    rewritten = {"iot.r_tidy": 0, "iot.r_piled": 0}
    for i in range(24):
        result = table.append(rows.batch(30, 40 + i // 4, 2))
        for r in result["rollups"]:
            assert "error" not in r and "maintenance_error" not in r, r
            rewritten[r["rollup"]] += r["files_rewritten"]
    timelake.flush()
    files = {name: lake.table(name).info()["files"] for name in rewritten}
    assert rewritten["iot.r_piled"] == 0 and files["iot.r_piled"] >= 24, (rewritten, files)
    assert rewritten["iot.r_tidy"] > 0 and files["iot.r_tidy"] <= 10, (rewritten, files)
    # maintain(rollups=False), as in 0.7's scripts, leaves them alone.
    assert "rollups" not in table.maintain(rollups=False)
    assert {r["rollup"] for r in table.maintain()["rollups"]} == set(rewritten)
    sql = ("SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, count(*) AS n, "
           "max(temp) AS m, avg(temp) AS a FROM iot.r GROUP BY device, b")
    raw = timelake.Lake(wh, settings={"timelake.rollup_routing": "false"})
    assert rows_of(lake.sql(sql), ["device", "b"]) == rows_of(raw.sql(sql), ["device", "b"])
