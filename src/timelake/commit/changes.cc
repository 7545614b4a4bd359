// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/commit/changes.h"

#include <algorithm>

#include "timelake/format/json_int.h"
#include "timelake/format/schema.h"
#include "timelake/settings/contract.h"
#include "timelake/util/clock.h"
#include "timelake/util/uuid.h"
#include "timelake/write/lvi.h"

namespace timelake::commit {

bool HasBatchId(const format::TableMetadata& m, const std::string& id) {
  const auto carries = [&](const format::Snapshot& s) {
    auto it = s.summary.find(format::summary::kBatchId);
    return it != s.summary.end() && it->second == id;
  };
  // The current snapshot's ancestors, newest first. Where a parent is gone
  // (another engine expired one in the middle), every older snapshot counts
  // as history: only a rollback makes snapshots abandoned, and those are
  // newer than the snapshot it went back to.
  const format::Snapshot* s = m.CurrentSnapshot();
  int64_t oldest_seen = INT64_MAX;
  while (s != nullptr) {
    if (carries(*s)) return true;
    oldest_seen = s->sequence_number;
    s = s->parent_snapshot_id ? m.FindSnapshot(*s->parent_snapshot_id) : nullptr;
  }
  for (const auto& snapshot : m.snapshots) {
    if (snapshot.sequence_number < oldest_seen && carries(snapshot)) return true;
  }
  return false;
}

arrow::Result<std::optional<format::TableMetadata>> RollbackChange::Rebase(
    const internal::TableState& base, Attempt*) {
  const format::Snapshot* target = base.metadata.FindSnapshot(snapshot_id_);
  if (target == nullptr) {
    return NotFound(context_ + ": no snapshot " + std::to_string(snapshot_id_) +
                    " in version " + std::to_string(base.version) +
                    " (it never existed or has expired; `timelake info --snapshots` "
                    "lists those kept)");
  }
  if (base.metadata.current_snapshot_id == snapshot_id_) return std::nullopt;
  format::TableMetadata next = base.metadata;
  next.SetCurrentSnapshot(snapshot_id_, internal::ToMillis(base.lake->clock->Now()));
  return next;
}

namespace {

// An integer member of a stored JSON object, if it is one.
std::optional<int64_t> IntMember(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

std::map<std::string, std::string> FixedColumns(const internal::TableState& table) {
  std::map<std::string, std::string> out;
  const auto& c = table.contract;
  std::map<int64_t, std::string> names;
  for (const auto& f : table.schema->fields()) {
    if (auto id = format::FieldId(*f)) names[*id] = f->name();
  }
  const auto& doc = table.metadata.doc;
  const auto current = IntMember(doc, "default-sort-order-id").value_or(0);
  if (auto orders = doc.find("sort-orders"); orders != doc.end() && orders->is_array()) {
    for (const auto& order : *orders) {
      if (IntMember(order, "order-id") != current || !order.contains("fields") ||
          !order["fields"].is_array())
        continue;
      for (const auto& f : order["fields"]) {
        auto source = IntMember(f, "source-id");
        auto it = source ? names.find(*source) : names.end();
        if (it != names.end()) out[it->second] = "a column of the table's sort order";
      }
    }
  }
  for (const auto& f : table.metadata.DefaultSpec().fields) {
    auto it = names.find(f.source_id);
    if (it != names.end()) out[it->second] = "the source of a partition field";
  }
  for (const auto& k : c.series_key) out[k] = "a series key column";
  if (!c.ingest_column.empty()) out[c.ingest_column] = "the insertion-time column";
  if (c.time_column) out[*c.time_column] = "the time column";
  return out;
}

int NextSchemaId(const format::TableMetadata& metadata) {
  int next = metadata.current_schema_id + 1;
  if (auto schemas = metadata.doc.find("schemas");
      schemas != metadata.doc.end() && schemas->is_array()) {
    for (const auto& s : *schemas) {
      if (s.is_object())
        next = std::max(next, format::internal::GetInt<int>(s, "schema-id", 0) + 1);
    }
  }
  return next;
}

void AddCurrentSchema(format::TableMetadata* metadata, nlohmann::json schema,
                      int last_column_id) {
  metadata->current_schema_id = format::internal::GetInt<int>(schema, "schema-id", 0);
  metadata->last_column_id = std::max(metadata->last_column_id, last_column_id);
  metadata->doc["schemas"].push_back(std::move(schema));
}

arrow::Result<std::optional<format::TableMetadata>> SchemaEvolution::Rebase(
    const internal::TableState& base, Attempt*) {
  if (changes_.empty()) return std::nullopt;
  int last_column_id = base.metadata.last_column_id;
  auto schema =
      format::EvolveSchema(base.metadata.CurrentSchema(), changes_, FixedColumns(base),
                           NextSchemaId(base.metadata), &last_column_id);
  if (!schema.ok()) return WithContext(schema.status(), context_);
  format::TableMetadata next = base.metadata;
  AddCurrentSchema(&next, std::move(*schema), last_column_id);
  TIMELAKE_RETURN_NOT_OK(EditProperties(properties_, context_, &next));
  next.last_updated_ms = std::max(internal::ToMillis(base.lake->clock->Now()),
                                  base.metadata.last_updated_ms);
  return next;
}

arrow::Status EditProperties(
    const std::map<std::string, std::optional<std::string>>& edits,
    const std::string& context, format::TableMetadata* metadata) {
  if (edits.empty()) return arrow::Status::OK();
  for (const auto& [key, value] : edits) {
    if (value) {
      metadata->properties[key] = *value;
    } else {
      metadata->properties.erase(key);
    }
  }
  auto contract = internal::ParseContract(metadata->properties);
  return contract.ok() ? arrow::Status::OK() : WithContext(contract.status(), context);
}

arrow::Result<std::optional<format::TableMetadata>> PropertyChange::Rebase(
    const internal::TableState& base, Attempt*) {
  format::TableMetadata next = base.metadata;
  TIMELAKE_RETURN_NOT_OK(EditProperties(changes_, context_, &next));
  next.last_updated_ms = std::max(internal::ToMillis(base.lake->clock->Now()),
                                  base.metadata.last_updated_ms);
  return next;
}

void AppendChange::Abandon() {
  for (const auto& k : own_) (void)store_.Delete(k);
}

arrow::Result<std::optional<format::TableMetadata>> AppendChange::Rebase(
    const internal::TableState& base, Attempt* attempt) {
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
    TIMELAKE_ASSIGN_OR_RAISE(auto carried, LiveManifestsOf(base, *parent, context_));
    for (auto& m : carried) manifests.push_back(std::move(m));
  }
  TIMELAKE_ASSIGN_OR_RAISE(
      manifests, MergeManifests(base, std::move(manifests), 1, snapshot_id_, seq,
                                ManifestMergeRulesOf(bm), attempt, context_));
  auto list_bytes = format::WriteManifestList(
      snapshot_id_, parent ? std::optional<int64_t>(parent->snapshot_id) : std::nullopt,
      seq, manifests);
  if (!list_bytes.ok()) return WithContext(list_bytes.status(), context_);
  const std::string list_key = ManifestListKey(base.table_key, snapshot_id_,
                                               attempt->number, internal::NewUuidV7(now));
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
  snap.timestamp_ms = std::max(internal::ToMillis(lake.clock->Now()), bm.last_updated_ms);
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
      auto read = internal::ReadLvi(base, *parent_lvi);
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

}  // namespace timelake::commit
