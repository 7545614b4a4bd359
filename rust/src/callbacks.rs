//! The callbacks of `TlCatalogCallbacks` and the sink they answer into:
//! the one place Rust calls C++.
//!
//! A leaf of the crate: it knows the C ABI's callback table, how a callback
//! answers (JSON text, an Arrow schema or record batch, a `TlCode` for its
//! failure) and nothing of DataFusion's catalog or tables, which use it
//! ([`crate::catalog`], [`crate::provider`], [`crate::settings`]).

use std::ffi::{c_char, c_int, c_void, CString};
use std::fmt;
use std::sync::Arc;

use arrow::array::{RecordBatch, StructArray};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};

use crate::error::{TlCode, TlError, TlResult};

/// Output buffer handed to callbacks (`TlSink` in the header).
#[derive(Debug, Default)]
pub struct TlSink {
    pub(crate) bytes: Vec<u8>,
    pub(crate) schema: Option<FFI_ArrowSchema>,
    /// A record batch moved in with `tl_sink_set_batch`.
    pub(crate) batch: Option<(FFI_ArrowSchema, FFI_ArrowArray)>,
    /// The code of the callback's failure (`tl_sink_set_code`).
    pub(crate) code: Option<TlCode>,
}

impl TlSink {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// Imports the record batch moved into the sink, if any (zero-copy: its
    /// buffers stay C++'s until the last Rust reference is dropped).
    fn take_batch(&mut self, what: &str) -> TlResult<Option<RecordBatch>> {
        let Some((schema, array)) = self.batch.take() else {
            return Ok(None);
        };
        // SAFETY: both structs were moved in by `tl_sink_set_batch`, whose
        // contract makes them a valid, unreleased Arrow C array and its
        // schema; `from_ffi` takes ownership of the array.
        let data = unsafe { arrow::ffi::from_ffi(array, &schema) }.map_err(|e| {
            TlError::internal(format!("{what} returned an invalid Arrow array: {e}"))
        })?;
        let rows = StructArray::try_from(data).map_err(|e| {
            TlError::internal(format!("{what} returned an array that is not a batch: {e}"))
        })?;
        let rows = RecordBatch::from(rows);
        // The struct array drops the schema's metadata; a plan keeps its
        // merge there.
        let metadata = Schema::try_from(&schema)
            .map(|s| s.metadata)
            .unwrap_or_default();
        if metadata.is_empty() {
            return Ok(Some(rows));
        }
        let schema = Arc::new(rows.schema().as_ref().clone().with_metadata(metadata));
        rows.with_schema(schema).map(Some).map_err(|e| {
            TlError::internal(format!(
                "{what} returned a batch whose schema does not fit: {e}"
            ))
        })
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
pub type TableAtFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    schema: *const c_char,
    table: *const c_char,
    at_json: *const c_char,
    out: *mut TlSink,
) -> c_int;
pub type ListSnapshotsFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    schema: *const c_char,
    table: *const c_char,
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
    pub table_at: Option<TableAtFn>,
    pub list_snapshots: Option<ListSnapshotsFn>,
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
    /// the sink's text and whose code is the sink's (`tl_sink_set_code`).
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
                // The kind of failure is the code the callback put in the
                // sink (a storage error stays one, retryable or not);
                // without one, TL_EXECUTION.
                let text = sink.text();
                let message = if text.is_empty() {
                    format!("{what} failed with code {other}")
                } else {
                    format!("{what}: {text}")
                };
                Err(TlError::new(
                    sink.code.unwrap_or(TlCode::Execution),
                    message,
                ))
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

    /// Asks C++ which files a scan must read (or, for a "last_values"
    /// request, for the rows of the last-value index).
    pub fn plan_scan(&self, schema: &str, table: &str, request: &str) -> TlResult<ScanAnswer> {
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
            Answer::Found(mut sink) => Ok(ScanAnswer {
                rows: sink.take_batch(&what)?,
                text: sink.text(),
            }),
            Answer::NotFound => Err(TlError::new(
                TlCode::NotFound,
                format!("{what}: table not found"),
            )),
        }
    }
}

/// What `plan_scan` answered: the rows C++ moved into the sink (the files
/// to read, or the last-value index), if any, and the text it wrote (the
/// answer to a `rollups` request).
#[derive(Debug)]
pub struct ScanAnswer {
    pub rows: Option<RecordBatch>,
    pub text: String,
}

/// One `timelake.*` session setting as C++ describes it.
#[derive(Debug, Clone)]
pub struct SettingInfo {
    pub name: String,
    pub description: String,
    /// The value in force when no session sets it (`None`: the registry
    /// gives no default).
    pub default: Option<String>,
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
                            default: text("default")
                                .filter(|d| !d.is_empty())
                                .map(str::to_string),
                        })
                    })
                    .collect()
            }
        }
    }

    /// Checks one `SET timelake.<name> = value` with C++'s settings
    /// registry, the only validator of names and values (unknown names,
    /// settings not of the session level, bad values). Without the optional
    /// callback a session has no such settings.
    pub fn check_setting(&self, name: &str, value: &str) -> TlResult<()> {
        let Some(check) = self.raw.check_setting else {
            return Err(TlError::invalid(format!(
                "unknown session setting timelake.{name}"
            )));
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

/// Where a time-travel read goes (`table_at`'s request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Snapshot(i64),
    /// The snapshot current at this time (milliseconds since the epoch).
    TimestampMs(i64),
}

impl Callbacks {
    /// The snapshot `at` names and the table's schema at it, or None when
    /// the table does not exist. Without the optional callback a session
    /// has no time travel (TL_UNSUPPORTED).
    pub fn table_at(
        &self,
        schema: &str,
        table: &str,
        at: At,
    ) -> TlResult<Option<(i64, SchemaRef)>> {
        let what = format!("table_at({schema}.{table})");
        let Some(table_at) = self.raw.table_at else {
            return Err(TlError::new(
                TlCode::Unsupported,
                format!("{what}: this session has no time travel"),
            ));
        };
        let c_schema = c_string("schema name", schema)?;
        let c_table = c_string("table name", table)?;
        let request = match at {
            At::Snapshot(id) => serde_json::json!({ "snapshot_id": id }),
            At::TimestampMs(ms) => serde_json::json!({ "timestamp_ms": ms }),
        };
        let c_request = c_string("time travel request", &request.to_string())?;
        // SAFETY: as in `list_schemas`; the strings outlive the call.
        let answer = self.call(&what, |ctx, out| unsafe {
            table_at(
                ctx,
                c_schema.as_ptr(),
                c_table.as_ptr(),
                c_request.as_ptr(),
                out,
            )
        })?;
        let sink = match answer {
            Answer::NotFound => return Ok(None),
            Answer::Found(sink) => sink,
        };
        let invalid = |why: &str| TlError::internal(format!("{what} returned {why}"));
        let value: serde_json::Value =
            serde_json::from_slice(&sink.bytes).map_err(|_| invalid("invalid JSON"))?;
        let id = value
            .get("snapshot_id")
            .and_then(|v| v.as_i64())
            .ok_or_else(|| invalid("no snapshot_id"))?;
        let ffi = sink.schema.ok_or_else(|| invalid("no schema"))?;
        let schema = Schema::try_from(&ffi)
            .map_err(|e| invalid(&format!("an invalid Arrow schema: {e}")))?;
        Ok(Some((id, Arc::new(schema))))
    }

    /// The snapshots a table keeps, one row each (the batch C++ answers),
    /// or None when the table does not exist.
    pub fn list_snapshots(&self, schema: &str, table: &str) -> TlResult<Option<RecordBatch>> {
        let what = format!("list_snapshots({schema}.{table})");
        let Some(list) = self.raw.list_snapshots else {
            return Err(TlError::new(
                TlCode::Unsupported,
                format!("{what}: this session lists no snapshots"),
            ));
        };
        let c_schema = c_string("schema name", schema)?;
        let c_table = c_string("table name", table)?;
        // SAFETY: as in `list_schemas`; the strings outlive the call.
        let answer = self.call(&what, |ctx, out| unsafe {
            list(ctx, c_schema.as_ptr(), c_table.as_ptr(), out)
        })?;
        match answer {
            Answer::NotFound => Ok(None),
            Answer::Found(mut sink) => sink
                .take_batch(&what)?
                .map(Some)
                .ok_or_else(|| TlError::internal(format!("{what} returned no batch"))),
        }
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
