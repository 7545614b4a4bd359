// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/maintain/maintain.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "timelake/commit/commit.h"
#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/read/prune.h"
#include "timelake/read/session.h"
#include "timelake/settings.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"
#include "timelake/versions/versions.h"
#include "timelake/write/lvi.h"

namespace timelake::internal {

std::string PartitionName(const write::Layout& layout, std::optional<int32_t> p) {
  if (!p) return "(unpartitioned)";
  return layout.partition_field_name + "=" + write::PartitionLabel(*p, layout.chunk);
}

namespace {

namespace cp = arrow::compute;
using SteadyClock = std::chrono::steady_clock;

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

void Progress(const StepOptions& options, const std::string& line) {
  if (options.progress) options.progress(line);
}

// Puts bytes written by this process into the lake's object cache (they are
// immutable), so that the next plan does not read them back.
void Remember(LakeState& lake, const std::string& key, const std::string& bytes) {
  lake.objects.Put(key, arrow::Buffer::FromString(bytes));
}

// A Replacement as a commit::Change: the manifests that list removed files
// are rewritten over whatever version wins; kConflict when an input file is
// no longer live there.
class ReplaceChange : public commit::Change {
 public:
  ReplaceChange(const TableState& base, const Replacement& change, std::string context)
      : store_(*base.lake->store),
        change_(change),
        context_(std::move(context)),
        snapshot_id_(NewSnapshotId()),
        mopts_(commit::ManifestOptionsOf(base)) {
    for (const auto& f : change.removed) {
      removed_keys_.insert(f.key);
      removed_rows_ += f.data_file.record_count;
      removed_bytes_ += f.data_file.file_size_in_bytes;
    }
    for (const auto& f : change.added) {
      added_rows_ += f.rows;
      added_bytes_ += f.bytes;
    }
  }

  bool Landed(const TableState& base) const override {
    return base.metadata.FindSnapshot(snapshot_id_) != nullptr;
  }

  void Abandon() override {
    for (const auto& f : change_.added) (void)store_.Delete(f.key);
  }

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const TableState& base, commit::Attempt* attempt) override;

 private:
  const storage::Store& store_;
  const Replacement& change_;
  const std::string context_;
  const int64_t snapshot_id_;
  const format::ManifestWriteOptions mopts_;
  std::unordered_set<std::string> removed_keys_;
  int64_t removed_rows_ = 0, removed_bytes_ = 0, added_rows_ = 0, added_bytes_ = 0;
};

arrow::Result<std::optional<format::TableMetadata>> ReplaceChange::Rebase(
    const TableState& base, commit::Attempt* attempt) {
  auto& lake = *base.lake;
  const auto& store = store_;
  const auto& context = context_;
  const auto& mopts = mopts_;
  const auto& change = change_;
  const int64_t snapshot_id = snapshot_id_;
  const auto now = lake.clock->Now();
  auto& written = attempt->written;
  const auto& bm = base.metadata;
  const format::Snapshot* parent = bm.CurrentSnapshot();
  // Only new files can go into a table without a snapshot (a rollup's
  // first refresh).
  if (parent == nullptr && !change.removed.empty())
    return Conflict(context + ": the table has no snapshot any more");
  if (bm.DefaultSpec().spec_id != mopts.partition_spec_id ||
      bm.current_schema_id != mopts.schema_id) {
    return Conflict(context +
                    ": the table's schema or partitioning changed concurrently; "
                    "maintain again");
  }
  const int64_t seq = bm.last_sequence_number + 1;
  std::vector<format::ManifestFile> parent_manifests;
  if (parent != nullptr) {
    TIMELAKE_ASSIGN_OR_RAISE(parent_manifests,
                             commit::LiveManifestsOf(base, *parent, context));
  }
  // Manifests that list none of the removed files stay as they are; the
  // others are rewritten: their other live files as EXISTING entries, the
  // removed ones as DELETED entries of the new snapshot.
  std::vector<format::ManifestFile> kept;
  std::vector<format::ManifestEntry> existing, deleted;
  for (const auto& m : parent_manifests) {
    if (m.content != format::kManifestData) {
      return Unsupported(context + ": manifest " + m.manifest_path +
                         " lists delete files");
    }
    TIMELAKE_ASSIGN_OR_RAISE(auto key, KeyOf(base, m.manifest_path));
    auto bytes = GetImmutable(lake, key);
    if (!bytes.ok()) return WithContext(bytes.status(), context);
    auto contents = format::ReadManifest(AsView(**bytes));
    if (!contents.ok()) {
      return WithContext(contents.status(), context + ": manifest " + m.manifest_path);
    }
    format::InheritManifestFileFields(m, &contents->entries);
    bool touched = false;
    for (const auto& e : contents->entries) {
      if (e.status == format::kEntryDeleted) continue;
      auto k = KeyOf(base, e.data_file.file_path);
      if (k.ok() && removed_keys_.count(*k)) touched = true;
    }
    if (!touched) {
      kept.push_back(m);
      continue;
    }
    if (m.partition_spec_id != mopts.partition_spec_id) {
      return Unsupported(context + ": manifest " + m.manifest_path +
                         " has an older partition spec");
    }
    for (auto& e : contents->entries) {
      if (e.status == format::kEntryDeleted) continue;
      auto k = KeyOf(base, e.data_file.file_path);
      if (k.ok() && removed_keys_.count(*k)) {
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
    return Conflict(
        context + ": " + std::to_string(change.removed.size() - deleted.size()) +
        " of its input files were replaced or dropped concurrently "
        "(version " +
        std::to_string(base.version) + "); nothing was committed, maintain again");
  }

  // The new manifests: added files, existing ones, deleted ones.
  std::vector<format::ManifestFile> manifests;
  auto write_manifest = [&](const std::vector<format::ManifestEntry>& entries,
                            const char* suffix) -> arrow::Status {
    if (entries.empty()) return arrow::Status::OK();
    TIMELAKE_ASSIGN_OR_RAISE(auto bytes, format::WriteManifest(mopts, entries));
    const std::string key = versions::MetadataPrefix(base.table_key) + "/" +
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
  for (size_t i = 0; i < change.added.size(); ++i) {
    auto e = commit::NewEntry(change.added[i], base, snapshot_id);
    // The rows keep the newest commit they came from: dedup on read
    // still ranks them below commits made after their inputs.
    e.sequence_number = i < change.added_sequence_numbers.size()
                            ? change.added_sequence_numbers[i]
                            : change.added_sequence_number;
    if (e.sequence_number == Replacement::kCommitSequence) e.sequence_number = seq;
    added.push_back(std::move(e));
  }
  arrow::Status st = write_manifest(added, "added-m");
  if (st.ok()) st = write_manifest(existing, "existing-m");
  if (st.ok()) st = write_manifest(deleted, "deleted-m");
  if (!st.ok()) return WithContext(st, context);
  const size_t own = manifests.size();
  manifests.insert(manifests.end(), kept.begin(), kept.end());
  TIMELAKE_ASSIGN_OR_RAISE(
      manifests,
      commit::MergeManifests(base, std::move(manifests), own, snapshot_id, seq,
                             commit::ManifestMergeRulesOf(bm), attempt, context));

  const std::optional<int64_t> parent_id =
      parent != nullptr ? std::optional<int64_t>(parent->snapshot_id) : std::nullopt;
  auto list = format::WriteManifestList(snapshot_id, parent_id, seq, manifests);
  if (!list.ok()) return WithContext(list.status(), context);
  const std::string new_list_key = commit::ManifestListKey(
      base.table_key, snapshot_id, attempt->number, NewUuidV7(now));
  if (auto put = store.Put(new_list_key, *list); !put.ok()) {
    return WithContext(put, context);
  }
  written.push_back(new_list_key);
  Remember(lake, new_list_key, *list);

  format::TableMetadata next = bm;
  format::Snapshot snap;
  snap.snapshot_id = snapshot_id;
  snap.parent_snapshot_id = parent_id;
  snap.sequence_number = seq;
  snap.timestamp_ms = std::max(ToMillis(lake.clock->Now()), bm.last_updated_ms);
  snap.manifest_list = store.Uri(new_list_key);
  snap.schema_id = bm.current_schema_id;
  auto total = [&](const char* key) -> int64_t {
    return parent != nullptr ? format::SummaryInt(*parent, key) : 0;
  };
  snap.summary = {
      {format::summary::kOperation, change.operation},
      {format::summary::kAddedDataFiles, std::to_string(change.added.size())},
      {format::summary::kAddedRecords, std::to_string(added_rows_)},
      {format::summary::kAddedFilesSize, std::to_string(added_bytes_)},
      {format::summary::kDeletedDataFiles, std::to_string(change.removed.size())},
      {format::summary::kDeletedRecords, std::to_string(removed_rows_)},
      {format::summary::kRemovedFilesSize, std::to_string(removed_bytes_)},
      {format::summary::kTotalDataFiles,
       std::to_string(total(format::summary::kTotalDataFiles) +
                      static_cast<int64_t>(change.added.size()) -
                      static_cast<int64_t>(change.removed.size()))},
      {format::summary::kTotalRecords,
       std::to_string(total(format::summary::kTotalRecords) + added_rows_ -
                      removed_rows_)},
      {format::summary::kTotalFilesSize,
       std::to_string(total(format::summary::kTotalFilesSize) + added_bytes_ -
                      removed_bytes_)},
      {format::summary::kTotalDeleteFiles, "0"},
      {format::summary::kTotalPositionDeletes, "0"},
      {format::summary::kTotalEqualityDeletes, "0"},
  };
  for (const auto& [key, value] : change.summary) snap.summary[key] = value;
  if (parent != nullptr) {
    for (const char* key : {format::summary::kRollupSourceSnapshot,
                            format::summary::kRollupSourceSequence}) {
      auto it = parent->summary.find(key);
      if (it != parent->summary.end() && !snap.summary.count(key)) {
        snap.summary[key] = it->second;
      }
    }
  }
  std::shared_ptr<arrow::RecordBatch> index = change.index;
  bool drop_index = change.drop_index;
  if (change.index_at) {
    auto at = change.index_at(base);
    if (!at.ok()) return WithContext(at.status(), context);
    index = *at;
    drop_index = index == nullptr;
  }
  if (index != nullptr) {
    auto key = WriteLvi(store, base.table_key, snapshot_id, *index, NewUuidV7(now));
    if (!key.ok()) return WithContext(key.status(), context);
    written.push_back(*key);
    snap.summary[kLastValueIndexKey] = store.Uri(*key);
  } else if (!drop_index && parent != nullptr) {
    // The rows' newest values are unchanged: the parent's index holds.
    if (auto uri = LviUri(*parent)) snap.summary[kLastValueIndexKey] = *uri;
  }
  next.AddSnapshot(std::move(snap));
  return next;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> CommitReplacement(
    std::shared_ptr<const TableState> base, const Replacement& change,
    const StepOptions& options, const std::string& context) {
  ReplaceChange replace(*base, change, context);
  commit::CommitOptions copts;
  copts.max_attempts = options.max_commit_attempts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome,
                           commit::Commit(std::move(base), &replace, copts));
  return outcome.state;
}

namespace {

// Table versions kept besides those in the metadata log.
constexpr int64_t kKeepVersions = 100;

// Inline maintenance lets this many older versions pile up before it lists
// the metadata folder to delete them: one listing per kTrimEvery commits.
constexpr int64_t kTrimEvery = 32;

// Deletes the table versions among `objects` (a listing of the metadata
// folder) older than the newest kKeepVersions, but those the metadata log
// names and those modified after `cutoff_ms`, oldest first: what is left is
// always a run of the newest. Readers list them to find the newest, and a
// commit whose base version is gone takes itself back (versions::TryCommit).
// Returns how many it deleted.
int64_t DeleteOldVersions(const TableState& table,
                          const std::vector<storage::ObjectMeta>& objects,
                          int64_t cutoff_ms) {
  std::unordered_set<std::string> logged;
  if (auto log = table.metadata.doc.find("metadata-log");
      log != table.metadata.doc.end() && log->is_array()) {
    for (const auto& e : *log) {
      if (e.is_object() && e.contains("metadata-file") &&
          e["metadata-file"].is_string()) {
        const auto uri = e["metadata-file"].get<std::string>();
        logged.insert(KeyOf(table, uri).ValueOr(uri));
      }
    }
  }
  std::vector<std::pair<int64_t, std::string>> old;
  for (const auto& o : objects) {
    const size_t slash = o.key.rfind('/');
    auto v = versions::VersionOfFileName(
        slash == std::string::npos ? o.key : o.key.substr(slash + 1));
    if (v && *v + kKeepVersions <= table.version && o.last_modified_ms <= cutoff_ms &&
        !logged.count(o.key)) {
      old.push_back({*v, o.key});
    }
  }
  std::sort(old.begin(), old.end());
  int64_t deleted = 0;
  for (const auto& [v, key] : old) {
    if (!table.lake->store->Delete(key).ok()) break;
    ++deleted;
  }
  return deleted;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> RunRetention(
    std::shared_ptr<const TableState> table, const MaintainRules& rules,
    const StepOptions& options, MaintainReport* report) {
  if (!rules.retention || !table->contract.time_column) return table;
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, LayoutOf(*table));
  if (!layout.partitioned) return table;
  const int64_t now_us = ToMicros(table->lake->clock->Now());
  const int64_t cutoff = now_us - rules.retention->count() * 1000;
  TIMELAKE_ASSIGN_OR_RAISE(auto files, internal::ListLiveFiles(*table));
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
  // they have no row left at all. Decided over the version the commit lands
  // on, whose index may hold newer rows of appends made meanwhile.
  const std::string time_column = *table->contract.time_column;
  const Chunk chunk = layout.chunk;
  change.index_at =
      [dropped, time_column, chunk](
          const TableState& base) -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
    const auto* snapshot = base.metadata.CurrentSnapshot();
    auto uri = snapshot ? LviUri(*snapshot) : std::nullopt;
    if (!uri) return nullptr;
    auto index = ReadLvi(base, *uri);
    if (!index.ok()) return nullptr;  // `latest` then scans
    TIMELAKE_RETURN_NOT_OK(EnsureCompute());
    const auto& time = (*index)->GetColumnByName(time_column);
    if (time == nullptr) return nullptr;
    arrow::BooleanBuilder keep;
    TIMELAKE_RETURN_NOT_OK(keep.Reserve((*index)->num_rows()));
    const auto& micros = static_cast<const arrow::TimestampArray&>(*time);
    for (int64_t i = 0; i < micros.length(); ++i) {
      keep.UnsafeAppend(!dropped.count(write::PartitionOf(micros.Value(i), chunk)));
    }
    TIMELAKE_ASSIGN_OR_RAISE(auto mask, keep.Finish());
    TIMELAKE_ASSIGN_OR_RAISE(auto filtered, cp::Filter(*index, mask));
    return filtered.record_batch();
  };
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

namespace {

// The streaming path of a rewrite: the inputs merged through DataFusion
// (MergeFiles) into files of about `target_rows` rows or `target_bytes`.
arrow::Result<std::vector<write::WrittenFile>> MergeRewrite(
    const std::shared_ptr<const TableState>& table, const write::Layout& layout,
    const Rewrite& rewrite, const std::string& dir, int64_t target_rows,
    int64_t target_bytes, int64_t* out_rows) {
  auto reader = MergeFiles(table, rewrite.inputs, table->contract.dedup);
  if (!reader.ok()) return reader.status();
  write::SortedFileWriter writer(*table->lake->store, dir, layout, rewrite.partition,
                                 target_rows, target_bytes, table->lake->clock->Now());
  for (;;) {
    std::shared_ptr<arrow::RecordBatch> batch;
    auto st = (*reader)->ReadNext(&batch);
    if (st.ok() && batch == nullptr) break;
    if (st.ok()) st = writer.Write(batch);
    if (!st.ok()) {
      writer.Abort();
      return st;
    }
    *out_rows += batch->num_rows();
  }
  auto written = writer.Finish();
  if (!written.ok()) writer.Abort();
  return written;
}

}  // namespace

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
  int64_t out_rows = 0;
  std::vector<write::WrittenFile> written;
  auto whole = RewriteWhole(*table, layout, rewrite.inputs, dir, rewrite.partition,
                            rules.target_bytes, &out_rows);
  if (!whole.ok()) return WithContext(whole.status(), context);
  if (*whole) {
    written.push_back(std::move(**whole));
  } else {
    auto merged = MergeRewrite(table, layout, rewrite, dir, target_rows,
                               rules.target_bytes, &out_rows);
    if (!merged.ok()) return WithContext(merged.status(), context);
    written = std::move(*merged);
  }
  Replacement change;
  change.operation = "replace";
  change.removed = rewrite.inputs;
  change.added = std::move(written);
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

arrow::Result<std::shared_ptr<const TableState>> RunCompaction(
    std::shared_ptr<const TableState> table, const MaintainRules& rules,
    const StepOptions& options, MaintainReport* report,
    const std::function<void(const Rewrite&, const TableState&)>& rewritten) {
  std::optional<std::set<std::optional<int32_t>>> again;
  for (int pass = 0; pass < 8 && (!again || !again->empty()); ++pass) {
    TIMELAKE_ASSIGN_OR_RAISE(auto files, ListLiveFiles(*table));
    if (again) {
      std::erase_if(files, [&](const format::LiveFile& f) {
        return !again->count(PartitionValueOf(f));
      });
    }
    again.emplace();
    for (const auto& job :
         PlanFull(files, *table, rules, /*cold_only=*/false, SIZE_MAX)) {
      TIMELAKE_ASSIGN_OR_RAISE(table, RunRewrite(table, job, rules, options, report));
      if (rewritten) rewritten(job, *table);
      if (job.partial) again->insert(job.partition);
    }
  }
  return table;
}

namespace {

// Everything the snapshots `ids` of `metadata` reference: manifest lists,
// manifests, index files, and data files (live ones only, when
// `live_only`).
struct References {
  std::unordered_set<std::string> lists, manifests, indexes, data;
};

arrow::Status CollectReferences(const TableState& table,
                                const format::TableMetadata& metadata,
                                const std::unordered_set<int64_t>& ids, bool live_only,
                                References* out) {
  auto& lake = *table.lake;
  for (const auto& s : metadata.snapshots) {
    if (!ids.count(s.snapshot_id)) continue;
    TIMELAKE_ASSIGN_OR_RAISE(auto list_key, KeyOf(table, s.manifest_list));
    if (auto uri = LviUri(s)) {
      if (auto k = KeyOf(table, *uri); k.ok()) out->indexes.insert(*k);
    }
    if (!out->lists.insert(list_key).second) continue;
    TIMELAKE_ASSIGN_OR_RAISE(auto list_bytes, GetImmutable(lake, list_key));
    TIMELAKE_ASSIGN_OR_RAISE(auto manifests,
                             format::ReadManifestList(AsView(*list_bytes)));
    for (const auto& m : manifests) {
      TIMELAKE_ASSIGN_OR_RAISE(auto key, KeyOf(table, m.manifest_path));
      if (!out->manifests.insert(key).second) continue;
      TIMELAKE_ASSIGN_OR_RAISE(auto bytes, GetImmutable(lake, key));
      TIMELAKE_ASSIGN_OR_RAISE(auto contents, format::ReadManifest(AsView(*bytes)));
      for (const auto& e : contents.entries) {
        if (live_only && e.status == format::kEntryDeleted) continue;
        TIMELAKE_ASSIGN_OR_RAISE(auto k, KeyOf(table, e.data_file.file_path));
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

// Expiry as a commit::Change: the snapshots to expire are planned again
// over whatever version wins.
class ExpiryChange : public commit::Change {
 public:
  ExpiryChange(const MaintainRules& rules, size_t min_batch)
      : rules_(rules), min_batch_(min_batch) {}

  const std::vector<int64_t>& expired() const { return expired_; }

  arrow::Result<std::optional<format::TableMetadata>> Rebase(const TableState& base,
                                                             commit::Attempt*) override {
    const auto now_ms = ToMillis(base.lake->clock->Now());
    expired_ = PlanExpiry(base.metadata, rules_, now_ms);
    if (expired_.empty() || expired_.size() < min_batch_) return std::nullopt;
    const std::unordered_set<int64_t> gone(expired_.begin(), expired_.end());
    format::TableMetadata next = base.metadata;
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
    next.last_updated_ms = std::max(now_ms, base.metadata.last_updated_ms);
    return next;
  }

 private:
  const MaintainRules& rules_;
  const size_t min_batch_;
  std::vector<int64_t> expired_;
};

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> RunExpiry(
    std::shared_ptr<const TableState> table, const MaintainRules& rules, size_t min_batch,
    const StepOptions& options, MaintainReport* report) {
  auto& lake = *table->lake;
  const auto& store = *lake.store;
  const std::string context = "expiring snapshots of " + table->name.ToString();
  ExpiryChange change(rules, min_batch);
  commit::CommitOptions copts;
  copts.max_attempts = options.max_commit_attempts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome, commit::Commit(table, &change, copts));
  if (!outcome.committed) return outcome.state;
  const std::vector<int64_t>& expired = change.expired();
  const format::TableMetadata& before = outcome.base->metadata;
  table = outcome.state;
  report->snapshots_expired += static_cast<int64_t>(expired.size());
  ++report->commits;

  // The files only the expired snapshots used: referenced by them, not by
  // any snapshot that remains (of the version just committed, which
  // includes every concurrent commit).
  References old_refs, live_refs;
  const std::unordered_set<int64_t> gone(expired.begin(), expired.end());
  TIMELAKE_RETURN_NOT_OK(WithContext(
      CollectReferences(*table, before, gone, /*live_only=*/false, &old_refs), context));
  TIMELAKE_RETURN_NOT_OK(
      WithContext(CollectReferences(*table, table->metadata, AllIds(table->metadata),
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
      WithContext(CollectReferences(table, table.metadata, AllIds(table.metadata),
                                    /*live_only=*/true, &refs),
                  context));
  const int64_t cutoff = ToMillis(lake.clock->Now()) - age.count();
  const std::string metadata_prefix = versions::MetadataPrefix(table.table_key) + "/";
  int64_t deleted = 0;
  for (const std::string folder : {"/data/", "/metadata/"}) {
    auto listing = store.List(table.table_key + folder, /*delimiter=*/false);
    if (!listing.ok()) return WithContext(listing.status(), context);
    for (const auto& o : listing->objects) {
      if (o.last_modified_ms > cutoff) continue;  // maybe a commit in flight
      if (o.key.rfind(metadata_prefix, 0) == 0) {
        const std::string name = o.key.substr(metadata_prefix.size());
        // The hint, the head and the versions stay (the old versions go
        // below).
        if (name == "version-hint.text" || name == "timelake-head" ||
            versions::VersionOfFileName(name)) {
          continue;
        }
      }
      if (refs.data.count(o.key) || refs.manifests.count(o.key) ||
          refs.lists.count(o.key) || refs.indexes.count(o.key)) {
        continue;
      }
      if (store.Delete(o.key).ok()) ++deleted;
    }
    if (folder == "/metadata/")
      deleted += DeleteOldVersions(table, listing->objects, cutoff);
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
  const int64_t start_version = table->version;
  TIMELAKE_ASSIGN_OR_RAISE(auto rules, RulesOf(*table));
  StepOptions options;
  options.max_commit_attempts = max_commit_attempts;
  TIMELAKE_ASSIGN_OR_RAISE(table, RunRetention(table, rules, options, report));
  if (table->contract.time_column) {
    // Bounded work: the full tiers of each touched partition (what a merge
    // lifts waits for the next run), one cold partition.
    TIMELAKE_ASSIGN_OR_RAISE(auto files, internal::ListLiveFiles(*table));
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
  // The versions older than the newest kKeepVersions go, a batch at a time,
  // when the table passes a multiple of kTrimEvery: without this only an
  // orphan sweep would delete them, and every reader lists them all to find
  // the newest. Best effort: a failed listing leaves them to the next time.
  if (table->version >= kKeepVersions + kTrimEvery &&
      table->version / kTrimEvery != (start_version - 1) / kTrimEvery) {
    auto listing =
        table->lake->store->List(versions::MetadataPrefix(table->table_key) + "/", true);
    if (listing.ok()) {
      report->orphans_deleted += DeleteOldVersions(*table, listing->objects,
                                                   std::numeric_limits<int64_t>::max());
    }
  }
  report->version = table->version;
  report->duration =
      std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
  return table;
}

}  // namespace timelake::internal
