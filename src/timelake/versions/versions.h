// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Table versions and the commit protocol (SPEC §4.6). A table's versions are
// the files metadata/v<N>.metadata.json; the newest is found by listing the
// folder (version-hint.text is written for other engines, never trusted). A
// commit is a put-if-absent of the next version: exactly one writer wins each
// N, and the losers rebase on the winner and try N+1.

#ifndef TIMELAKE_VERSIONS_VERSIONS_H_
#define TIMELAKE_VERSIONS_VERSIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "timelake/format/table_metadata.h"
#include "timelake/storage/store.h"

namespace timelake::versions {

struct Version {
  int64_t number = 0;
  std::string key;  // e.g. "iot/readings/metadata/v3.metadata.json"
};

struct LoadedVersion {
  Version version;
  format::TableMetadata metadata;
};

// "iot/readings/metadata".
std::string MetadataPrefix(const std::string& table_key);
// "iot/readings/metadata/v<N>.metadata.json".
std::string VersionKey(const std::string& table_key, int64_t number);

// The version number of a metadata file name: "v12.metadata.json" -> 12, and
// the other engines' "00012-<uuid>.metadata.json" -> 12; nullopt otherwise.
std::optional<int64_t> VersionOfFileName(std::string_view file_name);

// The newest version, by listing metadata/. nullopt when there is none.
arrow::Result<std::optional<Version>> FindLatestVersion(const storage::Store& store,
                                                        const std::string& table_key);

// The kNotFound of table `table_name` at `table_key` when metadata/ holds no
// version. A folder that holds other things is named with (some of) what it
// holds: it is there, but it is no table. Costs one listing of the folder.
arrow::Status TableNotFound(const storage::Store& store, const std::string& table_key,
                            const std::string& table_name);

// Loads the newest version. Errors: kNotFound (`table_name` in the message),
// kCorrupt, kStorage.
arrow::Result<LoadedVersion> LoadLatest(const storage::Store& store,
                                        const std::string& table_key,
                                        const std::string& table_name);

// Writes `metadata` as version `number` with put-if-absent. Returns false
// when another writer already created that version (the caller rebases), or
// when `base_key`, the version it builds on (if given), no longer exists
// (maintenance deleted it as an old version: the caller's base is stale and
// its put is taken back);
// true also when the version already holds exactly this metadata (a retried
// put whose first attempt landed). Errors are storage failures: the commit
// may or may not have landed, so the caller must not delete its files.
arrow::Result<bool> TryCommit(const storage::Store& store, const std::string& table_key,
                              int64_t number, const format::TableMetadata& metadata,
                              std::string_view base_key = {});

// Sleeps before commit attempt `attempt` + 1 after a lost race: a random
// time up to 5 ms × 2^attempt (at most 1 s), so racing writers spread out.
void BackoffBeforeRetry(int attempt);

// Writes metadata/version-hint.text in the background (best effort).
void WriteVersionHintAsync(std::shared_ptr<storage::Store> store, std::string table_key,
                           int64_t number);

// Waits for all background writes of this process.
void WaitForBackgroundWrites();

// Runs `work` on a detached thread that WaitForBackgroundWrites() (and so
// Flush()) waits for.
void RunInBackground(std::function<void()> work);

}  // namespace timelake::versions

#endif  // TIMELAKE_VERSIONS_VERSIONS_H_
