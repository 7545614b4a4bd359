//! `time_weighted_mean(time, value [, method])` and
//! `time_weighted_state(time, value [, method])`: the mean of a piecewise
//! function over each group's first-to-last reading, and the mergeable state
//! a rollup stores to answer wider buckets exactly.
//!
//! Rules (those of Timelake 0.7's functions of the same names):
//! - `method` is a string literal, `'forward_fill'` (the default: a value
//!   holds until the next reading) or `'linear'` (straight lines between
//!   readings), in any letter case;
//! - rows whose time or value is null are ignored; a group with none left
//!   gives NULL (the state: an empty list);
//! - readings at equal times count as one, the largest value (NaN only when
//!   every value at that time is NaN);
//! - one distinct time gives its value; otherwise the mean is the area under
//!   the function divided by the last minus the first time. NaN and
//!   infinities propagate by IEEE arithmetic.
//!
//! The state is a list of runs, each `{first_time, first_value, first_span,
//! last_time, last_value, last_span, area}` (times and spans in
//! microseconds, area in value x microseconds). Runs that follow each other
//! in time merge exactly: the gap between them adds its area by the method,
//! and runs that touch at one time fix the area of the segments next to that
//! time with the spans. The one-argument forms `time_weighted_mean(state
//! [, method])` and `time_weighted_state(state)` merge stored states so.
//! Runs sorted by start merge in any arrival order; only runs that really
//! overlap in time (a reading of one strictly inside the other's range)
//! cannot merge, and that is an error naming both.
//!
//! From readings the accumulator keeps the group's points and sorts them
//! once (rarely needed: files are sorted by (series, time)), so the answer is
//! exact whatever order files and partitions arrive in; the partial state
//! passed between DataFusion's aggregation stages is those points.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Float64Builder, Int64Array, Int64Builder, ListArray,
    ListBuilder, StructArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::TimestampMicrosecondType;
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr::PhysicalExpr;

use crate::tsargs::{coerced_time, is_numeric_value};

/// How the function between readings is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    ForwardFill,
    Linear,
}

impl Method {
    pub fn parse(name: &str, function: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "forward_fill" => Ok(Self::ForwardFill),
            "linear" => Ok(Self::Linear),
            _ => plan_err!("{function}: method must be 'forward_fill' or 'linear', not {name:?}"),
        }
    }

    /// The area of the segment from `a` to `b` over `span` microseconds.
    fn area(self, a: f64, b: f64, span: i64) -> f64 {
        match self {
            Self::ForwardFill => a * span as f64,
            Self::Linear => (a + b) * 0.5 * span as f64,
        }
    }
}

/// The larger of two readings at one time; NaN only if both are, +0.0 over
/// -0.0, so the choice does not depend on arrival order.
fn larger(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        b
    } else if b.is_nan() || a > b {
        a
    } else if b > a {
        b
    } else if a.is_sign_positive() {
        a
    } else {
        b
    }
}

/// Neumaier's compensated sum, so long runs keep double precision.
#[derive(Debug, Default, Clone, Copy)]
struct Sum {
    sum: f64,
    carry: f64,
}

impl Sum {
    fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if !t.is_finite() {
            // Infinities and NaN: plain IEEE arithmetic, no compensation.
            self.sum = t;
            self.carry = 0.0;
            return;
        }
        if self.sum.abs() >= x.abs() {
            self.carry += (self.sum - t) + x;
        } else {
            self.carry += (x - t) + self.sum;
        }
        self.sum = t;
    }

    fn value(self) -> f64 {
        self.sum + self.carry
    }
}

/// A time-ordered run of readings, summarized.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    pub first_time: i64,
    pub first_value: f64,
    /// From the first reading to the second (0 for a single time).
    pub first_span: i64,
    pub last_time: i64,
    pub last_value: f64,
    /// From the second-to-last reading to the last (0 for a single time).
    pub last_span: i64,
    pub area: f64,
}

impl Run {
    /// The run of `points`, which must be sorted by time.
    pub fn from_sorted(points: &[(i64, f64)], method: Method) -> Option<Run> {
        let mut iter = points.iter().copied();
        let (t0, mut v0) = iter.next()?;
        // Collapse the first time's readings.
        let mut rest = iter.peekable();
        while let Some(&(t, v)) = rest.peek() {
            if t != t0 {
                break;
            }
            v0 = larger(v0, v);
            rest.next();
        }
        let mut run = Run {
            first_time: t0,
            first_value: v0,
            first_span: 0,
            last_time: t0,
            last_value: v0,
            last_span: 0,
            area: 0.0,
        };
        let mut area = Sum::default();
        // The previous distinct time and its value.
        let (mut prev_t, mut prev_v) = (t0, v0);
        // The current distinct time, collapsing as its readings come.
        let mut cur: Option<(i64, f64)> = None;
        let close = |run: &mut Run, area: &mut Sum, prev: (i64, f64), cur: (i64, f64)| {
            let span = cur.0 - prev.0;
            area.add(method.area(prev.1, cur.1, span));
            if run.first_span == 0 {
                run.first_span = span;
            }
            run.last_span = span;
            run.last_time = cur.0;
            run.last_value = cur.1;
        };
        for (t, v) in rest {
            match cur {
                Some((ct, cv)) if ct == t => cur = Some((t, larger(cv, v))),
                Some(c) => {
                    close(&mut run, &mut area, (prev_t, prev_v), c);
                    (prev_t, prev_v) = c;
                    cur = Some((t, v));
                }
                None => cur = Some((t, v)),
            }
        }
        if let Some(c) = cur {
            close(&mut run, &mut area, (prev_t, prev_v), c);
        }
        run.area = area.value();
        Some(run)
    }

    fn single(&self) -> bool {
        self.first_time == self.last_time
    }

    /// This run followed by `next`, which must start at or after this run's
    /// last time.
    pub fn append(self, next: Run, method: Method) -> Run {
        debug_assert!(next.first_time >= self.last_time);
        let mut out = Run {
            first_time: self.first_time,
            first_value: self.first_value,
            first_span: self.first_span,
            last_time: next.last_time,
            last_value: next.last_value,
            last_span: next.last_span,
            area: 0.0,
        };
        if next.first_time > self.last_time {
            let gap = next.first_time - self.last_time;
            out.area = self.area + next.area + method.area(self.last_value, next.first_value, gap);
            if self.single() {
                out.first_span = gap;
            }
            if next.single() {
                out.last_span = gap;
            }
            return out;
        }
        // The runs touch: their readings at that time count as one.
        let joint = larger(self.last_value, next.first_value);
        let mut area = self.area + next.area;
        if joint.to_bits() != self.last_value.to_bits()
            && method == Method::Linear
            && self.last_span > 0
        {
            area += (joint - self.last_value) * 0.5 * self.last_span as f64;
        }
        if joint.to_bits() != next.first_value.to_bits() && next.first_span > 0 {
            area += match method {
                Method::ForwardFill => (joint - next.first_value) * next.first_span as f64,
                Method::Linear => (joint - next.first_value) * 0.5 * next.first_span as f64,
            };
        }
        out.area = area;
        if self.single() {
            out.first_value = joint;
            out.first_span = next.first_span;
        }
        if next.single() {
            out.last_value = joint;
            out.last_span = self.last_span;
        }
        out
    }

    pub fn mean(&self) -> f64 {
        if self.single() {
            self.first_value
        } else {
            self.area / (self.last_time - self.first_time) as f64
        }
    }
}

/// Merges runs that arrived in any order: sorted by start, each appended to
/// the ones before. Runs that overlap in time are an error.
pub fn merge_runs(runs: &mut [Run], method: Method, function: &str) -> Result<Option<Run>> {
    runs.sort_by(|a, b| (a.first_time, a.last_time).cmp(&(b.first_time, b.last_time)));
    let mut iter = runs.iter().copied();
    let Some(mut acc) = iter.next() else {
        return Ok(None);
    };
    for next in iter {
        if next.first_time < acc.last_time {
            return exec_err!(
                "{function}: two states of one group overlap in time ([{}, {}] and [{}, {}] \
                 microseconds since 1970): states merge only when each covers its own time \
                 range, so group the states by the series they were computed for",
                acc.first_time,
                acc.last_time,
                next.first_time,
                next.last_time
            );
        }
        acc = acc.append(next, method);
    }
    Ok(Some(acc))
}

/// The struct of a stored run (Timelake 0.7's layout).
pub fn run_fields() -> Fields {
    Fields::from(vec![
        Field::new("first_time", DataType::Int64, false),
        Field::new("first_value", DataType::Float64, false),
        Field::new("first_span", DataType::Int64, false),
        Field::new("last_time", DataType::Int64, false),
        Field::new("last_value", DataType::Float64, false),
        Field::new("last_span", DataType::Int64, false),
        Field::new("area", DataType::Float64, false),
    ])
}

/// `List<run>`: the type of `time_weighted_state`.
pub fn state_type() -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(run_fields()),
        true,
    )))
}

fn is_state(arg: &DataType) -> bool {
    let (DataType::List(f) | DataType::LargeList(f)) = arg else {
        return false;
    };
    let DataType::Struct(fields) = f.data_type() else {
        return false;
    };
    let want = run_fields();
    fields.len() == want.len()
        && fields.iter().zip(want.iter()).all(|(a, b)| {
            a.name() == b.name()
                && (a.data_type() == b.data_type()
                    || (a.data_type().is_numeric() && b.data_type().is_numeric()))
        })
}

fn runs_scalar(runs: &[Run]) -> Result<ScalarValue> {
    let column = |f: &dyn Fn(&Run) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(runs.iter().map(f)))
    };
    let int = |f: &dyn Fn(&Run) -> i64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(runs.iter().map(f)))
    };
    let structs = StructArray::try_new(
        run_fields(),
        vec![
            int(&|r| r.first_time),
            column(&|r| r.first_value),
            int(&|r| r.first_span),
            int(&|r| r.last_time),
            column(&|r| r.last_value),
            int(&|r| r.last_span),
            column(&|r| r.area),
        ],
        None,
    )?;
    let DataType::List(item) = state_type() else {
        unreachable!("state_type is a list")
    };
    let list = ListArray::try_new(
        item,
        OffsetBuffer::from_lengths([runs.len()]),
        Arc::new(structs),
        None,
    )?;
    Ok(ScalarValue::List(Arc::new(list)))
}

/// Appends every run of the lists in `array` (a coerced state column).
fn read_runs(array: &ArrayRef, out: &mut Vec<Run>) -> Result<()> {
    let Some(list) = array.as_any().downcast_ref::<ListArray>() else {
        return exec_err!("expected time-weighted states, got {}", array.data_type());
    };
    let Some(structs) = list.values().as_any().downcast_ref::<StructArray>() else {
        return exec_err!("expected time-weighted states, got {}", array.data_type());
    };
    let ints: Vec<&Int64Array> = [0, 2, 3, 5]
        .iter()
        .map(|&i| structs.column(i).as_primitive::<Int64Type>())
        .collect();
    let floats: Vec<&Float64Array> = [1, 4, 6]
        .iter()
        .map(|&i| structs.column(i).as_primitive::<Float64Type>())
        .collect();
    let offsets = list.value_offsets();
    for row in 0..list.len() {
        if list.is_null(row) {
            continue;
        }
        for i in offsets[row] as usize..offsets[row + 1] as usize {
            if structs.is_null(i)
                || ints.iter().any(|c| c.is_null(i))
                || floats.iter().any(|c| c.is_null(i))
            {
                continue;
            }
            out.push(Run {
                first_time: ints[0].value(i),
                first_value: floats[0].value(i),
                first_span: ints[1].value(i),
                last_time: ints[2].value(i),
                last_value: floats[1].value(i),
                last_span: ints[3].value(i),
                area: floats[2].value(i),
            });
        }
    }
    Ok(())
}

/// Which of the two functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    Mean,
    State,
}

/// `timelake.time-weighted-mean`: how readings reach the accumulator
/// (crate::twmplan plans it; docs/sql.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Merge sorted inputs into (group, time) order when that needs no sort;
    /// otherwise keep each group's readings.
    Auto,
    /// Always bring readings into (group, time) order, sorting if needed.
    Merge,
    /// Never reorder: constant-size segments; overlapping ones are an error.
    Segments,
}

impl Mode {
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Self::Auto),
            "merge" => Some(Self::Merge),
            "segments" => Some(Self::Segments),
            _ => None,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimeWeighted {
    output: Output,
    signature: Signature,
    /// The setting in force for this call, once planned (None: not planned,
    /// readings are kept).
    mode: Option<Mode>,
    /// From readings: keep constant-size segments instead of the readings
    /// (the physical plan delivers each group's readings in time order, or
    /// the mode is `segments`).
    segments: bool,
}

impl TimeWeighted {
    /// `time_weighted_mean`.
    pub fn mean_udaf() -> AggregateUDF {
        AggregateUDF::new_from_impl(Self::new(Output::Mean, None, false))
    }

    /// `time_weighted_state`.
    pub fn state_udaf() -> AggregateUDF {
        AggregateUDF::new_from_impl(Self::new(Output::State, None, false))
    }

    fn new(output: Output, mode: Option<Mode>, segments: bool) -> Self {
        Self {
            output,
            signature: Signature::user_defined(Volatility::Immutable),
            mode,
            segments,
        }
    }

    /// The same function planned with `mode`.
    pub fn with_mode(&self, mode: Mode) -> AggregateUDF {
        AggregateUDF::new_from_impl(Self::new(self.output, Some(mode), mode == Mode::Segments))
    }

    /// The same function keeping segments (or readings, when false).
    pub fn with_segments(&self, segments: bool) -> AggregateUDF {
        AggregateUDF::new_from_impl(Self::new(self.output, self.mode, segments))
    }

    pub fn mode(&self) -> Option<Mode> {
        self.mode
    }

    pub fn keeps_segments(&self) -> bool {
        self.segments
    }

    fn usage(&self) -> String {
        format!(
            "{} takes (time, value [, method]), or the state other calls return [, method]",
            self.name()
        )
    }
}

/// The method argument: a string literal.
fn method_of(expr: &Arc<dyn PhysicalExpr>, function: &str) -> Result<Method> {
    match expr.downcast_ref::<Literal>().map(|l| l.value()) {
        Some(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => Method::parse(s.as_str(), function),
        _ => plan_err!("{function}: the method must be a string literal"),
    }
}

fn is_text(arg: &DataType) -> bool {
    matches!(
        arg,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
    )
}

impl AggregateUDFImpl for TimeWeighted {
    fn name(&self) -> &str {
        match self.output {
            Output::Mean => "time_weighted_mean",
            Output::State => "time_weighted_state",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let (first, rest) = match args {
            [first, rest @ ..] => (first, rest),
            [] => return plan_err!("{}", self.usage()),
        };
        if is_state(first) && rest.len() <= 1 && rest.iter().all(is_text) {
            let mut out = vec![state_type()];
            out.extend(rest.iter().map(|_| DataType::Utf8));
            return Ok(out);
        }
        if let Some(time) = coerced_time(first) {
            if let [value, method @ ..] = rest {
                if is_numeric_value(value) && method.len() <= 1 && method.iter().all(is_text) {
                    let mut out = vec![time, DataType::Float64];
                    out.extend(method.iter().map(|_| DataType::Utf8));
                    return Ok(out);
                }
            }
        }
        plan_err!("{}", self.usage())
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.output {
            Output::Mean => DataType::Float64,
            Output::State => state_type(),
        })
    }

    fn is_nullable(&self) -> bool {
        self.output == Output::Mean
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let from_states = args
            .expr_fields
            .first()
            .is_some_and(|f| is_state(f.data_type()));
        let method_at = if from_states { 1 } else { 2 };
        let method = match args.exprs.get(method_at) {
            Some(expr) => method_of(expr, self.name())?,
            None => Method::ForwardFill,
        };
        let function = self.name().to_string();
        if from_states {
            Ok(Box::new(StateAccumulator {
                output: self.output,
                method,
                function,
                runs: Vec::new(),
            }))
        } else if self.segments {
            Ok(Box::new(SegmentsAccumulator {
                output: self.output,
                method,
                function,
                runs: Vec::new(),
                stretch: Vec::new(),
            }))
        } else {
            Ok(Box::new(ReadingsAccumulator {
                output: self.output,
                method,
                points: Vec::new(),
                sorted: true,
            }))
        }
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let from_states = args
            .input_fields
            .first()
            .is_some_and(|f| is_state(f.data_type()));
        if from_states || self.segments {
            return Ok(vec![Arc::new(Field::new(
                format!("{}[runs]", args.name),
                state_type(),
                true,
            ))]);
        }
        let list = |name: &str, t: DataType| -> FieldRef {
            Arc::new(Field::new(
                format!("{}[{name}]", args.name),
                DataType::List(Arc::new(Field::new("item", t, true))),
                true,
            ))
        };
        Ok(vec![
            list("times", DataType::Int64),
            list("values", DataType::Float64),
        ])
    }
}

fn finish(output: Output, run: Option<Run>) -> Result<ScalarValue> {
    match output {
        Output::Mean => Ok(ScalarValue::Float64(run.map(|r| r.mean()))),
        Output::State => runs_scalar(run.as_slice()),
    }
}

/// From readings: the group's points, sorted once when they came out of
/// order.
#[derive(Debug)]
struct ReadingsAccumulator {
    output: Output,
    method: Method,
    points: Vec<(i64, f64)>,
    sorted: bool,
}

impl ReadingsAccumulator {
    fn push(&mut self, t: i64, v: f64) {
        if self.sorted && self.points.last().is_some_and(|p| p.0 > t) {
            self.sorted = false;
        }
        self.points.push((t, v));
    }

    fn sort(&mut self) {
        if !self.sorted {
            // Equal times collapse by a symmetric rule, so their order does
            // not matter.
            self.points.sort_unstable_by_key(|p| p.0);
            self.sorted = true;
        }
    }
}

impl Accumulator for ReadingsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let times = values[0].as_primitive::<TimestampMicrosecondType>();
        let vals = values[1].as_primitive::<Float64Type>();
        self.points.reserve(times.len() - times.null_count());
        for i in 0..times.len() {
            if times.is_valid(i) && vals.is_valid(i) {
                self.push(times.value(i), vals.value(i));
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(times), Some(vals)) = (
            states[0].as_any().downcast_ref::<ListArray>(),
            states[1].as_any().downcast_ref::<ListArray>(),
        ) else {
            return exec_err!("time-weighted partial state of an unexpected type");
        };
        for row in 0..times.len() {
            if times.is_null(row) || vals.is_null(row) {
                continue;
            }
            let t = times.value(row);
            let v = vals.value(row);
            let t = t.as_primitive::<Int64Type>();
            let v = v.as_primitive::<Float64Type>();
            for i in 0..t.len() {
                self.push(t.value(i), v.value(i));
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.sort();
        let mut times = ListBuilder::new(Int64Builder::with_capacity(self.points.len()));
        let mut vals = ListBuilder::new(Float64Builder::with_capacity(self.points.len()));
        times
            .values()
            .append_slice(&self.points.iter().map(|p| p.0).collect::<Vec<_>>());
        vals.values()
            .append_slice(&self.points.iter().map(|p| p.1).collect::<Vec<_>>());
        times.append(true);
        vals.append(true);
        Ok(vec![
            ScalarValue::List(Arc::new(times.finish())),
            ScalarValue::List(Arc::new(vals.finish())),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.sort();
        finish(self.output, Run::from_sorted(&self.points, self.method))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.points.capacity() * std::mem::size_of::<(i64, f64)>()
    }
}

/// From stored states: their runs, merged at the end.
#[derive(Debug)]
struct StateAccumulator {
    output: Output,
    method: Method,
    function: String,
    runs: Vec<Run>,
}

impl Accumulator for StateAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        read_runs(&values[0], &mut self.runs)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        read_runs(&states[0], &mut self.runs)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![runs_scalar(&self.runs)?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let run = merge_runs(&mut self.runs, self.method, &self.function)?;
        finish(self.output, run)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.runs.capacity() * std::mem::size_of::<Run>()
    }
}

/// From readings, keeping constant-size segments: each stretch of readings
/// that arrives in time order within one batch becomes a run, and a run
/// that starts where the previous one ends is appended to it at once, so
/// readings delivered in time order keep one run per group. Runs that
/// overlap in time cannot be merged exactly: that is an error naming the
/// setting (crate::twmplan delivers readings in order unless the setting is
/// `segments`).
#[derive(Debug)]
struct SegmentsAccumulator {
    output: Output,
    method: Method,
    function: String,
    runs: Vec<Run>,
    /// The stretch being read.
    stretch: Vec<(i64, f64)>,
}

impl SegmentsAccumulator {
    fn push_run(&mut self, run: Run) {
        match self.runs.last_mut() {
            Some(last) if run.first_time >= last.last_time => *last = last.append(run, self.method),
            _ => self.runs.push(run),
        }
    }

    fn close_stretch(&mut self) {
        if let Some(run) = Run::from_sorted(&self.stretch, self.method) {
            self.push_run(run);
        }
        self.stretch.clear();
    }
}

impl Accumulator for SegmentsAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let times = values[0].as_primitive::<TimestampMicrosecondType>();
        let vals = values[1].as_primitive::<Float64Type>();
        for i in 0..times.len() {
            if !(times.is_valid(i) && vals.is_valid(i)) {
                continue;
            }
            let t = times.value(i);
            if self.stretch.last().is_some_and(|p| p.0 > t) {
                self.close_stretch();
            }
            self.stretch.push((t, vals.value(i)));
        }
        self.close_stretch();
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        read_runs(&states[0], &mut self.runs)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![runs_scalar(&self.runs)?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.runs
            .sort_by(|a, b| (a.first_time, a.last_time).cmp(&(b.first_time, b.last_time)));
        for pair in self.runs.windows(2) {
            if pair[1].first_time < pair[0].last_time {
                return exec_err!(
                    "{}: readings of one group arrived in overlapping stretches ([{}, {}] and \
                     [{}, {}] microseconds since 1970), which timelake.time_weighted_mean = \
                     'segments' cannot combine exactly: use 'auto' or 'merge', which put each \
                     group's readings in time order first",
                    self.function,
                    pair[0].first_time,
                    pair[0].last_time,
                    pair[1].first_time,
                    pair[1].last_time
                );
            }
        }
        let run = merge_runs(&mut self.runs, self.method, &self.function)?;
        finish(self.output, run)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.runs.capacity() * std::mem::size_of::<Run>()
            + self.stretch.capacity() * std::mem::size_of::<(i64, f64)>()
    }
}
