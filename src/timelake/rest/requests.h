// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The requests `timelake serve` decodes (the Iceberg REST catalog's OpenAPI
// spec, open-api/rest-catalog-open-api.yaml in Apache Iceberg): path
// segments (namespaces, table names) and the JSON bodies of createNamespace,
// createTable and updateTable. Everything a client sends is untrusted: every
// decoder here returns kInvalid for what does not fit, naming the field, and
// never throws; fuzz/rest_request_fuzz.cc runs them on arbitrary bytes.
//
// Only what the server carries out is modelled; an update or requirement of
// another kind decodes as kUnsupported naming it (the server answers 400).
//
// All functions are reentrant and thread safe; the structs are plain values.

#ifndef TIMELAKE_REST_REQUESTS_H_
#define TIMELAKE_REST_REQUESTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelake/format/table_metadata.h"
#include "timelake/status.h"

namespace timelake::rest {

// The checks `timelake serve` makes of a request's head before routing it
// (the HTTP parsing itself is cpp-httplib's; fuzz/rest_http_fuzz.cc runs
// these on arbitrary bytes):
//
// Whether `target`, the request target as sent (path and query, before
// percent escapes are undone), tries to step out of its path segment: an
// encoded slash, backslash or dot, a backslash, or a "." or ".." segment.
// Such a request is refused whole (400).
bool PathStepsOut(std::string_view target);

// The value of a Content-Length header: 1 to 19 decimal digits, nothing
// else (no sign, space or list). nullopt for any other text.
std::optional<uint64_t> ParseContentLength(std::string_view text);

// A namespace from its path segment or `parent` query value, as the HTTP
// layer decoded it (percent escapes undone): Timelake's namespaces have one
// level, so a multi-level one (levels joined by 0x1F, the spec's separator)
// is kNotFound; a name that is not [A-Za-z0-9_-]+ (among them "..", "/" and
// "%2F" decoded) is kInvalid.
arrow::Result<std::string> DecodeNamespace(std::string_view segment);

// A table name from its path segment: kInvalid unless [A-Za-z0-9_-]+.
arrow::Result<std::string> DecodeTableName(std::string_view segment);

// createNamespace: {"namespace": ["ns"], "properties": {...}}.
struct CreateNamespaceRequest {
  std::string ns;
  std::map<std::string, std::string> properties;
};
arrow::Result<CreateNamespaceRequest> ParseCreateNamespaceRequest(std::string_view body);

// createTable: name, schema, optional location, partition-spec, write-order,
// stage-create, properties.
struct CreateTableRequest {
  std::string name;
  std::optional<std::string> location;
  nlohmann::json schema;          // an Iceberg struct schema
  nlohmann::json partition_spec;  // null when absent
  nlohmann::json write_order;     // null when absent
  bool stage_create = false;
  std::map<std::string, std::string> properties;
};
arrow::Result<CreateTableRequest> ParseCreateTableRequest(std::string_view body);

// A requirement of updateTable (TableRequirement).
struct Requirement {
  enum class Kind {
    kAssertCreate,                   // the table must not exist
    kAssertTableUuid,                // uuid
    kAssertRefSnapshotId,            // ref, snapshot_id (nullopt: the ref must not exist)
    kAssertLastAssignedFieldId,      // id
    kAssertCurrentSchemaId,          // id
    kAssertLastAssignedPartitionId,  // id
    kAssertDefaultSpecId,            // id
    kAssertDefaultSortOrderId,       // id
  };
  Kind kind = Kind::kAssertCreate;
  std::string type;  // as sent, for messages ("assert-table-uuid")
  std::string uuid;
  std::string ref;
  std::optional<int64_t> snapshot_id;
  int64_t id = 0;
};

// An update of updateTable (TableUpdate) of a kind the server carries out.
struct Update {
  enum class Kind {
    kAssignUuid,            // uuid (must equal the table's)
    kUpgradeFormatVersion,  // format_version
    kAddSnapshot,           // snapshot
    kSetSnapshotRef,        // ref, ref_type, snapshot_id
    kSetProperties,         // set
    kRemoveProperties,      // removals
  };
  Kind kind = Kind::kSetProperties;
  std::string action;  // as sent
  std::string uuid;
  int format_version = 0;
  format::Snapshot snapshot;
  std::string ref;
  std::string ref_type;
  int64_t snapshot_id = 0;
  std::map<std::string, std::string> set;
  std::vector<std::string> removals;
};

// updateTable: {"identifier": {...} (optional), "requirements": [...],
// "updates": [...]}. Errors: kInvalid (malformed JSON, a missing or
// mistyped field), kUnsupported (a requirement or update of a kind the
// server does not carry out, named).
struct CommitTableRequest {
  std::vector<Requirement> requirements;
  std::vector<Update> updates;
};
arrow::Result<CommitTableRequest> ParseCommitTableRequest(std::string_view body);

}  // namespace timelake::rest

#endif  // TIMELAKE_REST_REQUESTS_H_
