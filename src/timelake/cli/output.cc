// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/output.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <ostream>
#include <utility>
#include <vector>

#include <arrow/array.h>
#include <arrow/io/file.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/type_traits.h>
#include <fmt/format.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "timelake/cli/util.h"

namespace timelake::cli {
namespace {

using Out = std::back_insert_iterator<std::string>;

// JSON quotes strings and emits nested values as JSON; the text formats
// (table, CSV) print scalars bare and nested values as JSON.
enum class Style { kText, kJson };

void AppendJsonQuoted(std::string_view text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(Out(*out), "\\u{:04x}", static_cast<int>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

void AppendDate(int64_t days, std::string* out) {
  const std::chrono::year_month_day ymd{
      std::chrono::sys_days{std::chrono::days{static_cast<int>(days)}}};
  fmt::format_to(Out(*out), "{:04d}-{:02d}-{:02d}", static_cast<int>(ymd.year()),
                 static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
}

// "HH:MM:SS" plus ".fff" with trailing zeros trimmed when `fraction` is not 0;
// `fraction` counts units of 10^-`digits` seconds.
void AppendTimeOfDay(int64_t seconds_of_day, int64_t fraction, int digits,
                     std::string* out) {
  fmt::format_to(Out(*out), "{:02d}:{:02d}:{:02d}", seconds_of_day / 3600,
                 seconds_of_day / 60 % 60, seconds_of_day % 60);
  if (fraction == 0 || digits == 0) return;
  std::string frac = fmt::format("{:0{}d}", fraction, digits);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  out->push_back('.');
  out->append(frac);
}

int UnitDigits(arrow::TimeUnit::type unit) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return 0;
    case arrow::TimeUnit::MILLI:
      return 3;
    case arrow::TimeUnit::MICRO:
      return 6;
    case arrow::TimeUnit::NANO:
      return 9;
  }
  return 0;
}

int64_t UnitsPerSecond(arrow::TimeUnit::type unit) {
  static constexpr int64_t kPow10[] = {1, 1000, 1000000, 1000000000};
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return kPow10[0];
    case arrow::TimeUnit::MILLI:
      return kPow10[1];
    case arrow::TimeUnit::MICRO:
      return kPow10[2];
    case arrow::TimeUnit::NANO:
      return kPow10[3];
  }
  return 1;
}

void AppendTimestamp(int64_t value, const arrow::TimestampType& type, Style style,
                     std::string* out) {
  constexpr int64_t kSecondsPerDay = 86400;
  const int64_t per_second = UnitsPerSecond(type.unit());
  const int64_t seconds = FloorDiv(value, per_second);
  const int64_t fraction = value - seconds * per_second;
  const int64_t days = FloorDiv(seconds, kSecondsPerDay);
  AppendDate(days, out);
  out->push_back(style == Style::kJson ? 'T' : ' ');
  AppendTimeOfDay(seconds - days * kSecondsPerDay, fraction, UnitDigits(type.unit()),
                  out);
  if (style == Style::kJson && !type.timezone().empty()) out->push_back('Z');
}

void AppendFloating(double value, Style style, std::string* out) {
  if (std::isfinite(value)) {
    fmt::format_to(Out(*out), "{}", value);
  } else if (style == Style::kJson) {
    out->append("null");  // JSON has no NaN or infinity
  } else {
    out->append(std::isnan(value) ? "NaN" : (value > 0 ? "inf" : "-inf"));
  }
}

void AppendHex(std::string_view bytes, std::string* out) {
  for (unsigned char byte : bytes) fmt::format_to(Out(*out), "{:02x}", byte);
}

void AppendValue(const arrow::Array& array, int64_t i, Style style, std::string* out);

// A nested value as JSON (for every style).
template <typename ListArrayType>
void AppendList(const ListArrayType& list, int64_t i, std::string* out) {
  const auto& values = *list.values();
  const int64_t begin = list.value_offset(i);
  const int64_t end = begin + list.value_length(i);
  out->push_back('[');
  for (int64_t j = begin; j < end; ++j) {
    if (j > begin) out->append(", ");
    AppendValue(values, j, Style::kJson, out);
  }
  out->push_back(']');
}

void AppendValue(const arrow::Array& array, int64_t i, Style style, std::string* out) {
  if (array.IsNull(i)) {
    out->append(style == Style::kJson ? "null" : "NULL");
    return;
  }
  const auto quoted = [&](std::string_view text) {
    if (style == Style::kJson) {
      AppendJsonQuoted(text, out);
    } else {
      out->append(text);
    }
  };
  switch (array.type_id()) {
    case arrow::Type::BOOL:
      out->append(static_cast<const arrow::BooleanArray&>(array).Value(i) ? "true"
                                                                          : "false");
      return;
#define TIMELAKE_CLI_INTEGER_CASE(ID, ArrayType)                                    \
  case arrow::Type::ID:                                                             \
    fmt::format_to(Out(*out), "{}", static_cast<const ArrayType&>(array).Value(i)); \
    return;
      TIMELAKE_CLI_INTEGER_CASE(INT8, arrow::Int8Array)
      TIMELAKE_CLI_INTEGER_CASE(INT16, arrow::Int16Array)
      TIMELAKE_CLI_INTEGER_CASE(INT32, arrow::Int32Array)
      TIMELAKE_CLI_INTEGER_CASE(INT64, arrow::Int64Array)
      TIMELAKE_CLI_INTEGER_CASE(UINT8, arrow::UInt8Array)
      TIMELAKE_CLI_INTEGER_CASE(UINT16, arrow::UInt16Array)
      TIMELAKE_CLI_INTEGER_CASE(UINT32, arrow::UInt32Array)
      TIMELAKE_CLI_INTEGER_CASE(UINT64, arrow::UInt64Array)
#undef TIMELAKE_CLI_INTEGER_CASE
    case arrow::Type::FLOAT:
      AppendFloating(static_cast<const arrow::FloatArray&>(array).Value(i), style, out);
      return;
    case arrow::Type::DOUBLE:
      AppendFloating(static_cast<const arrow::DoubleArray&>(array).Value(i), style, out);
      return;
    case arrow::Type::DECIMAL32:
      out->append(static_cast<const arrow::Decimal32Array&>(array).FormatValue(i));
      return;
    case arrow::Type::DECIMAL64:
      out->append(static_cast<const arrow::Decimal64Array&>(array).FormatValue(i));
      return;
    case arrow::Type::DECIMAL128:
      out->append(static_cast<const arrow::Decimal128Array&>(array).FormatValue(i));
      return;
    case arrow::Type::DECIMAL256:
      out->append(static_cast<const arrow::Decimal256Array&>(array).FormatValue(i));
      return;
    case arrow::Type::STRING:
      quoted(static_cast<const arrow::StringArray&>(array).GetView(i));
      return;
    case arrow::Type::LARGE_STRING:
      quoted(static_cast<const arrow::LargeStringArray&>(array).GetView(i));
      return;
    case arrow::Type::STRING_VIEW:
      quoted(static_cast<const arrow::StringViewArray&>(array).GetView(i));
      return;
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
    case arrow::Type::FIXED_SIZE_BINARY: {
      std::string_view bytes;
      if (array.type_id() == arrow::Type::BINARY) {
        bytes = static_cast<const arrow::BinaryArray&>(array).GetView(i);
      } else if (array.type_id() == arrow::Type::LARGE_BINARY) {
        bytes = static_cast<const arrow::LargeBinaryArray&>(array).GetView(i);
      } else if (array.type_id() == arrow::Type::BINARY_VIEW) {
        bytes = static_cast<const arrow::BinaryViewArray&>(array).GetView(i);
      } else {
        bytes = static_cast<const arrow::FixedSizeBinaryArray&>(array).GetView(i);
      }
      std::string hex;
      AppendHex(bytes, &hex);
      quoted(hex);
      return;
    }
    case arrow::Type::DATE32: {
      std::string text;
      AppendDate(static_cast<const arrow::Date32Array&>(array).Value(i), &text);
      quoted(text);
      return;
    }
    case arrow::Type::DATE64: {
      std::string text;
      AppendDate(
          FloorDiv(static_cast<const arrow::Date64Array&>(array).Value(i), 86400000),
          &text);
      quoted(text);
      return;
    }
    case arrow::Type::TIMESTAMP: {
      std::string text;
      AppendTimestamp(static_cast<const arrow::TimestampArray&>(array).Value(i),
                      static_cast<const arrow::TimestampType&>(*array.type()), style,
                      &text);
      quoted(text);
      return;
    }
    case arrow::Type::TIME32:
    case arrow::Type::TIME64: {
      const auto unit = array.type_id() == arrow::Type::TIME32
                            ? static_cast<const arrow::Time32Type&>(*array.type()).unit()
                            : static_cast<const arrow::Time64Type&>(*array.type()).unit();
      const int64_t value = array.type_id() == arrow::Type::TIME32
                                ? static_cast<const arrow::Time32Array&>(array).Value(i)
                                : static_cast<const arrow::Time64Array&>(array).Value(i);
      const int64_t per_second = UnitsPerSecond(unit);
      std::string text;
      AppendTimeOfDay(value / per_second, value % per_second, UnitDigits(unit), &text);
      quoted(text);
      return;
    }
    case arrow::Type::DICTIONARY: {
      const auto& dict = static_cast<const arrow::DictionaryArray&>(array);
      AppendValue(*dict.dictionary(), dict.GetValueIndex(i), style, out);
      return;
    }
    case arrow::Type::LIST:
      AppendList(static_cast<const arrow::ListArray&>(array), i, out);
      return;
    case arrow::Type::LARGE_LIST:
      AppendList(static_cast<const arrow::LargeListArray&>(array), i, out);
      return;
    case arrow::Type::FIXED_SIZE_LIST:
      AppendList(static_cast<const arrow::FixedSizeListArray&>(array), i, out);
      return;
    case arrow::Type::STRUCT: {
      const auto& st = static_cast<const arrow::StructArray&>(array);
      const auto& type = *st.struct_type();
      out->push_back('{');
      for (int f = 0; f < type.num_fields(); ++f) {
        if (f > 0) out->append(", ");
        AppendJsonQuoted(type.field(f)->name(), out);
        out->append(": ");
        AppendValue(*st.field(f), i, Style::kJson, out);
      }
      out->push_back('}');
      return;
    }
    default: {
      // Rare types (intervals, durations, maps, unions): Arrow's own rendering.
      auto scalar = array.GetScalar(i);
      quoted(scalar.ok() ? (*scalar)->ToString() : "?");
      return;
    }
  }
}

bool IsNumeric(const arrow::DataType& type) {
  if (type.id() == arrow::Type::DICTIONARY) {
    return IsNumeric(*static_cast<const arrow::DictionaryType&>(type).value_type());
  }
  return arrow::is_integer(type.id()) || arrow::is_floating(type.id()) ||
         arrow::is_decimal(type.id());
}

// Terminal columns taken by UTF-8 `text`: one per code point, which is right
// for the Latin, Greek and Cyrillic text that column values mostly hold.
int64_t DisplayWidth(std::string_view text) {
  return std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  });
}

// Makes a cell safe for one aligned line: control characters escaped, and cut
// to `max_width` code points.
std::string SanitizeCell(std::string_view text, int max_width) {
  std::string out;
  out.reserve(text.size());
  int64_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point && width >= max_width) {
      out.append("…");
      break;
    }
    if (c == '\n') {
      out.append("\\n");
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c == '\t') {
      out.append("\\t");
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out.push_back('?');
    } else {
      out.push_back(c);
    }
    if (starts_code_point) ++width;
  }
  return out;
}

void Pad(std::string* line, int64_t n) { line->append(static_cast<size_t>(n), ' '); }

arrow::Status CheckStream(const std::ostream& out, std::string_view what) {
  if (!out) return arrow::Status::IOError("writing ", what, " failed");
  return arrow::Status::OK();
}

class TableWriter : public ResultWriter {
 public:
  TableWriter(std::ostream* out, TextTableOptions options)
      : out_(out), options_(options) {}

  arrow::Status Begin(const std::shared_ptr<arrow::Schema>& schema) override {
    schema_ = schema;
    return arrow::Status::OK();
  }

  arrow::Status Write(const arrow::RecordBatch& batch) override {
    const int64_t keep =
        options_.max_rows > 0
            ? std::clamp<int64_t>(options_.max_rows - rows_, 0, batch.num_rows())
            : batch.num_rows();
    for (int64_t r = 0; r < keep; ++r) {
      std::vector<std::string> row;
      row.reserve(static_cast<size_t>(batch.num_columns()));
      for (int c = 0; c < batch.num_columns(); ++c) {
        std::string text;
        AppendValue(*batch.column(c), r, Style::kText, &text);
        row.push_back(SanitizeCell(text, options_.max_cell_width));
      }
      cells_.push_back(std::move(row));
    }
    rows_ += batch.num_rows();
    return arrow::Status::OK();
  }

  arrow::Status Finish() override {
    // A statement without columns (SET, DDL) prints nothing.
    if (schema_ == nullptr || schema_->num_fields() == 0) return arrow::Status::OK();
    const int columns = schema_->num_fields();
    std::vector<std::string> header;
    std::vector<int64_t> widths;
    std::vector<bool> numeric;
    for (int c = 0; c < columns; ++c) {
      header.push_back(SanitizeCell(schema_->field(c)->name(), options_.max_cell_width));
      widths.push_back(DisplayWidth(header.back()));
      numeric.push_back(IsNumeric(*schema_->field(c)->type()));
    }
    for (const auto& row : cells_) {
      for (int c = 0; c < columns; ++c) {
        widths[c] = std::max(widths[c], DisplayWidth(row[static_cast<size_t>(c)]));
      }
    }

    // The line " a | b | c": one space before, three between columns.
    int64_t line_width = 1 + 3 * (columns - 1);
    for (int64_t w : widths) line_width += w;
    const bool expanded = options_.expanded == Expanded::kOn ||
                          (options_.expanded == Expanded::kAuto && options_.width > 0 &&
                           line_width > options_.width);
    std::string text =
        expanded ? ExpandedText(header) : AlignedText(header, widths, numeric);

    const auto shown = static_cast<int64_t>(cells_.size());
    if (shown < rows_) {
      text.append(fmt::format("… ({} rows, first {} shown)\n", FormatInteger(rows_),
                              FormatInteger(shown)));
    } else if (options_.row_count) {
      text.append(
          fmt::format("({} row{})\n", FormatInteger(rows_), rows_ == 1 ? "" : "s"));
    }
    *out_ << text;
    out_->flush();
    return CheckStream(*out_, "the result");
  }

 private:
  // One line per row under the header and a rule.
  std::string AlignedText(const std::vector<std::string>& header,
                          const std::vector<int64_t>& widths,
                          const std::vector<bool>& numeric) const {
    const auto columns = static_cast<int>(header.size());
    std::string text;
    // Numbers (and their headers) align right, everything else left.
    const auto append_line = [&](const std::vector<std::string>& row) {
      for (int c = 0; c < columns; ++c) {
        const std::string& cell = row[static_cast<size_t>(c)];
        const int64_t gap = widths[c] - DisplayWidth(cell);
        text.append(c == 0 ? " " : " | ");
        const bool right = numeric[c];
        if (right) Pad(&text, gap);
        text.append(cell);
        if (!right && c + 1 < columns) Pad(&text, gap);
      }
      text.push_back('\n');
    };
    append_line(header);
    for (int c = 0; c < columns; ++c) {
      // " cell " between separators, without the trailing space on the last column.
      text.append(static_cast<size_t>(widths[c] + (c + 1 < columns ? 2 : 1)), '-');
      if (c + 1 < columns) text.push_back('+');
    }
    text.push_back('\n');
    for (const auto& row : cells_) append_line(row);
    return text;
  }

  // psql's expanded display (\x): per row a "-[ RECORD n ]" line, as wide
  // as the lines under it with a '+' over their '|' where it fits, then
  // "name | value" per column, names padded to the longest.
  std::string ExpandedText(const std::vector<std::string>& header) const {
    int64_t name_width = 0;
    for (const auto& name : header) name_width = std::max(name_width, DisplayWidth(name));
    int64_t value_width = 0;
    for (const auto& row : cells_) {
      for (const auto& cell : row)
        value_width = std::max(value_width, DisplayWidth(cell));
    }
    std::string text;
    for (size_t r = 0; r < cells_.size(); ++r) {
      std::string rule = fmt::format("-[ RECORD {} ]", r + 1);
      const auto rule_width = static_cast<int64_t>(rule.size());
      if (rule_width <= name_width + 1) {
        rule.append(static_cast<size_t>(name_width + 1 - rule_width), '-');
        rule.push_back('+');
        rule.append(static_cast<size_t>(value_width + 1), '-');
      } else if (rule_width < name_width + 3 + value_width) {
        rule.append(static_cast<size_t>(name_width + 3 + value_width - rule_width), '-');
      }
      text.append(rule);
      text.push_back('\n');
      for (size_t c = 0; c < header.size(); ++c) {
        text.append(header[c]);
        Pad(&text, name_width - DisplayWidth(header[c]));
        text.append(" | ");
        text.append(cells_[r][c]);
        text.push_back('\n');
      }
    }
    return text;
  }

  std::ostream* out_;
  TextTableOptions options_;
  std::shared_ptr<arrow::Schema> schema_;
  std::vector<std::vector<std::string>> cells_;
};

// Quotes a CSV field when RFC 4180 requires it (or when it is empty, to tell
// an empty string from a null, which is written as nothing).
void AppendCsvField(std::string_view field, std::string* out) {
  const bool quote =
      field.empty() || field.find_first_of(",\"\r\n") != std::string_view::npos;
  if (!quote) {
    out->append(field);
    return;
  }
  out->push_back('"');
  for (char c : field) {
    if (c == '"') out->push_back('"');
    out->push_back(c);
  }
  out->push_back('"');
}

class CsvWriter : public ResultWriter {
 public:
  explicit CsvWriter(std::ostream* out) : out_(out) {}

  arrow::Status Begin(const std::shared_ptr<arrow::Schema>& schema) override {
    if (schema->num_fields() == 0) return arrow::Status::OK();
    std::string line;
    for (int c = 0; c < schema->num_fields(); ++c) {
      if (c > 0) line.push_back(',');
      AppendCsvField(schema->field(c)->name(), &line);
    }
    line.push_back('\n');
    *out_ << line;
    return CheckStream(*out_, "CSV");
  }

  arrow::Status Write(const arrow::RecordBatch& batch) override {
    std::string text;
    std::string field;
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      for (int c = 0; c < batch.num_columns(); ++c) {
        if (c > 0) text.push_back(',');
        const arrow::Array& column = *batch.column(c);
        if (column.IsNull(r)) continue;
        field.clear();
        AppendValue(column, r, Style::kText, &field);
        AppendCsvField(field, &text);
      }
      text.push_back('\n');
    }
    *out_ << text;
    rows_ += batch.num_rows();
    return CheckStream(*out_, "CSV");
  }

  arrow::Status Finish() override {
    out_->flush();
    return CheckStream(*out_, "CSV");
  }

 private:
  std::ostream* out_;
};

class JsonWriter : public ResultWriter {
 public:
  explicit JsonWriter(std::ostream* out) : out_(out) {}

  arrow::Status Begin(const std::shared_ptr<arrow::Schema>& schema) override {
    keys_.clear();
    for (const auto& field : schema->fields()) {
      std::string key;
      AppendJsonQuoted(field->name(), &key);
      key.push_back(':');
      keys_.push_back(std::move(key));
    }
    return arrow::Status::OK();
  }

  arrow::Status Write(const arrow::RecordBatch& batch) override {
    std::string text;
    for (int64_t r = 0; r < batch.num_rows(); ++r) {
      text.push_back('{');
      for (int c = 0; c < batch.num_columns(); ++c) {
        if (c > 0) text.push_back(',');
        text.append(keys_[static_cast<size_t>(c)]);
        AppendValue(*batch.column(c), r, Style::kJson, &text);
      }
      text.append("}\n");
    }
    *out_ << text;
    rows_ += batch.num_rows();
    return CheckStream(*out_, "JSON");
  }

  arrow::Status Finish() override {
    out_->flush();
    return CheckStream(*out_, "JSON");
  }

 private:
  std::ostream* out_;
  std::vector<std::string> keys_;
};

class ParquetWriter : public ResultWriter {
 public:
  explicit ParquetWriter(std::string path) : path_(std::move(path)) {}

  arrow::Status Begin(const std::shared_ptr<arrow::Schema>& schema) override {
    ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::FileOutputStream::Open(path_));
    auto properties = parquet::WriterProperties::Builder()
                          .compression(arrow::Compression::ZSTD)
                          ->build();
    // Storing the Arrow schema keeps time zones and other Arrow-only details.
    auto arrow_properties =
        parquet::ArrowWriterProperties::Builder().store_schema()->build();
    ARROW_ASSIGN_OR_RAISE(
        writer_, parquet::arrow::FileWriter::Open(*schema, arrow::default_memory_pool(),
                                                  sink, properties, arrow_properties));
    return arrow::Status::OK();
  }

  arrow::Status Write(const arrow::RecordBatch& batch) override {
    rows_ += batch.num_rows();
    return writer_->WriteRecordBatch(batch);
  }

  arrow::Status Finish() override { return writer_->Close(); }

 private:
  std::string path_;
  std::unique_ptr<parquet::arrow::FileWriter> writer_;
};

}  // namespace

arrow::Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  if (text == "table") return OutputFormat::kTable;
  if (text == "csv") return OutputFormat::kCsv;
  if (text == "json" || text == "ndjson") return OutputFormat::kJson;
  if (text == "parquet") return OutputFormat::kParquet;
  return arrow::Status::Invalid("unknown output format '", text,
                                "' (expected table, csv, json or parquet)");
}

std::string_view OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return "table";
    case OutputFormat::kCsv:
      return "csv";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kParquet:
      return "parquet";
  }
  return "?";
}

arrow::Result<std::unique_ptr<ResultWriter>> MakeTextWriter(
    OutputFormat format, std::ostream* out, const TextTableOptions& options) {
  switch (format) {
    case OutputFormat::kTable:
      return std::make_unique<TableWriter>(out, options);
    case OutputFormat::kCsv:
      return std::make_unique<CsvWriter>(out);
    case OutputFormat::kJson:
      return std::make_unique<JsonWriter>(out);
    case OutputFormat::kParquet:
      break;
  }
  return arrow::Status::Invalid("the parquet format writes to a file: pass -o FILE");
}

std::unique_ptr<ResultWriter> MakeParquetWriter(std::string path) {
  return std::make_unique<ParquetWriter>(std::move(path));
}

arrow::Status WriteReader(arrow::RecordBatchReader* reader, ResultWriter* writer) {
  ARROW_RETURN_NOT_OK(writer->Begin(reader->schema()));
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(reader->ReadNext(&batch));
    if (batch == nullptr) break;
    ARROW_RETURN_NOT_OK(writer->Write(*batch));
  }
  return writer->Finish();
}

arrow::Status WriteTable(const arrow::Table& table, ResultWriter* writer) {
  arrow::TableBatchReader reader(table);
  return WriteReader(&reader, writer);
}

arrow::Status PrintTable(const arrow::Table& table, std::ostream* out,
                         const TextTableOptions& options) {
  TableWriter writer(out, options);
  return WriteTable(table, &writer);
}

std::string FormatInteger(int64_t value) {
  const std::string digits = fmt::format("{}", value);
  const size_t first = value < 0 ? 1 : 0;  // after the sign
  std::string out = digits.substr(0, first);
  for (size_t i = first; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string FormatCount(double value) {
  static constexpr const char* kSuffixes[] = {"", "k", "M", "G", "T"};
  size_t unit = 0;
  while (std::abs(value) >= 999.5 && unit + 1 < std::size(kSuffixes)) {
    value /= 1000;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f}", value);
  // One decimal below 10 ("1.2M"), none above ("350k").
  return std::abs(value) < 9.95 ? fmt::format("{:.1f}{}", value, kSuffixes[unit])
                                : fmt::format("{:.0f}{}", value, kSuffixes[unit]);
}

std::string FormatBytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes)
                   : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string FormatSeconds(double seconds) {
  if (seconds < 1) return fmt::format("{:.1f} ms", seconds * 1000);
  if (seconds < 60) return fmt::format("{:.2f} s", seconds);
  const auto whole = static_cast<int64_t>(seconds + 0.5);
  if (whole < 3600) return fmt::format("{}m{:02d}s", whole / 60, whole % 60);
  return fmt::format("{}h{:02d}m", whole / 3600, whole / 60 % 60);
}

std::string JsonQuote(std::string_view text) {
  std::string out;
  AppendJsonQuoted(text, &out);
  return out;
}

Progress::Progress(std::string label, int64_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() { Finish(); }

void Progress::Update(int64_t done, int64_t rows) {
  done_ = done;
  rows_ = rows;
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  Draw(/*final_line=*/false);
}

void Progress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (enabled_) Draw(/*final_line=*/true);
}

void Progress::Draw(bool final_line) {
  constexpr int kBarWidth = 20;
  const double elapsed = SecondsSince(start_);
  std::string line = fmt::format("\r{:<10} ", label_);
  double fraction = -1;
  if (total_ > 0) {
    fraction =
        std::clamp(static_cast<double>(done_) / static_cast<double>(total_), 0.0, 1.0);
    const int filled = static_cast<int>(fraction * kBarWidth);
    line += fmt::format("[{}{}] {:3.0f}% ", std::string(static_cast<size_t>(filled), '#'),
                        std::string(static_cast<size_t>(kBarWidth - filled), ' '),
                        fraction * 100);
  }
  line += FormatCount(static_cast<double>(rows_)) + " rows";
  if (elapsed > 0) {
    line += " " + FormatCount(static_cast<double>(rows_) / elapsed) + " rows/s";
  }
  if (final_line) {
    line += " in " + FormatSeconds(elapsed);
  } else if (fraction > 0.001) {
    const auto eta = static_cast<int64_t>(elapsed / fraction - elapsed + 0.5);
    line += eta < 60     ? fmt::format(" ETA {}s", eta)
            : eta < 3600 ? fmt::format(" ETA {}m{:02d}s", eta / 60, eta % 60)
                         : fmt::format(" ETA {}h{:02d}m", eta / 3600, eta / 60 % 60);
  }
  line += "\x1b[K";  // clear what a longer previous line left behind
  if (final_line) line += "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace timelake::cli
