// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/state/state.h"

#include <algorithm>
#include <ctime>
#include <future>
#include <map>
#include <set>

#include <arrow/io/memory.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>

#include "timelake/format/head.h"
#include "timelake/format/schema.h"
#include "timelake/settings.h"
#include "timelake/versions/versions.h"
#include "timelake/write/align.h"
#include "timelake/write/lvi.h"

namespace timelake::internal {

namespace {

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

}  // namespace

std::string FormatVersionOf(const format::TableMetadata& metadata) {
  auto it = metadata.properties.find(property::kFormatVersion);
  return it == metadata.properties.end() ? "" : it->second;
}

arrow::Status CheckTableFormat(const TableState& table, FormatAccess access) {
  return CheckFormatVersion(
      table.name.ToString(), FormatVersionOf(table.metadata), access,
      table.lake ? table.lake->format_version : std::string(kFormatVersion));
}

arrow::Result<std::string> KeyOf(const TableState& table, std::string_view uri) {
  return table.lake->store->TableKeyOf(uri, table.table_key, table.metadata.location);
}

std::string LocationOf(const TableState& table) {
  const auto& store = *table.lake->store;
  if (store.KeyOf(table.metadata.location).ok()) return table.metadata.location;
  return store.Uri(table.table_key);
}

namespace {

// The state of a loaded version, not yet in the lake's table cache.
arrow::Result<std::shared_ptr<TableState>> BuildTableState(
    std::shared_ptr<LakeState> lake, const TableName& name, int64_t version,
    std::string metadata_key, format::TableMetadata metadata) {
  TIMELAKE_RETURN_NOT_OK(
      CheckFormatVersion(name.ToString(), FormatVersionOf(metadata), FormatAccess::kRead,
                         lake ? lake->format_version : std::string(kFormatVersion)));
  auto state = std::make_shared<TableState>(name);
  state->lake = std::move(lake);
  state->table_key = TableKey(name);
  state->version = version;
  state->metadata_key = std::move(metadata_key);
  auto schema = format::IcebergToArrow(metadata.CurrentSchema());
  if (!schema.ok())
    return WithContext(schema.status(), "loading table " + name.ToString());
  state->schema = *schema;
  auto contract = ParseContract(metadata.properties);
  if (!contract.ok())
    return WithContext(contract.status(), "loading table " + name.ToString());
  state->contract = *contract;
  state->metadata = std::move(metadata);
  return state;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> MakeTableState(
    std::shared_ptr<LakeState> lake, const TableName& name, int64_t version,
    std::string metadata_key, format::TableMetadata metadata) {
  TIMELAKE_ASSIGN_OR_RAISE(
      auto state, BuildTableState(std::move(lake), name, version, std::move(metadata_key),
                                  std::move(metadata)));
  // Loads and this lake's own commits are what later queries read.
  if (state->lake != nullptr)
    state->lake->tables.Remember(*state, state->lake->clock->Now());
  return std::shared_ptr<const TableState>(std::move(state));
}

arrow::Result<std::shared_ptr<const TableState>> TableStateAt(const TableState& table,
                                                              int64_t snapshot_id) {
  const format::Snapshot* snapshot = table.metadata.FindSnapshot(snapshot_id);
  if (snapshot == nullptr) {
    return NotFound("table " + table.name.ToString() + " has no snapshot " +
                    std::to_string(snapshot_id) + " (version " +
                    std::to_string(table.version) +
                    "; it never existed or has expired: `timelake info " +
                    table.name.ToString() + " --snapshots` lists those kept)");
  }
  auto state = std::make_shared<TableState>(table.name);
  state->lake = table.lake;
  state->table_key = table.table_key;
  state->version = table.version;
  state->metadata_key = table.metadata_key;
  state->metadata = table.metadata;
  state->metadata.current_snapshot_id = snapshot_id;
  state->contract = table.contract;
  state->schema = table.schema;
  if (snapshot->schema_id && *snapshot->schema_id != table.metadata.current_schema_id) {
    if (const auto* json = table.metadata.FindSchema(*snapshot->schema_id)) {
      auto schema = format::IcebergToArrow(*json);
      if (!schema.ok()) {
        return WithContext(schema.status(), "reading " + table.name.ToString() +
                                                " as of snapshot " +
                                                std::to_string(snapshot_id));
      }
      state->schema = *schema;
    }
  }
  return std::shared_ptr<const TableState>(std::move(state));
}

namespace {

std::string UtcText(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &tm);
  return std::string(text) + " UTC";
}

}  // namespace

arrow::Result<int64_t> SnapshotIdAsOf(const TableState& table, int64_t timestamp_ms) {
  const std::string when = UtcText(timestamp_ms);
  auto id = table.metadata.SnapshotAsOf(timestamp_ms);
  if (!id) {
    return NotFound("table " + table.name.ToString() + " had no snapshot at " + when +
                    " (before its first commit, or its snapshots of then have expired)");
  }
  if (table.metadata.FindSnapshot(*id) == nullptr) {
    return NotFound("table " + table.name.ToString() + " was at snapshot " +
                    std::to_string(*id) + " at " + when + ", which has expired");
  }
  return *id;
}

arrow::Result<std::optional<int64_t>> StoredHeadVersion(const TableState& table) {
  const std::string key =
      versions::MetadataPrefix(table.table_key) + "/" + format::kHeadName;
  auto bytes = table.lake->store->Get(key);
  if (!bytes.ok()) {
    if (KindOf(bytes.status()) == ErrorKind::kNotFound) return std::nullopt;
    return bytes.status();
  }
  auto head = format::DecodeHead(AsView(**bytes), table.lake->store->Uri(key));
  if (!head.ok()) return std::nullopt;
  return head->version;
}

std::vector<SnapshotInfo> SnapshotsOf(const format::TableMetadata& m) {
  const auto ids = m.History();
  const std::set<int64_t> history(ids.begin(), ids.end());
  std::vector<SnapshotInfo> out;
  for (const auto& s : m.snapshots) {
    SnapshotInfo info;
    info.snapshot_id = s.snapshot_id;
    info.parent_id = s.parent_snapshot_id;
    info.sequence_number = s.sequence_number;
    info.timestamp_ms = s.timestamp_ms;
    if (auto it = s.summary.find(format::summary::kOperation); it != s.summary.end())
      info.operation = it->second;
    info.rows = format::SummaryInt(s, format::summary::kTotalRecords);
    info.files = format::SummaryInt(s, format::summary::kTotalDataFiles);
    if (auto it = s.summary.find(format::summary::kBatchId); it != s.summary.end())
      info.batch_id = it->second;
    info.current = m.current_snapshot_id == s.snapshot_id;
    info.in_history = history.count(s.snapshot_id) > 0;
    out.push_back(std::move(info));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.sequence_number < b.sequence_number;
  });
  return out;
}

namespace {

// A head object as read and decoded, with its table metadata parsed: the
// work of a load that needs no listing, so it runs beside the listing.
struct DecodedHead {
  format::Head head;
  format::TableMetadata metadata;
};

// The table's head object decoded, or nullopt when it is missing or
// unreadable (the load then reads the version's metadata file).
std::optional<DecodedHead> ReadHead(const storage::Store& store,
                                    const std::string& table_key) {
  const std::string key = versions::MetadataPrefix(table_key) + "/" + format::kHeadName;
  auto bytes = store.Get(key);
  if (!bytes.ok()) return std::nullopt;
  auto head = format::DecodeHead(AsView(**bytes), store.Uri(key));
  if (!head.ok()) return std::nullopt;
  auto metadata = format::TableMetadata::Parse(
      head->metadata_json, store.Uri(versions::VersionKey(table_key, head->version)));
  if (!metadata.ok()) return std::nullopt;
  head->metadata_json.clear();
  return DecodedHead{std::move(*head), std::move(*metadata)};
}

// The state of `version` from a head object that is current, or nullptr
// when the head is missing, stale or unusable (the ordinary path then).
std::shared_ptr<const TableState> FromHead(const std::shared_ptr<LakeState>& lake,
                                           const TableName& name,
                                           const versions::Version& version,
                                           std::optional<DecodedHead> decoded) {
  if (!decoded || decoded->head.version != version.number) return nullptr;
  auto made = BuildTableState(lake, name, version.number, version.key,
                              std::move(decoded->metadata));
  if (!made.ok()) return nullptr;
  auto& state = **made;
  format::Head& head = decoded->head;
  for (auto& f : head.files) {
    auto key = KeyOf(state, f.data_file.file_path);
    if (!key.ok()) return nullptr;
    f.key = *key;
  }
  // Footers the head carries: for the scans of this lake (read/catalog.cc)
  // and for the heads it writes next.
  for (auto& [file_uri, blob] : head.footers) {
    if (auto key = KeyOf(state, file_uri); key.ok())
      lake->footers.Put(*key, std::move(blob));
  }
  state.head_files =
      std::make_shared<std::vector<format::LiveFile>>(std::move(head.files));
  state.head_last_values = std::move(head.last_values);
  lake->tables.Remember(state, lake->clock->Now());
  return std::move(*made);
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> LoadTableState(
    std::shared_ptr<LakeState> lake, const TableName& name) {
  // The head (read and decoded) and the listing of metadata/ in parallel:
  // with a current head, that is the only round trip before the data, and
  // decoding the head overlaps the listing.
  const std::string table_key = TableKey(name);
  auto head = std::async(std::launch::async, [&store = *lake->store, &table_key] {
    return ReadHead(store, table_key);
  });
  auto latest = versions::FindLatestVersion(*lake->store, table_key);
  auto decoded = head.get();
  TIMELAKE_RETURN_NOT_OK(latest.status());
  if (!*latest) return versions::TableNotFound(*lake->store, table_key, name.ToString());
  if (auto state = FromHead(lake, name, **latest, std::move(decoded))) return state;
  auto bytes = lake->store->Get((*latest)->key);
  if (!bytes.ok()) return WithContext(bytes.status(), "loading table " + name.ToString());
  auto metadata =
      format::TableMetadata::Parse(AsView(**bytes), lake->store->Uri((*latest)->key));
  if (!metadata.ok()) {
    return WithContext(metadata.status(), "loading table " + name.ToString());
  }
  return MakeTableState(std::move(lake), name, (*latest)->number, (*latest)->key,
                        std::move(*metadata));
}

arrow::Result<std::vector<TableName>> ListTablesOf(const LakeState& lake,
                                                   std::string_view ns) {
  const auto& store = *lake.store;
  std::vector<std::string> namespaces;
  if (ns.empty()) {
    TIMELAKE_ASSIGN_OR_RAISE(auto root, store.List("", true));
    for (const auto& p : root.prefixes) {
      if (ValidateNamePart(p, "namespace").ok()) namespaces.push_back(p);
    }
  } else {
    TIMELAKE_RETURN_NOT_OK(ValidateNamePart(ns, "namespace"));
    namespaces.emplace_back(ns);
  }
  std::vector<TableName> out;
  for (const auto& n : namespaces) {
    TIMELAKE_ASSIGN_OR_RAISE(auto listing, store.List(n + "/", true));
    for (const auto& prefix : listing.prefixes) {
      const std::string table = prefix.substr(prefix.rfind('/') + 1);
      auto name = TableName::Parse(n + "." + table);
      if (!name.ok()) continue;
      TIMELAKE_ASSIGN_OR_RAISE(auto latest,
                               versions::FindLatestVersion(store, n + "/" + table));
      if (latest) out.push_back(*name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

arrow::Result<std::vector<std::string>> ListNamespacesOf(const LakeState& lake) {
  TIMELAKE_ASSIGN_OR_RAISE(auto tables, ListTablesOf(lake, ""));
  std::vector<std::string> out;
  for (const auto& t : tables) {
    if (out.empty() || out.back() != t.ns()) out.push_back(t.ns());
  }
  return out;
}

arrow::Result<std::vector<format::LiveFile>> ListLiveFiles(const TableState& table) {
  if (table.head_files != nullptr) return *table.head_files;
  const auto* snapshot = table.metadata.CurrentSnapshot();
  if (snapshot == nullptr) return std::vector<format::LiveFile>{};
  return ListLiveFilesOf(table, snapshot);
}

arrow::Result<std::shared_ptr<const std::vector<format::LiveFile>>> SharedLiveFiles(
    const TableState& table) {
  if (table.head_files != nullptr) return table.head_files;
  TIMELAKE_ASSIGN_OR_RAISE(auto files, ListLiveFiles(table));
  return std::make_shared<const std::vector<format::LiveFile>>(std::move(files));
}

arrow::Result<std::vector<format::LiveFile>> ListLiveFilesOf(
    const TableState& table, const format::Snapshot* snapshot) {
  std::vector<format::LiveFile> out;
  if (snapshot == nullptr) return out;
  const std::string context = "listing the files of " + table.name.ToString() +
                              " snapshot " + std::to_string(snapshot->snapshot_id);
  TIMELAKE_ASSIGN_OR_RAISE(auto list_key, KeyOf(table, snapshot->manifest_list));
  auto list_bytes = GetImmutable(*table.lake, list_key);
  if (!list_bytes.ok()) return WithContext(list_bytes.status(), context);
  auto manifests = format::ReadManifestList(AsView(**list_bytes));
  if (!manifests.ok()) {
    return WithContext(manifests.status(),
                       context + ": manifest list " + snapshot->manifest_list);
  }
  for (const auto& m : *manifests) {
    if (m.content != 0) {
      // Skipping delete files would return deleted rows: refuse instead.
      return Unsupported(context + ": manifest " + m.manifest_path +
                         " lists delete files (row-level deletes are not supported yet)");
    }
    TIMELAKE_ASSIGN_OR_RAISE(auto key, KeyOf(table, m.manifest_path));
    auto bytes = GetImmutable(*table.lake, key);
    if (!bytes.ok()) return WithContext(bytes.status(), context);
    auto contents = format::ReadManifest(AsView(**bytes));
    if (!contents.ok()) {
      return WithContext(contents.status(), context + ": manifest " + m.manifest_path);
    }
    for (const auto& e : contents->entries) {
      if (e.status == 2) continue;  // DELETED
      format::LiveFile f;
      TIMELAKE_ASSIGN_OR_RAISE(f.key, KeyOf(table, e.data_file.file_path));
      f.sequence_number = e.sequence_number ? e.sequence_number : m.sequence_number;
      f.snapshot_id = e.snapshot_id.value_or(m.added_snapshot_id);
      f.file_sequence_number = e.file_sequence_number.value_or(m.sequence_number);
      f.added = e.status == format::kEntryAdded;
      f.data_file = e.data_file;
      out.push_back(std::move(f));
    }
  }
  return out;
}

namespace {

// `batch` (an index written in some schema of the table) with its columns
// named as `table_schema` names the same field ids, so that AlignBatch finds
// a renamed column under its new name and leaves a column added under an old
// name null. A column whose id the table does not have is left out; one
// without an id keeps its name unless a column with an id takes it.
std::shared_ptr<arrow::RecordBatch> NamedById(
    const std::shared_ptr<arrow::RecordBatch>& batch, const arrow::Schema& table_schema) {
  std::map<int, std::string> names;
  for (const auto& f : table_schema.fields()) {
    if (auto id = format::FieldId(*f)) names[*id] = f->name();
  }
  std::set<std::string> by_id;
  for (const auto& f : batch->schema()->fields()) {
    auto id = format::FieldId(*f);
    auto it = id ? names.find(*id) : names.end();
    if (it != names.end()) by_id.insert(it->second);
  }
  bool changed = false;
  arrow::FieldVector fields;
  arrow::ArrayVector columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    const auto& f = batch->schema()->field(i);
    std::string name = f->name();
    if (auto id = format::FieldId(*f)) {
      auto it = names.find(*id);
      if (it == names.end()) {
        changed = true;
        continue;
      }
      name = it->second;
    } else if (by_id.count(name)) {
      changed = true;
      continue;
    }
    changed = changed || name != f->name();
    fields.push_back(f->WithName(name));
    columns.push_back(batch->column(i));
  }
  if (!changed) return batch;
  return arrow::RecordBatch::Make(arrow::schema(std::move(fields)), batch->num_rows(),
                                  std::move(columns));
}

// A decoded index of the lake's cache, if it is in `table_schema`.
std::shared_ptr<arrow::RecordBatch> CachedIndex(LakeState& lake, const std::string& key,
                                                const arrow::Schema& table_schema) {
  std::lock_guard<std::mutex> lock(lake.indexes_mu);
  auto it = lake.indexes.find(key);
  if (it != lake.indexes.end() && it->second->schema()->Equals(table_schema)) {
    return it->second;
  }
  return nullptr;
}

void KeepIndex(LakeState& lake, const std::string& key,
               std::shared_ptr<arrow::RecordBatch> rows) {
  std::lock_guard<std::mutex> lock(lake.indexes_mu);
  if (lake.indexes.size() >= kDecodedIndexes) lake.indexes.clear();
  lake.indexes[key] = std::move(rows);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadLvi(const TableState& state,
                                                           const std::string& uri) {
  auto& lake = *state.lake;
  const arrow::Schema& table_schema = *state.schema;
  const std::string context = "reading the last-value index " + uri;
  TIMELAKE_ASSIGN_OR_RAISE(auto key, KeyOf(state, uri));
  // Indexes are immutable: a decoded one is reused while the table schema
  // is the same (warm `latest` then decodes nothing).
  if (auto cached = CachedIndex(lake, key, table_schema)) return cached;
  auto bytes = GetImmutable(lake, key);
  if (!bytes.ok()) return WithContext(bytes.status(), context);
  auto corrupt = [&](const arrow::Status& st) {
    return MakeError(ErrorKind::kCorrupt, context + ": " + st.message());
  };
  auto reader = parquet::arrow::OpenFile(
      std::make_shared<arrow::io::BufferReader>(*bytes), arrow::default_memory_pool());
  if (!reader.ok()) return corrupt(reader.status());
  auto table = (*reader)->ReadTable();
  if (!table.ok()) return corrupt(table.status());
  auto batch = (*table)->CombineChunksToBatch();
  if (!batch.ok()) return corrupt(batch.status());
  auto aligned = AlignBatch(*NamedById(*batch, table_schema), table_schema);
  if (!aligned.ok()) return corrupt(aligned.status());
  KeepIndex(lake, key, *aligned);
  return *aligned;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadCurrentLvi(
    const TableState& table) {
  const auto* snapshot = table.metadata.CurrentSnapshot();
  if (snapshot == nullptr) return nullptr;
  auto uri = LviUri(*snapshot);
  if (!uri) return nullptr;
  auto& lake = *table.lake;
  if (table.head_last_values != nullptr) {
    // The head's copy holds the same rows as the file it names.
    const std::string key = KeyOf(table, *uri).ValueOr(*uri);
    if (auto cached = CachedIndex(lake, key, *table.schema)) return cached;
    auto aligned =
        AlignBatch(*NamedById(table.head_last_values, *table.schema), *table.schema);
    if (aligned.ok()) {
      KeepIndex(lake, key, *aligned);
      return *aligned;
    }
  }
  return ReadLvi(table, *uri);
}

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
  // Footers for the head object (format/head.h), which inlines them within
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

}  // namespace timelake::internal
