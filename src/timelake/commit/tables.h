// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Creating and dropping a table: the first version (put-if-absent of
// v1.metadata.json) and the deletion of every object under the table's
// prefix. Lake::CreateTable and Lake::DropTable are thin handles over them;
// rollups create and drop their tables through them too.

#ifndef TIMELAKE_COMMIT_TABLES_H_
#define TIMELAKE_COMMIT_TABLES_H_

#include <map>
#include <memory>
#include <string>

#include <arrow/type.h>

#include "timelake/state/state.h"
#include "timelake/timelake.h"

namespace timelake::commit {

// Creates table `name` from `schema` and `options` (contract properties
// validated, schema normalized; `ingest_column` is the insertion-time column
// a time-series table gets, empty for none; `managed` are properties only
// Timelake sets, such as a rollup's definition, stored as given) and
// returns its first version.
// Errors: kAlreadyExists (also when another writer created it at the same
// time), kInvalid (options, schema), kStorage.
arrow::Result<std::shared_ptr<const internal::TableState>> CreateTable(
    std::shared_ptr<internal::LakeState> lake, const TableName& name,
    const arrow::Schema& schema, const TableOptions& options,
    const std::string& ingest_column,
    const std::map<std::string, std::string>& managed = {});

// Deletes every object of table `name`: the metadata first, so that a crash
// part-way leaves no half-table behind, only unreferenced data files.
// Errors: kNotFound, kStorage.
arrow::Status DropTable(const std::shared_ptr<internal::LakeState>& lake,
                        const TableName& name);

}  // namespace timelake::commit

#endif  // TIMELAKE_COMMIT_TABLES_H_
