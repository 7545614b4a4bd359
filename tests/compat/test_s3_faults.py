"""Injected storage faults (SPEC §14): transient errors (503 SlowDown, dropped
connections) are retried with backoff until the command succeeds; permanent
ones (403, 404) are reported at once, without a second request.

A small proxy (fault_proxy.py) in front of the session's S3 server forwards
every request unchanged unless a rule says to answer it with an error or to
drop the connection. test_s3_storms.py has the harder cases."""

import json

import pytest

from conftest import run_cli
from fault_proxy import proxy, write  # noqa: F401  (proxy: a fixture)


def is_list(method, path, query):
    return method == "GET" and "list-type=2" in query


def test_transient_errors_are_retried(s3_server, s3_warehouse, proxy, tmp_path):
    """Every 4th request gets 503 SlowDown and every 7th a dropped
    connection; the commands still succeed with exactly their rows."""
    env = s3_server.env(endpoint=proxy.endpoint)
    counter = iter(range(1, 1_000_000))

    def flaky(method, path, query):
        n = next(counter)
        return 503 if n % 4 == 0 else "drop" if n % 7 == 0 else None

    proxy.rule = flaky
    for k in range(3):
        # One snapshot per append (no inline compaction): counted below.
        create = ["--create", "--time-column", "time", "--series-key", "dev"] if k == 0 else []
        run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / f"{k}.parquet", 20, 20 * k),
                "--no-maintain", *create, env=env)
    out = run_cli("-w", s3_warehouse, "sql", "SELECT count(*) AS n, sum(v) AS s FROM t",
                  "--format", "json", env=env)
    assert json.loads(out.stdout.splitlines()[0]) == {"n": 60, "s": float(sum(range(60)))}
    outcomes = proxy.outcomes()
    assert outcomes.count(503) >= 3 and outcomes.count("drop") >= 2, outcomes

    # The same table without faults: nothing lost, nothing doubled.
    proxy.rule = lambda *_: None
    info = json.loads(run_cli("-w", s3_warehouse, "info", "t", "--format", "json",
                              env=s3_server.env()).stdout)
    assert info["rows"] == 60 and info["snapshots"] == 3


def test_failures_outlasting_the_client_are_retried_by_the_store(s3_server, s3_warehouse,
                                                                 proxy, tmp_path):
    """The storage client gives up on a request after 10 retries; Timelake's
    Store then retries the whole operation, so 12 failures in a row of one
    listing still end in success."""
    run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / "a.parquet", 10), "--create",
            "--time-column", "time", env=s3_server.env())
    env = dict(s3_server.env(endpoint=proxy.endpoint), TIMELAKE_TRACE="storage")

    def info():
        proc = run_cli("-w", s3_warehouse, "info", "t", "--format", "json", env=env)
        # The trace shows the client's calls (one per Store attempt), not
        # the client's own retries.
        return json.loads(proc.stdout), proc.stderr.count("timelake storage: LIST ")

    got, calm_lists = info()
    assert got["rows"] == 10
    proxy.log.clear()
    failures = iter(range(12))
    proxy.rule = lambda m, p, q: 503 if is_list(m, p, q) and next(failures, None) is not None \
        else None
    got, stormy_lists = info()
    assert got["rows"] == 10
    lists = proxy.outcomes(is_list)
    assert lists[:12] == [503] * 12 and None in lists[12:], lists
    assert stormy_lists == calm_lists + 1  # the Store called the client once more


@pytest.mark.parametrize("status", [403, 404])
def test_permanent_errors_are_not_retried(s3_server, s3_warehouse, proxy, tmp_path, status):
    run_cli("-w", s3_warehouse, "append", "t", write(tmp_path / "a.parquet", 10), "--create",
            "--time-column", "time", env=s3_server.env())

    def is_metadata_get(method, path, query):
        return method == "GET" and path.endswith(".metadata.json")

    # The head object would answer without the metadata file: it fails too
    # (a reader then takes the ordinary path).
    proxy.rule = lambda m, p, q: (status if is_metadata_get(m, p, q) or
                                  (m == "GET" and p.endswith("timelake-head")) else None)
    proc = run_cli("-w", s3_warehouse, "info", "t", env=s3_server.env(endpoint=proxy.endpoint),
                   check=False)
    assert proc.returncode != 0
    assert str(status) in proc.stderr, proc.stderr
    assert "attempts" not in proc.stderr, proc.stderr
    refused = proxy.outcomes(is_metadata_get)
    assert refused == [status], refused  # one request, no retry


def test_an_endpoint_that_never_answers_fails_without_store_retries(s3_server, s3_warehouse):
    """A refused connection before any request of the process succeeded is
    most likely a wrong endpoint or port: the client's own retries, then
    the error, with a hint, and no retry of the whole operation (after a
    first answer the same failure counts as an outage and is retried)."""
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run_cli("-w", s3_warehouse, "ls", env=s3_server.env(endpoint=f"http://127.0.0.1:{port}"),
                   check=False)
    assert proc.returncode != 0
    assert "no request to this storage endpoint has succeeded yet" in proc.stderr, proc.stderr
    assert "attempts" not in proc.stderr, proc.stderr
    assert s3_server.secret_access_key not in proc.stderr
