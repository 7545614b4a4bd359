//! Time travel in SQL (docs/sql.md), as two table functions:
//!
//! - `as_of(table, snapshot_id)` and `as_of(table, timestamp)`: the table as
//!   it was at one of its snapshots, or at the snapshot that was current at
//!   that time. It is scanned like the table itself (the same pruning, dedup
//!   on read and last-value index, of that snapshot), in the schema the
//!   table had then.
//! - `snapshots(table)`: the snapshots the table keeps, one row each.
//!
//! `table` is a string, `'ns.table'` or `'table'` (in the session's default
//! namespace); the second argument of `as_of` is any constant expression:
//! an integer is a snapshot id, a timestamp, date or timestamp text a time
//! (text without a zone is UTC). C++ resolves both through the optional
//! catalog callbacks `table_at` and `list_snapshots`.

use std::sync::Arc;

use arrow::array::{Array, RecordBatch, RecordBatchOptions, StringArray};
use arrow::datatypes::{DataType, Schema, TimeUnit};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{plan_err, DFSchema, ScalarValue};
use datafusion::datasource::MemTable;
use datafusion::error::Result as DFResult;
use datafusion::logical_expr::{ColumnarValue, Expr};

use crate::callbacks::{At, Callbacks};
use crate::catalog::CATALOG;
use crate::error::TlError;
use crate::provider::TimelakeTable;
use crate::runtime;
use crate::store::Store;

/// The value of a constant argument (`now() - INTERVAL '1 day'` included).
fn constant(function: &str, expr: &Expr, session: &dyn Session) -> DFResult<ScalarValue> {
    let physical = session.create_physical_expr(expr.clone(), &DFSchema::empty())?;
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    match physical.evaluate(&one_row) {
        Ok(ColumnarValue::Scalar(value)) => Ok(value),
        Ok(ColumnarValue::Array(values)) if values.len() == 1 => {
            ScalarValue::try_from_array(&values, 0)
        }
        _ => plan_err!("{function}: the argument {expr} is not a constant"),
    }
}

/// (namespace, table) of a table name argument: 'ns.table' or 'table', also
/// 'timelake.ns.table'. Names are taken as written (no case folding).
fn table_name(function: &str, expr: &Expr, session: &dyn Session) -> DFResult<(String, String)> {
    let text = match constant(function, expr, session)? {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s,
        other => {
            return plan_err!(
                "{function}: the table is given as a string such as 'ns.table', not {other:?}"
            )
        }
    };
    let parts: Vec<&str> = text.split('.').collect();
    let default_schema = &session.config().options().catalog.default_schema;
    match parts.as_slice() {
        [table] if !table.is_empty() => Ok((default_schema.clone(), table.to_string())),
        [schema, table] if !schema.is_empty() && !table.is_empty() => {
            Ok((schema.to_string(), table.to_string()))
        }
        [catalog, schema, table]
            if *catalog == CATALOG && !schema.is_empty() && !table.is_empty() =>
        {
            Ok((schema.to_string(), table.to_string()))
        }
        _ => plan_err!("{function}: '{text}' is not a table name ('ns.table' or 'table')"),
    }
}

/// Milliseconds since the epoch of a time argument, rounded down.
fn millis(function: &str, value: &ScalarValue) -> DFResult<Option<i64>> {
    let floor = |v: i64, per_ms: i64| v.div_euclid(per_ms);
    Ok(match value {
        ScalarValue::TimestampSecond(Some(v), _) => Some(v.saturating_mul(1000)),
        ScalarValue::TimestampMillisecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(floor(*v, 1000)),
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(floor(*v, 1_000_000)),
        ScalarValue::Date32(Some(days)) => Some(i64::from(*days) * 86_400_000),
        ScalarValue::Date64(Some(v)) => Some(*v),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => {
            let text = StringArray::from(vec![s.as_str()]);
            let utc = DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("+00:00")));
            let parsed = arrow::compute::cast(&text, &utc)
                .ok()
                .and_then(|a| ScalarValue::try_from_array(&a, 0).ok());
            match parsed {
                Some(ScalarValue::TimestampMicrosecond(Some(v), _)) => Some(floor(v, 1000)),
                _ => {
                    return plan_err!(
                        "{function}: '{s}' is not a time (e.g. '2026-12-03 11:00:00', UTC unless it names a zone)"
                    )
                }
            }
        }
        _ => None,
    })
}

/// `as_of(table, snapshot_id | timestamp)`.
#[derive(Debug)]
pub struct AsOf {
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
}

impl AsOf {
    pub fn new(callbacks: Arc<Callbacks>, store: Arc<Store>) -> Self {
        Self { callbacks, store }
    }
}

impl TableFunctionImpl for AsOf {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        const F: &str = "as_of";
        let exprs = args.exprs();
        if exprs.len() != 2 {
            return plan_err!(
                "{F}(table, snapshot_id | timestamp) takes 2 arguments, got {}",
                exprs.len()
            );
        }
        let session = args.session();
        let (schema, table) = table_name(F, &exprs[0], session)?;
        let value = constant(F, &exprs[1], session)?;
        let at = match &value {
            ScalarValue::Int8(Some(v)) => At::Snapshot(i64::from(*v)),
            ScalarValue::Int16(Some(v)) => At::Snapshot(i64::from(*v)),
            ScalarValue::Int32(Some(v)) => At::Snapshot(i64::from(*v)),
            ScalarValue::Int64(Some(v)) => At::Snapshot(*v),
            ScalarValue::UInt8(Some(v)) => At::Snapshot(i64::from(*v)),
            ScalarValue::UInt16(Some(v)) => At::Snapshot(i64::from(*v)),
            ScalarValue::UInt32(Some(v)) => At::Snapshot(i64::from(*v)),
            ScalarValue::UInt64(Some(v)) => match i64::try_from(*v) {
                Ok(v) => At::Snapshot(v),
                Err(_) => return plan_err!("{F}: no snapshot id is {v}"),
            },
            other => match millis(F, other)? {
                Some(ms) => At::TimestampMs(ms),
                None => {
                    return plan_err!(
                        "{F}: the second argument is a snapshot id (an integer) or a time \
                         (a timestamp, a date or text), not {other:?}"
                    )
                }
            },
        };
        let callbacks = Arc::clone(&self.callbacks);
        let found = runtime::call_blocking_sync(|| callbacks.table_at(&schema, &table, at))
            .map_err(TlError::into_datafusion)?;
        let Some((snapshot_id, arrow_schema)) = found else {
            return plan_err!("{F}: table '{schema}.{table}' not found");
        };
        Ok(Arc::new(
            TimelakeTable::new(
                schema,
                table,
                arrow_schema,
                Arc::clone(&self.callbacks),
                Arc::clone(&self.store),
            )
            .at_snapshot(snapshot_id),
        ))
    }
}

/// `snapshots(table)`.
#[derive(Debug)]
pub struct Snapshots {
    callbacks: Arc<Callbacks>,
}

impl Snapshots {
    pub fn new(callbacks: Arc<Callbacks>) -> Self {
        Self { callbacks }
    }
}

impl TableFunctionImpl for Snapshots {
    fn call_with_args(&self, args: TableFunctionArgs) -> DFResult<Arc<dyn TableProvider>> {
        const F: &str = "snapshots";
        let exprs = args.exprs();
        if exprs.len() != 1 {
            return plan_err!("{F}(table) takes 1 argument, got {}", exprs.len());
        }
        let (schema, table) = table_name(F, &exprs[0], args.session())?;
        let callbacks = Arc::clone(&self.callbacks);
        let rows = runtime::call_blocking_sync(|| callbacks.list_snapshots(&schema, &table))
            .map_err(TlError::into_datafusion)?;
        let Some(rows) = rows else {
            return plan_err!("{F}: table '{schema}.{table}' not found");
        };
        Ok(Arc::new(MemTable::try_new(
            rows.schema(),
            vec![vec![rows]],
        )?))
    }
}
