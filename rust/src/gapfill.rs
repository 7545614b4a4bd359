//! Gap filling (TimescaleDB's): `time_bucket_gapfill(width, time [, start,
//! finish])` as a GROUP BY expression makes the query return every bucket
//! of the range for every group, and `locf(agg)` / `interpolate(agg)` in its
//! select list fill the buckets that had no rows.
//!
//! ```sql
//! SELECT time_bucket_gapfill(INTERVAL '1 hour', time) AS hour, device_id,
//!        avg(temp), locf(avg(temp)), interpolate(avg(temp))
//! FROM iot.readings
//! WHERE time >= '2026-01-01' AND time < '2026-01-02'
//! GROUP BY hour, device_id
//! ```
//!
//! Rules (TimescaleDB's; differences in docs/sql.md):
//! - the range is `[start, finish)`: from the function's third and fourth
//!   arguments, else from the WHERE clause's bounds on the time column
//!   (`>=`, `>`, `<`, `<=`, `BETWEEN`; `>` and `<=` move the bound by one
//!   unit of the time type); no bound on either side is an error. Buckets
//!   are aligned as `time_bucket`'s (DataFusion's `date_bin`, origin
//!   1970-01-01), from the bucket holding `start` to the last bucket that
//!   starts before `finish`;
//! - every group (the other GROUP BY columns) that has rows gets every
//!   bucket; rows outside the range pass through unfilled;
//! - a filled row has NULL in every aggregate, except
//!   `locf(value [, prev [, treat_null_as_missing]])`: the last value of an
//!   earlier row of the group (a row whose value is NULL counts, unless
//!   `treat_null_as_missing` is true), or `prev` when there is none;
//!   `interpolate(value [, prev [, next]])`: linear between the nearest
//!   earlier and later rows of the group with a value, where `prev` and
//!   `next` (a struct `(time, value)`) stand in for a missing neighbour
//!   outside the range. `prev`/`next` are read once per group (they may be
//!   correlated subqueries on the group's columns).
//!
//! How: [`GapFillRule`], an analyzer rule, finds the aggregate grouped by
//! the function and puts a [`GapFill`] node between it (with its HAVING
//! filter) and the select list, whose `locf`/`interpolate` calls become
//! columns of the node. The WHERE clause stays where it was, so its time
//! bounds still prune files. [`GapFillPlanner`] evaluates the range once
//! and plans [`GapFillExec`], which reads the aggregate's rows sorted by
//! (group, bucket), one group at a time.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, IntervalUnit, Schema, TimeUnit};
use async_trait::async_trait;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{
    exec_err, plan_datafusion_err, plan_err, Column, DFSchema, DFSchemaRef, Result, ScalarValue,
};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    Aggregate, Between, BinaryExpr, ColumnarValue, Expr, ExprSchemable, Extension, LogicalPlan,
    Operator, Projection, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    UserDefinedLogicalNode, UserDefinedLogicalNodeCore, Volatility,
};
use datafusion::optimizer::analyzer::AnalyzerRule;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{ExtensionPlanner, PhysicalPlanner};

pub use crate::gapfill_exec::GAPFILL;
use crate::gapfill_exec::{buckets, FillKindExec, GapFillExec, PhysicalFill};

pub const LOCF: &str = "locf";
pub const INTERPOLATE: &str = "interpolate";

// --- the functions --------------------------------------------------------------

/// `time_bucket_gapfill(width, time [, start, finish])`: as a value, the
/// bucket of `time` (`time_bucket`'s for timestamps, `floor(time / width) *
/// width` for integers); start and finish only matter to [`GapFillRule`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimeBucketGapfill {
    signature: Signature,
}

impl TimeBucketGapfill {
    pub fn udf() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            signature: Signature::user_defined(Volatility::Immutable),
        })
    }
}

fn usage() -> String {
    format!(
        "{GAPFILL} takes (width, time [, start, finish]): an interval and a timestamp, or two \
         integers"
    )
}

/// Integer time with an integer width.
fn is_integer(t: &DataType) -> bool {
    t.is_integer()
}

impl ScalarUDFImpl for TimeBucketGapfill {
    fn name(&self) -> &str {
        GAPFILL
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        if !(2..=4).contains(&args.len()) {
            return plan_err!("{}", usage());
        }
        let time = match (&args[0], &args[1]) {
            (DataType::Interval(_), DataType::Timestamp(unit, tz)) => {
                DataType::Timestamp(*unit, tz.clone())
            }
            (DataType::Interval(_), DataType::Date32 | DataType::Date64) => {
                DataType::Timestamp(TimeUnit::Nanosecond, None)
            }
            (w, t) if is_integer(w) && is_integer(t) => DataType::Int64,
            (w, t) => return plan_err!("{}, not ({w}, {t})", usage()),
        };
        let width = if time == DataType::Int64 {
            DataType::Int64
        } else {
            DataType::Interval(IntervalUnit::MonthDayNano)
        };
        let mut out = vec![width, time.clone()];
        out.extend(args[2..].iter().map(|_| time.clone()));
        Ok(out)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let time_type = args.arg_fields[1].data_type().clone();
        let width = args.args[0].clone();
        let time = args.args[1].clone();
        if time_type == DataType::Int64 {
            let ColumnarValue::Scalar(ScalarValue::Int64(Some(w))) = width else {
                return exec_err!("{GAPFILL}: the width must be a constant integer");
            };
            if w <= 0 {
                return exec_err!("{GAPFILL}: the width must be positive, not {w}");
            }
            let bucket = |t: i64| t.div_euclid(w) * w;
            return Ok(match time {
                ColumnarValue::Scalar(ScalarValue::Int64(v)) => {
                    ColumnarValue::Scalar(ScalarValue::Int64(v.map(bucket)))
                }
                ColumnarValue::Array(a) => {
                    let a = a
                        .as_any()
                        .downcast_ref::<arrow::array::Int64Array>()
                        .ok_or_else(|| plan_datafusion_err!("{GAPFILL}: expected Int64 times"))?;
                    ColumnarValue::Array(Arc::new(arrow::compute::kernels::arity::unary::<
                        _,
                        _,
                        arrow::datatypes::Int64Type,
                    >(a, bucket)))
                }
                other => return exec_err!("{GAPFILL}: unexpected time {other:?}"),
            });
        }
        // Timestamps: time_bucket's buckets exactly (DataFusion's date_bin).
        let date_bin = datafusion::functions::datetime::date_bin();
        date_bin.invoke_with_args(ScalarFunctionArgs {
            args: vec![width, time],
            arg_fields: args.arg_fields[..2].to_vec(),
            number_rows: args.number_rows,
            return_field: args.return_field,
            config_options: args.config_options,
        })
    }
}

/// `locf(value [, prev [, treat_null_as_missing]])` and
/// `interpolate(value [, prev [, next]])`: markers for [`GapFillRule`];
/// evaluating one means it is outside a gap-filling query.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FillFunction {
    name: &'static str,
    signature: Signature,
}

impl FillFunction {
    pub fn locf() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            name: LOCF,
            signature: Signature::user_defined(Volatility::Immutable),
        })
    }

    pub fn interpolate() -> ScalarUDF {
        ScalarUDF::new_from_impl(Self {
            name: INTERPOLATE,
            signature: Signature::user_defined(Volatility::Immutable),
        })
    }
}

impl ScalarUDFImpl for FillFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        if args.is_empty() || args.len() > 3 {
            return plan_err!(
                "{} takes {}",
                self.name,
                if self.name == LOCF {
                    "(value [, prev [, treat_null_as_missing]])"
                } else {
                    "(value [, prev [, next]])"
                }
            );
        }
        let value = args[0].clone();
        if self.name == INTERPOLATE && !(value.is_numeric() || value == DataType::Null) {
            return plan_err!("interpolate needs a numeric value, not {value}");
        }
        let mut out = vec![value.clone()];
        if self.name == LOCF {
            if args.len() >= 2 {
                out.push(if args[1] == DataType::Null {
                    value.clone()
                } else {
                    args[1].clone()
                });
            }
            if args.len() == 3 {
                out.push(DataType::Boolean);
            }
        } else {
            out.extend(args[1..].iter().cloned());
        }
        Ok(out)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        plan_err!(
            "{}() fills the gaps of a query grouped by {GAPFILL}(…): use it in that query's \
             select list",
            self.name
        )
    }
}

fn call_named<'a>(expr: &'a Expr, name: &str) -> Option<&'a [Expr]> {
    match expr {
        Expr::ScalarFunction(ScalarFunction { func, args }) if func.name() == name => {
            Some(args.as_slice())
        }
        _ => None,
    }
}

fn contains_call(expr: &Expr, names: &[&str]) -> bool {
    expr.exists(|e| Ok(names.iter().any(|n| call_named(e, n).is_some())))
        .unwrap_or(false)
}

// --- the logical node -------------------------------------------------------------

/// How one filled column is computed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub enum FillKind {
    /// Last value carried forward; `prev` names an input column.
    Locf {
        prev: Option<Column>,
        treat_null_as_missing: bool,
    },
    /// Linear between neighbours; `prev`/`next` name input columns of
    /// `(time, value)` structs.
    Interpolate {
        prev: Option<Column>,
        next: Option<Column>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub struct Fill {
    /// Over the node's input.
    pub value: Expr,
    pub kind: FillKind,
    /// The output column's name.
    pub name: String,
}

/// One bound of the range: an expression (constant for the query) and
/// whether to move it one unit up (`>` lower bounds, `<=` upper bounds).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub struct Bound {
    pub expr: Expr,
    pub plus_one: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GapFill {
    pub input: Arc<LogicalPlan>,
    /// The bucket column of the input.
    pub time: Column,
    /// The other grouping columns.
    pub groups: Vec<Column>,
    pub fills: Vec<Fill>,
    pub width: Expr,
    /// The range: the greatest lower and the least upper bound count.
    pub lower: Vec<Bound>,
    pub upper: Vec<Bound>,
    pub schema: DFSchemaRef,
}

impl PartialOrd for GapFill {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        (&self.input, &self.fills, &self.width).partial_cmp(&(
            &other.input,
            &other.fills,
            &other.width,
        ))
    }
}

impl GapFill {
    fn try_new(
        input: Arc<LogicalPlan>,
        time: Column,
        groups: Vec<Column>,
        fills: Vec<Fill>,
        width: Expr,
        lower: Vec<Bound>,
        upper: Vec<Bound>,
    ) -> Result<Self> {
        let in_schema = input.schema();
        // A filled row has NULL in every column but the time and the groups
        // (count(*) included).
        let mut fields: Vec<(Option<datafusion::common::TableReference>, Arc<Field>)> = in_schema
            .iter()
            .map(|(q, f)| (q.cloned(), Arc::new(f.as_ref().clone().with_nullable(true))))
            .collect();
        for fill in &fills {
            let t = fill.value.get_type(in_schema)?;
            fields.push((None, Arc::new(Field::new(&fill.name, t, true))));
        }
        let schema = Arc::new(DFSchema::new_with_metadata(
            fields,
            in_schema.metadata().clone(),
        )?);
        Ok(Self {
            input,
            time,
            groups,
            fills,
            width,
            lower,
            upper,
            schema,
        })
    }
}

impl UserDefinedLogicalNodeCore for GapFill {
    fn name(&self) -> &str {
        "GapFill"
    }

    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }

    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }

    fn expressions(&self) -> Vec<Expr> {
        let mut out = vec![Expr::Column(self.time.clone())];
        out.extend(self.groups.iter().cloned().map(Expr::Column));
        out.extend(self.fills.iter().map(|f| f.value.clone()));
        out.push(self.width.clone());
        out.extend(self.lower.iter().map(|b| b.expr.clone()));
        out.extend(self.upper.iter().map(|b| b.expr.clone()));
        out
    }

    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let groups: Vec<String> = self.groups.iter().map(|c| c.to_string()).collect();
        let fills: Vec<String> = self.fills.iter().map(|f| f.name.clone()).collect();
        write!(
            f,
            "GapFill: time={}, width={}, groups=[{}], fills=[{}]",
            self.time,
            self.width,
            groups.join(", "),
            fills.join(", ")
        )
    }

    fn with_exprs_and_inputs(
        &self,
        exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> Result<Self> {
        let expected =
            1 + self.groups.len() + self.fills.len() + 1 + self.lower.len() + self.upper.len();
        if inputs.len() != 1 || exprs.len() != expected {
            return plan_err!("GapFill: wrong number of inputs or expressions");
        }
        let mut it = exprs.into_iter();
        let column = |e: Expr| match e {
            Expr::Column(c) => Ok(c),
            other => plan_err!("GapFill: expected a column, got {other}"),
        };
        let time = column(it.next().expect("counted"))?;
        let groups = (0..self.groups.len())
            .map(|_| column(it.next().expect("counted")))
            .collect::<Result<Vec<_>>>()?;
        let fills = self
            .fills
            .iter()
            .map(|f| Fill {
                value: it.next().expect("counted"),
                ..f.clone()
            })
            .collect();
        let width = it.next().expect("counted");
        let lower = self
            .lower
            .iter()
            .map(|b| Bound {
                expr: it.next().expect("counted"),
                plus_one: b.plus_one,
            })
            .collect();
        let upper = self
            .upper
            .iter()
            .map(|b| Bound {
                expr: it.next().expect("counted"),
                plus_one: b.plus_one,
            })
            .collect();
        Self::try_new(
            Arc::new(inputs.pop().expect("one")),
            time,
            groups,
            fills,
            width,
            lower,
            upper,
        )
    }

    /// Every input column (the node passes them through) is needed only if
    /// asked for; the time, groups, fill values and helpers always are.
    fn necessary_children_exprs(&self, output_columns: &[usize]) -> Option<Vec<Vec<usize>>> {
        let schema = self.input.schema();
        let n = schema.fields().len();
        let mut need: Vec<usize> = output_columns.iter().copied().filter(|&i| i < n).collect();
        let mut add = |c: &Column| -> Option<()> {
            need.push(schema.index_of_column(c).ok()?);
            Some(())
        };
        add(&self.time)?;
        for g in &self.groups {
            add(g)?;
        }
        for fill in &self.fills {
            for c in fill.value.column_refs() {
                add(c)?;
            }
            match &fill.kind {
                FillKind::Locf { prev, .. } => {
                    if let Some(p) = prev {
                        add(p)?;
                    }
                }
                FillKind::Interpolate { prev, next } => {
                    for c in prev.iter().chain(next.iter()) {
                        add(c)?;
                    }
                }
            }
        }
        need.sort_unstable();
        need.dedup();
        // The node's schema is its input's: pruning input columns changes
        // the positions the parent refers to by name only.
        Some(vec![need])
    }
}

// --- the analyzer rule ----------------------------------------------------------------

#[derive(Debug, Default)]
pub struct GapFillRule;

impl AnalyzerRule for GapFillRule {
    fn name(&self) -> &str {
        "timelake_gapfill"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        if !plan_mentions(&plan)? {
            return Ok(plan);
        }
        let plan = plan.transform_up_with_subqueries(rewrite).data()?;
        check_leftovers(&plan, false)?;
        Ok(plan)
    }
}

/// Whatever call is left is misplaced, except the grouping of the aggregate
/// a [`GapFill`] node reads (`below_gapfill`: between the two).
fn check_leftovers(plan: &LogicalPlan, below_gapfill: bool) -> Result<()> {
    let is_gapfill = matches!(plan, LogicalPlan::Extension(ext)
        if ext.node.as_any().downcast_ref::<GapFill>().is_some());
    let exprs: Vec<Expr> = match plan {
        LogicalPlan::Aggregate(agg) if below_gapfill => agg.aggr_expr.clone(),
        other => other.expressions(),
    };
    for e in &exprs {
        if let Some(name) = [GAPFILL, LOCF, INTERPOLATE]
            .into_iter()
            .find(|n| contains_call(e, &[n]))
        {
            return Err(misplaced(name, plan));
        }
    }
    let pass_on = is_gapfill
        || (below_gapfill && matches!(plan, LogicalPlan::Projection(_) | LogicalPlan::Filter(_)));
    for child in plan.inputs() {
        check_leftovers(child, pass_on)?;
    }
    plan.apply_subqueries(|sub| {
        check_leftovers(sub, false)?;
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(())
}

fn misplaced(name: &str, plan: &LogicalPlan) -> datafusion::error::DataFusionError {
    if name == GAPFILL {
        if let LogicalPlan::Aggregate(_) = plan {
            return plan_datafusion_err!(
                "{GAPFILL}(…) must be a GROUP BY expression of its own, not part of another \
                 expression"
            );
        }
        plan_datafusion_err!(
            "{GAPFILL}(…) works only as a GROUP BY expression of an aggregate query (e.g. SELECT \
             {GAPFILL}(INTERVAL '1 hour', time) AS hour, avg(v) … GROUP BY hour)"
        )
    } else {
        plan_datafusion_err!(
            "{name}() works only in the select list of a query grouped by {GAPFILL}(…)"
        )
    }
}

/// Whether the plan calls any of the three functions (most plans do not).
fn plan_mentions(plan: &LogicalPlan) -> Result<bool> {
    let mut found = false;
    plan.apply_with_subqueries(|p| {
        p.apply_expressions(|e| {
            if contains_call(e, &[GAPFILL, LOCF, INTERPOLATE]) {
                found = true;
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        })
    })?;
    Ok(found)
}

/// The index of the gap-filling GROUP BY expression and its arguments.
fn gapfill_group(agg: &Aggregate) -> Result<Option<(usize, Vec<Expr>)>> {
    let mut found = None;
    for (i, e) in agg.group_expr.iter().enumerate() {
        let e = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            other => other,
        };
        if let Some(args) = call_named(e, GAPFILL) {
            if found.is_some() {
                return plan_err!("a query may group by one {GAPFILL}(…) only");
            }
            if args.iter().any(|a| contains_call(a, &[GAPFILL])) {
                return plan_err!("{GAPFILL}(…) cannot be nested");
            }
            found = Some((i, args.to_vec()));
        } else if contains_call(e, &[GAPFILL]) {
            return Err(misplaced(GAPFILL, &LogicalPlan::Aggregate(agg.clone())));
        }
    }
    Ok(found)
}

/// The column a bound compares (through casts), if it is `time`.
fn is_time(expr: &Expr, time: &Column) -> bool {
    match expr {
        Expr::Column(c) => c == time,
        Expr::Cast(c) => is_time(&c.expr, time),
        Expr::TryCast(c) => is_time(&c.expr, time),
        _ => false,
    }
}

fn constant(expr: &Expr) -> bool {
    expr.column_refs().is_empty()
        && !expr
            .exists(|e| {
                Ok(matches!(
                    e,
                    Expr::ScalarSubquery(_)
                        | Expr::Exists(_)
                        | Expr::InSubquery(_)
                        | Expr::OuterReferenceColumn(..)
                ))
            })
            .unwrap_or(true)
}

/// The WHERE bounds on `time` in the filters right below the aggregate.
fn where_bounds(
    mut plan: &LogicalPlan,
    time: &Column,
    lower: &mut Vec<Bound>,
    upper: &mut Vec<Bound>,
) {
    while let LogicalPlan::Filter(filter) = plan {
        for conjunct in split_conjunction(&filter.predicate) {
            match conjunct {
                Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                    let (op, bound) = if is_time(left, time) && constant(right) {
                        (*op, right.as_ref())
                    } else if is_time(right, time) && constant(left) {
                        match op.swap() {
                            Some(op) => (op, left.as_ref()),
                            None => continue,
                        }
                    } else {
                        continue;
                    };
                    let bound = |plus_one| Bound {
                        expr: bound.clone(),
                        plus_one,
                    };
                    match op {
                        Operator::GtEq => lower.push(bound(false)),
                        Operator::Gt => lower.push(bound(true)),
                        Operator::Lt => upper.push(bound(false)),
                        Operator::LtEq => upper.push(bound(true)),
                        Operator::Eq => {
                            lower.push(bound(false));
                            upper.push(bound(true));
                        }
                        _ => {}
                    }
                }
                Expr::Between(Between {
                    expr,
                    negated: false,
                    low,
                    high,
                }) if is_time(expr, time) && constant(low) && constant(high) => {
                    lower.push(Bound {
                        expr: (**low).clone(),
                        plus_one: false,
                    });
                    upper.push(Bound {
                        expr: (**high).clone(),
                        plus_one: true,
                    });
                }
                _ => {}
            }
        }
        plan = filter.input.as_ref();
    }
}

/// Rewrites `Projection(select list) <- [Filter(HAVING) <-] Aggregate` when
/// the aggregate groups by the gap-filling function.
fn rewrite(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Projection(projection) = &plan else {
        return Ok(Transformed::no(plan));
    };
    let agg = match projection.input.as_ref() {
        LogicalPlan::Aggregate(a) => a,
        LogicalPlan::Filter(f) => match f.input.as_ref() {
            LogicalPlan::Aggregate(a) => a,
            _ => return Ok(Transformed::no(plan)),
        },
        _ => return Ok(Transformed::no(plan)),
    };
    let Some((index, args)) = gapfill_group(agg)? else {
        return Ok(Transformed::no(plan));
    };
    let fill_input = Arc::clone(&projection.input);
    let in_schema = fill_input.schema();
    let (q, f) = agg.schema.qualified_field(index);
    let time_out = Column::new(q.cloned(), f.name());
    let n_groups = agg.group_expr.len();
    let groups: Vec<Column> = (0..n_groups)
        .filter(|&i| i != index)
        .map(|i| {
            let (q, f) = agg.schema.qualified_field(i);
            Column::new(q.cloned(), f.name())
        })
        .collect();

    // The range.
    let mut lower = Vec::new();
    let mut upper = Vec::new();
    if let Some(start) = args.get(2) {
        if !constant(start) {
            return plan_err!("{GAPFILL}: start must be a constant, not {start}");
        }
        lower.push(Bound {
            expr: start.clone(),
            plus_one: false,
        });
    }
    if let Some(finish) = args.get(3) {
        if !constant(finish) {
            return plan_err!("{GAPFILL}: finish must be a constant, not {finish}");
        }
        upper.push(Bound {
            expr: finish.clone(),
            plus_one: false,
        });
    }
    if lower.is_empty() || upper.is_empty() {
        if let Expr::Column(time_in) = &args[1] {
            let (mut l, mut u) = (Vec::new(), Vec::new());
            where_bounds(agg.input.as_ref(), time_in, &mut l, &mut u);
            if lower.is_empty() {
                lower = l;
            }
            if upper.is_empty() {
                upper = u;
            }
        }
    }
    let hint = format!(
        "give it as an argument ({GAPFILL}(width, time, start, finish)) or bound {} in WHERE",
        args[1]
    );
    if lower.is_empty() {
        return plan_err!("{GAPFILL}: no start for the range to fill: {hint} (time >= …)");
    }
    if upper.is_empty() {
        return plan_err!("{GAPFILL}: no finish for the range to fill: {hint} (time < …)");
    }
    if !constant(&args[0]) {
        return plan_err!("{GAPFILL}: the width must be a constant, not {}", args[0]);
    }

    // The fill calls of the select list become columns of the node; their
    // prev/next arguments are computed by a projection below it.
    let mut fills: Vec<Fill> = Vec::new();
    let mut helpers: Vec<Expr> = Vec::new();
    fn helper(e: &Expr, helpers: &mut Vec<Expr>) -> Column {
        let name = format!("__timelake_gapfill_arg{}", helpers.len());
        helpers.push(e.clone().alias(&name));
        Column::from_name(name)
    }
    let mut new_exprs = Vec::with_capacity(projection.expr.len());
    for expr in &projection.expr {
        let rewritten = expr
            .clone()
            .transform_down(|e| {
                let (kind_name, args) = if let Some(args) = call_named(&e, LOCF) {
                    (LOCF, args)
                } else if let Some(args) = call_named(&e, INTERPOLATE) {
                    (INTERPOLATE, args)
                } else {
                    return Ok(Transformed::no(e));
                };
                let name = e.schema_name().to_string();
                if !fills.iter().any(|f| f.name == name) {
                    let value = args[0].clone();
                    if contains_call(&value, &[LOCF, INTERPOLATE]) {
                        return plan_err!(
                            "{kind_name}() cannot be nested in another fill function"
                        );
                    }
                    let null = |e: &Expr| matches!(e, Expr::Literal(v, _) if v.is_null());
                    let kind = if kind_name == LOCF {
                        let prev = args
                            .get(1)
                            .filter(|e| !null(e))
                            .map(|e| helper(e, &mut helpers));
                        let treat_null_as_missing = match args.get(2) {
                            None => false,
                            Some(Expr::Literal(ScalarValue::Boolean(Some(b)), _)) => *b,
                            Some(other) => {
                                return plan_err!(
                                    "locf: treat_null_as_missing must be true or false, not {other}"
                                )
                            }
                        };
                        FillKind::Locf {
                            prev,
                            treat_null_as_missing,
                        }
                    } else {
                        let mut side = |i: usize| -> Result<Option<Column>> {
                            match args.get(i).filter(|e| !null(e)) {
                                None => Ok(None),
                                Some(e) => {
                                    let t = e.get_type(in_schema).unwrap_or(DataType::Null);
                                    match t {
                                        DataType::Struct(fields) if fields.len() == 2 => {
                                            Ok(Some(helper(e, &mut helpers)))
                                        }
                                        other => plan_err!(
                                            "interpolate: {} must be a (time, value) struct, e.g. \
                                             struct(time, value), not {other}",
                                            if i == 1 { "prev" } else { "next" }
                                        ),
                                    }
                                }
                            }
                        };
                        let prev = side(1)?;
                        let next = side(2)?;
                        FillKind::Interpolate { prev, next }
                    };
                    fills.push(Fill {
                        value,
                        kind,
                        name: name.clone(),
                    });
                }
                Ok(Transformed::new(
                    Expr::Column(Column::from_name(name)),
                    true,
                    TreeNodeRecursion::Jump,
                ))
            })?
            .data;
        new_exprs.push(rewritten);
    }

    let node_input = if helpers.is_empty() {
        fill_input
    } else {
        let mut exprs: Vec<Expr> = in_schema
            .iter()
            .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
            .collect();
        exprs.extend(helpers);
        Arc::new(LogicalPlan::Projection(Projection::try_new(
            exprs, fill_input,
        )?))
    };
    let node = GapFill::try_new(
        node_input,
        time_out,
        groups,
        fills,
        args[0].clone(),
        lower,
        upper,
    )?;
    let node = LogicalPlan::Extension(Extension {
        node: Arc::new(node),
    });
    Ok(Transformed::yes(LogicalPlan::Projection(
        Projection::try_new(new_exprs, Arc::new(node))?,
    )))
}

// --- physical planning --------------------------------------------------------------

/// Evaluates a constant expression of the query.
fn evaluate_constant(
    planner: &dyn PhysicalPlanner,
    session: &dyn datafusion::catalog::Session,
    ctx: &datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext,
    expr: &Expr,
) -> Result<ScalarValue> {
    let physical = planner.create_physical_expr(expr, &DFSchema::empty(), session, ctx)?;
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    match physical.evaluate(&batch)? {
        ColumnarValue::Scalar(s) => Ok(s),
        ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0),
    }
}

/// A bound as a value of the time type, in its native units.
fn bound_value(
    value: ScalarValue,
    time_type: &DataType,
    plus_one: bool,
    what: &str,
) -> Result<i64> {
    if value.is_null() {
        return plan_err!("{GAPFILL}: the {what} of the range is NULL");
    }
    let cast = value.cast_to(time_type).map_err(|e| {
        plan_datafusion_err!(
            "{GAPFILL}: the {what} of the range, {value}, is not a {time_type}: {e}"
        )
    })?;
    let raw = cast.cast_to(&DataType::Int64)?;
    let ScalarValue::Int64(Some(v)) = raw else {
        return plan_err!("{GAPFILL}: the {what} of the range is not a time");
    };
    Ok(if plus_one { v.saturating_add(1) } else { v })
}

#[derive(Debug, Default)]
pub struct GapFillPlanner;

#[async_trait]
impl ExtensionPlanner for GapFillPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn datafusion::catalog::Session,
        planning_ctx: &datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(gap) = node.as_any().downcast_ref::<GapFill>() else {
            return Ok(None);
        };
        let in_schema = logical_inputs[0].schema();
        let time_index = in_schema.index_of_column(&gap.time)?;
        let time_type = in_schema.field(time_index).data_type().clone();
        let group_indices = gap
            .groups
            .iter()
            .map(|c| in_schema.index_of_column(c))
            .collect::<Result<Vec<_>>>()?;
        let width = evaluate_constant(planner, session, planning_ctx, &gap.width)?;
        let mut start = None;
        for b in &gap.lower {
            let v = bound_value(
                evaluate_constant(planner, session, planning_ctx, &b.expr)?,
                &time_type,
                b.plus_one,
                "start",
            )?;
            start = Some(start.map_or(v, |s: i64| s.max(v)));
        }
        let mut end = None;
        for b in &gap.upper {
            let v = bound_value(
                evaluate_constant(planner, session, planning_ctx, &b.expr)?,
                &time_type,
                b.plus_one,
                "finish",
            )?;
            end = Some(end.map_or(v, |e: i64| e.min(v)));
        }
        let (Some(start), Some(end)) = (start, end) else {
            return plan_err!("{GAPFILL}: the range has no start or finish");
        };
        let starts = buckets(&width, &time_type, start, end)?;
        let mut fills = Vec::with_capacity(gap.fills.len());
        for fill in &gap.fills {
            let value =
                planner.create_physical_expr(&fill.value, in_schema, session, planning_ctx)?;
            let index = |c: &Option<Column>| -> Result<Option<usize>> {
                c.as_ref().map(|c| in_schema.index_of_column(c)).transpose()
            };
            let kind = match &fill.kind {
                FillKind::Locf {
                    prev,
                    treat_null_as_missing,
                } => FillKindExec::Locf {
                    prev: index(prev)?,
                    treat_null_as_missing: *treat_null_as_missing,
                },
                FillKind::Interpolate { prev, next } => FillKindExec::Interpolate {
                    prev: index(prev)?,
                    next: index(next)?,
                },
            };
            fills.push(PhysicalFill {
                value: value as Arc<dyn PhysicalExpr>,
                kind,
            });
        }
        let exec = GapFillExec::try_new(
            Arc::clone(&physical_inputs[0]),
            time_index,
            group_indices,
            fills,
            Arc::new(starts),
            (start, end),
            Arc::new(gap.schema.as_arrow().clone()),
        )?;
        Ok(Some(Arc::new(exec)))
    }
}
