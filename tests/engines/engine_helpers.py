"""Shared by the engine tests (tests/engines/): the compatibility tests'
helpers (tests/compat/conftest.py, loaded as tests/reliability does), a
`timelake serve` process over a warehouse, and a Spark session (PySpark
with Iceberg's Spark runtime jar that scripts/setup.sh fetched), with the
REST catalog `rest` and the path-based (hadoop) catalog `wh` over the same
warehouse."""

import json
import os
import pathlib
import selectors
import signal
import socket
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))
from compat_helpers import compat  # noqa: E402

BIN = compat.BIN
run_cli = compat.run_cli
cli_query = compat.cli_query
sorted_rows = compat.sorted_rows
duckdb_connection = compat.duckdb_connection

ICEBERG_SPARK_VERSION = "1.10.2"
JAR = (pathlib.Path.home() / ".cache" / "timelake" / "jars" /
       f"iceberg-spark-runtime-3.5_2.12-{ICEBERG_SPARK_VERSION}.jar")


class Server:
    """A running `timelake serve` (port chosen by the system)."""

    def __init__(self, warehouse, *extra):
        self.proc = subprocess.Popen([BIN, "-w", str(warehouse), "serve", "--port", "0", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            line = self.proc.stdout.readline() if sel.select(timeout=30) else ""
        if " at http://" not in line:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            pytest.fail(f"timelake serve did not start: {line!r}\n{err}")
        self.url = line.strip().rsplit(" at ", 1)[1]
        host_port = self.url.removeprefix("http://")
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)

    def stop(self):
        """Stops the server (SIGTERM) and returns its stderr (the request log)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                _, err = self.proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                _, err = self.proc.communicate()
            return err
        return self.proc.stderr.read()

    def request(self, method, path, body=None, headers=None):
        """One HTTP request with the standard library; (status, parsed JSON or None)."""
        import http.client
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            data = body.encode() if isinstance(body, str) else body
            conn.request(method, path, body=data, headers=headers or {})
            resp = conn.getresponse()
            text = resp.read()
            return resp.status, (json.loads(text) if text else None)
        finally:
            conn.close()

    def raw(self, data):
        """Sends `data` as is on a new connection (bytes, no client-side path
        normalisation) and returns the status and JSON body of the answer."""
        with socket.create_connection((self.host, self.port), timeout=60) as s:
            try:
                s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered and closed before reading it all
            reply = b""
            while True:  # refusals close the connection (Connection: close)
                try:
                    chunk = s.recv(65536)
                except (ConnectionResetError, socket.timeout):
                    break
                if not chunk:
                    break
                reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        return status, (json.loads(body) if body.strip() else None)


def spark_session(rest_url, warehouse):
    """A local[2] Spark session with the catalogs `rest` (timelake serve at
    `rest_url`) and `wh` (the warehouse by path: Iceberg's hadoop catalog,
    which finds v<N>.metadata.json through version-hint.text). No table
    caching, so each query sees the newest commit."""
    if not JAR.exists():
        pytest.fail(f"{JAR} missing: run scripts/setup.sh test")
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").appName("timelake-engines")
               .config("spark.driver.memory", "1g")
               .config("spark.jars", str(JAR))
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.extensions",
                       "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
               .config("spark.sql.catalog.rest", "org.apache.iceberg.spark.SparkCatalog")
               .config("spark.sql.catalog.rest.type", "rest")
               .config("spark.sql.catalog.rest.uri", rest_url)
               .config("spark.sql.catalog.rest.cache-enabled", "false")
               .config("spark.sql.catalog.wh", "org.apache.iceberg.spark.SparkCatalog")
               .config("spark.sql.catalog.wh.type", "hadoop")
               .config("spark.sql.catalog.wh.warehouse", f"file://{warehouse}")
               .config("spark.sql.catalog.wh.cache-enabled", "false"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@pytest.fixture
def warehouse(tmp_path):
    w = tmp_path / "warehouse"
    w.mkdir()
    return w


def listing(root):
    """Every file below `root` with its size: what storage holds."""
    root = pathlib.Path(root)
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}
