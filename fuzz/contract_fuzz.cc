// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes what is read from a table's stored properties (any writer's: ours,
// Timelake 0.7's, another engine's; `timelake upgrade` adopts the last):
// the settings registry's lookup and value checks (include/timelake/
// settings.h), the table contract (src/timelake/settings/contract.h:
// ParseContract, AlterableKey) and the format version
// (CompareFormatVersions, CheckFormatVersion). The input is a JSON object
// as the "properties" of table metadata (string values; others skipped).
// Invariants: errors are kInvalid (values), kCorrupt (an unreadable format
// version) or kUnsupported (a newer format); a value Validate accepts is
// read by its typed reader; an alterable key is the setting's own property
// key; a format no newer than ours is writable; and a parsed contract,
// given back as TableOptions, makes properties that parse to it again.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "timelake/settings.h"
#include "timelake/settings/contract.h"

namespace {

using timelake::ErrorKind;
namespace internal = timelake::internal;
namespace settings = timelake::settings;

void CheckSetting(const std::string& key, const std::string& value) {
  if (!settings::IsTimelakeKey(key)) {
    auto alterable = internal::AlterableKey(key);
    TL_FUZZ_CHECK(key.empty() ? !alterable.ok() : alterable.ok() && *alterable == key,
                  "a plain property key '%s' is not kept as it is", key.c_str());
    return;
  }
  const settings::Setting* s = settings::Find(key);
  auto alterable = internal::AlterableKey(key);
  if (s == nullptr) {
    timelake::fuzz::CheckErrorKind(alterable.status(), {ErrorKind::kInvalid});
    return;
  }
  if (alterable.ok()) {
    TL_FUZZ_CHECK(*alterable == s->PropertyKey() && settings::Find(*alterable) == s,
                  "'%s' is altered as '%s'", key.c_str(), alterable->c_str());
  } else {
    timelake::fuzz::CheckErrorKind(alterable.status(), {ErrorKind::kInvalid});
  }
  auto valid = settings::Validate(*s, value);
  if (!valid.ok()) {
    timelake::fuzz::CheckErrorKind(valid, {ErrorKind::kInvalid});
    return;
  }
  switch (s->type) {
    case settings::Type::kBool:
      TL_FUZZ_CHECK(settings::AsBool(*s, value).ok(), "%s = '%s' valid but no bool",
                    key.c_str(), value.c_str());
      break;
    case settings::Type::kInt:
    case settings::Type::kBytes: {
      auto n = settings::AsInt(*s, value);
      TL_FUZZ_CHECK(n.ok() && *n >= 0, "%s = '%s' valid but no size", key.c_str(),
                    value.c_str());
      break;
    }
    case settings::Type::kDuration: {
      auto ms = settings::AsMillis(*s, value);
      TL_FUZZ_CHECK(ms.ok() && *ms >= 0, "%s = '%s' valid but no duration", key.c_str(),
                    value.c_str());
      break;
    }
    default:
      break;
  }
}

void CheckFormat(const std::string& version) {
  auto order = internal::CompareFormatVersions(version, timelake::kFormatVersion);
  auto write = internal::CheckFormatVersion("t", version, internal::FormatAccess::kWrite);
  auto read = internal::CheckFormatVersion("t", version, internal::FormatAccess::kRead);
  if (!order.ok()) {
    timelake::fuzz::CheckErrorKind(order.status(), {ErrorKind::kCorrupt});
    TL_FUZZ_CHECK(!read.ok() && timelake::KindOf(read) == ErrorKind::kCorrupt,
                  "'%s' is unreadable but checks as a format", version.c_str());
    return;
  }
  if (*order <= 0) {
    TL_FUZZ_CHECK(write.ok() && read.ok(), "format '%s' is not newer but refused: %s",
                  version.c_str(), write.ToString().c_str());
  }
  if (!read.ok()) timelake::fuzz::CheckErrorKind(read, {ErrorKind::kUnsupported});
  if (!write.ok()) timelake::fuzz::CheckErrorKind(write, {ErrorKind::kUnsupported});
  TL_FUZZ_CHECK(read.ok() || !write.ok(), "'%s' is writable but not readable",
                version.c_str());
}

std::string CodecName(parquet::Compression::type codec) {
  switch (codec) {
    case parquet::Compression::SNAPPY:
      return "snappy";
    case parquet::Compression::LZ4:
      return "lz4";
    case parquet::Compression::GZIP:
      return "gzip";
    case parquet::Compression::ZSTD:
      return "zstd";
    default:
      return "uncompressed";
  }
}

// The contract given back as the options of a new table.
void CheckRoundTrip(const internal::Contract& c) {
  timelake::TableOptions options;
  options.time_column = c.time_column;
  options.series_key = c.series_key;
  options.chunk = c.chunk;
  if (c.time_column) options.dedup = c.dedup;
  options.properties = {
      {"timelake.compression-codec", CodecName(c.compression)},
      {"timelake.compression-level", std::to_string(c.compression_level)},
      {"timelake.row-group-rows", std::to_string(c.row_group_rows)},
      {"timelake.data-page-rows", std::to_string(c.data_page_rows)},
  };
  auto props = internal::NewTableProperties(options);
  if (!c.time_column && !c.series_key.empty()) {
    timelake::fuzz::CheckErrorKind(props.status(), {ErrorKind::kInvalid});
    return;
  }
  TL_FUZZ_CHECK(props.ok(), "a parsed contract makes no table: %s",
                props.status().ToString().c_str());
  auto again = internal::ParseContract(*props);
  TL_FUZZ_CHECK(again.ok(), "new table properties do not parse: %s",
                again.status().ToString().c_str());
  TL_FUZZ_CHECK(again->time_column == c.time_column &&
                    again->series_key == c.series_key &&
                    again->compression == c.compression &&
                    again->compression_level == c.compression_level &&
                    again->row_group_rows == c.row_group_rows &&
                    again->data_page_rows == c.data_page_rows,
                "the contract does not round-trip");
  if (c.time_column) {
    TL_FUZZ_CHECK(again->chunk == c.chunk && again->dedup == c.dedup &&
                      again->ingest_column == "_ingest_ts",
                  "the time-series contract does not round-trip");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(
      timelake::fuzz::AsText(data, size), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return 0;
  std::map<std::string, std::string> props;
  for (const auto& [key, value] : doc.items()) {
    if (value.is_string()) props[key] = value.get<std::string>();
  }
  for (const auto& [key, value] : props) {
    CheckSetting(key, value);
    if (settings::Find(key) == settings::Find("format-version")) CheckFormat(value);
  }
  auto contract = internal::ParseContract(props);
  if (!contract.ok()) {
    timelake::fuzz::CheckErrorKind(contract.status(), {ErrorKind::kInvalid});
    return 0;
  }
  CheckRoundTrip(*contract);
  return 0;
}
