# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Imports are all or nothing, and a new table's types hold every row (issue 23, item 2).

One test per behaviour that failed before: a bad value after more than a commit's worth of
rows left part of the file committed; a later `51.0` in a column whose first rows were
integers failed the import; `create` and `append --create` took no types from the user.
Same conventions as test_cli.py, whose fixtures these share.

    TIMELAKE_BIN=build/release/timelake .venv/bin/python -m pytest -q tests/cli
"""

import csv
import io
import json
import pathlib

import pytest

from test_cli import (  # noqa: F401 (binary and cli are fixtures)
    assert_one_error_line,
    binary,
    cli,
)

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"

# More rows than the 1,000,000 an import used to commit at a time.
LONG = 1_200_000


def golden(name):
    return (GOLDEN / name).read_text()


def csv_rows(text):
    return list(csv.reader(io.StringIO(text)))


def scalar(cli, sql):
    return csv_rows(cli.run("sql", "--format", "csv", sql).stdout)[1][0]


def column_types(cli, table):
    info = json.loads(cli.run("info", table, "--format", "json").stdout)
    return {c["name"]: c["type"] for c in info["columns"]}


def data_files(cli, table):
    data = cli.warehouse / "default" / table / "data"
    return sorted(p.name for p in data.rglob("*.parquet")) if data.exists() else []


def write_long(path, rows, bad_line=None, header="k,v"):
    """`rows` lines "k,v" with integer values, then `bad_line` if given; written in one go."""
    lines = [header + "\n"]
    lines += [f"{i},{i % 1000}\n" for i in range(rows)]
    if bad_line is not None:
        lines.append(bad_line + "\n")
    path.write_text("".join(lines))


def refused(cli, *args, expect=1):
    proc = cli.run(*args, expect=expect)
    assert_one_error_line(proc)
    return proc.stderr


# --- one commit per import ------------------------------------------------------------


def test_a_late_bad_value_commits_nothing(cli, tmp_path):
    first = tmp_path / "first.csv"
    write_long(first, 3)
    cli.run("append", "t", first, "--create")
    files_before = data_files(cli, "t")
    # A value the int64 column cannot hold after more rows than one commit used to take:
    # the first 1,000,000 rows were committed before the fix.
    bad = tmp_path / "bad.csv"
    write_long(bad, LONG, bad_line="7,x")
    err = refused(cli, "append", "t", bad)
    assert str(bad) in err and "(nothing was committed)" in err, err
    assert scalar(cli, "SELECT count(*) AS n FROM t") == "3"
    assert data_files(cli, "t") == files_before


def test_commit_rows_keeps_the_partial_commits_and_says_what_they_hold(cli, tmp_path):
    first = tmp_path / "first.csv"
    write_long(first, 3)
    cli.run("append", "t", first, "--create")
    bad = tmp_path / "bad.csv"
    write_long(bad, LONG, bad_line="7,x")
    err = refused(cli, "append", "t", bad, "--commit-rows", "300000")
    committed = int(scalar(cli, "SELECT count(*) AS n FROM t")) - 3
    assert committed > 0 and committed % 300_000 == 0, committed
    commits = committed // 300_000
    assert (f"(the first {committed:,} input rows were committed before this error, in "
            f"{commits} commit{'s' if commits > 1 else ''})") in err, err


def test_a_failed_append_create_after_many_rows_creates_no_table(cli, tmp_path):
    bad = tmp_path / "bad.csv"
    write_long(bad, LONG, bad_line="1,2,3")  # a line of three fields
    err = refused(cli, "append", "t", bad, "--create")
    assert "nothing was committed and default.t was not created" in err, err
    assert cli.run("ls").stdout == ""
    assert not (cli.warehouse / "default" / "t").exists()


def test_an_import_of_several_files_is_one_commit(cli, tmp_path):
    files = []
    for n in range(3):
        files.append(tmp_path / f"part{n}.csv")
        write_long(files[-1], 10)
    proc = cli.run("append", "t", *files, "--create")
    assert "appended 30 rows from 3 files in 1 commit:" in proc.stdout
    info = json.loads(cli.run("info", "t", "--format", "json").stdout)
    assert (info["snapshots"], info["rows"]) == (1, 30)


def test_batch_id_tags_the_one_commit(cli, tmp_path):
    data = tmp_path / "data.csv"
    write_long(data, 25)
    proc = cli.run("append", "t", data, "--create", "--batch-id", "load-1")
    assert "appended 25 rows in 1 commit" in proc.stdout
    proc = cli.run("append", "t", data, "--batch-id", "load-1")
    assert "appended 0 rows in 0 commits" in proc.stdout
    assert "(skipped 1 batch already committed)" in proc.stdout
    # With --commit-rows, one tag per commit: a re-run skips them all.
    proc = cli.run("append", "t", data, "--batch-id", "load-2", "--commit-rows", "10")
    assert "appended 25 rows in 3 commits" in proc.stdout
    proc = cli.run("append", "t", data, "--batch-id", "load-2", "--commit-rows", "10")
    assert "(25 given; skipped 3 batches already committed)" in proc.stdout
    assert scalar(cli, "SELECT count(*) AS n FROM t") == "50"


# --- types over the whole file --------------------------------------------------------


def test_a_late_float_in_an_integer_column_makes_it_float64(cli, tmp_path):
    rows = 2_000_001
    data = tmp_path / "late.csv"
    lines = ["k,v\n"] + [f"{i},{i % 1000}\n" for i in range(rows)]
    lines[rows - 1] = f"{rows - 2},51.0\n"  # the last row but one
    data.write_text("".join(lines))
    proc = cli.run("append", "t", data, "--create")
    assert f"appended {rows:,} rows in 1 commit" in proc.stdout
    assert ("note: column 'v' is float64: its first rows read as int64, but row 2,000,000 "
            "holds '51.0'") in proc.stderr, proc.stderr
    types = column_types(cli, "t")
    assert (types["k"], types["v"]) == ("int64", "double")
    want = sum(i % 1000 for i in range(rows)) - (rows - 2) % 1000 + 51
    assert float(scalar(cli, "SELECT sum(v) AS s FROM t")) == want


def test_create_infers_from_the_whole_file_too(cli, tmp_path):
    data = tmp_path / "late.csv"
    # More than a block of integers, then text: the column is a string column.
    write_long(data, LONG, bad_line=f"{LONG},unknown")
    proc = cli.run("create", "t", "--schema-from", data)
    assert (f"column 'v' is string: its first rows read as int64, but row {LONG + 1:,} "
            "holds 'unknown'") in proc.stderr, proc.stderr
    assert column_types(cli, "t")["v"] == "string"
    cli.run("append", "t", data)
    assert scalar(cli, f"SELECT v FROM t WHERE k = {LONG}") == "unknown"


# --- --column ---------------------------------------------------------------------------

READINGS = ("sensor,ts,v\n007,2026-01-01T00:00:00Z,1\n010,2026-01-01T00:00:10Z,2\n"
            "007,2026-01-01T00:00:20Z,3\n")


@pytest.mark.parametrize("command", ["create", "append"])
def test_column_gives_a_type_and_the_rest_is_inferred(cli, tmp_path, command):
    data = tmp_path / "readings.csv"
    data.write_text(READINGS)
    flags = ["--time-column", "ts", "--column", "sensor:text", "--column", "v: DOUBLE"]
    if command == "create":
        cli.run("create", "t", "--schema-from", data, *flags)
        cli.run("append", "t", data)
    else:
        cli.run("append", "t", data, "--create", *flags)
    types = column_types(cli, "t")
    assert (types["sensor"], types["v"]) == ("string", "double")
    assert types["ts"].startswith("timestamp")
    got = csv_rows(cli.run("sql", "--format", "csv",
                           "SELECT sensor, CAST(v * 2 AS BIGINT) AS w FROM t ORDER BY ts"
                           ).stdout)[1:]
    assert got == [["007", "2"], ["010", "4"], ["007", "6"]]


def test_an_unknown_column_type_is_named_before_anything_is_written(cli, tmp_path):
    data = tmp_path / "readings.csv"
    data.write_text(READINGS)
    for command in (["append", "t", data, "--create"], ["create", "t", "--schema-from", data]):
        err = refused(cli, *command, "--column", "v:doubel", expect=2)
        assert "--column 'v:doubel': unknown type 'doubel'" in err and "float64" in err, err
        err = refused(cli, *command, "--column", "speed:double", expect=2)
        assert "no column 'speed'" in err and str(data) in err, err
    assert cli.run("ls").stdout == ""
    assert not (cli.warehouse / "default").exists()


# --- --schema ---------------------------------------------------------------------------

SCHEMA = """# readings of the plant's sensors
ts: timestamp not null
sensor: string   # names like 007 keep their zeros

v: float64
"""


def test_schema_file_gives_every_column(cli, tmp_path):
    schema = tmp_path / "readings.schema"
    schema.write_text(SCHEMA)
    data = tmp_path / "readings.csv"
    data.write_text(READINGS)
    cli.run("create", "t", "--schema", schema, "--time-column", "ts", "--series-key", "sensor")
    info = json.loads(cli.run("info", "t", "--format", "json").stdout)
    assert [c["name"] for c in info["columns"]] == ["ts", "sensor", "v", "_ingest_ts"]
    types = column_types(cli, "t")
    assert (types["sensor"], types["v"]) == ("string", "double")
    cli.run("append", "t", data)
    cli.run("append", "u", data, "--create", "--schema", schema, "--time-column", "ts")
    for table in ("t", "u"):
        query = f"SELECT sensor, CAST(v * 2 AS BIGINT) AS w FROM {table} ORDER BY ts"
        got = csv_rows(cli.run("sql", "--format", "csv", query).stdout)[1:]
        assert got == [["007", "2"], ["010", "4"], ["007", "6"]], table


def test_schema_file_errors_name_the_line(cli, tmp_path):
    schema = tmp_path / "bad.schema"
    schema.write_text("ts: timestamp\nsensor string\n")
    data = tmp_path / "readings.csv"
    data.write_text(READINGS)
    err = refused(cli, "create", "t", "--schema", schema, expect=2)
    assert f"{schema} line 2: expected NAME:TYPE" in err, err
    schema.write_text("ts: timestamp\nv: decimal\n")
    err = refused(cli, "append", "t", data, "--create", "--schema", schema, expect=2)
    assert f"{schema} line 2: unknown type 'decimal'" in err, err
    good = tmp_path / "good.schema"
    good.write_text(SCHEMA)
    refused(cli, "create", "t", "--schema", good, "--schema-from", data, expect=2)
    refused(cli, "create", "t", "--schema", good, "--column", "v:int", expect=2)
    refused(cli, "create", "t", expect=2)
    assert cli.run("ls").stdout == ""


def test_types_are_create_only_flags(cli, tmp_path):
    schema = tmp_path / "readings.schema"
    schema.write_text(SCHEMA)
    data = tmp_path / "readings.csv"
    data.write_text(READINGS)
    cli.run("append", "t", data, "--create", "--time-column", "ts")
    before = json.loads(cli.run("info", "t", "--format", "json").stdout)
    for flags, shown in ((["--schema", schema], "--schema"),
                         (["--column", "v:double"], "--column")):
        proc = cli.run("append", "t", data, *flags, expect=2)
        assert proc.stderr == golden("create_only_flags.txt").replace("{flags}", shown)
    assert json.loads(cli.run("info", "t", "--format", "json").stdout) == before


def test_create_help(cli):
    assert cli.run("create", "--help").stdout == golden("create_help.txt")
