"""Table.upgrade, rollback, snapshots and evolve_schema in Python (issue #18):
``upgrade`` and ``rollback`` take Timelake 0.7's arguments and a script using
them runs unchanged under 0.7 and this package with the same answers."""

import inspect
import json
import subprocess
import textwrap

import pyarrow as pa
import pytest
import timelake

from pyhelpers import ROOT, TL07_PYTHON, VENV_PYTHON, lake, readings  # noqa: F401

SCRIPT = textwrap.dedent("""
    import datetime as dt, json, sys
    import pyarrow as pa, timelake
    lake = timelake.Lake(sys.argv[1])
    schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("host", pa.string()),
                        ("v", pa.float64())])
    t = lake.create_table("m.t", schema, time_column="time", series_key=["host"])
    t0 = dt.datetime(2026, 4, 1, tzinfo=dt.timezone.utc)
    for i in range(4):
        t.append(pa.table({"time": [t0 + dt.timedelta(hours=h, minutes=i) for h in range(30)],
                           "host": [f"h{h % 3}" for h in range(30)],
                           "v": [float(i * 100 + h) for h in range(30)]}, schema=schema),
                 maintain=False)
    count = lambda: lake.sql("SELECT count(*) AS n, sum(v) AS s FROM m.t").to_pylist()[0]
    before = count()
    dry = t.upgrade(dry_run=True, keep_snapshots="3d")
    real = t.upgrade(keep_snapshots="3d")
    again = t.upgrade()
    out = {
        "dry": [type(dry["steps"]).__name__, len(dry["steps"]) > 0,
                dry["keep_snapshots_until_ms"]],
        "real": [dry["steps"] == real["steps"], real["version_before"],
                 real["snapshot_before"] is not None,
                 real["keep_snapshots_until_ms"] is not None],
        "again": again["steps"],
        "rows": [before == count()],
        "files": t.info()["files"],
    }
    t.rollback(real["snapshot_before"])
    t.refresh()
    out["rolled back"] = [count() == before, t.info()["files"]]
    print(json.dumps(out))
""")


def run(python, warehouse):
    proc = subprocess.run([str(python), "-c", SCRIPT, str(warehouse)], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, f"{python} failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_upgrade_and_rollback_take_07s_arguments_and_answer_alike(tmp_path):
    if not TL07_PYTHON.exists():
        pytest.fail(f"{TL07_PYTHON} missing: run scripts/setup.sh test")
    theirs_sig = subprocess.run(
        [str(TL07_PYTHON), "-c", "import inspect, timelake; print(inspect.signature("
         "timelake.Table.upgrade)); print(inspect.signature(timelake.Table.rollback))"],
        capture_output=True, text=True, timeout=60).stdout.splitlines()
    for name, theirs in zip(("upgrade", "rollback"), theirs_sig):
        ours = inspect.signature(getattr(timelake.Table, name))
        # Positional parameters as 0.7 shows them: name, or name=default.
        shown = [p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
                 for p in list(ours.parameters.values())[1:]
                 if p.kind != inspect.Parameter.KEYWORD_ONLY]
        expected = [p.strip() for p in theirs.strip("()").split(",")
                    if p.strip() not in ("self", "/")]
        assert shown == expected, (name, shown, theirs)
    theirs = run(TL07_PYTHON, tmp_path / "tl07")
    ours = run(VENV_PYTHON, tmp_path / "ours")
    assert ours == theirs
    assert ours["again"] == [] and ours["rows"] == [True]
    assert ours["rolled back"] == [True, 8]


def test_evolve_schema_renames_widens_and_adds(lake):  # noqa: F811
    schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("host", pa.string()),
                        ("temp", pa.float32()), ("n", pa.int32())])
    t = lake.create_table("ev.t", schema, time_column="time", series_key=["host"])
    t.append(pa.table({"time": readings(3).column("time"), "host": ["a", "b", "c"],
                       "temp": pa.array([1.5, 2.5, 3.5], pa.float32()),
                       "n": pa.array([1, 2, 3], pa.int32())}))
    first = t.snapshot_id
    t.evolve_schema(rename={"temp": "temperature"}, widen={"n": pa.int64()},
                    add={"humidity": pa.float64()})
    assert t.schema.names == ["time", "host", "temperature", "n", "_ingest_ts", "humidity"]
    assert t.schema.field("n").type == pa.int64()
    got = lake.sql("SELECT host, temperature, n, humidity FROM ev.t ORDER BY host").to_pylist()
    assert got == [{"host": h, "temperature": v, "n": n, "humidity": None}
                   for h, v, n in (("a", 1.5, 1), ("b", 2.5, 2), ("c", 3.5, 3))]
    with pytest.raises(timelake.InvalidError, match="it is a series key column"):
        t.evolve_schema(widen={"host": pa.large_string()})
    with pytest.raises(timelake.InvalidError, match="the table has a column 'n' already"):
        t.evolve_schema(rename={"temperature": "n"})
    with pytest.raises(ValueError):
        t.evolve_schema()
    snapshots = t.snapshots()
    assert [s["snapshot_id"] for s in snapshots] == [first]
    assert snapshots[0]["current"] and snapshots[0]["rows"] == 3
    as_of = lake.sql(f"SELECT host, temp FROM as_of('ev.t', {first}) ORDER BY host")
    assert as_of.column("temp").to_pylist() == [1.5, 2.5, 3.5]


def test_rollups_keep_the_columns_they_read_and_past_snapshots_read_raw(lake):  # noqa: F811
    schema = pa.schema([("time", pa.timestamp("us", tz="UTC")), ("host", pa.string()),
                        ("temp", pa.float64()), ("n", pa.int32()), ("note", pa.string())])
    t = lake.create_table("ru.t", schema, time_column="time", series_key=["host"])
    times = readings(4).column("time")
    t.append(pa.table({"time": times, "host": ["a", "b", "a", "b"],
                       "temp": [1.0, 2.0, 3.0, 4.0], "n": pa.array([1, 2, 3, 4], pa.int32()),
                       "note": ["w", "x", "y", "z"]}, schema=schema))
    first = t.snapshot_id
    lake.sql("CREATE MATERIALIZED ROLLUP ru.t_1h AS SELECT host, "
             "time_bucket(INTERVAL '1 hour', time) AS hour, count(*), max(temp) "
             "FROM ru.t GROUP BY host, hour")
    t.refresh()
    t.append(pa.table({"time": times, "host": ["c", "c", "c", "c"],
                       "temp": [9.0, 9.0, 9.0, 9.0], "n": pa.array([5, 6, 7, 8], pa.int32()),
                       "note": ["p", "q", "r", "s"]}, schema=schema))
    version = t.version
    # A column the rollup reads keeps its name and type; nothing changes.
    with pytest.raises(timelake.InvalidError,
                       match="column temp is read by the rollup ru.t_1h; drop the rollup "
                             "first to rename it"):
        t.evolve_schema(rename={"temp": "temperature"})
    with pytest.raises(timelake.InvalidError, match="read by the rollup ru.t_1h"):
        t.evolve_schema(add={"extra": pa.float64()}, rename={"temp": "t2"})
    assert t.refresh().version == version
    # Other columns change; the rollup still refreshes.
    t.evolve_schema(rename={"note": "remark"}, widen={"n": pa.int64()})
    rollup = lake.table("ru.t_1h")
    with pytest.raises(timelake.InvalidError, match="ru.t_1h is a rollup of ru.t: its "
                                                    "columns come from its definition"):
        rollup.evolve_schema(add={"extra": pa.float64()})
    routed = "SELECT host, max(temp) AS m FROM ru.t GROUP BY host ORDER BY host"
    assert lake.sql(routed).to_pylist() == [{"host": "a", "m": 3.0}, {"host": "b", "m": 4.0},
                                            {"host": "c", "m": 9.0}]
    # As of the first snapshot: its raw rows, never the rollup's newer ones.
    past = lake.sql(f"SELECT host, max(temp) AS m FROM as_of('ru.t', {first}) "
                    "GROUP BY host ORDER BY host").to_pylist()
    assert past == [{"host": "a", "m": 3.0}, {"host": "b", "m": 4.0}]
