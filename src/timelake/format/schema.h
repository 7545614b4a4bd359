// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Iceberg schemas (JSON, with field ids) and their Arrow form. In Arrow, field
// ids travel as the field metadata key "PARQUET:field_id", the key Parquet
// writers and readers use, so data files carry Iceberg's ids.

#ifndef TIMELAKE_FORMAT_SCHEMA_H_
#define TIMELAKE_FORMAT_SCHEMA_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/type.h>
#include <nlohmann/json.hpp>

#include "timelake/status.h"
#include "timelake/timelake.h"

namespace timelake::format {

inline constexpr char kFieldIdKey[] = "PARQUET:field_id";
// The zone of Iceberg `timestamptz` columns in Arrow (as Timelake 0.7 writes).
inline constexpr char kUtcZone[] = "+00:00";

// Converts an Iceberg schema (the object with "type": "struct" and "fields")
// to Arrow. Errors: kCorrupt naming the field when a type is unknown.
arrow::Result<std::shared_ptr<arrow::Schema>> IcebergToArrow(
    const nlohmann::json& schema);

// Normalises an Arrow schema for a new table (SPEC §4.4) and converts it to an
// Iceberg schema with fresh ids from 1: timestamps become microseconds, zoned
// ones UTC; small ints int; unsigned 32-bit long; dictionaries their value
// type; large and view strings string; `required_columns` become required.
// `*last_column_id` receives the highest id assigned. Errors: kInvalid naming
// the column for types Iceberg cannot hold.
arrow::Result<nlohmann::json> ArrowToIceberg(const arrow::Schema& schema, int schema_id,
                                             int* last_column_id);

// The Iceberg type name of a primitive Arrow type after normalisation
// ("long", "timestamptz", ...), or kInvalid.
arrow::Result<std::string> IcebergTypeName(const arrow::DataType& type);

// The field id of an Arrow field (from its metadata), if any.
std::optional<int> FieldId(const arrow::Field& field);

// Whether an Iceberg type may be promoted to another (Iceberg v2's rules):
// int to long, float to double, decimal(P, S) to decimal(P2, S) with P2 > P.
bool IsWidening(const std::string& from, const std::string& to);

// `schema` (an Iceberg schema object) after `changes`, applied in order, as
// a new schema with id `schema_id`; fields keep their ids, an added column
// (optional, at the end) takes *last_column_id + 1, which is updated. Only
// top-level columns change. `fixed` names the columns whose name and type
// stay, each with why ("the time column"). Errors: kInvalid naming the
// change and the column: an unknown column, a name taken already, an empty
// name, a type Iceberg cannot hold or a nested one, a type change that is
// not a widening, a change of a fixed column; nothing is changed then.
arrow::Result<nlohmann::json> EvolveSchema(
    const nlohmann::json& schema, const std::vector<SchemaChange>& changes,
    const std::map<std::string, std::string>& fixed, int schema_id, int* last_column_id);

}  // namespace timelake::format

#endif  // TIMELAKE_FORMAT_SCHEMA_H_
