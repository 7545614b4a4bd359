# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Dedup on read (SPEC §4.4, §6): a table with series key `hostname` has dedup
on by default, so a query returns one row per (hostname, time) even when
separate commits wrote the same key, chosen by the tie rule: the latest
insertion time (`_ingest_ts`) wins, then the later commit, then the later input
row. Filters on other columns apply after dedup.

Five commits (one `append` each) over two day partitions:
  c1  h0..h4, 120 minutes from 2024-05-01 23:00 UTC
  c2  h0..h2 minutes 30..89 and h0..h1 minutes 110..119 again with other values,
      and h5 minutes 0..29
  c3  h1 minutes 60..70 twice each in one file (the later row wins), h0 minute 0,
      h1 minute 119
  c4  explicit `_ingest_ts`: h3 minutes 0..9 at 2001 (older than c1: they lose),
      h3 minutes 10..14 at 2099 (newer than everything: they win, even over c5),
      h4 minutes 0..4 null (stamped at append: they win over c1)
  c5  h3 minutes 5..14 (win over c1 and c4's 2001 rows, lose to c4's 2099 rows)

Every row carries `src` = "c<commit>:<input row>", so a wrong pick shows where
it came from. The same commits go to `dd` (auto-maintain off: only the reader
can dedup) and `dd_auto` (defaults: inline compaction may also dedup). The
expected answers come from DuckDB over the input files, applying the tie rule
with row_number() over (hostname, time).
"""

import datetime as dt
import json
import random
import types

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlcase import (BIN, QueryError, compare, describe_failure, duckdb_query, run_cli,
                     timelake_query)

UTC = dt.timezone.utc
START = dt.datetime(2024, 5, 1, 23, 0, tzinfo=UTC)
TABLES = ["dd", "dd_auto"]
OLD_INGEST = dt.datetime(2001, 1, 1, tzinfo=UTC)
FUTURE_INGEST = dt.datetime(2099, 1, 1, tzinfo=UTC)

# (name, SQL with {t} for the table, ordered)
QUERIES = [
    ("all-rows", "SELECT hostname, time, usage_user, usage_system, src FROM {t}", False),
    ("no-duplicate-keys",
     "SELECT hostname, time, count(*) AS n FROM {t} GROUP BY hostname, time HAVING count(*) > 1",
     False),
    ("count-all", "SELECT count(*) AS n FROM {t}", False),
    ("count-per-host",
     "SELECT hostname, count(*) AS n, sum(usage_user) AS s, sum(usage_system) AS s2 "
     "FROM {t} GROUP BY hostname", False),
    ("filter-non-key-after-dedup",
     "SELECT hostname, time, usage_user, src FROM {t} WHERE usage_user > 50", False),
    ("filter-non-key-count",
     "SELECT hostname, count(*) AS n FROM {t} WHERE usage_user <= 50 GROUP BY hostname", False),
    ("filter-on-source-column",
     "SELECT hostname, time, src FROM {t} WHERE src LIKE 'c1:%'", False),
    ("filter-key-and-time-over-midnight",
     "SELECT time, usage_user, src FROM {t} WHERE hostname = 'h1' "
     "AND time >= '2024-05-01T23:55:00Z' AND time < '2024-05-02T00:15:00Z'", False),
    ("filter-key-in-list",
     "SELECT hostname, time, usage_user, src FROM {t} WHERE hostname IN ('h0', 'h3', 'h9')", False),
    ("filter-time-only",
     "SELECT hostname, time, usage_system FROM {t} "
     "WHERE time >= '2024-05-01T23:25:00Z' AND time < '2024-05-01T23:35:00Z'", False),
    ("newest-first-limit",
     "SELECT hostname, time, usage_user, src FROM {t} ORDER BY time DESC, hostname LIMIT 10",
     True),
    ("oldest-first-limit",
     "SELECT hostname, time, usage_user, src FROM {t} ORDER BY time, hostname LIMIT 12", True),
    ("lastpoint",
     "SELECT hostname, time, usage_user, src FROM (SELECT hostname, time, usage_user, src, "
     "row_number() OVER (PARTITION BY hostname ORDER BY time DESC) AS rn FROM {t}) AS x "
     "WHERE rn = 1", False),
    ("latest-of-one-host",
     "SELECT time, usage_user, src FROM {t} WHERE hostname = 'h1' ORDER BY time DESC LIMIT 1",
     True),
    ("hourly-aggregate",
     "SELECT date_trunc('hour', time) AS hour, hostname, max(usage_user) AS m, "
     "min(usage_system) AS lo, count(*) AS n FROM {t} GROUP BY hour, hostname", False),
    ("explicit-ingest-times",
     "SELECT time, usage_user, src FROM {t} WHERE hostname = 'h3' AND time < '2024-05-01T23:20:00Z'",
     False),
]


def minute(m):
    return START + dt.timedelta(minutes=m)


def make_commits(rng):
    """Rows of the five commits: lists of dicts (time, hostname, metrics[, _ingest_ts])."""
    c1 = [{"time": minute(m), "hostname": f"h{h}", "usage_user": rng.randrange(101),
           "usage_system": rng.randrange(101)} for h in range(5) for m in range(120)]
    old = {(r["hostname"], r["time"]): r for r in c1}

    def changed(key):
        """Other values than commit 1 had, so filters flip for many keys."""
        r = old.get(key)
        u = (r["usage_user"] + rng.randrange(20, 81)) % 101 if r else rng.randrange(101)
        s = (r["usage_system"] + rng.randrange(1, 101)) % 101 if r else rng.randrange(101)
        return {"time": key[1], "hostname": key[0], "usage_user": u, "usage_system": s}

    c2 = [changed((f"h{h}", minute(m))) for m in range(30, 90) for h in range(3)]
    c2 += [changed((f"h{h}", minute(m))) for m in range(110, 120) for h in range(2)]
    c2 += [changed(("h5", minute(m))) for m in range(30)]
    c3 = [changed(("h1", minute(m))) for m in range(60, 71) for _ in range(2)]
    rng.shuffle(c3)
    c3 += [changed(("h0", minute(0))), changed(("h1", minute(119)))]
    c4 = [dict(changed(("h3", minute(m))), _ingest_ts=OLD_INGEST) for m in range(10)]
    c4 += [dict(changed(("h3", minute(m))), _ingest_ts=FUTURE_INGEST) for m in range(10, 15)]
    c4 += [dict(changed(("h4", minute(m))), _ingest_ts=None) for m in range(5)]
    c5 = [changed(("h3", minute(m))) for m in range(5, 15)]
    return [c1, c2, c3, c4, c5]


def commit_table(rows, k):
    t = {
        "time": pa.array([r["time"] for r in rows], pa.timestamp("us", tz="UTC")),
        "hostname": pa.array([r["hostname"] for r in rows], pa.string()),
        "usage_user": pa.array([r["usage_user"] for r in rows], pa.int64()),
        "usage_system": pa.array([r["usage_system"] for r in rows], pa.int64()),
        "src": pa.array([f"c{k}:{i}" for i in range(len(rows))], pa.string()),
    }
    if any("_ingest_ts" in r for r in rows):
        t["_ingest_ts"] = pa.array([r.get("_ingest_ts") for r in rows],
                                   pa.timestamp("us", tz="UTC"))
    return pa.table(t)


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make release` or set TIMELAKE_BIN")
    import duckdb

    root = tmp_path_factory.mktemp("dedup-read")
    commits = make_commits(random.Random(5))
    files = []
    for k, rows in enumerate(commits, 1):
        path = root / f"commit-{k}.parquet"
        pq.write_table(commit_table(rows, k), path)
        files.append(path)
    warehouse = root / "warehouse"
    run_cli("-w", warehouse, "create", "dd", "--schema-from", files[0], "--time-column", "time",
            "--series-key", "hostname", "--chunk", "day", "--set", "timelake.auto-maintain=false")
    run_cli("-w", warehouse, "create", "dd_auto", "--schema-from", files[0], "--time-column",
            "time", "--series-key", "hostname", "--chunk", "day")
    stamps = []  # a time before each commit's own insertion time, for DuckDB's ordering
    for path in files:
        stamps.append(dt.datetime.now(UTC))
        for table in TABLES:
            run_cli("-w", warehouse, "append", table, path)

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    raw = " UNION ALL BY NAME ".join(
        f"SELECT *, {k} AS commit_no, file_row_number AS input_row, "
        f"TIMESTAMPTZ '{stamp.isoformat()}' AS commit_ts "
        f"FROM read_parquet('{path}', file_row_number = true)"
        for k, (path, stamp) in enumerate(zip(files, stamps), 1))
    con.execute(f"CREATE VIEW raw AS {raw}")
    for table in TABLES:
        con.execute(f"""
            CREATE VIEW {table} AS
            SELECT time, hostname, usage_user, usage_system, src FROM (
              SELECT *, row_number() OVER (
                  PARTITION BY hostname, time
                  ORDER BY coalesce(_ingest_ts, commit_ts) DESC, commit_no DESC, input_row DESC
                ) AS pick
              FROM raw)
            WHERE pick = 1""")
    yield types.SimpleNamespace(warehouse=warehouse, duck=con, files=files)
    con.close()


def test_data_exercises_the_tie_rule(lake):
    """The inputs hold what the queries are meant to catch (checked with DuckDB)."""
    q = lake.duck.execute
    # Keys written by more than one commit, and keys written twice in one file.
    assert q("SELECT count(*) FROM (SELECT 1 FROM raw GROUP BY hostname, time "
             "HAVING count(DISTINCT commit_no) > 1)").fetchone()[0] > 100
    assert q("SELECT count(*) FROM (SELECT 1 FROM raw GROUP BY hostname, time, commit_no "
             "HAVING count(*) > 1)").fetchone()[0] == 11
    # Filter flips: the old row passes `usage_user > 50` and the winner fails,
    # and the other way round.
    flips = q("""
        SELECT sum(CASE WHEN o.usage_user > 50 AND n.usage_user <= 50 THEN 1 ELSE 0 END),
               sum(CASE WHEN o.usage_user <= 50 AND n.usage_user > 50 THEN 1 ELSE 0 END)
        FROM raw o JOIN dd n ON o.hostname = n.hostname AND o.time = n.time
        WHERE o.commit_no = 1 AND n.src NOT LIKE 'c1:%'""").fetchone()
    assert flips[0] > 10 and flips[1] > 10, flips
    # The stored table really has several files per partition to merge.
    info = json.loads(run_cli("-w", lake.warehouse, "info", "dd", "--format", "json").stdout)
    assert info["files"] >= 8, info


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("name,sql,ordered", QUERIES, ids=[q[0] for q in QUERIES])
def test_dedup_on_read(lake, tmp_path, table, name, sql, ordered):
    sql = sql.format(t=table)
    expected = duckdb_query(lake.duck, sql)
    failure = None
    try:
        got = timelake_query(lake.warehouse, sql, tmp_path / "out.parquet")
    except QueryError as e:
        failure = f"Timelake failed: {e}\n--- SQL:\n{sql}"
    if failure:
        pytest.fail(f"dedup case {name} on {table}: {failure}", pytrace=False)
    diff = compare(expected, got, ordered=ordered)
    if diff:
        pytest.fail(describe_failure(f"{name} on {table}", sql, sql + "  -- over the deduped view",
                                     expected, got, diff, ordered), pytrace=False)


def test_latest_command_follows_the_tie_rule(lake):
    """`timelake latest` (the last-value index) picks the same newest rows."""
    want = sorted(lake.duck.execute(
        "SELECT hostname, src FROM (SELECT hostname, src, row_number() OVER "
        "(PARTITION BY hostname ORDER BY time DESC) AS rn FROM dd) WHERE rn = 1").fetchall())
    for table in TABLES:
        out = run_cli("-w", lake.warehouse, "latest", table, "--format", "json").stdout
        got = sorted((o["hostname"], o["src"]) for o in map(json.loads, out.splitlines()))
        assert got == want, table
