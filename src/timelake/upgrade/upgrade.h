// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Table::Upgrade (SPEC §9): brings a table to this build's format in ordinary
// commits, one per step (UpgradeStep in timelake.h), each through
// commit::Commit: protect the snapshots, record the format version, add the
// contract, build a missing last-value index, rewrite unsorted or small
// files (maintain/'s compaction), write the head.
//
// Every step is decided by what the newest version lacks, never by a record
// of earlier runs: a run that failed or was killed part-way leaves each
// commit it made (each a readable version) and the next run plans the rest.
// Everything that can refuse the upgrade (a time column that is not in the
// schema, a partitioning Timelake does not write, …) is checked before the
// first commit, so a refused upgrade writes nothing.

#ifndef TIMELAKE_UPGRADE_UPGRADE_H_
#define TIMELAKE_UPGRADE_UPGRADE_H_

#include <memory>

#include <arrow/record_batch.h>

#include "timelake/state/state.h"
#include "timelake/timelake.h"

namespace timelake::internal {

// Upgrades the newest version of `table`'s table (see Table::Upgrade).
// `report` receives the steps made (with options.dry_run, those it would
// make). Returns the version reached.
arrow::Result<std::shared_ptr<const TableState>> RunUpgrade(
    const std::shared_ptr<const TableState>& table, const UpgradeOptions& options,
    UpgradeReport* report);

// The last-value index of `table`'s current snapshot computed from its data
// files: the newest row of every series by the tie rule (time, insertion
// time, commit, row), from a merge of every live file. nullptr for a table
// without a time column or rows. Errors: those of reading the files.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ComputeLvi(
    const std::shared_ptr<const TableState>& table);

}  // namespace timelake::internal

#endif  // TIMELAKE_UPGRADE_UPGRADE_H_
