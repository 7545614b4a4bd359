// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/committer.h"

#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "timelake/cli/output.h"

namespace timelake::cli {

BatchCommitter::BatchCommitter(Table table, int64_t commit_rows,
                               std::optional<std::string> batch_id)
    : table_(std::move(table)),
      schema_(table_.schema()),
      commit_rows_(commit_rows),
      batch_id_(std::move(batch_id)),
      dedup_key_(DedupKeyOf(table_)) {}

std::string DedupKeyOf(const Table& table) {
  const TableInfo info = table.Info();
  if (!info.dedup || !info.time_column.has_value()) return "";
  std::vector<std::string> key = info.series_key;
  key.push_back(*info.time_column);
  return fmt::format("({})", fmt::join(key, ", "));
}

arrow::Status BatchCommitter::Add(const std::shared_ptr<arrow::RecordBatch>& batch) {
  if (batch->num_rows() == 0) return arrow::Status::OK();
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::RecordBatch> aligned,
                        AlignBatch(*batch, *schema_));
  totals_.input_rows += aligned->num_rows();
  // Batches are cut at commit boundaries (slices are zero-copy), so commits
  // hold exactly commit_rows rows whatever the reader's batch sizes: re-running
  // an import with a batch id then tags the same rows with the same ids.
  while (pending_rows_ + aligned->num_rows() >= commit_rows_) {
    const int64_t take = commit_rows_ - pending_rows_;
    pending_.push_back(aligned->Slice(0, take));
    pending_rows_ += take;
    ARROW_RETURN_NOT_OK(Commit(/*end_of_input=*/false));
    aligned = aligned->Slice(take);
  }
  if (aligned->num_rows() > 0) {
    pending_rows_ += aligned->num_rows();
    pending_.push_back(std::move(aligned));
  }
  return arrow::Status::OK();
}

arrow::Status BatchCommitter::Commit(bool end_of_input) {
  if (pending_.empty()) return arrow::Status::OK();
  AppendOptions options;
  options.auto_maintain = auto_maintain_;
  options.refresh_rollups = refresh_rollups_;
  const int64_t commit = totals_.commits + totals_.duplicate_commits + 1;
  if (batch_id_.has_value()) {
    const int64_t end_row = committed_input_rows_ + pending_rows_;
    options.batch_id =
        commit == 1 && end_of_input
            ? *batch_id_
            : fmt::format("{}#{}-{}", *batch_id_, committed_input_rows_, end_row);
  }
  ARROW_ASSIGN_OR_RAISE(auto appended, table_.Append(pending_, options));
  const int64_t given = pending_rows_;
  committed_input_rows_ += given;
  pending_.clear();
  pending_rows_ = 0;
  table_ = std::move(appended.first);
  AddAppend(appended.second, given, &totals_);
  return arrow::Status::OK();
}

arrow::Status BatchCommitter::Flush() {
  ARROW_RETURN_NOT_OK(Commit(/*end_of_input=*/true));
  auto finished = table_.WaitForMaintenance();
  if (!finished.ok()) {
    WarnMaintenance(finished.status().message());
    return arrow::Status::OK();
  }
  table_ = std::move(finished->first);
  totals_.compactions += finished->second.partitions_compacted;
  return arrow::Status::OK();
}

void WarnMaintenance(std::string_view error) {
  // The rows are committed; only the tidying after them failed.
  std::cerr << "timelake: warning: maintenance after the append failed (the rows are "
               "committed; `timelake maintain` retries it): "
            << error << std::endl;
}

void AddAppend(const AppendResult& result, int64_t given,
               BatchCommitter::Totals* totals) {
  if (result.duplicate_batch) {
    ++totals->duplicate_commits;
    totals->skipped_rows += given;
    return;
  }
  totals->duplicates_replaced += given - result.rows;
  ++totals->commits;
  totals->compactions += result.maintenance.partitions_compacted;
  if (!result.maintenance_error.empty()) WarnMaintenance(result.maintenance_error);
  for (const auto& r : result.rollups) {
    if (!r.maintenance_error.empty()) {
      std::cerr << "timelake: warning: compacting rollup " << r.rollup
                << " after its refresh failed (the refresh stands; `timelake maintain` "
                   "retries it): "
                << r.maintenance_error << std::endl;
    }
    if (r.error.empty()) continue;
    // Queries stay right (they read what the rollup lacks from raw data).
    std::cerr << "timelake: warning: refreshing rollup " << r.rollup
              << " after the append failed (the rows are committed; REFRESH MATERIALIZED "
                 "ROLLUP retries it): "
              << r.error << std::endl;
  }
  totals->rows += result.rows;
  totals->files += result.files;
  totals->bytes += result.bytes;
}

std::string DescribeTotals(std::string_view verb, std::string_view source,
                           const BatchCommitter::Totals& totals, double seconds,
                           std::string_view dedup_key) {
  const auto plural = [](int64_t n, std::string_view one, std::string_view many) {
    return fmt::format("{} {}", FormatInteger(n), n == 1 ? one : many);
  };
  std::string text =
      fmt::format("{} {}{} in {}: {}, {}, {}", verb, plural(totals.rows, "row", "rows"),
                  source, plural(totals.commits, "commit", "commits"),
                  plural(totals.files, "data file", "data files"),
                  FormatBytes(totals.bytes), FormatSeconds(seconds));
  if (seconds > 0 && totals.rows > 0) {
    text += fmt::format(", {} rows/s",
                        FormatCount(static_cast<double>(totals.rows) / seconds));
  }
  std::vector<std::string> why;
  if (totals.input_rows != totals.rows) {
    why.push_back(fmt::format("{} given", FormatInteger(totals.input_rows)));
  }
  if (totals.duplicates_replaced > 0) {
    why.push_back(
        dedup_key.empty()
            ? fmt::format("{} dropped as duplicates",
                          plural(totals.duplicates_replaced, "row", "rows"))
            : fmt::format("{} of {} replaced",
                          plural(totals.duplicates_replaced, "duplicate", "duplicates"),
                          dedup_key));
  }
  // Also when nothing was read: a one-commit import whose batch id is in the
  // table already is not read again.
  if (totals.duplicate_commits > 0) {
    why.push_back(fmt::format("skipped {} already committed",
                              plural(totals.duplicate_commits, "batch", "batches")));
  }
  if (!why.empty()) text += fmt::format(" ({})", fmt::join(why, "; "));
  return text;
}

}  // namespace timelake::cli
