// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/times.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/scalar.h>
#include <arrow/util/value_parsing.h>
#include <fmt/format.h>

#include "timelake/cli/util.h"

namespace timelake::cli {
namespace {

constexpr const char* kUtc = "UTC";

bool IsNumber(const arrow::DataType& type) {
  return arrow::is_integer(type.id()) || arrow::is_floating(type.id());
}

bool IsText(const arrow::DataType& type) {
  return type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING ||
         type.id() == arrow::Type::STRING_VIEW;
}

const char* UnitName(arrow::TimeUnit::type unit) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return "seconds";
    case arrow::TimeUnit::MILLI:
      return "milliseconds";
    case arrow::TimeUnit::MICRO:
      return "microseconds";
    case arrow::TimeUnit::NANO:
      return "nanoseconds";
  }
  return "?";
}

// Microseconds in one count of `unit` (a thousandth for nanoseconds).
double MicrosPer(arrow::TimeUnit::type unit) {
  switch (unit) {
    case arrow::TimeUnit::SECOND:
      return 1e6;
    case arrow::TimeUnit::MILLI:
      return 1e3;
    case arrow::TimeUnit::MICRO:
      return 1;
    case arrow::TimeUnit::NANO:
      return 1e-3;
  }
  return 1;
}

// The unit an epoch number most likely counts, by its size: seconds of the
// years 1973-5138 are 1e8-1e11, and each finer unit a thousand times more.
arrow::TimeUnit::type LikelyUnit(double value) {
  const double size = std::fabs(value);
  if (size < 1e11) return arrow::TimeUnit::SECOND;
  if (size < 1e14) return arrow::TimeUnit::MILLI;
  if (size < 1e17) return arrow::TimeUnit::MICRO;
  return arrow::TimeUnit::NANO;
}

// A timestamp for messages, e.g. "2026-12-03 11:00:40Z".
std::string FormatTime(int64_t value, arrow::TimeUnit::type unit) {
  arrow::TimestampScalar scalar(value, arrow::timestamp(unit, kUtc));
  return scalar.ToString();
}

arrow::Result<std::shared_ptr<arrow::Array>> Call(
    const std::string& function, std::vector<arrow::Datum> args,
    const arrow::compute::FunctionOptions* options = nullptr) {
  ARROW_ASSIGN_OR_RAISE(arrow::Datum out,
                        arrow::compute::CallFunction(function, args, options));
  return out.make_array();
}

// Builds a timestamp array of `type` from values and validity.
arrow::Result<std::shared_ptr<arrow::Array>> MakeTimes(
    const std::shared_ptr<arrow::DataType>& type, const std::vector<int64_t>& values,
    const std::vector<bool>& valid) {
  arrow::TimestampBuilder builder(type, arrow::default_memory_pool());
  ARROW_RETURN_NOT_OK(builder.AppendValues(values, valid));
  return builder.Finish();
}

}  // namespace

arrow::Result<arrow::TimeUnit::type> ParseTimeUnit(std::string_view text) {
  if (text == "s") return arrow::TimeUnit::SECOND;
  if (text == "ms") return arrow::TimeUnit::MILLI;
  if (text == "us") return arrow::TimeUnit::MICRO;
  if (text == "ns") return arrow::TimeUnit::NANO;
  return UsageError(
      fmt::format("unknown --time-unit '{}' (expected s, ms, us or ns)", text));
}

arrow::Result<std::shared_ptr<arrow::Schema>> CreationSchema(
    const arrow::Schema& file, const std::optional<std::string>& time_column,
    const TimeArgs& args) {
  if (!time_column.has_value()) return std::make_shared<arrow::Schema>(file);
  const int i = file.GetFieldIndex(*time_column);
  if (i < 0 || !IsNumber(*file.field(i)->type())) {
    return std::make_shared<arrow::Schema>(file);
  }
  if (!args.unit.has_value()) {
    return arrow::Status::Invalid(
        "time column '", *time_column, "' holds numbers (",
        file.field(i)->type()->ToString(),
        "), not times: if they are epoch times, say what they count with "
        "--time-unit s|ms|us|ns");
  }
  return file.SetField(
      i, file.field(i)->WithType(arrow::timestamp(arrow::TimeUnit::MICRO, kUtc)));
}

TimeReading::TimeReading(std::shared_ptr<arrow::Schema> table_schema, TimeArgs args)
    : table_schema_(std::move(table_schema)), args_(std::move(args)) {}

std::vector<std::string> TimeReading::notes() const {
  std::vector<std::string> notes;
  for (const auto& name : assumed_zone_) {
    notes.push_back(
        args_.zone.has_value()
            ? fmt::format("column '{}': times without a zone were read in {}", name,
                          *args_.zone)
            : fmt::format("column '{}': times without a zone were read as UTC "
                          "(--time-zone ZONE says otherwise)",
                          name));
  }
  for (const auto& name : truncated_) {
    notes.push_back(fmt::format(
        "column '{}': times were cut to microseconds (--truncate-time)", name));
  }
  return notes;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TimeReading::Convert(
    const std::shared_ptr<arrow::RecordBatch>& batch, int64_t first_row) {
  std::shared_ptr<arrow::RecordBatch> out = batch;
  for (int c = 0; c < batch->num_columns(); ++c) {
    const auto target = table_schema_->GetFieldByName(batch->schema()->field(c)->name());
    if (target == nullptr || target->type()->id() != arrow::Type::TIMESTAMP) continue;
    ARROW_ASSIGN_OR_RAISE(auto column,
                          ConvertColumn(batch->column(c), *target, first_row));
    if (column == batch->column(c)) continue;
    ARROW_ASSIGN_OR_RAISE(
        out,
        out->SetColumn(c, out->schema()->field(c)->WithType(column->type()), column));
  }
  return out;
}

arrow::Result<std::shared_ptr<arrow::Array>> TimeReading::ConvertColumn(
    const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
    int64_t first_row) {
  const arrow::DataType& type = *column->type();
  if (IsNumber(type)) return FromNumbers(column, target, first_row);
  if (IsText(type)) return FromText(column, target, first_row);
  if (type.id() == arrow::Type::TIMESTAMP) return ToMicros(column, target, first_row);
  return column;  // dates and the rest: the library's cast decides
}

arrow::Result<std::shared_ptr<arrow::Array>> TimeReading::FromNumbers(
    const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
    int64_t first_row) {
  const std::string& name = target.name();
  const auto& stored = static_cast<const arrow::TimestampType&>(*target.type());
  const auto type = arrow::timestamp(arrow::TimeUnit::MICRO, stored.timezone());
  if (column->null_count() == column->length()) {
    return arrow::MakeArrayOfNull(type, column->length());
  }
  if (!args_.unit.has_value()) {
    int64_t i = 0;
    while (column->IsNull(i)) ++i;
    ARROW_ASSIGN_OR_RAISE(auto scalar, column->GetScalar(i));
    ARROW_ASSIGN_OR_RAISE(auto as_double, scalar->CastTo(arrow::float64()));
    const double value = static_cast<const arrow::DoubleScalar&>(*as_double).value;
    const arrow::TimeUnit::type likely = LikelyUnit(value);
    std::string reading;
    if (std::fabs(value) < 9.2e18) {
      reading = fmt::format(", which as epoch {} is {}", UnitName(likely),
                            FormatTime(static_cast<int64_t>(value), likely));
    }
    return arrow::Status::Invalid("column '", name, "' holds numbers, not times (row ",
                                  first_row + i + 1, ": ", scalar->ToString(), reading,
                                  "): say what they count with --time-unit s|ms|us|ns");
  }
  const arrow::TimeUnit::type unit = *args_.unit;
  std::shared_ptr<arrow::Array> micros;
  if (arrow::is_floating(column->type_id())) {
    ARROW_ASSIGN_OR_RAISE(auto as_double,
                          arrow::compute::Cast(*column, arrow::float64()));
    ARROW_ASSIGN_OR_RAISE(auto scaled,
                          Call("multiply", {as_double, arrow::Datum(MicrosPer(unit))}));
    ARROW_ASSIGN_OR_RAISE(auto rounded, Call("round", {scaled}));
    auto cast = arrow::compute::Cast(*rounded, arrow::int64());
    if (!cast.ok()) {
      return arrow::Status::Invalid("column '", name, "': epoch ", UnitName(unit),
                                    " beyond the years a timestamp holds (",
                                    cast.status().message(), ")");
    }
    micros = *cast;
  } else {
    auto as_int = arrow::compute::Cast(*column, arrow::int64());
    if (!as_int.ok()) {
      return arrow::Status::Invalid("column '", name, "': ", as_int.status().message());
    }
    micros = *as_int;
    if (unit == arrow::TimeUnit::NANO) {
      ARROW_ASSIGN_OR_RAISE(auto nanos,
                            micros->View(arrow::timestamp(arrow::TimeUnit::NANO, kUtc)));
      ARROW_ASSIGN_OR_RAISE(micros, ToMicros(nanos, target, first_row));
      return micros->View(type);
    }
    if (unit != arrow::TimeUnit::MICRO) {
      const auto factor = static_cast<int64_t>(MicrosPer(unit));
      auto scaled = Call("multiply_checked", {micros, arrow::Datum(factor)});
      if (!scaled.ok()) {
        return arrow::Status::Invalid("column '", name, "': epoch ", UnitName(unit),
                                      " beyond the years a timestamp holds (",
                                      scaled.status().message(), ")");
      }
      micros = *scaled;
    }
  }
  return micros->View(type);
}

arrow::Result<std::shared_ptr<arrow::Array>> TimeReading::FromText(
    const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
    int64_t first_row) {
  const std::string& name = target.name();
  const auto& stored = static_cast<const arrow::TimestampType&>(*target.type());
  const bool zoned = !stored.timezone().empty();
  ARROW_ASSIGN_OR_RAISE(auto text_datum, arrow::compute::Cast(*column, arrow::utf8()));
  const auto& text = static_cast<const arrow::StringArray&>(*text_datum);

  // ISO 8601 ("2026-12-03 11:00:50", "2026-12-03T11:00:50.5Z", "…+01:00",
  // a date alone) and the same with slashes.
  static const auto* const kParsers =
      new std::vector<std::shared_ptr<arrow::TimestampParser>>{
          arrow::TimestampParser::MakeISO8601(),
          arrow::TimestampParser::MakeStrptime("%Y/%m/%d %H:%M:%S"),
          arrow::TimestampParser::MakeStrptime("%Y/%m/%d %H:%M"),
          arrow::TimestampParser::MakeStrptime("%Y/%m/%d"),
      };
  const int64_t n = text.length();
  std::vector<int64_t> values(static_cast<size_t>(n), 0);
  std::vector<bool> valid(static_cast<size_t>(n), false);
  std::vector<bool> naive(static_cast<size_t>(n), false);
  bool any_naive = false;
  for (int64_t i = 0; i < n; ++i) {
    if (text.IsNull(i)) continue;
    std::string_view value = text.GetView(i);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
    if (value.empty()) continue;
    bool parsed = false;
    bool has_zone = false;
    int64_t out = 0;
    for (const auto& parser : *kParsers) {
      if ((*parser)(value.data(), value.size(), arrow::TimeUnit::MICRO, &out,
                    &has_zone)) {
        parsed = true;
        break;
      }
      // Finer than a microsecond: read in nanoseconds, then cut or refuse.
      if ((*parser)(value.data(), value.size(), arrow::TimeUnit::NANO, &out, &has_zone)) {
        if (out % 1000 != 0 && !args_.truncate) {
          return arrow::Status::Invalid(
              "column '", name, "': '", value, "' (row ", first_row + i + 1,
              ") is finer than the microseconds a table keeps: pass --truncate-time to "
              "drop the rest");
        }
        if (out % 1000 != 0) truncated_.insert(name);
        out /= 1000;
        parsed = true;
        break;
      }
    }
    if (!parsed) {
      return arrow::Status::Invalid(
          "column '", name, "': cannot read '", value, "' (row ", first_row + i + 1,
          ") as a time: write times as ISO 8601, e.g. 2026-12-03 11:00:50, "
          "2026-12-03T11:00:50Z or 2026-12-03 11:00:50+01:00 (a time without a zone is "
          "read as UTC unless --time-zone says otherwise), or give epoch numbers with "
          "--time-unit s|ms|us|ns");
    }
    values[static_cast<size_t>(i)] = out;
    valid[static_cast<size_t>(i)] = true;
    if (!has_zone && zoned) {
      naive[static_cast<size_t>(i)] = true;
      any_naive = true;
    }
  }
  const auto type = arrow::timestamp(arrow::TimeUnit::MICRO, stored.timezone());
  if (any_naive) {
    assumed_zone_.insert(name);
    if (args_.zone.has_value()) {
      // The zone-less times, in the zone given; the others stay as they are.
      std::vector<bool> naive_valid(valid.size());
      for (size_t i = 0; i < valid.size(); ++i) naive_valid[i] = valid[i] && naive[i];
      ARROW_ASSIGN_OR_RAISE(
          auto local,
          MakeTimes(arrow::timestamp(arrow::TimeUnit::MICRO), values, naive_valid));
      ARROW_ASSIGN_OR_RAISE(auto assumed, Assume(local, name, first_row));
      const auto& instants = static_cast<const arrow::TimestampArray&>(*assumed);
      for (size_t i = 0; i < valid.size(); ++i) {
        if (naive_valid[i]) values[i] = instants.Value(static_cast<int64_t>(i));
      }
    }
  }
  return MakeTimes(type, values, valid);
}

arrow::Result<std::shared_ptr<arrow::Array>> TimeReading::Assume(
    const std::shared_ptr<arrow::Array>& local, const std::string& name,
    int64_t first_row) {
  arrow::compute::AssumeTimezoneOptions options(*args_.zone);
  auto assumed = arrow::compute::AssumeTimezone(local, options);
  if (!assumed.ok()) {
    return arrow::Status::Invalid("column '", name, "' (rows from ", first_row + 1,
                                  "): cannot read its times in zone '", *args_.zone,
                                  "': ", assumed.status().message());
  }
  return assumed->make_array();
}

arrow::Result<std::shared_ptr<arrow::Array>> TimeReading::ToMicros(
    const std::shared_ptr<arrow::Array>& column, const arrow::Field& target,
    int64_t first_row) {
  const std::string& name = target.name();
  const auto& type = static_cast<const arrow::TimestampType&>(*column->type());
  const auto& stored = static_cast<const arrow::TimestampType&>(*target.type());
  std::shared_ptr<arrow::Array> out = column;
  if (type.unit() == arrow::TimeUnit::NANO) {
    const auto& times = static_cast<const arrow::TimestampArray&>(*column);
    bool finer = false;
    for (int64_t i = 0; i < times.length(); ++i) {
      if (times.IsValid(i) && times.Value(i) % 1000 != 0) {
        if (!args_.truncate) {
          return arrow::Status::Invalid(
              "column '", name, "': ", FormatTime(times.Value(i), arrow::TimeUnit::NANO),
              " (row ", first_row + i + 1,
              ") is finer than the microseconds a table keeps: pass --truncate-time to "
              "drop the rest");
        }
        finer = true;
        break;
      }
    }
    if (finer) truncated_.insert(name);
    arrow::compute::CastOptions options = arrow::compute::CastOptions::Unsafe(
        arrow::timestamp(arrow::TimeUnit::MICRO, type.timezone()));
    ARROW_ASSIGN_OR_RAISE(auto cast,
                          arrow::compute::Cast(*out, options.to_type, options));
    out = cast;
  }
  // Zone-less times for a column of instants.
  if (type.timezone().empty() && !stored.timezone().empty()) {
    assumed_zone_.insert(name);
    if (args_.zone.has_value()) {
      ARROW_ASSIGN_OR_RAISE(out, Assume(out, name, first_row));
    }
  }
  return out;
}

}  // namespace timelake::cli
