// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/rollups.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/settings.h"
#include "timelake/settings/contract.h"

namespace timelake::read {

namespace {

using nlohmann::json;

}  // namespace

arrow::Result<std::optional<RollupDefinition>> RollupDefinitionOf(
    const internal::TableState& table) {
  return RollupDefinitionOf(table.name, table.metadata.properties, table.contract);
}

std::vector<std::string> RollupNamesOf(const format::TableMetadata& metadata) {
  auto it = metadata.properties.find(internal::property::kRollups);
  if (it == metadata.properties.end()) return {};
  return internal::SplitList(it->second);
}

std::optional<RollupSource> RollupSourceOf(const internal::TableState& rollup) {
  const auto& m = rollup.metadata;
  std::set<int64_t> seen;
  for (const auto* s = m.CurrentSnapshot(); s != nullptr;
       s = s->parent_snapshot_id ? m.FindSnapshot(*s->parent_snapshot_id) : nullptr) {
    if (!seen.insert(s->snapshot_id).second) break;  // a cycle: malformed
    auto id = s->summary.find(format::summary::kRollupSourceSnapshot);
    auto seq = s->summary.find(format::summary::kRollupSourceSequence);
    if (id == s->summary.end() || seq == s->summary.end()) continue;
    try {
      return RollupSource{std::stoll(id->second), std::stoll(seq->second)};
    } catch (const std::exception&) {
      return std::nullopt;  // unreadable: as if never refreshed
    }
  }
  return std::nullopt;
}

std::optional<int> TimeColumnId(const internal::TableState& table) {
  if (!table.contract.time_column) return std::nullopt;
  auto field = table.schema->GetFieldByName(*table.contract.time_column);
  if (field == nullptr) return std::nullopt;
  return format::FieldId(*field);
}

TimeRange RangeOf(const format::DataFile& file, std::optional<int> time_id) {
  TimeRange r;
  if (!time_id) return r;
  auto lo = file.lower_bounds.find(*time_id);
  auto hi = file.upper_bounds.find(*time_id);
  if (lo == file.lower_bounds.end() || hi == file.upper_bounds.end()) return r;
  auto l = format::DecodeInt64(lo->second);
  auto h = format::DecodeInt64(hi->second);
  if (!l.ok() || !h.ok()) return r;
  r.lo = *l;
  r.hi = *h + 1;
  return r;
}

namespace {

// Sorted, overlapping and touching ranges joined.
std::vector<TimeRange> Merged(std::vector<TimeRange> ranges) {
  auto lo = [](const TimeRange& r) { return r.lo.value_or(INT64_MIN); };
  auto hi = [](const TimeRange& r) { return r.hi.value_or(INT64_MAX); };
  std::sort(ranges.begin(), ranges.end(),
            [&](const TimeRange& a, const TimeRange& b) { return lo(a) < lo(b); });
  std::vector<TimeRange> out;
  for (const auto& r : ranges) {
    if (!out.empty() && lo(r) <= hi(out.back())) {
      if (hi(r) > hi(out.back())) out.back().hi = r.hi;
      continue;
    }
    out.push_back(r);
  }
  return out;
}

// Files of `a` not in `b`, by key.
std::vector<const format::LiveFile*> Minus(const std::vector<format::LiveFile>& a,
                                           const std::vector<format::LiveFile>& b) {
  std::set<std::string> keys;
  for (const auto& f : b) keys.insert(f.key);
  std::vector<const format::LiveFile*> out;
  for (const auto& f : a) {
    if (!keys.count(f.key)) out.push_back(&f);
  }
  return out;
}

// Computed changes by (table location, snapshot, source): snapshots are
// immutable, so an answer never goes stale; routed queries ask again and
// again.
struct ChangesCache {
  std::mutex mu;
  std::unordered_map<std::string, Changes> entries;
};
ChangesCache& Cache() {
  static ChangesCache cache;
  return cache;
}
constexpr size_t kCachedChanges = 256;

}  // namespace

arrow::Result<Changes> ChangesSince(const internal::TableState& raw,
                                    const RollupSource& source) {
  const auto& m = raw.metadata;
  const format::Snapshot* current = m.CurrentSnapshot();
  Changes out;
  if (current != nullptr && current->snapshot_id == source.snapshot_id) return out;
  const std::string cache_key = m.location + "\n" +
                                std::to_string(current ? current->snapshot_id : 0) +
                                "\n" + std::to_string(source.snapshot_id);
  {
    std::lock_guard<std::mutex> lock(Cache().mu);
    auto it = Cache().entries.find(cache_key);
    if (it != Cache().entries.end()) return it->second;
  }
  const std::optional<int> time_id = TimeColumnId(raw);
  const format::Snapshot* src = m.FindSnapshot(source.snapshot_id);
  // The snapshots since the source, newest first, when the current one
  // descends from it.
  std::vector<const format::Snapshot*> chain;
  bool descends = false;
  std::set<int64_t> seen;
  for (const auto* s = current; s != nullptr;
       s = s->parent_snapshot_id ? m.FindSnapshot(*s->parent_snapshot_id) : nullptr) {
    if (!seen.insert(s->snapshot_id).second) break;
    if (s->snapshot_id == source.snapshot_id) {
      descends = true;
      break;
    }
    if (s->sequence_number <= source.sequence_number) break;
    chain.push_back(s);
  }
  if (descends) {
    for (const auto* s : chain) {
      auto op = s->summary.find(format::summary::kOperation);
      // Compaction rewrites rows without changing them.
      if (op != s->summary.end() && op->second == "replace") continue;
      const format::Snapshot* parent = m.FindSnapshot(*s->parent_snapshot_id);
      TIMELAKE_ASSIGN_OR_RAISE(auto before, internal::ListLiveFilesOf(raw, parent));
      TIMELAKE_ASSIGN_OR_RAISE(auto after, internal::ListLiveFilesOf(raw, s));
      for (const auto* f : Minus(after, before)) {
        out.added.push_back(RangeOf(f->data_file, time_id));
      }
      for (const auto* f : Minus(before, after)) {
        out.removed.push_back(RangeOf(f->data_file, time_id));
      }
    }
  } else if (src != nullptr) {
    // Not an ancestor (a rollback, or history expired in between): what
    // differs between the two file sets.
    TIMELAKE_ASSIGN_OR_RAISE(auto before, internal::ListLiveFilesOf(raw, src));
    TIMELAKE_ASSIGN_OR_RAISE(auto after, internal::ListLiveFilesOf(raw, current));
    for (const auto* f : Minus(after, before)) {
      out.added.push_back(RangeOf(f->data_file, time_id));
    }
    for (const auto* f : Minus(before, after)) {
      out.removed.push_back(RangeOf(f->data_file, time_id));
    }
  } else {
    out.rebuild = true;
  }
  out.added = Merged(std::move(out.added));
  out.removed = Merged(std::move(out.removed));
  std::lock_guard<std::mutex> lock(Cache().mu);
  if (Cache().entries.size() >= kCachedChanges) Cache().entries.clear();
  Cache().entries[cache_key] = out;
  return out;
}

std::string RollupsAnswer(const internal::TableState& raw,
                          const std::map<std::string, std::string>& settings) {
  const settings::Resolver resolve(nullptr, &settings, &raw.metadata.properties);
  // Rollups hold what queries see with dedup on read: a session that reads
  // a dedup table's duplicates reads raw data only.
  const bool dedup_off =
      raw.contract.dedup && !resolve.GetBool("read-dedup").ValueOr(true);
  json answer = {
      {"routing", resolve.GetBool("rollup-routing").ValueOr(true) && !dedup_off},
      {"rollups", json::array()}};
  for (const auto& name_text : RollupNamesOf(raw.metadata)) {
    auto name = TableName::Parse(name_text);
    if (!name.ok()) continue;
    json entry = {{"schema", name->ns()}, {"name", name->name()}, {"usable", false}};
    auto rollup = internal::LoadTableStateForRead(raw.lake, *name);
    if (!rollup.ok()) {
      answer["rollups"].push_back(std::move(entry));
      continue;
    }
    auto def = RollupDefinitionOf(**rollup);
    auto source = RollupSourceOf(**rollup);
    if (!def.ok() || !*def || (*def)->source != raw.name.ToString() || !source) {
      answer["rollups"].push_back(std::move(entry));
      continue;
    }
    auto changes = ChangesSince(raw, *source);
    if (!changes.ok() || changes->rebuild) {
      answer["rollups"].push_back(std::move(entry));
      continue;
    }
    const RollupDefinition& d = **def;
    json aggregates = json::array();
    for (const auto& a : d.aggregates) {
      json e = {{"name", a.name}, {"function", a.function}};
      if (a.column) e["column"] = *a.column;
      aggregates.push_back(std::move(e));
    }
    json dirty = json::array();
    for (const auto* list : {&changes->added, &changes->removed}) {
      for (const auto& r : *list) {
        dirty.push_back(
            {r.lo ? json(*r.lo) : json(nullptr), r.hi ? json(*r.hi) : json(nullptr)});
      }
    }
    entry["usable"] = true;
    entry["groups"] = d.groups;
    entry["bucket_column"] = d.bucket_column;
    entry["bucket"] = d.bucket.ToJson();
    entry["aggregates"] = std::move(aggregates);
    entry["dirty"] = std::move(dirty);
    answer["rollups"].push_back(std::move(entry));
  }
  return answer.dump();
}

}  // namespace timelake::read
