"""`timelake serve`, the Iceberg REST catalog over a warehouse (issue #21):
PyIceberg's RestCatalog and DuckDB's iceberg ATTACH find our tables by name
and read exactly our rows, PyIceberg appends through it and we read its
rows with the last-value index and head kept; bad requests get the spec's
error (ErrorModel) and leave storage exactly as it was.

Spark through the same catalog: test_spark.py."""

import datetime as dt
import json
import os
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine_helpers import (Server, cli_query, duckdb_connection, listing, run_cli, sorted_rows,
                            warehouse)  # noqa: F401  (fixture)

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 1, tzinfo=UTC)
COLUMNS = ["time", "device", "value"]


def readings(n, start=0):
    """n rows over 3 days and 4 devices, distinct (device, time) keys."""
    return pa.table({
        "time": pa.array([T0 + dt.timedelta(hours=(start + i) * 5 % 72, seconds=start + i)
                          for i in range(n)], pa.timestamp("us", tz="UTC")),
        "device": pa.array([f"d{(start + i) % 4}" for i in range(n)]),
        "value": pa.array([float(start + i) / 2 for i in range(n)]),
    })


def append_cli(warehouse, tmp_path, name, table, create=False):
    f = tmp_path / f"in-{name}-{abs(hash(str(table.column('value').to_pylist())))}.parquet"
    pq.write_table(table, f)
    args = ["-w", warehouse, "append", name, f]
    if create:
        args += ["--create", "--time-column", "time", "--series-key", "device"]
    run_cli(*args)


@pytest.fixture
def served(warehouse, tmp_path):
    """A warehouse with iot.readings (two appends) and a server over it."""
    a, b = readings(40), readings(30, start=100)
    append_cli(warehouse, tmp_path, "iot.readings", a, create=True)
    append_cli(warehouse, tmp_path, "iot.readings", b)
    server = Server(warehouse)
    try:
        yield server, pa.concat_tables([a, b])
    finally:
        server.stop()


def test_pyiceberg_lists_reads_and_appends_by_name(served, warehouse, tmp_path):
    from pyiceberg.catalog.rest import RestCatalog
    server, ours = served
    catalog = RestCatalog("timelake", uri=server.url)
    assert catalog.list_namespaces() == [("iot",)]
    assert catalog.list_tables("iot") == [("iot", "readings")]
    assert catalog.namespace_exists("iot") and not catalog.namespace_exists("nope")
    table = catalog.load_table("iot.readings")
    assert sorted_rows(table.scan().to_arrow(), COLUMNS) == sorted_rows(ours, COLUMNS)

    # PyIceberg appends through the catalog (its own files, our commit).
    more = readings(12, start=500)
    # _ingest_ts is NOT NULL: another engine gives its insertion time.
    now = dt.datetime.now(UTC)
    table.append(pa.table({**{c: more.column(c) for c in COLUMNS},
                           "_ingest_ts": pa.array([now] * 12, pa.timestamp("us", tz="UTC"))},
                          schema=table.schema().as_arrow()))
    got = cli_query(warehouse, "SELECT time, device, value FROM iot.readings", tmp_path)
    assert sorted_rows(got, COLUMNS) == sorted_rows(pa.concat_tables([ours, more]), COLUMNS)

    # Our metadata followed: the new snapshot has a last-value index (the
    # parent's merged with PyIceberg's rows), `latest` answers from it and
    # from a current head object, without reading a data file.
    latest = cli_query(warehouse, "SELECT device, max(time) AS t FROM iot.readings GROUP BY 1",
                       tmp_path)
    want = {r["device"]: r["t"] for r in latest.to_pylist()}
    proc = run_cli("-w", warehouse, "latest", "iot.readings", "--format", "json",
                   env={**os.environ, "TIMELAKE_TRACE": "storage"})
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert {r["device"] for r in rows} == set(want)
    gets = [line for line in proc.stderr.splitlines() if " GET " in line]
    assert not any("/data/" in g for g in gets), gets
    assert not any(".metadata.json" in g for g in gets), gets  # the head was current
    newest = pq.read_table(_index_of(warehouse, "iot", "readings"))
    assert {r["device"]: r["time"] for r in newest.select(["device", "time"]).to_pylist()} == want


def _index_of(warehouse, ns, name):
    metadata = sorted((warehouse / ns / name / "metadata").glob("v*.metadata.json"),
                      key=lambda p: int(p.name[1:].split(".")[0]))[-1]
    meta = json.loads(metadata.read_text())
    current = [s for s in meta["snapshots"] if s["snapshot-id"] == meta["current-snapshot-id"]]
    uri = current[0]["summary"].get("timelake.last-value-index")
    assert uri, current[0]["summary"]
    return uri.removeprefix("file://")


def test_duckdb_attaches_and_reads_by_name(served):
    server, ours = served
    con = duckdb_connection()
    import duckdb
    import duckdb_ext
    ext = pathlib.Path(duckdb_ext.__path__[0]) / "extensions" / f"v{duckdb.__version__}"
    con.execute(f"LOAD '{next(ext.glob('*')) / 'httpfs.duckdb_extension'}'")
    con.execute(f"ATTACH '' AS tl (TYPE iceberg, ENDPOINT '{server.url}', "
                "AUTHORIZATION_TYPE 'none')")
    tables = con.execute('SELECT "database", "schema", name FROM (SHOW ALL TABLES) '
                         "WHERE \"database\" = 'tl'").fetchall()
    assert tables == [("tl", "iot", "readings")]
    rows = con.execute("SELECT time, device, value FROM tl.iot.readings").fetchall()
    assert sorted(rows) == sorted_rows(ours, COLUMNS)


def test_a_token_is_required_when_given(warehouse, tmp_path):
    from pyiceberg.catalog.rest import RestCatalog
    append_cli(warehouse, tmp_path, "iot.readings", readings(5), create=True)
    server = Server(warehouse, "--token", "s3cret-t0ken")
    try:
        status, body = server.request("GET", "/v1/namespaces")
        assert status == 401 and body["error"]["type"] == "NotAuthorizedException"
        status, _ = server.request("GET", "/v1/namespaces",
                                   headers={"Authorization": "Bearer wrong"})
        assert status == 401
        catalog = RestCatalog("timelake", uri=server.url, token="s3cret-t0ken")
        assert catalog.list_tables("iot") == [("iot", "readings")]
    finally:
        log = server.stop()
    assert "s3cret-t0ken" not in log and "GET /v1/namespaces 401" in log


def test_bad_requests_get_the_specs_error_and_change_nothing(served, warehouse):
    server, _ = served
    status, table = server.request("GET", "/v1/namespaces/iot/tables/readings")
    assert status == 200
    uuid = table["metadata"]["table-uuid"]
    snapshot = table["metadata"]["current-snapshot-id"]
    before = listing(warehouse)

    def check(status, body, code, kind, says=""):
        assert status == code, body
        assert body["error"]["code"] == code and body["error"]["type"] == kind, body
        assert says in body["error"]["message"], body

    # Malformed JSON, to each endpoint that takes a body.
    for path in ["/v1/namespaces", "/v1/namespaces/iot/tables",
                 "/v1/namespaces/iot/tables/readings"]:
        check(*server.request("POST", path, '{"updates": [', {"Content-Type":
                                                              "application/json"}),
              400, "BadRequestException", "malformed JSON")
    # Unknown namespace and table.
    check(*server.request("GET", "/v1/namespaces/nope"), 404, "NoSuchNamespaceException")
    check(*server.request("GET", "/v1/namespaces/nope/tables"), 404,
          "NoSuchNamespaceException")
    check(*server.request("GET", "/v1/namespaces/iot/tables/nope"), 404,
          "NoSuchTableException")
    # Requirements that do not hold: 409, nothing committed.
    other = {"action": "set-properties", "updates": {"owner": "someone"}}
    for requirement in [{"type": "assert-table-uuid", "uuid": "not-" + uuid},
                        {"type": "assert-ref-snapshot-id", "ref": "main",
                         "snapshot-id": snapshot + 1},
                        {"type": "assert-create"}]:
        check(*server.request("POST", "/v1/namespaces/iot/tables/readings",
                              json.dumps({"requirements": [requirement], "updates": [other]})),
              409, "CommitFailedException", requirement["type"])
    # An update we do not carry out; a timelake property we refuse.
    check(*server.request("POST", "/v1/namespaces/iot/tables/readings",
                          json.dumps({"requirements": [], "updates": [
                              {"action": "add-schema", "schema": {}}]})),
          400, "BadRequestException", "add-schema")
    check(*server.request("POST", "/v1/namespaces/iot/tables/readings",
                          json.dumps({"requirements": [], "updates": [
                              {"action": "set-properties",
                               "updates": {"timelake.time-column": "value"}}]})),
          400, "BadRequestException", "timelake.time-column")
    # A snapshot whose manifest list lies outside the table.
    check(*server.request("POST", "/v1/namespaces/iot/tables/readings", json.dumps({
        "requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": 77, "parent-snapshot-id": snapshot, "sequence-number": 99,
                "timestamp-ms": 1, "manifest-list": "file:///etc/passwd",
                "summary": {"operation": "append"}}},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": 77}]})),
          400, "BadRequestException", "not inside the table")
    # A body of 100 MB is refused from its Content-Length, before it is read:
    # the answer comes while most of it was never sent.
    head = (b"POST /v1/namespaces/iot/tables/readings HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 104857600\r\n\r\n")
    status, body = server.raw(head + b"{" + b" " * (1 << 20))
    check(status, body, 413, "BadRequestException", "104857600")
    # Path tricks, sent as they are (clients would normalise them).
    for path in [b"/v1/namespaces/../tables/readings", b"/v1/namespaces/iot%2F..%2Fx/tables",
                 b"/v1/namespaces/%2E%2E/tables", b"/v1/namespaces/iot/tables/..%5Creadings"]:
        status, body = server.raw(b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n"
                                  b"Connection: close\r\n\r\n")
        check(status, body, 400, "BadRequestException")
    for path in ["/v1/namespaces/..", "/v1/namespaces/a.b/tables"]:
        status, body = server.raw(f"DELETE {path} HTTP/1.1\r\nHost: x\r\n"
                                  "Connection: close\r\n\r\n".encode())
        assert status in (400, 404) and "error" in body, body
    # A namespace of two levels (the spec's 0x1F separator).
    check(*server.request("GET", "/v1/namespaces/iot%1Fx"), 404, "NoSuchNamespaceException")
    # Unknown endpoints and unsupported ones.
    check(*server.request("POST", "/v1/tables/rename", "{}"), 406,
          "UnsupportedOperationException")
    check(*server.request("GET", "/v1/namespaces/iot/views"), 404, "NoSuchEndpointException")

    assert listing(warehouse) == before
    status, again = server.request("GET", "/v1/namespaces/iot/tables/readings")
    assert status == 200 and again["metadata-location"] == table["metadata-location"]


def test_namespaces_and_tables_through_the_catalog(served, warehouse, tmp_path):
    """Create, exist, list, drop: what Spark's and PyIceberg's DDL send."""
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import NestedField, DoubleType, StringType, TimestamptzType
    from pyiceberg.partitioning import PartitionSpec, PartitionField
    from pyiceberg.transforms import DayTransform
    server, _ = served
    catalog = RestCatalog("timelake", uri=server.url)
    catalog.create_namespace("fresh")
    assert ("fresh",) in catalog.list_namespaces() and catalog.list_tables("fresh") == []
    schema = Schema(NestedField(1, "ts", TimestamptzType(), required=True),
                    NestedField(2, "sensor", StringType()), NestedField(3, "v", DoubleType()))
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=DayTransform(),
                                        name="ts_day"))
    made = catalog.create_table("fresh.m", schema=schema, partition_spec=spec,
                                properties={"timelake.time-column": "ts",
                                            "timelake.series-key": "sensor"})
    assert made.metadata.properties["timelake.time-column"] == "ts"
    # We append to it directly; PyIceberg reads it by name.
    rows = pa.table({"ts": pa.array([T0, T0 + dt.timedelta(days=1)], pa.timestamp("us", tz="UTC")),
                     "sensor": ["a", "b"], "v": [1.0, 2.0]})
    f = tmp_path / "m.parquet"
    pq.write_table(rows, f)
    run_cli("-w", warehouse, "append", "fresh.m", f)
    got = catalog.load_table("fresh.m").scan().to_arrow()
    assert sorted_rows(got, ["sensor", "v"]) == [("a", 1.0), ("b", 2.0)]
    status, body = server.request("DELETE", "/v1/namespaces/fresh")
    assert status == 409 and body["error"]["type"] == "NamespaceNotEmptyException"
    catalog.drop_table("fresh.m")
    assert not catalog.table_exists("fresh.m")
    catalog.drop_namespace("fresh")
    assert ("fresh",) not in catalog.list_namespaces()
    # Partitioning other than the time column's is refused, nothing written.
    before = listing(warehouse)
    with pytest.raises(Exception, match="hour, day or month"):
        catalog.create_table("iot.other", schema=schema, partition_spec=PartitionSpec(
            PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="x")),
            properties={"timelake.time-column": "ts"})
    assert listing(warehouse) == before
