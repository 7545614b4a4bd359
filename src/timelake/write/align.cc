// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/write/align.h"

#include <set>

#include <arrow/array.h>
#include <arrow/compute/api.h>
#include <arrow/record_batch.h>

#include "timelake/format/schema.h"
#include "timelake/timelake.h"
#include "timelake/util/compute.h"

namespace timelake {

namespace write {

arrow::Result<std::shared_ptr<arrow::DataType>> StoredType(
    const std::shared_ptr<arrow::DataType>& type, const std::string& column) {
  switch (type->id()) {
    case arrow::Type::TIMESTAMP: {
      const auto& ts = static_cast<const arrow::TimestampType&>(*type);
      return ts.timezone().empty()
                 ? arrow::timestamp(arrow::TimeUnit::MICRO)
                 : arrow::timestamp(arrow::TimeUnit::MICRO, format::kUtcZone);
    }
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
      return arrow::int32();
    case arrow::Type::UINT32:
      return arrow::int64();
    case arrow::Type::DICTIONARY:
      return StoredType(static_cast<const arrow::DictionaryType&>(*type).value_type(),
                        column);
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW:
      return arrow::utf8();
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
      return arrow::binary();
    case arrow::Type::HALF_FLOAT:
      return arrow::float32();
    case arrow::Type::DATE64:
      return arrow::date32();
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
      return arrow::time64(arrow::TimeUnit::MICRO);
    case arrow::Type::UINT64:
      return Invalid("column '" + column +
                     "' is uint64, which Iceberg cannot hold: cast it to int64 first");
    case arrow::Type::NA:
      return Invalid("column '" + column + "' has type null: give it a concrete type");
    default:
      break;
  }
  auto name = format::IcebergTypeName(*type);
  if (!name.ok() && type->num_fields() == 0) {
    return Invalid("column '" + column + "': " + name.status().message());
  }
  return type;
}

arrow::Result<std::shared_ptr<arrow::Schema>> NormalizeSchema(
    const arrow::Schema& schema, const std::optional<std::string>& time_column,
    const std::vector<std::string>& series_key, const std::string& ingest_column) {
  std::set<std::string> names;
  arrow::FieldVector fields;
  bool found_time = false;
  for (const auto& f : schema.fields()) {
    if (!names.insert(f->name()).second) {
      return Invalid("schema has two columns named '" + f->name() + "'");
    }
    if (f->name().empty()) return Invalid("schema has a column with an empty name");
    TIMELAKE_ASSIGN_OR_RAISE(auto type, StoredType(f->type(), f->name()));
    bool nullable = f->nullable();
    if (time_column && f->name() == *time_column) {
      found_time = true;
      if (type->id() == arrow::Type::STRING || type->id() == arrow::Type::DATE32) {
        type = arrow::timestamp(arrow::TimeUnit::MICRO, format::kUtcZone);
      } else if (type->id() != arrow::Type::TIMESTAMP) {
        return Invalid("time column '" + *time_column + "' has type " +
                       f->type()->ToString() +
                       ": it must be a timestamp (or text/date convertible to one)");
      } else {
        type = arrow::timestamp(arrow::TimeUnit::MICRO, format::kUtcZone);
      }
      nullable = false;
    }
    if (time_column && !ingest_column.empty() && f->name() == ingest_column) {
      return Invalid("column '" + ingest_column +
                     "' is reserved for the insertion time of time-series tables");
    }
    fields.push_back(arrow::field(f->name(), type, nullable));
  }
  if (time_column && !found_time) {
    return Invalid("time column '" + *time_column + "' is not in the schema");
  }
  std::set<std::string> seen_keys;
  for (const auto& k : series_key) {
    if (!names.count(k))
      return Invalid("series key column '" + k + "' is not in the schema");
    if (!seen_keys.insert(k).second) {
      return Invalid("series key column '" + k + "' is given twice");
    }
    if (time_column && k == *time_column) {
      return Invalid("series key column '" + k + "' is the time column");
    }
  }
  if (!series_key.empty() && !time_column) {
    return Invalid("a series key needs a time column");
  }
  // Time-series tables get the insertion-time column (rollup tables: none).
  if (time_column && !ingest_column.empty()) {
    fields.push_back(arrow::field(
        ingest_column, arrow::timestamp(arrow::TimeUnit::MICRO, format::kUtcZone),
        /*nullable=*/false));
  }
  return arrow::schema(fields);
}

}  // namespace write

namespace {

// Casts one column; text to timestamp goes through strptime-like parsing
// (ISO-8601), which Arrow's cast supports.
arrow::Result<std::shared_ptr<arrow::Array>> CastColumn(
    const std::shared_ptr<arrow::Array>& array, const arrow::Field& target) {
  if (array->type()->Equals(*target.type())) return array;
  arrow::compute::CastOptions options = arrow::compute::CastOptions::Safe(target.type());
  auto cast = arrow::compute::Cast(*array, target.type(), options);
  if (!cast.ok()) {
    return Invalid("column '" + target.name() + "': cannot store " +
                   array->type()->ToString() + " as " + target.type()->ToString() + " (" +
                   cast.status().message() + ")");
  }
  return *cast;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> AlignBatch(
    const arrow::RecordBatch& batch, const arrow::Schema& table_schema) {
  TIMELAKE_RETURN_NOT_OK(internal::EnsureCompute());
  for (const auto& f : batch.schema()->fields()) {
    if (table_schema.GetFieldIndex(f->name()) < 0) {
      return Invalid("column '" + f->name() +
                     "' is not in the table schema (evolve the schema first)");
    }
    if (batch.schema()->GetFieldIndex(f->name()) < 0) {
      return Invalid("column '" + f->name() + "' appears more than once in the batch");
    }
  }
  arrow::ArrayVector columns;
  for (const auto& target : table_schema.fields()) {
    const int i = batch.schema()->GetFieldIndex(target->name());
    std::shared_ptr<arrow::Array> column;
    if (i < 0) {
      if (!target->nullable() && target->name() != write::kIngestColumn) {
        return Invalid("column '" + target->name() + "' is missing and may not be null");
      }
      TIMELAKE_ASSIGN_OR_RAISE(column,
                               arrow::MakeArrayOfNull(target->type(), batch.num_rows()));
    } else {
      TIMELAKE_ASSIGN_OR_RAISE(column, CastColumn(batch.column(i), *target));
      if (!target->nullable() && column->null_count() > 0 &&
          target->name() != write::kIngestColumn) {
        return Invalid("column '" + target->name() + "' may not be null, but " +
                       std::to_string(column->null_count()) + " of " +
                       std::to_string(batch.num_rows()) + " rows are null");
      }
    }
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(arrow::schema(table_schema.fields()), batch.num_rows(),
                                  std::move(columns));
}

}  // namespace timelake
