# Copyright 2026 The Timelake Authors. Apache-2.0.
"""The data-driven SQL suite (issue #5): every case of `tests/sql/cases/*.test`
runs through the `timelake` binary, and its expected answer is computed by
DuckDB over the raw input Parquet files.

A case (full description in `sqlcase.py`):

    === <name> [ordered] [contains]
    <Timelake SQL: one statement>
    --- duckdb
    <DuckDB SQL over views `cpu` and `hosts` of the input files>

with `--- same` when DuckDB can run the Timelake SQL as it is, and
`--- error: <text>` when the statement must fail with one error line
containing <text>. Rows compare sorted unless `ordered`; floats with a 1e-9
relative tolerance; timestamps as UTC instants; columns by position.

The data is the TSBS cpu-only shape, generated deterministically: 20 hosts
(`host_0` … `host_19`) every minute for 3 days from 2024-03-09 12:00 UTC, so 4
day partitions; 10 string tags and 10 int64 metrics `usage_*` (random walks in 0..100), with
about 3% NULLs in `usage_steal`. It is appended in 4 commits from 5 files
(hosts 0-9 then hosts 10-19 of the first 36 hours, a shuffled 12 hours, then
two files in one command), so most partitions hold several files. `hosts` is a
plain dimension table (hostname, owner, rack_size) with hosts 0-17 and two
hosts that have no rows in `cpu`; host_5 has no owner. `trades` and `quotes`
(dedup off, files that overlap in time) are the ASOF JOIN inputs
(`trades_and_quotes`), `metrics` the readings behind TimescaleDB's documented
gap-filling examples (`metrics_table`).

    TIMELAKE_BIN=build/release/timelake .venv/bin/python -m pytest -q tests/sql
"""

import datetime as dt
import random
import types

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlcase import (BIN, QueryError, check_error, compare, describe_failure, duckdb_query,
                     load_cases, run_cli, timelake_query)

SEED = 20240309
HOSTS = [f"host_{i}" for i in range(20)]
START = dt.datetime(2024, 3, 9, 12, 0, tzinfo=dt.timezone.utc)
MINUTES = 3 * 24 * 60
SPLIT_1 = START + dt.timedelta(hours=36)  # 2024-03-11 00:00
SPLIT_2 = SPLIT_1 + dt.timedelta(hours=12)  # 2024-03-11 12:00
SPLIT_3 = SPLIT_1 + dt.timedelta(hours=24)  # 2024-03-12 00:00
METRICS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
           "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
TAGS = ["hostname", "region", "datacenter", "rack", "os", "arch", "team", "service",
        "service_version", "service_environment"]
REGIONS = {
    "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c"],
    "us-west-1": ["us-west-1a", "us-west-1b"],
    "eu-west-1": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
    "ap-southeast-2": ["ap-southeast-2a", "ap-southeast-2b"],
}

CASES = load_cases()


def generate_cpu(rng):
    """All rows as a dict of columns, host-major then time."""
    tags = {}
    for h in HOSTS:
        region = rng.choice(sorted(REGIONS))
        tags[h] = {
            "hostname": h, "region": region, "datacenter": rng.choice(REGIONS[region]),
            "rack": str(rng.randrange(100)), "os": rng.choice(["Ubuntu16.10", "Ubuntu16.04LTS",
                                                                "Ubuntu15.10"]),
            "arch": rng.choice(["x64", "x86"]), "team": rng.choice(["SF", "NYC", "LON", "CHI"]),
            "service": str(rng.randrange(20)), "service_version": str(rng.randrange(2)),
            "service_environment": rng.choice(["production", "staging", "test"]),
        }
    n = len(HOSTS) * MINUTES
    start_us = int(START.timestamp()) * 1_000_000
    cols = {"time": [start_us + m * 60_000_000 for _ in HOSTS for m in range(MINUTES)]}
    for t in TAGS:
        cols[t] = [tags[h][t] for h in HOSTS for _ in range(MINUTES)]
    for m in METRICS:  # a random walk per host, reflected into 0..100
        steps = rng.choices(range(-4, 5), k=n)
        values = []
        for h in range(len(HOSTS)):
            v = rng.randrange(101)
            for s in steps[h * MINUTES:(h + 1) * MINUTES]:
                v += s
                v = -v if v < 0 else 200 - v if v > 100 else v
                values.append(v)
        cols[m] = values
    cols["usage_steal"] = [None if rng.random() < 0.03 else v for v in cols["usage_steal"]]
    return cols


def cpu_table(cols, index):
    t = {"time": pa.array([cols["time"][i] for i in index], pa.int64()).cast(
        pa.timestamp("us", tz="UTC"))}
    for c in TAGS:
        t[c] = pa.array([cols[c][i] for i in index], pa.string())
    for c in METRICS:
        t[c] = pa.array([cols[c][i] for i in index], pa.int64())
    return pa.table(t)


def trades_and_quotes(rng):
    """ASOF JOIN inputs (issue #16): trades and quotes of symbols A..F over
    12 hours across a day boundary. Quotes have exact duplicate rows and
    repeated times (their price is a function of symbol and time, so
    whichever duplicate matches, the answer is the same), trades repeat
    rows and land on quote times exactly now and then; F has no quotes, E
    none in the first 6 hours, and a few rows of both have a NULL symbol."""
    start = int(dt.datetime(2024, 5, 1, 18, tzinfo=dt.timezone.utc).timestamp()) * 1_000_000
    span = 12 * 3600
    symbols = ["A", "B", "C", "D", "E"]

    def price(symbol, t):
        return 10 + ((t // 1_000_000) * 7919 + ord(symbol or "-") * 104729) % 10_000 / 100

    quotes = []
    for _ in range(1500):
        symbol = rng.choice(symbols) if rng.random() > 0.01 else None
        t = start + rng.randrange(0, span) * 1_000_000
        if symbol == "E" and t < start + 6 * 3600 * 1_000_000:
            continue
        quotes.append((symbol, t, price(symbol, t), rng.randrange(1, 9)))
    quotes += [quotes[i] for i in rng.sample(range(len(quotes)), 60)]  # duplicates
    # Same symbol and time, another size (the price stays the function's).
    quotes += [(q[0], q[1], q[2], q[3] + 100) for q in rng.sample(quotes, 40)]
    quote_times = [q[1] for q in quotes]
    trades = []
    for i in range(1200):
        symbol = rng.choice(symbols + ["F"]) if rng.random() > 0.01 else None
        if rng.random() < 0.15:
            t = rng.choice(quote_times)  # exactly on a quote
        else:
            t = start + (rng.randrange(0, span + 3600) - 1800) * 1_000_000
        trades.append((symbol, t, i, rng.randrange(1, 500)))
    trades += [trades[i] for i in rng.sample(range(len(trades)), 50)]
    return trades, quotes


def trade_table(rows):
    return pa.table({
        "time": pa.array([r[1] for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "symbol": pa.array([r[0] for r in rows], pa.string()),
        "id": pa.array([r[2] for r in rows], pa.int64()),
        "qty": pa.array([r[3] for r in rows], pa.int64()),
    })


def quote_table(rows):
    return pa.table({
        "time": pa.array([r[1] for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "symbol": pa.array([r[0] for r in rows], pa.string()),
        "price": pa.array([r[2] for r in rows], pa.float64()),
        "size": pa.array([r[3] for r in rows], pa.int64()),
    })


def metrics_table():
    """The readings behind TimescaleDB's documented gap-filling examples
    (gapfill.test): device 1 averages 5, 7, 8 and 9 on 2019-01-11, -13, -15
    and -16, with 1.0 on 2019-01-09 (before the range) and 11.0 on
    2019-01-18 (after it); device 2 has other days."""
    def day(d, h=0):
        return dt.datetime(2019, 1, d, h, tzinfo=dt.timezone.utc)
    rows = [(1, day(9), 1.0), (1, day(11), 4.0), (1, day(11, 12), 6.0), (1, day(13), 7.0),
            (1, day(15, 6), 8.0), (1, day(16), 9.0), (1, day(18), 11.0),
            (2, day(10, 3), 2.0), (2, day(14), 4.0), (2, day(14, 1), None)]
    return pa.table({
        "time": pa.array([r[1] for r in rows], pa.timestamp("us", tz="UTC")),
        "device_id": pa.array([r[0] for r in rows], pa.int64()),
        "value": pa.array([r[2] for r in rows], pa.float64()),
    })


def hosts_table():
    names = HOSTS[:18] + ["host_90", "host_91"]
    owners = ["ops", "data", "web"]
    return pa.table({
        "hostname": pa.array(names, pa.string()),
        "owner": pa.array([None if h == "host_5" else owners[i % 3]
                           for i, h in enumerate(names)], pa.string()),
        "rack_size": pa.array([10 + (i * 7) % 31 for i in range(len(names))], pa.int64()),
    })


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make release` or set TIMELAKE_BIN")
    import duckdb

    root = tmp_path_factory.mktemp("sql-cases")
    rng = random.Random(SEED)
    cols = generate_cpu(rng)
    us = lambda ts: int(ts.timestamp()) * 1_000_000  # noqa: E731
    host_of = {h: i for i, h in enumerate(HOSTS)}
    everything = range(len(cols["time"]))

    def pick(pred):
        return [i for i in everything if pred(cols["time"][i], host_of[cols["hostname"][i]])]

    first = pick(lambda t, h: t < us(SPLIT_1) and h < 10)
    first.sort(key=lambda i: (cols["time"][i], cols["hostname"][i]))  # time-major
    second = pick(lambda t, h: t < us(SPLIT_1) and h >= 10)  # host-major
    third = pick(lambda t, h: us(SPLIT_1) <= t < us(SPLIT_2))
    random.Random(SEED + 1).shuffle(third)
    fourth = pick(lambda t, h: us(SPLIT_2) <= t < us(SPLIT_3))
    fifth = pick(lambda t, h: t >= us(SPLIT_3))
    parts = [first, second, third, fourth, fifth]
    assert sum(map(len, parts)) == len(cols["time"])
    files = []
    for k, index in enumerate(parts, 1):
        path = root / f"cpu-{k}.parquet"
        pq.write_table(cpu_table(cols, index), path)
        files.append(path)
    hosts_file = root / "hosts.parquet"
    pq.write_table(hosts_table(), hosts_file)

    trades, quotes = trades_and_quotes(random.Random(SEED + 2))
    random.Random(SEED + 3).shuffle(quotes)
    trade_files, quote_files = [], []
    for k, part in enumerate([trades[:700], trades[700:]]):
        trade_files.append(root / f"trades-{k}.parquet")
        pq.write_table(trade_table(part), trade_files[-1])
    third = len(quotes) // 3  # shuffled: the three files overlap in time
    for k, part in enumerate([quotes[:third], quotes[third:2 * third], quotes[2 * third:]]):
        quote_files.append(root / f"quotes-{k}.parquet")
        pq.write_table(quote_table(part), quote_files[-1])
    metrics_file = root / "metrics.parquet"
    pq.write_table(metrics_table(), metrics_file)

    warehouse = root / "warehouse"
    run_cli("-w", warehouse, "create", "cpu", "--schema-from", files[0], "--time-column",
            "time", "--series-key", "hostname", "--chunk", "day")
    for batch in ([files[0]], [files[1]], [files[2]], [files[3], files[4]]):
        run_cli("-w", warehouse, "append", "cpu", *batch)
    run_cli("-w", warehouse, "create", "hosts", "--schema-from", hosts_file)
    run_cli("-w", warehouse, "append", "hosts", hosts_file)
    for name, inputs in (("trades", trade_files), ("quotes", quote_files)):
        run_cli("-w", warehouse, "create", name, "--schema-from", inputs[0], "--time-column",
                "time", "--series-key", "symbol", "--chunk", "day", "--set",
                "timelake.dedup=false")
        for f in inputs:
            run_cli("-w", warehouse, "append", name, f)
    run_cli("-w", warehouse, "create", "metrics", "--schema-from", metrics_file,
            "--time-column", "time", "--series-key", "device_id", "--chunk", "day")
    run_cli("-w", warehouse, "append", "metrics", metrics_file)

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute("CREATE VIEW cpu AS SELECT * FROM read_parquet([{}])".format(
        ", ".join(f"'{f}'" for f in files)))
    con.execute(f"CREATE VIEW hosts AS SELECT * FROM read_parquet('{hosts_file}')")
    for name, inputs in (("trades", trade_files), ("quotes", quote_files)):
        con.execute("CREATE VIEW {} AS SELECT * FROM read_parquet([{}])".format(
            name, ", ".join(f"'{f}'" for f in inputs)))
    con.execute(f"CREATE VIEW metrics AS SELECT * FROM read_parquet('{metrics_file}')")
    assert con.execute("SELECT count(*) FROM cpu").fetchone()[0] == len(HOSTS) * MINUTES
    yield types.SimpleNamespace(warehouse=warehouse, duck=con)
    con.close()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sql_case(case, lake, tmp_path):
    out = tmp_path / "out.parquet"
    if case.expect == "error":
        proc = run_cli("-w", lake.warehouse, "sql", case.sql, "--format", "parquet", "-o", out,
                       check=False)
        check_error(case.name, case.sql, proc, case.error)
        return
    try:
        expected = duckdb_query(lake.duck, case.duckdb_sql)
    except Exception as e:  # a mistake in the case, not in Timelake
        failure = f"the DuckDB SQL failed: {e}\n{case.duckdb_sql}"
    else:
        failure = None
    if failure:
        pytest.fail(f"case {case.name} ({case.where}): {failure}", pytrace=False)
    try:
        got = timelake_query(lake.warehouse, case.sql, out)
    except QueryError as e:
        failure = f"Timelake failed: {e}\n--- Timelake SQL:\n{case.sql}"
    if failure:
        pytest.fail(f"case {case.name} ({case.where}): {failure}", pytrace=False)
    diff = compare(expected, got, ordered=case.ordered, contains=case.contains)
    if diff:
        pytest.fail(f"({case.where}) " + describe_failure(case.name, case.sql, case.duckdb_sql,
                                                          expected, got, diff, case.ordered),
                    pytrace=False)


def test_harness_catches_differences():
    """The comparison is not vacuous: wrong answers and malformed cases fail."""
    from sqlcase import Result, parse_cases

    ts = dt.datetime(2024, 3, 9, 12, tzinfo=dt.timezone.utc)
    base = Result(["a", "b", "t"], [(1, 0.5, ts), (2, None, ts)])
    assert compare(base, Result(["x", "y", "z"], [(2, None, ts), (1, 0.5 + 1e-12, ts)])) is None
    assert compare(base, Result(["a", "b", "t"], [(1, 0.5, ts), (2, None, ts)]), ordered=True) \
        is None
    assert compare(base, Result(["a", "b", "t"], [(2, None, ts), (1, 0.5, ts)]), ordered=True)
    assert compare(base, Result(["a", "b", "t"], [(1, 0.51, ts), (2, None, ts)]))
    assert compare(base, Result(["a", "b", "t"], [(1, 0.5, ts), (2, 0.0, ts)]))
    assert compare(base, Result(["a", "b", "t"], [(1, 0.5, ts)]))
    assert compare(base, Result(["a", "b"], [(1, 0.5), (2, None)]))
    later = ts + dt.timedelta(microseconds=1)
    assert compare(base, Result(["a", "b", "t"], [(1, 0.5, later), (2, None, ts)]))
    assert compare(Result(["a"], [(1,)]), Result(["a"], [(1,), (2,)]), contains=True) is None
    assert compare(Result(["a"], [(3,)]), Result(["a"], [(1,), (2,)]), contains=True)
    cases = parse_cases("# c\n=== a ordered\nSELECT 1\n--- same\n=== b\nSELECT x\n"
                        "--- error: x\n=== c\nSELECT 1\n--- duckdb\nSELECT 1\n")
    assert [(c.name, c.expect, c.ordered) for c in cases] == [
        ("a", "duckdb", True), ("b", "error", False), ("c", "duckdb", False)]
    for bad in ("=== a\nSELECT 1\n", "=== a\n--- same\n", "=== a bogus\nSELECT 1\n--- same\n",
                "SELECT 1\n", "=== a\nSELECT 1\n--- duckdb\n", "=== a\nSELECT 1\n--- maybe\n"):
        with pytest.raises(ValueError):
            parse_cases(bad)
