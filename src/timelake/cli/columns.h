// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Column types the user gives `create` and `append --create` instead of
// inference: `--column NAME:TYPE` for some columns, `--schema FILE` for all.
// A schema file holds one column per line, in table order:
//
//   # readings of the plant's sensors
//   ts: timestamp not null
//   sensor: string
//   value: double
//
// NAME:TYPE splits at the last ':', so a name may hold one; spaces around
// either part are dropped. The types (case-insensitive) and their aliases:
//   int32 (int, integer), int64 (bigint, long), float32 (real),
//   float64 (double, float), string (text, varchar, utf8), bool (boolean),
//   timestamp (microseconds, UTC), date32 (date), decimal(P,S) (128-bit,
//   precision 1 to 38; spaces inside the parentheses are fine).

#ifndef TIMELAKE_CLI_COLUMNS_H_
#define TIMELAKE_CLI_COLUMNS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/result.h>
#include <arrow/type.h>

namespace timelake::cli {

// The Arrow type of a type name above. Errors: a usage error naming the
// text and the names known.
arrow::Result<std::shared_ptr<arrow::DataType>> ParseColumnType(std::string_view text);

// The name ParseColumnType knows `type` by first ("float64"), or Arrow's
// name of it for a type it does not know.
std::string ColumnTypeName(const arrow::DataType& type);

// The fields of --column NAME:TYPE flags (nullable), in the order given.
// Errors: a usage error naming the flag for a missing ':' or name, an
// unknown type, or a column given twice.
arrow::Result<std::vector<std::shared_ptr<arrow::Field>>> ParseColumnFlags(
    const std::vector<std::string>& flags);

// The schema of a --schema file: one NAME:TYPE per line, optionally
// followed by "not null"; blank lines and what follows a '#' are ignored.
// Errors: IOError when it cannot be read; a usage error naming the file and
// line of a bad line or a column given twice, or for a file of no columns.
arrow::Result<std::shared_ptr<arrow::Schema>> ReadSchemaFile(const std::string& path);

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_COLUMNS_H_
