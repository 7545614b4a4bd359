"""A long RecordBatchReader appends in bounded memory.

2,000,000 rows (88 MB of Arrow data) stream from a pyarrow.RecordBatchReader whose batches
are made on the fly, once committed every 250,000 rows (what append does by default with
its commit_rows, here smaller) and once as a single commit (commit_rows=None, which must
hold every row). Each run is a process of its own (tests/python/large_append.py), so each
peak is its own append's. Measured on the project's machine: the process starts at ~78 MB
(pyarrow and the engine loaded); streamed, the peak is ~290 MB whatever the length (500,000
rows: ~250-270 MB; 4,000,000: ~290 MB); as one commit, ~680 MB.
"""

import json
import pathlib
import subprocess

from conftest import VENV_PYTHON

SCRIPT = pathlib.Path(__file__).with_name("large_append.py")
ROWS = 2_000_000


def run(tmp_path, commit_rows):
    proc = subprocess.run([str(VENV_PYTHON), str(SCRIPT), str(tmp_path / f"w{commit_rows}"),
                           str(ROWS), str(commit_rows)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"commit_rows={commit_rows}: peak RSS {result['peak_rss_kib'] / 1024:.0f} MiB "
          f"(before the append {result['rss_before_kib'] / 1024:.0f} MiB), "
          f"{result['commits']} commits")
    return result


def test_reader_appends_in_bounded_memory(tmp_path):
    streamed = run(tmp_path, 250_000)
    whole = run(tmp_path, "all")
    assert streamed["rows"] == whole["rows"] == ROWS
    assert streamed["commits"] == 8 and whole["commits"] == 1
    grown_streamed = streamed["peak_rss_kib"] - streamed["rss_before_kib"]
    grown_whole = whole["peak_rss_kib"] - whole["rss_before_kib"]
    # Holding every row costs at least the data itself on top of the
    # working set of one commit; streaming must stay well below that.
    assert grown_whole - grown_streamed > whole["data_bytes"] / 1024
    assert grown_streamed < grown_whole / 2
