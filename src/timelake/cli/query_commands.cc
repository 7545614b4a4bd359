// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `sql` and `latest`: queries on a session of the warehouse, their results
// written in one of the output formats.

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "timelake/cli/commands.h"
#include "timelake/cli/output.h"
#include "timelake/cli/shell.h"
#include "timelake/cli/util.h"
#include "timelake/timelake.h"

namespace timelake::cli {
namespace {

class SqlCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("query", query_, "SQL statement(s)");
    app->add_option("-f,--file", file_, "SQL script file");
    app->add_option("--format", output_.format,
                    "table (aligned text), csv (RFC 4180), json or ndjson (both NDJSON: "
                    "one object per line), parquet (needs -o) (default: from the -o "
                    "extension, else table)")
        ->check(CLI::IsMember({"table", "csv", "json", "ndjson", "parquet"}));
    app->add_option("-o,--output", output_.path,
                    "Write results to this file, in the format its extension names "
                    "(.txt .csv .json .ndjson .jsonl .parquet)");
    app->add_option("--max-rows", output_.max_rows,
                    "Rows shown by --format table, 0 = all (default: 40 on a terminal, "
                    "all on a file or pipe)");
    app->add_flag("--explain-analyze", explain_analyze_,
                  "Print the executed plan with its metrics instead of the result");
  }

  arrow::Status Run(const GlobalArgs& global) override {
    if (!query_.empty() && !file_.empty()) {
      return UsageError("give a QUERY or -f FILE, not both");
    }
    ARROW_ASSIGN_OR_RAISE(OutputTarget target, ResolveOutput(output_));
    // The stderr timing line already counts rows; the table only notes a cut.
    target.table.row_count = false;
    ARROW_ASSIGN_OR_RAISE(auto session_statements, SessionStatements(global.sets));
    ARROW_ASSIGN_OR_RAISE(auto out, OutputStream::Open(target));

    std::string script;
    bool interactive = false;
    if (!query_.empty()) {
      script = query_;
    } else if (!file_.empty()) {
      std::ifstream in(file_, std::ios::binary);
      if (!in) return arrow::Status::IOError("cannot read ", file_);
      std::stringstream text;
      text << in.rdbuf();
      script = text.str();
    } else if (isatty(STDIN_FILENO) == 1) {
      interactive = true;
    } else {
      std::stringstream text;
      text << std::cin.rdbuf();
      script = text.str();
    }

    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    Session session(lake);
    ARROW_RETURN_NOT_OK(ApplySessionStatements(&session, session_statements));
    if (interactive)
      return RunShell(lake, &session, target, explain_analyze_, out->get());

    ARROW_ASSIGN_OR_RAISE(const auto statements, Session::Parse(script));
    if (statements.empty()) return UsageError("no SQL statement given");
    if (target.format == OutputFormat::kParquet && statements.size() > 1) {
      return UsageError("--format parquet takes a single statement");
    }
    for (const auto& statement : statements) {
      auto status =
          RunStatement(&session, statement.text, explain_analyze_, target, out->get());
      if (!status.ok()) {
        if (statements.size() == 1) return status;
        return WithContext(status, fmt::format("statement at line {}", statement.line));
      }
    }
    return arrow::Status::OK();
  }

 private:
  std::string query_;
  std::string file_;
  OutputFlags output_;
  bool explain_analyze_ = false;
};

class LatestCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_option(
           "--format", output_.format,
           "table, csv, json or ndjson (both NDJSON), parquet (default: from the "
           "-o extension, else table)")
        ->check(CLI::IsMember({"table", "csv", "json", "ndjson", "parquet"}));
    app->add_option("-o,--output", output_.path,
                    "Write the result to this file, in the format its extension names "
                    "(.txt .csv .json .ndjson .jsonl .parquet)");
    app->add_option("--max-rows", output_.max_rows,
                    "Rows shown by --format table, 0 = all (default: 40 on a terminal, "
                    "all on a file or pipe)");
  }

  arrow::Status Run(const GlobalArgs& global) override {
    ARROW_ASSIGN_OR_RAISE(OutputTarget target, ResolveOutput(output_));
    target.table.row_count = false;
    ARROW_ASSIGN_OR_RAISE(auto session_statements, SessionStatements(global.sets));
    ARROW_ASSIGN_OR_RAISE(auto out, OutputStream::Open(target));
    ARROW_ASSIGN_OR_RAISE(auto writer, MakeWriter(target, out->get()));
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    Session session(lake);
    ARROW_RETURN_NOT_OK(ApplySessionStatements(&session, session_statements));
    const auto start = std::chrono::steady_clock::now();
    ARROW_ASSIGN_OR_RAISE(auto latest, session.Latest(table_));
    ARROW_RETURN_NOT_OK(WriteTable(*latest, writer.get()));
    PrintTiming(writer->rows(), SecondsSince(start));
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  OutputFlags output_;
};

}  // namespace

std::unique_ptr<Command> MakeSqlCommand() { return std::make_unique<SqlCommand>(); }
std::unique_ptr<Command> MakeLatestCommand() { return std::make_unique<LatestCommand>(); }

}  // namespace timelake::cli
