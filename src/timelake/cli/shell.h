// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Running SQL for `sql` and `latest`: where results go (a format, stdout or
// an -o file), one statement with its timing line on stderr, and the
// interactive shell `timelake sql` opens on a terminal.

#ifndef TIMELAKE_CLI_SHELL_H_
#define TIMELAKE_CLI_SHELL_H_

#include <cstdint>
#include <fstream>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/result.h>
#include <arrow/status.h>

#include "timelake/cli/output.h"
#include "timelake/timelake.h"

namespace timelake::cli {

// Where and how results go.
struct OutputTarget {
  OutputFormat format = OutputFormat::kTable;
  // The -o file. Default: empty, stdout.
  std::string path;
  TextTableOptions table;
};

// The output flags of `sql` and `latest` as given on the command line.
struct OutputFlags {
  // --format. Default: empty, from the extension of -o, else table.
  std::string format;
  // -o. Default: empty, stdout.
  std::string path;
  // --max-rows. Default: nullopt, 40 on a terminal and every row on a file
  // or pipe (nothing reads a preview there).
  std::optional<int64_t> max_rows;
};

// The target the flags ask for. The format comes from --format, else from
// the extension of -o (.txt table, .csv, .json/.ndjson/.jsonl NDJSON,
// .parquet), else it is the text table. Errors: a usage error for an -o
// extension that names no format, for parquet without -o, and for a
// negative --max-rows.
arrow::Result<OutputTarget> ResolveOutput(const OutputFlags& flags);

// The stream the text formats write to: stdout, or the -o file, which it
// owns. Not thread-safe.
class OutputStream {
 public:
  // Creates or truncates the -o file of a text format (a Parquet writer opens
  // its own). Errors: IOError when the file cannot be written.
  static arrow::Result<std::unique_ptr<OutputStream>> Open(const OutputTarget& target);
  std::ostream* get() { return out_; }

 private:
  OutputStream() = default;
  std::ofstream file_;
  std::ostream* out_ = nullptr;  // stdout or file_
};

// A writer of one result to `target`; text goes to `out`, which must outlive
// it. Errors: a usage error for Parquet without a path.
arrow::Result<std::unique_ptr<ResultWriter>> MakeWriter(const OutputTarget& target,
                                                        std::ostream* out);

// Prints "(N rows, 12.3 ms)" on stderr.
void PrintTiming(int64_t rows, double seconds);

// Runs `sql` on `session` and writes its result to `target` (text to `out`),
// then the timing line; with `explain_analyze`, the executed plan instead of
// the result. Errors: those of the query and of writing.
arrow::Status RunStatement(Session* session, const std::string& sql, bool explain_analyze,
                           const OutputTarget& target, std::ostream* out);

// Runs each statement (the SET statements of --set) on `session`. Errors:
// those of the statement, naming it.
arrow::Status ApplySessionStatements(Session* session,
                                     const std::vector<std::string>& statements);

// The interactive shell: reads statements ending with ';' from the terminal
// (line editing and history in ~/.timelake_history when built with readline)
// and runs each with RunStatement until \q, quit, exit or end of input. A
// failed statement prints its error and the shell goes on, so it returns OK.
arrow::Status RunShell(Session* session, const OutputTarget& target, bool explain_analyze,
                       std::ostream* out);

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_SHELL_H_
