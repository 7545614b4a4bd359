"""`timelake upgrade` (Table::Upgrade, issue #18) on tables other writers made:
a plain Iceberg table PyIceberg wrote (unsorted, several small files, no
contract; on local disk and on the S3 server) and a table Timelake 0.7 wrote.
Each time a dry run first (nothing changes on storage: every object and its
size are the same), then the upgrade itself: every row kept, every live file
sorted, a last-value index and a head, the peers (PyIceberg, DuckDB, 0.7)
read the result, a second run finds nothing to do, and a rollback to the
snapshot before the upgrade reads exactly the old rows."""

import dataclasses
import datetime as dt
import json
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

from conftest import cli_query, duckdb_connection, run_cli, run_tl07, sorted_rows

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
COLUMNS = ["time", "host", "v"]


@dataclasses.dataclass
class Where:
    """A warehouse and how the test sees it."""
    url: str
    env: Optional[dict]  # the binary's environment (None: inherited)
    sizes: Callable[[], dict]  # every object below the warehouse -> its size
    properties: dict  # PyIceberg FileIO properties
    local: bool


@pytest.fixture(params=["local", "s3"])
def where(request, tmp_path):
    if request.param == "local":
        warehouse = tmp_path / "warehouse"
        warehouse.mkdir()
        return Where(str(warehouse), None,
                     lambda: {str(p): p.stat().st_size for p in warehouse.rglob("*")
                              if p.is_file()},
                     {}, True)
    from pyarrow import fs
    server = request.getfixturevalue("s3_server")
    url = request.getfixturevalue("s3_warehouse")
    prefix = url.split("/", 3)[3]

    def sizes():
        infos = server.filesystem().get_file_info(
            fs.FileSelector(f"{server.bucket}/{prefix}", recursive=True, allow_not_found=True))
        return {i.path: i.size for i in infos if i.type == fs.FileType.File}

    return Where(url, server.env(), sizes, server.pyiceberg_properties(), False)


def pyiceberg_write(write, attempts=4):
    """Runs a PyIceberg write (create_table, append), again when its upload
    fails: pyarrow's S3 client, which PyIceberg writes with, now and then
    has a CompleteMultipartUpload refused by the S3 test server ("an error
    occurred when parsing the HTTP request"). Such a write committed
    nothing (PyIceberg commits to its catalog after every upload), so it is
    made again. Other errors, and the last attempt's, are raised."""
    for attempt in range(attempts):
        try:
            return write()
        except OSError as e:
            if "CompleteMultipartUpload" not in str(e) or attempt == attempts - 1:
                raise


def chunk(i, n=40):
    """n rows of 4 hosts over two days, in descending time (unsorted), with
    keys of their own: chunk i starts i * 7 minutes after T0."""
    rows = []
    for k in range(n):
        t = T0 + dt.timedelta(hours=k * 1.2, minutes=i * 7)
        rows.append({"time": t, "host": f"h{k % 4}", "v": float(i * 1000 + k)})
    rows.reverse()
    return pa.table({"time": pa.array([r["time"] for r in rows], pa.timestamp("us", tz="UTC")),
                     "host": pa.array([r["host"] for r in rows], pa.string()),
                     "v": pa.array([r["v"] for r in rows], pa.float64())})


def newest_metadata(where, table):
    """The newest metadata file of `table` ("ns.t") as a URI or path."""
    folder = f"{where.url}/{table.replace('.', '/')}/metadata/"
    candidates = [k for k in where.sizes() if k.endswith(".metadata.json")
                  and f"{table.replace('.', '/')}/metadata/" in k]

    def number(k):
        name = k.rsplit("/", 1)[1]
        return int(name[1:].split(".")[0]) if name.startswith("v") else int(name.split("-")[0])
    newest = max(candidates, key=number).rsplit("/", 1)[1]
    return folder + newest


def static_table(where, table):
    return StaticTable.from_metadata(newest_metadata(where, table), properties=where.properties)


def check_upgraded(where, table, expected, tmp_path):
    """Every row kept, every live file sorted by (host, time), an index and a
    head: what an upgraded time-series table has."""
    ours = cli_query(where.url, f"SELECT time, host, v FROM {table}", tmp_path, env=where.env)
    assert sorted_rows(ours, COLUMNS) == sorted_rows(expected, COLUMNS)
    static = static_table(where, table)
    assert sorted_rows(static.scan().to_arrow(), COLUMNS) == sorted_rows(expected, COLUMNS)
    tasks = list(static.scan().plan_files())
    assert tasks
    for task in tasks:
        with static.io.new_input(task.file.file_path).open() as f:
            rows = pq.read_table(f).select(["host", "time"]).to_pylist()
        keys = [(r["host"], r["time"]) for r in rows]
        assert keys == sorted(keys), task.file.file_path
    snapshot = static.metadata.current_snapshot()
    assert snapshot.summary.additional_properties.get("timelake.last-value-index")
    assert any(k.endswith("/metadata/timelake-head") for k in where.sizes())
    # latest: the newest row of each host, from the index.
    latest = cli_query(where.url, f"SELECT * FROM (SELECT host, v, row_number() OVER "
                                  f"(PARTITION BY host ORDER BY time DESC) AS rn FROM {table}) "
                                  f"WHERE rn = 1", tmp_path, env=where.env)
    newest = {}
    for r in expected.to_pylist():
        if r["host"] not in newest or r["time"] > newest[r["host"]]["time"]:
            newest[r["host"]] = r
    assert sorted((r["host"], r["v"]) for r in latest.to_pylist()) == sorted(
        (h, r["v"]) for h, r in newest.items())
    return static


def upgrade(where, table, *args):
    out = run_cli("-w", where.url, "upgrade", table, *args, "--format", "json",
                  env=where.env).stdout
    return json.loads(out)


def test_upgrade_adopts_a_pyiceberg_table(where, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("peers", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=where.url if not where.local else f"file://{where.url}",
                         **where.properties)
    catalog.create_namespace("py")
    chunks = [chunk(i) for i in range(3)]
    location = f"{where.url}/py/events" if not where.local else f"file://{where.url}/py/events"
    pytable = pyiceberg_write(lambda: catalog.create_table(
        "py.events", schema=chunks[0].schema, location=location))
    for c in chunks:
        pyiceberg_write(lambda: pytable.append(c))
    expected = pa.concat_tables(chunks)
    before_snapshot = pytable.current_snapshot().snapshot_id
    assert len(list(pytable.scan().plan_files())) == 3

    adopt = ["--time-column", "time", "--series-key", "host"]
    stored = where.sizes()
    dry = upgrade(where, "py.events", "--dry-run", *adopt)
    assert where.sizes() == stored
    assert dry["dry_run"] and dry["from_format"] == "0.1.0" and dry["from_untagged"]
    assert [s["step"] for s in dry["steps"]] == [
        "protect-snapshots", "record-format-version", "add-contract",
        "build-last-value-index", "rewrite-files", "write-head"]
    assert not any(s["done"] for s in dry["steps"])
    assert "time column time, series key host, unpartitioned, dedup on" in \
        dry["steps"][2]["description"]
    assert "3 files (3 unsorted" in dry["steps"][4]["description"]

    done = upgrade(where, "py.events", *adopt)
    assert [s["step"] for s in done["steps"]] == [s["step"] for s in dry["steps"]]
    assert all(s["done"] for s in done["steps"])
    assert done["to_format"] == "0.3.0" and done["files_rewritten"] == 3
    static = check_upgraded(where, "py.events", expected, tmp_path)
    props = static.metadata.properties
    assert props["timelake.time-column"] == "time"
    assert props["timelake.series-key"] == "host"
    assert props["timelake.format-version"] == "0.3.0"
    assert int(props["timelake.keep-snapshots-until"]) > 0
    assert [f.name for f in static.schema().fields] == ["time", "host", "v", "_ingest_ts"]
    if where.local:
        con = duckdb_connection()
        n = con.execute(f"SELECT count(*), sum(v) FROM iceberg_scan("
                        f"'{newest_metadata(where, 'py.events')}')").fetchone()
        assert n == (expected.num_rows, sum(expected.column("v").to_pylist()))
        out = run_tl07("""
import sys, json, timelake
lake = timelake.Lake(sys.argv[1])
print(json.dumps([lake.sql("SELECT count(*) AS n FROM py.events").to_pylist()[0]["n"],
                  sorted(lake.latest("py.events").column("v").to_pylist())]))
""", where.url)
        n, latest = json.loads(out.strip().splitlines()[-1])
        assert n == expected.num_rows and len(latest) == 4

    # Nothing is left to do: a second run commits nothing.
    stored = where.sizes()
    again = upgrade(where, "py.events", *adopt)
    assert again["steps"] == [] and where.sizes() == stored
    text = run_cli("-w", where.url, "upgrade", "py.events", env=where.env).stdout
    assert "is current (format 0.3.0" in text and "nothing to upgrade" in text

    # Rollback to PyIceberg's last snapshot reads exactly the rows it had.
    run_cli("-w", where.url, "rollback", "py.events", before_snapshot, env=where.env)
    ours = cli_query(where.url, "SELECT time, host, v FROM py.events", tmp_path, env=where.env)
    reference = static_table(where, "py.events").scan(snapshot_id=before_snapshot).to_arrow()
    assert sorted_rows(ours, COLUMNS) == sorted_rows(reference, COLUMNS) == sorted_rows(
        expected, COLUMNS)


def test_upgrade_adopts_a_day_partitioned_pyiceberg_table(warehouse, tmp_path):
    """The partition spec stays (Timelake writes the day of the time column
    too), recorded as the chunk; files are rewritten within their day."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.transforms import DayTransform

    where = Where(str(warehouse), None,
                  lambda: {str(p): p.stat().st_size for p in warehouse.rglob("*")
                           if p.is_file()}, {}, True)
    catalog = SqlCatalog("peers", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{warehouse}")
    catalog.create_namespace("py")
    chunks = [chunk(i) for i in range(3)]
    pytable = catalog.create_table("py.daily", schema=chunks[0].schema,
                                   location=f"file://{warehouse}/py/daily")
    with pytable.update_spec() as spec:
        spec.add_field("time", DayTransform(), "time_day")
    for c in chunks:
        pytable.append(c)
    expected = pa.concat_tables(chunks)
    files_before = len(list(pytable.scan().plan_files()))
    assert files_before == 6  # 3 appends x 2 days

    adopt = ["--time-column", "time", "--series-key", "host"]
    stored = where.sizes()
    dry = upgrade(where, "py.daily", "--dry-run", *adopt)
    assert where.sizes() == stored
    assert "time column time, series key host, chunk day, dedup on" in \
        dry["steps"][2]["description"]
    done = upgrade(where, "py.daily", *adopt)
    assert all(s["done"] for s in done["steps"]) and done["files_rewritten"] == 6
    static = check_upgraded(where, "py.daily", expected, tmp_path)
    assert static.metadata.properties["timelake.chunk-interval"] == "day"
    assert [f.transform for f in static.spec().fields] == [DayTransform()]
    days = {task.file.partition[0] for task in static.scan().plan_files()}
    assert len(days) == 2 and len(list(static.scan().plan_files())) == 2
    # The first day's rows, by a time filter.
    first_day = T0.strftime("%Y-%m-%d")
    ours = cli_query(warehouse, f"SELECT count(*) AS n FROM py.daily WHERE time < "
                                f"TIMESTAMP '{first_day}T23:59:59Z'", tmp_path)
    assert ours.column("n").to_pylist() == [sum(
        1 for t in expected.column("time").to_pylist() if t.date() == T0.date())]


def test_upgrade_of_a_timelake_07_table(warehouse, tmp_path):
    chunks = [chunk(i, n=30) for i in range(4)]
    for i, c in enumerate(chunks):
        pq.write_table(c, tmp_path / f"c{i}.parquet")
    run_tl07("""
import sys, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
first = pq.read_table(sys.argv[2] + "/c0.parquet")
t = lake.create_table("iot.old", first.schema, time_column="time", series_key=["host"])
for i in range(4):
    t.append(pq.read_table(sys.argv[2] + f"/c{i}.parquet"), maintain=False)
""", warehouse, tmp_path)
    where = Where(str(warehouse), None,
                  lambda: {str(p): p.stat().st_size for p in warehouse.rglob("*")
                           if p.is_file()}, {}, True)
    expected = pa.concat_tables(chunks)
    static = static_table(where, "iot.old")
    before_snapshot = static.metadata.current_snapshot_id
    assert static.metadata.properties["timelake.format-version"] == "0.3.0"
    assert len(list(static.scan().plan_files())) == 8  # 4 appends x 2 days

    stored = where.sizes()
    dry = upgrade(where, "iot.old", "--dry-run")
    assert where.sizes() == stored
    steps = [s["step"] for s in dry["steps"]]
    # 0.7 wrote the contract, the index and the format: only small files.
    assert steps == ["protect-snapshots", "rewrite-files", "rewrite-files", "write-head"], steps
    assert all("4 files where 1 suffices" in s["description"] for s in dry["steps"][1:3])

    done = upgrade(where, "iot.old")
    assert [s["step"] for s in done["steps"]] == steps
    static = check_upgraded(where, "iot.old", expected, tmp_path)
    assert len(list(static.scan().plan_files())) == 2
    con = duckdb_connection()
    n = con.execute(f"SELECT count(*) FROM iceberg_scan("
                    f"'{newest_metadata(where, 'iot.old')}')").fetchone()[0]
    assert n == expected.num_rows
    # 0.7 reads it, appends to it, and reads its own append.
    extra = chunk(9, n=30)
    extra = extra.set_column(0, "time", pa.array(
        [t + dt.timedelta(days=30) for t in extra.column("time").to_pylist()],
        pa.timestamp("us", tz="UTC")))
    pq.write_table(extra, tmp_path / "extra.parquet")
    out = run_tl07("""
import sys, json, timelake, pyarrow.parquet as pq
lake = timelake.Lake(sys.argv[1])
before = lake.sql("SELECT count(*) AS n, sum(v) AS s FROM iot.old").to_pylist()[0]
lake.table("iot.old").append(pq.read_table(sys.argv[2] + "/extra.parquet"))
after = lake.sql("SELECT count(*) AS n FROM iot.old").to_pylist()[0]["n"]
print(json.dumps([before["n"], before["s"], after]))
""", warehouse, tmp_path)
    n, s, after = json.loads(out.strip().splitlines()[-1])
    assert n == expected.num_rows and s == sum(expected.column("v").to_pylist())
    assert after == n + extra.num_rows

    run_cli("-w", warehouse, "rollback", "iot.old", before_snapshot)
    ours = cli_query(warehouse, "SELECT time, host, v FROM iot.old", tmp_path)
    assert sorted_rows(ours, COLUMNS) == sorted_rows(expected, COLUMNS)


def test_bad_adoptions_are_refused_and_change_nothing(warehouse, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("peers", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{warehouse}")
    catalog.create_namespace("py")
    data = chunk(0)
    table = catalog.create_table("py.t", schema=data.schema,
                                 location=f"file://{warehouse}/py/t")
    table.append(data)
    where = Where(str(warehouse), None,
                  lambda: {str(p): p.stat().st_size for p in warehouse.rglob("*")
                           if p.is_file()}, {}, True)
    stored = where.sizes()
    for args, message in [
        (["--time-column", "when"], "the table has no column 'when' for the time column"),
        (["--time-column", "v"], "column 'v' is double, not a timestamp"),
        (["--time-column", "time", "--series-key", "nope"],
         "the table has no column 'nope' for the series key"),
        (["--series-key", "host"], "a series key needs a time column"),
    ]:
        for dry in ([], ["--dry-run"]):
            proc = run_cli("-w", warehouse, "upgrade", "py.t", *args, *dry, check=False)
            assert proc.returncode == 1, proc.stderr
            assert proc.stderr.startswith("timelake: error: upgrading py.t: "), proc.stderr
            assert message in proc.stderr, proc.stderr
            assert proc.stderr.count("\n") == 1, proc.stderr
    proc = run_cli("-w", warehouse, "upgrade", "py.t", "--keep-snapshots", "soon", check=False)
    assert proc.returncode == 2 and "--keep-snapshots" in proc.stderr, proc.stderr
    assert where.sizes() == stored
