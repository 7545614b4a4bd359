"""Appends ROWS rows from a pyarrow.RecordBatchReader whose batches are made on the fly,
then prints one JSON line: the rows in the table, the bytes the data had in Arrow, and the
process's resident memory before the append and at its peak (run by test_large_append.py
in a process of its own, so the peak is this append's).

    python large_append.py <warehouse> <rows> <commit_rows or "all">
"""

import json
import resource
import sys

import numpy as np
import pyarrow as pa

import timelake

BATCH = 65_536
US_PER_DAY = 86_400_000_000


def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def main():
    warehouse, rows = sys.argv[1], int(sys.argv[2])
    commit_rows = None if sys.argv[3] == "all" else int(sys.argv[3])
    schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("host", pa.int32()),
                        ("usage_user", pa.float64()), ("usage_system", pa.float64()),
                        ("usage_idle", pa.float64()), ("usage_iowait", pa.float64())])
    lake = timelake.Lake(warehouse)
    table = lake.create_table("cpu", schema, time_column="time", series_key=["host"])
    data_bytes = [0]

    def batches():
        rng = np.random.default_rng(7)
        t0 = 1_767_225_600_000_000  # 2026-01-01
        for start in range(0, rows, BATCH):
            n = min(BATCH, rows - start)
            index = np.arange(start, start + n, dtype=np.int64)
            hosts = (index % 1000).astype(np.int32)
            # 1,000 hosts every 10 s over two days.
            times = t0 + (index // 1000) * 10_000_000 % (2 * US_PER_DAY)
            batch = pa.record_batch(
                [pa.array(times, pa.int64()).cast(schema.field("time").type),
                 pa.array(hosts)] + [pa.array(rng.random(n) * 100) for _ in range(4)],
                schema=schema)
            data_bytes[0] += batch.nbytes
            yield batch

    before = rss_kib()
    stats = table.append(pa.RecordBatchReader.from_batches(schema, batches()),
                         maintain=False, commit_rows=commit_rows)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    count = lake.sql("SELECT count(*) AS n FROM cpu").column("n")[0].as_py()
    print(json.dumps({"rows": count, "commits": stats["commits"], "data_bytes": data_bytes[0],
                      "rss_before_kib": before, "peak_rss_kib": peak}))


if __name__ == "__main__":
    main()
