"""The Markdown report and PNG plots of one bench/run.py run.

    report.write(info, pathlib.Path("bench/results/2026-12-02-quick.md"))

`info` is what bench/run.py collects (it is also saved as the .json beside the
report); `python bench/report.py RESULTS.json` writes the report again from it
(for a `--latest` run's .json, through bench/latest.py).
"""

import json
import pathlib
import statistics
import sys

LABELS = {
    "ours": "Timelake C++",
    "tl07": "Timelake 0.7",
    "pyiceberg": "PyIceberg (own table)",
    "pyiceberg-ours": "PyIceberg (our table)",
    "duckdb-parquet": "DuckDB (Parquet files)",
    "duckdb-iceberg": "DuckDB iceberg (our table)",
    "pyarrow": "pyarrow decode (reference)",
}
INGEST_LABELS = {"ours": "Timelake C++", "pyiceberg": "PyIceberg 0.12", "tl07": "Timelake 0.7"}
QUERY_SYSTEMS = ["ours", "tl07", "pyiceberg", "pyiceberg-ours", "duckdb-parquet",
                 "duckdb-iceberg"]
PEERS = QUERY_SYSTEMS[1:]
TSBS_QUERIES = ["single-groupby-1-1-1", "single-groupby-5-1-12", "cpu-max-all-8",
                "double-groupby-1", "double-groupby-all", "high-cpu-1", "lastpoint",
                "groupby-orderby-limit"]
INGEST_PEERS = ["pyiceberg", "tl07"]
COLORS = {"ours": "#d62728", "tl07": "#ff9896", "pyiceberg": "#1f77b4",
          "pyiceberg-ours": "#aec7e8", "duckdb-parquet": "#2ca02c", "duckdb-iceberg": "#98df8a",
          "pyarrow": "#7f7f7f"}


def fmt_ms(ms):
    if ms is None:
        return "–"
    if ms >= 1000:
        return f"{ms / 1000:.2f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def fmt_ratio(r):
    return "–" if r is None else f"**{r:.2f}×**"


def fmt_rate(rows_per_s):
    if rows_per_s is None:
        return "–"
    if rows_per_s >= 1e6:
        return f"{rows_per_s / 1e6:.2f} M rows/s"
    return f"{rows_per_s / 1e3:.0f} k rows/s"


def fmt_mib(kib):
    return "–" if kib is None else f"{kib / 1024:.0f} MiB"


def fmt_bytes(n):
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.0f} KiB"
    return f"{n} B"


def ds_name(ds):
    return f"{ds['hosts']:,} hosts × {ds['hours']} h"


def ds_key(ds):
    return f"{ds['hosts']}x{ds['hours']}h"


def warm_ms(ds, system, name):
    run = ds["warm"].get(system, {})
    for q in run.get("queries", []):
        if q["name"] == name and "error" not in q and q.get("times_ms"):
            return q["median_ms"]
    return None


def cold_ms(ds, system, name):
    return ds["cold"].get(system, {}).get(name, {}).get("median_ms")


def check_of(ds, system, name):
    return ds["checks"].get(name, {}).get(system)


def best_peer(ds, name, timing):
    """(system, ms) of the fastest peer whose answer matched ours."""
    best = None
    for s in PEERS:
        ms = timing(ds, s, name)
        if ms is None or check_of(ds, s, name) != "ok":
            continue
        if best is None or ms < best[1]:
            best = (s, ms)
    return best


def cell(ds, system, name, timing):
    """A system's time for a query; `≠` when its answer differed from ours."""
    check = check_of(ds, system, name)
    if check is None:
        return "n/a"
    ms = timing(ds, system, name)
    if ms is None:
        return "error"
    return fmt_ms(ms) + ("" if check == "ok" else " ≠")


def answers_cell(ds, name):
    checks = ds["checks"].get(name, {})
    differ = [LABELS[s] for s, c in checks.items() if c.startswith("mismatch")]
    failed = [LABELS[s] for s, c in checks.items() if c != "ok" and not c.startswith("mismatch")]
    parts = (["differ: " + ", ".join(differ)] if differ else []) + \
        (["no answer: " + ", ".join(failed)] if failed else [])
    return "; ".join(parts) if parts else "all agree"


def query_table(ds, timing, extra=None):
    names = [q["name"] for q in ds["queries"]]
    head = ["query"] + [LABELS[s] for s in QUERY_SYSTEMS] + ["ours / best peer",
                                                             LABELS["pyarrow"]]
    if extra:
        head.append(extra[0])
    head.append("answers")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        best = best_peer(ds, name, timing)
        ours = timing(ds, "ours", name)
        ratio = ours / best[1] if best and ours is not None and best[1] > 0 and \
            check_of(ds, "ours", name) == "ok" else None
        row = [f"`{name}`"] + [cell(ds, s, name, timing) for s in QUERY_SYSTEMS]
        row.append(fmt_ratio(ratio) + (f" (vs {LABELS[best[0]]})" if ratio is not None else ""))
        row.append(fmt_ms(timing(ds, "pyarrow", name)) if timing(ds, "pyarrow", name)
                   is not None else "n/a")
        if extra:
            row.append(extra[1](name))
        row.append(answers_cell(ds, name))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def geomean(values):
    values = [v for v in values if v]
    if not values:
        return None
    return statistics.geometric_mean(values)


def ratios(ds, timing):
    """Ours / best peer for each TSBS query (not the latest-API row)."""
    out = []
    for q in ds["queries"]:
        if q["name"] not in TSBS_QUERIES:
            continue
        best = best_peer(ds, q["name"], timing)
        ours = timing(ds, "ours", q["name"])
        if best and ours is not None and check_of(ds, "ours", q["name"]) == "ok":
            out.append(ours / best[1])
    return out


def ingest_ratio(ds):
    ing = ds["ingest"]
    ours = ing.get("ours", {}).get("seconds")
    peers = [ing[s]["seconds"] for s in INGEST_PEERS if ing.get(s, {}).get("seconds")]
    if ours is None or not peers:
        return None
    return ours / min(peers)


def summary_rows(info):
    """(data set, ingest ratio, warm geomean ratio, cold geomean ratio) per data set:
    the figures of the README's summary table."""
    rows = []
    for ds in info["datasets"]:
        rows.append((ds_name(ds), ingest_ratio(ds), geomean(ratios(ds, warm_ms)),
                     geomean(ratios(ds, cold_ms))))
    return rows


def plots(info, out):
    """Writes the PNGs beside `out`; returns their file names."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    stem = out.stem
    # Ingest throughput.
    fig, ax = plt.subplots(figsize=(3 + 2.5 * len(info["datasets"]), 3.5))
    width = 0.6 / len(INGEST_LABELS)
    for i, system in enumerate(INGEST_LABELS):
        xs, ys = [], []
        for j, ds in enumerate(info["datasets"]):
            rate = ds["ingest"].get(system, {}).get("rows_per_s")
            if rate:
                xs.append(j + i * width)
                ys.append(rate / 1e6)
        ax.bar(xs, ys, width, label=INGEST_LABELS[system], color=COLORS[system])
    ax.set_xticks([j + width * (len(INGEST_LABELS) - 1) / 2
                   for j in range(len(info["datasets"]))])
    ax.set_xticklabels([ds_name(ds) for ds in info["datasets"]])
    ax.set_ylabel("million rows / s (higher is better)")
    ax.set_title("Ingest throughput, TSBS cpu-only")
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = f"{stem}-ingest.png"
    fig.savefig(out.parent / name, dpi=110)
    plt.close(fig)
    files.append(name)

    # Latency per query, warm and cold.
    systems = QUERY_SYSTEMS + ["pyarrow"]
    for ds in info["datasets"]:
        names = [q["name"] for q in ds["queries"]]
        fig, axes = plt.subplots(2, 1, figsize=(11, 7.5), sharex=True)
        for ax, (title, timing) in zip(axes, [("warm (median in one process)", warm_ms),
                                               ("cold (new process, median)", cold_ms)]):
            width = 0.85 / len(systems)
            for i, system in enumerate(systems):
                xs, ys = [], []
                for j, n in enumerate(names):
                    ms = timing(ds, system, n)
                    if ms:
                        xs.append(j + i * width)
                        ys.append(ms)
                ax.bar(xs, ys, width, label=LABELS[system], color=COLORS[system])
            ax.set_yscale("log")
            ax.set_ylabel("ms (log; lower is better)")
            ax.set_title(f"{ds_name(ds)}: {title}", fontsize=10)
            ax.grid(axis="y", alpha=0.3)
        axes[-1].set_xticks([j + 0.85 / 2 - width / 2 for j in range(len(names))])
        axes[-1].set_xticklabels(names, rotation=25, ha="right", fontsize=8)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.93))
        name = f"{stem}-latency-{ds_key(ds)}.png"
        fig.savefig(out.parent / name, dpi=110)
        plt.close(fig)
        files.append(name)
    return files


def fmt_growth(value, first):
    """`value` with its factor over the first data set's."""
    if value is None:
        return "–"
    if first:
        return f"×{value / first:.1f}"
    return "–"


def geomean_ms(ds, system, timing):
    """The geometric mean of a system's times over the TSBS queries it answered
    as we did (None when it missed one: the means would not compare)."""
    times = []
    for name in TSBS_QUERIES:
        if not any(q["name"] == name for q in ds["queries"]):
            continue
        ms = timing(ds, system, name)
        if ms is None or (system != "ours" and check_of(ds, system, name) != "ok"):
            return None
        times.append(ms)
    return geomean(times)


def growth(info):
    """How each figure grows with the data: one table per figure, a column per
    data set, each cell the figure and its factor over the smallest data set."""
    sets = info["datasets"]
    head = "| system | " + " | ".join(ds_name(ds) for ds in sets) + " |"
    rule = "|---|" + "---|" * len(sets)
    lines = ["", "## Growth with the data", "",
             "Each figure per data set, and (×) its factor over the first data set's. Rows: "
             + ", ".join(f"{ds['rows']:,}" for ds in sets) + " ("
             + ", ".join(f"×{ds['rows'] / sets[0]['rows']:.1f}" for ds in sets) + ")."]

    def table(title, systems, labels, value, fmt):
        out = ["", f"{title}:", "", head, rule]
        for s in systems:
            values = [value(ds, s) for ds in sets]
            first = values[0]
            out.append(f"| {labels[s]} | " + " | ".join(
                "–" if v is None else f"{fmt(v)} ({fmt_growth(v, first)})" for v in values)
                + " |")
        return out

    ingest_s = lambda ds, s: ds["ingest"].get(s, {}).get("seconds")  # noqa: E731
    rss = lambda ds, s: ds["ingest"].get(s, {}).get("peak_rss_kib")  # noqa: E731
    lines += table("Ingest time", INGEST_LABELS, INGEST_LABELS, ingest_s,
                   lambda v: f"{v:.2f} s")
    lines += table("Peak memory of the ingest", INGEST_LABELS, INGEST_LABELS, rss, fmt_mib)
    rewritten = [ds["ingest"].get("ours", {}).get("rewritten_per_byte") for ds in sets]
    if any(r is not None for r in rewritten):
        lines += ["", "Timelake C++'s compaction during ingest, bytes written per byte "
                  "appended: " + ", ".join("–" if r is None else f"{r:.2f}"
                                           for r in rewritten) + "."]
    lines += table("Warm queries, geometric mean over the TSBS set", QUERY_SYSTEMS, LABELS,
                   lambda ds, s: geomean_ms(ds, s, warm_ms), fmt_ms)
    lines += table("Cold queries, geometric mean over the TSBS set", QUERY_SYSTEMS, LABELS,
                   lambda ds, s: geomean_ms(ds, s, cold_ms), fmt_ms)
    lines += table("Peak memory of the warm query process", QUERY_SYSTEMS + ["pyarrow"],
                   LABELS, lambda ds, s: ds["warm"].get(s, {}).get("peak_rss_kib"), fmt_mib)
    return lines


def render(info, plot_files):
    m = info["machine"]
    date = info["started"][:10]
    s3 = info.get("s3", False)
    large = info.get("large", False)
    kind = ", ".join(k for k, on in (("quick", info["quick"]), ("large", large),
                                     ("tables on S3", s3)) if on)
    lines = [f"# Timelake benchmarks, {date}{f' ({kind})' if kind else ''}", ""]
    lines += [
        "> **Noisy figures.** Measured on the project's shared 2-core machine while other "
        "people were compiling on it (load average "
        f"{info['load_before'][0]:.1f} at the start, {info['load_after'][0]:.1f} at the end). "
        "Compare ratios within this report, not absolute times across reports. "
        "Ratios are Timelake C++ / the fastest peer whose answer matched ours: "
        "**below 1 means Timelake C++ is faster**.",
        "",
        f"Command: `make bench{'-quick' if info['quick'] else '-large' if large else ''}"
        f"{' BENCH_ARGS=--s3' if s3 else ''}` "
        f"({info['minutes']:.1f} min). Seed {info['seed']}; {info['repeats']} repeats of every "
        f"query timing, {info['ingest_repeats']} ingests per system.",
        "", "## Machine", "", "| | |", "|---|---|",
        f"| CPU | {m['cpu']} |", f"| cores | {m['cores']} |",
        f"| memory | {m['memory_gib']} GiB |", f"| OS | {m['os']} |",
        f"| storage | {info.get('storage', 'local disk')} |",
    ]
    lines += [f"| {k} | {v} |" for k, v in m["versions"].items()]
    lines += [
        "", "## How it is measured", "",
        "- Data: the TSBS `cpu-only` data set from `bench/tsbs.py` (one row per host every "
        "10 s, 10 string tags, 10 int64 metrics), as Parquet files of "
        f"{info['rows_per_file']:,} rows; every system ingests the same files.",
        "- Ingest: each system in a new process creates the table and appends each file as "
        "one commit (reading the file included): Timelake C++ through `timelake_bench` "
        "(`Table::Append`, day chunks, series key `hostname`), PyIceberg 0.12 `append` into a "
        "SqlCatalog (sqlite) table, Timelake 0.7 `append`. Median over the ingests; peak "
        "RSS is the process's peak resident set, `VmHWM` (Python processes include the interpreter and "
        "pyarrow). PyIceberg's table is unpartitioned (its day transform needs "
        "pyiceberg-core; at most one day of data is one partition anyway) and unsorted.",
        "- Queries: the TSBS set in DataFusion SQL (Timelake C++ and 0.7) and in DuckDB SQL "
        "(`bench/queries.py`; the SQL is listed below each table). PyIceberg has no SQL: it "
        "scans with the query's row filter and columns (`table.scan(row_filter, "
        "selected_fields).to_arrow()`) and DuckDB runs the query over that Arrow table. "
        "*PyIceberg (our table)* is `StaticTable.from_metadata` on Timelake C++'s table; "
        "*DuckDB iceberg* is DuckDB 1.4.4's iceberg extension on the same table; *DuckDB "
        "(Parquet files)* reads the input files with `read_parquet`.",
        "- Before any timing every answer is compared with Timelake C++'s (rows sorted, "
        "floats to 1e-9): `≠` marks a time whose answer differed, and the last column says "
        "which systems differed. A differing peer is never the best peer.",
        "- Warm: in one process, a first run, then the median of the repeats. Cold: a new "
        "process per run; the time from opening the lake/catalog/connection to the answer "
        "(library loading and imports excluded), median over repeats.",
        "- Storage requests: one cold run of each query of Timelake C++ with "
        "`TIMELAKE_TRACE=storage`, counting the lines it prints"
        + (" (each one an HTTP request to the S3 server)." if s3 else
           " (on local disk; `--s3` makes them HTTP requests)."),
        "- *pyarrow decode* is the physical reference: `pq.read_table` of the query's "
        "columns from all of Timelake C++'s live data files, with no filter.",
        "- `lastpoint-latest-api` is not a TSBS query: the newest row per host through "
        "`Session::Latest` / Timelake 0.7's `lake.latest()`, checked against `lastpoint`.",
    ]
    if s3:
        lines += [
            "- Tables on S3: every table's files are on the S3 server (PyIceberg's sqlite "
            "catalog stays on local disk); the input files are read from local disk for "
            "ingest and copied to the server for *DuckDB (Parquet files)*; DuckDB reads S3 "
            "through its httpfs extension, pyarrow through its S3FileSystem.",
        ]
    lines += [
        "",
        "## Ingest", "",
        "| data set | rows (files) | " + " | ".join(INGEST_LABELS.values())
        + " | ours / best peer (time) |",
        "|---|---|" + "---|" * (len(INGEST_LABELS) + 1),
    ]
    for ds in info["datasets"]:
        row = [ds_name(ds), f"{ds['rows']:,} ({ds['files']})"]
        for s in INGEST_LABELS:
            r = ds["ingest"].get(s, {})
            row.append("error (below)" if "error" in r
                       else f"{fmt_rate(r['rows_per_s'])} ({r['seconds']:.2f} s)")
        row.append(fmt_ratio(ingest_ratio(ds)))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Peak memory (RSS) of the ingesting process:", "",
              "| data set | " + " | ".join(INGEST_LABELS.values()) + " |",
              "|---|" + "---|" * len(INGEST_LABELS)]
    for ds in info["datasets"]:
        lines.append("| " + " | ".join([ds_name(ds)] + [
            fmt_mib(ds["ingest"].get(s, {}).get("peak_rss_kib")) for s in INGEST_LABELS]) + " |")
    failures = [(ds, s, ds["ingest"][s]["error"]) for ds in info["datasets"]
                for s in INGEST_LABELS if "error" in ds["ingest"].get(s, {})]
    if failures:
        lines += ["", "Ingests that failed (the system's queries on that data set are then "
                  "errors too):", ""]
        lines += [f"- {ds_name(ds)}, {INGEST_LABELS[s]}: {e}" for ds, s, e in failures]
    partial = [(ds, s, ds["ingest"][s]) for ds in info["datasets"] for s in INGEST_LABELS
               if ds["ingest"].get(s, {}).get("failed_runs")]
    if partial:
        lines += ["", "Ingests that failed in some repeats (the median is over the others, "
                  "and the queries read the table of the last ingest that worked):", ""]
        lines += [f"- {ds_name(ds)}, {INGEST_LABELS[s]}: {len(r['failed_runs'])} of "
                  f"{len(r['runs'])} failed; first: {r['failed_runs'][0]}"
                  for ds, s, r in partial]
    if plot_files:
        lines += ["", f"![ingest throughput]({plot_files[0]})"]

    for k, ds in enumerate(info["datasets"]):
        storage = ds["storage"]

        def requests(name, storage=storage):
            s = storage.get(name)
            if not s or s.get("error"):
                return "error"
            by = ", ".join(f"{n} {m}" for m, n in sorted(s["by_method"].items()))
            return f"{s['requests']} ({by}; {fmt_bytes(s['bytes'])})"

        lines += [
            "", f"## Queries: {ds_name(ds)} ({ds['rows']:,} rows)", "",
            f"### Warm: median of {info['repeats']} runs in one process", "",
            query_table(ds, warm_ms), "",
            f"### Cold: a new process per run, median of {info['repeats']}", "",
            query_table(ds, cold_ms, ("storage requests of ours (bytes)", requests)), "",
            "Peak RSS of the warm query process: " + ", ".join(
                f"{LABELS[s]} {fmt_mib(ds['warm'].get(s, {}).get('peak_rss_kib'))}"
                for s in QUERY_SYSTEMS + ["pyarrow"]) + ".",
        ]
        problems = [(n, s, c) for n, per in ds["checks"].items() for s, c in per.items()
                    if c != "ok" and not c.startswith("error: ingest failed")]
        if problems:
            lines += ["", "Answers that differ from Timelake C++'s, or errors:", ""]
            lines += [f"- `{n}`, {LABELS[s]}: {c}" for n, s, c in problems]
        if plot_files and k + 1 < len(plot_files):
            lines += ["", f"![latency per query, {ds_name(ds)}]({plot_files[k + 1]})"]
        lines += ["", "<details><summary>The queries (DataFusion SQL; DuckDB SQL)</summary>",
                  ""]
        for q in ds["queries"]:
            lines.append(f"- `{q['name']}`")
            if q.get("sql"):
                lines.append(f"  - `{q['sql']}`")
            if q.get("duckdb"):
                lines.append(f"  - `{q['duckdb']}`")
        lines += ["", "</details>"]

    if len(info["datasets"]) > 1:
        lines += growth(info)

    lines += ["", "## Summary", "",
              "Ingest: Timelake C++'s time / the fastest peer's. Queries: the geometric "
              "mean over the 8 TSBS queries of Timelake C++ / best peer (below 1: ours is "
              "faster).", "",
              "| data set | ingest (time) | queries warm | queries cold |", "|---|---|---|---|"]
    for name, ing, warm, cold in summary_rows(info):
        lines.append(f"| {name} | {fmt_ratio(ing)} | {fmt_ratio(warm)} | {fmt_ratio(cold)} |")
    lines.append("")
    return "\n".join(lines)


def write(info, out):
    """Writes the report (and its plots) to `out`; returns its text."""
    out = pathlib.Path(out)
    try:
        plot_files = plots(info, out)
    except ImportError as e:  # matplotlib missing: the report still says everything
        print(f"bench: no plots ({e})", file=sys.stderr)
        plot_files = []
    text = render(info, plot_files)
    out.write_text(text)
    return text


if __name__ == "__main__":
    src = pathlib.Path(sys.argv[1])
    results = json.loads(src.read_text())
    if results.get("mode") == "latest":  # a bench/run.py --latest run
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
        import latest
        print(latest.write(results, src.with_suffix(".md")))
    else:
        print(write(results, src.with_suffix(".md")))
