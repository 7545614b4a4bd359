// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `create` and `append` (alias `import`): tables from input files and rows
// into them.

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <arrow/record_batch.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "timelake/cli/columns.h"
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
  std::vector<std::string> columns;        // --column NAME:TYPE
  std::optional<std::string> schema_file;  // --schema FILE

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
        app->add_option("--column", columns,
                        "NAME:TYPE, the type of a column instead of the one inferred "
                        "(repeatable); TYPE is int32, int64, float32, float64, string, "
                        "bool, timestamp (microseconds, UTC) or date32, or int, bigint, "
                        "real, double, float, text, varchar, boolean, date")
            ->allow_extra_args(false),
        app->add_option("--schema", schema_file,
                        "File of every column's type instead of inference: one "
                        "NAME:TYPE per line (types as for --column), optionally "
                        "followed by 'not null'; '#' starts a comment"),
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

  // Reads --column and --schema, so that a bad type fails before anything
  // is opened. Errors: usage errors naming the flag or the file's line,
  // IOError for a schema file that cannot be read.
  arrow::Status ParseTypes() {
    if (schema_file.has_value() && !columns.empty()) {
      return UsageError(
          "--column and --schema both give column types: put every column in the "
          "--schema file");
    }
    ARROW_ASSIGN_OR_RAISE(column_fields, ParseColumnFlags(columns));
    if (schema_file.has_value()) {
      ARROW_ASSIGN_OR_RAISE(schema, ReadSchemaFile(*schema_file));
    }
    return arrow::Status::OK();
  }

  arrow::Result<TableOptions> ToOptions() const {
    TableOptions options;
    options.time_column = time_column;
    options.series_key = series_key;
    ARROW_ASSIGN_OR_RAISE(options.chunk, ParseChunk(chunk));
    ARROW_ASSIGN_OR_RAISE(options.properties, ParseKeyValues(properties, "--set"));
    return options;
  }

  // Set by ParseTypes.
  arrow::FieldVector column_fields;       // of --column, in order
  std::shared_ptr<arrow::Schema> schema;  // of --schema

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

// What a new table is made of (create, append --create): its schema, and,
// when that came from an input file, the file opened the way its types were
// decided, so that its rows are read as the schema says.
struct NewTable {
  std::shared_ptr<arrow::Schema> schema;
  std::unique_ptr<InputFile> input;  // null for --schema
  std::vector<std::string> notes;    // types the whole file widened
};

// The new table's schema: the --schema file's; or that of the file `spec`
// describes, types inferred over the whole file (InferWholeFile) where
// --column gives none. Errors: a usage error for a --column the file has
// not, those of OpenInput, InferWholeFile and CreationSchema.
arrow::Result<NewTable> PlanNewTable(const CreateArgs& args, const InputSpec* spec,
                                     const TimeArgs& times) {
  NewTable out;
  if (args.schema != nullptr) {
    out.schema = args.schema;
    return out;
  }
  ARROW_ASSIGN_OR_RAISE(out.input, OpenInput(*spec, nullptr));
  const std::shared_ptr<arrow::Schema> inferred = out.input->schema();
  std::set<std::string> fixed;
  for (const auto& field : args.column_fields) {
    if (inferred->GetFieldIndex(field->name()) < 0) {
      return UsageError(fmt::format("--column {}:{}: {} has no column '{}' (it has {})",
                                    field->name(), ColumnTypeName(*field->type()),
                                    spec->path, field->name(),
                                    fmt::join(inferred->field_names(), ", ")));
    }
    fixed.insert(field->name());
  }
  ARROW_ASSIGN_OR_RAISE(auto widened, InferWholeFile(*spec, *inferred, fixed));
  arrow::FieldVector types = args.column_fields;
  for (const Widening& w : widened) {
    types.push_back(arrow::field(w.column, w.type));
    if (w.row == 0) continue;  // empty in the first rows: nothing was guessed
    out.notes.push_back(
        fmt::format("column '{}' is {}: its first rows read as {}, but row {} holds '{}' "
                    "(--column {}:TYPE decides instead)",
                    w.column, ColumnTypeName(*w.type), ColumnTypeName(*w.first),
                    FormatInteger(w.row), w.value, w.column));
  }
  std::shared_ptr<arrow::Schema> schema = inferred;
  if (!types.empty()) {
    // Opened again with the types decided, which the readers then convert
    // every block to.
    const auto decided = arrow::schema(types);
    ARROW_ASSIGN_OR_RAISE(out.input, OpenInput(*spec, decided.get()));
    for (const auto& field : types) {
      const int i = schema->GetFieldIndex(field->name());
      ARROW_ASSIGN_OR_RAISE(
          schema, schema->SetField(i, schema->field(i)->WithType(field->type())));
    }
  }
  ARROW_ASSIGN_OR_RAISE(out.schema, CreationSchema(*schema, args.time_column, times));
  return out;
}

// The rows of an import's files, one file after the other, as the table
// takes them: times converted and batches aligned to the table schema, so
// that an error names the file it is in. Moves the progress bar as it goes.
// Not thread-safe.
class ImportReader : public arrow::RecordBatchReader {
 public:
  // `first`, when given, is specs[0] opened already. `specs` and `progress`
  // must outlive the reader.
  ImportReader(const Table& table, const std::vector<InputSpec>& specs,
               std::unique_ptr<InputFile> first, const TimeArgs& times,
               Progress* progress)
      : schema_(table.schema()),
        specs_(specs),
        input_(std::move(first)),
        times_(schema_, times),
        progress_(progress) {}

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    auto st = Next(out);
    if (!st.ok()) input_failed_ = true;
    return st;
  }

  // Whether an error came from the input (then nothing can have been
  // committed by the call that read it).
  bool input_failed() const { return input_failed_; }
  const TimeReading& times() const { return times_; }

 private:
  arrow::Status Next(std::shared_ptr<arrow::RecordBatch>* out) {
    *out = nullptr;
    while (file_ < specs_.size()) {
      const InputSpec& spec = specs_[file_];
      if (input_ == nullptr) {
        ARROW_ASSIGN_OR_RAISE(input_, OpenInput(spec, schema_.get()));
        rows_in_file_ = 0;
      }
      auto batch = input_->Next();
      if (!batch.ok()) return WithContext(batch.status(), spec.path);
      if (*batch == nullptr) {
        bytes_before_ += spec.size;
        input_.reset();
        ++file_;
        continue;
      }
      if ((*batch)->num_rows() == 0) continue;
      auto converted = times_.Convert(*batch, rows_in_file_);
      if (!converted.ok()) return WithContext(converted.status(), spec.path);
      rows_in_file_ += (*batch)->num_rows();
      auto aligned = AlignBatch(**converted, *schema_);
      if (!aligned.ok()) return WithContext(aligned.status(), spec.path);
      rows_ += (*aligned)->num_rows();
      progress_->Update(bytes_before_ + input_->bytes_done(), rows_);
      *out = std::move(*aligned);
      return arrow::Status::OK();
    }
    return arrow::Status::OK();
  }

  std::shared_ptr<arrow::Schema> schema_;
  const std::vector<InputSpec>& specs_;
  std::unique_ptr<InputFile> input_;
  size_t file_ = 0;           // of specs_, being read
  int64_t bytes_before_ = 0;  // of the files before it
  int64_t rows_in_file_ = 0;
  int64_t rows_ = 0;
  TimeReading times_;
  Progress* progress_;
  bool input_failed_ = false;
};

class CreateCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name: [namespace.]table")->required();
    app->add_option("--schema-from", schema_from_,
                    "Parquet, CSV, TSV or NDJSON file whose schema the table takes (the "
                    "types of CSV and TSV inferred from every row)");
    app->add_option("--input-format", input_format_,
                    "parquet|csv|tsv|ndjson (default: from the file name)");
    create_.AddTo(app);
    times_.AddUnitTo(app);
  }

  arrow::Status Run(const GlobalArgs& global) override {
    ARROW_RETURN_NOT_OK(create_.ParseTypes());
    if (schema_from_.empty() == (create_.schema == nullptr)) {
      return UsageError(
          schema_from_.empty()
              ? "create needs --schema-from FILE (a data file) or --schema "
                "FILE (a schema file)"
              : "--schema-from and --schema both give the schema: pass one");
    }
    std::optional<InputFormat> forced;
    if (!input_format_.empty()) {
      ARROW_ASSIGN_OR_RAISE(forced, ParseInputFormat(input_format_));
    }
    ARROW_ASSIGN_OR_RAISE(TableOptions options, create_.ToOptions());
    ARROW_ASSIGN_OR_RAISE(TimeArgs time_args, times_.ToArgs());
    std::optional<InputSpec> spec;
    if (!schema_from_.empty()) {
      ARROW_ASSIGN_OR_RAISE(spec, DescribeInput(schema_from_, forced));
    }
    ARROW_ASSIGN_OR_RAISE(NewTable plan,
                          PlanNewTable(create_, spec ? &*spec : nullptr, time_args));
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kCreate));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.CreateTable(table_, *plan.schema, options));
    std::cout << "created " << DescribeTable(table) << std::endl;
    for (const std::string& note : plan.notes) std::cerr << "note: " << note << std::endl;
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
                  "Create the table if it does not exist, from the first file's schema "
                  "(the types of CSV and TSV inferred from every row) unless --schema "
                  "gives it, and drop it again if the import then fails before its "
                  "first commit; --time-column, --series-key, --chunk, --set, --column "
                  "and --schema apply only then, and are refused for a table that "
                  "exists");
    create_.AddTo(app);
    app->add_option(
        "--batch-id", batch_id_,
        "Idempotency id: the import's commit is tagged ID (with --commit-rows, an "
        "import of several commits tags each ID#FIRST-END, its input rows); a tag "
        "already in the table commits nothing, so a re-run skips what was committed");
    app->add_option("--input-format", input_format_,
                    "parquet|csv|tsv|ndjson (default: from each file name)");
    app->add_option("--commit-rows", commit_rows_,
                    "Commit every N rows instead of once: the rows committed before a "
                    "failure stay, and the error says how many (default: the whole "
                    "import is one commit, all or nothing)");
    app->add_flag("--no-maintain", no_maintain_,
                  "Skip inline maintenance after each commit (compaction, "
                  "retention, snapshot expiry)");
    app->add_flag("--no-refresh", no_refresh_,
                  "Refresh no rollup after each commit (queries read what the rollups "
                  "lack from raw data; REFRESH MATERIALIZED ROLLUP or maintain refresh "
                  "them)");
    times_.AddTo(app);
  }

  arrow::Status Run(const GlobalArgs& global) override {
    if (commit_rows_.has_value() && *commit_rows_ < 1) {
      return UsageError("--commit-rows must be at least 1");
    }
    ARROW_RETURN_NOT_OK(create_.ParseTypes());
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
    std::vector<std::string> notes;
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
      auto plan = PlanNewTable(create_, &specs.front(), time_args_);
      if (!plan.ok()) {
        // A file that cannot be read through fails before the table exists.
        if (IsUsageError(plan.status())) return plan.status();
        ARROW_ASSIGN_OR_RAISE(TableName name, TableName::Parse(table_));
        return plan.status().WithMessage(
            plan.status().message(),
            fmt::format(" (nothing was committed and {} was not created)",
                        name.ToString()));
      }
      first_input = std::move(plan->input);
      notes = std::move(plan->notes);
      loaded = lake.CreateTable(table_, *plan->schema, options);
      if (loaded.ok()) created = *loaded;
      // Another process may have created it meanwhile: use theirs, and read
      // the first file again as its schema says.
      if (!loaded.ok() && KindOf(loaded.status()) == ErrorKind::kAlreadyExists) {
        loaded = lake.LoadTable(table_);
        first_input = nullptr;
        notes.clear();
      }
    }
    if (!loaded.ok()) return loaded.status();
    const Table table = std::move(loaded).ValueOrDie();
    bool partial = false;
    auto status = Import(table, specs, total_bytes, std::move(first_input),
                         created.has_value(), start, &notes, &partial);
    // After partial commits (--commit-rows) the table stays with them, as
    // the error says.
    if (!status.ok() && created.has_value() && !partial) {
      return status.WithMessage(status.message(), " (", DropCreated(lake, *created), ")");
    }
    // Said once it is sure to stay (the rows made it).
    if (status.ok() && created.has_value()) {
      std::cerr << "created " << DescribeTable(*created) << std::endl;
    }
    if (status.ok()) {
      for (const std::string& note : notes) std::cerr << "note: " << note << std::endl;
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

  // `st`, the error of an import that made no commit of its own, saying
  // so. Only a failed put of the commit itself (kStorage from Table::Append,
  // not from reading the input) may have landed after all; then a table
  // still at its version proves that it did not.
  arrow::Status NothingCommitted(const Table& table, const arrow::Status& st,
                                 bool input_failed) const {
    if (!input_failed && KindOf(st) == ErrorKind::kStorage) {
      auto now = table.Refresh();
      if (!now.ok() || now->version() != table.version()) {
        return st.WithMessage(
            st.message(),
            fmt::format(" (the commit may have landed although it reported a failure: "
                        "`timelake info {}` shows the table's rows{})",
                        table.name().ToString(),
                        batch_id_ ? "; a re-run with the same --batch-id commits at most "
                                    "once"
                                  : ""));
      }
    }
    // A transient failure (the storage client's and the Store's retries ran
    // out) says that the same command may well succeed later.
    return st.WithMessage(
        st.message(), IsRetryable(st) ? " (nothing was committed; the storage failure "
                                        "is transient: run the append again)"
                                      : " (nothing was committed)");
  }

  // Reads every file into `table`: as one commit of Table::Append(reader),
  // or with --commit-rows in commits of that many rows. `created`: the table
  // is this run's, and Run says what is left of it on an error. Adds the
  // notes on the times read to `notes`; sets `partial` on an error after
  // commits of --commit-rows.
  arrow::Status Import(const Table& table, const std::vector<InputSpec>& specs,
                       int64_t total_bytes, std::unique_ptr<InputFile> first_input,
                       bool created, std::chrono::steady_clock::time_point start,
                       std::vector<std::string>* notes, bool* partial) {
    const auto table_schema = table.schema();
    auto unchanged = [&](const arrow::Status& st, bool input_failed) {
      return created ? st : NothingCommitted(table, st, input_failed);
    };

    // Every file opens, and has no column the table lacks, before anything
    // is written: a bad second file must not cost the work on the first.
    for (size_t f = first_input != nullptr ? 1 : 0; f < specs.size(); ++f) {
      auto input = OpenInput(specs[f], table_schema.get());
      if (!input.ok()) return unchanged(input.status(), true);
      for (const auto& field : (*input)->schema()->fields()) {
        if (table_schema->GetFieldIndex(field->name()) < 0) {
          return unchanged(
              arrow::Status::Invalid(specs[f].path, ": column '", field->name(),
                                     "' is not in table ", table.name().ToString(),
                                     " (add it to the table's schema first)"),
              true);
        }
      }
    }

    Progress progress("appending", total_bytes);
    ImportReader reader(table, specs, std::move(first_input), time_args_, &progress);
    BatchCommitter::Totals totals;
    if (commit_rows_.has_value()) {
      BatchCommitter committer(table, *commit_rows_, batch_id_);
      if (no_maintain_) committer.set_auto_maintain(false);
      if (no_refresh_) committer.set_refresh_rollups(RollupRefresh::kNone);
      arrow::Status st;
      while (st.ok()) {
        std::shared_ptr<arrow::RecordBatch> batch;
        st = reader.ReadNext(&batch);
        if (!st.ok()) break;
        if (batch == nullptr) {
          st = committer.Flush();
          break;
        }
        st = committer.Add(batch);
      }
      totals = committer.totals();
      if (!st.ok() && totals.commits == 0) return unchanged(st, reader.input_failed());
      // Commits that landed stay: the error says exactly what they hold.
      if (!st.ok()) {
        *partial = true;
        const int64_t committed = committer.committed_input_rows();
        return st.WithMessage(
            st.message(),
            fmt::format(
                " (the first {} input rows were committed before this error, in "
                "{}{}{})",
                FormatInteger(committed),
                totals.commits == 1 ? "1 commit"
                                    : fmt::format("{} commits", totals.commits),
                totals.rows + totals.skipped_rows == committed
                    ? ""
                    : fmt::format(", as {} rows after dedup",
                                  FormatInteger(totals.rows + totals.skipped_rows)),
                batch_id_ ? "; re-run with the same --batch-id to resume" : ""));
      }
    } else {
      AppendOptions options;
      options.batch_id = batch_id_;
      if (no_maintain_) options.auto_maintain = false;
      // One commit: nothing follows that maintenance could overlap, and its
      // outcome belongs in this command's report.
      options.maintain_in_background = false;
      if (no_refresh_) options.refresh_rollups = RollupRefresh::kNone;
      auto appended = table.Append(&reader, options);
      if (!appended.ok()) return unchanged(appended.status(), reader.input_failed());
      totals.input_rows = appended->second.input_rows;
      AddAppend(appended->second, appended->second.input_rows, &totals);
    }
    progress.Finish();
    const std::string source =
        specs.size() == 1 ? "" : fmt::format(" from {} files", specs.size());
    std::cout << DescribeTotals("appended", source, totals, SecondsSince(start),
                                DedupKeyOf(table))
              << std::endl;
    for (const std::string& note : reader.times().notes()) notes->push_back(note);
    return arrow::Status::OK();
  }

  std::string table_;
  std::vector<std::string> files_;
  bool create_missing_ = false;
  CreateArgs create_;
  std::optional<std::string> batch_id_;
  std::string input_format_;
  std::optional<int64_t> commit_rows_;
  bool no_maintain_ = false;
  bool no_refresh_ = false;
  TimeFlags times_;
  TimeArgs time_args_;
};

}  // namespace

std::unique_ptr<Command> MakeCreateCommand() { return std::make_unique<CreateCommand>(); }
std::unique_ptr<Command> MakeAppendCommand() { return std::make_unique<AppendCommand>(); }

}  // namespace timelake::cli
