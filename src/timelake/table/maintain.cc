// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/table/maintain.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "timelake/commit/commit.h"
#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/read/prune.h"
#include "timelake/settings.h"
#include "timelake/table/head.h"
#include "timelake/table/lvi.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"

namespace timelake::internal {

namespace {

namespace cp = arrow::compute;
using SteadyClock = std::chrono::steady_clock;

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

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

std::string PartitionName(const write::Layout& layout, std::optional<int32_t> p) {
  if (!p) return "(unpartitioned)";
  return layout.partition_field_name + "=" + write::PartitionLabel(*p, layout.chunk);
}

std::optional<int64_t> TimeBound(const read::LiveFile& f, const TableState& table,
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

void Progress(const StepOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

// Puts bytes written by this process into the lake's object cache (they are
// immutable), so that the next plan does not read them back.
void Remember(LakeState& lake, const std::string& key, const std::string& bytes) {
  lake.objects.Put(key, arrow::Buffer::FromString(bytes));
}

// A snapshot that replaces files, built and committed with retries.
struct Replacement {
  std::string operation;                  // "replace" or "delete"
  std::vector<read::LiveFile> removed;    // must all be live at commit time
  std::vector<write::WrittenFile> added;  // new data files
  int64_t added_sequence_number = 0;      // data sequence number of `added`
  // The new last-value index (nullptr: keep the parent's).
  std::shared_ptr<arrow::RecordBatch> index;
  bool drop_index = false;  // the new snapshot has no index
};

// Commits `change` over the newest version. Errors: kConflict when an input
// file is no longer live (nothing of this commit is left behind).
arrow::Result<std::shared_ptr<const TableState>> CommitReplacement(
    std::shared_ptr<const TableState> base, const Replacement& change,
    const StepOptions& options, const std::string& context) {
  auto& lake = *base->lake;
  const auto& store = *lake.store;
  const auto now = lake.clock->Now();
  const int64_t snapshot_id = NewSnapshotId();
  const format::ManifestWriteOptions mopts = ManifestOptionsOf(*base);
  std::unordered_set<std::string> removed_keys;
  int64_t removed_rows = 0, removed_bytes = 0;
  for (const auto& f : change.removed) {
    removed_keys.insert(f.key);
    removed_rows += f.data_file.record_count;
    removed_bytes += f.data_file.file_size_in_bytes;
  }
  int64_t added_rows = 0, added_bytes = 0;
  for (const auto& f : change.added) {
    added_rows += f.rows;
    added_bytes += f.bytes;
  }
  std::vector<std::string> data_keys;  // what to delete when nothing commits
  for (const auto& f : change.added) data_keys.push_back(f.key);
  auto abandon = [&](const std::vector<std::string>& written, arrow::Status st) {
    for (const auto& k : written) (void)store.Delete(k);
    for (const auto& k : data_keys) (void)store.Delete(k);
    return st;
  };

  const int max_attempts = std::max(1, options.max_commit_attempts);
  for (int attempt = 1;; ++attempt) {
    std::vector<std::string> written;  // this attempt's metadata objects
    const auto& bm = base->metadata;
    const format::Snapshot* parent = bm.CurrentSnapshot();
    if (parent == nullptr) {
      return abandon(written, Conflict(context + ": the table has no snapshot any more"));
    }
    if (bm.DefaultSpec().spec_id != mopts.partition_spec_id ||
        bm.current_schema_id != mopts.schema_id) {
      return abandon(written,
                     Conflict(context + ": the table's schema or partitioning changed "
                                        "concurrently; maintain again"));
    }
    const int64_t seq = bm.last_sequence_number + 1;
    TIMELAKE_ASSIGN_OR_RAISE(auto list_key, store.KeyOf(parent->manifest_list));
    auto list_bytes = GetImmutable(lake, list_key);
    if (!list_bytes.ok())
      return abandon(written, WithContext(list_bytes.status(), context));
    auto parent_manifests = format::ReadManifestList(AsView(**list_bytes));
    if (!parent_manifests.ok()) {
      return abandon(written,
                     WithContext(parent_manifests.status(),
                                 context + ": manifest list " + parent->manifest_list));
    }
    // Manifests that list none of the removed files stay as they are; the
    // others are rewritten: their other live files as EXISTING entries, the
    // removed ones as DELETED entries of the new snapshot.
    std::vector<format::ManifestFile> kept;
    std::vector<format::ManifestEntry> existing, deleted;
    for (const auto& m : *parent_manifests) {
      if (!HasLiveFiles(m)) continue;
      if (m.content != format::kManifestData) {
        return abandon(written, Unsupported(context + ": manifest " + m.manifest_path +
                                            " lists delete files"));
      }
      TIMELAKE_ASSIGN_OR_RAISE(auto key, store.KeyOf(m.manifest_path));
      auto bytes = GetImmutable(lake, key);
      if (!bytes.ok()) return abandon(written, WithContext(bytes.status(), context));
      auto contents = format::ReadManifest(AsView(**bytes));
      if (!contents.ok()) {
        return abandon(written, WithContext(contents.status(),
                                            context + ": manifest " + m.manifest_path));
      }
      format::InheritManifestFileFields(m, &contents->entries);
      bool touched = false;
      for (const auto& e : contents->entries) {
        if (e.status == format::kEntryDeleted) continue;
        auto k = store.KeyOf(e.data_file.file_path);
        if (k.ok() && removed_keys.count(*k)) touched = true;
      }
      if (!touched) {
        kept.push_back(m);
        continue;
      }
      if (m.partition_spec_id != mopts.partition_spec_id) {
        return abandon(written, Unsupported(context + ": manifest " + m.manifest_path +
                                            " has an older partition spec"));
      }
      for (auto& e : contents->entries) {
        if (e.status == format::kEntryDeleted) continue;
        auto k = store.KeyOf(e.data_file.file_path);
        if (k.ok() && removed_keys.count(*k)) {
          e.status = format::kEntryDeleted;
          e.snapshot_id = snapshot_id;
          deleted.push_back(std::move(e));
        } else {
          e.status = format::kEntryExisting;
          existing.push_back(std::move(e));
        }
      }
    }
    if (deleted.size() != change.removed.size()) {
      return abandon(written,
                     Conflict(context + ": " +
                              std::to_string(change.removed.size() - deleted.size()) +
                              " of its input files were replaced or dropped concurrently "
                              "(version " +
                              std::to_string(base->version) +
                              "); nothing was committed, maintain again"));
    }

    // The new manifests: added files, existing ones, deleted ones.
    std::vector<format::ManifestFile> manifests;
    auto write_manifest = [&](const std::vector<format::ManifestEntry>& entries,
                              const char* suffix) -> arrow::Status {
      if (entries.empty()) return arrow::Status::OK();
      TIMELAKE_ASSIGN_OR_RAISE(auto bytes, format::WriteManifest(mopts, entries));
      const std::string key = commit::MetadataPrefix(base->table_key) + "/" +
                              NewUuidV7(now) + "-" + suffix + ".avro";
      TIMELAKE_RETURN_NOT_OK(store.Put(key, bytes));
      written.push_back(key);
      Remember(lake, key, bytes);
      TIMELAKE_ASSIGN_OR_RAISE(
          auto summary,
          format::SummarizeManifest(store.Uri(key), static_cast<int64_t>(bytes.size()),
                                    mopts.partition_spec_id, snapshot_id, seq,
                                    mopts.partition_type, entries));
      manifests.push_back(std::move(summary));
      return arrow::Status::OK();
    };
    std::vector<format::ManifestEntry> added;
    for (const auto& f : change.added) {
      auto e = NewEntry(f, *base, snapshot_id);
      // The rows keep the newest commit they came from: dedup on read
      // still ranks them below commits made after their inputs.
      e.sequence_number = change.added_sequence_number;
      added.push_back(std::move(e));
    }
    arrow::Status st = write_manifest(added, "added-m");
    if (st.ok()) st = write_manifest(existing, "existing-m");
    if (st.ok()) st = write_manifest(deleted, "deleted-m");
    if (!st.ok()) return abandon(written, WithContext(st, context));
    manifests.insert(manifests.end(), kept.begin(), kept.end());

    auto list =
        format::WriteManifestList(snapshot_id, parent->snapshot_id, seq, manifests);
    if (!list.ok()) return abandon(written, WithContext(list.status(), context));
    const std::string new_list_key =
        commit::MetadataPrefix(base->table_key) + "/snap-" + std::to_string(snapshot_id) +
        "-" + std::to_string(attempt) + "-" + NewUuidV7(now) + ".avro";
    if (auto put = store.Put(new_list_key, *list); !put.ok()) {
      return abandon(written, WithContext(put, context));
    }
    written.push_back(new_list_key);
    Remember(lake, new_list_key, *list);

    format::TableMetadata next = bm;
    format::Snapshot snap;
    snap.snapshot_id = snapshot_id;
    snap.parent_snapshot_id = parent->snapshot_id;
    snap.sequence_number = seq;
    snap.timestamp_ms = std::max(ToMillis(lake.clock->Now()), bm.last_updated_ms);
    snap.manifest_list = store.Uri(new_list_key);
    snap.schema_id = bm.current_schema_id;
    auto total = [&](const char* key) { return format::SummaryInt(*parent, key); };
    snap.summary = {
        {format::summary::kOperation, change.operation},
        {format::summary::kAddedDataFiles, std::to_string(change.added.size())},
        {format::summary::kAddedRecords, std::to_string(added_rows)},
        {format::summary::kAddedFilesSize, std::to_string(added_bytes)},
        {format::summary::kDeletedDataFiles, std::to_string(change.removed.size())},
        {format::summary::kDeletedRecords, std::to_string(removed_rows)},
        {format::summary::kRemovedFilesSize, std::to_string(removed_bytes)},
        {format::summary::kTotalDataFiles,
         std::to_string(total(format::summary::kTotalDataFiles) +
                        static_cast<int64_t>(change.added.size()) -
                        static_cast<int64_t>(change.removed.size()))},
        {format::summary::kTotalRecords,
         std::to_string(total(format::summary::kTotalRecords) + added_rows -
                        removed_rows)},
        {format::summary::kTotalFilesSize,
         std::to_string(total(format::summary::kTotalFilesSize) + added_bytes -
                        removed_bytes)},
        {format::summary::kTotalDeleteFiles, "0"},
        {format::summary::kTotalPositionDeletes, "0"},
        {format::summary::kTotalEqualityDeletes, "0"},
    };
    if (change.index != nullptr) {
      auto key =
          WriteLvi(store, base->table_key, snapshot_id, *change.index, NewUuidV7(now));
      if (!key.ok()) return abandon(written, WithContext(key.status(), context));
      written.push_back(*key);
      snap.summary[kLastValueIndexKey] = store.Uri(*key);
    } else if (!change.drop_index) {
      // The rows' newest values are unchanged: the parent's index holds.
      if (auto uri = LviUri(*parent)) snap.summary[kLastValueIndexKey] = *uri;
    }
    next.LogPreviousMetadata(store.Uri(base->metadata_key), bm.last_updated_ms, 20);
    next.AddSnapshot(std::move(snap));

    auto won = commit::TryCommit(store, base->table_key, base->version + 1, next,
                                 base->metadata_key);
    if (!won.ok()) {
      // It may have landed: keep every file it references.
      return WithContext(won.status(), context + ": committing version " +
                                           std::to_string(base->version + 1));
    }
    if (*won) {
      const int64_t version = base->version + 1;
      commit::WriteVersionHintAsync(lake.store, base->table_key, version);
      TIMELAKE_ASSIGN_OR_RAISE(auto stored,
                               format::TableMetadata::Parse(next.Serialize(), context));
      TIMELAKE_ASSIGN_OR_RAISE(
          auto state, MakeTableState(base->lake, base->name, version,
                                     commit::VersionKey(base->table_key, version),
                                     std::move(stored)));
      lake.tables.Remember(*state);
      WriteHeadAsync(state);
      return state;
    }
    // Lost the race: this attempt's metadata goes, the data files stay for
    // the next attempt.
    for (const auto& k : written) (void)store.Delete(k);
    if (attempt >= max_attempts) {
      return abandon({}, Conflict(context + ": commit conflict: gave up after " +
                                  std::to_string(attempt) + " attempts"));
    }
    commit::BackoffBeforeRetry(attempt);
    auto reloaded = LoadTableState(base->lake, base->name);
    if (!reloaded.ok()) return abandon({}, WithContext(reloaded.status(), context));
    base = *reloaded;
  }
}

// What a merge holds of one input at a time, roughly: one row group,
// compressed (the file's bytes shared out over its rows).
int64_t MergeBytes(const read::LiveFile& f, int64_t row_group_rows) {
  const int64_t rows = std::max<int64_t>(1, f.data_file.record_count);
  const int64_t size = f.data_file.file_size_in_bytes;
  if (rows <= row_group_rows) return size;
  return static_cast<int64_t>(static_cast<double>(size) * row_group_rows / rows);
}

// Groups live files by partition.
std::map<std::optional<int32_t>, std::vector<const read::LiveFile*>> ByPartition(
    const std::vector<read::LiveFile>& files) {
  std::map<std::optional<int32_t>, std::vector<const read::LiveFile*>> out;
  for (const auto& f : files) out[PartitionValueOf(f)].push_back(&f);
  return out;
}

}  // namespace

// --- Rules ---

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

std::optional<int32_t> PartitionValueOf(const read::LiveFile& file) {
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

std::vector<Rewrite> PlanTiered(const std::vector<read::LiveFile>& files,
                                const MaintainRules& rules,
                                const std::set<std::optional<int32_t>>& partitions) {
  std::vector<Rewrite> out;
  const int64_t small = rules.target_bytes / 4 * 3;
  for (const auto& [partition, members] : ByPartition(files)) {
    if (!partitions.count(partition)) continue;
    std::map<int, std::vector<const read::LiveFile*>> tiers;
    int64_t small_files = 0;
    for (const auto* f : members) {
      if (f->data_file.file_size_in_bytes < small) {
        tiers[Tier(f->data_file.file_size_in_bytes)].push_back(f);
        ++small_files;
      }
    }
    // The partition qualifies at min_files small files; then a tier is
    // merged once it holds kTierFanIn files, which makes about one file of
    // the next tier.
    if (small_files < rules.min_files) continue;
    for (const auto& [tier, group] : tiers) {
      if (group.size() < kTierFanIn) continue;
      Rewrite r;
      r.partition = partition;
      for (const auto* f : group) r.inputs.push_back(*f);
      out.push_back(std::move(r));
      break;  // the lowest qualifying tier; the next append sees the rest
    }
  }
  return out;
}

bool NeedsRewrite(const std::vector<const read::LiveFile*>& files,
                  const TableState& table, const MaintainRules& rules) {
  if (files.empty()) return false;
  const int64_t sort_order = table.metadata.doc.value("default-sort-order-id", 0);
  int64_t bytes = 0;
  for (const auto* f : files) {
    bytes += f->data_file.file_size_in_bytes;
    if (table.contract.time_column && sort_order != 0 &&
        f->data_file.sort_order_id != sort_order) {
      return true;  // another engine's file, maybe unsorted
    }
  }
  const int64_t needed =
      std::max<int64_t>(1, (bytes + rules.target_bytes - 1) / rules.target_bytes);
  if (static_cast<int64_t>(files.size()) > needed) return true;
  if (table.contract.dedup && table.contract.time_column && files.size() > 1) {
    std::vector<const format::DataFile*> data;
    for (const auto* f : files) data.push_back(&f->data_file);
    if (!read::KeyOverlapGroups(data, table.contract.series_key,
                                *table.contract.time_column, *table.schema)
             .empty()) {
      return true;
    }
  }
  return false;
}

std::vector<Rewrite> PlanFull(const std::vector<read::LiveFile>& files,
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
    std::vector<const read::LiveFile*> sorted = members;
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

// --- Steps ---

namespace {
// Table versions kept by the orphan sweep besides those in the metadata log.
constexpr int64_t kKeepVersions = 100;
}  // namespace

arrow::Result<std::shared_ptr<const TableState>> RunRetention(
    std::shared_ptr<const TableState> table, const MaintainRules& rules,
    const StepOptions& options, MaintainReport* report) {
  if (!rules.retention || !table->contract.time_column) return table;
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, LayoutOf(*table));
  if (!layout.partitioned) return table;
  const int64_t now_us = ToMicros(table->lake->clock->Now());
  const int64_t cutoff = now_us - rules.retention->count() * 1000;
  TIMELAKE_ASSIGN_OR_RAISE(auto files, read::ListLiveFiles(*table));
  Replacement change;
  change.operation = "delete";
  std::set<int32_t> dropped;
  for (const auto& f : files) {
    auto p = PartitionValueOf(f);
    if (!p || PartitionRange(*p, layout.chunk).second > cutoff) continue;
    dropped.insert(*p);
    change.removed.push_back(f);
  }
  if (change.removed.empty()) return table;
  // The index loses the series whose newest row is in a dropped partition:
  // they have no row left at all.
  const auto* snapshot = table->metadata.CurrentSnapshot();
  change.drop_index = true;
  if (auto uri = snapshot ? LviUri(*snapshot) : std::nullopt) {
    auto index = ReadLvi(*table->lake, *uri, *table->schema);
    if (index.ok()) {
      TIMELAKE_RETURN_NOT_OK(EnsureCompute());
      const auto& time = (*index)->GetColumnByName(*table->contract.time_column);
      arrow::BooleanBuilder keep;
      TIMELAKE_RETURN_NOT_OK(keep.Reserve((*index)->num_rows()));
      const auto& micros = static_cast<const arrow::TimestampArray&>(*time);
      for (int64_t i = 0; i < micros.length(); ++i) {
        const int32_t p = write::PartitionOf(micros.Value(i), layout.chunk);
        keep.UnsafeAppend(!dropped.count(p));
      }
      TIMELAKE_ASSIGN_OR_RAISE(auto mask, keep.Finish());
      TIMELAKE_ASSIGN_OR_RAISE(auto filtered, cp::Filter(*index, mask));
      change.index = filtered.record_batch();
      change.drop_index = false;
    }
  }
  const std::string context = "dropping " + std::to_string(dropped.size()) +
                              " partitions of " + table->name.ToString() +
                              " past retention";
  TIMELAKE_ASSIGN_OR_RAISE(table, CommitReplacement(table, change, options, context));
  report->partitions_dropped += static_cast<int64_t>(dropped.size());
  report->files_dropped += static_cast<int64_t>(change.removed.size());
  for (const auto& f : change.removed) report->rows_dropped += f.data_file.record_count;
  ++report->commits;
  Progress(options, "dropped " + std::to_string(dropped.size()) +
                        " partitions past retention (" +
                        std::to_string(change.removed.size()) + " files)");
  return table;
}

arrow::Result<std::shared_ptr<const TableState>> RunRewrite(
    std::shared_ptr<const TableState> table, const Rewrite& rewrite,
    const MaintainRules& rules, const StepOptions& options, MaintainReport* report) {
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, LayoutOf(*table));
  const std::string where = PartitionName(layout, rewrite.partition);
  const std::string context = "compacting " + table->name.ToString() + " " + where;
  int64_t rows = 0, bytes = 0, seq = 0;
  for (const auto& f : rewrite.inputs) {
    rows += f.data_file.record_count;
    bytes += f.data_file.file_size_in_bytes;
    seq = std::max(seq, f.sequence_number.value_or(0));
  }
  // Rows per output file from the inputs' bytes per row; SortedFileWriter
  // also cuts at the target in bytes.
  const double per_row = rows > 0 ? static_cast<double>(bytes) / rows : 1.0;
  const int64_t target_rows = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(rules.target_bytes) / per_row));
  std::string dir = table->table_key + "/data";
  if (rewrite.partition) dir += "/" + where;
  const auto now = table->lake->clock->Now();
  auto reader = MergeFiles(table, rewrite.inputs, table->contract.dedup);
  if (!reader.ok()) return WithContext(reader.status(), context);
  write::SortedFileWriter writer(*table->lake->store, dir, layout, rewrite.partition,
                                 target_rows, rules.target_bytes, now);
  int64_t out_rows = 0;
  for (;;) {
    std::shared_ptr<arrow::RecordBatch> batch;
    auto st = (*reader)->ReadNext(&batch);
    if (st.ok() && batch == nullptr) break;
    if (st.ok()) st = writer.Write(batch);
    if (!st.ok()) {
      writer.Abort();
      return WithContext(st, context);
    }
    out_rows += batch->num_rows();
  }
  auto written = writer.Finish();
  if (!written.ok()) {
    writer.Abort();
    return WithContext(written.status(), context);
  }
  Replacement change;
  change.operation = "replace";
  change.removed = rewrite.inputs;
  change.added = std::move(*written);
  change.added_sequence_number = seq;
  const size_t written_files = change.added.size();
  int64_t written_bytes = 0;
  for (const auto& f : change.added) {
    written_bytes += f.bytes;
    if (f.footer != nullptr) table->lake->footers.Put(f.key, f.footer);
  }
  TIMELAKE_ASSIGN_OR_RAISE(table, CommitReplacement(table, change, options, context));
  ++report->partitions_compacted;
  report->files_rewritten += static_cast<int64_t>(rewrite.inputs.size());
  report->files_written += static_cast<int64_t>(written_files);
  report->rows_rewritten += rows;
  report->duplicates_removed += rows - out_rows;
  report->bytes_rewritten += bytes;
  report->bytes_written += written_bytes;
  ++report->commits;
  Progress(options, "compacted " + where + ": " + std::to_string(rewrite.inputs.size()) +
                        " files -> " + std::to_string(written_files) + ", " +
                        std::to_string(out_rows) + " rows (" +
                        std::to_string(rows - out_rows) + " duplicates removed)");
  return table;
}

namespace {

// Everything the snapshots `ids` of `metadata` reference: manifest lists,
// manifests, index files, and data files (live ones only, when
// `live_only`).
struct References {
  std::unordered_set<std::string> lists, manifests, indexes, data;
};

arrow::Status CollectReferences(LakeState& lake, const format::TableMetadata& metadata,
                                const std::unordered_set<int64_t>& ids, bool live_only,
                                References* out) {
  const auto& store = *lake.store;
  for (const auto& s : metadata.snapshots) {
    if (!ids.count(s.snapshot_id)) continue;
    TIMELAKE_ASSIGN_OR_RAISE(auto list_key, store.KeyOf(s.manifest_list));
    if (auto uri = LviUri(s)) {
      if (auto k = store.KeyOf(*uri); k.ok()) out->indexes.insert(*k);
    }
    if (!out->lists.insert(list_key).second) continue;
    TIMELAKE_ASSIGN_OR_RAISE(auto list_bytes, GetImmutable(lake, list_key));
    TIMELAKE_ASSIGN_OR_RAISE(auto manifests,
                             format::ReadManifestList(AsView(*list_bytes)));
    for (const auto& m : manifests) {
      TIMELAKE_ASSIGN_OR_RAISE(auto key, store.KeyOf(m.manifest_path));
      if (!out->manifests.insert(key).second) continue;
      TIMELAKE_ASSIGN_OR_RAISE(auto bytes, GetImmutable(lake, key));
      TIMELAKE_ASSIGN_OR_RAISE(auto contents, format::ReadManifest(AsView(*bytes)));
      for (const auto& e : contents.entries) {
        if (live_only && e.status == format::kEntryDeleted) continue;
        TIMELAKE_ASSIGN_OR_RAISE(auto k, store.KeyOf(e.data_file.file_path));
        out->data.insert(std::move(k));
      }
    }
  }
  return arrow::Status::OK();
}

// The local file system store writes an object as "<name>#<n>" and renames
// it into place; a writer killed in between leaves that file, which the
// store's listing hides. They are deleted here, by the same age rule.
int64_t SweepLocalStaging(const storage::Store& store, const std::string& table_key,
                          int64_t now_ms, int64_t cutoff_ms) {
  constexpr std::string_view kFile = "file://";
  const std::string& root = store.root_url();
  if (root.rfind(kFile, 0) != 0) return 0;
  std::string path;
  for (size_t i = kFile.size(); i < root.size(); ++i) {
    if (root[i] == '%' && i + 2 < root.size()) {
      path += static_cast<char>(std::stoi(root.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      path += root[i];
    }
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path) / table_key;
  int64_t deleted = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    const size_t hash = name.rfind('#');
    if (hash == std::string::npos || hash + 1 == name.size() ||
        name.find_first_not_of("0123456789", hash + 1) != std::string::npos) {
      continue;
    }
    const auto mtime = fs::last_write_time(it->path(), ec);
    if (ec) continue;
    // The file's age on the wall clock (the age rule itself is on the lake's).
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(
        fs::file_time_type::clock::now() - mtime);
    const int64_t ms = now_ms - age.count();
    if (ms > cutoff_ms) continue;
    if (fs::remove(it->path(), ec)) ++deleted;
  }
  return deleted;
}

std::unordered_set<int64_t> AllIds(const format::TableMetadata& m) {
  std::unordered_set<int64_t> ids;
  for (const auto& s : m.snapshots) ids.insert(s.snapshot_id);
  return ids;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> RunExpiry(
    std::shared_ptr<const TableState> table, const MaintainRules& rules, size_t min_batch,
    const StepOptions& options, MaintainReport* report) {
  auto& lake = *table->lake;
  const auto& store = *lake.store;
  const std::string context = "expiring snapshots of " + table->name.ToString();
  const int max_attempts = std::max(1, options.max_commit_attempts);
  std::vector<int64_t> expired;
  format::TableMetadata before;
  for (int attempt = 1;; ++attempt) {
    const auto now_ms = ToMillis(lake.clock->Now());
    expired = PlanExpiry(table->metadata, rules, now_ms);
    if (expired.empty() || expired.size() < min_batch) return table;
    const std::unordered_set<int64_t> gone(expired.begin(), expired.end());
    format::TableMetadata next = table->metadata;
    std::erase_if(next.snapshots, [&](const format::Snapshot& s) {
      return gone.count(s.snapshot_id) > 0;
    });
    if (auto log = next.doc.find("snapshot-log");
        log != next.doc.end() && log->is_array()) {
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& e : *log) {
        if (e.is_object() && e.contains("snapshot-id") &&
            e["snapshot-id"].is_number_integer() &&
            gone.count(e["snapshot-id"].get<int64_t>())) {
          continue;
        }
        kept.push_back(e);
      }
      *log = std::move(kept);
    }
    next.LogPreviousMetadata(store.Uri(table->metadata_key),
                             table->metadata.last_updated_ms, 20);
    next.last_updated_ms = std::max(now_ms, table->metadata.last_updated_ms);
    const int64_t version = table->version + 1;
    auto won =
        commit::TryCommit(store, table->table_key, version, next, table->metadata_key);
    if (!won.ok()) {
      return WithContext(won.status(),
                         context + ": committing version " + std::to_string(version));
    }
    if (*won) {
      before = table->metadata;
      commit::WriteVersionHintAsync(lake.store, table->table_key, version);
      TIMELAKE_ASSIGN_OR_RAISE(auto stored,
                               format::TableMetadata::Parse(next.Serialize(), context));
      TIMELAKE_ASSIGN_OR_RAISE(
          table, MakeTableState(table->lake, table->name, version,
                                commit::VersionKey(table->table_key, version),
                                std::move(stored)));
      lake.tables.Remember(*table);
      WriteHeadAsync(table);
      break;
    }
    if (attempt >= max_attempts) {
      return Conflict(context + ": commit conflict: gave up after " +
                      std::to_string(attempt) + " attempts");
    }
    commit::BackoffBeforeRetry(attempt);
    TIMELAKE_ASSIGN_OR_RAISE(table, LoadTableState(table->lake, table->name));
  }
  report->snapshots_expired += static_cast<int64_t>(expired.size());
  ++report->commits;

  // The files only the expired snapshots used: referenced by them, not by
  // any snapshot that remains (of the version just committed, which
  // includes every concurrent commit).
  References old_refs, live_refs;
  const std::unordered_set<int64_t> gone(expired.begin(), expired.end());
  TIMELAKE_RETURN_NOT_OK(WithContext(
      CollectReferences(lake, before, gone, /*live_only=*/false, &old_refs), context));
  TIMELAKE_RETURN_NOT_OK(
      WithContext(CollectReferences(lake, table->metadata, AllIds(table->metadata),
                                    /*live_only=*/true, &live_refs),
                  context));
  int64_t deleted = 0;
  auto sweep = [&](const std::unordered_set<std::string>& candidates,
                   const std::unordered_set<std::string>& keep) {
    for (const auto& k : candidates) {
      if (keep.count(k)) continue;
      if (store.Delete(k).ok()) ++deleted;
    }
  };
  sweep(old_refs.data, live_refs.data);
  sweep(old_refs.manifests, live_refs.manifests);
  sweep(old_refs.lists, live_refs.lists);
  sweep(old_refs.indexes, live_refs.indexes);
  report->files_deleted += deleted;
  Progress(options, "expired " + std::to_string(expired.size()) + " snapshots, deleted " +
                        std::to_string(deleted) + " files only they used");
  return table;
}

arrow::Status SweepOrphans(const TableState& table, std::chrono::milliseconds age,
                           const StepOptions& options, MaintainReport* report) {
  auto& lake = *table.lake;
  const auto& store = *lake.store;
  const std::string context = "sweeping orphan files of " + table.name.ToString();
  References refs;
  TIMELAKE_RETURN_NOT_OK(
      WithContext(CollectReferences(lake, table.metadata, AllIds(table.metadata),
                                    /*live_only=*/true, &refs),
                  context));
  const int64_t cutoff = ToMillis(lake.clock->Now()) - age.count();
  const std::string metadata_prefix = commit::MetadataPrefix(table.table_key) + "/";
  int64_t deleted = 0;
  std::vector<std::pair<int64_t, std::string>> old_versions;
  std::unordered_set<std::string> logged;  // the metadata log's files
  if (auto log = table.metadata.doc.find("metadata-log");
      log != table.metadata.doc.end() && log->is_array()) {
    for (const auto& e : *log) {
      if (e.is_object() && e.contains("metadata-file") &&
          e["metadata-file"].is_string()) {
        logged.insert(e["metadata-file"].get<std::string>());
      }
    }
  }
  for (const std::string folder : {"/data/", "/metadata/"}) {
    auto listing = store.List(table.table_key + folder, /*delimiter=*/false);
    if (!listing.ok()) return WithContext(listing.status(), context);
    for (const auto& o : listing->objects) {
      if (o.last_modified_ms > cutoff) continue;  // maybe a commit in flight
      if (o.key.rfind(metadata_prefix, 0) == 0) {
        const std::string name = o.key.substr(metadata_prefix.size());
        // The hint and the head stay. Of the versions, the newest
        // kKeepVersions stay (and those in the metadata log): readers list
        // them to find the newest, and a commit whose base version is gone
        // takes itself back (commit::TryCommit).
        if (name == "version-hint.text" || name == "timelake-head") continue;
        if (auto v = commit::VersionOfFileName(name)) {
          if (*v + kKeepVersions <= table.version && !logged.count(store.Uri(o.key))) {
            old_versions.push_back({*v, o.key});
          }
          continue;
        }
      }
      if (refs.data.count(o.key) || refs.manifests.count(o.key) ||
          refs.lists.count(o.key) || refs.indexes.count(o.key)) {
        continue;
      }
      if (store.Delete(o.key).ok()) ++deleted;
    }
  }
  // Oldest first, so that what is left is always a run of the newest.
  std::sort(old_versions.begin(), old_versions.end());
  for (const auto& [v, key] : old_versions) {
    if (!store.Delete(key).ok()) break;
    ++deleted;
  }
  deleted +=
      SweepLocalStaging(store, table.table_key, ToMillis(lake.clock->Now()), cutoff);
  report->orphans_deleted += deleted;
  Progress(options, "deleted " + std::to_string(deleted) + " orphan files");
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<const TableState>> MaintainAfterAppend(
    std::shared_ptr<const TableState> table,
    const std::set<std::optional<int32_t>>& partitions, int max_commit_attempts,
    MaintainReport* report) {
  const auto start = SteadyClock::now();
  TIMELAKE_ASSIGN_OR_RAISE(auto rules, RulesOf(*table));
  StepOptions options;
  options.max_commit_attempts = max_commit_attempts;
  TIMELAKE_ASSIGN_OR_RAISE(table, RunRetention(table, rules, options, report));
  if (table->contract.time_column) {
    // Bounded work: one tier of each touched partition, one cold partition.
    TIMELAKE_ASSIGN_OR_RAISE(auto files, read::ListLiveFiles(*table));
    auto jobs = PlanTiered(files, rules, partitions);
    for (auto& cold : PlanFull(files, *table, rules, /*cold_only=*/true, 1)) {
      if (!partitions.count(cold.partition)) jobs.push_back(std::move(cold));
    }
    for (const auto& job : jobs) {
      auto rewritten = RunRewrite(table, job, rules, options, report);
      if (!rewritten.ok() && KindOf(rewritten.status()) == ErrorKind::kConflict) {
        // Another writer compacted these files first: nothing to do here.
        ++report->conflicts;
        continue;
      }
      TIMELAKE_ASSIGN_OR_RAISE(table, std::move(rewritten));
    }
  }
  // Expiry waits for a batch, so that most appends make one commit only.
  TIMELAKE_ASSIGN_OR_RAISE(table, RunExpiry(table, rules, 10, options, report));
  report->version = table->version;
  report->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
  return table;
}

}  // namespace timelake::internal

namespace timelake {

arrow::Result<std::pair<Table, MaintainReport>> Table::Maintain(
    const MaintainOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  MaintainReport report;
  internal::StepOptions step;
  step.max_commit_attempts = options.max_commit_attempts;
  step.progress = options.progress;
  // Plans on the newest version, not this handle's.
  TIMELAKE_ASSIGN_OR_RAISE(auto table,
                           internal::LoadTableState(state_->lake, state_->name));
  TIMELAKE_ASSIGN_OR_RAISE(auto rules, internal::RulesOf(*table));
  if (options.retention) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunRetention(table, rules, step, &report));
  }
  if (options.compact) {
    // Passes until no partition was split by the merge budget; each pass
    // merges the previous one's outputs (a few passes for any size).
    std::optional<std::set<std::optional<int32_t>>> again;
    for (int pass = 0; pass < 8 && (!again || !again->empty()); ++pass) {
      TIMELAKE_ASSIGN_OR_RAISE(auto files, read::ListLiveFiles(*table));
      if (again) {
        std::erase_if(files, [&](const read::LiveFile& f) {
          return !again->count(internal::PartitionValueOf(f));
        });
      }
      again.emplace();
      for (const auto& job : internal::PlanFull(files, *table, rules,
                                                /*cold_only=*/false, SIZE_MAX)) {
        TIMELAKE_ASSIGN_OR_RAISE(table,
                                 internal::RunRewrite(table, job, rules, step, &report));
        if (job.partial) again->insert(job.partition);
      }
    }
  }
  if (options.expire) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunExpiry(table, rules, 1, step, &report));
  }
  if (options.clean_orphans) {
    TIMELAKE_RETURN_NOT_OK(
        internal::SweepOrphans(*table, options.orphan_age, step, &report));
  }
  report.version = table->version;
  report.duration = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  return std::make_pair(Table(std::move(table)), report);
}

}  // namespace timelake
