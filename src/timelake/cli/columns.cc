// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/columns.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "timelake/cli/util.h"

namespace timelake::cli {
namespace {

constexpr std::string_view kTypeNames =
    "int32 (int, integer), int64 (bigint, long), float32 (real), float64 (double, "
    "float), string (text, varchar, utf8), bool (boolean), timestamp, date32 (date), "
    "decimal(P,S)";

std::string_view Trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

// "NAME:TYPE" as a nullable field; `what` names the text in errors
// ("--column 'v:x'", "schema.txt line 3").
arrow::Result<std::shared_ptr<arrow::Field>> ParseNameType(std::string_view text,
                                                           const std::string& what) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return UsageError(fmt::format("{}: expected NAME:TYPE, e.g. value:double", what));
  }
  const std::string_view name = Trim(text.substr(0, colon));
  if (name.empty()) return UsageError(fmt::format("{}: no column name before ':'", what));
  auto type = ParseColumnType(Trim(text.substr(colon + 1)));
  if (!type.ok()) {
    return UsageError(fmt::format("{}: {}", what, type.status().message()));
  }
  return arrow::field(std::string(name), *type);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::DataType>> ParseColumnType(std::string_view text) {
  const std::string t = ToLower(Trim(text));
  if (t == "int32" || t == "int" || t == "integer") return arrow::int32();
  if (t == "int64" || t == "bigint" || t == "long") return arrow::int64();
  if (t == "float32" || t == "real") return arrow::float32();
  if (t == "float64" || t == "double" || t == "float") return arrow::float64();
  if (t == "string" || t == "text" || t == "varchar" || t == "utf8") return arrow::utf8();
  if (t == "bool" || t == "boolean") return arrow::boolean();
  // The one timestamp a table stores (SPEC §4.4): any other unit or zone
  // would be converted to it anyway.
  if (t == "timestamp") return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  if (t == "date32" || t == "date") return arrow::date32();
  std::string compact;  // "decimal(10, 2)" as "decimal(10,2)"
  for (char c : t) {
    if (c != ' ') compact += c;
  }
  int precision = 0, scale = 0, used = 0;
  if (std::sscanf(compact.c_str(), "decimal(%d,%d)%n", &precision, &scale, &used) == 2 &&
      used == static_cast<int>(compact.size())) {
    if (precision < 1 || precision > 38 || scale < 0 || scale > precision) {
      return UsageError(fmt::format(
          "type '{}': a decimal has a precision from 1 to 38 and a scale from 0 to "
          "its precision",
          text));
    }
    return arrow::decimal128(precision, scale);
  }
  return UsageError(fmt::format("unknown type '{}' (known: {})", text, kTypeNames));
}

std::string ColumnTypeName(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::INT32:
      return "int32";
    case arrow::Type::INT64:
      return "int64";
    case arrow::Type::FLOAT:
      return "float32";
    case arrow::Type::DOUBLE:
      return "float64";
    case arrow::Type::STRING:
      return "string";
    case arrow::Type::BOOL:
      return "bool";
    case arrow::Type::DATE32:
      return "date32";
    default:
      return type.ToString();
  }
}

arrow::Result<std::vector<std::shared_ptr<arrow::Field>>> ParseColumnFlags(
    const std::vector<std::string>& flags) {
  std::vector<std::shared_ptr<arrow::Field>> fields;
  std::set<std::string> names;
  for (const std::string& flag : flags) {
    const std::string what = fmt::format("--column '{}'", flag);
    ARROW_ASSIGN_OR_RAISE(auto field, ParseNameType(flag, what));
    if (!names.insert(field->name()).second) {
      return UsageError(
          fmt::format("{}: column '{}' is given twice", what, field->name()));
    }
    fields.push_back(std::move(field));
  }
  return fields;
}

arrow::Result<std::shared_ptr<arrow::Schema>> ReadSchemaFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return arrow::Status::IOError("reading ", path, ": cannot open it");
  arrow::FieldVector fields;
  std::set<std::string> names;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::string_view text = line;
    if (const auto hash = text.find('#'); hash != std::string_view::npos) {
      text = text.substr(0, hash);
    }
    text = Trim(text);
    if (text.empty()) continue;
    const std::string what = fmt::format("{} line {}", path, number);
    bool nullable = true;
    constexpr std::string_view kNotNull = "not null";
    if (text.size() > kNotNull.size() &&
        ToLower(text.substr(text.size() - kNotNull.size())) == kNotNull) {
      nullable = false;
      text = Trim(text.substr(0, text.size() - kNotNull.size()));
    }
    ARROW_ASSIGN_OR_RAISE(auto field, ParseNameType(text, what));
    if (!names.insert(field->name()).second) {
      return UsageError(
          fmt::format("{}: column '{}' is given twice", what, field->name()));
    }
    fields.push_back(field->WithNullable(nullable));
  }
  if (file.bad()) return arrow::Status::IOError("reading ", path, ": read error");
  if (fields.empty()) {
    return UsageError(fmt::format(
        "{} gives no columns (one NAME:TYPE per line, e.g. value:double)", path));
  }
  return arrow::schema(std::move(fields));
}

}  // namespace timelake::cli
