// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <future>

#include "timelake/commit/commit.h"
#include "timelake/format/schema.h"
#include "timelake/state/state.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"
#include "timelake/versions/versions.h"
#include "timelake/write/align.h"

namespace timelake {

arrow::Result<Lake> Lake::Open(std::string_view url,
                               const std::map<std::string, std::string>& options) {
  TIMELAKE_RETURN_NOT_OK(internal::EnsureCompute());
  auto state = std::make_shared<internal::LakeState>();
  TIMELAKE_ASSIGN_OR_RAISE(state->store, storage::Store::Open(url, options));
  state->clock = internal::DefaultClock();
  return Lake(std::move(state));
}

const std::string& Lake::url() const { return state_->store->root_url(); }

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
  (*props)[internal::property::kFormatVersion] = state_->format_version;
  const std::string ingest = options.time_column ? "_ingest_ts" : "";
  auto normalized =
      write::NormalizeSchema(schema, options.time_column, options.series_key, ingest);
  if (!normalized.ok()) return WithContext(normalized.status(), context);
  int last_column_id = 0;
  auto iceberg_schema = format::ArrowToIceberg(**normalized, 0, &last_column_id);
  if (!iceberg_schema.ok()) return WithContext(iceberg_schema.status(), context);

  const std::string table_key = internal::TableKey(name);
  TIMELAKE_ASSIGN_OR_RAISE(auto existing,
                           versions::FindLatestVersion(*state_->store, table_key));
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

  TIMELAKE_ASSIGN_OR_RAISE(bool won,
                           versions::TryCommit(*state_->store, table_key, 1, m));
  if (!won) {
    return AlreadyExists(context + ": another writer created it at the same time");
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto table_state, commit::Publish(state_, name, 1, m));
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
                           versions::FindLatestVersion(*state_->store, table_key));
  if (!latest) return NotFound("dropping table " + name.ToString() + ": table not found");
  state_->tables.Forget(name);
  versions::WaitForBackgroundWrites();
  // Metadata first, so that a crash part-way leaves no half-table behind,
  // only unreferenced data files.
  TIMELAKE_ASSIGN_OR_RAISE(
      auto metadata,
      state_->store->List(versions::MetadataPrefix(table_key) + "/", false));
  for (const auto& obj : metadata.objects) {
    TIMELAKE_RETURN_NOT_OK(state_->store->Delete(obj.key));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto all, state_->store->List(table_key + "/", false));
  for (const auto& obj : all.objects)
    TIMELAKE_RETURN_NOT_OK(state_->store->Delete(obj.key));
  return arrow::Status::OK();
}

void Flush() { versions::WaitForBackgroundWrites(); }

}  // namespace timelake
