// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/rollup_definition.h"

#include <algorithm>
#include <limits>

namespace timelake::read {

namespace {

using nlohmann::json;

constexpr int64_t kMicrosPerSecond = 1'000'000;
constexpr int64_t kMicrosPerDay = 86'400 * kMicrosPerSecond;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// The widest bucket: 10,000 years, as a fixed width or in months. Wider is
// no rollup anyone means, and within it the bucket arithmetic below cannot
// overflow for any time within ±280,000 years (beyond, it saturates).
constexpr int64_t kMaxWidthUs = 10'000 * 365 * kMicrosPerDay;
constexpr int64_t kMaxMonths = 10'000 * 12;

// a * b and a + b, held at the ends of int64 instead of overflowing.
int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  if (!__builtin_mul_overflow(a, b, &out)) return out;
  return (a < 0) != (b < 0) ? kMin : kMax;
}
int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out;
  if (!__builtin_add_overflow(a, b, &out)) return out;
  return b < 0 ? kMin : kMax;
}

// Days since 1970-01-01 of a civil date, and back (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Months since 1970-01 of the month holding `micros`.
int64_t MonthIndex(int64_t micros) {
  int64_t days = micros / kMicrosPerDay;
  if (micros % kMicrosPerDay < 0) --days;
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2);
  return (y - 1970) * 12 + (m - 1);
}

// `index` is within a few million of 0 (MonthIndex of an int64 and at most
// kMaxMonths more), so only the last multiplication can overflow.
int64_t MonthStart(int64_t index) {
  int64_t y = index / 12, m = index % 12;
  if (m < 0) {
    m += 12;
    --y;
  }
  return SaturatingMul(DaysFromCivil(1970 + y, m + 1, 1), kMicrosPerDay);
}

int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// The aggregate functions a rollup stores (RollupAggregate), and whether
// each reads a column: count also counts rows (no column).
struct KnownFunction {
  std::string_view name;
  bool needs_column;
};
constexpr KnownFunction kFunctions[] = {
    {"count", false},
    {"sum", true},
    {"min", true},
    {"max", true},
    {"avg", true},
    {"first_value", true},
    {"last_value", true},
    {"m4", true},
    {"time_weighted_mean", true},
    {"time_weighted_mean:linear", true},
};

}  // namespace

int64_t Bucket::Floor(int64_t t) const {
  if (months > 0) return MonthStart(FloorDiv(MonthIndex(t), months) * months);
  return SaturatingMul(FloorDiv(t, width_us), width_us);
}

int64_t Bucket::Next(int64_t start) const {
  if (months > 0) return MonthStart(MonthIndex(start) + months);
  return SaturatingAdd(start, width_us);
}

int64_t Bucket::Ceil(int64_t t) const {
  const int64_t f = Floor(t);
  return f == t ? t : Next(f);
}

std::string Bucket::ToText() const {
  if (months > 0) return std::to_string(months) + "mo";
  const int64_t seconds = width_us / kMicrosPerSecond;
  for (auto [unit, n] : {std::pair{"d", int64_t{86400}}, {"h", 3600}, {"m", 60}}) {
    if (seconds % n == 0) return std::to_string(seconds / n) + unit;
  }
  return std::to_string(seconds) + "s";
}

arrow::Result<Bucket> Bucket::Parse(std::string_view text) {
  Bucket b;
  const std::string quoted = "rollup bucket '" + std::string(text) + "'";
  const std::string too_wide = quoted + ": wider than 10000 years";
  if (text.size() > 2 && text.substr(text.size() - 2) == "mo") {
    int64_t n = 0;
    for (char c : text.substr(0, text.size() - 2)) {
      if (c < '0' || c > '9') return Invalid(quoted + ": expected e.g. 1mo");
      n = n * 10 + (c - '0');
      if (n > kMaxMonths) return Invalid(too_wide);
    }
    if (n <= 0) return Invalid(quoted + " is empty");
    b.months = n;
    return b;
  }
  auto d = ParseDuration(text);
  if (!d.ok()) return Invalid("rollup bucket: " + d.status().message());
  if (d->count() <= 0 || d->count() % 1000 != 0) {
    return Invalid(quoted + ": the width must be whole seconds");
  }
  if (d->count() > kMaxWidthUs / 1000) return Invalid(too_wide);
  b.width_us = d->count() * 1000;
  return b;
}

std::string Bucket::Sql(const std::string& time_sql) const {
  if (months > 0) {
    return "date_bin(INTERVAL '" + std::to_string(months) + " months', " + time_sql + ")";
  }
  return "date_bin(INTERVAL '" + std::to_string(width_us / kMicrosPerSecond) +
         " seconds', " + time_sql + ")";
}

json Bucket::ToJson() const {
  if (months > 0) return {{"kind", "months"}, {"months", months}, {"origin_us", 0}};
  return {{"kind", "fixed"}, {"width_us", width_us}, {"origin_us", 0}};
}

arrow::Result<std::optional<RollupDefinition>> RollupDefinitionOf(
    const TableName& table, const std::map<std::string, std::string>& props,
    const internal::Contract& contract) {
  auto it = props.find(internal::property::kRollupSource);
  if (it == props.end()) return std::nullopt;
  const std::string context = "reading the rollup definition of " + table.ToString();
  RollupDefinition def;
  def.source = it->second;
  if (!TableName::Parse(def.source).ok()) {
    return Corrupt(context + ": " + internal::property::kRollupSource + " '" +
                   def.source + "' is not a table name");
  }
  if (!contract.time_column) {
    return Corrupt(context + ": it has no time column");
  }
  def.bucket_column = *contract.time_column;
  def.groups = contract.series_key;
  auto bucket = props.find(internal::property::kRollupBucket);
  if (bucket == props.end()) {
    return Corrupt(context + ": " + internal::property::kRollupBucket + " is missing");
  }
  auto parsed = Bucket::Parse(bucket->second);
  if (!parsed.ok()) return Corrupt(context + ": " + parsed.status().message());
  def.bucket = *parsed;
  auto aggs = props.find(internal::property::kRollupAggregates);
  json list = aggs == props.end()
                  ? json()
                  : json::parse(aggs->second, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) {
    return Corrupt(context + ": " + internal::property::kRollupAggregates +
                   " is not a JSON array");
  }
  auto malformed = [&](const json& entry, const std::string& why) {
    return Corrupt(context + ": " + internal::property::kRollupAggregates +
                   " holds a malformed entry " +
                   entry.dump(-1, ' ', false, json::error_handler_t::replace) + ": " +
                   why);
  };
  for (const auto& a : list) {
    if (!a.is_object() || !a.contains("name") || !a["name"].is_string() ||
        !a.contains("function") || !a["function"].is_string() ||
        (a.contains("column") && !a["column"].is_string() && !a["column"].is_null())) {
      return malformed(a, "expected {\"name\", \"function\"[, \"column\"]} as strings");
    }
    RollupAggregate agg;
    agg.name = a["name"].get<std::string>();
    agg.function = a["function"].get<std::string>();
    if (a.contains("column") && a["column"].is_string()) {
      agg.column = a["column"].get<std::string>();
    }
    // The refresh query is built from these: an entry it cannot spell is
    // refused here, with what is wrong, not as an SQL error later.
    const auto* known =
        std::find_if(std::begin(kFunctions), std::end(kFunctions),
                     [&](const KnownFunction& f) { return f.name == agg.function; });
    if (known == std::end(kFunctions)) {
      return malformed(a, "unknown aggregate function '" + agg.function + "'");
    }
    if (known->needs_column && !agg.column) {
      return malformed(a, agg.function + " needs a column");
    }
    if (agg.name.empty() || (agg.column && agg.column->empty())) {
      return malformed(a, "an empty column name");
    }
    def.aggregates.push_back(std::move(agg));
  }
  return def;
}

std::map<std::string, std::string> RollupProperties(const RollupDefinition& def) {
  return {
      {internal::property::kRollupSource, def.source},
      {internal::property::kRollupBucket, def.bucket.ToText()},
      {internal::property::kRollupAggregates, AggregatesJson(def.aggregates)},
  };
}

std::string AggregatesJson(const std::vector<RollupAggregate>& aggregates) {
  json list = json::array();
  for (const auto& a : aggregates) {
    json entry = {{"name", a.name}, {"function", a.function}};
    if (a.column) entry["column"] = *a.column;
    list.push_back(std::move(entry));
  }
  return list.dump();
}

}  // namespace timelake::read
