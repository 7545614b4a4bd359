//! The ASOF JOIN operator ([`crate::asof`] plans it): one pass over both
//! inputs sorted by (keys, time), ascending, nulls first.
//!
//! Left rows arrive in (keys, time) order, so the right cursor only moves
//! forward. For `>=`/`>` the cursor passes every right row at or before
//! (strictly before) the left row in that order and remembers the last one
//! passed, the candidate (for equal times the first of them); the left row
//! matches it when its keys are equal. For `<=`/`<` the cursor stops at the
//! first right row at or after (strictly after) the left row, which matches
//! when its keys are equal. Memory: the current batch of each side and the
//! candidate row (an index into the current right batch, copied out only
//! when the cursor moves past that batch). Rows whose keys or time are NULL
//! never match.
//!
//! Both inputs are either one partition each (merged from sorted
//! partitions), or hash-partitioned by the keys with each partition sorted:
//! every key lives in one partition, so the partitions are joined
//! independently.

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, BooleanBufferBuilder, RecordBatch, UInt32Array,
};
use arrow::compute::{interleave, take, SortOptions};
use arrow::datatypes::SchemaRef;
use arrow::row::{OwnedRow, RowConverter, Rows, SortField};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{internal_err, plan_err, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::{
    EquivalenceProperties, LexOrdering, OrderingRequirements, PhysicalExpr, PhysicalSortExpr,
};
use datafusion::physical_plan::execution_plan::{Boundedness, ReplaceChildrenOptions};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;

/// The inequality, read as `left_time OP right_time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AsofOp {
    /// The latest right row at or before the left time.
    Ge,
    /// The latest right row strictly before.
    Gt,
    /// The earliest right row at or after.
    Le,
    /// The earliest right row strictly after.
    Lt,
}

impl AsofOp {
    pub fn from_operator(op: Operator) -> Result<Self> {
        match op {
            Operator::GtEq => Ok(Self::Ge),
            Operator::Gt => Ok(Self::Gt),
            Operator::LtEq => Ok(Self::Le),
            Operator::Lt => Ok(Self::Lt),
            other => plan_err!("ASOF JOIN takes >=, >, <= or <, not {other}"),
        }
    }

    /// The same condition with the sides swapped.
    pub fn flipped(self) -> Self {
        match self {
            Self::Ge => Self::Le,
            Self::Gt => Self::Lt,
            Self::Le => Self::Ge,
            Self::Lt => Self::Gt,
        }
    }

    fn backward(self) -> bool {
        matches!(self, Self::Ge | Self::Gt)
    }
}

impl fmt::Display for AsofOp {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Self::Ge => ">=",
            Self::Gt => ">",
            Self::Le => "<=",
            Self::Lt => "<",
        })
    }
}

#[derive(Debug)]
pub struct AsofJoinExec {
    left: Arc<dyn ExecutionPlan>,
    right: Arc<dyn ExecutionPlan>,
    left_keys: Vec<Arc<dyn PhysicalExpr>>,
    right_keys: Vec<Arc<dyn PhysicalExpr>>,
    left_time: Arc<dyn PhysicalExpr>,
    right_time: Arc<dyn PhysicalExpr>,
    op: AsofOp,
    left_outer: bool,
    /// Hash-partitioned by the keys (else one partition per side).
    partitioned: bool,
    schema: SchemaRef,
    cache: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl AsofJoinExec {
    /// (keys…, time), ascending, nulls first: the order both inputs need.
    pub fn ordering_of(
        keys: &[Arc<dyn PhysicalExpr>],
        time: &Arc<dyn PhysicalExpr>,
    ) -> LexOrdering {
        LexOrdering::new(
            keys.iter()
                .chain(std::iter::once(time))
                .map(|e| PhysicalSortExpr::new(Arc::clone(e), SortOptions::default())),
        )
        .expect("at least the time")
    }

    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
        left_keys: Vec<Arc<dyn PhysicalExpr>>,
        right_keys: Vec<Arc<dyn PhysicalExpr>>,
        left_time: Arc<dyn PhysicalExpr>,
        right_time: Arc<dyn PhysicalExpr>,
        op: AsofOp,
        left_outer: bool,
        partitioned: bool,
        schema: SchemaRef,
    ) -> Result<Self> {
        if left_keys.len() != right_keys.len() {
            return internal_err!("AsofJoinExec: key counts differ");
        }
        if partitioned && left_keys.is_empty() {
            return internal_err!("AsofJoinExec: partitioned without keys");
        }
        let n_left = left.schema().fields().len();
        if schema.fields().len() != n_left + right.schema().fields().len() {
            return internal_err!("AsofJoinExec: output schema does not fit the inputs");
        }
        // Left rows come out in their order, and the left columns first, so
        // the left input's ordering and partitioning hold for the output.
        let mut eq = EquivalenceProperties::new(Arc::clone(&schema));
        if let Some(ordering) = left.output_ordering() {
            eq.add_ordering(ordering.iter().cloned());
        }
        let partitioning = match left.output_partitioning() {
            Partitioning::Hash(exprs, n) => Partitioning::Hash(exprs.clone(), *n),
            other => Partitioning::UnknownPartitioning(other.partition_count()),
        };
        let cache = Arc::new(PlanProperties::new(
            eq,
            partitioning,
            left.pipeline_behavior(),
            Boundedness::Bounded,
        ));
        Ok(Self {
            left,
            right,
            left_keys,
            right_keys,
            left_time,
            right_time,
            op,
            left_outer,
            partitioned,
            schema,
            cache,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    fn with_inputs(
        &self,
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
    ) -> Result<Self> {
        Self::try_new(
            left,
            right,
            self.left_keys.clone(),
            self.right_keys.clone(),
            Arc::clone(&self.left_time),
            Arc::clone(&self.right_time),
            self.op,
            self.left_outer,
            self.partitioned,
            Arc::clone(&self.schema),
        )
    }
}

impl DisplayAs for AsofJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .map(|(l, r)| format!("{l} = {r}"))
            .collect();
        write!(
            f,
            "TimelakeAsofJoinExec: {}{} {} {}, on=[{}], mode={}",
            if self.left_outer { "left, " } else { "" },
            self.left_time,
            self.op,
            self.right_time,
            keys.join(", "),
            if self.partitioned {
                "partitioned"
            } else {
                "merged"
            }
        )
    }
}

impl ExecutionPlan for AsofJoinExec {
    fn name(&self) -> &'static str {
        "TimelakeAsofJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.cache
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.left, &self.right]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        if self.partitioned {
            vec![
                Distribution::KeyPartitioned(self.left_keys.clone()),
                Distribution::KeyPartitioned(self.right_keys.clone()),
            ]
        } else {
            vec![Distribution::SinglePartition, Distribution::SinglePartition]
        }
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![
            Some(OrderingRequirements::from(Self::ordering_of(
                &self.left_keys,
                &self.left_time,
            ))),
            Some(OrderingRequirements::from(Self::ordering_of(
                &self.right_keys,
                &self.right_time,
            ))),
        ]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true, false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false, false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for e in self
            .left_keys
            .iter()
            .chain(&self.right_keys)
            .chain([&self.left_time, &self.right_time])
        {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let right = children.pop();
        let left = children.pop();
        match (left, right) {
            (Some(l), Some(r)) => Ok(Arc::new(self.with_inputs(l, r)?)),
            _ => internal_err!("AsofJoinExec takes two children"),
        }
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let right = children.pop();
        let left = children.pop();
        match (left, right) {
            (Some(l), Some(r)) => Ok(Arc::new(self.with_inputs(l, r)?)),
            _ => internal_err!("AsofJoinExec takes two children"),
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let left = self.left.execute(partition, Arc::clone(&context))?;
        let right = self.right.execute(partition, context)?;
        let sort_fields = |keys: &[Arc<dyn PhysicalExpr>],
                           time: &Arc<dyn PhysicalExpr>|
         -> Result<Vec<SortField>> {
            let schema = self.left.schema();
            keys.iter()
                .chain(std::iter::once(time))
                .map(|e| {
                    Ok(SortField::new_with_options(
                        e.data_type(&schema)?,
                        SortOptions::default(),
                    ))
                })
                .collect()
        };
        let full_fields = sort_fields(&self.left_keys, &self.left_time)?;
        let key_fields = full_fields[..self.left_keys.len()].to_vec();
        let joiner = Joiner {
            left,
            right,
            left_keys: self.left_keys.clone(),
            right_keys: self.right_keys.clone(),
            left_time: Arc::clone(&self.left_time),
            right_time: Arc::clone(&self.right_time),
            op: self.op,
            left_outer: self.left_outer,
            schema: Arc::clone(&self.schema),
            right_schema: self.right.schema(),
            full: RowConverter::new(full_fields)?,
            keys: if key_fields.is_empty() {
                None
            } else {
                Some(RowConverter::new(key_fields)?)
            },
            current: None,
            right_done: false,
            candidate: None,
            next_id: 0,
            baseline: BaselineMetrics::new(&self.metrics, partition),
        };
        let stream = futures::stream::unfold(Some(joiner), |state| async move {
            let mut joiner = state?;
            match joiner.next_batch().await {
                Ok(Some(batch)) => Some((Ok(batch), Some(joiner))),
                Ok(None) => {
                    joiner.baseline.done();
                    None
                }
                Err(e) => Some((Err(e), None)),
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// A batch of one side with its sort rows.
struct Sorted {
    /// Distinguishes batches among the sources of one output batch.
    id: u64,
    batch: RecordBatch,
    /// (keys…, time) as comparable rows.
    full: Rows,
    /// The keys alone (equality of keys); None without keys.
    keys: Option<Rows>,
    /// Whether no key and not the time is NULL.
    valid: Vec<bool>,
}

/// The right row a backward search remembers: a row of the current right
/// batch, copied out only when the cursor leaves that batch.
enum Candidate {
    Current(usize),
    Saved {
        id: u64,
        row: RecordBatch,
        full: OwnedRow,
        keys: Option<OwnedRow>,
    },
}

struct Joiner {
    left: SendableRecordBatchStream,
    right: SendableRecordBatchStream,
    left_keys: Vec<Arc<dyn PhysicalExpr>>,
    right_keys: Vec<Arc<dyn PhysicalExpr>>,
    left_time: Arc<dyn PhysicalExpr>,
    right_time: Arc<dyn PhysicalExpr>,
    op: AsofOp,
    left_outer: bool,
    schema: SchemaRef,
    right_schema: SchemaRef,
    full: RowConverter,
    keys: Option<RowConverter>,
    /// The right batch under the cursor and the cursor.
    current: Option<(Sorted, usize)>,
    right_done: bool,
    candidate: Option<Candidate>,
    next_id: u64,
    baseline: BaselineMetrics,
}

fn key_row(sorted: &Sorted, i: usize) -> Option<arrow::row::Row<'_>> {
    sorted.keys.as_ref().map(|k| k.row(i))
}

/// Where a match's right row is: a source of the output batch and a row.
type RightRef = (usize, usize);

impl Joiner {
    fn sorted(
        &mut self,
        batch: RecordBatch,
        keys: &[Arc<dyn PhysicalExpr>],
        time: &Arc<dyn PhysicalExpr>,
    ) -> Result<Sorted> {
        let n = batch.num_rows();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(keys.len() + 1);
        for e in keys.iter().chain(std::iter::once(time)) {
            columns.push(e.evaluate(&batch)?.into_array(n)?);
        }
        let mut valid = BooleanBufferBuilder::new(n);
        valid.append_n(n, true);
        for c in &columns {
            if let Some(nulls) = c.logical_nulls() {
                for i in 0..n {
                    if nulls.is_null(i) {
                        valid.set_bit(i, false);
                    }
                }
            }
        }
        let valid = valid.finish();
        let full = self.full.convert_columns(&columns)?;
        let keys = match &self.keys {
            Some(converter) => Some(converter.convert_columns(&columns[..keys.len()])?),
            None => None,
        };
        self.next_id += 1;
        Ok(Sorted {
            id: self.next_id,
            batch,
            full,
            keys,
            valid: valid.iter().collect(),
        })
    }

    /// Makes `current` a right batch with a row under the cursor; false when
    /// the right input is exhausted.
    async fn fill_right(&mut self) -> Result<bool> {
        loop {
            if let Some((sorted, pos)) = &self.current {
                if *pos < sorted.batch.num_rows() {
                    return Ok(true);
                }
            }
            if self.right_done {
                self.save_candidate();
                self.current = None;
                return Ok(false);
            }
            match self.right.next().await {
                Some(batch) => {
                    let batch = batch?;
                    if batch.num_rows() == 0 {
                        continue;
                    }
                    self.save_candidate();
                    let (keys, time) = (self.right_keys.clone(), Arc::clone(&self.right_time));
                    let sorted = self.sorted(batch, &keys, &time)?;
                    self.current = Some((sorted, 0));
                }
                None => self.right_done = true,
            }
        }
    }

    /// The next output batch: one per non-empty left batch (inner joins may
    /// skip left batches without matches).
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let Some(batch) = self.left.next().await else {
                return Ok(None);
            };
            let batch = batch?;
            if batch.num_rows() == 0 {
                continue;
            }
            let (keys, time) = (self.left_keys.clone(), Arc::clone(&self.left_time));
            let left = self.sorted(batch, &keys, &time)?;
            let out = self.join_batch(&left).await?;
            if let Some(out) = out {
                self.baseline.record_output(out.num_rows());
                return Ok(Some(out));
            }
        }
    }

    async fn join_batch(&mut self, left: &Sorted) -> Result<Option<RecordBatch>> {
        let n = left.batch.num_rows();
        // The right rows of the output come from these batches (the null row
        // first, for unmatched left rows).
        let null_row: Vec<ArrayRef> = self
            .right_schema
            .fields()
            .iter()
            .map(|f| new_null_array(f.data_type(), 1))
            .collect();
        let mut sources: Vec<Vec<ArrayRef>> = vec![null_row];
        let mut source_ids: Vec<u64> = vec![0];
        let mut left_rows: Vec<u32> = Vec::with_capacity(n);
        let mut right_rows: Vec<RightRef> = Vec::with_capacity(n);
        for i in 0..n {
            let found = self.find(left, i).await?;
            let matched = match found {
                Some((id, row)) if left.valid[i] => {
                    let at = match source_ids.iter().rposition(|&s| s == id) {
                        Some(at) => at,
                        None => {
                            sources.push(self.source(id)?);
                            source_ids.push(id);
                            sources.len() - 1
                        }
                    };
                    Some((at, row))
                }
                _ => None,
            };
            match matched {
                Some(r) => {
                    left_rows.push(i as u32);
                    right_rows.push(r);
                }
                None if self.left_outer => {
                    left_rows.push(i as u32);
                    right_rows.push((0, 0));
                }
                None => {}
            }
        }
        if left_rows.is_empty() {
            return Ok(None);
        }
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        if left_rows.len() == n {
            columns.extend(left.batch.columns().iter().cloned());
        } else {
            let indices = UInt32Array::from(left_rows);
            for c in left.batch.columns() {
                columns.push(take(c, &indices, None)?);
            }
        }
        for c in 0..self.right_schema.fields().len() {
            let arrays: Vec<&dyn Array> = sources.iter().map(|s| s[c].as_ref()).collect();
            columns.push(interleave(&arrays, &right_rows)?);
        }
        Ok(Some(RecordBatch::try_new(
            Arc::clone(&self.schema),
            columns,
        )?))
    }

    /// The columns of the right batch or saved candidate row `id` names.
    fn source(&self, id: u64) -> Result<Vec<ArrayRef>> {
        match (&self.current, &self.candidate) {
            (Some((sorted, _)), _) if sorted.id == id => Ok(sorted.batch.columns().to_vec()),
            (_, Some(Candidate::Saved { id: c, row, .. })) if *c == id => {
                Ok(row.columns().to_vec())
            }
            _ => internal_err!("AsofJoinExec lost right batch {id}"),
        }
    }

    /// Copies a candidate in the current batch out of it (before the batch
    /// is replaced).
    fn save_candidate(&mut self) {
        if let (Some(Candidate::Current(pos)), Some((sorted, _))) = (&self.candidate, &self.current)
        {
            let pos = *pos;
            self.next_id += 1;
            self.candidate = Some(Candidate::Saved {
                id: self.next_id,
                row: sorted.batch.slice(pos, 1),
                full: sorted.full.row(pos).owned(),
                keys: key_row(sorted, pos).map(|k| k.owned()),
            });
        }
    }

    /// Moves the right cursor for left row `i` and returns the right row it
    /// matches by order (the caller checks the left row's NULLs): the id of
    /// the right batch or candidate, and the row in it.
    async fn find(&mut self, left: &Sorted, i: usize) -> Result<Option<(u64, usize)>> {
        let target = left.full.row(i);
        if self.op.backward() {
            let strict = self.op == AsofOp::Gt;
            while self.fill_right().await? {
                let (sorted, pos) = self.current.as_mut().expect("filled");
                let r = sorted.full.row(*pos);
                let passes = if strict { r < target } else { r <= target };
                if !passes {
                    break;
                }
                if sorted.valid[*pos] {
                    // Equal (keys, time): the first such row stays.
                    let same = match &self.candidate {
                        Some(Candidate::Current(c)) => sorted.full.row(*c) == r,
                        Some(Candidate::Saved { full, .. }) => full.row() == r,
                        None => false,
                    };
                    if !same {
                        self.candidate = Some(Candidate::Current(*pos));
                    }
                } else {
                    self.candidate = None;
                }
                *pos += 1;
            }
            let want = key_row(left, i);
            Ok(match (&self.candidate, &self.current) {
                (Some(Candidate::Current(c)), Some((sorted, _))) => {
                    (key_row(sorted, *c) == want).then_some((sorted.id, *c))
                }
                (Some(Candidate::Saved { id, keys, .. }), _) => {
                    (keys.as_ref().map(|k| k.row()) == want).then_some((*id, 0))
                }
                _ => None,
            })
        } else {
            let strict = self.op == AsofOp::Lt;
            while self.fill_right().await? {
                let (sorted, pos) = self.current.as_mut().expect("filled");
                let r = sorted.full.row(*pos);
                let skip = if strict { r <= target } else { r < target };
                if !skip {
                    break;
                }
                *pos += 1;
            }
            Ok(match &self.current {
                Some((sorted, pos))
                    if sorted.valid[*pos] && key_row(sorted, *pos) == key_row(left, i) =>
                {
                    Some((sorted.id, *pos))
                }
                _ => None,
            })
        }
    }
}
