// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The last-value index (SPEC §4.7): per snapshot, one small plain Parquet
// file `metadata/lvi-<snapshot-id>-<uuid>.parquet` with the table's columns
// and the newest row of every series, sorted by the series key. Its URI is
// the snapshot summary's `timelake.last-value-index`. The layout is Timelake
// 0.7's, so either implementation answers `latest` from the other's index.

#ifndef TIMELAKE_WRITE_LVI_H_
#define TIMELAKE_WRITE_LVI_H_

#include <memory>
#include <optional>
#include <string>

#include <arrow/record_batch.h>

#include "timelake/format/table_metadata.h"
#include "timelake/settings/contract.h"
#include "timelake/storage/store.h"

namespace timelake::internal {

inline constexpr char kLastValueIndexKey[] = "timelake.last-value-index";

// The index URI of a snapshot, if it has one.
std::optional<std::string> LviUri(const format::Snapshot& snapshot);

// The index after an append: the newest row per series of the previous index
// (may be null) and `added` (the appended rows' newest rows, may be null), by
// the tie rule; the appended rows come later, so they win full ties. nullptr
// when both are empty.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> MergeLvi(
    const std::shared_ptr<arrow::RecordBatch>& previous,
    const std::shared_ptr<arrow::RecordBatch>& added, const Contract& contract,
    const arrow::Schema& table_schema);

// Writes `index` for snapshot `snapshot_id` of the table at `table_key`;
// returns the object key. Errors: kStorage.
arrow::Result<std::string> WriteLvi(const storage::Store& store,
                                    const std::string& table_key, int64_t snapshot_id,
                                    const arrow::RecordBatch& index,
                                    const std::string& uuid);

}  // namespace timelake::internal

#endif  // TIMELAKE_WRITE_LVI_H_
