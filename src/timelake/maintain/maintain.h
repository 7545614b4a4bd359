// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Maintenance kept by the writer (SPEC §7): what to rewrite (planning, pure
// functions of the live files and the table's rules: plan.cc), and the steps
// (steps.cc): the rewrite itself (a k-way merge through DataFusion into
// SortedFileWriter, or for a small rewrite a sort in memory: whole.cc), the
// commits that replace files (commit::Commit), snapshot expiry and the
// orphan sweep.

#ifndef TIMELAKE_MAINTAIN_MAINTAIN_H_
#define TIMELAKE_MAINTAIN_MAINTAIN_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <arrow/record_batch.h>

#include "timelake/format/manifest.h"
#include "timelake/state/state.h"
#include "timelake/write/data_writer.h"

namespace timelake::internal {

// --- Rules ---

// The table's maintenance rules, from its settings.
struct MaintainRules {
  int64_t target_bytes = 128 << 20;
  int64_t min_files = 2;
  std::chrono::milliseconds cold_after{3'600'000};
  std::optional<std::chrono::milliseconds> retention;
  std::chrono::milliseconds snapshot_retention{7LL * 86'400'000};
  int64_t min_snapshots = 1;
  int64_t max_snapshots = 100;
  int64_t keep_snapshots_until_ms = 0;
  bool auto_maintain = true;
};
arrow::Result<MaintainRules> RulesOf(const TableState& table);

// The size tier of a file: n for sizes in [64 KiB x 4^n, 64 KiB x 4^(n+1)),
// n < 0 below 64 KiB (-9 for an empty file).
int Tier(int64_t bytes);
// Files of one tier merged at once. Eight files of one tier (sizes within 4x
// of each other) hold at least twice the tier's lower bound, so a merge
// that does not shrink them by half lifts its rows at least one tier: a row
// is then rewritten at most once per tier between its append's and 3/4 of
// the target size (4 times for appends of 1 MiB under the 128 MiB target),
// and about log8(partition size / append size) times in all (bytes
// rewritten per byte appended: 0.90 over the 44 appends of bench's 1,000
// hosts x 12 h). Merges that shrink more (duplicates dropped, tiny files
// whose footers were most of their bytes) may stay in their tier. A
// partition holds at most 7 small files per tier between appends. Fan-in 4
// would hold 3 per tier but rewrite each row about log4 times: twice the
// work for appends of one size.
inline constexpr size_t kTierFanIn = 8;

// The partition value of a live file (nullopt: unpartitioned).
std::optional<int32_t> PartitionValueOf(const format::LiveFile& file);

// A partition as its folder names it ("time_day=2026-04-01"), for messages.
std::string PartitionName(const write::Layout& layout, std::optional<int32_t> p);

// [start, end) of a partition in microseconds since the epoch.
std::pair<int64_t, int64_t> PartitionRange(int32_t value, Chunk chunk);

// One rewrite: input files of one partition.
struct Rewrite {
  std::optional<int32_t> partition;
  std::vector<format::LiveFile> inputs;
  // Some of the partition's files only (the merge budget split them): the
  // outputs are merged again by another pass.
  bool partial = false;
};

// A merge reads one row group of each input at a time; the inputs of one
// rewrite hold at most this many compressed bytes of row groups (about 2-3x
// that in memory) and at most kMergeMaxFiles files.
inline constexpr int64_t kMergeBudgetBytes = 256LL << 20;
inline constexpr size_t kMergeMaxFiles = 64;

// The in-memory path of a rewrite (whole.cc): inputs of at most
// kWholeMaxBytes (and target_bytes) compressed bytes and kWholeMaxRows rows
// (the two lowest tiers of appends of up to 100,000 rows: kTierFanIn
// appends, or kTierFanIn merges of them) are fetched whole and written into
// one file under `dir`, a column of a row group at a time, in the order a
// sort of their key columns gives (with the table's dedup). Over
// layout.row_group_rows rows, row groups hold whole series (ranges of the
// first series key column's values), each sorted alone, so that memory
// holds the inputs' bytes, the first series key column of every row while
// the ranges are found, and the keys and about two columns of a row group.
// Returns the file and sets `*rows_written`; nullopt when the rewrite is not
// for this path (a table without a time column or with nested columns,
// inputs over the limits, a file whose columns are not the table's current
// ones, written before a schema change, or, over one row group, inputs not
// in the write order or a series with more rows than a row group holds):
// nothing is written then. Errors: those of reading and writing; nothing is
// left.
inline constexpr int64_t kWholeMaxBytes = 64LL << 20;
inline constexpr int64_t kWholeMaxRows = 8LL << 20;
arrow::Result<std::optional<write::WrittenFile>> RewriteWhole(
    const TableState& table, const write::Layout& layout,
    const std::vector<format::LiveFile>& inputs, const std::string& dir,
    std::optional<int32_t> partition, int64_t target_bytes, int64_t* rows_written);

// Size-tiered compaction of `partitions`: in each that holds at least
// min_files small files (under 3/4 of the target), the files of each tier
// holding kTierFanIn of them, kTierFanIn to a rewrite in commit order (the
// rest wait for more).
std::vector<Rewrite> PlanTiered(const std::vector<format::LiveFile>& files,
                                const MaintainRules& rules,
                                const std::set<std::optional<int32_t>>& partitions);

// Whether a partition's files need a full rewrite: a file not sorted by the
// table's sort order, a file written before a column was renamed (Timelake
// 0.7 reads columns by name), more files than its bytes need, or (dedup
// tables) files that may share keys. `why`, when given, receives the reasons, e.g.
// "3 unsorted, 4 files where 1 suffices".
bool NeedsRewrite(const std::vector<const format::LiveFile*>& files,
                  const TableState& table, const MaintainRules& rules,
                  std::string* why = nullptr);

// Full rewrites of every partition that needs one (Table::Maintain), or of
// the cold ones only: those whose end lies compact_cold_after before the
// newest row of the table, newest first, at most `limit`. A partition's
// files are split into several rewrites when one would exceed the merge
// budget (smallest files first).
std::vector<Rewrite> PlanFull(const std::vector<format::LiveFile>& files,
                              const TableState& table, const MaintainRules& rules,
                              bool cold_only, size_t limit);

// The snapshots to expire now (ids), by the rules: never the current one,
// the newest min_snapshots, or any while now < keep_snapshots_until; the
// oldest beyond max_snapshots; otherwise those older than snapshot_retention.
std::vector<int64_t> PlanExpiry(const format::TableMetadata& metadata,
                                const MaintainRules& rules, int64_t now_ms);

// --- Steps (each commits on its own; `report` accumulates) ---

// A snapshot that replaces files, built and committed with retries.
struct Replacement {
  std::string operation;                  // "replace", "overwrite" or "delete"
  std::vector<format::LiveFile> removed;  // must all be live at commit time
  std::vector<write::WrittenFile> added;  // new data files
  int64_t added_sequence_number = 0;      // data sequence number of `added`
  // Per file of `added` when not empty (a delete rewrites files of several
  // commits in one): their data sequence numbers.
  std::vector<int64_t> added_sequence_numbers;
  // A data sequence number that stands for the new snapshot's own: rows
  // that are new (a rollup refresh's) rank above every older row.
  static constexpr int64_t kCommitSequence = -1;
  // Summary entries of the new snapshot besides the counters (a rollup
  // refresh records its source snapshot). A rollup table's
  // timelake.rollup-source-* entries are carried over from the parent when
  // not given here: compaction and deletes do not change what it reflects.
  std::map<std::string, std::string> summary;
  // The new last-value index (nullptr: keep the parent's).
  std::shared_ptr<arrow::RecordBatch> index;
  bool drop_index = false;  // the new snapshot has no index
  // When set, the index is decided per commit attempt, over the version it
  // is rebased onto (nullptr: none); it overrides `index` and `drop_index`.
  std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>(const TableState&)>
      index_at;
};

struct StepOptions {
  int max_commit_attempts = 20;
  std::function<void(const std::string&)> progress;
};

// Commits `change` over the newest version. Errors: kConflict when an input
// file is no longer live (nothing of this commit is left behind).
arrow::Result<std::shared_ptr<const TableState>> CommitReplacement(
    std::shared_ptr<const TableState> base, const Replacement& change,
    const StepOptions& options, const std::string& context);

arrow::Result<std::shared_ptr<const TableState>> RunRetention(
    std::shared_ptr<const TableState> table, const MaintainRules& rules,
    const StepOptions& options, MaintainReport* report);

arrow::Result<std::shared_ptr<const TableState>> RunRewrite(
    std::shared_ptr<const TableState> table, const Rewrite& rewrite,
    const MaintainRules& rules, const StepOptions& options, MaintainReport* report);

// Table::Maintain's compaction: passes of PlanFull over every partition and
// RunRewrite of each job, until no partition was split by the merge budget
// (each pass merges the previous one's outputs; a few passes for any size).
// `rewritten`, when set, is told each rewrite committed and the version it
// made.
arrow::Result<std::shared_ptr<const TableState>> RunCompaction(
    std::shared_ptr<const TableState> table, const MaintainRules& rules,
    const StepOptions& options, MaintainReport* report,
    const std::function<void(const Rewrite&, const TableState&)>& rewritten = {});

arrow::Result<std::shared_ptr<const TableState>> RunExpiry(
    std::shared_ptr<const TableState> table, const MaintainRules& rules, size_t min_batch,
    const StepOptions& options, MaintainReport* report);

arrow::Status SweepOrphans(const TableState& table, std::chrono::milliseconds age,
                           const StepOptions& options, MaintainReport* report);

// Table::Delete: deletes the rows of the newest version for which `where`
// is true (maintain/delete.cc). Plans again on the newest version when a
// concurrent rewrite replaced its files, a few times.
arrow::Result<std::shared_ptr<const TableState>> RunDelete(
    std::shared_ptr<const TableState> table, const std::string& where,
    const StepOptions& options, DeleteReport* report);

// Inline maintenance after an append that touched `partitions`.
arrow::Result<std::shared_ptr<const TableState>> MaintainAfterAppend(
    std::shared_ptr<const TableState> table,
    const std::set<std::optional<int32_t>>& partitions, int max_commit_attempts,
    MaintainReport* report);

// --- Inline maintenance in the background (background.cc) ---

// What background runs of a table did, taken by WaitForMaintenance.
struct MaintenanceOutcome {
  // The version the last run's last commit made (with the caller's lake);
  // null when it failed or committed nothing.
  std::shared_ptr<const TableState> table;
  MaintainReport report;  // summed over the runs taken
  arrow::Status error;    // the last failure, OK when none
};

// Adds the counts of `r` to `to` (durations too; the version is the newer).
void AddReport(MaintainReport* to, const MaintainReport& r);

// Runs MaintainAfterAppend over `table` on a background thread that Flush()
// waits for. A run of the same table still pending in the lake is waited
// for first, by the new run itself, and its outcome added to the new one's:
// a table has one run at a time, and no outcome is lost.
void StartMaintenance(std::shared_ptr<const TableState> table,
                      std::set<std::optional<int32_t>> partitions,
                      int max_commit_attempts);

// Hands the partitions an append of `table` (its newer version) touched to
// the table's background run, when one is running that has not yet done
// the work of `backlog` appends handed to it: the run maintains them once
// it is through with what it does, from the newest version, and reports it
// all. False (nothing handed) when none is running, it is done, or it has
// that many: the append then takes it and starts its own.
bool HandToMaintenance(const std::shared_ptr<const TableState>& table,
                       const std::set<std::optional<int32_t>>& partitions,
                       int64_t backlog);

// Waits for the background run of `name` in `lake`, if any, and takes its
// outcome (nullopt when none was pending).
std::optional<MaintenanceOutcome> WaitForMaintenance(
    const std::shared_ptr<LakeState>& lake, const TableName& name);

}  // namespace timelake::internal

#endif  // TIMELAKE_MAINTAIN_MAINTAIN_H_
