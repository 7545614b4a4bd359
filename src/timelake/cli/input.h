// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The input files of `create` and `append`: Parquet, CSV, TSV and NDJSON
// (text optionally gzipped), read as Arrow record batches with bounded memory
// (a few blocks of a few MiB per open file).
//
//   ARROW_ASSIGN_OR_RAISE(InputSpec spec, DescribeInput(path, std::nullopt));
//   ARROW_ASSIGN_OR_RAISE(auto input, OpenInput(spec, table_schema));
//   while (true) {
//     ARROW_ASSIGN_OR_RAISE(auto batch, input->Next());
//     if (batch == nullptr) break;
//     ...
//   }

#ifndef TIMELAKE_CLI_INPUT_H_
#define TIMELAKE_CLI_INPUT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>

namespace timelake::cli {

enum class InputFormat { kParquet, kCsv, kTsv, kNdjson };

// "parquet", "csv", "tsv", "ndjson" (also "jsonl", "json"). Errors: a usage
// error naming the text.
arrow::Result<InputFormat> ParseInputFormat(std::string_view text);

// One input file, described before anything is read from it.
struct InputSpec {
  std::string path;
  InputFormat format = InputFormat::kCsv;
  // Text compressed with gzip (the name ends in ".gz").
  bool gzip = false;
  // Bytes of the file as stored (compressed, when gzipped).
  int64_t size = 0;
};

// Describes the file at `path`: its size, and its format from the name
// ("x.csv.gz" is gzipped CSV) unless `forced`. Errors: IOError when the file
// cannot be read, a usage error when the name tells no format, Invalid for
// gzipped Parquet.
arrow::Result<InputSpec> DescribeInput(const std::string& path,
                                       const std::optional<InputFormat>& forced);

// Record batches of one input file, read with bounded memory. Not
// thread-safe.
class InputFile {
 public:
  virtual ~InputFile() = default;
  virtual std::shared_ptr<arrow::Schema> schema() const = 0;
  // The next batch, or nullptr at the end.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() = 0;
  // Bytes of the file consumed so far (for progress).
  virtual int64_t bytes_done() const = 0;
};

// Opens the file `spec` describes. `table_schema`, when given (appending to
// an existing table), fixes the types of the text formats' columns where
// inference could guess wrong; it must outlive the call only. Errors: those
// of the Arrow readers, with the path as context.
arrow::Result<std::unique_ptr<InputFile>> OpenInput(const InputSpec& spec,
                                                    const arrow::Schema* table_schema);

// A column whose first rows (the block Arrow infers types from, 8 MiB of
// text) suggest a narrower type than the whole file holds.
struct Widening {
  std::string column;
  std::shared_ptr<arrow::DataType> first;  // inferred from the first rows
  std::shared_ptr<arrow::DataType> type;   // holds every value of the file
  // The first row (from 1, the header not counted) that `first` cannot hold,
  // and its text; 0 and "" when `first` is the null type (no values).
  int64_t row = 0;
  std::string value;
};

// Type inference over the whole of a CSV or TSV regular file, for a table
// created from it: a later `51.0` in a column whose first million rows are
// integers must not fail the import after the table is made. `first` is the
// schema OpenInput inferred (from the first rows). Only columns Arrow may
// have guessed too narrow are read again, as text, over the whole file:
// int64 widens to float64, then string; float64 and bool widen to string; a
// column empty in the first rows takes the narrowest of int64, bool,
// float64 and string that holds its values. Columns in `fixed` (the user's
// --column types) are left alone. Returns the columns that widen, in file
// order; nothing for other formats and for what is not a regular file.
// Errors: those of the Arrow CSV reader, with the path as context.
arrow::Result<std::vector<Widening>> InferWholeFile(const InputSpec& spec,
                                                    const arrow::Schema& first,
                                                    const std::set<std::string>& fixed);

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_INPUT_H_
