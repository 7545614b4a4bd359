//! The gap-filling operator ([`crate::gapfill`] plans it): reads aggregate
//! rows sorted by (group columns, bucket), one group at a time, and writes
//! each group's rows with a row for every bucket of the range it lacks.
//!
//! Memory: one group's rows (its buckets, plus rows outside the range)
//! and the output being assembled. The input is one partition, or
//! hash-partitioned by the group columns (every group in one partition).

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{cast, concat, concat_batches, take, SortOptions};
use arrow::datatypes::{DataType, Float64Type, Int64Type, SchemaRef, TimeUnit};
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{exec_err, internal_err, plan_err, Result, ScalarValue};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::Column;
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

/// The gap-filling function's name (errors name it).
pub const GAPFILL: &str = "time_bucket_gapfill";

/// At most this many buckets in one range.
const MAX_BUCKETS: usize = 10_000_000;
/// Output batches hold about this many rows.
const BATCH_ROWS: usize = 8192;

fn nanos_per(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of days since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

/// `t` (units of `per` nanoseconds, UTC) plus `months` calendar months; the
/// day of month is kept (bucket starts are firsts of months).
fn add_months(t: i64, months: i64, per: i64) -> Result<i64> {
    let per_day = 86_400_000_000_000 / per as i128;
    let t = t as i128;
    let (days, rest) = (t.div_euclid(per_day), t.rem_euclid(per_day));
    let (y, m, d) = civil_from_days(days as i64);
    let total = y * 12 + (m - 1) + months;
    let days = days_from_civil(total.div_euclid(12), total.rem_euclid(12) + 1, d) as i128;
    i64::try_from(days * per_day + rest).map_err(|_| {
        datafusion::error::DataFusionError::Execution(format!(
            "{GAPFILL}: a bucket after {t} is out of range"
        ))
    })
}

/// The bucket of `t` (native units of `time_type`) as the function computes
/// it, for one value.
fn bucket_of(width: &ScalarValue, time_type: &DataType, t: i64) -> Result<i64> {
    let udf = crate::gapfill::TimeBucketGapfill::udf();
    let time = ScalarValue::Int64(Some(t)).cast_to(time_type)?;
    let fields = vec![
        Arc::new(arrow::datatypes::Field::new("w", width.data_type(), true)),
        Arc::new(arrow::datatypes::Field::new("t", time_type.clone(), true)),
    ];
    let out = udf.invoke_with_args(datafusion::logical_expr::ScalarFunctionArgs {
        args: vec![
            datafusion::logical_expr::ColumnarValue::Scalar(width.clone()),
            datafusion::logical_expr::ColumnarValue::Scalar(time),
        ],
        arg_fields: fields,
        number_rows: 1,
        return_field: Arc::new(arrow::datatypes::Field::new("b", time_type.clone(), true)),
        config_options: Arc::new(datafusion::common::config::ConfigOptions::default()),
    })?;
    let value = match out {
        datafusion::logical_expr::ColumnarValue::Scalar(s) => s,
        datafusion::logical_expr::ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0)?,
    };
    match value.cast_to(&DataType::Int64)? {
        ScalarValue::Int64(Some(b)) => Ok(b),
        other => exec_err!("{GAPFILL}: no bucket for {t} ({other})"),
    }
}

/// The starts of the buckets of `[start, end)`: from the bucket holding
/// `start` to the last that starts before `end`, in native units of
/// `time_type` (the function's own buckets, so rows find theirs).
pub fn buckets(
    width: &ScalarValue,
    time_type: &DataType,
    start: i64,
    end: i64,
) -> Result<Vec<i64>> {
    if end <= start {
        return Ok(Vec::new());
    }
    let step: Box<dyn Fn(i64) -> Result<i64>> = match (width, time_type) {
        (ScalarValue::Int64(Some(w)), DataType::Int64) => {
            if *w <= 0 {
                return plan_err!("{GAPFILL}: the width must be positive, not {w}");
            }
            let w = *w;
            Box::new(move |b: i64| Ok(b.saturating_add(w)))
        }
        (ScalarValue::IntervalMonthDayNano(Some(iv)), DataType::Timestamp(unit, _)) => {
            if iv.months < 0 || iv.days < 0 || iv.nanoseconds < 0 {
                return plan_err!("{GAPFILL}: the width must be positive");
            }
            if iv.months > 0 {
                if iv.days != 0 || iv.nanoseconds != 0 {
                    return plan_err!(
                        "{GAPFILL}: a width of months cannot also hold days or smaller units"
                    );
                }
                let (unit, months) = (*unit, iv.months as u32);
                let per = nanos_per(&unit);
                let width = width.clone();
                let time_type = time_type.clone();
                Box::new(move |b: i64| {
                    let next = add_months(b, months as i64, per)?;
                    bucket_of(&width, &time_type, next)
                })
            } else {
                let nanos = iv.days as i128 * 86_400_000_000_000 + iv.nanoseconds as i128;
                let per = nanos_per(unit) as i128;
                if nanos <= 0 {
                    return plan_err!("{GAPFILL}: the width must be positive");
                }
                if nanos % per != 0 {
                    return plan_err!(
                        "{GAPFILL}: the width is not a whole number of the time column's units"
                    );
                }
                let w = i64::try_from(nanos / per).map_err(|_| {
                    datafusion::error::DataFusionError::Plan(format!("{GAPFILL}: width too large"))
                })?;
                Box::new(move |b: i64| Ok(b.saturating_add(w)))
            }
        }
        (w, t) => return plan_err!("{GAPFILL}: cannot fill {t} buckets of width {w}"),
    };
    let mut out = Vec::new();
    let mut b = bucket_of(width, time_type, start)?;
    while b < end {
        if out.len() == MAX_BUCKETS {
            return plan_err!(
                "{GAPFILL}: the range holds more than {MAX_BUCKETS} buckets; narrow it or widen \
                 the buckets"
            );
        }
        out.push(b);
        let next = step(b)?;
        if next <= b {
            break;
        }
        b = next;
    }
    Ok(out)
}

#[derive(Debug, Clone)]
pub enum FillKindExec {
    Locf {
        prev: Option<usize>,
        treat_null_as_missing: bool,
    },
    Interpolate {
        prev: Option<usize>,
        next: Option<usize>,
    },
}

#[derive(Debug, Clone)]
pub struct PhysicalFill {
    pub value: Arc<dyn PhysicalExpr>,
    pub kind: FillKindExec,
}

#[derive(Debug)]
pub struct GapFillExec {
    input: Arc<dyn ExecutionPlan>,
    time: usize,
    groups: Vec<usize>,
    fills: Vec<PhysicalFill>,
    buckets: Arc<Vec<i64>>,
    range: (i64, i64),
    schema: SchemaRef,
    cache: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl GapFillExec {
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        time: usize,
        groups: Vec<usize>,
        fills: Vec<PhysicalFill>,
        buckets: Arc<Vec<i64>>,
        range: (i64, i64),
        schema: SchemaRef,
    ) -> Result<Self> {
        let in_schema = input.schema();
        if schema.fields().len() != in_schema.fields().len() + fills.len() {
            return internal_err!("GapFillExec: output schema does not fit the input");
        }
        let ordering = Self::ordering(&in_schema, &groups, time);
        let mut eq = EquivalenceProperties::new(Arc::clone(&schema));
        eq.add_ordering(ordering.iter().cloned());
        let partitioning = if groups.is_empty() {
            Partitioning::UnknownPartitioning(1)
        } else {
            match input.output_partitioning() {
                Partitioning::Hash(exprs, n) => Partitioning::Hash(exprs.clone(), *n),
                other => Partitioning::UnknownPartitioning(other.partition_count()),
            }
        };
        let cache = Arc::new(PlanProperties::new(
            eq,
            partitioning,
            input.pipeline_behavior(),
            Boundedness::Bounded,
        ));
        Ok(Self {
            input,
            time,
            groups,
            fills,
            buckets,
            range,
            schema,
            cache,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    fn ordering(schema: &SchemaRef, groups: &[usize], time: usize) -> LexOrdering {
        LexOrdering::new(groups.iter().chain(std::iter::once(&time)).map(|&i| {
            PhysicalSortExpr::new(
                Arc::new(Column::new(schema.field(i).name(), i)),
                SortOptions::default(),
            )
        }))
        .expect("at least the time")
    }

    fn group_exprs(&self) -> Vec<Arc<dyn PhysicalExpr>> {
        let schema = self.input.schema();
        self.groups
            .iter()
            .map(|&i| Arc::new(Column::new(schema.field(i).name(), i)) as Arc<dyn PhysicalExpr>)
            .collect()
    }
}

impl DisplayAs for GapFillExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let schema = self.input.schema();
        let groups: Vec<&str> = self
            .groups
            .iter()
            .map(|&i| schema.field(i).name().as_str())
            .collect();
        write!(
            f,
            "TimelakeGapFillExec: time={}, groups=[{}], range=[{}, {}), buckets={}, fills={}",
            schema.field(self.time).name(),
            groups.join(", "),
            self.range.0,
            self.range.1,
            self.buckets.len(),
            self.fills.len()
        )
    }
}

impl ExecutionPlan for GapFillExec {
    fn name(&self) -> &'static str {
        "TimelakeGapFillExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.cache
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        if self.groups.is_empty() {
            vec![Distribution::SinglePartition]
        } else {
            vec![Distribution::KeyPartitioned(self.group_exprs())]
        }
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        vec![Some(OrderingRequirements::from(Self::ordering(
            &self.input.schema(),
            &self.groups,
            self.time,
        )))]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for fill in &self.fills {
            if f(&fill.value)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.rebuilt(children)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.rebuilt(children)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.run(partition, context)
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

impl GapFillExec {
    fn rebuilt(&self, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return internal_err!("GapFillExec takes one child");
        }
        Ok(Arc::new(GapFillExec::try_new(
            children.swap_remove(0),
            self.time,
            self.groups.clone(),
            self.fills.clone(),
            Arc::clone(&self.buckets),
            self.range,
            Arc::clone(&self.schema),
        )?))
    }

    fn run(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let in_schema = self.input.schema();
        let converter = if self.groups.is_empty() {
            None
        } else {
            Some(RowConverter::new(
                self.groups
                    .iter()
                    .map(|&i| SortField::new(in_schema.field(i).data_type().clone()))
                    .collect(),
            )?)
        };
        let filler = Filler {
            in_schema,
            schema: Arc::clone(&self.schema),
            time: self.time,
            groups: self.groups.clone(),
            fills: self.fills.clone(),
            buckets: Arc::clone(&self.buckets),
            converter,
            key: None,
            group: Vec::new(),
            out: Vec::new(),
            out_rows: 0,
            seen_rows: false,
            // With no group columns, one partition holds everything: an
            // empty input still gets every bucket.
            fill_empty: self.groups.is_empty(),
        };
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let stream = futures::stream::unfold(
            (input, Some(filler), baseline),
            |(mut input, state, baseline)| async move {
                let mut filler = state?;
                loop {
                    match input.next().await {
                        Some(Ok(batch)) => match filler.push(&batch) {
                            Ok(Some(out)) => {
                                baseline.record_output(out.num_rows());
                                return Some((Ok(out), (input, Some(filler), baseline)));
                            }
                            Ok(None) => continue,
                            Err(e) => return Some((Err(e), (input, None, baseline))),
                        },
                        Some(Err(e)) => return Some((Err(e), (input, None, baseline))),
                        None => {
                            let last = filler.finish();
                            baseline.done();
                            return match last {
                                Ok(Some(out)) => {
                                    baseline.record_output(out.num_rows());
                                    Some((Ok(out), (input, None, baseline)))
                                }
                                Ok(None) => None,
                                Err(e) => Some((Err(e), (input, None, baseline))),
                            };
                        }
                    }
                }
            },
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        )))
    }
}

/// One output row of a group: an input row or a missing bucket.
#[derive(Clone, Copy)]
enum Source {
    Row(usize),
    Missing(i64),
}

struct Filler {
    in_schema: SchemaRef,
    schema: SchemaRef,
    time: usize,
    groups: Vec<usize>,
    fills: Vec<PhysicalFill>,
    buckets: Arc<Vec<i64>>,
    converter: Option<RowConverter>,
    /// The current group's key and rows.
    key: Option<OwnedRow>,
    group: Vec<RecordBatch>,
    /// Filled rows not yet emitted.
    out: Vec<RecordBatch>,
    out_rows: usize,
    seen_rows: bool,
    fill_empty: bool,
}

impl Filler {
    /// Takes a sorted batch; returns output once enough rows are ready.
    fn push(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(None);
        }
        self.seen_rows = true;
        match &self.converter {
            None => self.group.push(batch.clone()),
            Some(converter) => {
                let columns: Vec<ArrayRef> = self
                    .groups
                    .iter()
                    .map(|&i| Arc::clone(batch.column(i)))
                    .collect();
                let rows = converter.convert_columns(&columns)?;
                let mut start = 0;
                for i in 0..n {
                    let same = match &self.key {
                        Some(k) => k.row() == rows.row(i),
                        None => false,
                    };
                    if !same {
                        if i > start {
                            self.group.push(batch.slice(start, i - start));
                        }
                        start = i;
                        self.close_group()?;
                        self.key = Some(rows.row(i).owned());
                    }
                }
                self.group.push(batch.slice(start, n - start));
            }
        }
        if self.out_rows >= BATCH_ROWS {
            return self.take_out();
        }
        Ok(None)
    }

    fn take_out(&mut self) -> Result<Option<RecordBatch>> {
        if self.out.is_empty() {
            return Ok(None);
        }
        let out = concat_batches(&self.schema, &self.out)?;
        self.out.clear();
        self.out_rows = 0;
        Ok(Some(out))
    }

    fn finish(&mut self) -> Result<Option<RecordBatch>> {
        if !self.seen_rows && self.fill_empty {
            self.fill_group(RecordBatch::new_empty(Arc::clone(&self.in_schema)))?;
        } else {
            self.close_group()?;
        }
        self.take_out()
    }

    fn close_group(&mut self) -> Result<()> {
        if self.group.is_empty() {
            return Ok(());
        }
        let rows = concat_batches(&self.in_schema, &self.group)?;
        self.group.clear();
        self.fill_group(rows)
    }

    /// Writes one group's rows and missing buckets to `out`.
    fn fill_group(&mut self, rows: RecordBatch) -> Result<()> {
        let n = rows.num_rows();
        let times = cast(rows.column(self.time), &DataType::Int64)?;
        let times = times.as_primitive::<Int64Type>();
        let buckets = &self.buckets;
        // Merge the rows (sorted by time, NULLs first) with the buckets.
        let mut sources = Vec::with_capacity(n + buckets.len());
        let (mut i, mut k) = (0, 0);
        while i < n || k < buckets.len() {
            let t = (i < n && times.is_valid(i)).then(|| times.value(i));
            if i < n && t.is_none() {
                sources.push(Source::Row(i));
                i += 1;
                continue;
            }
            match (i < n, k < buckets.len()) {
                (true, true) => {
                    let t = t.expect("valid");
                    let b = buckets[k];
                    if t < b {
                        sources.push(Source::Row(i));
                        i += 1;
                    } else if t == b {
                        sources.push(Source::Row(i));
                        i += 1;
                        if i == n || !times.is_valid(i) || times.value(i) != b {
                            k += 1;
                        }
                    } else {
                        sources.push(Source::Missing(b));
                        k += 1;
                    }
                }
                (true, false) => {
                    sources.push(Source::Row(i));
                    i += 1;
                }
                (false, _) => {
                    sources.push(Source::Missing(buckets[k]));
                    k += 1;
                }
            }
        }
        let m = sources.len();
        if m == 0 {
            return Ok(());
        }
        let row_of = |s: &Source| match s {
            Source::Row(i) => Some(*i as u32),
            Source::Missing(_) => None,
        };
        let indices: UInt32Array = sources.iter().map(row_of).collect();
        let first: UInt32Array = sources
            .iter()
            .map(|s| match s {
                Source::Row(i) => Some(*i as u32),
                Source::Missing(_) => (n > 0).then_some(0),
            })
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for (c, column) in rows.columns().iter().enumerate() {
            if c == self.time {
                let values: Int64Array = sources
                    .iter()
                    .map(|s| match s {
                        Source::Row(i) => times.is_valid(*i).then(|| times.value(*i)),
                        Source::Missing(b) => Some(*b),
                    })
                    .collect();
                columns.push(cast(&values, column.data_type())?);
            } else if self.groups.contains(&c) {
                columns.push(take(column, &first, None)?);
            } else {
                columns.push(take(column, &indices, None)?);
            }
        }
        for fill in &self.fills {
            let values = fill.value.evaluate(&rows)?.into_array(n)?;
            let filled = match &fill.kind {
                FillKindExec::Locf {
                    prev,
                    treat_null_as_missing,
                } => locf(&values, &sources, &rows, *prev, *treat_null_as_missing)?,
                FillKindExec::Interpolate { prev, next } => {
                    let time_type = self.in_schema.field(self.time).data_type();
                    interpolate(&values, times, time_type, &sources, &rows, *prev, *next)?
                }
            };
            columns.push(filled);
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.out_rows += batch.num_rows();
        self.out.push(batch);
        Ok(())
    }
}

/// The group's value of a helper column (its first row), or None.
fn helper(rows: &RecordBatch, column: Option<usize>) -> Option<ArrayRef> {
    let c = column?;
    if rows.num_rows() == 0 || rows.column(c).is_null(0) {
        return None;
    }
    Some(rows.column(c).slice(0, 1))
}

fn locf(
    values: &ArrayRef,
    sources: &[Source],
    rows: &RecordBatch,
    prev: Option<usize>,
    treat_null_as_missing: bool,
) -> Result<ArrayRef> {
    let n = values.len();
    // The values, then the one `prev` value at index n.
    let prev = match helper(rows, prev) {
        Some(p) => Some(cast(&p, values.data_type())?),
        None => None,
    };
    let source = match &prev {
        Some(p) => concat(&[values.as_ref(), p.as_ref()])?,
        None => Arc::clone(values),
    };
    let mut last: Option<u32> = None;
    let indices: UInt32Array = sources
        .iter()
        .map(|s| match s {
            Source::Row(i) => {
                if treat_null_as_missing && values.is_null(*i) {
                    last.or(prev.as_ref().map(|_| n as u32))
                } else {
                    last = Some(*i as u32);
                    last
                }
            }
            Source::Missing(_) => last.or(prev.as_ref().map(|_| n as u32)),
        })
        .collect();
    Ok(take(&source, &indices, None)?)
}

/// A `(time, value)` helper as numbers in the time type's units.
fn helper_point(
    rows: &RecordBatch,
    column: Option<usize>,
    time_type: &DataType,
) -> Result<Option<(i64, f64)>> {
    let Some(value) = helper(rows, column) else {
        return Ok(None);
    };
    let Some(s) = value.as_struct_opt() else {
        return exec_err!("interpolate: prev and next must be (time, value) structs");
    };
    let t = cast(&cast(s.column(0), time_type)?, &DataType::Int64)?;
    let v = cast(s.column(1), &DataType::Float64)?;
    if t.is_null(0) || v.is_null(0) {
        return Ok(None);
    }
    Ok(Some((
        t.as_primitive::<Int64Type>().value(0),
        v.as_primitive::<Float64Type>().value(0),
    )))
}

fn interpolate(
    values: &ArrayRef,
    times: &Int64Array,
    time_type: &DataType,
    sources: &[Source],
    rows: &RecordBatch,
    prev: Option<usize>,
    next: Option<usize>,
) -> Result<ArrayRef> {
    let out_type = values.data_type().clone();
    let as_f64 = cast(values, &DataType::Float64)?;
    let v = as_f64.as_primitive::<Float64Type>();
    let point = |i: usize| -> Option<(i64, f64)> {
        (times.is_valid(i) && v.is_valid(i)).then(|| (times.value(i), v.value(i)))
    };
    let m = sources.len();
    // The nearest later point of each output position.
    let mut later: Vec<Option<(i64, f64)>> = vec![None; m + 1];
    for j in (0..m).rev() {
        later[j] = match sources[j] {
            Source::Row(i) => point(i).or(later[j + 1]),
            Source::Missing(_) => later[j + 1],
        };
    }
    let prev = helper_point(rows, prev, time_type)?;
    let next = helper_point(rows, next, time_type)?;
    let mut earlier = prev;
    let mut out: Vec<Option<f64>> = Vec::with_capacity(m);
    for (j, s) in sources.iter().enumerate() {
        match s {
            Source::Row(i) => {
                out.push(v.is_valid(*i).then(|| v.value(*i)));
                if let Some(p) = point(*i) {
                    earlier = Some(p);
                }
            }
            Source::Missing(b) => {
                let after = later[j + 1].or(next);
                out.push(match (earlier, after) {
                    (Some((t0, v0)), Some((t1, v1))) if t1 != t0 => {
                        let x = v0 + (v1 - v0) * ((*b - t0) as f64 / (t1 - t0) as f64);
                        // Integer values are rounded, not truncated.
                        Some(if out_type.is_integer() { x.round() } else { x })
                    }
                    _ => None,
                });
            }
        }
    }
    let array: ArrayRef = Arc::new(Float64Array::from(out));
    Ok(cast(&array, &out_type)?)
}
