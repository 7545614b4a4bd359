// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The state behind the public handles (pimpl).

#ifndef TIMELAKE_TABLE_INTERNAL_H_
#define TIMELAKE_TABLE_INTERNAL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "timelake/format/table_metadata.h"
#include "timelake/storage/store.h"
#include "timelake/table/contract.h"
#include "timelake/timelake.h"
#include "timelake/util/clock.h"

namespace timelake::internal {

struct LakeState {
  std::shared_ptr<storage::Store> store;
  std::shared_ptr<Clock> clock;
};

struct TableState {
  explicit TableState(TableName table_name) : name(std::move(table_name)) {}

  std::shared_ptr<LakeState> lake;
  TableName name;
  std::string table_key;  // "ns/table", relative to the warehouse root
  int64_t version = 0;
  std::string metadata_key;
  format::TableMetadata metadata;
  std::shared_ptr<arrow::Schema> schema;
  Contract contract;
};

// "ns/table".
inline std::string TableKey(const TableName& name) {
  return name.ns() + "/" + name.name();
}

// Builds the state of a loaded version (schema conversion, contract parsing,
// format version check). Errors: kCorrupt, kUnsupported.
arrow::Result<std::shared_ptr<const TableState>> MakeTableState(
    std::shared_ptr<LakeState> lake, const TableName& name, int64_t version,
    std::string metadata_key, format::TableMetadata metadata);

// Tables of `ns` (all namespaces when empty), sorted; namespaces with tables.
arrow::Result<std::vector<TableName>> ListTablesOf(const LakeState& lake,
                                                   std::string_view ns);
arrow::Result<std::vector<std::string>> ListNamespacesOf(const LakeState& lake);

// Loads the newest version of a table.
arrow::Result<std::shared_ptr<const TableState>> LoadTableState(
    std::shared_ptr<LakeState> lake, const TableName& name);

}  // namespace timelake::internal

#endif  // TIMELAKE_TABLE_INTERNAL_H_
