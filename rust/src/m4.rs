//! `m4(time, value)`: per group the first, minimum, maximum and last points
//! (after Apache IoTDB's M4), as a list of `{time, value}` structs in time
//! order without repeats: what a chart of the group needs to draw exactly.
//!
//! Rules (those of Timelake 0.7's function of the same name):
//! - values are compared in IEEE 754 total order (`f64::total_cmp`): NaN
//!   above +inf, -0.0 below 0.0;
//! - first = earliest time, on equal times the smaller value; last = latest
//!   time, on equal times the larger value; min and max = the earliest among
//!   equal values;
//! - rows whose time or value is null are ignored; a group with none left
//!   gives an empty list;
//! - the list is sorted by (time, value) and a point that plays several roles
//!   appears once.
//!
//! The one-argument form `m4(points)` takes the lists other m4 calls return
//! and gives the m4 of all their readings: every extreme of a union is an
//! extreme of one of its parts, and the parts' lists hold those, so the
//! merge is exact. The partial aggregation state is that same list.

use std::cmp::Ordering;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, FieldRef, Float64Type, TimestampMicrosecondType};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use crate::tsargs::{
    coerced_time, for_each_point, is_numeric_value, points_scalar, points_time, points_type,
};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct M4 {
    signature: Signature,
}

impl M4 {
    pub fn udaf() -> AggregateUDF {
        AggregateUDF::new_from_impl(Self {
            signature: Signature::user_defined(Volatility::Immutable),
        })
    }
}

const USAGE: &str = "m4 takes (time, value), or the lists of {time, value} other m4 calls return";

/// The time type of m4's result for already coerced arguments.
fn result_time(args: &[DataType]) -> Option<DataType> {
    match args {
        [time, _] => coerced_time(time),
        [points] => points_time(points),
        _ => None,
    }
}

impl AggregateUDFImpl for M4 {
    fn name(&self) -> &str {
        "m4"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        match args {
            [time, value] if coerced_time(time).is_some() => {
                if !is_numeric_value(value) {
                    return plan_err!("m4 needs a numeric value, not {value}");
                }
                Ok(vec![coerced_time(time).unwrap(), DataType::Float64])
            }
            [points] if points_time(points).is_some() => {
                Ok(vec![points_type(&points_time(points).unwrap())])
            }
            _ => plan_err!("{USAGE}"),
        }
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match result_time(args) {
            Some(time) => Ok(points_type(&time)),
            None => plan_err!("{USAGE}"),
        }
    }

    fn is_nullable(&self) -> bool {
        false
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args
            .expr_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let Some(time) = result_time(&types) else {
            return plan_err!("{USAGE}");
        };
        Ok(Box::new(M4Accumulator {
            time,
            merging: types.len() == 1,
            m4: M4State::default(),
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![std::sync::Arc::new(arrow::datatypes::Field::new(
            format!("{}[points]", args.name),
            args.return_type().clone(),
            true,
        ))])
    }
}

/// A reading: time in microseconds and value.
pub type Point = (i64, f64);

/// (time, value) order: first is the least, last the greatest.
fn by_time(a: &Point, b: &Point) -> Ordering {
    a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
}

/// (value, time) order: min is the least.
fn by_value(a: &Point, b: &Point) -> Ordering {
    a.1.total_cmp(&b.1).then(a.0.cmp(&b.0))
}

/// The four extremes of the readings seen so far.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct M4State {
    pub first: Option<Point>,
    pub min: Option<Point>,
    pub max: Option<Point>,
    pub last: Option<Point>,
}

fn keep(slot: &mut Option<Point>, p: Point, better: impl Fn(&Point, &Point) -> bool) {
    match slot {
        Some(current) if !better(&p, current) => {}
        _ => *slot = Some(p),
    }
}

impl M4State {
    pub fn add(&mut self, p: Point) {
        keep(&mut self.first, p, |a, b| by_time(a, b) == Ordering::Less);
        keep(&mut self.last, p, |a, b| by_time(a, b) == Ordering::Greater);
        keep(&mut self.min, p, |a, b| by_value(a, b) == Ordering::Less);
        // The larger value, and among equal values the earlier time.
        keep(&mut self.max, p, |a, b| match a.1.total_cmp(&b.1) {
            Ordering::Greater => true,
            Ordering::Equal => a.0 < b.0,
            Ordering::Less => false,
        });
    }

    /// The points in (time, value) order, each once.
    pub fn points(&self) -> Vec<Point> {
        let mut points: Vec<Point> = [self.first, self.min, self.max, self.last]
            .into_iter()
            .flatten()
            .collect();
        points.sort_by(by_time);
        points.dedup_by(|a, b| by_time(a, b) == Ordering::Equal);
        points
    }
}

#[derive(Debug)]
struct M4Accumulator {
    /// The result's time type (microseconds, the argument's zone).
    time: DataType,
    /// One-argument form: the input is lists of points.
    merging: bool,
    m4: M4State,
}

impl Accumulator for M4Accumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if self.merging {
            return self.merge_batch(values);
        }
        let times = values[0].as_primitive::<TimestampMicrosecondType>();
        let vals = values[1].as_primitive::<Float64Type>();
        for i in 0..times.len() {
            if times.is_valid(i) && vals.is_valid(i) {
                self.m4.add((times.value(i), vals.value(i)));
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let m4 = &mut self.m4;
        for_each_point(&states[0], |t, v| m4.add((t, v)))
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        points_scalar(&self.time, &self.m4.points())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}
