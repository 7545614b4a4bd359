// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Deleting rows (Table::Delete, `DELETE FROM`): a copy-on-write rewrite of
// the data files that hold rows matching a predicate, committed as one
// snapshot that replaces them, with the last-value index updated in it.

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "timelake/maintain/maintain.h"
#include "timelake/read/session.h"
#include "timelake/util/compute.h"
#include "timelake/write/lvi.h"

namespace timelake::internal {

namespace {

namespace cp = arrow::compute;

// Attempts of a whole delete (plan, rewrite, commit) when a concurrent
// rewrite replaced the files it read; each attempt plans on the newest
// version.
constexpr int kDeleteAttempts = 5;

// What identifies an index row as the same row in another index: its series,
// time and insertion time.
std::vector<int> IdentityColumns(const arrow::Schema& schema, const Contract& contract) {
  std::vector<int> columns;
  std::vector<std::string> names = contract.series_key;
  if (contract.time_column) names.push_back(*contract.time_column);
  if (!contract.ingest_column.empty()) names.push_back(contract.ingest_column);
  for (const auto& name : names) {
    const int i = schema.GetFieldIndex(name);
    if (i >= 0) columns.push_back(i);
  }
  return columns;
}

arrow::Result<std::string> RowIdentity(const arrow::RecordBatch& batch,
                                       const std::vector<int>& columns, int64_t row) {
  std::string out;
  for (int c : columns) {
    TIMELAKE_ASSIGN_OR_RAISE(auto scalar, batch.column(c)->GetScalar(row));
    out += scalar->is_valid ? scalar->ToString() : std::string("\x01null");
    out += '\0';
  }
  return out;
}

// The index over `base` after the delete: `fresh` (the newest rows left,
// computed before the commit) with the rows that commits after `planned`
// brought into base's index (they are newer than anything the delete saw).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> IndexAfterDelete(
    const TableState& base, std::optional<int64_t> planned_snapshot,
    const std::shared_ptr<arrow::RecordBatch>& planned_index,
    const std::shared_ptr<arrow::RecordBatch>& fresh) {
  auto empty = [&]() { return arrow::RecordBatch::MakeEmpty(base.schema); };
  if (base.metadata.current_snapshot_id == planned_snapshot) {
    if (fresh != nullptr) return fresh;
    return empty();
  }
  const auto* snapshot = base.metadata.CurrentSnapshot();
  auto uri = snapshot ? LviUri(*snapshot) : std::nullopt;
  if (!uri) return nullptr;  // a writer that keeps no index came between
  auto newest = ReadLvi(base, *uri);
  if (!newest.ok()) return nullptr;  // `latest` then scans
  std::unordered_set<std::string> seen;
  const auto columns = IdentityColumns(*base.schema, base.contract);
  if (planned_index != nullptr) {
    for (int64_t i = 0; i < planned_index->num_rows(); ++i) {
      TIMELAKE_ASSIGN_OR_RAISE(auto id, RowIdentity(*planned_index, columns, i));
      seen.insert(std::move(id));
    }
  }
  arrow::BooleanBuilder keep;
  TIMELAKE_RETURN_NOT_OK(keep.Reserve((*newest)->num_rows()));
  for (int64_t i = 0; i < (*newest)->num_rows(); ++i) {
    TIMELAKE_ASSIGN_OR_RAISE(auto id, RowIdentity(**newest, columns, i));
    keep.UnsafeAppend(!seen.count(id));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto mask, keep.Finish());
  TIMELAKE_RETURN_NOT_OK(EnsureCompute());
  TIMELAKE_ASSIGN_OR_RAISE(auto later, cp::Filter(*newest, mask));
  TIMELAKE_ASSIGN_OR_RAISE(
      auto merged, MergeLvi(fresh, later.record_batch(), base.contract, *base.schema));
  if (merged == nullptr) return empty();
  return merged;
}

// One delete attempt over `table`; kConflict when a concurrent rewrite
// replaced its input files (nothing of it is left behind then).
arrow::Result<std::shared_ptr<const TableState>> DeleteOnce(
    std::shared_ptr<const TableState> table, const std::string& where,
    const StepOptions& options, DeleteReport* report) {
  const std::string context =
      "deleting from " + table->name.ToString() + " where " + where;
  // The count checks the predicate (a plan error changes nothing) and says
  // which files pruning left: only they can hold matching rows.
  auto counted = CountMatches(table->lake, table->name, where);
  if (!counted.ok()) return WithContext(counted.status(), context);
  const MatchCount& match = *counted;
  if (match.rows == 0) return table;
  const std::unordered_set<std::string> candidates(match.files.begin(),
                                                   match.files.end());
  TIMELAKE_ASSIGN_OR_RAISE(auto files, ListLiveFiles(*table));
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, LayoutOf(*table));
  TIMELAKE_ASSIGN_OR_RAISE(auto rules, RulesOf(*table));
  // On a dedup table a row's older duplicates may lie in other files of its
  // partition: deleting only the visible one would bring them back. The
  // partitions that hold matches are rewritten whole, merged, which drops
  // every version of a deleted row (and compacts the partition).
  const bool dedup = table->contract.dedup && table->contract.time_column.has_value();
  std::vector<std::vector<format::LiveFile>> groups;
  if (dedup) {
    std::map<std::optional<int32_t>, std::vector<format::LiveFile>> by_partition;
    std::set<std::optional<int32_t>> touched;
    for (const auto& f : files) {
      if (candidates.count(f.key)) touched.insert(PartitionValueOf(f));
    }
    for (const auto& f : files) {
      auto p = PartitionValueOf(f);
      if (touched.count(p)) by_partition[p].push_back(f);
    }
    for (auto& [p, group] : by_partition) groups.push_back(std::move(group));
  } else {
    for (const auto& f : files) {
      if (candidates.count(f.key)) groups.push_back({f});
    }
  }

  Replacement change;
  std::set<std::optional<int32_t>> partitions;
  int64_t rows_deleted = 0, rows_rewritten = 0, bytes_written = 0, files_rewritten = 0;
  auto abandon = [&]() {
    for (const auto& f : change.added) (void)table->lake->store->Delete(f.key);
  };
  const auto now = table->lake->clock->Now();
  for (auto& group : groups) {
    const auto partition = PartitionValueOf(group.front());
    // A dedup partition is merged for the count, so its visible total
    // comes in the same pass; a plain file's total is in its metadata.
    auto pinned = CountPinned(table, group, dedup, where, /*with_total=*/dedup);
    if (!pinned.ok()) {
      abandon();
      return WithContext(pinned.status(), context);
    }
    const int64_t matched = pinned->matching;
    if (matched == 0) continue;
    rows_deleted += matched;
    partitions.insert(partition);
    int64_t rows = 0, bytes = 0, seq = 0;
    for (const auto& f : group) {
      rows += f.data_file.record_count;
      bytes += f.data_file.file_size_in_bytes;
      seq = std::max(seq, f.sequence_number.value_or(0));
    }
    if (matched == pinned->total.value_or(rows)) {
      // Every row goes (a wrong day, everything before a time): the files
      // are dropped, not read again.
      if (options.progress) {
        options.progress("dropped " + PartitionName(layout, partition) + ": " +
                         std::to_string(group.size()) + " files, " +
                         std::to_string(matched) + " rows deleted");
      }
      for (auto& f : group) change.removed.push_back(std::move(f));
      continue;
    }
    const double per_row = rows > 0 ? static_cast<double>(bytes) / rows : 1.0;
    const int64_t target_rows = std::max<int64_t>(
        1, static_cast<int64_t>(static_cast<double>(rules.target_bytes) / per_row));
    std::string dir = table->table_key + "/data";
    if (partition) dir += "/" + PartitionName(layout, partition);
    auto reader = MergeFiles(table, group, dedup, where);
    if (!reader.ok()) {
      abandon();
      return WithContext(reader.status(), context);
    }
    write::SortedFileWriter writer(*table->lake->store, dir, layout, partition,
                                   target_rows, rules.target_bytes, now);
    int64_t kept = 0;
    arrow::Status st;
    for (;;) {
      std::shared_ptr<arrow::RecordBatch> batch;
      st = (*reader)->ReadNext(&batch);
      if (!st.ok() || batch == nullptr) break;
      st = writer.Write(batch);
      if (!st.ok()) break;
      kept += batch->num_rows();
    }
    auto written =
        st.ok() ? writer.Finish() : arrow::Result<std::vector<write::WrittenFile>>(st);
    if (!written.ok()) {
      writer.Abort();
      abandon();
      return WithContext(written.status(), context);
    }
    rows_rewritten += kept;
    files_rewritten += static_cast<int64_t>(group.size());
    for (auto& f : *written) {
      bytes_written += f.bytes;
      if (f.footer != nullptr) table->lake->footers.Put(f.key, f.footer);
      change.added_sequence_numbers.push_back(seq);
      change.added.push_back(std::move(f));
    }
    for (auto& f : group) change.removed.push_back(std::move(f));
    if (options.progress) {
      options.progress("rewrote " + PartitionName(layout, partition) + ": " +
                       std::to_string(group.size()) + " files -> " +
                       std::to_string(written->size()) + ", " + std::to_string(matched) +
                       " rows deleted");
    }
  }
  // Matches only in files this version does not list: another writer's
  // newer commit; the caller plans again on the newest version.
  if (change.removed.empty()) {
    return Conflict(context + ": the matching rows are in files committed meanwhile");
  }
  change.operation = change.added.empty() ? "delete" : "overwrite";

  // The last-value index: the newest rows that stay, by the scan `latest`
  // falls back to (over the rows the predicate does not match).
  const auto* snapshot = table->metadata.CurrentSnapshot();
  const auto planned_snapshot = table->metadata.current_snapshot_id;
  if (auto uri = snapshot ? LviUri(*snapshot) : std::nullopt;
      uri && table->contract.time_column) {
    std::shared_ptr<arrow::RecordBatch> planned_index;
    if (auto read = ReadLvi(*table, *uri); read.ok()) planned_index = *read;
    auto fresh = LatestUnless(table, where);
    if (!fresh.ok()) {
      abandon();
      return WithContext(fresh.status(), context);
    }
    change.index_at = [planned_snapshot, planned_index,
                       fresh = *fresh](const TableState& base) {
      return IndexAfterDelete(base, planned_snapshot, planned_index, fresh);
    };
  } else {
    change.drop_index = true;
  }
  TIMELAKE_ASSIGN_OR_RAISE(table, CommitReplacement(table, change, options, context));
  report->rows_deleted += rows_deleted;
  report->files_removed += static_cast<int64_t>(change.removed.size());
  report->files_rewritten += files_rewritten;
  report->files_written += static_cast<int64_t>(change.added.size());
  report->rows_rewritten += rows_rewritten;
  report->bytes_written += bytes_written;
  report->partitions += static_cast<int64_t>(partitions.size());
  report->snapshot_id = table->metadata.current_snapshot_id;
  return table;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> RunDelete(
    std::shared_ptr<const TableState> table, const std::string& where,
    const StepOptions& options, DeleteReport* report) {
  arrow::Status last;
  for (int attempt = 0; attempt < kDeleteAttempts; ++attempt) {
    if (attempt > 0) {
      TIMELAKE_ASSIGN_OR_RAISE(table, LoadTableState(table->lake, table->name));
    }
    auto done = DeleteOnce(table, where, options, report);
    if (done.ok() || KindOf(done.status()) != ErrorKind::kConflict) return done;
    last = done.status();
  }
  return last;
}

}  // namespace timelake::internal
