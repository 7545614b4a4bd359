"""What the Python package costs over the C++ API, and how it compares with Timelake 0.7's
Python package, in one run on the same data (issue #19; SPEC §12's TSBS cpu-only set).

    .venv/bin/python bench/python_overhead.py [--hosts 100] [--hours 12] [--repeats 5]

Three peers, each in a process of its own per phase, on the same Parquet files
(bench/tsbs.py generates them once into build/bench/data):

- C++: build/release/timelake_bench (the public C++ API, no Python), `ingest --no-maintain`
  and `query`;
- Python: this package (`import timelake` from .venv);
- 0.7: Timelake 0.7's package (`.venv-tl07`).

Ingest appends each file as one commit with inline maintenance off and times the appends only
(reading the Parquet file is not timed, for any peer). Queries are bench/queries.py's TSBS set (and `latest`):
the first run, then `--repeats` warm runs (their median). For this package, every result is
also checked for copies: the buffers of the pyarrow.Table it returns must be at the addresses
the engine produced them at. Reported as ratios to the C++ API (goal: Python ingest within
5%, no copy of results); absolute times are printed beside them for reference only.
Writes bench/results/<date>-python-overhead.md unless --no-write.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TL07_PYTHON = ROOT / ".venv-tl07" / "bin" / "python"
OUR_PYTHON = ROOT / ".venv" / "bin" / "python"
TABLE = "bench.cpu"


# --- the worker: runs under either Python, with either timelake package ------------------

def worker_ingest(warehouse, files):
    import pyarrow.parquet as pq
    import timelake

    lake = timelake.Lake(warehouse)
    table = None
    append_ms = []
    rows = 0
    for path in files:
        # The reader timelake_bench uses (parquet::arrow::FileReader::ReadTable,
        # one chunk per row group), so that every peer appends the same
        # batches; pq.read_table would cut them at 64 Ki rows.
        data = pq.ParquetFile(path).read()
        if table is None:
            table = lake.create_table(TABLE, data.schema, time_column="time",
                                      series_key=["hostname"], chunk="day")
        start = time.perf_counter()
        stats = table.append(data, maintain=False)
        append_ms.append((time.perf_counter() - start) * 1000)
        rows += stats["rows"]
    return {"rows": rows, "append_ms": append_ms}


def worker_query(warehouse, queries, repeats):
    import pyarrow as pa
    import timelake

    start = time.perf_counter()
    lake = timelake.Lake(warehouse)
    native = getattr(lake, "_native", None)
    checks_copies = native is not None and hasattr(native, "sql") and \
        hasattr(timelake, "TimelakeError")
    out = []
    first_query = True

    def run(q):
        return lake.latest(q["latest"]) if "latest" in q else lake.sql(q["sql"])

    for q in queries:
        begin = start if first_query else time.perf_counter()
        first_query = False
        result = run(q)
        first_ms = (time.perf_counter() - begin) * 1000
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            run(q)
            times.append((time.perf_counter() - t) * 1000)
        entry = {"name": q["name"], "rows": result.num_rows, "first_ms": first_ms,
                 "median_ms": statistics.median(times) if times else first_ms}
        if checks_copies:
            stream = native.latest(q["latest"]) if "latest" in q else \
                native.sql(q["sql"], "default")
            engine = stream.buffer_addresses()
            table = pa.table(stream)
            ours = [b.address if b is not None else 0
                    for col in table.columns for chunk in col.chunks for b in chunk.buffers()]
            entry["copied_buffers"] = sum(1 for a, b in zip(engine, ours) if a != b) + \
                abs(len(engine) - len(ours))
        out.append(entry)
    return out


def worker_main(args):
    spec = json.loads(pathlib.Path(args[0]).read_text())
    if spec["phase"] == "ingest":
        result = worker_ingest(spec["warehouse"], spec["files"])
    else:
        result = worker_query(spec["warehouse"], spec["queries"], spec["repeats"])
    print(json.dumps(result))


# --- the driver -------------------------------------------------------------------------

def run_json(cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_worker(python, spec, work):
    path = pathlib.Path(work) / f"spec-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(spec))
    return run_json([python, __file__, "--worker", path])


def ratio(a, b):
    return f"{a / b:.3f}" if b else "n/a"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=100)
    p.add_argument("--hours", type=int, default=12)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rows-per-file", type=int, default=100_000)
    p.add_argument("--bench-bin", default=str(ROOT / "build" / "release" / "timelake_bench"))
    p.add_argument("--no-write", action="store_true", help="print only")
    a = p.parse_args()

    sys.path.insert(0, str(ROOT / "bench"))
    import queries as tsbs_queries
    import tsbs

    data = tsbs.describe(tsbs.generate(a.hosts, a.hours, rows_per_file=a.rows_per_file))
    qs = [{k: q[k] for k in ("name", "sql", "latest") if k in q}
          for q in tsbs_queries.build(42, a.hosts, data["start_us"], data["end_us"])]
    peers = {"C++": None, "Python": OUR_PYTHON, "0.7": TL07_PYTHON}
    ingest, query = {}, {}
    with tempfile.TemporaryDirectory(prefix="tl-pyoverhead-") as work:
        qfile = pathlib.Path(work) / "queries.json"
        qfile.write_text(json.dumps(qs))
        for peer, python in peers.items():
            warehouse = str(pathlib.Path(work) / f"wh-{len(ingest)}")
            if python is None:
                ingest[peer] = run_json([a.bench_bin, "-w", warehouse, "ingest", "-t", TABLE,
                                         "--no-maintain", *data["paths"]])
                query[peer] = run_json([a.bench_bin, "-w", warehouse, "query", "-q", qfile,
                                        "--repeats", a.repeats])["queries"]
            else:
                ingest[peer] = run_worker(python, {"phase": "ingest", "warehouse": warehouse,
                                                   "files": data["paths"]}, work)
                query[peer] = run_worker(python, {"phase": "query", "warehouse": warehouse,
                                                  "queries": qs, "repeats": a.repeats}, work)

    lines = [f"# Python overhead: {a.hosts} hosts x {a.hours} h = {data['rows']:,} rows, "
             f"{len(data['paths'])} files, {dt.date.today().isoformat()}", "",
             "Ratios to the C++ API (build/release/timelake_bench) in the same run; "
             "below 1 is faster.", "",
             "| ingest (sum of appends) | ms | / C++ |", "|---|---|---|"]
    base = sum(ingest["C++"]["append_ms"])
    for peer in peers:
        total = sum(ingest[peer]["append_ms"])
        lines.append(f"| {peer} | {total:.0f} | {ratio(total, base)} |")
    lines += ["", "| query | C++ ms | Python / C++ | 0.7 / C++ | Python first / C++ first | "
              "copied result buffers |", "|---|---|---|---|---|---|"]
    by_name = {peer: {q["name"]: q for q in query[peer]} for peer in peers}
    for q in qs:
        c = by_name["C++"].get(q["name"], {})
        py = by_name["Python"].get(q["name"], {})
        old = by_name["0.7"].get(q["name"], {})
        if "median_ms" not in c or "median_ms" not in py:
            lines.append(f"| {q['name']} | failed: {c.get('error') or py.get('error')} |")
            continue
        lines.append(
            f"| {q['name']} | {c['median_ms']:.1f} | {ratio(py['median_ms'], c['median_ms'])} | "
            f"{ratio(old['median_ms'], c['median_ms']) if 'median_ms' in old else 'failed'} | "
            f"{ratio(py['first_ms'], c['first_ms'])} | {py.get('copied_buffers', 'n/a')} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if not a.no_write:
        out = ROOT / "bench" / "results" / f"{dt.date.today().isoformat()}-python-overhead.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(report)
        print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2:])
    else:
        main()
