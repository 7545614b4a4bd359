// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `timelake`: the command-line tool, over the public API only (SPEC §10).
// Errors end as one line "timelake: error: <message>" on stderr with exit
// status 1 (2 for usage errors); nothing here prints a stack trace.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <arrow/compute/initialize.h>
#include <arrow/csv/api.h>
#include <arrow/io/compressed.h>
#include <arrow/io/file.h>
#include <arrow/json/api.h>
#include <arrow/util/compression.h>
#include <fmt/format.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#if defined(TIMELAKE_CLI_READLINE)
#include <readline/history.h>
#include <readline/readline.h>
#endif

#include "timelake/cli/demo.h"
#include "timelake/cli/output.h"
#include "timelake/settings.h"
#include "timelake/timelake.h"

namespace timelake::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// Marks a status as a usage error (exit status 2 instead of 1).
class UsageDetail : public arrow::StatusDetail {
 public:
  const char* type_id() const override { return "timelake-cli-usage"; }
  std::string ToString() const override { return "usage error"; }
};

arrow::Status UsageError(std::string message) {
  return arrow::Status::Invalid(std::move(message))
      .WithDetail(std::make_shared<UsageDetail>());
}

bool IsUsageError(const arrow::Status& status) {
  return status.detail() != nullptr &&
         std::string_view(status.detail()->type_id()) == "timelake-cli-usage";
}

// Error messages of the engine may span lines (DataFusion adds context); the
// CLI promises one line.
std::string OneLine(std::string_view message) {
  std::string line;
  bool space = false;
  for (char c : message) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !line.empty();
      continue;
    }
    if (space) line.push_back(' ');
    space = false;
    line.push_back(c);
  }
  return line;
}

void PrintError(const arrow::Status& status) {
  const std::string message =
      status.message().empty() ? status.ToString() : status.message();
  std::cerr << "timelake: error: " << OneLine(message) << std::endl;
}

std::string ToLower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

arrow::Result<std::pair<std::string, std::string>> SplitKeyValue(
    const std::string& text, std::string_view option) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return UsageError(fmt::format("{} expects KEY=VALUE, got '{}'", option, text));
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

arrow::Result<std::map<std::string, std::string>> ParseKeyValues(
    const std::vector<std::string>& items, std::string_view option) {
  std::map<std::string, std::string> map;
  for (const auto& item : items) {
    ARROW_ASSIGN_OR_RAISE(auto kv, SplitKeyValue(item, option));
    map[kv.first] = kv.second;
  }
  return map;
}

// `--set timelake.x=y` becomes `SET timelake.x = 'y'` on the query session,
// the session level of the settings registry (SPEC §4.3). SQL identifiers
// cannot hold dashes, so the SQL spelling (underscores) is used.
arrow::Result<std::vector<std::string>> SessionStatements(
    const std::vector<std::string>& sets) {
  std::vector<std::string> statements;
  for (const auto& item : sets) {
    ARROW_ASSIGN_OR_RAISE(auto kv, SplitKeyValue(item, "--set"));
    std::string key = kv.first;
    const std::string lower = ToLower(key);
    if (lower.rfind("timelake.", 0) != 0 || key.size() == 9) {
      return UsageError(fmt::format(
          "--set expects timelake.NAME=VALUE (a session setting), got '{}'", item));
    }
    for (char& c : key) {
      if (c == '-') c = '_';
    }
    std::string value;
    for (char c : kv.second) {
      value += c;
      if (c == '\'') value += '\'';
    }
    statements.push_back(fmt::format("SET {} = '{}'", key, value));
  }
  return statements;
}

// `timelake settings`: the registry, as an aligned table, Markdown or JSON.
arrow::Status RunSettings(const std::string& format, std::ostream* out) {
  if (format == "markdown") {
    *out << settings::Markdown();
    return arrow::Status::OK();
  }
  if (format == "json") {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : settings::All()) {
      list.push_back({{"name", std::string(s.name)},
                      {"property", s.PropertyKey()},
                      {"sql", s.SqlName()},
                      {"type", std::string(settings::TypeName(s.type))},
                      {"choices", std::string(s.choices)},
                      {"default", std::string(s.default_value)},
                      {"levels", settings::LevelNames(s.levels)},
                      {"since", std::string(s.since)},
                      {"description", std::string(s.description)}});
    }
    *out << list.dump(2) << "\n";
    return arrow::Status::OK();
  }
  size_t name_width = 0, type_width = 0, default_width = 0, level_width = 0;
  for (const auto& s : settings::All()) {
    name_width = std::max(name_width, s.PropertyKey().size());
    type_width = std::max(type_width, settings::TypeName(s.type).size());
    default_width = std::max(default_width, s.default_value.size());
    level_width = std::max(level_width, settings::LevelNames(s.levels).size());
  }
  *out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", "setting", name_width,
                      "type", type_width, "default", default_width, "levels", level_width,
                      "description");
  for (const auto& s : settings::All()) {
    std::string description(s.description);
    if (!s.choices.empty()) description += " [" + std::string(s.choices) + "]";
    *out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", s.PropertyKey(),
                        name_width, settings::TypeName(s.type), type_width,
                        s.default_value.empty() ? "-" : std::string(s.default_value),
                        default_width, settings::LevelNames(s.levels), level_width,
                        description);
  }
  return arrow::Status::OK();
}

// --- input files ------------------------------------------------------------

enum class InputFormat { kParquet, kCsv, kTsv, kNdjson };

arrow::Result<InputFormat> ParseInputFormat(std::string_view text) {
  if (text == "parquet") return InputFormat::kParquet;
  if (text == "csv") return InputFormat::kCsv;
  if (text == "tsv") return InputFormat::kTsv;
  if (text == "ndjson" || text == "jsonl" || text == "json") return InputFormat::kNdjson;
  return UsageError(fmt::format(
      "unknown input format '{}' (expected parquet, csv, tsv or ndjson)", text));
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

struct InputSpec {
  std::string path;
  InputFormat format = InputFormat::kCsv;
  bool gzip = false;
  int64_t size = 0;
};

// Tells the format from the name ("x.csv.gz" is gzipped CSV) unless given.
arrow::Result<InputSpec> DescribeInput(const std::string& path,
                                       const std::optional<InputFormat>& forced) {
  InputSpec spec;
  spec.path = path;
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) return arrow::Status::IOError("reading ", path, ": ", error.message());
  spec.size = static_cast<int64_t>(size);

  std::string name = ToLower(std::filesystem::path(path).filename().string());
  if (EndsWith(name, ".gz")) {
    spec.gzip = true;
    name.resize(name.size() - 3);
  }
  if (forced.has_value()) {
    spec.format = *forced;
  } else if (EndsWith(name, ".parquet") || EndsWith(name, ".pq")) {
    spec.format = InputFormat::kParquet;
  } else if (EndsWith(name, ".csv")) {
    spec.format = InputFormat::kCsv;
  } else if (EndsWith(name, ".tsv") || EndsWith(name, ".tab")) {
    spec.format = InputFormat::kTsv;
  } else if (EndsWith(name, ".ndjson") || EndsWith(name, ".jsonl") ||
             EndsWith(name, ".json")) {
    spec.format = InputFormat::kNdjson;
  } else {
    return UsageError(
        fmt::format("cannot tell the format of {} from its name: pass --input-format "
                    "parquet|csv|tsv|ndjson",
                    path));
  }
  if (spec.gzip && spec.format == InputFormat::kParquet) {
    return arrow::Status::Invalid(path, ": gzipped Parquet is not supported ",
                                  "(Parquet compresses its pages itself)");
  }
  return spec;
}

// Counts the bytes read from the file (before decompression), which is what
// the progress bar measures. The readers read from their own threads.
class CountingInputStream : public arrow::io::InputStream {
 public:
  explicit CountingInputStream(std::shared_ptr<arrow::io::InputStream> raw)
      : raw_(std::move(raw)) {}

  arrow::Status Close() override { return raw_->Close(); }
  arrow::Result<int64_t> Tell() const override { return raw_->Tell(); }
  bool closed() const override { return raw_->closed(); }
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override {
    ARROW_ASSIGN_OR_RAISE(int64_t n, raw_->Read(nbytes, out));
    count_ += n;
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override {
    ARROW_ASSIGN_OR_RAISE(auto buffer, raw_->Read(nbytes));
    count_ += buffer->size();
    return buffer;
  }
  int64_t count() const { return count_.load(); }

 private:
  std::shared_ptr<arrow::io::InputStream> raw_;
  std::atomic<int64_t> count_{0};
};

// Record batches of one input file, read with bounded memory.
class InputFile {
 public:
  virtual ~InputFile() = default;
  virtual std::shared_ptr<arrow::Schema> schema() const = 0;
  // The next batch, or nullptr at the end.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() = 0;
  // Bytes of the file consumed so far (for progress).
  virtual int64_t bytes_done() const = 0;
};

// Large enough blocks that type inference sees plenty of rows and batches
// are big; small enough that memory stays a few blocks per file.
constexpr int32_t kTextBlockBytes = 8 << 20;

class ParquetInput : public InputFile {
 public:
  static arrow::Result<std::unique_ptr<InputFile>> Open(const InputSpec& spec) {
    auto input = std::unique_ptr<ParquetInput>(new ParquetInput(spec.size));
    ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(spec.path));
    parquet::arrow::FileReaderBuilder builder;
    ARROW_RETURN_NOT_OK(builder.Open(file));
    parquet::ArrowReaderProperties properties;
    properties.set_batch_size(64 * 1024);
    builder.properties(properties);
    ARROW_ASSIGN_OR_RAISE(input->file_reader_, builder.Build());
    input->total_rows_ = input->file_reader_->parquet_reader()->metadata()->num_rows();
    ARROW_ASSIGN_OR_RAISE(input->batches_, input->file_reader_->GetRecordBatchReader());
    return input;
  }

  std::shared_ptr<arrow::Schema> schema() const override { return batches_->schema(); }
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override {
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(batches_->ReadNext(&batch));
    if (batch != nullptr) rows_read_ += batch->num_rows();
    return batch;
  }
  int64_t bytes_done() const override {
    if (total_rows_ <= 0) return size_;
    return static_cast<int64_t>(static_cast<double>(size_) *
                                static_cast<double>(rows_read_) /
                                static_cast<double>(total_rows_));
  }

 private:
  explicit ParquetInput(int64_t size) : size_(size) {}
  int64_t size_;
  int64_t total_rows_ = 0;
  int64_t rows_read_ = 0;
  std::unique_ptr<parquet::arrow::FileReader> file_reader_;
  std::unique_ptr<arrow::RecordBatchReader> batches_;
};

// CSV, TSV and NDJSON, optionally gzipped.
class TextInput : public InputFile {
 public:
  // `table_schema`, when given, fixes column types where inference could
  // guess wrong (a string column of digits would become int64 and lose its
  // leading zeros). CSV timestamps stay inferred: Arrow's CSV converter
  // rejects zone-less text for a zoned type, and AlignBatch casts instead.
  static arrow::Result<std::unique_ptr<InputFile>> Open(
      const InputSpec& spec, const arrow::Schema* table_schema) {
    auto input = std::unique_ptr<TextInput>(new TextInput());
    ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(spec.path));
    input->counter_ = std::make_shared<CountingInputStream>(file);
    std::shared_ptr<arrow::io::InputStream> stream = input->counter_;
    if (spec.gzip) {
      ARROW_ASSIGN_OR_RAISE(input->codec_,
                            arrow::util::Codec::Create(arrow::Compression::GZIP));
      ARROW_ASSIGN_OR_RAISE(
          stream, arrow::io::CompressedInputStream::Make(input->codec_.get(), stream));
    }
    if (spec.format == InputFormat::kNdjson) {
      auto read_options = arrow::json::ReadOptions::Defaults();
      read_options.block_size = kTextBlockBytes;
      auto parse_options = arrow::json::ParseOptions::Defaults();
      if (table_schema != nullptr) {
        // The JSON converter parses timestamp text with or without a zone
        // into any timestamp type, so every column can be fixed here.
        arrow::FieldVector fields;
        for (const auto& field : table_schema->fields()) {
          fields.push_back(field->WithNullable(true));
        }
        parse_options.explicit_schema = arrow::schema(std::move(fields));
        parse_options.unexpected_field_behavior =
            arrow::json::UnexpectedFieldBehavior::InferType;
      }
      ARROW_ASSIGN_OR_RAISE(input->json_, arrow::json::StreamingReader::Make(
                                              stream, read_options, parse_options));
    } else {
      auto read_options = arrow::csv::ReadOptions::Defaults();
      read_options.block_size = kTextBlockBytes;
      auto parse_options = arrow::csv::ParseOptions::Defaults();
      if (spec.format == InputFormat::kTsv) parse_options.delimiter = '\t';
      auto convert_options = arrow::csv::ConvertOptions::Defaults();
      // Nulls are empty fields and an empty string is "" (as `sql --format csv`
      // writes them), so both survive a round trip.
      convert_options.strings_can_be_null = true;
      convert_options.quoted_strings_can_be_null = false;
      if (table_schema != nullptr) {
        for (const auto& field : table_schema->fields()) {
          if (field->type()->id() == arrow::Type::TIMESTAMP) continue;
          convert_options.column_types[field->name()] = field->type();
        }
      }
      ARROW_ASSIGN_OR_RAISE(
          input->csv_, arrow::csv::StreamingReader::Make(arrow::io::default_io_context(),
                                                         stream, read_options,
                                                         parse_options, convert_options));
    }
    return input;
  }

  std::shared_ptr<arrow::Schema> schema() const override {
    return json_ != nullptr ? json_->schema() : csv_->schema();
  }
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override {
    std::shared_ptr<arrow::RecordBatch> batch;
    if (json_ != nullptr) {
      ARROW_RETURN_NOT_OK(json_->ReadNext(&batch));
    } else {
      ARROW_RETURN_NOT_OK(csv_->ReadNext(&batch));
    }
    return batch;
  }
  int64_t bytes_done() const override { return counter_->count(); }

 private:
  TextInput() = default;
  std::shared_ptr<CountingInputStream> counter_;
  std::unique_ptr<arrow::util::Codec> codec_;  // outlives the stream using it
  std::shared_ptr<arrow::csv::StreamingReader> csv_;
  std::shared_ptr<arrow::json::StreamingReader> json_;
};

arrow::Result<std::unique_ptr<InputFile>> OpenInput(const InputSpec& spec,
                                                    const arrow::Schema* table_schema) {
  auto opened = spec.format == InputFormat::kParquet
                    ? ParquetInput::Open(spec)
                    : TextInput::Open(spec, table_schema);
  if (!opened.ok()) return WithContext(opened.status(), "reading " + spec.path);
  return opened;
}

// --- SQL scripts ------------------------------------------------------------

std::string Trim(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const size_t last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

// Where and how results go.
struct OutputTarget {
  OutputFormat format = OutputFormat::kTable;
  std::string path;  // empty: stdout
  TextTableOptions table;
};

// Owns the -o file of the text formats.
class OutputStream {
 public:
  static arrow::Result<std::unique_ptr<OutputStream>> Open(const OutputTarget& target) {
    auto stream = std::unique_ptr<OutputStream>(new OutputStream());
    if (!target.path.empty() && target.format != OutputFormat::kParquet) {
      stream->file_.open(target.path, std::ios::binary | std::ios::trunc);
      if (!stream->file_) return arrow::Status::IOError("cannot write ", target.path);
      stream->out_ = &stream->file_;
    }
    return stream;
  }
  std::ostream* get() { return out_; }

 private:
  OutputStream() = default;
  std::ofstream file_;
  std::ostream* out_ = &std::cout;
};

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
  const auto start = Clock::now();
  if (explain_analyze) {
    ARROW_ASSIGN_OR_RAISE(std::string plan, session->ExplainAnalyze(sql));
    *out << plan;
    if (!plan.empty() && plan.back() != '\n') *out << '\n';
    out->flush();
    std::cerr << fmt::format("({})", FormatSeconds(SecondsSince(start))) << std::endl;
    return arrow::Status::OK();
  }
  ARROW_ASSIGN_OR_RAISE(auto reader, session->SqlStream(sql));
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

// --- the interactive shell --------------------------------------------------

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

// --- subcommands ------------------------------------------------------------

struct GlobalArgs {
  std::string warehouse;
  std::vector<std::string> sets;
  std::vector<std::string> storage_options;
};

arrow::Result<Lake> OpenLake(const GlobalArgs& global) {
  std::string url = global.warehouse;
  if (url.empty()) {
    const char* env = std::getenv("TIMELAKE_WAREHOUSE");
    if (env != nullptr) url = env;
  }
  if (url.empty()) {
    return UsageError("no warehouse: pass -w WAREHOUSE or set TIMELAKE_WAREHOUSE");
  }
  ARROW_ASSIGN_OR_RAISE(auto options,
                        ParseKeyValues(global.storage_options, "--storage-option"));
  return Lake::Open(url, options);
}

// Flags shared by `create` and `append --create`.
struct CreateArgs {
  std::optional<std::string> time_column;
  std::vector<std::string> series_key;
  std::string chunk = "day";
  std::vector<std::string> properties;

  void AddTo(CLI::App* app) {
    app->add_option("--time-column", time_column,
                    "The timestamp column; makes a time-series table");
    app->add_option("--series-key", series_key,
                    "Comma-separated columns identifying one series")
        ->delimiter(',')
        ->allow_extra_args(false);
    app->add_option("--chunk", chunk, "Time partition size")
        ->check(CLI::IsMember({"hour", "day", "month"}))
        ->capture_default_str();
    app->add_option(
           "--set", properties,
           "Table property KEY=VALUE (timelake.* settings or Iceberg properties)")
        ->allow_extra_args(false);
  }

  arrow::Result<TableOptions> ToOptions() const {
    TableOptions options;
    options.time_column = time_column;
    options.series_key = series_key;
    ARROW_ASSIGN_OR_RAISE(options.chunk, ParseChunk(chunk));
    ARROW_ASSIGN_OR_RAISE(options.properties, ParseKeyValues(properties, "--set"));
    return options;
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

struct CreateCommand {
  std::string table;
  std::string schema_from;
  std::string input_format;
  CreateArgs create;
};

arrow::Status RunCreate(const GlobalArgs& global, const CreateCommand& args) {
  std::optional<InputFormat> forced;
  if (!args.input_format.empty()) {
    ARROW_ASSIGN_OR_RAISE(forced, ParseInputFormat(args.input_format));
  }
  ARROW_ASSIGN_OR_RAISE(TableOptions options, args.create.ToOptions());
  ARROW_ASSIGN_OR_RAISE(InputSpec spec, DescribeInput(args.schema_from, forced));
  ARROW_ASSIGN_OR_RAISE(auto input, OpenInput(spec, nullptr));
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  ARROW_ASSIGN_OR_RAISE(Table table,
                        lake.CreateTable(args.table, *input->schema(), options));
  std::cout << "created " << DescribeTable(table) << std::endl;
  return arrow::Status::OK();
}

struct AppendCommand {
  std::string table;
  std::vector<std::string> files;
  bool create_missing = false;
  CreateArgs create;
  std::optional<std::string> batch_id;
  std::string input_format;
  int64_t commit_rows = 1000000;
  bool no_maintain = false;
};

arrow::Status RunAppend(const GlobalArgs& global, const AppendCommand& args) {
  if (args.commit_rows < 1) return UsageError("--commit-rows must be at least 1");
  std::optional<InputFormat> forced;
  if (!args.input_format.empty()) {
    ARROW_ASSIGN_OR_RAISE(forced, ParseInputFormat(args.input_format));
  }
  // Every file is checked before the first commit, so a typo in the last
  // name does not leave a half-done import.
  std::vector<InputSpec> specs;
  int64_t total_bytes = 0;
  for (const auto& path : args.files) {
    ARROW_ASSIGN_OR_RAISE(InputSpec spec, DescribeInput(path, forced));
    total_bytes += spec.size;
    specs.push_back(std::move(spec));
  }
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));

  const auto start = Clock::now();
  std::unique_ptr<InputFile> first_input;
  auto loaded = lake.LoadTable(args.table);
  if (!loaded.ok() && KindOf(loaded.status()) == ErrorKind::kNotFound &&
      args.create_missing) {
    ARROW_ASSIGN_OR_RAISE(TableOptions options, args.create.ToOptions());
    ARROW_ASSIGN_OR_RAISE(first_input, OpenInput(specs.front(), nullptr));
    loaded = lake.CreateTable(args.table, *first_input->schema(), options);
    // Another process may have created it meanwhile: use theirs.
    if (!loaded.ok() && KindOf(loaded.status()) == ErrorKind::kAlreadyExists) {
      loaded = lake.LoadTable(args.table);
    }
    if (loaded.ok()) std::cerr << "created " << DescribeTable(*loaded) << std::endl;
  }
  if (!loaded.ok()) return loaded.status();
  const Table table = std::move(loaded).ValueOrDie();
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

  BatchCommitter committer(table, args.commit_rows, args.batch_id);
  if (args.no_maintain) committer.set_auto_maintain(false);
  // Errors after some commits landed say so: those rows stay.
  auto failed = [&](const arrow::Status& st, const std::string& context) {
    const auto& totals = committer.totals();
    if (totals.commits == 0) return WithContext(st, context);
    return WithContext(
        st,
        fmt::format("{} ({} rows in {} commits were committed before this error{})",
                    context, totals.rows, totals.commits,
                    args.batch_id ? "; re-run with the same --batch-id to resume" : ""));
  };
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
    while (true) {
      auto batch = input->Next();
      if (!batch.ok()) return failed(batch.status(), context);
      if (*batch == nullptr) break;
      auto added = committer.Add(*batch);
      if (!added.ok()) return failed(added, context);
      progress.Update(bytes_before + input->bytes_done(), committer.totals().input_rows);
    }
    bytes_before += spec.size;
  }
  if (auto st = committer.Flush(); !st.ok()) return failed(st, "the last commit");
  progress.Finish();
  const std::string source =
      specs.size() == 1 ? "" : fmt::format(" from {} files", specs.size());
  std::cout << DescribeTotals("appended", source, committer.totals(), SecondsSince(start))
            << std::endl;
  return arrow::Status::OK();
}

struct SqlCommand {
  std::string query;
  std::string file;
  std::string format = "table";
  std::string output;
  int64_t max_rows = 40;
  bool explain_analyze = false;
};

arrow::Status RunSql(const GlobalArgs& global, const SqlCommand& args) {
  if (!args.query.empty() && !args.file.empty()) {
    return UsageError("give a QUERY or -f FILE, not both");
  }
  OutputTarget target;
  ARROW_ASSIGN_OR_RAISE(target.format, ParseOutputFormat(args.format));
  target.path = args.output;
  target.table.max_rows = args.max_rows;
  // The stderr timing line already counts rows; the table only notes a cut.
  target.table.row_count = false;
  if (target.format == OutputFormat::kParquet && target.path.empty()) {
    return UsageError("--format parquet writes a file: pass -o FILE");
  }
  ARROW_ASSIGN_OR_RAISE(auto session_statements, SessionStatements(global.sets));
  ARROW_ASSIGN_OR_RAISE(auto out, OutputStream::Open(target));

  std::string script;
  bool interactive = false;
  if (!args.query.empty()) {
    script = args.query;
  } else if (!args.file.empty()) {
    std::ifstream in(args.file, std::ios::binary);
    if (!in) return arrow::Status::IOError("cannot read ", args.file);
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

  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  Session session(lake);
  ARROW_RETURN_NOT_OK(ApplySessionStatements(&session, session_statements));
  if (interactive) return RunShell(&session, target, args.explain_analyze, out->get());

  ARROW_ASSIGN_OR_RAISE(const auto statements, Session::Parse(script));
  if (statements.empty()) return UsageError("no SQL statement given");
  if (target.format == OutputFormat::kParquet && statements.size() > 1) {
    return UsageError("--format parquet takes a single statement");
  }
  for (const auto& statement : statements) {
    auto status =
        RunStatement(&session, statement.text, args.explain_analyze, target, out->get());
    if (!status.ok()) {
      if (statements.size() == 1) return status;
      return WithContext(status, fmt::format("statement at line {}", statement.line));
    }
  }
  return arrow::Status::OK();
}

struct LatestCommand {
  std::string table;
  std::string format = "table";
  std::string output;
  int64_t max_rows = 40;
};

arrow::Status RunLatest(const GlobalArgs& global, const LatestCommand& args) {
  OutputTarget target;
  ARROW_ASSIGN_OR_RAISE(target.format, ParseOutputFormat(args.format));
  target.path = args.output;
  target.table.max_rows = args.max_rows;
  target.table.row_count = false;
  ARROW_ASSIGN_OR_RAISE(auto session_statements, SessionStatements(global.sets));
  ARROW_ASSIGN_OR_RAISE(auto out, OutputStream::Open(target));
  ARROW_ASSIGN_OR_RAISE(auto writer, MakeWriter(target, out->get()));
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  Session session(lake);
  ARROW_RETURN_NOT_OK(ApplySessionStatements(&session, session_statements));
  const auto start = Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto latest, session.Latest(args.table));
  ARROW_RETURN_NOT_OK(WriteTable(*latest, writer.get()));
  PrintTiming(writer->rows(), SecondsSince(start));
  return arrow::Status::OK();
}

std::string InfoJson(const TableInfo& info) {
  const auto optional_string = [](const std::optional<std::string>& value) {
    return value.has_value() ? JsonQuote(*value) : std::string("null");
  };
  std::vector<std::string> series_key;
  for (const auto& column : info.series_key) series_key.push_back(JsonQuote(column));
  std::vector<std::string> properties;
  for (const auto& [key, value] : info.properties) {
    properties.push_back(JsonQuote(key) + ": " + JsonQuote(value));
  }
  return fmt::format(
      "{{\"name\": {}, \"location\": {}, \"version\": {}, \"snapshot_id\": {}, "
      "\"time_column\": {}, \"series_key\": [{}], \"chunk\": {}, \"dedup\": {}, "
      "\"rows\": {}, \"files\": {}, \"bytes\": {}, \"snapshots\": {}, "
      "\"properties\": {{{}}}}}",
      JsonQuote(info.name), JsonQuote(info.location), info.version,
      info.snapshot_id.has_value() ? std::to_string(*info.snapshot_id) : "null",
      optional_string(info.time_column), fmt::join(series_key, ", "),
      JsonQuote(info.chunk), info.dedup ? "true" : "false", info.rows, info.files,
      info.bytes, info.snapshots, fmt::join(properties, ", "));
}

std::string InfoText(const TableInfo& info) {
  std::string text;
  const auto row = [&](std::string_view key, const std::string& value) {
    text += fmt::format("{:<12} {}\n", key, value);
  };
  row("table", info.name);
  row("location", info.location);
  row("version", std::to_string(info.version));
  row("snapshot",
      info.snapshot_id.has_value() ? std::to_string(*info.snapshot_id) : "none");
  row("time column", info.time_column.value_or("none (plain table)"));
  row("series key", info.series_key.empty()
                        ? "none"
                        : fmt::format("{}", fmt::join(info.series_key, ",")));
  row("chunk", info.chunk);
  row("dedup", info.dedup ? "on" : "off");
  row("rows", FormatInteger(info.rows));
  row("files", FormatInteger(info.files));
  row("size",
      fmt::format("{} ({} bytes)", FormatBytes(info.bytes), FormatInteger(info.bytes)));
  row("snapshots", FormatInteger(info.snapshots));
  if (!info.properties.empty()) {
    text += "properties\n";
    for (const auto& [key, value] : info.properties) {
      text += fmt::format("  {} = {}\n", key, value);
    }
  }
  return text;
}

struct InfoCommand {
  std::string table;
  std::string format = "text";
};

arrow::Status RunInfo(const GlobalArgs& global, const InfoCommand& args) {
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(args.table));
  const TableInfo info = table.Info();
  std::cout << (args.format == "json" ? InfoJson(info) + "\n" : InfoText(info))
            << std::flush;
  return arrow::Status::OK();
}

arrow::Status RunLs(const GlobalArgs& global, const std::string& ns) {
  if (!ns.empty()) ARROW_RETURN_NOT_OK(ValidateNamePart(ns, "namespace"));
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  ARROW_ASSIGN_OR_RAISE(auto tables, lake.ListTables(ns));
  std::string text;
  for (const auto& name : tables) text += name.ToString() + "\n";
  std::cout << text << std::flush;
  return arrow::Status::OK();
}

arrow::Status RunDrop(const GlobalArgs& global, const std::string& table,
                      bool if_exists) {
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  auto status = lake.DropTable(table);
  if (!status.ok() && if_exists && KindOf(status) == ErrorKind::kNotFound) {
    std::cerr << table << " does not exist" << std::endl;
    return arrow::Status::OK();
  }
  ARROW_RETURN_NOT_OK(status);
  std::cout << "dropped " << table << std::endl;
  return arrow::Status::OK();
}

struct AlterCommand {
  std::string table;
  std::vector<std::string> sets;
  std::vector<std::string> unsets;
};

// One metadata-only commit with every change.
arrow::Status RunAlter(const GlobalArgs& global, const AlterCommand& args) {
  if (args.sets.empty() && args.unsets.empty()) {
    return UsageError("alter needs at least one --set KEY=VALUE or --unset KEY");
  }
  std::map<std::string, std::optional<std::string>> changes;
  ARROW_ASSIGN_OR_RAISE(auto sets, ParseKeyValues(args.sets, "--set"));
  for (auto& [k, v] : sets) changes[k] = v;
  for (const auto& k : args.unsets) changes[k] = std::nullopt;
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(args.table));
  ARROW_ASSIGN_OR_RAISE(Table altered, table.SetProperties(changes));
  std::cout << "altered " << altered.name().ToString() << ": version "
            << altered.version() << std::endl;
  return arrow::Status::OK();
}

struct MaintainCommand {
  std::string table;
  bool no_retention = false;
  bool no_compact = false;
  bool no_expire = false;
  bool no_orphans = false;
  std::string orphan_age = "1d";
  std::string format = "text";
};

arrow::Status RunMaintain(const GlobalArgs& global, const MaintainCommand& args) {
  MaintainOptions options;
  options.retention = !args.no_retention;
  options.compact = !args.no_compact;
  options.expire = !args.no_expire;
  options.clean_orphans = !args.no_orphans;
  auto age = ParseDuration(args.orphan_age);
  if (!age.ok()) return UsageError("--orphan-age: " + age.status().message());
  options.orphan_age = *age;
  if (args.format == "text") {
    options.progress = [](const std::string& line) { std::cerr << line << std::endl; };
  }
  ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global));
  ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(args.table));
  ARROW_ASSIGN_OR_RAISE(auto maintained, table.Maintain(options));
  const MaintainReport& r = maintained.second;
  if (args.format == "json") {
    nlohmann::json out = {
        {"table", table.name().ToString()},
        {"version", r.version},
        {"partitions_dropped", r.partitions_dropped},
        {"files_dropped", r.files_dropped},
        {"rows_dropped", r.rows_dropped},
        {"partitions_compacted", r.partitions_compacted},
        {"files_rewritten", r.files_rewritten},
        {"files_written", r.files_written},
        {"rows_rewritten", r.rows_rewritten},
        {"duplicates_removed", r.duplicates_removed},
        {"bytes_rewritten", r.bytes_rewritten},
        {"bytes_written", r.bytes_written},
        {"snapshots_expired", r.snapshots_expired},
        {"files_deleted", r.files_deleted},
        {"orphans_deleted", r.orphans_deleted},
        {"commits", r.commits},
        {"seconds", static_cast<double>(r.duration.count()) / 1e6},
    };
    std::cout << out.dump() << std::endl;
    return arrow::Status::OK();
  }
  std::cout << fmt::format(
                   "maintained {} in {:.2f} s: version {}; {} partitions dropped; {} "
                   "partitions compacted ({} files -> {}, {} duplicates removed); {} "
                   "snapshots expired, {} files deleted; {} orphan files deleted",
                   table.name().ToString(), static_cast<double>(r.duration.count()) / 1e6,
                   r.version, r.partitions_dropped, r.partitions_compacted,
                   r.files_rewritten, r.files_written, r.duplicates_removed,
                   r.snapshots_expired, r.files_deleted, r.orphans_deleted)
            << std::endl;
  return arrow::Status::OK();
}

// --- main -------------------------------------------------------------------

int Main(int argc, char** argv) {
  CLI::App app{
      "Timelake: time series as Apache Iceberg tables of Parquet files, queried with "
      "SQL."};
  app.name("timelake");
  app.set_version_flag("--version",
                       fmt::format("timelake (table format {})", kFormatVersion));
  app.require_subcommand(1);
  // Global options may also follow the subcommand (`timelake sql -w DIR ...`).
  app.fallthrough();

  GlobalArgs global;
  app.add_option("-w,--warehouse", global.warehouse,
                 "Warehouse: a local path, file://, s3://, gs:// or az:// URL "
                 "(default: $TIMELAKE_WAREHOUSE)");
  app.add_option("--set", global.sets,
                 "Session setting timelake.NAME=VALUE for queries (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--storage-option", global.storage_options,
                 "Storage option KEY=VALUE, e.g. aws_region=eu-west-1 (repeatable)")
      ->allow_extra_args(false);

  CreateCommand create;
  auto* create_cmd =
      app.add_subcommand("create", "Create a table with the schema of a file");
  create_cmd->add_option("table", create.table, "Table name: [namespace.]table")
      ->required();
  create_cmd
      ->add_option("--schema-from", create.schema_from,
                   "Parquet, CSV, TSV or NDJSON file whose schema the table takes")
      ->required();
  create_cmd->add_option("--input-format", create.input_format,
                         "parquet|csv|tsv|ndjson (default: from the file name)");
  create.create.AddTo(create_cmd);

  AppendCommand append;
  auto* append_cmd = app.add_subcommand(
      "append",
      "Append Parquet, CSV, TSV, NDJSON files (.gz for gzipped text), one commit per "
      "--commit-rows rows");
  append_cmd->alias("import");
  append_cmd->add_option("table", append.table, "Table name: [namespace.]table")
      ->required();
  append_cmd->add_option("files", append.files, "Input files")->required();
  append_cmd->add_flag(
      "--create", append.create_missing,
      "Create the table from the first file's schema if it does not exist; "
      "--time-column, --series-key, --chunk and --set apply only then");
  append.create.AddTo(append_cmd);
  append_cmd->add_option(
      "--batch-id", append.batch_id,
      "Idempotency id: an import of one commit is tagged ID, a longer one "
      "ID#FIRST-END per commit (its input rows); a tag already in the table "
      "commits nothing, so a re-run resumes");
  append_cmd->add_option("--input-format", append.input_format,
                         "parquet|csv|tsv|ndjson (default: from each file name)");
  append_cmd->add_option("--commit-rows", append.commit_rows, "Rows per commit")
      ->capture_default_str();
  append_cmd->add_flag("--no-maintain", append.no_maintain,
                       "Skip inline maintenance after each commit (compaction, "
                       "retention, snapshot expiry)");

  MaintainCommand maintain;
  auto* maintain_cmd = app.add_subcommand(
      "maintain",
      "Retention, compaction into sorted duplicate-free files of the target size, "
      "snapshot expiry and deletion of unreferenced files");
  maintain_cmd->add_option("table", maintain.table, "Table name")->required();
  maintain_cmd->add_flag("--no-retention", maintain.no_retention,
                         "Keep partitions past timelake.retention");
  maintain_cmd->add_flag("--no-compact", maintain.no_compact, "Rewrite nothing");
  maintain_cmd->add_flag("--no-expire", maintain.no_expire, "Expire no snapshot");
  maintain_cmd->add_flag("--no-orphans", maintain.no_orphans,
                         "Skip the sweep of unreferenced files");
  maintain_cmd
      ->add_option("--orphan-age", maintain.orphan_age,
                   "Unreferenced files younger than this stay (they may belong to a "
                   "commit in flight); 0s only when nothing else writes")
      ->capture_default_str();
  maintain_cmd->add_option("--format", maintain.format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  SqlCommand sql;
  auto* sql_cmd = app.add_subcommand(
      "sql",
      "Run SQL: one QUERY, a script (-f FILE or stdin, statements end with ';'), or an "
      "interactive shell when neither is given on a terminal");
  sql_cmd->add_option("query", sql.query, "SQL statement(s)");
  sql_cmd->add_option("-f,--file", sql.file, "SQL script file");
  sql_cmd
      ->add_option("--format", sql.format,
                   "table (aligned text), csv (RFC 4180), json (NDJSON: one object per "
                   "line), parquet (needs -o)")
      ->check(CLI::IsMember({"table", "csv", "json", "ndjson", "parquet"}))
      ->capture_default_str();
  sql_cmd->add_option("-o,--output", sql.output, "Write results to this file");
  sql_cmd
      ->add_option("--max-rows", sql.max_rows, "Rows shown by --format table (0 = all)")
      ->capture_default_str();
  sql_cmd->add_flag("--explain-analyze", sql.explain_analyze,
                    "Print the executed plan with its metrics instead of the result");

  LatestCommand latest;
  auto* latest_cmd = app.add_subcommand("latest", "The newest row of every series");
  latest_cmd->add_option("table", latest.table, "Table name")->required();
  latest_cmd
      ->add_option("--format", latest.format, "table, csv, json (NDJSON) or parquet")
      ->check(CLI::IsMember({"table", "csv", "json", "ndjson", "parquet"}))
      ->capture_default_str();
  latest_cmd->add_option("-o,--output", latest.output, "Write the result to this file");
  latest_cmd->add_option("--max-rows", latest.max_rows, "Rows shown by --format table")
      ->capture_default_str();

  InfoCommand info;
  auto* info_cmd = app.add_subcommand("info", "Summary of a table");
  info_cmd->add_option("table", info.table, "Table name")->required();
  info_cmd->add_option("--format", info.format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  std::string ls_namespace;
  auto* ls_cmd = app.add_subcommand("ls", "List tables (of one namespace)");
  ls_cmd->add_option("namespace", ls_namespace, "Namespace");

  std::string drop_table;
  bool drop_if_exists = false;
  auto* drop_cmd = app.add_subcommand("drop", "Delete a table and all its files");
  drop_cmd->add_option("table", drop_table, "Table name")->required();
  drop_cmd->add_flag("--if-exists", drop_if_exists,
                     "No error when the table does not exist");

  AlterCommand alter;
  auto* alter_cmd = app.add_subcommand(
      "alter", "Set or remove table properties (one commit, no new snapshot)");
  alter_cmd->add_option("table", alter.table, "Table name")->required();
  alter_cmd->add_option("--set", alter.sets, "Property KEY=VALUE (repeatable)")
      ->allow_extra_args(false);
  alter_cmd->add_option("--unset", alter.unsets, "Property KEY to remove (repeatable)")
      ->allow_extra_args(false);

  std::string settings_format = "table";
  auto* settings_cmd = app.add_subcommand(
      "settings", "List every timelake.* setting: type, default, levels, description");
  settings_cmd
      ->add_option("--format", settings_format,
                   "table, markdown (docs/settings.md) or json")
      ->check(CLI::IsMember({"table", "markdown", "json"}))
      ->capture_default_str();

  DemoOptions demo;
  std::string demo_warehouse;
  auto* demo_cmd = app.add_subcommand(
      "demo", "Load the TSBS cpu-only data set into demo.cpu and run example queries");
  demo_cmd->add_option("-w,--warehouse", demo_warehouse,
                       "Warehouse (default: ./timelake-demo)");
  demo_cmd->add_option("--hosts", demo.hosts, "Hosts")->capture_default_str();
  demo_cmd->add_option("--hours", demo.hours, "Hours of data, a row per host every 10 s")
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(e);
    std::cerr << "timelake: error: " << OneLine(e.what()) << " (see --help)" << std::endl;
    return kExitUsage;
  }

  arrow::Status status = arrow::compute::Initialize();
  // Before the subcommand --set means session settings; table properties are
  // given after `create` or `append`, and the other commands run no query.
  const bool runs_queries =
      sql_cmd->parsed() || latest_cmd->parsed() || demo_cmd->parsed();
  if (status.ok() && !global.sets.empty() && !runs_queries) {
    status = UsageError(
        "--set before the subcommand sets session settings, which only sql, latest and "
        "demo "
        "use (table properties go after create or append: `create TABLE --set k=v`)");
  }
  if (status.ok()) {
    if (create_cmd->parsed()) {
      status = RunCreate(global, create);
    } else if (append_cmd->parsed()) {
      status = RunAppend(global, append);
    } else if (sql_cmd->parsed()) {
      status = RunSql(global, sql);
    } else if (latest_cmd->parsed()) {
      status = RunLatest(global, latest);
    } else if (info_cmd->parsed()) {
      status = RunInfo(global, info);
    } else if (ls_cmd->parsed()) {
      status = RunLs(global, ls_namespace);
    } else if (drop_cmd->parsed()) {
      status = RunDrop(global, drop_table, drop_if_exists);
    } else if (alter_cmd->parsed()) {
      status = RunAlter(global, alter);
    } else if (maintain_cmd->parsed()) {
      status = RunMaintain(global, maintain);
    } else if (settings_cmd->parsed()) {
      status = RunSettings(settings_format, &std::cout);
    } else if (demo_cmd->parsed()) {
      demo.warehouse = !demo_warehouse.empty()     ? demo_warehouse
                       : !global.warehouse.empty() ? global.warehouse
                                                   : "timelake-demo";
      auto statements = SessionStatements(global.sets);
      status = statements.status();
      if (status.ok()) {
        demo.session_statements = std::move(statements).ValueOrDie();
        status = RunDemo(demo, &std::cout);
      }
    }
  }
  if (!status.ok()) {
    PrintError(status);
    return IsUsageError(status) ? kExitUsage : kExitError;
  }
  return 0;
}

}  // namespace
}  // namespace timelake::cli

int main(int argc, char** argv) {
  int code = timelake::cli::kExitError;
  try {
    code = timelake::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "timelake: error: " << timelake::cli::OneLine(e.what()) << std::endl;
  } catch (...) {
    std::cerr << "timelake: error: unexpected failure" << std::endl;
  }
  // Background writes (head object, version hint) finish before exit.
  timelake::Flush();
  return code;
}
