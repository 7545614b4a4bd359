//! Routing (SPEC §8): a `GROUP BY time_bucket(…)` query on a raw table reads
//! the buckets a rollup covers from the rollup and the rest from raw data,
//! and answers exactly what the raw data alone would.
//!
//! An analyzer rule (after type coercion, before the optimizer) matches an
//! `Aggregate` over a scan of a Timelake table that has rollups, through
//! filters only, whose groups are plain columns and one time bucket of the
//! time column, and whose aggregates are ones a rollup stores. C++ answers
//! the table's rollups with what each has not reflected yet (the time ranges
//! of raw files committed or removed since its refresh: "dirty"). Of the
//! rollups whose bucket nests in the query's, whose groups include the
//! query's, and which store every aggregate the query asks, the one with
//! the widest bucket (then fewest groups) answers the query's buckets that
//! lie wholly inside the WHERE's time range and touch no dirty range; the
//! raw aggregate answers the others. Each query bucket comes from exactly
//! one side, so the two results are simply concatenated:
//!
//! ```text
//! Projection (the aggregate's own column names)
//!   Union
//!     Aggregate (the query's)  <- Filter: time outside the rollup's buckets <- the query's input
//!     Projection               <- Aggregate (re-aggregation) <- Filter: bucket in its buckets <- rollup
//! ```
//!
//! Filters on the rollup's grouping columns apply to both sides; any other
//! filter (on a value column) leaves the query as it is, as does a rollup
//! refreshed from a snapshot the raw table no longer descends from.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, TimeUnit};
use chrono::Utc;
use datafusion::catalog::TableProvider;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, ScalarValue, TableReference};
use datafusion::datasource::provider_as_source;
use datafusion::error::Result as DFResult;
use datafusion::functions::expr_fn::nullif;
use datafusion::functions_aggregate::expr_fn::{first_value, last_value, max, min, sum};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    cast, lit, Aggregate, BinaryExpr, EmptyRelation, Expr, ExprSchemable, Filter, LogicalPlan,
    LogicalPlanBuilder, Operator, Projection, Union,
};
use datafusion::optimizer::analyzer::AnalyzerRule;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use serde_json::Value;

use crate::m4::M4;
use crate::provider::TimelakeTable;
use crate::rollup::{
    aggregate_of, as_timelake, bucket_of, column_of, constant_folder, replace_column, strip_casts,
    table_scan_below, timelake_table, timestamp_micros, Bucket, StoredAggregate,
};
use crate::settings::TimelakeOptions;
use crate::twm::TimeWeighted;

#[derive(Debug, Default)]
pub struct RollupRouting;

impl AnalyzerRule for RollupRouting {
    fn name(&self) -> &str {
        "timelake_rollup_routing"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> DFResult<LogicalPlan> {
        let settings = config
            .extensions
            .get::<TimelakeOptions>()
            .map(|o| o.values().clone())
            .unwrap_or_default();
        if settings
            .get("rollup_routing")
            .is_some_and(|v| v.eq_ignore_ascii_case("false"))
        {
            return Ok(plan);
        }
        // One `now()` for the whole query: the bounds computed here and the
        // filters the raw side keeps agree.
        let start = Utc::now();
        plan.transform_up_with_subqueries(|node| {
            Ok(match route(&node, &settings, start) {
                Some(routed) => Transformed::yes(routed),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }
}

/// One rollup of the queried table, as C++ describes it.
#[derive(Debug)]
struct RollupInfo {
    schema: String,
    name: String,
    groups: Vec<String>,
    bucket: Bucket,
    bucket_column: String,
    aggregates: Vec<StoredAggregate>,
    /// Raw time ranges [lo, hi) not reflected (None: unbounded).
    dirty: Vec<(Option<i64>, Option<i64>)>,
}

impl RollupInfo {
    fn stored(&self, function: &str, column: Option<&str>) -> Option<&str> {
        self.aggregates
            .iter()
            .find(|a| a.function == function && a.column.as_deref() == column)
            .map(|a| a.name.as_str())
    }
}

/// Reads the `rollups` answer: routing on or off for the table, and its
/// usable rollups.
fn parse_answer(text: &str) -> Option<(bool, Vec<RollupInfo>)> {
    let v: Value = serde_json::from_str(text).ok()?;
    let routing = v.get("routing").and_then(Value::as_bool).unwrap_or(true);
    let mut out = Vec::new();
    for r in v.get("rollups")?.as_array()? {
        if !r.get("usable").and_then(Value::as_bool).unwrap_or(false) {
            continue;
        }
        let strings = |key: &str| -> Option<Vec<String>> {
            r.get(key)?
                .as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        let aggregates = r
            .get("aggregates")?
            .as_array()?
            .iter()
            .map(|a| {
                Some(StoredAggregate {
                    name: a.get("name")?.as_str()?.to_string(),
                    function: a.get("function")?.as_str()?.to_string(),
                    column: a.get("column").and_then(Value::as_str).map(str::to_string),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let bound = |b: &Value| b.as_i64();
        let dirty = r
            .get("dirty")?
            .as_array()?
            .iter()
            .map(|d| Some((bound(d.get(0)?), bound(d.get(1)?))))
            .collect::<Option<Vec<_>>>()?;
        out.push(RollupInfo {
            schema: r.get("schema")?.as_str()?.to_string(),
            name: r.get("name")?.as_str()?.to_string(),
            groups: strings("groups")?,
            bucket: Bucket::from_json(r.get("bucket")?)?,
            bucket_column: r.get("bucket_column")?.as_str()?.to_string(),
            aggregates,
            dirty,
        });
    }
    Some((routing, out))
}

/// A time range [lo, hi), None for unbounded.
type Range = (Option<i64>, Option<i64>);

/// `whole` minus `holes`, in order.
fn subtract(whole: Range, holes: Vec<Range>) -> Vec<Range> {
    let lo_of = |x: Option<i64>| x.unwrap_or(i64::MIN);
    let hi_of = |x: Option<i64>| x.unwrap_or(i64::MAX);
    let (mut cursor, end) = (lo_of(whole.0), hi_of(whole.1));
    let mut holes: Vec<(i64, i64)> = holes
        .into_iter()
        .map(|(l, h)| (lo_of(l), hi_of(h)))
        .filter(|(l, h)| l < h)
        .collect();
    holes.sort_unstable();
    let mut out = Vec::new();
    for (l, h) in holes {
        if h <= cursor {
            continue;
        }
        if l >= end {
            break;
        }
        if l > cursor {
            out.push((cursor, l));
        }
        cursor = cursor.max(h);
        if cursor >= end {
            break;
        }
    }
    if cursor < end {
        out.push((cursor, end));
    }
    out.into_iter()
        .map(|(l, h)| ((l != i64::MIN).then_some(l), (h != i64::MAX).then_some(h)))
        .collect()
}

/// A timestamp literal of `data_type` (a timestamp) for `micros`.
fn timestamp_literal(micros: i64, data_type: &DataType) -> Option<Expr> {
    let DataType::Timestamp(unit, tz) = data_type else {
        return None;
    };
    let tz = tz.clone();
    let v = match unit {
        TimeUnit::Second => ScalarValue::TimestampSecond(Some(micros.div_euclid(1_000_000)), tz),
        TimeUnit::Millisecond => {
            ScalarValue::TimestampMillisecond(Some(micros.div_euclid(1000)), tz)
        }
        TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(micros), tz),
        TimeUnit::Nanosecond => {
            ScalarValue::TimestampNanosecond(Some(micros.checked_mul(1000)?), tz)
        }
    };
    Some(lit(v))
}

/// `column` in one of `ranges`: OR of `lo <= c AND c < hi`.
fn in_ranges(column: &Expr, data_type: &DataType, ranges: &[Range]) -> Option<Expr> {
    let mut terms = Vec::new();
    for &(lo, hi) in ranges {
        let mut parts = Vec::new();
        if let Some(lo) = lo {
            parts.push(column.clone().gt_eq(timestamp_literal(lo, data_type)?));
        }
        if let Some(hi) = hi {
            parts.push(column.clone().lt(timestamp_literal(hi, data_type)?));
        }
        terms.push(conjunction(parts).unwrap_or(lit(true)));
    }
    Some(terms.into_iter().reduce(Expr::or).unwrap_or(lit(false)))
}

/// Narrows [a, b) (microseconds) by one WHERE conjunct on the time column;
/// false when the conjunct is not a comparison of it with a literal.
fn narrow(conjunct: &Expr, time: &str, a: &mut Option<i64>, b: &mut Option<i64>) -> bool {
    let lower = |a: &mut Option<i64>, v: i64| *a = Some(a.map_or(v, |x| x.max(v)));
    let upper = |b: &mut Option<i64>, v: i64| *b = Some(b.map_or(v, |x| x.min(v)));
    match conjunct {
        Expr::Between(between) if !between.negated => {
            let (Expr::Literal(lo, _), Expr::Literal(hi, _)) =
                (between.low.as_ref(), between.high.as_ref())
            else {
                return false;
            };
            if column_of(&between.expr) != Some(time) || !is_timestamp_cast(&between.expr) {
                return false;
            }
            let (Some(lo), Some(hi)) = (ns_of(lo), ns_of(hi)) else {
                return false;
            };
            lower(a, ceil_us(lo));
            upper(b, hi.div_euclid(1000) + 1);
            true
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, value, op) = match (left.as_ref(), right.as_ref()) {
                (c, Expr::Literal(v, _)) => (c, v, *op),
                (Expr::Literal(v, _), c) => match op.swap() {
                    Some(op) => (c, v, op),
                    None => return false,
                },
                _ => return false,
            };
            if column_of(column) != Some(time) || !is_timestamp_cast(column) {
                return false;
            }
            let Some(v) = ns_of(value) else {
                return false;
            };
            // The column holds microseconds; `v` is in nanoseconds.
            match op {
                Operator::GtEq => lower(a, ceil_us(v)),
                Operator::Gt => lower(a, v.div_euclid(1000) + 1),
                Operator::Lt => upper(b, ceil_us(v)),
                Operator::LtEq => upper(b, v.div_euclid(1000) + 1),
                Operator::Eq if v % 1000 == 0 => {
                    lower(a, v / 1000);
                    upper(b, v / 1000 + 1);
                }
                // No microsecond equals it: an empty range.
                Operator::Eq => {
                    lower(a, i64::MAX);
                    upper(b, i64::MIN);
                }
                _ => return false,
            }
            true
        }
        _ => false,
    }
}

fn ceil_us(ns: i64) -> i64 {
    ns.div_euclid(1000) + i64::from(ns.rem_euclid(1000) != 0)
}

/// Nanoseconds of a timestamp literal.
fn ns_of(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::TimestampNanosecond(Some(n), _) => Some(*n),
        other => timestamp_micros(other, false)?.checked_mul(1000),
    }
}

/// Whether the casts over the time column (if any) only change the unit
/// of a timestamp: comparisons through them compare instants.
fn is_timestamp_cast(expr: &Expr) -> bool {
    match expr {
        Expr::Cast(c) => {
            matches!(c.field.data_type(), DataType::Timestamp(_, _)) && is_timestamp_cast(&c.expr)
        }
        Expr::TryCast(c) => {
            matches!(c.field.data_type(), DataType::Timestamp(_, _)) && is_timestamp_cast(&c.expr)
        }
        Expr::Column(_) => true,
        _ => false,
    }
}

/// The query's aggregate, reduced: function (as rollups name them), column.
struct Wanted {
    function: String,
    column: Option<String>,
}

/// Whether the casts DataFusion put on the argument columns of `expr` are
/// the ones it puts on `function`'s raw columns (so the rollup stored the
/// same thing); a cast the user wrote otherwise makes it another aggregate.
fn casts_are_coercions(expr: &Expr, input: &DFSchema) -> bool {
    let expr = match expr {
        Expr::Alias(a) => a.expr.as_ref(),
        other => other,
    };
    let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else {
        return false;
    };
    let mut raw_fields = Vec::new();
    for arg in &params.args {
        let inner = strip_casts(arg);
        let Ok(field) = inner.to_field(input) else {
            return false;
        };
        raw_fields.push(field.1);
    }
    let Ok(coerced) = fields_with_udf(&raw_fields, func.as_ref()) else {
        return false;
    };
    params
        .args
        .iter()
        .zip(coerced.iter())
        .all(|(arg, want)| match arg {
            Expr::Cast(c) => {
                matches!(c.expr.as_ref(), Expr::Column(_) | Expr::Literal(..))
                    && c.field.data_type() == want.data_type()
            }
            Expr::TryCast(_) => false,
            _ => true,
        })
}

/// Tries to answer `node` partly from a rollup.
fn route(
    node: &LogicalPlan,
    settings: &BTreeMap<String, String>,
    start: chrono::DateTime<Utc>,
) -> Option<LogicalPlan> {
    let LogicalPlan::Aggregate(agg) = node else {
        return None;
    };
    let (scan, _) = table_scan_below(&agg.input)?;
    let provider = timelake_table(scan)?;
    let table = as_timelake(&provider)?;
    if !table.has_rollups() {
        return None;
    }
    let time = table.time_column()?;
    let folder = constant_folder(start);
    let input_schema = agg.input.schema();

    // GROUP BY: plain columns and one bucket of the time column.
    let mut query_bucket = None;
    let mut groups = Vec::new();
    for (i, g) in agg.group_expr.iter().enumerate() {
        if let Some(b) = bucket_of(g, &time, &folder) {
            if query_bucket.is_some() {
                return None;
            }
            query_bucket = Some((i, b));
            continue;
        }
        match g {
            Expr::Column(c) if c.name != time => groups.push(c.name.clone()),
            _ => return None,
        }
    }
    let (bucket_index, query_bucket) = query_bucket?;

    // The aggregates, each one a rollup may store.
    let mut wanted = Vec::new();
    for a in &agg.aggr_expr {
        let (function, column) = aggregate_of(a, &time).ok()?;
        if !casts_are_coercions(a, input_schema) {
            return None;
        }
        wanted.push(Wanted { function, column });
    }

    // WHERE: bounds on the time column, filters on other columns.
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::clone(input_schema))
            .with_query_execution_start_time(Some(start))
            .build(),
    );
    let folded_input = fold_filters(&agg.input, &simplifier)?;
    let (_, filters) = table_scan_below(&folded_input)?;
    let mut a: Option<i64> = None;
    let mut b: Option<i64> = None;
    let mut other_filters = Vec::new();
    for f in filters {
        for conjunct in split_conjunction(f) {
            let columns: HashSet<String> = conjunct
                .column_refs()
                .into_iter()
                .map(|c| c.name.clone())
                .collect();
            if columns.contains(&time) {
                if columns.len() != 1 || !narrow(conjunct, &time, &mut a, &mut b) {
                    return None;
                }
            } else {
                other_filters.push((conjunct.clone(), columns));
            }
        }
    }
    if let (Some(a), Some(b)) = (a, b) {
        if a >= b {
            return None; // nothing to read anyway
        }
    }

    let (routing, rollups) = parse_answer(&table.rollups(settings).ok()?)?;
    if !routing {
        return None;
    }
    let group_set: HashSet<&String> = groups.iter().collect();
    let time_weighted = wanted
        .iter()
        .any(|w| w.function.starts_with("time_weighted_mean"));
    let mut best: Option<(&RollupInfo, Vec<Range>)> = None;
    for r in &rollups {
        if !r.bucket.nests_in(&query_bucket) {
            continue;
        }
        let rollup_groups: HashSet<&String> = r.groups.iter().collect();
        if !group_set.is_subset(&rollup_groups) {
            continue;
        }
        if other_filters
            .iter()
            .any(|(_, cols)| !cols.iter().all(|c| rollup_groups.contains(c)))
        {
            continue;
        }
        // Time-weighted states of different series overlap in time: only
        // whole series merge.
        let same_groups = group_set == rollup_groups;
        if time_weighted && !same_groups {
            continue;
        }
        let same_bucket = r.bucket == query_bucket;
        if !wanted
            .iter()
            .all(|w| merge_source(r, w, same_groups, same_bucket, &time).is_some())
        {
            continue;
        }
        // The query's buckets wholly inside the WHERE range and clean.
        let whole = (
            a.map(|a| query_bucket.ceil(a)),
            b.map(|b| query_bucket.floor(b)),
        );
        if let (Some(lo), Some(hi)) = whole {
            if lo >= hi {
                continue;
            }
        }
        let holes = r
            .dirty
            .iter()
            .map(|&(lo, hi)| {
                (
                    lo.map(|l| query_bucket.floor(l)),
                    hi.map(|h| query_bucket.ceil(h)),
                )
            })
            .collect();
        let clean = subtract(whole, holes);
        if clean.is_empty() {
            continue;
        }
        let better = match &best {
            None => true,
            Some((b, _)) => {
                (
                    r.bucket.approx_width_us(),
                    std::cmp::Reverse(r.groups.len()),
                ) > (
                    b.bucket.approx_width_us(),
                    std::cmp::Reverse(b.groups.len()),
                )
            }
        };
        if better {
            best = Some((r, clean));
        }
    }
    let (rollup, clean) = best?;
    build(
        agg,
        table,
        rollup,
        &clean,
        (a, b),
        &wanted,
        bucket_index,
        &time,
        &group_set,
        &query_bucket,
        &other_filters,
        folded_input,
    )
    .ok()
    .flatten()
}

/// The rollup column(s) that re-aggregate `w`, and how.
enum Merge<'a> {
    /// sum / min / max (or m4, or a time-weighted mean) of one column.
    Same(&'static str, &'a str),
    /// sum(sum) / sum(count).
    Avg(&'a str, &'a str),
    /// first_value / last_value of `value` ordered by `order` (a column, or
    /// the bucket when `None`).
    Edge(bool, &'a str, Option<&'a str>),
}

fn merge_source<'a>(
    r: &'a RollupInfo,
    w: &Wanted,
    same_groups: bool,
    same_bucket: bool,
    time: &str,
) -> Option<Merge<'a>> {
    let c = w.column.as_deref();
    match w.function.as_str() {
        "count" => r.stored("count", c).map(|n| Merge::Same("sum", n)),
        "sum" => r.stored("sum", c).map(|n| Merge::Same("sum", n)),
        "min" => r.stored("min", c).map(|n| Merge::Same("min", n)),
        "max" => r.stored("max", c).map(|n| Merge::Same("max", n)),
        "avg" => match (r.stored("sum", c), r.stored("count", c)) {
            (Some(s), Some(n)) => Some(Merge::Avg(s, n)),
            // A bare average (as Timelake 0.7 stores it) answers only the
            // very groups and buckets it was computed for.
            _ if same_groups && same_bucket => r.stored("avg", c).map(|n| Merge::Same("avg", n)),
            _ => None,
        },
        "first_value" | "last_value" => {
            let first = w.function == "first_value";
            let value = r.stored(&w.function, c)?;
            // Within one group the rollup's buckets are ordered in time;
            // across groups the first (last) time decides.
            if same_groups {
                return Some(Merge::Edge(first, value, None));
            }
            let order = r.stored(if first { "min" } else { "max" }, Some(time))?;
            Some(Merge::Edge(first, value, Some(order)))
        }
        "m4" => r.stored("m4", c).map(|n| Merge::Same("m4", n)),
        "time_weighted_mean" => r
            .stored("time_weighted_mean", c)
            .map(|n| Merge::Same("twm_ff", n)),
        "time_weighted_mean:linear" => r
            .stored("time_weighted_mean:linear", c)
            .map(|n| Merge::Same("twm_linear", n)),
        _ => None,
    }
}

/// The query's input with every filter's constants folded (`now()` at the
/// query's one start time), so both sides agree on the bounds.
fn fold_filters(input: &Arc<LogicalPlan>, simplifier: &ExprSimplifier) -> Option<LogicalPlan> {
    input
        .as_ref()
        .clone()
        .transform_down(|node| match node {
            LogicalPlan::Filter(f) => {
                let predicate = simplifier.simplify(f.predicate.clone())?;
                Ok(Transformed::yes(LogicalPlan::Filter(Filter::try_new(
                    predicate, f.input,
                )?)))
            }
            other => Ok(Transformed::no(other)),
        })
        .ok()
        .map(|t| t.data)
}

#[allow(clippy::too_many_arguments)]
fn build(
    agg: &Aggregate,
    table: &TimelakeTable,
    rollup: &RollupInfo,
    clean: &[Range],
    range: Range,
    wanted: &[Wanted],
    bucket_index: usize,
    time: &str,
    group_set: &HashSet<&String>,
    query_bucket: &Bucket,
    other_filters: &[(Expr, HashSet<String>)],
    folded_input: LogicalPlan,
) -> DFResult<Option<LogicalPlan>> {
    let Some(provider) = table
        .sibling(&rollup.schema, &rollup.name)
        .map_err(|e| e.into_datafusion())?
    else {
        return Ok(None);
    };
    let reference = TableReference::partial(rollup.schema.as_str(), rollup.name.as_str());
    let rollup_schema = provider.schema();
    let scan = LogicalPlanBuilder::scan(
        reference.clone(),
        provider_as_source(Arc::new(provider)),
        None,
    )?
    .build()?;
    let rcol = |name: &str| Expr::Column(Column::new(Some(reference.clone()), name));
    let Ok(bucket_field) = rollup_schema.field_with_name(&rollup.bucket_column) else {
        return Ok(None);
    };
    let bucket_type = bucket_field.data_type().clone();

    // The rollup side: its clean buckets, and the filters on groups.
    let Some(in_clean) = in_ranges(&rcol(&rollup.bucket_column), &bucket_type, clean) else {
        return Ok(None);
    };
    let mut predicates = vec![in_clean];
    for (f, _) in other_filters {
        let mut e = f.clone();
        for g in &rollup.groups {
            e = replace_column(e, g, &rcol(g));
        }
        predicates.push(e);
    }
    let filtered = LogicalPlanBuilder::from(scan)
        .filter(conjunction(predicates).expect("one predicate at least"))?
        .build()?;

    // Its groups: the same columns, and the query's bucket of the rollup's
    // bucket (which nests in it).
    let input_schema = agg.input.schema();
    let (_, time_field) = input_schema.qualified_field_with_unqualified_name(time)?;
    let mut bucket_source = rcol(&rollup.bucket_column);
    if &bucket_type != time_field.data_type() {
        bucket_source = cast(bucket_source, time_field.data_type().clone());
    }
    let mut rollup_groups = Vec::new();
    for (i, g) in agg.group_expr.iter().enumerate() {
        if i == bucket_index {
            rollup_groups.push(replace_column(g.clone(), time, &bucket_source));
        } else if let Expr::Column(c) = g {
            rollup_groups.push(rcol(&c.name));
        } else {
            return Ok(None);
        }
    }
    let _ = (group_set, query_bucket);

    // Its aggregates: each re-aggregates stored states.
    let same_groups = group_set.len() == rollup.groups.len();
    let same_bucket = rollup.bucket == *query_bucket;
    let mut rollup_aggs = Vec::new();
    let mut finish: Vec<Option<(usize, usize)>> = Vec::new(); // avg: (sum, count) indexes
    for w in wanted {
        let Some(m) = merge_source(rollup, w, same_groups, same_bucket, time) else {
            return Ok(None);
        };
        match m {
            Merge::Same(f, column) => {
                let c = rcol(column);
                rollup_aggs.push(match f {
                    "sum" => sum(c),
                    "min" => min(c),
                    "max" => max(c),
                    "avg" => datafusion::functions_aggregate::expr_fn::avg(c),
                    "m4" => Arc::new(M4::udaf()).call(vec![c]),
                    "twm_ff" => {
                        Arc::new(TimeWeighted::mean_udaf()).call(vec![c, lit("forward_fill")])
                    }
                    "twm_linear" => {
                        Arc::new(TimeWeighted::mean_udaf()).call(vec![c, lit("linear")])
                    }
                    _ => return Ok(None),
                });
                finish.push(None);
            }
            Merge::Avg(s, n) => {
                let at = rollup_aggs.len();
                rollup_aggs.push(sum(rcol(s)));
                rollup_aggs.push(sum(rcol(n)));
                finish.push(Some((at, at + 1)));
            }
            Merge::Edge(first, value, order) => {
                let order_by = match order {
                    Some(o) => rcol(o),
                    None => rcol(&rollup.bucket_column),
                };
                let sort = vec![order_by.sort(true, false)];
                rollup_aggs.push(if first {
                    first_value(rcol(value), sort)
                } else {
                    last_value(rcol(value), sort)
                });
                finish.push(None);
            }
        }
    }
    let n_groups = rollup_groups.len();
    let reaggregated = LogicalPlan::Aggregate(Aggregate::try_new(
        Arc::new(filtered),
        rollup_groups,
        rollup_aggs,
    )?);

    // Projection to the query aggregate's columns: names and types.
    let out_schema = agg.schema.as_ref();
    let r_schema = Arc::clone(reaggregated.schema());
    let column_at = |i: usize| Expr::Column(Column::from(r_schema.qualified_field(i)));
    let mut exprs = Vec::new();
    for (i, field) in out_schema.fields().iter().enumerate() {
        let e = if i < n_groups {
            column_at(i)
        } else {
            let k = i - n_groups;
            // The k-th wanted aggregate's position among rollup_aggs.
            let mut position = n_groups;
            for f in finish.iter().take(k) {
                position += if f.is_some() { 2 } else { 1 };
            }
            match finish[k] {
                Some(_) => {
                    let s = cast(column_at(position), DataType::Float64);
                    let n = cast(column_at(position + 1), DataType::Float64);
                    s / nullif(n, lit(0.0f64))
                }
                None => column_at(position),
            }
        };
        exprs.push(conform(e, field, &reaggregated)?.alias(field.name()));
    }
    let rollup_side = LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(reaggregated))?);

    // The raw side: the query's aggregate over the rest of its time range,
    // as ranges the scan prunes files by; no scan at all when the rollup
    // covers the whole range.
    let (time_qualifier, _) = folded_input
        .schema()
        .qualified_field_with_unqualified_name(time)?;
    let time_column = Expr::Column(Column::new(time_qualifier.cloned(), time));
    let rest = subtract(range, clean.to_vec());
    let raw_input = if rest.is_empty() {
        LogicalPlan::EmptyRelation(EmptyRelation {
            produce_one_row: false,
            schema: Arc::clone(folded_input.schema()),
        })
    } else {
        let Some(inside) = in_ranges(&time_column, time_field.data_type(), &rest) else {
            return Ok(None);
        };
        LogicalPlanBuilder::from(folded_input)
            .filter(inside)?
            .build()?
    };
    let raw_side = LogicalPlan::Aggregate(Aggregate::try_new(
        Arc::new(raw_input),
        agg.group_expr.clone(),
        agg.aggr_expr.clone(),
    )?);

    let union = LogicalPlan::Union(Union::try_new_with_loose_types(vec![
        Arc::new(raw_side),
        Arc::new(rollup_side),
    ])?);
    // The aggregate's own qualified names, so the plan above resolves.
    let u_schema = Arc::clone(union.schema());
    let exprs = (0..out_schema.fields().len())
        .map(|i| {
            let (q, f) = out_schema.qualified_field(i);
            Expr::Column(Column::new_unqualified(u_schema.field(i).name()))
                .alias_qualified(q.cloned(), f.name())
        })
        .collect();
    Ok(Some(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(union),
    )?)))
}

/// `e` cast to `field`'s type when it has another.
fn conform(e: Expr, field: &Field, input: &LogicalPlan) -> DFResult<Expr> {
    let (_, actual) = e.to_field(input.schema())?;
    Ok(if actual.data_type() == field.data_type() {
        e
    } else {
        cast(e, field.data_type().clone())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtracting_ranges() {
        let all = (None, None);
        assert_eq!(subtract(all, vec![]), vec![(None, None)]);
        assert_eq!(
            subtract(all, vec![(Some(10), Some(20))]),
            vec![(None, Some(10)), (Some(20), None)]
        );
        assert_eq!(
            subtract(
                (Some(0), Some(100)),
                vec![(Some(30), Some(40)), (Some(10), Some(20))]
            ),
            vec![
                (Some(0), Some(10)),
                (Some(20), Some(30)),
                (Some(40), Some(100))
            ]
        );
        assert_eq!(
            subtract((Some(0), Some(100)), vec![(None, Some(50))]),
            vec![(Some(50), Some(100))]
        );
        assert_eq!(
            subtract((Some(0), Some(100)), vec![(Some(50), None)]),
            vec![(Some(0), Some(50))]
        );
        assert_eq!(subtract((Some(0), Some(100)), vec![(None, None)]), vec![]);
        assert_eq!(
            subtract((Some(0), Some(100)), vec![(Some(0), Some(100))]),
            vec![]
        );
        // Overlapping holes.
        assert_eq!(
            subtract(
                (Some(0), Some(100)),
                vec![(Some(10), Some(50)), (Some(20), Some(30))]
            ),
            vec![(Some(0), Some(10)), (Some(50), Some(100))]
        );
        // A hole outside.
        assert_eq!(
            subtract((Some(0), Some(100)), vec![(Some(200), Some(300))]),
            vec![(Some(0), Some(100))]
        );
    }

    #[test]
    fn time_bounds() {
        let t = || Expr::Column(Column::from_name("time"));
        let ts = |us: i64| {
            lit(ScalarValue::TimestampMicrosecond(
                Some(us),
                Some("+00:00".into()),
            ))
        };
        let (mut a, mut b) = (None, None);
        assert!(narrow(&t().gt_eq(ts(10)), "time", &mut a, &mut b));
        assert!(narrow(&t().lt(ts(20)), "time", &mut a, &mut b));
        assert_eq!((a, b), (Some(10), Some(20)));
        assert!(narrow(&ts(12).lt(t()), "time", &mut a, &mut b));
        assert_eq!(a, Some(13));
        assert!(narrow(&t().lt_eq(ts(15)), "time", &mut a, &mut b));
        assert_eq!(b, Some(16));
        assert!(!narrow(&t().not_eq(ts(15)), "time", &mut a, &mut b));
        let ns = lit(ScalarValue::TimestampNanosecond(Some(10_500), None));
        let (mut a, mut b) = (None, None);
        assert!(narrow(
            &cast(t(), DataType::Timestamp(TimeUnit::Nanosecond, None)).gt_eq(ns),
            "time",
            &mut a,
            &mut b
        ));
        assert_eq!(a, Some(11));
        // A cast to a date is lossy: not a bound.
        let d = lit(ScalarValue::Date32(Some(1)));
        assert!(!narrow(
            &cast(t(), DataType::Date32).gt_eq(d),
            "time",
            &mut a,
            &mut b
        ));
    }
}
