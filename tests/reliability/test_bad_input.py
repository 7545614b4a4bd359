"""Bad input to every CLI entry point (SPEC §3, §4.4, §10, §14): one clear
error line (`timelake: error: ...` on stderr, exit 1 or 2, nothing on stdout)
that names what was wrong, and nothing changes on storage (every file of the
warehouse, with a hash of its contents, is the same before and after).

Each case runs on a fresh warehouse holding one time-series table `bad.t`.
The corrupt-storage cases damage one stored file of that table first; then
`sql` and `latest` must fail with an error that names the file and says what
is wrong with it. (`latest` reads the table metadata, then the last-value
index, which it may replace by a scan when the index is unreadable: it is
checked on corrupt metadata JSON, and on a corrupt index it must still
answer, with the same rows.)"""

import dataclasses
import datetime as dt
import gzip
import hashlib
import json
import pathlib
import re
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from compat_helpers import run_cli

TABLE = "bad.t"
T0 = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
N = 10


def columns(**override):
    base = {
        "time": pa.array([T0 + dt.timedelta(seconds=k) for k in range(N)],
                         pa.timestamp("us", tz="UTC")),
        "dev": pa.array([f"d{k % 3}" for k in range(N)], pa.string()),
        "seq": pa.array(range(N), pa.int64()),
        "v": pa.array([k / 4 for k in range(N)], pa.float64()),
    }
    base.update(override)
    return pa.table({k: v for k, v in base.items() if v is not None})


CSV_HEADER = "time,dev,seq,v\n"


def make_inputs(d):
    """Every input file of the cases, in folder `d`; returns d."""
    pq.write_table(columns(), d / "good.parquet")
    pq.write_table(columns(seq=pa.array([f"n{k}" for k in range(N)])), d / "string-seq.parquet")
    pq.write_table(columns(seq=pa.array([k + 0.5 for k in range(N)])), d / "fraction-seq.parquet")
    pq.write_table(columns(v=pa.array([f"x{k}" for k in range(N)])), d / "string-v.parquet")
    pq.write_table(columns(time=pa.array([f"x{k}" for k in range(N)])), d / "string-time.parquet")
    times = [None, None, None] + [T0 + dt.timedelta(seconds=k) for k in range(N - 3)]
    pq.write_table(columns(time=pa.array(times, pa.timestamp("us", tz="UTC"))),
                   d / "null-time.parquet")
    pq.write_table(columns(time=None), d / "no-time.parquet")
    pq.write_table(columns(extra=pa.array(range(N), pa.int64())), d / "extra.parquet")
    good = (d / "good.parquet").read_bytes()
    (d / "truncated.parquet").write_bytes(good[:len(good) // 2])
    (d / "parquet-content.csv").write_bytes(good)
    (d / "parquet-content.ndjson").write_bytes(good)
    (d / "empty.parquet").write_bytes(b"")
    (d / "empty.csv").write_text("")
    row = "2026-01-02T00:00:0{k},d{k},{k},1.5\n"
    (d / "malformed.csv").write_text(CSV_HEADER + row.format(k=1)
                                     + "2026-01-02T00:00:02Z,d2,2\n" + row.format(k=3))
    (d / "bad-int.csv").write_text(CSV_HEADER + "2026-01-02T00:00:01Z,d1,abc,1.5\n")
    (d / "csv-content.parquet").write_text(CSV_HEADER + "2026-01-02T00:00:01Z,d1,1,1.5\n")
    (d / "not-gzipped.csv.gz").write_text(CSV_HEADER + "2026-01-02T00:00:01Z,d1,1,1.5\n")
    packed = gzip.compress((CSV_HEADER + "2026-01-02T00:00:01Z,d1,1,1.5\n" * 50).encode())
    (d / "truncated.csv.gz").write_bytes(packed[:len(packed) // 2])
    (d / "broken.ndjson").write_text('{"time": "2026-01-02T00:00:01Z", "dev": "d1", "seq": 1}\n'
                                     '{"time": "2026-01-02T00:00:02Z", "dev": "d2", "seq":\n')
    return d


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("inputs"))


def storage_state(root):
    """Every file below `root` with the SHA-256 of its contents."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def describe_change(before, after):
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return f"added {added}, removed {removed}, changed {changed}"


@pytest.fixture
def warehouse(tmp_path, inputs):
    """A fresh warehouse with the table bad.t holding good.parquet's rows."""
    w = tmp_path / "warehouse"
    w.mkdir()
    run_cli("-w", w, "create", TABLE, "--schema-from", inputs / "good.parquet",
            "--time-column", "time", "--series-key", "dev")
    run_cli("-w", w, "append", TABLE, inputs / "good.parquet")
    return w


def assert_refused(w, args, expect):
    """Runs `timelake -w W ARGS`: one error line matching every regex of
    `expect` (case-insensitive), a usage (2) or other (1) exit, no output and
    no change on storage. Returns the error line (the warehouse path as W)."""
    before = storage_state(w)
    proc = run_cli("-w", w, *args, check=False)
    after = storage_state(w)
    command = "timelake -w W " + " ".join(map(str, args))
    assert proc.returncode != 0, (
        f"{command} was accepted:\n{proc.stdout}\n{proc.stderr}")
    assert proc.returncode in (1, 2), f"{command} exited {proc.returncode}:\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("timelake: error: "), (
        f"{command}: not one error line:\n{proc.stderr}")
    # The warehouse's own path (with or without its leading slash) says
    # nothing about the error: the patterns see W in its place.
    line = lines[0].replace(str(w), "W").replace(str(w).lstrip("/"), "W")
    for crash in ("panicked", "Traceback", "terminate called", "Aborted", "Segmentation"):
        assert crash not in line, line
    for pattern in expect:
        assert re.search(pattern, line, re.I), f"{command}: {line!r} does not match {pattern!r}"
    assert proc.stdout == "", f"{command} printed {proc.stdout!r}"
    assert after == before, f"{command} changed storage: {describe_change(before, after)}"
    return line


@dataclasses.dataclass
class Case:
    id: str
    args: Callable[[pathlib.Path], list]  # the CLI arguments, given the inputs folder
    expect: list  # regexes the error line must match


def case(id, args, *expect):
    return pytest.param(Case(id, args if callable(args) else (lambda _: args), list(expect)),
                        id=id)


def append(*files, extra=()):
    return lambda d: ["append", TABLE, *(d / f for f in files), *extra]


def create(name, *extra, schema="good.parquet"):
    return lambda d: ["create", name, "--schema-from", d / schema, "--time-column", "time",
                      *extra]


def alter(*settings, verb="--set"):
    args = ["alter", TABLE]
    for s in settings:
        args += [verb, s]
    return args


APPEND = [
    case("append-string-in-int64-column", append("string-seq.parquet"),
         r"string-seq\.parquet", r"'seq'", "string", "int64"),
    case("append-fraction-in-int64-column", append("fraction-seq.parquet"),
         r"'seq'", "double", "int64"),
    case("append-string-in-double-column", append("string-v.parquet"), r"'v'", "string"),
    case("append-string-in-time-column", append("string-time.parquet"), r"'time'", "string"),
    case("append-csv-text-in-int64-column", append("bad-int.csv"), r"bad-int\.csv", "abc"),
    case("append-null-times", append("null-time.parquet"),
         r"null-time\.parquet", r"'time'", "null", r"\b3 of 10 rows"),
    case("append-missing-time-column", append("no-time.parquet"), r"no-time\.parquet", r"'time'"),
    case("append-extra-column", append("extra.parquet"), r"extra\.parquet", r"'extra'"),
    case("append-truncated-parquet", append("truncated.parquet"),
         r"truncated\.parquet", r"corrupt|truncat|magic"),
    case("append-csv-malformed-row", append("malformed.csv"), r"malformed\.csv", "column"),
    case("append-empty-parquet", append("empty.parquet"), r"empty\.parquet", r"empty|0 bytes"),
    case("append-empty-csv", append("empty.csv"), r"empty\.csv", "empty"),
    case("append-nonexistent-file", append("missing.parquet"),
         r"missing\.parquet", "no such file|not found|does not exist"),
    case("append-csv-content-parquet-extension", append("csv-content.parquet"),
         r"csv-content\.parquet", "parquet"),
    case("append-parquet-content-csv-extension", append("parquet-content.csv"),
         r"parquet-content\.csv", "csv"),
    case("append-parquet-content-ndjson-extension", append("parquet-content.ndjson"),
         r"parquet-content\.ndjson", "json"),
    case("append-plain-text-gz-extension", append("not-gzipped.csv.gz"),
         r"not-gzipped\.csv\.gz", "zlib|gzip|inflate|header"),
    case("append-truncated-gzip", append("truncated.csv.gz"),
         r"truncated\.csv\.gz", "truncat"),
    case("append-broken-ndjson", append("broken.ndjson"), r"broken\.ndjson", "json"),
    case("append-directory", lambda d: ["append", TABLE, d], re.escape("directory")),
    case("append-unknown-table", lambda d: ["append", "bad.nope", d / "good.parquet"],
         r"bad\.nope", "not found"),
    case("append-unknown-input-format", append("good.parquet", extra=["--input-format", "xls"]),
         "xls"),
    case("append-zero-commit-rows", append("good.parquet", extra=["--commit-rows", "0"]),
         "commit-rows"),
    case("append-empty-batch-id", append("good.parquet", extra=["--batch-id", ""]), "batch id"),
    # Several files: nothing is committed when a later one is bad, also when
    # the rows go in several commits (--commit-rows).
    case("append-good-then-truncated-file", append("good.parquet", "truncated.parquet"),
         r"truncated\.parquet"),
    case("append-good-then-extra-column-file", append("good.parquet", "extra.parquet"),
         r"extra\.parquet", r"'extra'"),
    case("append-good-then-truncated-file-in-parts",
         append("good.parquet", "truncated.parquet", extra=["--commit-rows", "5"]),
         r"truncated\.parquet"),
    case("append-good-then-extra-column-file-in-parts",
         append("good.parquet", "extra.parquet", extra=["--commit-rows", "5"]),
         r"extra\.parquet", r"'extra'"),
]

CREATE = [
    case("create-name-dot-dot-slash", create("../x"), "invalid", r"\.\./x"),
    case("create-name-empty", create(""), "invalid", "empty"),
    case("create-name-three-parts", create("a.b.c"), "invalid", r"a\.b\.c"),
    case("create-name-non-ascii", create("café"), "invalid", "caf"),
    case("create-name-slash", create("a/b"), "invalid", "a/b"),
    case("create-name-leading-dot", create(".x"), "invalid", "namespace"),
    case("create-name-trailing-dot", create("x."), "invalid", "empty"),
    case("create-name-space", create("a b"), "invalid", "a b"),
    case("create-time-column-missing",
         lambda d: ["create", "bad.c", "--schema-from", d / "good.parquet",
                    "--time-column", "nope"], "time column", "'nope'"),
    case("create-time-column-int64",
         lambda d: ["create", "bad.c", "--schema-from", d / "good.parquet",
                    "--time-column", "seq"], "time column", "'seq'", "int64"),
    case("create-series-key-missing", create("bad.c", "--series-key", "dev,nope"),
         "series key", "'nope'"),
    case("create-series-key-is-time-column", create("bad.c", "--series-key", "time"),
         "series key", "'time'"),
    case("create-series-key-duplicate-column", create("bad.c", "--series-key", "dev,dev"),
         "series key", "dev"),
    case("create-unknown-setting", create("bad.c", "--set", "timelake.nope=1"),
         r"timelake\.nope", "unknown"),
    case("create-bad-compact-min-files", create("bad.c", "--set", "timelake.compact-min-files=-3"),
         "compact-min-files", "-3"),
    case("create-bad-retention", create("bad.c", "--set", "timelake.retention=soon"),
         "retention", "soon"),
    case("create-bad-compression-codec",
         create("bad.c", "--set", "timelake.compression-codec=brotli"),
         "compression-codec", "brotli"),
    case("create-managed-format-version", create("bad.c", "--set", "timelake.format-version=9.0.0"),
         "format-version", "managed"),
    case("create-bad-chunk", create("bad.c", "--chunk", "week"), "chunk", "week"),
    case("create-existing-table", create(TABLE), r"bad\.t", "already exists"),
    case("create-schema-from-missing-file", create("bad.c", schema="missing.parquet"),
         r"missing\.parquet"),
    case("create-schema-from-truncated-file", create("bad.c", schema="truncated.parquet"),
         r"truncated\.parquet"),
]

ALTER = [
    case("alter-unknown-setting", alter("timelake.nope=1"), r"timelake\.nope", "unknown"),
    case("alter-unset-unknown-setting", alter("timelake.nope", verb="--unset"),
         r"timelake\.nope", "unknown"),
    case("alter-fixed-chunk", alter("timelake.chunk=hour"), r"timelake\.chunk", "fixed"),
    case("alter-fixed-time-column", alter("timelake.time-column=v"), "time-column", "fixed"),
    case("alter-unset-fixed-series-key", alter("timelake.series-key", verb="--unset"),
         "series-key", "fixed"),
    case("alter-managed-rollups", alter("timelake.rollups=x"), r"timelake\.rollups", "managed"),
    case("alter-managed-format-version", alter("timelake.format-version=9.0.0"),
         "format-version", "managed"),
    case("alter-bad-compact-min-files", alter("timelake.compact-min-files=-3"),
         "compact-min-files", "-3"),
    case("alter-bad-retention", alter("timelake.retention=soon"), "retention", "soon"),
    case("alter-bad-compression-codec", alter("timelake.compression-codec=brotli"),
         "compression-codec", "brotli"),
    case("alter-bad-compression-level", alter("timelake.compression-level=99"),
         "compression-level", "99"),
    case("alter-bad-boolean", alter("timelake.dedup=maybe"), "dedup", "maybe"),
    case("alter-good-and-bad-together", alter("owner=ops", "timelake.nope=1"), r"timelake\.nope"),
    case("alter-set-without-value", alter("owner"), "KEY=VALUE", "owner"),
    case("alter-unknown-table", ["alter", "bad.nope", "--set", "owner=ops"],
         r"bad\.nope", "not found"),
]

SQL = [
    case("session-unknown-setting", ["--set", "timelake.nope=1", "sql", "SELECT 1"],
         r"timelake\.nope", "unknown"),
    case("session-table-only-setting", ["--set", "timelake.chunk=day", "sql", "SELECT 1"],
         r"timelake\.chunk"),
    case("session-bad-value", ["--set", "timelake.read-dedup=maybe", "sql", "SELECT 1"],
         "read-dedup", "maybe"),
    case("sql-set-unknown-setting", ["sql", "SET timelake.nope = 1"], r"timelake\.nope"),
    case("sql-syntax-error", ["sql", f"SELEC count(*) FROM {TABLE}"], "SELEC"),
    case("sql-unknown-table", ["sql", "SELECT * FROM bad.nope"], r"bad\.nope", "not found"),
    case("sql-unknown-namespace", ["sql", "SELECT * FROM nowhere.t"], r"nowhere\.t", "not found"),
    case("sql-unknown-column", ["sql", f"SELECT nope FROM {TABLE}"], "nope"),
    case("sql-unknown-function", ["sql", f"SELECT frobnicate(v) FROM {TABLE}"], "frobnicate"),
    case("sql-insert", ["sql", f"INSERT INTO {TABLE} VALUES (now(), 'x', 1, 1.0, now())"],
         r"insert", r"not (implemented|supported)"),
    # DELETE runs (Table::Delete, tests/compat/test_delete.py); UPDATE does not.
    case("sql-update", ["sql", f"UPDATE {TABLE} SET v = 1"], "update",
         r"not (implemented|supported)"),
    case("sql-delete-bad-predicate", ["sql", f"DELETE FROM {TABLE} WHERE nope = 1"],
         r"deleting from bad\.t", "nope"),
    case("sql-drop-table", ["sql", f"DROP TABLE {TABLE}"],
         r"not (implemented|supported)|unsupported|timelake drop"),
    case("sql-script-with-a-bad-statement", ["sql", "SET timelake.nope = 1; SELECT 1"],
         r"timelake\.nope"),
    case("latest-unknown-table", ["latest", "bad.nope"], r"bad\.nope", "not found"),
]


@pytest.mark.parametrize("bad", APPEND + CREATE + ALTER + SQL)
def test_bad_command_is_refused(bad, warehouse, inputs):
    assert_refused(warehouse, bad.args(inputs), bad.expect)


def test_plain_table_has_no_latest(warehouse, inputs):
    run_cli("-w", warehouse, "create", "bad.plain", "--schema-from", inputs / "good.parquet")
    assert_refused(warehouse, ["latest", "bad.plain"], [r"bad\.plain", "time"])


# -- corrupt storage ---------------------------------------------------------

def table_metadata(w):
    folder = w / "bad" / "t" / "metadata"
    return max(folder.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))


def current_snapshot(w):
    metadata = json.loads(table_metadata(w).read_text())
    return next(s for s in metadata["snapshots"]
                if s["snapshot-id"] == metadata["current-snapshot-id"])


def local(uri):
    return pathlib.Path(uri.removeprefix("file://"))


def manifest_list(w):
    return local(current_snapshot(w)["manifest-list"])


def manifest(w):
    """A manifest of the current snapshot (the one file it has)."""
    manifests = list((w / "bad" / "t" / "metadata").glob("*-m*.avro"))
    assert len(manifests) == 1, manifests
    return manifests[0]


def data_file(w):
    files = sorted((w / "bad" / "t" / "data").rglob("*.parquet"))
    return files[0]


def last_value_index(w):
    return local(current_snapshot(w)["summary"]["timelake.last-value-index"])


def truncate(path):
    body = path.read_bytes()
    path.write_bytes(body[:len(body) // 2])


def retype(path):
    """Valid JSON of the wrong types: the current snapshot id as a string."""
    metadata = json.loads(path.read_text())
    metadata["current-snapshot-id"] = "abc"
    path.write_text(json.dumps(metadata))


def not_an_object(path):
    path.write_text("[1, 2, 3]")


def unknown_codec(path):
    """The Avro header's codec name replaced by one of the same length."""
    body = path.read_bytes()
    assert b"avro.codec\x0edeflate" in body
    path.write_bytes(body.replace(b"avro.codec\x0edeflate", b"avro.codec\x0enocodec", 1))


def garble(path):
    """Zeros over the first column chunk's page header, the footer intact."""
    body = bytearray(path.read_bytes())
    body[4:200] = bytes(196)
    path.write_bytes(bytes(body))


@dataclasses.dataclass
class Damage:
    which: Callable[[pathlib.Path], pathlib.Path]  # the file, given the warehouse
    how: Callable[[pathlib.Path], None]


DAMAGE = {
    "metadata-truncated-json": Damage(table_metadata, truncate),
    "metadata-wrong-types": Damage(table_metadata, retype),
    "metadata-not-an-object": Damage(table_metadata, not_an_object),
    "manifest-list-truncated": Damage(manifest_list, truncate),
    "manifest-list-unknown-codec": Damage(manifest_list, unknown_codec),
    "manifest-truncated": Damage(manifest, truncate),
    "manifest-unknown-codec": Damage(manifest, unknown_codec),
    "data-file-truncated": Damage(data_file, truncate),
    "data-file-garbled": Damage(data_file, garble),
}

# What the message must say about the damaged file, besides its name.
CORRUPT = (r"corrupt|not valid JSON|malformed|not a JSON object|truncated|unknown codec"
           r"|exceeds the \d+ bytes remaining|magic")

CORRUPT_CASES = [
    pytest.param(damage, command, id=f"{damage}-{command}")
    for damage in DAMAGE
    for command in (("sql", "latest") if damage.startswith("metadata") else ("sql",))
]


@pytest.mark.parametrize("damage,command", CORRUPT_CASES)
def test_corrupt_storage_is_named(damage, command, warehouse):
    # A current head object holds the table metadata and the file list, so a
    # cold reader would not open the damaged metadata or manifests at all:
    # without it, the ordinary path reads them (tests/compat/test_head.py
    # covers damaged heads).
    (warehouse / "bad" / "t" / "metadata" / "timelake-head").unlink(missing_ok=True)
    d = DAMAGE[damage]
    path = d.which(warehouse)
    d.how(path)
    args = (["sql", f"SELECT * FROM {TABLE}"] if command == "sql" else ["latest", TABLE])
    if damage == "data-file-garbled":
        # A page that does not decode is reported by the Parquet decoder
        # without its file (only footer and read errors carry the path): the
        # error names the table being read instead.
        assert_refused(warehouse, args, [re.escape(TABLE), r"parquet"])
        return
    assert_refused(warehouse, args, [re.escape(path.name), CORRUPT])


def test_latest_with_corrupt_index_scans_instead(warehouse, tmp_path):
    """An unreadable last-value index is not an error: `latest` answers from
    the data, the same rows, and writes nothing."""
    def latest():
        out = tmp_path / "latest.parquet"
        run_cli("-w", warehouse, "latest", TABLE, "--format", "parquet", "-o", out)
        rows = pq.read_table(out).to_pylist()
        out.unlink()
        return sorted(rows, key=lambda r: r["dev"])

    expected = latest()
    assert [r["dev"] for r in expected] == ["d0", "d1", "d2"]
    truncate(last_value_index(warehouse))
    before = storage_state(warehouse)
    assert latest() == expected
    assert storage_state(warehouse) == before


# -- the new surfaces: rollups, upgrade, rollback, schema changes ------------

HOURLY = "time_bucket(INTERVAL '1 hour', time)"


def rollup(name, select):
    return ["sql", f"CREATE MATERIALIZED ROLLUP {name} AS {select}"]


def hourly(aggregate, table=TABLE):
    return f"SELECT dev, {HOURLY} AS b, {aggregate} FROM {table} GROUP BY dev, b"


ROLLUP = [
    case("rollup-unsupported-aggregate-median", rollup("bad.r", hourly("median(v)")),
         r"bad\.r", r"median\(.*v\)", "isn't an aggregate a rollup stores"),
    case("rollup-unsupported-aggregate-stddev", rollup("bad.r", hourly("stddev(v)")),
         r"bad\.r", r"stddev\(.*v\)", "isn't an aggregate a rollup stores"),
    case("rollup-no-time-bucket",
         rollup("bad.r", f"SELECT dev, max(v) FROM {TABLE} GROUP BY dev"),
         r"bad\.r", "GROUP BY time_bucket"),
    case("rollup-time-column-without-bucket",
         rollup("bad.r", f"SELECT dev, time, max(v) FROM {TABLE} GROUP BY dev, time"),
         r"bad\.r", "groups by a bucket of time, not by time itself"),
    # Buckets: a fixed width of whole seconds or whole months, from 1970-01-01.
    case("rollup-bucket-months-and-days",
         rollup("bad.r", hourly("max(v)").replace(HOURLY,
                                                  "time_bucket(INTERVAL '1 month 1 day', time)")),
         r"bad\.r", "neither a fixed width nor whole months"),
    case("rollup-bucket-negative-width",
         rollup("bad.r", hourly("max(v)").replace(HOURLY, "time_bucket(INTERVAL '-1 hour', time)")),
         r"bad\.r", "neither a fixed width nor whole months"),
    case("rollup-bucket-width-from-a-column",
         rollup("bad.r", hourly("max(v)").replace(
             HOURLY, "time_bucket(arrow_cast(concat(seq, ' seconds'), "
                     "'Interval(MonthDayNano)'), time)")),
         r"bad\.r", "neither a fixed width nor whole months", "constant"),
    case("rollup-bucket-origin-from-a-column",
         rollup("bad.r", hourly("max(v)").replace(
             HOURLY, "time_bucket(INTERVAL '1 hour', time, time)")),
         r"bad\.r", "neither a fixed width nor whole months", "origin a constant"),
    case("rollup-bucket-not-whole-seconds",
         rollup("bad.r", hourly("max(v)").replace(
             HOURLY, "time_bucket(INTERVAL '1.5 seconds', time)")),
         r"bad\.r", "whole seconds"),
    case("rollup-bucket-weeks-from-monday",
         rollup("bad.r", hourly("max(v)").replace(HOURLY, "date_trunc('week', time)")),
         r"bad\.r", "start at 1970-01-01", "7d start 4d after it", "Mondays"),
    case("rollup-bucket-too-wide",
         rollup("bad.r", hourly("max(v)").replace(
             HOURLY, "time_bucket(INTERVAL '100000 years', time)")),
         r"bad\.r", "wider than 10000 years"),
    case("rollup-statement-name-of-three-parts",
         ["sql", "DROP MATERIALIZED ROLLUP bad.r.x"],
         r"bad\.r\.x", "more than namespace.table"),
    case("rollup-of-missing-table", rollup("bad.r", hourly("max(v)", table="bad.nope")),
         r"bad\.r", r"bad\.nope", "not found"),
    case("rollup-of-missing-namespace", rollup("bad.r", hourly("max(v)", table="nowhere.t")),
         r"bad\.r", r"nowhere\.t", "not found"),
    case("rollup-named-as-its-raw-table", rollup(TABLE, hourly("max(v)")),
         r"bad\.t", "already exists"),
]


@pytest.mark.parametrize("bad", ROLLUP)
def test_bad_rollup_is_refused(bad, warehouse, inputs):
    assert_refused(warehouse, bad.args(inputs), bad.expect)


def test_rollup_name_collisions_are_refused(warehouse, inputs):
    """A rollup's name taken by a rollup or by another table, and the other way."""
    run_cli("-w", warehouse, *rollup("bad.r", hourly("max(v) AS hottest")))
    run_cli("-w", warehouse, "create", "bad.other", "--schema-from", inputs / "good.parquet")
    assert_refused(warehouse, rollup("bad.r", hourly("min(v) AS coldest")),
                   [r"bad\.r", "already exists"])
    assert_refused(warehouse, rollup("bad.other", hourly("min(v)")),
                   [r"bad\.other", "already exists"])
    assert_refused(warehouse, create("bad.r")(inputs), [r"bad\.r", "already exists"])


def not_a_table(w):
    """Folders below the warehouse that are no table (each a name of namespace bad)."""
    (w / "bad" / "empty").mkdir()
    junk = w / "bad" / "junk"
    (junk / "data").mkdir(parents=True)
    (junk / "notes.txt").write_text("not a table\n")
    (junk / "data" / "blob.bin").write_bytes(bytes(range(256)) * 4)
    odd = w / "bad" / "odd"
    (odd / "metadata").mkdir(parents=True)
    (odd / "metadata" / "README.md").write_text("# no versions here\n")
    (odd / "metadata" / "snap-1.avro").write_bytes(b"Obj\x01" + bytes(60))


NO_TABLE = "but no metadata/v<N>.metadata.json, so it is no table"


@pytest.mark.parametrize("name,expect", [
    ("bad.empty", []),
    ("bad.junk", [re.escape("bad/junk/ holds data/, notes.txt " + NO_TABLE)]),
    ("bad.odd", [re.escape("bad/odd/ holds metadata/ " + NO_TABLE)]),
    ("bad.nope", []),
    ("nowhere.t", []),
], ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("dry", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_upgrade_of_what_is_not_a_table_is_refused(name, expect, dry, warehouse):
    not_a_table(warehouse)
    line = assert_refused(warehouse, ["upgrade", name, *dry],
                          [rf"table {re.escape(name)} not found in file://W", *expect])
    if not expect:
        assert line.endswith("not found in file://W"), line


def test_upgrade_in_a_warehouse_that_does_not_exist_is_refused(tmp_path):
    nowhere = tmp_path / "nowhere"
    assert_refused(nowhere, ["upgrade", TABLE], ["no warehouse at W"])
    assert not nowhere.exists()


def snapshots(w):
    out = run_cli("-w", w, "info", TABLE, "--snapshots", "--format", "json").stdout
    return [s["snapshot_id"] for s in json.loads(out)]


def test_rollback_to_an_expired_or_unknown_snapshot_is_refused(warehouse, inputs):
    first = snapshots(warehouse)
    for _ in range(3):
        run_cli("-w", warehouse, "append", TABLE, inputs / "good.parquet")
    run_cli("-w", warehouse, "alter", TABLE, "--set", "timelake.snapshot-retention=0s",
            "--set", "timelake.min-snapshots=1")
    run_cli("-w", warehouse, "maintain", TABLE)
    kept = snapshots(warehouse)
    expired = [s for s in first if s not in kept]
    assert expired, f"maintain expired none of {first} (kept {kept})"
    assert_refused(warehouse, ["rollback", TABLE, str(expired[0])],
                   [re.escape(TABLE), rf"snapshot {expired[0]}\b", "expired"])
    never = max(first + kept) + 1
    assert_refused(warehouse, ["rollback", TABLE, str(never)],
                   [re.escape(TABLE), rf"no snapshot {never}\b", "info --snapshots"])
    assert_refused(warehouse, ["rollback", TABLE, "abc"], ["snapshot", "abc"])
    assert_refused(warehouse, ["rollback", TABLE, "-5"], ["snapshot", "-5"])


SCHEMA_CHANGES = [
    case("alter-widen-time-column", alter("time:int64", verb="--widen-column"),
         r"bad\.t", "'time'", "time column"),
    case("alter-rename-time-column", alter("time:t", verb="--rename-column"),
         r"bad\.t", "'time'", "time column"),
    case("alter-widen-series-key-column", alter("dev:int64", verb="--widen-column"),
         r"bad\.t", "'dev'", "series key"),
    case("alter-rename-series-key-column", alter("dev:device", verb="--rename-column"),
         r"bad\.t", "'dev'", "series key"),
    case("alter-rename-ingest-time-column", alter("_ingest_ts:x", verb="--rename-column"),
         r"bad\.t", "'_ingest_ts'"),
    case("alter-add-column-named-as-time", alter("time:int64", verb="--add-column"),
         r"bad\.t", "'time'", "already"),
    case("sql-drop-time-column", ["sql", f"ALTER TABLE {TABLE} DROP COLUMN time"],
         r"alter table|not (implemented|supported)|unsupported"),
]


@pytest.mark.parametrize("bad", SCHEMA_CHANGES)
def test_schema_change_breaking_the_layout_is_refused(bad, warehouse, inputs):
    assert_refused(warehouse, bad.args(inputs), bad.expect)
