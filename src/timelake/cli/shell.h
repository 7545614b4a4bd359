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
  // Print the "(N rows, 1.2 ms)" line on stderr after each statement (the
  // shell's \timing). Default: true.
  bool timing = true;
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
// then the timing line if target.timing; with `explain_analyze`, the executed
// plan instead of the result. Errors: those of the query (kCancelled when
// Session::Interrupt stopped it) and of writing.
arrow::Status RunStatement(Session* session, const std::string& sql, bool explain_analyze,
                           const OutputTarget& target, std::ostream* out);

// Runs each statement (the SET statements of --set) on `session`. Errors:
// those of the statement, naming it.
arrow::Status ApplySessionStatements(Session* session,
                                     const std::vector<std::string>& statements);

// The interactive shell on the terminal: reads statements ending with ';'
// (GNU readline: line editing, history in ~/.timelake_history) and runs each
// with RunStatement, until \q, quit, exit or end of input (Ctrl-D). A line
// starting with '\' where a statement starts is a command of the shell (\?
// lists them: \d [TABLE] on `lake`, \timing, \x). Ctrl-C does not end it:
// at the prompt it drops the line and any unfinished statement; while a
// statement runs it interrupts `session` (Session::Interrupt) and prints
// "cancelled"; the session keeps its SET values. SIGINT's disposition is
// restored on return. A failed statement or command prints its error and
// the shell goes on. Errors: IOError when the Ctrl-C handler cannot be set
// up (nothing ran then).
arrow::Status RunShell(const Lake& lake, Session* session, const OutputTarget& target,
                       bool explain_analyze, std::ostream* out);

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_SHELL_H_
