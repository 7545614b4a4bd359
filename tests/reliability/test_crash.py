"""Writers killed with SIGKILL at random points (SPEC §4.6, §14): nothing
committed is ever lost, nothing uncommitted is ever visible, and a killed
process leaves a table that opens and queries.

One table, many processes, each killed after a random delay in [0, the
median duration of unkilled runs of the same command], drawn towards the end
(seeded: set TIMELAKE_CRASH_SEED to run another schedule). The commands killed:
`append` of one small file (one commit, then inline maintenance),
`append --commit-rows` (one commit per part), `alter` (a metadata-only
commit), `create` and `maintain` (rewrites, expiry, file deletion). After every kill
the table holds exactly the appends that reported success plus, from the one
in flight, nothing or all of it (or, for multi-commit imports, whole parts in
order); a re-run with the same --batch-id then completes it exactly once.
A killed `maintain` changes no row. At the end every version is valid JSON
without gaps (maintain deletes the oldest ones), PyIceberg reads the same rows as the CLI, the files no
snapshot references (debris) are counted and are only data, manifest, index
and staging files, and a `maintain --orphan-age 0s` removes all of them.
Once on a local warehouse, once on an S3 server."""

import collections
import dataclasses
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import time
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from compat_helpers import BIN, cli_query, referenced_files, run_cli
from compat_helpers import s3_server, s3_warehouse  # noqa: F401  (fixtures)

SEED = int(os.environ.get("TIMELAKE_CRASH_SEED", "20260114"))
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
ROWS = 200  # rows per input file; file i holds seq i*ROWS .. (i+1)*ROWS-1
PARTS = 4  # --commit-rows ROWS // PARTS for the multi-commit imports
STEP = dt.timedelta(minutes=10)  # one file spans ~33 h: 2 or 3 day partitions
TABLE = "crash.t"

# The commands killed, as many of each per run.
LOCAL_SCHEDULE = {"append": 18, "multi": 9, "alter": 7, "create": 6, "maintain": 10}  # 50
S3_SCHEDULE = {"append": 6, "multi": 4, "alter": 3, "create": 2, "maintain": 4}  # 19 kills

VERSION = re.compile(r"/metadata/v(\d+)\.metadata\.json$")


@dataclasses.dataclass
class Target:
    """Where the warehouse lives and how the test sees its files."""
    url: str
    env: Optional[dict]  # the binary's environment (None: inherited)
    files: Callable[[str], set]  # every file below a folder of the warehouse, as URIs
    read: Callable[[str], bytes]  # the bytes of one file, by URI
    properties: dict  # PyIceberg FileIO properties


def local_target(tmp_path):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    return Target(str(warehouse), None,
                  lambda folder: {f"file://{p}" for p in (warehouse / folder).rglob("*")
                                  if p.is_file()},
                  lambda uri: open(uri.removeprefix("file://"), "rb").read(),
                  {})


def s3_target(server, url):
    prefix = url.split("/", 3)[3]

    def read(uri):
        with server.filesystem().open_input_stream(uri.removeprefix("s3://")) as f:
            return f.read()

    return Target(url, server.env(),
                  lambda folder: {f"s3://{server.bucket}/{k}"
                                  for k in server.keys(f"{prefix}/{folder}")},
                  read, server.pyiceberg_properties())


def seqs_of(i):
    return set(range(i * ROWS, (i + 1) * ROWS))


def write_input(path, i):
    seq = list(range(i * ROWS, (i + 1) * ROWS))
    pq.write_table(pa.table({
        "time": pa.array([T0 + s * STEP for s in seq], pa.timestamp("us", tz="UTC")),
        "dev": pa.array([f"d{s % 5}" for s in seq], pa.string()),
        "seq": pa.array(seq, pa.int64()),
        "v": pa.array([float(s) / 4 for s in seq], pa.float64()),
    }), path)
    return path


class CrashRun:
    """The table under test, the model of what it must hold, and the counts."""

    def __init__(self, target, tmp_path, rng):
        self.target = target
        self.tmp_path = tmp_path
        self.rng = rng
        self.present = {}  # input file index -> its seqs the table holds
        self.next_file = 0
        self.compact_min_files = None  # the last alter value known committed
        self.creates = 0
        self.typical = {}  # command -> seconds of an unkilled run
        self.counts = collections.defaultdict(collections.Counter)

    # -- processes ---------------------------------------------------------

    def spawn(self, args, delay=None):
        """Runs the binary; with `delay`, SIGKILLs it that many seconds after
        it starts. Returns ("ok" | "killed", seconds, stdout)."""
        argv = [BIN, "-w", self.target.url, *map(str, args)]
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.target.env)
        if delay is not None:
            time.sleep(delay)
            proc.kill()  # a no-op when it already exited (Popen polls first)
        out, err = proc.communicate(timeout=120)
        seconds = time.monotonic() - start
        if proc.returncode == 0:
            return "ok", seconds, out
        if proc.returncode == -signal.SIGKILL:
            return "killed", seconds, out
        raise AssertionError(f"{' '.join(argv)} failed ({proc.returncode}) without a kill:\n"
                             f"{out}\n{err}")

    def cli(self, *args):
        return run_cli("-w", self.target.url, *args, env=self.target.env)

    # -- the commands --------------------------------------------------------

    def new_file(self):
        i = self.next_file
        self.next_file += 1
        return i, write_input(self.tmp_path / f"in-{i}.parquet", i)

    def append_args(self, op, i, path):
        args = ["append", TABLE, path, "--batch-id", f"run-{i}"]
        if op == "multi":
            args += ["--commit-rows", ROWS // PARTS]
        return args

    def measure(self):
        """Creates the table and runs each command unkilled, three times: the
        median durations bound the kill delays."""
        samples = collections.defaultdict(list)
        for k in range(3):
            _, path = self.new_file()
            name = TABLE if k == 0 else f"crash.m{k}"
            extra = ["--set", "timelake.snapshot-retention=1m"] if k == 0 else []
            samples["create"].append(self.spawn(
                ["create", name, "--schema-from", path, "--time-column", "time",
                 "--series-key", "dev", *extra])[1])
        for k in range(3):
            for op in ("append", "multi"):
                i, path = self.new_file()
                samples[op].append(self.spawn(self.append_args(op, i, path))[1])
                self.present[i] = seqs_of(i)
            self.compact_min_files = 100 + k
            samples["alter"].append(self.spawn(
                ["alter", TABLE, "--set",
                 f"timelake.compact-min-files={self.compact_min_files}"])[1])
            samples["maintain"].append(self.spawn(self.maintain_args())[1])
        self.typical = {op: sorted(s)[1] for op, s in samples.items()}
        self.check_rows()

    def delay(self, op):
        """A random point of an unkilled run's duration, drawn towards its end
        (square root of a uniform draw): the first part of every run is the
        process starting, which touches no storage."""
        return self.typical[op] * self.rng.random() ** 0.5

    def killed_append(self, op):
        i, path = self.new_file()
        args = self.append_args(op, i, path)
        status, _, _ = self.spawn(args, self.delay(op))
        self.counts[op][status] += 1
        got = self.check_rows(in_flight=i)
        if status == "ok":
            assert got == seqs_of(i), f"append of file {i} reported success: {len(got)} rows"
        elif op == "append":
            assert got in (set(), seqs_of(i)), f"killed append {i} left {len(got)} of {ROWS} rows"
        else:
            part = ROWS // PARTS
            whole = [set(range(i * ROWS, i * ROWS + k * part)) for k in range(PARTS + 1)]
            assert got in whole, f"killed import {i} left {len(got)} rows: not whole parts in order"
        self.present[i] = got
        if status == "killed":
            self.counts[op]["committed before the kill" if got == seqs_of(i) else
                            "partly committed" if got else "nothing committed"] += 1
            # A re-run with the same batch id completes it, exactly once.
            _, _, out = self.spawn(args)
            m = re.search(r"appended (\d+) rows", out)
            assert m and int(m.group(1)) == ROWS - len(got), out
            self.present[i] = seqs_of(i)
            self.check_rows()

    def maintain_args(self):
        # Snapshots expire after a minute here, so that expiry deletes files.
        return ["maintain", TABLE, "--orphan-age", "1h"]

    def killed_maintain(self):
        status, _, _ = self.spawn(self.maintain_args(), self.delay("maintain"))
        self.counts["maintain"][status] += 1
        self.check_rows()  # a rewrite or expiry changes no row, killed or not

    def killed_alter(self, step):
        value = 1000 + step  # never a value of measure()
        status, _, _ = self.spawn(["alter", TABLE, "--set", f"timelake.compact-min-files={value}"],
                                  self.delay("alter"))
        self.counts["alter"][status] += 1
        info = json.loads(self.cli("info", TABLE, "--format", "json").stdout)
        got = int(info["properties"]["timelake.compact-min-files"])
        if status == "ok":
            assert got == value
        else:
            assert got in (self.compact_min_files, value), got
            self.counts["alter"]["committed before the kill" if got == value else
                                 "nothing committed"] += 1
        self.compact_min_files = got
        self.check_rows()

    def killed_create(self):
        name = f"crash.c{self.creates}"
        self.creates += 1
        _, path = self.new_file()
        args = ["create", name, "--schema-from", path, "--time-column", "time",
                "--series-key", "dev"]
        status, _, _ = self.spawn(args, self.delay("create"))
        self.counts["create"][status] += 1
        listed = name in self.cli("ls", "crash").stdout.splitlines()
        if status == "ok":
            assert listed, f"{name} was created but is not listed"
        if listed:
            got = cli_query(self.target.url, f"SELECT count(*) AS n FROM {name}", self.tmp_path,
                            env=self.target.env)
            assert got.column("n").to_pylist() == [0]
        else:
            # Whatever the kill left does not stand in the way of a new create.
            self.spawn(args)
            listed = name in self.cli("ls", "crash").stdout.splitlines()
            assert listed
        if status == "killed":
            self.counts["create"]["nothing committed" if not listed else
                                  "committed before the kill"] += 1
        self.check_rows()

    # -- checks --------------------------------------------------------------

    def check_rows(self, in_flight=None):
        """The table opens and holds each known file's rows exactly once and
        nothing else; returns the seqs of the file `in_flight`."""
        count = cli_query(self.target.url, f"SELECT count(*) AS n FROM {TABLE}", self.tmp_path,
                          env=self.target.env).column("n").to_pylist()[0]
        seqs = cli_query(self.target.url, f"SELECT seq FROM {TABLE}", self.tmp_path,
                         env=self.target.env).column("seq").to_pylist()
        assert count == len(seqs)
        assert len(set(seqs)) == len(seqs), "a row is in the table twice"
        by_file = collections.defaultdict(set)
        for s in seqs:
            by_file[s // ROWS].add(s)
        for i, want in self.present.items():
            assert by_file.get(i, set()) == want, (
                f"file {i}: {len(by_file.get(i, ()))} rows, expected {len(want)}")
        unknown = set(by_file) - set(self.present) - {in_flight}
        assert not unknown, f"rows of files never appended: {sorted(unknown)}"
        return by_file.get(in_flight, set())

    def check_storage(self, folder):
        """Versions 1..N all valid JSON; PyIceberg reads what the CLI reads;
        returns the debris by kind."""
        files = self.target.files(folder)
        versions = {}
        for uri in files:
            m = VERSION.search(uri)
            if m:
                versions[int(m.group(1))] = uri
        # Without gaps; maintain deletes the oldest (more than 100 back).
        assert sorted(versions) == list(range(min(versions), max(versions) + 1)), \
            sorted(versions)
        for n, uri in versions.items():
            body = self.target.read(uri)
            try:
                metadata = json.loads(body)
            except ValueError as e:
                raise AssertionError(f"{uri} is not valid JSON ({e}): {body[:200]!r}")
            assert isinstance(metadata, dict) and metadata.get("format-version") == 2, uri
        newest = versions[max(versions)]
        static = StaticTable.from_metadata(newest, properties=self.target.properties)
        referenced = referenced_files(static)
        assert referenced - files == set(), "a referenced file is missing"
        kept = set(versions.values()) | {u for u in files if u.endswith(
            ("/metadata/version-hint.text", "/metadata/timelake-head"))}
        debris = collections.Counter()
        for uri in sorted(files - referenced - kept):
            name = uri.rsplit("/", 1)[1]
            if "#" in name:
                kind = "staging"  # the local store's temporary file of a put
            elif "/data/" in uri and name.endswith(".parquet"):
                kind = "data"
            elif "/metadata/" in uri and name.endswith(".avro"):
                kind = "manifest"
            elif "/metadata/" in uri and name.startswith("lvi-") and name.endswith(".parquet"):
                kind = "index"
            else:
                raise AssertionError(f"unexpected debris {uri}")
            debris[kind] += 1
        return static, debris


def crash_test(label, target, tmp_path, schedule):
    rng = random.Random(SEED)
    run = CrashRun(target, tmp_path, rng)
    started = time.monotonic()
    run.measure()
    ops = [op for op, n in schedule.items() for _ in range(n)]
    rng.shuffle(ops)
    for step, op in enumerate(ops):
        if op in ("append", "multi"):
            run.killed_append(op)
        elif op == "alter":
            run.killed_alter(step)
        elif op == "maintain":
            run.killed_maintain()
        else:
            run.killed_create()

    static, debris = run.check_storage("crash/t")
    cli_rows = sorted(cli_query(target.url, f"SELECT seq FROM {TABLE}", tmp_path,
                                env=target.env).column("seq").to_pylist())
    assert sorted(static.scan().to_arrow().column("seq").to_pylist()) == cli_rows
    assert cli_rows == sorted(s for got in run.present.values() for s in got)
    assert len(cli_rows) == len(set(cli_rows))
    for c in range(run.creates):
        _, more = run.check_storage(f"crash/c{c}")
        debris += more

    landed = sum(c["killed"] for c in run.counts.values())
    print(f"\n{label}: seed {SEED}, {len(ops)} kills sent, {landed} landed "
          f"before the process exited, {len(ops) - landed} after; "
          f"{len(cli_rows)} rows in {len(run.present)} appends; "
          f"typical durations " + ", ".join(f"{k} {v * 1000:.0f} ms"
                                            for k, v in run.typical.items()))
    for op, counts in sorted(run.counts.items()):
        print(f"  {op}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"  debris (unreferenced files): {sum(debris.values())} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(debris.items())) or 'none'}); "
          f"{time.monotonic() - started:.1f} s")
    assert len(ops) == sum(schedule.values())

    # A maintain that may delete every unreferenced file leaves none.
    for name, folder in [(TABLE, "crash/t")] + [(f"crash.c{c}", f"crash/c{c}")
                                                 for c in range(run.creates)]:
        run.cli("maintain", name, "--orphan-age", "0s")
        _, left = run.check_storage(folder)
        assert not left, f"{name}: maintain left debris {dict(left)}"
    assert sorted(cli_query(target.url, f"SELECT seq FROM {TABLE}", tmp_path,
                            env=target.env).column("seq").to_pylist()) == cli_rows


def test_kill_writers_local(tmp_path):
    crash_test("local", local_target(tmp_path), tmp_path, LOCAL_SCHEDULE)


def test_kill_writers_s3(s3_server, s3_warehouse, tmp_path):  # noqa: F811
    crash_test("s3", s3_target(s3_server, s3_warehouse), tmp_path, S3_SCHEDULE)
