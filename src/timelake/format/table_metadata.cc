// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/table_metadata.h"

#include <algorithm>
#include <climits>

#include "timelake/format/json_int.h"

namespace timelake::format {

using internal::GetInt;
using nlohmann::json;

namespace {

std::string SummaryValue(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

arrow::Result<Snapshot> ParseSnapshot(const json& s) {
  Snapshot out;
  out.snapshot_id = GetInt<int64_t>(s.at("snapshot-id"));
  if (s.contains("parent-snapshot-id") && !s["parent-snapshot-id"].is_null()) {
    out.parent_snapshot_id = GetInt<int64_t>(s["parent-snapshot-id"]);
  }
  out.sequence_number = GetInt<int64_t>(s, "sequence-number", 0);
  out.timestamp_ms = GetInt<int64_t>(s.at("timestamp-ms"));
  if (s.contains("manifest-list")) {
    out.manifest_list = s["manifest-list"].get<std::string>();
  } else {
    return Unsupported(
        "snapshot " + std::to_string(out.snapshot_id) +
        " lists manifests inline (format v1 'manifests'), which is not supported");
  }
  if (s.contains("summary")) {
    for (const auto& [k, v] : s["summary"].items()) out.summary[k] = SummaryValue(v);
  }
  if (s.contains("schema-id")) out.schema_id = GetInt<int>(s["schema-id"]);
  for (const auto& [k, v] : s.items()) {
    if (k != "snapshot-id" && k != "parent-snapshot-id" && k != "sequence-number" &&
        k != "timestamp-ms" && k != "manifest-list" && k != "summary" &&
        k != "schema-id") {
      out.extra[k] = v;
    }
  }
  return out;
}

}  // namespace

json SnapshotToJson(const Snapshot& s) {
  json out = s.extra;
  out["snapshot-id"] = s.snapshot_id;
  if (s.parent_snapshot_id) out["parent-snapshot-id"] = *s.parent_snapshot_id;
  out["sequence-number"] = s.sequence_number;
  out["timestamp-ms"] = s.timestamp_ms;
  out["manifest-list"] = s.manifest_list;
  json summary = json::object();
  for (const auto& [k, v] : s.summary) summary[k] = v;
  out["summary"] = summary;
  if (s.schema_id) out["schema-id"] = *s.schema_id;
  return out;
}

arrow::Result<Snapshot> SnapshotFromJson(const json& snapshot) {
  try {
    if (!snapshot.is_object()) return Corrupt("a snapshot is not a JSON object");
    return ParseSnapshot(snapshot);
  } catch (const json::exception& e) {
    return Corrupt(std::string("malformed snapshot: ") + e.what());
  }
}

const json& TableMetadata::CurrentSchema() const {
  for (const auto& s : doc.at("schemas")) {
    if (GetInt<int>(s, "schema-id", 0) == current_schema_id) return s;
  }
  return doc.at("schemas").at(0);
}

const PartitionSpec& TableMetadata::DefaultSpec() const {
  for (const auto& s : specs) {
    if (s.spec_id == default_spec_id) return s;
  }
  return specs.at(0);
}

const Snapshot* TableMetadata::FindSnapshot(int64_t id) const {
  for (const auto& s : snapshots) {
    if (s.snapshot_id == id) return &s;
  }
  return nullptr;
}

const json* TableMetadata::FindSchema(int schema_id) const {
  auto it = doc.find("schemas");
  if (it == doc.end() || !it->is_array()) return nullptr;
  for (const auto& s : *it) {
    if (s.is_object() && GetInt<int>(s, "schema-id", 0) == schema_id) return &s;
  }
  return nullptr;
}

std::vector<int64_t> TableMetadata::History() const {
  std::vector<int64_t> out;
  for (const Snapshot* s = CurrentSnapshot(); s != nullptr;
       s = s->parent_snapshot_id ? FindSnapshot(*s->parent_snapshot_id) : nullptr) {
    if (std::find(out.begin(), out.end(), s->snapshot_id) != out.end()) break;  // a cycle
    out.push_back(s->snapshot_id);
  }
  return out;
}

std::optional<int64_t> TableMetadata::SnapshotAsOf(int64_t timestamp_ms) const {
  auto log = doc.find("snapshot-log");
  if (log != doc.end() && log->is_array() && !log->empty()) {
    // Entries are in commit order; the newest at or before the time wins.
    std::optional<int64_t> found;
    for (const auto& e : *log) {
      if (!e.is_object() || !e.contains("snapshot-id") || !e.contains("timestamp-ms") ||
          !e["snapshot-id"].is_number_integer() || !e["timestamp-ms"].is_number_integer())
        continue;
      if (e["timestamp-ms"].get<int64_t>() <= timestamp_ms)
        found = e["snapshot-id"].get<int64_t>();
    }
    return found;
  }
  for (int64_t id : History()) {
    if (FindSnapshot(id)->timestamp_ms <= timestamp_ms) return id;
  }
  return std::nullopt;
}

const Snapshot* TableMetadata::CurrentSnapshot() const {
  return current_snapshot_id ? FindSnapshot(*current_snapshot_id) : nullptr;
}

void TableMetadata::AddSnapshot(Snapshot snapshot) {
  last_sequence_number = std::max(last_sequence_number, snapshot.sequence_number);
  last_updated_ms = std::max(last_updated_ms, snapshot.timestamp_ms);
  current_snapshot_id = snapshot.snapshot_id;
  json& log = doc["snapshot-log"];
  if (!log.is_array()) log = json::array();
  log.push_back(
      {{"snapshot-id", snapshot.snapshot_id}, {"timestamp-ms", snapshot.timestamp_ms}});
  snapshots.push_back(std::move(snapshot));
}

void TableMetadata::SetCurrentSnapshot(int64_t id, int64_t timestamp_ms) {
  last_updated_ms = std::max(last_updated_ms, timestamp_ms);
  current_snapshot_id = id;
  json& log = doc["snapshot-log"];
  if (!log.is_array()) log = json::array();
  log.push_back({{"snapshot-id", id}, {"timestamp-ms", last_updated_ms}});
}

void TableMetadata::LogPreviousMetadata(const std::string& file_uri, int64_t timestamp_ms,
                                        size_t max_entries) {
  json& log = doc["metadata-log"];
  if (!log.is_array()) log = json::array();
  log.push_back({{"metadata-file", file_uri}, {"timestamp-ms", timestamp_ms}});
  while (log.size() > max_entries) log.erase(log.begin());
}

std::string TableMetadata::Serialize() const {
  json out = doc;
  out["format-version"] = format_version;
  out["table-uuid"] = table_uuid;
  out["location"] = location;
  out["last-sequence-number"] = last_sequence_number;
  out["last-updated-ms"] = last_updated_ms;
  out["last-column-id"] = last_column_id;
  out["current-schema-id"] = current_schema_id;
  json specs_json = json::array();
  for (const auto& spec : specs) {
    json fields = json::array();
    for (const auto& f : spec.fields) {
      fields.push_back({{"source-id", f.source_id},
                        {"field-id", f.field_id},
                        {"name", f.name},
                        {"transform", f.transform}});
    }
    specs_json.push_back({{"spec-id", spec.spec_id}, {"fields", fields}});
  }
  out["partition-specs"] = specs_json;
  out["default-spec-id"] = default_spec_id;
  out["last-partition-id"] = last_partition_id;
  json props = json::object();
  for (const auto& [k, v] : properties) props[k] = v;
  out["properties"] = props;
  json snaps = json::array();
  for (const auto& s : snapshots) snaps.push_back(SnapshotToJson(s));
  out["snapshots"] = snaps;
  if (current_snapshot_id) {
    out["current-snapshot-id"] = *current_snapshot_id;
    json refs =
        out.contains("refs") && out["refs"].is_object() ? out["refs"] : json::object();
    refs["main"] = {{"snapshot-id", *current_snapshot_id}, {"type", "branch"}};
    out["refs"] = refs;
  } else {
    out.erase("current-snapshot-id");
  }
  if (!out.contains("snapshot-log")) out["snapshot-log"] = json::array();
  if (!out.contains("metadata-log")) out["metadata-log"] = json::array();
  return out.dump(2);
}

arrow::Result<TableMetadata> TableMetadata::Parse(std::string_view text,
                                                  std::string_view what) {
  TableMetadata m;
  try {
    m.doc = json::parse(text);
  } catch (const json::exception& e) {
    return Corrupt("reading " + std::string(what) + ": not valid JSON: " + e.what());
  }
  try {
    const json& d = m.doc;
    if (!d.is_object())
      return Corrupt("reading " + std::string(what) + ": not a JSON object");
    m.format_version = GetInt<int>(d.at("format-version"));
    if (m.format_version != 1 && m.format_version != 2) {
      return Unsupported("reading " + std::string(what) + ": Iceberg format version " +
                         std::to_string(m.format_version) +
                         " is not supported (1 and 2 are)");
    }
    m.table_uuid = d.value("table-uuid", "");
    m.location = d.at("location").get<std::string>();
    while (!m.location.empty() && m.location.back() == '/') m.location.pop_back();
    m.last_sequence_number = GetInt<int64_t>(d, "last-sequence-number", 0);
    m.last_updated_ms = GetInt<int64_t>(d, "last-updated-ms", 0);
    m.last_column_id = GetInt<int>(d, "last-column-id", 0);
    if (!d.contains("schemas")) {
      // Format v1 may hold a single "schema" instead.
      if (!d.contains("schema")) {
        return Corrupt("reading " + std::string(what) + ": no schemas");
      }
      json schema = d["schema"];
      if (!schema.contains("schema-id")) schema["schema-id"] = 0;
      m.doc["schemas"] = json::array({schema});
    }
    m.current_schema_id = GetInt<int>(d, "current-schema-id", 0);
    if (!m.doc["schemas"].is_array() || m.doc["schemas"].empty()) {
      return Corrupt("reading " + std::string(what) + ": empty schemas");
    }
    bool found_schema = false;
    for (const auto& s : m.doc["schemas"]) {
      if (GetInt<int>(s, "schema-id", 0) == m.current_schema_id) found_schema = true;
    }
    if (!found_schema) {
      return Corrupt("reading " + std::string(what) + ": current-schema-id " +
                     std::to_string(m.current_schema_id) + " is not among the schemas");
    }
    json specs = d.contains("partition-specs") ? d["partition-specs"] : json::array();
    if (specs.empty() && d.contains("partition-spec")) {
      specs = json::array({{{"spec-id", 0}, {"fields", d["partition-spec"]}}});
    }
    for (const auto& s : specs) {
      PartitionSpec spec;
      spec.spec_id = GetInt<int>(s, "spec-id", 0);
      int next_id = 1000;
      for (const auto& f : s.at("fields")) {
        PartitionField pf;
        pf.source_id = GetInt<int>(f.at("source-id"));
        pf.field_id = GetInt<int>(f, "field-id", next_id);
        // v1 specs may omit ids; the next one follows (saturating: no overflow).
        next_id = pf.field_id == INT_MAX ? pf.field_id : pf.field_id + 1;
        pf.name = f.at("name").get<std::string>();
        pf.transform = f.at("transform").get<std::string>();
        spec.fields.push_back(std::move(pf));
      }
      m.specs.push_back(std::move(spec));
    }
    if (m.specs.empty()) m.specs.push_back(PartitionSpec{});
    m.default_spec_id = GetInt<int>(d, "default-spec-id", 0);
    m.last_partition_id = GetInt<int>(d, "last-partition-id", 999);
    if (d.contains("properties") && d["properties"].is_object()) {
      for (const auto& [k, v] : d["properties"].items())
        m.properties[k] = SummaryValue(v);
    }
    if (d.contains("current-snapshot-id") && !d["current-snapshot-id"].is_null()) {
      const int64_t id = GetInt<int64_t>(d["current-snapshot-id"]);
      if (id != -1) m.current_snapshot_id = id;
    }
    if (d.contains("snapshots") && d["snapshots"].is_array()) {
      for (const auto& s : d["snapshots"]) {
        TIMELAKE_ASSIGN_OR_RAISE(auto snap, ParseSnapshot(s));
        m.snapshots.push_back(std::move(snap));
      }
    }
    if (m.current_snapshot_id && !m.FindSnapshot(*m.current_snapshot_id)) {
      return Corrupt("reading " + std::string(what) + ": current snapshot " +
                     std::to_string(*m.current_snapshot_id) +
                     " is not among the snapshots");
    }
  } catch (const json::exception& e) {
    return Corrupt("reading " + std::string(what) +
                   ": malformed table metadata: " + e.what());
  }
  return m;
}

int64_t SummaryInt(const Snapshot& snapshot, const char* key) {
  auto it = snapshot.summary.find(key);
  if (it == snapshot.summary.end()) return 0;
  try {
    return std::stoll(it->second);
  } catch (...) {
    return 0;
  }
}

}  // namespace timelake::format
