// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/input.h"

#include <atomic>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include <arrow/compute/api.h>
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

#include "timelake/cli/util.h"
#include "timelake/status.h"

namespace timelake::cli {
namespace {

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

// Counts the bytes read through it: from the file (before decompression) and,
// for gzip, out of the decompressor. The readers read from their own threads.
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

// Large enough blocks that type inference sees plenty of rows and batches
// are big; small enough that memory stays a few blocks per file.
constexpr int32_t kTextBlockBytes = 8 << 20;

// The text of a file, through counters of its bytes, decompressed when it is
// gzipped.
struct TextStream {
  std::unique_ptr<arrow::util::Codec> codec;  // outlives the streams using it
  std::shared_ptr<CountingInputStream> raw;   // the file's bytes
  // The decompressor's output, when the file is gzipped.
  std::shared_ptr<CountingInputStream> inflated;
  std::shared_ptr<arrow::io::InputStream> text;
};

arrow::Result<TextStream> OpenTextStream(const InputSpec& spec) {
  TextStream out;
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(spec.path));
  out.raw = std::make_shared<CountingInputStream>(file);
  out.text = out.raw;
  if (spec.gzip) {
    ARROW_ASSIGN_OR_RAISE(out.codec,
                          arrow::util::Codec::Create(arrow::Compression::GZIP));
    ARROW_ASSIGN_OR_RAISE(auto inflating, arrow::io::CompressedInputStream::Make(
                                              out.codec.get(), out.text));
    out.inflated = std::make_shared<CountingInputStream>(inflating);
    out.text = out.inflated;
  }
  return out;
}

struct CsvOptions {
  arrow::csv::ReadOptions read = arrow::csv::ReadOptions::Defaults();
  arrow::csv::ParseOptions parse = arrow::csv::ParseOptions::Defaults();
  arrow::csv::ConvertOptions convert = arrow::csv::ConvertOptions::Defaults();
};

CsvOptions CsvOptionsOf(const InputSpec& spec) {
  CsvOptions options;
  options.read.block_size = kTextBlockBytes;
  if (spec.format == InputFormat::kTsv) options.parse.delimiter = '\t';
  // Nulls are empty fields and an empty string is "" (as `sql --format csv`
  // writes them), so both survive a round trip.
  options.convert.strings_can_be_null = true;
  options.convert.quoted_strings_can_be_null = false;
  return options;
}

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
  // leading zeros). Timestamps stay inferred: Arrow's CSV converter rejects
  // zone-less text for a zoned type, and the CLI's TimeReading converts them.
  static arrow::Result<std::unique_ptr<InputFile>> Open(
      const InputSpec& spec, const arrow::Schema* table_schema) {
    auto input = std::unique_ptr<TextInput>(new TextInput());
    ARROW_ASSIGN_OR_RAISE(input->stream_, OpenTextStream(spec));
    const std::shared_ptr<arrow::io::InputStream>& stream = input->stream_.text;
    if (spec.format == InputFormat::kNdjson) {
      auto read_options = arrow::json::ReadOptions::Defaults();
      read_options.block_size = kTextBlockBytes;
      auto parse_options = arrow::json::ParseOptions::Defaults();
      if (table_schema != nullptr) {
        // Timestamps stay inferred, as for CSV: epoch numbers and text
        // finer than the column's unit are for the CLI's TimeReading to
        // read or refuse (the JSON converter takes a number as a count of
        // the column's unit, and rejects nanosecond text without naming it).
        arrow::FieldVector fields;
        for (const auto& field : table_schema->fields()) {
          if (field->type()->id() == arrow::Type::TIMESTAMP) continue;
          fields.push_back(field->WithNullable(true));
        }
        parse_options.explicit_schema = arrow::schema(std::move(fields));
        parse_options.unexpected_field_behavior =
            arrow::json::UnexpectedFieldBehavior::InferType;
      }
      ARROW_ASSIGN_OR_RAISE(input->json_, arrow::json::StreamingReader::Make(
                                              stream, read_options, parse_options));
    } else {
      CsvOptions options = CsvOptionsOf(spec);
      if (table_schema != nullptr) {
        for (const auto& field : table_schema->fields()) {
          if (field->type()->id() == arrow::Type::TIMESTAMP) continue;
          options.convert.column_types[field->name()] = field->type();
        }
      }
      ARROW_ASSIGN_OR_RAISE(
          input->csv_, arrow::csv::StreamingReader::Make(arrow::io::default_io_context(),
                                                         stream, options.read,
                                                         options.parse, options.convert));
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
  // The bytes behind the batches returned so far. The readers read ahead of
  // what they have returned (several blocks, on their own threads), so the
  // bytes read from the file would reach the end long before the last batch.
  // For gzip, the text bytes consumed are scaled by the compression ratio
  // seen so far, to be bytes of the file as stored.
  int64_t bytes_done() const override {
    const int64_t consumed =
        json_ != nullptr ? json_->bytes_processed() : csv_->bytes_read();
    if (stream_.inflated == nullptr) return consumed;
    const int64_t inflated = stream_.inflated->count();
    if (inflated <= 0) return 0;
    return static_cast<int64_t>(static_cast<double>(consumed) *
                                static_cast<double>(stream_.raw->count()) /
                                static_cast<double>(inflated));
  }

 private:
  TextInput() = default;
  TextStream stream_;  // outlives the readers of it
  std::shared_ptr<arrow::csv::StreamingReader> csv_;
  std::shared_ptr<arrow::json::StreamingReader> json_;
};

// Whether every value of `values` (text) reads as `type`.
bool Holds(const arrow::Array& values, const std::shared_ptr<arrow::DataType>& type) {
  if (type->id() == arrow::Type::STRING) return true;
  if (type->id() == arrow::Type::NA) return values.null_count() == values.length();
  return arrow::compute::Cast(values, type, arrow::compute::CastOptions::Safe(type)).ok();
}

// One column of InferWholeFile: the type that holds every value read so far.
struct Inferred {
  Widening widening;
  int index = 0;  // in the batches of the pass
};

// Widens `column` to hold `values` too, rows `first_row`… of the file.
void Widen(Inferred* column, const std::shared_ptr<arrow::Array>& values,
           int64_t first_row) {
  auto& w = column->widening;
  if (values->null_count() == values->length() || Holds(*values, w.type)) return;
  std::vector<std::shared_ptr<arrow::DataType>> wider;
  switch (w.type->id()) {
    case arrow::Type::NA:
      wider = {arrow::int64(), arrow::boolean(), arrow::float64()};
      break;
    case arrow::Type::INT64:
      wider = {arrow::float64()};
      break;
    default:
      break;
  }
  wider.push_back(arrow::utf8());
  // The first value the inferred type cannot hold, found once: bisection
  // keeps the half that holds it, which costs about one more cast of the
  // batch.
  if (w.row == 0 && w.first->id() != arrow::Type::NA) {
    int64_t offset = 0, length = values->length();
    while (length > 1) {
      const int64_t half = length / 2;
      if (!Holds(*values->Slice(offset, half), w.first)) {
        length = half;
      } else {
        offset += half;
        length -= half;
      }
    }
    w.row = first_row + offset + 1;
    auto value = values->GetScalar(offset);
    if (value.ok()) w.value = (*value)->ToString();
  }
  for (const auto& type : wider) {
    if (Holds(*values, type)) {
      w.type = type;
      return;
    }
  }
}

}  // namespace

arrow::Result<std::vector<Widening>> InferWholeFile(const InputSpec& spec,
                                                    const arrow::Schema& first,
                                                    const std::set<std::string>& fixed) {
  std::vector<Widening> out;
  std::error_code error;
  if ((spec.format != InputFormat::kCsv && spec.format != InputFormat::kTsv) ||
      !std::filesystem::is_regular_file(spec.path, error)) {
    return out;
  }
  // Timestamps, dates and strings are left as inferred: text that is not a
  // time in a time column is for TimeReading to name, and a string holds
  // anything.
  std::vector<Inferred> columns;
  CsvOptions options = CsvOptionsOf(spec);
  for (const auto& field : first.fields()) {
    const auto id = field->type()->id();
    if (fixed.count(field->name()) > 0 ||
        (id != arrow::Type::NA && id != arrow::Type::INT64 && id != arrow::Type::DOUBLE &&
         id != arrow::Type::BOOL)) {
      continue;
    }
    Inferred column;
    column.widening.column = field->name();
    column.widening.first = field->type();
    column.widening.type = field->type();
    column.index = static_cast<int>(columns.size());
    columns.push_back(std::move(column));
    options.convert.include_columns.push_back(field->name());
    options.convert.column_types[field->name()] = arrow::utf8();
  }
  if (columns.empty()) return out;

  auto pass = [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(TextStream stream, OpenTextStream(spec));
    ARROW_ASSIGN_OR_RAISE(auto reader, arrow::csv::StreamingReader::Make(
                                           arrow::io::default_io_context(), stream.text,
                                           options.read, options.parse, options.convert));
    int64_t rows = 0;
    while (true) {
      std::shared_ptr<arrow::RecordBatch> batch;
      ARROW_RETURN_NOT_OK(reader->ReadNext(&batch));
      if (batch == nullptr) break;
      bool all_text = true;
      for (auto& column : columns) {
        Widen(&column, batch->column(column.index), rows);
        all_text = all_text && column.widening.type->id() == arrow::Type::STRING;
      }
      rows += batch->num_rows();
      if (all_text) break;  // nothing can widen further
    }
    return reader->Close();
  };
  if (auto st = pass(); !st.ok()) return WithContext(st, "reading " + spec.path);
  for (auto& column : columns) {
    if (!column.widening.type->Equals(*column.widening.first)) {
      out.push_back(std::move(column.widening));
    }
  }
  return out;
}

arrow::Result<InputFormat> ParseInputFormat(std::string_view text) {
  if (text == "parquet") return InputFormat::kParquet;
  if (text == "csv") return InputFormat::kCsv;
  if (text == "tsv") return InputFormat::kTsv;
  if (text == "ndjson" || text == "jsonl" || text == "json") return InputFormat::kNdjson;
  return UsageError(fmt::format(
      "unknown input format '{}' (expected parquet, csv, tsv or ndjson)", text));
}

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

arrow::Result<std::unique_ptr<InputFile>> OpenInput(const InputSpec& spec,
                                                    const arrow::Schema* table_schema) {
  auto opened = spec.format == InputFormat::kParquet
                    ? ParquetInput::Open(spec)
                    : TextInput::Open(spec, table_schema);
  if (!opened.ok()) return WithContext(opened.status(), "reading " + spec.path);
  return opened;
}

}  // namespace timelake::cli
