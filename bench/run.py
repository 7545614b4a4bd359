#!/usr/bin/env python3
"""Timelake side by side with its peers on the TSBS cpu-only data set (SPEC §12).

    .venv/bin/python bench/run.py --quick        # 100 hosts x 12 h, 3 repeats
    .venv/bin/python bench/run.py                # 100 hosts x 24 h and 1,000 x 12 h, 5 repeats
    .venv/bin/python bench/run.py --hosts 100,1000 --hours 24,12 --repeats 5 --out FILE.md
    .venv/bin/python bench/run.py --quick --s3   # the tables on a local S3 server instead
    .venv/bin/python bench/run.py --large        # 100 x 24 h, 1,000 x 12 h, 4,000 x 24 h (TSBS scale)
    .venv/bin/python bench/run.py --latest       # `latest` benchmark: bench/latest.py

In one run, on the same generated Parquet files (bench/tsbs.py):
  ingest   Timelake C++ (build/release/timelake_bench), PyIceberg 0.12 `append`
           and Timelake 0.7 `append`, one commit per input file, each system in
           a fresh process per repeat: rows/s and peak RSS.
  queries  the TSBS query set (bench/queries.py) on Timelake C++, Timelake 0.7,
           PyIceberg (its own table and ours), DuckDB (the input Parquet files,
           and our table through its iceberg extension), and pyarrow decoding the
           needed columns of our data files as the physical reference. Answers
           are cross-checked first; then warm (repeats in one process, median)
           and cold (a new process per run, median) latencies, and the storage
           requests of each cold query of ours (TIMELAKE_TRACE=storage).
Writes bench/results/<date>[-quick][-s3].md (printed at the end), a .json of the
raw figures and PNG plots beside it.

--latest runs the `latest` benchmark instead (bench/latest.py: Session::Latest
cold and warm beside the scan fallback and Timelake 0.7, 1,000 and 10,000 hosts
x 1 h, 9 repeats; with --quick 1,000 hosts, 5 repeats) and writes
bench/results/<date>-latest[-quick].md.

--s3 puts every table (and, for DuckDB, the input files) on a private
S3-compatible server on 127.0.0.1 started with scripts/s3server.py (versitygw),
so that storage requests are real HTTP requests.
"""

import argparse
import datetime as dt
import json
import math
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import queries as Q  # noqa: E402
import tsbs  # noqa: E402
import worker  # noqa: E402
import report  # noqa: E402

VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
TL07_PYTHON = ROOT / ".venv-tl07" / "bin" / "python"
WORKER = HERE / "worker.py"

# Query systems, in report order; "ours" is Timelake C++.
SYSTEMS = ["ours", "tl07", "pyiceberg", "pyiceberg-ours", "duckdb-parquet", "duckdb-iceberg",
           "pyarrow"]
# Systems a ratio compares against (the reference decode is not a peer).
PEERS = ["tl07", "pyiceberg", "pyiceberg-ours", "duckdb-parquet", "duckdb-iceberg"]
INGEST_SYSTEMS = ["ours", "pyiceberg", "tl07"]
TIMEOUT = 1800


def log(*args):
    print("bench:", *args, file=sys.stderr, flush=True)


def run_json(cmd, env=None):
    """Runs one benchmark process; returns (its JSON, wall seconds, stderr)."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{type(e).__name__}: {e}"[:300]}, time.perf_counter() - start, ""
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:300]}"}, wall, proc.stderr
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]), wall, proc.stderr
    except (IndexError, json.JSONDecodeError):
        return {"error": f"no JSON on stdout: {proc.stdout[-300:]!r}"}, wall, proc.stderr


# --- the systems' command lines -------------------------------------------------

class Setup:
    """Where each system's table lives for one data set. Local files go under
    `work`; with `s3_prefix` ("s3://bucket/run-…/<data set>") the tables go there."""

    def __init__(self, bench_bin, work, dataset, s3_prefix=None):
        self.bench_bin = bench_bin
        self.work = work
        self.dataset = dataset
        self.s3_prefix = s3_prefix
        self.targets = {}
        self.ingest = {}

    def failed(self, system):
        """Why `system` has no table to query (its ingest failed), or None."""
        r = self.ingest.get(system, {})
        return f"ingest failed: {r['error']}" if "error" in r else None

    def location(self, name):
        """A warehouse location: a local directory, or a URL on the S3 server."""
        if self.s3_prefix:
            return f"{self.s3_prefix}/{name}"
        return self.work / name


def ingest_cmd(setup, system, rep):
    files = setup.dataset["paths"]
    if system == "ours":
        return [setup.bench_bin, "-w", setup.location(f"ingest-ours-{rep}"), "ingest", "-t",
                Q.TIMELAKE_TABLE, *files]
    if system == "tl07":
        return [TL07_PYTHON, WORKER, "ingest", "--system", system, "--target",
                setup.location(f"ingest-tl07-{rep}"), *files]
    cmd = [VENV_PYTHON, WORKER, "ingest", "--system", system, "--target",
           setup.work / f"ingest-{system}-{rep}"]
    if setup.s3_prefix:
        cmd += ["--warehouse", setup.location(f"ingest-{system}-{rep}")]
    return cmd + files


def ingest_target(setup, system, rep):
    """What the query processes of `system` open after ingest number `rep`."""
    if system == "pyiceberg":
        return setup.work / f"ingest-{system}-{rep}"
    return setup.location(f"ingest-{system}-{rep}")


def query_cmd(setup, system, queries_file, repeats, only=None, results=None):
    target = setup.targets[system]
    if system == "ours":
        cmd = [setup.bench_bin, "-w", target, "query", "-q", queries_file,
               "--repeats", repeats]
    else:
        python = TL07_PYTHON if system == "tl07" else VENV_PYTHON
        cmd = [python, WORKER, "query", "--system", system, "--target", target,
               "--queries", queries_file, "--repeats", repeats]
    if only:
        cmd += ["--only", only]
    if results:
        cmd += ["--results", results]
    return cmd


def supports(system, q):
    if system == "ours":
        return True
    if system == "pyarrow":
        return "latest" not in q
    return worker.supports(system, q)


# --- ingest ------------------------------------------------------------------

def bench_ingest(setup, repeats):
    """Each system ingests the data set `repeats` times, each time into a new
    table in a new process; the last table of each is kept for the queries."""
    out = {s: [] for s in INGEST_SYSTEMS}
    kept = {}  # system -> the rep whose table the queries open: the last that worked
    for rep in range(repeats):
        for system in INGEST_SYSTEMS:
            result, wall, _ = run_json(ingest_cmd(setup, system, rep))
            result["wall_s"] = wall
            out[system].append(result)
            log(f"ingest {system} #{rep + 1}: "
                + (result.get("error") or f"{result['seconds']:.2f} s"))
            if "error" in result and system in kept:
                continue  # keep querying the table of an earlier ingest that worked
            if system in kept:  # local copies only: the S3 server's data goes when it stops
                shutil.rmtree(setup.work / f"ingest-{system}-{kept[system]}", ignore_errors=True)
            kept[system] = rep
            setup.targets[system] = ingest_target(setup, system, rep)
    summary = {}
    for system, runs in out.items():
        ok = [r for r in runs if "error" not in r]
        if not ok:
            summary[system] = {"error": runs[-1]["error"], "runs": runs}
            continue
        seconds = statistics.median(r["seconds"] for r in ok)
        summary[system] = {
            "seconds": seconds, "rows": ok[0]["rows"],
            "rows_per_s": ok[0]["rows"] / seconds if seconds else None,
            "peak_rss_kib": max(r["peak_rss_kib"] for r in ok), "runs": runs}
        if "rewritten_per_byte" in ok[0]:  # Timelake C++: its compaction's cost
            summary[system]["rewritten_per_byte"] = statistics.median(
                r["rewritten_per_byte"] for r in ok)
        failed = [r["error"] for r in runs if "error" in r]
        if failed:  # reported beside the median of the ingests that worked
            summary[system]["failed_runs"] = failed
    return summary


def version_number(name):
    return int(re.match(r"v(\d+)", name).group(1))


def latest_metadata(table_dir):
    """The newest vN.metadata.json of a table (a directory or an s3:// URL)."""
    table_dir = str(table_dir)
    if table_dir.startswith("s3://"):
        from pyarrow import fs
        infos = worker.s3_filesystem().get_file_info(
            fs.FileSelector(table_dir[len("s3://"):] + "/metadata"))
        names = [i.base_name for i in infos if re.match(r"v\d+\.metadata\.json$", i.base_name)]
        return f"{table_dir}/metadata/{max(names, key=version_number)}"
    files = pathlib.Path(table_dir).glob("metadata/v*.metadata.json")
    return max(files, key=lambda p: version_number(p.name))


def live_data_files(metadata):
    from pyiceberg.table import StaticTable
    table = StaticTable.from_metadata(str(metadata), properties=worker.pyiceberg_properties())
    paths = table.inspect.files().column("file_path").to_pylist()
    return [p[len("file://"):] if p.startswith("file://") else p for p in paths]


def input_files(setup):
    """The input files as DuckDB reads them: local paths, or copies on the S3 server."""
    if not setup.s3_prefix:
        return setup.dataset["paths"]
    from pyarrow import fs
    s3fs, out = worker.s3_filesystem(), []
    for path in setup.dataset["paths"]:
        url = setup.location(f"input/{pathlib.Path(path).name}")
        fs.copy_files(path, url[len("s3://"):], destination_filesystem=s3fs)
        out.append(url)
    return out


def resolve_targets(setup):
    """Points the query systems at the tables the ingest left."""
    if "error" in setup.ingest["ours"]:
        sys.exit(f"bench: Timelake C++ could not ingest: {setup.ingest['ours']['error']}")
    meta = latest_metadata(f"{setup.targets['ours']}/bench/cpu")
    setup.targets["pyiceberg-ours"] = meta
    setup.targets["duckdb-iceberg"] = meta
    files = setup.work / "input-files.json"
    files.write_text(json.dumps(input_files(setup)))
    setup.targets["duckdb-parquet"] = files
    live = setup.work / "live-files.json"
    live.write_text(json.dumps(live_data_files(meta)))
    setup.targets["pyarrow"] = live


# --- answers -------------------------------------------------------------------

def normalized_rows(table, columns=None):
    """Rows as tuples: timestamps as UTC microseconds, strings as str, sorted."""
    if columns:
        table = table.select(columns)
    cols = []
    for col in table.columns:
        t = col.type
        if pa.types.is_timestamp(t):
            col = pc.cast(pc.cast(col, pa.timestamp("us", tz=t.tz)), pa.int64())
        elif pa.types.is_string_view(t) or pa.types.is_large_string(t):
            col = pc.cast(col, pa.string())
        elif pa.types.is_dictionary(t):
            col = pc.cast(col, t.value_type)
        cols.append(col.to_pylist())
    rows = list(zip(*cols))

    def key(row):
        return tuple(round(v, 6) if isinstance(v, float) else v for v in row)
    return sorted(rows, key=key)


def same_value(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def compare(expected, got):
    """None when equal, else what differs."""
    if len(expected) != len(got):
        return f"{len(got)} rows, expected {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got)):
        if len(e) != len(g):
            return f"{len(g)} columns, expected {len(e)}"
        if not all(same_value(x, y) for x, y in zip(e, g)):
            return f"row {i}: {g!r}, expected {e!r}"
    return None


def read_arrow(path):
    with pa.memory_map(str(path)) as f:
        return pa.ipc.open_file(f).read_all()


def check_answers(setup, qs, queries_file):
    """Runs every query once per system, and compares each answer with ours
    (DuckDB on the Parquet files where ours failed)."""
    check_dir = setup.work / "answers"
    shutil.rmtree(check_dir, ignore_errors=True)
    errors = {}
    for system in SYSTEMS:
        if system == "pyarrow":
            continue
        if setup.failed(system):
            errors[system] = {q["name"]: setup.failed(system) for q in qs}
            continue
        result, _, _ = run_json(query_cmd(setup, system, queries_file, 0,
                                          results=check_dir / system))
        errors[system] = {q["name"]: q["error"] for q in result.get("queries", [])
                          if "error" in q}
        if "error" in result:
            errors[system] = {q["name"]: result["error"] for q in qs}
    checks = {}
    for q in qs:
        name = q["name"]
        ref_name = q.get("check_as", name)
        ref = None
        for ref_system in ("ours", "duckdb-parquet"):
            path = check_dir / ref_system / f"{ref_name}.arrow"
            if path.exists():
                ref = (ref_system, read_arrow(path))
                break
        cols = q.get("check_columns")
        expected = normalized_rows(ref[1], cols) if ref else None
        checks[name] = {}
        for system in SYSTEMS:
            if system == "pyarrow" or not supports(system, q):
                continue
            path = check_dir / system / f"{name}.arrow"
            if name in errors.get(system, {}):
                checks[name][system] = "error: " + errors[system][name]
            elif not path.exists():
                checks[name][system] = "error: no answer"
            elif expected is None:
                checks[name][system] = "unchecked"
            else:
                diff = compare(expected, normalized_rows(read_arrow(path), cols))
                checks[name][system] = "ok" if diff is None else "mismatch: " + diff
        bad = {s: c for s, c in checks[name].items() if c != "ok"}
        if bad:
            log(f"answers of {name}: {bad}")
    return checks


# --- latency -------------------------------------------------------------------

def storage_requests(setup, qs, queries_file):
    """The storage requests of one cold run of each query of ours."""
    env = dict(os.environ, TIMELAKE_TRACE="storage")
    out = {}
    for q in qs:
        result, _, stderr = run_json(query_cmd(setup, "ours", queries_file, 0, only=q["name"]),
                                     env=env)
        methods, total_bytes = {}, 0
        for line in stderr.splitlines():
            m = re.match(r"timelake storage: (\S+) \S+ (\d+) bytes", line)
            if m:
                methods[m.group(1)] = methods.get(m.group(1), 0) + 1
                total_bytes += int(m.group(2))
        out[q["name"]] = {"requests": sum(methods.values()), "by_method": methods,
                          "bytes": total_bytes, "error": result.get("error")}
    return out


def bench_warm(setup, qs, queries_file, repeats):
    out = {}
    for system in SYSTEMS:
        if setup.failed(system):
            out[system] = {"error": setup.failed(system)}
            continue
        result, wall, _ = run_json(query_cmd(setup, system, queries_file, repeats))
        out[system] = result
        log(f"warm {system}: " + (result.get("error") or f"{wall:.1f} s"))
    return out


def bench_cold(setup, qs, queries_file, repeats):
    """A new process per (query, system, repeat); the first run's time, which
    includes opening the table."""
    out = {s: {} for s in SYSTEMS}
    for rep in range(repeats):
        for q in qs:
            for system in SYSTEMS:
                if not supports(system, q) or setup.failed(system):
                    continue
                result, wall, _ = run_json(query_cmd(setup, system, queries_file, 0,
                                                     only=q["name"]))
                runs = out[system].setdefault(q["name"], [])
                if "error" in result:
                    runs.append({"error": result["error"]})
                    continue
                entry = (result.get("queries") or [{"error": "not run"}])[0]
                runs.append({"ms": entry.get("first_ms"), "error": entry.get("error"),
                             "process_s": wall})
        log(f"cold: repeat {rep + 1} of {repeats} done")
    summary = {s: {} for s in SYSTEMS}
    for system, per_query in out.items():
        for name, runs in per_query.items():
            ok = [r["ms"] for r in runs if r.get("ms") is not None and not r.get("error")]
            summary[system][name] = {
                "median_ms": statistics.median(ok) if ok else None,
                "runs_ms": ok,
                "process_s": statistics.median(r["process_s"] for r in runs if "process_s" in r)
                if any("process_s" in r for r in runs) else None,
                "error": next((r["error"] for r in runs if r.get("error")), None)}
    return summary


# --- the machine -----------------------------------------------------------------

def command_output(cmd):
    try:
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine(bench_bin):
    cpu = ""
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = 0
    for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem_kib = int(line.split()[1])
    lock = (ROOT / "rust" / "Cargo.lock").read_text()
    datafusion = re.search(r'name = "datafusion"\nversion = "([^"]+)"', lock)
    git = command_output(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    dirty = command_output(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])
    cli = ROOT / "build" / "release" / "timelake"
    versions = {
        "timelake (ours)": (command_output([cli, "--version"]) if cli.exists() else "?")
        + f", git {git}{' + uncommitted changes' if dirty else ''}",
        "DataFusion (ours)": datafusion.group(1) if datafusion else "?",
        "compiler": command_output(["c++", "--version"]).splitlines()[0]
        if command_output(["c++", "--version"]) else "?",
    }
    main_env, _, _ = run_json([VENV_PYTHON, WORKER, "versions"])
    tl07_env, _, _ = run_json([TL07_PYTHON, WORKER, "versions"])
    versions["timelake 0.7 (peer)"] = tl07_env.get("timelake", "?")
    for k in ("pyiceberg", "duckdb", "duckdb-ext-iceberg", "pyarrow", "sqlalchemy", "numpy",
              "matplotlib", "python"):
        versions[k] = main_env.get(k, "?")
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1),
        "os": platform.platform(), "versions": versions,
        "bench_bin": str(bench_bin),
    }


# --- main ----------------------------------------------------------------------

def parse_list(text):
    return [int(x) for x in str(text).split(",") if x.strip()]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="100 hosts x 12 h, 3 repeats (a few minutes)")
    p.add_argument("--large", action="store_true",
                   help="TSBS's standard scale: 4,000 hosts x 24 h (34.6 M rows) after "
                   "100 x 24 h and 1,000 x 12 h, 3 repeats, so that the report shows how each "
                   "figure grows (about an hour; `make bench-large`)")
    p.add_argument("--hosts", help="comma-separated host counts, one data set each")
    p.add_argument("--hours", help="comma-separated hours per data set (or one for all)")
    p.add_argument("--repeats", type=int, help="repeats of every timing (median)")
    p.add_argument("--ingest-repeats", type=int, help="ingests per system (default 3)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--rows-per-file", type=int, default=100_000,
                   help="rows per input file = rows per commit")
    p.add_argument("--bench-bin", default=str(ROOT / "build" / "release" / "timelake_bench"))
    p.add_argument("--work", default=str(ROOT / "build" / "bench" / "work"))
    p.add_argument("--out",
                   help="the Markdown report (default bench/results/<date>[-quick][-s3].md)")
    p.add_argument("--s3", action="store_true",
                   help="tables on a local S3 server (scripts/s3server.py) instead of disk")
    p.add_argument("--latest", action="store_true",
                   help="the `latest` benchmark instead (bench/latest.py): 1,000 and 10,000 "
                   "hosts x 1 h, 9 repeats; with --quick 1,000 hosts, 5 repeats")
    a = p.parse_args()

    if a.latest:
        import latest
        hosts = parse_list(a.hosts) if a.hosts else ([1000] if a.quick else [1000, 10000])
        hours = parse_list(a.hours) if a.hours else [1]
        if len(hours) == 1:
            hours = hours * len(hosts)
        if len(hours) != len(hosts):
            p.error("--hours needs one value, or one per --hosts value")
        latest.main(a, hosts, hours, a.repeats or (5 if a.quick else 9))
        return

    if a.quick and a.large:
        p.error("--quick and --large exclude each other")
    default_hosts = [100] if a.quick else [100, 1000, 4000] if a.large else [100, 1000]
    default_hours = [12] if a.quick else [24, 12, 24] if a.large else [24, 12]
    hosts = parse_list(a.hosts) if a.hosts else default_hosts
    hours = parse_list(a.hours) if a.hours else default_hours[:len(hosts)]
    if len(hours) == 1:
        hours = hours * len(hosts)
    if len(hours) != len(hosts):
        p.error("--hours needs one value, or one per --hosts value")
    repeats = a.repeats or (3 if a.quick or a.large else 5)
    ingest_repeats = a.ingest_repeats or 3
    stamp = dt.date.today().isoformat() + ("-quick" if a.quick else "") + \
        ("-large" if a.large else "") + ("-s3" if a.s3 else "")
    out = pathlib.Path(a.out) if a.out else HERE / "results" / f"{stamp}.md"
    for need in (pathlib.Path(a.bench_bin), TL07_PYTHON):
        if not need.exists():
            sys.exit(f"bench: {need} is missing: run `make release` and `scripts/setup.sh test`")
    # A private copy of the driver: a rebuild of build/release during the run
    # neither breaks it nor mixes two builds in one report.
    pathlib.Path(a.work).mkdir(parents=True, exist_ok=True)
    bench_bin = pathlib.Path(a.work) / "timelake_bench"
    shutil.copy2(a.bench_bin, bench_bin)

    server = start_s3_server() if a.s3 else None
    try:
        info = run(a, hosts, hours, repeats, ingest_repeats, bench_bin, server)
    finally:
        if server:
            stop_s3_server(server[0])

    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(info, indent=1, default=str))
    text = report.write(info, out)
    print(text)
    log(f"wrote {out} in {info['minutes']:.1f} min")


def start_s3_server():
    """Starts scripts/s3server.py; points this process's environment (and so
    every benchmark process's) at it. Returns (process, its JSON line)."""
    script = ROOT / "scripts" / "s3server.py"
    if not script.exists():
        sys.exit(f"bench: --s3 needs {script}")
    proc = subprocess.Popen([str(VENV_PYTHON), str(script)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # the launcher bounds its own wait (30 s)
    if not line:
        proc.wait()
        sys.exit("bench: scripts/s3server.py did not start a server")
    server = json.loads(line)
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        del os.environ[k]
    os.environ.update(
        TIMELAKE_BENCH_S3="1", AWS_ENDPOINT=server["endpoint"], AWS_ALLOW_HTTP="true",
        AWS_REGION=server["region"], AWS_ACCESS_KEY_ID=server["access_key_id"],
        AWS_SECRET_ACCESS_KEY=server["secret_access_key"])
    log(f"S3 server at {server['endpoint']}, bucket {server['bucket']}")
    return proc, server


def stop_s3_server(proc):
    proc.stdin.close()  # the launcher stops the server and deletes its data
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run(a, hosts, hours, repeats, ingest_repeats, bench_bin, server):
    started = time.time()
    info = {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "load_before": os.getloadavg(), "machine": machine(bench_bin),
            "repeats": repeats, "ingest_repeats": ingest_repeats, "seed": a.seed,
            "rows_per_file": a.rows_per_file, "quick": a.quick, "large": a.large,
            "datasets": [],
            "storage": "local disk"}
    run_id = dt.datetime.now().strftime("run-%Y%m%d-%H%M%S")
    if server:
        versitygw = re.search(r'versitygw_version=(\S+)',
                              (ROOT / "scripts" / "setup.sh").read_text())
        info["storage"] = (f"S3: versitygw {versitygw.group(1) if versitygw else ''} "
                           "(posix backend) on 127.0.0.1, plain HTTP")
    for h, hr in zip(hosts, hours):
        log(f"data set: {h} hosts x {hr} h")
        directory = tsbs.generate(h, hr, a.seed, a.rows_per_file)
        dataset = tsbs.describe(directory)
        work = pathlib.Path(a.work) / f"{h}x{hr}h"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        s3_prefix = f"s3://{server[1]['bucket']}/{run_id}/{h}x{hr}h" if server else None
        setup = Setup(bench_bin, work, dataset, s3_prefix)
        ds = {"hosts": h, "hours": hr, "rows": dataset["rows"], "files": len(dataset["paths"]),
              "input_bytes": dataset["bytes"]}
        ds["ingest"] = setup.ingest = bench_ingest(setup, ingest_repeats)
        if any("error" in ds["ingest"][s] for s in ("ours", "tl07", "pyiceberg")):
            log("an ingest failed: its queries are reported as errors")
        qs = Q.build(a.seed, h, dataset["start_us"], dataset["end_us"])
        queries_file = work / "queries.json"
        queries_file.write_text(json.dumps(qs, indent=1))
        resolve_targets(setup)
        ds["queries"] = [{k: q.get(k) for k in ("name", "sql", "duckdb")} for q in qs]
        log("checking answers")
        ds["checks"] = check_answers(setup, qs, queries_file)
        log("counting storage requests")
        ds["storage"] = storage_requests(setup, qs, queries_file)
        log("warm runs")
        ds["warm"] = bench_warm(setup, qs, queries_file, repeats)
        log("cold runs")
        ds["cold"] = bench_cold(setup, qs, queries_file, repeats)
        info["datasets"].append(ds)
    info["load_after"] = os.getloadavg()
    info["minutes"] = (time.time() - started) / 60
    info["s3"] = bool(server)
    return info


if __name__ == "__main__":
    main()
