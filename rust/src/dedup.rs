//! Dedup on read: of the rows with equal key (series…, time), only the last
//! one in the merge order survives.
//!
//! The input is one stream sorted by (key, insertion time, commit sequence),
//! ascending, so the last row of every run of equal keys is the tie rule's
//! winner: the latest insertion, then the later commit, then the later input
//! row (rows of one file keep their order).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{LexOrdering, OrderingRequirements, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, ReplaceChildrenOptions};
use datafusion::physical_plan::filter_pushdown::{
    ChildFilterDescription, FilterDescription, FilterPushdownPhase,
};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;

/// Keeps the last row of every run of equal `keys` in its single, sorted
/// input partition.
#[derive(Debug)]
pub struct DedupExec {
    input: Arc<dyn ExecutionPlan>,
    /// Column indices of the key (series…, time) in the input schema.
    keys: Vec<usize>,
    /// The order the input must have: the keys, then the tie breakers.
    ordering: LexOrdering,
    cache: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl DedupExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, keys: Vec<usize>, ordering: LexOrdering) -> Self {
        let cache = Arc::new(PlanProperties::new(
            input.equivalence_properties().clone(),
            Partitioning::UnknownPartitioning(1),
            input.pipeline_behavior(),
            Boundedness::Bounded,
        ));
        Self {
            input,
            keys,
            ordering,
            cache,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for DedupExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let schema = self.input.schema();
        let keys: Vec<&str> = self
            .keys
            .iter()
            .map(|&i| schema.field(i).name().as_str())
            .collect();
        write!(f, "TimelakeDedupExec: keys=[{}]", keys.join(", "))
    }
}

impl ExecutionPlan for DedupExec {
    fn name(&self) -> &'static str {
        "TimelakeDedupExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.cache
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![Some(OrderingRequirements::from(self.ordering.clone()))]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DFResult<TreeNodeRecursion>,
    ) -> DFResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DedupExec::new(
            children.swap_remove(0),
            self.keys.clone(),
            self.ordering.clone(),
        )))
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DFResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(DedupExec::new(
            children.swap_remove(0),
            self.keys.clone(),
            self.ordering.clone(),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DFResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "TimelakeDedupExec has one partition, asked for {partition}"
            )));
        }
        let input = self.input.execute(0, context)?;
        let schema = input.schema();
        let fields = self
            .keys
            .iter()
            .map(|&i| SortField::new(schema.field(i).data_type().clone()))
            .collect();
        let state = Deduper {
            schema: Arc::clone(&schema),
            keys: self.keys.clone(),
            converter: RowConverter::new(fields)?,
            pending: None,
        };
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let stream = futures::stream::unfold(
            (input, Some(state), baseline),
            |(mut input, state, baseline)| async move {
                let mut state = state?;
                loop {
                    match input.next().await {
                        Some(Ok(batch)) => match state.push(&batch) {
                            Ok(Some(out)) => {
                                baseline.record_output(out.num_rows());
                                return Some((Ok(out), (input, Some(state), baseline)));
                            }
                            Ok(None) => continue,
                            Err(e) => return Some((Err(e), (input, None, baseline))),
                        },
                        Some(Err(e)) => return Some((Err(e), (input, None, baseline))),
                        None => {
                            let last = state.pending.take().map(|(row, _)| row);
                            baseline.done();
                            return last.map(|row| {
                                baseline.record_output(row.num_rows());
                                (Ok(row), (input, None, baseline))
                            });
                        }
                    }
                }
            },
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    /// Filters on key columns alone may pass below dedup: they keep or drop
    /// every version of a key alike, so row-group and page pruning stays
    /// possible for time ranges and series. Filters on other columns must
    /// see only the surviving version, so they stay above.
    fn gather_filters_for_pushdown(
        &self,
        _phase: FilterPushdownPhase,
        parent_filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> DFResult<FilterDescription> {
        let allowed: HashSet<usize> = self.keys.iter().copied().collect();
        let child = ChildFilterDescription::from_child_with_allowed_indices(
            &parent_filters,
            allowed,
            &self.input,
        )?;
        Ok(FilterDescription::new().with_child(child))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// The streaming state: the last row seen is held back until the next row
/// shows whether it ends its run.
struct Deduper {
    schema: SchemaRef,
    keys: Vec<usize>,
    converter: RowConverter,
    /// The held-back last row (a one-row batch) and its key.
    pending: Option<(RecordBatch, OwnedRow)>,
}

impl Deduper {
    /// Takes the next sorted batch; returns the rows known to be the last of
    /// their run (None when there is nothing to emit yet).
    fn push(&mut self, batch: &RecordBatch) -> DFResult<Option<RecordBatch>> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(None);
        }
        let columns: Vec<_> = self
            .keys
            .iter()
            .map(|&i| Arc::clone(batch.column(i)))
            .collect();
        let rows = self.converter.convert_columns(&columns)?;
        let mut out = Vec::with_capacity(2);
        if let Some((row, key)) = self.pending.take() {
            if key.row() != rows.row(0) {
                out.push(row);
            }
        }
        // Row i survives when row i+1 has another key; the last row waits.
        let keep: BooleanArray = (0..n)
            .map(|i| Some(i + 1 < n && rows.row(i) != rows.row(i + 1)))
            .collect();
        let kept = filter_record_batch(batch, &keep)?;
        if kept.num_rows() > 0 {
            out.push(kept);
        }
        self.pending = Some((batch.slice(n - 1, 1), rows.row(n - 1).owned()));
        match out.len() {
            0 => Ok(None),
            1 => Ok(out.pop()),
            _ => Ok(Some(concat_batches(&self.schema, &out)?)),
        }
    }
}
