"""The `latest` benchmark (issue #6): the newest row of every series, cold and warm,
from the last-value index beside a scan, and beside Timelake 0.7.

    .venv/bin/python bench/run.py --latest           # 1,000 and 10,000 hosts x 1 h, 9 repeats
    .venv/bin/python bench/run.py --latest --quick   # 1,000 hosts x 1 h, 5 repeats
    .venv/bin/python bench/run.py --latest --hosts 1000,10000 --hours 1 --repeats 9

On the TSBS cpu-only data (bench/tsbs.py, series key `hostname`), appended as one
commit per input file by Timelake C++ (timelake_bench ingest) and by Timelake 0.7
into tables of their own, the paths timed are:

  ours-latest   Timelake C++ Session::Latest (the last-value index, inlined in the
                head object: a cold process reads the head and one LIST)
  ours-sql      Timelake C++ SQL: the ROW_NUMBER() window query, which the
                last-value rewrite answers from the index
  ours-scan     Timelake C++ scan fallback: the same window query with
                `WHERE usage_user >= 0`, a filter that keeps every row (TSBS metrics
                are 0..100) but defeats the rewrite; EXPLAIN is checked to show a
                WindowAggr over the data files and no last-value index
  duckdb-scan   DuckDB `QUALIFY row_number() ... = 1` over our live data files
  tl07-latest   Timelake 0.7 lake.latest() on its own table
  tl07-sql      Timelake 0.7 SQL: the same window query (0.7 rewrites it too)

Each path: its answer cross-checked against Session::Latest's (hostname, time and
the ten metrics; one row per host, each at the data set's last timestamp); warm =
median of the repeats after a first run in one process; cold = a new process per
run, the time from opening the lake (or DuckDB connection) to the answer, median
of the repeats; and, for ours, the storage requests of one cold run
(TIMELAKE_TRACE=storage). Writes bench/results/<date>-latest[-quick][-s3].md and
.json (`python bench/latest.py RESULTS.json` or bench/report.py redoes the report).
With --s3 both tables are on a local S3 server (scripts/s3server.py), as in
bench/run.py --s3, so the storage requests are HTTP requests.
"""

import datetime as dt
import json
import os
import pathlib
import shutil
import statistics
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import queries as Q  # noqa: E402
import run as R  # noqa: E402
import tsbs  # noqa: E402

COLUMNS = ["hostname", "time"] + Q.METRICS
# Keeps every TSBS row (metrics are 0..100) but is a filter on a value column, so the
# last-value rewrite must not apply: the newest row per host is then computed by a scan.
SCAN_FILTER = "usage_user >= 0"

# (path, system, query name, label, how it answers)
PATHS = [
    ("ours-latest", "ours", "latest-api", "Timelake C++ `Session::Latest`",
     "last-value index, inlined in the head"),
    ("ours-sql", "ours", "latest-sql", "Timelake C++ SQL window query",
     "last-value rewrite (index)"),
    ("ours-scan", "ours", "scan-fallback", f"Timelake C++ SQL window query + `{SCAN_FILTER}`",
     "scan fallback (WindowAggr over the data files)"),
    ("duckdb-scan", "duckdb-parquet", "duckdb-qualify", "DuckDB `QUALIFY` on our data files",
     "scan (second reference)"),
    ("tl07-latest", "tl07", "latest-api", "Timelake 0.7 `lake.latest()`",
     "0.7's last-value index, own table"),
    ("tl07-sql", "tl07", "latest-sql", "Timelake 0.7 SQL window query",
     "0.7's rewrite, own table"),
]
SYSTEMS = ["ours", "tl07", "duckdb-parquet"]


def window_sql(where=None):
    cols = ", ".join(COLUMNS)
    inner = f"SELECT {cols}, ROW_NUMBER() OVER (PARTITION BY hostname ORDER BY time DESC) AS rn " \
            f"FROM {Q.TIMELAKE_TABLE}" + (f" WHERE {where}" if where else "")
    return f"SELECT {cols} FROM ({inner}) WHERE rn = 1"


def build_queries():
    cols = ", ".join(COLUMNS)
    return [
        {"name": "latest-api", "latest": Q.TIMELAKE_TABLE},
        {"name": "latest-sql", "sql": window_sql()},
        {"name": "scan-fallback", "sql": window_sql(SCAN_FILTER)},
        {"name": "duckdb-qualify",
         "duckdb": f"SELECT {cols} FROM {Q.DUCKDB_TABLE} QUALIFY row_number() OVER "
                   f"(PARTITION BY hostname ORDER BY time DESC) = 1"},
        {"name": "explain-latest-sql", "sql": "EXPLAIN " + window_sql()},
        {"name": "explain-scan-fallback", "sql": "EXPLAIN " + window_sql(SCAN_FILTER)},
    ]


def load():
    return os.getloadavg()[0]


def one_process(setup, system, queries_file, name, repeats, results=None):
    """One process running query `name` of `system`: (its entry or an error, wall s, peak RSS)."""
    cmd = R.query_cmd(setup, system, queries_file, repeats, only=name, results=results)
    result, wall, _ = R.run_json(cmd)
    if "error" in result:
        return {"error": result["error"]}, wall, None
    entry = (result.get("queries") or [{"error": "not run"}])[0]
    return entry, wall, result.get("peak_rss_kib")


def check_plans(setup, queries_file):
    """EXPLAIN of the rewritten and the fallback SQL (through timelake_bench, so the
    same build): the fallback must scan (WindowAggr, no last-value index) and the
    plain window query must read the index."""
    out = {}
    plan_dir = setup.work / "plans"
    for name, want_index in (("explain-latest-sql", True), ("explain-scan-fallback", False)):
        entry, _, _ = one_process(setup, "ours", queries_file, name, 0, results=plan_dir)
        path = plan_dir / f"{name}.arrow"
        if "error" in entry or not path.exists():
            out[name] = {"ok": False, "error": entry.get("error", "no plan")}
            continue
        plans = {r["plan_type"]: r["plan"] for r in R.read_arrow(path).to_pylist()}
        text = "\n".join(plans.values())
        physical = plans.get("physical_plan", "")
        has_window = "WindowAggr" in plans.get("logical_plan", "")
        # The index is read from its file ("metadata/lvi-…"), or its rows come
        # from the engine's decoded copy as Arrow C data: an in-memory source
        # ("partition_sizes=[…]").
        has_index = "metadata/lvi-" in physical or "partition_sizes=" in physical
        has_data = "/data/" in physical
        ok = (has_index and not has_window) if want_index else \
            (has_window and has_data and not has_index)
        out[name] = {"ok": ok, "window_aggr": has_window, "reads_index": has_index,
                     "reads_data_files": has_data, "plan": text}
    return out


def check_answers(setup, queries_file, dataset):
    """Every path once, its answer compared with Session::Latest's."""
    answers = setup.work / "answers"
    shutil.rmtree(answers, ignore_errors=True)
    got = {}
    for path, system, name, _, _ in PATHS:
        entry, _, _ = one_process(setup, system, queries_file, name, 0,
                                  results=answers / path)
        f = answers / path / f"{name}.arrow"
        got[path] = ("error: " + entry["error"]) if "error" in entry else \
            (R.read_arrow(f) if f.exists() else "error: no answer")
    ref = got["ours-latest"]
    checks = {}
    if isinstance(ref, str):
        return {p: "no reference: " + ref for p, *_ in PATHS}
    expected = R.normalized_rows(ref, COLUMNS)
    # Independent of any system: one row per host, each at the last timestamp.
    last_us = dataset["end_us"] - tsbs.INTERVAL_US
    hosts = {f"host_{h}" for h in range(dataset["hosts"])}
    sane = (len(expected) == len(hosts) and {r[0] for r in expected} == hosts
            and all(r[1] == last_us for r in expected))
    for path, *_ in PATHS:
        if isinstance(got[path], str):
            checks[path] = got[path]
            continue
        diff = R.compare(expected, R.normalized_rows(got[path], COLUMNS))
        checks[path] = "ok" if diff is None else "mismatch: " + diff
    if not sane:
        checks["ours-latest"] = "wrong: not one row per host at the last timestamp"
    bad = {p: c for p, c in checks.items() if c != "ok"}
    if bad:
        R.log(f"answers: {bad}")
    return checks


def storage(setup, queries_file):
    """Storage requests of one cold run of each of our paths."""
    qs = [{"name": name} for _, system, name, _, _ in PATHS if system == "ours"]
    return R.storage_requests(setup, qs, queries_file)


def bench_warm(setup, queries_file, repeats):
    out = {}
    for path, system, name, _, _ in PATHS:
        entry, wall, rss = one_process(setup, system, queries_file, name, repeats)
        out[path] = {"median_ms": entry.get("median_ms"), "first_ms": entry.get("first_ms"),
                     "times_ms": entry.get("times_ms"), "error": entry.get("error"),
                     "peak_rss_kib": rss}
        R.log(f"warm {path}: " + (entry.get("error") or f"{entry['median_ms']:.3f} ms "
                                  f"({wall:.1f} s)"))
    return out


def bench_cold(setup, queries_file, repeats):
    """A new process per (path, repeat), the paths interleaved within each repeat."""
    runs = {p: [] for p, *_ in PATHS}
    for rep in range(repeats):
        for path, system, name, _, _ in PATHS:
            entry, wall, _ = one_process(setup, system, queries_file, name, 0)
            runs[path].append({"ms": entry.get("first_ms"), "process_s": wall,
                               "error": entry.get("error")})
        R.log(f"cold: repeat {rep + 1} of {repeats} done")
    out = {}
    for path, rs in runs.items():
        ok = [r for r in rs if r["ms"] is not None and not r["error"]]
        out[path] = {
            "median_ms": statistics.median(r["ms"] for r in ok) if ok else None,
            "runs_ms": [r["ms"] for r in ok],
            "process_s": statistics.median(r["process_s"] for r in ok) if ok else None,
            "error": next((r["error"] for r in rs if r["error"]), None)}
    return out


def object_size(location):
    """The size of a local file or of an s3:// object, None if missing."""
    location = str(location)
    if location.startswith("s3://"):
        from pyarrow import fs
        info = R.worker.s3_filesystem().get_file_info(location[len("s3://"):])
        return info.size if info.type == fs.FileType.File else None
    path = pathlib.Path(location)
    return path.stat().st_size if path.exists() else None


def run_dataset(a, bench_bin, hosts, hours, repeats, work_root, loads, s3_prefix=None):
    R.log(f"latest: {hosts} hosts x {hours} h")
    directory = tsbs.generate(hosts, hours, a.seed, a.rows_per_file)
    dataset = tsbs.describe(directory)
    work = work_root / f"{hosts}x{hours}h"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    setup = R.Setup(bench_bin, work, dataset,
                    f"{s3_prefix}/{hosts}x{hours}h" if s3_prefix else None)
    ds = {"hosts": hosts, "hours": hours, "rows": dataset["rows"],
          "files": len(dataset["paths"]), "input_bytes": dataset["bytes"], "ingest": {}}
    for system in ("ours", "tl07"):
        result, wall, _ = R.run_json(R.ingest_cmd(setup, system, 0))
        result["wall_s"] = wall
        ds["ingest"][system] = setup.ingest[system] = result
        setup.targets[system] = R.ingest_target(setup, system, 0)
        R.log(f"ingest {system}: " + (result.get("error") or f"{result['seconds']:.2f} s"))
    if "error" in ds["ingest"]["ours"]:
        sys.exit(f"bench: Timelake C++ could not ingest: {ds['ingest']['ours']['error']}")
    meta = R.latest_metadata(f"{setup.targets['ours']}/bench/cpu")
    live = R.live_data_files(meta)
    ds["live_files"] = len(live)
    files = work / "live-files.json"
    files.write_text(json.dumps(live))
    setup.targets["duckdb-parquet"] = files
    ds["head_bytes"] = object_size(f"{setup.targets['ours']}/bench/cpu/metadata/timelake-head")
    queries_file = work / "queries.json"
    qs = build_queries()
    queries_file.write_text(json.dumps(qs, indent=1))
    ds["queries"] = {q["name"]: q.get("sql") or q.get("duckdb") or f"latest({q['latest']})"
                     for q in qs}
    loads.append(load())
    R.log("checking plans and answers")
    ds["plans"] = check_plans(setup, queries_file)
    if not ds["plans"]["explain-scan-fallback"]["ok"]:
        sys.exit("bench: the scan fallback query does not scan:\n"
                 + ds["plans"]["explain-scan-fallback"].get("plan", "")[:2000])
    ds["checks"] = check_answers(setup, queries_file, dataset)
    ds["storage"] = storage(setup, queries_file)
    loads.append(load())
    R.log("warm runs")
    ds["warm"] = bench_warm(setup, queries_file, repeats)
    loads.append(load())
    R.log("cold runs")
    ds["cold"] = bench_cold(setup, queries_file, repeats)
    loads.append(load())
    return ds


def main(a, hosts, hours, repeats):
    """Runs the latest benchmark (bench/run.py --latest) and writes its report."""
    stamp = dt.date.today().isoformat() + "-latest" + ("-quick" if a.quick else "") + \
        ("-s3" if a.s3 else "")
    out = pathlib.Path(a.out) if a.out else HERE / "results" / f"{stamp}.md"
    for need in (pathlib.Path(a.bench_bin), R.TL07_PYTHON):
        if not need.exists():
            sys.exit(f"bench: {need} is missing: run `make release` and `scripts/setup.sh test`")
    work_root = pathlib.Path(a.work) / "latest"
    work_root.mkdir(parents=True, exist_ok=True)
    bench_bin = work_root / "timelake_bench"  # a private copy, as bench/run.py does
    shutil.copy2(a.bench_bin, bench_bin)
    started = time.time()
    loads = [load()]
    info = {"mode": "latest",
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "load_before": os.getloadavg(), "machine": R.machine(bench_bin),
            "repeats": repeats, "seed": a.seed, "rows_per_file": a.rows_per_file,
            "quick": a.quick, "scan_filter": SCAN_FILTER, "datasets": [],
            "s3": a.s3, "storage": "local disk"}
    server = R.start_s3_server() if a.s3 else None
    try:
        s3_prefix = None
        if server:
            s3_prefix = f"s3://{server[1]['bucket']}/" + \
                dt.datetime.now().strftime("latest-%Y%m%d-%H%M%S")
            info["storage"] = "S3: versitygw (posix backend) on 127.0.0.1, plain HTTP"
        for h, hr in zip(hosts, hours):
            info["datasets"].append(run_dataset(a, bench_bin, h, hr, repeats, work_root,
                                                loads, s3_prefix))
    finally:
        if server:
            R.stop_s3_server(server[0])
    info["load_after"] = os.getloadavg()
    info["load_samples"] = loads + [load()]
    info["minutes"] = (time.time() - started) / 60
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(info, indent=1, default=str))
    text = write(info, out)
    print(text)
    R.log(f"wrote {out} in {info['minutes']:.1f} min")


# --- the report ------------------------------------------------------------------

def fmt_ms(ms):
    if ms is None:
        return "–"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 10:
        return f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"
    if ms >= 1:
        return f"{ms:.2f} ms"
    return f"{ms:.3f} ms"


def fmt_ratio(r):
    """Two decimals, two significant digits below 0.1, and the inverse when below 1."""
    if r is None:
        return "–"
    if r >= 100:
        text = f"**{r:,.0f}×**"
    elif r >= 0.1:
        text = f"**{r:.2f}×**"
    else:
        text = f"**{r:.2g}×**"
    return text + (f" (1/{1 / r:,.0f})" if r < 0.5 else "")


def fmt_bytes(n):
    if n is None:
        return "–"
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.0f} KiB"
    return f"{n} B"


def ds_name(ds):
    return f"{ds['hosts']:,} hosts × {ds['hours']} h"


def timing(ds, kind, path):
    """A path's median time, None if it failed or its answer differed."""
    if ds["checks"].get(path) != "ok":
        return None
    return ds[kind].get(path, {}).get("median_ms")


def ratio(ds, kind, num, den):
    a, b = timing(ds, kind, num), timing(ds, kind, den)
    return a / b if a is not None and b else None


def requests_cell(ds, path):
    system, name = next((s, n) for p, s, n, _, _ in PATHS if p == path)
    if system != "ours":
        return "n/a"
    s = ds["storage"].get(name)
    if not s:
        return "n/a"
    if s.get("error"):
        return "error"
    by = ", ".join(f"{n} {m}" for m, n in sorted(s["by_method"].items()))
    return f"{s['requests']} ({by}; {fmt_bytes(s['bytes'])})"


def summary_rows(info):
    """(data set, cold ours/0.7, warm ours/0.7, cold index/scan, warm index/scan,
    cold requests) per data set: the README's figures."""
    rows = []
    for ds in info["datasets"]:
        s = ds["storage"].get("latest-api", {})
        rows.append((ds_name(ds), ratio(ds, "cold", "ours-latest", "tl07-latest"),
                     ratio(ds, "warm", "ours-latest", "tl07-latest"),
                     ratio(ds, "cold", "ours-latest", "ours-scan"),
                     ratio(ds, "warm", "ours-latest", "ours-scan"),
                     s.get("requests")))
    return rows


def render(info):
    m = info["machine"]
    date = info["started"][:10]
    n = info["repeats"]
    samples = info.get("load_samples") or [info["load_before"][0], info["load_after"][0]]
    s3 = info.get("s3", False)
    kind = ", ".join(k for k, on in (("quick", info["quick"]), ("tables on S3", s3)) if on)
    lines = [f"# Timelake `latest` benchmark, {date}{f' ({kind})' if kind else ''}", ""]
    lines += [
        "> **Noisy figures.** Measured on the project's shared 2-core machine, which other "
        "people use at the same time (load average "
        f"{info['load_before'][0]:.1f} at the start, {info['load_after'][0]:.1f} at the end, "
        f"{min(samples):.1f}–{max(samples):.1f} between phases, this run's own processes "
        "included). Compare ratios within this "
        "report, not absolute times across reports. **Below 1 means the first named is "
        "faster.**",
        "",
        f"Command: `bench/run.py --latest{' --quick' if info['quick'] else ''}"
        f"{' --s3' if s3 else ''}` "
        f"(`make bench-{'quick' if info['quick'] else 'latest'}"
        f"{' BENCH_ARGS=--s3' if s3 else ''}`, "
        f"{info['minutes']:.1f} min). Seed {info['seed']}; {n} repeats of every timing. "
        "Issue #6: cold and warm `latest` for 1,000 and 10,000 series, beside the scan "
        "fallback and beside Timelake 0.7.",
        "", "## Machine", "", "| | |", "|---|---|",
        f"| CPU | {m['cpu']} |", f"| cores | {m['cores']} |",
        f"| memory | {m['memory_gib']} GiB |", f"| OS | {m['os']} |",
        f"| storage | {info.get('storage', 'local disk')} |",
    ]
    versions = {k: v for k, v in m["versions"].items()
                if k in ("timelake (ours)", "DataFusion (ours)", "compiler",
                         "timelake 0.7 (peer)", "duckdb", "pyarrow", "python")}
    lines += [f"| {k} | {v} |" for k, v in versions.items()]
    lines += [
        "", "## How it is measured", "",
        "- Data: TSBS `cpu-only` rows from `bench/tsbs.py` (one row per host every 10 s, "
        "10 string tags, 10 int64 metrics in 0..100; series key `hostname`), as Parquet "
        f"files of {info['rows_per_file']:,} rows, each appended as one commit — by Timelake "
        "C++ (`timelake_bench ingest`: `Table::Append`, day chunks) and by Timelake 0.7 "
        "(`append`) into tables of their own. Every file holds every host, so a scan must "
        "read all of them.",
        "- Paths, all run through the systems' public APIs in fresh processes "
        "(`timelake_bench query`, `bench/worker.py query`):",
    ]
    for path, system, name, label, how in PATHS:
        lines.append(f"  - `{path}`: {label} — {how}.")
    lines += [
        f"- The scan fallback's `WHERE {info['scan_filter']}` keeps every row (TSBS metrics "
        "are 0..100) but filters a value column, so the last-value rewrite may not apply; "
        "`EXPLAIN` (through `timelake_bench`, the same build) is checked before any timing: "
        "the fallback's plan has a `WindowAggr` over the data files and no "
        "index, the plain window query's plan reads the index (its `lvi-` file, or the "
        "engine's decoded rows as an in-memory source) and has no "
        "`WindowAggr`. (A filter such as `usage_user IS NOT NULL OR usage_user IS NULL` does "
        "not do: the optimizer folds it away on a NOT NULL column and the rewrite applies.)",
        "- Answers: every path's answer is compared with `Session::Latest`'s on hostname, "
        "time and the ten metrics (rows sorted); `Session::Latest`'s is also checked to hold "
        "one row per host, each at the data set's last timestamp. `Session::Latest` and "
        "`lake.latest()` return every column (22); the SQL paths select those 12.",
        "- Cold: a new process per run; the time from opening the lake (DuckDB: the "
        "connection and the view over the files) to the answer, library loading and imports "
        f"excluded; median of {n}. *process* is the whole process's wall time (start-up, "
        "imports and exit included: a C++ binary against a Python interpreter), for "
        "context only. The paths run interleaved within each repeat.",
        f"- Warm: in one process, a first run, then the median of {n} runs. Both Timelakes "
        "reuse the table version they loaded (C++: `timelake.version-check-interval`, 1 s).",
        "- Storage requests: one cold run of each of our paths with `TIMELAKE_TRACE=storage`, "
        "counting the `timelake storage: …` lines"
        + (" (each one an HTTP request to the S3 server)." if s3 else
           " (local disk: they stand for the requests an object store would see)."),
        "",
        "## Summary", "",
        "| data set | cold: ours / 0.7 | warm: ours / 0.7 | cold: index / scan fallback | "
        "warm: index / scan fallback | storage requests of a cold `Session::Latest` |",
        "|---|---|---|---|---|---|",
    ]
    for name, c07, w07, cscan, wscan, req in summary_rows(info):
        lines.append(f"| {name} | {fmt_ratio(c07)} | {fmt_ratio(w07)} | {fmt_ratio(cscan)} | "
                     f"{fmt_ratio(wscan)} | {req if req is not None else '–'} |")
    lines += ["", "*ours* is `Session::Latest`, *0.7* is `lake.latest()`, *scan fallback* "
              "is `ours-scan`."]
    for ds in info["datasets"]:
        lines += [
            "", f"## {ds_name(ds)} ({ds['rows']:,} rows)", "",
            f"{ds['files']} commits of {info['rows_per_file']:,} rows; our table has "
            f"{ds['live_files']} live data files and a head object of "
            f"{fmt_bytes(ds['head_bytes'])}. Ingest (one run, for context): Timelake C++ "
            + ingest_cell(ds, "ours") + ", Timelake 0.7 " + ingest_cell(ds, "tl07") + ".",
            "",
            "| path | answers | cold | cold process | warm | cold: `ours-latest` / path | "
            "warm: `ours-latest` / path | storage requests, cold (bytes) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for path, _, _, label, _ in PATHS:
            cold, warm = ds["cold"].get(path, {}), ds["warm"].get(path, {})
            proc = cold.get("process_s")
            check = ds["checks"].get(path, "?")
            lines.append("| " + " | ".join([
                f"`{path}` {label}", "ok" if check == "ok" else check,
                fmt_ms(cold.get("median_ms")) if not cold.get("error") else "error",
                fmt_ms(proc * 1000) if proc is not None else "–",
                fmt_ms(warm.get("median_ms")) if not warm.get("error") else "error",
                "–" if path == "ours-latest" else fmt_ratio(ratio(ds, "cold", "ours-latest",
                                                                  path)),
                "–" if path == "ours-latest" else fmt_ratio(ratio(ds, "warm", "ours-latest",
                                                                  path)),
                requests_cell(ds, path)]) + " |")
        errors = [(p, k, ds[k][p]["error"]) for k in ("warm", "cold") for p, *_ in PATHS
                  if ds[k].get(p, {}).get("error")]
        if errors:
            lines += ["", "Errors:", ""] + [f"- `{p}` ({k}): {e}" for p, k, e in errors]
        plans = ds["plans"]
        lines += ["", "Plans: " + "; ".join(
            f"`{name[len('explain-'):]}` " + ("as expected" if p.get("ok") else "**unexpected**")
            + (f" (WindowAggr: {'yes' if p.get('window_aggr') else 'no'}, last-value index: "
               f"{'yes' if p.get('reads_index') else 'no'})" if "plan" in p else "")
            for name, p in plans.items()) + "."]
    lines += ["", "<details><summary>The queries</summary>", ""]
    for name, text in info["datasets"][0]["queries"].items():
        lines.append(f"- `{name}`: `{text}`")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def ingest_cell(ds, system):
    r = ds["ingest"].get(system, {})
    if "error" in r:
        return f"failed ({r['error']})"
    return f"{r['seconds']:.2f} s ({ds['rows'] / r['seconds'] / 1e6:.2f} M rows/s)"


def write(info, out):
    text = render(info)
    pathlib.Path(out).write_text(text)
    return text


if __name__ == "__main__":
    src = pathlib.Path(sys.argv[1])
    print(write(json.loads(src.read_text()), src.with_suffix(".md")))
