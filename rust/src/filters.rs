//! Translation of DataFusion filter expressions into the JSON filters of the
//! `plan_scan` request (see the header).
//!
//! C++ uses these filters to skip data files (Iceberg partition values and
//! column statistics), never to decide results: DataFusion applies every
//! filter again. So a translation may be *weaker* than the SQL (match more
//! files) but never stronger. Anything that cannot be translated that way is
//! left out.

use arrow::datatypes::{DataType, Schema, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Between, BinaryExpr, Cast, Expr, Operator, TryCast};
use serde_json::{json, Value};

/// Translates the conjuncts of `filters` that can be expressed.
pub fn translate_filters(filters: &[Expr], schema: &Schema) -> Vec<Value> {
    filters
        .iter()
        .flat_map(split_conjunction)
        .flat_map(|conjunct| translate_conjunct(conjunct, schema))
        .collect()
}

/// One conjunct becomes zero, one or (BETWEEN) two JSON filters.
fn translate_conjunct(expr: &Expr, schema: &Schema) -> Vec<Value> {
    match expr {
        // DataFusion rewrites short IN lists into `c = a OR c = b`.
        Expr::BinaryExpr(BinaryExpr {
            op: Operator::Or, ..
        }) => disjunction_as_in_list(expr, schema)
            .or_else(|| disjunction_as_any(expr, schema))
            .into_iter()
            .collect(),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            if let (Some(column), Some(value)) = (column_of(left, schema), literal_of(right)) {
                comparison(&column, *op, value).into_iter().collect()
            } else if let (Some(value), Some(column)) = (literal_of(left), column_of(right, schema))
            {
                // `5 < x` is `x > 5`.
                op.swap()
                    .and_then(|op| comparison(&column, op, value))
                    .into_iter()
                    .collect()
            } else {
                Vec::new()
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => match (column_of(expr, schema), literal_of(low), literal_of(high)) {
            (Some(column), Some(low), Some(high)) => comparison(&column, Operator::GtEq, low)
                .into_iter()
                .chain(comparison(&column, Operator::LtEq, high))
                .collect(),
            _ => Vec::new(),
        },
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => in_list(expr, list, schema).into_iter().collect(),
        Expr::IsNull(inner) => null_test(inner, "is_null", schema),
        Expr::IsNotNull(inner) => null_test(inner, "is_not_null", schema),
        // `WHERE flag` and `WHERE NOT flag` on a boolean column.
        Expr::Column(_) => bool_column(expr, true, schema),
        Expr::Not(inner) if matches!(inner.as_ref(), Expr::Column(_)) => {
            bool_column(inner, false, schema)
        }
        _ => Vec::new(),
    }
}

fn null_test(inner: &Expr, op: &str, schema: &Schema) -> Vec<Value> {
    // Only a bare column: a TRY_CAST that overflows turns values into NULL,
    // so `TRY_CAST(c AS …) IS NULL` does not imply `c IS NULL`.
    match inner {
        Expr::Column(c) if schema.field_with_name(&c.name).is_ok() => {
            vec![json!({"column": c.name.clone(), "op": op})]
        }
        _ => Vec::new(),
    }
}

fn bool_column(expr: &Expr, value: bool, schema: &Schema) -> Vec<Value> {
    match expr {
        Expr::Column(c) => match schema.field_with_name(&c.name) {
            Ok(field) if field.data_type() == &DataType::Boolean => vec![json!({
                "column": c.name,
                "op": "eq",
                "value": {"type": "bool", "v": value},
            })],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn in_list(expr: &Expr, list: &[Expr], schema: &Schema) -> Option<Value> {
    let column = column_of(expr, schema)?;
    let mut values = Vec::with_capacity(list.len());
    for item in list {
        let scalar = literal_of(item)?;
        // A NULL in the list never matches anything.
        if scalar.is_null() {
            continue;
        }
        match literal_value(scalar)? {
            Literal::Exact(v) => values.push(v),
            Literal::SubMicros { .. } => return None,
        }
    }
    (!values.is_empty()).then(|| json!({"column": column, "op": "in", "values": values}))
}

/// `c = a OR c = b OR c IN (d, e)` on one column is `c IN (a, b, d, e)`.
fn disjunction_as_in_list(expr: &Expr, schema: &Schema) -> Option<Value> {
    let mut disjuncts = Vec::new();
    collect_disjuncts(expr, &mut disjuncts);
    let mut column: Option<String> = None;
    let mut values = Vec::new();
    for disjunct in disjuncts {
        let (name, scalars): (String, Vec<&ScalarValue>) = match disjunct {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) => match (column_of(left, schema), literal_of(right)) {
                (Some(c), Some(v)) => (c, vec![v]),
                _ => (column_of(right, schema)?, vec![literal_of(left)?]),
            },
            Expr::InList(InList {
                expr,
                list,
                negated: false,
            }) => (
                column_of(expr, schema)?,
                list.iter().map(literal_of).collect::<Option<Vec<_>>>()?,
            ),
            _ => return None,
        };
        if column.get_or_insert_with(|| name.clone()) != &name {
            return None;
        }
        for scalar in scalars.into_iter().filter(|s| !s.is_null()) {
            match literal_value(scalar)? {
                Literal::Exact(v) => values.push(v),
                Literal::SubMicros { .. } => return None,
            }
        }
    }
    let column = column?;
    (!values.is_empty()).then(|| json!({"column": column, "op": "in", "values": values}))
}

/// `(a AND b) OR (c AND d) OR …`, each disjunct translated in full, is
/// `{"op": "any", "of": [[a, b], [c, d], …]}`: a file may match when it may
/// match all filters of one group. A disjunct with no translation could
/// match any file, and then so could the whole.
fn disjunction_as_any(expr: &Expr, schema: &Schema) -> Option<Value> {
    let mut disjuncts = Vec::new();
    collect_disjuncts(expr, &mut disjuncts);
    let mut groups = Vec::with_capacity(disjuncts.len());
    for disjunct in disjuncts {
        let group: Vec<Value> = split_conjunction(disjunct)
            .into_iter()
            .flat_map(|c| translate_conjunct(c, schema))
            .collect();
        if group.is_empty() {
            return None;
        }
        groups.push(Value::Array(group));
    }
    Some(json!({"op": "any", "of": groups}))
}

fn collect_disjuncts<'a>(expr: &'a Expr, out: &mut Vec<&'a Expr>) {
    match expr {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) => {
            collect_disjuncts(left, out);
            collect_disjuncts(right, out);
        }
        other => out.push(other),
    }
}

fn comparison(column: &str, op: Operator, scalar: &ScalarValue) -> Option<Value> {
    let op_name = match op {
        Operator::Eq => "eq",
        Operator::NotEq => "ne",
        Operator::Lt => "lt",
        Operator::LtEq => "le",
        Operator::Gt => "gt",
        Operator::GtEq => "ge",
        _ => return None,
    };
    let (op_name, value) = match literal_value(scalar)? {
        Literal::Exact(v) => (op_name, v),
        // A timestamp between two microseconds: widen range comparisons to
        // the enclosing microsecond; equality cannot be expressed.
        Literal::SubMicros { floor } => match op {
            Operator::Gt | Operator::GtEq => ("ge", timestamp_us(floor)),
            Operator::Lt | Operator::LtEq => ("le", timestamp_us(floor + 1)),
            _ => return None,
        },
    };
    Some(json!({"column": column, "op": op_name, "value": value}))
}

/// The column an expression reads, looking through casts that neither
/// change the order nor merge distinct values (so a filter on the cast
/// value holds for the column's own value).
fn column_of(expr: &Expr, schema: &Schema) -> Option<String> {
    Some(column_and_type(expr, schema)?.0)
}

fn column_and_type(expr: &Expr, schema: &Schema) -> Option<(String, DataType)> {
    match expr {
        Expr::Column(c) => {
            let field = schema.field_with_name(&c.name).ok()?;
            Some((c.name.clone(), field.data_type().clone()))
        }
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            let (name, from) = column_and_type(expr, schema)?;
            lossless_cast(&from, field.data_type()).then_some((name, field.data_type().clone()))
        }
        _ => None,
    }
}

fn literal_of(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(value, _) => Some(value),
        _ => None,
    }
}

/// Whether casting `from` to `to` is injective and order-preserving for
/// every value, i.e. comparisons on the cast value mean the same on the
/// original one.
fn lossless_cast(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if from == to {
        return true;
    }
    match (from, to) {
        (Dictionary(_, values), to) => lossless_cast(values, to),
        (Int8 | Int16 | UInt8 | UInt16, Float32) => true,
        (Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32, Float64) => true,
        (Float16 | Float32, Float64) => true,
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (Date32, Date64) => true,
        // Same time zone (the stored instants are unchanged) and a unit at
        // least as fine.
        (Timestamp(from_unit, from_tz), Timestamp(to_unit, to_tz)) => {
            from_tz == to_tz && unit_rank(to_unit) >= unit_rank(from_unit)
        }
        _ => match (int_range(from), int_range(to)) {
            (Some((from_min, from_max)), Some((to_min, to_max))) => {
                to_min <= from_min && from_max <= to_max
            }
            _ => false,
        },
    }
}

fn unit_rank(unit: &TimeUnit) -> u8 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    }
}

fn int_range(t: &DataType) -> Option<(i128, i128)> {
    use DataType::*;
    Some(match t {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt8 => (0, u8::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        UInt64 => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// A literal as a JSON value.
enum Literal {
    Exact(Value),
    /// A nanosecond timestamp strictly between `floor` and `floor + 1`
    /// microseconds.
    SubMicros {
        floor: i64,
    },
}

fn typed(kind: &str, v: impl Into<Value>) -> Value {
    json!({"type": kind, "v": v.into()})
}

fn timestamp_us(us: i64) -> Value {
    typed("timestamp_us", us)
}

fn literal_value(scalar: &ScalarValue) -> Option<Literal> {
    use ScalarValue as S;
    let exact = |v: Value| Some(Literal::Exact(v));
    match scalar {
        S::Boolean(Some(b)) => exact(typed("bool", *b)),
        S::Int8(Some(v)) => exact(typed("int", *v)),
        S::Int16(Some(v)) => exact(typed("int", *v)),
        S::Int32(Some(v)) => exact(typed("int", *v)),
        S::Int64(Some(v)) => exact(typed("int", *v)),
        S::UInt8(Some(v)) => exact(typed("int", *v)),
        S::UInt16(Some(v)) => exact(typed("int", *v)),
        S::UInt32(Some(v)) => exact(typed("int", *v)),
        S::UInt64(Some(v)) => exact(typed("int", *v)),
        // NaN and infinities have no JSON number.
        S::Float32(Some(v)) => {
            serde_json::Number::from_f64(f64::from(*v)).and_then(|n| exact(typed("float", n)))
        }
        S::Float64(Some(v)) => {
            serde_json::Number::from_f64(*v).and_then(|n| exact(typed("float", n)))
        }
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
            exact(typed("string", s.as_str()))
        }
        S::Date32(Some(days)) => exact(typed("date", *days)),
        S::Date64(Some(ms)) if ms % 86_400_000 == 0 => exact(typed("date", ms / 86_400_000)),
        S::TimestampSecond(Some(s), _) => s
            .checked_mul(1_000_000)
            .map(|us| Literal::Exact(timestamp_us(us))),
        S::TimestampMillisecond(Some(ms), _) => ms
            .checked_mul(1_000)
            .map(|us| Literal::Exact(timestamp_us(us))),
        S::TimestampMicrosecond(Some(us), _) => exact(timestamp_us(*us)),
        S::TimestampNanosecond(Some(ns), _) => {
            let floor = ns.div_euclid(1_000);
            if ns.rem_euclid(1_000) == 0 {
                exact(timestamp_us(floor))
            } else {
                Some(Literal::SubMicros { floor })
            }
        }
        S::Dictionary(_, inner) => literal_value(inner),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;
    use datafusion::logical_expr::{cast, col, lit};
    use std::sync::Arc;

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("f", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
            Field::new(
                "ts",
                DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
                true,
            ),
            Field::new("d", DataType::Date32, true),
        ])
    }

    fn one(expr: Expr) -> Vec<Value> {
        translate_filters(&[expr], &schema())
    }

    #[test]
    fn comparisons_and_flips() {
        assert_eq!(
            one(col("x").gt(lit(1i32))),
            vec![json!({"column": "x", "op": "gt", "value": {"type": "int", "v": 1}})]
        );
        assert_eq!(
            one(lit(5i64).lt_eq(col("x"))),
            vec![json!({"column": "x", "op": "ge", "value": {"type": "int", "v": 5}})]
        );
        assert_eq!(
            one(col("s").not_eq(lit("a"))),
            vec![json!({"column": "s", "op": "ne", "value": {"type": "string", "v": "a"}})]
        );
        assert_eq!(
            one(col("f").lt(lit(1.5f64))),
            vec![json!({"column": "f", "op": "lt", "value": {"type": "float", "v": 1.5}})]
        );
    }

    #[test]
    fn conjunctions_split_and_disjunctions_become_any() {
        let expr = col("x")
            .gt(lit(1i32))
            .and(col("s").eq(lit("a")).or(col("x").eq(lit(2i32))))
            .and(col("d").is_not_null());
        let out = one(expr);
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[1],
            json!({"op": "any", "of": [
                [{"column": "s", "op": "eq", "value": {"type": "string", "v": "a"}}],
                [{"column": "x", "op": "eq", "value": {"type": "int", "v": 2}}]]})
        );
        assert_eq!(out[2], json!({"column": "d", "op": "is_not_null"}));
        // A disjunct without a translation could match any file: no filter.
        let opaque = col("s").eq(lit("a")).or(col("s").like(lit("b%")));
        assert!(one(opaque).is_empty());
    }

    #[test]
    fn in_lists_between_and_nulls() {
        assert_eq!(
            one(col("x").in_list(
                vec![lit(1i32), lit(2i32), lit(ScalarValue::Int32(None))],
                false
            )),
            vec![json!({"column": "x", "op": "in", "values": [
                {"type": "int", "v": 1}, {"type": "int", "v": 2}]})]
        );
        assert!(one(col("x").in_list(vec![lit(1i32)], true)).is_empty());
        // ORs of equalities on one column are IN lists; other ORs are "any"
        // groups.
        assert_eq!(
            one(col("s")
                .eq(lit("a"))
                .or(lit("b").eq(col("s")))
                .or(col("s").in_list(vec![lit("c")], false))),
            vec![json!({"column": "s", "op": "in", "values": [
                {"type": "string", "v": "a"}, {"type": "string", "v": "b"}, {"type": "string", "v": "c"}]})]
        );
        assert_eq!(
            one(col("s").eq(lit("a")).or(col("s").gt(lit("b")))),
            vec![json!({"op": "any", "of": [
                [{"column": "s", "op": "eq", "value": {"type": "string", "v": "a"}}],
                [{"column": "s", "op": "gt", "value": {"type": "string", "v": "b"}}]]})]
        );
        assert_eq!(one(col("x").between(lit(1i32), lit(9i32))).len(), 2);
        assert_eq!(
            one(col("s").is_null()),
            vec![json!({"column": "s", "op": "is_null"})]
        );
        assert_eq!(
            one(col("b")),
            vec![json!({"column": "b", "op": "eq", "value": {"type": "bool", "v": true}})]
        );
        assert_eq!(
            one(!col("b")),
            vec![json!({"column": "b", "op": "eq", "value": {"type": "bool", "v": false}})]
        );
    }

    #[test]
    fn timestamps_become_microseconds() {
        let ts_s = ScalarValue::TimestampSecond(Some(10), Some(Arc::from("UTC")));
        assert_eq!(
            one(col("ts").gt_eq(lit(ts_s))),
            vec![
                json!({"column": "ts", "op": "ge", "value": {"type": "timestamp_us", "v": 10_000_000}})
            ]
        );
        let ts_ns = ScalarValue::TimestampNanosecond(Some(1_500), None);
        assert_eq!(
            one(col("ts").lt(lit(ts_ns.clone()))),
            vec![json!({"column": "ts", "op": "le", "value": {"type": "timestamp_us", "v": 2}})]
        );
        assert_eq!(
            one(col("ts").gt(lit(ts_ns.clone()))),
            vec![json!({"column": "ts", "op": "ge", "value": {"type": "timestamp_us", "v": 1}})]
        );
        assert!(one(col("ts").eq(lit(ts_ns))).is_empty());
        assert_eq!(
            one(col("d").eq(lit(ScalarValue::Date32(Some(19000))))),
            vec![json!({"column": "d", "op": "eq", "value": {"type": "date", "v": 19000}})]
        );
    }

    #[test]
    fn casts_only_when_lossless() {
        // Widening the column keeps the filter.
        assert_eq!(one(cast(col("x"), DataType::Int64).gt(lit(1i64))).len(), 1);
        assert_eq!(
            one(cast(col("x"), DataType::Float64).gt(lit(1.5f64))).len(),
            1
        );
        // Narrowing or changing kind drops it.
        assert!(one(cast(col("x"), DataType::Int8).gt(lit(1i8))).is_empty());
        assert!(one(cast(col("x"), DataType::Utf8).eq(lit("1"))).is_empty());
        assert!(one(cast(col("f"), DataType::Int64).eq(lit(1i64))).is_empty());
        // Unknown columns and expressions are dropped.
        assert!(one(col("nope").eq(lit(1i32))).is_empty());
        assert!(one((col("x") + lit(1i32)).eq(lit(2i32))).is_empty());
        // NaN cannot be written as JSON.
        assert!(one(col("f").eq(lit(f64::NAN))).is_empty());
    }
}
