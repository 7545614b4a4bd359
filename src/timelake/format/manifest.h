// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Iceberg manifests and manifest lists (https://iceberg.apache.org/spec/,
// "Manifests" and "Manifest Lists"), encoded as Avro container files with the
// Avro layer of avro.h.
//
// A snapshot points at a manifest list; the list has one ManifestFile per
// manifest; a manifest has one ManifestEntry per data (or delete) file, with
// the file's partition tuple and column statistics.
//
// Writing produces format version 2 files laid out the way Java Iceberg and
// PyIceberg lay them out: the same record names (manifest_entry, r2, r102,
// k117_v118, ..., manifest_file, r508), field ids, optional fields as
// ["null", T] unions with default null, and maps with int keys as arrays of
// key/value records carrying `"logicalType": "map"`.
//
// Reading accepts what other engines write (PyIceberg, Java/Spark, Rust
// iceberg): v1 and v2 layouts, fields in any order, extra or deprecated fields
// (e.g. v1's block_size_in_bytes), v1 field names (added_data_files_count) and
// int/long promotion. Fields are resolved against the WRITER schema embedded
// in the file by Iceberg field id, or by name where the writer gave no id;
// unknown fields are skipped.
//
// Error kinds: kCorrupt for bytes that are not a valid manifest (or list),
// naming the field and record; kInvalid for arguments that cannot be written;
// kUnsupported for codecs or format versions we do not implement.
//
// All functions are reentrant and thread safe; the structs are plain values.

#ifndef TIMELAKE_FORMAT_MANIFEST_H_
#define TIMELAKE_FORMAT_MANIFEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "timelake/format/avro.h"
#include "timelake/status.h"

namespace timelake::format {

// ---------------------------------------------------------------------------
// Partition tuples
// ---------------------------------------------------------------------------

// The Iceberg type of one partition tuple field. The hour and month transforms
// produce kInt; day produces kDate as Java, PyIceberg and Timelake 0.7 write it
// (the spec calls its result int: both are Avro int); identity transforms
// produce the source column's type.
enum class PartitionValueType {
  kBoolean,      // Avro boolean
  kInt,          // Avro int
  kLong,         // Avro long
  kFloat,        // Avro float
  kDouble,       // Avro double
  kDate,         // Avro int, logicalType date (days since 1970-01-01)
  kTime,         // Avro long, logicalType time-micros
  kTimestamp,    // Avro long, logicalType timestamp-micros, adjust-to-utc false
  kTimestampTz,  // Avro long, logicalType timestamp-micros, adjust-to-utc true
  kString,       // Avro string
  // Avro bytes. When reading, also any fixed, decimal or uuid partition field
  // of another engine's manifest: the raw Avro bytes, uninterpreted.
  kBinary,
};

// Lower-case name ("int", "timestamptz", ...), for messages.
std::string_view PartitionValueTypeName(PartitionValueType type);

// One field of the partition tuple, in partition spec order.
struct PartitionFieldType {
  // The partition field id from the spec (1000 and up).
  int32_t field_id = 0;
  // The partition field name (e.g. "ts_day").
  std::string name;
  PartitionValueType type = PartitionValueType::kInt;
  // Whether the Avro field is written without a null branch. Java writes every
  // partition field optional; PyIceberg writes required fields for transforms
  // of required columns. Default: false.
  bool required = false;

  friend bool operator==(const PartitionFieldType&, const PartitionFieldType&) = default;
};

// A non-null partition value. The alternative follows the field type:
// bool for kBoolean; int32_t for kInt and kDate; int64_t for kLong, kTime,
// kTimestamp and kTimestampTz; float; double; std::string for kString (UTF-8)
// and kBinary.
using PartitionValue = std::variant<bool, int32_t, int64_t, float, double, std::string>;

// A partition tuple: one value per PartitionFieldType, nullopt for null.
using PartitionTuple = std::vector<std::optional<PartitionValue>>;

// ---------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------

// manifest_entry.status
inline constexpr int32_t kEntryExisting = 0;
inline constexpr int32_t kEntryAdded = 1;
inline constexpr int32_t kEntryDeleted = 2;

// data_file.content
inline constexpr int32_t kContentData = 0;
inline constexpr int32_t kContentPositionDeletes = 1;
inline constexpr int32_t kContentEqualityDeletes = 2;

// The data_file struct (field ids in brackets). Empty maps and lists are
// written as null and read back empty.
struct DataFile {
  int32_t content = kContentData;       // [134] 0 data, 1 position, 2 equality deletes
  std::string file_path;                // [100] full URI
  std::string file_format = "PARQUET";  // [101] AVRO, ORC, PARQUET or PUFFIN
  PartitionTuple partition;             // [102] same order as the partition type
  int64_t record_count = 0;             // [103]
  int64_t file_size_in_bytes = 0;       // [104]
  std::map<int32_t, int64_t> column_sizes;       // [108] column id -> bytes on disk
  std::map<int32_t, int64_t> value_counts;       // [109] incl. nulls and NaNs
  std::map<int32_t, int64_t> null_value_counts;  // [110]
  std::map<int32_t, int64_t> nan_value_counts;   // [137]
  // [125] / [128] column id -> bound in the binary single-value serialization
  // (see bounds.h).
  std::map<int32_t, std::string> lower_bounds;
  std::map<int32_t, std::string> upper_bounds;
  std::optional<std::string> key_metadata;          // [131]
  std::vector<int64_t> split_offsets;               // [132] ascending
  std::vector<int32_t> equality_ids;                // [135] equality deletes only
  std::optional<int32_t> sort_order_id;             // [140]
  std::optional<std::string> referenced_data_file;  // [143] position deletes only

  friend bool operator==(const DataFile&, const DataFile&) = default;
};

// One manifest entry. In v2 a null snapshot id or sequence number is
// inherited from the manifest list (see InheritManifestFileFields).
struct ManifestEntry {
  int32_t status = kEntryAdded;                 // [0] kEntryExisting/Added/Deleted
  std::optional<int64_t> snapshot_id;           // [1]
  std::optional<int64_t> sequence_number;       // [3] data sequence number
  std::optional<int64_t> file_sequence_number;  // [4]
  DataFile data_file;                           // [2]

  friend bool operator==(const ManifestEntry&, const ManifestEntry&) = default;
};

// What WriteManifest needs besides the entries. The JSON strings go into the
// Avro header verbatim.
struct ManifestWriteOptions {
  // The table schema as Iceberg JSON (header key `schema`). Default: "".
  std::string table_schema_json;
  // Header key `schema-id`. Default: 0.
  int32_t schema_id = 0;
  // The `fields` array of the partition spec as JSON (header key
  // `partition-spec`), e.g. [{"source-id":1,"field-id":1000,"transform":"day",
  // "name":"ts_day"}]. Its field ids and names must match partition_type.
  // Default: "[]" (unpartitioned).
  std::string partition_spec_json = "[]";
  // Header key `partition-spec-id`. Default: 0.
  int32_t partition_spec_id = 0;
  // The partition tuple type, in spec order. Default: empty.
  std::vector<PartitionFieldType> partition_type;
  // Only 2 is supported for writing. Default: 2.
  int32_t format_version = 2;
  // Header key `content`: "data" or "deletes". Default: "data".
  std::string content = "data";
  // Avro codec: "deflate" or "null". Default: "deflate".
  std::string codec = "deflate";
};

// A manifest read back.
struct ManifestContents {
  // Every header key, including the Avro ones.
  std::map<std::string, std::string> metadata;
  // `format-version` (1 when absent, as in old v1 files).
  int32_t format_version = 1;
  // `content`: "data" (also when absent) or "deletes".
  std::string content = "data";
  // `schema-id` and `partition-spec-id`; PyIceberg omits `schema-id`.
  std::optional<int32_t> schema_id;
  std::optional<int32_t> partition_spec_id;
  // `schema` and `partition-spec`, verbatim ("" when absent).
  std::string table_schema_json;
  std::string partition_spec_json;
  // The partition tuple type, from the writer's Avro schema.
  std::vector<PartitionFieldType> partition_type;
  // The entries in file order, exactly as stored (nothing inherited).
  std::vector<ManifestEntry> entries;
};

// The Avro schema WriteManifest uses for `partition_type` (v2 manifest_entry).
AvroSchema ManifestEntrySchema(const std::vector<PartitionFieldType>& partition_type);

// Encodes a v2 manifest and returns the whole file. Header keys, in order:
// schema, schema-id, partition-spec, partition-spec-id, format-version,
// content (as Java Iceberg writes them). Errors: kInvalid for a status,
// content or partition value that does not fit (naming the entry), a
// partition spec JSON that is not an array matching partition_type, or a bad
// content value; kUnsupported for a format version other than 2 or a codec
// other than null/deflate.
arrow::Result<std::string> WriteManifest(const ManifestWriteOptions& options,
                                         const std::vector<ManifestEntry>& entries);

// Decodes a v1 or v2 manifest written by any engine (see the file comment).
// Errors: kCorrupt for malformed Avro, a header value that is not an integer
// where one is required, a missing required field, a required value that is
// null or of the wrong type, or a partition field type we cannot represent;
// kUnsupported for codecs we do not implement.
arrow::Result<ManifestContents> ReadManifest(std::string_view bytes);

// ---------------------------------------------------------------------------
// Manifest lists
// ---------------------------------------------------------------------------

// manifest_file.partitions[i]: a summary of one partition field over all the
// entries of a manifest.
struct FieldSummary {
  bool contains_null = false;              // [509]
  std::optional<bool> contains_nan;        // [518]
  std::optional<std::string> lower_bound;  // [510] single-value serialization
  std::optional<std::string> upper_bound;  // [511]

  friend bool operator==(const FieldSummary&, const FieldSummary&) = default;
};

// manifest_content
inline constexpr int32_t kManifestData = 0;
inline constexpr int32_t kManifestDeletes = 1;

// One manifest_file record of a manifest list.
struct ManifestFile {
  std::string manifest_path;        // [500]
  int64_t manifest_length = 0;      // [501] bytes
  int32_t partition_spec_id = 0;    // [502]
  int32_t content = kManifestData;  // [517] 0 data, 1 deletes (v1: 0)
  int64_t sequence_number = 0;      // [515] (v1: 0)
  int64_t min_sequence_number = 0;  // [516] (v1: 0)
  int64_t added_snapshot_id = 0;    // [503]
  // [504]-[506], [512]-[514]: required in v2; v1 lists may leave them null,
  // meaning "unknown". WriteManifestList rejects nullopt.
  std::optional<int32_t> added_files_count;
  std::optional<int32_t> existing_files_count;
  std::optional<int32_t> deleted_files_count;
  std::optional<int64_t> added_rows_count;
  std::optional<int64_t> existing_rows_count;
  std::optional<int64_t> deleted_rows_count;
  // [507] one summary per partition field, in spec order.
  std::vector<FieldSummary> partitions;
  std::optional<std::string> key_metadata;  // [519]

  friend bool operator==(const ManifestFile&, const ManifestFile&) = default;
};

// The Avro schema WriteManifestList uses (v2 manifest_file).
AvroSchema ManifestFileSchema();

// Encodes a v2 manifest list. Header keys: snapshot-id, parent-snapshot-id
// ("null" when there is no parent, as Java and PyIceberg write it),
// sequence-number, format-version ("2"). Errors: kInvalid for a manifest
// without its v2-required counts or with a bad content value; kUnsupported
// for a codec other than null/deflate.
arrow::Result<std::string> WriteManifestList(int64_t snapshot_id,
                                             std::optional<int64_t> parent_snapshot_id,
                                             int64_t sequence_number,
                                             const std::vector<ManifestFile>& manifests,
                                             std::string_view codec = "deflate");

// Decodes a v1 or v2 manifest list. v1 lists read with content 0 and
// sequence numbers 0, as the spec prescribes. Errors: as ReadManifest.
arrow::Result<std::vector<ManifestFile>> ReadManifestList(std::string_view bytes);

// ---------------------------------------------------------------------------
// Helpers for writers and readers
// ---------------------------------------------------------------------------

// The partition summaries of a manifest list entry for `tuples` (all entries
// of one manifest, whatever their status): per field, whether a null or NaN
// occurred, and the smallest and largest other value, encoded with bounds.h.
// Floats order -0.0 before +0.0; strings and binary order by unsigned bytes.
// Errors: kInvalid when a tuple has the wrong arity or a value of the wrong
// alternative for its field type.
arrow::Result<std::vector<FieldSummary>> SummarizePartitions(
    const std::vector<PartitionFieldType>& partition_type,
    const std::vector<const PartitionTuple*>& tuples);

// The manifest list entry for a manifest just written with WriteManifest:
// counts of added/existing/deleted files and rows, the minimum data sequence
// number of live entries (a null one counts as `sequence_number`, which it
// will inherit), content from the entries' data_file.content, and the
// partition summaries. Errors: kInvalid for mixed data and delete files, a
// count beyond int32, or as SummarizePartitions.
arrow::Result<ManifestFile> SummarizeManifest(
    std::string manifest_path, int64_t manifest_length, int32_t partition_spec_id,
    int64_t added_snapshot_id, int64_t sequence_number,
    const std::vector<PartitionFieldType>& partition_type,
    const std::vector<ManifestEntry>& entries);

// Applies the spec's inheritance rules to entries read from `manifest`: a null
// snapshot_id becomes manifest.added_snapshot_id; null sequence numbers of
// ADDED entries become manifest.sequence_number; in v1 manifests (sequence
// number 0) every null sequence number becomes 0. Other nulls stay null.
void InheritManifestFileFields(const ManifestFile& manifest,
                               std::vector<ManifestEntry>* entries);

// A live data file of a table version.
struct LiveFile {
  std::string key;                         // relative to the warehouse root
  std::optional<int64_t> sequence_number;  // inherited from the manifest when unset
  int64_t snapshot_id = 0;                 // the snapshot that added it
  int64_t file_sequence_number = 0;
  bool added = false;          // status ADDED (not EXISTING)
  format::DataFile data_file;  // size, record count and the statistics for pruning
};

}  // namespace timelake::format

#endif  // TIMELAKE_FORMAT_MANIFEST_H_
