"""Storage storms on S3 (SPEC §14, issue #22): bursts of 503 SlowDown,
connection resets in the middle of a multipart upload, a put-if-absent whose
answer is lost after it landed, and answers slower than the client's
timeout. Each operation either succeeds exactly once or fails with a clear
error that says what to do, and nothing committed is lost or doubled.

The faults come from fault_proxy.py, in front of the session's S3 server."""

import collections
import datetime as dt
import hashlib
import hmac
import http.client
import itertools
import json
import re
import urllib.parse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import run_cli
from fault_proxy import proxy, write  # noqa: F401  (proxy: a fixture)

VERSION = re.compile(r"/metadata/v(\d+)\.metadata\.json$")
# The streaming upload of a data file sends parts of this size
# (storage::OutputStreamOptions::part_size): a file over it is a multipart
# upload.
PART_SIZE = 8 << 20


def is_commit_put(method, path, query):
    """The put-if-absent of a table version (versions::TryCommit)."""
    return method == "PUT" and VERSION.search(path) is not None


def is_part(method, path, query):
    return method == "PUT" and "partNumber=" in query


def is_completion(method, path, query):
    return method == "POST" and "uploadId=" in query


def count_and_sum(warehouse, env, table="t"):
    out = run_cli("-w", warehouse, "sql", f"SELECT count(*) AS n, sum(v) AS s FROM {table}",
                  "--format", "json", env=env)
    got = json.loads(out.stdout.splitlines()[0])
    return got["n"], got["s"]


def info(warehouse, env, table="t"):
    return json.loads(run_cli("-w", warehouse, "info", table, "--format", "json",
                              env=env).stdout)


def per_key(proxy, predicate):
    """The logged requests matching `predicate`, grouped by path in order."""
    groups = collections.defaultdict(list)
    for r in proxy.requests(predicate):
        groups[r.path].append(r)
    return groups


class SavedLog:
    """A saved part of a proxy's log, asked like the proxy."""

    def __init__(self, log):
        self.log = log

    def requests(self, predicate):
        return [r for r in self.log if predicate(r.method, r.path, r.query)]


def longest_run(outcomes, value):
    best = run = 0
    for o in outcomes:
        run = run + 1 if o == value else 0
        best = max(best, run)
    return best


def list_uploads(s3_server, prefix):
    """The keys of the multipart uploads in progress below `prefix` (S3
    ListMultipartUploads, signed with Signature Version 4)."""
    url = urllib.parse.urlsplit(s3_server.endpoint)
    host = url.netloc
    query = {"prefix": prefix, "uploads": ""}
    canonical_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}="
                               f"{urllib.parse.quote(v, safe='-_.~')}"
                               for k, v in sorted(query.items()))
    amz_date = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": host, "x-amz-date": amz_date, "x-amz-content-sha256": payload}
    signed = ";".join(sorted(headers))
    path = f"/{s3_server.bucket}"
    canonical = "\n".join(["GET", path, canonical_query,
                           *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed,
                           payload])
    scope = f"{day}/{s3_server.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + s3_server.secret_access_key).encode()
    for part in (day, s3_server.region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={s3_server.access_key_id}/"
                                f"{scope}, SignedHeaders={signed}, Signature={signature}")
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    try:
        conn.request("GET", f"{path}?{canonical_query}", headers=headers)
        response = conn.getresponse()
        body = response.read().decode()
    finally:
        conn.close()
    assert response.status == 200, body
    return re.findall(r"<Key>([^<]*)</Key>", body)


# --- bursts of 503 SlowDown ------------------------------------------------------


def test_bursts_of_slowdown(s3_server, s3_warehouse, proxy, tmp_path):
    """Each command meets a burst of 6 503 SlowDown answers in a row to
    whatever it asks (its requests 5-10; a query's 1-6), and the put-if-absent
    of every version it commits gets 6 of its own first; one commit's put
    gets 12, more than the client's 10 retries, so the Store retries it.
    Every command succeeds once, with exactly its rows."""
    env = s3_server.env(endpoint=proxy.endpoint)

    def storm(first=5, commit_burst=6):
        counter = itertools.count(1)
        commit_puts = collections.Counter()

        def rule(method, path, query):
            n = next(counter)
            if is_commit_put(method, path, query):
                commit_puts[path] += 1
                if commit_puts[path] <= commit_burst:
                    return 503
            return 503 if first <= n < first + 6 else None

        proxy.clear()
        proxy.rule = rule

    commands = []
    for k in range(2):
        storm(commit_burst=12 if k == 1 else 6)
        create = ["--create", "--time-column", "time", "--series-key", "dev"] if k == 0 else []
        run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / f"{k}.parquet", 20, 20 * k),
                "--no-maintain", *create, env=env)
        commands.append(("append", 5, proxy.requests()))
    storm()
    report = run_cli("-w", s3_warehouse, "maintain", "t", env=env)
    commands.append(("maintain", 5, proxy.requests()))
    storm(first=1)
    assert count_and_sum(s3_warehouse, env) == (40, float(sum(range(40))))
    commands.append(("sql", 1, proxy.requests()))

    for name, first, log in commands:
        outcomes = [r.outcome for r in log]
        # The burst met the command in full; nothing failed for good.
        assert outcomes[first - 1:first + 5] == [503] * 6, (name, outcomes)
        assert outcomes[-1] is None, (name, outcomes)
    stormed = {(r.method, "list" if "list-type" in r.query else "")
               for _, _, log in commands for r in log if r.outcome == 503}
    assert {("GET", ""), ("GET", "list"), ("PUT", "")} <= stormed, stormed
    # Every version put got its burst, then landed once: the 12-burst one
    # outlasted the client's retries (the Store retried it).
    for name, _, log in commands:
        for path, puts in per_key(SavedLog(log), is_commit_put).items():
            statuses = [r.upstream_status for r in puts]
            assert statuses[-1] == 200 and statuses.count(200) == 1, (name, path, statuses)
    second = [r.outcome for r in commands[1][2] if is_commit_put(r.method, r.path, r.query)]
    assert second == [503] * 12 + [None], second

    # Without faults: nothing lost, nothing doubled; maintain compacted.
    proxy.rule = lambda *_: None
    got = info(s3_warehouse, s3_server.env())
    assert got["rows"] == 40 and got["files"] == 1, (report.stdout, got)


# --- connection resets during a multipart upload -------------------------------


def write_big(path, n=900_000, seed=7):
    """A time-series file whose Parquet data file comes out a little under
    three part sizes (random doubles do not compress; more rows than ~1M
    would be split into several data files): three parts. Returns (path, sum
    of v)."""
    rng = np.random.default_rng(seed)
    v = rng.random(n)
    start = np.datetime64("2026-01-01T00:00:00", "us")
    pq.write_table(pa.table({
        "time": pa.array(start + np.arange(n) * np.timedelta64(90_000, "us"),
                         pa.timestamp("us", tz="UTC")),
        "v": pa.array(v),
        "w": pa.array(rng.random(n)),
        "x": pa.array(rng.random(n)),
    }), path)
    return path, float(v.sum())


def data_keys(s3_server, s3_warehouse, table="t"):
    prefix = s3_warehouse.split("/", 3)[3]
    return {k for k in s3_server.keys(f"{prefix}/default/{table}/data")
            if k.endswith(".parquet")}


def test_resets_in_the_middle_of_a_multipart_upload(s3_server, s3_warehouse, proxy, tmp_path):
    """A data file of three parts: part 1's first request is reset before
    its body is read, part 2's first two after half a MiB of it, part 3's
    first lands but its answer is lost, and so does the first answer to the
    upload's completion. The client retries each; the append succeeds once
    with exactly its rows, in one data file."""
    path, total = write_big(tmp_path / "big.parquet")
    env = s3_server.env(endpoint=proxy.endpoint)
    run_cli("-w", s3_warehouse, "create", "t", "--schema-from", path, "--time-column", "time",
            env=s3_server.env())
    tries = collections.Counter()
    faults = {("1", 1): "reset", ("2", 1): "reset-midbody", ("2", 2): "reset-midbody",
              ("3", 1): "lost-answer"}

    def rule(method, path, query):
        if is_completion(method, path, query):
            tries["complete"] += 1
            return "lost-answer" if tries["complete"] == 1 else None
        if not is_part(method, path, query):
            return None
        part = urllib.parse.parse_qs(query)["partNumber"][0]
        tries[part] += 1
        return faults.get((part, tries[part]))

    proxy.rule = rule
    out = run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "big", env=env)
    assert "appended 900,000 rows" in out.stdout, out.stdout

    parts = proxy.requests(is_part)
    by_part = collections.defaultdict(list)
    for r in parts:
        by_part[urllib.parse.parse_qs(r.query)["partNumber"][0]].append(r)
    assert sorted(by_part) == ["1", "2", "3"], by_part.keys()
    assert [r.outcome for r in by_part["1"]] == ["reset", None]
    assert [r.outcome for r in by_part["2"]] == ["reset-midbody", "reset-midbody", None]
    assert [r.outcome for r in by_part["3"]] == ["lost-answer", None]
    assert [r.upstream_status for r in by_part["3"]] == [200, 200]
    completions = proxy.requests(is_completion)
    assert [(r.outcome, r.upstream_status) for r in completions] == [("lost-answer", 200),
                                                                     (None, 200)]

    proxy.rule = lambda *_: None
    plain = s3_server.env()
    n, s = count_and_sum(s3_warehouse, plain)
    assert n == 900_000 and s == pytest.approx(total)
    (key,) = data_keys(s3_server, s3_warehouse)
    size = s3_server.filesystem().get_file_info(f"{s3_server.bucket}/{key}").size
    assert 2 * PART_SIZE < size <= 3 * PART_SIZE, size  # three parts, as planned
    assert list_uploads(s3_server, s3_warehouse.split("/", 3)[3]) == []
    # A re-run of the batch commits nothing.
    out = run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "big", env=plain)
    assert "appended 0 rows" in out.stdout, out.stdout
    assert count_and_sum(s3_warehouse, plain)[0] == 900_000


def test_a_part_that_keeps_failing_fails_the_append_cleanly(s3_server, s3_warehouse, proxy,
                                                            tmp_path):
    """Part 2 of a data file is reset mid-body on every attempt: the append
    fails with an error that names the file and says nothing was committed;
    the upload is aborted (no object, no parts left), the table holds what it
    held, and a re-run of the batch afterwards appends it once."""
    plain = s3_server.env()
    small, first = write_big(tmp_path / "small.parquet", n=20, seed=1)
    run_cli("-w", s3_warehouse, "append", "t", small, "--create", "--time-column", "time",
            env=plain)
    before = data_keys(s3_server, s3_warehouse)
    path, total = write_big(tmp_path / "big.parquet", n=600_000)  # two parts
    proxy.rule = lambda m, p, q: ("reset-midbody" if is_part(m, p, q) and "partNumber=2" in q
                                  else None)
    proc = run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "big",
                   env=s3_server.env(endpoint=proxy.endpoint), check=False)
    assert proc.returncode != 0
    assert "appending to" in proc.stderr and ".parquet" in proc.stderr, proc.stderr
    assert "connection was closed or reset" in proc.stderr, proc.stderr
    assert "nothing was committed; the storage failure is transient: run the append again" \
        in proc.stderr, proc.stderr
    assert s3_server.secret_access_key not in proc.stderr
    attempts = proxy.outcomes(lambda m, p, q: is_part(m, p, q) and "partNumber=2" in q)
    assert len(attempts) >= 2 and set(attempts) == {"reset-midbody"}, attempts

    assert count_and_sum(s3_warehouse, plain) == (20, pytest.approx(first))
    assert data_keys(s3_server, s3_warehouse) == before
    assert list_uploads(s3_server, s3_warehouse.split("/", 3)[3]) == []
    run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "big", env=plain)
    n, s = count_and_sum(s3_warehouse, plain)
    assert n == 600_020 and s == pytest.approx(total + first)


# --- a put-if-absent whose answer is lost after it landed ------------------------


def test_a_commit_whose_answer_is_lost_is_recognised(s3_server, s3_warehouse, proxy, tmp_path):
    """The put-if-absent of every version lands, and its answer is lost: the
    retry finds the version taken (412) by the very object it wrote, so the
    commit is this writer's. Create, appends (one with a batch id, re-run)
    and a compaction each commit once; no version is committed twice."""
    env = s3_server.env(endpoint=proxy.endpoint)
    seen = collections.Counter()

    def rule(method, path, query):
        if is_commit_put(method, path, query):
            seen[path] += 1
            return "lost-answer" if seen[path] == 1 else None
        return None

    proxy.rule = rule
    for k in range(3):
        create = ["--create", "--time-column", "time", "--series-key", "dev"] if k == 0 else []
        run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / f"{k}.parquet", 20, 20 * k),
                "--no-maintain", "--batch-id", f"b{k}", *create, env=env)
    report = run_cli("-w", s3_warehouse, "maintain", "t", env=env)
    out = run_cli("-w", s3_warehouse, "append", "t", tmp_path / "1.parquet", "--batch-id", "b1",
                  env=env)
    assert "appended 0 rows" in out.stdout, out.stdout

    versions = per_key(proxy, is_commit_put)
    assert len(versions) >= 5, sorted(versions)  # create, 3 appends, maintain
    for path, puts in versions.items():
        # The first landed (200 upstream, answer lost); the client's retry
        # met its own object (412): one version, one commit.
        assert [r.outcome for r in puts] == ["lost-answer", None], path
        assert [r.upstream_status for r in puts] == [200, 412], path
        assert all(r.headers.get("if-none-match") == "*" for r in puts), path

    proxy.rule = lambda *_: None
    plain = s3_server.env()
    assert count_and_sum(s3_warehouse, plain) == (60, float(sum(range(60))))
    got = info(s3_warehouse, plain)
    assert got["rows"] == 60 and got["version"] == max(
        int(VERSION.search(p).group(1)) for p in versions), (got, sorted(versions))
    assert got["files"] == 1, (report.stdout, got)  # maintain compacted the three


def test_an_unknown_commit_outcome_is_reported_and_a_batch_rerun_appends_once(
        s3_server, s3_warehouse, proxy, tmp_path):
    """The put-if-absent of a version lands and its answer is lost; then
    every retry is refused (403): the writer cannot tell whether it
    committed. The append fails saying that the commit may have landed and
    that a re-run with the same --batch-id commits at most once; the rows
    are there once, and the re-run adds nothing."""
    plain = s3_server.env()
    run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / "0.parquet", 20), "--create",
            "--time-column", "time", "--series-key", "dev", env=plain)
    seen = collections.Counter()

    def rule(method, path, query):
        if is_commit_put(method, path, query):
            seen[path] += 1
            return "lost-answer" if seen[path] == 1 else 403
        return None

    proxy.rule = rule
    path = write(tmp_path / "1.parquet", 20, 20)
    proc = run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "b1", "--no-maintain",
                   env=s3_server.env(endpoint=proxy.endpoint), check=False)
    assert proc.returncode != 0
    assert "committing version 3" in proc.stderr, proc.stderr
    assert "the commit may have landed" in proc.stderr, proc.stderr
    assert "re-run with the same --batch-id commits at most once" in proc.stderr, proc.stderr
    puts = [(r.outcome, r.upstream_status) for r in proxy.requests(is_commit_put)]
    assert puts[0] == ("lost-answer", 200) and set(puts[1:]) == {(403, None)}, puts

    proxy.rule = lambda *_: None
    assert count_and_sum(s3_warehouse, plain) == (40, float(sum(range(40))))
    out = run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "b1", env=plain)
    assert "appended 0 rows" in out.stdout, out.stdout
    assert count_and_sum(s3_warehouse, plain) == (40, float(sum(range(40))))
    assert info(s3_warehouse, plain)["snapshots"] == 2


# --- answers slower than the client's timeout ----------------------------------

TIMEOUT = ["--storage-option", "timeout=1s"]
SLOW = 2.5  # seconds: past the 1 s timeout


def test_slow_answers_past_the_timeout_are_retried(s3_server, s3_warehouse, proxy, tmp_path):
    """With a 1 s request timeout, the first 2 reads of version metadata, the
    first 2 listings, the first data-file put and the first put-if-absent of
    each version answer after 2.5 s (the puts land at once; only their
    answers are late). The client gives up on each and retries: appends and
    a query succeed once, and a late-but-landed version is recognised as
    this writer's, not committed again."""
    plain = s3_server.env()
    run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / "0.parquet", 20), "--create",
            "--time-column", "time", "--series-key", "dev", env=plain)
    env = s3_server.env(endpoint=proxy.endpoint)
    seen = collections.Counter()

    def rule(method, path, query):
        if is_commit_put(method, path, query):
            kind = ("commit", path)
        elif method == "PUT" and path.endswith(".parquet") and "/data/" in path:
            kind = ("data", "")
        elif method == "GET" and VERSION.search(path):
            kind = ("metadata", "")
        elif method == "GET" and "list-type=2" in query:
            kind = ("list", "")
        else:
            return None
        seen[kind] += 1
        limit = 2 if kind[0] in ("metadata", "list") else 1
        if seen[kind] > limit:
            return None
        return ("slow", SLOW) if method == "PUT" else ("delay", SLOW)

    proxy.rule = rule
    for k in (1, 2):
        run_cli(*TIMEOUT, "-w", s3_warehouse, "append", "t",
                write(tmp_path / f"{k}.parquet", 20, 20 * k), "--batch-id", f"b{k}",
                "--no-maintain", env=env)
    assert count_and_sum(s3_warehouse, env) == (60, float(sum(range(60))))
    slow = [r for r in proxy.requests() if isinstance(r.outcome, tuple)]
    assert {r.outcome[0] for r in slow} == {"slow", "delay"}, slow
    commits = per_key(proxy, is_commit_put)
    assert len(commits) == 2, sorted(commits)
    for path, puts in commits.items():
        assert [r.upstream_status for r in puts] == [200, 412], (path, puts)

    proxy.rule = lambda *_: None
    got = info(s3_warehouse, plain)
    assert got["rows"] == 60 and got["snapshots"] == 3, got
    out = run_cli("-w", s3_warehouse, "append", "t", tmp_path / "2.parquet", "--batch-id", "b2",
                  env=plain)
    assert "appended 0 rows" in out.stdout, out.stdout


def test_a_commit_that_never_answers_in_time(s3_server, s3_warehouse, proxy, tmp_path):
    """Every attempt of a version's put-if-absent answers after the timeout;
    the first landed. The append gives up, saying that the commit may have
    landed; it did, once, and a re-run of the batch appends nothing."""
    plain = s3_server.env()
    run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / "0.parquet", 20), "--create",
            "--time-column", "time", "--series-key", "dev", env=plain)
    proxy.rule = lambda m, p, q: ("slow", SLOW) if is_commit_put(m, p, q) else None
    path = write(tmp_path / "1.parquet", 20, 20)
    proc = run_cli(*TIMEOUT, "-w", s3_warehouse, "append", "t", path, "--batch-id", "b1",
                   "--no-maintain", env=s3_server.env(endpoint=proxy.endpoint), check=False)
    assert proc.returncode != 0
    assert "committing version 3" in proc.stderr and "attempts" in proc.stderr, proc.stderr
    assert "timed out waiting for an answer" in proc.stderr, proc.stderr
    assert "the commit may have landed" in proc.stderr, proc.stderr
    puts = proxy.requests(is_commit_put)
    assert len(puts) >= 2 and puts[0].upstream_status == 200, puts

    proxy.rule = lambda *_: None
    assert count_and_sum(s3_warehouse, plain) == (40, float(sum(range(40))))
    out = run_cli("-w", s3_warehouse, "append", "t", path, "--batch-id", "b1", env=plain)
    assert "appended 0 rows" in out.stdout, out.stdout
    assert info(s3_warehouse, plain)["snapshots"] == 2
