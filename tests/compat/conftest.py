"""Shared helpers of the compatibility tests: they run the real peers
(PyIceberg, DuckDB with its iceberg extension, Timelake 0.7) against tables
the `timelake` binary writes, and the binary against tables the peers write."""

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


def run_cli(*args, check=True):
    """Runs the timelake binary; returns the completed process."""
    proc = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"timelake {' '.join(map(str, args))} failed "
                             f"({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def cli_query(warehouse, sql, tmp_path):
    """Runs SQL through the binary and returns the result as a pyarrow Table."""
    out = tmp_path / f"result-{abs(hash(sql))}.parquet"
    run_cli("-w", warehouse, "sql", sql, "--format", "parquet", "-o", out)
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


@pytest.fixture
def warehouse(tmp_path):
    w = tmp_path / "warehouse"
    w.mkdir()
    return w


sys.path.insert(0, str(pathlib.Path(__file__).parent))
