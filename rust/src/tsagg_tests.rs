//! Tests of the time-series aggregates ([`crate::m4`], [`crate::twm`]):
//! their rules on hand-made readings, merge properties on random data split
//! at random points, and SQL through a DataFusion session whose tables are
//! spread over several partitions (so partial states are merged).

use std::sync::Arc;

use arrow::array::{
    Array, AsArray, Float64Array, RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow::datatypes::TimestampMicrosecondType;
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::m4::{M4State, Point, M4};
use crate::twm::{merge_runs, Method, Run, TimeWeighted};

/// xorshift64*: deterministic pseudo-random numbers without a dependency
/// (the crate's tests share it).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random readings: times with repeats (equal times), small integer values
/// with ties, now and then NaN, infinities, -0.0.
fn random_points(rng: &mut Rng, n: usize, specials: bool) -> Vec<Point> {
    let mut t = rng.below(1000) as i64;
    (0..n)
        .map(|_| {
            if rng.below(4) != 0 {
                t += 1 + rng.below(5_000_000) as i64;
            }
            let v = match rng.below(if specials { 40 } else { 1 }) {
                1 => f64::NAN,
                2 => f64::INFINITY,
                3 => f64::NEG_INFINITY,
                4 => -0.0,
                _ => rng.below(50) as f64 * 0.25,
            };
            (t, v)
        })
        .collect()
}

fn m4_of(points: &[Point]) -> M4State {
    let mut m4 = M4State::default();
    for &p in points {
        m4.add(p);
    }
    m4
}

fn same_points(a: &[Point], b: &[Point]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits())
}

/// Random cut points splitting `n` items into up to `parts` pieces.
fn cuts(rng: &mut Rng, n: usize, parts: usize) -> Vec<usize> {
    let mut c: Vec<usize> = (0..parts)
        .map(|_| rng.below(n as u64 + 1) as usize)
        .collect();
    c.push(0);
    c.push(n);
    c.sort();
    c
}

#[test]
fn m4_rules() {
    // Series a of the issue: max 5 at 10 and 20 (earliest wins), min 0 at 30
    // and 40.
    let a = [
        (0, 1.0),
        (10, 5.0),
        (20, 5.0),
        (30, 0.0),
        (40, 0.0),
        (50, 2.0),
    ];
    assert!(same_points(
        &m4_of(&a).points(),
        &[(0, 1.0), (10, 5.0), (30, 0.0), (50, 2.0)]
    ));
    // Equal times: first takes the smaller value, last the larger.
    let d = [
        (0, 1.0),
        (0, 7.0),
        (10, 2.0),
        (10, 4.0),
        (10, 3.0),
        (20, 6.0),
    ];
    assert!(same_points(
        &m4_of(&d).points(),
        &[(0, 1.0), (0, 7.0), (20, 6.0)]
    ));
    let g = [(0, 2.0), (0, 5.0), (0, 1.0)];
    assert!(same_points(&m4_of(&g).points(), &[(0, 1.0), (0, 5.0)]));
    // NaN is the largest value; -0.0 is below 0.0.
    let e = [(0, 2.0), (10, f64::NAN), (20, 1.0)];
    assert!(same_points(&m4_of(&e).points(), &e));
    let c = [(0, 0.0), (0, -0.0), (5, 0.0)];
    assert!(same_points(
        &m4_of(&c).points(),
        &[(0, -0.0), (0, 0.0), (5, 0.0)]
    ));
    // One reading: one point; none: an empty list.
    assert!(same_points(&m4_of(&[(7, 3.0)]).points(), &[(7, 3.0)]));
    assert!(m4_of(&[]).points().is_empty());
}

#[test]
fn m4_merge_of_parts_equals_whole() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..500 {
        let n = 1 + rng.below(60) as usize;
        let mut points = random_points(&mut rng, n, true);
        if round % 2 == 1 {
            // Any arrival order.
            for i in (1..points.len()).rev() {
                points.swap(i, rng.below(i as u64 + 1) as usize);
            }
        }
        let whole = m4_of(&points).points();
        let k = 1 + rng.below(5) as usize;
        let c = cuts(&mut rng, points.len(), k);
        let mut merged = M4State::default();
        for w in c.windows(2).rev() {
            for p in m4_of(&points[w[0]..w[1]]).points() {
                merged.add(p);
            }
        }
        assert!(
            same_points(&merged.points(), &whole),
            "round {round}: {points:?}"
        );
    }
}

/// The time-weighted mean by its definition, independently of Run: distinct
/// times with the largest value at each (NaN only if all are), then the
/// area of the piecewise function over the span.
fn brute_mean(points: &[Point], method: Method) -> Option<f64> {
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.0);
    let mut distinct: Vec<Point> = Vec::new();
    for (t, v) in sorted {
        match distinct.last_mut() {
            Some(last) if last.0 == t => {
                if last.1.is_nan() || (!v.is_nan() && v > last.1) {
                    last.1 = v;
                }
            }
            _ => distinct.push((t, v)),
        }
    }
    let (first, last) = (distinct.first()?, distinct.last()?);
    if first.0 == last.0 {
        return Some(first.1);
    }
    let area: f64 = distinct
        .windows(2)
        .map(|w| {
            let span = (w[1].0 - w[0].0) as f64;
            match method {
                Method::ForwardFill => w[0].1 * span,
                Method::Linear => (w[0].1 + w[1].1) / 2.0 * span,
            }
        })
        .sum();
    Some(area / (last.0 - first.0) as f64)
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

fn sorted(points: &[Point]) -> Vec<Point> {
    let mut p = points.to_vec();
    p.sort_by_key(|p| p.0);
    p
}

#[test]
fn time_weighted_rules() {
    let run = |p: &[Point], m| Run::from_sorted(&sorted(p), m).unwrap();
    let a = [
        (0, 1.0),
        (10, 5.0),
        (20, 5.0),
        (30, 0.0),
        (40, 0.0),
        (50, 2.0),
    ];
    assert_eq!(run(&a, Method::ForwardFill).mean(), 2.2);
    assert_eq!(run(&a, Method::Linear).mean(), 2.3);
    // Equal times count once, with their largest value.
    let d = [
        (0, 1.0),
        (0, 7.0),
        (10, 2.0),
        (10, 4.0),
        (10, 3.0),
        (20, 6.0),
    ];
    assert_eq!(run(&d, Method::ForwardFill).mean(), 5.5);
    assert_eq!(run(&d, Method::Linear).mean(), 5.25);
    let state = run(&d, Method::ForwardFill);
    assert_eq!(
        (
            state.first_value,
            state.first_span,
            state.last_span,
            state.area
        ),
        (7.0, 10, 10, 110.0)
    );
    // A NaN loses a tie to a number, but not a segment.
    let b = [(0, 1.0), (0, f64::NAN), (10, 3.0)];
    assert_eq!(run(&b, Method::ForwardFill).mean(), 1.0);
    assert_eq!(run(&b, Method::Linear).mean(), 2.0);
    let e = [(0, 2.0), (10, f64::NAN), (20, 1.0)];
    assert!(run(&e, Method::ForwardFill).mean().is_nan());
    // One time: its (largest) value.
    let g = [(0, 2.0), (0, 5.0), (0, 1.0)];
    assert_eq!(run(&g, Method::Linear).mean(), 5.0);
    assert_eq!(run(&g, Method::Linear).first_span, 0);
    assert!(Run::from_sorted(&[], Method::Linear).is_none());
    // Infinities by IEEE arithmetic.
    let h = [(0, 2.0), (10, f64::NEG_INFINITY), (20, f64::INFINITY)];
    assert_eq!(run(&h, Method::ForwardFill).mean(), f64::NEG_INFINITY);
    assert!(run(&h, Method::Linear).mean().is_nan());
}

#[test]
fn time_weighted_matches_its_definition() {
    let mut rng = Rng(42);
    for round in 0..300 {
        let n = 1 + rng.below(80) as usize;
        let points = random_points(&mut rng, n, round % 3 == 0);
        for method in [Method::ForwardFill, Method::Linear] {
            let got = Run::from_sorted(&sorted(&points), method).unwrap().mean();
            let want = brute_mean(&points, method).unwrap();
            assert!(close(got, want, 1e-12), "round {round}: {got} != {want}");
        }
    }
}

#[test]
fn time_weighted_runs_merge_like_the_whole() {
    let mut rng = Rng(7);
    for round in 0..1000 {
        // Finite values: the merge adds areas in another order, and NaN or
        // infinities are compared by the rules test.
        let n = 1 + rng.below(60) as usize;
        let points = sorted(&random_points(&mut rng, n, false));
        for method in [Method::ForwardFill, Method::Linear] {
            let whole = Run::from_sorted(&points, method).unwrap();
            // Cuts may fall inside a run of equal times: the parts then
            // touch at that time.
            let k = 1 + rng.below(6) as usize;
            let c = cuts(&mut rng, points.len(), k);
            let mut parts: Vec<Run> = c
                .windows(2)
                .filter_map(|w| Run::from_sorted(&points[w[0]..w[1]], method))
                .collect();
            // In any arrival order.
            for i in (1..parts.len()).rev() {
                parts.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let merged = merge_runs(&mut parts, method, "test").unwrap().unwrap();
            let ctx = format!("round {round} {method:?}: {points:?}\n{whole:?}\n{merged:?}");
            assert_eq!(
                (
                    merged.first_time,
                    merged.first_span,
                    merged.last_time,
                    merged.last_span
                ),
                (
                    whole.first_time,
                    whole.first_span,
                    whole.last_time,
                    whole.last_span
                ),
                "{ctx}"
            );
            assert_eq!(merged.first_value, whole.first_value, "{ctx}");
            assert_eq!(merged.last_value, whole.last_value, "{ctx}");
            assert!(close(merged.area, whole.area, 1e-12), "{ctx}");
            assert!(close(merged.mean(), whole.mean(), 1e-12), "{ctx}");
        }
    }
}

#[test]
fn overlapping_runs_are_an_error_not_a_guess() {
    let a = Run::from_sorted(&[(0, 1.0), (20, 2.0)], Method::ForwardFill).unwrap();
    let b = Run::from_sorted(&[(10, 1.0), (30, 2.0)], Method::ForwardFill).unwrap();
    let err = merge_runs(&mut [b, a], Method::ForwardFill, "time_weighted_mean")
        .unwrap_err()
        .to_string();
    assert!(err.contains("overlap in time"), "{err}");
    assert!(err.contains("[0, 20] and [10, 30]"), "{err}");
}

// --- SQL through a session -------------------------------------------------

fn utc() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("+00:00")))
}

/// A session with m4 and the time-weighted functions, and a table `t(s,
/// time, v)` of `rows` spread round-robin over `partitions` partitions.
fn session(rows: &[(&str, i64, Option<f64>)], partitions: usize) -> SessionContext {
    let schema = Arc::new(Schema::new(vec![
        Field::new("s", DataType::Utf8, false),
        Field::new("time", utc(), false),
        Field::new("v", DataType::Float64, true),
    ]));
    let mut parts = vec![Vec::new(); partitions];
    for (i, chunk) in rows.chunks(7).enumerate() {
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from_iter_values(chunk.iter().map(|r| r.0))),
                Arc::new(
                    TimestampMicrosecondArray::from_iter_values(chunk.iter().map(|r| r.1))
                        .with_timezone("+00:00"),
                ),
                Arc::new(Float64Array::from_iter(chunk.iter().map(|r| r.2))),
            ],
        )
        .unwrap();
        parts[i % partitions].push(batch);
    }
    let ctx = SessionContext::new_with_config(
        datafusion::prelude::SessionConfig::new().with_target_partitions(partitions),
    );
    ctx.register_udaf(M4::udaf());
    ctx.register_udaf(TimeWeighted::mean_udaf());
    ctx.register_udaf(TimeWeighted::state_udaf());
    ctx.register_table("t", Arc::new(MemTable::try_new(schema, parts).unwrap()))
        .unwrap();
    ctx
}

fn query(ctx: &SessionContext, sql: &str) -> datafusion::common::Result<Vec<RecordBatch>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async { ctx.sql(sql).await?.collect().await })
}

fn one_batch(ctx: &SessionContext, sql: &str) -> RecordBatch {
    let batches = query(ctx, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap()
}

fn m4_column(batch: &RecordBatch, col: usize) -> Vec<Vec<Point>> {
    let list = batch.column(col).as_list::<i32>();
    (0..list.len())
        .map(|i| {
            let item = list.value(i);
            let s = item.as_any().downcast_ref::<StructArray>().unwrap();
            let t = s.column(0).as_primitive::<TimestampMicrosecondType>();
            let v = s.column(1).as_primitive::<Float64Type>();
            (0..s.len()).map(|j| (t.value(j), v.value(j))).collect()
        })
        .collect()
}

/// Random rows over 5 series, in random order, with nulls.
fn random_rows(rng: &mut Rng, n: usize) -> Vec<(&'static str, i64, Option<f64>)> {
    const SERIES: [&str; 5] = ["a", "b", "c", "d", "e"];
    let mut rows: Vec<_> = (0..n)
        .map(|_| {
            let v = match rng.below(12) {
                0 => None,
                _ => Some(rng.below(40) as f64 * 0.5),
            };
            (
                SERIES[rng.below(5) as usize],
                1_700_000_000_000_000 + rng.below(3_600) as i64 * 1_000_000,
                v,
            )
        })
        .collect();
    for i in (1..rows.len()).rev() {
        rows.swap(i, rng.below(i as u64 + 1) as usize);
    }
    rows
}

#[test]
fn sql_partial_aggregation_is_exact() {
    let mut rng = Rng(99);
    let rows = random_rows(&mut rng, 700);
    let sql = "SELECT s, m4(time, v), time_weighted_mean(time, v), \
               time_weighted_mean(time, v, 'linear') FROM t GROUP BY s ORDER BY s";
    let one = one_batch(&session(&rows, 1), sql);
    let many = one_batch(&session(&rows, 4), sql);
    assert_eq!(one.num_rows(), 5);
    assert_eq!(m4_column(&one, 1), m4_column(&many, 1));
    for col in [2, 3] {
        let (a, b) = (
            one.column(col).as_primitive::<Float64Type>(),
            many.column(col).as_primitive::<Float64Type>(),
        );
        for i in 0..a.len() {
            assert_eq!(a.value(i), b.value(i), "column {col} row {i}");
        }
    }
    // Against the definitions, series by series.
    for (i, s) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        let points: Vec<Point> = rows
            .iter()
            .filter(|r| r.0 == *s && r.2.is_some())
            .map(|r| (r.1, r.2.unwrap()))
            .collect();
        assert_eq!(m4_column(&many, 1)[i], m4_of(&points).points());
        let ff = many.column(2).as_primitive::<Float64Type>().value(i);
        let lin = many.column(3).as_primitive::<Float64Type>().value(i);
        assert!(close(
            ff,
            brute_mean(&points, Method::ForwardFill).unwrap(),
            1e-12
        ));
        assert!(close(
            lin,
            brute_mean(&points, Method::Linear).unwrap(),
            1e-12
        ));
    }
}

#[test]
fn sql_states_merge_into_wider_buckets() {
    let mut rng = Rng(5);
    let rows = random_rows(&mut rng, 900);
    let ctx = session(&rows, 3);
    let direct = one_batch(
        &ctx,
        "SELECT s, m4(time, v), time_weighted_mean(time, v), \
         time_weighted_mean(time, v, 'linear') FROM t GROUP BY s ORDER BY s",
    );
    // Per-minute states, then merged per series (the rollup's path).
    let merged = one_batch(
        &ctx,
        "SELECT s, m4(m), time_weighted_mean(f), time_weighted_mean(l, 'LINEAR') FROM ( \
           SELECT s, date_bin(INTERVAL '1 minute', time) AS b, m4(time, v) AS m, \
                  time_weighted_state(time, v) AS f, \
                  time_weighted_state(time, v, 'linear') AS l \
           FROM t GROUP BY s, b) GROUP BY s ORDER BY s",
    );
    assert_eq!(m4_column(&direct, 1), m4_column(&merged, 1));
    for col in [2, 3] {
        let (a, b) = (
            direct.column(col).as_primitive::<Float64Type>(),
            merged.column(col).as_primitive::<Float64Type>(),
        );
        for i in 0..a.len() {
            assert!(close(a.value(i), b.value(i), 1e-12), "column {col} row {i}");
        }
    }
    // time_weighted_state of states is one run.
    let states = one_batch(
        &ctx,
        "SELECT s, time_weighted_state(f) FROM (SELECT s, date_bin(INTERVAL '1 minute', \
         time) AS b, time_weighted_state(time, v) AS f FROM t GROUP BY s, b) GROUP BY s",
    );
    let list = states.column(1).as_list::<i32>();
    assert!((0..list.len()).all(|i| list.value(i).len() == 1));
    let first = list.value(0);
    let runs = first.as_any().downcast_ref::<StructArray>().unwrap();
    assert!(runs.column(0).as_primitive::<Int64Type>().value(0) >= 1_700_000_000_000_000);
}

#[test]
fn sql_nulls_and_empty_groups() {
    let rows = [("a", 0, None), ("a", 10, None), ("b", 5, Some(3.0))];
    let ctx = session(&rows, 2);
    let batch = one_batch(
        &ctx,
        "SELECT s, m4(time, v), time_weighted_mean(time, v), time_weighted_state(time, v) \
         FROM t GROUP BY s ORDER BY s",
    );
    assert_eq!(m4_column(&batch, 1), vec![vec![], vec![(5, 3.0)]]);
    let means = batch.column(2).as_primitive::<Float64Type>();
    assert!(means.is_null(0));
    assert_eq!(means.value(1), 3.0);
    let states = batch.column(3).as_list::<i32>();
    assert_eq!((states.value(0).len(), states.value(1).len()), (0, 1));
}

#[test]
fn sql_wrong_arguments_are_named() {
    let ctx = session(&[("a", 0, Some(1.0))], 1);
    let err = |sql: &str| match query(&ctx, sql) {
        Ok(_) => panic!("{sql} succeeded"),
        Err(e) => e.to_string(),
    };
    let e = err("SELECT m4(v) FROM t");
    assert!(e.contains("m4 takes (time, value)"), "{e}");
    let e = err("SELECT m4(time, s) FROM t");
    assert!(e.contains("m4 needs a numeric value, not Utf8"), "{e}");
    let e = err("SELECT time_weighted_mean(time, v, 'bogus') FROM t");
    assert!(
        e.contains("method must be 'forward_fill' or 'linear', not \"bogus\""),
        "{e}"
    );
    let e = err("SELECT time_weighted_mean(time, v, s) FROM t");
    assert!(e.contains("the method must be a string literal"), "{e}");
    let e = err("SELECT time_weighted_mean(v) FROM t");
    assert!(
        e.contains("time_weighted_mean takes (time, value [, method])"),
        "{e}"
    );
    let e = err("SELECT time_weighted_state(time, v, 'linear', 1) FROM t");
    assert!(
        e.contains("time_weighted_state takes (time, value [, method])"),
        "{e}"
    );
    // Overlapping states (two series' runs in one group).
    let ctx = session(
        &[
            ("a", 0, Some(1.0)),
            ("a", 20, Some(2.0)),
            ("b", 10, Some(1.0)),
            ("b", 30, Some(1.0)),
        ],
        1,
    );
    let e = match query(
        &ctx,
        "SELECT time_weighted_mean(st) FROM (SELECT s, time_weighted_state(time, v) st \
         FROM t GROUP BY s)",
    ) {
        Ok(_) => panic!("overlapping states merged"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("overlap in time"), "{e}");
}
