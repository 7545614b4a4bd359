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

bool IsWidening(const std::string& from, const std::string& to) {
  if (from == "int" && to == "long") return true;
  if (from == "float" && to == "double") return true;
  int p1 = 0, s1 = 0, p2 = 0, s2 = 0;
  if (std::sscanf(from.c_str(), "decimal(%d, %d)", &p1, &s1) == 2 ||
      std::sscanf(from.c_str(), "decimal(%d,%d)", &p1, &s1) == 2) {
    if (std::sscanf(to.c_str(), "decimal(%d, %d)", &p2, &s2) == 2 ||
        std::sscanf(to.c_str(), "decimal(%d,%d)", &p2, &s2) == 2) {
      return s1 == s2 && p2 > p1;
    }
  }
  return false;
}

namespace {

std::string Describe(const SchemaChange& c) {
  switch (c.kind) {
    case SchemaChange::Kind::kAddColumn:
      return "adding column '" + c.column + "'";
    case SchemaChange::Kind::kRenameColumn:
      return "renaming column '" + c.column + "' to '" + c.new_name + "'";
    case SchemaChange::Kind::kWidenColumn:
      return "widening column '" + c.column + "'";
  }
  return "changing column '" + c.column + "'";
}

}  // namespace

arrow::Result<json> EvolveSchema(const json& schema,
                                 const std::vector<SchemaChange>& changes,
                                 const std::map<std::string, std::string>& fixed,
                                 int schema_id, int* last_column_id) {
  if (!schema.is_object() || !schema.contains("fields") || !schema["fields"].is_array()) {
    return Corrupt("Iceberg schema without fields: " + schema.dump().substr(0, 200));
  }
  json out = schema;
  out["schema-id"] = schema_id;
  json& fields = out["fields"];
  auto find = [&](const std::string& name) -> json* {
    for (auto& f : fields) {
      if (f.is_object() && f.value("name", "") == name) return &f;
    }
    return nullptr;
  };
  // Fixed columns by field id, so that a rename earlier in the list does
  // not free them.
  std::map<int, std::string> fixed_ids;
  for (const auto& [name, why] : fixed) {
    if (const json* f = find(name)) fixed_ids[GetInt<int>(f->at("id"))] = why;
  }
  auto why_fixed = [&](const json& f) -> std::optional<std::string> {
    auto it = fixed_ids.find(GetInt<int>(f.at("id")));
    if (it == fixed_ids.end()) return std::nullopt;
    return it->second;
  };
  try {
    for (const auto& c : changes) {
      const std::string what = Describe(c);
      if (c.column.empty()) return Invalid(what + ": no column name");
      switch (c.kind) {
        case SchemaChange::Kind::kAddColumn: {
          if (find(c.column) != nullptr) {
            return Invalid(what + ": the table has a column '" + c.column + "' already");
          }
          if (c.type == nullptr) return Invalid(what + ": no type");
          if (c.type->num_fields() > 0) {
            return Invalid(what + ": type " + c.type->ToString() +
                           " is nested; only columns of a primitive type can be added");
          }
          auto type = IcebergTypeName(*c.type);
          if (!type.ok()) return Invalid(what + ": " + type.status().message());
          *last_column_id += 1;
          fields.push_back({{"id", *last_column_id},
                            {"name", c.column},
                            {"required", false},
                            {"type", *type}});
          break;
        }
        case SchemaChange::Kind::kRenameColumn: {
          json* f = find(c.column);
          if (f == nullptr) return Invalid(what + ": the table has no such column");
          if (c.new_name.empty()) return Invalid(what + ": no new name");
          if (c.new_name == c.column) return Invalid(what + ": the name is the same");
          if (find(c.new_name) != nullptr) {
            return Invalid(what + ": the table has a column '" + c.new_name +
                           "' already");
          }
          if (auto why = why_fixed(*f)) {
            return Invalid(what + ": it is " + *why + ", which the table's " +
                           "timelake.* properties name; it keeps its name");
          }
          (*f)["name"] = c.new_name;
          break;
        }
        case SchemaChange::Kind::kWidenColumn: {
          json* f = find(c.column);
          if (f == nullptr) return Invalid(what + ": the table has no such column");
          if (c.type == nullptr) return Invalid(what + ": no type");
          if (auto why = why_fixed(*f)) {
            return Invalid(what + ": it is " + *why + ", whose type is fixed");
          }
          if (!f->at("type").is_string()) {
            return Invalid(what + ": it is a nested column; only int, float and " +
                           "decimal columns can be widened");
          }
          const std::string from = f->at("type").get<std::string>();
          auto to = IcebergTypeName(*c.type);
          if (!to.ok()) return Invalid(what + ": " + to.status().message());
          if (!IsWidening(from, *to)) {
            return Invalid(what + " from " + from + " to " + *to +
                           ": not a widening Iceberg allows (int to long, float to " +
                           "double, decimal(P, S) to a larger precision P)");
          }
          (*f)["type"] = *to;
          break;
        }
      }
    }
  } catch (const json::exception& e) {
    return Corrupt(std::string("malformed Iceberg schema: ") + e.what());
  }
  return out;
}

arrow::Result<json> ArrowToIceberg(const arrow::Schema& schema, int schema_id,
                                   int* last_column_id) {
  IdAssigner ids(0);
  TIMELAKE_ASSIGN_OR_RAISE(json fields, FieldsToJson(schema.fields(), "", &ids));
  *last_column_id = ids.last();
  return json{{"type", "struct"}, {"schema-id", schema_id}, {"fields", fields}};
}

}  // namespace timelake::format
