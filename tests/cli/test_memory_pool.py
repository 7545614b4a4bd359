"""The programs' Arrow memory pool: jemalloc unless the environment picks one.

timelake_bench reports the pool its ingest ran on; the timelake CLI calls the
same PreferJemallocPool first thing in main.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TIMELAKE_BIN", ROOT / "build" / "release" / "timelake"))
BENCH = BIN.parent / "timelake_bench"


def ingest(tmp_path, env):
    if not BENCH.exists():
        pytest.fail(f"{BENCH} does not exist: run `make release` or set TIMELAKE_BIN")
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    table = pa.table({
        "hostname": ["a", "b"] * 50,
        "time": pa.array([t0 + dt.timedelta(seconds=i) for i in range(100)],
                         pa.timestamp("us", "UTC")),
        "usage_user": pa.array(range(100), pa.int64()),
    })
    data = tmp_path / "part-0.parquet"
    pq.write_table(table, data)
    warehouse = tmp_path / "w"
    warehouse.mkdir()
    run_env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    run_env.update(env)
    out = subprocess.run([str(BENCH), "-w", str(warehouse), "ingest", "-t", "bench.cpu",
                          str(data)], capture_output=True, text=True, env=run_env,
                         timeout=120, check=True)
    report = json.loads(out.stdout)
    assert report["rows"] == 100
    return report["memory_pool"]


def test_jemalloc_by_default(tmp_path):
    assert ingest(tmp_path, {}) == "jemalloc"


def test_the_environment_choice_stands(tmp_path):
    assert ingest(tmp_path, {"ARROW_DEFAULT_MEMORY_POOL": "system"}) == "system"
