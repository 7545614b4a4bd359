// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The one commit transaction (SPEC §4.6). Every change to a table (an
// append, a property change, compaction's replace, retention's delete,
// snapshot expiry) is a `Change`: given the version it builds on, it makes
// the next table metadata, or says that it cannot be rebased onto that
// version (kConflict). `Commit` runs the optimistic loop: it puts the next
// version with put-if-absent, and after a lost race backs off, reloads the
// newest version, checks whether the change landed after all and rebases.
// The work after a commit is done once, here: `Publish` (the version hint,
// the table state and the lake's cache of it), then the head object.
//
// Objects a change writes fall in two groups. Those of one attempt (a
// manifest list, a last-value index: they name the base version's
// snapshot) go in `Attempt::written`, and are deleted when that attempt
// loses or fails. Those of the whole change (data files, a manifest that
// does not depend on the base) are the change's own: `Abandon` deletes them
// when nothing will commit. When the put itself fails, nothing is deleted:
// the put may have landed, and a landed commit must never point at deleted
// files.

#ifndef TIMELAKE_COMMIT_COMMIT_H_
#define TIMELAKE_COMMIT_COMMIT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelake/format/manifest.h"
#include "timelake/format/table_metadata.h"
#include "timelake/state/state.h"
#include "timelake/write/data_writer.h"

namespace timelake::commit {

// Attempts before a commit gives up with kConflict: with the backoff of
// versions::BackoffBeforeRetry (5 ms doubling, at most 1 s) that is about
// seven seconds of other writers winning every race, which means a writer is
// misconfigured (or the table is hot beyond what optimistic commits serve),
// not bad luck.
inline constexpr int kMaxCommitAttempts = 20;

// Entries of `metadata-log` kept in each version: enough for a reader that
// follows the log back (to an older metadata file) across a burst of
// commits, while the metadata file, rewritten by every commit, stays small.
inline constexpr int kMetadataLogLength = 20;

// One attempt of a change: its number (1 for the first) and the objects it
// wrote, deleted when it does not commit.
struct Attempt {
  int number = 1;
  std::vector<std::string> written;
};

class Change {
 public:
  virtual ~Change() = default;

  // The next metadata over `base` (without the metadata-log entry, which
  // Commit adds), or nullopt when there is nothing to commit over `base`
  // (then Commit returns `base` and abandons the change). Objects written
  // for this attempt go in `attempt->written`. Errors: kConflict when the
  // change cannot be rebased onto `base`; any other error ends the commit.
  virtual arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, Attempt* attempt) = 0;

  // Whether `base`, reloaded after a put that reported a lost race, already
  // holds this change (the put landed after all): Commit then returns it.
  virtual bool Landed(const internal::TableState& /*base*/) const { return false; }

  // Deletes the change's own objects: nothing of it will commit.
  virtual void Abandon() {}
};

struct CommitOptions {
  int max_attempts = kMaxCommitAttempts;
  // Prefixes error messages, e.g. "appending to iot.readings".
  std::string context;
};

struct CommitOutcome {
  // The version committed (or the newest, when the change had landed or had
  // nothing to commit), published to the lake's caches.
  std::shared_ptr<const internal::TableState> state;
  // The version the committed metadata was built on.
  std::shared_ptr<const internal::TableState> base;
  // False when nothing was committed: Rebase returned nullopt.
  bool committed = false;
  // True when a put that reported a lost race had landed (Change::Landed).
  bool landed_earlier = false;
  int attempts = 0;
  int conflicts_rebased = 0;
  std::chrono::microseconds duration{0};
};

// Commits `change` over `base`, reloading and rebasing after lost races.
// Errors: kConflict (the change cannot be rebased, or max_attempts lost
// races in a row; nothing of the change is left behind), the change's own
// errors, and kStorage from the put (the commit may or may not have landed;
// its files are kept).
arrow::Result<CommitOutcome> Commit(std::shared_ptr<const internal::TableState> base,
                                    Change* change, const CommitOptions& options);

// The work after version `version` of `name`, holding `metadata`, was put:
// the version hint (background) and the table state built from the metadata
// as stored, remembered in the lake's table cache. Create uses it for
// version 1 (an empty table needs no head); Commit for every other, followed
// by WriteHeadAsync.
arrow::Result<std::shared_ptr<const internal::TableState>> Publish(
    std::shared_ptr<internal::LakeState> lake, const TableName& name, int64_t version,
    const format::TableMetadata& metadata);

// The head of `state`'s version, built from its live files and last-value
// index and put to metadata/timelake-head. Within head-inline-bytes it
// inlines the index (while its file fits), then the footers the lake holds
// of the newest files. Nothing when timelake.head-format is not "arrow".
// Errors: those of listing the live files, reading the index and the put.
arrow::Status WriteHead(const internal::TableState& state);

// WriteHead in the background (Flush() waits), best effort: a failure
// leaves the previous head, which readers then find stale.
void WriteHeadAsync(std::shared_ptr<const internal::TableState> state);

// What the changes build snapshots from.

// Iceberg's partition type of `spec` for manifests.
std::vector<format::PartitionFieldType> PartitionTypeOf(
    const format::PartitionSpec& spec);
// The fields of `spec` as the JSON a manifest's metadata carries.
nlohmann::json SpecFieldsJson(const format::PartitionSpec& spec);
// The manifest entry (status ADDED) of a data file written for `base`.
format::ManifestEntry NewEntry(const write::WrittenFile& f,
                               const internal::TableState& base, int64_t snapshot_id);
// Manifest options (schema, spec) of `base`'s current schema and spec.
format::ManifestWriteOptions ManifestOptionsOf(const internal::TableState& base);

// Whether a manifest may list live files (counts unknown count as yes).
inline bool HasLiveFiles(const format::ManifestFile& m) {
  if (!m.added_files_count || !m.existing_files_count) return true;  // unknown
  return *m.added_files_count + *m.existing_files_count > 0;
}

// The manifests of `snapshot` that carry on into a child snapshot: those
// that may list live files (a manifest of only deleted entries, a
// compaction's record of what it replaced, belongs to its own snapshot).
// Errors: kCorrupt, kStorage.
arrow::Result<std::vector<format::ManifestFile>> LiveManifestsOf(
    const internal::TableState& table, const format::Snapshot& snapshot,
    const std::string& context);

// Manifest merging, as Iceberg's writers do it (their table properties, with
// our defaults): without it every append adds one manifest to the next
// snapshot's list, and a table of 10,000 appends is planned (by us without a
// current head object, by every other engine always, and by each commit's
// head write) from 10,000 manifests. We read a snapshot's manifests one after
// another, each a storage round trip, so our default count is lower than
// Iceberg's 100: a snapshot carries at most about kDefaultManifestMergeCount
// small manifests plus the full ones (target-size each), and a merge rewrites
// at most target-size bytes of manifests, once every that many commits.
inline constexpr int64_t kDefaultManifestMergeCount = 16;
inline constexpr int64_t kDefaultManifestTargetBytes = 8 << 20;
// `commit.manifest-merge.enabled` (default true),
// `commit.manifest.min-count-to-merge` (default kDefaultManifestMergeCount),
// `commit.manifest.target-size-bytes` (default kDefaultManifestTargetBytes).
inline constexpr char kManifestMergeEnabled[] = "commit.manifest-merge.enabled";
inline constexpr char kManifestMinCountToMerge[] = "commit.manifest.min-count-to-merge";
inline constexpr char kManifestTargetSizeBytes[] = "commit.manifest.target-size-bytes";

struct ManifestMergeRules {
  bool enabled = true;
  int64_t min_count = kDefaultManifestMergeCount;
  int64_t target_bytes = kDefaultManifestTargetBytes;
};
// The rules of a table from its properties; malformed values count as
// unset (they are Iceberg's keys, which other engines also read).
ManifestMergeRules ManifestMergeRulesOf(const format::TableMetadata& metadata);

// The manifests of a new snapshot `snapshot_id` (sequence number
// `sequence_number`) with the small ones merged: when the list holds more
// than `rules.min_count` manifests, the data manifests of the table's
// current partition spec below `rules.target_bytes` after the first
// `keep_first` (the snapshot's own new ones, which stay as written) are
// packed in list order into bins of at most target bytes, and every bin of
// two or more becomes one manifest of their live entries as EXISTING (with
// their snapshot ids and sequence numbers), written for this attempt
// (`attempt->written`). The list is returned unchanged otherwise. Errors:
// kCorrupt (a manifest that does not parse), kStorage, both with `context`.
arrow::Result<std::vector<format::ManifestFile>> MergeManifests(
    const internal::TableState& base, std::vector<format::ManifestFile> manifests,
    size_t keep_first, int64_t snapshot_id, int64_t sequence_number,
    const ManifestMergeRules& rules, Attempt* attempt, const std::string& context);

// A new manifest list key of the table for `snapshot_id`'s attempt
// `attempt`: "…/metadata/snap-<id>-<attempt>-<uuid>.avro".
std::string ManifestListKey(const std::string& table_key, int64_t snapshot_id,
                            int attempt, const std::string& uuid);

}  // namespace timelake::commit

#endif  // TIMELAKE_COMMIT_COMMIT_H_
