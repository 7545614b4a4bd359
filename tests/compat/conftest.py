"""Shared helpers of the compatibility tests: they run the real peers
(PyIceberg, DuckDB with its iceberg extension, Timelake 0.7) against tables
the `timelake` binary writes, and the binary against tables the peers write."""

import contextlib
import os
import pathlib
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ.get("TIMELAKE_BIN", str(ROOT / "build" / "release" / "timelake"))
TL07_PYTHON = ROOT / ".venv-tl07" / "bin" / "python"


def run_cli(*args, check=True, env=None):
    """Runs the timelake binary (with `env` as its environment when given);
    returns the completed process."""
    proc = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"timelake {' '.join(map(str, args))} failed "
                             f"({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def cli_query(warehouse, sql, tmp_path, env=None):
    """Runs SQL through the binary and returns the result as a pyarrow Table."""
    out = tmp_path / f"result-{abs(hash(sql))}.parquet"
    run_cli("-w", warehouse, "sql", sql, "--format", "parquet", "-o", out, env=env)
    return pq.read_table(out)


def run_tl07(script, *args):
    """Runs a Python snippet under Timelake 0.7 (its own environment)."""
    if not TL07_PYTHON.exists():
        pytest.fail(f"{TL07_PYTHON} missing: run scripts/setup.sh test")
    proc = subprocess.run([str(TL07_PYTHON), "-c", script, *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise AssertionError(f"timelake 0.7 script failed:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def duckdb_connection():
    """DuckDB with the iceberg extension loaded from its package."""
    import duckdb
    import duckdb_ext

    ext = pathlib.Path(duckdb_ext.__path__[0]) / "extensions" / f"v{duckdb.__version__}"
    ext = next(ext.glob("*"))
    con = duckdb.connect()
    con.execute(f"LOAD '{ext / 'avro.duckdb_extension'}'")
    con.execute(f"LOAD '{ext / 'iceberg.duckdb_extension'}'")
    return con


def sorted_rows(table, columns):
    """Rows of `columns` as sorted tuples (order-insensitive comparison)."""
    t = table.select(columns)
    return sorted(zip(*(t.column(c).to_pylist() for c in columns)))


def referenced_files(static):
    """Every file a PyIceberg StaticTable's snapshots reference: manifest
    lists, manifests, the data files live in any snapshot and last-value
    indexes."""
    referenced = set()
    for snapshot in static.metadata.snapshots:
        referenced.add(snapshot.manifest_list)
        lvi = snapshot.summary.additional_properties.get("timelake.last-value-index")
        if lvi:
            referenced.add(lvi)
        for manifest in snapshot.manifests(static.io):
            referenced.add(manifest.manifest_path)
        # The snapshot's live data files (compaction leaves the files it
        # replaced to the older snapshots until they expire).
        for task in static.scan(snapshot_id=snapshot.snapshot_id).plan_files():
            referenced.add(task.file.file_path)
    return referenced


@pytest.fixture
def warehouse(tmp_path):
    w = tmp_path / "warehouse"
    w.mkdir()
    return w


class S3Server:
    """A running S3-compatible server (scripts/s3server.py): where it is, the
    credentials of this run, and the ways the tests talk to it."""

    def __init__(self, info):
        self.endpoint = info["endpoint"]
        self.bucket = info["bucket"]
        self.region = info["region"]
        self.access_key_id = info["access_key_id"]
        self.secret_access_key = info["secret_access_key"]

    def env(self, endpoint=None):
        """The environment for the binary: ours, without any other AWS_*
        setting, plus the server's (object_store reads AWS_* variables)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ENDPOINT=endpoint or self.endpoint, AWS_ALLOW_HTTP="true",
                   AWS_REGION=self.region, AWS_ACCESS_KEY_ID=self.access_key_id,
                   AWS_SECRET_ACCESS_KEY=self.secret_access_key)
        return env

    def filesystem(self):
        """pyarrow's S3 client on the server (paths read "bucket/key")."""
        from pyarrow import fs
        scheme, _, host = self.endpoint.partition("://")
        return fs.S3FileSystem(access_key=self.access_key_id, secret_key=self.secret_access_key,
                               region=self.region, endpoint_override=host, scheme=scheme,
                               allow_bucket_creation=False)

    def pyiceberg_properties(self):
        """FileIO properties for PyIceberg's StaticTable on this server."""
        return {"s3.endpoint": self.endpoint, "s3.region": self.region,
                "s3.access-key-id": self.access_key_id,
                "s3.secret-access-key": self.secret_access_key}

    def keys(self, prefix):
        """Every object key below `prefix` (without the bucket)."""
        from pyarrow import fs
        infos = self.filesystem().get_file_info(
            fs.FileSelector(f"{self.bucket}/{prefix}", recursive=True, allow_not_found=True))
        return {i.path.split("/", 1)[1] for i in infos if i.type == fs.FileType.File}


S3SERVER = ROOT / "scripts" / "s3server.py"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"


@contextlib.contextmanager
def running_s3_server():
    """A private S3-compatible server, started with scripts/s3server.py and
    stopped (stdin closed) when the block ends. With
    TIMELAKE_TEST_S3_ENDPOINT and TIMELAKE_TEST_S3_BUCKET set, that server
    instead (credentials from TIMELAKE_TEST_S3_ACCESS_KEY_ID,
    TIMELAKE_TEST_S3_SECRET_ACCESS_KEY, TIMELAKE_TEST_S3_REGION). The soak
    driver (tests/reliability/soak.py) starts its own with this too."""
    if os.environ.get("TIMELAKE_TEST_S3_ENDPOINT") and os.environ.get("TIMELAKE_TEST_S3_BUCKET"):
        yield S3Server({
            "endpoint": os.environ["TIMELAKE_TEST_S3_ENDPOINT"],
            "bucket": os.environ["TIMELAKE_TEST_S3_BUCKET"],
            "region": os.environ.get("TIMELAKE_TEST_S3_REGION", "us-east-1"),
            "access_key_id": os.environ.get("TIMELAKE_TEST_S3_ACCESS_KEY_ID", "AKIDTIMELAKETEST"),
            "secret_access_key": os.environ.get("TIMELAKE_TEST_S3_SECRET_ACCESS_KEY",
                                                "timelake-fake-secret"),
        })
        return
    import json
    import selectors

    python = VENV_PYTHON if VENV_PYTHON.exists() else pathlib.Path(sys.executable)
    proc = subprocess.Popen([str(python), str(S3SERVER)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # The launcher bounds its own wait (30 s); this one guards against a hang.
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            line = proc.stdout.readline() if sel.select(timeout=60) else b""
        if not line:
            proc.kill()
            _, err = proc.communicate(timeout=30)
            raise RuntimeError(f"{S3SERVER} did not start an S3 server:\n"
                               f"{err.decode(errors='replace')}")
        yield S3Server(json.loads(line))
    finally:
        if proc.poll() is None:
            proc.stdin.close()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def s3_server():
    """A private S3-compatible server for the whole session (see
    running_s3_server)."""
    with running_s3_server() as server:
        yield server


@pytest.fixture
def s3_warehouse(s3_server):
    """A fresh warehouse URL on the session's S3 server (a unique prefix)."""
    import uuid
    return f"s3://{s3_server.bucket}/wh-{uuid.uuid4().hex[:12]}"


sys.path.insert(0, str(pathlib.Path(__file__).parent))
