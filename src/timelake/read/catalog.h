// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// What DataFusion asks the engine while it plans a query: which namespaces
// and tables exist, a table's schema, and which data files a scan reads. The
// answers come from the newest committed version of each table, so every
// query sees every commit made before it started.

#ifndef TIMELAKE_READ_CATALOG_H_
#define TIMELAKE_READ_CATALOG_H_

#include <memory>
#include <string>
#include <vector>

#include "timelake/format/manifest.h"
#include "timelake/table/internal.h"
#include "timelake_platform.h"

namespace timelake::read {

// A live data file of a table version.
struct LiveFile {
  std::string key;                         // relative to the warehouse root
  std::optional<int64_t> sequence_number;  // inherited from the manifest when unset
  format::DataFile data_file;  // size, record count and the statistics for pruning
};

// The data files of the table's current snapshot (none without one).
// Errors: kCorrupt (manifests that do not parse), kStorage.
arrow::Result<std::vector<LiveFile>> ListLiveFiles(const internal::TableState& table);

// Callbacks for tl_session_new over `lake`. The returned struct owns a
// context that its release callback frees.
TlCatalogCallbacks MakeCatalogCallbacks(std::shared_ptr<internal::LakeState> lake);

}  // namespace timelake::read

#endif  // TIMELAKE_READ_CATALOG_H_
