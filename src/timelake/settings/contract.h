// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The table contract: which column is time, which columns identify a series,
// and the layout policy, read from `timelake.*` table properties. (The full
// settings registry, include/timelake/settings.h, declares every key.)

#ifndef TIMELAKE_SETTINGS_CONTRACT_H_
#define TIMELAKE_SETTINGS_CONTRACT_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <parquet/types.h>

#include "timelake/timelake.h"

namespace timelake::internal {

namespace property {
inline constexpr char kTimeColumn[] = "timelake.time-column";
inline constexpr char kSeriesKey[] = "timelake.series-key";
// Timelake 0.7 writes the chunk as "chunk-interval"; "chunk" is accepted too.
inline constexpr char kChunk[] = "timelake.chunk-interval";
inline constexpr char kDedup[] = "timelake.dedup";
inline constexpr char kIngestTimeColumn[] = "timelake.ingest-time-column";
inline constexpr char kFormatVersion[] = "timelake.format-version";
// Rollups (Timelake 0.7's keys): on a raw table the rollup tables kept from
// it (comma-separated names), on a rollup table its definition.
inline constexpr char kRollups[] = "timelake.rollups";
inline constexpr char kRollupSource[] = "timelake.rollup-source";
inline constexpr char kRollupBucket[] = "timelake.rollup-bucket";
inline constexpr char kRollupAggregates[] = "timelake.rollup-aggregates";
}  // namespace property

struct Contract {
  std::optional<std::string> time_column;
  std::vector<std::string> series_key;
  Chunk chunk = Chunk::kDay;
  bool dedup = false;
  std::string ingest_column;  // empty for plain tables
  parquet::Compression::type compression = parquet::Compression::ZSTD;
  int compression_level = 3;
  int64_t row_group_rows = 1 << 20;
  int64_t data_page_rows = 20000;
};

// Reads the contract from table properties. Errors: kInvalid naming the
// property for malformed values.
arrow::Result<Contract> ParseContract(
    const std::map<std::string, std::string>& properties);

// The properties of a new table: the contract of `options` plus its extra
// properties (timelake.* keys among them are validated). Errors: kInvalid.
arrow::Result<std::map<std::string, std::string>> NewTableProperties(
    const TableOptions& options);

// The key a property change on an existing table is stored under: the
// canonical spelling of `timelake.*` keys, other keys as given. Errors:
// kInvalid for unknown `timelake.*` keys and for ones fixed at create or
// managed by Timelake.
arrow::Result<std::string> AlterableKey(const std::string& key);

// What a build of format `ours` may do with a table of format `theirs` (the
// table's timelake.format-version; empty for an untagged table, which counts
// as 0.1.0). Semver: an older or equal format, or a newer patch, is read and
// written; a newer minor is read but not written (from 1.0; before 1.0 a
// newer minor counts as a newer major); a newer major is neither. Every
// entry point that opens a table for reading or writing asks this.
enum class FormatAccess { kRead, kWrite };
// Errors: kUnsupported naming the table, both formats and what to do;
// kCorrupt for a version that is not MAJOR.MINOR.PATCH.
arrow::Status CheckFormatVersion(std::string_view table, std::string_view theirs,
                                 FormatAccess access,
                                 std::string_view ours = kFormatVersion);

// -1, 0 or 1 as format `a` is older than, equal to or newer than `b` (empty
// counts as 0.1.0). Errors: kCorrupt for a version that is not
// MAJOR.MINOR.PATCH.
arrow::Result<int> CompareFormatVersions(std::string_view a, std::string_view b);

// "a,b" <-> {"a","b"}.
std::vector<std::string> SplitList(const std::string& text);
std::string JoinList(const std::vector<std::string>& items);

}  // namespace timelake::internal

#endif  // TIMELAKE_SETTINGS_CONTRACT_H_
