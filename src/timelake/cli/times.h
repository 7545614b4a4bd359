// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// How the times of an input file become a table's timestamps: epoch numbers
// in the unit the user names, text in the common forms (with or without a
// zone), times finer than the table keeps. The library stores what it is
// given; the CLI decides here what a CSV's `1796295640` means, so it never
// lands silently in 1970.
//
//   TimeReading reading(*table.schema(), args);
//   ARROW_ASSIGN_OR_RAISE(batch, reading.Convert(batch));   // per batch
//   for (const auto& note : reading.notes()) ...            // at the end

#ifndef TIMELAKE_CLI_TIMES_H_
#define TIMELAKE_CLI_TIMES_H_

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

namespace timelake::cli {

// The user's say on the input's times (--time-unit, --time-zone,
// --truncate-time).
struct TimeArgs {
  // What epoch numbers count; numbers for a timestamp column are refused
  // without it.
  std::optional<arrow::TimeUnit::type> unit;
  // The zone of times written without one; UTC when not given.
  std::optional<std::string> zone;
  // Drops what is finer than a microsecond instead of refusing it.
  bool truncate = false;
};

// "s", "ms", "us", "ns". Errors: a usage error naming the text.
arrow::Result<arrow::TimeUnit::type> ParseTimeUnit(std::string_view text);

// The schema a table created from a file of schema `file` takes: with a unit,
// numeric `time_column` becomes a UTC timestamp. Errors: Invalid when the time
// column holds numbers and no unit is given.
arrow::Result<std::shared_ptr<arrow::Schema>> CreationSchema(
    const arrow::Schema& file, const std::optional<std::string>& time_column,
    const TimeArgs& args);

// Converts the columns of input batches that the table stores as timestamps.
// Not thread-safe.
class TimeReading {
 public:
  TimeReading(std::shared_ptr<arrow::Schema> table_schema, TimeArgs args);

  // `batch` with its time columns as the table's timestamps; other columns
  // as they are. `first_row` is the batch's first row in its file, for
  // errors. Errors: Invalid naming the column and the first value that cannot
  // be read, and what to pass to read it.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Convert(
      const std::shared_ptr<arrow::RecordBatch>& batch, int64_t first_row);

  // What was assumed, once per column, e.g. "column 'ts': times without a
  // zone were read as UTC (--time-zone ZONE says otherwise)".
  std::vector<std::string> notes() const;

 private:
  arrow::Result<std::shared_ptr<arrow::Array>> ConvertColumn(
      const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
      int64_t first_row);
  // Epoch numbers in the unit given, as microseconds.
  arrow::Result<std::shared_ptr<arrow::Array>> FromNumbers(
      const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
      int64_t first_row);
  // Text in the forms FromText's error names.
  arrow::Result<std::shared_ptr<arrow::Array>> FromText(
      const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
      int64_t first_row);
  // Zone-less times (`local`) as instants in the --time-zone zone.
  arrow::Result<std::shared_ptr<arrow::Array>> Assume(
      const std::shared_ptr<arrow::Array>& local, const std::string& name,
      int64_t first_row);
  // Timestamps of any unit and zone to microseconds in UTC (or naive, for a
  // naive table column).
  arrow::Result<std::shared_ptr<arrow::Array>> ToMicros(
      const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
      int64_t first_row);

  std::shared_ptr<arrow::Schema> table_schema_;
  TimeArgs args_;
  std::set<std::string> assumed_zone_;  // columns with zone-less times
  std::set<std::string> truncated_;     // columns cut to microseconds
};

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_TIMES_H_
