// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <chrono>
#include <set>

#include "timelake/commit/commit.h"
#include "timelake/format/manifest.h"
#include "timelake/maintain/maintain.h"
#include "timelake/settings.h"
#include "timelake/state/state.h"
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

bool HasBatchId(const format::TableMetadata& m, const std::string& id) {
  for (const auto& s : m.snapshots) {
    auto it = s.summary.find(format::summary::kBatchId);
    if (it != s.summary.end() && it->second == id) return true;
  }
  return false;
}

// Removes what an append wrote when it will not be committed.
void DeleteQuietly(const storage::Store& store, const std::vector<std::string>& keys) {
  for (const auto& k : keys) (void)store.Delete(k);
}

}  // namespace

const TableName& Table::name() const { return state_->name; }
const std::string& Table::location() const { return state_->metadata.location; }
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
  info.location = m.location;
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
  return info;
}

arrow::Result<Table> Table::Refresh() const {
  TIMELAKE_ASSIGN_OR_RAISE(auto state,
                           internal::LoadTableState(state_->lake, state_->name));
  return Table(std::move(state));
}

namespace {

// A change of table properties: the same edit over whatever version wins.
class PropertyChange : public commit::Change {
 public:
  PropertyChange(std::map<std::string, std::optional<std::string>> changes,
                 std::string context)
      : changes_(std::move(changes)), context_(std::move(context)) {}

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, commit::Attempt*) override {
    format::TableMetadata next = base.metadata;
    for (const auto& [key, value] : changes_) {
      if (value) {
        next.properties[key] = *value;
      } else {
        next.properties.erase(key);
      }
    }
    if (auto contract = internal::ParseContract(next.properties); !contract.ok()) {
      return WithContext(contract.status(), context_);
    }
    next.last_updated_ms = std::max(internal::ToMillis(base.lake->clock->Now()),
                                    base.metadata.last_updated_ms);
    return next;
  }

 private:
  const std::map<std::string, std::optional<std::string>> changes_;
  const std::string context_;
};

// An append: data files and one manifest written once, then a snapshot over
// whatever version wins (its manifest list and last-value index written per
// attempt).
class AppendChange : public commit::Change {
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

  void Abandon() override { DeleteQuietly(store_, own_); }

  // Whether Rebase found the batch id committed by another writer.
  bool duplicate() const { return duplicate_; }
  int64_t sequence_number() const { return sequence_number_; }

  arrow::Result<std::optional<format::TableMetadata>> Rebase(
      const internal::TableState& base, commit::Attempt* attempt) override {
    const auto& bm = base.metadata;
    if (attempt->number > 1) {
      if (options_.batch_id && HasBatchId(bm, *options_.batch_id)) {
        duplicate_ = true;
        return std::nullopt;
      }
      if (bm.DefaultSpec().spec_id != mopts_.partition_spec_id ||
          bm.current_schema_id != mopts_.schema_id) {
        return Conflict(context_ +
                        ": the table's schema or partitioning changed concurrently "
                        "(version " +
                        std::to_string(base.version) + "); append again");
      }
    }
    auto& lake = *base.lake;
    const auto now = lake.clock->Now();
    const int64_t seq = bm.last_sequence_number + 1;
    std::vector<format::ManifestFile> manifests;
    auto new_manifest = format::SummarizeManifest(
        store_.Uri(manifest_key_), static_cast<int64_t>(manifest_bytes_.size()),
        mopts_.partition_spec_id, snapshot_id_, seq, mopts_.partition_type, entries_);
    if (!new_manifest.ok()) return WithContext(new_manifest.status(), context_);
    manifests.push_back(std::move(*new_manifest));
    const format::Snapshot* parent = bm.CurrentSnapshot();
    if (parent) {
      TIMELAKE_ASSIGN_OR_RAISE(auto carried,
                               commit::LiveManifestsOf(lake, *parent, context_));
      for (auto& m : carried) manifests.push_back(std::move(m));
    }
    auto list_bytes = format::WriteManifestList(
        snapshot_id_, parent ? std::optional<int64_t>(parent->snapshot_id) : std::nullopt,
        seq, manifests);
    if (!list_bytes.ok()) return WithContext(list_bytes.status(), context_);
    const std::string list_key = commit::ManifestListKey(
        base.table_key, snapshot_id_, attempt->number, internal::NewUuidV7(now));
    if (auto st = store_.Put(list_key, *list_bytes); !st.ok()) {
      return WithContext(st, context_);
    }
    attempt->written.push_back(list_key);
    lake.objects.Put(list_key, arrow::Buffer::FromString(*list_bytes));

    format::TableMetadata next = bm;
    format::Snapshot snap;
    snap.snapshot_id = snapshot_id_;
    if (parent) snap.parent_snapshot_id = parent->snapshot_id;
    snap.sequence_number = seq;
    snap.timestamp_ms =
        std::max(internal::ToMillis(lake.clock->Now()), bm.last_updated_ms);
    snap.manifest_list = store_.Uri(list_key);
    snap.schema_id = bm.current_schema_id;
    auto total = [&](const char* key) {
      return parent ? format::SummaryInt(*parent, key) : int64_t{0};
    };
    snap.summary = {
        {format::summary::kOperation, "append"},
        {format::summary::kAddedDataFiles, std::to_string(result_.files)},
        {format::summary::kAddedRecords, std::to_string(result_.rows)},
        {format::summary::kAddedFilesSize, std::to_string(result_.bytes)},
        {format::summary::kTotalDataFiles,
         std::to_string(total(format::summary::kTotalDataFiles) + result_.files)},
        {format::summary::kTotalRecords,
         std::to_string(total(format::summary::kTotalRecords) + result_.rows)},
        {format::summary::kTotalFilesSize,
         std::to_string(total(format::summary::kTotalFilesSize) + result_.bytes)},
        {format::summary::kTotalDeleteFiles, "0"},
        {format::summary::kTotalPositionDeletes, "0"},
        {format::summary::kTotalEqualityDeletes, "0"},
    };
    if (options_.batch_id) snap.summary[format::summary::kBatchId] = *options_.batch_id;
    // The new last-value index: the parent's merged with the appended rows'
    // newest. Without the parent's (a table another engine wrote, or an
    // unreadable index) none is written, and `latest` scans instead.
    if (written_.latest != nullptr) {
      std::optional<std::string> parent_lvi;
      bool known = parent == nullptr;
      if (parent) {
        parent_lvi = internal::LviUri(*parent);
        known = parent_lvi.has_value();
      }
      std::shared_ptr<arrow::RecordBatch> previous;
      if (parent_lvi) {
        auto read = internal::ReadLvi(lake, *parent_lvi, *base.schema);
        known = read.ok();
        if (read.ok()) previous = *read;
      }
      if (known) {
        TIMELAKE_ASSIGN_OR_RAISE(
            auto index,
            internal::MergeLvi(previous, written_.latest, base.contract, *base.schema));
        auto key = internal::WriteLvi(store_, base.table_key, snapshot_id_, *index,
                                      internal::NewUuidV7(now));
        if (!key.ok()) return WithContext(key.status(), context_);
        attempt->written.push_back(*key);
        snap.summary[internal::kLastValueIndexKey] = store_.Uri(*key);
      }
    }
    next.AddSnapshot(std::move(snap));
    sequence_number_ = seq;
    return next;
  }

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

}  // namespace

arrow::Result<Table> Table::SetProperties(
    const std::map<std::string, std::optional<std::string>>& changes) const {
  const std::string context = "altering " + state_->name.ToString();
  std::map<std::string, std::optional<std::string>> canonical;
  for (const auto& [key, value] : changes) {
    auto k = internal::AlterableKey(key);
    if (!k.ok()) return WithContext(k.status(), context);
    canonical[*k] = value;
  }
  PropertyChange change(std::move(canonical), context);
  commit::CommitOptions copts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome, commit::Commit(state_, &change, copts));
  return Table(std::move(outcome.state));
}

arrow::Result<std::pair<Table, AppendResult>> Table::Append(
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const AppendOptions& options) const {
  const std::string context = "appending to " + state_->name.ToString();
  const auto& store = *state_->lake->store;
  const auto start = Clock::now();
  AppendResult result;
  result.version = state_->version;
  result.snapshot_id = state_->metadata.current_snapshot_id;

  std::shared_ptr<const internal::TableState> base = state_;
  auto duplicate_of = [&](const std::shared_ptr<const internal::TableState>& newest) {
    AppendResult dup;
    dup.duplicate_batch = true;
    dup.version = newest->version;
    dup.snapshot_id = newest->metadata.current_snapshot_id;
    return dup;
  };
  if (options.batch_id) {
    if (options.batch_id->empty()) return Invalid(context + ": empty batch id");
    // Look at the newest version, not just this handle's, so a retry from a
    // stale handle is still recognised.
    TIMELAKE_ASSIGN_OR_RAISE(base, internal::LoadTableState(state_->lake, state_->name));
    if (HasBatchId(base->metadata, *options.batch_id)) {
      result = duplicate_of(base);
      for (const auto& b : batches) result.input_rows += b ? b->num_rows() : 0;
      return std::make_pair(Table(base), result);
    }
  }

  const auto now = state_->lake->clock->Now();
  auto layout = internal::LayoutOf(*base);
  if (!layout.ok()) return layout.status();
  auto written =
      write::WriteDataFiles(store, state_->table_key + "/data", *layout, batches, now);
  if (!written.ok()) return WithContext(written.status(), context);
  result.input_rows = written->input_rows;
  result.rows = written->rows;
  if (written->files.empty()) return std::make_pair(Table(base), result);

  std::vector<std::string> own;
  for (const auto& f : written->files) {
    own.push_back(f.key);
    if (f.footer != nullptr) state_->lake->footers.Put(f.key, f.footer);
  }

  // One manifest with the new files; it does not depend on the base version
  // (sequence numbers are inherited from the manifest list), so it is written
  // once and reused by every commit attempt.
  const int64_t snapshot_id = internal::NewSnapshotId();
  std::vector<format::ManifestEntry> entries;
  for (const auto& f : written->files) {
    entries.push_back(commit::NewEntry(f, *base, snapshot_id));
    result.bytes += f.bytes;
  }
  result.files = static_cast<int64_t>(written->files.size());
  result.partitions = result.files;

  format::ManifestWriteOptions mopts = commit::ManifestOptionsOf(*base);
  auto manifest_bytes = format::WriteManifest(mopts, entries);
  if (!manifest_bytes.ok()) {
    DeleteQuietly(store, own);
    return WithContext(manifest_bytes.status(), context);
  }
  const std::string manifest_key = versions::MetadataPrefix(state_->table_key) + "/" +
                                   internal::NewUuidV7(now) + "-m0.avro";
  if (auto st = store.Put(manifest_key, *manifest_bytes); !st.ok()) {
    DeleteQuietly(store, own);
    return WithContext(st, context);
  }
  own.push_back(manifest_key);
  state_->lake->objects.Put(manifest_key, arrow::Buffer::FromString(*manifest_bytes));
  result.commit.write_duration = Since(start);

  AppendChange change(store, *written, std::move(own), manifest_key,
                      std::move(*manifest_bytes), std::move(mopts), std::move(entries),
                      snapshot_id, options, result, context);
  commit::CommitOptions copts;
  copts.max_attempts = options.max_commit_attempts;
  copts.context = context;
  TIMELAKE_ASSIGN_OR_RAISE(auto outcome, commit::Commit(base, &change, copts));
  result.commit.attempts = outcome.attempts;
  result.commit.conflicts_rebased = outcome.conflicts_rebased;
  result.commit.commit_duration = outcome.duration;
  if (change.duplicate()) {
    const int64_t input_rows = result.input_rows;
    result = duplicate_of(outcome.state);
    result.input_rows = input_rows;
    return std::make_pair(Table(outcome.state), result);
  }
  result.snapshot_id = snapshot_id;
  result.version = outcome.state->version;
  if (outcome.landed_earlier) {
    // Our own commit is in the table although the put reported a lost race.
    result.sequence_number =
        outcome.state->metadata.FindSnapshot(snapshot_id)->sequence_number;
    return std::make_pair(Table(outcome.state), result);
  }
  result.sequence_number = change.sequence_number();

  // Inline maintenance: its failure leaves the append as it is.
  std::shared_ptr<const internal::TableState> out = outcome.state;
  auto auto_maintain =
      out->contract.time_column
          ? settings::Resolver(nullptr, nullptr, &out->metadata.properties)
                .GetBool("auto-maintain")
          : arrow::Result<bool>(false);
  if (options.auto_maintain.value_or(auto_maintain.ValueOr(true))) {
    std::set<std::optional<int32_t>> touched;
    for (const auto& f : written->files) touched.insert(f.partition);
    auto maintained = internal::MaintainAfterAppend(
        out, touched, std::max(1, options.max_commit_attempts), &result.maintenance);
    if (maintained.ok()) {
      out = *maintained;
    } else {
      result.maintenance_error = maintained.status().message();
    }
  }
  return std::make_pair(Table(std::move(out)), result);
}

arrow::Result<std::pair<Table, MaintainReport>> Table::Maintain(
    const MaintainOptions& options) const {
  const auto start = std::chrono::steady_clock::now();
  MaintainReport report;
  internal::StepOptions step;
  step.max_commit_attempts = options.max_commit_attempts;
  step.progress = options.progress;
  // Plans on the newest version, not this handle's.
  TIMELAKE_ASSIGN_OR_RAISE(auto table,
                           internal::LoadTableState(state_->lake, state_->name));
  TIMELAKE_ASSIGN_OR_RAISE(auto rules, internal::RulesOf(*table));
  if (options.retention) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunRetention(table, rules, step, &report));
  }
  if (options.compact) {
    // Passes until no partition was split by the merge budget; each pass
    // merges the previous one's outputs (a few passes for any size).
    std::optional<std::set<std::optional<int32_t>>> again;
    for (int pass = 0; pass < 8 && (!again || !again->empty()); ++pass) {
      TIMELAKE_ASSIGN_OR_RAISE(auto files, internal::ListLiveFiles(*table));
      if (again) {
        std::erase_if(files, [&](const format::LiveFile& f) {
          return !again->count(internal::PartitionValueOf(f));
        });
      }
      again.emplace();
      for (const auto& job : internal::PlanFull(files, *table, rules,
                                                /*cold_only=*/false, SIZE_MAX)) {
        TIMELAKE_ASSIGN_OR_RAISE(table,
                                 internal::RunRewrite(table, job, rules, step, &report));
        if (job.partial) again->insert(job.partition);
      }
    }
  }
  if (options.expire) {
    TIMELAKE_ASSIGN_OR_RAISE(table, internal::RunExpiry(table, rules, 1, step, &report));
  }
  if (options.clean_orphans) {
    TIMELAKE_RETURN_NOT_OK(
        internal::SweepOrphans(*table, options.orphan_age, step, &report));
  }
  report.version = table->version;
  report.duration = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  return std::make_pair(Table(std::move(table)), report);
}

}  // namespace timelake
