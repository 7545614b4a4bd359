// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/settings/contract.h"

#include "timelake/settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace timelake::internal {

namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The registry entry of a `timelake.*` key. Errors: kInvalid for keys the
// registry does not know, so that a typo does not silently do nothing.
arrow::Result<const settings::Setting*> Known(const std::string& raw_key) {
  const settings::Setting* s = settings::Find(raw_key);
  if (s == nullptr) {
    return Invalid("unknown setting '" + raw_key + "' (`timelake settings` lists them)");
  }
  return s;
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
    if (!settings::IsTimelakeKey(raw_key)) continue;
    // Keys a newer Timelake wrote are kept but do not stop this one reading.
    const settings::Setting* s = settings::Find(raw_key);
    if (s == nullptr) continue;
    TIMELAKE_RETURN_NOT_OK(settings::Validate(*s, value));
    const std::string_view name = s->name;
    if (name == "time-column") {
      if (!value.empty()) c.time_column = value;
    } else if (name == "series-key") {
      c.series_key = SplitList(value);
    } else if (name == "chunk") {
      TIMELAKE_ASSIGN_OR_RAISE(c.chunk, ParseChunk(Lower(value)));
    } else if (name == "dedup") {
      TIMELAKE_ASSIGN_OR_RAISE(c.dedup, settings::AsBool(*s, value));
    } else if (name == "ingest-time-column") {
      c.ingest_column = value;
    } else if (name == "compression-codec") {
      const std::string codec = Lower(value);
      c.compression = codec == "snappy" ? parquet::Compression::SNAPPY
                      : codec == "lz4"  ? parquet::Compression::LZ4
                      : codec == "gzip" ? parquet::Compression::GZIP
                      : codec == "zstd" ? parquet::Compression::ZSTD
                                        : parquet::Compression::UNCOMPRESSED;
    } else if (name == "compression-level") {
      TIMELAKE_ASSIGN_OR_RAISE(auto v, settings::AsInt(*s, value));
      if (v < 1 || v > 22) {
        return Invalid("setting " + s->PropertyKey() + " = '" + value +
                       "': expected a level from 1 to 22");
      }
      c.compression_level = static_cast<int>(v);
    } else if (name == "row-group-rows") {
      TIMELAKE_ASSIGN_OR_RAISE(c.row_group_rows, settings::AsInt(*s, value));
      if (c.row_group_rows < 1000) {
        return Invalid("setting " + s->PropertyKey() + " = '" + value +
                       "': expected at least 1000 rows");
      }
    } else if (name == "data-page-rows") {
      TIMELAKE_ASSIGN_OR_RAISE(c.data_page_rows, settings::AsInt(*s, value));
      if (c.data_page_rows < 100) {
        return Invalid("setting " + s->PropertyKey() + " = '" + value +
                       "': expected at least 100 rows");
      }
    }
  }
  if (c.compression == parquet::Compression::GZIP && c.compression_level > 9) {
    return Invalid(
        "setting timelake.compression-level = " + std::to_string(c.compression_level) +
        ": gzip takes a level from 1 to 9");
  }
  if (!c.time_column) c.ingest_column.clear();
  return c;
}

arrow::Result<std::string> AlterableKey(const std::string& raw_key) {
  if (raw_key.empty()) return Invalid("empty property name");
  if (!settings::IsTimelakeKey(raw_key)) return raw_key;
  TIMELAKE_ASSIGN_OR_RAISE(const auto* s, Known(raw_key));
  if (s->levels & settings::kManaged) {
    return Invalid("setting '" + raw_key + "' is managed by Timelake");
  }
  if (!(s->levels & settings::kTable)) {
    return Invalid(
        "setting '" + raw_key +
        "' is fixed when the table is created: it decides the layout of the data");
  }
  return s->PropertyKey();
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
    if (settings::IsTimelakeKey(raw_key)) {
      TIMELAKE_ASSIGN_OR_RAISE(const auto* s, Known(raw_key));
      if (s->levels & settings::kManaged) {
        return Invalid("setting '" + raw_key + "' is managed by Timelake");
      }
      if (!(s->levels & settings::kTable)) {
        // time-column, series-key, chunk: TableOptions says them once.
        return Invalid("setting '" + raw_key +
                       "' is given by the table options (time column, series key, "
                       "chunk), not as a property");
      }
      TIMELAKE_RETURN_NOT_OK(settings::Validate(*s, value));
      props[s->PropertyKey()] = value;
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
    if (options.dedup || !props.count(property::kDedup)) {
      const bool dedup = options.dedup.value_or(!options.series_key.empty());
      props[property::kDedup] = dedup ? "true" : "false";
    }
  } else if (!options.series_key.empty()) {
    return Invalid("a series key needs a time column");
  } else if (props.count(property::kDedup)) {
    return Invalid("setting timelake.dedup needs a time column");
  }
  // Validate the result as a whole (value formats).
  TIMELAKE_RETURN_NOT_OK(ParseContract(props).status());
  return props;
}

namespace {

// "MAJOR.MINOR.PATCH" (decimal, no sign), or nullopt.
std::optional<std::array<int, 3>> ParseSemver(std::string_view text) {
  std::array<int, 3> v{};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
    auto [next, ec] = std::from_chars(p, end, v[i]);
    if (ec != std::errc() || next == p || v[i] < 0) return std::nullopt;
    p = next;
  }
  if (p != end) return std::nullopt;
  return v;
}

}  // namespace

arrow::Result<int> CompareFormatVersions(std::string_view a, std::string_view b) {
  const auto x = ParseSemver(a.empty() ? "0.1.0" : a);
  const auto y = ParseSemver(b.empty() ? "0.1.0" : b);
  if (!x || !y) {
    return MakeError(ErrorKind::kCorrupt, "format version '" + std::string(x ? b : a) +
                                              "' is not MAJOR.MINOR.PATCH");
  }
  return *x < *y ? -1 : (*y < *x ? 1 : 0);
}

arrow::Status CheckFormatVersion(std::string_view table, std::string_view theirs,
                                 FormatAccess access, std::string_view ours) {
  const std::string_view given = theirs.empty() ? "0.1.0" : theirs;
  const auto t = ParseSemver(given);
  if (!t) {
    return MakeError(ErrorKind::kCorrupt,
                     "table " + std::string(table) + " has an unreadable " +
                         property::kFormatVersion + " '" + std::string(theirs) +
                         "' (expected MAJOR.MINOR.PATCH)");
  }
  const auto o = ParseSemver(ours);
  if (!o) return Invalid("this build's format version '" + std::string(ours) + "'");
  // Before 1.0 the minor is what breaks compatibility.
  const bool newer_major =
      (*t)[0] > (*o)[0] || ((*o)[0] == 0 && (*t)[0] == 0 && (*t)[1] > (*o)[1]);
  const bool newer_minor = (*t)[0] == (*o)[0] && (*t)[1] > (*o)[1];
  const std::string what = "table " + std::string(table) + " has Timelake format " +
                           std::string(given) + ", written by a newer Timelake than " +
                           "this build (format " + std::string(ours) + ")";
  if (newer_major) {
    return Unsupported(what + ", which cannot read it: upgrade Timelake");
  }
  if (newer_minor && access == FormatAccess::kWrite) {
    return Unsupported(what +
                       ", which reads it but does not write it: upgrade "
                       "Timelake to write to it");
  }
  return arrow::Status::OK();
}

}  // namespace timelake::internal
