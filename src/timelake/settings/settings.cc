// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include "timelake/timelake.h"

namespace timelake::settings {

namespace {

constexpr unsigned kCT = kCreate | kTable;
constexpr unsigned kCTS = kCreate | kTable | kSession;
constexpr unsigned kCTK = kCreate | kTable | kCall;

// Timelake 0.7's format is 0.3.0; every setting below is understood by it
// except those marked 0.3.0-cpp, which only this implementation reads (0.7
// refuses them as unknown when it alters such a table, and ignores them when
// it reads one).
constexpr std::string_view k030 = "0.3.0";

// Declared ahead of its feature (Setting::implemented): kept because SPEC §4.3
// lists it and Timelake 0.7 tables may carry it, but nothing reads it yet.
// ("", "": no choices, the default property key.)
constexpr bool kNotYet = false;

constexpr std::array kSettings = {
    // Layout, fixed when the table is created.
    Setting{"time-column", Type::kString, "", kCreate, k030,
            "the timestamp column; makes a time-series table (NOT NULL)"},
    Setting{"series-key", Type::kList, "", kCreate, k030,
            "comma-separated columns that identify a series"},
    Setting{"chunk", Type::kEnum, "day", kCreate, k030,
            "time partition size (Iceberg hour/day/month transform of the time column)",
            "hour|day|month", "timelake.chunk-interval"},
    Setting{"ingest-time-column", Type::kString, "_ingest_ts", kCreate | kManaged, k030,
            "insertion-time column stamped by every append (time-series tables)"},
    Setting{"dedup", Type::kBool, "", kCT, k030,
            "one row per (series, time): the latest write wins (the tie rule)"},
    // Data files.
    Setting{"row-group-rows", Type::kInt, "1048576", kCT, k030,
            "rows per Parquet row group"},
    Setting{"data-page-rows", Type::kInt, "20000", kCT, k030,
            "rows per Parquet data page (the page index prunes pages of this size)"},
    Setting{"compression-codec", Type::kEnum, "zstd", kCT, "0.3.0-cpp",
            "Parquet compression codec", "zstd|snappy|lz4|gzip|uncompressed"},
    Setting{"compression-level", Type::kInt, "3", kCT, "0.3.0-cpp",
            "Parquet compression level (zstd 1-22, gzip 1-9)"},
    Setting{"target-file-size", Type::kBytes, "128MiB", kCTK, "0.3.0-cpp",
            "size of the files compaction writes"},
    // Maintenance kept by the writer.
    Setting{"auto-maintain", Type::kBool, "true", kCTK, k030,
            "appends run bounded maintenance inline when thresholds are crossed"},
    Setting{"compact-min-files", Type::kInt, "2", kCTK, k030,
            "small files in a partition before appends compact it (by size tier)"},
    Setting{"compact-cold-after", Type::kDuration, "1h", kCTK, k030,
            "compact a partition once newer data is this far past its end"},
    Setting{"retention", Type::kDuration, "", kCTK, k030,
            "drop partitions entirely older than now minus this (none: keep all)"},
    Setting{"snapshot-retention", Type::kDuration, "7d", kCTK, k030,
            "expire snapshots older than this"},
    Setting{"min-snapshots", Type::kInt, "1", kCTK, k030,
            "always keep at least this many newest snapshots"},
    Setting{"max-snapshots", Type::kInt, "100", kCTK, k030,
            "keep at most this many snapshots"},
    Setting{"keep-snapshots-until", Type::kInt, "0", kCTK, k030,
            "no snapshot expires while now is before this (Unix epoch ms; 0: none)"},
    // Reading.
    Setting{"read-dedup", Type::kBool, "true", kCTS, k030,
            "dedup tables are deduplicated on read by the tie rule"},
    Setting{"read-dedup-strategy", Type::kEnum, "merge", kCTS, k030,
            "how files that may share keys are combined on read", "merge|keys-first", "",
            kNotYet},
    Setting{"filter-pushdown", Type::kEnum, "auto", kCTS, k030,
            "prune files with the query's filters (false: none); evaluate them row "
            "by row in the scan (true; auto: where every file is sorted)",
            "auto|true|false"},
    Setting{"in-list-pruning", Type::kBool, "true", kCTS, k030,
            "prune files with IN lists of any length"},
    Setting{"newest-first", Type::kBool, "true", kCTS, k030,
            "ORDER BY time DESC LIMIT k reads the newest partitions first"},
    Setting{"time-weighted-mean", Type::kEnum, "auto", kCTS, k030,
            "how time-weighted means get each series' readings in time order: merged "
            "sorted files (auto, merge: also sorts), or segments as they come (segments)",
            "auto|segments|merge"},
    Setting{"version-check-interval", Type::kDuration, "1s", kCTS, k030,
            "how long a loaded table version is reused before checking for a newer one"},
    // The head object.
    Setting{"head-format", Type::kEnum, "arrow", kCT, k030,
            "codec of metadata/timelake-head (none: write no head)", "arrow|json|none"},
    Setting{"head-inline-bytes", Type::kBytes, "1048576", kCT, k030,
            "size limit for inlining the last-value index and footers in the head"},
    // Rollups (SPEC §8, docs/sql.md; the property and summary keys are
    // Timelake 0.7's).
    Setting{"rollups", Type::kList, "", kManaged, k030,
            "on a raw table: the rollup tables kept from it"},
    Setting{"rollup-routing", Type::kBool, "true", kCTS, k030,
            "GROUP BY time_bucket queries read the buckets rollups cover from them"},
    Setting{
        "rollup-refresh-interval", Type::kDuration, "5m", kCT, k030,
        "an append refreshes a rollup once this long has passed since its last refresh "
        "(set on a raw table or on a rollup)"},
    Setting{"rollup-source", Type::kString, "", kManaged, k030,
            "on a rollup table: its raw table"},
    Setting{"rollup-bucket", Type::kString, "", kManaged, k030,
            "on a rollup table: its bucket (1h, 15m, 7d; 1mo for calendar months)"},
    Setting{"rollup-aggregates", Type::kString, "", kManaged, k030,
            "on a rollup table: its aggregate columns (JSON)"},
    // Versioning.
    Setting{"format-version", Type::kString, kFormatVersion, kManaged, k030,
            "Timelake table format version (semver) the table was written with"},
};

std::string Canonical(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

arrow::Status Expected(const Setting& s, std::string_view value, std::string_view what) {
  return Invalid("setting " + s.PropertyKey() + " = '" + std::string(value) +
                 "': expected " + std::string(what));
}

// "128MiB", "64 KiB", "1GB", "1048576".
std::optional<int64_t> ParseBytes(std::string_view text) {
  size_t i = 0;
  uint64_t number = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (number > (std::numeric_limits<uint64_t>::max() - 9) / 10) return std::nullopt;
    number = number * 10 + static_cast<uint64_t>(text[i++] - '0');
  }
  if (i == 0) return std::nullopt;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string unit = Lower(text.substr(i));
  uint64_t scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kb") scale = 1000;
  if (unit == "kib") scale = 1ull << 10;
  if (unit == "m" || unit == "mb") scale = 1000 * 1000;
  if (unit == "mib") scale = 1ull << 20;
  if (unit == "g" || unit == "gb") scale = 1000 * 1000 * 1000;
  if (unit == "gib") scale = 1ull << 30;
  if (scale == 0) return std::nullopt;
  if (number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / scale)
    return std::nullopt;
  return static_cast<int64_t>(number * scale);
}

std::optional<int64_t> ParseCount(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "integer";
    case Type::kBytes:
      return "bytes";
    case Type::kDuration:
      return "duration";
    case Type::kEnum:
      return "enum";
    case Type::kString:
      return "string";
    case Type::kList:
      return "list";
  }
  return "?";
}

std::string LevelNames(unsigned levels) {
  std::string out;
  auto add = [&](unsigned bit, const char* name) {
    if (levels & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  };
  add(kCreate, "create");
  add(kTable, "table");
  add(kSession, "session");
  add(kCall, "call");
  add(kManaged, "managed");
  return out;
}

std::string Setting::PropertyKey() const {
  if (!property_key.empty()) return std::string(property_key);
  return "timelake." + std::string(name);
}

std::string Setting::SqlName() const {
  std::string out = "timelake." + std::string(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

std::span<const Setting> All() { return kSettings; }

bool IsTimelakeKey(std::string_view key) {
  return Canonical(key.substr(0, 9)) == "timelake.";
}

const Setting* Find(std::string_view any_spelling) {
  std::string key = Canonical(any_spelling);
  if (key.rfind("timelake.", 0) == 0) key.erase(0, 9);
  if (key == "chunk-interval") key = "chunk";
  for (const auto& s : kSettings) {
    if (s.name == key) return &s;
  }
  return nullptr;
}

arrow::Status Validate(const Setting& s, std::string_view value) {
  switch (s.type) {
    case Type::kBool:
      return AsBool(s, value).status();
    case Type::kInt:
    case Type::kBytes:
      return AsInt(s, value).status();
    case Type::kDuration:
      return AsMillis(s, value).status();
    case Type::kEnum: {
      const std::string v = Lower(value);
      std::string_view rest = s.choices;
      while (!rest.empty()) {
        const size_t bar = rest.find('|');
        if (rest.substr(0, bar) == v) return arrow::Status::OK();
        rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
      }
      std::string choices(s.choices);
      std::replace(choices.begin(), choices.end(), '|', ',');
      return Expected(s, value, "one of " + choices);
    }
    case Type::kString:
    case Type::kList:
      return arrow::Status::OK();
  }
  return arrow::Status::OK();
}

arrow::Result<bool> AsBool(const Setting& s, std::string_view value) {
  const std::string v = Lower(value);
  if (v == "true" || v == "on" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "off" || v == "0" || v == "no") return false;
  return Expected(s, value, "true or false");
}

arrow::Result<int64_t> AsInt(const Setting& s, std::string_view value) {
  if (s.type == Type::kBytes) {
    if (auto v = ParseBytes(value)) return *v;
    return Expected(s, value, "a size such as 134217728, 128MiB or 64KiB");
  }
  if (auto v = ParseCount(value)) return *v;
  return Expected(s, value, "a non-negative integer");
}

arrow::Result<int64_t> AsMillis(const Setting& s, std::string_view value) {
  auto d = ParseDuration(value);
  if (!d.ok()) return Expected(s, value, "a duration such as 90d, 12h, 30m or 45s");
  return d->count();
}

Resolver::Resolver(const std::map<std::string, std::string>* call,
                   const std::map<std::string, std::string>* session,
                   const std::map<std::string, std::string>* table)
    : levels_{call, session, table} {}

std::optional<std::string> Resolver::Get(const Setting& setting) const {
  for (const auto* level : levels_) {
    if (level == nullptr) continue;
    for (const auto& [key, value] : *level) {
      if (Find(key) == &setting) return value;
    }
  }
  if (setting.default_value.empty()) return std::nullopt;
  return std::string(setting.default_value);
}

std::optional<std::string> Resolver::Get(std::string_view name) const {
  const Setting* s = Find(name);
  return s == nullptr ? std::nullopt : Get(*s);
}

arrow::Result<bool> Resolver::GetBool(std::string_view name) const {
  const Setting* s = Find(name);
  if (s == nullptr) return Invalid("unknown setting '" + std::string(name) + "'");
  const auto v = Get(*s);
  if (!v) return false;
  return AsBool(*s, *v);
}

arrow::Result<int64_t> Resolver::GetInt(std::string_view name) const {
  const Setting* s = Find(name);
  if (s == nullptr) return Invalid("unknown setting '" + std::string(name) + "'");
  const auto v = Get(*s);
  if (!v) return 0;
  return AsInt(*s, *v);
}

std::string Markdown() {
  std::string out =
      "# Settings\n\n"
      "Generated by `timelake settings --format markdown` from the settings registry\n"
      "(`src/timelake/settings/settings.cc`); do not edit by hand.\n\n"
      "Every setting has one kebab-case name. As a table property it is\n"
      "`timelake.<name>`, in SQL `timelake.<name_with_underscores>`; lookup accepts\n"
      "both, and the bare name, in any case. Unknown `timelake.*` keys are an error;\n"
      "other keys are plain Iceberg properties.\n\n"
      "Levels: **create** (table options when the table is made), **table** (a\n"
      "property, changeable with `timelake alter`), **session** (`SET timelake.x = …`,\n"
      "`--set`, `SessionSettings`), **call** (an options struct of one call),\n"
      "**managed** (written by Timelake). Precedence: call > session > table >\n"
      "default.\n\n"
      "Settings marked *not implemented yet* are declared ahead of their feature:\n"
      "they are validated and stored (Timelake 0.7 tables may carry them), but\n"
      "nothing reads them yet.\n\n"
      "| setting | SQL name | type | default | levels | since | description |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const auto& s : kSettings) {
    std::string type(TypeName(s.type));
    if (!s.choices.empty()) {
      std::string choices(s.choices);
      std::replace(choices.begin(), choices.end(), '|', ',');
      type += " (" + choices + ")";
    }
    std::string def =
        s.default_value.empty() ? "none" : "`" + std::string(s.default_value) + "`";
    if (s.name == "dedup") def = "`true` with a series key";
    out += "| `" + s.PropertyKey() + "` | `" + s.SqlName() + "` | " + type + " | " + def +
           " | " + LevelNames(s.levels) + " | " + std::string(s.since) + " | " +
           (s.implemented ? "" : "*not implemented yet:* ") + std::string(s.description) +
           " |\n";
  }
  return out;
}

}  // namespace timelake::settings
