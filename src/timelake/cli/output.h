// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// How the CLI shows results: Arrow data as an aligned text table, CSV, NDJSON
// or a Parquet file; human-readable numbers; and a progress bar for long work.
//
// Result writers stream: Begin(schema), Write(batch)..., Finish(). Only the
// text table buffers, and only the rows it will show (the first max_rows), so
// a query result of any size prints in bounded memory in every format.
//
// Value rendering, shared by all text formats:
//   - timestamps in UTC as "2024-01-01 00:00:00", with fractional seconds only
//     when non-zero (trailing zeros trimmed); in JSON as ISO-8601
//     "2024-01-01T00:00:00Z" ("Z" only for zoned timestamps);
//   - dates "2024-01-01", times "12:30:00";
//   - floating point in the shortest form that reads back exactly;
//   - nulls as NULL in the table, an empty field in CSV (an empty string is
//     `""`), null in JSON;
//   - lists and structs as JSON text.

#ifndef TIMELAKE_CLI_OUTPUT_H_
#define TIMELAKE_CLI_OUTPUT_H_

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <arrow/table.h>
#include <arrow/type_fwd.h>

namespace timelake::cli {

enum class OutputFormat {
  kTable,    // aligned text table
  kCsv,      // RFC 4180 CSV with a header line
  kJson,     // NDJSON: one JSON object per row and line
  kParquet,  // a Parquet file (needs a path)
};

// "table", "csv", "json" (also "ndjson"), "parquet". Errors: Invalid.
arrow::Result<OutputFormat> ParseOutputFormat(std::string_view text);
std::string_view OutputFormatName(OutputFormat format);

// The text table's layout: one line per row, or psql's expanded display,
// one "column | value" line per value under a "-[ RECORD n ]-" line per row,
// for rows too wide for the screen.
enum class Expanded {
  kOff,
  kOn,
  kAuto,  // expanded when the table is wider than TextTableOptions::width
};

struct TextTableOptions {
  // Rows shown; a longer result ends with "… (M rows)". 0 = all. Default: 40.
  int64_t max_rows = 40;
  // Print "(N rows)" under a table that was not truncated. Default: true.
  bool row_count = true;
  // Longer cells are cut and end with "…". Default: 64 characters.
  int max_cell_width = 64;
  // Default: kOff.
  Expanded expanded = Expanded::kOff;
  // Columns of the screen, for Expanded::kAuto. Default: 0, unknown (kAuto
  // never expands).
  int64_t width = 0;
};

// Writes one result (schema plus batches) in one format. Not thread-safe.
class ResultWriter {
 public:
  virtual ~ResultWriter() = default;
  virtual arrow::Status Begin(const std::shared_ptr<arrow::Schema>& schema) = 0;
  virtual arrow::Status Write(const arrow::RecordBatch& batch) = 0;
  // Completes the output (the table is printed here). Call once.
  virtual arrow::Status Finish() = 0;
  // Rows given to Write so far.
  int64_t rows() const { return rows_; }

 protected:
  int64_t rows_ = 0;
};

// A writer of kTable, kCsv or kJson text to `out`, which must outlive it.
// Errors: Invalid for kParquet. Write errors of `out` surface from Finish().
arrow::Result<std::unique_ptr<ResultWriter>> MakeTextWriter(
    OutputFormat format, std::ostream* out, const TextTableOptions& options = {});
// A writer of a Parquet file at local `path` (created or truncated by Begin).
std::unique_ptr<ResultWriter> MakeParquetWriter(std::string path);

// Begin, every batch of `reader`, Finish.
arrow::Status WriteReader(arrow::RecordBatchReader* reader, ResultWriter* writer);
// Begin, every chunk of `table`, Finish.
arrow::Status WriteTable(const arrow::Table& table, ResultWriter* writer);
// Prints `table` as an aligned text table.
arrow::Status PrintTable(const arrow::Table& table, std::ostream* out,
                         const TextTableOptions& options = {});

// --- human-readable numbers --------------------------------------------------

// 8640000 -> "8,640,000".
std::string FormatInteger(int64_t value);
// 999 -> "999", 1234 -> "1.2k", 350000 -> "350k", 8640000 -> "8.6M".
std::string FormatCount(double value);
// 1536 -> "1.5 KiB", 12345678 -> "11.8 MiB".
std::string FormatBytes(int64_t bytes);
// 0.0123 -> "12.3 ms", 1.5 -> "1.50 s", 125 -> "2m05s".
std::string FormatSeconds(double seconds);
// `text` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view text);

// --- progress ----------------------------------------------------------------

// A one-line progress bar on stderr, drawn only when stderr is a terminal:
//   appending  [#########           ] 45% 1.2M rows 350k rows/s ETA 3s
// Redrawn at most 10 times a second; Finish() leaves a final line with the
// elapsed time. Not thread-safe.
class Progress {
 public:
  // `total` is the amount of work (rows, bytes, ...) that makes 100%, or 0
  // when unknown (then no bar and no ETA are shown).
  Progress(std::string label, int64_t total);
  // Finishes the line if Finish() was not called.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Reports `done` units of work and `rows` rows so far.
  void Update(int64_t done, int64_t rows);
  // Draws the final state and ends the line.
  void Finish();

  bool enabled() const { return enabled_; }

 private:
  void Draw(bool final_line);

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  int64_t rows_ = 0;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_OUTPUT_H_
