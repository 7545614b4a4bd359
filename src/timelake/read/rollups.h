// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// What a query needs to know of a table's materialized rollups (SPEC §8):
// their definitions, kept in each rollup table's properties in Timelake
// 0.7's layout, and how fresh each one is: the time ranges of the raw
// table whose rows a rollup does not reflect yet ("dirty": files committed
// or removed since the raw snapshot its last refresh read). The routing
// itself is the engine's (rust/src/routing.rs); refreshing is rollup/'s.
//
// Thread safety: the functions are pure, or read through the lake's caches.

#ifndef TIMELAKE_READ_ROLLUPS_H_
#define TIMELAKE_READ_ROLLUPS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelake/state/state.h"

namespace timelake::read {

// A rollup's time bucket: a fixed width (whole seconds, from the epoch, as
// Timelake 0.7 stores it) or whole calendar months (UTC, from 1970-01).
struct Bucket {
  int64_t width_us = 0;  // fixed width; 0 for months
  int64_t months = 0;    // months; 0 for a fixed width

  // The start of the bucket holding `t` (microseconds since the epoch) and
  // of the one after the bucket starting at `start`.
  int64_t Floor(int64_t t) const;
  int64_t Next(int64_t start) const;
  // The smallest bucket start at or after `t`.
  int64_t Ceil(int64_t t) const;

  // "1h", "90m", "7d", "2s" (the largest unit that divides it, as 0.7
  // writes timelake.rollup-bucket), or "1mo", "3mo" for months.
  std::string ToText() const;
  // The inverse of ToText (also "15 minutes" and the other forms of
  // ParseDuration). Errors: kInvalid naming the text.
  static arrow::Result<Bucket> Parse(std::string_view text);
  // The bucket expression of the rollup's refresh over `time_sql` (a quoted
  // column), e.g. date_bin(INTERVAL '3600 seconds', "time").
  std::string Sql(const std::string& time_sql) const;
  // As the engine reads it (timelake_platform.h, the `rollups` answer).
  nlohmann::json ToJson() const;

  bool operator==(const Bucket&) const = default;
};

// One stored aggregate, as 0.7 lists them in timelake.rollup-aggregates:
// {"name": column, "function": "count" | "sum" | "min" | "max" | "avg" |
// "first_value" | "last_value" | "m4" | "time_weighted_mean" |
// "time_weighted_mean:linear", "column": raw column (absent: count(*))}.
struct RollupAggregate {
  std::string name;
  std::string function;
  std::optional<std::string> column;

  bool operator==(const RollupAggregate&) const = default;
};

// A rollup's definition, from its table's properties.
struct RollupDefinition {
  std::string source;               // the raw table, "ns.table"
  std::vector<std::string> groups;  // = the rollup's series key
  std::string bucket_column;        // = the rollup's time column
  Bucket bucket;
  std::vector<RollupAggregate> aggregates;
};

// The definition of a rollup table, nullopt for a table that is not one (no
// timelake.rollup-source). Errors: kCorrupt naming the property that does not
// parse.
arrow::Result<std::optional<RollupDefinition>> RollupDefinitionOf(
    const internal::TableState& table);

// The JSON text of timelake.rollup-aggregates.
std::string AggregatesJson(const std::vector<RollupAggregate>& aggregates);

// The rollups a raw table lists (timelake.rollups), as written.
std::vector<std::string> RollupNamesOf(const format::TableMetadata& metadata);

// The raw snapshot a rollup's rows reflect: the summary keys of the newest
// snapshot in its current history that has them (none: never refreshed).
struct RollupSource {
  int64_t snapshot_id = 0;
  int64_t sequence_number = 0;
};
std::optional<RollupSource> RollupSourceOf(const internal::TableState& rollup);

// A time range [lo, hi) in microseconds; nullopt ends are unbounded.
struct TimeRange {
  std::optional<int64_t> lo, hi;
};

// The field id of a table's time column (none: no time column, or no id).
std::optional<int> TimeColumnId(const internal::TableState& table);

// The time range of a data file: its bounds on the column `time_id`, else
// the whole axis.
TimeRange RangeOf(const format::DataFile& file, std::optional<int> time_id);

// What changed in a raw table since `source`: the time ranges of the data
// files committed since (`added`) and of those removed since other than by
// compaction (`removed`: deletes, retention, a rollback). A "replace"
// snapshot (compaction) changes no row and adds nothing. `rebuild` when the
// source snapshot is not in the table's metadata any more (or the history
// cannot be followed to it): nothing of the rollup can be trusted. Ranges
// are merged and sorted; a file without time bounds makes an unbounded one.
struct Changes {
  bool rebuild = false;
  std::vector<TimeRange> added;
  std::vector<TimeRange> removed;
  bool empty() const { return !rebuild && added.empty() && removed.empty(); }
};
// Errors: those of reading manifests (kStorage, kCorrupt).
arrow::Result<Changes> ChangesSince(const internal::TableState& raw,
                                    const RollupSource& source);

// The answer to the engine's `rollups` request for `raw` (JSON text, laid
// out in timelake_platform.h): each listed rollup with its definition and
// dirty ranges, or unusable; `routing` from timelake.rollup-routing (the
// session's `settings`, then the table's). Rollups that cannot be loaded
// are unusable, not errors: the query then reads raw data.
std::string RollupsAnswer(const internal::TableState& raw,
                          const std::map<std::string, std::string>& settings);

}  // namespace timelake::read

#endif  // TIMELAKE_READ_ROLLUPS_H_
