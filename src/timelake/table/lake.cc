// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <future>

#include "timelake/commit/commit.h"
#include "timelake/format/schema.h"
#include "timelake/read/catalog.h"
#include "timelake/table/head.h"
#include "timelake/table/internal.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"
#include "timelake/write/align.h"

namespace timelake {

namespace internal {

namespace {

// Parses "MAJOR.MINOR.PATCH"; missing parts are 0.
std::array<int, 3> ParseSemver(const std::string& text) {
  std::array<int, 3> v{0, 0, 0};
  size_t pos = 0;
  for (int i = 0; i < 3 && pos <= text.size(); ++i) {
    size_t end = text.find('.', pos);
    if (end == std::string::npos) end = text.size();
    try {
      v[i] = std::stoi(text.substr(pos, end - pos));
    } catch (...) {
      v[i] = 0;
    }
    pos = end + 1;
  }
  return v;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> MakeTableState(
    std::shared_ptr<LakeState> lake, const TableName& name, int64_t version,
    std::string metadata_key, format::TableMetadata metadata) {
  auto it = metadata.properties.find(property::kFormatVersion);
  if (it != metadata.properties.end()) {
    const auto theirs = ParseSemver(it->second);
    const auto ours = ParseSemver(std::string(kFormatVersion));
    if (theirs[0] > ours[0]) {
      return Unsupported("table " + name.ToString() + " has Timelake format " +
                         it->second + ", newer than " + std::string(kFormatVersion) +
                         " which this build reads: upgrade Timelake");
    }
  }
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
  // Loads and this lake's own commits are what later queries read.
  if (state->lake != nullptr) state->lake->tables.Remember(*state);
  return std::shared_ptr<const TableState>(std::move(state));
}

namespace {

// The state of `version` from a head object that is current, or nullptr
// when the head is missing, stale or unreadable (the ordinary path then).
std::shared_ptr<const TableState> FromHead(
    const std::shared_ptr<LakeState>& lake, const TableName& name,
    const commit::Version& version,
    const arrow::Result<std::shared_ptr<arrow::Buffer>>& bytes) {
  if (!bytes.ok()) return nullptr;
  const auto& store = *lake->store;
  const std::string uri =
      store.Uri(commit::MetadataPrefix(TableKey(name)) + "/" + kHeadName);
  auto head = DecodeHead((*bytes)->ToString(), uri);
  if (!head.ok() || head->version != version.number) return nullptr;
  auto metadata =
      format::TableMetadata::Parse(head->metadata_json, store.Uri(version.key));
  if (!metadata.ok()) return nullptr;
  auto files = std::make_shared<std::vector<read::LiveFile>>(std::move(head->files));
  for (auto& f : *files) {
    auto key = store.KeyOf(f.data_file.file_path);
    if (!key.ok()) return nullptr;
    f.key = *key;
  }
  auto made =
      MakeTableState(lake, name, version.number, version.key, std::move(*metadata));
  if (!made.ok()) return nullptr;
  // Footers the head carries: for the scans of this lake (read/catalog.cc)
  // and for the heads it writes next.
  for (auto& [file_uri, blob] : head->footers) {
    if (auto key = store.KeyOf(file_uri); key.ok())
      lake->footers.Put(*key, std::move(blob));
  }
  auto state = std::make_shared<TableState>(**made);
  state->head_files = std::move(files);
  state->head_last_values = std::move(head->last_values);
  lake->tables.Remember(*state);
  return state;
}

}  // namespace

arrow::Result<std::shared_ptr<const TableState>> LoadTableState(
    std::shared_ptr<LakeState> lake, const TableName& name) {
  // The head and the listing of metadata/ in parallel: with a current head,
  // that is the only round trip before the data.
  const std::string table_key = TableKey(name);
  auto head = std::async(std::launch::async, [&] {
    return lake->store->Get(commit::MetadataPrefix(table_key) + "/" + kHeadName);
  });
  auto latest = commit::FindLatestVersion(*lake->store, table_key);
  auto head_bytes = head.get();
  TIMELAKE_RETURN_NOT_OK(latest.status());
  if (!*latest) {
    return NotFound("table " + name.ToString() + " not found in " +
                    lake->store->root_url());
  }
  if (auto state = FromHead(lake, name, **latest, head_bytes)) return state;
  auto bytes = lake->store->Get((*latest)->key);
  if (!bytes.ok()) return WithContext(bytes.status(), "loading table " + name.ToString());
  auto metadata = format::TableMetadata::Parse((*bytes)->ToString(),
                                               lake->store->Uri((*latest)->key));
  if (!metadata.ok()) {
    return WithContext(metadata.status(), "loading table " + name.ToString());
  }
  return MakeTableState(std::move(lake), name, (*latest)->number, (*latest)->key,
                        std::move(*metadata));
}

}  // namespace internal

arrow::Result<Lake> Lake::Open(std::string_view url,
                               const std::map<std::string, std::string>& options) {
  TIMELAKE_RETURN_NOT_OK(internal::EnsureCompute());
  auto state = std::make_shared<internal::LakeState>();
  TIMELAKE_ASSIGN_OR_RAISE(state->store, storage::Store::Open(url, options));
  state->clock = internal::DefaultClock();
  return Lake(std::move(state));
}

const std::string& Lake::url() const { return state_->store->root_url(); }

namespace internal {

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
                               commit::FindLatestVersion(store, n + "/" + table));
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

}  // namespace internal

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
  const std::string context = "creating table " + name.ToString();
  auto props = internal::NewTableProperties(options);
  if (!props.ok()) return WithContext(props.status(), context);
  const std::string ingest = options.time_column ? "_ingest_ts" : "";
  auto normalized =
      write::NormalizeSchema(schema, options.time_column, options.series_key, ingest);
  if (!normalized.ok()) return WithContext(normalized.status(), context);
  int last_column_id = 0;
  auto iceberg_schema = format::ArrowToIceberg(**normalized, 0, &last_column_id);
  if (!iceberg_schema.ok()) return WithContext(iceberg_schema.status(), context);

  const std::string table_key = internal::TableKey(name);
  TIMELAKE_ASSIGN_OR_RAISE(auto existing,
                           commit::FindLatestVersion(*state_->store, table_key));
  if (existing) {
    return AlreadyExists(context + ": table already exists at " +
                         state_->store->Uri(table_key));
  }

  const auto now = state_->clock->Now();
  format::TableMetadata m;
  m.format_version = 2;
  m.table_uuid = internal::NewUuidV7(now);
  m.location = state_->store->Uri(table_key);
  m.last_updated_ms = internal::ToMillis(now);
  m.last_column_id = last_column_id;
  m.current_schema_id = 0;
  m.doc["schemas"] = nlohmann::json::array({*iceberg_schema});
  format::PartitionSpec spec;
  spec.spec_id = 0;
  m.last_partition_id = 999;
  nlohmann::json sort_fields = nlohmann::json::array();
  if (options.time_column) {
    auto field_id = [&](const std::string& column) {
      for (const auto& f : (*iceberg_schema)["fields"]) {
        if (f["name"] == column) return f["id"].get<int>();
      }
      return 0;
    };
    const int time_id = field_id(*options.time_column);
    spec.fields.push_back(
        {time_id, 1000,
         *options.time_column + "_" + std::string(ChunkName(options.chunk)),
         std::string(ChunkName(options.chunk))});
    m.last_partition_id = 1000;
    for (const auto& k : options.series_key) {
      sort_fields.push_back({{"source-id", field_id(k)},
                             {"transform", "identity"},
                             {"direction", "asc"},
                             {"null-order", "nulls-first"}});
    }
    sort_fields.push_back({{"source-id", time_id},
                           {"transform", "identity"},
                           {"direction", "asc"},
                           {"null-order", "nulls-first"}});
  }
  m.specs.push_back(spec);
  m.default_spec_id = 0;
  if (sort_fields.empty()) {
    m.doc["sort-orders"] =
        nlohmann::json::array({{{"order-id", 0}, {"fields", nlohmann::json::array()}}});
    m.doc["default-sort-order-id"] = 0;
  } else {
    m.doc["sort-orders"] =
        nlohmann::json::array({{{"order-id", 1}, {"fields", sort_fields}}});
    m.doc["default-sort-order-id"] = 1;
  }
  m.properties = *props;

  TIMELAKE_ASSIGN_OR_RAISE(bool won, commit::TryCommit(*state_->store, table_key, 1, m));
  if (!won) {
    return AlreadyExists(context + ": another writer created it at the same time");
  }
  commit::WriteVersionHintAsync(state_->store, table_key, 1);
  // Re-parse what was written so the handle is exactly the stored version.
  TIMELAKE_ASSIGN_OR_RAISE(auto stored,
                           format::TableMetadata::Parse(m.Serialize(), context));
  TIMELAKE_ASSIGN_OR_RAISE(
      auto table_state,
      internal::MakeTableState(state_, name, 1, commit::VersionKey(table_key, 1),
                               std::move(stored)));
  return Table(std::move(table_state));
}

arrow::Result<Table> Lake::LoadTable(std::string_view name_text) const {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(name_text));
  TIMELAKE_ASSIGN_OR_RAISE(auto state, internal::LoadTableState(state_, name));
  return Table(std::move(state));
}

arrow::Status Lake::DropTable(std::string_view name_text) const {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(name_text));
  const std::string table_key = internal::TableKey(name);
  TIMELAKE_ASSIGN_OR_RAISE(auto latest,
                           commit::FindLatestVersion(*state_->store, table_key));
  if (!latest) return NotFound("dropping table " + name.ToString() + ": table not found");
  state_->tables.Forget(name);
  commit::WaitForBackgroundWrites();
  // Metadata first, so that a crash part-way leaves no half-table behind,
  // only unreferenced data files.
  TIMELAKE_ASSIGN_OR_RAISE(
      auto metadata, state_->store->List(commit::MetadataPrefix(table_key) + "/", false));
  for (const auto& obj : metadata.objects) {
    TIMELAKE_RETURN_NOT_OK(state_->store->Delete(obj.key));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto all, state_->store->List(table_key + "/", false));
  for (const auto& obj : all.objects)
    TIMELAKE_RETURN_NOT_OK(state_->store->Delete(obj.key));
  return arrow::Status::OK();
}

void Flush() { commit::WaitForBackgroundWrites(); }

}  // namespace timelake
