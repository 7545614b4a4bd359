// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/commit/tables.h"

#include "timelake/commit/commit.h"
#include "timelake/format/schema.h"
#include "timelake/settings/contract.h"
#include "timelake/util/uuid.h"
#include "timelake/versions/versions.h"
#include "timelake/write/align.h"

namespace timelake::commit {

arrow::Result<std::shared_ptr<const internal::TableState>> CreateTable(
    std::shared_ptr<internal::LakeState> lake, const TableName& name,
    const arrow::Schema& schema, const TableOptions& options,
    const std::string& ingest_column, const std::map<std::string, std::string>& managed) {
  const std::string context = "creating table " + name.ToString();
  auto props = internal::NewTableProperties(options);
  if (!props.ok()) return WithContext(props.status(), context);
  if (ingest_column.empty()) props->erase(internal::property::kIngestTimeColumn);
  (*props)[internal::property::kFormatVersion] = lake->format_version;
  for (const auto& [key, value] : managed) (*props)[key] = value;
  const std::string ingest = options.time_column ? ingest_column : "";
  auto normalized =
      write::NormalizeSchema(schema, options.time_column, options.series_key, ingest);
  if (!normalized.ok()) return WithContext(normalized.status(), context);
  int last_column_id = 0;
  auto iceberg_schema = format::ArrowToIceberg(**normalized, 0, &last_column_id);
  if (!iceberg_schema.ok()) return WithContext(iceberg_schema.status(), context);

  const std::string table_key = internal::TableKey(name);
  TIMELAKE_ASSIGN_OR_RAISE(auto existing,
                           versions::FindLatestVersion(*lake->store, table_key));
  if (existing) {
    return AlreadyExists(context + ": table already exists at " +
                         lake->store->Uri(table_key));
  }

  const auto now = lake->clock->Now();
  format::TableMetadata m;
  m.format_version = 2;
  m.table_uuid = internal::NewUuidV7(now);
  m.location = lake->store->Uri(table_key);
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

  TIMELAKE_ASSIGN_OR_RAISE(bool won, versions::TryCommit(*lake->store, table_key, 1, m));
  if (!won) {
    return AlreadyExists(context + ": another writer created it at the same time");
  }
  return Publish(lake, name, 1, m);
}

arrow::Status DropTable(const std::shared_ptr<internal::LakeState>& lake,
                        const TableName& name) {
  const std::string table_key = internal::TableKey(name);
  TIMELAKE_ASSIGN_OR_RAISE(auto latest,
                           versions::FindLatestVersion(*lake->store, table_key));
  if (!latest) return NotFound("dropping table " + name.ToString() + ": table not found");
  lake->tables.Forget(name);
  versions::WaitForBackgroundWrites();
  // Metadata first, so that a crash part-way leaves no half-table behind,
  // only unreferenced data files.
  TIMELAKE_ASSIGN_OR_RAISE(
      auto metadata, lake->store->List(versions::MetadataPrefix(table_key) + "/", false));
  for (const auto& obj : metadata.objects) {
    TIMELAKE_RETURN_NOT_OK(lake->store->Delete(obj.key));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto all, lake->store->List(table_key + "/", false));
  for (const auto& obj : all.objects)
    TIMELAKE_RETURN_NOT_OK(lake->store->Delete(obj.key));
  return arrow::Status::OK();
}

}  // namespace timelake::commit
