"""A script written for Timelake 0.7 runs unchanged on this package with the same output."""

import pathlib
import subprocess

import pytest

from pyhelpers import ROOT, TL07_PYTHON, VENV_PYTHON

SCRIPT = pathlib.Path(__file__).with_name("script_07.py")


def run(python, warehouse):
    proc = subprocess.run([str(python), str(SCRIPT), str(warehouse)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, f"{python} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_script_07_prints_the_same(tmp_path):
    if not TL07_PYTHON.exists():
        pytest.fail(f"{TL07_PYTHON} missing: run scripts/setup.sh test")
    theirs = run(TL07_PYTHON, tmp_path / "tl07")
    # Once, in a CI run on a busy machine, 0.7's last `lake.tables()` (after its
    # drop_table) still listed iot.readings; 12 runs beside three busy loops did
    # not repeat it. That is the oracle's nondeterminism, not ours: its run is
    # repeated (twice at most) for an output without the dropped table, and ours
    # is still compared line by line.
    for again in range(2):
        if not theirs.endswith("['iot.readings']\n"):
            break
        theirs = run(TL07_PYTHON, tmp_path / f"tl07-again-{again}")
    ours = run(VENV_PYTHON, tmp_path / "ours")
    assert len(ours.splitlines()) == 16
    assert ours == theirs
