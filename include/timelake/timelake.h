// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Timelake: the open time-series lakehouse. Tables are Apache Iceberg tables
// of Parquet files in a warehouse on object storage or local disk, laid out
// for time series (partitioned by time, sorted by series and time) and queried
// with SQL on Apache DataFusion.
//
//   TIMELAKE_ASSIGN_OR_RAISE(Lake lake, Lake::Open("/data/warehouse"));
//   TableOptions opts;
//   opts.time_column = "time";
//   opts.series_key = {"device_id"};
//   TIMELAKE_ASSIGN_OR_RAISE(Table table,
//                            lake.CreateTable("iot.readings", *batch->schema(), opts));
//   TIMELAKE_ASSIGN_OR_RAISE(auto appended, table.Append({batch}));
//   Session session(lake);
//   TIMELAKE_ASSIGN_OR_RAISE(auto rows, session.Sql("SELECT * FROM iot.readings"));
//   timelake::Flush();
//
// Errors are values (arrow::Status / arrow::Result with an ErrorKind, see
// status.h); nothing here throws. Unless a comment says otherwise, every
// class is cheap to copy and safe to use from several threads at once.

#ifndef TIMELAKE_TIMELAKE_H_
#define TIMELAKE_TIMELAKE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/table.h>
#include <arrow/type_fwd.h>

#include "timelake/status.h"

namespace timelake {

namespace internal {
struct LakeState;
struct TableState;
struct SessionState;
struct LakeAccess;
}  // namespace internal

// Namespace of table names given without one.
inline constexpr std::string_view kDefaultNamespace = "default";

// The version of Timelake's on-storage format that this library writes
// (`timelake.format-version`).
inline constexpr std::string_view kFormatVersion = "0.3.0";

// A validated table name: "namespace.table", or "table" in kDefaultNamespace.
// Both parts match [A-Za-z0-9_-]+, so they are safe as path segments.
class TableName {
 public:
  // Parses "ns.table" or "table". Errors: kInvalid naming the offending text
  // (an empty part or one over 255 characters, a character outside
  // [A-Za-z0-9_-], more than one dot).
  static arrow::Result<TableName> Parse(std::string_view text);

  const std::string& ns() const { return ns_; }
  const std::string& name() const { return name_; }
  // "ns.table".
  std::string ToString() const { return ns_ + "." + name_; }

  friend bool operator==(const TableName&, const TableName&) = default;
  friend auto operator<=>(const TableName&, const TableName&) = default;

 private:
  TableName(std::string ns, std::string name)
      : ns_(std::move(ns)), name_(std::move(name)) {}
  std::string ns_;
  std::string name_;
};

// Checks one part of a table name or a namespace; `what` names it in the
// message ("namespace"). Errors: kInvalid (empty, over 255 characters, or a
// character outside [A-Za-z0-9_-]).
arrow::Status ValidateNamePart(std::string_view part, std::string_view what);

// How much time one partition covers.
enum class Chunk { kHour, kDay, kMonth };
// "hour", "day", "month".
std::string_view ChunkName(Chunk chunk);
// The inverse of ChunkName (lower case only). Errors: kInvalid naming the text.
arrow::Result<Chunk> ParseChunk(std::string_view text);

// Options for Lake::CreateTable. Only time_column is needed for a time-series
// table; leave it unset for a plain (dimension) table such as device metadata.
struct TableOptions {
  // The timestamp column (made NOT NULL, stored as microseconds UTC).
  // Default: none (a plain table, unpartitioned).
  std::optional<std::string> time_column;
  // Columns that identify one series, e.g. {"device_id"}. Default: empty.
  std::vector<std::string> series_key;
  // Time partition size; ignored without a time column. Default: kDay.
  Chunk chunk = Chunk::kDay;
  // One row per (series, time), latest write wins; ignored without a time
  // column. Default: unset, which means a `timelake.dedup` entry of
  // `properties` if there is one, otherwise on exactly when a series key is
  // set.
  std::optional<bool> dedup;
  // Further table properties: `timelake.*` settings of the table level
  // (validated; unknown, managed and create-only keys such as
  // timelake.time-column are kInvalid) and plain Iceberg properties (passed
  // through). Default: none.
  std::map<std::string, std::string> properties;
};

// Which rollups a refresh brings up to date (SPEC §8).
enum class RollupRefresh {
  kNone,  // none
  kDue,   // those whose timelake.rollup-refresh-interval has passed since
          // their last refresh (the rollup table's setting, else the raw
          // table's; 5 minutes by default)
  kAll,   // every rollup of the table
};

// What one rollup refresh did.
struct RollupRefreshReport {
  std::string rollup;  // "ns.name"
  // Rollup rows written (buckets recomputed x groups present).
  int64_t rows = 0;
  // Time ranges of the raw table recomputed (0: it was up to date).
  int64_t ranges = 0;
  // Recomputed from scratch: the snapshot it reflected is gone from the raw
  // table's history, or it had never been refreshed.
  bool rebuilt = false;
  // The raw snapshot it reflects afterwards (none: the raw table is empty).
  std::optional<int64_t> source_snapshot_id;
  // Why it failed ("" when it did not); the rollup then reflects what it
  // did before, and queries read the rest from raw data.
  std::string error;
  // Inline maintenance of the rollup table after the refresh, as after an
  // append (unless the rollup's timelake.auto-maintain is false): files it
  // rewrote, and why it failed ("" when it did not); the refresh stands
  // either way.
  int64_t files_rewritten = 0;
  std::string maintenance_error;
};

// Options for Table::Append.
struct AppendOptions {
  // Makes the append idempotent: an id already recorded in the table's
  // snapshots commits nothing and reports 0 rows. Default: none.
  std::optional<std::string> batch_id;
  // Attempts of the optimistic commit before giving up with kConflict (also
  // those of inline maintenance's commits); values below 1 count as 1.
  // Default: 20.
  int max_commit_attempts = 20;
  // Runs inline maintenance after the commit (retention, size-tiered
  // compaction of the partitions touched, one cold partition, snapshot
  // expiry once at least 10 snapshots are due). Default: unset, which means
  // the table's timelake.auto-maintain (true unless set) for a time-series
  // table, and off for a plain table.
  std::optional<bool> auto_maintain;
  // Runs that inline maintenance on a background thread, so that the call
  // returns once the append is committed and the maintenance overlaps
  // whatever the caller does next (reading its next batch, the next
  // append). A later Append of the table through this Lake (or a copy of
  // it) finds it done, or still running: then it hands the run its own
  // partitions (see maintenance_backlog) and returns, or waits for it. The
  // append that takes the run reports it (with all it did for appends that
  // handed it work) in its AppendResult::maintenance and maintenance_error,
  // and returns the newer of the two versions; Maintain, Delete, Rollback
  // and SetProperties wait for it first; Table::WaitForMaintenance and
  // Flush() wait for it too. With false, the maintenance runs before the
  // call returns and is reported by it (also then with any background run
  // reported first). Default: true.
  bool maintain_in_background = true;
  // How many appends may hand their maintenance to a background run that is
  // still running (a large merge), and return without waiting for it; the
  // next one waits. Their files wait for maintenance meanwhile: a
  // partition holds up to this many more small files while a merge runs.
  // Below 1: every append waits for the run the one before it left, and
  // reports it. Default: 32.
  int64_t maintenance_backlog = 32;
  // Rows the streaming Append(reader) holds before it writes them out as
  // data files: its memory is about this many aligned rows, however long
  // the stream. The other Append ignores it. Values below 1 count as 1.
  // Default: 1,000,000.
  int64_t buffer_rows = 1000000;
  // The table's rollups refreshed after the commit (and inline
  // maintenance); a failure is reported in AppendResult::rollups and never
  // undoes the append. Default: kDue.
  RollupRefresh refresh_rollups = RollupRefresh::kDue;
};

// Options for Table::Maintain. Every step is on by default; the rules come
// from the table's `timelake.*` settings (retention, target-file-size,
// snapshot-retention, min-snapshots, max-snapshots, keep-snapshots-until).
struct MaintainOptions {
  // Drop the partitions that end before now - timelake.retention (nothing
  // when the table sets no retention). Default: true.
  bool retention = true;
  // Rewrite every partition that has more files than its size needs, small
  // or unsorted files, or (dedup tables) files that may share keys, into
  // sorted, duplicate-free files of about timelake.target-file-size.
  // Default: true.
  bool compact = true;
  // Expire snapshots by the table's rules and delete the files only they
  // used. Default: true.
  bool expire = true;
  // Delete files under the table's folders that no snapshot references and
  // that are older than orphan_age (debris of crashed writers), and
  // metadata versions older than the newest few. Default: true.
  bool clean_orphans = true;
  // Orphans younger than this are left alone: they may belong to a commit
  // in flight. Zero is safe only with no other writer. Default: 24 hours.
  std::chrono::milliseconds orphan_age = std::chrono::hours(24);
  // Attempts of each optimistic commit before giving up with kConflict;
  // values below 1 count as 1. Default: 20.
  int max_commit_attempts = 20;
  // Called with one line per step and partition done, e.g.
  // "compacted time_day=2026-04-01: 12 files -> 1". Default: none.
  std::function<void(const std::string&)> progress;
  // The table's rollups refreshed at the end. Default: kAll.
  RollupRefresh refresh_rollups = RollupRefresh::kAll;
};

// What maintenance did (Table::Maintain, or inline after an append).
struct MaintainReport {
  int64_t partitions_dropped = 0;  // retention
  int64_t files_dropped = 0;
  int64_t rows_dropped = 0;
  int64_t partitions_compacted = 0;  // compaction
  int64_t files_rewritten = 0;       // inputs replaced
  int64_t files_written = 0;
  int64_t rows_rewritten = 0;      // rows read by compaction
  int64_t duplicates_removed = 0;  // rows dropped by dedup while rewriting
  int64_t bytes_rewritten = 0;
  int64_t bytes_written = 0;
  int64_t snapshots_expired = 0;  // expiry
  int64_t files_deleted =
      0;  // data, manifest and index files only expired snapshots used
  int64_t orphans_deleted = 0;  // the orphan sweep
  int64_t commits = 0;          // commits made
  // Inline only: rewrites given up because another writer replaced their
  // input files first (nothing of them is left behind).
  int64_t conflicts = 0;
  int64_t version = 0;  // table version afterwards
  std::chrono::microseconds duration{0};
  // Table::Maintain: the refreshes of the table's rollups.
  std::vector<RollupRefreshReport> rollups;

  // Whether anything was changed.
  bool changed() const { return commits > 0 || orphans_deleted > 0; }
};

// Options for Table::Delete.
struct DeleteOptions {
  // After the delete's commit, expire every older snapshot and delete the
  // files only they used, so that the deleted rows leave storage now rather
  // than after the table's timelake.snapshot-retention. Snapshots that
  // timelake.keep-snapshots-until protects stay (the report says how many
  // expired). Readers of the older snapshots (time travel) lose them; other
  // readers and writers are not disturbed. Default: false.
  bool purge = false;
  // Attempts of the commit before giving up with kConflict; values below 1
  // count as 1. Default: 20.
  int max_commit_attempts = 20;
  // Called with one line per partition rewritten. Default: none.
  std::function<void(const std::string&)> progress;
};

// What Table::Delete did.
struct DeleteReport {
  int64_t rows_deleted = 0;     // rows queries saw that they no longer see
  int64_t partitions = 0;       // partitions that held them
  int64_t files_removed = 0;    // data files no longer live (dropped or rewritten)
  int64_t files_rewritten = 0;  // of those, copied without the deleted rows
  int64_t files_written = 0;    // the copies
  int64_t rows_rewritten = 0;   // rows copied into them
  int64_t bytes_written = 0;
  int64_t snapshots_expired = 0;  // purge
  int64_t files_deleted = 0;      // purge: files only expired snapshots used
  int64_t version = 0;            // table version afterwards
  // The delete's snapshot; nullopt when no row matched (nothing committed).
  std::optional<int64_t> snapshot_id;
  std::chrono::microseconds duration{0};
};

// One change of a table's schema (Table::EvolveSchema). Columns are
// Iceberg fields with ids: a renamed column keeps its id (data files
// written before read under the new name), an added one takes a new id
// (files written before read it as null), a widened one keeps its id and
// older files' values are cast. Only top-level columns change.
struct SchemaChange {
  enum class Kind {
    kAddColumn,     // `column` of `type`, nullable, after the others
    kRenameColumn,  // `column` becomes `new_name`
    kWidenColumn,   // `column` becomes `type`: int32 -> int64, float32 ->
                    // float64, decimal128(P, S) -> decimal128(P2 > P, S)
  };
  Kind kind = Kind::kAddColumn;
  std::string column;
  std::string new_name;                   // kRenameColumn
  std::shared_ptr<arrow::DataType> type;  // kAddColumn, kWidenColumn

  static SchemaChange AddColumn(std::string column,
                                std::shared_ptr<arrow::DataType> type);
  static SchemaChange RenameColumn(std::string column, std::string new_name);
  static SchemaChange WidenColumn(std::string column,
                                  std::shared_ptr<arrow::DataType> type);
};

// One change Table::Upgrade makes, in the order it makes them. Each is its
// own commit, except kWriteHead.
struct UpgradeStep {
  enum class Kind {
    // Sets timelake.keep-snapshots-until to now + keep_snapshots, so that no
    // snapshot from before the upgrade expires meanwhile (rollback stays
    // possible).
    kProtectSnapshots,
    // Sets timelake.format-version to kFormatVersion.
    kRecordFormatVersion,
    // Adds what a time-series table of this format has: the contract
    // properties (time column, series key, chunk, dedup, insertion-time
    // column), the `_ingest_ts` column, the sort order by (series key…,
    // time).
    kAddContract,
    // Writes the current snapshot's last-value index, which it lacks (a
    // snapshot another engine committed).
    kBuildLastValueIndex,
    // Rewrites the files of one partition into sorted, duplicate-free files
    // of the target size (as Table::Maintain compacts).
    kRewriteFiles,
    // Writes metadata/timelake-head for the version reached.
    kWriteHead,
  };
  Kind kind = Kind::kProtectSnapshots;
  // What it changes, e.g. "rewrite time_day=2026-04-01: 7 files, unsorted".
  std::string description;
  // Whether it was made (false for a dry run).
  bool done = false;
  // The table version it committed (0 when it committed nothing).
  int64_t version = 0;
};
// "protect-snapshots", "record-format-version", "add-contract",
// "build-last-value-index", "rewrite-files", "write-head".
std::string_view UpgradeStepName(UpgradeStep::Kind kind);

// Options for Table::Upgrade.
struct UpgradeOptions {
  // List the steps without changing anything on storage. Default: false.
  bool dry_run = false;
  // Rewrite unsorted and small files (kRewriteFiles). Default: true.
  bool compact = true;
  // How long snapshots from before the upgrade are protected from expiry
  // (kProtectSnapshots). Default: 7 days.
  std::chrono::milliseconds keep_snapshots = std::chrono::hours(24 * 7);
  // Adopting a plain Iceberg table (one another engine wrote, without a
  // timelake.time-column): its timestamp column, which makes it a
  // time-series table. Ignored when it names the table's time column
  // already; another one is kInvalid. Default: none (the table stays a
  // plain table if it is one).
  std::optional<std::string> time_column;
  // With time_column: the columns that identify a series. Default: empty.
  std::vector<std::string> series_key;
  // With time_column: one row per (series, time). Default: unset, which
  // means on exactly when a series key is given (as for CreateTable).
  std::optional<bool> dedup;
  // Attempts of each commit before giving up with kConflict; values below 1
  // count as 1. Default: 20.
  int max_commit_attempts = 20;
  // Called with one line per step made. Default: none.
  std::function<void(const std::string&)> progress;
};

// What Table::Upgrade did (or, with dry_run, would do).
struct UpgradeReport {
  bool dry_run = false;
  // The table's timelake.format-version before ("" when untagged, which
  // counts as 0.1.0) and after.
  std::string from_format;
  std::string to_format;
  // The steps, in order; empty when the table is current already.
  std::vector<UpgradeStep> steps;
  int64_t files_rewritten = 0;  // kRewriteFiles: inputs replaced
  int64_t files_written = 0;
  int64_t rows_rewritten = 0;
  int64_t version = 0;  // table version afterwards
  std::chrono::microseconds duration{0};

  // Whether anything was (or, with dry_run, would be) changed.
  bool changed() const { return !steps.empty(); }
};

// How a commit went.
struct CommitInfo {
  // Attempts of put-if-absent of the next metadata version (1 = no race).
  int attempts = 0;
  // Times another writer won and this change was rebased onto its commit.
  int conflicts_rebased = 0;
  // Writing data files and manifests.
  std::chrono::microseconds write_duration{0};
  // From the first commit attempt to success.
  std::chrono::microseconds commit_duration{0};
};

// What Table::Append did.
struct AppendResult {
  int64_t rows = 0;                    // rows committed (after dedup within the batch)
  int64_t input_rows = 0;              // rows given
  int64_t files = 0;                   // data files written
  int64_t bytes = 0;                   // bytes of data files written
  int64_t partitions = 0;              // time partitions touched
  std::optional<int64_t> snapshot_id;  // none when nothing was committed
  int64_t sequence_number = 0;
  int64_t version = 0;           // table version (metadata file number) after the append
  bool duplicate_batch = false;  // batch_id seen before: nothing committed
  CommitInfo commit;
  // Inline maintenance this call saw finish (all zero when none did): the
  // run the previous append of the table left in the background
  // (AppendOptions::maintain_in_background), and this append's own when it
  // ran before returning, summed.
  MaintainReport maintenance;
  // Why that maintenance failed ("" when it did not); the appends stand.
  std::string maintenance_error;
  // This append's maintenance runs in the background: a later Append,
  // Table::WaitForMaintenance or Flush() sees it end.
  bool maintenance_pending = false;
  // The refreshes of the table's rollups that were due (AppendOptions::
  // refresh_rollups); a failed one says why in its `error`.
  std::vector<RollupRefreshReport> rollups;
};

// Summary of a table version, for `timelake info`.
struct TableInfo {
  std::string name;
  std::string location;
  int64_t version = 0;
  std::optional<int64_t> snapshot_id;
  std::optional<std::string> time_column;
  std::vector<std::string> series_key;
  std::string chunk;
  bool dedup = false;
  int64_t rows = 0;
  int64_t files = 0;
  int64_t bytes = 0;
  int64_t snapshots = 0;
  std::map<std::string, std::string> properties;
  // A rollup table: the table it rolls up ("ns.name"), empty otherwise.
  std::string rollup_of;
  // A raw table: its rollups and how fresh each is.
  struct Rollup {
    std::string name;    // "ns.name"
    std::string bucket;  // "1h", "1mo", …
    // The raw snapshot its rows reflect, and when it was last refreshed
    // (milliseconds since the epoch); none: never refreshed or unreadable.
    std::optional<int64_t> source_snapshot_id;
    std::optional<int64_t> refreshed_ms;
    // Raw commits since that snapshot (0: up to date).
    int64_t behind = 0;
    // Why it cannot answer queries ("" when it can).
    std::string problem;
  };
  std::vector<Rollup> rollups;
};

// One snapshot a table version keeps (Table::Snapshots).
struct SnapshotInfo {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_id;
  int64_t sequence_number = 0;
  int64_t timestamp_ms = 0;
  std::string operation;  // "append", "replace", "overwrite", "delete", …
  int64_t rows = 0;       // total-records after it
  int64_t files = 0;      // total-data-files after it
  std::optional<std::string> batch_id;
  bool current = false;
  // In the current snapshot's history (false for those a rollback left).
  bool in_history = false;
};

class Table;

// A warehouse: a root location holding namespaces (folders) of tables.
// Copies share the storage client and caches.
class Lake {
 public:
  // Opens a warehouse at `url`: a local path, "file:///abs/dir", "memory://",
  // "s3://bucket/prefix" (options such as "aws_endpoint", "aws_region",
  // "aws_allow_http"; credentials also from the environment), "gs://…",
  // "az://…". Errors: kConfig (bad URL, scheme or options), kStorage
  // (retryable) for a transient failure.
  static arrow::Result<Lake> Open(std::string_view url,
                                  const std::map<std::string, std::string>& options = {});

  // The warehouse root URL, e.g. "file:///data/warehouse".
  const std::string& url() const;

  // Namespaces holding at least one table, sorted. Errors: kStorage.
  arrow::Result<std::vector<std::string>> ListNamespaces() const;
  // Tables of `ns` (all namespaces when empty), sorted; a namespace without
  // tables gives an empty list. Errors: kInvalid (not a valid namespace),
  // kStorage.
  arrow::Result<std::vector<TableName>> ListTables(std::string_view ns = {}) const;

  // Creates a table from an Arrow schema (SPEC §4.4 normalisation applies).
  // Errors: kInvalid (name, schema, options; nothing is written),
  // kAlreadyExists (also when another writer creates it at the same time),
  // kStorage.
  arrow::Result<Table> CreateTable(std::string_view name, const arrow::Schema& schema,
                                   const TableOptions& options = {}) const;
  // Opens a table at its newest committed version. Errors: kInvalid (the
  // name, or a malformed `timelake.*` property stored in the table),
  // kNotFound, kCorrupt (metadata that does not parse), kUnsupported (a newer
  // major Timelake format, an Iceberg format version other than 1 or 2,
  // inline v1 manifests), kStorage.
  arrow::Result<Table> LoadTable(std::string_view name) const;
  // Deletes a table and all its files, metadata first (a failure part-way
  // leaves no table, only unreferenced files). A rollup table leaves its raw
  // table's list of rollups first; a raw table's rollups are dropped with it
  // (their names go to `dropped_rollups` when given). Errors: kInvalid (the
  // name), kNotFound, kStorage.
  arrow::Status DropTable(std::string_view name,
                          std::vector<std::string>* dropped_rollups = nullptr) const;

 private:
  friend class Table;
  friend class Session;
  friend struct internal::LakeAccess;
  explicit Lake(std::shared_ptr<internal::LakeState> state) : state_(std::move(state)) {}
  std::shared_ptr<internal::LakeState> state_;
};

// A table at one committed version. Committing calls return a new Table;
// Refresh() sees commits made since.
class Table {
 public:
  const TableName& name() const;
  // Table location URL: the one its metadata records, or where it is found
  // when it was copied or moved here from that location.
  std::string location() const;
  // The metadata version number N of v<N>.metadata.json.
  int64_t version() const;
  std::optional<int64_t> current_snapshot_id() const;
  // The table schema as Arrow (with PARQUET:field_id metadata).
  std::shared_ptr<arrow::Schema> schema() const;
  // Table properties, including the timelake.* contract.
  const std::map<std::string, std::string>& properties() const;
  std::optional<std::string> time_column() const;
  std::vector<std::string> series_key() const;
  TableInfo Info() const;
  // The snapshots this version keeps, oldest first (no storage request).
  std::vector<SnapshotInfo> Snapshots() const;

  // The newest committed version. Errors: kNotFound (dropped), and those of
  // Lake::LoadTable (kInvalid, kCorrupt, kUnsupported, kStorage).
  arrow::Result<Table> Refresh() const;

  // Sets (a value) or removes (nullopt) table properties in one metadata-only
  // commit: a new version, no new snapshot. Concurrent commits are rebased
  // over. `timelake.*` keys are validated (any of their four spellings);
  // those fixed at create (time-column, series-key, chunk,
  // ingest-time-column) and managed ones (format-version) cannot change.
  // Errors: kInvalid (unknown, fixed or managed keys, bad values; nothing is
  // written), kConflict (other writers won 20 times), kNotFound (dropped
  // meanwhile), kCorrupt, kStorage (the commit may or may not have landed).
  arrow::Result<Table> SetProperties(
      const std::map<std::string, std::optional<std::string>>& changes) const;

  // Appends batches as one commit (SPEC §5): aligned to the table schema,
  // `_ingest_ts` stamped where null, split by partition, sorted by
  // (series…, time, insertion), deduplicated within the batch when dedup is on,
  // one Parquet file per partition, then an optimistic commit that rebases over
  // concurrent appends. A failure of inline maintenance does not fail the
  // append (AppendResult::maintenance_error). Errors: kInvalid (extra
  // columns, wrong types, null times, an empty batch_id; nothing is
  // written), kConflict (other writers won max_commit_attempts times, or the
  // schema or partitioning changed meanwhile; nothing is left behind),
  // kUnsupported (a partition spec other than the hour, day or month of the
  // time column), kNotFound (dropped meanwhile), kCorrupt (unreadable
  // manifest list), kStorage (on a failed commit the commit may or may not
  // have landed, and the files it references stay).
  arrow::Result<std::pair<Table, AppendResult>> Append(
      const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
      const AppendOptions& options = {}) const;

  // Appends a stream of batches as one commit, with bounded memory: the
  // batches are aligned as they arrive (each on its own: they need not have
  // `reader`'s schema) and written to data files every
  // `options.buffer_rows` rows, and everything is committed as one snapshot
  // once the reader ends (returns a null batch). Until then nothing is
  // visible; on any error before the commit the files written so far are
  // deleted and nothing is committed (the commit itself fails as the other
  // Append's does). Counts, statistics and the last-value index are those of
  // one Append of all the rows, except that dedup happens within each
  // buffer of rows: rows of equal keys in different buffers go to different
  // files (AppendResult::rows counts both), and dedup on read keeps the
  // later one, since each buffer's rows are stamped with a later
  // `_ingest_ts` than the buffer's before. With a batch id already
  // committed, the reader is not read at all (AppendResult::input_rows is
  // then 0). `reader` is the caller's, used on the calling thread until
  // the call returns, and not closed. Errors: the reader's own, as it
  // returned them; otherwise those of the other Append (kInvalid naming
  // the batch by its position in the stream, from 0, or a null reader).
  arrow::Result<std::pair<Table, AppendResult>> Append(
      arrow::RecordBatchReader* reader, const AppendOptions& options = {}) const;

  // Waits for the inline maintenance that appends to this table (through
  // this Lake or a copy) left running in the background, and returns the
  // newest version it or this handle knows, with what those runs did that
  // no append reported yet (all zero when none was pending). Errors: the
  // maintenance's own failure, as kind and message (kConflict, kStorage,
  // …); the appends stand either way.
  arrow::Result<std::pair<Table, MaintainReport>> WaitForMaintenance() const;

  // Maintenance (SPEC §7), in order: retention, compaction, snapshot expiry,
  // deletion of files only expired snapshots used, orphan sweep. Each
  // rewrite streams a k-way merge of a partition's files (bounded memory)
  // and commits on its own: over concurrent appends when all its input
  // files are still live, otherwise it reports kConflict and leaves nothing
  // behind. Returns the table after the last commit. Errors: kConflict (a
  // rewrite's inputs changed, or other writers won max_commit_attempts
  // times; the steps before it stay committed), kNotFound (dropped),
  // kInvalid (a malformed `timelake.*` setting of the table), kUnsupported
  // (manifests with delete files or an older partition spec, a partitioning
  // Timelake does not write), kCorrupt, kStorage.
  arrow::Result<std::pair<Table, MaintainReport>> Maintain(
      const MaintainOptions& options = {}) const;

  // Makes `snapshot_id`, a snapshot the table still keeps (Snapshots()),
  // the current one in a metadata-only commit: the table then reads exactly
  // as it did at that snapshot, its last-value index and head follow, and
  // the batch ids of the snapshots it leaves behind no longer count as seen
  // (their rows may be appended again). The snapshots left behind stay
  // until snapshot expiry, so a rollback to one of them undoes the
  // rollback. Errors: kNotFound (no such snapshot, or the table dropped),
  // kConflict (other writers won max_commit_attempts times), kUnsupported
  // (a newer table format), kStorage.
  arrow::Result<Table> Rollback(int64_t snapshot_id) const;

  // Changes the schema in one metadata-only commit (a new schema id made
  // current, no new snapshot), `changes` applied in order, over whatever
  // version is newest. Appends then carry the new schema (AlignBatch by
  // name); queries, Timelake 0.7 and other Iceberg engines read the older
  // data files by field id. The time column, the series key columns, the
  // insertion-time column and the sources of the partition spec and sort
  // order keep their name and type. Errors: kInvalid naming the change
  // (an unknown column, a name taken already, a type change that is not a
  // widening, a fixed column; nothing is written), kConflict, kNotFound
  // (dropped meanwhile), kUnsupported (a newer table format), kCorrupt,
  // kStorage (the commit may or may not have landed). `properties` are
  // SetProperties' edits made in the same commit (the CLI's `alter` with
  // both): a bad one is kInvalid and the schema does not change either.
  // Default: none.
  arrow::Result<Table> EvolveSchema(
      const std::vector<SchemaChange>& changes,
      const std::map<std::string, std::optional<std::string>>& properties = {}) const;

  // Brings the table to this build's format (kFormatVersion), each step its
  // own commit (UpgradeStep): protect the snapshots, record the format
  // version, add the contract (time-series tables), build a missing
  // last-value index, rewrite unsorted or small files, write the head.
  // Adopts a plain Iceberg table another engine wrote when
  // `options.time_column` names its time column. Each step is decided by
  // what the newest version lacks, so a run that failed or was killed
  // part-way leaves a readable table and the next run finishes the rest; a
  // current table gives an empty report and commits nothing. With
  // `dry_run`, the steps it would make and no change on storage. Errors:
  // kInvalid (a time column or series key that is not in the schema or not
  // a timestamp, a time column with nulls, another time column than the
  // table's; nothing is written), kUnsupported (a partitioning Timelake does
  // not write, a newer table format), kConflict (a step's commit lost too
  // many races; the steps before it stay), kNotFound, kCorrupt, kStorage.
  arrow::Result<std::pair<Table, UpgradeReport>> Upgrade(
      const UpgradeOptions& options = {}) const;

  // Deletes the rows for which the SQL predicate `where` is true (a row for
  // which it is NULL stays; empty: every row), as queries see the table:
  // the data files that hold such rows are rewritten without them (a file
  // whose rows all match is dropped), and one snapshot replaces them, with
  // the last-value index updated. On a table that dedups, the partitions
  // holding matches are rewritten whole, so that no older duplicate of a
  // deleted row reappears. Other engines see the rows gone at once; the old
  // files stay on storage for older snapshots until snapshot expiry
  // (maintenance) or DeleteOptions::purge. Rows appended concurrently stay.
  // Errors: kInvalid (a predicate DataFusion cannot plan, e.g. an unknown
  // column; nothing is written), kConflict (concurrent rewrites of the same
  // files, several times over; nothing is left behind), kNotFound
  // (dropped), kUnsupported (a newer table format, manifests with delete
  // files), kCorrupt, kStorage (the commit may or may not have landed).
  arrow::Result<std::pair<Table, DeleteReport>> Delete(
      std::string_view where, const DeleteOptions& options = {}) const;

 private:
  friend class Lake;
  friend class Session;
  explicit Table(std::shared_ptr<const internal::TableState> state)
      : state_(std::move(state)) {}
  std::shared_ptr<const internal::TableState> state_;
};

// Timelake settings for one session; unset ones follow each table.
struct SessionSettings {
  // DataFusion target partitions (parallelism). Default: 0 = number of cores.
  uint32_t target_partitions = 0;
  // `timelake.*` settings of the session level (see settings.h), by SQL
  // name: {"timelake.read_dedup", "false"}. They win over table properties;
  // `SET timelake.x = …` in SQL changes them too. Default: none.
  std::map<std::string, std::string> values;

  // Sets one value (any spelling of the name; stored under its SQL name)
  // after checking it against the registry. Errors: kInvalid for unknown
  // names, settings not of the session level, bad values.
  arrow::Status Set(std::string_view name, std::string_view value);
};

// CREATE, REFRESH or DROP MATERIALIZED ROLLUP, as Session::Parse reads it
// (docs/sql.md):
//   CREATE MATERIALIZED ROLLUP [IF NOT EXISTS] ns.name AS SELECT …
//     [WITH (refresh_interval = '5m')]
//   REFRESH MATERIALIZED ROLLUP ns.name
//   DROP MATERIALIZED ROLLUP [IF EXISTS] ns.name
struct RollupStatement {
  enum class Kind { kCreate, kRefresh, kDrop };
  Kind kind = Kind::kCreate;
  std::string name;            // the rollup, as written ("ns.name" or "name")
  bool if_not_exists = false;  // CREATE … IF NOT EXISTS
  bool if_exists = false;      // DROP … IF EXISTS
  std::string select;          // CREATE: the text after AS, without WITH (…)
  // CREATE: WITH (key = 'value', …), keys lower-cased, values unquoted.
  std::map<std::string, std::string> options;
};

// One statement of a SQL script, as Session::Parse splits it.
struct Statement {
  enum class Kind {
    kQuery,   // anything DataFusion runs: SELECT, SHOW, EXPLAIN, …
    kSet,     // SET <name> = <value> (a `timelake.*` or DataFusion setting)
    kRollup,  // CREATE / REFRESH / DROP MATERIALIZED ROLLUP
    kDelete,  // DELETE FROM <table> [WHERE <predicate>] (Table::Delete)
  };
  Kind kind = Kind::kQuery;
  std::string text;  // without the ending ';', trimmed
  int line = 1;      // line of the script where it starts
  // Whether a ';' ended it (false only for the last statement of a script).
  bool terminated = true;
  // kSet: the name and the value, unquoted ("timelake.read_dedup", "false").
  // kDelete: the table ("ns.table" or "table") and the predicate, empty for
  // every row.
  // kRollup: the rollup's name; `rollup` has the rest.
  std::string name;
  std::string value;
  // kRollup: the statement's parts.
  std::optional<RollupStatement> rollup;
};

// A SQL session over a lake: catalog "timelake", namespaces as schemas, bare
// names in "default". Each query reads every table at its newest committed
// version. A Session is not thread-safe (use one per thread), except for
// Interrupt().
//
// Every SQL call below (and the reads of a stream SqlStream returns) fails
// with kCancelled (arrow::StatusCode::Cancelled) when Interrupt() stops it;
// the session stays usable.
class Session {
 public:
  explicit Session(Lake lake, SessionSettings settings = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Runs one SQL statement and collects its result. Errors: kInvalid (parse
  // or plan error, with DataFusion's message), kNotFound, kStorage (retryable
  // when the outage may pass), kCorrupt (metadata or a data file that does
  // not parse), kUnsupported; SqlStream's reader reports the same kinds.
  arrow::Result<std::shared_ptr<arrow::Table>> Sql(std::string_view sql);
  // Runs one SQL statement and streams its result. Errors: kInvalid (parse
  // or plan error with DataFusion's message, an unknown table among them; a
  // bad session setting), kUnsupported (SQL DataFusion does not implement),
  // the errors of loading a table it reads (kNotFound, kCorrupt,
  // kUnsupported, kStorage), kInternal. Errors while reading the stream
  // name the tables read; their kinds follow the cause. `DELETE FROM t
  // [WHERE p]` runs Table::Delete (its errors) and answers one row: the
  // rows_deleted, files_removed and files_written of its DeleteReport.
  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> SqlStream(
      std::string_view sql);
  // Splits a script into statements on ';' outside '…' strings, "…"
  // identifiers, -- and /* */ comments; statements of only comments are
  // dropped. Text after the last ';' (also an open string or comment) is a
  // last statement with `terminated` false. Errors: kInvalid for a SET
  // without a name or value, naming its line.
  static arrow::Result<std::vector<Statement>> Parse(std::string_view script);

  // EXPLAIN ANALYZE of a query: first one "timelake scan: ns.table: N live
  // files, N pruned, N read, N merged for dedup" line per table scan (the
  // engine's file pruning), then DataFusion's executed plan with its metrics
  // (row groups and pages pruned and read). Errors: as SqlStream, with
  // errors while executing the query as kInvalid.
  arrow::Result<std::string> ExplainAnalyze(std::string_view sql);
  // The newest row of every series of a table, by the tie rule (later
  // insertion, then later commit). Errors: kInvalid (the name, or not a
  // time-series table), the errors of Lake::LoadTable (kNotFound, kCorrupt,
  // kUnsupported, kStorage), and those of Sql when no last-value index
  // answers and the table is scanned.
  arrow::Result<std::shared_ptr<arrow::Table>> Latest(std::string_view table);

  // Stops the statement this session is running, promptly (well under a
  // second, also while the engine computes a first batch): planning in
  // SqlStream, Sql or ExplainAnalyze, or a ReadNext of the stream SqlStream
  // returned, fails with kCancelled (arrow::StatusCode::Cancelled, message
  // "... cancelled: the session was interrupted"); the stream has ended
  // then, and the engine drops the query's work (at its next yield point,
  // so the engine's threads may stay busy a moment). The next statement clears
  // the interrupt, so one made when nothing runs is forgotten, and the
  // session, with its SET values, goes on. Safe to call from any thread
  // while another uses the session, and from a signal handler (it only
  // stores to an atomic; it never blocks, allocates or fails). It must not
  // race with the destruction or a move of the Session. Statements that do
  // not run SQL (Latest answered by the last-value index) are not stopped.
  void Interrupt();

 private:
  // Starts the engine before the first statement, `sql`, whose tables load
  // meanwhile; then does nothing.
  arrow::Status EnsureStarted(std::string_view sql);
  // A statement DataFusion runs (SqlStream without DELETE).
  arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Query(std::string_view sql);
  std::unique_ptr<internal::SessionState> state_;
};

// Casts and reorders `batch` to `table_schema` by column name. Missing
// nullable columns become nulls; extra columns, impossible casts and nulls in
// NOT NULL columns are kInvalid errors naming the column (and the row count).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> AlignBatch(
    const arrow::RecordBatch& batch, const arrow::Schema& table_schema);

// The newest row of every series among `batches` (which share one schema),
// by the tie rule: the latest `time_column`, then the latest `ingest_column`
// (when the batches have it), then the later row (input order, batches in
// order). Rows come out sorted by the series key; with an empty key there is
// one series. nullptr when there are no rows. Errors: kInvalid for missing
// columns or batches with different schemas.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> LatestPerSeries(
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const std::string& time_column, const std::vector<std::string>& series_key,
    const std::string& ingest_column = "_ingest_ts");

// The partition value of a data file Timelake wrote, from its path
// (".../data/time_day=2024-01-02/<uuid>.parquet" gives "2024-01-02"), or
// nullopt for a file of an unpartitioned table. Never fails.
std::optional<std::string> FilePartition(std::string_view path);

// Waits for the background work this process started: version hints and
// head objects (their failures are not reported: readers do without them)
// and the maintenance appends leave running (AppendOptions::
// maintain_in_background; Table::WaitForMaintenance reports it). Call it
// before the process exits.
void Flush();

// For a program's main(), before anything allocates through Arrow: makes
// jemalloc Arrow's default memory pool, unless the environment chose one
// (ARROW_DEFAULT_MEMORY_POOL) or Arrow was built without it. The pool Arrow
// picks otherwise, mimalloc, asks for transparent huge pages: each first
// touch of a 2 MiB page zeroes all of it, which the kernel spends a fifth
// of an ingest's CPU time on, and a partly used page counts whole. An
// ingest of 1,000 hosts × 12 h peaked at 236–250 MiB with jemalloc against
// 283–304 MiB (docs/architecture.md). The timelake and timelake_bench
// programs call it; a host program (Python) keeps its own choice. Returns
// the pool's name.
std::string PreferJemallocPool();

// Parses "90d", "12h", "30m", "45s", "2w", "1y", "500ms" or spelled out
// ("1 day", "3 hours"). Errors: kInvalid naming the text.
arrow::Result<std::chrono::milliseconds> ParseDuration(std::string_view text);
// The inverse: the largest exact unit ("90d", "36h", "45s", "500ms"). Never
// fails.
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace timelake

#endif  // TIMELAKE_TIMELAKE_H_
