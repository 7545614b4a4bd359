//! End-to-end tests through the C ABI functions themselves: a Parquet file
//! written with `tl_store_put`, a session whose catalog callbacks are
//! `extern "C"` functions below, and results read back through the Arrow C
//! stream.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{
    Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use serde_json::{json, Value};

use crate::callbacks::{TlCatalogCallbacks, TlSink};
use crate::error::TlCode;
use crate::ffi::*;

static TEMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!(
            "timelake-platform-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const DATA_KEY: &str = "default/t/data/part-0.parquet";
/// 2024-01-01T00:00:00Z in microseconds.
const TS0: i64 = 1_704_067_200_000_000;

fn table_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("x", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
            true,
        ),
    ]))
}

/// x = 1..=10, name = "n1".."n10", ts = TS0 + x seconds, in row groups of 5.
fn parquet_file() -> Vec<u8> {
    let xs: Vec<i64> = (1..=10).collect();
    let batch = RecordBatch::try_new(
        table_schema(),
        vec![
            Arc::new(Int64Array::from(xs.clone())),
            Arc::new(StringArray::from_iter_values(
                xs.iter().map(|x| format!("n{x}")),
            )),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(xs.iter().map(|x| TS0 + x * 1_000_000))
                    .with_timezone("UTC"),
            ),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(5))
        .build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, table_schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    buf
}

/// What the test catalog knows and what it saw.
struct TestCatalog {
    /// The store, for callbacks that read storage like C++'s do.
    store: AtomicPtr<TlStore>,
    requests: Mutex<Vec<(String, Value)>>,
    released: AtomicBool,
}

fn sink_write(out: *mut TlSink, text: &str) {
    // SAFETY: `out` is the live sink of the running callback.
    unsafe { tl_sink_write(out, text.as_ptr() as *const c_char, text.len()) };
}

/// Moves `rows` into the sink as Arrow C data, as C++ answers plan_scan.
fn sink_batch(out: *mut TlSink, rows: &RecordBatch) {
    let array = arrow::array::StructArray::from(rows.clone());
    let mut ffi_array = FFI_ArrowArray::new(&array.into_data());
    let mut ffi_schema = FFI_ArrowSchema::try_from(rows.schema().as_ref()).unwrap();
    // SAFETY: moves both into the live sink; they are left released.
    unsafe { tl_sink_set_batch(out, &mut ffi_schema, &mut ffi_array) };
    assert!(ffi_schema.release.is_none() && ffi_array.is_released());
}

/// A plan_scan answer reading `files` (key, size) as they are.
fn files_batch(files: &[(&str, u64)]) -> RecordBatch {
    use arrow::array::{BooleanArray, Int32Array};
    let schema = Schema::new(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("size", DataType::Int64, false),
        Field::new("seq", DataType::Int64, false),
        Field::new("sorted", DataType::Boolean, false),
        Field::new("group", DataType::Int32, true),
    ]);
    let n = files.len();
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(StringArray::from_iter_values(files.iter().map(|f| f.0))),
            Arc::new(Int64Array::from_iter_values(
                files.iter().map(|f| f.1 as i64),
            )),
            Arc::new(Int64Array::from(vec![0; n])),
            Arc::new(BooleanArray::from(vec![false; n])),
            Arc::new(Int32Array::from(vec![None; n])),
        ],
    )
    .unwrap()
}

/// # Safety
/// Test callback: `ctx` is an `Arc<TestCatalog>` pointer.
unsafe fn catalog<'a>(ctx: *mut c_void) -> &'a TestCatalog {
    // SAFETY: the session holds the Arc until `release`.
    unsafe { &*(ctx as *const TestCatalog) }
}

fn arg(s: *const c_char) -> String {
    // SAFETY: the callbacks receive valid C strings.
    unsafe { CStr::from_ptr(s) }.to_str().unwrap().to_string()
}

unsafe extern "C" fn list_schemas(_ctx: *mut c_void, out: *mut TlSink) -> c_int {
    sink_write(out, r#"["default"]"#);
    0
}

unsafe extern "C" fn list_tables(
    _ctx: *mut c_void,
    schema: *const c_char,
    out: *mut TlSink,
) -> c_int {
    if arg(schema) == "default" {
        sink_write(out, r#"["t","broken","failing"]"#);
        0
    } else {
        1
    }
}

unsafe extern "C" fn table_schema_cb(
    _ctx: *mut c_void,
    schema: *const c_char,
    table: *const c_char,
    out: *mut TlSink,
) -> c_int {
    let known = ["t", "broken", "failing", "flaky", "unplanned", "misplanned"];
    if arg(schema) != "default" || !known.contains(&arg(table).as_str()) {
        return 1;
    }
    let mut ffi = FFI_ArrowSchema::try_from(table_schema().as_ref()).unwrap();
    // SAFETY: moves the schema into the sink; `ffi` is left released.
    unsafe { tl_sink_set_schema(out, &mut ffi) };
    assert!(
        ffi.release.is_none(),
        "the sink marks the moved schema released"
    );
    0
}

unsafe extern "C" fn plan_scan(
    ctx: *mut c_void,
    _schema: *const c_char,
    table: *const c_char,
    request: *const c_char,
    out: *mut TlSink,
) -> c_int {
    // SAFETY: `ctx` is our TestCatalog.
    let catalog = unsafe { catalog(ctx) };
    let table = arg(table);
    let request: Value = serde_json::from_str(&arg(request)).unwrap();
    catalog
        .requests
        .lock()
        .unwrap()
        .push((table.clone(), request.clone()));
    match table.as_str() {
        "t" if !request["last_values"].is_null() => {
            // The last-value index of t by `name`: moved in as Arrow C data.
            // No batch: the index does not answer this request.
            if request["last_values"] == json!({"partition_by": ["name"], "order_by": "ts"}) {
                sink_batch(out, &last_value_rows());
            }
            0
        }
        "flaky" => {
            sink_write(out, "reading the manifest list: 503 SlowDown");
            // SAFETY: the live sink of this callback.
            unsafe { tl_sink_set_code(out, TlCode::StorageRetryable as c_int) };
            2
        }
        "t" => {
            // Callbacks may call back into the store (as C++ reads Iceberg
            // metadata): this runs on a blocking thread of the runtime.
            let key = CString::new(DATA_KEY).unwrap();
            let mut size = 0u64;
            let mut err = ptr::null_mut();
            // SAFETY: a live store handle and valid out-parameters.
            let code = unsafe {
                tl_store_head(
                    catalog.store.load(Ordering::SeqCst),
                    key.as_ptr(),
                    &mut size,
                    ptr::null_mut(),
                    &mut err,
                )
            };
            assert_eq!(code, TlCode::Ok);
            sink_batch(out, &files_batch(&[(DATA_KEY, size)]));
            0
        }
        "broken" => {
            sink_batch(
                out,
                &files_batch(&[("default/broken/missing.parquet", 1000)]),
            );
            0
        }
        // A plan that is no batch, and one whose merge group names no keys.
        "unplanned" => {
            sink_write(out, r#"{"files": []}"#);
            0
        }
        "misplanned" => {
            let plan = files_batch(&[(DATA_KEY, 1000), (DATA_KEY, 1000)]);
            let mut columns = plan.columns().to_vec();
            columns[4] = Arc::new(arrow::array::Int32Array::from(vec![Some(0), Some(0)]));
            sink_batch(out, &RecordBatch::try_new(plan.schema(), columns).unwrap());
            0
        }
        _ => {
            sink_write(out, "boom: metadata unavailable");
            2
        }
    }
}

/// The rows test table t's last-value index holds: name = "last", x = 99
/// (not a row of the data file, so answers show where they came from).
fn last_value_rows() -> RecordBatch {
    RecordBatch::try_new(
        table_schema(),
        vec![
            Arc::new(Int64Array::from(vec![99])),
            Arc::new(StringArray::from(vec!["last"])),
            Arc::new(TimestampMicrosecondArray::from(vec![TS0]).with_timezone("UTC")),
        ],
    )
    .unwrap()
}

unsafe extern "C" fn release(ctx: *mut c_void) {
    // SAFETY: takes back the reference handed to the session.
    let catalog = unsafe { Arc::from_raw(ctx as *const TestCatalog) };
    catalog.released.store(true, Ordering::SeqCst);
}

fn take_string(s: *mut c_char) -> String {
    assert!(!s.is_null());
    // SAFETY: a string returned by the library, freed right after.
    let text = unsafe { CStr::from_ptr(s) }.to_str().unwrap().to_string();
    // SAFETY: as above; not used afterwards.
    unsafe { tl_string_free(s) };
    text
}

struct Fixture {
    _dir: Option<TempDir>,
    store: *mut TlStore,
    session: *mut TlSession,
    catalog: Arc<TestCatalog>,
}

impl Fixture {
    /// A fixture on a fresh local warehouse.
    fn new() -> Self {
        let dir = TempDir::new("e2e");
        let url = dir.0.join("wh").to_str().unwrap().to_string();
        Self::open(&url, &[], Some(dir))
    }

    fn open(url: &str, options: &[(&str, &str)], dir: Option<TempDir>) -> Self {
        let url = CString::new(url).unwrap();
        let keys: Vec<CString> = options
            .iter()
            .map(|(k, _)| CString::new(*k).unwrap())
            .collect();
        let values: Vec<CString> = options
            .iter()
            .map(|(_, v)| CString::new(*v).unwrap())
            .collect();
        let key_ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs: Vec<*const c_char> = values.iter().map(|v| v.as_ptr()).collect();
        let mut store = ptr::null_mut();
        let mut err = ptr::null_mut();
        // SAFETY: valid arguments.
        let code = unsafe {
            tl_store_open(
                url.as_ptr(),
                key_ptrs.as_ptr(),
                value_ptrs.as_ptr(),
                options.len(),
                &mut store,
                &mut err,
            )
        };
        assert_eq!(code, TlCode::Ok);

        let file = parquet_file();
        let key = CString::new(DATA_KEY).unwrap();
        // SAFETY: valid arguments.
        let code = unsafe {
            tl_store_put(
                store,
                key.as_ptr(),
                file.as_ptr(),
                file.len(),
                1,
                ptr::null(),
                ptr::null_mut(),
                &mut err,
            )
        };
        assert_eq!(code, TlCode::Ok);

        let catalog = Arc::new(TestCatalog {
            store: AtomicPtr::new(store),
            requests: Mutex::new(Vec::new()),
            released: AtomicBool::new(false),
        });
        let callbacks = TlCatalogCallbacks {
            ctx: Arc::into_raw(Arc::clone(&catalog)) as *mut c_void,
            list_schemas: Some(list_schemas),
            list_tables: Some(list_tables),
            table_schema: Some(table_schema_cb),
            plan_scan: Some(plan_scan),
            release: Some(release),
            describe_settings: None,
            check_setting: None,
            table_at: None,
            list_snapshots: None,
        };
        let mut session = ptr::null_mut();
        // SAFETY: valid arguments.
        let code = unsafe { tl_session_new(store, callbacks, 2, &mut session, &mut err) };
        assert_eq!(code, TlCode::Ok);
        Self {
            _dir: dir,
            store,
            session,
            catalog,
        }
    }

    /// Runs a query; Ok(batches) or Err((code, message)).
    fn sql(&self, sql: &str) -> Result<Vec<RecordBatch>, (TlCode, String)> {
        let sql = CString::new(sql).unwrap();
        let mut stream = FFI_ArrowArrayStream::empty();
        let mut err = ptr::null_mut();
        // SAFETY: valid arguments.
        let code = unsafe { tl_session_sql(self.session, sql.as_ptr(), &mut stream, &mut err) };
        if code != TlCode::Ok {
            return Err((code, take_string(err)));
        }
        let reader = ArrowArrayStreamReader::try_new(stream).unwrap();
        reader
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| (TlCode::Execution, e.to_string()))
    }

    /// Runs a query and reads its stream; a failure's code is the one
    /// `tl_stream_error_code` gives.
    fn sql_with_codes(&self, sql: &str) -> Result<Vec<RecordBatch>, (TlCode, String)> {
        let sql = CString::new(sql).unwrap();
        let mut stream = FFI_ArrowArrayStream::empty();
        let mut err = ptr::null_mut();
        // SAFETY: valid arguments.
        let code = unsafe { tl_session_sql(self.session, sql.as_ptr(), &mut stream, &mut err) };
        if code != TlCode::Ok {
            return Err((code, take_string(err)));
        }
        let mut batches = Vec::new();
        loop {
            let mut array = FFI_ArrowArray::empty();
            // SAFETY: the stream tl_session_sql made, not released yet.
            let rc = unsafe { (stream.get_next.unwrap())(&mut stream, &mut array) };
            if rc != 0 {
                // SAFETY: as above.
                let code = unsafe { tl_stream_error_code(&mut stream) };
                // SAFETY: as above; the text stays valid until the next call.
                let text = unsafe { CStr::from_ptr((stream.get_last_error.unwrap())(&mut stream)) };
                return Err((code, text.to_string_lossy().into_owned()));
            }
            if array.is_released() {
                break;
            }
            let mut schema = FFI_ArrowSchema::empty();
            // SAFETY: as above.
            assert_eq!(
                unsafe { (stream.get_schema.unwrap())(&mut stream, &mut schema) },
                0
            );
            // SAFETY: an array and its schema from the stream.
            let data = unsafe { arrow::ffi::from_ffi(array, &schema) }.unwrap();
            batches.push(RecordBatch::from(arrow::array::StructArray::from(data)));
        }
        // SAFETY: a healthy stream reports no failure.
        assert_eq!(unsafe { tl_stream_error_code(&mut stream) }, TlCode::Ok);
        Ok(batches)
    }

    fn last_request(&self, table: &str) -> Value {
        let requests = self.catalog.requests.lock().unwrap();
        requests
            .iter()
            .rev()
            .find(|(t, _)| t == table)
            .map(|(_, r)| r.clone())
            .expect("plan_scan was called")
    }
}

// SAFETY: the handles are only used through the library's functions, which
// the header documents as thread-safe.
unsafe impl Sync for Fixture {}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: handles from the fixture, freed once; the session keeps
        // its own reference to the store, so the order does not matter.
        unsafe {
            tl_session_free(self.session);
            tl_store_free(self.store);
        }
    }
}

fn column<T: 'static>(batch: &RecordBatch, i: usize) -> &T {
    batch.column(i).as_any().downcast_ref::<T>().unwrap()
}

/// The bucket and store options of the S3 server the S3 tests run against.
///
/// With TIMELAKE_TEST_S3_ENDPOINT and TIMELAKE_TEST_S3_BUCKET (an existing
/// bucket) set, that server, with the credentials and region of
/// TIMELAKE_TEST_S3_ACCESS_KEY_ID, TIMELAKE_TEST_S3_SECRET_ACCESS_KEY and
/// TIMELAKE_TEST_S3_REGION (placeholders when unset). Otherwise a private
/// server that `scripts/s3server.py` starts once per test process; it stops
/// when the process exits and closes the launcher's stdin. Panics when the
/// server cannot be had, so that the S3 tests fail rather than pass.
pub(crate) fn s3_test_config() -> (String, Vec<(String, String)>) {
    static SERVER: OnceLock<S3TestServer> = OnceLock::new();
    let server = SERVER.get_or_init(S3TestServer::start);
    let options = [
        ("aws_endpoint", server.endpoint.as_str()),
        ("aws_allow_http", "true"),
        ("aws_region", server.region.as_str()),
        ("aws_access_key_id", server.access_key_id.as_str()),
        ("aws_secret_access_key", server.secret_access_key.as_str()),
    ];
    let options = options
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (server.bucket.clone(), options)
}

struct S3TestServer {
    endpoint: String,
    bucket: String,
    region: String,
    access_key_id: String,
    secret_access_key: String,
    /// The launcher's stdin: never written, closed when the process exits,
    /// which stops the server.
    _stdin: Option<std::process::ChildStdin>,
}

impl S3TestServer {
    fn start() -> Self {
        let env = |name: &str| std::env::var(name).ok();
        if let (Some(endpoint), Some(bucket)) = (
            env("TIMELAKE_TEST_S3_ENDPOINT"),
            env("TIMELAKE_TEST_S3_BUCKET"),
        ) {
            return Self {
                endpoint,
                bucket,
                region: env("TIMELAKE_TEST_S3_REGION").unwrap_or("us-east-1".into()),
                access_key_id: env("TIMELAKE_TEST_S3_ACCESS_KEY_ID")
                    .unwrap_or("AKIDTIMELAKETEST".into()),
                secret_access_key: env("TIMELAKE_TEST_S3_SECRET_ACCESS_KEY")
                    .unwrap_or("timelake-fake-secret".into()),
                _stdin: None,
            };
        }
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let python = root.join(".venv/bin/python");
        let launcher = root.join("scripts/s3server.py");
        let mut child = Command::new(&python)
            .arg(&launcher)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
        // The launcher bounds its own wait: a line, or EOF when it gives up.
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Ok(info) = serde_json::from_str::<Value>(&line) else {
            let status = child.wait().unwrap();
            panic!(
                "{} did not start an S3 server ({status}; its stderr is above): {line:?}",
                launcher.display()
            );
        };
        let field = |name: &str| info[name].as_str().unwrap().to_string();
        Self {
            endpoint: field("endpoint"),
            bucket: field("bucket"),
            region: field("region"),
            access_key_id: field("access_key_id"),
            secret_access_key: field("secret_access_key"),
            _stdin: child.stdin.take(),
        }
    }
}

#[test]
fn sql_end_to_end() {
    check_queries(&Fixture::new());
}

/// The same queries on an S3 server (see `s3_test_config`).
#[test]
fn sql_end_to_end_on_s3() {
    let (bucket, options) = s3_test_config();
    let url = format!("s3://{bucket}/timelake-e2e-{}", std::process::id());
    let options: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let fx = Fixture::open(&url, &options, None);
    check_queries(&fx);
    let key = CString::new(DATA_KEY).unwrap();
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments.
    let code = unsafe { tl_store_delete(fx.store, key.as_ptr(), &mut err) };
    assert_eq!(code, TlCode::Ok);
}

fn check_queries(fx: &Fixture) {
    // Aggregate with a filter.
    let batches = fx
        .sql("SELECT count(*), sum(x) FROM t WHERE x > 1")
        .unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
    let count = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let sum = batches[0]
        .column(1)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!((count.value(0), sum.value(0)), (9, 54));
    // The filter reached plan_scan in the documented format.
    let request = fx.last_request("t");
    assert_eq!(
        request["filters"],
        json!([{"column": "x", "op": "gt", "value": {"type": "int", "v": 1}}])
    );
    assert_eq!(request["limit"], Value::Null);

    // Fully qualified name, all columns.
    let batches = fx
        .sql("SELECT * FROM timelake.default.t ORDER BY x")
        .unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 10);
    let mut xs = Vec::new();
    let mut names = Vec::new();
    for batch in &batches {
        assert_eq!(batch.num_columns(), 3);
        xs.extend(column::<Int64Array>(batch, 0).values().iter().copied());
        names.extend(
            column::<StringArray>(batch, 1)
                .iter()
                .map(|s| s.unwrap().to_string()),
        );
        let ts = column::<TimestampMicrosecondArray>(batch, 2);
        assert_eq!(ts.timezone(), Some("UTC"));
    }
    assert_eq!(xs, (1..=10).collect::<Vec<_>>());
    assert_eq!(names[0], "n1");
    assert_eq!(fx.last_request("t")["filters"], json!([]));
    assert_eq!(
        fx.last_request("t")["projection"],
        json!(["x", "name", "ts"])
    );

    // Timestamps, IN lists, flipped comparisons and a projection.
    let batches = fx
        .sql(
            "SELECT name FROM t WHERE ts >= TIMESTAMP '2024-01-01T00:00:05Z' \
             AND name IN ('n5', 'n6', 'n1') AND 7 > x",
        )
        .unwrap();
    let mut got: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            column::<StringArray>(b, 0)
                .iter()
                .map(|s| s.unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    got.sort();
    assert_eq!(got, ["n5", "n6"]);
    let request = fx.last_request("t");
    let filters = request["filters"].as_array().unwrap();
    assert!(
        filters.contains(&json!({"column": "ts", "op": "ge",
            "value": {"type": "timestamp_us", "v": TS0 + 5_000_000}})),
        "{request}"
    );
    assert!(
        filters.contains(&json!({"column": "x", "op": "lt", "value": {"type": "int", "v": 7}})),
        "{request}"
    );
    let in_filter = filters
        .iter()
        .find(|f| f["op"] == "in")
        .unwrap_or_else(|| panic!("IN list: {request}"));
    assert_eq!(in_filter["column"], "name");
    assert_eq!(in_filter["values"].as_array().unwrap().len(), 3);
    let projection = request["projection"].as_array().unwrap();
    assert!(projection.contains(&json!("name")));

    // Without filters DataFusion hands the limit to the scan.
    let batches = fx.sql("SELECT x FROM t LIMIT 3").unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
    let request = fx.last_request("t");
    assert_eq!(request["limit"], json!(3));
    assert_eq!(request["projection"], json!(["x"]));
}

#[test]
fn errors_are_reported() {
    let fx = Fixture::new();

    let (code, message) = fx.sql("SELEC nonsense").unwrap_err();
    assert_eq!(code, TlCode::Invalid);
    assert!(!message.is_empty());

    let (code, message) = fx.sql("SELECT * FROM no_such_table").unwrap_err();
    assert_eq!(code, TlCode::Invalid);
    assert!(message.contains("no_such_table"), "{message}");

    // A callback's error fails the query with its message.
    let (code, message) = fx.sql("SELECT * FROM failing").unwrap_err();
    assert_eq!(code, TlCode::Execution);
    assert!(message.contains("boom: metadata unavailable"), "{message}");

    // Execution errors surface through the stream's get_last_error.
    let (code, message) = fx.sql("SELECT * FROM broken").unwrap_err();
    assert_eq!(code, TlCode::Execution);
    assert!(message.contains("missing.parquet"), "{message}");

    // A callback's code is the query's: a retryable storage failure while
    // planning stays one (C++ retries or reports it as such).
    let (code, message) = fx.sql("SELECT * FROM flaky").unwrap_err();
    assert_eq!(code, TlCode::StorageRetryable);
    assert!(message.contains("503 SlowDown"), "{message}");

    // A plan that breaks the header's layout fails the query, naming what
    // was wrong, rather than reading some files.
    let (_, message) = fx.sql("SELECT * FROM unplanned").unwrap_err();
    assert!(
        message.contains("plan_scan(default.unplanned) returned no files batch"),
        "{message}"
    );
    let (_, message) = fx.sql("SELECT * FROM misplanned").unwrap_err();
    assert!(
        message.contains("merge groups without \"dedup.key.0\""),
        "{message}"
    );

    // A data file that is not there: object_store's "not found" while the
    // plan runs, kept by the stream.
    let (code, message) = fx.sql_with_codes("SELECT * FROM broken").unwrap_err();
    assert_eq!(code, TlCode::NotFound, "{message}");
    assert!(message.contains("missing.parquet"), "{message}");
    // A stream that is not one of ours has no code to tell.
    let mut foreign = FFI_ArrowArrayStream::empty();
    // SAFETY: a valid (released) stream.
    assert_eq!(
        unsafe { tl_stream_error_code(&mut foreign) },
        TlCode::Invalid
    );

    // Bad arguments.
    let mut err = ptr::null_mut();
    let mut stream = FFI_ArrowArrayStream::empty();
    // SAFETY: deliberately NULL arguments.
    let code = unsafe { tl_session_sql(fx.session, ptr::null(), &mut stream, &mut err) };
    assert_eq!(code, TlCode::Invalid);
    assert_eq!(take_string(err), "sql is NULL");
}

#[test]
fn options_metadata_queries_and_explain() {
    let fx = Fixture::new();

    // Options: a small batch size splits the 10 rows.
    let (key, value) = (
        CString::new("datafusion.execution.batch_size").unwrap(),
        CString::new("3").unwrap(),
    );
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments.
    let code = unsafe { tl_session_set_option(fx.session, key.as_ptr(), value.as_ptr(), &mut err) };
    assert_eq!(code, TlCode::Ok);
    let batches = fx.sql("SELECT x FROM t").unwrap();
    assert!(batches.len() >= 4, "{} batches", batches.len());
    let bad = CString::new("datafusion.no.such.option").unwrap();
    // SAFETY: valid arguments.
    let code = unsafe { tl_session_set_option(fx.session, bad.as_ptr(), value.as_ptr(), &mut err) };
    assert_eq!(code, TlCode::Invalid);
    take_string(err);

    // SET, SHOW and information_schema go through DataFusion.
    fx.sql("SET datafusion.execution.batch_size = 8192")
        .unwrap();
    let batches = fx.sql("SHOW TABLES").unwrap();
    let mut tables = Vec::new();
    for batch in &batches {
        let schema = batch.schema();
        let (i, _) = schema.column_with_name("table_name").unwrap();
        let names = arrow::compute::cast(batch.column(i), &DataType::Utf8).unwrap();
        let names = names.as_any().downcast_ref::<StringArray>().unwrap();
        let catalogs = arrow::compute::cast(batch.column(0), &DataType::Utf8).unwrap();
        let catalogs = catalogs.as_any().downcast_ref::<StringArray>().unwrap();
        for row in 0..batch.num_rows() {
            if catalogs.value(row) == "timelake" && !names.value(row).is_empty() {
                tables.push(names.value(row).to_string());
            }
        }
    }
    tables.retain(|t| ["t", "broken", "failing"].contains(&t.as_str()));
    tables.sort();
    assert_eq!(tables, ["broken", "failing", "t"]);
    let batches = fx
        .sql(
            "SELECT count(*) AS n FROM information_schema.columns \
             WHERE table_catalog = 'timelake' AND table_name = 't'",
        )
        .unwrap();
    assert_eq!(column::<Int64Array>(&batches[0], 0).value(0), 3);
    let batches = fx.sql("EXPLAIN SELECT x FROM t WHERE x > 3").unwrap();
    assert!(!batches.is_empty());

    // EXPLAIN ANALYZE shows the Parquet scan, its pruning predicate and
    // metrics: x > 6 skips the first row group (x = 1..5).
    let sql = CString::new("SELECT sum(x) FROM t WHERE x > 6").unwrap();
    let mut text = ptr::null_mut();
    // SAFETY: valid arguments.
    let code = unsafe { tl_session_explain_analyze(fx.session, sql.as_ptr(), &mut text, &mut err) };
    assert_eq!(code, TlCode::Ok);
    let text = take_string(text);
    assert!(text.contains("DataSourceExec"), "{text}");
    // The filter is the scan's pruning predicate, once.
    assert!(text.contains("predicate=x@0 > 6,"), "{text}");
    assert!(text.contains("page_index_pages_pruned="), "{text}");
    assert!(
        text.contains("row_groups_pruned_statistics=2 total \u{2192} 1 matched"),
        "{text}"
    );

    let batches = fx.sql("SELECT sum(x) FROM t WHERE x > 6").unwrap();
    let sum = batches[0].column(0).as_any().downcast_ref::<Int64Array>();
    let sum = sum
        .map(|a| a.value(0))
        .unwrap_or_else(|| column::<UInt64Array>(&batches[0], 0).value(0) as i64);
    assert_eq!(sum, 7 + 8 + 9 + 10);
}

#[test]
fn concurrent_queries() {
    let fx = Fixture::new();
    std::thread::scope(|s| {
        for i in 0..4i64 {
            let fx = &fx;
            s.spawn(move || {
                for _ in 0..5 {
                    let batches = fx
                        .sql(&format!("SELECT count(*) FROM t WHERE x > {i}"))
                        .unwrap();
                    assert_eq!(column::<Int64Array>(&batches[0], 0).value(0), 10 - i);
                    fx.sql("SHOW TABLES").unwrap();
                }
            });
        }
    });
}

/// A session pointer that may cross to another thread (the ABI says every
/// function is thread-safe).
struct SessionPtr(*mut TlSession);
// SAFETY: only handed to tl_session_interrupt, which is thread-safe.
unsafe impl Send for SessionPtr {}

#[test]
fn interrupt_cancels_a_running_query_and_the_next_one_runs() {
    let fx = Fixture::new();
    // Minutes of work before the first batch: a filter keeps DataFusion from
    // answering from statistics.
    let busy = "SELECT count(*) FROM range(100000000000) WHERE value % 7 = 3";
    let done = AtomicBool::new(false);
    let (code, message) = std::thread::scope(|s| {
        let session = SessionPtr(fx.session);
        let done = &done;
        s.spawn(move || {
            let session = session;
            // Again and again: an interrupt before the query starts is
            // forgotten when it starts.
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(20));
                // SAFETY: the fixture's session outlives this scope.
                unsafe { tl_session_interrupt(session.0) };
            }
        });
        let result = fx.sql_with_codes(busy);
        done.store(true, Ordering::SeqCst);
        result.unwrap_err()
    });
    assert_eq!(code, TlCode::Cancelled, "{message}");
    assert!(message.contains("interrupted"), "{message}");
    // The flag is cleared by the next statement.
    let batches = fx.sql_with_codes("SELECT count(*) FROM t").unwrap();
    assert_eq!(column::<Int64Array>(&batches[0], 0).value(0), 10);
    // SAFETY: NULL is ignored.
    unsafe { tl_session_interrupt(ptr::null()) };
}

#[test]
fn release_after_last_use() {
    let fx = Fixture::new();
    let catalog = Arc::clone(&fx.catalog);
    // An information_schema stream lists tables while it runs, so it keeps
    // the callbacks alive past tl_session_free.
    let sql = CString::new("SELECT table_name FROM information_schema.tables").unwrap();
    let mut stream = FFI_ArrowArrayStream::empty();
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments.
    let code = unsafe { tl_session_sql(fx.session, sql.as_ptr(), &mut stream, &mut err) };
    assert_eq!(code, TlCode::Ok);
    drop(fx);
    // The session is gone, but the open stream still holds the callbacks.
    assert!(!catalog.released.load(Ordering::SeqCst));
    let reader = ArrowArrayStreamReader::try_new(stream).unwrap();
    let mut names = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        names.extend(column.iter().flatten().map(str::to_string));
    }
    // Our table, listed through the callbacks after tl_session_free.
    assert!(names.iter().any(|n| n == "t"), "{names:?}");
    assert!(catalog.released.load(Ordering::SeqCst));
    assert_eq!(Arc::strong_count(&catalog), 1);
}

#[test]
fn session_new_takes_ownership_of_ctx() {
    let url = CString::new("memory://").unwrap();
    let mut store = ptr::null_mut();
    let mut err = ptr::null_mut();
    let catalog = Arc::new(TestCatalog {
        store: AtomicPtr::new(ptr::null_mut()),
        requests: Mutex::new(Vec::new()),
        released: AtomicBool::new(false),
    });
    let callbacks = TlCatalogCallbacks {
        ctx: Arc::into_raw(Arc::clone(&catalog)) as *mut c_void,
        list_schemas: Some(list_schemas),
        list_tables: Some(list_tables),
        table_schema: Some(table_schema_cb),
        plan_scan: None,
        release: Some(release),
        describe_settings: None,
        check_setting: None,
        table_at: None,
        list_snapshots: None,
    };
    let mut session = ptr::null_mut();
    // SAFETY: valid arguments except for the missing callback.
    unsafe {
        assert_eq!(
            tl_store_open(
                url.as_ptr(),
                ptr::null(),
                ptr::null(),
                0,
                &mut store,
                &mut err
            ),
            TlCode::Ok
        );
        let code = tl_session_new(store, callbacks, 0, &mut session, &mut err);
        assert_eq!(code, TlCode::Invalid);
        assert!(take_string(err).contains("plan_scan"));
        assert!(session.is_null());
        tl_store_free(store);
    }
    assert!(catalog.released.load(Ordering::SeqCst));
    assert_eq!(Arc::strong_count(&catalog), 1);
}

/// A store on memory://, for the store ABI's tests (free with tl_store_free).
fn open_memory_store() -> *mut TlStore {
    let url = CString::new("memory://").unwrap();
    let mut store = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments; `store` is written on success.
    let code = unsafe {
        tl_store_open(
            url.as_ptr(),
            ptr::null(),
            ptr::null(),
            0,
            &mut store,
            &mut err,
        )
    };
    assert_eq!(code, TlCode::Ok);
    store
}

#[test]
fn store_abi() {
    let store = open_memory_store();
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments throughout; everything returned is freed.
    unsafe {
        assert_eq!(take_string(tl_store_root_url(store)), "memory:///");

        let key = CString::new("dir/a.txt").unwrap();
        let mut etag = ptr::null_mut();
        let code = tl_store_put(
            store,
            key.as_ptr(),
            b"abc".as_ptr(),
            3,
            1,
            ptr::null(),
            &mut etag,
            &mut err,
        );
        assert_eq!(code, TlCode::Ok);
        let etag = take_string(etag);
        let code = tl_store_put(
            store,
            key.as_ptr(),
            b"abc".as_ptr(),
            3,
            1,
            ptr::null(),
            ptr::null_mut(),
            &mut err,
        );
        assert_eq!(code, TlCode::AlreadyExists);
        let message = take_string(err);
        assert!(
            message.starts_with("put_if_absent memory:///dir/a.txt: "),
            "{message}"
        );
        let stale = CString::new("stale").unwrap();
        let code = tl_store_put(
            store,
            key.as_ptr(),
            b"xyz".as_ptr(),
            3,
            2,
            stale.as_ptr(),
            ptr::null_mut(),
            &mut err,
        );
        assert_eq!(code, TlCode::Precondition);
        take_string(err);
        let current = CString::new(etag).unwrap();
        let code = tl_store_put(
            store,
            key.as_ptr(),
            b"xyz".as_ptr(),
            3,
            2,
            current.as_ptr(),
            ptr::null_mut(),
            &mut err,
        );
        assert_eq!(code, TlCode::Ok);
        let code = tl_store_put(
            store,
            key.as_ptr(),
            b"xyz".as_ptr(),
            3,
            7,
            ptr::null(),
            ptr::null_mut(),
            &mut err,
        );
        assert_eq!(code, TlCode::Invalid);
        take_string(err);

        let mut bytes = TlBytes {
            data: ptr::null_mut(),
            len: 0,
        };
        assert_eq!(
            tl_store_get(store, key.as_ptr(), &mut bytes, &mut err),
            TlCode::Ok
        );
        assert_eq!(std::slice::from_raw_parts(bytes.data, bytes.len), b"xyz");
        tl_bytes_free(&mut bytes);
        assert!(bytes.data.is_null() && bytes.len == 0);
        assert_eq!(
            tl_store_get_range(store, key.as_ptr(), 1, 10, &mut bytes, &mut err),
            TlCode::Ok
        );
        assert_eq!(std::slice::from_raw_parts(bytes.data, bytes.len), b"yz");
        tl_bytes_free(&mut bytes);

        let mut size = 0u64;
        let mut etag = ptr::null_mut();
        assert_eq!(
            tl_store_head(store, key.as_ptr(), &mut size, &mut etag, &mut err),
            TlCode::Ok
        );
        assert_eq!(size, 3);
        take_string(etag);

        let other = CString::new("dir/sub/b.txt").unwrap();
        assert_eq!(
            tl_store_put(
                store,
                other.as_ptr(),
                ptr::null(),
                0,
                0,
                ptr::null(),
                ptr::null_mut(),
                &mut err
            ),
            TlCode::Ok
        );
        let prefix = CString::new("dir/").unwrap();
        let mut listing = TlListing {
            objects: ptr::null_mut(),
            n_objects: 0,
            prefixes: ptr::null_mut(),
            n_prefixes: 0,
        };
        assert_eq!(
            tl_store_list(store, prefix.as_ptr(), 1, &mut listing, &mut err),
            TlCode::Ok
        );
        assert_eq!((listing.n_objects, listing.n_prefixes), (1, 1));
        assert_eq!(
            CStr::from_ptr((*listing.objects).path).to_str().unwrap(),
            "dir/a.txt"
        );
        assert_eq!(
            CStr::from_ptr(*listing.prefixes).to_str().unwrap(),
            "dir/sub"
        );
        tl_listing_free(&mut listing);
        assert_eq!(
            tl_store_list(store, prefix.as_ptr(), 0, &mut listing, &mut err),
            TlCode::Ok
        );
        assert_eq!((listing.n_objects, listing.n_prefixes), (2, 0));
        assert!(listing.prefixes.is_null());
        tl_listing_free(&mut listing);

        assert_eq!(tl_store_delete(store, key.as_ptr(), &mut err), TlCode::Ok);
        assert_eq!(tl_store_delete(store, key.as_ptr(), &mut err), TlCode::Ok);
        assert_eq!(
            tl_store_get(store, key.as_ptr(), &mut bytes, &mut err),
            TlCode::NotFound
        );
        take_string(err);
        // Errors without an err pointer are fine too.
        assert_eq!(
            tl_store_get(store, key.as_ptr(), &mut bytes, ptr::null_mut()),
            TlCode::NotFound
        );

        // NULL handles and free functions.
        assert_eq!(
            tl_store_get(ptr::null_mut(), key.as_ptr(), &mut bytes, &mut err),
            TlCode::Invalid
        );
        take_string(err);
        assert!(tl_store_root_url(ptr::null()).is_null());
        tl_store_free(ptr::null_mut());
        tl_session_free(ptr::null_mut());
        tl_string_free(ptr::null_mut());
        tl_bytes_free(ptr::null_mut());
        tl_listing_free(ptr::null_mut());
        tl_sink_write(ptr::null_mut(), ptr::null(), 0);
        tl_sink_set_schema(ptr::null_mut(), ptr::null_mut());

        tl_store_free(store);
    }
}

/// Lent memory goes up without a copy and is released exactly once: when the
/// store no longer holds it (the memory store keeps it as the object), and at
/// once when the call fails.
#[test]
fn lent_memory_is_released_once() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn release(owner: *mut c_void) {
        // SAFETY: the owner is a Box<Vec<u8>> made below.
        drop(unsafe { Box::from_raw(owner.cast::<Vec<u8>>()) });
        RELEASED.fetch_add(1, Ordering::SeqCst);
    }
    fn lend(bytes: Vec<u8>) -> TlLent {
        let owner = Box::new(bytes);
        TlLent {
            data: owner.as_ptr(),
            len: owner.len(),
            release: Some(release),
            owner: Box::into_raw(owner).cast(),
        }
    }
    let store = open_memory_store();
    let mut err = ptr::null_mut();
    // SAFETY: valid arguments but where a case says otherwise; everything
    // returned is freed.
    unsafe {
        let read = |key: &CString| {
            let mut bytes = TlBytes {
                data: ptr::null_mut(),
                len: 0,
            };
            let mut err = ptr::null_mut();
            assert_eq!(
                tl_store_get(store, key.as_ptr(), &mut bytes, &mut err),
                TlCode::Ok
            );
            let out = std::slice::from_raw_parts(bytes.data, bytes.len).to_vec();
            tl_bytes_free(&mut bytes);
            out
        };
        let key = CString::new("lent/a").unwrap();
        let null = ptr::null_mut();
        let code = tl_store_put_lent(
            store,
            key.as_ptr(),
            lend(b"lent".to_vec()),
            0,
            ptr::null(),
            null,
            &mut err,
        );
        assert_eq!(code, TlCode::Ok);
        assert_eq!(read(&key), b"lent");
        // The memory store keeps the lent bytes as the object.
        assert_eq!(RELEASED.load(Ordering::SeqCst), 0);

        // Failures before anything is sent still release.
        let code = tl_store_put_lent(
            store,
            key.as_ptr(),
            lend(b"x".to_vec()),
            9,
            ptr::null(),
            null,
            &mut err,
        );
        assert_eq!(code, TlCode::Invalid);
        assert!(take_string(err).contains("invalid put mode 9"));
        let code = tl_store_put_lent(
            ptr::null_mut(),
            key.as_ptr(),
            lend(b"x".to_vec()),
            0,
            ptr::null(),
            null,
            &mut err,
        );
        assert_eq!(code, TlCode::Invalid);
        take_string(err);
        // Put-if-absent of an existing key fails after the call began.
        let code = tl_store_put_lent(
            store,
            key.as_ptr(),
            lend(b"x".to_vec()),
            1,
            ptr::null(),
            null,
            &mut err,
        );
        assert_eq!(code, TlCode::AlreadyExists);
        take_string(err);
        assert_eq!(RELEASED.load(Ordering::SeqCst), 3);
        assert_eq!(read(&key), b"lent");
        assert_eq!(tl_store_delete(store, key.as_ptr(), &mut err), TlCode::Ok);
        assert_eq!(RELEASED.load(Ordering::SeqCst), 4);

        // An upload of two lent parts (the first of S3's minimum size).
        let big = CString::new("lent/big").unwrap();
        let first: Vec<u8> = (0..5u32 << 20).map(|i| (i % 251) as u8).collect();
        let mut upload = ptr::null_mut();
        assert_eq!(
            tl_store_upload_begin(store, big.as_ptr(), &mut upload, &mut err),
            TlCode::Ok
        );
        assert_eq!(
            tl_store_upload_part_lent(upload, lend(first.clone()), &mut err),
            TlCode::Ok
        );
        assert_eq!(
            tl_store_upload_part_lent(upload, lend(b"end".to_vec()), &mut err),
            TlCode::Ok
        );
        assert_eq!(
            tl_store_upload_finish(upload, ptr::null_mut(), &mut err),
            TlCode::Ok
        );
        assert_eq!(RELEASED.load(Ordering::SeqCst), 6);
        let mut whole = first;
        whole.extend_from_slice(b"end");
        assert!(read(&big) == whole);

        // An empty part is refused, and released.
        assert_eq!(
            tl_store_upload_begin(store, big.as_ptr(), &mut upload, &mut err),
            TlCode::Ok
        );
        assert_eq!(
            tl_store_upload_part_lent(upload, lend(Vec::new()), &mut err),
            TlCode::Invalid
        );
        assert!(take_string(err).contains("must not be empty"));
        assert_eq!(tl_store_upload_abort(upload, &mut err), TlCode::Ok);
        tl_store_free(store);
        assert_eq!(RELEASED.load(Ordering::SeqCst), 7);
    }
}

/// The newest-row rewrite reads the rows C++ moves into the sink as Arrow C
/// data: no data file is scanned, and the answer is the index's.
#[test]
fn last_values_cross_as_arrow_c_data() {
    let fx = Fixture::new();
    let sql = "SELECT x, name FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY name \
               ORDER BY ts DESC) AS rn FROM t) WHERE rn = 1";
    for _ in 0..2 {
        // Twice: nothing of the first answer is kept on the Rust side.
        let batches = fx.sql_with_codes(sql).unwrap();
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
        assert_eq!(column::<Int64Array>(&batches[0], 0).value(0), 99);
        assert_eq!(column::<StringArray>(&batches[0], 1).value(0), "last");
        assert_eq!(
            fx.last_request("t")["last_values"],
            json!({"partition_by": ["name"], "order_by": "ts"})
        );
    }
    let batches = fx.sql(&format!("EXPLAIN {sql}")).unwrap();
    let mut plan = String::new();
    for batch in &batches {
        let text = arrow::compute::cast(batch.column(1), &DataType::Utf8).unwrap();
        let text = text.as_any().downcast_ref::<StringArray>().unwrap();
        plan.extend(text.iter().flatten().map(|s| format!("{s}\n")));
    }
    assert!(!plan.contains("part-0.parquet"), "{plan}");
    assert!(!plan.contains("BoundedWindowAggExec"), "{plan}");
    // Another series key: no index, the window runs over the data file.
    let batches = fx
        .sql_with_codes(
            "SELECT x FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY x ORDER BY ts DESC) \
             AS rn FROM t) WHERE rn = 1",
        )
        .unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 10);
}
