// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/catalog.h"

#include <cstdio>
#include <cstdlib>

#include <arrow/c/bridge.h>
#include <nlohmann/json.hpp>

#include "timelake/format/manifest.h"
#include "timelake/read/prune.h"

namespace timelake::read {

namespace {

using nlohmann::json;

constexpr int kFound = 0;
constexpr int kNotFoundCode = 1;
constexpr int kErrorCode = 2;

struct CatalogContext {
  std::shared_ptr<internal::LakeState> lake;
};

bool TraceScans() {
  static const bool on = [] {
    const char* v = std::getenv("TIMELAKE_TRACE");
    return v != nullptr && std::string_view(v).find("scan") != std::string_view::npos;
  }();
  return on;
}

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

void Write(TlSink* sink, const std::string& text) {
  tl_sink_write(sink, text.data(), text.size());
}

int Fail(TlSink* sink, const arrow::Status& st) {
  Write(sink, st.message());
  return kErrorCode;
}

arrow::Result<std::shared_ptr<const internal::TableState>> Load(CatalogContext* ctx,
                                                                const char* schema,
                                                                const char* table) {
  TIMELAKE_ASSIGN_OR_RAISE(
      auto name, TableName::Parse(std::string(schema) + "." + std::string(table)));
  return internal::LoadTableState(ctx->lake, name);
}

}  // namespace

arrow::Result<std::vector<LiveFile>> ListLiveFiles(const internal::TableState& table) {
  std::vector<LiveFile> out;
  const auto* snapshot = table.metadata.CurrentSnapshot();
  if (snapshot == nullptr) return out;
  const auto& store = *table.lake->store;
  const std::string context = "planning a scan of " + table.name.ToString() +
                              " snapshot " + std::to_string(snapshot->snapshot_id);
  TIMELAKE_ASSIGN_OR_RAISE(auto list_key, store.KeyOf(snapshot->manifest_list));
  auto list_bytes = store.Get(list_key);
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
    TIMELAKE_ASSIGN_OR_RAISE(auto key, store.KeyOf(m.manifest_path));
    auto bytes = store.Get(key);
    if (!bytes.ok()) return WithContext(bytes.status(), context);
    auto contents = format::ReadManifest(AsView(**bytes));
    if (!contents.ok()) {
      return WithContext(contents.status(), context + ": manifest " + m.manifest_path);
    }
    for (const auto& e : contents->entries) {
      if (e.status == 2) continue;  // DELETED
      LiveFile f;
      TIMELAKE_ASSIGN_OR_RAISE(f.key, store.KeyOf(e.data_file.file_path));
      f.sequence_number = e.sequence_number ? e.sequence_number : m.sequence_number;
      f.data_file = e.data_file;
      out.push_back(std::move(f));
    }
  }
  return out;
}

TlCatalogCallbacks MakeCatalogCallbacks(std::shared_ptr<internal::LakeState> lake) {
  TlCatalogCallbacks cb{};
  cb.ctx = new CatalogContext{std::move(lake)};
  cb.list_schemas = [](void* raw, TlSink* out) -> int {
    auto* ctx = static_cast<CatalogContext*>(raw);
    auto tables = internal::ListNamespacesOf(*ctx->lake);
    if (!tables.ok()) return Fail(out, tables.status());
    json names = json::array({std::string(kDefaultNamespace)});
    for (const auto& n : *tables) {
      if (n != kDefaultNamespace) names.push_back(n);
    }
    Write(out, names.dump());
    return kFound;
  };
  cb.list_tables = [](void* raw, const char* schema, TlSink* out) -> int {
    auto* ctx = static_cast<CatalogContext*>(raw);
    if (!ValidateNamePart(schema, "namespace").ok()) {
      Write(out, "[]");
      return kFound;
    }
    auto tables = internal::ListTablesOf(*ctx->lake, schema);
    if (!tables.ok()) return Fail(out, tables.status());
    json names = json::array();
    for (const auto& t : *tables) names.push_back(t.name());
    Write(out, names.dump());
    return kFound;
  };
  cb.table_schema = [](void* raw, const char* schema, const char* table,
                       TlSink* out) -> int {
    auto state = Load(static_cast<CatalogContext*>(raw), schema, table);
    if (!state.ok()) {
      const auto kind = KindOf(state.status());
      if (kind == ErrorKind::kNotFound || kind == ErrorKind::kInvalid)
        return kNotFoundCode;
      return Fail(out, state.status());
    }
    struct ArrowSchema c_schema;
    auto st = arrow::ExportSchema(*(*state)->schema, &c_schema);
    if (!st.ok()) return Fail(out, st);
    tl_sink_set_schema(out, &c_schema);
    return kFound;
  };
  cb.plan_scan = [](void* raw, const char* schema, const char* table, const char* request,
                    TlSink* out) -> int {
    auto state = Load(static_cast<CatalogContext*>(raw), schema, table);
    if (!state.ok()) return Fail(out, state.status());
    auto files = ListLiveFiles(**state);
    if (!files.ok()) return Fail(out, files.status());
    std::vector<Filter> filters;
    try {
      filters = ParseFilters(json::parse(request ? request : "{}"));
    } catch (const json::exception&) {
      // A request we cannot read prunes nothing; the scan stays correct.
    }
    json list = json::array();
    size_t pruned = 0;
    for (const auto& f : *files) {
      if (!MayMatch(f.data_file, filters, *(*state)->schema)) {
        ++pruned;
        continue;
      }
      list.push_back({{"path", f.key}, {"size", f.data_file.file_size_in_bytes}});
    }
    if (TraceScans()) {
      std::fprintf(stderr, "timelake scan: %s.%s: %zu live files, %zu pruned, %zu read\n",
                   schema, table, files->size(), pruned, files->size() - pruned);
    }
    Write(out, json{{"files", list}}.dump());
    return kFound;
  };
  cb.release = [](void* raw) { delete static_cast<CatalogContext*>(raw); };
  return cb;
}

}  // namespace timelake::read
