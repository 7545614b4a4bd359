// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <chrono>
#include <set>

#include "timelake/commit/changes.h"
#include "timelake/commit/commit.h"
#include "timelake/format/manifest.h"
#include "timelake/format/schema.h"
#include "timelake/maintain/maintain.h"
#include "timelake/read/rollups.h"
#include "timelake/rollup/rollup.h"
#include "timelake/settings.h"
#include "timelake/settings/contract.h"
#include "timelake/state/state.h"
#include "timelake/upgrade/upgrade.h"
#include "timelake/util/uuid.h"
#include "timelake/versions/versions.h"
#include "timelake/write/data_writer.h"
#include "timelake/write/lvi.h"

namespace timelake {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds Since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
}

arrow::Status WritableFormat(const internal::TableState& table) {
  return internal::CheckTableFormat(table, internal::FormatAccess::kWrite);
}

// Rows of a rollup table come from its refreshes only: rows written
// otherwise would be taken for what its raw table holds.
arrow::Status NotARollup(const internal::TableState& table) {
  auto it = table.metadata.properties.find(internal::property::kRollupSource);
  if (it == table.metadata.properties.end()) return arrow::Status::OK();
  return Invalid(table.name.ToString() + " is a rollup of " + it->second +
                 ": its rows come from refreshes (REFRESH MATERIALIZED ROLLUP " +
                 table.name.ToString() + "), not from appends or deletes");
}

// A rollup table's columns come from its definition; a raw table's columns
// that its rollups read keep their name and type, or REFRESH would fail
// (rename) or store other types (widen). Adding a column is always fine.
arrow::Status RollupsAllow(const internal::TableState& table,
                           const std::vector<SchemaChange>& changes) {
  auto source = table.metadata.properties.find(internal::property::kRollupSource);
  if (source != table.metadata.properties.end()) {
    return Invalid(table.name.ToString() + " is a rollup of " + source->second +
                   ": its columns come from its definition (drop it and create it "
                   "again to change them)");
  }
  std::map<std::string, std::string> read_by;  // raw column -> a rollup reading it
  for (const auto& name_text : read::RollupNamesOf(table.metadata)) {
    auto name = TableName::Parse(name_text);
    if (!name.ok()) continue;
    auto rollup = internal::LoadTableState(table.lake, *name);
    if (!rollup.ok()) continue;  // dropped: it reads nothing any more
    TIMELAKE_ASSIGN_OR_RAISE(auto def, read::RollupDefinitionOf(**rollup));
    if (!def) continue;
    for (const auto& g : def->groups) read_by.emplace(g, name_text);
    for (const auto& a : def->aggregates) {
      if (a.column) read_by.emplace(*a.column, name_text);
    }
  }
  std::map<std::string, std::string> original;  // name after renames -> before
  for (const auto& c : changes) {
    if (c.kind == SchemaChange::Kind::kAddColumn) continue;
    auto it = original.find(c.column);
    const std::string before = it == original.end() ? c.column : it->second;
    if (auto r = read_by.find(before); r != read_by.end()) {
      return Invalid("column " + c.column + " is read by the rollup " + r->second +
                     "; drop the rollup first to " +
                     (c.kind == SchemaChange::Kind::kRenameColumn ? "rename" : "widen") +
                     " it");
    }
    if (c.kind == SchemaChange::Kind::kRenameColumn) {
      if (it != original.end()) original.erase(it);
      original[c.new_name] = before;
    }
  }
  return arrow::Status::OK();
}

// Removes what an append wrote when it will not be committed.
void DeleteQuietly(const storage::Store& store, const std::vector<std::string>& keys) {
  for (const auto& k : keys) (void)store.Delete(k);
}

// Waits for the table's inline maintenance running in the background, if
// any: adds what it did to `report` (and its failure to `error`), and moves
// `table` to the version it made when that is newer.
void TakeBackground(std::shared_ptr<const internal::TableState>& table,
                    MaintainReport* report, std::string* error) {
  auto done = internal::WaitForMaintenance(table->lake, table->name);
  if (!done) return;
  internal::AddReport(report, done->report);
  if (!done->error.ok()) *error = done->error.message();
  if (done->table != nullptr && done->table->version > table->version) {
    table = std::move(done->table);
  }
}

// The handle a change that is not an append starts from, once the table's
// background maintenance has ended (its outcome is dropped: only appends
// and WaitForMaintenance report it).
std::shared_ptr<const internal::TableState> AfterBackground(
    std::shared_ptr<const internal::TableState> table) {
  MaintainReport ignored;
  std::string error;
  TakeBackground(table, &ignored, &error);
  return table;
}

}  // namespace

const TableName& Table::name() const { return state_->name; }
std::string Table::location() const { return internal::LocationOf(*state_); }
int64_t Table::version() const { return state_->version; }
std::optional<int64_t> Table::current_snapshot_id() const {
  return state_->metadata.current_snapshot_id;
}
std::shared_ptr<arrow::Schema> Table::schema() const { return state_->schema; }
const std::map<std::string, std::string>& Table::properties() const {
  return state_->metadata.properties;
}
std::optional<std::string> Table::time_column() const {
  return state_->contract.time_column;
}
std::vector<std::string> Table::series_key() const { return state_->contract.series_key; }

TableInfo Table::Info() const {
  TableInfo info;
  const auto& m = state_->metadata;
  info.name = state_->name.ToString();
  info.location = internal::LocationOf(*state_);
  info.version = state_->version;
  info.snapshot_id = m.current_snapshot_id;
  info.time_column = state_->contract.time_column;
  info.series_key = state_->contract.series_key;
  info.chunk =
      state_->contract.time_column ? std::string(ChunkName(state_->contract.chunk)) : "";
  info.dedup = state_->contract.dedup;
  if (const auto* s = m.CurrentSnapshot()) {
    info.rows = format::SummaryInt(*s, format::summary::kTotalRecords);
    info.files = format::SummaryInt(*s, format::summary::kTotalDataFiles);
    info.bytes = format::SummaryInt(*s, format::summary::kTotalFilesSize);
  }
  info.snapshots = static_cast<int64_t>(m.snapshots.size());
  info.properties = m.properties;
  rollup::DescribeRollups(*state_, &info);
  return info;
}

std::vector<SnapshotInfo> Table::Snapshots() const {
  return internal::SnapshotsOf(state_->metadata);
}

arrow::Result<Table> Table::Rollback(int64_t snapshot_id) const {
  const std::string context = "rolling " + state_->name.ToString() +
                              " back to snapshot " + std::to_string(snapshot_id);
  commit::RollbackChange change(snapshot_id, context);
  commit::CommitOptions copts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome,
                           commit::Commit(AfterBackground(state_), &change, copts));
  return Table(std::move(outcome.state));
}

SchemaChange SchemaChange::AddColumn(std::string column,
                                     std::shared_ptr<arrow::DataType> type) {
  SchemaChange c;
  c.kind = Kind::kAddColumn;
  c.column = std::move(column);
  c.type = std::move(type);
  return c;
}

SchemaChange SchemaChange::RenameColumn(std::string column, std::string new_name) {
  SchemaChange c;
  c.kind = Kind::kRenameColumn;
  c.column = std::move(column);
  c.new_name = std::move(new_name);
  return c;
}

SchemaChange SchemaChange::WidenColumn(std::string column,
                                       std::shared_ptr<arrow::DataType> type) {
  SchemaChange c;
  c.kind = Kind::kWidenColumn;
  c.column = std::move(column);
  c.type = std::move(type);
  return c;
}

namespace {

// `changes` with each key in canonical form (AlterableKey).
arrow::Result<std::map<std::string, std::optional<std::string>>> CanonicalEdits(
    const std::map<std::string, std::optional<std::string>>& changes,
    const std::string& context) {
  std::map<std::string, std::optional<std::string>> canonical;
  for (const auto& [key, value] : changes) {
    auto k = internal::AlterableKey(key);
    if (!k.ok()) return WithContext(k.status(), context);
    canonical[*k] = value;
  }
  return canonical;
}

}  // namespace

arrow::Result<Table> Table::EvolveSchema(
    const std::vector<SchemaChange>& changes,
    const std::map<std::string, std::optional<std::string>>& properties) const {
  const std::string context = "changing the schema of " + state_->name.ToString();
  if (changes.empty()) return Invalid(context + ": no change given");
  TIMELAKE_ASSIGN_OR_RAISE(auto edits, CanonicalEdits(properties, context));
  // Checked on this handle's version first, so that a bad change writes
  // nothing (the commit checks again on the version it lands on).
  int last_column_id = state_->metadata.last_column_id;
  auto checked = format::EvolveSchema(
      state_->metadata.CurrentSchema(), changes, commit::FixedColumns(*state_),
      commit::NextSchemaId(state_->metadata), &last_column_id);
  if (!checked.ok()) return WithContext(checked.status(), context);
  TIMELAKE_RETURN_NOT_OK(WithContext(WritableFormat(*state_), context));
  TIMELAKE_RETURN_NOT_OK(WithContext(RollupsAllow(*state_, changes), context));
  commit::SchemaEvolution change(changes, std::move(edits), context);
  commit::CommitOptions copts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome,
                           commit::Commit(AfterBackground(state_), &change, copts));
  return Table(std::move(outcome.state));
}

arrow::Result<std::pair<Table, UpgradeReport>> Table::Upgrade(
    const UpgradeOptions& options) const {
  UpgradeReport report;
  TIMELAKE_ASSIGN_OR_RAISE(
      auto table, internal::RunUpgrade(AfterBackground(state_), options, &report));
  return std::make_pair(Table(std::move(table)), std::move(report));
}

arrow::Result<Table> Table::Refresh() const {
  TIMELAKE_ASSIGN_OR_RAISE(auto state,
                           internal::LoadTableState(state_->lake, state_->name));
  return Table(std::move(state));
}

arrow::Result<Table> Table::SetProperties(
    const std::map<std::string, std::optional<std::string>>& changes) const {
  const std::string context = "altering " + state_->name.ToString();
  TIMELAKE_ASSIGN_OR_RAISE(auto canonical, CanonicalEdits(changes, context));
  commit::PropertyChange change(std::move(canonical), context);
  commit::CommitOptions copts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome,
                           commit::Commit(AfterBackground(state_), &change, copts));
  return Table(std::move(outcome.state));
}

namespace {

AppendResult DuplicateOf(const internal::TableState& newest, int64_t input_rows) {
  AppendResult dup;
  dup.duplicate_batch = true;
  dup.version = newest.version;
  dup.snapshot_id = newest.metadata.current_snapshot_id;
  dup.input_rows = input_rows;
  return dup;
}

// The version an append builds on: the handle's, or with a batch id the
// newest (so that a retry from a stale handle is still recognised). Sets
// `*duplicate` when that version holds the batch id already.
arrow::Result<std::shared_ptr<const internal::TableState>> AppendBase(
    const std::shared_ptr<const internal::TableState>& handle,
    const AppendOptions& options, const std::string& context, bool* duplicate) {
  *duplicate = false;
  std::shared_ptr<const internal::TableState> base = handle;
  if (options.batch_id) {
    if (options.batch_id->empty()) return Invalid(context + ": empty batch id");
    TIMELAKE_ASSIGN_OR_RAISE(base, internal::LoadTableState(handle->lake, handle->name));
    *duplicate = commit::HasBatchId(base->metadata, *options.batch_id);
  }
  if (!*duplicate) {
    // Refused before any file is written (the commit asks again).
    TIMELAKE_RETURN_NOT_OK(WithContext(WritableFormat(*base), context));
    TIMELAKE_RETURN_NOT_OK(WithContext(NotARollup(*base), context));
  }
  return base;
}

// A table version and what the append that led to it did.
using Committed = std::pair<std::shared_ptr<const internal::TableState>, AppendResult>;

// Commits the data files an append wrote (`written`, deleted again when
// nothing commits): one manifest, the optimistic commit, then inline
// maintenance. `now` names the manifest. Returns the version after it (the
// newest one when another writer committed the batch id first).

arrow::Result<Committed> CommitWritten(std::shared_ptr<const internal::TableState> base,
                                       const write::WriteOutput& written,
                                       const AppendOptions& options,
                                       internal::TimePoint now, Clock::time_point start,
                                       const std::string& context) {
  auto& lake = *base->lake;
  const auto& store = *lake.store;
  AppendResult result;
  result.version = base->version;
  result.snapshot_id = base->metadata.current_snapshot_id;
  result.input_rows = written.input_rows;
  result.rows = written.rows;
  if (written.files.empty()) return std::make_pair(base, result);

  std::vector<std::string> own;
  for (const auto& f : written.files) {
    own.push_back(f.key);
    if (f.footer != nullptr) lake.footers.Put(f.key, f.footer);
  }

  // One manifest with the new files; it does not depend on the base version
  // (sequence numbers are inherited from the manifest list), so it is written
  // once and reused by every commit attempt.
  const int64_t snapshot_id = internal::NewSnapshotId();
  std::vector<format::ManifestEntry> entries;
  std::set<std::optional<int32_t>> touched;
  for (const auto& f : written.files) {
    entries.push_back(commit::NewEntry(f, *base, snapshot_id));
    result.bytes += f.bytes;
    touched.insert(f.partition);
  }
  result.files = static_cast<int64_t>(written.files.size());
  // A streamed append may write several files of one partition.
  result.partitions = static_cast<int64_t>(touched.size());

  format::ManifestWriteOptions mopts = commit::ManifestOptionsOf(*base);
  auto manifest_bytes = format::WriteManifest(mopts, entries);
  if (!manifest_bytes.ok()) {
    DeleteQuietly(store, own);
    return WithContext(manifest_bytes.status(), context);
  }
  const std::string manifest_key = versions::MetadataPrefix(base->table_key) + "/" +
                                   internal::NewUuidV7(now) + "-m0.avro";
  if (auto st = store.Put(manifest_key, *manifest_bytes); !st.ok()) {
    DeleteQuietly(store, own);
    return WithContext(st, context);
  }
  own.push_back(manifest_key);
  lake.objects.Put(manifest_key, arrow::Buffer::FromString(*manifest_bytes));
  result.commit.write_duration = Since(start);

  commit::AppendChange change(store, written, std::move(own), manifest_key,
                              std::move(*manifest_bytes), std::move(mopts),
                              std::move(entries), snapshot_id, options, result, context);
  commit::CommitOptions copts;
  copts.max_attempts = options.max_commit_attempts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome, commit::Commit(base, &change, copts));
  result.commit.attempts = outcome.attempts;
  result.commit.conflicts_rebased = outcome.conflicts_rebased;
  result.commit.commit_duration = outcome.duration;
  if (change.duplicate()) {
    return std::make_pair(outcome.state, DuplicateOf(*outcome.state, result.input_rows));
  }
  result.snapshot_id = snapshot_id;
  result.version = outcome.state->version;
  if (outcome.landed_earlier) {
    // Our own commit is in the table although the put reported a lost race.
    result.sequence_number =
        outcome.state->metadata.FindSnapshot(snapshot_id)->sequence_number;
    return std::make_pair(outcome.state, result);
  }
  result.sequence_number = change.sequence_number();

  // Inline maintenance: its failure leaves the append as it is. The run an
  // earlier append left in the background overlapped this one. While it
  // runs, it takes this append's partitions too, up to a backlog; else it
  // is reported here, and the next run starts from the newer version.
  std::shared_ptr<const internal::TableState> out = outcome.state;
  auto auto_maintain =
      out->contract.time_column
          ? settings::Resolver(nullptr, nullptr, &out->metadata.properties)
                .GetBool("auto-maintain")
          : arrow::Result<bool>(false);
  const bool maintain = options.auto_maintain.value_or(auto_maintain.ValueOr(true));
  if (maintain && options.maintain_in_background &&
      internal::HandToMaintenance(out, touched, options.maintenance_backlog)) {
    result.rollups = rollup::RefreshRollupsOf(out, options.refresh_rollups);
    result.maintenance_pending = true;
    return std::make_pair(std::move(out), result);
  }
  TakeBackground(out, &result.maintenance, &result.maintenance_error);
  if (maintain) {
    const int attempts = std::max(1, options.max_commit_attempts);
    if (options.maintain_in_background) {
      // The rollups first, from this version: the refresh reads what the
      // append added whether or not a compaction has rewritten it since.
      result.rollups = rollup::RefreshRollupsOf(out, options.refresh_rollups);
      internal::StartMaintenance(out, touched, attempts);
      result.maintenance_pending = true;
      return std::make_pair(std::move(out), result);
    }
    MaintainReport report;
    auto maintained = internal::MaintainAfterAppend(out, touched, attempts, &report);
    internal::AddReport(&result.maintenance, report);
    if (maintained.ok()) {
      out = *maintained;
    } else {
      result.maintenance_error = maintained.status().message();
    }
  }
  // Then the rollups that are due: their failures leave the append as it is.
  result.rollups = rollup::RefreshRollupsOf(out, options.refresh_rollups);
  return std::make_pair(std::move(out), result);
}

}  // namespace

arrow::Result<std::pair<Table, AppendResult>> Table::Append(
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const AppendOptions& options) const {
  const std::string context = "appending to " + state_->name.ToString();
  const auto start = Clock::now();
  bool duplicate = false;
  TIMELAKE_ASSIGN_OR_RAISE(auto base, AppendBase(state_, options, context, &duplicate));
  if (duplicate) {
    int64_t input_rows = 0;
    for (const auto& b : batches) input_rows += b ? b->num_rows() : 0;
    return std::make_pair(Table(base), DuplicateOf(*base, input_rows));
  }
  const auto now = state_->lake->clock->Now();
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, internal::LayoutOf(*base));
  auto written = write::WriteDataFiles(*state_->lake->store, state_->table_key + "/data",
                                       layout, batches, now);
  if (!written.ok()) return WithContext(written.status(), context);
  TIMELAKE_ASSIGN_OR_RAISE(auto committed, CommitWritten(std::move(base), *written,
                                                         options, now, start, context));
  return std::make_pair(Table(std::move(committed.first)), std::move(committed.second));
}

arrow::Result<std::pair<Table, AppendResult>> Table::Append(
    arrow::RecordBatchReader* reader, const AppendOptions& options) const {
  const std::string context = "appending to " + state_->name.ToString();
  if (reader == nullptr) return Invalid(context + ": the reader is null");
  const auto start = Clock::now();
  bool duplicate = false;
  TIMELAKE_ASSIGN_OR_RAISE(auto base, AppendBase(state_, options, context, &duplicate));
  // Not read: a re-run of a committed import costs nothing.
  if (duplicate) return std::make_pair(Table(base), DuplicateOf(*base, 0));
  TIMELAKE_ASSIGN_OR_RAISE(auto layout, internal::LayoutOf(*base));
  write::ChunkedWriter writer(*state_->lake->store, state_->table_key + "/data",
                              std::move(layout), options.buffer_rows,
                              *state_->lake->clock);
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    // The reader's errors are the caller's own: passed on as they are (the
    // writer's destructor deletes what was written).
    TIMELAKE_RETURN_NOT_OK(reader->ReadNext(&batch));
    if (batch == nullptr) break;
    if (auto st = writer.Add(batch); !st.ok()) return WithContext(st, context);
  }
  auto written = writer.Finish();
  if (!written.ok()) return WithContext(written.status(), context);
  TIMELAKE_ASSIGN_OR_RAISE(auto committed,
                           CommitWritten(std::move(base), *written, options,
                                         state_->lake->clock->Now(), start, context));
  return std::make_pair(Table(std::move(committed.first)), std::move(committed.second));
}

arrow::Result<std::pair<Table, MaintainReport>> Table::WaitForMaintenance() const {
  auto done = internal::WaitForMaintenance(state_->lake, state_->name);
  if (!done) return std::make_pair(*this, MaintainReport{});
  if (!done->error.ok()) {
    return WithContext(done->error, "maintaining " + state_->name.ToString() +
                                        " in the background after an append");
  }
  std::shared_ptr<const internal::TableState> table = state_;
  if (done->table != nullptr && done->table->version > table->version) {
    table = std::move(done->table);
  }
  return std::make_pair(Table(std::move(table)), done->report);
}

arrow::Result<std::pair<Table, MaintainReport>> Table::Maintain(
    const MaintainOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  MaintainReport report;
  internal::StepOptions step;
  step.max_commit_attempts = options.max_commit_attempts;
  step.progress = options.progress;
  // Plans on the newest version, not this handle's, once the background
  // maintenance of appends has ended (it would race this one's rewrites).
  (void)AfterBackground(state_);
  TIMELAKE_ASSIGN_OR_RAISE(auto table,
                           internal::LoadTableState(state_->lake, state_->name));
  // Not even the sweep of unreferenced files (a newer format may reference
  // files in ways this build does not know).
  TIMELAKE_RETURN_NOT_OK(
      WithContext(WritableFormat(*table), "maintaining " + table->name.ToString()));
  TIMELAKE_ASSIGN_OR_RAISE(auto rules, internal::RulesOf(*table));
  if (options.retention) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunRetention(table, rules, step, &report));
  }
  if (options.compact) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunCompaction(table, rules, step, &report));
  }
  if (options.expire) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunExpiry(table, rules, 1, step, &report));
  }
  if (options.clean_orphans) {
    TIMELAKE_RETURN_NOT_OK(
        internal::SweepOrphans(*table, options.orphan_age, step, &report));
  }
  report.rollups = rollup::RefreshRollupsOf(table, options.refresh_rollups);
  report.version = table->version;
  report.duration = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  return std::make_pair(Table(std::move(table)), report);
}

arrow::Result<std::pair<Table, DeleteReport>> Table::Delete(
    std::string_view where, const DeleteOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  const std::string context = "deleting from " + state_->name.ToString();
  DeleteReport report;
  internal::StepOptions step;
  step.max_commit_attempts = std::max(1, options.max_commit_attempts);
  step.progress = options.progress;
  // Deletes what queries see now, not what this handle saw (once the
  // background maintenance of appends, which rewrites files too, has ended).
  (void)AfterBackground(state_);
  TIMELAKE_ASSIGN_OR_RAISE(auto table,
                           internal::LoadTableState(state_->lake, state_->name));
  TIMELAKE_RETURN_NOT_OK(WithContext(WritableFormat(*table), context));
  TIMELAKE_RETURN_NOT_OK(WithContext(NotARollup(*table), context));
  std::string predicate(where);
  if (predicate.find_first_not_of(" \t\r\n") == std::string::npos) predicate = "true";
  TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunDelete(table, predicate, step, &report));
  if (options.purge) {
    // Every snapshot but the current one, unless keep-snapshots-until
    // protects them; then the files only they used.
    TIMELAKE_ASSIGN_OR_RAISE(auto rules, internal::RulesOf(*table));
    rules.snapshot_retention = std::chrono::milliseconds(0);
    rules.min_snapshots = 1;
    rules.max_snapshots = 1;
    MaintainReport expiry;
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunExpiry(table, rules, 1, step, &expiry));
    report.snapshots_expired = expiry.snapshots_expired;
    report.files_deleted = expiry.files_deleted;
  }
  report.version = table->version;
  report.duration = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  return std::make_pair(Table(std::move(table)), report);
}

}  // namespace timelake
