"""`pip install ./python` into a new virtual environment that has only pyarrow
(issue #19): the wheel scikit-build-core builds from the repository's CMake
project must hold the extension it built and import outside the repository.
A wheel of the Python files alone once passed `pip install` and failed at
`import timelake`.

The build reuses build/wheel, the compiler cache and the Rust target
directory of `make`, so after `make` it takes minutes, not the cold build's
time."""

import json
import subprocess
import sys

from pyhelpers import ROOT

SCRIPT = """
import datetime as dt, json, pathlib, sys, tempfile
import pyarrow as pa
import timelake
lake = timelake.Lake(tempfile.mkdtemp())
schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("s", pa.string()),
                    ("v", pa.float64())])
t = lake.create_table("t", schema, time_column="time", series_key=["s"])
t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
t.append(pa.table({"time": pa.array([t0, t0], schema.field("time").type), "s": ["a", "b"],
                   "v": [1.0, 2.0]}))
print(json.dumps({
    "file": timelake.__file__,
    "modules": sorted(p.name for p in pathlib.Path(timelake.__file__).parent.iterdir()),
    "count": lake.sql("SELECT count(*) AS n FROM t").to_pylist()[0]["n"],
    "latest": lake.latest("t").column("s").to_pylist(),
}))
"""


def run(*argv, cwd=None):
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=1800, cwd=cwd)
    assert proc.returncode == 0, f"{argv} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def test_pip_install_builds_a_wheel_that_imports(tmp_path):
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "pyarrow==26.0.1")
    run(python, "-m", "pip", "install", "-q", ROOT / "python")
    # Outside the repository, so python/ cannot be what is imported.
    got = json.loads(run(python, "-c", SCRIPT, cwd=tmp_path).strip().splitlines()[-1])
    assert got["file"].startswith(str(venv)), got["file"]
    assert any(m.startswith("_timelake.") and m.endswith(".so") for m in got["modules"]), got
    assert got["count"] == 2 and got["latest"] == ["a", "b"]
