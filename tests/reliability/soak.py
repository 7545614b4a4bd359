"""The soak (issue #22, `make soak`; not part of `make test`): writers killed
with SIGKILL at random moments, for SOAK_SECONDS, against one table on local
disk and one on an S3 server at the same time, with an invariant check after
every operation.

    .venv/bin/python tests/reliability/soak.py [--seconds N] [--target both|local|s3]
                                               [--seed S] [--out FILE]

Each target runs one loop: draw an operation, start its process, SIGKILL it
after a random part of the time an unkilled run of it takes, check. The
operations (WEIGHTS): `append` of one file with a batch id, without one, and
in parts (`--commit-rows`), each followed by inline maintenance and the
inline refresh of the table's rollup; two appends at once, one of them
killed; `maintain`; `REFRESH MATERIALIZED
ROLLUP` (after an append that skipped it); `delete` of one row; `alter` of a
property and `alter --add-column`; `rollback` to a recent snapshot;
`upgrade` of a plain table to a time-series one; and a commit through
`timelake serve` (PyIceberg appends through the REST catalog, and the server
is the process killed).

The checks after every operation, killed or not:
- the table opens, and `count(*)` equals the number of rows read;
- no row is there twice; every append that reported success is there whole,
  an append in flight is there not at all or whole (an import in parts: whole
  parts, in order), a batch-id append re-run after its kill completes it
  exactly once, an append beside a killed one succeeds; a delete removed its row or nothing, a rollback left the
  rows as they were or as the snapshot it restores; nothing else changed;
- the rollup's routed answer equals the raw answer;
- PyIceberg reads the newest metadata version to the same rows;
- an altered property or column is the old or the new one (the new one after
  success); an upgraded table holds all its rows and a re-run finishes it;
  the served table holds each PyIceberg append that succeeded, and a killed
  one whole or not at all.
At the end: every metadata version is valid JSON, every referenced file
exists, and `maintain --orphan-age 0s` leaves no unreferenced file in any of
the tables.

Prints, and writes to --out, the figures of each target and of both: kills
(processes SIGKILLed while running), operations, checks, failures. Exits 1
if any check failed. A failure is recorded (with the operation, the seed and
what differed) and the loop goes on from the table's actual state."""

import argparse
import collections
import datetime as dt
import json
import os
import pathlib
import random
import re
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import pyarrow as pa
import pyarrow.parquet as pq

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from compat_helpers import BIN, run_cli, running_s3_server  # noqa: E402
from test_crash import CrashRun, local_target, s3_target  # noqa: E402

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
ROWS = 100  # rows per appended file; file i holds seq i*ROWS .. (i+1)*ROWS-1
PARTS = 4  # the parts of an import with --commit-rows
STEP = dt.timedelta(seconds=20)  # a file spans 33 minutes: 1,000 files, 23 days
TABLE = "soak.t"
ROLLUP = "soak.t_1h"
SERVED = "soak.r"
MAX_COLUMNS = 8  # columns `add-column` adds at most
WEIGHTS = {
    "append": 24, "append-no-batch": 8, "multi": 10, "maintain": 10, "refresh": 8,
    "delete": 6, "alter": 5, "add-column": 2, "rollback": 5, "upgrade": 5, "serve": 8,
    "concurrent": 6,
}
ROLLUP_SQL = (f"CREATE MATERIALIZED ROLLUP {ROLLUP} AS SELECT dev, "
              "time_bucket(INTERVAL '1 hour', time) AS bucket, count(*), sum(v), max(v) "
              f"FROM {TABLE} GROUP BY dev, bucket WITH (refresh_interval = '0s')")
ROLLUP_QUERY = ("SELECT dev, time_bucket(INTERVAL '1 hour', time) AS b, count(*) AS n, "
                f"sum(v) AS s, max(v) AS mx FROM {TABLE} GROUP BY dev, b")
VERSION = re.compile(r"/metadata/v(\d+)\.metadata\.json$")


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def seqs_of(i):
    return set(range(i * ROWS, (i + 1) * ROWS))


def input_table(i):
    seq = list(range(i * ROWS, (i + 1) * ROWS))
    return pa.table({
        "time": pa.array([T0 + s * STEP for s in seq], pa.timestamp("us", tz="UTC")),
        "dev": pa.array([f"d{s % 5}" for s in seq], pa.string()),
        "seq": pa.array(seq, pa.int64()),
        "v": pa.array([float(s) / 4 for s in seq], pa.float64()),
    })


def canonical(rows):
    def norm(v):
        if isinstance(v, float):
            return round(v, 6)
        return v if v is None or isinstance(v, (int, str)) else str(v)
    return sorted(json.dumps({k: norm(v) for k, v in r.items()}, sort_keys=True) for r in rows)


class Soak:
    """One target's loop: its table, the model of what the table must hold,
    and the counts."""

    def __init__(self, label, target, workdir, rng, storage_options):
        import timelake
        self.timelake = timelake
        self.label = label
        self.target = target
        self.url = target.url
        self.workdir = workdir
        self.rng = rng
        self.storage_options = storage_options
        self.crash = CrashRun(target, workdir, rng)  # its storage check
        self.present = {}  # input file index -> the seqs of it the table holds
        self.served = set()  # the seqs the served table holds
        self.next_file = 0
        self.next_plain = 0
        self.columns = 0
        self.durations = collections.defaultdict(list)  # unkilled runs, seconds
        self.counts = collections.defaultdict(collections.Counter)
        self.checks = 0
        self.failures = []
        self.measuring = False
        # PyIceberg writes its data files through fsspec (s3fs) on S3:
        # pyarrow's S3 client, its default, fails some multipart uploads on
        # the test server.
        self.client_properties = dict(target.properties)
        if target.properties:
            self.client_properties["py-io-impl"] = "pyiceberg.io.fsspec.FsspecFileIO"

    # -- processes -----------------------------------------------------------

    def spawn(self, args, delay=None, op=None):
        """Runs the binary; with `delay`, SIGKILLs it that many seconds after
        it starts. Returns (status, stdout, stderr), status "ok", "killed" or
        "failed" (a non-zero exit without a kill). An unkilled run's duration
        is kept as one of operation `op`'s."""
        start = time.monotonic()
        proc = subprocess.Popen([BIN, "-w", self.url, *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.target.env)
        if delay is not None:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                proc.kill()
        try:
            out, err = proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            return "failed", out, f"timed out after 180 s\n{err}"
        if proc.returncode == -signal.SIGKILL:
            return "killed", out, err
        if proc.returncode != 0:
            return "failed", out, err
        if op is not None:
            self.durations[op].append(time.monotonic() - start)
        return "ok", out, err

    def delay(self, op):
        """A random moment of an unkilled run (the median of the last ones,
        and a tenth more), drawn towards its end: the start of every run is
        the process starting, which touches no storage. One run in ten is
        not killed (None): runs grow longer as the table grows, and these
        keep the median current."""
        if self.measuring or self.rng.random() < 0.1:
            return None
        runs = self.durations[op][-15:]
        return 1.1 * statistics.median(runs) * self.rng.random() ** 0.5

    def cli(self, *args):
        return run_cli("-w", self.url, *args, env=self.target.env)

    def lake(self, **settings):
        return self.timelake.Lake(self.url, storage_options=self.storage_options,
                                  settings=settings or None)

    def new_file(self):
        i = self.next_file
        self.next_file += 1
        path = self.workdir / f"in-{i}.parquet"
        pq.write_table(input_table(i), path)
        return i, path

    # -- checks --------------------------------------------------------------

    def table_seqs(self):
        lake = self.lake()
        n = lake.sql(f"SELECT count(*) AS n FROM {TABLE}").column("n").to_pylist()[0]
        seqs = lake.sql(f"SELECT seq FROM {TABLE}").column("seq").to_pylist()
        expect(n == len(seqs), f"count(*) is {n} but {len(seqs)} rows read")
        expect(len(set(seqs)) == len(seqs),
               f"{len(seqs) - len(set(seqs))} rows are in the table twice")
        by_file = collections.defaultdict(set)
        for s in seqs:
            by_file[s // ROWS].add(s)
        return by_file

    def check(self, allowed=None, may_change=()):
        """Every invariant. `allowed(file, got)` judges the files in
        `may_change`; every other file must hold exactly what the model says.
        Brings the model to the table's state and returns it."""
        self.checks += 1
        by_file = self.table_seqs()
        for i in set(by_file) | set(self.present):
            got = by_file.get(i, set())
            if i in may_change:
                if allowed is not None:
                    allowed(i, got)
            elif i not in self.present:
                raise CheckFailed(f"rows of file {i}, never appended, are visible")
            else:
                want = self.present[i]
                expect(got == want, f"file {i}: {len(got)} rows, expected {len(want)} "
                       f"(missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]})")
        self.present = {i: by_file.get(i, set()) for i in set(self.present) | set(by_file)}
        self.check_rollup()
        self.check_pyiceberg(by_file)
        return by_file

    def check_rollup(self):
        routed = self.lake().sql(ROLLUP_QUERY).to_pylist()
        raw = self.lake(**{"timelake.rollup_routing": "false"}).sql(ROLLUP_QUERY).to_pylist()
        expect(canonical(routed) == canonical(raw),
               f"the rollup's routed answer differs from the raw one "
               f"({len(routed)} vs {len(raw)} groups)")

    def newest_metadata(self, folder):
        versions = {}
        for uri in self.target.files(f"{folder}/metadata"):
            m = VERSION.search(uri)
            if m:
                versions[int(m.group(1))] = uri
        return versions[max(versions)]

    def check_pyiceberg(self, by_file):
        from pyiceberg.table import StaticTable
        static = StaticTable.from_metadata(self.newest_metadata("soak/t"),
                                           properties=self.target.properties)
        theirs = static.scan(selected_fields=("seq",)).to_arrow().column("seq").to_pylist()
        ours = sorted(s for seqs in by_file.values() for s in seqs)
        expect(sorted(theirs) == ours,
               f"PyIceberg reads {len(theirs)} rows of the newest version, we read {len(ours)}")

    # -- the operations --------------------------------------------------------

    def append(self, op):
        i, path = self.new_file()
        args = ["append", TABLE, path]
        if op != "append-no-batch":
            args += ["--batch-id", f"{self.label}-{i}"]
        if op == "multi":
            args += ["--commit-rows", ROWS // PARTS]
        status, out, err = self.spawn(args, self.delay(op), op)
        part = ROWS // PARTS
        if op == "multi":
            whole = [set(range(i * ROWS, i * ROWS + k * part)) for k in range(PARTS + 1)]
        else:
            whole = [set(), seqs_of(i)]

        def allowed(_, got):
            if status == "ok":
                expect(got == seqs_of(i), f"append of file {i} reported success: "
                       f"{len(got)} of {ROWS} rows")
            else:
                expect(got in whole, f"{status} {op} of file {i} left {len(got)} rows: "
                       "not whole")
        got = self.check(allowed, {i}).get(i, set())
        if status == "killed":
            self.counts[op]["committed before the kill" if got == seqs_of(i) else
                            "partly committed" if got else "nothing committed"] += 1
            if op != "append-no-batch":
                # The re-run with the same batch id completes it, exactly once.
                status2, out, err = self.spawn(args)
                expect(status2 == "ok", f"re-run of {op} {i} failed: {err[-500:]}")
                m = re.search(r"appended (\d+) rows", out)
                expect(m and int(m.group(1)) == ROWS - len(got),
                       f"re-run of {op} {i} after {len(got)} rows: {out.strip()[-200:]}")
                self.check(lambda _, g: expect(g == seqs_of(i), f"re-run of {op} {i}: "
                                               f"{len(g)} rows"), {i})
        return status, err

    def concurrent(self):
        """Two batch-id appends at once, one of them killed: the other one
        commits (its commit rebases on the killed one's, if that landed)."""
        files = [self.new_file() for _ in range(2)]
        procs = [subprocess.Popen([BIN, "-w", self.url, "append", TABLE, path, "--batch-id",
                                   f"{self.label}-{i}"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=self.target.env)
                 for i, path in files]
        start = time.monotonic()
        delay = self.delay("concurrent")
        if delay is not None:
            try:
                procs[0].wait(timeout=delay)
            except subprocess.TimeoutExpired:
                procs[0].kill()
        results = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            results.append(("killed" if p.returncode == -signal.SIGKILL else
                            "ok" if p.returncode == 0 else "failed", err))
        (status, err), (other, other_err) = results
        expect(other == "ok", f"the append beside a killed one failed: {other_err[-800:]}")
        if status == "ok" and delay is None:
            self.durations["concurrent"].append(time.monotonic() - start)
        (i, _), (j, _) = files

        def allowed(f, got):
            if f == j or status == "ok":
                expect(got == seqs_of(f), f"concurrent append of file {f} reported success: "
                       f"{len(got)} of {ROWS} rows")
            else:
                expect(got in (set(), seqs_of(f)), f"killed concurrent append of file {f} "
                       f"left {len(got)} rows")
        self.check(allowed, {i, j})
        return status, err

    def maintain(self):
        status, _, err = self.spawn(["maintain", TABLE, "--orphan-age", "1h"],
                                    self.delay("maintain"), "maintain")
        self.check()  # a rewrite or expiry changes no row
        return status, err

    def refresh(self):
        i, path = self.new_file()
        self.cli("append", TABLE, path, "--batch-id", f"{self.label}-{i}", "--no-refresh")
        self.present[i] = seqs_of(i)
        status, _, err = self.spawn(["sql", f"REFRESH MATERIALIZED ROLLUP {ROLLUP}"],
                                    self.delay("refresh"), "refresh")
        self.check()
        return status, err

    def delete(self):
        candidates = [i for i, got in self.present.items() if got]
        if not candidates:
            return None, ""
        i = self.rng.choice(candidates)
        s = self.rng.choice(sorted(self.present[i]))
        before = set(self.present[i])
        status, _, err = self.spawn(["delete", TABLE, "--where", f"seq = {s}"],
                                    self.delay("delete"), "delete")

        def allowed(_, got):
            expect(got == before - {s} or (status != "ok" and got == before),
                   f"{status} delete of seq {s}: file {i} holds {len(got)} of "
                   f"{len(before)} rows")
        self.check(allowed, {i})
        return status, err

    def properties(self):
        return self.lake().table(TABLE).properties

    def alter(self):
        old = self.properties().get("timelake.compact-min-files")
        new = str(self.rng.randrange(4, 64))
        status, _, err = self.spawn(["alter", TABLE, "--set",
                                     f"timelake.compact-min-files={new}"],
                                    self.delay("alter"), "alter")
        got = self.properties().get("timelake.compact-min-files")
        expect(got == new or (status != "ok" and got == old),
               f"{status} alter to {new}: the property is {got} (was {old})")
        self.check()
        return status, err

    def add_column(self):
        if self.columns >= MAX_COLUMNS:
            return self.alter()
        name = f"c{self.columns}"
        status, _, err = self.spawn(["alter", TABLE, "--add-column", f"{name}:string"],
                                    self.delay("alter"), "alter")
        names = self.lake().table(TABLE).schema.names
        expect(name in names or status != "ok", f"alter --add-column {name} succeeded, "
               f"but the schema is {names}")
        if name in names:
            self.columns += 1
        self.check()
        return status, err

    def rollback(self):
        snapshots = [s for s in self.lake().table(TABLE).snapshots()
                     if s["in_history"] and not s["current"]]
        if not snapshots:
            return None, ""
        target = self.rng.choice(snapshots[-4:])["snapshot_id"]
        restored = set(self.lake().sql(f"SELECT seq FROM as_of('{TABLE}', {target})")
                       .column("seq").to_pylist())
        before = {s for seqs in self.present.values() for s in seqs}
        status, _, err = self.spawn(["rollback", TABLE, target], self.delay("rollback"),
                                    "rollback")

        def allowed(_, __):
            pass  # judged as a whole below
        by_file = self.check(allowed, set(self.present))
        now = {s for seqs in by_file.values() for s in seqs}
        expect(now == restored or (status != "ok" and now == before),
               f"{status} rollback to {target}: {len(now)} rows, the snapshot has "
               f"{len(restored)}, before {len(before)}")
        return status, err

    def upgrade(self):
        """A plain table (no time column) of two appends, upgraded."""
        name = f"soak.p{self.next_plain}"
        self.next_plain += 1
        data = [input_table(1_000_000 + 2 * self.next_plain + k) for k in range(2)]
        for k, d in enumerate(data):
            path = self.workdir / f"plain-{k}.parquet"
            pq.write_table(d, path)
            self.cli("append", name, path, *(["--create"] if k == 0 else []))
        want = sorted(s for d in data for s in d.column("seq").to_pylist())
        args = ["upgrade", name, "--time-column", "time", "--series-key", "dev"]
        status, _, err = self.spawn(args, self.delay("upgrade"), "upgrade")

        def rows():
            got = self.lake().sql(f"SELECT seq FROM {name}").column("seq").to_pylist()
            expect(sorted(got) == want, f"{status} upgrade of {name}: {len(got)} rows, "
                   f"expected {len(want)}")
        rows()
        if status != "ok":
            again, _, err2 = self.spawn(args)
            expect(again == "ok", f"upgrade of {name} re-run after a kill failed: {err2[-500:]}")
            rows()
        steps = json.loads(self.cli("upgrade", *args[1:], "--dry-run", "--format",
                                    "json").stdout)["steps"]
        expect(steps == [], f"{name} after a finished upgrade: steps left {steps}")
        self.cli("drop", name)
        self.check()
        return status, err

    def serve(self):
        """PyIceberg appends to the served table through `timelake serve`; the
        server is killed."""
        from pyiceberg.catalog.rest import RestCatalog
        proc = subprocess.Popen([BIN, "-w", self.url, "serve", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.target.env)
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ)
                line = proc.stdout.readline() if sel.select(timeout=30) else ""
            expect(" at http://" in line, f"timelake serve did not start: {line!r}")
            url = line.strip().rsplit(" at ", 1)[1]
            i = self.next_file
            self.next_file += 1
            rows = input_table(i).slice(0, ROWS // 2)
            start = time.monotonic()
            timer = None
            delay = self.delay("serve")
            if delay is not None:
                timer = threading.Timer(delay, proc.kill)
                timer.start()
            try:
                catalog = RestCatalog("soak", uri=url, **self.client_properties)
                table = catalog.load_table(SERVED)
                now = dt.datetime.now(dt.timezone.utc)
                table.append(pa.table({**{c: rows.column(c) for c in rows.column_names},
                                       "_ingest_ts": pa.array([now] * rows.num_rows,
                                                              pa.timestamp("us", tz="UTC"))},
                                      schema=table.schema().as_arrow()))
                outcome, err = "ok", ""
            except Exception as e:  # the server died under the client
                outcome, err = "failed", f"{type(e).__name__}: {e}"
            finally:
                if timer is not None:
                    timer.cancel()
            elapsed = time.monotonic() - start
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        killed = proc.returncode == -signal.SIGKILL
        status = "killed" if killed else outcome
        if outcome == "ok":
            self.durations["serve"].append(elapsed)
        want = set(rows.column("seq").to_pylist())
        listed = self.lake().sql(f"SELECT seq FROM {SERVED}").column("seq").to_pylist()
        got = set(listed)
        expect(len(got) == len(listed), f"{len(listed) - len(got)} served rows are there twice")
        expect(got - self.served in (set(), want) and self.served <= got,
               f"{status} served append: {len(got - self.served)} new rows of {len(want)}, "
               f"{len(self.served - got)} lost")
        expect(outcome != "ok" or got - self.served == want,
               "a served append reported success, but its rows are not there")
        if killed:
            self.counts["serve"]["committed before the kill" if got - self.served else
                                 "nothing committed"] += 1
        elif outcome != "ok":
            raise CheckFailed(f"a served append failed without a kill: {err[-800:]}")
        self.served = got
        self.check()
        return status, ""

    # -- the loop --------------------------------------------------------------

    def setup(self):
        i, path = self.new_file()
        self.cli("create", TABLE, "--schema-from", path, "--time-column", "time",
                 "--series-key", "dev", "--set", "timelake.snapshot-retention=1m")
        self.cli("sql", ROLLUP_SQL)
        self.cli("create", SERVED, "--schema-from", path, "--time-column", "time",
                 "--series-key", "dev")
        # Two unkilled runs of each operation measure how long one takes.
        for _ in range(2):
            for op in WEIGHTS:
                self.run(op, measure=True)

    def run(self, op, measure=False):
        self.measuring = measure
        try:
            if op in ("append", "append-no-batch", "multi"):
                status, err = self.append(op)
            elif op == "add-column":
                status, err = self.add_column()
            else:
                status, err = getattr(self, op)()
        finally:
            self.measuring = False
        if status is None:
            return
        self.counts[op][status] += 1
        if status == "failed":
            raise CheckFailed(f"{op} failed without a kill: {err.strip()[-800:]}")

    def loop(self, deadline):
        ops, weights = zip(*WEIGHTS.items())
        self.setup()
        while time.monotonic() < deadline:
            op = self.rng.choices(ops, weights)[0]
            try:
                self.run(op)
            except Exception as e:  # a failed invariant, or a command that failed
                detail = "".join(traceback.format_exception_only(type(e), e)).strip()
                self.failures.append(f"{op}: {detail}")
                print(f"[{self.label}] FAILURE after {op}: {detail}", file=sys.stderr, flush=True)
                try:
                    self.present = {i: got for i, got in self.table_seqs().items()}
                except Exception:
                    pass
                if len(self.failures) >= 20:
                    break

    def finish(self):
        """The end checks: storage, and a maintain that may delete every
        unreferenced file leaves none."""
        try:
            self.check()
            debris = collections.Counter()
            for folder in ("soak/t", "soak/t_1h", "soak/r"):
                _, more = self.crash.check_storage(folder)
                debris += more
            self.debris = dict(debris)
            for name, folder in ((TABLE, "soak/t"), (ROLLUP, "soak/t_1h"), (SERVED, "soak/r")):
                self.cli("maintain", name, "--orphan-age", "0s")
                _, left = self.crash.check_storage(folder)
                expect(not left, f"{name}: maintain --orphan-age 0s left {dict(left)}")
            self.check()
        except Exception as e:
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            self.failures.append(f"end: {detail}")

    def summary(self):
        killed = sum(c["killed"] for c in self.counts.values())
        operations = sum(c["ok"] + c["killed"] + c["failed"] for c in self.counts.values())
        rows = sum(len(s) for s in self.present.values())
        return {"target": self.label, "kills": killed, "operations": operations,
                "checks": self.checks, "failures": len(self.failures),
                "failure_details": self.failures[:20], "rows": rows,
                "served_rows": len(self.served),
                "debris_before_final_maintain": getattr(self, "debris", None),
                "by_operation": {op: dict(c) for op, c in sorted(self.counts.items())}}


def run_target(label, seconds, seed):
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    with tempfile.TemporaryDirectory(prefix=f"timelake-soak-{label}-") as tmp:
        workdir = pathlib.Path(tmp)
        if label == "local":
            soak = Soak(label, local_target(workdir), workdir, rng, None)
            soak.loop(deadline)
            soak.finish()
            return soak.summary()
        with running_s3_server() as server:
            url = f"s3://{server.bucket}/soak-{seed}"
            options = {"aws_endpoint": server.endpoint, "aws_region": server.region,
                       "aws_allow_http": "true", "aws_access_key_id": server.access_key_id,
                       "aws_secret_access_key": server.secret_access_key}
            soak = Soak(label, s3_target(server, url), workdir, rng, options)
            soak.loop(deadline)
            soak.finish()
            return soak.summary()


def report(summaries, seconds, seed, started):
    total = {k: sum(s[k] for s in summaries) for k in ("kills", "operations", "checks",
                                                       "failures")}
    lines = [f"# Soak, {started:%Y-%m-%d %H:%M} UTC",
             "",
             f"`make soak SOAK_SECONDS={seconds}` (seed {seed}), both targets at once; "
             f"load average at the end {os.getloadavg()[0]:.1f}.",
             "",
             "| target | kills | operations | invariant checks | failures | rows at the end |",
             "|---|---|---|---|---|---|"]
    for s in summaries:
        lines.append(f"| {s['target']} | {s['kills']} | {s['operations']} | {s['checks']} | "
                     f"{s['failures']} | {s['rows']} (+{s['served_rows']} served) |")
    lines.append(f"| all | {total['kills']} | {total['operations']} | {total['checks']} | "
                 f"{total['failures']} | |")
    for s in summaries:
        lines += ["", f"## {s['target']}", ""]
        for op, c in s["by_operation"].items():
            lines.append(f"- {op}: " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
        lines.append(f"- unreferenced files before the final maintain: "
                     f"{s['debris_before_final_maintain']}")
        for f in s["failure_details"]:
            lines.append(f"- FAILURE: {f}")
    return "\n".join(lines) + "\n", total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float,
                        default=float(os.environ.get("SOAK_SECONDS", 1200)))
    parser.add_argument("--target", choices=("both", "local", "s3"), default="both")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--json", action="store_true", help="print one target's summary as JSON")
    args = parser.parse_args()
    started = dt.datetime.now(dt.timezone.utc)
    if args.target != "both":
        summary = run_target(args.target, args.seconds, args.seed)
        print(json.dumps(summary) if args.json else summary)
        return 0 if summary["failures"] == 0 else 1
    # Both targets at once, each in its own process.
    procs = {t: subprocess.Popen([sys.executable, __file__, "--target", t, "--seconds",
                                  str(args.seconds), "--seed", str(args.seed + k), "--json"],
                                 stdout=subprocess.PIPE, text=True)
             for k, t in enumerate(("local", "s3"))}
    summaries = []
    for t, p in procs.items():
        out, _ = p.communicate(timeout=args.seconds + 1800)
        lines = out.strip().splitlines()
        if not lines:
            summaries.append({"target": t, "kills": 0, "operations": 0, "checks": 0,
                              "failures": 1, "rows": 0, "served_rows": 0,
                              "failure_details": [f"the {t} loop exited {p.returncode} "
                                                  "without a summary"],
                              "debris_before_final_maintain": None, "by_operation": {}})
            continue
        summaries.append(json.loads(lines[-1]))
    text, total = report(summaries, args.seconds, args.seed, started)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0 if total["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
