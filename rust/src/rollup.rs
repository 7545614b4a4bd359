//! What a materialized rollup is made of (SPEC §8), in DataFusion's terms:
//! the time bucket of its `GROUP BY`, the aggregates it stores, and how a
//! `CREATE MATERIALIZED ROLLUP … AS SELECT` is read into that shape
//! ([`describe`]). The routing of queries to rollups is [`crate::routing`].
//!
//! A rollup groups a raw table's rows by some of its columns and one time
//! bucket of its time column, and stores per group one mergeable state per
//! aggregate: `count(*)`, `count(x)`, `sum`, `min`, `max`, `first_value(x
//! ORDER BY time)`, `last_value(x ORDER BY time)`, `m4(time, x)` and
//! `time_weighted_mean(time, x [, method])` (whose state is
//! `time_weighted_state`), and for `avg(x)` the average beside `sum(x)` and
//! `count(x)`. C++ keeps the definition in the rollup table's properties
//! (the layout Timelake 0.7 writes) and does the refreshes; this module only
//! reads SQL.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, LogicalPlan, TableScan};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use serde_json::{json, Value};

use crate::error::{from_datafusion, Phase, TlError, TlResult};
use crate::provider::TimelakeTable;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A time bucket: fixed widths (`time_bucket(INTERVAL '15 minutes', t)`,
/// `date_trunc('hour', t)`, weeks) or whole months (`INTERVAL '1 month'`,
/// `date_trunc('month' | 'quarter' | 'year', t)`), each from an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    Fixed { width_us: i64, origin_us: i64 },
    Months { months: i64, origin_us: i64 },
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil (year, month 1-12) of a day since 1970-01-01.
fn civil_month(days: i64) -> (i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m)
}

/// Months since 1970-01 of the month holding `micros`.
fn month_index(micros: i64) -> i64 {
    let (y, m) = civil_month(micros.div_euclid(MICROS_PER_DAY));
    (y - 1970) * 12 + (m - 1)
}

/// The first microsecond of month `index` (months since 1970-01).
fn month_start(index: i64) -> i64 {
    let y = 1970 + index.div_euclid(12);
    let m = index.rem_euclid(12) + 1;
    days_from_civil(y, m, 1) * MICROS_PER_DAY
}

impl Bucket {
    /// The start of the bucket holding `t` (microseconds since the epoch).
    pub fn floor(&self, t: i64) -> i64 {
        match *self {
            Bucket::Fixed {
                width_us,
                origin_us,
            } => origin_us + (t - origin_us).div_euclid(width_us) * width_us,
            Bucket::Months { months, origin_us } => {
                let origin = month_index(origin_us);
                let k = (month_index(t) - origin).div_euclid(months);
                month_start(origin + k * months)
            }
        }
    }

    /// The smallest bucket start at or after `t`.
    pub fn ceil(&self, t: i64) -> i64 {
        let f = self.floor(t);
        if f == t {
            t
        } else {
            self.next(f)
        }
    }

    /// The start of the bucket after the one starting at `start`.
    pub fn next(&self, start: i64) -> i64 {
        match *self {
            Bucket::Fixed { width_us, .. } => start.saturating_add(width_us),
            Bucket::Months { months, .. } => month_start(month_index(start) + months),
        }
    }

    /// Whether every bucket of `self` lies inside one bucket of `outer`, so
    /// that rows of `self` re-aggregate into `outer` exactly.
    pub fn nests_in(&self, outer: &Bucket) -> bool {
        match (*self, *outer) {
            (
                Bucket::Fixed {
                    width_us: w,
                    origin_us: o,
                },
                Bucket::Fixed {
                    width_us: ow,
                    origin_us: oo,
                },
            ) => ow % w == 0 && (oo - o).rem_euclid(w) == 0,
            // Month boundaries are midnights (UTC): a fixed width nests when
            // it divides a day and its buckets start at midnight.
            (
                Bucket::Fixed {
                    width_us: w,
                    origin_us: o,
                },
                Bucket::Months { origin_us: oo, .. },
            ) => MICROS_PER_DAY % w == 0 && o.rem_euclid(w) == 0 && oo.rem_euclid(w) == 0,
            (
                Bucket::Months {
                    months: m,
                    origin_us: o,
                },
                Bucket::Months {
                    months: om,
                    origin_us: oo,
                },
            ) => om % m == 0 && (month_index(oo) - month_index(o)).rem_euclid(m) == 0,
            (Bucket::Months { .. }, Bucket::Fixed { .. }) => false,
        }
    }

    /// A width to compare buckets by (months as 30 days).
    pub fn approx_width_us(&self) -> i64 {
        match *self {
            Bucket::Fixed { width_us, .. } => width_us,
            Bucket::Months { months, .. } => months.saturating_mul(30 * MICROS_PER_DAY),
        }
    }

    pub fn to_json(self) -> Value {
        match self {
            Bucket::Fixed {
                width_us,
                origin_us,
            } => json!({"kind": "fixed", "width_us": width_us, "origin_us": origin_us}),
            Bucket::Months { months, origin_us } => {
                json!({"kind": "months", "months": months, "origin_us": origin_us})
            }
        }
    }

    pub fn from_json(v: &Value) -> Option<Bucket> {
        let origin_us = v.get("origin_us").and_then(Value::as_i64).unwrap_or(0);
        match v.get("kind").and_then(Value::as_str)? {
            "fixed" => {
                let width_us = v.get("width_us").and_then(Value::as_i64)?;
                (width_us > 0).then_some(Bucket::Fixed {
                    width_us,
                    origin_us,
                })
            }
            "months" => {
                let months = v.get("months").and_then(Value::as_i64)?;
                (months > 0).then_some(Bucket::Months { months, origin_us })
            }
            _ => None,
        }
    }
}

/// Microseconds of a timestamp literal, whatever its unit; `None` for other
/// values (and nanoseconds that are not whole microseconds when `exact`).
pub fn timestamp_micros(value: &ScalarValue, exact: bool) -> Option<i64> {
    match value {
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000),
        ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1_000),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampNanosecond(Some(v), _) => {
            (!exact || v % 1000 == 0).then(|| v.div_euclid(1000))
        }
        _ => None,
    }
}

/// Strips casts (any number) from `expr`.
pub fn strip_casts(expr: &Expr) -> &Expr {
    match expr {
        Expr::Cast(c) => strip_casts(&c.expr),
        Expr::TryCast(c) => strip_casts(&c.expr),
        other => other,
    }
}

/// The name of `expr` when it is a column, under casts or not.
pub fn column_of(expr: &Expr) -> Option<&str> {
    match strip_casts(expr) {
        Expr::Column(c) => Some(c.name.as_str()),
        _ => None,
    }
}

/// Folds constant expressions (casts of literals, `now()`) into literals.
pub fn fold(expr: Expr, simplifier: &ExprSimplifier) -> Expr {
    simplifier.simplify(expr.clone()).unwrap_or(expr)
}

/// A simplifier over an empty schema with `now()` fixed at `start`.
pub fn constant_folder(start: DateTime<Utc>) -> ExprSimplifier {
    let context = SimplifyContext::builder()
        .with_schema(Arc::new(DFSchema::empty()))
        .with_query_execution_start_time(Some(start))
        .build();
    ExprSimplifier::new(context)
}

/// The bucket of a `GROUP BY` expression over the time column `time`:
/// `date_bin(interval, time [, origin])` (which `time_bucket` is) or
/// `date_trunc(unit, time)`. Arguments must fold to literals.
pub fn bucket_of(expr: &Expr, time: &str, folder: &ExprSimplifier) -> Option<Bucket> {
    let expr = match expr {
        Expr::Alias(a) => a.expr.as_ref(),
        other => other,
    };
    let Expr::ScalarFunction(f) = expr else {
        return None;
    };
    let literal = |e: &Expr| match fold(e.clone(), folder) {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    };
    match f.func.name() {
        "date_bin" => {
            let (stride, source, origin) = match f.args.as_slice() {
                [s, t] => (s, t, None),
                [s, t, o] => (s, t, Some(o)),
                _ => return None,
            };
            if column_of(source)? != time {
                return None;
            }
            let origin_us = match origin {
                None => 0,
                Some(o) => timestamp_micros(&literal(o)?, true)?,
            };
            match literal(stride)? {
                ScalarValue::IntervalMonthDayNano(Some(v)) => {
                    if v.months != 0 {
                        (v.days == 0 && v.nanoseconds == 0 && v.months > 0).then_some(
                            Bucket::Months {
                                months: i64::from(v.months),
                                origin_us,
                            },
                        )
                    } else {
                        if v.nanoseconds % 1000 != 0 {
                            return None;
                        }
                        let width_us = i64::from(v.days) * MICROS_PER_DAY + v.nanoseconds / 1000;
                        (width_us > 0).then_some(Bucket::Fixed {
                            width_us,
                            origin_us,
                        })
                    }
                }
                ScalarValue::IntervalDayTime(Some(v)) => {
                    let width_us =
                        i64::from(v.days) * MICROS_PER_DAY + i64::from(v.milliseconds) * 1000;
                    (width_us > 0).then_some(Bucket::Fixed {
                        width_us,
                        origin_us,
                    })
                }
                ScalarValue::IntervalYearMonth(Some(m)) if m > 0 => Some(Bucket::Months {
                    months: i64::from(m),
                    origin_us,
                }),
                _ => None,
            }
        }
        "date_trunc" | "datetrunc" => {
            let [unit, source] = f.args.as_slice() else {
                return None;
            };
            if column_of(source)? != time {
                return None;
            }
            let unit = match literal(unit)? {
                ScalarValue::Utf8(Some(s))
                | ScalarValue::LargeUtf8(Some(s))
                | ScalarValue::Utf8View(Some(s)) => s.to_ascii_lowercase(),
                _ => return None,
            };
            let fixed = |width_us: i64, origin_us: i64| {
                Some(Bucket::Fixed {
                    width_us,
                    origin_us,
                })
            };
            match unit.as_str() {
                "second" => fixed(1_000_000, 0),
                "minute" => fixed(60_000_000, 0),
                "hour" => fixed(3_600_000_000, 0),
                "day" => fixed(MICROS_PER_DAY, 0),
                // Weeks start on Monday; 1970-01-05 was one.
                "week" => fixed(7 * MICROS_PER_DAY, 4 * MICROS_PER_DAY),
                "month" => Some(Bucket::Months {
                    months: 1,
                    origin_us: 0,
                }),
                "quarter" => Some(Bucket::Months {
                    months: 3,
                    origin_us: 0,
                }),
                "year" => Some(Bucket::Months {
                    months: 12,
                    origin_us: 0,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The name a user wrote of a bucket function over the time column `time`
/// (`time_bucket`, `date_bin` or `date_trunc`) that `bucket_of` did not take:
/// its width, unit or origin is not one a rollup stores.
fn bucket_function_of(expr: &Expr, time: &str) -> Option<&'static str> {
    let expr = match expr {
        Expr::Alias(a) => a.expr.as_ref(),
        other => other,
    };
    let Expr::ScalarFunction(f) = expr else {
        return None;
    };
    let name = match f.func.name() {
        "date_bin" => "time_bucket/date_bin",
        "date_trunc" | "datetrunc" => "date_trunc",
        _ => return None,
    };
    let source = f.args.get(1)?;
    (column_of(source)? == time).then_some(name)
}

/// An aggregate a rollup stores, by the names Timelake 0.7 gives them in
/// `timelake.rollup-aggregates` ("count" without a column is `count(*)`;
/// "time_weighted_mean:linear" the linear method).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAggregate {
    /// The rollup column holding it.
    pub name: String,
    /// "count", "sum", "min", "max", "avg", "first_value", "last_value",
    /// "m4", "time_weighted_mean" or "time_weighted_mean:linear".
    pub function: String,
    /// The raw column it aggregates (none: `count(*)`).
    pub column: Option<String>,
}

/// An aggregate function call of a rollup definition or of a query, with
/// its argument reduced to a column: `(function, column)`, the function
/// named as in [`StoredAggregate`]. `None` when it is not one a rollup
/// stores; then `why` says what is wrong.
pub fn aggregate_of(expr: &Expr, time: &str) -> Result<(String, Option<String>), String> {
    let expr = match expr {
        Expr::Alias(a) => a.expr.as_ref(),
        other => other,
    };
    let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else {
        return Err(format!("{expr} is not an aggregate"));
    };
    let name = func.name().to_ascii_lowercase();
    if params.distinct {
        return Err(format!("{expr}: DISTINCT cannot be rolled up"));
    }
    if params.filter.is_some() {
        return Err(format!("{expr}: FILTER (WHERE …) cannot be rolled up"));
    }
    if matches!(
        params.null_treatment,
        Some(datafusion::logical_expr::expr::NullTreatment::IgnoreNulls)
    ) {
        return Err(format!("{expr}: IGNORE NULLS cannot be rolled up"));
    }
    let by_time = |p: &datafusion::logical_expr::expr::AggregateFunctionParams| matches!(p.order_by.as_slice(), [s] if s.asc && column_of(&s.expr) == Some(time));
    let args = &params.args;
    let column = |e: &Expr| column_of(e).map(str::to_string);
    let no_order = params.order_by.is_empty();
    let bad = || {
        format!(
            "{expr} isn't an aggregate a rollup stores: count(*), count(x), sum, min, max, avg, \
             first_value(x ORDER BY {time}), last_value(x ORDER BY {time}), m4({time}, x) or \
             time_weighted_mean({time}, x [, method]) of a column x"
        )
    };
    match (name.as_str(), args.as_slice()) {
        ("count", [arg]) if no_order => match arg {
            Expr::Literal(v, _) if !v.is_null() => Ok(("count".into(), None)),
            e => column(e).map(|c| ("count".into(), Some(c))).ok_or_else(bad),
        },
        ("count", []) if no_order => Ok(("count".into(), None)),
        ("sum" | "min" | "max" | "avg", [arg]) if no_order => {
            column(arg).map(|c| (name.clone(), Some(c))).ok_or_else(bad)
        }
        ("first_value" | "last_value", [arg]) if by_time(params) => {
            column(arg).map(|c| (name.clone(), Some(c))).ok_or_else(bad)
        }
        ("m4", [t, v]) if no_order && column_of(t) == Some(time) => {
            column(v).map(|c| ("m4".into(), Some(c))).ok_or_else(bad)
        }
        ("time_weighted_mean", [t, v, rest @ ..]) if no_order && column_of(t) == Some(time) => {
            let method = match rest {
                [] => "forward_fill".to_string(),
                [Expr::Literal(
                    ScalarValue::Utf8(Some(m))
                    | ScalarValue::LargeUtf8(Some(m))
                    | ScalarValue::Utf8View(Some(m)),
                    _,
                )] => m.to_ascii_lowercase(),
                _ => return Err(format!("{expr}: the method must be a string literal")),
            };
            let function = match method.as_str() {
                "forward_fill" => "time_weighted_mean".to_string(),
                "linear" => "time_weighted_mean:linear".to_string(),
                other => {
                    return Err(format!(
                        "{expr}: unknown method '{other}' (forward_fill or linear)"
                    ))
                }
            };
            column(v).map(|c| (function, Some(c))).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

/// The column name Timelake 0.7 gives an unaliased aggregate: "count" for
/// `count(*)`, else `<function>_<column>` (the method left out).
pub fn default_name(function: &str, column: Option<&str>) -> String {
    let f = function.split(':').next().unwrap_or(function);
    match column {
        None => "count".to_string(),
        Some(c) => format!("{f}_{c}"),
    }
}

/// The scan of a Timelake table below `plan`, through filters and aliases
/// only: `(scan, filters)`, with the WHERE conjuncts met on the way.
pub fn table_scan_below(plan: &LogicalPlan) -> Option<(&TableScan, Vec<&Expr>)> {
    let mut filters = Vec::new();
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::Filter(f) => {
                filters.push(&f.predicate);
                node = f.input.as_ref();
            }
            LogicalPlan::SubqueryAlias(a) => node = a.input.as_ref(),
            LogicalPlan::TableScan(scan) => return Some((scan, filters)),
            _ => return None,
        }
    }
}

/// The provider of a scan when it is a Timelake table (downcast it with
/// [`as_timelake`]).
pub fn timelake_table(scan: &TableScan) -> Option<Arc<dyn TableProvider>> {
    let provider = datafusion::datasource::source_as_provider(&scan.source).ok()?;
    as_timelake(&provider)?;
    Some(provider)
}

/// A provider as a Timelake table, if it is one.
pub fn as_timelake(provider: &Arc<dyn TableProvider>) -> Option<&TimelakeTable> {
    provider.downcast_ref::<TimelakeTable>()
}

/// Reads `CREATE MATERIALIZED ROLLUP … AS <select>`'s select: plans it
/// (unanalyzed, so that an explicit cast is told from one DataFusion would
/// add) and returns its shape as JSON for C++:
///
/// ```json
/// {"source": {"schema": "iot", "table": "readings"}, "time_column": "time",
///  "bucket": {"name": "bucket", "kind": "fixed", "width_us": 3600000000, "origin_us": 0},
///  "groups": ["device_id"],
///  "aggregates": [{"name": "avg_temp", "function": "avg", "column": "temp"}, …],
///  "columns": ["device_id", "bucket", "avg_temp", …]}
/// ```
///
/// Errors (TL_INVALID) name the part that cannot be rolled up.
pub async fn describe(ctx: &SessionContext, select: &str) -> TlResult<String> {
    let state = ctx.state();
    let plan = state
        .create_logical_plan(select)
        .await
        .map_err(|e| from_datafusion(&e, Phase::Planning))?;
    let invalid = |why: String| TlError::invalid(format!("a rollup {why}"));
    let LogicalPlan::Projection(projection) = &plan else {
        return Err(invalid(
            "is SELECT <columns>, time_bucket(…) AS bucket, <aggregates> FROM <table> \
             GROUP BY …, without ORDER BY, LIMIT or set operations"
                .into(),
        ));
    };
    let LogicalPlan::Aggregate(aggregate) = projection.input.as_ref() else {
        return Err(invalid(
            "needs GROUP BY <columns>, time_bucket(<width>, <time column>)".into(),
        ));
    };
    let Some((scan, filters)) = table_scan_below(&aggregate.input) else {
        return Err(invalid("reads one table (no joins or subqueries)".into()));
    };
    if !filters.is_empty() {
        return Err(invalid(
            "stores every row of its table: WHERE isn't supported in a rollup (query the \
             rollup with a WHERE on its grouping columns instead)"
                .into(),
        ));
    }
    let Some(provider) = timelake_table(scan) else {
        return Err(invalid(format!(
            "reads a Timelake table, not {}",
            scan.table_name
        )));
    };
    let table = as_timelake(&provider).expect("checked by timelake_table");
    let Some(time) = table.time_column() else {
        return Err(invalid(format!(
            "reads a time-series table: {}.{} has no time column",
            table.schema_name(),
            table.table_name()
        )));
    };
    let folder = constant_folder(Utc::now());

    // GROUP BY: plain columns and one bucket of the time column.
    let mut groups = Vec::new();
    let mut bucket = None;
    for g in &aggregate.group_expr {
        if let Some(b) = bucket_of(g, &time, &folder) {
            if bucket.is_some() {
                return Err(invalid("groups by one time bucket only".into()));
            }
            bucket = Some((b, g.clone()));
            continue;
        }
        match g {
            Expr::Column(c) if c.name != time => groups.push(c.name.clone()),
            Expr::Column(_) => {
                return Err(invalid(format!(
                    "groups by a bucket of {time}, not by {time} itself"
                )))
            }
            other => {
                if let Some(function) = bucket_function_of(other, &time) {
                    return Err(invalid(format!(
                        "buckets by {function}(…, {time}), which is neither a fixed width nor whole \
                         months: the width must be a constant positive interval of whole \
                         seconds, minutes, hours, days or weeks (INTERVAL '1 hour') or of \
                         months alone (INTERVAL '3 months'), never both, any origin a \
                         constant, and date_trunc's unit second, minute, hour, day, week, \
                         month, quarter or year"
                    )));
                }
                return Err(invalid(format!(
                    "groups by columns and time_bucket(<width>, {time}) (or date_trunc), not \
                     by {other}"
                )));
            }
        }
    }
    let Some((bucket, bucket_expr)) = bucket else {
        return Err(invalid(format!(
            "needs GROUP BY time_bucket(<width>, {time}) (an interval of whole \
             microseconds or months, origin a literal) or date_trunc('<unit>', {time})"
        )));
    };
    if let Bucket::Fixed { width_us, .. } = bucket {
        if width_us % 1_000_000 != 0 {
            return Err(invalid(
                "bucket width must be whole seconds (as Timelake 0.7 stores it)".into(),
            ));
        }
    }

    // SELECT: the grouping columns, the bucket and the aggregates, by name.
    let mut columns = Vec::new();
    let mut aggregates = Vec::new();
    let mut bucket_name = None;
    for e in &projection.expr {
        let (inner, alias) = match e {
            Expr::Alias(a) => (a.expr.as_ref(), Some(a.name.clone())),
            other => (other, None),
        };
        // The projection refers to the aggregate's outputs by column.
        let Expr::Column(c) = inner else {
            return Err(invalid(format!(
                "selects only its grouping columns, the bucket and aggregates, not {inner}"
            )));
        };
        let output = aggregate
            .schema
            .index_of_column(c)
            .map_err(|_| invalid(format!("cannot resolve {c}")))?;
        let n_groups = aggregate.group_expr.len();
        if output < n_groups {
            let g = &aggregate.group_expr[output];
            if g == &bucket_expr {
                let name = alias.unwrap_or_else(|| "bucket".to_string());
                bucket_name = Some(name.clone());
                columns.push(name);
            } else {
                let name = alias.unwrap_or_else(|| c.name.clone());
                if Some(name.as_str()) != column_of(g) {
                    return Err(invalid(format!(
                        "keeps the names of its grouping columns: {} cannot be renamed to \
                         {name}",
                        column_of(g).unwrap_or_default()
                    )));
                }
                columns.push(name);
            }
            continue;
        }
        let aggr = &aggregate.aggr_expr[output - n_groups];
        // The planner's own alias of `count(*)` is no name of the user's.
        let alias = alias.filter(|a| a != "count(*)" && *a != aggr.schema_name().to_string());
        // The unanalyzed plan has no implicit casts yet: a cast here is the
        // user's own.
        if let Expr::AggregateFunction(AggregateFunction { params, .. }) = aggr {
            let has_cast = params
                .args
                .iter()
                .any(|a| matches!(a, Expr::Cast(_) | Expr::TryCast(_)));
            if has_cast {
                return Err(invalid(format!(
                    "stores aggregates of columns: write {aggr} without the CAST (its \
                     argument is converted as the aggregate needs)"
                )));
            }
        }
        let (function, column) = aggregate_of(aggr, &time).map_err(TlError::invalid)?;
        let name = alias.unwrap_or_else(|| default_name(&function, column.as_deref()));
        columns.push(name.clone());
        aggregates.push(json!({"name": name, "function": function, "column": column}));
    }
    let Some(bucket_name) = bucket_name else {
        return Err(invalid(format!(
            "selects its time bucket (… time_bucket(<width>, {time}) AS bucket)"
        )));
    };
    for g in &groups {
        if !columns.contains(g) {
            return Err(invalid(format!(
                "selects every grouping column: {g} is missing"
            )));
        }
    }
    if aggregates.is_empty() {
        return Err(invalid("stores at least one aggregate".into()));
    }
    let mut seen = std::collections::HashSet::new();
    for c in &columns {
        if !seen.insert(c.to_ascii_lowercase()) {
            return Err(invalid(format!(
                "has one column per name: {c} appears twice (name aggregates with AS)"
            )));
        }
    }
    let mut bucket_json = bucket.to_json();
    bucket_json["name"] = json!(bucket_name);
    Ok(json!({
        "source": {"schema": table.schema_name(), "table": table.table_name()},
        "time_column": time,
        "bucket": bucket_json,
        "groups": groups,
        "aggregates": aggregates,
        "columns": columns,
    })
    .to_string())
}

/// Replaces every column named `from` in `expr` by `to` (qualifier and all).
pub fn replace_column(expr: Expr, from: &str, to: &Expr) -> Expr {
    expr.transform_up(|e| match e {
        Expr::Column(c) if c.name == from => Ok(Transformed::yes(to.clone())),
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
    .unwrap_or_else(|_| to.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_floor_and_ceil() {
        let jan = month_start(12 * (2026 - 1970));
        let feb = month_start(12 * (2026 - 1970) + 1);
        assert_eq!(feb - jan, 31 * MICROS_PER_DAY);
        let b = Bucket::Months {
            months: 1,
            origin_us: 0,
        };
        assert_eq!(b.floor(jan + 5), jan);
        assert_eq!(b.ceil(jan + 5), feb);
        assert_eq!(b.ceil(jan), jan);
        assert_eq!(b.floor(jan - 1), month_start(12 * (2026 - 1970) - 1));
        let q = Bucket::Months {
            months: 3,
            origin_us: 0,
        };
        // 2026-05-10 lies in the quarter of 2026-04-01.
        let may = days_from_civil(2026, 5, 10) * MICROS_PER_DAY;
        assert_eq!(q.floor(may), days_from_civil(2026, 4, 1) * MICROS_PER_DAY);
        // Before 1970 too.
        let old = days_from_civil(1969, 12, 31) * MICROS_PER_DAY;
        assert_eq!(b.floor(old), days_from_civil(1969, 12, 1) * MICROS_PER_DAY);
    }

    #[test]
    fn nesting() {
        let hour = Bucket::Fixed {
            width_us: 3_600_000_000,
            origin_us: 0,
        };
        let day = Bucket::Fixed {
            width_us: MICROS_PER_DAY,
            origin_us: 0,
        };
        let half = Bucket::Fixed {
            width_us: 3_600_000_000,
            origin_us: 1_800_000_000,
        };
        let month = Bucket::Months {
            months: 1,
            origin_us: 0,
        };
        let year = Bucket::Months {
            months: 12,
            origin_us: 0,
        };
        let week = Bucket::Fixed {
            width_us: 7 * MICROS_PER_DAY,
            origin_us: 4 * MICROS_PER_DAY,
        };
        assert!(hour.nests_in(&day));
        assert!(!day.nests_in(&hour));
        assert!(!half.nests_in(&day));
        assert!(hour.nests_in(&month));
        assert!(day.nests_in(&week));
        assert!(!week.nests_in(&month));
        assert!(month.nests_in(&year));
        assert!(!year.nests_in(&month));
        assert!(!month.nests_in(&day));
        assert!(hour.nests_in(&hour));
    }
}
