# Copyright 2026 The Timelake Authors. Apache-2.0.
"""Behaviour of the `timelake` command-line tool (SPEC §10).

Runs the built binary (env TIMELAKE_BIN, default build/release/timelake) in a
temporary directory. Input files are written with pyarrow and the standard
library, and every expected value is computed from that input data here, never
copied from the tool's output.

    TIMELAKE_BIN=build/release/timelake .venv/bin/python -m pytest -q tests/cli
"""

import csv
import datetime as dt
import gzip
import io
import json
import os
import pathlib
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TIMELAKE_BIN", ROOT / "build" / "release" / "timelake"))
TABLE = "iot.readings"
START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)

# Device names: two that CSV inference would read as integers ("007" would
# lose its zeros) and two that it cannot.
DEVICES = ["dev-a", "dev-b", "007", "010"]
STEPS = 6  # readings per device, 10 s apart


def reading(device_index, step):
    """One row. Temperatures are exact in binary; one of them is null."""
    temp = None if (device_index, step) == (1, 0) else 20 + device_index + step * 0.25
    return {
        "time": START + dt.timedelta(seconds=10 * step),
        "device": DEVICES[device_index],
        "temp": temp,
        "n": device_index * 100 + step,
    }


ROWS = [reading(d, s) for s in range(STEPS) for d in range(len(DEVICES))]


def iso(ts):
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def shown(ts):
    """How the CLI prints a timestamp: UTC, no fraction when it is zero."""
    return ts.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def write_csv(path, rows, delimiter=",", opener=open):
    with opener(path, "wt", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter)
        writer.writerow(["time", "device", "temp", "n"])
        for r in rows:
            temp = "" if r["temp"] is None else repr(r["temp"])
            writer.writerow([iso(r["time"]), r["device"], temp, r["n"]])


def write_ndjson(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps({**r, "time": iso(r["time"])}) + "\n")


def arrow_table(rows):
    return pa.table(
        {
            "time": pa.array([r["time"] for r in rows], pa.timestamp("us", tz="UTC")),
            "device": pa.array([r["device"] for r in rows], pa.string()),
            "temp": pa.array([r["temp"] for r in rows], pa.float64()),
            "n": pa.array([r["n"] for r in rows], pa.int64()),
        }
    )


@pytest.fixture(scope="session")
def binary():
    if not BIN.exists():
        pytest.fail(f"{BIN} does not exist: run `make release` or set TIMELAKE_BIN")
    return BIN


class Cli:
    def __init__(self, binary, cwd, warehouse):
        self.binary = binary
        self.cwd = cwd
        self.warehouse = warehouse

    def run(self, *args, warehouse=True, stdin=None, expect=0):
        env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
        argv = [str(self.binary)]
        if warehouse:
            argv += ["-w", str(self.warehouse)]
        argv += [str(a) for a in args]
        proc = subprocess.run(
            argv, cwd=self.cwd, env=env, input=stdin or "", capture_output=True, text=True,
            timeout=300,
        )
        if expect is not None:
            assert proc.returncode == expect, (
                f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout}\n"
                f"stderr:\n{proc.stderr}"
            )
        return proc


@pytest.fixture
def cli(binary, tmp_path):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    return Cli(binary, tmp_path, warehouse)


def assert_one_error_line(proc):
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("timelake: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and "terminate called" not in proc.stderr


def input_files(tmp_path):
    """The rows split over every supported input format, in time order."""
    by_step = {s: [r for r in ROWS if r["time"] == START + dt.timedelta(seconds=10 * s)]
               for s in range(STEPS)}
    files = []
    write_csv(tmp_path / "part1.csv", by_step[0] + by_step[1])
    files.append(tmp_path / "part1.csv")
    write_ndjson(tmp_path / "part2.ndjson", by_step[2] + by_step[3])
    files.append(tmp_path / "part2.ndjson")
    pq.write_table(arrow_table(by_step[4]), tmp_path / "part3.parquet")
    files.append(tmp_path / "part3.parquet")
    # Only the digit-only device names: read with inferred types they would
    # turn into integers.
    digits = [r for r in by_step[5] if r["device"].isdigit()]
    write_csv(tmp_path / "part4.csv.gz", digits, opener=gzip.open)
    files.append(tmp_path / "part4.csv.gz")
    write_csv(tmp_path / "part5.tsv", [r for r in by_step[5] if r not in digits], "\t")
    files.append(tmp_path / "part5.tsv")
    return files


@pytest.fixture
def loaded(cli, tmp_path):
    files = input_files(tmp_path)
    proc = cli.run("create", TABLE, "--schema-from", files[0], "--time-column", "time",
                   "--series-key", "device")
    assert f"created {TABLE}" in proc.stdout
    proc = cli.run("append", TABLE, *files)
    assert f"appended {len(ROWS)} rows from {len(files)} files" in proc.stdout
    return cli


def parse_csv(text):
    return list(csv.reader(io.StringIO(text)))


def expected_csv_rows(rows):
    out = []
    for r in sorted(rows, key=lambda r: (r["device"], r["time"])):
        temp = "" if r["temp"] is None else r["temp"]
        out.append([r["device"], shown(r["time"]), temp, int(r["n"])])
    return out


def typed(csv_rows):
    """device, time as text; temp as float (or '' for null); n as int."""
    return [[d, t, float(temp) if temp != "" else "", int(n)] for d, t, temp, n in csv_rows]


QUERY = f"SELECT device, time, temp, n FROM {TABLE} ORDER BY device, time"


def test_append_every_format_then_query_csv(loaded):
    proc = loaded.run("sql", "--format", "csv", QUERY)
    table = parse_csv(proc.stdout)
    assert table[0] == ["device", "time", "temp", "n"]
    assert typed(table[1:]) == expected_csv_rows(ROWS)
    # The timing line goes to stderr, the data alone to stdout.
    assert re.search(rf"\({len(ROWS)} rows, [0-9.]+ (ms|s)\)", proc.stderr)


def test_query_json_is_ndjson(loaded):
    proc = loaded.run("sql", "--format", "json", QUERY)
    objects = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(objects) == len(ROWS)
    want = sorted(ROWS, key=lambda r: (r["device"], r["time"]))
    for got, r in zip(objects, want):
        assert got["device"] == r["device"]
        assert got["temp"] == r["temp"]
        assert got["n"] == r["n"]
        assert dt.datetime.fromisoformat(got["time"].replace("Z", "+00:00")) == r["time"]


def test_query_to_parquet_file(loaded, tmp_path):
    out = tmp_path / "result.parquet"
    loaded.run("sql", "--format", "parquet", "-o", out, QUERY)
    got = pq.read_table(out).to_pylist()
    want = sorted(ROWS, key=lambda r: (r["device"], r["time"]))
    assert [(g["device"], g["time"], g["temp"], g["n"]) for g in got] == [
        (r["device"], r["time"], r["temp"], r["n"]) for r in want
    ]


def test_text_table_is_aligned_and_truncated(loaded):
    proc = loaded.run("sql", "--max-rows", "3", QUERY)
    lines = proc.stdout.splitlines()
    header, separator, body, footer = lines[0], lines[1], lines[2:5], lines[5:]
    assert [c.strip() for c in header.split("|")] == ["device", "time", "temp", "n"]
    assert set(separator) <= {"-", "+"}
    # Every line has its column separators at the same places.
    bars = [i for i, c in enumerate(header) if c == "|"]
    for line in body:
        assert [i for i, c in enumerate(line) if c == "|"] == bars, lines
    want = expected_csv_rows(ROWS)[:3]
    cells = [[c.strip() for c in line.split("|")] for line in body]
    assert [[c[0], c[1], "" if c[2] == "NULL" else float(c[2]), int(c[3])] for c in cells] == want
    assert footer == [f"… ({len(ROWS)} rows, first 3 shown)"]


def test_script_splits_on_semicolons_outside_quotes_and_comments(loaded, tmp_path):
    script = tmp_path / "script.sql"
    script.write_text(
        "-- a comment; with a semicolon\n"
        "SELECT 'a;b' AS x;\n"
        "/* block; comment */ SELECT count(*) AS \"c;n\" FROM iot.readings;\n"
        "\n-- trailing comment only\n"
    )
    proc = loaded.run("sql", "--format", "csv", "-f", script)
    assert parse_csv(proc.stdout) == [["x"], ["a;b"], ["c;n"], [str(len(ROWS))]]
    # Statements without ';' at the end of stdin run too.
    proc = loaded.run("sql", "--format", "csv", stdin="SELECT 1 AS one; SELECT 2 AS two")
    assert parse_csv(proc.stdout) == [["one"], ["1"], ["two"], ["2"]]


def test_latest_is_newest_row_per_device(loaded):
    proc = loaded.run("latest", TABLE, "--format", "json")
    got = {o["device"]: o for o in map(json.loads, proc.stdout.splitlines())}
    newest = {}
    for r in ROWS:
        if r["device"] not in newest or r["time"] > newest[r["device"]]["time"]:
            newest[r["device"]] = r
    assert set(got) == set(newest)
    for device, r in newest.items():
        assert got[device]["n"] == r["n"]
        assert got[device]["temp"] == r["temp"]


def test_ls_and_info(loaded):
    assert TABLE in loaded.run("ls").stdout.splitlines()
    assert loaded.run("ls", "iot").stdout.splitlines() == [TABLE]
    assert loaded.run("ls", "other").stdout == ""
    info = json.loads(loaded.run("info", TABLE, "--format", "json").stdout)
    assert info["name"] == TABLE
    assert info["rows"] == len(ROWS)
    assert info["time_column"] == "time"
    assert info["series_key"] == ["device"]
    assert info["chunk"] == "day"
    assert info["files"] >= 1 and info["bytes"] > 0
    text = loaded.run("info", TABLE).stdout
    assert re.search(rf"^rows\s+{len(ROWS)}$", text, re.M), text


def test_bad_sql_is_one_error_line(loaded):
    proc = loaded.run("sql", "SELEC nonsense FROM", expect=1)
    assert_one_error_line(proc)
    assert proc.stdout == ""


def test_unknown_table(cli):
    for args in (["info", "nowhere.nothing"], ["sql", "SELECT * FROM nowhere.nothing"],
                 ["latest", "nowhere.nothing"], ["drop", "nowhere.nothing"]):
        proc = cli.run(*args, expect=1)
        assert_one_error_line(proc)
    # --if-exists makes dropping a missing table fine.
    cli.run("drop", "--if-exists", "nowhere.nothing")


def test_usage_errors_exit_2(cli, tmp_path):
    assert_one_error_line(cli.run("sql", "--no-such-flag", "SELECT 1", expect=2))
    assert_one_error_line(cli.run(expect=2))  # no subcommand
    proc = cli.run("ls", warehouse=False, expect=2)
    assert_one_error_line(proc)
    assert "-w" in proc.stderr
    # --set before the subcommand holds session settings, named timelake.*.
    assert_one_error_line(cli.run("--set", "foo=1", "sql", "SELECT 1", expect=2))
    assert_one_error_line(cli.run("--set", "timelake.read-dedup=off", "ls", expect=2))
    proc = cli.run("append", TABLE, tmp_path / "data.unknown-extension", expect=None)
    assert proc.returncode in (1, 2)
    assert_one_error_line(proc)


def test_bad_rows_change_nothing(loaded, tmp_path):
    extra = tmp_path / "extra.csv"
    extra.write_text("time,device,temp,n,unexpected\n2024-01-02T00:00:00Z,x,1.5,1,2\n")
    assert_one_error_line(loaded.run("append", TABLE, extra, expect=1))
    info = json.loads(loaded.run("info", TABLE, "--format", "json").stdout)
    assert info["rows"] == len(ROWS)


def test_append_create_and_batch_id(cli, tmp_path):
    data = tmp_path / "data.parquet"
    pq.write_table(arrow_table(ROWS), data)
    proc = cli.run("import", "t2", data, "--create", "--time-column", "time",
                   "--series-key", "device", "--chunk", "hour", "--batch-id", "load-1")
    assert f"appended {len(ROWS)} rows" in proc.stdout
    # The same batch id again commits nothing.
    cli.run("append", "t2", data, "--batch-id", "load-1")
    info = json.loads(cli.run("info", "t2", "--format", "json").stdout)
    assert info["name"] == "default.t2"
    assert info["chunk"] == "hour"
    assert info["rows"] == len(ROWS)
    # Small commits: one per --commit-rows rows.
    proc = cli.run("append", "t2", data, "--commit-rows", "10")
    commits = -(-len(ROWS) // 10)
    assert f"in {commits} commits" in proc.stdout


def test_alter_sets_and_removes_properties_without_a_snapshot(loaded):
    before = json.loads(loaded.run("info", TABLE, "--format", "json").stdout)
    loaded.run("alter", TABLE, "--set", "owner=ops", "--set", "timelake.dedup=false")
    after = json.loads(loaded.run("info", TABLE, "--format", "json").stdout)
    assert after["version"] == before["version"] + 1
    assert after["snapshot_id"] == before["snapshot_id"]
    assert after["properties"]["owner"] == "ops"
    assert after["dedup"] is False
    loaded.run("alter", TABLE, "--unset", "owner")
    assert "owner" not in json.loads(
        loaded.run("info", TABLE, "--format", "json").stdout)["properties"]
    # Layout settings are fixed at create; unknown ones are refused; nothing changes.
    assert_one_error_line(loaded.run("alter", TABLE, "--set", "timelake.chunk=hour", expect=1))
    assert_one_error_line(loaded.run("alter", TABLE, "--set", "timelake.bogus=1", expect=1))
    assert_one_error_line(loaded.run("alter", TABLE, expect=2))
    final = json.loads(loaded.run("info", TABLE, "--format", "json").stdout)
    assert final["version"] == before["version"] + 2


def test_drop(loaded):
    loaded.run("drop", TABLE)
    assert TABLE not in loaded.run("ls").stdout.splitlines()
    assert_one_error_line(loaded.run("drop", TABLE, expect=1))


def test_demo(binary, tmp_path):
    warehouse = tmp_path / "demo"
    cli = Cli(binary, tmp_path, warehouse)
    proc = cli.run("demo", "-w", warehouse, "--hosts", "3", "--hours", "1", warehouse=False)
    rows = 3 * 3600 // 10
    assert f"ingested {rows:,} rows" in proc.stdout
    for host in ("host_0", "host_1", "host_2"):
        assert host in proc.stdout
    assert f"timelake -w {warehouse} sql" in proc.stdout
    # The demo table is an ordinary table of the warehouse.
    got = cli.run("sql", "--format", "csv", "SELECT count(*) AS n, count(DISTINCT hostname) AS h "
                  "FROM demo.cpu")
    assert parse_csv(got.stdout) == [["n", "h"], [str(rows), "3"]]
    # Running it again starts from a fresh table.
    cli.run("demo", "--hosts", "2", "--hours", "1")
    got = cli.run("sql", "--format", "csv", "SELECT count(*) AS n FROM demo.cpu")
    assert parse_csv(got.stdout) == [["n"], [str(2 * 3600 // 10)]]
