// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The engine's side of a SQL session (Session, in include/timelake/timelake.h,
// is its public handle): besides the queries a user sends, a merge of a
// pinned set of files that compaction reads through DataFusion.

#ifndef TIMELAKE_READ_SESSION_H_
#define TIMELAKE_READ_SESSION_H_

#include <memory>
#include <vector>

#include <arrow/record_batch.h>

#include "timelake/format/manifest.h"
#include "timelake/state/state.h"

namespace timelake::internal {

// Reads `files` of `table` as one stream in the table's schema, merged in
// (series…, time, insertion, commit) order; with `dedup`, one row per
// (series…, time) by the tie rule. Tables without a time column: in no
// particular order. Memory stays bounded by a few batches per file.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> MergeFiles(
    std::shared_ptr<const TableState> table, std::vector<format::LiveFile> files,
    bool dedup);

}  // namespace timelake::internal

#endif  // TIMELAKE_READ_SESSION_H_
