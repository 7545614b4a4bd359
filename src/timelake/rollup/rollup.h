// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Materialized rollups kept by the writer (SPEC §8): creating one from its
// SELECT, refreshing it from what its raw table committed since it last
// looked, dropping it, and the refreshes due after an append.
//
// A rollup is an ordinary Timelake table (time column: the bucket, series
// key: the grouping columns, dedup on, no insertion-time column) whose
// definition lives in its properties in Timelake 0.7's layout
// (read/rollups.h). A refresh recomputes the rollup's buckets that hold
// rows of raw files committed or removed since the raw snapshot its last
// refresh read, and appends them: dedup on read keeps the newest row of a
// (groups, bucket), so the new rows replace the old. Buckets whose raw rows
// were removed (retention, deletes) are deleted from the rollup first, in
// a commit of their own that keeps recording the old source: in between,
// queries read those buckets from raw data. Each refresh's commit records
// the raw snapshot and sequence number it read
// (timelake.rollup-source-snapshot / -sequence), so a crash at any point
// leaves a rollup that is right about what it says it reflects, and the
// next refresh finishes the job. Two refreshes at once are safe: each
// writes rows correct for the snapshot it records.

#ifndef TIMELAKE_ROLLUP_ROLLUP_H_
#define TIMELAKE_ROLLUP_ROLLUP_H_

#include <memory>
#include <string>
#include <vector>

#include <arrow/record_batch.h>

#include "timelake/state/state.h"
#include "timelake/timelake.h"

namespace timelake::rollup {

// Runs a rollup statement (Session::SqlStream) and answers one row per
// rollup touched: {rollup: "ns.name", rows: rollup rows written}, as
// Timelake 0.7 answers them. Errors: kInvalid (the SELECT cannot be rolled
// up, naming the part; a bad option; a table that is not a rollup),
// kAlreadyExists (CREATE of an existing table), kNotFound (REFRESH or DROP
// of a missing rollup, CREATE over a missing table), those of the commits.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Execute(
    std::shared_ptr<internal::LakeState> lake, const RollupStatement& statement);

// Brings the rollup `name` up to date with its raw table (a no-op when it
// is). Errors: kInvalid (not a rollup), kNotFound (it, or its raw table,
// does not exist), kConflict, kStorage; nothing half-done is visible.
arrow::Result<RollupRefreshReport> Refresh(std::shared_ptr<internal::LakeState> lake,
                                           const TableName& name);

// The refreshes `which` asks for of `raw`'s rollups, narrowest bucket
// first, then of their own rollups. Never fails: each report says how its
// refresh went.
std::vector<RollupRefreshReport> RefreshRollupsOf(
    const std::shared_ptr<const internal::TableState>& raw, RollupRefresh which);

// Drops table `name` (Lake::DropTable): a rollup leaves its raw table's list
// first; a raw table's rollups are dropped with it (their names in
// `dropped_rollups`). Errors: kNotFound, kStorage.
arrow::Status DropTable(const std::shared_ptr<internal::LakeState>& lake,
                        const TableName& name, std::vector<std::string>* dropped_rollups);

// What TableInfo says of rollups: for a raw table its rollups and their
// freshness, for a rollup table its raw table.
void DescribeRollups(const internal::TableState& table, TableInfo* info);

}  // namespace timelake::rollup

#endif  // TIMELAKE_ROLLUP_ROLLUP_H_
