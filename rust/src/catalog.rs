//! The "timelake" catalog: DataFusion's catalog traits answered by the C++
//! callbacks of `TlCatalogCallbacks`.
//!
//! Callbacks block (they may read Iceberg metadata from storage), so they
//! never run on a tokio worker thread as such: synchronous trait methods use
//! `block_in_place`, async ones the blocking pool (see [`crate::runtime`]).

use std::ffi::{c_char, c_int, c_void, CString};
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use arrow::ffi::FFI_ArrowSchema;
use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result as DFResult};
use datafusion::logical_expr::TableType;

use crate::error::{TlCode, TlError, TlResult};
use crate::provider::TimelakeTable;
use crate::runtime;
use crate::store::Store;

/// Output buffer handed to callbacks (`TlSink` in the header).
#[derive(Debug, Default)]
pub struct TlSink {
    pub(crate) bytes: Vec<u8>,
    pub(crate) schema: Option<FFI_ArrowSchema>,
}

impl TlSink {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

pub type ListSchemasFn = unsafe extern "C" fn(ctx: *mut c_void, out: *mut TlSink) -> c_int;
pub type ListTablesFn =
    unsafe extern "C" fn(ctx: *mut c_void, schema: *const c_char, out: *mut TlSink) -> c_int;
pub type TableSchemaFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    schema: *const c_char,
    table: *const c_char,
    out: *mut TlSink,
) -> c_int;
pub type PlanScanFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    schema: *const c_char,
    table: *const c_char,
    request_json: *const c_char,
    out: *mut TlSink,
) -> c_int;
pub type ReleaseFn = unsafe extern "C" fn(ctx: *mut c_void);
pub type DescribeSettingsFn = unsafe extern "C" fn(ctx: *mut c_void, out: *mut TlSink) -> c_int;
pub type CheckSettingFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    name: *const c_char,
    value: *const c_char,
    out: *mut TlSink,
) -> c_int;

/// `TlCatalogCallbacks` exactly as laid out in the header.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TlCatalogCallbacks {
    pub ctx: *mut c_void,
    pub list_schemas: Option<ListSchemasFn>,
    pub list_tables: Option<ListTablesFn>,
    pub table_schema: Option<TableSchemaFn>,
    pub plan_scan: Option<PlanScanFn>,
    pub release: Option<ReleaseFn>,
    pub describe_settings: Option<DescribeSettingsFn>,
    pub check_setting: Option<CheckSettingFn>,
}

/// What a callback answered.
pub enum Answer {
    Found(TlSink),
    NotFound,
}

/// The validated callbacks, shared by everything that may call C++.
///
/// `release` runs when the last user is gone. That is normally
/// `tl_session_free`, but a result stream still being read (for example of
/// an `information_schema` query, which lists tables while it runs) keeps the
/// callbacks alive until it is released, so C++ never sees a call after
/// `release`.
pub struct Callbacks {
    raw: TlCatalogCallbacks,
    list_schemas: ListSchemasFn,
    list_tables: ListTablesFn,
    table_schema: TableSchemaFn,
    plan_scan: PlanScanFn,
}

// SAFETY: `ctx` is an opaque pointer owned by C++, which by the header's
// contract accepts calls from any thread ("callbacks are invoked on Rust's
// blocking threads"), concurrently. Rust never dereferences it.
unsafe impl Send for Callbacks {}
// SAFETY: see `Send`; shared access only ever passes `ctx` back to C++.
unsafe impl Sync for Callbacks {}

impl fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callbacks")
            .field("ctx", &self.raw.ctx)
            .finish()
    }
}

impl Drop for Callbacks {
    fn drop(&mut self) {
        if let Some(release) = self.raw.release {
            // SAFETY: the header promises `release(ctx)` exactly once, after
            // the last callback; `Drop` runs once, when no `Arc` is left.
            unsafe { release(self.raw.ctx) };
        }
    }
}

fn c_string(what: &str, s: &str) -> TlResult<CString> {
    CString::new(s).map_err(|_| TlError::invalid(format!("{what} contains a NUL byte: {s:?}")))
}

impl Callbacks {
    /// Takes ownership of `raw.ctx`: from here on `release` runs exactly
    /// once, right away if a mandatory callback is missing.
    pub fn new(raw: TlCatalogCallbacks) -> TlResult<Self> {
        match (
            raw.list_schemas,
            raw.list_tables,
            raw.table_schema,
            raw.plan_scan,
        ) {
            (Some(list_schemas), Some(list_tables), Some(table_schema), Some(plan_scan)) => {
                Ok(Self {
                    raw,
                    list_schemas,
                    list_tables,
                    table_schema,
                    plan_scan,
                })
            }
            _ => {
                if let Some(release) = raw.release {
                    // SAFETY: `ctx` is handed back to its owner, once; no
                    // callback has been or will be called with it.
                    unsafe { release(raw.ctx) };
                }
                Err(TlError::invalid(
                    "catalog callbacks list_schemas, list_tables, table_schema and plan_scan must not be NULL",
                ))
            }
        }
    }

    /// Runs one callback with a fresh sink and interprets its return code:
    /// 0 = found, 1 = not found, anything else an error whose message is
    /// the sink's text (a value that is a TlCode keeps that code).
    fn call(
        &self,
        what: &str,
        f: impl FnOnce(*mut c_void, *mut TlSink) -> c_int,
    ) -> TlResult<Answer> {
        let mut sink = TlSink::default();
        let rc = f(self.raw.ctx, &mut sink);
        match rc {
            0 => Ok(Answer::Found(sink)),
            1 => Ok(Answer::NotFound),
            other => {
                // The header gives error returns no meaning beyond "error"
                // (C++ uses 2), so they all fail the query the same way.
                let text = sink.text();
                let message = if text.is_empty() {
                    format!("{what} failed with code {other}")
                } else {
                    format!("{what}: {text}")
                };
                Err(TlError::new(TlCode::Execution, message))
            }
        }
    }

    pub fn list_schemas(&self) -> TlResult<Vec<String>> {
        // SAFETY: the function pointer comes from C++ with the documented
        // signature; the sink outlives the call.
        let answer = self.call("list_schemas", |ctx, out| unsafe {
            (self.list_schemas)(ctx, out)
        })?;
        parse_names("list_schemas", answer)
    }

    pub fn list_tables(&self, schema: &str) -> TlResult<Vec<String>> {
        let c_schema = c_string("schema name", schema)?;
        // SAFETY: as in `list_schemas`; `c_schema` outlives the call.
        let answer = self.call(&format!("list_tables({schema})"), |ctx, out| unsafe {
            (self.list_tables)(ctx, c_schema.as_ptr(), out)
        })?;
        parse_names(&format!("list_tables({schema})"), answer)
    }

    /// The table's Arrow schema, or None when the table does not exist.
    pub fn table_schema(&self, schema: &str, table: &str) -> TlResult<Option<SchemaRef>> {
        let c_schema = c_string("schema name", schema)?;
        let c_table = c_string("table name", table)?;
        let what = format!("table_schema({schema}.{table})");
        // SAFETY: as in `list_schemas`; the strings outlive the call.
        let answer = self.call(&what, |ctx, out| unsafe {
            (self.table_schema)(ctx, c_schema.as_ptr(), c_table.as_ptr(), out)
        })?;
        let sink = match answer {
            Answer::NotFound => return Ok(None),
            Answer::Found(sink) => sink,
        };
        let ffi = sink
            .schema
            .ok_or_else(|| TlError::internal(format!("{what} returned no schema")))?;
        let schema = Schema::try_from(&ffi).map_err(|e| {
            TlError::internal(format!("{what} returned an invalid Arrow schema: {e}"))
        })?;
        Ok(Some(Arc::new(schema)))
    }

    /// Asks C++ which files a scan must read; returns the JSON answer.
    pub fn plan_scan(&self, schema: &str, table: &str, request: &str) -> TlResult<String> {
        let c_schema = c_string("schema name", schema)?;
        let c_table = c_string("table name", table)?;
        let c_request = c_string("scan request", request)?;
        let what = format!("plan_scan({schema}.{table})");
        // SAFETY: as in `list_schemas`; the strings outlive the call.
        let answer = self.call(&what, |ctx, out| unsafe {
            (self.plan_scan)(
                ctx,
                c_schema.as_ptr(),
                c_table.as_ptr(),
                c_request.as_ptr(),
                out,
            )
        })?;
        match answer {
            Answer::Found(sink) => Ok(sink.text()),
            Answer::NotFound => Err(TlError::new(
                TlCode::NotFound,
                format!("{what}: table not found"),
            )),
        }
    }
}

/// One `timelake.*` session setting as C++ describes it.
#[derive(Debug, Clone)]
pub struct SettingInfo {
    pub name: String,
    pub description: String,
}

impl Callbacks {
    /// The settings `SET timelake.*` may change (empty without the optional
    /// callback).
    pub fn describe_settings(&self) -> TlResult<Vec<SettingInfo>> {
        let Some(describe) = self.raw.describe_settings else {
            return Ok(Vec::new());
        };
        // SAFETY: as in `list_schemas`.
        let answer = self.call("describe_settings", |ctx, out| unsafe {
            describe(ctx, out)
        })?;
        match answer {
            Answer::NotFound => Ok(Vec::new()),
            Answer::Found(sink) => {
                let invalid = || {
                    TlError::internal(format!(
                        "describe_settings returned invalid JSON: {}",
                        sink.text()
                    ))
                };
                let value: serde_json::Value =
                    serde_json::from_slice(&sink.bytes).map_err(|_| invalid())?;
                let items = value.as_array().ok_or_else(invalid)?;
                items
                    .iter()
                    .map(|item| {
                        let text = |key: &str| item.get(key).and_then(|v| v.as_str());
                        Ok(SettingInfo {
                            name: text("name").ok_or_else(invalid)?.to_string(),
                            description: text("description").unwrap_or("").to_string(),
                        })
                    })
                    .collect()
            }
        }
    }

    /// Checks one `SET timelake.<name> = value`.
    pub fn check_setting(&self, name: &str, value: &str) -> TlResult<()> {
        let Some(check) = self.raw.check_setting else {
            return Ok(());
        };
        let c_name = c_string("setting name", name)?;
        let c_value = c_string("setting value", value)?;
        let mut sink = TlSink::default();
        // SAFETY: as in `list_schemas`; the strings and sink outlive the call.
        let rc = unsafe { check(self.raw.ctx, c_name.as_ptr(), c_value.as_ptr(), &mut sink) };
        if rc == 0 {
            return Ok(());
        }
        let text = sink.text();
        Err(TlError::invalid(if text.is_empty() {
            format!("invalid value {value:?} for timelake.{name}")
        } else {
            text
        }))
    }
}

fn parse_names(what: &str, answer: Answer) -> TlResult<Vec<String>> {
    match answer {
        Answer::NotFound => Ok(Vec::new()),
        Answer::Found(sink) => serde_json::from_slice(&sink.bytes).map_err(|e| {
            TlError::internal(format!(
                "{what} returned invalid JSON ({e}): {}",
                sink.text()
            ))
        }),
    }
}

/// Logs a callback failure that a DataFusion trait method cannot return
/// (the listing methods are infallible) and continues with nothing.
fn or_empty(result: TlResult<Vec<String>>) -> Vec<String> {
    result.unwrap_or_else(|e| {
        eprintln!("timelake: {e}");
        Vec::new()
    })
}

/// The catalog "timelake".
#[derive(Debug)]
pub struct TimelakeCatalog {
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
}

impl TimelakeCatalog {
    pub fn new(callbacks: Arc<Callbacks>, store: Arc<Store>) -> Self {
        Self { callbacks, store }
    }
}

impl CatalogProvider for TimelakeCatalog {
    fn schema_names(&self) -> Vec<String> {
        or_empty(runtime::call_blocking_sync(|| {
            self.callbacks.list_schemas()
        }))
    }

    /// Every name resolves to a schema provider without asking C++: whether
    /// a table exists is settled by `table()`, and this saves a round trip
    /// (possibly to storage) for every table reference in every query.
    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        Some(Arc::new(TimelakeSchema {
            name: name.to_string(),
            callbacks: Arc::clone(&self.callbacks),
            store: Arc::clone(&self.store),
        }))
    }
}

/// One namespace of the catalog.
#[derive(Debug)]
pub struct TimelakeSchema {
    name: String,
    callbacks: Arc<Callbacks>,
    store: Arc<Store>,
}

#[async_trait]
impl SchemaProvider for TimelakeSchema {
    fn table_names(&self) -> Vec<String> {
        or_empty(runtime::call_blocking_sync(|| {
            self.callbacks.list_tables(&self.name)
        }))
    }

    async fn table(&self, name: &str) -> DFResult<Option<Arc<dyn TableProvider>>, DataFusionError> {
        let callbacks = Arc::clone(&self.callbacks);
        let (schema, table) = (self.name.clone(), name.to_string());
        let arrow_schema = runtime::call_blocking(move || callbacks.table_schema(&schema, &table))
            .await
            .and_then(|r| r)
            .map_err(TlError::into_datafusion)?;
        Ok(arrow_schema.map(|arrow_schema| {
            Arc::new(TimelakeTable::new(
                self.name.clone(),
                name.to_string(),
                arrow_schema,
                Arc::clone(&self.callbacks),
                Arc::clone(&self.store),
            )) as Arc<dyn TableProvider>
        }))
    }

    /// Tables listed by C++ are Iceberg tables: base tables. Answering
    /// without a callback keeps `information_schema.tables` and `SHOW
    /// TABLES` from fetching every table's schema.
    async fn table_type(&self, _name: &str) -> DFResult<Option<TableType>> {
        Ok(Some(TableType::Base))
    }

    fn table_exist(&self, name: &str) -> bool {
        runtime::call_blocking_sync(|| self.callbacks.table_schema(&self.name, name))
            .map(|s| s.is_some())
            .unwrap_or_else(|e| {
                eprintln!("timelake: {e}");
                false
            })
    }
}
