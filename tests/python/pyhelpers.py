"""Shared helpers of the Python package's tests (tests/python/): they import the
`timelake` package that `make` builds into .venv (python/timelake/).

They and the `lake` and `table` fixtures live here rather than in a
conftest.py because pytest imports every conftest.py outside a package under
the one module name `conftest`: with a conftest.py here, tests/compat's
`from conftest import ...` would find this folder's module when both folders
run in one session. A test module imports the fixtures it uses by name."""

import datetime as dt
import pathlib

import pyarrow as pa
import pytest
import timelake

ROOT = pathlib.Path(__file__).resolve().parents[2]
TL07_PYTHON = ROOT / ".venv-tl07" / "bin" / "python"
VENV_PYTHON = ROOT / ".venv" / "bin" / "python"

SCHEMA = pa.schema([
    ("time", pa.timestamp("us", tz="UTC")),
    ("device_id", pa.int32()),
    ("site", pa.string()),
    ("temp", pa.float64()),
])

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def readings(n, devices=7, start=T0, step_s=10, seed=0):
    """n rows of SCHEMA: devices in turn, times `step_s` apart per row."""
    times = [start + dt.timedelta(seconds=step_s * i) for i in range(n)]
    return pa.table({
        "time": times,
        "device_id": [(i * 3 + seed) % devices for i in range(n)],
        "site": [f"site-{(i + seed) % 3}" for i in range(n)],
        "temp": [round(15.0 + ((i * 37 + seed) % 200) / 10.0, 1) for i in range(n)],
    }, schema=SCHEMA)


@pytest.fixture
def lake(tmp_path):
    return timelake.Lake(str(tmp_path / "warehouse"))


@pytest.fixture
def table(lake):  # pylint: disable=redefined-outer-name
    return lake.create_table("iot.readings", SCHEMA, time_column="time", series_key=["device_id"])


def user_columns(result):
    """The result without the engine's _ingest_ts column."""
    return result.drop_columns([c for c in result.column_names if c == "_ingest_ts"])
