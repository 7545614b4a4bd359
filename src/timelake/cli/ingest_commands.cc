// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `create` and `append` (alias `import`): tables from input files and rows
// into them.

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "timelake/cli/commands.h"
#include "timelake/cli/committer.h"
#include "timelake/cli/input.h"
#include "timelake/cli/output.h"
#include "timelake/cli/times.h"
#include "timelake/cli/util.h"
#include "timelake/timelake.h"

namespace timelake::cli {
namespace {

// Flags shared by `create` and `append --create`.
struct CreateArgs {
  std::optional<std::string> time_column;
  std::vector<std::string> series_key;
  std::string chunk = "day";
  std::vector<std::string> properties;

  void AddTo(CLI::App* app) {
    options_ = {
        app->add_option("--time-column", time_column,
                        "The timestamp column; makes a time-series table"),
        app->add_option("--series-key", series_key,
                        "Comma-separated columns identifying one series")
            ->delimiter(',')
            ->allow_extra_args(false),
        app->add_option("--chunk", chunk, "Time partition size")
            ->check(CLI::IsMember({"hour", "day", "month"}))
            ->capture_default_str(),
        app->add_option(
               "--set", properties,
               "Table property KEY=VALUE (timelake.* settings or Iceberg properties)")
            ->allow_extra_args(false),
    };
  }

  // The create-only flags given on the command line, e.g. "--chunk, --set".
  std::string Given() const {
    std::vector<std::string> given;
    for (const CLI::Option* option : options_) {
      if (option->count() > 0) given.push_back(option->get_name());
    }
    return fmt::format("{}", fmt::join(given, ", "));
  }

  arrow::Result<TableOptions> ToOptions() const {
    TableOptions options;
    options.time_column = time_column;
    options.series_key = series_key;
    ARROW_ASSIGN_OR_RAISE(options.chunk, ParseChunk(chunk));
    ARROW_ASSIGN_OR_RAISE(options.properties, ParseKeyValues(properties, "--set"));
    return options;
  }

 private:
  std::vector<const CLI::Option*> options_;
};

// How the input's times are read: --time-unit for both commands, the rest
// for `append`, which reads rows.
struct TimeFlags {
  std::string unit;
  std::optional<std::string> zone;
  bool truncate = false;

  void AddUnitTo(CLI::App* app) {
    app->add_option("--time-unit", unit,
                    "What epoch numbers in a timestamp column count: s|ms|us|ns (numbers "
                    "are refused without it)")
        ->check(CLI::IsMember({"s", "ms", "us", "ns"}));
  }
  void AddTo(CLI::App* app) {
    AddUnitTo(app);
    app->add_option("--time-zone", zone,
                    "The zone of times written without one, e.g. Europe/Berlin "
                    "(default: UTC)");
    app->add_flag("--truncate-time", truncate,
                  "Drop what is finer than a microsecond (nanosecond times) instead "
                  "of refusing it");
  }

  arrow::Result<TimeArgs> ToArgs() const {
    TimeArgs args;
    if (!unit.empty()) {
      ARROW_ASSIGN_OR_RAISE(args.unit, ParseTimeUnit(unit));
    }
    args.zone = zone;
    args.truncate = truncate;
    return args;
  }
};

std::string DescribeTable(const Table& table) {
  const TableInfo info = table.Info();
  std::string text =
      fmt::format("{}: {} columns", info.name, table.schema()->num_fields());
  if (info.time_column.has_value()) {
    text += fmt::format(", time column {}, chunk {}", *info.time_column, info.chunk);
  }
  if (!info.series_key.empty()) {
    text += fmt::format(", series key {}", fmt::join(info.series_key, ","));
  }
  return text;
}

class CreateCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name: [namespace.]table")->required();
    app->add_option("--schema-from", schema_from_,
                    "Parquet, CSV, TSV or NDJSON file whose schema the table takes")
        ->required();
    app->add_option("--input-format", input_format_,
                    "parquet|csv|tsv|ndjson (default: from the file name)");
    create_.AddTo(app);
    times_.AddUnitTo(app);
  }

  arrow::Status Run(const GlobalArgs& global) override {
    std::optional<InputFormat> forced;
    if (!input_format_.empty()) {
      ARROW_ASSIGN_OR_RAISE(forced, ParseInputFormat(input_format_));
    }
    ARROW_ASSIGN_OR_RAISE(TableOptions options, create_.ToOptions());
    ARROW_ASSIGN_OR_RAISE(TimeArgs time_args, times_.ToArgs());
    ARROW_ASSIGN_OR_RAISE(InputSpec spec, DescribeInput(schema_from_, forced));
    ARROW_ASSIGN_OR_RAISE(auto input, OpenInput(spec, nullptr));
    ARROW_ASSIGN_OR_RAISE(
        auto schema, CreationSchema(*input->schema(), options.time_column, time_args));
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kCreate));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.CreateTable(table_, *schema, options));
    std::cout << "created " << DescribeTable(table) << std::endl;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  std::string schema_from_;
  std::string input_format_;
  CreateArgs create_;
  TimeFlags times_;
};

class AppendCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name: [namespace.]table")->required();
    app->add_option("files", files_, "Input files")->required();
    app->add_flag("--create", create_missing_,
                  "Create the table from the first file's schema if it does not exist "
                  "(and drop it again if the import then fails before its first "
                  "commit); --time-column, --series-key, --chunk and --set apply only "
                  "then, and are refused for a table that exists");
    create_.AddTo(app);
    app->add_option(
        "--batch-id", batch_id_,
        "Idempotency id: an import of one commit is tagged ID, a longer one "
        "ID#FIRST-END per commit (its input rows); a tag already in the table "
        "commits nothing, so a re-run resumes");
    app->add_option("--input-format", input_format_,
                    "parquet|csv|tsv|ndjson (default: from each file name)");
    app->add_option("--commit-rows", commit_rows_, "Rows per commit")
        ->capture_default_str();
    app->add_flag("--no-maintain", no_maintain_,
                  "Skip inline maintenance after each commit (compaction, "
                  "retention, snapshot expiry)");
    times_.AddTo(app);
  }

  arrow::Status Run(const GlobalArgs& global) override {
    if (commit_rows_ < 1) return UsageError("--commit-rows must be at least 1");
    ARROW_ASSIGN_OR_RAISE(time_args_, times_.ToArgs());
    std::optional<InputFormat> forced;
    if (!input_format_.empty()) {
      ARROW_ASSIGN_OR_RAISE(forced, ParseInputFormat(input_format_));
    }
    // Every file is checked before the first commit, so a typo in the last
    // name does not leave a half-done import.
    std::vector<InputSpec> specs;
    int64_t total_bytes = 0;
    for (const auto& path : files_) {
      ARROW_ASSIGN_OR_RAISE(InputSpec spec, DescribeInput(path, forced));
      total_bytes += spec.size;
      specs.push_back(std::move(spec));
    }
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kCreate));

    const auto start = std::chrono::steady_clock::now();
    std::unique_ptr<InputFile> first_input;
    // The table this run created, if any: dropped again when the import
    // fails before its first commit, so a failed `append --create` leaves no
    // empty table behind whose schema came from a file that did not import.
    std::optional<Table> created;
    auto loaded = lake.LoadTable(table_);
    const std::string create_only = create_.Given();
    if (loaded.ok() && !create_only.empty()) {
      return UsageError(fmt::format(
          "{} only apply when append --create creates the table, and {} exists (table "
          "properties change with `alter {} --set KEY=VALUE`; the layout is fixed)",
          create_only, loaded->name().ToString(), loaded->name().ToString()));
    }
    if (!loaded.ok() && KindOf(loaded.status()) == ErrorKind::kNotFound &&
        !create_missing_ && !create_only.empty()) {
      return UsageError(
          fmt::format("{} need --create (the table does not exist)", create_only));
    }
    if (!loaded.ok() && KindOf(loaded.status()) == ErrorKind::kNotFound &&
        create_missing_) {
      ARROW_ASSIGN_OR_RAISE(TableOptions options, create_.ToOptions());
      ARROW_ASSIGN_OR_RAISE(first_input, OpenInput(specs.front(), nullptr));
      ARROW_ASSIGN_OR_RAISE(auto schema, CreationSchema(*first_input->schema(),
                                                        options.time_column, time_args_));
      loaded = lake.CreateTable(table_, *schema, options);
      if (loaded.ok()) created = *loaded;
      // Another process may have created it meanwhile: use theirs.
      if (!loaded.ok() && KindOf(loaded.status()) == ErrorKind::kAlreadyExists) {
        loaded = lake.LoadTable(table_);
      }
    }
    if (!loaded.ok()) return loaded.status();
    const Table table = std::move(loaded).ValueOrDie();
    auto status = Import(table, specs, total_bytes, std::move(first_input), start);
    if (!status.ok() && created.has_value()) {
      return status.WithMessage(status.message(), " (", DropCreated(lake, *created), ")");
    }
    // Said once it is sure to stay (the rows made it).
    if (status.ok() && created.has_value()) {
      std::cerr << "created " << DescribeTable(*created) << std::endl;
    }
    return status;
  }

 private:
  // Drops `created` if nothing was committed to it since (it is still at the
  // version this run created); says what happened, for the error line.
  static std::string DropCreated(const Lake& lake, const Table& created) {
    const std::string name = created.name().ToString();
    auto now = created.Refresh();
    if (!now.ok() || now->version() != created.version()) {
      return fmt::format(
          "{} was created by this import and is kept: {}", name,
          now.ok() ? "another writer committed to it meanwhile" : now.status().message());
    }
    auto dropped = lake.DropTable(name);
    if (!dropped.ok()) {
      return fmt::format("{} was created by this import; dropping it failed: {}", name,
                         dropped.message());
    }
    return fmt::format("nothing was committed and {} was not created", name);
  }

  arrow::Status Import(const Table& table, const std::vector<InputSpec>& specs,
                       int64_t total_bytes, std::unique_ptr<InputFile> first_input,
                       std::chrono::steady_clock::time_point start) {
    const auto table_schema = table.schema();

    // Every file opens, and has no column the table lacks, before the first
    // commit: a bad second file must not leave the first half-imported.
    for (size_t f = first_input != nullptr ? 1 : 0; f < specs.size(); ++f) {
      ARROW_ASSIGN_OR_RAISE(auto input, OpenInput(specs[f], table_schema.get()));
      for (const auto& field : input->schema()->fields()) {
        if (table_schema->GetFieldIndex(field->name()) < 0) {
          return arrow::Status::Invalid(specs[f].path, ": column '", field->name(),
                                        "' is not in table ", table.name().ToString(),
                                        " (add it to the table's schema first)");
        }
      }
    }

    BatchCommitter committer(table, commit_rows_, batch_id_);
    if (no_maintain_) committer.set_auto_maintain(false);
    // Errors after some commits landed say so: those rows stay.
    auto failed = [&](const arrow::Status& st, const std::string& context) {
      const auto& totals = committer.totals();
      if (totals.commits == 0) return WithContext(st, context);
      return WithContext(
          st,
          fmt::format("{} ({} rows in {} commits were committed before this error{})",
                      context, totals.rows, totals.commits,
                      batch_id_ ? "; re-run with the same --batch-id to resume" : ""));
    };
    TimeReading times(table_schema, time_args_);
    Progress progress("appending", total_bytes);
    int64_t bytes_before = 0;
    for (size_t f = 0; f < specs.size(); ++f) {
      const InputSpec& spec = specs[f];
      std::unique_ptr<InputFile> input = std::move(first_input);
      if (input == nullptr) {
        auto opened = OpenInput(spec, table_schema.get());
        if (!opened.ok()) return failed(opened.status(), spec.path);
        input = std::move(opened).ValueOrDie();
      }
      // The library names the table in its errors; the file is ours to add.
      const std::string& context = spec.path;
      int64_t rows_read = 0;  // of this file
      while (true) {
        auto batch = input->Next();
        if (!batch.ok()) return failed(batch.status(), context);
        if (*batch == nullptr) break;
        auto converted = times.Convert(*batch, rows_read);
        if (!converted.ok()) return failed(converted.status(), context);
        rows_read += (*batch)->num_rows();
        auto added = committer.Add(*converted);
        if (!added.ok()) return failed(added, context);
        progress.Update(bytes_before + input->bytes_done(),
                        committer.totals().input_rows);
      }
      bytes_before += spec.size;
    }
    if (auto st = committer.Flush(); !st.ok()) return failed(st, "the last commit");
    progress.Finish();
    const std::string source =
        specs.size() == 1 ? "" : fmt::format(" from {} files", specs.size());
    std::cout << DescribeTotals("appended", source, committer.totals(),
                                SecondsSince(start), committer.dedup_key())
              << std::endl;
    for (const std::string& note : times.notes()) {
      std::cerr << "note: " << note << std::endl;
    }
    return arrow::Status::OK();
  }

  std::string table_;
  std::vector<std::string> files_;
  bool create_missing_ = false;
  CreateArgs create_;
  std::optional<std::string> batch_id_;
  std::string input_format_;
  int64_t commit_rows_ = 1000000;
  bool no_maintain_ = false;
  TimeFlags times_;
  TimeArgs time_args_;
};

}  // namespace

std::unique_ptr<Command> MakeCreateCommand() { return std::make_unique<CreateCommand>(); }
std::unique_ptr<Command> MakeAppendCommand() { return std::make_unique<AppendCommand>(); }

}  // namespace timelake::cli
