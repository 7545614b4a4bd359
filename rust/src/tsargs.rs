//! Argument types shared by the time-series aggregates ([`crate::m4`],
//! [`crate::twm`]): which inputs they take, what those are coerced to, and
//! the lists of points they return. A leaf: it uses no other module of ours.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, Float64Array, ListArray, StructArray, TimestampMicrosecondArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Fields, TimeUnit};
use datafusion::common::{exec_err, Result, ScalarValue};

/// The time type a time argument is coerced to: microseconds (Timelake's
/// unit) in the argument's own zone, so UTC columns stay UTC.
pub fn coerced_time(arg: &DataType) -> Option<DataType> {
    match arg {
        DataType::Timestamp(_, tz) => Some(DataType::Timestamp(TimeUnit::Microsecond, tz.clone())),
        _ => None,
    }
}

/// Whether a value argument is numeric (it is then read as a double).
pub fn is_numeric_value(arg: &DataType) -> bool {
    arg.is_numeric()
}

/// The `{time, value}` struct of a point, with `time` of type `time`.
pub fn point_fields(time: &DataType) -> Fields {
    Fields::from(vec![
        Field::new("time", time.clone(), true),
        Field::new("value", DataType::Float64, true),
    ])
}

/// `List<{time, value}>`: what m4 returns and its one-argument form takes.
pub fn points_type(time: &DataType) -> DataType {
    DataType::List(Arc::new(Field::new(
        "item",
        DataType::Struct(point_fields(time)),
        true,
    )))
}

/// The time type inside a `List<{time, value}>` (any list of a struct whose
/// first two fields are a timestamp `time` and a numeric `value`), coerced.
pub fn points_time(arg: &DataType) -> Option<DataType> {
    let item = match arg {
        DataType::List(f) | DataType::LargeList(f) => f,
        _ => return None,
    };
    let DataType::Struct(fields) = item.data_type() else {
        return None;
    };
    if fields.len() != 2 || fields[0].name() != "time" || fields[1].name() != "value" {
        return None;
    }
    if !is_numeric_value(fields[1].data_type()) {
        return None;
    }
    coerced_time(fields[0].data_type())
}

/// A one-row list scalar of points, built from `(time, value)` pairs.
pub fn points_scalar(time: &DataType, points: &[(i64, f64)]) -> Result<ScalarValue> {
    let times = TimestampMicrosecondArray::from_iter_values(points.iter().map(|p| p.0));
    let times: ArrayRef = match time {
        DataType::Timestamp(_, tz) => Arc::new(times.with_timezone_opt(tz.clone())),
        other => return exec_err!("points of time type {other}"),
    };
    let values: ArrayRef = Arc::new(Float64Array::from_iter_values(points.iter().map(|p| p.1)));
    let structs = StructArray::try_new(point_fields(time), vec![times, values], None)?;
    let item: FieldRef = Arc::new(Field::new(
        "item",
        DataType::Struct(point_fields(time)),
        true,
    ));
    let list = ListArray::try_new(
        item,
        OffsetBuffer::from_lengths([points.len()]),
        Arc::new(structs),
        None,
    )?;
    Ok(ScalarValue::List(Arc::new(list)))
}

/// Calls `f(row, time, value)` for every non-null point in every non-null
/// list of `array` (a coerced `List<{time: Timestamp(µs), value: Float64}>`).
pub fn for_each_point(array: &ArrayRef, mut f: impl FnMut(i64, f64)) -> Result<()> {
    let Some(list) = array.as_any().downcast_ref::<ListArray>() else {
        return exec_err!("expected a list of points, got {}", array.data_type());
    };
    let Some(structs) = list.values().as_any().downcast_ref::<StructArray>() else {
        return exec_err!("expected a list of points, got {}", array.data_type());
    };
    let times = structs
        .column(0)
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>();
    let values = structs.column(1).as_any().downcast_ref::<Float64Array>();
    let (Some(times), Some(values)) = (times, values) else {
        return exec_err!("expected a list of points, got {}", array.data_type());
    };
    let offsets = list.value_offsets();
    for row in 0..list.len() {
        if list.is_null(row) {
            continue;
        }
        for i in offsets[row] as usize..offsets[row + 1] as usize {
            if structs.is_null(i) || times.is_null(i) || values.is_null(i) {
                continue;
            }
            f(times.value(i), values.value(i));
        }
    }
    Ok(())
}
