# Copyright 2026 The Timelake Authors. Apache-2.0.
"""The data-driven SQL test harness (issue #5): case files, running a query
through the `timelake` binary, and comparing its result with the answer DuckDB
computes over the same input Parquet files.

Case file format (`tests/sql/cases/*.test`)
-------------------------------------------

    # A comment: any line starting with '#'.
    === single-groupby-1-1-1 ordered
    SELECT date_trunc('minute', time) AS minute, max(usage_user)
    FROM cpu WHERE hostname = 'host_3' GROUP BY minute ORDER BY minute
    --- duckdb
    SELECT date_trunc('minute', time) AS minute, max(usage_user)
    FROM cpu WHERE hostname = 'host_3' GROUP BY minute ORDER BY minute

    === unknown-table
    SELECT * FROM no_such_table
    --- error: no_such_table

A case starts with `=== <name> [flag ...]`; the lines up to the `---` line are
the Timelake SQL (one statement), and the `---` line says what is expected:

- `--- duckdb`, followed by DuckDB SQL computing the expected answer over views
  of the raw input Parquet files named like the tables (`cpu`, `hosts`);
- `--- same`: DuckDB runs the Timelake SQL text unchanged;
- `--- error: <text>`: the CLI exits non-zero, prints nothing on stdout and one
  line `timelake: error: …` on stderr that contains <text> (case-insensitive).

Flags: `ordered` compares rows in order (otherwise both sides are sorted);
`contains` passes when every expected row is among the result's rows (for
listings that also show engine-internal entries). Values compare by column
position (names are not compared): floats with a relative tolerance of 1e-9,
integers/decimals/floats numerically, timestamps as UTC instants (naive ones
taken as UTC).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import decimal
import math
import os
import pathlib
import re
import subprocess

import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("TIMELAKE_BIN", ROOT / "build" / "release" / "timelake"))
CASES_DIR = pathlib.Path(__file__).resolve().parent / "cases"
SHOW_ROWS = 10  # rows of each side shown when a case fails
REL_TOL = 1e-9
ABS_TOL = 1e-9
UTC = dt.timezone.utc


@dataclasses.dataclass
class Case:
    name: str
    sql: str
    expect: str  # "duckdb" | "error"
    duckdb_sql: str = ""
    error: str = ""
    ordered: bool = False
    contains: bool = False
    where: str = ""  # file:line, for messages

    def __str__(self):
        return self.name


_FLAGS = {"ordered", "contains"}


def parse_cases(text: str, origin: str = "<string>") -> list[Case]:
    """Parses one case file (format in the module docstring)."""
    cases: list[Case] = []
    current = None  # [name, flags, where, sql lines, expectation, duckdb lines]

    def finish():
        if current is None:
            return
        name, flags, where, sql, expectation, duck = current
        sql_text = "\n".join(sql).strip()
        if not sql_text:
            raise ValueError(f"{where}: case {name!r} has no SQL")
        if expectation is None:
            raise ValueError(f"{where}: case {name!r} has no '---' line")
        case = Case(name=name, sql=sql_text, expect="duckdb", where=where,
                    ordered="ordered" in flags, contains="contains" in flags)
        kind, arg = expectation
        duck = "\n".join(duck).strip()
        if kind == "error":
            case.expect, case.error = "error", arg
            if duck:
                raise ValueError(f"{where}: case {name!r}: text after '--- error:'")
        elif kind == "same":
            case.duckdb_sql = sql_text
            if duck:
                raise ValueError(f"{where}: case {name!r}: text after '--- same'")
        else:
            case.duckdb_sql = duck
            if not case.duckdb_sql:
                raise ValueError(f"{where}: case {name!r} has no DuckDB SQL")
        cases.append(case)

    for number, line in enumerate(text.splitlines(), 1):
        where = f"{origin}:{number}"
        stripped = line.strip()
        if stripped.startswith("#"):
            continue
        if stripped.startswith("==="):
            finish()
            words = stripped[3:].split()
            if not words:
                raise ValueError(f"{where}: '===' without a case name")
            unknown = set(words[1:]) - _FLAGS
            if unknown:
                raise ValueError(f"{where}: unknown flags {sorted(unknown)}")
            current = [words[0], set(words[1:]), where, [], None, []]
            continue
        if current is None:
            if stripped:
                raise ValueError(f"{where}: text outside a case: {line!r}")
            continue
        if stripped.startswith("---"):
            if current[4] is not None:
                raise ValueError(f"{where}: second '---' line in case {current[0]!r}")
            rest = stripped[3:].strip()
            if rest == "duckdb":
                current[4] = ("duckdb", "")
            elif rest == "same":
                current[4] = ("same", "")
            elif rest.startswith("error:") and rest[6:].strip():
                current[4] = ("error", rest[6:].strip())
            else:
                raise ValueError(f"{where}: expected '--- duckdb', '--- same' or "
                                 f"'--- error: <text>', got {line!r}")
            continue
        (current[5] if current[4] is not None else current[3]).append(line)
    finish()
    return cases


def load_cases(directory: pathlib.Path = CASES_DIR) -> list[Case]:
    cases = []
    for path in sorted(directory.glob("*.test")):
        cases += parse_cases(path.read_text(), str(path.relative_to(ROOT)))
    names = collections.Counter(c.name for c in cases)
    duplicates = [n for n, k in names.items() if k > 1]
    if duplicates:
        raise ValueError(f"duplicate case names: {duplicates}")
    return cases


# --- running ---------------------------------------------------------------

def run_cli(*args, check=True, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "TIMELAKE_WAREHOUSE"}
    proc = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"timelake {' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stdout}\n{proc.stderr}")
    return proc


class QueryError(Exception):
    pass


@dataclasses.dataclass
class Result:
    names: list[str]
    rows: list[tuple]


def timelake_query(warehouse, sql, out_path) -> Result:
    """Runs one statement through the CLI; Parquet output read back."""
    out_path = pathlib.Path(out_path)
    if out_path.exists():
        out_path.unlink()
    proc = run_cli("-w", warehouse, "sql", sql, "--format", "parquet", "-o", out_path,
                   check=False)
    if proc.returncode != 0:
        raise QueryError(f"exit {proc.returncode}: {proc.stderr.strip()}")
    table = pq.read_table(out_path)
    return Result(table.column_names, _rows(table))


def duckdb_query(con, sql) -> Result:
    table = con.execute(sql).fetch_arrow_table()
    return Result(table.column_names, _rows(table))


def _rows(table):
    columns = [[normalize(v) for v in table.column(i).to_pylist()]
               for i in range(table.num_columns)]
    return list(zip(*columns)) if columns else [() for _ in range(table.num_rows)]


def normalize(v):
    """One representation per value: UTC-aware datetimes, ints for integral
    decimals, floats for the others."""
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)
    if isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


# --- comparing -------------------------------------------------------------

def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def values_equal(a, b):
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            a, b = float(a), float(b)
            if math.isnan(a) or math.isnan(b):
                return math.isnan(a) and math.isnan(b)
            return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
        return a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def rows_equal(a, b):
    return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))


def _sort_value(v):
    if v is None:
        return (0,)
    if _is_number(v):
        f = float(v)
        return (1, 0.0 if math.isnan(f) else float(f"{f:.9g}"), math.isnan(f))
    if isinstance(v, str):
        return (2, v)
    if isinstance(v, dt.datetime):
        return (3, v)
    if isinstance(v, dt.date):
        return (4, v)
    return (5, repr(v))


def sort_key(row):
    return tuple(_sort_value(v) for v in row)


def _display(v):
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".") + "Z"
    if isinstance(v, float):
        return f"{v:.12g}"
    return repr(v)


def _fmt_row(row):
    return "(" + ", ".join(_display(v) for v in row) + ")"


def _fmt_rows(result_rows, limit=SHOW_ROWS):
    lines = [f"    {_fmt_row(r)}" for r in result_rows[:limit]]
    if len(result_rows) > limit:
        lines.append(f"    … {len(result_rows) - limit} more")
    return "\n".join(lines) if lines else "    (no rows)"


def _rounded(row):
    """A hashable form of a row for the diff (floats to 9 significant digits)."""
    return tuple(float(f"{v:.9g}") if isinstance(v, float) else v for v in row)


def compare(expected: Result, got: Result, ordered=False, contains=False):
    """None when the results agree, else a description of the difference."""
    problems = []
    if len(expected.names) != len(got.names):
        problems.append(f"column count differs: expected {len(expected.names)} "
                        f"{expected.names}, got {len(got.names)} {got.names}")
        return "\n".join(problems)
    exp_rows, got_rows = expected.rows, got.rows
    if not ordered:
        exp_rows, got_rows = sorted(exp_rows, key=sort_key), sorted(got_rows, key=sort_key)
    if contains:
        remaining = list(got_rows)
        missing = []
        for row in exp_rows:
            hit = next((i for i, g in enumerate(remaining) if rows_equal(row, g)), None)
            if hit is None:
                missing.append(row)
            else:
                remaining.pop(hit)
        if not missing:
            return None
        return (f"{len(missing)} expected rows missing from the result:\n"
                f"{_fmt_rows(missing)}")
    if len(exp_rows) == len(got_rows) and all(map(rows_equal, exp_rows, got_rows)):
        return None
    out = [f"row count: expected {len(exp_rows)}, got {len(got_rows)}"]
    if ordered:
        first = next((i for i, (e, g) in enumerate(zip(exp_rows, got_rows))
                      if not rows_equal(e, g)), min(len(exp_rows), len(got_rows)))
        out.append(f"first difference at row {first}:")
        out.append(f"  expected: {_fmt_row(exp_rows[first]) if first < len(exp_rows) else '(end)'}")
        out.append(f"  got:      {_fmt_row(got_rows[first]) if first < len(got_rows) else '(end)'}")
    e_count = collections.Counter(map(_rounded, exp_rows))
    g_count = collections.Counter(map(_rounded, got_rows))
    only_e = sorted((e_count - g_count).elements(), key=sort_key)
    only_g = sorted((g_count - e_count).elements(), key=sort_key)
    if only_e or only_g:
        out.append(f"rows only in expected ({len(only_e)}):\n{_fmt_rows(only_e)}")
        out.append(f"rows only in got ({len(only_g)}):\n{_fmt_rows(only_g)}")
    elif not ordered:
        out.append("rows differ only within the float tolerance's rounding")
    return "\n".join(out)


def describe_failure(case_name, sql, duck_sql, expected, got, diff, ordered=False):
    """The query, the first rows of both results (sorted unless `ordered`)
    and the difference."""
    exp_rows, got_rows = expected.rows, got.rows
    if not ordered:
        exp_rows, got_rows = sorted(exp_rows, key=sort_key), sorted(got_rows, key=sort_key)
    how = "" if ordered else ", sorted"
    return (f"case {case_name}\n"
            f"--- Timelake SQL:\n{sql}\n"
            f"--- DuckDB SQL:\n{duck_sql}\n"
            f"--- expected ({len(exp_rows)} rows{how}) {expected.names}:\n"
            f"{_fmt_rows(exp_rows)}\n"
            f"--- got ({len(got_rows)} rows{how}) {got.names}:\n"
            f"{_fmt_rows(got_rows)}\n"
            f"--- diff:\n{diff}")


def check_error(case_name, sql, proc, substring):
    """Asserts a failed statement printed one clear line naming `substring`."""
    lines = proc.stderr.strip().splitlines()
    problems = []
    if proc.returncode == 0:
        problems.append("exited 0")
    if proc.stdout.strip():
        problems.append("printed to stdout")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines instead of 1")
    elif not lines[0].startswith("timelake: error: "):
        problems.append("stderr does not start with 'timelake: error: '")
    if substring.lower() not in proc.stderr.lower():
        problems.append(f"stderr lacks {substring!r}")
    if re.search(r"Traceback|terminate called|panicked", proc.stderr):
        problems.append("crash output")
    if problems:
        raise AssertionError(
            f"case {case_name}: {'; '.join(problems)}\n--- Timelake SQL:\n{sql}\n"
            f"--- exit {proc.returncode}\n--- stdout:\n{proc.stdout[:2000]}\n"
            f"--- stderr:\n{proc.stderr[:2000]}")
