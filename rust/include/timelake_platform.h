// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The C ABI of Timelake's platform crate (Rust): one object_store client and
// Apache DataFusion. This header is the only place where C++ meets Rust.
//
// Conventions
// - Every fallible function returns a TlCode (TL_OK on success). On failure it
//   stores a message in *err (allocated by Rust, free it with tl_string_free);
//   err may be NULL when the caller does not want the message.
// - Buffers and strings returned by Rust are freed with tl_bytes_free /
//   tl_string_free / tl_listing_free. Pointers passed in are only borrowed for
//   the duration of the call, except Arrow C data structs handed to a
//   tl_sink_set_* function: those are moved (the callee owns them and marks
//   the caller's struct released, as the Arrow C data interface's "move").
// - Rows cross as Arrow C data (schemas, record batches, result streams:
//   scan plans, last-value index rows, query results); JSON text carries
//   only requests, names and small lists.
// - Errors keep their kind across the boundary in both directions: a
//   failing callback puts its TlCode in its sink (tl_sink_set_code) and the
//   query fails with that code; a failing result stream tells its code with
//   tl_stream_error_code.
// - Object keys ("paths") are relative to the store's root (the warehouse
//   location given to tl_store_open), '/'-separated, without a leading '/'.
// - All functions are thread-safe and may block. They must not be called from
//   inside a DataFusion callback's own thread pool except as documented on
//   TlCatalogCallbacks (Rust runs those callbacks on blocking threads).
// - A Rust panic never unwinds into C++: it is caught and reported as
//   TL_INTERNAL.
// - With the environment variable TIMELAKE_TRACE containing "storage" (read
//   when a store is opened), every storage request, including those of
//   query scans, prints one line to stderr:
//   "timelake storage: <METHOD> <key> <bytes> bytes <ms> ms".

#ifndef TIMELAKE_PLATFORM_H_
#define TIMELAKE_PLATFORM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html).
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);
  void (*release)(struct ArrowArrayStream*);
  void* private_data;
};
#endif  // ARROW_C_STREAM_INTERFACE

typedef enum TlCode {
  TL_OK = 0,
  TL_NOT_FOUND = 1,          // the object (or table) does not exist
  TL_ALREADY_EXISTS = 2,     // put-if-absent found an object at the key
  TL_PRECONDITION = 3,       // put-if-match: the object changed (etag mismatch)
  TL_INVALID = 4,            // bad argument: URL, option, SQL text, plan error
  TL_STORAGE = 5,            // storage failure that retrying will not fix
  TL_STORAGE_RETRYABLE = 6,  // transient storage failure (timeout, 5xx, reset)
  TL_UNSUPPORTED = 7,        // the backend or engine cannot do this
  TL_INTERNAL = 8,           // a bug, including a caught Rust panic
  TL_EXECUTION = 9,          // query execution failed (message says why)
  TL_CORRUPT = 10,           // stored metadata or data that does not parse
  TL_CANCELLED = 11,         // stopped by tl_session_interrupt
} TlCode;

void tl_string_free(char* s);

// Bytes owned by Rust.
typedef struct TlBytes {
  uint8_t* data;
  size_t len;
} TlBytes;
void tl_bytes_free(TlBytes* bytes);  // frees data, sets data=NULL, len=0

// ---------------------------------------------------------------------------
// Storage: one object_store client per store handle.

typedef struct TlStore TlStore;

// Opens a store rooted at `url`: "file:///abs/dir", "/abs/dir" (a relative
// path is taken from the working directory), "memory://" (a new, private
// in-memory store),
// "s3://bucket/prefix", "gs://bucket/prefix", "az://container/prefix" (and the
// other forms object_store's URL parser accepts). Options are object_store
// configuration keys (e.g. "aws_endpoint", "aws_region", "aws_access_key_id",
// "aws_allow_http"); environment credentials are used too. A local directory
// is created if missing. Messages never contain credential values.
// Errors of the functions below read "<op> <url of the key>: <cause>".
TlCode tl_store_open(const char* url, const char* const* option_keys,
                     const char* const* option_values, size_t n_options, TlStore** out,
                     char** err);
void tl_store_free(TlStore* store);

// The canonical URL of the store's root, without trailing '/', e.g.
// "file:///tmp/wh", "s3://bucket/prefix", "memory:///". Free with tl_string_free.
char* tl_store_root_url(const TlStore* store);

// Whole object. TL_NOT_FOUND if absent.
TlCode tl_store_get(TlStore* store, const char* path, TlBytes* out, char** err);
// Bytes [offset, offset+length) (clamped at the end of the object).
TlCode tl_store_get_range(TlStore* store, const char* path, uint64_t offset,
                          uint64_t length, TlBytes* out, char** err);
// Size and etag (etag may be NULL when the backend has none; free with
// tl_string_free).
TlCode tl_store_head(TlStore* store, const char* path, uint64_t* size, char** etag,
                     char** err);

typedef enum TlPutMode {
  TL_PUT_OVERWRITE = 0,
  TL_PUT_CREATE = 1,  // put-if-absent: TL_ALREADY_EXISTS if the key exists
  TL_PUT_UPDATE = 2,  // put-if-match `etag`: TL_PRECONDITION if it changed
                      // (TL_UNSUPPORTED where the backend has no conditional
                      // update, e.g. the local file system)
} TlPutMode;

// Writes an object atomically (readers see all of it or nothing). Payloads
// over 8 MiB written with TL_PUT_OVERWRITE use multipart upload.
// out_etag (optional) receives the new etag (free with tl_string_free).
TlCode tl_store_put(TlStore* store, const char* path, const uint8_t* data, size_t len,
                    TlPutMode mode, const char* etag, char** out_etag, char** err);

// Memory lent instead of copied: the library reads `len` bytes at `data`,
// which must not change meanwhile, until it calls `release(owner)`, once,
// from any thread (so `release` must be thread-safe), when it no longer needs
// them: once sent (a memory:// store keeps them as the object, until that is
// replaced or deleted or the store freed), and at once when the call fails.
// `release` may be NULL (static memory).
typedef struct TlLent {
  const uint8_t* data;
  size_t len;
  void (*release)(void* owner);
  void* owner;
} TlLent;

// tl_store_put of lent memory (no copy).
TlCode tl_store_put_lent(TlStore* store, const char* path, TlLent data, TlPutMode mode,
                         const char* etag, char** out_etag, char** err);

// Deletes an object. Deleting a missing object is TL_OK.
TlCode tl_store_delete(TlStore* store, const char* path, char** err);

typedef struct TlObjectMeta {
  char* path;  // relative to the store root
  uint64_t size;
  int64_t last_modified_ms;  // Unix epoch milliseconds
} TlObjectMeta;

typedef struct TlListing {
  TlObjectMeta* objects;
  size_t n_objects;
  char** prefixes;  // "directories" (only with delimiter), relative, no trailing '/'
  size_t n_prefixes;
} TlListing;

// Lists objects under `prefix` ("" for the root; a trailing '/' is optional).
// With delimiter != 0 only direct children are listed and sub-folders are
// returned in `prefixes`; otherwise everything below, recursively. Order is
// unspecified. A missing prefix lists nothing (TL_OK). NULL means "".
TlCode tl_store_list(TlStore* store, const char* prefix, int delimiter, TlListing* out,
                     char** err);
void tl_listing_free(TlListing* listing);

// Streaming (multipart) upload of one object whose size is not known up front,
// in bounded memory: the caller sends parts as it produces them; they upload
// in the background, at most 2 at a time. Nothing is visible at `path` until
// tl_store_upload_finish, when the whole object appears atomically (overwriting
// any object at `path`; there is no put-if-absent here). An upload that is
// aborted, or whose finish fails, leaves nothing behind. Traced as one
// MULTIPART line on completion. A handle is used by one thread at a time.
typedef struct TlUpload TlUpload;

// Starts an upload of `path`.
TlCode tl_store_upload_begin(TlStore* store, const char* path, TlUpload** out,
                             char** err);
// Sends the next part (copied; `len` > 0). Every part but the last must have
// the same size of at least 5 MiB (S3's minimum). Waits while 2 parts are in
// flight, and reports the failure of an earlier part; after an error the upload
// can only be aborted. Not retried here (object_store retries its requests).
TlCode tl_store_upload_part(TlUpload* upload, const uint8_t* data, size_t len,
                            char** err);
// tl_store_upload_part of lent memory (no copy; `data.len` > 0).
TlCode tl_store_upload_part_lent(TlUpload* upload, TlLent data, char** err);
// Waits for the parts and completes the upload (at least one part must have
// been sent). `out_etag` (optional) receives the new etag, NULL when the
// backend has none (free with tl_string_free). Frees `upload` whatever the
// outcome; on failure the upload is aborted.
TlCode tl_store_upload_finish(TlUpload* upload, char** out_etag, char** err);
// Discards the parts sent and frees `upload` (NULL is fine).
TlCode tl_store_upload_abort(TlUpload* upload, char** err);

// ---------------------------------------------------------------------------
// Parquet footers held in memory, per store: every session on the store plans
// scans of a file from its cached metadata (page indexes included) instead of
// reading the footer from storage. A footer "blob" is self-contained: the
// file's column and offset index bytes, a FileMetaData whose index offsets
// point into the blob, its u32 LE length and "PAR1" (the head object's
// footers section, docs/format.md).

// The blob of the data file at `path` of `file_size` bytes, given its last
// `tail_len` bytes; the metadata is cached too. `out` is left empty (len 0)
// when the tail does not reach back to the page indexes. TL_INVALID when the
// tail does not parse as a Parquet footer.
TlCode tl_footer_from_tail(TlStore* store, const char* path, const uint8_t* tail,
                           size_t tail_len, uint64_t file_size, TlBytes* out, char** err);
// Caches the metadata of a blob of the data file at `path` of `file_size`
// bytes (nothing to do when the file's metadata is cached already).
// TL_INVALID when the blob does not parse.
TlCode tl_footer_remember(TlStore* store, const char* path, uint64_t file_size,
                          const uint8_t* blob, size_t blob_len, char** err);

// ---------------------------------------------------------------------------
// SQL sessions on DataFusion.
//
// The catalog "timelake" is backed by C++: DataFusion asks C++ through these
// callbacks which schemas (namespaces) and tables exist, what a table's schema
// is, and which data files a scan must read. Callbacks are invoked on Rust's
// blocking threads; they may call tl_store_* functions. They return 0 on
// success, 1 for "not found", any other value for an error whose message they
// put with tl_sink_write and whose kind they set with tl_sink_set_code (e.g.
// TL_STORAGE_RETRYABLE when a manifest could not be read, TL_CORRUPT when it
// does not parse); such an error fails the query with that code, or with
// TL_EXECUTION when none was set. Errors of list_schemas / list_tables cannot
// fail a query (DataFusion's listing methods are infallible): they are
// printed to stderr and the list is taken as empty; "not found" from them is
// an empty list too. A sink lives for one callback call.

typedef struct TlSink TlSink;
// Appends bytes (UTF-8 JSON text, or an error message) to the sink.
void tl_sink_write(TlSink* sink, const char* data, size_t len);
// Moves an Arrow schema into the sink (the sink takes ownership; *schema is
// marked released).
void tl_sink_set_schema(TlSink* sink, struct ArrowSchema* schema);
// Moves a record batch into the sink: `array` is a struct array of type
// `schema` (Arrow C++'s ExportRecordBatch). The sink takes ownership of both
// and marks them released, whatever happens (a released or NULL half makes
// the sink drop the other). Rust reads the buffers in place, without a copy,
// and calls array->release when it no longer needs them, which may be after
// the callback returned and from any thread.
void tl_sink_set_batch(TlSink* sink, struct ArrowSchema* schema,
                       struct ArrowArray* array);
// The TlCode of the callback's failure (with a return value other than 0
// and 1). Values that are not TlCodes, and TL_OK, are ignored.
void tl_sink_set_code(TlSink* sink, int code);

typedef struct TlCatalogCallbacks {
  void* ctx;
  // Writes a JSON array of namespace names, e.g. ["default","iot"].
  int (*list_schemas)(void* ctx, TlSink* out);
  // Writes a JSON array of table names in `schema`.
  int (*list_tables)(void* ctx, const char* schema, TlSink* out);
  // Sets the Arrow schema of `schema`.`table` (tl_sink_set_schema); returns 1
  // when the table does not exist.
  int (*table_schema)(void* ctx, const char* schema, const char* table, TlSink* out);
  // Plans a scan: `request_json` is
  //   {"filters": [<filter>...], "projection": ["col", ...] | null, "limit": n | null}
  // where each <filter> is one conjunct of the query's WHERE clause that Rust
  // could translate (others are left out; results never depend on them since
  // every filter is also applied by DataFusion):
  //   {"column": "c", "op": "eq"|"ne"|"lt"|"le"|"gt"|"ge", "value": V}
  //   {"column": "c", "op": "in", "values": [V, ...]}
  //   {"column": "c", "op": "is_null"} / {"column": "c", "op": "is_not_null"}
  // and V is {"type": "int"|"float"|"string"|"bool"|"timestamp_us"|"date", "v": ...}
  // (timestamp_us: microseconds since the epoch, UTC; date: days since epoch).
  // The request also has "settings": {"<sql name without timelake.>": "value"}
  // with the session's `SET timelake.*` values.
  // Answers a record batch, moved into the sink with tl_sink_set_batch, of
  // one row per file to read (the JSON text is ignored):
  //   path   utf8, not null   the key relative to the store root
  //   size   int64, not null  the file's length in bytes
  //   seq    int64, not null  the sequence number of the commit that added it
  //   sorted bool, not null   the file is sorted by (keys, order) already
  //   group  int32, nullable  its merge group; null: read as it is
  //   rows   int64, nullable  its row count (the manifest's); when known, a
  //                           file read as it is may be split into row ranges
  //                           read in parallel
  // and, optionally, the schema metadata "page.rows": the rows of the table's
  // data pages, which such ranges start at multiples of; and
  // "filter.pushdown": the resolved `filter-pushdown` setting ("true": the
  // scan evaluates the pushed filters row by row; "false": it does not;
  // "auto" or absent: where that pays, see provider.rs).
  // Files of one group may hold rows with equal keys and are merged by
  // (keys, order, seq), keeping the last row of equal keys. When a group
  // exists, the batch's schema metadata names the merge: "dedup.key.0",
  // "dedup.key.1", ... the key columns (series..., time), "dedup.order.0", ...
  // the tie-breaking columns (e.g. _ingest_ts), and "dedup.keep": "last", or
  // "all" to merge in that order without dropping a row (compaction of a
  // table without dedup).
  // The metadata also names the table's sort order, "sort.0", "sort.1", ...
  // (ascending, nulls first; absent for an unsorted table): a file whose
  // "sorted" is true holds its rows in that order, so the engine may merge
  // such files where an operator needs that order instead of sorting them.
  // A request {"last_values": {"partition_by": [...], "order_by": "time"}}
  // asks for the current snapshot's last-value index instead, when it holds
  // the newest row per those columns: its rows, in the table's schema, moved
  // into the sink with tl_sink_set_batch; no batch when it does not answer.
  // The engine keeps no copy of the rows between queries: C++ owns the one
  // cache of decoded indexes.
  // A request {"rollups": {}, "settings": {…}} asks what the table's
  // rollups can answer now, as JSON text written to the sink (no batch):
  //   {"routing": bool  (timelake.rollup-routing of the session or table),
  //    "rollups": [{"schema": "iot", "name": "readings_1h", "usable": bool,
  //                 "groups": [...], "bucket_column": "bucket",
  //                 "bucket": {"kind": "fixed", "width_us": N, "origin_us": N}
  //                           or {"kind": "months", "months": N, "origin_us": N},
  //                 "aggregates": [{"name": "sum_temp", "function": "sum",
  //                                 "column": "temp" (absent for count(*))}, ...],
  //                 "dirty": [[lo, hi], ...]}, ...]}
  // where "dirty" lists the time ranges [lo, hi) of the raw table (in
  // microseconds, null for unbounded) whose rows the rollup does not reflect
  // (committed or removed since its refresh); they need not be aligned to
  // buckets. "usable" is false for a rollup that cannot answer at all (not
  // refreshed yet, refreshed from a snapshot the table no longer descends
  // from, its definition unreadable). Functions: "count" (no column:
  // count(*)), "sum", "min", "max", "avg", "first_value", "last_value",
  // "m4", "time_weighted_mean", "time_weighted_mean:linear".
  // The schema table_schema answers carries metadata "timelake.time-column"
  // (the time column, absent for plain tables) and "timelake.rollups" (the
  // table's rollups, comma-separated) for the engine; it strips them.
  int (*plan_scan)(void* ctx, const char* schema, const char* table,
                   const char* request_json, TlSink* out);
  // Called once when the session has been freed and no result stream of it
  // is still open (an open stream keeps the callbacks alive until it is
  // released); ctx is not used afterwards. tl_session_new takes ownership of
  // ctx: when it fails, release is called before it returns. May be NULL.
  void (*release)(void* ctx);
  // Optional (NULL: no `timelake.*` session settings). Writes a JSON array
  // [{"name": "read_dedup", "description": "...", "default": "true"}, ...] of
  // the settings `SET timelake.<name> = value` may change; `SHOW` gives the
  // default ("" or absent: none) of a setting the session did not set.
  int (*describe_settings)(void* ctx, TlSink* out);
  // Optional (NULL: every `SET timelake.*` is refused as unknown). Checks
  // `SET timelake.<name> = value` (`name` lower case, '-' as '_'): returns 0
  // when valid, otherwise an error whose message it writes to `out`. It is
  // the only check: Rust keeps no list of names or ranges (unknown names
  // are the callback's to refuse too); such errors are TL_INVALID.
  int (*check_setting)(void* ctx, const char* name, const char* value, TlSink* out);
  // Optional (NULL: the SQL function as_of fails with TL_UNSUPPORTED). Time
  // travel: resolves `schema`.`table` as of `at_json`, {"snapshot_id": N}
  // (that snapshot) or {"timestamp_ms": T} (the snapshot that was current at
  // T, milliseconds since the epoch). Sets the table's schema at that
  // snapshot (tl_sink_set_schema) and writes {"snapshot_id": N}; returns 1
  // when the table does not exist, an error (TL_NOT_FOUND) when no kept
  // snapshot answers. Scans of the table read as of it then send plan_scan
  // requests with "snapshot_id": N, which C++ answers as for the current
  // snapshot (the files, or the last-value index, of snapshot N).
  int (*table_at)(void* ctx, const char* schema, const char* table, const char* at_json,
                  TlSink* out);
  // Optional (NULL: the SQL function snapshots fails with TL_UNSUPPORTED).
  // The snapshots `schema`.`table` keeps, one row each, moved into the sink
  // with tl_sink_set_batch (any schema: the rows are the function's answer
  // as they are); returns 1 when the table does not exist.
  int (*list_snapshots)(void* ctx, const char* schema, const char* table, TlSink* out);
} TlCatalogCallbacks;

typedef struct TlSession TlSession;

// A DataFusion session whose default catalog is "timelake" (backed by the
// callbacks) with default schema "default". Scans read through `store` (the
// same client, registered with DataFusion's object store registry).
// `target_partitions` 0 means the number of cores.
TlCode tl_session_new(TlStore* store, TlCatalogCallbacks callbacks,
                      uint32_t target_partitions, TlSession** out, char** err);
void tl_session_free(TlSession* session);

// Sets a DataFusion configuration option ("datafusion.execution.batch_size"),
// exactly like the statement SET <key> = '<value>'. Unknown options are
// TL_INVALID.
TlCode tl_session_set_option(TlSession* session, const char* key, const char* value,
                             char** err);

// Makes the session's scans read storage around the store's block cache
// (the `timelake_cache_*` options of tl_store_open): for reads of files
// that are read once and then replaced, such as a compaction's inputs,
// which would only push useful blocks out. Call before the first statement.
void tl_session_bypass_cache(TlSession* session);

// The tables of the Timelake catalog that one SQL statement reads, found by
// parsing it only (no session, no callback): "namespace.table" per line in
// `out_names` (free with tl_string_free), empty when it names none or does
// not parse (planning it reports why). Unquoted names are lower case, a bare
// name is in the namespace "default"; CTE names and information_schema are
// left out. A session loads these while it starts.
TlCode tl_sql_tables(const char* sql, char** out_names, char** err);

// Plans and runs one SQL statement; the result streams through `out`
// (get_next runs the plan on Rust's runtime; it must not be called from a
// callback). Errors, here and from the stream's get_next
// (tl_stream_error_code):
// - TL_INVALID: parse and plan errors, with DataFusion's message
//   (TL_UNSUPPORTED for what DataFusion does not implement, e.g. several
//   statements in one string);
// - a failing catalog callback: the code it set (tl_sink_set_code), else
//   TL_EXECUTION;
// - reading a data file: TL_NOT_FOUND (the object is gone), TL_STORAGE or
//   TL_STORAGE_RETRYABLE (classified as for tl_store_get), TL_CORRUPT (a
//   Parquet file that does not decode);
// - TL_CANCELLED: tl_session_interrupt was called while it planned or a
//   get_next ran (the stream has ended then);
// - TL_EXECUTION: any other failure of a running plan; TL_INTERNAL: a bug.
// An interrupt made before the call is forgotten when it starts.
TlCode tl_session_sql(TlSession* session, const char* sql, struct ArrowArrayStream* out,
                      char** err);

// Makes the statement `session` is running (every one, when several threads
// share the session) fail with TL_CANCELLED at once: its planning in
// tl_session_sql or tl_session_explain_analyze, and every get_next of its
// result streams until the next statement starts. The waiting thread watches
// the flag every 10 ms, so a plan busy computing does not delay the answer;
// the plan itself is dropped at its next yield point, so the runtime's
// threads may stay busy a little longer (seconds for a cross join). Only an
// atomic store: safe from any thread and from a signal handler, never blocks,
// never fails. NULL is ignored. `session` must stay alive during the call.
void tl_session_interrupt(const TlSession* session);

// The TlCode of the last failed call on a stream made by tl_session_sql
// (get_next returns an errno as the C stream interface wants; this tells the
// kind, see tl_session_sql): TL_OK when no call failed. TL_INVALID for NULL,
// a released stream or a stream that tl_session_sql did not make. Not
// concurrently with another call on the same stream.
TlCode tl_stream_error_code(struct ArrowArrayStream* stream);

// Reads the SELECT of a CREATE MATERIALIZED ROLLUP statement (planned, not
// run) and writes its shape as JSON to `out_json` (free with tl_string_free):
//   {"source": {"schema": "iot", "table": "readings"}, "time_column": "time",
//    "bucket": {"name": "bucket", "kind": "fixed", "width_us": N, "origin_us": N}
//              or {"name": …, "kind": "months", "months": N, "origin_us": N},
//    "groups": ["device_id", …],
//    "aggregates": [{"name": "avg_temp", "function": "avg", "column": "temp"}, …],
//    "columns": [every output column name, in SELECT order]}
// Aggregate functions are named as in the `rollups` answer of plan_scan.
// TL_INVALID names the part that a rollup cannot store (a WHERE, a join, an
// aggregate other than those, an explicit cast, no time bucket, …); a table
// that does not exist is TL_INVALID with DataFusion's message.
TlCode tl_session_describe_rollup(TlSession* session, const char* select, char** out_json,
                                  char** err);

// Like tl_session_sql with EXPLAIN ANALYZE: writes the executed plan with its
// metrics (files, row groups and pages pruned or read) as text. Interrupted
// as tl_session_sql is (TL_CANCELLED).
TlCode tl_session_explain_analyze(TlSession* session, const char* sql, char** out_text,
                                  char** err);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // TIMELAKE_PLATFORM_H_
