// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/table/contract.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace timelake::internal {

namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Canonical property key of any spelling: "timelake.chunk_interval",
// "TIMELAKE.Chunk-Interval" -> "timelake.chunk-interval".
std::string CanonicalKey(const std::string& key) {
  std::string k = Lower(key);
  std::replace(k.begin(), k.end(), '_', '-');
  return k;
}

// Keys this version understands; others under "timelake." are rejected so a
// typo does not silently do nothing.
const std::set<std::string>& KnownKeys() {
  static const std::set<std::string> keys = {
      property::kTimeColumn,
      property::kSeriesKey,
      property::kChunk,
      property::kChunkAlias,
      property::kDedup,
      property::kIngestTimeColumn,
      property::kFormatVersion,
      property::kCompressionLevel,
      property::kRowGroupRows,
      property::kDataPageRows,
      "timelake.compression-codec",
      "timelake.target-file-size",
      "timelake.auto-maintain",
      "timelake.compact-min-files",
      "timelake.compact-cold-after",
      "timelake.retention",
      "timelake.snapshot-retention",
      "timelake.min-snapshots",
      "timelake.max-snapshots",
      "timelake.keep-snapshots-until",
      "timelake.read-dedup",
      "timelake.read-dedup-strategy",
      "timelake.filter-pushdown",
      "timelake.in-list-pruning",
      "timelake.newest-first",
      "timelake.time-weighted-mean",
      "timelake.head-format",
      "timelake.head-inline-bytes",
      "timelake.rollups",
      "timelake.rollup-routing",
      "timelake.rollup-refresh-interval",
      "timelake.rollup-source",
      "timelake.rollup-bucket",
      "timelake.rollup-aggregates",
      "timelake.version-check-interval",
  };
  return keys;
}

arrow::Result<bool> ParseBool(const std::string& key, const std::string& value) {
  const std::string v = Lower(value);
  if (v == "true" || v == "on" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "off" || v == "0" || v == "no") return false;
  return Invalid("property " + key + " = '" + value + "': expected true or false");
}

arrow::Result<int64_t> ParseInt(const std::string& key, const std::string& value,
                                int64_t lo, int64_t hi) {
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= lo && v <= hi) return static_cast<int64_t>(v);
  } catch (...) {
  }
  return Invalid("property " + key + " = '" + value + "': expected an integer from " +
                 std::to_string(lo) + " to " + std::to_string(hi));
}

}  // namespace

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

std::string JoinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

arrow::Result<Contract> ParseContract(
    const std::map<std::string, std::string>& properties) {
  Contract c;
  for (const auto& [raw_key, value] : properties) {
    const std::string key = CanonicalKey(raw_key);
    if (key.rfind("timelake.", 0) != 0) continue;
    if (key == property::kTimeColumn) {
      if (!value.empty()) c.time_column = value;
    } else if (key == property::kSeriesKey) {
      c.series_key = SplitList(value);
    } else if (key == property::kChunk || key == property::kChunkAlias) {
      TIMELAKE_ASSIGN_OR_RAISE(c.chunk, ParseChunk(Lower(value)));
    } else if (key == property::kDedup) {
      TIMELAKE_ASSIGN_OR_RAISE(c.dedup, ParseBool(key, value));
    } else if (key == property::kIngestTimeColumn) {
      c.ingest_column = value;
    } else if (key == property::kCompressionLevel) {
      TIMELAKE_ASSIGN_OR_RAISE(auto v, ParseInt(key, value, 1, 22));
      c.compression_level = static_cast<int>(v);
    } else if (key == property::kRowGroupRows) {
      TIMELAKE_ASSIGN_OR_RAISE(c.row_group_rows, ParseInt(key, value, 1000, 1LL << 31));
    } else if (key == property::kDataPageRows) {
      TIMELAKE_ASSIGN_OR_RAISE(c.data_page_rows, ParseInt(key, value, 100, 1LL << 31));
    }
  }
  if (!c.time_column) c.ingest_column.clear();
  return c;
}

arrow::Result<std::string> AlterableKey(const std::string& raw_key) {
  if (raw_key.empty()) return Invalid("empty property name");
  std::string key = CanonicalKey(raw_key);
  if (key.rfind("timelake.", 0) != 0) return raw_key;
  if (!KnownKeys().count(key)) {
    return Invalid("unknown setting '" + raw_key + "' (see `timelake settings`)");
  }
  if (key == property::kChunkAlias) key = property::kChunk;
  if (key == property::kTimeColumn || key == property::kSeriesKey ||
      key == property::kChunk || key == property::kIngestTimeColumn) {
    return Invalid(
        "setting '" + raw_key +
        "' is fixed when the table is created: it decides the layout of the data");
  }
  if (key == property::kFormatVersion || key == "timelake.rollup-source" ||
      key == "timelake.rollup-bucket" || key == "timelake.rollup-aggregates") {
    return Invalid("setting '" + raw_key + "' is managed by Timelake");
  }
  return key;
}

arrow::Result<std::map<std::string, std::string>> NewTableProperties(
    const TableOptions& options) {
  std::map<std::string, std::string> props = {
      {"write.format.default", "parquet"},
      {"write.parquet.compression-codec", "zstd"},
      {"write.metadata.previous-versions-max", "20"},
      {property::kFormatVersion, std::string(kFormatVersion)},
  };
  for (const auto& [raw_key, value] : options.properties) {
    const std::string key = CanonicalKey(raw_key);
    if (key.rfind("timelake.", 0) == 0) {
      if (!KnownKeys().count(key)) {
        return Invalid("unknown setting '" + raw_key + "' (see `timelake settings`)");
      }
      if (key == property::kFormatVersion) {
        return Invalid("setting '" + raw_key + "' is managed by Timelake");
      }
      props[key == property::kChunkAlias ? property::kChunk : key] = value;
    } else {
      props[raw_key] = value;
    }
  }
  if (options.time_column) {
    props[property::kTimeColumn] = *options.time_column;
    props[property::kChunk] = std::string(ChunkName(options.chunk));
    props[property::kIngestTimeColumn] = "_ingest_ts";
    if (!options.series_key.empty()) {
      props[property::kSeriesKey] = JoinList(options.series_key);
    }
    const bool dedup = options.dedup.value_or(!options.series_key.empty());
    props[property::kDedup] = dedup ? "true" : "false";
  } else if (!options.series_key.empty()) {
    return Invalid("a series key needs a time column");
  }
  // Validate the result as a whole (value formats).
  TIMELAKE_RETURN_NOT_OK(ParseContract(props).status());
  return props;
}

}  // namespace timelake::internal
