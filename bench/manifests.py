#!/usr/bin/env python3
"""Planning a table of many files (issue #21): manifests per snapshot and
cold planning time, without and with manifest merging, ours and the peers'.

Builds two tables of --files live files from many small appends with
compaction off (each append writes --files-per-append files, one per hour
partition; snapshot expiry stays on, so the metadata file stays small):
`bench.unmerged` with Iceberg's `commit.manifest-merge.enabled=false` (one
manifest per append, as before merging existed) and `bench.merged` with our
defaults. Then, for each, cold planning of a query on one hour:

  ours, head      a new `timelake sql` process (reads the head object)
  ours, manifests the same without the head object (reads every manifest)
  pyiceberg       StaticTable.from_metadata(...).scan(filter).plan_files()
  spark           df.inputFiles() in one Spark session, catalog caching off,
                  after one untimed plan of each table (JVM warm-up); needs pyspark
                  and the Iceberg jar of `scripts/setup.sh test`

The query selects one hour: engines that prune manifests by their partition
summaries (PyIceberg, Spark) read one small manifest of the unmerged table,
while a merged manifest spans many hours. The "ours" times include starting
the process and running the (small) query.

Each time is the median of --repeats runs. Not part of `make test`.

    .venv/bin/python bench/manifests.py [--files 10000] [--no-spark]
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = os.environ.get("TIMELAKE_BIN", str(ROOT / "build" / "release" / "timelake"))
JAR = (pathlib.Path.home() / ".cache" / "timelake" / "jars" /
       "iceberg-spark-runtime-3.5_2.12-1.10.2.jar")
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def build(lake, name, appends, per_append, merge):
    import timelake
    schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("device", pa.string()),
                        ("value", pa.float64())])
    props = {"timelake.compact-min-files": "1000000",
             "timelake.compact-cold-after": "100000d"}
    if not merge:
        props["commit.manifest-merge.enabled"] = "false"
    table = lake.create_table(name, schema, time_column="time", series_key=["device"],
                              chunk="hour", properties=props)
    start = time.perf_counter()
    for i in range(appends):
        hours = [(i * per_append + k) % (24 * 365) for k in range(per_append)]
        batch = pa.table({
            "time": pa.array([T0 + dt.timedelta(hours=h, seconds=i % 3600) for h in hours],
                             pa.timestamp("us", tz="UTC")),
            "device": pa.array([f"d{i % 50}"] * per_append),
            "value": pa.array([float(i)] * per_append),
        }, schema=schema)
        table.append(batch)
    timelake.flush()
    return time.perf_counter() - start


def newest_metadata(warehouse, name):
    ns, t = name.split(".")
    files = sorted((warehouse / ns / t / "metadata").glob("v*.metadata.json"),
                   key=lambda p: int(p.name[1:].split(".")[0]))
    return files[-1]


def manifests_of(warehouse, name):
    """Manifests of the current snapshot and their bytes."""
    from pyiceberg.table import StaticTable
    static = StaticTable.from_metadata(str(newest_metadata(warehouse, name)))
    manifests = static.current_snapshot().manifests(static.io)
    return len(manifests), sum(m.manifest_length for m in manifests)


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def hour_filter_sql(name):
    return (f"SELECT count(*) FROM {name} WHERE time >= TIMESTAMP '2026-01-02 05:00:00+00:00' "
            f"AND time < TIMESTAMP '2026-01-02 06:00:00+00:00'")


def ours(warehouse, name, repeats, with_head):
    ns, t = name.split(".")
    head = warehouse / ns / t / "metadata" / "timelake-head"
    saved = head.with_suffix(".saved")
    if not with_head:
        shutil.move(head, saved)
    try:
        return median_time(lambda: subprocess.run(
            [BIN, "-w", str(warehouse), "sql", hour_filter_sql(name), "--format", "csv"],
            check=True, capture_output=True), repeats)
    finally:
        if not with_head:
            shutil.move(saved, head)


def pyiceberg_plan(warehouse, name, repeats):
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThan
    from pyiceberg.table import StaticTable
    meta = str(newest_metadata(warehouse, name))

    def plan():
        static = StaticTable.from_metadata(meta)
        expr = And(GreaterThanOrEqual("time", "2026-01-02T05:00:00+00:00"),
                   LessThan("time", "2026-01-02T06:00:00+00:00"))
        list(static.scan(row_filter=expr).plan_files())
    return median_time(plan, repeats)


def spark_plans(warehouse, names, repeats):
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("timelake-bench-manifests")
             .config("spark.driver.memory", "2g").config("spark.jars", str(JAR))
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.catalog.wh", "org.apache.iceberg.spark.SparkCatalog")
             .config("spark.sql.catalog.wh.type", "hadoop")
             .config("spark.sql.catalog.wh.warehouse", f"file://{warehouse}")
             .config("spark.sql.catalog.wh.cache-enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    out = {}
    try:
        def plan(name):
            df = spark.table(f"wh.{name}").where(
                "time >= TIMESTAMP '2026-01-02 05:00:00' AND "
                "time < TIMESTAMP '2026-01-02 06:00:00'")
            df.inputFiles()
        # The JVM's warm-up (class loading, JIT) is not the table's cost:
        # every table is planned once before the timed runs.
        for name in names:
            plan(name)
        for name in names:
            out[name] = median_time(lambda: plan(name), repeats)
    finally:
        spark.stop()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", type=int, default=10000)
    p.add_argument("--files-per-append", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-spark", action="store_true")
    p.add_argument("--keep", help="build the warehouse here and keep it")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT / "python"))
    import timelake
    appends = args.files // args.files_per_append
    tmp = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="timelake-manifests-"))
    warehouse = tmp / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    lake = timelake.Lake(str(warehouse))
    tables = {"bench.unmerged": False, "bench.merged": True}
    rows = {}
    for name, merge in tables.items():
        took = build(lake, name, appends, args.files_per_append, merge)
        print(f"built {name}: {appends} appends of {args.files_per_append} files in {took:.1f} s",
              flush=True)
    for name in tables:
        count, size = manifests_of(warehouse, name)
        rows[name] = {
            "manifests": count, "manifest_bytes": size,
            "ours_head": ours(warehouse, name, args.repeats, True),
            "ours_manifests": ours(warehouse, name, args.repeats, False),
            "pyiceberg": pyiceberg_plan(warehouse, name, args.repeats),
        }
    if not args.no_spark:
        for name, median in spark_plans(warehouse, list(tables), args.repeats).items():
            rows[name]["spark"] = median
    load = os.getloadavg()
    print()
    print(f"# Planning {args.files} live files from {appends} appends "
          f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"{os.cpu_count()} cores; medians of {args.repeats})")
    print()
    cols = ["manifests", "ours_head", "ours_manifests", "pyiceberg", "spark"]
    print("| table | manifests per snapshot | ours, cold process with head | ours, cold "
          "process from manifests | PyIceberg plan_files | Spark inputFiles |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        cells = [str(r["manifests"])] + [
            f"{r[c] * 1000:.0f} ms" if c in r else "-" for c in cols[1:]]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    print(json.dumps(rows))
    if not args.keep:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
