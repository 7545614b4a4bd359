// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A materialized rollup's definition (SPEC §8), as it is stored in the
// rollup table's properties in Timelake 0.7's layout: the raw table
// (timelake.rollup-source), the time bucket (timelake.rollup-bucket, e.g.
// "1h"), the stored aggregates (timelake.rollup-aggregates, a JSON array)
// and, from the table's contract, the grouping columns (its series key) and
// the bucket column (its time column). These are bytes another writer (0.7,
// or a damaged table) may have stored: the decoder accepts any text and
// answers a definition or kCorrupt, never more (fuzz/rollup_definition_fuzz.cc).
//
// Thread safety: everything here is pure.

#ifndef TIMELAKE_READ_ROLLUP_DEFINITION_H_
#define TIMELAKE_READ_ROLLUP_DEFINITION_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelake/settings/contract.h"
#include "timelake/timelake.h"

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

// The definition of a rollup table `table` from its `properties` and the
// contract read from them (internal::ParseContract), nullopt for a table that
// is not one (no timelake.rollup-source). Errors: kCorrupt naming the table
// and the property that does not parse.
arrow::Result<std::optional<RollupDefinition>> RollupDefinitionOf(
    const TableName& table, const std::map<std::string, std::string>& properties,
    const internal::Contract& contract);

// The rollup properties of `def` (timelake.rollup-source, -bucket,
// -aggregates), as CREATE MATERIALIZED ROLLUP stores them: the inverse of
// RollupDefinitionOf (the groups and bucket column are the rollup table's
// series key and time column, its contract).
std::map<std::string, std::string> RollupProperties(const RollupDefinition& def);

// The JSON text of timelake.rollup-aggregates.
std::string AggregatesJson(const std::vector<RollupAggregate>& aggregates);

}  // namespace timelake::read

#endif  // TIMELAKE_READ_ROLLUP_DEFINITION_H_
