# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Reading only what a query needs (issue #5), shown by the scan metrics of
EXPLAIN ANALYZE: 30 days x 100 hosts in day partitions, rows sorted by
(hostname, time) with 1,440-row row groups (about 10 hosts each).

- A time-range, single-series query reads the one file of the touched day
  (the engine prunes the other 29 by partition bounds) and, inside it, one
  row group (DataFusion prunes the other 9 by their statistics).
- `ORDER BY time DESC LIMIT k` gets the files newest first, so the top-k
  filter skips the row groups of older files.
Answers are checked against DuckDB over the input file.
"""

import datetime as dt
import random
import re

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlcase import run_cli, timelake_query

DAYS = 30
HOSTS = 100
STEP_MINUTES = 10
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("pruning")
    rng = random.Random(30100)
    times, hosts, usage = [], [], []
    for day in range(DAYS):
        for step in range(24 * 60 // STEP_MINUTES):
            t = T0 + dt.timedelta(days=day, minutes=STEP_MINUTES * step)
            for h in range(HOSTS):
                times.append(t)
                hosts.append(f"host_{h:02d}")
                usage.append(rng.randint(0, 100))
    data = root / "cpu.parquet"
    pq.write_table(pa.table({"time": pa.array(times, pa.timestamp("us", tz="UTC")),
                             "hostname": hosts, "usage_user": pa.array(usage, pa.int64())}),
                   data)
    warehouse = root / "w"
    run_cli("-w", warehouse, "create", "cpu", "--schema-from", data, "--time-column", "time",
            "--series-key", "hostname", "--set", "timelake.row-group-rows=1440")
    run_cli("-w", warehouse, "append", "cpu", data)
    return warehouse, data


def explain(warehouse, sql):
    return run_cli("-w", warehouse, "sql", sql, "--explain-analyze").stdout


def metric(plan, name):
    """(total, matched) of every `name=<total> total → <matched> matched`."""
    found = re.findall(name + r"=([0-9.]+) (K )?total → ([0-9.]+) (K )?matched", plan)
    assert found, f"no {name} in the plan:\n{plan}"
    return [(float(t), float(m)) for t, _, m, _ in found]


def test_single_series_time_range_reads_one_file_and_one_row_group(table, tmp_path):
    warehouse, data = table
    sql = ("SELECT count(*) AS n, sum(usage_user) AS s FROM cpu WHERE hostname = 'host_42' "
           "AND time >= '2024-01-10T00:00:00Z' AND time < '2024-01-10T12:00:00Z'")
    plan = explain(warehouse, sql)
    scan = re.search(r"timelake scan: default\.cpu: (\d+) live files, (\d+) pruned, (\d+) read",
                     plan)
    assert scan, plan
    assert tuple(map(int, scan.groups())) == (30, 29, 1), scan.group(0)
    # Inside the one file: 10 row groups, only the one holding host_42.
    assert metric(plan, "row_groups_pruned_statistics") == [(10, 1)], plan

    got = timelake_query(warehouse, sql, tmp_path / "out.parquet").rows
    want = duckdb.sql(
        f"SELECT count(*), sum(usage_user) FROM read_parquet('{data}') WHERE "
        "hostname = 'host_42' AND time >= TIMESTAMPTZ '2024-01-10 00:00:00+00' "
        "AND time < TIMESTAMPTZ '2024-01-10 12:00:00+00'").fetchone()
    assert got == [want]
    assert want[0] == 72


def test_newest_first_top_k_skips_older_row_groups(table, tmp_path):
    warehouse, data = table
    sql = "SELECT time, hostname, usage_user FROM cpu ORDER BY time DESC, hostname LIMIT 5"
    plan = explain(warehouse, sql)
    [(total, matched)] = metric(plan, "row_groups_pruned_statistics")
    assert total == DAYS * 10
    # The newest day fills the top 5; row groups of older days are skipped
    # by the top-k filter (a few may be opened before it tightens).
    assert matched <= 3 * 10, plan

    got = timelake_query(warehouse, sql, tmp_path / "out.parquet").rows
    want = duckdb.sql(f"SELECT time, hostname, usage_user FROM read_parquet('{data}') "
                      "ORDER BY time DESC, hostname LIMIT 5").fetchall()
    assert [(t.timestamp(), h, u) for t, h, u in got] == \
        [(t.timestamp(), h, u) for t, h, u in want]

    # With the switch off the answer is the same.
    off = run_cli("-w", warehouse, "--set", "timelake.newest_first=false", "sql", sql,
                  "--format", "csv").stdout
    on = run_cli("-w", warehouse, "sql", sql, "--format", "csv").stdout
    assert off == on
