// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/rest/table_commit.h"

#include <algorithm>
#include <set>

#include <arrow/table.h>
#include <parquet/arrow/reader.h>

#include "timelake/settings/contract.h"
#include "timelake/storage/io.h"
#include "timelake/util/clock.h"
#include "timelake/util/uuid.h"
#include "timelake/write/lvi.h"

namespace timelake::rest {

namespace {

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

std::string IdText(std::optional<int64_t> id) {
  return id ? std::to_string(*id) : "none";
}

// The snapshot id of a ref of `m` ("main" is the current snapshot).
std::optional<int64_t> RefSnapshot(const format::TableMetadata& m,
                                   const std::string& ref) {
  if (ref == "main") return m.current_snapshot_id;
  const auto& refs = m.doc.find("refs");
  if (refs == m.doc.end() || !refs->is_object()) return std::nullopt;
  auto it = refs->find(ref);
  if (it == refs->end() || !it->is_object()) return std::nullopt;
  auto id = it->find("snapshot-id");
  if (id == it->end() || !id->is_number_integer()) return std::nullopt;
  return id->get<int64_t>();
}

// The data files snapshot `snapshot_id` added, read from its manifest
// list; nullopt when it cannot be told (delete files, unreadable lists).
std::optional<std::vector<format::LiveFile>> AddedFiles(
    const internal::TableState& base, const format::Snapshot& snapshot) {
  auto& lake = *base.lake;
  auto list_key = internal::KeyOf(base, snapshot.manifest_list);
  if (!list_key.ok()) return std::nullopt;
  auto list_bytes = internal::GetImmutable(lake, *list_key);
  if (!list_bytes.ok()) return std::nullopt;
  auto manifests = format::ReadManifestList(AsView(**list_bytes));
  if (!manifests.ok()) return std::nullopt;
  std::vector<format::LiveFile> out;
  for (const auto& m : *manifests) {
    if (m.content != format::kManifestData) return std::nullopt;
    if (m.added_snapshot_id != snapshot.snapshot_id) continue;
    auto key = internal::KeyOf(base, m.manifest_path);
    if (!key.ok()) return std::nullopt;
    auto bytes = internal::GetImmutable(lake, *key);
    if (!bytes.ok()) return std::nullopt;
    auto contents = format::ReadManifest(AsView(**bytes));
    if (!contents.ok()) return std::nullopt;
    format::InheritManifestFileFields(m, &contents->entries);
    for (const auto& e : contents->entries) {
      if (e.status != format::kEntryAdded || e.snapshot_id != snapshot.snapshot_id) {
        continue;
      }
      if (e.data_file.content != format::kContentData) return std::nullopt;
      format::LiveFile f;
      auto file_key = internal::KeyOf(base, e.data_file.file_path);
      if (!file_key.ok()) return std::nullopt;
      f.key = *file_key;
      f.data_file = e.data_file;
      out.push_back(std::move(f));
    }
  }
  return out;
}

// The parent's last-value index merged with the newest rows of `added`
// (files another engine wrote), or nullptr when that cannot be made here:
// the caller then commits the snapshot without an index.
std::shared_ptr<arrow::RecordBatch> ExtendedIndex(
    const internal::TableState& base, const format::Snapshot& parent,
    const std::vector<format::LiveFile>& added) {
  const auto& contract = base.contract;
  if (!contract.time_column) return nullptr;
  auto uri = internal::LviUri(parent);
  if (!uri) return nullptr;
  auto previous = internal::ReadLvi(base, *uri);
  if (!previous.ok()) return nullptr;
  int64_t rows = 0;
  for (const auto& f : added) rows += f.data_file.record_count;
  if (rows > kMaxIndexedRows) return nullptr;
  std::vector<std::shared_ptr<arrow::RecordBatch>> newest;
  for (const auto& f : added) {
    auto file = storage::StoreInputFile::Open(base.lake->store, f.key,
                                              f.data_file.file_size_in_bytes);
    auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool());
    if (!reader.ok()) return nullptr;
    auto table = (*reader)->ReadTable();
    if (!table.ok()) return nullptr;
    auto batch = (*table)->CombineChunksToBatch();
    if (!batch.ok()) return nullptr;
    if ((*batch)->num_rows() == 0) continue;
    auto aligned = AlignBatch(**batch, *base.schema);
    if (!aligned.ok()) return nullptr;
    newest.push_back(*aligned);
  }
  std::shared_ptr<arrow::RecordBatch> latest;
  if (!newest.empty()) {
    auto got = LatestPerSeries(newest, *contract.time_column, contract.series_key,
                               contract.ingest_column);
    if (!got.ok()) return nullptr;
    latest = *got;
  }
  auto merged = internal::MergeLvi(*previous, latest, contract, *base.schema);
  if (!merged.ok()) return nullptr;
  return *merged;
}

}  // namespace

arrow::Status TableCommitChange::CheckRequirements(
    const internal::TableState& base) const {
  const auto& m = base.metadata;
  auto failed = [&](const Requirement& r, const std::string& why) {
    return Conflict(context_ + ": requirement " + r.type + " failed: " + why +
                    " (version " + std::to_string(base.version) + ")");
  };
  using K = Requirement::Kind;
  for (const auto& r : request_.requirements) {
    switch (r.kind) {
      case K::kAssertCreate:
        return failed(r, "the table exists");
      case K::kAssertTableUuid:
        if (r.uuid != m.table_uuid) {
          return failed(r, "table-uuid is " + m.table_uuid + ", not " + r.uuid);
        }
        break;
      case K::kAssertRefSnapshotId: {
        auto at = RefSnapshot(m, r.ref);
        if (at != r.snapshot_id) {
          return failed(r, "ref " + r.ref + " is at snapshot " + IdText(at) + ", not " +
                               IdText(r.snapshot_id));
        }
        break;
      }
      case K::kAssertLastAssignedFieldId:
        if (r.id != m.last_column_id) {
          return failed(r, "last-column-id is " + std::to_string(m.last_column_id));
        }
        break;
      case K::kAssertCurrentSchemaId:
        if (r.id != m.current_schema_id) {
          return failed(r, "current-schema-id is " + std::to_string(m.current_schema_id));
        }
        break;
      case K::kAssertLastAssignedPartitionId:
        if (r.id != m.last_partition_id) {
          return failed(r, "last-partition-id is " + std::to_string(m.last_partition_id));
        }
        break;
      case K::kAssertDefaultSpecId:
        if (r.id != m.default_spec_id) {
          return failed(r, "default-spec-id is " + std::to_string(m.default_spec_id));
        }
        break;
      case K::kAssertDefaultSortOrderId: {
        const int64_t order = m.doc.value("default-sort-order-id", 0);
        if (r.id != order) {
          return failed(r, "default-sort-order-id is " + std::to_string(order));
        }
        break;
      }
    }
  }
  return arrow::Status::OK();
}

bool TableCommitChange::Landed(const internal::TableState& base) const {
  for (const auto& u : request_.updates) {
    if (u.kind == Update::Kind::kAddSnapshot) {
      return base.metadata.FindSnapshot(u.snapshot.snapshot_id) != nullptr;
    }
  }
  return false;
}

arrow::Result<std::optional<format::TableMetadata>> TableCommitChange::Rebase(
    const internal::TableState& base, commit::Attempt* attempt) {
  TIMELAKE_RETURN_NOT_OK(CheckRequirements(base));
  const auto& bm = base.metadata;
  auto& lake = *base.lake;
  const int64_t now_ms = internal::ToMillis(lake.clock->Now());
  format::TableMetadata next = bm;
  std::set<int64_t> added;  // snapshots this request adds
  std::optional<int64_t> new_main;
  using K = Update::Kind;
  for (const auto& u : request_.updates) {
    switch (u.kind) {
      case K::kAssignUuid:
        if (u.uuid != bm.table_uuid) {
          return Invalid(context_ +
                         ": assign-uuid cannot change the table-uuid of an "
                         "existing table");
        }
        break;
      case K::kUpgradeFormatVersion:
        if (u.format_version < bm.format_version) {
          return Invalid(context_ + ": upgrade-format-version cannot go from " +
                         std::to_string(bm.format_version) + " down to " +
                         std::to_string(u.format_version));
        }
        if (u.format_version > 2) {
          return Unsupported(context_ + ": Iceberg format version " +
                             std::to_string(u.format_version) +
                             " is not supported (Timelake writes 2)");
        }
        next.format_version = u.format_version;
        break;
      case K::kAddSnapshot: {
        format::Snapshot s = u.snapshot;
        if (next.FindSnapshot(s.snapshot_id) != nullptr) {
          return Conflict(context_ + ": snapshot " + std::to_string(s.snapshot_id) +
                          " exists already");
        }
        if (s.sequence_number <= next.last_sequence_number) {
          return Conflict(context_ + ": snapshot " + std::to_string(s.snapshot_id) +
                          " has sequence number " + std::to_string(s.sequence_number) +
                          ", but the table is at " +
                          std::to_string(next.last_sequence_number) +
                          " (another writer committed first)");
        }
        auto list_key = internal::KeyOf(base, s.manifest_list);
        if (!list_key.ok() || !list_key->starts_with(base.table_key + "/")) {
          return Invalid(context_ + ": the manifest list of snapshot " +
                         std::to_string(s.snapshot_id) + " (" + s.manifest_list +
                         ") is not inside the table " + internal::LocationOf(base));
        }
        // The list must be there and parse: a snapshot that points at
        // nothing would break every reader of the table.
        auto list_bytes = internal::GetImmutable(lake, *list_key);
        if (!list_bytes.ok()) {
          if (KindOf(list_bytes.status()) != ErrorKind::kNotFound) {
            return WithContext(list_bytes.status(), context_);
          }
          return Invalid(context_ + ": the manifest list of snapshot " +
                         std::to_string(s.snapshot_id) + " (" + s.manifest_list +
                         ") does not exist");
        }
        if (auto list = format::ReadManifestList(AsView(**list_bytes)); !list.ok()) {
          return Invalid(context_ + ": the manifest list of snapshot " +
                         std::to_string(s.snapshot_id) +
                         " does not parse: " + list.status().message());
        }
        // The index is ours: a client's key would name the wrong rows.
        s.summary.erase(internal::kLastValueIndexKey);
        next.last_sequence_number =
            std::max(next.last_sequence_number, s.sequence_number);
        next.last_updated_ms = std::max(next.last_updated_ms, s.timestamp_ms);
        added.insert(s.snapshot_id);
        next.snapshots.push_back(std::move(s));
        break;
      }
      case K::kSetSnapshotRef: {
        if (u.ref != "main" || u.ref_type != "branch") {
          return Unsupported(context_ + ": set-snapshot-ref of " + u.ref_type + " " +
                             u.ref + ": timelake serve keeps the main branch only");
        }
        const format::Snapshot* s = next.FindSnapshot(u.snapshot_id);
        if (s == nullptr) {
          return Invalid(context_ + ": set-snapshot-ref main to snapshot " +
                         std::to_string(u.snapshot_id) +
                         ", which the table does not have");
        }
        if (added.count(u.snapshot_id) &&
            s->parent_snapshot_id != bm.current_snapshot_id) {
          return Conflict(context_ + ": snapshot " + std::to_string(u.snapshot_id) +
                          " was made on snapshot " + IdText(s->parent_snapshot_id) +
                          ", but main is at " + IdText(bm.current_snapshot_id) +
                          " (another writer committed first)");
        }
        next.SetCurrentSnapshot(u.snapshot_id, std::max(now_ms, next.last_updated_ms));
        new_main = u.snapshot_id;
        break;
      }
      case K::kSetProperties:
        for (const auto& [key, value] : u.set) {
          auto k = internal::AlterableKey(key);
          if (!k.ok()) return WithContext(k.status(), context_);
          next.properties[*k] = value;
        }
        break;
      case K::kRemoveProperties:
        for (const auto& key : u.removals) {
          auto k = internal::AlterableKey(key);
          if (!k.ok()) return WithContext(k.status(), context_);
          next.properties.erase(*k);
        }
        break;
    }
  }
  for (int64_t id : added) {
    if (new_main != id) {
      return Unsupported(context_ + ": snapshot " + std::to_string(id) +
                         " is added without becoming main's: timelake serve keeps the "
                         "main branch only");
    }
  }
  if (auto contract = internal::ParseContract(next.properties); !contract.ok()) {
    return WithContext(contract.status(), context_);
  }
  next.last_updated_ms = std::max(next.last_updated_ms, now_ms);
  // The new main snapshot's last-value index, when it can be made here.
  if (new_main && added.count(*new_main) && bm.CurrentSnapshot() != nullptr) {
    auto* s = const_cast<format::Snapshot*>(next.FindSnapshot(*new_main));
    auto files = AddedFiles(base, *s);
    if (files) {
      if (auto index = ExtendedIndex(base, *bm.CurrentSnapshot(), *files)) {
        auto key = internal::WriteLvi(*lake.store, base.table_key, s->snapshot_id, *index,
                                      internal::NewUuidV7(lake.clock->Now()));
        if (!key.ok()) return WithContext(key.status(), context_);
        attempt->written.push_back(*key);
        s->summary[internal::kLastValueIndexKey] = lake.store->Uri(*key);
      }
    }
  }
  return next;
}

}  // namespace timelake::rest
