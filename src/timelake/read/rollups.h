// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// What a query needs to know of a table's materialized rollups (SPEC §8):
// their definitions, kept in each rollup table's properties in Timelake
// 0.7's layout, and how fresh each one is: the time ranges of the raw
// table whose rows a rollup does not reflect yet ("dirty": files committed
// or removed since the raw snapshot its last refresh read). The routing
// itself is the engine's (rust/src/routing.rs); refreshing is rollup/'s.
// A definition's decoder, of bytes as stored, is rollup_definition.h's.
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

#include "timelake/read/rollup_definition.h"
#include "timelake/state/state.h"

namespace timelake::read {

// RollupDefinitionOf (rollup_definition.h) of a loaded table: its name,
// properties and contract.
arrow::Result<std::optional<RollupDefinition>> RollupDefinitionOf(
    const internal::TableState& table);

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
