"""Rollups move between Timelake 0.7 and this implementation (issue #17): a raw
table and its rollup written by 0.7 open here with equal answers, route here,
and refresh here (0.7 then reads what we refreshed and routes to it); a rollup
we create is routed to and refreshed by 0.7. Answers are compared with the
same query on raw data (routing off), and EXPLAIN shows who read the rollup."""

import json

import timelake

from conftest import run_tl07

# One script for 0.7: it runs the statements given as JSON and prints, for
# each, its rows (JSON) or its error.
TL07_RUN = r"""
import json, sys, timelake
lake = timelake.Lake(sys.argv[1])
out = []
for sql in json.loads(sys.argv[2]):
    try:
        rows = lake.sql(sql).to_pylist()
        out.append({"rows": rows})
    except Exception as e:  # the message is what the test looks at
        out.append({"error": f"{type(e).__name__}: {e}"})
print(json.dumps(out, default=str))
"""

TL07_CREATE = r"""
import datetime as dt, sys, pyarrow as pa, timelake
lake = timelake.Lake(sys.argv[1])
t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
n = 600
t = pa.table({
    "time": pa.array([t0 + dt.timedelta(minutes=7 * i) for i in range(n)], pa.timestamp("us", tz="UTC")),
    "device": pa.array([i % 4 for i in range(n)], pa.int64()),
    "temp": pa.array([float((i * 37) % 101) / 3 for i in range(n)]),
})
table = lake.create_table("iot.raw07", t.schema, time_column="time", series_key=["device"])
table.append(t)
if len(sys.argv) < 3: lake.sql('''CREATE MATERIALIZED ROLLUP iot.raw07_1h AS SELECT device,
  time_bucket(INTERVAL '1 hour', time) AS bucket, count(*), sum(temp), count(temp),
  min(temp), max(temp), avg(temp), m4(time, temp), time_weighted_mean(time, temp)
  FROM iot.raw07 GROUP BY device, bucket''')
"""

QUERIES = [
    "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, count(*) AS n, max(temp) AS mx, "
    "min(temp) AS mn, sum(temp) AS s FROM {t} GROUP BY device, b",
    "SELECT device, time_bucket(INTERVAL '1 day', time) AS b, count(*) AS n, max(temp) AS mx, "
    "avg(temp) AS a FROM {t} GROUP BY device, b",
    "SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, m4(time, temp) AS m, "
    "time_weighted_mean(time, temp) AS w FROM {t} GROUP BY device, b",
]


def normalized(rows):
    def norm(v):
        if isinstance(v, float):
            return round(v, 9)
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return str(v) if v is not None and not isinstance(v, (int, str)) else v
    return sorted((json.dumps({k: norm(v) for k, v in r.items()}, sort_keys=True)
                   for r in rows))


def ours(warehouse, sql, routing=True):
    settings = None if routing else {"timelake.rollup_routing": "false"}
    return timelake.Lake(str(warehouse), settings=settings).sql(sql).to_pylist()


def explain(warehouse, sql):
    plan = timelake.Lake(str(warehouse)).sql("EXPLAIN " + sql).column("plan").to_pylist()
    return "\n".join(plan)


def tl07(warehouse, *statements):
    return json.loads(run_tl07(TL07_RUN, warehouse, json.dumps(list(statements))))


def append_ours(warehouse, table, start_minute, n):
    import datetime as dt
    import pyarrow as pa
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = pa.table({
        "time": pa.array([t0 + dt.timedelta(minutes=start_minute + 3 * i) for i in range(n)],
                         pa.timestamp("us", tz="UTC")),
        "device": pa.array([i % 4 for i in range(n)], pa.int64()),
        "temp": pa.array([100.0 + i for i in range(n)]),
    })
    timelake.Lake(str(warehouse)).table(table).append(rows)


def test_a_07_rollup_opens_routes_and_refreshes_here(warehouse):
    run_tl07(TL07_CREATE, warehouse)
    for q in QUERIES:
        sql = q.format(t="iot.raw07")
        assert normalized(ours(warehouse, sql)) == normalized(ours(warehouse, sql, False)), sql
    hourly = QUERIES[0].format(t="iot.raw07")
    assert "raw07_1h" in explain(warehouse, hourly)
    # 0.7 stores a bare average: a daily avg re-aggregates from its sum and
    # count columns (the rollup has them).
    daily = QUERIES[1].format(t="iot.raw07")
    assert "raw07_1h" in explain(warehouse, daily)

    # Late rows appended here; our refresh brings 0.7's rollup up to date.
    append_ours(warehouse, "iot.raw07", 30, 50)
    assert "raw07_1h" in explain(warehouse, hourly)  # the rest, dirty, from raw data
    for q in QUERIES:
        sql = q.format(t="iot.raw07")
        assert normalized(ours(warehouse, sql)) == normalized(ours(warehouse, sql, False)), sql
    refreshed = ours(warehouse, "REFRESH MATERIALIZED ROLLUP iot.raw07_1h")
    assert refreshed[0]["rows"] > 0
    info = timelake.Lake(str(warehouse)).table("iot.raw07").info()
    assert info["rollups"][0]["behind"] == 0, info

    # 0.7 reads the rollup we refreshed: its routed answers equal ours on raw data.
    answers = tl07(warehouse, *[q.format(t="iot.raw07") for q in QUERIES],
                   "EXPLAIN " + hourly)
    for q, got in zip(QUERIES, answers):
        sql = q.format(t="iot.raw07")
        assert "rows" in got, got
        assert normalized(got["rows"]) == normalized(ours(warehouse, sql, False)), sql
    assert "raw07_1h" in json.dumps(answers[-1])


def test_our_rollup_is_routed_and_refreshed_by_07(warehouse):
    run_tl07(TL07_CREATE, warehouse, "no-rollup")
    # Our rollup of 0.7's raw table.
    lake = timelake.Lake(str(warehouse))
    ours(warehouse, "CREATE MATERIALIZED ROLLUP iot.ours_1h AS SELECT device, "
                    "time_bucket(INTERVAL '1 hour', time) AS bucket, count(*), max(temp), "
                    "avg(temp) FROM iot.raw07 GROUP BY device, bucket")
    props = lake.table("iot.raw07").info()["properties"]
    assert props["timelake.rollups"] == "iot.ours_1h"
    hourly = ("SELECT device, time_bucket(INTERVAL '1 hour', time) AS b, count(*) AS n, "
              "max(temp) AS mx, avg(temp) AS a FROM iot.raw07 GROUP BY device, b")
    # 0.7 reads the table we made, and answers the hourly query as raw data does.
    got = tl07(warehouse, "SELECT count(*) AS n FROM iot.ours_1h", hourly,
               "EXPLAIN " + hourly)
    assert got[0]["rows"][0]["n"] == len(ours(warehouse, hourly, False))
    assert normalized(got[1]["rows"]) == normalized(ours(warehouse, hourly, False))
    assert "ours_1h" in json.dumps(got[2]), got[2]  # 0.7 read our rollup
    # Rows appended and refreshed by 0.7: we read its refresh of our rollup.
    append_ours(warehouse, "iot.raw07", 4000, 40)
    got = tl07(warehouse, "REFRESH MATERIALIZED ROLLUP iot.ours_1h")
    assert got[0]["rows"][0]["rows"] > 0, got
    info = timelake.Lake(str(warehouse)).table("iot.raw07").info()
    behind = {r["name"]: r["behind"] for r in info["rollups"]}
    assert behind["iot.ours_1h"] == 0, info
    assert "ours_1h" in explain(warehouse, hourly)
    assert normalized(ours(warehouse, hourly)) == normalized(ours(warehouse, hourly, False))
    rollup_rows = ours(warehouse, "SELECT device, bucket, count, max_temp FROM iot.ours_1h")
    raw_rows = ours(warehouse, "SELECT device, time_bucket(INTERVAL '1 hour', time) AS bucket, "
                               "count(*) AS count, max(temp) AS max_temp FROM iot.raw07 "
                               "GROUP BY device, bucket", False)
    assert normalized(rollup_rows) == normalized(raw_rows)
