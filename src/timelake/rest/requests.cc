// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/rest/requests.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "timelake/timelake.h"

namespace timelake::rest {

namespace {

using nlohmann::json;

// The JSON of a request body; kInvalid for malformed JSON or a document
// that is not an object. nlohmann's parser is recursive: depth is bounded
// first, so a body of a million '[' is an error, not a stack overflow.
arrow::Result<json> ParseObject(std::string_view body, std::string_view what) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    if (c == ']' || c == '}') --depth;
  }
  if (max_depth > 64) {
    return Invalid(std::string(what) + ": the JSON body nests deeper than 64 levels");
  }
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Invalid(std::string(what) + ": malformed JSON body");
  if (!doc.is_object())
    return Invalid(std::string(what) + ": the body is not a JSON object");
  return doc;
}

arrow::Result<std::string> StringField(const json& obj, const char* key,
                                       std::string_view what) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) {
    return Invalid(std::string(what) + ": \"" + key + "\" must be a string");
  }
  return it->get<std::string>();
}

arrow::Result<int64_t> IntField(const json& obj, const char* key, std::string_view what) {
  auto it = obj.find(key);
  if (it != obj.end() && it->is_number_integer()) {
    if (it->is_number_unsigned()) {
      const auto u = it->get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return static_cast<int64_t>(u);
      }
    } else {
      return it->get<int64_t>();
    }
  }
  return Invalid(std::string(what) + ": \"" + key + "\" must be a 64-bit integer");
}

// A string map ({"k": "v"}); absent or null is empty.
arrow::Result<std::map<std::string, std::string>> StringMap(const json& obj,
                                                            const char* key,
                                                            std::string_view what) {
  std::map<std::string, std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_object()) {
    return Invalid(std::string(what) + ": \"" + key + "\" must be an object of strings");
  }
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return Invalid(std::string(what) + ": \"" + key + "\" value of \"" + k +
                     "\" must be a string");
    }
    out[k] = v.get<std::string>();
  }
  return out;
}

arrow::Result<std::string> OneLevel(const json& parts, std::string_view what) {
  if (!parts.is_array() || parts.empty()) {
    return Invalid(std::string(what) + ": \"namespace\" must be a non-empty array");
  }
  if (parts.size() != 1) {
    return Invalid(std::string(what) + ": Timelake namespaces have one level, not " +
                   std::to_string(parts.size()));
  }
  if (!parts[0].is_string()) {
    return Invalid(std::string(what) + ": \"namespace\" parts must be strings");
  }
  const auto ns = parts[0].get<std::string>();
  TIMELAKE_RETURN_NOT_OK(WithContext(ValidateNamePart(ns, "namespace"), what));
  return ns;
}

arrow::Result<Requirement> ParseRequirement(const json& r) {
  const std::string what = "updateTable requirement";
  if (!r.is_object()) return Invalid(what + ": not a JSON object");
  TIMELAKE_ASSIGN_OR_RAISE(auto type, StringField(r, "type", what));
  Requirement out;
  out.type = type;
  const std::string ctx = what + " " + type;
  using K = Requirement::Kind;
  if (type == "assert-create") {
    out.kind = K::kAssertCreate;
  } else if (type == "assert-table-uuid") {
    out.kind = K::kAssertTableUuid;
    TIMELAKE_ASSIGN_OR_RAISE(out.uuid, StringField(r, "uuid", ctx));
  } else if (type == "assert-ref-snapshot-id") {
    out.kind = K::kAssertRefSnapshotId;
    TIMELAKE_ASSIGN_OR_RAISE(out.ref, StringField(r, "ref", ctx));
    auto it = r.find("snapshot-id");
    if (it == r.end()) return Invalid(ctx + ": \"snapshot-id\" is required (or null)");
    if (!it->is_null()) {
      TIMELAKE_ASSIGN_OR_RAISE(out.snapshot_id, IntField(r, "snapshot-id", ctx));
    }
  } else if (type == "assert-last-assigned-field-id") {
    out.kind = K::kAssertLastAssignedFieldId;
    TIMELAKE_ASSIGN_OR_RAISE(out.id, IntField(r, "last-assigned-field-id", ctx));
  } else if (type == "assert-current-schema-id") {
    out.kind = K::kAssertCurrentSchemaId;
    TIMELAKE_ASSIGN_OR_RAISE(out.id, IntField(r, "current-schema-id", ctx));
  } else if (type == "assert-last-assigned-partition-id") {
    out.kind = K::kAssertLastAssignedPartitionId;
    TIMELAKE_ASSIGN_OR_RAISE(out.id, IntField(r, "last-assigned-partition-id", ctx));
  } else if (type == "assert-default-spec-id") {
    out.kind = K::kAssertDefaultSpecId;
    TIMELAKE_ASSIGN_OR_RAISE(out.id, IntField(r, "default-spec-id", ctx));
  } else if (type == "assert-default-sort-order-id") {
    out.kind = K::kAssertDefaultSortOrderId;
    TIMELAKE_ASSIGN_OR_RAISE(out.id, IntField(r, "default-sort-order-id", ctx));
  } else {
    return Unsupported(what + ": unknown requirement type \"" + type + "\"");
  }
  return out;
}

arrow::Result<Update> ParseUpdate(const json& u) {
  const std::string what = "updateTable update";
  if (!u.is_object()) return Invalid(what + ": not a JSON object");
  TIMELAKE_ASSIGN_OR_RAISE(auto action, StringField(u, "action", what));
  Update out;
  out.action = action;
  const std::string ctx = what + " " + action;
  using K = Update::Kind;
  if (action == "assign-uuid") {
    out.kind = K::kAssignUuid;
    TIMELAKE_ASSIGN_OR_RAISE(out.uuid, StringField(u, "uuid", ctx));
  } else if (action == "upgrade-format-version") {
    out.kind = K::kUpgradeFormatVersion;
    TIMELAKE_ASSIGN_OR_RAISE(auto v, IntField(u, "format-version", ctx));
    if (v < 1 || v > 3)
      return Invalid(ctx + ": unknown format version " + std::to_string(v));
    out.format_version = static_cast<int>(v);
  } else if (action == "add-snapshot") {
    out.kind = K::kAddSnapshot;
    auto it = u.find("snapshot");
    if (it == u.end() || !it->is_object()) {
      return Invalid(ctx + ": \"snapshot\" must be an object");
    }
    auto snapshot = format::SnapshotFromJson(*it);
    if (!snapshot.ok()) {
      return Invalid(ctx + ": " + snapshot.status().message());
    }
    out.snapshot = std::move(*snapshot);
  } else if (action == "set-snapshot-ref") {
    out.kind = K::kSetSnapshotRef;
    TIMELAKE_ASSIGN_OR_RAISE(out.ref, StringField(u, "ref-name", ctx));
    TIMELAKE_ASSIGN_OR_RAISE(out.ref_type, StringField(u, "type", ctx));
    TIMELAKE_ASSIGN_OR_RAISE(out.snapshot_id, IntField(u, "snapshot-id", ctx));
  } else if (action == "set-properties") {
    out.kind = K::kSetProperties;
    TIMELAKE_ASSIGN_OR_RAISE(out.set, StringMap(u, "updates", ctx));
  } else if (action == "remove-properties") {
    out.kind = K::kRemoveProperties;
    auto it = u.find("removals");
    if (it == u.end() || !it->is_array()) {
      return Invalid(ctx + ": \"removals\" must be an array of strings");
    }
    for (const auto& k : *it) {
      if (!k.is_string()) return Invalid(ctx + ": \"removals\" must be strings");
      out.removals.push_back(k.get<std::string>());
    }
  } else {
    return Unsupported(what + " \"" + action +
                       "\" is not supported by timelake serve (docs/engines.md lists "
                       "the updates it carries out)");
  }
  return out;
}

}  // namespace

bool PathStepsOut(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  std::string lower(path);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower.find("%2f") != std::string::npos || lower.find("%5c") != std::string::npos ||
      lower.find("%2e") != std::string::npos || path.find('\\') != std::string::npos) {
    return true;
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    if (segment == "." || segment == "..") return true;
    start = end + 1;
  }
  return false;
}

std::optional<uint64_t> ParseContentLength(std::string_view text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t length = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    length = length * 10 + static_cast<uint64_t>(ch - '0');
  }
  return length;
}

arrow::Result<std::string> DecodeNamespace(std::string_view segment) {
  if (segment.find('\x1f') != std::string_view::npos) {
    return NotFound("namespace " + std::string(segment.substr(0, 255)) +
                    ": Timelake namespaces have one level");
  }
  TIMELAKE_RETURN_NOT_OK(ValidateNamePart(segment, "namespace"));
  return std::string(segment);
}

arrow::Result<std::string> DecodeTableName(std::string_view segment) {
  TIMELAKE_RETURN_NOT_OK(ValidateNamePart(segment, "table name"));
  return std::string(segment);
}

arrow::Result<CreateNamespaceRequest> ParseCreateNamespaceRequest(std::string_view body) {
  const std::string what = "createNamespace";
  TIMELAKE_ASSIGN_OR_RAISE(auto doc, ParseObject(body, what));
  CreateNamespaceRequest out;
  auto it = doc.find("namespace");
  if (it == doc.end()) return Invalid(what + ": \"namespace\" is required");
  TIMELAKE_ASSIGN_OR_RAISE(out.ns, OneLevel(*it, what));
  TIMELAKE_ASSIGN_OR_RAISE(out.properties, StringMap(doc, "properties", what));
  return out;
}

arrow::Result<CreateTableRequest> ParseCreateTableRequest(std::string_view body) {
  const std::string what = "createTable";
  TIMELAKE_ASSIGN_OR_RAISE(auto doc, ParseObject(body, what));
  CreateTableRequest out;
  TIMELAKE_ASSIGN_OR_RAISE(out.name, StringField(doc, "name", what));
  TIMELAKE_RETURN_NOT_OK(WithContext(ValidateNamePart(out.name, "table name"), what));
  if (auto it = doc.find("location"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) return Invalid(what + ": \"location\" must be a string");
    out.location = it->get<std::string>();
  }
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_object() || !schema->contains("fields") ||
      !(*schema)["fields"].is_array()) {
    return Invalid(what + ": \"schema\" must be an Iceberg struct with \"fields\"");
  }
  out.schema = *schema;
  if (auto it = doc.find("partition-spec"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return Invalid(what + ": \"partition-spec\" must be an object");
    out.partition_spec = *it;
  }
  if (auto it = doc.find("write-order"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) return Invalid(what + ": \"write-order\" must be an object");
    out.write_order = *it;
  }
  if (auto it = doc.find("stage-create"); it != doc.end() && !it->is_null()) {
    if (!it->is_boolean()) return Invalid(what + ": \"stage-create\" must be a boolean");
    out.stage_create = it->get<bool>();
  }
  TIMELAKE_ASSIGN_OR_RAISE(out.properties, StringMap(doc, "properties", what));
  return out;
}

arrow::Result<CommitTableRequest> ParseCommitTableRequest(std::string_view body) {
  const std::string what = "updateTable";
  TIMELAKE_ASSIGN_OR_RAISE(auto doc, ParseObject(body, what));
  CommitTableRequest out;
  for (const char* key : {"requirements", "updates"}) {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_array()) {
      return Invalid(what + ": \"" + key + "\" must be an array");
    }
  }
  for (const auto& r : doc["requirements"]) {
    TIMELAKE_ASSIGN_OR_RAISE(auto req, ParseRequirement(r));
    out.requirements.push_back(std::move(req));
  }
  for (const auto& u : doc["updates"]) {
    TIMELAKE_ASSIGN_OR_RAISE(auto update, ParseUpdate(u));
    out.updates.push_back(std::move(update));
  }
  return out;
}

}  // namespace timelake::rest
