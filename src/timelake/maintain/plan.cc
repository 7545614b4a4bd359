// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Maintenance planning: what to rewrite (by size tier, cold partition or
// need), and which snapshots expire. Pure functions of a table's files,
// metadata and rules; the steps that act on the plans are steps.cc.

#include <algorithm>
#include <map>
#include <unordered_set>

#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/maintain/maintain.h"
#include "timelake/read/prune.h"
#include "timelake/settings.h"

namespace timelake::internal {

namespace {

constexpr int64_t kMicrosPerHour = 3'600'000'000LL;
constexpr int64_t kMicrosPerDay = 24 * kMicrosPerHour;

// Days since 1970-01-01 of a civil date (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

int64_t MonthStartMicros(int64_t months) {
  const int64_t y = 1970 + (months >= 0 ? months / 12 : (months - 11) / 12);
  const int64_t m = months - (y - 1970) * 12;
  return DaysFromCivil(y, static_cast<unsigned>(m + 1), 1) * kMicrosPerDay;
}

std::optional<int64_t> TimeBound(const format::LiveFile& f, const TableState& table,
                                 bool upper) {
  if (!table.contract.time_column) return std::nullopt;
  const auto field = table.schema->GetFieldByName(*table.contract.time_column);
  const auto id = field ? format::FieldId(*field) : std::nullopt;
  if (!id) return std::nullopt;
  const auto& bounds = upper ? f.data_file.upper_bounds : f.data_file.lower_bounds;
  auto it = bounds.find(*id);
  if (it == bounds.end()) return std::nullopt;
  auto v = format::DecodeInt64(it->second);
  if (!v.ok()) return std::nullopt;
  return *v;
}

arrow::Result<std::optional<std::chrono::milliseconds>> GetMillis(
    const settings::Resolver& resolve, std::string_view name) {
  auto text = resolve.Get(name);
  if (!text || text->empty()) return std::nullopt;
  TIMELAKE_ASSIGN_OR_RAISE(auto ms, settings::AsMillis(*settings::Find(name), *text));
  return std::chrono::milliseconds(ms);
}

// What a merge holds of one input at a time, roughly: one row group,
// compressed (the file's bytes shared out over its rows).
int64_t MergeBytes(const format::LiveFile& f, int64_t row_group_rows) {
  const int64_t rows = std::max<int64_t>(1, f.data_file.record_count);
  const int64_t size = f.data_file.file_size_in_bytes;
  if (rows <= row_group_rows) return size;
  return static_cast<int64_t>(static_cast<double>(size) * row_group_rows / rows);
}

// Groups live files by partition.
std::map<std::optional<int32_t>, std::vector<const format::LiveFile*>> ByPartition(
    const std::vector<format::LiveFile>& files) {
  std::map<std::optional<int32_t>, std::vector<const format::LiveFile*>> out;
  for (const auto& f : files) out[PartitionValueOf(f)].push_back(&f);
  return out;
}

}  // namespace

arrow::Result<MaintainRules> RulesOf(const TableState& table) {
  const settings::Resolver resolve(nullptr, nullptr, &table.metadata.properties);
  MaintainRules r;
  TIMELAKE_ASSIGN_OR_RAISE(r.target_bytes, resolve.GetInt("target-file-size"));
  TIMELAKE_ASSIGN_OR_RAISE(r.min_files, resolve.GetInt("compact-min-files"));
  TIMELAKE_ASSIGN_OR_RAISE(auto cold, GetMillis(resolve, "compact-cold-after"));
  if (cold) r.cold_after = *cold;
  TIMELAKE_ASSIGN_OR_RAISE(r.retention, GetMillis(resolve, "retention"));
  TIMELAKE_ASSIGN_OR_RAISE(auto snap_ret, GetMillis(resolve, "snapshot-retention"));
  if (snap_ret) r.snapshot_retention = *snap_ret;
  TIMELAKE_ASSIGN_OR_RAISE(r.min_snapshots, resolve.GetInt("min-snapshots"));
  TIMELAKE_ASSIGN_OR_RAISE(r.max_snapshots, resolve.GetInt("max-snapshots"));
  TIMELAKE_ASSIGN_OR_RAISE(r.keep_snapshots_until_ms,
                           resolve.GetInt("keep-snapshots-until"));
  TIMELAKE_ASSIGN_OR_RAISE(r.auto_maintain, resolve.GetBool("auto-maintain"));
  r.target_bytes = std::max<int64_t>(r.target_bytes, 1);
  r.min_files = std::max<int64_t>(r.min_files, 2);
  r.min_snapshots = std::max<int64_t>(r.min_snapshots, 1);
  r.max_snapshots = std::max(r.max_snapshots, r.min_snapshots);
  return r;
}

int Tier(int64_t bytes) {
  // floor(log4(bytes / 64 KiB)), by steps of 4 either way.
  constexpr int64_t kBase = 64 << 10;
  int tier = 0;
  if (bytes >= kBase) {
    for (int64_t lo = kBase * 4; bytes >= lo && tier < 30; lo *= 4) ++tier;
  } else {
    for (int64_t lo = kBase; bytes < lo && lo > 0; lo /= 4) --tier;
  }
  return tier;
}

std::optional<int32_t> PartitionValueOf(const format::LiveFile& file) {
  if (file.data_file.partition.empty() || !file.data_file.partition[0])
    return std::nullopt;
  if (const auto* v = std::get_if<int32_t>(&*file.data_file.partition[0])) return *v;
  return std::nullopt;
}

std::pair<int64_t, int64_t> PartitionRange(int32_t value, Chunk chunk) {
  switch (chunk) {
    case Chunk::kHour:
      return {value * kMicrosPerHour, (value + int64_t{1}) * kMicrosPerHour};
    case Chunk::kDay:
      return {value * kMicrosPerDay, (value + int64_t{1}) * kMicrosPerDay};
    case Chunk::kMonth:
      return {MonthStartMicros(value), MonthStartMicros(value + int64_t{1})};
  }
  return {0, 0};
}

std::vector<Rewrite> PlanTiered(const std::vector<format::LiveFile>& files,
                                const MaintainRules& rules,
                                const std::set<std::optional<int32_t>>& partitions) {
  std::vector<Rewrite> out;
  const int64_t small = rules.target_bytes / 4 * 3;
  for (const auto& [partition, members] : ByPartition(files)) {
    if (!partitions.count(partition)) continue;
    std::map<int, std::vector<const format::LiveFile*>> tiers;
    int64_t small_files = 0;
    for (const auto* f : members) {
      if (f->data_file.file_size_in_bytes < small) {
        tiers[Tier(f->data_file.file_size_in_bytes)].push_back(f);
        ++small_files;
      }
    }
    // The partition qualifies at min_files small files; then a tier is
    // merged once it holds kTierFanIn files, which makes one file of a
    // higher tier. More (appends that went on while a merge ran) are merged
    // kTierFanIn at a time, in commit order, so that every merge of a tier
    // is of the same size whatever the timing; and every tier that holds
    // kTierFanIn is merged, so that a backlog of small files does not keep
    // a higher tier waiting. What a merge lifts into a tier waits for the
    // next run.
    if (small_files < rules.min_files) continue;
    for (auto& [tier, group] : tiers) {
      if (group.size() < kTierFanIn) continue;
      std::sort(group.begin(), group.end(), [](const auto* a, const auto* b) {
        return std::make_pair(a->sequence_number.value_or(0), a->key) <
               std::make_pair(b->sequence_number.value_or(0), b->key);
      });
      for (size_t i = 0; i + kTierFanIn <= group.size(); i += kTierFanIn) {
        Rewrite r;
        r.partition = partition;
        for (size_t k = i; k < i + kTierFanIn; ++k) r.inputs.push_back(*group[k]);
        out.push_back(std::move(r));
      }
    }
  }
  return out;
}

namespace {

// Whether `file` was written in a schema in which a column of the current
// schema had another name (before a rename). We read it by field id, but
// Timelake 0.7 finds a file's columns by name and reads such a column as
// null there until the file is rewritten in the current schema. Unknown
// (the adding snapshot expired, or recorded no schema): no.
bool WrittenBeforeRename(const format::LiveFile& file, const TableState& table) {
  const auto& m = table.metadata;
  const auto* snapshot = m.FindSnapshot(file.snapshot_id);
  if (snapshot == nullptr || !snapshot->schema_id ||
      *snapshot->schema_id == m.current_schema_id) {
    return false;
  }
  const auto* then = m.FindSchema(*snapshot->schema_id);
  if (then == nullptr || !then->contains("fields")) return false;
  std::map<int, std::string> names;
  for (const auto& f : (*then)["fields"]) {
    names[f.value("id", 0)] = f.value("name", "");
  }
  for (const auto& f : m.CurrentSchema()["fields"]) {
    auto it = names.find(f.value("id", 0));
    if (it != names.end() && it->second != f.value("name", "")) return true;
  }
  return false;
}

}  // namespace

bool NeedsRewrite(const std::vector<const format::LiveFile*>& files,
                  const TableState& table, const MaintainRules& rules, std::string* why) {
  if (files.empty()) return false;
  const int64_t sort_order = table.metadata.doc.value("default-sort-order-id", 0);
  int64_t bytes = 0;
  int64_t unsorted = 0;
  int64_t renamed = 0;
  for (const auto* f : files) {
    bytes += f->data_file.file_size_in_bytes;
    if (table.contract.time_column && sort_order != 0 &&
        f->data_file.sort_order_id != sort_order) {
      ++unsorted;  // another engine's file, maybe unsorted
      if (why == nullptr) return true;
    }
    if (WrittenBeforeRename(*f, table)) {
      ++renamed;
      if (why == nullptr) return true;
    }
  }
  std::vector<std::string> reasons;
  if (unsorted > 0) reasons.push_back(std::to_string(unsorted) + " unsorted");
  if (renamed > 0)
    reasons.push_back(std::to_string(renamed) + " written before a rename");
  const int64_t needed =
      std::max<int64_t>(1, (bytes + rules.target_bytes - 1) / rules.target_bytes);
  if (static_cast<int64_t>(files.size()) > needed) {
    if (why == nullptr) return true;
    reasons.push_back(std::to_string(files.size()) + " files where " +
                      std::to_string(needed) + (needed == 1 ? " suffices" : " suffice"));
  }
  if (reasons.empty() && table.contract.dedup && table.contract.time_column &&
      files.size() > 1) {
    std::vector<const format::DataFile*> data;
    for (const auto* f : files) data.push_back(&f->data_file);
    if (!read::KeyOverlapGroups(data, table.contract.series_key,
                                *table.contract.time_column, *table.schema)
             .empty()) {
      reasons.push_back("files that may share keys");
    }
  }
  if (why != nullptr) {
    why->clear();
    for (const auto& r : reasons) *why += (why->empty() ? "" : ", ") + r;
  }
  return !reasons.empty();
}

std::vector<Rewrite> PlanFull(const std::vector<format::LiveFile>& files,
                              const TableState& table, const MaintainRules& rules,
                              bool cold_only, size_t limit) {
  std::optional<int64_t> newest;
  if (cold_only) {
    for (const auto& f : files) {
      if (auto t = TimeBound(f, table, true)) newest = std::max(newest.value_or(*t), *t);
    }
    if (!newest) return {};
  }
  std::vector<Rewrite> out;
  auto partitions = ByPartition(files);
  for (auto it = partitions.rbegin(); it != partitions.rend() && out.size() < limit;
       ++it) {
    const auto& [partition, members] = *it;
    if (cold_only) {
      if (!partition) continue;
      const int64_t end = PartitionRange(*partition, table.contract.chunk).second;
      const int64_t cold_micros = rules.cold_after.count() * 1000;
      if (end + cold_micros > *newest) continue;
    }
    if (!NeedsRewrite(members, table, rules)) continue;
    // The merge reads a row group of every input at once: inputs go in
    // groups within the merge budget, merged again by the next pass.
    std::vector<const format::LiveFile*> sorted = members;
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
      return a->data_file.file_size_in_bytes < b->data_file.file_size_in_bytes;
    });
    std::vector<Rewrite> groups;
    int64_t in_flight = 0;
    for (const auto* f : sorted) {
      const int64_t bytes = MergeBytes(*f, table.contract.row_group_rows);
      if (groups.empty() || groups.back().inputs.size() >= kMergeMaxFiles ||
          (in_flight + bytes > kMergeBudgetBytes && !groups.back().inputs.empty())) {
        groups.emplace_back();
        groups.back().partition = partition;
        in_flight = 0;
      }
      groups.back().inputs.push_back(*f);
      in_flight += bytes;
    }
    // A group of one file that is no better merged alone is left out.
    std::erase_if(groups, [&](const Rewrite& g) {
      if (g.inputs.size() > 1) return false;
      return !NeedsRewrite({&g.inputs[0]}, table, rules);
    });
    for (auto& g : groups) {
      g.partial = groups.size() > 1;
      if (out.size() < limit) out.push_back(std::move(g));
    }
  }
  return out;
}

std::vector<int64_t> PlanExpiry(const format::TableMetadata& metadata,
                                const MaintainRules& rules, int64_t now_ms) {
  if (rules.keep_snapshots_until_ms > 0 && now_ms < rules.keep_snapshots_until_ms)
    return {};
  std::unordered_set<int64_t> referenced;
  if (metadata.current_snapshot_id) referenced.insert(*metadata.current_snapshot_id);
  if (auto refs = metadata.doc.find("refs");
      refs != metadata.doc.end() && refs->is_object()) {
    for (const auto& [name, ref] : refs->items()) {
      if (ref.is_object() && ref.contains("snapshot-id") &&
          ref["snapshot-id"].is_number_integer()) {
        referenced.insert(ref["snapshot-id"].get<int64_t>());
      }
    }
  }
  std::vector<const format::Snapshot*> newest_first;
  for (const auto& s : metadata.snapshots) newest_first.push_back(&s);
  std::stable_sort(newest_first.begin(), newest_first.end(),
                   [](const format::Snapshot* a, const format::Snapshot* b) {
                     return a->sequence_number > b->sequence_number;
                   });
  std::vector<int64_t> out;
  const int64_t cutoff = now_ms - rules.snapshot_retention.count();
  for (size_t i = 0; i < newest_first.size(); ++i) {
    const auto* s = newest_first[i];
    if (referenced.count(s->snapshot_id)) continue;
    if (static_cast<int64_t>(i) < rules.min_snapshots) continue;
    const bool too_many = static_cast<int64_t>(i) >= rules.max_snapshots;
    if (too_many || s->timestamp_ms < cutoff) out.push_back(s->snapshot_id);
  }
  return out;
}

}  // namespace timelake::internal
