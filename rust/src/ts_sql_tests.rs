//! Tests of ASOF JOIN, gap filling and the time-weighted plans through a
//! DataFusion session with [`crate::planner`] installed, on in-memory
//! tables, against brute-force answers computed here. (Against DuckDB and
//! TimescaleDB's documented examples: tests/sql/cases/asof.test and
//! gapfill.test.)

use std::sync::Arc;

use arrow::array::{
    Array, AsArray, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{
    DataType, Field, Float64Type, Int64Type, Schema, TimeUnit, TimestampMicrosecondType,
};
use datafusion::datasource::MemTable;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{col, SortExpr};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::m4::M4;
use crate::tsagg_tests::Rng;
use crate::twm::TimeWeighted;

fn ctx(partitions: usize) -> SessionContext {
    let state = crate::planner::install(
        SessionStateBuilder::new()
            .with_config(SessionConfig::new().with_target_partitions(partitions))
            .with_default_features(),
    )
    .build();
    let ctx = SessionContext::new_with_state(state);
    crate::planner::register_functions(&ctx);
    ctx.register_udaf(M4::udaf());
    ctx.register_udaf(TimeWeighted::mean_udaf());
    ctx.register_udaf(TimeWeighted::state_udaf());
    ctx
}

fn utc() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("+00:00")))
}

type Row = (Option<&'static str>, Option<i64>, i64);

/// A table `(k, t, x)` over `parts` partitions; `sorted` sorts each by (k,
/// t) and declares it.
fn register(ctx: &SessionContext, name: &str, rows: &[Row], parts: usize, sorted: bool) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Utf8, true),
        Field::new("t", utc(), true),
        Field::new("x", DataType::Int64, false),
    ]));
    let mut partitions: Vec<Vec<Row>> = vec![Vec::new(); parts];
    for (i, r) in rows.iter().enumerate() {
        partitions[i % parts].push(*r);
    }
    let batches = partitions
        .into_iter()
        .map(|mut p| {
            if sorted {
                p.sort_by_key(|r| (r.0, r.1));
            }
            p.chunks(5)
                .map(|c| {
                    RecordBatch::try_new(
                        Arc::clone(&schema),
                        vec![
                            Arc::new(StringArray::from(c.iter().map(|r| r.0).collect::<Vec<_>>())),
                            Arc::new(
                                TimestampMicrosecondArray::from(
                                    c.iter().map(|r| r.1).collect::<Vec<_>>(),
                                )
                                .with_timezone("+00:00"),
                            ),
                            Arc::new(Int64Array::from(c.iter().map(|r| r.2).collect::<Vec<_>>())),
                        ],
                    )
                    .unwrap()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let mut table = MemTable::try_new(schema, batches).unwrap();
    if sorted {
        table = table.with_sort_order(vec![vec![
            SortExpr::new(col("k"), true, true),
            SortExpr::new(col("t"), true, true),
        ]]);
    }
    ctx.register_table(name, Arc::new(table)).unwrap();
}

fn run(ctx: &SessionContext, sql: &str) -> datafusion::common::Result<Vec<RecordBatch>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let (plan, task_ctx) =
            crate::planner::plan(ctx, sql, datafusion::execution::context::SQLOptions::new())
                .await?;
        datafusion::physical_plan::collect(plan, task_ctx).await
    })
}

fn one(ctx: &SessionContext, sql: &str) -> RecordBatch {
    let batches = run(ctx, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let schema = batches.first().map(|b| b.schema()).unwrap();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

fn plan(ctx: &SessionContext, sql: &str) -> String {
    let batch = one(ctx, &format!("EXPLAIN {sql}"));
    let text = batch.column(1).as_string::<i32>();
    (0..text.len())
        .map(|i| text.value(i))
        .collect::<Vec<_>>()
        .join("\n")
}

// --- ASOF JOIN ---------------------------------------------------------------

/// A quote's payload: a function of (key, time), so ties need no rule.
fn payload(k: Option<&str>, t: Option<i64>) -> i64 {
    k.map_or(0, |k| k.as_bytes()[0] as i64 * 1000) + t.unwrap_or(-1)
}

fn random_sides(rng: &mut Rng) -> (Vec<Row>, Vec<Row>) {
    const KEYS: [Option<&str>; 5] = [Some("a"), Some("b"), Some("c"), Some("d"), None];
    let mut right = Vec::new();
    for _ in 0..300 {
        let k = KEYS[rng.below(5) as usize];
        if k == Some("d") {
            continue; // d never has quotes
        }
        let t = (rng.below(30) > 0).then(|| rng.below(200) as i64);
        right.push((k, t, payload(k, t)));
    }
    let dups: Vec<Row> = (0..40).map(|i| right[i * 5 % right.len()]).collect();
    right.extend(dups);
    let mut left = Vec::new();
    for i in 0..250 {
        let k = KEYS[rng.below(5) as usize];
        let t = (rng.below(30) > 0).then(|| rng.below(220) as i64 - 10);
        left.push((k, t, i));
    }
    let dups: Vec<Row> = (0..20).map(|i| left[i * 7]).collect();
    left.extend(dups);
    (left, right)
}

/// (left x, matched right time) of each output row, by brute force.
fn brute_asof(
    left: &[Row],
    right: &[Row],
    op: &str,
    keyed: bool,
    outer: bool,
) -> Vec<(i64, Option<i64>)> {
    let mut out = Vec::new();
    for &(lk, lt, x) in left {
        let best = match (lk.is_some() || !keyed, lt) {
            (true, Some(lt)) => right
                .iter()
                .filter(|r| (!keyed || r.0 == lk) && (!keyed || r.0.is_some()))
                .filter_map(|r| r.1)
                .filter(|&rt| match op {
                    ">=" => lt >= rt,
                    ">" => lt > rt,
                    "<=" => lt <= rt,
                    _ => lt < rt,
                })
                .reduce(|a, b| {
                    if op.starts_with('>') {
                        a.max(b)
                    } else {
                        a.min(b)
                    }
                }),
            _ => None,
        };
        if best.is_some() || outer {
            out.push((x, best));
        }
    }
    out.sort();
    out
}

fn asof_rows(batch: &RecordBatch) -> Vec<(i64, Option<i64>)> {
    let x = batch.column(0).as_primitive::<Int64Type>();
    let t = batch.column(1).as_primitive::<TimestampMicrosecondType>();
    let mut out: Vec<_> = (0..batch.num_rows())
        .map(|i| (x.value(i), t.is_valid(i).then(|| t.value(i))))
        .collect();
    out.sort();
    out
}

fn check_asof(ctx: &SessionContext, left: &[Row], right: &[Row]) {
    for op in [">=", ">", "<=", "<"] {
        for outer in [false, true] {
            for keyed in [true, false] {
                let sql = format!(
                    "SELECT l.x, r.t, r.x FROM l ASOF {} JOIN r ON {} l.t {op} r.t",
                    if outer { "LEFT" } else { "" },
                    if keyed { "l.k = r.k AND" } else { "" }
                );
                let batch = one(ctx, &sql);
                // The payload is the one of the matched time.
                let p = batch.column(2).as_primitive::<Int64Type>();
                let t = batch.column(1).as_primitive::<TimestampMicrosecondType>();
                for i in 0..batch.num_rows() {
                    if t.is_valid(i) && keyed {
                        assert_eq!(p.value(i) % 1000, t.value(i), "{sql}");
                    }
                }
                assert_eq!(
                    asof_rows(&batch),
                    brute_asof(left, right, op, keyed, outer),
                    "{sql}"
                );
            }
        }
    }
}

#[test]
fn asof_join_equals_brute_force_unsorted_and_sorted_inputs() {
    let mut rng = Rng(0xa50f);
    let (left, right) = random_sides(&mut rng);
    for (parts, sorted) in [(1, false), (3, false), (3, true)] {
        let ctx = ctx(parts);
        register(&ctx, "l", &left, parts, sorted);
        register(&ctx, "r", &right, parts, sorted);
        check_asof(&ctx, &left, &right);
        let p = plan(
            &ctx,
            "SELECT * FROM l ASOF JOIN r ON l.k = r.k AND l.t >= r.t",
        );
        assert!(p.contains("TimelakeAsofJoinExec"), "{p}");
        // Sorted inputs are merged, unsorted ones sorted.
        assert_eq!(p.contains("SortExec"), !sorted, "{p}");
    }
}

#[test]
fn asof_join_errors_name_the_problem() {
    let ctx = ctx(2);
    register(&ctx, "l", &[(Some("a"), Some(1), 1)], 1, false);
    register(&ctx, "r", &[(Some("a"), Some(1), 1)], 1, false);
    for (sql, want) in [
        (
            "SELECT * FROM l ASOF JOIN r USING (k, t)",
            "USING is not supported",
        ),
        (
            "SELECT * FROM l ASOF JOIN r ON l.k = r.k",
            "exactly one inequality",
        ),
        (
            "SELECT * FROM l ASOF JOIN r ON l.t >= r.t AND l.x < r.x",
            "exactly one inequality",
        ),
        (
            "SELECT * FROM l ASOF JOIN r ON l.t >= r.t AND l.x = 3",
            "must compare the two inputs",
        ),
        (
            "SELECT * FROM l ASOF JOIN r ON l.t >= l.t + INTERVAL '1 second'",
            "left input with one of the right",
        ),
        ("SELECT * FROM l ASOF r", "ASOF must be followed by JOIN"),
        ("SELECT __timelake_asof(true)", "internal to ASOF JOIN"),
    ] {
        let err = run(&ctx, sql)
            .err()
            .unwrap_or_else(|| panic!("{sql} succeeded"));
        assert!(err.to_string().contains(want), "{sql}: {err}");
    }
    // A word `asof` elsewhere is not a join.
    let batch = one(&ctx, "SELECT 'asof' AS asof");
    assert_eq!(batch.column(0).as_string::<i32>().value(0), "asof");
}

#[test]
fn asof_filter_on_left_columns_moves_below_the_join() {
    let ctx = ctx(2);
    register(&ctx, "l", &[(Some("a"), Some(1), 1)], 1, false);
    register(&ctx, "r", &[(Some("a"), Some(1), 1)], 1, false);
    let p = plan(
        &ctx,
        "SELECT * FROM l ASOF JOIN r ON l.k = r.k AND l.t >= r.t WHERE l.x > 5 AND r.x > 7",
    );
    let logical: Vec<&str> = p.lines().collect();
    let join = logical
        .iter()
        .position(|l| l.contains("AsofJoin:"))
        .expect("node");
    // r.x > 7 stays above the join; l.x > 5 goes below it.
    assert!(
        logical[..join].iter().any(|l| l.contains("r.x > Int64(7)")),
        "{p}"
    );
    assert!(
        logical[join..].iter().any(|l| l.contains("l.x > Int64(5)")),
        "{p}"
    );
}

// --- gap filling -------------------------------------------------------------

/// `g(d, t, v)`: hourly-ish readings of two devices with holes.
fn gap_table(ctx: &SessionContext) {
    let hour = 3_600_000_000i64;
    let rows: Vec<(&str, i64, Option<f64>)> = vec![
        ("a", 0, Some(1.0)),
        ("a", hour / 2, Some(3.0)),
        ("a", 3 * hour, Some(8.0)),
        ("a", 4 * hour + 5, None),
        ("a", 6 * hour, Some(2.0)),
        ("b", 2 * hour, Some(10.0)),
        ("b", 9 * hour, Some(0.0)),
    ];
    let schema = Arc::new(Schema::new(vec![
        Field::new("d", DataType::Utf8, false),
        Field::new("t", utc(), false),
        Field::new("v", DataType::Float64, true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| r.1))
                    .with_timezone("+00:00"),
            ),
            Arc::new(Float64Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
        ],
    )
    .unwrap();
    ctx.register_table(
        "g",
        Arc::new(
            MemTable::try_new(
                schema,
                vec![vec![batch.slice(0, 4)], vec![batch.slice(4, 3)]],
            )
            .unwrap(),
        ),
    )
    .unwrap();
}

#[test]
fn gapfill_fills_every_bucket_of_every_group() {
    let ctx = ctx(2);
    gap_table(&ctx);
    let batch = one(
        &ctx,
        "SELECT d, time_bucket_gapfill(INTERVAL '1 hour', t) AS h, avg(v) AS a, locf(avg(v)) AS l, \
         locf(avg(v), NULL, true) AS ln, interpolate(avg(v)) AS i FROM g \
         WHERE t >= '1970-01-01T00:00:00Z' AND t < '1970-01-01T08:00:00Z' GROUP BY d, h ORDER BY d, h",
    );
    let col = |i: usize| -> Vec<Option<f64>> {
        let a = batch.column(i).as_primitive::<Float64Type>();
        (0..a.len())
            .map(|j| a.is_valid(j).then(|| a.value(j)))
            .collect()
    };
    // a: 0 → 2, 3 → 8, 4 → NULL (a row), 6 → 2; b: 2 → 10 (9 is outside).
    assert_eq!(batch.num_rows(), 16);
    let n = None;
    assert_eq!(
        col(2)[..8],
        [Some(2.0), n, n, Some(8.0), n, n, Some(2.0), n]
    );
    assert_eq!(
        col(3)[..8],
        [
            Some(2.0),
            Some(2.0),
            Some(2.0),
            Some(8.0),
            n,
            n,
            Some(2.0),
            Some(2.0)
        ]
    );
    assert_eq!(
        col(4)[..8],
        [
            Some(2.0),
            Some(2.0),
            Some(2.0),
            Some(8.0),
            Some(8.0),
            Some(8.0),
            Some(2.0),
            Some(2.0)
        ]
    );
    assert_eq!(
        col(5)[..8],
        [
            Some(2.0),
            Some(4.0),
            Some(6.0),
            Some(8.0),
            n,
            Some(4.0),
            Some(2.0),
            n
        ]
    );
    assert_eq!(
        col(3)[8..],
        [
            n,
            n,
            Some(10.0),
            Some(10.0),
            Some(10.0),
            Some(10.0),
            Some(10.0),
            Some(10.0)
        ]
    );
    assert_eq!(col(5)[8..], [n, n, Some(10.0), n, n, n, n, n]);
    // Monthly buckets of a range across a year end.
    let batch = one(
        &ctx,
        "SELECT time_bucket_gapfill(INTERVAL '1 month', t, '1969-11-15T00:00:00Z', \
         '1970-03-01T00:00:00Z') AS m, count(v) FROM g GROUP BY m ORDER BY m",
    );
    let months = batch.column(0).as_primitive::<TimestampMicrosecondType>();
    let day = 86_400_000_000i64;
    let got: Vec<i64> = (0..months.len()).map(|i| months.value(i) / day).collect();
    assert_eq!(got, vec![-61, -31, 0, 31]);
}

#[test]
fn gapfill_errors() {
    let ctx = ctx(2);
    gap_table(&ctx);
    for (sql, want) in [
        (
            "SELECT time_bucket_gapfill(INTERVAL '1 hour', t) AS h, avg(v) FROM g GROUP BY h",
            "no start",
        ),
        (
            "SELECT time_bucket_gapfill(INTERVAL '1 hour', t) AS h, avg(v) FROM g \
             WHERE t >= '1970-01-01T00:00:00Z' GROUP BY h",
            "no finish",
        ),
        (
            "SELECT interpolate(avg(v)) FROM g",
            "works only in the select list",
        ),
        (
            "SELECT time_bucket_gapfill(INTERVAL '1 second', t, '1970-01-01T00:00:00Z', \
             '1971-01-01T00:00:00Z') AS h, avg(v) FROM g GROUP BY h",
            "more than 10000000 buckets",
        ),
        (
            "SELECT time_bucket_gapfill(INTERVAL '1 month 1 day', t, '1970-01-01T00:00:00Z', \
             '1971-01-01T00:00:00Z') AS h, avg(v) FROM g GROUP BY h",
            "months cannot also hold days",
        ),
    ] {
        let err = run(&ctx, sql)
            .err()
            .unwrap_or_else(|| panic!("{sql} succeeded"));
        assert!(err.to_string().contains(want), "{sql}: {err}");
    }
}

// --- time-weighted plans ----------------------------------------------------

/// `w(k, t, x)` sorted or not, and the time-weighted means read from it.
fn twm_means(sorted: bool, parts: usize) -> (Vec<(String, i64, f64, f64)>, String) {
    let mut rng = Rng(4242);
    let mut rows: Vec<Row> = Vec::new();
    for k in [Some("a"), Some("b"), Some("c")] {
        let mut t = 0i64;
        for _ in 0..300 {
            t += rng.below(5) as i64 * 1_000_000;
            rows.push((k, Some(t), rng.below(100) as i64));
        }
    }
    if !sorted {
        for i in (1..rows.len()).rev() {
            rows.swap(i, rng.below(i as u64 + 1) as usize);
        }
    }
    let ctx = ctx(parts);
    register(&ctx, "w", &rows, parts, sorted);
    let sql = "SELECT k, date_bin(INTERVAL '1 minute', t) AS b, time_weighted_mean(t, x) AS f, \
               time_weighted_mean(t, x, 'linear') AS l FROM w GROUP BY k, b ORDER BY k, b";
    let batch = one(&ctx, sql);
    let k = batch.column(0).as_string::<i32>();
    let b = arrow::compute::cast(batch.column(1), &DataType::Int64).unwrap();
    let b = b.as_primitive::<Int64Type>();
    let f = batch.column(2).as_primitive::<Float64Type>();
    let l = batch.column(3).as_primitive::<Float64Type>();
    let out = (0..batch.num_rows())
        .map(|i| (k.value(i).to_string(), b.value(i), f.value(i), l.value(i)))
        .collect();
    (out, plan(&ctx, sql))
}

#[test]
fn time_weighted_mean_merges_sorted_inputs_into_segments() {
    // The same rows, sorted and declared so (merged, one phase, constant
    // state) or not (readings kept): the same means.
    let (sorted, sorted_plan) = twm_means(true, 3);
    let (shuffled, shuffled_plan) = twm_means(false, 3);
    assert!(sorted_plan.contains("SinglePartitioned"), "{sorted_plan}");
    assert!(sorted_plan.contains("preserve_order=true"), "{sorted_plan}");
    assert!(
        !shuffled_plan.contains("SinglePartitioned"),
        "{shuffled_plan}"
    );
    assert_eq!(sorted.len(), shuffled.len());
    for (a, b) in sorted.iter().zip(&shuffled) {
        assert_eq!((&a.0, a.1), (&b.0, b.1));
        assert!(
            (a.2 - b.2).abs() <= 1e-12 * a.2.abs().max(1.0),
            "{a:?} {b:?}"
        );
        assert!(
            (a.3 - b.3).abs() <= 1e-12 * a.3.abs().max(1.0),
            "{a:?} {b:?}"
        );
    }
}

/// A session whose `time_weighted_mean` is planned in `mode` (as the
/// analyzer rule records a session's setting), aggregations not
/// repartitioned: the aggregate under ORDER BY/LIMIT runs in one partition.
fn twm_ctx(mode: crate::twm::Mode, partitions: usize) -> SessionContext {
    let state = crate::planner::install(
        SessionStateBuilder::new()
            .with_config(
                SessionConfig::new()
                    .with_target_partitions(partitions)
                    .set_bool("datafusion.optimizer.repartition_aggregations", false),
            )
            .with_default_features(),
    )
    .build();
    let ctx = SessionContext::new_with_state(state);
    crate::planner::register_functions(&ctx);
    let mean = TimeWeighted::mean_udaf();
    let tw = (mean.inner().as_ref() as &dyn std::any::Any)
        .downcast_ref::<TimeWeighted>()
        .unwrap()
        .with_mode(mode);
    ctx.register_udaf(tw);
    ctx
}

#[test]
fn time_weighted_mean_merge_keeps_the_partitions_its_parent_reads() {
    // Unsorted readings of 24 series over 4 partitions: `merge` sorts them
    // by (series, time) in hash partitions. The ORDER BY/LIMIT above was
    // planned for one partition; every series must still reach it.
    let mut rng = Rng(1717);
    let keys: Vec<&'static str> = (0..24)
        .map(|i| &*Box::leak(format!("s{i:02}").into_boxed_str()))
        .collect();
    let mut rows: Vec<Row> = Vec::new();
    let mut expected = std::collections::BTreeMap::new();
    for k in &keys {
        let mut pts = Vec::new();
        let mut t = 0i64;
        for _ in 0..50 {
            t += 1 + rng.below(9) as i64;
            pts.push((t, rng.below(100) as i64));
        }
        let area: f64 = pts
            .windows(2)
            .map(|w| w[0].1 as f64 * (w[1].0 - w[0].0) as f64)
            .sum();
        expected.insert(k.to_string(), area / (pts[49].0 - pts[0].0) as f64);
        rows.extend(pts.iter().map(|&(t, x)| (Some(*k), Some(t * 1_000_000), x)));
    }
    for i in (1..rows.len()).rev() {
        rows.swap(i, rng.below(i as u64 + 1) as usize);
    }
    for (mode, limit) in [
        (crate::twm::Mode::Merge, 10),
        (crate::twm::Mode::Merge, 100),
        (crate::twm::Mode::Auto, 10),
    ] {
        let ctx = twm_ctx(mode, 4);
        register(&ctx, "w", &rows, 4, false);
        let sql = format!(
            "SELECT k, time_weighted_mean(t, x) AS f FROM w GROUP BY k ORDER BY k LIMIT {limit}"
        );
        let batch = one(&ctx, &sql);
        let k = batch.column(0).as_string::<i32>();
        let f = batch.column(1).as_primitive::<Float64Type>();
        let got: Vec<(String, f64)> = (0..batch.num_rows())
            .map(|i| (k.value(i).to_string(), f.value(i)))
            .collect();
        let want: Vec<(String, f64)> = expected
            .iter()
            .take(limit)
            .map(|(k, f)| (k.clone(), *f))
            .collect();
        assert_eq!(
            got.len(),
            want.len(),
            "{mode:?} {sql}: {got:?}\n{}",
            plan(&ctx, &sql)
        );
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.0, w.0, "{mode:?}: {got:?}");
            assert!(
                (g.1 - w.1).abs() <= 1e-12 * w.1.abs().max(1.0),
                "{mode:?}: {g:?} {w:?}"
            );
        }
        if mode == crate::twm::Mode::Merge {
            // The merge plan: sorted by (series, time), one phase.
            let p = plan(&ctx, &sql);
            assert!(p.contains("SortExec: expr=[k@0 ASC, t@1 ASC]"), "{p}");
            assert!(
                p.contains("mode=SinglePartitioned") || p.contains("mode=Single"),
                "{p}"
            );
        }
    }
    // Without GROUP BY: one group, the whole table.
    let ctx = twm_ctx(crate::twm::Mode::Merge, 4);
    register(&ctx, "w", &rows, 4, false);
    let batch = one(
        &ctx,
        "SELECT count(*) AS n, time_weighted_mean(t, x) AS f FROM w ORDER BY n LIMIT 1",
    );
    assert_eq!(
        batch.column(0).as_primitive::<Int64Type>().value(0),
        rows.len() as i64
    );
}
