"""The layout appends produce (issue #4), checked from outside: PyIceberg
lists the data files with their manifest statistics, pyarrow reads each file.

- every file holds one day partition, sorted by (series, time);
- the manifest's bounds, value and null counts are those of the file's rows;
- dedup within a batch keeps the tie rule's winner: on equal (series, time)
  the later insertion time, then the later input row.
"""

import datetime as dt
import pathlib
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from conftest import cli_query, run_cli
from test_peers import latest_metadata

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 1, tzinfo=UTC)


def local_path(uri):
    return pathlib.Path(uri.removeprefix("file://"))


def test_files_are_sorted_per_day_and_bounds_match_the_data(warehouse, tmp_path):
    rng = random.Random(4)
    n = 5000
    times = [T0 + dt.timedelta(seconds=rng.randrange(3 * 86400)) for _ in range(n)]
    table = pa.table({
        "time": pa.array(times, pa.timestamp("us", tz="UTC")),
        "host": pa.array([f"h{rng.randrange(40):02d}" for _ in range(n)]),
        "load": pa.array([rng.randrange(1000) if rng.random() > 0.1 else None
                          for _ in range(n)], pa.int64()),
    })
    for i in range(2):  # two appends: two files per day
        f = tmp_path / f"in{i}.parquet"
        pq.write_table(table.slice(i * n // 2, n // 2), f)
        args = ["-w", warehouse, "append", "m", f, "--no-maintain"]  # keep both files
        if i == 0:
            args += ["--create", "--time-column", "time", "--series-key", "host"]
        run_cli(*args)

    from pyiceberg.table import StaticTable
    static = StaticTable.from_metadata(str(latest_metadata(warehouse / "default" / "m")))
    files = static.inspect.files().to_pylist()
    assert len(files) == 6  # 3 days x 2 appends
    total = 0
    for entry in files:
        data = pq.read_table(local_path(entry["file_path"]))
        total += data.num_rows
        assert data.num_rows == entry["record_count"]
        # One day per file, and that day is the partition value.
        days = pc.unique(pc.floor_temporal(data["time"], unit="day")).to_pylist()
        assert len(days) == 1
        assert entry["partition"]["time_day"] == days[0].date()
        # Sorted by (host, time).
        keys = list(zip(data["host"].to_pylist(), data["time"].to_pylist()))
        assert keys == sorted(keys)
        # Bounds and counts are those of the rows.
        metrics = entry["readable_metrics"]
        for column in ("time", "host", "load"):
            values = data[column]
            m = metrics[column]
            assert m["value_count"] == len(values), column
            assert m["null_value_count"] == values.null_count, column
            assert m["lower_bound"] == pc.min(values).as_py(), column
            assert m["upper_bound"] == pc.max(values).as_py(), column
    assert total == n


def test_dedup_within_a_batch_keeps_later_insertion_then_later_row(warehouse, tmp_path):
    t = T0
    ingest = lambda s: T0 + dt.timedelta(seconds=s)  # noqa: E731
    # Rows for host a at time t: the first row has the latest insertion time
    # and wins although it comes first. For host b, equal insertion times:
    # the later row wins. Host c: a null insertion time is stamped with the
    # append's time, which is later than any explicit 2026-03-01 value.
    batch = pa.table({
        "time": pa.array([t, t, t, t, t, t], pa.timestamp("us", tz="UTC")),
        "host": ["a", "a", "b", "b", "c", "c"],
        "v": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
        "_ingest_ts": pa.array([ingest(9), ingest(1), ingest(5), ingest(5), None, ingest(1)],
                               pa.timestamp("us", tz="UTC")),
    })
    f = tmp_path / "dups.parquet"
    pq.write_table(batch, f)
    schema = tmp_path / "schema.parquet"  # the table's columns: no _ingest_ts
    pq.write_table(batch.drop_columns(["_ingest_ts"]), schema)
    run_cli("-w", warehouse, "create", "d", "--schema-from", schema, "--time-column", "time",
            "--series-key", "host")
    run_cli("-w", warehouse, "append", "d", f)
    got = cli_query(warehouse, "SELECT host, v FROM d ORDER BY host", tmp_path)
    assert got.to_pylist() == [{"host": "a", "v": 1}, {"host": "b", "v": 4},
                               {"host": "c", "v": 5}]


def test_compression_codec_and_level_come_from_the_contract(warehouse, tmp_path):
    data = pa.table({"time": pa.array([T0 + dt.timedelta(minutes=i) for i in range(50)],
                                      pa.timestamp("us", tz="UTC")),
                     "host": ["h"] * 50, "v": list(range(50))})
    f = tmp_path / "c.parquet"
    pq.write_table(data, f)
    for codec, expected in [("snappy", "SNAPPY"), ("gzip", "GZIP"), ("zstd", "ZSTD"),
                            ("uncompressed", "UNCOMPRESSED")]:
        name = f"c_{codec}"
        run_cli("-w", warehouse, "create", name, "--schema-from", f, "--time-column", "time",
                "--series-key", "host", "--set", f"timelake.compression-codec={codec}")
        run_cli("-w", warehouse, "append", name, f)
        [written] = (warehouse / "default" / name / "data").rglob("*.parquet")
        assert pq.read_metadata(written).row_group(0).column(0).compression == expected
        assert cli_query(warehouse, f"SELECT sum(v) AS s FROM {name}",
                         tmp_path).to_pylist() == [{"s": sum(range(50))}]
    bad = run_cli("-w", warehouse, "create", "bad", "--schema-from", f, "--time-column", "time",
                  "--set", "timelake.compression-codec=gzip",
                  "--set", "timelake.compression-level=15", check=False)
    assert bad.returncode != 0 and "gzip takes a level from 1 to 9" in bad.stderr
    assert not (warehouse / "default" / "bad").exists()
