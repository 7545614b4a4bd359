// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/shell.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

#include <arrow/array.h>
#include <arrow/record_batch.h>
#include <arrow/type.h>
#include <fmt/format.h>

#if defined(TIMELAKE_CLI_READLINE)
#include <readline/history.h>
#include <readline/readline.h>
#endif

#include "timelake/cli/util.h"
#include "timelake/status.h"

namespace timelake::cli {
namespace {

std::string Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

constexpr std::string_view kShellHelp =
    "Enter SQL statements ending with ';' (they may span lines).\n"
    "  \\q      quit (also Ctrl-D, quit, exit)\n"
    "  \\?      this help\n";

std::string HistoryPath() {
  const char* home = std::getenv("HOME");
  return home != nullptr ? std::string(home) + "/.timelake_history" : "";
}

// One line of input; nullopt at end of input.
std::optional<std::string> ReadLine(const char* prompt) {
#if defined(TIMELAKE_CLI_READLINE)
  char* raw = readline(prompt);
  if (raw == nullptr) return std::nullopt;
  std::string line(raw);
  std::free(raw);
  return line;
#else
  std::cout << prompt << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) return std::nullopt;
  return line;
#endif
}

void AddHistory(const std::string& entry) {
#if defined(TIMELAKE_CLI_READLINE)
  add_history(entry.c_str());
#else
  (void)entry;
#endif
}

// The format an -o file's name asks for, or nullopt.
std::optional<OutputFormat> FormatOfExtension(std::string_view extension) {
  const std::string ext = ToLower(extension);
  if (ext == ".txt") return OutputFormat::kTable;
  if (ext == ".csv") return OutputFormat::kCsv;
  if (ext == ".json" || ext == ".ndjson" || ext == ".jsonl") return OutputFormat::kJson;
  if (ext == ".parquet" || ext == ".pq") return OutputFormat::kParquet;
  return std::nullopt;
}

// The result of EXPLAIN: (plan_type, plan) strings, a plan of many lines.
bool IsPlan(const arrow::Schema& schema) {
  return schema.num_fields() == 2 && schema.field(0)->name() == "plan_type" &&
         schema.field(1)->name() == "plan" &&
         schema.field(0)->type()->id() == arrow::Type::STRING &&
         schema.field(1)->type()->id() == arrow::Type::STRING;
}

// EXPLAIN in the text format: each plan whole, its lines indented under its
// type, instead of table cells cut at 64 characters with "\n" escaped.
arrow::Status PrintPlan(arrow::RecordBatchReader* reader, std::ostream* out,
                        std::chrono::steady_clock::time_point start) {
  std::string text;
  int64_t rows = 0;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(reader->ReadNext(&batch));
    if (batch == nullptr) break;
    const auto& types = static_cast<const arrow::StringArray&>(*batch->column(0));
    const auto& plans = static_cast<const arrow::StringArray&>(*batch->column(1));
    for (int64_t r = 0; r < batch->num_rows(); ++r, ++rows) {
      if (rows > 0) text += '\n';
      text += std::string(types.IsNull(r) ? "plan" : types.GetView(r)) + ":\n";
      std::string_view plan = plans.IsNull(r) ? "" : plans.GetView(r);
      while (!plan.empty()) {
        const size_t end = plan.find('\n');
        text += "  " + std::string(plan.substr(0, end)) + "\n";
        plan = end == std::string_view::npos ? "" : plan.substr(end + 1);
      }
    }
  }
  *out << text;
  out->flush();
  if (!*out) return arrow::Status::IOError("writing the plan failed");
  PrintTiming(rows, SecondsSince(start));
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<OutputTarget> ResolveOutput(const OutputFlags& flags) {
  OutputTarget target;
  target.path = flags.path;
  if (!flags.format.empty()) {
    ARROW_ASSIGN_OR_RAISE(target.format, ParseOutputFormat(flags.format));
  } else if (!flags.path.empty()) {
    const std::string extension = std::filesystem::path(flags.path).extension().string();
    auto format = FormatOfExtension(extension);
    if (!format.has_value()) {
      return UsageError(fmt::format(
          "-o {}: no output format is named by the extension '{}' (use .txt, .csv, "
          ".json, .ndjson, .jsonl or .parquet, or pass --format)",
          flags.path, extension));
    }
    target.format = *format;
  }
  if (target.format == OutputFormat::kParquet && target.path.empty()) {
    return UsageError("--format parquet writes a file: pass -o FILE");
  }
  if (flags.max_rows.has_value()) {
    if (*flags.max_rows < 0) return UsageError("--max-rows must be 0 (all) or more");
    target.table.max_rows = *flags.max_rows;
  } else {
    // A terminal shows a preview; a file or a pipe gets the whole result.
    const bool terminal = flags.path.empty() && isatty(STDOUT_FILENO) == 1;
    target.table.max_rows = terminal ? TextTableOptions{}.max_rows : 0;
  }
  return target;
}

arrow::Result<std::unique_ptr<OutputStream>> OutputStream::Open(
    const OutputTarget& target) {
  auto stream = std::unique_ptr<OutputStream>(new OutputStream());
  stream->out_ = &std::cout;
  if (!target.path.empty() && target.format != OutputFormat::kParquet) {
    stream->file_.open(target.path, std::ios::binary | std::ios::trunc);
    if (!stream->file_) return arrow::Status::IOError("cannot write ", target.path);
    stream->out_ = &stream->file_;
  }
  return stream;
}

arrow::Result<std::unique_ptr<ResultWriter>> MakeWriter(const OutputTarget& target,
                                                        std::ostream* out) {
  if (target.format == OutputFormat::kParquet) {
    if (target.path.empty())
      return UsageError("--format parquet writes a file: pass -o FILE");
    return MakeParquetWriter(target.path);
  }
  return MakeTextWriter(target.format, out, target.table);
}

void PrintTiming(int64_t rows, double seconds) {
  std::cerr << fmt::format("({} row{}, {})", FormatInteger(rows), rows == 1 ? "" : "s",
                           FormatSeconds(seconds))
            << std::endl;
}

arrow::Status RunStatement(Session* session, const std::string& sql, bool explain_analyze,
                           const OutputTarget& target, std::ostream* out) {
  const auto start = std::chrono::steady_clock::now();
  if (explain_analyze) {
    ARROW_ASSIGN_OR_RAISE(std::string plan, session->ExplainAnalyze(sql));
    *out << plan;
    if (!plan.empty() && plan.back() != '\n') *out << '\n';
    out->flush();
    std::cerr << fmt::format("({})", FormatSeconds(SecondsSince(start))) << std::endl;
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto reader, session->SqlStream(sql));
  if (target.format == OutputFormat::kTable && IsPlan(*reader->schema())) {
    return PrintPlan(reader.get(), out, start);
  }
  ARROW_ASSIGN_OR_RAISE(auto writer, MakeWriter(target, out));
  ARROW_RETURN_NOT_OK(WriteReader(reader.get(), writer.get()));
  PrintTiming(writer->rows(), SecondsSince(start));
  return arrow::Status::OK();
}

arrow::Status ApplySessionStatements(Session* session,
                                     const std::vector<std::string>& statements) {
  for (const auto& statement : statements) {
    auto result = session->Sql(statement);
    if (!result.ok())
      return WithContext(result.status(), "applying --set (" + statement + ")");
  }
  return arrow::Status::OK();
}

arrow::Status RunShell(Session* session, const OutputTarget& target, bool explain_analyze,
                       std::ostream* out) {
  const std::string history = HistoryPath();
#if defined(TIMELAKE_CLI_READLINE)
  rl_readline_name = "timelake";
  if (!history.empty()) read_history(history.c_str());
#endif
  std::cerr << "timelake sql: statements end with ';', \\q quits, \\? helps" << std::endl;
  std::string buffer;
  while (true) {
    const bool continuation = !Trim(buffer).empty();
    auto line = ReadLine(continuation ? "      -> " : "timelake> ");
    if (!line.has_value()) {
      std::cerr << std::endl;
      break;
    }
    const std::string command = Trim(*line);
    if (!continuation) {
      if (command == "\\q" || command == "quit" || command == "exit") break;
      if (command == "\\?" || command == "\\h" || command == "help") {
        std::cerr << kShellHelp;
        continue;
      }
      if (command.empty()) continue;
    }
    buffer += *line;
    buffer += '\n';
    auto statements = Session::Parse(buffer);
    if (!statements.ok()) {
      PrintError(statements.status());
      buffer.clear();
      continue;
    }
    // Complete statements run now; an unterminated one waits for more lines.
    std::string rest;
    if (!statements->empty() && !statements->back().terminated) {
      rest = statements->back().text + "\n";
      statements->pop_back();
    }
    for (const auto& statement : *statements) {
      AddHistory(statement.text + ";");
      auto status = RunStatement(session, statement.text, explain_analyze, target, out);
      if (!status.ok()) PrintError(status);
    }
    buffer = rest;
  }
#if defined(TIMELAKE_CLI_READLINE)
  if (!history.empty()) {
    write_history(history.c_str());
    history_truncate_file(history.c_str(), 1000);
  }
#endif
  return arrow::Status::OK();
}

}  // namespace timelake::cli
