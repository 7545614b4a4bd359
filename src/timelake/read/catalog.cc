// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/catalog.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include <arrow/builder.h>
#include <arrow/c/bridge.h>
#include <arrow/util/key_value_metadata.h>
#include <nlohmann/json.hpp>

#include "timelake/format/bounds.h"
#include "timelake/format/manifest.h"
#include "timelake/format/schema.h"
#include "timelake/read/prune.h"
#include "timelake/read/rollups.h"
#include "timelake/settings.h"
#include "timelake/settings/contract.h"
#include "timelake/write/lvi.h"

namespace timelake::read {

namespace {

using nlohmann::json;

constexpr int kFound = 0;
constexpr int kNotFoundCode = 1;
constexpr int kErrorCode = 2;

struct CatalogContext {
  std::shared_ptr<internal::LakeState> lake;
  std::shared_ptr<ScanLog> log;
  std::shared_ptr<const PinnedScan> pinned;
  std::shared_ptr<const internal::TableState> version;
  std::shared_ptr<StatementVersions> statement;
  // The versions this session's callbacks loaded, by table: the lake's
  // table cache entry they came from (kept without its lake) and the state
  // made from it. Every query asks for its tables twice (schema, then
  // scan); while the cache entry is the same, the state is reused instead
  // of copied again.
  struct Loaded {
    std::shared_ptr<const internal::TableState> cached, state;
  };
  std::mutex mu;
  std::map<std::string, Loaded> loaded;
};

bool TraceScans() {
  static const bool on = [] {
    const char* v = std::getenv("TIMELAKE_TRACE");
    return v != nullptr && std::string_view(v).find("scan") != std::string_view::npos;
  }();
  return on;
}

void Write(TlSink* sink, const std::string& text) {
  tl_sink_write(sink, text.data(), text.size());
}

// Fails a callback with `st`'s message and kind.
int Fail(TlSink* sink, const arrow::Status& st) {
  Write(sink, st.message());
  tl_sink_set_code(sink, storage::ToPlatformCode(st));
  return kErrorCode;
}

// A plan_scan request, parsed once per callback. Text that does not parse
// is a request without members: it prunes nothing, and the scan stays
// correct.
json ParseRequest(std::string_view request) {
  json parsed = json::parse(request, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() ? parsed : json::object();
}

// The `member` of a plan_scan request, if it has one.
const json* RequestMember(const json& request, const char* member) {
  auto it = request.find(member);
  return it == request.end() ? nullptr : &*it;
}

// The session settings of a plan_scan request.
std::map<std::string, std::string> RequestSettings(const json& request) {
  std::map<std::string, std::string> out;
  const json* settings = RequestMember(request, "settings");
  if (settings == nullptr || !settings->is_object()) return out;
  for (const auto& [k, v] : settings->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

// The newest version of `name` as the lake's table cache allows.
arrow::Result<std::shared_ptr<const internal::TableState>> LoadNewest(
    CatalogContext* ctx, const TableName& name) {
  if (auto cached = ctx->lake->tables.Fresh(name, ctx->lake->clock->Now())) {
    std::lock_guard<std::mutex> lock(ctx->mu);
    auto& slot = ctx->loaded[name.ToString()];
    if (slot.cached != cached) {
      auto state = std::make_shared<internal::TableState>(*cached);
      state->lake = ctx->lake;
      slot = {std::move(cached), std::move(state)};
    }
    return slot.state;
  }
  auto state = internal::LoadTableStateForRead(ctx->lake, name);
  // A version loaded here is now the cache entry: the scan's request for it
  // reuses the state instead of copying the entry.
  if (state.ok()) {
    auto cached = ctx->lake->tables.Fresh(name, ctx->lake->clock->Now());
    if (cached != nullptr && cached->version == (*state)->version) {
      std::lock_guard<std::mutex> lock(ctx->mu);
      ctx->loaded[name.ToString()] = {std::move(cached), *state};
    }
  }
  return state;
}

arrow::Result<std::shared_ptr<const internal::TableState>> Load(CatalogContext* ctx,
                                                                const char* schema,
                                                                const char* table) {
  TIMELAKE_ASSIGN_OR_RAISE(
      auto name, TableName::Parse(std::string(schema) + "." + std::string(table)));
  if (ctx->pinned != nullptr && ctx->pinned->table->name == name) {
    return ctx->pinned->table;
  }
  if (ctx->version != nullptr && ctx->version->name == name) return ctx->version;
  if (ctx->statement == nullptr) return LoadNewest(ctx, name);
  if (auto same = ctx->statement->Get(name.ToString())) return same;
  auto state = LoadNewest(ctx, name);
  if (state.ok()) ctx->statement->Put(*state);
  return state;
}

// The snapshot a plan_scan request reads (time travel), if it names one.
std::optional<int64_t> RequestedSnapshot(const json& request) {
  const json* id = RequestMember(request, "snapshot_id");
  if (id == nullptr || !id->is_number_integer()) return std::nullopt;
  return id->get<int64_t>();
}

// The snapshots of a table as the SQL function snapshots(table) lists them.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> SnapshotRows(
    const internal::TableState& table) {
  arrow::Int64Builder id, parent, seq, rows, files;
  arrow::TimestampBuilder at(arrow::timestamp(arrow::TimeUnit::MICRO, format::kUtcZone),
                             arrow::default_memory_pool());
  arrow::StringBuilder operation, batch_id;
  arrow::BooleanBuilder current, in_history;
  for (const auto& s : internal::SnapshotsOf(table.metadata)) {
    TIMELAKE_RETURN_NOT_OK(id.Append(s.snapshot_id));
    TIMELAKE_RETURN_NOT_OK(s.parent_id ? parent.Append(*s.parent_id)
                                       : parent.AppendNull());
    TIMELAKE_RETURN_NOT_OK(seq.Append(s.sequence_number));
    TIMELAKE_RETURN_NOT_OK(at.Append(s.timestamp_ms * 1000));
    TIMELAKE_RETURN_NOT_OK(operation.Append(s.operation));
    TIMELAKE_RETURN_NOT_OK(rows.Append(s.rows));
    TIMELAKE_RETURN_NOT_OK(files.Append(s.files));
    TIMELAKE_RETURN_NOT_OK(s.batch_id ? batch_id.Append(*s.batch_id)
                                      : batch_id.AppendNull());
    TIMELAKE_RETURN_NOT_OK(current.Append(s.current));
    TIMELAKE_RETURN_NOT_OK(in_history.Append(s.in_history));
  }
  std::vector<std::shared_ptr<arrow::Array>> columns(10);
  TIMELAKE_RETURN_NOT_OK(id.Finish(&columns[0]));
  TIMELAKE_RETURN_NOT_OK(parent.Finish(&columns[1]));
  TIMELAKE_RETURN_NOT_OK(seq.Finish(&columns[2]));
  TIMELAKE_RETURN_NOT_OK(at.Finish(&columns[3]));
  TIMELAKE_RETURN_NOT_OK(operation.Finish(&columns[4]));
  TIMELAKE_RETURN_NOT_OK(rows.Finish(&columns[5]));
  TIMELAKE_RETURN_NOT_OK(files.Finish(&columns[6]));
  TIMELAKE_RETURN_NOT_OK(batch_id.Finish(&columns[7]));
  TIMELAKE_RETURN_NOT_OK(current.Finish(&columns[8]));
  TIMELAKE_RETURN_NOT_OK(in_history.Finish(&columns[9]));
  auto schema = arrow::schema({
      arrow::field("snapshot_id", arrow::int64(), false),
      arrow::field("parent_id", arrow::int64(), true),
      arrow::field("sequence_number", arrow::int64(), false),
      arrow::field("committed_at", columns[3]->type(), false),
      arrow::field("operation", arrow::utf8(), false),
      arrow::field("rows", arrow::int64(), false),
      arrow::field("files", arrow::int64(), false),
      arrow::field("batch_id", arrow::utf8(), true),
      arrow::field("current", arrow::boolean(), false),
      arrow::field("in_history", arrow::boolean(), false),
  });
  const int64_t n = columns[0]->length();
  return arrow::RecordBatch::Make(std::move(schema), n, std::move(columns));
}

}  // namespace

arrow::Status CheckSessionSetting(std::string_view name, std::string_view value) {
  const settings::Setting* s = settings::Find(name);
  if (s == nullptr) {
    return Invalid("unknown setting timelake." + std::string(name) +
                   " (`timelake settings` lists them)");
  }
  if (!(s->levels & settings::kSession)) {
    return Invalid("setting " + s->SqlName() + " cannot be set for a session (levels: " +
                   settings::LevelNames(s->levels) + ")");
  }
  return settings::Validate(*s, value);
}

std::string ScanStats::ToString() const {
  return "timelake scan: " + table + ": " + std::to_string(live) + " live files, " +
         std::to_string(pruned) + " pruned, " + std::to_string(read) + " read, " +
         std::to_string(merged) + " merged for dedup";
}

void ScanLog::Add(ScanStats stats) {
  std::lock_guard<std::mutex> lock(mu_);
  scans_.push_back(std::move(stats));
}

std::vector<ScanStats> ScanLog::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(scans_, {});
}

void StatementVersions::Put(std::shared_ptr<const internal::TableState> table) {
  std::lock_guard<std::mutex> lock(mu_);
  tables_.emplace(table->name.ToString(), std::move(table));
}

std::shared_ptr<const internal::TableState> StatementVersions::Get(
    const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tables_.find(name);
  return it == tables_.end() ? nullptr : it->second;
}

void StatementVersions::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  tables_.clear();
}

namespace {

// The rows that answer a "last_values" request: the current snapshot's
// last-value index when it is the newest row per `partition_by` by
// `order_by` (the table's series key and time column), otherwise nullptr.
// An index that cannot be read is no answer either: the ordinary scan
// answers instead.
std::shared_ptr<arrow::RecordBatch> LastValueRows(const internal::TableState& table,
                                                  const json& want) {
  const auto& contract = table.contract;
  if (!contract.time_column || !want.is_object() || !want.contains("order_by") ||
      want["order_by"] != *contract.time_column || !want.contains("partition_by") ||
      !want["partition_by"].is_array()) {
    return nullptr;
  }
  std::vector<std::string> partition_by;
  for (const auto& c : want["partition_by"]) {
    if (!c.is_string()) return nullptr;
    partition_by.push_back(c.get<std::string>());
  }
  std::vector<std::string> series = contract.series_key;
  std::sort(partition_by.begin(), partition_by.end());
  std::sort(series.begin(), series.end());
  if (series.empty() || partition_by != series) return nullptr;
  // From the head when it holds them, else from the index file, decoded
  // once per index and lake (LakeState::indexes), so that DataFusion reads
  // nothing more.
  return internal::ReadCurrentLvi(table).ValueOr(nullptr);
}

// Hands the footers the lake holds of `files` to the engine's footer cache,
// so that DataFusion reads none of them from storage. A blob that does not
// parse is dropped; DataFusion then reads that footer from the file.
void ProvideFooters(internal::LakeState& lake,
                    const std::vector<const format::LiveFile*>& files) {
  for (const format::LiveFile* f : files) {
    auto blob = lake.footers.Get(f->key);
    if (blob == nullptr) continue;
    const auto size = static_cast<uint64_t>(f->data_file.file_size_in_bytes);
    if (!lake.store->RememberFooter(f->key, size, *blob).ok()) lake.footers.Erase(f->key);
  }
}

// How the files of a plan that share a group are merged (the "dedup.*"
// metadata of a plan batch, timelake_platform.h).
struct MergeSpec {
  std::vector<std::string> keys;
  std::vector<std::string> order;
  bool keep_all = false;
};

MergeSpec MergeSpecOf(const internal::TableState& table, bool keep_all) {
  const auto& contract = table.contract;
  MergeSpec spec;
  spec.keys = contract.series_key;
  spec.keys.push_back(*contract.time_column);
  if (!contract.ingest_column.empty() &&
      table.schema->GetFieldIndex(contract.ingest_column) >= 0) {
    spec.order.push_back(contract.ingest_column);
  }
  spec.keep_all = keep_all;
  return spec;
}

// The columns of the table's default sort order, as far as they are plain
// ascending, nulls-first columns (the order a data file flagged "sorted"
// holds; the engine merges such files instead of sorting them).
std::vector<std::string> SortColumns(const internal::TableState& table) {
  std::vector<std::string> columns;
  const auto& doc = table.metadata.doc;
  const int64_t id = doc.value("default-sort-order-id", 0);
  if (id == 0 || !doc.contains("sort-orders") || !doc["sort-orders"].is_array()) {
    return columns;
  }
  for (const auto& order : doc["sort-orders"]) {
    if (!order.is_object() || order.value("order-id", int64_t{-1}) != id ||
        !order.contains("fields") || !order["fields"].is_array()) {
      continue;
    }
    for (const auto& f : order["fields"]) {
      if (!f.is_object() || f.value("transform", "") != "identity" ||
          f.value("direction", "") != "asc" ||
          f.value("null-order", "") != "nulls-first" || !f.contains("source-id") ||
          !f["source-id"].is_number_integer()) {
        break;
      }
      const int source = f["source-id"].get<int>();
      std::string name;
      for (const auto& field : table.schema->fields()) {
        if (format::FieldId(*field) == source) name = field->name();
      }
      if (name.empty()) break;
      columns.push_back(std::move(name));
    }
  }
  return columns;
}

// The plan_scan answer: one row per file to read, in `files`' order, with the
// merge group of each (`group[i]` < 0: read as it is). `spec` is set when a
// group exists.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlanBatch(
    const internal::TableState& table, const std::vector<const format::LiveFile*>& files,
    const std::vector<int32_t>& group, const MergeSpec* spec) {
  const int64_t sort_order = table.metadata.doc.value("default-sort-order-id", 0);
  arrow::StringBuilder path;
  arrow::Int64Builder size;
  arrow::Int64Builder seq;
  arrow::BooleanBuilder sorted;
  arrow::Int32Builder groups;
  arrow::Int64Builder rows;
  for (size_t i = 0; i < files.size(); ++i) {
    const format::LiveFile& f = *files[i];
    TIMELAKE_RETURN_NOT_OK(path.Append(f.key));
    TIMELAKE_RETURN_NOT_OK(size.Append(f.data_file.file_size_in_bytes));
    TIMELAKE_RETURN_NOT_OK(seq.Append(f.sequence_number.value_or(0)));
    TIMELAKE_RETURN_NOT_OK(
        sorted.Append(sort_order != 0 && f.data_file.sort_order_id == sort_order));
    TIMELAKE_RETURN_NOT_OK(group[i] < 0 ? groups.AppendNull() : groups.Append(group[i]));
    TIMELAKE_RETURN_NOT_OK(f.data_file.record_count > 0
                               ? rows.Append(f.data_file.record_count)
                               : rows.AppendNull());
  }
  std::vector<std::shared_ptr<arrow::Array>> columns(6);
  TIMELAKE_RETURN_NOT_OK(path.Finish(&columns[0]));
  TIMELAKE_RETURN_NOT_OK(size.Finish(&columns[1]));
  TIMELAKE_RETURN_NOT_OK(seq.Finish(&columns[2]));
  TIMELAKE_RETURN_NOT_OK(sorted.Finish(&columns[3]));
  TIMELAKE_RETURN_NOT_OK(groups.Finish(&columns[4]));
  TIMELAKE_RETURN_NOT_OK(rows.Finish(&columns[5]));
  auto metadata = std::make_shared<arrow::KeyValueMetadata>();
  metadata->Append("page.rows", std::to_string(table.contract.data_page_rows));
  const auto sort_columns = SortColumns(table);
  for (size_t i = 0; i < sort_columns.size(); ++i) {
    metadata->Append("sort." + std::to_string(i), sort_columns[i]);
  }
  if (spec != nullptr) {
    for (size_t i = 0; i < spec->keys.size(); ++i) {
      metadata->Append("dedup.key." + std::to_string(i), spec->keys[i]);
    }
    for (size_t i = 0; i < spec->order.size(); ++i) {
      metadata->Append("dedup.order." + std::to_string(i), spec->order[i]);
    }
    metadata->Append("dedup.keep", spec->keep_all ? "all" : "last");
  }
  auto schema = arrow::schema({arrow::field("path", arrow::utf8(), false),
                               arrow::field("size", arrow::int64(), false),
                               arrow::field("seq", arrow::int64(), false),
                               arrow::field("sorted", arrow::boolean(), false),
                               arrow::field("group", arrow::int32(), true),
                               arrow::field("rows", arrow::int64(), true)},
                              std::move(metadata));
  return arrow::RecordBatch::Make(std::move(schema), static_cast<int64_t>(files.size()),
                                  std::move(columns));
}

// PlanScan of a request parsed by ParseRequest.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlanParsedScan(
    const internal::TableState& table, const json& request, ScanStats* stats) {
  TIMELAKE_ASSIGN_OR_RAISE(const auto live, internal::SharedLiveFiles(table));
  const std::vector<format::LiveFile>& files = *live;
  // The session's SET values, then the table's properties, then defaults.
  const std::map<std::string, std::string> session = RequestSettings(request);
  const settings::Resolver resolve(nullptr, &session, &table.metadata.properties);
  const auto& contract = table.contract;
  const std::string pushdown = resolve.Get("filter-pushdown").value_or("auto");
  TIMELAKE_ASSIGN_OR_RAISE(const bool in_lists, resolve.GetBool("in-list-pruning"));
  TIMELAKE_ASSIGN_OR_RAISE(const bool read_dedup, resolve.GetBool("read-dedup"));
  const bool dedup = contract.dedup && read_dedup && contract.time_column.has_value();

  std::vector<Filter> filters;
  if (pushdown != "false") filters = ParseFilters(request);
  std::erase_if(filters, [&](const Filter& f) {
    if (!in_lists && f.op == Filter::Op::kIn) return true;
    // With dedup on read, a file may hold the only older version of a row
    // whose newer version is elsewhere: pruning on a value column could drop
    // the newer version and resurrect the older one. Keys are safe.
    if (dedup) {
      for (const auto& column : f.Columns()) {
        const bool key = column == *contract.time_column ||
                         std::find(contract.series_key.begin(), contract.series_key.end(),
                                   column) != contract.series_key.end();
        if (!key) return true;
      }
    }
    return false;
  });

  size_t pruned = 0;
  std::vector<const format::LiveFile*> survivors;
  for (const auto& f : files) {
    if (!MayMatch(f.data_file, filters, *table.schema)) {
      ++pruned;
      continue;
    }
    survivors.push_back(&f);
  }
  // Newest data first: with ORDER BY time DESC LIMIT k, DataFusion's top-k
  // filter then skips the row groups of older files once it holds k rows.
  TIMELAKE_ASSIGN_OR_RAISE(const bool newest_first, resolve.GetBool("newest-first"));
  if (newest_first && contract.time_column) {
    const auto field = table.schema->GetFieldByName(*contract.time_column);
    const auto id = field ? format::FieldId(*field) : std::nullopt;
    auto newest = [&](const format::LiveFile* f) -> int64_t {
      if (!id) return 0;
      auto it = f->data_file.upper_bounds.find(*id);
      if (it == f->data_file.upper_bounds.end()) return INT64_MAX;  // unknown: read early
      auto v = format::DecodeInt64(it->second);
      return v.ok() ? *v : INT64_MAX;
    };
    std::stable_sort(survivors.begin(), survivors.end(),
                     [&](const format::LiveFile* a, const format::LiveFile* b) {
                       return newest(a) > newest(b);
                     });
  }
  ProvideFooters(*table.lake, survivors);
  std::vector<int32_t> group(survivors.size(), -1);
  size_t merged = 0;
  if (dedup && survivors.size() > 1) {
    std::vector<const format::DataFile*> kept;
    for (const format::LiveFile* f : survivors) kept.push_back(&f->data_file);
    auto groups =
        KeyOverlapGroups(kept, contract.series_key, *contract.time_column, *table.schema);
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t i : groups[g]) group[i] = static_cast<int32_t>(g);
      merged += groups[g].size();
    }
  }
  const MergeSpec spec =
      merged > 0 ? MergeSpecOf(table, /*keep_all=*/false) : MergeSpec{};
  TIMELAKE_ASSIGN_OR_RAISE(
      auto batch, PlanBatch(table, survivors, group, merged > 0 ? &spec : nullptr));
  auto metadata = batch->schema()->HasMetadata()
                      ? batch->schema()->metadata()->Copy()
                      : std::make_shared<arrow::KeyValueMetadata>();
  metadata->Append("filter.pushdown", pushdown);
  batch = batch->ReplaceSchemaMetadata(metadata);
  ScanStats scan;
  scan.table = table.name.ToString();
  scan.live = files.size();
  scan.pruned = pruned;
  scan.read = files.size() - pruned;
  scan.merged = merged;
  for (const format::LiveFile* f : survivors) scan.keys.push_back(f->key);
  if (TraceScans()) std::fprintf(stderr, "%s\n", scan.ToString().c_str());
  if (stats != nullptr) *stats = std::move(scan);
  return batch;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlanScan(
    const internal::TableState& table, std::string_view request_json, ScanStats* stats) {
  return PlanParsedScan(table, ParseRequest(request_json), stats);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlanPinnedScan(
    const PinnedScan& pinned) {
  const auto& table = *pinned.table;
  std::vector<const format::LiveFile*> files;
  for (const auto& f : pinned.files) files.push_back(&f);
  ProvideFooters(*table.lake, files);
  // One group of every file, merged in (series…, time, insertion, commit)
  // order; tables without a time column are read as they are.
  const bool merge = table.contract.time_column && !files.empty();
  std::vector<int32_t> group(files.size(), merge ? 0 : -1);
  const MergeSpec spec =
      merge ? MergeSpecOf(table, /*keep_all=*/!pinned.dedup) : MergeSpec{};
  return PlanBatch(table, files, group, merge ? &spec : nullptr);
}

TlCatalogCallbacks MakeCatalogCallbacks(
    std::shared_ptr<internal::LakeState> lake, std::shared_ptr<ScanLog> log,
    std::shared_ptr<const PinnedScan> pinned,
    std::shared_ptr<const internal::TableState> version,
    std::shared_ptr<StatementVersions> statement) {
  TlCatalogCallbacks cb{};
  auto* context = new CatalogContext;
  context->lake = std::move(lake);
  context->log = std::move(log);
  context->pinned = std::move(pinned);
  context->version = std::move(version);
  context->statement = std::move(statement);
  cb.ctx = context;
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
    // For the engine (it takes them off): the time column, whether GROUP BY
    // queries should ask for rollups, and the table's setting of how
    // time-weighted means are planned (only when not the default "auto", so
    // that the session's setting or auto applies).
    const auto& table_state = **state;
    std::vector<std::string> keys, values;
    if (table_state.contract.time_column) {
      keys.push_back("timelake.time-column");
      values.push_back(*table_state.contract.time_column);
    }
    auto rollups = table_state.metadata.properties.find(internal::property::kRollups);
    if (rollups != table_state.metadata.properties.end() && !rollups->second.empty()) {
      keys.push_back("timelake.rollups");
      values.push_back(rollups->second);
    }
    const settings::Resolver table_level(nullptr, nullptr,
                                         &table_state.metadata.properties);
    if (auto mode = table_level.Get("time-weighted-mean"); mode && *mode != "auto") {
      keys.push_back("timelake.time_weighted_mean");
      values.push_back(*mode);
    }
    auto arrow_schema = table_state.schema;
    if (!keys.empty()) {
      arrow_schema = arrow_schema->WithMetadata(arrow::key_value_metadata(keys, values));
    }
    struct ArrowSchema c_schema;
    auto st = arrow::ExportSchema(*arrow_schema, &c_schema);
    if (!st.ok()) return Fail(out, st);
    tl_sink_set_schema(out, &c_schema);
    return kFound;
  };
  cb.plan_scan = [](void* raw, const char* schema, const char* table, const char* request,
                    TlSink* out) -> int {
    auto* ctx = static_cast<CatalogContext*>(raw);
    auto state = Load(ctx, schema, table);
    if (!state.ok()) return Fail(out, state.status());
    const json parsed = ParseRequest(request ? request : "{}");
    if (auto snapshot = RequestedSnapshot(parsed)) {
      // Time travel: the same planning over the files of that snapshot.
      state = internal::TableStateAt(**state, *snapshot);
      if (!state.ok()) return Fail(out, state.status());
    }
    // Both answers are rows moved to the engine as Arrow C data; an index
    // batch's buffers stay shared with the lake's cache (no copy).
    auto send = [out](const std::shared_ptr<arrow::RecordBatch>& rows) -> int {
      struct ArrowSchema c_schema;
      struct ArrowArray c_array;
      auto st = arrow::ExportRecordBatch(*rows, &c_array, &c_schema);
      if (!st.ok()) return Fail(out, st);
      tl_sink_set_batch(out, &c_schema, &c_array);
      return kFound;
    };
    if (ctx->pinned != nullptr && *state == ctx->pinned->table) {
      auto plan = PlanPinnedScan(*ctx->pinned);
      if (!plan.ok()) return Fail(out, plan.status());
      return send(*plan);
    }
    if (RequestMember(parsed, "rollups")) {
      Write(out, RollupsAnswer(**state, RequestSettings(parsed)));
      return kFound;
    }
    if (const json* want = RequestMember(parsed, "last_values")) {
      // No batch: the index does not answer this request.
      auto rows = LastValueRows(**state, *want);
      return rows == nullptr ? kFound : send(rows);
    }
    ScanStats stats;
    auto plan = PlanParsedScan(**state, parsed, &stats);
    if (!plan.ok()) return Fail(out, plan.status());
    if (ctx->log != nullptr) ctx->log->Add(std::move(stats));
    return send(*plan);
  };
  cb.table_at = [](void* raw, const char* schema, const char* table, const char* at_json,
                   TlSink* out) -> int {
    auto state = Load(static_cast<CatalogContext*>(raw), schema, table);
    if (!state.ok()) {
      const auto kind = KindOf(state.status());
      if (kind == ErrorKind::kNotFound || kind == ErrorKind::kInvalid)
        return kNotFoundCode;
      return Fail(out, state.status());
    }
    json at = json::parse(at_json ? at_json : "", nullptr, /*allow_exceptions=*/false);
    arrow::Result<int64_t> id =
        Invalid("a time travel request without a snapshot or time");
    if (at.is_object() && at.contains("snapshot_id") &&
        at["snapshot_id"].is_number_integer()) {
      id = at["snapshot_id"].get<int64_t>();
    } else if (at.is_object() && at.contains("timestamp_ms") &&
               at["timestamp_ms"].is_number_integer()) {
      id = internal::SnapshotIdAsOf(**state, at["timestamp_ms"].get<int64_t>());
    }
    if (!id.ok()) return Fail(out, id.status());
    auto at_snapshot = internal::TableStateAt(**state, *id);
    if (!at_snapshot.ok()) return Fail(out, at_snapshot.status());
    struct ArrowSchema c_schema;
    auto st = arrow::ExportSchema(*(*at_snapshot)->schema, &c_schema);
    if (!st.ok()) return Fail(out, st);
    tl_sink_set_schema(out, &c_schema);
    Write(out, json{{"snapshot_id", *id}}.dump());
    return kFound;
  };
  cb.list_snapshots = [](void* raw, const char* schema, const char* table,
                         TlSink* out) -> int {
    auto state = Load(static_cast<CatalogContext*>(raw), schema, table);
    if (!state.ok()) {
      const auto kind = KindOf(state.status());
      if (kind == ErrorKind::kNotFound || kind == ErrorKind::kInvalid)
        return kNotFoundCode;
      return Fail(out, state.status());
    }
    auto rows = SnapshotRows(**state);
    if (!rows.ok()) return Fail(out, rows.status());
    struct ArrowSchema c_schema;
    struct ArrowArray c_array;
    auto st = arrow::ExportRecordBatch(**rows, &c_array, &c_schema);
    if (!st.ok()) return Fail(out, st);
    tl_sink_set_batch(out, &c_schema, &c_array);
    return kFound;
  };
  cb.describe_settings = [](void*, TlSink* out) -> int {
    json list = json::array();
    for (const auto& s : settings::All()) {
      if (!(s.levels & settings::kSession)) continue;
      std::string name = s.SqlName().substr(std::string_view("timelake.").size());
      list.push_back({{"name", name},
                      {"description", std::string(s.description)},
                      {"default", std::string(s.default_value)}});
    }
    Write(out, list.dump());
    return kFound;
  };
  cb.check_setting = [](void*, const char* name, const char* value, TlSink* out) -> int {
    auto st = CheckSessionSetting(name, value);
    if (!st.ok()) return Fail(out, st);
    return kFound;
  };
  cb.release = [](void* raw) { delete static_cast<CatalogContext*>(raw); };
  return cb;
}

}  // namespace timelake::read
