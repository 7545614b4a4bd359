// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/commit/commit.h"

#include <algorithm>

#include "timelake/format/head.h"
#include "timelake/settings.h"
#include "timelake/util/clock.h"
#include "timelake/versions/versions.h"
#include "timelake/write/lvi.h"

namespace timelake::commit {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

void DeleteQuietly(const storage::Store& store, const std::vector<std::string>& keys) {
  for (const auto& k : keys) (void)store.Delete(k);
}

}  // namespace

arrow::Result<CommitOutcome> Commit(std::shared_ptr<const internal::TableState> base,
                                    Change* change, const CommitOptions& options) {
  const auto start = SteadyClock::now();
  const auto& store = *base->lake->store;
  const int max_attempts = std::max(1, options.max_attempts);
  CommitOutcome outcome;
  auto finish = [&](std::shared_ptr<const internal::TableState> state) {
    outcome.state = std::move(state);
    outcome.duration =
        std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
    return outcome;
  };
  // The objects of the attempt that lost the last race: deleted once the
  // reload shows that it did not land after all.
  std::vector<std::string> lost;
  // A table dropped and created again under the same name is another table:
  // a change made for the old one must not land in it.
  const std::string table_uuid = base->metadata.table_uuid;
  for (int number = 1;; ++number) {
    outcome.attempts = number;
    if (number > 1) {
      versions::BackoffBeforeRetry(number - 1);
      auto reloaded = internal::LoadTableState(base->lake, base->name);
      if (!reloaded.ok()) {
        DeleteQuietly(store, lost);
        change->Abandon();
        return WithContext(reloaded.status(), options.context);
      }
      base = *reloaded;
      if (!table_uuid.empty() && base->metadata.table_uuid != table_uuid) {
        DeleteQuietly(store, lost);
        change->Abandon();
        return NotFound(options.context + ": " + base->name.ToString() +
                        " was dropped and created again since this handle was loaded "
                        "(table-uuid " +
                        table_uuid + ", now " + base->metadata.table_uuid +
                        "); nothing was committed, load the table again");
      }
      if (change->Landed(*base)) {
        outcome.base = base;
        outcome.committed = true;
        outcome.landed_earlier = true;
        return finish(base);
      }
      DeleteQuietly(store, lost);
      lost.clear();
    }
    // Every write asks the format rule of the version it builds on (a newer
    // Timelake may have committed since the last attempt).
    auto allowed = internal::CheckTableFormat(*base, internal::FormatAccess::kWrite);
    if (!allowed.ok()) {
      DeleteQuietly(store, lost);
      change->Abandon();
      return WithContext(allowed, options.context);
    }
    Attempt attempt;
    attempt.number = number;
    auto next = change->Rebase(*base, &attempt);
    if (!next.ok() || !next->has_value()) {
      DeleteQuietly(store, attempt.written);
      change->Abandon();
      if (!next.ok()) return next.status();
      outcome.base = base;
      return finish(base);
    }
    format::TableMetadata& metadata = **next;
    metadata.LogPreviousMetadata(store.Uri(base->metadata_key),
                                 base->metadata.last_updated_ms, kMetadataLogLength);
    const int64_t version = base->version + 1;
    auto won = versions::TryCommit(store, base->table_key, version, metadata,
                                   base->metadata_key);
    if (!won.ok()) {
      // The put may or may not have landed: every file it names stays.
      return WithContext(won.status(), options.context + ": committing version " +
                                           std::to_string(version));
    }
    if (*won) {
      TIMELAKE_ASSIGN_OR_RAISE(auto state,
                               Publish(base->lake, base->name, version, metadata));
      WriteHeadAsync(state);
      outcome.base = base;
      outcome.committed = true;
      return finish(std::move(state));
    }
    // Lost the race to another writer's version.
    lost = std::move(attempt.written);
    if (number >= max_attempts) {
      DeleteQuietly(store, lost);
      change->Abandon();
      return Conflict(options.context + ": commit conflict: gave up after " +
                      std::to_string(number) +
                      " commit attempts, other writers kept winning (last seen version " +
                      std::to_string(base->version) + ")");
    }
    ++outcome.conflicts_rebased;
  }
}

arrow::Result<std::shared_ptr<const internal::TableState>> Publish(
    std::shared_ptr<internal::LakeState> lake, const TableName& name, int64_t version,
    const format::TableMetadata& metadata) {
  const std::string table_key = internal::TableKey(name);
  versions::WriteVersionHintAsync(lake->store, table_key, version);
  // The state is made from the metadata as stored (re-parsed), so that the
  // handle equals what a later load reads; MakeTableState remembers it in
  // the lake's table cache.
  const std::string key = versions::VersionKey(table_key, version);
  TIMELAKE_ASSIGN_OR_RAISE(auto stored, format::TableMetadata::Parse(
                                            metadata.Serialize(), lake->store->Uri(key)));
  TIMELAKE_ASSIGN_OR_RAISE(
      auto state, internal::MakeTableState(lake, name, version, key, std::move(stored)));
  return state;
}

arrow::Status WriteHead(const internal::TableState& state) {
  const settings::Resolver resolve(nullptr, nullptr, &state.metadata.properties);
  // "json" is a codec 0.7 knows; this writer has only "arrow" and writes
  // nothing for the others ("none" means no head).
  if (resolve.Get("head-format").value_or("arrow") != "arrow") return arrow::Status::OK();
  const int64_t inline_limit = resolve.GetInt("head-inline-bytes").ValueOr(0);
  format::Head head;
  head.version = state.version;
  head.metadata_json = state.metadata.Serialize();
  TIMELAKE_ASSIGN_OR_RAISE(head.files, internal::ListLiveFiles(state));
  int64_t budget = inline_limit;
  if (const auto* snapshot = state.metadata.CurrentSnapshot()) {
    if (auto uri = internal::LviUri(*snapshot)) {
      // Without its index the head would mislead: no head then.
      TIMELAKE_ASSIGN_OR_RAISE(auto index, internal::ReadLvi(state, *uri));
      // Inlined while it fits in head-inline-bytes; a bigger index stays in
      // its own file (the head then plans scans, `latest` reads the file).
      // The index file's size (compressed Parquet) is what must fit.
      auto key = internal::KeyOf(state, *uri);
      auto bytes = key.ok() ? internal::GetImmutable(*state.lake, *key)
                            : arrow::Result<std::shared_ptr<arrow::Buffer>>(key.status());
      if (bytes.ok() && (*bytes)->size() <= inline_limit) {
        head.last_values = index;
        budget -= (*bytes)->size();
      }
    }
  }
  // Then the footers of the newest files (the ones queries of recent data
  // read), as far as this lake holds them and they fit.
  std::vector<const format::LiveFile*> newest;
  for (const auto& f : head.files) newest.push_back(&f);
  std::stable_sort(newest.begin(), newest.end(), [](const auto* a, const auto* b) {
    return a->sequence_number.value_or(0) > b->sequence_number.value_or(0);
  });
  for (const auto* f : newest) {
    auto blob = state.lake->footers.Get(f->key);
    if (blob == nullptr || blob->size() > budget) continue;
    budget -= blob->size();
    head.footers.emplace_back(f->data_file.file_path, std::move(blob));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto bytes, format::EncodeHead(head));
  return state.lake->store->Put(
      versions::MetadataPrefix(state.table_key) + "/" + format::kHeadName, bytes);
}

void WriteHeadAsync(std::shared_ptr<const internal::TableState> state) {
  const settings::Resolver resolve(nullptr, nullptr, &state->metadata.properties);
  // "json" is a codec 0.7 knows; this writer has only "arrow" and writes
  // nothing for the others ("none" means no head).
  if (resolve.Get("head-format").value_or("arrow") != "arrow") return;
  // One writer per table and lake at a time; a version committed while it
  // works waits as the one pending head, replacing an older pending one, so
  // that a burst of commits writes the first head and the newest, not every
  // head in between (each superseded as soon as it landed).
  internal::LakeState& lake = *state->lake;
  {
    std::lock_guard<std::mutex> lock(lake.heads_mu);
    auto& slot = lake.heads[state->name.ToString()];
    if (slot.writing) {
      if (slot.pending == nullptr || slot.pending->version < state->version) {
        slot.pending = std::move(state);
      }
      return;
    }
    slot.writing = true;
  }
  versions::RunInBackground([state = std::move(state)]() mutable {
    // Held to the end: the lock below outlives the last state.
    const std::shared_ptr<internal::LakeState> keep = state->lake;
    internal::LakeState& heads = *keep;
    const std::string name = state->name.ToString();
    int64_t written = 0;
    while (state != nullptr) {
      if (state->version > written) {
        // Best effort: a failure leaves the previous head, which readers
        // find stale.
        (void)WriteHead(*state);
        written = state->version;
      }
      std::lock_guard<std::mutex> lock(heads.heads_mu);
      auto& slot = heads.heads[name];
      state = std::move(slot.pending);
      if (state == nullptr) slot.writing = false;
    }
  });
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

format::ManifestEntry NewEntry(const write::WrittenFile& f,
                               const internal::TableState& base, int64_t snapshot_id) {
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

format::ManifestWriteOptions ManifestOptionsOf(const internal::TableState& base) {
  const auto& spec = base.metadata.DefaultSpec();
  format::ManifestWriteOptions mopts;
  mopts.table_schema_json = base.metadata.CurrentSchema().dump();
  mopts.schema_id = base.metadata.current_schema_id;
  mopts.partition_spec_json = SpecFieldsJson(spec).dump();
  mopts.partition_spec_id = spec.spec_id;
  mopts.partition_type = PartitionTypeOf(spec);
  return mopts;
}

arrow::Result<std::vector<format::ManifestFile>> LiveManifestsOf(
    const internal::TableState& table, const format::Snapshot& snapshot,
    const std::string& context) {
  auto list_key = internal::KeyOf(table, snapshot.manifest_list);
  auto bytes = list_key.ok()
                   ? internal::GetImmutable(*table.lake, *list_key)
                   : arrow::Result<std::shared_ptr<arrow::Buffer>>(list_key.status());
  if (!bytes.ok()) {
    return WithContext(bytes.status(), context +
                                           ": reading the manifest list of snapshot " +
                                           std::to_string(snapshot.snapshot_id));
  }
  auto manifests = format::ReadManifestList(AsView(**bytes));
  if (!manifests.ok()) {
    return WithContext(manifests.status(),
                       context + ": manifest list " + snapshot.manifest_list);
  }
  std::vector<format::ManifestFile> out;
  for (auto& m : *manifests) {
    if (HasLiveFiles(m)) out.push_back(std::move(m));
  }
  return out;
}

std::string ManifestListKey(const std::string& table_key, int64_t snapshot_id,
                            int attempt, const std::string& uuid) {
  return versions::MetadataPrefix(table_key) + "/snap-" + std::to_string(snapshot_id) +
         "-" + std::to_string(attempt) + "-" + uuid + ".avro";
}

}  // namespace timelake::commit
