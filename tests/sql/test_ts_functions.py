# Copyright 2026 The Timelake Authors. Apache-2.0.
"""m4, time_weighted_mean and time_weighted_state (issue #16, SPEC §6) against
Timelake 0.7's functions of the same names, on the same rows.

The rows (`readings()`) cover the rules' corners: ties of values (min/max pick
the earliest), equal times (m4's first/last and the time-weighted tie rule),
nulls (ignored; an all-null series), a single reading, NaN and infinities,
and series that cross a day partition boundary (two files). 0.7 gets them in
one append, sorted, on a dedup-off table; our table gets them in several
appends written out of time order, some files overlapping in time, so our
answers must not depend on the order files and partitions arrive in (0.7's
own time_weighted_mean fails at random on such tables). Every query runs on
both and the results are compared value by value (floats to 1e-9 relative).
Error messages for wrong arguments are compared too.
"""

import datetime as dt
import json
import math
import pathlib
import random
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sqlcase import QueryError, run_cli, timelake_query

ROOT = pathlib.Path(__file__).resolve().parents[2]
TL07_PYTHON = ROOT / ".venv-tl07" / "bin" / "python"
UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, 22, 0, tzinfo=UTC)  # 2 h before a day boundary
REL_TOL = 1e-9

BUCKETED = "date_bin(INTERVAL '1 hour', time)"
QUERIES = {
    "m4-per-series": "SELECT s, m4(time, v) AS m FROM t GROUP BY s",
    "twm-per-series":
        "SELECT s, time_weighted_mean(time, v) AS f, time_weighted_mean(time, v, 'linear') AS l, "
        "time_weighted_mean(time, v, 'forward_fill') AS f2 FROM t GROUP BY s",
    "hourly": f"SELECT s, {BUCKETED} AS b, m4(time, v) AS m, time_weighted_mean(time, v) AS f, "
              f"time_weighted_mean(time, v, 'LINEAR') AS l FROM t GROUP BY s, b",
    "daily": "SELECT s, date_trunc('day', time) AS d, m4(time, v) AS m, "
             "time_weighted_mean(time, v) AS f FROM t GROUP BY s, d",
    "states": "SELECT s, time_weighted_state(time, v) AS f, "
              "time_weighted_state(time, v, 'linear') AS l FROM t GROUP BY s",
    "states-hourly": f"SELECT s, {BUCKETED} AS b, time_weighted_state(time, v) AS f "
                     f"FROM t GROUP BY s, b",
    "merged-states":
        "SELECT s, m4(m) AS m, time_weighted_mean(f) AS f, time_weighted_mean(l, 'linear') AS l, "
        "time_weighted_mean(l) AS lf, time_weighted_state(f) AS st FROM ("
        f"SELECT s, {BUCKETED} AS b, m4(time, v) AS m, time_weighted_state(time, v) AS f, "
        "time_weighted_state(time, v, 'linear') AS l FROM t GROUP BY s, b) GROUP BY s",
    "filtered": "SELECT s, m4(time, v) AS m, time_weighted_mean(time, v) AS f FROM t "
                "WHERE time >= '2026-01-01T23:30:00Z' AND time < '2026-01-02T00:45:00Z' "
                "GROUP BY s",
    "no-rows": "SELECT m4(time, v) AS m, time_weighted_mean(time, v) AS f, "
               "time_weighted_state(time, v) AS st FROM t WHERE s = 'nobody'",
}
# Hourly states as a rollup would store them (the bucket as the time column).
STORED_STATES = (f"SELECT s, {BUCKETED} AS time, time_weighted_state(time, v) AS f, "
                 f"time_weighted_state(time, v, 'linear') AS l, m4(time, v) AS m "
                 f"FROM t GROUP BY s, 2")
ERRORS = {
    "m4-one-number": "SELECT m4(v) FROM t",
    "m4-swapped": "SELECT m4(v, time) FROM t",
    "m4-three": "SELECT m4(time, v, v) FROM t",
    "m4-text-value": "SELECT m4(time, s) FROM t",
    "twm-bad-method": "SELECT time_weighted_mean(time, v, 'bogus') FROM t",
    "twm-column-method": "SELECT time_weighted_mean(time, v, s) FROM t",
    "twm-one-number": "SELECT time_weighted_mean(v) FROM t",
    "twm-text-value": "SELECT time_weighted_mean(time, s) FROM t",
    "twm-four": "SELECT time_weighted_mean(time, v, 'linear', 1) FROM t",
    "overlapping-states":
        "SELECT time_weighted_mean(st) FROM (SELECT s, time_weighted_state(time, v) AS st "
        "FROM t GROUP BY s)",
}


def at(seconds):
    return T0 + dt.timedelta(seconds=seconds)


def readings():
    """(series, seconds after T0, value) rows; see the module docstring."""
    rows = [
        # Ties of values: max 5 at 10 s and 20 s, min 0 at 30 s and 40 s.
        ("ties", 0, 1.0), ("ties", 10, 5.0), ("ties", 20, 5.0), ("ties", 30, 0.0),
        ("ties", 40, 0.0), ("ties", 50, 2.0),
        # Equal times, with a NaN in a tie.
        ("eq", 0, 1.0), ("eq", 0, 7.0), ("eq", 10, 2.0), ("eq", 10, 4.0), ("eq", 10, 3.0),
        ("eq", 20, 6.0), ("eq", 30, 1.0), ("eq", 30, math.nan),
        ("eqonly", 100, 2.0), ("eqonly", 100, 5.0), ("eqonly", 100, 1.0),
        ("single", 5, 3.0),
        ("allnull", 0, None), ("allnull", 10, None),
        ("somenull", 0, 1.0), ("somenull", 10, None), ("somenull", 20, 3.0),
        ("nan", 0, 2.0), ("nan", 10, math.nan), ("nan", 20, 1.0),
        ("inf", 0, 2.0), ("inf", 10, -math.inf), ("inf", 20, math.inf),
        ("zeros", 0, 0.0), ("zeros", 0, -0.0), ("zeros", 5, 0.0),
    ]
    # Random series over 3 hours across midnight, readings every ~10 s with
    # repeated times and values from a small set (ties).
    rng = random.Random(16)
    for name in ("r1", "r2", "r3"):
        t = rng.randrange(0, 60)
        for _ in range(900):
            if rng.random() < 0.8:
                t += rng.randrange(1, 25)
            value = None if rng.random() < 0.03 else float(rng.randrange(0, 20)) / 2
            rows.append((name, t, value))
    return rows


def table_of(rows):
    return pa.table({
        "time": pa.array([at(r[1]) for r in rows], pa.timestamp("us", tz="UTC")),
        "s": pa.array([r[0] for r in rows], pa.string()),
        "v": pa.array([r[2] for r in rows], pa.float64()),
    })


def our_files(rows, tmp_path):
    """Our appends: the rows cut into pieces by time, appended latest first
    (files out of time order), plus two pieces that overlap in time."""
    rows = sorted(rows, key=lambda r: r[1])
    n = len(rows)
    cuts = [0, n // 5, 2 * n // 5, 3 * n // 5, n]
    pieces = [rows[a:b] for a, b in zip(cuts, cuts[1:])]
    rng = random.Random(7)
    last = pieces.pop()
    rng.shuffle(last)  # rows of one file in any order: the writer sorts
    half = len(last) // 2
    pieces += [last[half:], last[:half]]  # two files overlapping in time
    files = []
    for i, piece in enumerate(reversed(pieces)):
        f = tmp_path / f"in-{i}.parquet"
        pq.write_table(table_of(piece), f)
        files.append(f)
    return files


TL07_SCRIPT = r"""
import json, sys, pathlib, timelake, pyarrow.parquet as pq
warehouse, data, out = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
spec = json.loads(pathlib.Path(sys.argv[4]).read_text())
lake = timelake.Lake(warehouse)
rows = pq.read_table(data)
table = lake.create_table("t", rows.schema, time_column="time", series_key=["s"], dedup=False)
table.append(rows)
pq.write_table(lake.sql(spec["states"]), out / "stored-states.parquet")
errors = {}
for name, sql in spec["queries"].items():
    # 0.7 reports a false "runs overlap in time" at random when a series'
    # files arrive out of order; a retry reads them in another order.
    for attempt in range(20):
        try:
            result = lake.sql(sql)
            break
        except Exception as e:
            if "overlap in time" not in str(e) or attempt == 19:
                raise
    pq.write_table(result, out / f"{name}.parquet")
for name, sql in spec["errors"].items():
    try:
        lake.sql(sql)
        errors[name] = None
    except Exception as e:
        errors[name] = str(e)
(out / "errors.json").write_text(json.dumps(errors))
"""


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """Both sides' results: {"ours": {name: rows or QueryError}, "tl07": ...,
    "tl07_errors": {name: message}}."""
    if not TL07_PYTHON.exists():
        pytest.fail(f"{TL07_PYTHON} missing: run scripts/setup.sh test")
    tmp = tmp_path_factory.mktemp("ts-functions")
    rows = readings()
    data = tmp / "all.parquet"
    pq.write_table(table_of(sorted(rows, key=lambda r: (r[0], r[1]))), data)
    out07 = tmp / "tl07"
    out07.mkdir()
    spec = tmp / "spec.json"
    spec.write_text(json.dumps({"queries": QUERIES, "errors": ERRORS, "states": STORED_STATES}))
    proc = subprocess.run([str(TL07_PYTHON), "-c", TL07_SCRIPT, tmp / "wh07", data, out07, spec],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"timelake 0.7 failed:\n{proc.stdout}\n{proc.stderr}"

    warehouse = tmp / "wh"
    for i, f in enumerate(our_files(rows, tmp)):
        args = ["-w", warehouse, "append", "t", f]
        if i == 0:
            args += ["--create", "--time-column", "time", "--series-key", "s",
                     "--set", "timelake.dedup=false"]
        run_cli(*args)
    ours = {}
    for name, sql in {**QUERIES, **ERRORS}.items():
        try:
            ours[name] = pq.read_table(_query(warehouse, sql, tmp / f"ours-{name}.parquet"))
        except QueryError as e:
            ours[name] = e
    tl07 = {name: pq.read_table(out07 / f"{name}.parquet") for name in QUERIES}
    return {"ours": ours, "tl07": tl07,
            "tl07_errors": json.loads((out07 / "errors.json").read_text()),
            "tl07_states": out07 / "stored-states.parquet",
            "warehouse": warehouse, "tmp": tmp}


def _query(warehouse, sql, out):
    timelake_query(warehouse, sql, out)  # raises QueryError on failure
    return out


def same(a, b, path="value"):
    """None when a and b agree (floats to REL_TOL, NaN equal to NaN, lists and
    structs element by element), else where they differ."""
    if isinstance(a, float) or isinstance(b, float):
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
            return f"{path}: {a!r} != {b!r}"
        if math.isnan(a) or math.isnan(b):
            return None if math.isnan(a) and math.isnan(b) else f"{path}: {a!r} != {b!r}"
        if math.isinf(a) or math.isinf(b):
            return None if a == b else f"{path}: {a!r} != {b!r}"
        ok = math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-9)
        if (ok and path.endswith(".value") and a == 0 and b == 0
                and math.copysign(1, a) != math.copysign(1, b)):
            ok = False  # m4's points (`.value`) tell -0.0 from 0.0
        # Elsewhere a zero's sign is not compared: at equal times 0.7 keeps
        # whichever of 0.0 and -0.0 came last, we keep 0.0 (docs/sql.md).
        return None if ok else f"{path}: {a!r} != {b!r}"
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}: {a!r} vs {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            if (d := same(x, y, f"{path}[{i}]")) is not None:
                return d
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path}: fields {list(a)} != {list(b)}"
        for k in a:
            if (d := same(a[k], b[k], f"{path}.{k}")) is not None:
                return d
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def keyed_rows(table):
    """Rows as dicts sorted by their non-aggregate columns (s, b, d)."""
    keys = [c for c in ("s", "b", "d") if c in table.column_names]
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: tuple(str(r[k]) for k in keys))


@pytest.mark.parametrize("name", list(QUERIES))
def test_same_answers_as_timelake07(answers, name):
    ours, theirs = answers["ours"][name], answers["tl07"][name]
    assert not isinstance(ours, QueryError), f"{QUERIES[name]}: {ours}"
    assert ours.column_names == theirs.column_names
    assert ours.schema.types == theirs.schema.types, f"{ours.schema}\nvs\n{theirs.schema}"
    got, want = keyed_rows(ours), keyed_rows(theirs)
    assert len(got) == len(want) > 0
    diff = same(got, want, "rows")
    assert diff is None, f"{QUERIES[name]}\n{diff}"


def test_the_rows_cover_the_corners(answers):
    """The comparison means something: the corners are in the answers."""
    by_series = {r["s"]: r for r in answers["tl07"]["twm-per-series"].to_pylist()}
    assert by_series["allnull"]["f"] is None
    assert by_series["single"]["f"] == 3.0
    assert math.isnan(by_series["nan"]["f"])
    m4 = {r["s"]: r["m"] for r in answers["tl07"]["m4-per-series"].to_pylist()}
    assert m4["allnull"] == [] and len(m4["single"]) == 1
    assert [(p["time"], p["value"]) for p in m4["eqonly"]] == [(at(100), 1.0), (at(100), 5.0)]
    # The random series cross the day boundary: two day groups each.
    days = answers["tl07"]["daily"].to_pylist()
    assert {r["d"].day for r in days if r["s"] == "r1"} == {1, 2}


def _core(message):
    """The sentence of an error message that names the problem: what follows
    the last 'Error during planning: ' / 'Execution error: ', up to
    DataFusion's generic advice."""
    for marker in ("Error during planning: ", "Execution error: "):
        if marker in message:
            message = message.rsplit(marker, 1)[1]
    return message.split(". No function matches")[0].split("\n")[0].strip()


@pytest.mark.parametrize("name", [n for n in ERRORS if n != "overlapping-states"])
def test_same_errors_as_timelake07(answers, name):
    ours, theirs = answers["ours"][name], answers["tl07_errors"][name]
    assert theirs is not None, f"0.7 accepted {ERRORS[name]}"
    assert isinstance(ours, QueryError), f"we accepted {ERRORS[name]}"
    assert _core(theirs) in str(ours), f"0.7: {theirs}\nours: {ours}"


def test_overlapping_states_fail_with_their_ranges(answers):
    """Merging the states of different series overlaps in time: both refuse,
    ours names the ranges."""
    assert answers["tl07_errors"]["overlapping-states"] is not None
    ours = answers["ours"]["overlapping-states"]
    assert isinstance(ours, QueryError)
    assert "overlap in time" in str(ours)


def test_out_of_order_files_answer_every_time(answers, tmp_path):
    """The table's files came out of time order and overlap: the same query
    gives the same exact answer on every run (0.7 fails at random here)."""
    sql = QUERIES["twm-per-series"]
    first = keyed_rows(answers["ours"]["twm-per-series"])
    for i in range(3):
        again = pq.read_table(_query(answers["warehouse"], sql, tmp_path / f"again-{i}.parquet"))
        assert same(keyed_rows(again), first) is None


def test_a_time_filter_still_prunes_files(answers):
    """The aggregates do not stop pruning: with a filter on time, the files of
    the other day partition are not read."""
    sql = ("SELECT s, m4(time, v) AS m, time_weighted_mean(time, v) AS f FROM t "
           "WHERE time >= '2026-01-02T00:00:00Z' GROUP BY s")
    proc = run_cli("-w", answers["warehouse"], "sql", sql, "--explain-analyze")
    scan = re.search(r"timelake scan: (?:\w+\.)?t: (\d+) live files, (\d+) pruned", proc.stdout)
    assert scan, proc.stdout
    live, pruned = int(scan.group(1)), int(scan.group(2))
    assert 0 < pruned < live, proc.stdout


def test_we_merge_the_states_timelake07_stored(answers, tmp_path):
    """States 0.7 computed per hour, stored in one of our tables (through
    Parquet, across the day partitions), merged by us: 0.7's direct answers."""
    warehouse = tmp_path / "wh"
    run_cli("-w", warehouse, "append", "st", answers["tl07_states"], "--create",
            "--time-column", "time", "--series-key", "s")
    got = pq.read_table(_query(
        warehouse, "SELECT s, m4(m) AS m, time_weighted_mean(f) AS f, "
        "time_weighted_mean(l, 'linear') AS l FROM st GROUP BY s", tmp_path / "merged.parquet"))
    m4 = {r["s"]: r["m"] for r in answers["tl07"]["m4-per-series"].to_pylist()}
    twm = {r["s"]: r for r in answers["tl07"]["twm-per-series"].to_pylist()}
    rows = got.to_pylist()
    assert len(rows) == len(m4)
    for r in rows:
        assert same(r["m"], m4[r["s"]], f"{r['s']}.m") is None
        assert same(r["f"], twm[r["s"]]["f"], f"{r['s']}.f") is None
        assert same(r["l"], twm[r["s"]]["l"], f"{r['s']}.l") is None
