// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// File pruning: a scan skips data files whose manifest statistics prove that
// no row can satisfy the query's filters. Pruning is only ever conservative
// (a file is kept unless the statistics rule it out), and DataFusion applies
// every filter again to the rows it reads, so answers never depend on it.

#ifndef TIMELAKE_READ_PRUNE_H_
#define TIMELAKE_READ_PRUNE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <arrow/type_fwd.h>
#include <nlohmann/json.hpp>

#include "timelake/format/manifest.h"
#include "timelake/status.h"

namespace timelake::read {

// One conjunct of a scan's filters, as the platform crate sends them
// (see plan_scan in timelake_platform.h).
struct Filter {
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kIsNull, kIsNotNull, kAny };
  using Value = std::variant<int64_t, double, std::string, bool>;
  std::string column;  // empty for kAny
  Op op = Op::kEq;
  std::vector<Value> values;  // one for comparisons, several for kIn, none for null tests
  // The literals' kind: "int", "float", "string", "bool", "timestamp_us" or "date".
  std::string kind;
  // kAny: groups of filters, one of which all match ({"op": "any", "of":
  // [[filter, …], …]}: a disjunction of conjunctions).
  std::vector<std::vector<Filter>> any;

  // The columns it reads.
  std::vector<std::string> Columns() const;
};

// Parses the "filters" of a plan_scan request. Conjuncts it does not
// understand are dropped (never pruning on them is always correct).
std::vector<Filter> ParseFilters(const nlohmann::json& request);

// Whether `file` may hold rows matching all `filters`. `schema` is the table
// schema with field ids.
bool MayMatch(const format::DataFile& file, const std::vector<Filter>& filters,
              const arrow::Schema& schema);

// Groups of files (indices into `files`, each group at least two files) that
// may hold rows with the same key (series…, time): their time ranges overlap
// and so do the ranges of the first series column. A file in no group shares
// no key with any other file, so dedup on read can leave it as it is. Files
// without usable bounds overlap everything of their time range (or every
// file, without time bounds).
std::vector<std::vector<size_t>> KeyOverlapGroups(
    const std::vector<const format::DataFile*>& files,
    const std::vector<std::string>& series_key, const std::string& time_column,
    const arrow::Schema& schema);

}  // namespace timelake::read

#endif  // TIMELAKE_READ_PRUNE_H_
