//! The time-series SQL extensions every session gets: gap filling
//! ([`crate::gapfill`]), ASOF JOIN ([`crate::asof`]) and the plans of
//! time-weighted means ([`crate::twmplan`]), as rules on the logical plan,
//! operators and a rule on the physical plan.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::Result;
use datafusion::execution::context::{QueryPlanner, SQLOptions};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, PhysicalPlanner};
use datafusion::prelude::SessionContext;

use crate::asof::{AsofFilterPushdown, AsofJoinRule, AsofMarker, AsofPlanner};
use crate::gapfill::{FillFunction, GapFillPlanner, GapFillRule, TimeBucketGapfill};
use crate::twmplan::{TimeWeightedModeRule, TimeWeightedPlan};

/// DataFusion's planner with our operators.
#[derive(Debug, Default)]
struct TimeSeriesQueryPlanner;

#[async_trait]
impl QueryPlanner for TimeSeriesQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        DefaultPhysicalPlanner::with_extension_planners(vec![
            Arc::new(AsofPlanner),
            Arc::new(GapFillPlanner),
        ])
        .create_physical_plan(logical_plan, session)
        .await
    }
}

/// The rules and the planner; call before `build()`.
pub fn install(builder: SessionStateBuilder) -> SessionStateBuilder {
    builder
        .with_analyzer_rule(Arc::new(AsofJoinRule))
        .with_analyzer_rule(Arc::new(GapFillRule))
        .with_analyzer_rule(Arc::new(TimeWeightedModeRule))
        .with_optimizer_rule(Arc::new(AsofFilterPushdown))
        .with_physical_optimizer_rule(Arc::new(TimeWeightedPlan))
        .with_query_planner(Arc::new(TimeSeriesQueryPlanner))
}

/// The functions; call on the context built from [`install`]'s state.
pub fn register_functions(ctx: &SessionContext) {
    ctx.register_udf(TimeBucketGapfill::udf());
    ctx.register_udf(FillFunction::locf());
    ctx.register_udf(FillFunction::interpolate());
    ctx.register_udf(AsofMarker::udf());
}

/// Plans one statement, with ASOF JOIN in the spellings [`crate::asof`]
/// accepts, and the context its execution needs.
///
/// A query is planned on one copy of the session state, the one its tasks
/// run with: `SessionContext::sql` would copy the state (its maps of every
/// function) once more for the `DataFrame`. A statement that changes the
/// session (SET, RESET) goes through the context, which applies it.
pub async fn plan(
    ctx: &SessionContext,
    sql: &str,
    options: SQLOptions,
) -> Result<(Arc<dyn ExecutionPlan>, Arc<TaskContext>)> {
    let state = ctx.state();
    let logical = crate::asof::logical_plan(&state, sql, options).await?;
    if matches!(logical, LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)) {
        let df = ctx.execute_logical_plan(logical).await?;
        let task_ctx = Arc::new(df.task_ctx());
        return Ok((df.create_physical_plan().await?, task_ctx));
    }
    let physical = state.create_physical_plan(&logical).await?;
    Ok((physical, Arc::new(TaskContext::from(&state))))
}
