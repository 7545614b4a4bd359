"""The `timelake` binary on an S3 warehouse (SPEC §10, §14): a private
S3-compatible server (versitygw, started by scripts/s3server.py for the
session), credentials from the AWS_* environment or --storage-option.

Every expected value is computed from the input rows here. After each flow
the bucket holds exactly what the current table version references, and no
message or storage trace ever shows the secret."""

import datetime as dt
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.table import StaticTable

from conftest import referenced_files, run_cli

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
DEVICES = ["d0", "d1", "d2"]
HOURS = 48  # two daily partitions


def rows(start_hour, hours):
    return [{"time": T0 + dt.timedelta(hours=h), "dev": DEVICES[h % 3], "v": float(h)}
            for h in range(start_hour, start_hour + hours)]


def write(path, rs):
    pq.write_table(pa.table({
        "time": pa.array([r["time"] for r in rs], pa.timestamp("us", tz="UTC")),
        "dev": pa.array([r["dev"] for r in rs], pa.string()),
        "v": pa.array([r["v"] for r in rs], pa.float64()),
    }), path)
    return path


def keys_of(server, url):
    prefix = url.split("/", 3)[3]
    return {f"s3://{server.bucket}/{k}" for k in server.keys(prefix)}


def assert_only_referenced(server, warehouse, table):
    """Every data, manifest and metadata file of `table` on the server is
    referenced by its current version (or is a kept older version)."""
    folder = f"{warehouse}/{table.replace('.', '/')}"
    files = keys_of(server, folder)
    versions = sorted((u for u in files if re.search(r"/metadata/v\d+\.metadata\.json$", u)),
                      key=lambda u: int(u.rsplit("/v", 1)[1].split(".")[0]))
    assert versions, files
    static = StaticTable.from_metadata(versions[-1], properties=server.pyiceberg_properties())
    referenced = referenced_files(static)
    assert referenced - files == set()
    assert {u for u in files if u.endswith((".parquet", ".avro"))} - referenced == set()
    return static


def test_cli_flow_on_s3(s3_server, s3_warehouse, tmp_path):
    env = s3_server.env()
    w = s3_warehouse

    def cli(*args, **kw):
        return run_cli("-w", w, *args, env=env, **kw)

    first, second = rows(0, HOURS), rows(HOURS, 6)
    out = cli("create", "iot.r", "--schema-from", write(tmp_path / "a.parquet", first),
              "--time-column", "time", "--series-key", "dev")
    assert "created iot.r" in out.stdout
    cli("append", "iot.r", tmp_path / "a.parquet")
    cli("append", "iot.r", write(tmp_path / "b.parquet", second))
    everything = first + second

    out = cli("sql", "SELECT dev, count(*) AS c, max(v) AS m FROM iot.r GROUP BY dev "
              "ORDER BY dev", "--format", "json")
    got = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    expected = [{"dev": d, "c": sum(r["dev"] == d for r in everything),
                 "m": max(r["v"] for r in everything if r["dev"] == d)} for d in DEVICES]
    assert got == expected

    out = cli("latest", "iot.r", "--format", "parquet", "-o", tmp_path / "latest.parquet")
    latest = pq.read_table(tmp_path / "latest.parquet")
    newest = {d: max((r for r in everything if r["dev"] == d), key=lambda r: r["time"])
              for d in DEVICES}
    assert sorted(zip(latest.column("dev").to_pylist(), latest.column("v").to_pylist())) == \
        sorted((d, r["v"]) for d, r in newest.items())

    info = json.loads(cli("info", "iot.r", "--format", "json").stdout)
    assert info["rows"] == len(everything)
    assert info["location"] == f"{w}/iot/r"
    assert info["time_column"] == "time" and info["series_key"] == ["dev"]
    version = info["version"]

    cli("alter", "iot.r", "--set", "write.note=on-s3")
    info = json.loads(cli("info", "iot.r", "--format", "json").stdout)
    assert info["properties"]["write.note"] == "on-s3"
    assert info["version"] == version + 1
    assert info["rows"] == len(everything)
    assert "iot.r" in cli("ls", "iot").stdout.split()

    static = assert_only_referenced(s3_server, w, "iot.r")
    assert static.scan().to_arrow().num_rows == len(everything)  # PyIceberg reads S3 too

    cli("drop", "iot.r")
    assert keys_of(s3_server, f"{w}/iot/r") == set()
    out = cli("info", "iot.r", check=False)
    assert out.returncode != 0 and "not found" in out.stderr


def test_storage_options_instead_of_environment(s3_server, s3_warehouse, tmp_path):
    env = {k: v for k, v in s3_server.env().items() if not k.startswith("AWS_")}
    options = []
    for key, value in [("aws_endpoint", s3_server.endpoint), ("aws_allow_http", "true"),
                       ("aws_region", s3_server.region),
                       ("aws_access_key_id", s3_server.access_key_id),
                       ("aws_secret_access_key", s3_server.secret_access_key)]:
        options += ["--storage-option", f"{key}={value}"]
    data = write(tmp_path / "a.parquet", rows(0, 6))
    run_cli("-w", s3_warehouse, *options, "append", "t", data, "--create", "--time-column",
            "time", "--series-key", "dev", env=env)
    out = run_cli("-w", s3_warehouse, *options, "sql", "SELECT count(*) AS n FROM t",
                  "--format", "csv", env=env)
    assert out.stdout.splitlines()[:2] == ["n", "6"]
    assert_only_referenced(s3_server, s3_warehouse, "default.t")


def test_unknown_options_and_missing_credentials_say_what_to_do(s3_server, s3_warehouse,
                                                                tmp_path):
    """Issue #23 item 10: a misspelt --storage-option is refused, naming the key
    it resembles; without credentials the message says how to give them
    instead of naming the instance-metadata address object_store asked."""
    env = {k: v for k, v in s3_server.env().items() if not k.startswith("AWS_")}
    base = ["--storage-option", f"aws_endpoint={s3_server.endpoint}",
            "--storage-option", "aws_allow_http=true",
            "--storage-option", f"aws_region={s3_server.region}"]
    proc = run_cli("-w", s3_warehouse, *base, "--storage-option", "aws_acess_key_id=x",
                   "ls", env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    assert 'unknown storage option "aws_acess_key_id"' in proc.stderr, proc.stderr
    assert "did you mean aws_access_key_id?" in proc.stderr, proc.stderr
    # The metadata service is pointed at a closed loopback port, so that the
    # test never leaves this machine and fails fast.
    proc = run_cli("-w", s3_warehouse, *base, "--storage-option",
                   "aws_metadata_endpoint=http://127.0.0.1:9", "ls", env=env, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "no S3 credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" \
        in proc.stderr, proc.stderr
    assert "latest/api/token" not in proc.stderr and "127.0.0.1:9" not in proc.stderr


def assert_no_secret(proc, *secrets):
    for secret in secrets:
        assert secret not in proc.stdout, proc.stdout
        assert secret not in proc.stderr, proc.stderr


def test_secrets_never_in_messages_or_traces(s3_server, s3_warehouse, tmp_path):
    secret = s3_server.secret_access_key
    env = dict(s3_server.env(), TIMELAKE_TRACE="storage")
    data = write(tmp_path / "a.parquet", rows(0, 24))

    # Working commands, traced: every storage request is printed, no secret
    # (not even one written into the URL, which object_store ignores).
    with_userinfo = s3_warehouse.replace("s3://", f"s3://{s3_server.access_key_id}:{secret}@")
    for w, args in ((s3_warehouse, ["append", "t", data, "--create", "--time-column", "time"]),
                    (s3_warehouse, ["sql", "SELECT count(*) FROM t"]),
                    (s3_warehouse, ["latest", "t"]), (s3_warehouse, ["info", "t"]),
                    (with_userinfo, ["info", "t"])):
        proc = run_cli("-w", w, *args, env=env)
        assert "timelake storage: " in proc.stderr  # the trace is on
        assert_no_secret(proc, secret)

    # Failing commands: a clear one-line error, no secret.
    wrong = "Wr0ng" + secret[5:]
    failures = [
        (["-w", s3_warehouse, "sql", "SELECT * FROM t"], dict(env, AWS_SECRET_ACCESS_KEY=wrong)),
        (["-w", s3_warehouse, "append", "t", data], dict(env, AWS_SECRET_ACCESS_KEY=wrong)),
        (["-w", s3_warehouse, "--storage-option", f"aws_secret_access_key={wrong}", "info",
          "t"], env),
        (["-w", s3_warehouse, "sql", "SELEC nonsense"], env),
        (["-w", s3_warehouse, "info", "no.such_table"], env),
        (["-w", s3_warehouse, "sql", "SELECT * FROM no_such_table"], env),
        (["-w", s3_warehouse.replace("s3://", f"s3://{s3_server.access_key_id}:{wrong}@"),
          "info", "t"], dict(env, AWS_SECRET_ACCESS_KEY=wrong)),
    ]
    for args, run_env in failures:
        proc = run_cli(*args, env=run_env, check=False)
        assert proc.returncode != 0, (args, proc.stdout, proc.stderr)
        assert "error" in proc.stderr, proc.stderr
        assert_no_secret(proc, secret, wrong)

    # The failures changed nothing.
    out = run_cli("-w", s3_warehouse, "sql", "SELECT count(*) AS n FROM t", "--format", "csv",
                  env=s3_server.env())
    assert out.stdout.splitlines()[:2] == ["n", "24"]
