// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The changes the public handles commit (api/): an append, a property
// change and a rollback. Maintenance's own changes (replace, expiry) are in
// maintain/.

#ifndef TIMELAKE_COMMIT_CHANGES_H_
#define TIMELAKE_COMMIT_CHANGES_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "timelake/commit/commit.h"
#include "timelake/format/manifest.h"
#include "timelake/storage/store.h"
#include "timelake/timelake.h"
#include "timelake/write/data_writer.h"

namespace timelake::commit {

// Whether a snapshot in the history of `m`'s current snapshot carries the
// append batch id `id`. Snapshots a rollback abandoned do not count: their
// rows are not in the table any more.
bool HasBatchId(const format::TableMetadata& m, const std::string& id);

// A rollback: the table's current snapshot becomes `snapshot_id`, an earlier
// (or abandoned) snapshot still in the metadata, over whatever version wins.
// Nothing to commit when it is current already.
class RollbackChange : public Change {
 public:
  RollbackChange(int64_t snapshot_id, std::string context)
      : snapshot_id_(snapshot_id), context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, Attempt* attempt) override;

 private:
  const int64_t snapshot_id_;
  const std::string context_;
};

// The columns of `table` whose name and type stay (schema evolution), each
// with why: the time column, the series key, the insertion-time column and
// the sources of the partition spec and of the sort order.
std::map<std::string, std::string> FixedColumns(const internal::TableState& table);

// Table property edits (a value, or nullopt to remove the key; keys in
// canonical form) made to `metadata`, whose contract must still parse.
// Errors: kInvalid naming the bad value.
arrow::Status EditProperties(
    const std::map<std::string, std::optional<std::string>>& edits,
    const std::string& context, format::TableMetadata* metadata);

// A schema change (Table::EvolveSchema): `changes` applied to the current
// schema of whatever version wins, as a new schema made current, with
// `properties` (EditProperties) in the same commit. Errors of Rebase:
// kInvalid when the changes do not apply to that schema or a property value
// is bad.
class SchemaEvolution : public Change {
 public:
  SchemaEvolution(std::vector<SchemaChange> changes,
                  std::map<std::string, std::optional<std::string>> properties,
                  std::string context)
      : changes_(std::move(changes)),
        properties_(std::move(properties)),
        context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, Attempt* attempt) override;

 private:
  const std::vector<SchemaChange> changes_;
  const std::map<std::string, std::optional<std::string>> properties_;
  const std::string context_;
};

// `metadata` with `schema` (an Iceberg schema object whose schema-id is
// new) added and made current; `last_column_id` is the highest field id.
void AddCurrentSchema(format::TableMetadata* metadata, nlohmann::json schema,
                      int last_column_id);

// A schema id no schema of `metadata` has.
int NextSchemaId(const format::TableMetadata& metadata);

// A change of table properties: the same edit over whatever version wins.
class PropertyChange : public Change {
 public:
  PropertyChange(std::map<std::string, std::optional<std::string>> changes,
                 std::string context)
      : changes_(std::move(changes)), context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, Attempt* attempt) override;

 private:
  const std::map<std::string, std::optional<std::string>> changes_;
  const std::string context_;
};

// An append: data files and one manifest written once (`own`: deleted by
// Abandon), then a snapshot over whatever version wins (its manifest list and
// last-value index written per attempt). `written`, `options` and `result`
// (the counts the snapshot summary records) are the caller's and outlive the
// Commit. After a rebase that finds `options.batch_id` already committed by
// another writer there is nothing to commit: duplicate() is then true.
class AppendChange : public Change {
 public:
  AppendChange(const storage::Store& store, const write::WriteOutput& written,
               std::vector<std::string> own, std::string manifest_key,
               std::string manifest_bytes, format::ManifestWriteOptions mopts,
               std::vector<format::ManifestEntry> entries, int64_t snapshot_id,
               const AppendOptions& options, const AppendResult& result,
               std::string context)
      : store_(store),
        written_(written),
        own_(std::move(own)),
        manifest_key_(std::move(manifest_key)),
        manifest_bytes_(std::move(manifest_bytes)),
        mopts_(std::move(mopts)),
        entries_(std::move(entries)),
        snapshot_id_(snapshot_id),
        options_(options),
        result_(result),
        context_(std::move(context)) {}

  bool Landed(const internal::TableState& base) const override {
    return base.metadata.FindSnapshot(snapshot_id_) != nullptr;
  }

  void Abandon() override;

  // Whether Rebase found the batch id committed by another writer.
  bool duplicate() const { return duplicate_; }
  int64_t sequence_number() const { return sequence_number_; }

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, Attempt* attempt) override;

 private:
  const storage::Store& store_;
  const write::WriteOutput& written_;
  const std::vector<std::string> own_;  // data files and the manifest
  const std::string manifest_key_;
  const std::string manifest_bytes_;
  const format::ManifestWriteOptions mopts_;
  const std::vector<format::ManifestEntry> entries_;
  const int64_t snapshot_id_;
  const AppendOptions& options_;
  const AppendResult& result_;
  const std::string context_;
  bool duplicate_ = false;
  int64_t sequence_number_ = 0;
};

}  // namespace timelake::commit

#endif  // TIMELAKE_COMMIT_CHANGES_H_
