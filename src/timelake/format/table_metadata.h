// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Iceberg table metadata (v<N>.metadata.json), format version 2. The parsed
// document is kept whole so that fields written by other engines and not used
// here survive a rewrite; the typed fields below are the ones Timelake reads
// or changes, and Serialize() writes them back into the document.

#ifndef TIMELAKE_FORMAT_TABLE_METADATA_H_
#define TIMELAKE_FORMAT_TABLE_METADATA_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelake/status.h"

namespace timelake::format {

struct Snapshot {
  int64_t snapshot_id = 0;
  std::optional<int64_t> parent_snapshot_id;
  int64_t sequence_number = 0;
  int64_t timestamp_ms = 0;
  std::string manifest_list;                   // absolute URI
  std::map<std::string, std::string> summary;  // includes "operation"
  std::optional<int> schema_id;
  nlohmann::json extra = nlohmann::json::object();  // keys not modelled above
};

struct PartitionField {
  int source_id = 0;
  int field_id = 0;
  std::string name;
  std::string transform;  // "day", "hour", "month", "identity", ...
};

struct PartitionSpec {
  int spec_id = 0;
  std::vector<PartitionField> fields;
};

struct TableMetadata {
  nlohmann::json doc = nlohmann::json::object();

  int format_version = 2;
  std::string table_uuid;
  std::string location;  // absolute URI of the table root
  int64_t last_sequence_number = 0;
  int64_t last_updated_ms = 0;
  int last_column_id = 0;
  int current_schema_id = 0;
  int default_spec_id = 0;
  std::vector<PartitionSpec> specs;
  int last_partition_id = 999;
  std::map<std::string, std::string> properties;
  std::optional<int64_t> current_snapshot_id;
  std::vector<Snapshot> snapshots;

  // The schema with current_schema_id (the JSON object). Parse() guarantees it.
  const nlohmann::json& CurrentSchema() const;
  // The spec with default_spec_id. Parse() guarantees it.
  const PartitionSpec& DefaultSpec() const;
  const Snapshot* CurrentSnapshot() const;
  const Snapshot* FindSnapshot(int64_t id) const;
  // The schema (the JSON object) with `schema_id`, or nullptr.
  const nlohmann::json* FindSchema(int schema_id) const;
  // The ids of the current snapshot and its ancestors that the metadata
  // still holds (empty without a current snapshot). Snapshots a rollback
  // left behind are not among them.
  std::vector<int64_t> History() const;
  // The snapshot that was current at `timestamp_ms` (inclusive), as the
  // snapshot log records it (rollbacks included); without a log, the newest
  // snapshot of History() committed at or before it. nullopt when the table
  // had none then. The id may name a snapshot that has expired since.
  std::optional<int64_t> SnapshotAsOf(int64_t timestamp_ms) const;

  // Appends a snapshot, makes it current (main branch), logs it and bumps the
  // sequence number and update time.
  void AddSnapshot(Snapshot snapshot);
  // Makes the existing snapshot `id` current (main branch) and logs it at
  // `timestamp_ms` (a rollback).
  void SetCurrentSnapshot(int64_t id, int64_t timestamp_ms);
  // Records the previous metadata file in the metadata log (keeps the newest
  // `max_entries`).
  void LogPreviousMetadata(const std::string& file_uri, int64_t timestamp_ms,
                           size_t max_entries);

  // The document as JSON text.
  std::string Serialize() const;

  // Parses metadata JSON. `what` names the file in errors. Errors: kCorrupt
  // for malformed JSON or missing required fields; kUnsupported for format
  // versions other than 1 and 2.
  static arrow::Result<TableMetadata> Parse(std::string_view text, std::string_view what);
};

// A snapshot from its JSON object in table metadata (or a REST add-snapshot
// update), keys not modelled kept in `extra`; and back. Errors: kCorrupt for
// a malformed snapshot (what does not fit named), kUnsupported for v1
// inline manifests.
arrow::Result<Snapshot> SnapshotFromJson(const nlohmann::json& snapshot);
nlohmann::json SnapshotToJson(const Snapshot& snapshot);

// Standard Iceberg snapshot summary keys Timelake maintains.
namespace summary {
inline constexpr char kOperation[] = "operation";
inline constexpr char kAddedDataFiles[] = "added-data-files";
inline constexpr char kAddedRecords[] = "added-records";
inline constexpr char kAddedFilesSize[] = "added-files-size";
inline constexpr char kDeletedDataFiles[] = "deleted-data-files";
inline constexpr char kDeletedRecords[] = "deleted-records";
inline constexpr char kRemovedFilesSize[] = "removed-files-size";
inline constexpr char kTotalDataFiles[] = "total-data-files";
inline constexpr char kTotalRecords[] = "total-records";
inline constexpr char kTotalFilesSize[] = "total-files-size";
inline constexpr char kTotalDeleteFiles[] = "total-delete-files";
inline constexpr char kTotalPositionDeletes[] = "total-position-deletes";
inline constexpr char kTotalEqualityDeletes[] = "total-equality-deletes";
inline constexpr char kBatchId[] = "timelake.batch-id";
inline constexpr char kLastValueIndex[] = "timelake.last-value-index";
// On a rollup table's snapshots: the raw table's snapshot and sequence
// number whose rows it reflects (Timelake 0.7's keys).
inline constexpr char kRollupSourceSnapshot[] = "timelake.rollup-source-snapshot";
inline constexpr char kRollupSourceSequence[] = "timelake.rollup-source-sequence";
}  // namespace summary

// Reads an integer summary value (0 when absent or malformed).
int64_t SummaryInt(const Snapshot& snapshot, const char* key);

}  // namespace timelake::format

#endif  // TIMELAKE_FORMAT_TABLE_METADATA_H_
