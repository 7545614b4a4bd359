//! The last-value rewrite (SPEC §6): "the newest row of every series",
//!
//! ```sql
//! SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY <series key>
//!                ORDER BY <time> DESC) AS rn FROM t) WHERE rn = 1
//! ```
//!
//! and "the newest row of one series",
//!
//! ```sql
//! SELECT … FROM t WHERE <series key> = … ORDER BY <time> DESC LIMIT 1
//! ```
//!
//! read the table's last-value index (exactly those rows, which C++ holds
//! decoded) instead of scanning and sorting the whole table.
//!
//! The rule matches `Filter(rn = 1)` over `WindowAggr(row_number)` over an
//! unfiltered `TableScan` of a Timelake table, and asks C++ whether the
//! current snapshot has an index for that series key and time column. If
//! so, the nodes become a scan of the index with `1` as the row number;
//! otherwise nothing changes. Rows with equal newest times are one row in
//! the index, the tie rule's winner, which is one of the rows the query may
//! return.
//!
//! It runs twice. As an analyzer rule (after type coercion) it matches the
//! plan as the SQL planner builds it, the subquery's projection between
//! filter and window, so that the optimizer never works on the window plan.
//! As an optimizer rule it matches the forms the optimizer first has to
//! simplify, and the newest row of one series.

use std::fmt;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, ScalarValue, TableReference};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    lit, BinaryExpr, Expr, LogicalPlan, LogicalPlanBuilder, Operator, TableProviderFilterPushDown,
    TableScanBuilder, TableType, WindowFunctionDefinition,
};
use datafusion::optimizer::analyzer::AnalyzerRule;
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion::physical_plan::ExecutionPlan;

use crate::provider::TimelakeTable;

#[derive(Debug, Default)]
pub struct LastValueRewrite;

/// The name of a bare column expression.
fn column_name(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Column(c) => Some(c.name.as_str()),
        _ => None,
    }
}

/// Whether a cast to `to` keeps every row number (a `UInt64` from 1 up)
/// as the same number: type coercion's widening casts of `rn = 1`
/// (`Decimal128(20, 0)` on both sides). A cast that could change which rows
/// equal 1 (to `BOOLEAN`, say, where every row number is true) is not one.
fn keeps_row_numbers(to: &DataType) -> bool {
    match to {
        DataType::Int64 | DataType::UInt64 | DataType::Float64 => true,
        DataType::Decimal128(precision, scale) | DataType::Decimal256(precision, scale) => {
            i16::from(*precision) - i16::from(*scale) >= 20
        }
        _ => false,
    }
}

/// `expr` without the value-keeping casts type coercion put around it.
fn uncast(expr: &Expr) -> &Expr {
    match expr {
        Expr::Cast(c) if keeps_row_numbers(c.field.data_type()) => uncast(&c.expr),
        Expr::TryCast(c) if keeps_row_numbers(c.field.data_type()) => uncast(&c.expr),
        other => other,
    }
}

/// Whether `expr` is the integer literal 1 (perhaps cast).
fn is_one(expr: &Expr) -> bool {
    matches!(
        uncast(expr),
        Expr::Literal(
            ScalarValue::UInt64(Some(1))
                | ScalarValue::Int64(Some(1))
                | ScalarValue::Int32(Some(1)),
            _
        )
    )
}

/// Whether `predicate` is `<column> = 1` (either side, perhaps with casts)
/// for the column `name` of the relation `qualifier`.
fn is_first_row_named(predicate: &Expr, qualifier: Option<&TableReference>, name: &str) -> bool {
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Eq,
        right,
    }) = predicate
    else {
        return false;
    };
    let is_column = |e: &Expr| match uncast(e) {
        Expr::Column(c) => {
            c.name == name && (c.relation.is_none() || c.relation.as_ref() == qualifier)
        }
        _ => false,
    };
    (is_column(left) && is_one(right)) || (is_column(right) && is_one(left))
}

/// Whether `predicate` is `<column> = 1` (either side).
fn is_first_row(predicate: &Expr, column: &str) -> bool {
    is_first_row_named(predicate, None, column)
}

/// Rewrites the plan as the SQL planner builds it, so that the optimizer
/// starts from the index (the common case).
impl AnalyzerRule for LastValueRewrite {
    fn name(&self) -> &str {
        "timelake_last_value_rewrite"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> DFResult<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            Ok(match self.try_rewrite_analyzed(&node)? {
                Some(rewritten) => Transformed::yes(rewritten),
                None => Transformed::no(node),
            })
        })
        .map(|t| t.data)
    }
}

/// Rewrites the optimized plan: the forms the analyzer's rewrite does not
/// know, once the optimizer has simplified them, and the newest row of one
/// series.
impl OptimizerRule for LastValueRewrite {
    fn name(&self) -> &str {
        "timelake_last_value_rewrite"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> DFResult<Transformed<LogicalPlan>> {
        match self.try_rewrite(&plan)? {
            Some(rewritten) => Ok(Transformed::yes(rewritten)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// `<column> = <literal>` of every conjunct of `predicate`, or None when a
/// conjunct is anything else.
fn equality_columns(predicate: &Expr) -> Option<Vec<String>> {
    split_conjunction(predicate)
        .into_iter()
        .map(|conjunct| match conjunct {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) => match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), Expr::Literal(..)) | (Expr::Literal(..), Expr::Column(c)) => {
                    Some(c.name.clone())
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// A scan of `scan`'s table through the index of `provider`, keeping the
/// scan's projection and filters.
fn index_scan(
    scan: &datafusion::logical_expr::TableScan,
    provider: &Arc<dyn TableProvider>,
    index: RecordBatch,
) -> DFResult<LogicalPlan> {
    let source = provider_as_source(Arc::new(LastValueTable {
        table: Arc::clone(provider),
        index,
    }));
    Ok(LogicalPlan::TableScan(
        TableScanBuilder::new(scan.table_name.clone(), source)
            .with_projection(scan.projection.clone())
            .with_filters(scan.filters.clone())
            .build()?,
    ))
}

impl LastValueRewrite {
    /// The optimized form: `Filter(rn = 1)` over `WindowAggr`, perhaps with
    /// a projection of bare columns between them.
    fn try_rewrite(&self, plan: &LogicalPlan) -> DFResult<Option<LogicalPlan>> {
        if let LogicalPlan::Sort(_) = plan {
            return self.try_rewrite_top_one(plan);
        }
        let LogicalPlan::Filter(filter) = plan else {
            return Ok(None);
        };
        // DataFusion may prune columns between the filter and the window
        // with a projection of bare columns; it is kept above the rewrite.
        let (projection, below) = match filter.input.as_ref() {
            LogicalPlan::Projection(p) if p.expr.iter().all(|e| column_name(e).is_some()) => {
                (Some(p), p.input.as_ref())
            }
            other => (None, other),
        };
        let LogicalPlan::Window(window) = below else {
            return Ok(None);
        };
        let fields = window.schema.fields();
        let row_number_name = fields[fields.len() - 1].name().clone();
        if !is_first_row(&filter.predicate, &row_number_name) {
            return Ok(None);
        }
        let Some(new_scan) = newest_per_series(window)? else {
            return Ok(None);
        };
        let mut exprs: Vec<Expr> = new_scan
            .schema()
            .columns()
            .into_iter()
            .map(|c: Column| Expr::Column(c))
            .collect();
        exprs.push(lit(ScalarValue::UInt64(Some(1))).alias(row_number_name));
        let mut rewritten = LogicalPlanBuilder::from(new_scan).project(exprs)?;
        if let Some(p) = projection {
            rewritten = rewritten.project(p.expr.clone())?;
        }
        Ok(Some(rewritten.build()?))
    }

    /// The form the SQL planner builds, before the optimizer runs:
    /// `Filter(rn = 1)` over the subquery's projection (which names the row
    /// number `rn`, perhaps under a subquery alias) over `WindowAggr`.
    /// Rewritten here, the optimizer only ever sees the small plan over the
    /// index instead of optimizing the window plan first.
    fn try_rewrite_analyzed(&self, plan: &LogicalPlan) -> DFResult<Option<LogicalPlan>> {
        let LogicalPlan::Filter(filter) = plan else {
            return Ok(None);
        };
        let (alias, projection) = match filter.input.as_ref() {
            LogicalPlan::SubqueryAlias(a) => match a.input.as_ref() {
                LogicalPlan::Projection(p) => (Some(a), p),
                _ => return Ok(None),
            },
            LogicalPlan::Projection(p) => (None, p),
            _ => return Ok(None),
        };
        let LogicalPlan::Window(window) = projection.input.as_ref() else {
            return Ok(None);
        };
        // The window's row number as the projection passes it on: the one
        // output that is exactly that column (perhaps renamed).
        let fields = window.schema.fields();
        let row_number = fields[fields.len() - 1].name();
        let is_row_number = |e: &Expr| match e {
            Expr::Alias(a) => matches!(a.expr.as_ref(), Expr::Column(c) if &c.name == row_number),
            Expr::Column(c) => &c.name == row_number,
            _ => false,
        };
        let Some(position) = projection.expr.iter().position(is_row_number) else {
            return Ok(None);
        };
        let (qualifier, field) = filter.input.schema().qualified_field(position);
        if !is_first_row_named(&filter.predicate, qualifier, field.name()) {
            return Ok(None);
        }
        let Some(new_scan) = newest_per_series(window)? else {
            return Ok(None);
        };
        // Every row of the index is its series' first: the row number is 1.
        // An output keeps its name (`rn`, or the name DataFusion gave an
        // expression of the row number), so the plan above still finds it.
        let exprs = projection
            .expr
            .iter()
            .zip(projection.schema.fields())
            .map(|(e, field)| {
                let replaced = e.clone().transform_up(|node| {
                    Ok(match node {
                        Expr::Column(c) if &c.name == row_number => {
                            Transformed::yes(lit(ScalarValue::UInt64(Some(1))))
                        }
                        other => Transformed::no(other),
                    })
                })?;
                Ok(match replaced.data {
                    named @ Expr::Alias(_) => named,
                    other if replaced.transformed => other.alias(field.name()),
                    other => other,
                })
            })
            .collect::<DFResult<Vec<_>>>()?;
        let rewritten = LogicalPlanBuilder::from(new_scan).project(exprs)?;
        Ok(Some(match alias {
            Some(a) => rewritten.alias(a.alias.clone())?.build()?,
            None => rewritten.build()?,
        }))
    }

    /// `… WHERE <series key> = … ORDER BY <time> DESC LIMIT 1`: the newest
    /// row of one series. With equalities on every series key column and
    /// nothing else filtered, the index holds the answer; the filter and
    /// the sort stay, over one row per series.
    fn try_rewrite_top_one(&self, plan: &LogicalPlan) -> DFResult<Option<LogicalPlan>> {
        let LogicalPlan::Sort(sort) = plan else {
            return Ok(None);
        };
        if sort.fetch != Some(1) || sort.expr.len() != 1 || sort.expr[0].asc {
            return Ok(None);
        }
        let Some(order_by) = column_name(&sort.expr[0].expr) else {
            return Ok(None);
        };
        // A projection of plain columns may sit between the sort and the
        // filter (SELECT a, b, time … ORDER BY time): rows pass it unchanged.
        let (projection, below) = match sort.input.as_ref() {
            LogicalPlan::Projection(p) if p.expr.iter().all(|e| column_name(e).is_some()) => {
                (Some(sort.input.as_ref()), p.input.as_ref())
            }
            other => (None, other),
        };
        let LogicalPlan::Filter(filter) = below else {
            return Ok(None);
        };
        let LogicalPlan::TableScan(scan) = filter.input.as_ref() else {
            return Ok(None);
        };
        if scan.fetch.is_some() {
            return Ok(None);
        }
        let Some(mut columns) = equality_columns(&filter.predicate) else {
            return Ok(None);
        };
        for f in &scan.filters {
            if equality_columns(f).is_none() {
                return Ok(None);
            }
        }
        columns.sort();
        columns.dedup();
        let Some(new_scan) = index_scan_for(scan, &columns, order_by)? else {
            return Ok(None);
        };
        let new_filter = LogicalPlan::Filter(datafusion::logical_expr::Filter::try_new(
            filter.predicate.clone(),
            Arc::new(new_scan),
        )?);
        let below_sort = match projection {
            Some(p) => p.with_new_exprs(p.expressions(), vec![new_filter])?,
            None => new_filter,
        };
        Ok(Some(
            plan.with_new_exprs(plan.expressions(), vec![below_sort])?,
        ))
    }
}

/// A scan of the last-value index that answers `window`: one
/// `row_number()` partitioned by plain columns and ordered by one column
/// descending, over an unfiltered scan of a Timelake table whose current
/// snapshot has an index for that series key and time column (C++ checks).
fn newest_per_series(window: &datafusion::logical_expr::Window) -> DFResult<Option<LogicalPlan>> {
    let LogicalPlan::TableScan(scan) = window.input.as_ref() else {
        return Ok(None);
    };
    if !scan.filters.is_empty() || scan.fetch.is_some() || window.window_expr.len() != 1 {
        return Ok(None);
    }
    let Expr::WindowFunction(function) = window.window_expr[0].clone().unalias() else {
        return Ok(None);
    };
    let WindowFunctionDefinition::WindowUDF(udf) = &function.fun else {
        return Ok(None);
    };
    let params = &function.params;
    if udf.name() != "row_number"
        || !params.args.is_empty()
        || params.filter.is_some()
        || params.partition_by.is_empty()
        || params.order_by.len() != 1
        || params.order_by[0].asc
    {
        return Ok(None);
    }
    let Some(partition_by) = params
        .partition_by
        .iter()
        .map(|e| column_name(e).map(str::to_string))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let Some(order_by) = column_name(&params.order_by[0].expr) else {
        return Ok(None);
    };
    index_scan_for(scan, &partition_by, order_by)
}

/// A scan of `scan`'s table through its last-value index, when `scan` reads
/// a Timelake table whose current snapshot has an index for the series key
/// `partition_by` and the time column `order_by` (C++ checks both).
fn index_scan_for(
    scan: &datafusion::logical_expr::TableScan,
    partition_by: &[String],
    order_by: &str,
) -> DFResult<Option<LogicalPlan>> {
    let provider = source_as_provider(&scan.source)?;
    let Some(table) = provider.downcast_ref::<TimelakeTable>() else {
        return Ok(None);
    };
    let index = table
        .last_value_index(partition_by, order_by)
        .map_err(crate::error::TlError::into_datafusion)?;
    let Some(index) = index else {
        return Ok(None);
    };
    index_scan(scan, &provider, index).map(Some)
}

/// A Timelake table read through its last-value index: same schema, the
/// index's rows as C++ holds them (from the head object or the index file).
struct LastValueTable {
    table: Arc<dyn TableProvider>,
    index: RecordBatch,
}

impl fmt::Debug for LastValueTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LastValueTable")
            .field("index", &format!("{} rows inline", self.index.num_rows()))
            .finish()
    }
}

#[async_trait]
impl TableProvider for LastValueTable {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DFResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        let source = MemorySourceConfig::try_new(
            &[vec![self.index.clone()]],
            self.schema(),
            projection.cloned(),
        )?
        .with_limit(limit);
        Ok(DataSourceExec::from_data_source(source))
    }
}
