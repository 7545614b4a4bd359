# Copyright 2026 The Timelake Authors. Apache-2.0.
"""The first hour of a new user (issue 23): one test per defect seen.

Same conventions as test_cli.py (whose fixtures these tests share): the built
binary runs in a temporary directory, expected values come from the input
data written here, and where the output is the contract (--help text, error
lines) it is compared with a golden file under tests/cli/golden/.

    TIMELAKE_BIN=build/release/timelake .venv/bin/python -m pytest -q tests/cli
"""

import csv
import io
import json
import os
import pathlib
import pty
import re
import select
import subprocess

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from test_cli import (  # noqa: F401 (binary and cli are fixtures)
    DEVICES,
    ROWS,
    Cli,
    arrow_table,
    assert_one_error_line,
    binary,
    cli,
)

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"

# More rows than the text table shows on a terminal (40), from SQL alone.
N = 100
SERIES = f"SELECT value AS v, value * 2 AS w FROM generate_series(1, {N}) ORDER BY v"


def golden(name):
    return (GOLDEN / name).read_text()


# --- item 3: -o FILE takes its format from the extension, and every row ---------


def test_output_file_format_follows_extension_and_keeps_every_row(cli, tmp_path):
    want = [(v, 2 * v) for v in range(1, N + 1)]

    cli.run("sql", "-o", tmp_path / "res.parquet", SERIES)
    got = pq.read_table(tmp_path / "res.parquet").to_pylist()
    assert [(r["v"], r["w"]) for r in got] == want

    cli.run("sql", "-o", tmp_path / "res.csv", SERIES)
    rows = list(csv.reader(io.StringIO((tmp_path / "res.csv").read_text())))
    assert rows[0] == ["v", "w"]
    assert [(int(a), int(b)) for a, b in rows[1:]] == want

    for name in ("res.json", "res.ndjson", "res.jsonl"):
        cli.run("sql", "-o", tmp_path / name, SERIES)
        objects = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        assert [(o["v"], o["w"]) for o in objects] == want, name

    # A text table in a file is not a preview: every row, no "first 40 shown".
    cli.run("sql", "-o", tmp_path / "res.txt", SERIES)
    lines = (tmp_path / "res.txt").read_text().splitlines()
    assert [int(line.split("|")[0]) for line in lines[2:2 + N]] == [v for v, _ in want]
    assert "shown" not in lines[-1]

    # An explicit --format wins over the extension.
    cli.run("sql", "--format", "csv", "-o", tmp_path / "forced.json", SERIES)
    assert (tmp_path / "forced.json").read_text().splitlines()[0] == "v,w"


def test_latest_output_file_follows_extension(cli, tmp_path):
    data = tmp_path / "data.parquet"
    pq.write_table(arrow_table(ROWS), data)
    cli.run("import", "t", data, "--create", "--time-column", "time",
            "--series-key", "device")
    cli.run("latest", "t", "-o", tmp_path / "latest.parquet")
    got = pq.read_table(tmp_path / "latest.parquet").to_pylist()
    assert sorted(r["device"] for r in got) == sorted(DEVICES)


def test_output_to_a_pipe_is_not_truncated(cli):
    # capture_output makes stdout a pipe: the whole result, as on a file.
    proc = cli.run("sql", SERIES)
    lines = proc.stdout.splitlines()
    assert [int(line.split("|")[0]) for line in lines[2:]] == list(range(1, N + 1))
    # --max-rows still cuts when asked for.
    proc = cli.run("sql", "--max-rows", "5", SERIES)
    assert proc.stdout.splitlines()[-1] == f"… ({N} rows, first 5 shown)"


def test_output_file_of_unknown_extension_is_a_usage_error(cli, tmp_path):
    out = tmp_path / "res.xlsx"
    proc = cli.run("sql", "-o", out, SERIES, expect=2)
    assert_one_error_line(proc)
    assert proc.stderr == golden("output_unknown_extension.txt").replace(
        "{path}", str(out))
    assert not out.exists()


# --- item 9: read-only commands never create a warehouse -----------------------


def test_read_only_commands_do_not_create_a_warehouse(cli, tmp_path):
    typo = tmp_path / "warehuose"
    for args in (["ls"], ["info", "t"], ["latest", "t"], ["sql", "SELECT 1"],
                 ["maintain", "t"], ["alter", "t", "--set", "owner=x"], ["drop", "t"]):
        proc = cli.run("-w", typo, *args, warehouse=False, expect=1)
        assert proc.stderr == golden("no_warehouse.txt").replace("{warehouse}", str(typo))
        assert not typo.exists(), args
    url = f"file://{typo}"
    proc = cli.run("-w", url, "ls", warehouse=False, expect=1)
    assert proc.stderr == golden("no_warehouse.txt").replace("{warehouse}", url)
    assert not typo.exists()
    # A table that cannot exist there: nothing to drop, as asked.
    cli.run("-w", typo, "drop", "--if-exists", "t", warehouse=False)
    assert not typo.exists()
    # Writes create it.
    data = tmp_path / "data.parquet"
    pq.write_table(arrow_table(ROWS), data)
    cli.run("-w", typo, "import", "t", data, "--create", "--time-column", "time",
            warehouse=False)
    assert cli.run("-w", typo, "ls", warehouse=False).stdout == "default.t\n"


# --- item 4: a failed append --create leaves nothing; create-only flags -----------


def test_failed_append_create_leaves_no_table(cli, tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(arrow_table(ROWS), good)
    # The second file has a column the first one (so the new table) lacks.
    bad = tmp_path / "bad.csv"
    bad.write_text("time,device,temp,n,unexpected\n2024-01-02T00:00:00Z,x,1.5,1,2\n")
    proc = cli.run("import", "t", good, bad, "--create", "--time-column", "time",
                   expect=1)
    assert_one_error_line(proc)
    assert "nothing was committed and default.t was not created" in proc.stderr
    assert cli.run("ls").stdout == ""
    # Rows the table refuses (a null time) fail in the first commit: same.
    nulls = arrow_table(ROWS).set_column(
        0, "time", pa.array([None] * len(ROWS), pa.timestamp("us", tz="UTC")))
    pq.write_table(nulls, tmp_path / "nulls.parquet")
    proc = cli.run("import", "t", tmp_path / "nulls.parquet", "--create",
                   "--time-column", "time", expect=1)
    assert_one_error_line(proc)
    assert cli.run("ls").stdout == ""
    # The fixed input then creates the table with its own schema.
    cli.run("import", "t", good, "--create", "--time-column", "time")
    info = json.loads(cli.run("info", "t", "--format", "json").stdout)
    assert info["rows"] == len(ROWS)


def test_create_only_flags_are_refused_on_an_existing_table(cli, tmp_path):
    data = tmp_path / "data.parquet"
    pq.write_table(arrow_table(ROWS), data)
    cli.run("import", "t", data, "--create", "--time-column", "time")
    before = json.loads(cli.run("info", "t", "--format", "json").stdout)
    for flags, shown in ((["--series-key", "device"], "--series-key"),
                         (["--chunk", "hour", "--set", "owner=x"], "--chunk, --set"),
                         (["--create", "--time-column", "time"], "--time-column")):
        proc = cli.run("append", "t", data, *flags, expect=2)
        assert proc.stderr == golden("create_only_flags.txt").replace("{flags}", shown)
    assert json.loads(cli.run("info", "t", "--format", "json").stdout) == before
    # Without --create they would create nothing either: said so.
    proc = cli.run("append", "missing", data, "--chunk", "hour", expect=2)
    assert_one_error_line(proc)
    assert "--chunk need --create" in proc.stderr
    assert "missing" not in cli.run("ls").stdout


# --- item 6: deleting rows ----------------------------------------------------

# Three sensors, one reading each on two days.
READINGS = ("ts,sensor,v\n" + "".join(
    f"2026-12-0{d}T10:00:00Z,s{s},{d * 10 + s}\n" for d in (1, 2) for s in range(3)))


def readings_table(cli, tmp_path):
    data = tmp_path / "readings.csv"
    data.write_text(READINGS)
    cli.run("import", "r", data, "--create", "--time-column", "ts", "--series-key", "sensor")


def count(cli, where="true"):
    out = cli.run("sql", f"SELECT count(*) AS n FROM r WHERE {where}", "--format", "csv")
    return int(out.stdout.splitlines()[1])


def test_delete_says_what_it_removed_and_where_the_old_files_went(cli, tmp_path):
    readings_table(cli, tmp_path)
    out = cli.run("delete", "r", "--where", "sensor = 's1'").stdout.splitlines()
    assert out[0].startswith("deleted 2 rows from default.r in "), out
    assert out[0].endswith("2 partitions, 2 files removed (2 rewritten into 2, 4 rows copied)")
    assert out[1] == ("the old files stay for older snapshots until snapshot expiry "
                      "(`maintain`); --purge removes them now")
    assert count(cli) == 4 and count(cli, "sensor = 's1'") == 0
    # The newest row per series follows: s1 has none left.
    latest = cli.run("latest", "r", "--format", "csv").stdout
    assert [row[1] for row in csv_rows(latest)[1:]] == ["s0", "s2"]
    # SQL DELETE, from the same shell a user types queries in.
    proc = cli.run("sql", "DELETE FROM r WHERE ts < '2026-12-02'", "--format", "csv")
    assert csv_rows(proc.stdout) == [["rows_deleted", "files_removed", "files_written"],
                                     ["2", "1", "0"]]
    assert count(cli) == 2
    out = cli.run("delete", "r", "--where", "v > 100", "--purge").stdout.splitlines()
    assert out[0] == "no row of default.r matches; nothing deleted"
    assert re.fullmatch(r"purged: 2 snapshots expired, \d+ files deleted", out[1]), out


def test_delete_needs_a_predicate_and_names_a_bad_one(cli, tmp_path):
    readings_table(cli, tmp_path)
    proc = cli.run("delete", "r", expect=2)
    assert "--where is required" in proc.stderr, proc.stderr
    proc = cli.run("delete", "r", "--where", " ", expect=2)
    assert "--where needs a predicate; to delete every row say so: --where true" in proc.stderr
    proc = cli.run("delete", "r", "--where", "temperature > 3", expect=1)
    assert_one_error_line(proc)
    assert "deleting from default.r where temperature > 3" in proc.stderr
    assert "temperature" in proc.stderr.split("where temperature > 3", 1)[1]
    assert count(cli) == 6


# --- item 10: the smaller ones -------------------------------------------------

# Two sensors, each reading given twice at the same time: a dedup table keeps
# one row per (sensor, ts).
DUPLICATED = ("ts,sensor,v\n2024-01-01T00:00:00Z,a,1\n2024-01-01T00:00:00Z,a,2\n"
              "2024-01-01T00:00:10Z,b,3\n2024-01-01T00:00:10Z,b,4\n")


def dedup_table(cli, tmp_path, appends=1):
    data = tmp_path / "dup.csv"
    data.write_text(DUPLICATED)
    procs = [cli.run("import", "d", data, "--create", "--time-column", "ts",
                     "--series-key", "sensor")]
    procs += [cli.run("append", "d", data) for _ in range(appends - 1)]
    return procs


def csv_rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_set_takes_the_hyphenated_setting_name(cli, tmp_path):
    dedup_table(cli, tmp_path, appends=2)  # 2 stored copies of each (sensor, ts)
    count = "SELECT count(*) AS n FROM d"
    assert csv_rows(cli.run("sql", "--format", "csv", count).stdout) == [["n"], ["2"]]
    for name in ("timelake.read-dedup", "timelake.read_dedup"):
        proc = cli.run("sql", "--format", "csv", f"SET {name} = false; {count}")
        assert csv_rows(proc.stdout) == [["n"], ["4"]], name
        proc = cli.run("sql", "--format", "csv", f"SET {name} = false; SHOW {name}")
        assert csv_rows(proc.stdout)[1] == ["timelake.read_dedup", "false"], name


def test_show_gives_the_default_in_force(cli):
    registry = json.loads(cli.run("settings", "--format", "json").stdout)
    defaults = {s["sql"]: s["default"] for s in registry
                if "session" in s["levels"] and s["default"]}
    assert "timelake.read_dedup" in defaults
    for name, default in defaults.items():
        proc = cli.run("sql", "--format", "csv", f"SHOW {name}")
        assert csv_rows(proc.stdout) == [["name", "value"], [name, default]], name


def test_import_help_says_import(cli):
    assert cli.run("import", "--help").stdout == golden("import_help.txt")
    assert cli.run("append", "--help").stdout == golden("import_help.txt").replace(
        "timelake import", "timelake append").replace("Aliases: append", "Aliases: import")


def test_json_output_is_named_ndjson(cli):
    # The contract of --format: json and ndjson are both NDJSON, and say so.
    help_lines = cli.run("sql", "--help").stdout.splitlines()
    start = next(i for i, line in enumerate(help_lines) if "--format" in line)
    text = " ".join(line.strip() for line in help_lines[start:start + 4])
    assert "json or ndjson (both NDJSON: one object per line)" in text
    ndjson = cli.run("sql", "--format", "ndjson", SERIES).stdout
    assert ndjson == cli.run("sql", "--format", "json", SERIES).stdout
    assert [json.loads(line)["v"] for line in ndjson.splitlines()] == list(range(1, N + 1))


def test_demo_uses_timelake_warehouse(binary, tmp_path):
    warehouse = tmp_path / "from-env"
    env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
    env["TIMELAKE_WAREHOUSE"] = str(warehouse)
    proc = subprocess.run([str(binary), "demo", "--hosts", "1", "--hours", "1"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "timelake-demo").exists()
    cli = Cli(binary, tmp_path, warehouse)
    got = cli.run("sql", "--format", "csv", "SELECT count(*) AS n FROM demo.cpu")
    assert csv_rows(got.stdout) == [["n"], [str(3600 // 10)]]
    # The index the demo reads its newest rows from has landed: no text says not.
    assert "not landed" not in proc.stdout and "not yet" not in proc.stdout


def test_info_lists_columns(cli, tmp_path):
    data = tmp_path / "data.parquet"
    table = arrow_table(ROWS)
    pq.write_table(table, data)
    cli.run("import", "t", data, "--create", "--time-column", "time")
    info = json.loads(cli.run("info", "t", "--format", "json").stdout)
    given = {f.name: str(f.type) for f in table.schema}
    got = {c["name"]: c["type"] for c in info["columns"]}
    for name, type_name in given.items():
        # Stored types are normalised (timestamps in UTC), so compare kinds.
        assert got[name].split("[")[0] == type_name.split("[")[0], (name, got)
    assert "_ingest_ts" in got
    text = cli.run("info", "t").stdout.splitlines()
    start = text.index("columns")
    listed = [line.split()[0] for line in text[start + 1:start + 1 + len(got)]]
    assert listed == [c["name"] for c in info["columns"]]


def test_explain_in_table_format_shows_whole_plan_lines(cli, tmp_path):
    dedup_table(cli, tmp_path)
    query = "EXPLAIN SELECT sensor, max(v) AS top FROM d WHERE sensor = 'a' GROUP BY sensor"
    plans = csv_rows(cli.run("sql", "--format", "csv", query).stdout)[1:]
    text = cli.run("sql", query).stdout
    assert "…" not in text and "\\n" not in text
    for plan_type, plan in plans:
        assert f"{plan_type}:" in text.splitlines()
        for line in plan.splitlines():
            assert f"  {line}" in text.splitlines(), line


def test_dedup_append_says_how_many_duplicates_it_replaced(cli, tmp_path):
    proc = dedup_table(cli, tmp_path)[0]
    assert "appended 2 rows" in proc.stdout
    assert "(4 given; 2 duplicates of (sensor, ts) replaced)" in proc.stdout


def test_info_says_what_rows_counts_while_duplicates_await_compaction(cli, tmp_path):
    dedup_table(cli, tmp_path, appends=2)
    text = cli.run("info", "d").stdout
    rows = int(re.search(r"^rows\s+(\d+)$", text, re.M).group(1))
    count = int(csv_rows(cli.run("sql", "--format", "csv",
                                 "SELECT count(*) AS n FROM d").stdout)[1][0])
    assert (rows, count) == (4, 2)
    dedup = re.search(r"^dedup\s+(.*)$", text, re.M).group(1)
    assert "(sensor, ts)" in dedup and "count(*)" in dedup and "compaction" in dedup
    # After compaction they agree.
    cli.run("maintain", "d")
    text = cli.run("info", "d").stdout
    assert int(re.search(r"^rows\s+(\d+)$", text, re.M).group(1)) == count



# --- item 1: epoch numbers and time text ---------------------------------------

# 2026-12-03 11:00:40 UTC and ten seconds later.
EPOCH_S = 1_796_295_640
EPOCH_US = [EPOCH_S * 1_000_000, (EPOCH_S + 10) * 1_000_000]


def epoch_micros(cli, table):
    """The table's times as epoch microseconds, in order."""
    query = (f"SELECT CAST(round(date_part('epoch', ts) * 1000000) AS BIGINT) AS us "
             f"FROM {table} ORDER BY us")
    return [int(r[0]) for r in csv_rows(cli.run("sql", "--format", "csv", query).stdout)[1:]]


def refused(cli, *args):
    """Runs a command that must fail with one error line; returns its stderr."""
    proc = cli.run(*args, expect=1)
    assert_one_error_line(proc)
    return proc.stderr


def times_table(cli, tmp_path):
    """Table t (sensor, ts, v) with one ISO row, for appends of other forms."""
    first = tmp_path / "first.csv"
    first.write_text("sensor,ts,v\nz,2026-01-01T00:00:00Z,0\n")
    cli.run("append", "t", first, "--create", "--time-column", "ts", "--series-key", "sensor")
    return [1_767_225_600_000_000]


def test_epoch_seconds_are_refused_without_a_unit(cli, tmp_path):
    before = times_table(cli, tmp_path)
    data = tmp_path / "epoch.csv"
    data.write_text(f"sensor,ts,v\na,{EPOCH_S},1\na,{EPOCH_S + 10},2\n")
    err = refused(cli, "append", "t", data)
    assert "column 'ts' holds numbers" in err and "--time-unit" in err
    assert "epoch seconds is 2026-12-03 11:00:40" in err, err
    assert epoch_micros(cli, "t") == before
    cli.run("append", "t", data, "--time-unit", "s")
    assert epoch_micros(cli, "t") == before + EPOCH_US
    parts = {p.name for p in (cli.warehouse / "default" / "t" / "data").iterdir()}
    assert not any("1970" in p for p in parts), parts


@pytest.mark.parametrize("unit,scale", [("ms", 0.001), ("us", 1), ("ns", 1000)])
def test_epoch_numbers_create_a_table_in_the_unit_given(cli, tmp_path, unit, scale):
    data = tmp_path / "epoch.csv"
    data.write_text("".join(["sensor,ts,v\n"] + [f"a,{int(us * scale)},{k}\n"
                                                 for k, us in enumerate(EPOCH_US)]))
    args = ["append", "t", data, "--create", "--time-column", "ts", "--series-key", "sensor"]
    err = refused(cli, *args)
    assert "time column 'ts' holds numbers" in err and "--time-unit" in err
    assert cli.run("ls").stdout.strip() == ""
    cli.run(*args, "--time-unit", unit)
    assert epoch_micros(cli, "t") == EPOCH_US


def test_create_from_epoch_numbers_takes_the_unit(cli, tmp_path):
    data = tmp_path / "epoch.csv"
    data.write_text(f"sensor,ts,v\na,{EPOCH_S},1\na,{EPOCH_S + 10},2\n")
    err = refused(cli, "create", "t", "--schema-from", data, "--time-column", "ts")
    assert "--time-unit" in err
    cli.run("create", "t", "--schema-from", data, "--time-column", "ts", "--time-unit", "s")
    cli.run("append", "t", data, "--time-unit", "s")
    assert epoch_micros(cli, "t") == EPOCH_US


def test_an_unknown_time_zone_is_named_and_changes_nothing(cli, tmp_path):
    before = times_table(cli, tmp_path)
    data = tmp_path / "local.csv"
    data.write_text("sensor,ts,v\na,2026-12-03 11:00:40,1\n")
    err = refused(cli, "append", "t", data, "--time-zone", "Mars/Olympus")
    assert "Mars/Olympus" in err
    assert epoch_micros(cli, "t") == before


def test_fractional_epoch_seconds_and_ndjson_numbers(cli, tmp_path):
    times_table(cli, tmp_path)
    data = tmp_path / "epoch.ndjson"
    data.write_text(f'{{"sensor": "a", "ts": {EPOCH_S}.25, "v": 1}}\n'
                    f'{{"sensor": "a", "ts": {EPOCH_S + 10}, "v": 2}}\n')
    refused(cli, "append", "t", data)
    cli.run("append", "t", data, "--time-unit", "s")
    assert epoch_micros(cli, "t")[1:] == [EPOCH_US[0] + 250_000, EPOCH_US[1]]


def test_time_text_without_a_zone_says_it_was_read_as_utc(cli, tmp_path):
    before = times_table(cli, tmp_path)
    data = tmp_path / "local.csv"
    data.write_text("sensor,ts,v\na,2026-12-03 11:00:40,1\na,2026/12/03 11:00:50,2\n")
    proc = cli.run("append", "t", data)
    assert "note: column 'ts': times without a zone were read as UTC" in proc.stderr
    assert epoch_micros(cli, "t") == before + EPOCH_US
    # In the zone given instead: Berlin is UTC+1 in December.
    later = tmp_path / "berlin.csv"
    later.write_text("sensor,ts,v\nb,2026-12-03 12:00:40,3\n")
    proc = cli.run("append", "t", later, "--time-zone", "Europe/Berlin")
    assert "read in Europe/Berlin" in proc.stderr
    assert epoch_micros(cli, "t") == before + [EPOCH_US[0]] * 2 + [EPOCH_US[1]]


def test_unreadable_time_text_names_the_value_and_the_forms(cli, tmp_path):
    before = times_table(cli, tmp_path)
    data = tmp_path / "odd.csv"
    data.write_text("sensor,ts,v\na,2026-12-03T11:00:40Z,1\na,03.12.2026 11:00,2\n")
    err = refused(cli, "append", "t", data)
    assert "cannot read '03.12.2026 11:00' (row 2) as a time" in err, err
    assert "ISO 8601" in err and "assume_timezone" not in err
    assert epoch_micros(cli, "t") == before


def test_nanosecond_text_is_refused_or_truncated(cli, tmp_path):
    before = times_table(cli, tmp_path)
    data = tmp_path / "nanos.csv"
    data.write_text("sensor,ts,v\na,2026-12-03T11:00:40.123456789Z,1\n")
    err = refused(cli, "append", "t", data)
    assert "finer than the microseconds" in err and "--truncate-time" in err
    assert epoch_micros(cli, "t") == before
    proc = cli.run("append", "t", data, "--truncate-time")
    assert "cut to microseconds" in proc.stderr
    assert epoch_micros(cli, "t") == before + [EPOCH_US[0] + 123_456]
    # Mixed with a zone-less time, the column stays text and is read row by
    # row: the same refusal, naming the row.
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("sensor,ts,v\nb,2026-12-03T11:00:40Z,1\n"
                     "b,2026-12-03 11:00:50.000000789,2\n")
    err = refused(cli, "append", "t", mixed)
    assert "'2026-12-03 11:00:50.000000789' (row 2) is finer than the microseconds" in err, err
    cli.run("append", "t", mixed, "--truncate-time")
    assert epoch_micros(cli, "t") == before + [EPOCH_US[0], EPOCH_US[0] + 123_456, EPOCH_US[1]]


# --- item 8: the progress bar follows the rows read, gzipped too --------------

PROGRESS_ROWS = 2_000_000
FRAME = re.compile(r"\[[# ]{20}\]\s+(\d+)% ([\d.]+)([kMG]?) rows")


def big_csv(path, rows):
    """`rows` readings of 50 sensors, one second apart, as CSV (gzipped when
    the name ends in .gz)."""
    index = pa.array(range(rows), pa.int64())
    table = pa.table({
        "ts": pc.add(pa.scalar(1_772_323_200_000_000, pa.timestamp("us")),
                     pc.multiply(index, 1_000_000).cast(pa.duration("us"))),
        "sensor": pc.cast(pc.bit_wise_and(index, 63), pa.int32()),
        "value": pc.divide(pc.cast(index, pa.float64()), 7.0),
    })
    if path.suffix == ".gz":
        with pa.CompressedOutputStream(str(path), "gzip") as out:
            pacsv.write_csv(table, out)
    else:
        pacsv.write_csv(table, str(path))


def progress_frames(binary, warehouse, path):
    """Runs `append --create` with stderr on a terminal; returns the progress
    frames as (percent, rows) in the order drawn."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(binary), "-w", str(warehouse), "append", "--create", "--time-column", "ts",
         "--series-key", "sensor", "t", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    output = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        assert ready, "no progress output within 120 s"
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal closed: the process has exited
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0, output.decode(errors="replace")
    scale = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}
    return [(int(m.group(1)), float(m.group(2)) * scale[m.group(3)])
            for m in FRAME.finditer(output.decode(errors="replace"))]


@pytest.mark.parametrize("name", ["big.csv", "big.csv.gz"])
def test_progress_follows_the_rows_read(binary, tmp_path, name):
    path = tmp_path / name
    big_csv(path, PROGRESS_ROWS)
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    frames = progress_frames(binary, warehouse, path)
    assert len(frames) >= 3, frames
    *drawn, last = frames
    assert last == (100, PROGRESS_ROWS), frames
    percents = [p for p, _ in frames]
    assert percents == sorted(percents), frames
    # Each frame's percentage is the share of the rows read so far, give or
    # take the rounding of "1.2M" and one batch; before the fix the bar stood
    # at 100% with a third of the rows read.
    for percent, rows in drawn:
        assert abs(percent - 100 * rows / PROGRESS_ROWS) <= 10, frames
    assert any(0 < p < 100 for p, _ in drawn), frames
