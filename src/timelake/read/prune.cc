// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/prune.h"

#include <map>

#include <arrow/type.h>

#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"

namespace timelake::read {

namespace {

using Value = Filter::Value;

std::optional<Value> ParseValue(const nlohmann::json& v, std::string* kind) {
  if (!v.is_object() || !v.contains("type") || !v["type"].is_string() ||
      !v.contains("v")) {
    return std::nullopt;
  }
  const std::string type = v["type"].get<std::string>();
  if (!kind->empty() && *kind != type) return std::nullopt;  // mixed kinds: don't prune
  *kind = type;
  const auto& x = v["v"];
  if ((type == "int" || type == "timestamp_us" || type == "date") &&
      x.is_number_integer()) {
    return Value(x.get<int64_t>());
  }
  if (type == "float" && x.is_number()) return Value(x.get<double>());
  if (type == "string" && x.is_string()) return Value(x.get<std::string>());
  if (type == "bool" && x.is_boolean()) return Value(x.get<bool>());
  return std::nullopt;
}

// A bound decoded into the same alternative as a filter value of the column's
// type, or nullopt when the type is not one we compare.
std::optional<Value> DecodeBound(const arrow::DataType& type, const std::string& bytes) {
  switch (type.id()) {
    case arrow::Type::INT32:
    case arrow::Type::DATE32: {
      auto v = format::DecodeInt32(bytes);
      if (v.ok()) return Value(static_cast<int64_t>(*v));
      return std::nullopt;
    }
    case arrow::Type::INT64:
    case arrow::Type::TIMESTAMP: {
      if (type.id() == arrow::Type::TIMESTAMP &&
          static_cast<const arrow::TimestampType&>(type).unit() !=
              arrow::TimeUnit::MICRO) {
        return std::nullopt;
      }
      auto v = format::DecodeInt64(bytes);
      if (v.ok()) return Value(*v);
      return std::nullopt;
    }
    case arrow::Type::STRING:
      return Value(bytes);
    case arrow::Type::BOOL: {
      auto v = format::DecodeBoolean(bytes);
      if (v.ok()) return Value(*v);
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// -1, 0, 1; nullopt when the two are not comparable (different kinds).
std::optional<int> Compare(const Value& a, const Value& b) {
  if (a.index() != b.index()) {
    // Integer columns compared with float literals and the reverse.
    auto as_double = [](const Value& v) -> std::optional<double> {
      if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
      if (auto* d = std::get_if<double>(&v)) return *d;
      return std::nullopt;
    };
    auto x = as_double(a), y = as_double(b);
    if (!x || !y || *x != *x || *y != *y) return std::nullopt;  // NaN: no order
    return *x < *y ? -1 : (*x > *y ? 1 : 0);
  }
  if (a < b) return -1;
  if (b < a) return 1;
  return 0;
}

// Whether literals of `kind` compare meaningfully with bounds of `type`.
bool KindFits(const arrow::DataType& type, const std::string& kind) {
  switch (type.id()) {
    case arrow::Type::INT32:
    case arrow::Type::INT64:
      return kind == "int" || kind == "float";
    case arrow::Type::DATE32:
      return kind == "date";
    case arrow::Type::TIMESTAMP:
      return kind == "timestamp_us";
    case arrow::Type::STRING:
      return kind == "string";
    case arrow::Type::BOOL:
      return kind == "bool";
    default:
      return false;
  }
}

bool MayMatchOne(const format::DataFile& file, const Filter& f,
                 const arrow::Schema& schema) {
  if (f.op == Filter::Op::kAny) {
    for (const auto& group : f.any) {
      bool all = true;
      for (const auto& g : group) all = all && MayMatchOne(file, g, schema);
      if (all) return true;
    }
    return f.any.empty();
  }
  const auto field = schema.GetFieldByName(f.column);
  if (!field) return true;
  // Float columns fail KindFits on purpose: their bounds leave out NaN, which
  // DataFusion orders above every number, and do not tell -0.0 from 0.0, so
  // comparisons on them never prune.
  if (!f.values.empty() && !KindFits(*field->type(), f.kind)) return true;
  const auto id = format::FieldId(*field);
  if (!id) return true;
  auto count = [](const std::map<int32_t, int64_t>& m,
                  int32_t key) -> std::optional<int64_t> {
    auto it = m.find(key);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
  const auto nulls = count(file.null_value_counts, *id);
  const auto values = count(file.value_counts, *id);
  if (f.op == Filter::Op::kIsNull) return !nulls || *nulls > 0;
  if (f.op == Filter::Op::kIsNotNull) return !nulls || !values || *values > *nulls;
  // Comparisons never match nulls: an all-null column matches nothing.
  if (nulls && values && *nulls == *values && *values == file.record_count) return false;
  auto lo_it = file.lower_bounds.find(*id);
  auto hi_it = file.upper_bounds.find(*id);
  if (lo_it == file.lower_bounds.end() || hi_it == file.upper_bounds.end()) return true;
  const auto lo = DecodeBound(*field->type(), lo_it->second);
  const auto hi = DecodeBound(*field->type(), hi_it->second);
  if (!lo || !hi) return true;
  auto in_range = [&](const Value& v) {
    auto a = Compare(*lo, v), b = Compare(v, *hi);
    return !a || !b || (*a <= 0 && *b <= 0);
  };
  switch (f.op) {
    case Filter::Op::kEq:
      return in_range(f.values[0]);
    case Filter::Op::kIn:
      for (const auto& v : f.values) {
        if (in_range(v)) return true;
      }
      return false;
    case Filter::Op::kNe: {
      auto a = Compare(*lo, f.values[0]), b = Compare(*hi, f.values[0]);
      return !a || !b || *a != 0 || *b != 0;
    }
    case Filter::Op::kLt: {
      auto a = Compare(*lo, f.values[0]);
      return !a || *a < 0;
    }
    case Filter::Op::kLe: {
      auto a = Compare(*lo, f.values[0]);
      return !a || *a <= 0;
    }
    case Filter::Op::kGt: {
      auto a = Compare(*hi, f.values[0]);
      return !a || *a > 0;
    }
    case Filter::Op::kGe: {
      auto a = Compare(*hi, f.values[0]);
      return !a || *a >= 0;
    }
    default:
      return true;
  }
}

}  // namespace

std::vector<std::string> Filter::Columns() const {
  if (op != Op::kAny) return {column};
  std::vector<std::string> out;
  for (const auto& group : any) {
    for (const auto& g : group) {
      for (auto& c : g.Columns()) out.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

// One group of an "any" filter: every member understood, or nullopt (then
// the group could match any file, and so could the "any").
std::optional<std::vector<Filter>> ParseGroup(const nlohmann::json& group, int depth);

std::optional<Filter> ParseAny(const nlohmann::json& f, int depth) {
  // Nesting is bounded: a request is ours, but a deep one would be a bug.
  if (depth > 8 || !f.contains("of") || !f["of"].is_array() || f["of"].empty()) {
    return std::nullopt;
  }
  Filter any;
  any.op = Filter::Op::kAny;
  for (const auto& group : f["of"]) {
    auto parsed = ParseGroup(group, depth + 1);
    if (!parsed || parsed->empty()) return std::nullopt;
    any.any.push_back(std::move(*parsed));
  }
  return any;
}

}  // namespace

std::vector<Filter> ParseFilters(const nlohmann::json& request) {
  std::vector<Filter> out;
  if (!request.is_object() || !request.contains("filters") ||
      !request["filters"].is_array()) {
    return out;
  }
  // The top level is a conjunction: a member not understood is dropped.
  for (const auto& f : request["filters"]) {
    auto one = ParseGroup(nlohmann::json::array({f}), 0);
    if (one && one->size() == 1) out.push_back(std::move(one->front()));
  }
  return out;
}

namespace {

std::optional<std::vector<Filter>> ParseGroup(const nlohmann::json& group, int depth) {
  std::vector<Filter> out;
  if (!group.is_array()) return std::nullopt;
  static const std::pair<const char*, Filter::Op> kOps[] = {
      {"eq", Filter::Op::kEq},
      {"ne", Filter::Op::kNe},
      {"lt", Filter::Op::kLt},
      {"le", Filter::Op::kLe},
      {"gt", Filter::Op::kGt},
      {"ge", Filter::Op::kGe},
      {"in", Filter::Op::kIn},
      {"is_null", Filter::Op::kIsNull},
      {"is_not_null", Filter::Op::kIsNotNull},
  };
  for (const auto& f : group) {
    if (f.is_object() && f.contains("op") && f["op"] == "any") {
      auto any = ParseAny(f, depth);
      if (!any) return std::nullopt;
      out.push_back(std::move(*any));
      continue;
    }
    if (!f.is_object() || !f.contains("column") || !f["column"].is_string() ||
        !f.contains("op") || !f["op"].is_string()) {
      return std::nullopt;
    }
    Filter filter;
    filter.column = f["column"].get<std::string>();
    const std::string op = f["op"].get<std::string>();
    bool known = false;
    for (const auto& [name, value] : kOps) {
      if (op == name) {
        filter.op = value;
        known = true;
      }
    }
    if (!known) return std::nullopt;
    bool ok = true;
    if (filter.op == Filter::Op::kIn) {
      if (!f.contains("values") || !f["values"].is_array() || f["values"].empty())
        return std::nullopt;
      for (const auto& v : f["values"]) {
        auto parsed = ParseValue(v, &filter.kind);
        if (!parsed)
          ok = false;
        else
          filter.values.push_back(*parsed);
      }
    } else if (filter.op != Filter::Op::kIsNull && filter.op != Filter::Op::kIsNotNull) {
      auto parsed =
          f.contains("value") ? ParseValue(f["value"], &filter.kind) : std::nullopt;
      if (!parsed)
        ok = false;
      else
        filter.values.push_back(*parsed);
    }
    if (!ok) return std::nullopt;
    out.push_back(std::move(filter));
  }
  return out;
}

}  // namespace

bool MayMatch(const format::DataFile& file, const std::vector<Filter>& filters,
              const arrow::Schema& schema) {
  for (const auto& f : filters) {
    if (!MayMatchOne(file, f, schema)) return false;
  }
  return true;
}

std::vector<std::vector<size_t>> KeyOverlapGroups(
    const std::vector<const format::DataFile*>& files,
    const std::vector<std::string>& series_key, const std::string& time_column,
    const arrow::Schema& schema) {
  // The [lo, hi] range of one column of a file; nullopt when unknown.
  struct Range {
    std::optional<Value> lo, hi;
  };
  auto range_of = [&](const format::DataFile& file,
                      const std::string& column) -> std::optional<Range> {
    const auto field = schema.GetFieldByName(column);
    if (!field) return std::nullopt;
    const auto id = format::FieldId(*field);
    if (!id) return std::nullopt;
    auto lo = file.lower_bounds.find(*id);
    auto hi = file.upper_bounds.find(*id);
    if (lo == file.lower_bounds.end() || hi == file.upper_bounds.end())
      return std::nullopt;
    Range r{DecodeBound(*field->type(), lo->second),
            DecodeBound(*field->type(), hi->second)};
    if (!r.lo || !r.hi) return std::nullopt;
    // A column with nulls: nulls are a key value too, outside [lo, hi].
    auto nulls = file.null_value_counts.find(*id);
    if (nulls == file.null_value_counts.end() || nulls->second > 0) return std::nullopt;
    return r;
  };
  auto overlap = [](const std::optional<Range>& a, const std::optional<Range>& b) {
    if (!a || !b) return true;
    auto x = Compare(*a->lo, *b->hi), y = Compare(*b->lo, *a->hi);
    return !x || !y || (*x <= 0 && *y <= 0);
  };

  const size_t n = files.size();
  std::vector<std::optional<Range>> time(n), series(n);
  for (size_t i = 0; i < n; ++i) {
    time[i] = range_of(*files[i], time_column);
    if (!series_key.empty()) series[i] = range_of(*files[i], series_key[0]);
  }
  std::vector<size_t> parent(n);
  for (size_t i = 0; i < n; ++i) parent[i] = i;
  auto find = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (find(i) == find(j)) continue;
      if (overlap(time[i], time[j]) && overlap(series[i], series[j]))
        parent[find(i)] = find(j);
    }
  }
  std::map<size_t, std::vector<size_t>> by_root;
  for (size_t i = 0; i < n; ++i) by_root[find(i)].push_back(i);
  std::vector<std::vector<size_t>> groups;
  for (auto& [root, members] : by_root) {
    if (members.size() > 1) groups.push_back(std::move(members));
  }
  return groups;
}

}  // namespace timelake::read
