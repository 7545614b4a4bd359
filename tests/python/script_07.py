"""A script written against Timelake 0.7's Python API (create, append, sql, latest,
maintain), run unchanged by tests/python/test_compat07.py under 0.7 (.venv-tl07) and under
this package (.venv): both must print the same lines.

    python script_07.py <warehouse>
"""

import datetime as dt
import sys

import pyarrow as pa
import timelake

lake = timelake.Lake(sys.argv[1])
schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("device_id", pa.int32()),
                    ("temp", pa.float64())])
table = lake.create_table("iot.readings", schema, time_column="time", series_key=["device_id"])
print("created", table.name, table.schema.names)

t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
for day in range(3):
    rows = [(t0 + dt.timedelta(days=day, minutes=m), m % 4, 20.0 + day + m / 10)
            for m in range(0, 60, 5)]
    batch = pa.table({"time": [r[0] for r in rows], "device_id": [r[1] for r in rows],
                      "temp": [r[2] for r in rows]}, schema=schema)
    stats = table.append(batch, batch_id=f"day-{day}")
    print("append", day, stats["rows"], stats["files"], stats["duplicate"])
stats = table.append(batch, batch_id="day-2")
print("again", stats["rows"], stats["duplicate"])
# A correction: a newer value for an existing (device, time) wins under dedup.
fix = pa.table({"time": [t0], "device_id": [0], "temp": [99.5]}, schema=schema)
print("fix", table.append(fix)["rows"])

print(lake.tables())
result = lake.sql("SELECT device_id, count(*) AS n, round(avg(temp), 3) AS avg_temp "
                  "FROM iot.readings GROUP BY device_id ORDER BY device_id")
print(result.to_pylist())
print(lake.sql("SELECT count(*) AS n FROM readings", namespace="iot").to_pylist())
print(lake.sql("SELECT max(temp) AS hottest FROM iot.readings WHERE device_id = 0")
      .column("hottest").to_pylist())

latest = lake.latest("iot.readings").sort_by("device_id")
print([(r["device_id"], r["time"].isoformat(), r["temp"])
       for r in latest.select(["device_id", "time", "temp"]).to_pylist()])

report = table.maintain()
# How much is left to compact after inline maintenance depends on the engine's
# policy; what a report says must hold in both.
print("maintain", type(report).__name__,
      report["files_written"] <= report["files_rewritten"],
      report["duplicates_removed"] <= report["rows_rewritten"])
info = table.info()
print("info", info["name"], info["time_column"], info["series_key"], info["chunk"],
      info["dedup"], info["rows"], info["files"])
print(lake.sql("SELECT count(*) AS n, round(sum(temp), 2) AS total FROM iot.readings")
      .to_pylist())
table.set_properties({"timelake.retention": "3650d"})
table.refresh()
print("retention", table.info()["name"], table.version > 1)
lake.drop_table("iot.readings")
print(lake.tables())
