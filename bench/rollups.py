"""Materialized rollups: routed queries beside raw ones, ours beside Timelake 0.7's
(issue #17), and what keeping rollups costs the writer.

    .venv/bin/python bench/rollups.py                       # 100 hosts x 24 h
    .venv/bin/python bench/rollups.py --hosts 1000 --hours 12
    .venv/bin/python bench/rollups.py --hosts 10 --hours 3 --repeats 1   # a smoke run

On the TSBS cpu-only data (bench/tsbs.py), each system (this implementation's
Python package from .venv, Timelake 0.7's from .venv-tl07, through the same
Python API) ingests the files one append each into a table with series key
`hostname`, three times: without rollups, with one hourly rollup, and with three
(hourly, 15-minute, daily), each refreshed after every append (the raw table's
`timelake.rollup-refresh-interval` = 0 s; 0.7 by an explicit REFRESH, see
REFRESH_EACH). Reported per system: ingest seconds
and rows/s for 0, 1 and 3 rollups, the refresh time per append, and the bytes
of the rollup tables per MB of raw data.

Then the queries, on the table with three rollups, each with routing (the
default) and without (`timelake.rollup_routing = false`): TSBS double-groupby-1,
double-groupby-all and cpu-max-all-8 in `time_bucket` form (0.7 routes
`time_bucket`, not `date_trunc`), a daily per-host query and a 6-hourly one over
every row (coarser than the hourly rollup), and two of the TSBS queries again
over windows that start on the hour. "first" is the first run in a fresh
process (warm caches of the operating system), "warm" the median of --repeats
more. Every answer is checked: routed against raw in each system, and ours
against 0.7's (floats to 1e-9 relative). Prints Markdown; --json writes the
figures.
"""

import argparse
import json
import math
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

PYTHONS = {"ours": ROOT / ".venv" / "bin" / "python",
           "tl07": ROOT / ".venv-tl07" / "bin" / "python"}
TABLE = "bench.cpu"
# Timelake 0.7 refreshes its rollups after an append only once with the raw
# table's `timelake.rollup-refresh-interval` = 0 s (seen as a black box: after
# three appends an hourly rollup held the first append's buckets only, until a
# REFRESH), so it would answer from stale rollups or raw data. Its ingest runs
# REFRESH MATERIALIZED ROLLUP for each rollup after every append, timed with it.
REFRESH_EACH = {"tl07"}
METRICS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
           "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
HOUR_US = 3_600_000_000

# The rollups. The averages come with their sums and counts (ours would add
# them itself; 0.7 re-aggregates an average into coarser buckets only from
# them). Timelake 0.7 refuses avg() of the integer usage_* columns: its
# rollups are made without the avg() terms (the worker retries without them),
# so it answers avg queries from raw data.
ROLLUPS = [
    ("bench.cpu_1h", "SELECT hostname, time_bucket(INTERVAL '1 hour', time) AS bucket, "
                     "count(*), "
     + ", ".join(f"max({m}), avg({m}), sum({m}), count({m})" for m in METRICS)
     + f" FROM {TABLE} GROUP BY hostname, bucket"),
    ("bench.cpu_15m", "SELECT hostname, time_bucket(INTERVAL '15 minutes', time) AS bucket, "
                      "max(usage_user), avg(usage_user), sum(usage_user), count(usage_user) "
                      f"FROM {TABLE} GROUP BY hostname, bucket"),
    ("bench.cpu_1d", "SELECT hostname, time_bucket(INTERVAL '1 day', time) AS bucket, "
                     "count(*), max(usage_user), min(usage_user), avg(usage_user), "
                     f"sum(usage_user), count(usage_user) FROM {TABLE} GROUP BY hostname, bucket"),
]

WORKER = r'''
import json, statistics, sys, time
import pyarrow.parquet as pq
import timelake

def ingest(target, rollups, paths, refresh_each):
    lake = timelake.Lake(target)
    first = pq.read_table(paths[0])
    table = lake.create_table("bench.cpu", first.schema, time_column="time",
                              series_key=["hostname"])
    table.set_properties({"timelake.rollup-refresh-interval": "0s"})
    for name, select in rollups:
        try:
            lake.sql(f"CREATE MATERIALIZED ROLLUP {name} AS {select}")
        except ValueError as e:
            # Timelake 0.7 refuses avg() of an integer column ("isn't an
            # aggregate a rollup stores"): its rollup keeps the rest.
            if "avg(CAST" not in str(e):
                raise
            import re
            lake.sql(f"CREATE MATERIALIZED ROLLUP {name} AS " +
                     re.sub(r"avg\((\w+)\), ", "", select))
    table = lake.table("bench.cpu")
    appends = []
    start = time.perf_counter()
    for p in paths:
        data = pq.ParquetFile(p).read()
        t = time.perf_counter()
        table.append(data)
        if refresh_each:
            for name, _ in rollups:
                lake.sql(f"REFRESH MATERIALIZED ROLLUP {name}")
        appends.append(time.perf_counter() - t)
    timelake.flush() if hasattr(timelake, "flush") else None
    total = time.perf_counter() - start
    rollup_bytes = sum(lake.table(name).info()["bytes"] for name, _ in rollups)
    raw = lake.table("bench.cpu").info()
    return {"seconds": total, "appends": appends, "rollup_bytes": rollup_bytes,
            "raw_bytes": raw["bytes"], "rows": raw["rows"]}

def query(target, queries, repeats):
    out = {}
    for routing in ("on", "off"):
        settings = None if routing == "on" else {"timelake.rollup_routing": "false"}
        lake = timelake.Lake(target, settings=settings)
        for q in queries:
            t = time.perf_counter()
            result = lake.sql(q["sql"])
            first = time.perf_counter() - t
            # Outside the timing: pyarrow's first conversion of zoned
            # timestamps to Python costs ~0.7 s in a fresh process.
            rows = result.to_pylist()
            warm = []
            for _ in range(repeats):
                t = time.perf_counter()
                lake.sql(q["sql"])
                warm.append(time.perf_counter() - t)
            plan = "\n".join(lake.sql("EXPLAIN " + q["sql"]).column("plan").to_pylist())
            routed_to = [n for n in ("cpu_15m", "cpu_1h", "cpu_1d") if n in plan]
            out.setdefault(q["name"], {})[routing] = {
                "first_ms": first * 1e3, "warm_ms": statistics.median(warm) * 1e3,
                "rows": rows, "rollups": routed_to}
    return out

cmd = json.loads(sys.argv[1])
if cmd["op"] == "ingest":
    print(json.dumps(ingest(cmd["target"], cmd["rollups"], cmd["paths"],
                            cmd["refresh_each"])))
else:
    print(json.dumps(query(cmd["target"], cmd["queries"], cmd["repeats"]), default=str))
'''


def queries(hosts, start_us, end_us):
    """The queries, with the TSBS windows placed as bench/queries.py places them."""
    import queries as Q  # noqa: E402 (bench/queries.py)
    tsbs = {q["name"]: q for q in Q.build(42, hosts, start_us, end_us) if "scan" in q}

    def window(name, hours):
        scan = tsbs[name]["scan"]
        a = scan.get("start_us", start_us)
        return a, min(a + hours * HOUR_US, end_us)

    def ts(us):
        return Q.df_ts(us)

    a, b = window("double-groupby-1", 12)
    out = [{"name": "double-groupby-1",
            "sql": f"SELECT time_bucket(INTERVAL '1 hour', time) AS hour, hostname, "
                   f"avg(usage_user) AS mean_usage_user FROM {TABLE} WHERE time >= {ts(a)} "
                   f"AND time < {ts(b)} GROUP BY 1, 2"}]
    def groupby_all(a, b):
        return ("SELECT time_bucket(INTERVAL '1 hour', time) AS hour, hostname, "
                + ", ".join(f"avg({m}) AS mean_{m}" for m in METRICS)
                + f" FROM {TABLE} WHERE time >= {ts(a)} AND time < {ts(b)} GROUP BY 1, 2")

    hosts = ", ".join(f"'host_{i}'" for i in range(8))

    def max_all_8(a, b):
        return ("SELECT time_bucket(INTERVAL '1 hour', time) AS hour, "
                + ", ".join(f"max({m}) AS max_{m}" for m in METRICS)
                + f" FROM {TABLE} WHERE hostname IN ({hosts}) AND time >= {ts(a)} "
                  f"AND time < {ts(b)} GROUP BY 1")

    def on_the_hour(name, hours):
        a, _ = window(name, hours)
        a -= a % HOUR_US
        return a, a + hours * HOUR_US

    out.append({"name": "double-groupby-all",
                "sql": groupby_all(*window("double-groupby-all", 12))})
    out.append({"name": "cpu-max-all-8", "sql": max_all_8(*window("cpu-max-all-8", 8))})
    # Dashboards ask for whole buckets: the same two queries over windows that
    # start on the hour, which a rollup answers without reading raw data (the
    # TSBS windows above start mid-hour: the partial first and last hours come
    # from raw files, which, sorted by host then time, are read whole).
    out.append({"name": "double-groupby-all, on the hour",
                "sql": groupby_all(*on_the_hour("double-groupby-all", 12))})
    out.append({"name": "cpu-max-all-8, on the hour",
                "sql": max_all_8(*on_the_hour("cpu-max-all-8", 8))})
    out.append({"name": "daily-per-host",
                "sql": "SELECT hostname, time_bucket(INTERVAL '1 day', time) AS day, "
                       "max(usage_user) AS mx, avg(usage_user) AS mean, count(*) AS n "
                       f"FROM {TABLE} GROUP BY 1, 2"})
    # Without avg(), so that Timelake 0.7 (whose rollups here have no avg)
    # can route it too.
    out.append({"name": "daily-max-per-host",
                "sql": "SELECT hostname, time_bucket(INTERVAL '1 day', time) AS day, "
                       f"max(usage_user) AS mx, count(*) AS n FROM {TABLE} GROUP BY 1, 2"})
    out.append({"name": "6-hourly-per-host",
                "sql": "SELECT hostname, time_bucket(INTERVAL '6 hours', time) AS b, "
                       "max(usage_system) AS mx, avg(usage_idle) AS mean "
                       f"FROM {TABLE} GROUP BY 1, 2"})
    return out


def run(system, command):
    proc = subprocess.run([str(PYTHONS[system]), "-c", WORKER, json.dumps(command)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{system} {command['op']} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def canonical(rows):
    return sorted((tuple(sorted(r.items())) for r in rows),
                  key=lambda r: [str(v) for _, v in r if not isinstance(v, float)])


def same_rows(a, b):
    a, b = canonical(a), canonical(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        for (k1, v1), (k2, v2) in zip(x, y):
            if k1 != k2:
                return False
            if isinstance(v1, float) and isinstance(v2, float):
                if not math.isclose(v1, v2, rel_tol=1e-9, abs_tol=1e-9):
                    return False
            elif str(v1) != str(v2):
                return False
    return True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=100)
    p.add_argument("--hours", type=int, default=24)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--work", type=pathlib.Path, default=ROOT / "build" / "bench" / "rollups")
    p.add_argument("--json", type=pathlib.Path)
    args = p.parse_args()
    import tsbs  # noqa: E402 (bench/tsbs.py)

    data = tsbs.describe(tsbs.generate(args.hosts, args.hours))
    work = args.work / f"{args.hosts}h-{args.hours}h"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    figures = {"hosts": args.hosts, "hours": args.hours, "rows": data["rows"],
               "files": len(data["paths"]), "ingest": {}, "queries": {}}
    started = time.time()
    with open("/proc/loadavg") as f:
        figures["load_before"] = f.read().split()[:3]
    for system in PYTHONS:
        for n in (0, 1, 3):
            target = work / f"{system}-{n}"
            figures["ingest"].setdefault(system, {})[n] = run(system, {
                "op": "ingest", "target": str(target), "rollups": ROLLUPS[:n],
                "paths": data["paths"], "refresh_each": system in REFRESH_EACH})
    qs = queries(args.hosts, data["start_us"], data["end_us"])
    for system in PYTHONS:
        figures["queries"][system] = run(system, {
            "op": "query", "target": str(work / f"{system}-3"), "queries": qs,
            "repeats": args.repeats})
    with open("/proc/loadavg") as f:
        figures["load_after"] = f.read().split()[:3]
    figures["seconds"] = time.time() - started

    # Every answer checked before a figure is shown.
    for q in qs:
        name = q["name"]
        answers = {s: figures["queries"][s][name] for s in PYTHONS}
        for s, a in answers.items():
            if not same_rows(a["on"]["rows"], a["off"]["rows"]):
                raise SystemExit(f"{s} {name}: the routed answer differs from the raw one")
        if not same_rows(answers["ours"]["off"]["rows"], answers["tl07"]["off"]["rows"]):
            raise SystemExit(f"{name}: ours and 0.7 answer differently")
        for s in PYTHONS:
            for routing in ("on", "off"):
                answers[s][routing]["rows"] = len(answers[s][routing]["rows"])

    raw_mb = data["bytes"] / 1e6
    print(f"# Rollups: {args.hosts} hosts x {args.hours} h, {data['rows']:,} rows in "
          f"{len(data['paths'])} appends; load {' '.join(figures['load_before'])} before, "
          f"{' '.join(figures['load_after'])} after\n")
    print("## Ingest with rollups refreshed after every append\n")
    print("| system | rollups | seconds | rows/s | refresh ms per append | "
          "rollup bytes per raw MB |")
    print("|---|---|---|---|---|---|")
    for system, runs in figures["ingest"].items():
        base = statistics.median(runs[0]["appends"])
        for n, r in runs.items():
            per_append = (statistics.median(r["appends"]) - base) * 1e3
            print(f"| {system} | {n} | {r['seconds']:.2f} | {data['rows'] / r['seconds']:,.0f} "
                  f"| {per_append:.1f} | {r['rollup_bytes'] / raw_mb:,.0f} |")
    print("\n## Queries on the table with three rollups (ms; warm = median of "
          f"{args.repeats})\n")
    print("| query | ours routed | ours raw | ours raw/routed | 0.7 routed | 0.7 raw | "
          "0.7 raw/routed | ours/0.7 routed | answered from (ours / 0.7) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for q in qs:
        o, t = figures["queries"]["ours"][q["name"]], figures["queries"]["tl07"][q["name"]]
        print(f"| {q['name']} | {o['on']['warm_ms']:.1f} | {o['off']['warm_ms']:.1f} "
              f"| {o['off']['warm_ms'] / o['on']['warm_ms']:.1f}x | {t['on']['warm_ms']:.1f} "
              f"| {t['off']['warm_ms']:.1f} | {t['off']['warm_ms'] / t['on']['warm_ms']:.1f}x "
              f"| {o['on']['warm_ms'] / t['on']['warm_ms']:.2f} "
              f"| {','.join(o['on']['rollups']) or 'raw'} / {','.join(t['on']['rollups']) or 'raw'} |")
    print("\nFirst runs (ms), routed: " + ", ".join(
        f"{q['name']} ours {figures['queries']['ours'][q['name']]['on']['first_ms']:.0f} / "
        f"0.7 {figures['queries']['tl07'][q['name']]['on']['first_ms']:.0f}" for q in qs))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
