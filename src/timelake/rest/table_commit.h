// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// updateTable of the REST catalog as a commit::Change: a client (Spark,
// PyIceberg, DuckDB) wrote its data files, manifests and manifest list and
// sends requirements and updates; this change checks the requirements on
// the version it builds on and applies the updates to it, and commit::Commit
// puts the result with our put-if-absent protocol, reloading and checking
// again after a lost race (another writer, e.g. our CLI appending directly,
// committed first). A requirement that no longer holds is kConflict, which
// the server answers 409 CommitFailedException: the client refreshes,
// rebases its own snapshot and retries, as Iceberg clients do.
//
// Beyond the client's requirements, a new snapshot made current must have
// the current snapshot as its parent and a sequence number above the
// table's (kConflict otherwise), so a client that sent no requirement
// cannot drop another writer's commit. A client's `timelake.last-value-index`
// summary key is dropped: the index is ours. The new snapshot has none
// unless the parent has one and the appended rows are few enough to index
// here (kMaxIndexedRows); then it gets the parent's index merged with the
// newest rows of the data files it added, so `latest` stays one read.

#ifndef TIMELAKE_REST_TABLE_COMMIT_H_
#define TIMELAKE_REST_TABLE_COMMIT_H_

#include <optional>
#include <string>

#include "timelake/commit/commit.h"
#include "timelake/rest/requests.h"

namespace timelake::rest {

// Rows a foreign append may add for the server to extend the last-value
// index (it reads them once); beyond, the snapshot goes without one and
// `latest` scans until maintenance or an upgrade writes one.
inline constexpr int64_t kMaxIndexedRows = 5'000'000;

class TableCommitChange : public commit::Change {
 public:
  TableCommitChange(const CommitTableRequest& request, std::string context)
      : request_(request), context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, commit::Attempt* attempt) override;

  bool Landed(const internal::TableState& base) const override;

 private:
  arrow::Status CheckRequirements(const internal::TableState& base) const;

  const CommitTableRequest& request_;
  const std::string context_;
};

}  // namespace timelake::rest

#endif  // TIMELAKE_REST_TABLE_COMMIT_H_
