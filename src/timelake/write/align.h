// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Schema normalisation for new tables and batch alignment for appends
// (SPEC §4.4).

#ifndef TIMELAKE_WRITE_ALIGN_H_
#define TIMELAKE_WRITE_ALIGN_H_

#include <memory>
#include <optional>
#include <string>

#include <arrow/type.h>

#include "timelake/status.h"

namespace timelake::write {

// The column Timelake stamps with the insertion time.
inline constexpr char kIngestColumn[] = "_ingest_ts";

// The Arrow type a column of `type` is stored as in a new table: timestamps in
// microseconds (zoned ones UTC), small ints int32, uint32 int64, dictionaries
// their value type, large/view strings utf8, large/view binary binary,
// float16 float32, date64 date32, times time64[us].
arrow::Result<std::shared_ptr<arrow::DataType>> StoredType(
    const std::shared_ptr<arrow::DataType>& type, const std::string& column);

// Normalises a user schema for a new table: stored types; the time column (if
// any) a NOT NULL UTC timestamp (a text time column becomes one too); and,
// for time-series tables, `ingest_column` appended as a NOT NULL UTC
// timestamp. Errors: kInvalid naming the column (missing time column, time
// column of a non-time type, a user column named like the ingest column,
// duplicate names, series key columns missing).
arrow::Result<std::shared_ptr<arrow::Schema>> NormalizeSchema(
    const arrow::Schema& schema, const std::optional<std::string>& time_column,
    const std::vector<std::string>& series_key, const std::string& ingest_column);

}  // namespace timelake::write

#endif  // TIMELAKE_WRITE_ALIGN_H_
