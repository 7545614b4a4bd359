"""A deterministic generator of the TSBS `cpu-only` data set, as Parquet files.

One row per host every 10 s from 2024-01-01T00:00:00Z: `time` (timestamp[us, UTC],
NOT NULL), the ten TSBS string tags and the ten int64 `usage_*` metrics in 0..100.
Rows are time-major (every host at t0, then every host at t1, ...), as TSBS emits
them. The data depends only on (hosts, hours, seed): a host's tags come from a
generator seeded by (seed, host), and each metric is a random walk (steps in
-2..2) reflected into 0..100, whose steps for hour h come from a generator seeded
by (seed, h). The files are cut every `rows_per_file` rows.

Files are cached under build/bench/data/<hosts>h-<hours>h-s<seed>-<rows_per_file>/,
so every system in a run ingests exactly the same bytes, and later runs reuse them.

    python bench/tsbs.py --hosts 100 --hours 6          # prints the cache directory
"""

import argparse
import datetime as dt
import json
import os
import pathlib
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "bench" / "data"

START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
START_US = int(START.timestamp()) * 1_000_000
INTERVAL_US = 10_000_000
STEPS_PER_HOUR = 360

TAGS = ["hostname", "region", "datacenter", "rack", "os", "arch", "team", "service",
        "service_version", "service_environment"]
METRICS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
           "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]

# TSBS's devops vocabularies (the same as src/timelake/cli/tsbs.cc).
REGIONS = {
    "us-east-1": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    "us-west-1": ["us-west-1a", "us-west-1b"],
    "us-west-2": ["us-west-2a", "us-west-2b", "us-west-2c"],
    "eu-west-1": ["eu-west-1a", "eu-west-1b", "eu-west-1c"],
    "eu-central-1": ["eu-central-1a", "eu-central-1b"],
    "ap-southeast-1": ["ap-southeast-1a", "ap-southeast-1b"],
    "ap-southeast-2": ["ap-southeast-2a", "ap-southeast-2b"],
    "ap-northeast-1": ["ap-northeast-1a", "ap-northeast-1c"],
    "sa-east-1": ["sa-east-1a", "sa-east-1b", "sa-east-1c"],
}
OS = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]
ARCH = ["x64", "x86"]
TEAM = ["SF", "NYC", "LON", "CHI"]
ENVIRONMENT = ["production", "staging", "test"]

# Layout of the input files: zstd as Timelake writes, one row group per file.
COMPRESSION = "zstd"

SCHEMA = pa.schema(
    [pa.field("time", pa.timestamp("us", tz="UTC"), nullable=False)]
    + [pa.field(t, pa.string(), nullable=False) for t in TAGS]
    + [pa.field(m, pa.int64(), nullable=False) for m in METRICS])


def host_tags(hosts, seed):
    """The ten tags of each host: a list of `hosts` lists."""
    out = []
    regions = list(REGIONS)
    for h in range(hosts):
        rng = np.random.default_rng([seed, 1, h])
        region = regions[rng.integers(len(regions))]
        dcs = REGIONS[region]
        out.append([
            f"host_{h}", region, dcs[rng.integers(len(dcs))], str(rng.integers(100)),
            OS[rng.integers(len(OS))], ARCH[rng.integers(len(ARCH))],
            TEAM[rng.integers(len(TEAM))], str(rng.integers(20)), str(rng.integers(2)),
            ENVIRONMENT[rng.integers(len(ENVIRONMENT))],
        ])
    return out


def reflect(x):
    """Folds integers into 0..100 (a walk bouncing off both bounds)."""
    x = np.mod(x, 200)
    return np.where(x > 100, 200 - x, x)


def hours_of_rows(hosts, hours, seed):
    """Yields the data set one hour at a time, as pyarrow Tables."""
    tags = host_tags(hosts, seed)
    tag_values = [pa.array([tags[h][i] for h in range(hosts)], pa.string())
                  for i in range(len(TAGS))]
    walk = np.random.default_rng([seed, 2]).integers(0, 101, size=(hosts, len(METRICS)))
    host_index = pa.array(np.tile(np.arange(hosts, dtype=np.int32), STEPS_PER_HOUR))
    for hour in range(hours):
        rng = np.random.default_rng([seed, 3, hour])
        steps = rng.integers(-2, 3, size=(STEPS_PER_HOUR, hosts, len(METRICS)))
        if hour == 0:
            steps[0] = 0  # the first reading of a host is its starting value
        positions = walk[None, :, :] + np.cumsum(steps, axis=0)
        walk = positions[-1]
        values = reflect(positions).reshape(STEPS_PER_HOUR * hosts, len(METRICS))
        first = START_US + hour * STEPS_PER_HOUR * INTERVAL_US
        times = np.repeat(first + np.arange(STEPS_PER_HOUR, dtype=np.int64) * INTERVAL_US,
                          hosts)
        columns = [pa.array(times, pa.timestamp("us", tz="UTC"))]
        columns += [values.take(host_index) for values in tag_values]
        columns += [pa.array(np.ascontiguousarray(values[:, m])) for m in range(len(METRICS))]
        yield pa.Table.from_arrays(columns, schema=SCHEMA)


def dataset_dir(hosts, hours, seed, rows_per_file):
    return CACHE / f"{hosts}h-{hours}h-s{seed}-{rows_per_file}"


def generate(hosts, hours, seed=42, rows_per_file=100_000):
    """Writes the data set (once) and returns its directory; see `describe`."""
    out = dataset_dir(hosts, hours, seed, rows_per_file)
    if (out / "dataset.json").exists():
        return out
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    pending, pending_rows, files = [], 0, []

    def flush(n):
        nonlocal pending, pending_rows
        table = pa.concat_tables(pending).combine_chunks()
        head, rest = table.slice(0, n), table.slice(n)
        path = tmp / f"part-{len(files):05d}.parquet"
        pq.write_table(head, path, compression=COMPRESSION, row_group_size=n)
        files.append(path.name)
        pending = [rest] if rest.num_rows else []
        pending_rows = rest.num_rows

    for table in hours_of_rows(hosts, hours, seed):
        pending.append(table)
        pending_rows += table.num_rows
        while pending_rows >= rows_per_file:
            flush(rows_per_file)
    if pending_rows:
        flush(pending_rows)
    rows = hosts * hours * STEPS_PER_HOUR
    meta = {"hosts": hosts, "hours": hours, "seed": seed, "rows_per_file": rows_per_file,
            "rows": rows, "files": files, "start_us": START_US,
            "end_us": START_US + hours * STEPS_PER_HOUR * INTERVAL_US,
            "bytes": sum((tmp / f).stat().st_size for f in files)}
    (tmp / "dataset.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def describe(directory):
    """The dataset.json of a generated data set, with absolute file paths."""
    meta = json.loads((pathlib.Path(directory) / "dataset.json").read_text())
    meta["paths"] = [str(pathlib.Path(directory) / f) for f in meta["files"]]
    return meta


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hosts", type=int, default=100)
    p.add_argument("--hours", type=int, default=6)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--rows-per-file", type=int, default=100_000)
    a = p.parse_args()
    print(generate(a.hosts, a.hours, a.seed, a.rows_per_file))


if __name__ == "__main__":
    main()
