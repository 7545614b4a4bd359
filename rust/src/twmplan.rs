//! `timelake.time-weighted-mean`: how the readings of `time_weighted_mean`
//! and `time_weighted_state` reach their accumulator.
//!
//! A time-weighted mean needs each group's readings in time order. The
//! accumulator can keep a constant-size segment of readings that arrive in
//! order ([`crate::twm`]), or keep every reading and sort them at the end
//! (16 bytes a reading, exact in any order). The setting chooses:
//!
//! - `auto` (default): when the aggregate's input is sorted, or is a scan of
//!   Timelake tables whose files are sorted by (series key, time), the
//!   files are read one per stream and merged by the group columns and time
//!   (a sort-preserving hash repartition: no sort), and the aggregate runs
//!   in one phase on constant-size segments. Otherwise (unsorted files,
//!   joins, subqueries) the accumulator keeps the readings.
//! - `merge`: the same, except that an input that cannot be merged is
//!   sorted by (group columns, time), so the state is always constant-size.
//! - `segments`: readings are never reordered: each stretch that arrives in
//!   time order becomes a segment, and segments of one group that overlap
//!   in time are an error (files of a table without dedup that overlap in
//!   time cause that). The cheapest plan, for tables whose files do not
//!   overlap.
//!
//! Two rules: [`TimeWeightedModeRule`] (analyzer) records the setting in
//! force (session, then the table's property, then `auto`) in each call;
//! [`TimeWeightedPlan`] (physical optimizer, after DataFusion's) rebuilds
//! each aggregate holding such calls as described.

use std::sync::Arc;

use arrow::compute::SortOptions;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::Result;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::analyzer::AnalyzerRule;
use datafusion::physical_expr::aggregate::{AggregateExprBuilder, AggregateFunctionExpr};
use datafusion::physical_expr::{LexOrdering, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_optimizer::sanity_checker::SanityCheckPlan;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use crate::provider::TimelakeTable;
use crate::settings::TimelakeOptions;
use crate::sorted_scan::sorted_input;
use crate::twm::{Mode, TimeWeighted};

/// The setting's SQL name without `timelake.`.
pub const SETTING: &str = "time_weighted_mean";

/// The time-weighted function of a readings-form call (time, value
/// [, method]), if `func` is one.
fn readings_call<'a>(
    func: &'a datafusion::logical_expr::AggregateUDF,
    arg_types: &[arrow::datatypes::DataType],
) -> Option<&'a TimeWeighted> {
    let tw = func.inner().as_ref();
    let tw = (tw as &dyn std::any::Any).downcast_ref::<TimeWeighted>()?;
    // The state forms take (state [, method]); readings have a numeric value
    // second.
    (arg_types.len() >= 2 && arg_types[1].is_numeric()).then_some(tw)
}

/// Records the setting in force in every time-weighted call of an
/// aggregate.
#[derive(Debug, Default)]
pub struct TimeWeightedModeRule;

impl AnalyzerRule for TimeWeightedModeRule {
    fn name(&self) -> &str {
        "timelake_time_weighted_mode"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let session = config
            .extensions
            .get::<TimelakeOptions>()
            .and_then(|o| o.values().get(SETTING).cloned())
            .and_then(|v| Mode::parse(&v));
        plan.transform_up_with_subqueries(|p| {
            let LogicalPlan::Aggregate(agg) = &p else {
                return Ok(Transformed::no(p));
            };
            let schema = agg.input.schema();
            let mut mode = None;
            let mut changed = false;
            let mut aggr_expr = Vec::with_capacity(agg.aggr_expr.len());
            for e in &agg.aggr_expr {
                let rewritten = e.clone().transform_up(|e| {
                    let Expr::AggregateFunction(AggregateFunction { func, params }) = &e else {
                        return Ok(Transformed::no(e));
                    };
                    let types = params
                        .args
                        .iter()
                        .map(|a| a.get_type(schema))
                        .collect::<Result<Vec<_>>>()?;
                    let Some(tw) = readings_call(func, &types) else {
                        return Ok(Transformed::no(e));
                    };
                    if tw.mode().is_some() {
                        return Ok(Transformed::no(e));
                    }
                    let m = *mode.get_or_insert_with(|| {
                        session
                            .or_else(|| table_mode(&agg.input))
                            .unwrap_or(Mode::Auto)
                    });
                    changed = true;
                    Ok(Transformed::yes(Expr::AggregateFunction(
                        AggregateFunction {
                            func: Arc::new(tw.with_mode(m)),
                            params: params.clone(),
                        },
                    )))
                })?;
                aggr_expr.push(rewritten.data);
            }
            if !changed {
                return Ok(Transformed::no(p));
            }
            Ok(Transformed::yes(LogicalPlan::Aggregate(
                Aggregate::try_new(Arc::clone(&agg.input), agg.group_expr.clone(), aggr_expr)?,
            )))
        })
        .data()
    }
}

/// The table property of the Timelake tables `plan` scans, when they agree.
fn table_mode(plan: &LogicalPlan) -> Option<Mode> {
    let mut modes = Vec::new();
    let _ = plan.apply(|p| {
        if let LogicalPlan::TableScan(scan) = p {
            if let Ok(provider) = source_as_provider(&scan.source) {
                if let Some(table) = provider.downcast_ref::<TimelakeTable>() {
                    modes.push(
                        table
                            .time_weighted_mean()
                            .and_then(|v| Mode::parse(v.as_str())),
                    );
                }
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    let first = *modes.first()?;
    modes.iter().all(|m| *m == first).then_some(first).flatten()
}

/// Rebuilds the aggregates holding planned time-weighted calls (module
/// comment).
#[derive(Debug, Default)]
pub struct TimeWeightedPlan;

impl PhysicalOptimizerRule for TimeWeightedPlan {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let target = config.execution.target_partitions.max(1);
        let rebuilt = plan.transform_up(|node| {
            let Some(agg) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            match agg.mode() {
                AggregateMode::Final | AggregateMode::FinalPartitioned => {
                    let Some(partial) = partial_below(agg.input()) else {
                        return Ok(Transformed::no(node));
                    };
                    rebuild(partial, Some(agg), target)
                }
                AggregateMode::Single | AggregateMode::SinglePartitioned => {
                    rebuild(agg, None, target)
                }
                _ => Ok(Transformed::no(node)),
            }
        })?;
        if !rebuilt.transformed {
            return Ok(rebuilt.data);
        }
        // DataFusion's checks ran before this rule (it comes after
        // DataFusion's own): check the rebuilt plan again.
        SanityCheckPlan::new().optimize(rebuilt.data, config)
    }

    fn name(&self) -> &str {
        "timelake_time_weighted_plan"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The partial aggregate a final one reads, through the repartitioning or
/// coalescing between them.
fn partial_below(plan: &Arc<dyn ExecutionPlan>) -> Option<&AggregateExec> {
    if let Some(agg) = plan.downcast_ref::<AggregateExec>() {
        return (*agg.mode() == AggregateMode::Partial).then_some(agg);
    }
    let ok = plan.downcast_ref::<RepartitionExec>().is_some()
        || plan.downcast_ref::<CoalescePartitionsExec>().is_some()
        || plan.name() == "CoalesceBatchesExec";
    if !ok {
        return None;
    }
    match plan.children().as_slice() {
        [child] => partial_below(child),
        _ => None,
    }
}

/// `expr` rebuilt with another function of the same name and state.
fn with_function(
    expr: &AggregateFunctionExpr,
    func: datafusion::logical_expr::AggregateUDF,
    schema: &arrow::datatypes::SchemaRef,
) -> Result<Arc<AggregateFunctionExpr>> {
    let mut builder = AggregateExprBuilder::new(Arc::new(func), expr.expressions())
        .schema(Arc::clone(schema))
        .alias(expr.name())
        .order_by(expr.order_bys().to_vec())
        .with_distinct(expr.is_distinct())
        .with_ignore_nulls(expr.ignore_nulls())
        .with_reversed(expr.is_reversed());
    if let Some(display) = expr.human_display() {
        builder = builder.human_display(display);
    }
    Ok(Arc::new(builder.build()?))
}

/// The planned mode of a time-weighted call of readings, if `expr` is one.
fn planned(expr: &AggregateFunctionExpr) -> Option<(&TimeWeighted, Mode)> {
    let tw = (expr.fun().inner().as_ref() as &dyn std::any::Any).downcast_ref::<TimeWeighted>()?;
    let mode = tw.mode()?;
    Some((tw, mode))
}

/// Rebuilds `first` (a partial or single-phase aggregate) and, above it,
/// `last` (its final phase) as described in the module comment; the new
/// plan replaces `last` (or `first` when there is no final phase).
fn rebuild(
    first: &AggregateExec,
    last: Option<&AggregateExec>,
    target: usize,
) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let unchanged = || -> Arc<dyn ExecutionPlan> {
        match last {
            Some(l) => Arc::new(l.clone()),
            None => Arc::new(first.clone()),
        }
    };
    let exprs = first.aggr_expr();
    let calls: Vec<(usize, &TimeWeighted, Mode)> = exprs
        .iter()
        .enumerate()
        .filter_map(|(i, e)| planned(e).map(|(tw, m)| (i, tw, m)))
        .collect();
    if calls.is_empty() {
        return Ok(Transformed::no(unchanged()));
    }
    let mode = calls[0].2;
    let input_schema = first.input_schema();
    let to_segments = |segments: bool| -> Result<Vec<Arc<AggregateFunctionExpr>>> {
        exprs
            .iter()
            .map(|e| match planned(e) {
                Some((tw, _)) if tw.keeps_segments() != segments => {
                    with_function(e, tw.with_segments(segments), &input_schema)
                }
                _ => Ok(Arc::clone(e)),
            })
            .collect()
    };
    if mode == Mode::Segments {
        // Never reorder: the planned calls already keep segments.
        return Ok(Transformed::no(unchanged()));
    }
    // Every call must read the same time expression, and the grouping must
    // be plain, for one order to serve them all.
    let times: Vec<Arc<dyn PhysicalExpr>> = calls
        .iter()
        .map(|(i, _, _)| Arc::clone(&exprs[*i].expressions()[0]))
        .collect();
    let same_time = times.iter().all(|t| t.as_ref() == times[0].as_ref());
    let group_by = first.group_expr();
    if !same_time || !group_by.is_single() {
        // Readings are kept (the calls' default accumulator).
        let exprs = to_segments(false)?;
        return Ok(Transformed::yes(replace(first, last, exprs)?));
    }
    let groups: Vec<Arc<dyn PhysicalExpr>> =
        group_by.expr().iter().map(|(e, _)| Arc::clone(e)).collect();
    let ordering = LexOrdering::new(
        groups
            .iter()
            .chain(std::iter::once(&times[0]))
            .map(|e| PhysicalSortExpr::new(Arc::clone(e), SortOptions::default())),
    )
    .expect("at least the time");
    let (input, sorted) = sorted_input(Arc::clone(first.input()), &ordering)?;
    let input: Arc<dyn ExecutionPlan> = if sorted {
        if groups.is_empty() || input.output_partitioning().partition_count() == 1 {
            Arc::new(SortPreservingMergeExec::new(ordering.clone(), input))
        } else {
            Arc::new(
                RepartitionExec::try_new(input, Partitioning::Hash(groups.clone(), target))?
                    .with_preserve_order(),
            )
        }
    } else if mode == Mode::Merge {
        if groups.is_empty() {
            let single = Arc::new(CoalescePartitionsExec::new(Arc::clone(first.input())));
            Arc::new(SortExec::new(ordering.clone(), single))
        } else {
            let hashed = Arc::new(RepartitionExec::try_new(
                Arc::clone(first.input()),
                Partitioning::Hash(groups.clone(), target),
            )?);
            Arc::new(SortExec::new(ordering.clone(), hashed).with_preserve_partitioning(true))
        }
    } else {
        let exprs = to_segments(false)?;
        return Ok(Transformed::yes(replace(first, last, exprs)?));
    };
    let single_mode = if input.output_partitioning().partition_count() == 1 {
        AggregateMode::Single
    } else {
        AggregateMode::SinglePartitioned
    };
    let agg = AggregateExec::try_new(
        single_mode,
        group_by.clone(),
        to_segments(true)?,
        first.filter_expr().to_vec(),
        input,
        Arc::clone(&input_schema),
    )?;
    let fitted = fit_output(Arc::new(agg), &unchanged())?;
    Ok(Transformed::new(fitted, true, TreeNodeRecursion::Jump))
}

/// `new`, made to give its parent what `old` (the node it replaces) gave:
/// the same number of partitions (a parent planned for one partition reads
/// only the first: the other rows would be lost without an error), the same
/// hash partitioning, and `old`'s output order.
fn fit_output(
    new: Arc<dyn ExecutionPlan>,
    old: &Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let wanted = old.output_partitioning().clone();
    let mut plan = new;
    let ordering = old.output_ordering().cloned();
    let count = plan.output_partitioning().partition_count();
    if wanted.partition_count() == 1 && count > 1 {
        plan = match ordering.clone().or_else(|| plan.output_ordering().cloned()) {
            Some(o)
                if plan
                    .equivalence_properties()
                    .ordering_satisfy(o.iter().cloned())? =>
            {
                Arc::new(SortPreservingMergeExec::new(o, plan))
            }
            _ => Arc::new(CoalescePartitionsExec::new(plan)),
        };
    } else if wanted.partition_count() > 1 && *plan.output_partitioning() != wanted {
        let partitioning = match &wanted {
            Partitioning::Hash(..) => wanted.clone(),
            _ => Partitioning::RoundRobinBatch(wanted.partition_count()),
        };
        plan = Arc::new(RepartitionExec::try_new(plan, partitioning)?);
    }
    if let Some(o) = ordering {
        if !plan
            .equivalence_properties()
            .ordering_satisfy(o.iter().cloned())?
        {
            let single = plan.output_partitioning().partition_count() > 1;
            plan = Arc::new(SortExec::new(o, plan).with_preserve_partitioning(single));
        }
    }
    Ok(plan)
}

/// `first` and `last` with `exprs` as the aggregate expressions.
fn replace(
    first: &AggregateExec,
    last: Option<&AggregateExec>,
    exprs: Vec<Arc<AggregateFunctionExpr>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let new_first = Arc::new(AggregateExec::try_new(
        *first.mode(),
        first.group_expr().clone(),
        exprs.clone(),
        first.filter_expr().to_vec(),
        Arc::clone(first.input()),
        first.input_schema(),
    )?);
    let Some(last) = last else {
        return Ok(new_first);
    };
    // The chain between the phases, rebuilt over the new first phase.
    fn rebuild_chain(
        plan: &Arc<dyn ExecutionPlan>,
        new_first: Arc<dyn ExecutionPlan>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if plan.downcast_ref::<AggregateExec>().is_some() {
            return Ok(new_first);
        }
        let child = rebuild_chain(plan.children()[0], new_first)?;
        Arc::clone(plan).replace_children(
            vec![child],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }
    let chain = rebuild_chain(last.input(), new_first)?;
    Ok(Arc::new(AggregateExec::try_new(
        *last.mode(),
        last.group_expr().clone(),
        exprs,
        last.filter_expr().to_vec(),
        chain,
        last.input_schema(),
    )?))
}
