// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The engine's side of a SQL session (Session, in include/timelake/timelake.h,
// is its public handle): besides the queries a user sends, the queries the
// engine runs itself: the merge of a pinned set of files that compaction and
// deletes read through DataFusion, and the counts and newest rows a delete
// needs.

#ifndef TIMELAKE_READ_SESSION_H_
#define TIMELAKE_READ_SESSION_H_

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/record_batch.h>

#include "timelake/format/manifest.h"
#include "timelake/read/catalog.h"
#include "timelake/state/state.h"
#include "timelake/timelake.h"
#include "timelake_platform.h"

namespace timelake::internal {

// What a Session holds: the lake, its settings, the scans its queries
// planned, and the DataFusion session (started by the first query).
struct SessionState {
  std::shared_ptr<LakeState> lake;
  SessionSettings settings;
  std::shared_ptr<read::ScanLog> scans = std::make_shared<read::ScanLog>();
  std::shared_ptr<read::StatementVersions> statement =
      std::make_shared<read::StatementVersions>();
  TlSession* session = nullptr;
  // `session` once it is fully set up, for Interrupt(), which may read it
  // from a signal handler or another thread while EnsureStarted writes.
  std::atomic<TlSession*> started{nullptr};
  static_assert(std::atomic<TlSession*>::is_always_lock_free,
                "Session::Interrupt must be async-signal-safe");

  ~SessionState() { tl_session_free(session); }
};

// Reads `files` of `table` as one stream in the table's schema, merged in
// (series…, time, insertion, commit) order; with `dedup`, one row per
// (series…, time) by the tie rule. Tables without a time column: in no
// particular order. Memory stays bounded by a few batches per file. With
// `drop_where` (a SQL predicate over the table's columns), the rows for which
// it is true are left out (a row for which it is NULL stays, as SQL's DELETE
// keeps it); with dedup, after the merge, so a dropped row's older
// duplicates go too.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> MergeFiles(
    std::shared_ptr<const TableState> table, std::vector<format::LiveFile> files,
    bool dedup, const std::string& drop_where = {});

// The rows of `files`, merged as MergeFiles merges them, for which the SQL
// predicate `where` is true, and with `with_total` all their rows (one pass
// over them). Errors: kInvalid (a predicate DataFusion cannot plan), and
// those of reading the files.
struct PinnedCount {
  int64_t matching = 0;
  std::optional<int64_t> total;
};
arrow::Result<PinnedCount> CountPinned(std::shared_ptr<const TableState> table,
                                       std::vector<format::LiveFile> files, bool dedup,
                                       const std::string& where, bool with_total);

// The rows of `table` as queries see it (newest version, dedup on read) for
// which `where` is true, and the keys of the data files left after pruning
// by partition values and column bounds: only they can hold such rows.
struct MatchCount {
  int64_t rows = 0;
  std::vector<std::string> files;
};
arrow::Result<MatchCount> CountMatches(std::shared_ptr<LakeState> lake,
                                       const TableName& table, const std::string& where);

// The query `Session::Latest` falls back to when no last-value index
// answers: the newest row of every series of `table` by the tie rule's first
// two keys (time, then insertion time), in series order, with an extra
// row-number column kLatestRowNumber last (none without a series key). With `unless`,
// over the rows for which that predicate is not true.
inline constexpr char kLatestRowNumber[] = "__timelake_rn";
std::string LatestSql(const TableState& table, const std::string& unless = {});

// The index a table would have after the rows for which `unless` is true
// were deleted: LatestSql run over the newest version, aligned to the table
// schema; nullptr when no row is left. Errors: those of the query.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> LatestUnless(
    std::shared_ptr<const TableState> table, const std::string& unless);

// Runs `sql` on a session of its own in which the table of `version` reads
// as that version (its current snapshot), not the newest, on every core,
// without routing to rollups. Errors: those of the query.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> QueryAt(
    std::shared_ptr<const TableState> version, const std::string& sql,
    const std::string& context);

// tl_session_describe_rollup on a session of its own: the shape of a
// rollup's SELECT as JSON. Errors: kInvalid naming what cannot be rolled up.
arrow::Result<std::string> DescribeRollup(std::shared_ptr<LakeState> lake,
                                          const std::string& select);

}  // namespace timelake::internal

#endif  // TIMELAKE_READ_SESSION_H_
