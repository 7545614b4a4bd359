"""What the binding itself promises: one Arrow, no copies, Ctrl-C, the GIL."""

import os
import signal
import sys
import threading
import time

import pyarrow as pa
import pytest

import timelake
from timelake import _timelake

from pyhelpers import lake, readings, table  # noqa: F401 (fixtures)


def loaded_libarrow():
    with open("/proc/self/maps") as maps:
        return {line.split()[-1] for line in maps if "/libarrow.so" in line}


def test_one_libarrow_shared_with_pyarrow():
    paths = loaded_libarrow()
    assert len(paths) == 1, paths
    (path,) = paths
    assert os.path.dirname(os.path.realpath(path)) in {
        os.path.realpath(d) for d in pa.get_library_dirs()}


def test_result_buffers_are_not_copied(lake, table):
    table.append(readings(5000))
    native = lake._native.sql("SELECT device_id, temp, site FROM iot.readings", "default")
    engine = [a for a in native.buffer_addresses()]
    result = pa.table(native)
    python_side = [
        (b.address if b is not None else 0)
        for column in result.columns for chunk in column.chunks for b in chunk.buffers()]
    assert len(engine) > 0 and any(engine)
    assert python_side == engine


def test_ctrl_c_interrupts_a_query(lake):
    # A query that would run for a very long time, stopped by SIGINT.
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            lake.sql("SELECT value FROM generate_series(1, 100000000000) WHERE value % 7 = 0")
    finally:
        timer.cancel()
    # The lake stays usable.
    assert lake.sql("SELECT 1 AS one").column("one").to_pylist() == [1]


def test_gil_released_during_queries(lake):
    # A Python thread that ticks (sleeping briefly between ticks) while the
    # main thread is inside one query. The switch interval is made long, so
    # the main thread gives the GIL up only where it blocks: were the query
    # run with the GIL held, no tick could happen during it.
    stop = threading.Event()
    ticks = [0]

    def tick():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.0005)

    old = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    thread = threading.Thread(target=tick)
    try:
        thread.start()
        before = ticks[0]
        lake._native.sql("SELECT count(*) AS n FROM generate_series(1, 30000000)", "default")
        during = ticks[0] - before
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)
    assert during >= 10


def test_flush_and_version():
    timelake.flush()
    assert timelake.__version__ == _timelake.__version__
    assert timelake.FORMAT_VERSION.count(".") == 2


def test_docstrings():
    public = [timelake.Lake, timelake.Table, timelake.TimelakeError, timelake.flush]
    for obj in public:
        assert obj.__doc__ and len(obj.__doc__) > 20, obj
    for cls in (timelake.Lake, timelake.Table):
        for name, member in vars(cls).items():
            if not name.startswith("_"):
                assert member.__doc__, f"{cls.__name__}.{name}"
