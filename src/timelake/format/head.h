// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The head object `metadata/timelake-head` (SPEC §4.7): what a reader needs
// to plan a query at one table version, in one object, so that a cold
// process reads it together with a listing of metadata/ instead of walking
// version -> manifest list -> manifests -> last-value index.
//
// Layout (Timelake 0.7's, codec "arrow"; docs/format.md):
//   "TLHD" | u8 1 | u64 LE table version | u8 n | codec name (n bytes) |
//   sections, each u64 LE length + one Arrow IPC stream:
//     layout       no columns, schema metadata {"layout": "1"}
//     columns      per-file column statistics (file index, field id, bounds, counts)
//     files        live data files (path, size, records, partition, …)
//     footers      Parquet footers of the newest files (path, footer blob)
//     last_values  the last-value index rows, when the snapshot has one
//     metadata     the table metadata JSON
// Sections other than "layout" carry {"timelake.section": name}; readers skip
// sections they do not know. A head whose version is not the newest listed
// is stale and ignored: it never decides an answer on its own.

#ifndef TIMELAKE_FORMAT_HEAD_H_
#define TIMELAKE_FORMAT_HEAD_H_

#include <memory>
#include <string>
#include <vector>

#include <arrow/buffer.h>
#include <arrow/record_batch.h>

#include "timelake/format/manifest.h"

namespace timelake::format {

inline constexpr char kHeadName[] = "timelake-head";

struct Head {
  int64_t version = 0;
  std::string metadata_json;
  std::vector<LiveFile> files;  // key left empty: callers resolve paths
  std::shared_ptr<arrow::RecordBatch> last_values;  // may be null
  // Self-contained footer blobs (storage::Store::FooterFromTail) by data
  // file URI.
  std::vector<std::pair<std::string, std::shared_ptr<arrow::Buffer>>> footers;
};

// Encodes a head. Errors: kInvalid for data Arrow cannot encode.
arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeHead(const Head& head);

// Decodes a head. Errors: kCorrupt naming `uri` (bad magic, truncated,
// unknown codec, sections that do not parse).
arrow::Result<Head> DecodeHead(std::string_view bytes, const std::string& uri);

}  // namespace timelake::format

#endif  // TIMELAKE_FORMAT_HEAD_H_
