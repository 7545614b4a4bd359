// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <cstdlib>
#include <future>

#include <arrow/memory_pool.h>

#include "timelake/commit/commit.h"
#include "timelake/commit/tables.h"
#include "timelake/format/schema.h"
#include "timelake/maintain/maintain.h"
#include "timelake/rollup/rollup.h"
#include "timelake/state/state.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"
#include "timelake/versions/versions.h"
#include "timelake/write/align.h"

namespace timelake {

arrow::Result<Lake> Lake::Open(std::string_view url,
                               const std::map<std::string, std::string>& options) {
  TIMELAKE_RETURN_NOT_OK(internal::EnsureCompute());
  auto state = std::make_shared<internal::LakeState>();
  TIMELAKE_ASSIGN_OR_RAISE(state->store, storage::Store::Open(url, options));
  state->clock = internal::DefaultClock();
  return Lake(std::move(state));
}

const std::string& Lake::url() const { return state_->store->root_url(); }

arrow::Result<std::vector<TableName>> Lake::ListTables(std::string_view ns) const {
  return internal::ListTablesOf(*state_, ns);
}

arrow::Result<std::vector<std::string>> Lake::ListNamespaces() const {
  return internal::ListNamespacesOf(*state_);
}

arrow::Result<Table> Lake::CreateTable(std::string_view name_text,
                                       const arrow::Schema& schema,
                                       const TableOptions& options) const {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(name_text));
  TIMELAKE_ASSIGN_OR_RAISE(
      auto state, commit::CreateTable(state_, name, schema, options, "_ingest_ts"));
  return Table(std::move(state));
}

arrow::Result<Table> Lake::LoadTable(std::string_view name_text) const {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(name_text));
  TIMELAKE_ASSIGN_OR_RAISE(auto state, internal::LoadTableState(state_, name));
  return Table(std::move(state));
}

arrow::Status Lake::DropTable(std::string_view name_text,
                              std::vector<std::string>* dropped_rollups) const {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(name_text));
  // A compaction still running after an append would otherwise write into,
  // or commit to, the dropped table; its outcome no longer matters.
  (void)internal::WaitForMaintenance(state_, name);
  return rollup::DropTable(state_, name, dropped_rollups);
}

void Flush() { versions::WaitForBackgroundWrites(); }

std::string PreferJemallocPool() {
  // Arrow reads the variable at its pool's first use; jemalloc's absence
  // leaves its own default (with a warning of Arrow's on stderr), so ask
  // only when it is there.
  const auto names = arrow::SupportedMemoryBackendNames();
  if (std::getenv("ARROW_DEFAULT_MEMORY_POOL") == nullptr &&
      std::find(names.begin(), names.end(), "jemalloc") != names.end()) {
    setenv("ARROW_DEFAULT_MEMORY_POOL", "jemalloc", /*overwrite=*/0);
  }
  return arrow::default_memory_pool()->backend_name();
}

}  // namespace timelake
