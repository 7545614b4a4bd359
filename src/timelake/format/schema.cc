// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/schema.h"

#include <arrow/util/key_value_metadata.h>

#include "timelake/format/json_int.h"

namespace timelake::format {

namespace {

using internal::GetInt;
using nlohmann::json;

std::shared_ptr<arrow::KeyValueMetadata> IdMetadata(int id) {
  return arrow::key_value_metadata({kFieldIdKey}, {std::to_string(id)});
}

arrow::Result<std::shared_ptr<arrow::DataType>> TypeFromJson(const json& type,
                                                             const std::string& where);

arrow::Result<std::shared_ptr<arrow::Field>> FieldFromJson(const json& f) {
  if (!f.is_object() || !f.contains("id") || !f.contains("name") || !f.contains("type")) {
    return Corrupt("Iceberg schema field without id, name or type: " + f.dump());
  }
  const std::string name = f["name"].get<std::string>();
  TIMELAKE_ASSIGN_OR_RAISE(auto type, TypeFromJson(f["type"], name));
  const bool required = f.value("required", false);
  return arrow::field(name, type, !required, IdMetadata(GetInt<int>(f["id"])));
}

arrow::Result<std::shared_ptr<arrow::DataType>> TypeFromJson(const json& type,
                                                             const std::string& where) {
  if (type.is_string()) {
    const std::string t = type.get<std::string>();
    if (t == "boolean") return arrow::boolean();
    if (t == "int") return arrow::int32();
    if (t == "long") return arrow::int64();
    if (t == "float") return arrow::float32();
    if (t == "double") return arrow::float64();
    if (t == "date") return arrow::date32();
    if (t == "time") return arrow::time64(arrow::TimeUnit::MICRO);
    if (t == "timestamp") return arrow::timestamp(arrow::TimeUnit::MICRO);
    if (t == "timestamptz") return arrow::timestamp(arrow::TimeUnit::MICRO, kUtcZone);
    if (t == "timestamp_ns") return arrow::timestamp(arrow::TimeUnit::NANO);
    if (t == "timestamptz_ns") return arrow::timestamp(arrow::TimeUnit::NANO, kUtcZone);
    if (t == "string") return arrow::utf8();
    if (t == "uuid") return arrow::fixed_size_binary(16);
    if (t == "binary") return arrow::binary();
    int a = 0, b = 0;
    if (std::sscanf(t.c_str(), "decimal(%d, %d)", &a, &b) == 2 ||
        std::sscanf(t.c_str(), "decimal(%d,%d)", &a, &b) == 2) {
      if (a < 1 || a > 38 || b < 0 || b > a) return Corrupt("bad decimal type " + t);
      return arrow::decimal128(a, b);
    }
    if (std::sscanf(t.c_str(), "fixed[%d]", &a) == 1) {
      if (a < 1) return Corrupt("bad fixed type " + t);
      return arrow::fixed_size_binary(a);
    }
    return Corrupt("column '" + where + "' has an unknown Iceberg type '" + t + "'");
  }
  if (!type.is_object() || !type.contains("type")) {
    return Corrupt("column '" + where + "' has a malformed type: " + type.dump());
  }
  const std::string kind = type["type"].get<std::string>();
  if (kind == "struct") {
    arrow::FieldVector fields;
    for (const auto& f : type.at("fields")) {
      TIMELAKE_ASSIGN_OR_RAISE(auto field, FieldFromJson(f));
      fields.push_back(field);
    }
    return arrow::struct_(fields);
  }
  if (kind == "list") {
    TIMELAKE_ASSIGN_OR_RAISE(auto elem,
                             TypeFromJson(type.at("element"), where + ".element"));
    return arrow::list(arrow::field("element", elem,
                                    !type.value("element-required", false),
                                    IdMetadata(GetInt<int>(type.at("element-id")))));
  }
  if (kind == "map") {
    TIMELAKE_ASSIGN_OR_RAISE(auto key, TypeFromJson(type.at("key"), where + ".key"));
    TIMELAKE_ASSIGN_OR_RAISE(auto value,
                             TypeFromJson(type.at("value"), where + ".value"));
    auto key_field =
        arrow::field("key", key, false, IdMetadata(GetInt<int>(type.at("key-id"))));
    auto value_field = arrow::field("value", value, !type.value("value-required", false),
                                    IdMetadata(GetInt<int>(type.at("value-id"))));
    return std::make_shared<arrow::MapType>(key_field, value_field);
  }
  return Corrupt("column '" + where + "' has an unknown Iceberg type '" + kind + "'");
}

// Assigns ids depth-first: a struct's own fields first, then nested ones, as
// Iceberg's reassignment does.
class IdAssigner {
 public:
  explicit IdAssigner(int start) : next_(start) {}
  int Next() { return ++next_; }
  int last() const { return next_; }

 private:
  int next_;
};

arrow::Result<json> TypeToJson(const arrow::DataType& type, const std::string& where,
                               IdAssigner* ids);

arrow::Result<json> FieldsToJson(const arrow::FieldVector& fields,
                                 const std::string& prefix, IdAssigner* ids) {
  std::vector<int> field_ids;
  for (size_t i = 0; i < fields.size(); ++i) field_ids.push_back(ids->Next());
  json out = json::array();
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    TIMELAKE_ASSIGN_OR_RAISE(json t, TypeToJson(*f->type(), prefix + f->name(), ids));
    out.push_back({{"id", field_ids[i]},
                   {"name", f->name()},
                   {"required", !f->nullable()},
                   {"type", t}});
  }
  return out;
}

arrow::Result<json> TypeToJson(const arrow::DataType& type, const std::string& where,
                               IdAssigner* ids) {
  switch (type.id()) {
    case arrow::Type::STRUCT: {
      TIMELAKE_ASSIGN_OR_RAISE(json fields,
                               FieldsToJson(type.fields(), where + ".", ids));
      return json{{"type", "struct"}, {"fields", fields}};
    }
    case arrow::Type::LIST:
    case arrow::Type::LARGE_LIST:
    case arrow::Type::LIST_VIEW:
    case arrow::Type::LARGE_LIST_VIEW:
    case arrow::Type::FIXED_SIZE_LIST: {
      const auto& elem = type.field(0);
      const int id = ids->Next();
      TIMELAKE_ASSIGN_OR_RAISE(json t,
                               TypeToJson(*elem->type(), where + ".element", ids));
      return json{{"type", "list"},
                  {"element-id", id},
                  {"element", t},
                  {"element-required", !elem->nullable()}};
    }
    case arrow::Type::MAP: {
      const auto& map = static_cast<const arrow::MapType&>(type);
      const int key_id = ids->Next();
      const int value_id = ids->Next();
      TIMELAKE_ASSIGN_OR_RAISE(json k, TypeToJson(*map.key_type(), where + ".key", ids));
      TIMELAKE_ASSIGN_OR_RAISE(json v,
                               TypeToJson(*map.item_type(), where + ".value", ids));
      return json{{"type", "map"}, {"key-id", key_id},
                  {"key", k},      {"value-id", value_id},
                  {"value", v},    {"value-required", !map.item_field()->nullable()}};
    }
    default: {
      auto name = IcebergTypeName(type);
      if (!name.ok()) {
        return Invalid("column '" + where + "': " + name.status().message());
      }
      return json(*name);
    }
  }
}

}  // namespace

arrow::Result<std::string> IcebergTypeName(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::BOOL:
      return "boolean";
    case arrow::Type::INT8:
    case arrow::Type::INT16:
    case arrow::Type::INT32:
    case arrow::Type::UINT8:
    case arrow::Type::UINT16:
      return "int";
    case arrow::Type::INT64:
    case arrow::Type::UINT32:
      return "long";
    case arrow::Type::HALF_FLOAT:
    case arrow::Type::FLOAT:
      return "float";
    case arrow::Type::DOUBLE:
      return "double";
    case arrow::Type::DATE32:
    case arrow::Type::DATE64:
      return "date";
    case arrow::Type::TIME32:
    case arrow::Type::TIME64:
      return "time";
    case arrow::Type::TIMESTAMP:
      return static_cast<const arrow::TimestampType&>(type).timezone().empty()
                 ? "timestamp"
                 : "timestamptz";
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW:
      return "string";
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
      return "binary";
    case arrow::Type::FIXED_SIZE_BINARY:
      return "fixed[" +
             std::to_string(
                 static_cast<const arrow::FixedSizeBinaryType&>(type).byte_width()) +
             "]";
    case arrow::Type::DECIMAL128: {
      const auto& d = static_cast<const arrow::Decimal128Type&>(type);
      return "decimal(" + std::to_string(d.precision()) + ", " +
             std::to_string(d.scale()) + ")";
    }
    case arrow::Type::DICTIONARY:
      return IcebergTypeName(
          *static_cast<const arrow::DictionaryType&>(type).value_type());
    default:
      return Invalid("type " + type.ToString() + " has no Iceberg equivalent");
  }
}

std::optional<int> FieldId(const arrow::Field& field) {
  if (!field.metadata()) return std::nullopt;
  auto v = field.metadata()->Get(kFieldIdKey);
  if (!v.ok()) return std::nullopt;
  try {
    return std::stoi(*v);
  } catch (...) {
    return std::nullopt;
  }
}

arrow::Result<std::shared_ptr<arrow::Schema>> IcebergToArrow(const json& schema) {
  if (!schema.is_object() || !schema.contains("fields") || !schema["fields"].is_array()) {
    return Corrupt("Iceberg schema without fields: " + schema.dump().substr(0, 200));
  }
  arrow::FieldVector fields;
  try {
    for (const auto& f : schema["fields"]) {
      TIMELAKE_ASSIGN_OR_RAISE(auto field, FieldFromJson(f));
      fields.push_back(field);
    }
  } catch (const json::exception& e) {
    return Corrupt(std::string("malformed Iceberg schema: ") + e.what());
  }
  return arrow::schema(fields);
}

arrow::Result<json> ArrowToIceberg(const arrow::Schema& schema, int schema_id,
                                   int* last_column_id) {
  IdAssigner ids(0);
  TIMELAKE_ASSIGN_OR_RAISE(json fields, FieldsToJson(schema.fields(), "", &ids));
  *last_column_id = ids.last();
  return json{{"type", "struct"}, {"schema-id", schema_id}, {"fields", fields}};
}

}  // namespace timelake::format
