// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <chrono>
#include <set>

#include "timelake/commit/commit.h"
#include "timelake/format/manifest.h"
#include "timelake/format/schema.h"
#include "timelake/settings.h"
#include "timelake/table/head.h"
#include "timelake/table/internal.h"
#include "timelake/table/lvi.h"
#include "timelake/table/maintain.h"
#include "timelake/util/uuid.h"
#include "timelake/write/data_writer.h"

namespace timelake {

namespace {

using Clock = std::chrono::steady_clock;

std::chrono::microseconds Since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
}

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
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

namespace internal {

// The write layout of a table. The partitioning comes from the partition
// spec, the source of truth other engines read: Timelake's hour/day/month of
// the time column, or none. Errors: kUnsupported for other specs.
arrow::Result<write::Layout> LayoutOf(const internal::TableState& t) {
  write::Layout layout;
  layout.schema = t.schema;
  layout.time_column = t.contract.time_column;
  layout.series_key = t.contract.series_key;
  layout.ingest_column = t.contract.ingest_column;
  layout.dedup = t.contract.dedup;
  layout.compression = t.contract.compression;
  layout.compression_level = t.contract.compression_level;
  layout.row_group_rows = t.contract.row_group_rows;
  layout.data_page_rows = t.contract.data_page_rows;
  // Footers for the head object (head.h), which inlines them within
  // head-inline-bytes.
  const settings::Resolver resolve(nullptr, nullptr, &t.metadata.properties);
  if (resolve.Get("head-format").value_or("arrow") == "arrow") {
    layout.footer_bytes = resolve.GetInt("head-inline-bytes").ValueOr(0);
  }
  const auto& spec = t.metadata.DefaultSpec();
  if (spec.fields.empty()) return layout;
  const auto& field = spec.fields[0];
  auto chunk = ParseChunk(field.transform);
  std::optional<int> time_id;
  if (t.contract.time_column) {
    if (auto f = t.schema->GetFieldByName(*t.contract.time_column))
      time_id = format::FieldId(*f);
  }
  if (spec.fields.size() != 1 || !chunk.ok() || !time_id || field.source_id != *time_id) {
    return Unsupported(
        "appending to " + t.name.ToString() +
        ": its partition spec is not the hour, day or month of its time column "
        "(other partitionings are not supported yet)");
  }
  layout.partitioned = true;
  layout.chunk = *chunk;
  layout.partition_field_name = field.name;
  return layout;
}

std::vector<format::PartitionFieldType> PartitionTypeOf(
    const format::PartitionSpec& spec) {
  std::vector<format::PartitionFieldType> out;
  for (const auto& f : spec.fields) {
    format::PartitionFieldType t;
    t.field_id = f.field_id;
    t.name = f.name;
    // Iceberg's day transform yields a date; hour and month yield ints.
    t.type = f.transform == "day" ? format::PartitionValueType::kDate
                                  : format::PartitionValueType::kInt;
    out.push_back(t);
  }
  return out;
}

nlohmann::json SpecFieldsJson(const format::PartitionSpec& spec) {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& f : spec.fields) {
    fields.push_back({{"source-id", f.source_id},
                      {"field-id", f.field_id},
                      {"name", f.name},
                      {"transform", f.transform}});
  }
  return fields;
}

format::ManifestEntry NewEntry(const write::WrittenFile& f, const TableState& base,
                               int64_t snapshot_id) {
  format::ManifestEntry e;
  e.status = format::kEntryAdded;
  e.snapshot_id = snapshot_id;
  e.data_file.file_path = base.lake->store->Uri(f.key);
  e.data_file.record_count = f.rows;
  e.data_file.file_size_in_bytes = f.bytes;
  if (f.partition) e.data_file.partition.push_back(format::PartitionValue(*f.partition));
  e.data_file.column_sizes = f.column_sizes;
  e.data_file.value_counts = f.value_counts;
  e.data_file.null_value_counts = f.null_value_counts;
  e.data_file.lower_bounds = f.lower_bounds;
  e.data_file.upper_bounds = f.upper_bounds;
  if (!base.contract.series_key.empty() || base.contract.time_column) {
    e.data_file.sort_order_id = base.metadata.doc.value("default-sort-order-id", 0);
  }
  return e;
}

format::ManifestWriteOptions ManifestOptionsOf(const TableState& base) {
  const auto& spec = base.metadata.DefaultSpec();
  format::ManifestWriteOptions mopts;
  mopts.table_schema_json = base.metadata.CurrentSchema().dump();
  mopts.schema_id = base.metadata.current_schema_id;
  mopts.partition_spec_json = SpecFieldsJson(spec).dump();
  mopts.partition_spec_id = spec.spec_id;
  mopts.partition_type = PartitionTypeOf(spec);
  return mopts;
}

}  // namespace internal

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

arrow::Result<Table> Table::SetProperties(
    const std::map<std::string, std::optional<std::string>>& changes) const {
  const std::string context = "altering " + state_->name.ToString();
  std::map<std::string, std::optional<std::string>> canonical;
  for (const auto& [key, value] : changes) {
    auto k = internal::AlterableKey(key);
    if (!k.ok()) return WithContext(k.status(), context);
    canonical[*k] = value;
  }
  const auto& store = *state_->lake->store;
  std::shared_ptr<const internal::TableState> base = state_;
  for (int attempt = 1;; ++attempt) {
    format::TableMetadata next = base->metadata;
    for (const auto& [key, value] : canonical) {
      if (value) {
        next.properties[key] = *value;
      } else {
        next.properties.erase(key);
      }
    }
    if (auto contract = internal::ParseContract(next.properties); !contract.ok()) {
      return WithContext(contract.status(), context);
    }
    const auto now_ms = internal::ToMillis(state_->lake->clock->Now());
    next.LogPreviousMetadata(store.Uri(base->metadata_key),
                             base->metadata.last_updated_ms, 20);
    next.last_updated_ms = std::max(now_ms, base->metadata.last_updated_ms);
    const int64_t version = base->version + 1;
    auto won =
        commit::TryCommit(store, state_->table_key, version, next, base->metadata_key);
    if (!won.ok()) {
      return WithContext(won.status(),
                         context + ": committing version " + std::to_string(version));
    }
    if (*won) {
      commit::WriteVersionHintAsync(state_->lake->store, state_->table_key, version);
      TIMELAKE_ASSIGN_OR_RAISE(auto stored,
                               format::TableMetadata::Parse(next.Serialize(), context));
      TIMELAKE_ASSIGN_OR_RAISE(
          auto new_state,
          internal::MakeTableState(state_->lake, state_->name, version,
                                   commit::VersionKey(state_->table_key, version),
                                   std::move(stored)));
      internal::WriteHeadAsync(new_state);
      return Table(std::move(new_state));
    }
    if (attempt >= 20) {
      return Conflict(context + ": commit conflict: gave up after " +
                      std::to_string(attempt) + " attempts, other writers kept winning");
    }
    commit::BackoffBeforeRetry(attempt);
    TIMELAKE_ASSIGN_OR_RAISE(base, internal::LoadTableState(state_->lake, state_->name));
  }
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
  if (options.batch_id) {
    if (options.batch_id->empty()) return Invalid(context + ": empty batch id");
    // Look at the newest version, not just this handle's, so a retry from a
    // stale handle is still recognised.
    TIMELAKE_ASSIGN_OR_RAISE(base, internal::LoadTableState(state_->lake, state_->name));
    if (HasBatchId(base->metadata, *options.batch_id)) {
      result.duplicate_batch = true;
      result.version = base->version;
      result.snapshot_id = base->metadata.current_snapshot_id;
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

  std::vector<std::string> written_keys;
  for (const auto& f : written->files) {
    written_keys.push_back(f.key);
    if (f.footer != nullptr) state_->lake->footers.Put(f.key, f.footer);
  }

  // One manifest with the new files; it does not depend on the base version
  // (sequence numbers are inherited from the manifest list), so it is written
  // once and reused by every commit attempt.
  const int64_t snapshot_id = internal::NewSnapshotId();
  const auto& spec = base->metadata.DefaultSpec();
  std::vector<format::ManifestEntry> entries;
  for (const auto& f : written->files) {
    entries.push_back(internal::NewEntry(f, *base, snapshot_id));
    result.bytes += f.bytes;
  }
  result.files = static_cast<int64_t>(written->files.size());
  result.partitions = result.files;

  const format::ManifestWriteOptions mopts = internal::ManifestOptionsOf(*base);
  auto manifest_bytes = format::WriteManifest(mopts, entries);
  if (!manifest_bytes.ok()) {
    DeleteQuietly(store, written_keys);
    return WithContext(manifest_bytes.status(), context);
  }
  const std::string manifest_key = commit::MetadataPrefix(state_->table_key) + "/" +
                                   internal::NewUuidV7(now) + "-m0.avro";
  if (auto st = store.Put(manifest_key, *manifest_bytes); !st.ok()) {
    DeleteQuietly(store, written_keys);
    return WithContext(st, context);
  }
  written_keys.push_back(manifest_key);
  state_->lake->objects.Put(manifest_key, arrow::Buffer::FromString(*manifest_bytes));
  result.commit.write_duration = Since(start);

  // The optimistic commit loop.
  const auto commit_start = Clock::now();
  const int max_attempts = std::max(1, options.max_commit_attempts);
  std::string lost_list_key;
  std::string lvi_key;  // this attempt's last-value index
  for (int attempt = 1;; ++attempt) {
    result.commit.attempts = attempt;
    if (attempt > 1) {
      // The attempt that lost left its manifest list; it goes with the rest
      // unless the reload shows that the snapshot did land after all.
      written_keys.push_back(lost_list_key);
      auto reloaded = internal::LoadTableState(state_->lake, state_->name);
      if (!reloaded.ok()) {
        DeleteQuietly(store, written_keys);
        return WithContext(reloaded.status(), context);
      }
      base = *reloaded;
      if (const auto* mine = base->metadata.FindSnapshot(snapshot_id)) {
        // Our own commit is in the table although the put reported a lost
        // race: it stays, with everything it references.
        result.commit.commit_duration = Since(commit_start);
        result.snapshot_id = snapshot_id;
        result.sequence_number = mine->sequence_number;
        result.version = base->version;
        return std::make_pair(Table(base), result);
      }
      // The previous attempt's manifest list and index were never committed.
      (void)store.Delete(lost_list_key);
      written_keys.pop_back();
      if (!lvi_key.empty()) {
        (void)store.Delete(lvi_key);
        std::erase(written_keys, lvi_key);
        lvi_key.clear();
      }
      if (options.batch_id && HasBatchId(base->metadata, *options.batch_id)) {
        DeleteQuietly(store, written_keys);
        result = AppendResult{};
        result.duplicate_batch = true;
        result.version = base->version;
        result.snapshot_id = base->metadata.current_snapshot_id;
        return std::make_pair(Table(base), result);
      }
      if (base->metadata.DefaultSpec().spec_id != spec.spec_id ||
          base->metadata.current_schema_id != mopts.schema_id) {
        DeleteQuietly(store, written_keys);
        return Conflict(context +
                        ": the table's schema or partitioning changed concurrently "
                        "(version " +
                        std::to_string(base->version) + "); append again");
      }
    }
    const auto& bm = base->metadata;
    const int64_t seq = bm.last_sequence_number + 1;
    std::vector<format::ManifestFile> manifests;
    auto new_manifest = format::SummarizeManifest(
        store.Uri(manifest_key), static_cast<int64_t>(manifest_bytes->size()),
        spec.spec_id, snapshot_id, seq, mopts.partition_type, entries);
    if (!new_manifest.ok()) {
      DeleteQuietly(store, written_keys);
      return WithContext(new_manifest.status(), context);
    }
    manifests.push_back(std::move(*new_manifest));
    const format::Snapshot* parent = bm.CurrentSnapshot();
    if (parent) {
      auto list_key = store.KeyOf(parent->manifest_list);
      arrow::Result<std::shared_ptr<arrow::Buffer>> list_bytes =
          list_key.ok()
              ? internal::GetImmutable(*state_->lake, *list_key)
              : arrow::Result<std::shared_ptr<arrow::Buffer>>(list_key.status());
      if (!list_bytes.ok()) {
        DeleteQuietly(store, written_keys);
        return WithContext(list_bytes.status(),
                           context + ": reading the manifest list of snapshot " +
                               std::to_string(parent->snapshot_id));
      }
      auto parent_manifests = format::ReadManifestList(AsView(**list_bytes));
      if (!parent_manifests.ok()) {
        DeleteQuietly(store, written_keys);
        return WithContext(parent_manifests.status(),
                           context + ": manifest list " + parent->manifest_list);
      }
      // Manifests of only deleted entries (a compaction's record of what it
      // replaced) belong to their own snapshot and are not carried on.
      for (auto& m : *parent_manifests) {
        if (!internal::HasLiveFiles(m)) continue;
        manifests.push_back(std::move(m));
      }
    }
    auto list_bytes = format::WriteManifestList(
        snapshot_id, parent ? std::optional<int64_t>(parent->snapshot_id) : std::nullopt,
        seq, manifests);
    if (!list_bytes.ok()) {
      DeleteQuietly(store, written_keys);
      return WithContext(list_bytes.status(), context);
    }
    const std::string list_key = commit::MetadataPrefix(state_->table_key) + "/snap-" +
                                 std::to_string(snapshot_id) + "-" +
                                 std::to_string(attempt) + "-" +
                                 internal::NewUuidV7(now) + ".avro";
    if (auto st = store.Put(list_key, *list_bytes); !st.ok()) {
      DeleteQuietly(store, written_keys);
      return WithContext(st, context);
    }
    state_->lake->objects.Put(list_key, arrow::Buffer::FromString(*list_bytes));

    format::TableMetadata next = bm;
    format::Snapshot snap;
    snap.snapshot_id = snapshot_id;
    if (parent) snap.parent_snapshot_id = parent->snapshot_id;
    snap.sequence_number = seq;
    snap.timestamp_ms =
        std::max(internal::ToMillis(state_->lake->clock->Now()), bm.last_updated_ms);
    snap.manifest_list = store.Uri(list_key);
    snap.schema_id = bm.current_schema_id;
    auto total = [&](const char* key) {
      return parent ? format::SummaryInt(*parent, key) : int64_t{0};
    };
    snap.summary = {
        {format::summary::kOperation, "append"},
        {format::summary::kAddedDataFiles, std::to_string(result.files)},
        {format::summary::kAddedRecords, std::to_string(result.rows)},
        {format::summary::kAddedFilesSize, std::to_string(result.bytes)},
        {format::summary::kTotalDataFiles,
         std::to_string(total(format::summary::kTotalDataFiles) + result.files)},
        {format::summary::kTotalRecords,
         std::to_string(total(format::summary::kTotalRecords) + result.rows)},
        {format::summary::kTotalFilesSize,
         std::to_string(total(format::summary::kTotalFilesSize) + result.bytes)},
        {format::summary::kTotalDeleteFiles, "0"},
        {format::summary::kTotalPositionDeletes, "0"},
        {format::summary::kTotalEqualityDeletes, "0"},
    };
    if (options.batch_id) snap.summary[format::summary::kBatchId] = *options.batch_id;
    // The new last-value index: the parent's merged with the appended rows'
    // newest. Without the parent's (a table another engine wrote, or an
    // unreadable index) none is written, and `latest` scans instead.
    if (written->latest != nullptr) {
      std::optional<std::string> parent_lvi;
      bool known = parent == nullptr;
      if (parent) {
        parent_lvi = internal::LviUri(*parent);
        known = parent_lvi.has_value();
      }
      std::shared_ptr<arrow::RecordBatch> previous;
      if (parent_lvi) {
        auto read = internal::ReadLvi(*state_->lake, *parent_lvi, *base->schema);
        known = read.ok();
        if (read.ok()) previous = *read;
      }
      if (known) {
        auto index =
            internal::MergeLvi(previous, written->latest, base->contract, *base->schema);
        auto key = index.ok() ? internal::WriteLvi(store, state_->table_key, snapshot_id,
                                                   **index, internal::NewUuidV7(now))
                              : arrow::Result<std::string>(index.status());
        if (!key.ok()) {
          DeleteQuietly(store, written_keys);
          return WithContext(key.status(), context);
        }
        lvi_key = *key;
        written_keys.push_back(lvi_key);
        snap.summary[internal::kLastValueIndexKey] = store.Uri(lvi_key);
      }
    }
    next.LogPreviousMetadata(store.Uri(base->metadata_key), bm.last_updated_ms, 20);
    next.AddSnapshot(std::move(snap));

    auto won = commit::TryCommit(store, state_->table_key, base->version + 1, next,
                                 base->metadata_key);
    if (!won.ok()) {
      // The put may or may not have landed; the files stay so that a landed
      // commit is never left pointing at deleted data.
      return WithContext(won.status(), context + ": committing version " +
                                           std::to_string(base->version + 1));
    }
    if (*won) {
      result.commit.commit_duration = Since(commit_start);
      result.snapshot_id = snapshot_id;
      result.sequence_number = seq;
      result.version = base->version + 1;
      commit::WriteVersionHintAsync(state_->lake->store, state_->table_key,
                                    result.version);
      TIMELAKE_ASSIGN_OR_RAISE(auto stored,
                               format::TableMetadata::Parse(next.Serialize(), context));
      TIMELAKE_ASSIGN_OR_RAISE(
          auto new_state,
          internal::MakeTableState(state_->lake, state_->name, result.version,
                                   commit::VersionKey(state_->table_key, result.version),
                                   std::move(stored)));
      internal::WriteHeadAsync(new_state);
      // Inline maintenance: its failure leaves the append as it is.
      std::shared_ptr<const internal::TableState> out = new_state;
      auto auto_maintain =
          new_state->contract.time_column
              ? settings::Resolver(nullptr, nullptr, &new_state->metadata.properties)
                    .GetBool("auto-maintain")
              : arrow::Result<bool>(false);
      if (options.auto_maintain.value_or(auto_maintain.ValueOr(true))) {
        std::set<std::optional<int32_t>> touched;
        for (const auto& f : written->files) touched.insert(f.partition);
        auto maintained = internal::MaintainAfterAppend(new_state, touched, max_attempts,
                                                        &result.maintenance);
        if (maintained.ok()) {
          out = *maintained;
        } else {
          result.maintenance_error = maintained.status().message();
        }
      }
      return std::make_pair(Table(std::move(out)), result);
    }
    // Lost the race: back off and rebase. This attempt's manifest list is
    // deleted once the reload confirms that the snapshot did not land.
    lost_list_key = list_key;
    ++result.commit.conflicts_rebased;
    if (attempt >= max_attempts) {
      written_keys.push_back(list_key);  // TryCommit read back another writer's version
      DeleteQuietly(store, written_keys);
      return Conflict(context + ": commit conflict: gave up after " +
                      std::to_string(attempt) +
                      " commit attempts, other writers kept winning (last seen version " +
                      std::to_string(base->version) + ")");
    }
    commit::BackoffBeforeRetry(attempt);
  }
}

}  // namespace timelake
