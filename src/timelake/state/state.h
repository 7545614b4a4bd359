// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The state behind the public handles (pimpl).

#ifndef TIMELAKE_STATE_STATE_H_
#define TIMELAKE_STATE_STATE_H_

#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <arrow/record_batch.h>

#include "timelake/format/manifest.h"
#include "timelake/format/table_metadata.h"
#include "timelake/settings/contract.h"
#include "timelake/storage/store.h"
#include "timelake/timelake.h"
#include "timelake/util/clock.h"
#include "timelake/write/data_writer.h"

namespace timelake::internal {

// Immutable objects (manifest lists, manifests, last-value indexes) by key,
// least recently used first out, within an entry and a byte cap.
class ObjectCache {
 public:
  ObjectCache(size_t max_entries, size_t max_bytes)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}
  std::shared_ptr<arrow::Buffer> Get(const std::string& key);
  void Put(const std::string& key, std::shared_ptr<arrow::Buffer> value);
  void Erase(const std::string& key);

 private:
  using Entry = std::pair<std::string, std::shared_ptr<arrow::Buffer>>;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
  const size_t max_entries_, max_bytes_;
};

struct TableState;

// Loaded table versions, reused by queries for the table's
// version-check-interval; commits made through this lake replace them at
// once. Entries are kept without their `lake` (no reference cycle). Time is
// the lake's clock (util/clock.h), passed in, so tests can move it.
class TableCache {
 public:
  // The cached version of `name` if younger than its interval at `now`.
  std::shared_ptr<const TableState> Fresh(const TableName& name, TimePoint now);
  // Keeps `state`, loaded at `now`, unless a newer version is cached and
  // fresh.
  void Remember(const TableState& state, TimePoint now);
  void Forget(const TableName& name);

 private:
  struct Entry {
    std::shared_ptr<const TableState> state;
    TimePoint loaded;
    std::chrono::milliseconds interval{0};
    bool FreshAt(TimePoint now) const;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// Decoded last-value indexes a lake keeps (by key; all dropped when full).
inline constexpr size_t kDecodedIndexes = 16;

// One run of inline maintenance in the background (maintain/background.cc):
// what it did, once `done`.
struct BackgroundRun {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  // The version its last commit made, kept without its `lake` (no
  // reference cycle through LakeState::maintenance); null when it failed.
  std::shared_ptr<const TableState> table;
  MaintainReport report;
  arrow::Status error;  // OK when it succeeded
  // Appends that returned while it ran hand it their partitions and their
  // newer version (HandToMaintenance): it maintains them next, before it is
  // done. Held with its `lake` until then.
  std::set<std::optional<int32_t>> handed_partitions;
  std::shared_ptr<const TableState> handed_table;
  int64_t handed = 0;  // appends whose handed work it has not done yet
};

struct LakeState {
  std::shared_ptr<storage::Store> store;
  std::shared_ptr<Clock> clock;
  // The Timelake format this lake writes and reads tables by
  // (CheckFormatVersion): kFormatVersion. Tests give another to reach the
  // rule's cases this build's own format cannot (a read-only newer minor
  // exists only from 1.0), as they give the clock a fake.
  std::string format_version{kFormatVersion};
  ObjectCache objects{4096, 256u << 20};
  // Footer blobs of data files (by key) for the head object: those this
  // lake wrote and those a head it read carried (write/data_writer.h).
  ObjectCache footers{8192, 64u << 20};
  TableCache tables;
  // Decoded last-value indexes in their table's schema, by index key
  // (ReadLvi below): `latest` reads them, and the SQL last-value rewrite hands
  // them to the engine as Arrow C data (read/catalog.cc), which keeps no copy.
  std::mutex indexes_mu;
  std::unordered_map<std::string, std::shared_ptr<arrow::RecordBatch>> indexes;
  // The head writer of each table ("ns.table", commit::WriteHeadAsync): one
  // at a time, and the newest version committed meanwhile waits as pending.
  struct HeadSlot {
    bool writing = false;
    std::shared_ptr<const TableState> pending;
  };
  std::mutex heads_mu;
  std::unordered_map<std::string, HeadSlot> heads;
  // Inline maintenance runs in the background, by table ("ns.table"): the
  // newest of each, until a later append (or Maintain, Delete, …) takes it.
  std::mutex maintenance_mu;
  std::unordered_map<std::string, std::shared_ptr<BackgroundRun>> maintenance;
};

// Test access to a lake's state (e.g. to give it a FakeClock).
struct LakeAccess {
  static std::shared_ptr<LakeState> State(const Lake& lake) { return lake.state_; }
};

// Get of an immutable object through the lake's cache.
arrow::Result<std::shared_ptr<arrow::Buffer>> GetImmutable(LakeState& lake,
                                                           const std::string& key);

struct TableState {
  explicit TableState(TableName table_name) : name(std::move(table_name)) {}

  std::shared_ptr<LakeState> lake;
  TableName name;
  std::string table_key;  // "ns/table", relative to the warehouse root
  int64_t version = 0;
  std::string metadata_key;
  format::TableMetadata metadata;
  std::shared_ptr<arrow::Schema> schema;
  Contract contract;
  // From a current head object (format/head.h), when the version was loaded
  // through one: the live data files and the last-value index, so that
  // planning needs no manifest or index read.
  std::shared_ptr<const std::vector<format::LiveFile>> head_files;
  std::shared_ptr<arrow::RecordBatch> head_last_values;
};

// "ns/table".
inline std::string TableKey(const TableName& name) {
  return name.ns() + "/" + name.name();
}

// The key of `uri`, a file of `table` (a manifest list, manifest, data file
// or index): Store::TableKeyOf, so that a table copied or moved with its
// warehouse reads its own files where it is found. Errors: kInvalid.
arrow::Result<std::string> KeyOf(const TableState& table, std::string_view uri);

// The table's location: the one its metadata records while that lies in the
// warehouse, else (copied or moved here) where the table is found.
std::string LocationOf(const TableState& table);

// The table's timelake.format-version, empty when untagged.
std::string FormatVersionOf(const format::TableMetadata& metadata);

// CheckFormatVersion of `table` by its lake's format.
arrow::Status CheckTableFormat(const TableState& table, FormatAccess access);

// Builds the state of a loaded version (schema conversion, contract parsing,
// format version check for reading). Errors: kCorrupt, kUnsupported.
arrow::Result<std::shared_ptr<const TableState>> MakeTableState(
    std::shared_ptr<LakeState> lake, const TableName& name, int64_t version,
    std::string metadata_key, format::TableMetadata metadata);

// `table` as of its snapshot `snapshot_id` (time travel): the same version
// with that snapshot as the current one and the schema it was written with
// (the current schema when the snapshot names none), so that listing live
// files, planning scans and reading the last-value index answer for it.
// Errors: kNotFound (no such snapshot kept), kCorrupt (its schema).
arrow::Result<std::shared_ptr<const TableState>> TableStateAt(const TableState& table,
                                                              int64_t snapshot_id);

// The snapshot of `table` that was current at `timestamp_ms`
// (TableMetadata::SnapshotAsOf). Errors: kNotFound naming the table and the
// time, also when that snapshot has expired.
arrow::Result<int64_t> SnapshotIdAsOf(const TableState& table, int64_t timestamp_ms);

// The table version N of the table's head object (metadata/timelake-head),
// or nullopt when it has none or one that does not decode. Errors: kStorage.
arrow::Result<std::optional<int64_t>> StoredHeadVersion(const TableState& table);

// The snapshots `metadata` keeps, oldest first (Table::Snapshots).
std::vector<SnapshotInfo> SnapshotsOf(const format::TableMetadata& metadata);

// Tables of `ns` (all namespaces when empty), sorted; namespaces with tables.
arrow::Result<std::vector<TableName>> ListTablesOf(const LakeState& lake,
                                                   std::string_view ns);
arrow::Result<std::vector<std::string>> ListNamespacesOf(const LakeState& lake);

// Loads the newest version of a table.
arrow::Result<std::shared_ptr<const TableState>> LoadTableState(
    std::shared_ptr<LakeState> lake, const TableName& name);

// The version a query reads: a version loaded or committed through this lake
// within the table's version-check-interval, otherwise the newest.
arrow::Result<std::shared_ptr<const TableState>> LoadTableStateForRead(
    std::shared_ptr<LakeState> lake, const TableName& name);

// The data files of the table's current snapshot (none without one): from
// the head when the version was loaded through one, else from the
// manifests. Errors: kCorrupt (manifests that do not parse), kUnsupported
// (delete files), kStorage.
arrow::Result<std::vector<format::LiveFile>> ListLiveFiles(const TableState& table);

// The same files without copying them when the version was loaded through
// the head (every query plans over them: a copy of each file's statistics
// per query grows with the table).
arrow::Result<std::shared_ptr<const std::vector<format::LiveFile>>> SharedLiveFiles(
    const TableState& table);

// The data files of `snapshot` of the table (none for nullptr), from its
// manifests (read through the lake's cache). Errors: as ListLiveFiles.
arrow::Result<std::vector<format::LiveFile>> ListLiveFilesOf(
    const TableState& table, const format::Snapshot* snapshot);

// Reads a last-value index of `table` (write/lvi.h) and aligns it to the
// table's schema (an index written before a schema change lacks the new
// columns: they read as nulls), through the lake's object cache and its
// cache of decoded indexes (indexes are immutable). Errors: kNotFound,
// kCorrupt naming the file, kStorage.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadLvi(const TableState& table,
                                                           const std::string& uri);

// The rows of the current snapshot's last-value index in the table schema:
// the head's copy when the version was loaded through a head, else the index
// file (ReadLvi). Kept decoded in the lake's `indexes`, the one cache of
// them, so a warm query aligns and decodes nothing. nullptr when the
// snapshot has no index (or the table no snapshot). Errors: as ReadLvi.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadCurrentLvi(
    const TableState& table);

// The write layout of a table. The partitioning comes from the partition
// spec, the source of truth other engines read: Timelake's hour/day/month of
// the time column, or none. Errors: kUnsupported for other specs.
arrow::Result<write::Layout> LayoutOf(const TableState& t);

}  // namespace timelake::internal

#endif  // TIMELAKE_STATE_STATE_H_
