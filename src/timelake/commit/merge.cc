// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Manifest merging (commit.h): small manifests of a snapshot's list packed
// into fewer, so planning reads a bounded number of them.

#include <charconv>

#include "timelake/commit/commit.h"
#include "timelake/util/uuid.h"
#include "timelake/versions/versions.h"

namespace timelake::commit {

namespace {

std::string_view AsView(const arrow::Buffer& b) {
  return {reinterpret_cast<const char*>(b.data()), static_cast<size_t>(b.size())};
}

std::optional<int64_t> PositiveInt(const std::map<std::string, std::string>& properties,
                                   const char* key) {
  auto it = properties.find(key);
  if (it == properties.end()) return std::nullopt;
  int64_t value = 0;
  const auto& text = it->second;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 1) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

ManifestMergeRules ManifestMergeRulesOf(const format::TableMetadata& metadata) {
  ManifestMergeRules rules;
  const auto& p = metadata.properties;
  if (auto it = p.find(kManifestMergeEnabled); it != p.end()) {
    rules.enabled =
        it->second != "false" && it->second != "FALSE" && it->second != "False";
  }
  rules.min_count = PositiveInt(p, kManifestMinCountToMerge).value_or(rules.min_count);
  rules.target_bytes =
      PositiveInt(p, kManifestTargetSizeBytes).value_or(rules.target_bytes);
  return rules;
}

arrow::Result<std::vector<format::ManifestFile>> MergeManifests(
    const internal::TableState& base, std::vector<format::ManifestFile> manifests,
    size_t keep_first, int64_t snapshot_id, int64_t sequence_number,
    const ManifestMergeRules& rules, Attempt* attempt, const std::string& context) {
  if (!rules.enabled || static_cast<int64_t>(manifests.size()) <= rules.min_count) {
    return manifests;
  }
  const int32_t spec_id = base.metadata.DefaultSpec().spec_id;
  auto mergeable = [&](const format::ManifestFile& m) {
    return m.content == format::kManifestData && m.partition_spec_id == spec_id &&
           m.manifest_length < rules.target_bytes;
  };
  // Bins of consecutive-in-order small manifests, each within target bytes.
  std::vector<std::vector<size_t>> bins;
  int64_t bin_bytes = 0;
  for (size_t i = keep_first; i < manifests.size(); ++i) {
    if (!mergeable(manifests[i])) continue;
    if (bins.empty() || bin_bytes + manifests[i].manifest_length > rules.target_bytes) {
      bins.emplace_back();
      bin_bytes = 0;
    }
    bins.back().push_back(i);
    bin_bytes += manifests[i].manifest_length;
  }
  auto& lake = *base.lake;
  const auto& store = *lake.store;
  const format::ManifestWriteOptions mopts = ManifestOptionsOf(base);
  std::vector<bool> merged(manifests.size(), false);
  std::vector<format::ManifestFile> written;
  for (const auto& bin : bins) {
    if (bin.size() < 2) continue;
    std::vector<format::ManifestEntry> entries;
    for (size_t i : bin) {
      const auto& m = manifests[i];
      TIMELAKE_ASSIGN_OR_RAISE(auto key, internal::KeyOf(base, m.manifest_path));
      auto bytes = internal::GetImmutable(lake, key);
      if (!bytes.ok()) {
        return WithContext(bytes.status(), context + ": merging manifests");
      }
      auto contents = format::ReadManifest(AsView(**bytes));
      if (!contents.ok()) {
        return WithContext(contents.status(),
                           context + ": merging manifest " + m.manifest_path);
      }
      // Inherited fields made explicit: an EXISTING entry keeps the snapshot
      // and sequence numbers of the commit that added its file.
      format::InheritManifestFileFields(m, &contents->entries);
      for (auto& e : contents->entries) {
        if (e.status == format::kEntryDeleted) continue;
        e.status = format::kEntryExisting;
        entries.push_back(std::move(e));
      }
      merged[i] = true;
    }
    TIMELAKE_ASSIGN_OR_RAISE(auto bytes, format::WriteManifest(mopts, entries));
    const std::string key = versions::MetadataPrefix(base.table_key) + "/" +
                            internal::NewUuidV7(lake.clock->Now()) + "-merged-m.avro";
    if (auto st = store.Put(key, bytes); !st.ok()) {
      return WithContext(st, context + ": merging manifests");
    }
    attempt->written.push_back(key);
    lake.objects.Put(key, arrow::Buffer::FromString(bytes));
    TIMELAKE_ASSIGN_OR_RAISE(
        auto summary,
        format::SummarizeManifest(store.Uri(key), static_cast<int64_t>(bytes.size()),
                                  mopts.partition_spec_id, snapshot_id, sequence_number,
                                  mopts.partition_type, entries));
    written.push_back(std::move(summary));
  }
  if (written.empty()) return manifests;
  // The snapshot's own manifests first, then the merged ones, then those
  // left as they were.
  std::vector<format::ManifestFile> out(manifests.begin(),
                                        manifests.begin() + keep_first);
  for (auto& m : written) out.push_back(std::move(m));
  for (size_t i = keep_first; i < manifests.size(); ++i) {
    if (!merged[i]) out.push_back(std::move(manifests[i]));
  }
  return out;
}

}  // namespace timelake::commit
