"""The TSBS cpu-only query set, written for DataFusion (Timelake C++ and 0.7) and
DuckDB, plus the scan each query needs (for PyIceberg, which has no SQL, and the
pyarrow decode reference).

Standard TSBS definitions, on a data set of `hours` hours:
  single-groupby-1-1-1   max(usage_user) per minute, 1 host, 1 hour
  single-groupby-5-1-12  max of 5 metrics per minute, 1 host, 12 hours
  cpu-max-all-8          max of all 10 metrics per hour, 8 hosts, 8 hours
  double-groupby-1       avg(usage_user) per host per hour, all hosts, 12 hours
  double-groupby-all     avg of all 10 metrics per host per hour, all hosts, 12 hours
  high-cpu-1             rows of 1 host with usage_user > 90, 12 hours
  lastpoint              the newest row of every host
  groupby-orderby-limit  max(usage_user) per minute of the 5 newest minutes before a time
A window longer than the data covers all of it. Hosts and windows are drawn from
random.Random(f"{seed}/{query name}"), so they depend only on the seed and the data
set. Pure standard library: it is imported under Timelake 0.7's environment too.
"""

import datetime as dt
import random

METRICS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
           "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]

MINUTE_US = 60_000_000
HOUR_US = 60 * MINUTE_US

# The name of the table in each SQL dialect.
TIMELAKE_TABLE = "bench.cpu"
DUCKDB_TABLE = "cpu"

# The row of the query table that times Session::Latest / lake.latest() instead of SQL.
LATEST_API = "lastpoint-latest-api"


def iso(us):
    return dt.datetime.fromtimestamp(us / 1e6, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def df_ts(us):
    return f"TIMESTAMP '{iso(us)}Z'"


def duck_ts(us):
    return f"TIMESTAMPTZ '{iso(us).replace('T', ' ')}+00'"


def hosts_list(hosts):
    return ", ".join(f"'{h}'" for h in hosts)


def window(rng, start_us, end_us, length_us):
    """A random whole-minute window of `length_us` inside [start_us, end_us)."""
    if length_us >= end_us - start_us:
        return start_us, end_us
    minutes = (end_us - start_us - length_us) // MINUTE_US
    first = start_us + rng.randint(0, minutes) * MINUTE_US
    return first, first + length_us


def _query(name, select, where, group, order, limit, scan, columns):
    """One query in both dialects. `where` is a function of the timestamp literal
    function; `scan` says what PyIceberg must read (hosts, time range, filter)."""
    tail = (f" GROUP BY {group}" if group else "") + f" ORDER BY {order}" + \
        (f" LIMIT {limit}" if limit else "")

    def sql(table, ts):
        w = where(ts)
        return f"SELECT {select} FROM {table}" + (f" WHERE {w}" if w else "") + tail
    return {"name": name, "sql": sql(TIMELAKE_TABLE, df_ts), "duckdb": sql(DUCKDB_TABLE, duck_ts),
            "scan": scan, "columns": columns}


def time_filter(start, end):
    """A WHERE clause on [start, end) (None: unbounded), for a literal function."""
    def where(ts):
        parts = []
        if start is not None:
            parts.append(f"time >= {ts(start)}")
        if end is not None:
            parts.append(f"time < {ts(end)}")
        return " AND ".join(parts)
    return where


def build(seed, hosts, start_us, end_us):
    """The query list for a data set of `hosts` hosts covering [start_us, end_us)."""
    all_hosts = [f"host_{h}" for h in range(hosts)]

    def rng(name):
        return random.Random(f"{seed}/{name}")

    def pick_hosts(r, n):
        return sorted(r.sample(all_hosts, min(n, hosts)), key=lambda h: int(h[5:]))

    qs = []

    r = rng("single-groupby-1-1-1")
    h, (a, b) = pick_hosts(r, 1), window(r, start_us, end_us, HOUR_US)
    qs.append(_query(
        "single-groupby-1-1-1",
        "date_trunc('minute', time) AS minute, max(usage_user) AS max_usage_user",
        lambda ts: f"hostname IN ({hosts_list(h)}) AND {time_filter(a, b)(ts)}",
        "1", "minute", None,
        {"hosts": h, "start_us": a, "end_us": b}, ["time", "hostname", "usage_user"]))

    r = rng("single-groupby-5-1-12")
    h, (a, b) = pick_hosts(r, 1), window(r, start_us, end_us, 12 * HOUR_US)
    m = METRICS[:5]
    qs.append(_query(
        "single-groupby-5-1-12",
        "date_trunc('minute', time) AS minute, " + ", ".join(f"max({x}) AS max_{x}" for x in m),
        lambda ts: f"hostname IN ({hosts_list(h)}) AND {time_filter(a, b)(ts)}",
        "1", "minute", None,
        {"hosts": h, "start_us": a, "end_us": b}, ["time", "hostname"] + m))

    r = rng("cpu-max-all-8")
    h, (a, b) = pick_hosts(r, 8), window(r, start_us, end_us, 8 * HOUR_US)
    qs.append(_query(
        "cpu-max-all-8",
        "date_trunc('hour', time) AS hour, " + ", ".join(f"max({x}) AS max_{x}" for x in METRICS),
        lambda ts: f"hostname IN ({hosts_list(h)}) AND {time_filter(a, b)(ts)}",
        "1", "hour", None,
        {"hosts": h, "start_us": a, "end_us": b}, ["time", "hostname"] + METRICS))

    r = rng("double-groupby-1")
    a, b = window(r, start_us, end_us, 12 * HOUR_US)
    qs.append(_query(
        "double-groupby-1",
        "date_trunc('hour', time) AS hour, hostname, avg(usage_user) AS mean_usage_user",
        time_filter(a, b), "1, 2", "hour, hostname", None,
        {"start_us": a, "end_us": b}, ["time", "hostname", "usage_user"]))

    r = rng("double-groupby-all")
    a, b = window(r, start_us, end_us, 12 * HOUR_US)
    qs.append(_query(
        "double-groupby-all",
        "date_trunc('hour', time) AS hour, hostname, "
        + ", ".join(f"avg({x}) AS mean_{x}" for x in METRICS),
        time_filter(a, b), "1, 2", "hour, hostname", None,
        {"start_us": a, "end_us": b}, ["time", "hostname"] + METRICS))

    r = rng("high-cpu-1")
    h, (a, b) = pick_hosts(r, 1), window(r, start_us, end_us, 12 * HOUR_US)
    qs.append(_query(
        "high-cpu-1",
        "time, hostname, " + ", ".join(METRICS),
        lambda ts: f"usage_user > 90 AND hostname IN ({hosts_list(h)}) AND "
                   f"{time_filter(a, b)(ts)}",
        None, "time", None,
        {"hosts": h, "start_us": a, "end_us": b, "usage_user_gt": 90},
        ["time", "hostname"] + METRICS))

    last_cols = "hostname, time, " + ", ".join(METRICS)
    lastpoint = {
        "name": "lastpoint",
        # The newest-row-per-series form that Timelake answers from its
        # last-value index (SPEC §6).
        "sql": f"SELECT {last_cols} FROM (SELECT {last_cols}, ROW_NUMBER() OVER "
               f"(PARTITION BY hostname ORDER BY time DESC) AS rn FROM {TIMELAKE_TABLE}) "
               f"WHERE rn = 1 ORDER BY hostname",
        "duckdb": f"SELECT DISTINCT ON (hostname) {last_cols} FROM {DUCKDB_TABLE} "
                  f"ORDER BY hostname, time DESC",
        "scan": {}, "columns": ["hostname", "time"] + METRICS}
    qs.append(lastpoint)

    r = rng("groupby-orderby-limit")
    # TSBS draws the end time anywhere in the data; at least 5 minutes in.
    span_min = (end_us - start_us) // MINUTE_US
    b = start_us + r.randint(min(5, span_min), span_min) * MINUTE_US
    qs.append(_query(
        "groupby-orderby-limit",
        "date_trunc('minute', time) AS minute, max(usage_user) AS max_usage_user",
        time_filter(None, b), "1", "minute DESC", 5,
        {"end_us": b}, ["time", "usage_user"]))

    # Not a TSBS query: lastpoint through the API (Session::Latest, lake.latest),
    # checked against the lastpoint rows on lastpoint's columns.
    qs.append({"name": LATEST_API, "latest": TIMELAKE_TABLE, "check_as": "lastpoint",
               "check_columns": ["hostname", "time"] + METRICS,
               "columns": ["hostname", "time"] + METRICS})
    return qs
