"""ASOF JOIN beside DuckDB's (issue #16).

    .venv/bin/python bench/asof.py                                  # 10 M trades x 10 M quotes
    .venv/bin/python bench/asof.py --rows 100000 --repeats 1        # a smoke run

Trades and quotes of --symbols symbols over one day (random times, prices
as random walks; generated with numpy, seeded, cached in build/bench/asof/),
written as Parquet files, appended to Timelake tables (series key
`symbol`, day partitions, one commit per file, `timelake.dedup=false`: like
DuckDB's tables they keep rows with equal (symbol, time), so the answers can
be compared exactly) and read by DuckDB from the same files, in this one run. Three queries, each an aggregate over the
join so that the join is what is measured, not moving its rows:

  asof-ge    ASOF JOIN … ON t.symbol = q.symbol AND t.time >= q.time
  asof-left  ASOF LEFT JOIN, the same condition
  asof-lt    ASOF JOIN … t.time < q.time (the next quote)

Ours run in one process (build/release/timelake_bench query: "first" opens
the lake and runs once, "warm" is the median of --repeats more runs);
DuckDB runs in this process the same way. The answers are cross-checked
(the count exactly, the sums to 1e-9 relative) before the table is printed:
ms per system and the ratio ours/DuckDB. --json writes the figures.
"""

import argparse
import json
import math
import pathlib
import shutil
import statistics
import subprocess
import time

import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
DAY_US = 86_400 * 1_000_000
START_US = 1_767_225_600 * 1_000_000  # 2026-01-01T00:00:00Z

QUERIES = {
    "asof-ge": "SELECT count(*) AS n, sum(q.price * t.qty) AS notional, sum(q.bid) AS bids "
               "FROM trades t ASOF JOIN quotes q ON t.symbol = q.symbol AND t.time >= q.time",
    "asof-left": "SELECT count(*) AS n, count(q.price) AS matched, sum(q.price * t.qty) AS notional "
                 "FROM trades t ASOF LEFT JOIN quotes q "
                 "ON t.symbol = q.symbol AND t.time >= q.time",
    "asof-lt": "SELECT count(*) AS n, sum(q.price * t.qty) AS notional "
               "FROM trades t ASOF JOIN quotes q ON t.symbol = q.symbol AND t.time < q.time",
}


def generate(rows, symbols, files, out):
    """Writes trades-k.parquet and quotes-k.parquet (k < files: the day cut
    into consecutive time ranges) unless they exist; returns both lists."""
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    trades = [out / f"trades-{k}.parquet" for k in range(files)]
    quotes = [out / f"quotes-{k}.parquet" for k in range(files)]
    if all(f.exists() for f in trades + quotes):
        return trades, quotes
    rng = np.random.default_rng(16)
    names = np.array([f"S{i:05d}" for i in range(symbols)])

    def side(n, with_quote):
        sym = rng.integers(0, symbols, n)
        t = START_US + rng.integers(0, DAY_US, n)
        order = np.lexsort((sym, t))
        sym, t = sym[order], t[order]
        cols = {"time": pa.array(t, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                "symbol": pa.array(names[sym])}
        if with_quote:
            walk = 100 + np.cumsum(rng.normal(0, 0.01, n))
            cols["price"] = pa.array(np.round(walk, 4))
            cols["bid"] = pa.array(np.round(walk - rng.uniform(0, 0.05, n), 4))
        else:
            cols["qty"] = pa.array(rng.integers(1, 1000, n))
        return pa.table(cols)

    for paths, with_quote in ((trades, False), (quotes, True)):
        table = side(rows, with_quote)
        bounds = [len(table) * k // files for k in range(files + 1)]
        for k, path in enumerate(paths):
            pq.write_table(table.slice(bounds[k], bounds[k + 1] - bounds[k]), path,
                           compression="zstd")
    return trades, quotes


def run_json(cmd):
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd[:4]))} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ingest(cli, warehouse, name, files):
    for k, f in enumerate(files):
        cmd = [cli, "-w", warehouse, "append", name, f, "--no-maintain"]
        if k == 0:
            cmd += ["--create", "--time-column", "time", "--series-key", "symbol",
                    "--set", "timelake.dedup=false"]
        proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"timelake append {name} failed:\n{proc.stderr[-2000:]}")


def duckdb_figures(trades, quotes, repeats):
    import duckdb

    con = duckdb.connect()
    for name, files in (("trades", trades), ("quotes", quotes)):
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({[str(f) for f in files]!r})")
    figures, answers = {}, {}
    for name, sql in QUERIES.items():
        t = time.perf_counter()
        answers[name] = con.execute(sql).fetchone()
        first = (time.perf_counter() - t) * 1000
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            con.execute(sql).fetchone()
            times.append((time.perf_counter() - t) * 1000)
        figures[name] = {"first_ms": first, "warm_ms": statistics.median(times) if times else first}
    return figures, answers


def our_answers(results):
    out = {}
    for name in QUERIES:
        with pa.memory_map(str(results / f"{name}.arrow")) as source:
            row = pa.ipc.open_file(source).read_all().to_pylist()[0]
        out[name] = tuple(row.values())
    return out


def check(ours, duck):
    for name in QUERIES:
        a, b = ours[name], duck[name]
        for x, y in zip(a, b):
            same = (x == y if isinstance(x, int) and isinstance(y, int)
                    else math.isclose(float(x), float(y), rel_tol=1e-9))
            if not same:
                raise SystemExit(f"{name}: ours {a} vs DuckDB {b}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="trades, and as many quotes")
    p.add_argument("--symbols", type=int, default=1000)
    p.add_argument("--files", type=int, default=4, help="files per table")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--bin", type=pathlib.Path, default=ROOT / "build" / "release")
    p.add_argument("--work", type=pathlib.Path, default=ROOT / "build" / "bench" / "asof")
    p.add_argument("--json", type=pathlib.Path)
    args = p.parse_args()

    data = args.work / f"data-{args.rows}-{args.symbols}-{args.files}"
    trades, quotes = generate(args.rows, args.symbols, args.files, data)
    warehouse = args.work / f"warehouse-{args.rows}-{args.symbols}-{args.files}"
    shutil.rmtree(warehouse, ignore_errors=True)
    ingest(args.bin / "timelake", warehouse, "trades", trades)
    ingest(args.bin / "timelake", warehouse, "quotes", quotes)

    queries_file = args.work / "asof-queries.json"
    queries_file.write_text(json.dumps([{"name": n, "sql": s} for n, s in QUERIES.items()]))
    results = args.work / "results"
    shutil.rmtree(results, ignore_errors=True)
    out = run_json([args.bin / "timelake_bench", "-w", warehouse, "query", "-q", queries_file,
                    "--repeats", args.repeats, "--results", results])
    ours = {}
    for q in out["queries"]:
        if "error" in q:
            raise SystemExit(f"ours {q['name']}: {q['error']}")
        ours[q["name"]] = {"first_ms": q["first_ms"], "warm_ms": q.get("median_ms", q["first_ms"])}
    duck, duck_answers = duckdb_figures(trades, quotes, args.repeats)
    check(our_answers(results), duck_answers)

    print(f"# ASOF JOIN: {args.rows:,} trades x {args.rows:,} quotes, {args.symbols} symbols, "
          f"{args.files} files per table; ms, warm = median of {args.repeats}\n")
    print("| query | ours first | ours warm | DuckDB first | DuckDB warm | ours/DuckDB warm |")
    print("|---|---|---|---|---|---|")
    for name in QUERIES:
        o, d = ours[name], duck[name]
        print(f"| {name} | {o['first_ms']:.1f} | {o['warm_ms']:.1f} | {d['first_ms']:.1f} "
              f"| {d['warm_ms']:.1f} | {o['warm_ms'] / d['warm_ms']:.2f} |")
    if args.json:
        args.json.write_text(json.dumps({"rows": args.rows, "symbols": args.symbols,
                                         "files": args.files, "repeats": args.repeats,
                                         "ours": ours, "duckdb": duck}, indent=1))


if __name__ == "__main__":
    main()
