"""One benchmark process for a Python peer; bench/run.py starts it and reads the
one JSON object it prints on stdout (the same shape as build/release/timelake_bench).

    worker.py ingest --system tl07|pyiceberg --target DIR FILE.parquet...
    worker.py query --system SYSTEM --target T --queries Q.json [--only NAME]
                    [--repeats N] [--results DIR]
    worker.py versions

Systems and their targets:
  tl07            Timelake 0.7 (run under .venv-tl07): a warehouse directory
  pyiceberg       PyIceberg 0.12 on its own table: a directory with a sqlite SqlCatalog
  pyiceberg-ours  PyIceberg 0.12 on Timelake's table: its metadata JSON (StaticTable)
  duckdb-parquet  DuckDB on the input Parquet files: a JSON file listing them
  duckdb-iceberg  DuckDB's iceberg extension on Timelake's table: its metadata JSON
  pyarrow         the decode reference: pq.read_table of the needed columns of
                  Timelake's live data files (a JSON file listing them); no answer

PyIceberg has no SQL: a query scans with its row filter and selected columns
(`table.scan(row_filter, selected_fields).to_arrow()`), then DuckDB runs the
query's SQL over that Arrow table. Library imports happen before the clock
starts; "first_ms" covers opening the table (catalog, metadata) and the first run.
Only pyarrow is imported at the top: Timelake 0.7's environment has nothing else.

With TIMELAKE_BENCH_S3=1 (bench/run.py --s3) the tables live on an S3-compatible
server whose endpoint and credentials are in the AWS_* variables: Timelake (C++
and 0.7) read them itself, PyIceberg gets them as FileIO properties, DuckDB loads
its httpfs extension from its package and gets them as a secret, pyarrow as an
S3FileSystem.
"""

import argparse
import json
import os
import pathlib
import resource
import statistics
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import queries as Q  # noqa: E402


def peak_rss_kib():
    """This process's peak resident set: VmHWM, which starts again at exec (ru_maxrss
    keeps the high-water mark of the image before exec: run.py's size)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def emit(obj):
    print(json.dumps(obj), flush=True)


# --- ingest -----------------------------------------------------------------

def ingest_tl07(target, files):
    import timelake
    start = time.perf_counter()
    lake = timelake.Lake(str(target))
    table, rows, append_ms = None, 0, []
    for f in files:
        data = pq.read_table(f)
        if table is None:
            table = lake.create_table(Q.TIMELAKE_TABLE, data.schema, time_column="time",
                                      series_key=["hostname"])
        t = time.perf_counter()
        result = table.append(data)
        append_ms.append((time.perf_counter() - t) * 1000)
        rows += result["rows"]
    return rows, time.perf_counter() - start, append_ms


def s3():
    """The S3 server's settings when the tables live there, else None."""
    if os.environ.get("TIMELAKE_BENCH_S3") != "1":
        return None
    endpoint = os.environ["AWS_ENDPOINT"]
    return {"endpoint": endpoint, "host": endpoint.split("://", 1)[1],
            "scheme": endpoint.split("://", 1)[0], "region": os.environ["AWS_REGION"],
            "key": os.environ["AWS_ACCESS_KEY_ID"], "secret": os.environ["AWS_SECRET_ACCESS_KEY"]}


def pyiceberg_properties():
    conf = s3()
    if not conf:
        return {}
    # fsspec (s3fs) rather than PyIceberg's default pyarrow FileIO, whose S3
    # client fails CompleteMultipartUpload on the test server (as in the soak,
    # tests/reliability/soak.py).
    return {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO",
            "s3.endpoint": conf["endpoint"], "s3.region": conf["region"],
            "s3.access-key-id": conf["key"], "s3.secret-access-key": conf["secret"]}


def pyiceberg_catalog(target, warehouse=None):
    """A SqlCatalog in `target` (sqlite); tables under `warehouse` (default
    target/warehouse), which may be an s3:// URL."""
    from pyiceberg.catalog.sql import SqlCatalog
    target = pathlib.Path(target).resolve()
    return SqlCatalog("bench", uri=f"sqlite:///{target}/catalog.db",
                      warehouse=warehouse or f"file://{target}/warehouse",
                      **pyiceberg_properties())


def s3_filesystem():
    from pyarrow import fs
    conf = s3()
    return fs.S3FileSystem(access_key=conf["key"], secret_key=conf["secret"],
                           region=conf["region"], endpoint_override=conf["host"],
                           scheme=conf["scheme"])


def ingest_pyiceberg(target, files, warehouse=None):
    pathlib.Path(target).mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    catalog = pyiceberg_catalog(target, warehouse)
    catalog.create_namespace("bench")
    table, rows, append_ms = None, 0, []
    for f in files:
        data = pq.read_table(f)
        if table is None:
            # Unpartitioned: PyIceberg's day transform needs pyiceberg-core, and a
            # data set of at most one day is one partition either way.
            table = catalog.create_table(Q.TIMELAKE_TABLE, schema=data.schema)
        t = time.perf_counter()
        table.append(data)
        append_ms.append((time.perf_counter() - t) * 1000)
        rows += data.num_rows
    return rows, time.perf_counter() - start, append_ms


# --- queries -----------------------------------------------------------------

def duckdb_connect():
    """DuckDB with TimeZone UTC; the iceberg extension is loaded from its package
    (as tests/compat/conftest.py does), never from the network."""
    import duckdb
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    conf = s3()
    if conf:
        load_extensions(con, "httpfs")
        con.execute(f"CREATE SECRET bench (TYPE s3, KEY_ID '{conf['key']}', "
                    f"SECRET '{conf['secret']}', REGION '{conf['region']}', "
                    f"ENDPOINT '{conf['host']}', URL_STYLE 'path', "
                    f"USE_SSL {'true' if conf['scheme'] == 'https' else 'false'})")
    return con


def load_extensions(con, *names):
    import duckdb
    import duckdb_ext
    ext = pathlib.Path(duckdb_ext.__path__[0]) / "extensions" / f"v{duckdb.__version__}"
    ext = next(ext.glob("*"))
    for name in names:
        con.execute(f"LOAD '{ext / f'{name}.duckdb_extension'}'")


def iso_utc(us):
    return Q.iso(us) + "+00:00"


def row_filter(scan):
    from pyiceberg.expressions import (AlwaysTrue, And, GreaterThan, GreaterThanOrEqual, In,
                                       LessThan)
    parts = []
    if "hosts" in scan:
        parts.append(In("hostname", set(scan["hosts"])))
    if "start_us" in scan:
        parts.append(GreaterThanOrEqual("time", iso_utc(scan["start_us"])))
    if "end_us" in scan:
        parts.append(LessThan("time", iso_utc(scan["end_us"])))
    if "usage_user_gt" in scan:
        parts.append(GreaterThan("usage_user", scan["usage_user_gt"]))
    if not parts:
        return AlwaysTrue()
    return parts[0] if len(parts) == 1 else And(*parts)


class Tl07:
    def __init__(self, target):
        import timelake
        self.lake = timelake.Lake(str(target))

    def run(self, q):
        if "latest" in q:
            return self.lake.latest(q["latest"])
        return self.lake.sql(q["sql"])


class PyIceberg:
    def __init__(self, target, ours):
        if ours:
            from pyiceberg.table import StaticTable
            self.table = StaticTable.from_metadata(str(target), properties=pyiceberg_properties())
        else:
            self.table = pyiceberg_catalog(target).load_table(Q.TIMELAKE_TABLE)
        self.con = duckdb_connect()

    def run(self, q):
        data = self.table.scan(row_filter=row_filter(q["scan"]),
                               selected_fields=tuple(q["columns"])).to_arrow()
        self.con.register(Q.DUCKDB_TABLE, data)
        try:
            return self.con.execute(q["duckdb"]).fetch_arrow_table()
        finally:
            self.con.unregister(Q.DUCKDB_TABLE)


class DuckParquet:
    def __init__(self, target):
        files = json.loads(pathlib.Path(target).read_text())
        self.con = duckdb_connect()
        self.con.execute(f"CREATE VIEW {Q.DUCKDB_TABLE} AS SELECT * FROM read_parquet({files!r})")

    def run(self, q):
        return self.con.execute(q["duckdb"]).fetch_arrow_table()


class DuckIceberg:
    def __init__(self, target):
        self.con = duckdb_connect()
        load_extensions(self.con, "avro", "iceberg")
        self.con.execute(f"CREATE VIEW {Q.DUCKDB_TABLE} AS SELECT * FROM iceberg_scan('{target}')")

    def run(self, q):
        return self.con.execute(q["duckdb"]).fetch_arrow_table()


class PyArrowDecode:
    def __init__(self, target):
        self.files = json.loads(pathlib.Path(target).read_text())
        self.fs = None
        if s3():
            self.fs = s3_filesystem()
            self.files = [f.split("://", 1)[1] for f in self.files]

    def run(self, q):
        pq.read_table(self.files, columns=q["columns"], filesystem=self.fs)
        return None


def supports(system, q):
    if "latest" in q:
        return system == "tl07"
    if system in ("pyiceberg", "pyiceberg-ours"):
        return "scan" in q
    return True


def import_for(system):
    """Imports a system's libraries before any clock starts."""
    if system == "tl07":
        import timelake  # noqa: F401
    if system.startswith("pyiceberg"):
        import pyiceberg.catalog.sql  # noqa: F401
        import pyiceberg.expressions  # noqa: F401
        import pyiceberg.table  # noqa: F401
    if system.startswith(("duckdb", "pyiceberg")):
        import duckdb  # noqa: F401
    if system == "duckdb-iceberg" or (s3() and system.startswith(("duckdb", "pyiceberg"))):
        import duckdb_ext  # noqa: F401
    if s3() and system == "pyarrow":
        from pyarrow import fs  # noqa: F401


def open_system(system, target):
    return {
        "tl07": lambda: Tl07(target),
        "pyiceberg": lambda: PyIceberg(target, ours=False),
        "pyiceberg-ours": lambda: PyIceberg(target, ours=True),
        "duckdb-parquet": lambda: DuckParquet(target),
        "duckdb-iceberg": lambda: DuckIceberg(target),
        "pyarrow": lambda: PyArrowDecode(target),
    }[system]()


def run_queries(args):
    qs = [q for q in json.loads(pathlib.Path(args.queries).read_text())
          if (not args.only or q["name"] == args.only) and supports(args.system, q)]
    import_for(args.system)
    results_dir = pathlib.Path(args.results) if args.results else None
    if results_dir:
        results_dir.mkdir(parents=True, exist_ok=True)
    out = []
    open_start = time.perf_counter()
    system = open_system(args.system, args.target) if qs else None
    for i, q in enumerate(qs):
        start = open_start if i == 0 else time.perf_counter()
        try:
            result = system.run(q)
        except Exception as e:  # reported in the query's place; the others still run
            out.append({"name": q["name"], "error": f"{type(e).__name__}: {e}"[:500]})
            continue
        first_ms = (time.perf_counter() - start) * 1000
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            system.run(q)
            times.append((time.perf_counter() - t) * 1000)
        if results_dir and result is not None:
            with pa.OSFile(str(results_dir / f"{q['name']}.arrow"), "wb") as f:
                with pa.ipc.new_file(f, result.schema) as w:
                    w.write_table(result)
        out.append({"name": q["name"], "rows": None if result is None else result.num_rows,
                    "first_ms": first_ms, "times_ms": times,
                    "median_ms": statistics.median(times) if times else 0})
    emit({"queries": out, "peak_rss_kib": peak_rss_kib()})


def versions():
    from importlib import metadata
    out = {"python": sys.version.split()[0]}
    for dist in ("pyarrow", "timelake", "pyiceberg", "duckdb", "duckdb-ext-iceberg",
                 "numpy", "matplotlib", "sqlalchemy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    emit(out)


def main():
    p = argparse.ArgumentParser(description="one benchmark process of a Python peer")
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("ingest")
    i.add_argument("--system", required=True, choices=["tl07", "pyiceberg"])
    i.add_argument("--target", required=True)
    i.add_argument("--warehouse", help="pyiceberg: where the table's files go "
                   "(default: TARGET/warehouse)")
    i.add_argument("files", nargs="+")
    q = sub.add_parser("query")
    q.add_argument("--system", required=True)
    q.add_argument("--target", required=True)
    q.add_argument("--queries", required=True)
    q.add_argument("--only")
    q.add_argument("--repeats", type=int, default=3)
    q.add_argument("--results")
    sub.add_parser("versions")
    args = p.parse_args()
    if args.command == "versions":
        versions()
    elif args.command == "ingest":
        if args.system == "tl07":
            rows, seconds, append_ms = ingest_tl07(args.target, args.files)
        else:
            rows, seconds, append_ms = ingest_pyiceberg(args.target, args.files, args.warehouse)
        emit({"rows": rows, "files": len(args.files), "seconds": seconds,
              "append_ms": append_ms, "peak_rss_kib": peak_rss_kib()})
    else:
        run_queries(args)


if __name__ == "__main__":
    main()
