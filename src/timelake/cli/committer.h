// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The chunked committer that `append` and `demo` share, and the summary line
// they print.

#ifndef TIMELAKE_CLI_COMMITTER_H_
#define TIMELAKE_CLI_COMMITTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/status.h>

#include "timelake/timelake.h"

namespace timelake::cli {

// Appends record batches to a table in commits of `commit_rows` rows (the last
// one fewer): `append --commit-rows` and `demo`, where a large import becomes
// a bounded number of commits, each visible at once, and memory stays
// bounded by one commit's worth of rows. (An import that must be
// all-or-nothing streams into one Table::Append of a reader instead.) Batches are aligned
// to the table schema as they arrive, so a bad batch fails before anything of it is
// written.
//
// With a batch id, commit k (from 1) is tagged "<id>" for k = 1 and "<id>#k"
// after: re-running the same import after a failure skips the commits that
// made it (the library reports them as duplicates) and resumes with the rest.
// Not thread-safe.
class BatchCommitter {
 public:
  struct Totals {
    int64_t input_rows = 0;           // rows given to Add
    int64_t rows = 0;                 // rows committed (after dedup within each commit)
    int64_t files = 0;                // data files written
    int64_t bytes = 0;                // bytes of data files written
    int64_t commits = 0;              // commits made
    int64_t duplicate_commits = 0;    // commits skipped: their batch id was seen
    int64_t skipped_rows = 0;         // input rows of the skipped commits
    int64_t duplicates_replaced = 0;  // rows a later row of the same key replaced
    int64_t compactions = 0;          // partitions compacted by inline maintenance
  };

  BatchCommitter(Table table, int64_t commit_rows, std::optional<std::string> batch_id);

  // Aligns `batch` to the table schema and commits once enough rows wait.
  // Errors: those of AlignBatch and Table::Append.
  arrow::Status Add(const std::shared_ptr<arrow::RecordBatch>& batch);
  // Commits the rows still waiting, if any, and waits for the inline
  // maintenance the commits left running in the background (counted in the
  // totals; a failure of it is a warning): call it once at the end of the
  // input.
  arrow::Status Flush();

  // The table as of the last commit.
  const Table& table() const { return table_; }
  // DedupKeyOf(table()).
  const std::string& dedup_key() const { return dedup_key_; }
  const Totals& totals() const { return totals_; }
  // Rows added and not committed yet.
  int64_t pending_rows() const { return pending_rows_; }
  // Input rows of the commits made, or skipped as made by an earlier run:
  // the first committed_input_rows() rows added are in the table.
  int64_t committed_input_rows() const { return committed_input_rows_; }
  // Inline maintenance after each commit: nullopt follows the table.
  void set_auto_maintain(std::optional<bool> on) { auto_maintain_ = on; }
  void set_refresh_rollups(RollupRefresh which) { refresh_rollups_ = which; }

 private:
  // With a batch id, an import that fits in one commit is tagged with the id
  // itself; otherwise every commit is tagged "<id>#<first row>-<end row>", so
  // a re-run with another --commit-rows never mistakes a partial commit for
  // a different range (it re-appends instead of skipping rows).
  arrow::Status Commit(bool end_of_input);

  Table table_;
  std::shared_ptr<arrow::Schema> schema_;
  int64_t commit_rows_;
  std::optional<std::string> batch_id_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending_;
  int64_t committed_input_rows_ = 0;  // input rows of the commits made
  int64_t pending_rows_ = 0;
  std::optional<bool> auto_maintain_;
  RollupRefresh refresh_rollups_ = RollupRefresh::kDue;
  std::string dedup_key_;
  Totals totals_;
};

// What makes two rows of `table` duplicates, e.g. "(sensor, ts)"; empty when
// the table keeps every row.
std::string DedupKeyOf(const Table& table);

// Adds what one Table::Append of `given` input rows did to `totals`, and
// warns on stderr when the inline maintenance after it failed (the rows stay
// committed).
void AddAppend(const AppendResult& result, int64_t given, BatchCommitter::Totals* totals);

// Prints the warning of inline maintenance that failed after an append.
void WarnMaintenance(std::string_view error);

// "<verb> 864,000 rows<source> in 1 commit: 1 data file, 5.2 MiB, 2.88 s, 300k
// rows/s", where `source` is e.g. " from 3 files" or empty; when fewer rows
// were committed than given, why: "(4 given; 2 duplicates of (sensor, ts)
// replaced; skipped 1 batch already committed)". `dedup_key` is
// DedupKeyOf the table.
std::string DescribeTotals(std::string_view verb, std::string_view source,
                           const BatchCommitter::Totals& totals, double seconds,
                           std::string_view dedup_key = {});

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_COMMITTER_H_
