# Copyright 2026 The Timelake Authors. Apache-2.0.
"""`timelake upgrade` and `timelake alter`'s schema changes (issue #18): their
--help (golden files), what each prints in text and JSON, and the usage errors
that stop them before they touch the table.

    TIMELAKE_BIN=build/release/timelake .venv/bin/python -m pytest -q tests/cli
"""

import datetime as dt
import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

from test_cli import assert_one_error_line, binary, cli  # noqa: F401 (fixtures)

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
T0 = dt.datetime(2026, 7, 1, tzinfo=dt.timezone.utc)


def golden(name):
    return (GOLDEN / name).read_text()


def test_help_of_upgrade_and_alter(cli):
    assert cli.run("upgrade", "--help").stdout == golden("upgrade_help.txt")
    assert cli.run("alter", "--help").stdout == golden("alter_help.txt")


def plain_table(cli, tmp_path):
    """A plain table (no time column) of two appends: what upgrade adopts."""
    for i in range(2):
        path = tmp_path / f"p{i}.parquet"
        pq.write_table(pa.table({
            "ts": pa.array([T0 + dt.timedelta(hours=5 - k, minutes=i) for k in range(5)],
                           pa.timestamp("us", tz="UTC")),
            "host": [f"h{k % 2}" for k in range(5)],
            "v": [float(k) for k in range(5)],
        }), path)
        cli.run("append", "p", path, *(["--create"] if i == 0 else []))


def test_upgrade_prints_the_steps_it_would_make_and_made(cli, tmp_path):
    plain_table(cli, tmp_path)
    adopt = ["--time-column", "ts", "--series-key", "host"]
    dry = cli.run("upgrade", "p", "--dry-run", *adopt).stdout.splitlines()
    assert dry[0] == ("default.p (format 0.3.0, version 3) needs 5 upgrade steps; nothing "
                      "was changed (dry run):"), dry
    assert [line.split(":")[0].strip() for line in dry[1:]] == [
        "1. protect-snapshots", "2. add-contract", "3. build-last-value-index",
        "4. rewrite-files", "5. write-head"], dry
    assert dry[2] == ("  2. add-contract: add the time-series contract: time column ts, "
                      "series key host, unpartitioned, dedup on, the insertion-time column "
                      "_ingest_ts, sort order (host, ts)"), dry
    assert dry[4] == ("  4. rewrite-files: rewrite (unpartitioned): 2 files (2 unsorted, 2 "
                      "files where 1 suffices)"), dry

    done = cli.run("upgrade", "p", *adopt).stdout.splitlines()
    assert done[0].startswith("upgraded default.p in "), done
    assert done[0].endswith(" s: version 7"), done
    assert done[2] == ("  2. add-contract: add the time-series contract: time column ts, "
                       "series key host, unpartitioned, dedup on, the insertion-time column "
                       "_ingest_ts, sort order (host, ts) (version 5)"), done
    assert done[4] == ("  4. rewrite-files: rewrite (unpartitioned): 2 files (2 unsorted, 2 "
                       "files where 1 suffices) (version 7)"), done
    assert done[5] == "  5. write-head: write the head object of the version reached", done
    # A dry run lists what a run does, in the same words.
    assert [line.split(" (version")[0] for line in done[1:]] == dry[1:], (done, dry)

    again = json.loads(cli.run("upgrade", "p", "--format", "json").stdout)
    assert again["steps"] == [] and again["version"] == 7 and not again["dry_run"]
    assert cli.run("upgrade", "p").stdout == (
        "default.p is current (format 0.3.0, version 7); nothing to upgrade\n")


def test_alter_prints_what_it_changed(cli, tmp_path):
    plain_table(cli, tmp_path)
    # A double does not widen to a decimal: refused, and the valid changes
    # given with it are not made either.
    proc = cli.run("alter", "p", "--add-column", "note:string", "--rename-column", "v:value",
                   "--widen-column", "value:decimal(20, 4)", expect=1)
    assert_one_error_line(proc)
    assert ("changing the schema of default.p: widening column 'value' from double to "
            "decimal(20, 4): not a widening") in proc.stderr, proc.stderr
    # A bad --set refuses the column changes given with it (one commit).
    proc = cli.run("alter", "p", "--add-column", "note:string", "--set",
                   "timelake.row-group-rows=10", expect=1)
    assert_one_error_line(proc)
    assert "timelake.row-group-rows = '10': expected at least 1000 rows" in proc.stderr
    info = json.loads(cli.run("info", "p", "--format", "json").stdout)
    assert "note" not in [c["name"] for c in info["columns"]]
    out = cli.run("alter", "p", "--add-column", "note:string", "--rename-column", "v:value",
                  "--set", "owner=ops").stdout
    assert out == ("altered default.p: version 4; renamed column v to value; added column "
                   "note (string); set owner = ops\n"), out
    info = json.loads(cli.run("info", "p", "--format", "json").stdout)
    assert [c["name"] for c in info["columns"]] == ["ts", "host", "value", "note"]
    assert info["properties"]["owner"] == "ops"


def test_usage_errors_change_nothing(cli, tmp_path):
    plain_table(cli, tmp_path)
    warehouse = pathlib.Path(cli.warehouse)
    before = {str(p): p.stat().st_size for p in warehouse.rglob("*") if p.is_file()}
    for args in (["alter", "p"], ["alter", "p", "--add-column", "x"],
                 ["alter", "p", "--add-column", "x:decimal(40,2)"],
                 ["alter", "p", "--widen-column", "v:"],
                 ["upgrade", "p", "--keep-snapshots", "a week"],
                 ["upgrade", "p", "--format", "yaml"]):
        proc = cli.run(*args, expect=2)
        assert_one_error_line(proc)
    after = {str(p): p.stat().st_size for p in warehouse.rglob("*") if p.is_file()}
    assert after == before
