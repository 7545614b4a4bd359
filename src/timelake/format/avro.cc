// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/avro.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <set>

namespace timelake::format {

namespace {

using Json = nlohmann::ordered_json;

// Schema nesting limit: Iceberg manifests nest about six levels deep.
constexpr int kMaxSchemaDepth = 64;
// Limit on schema nodes once named references are expanded (each reference
// copies its definition, which could otherwise grow exponentially).
constexpr int64_t kMaxSchemaNodes = 100000;

std::string Str(int64_t v) { return std::to_string(v); }

bool IsStructuralKey(std::string_view key) {
  return key == "type" || key == "name" || key == "namespace" || key == "fields" ||
         key == "items" || key == "values" || key == "size" || key == "symbols";
}

std::optional<AvroType> PrimitiveFromName(std::string_view name) {
  if (name == "null") return AvroType::kNull;
  if (name == "boolean") return AvroType::kBoolean;
  if (name == "int") return AvroType::kInt;
  if (name == "long") return AvroType::kLong;
  if (name == "float") return AvroType::kFloat;
  if (name == "double") return AvroType::kDouble;
  if (name == "bytes") return AvroType::kBytes;
  if (name == "string") return AvroType::kString;
  return std::nullopt;
}

std::optional<int32_t> JsonInt32(const Json& j) {
  if (!j.is_number_integer()) return std::nullopt;
  if (j.is_number_unsigned()) {
    auto v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      return std::nullopt;
    return static_cast<int32_t>(v);
  }
  auto v = j.get<int64_t>();
  if (v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    return std::nullopt;
  }
  return static_cast<int32_t>(v);
}

int64_t CountNodes(const AvroSchema& s) {
  int64_t n = 1;
  for (const auto& f : s.fields) n += CountNodes(f.schema);
  for (const auto& c : s.children) n += CountNodes(c);
  return n;
}

class SchemaParser {
 public:
  arrow::Result<AvroSchema> Parse(const Json& j, const std::string& ns, int depth) {
    if (depth > kMaxSchemaDepth) {
      return Invalid("avro schema nests deeper than " + Str(kMaxSchemaDepth) + " levels");
    }
    if (++nodes_ > kMaxSchemaNodes) return TooManyNodes();
    if (j.is_string()) return ParseName(j.get<std::string>(), ns);
    if (j.is_array()) return ParseUnion(j, ns, depth);
    if (!j.is_object()) {
      return Invalid("avro schema: expected a type name, object or array, got " +
                     j.dump(-1, ' ', false, Json::error_handler_t::replace));
    }
    auto type_it = j.find("type");
    if (type_it == j.end()) return Invalid("avro schema: object without \"type\"");
    if (!type_it->is_string()) {
      // {"type": {...}} or {"type": [...]}: a wrapped schema.
      return Parse(*type_it, ns, depth + 1);
    }
    const std::string type = type_it->get<std::string>();
    AvroSchema out;
    if (auto prim = PrimitiveFromName(type)) {
      out.type = *prim;
    } else if (type == "record" || type == "error") {
      return ParseRecord(j, ns, depth);
    } else if (type == "enum") {
      return ParseEnum(j, ns);
    } else if (type == "fixed") {
      return ParseFixed(j, ns);
    } else if (type == "array" || type == "map") {
      const char* key = type == "array" ? "items" : "values";
      auto it = j.find(key);
      if (it == j.end())
        return Invalid("avro schema: " + type + " without \"" + key + "\"");
      TIMELAKE_ASSIGN_OR_RAISE(auto child, Parse(*it, ns, depth + 1));
      out.type = type == "array" ? AvroType::kArray : AvroType::kMap;
      out.children.push_back(std::move(child));
    } else {
      // {"type": "SomeNamedType"}: a reference in object form.
      return ParseName(type, ns);
    }
    CopyAttributes(j, &out.attributes);
    return out;
  }

 private:
  static arrow::Status TooManyNodes() {
    return Invalid("avro schema has more than " + Str(kMaxSchemaNodes) +
                   " nodes once named types are expanded");
  }

  static void CopyAttributes(const Json& j, AvroAttributes* attrs) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!IsStructuralKey(it.key())) (*attrs)[it.key()] = it.value();
    }
  }

  static std::string FullName(const std::string& name, const std::string& ns) {
    if (name.find('.') != std::string::npos || ns.empty()) return name;
    return ns + "." + name;
  }

  arrow::Result<AvroSchema> ParseName(const std::string& name, const std::string& ns) {
    if (auto prim = PrimitiveFromName(name)) return AvroSchema::Primitive(*prim);
    for (const std::string& candidate : {FullName(name, ns), name}) {
      if (defining_.count(candidate)) {
        return Invalid("avro schema: recursive reference to \"" + candidate +
                       "\" is not supported");
      }
      auto it = named_.find(candidate);
      if (it != named_.end()) {
        nodes_ += CountNodes(it->second);
        if (nodes_ > kMaxSchemaNodes) return TooManyNodes();
        return it->second;
      }
    }
    return Invalid("avro schema: unknown type \"" + name + "\"");
  }

  arrow::Result<AvroSchema> ParseUnion(const Json& j, const std::string& ns, int depth) {
    AvroSchema out;
    out.type = AvroType::kUnion;
    for (const auto& branch : j) {
      TIMELAKE_ASSIGN_OR_RAISE(auto b, Parse(branch, ns, depth + 1));
      if (b.type == AvroType::kUnion) {
        return Invalid("avro schema: a union may not directly contain a union");
      }
      out.children.push_back(std::move(b));
    }
    return out;
  }

  // Reads "name" and "namespace" of a named type; returns the full name and
  // sets *child_ns to the namespace its children inherit.
  arrow::Result<std::string> NameOf(const Json& j, const std::string& ns, bool required,
                                    std::string* child_ns) {
    *child_ns = ns;
    auto it = j.find("name");
    if (it == j.end()) {
      if (required) return Invalid("avro schema: named type without \"name\"");
      return std::string();  // lenient: anonymous record
    }
    if (!it->is_string() || it->get<std::string>().empty()) {
      return Invalid("avro schema: \"name\" must be a non-empty string");
    }
    std::string name = it->get<std::string>();
    if (auto ns_it = j.find("namespace");
        ns_it != j.end() && ns_it->is_string() && name.find('.') == std::string::npos) {
      *child_ns = ns_it->get<std::string>();
    }
    std::string full = FullName(name, *child_ns);
    if (auto dot = full.rfind('.'); dot != std::string::npos)
      *child_ns = full.substr(0, dot);
    if (named_.count(full) || defining_.count(full)) {
      return Invalid("avro schema: type \"" + full + "\" is defined twice");
    }
    return full;
  }

  arrow::Result<AvroSchema> ParseRecord(const Json& j, const std::string& ns, int depth) {
    AvroSchema out;
    out.type = AvroType::kRecord;
    std::string child_ns;
    TIMELAKE_ASSIGN_OR_RAISE(out.name, NameOf(j, ns, /*required=*/false, &child_ns));
    auto fields = j.find("fields");
    if (fields == j.end() || !fields->is_array()) {
      return Invalid("avro schema: record \"" + out.name +
                     "\" without a \"fields\" array");
    }
    if (!out.name.empty()) defining_.insert(out.name);
    std::set<std::string> seen;
    for (const auto& f : *fields) {
      auto name = f.is_object() ? f.find("name") : f.end();
      if (!f.is_object() || name == f.end() || !name->is_string()) {
        return Invalid("avro schema: a field of record \"" + out.name +
                       "\" has no string \"name\"");
      }
      AvroField field;
      field.name = name->get<std::string>();
      if (!seen.insert(field.name).second) {
        return Invalid("avro schema: record \"" + out.name +
                       "\" has two fields named \"" + field.name + "\"");
      }
      auto type = f.find("type");
      if (type == f.end()) {
        return Invalid("avro schema: field \"" + field.name + "\" has no \"type\"");
      }
      TIMELAKE_ASSIGN_OR_RAISE(field.schema, Parse(*type, child_ns, depth + 1));
      for (auto it = f.begin(); it != f.end(); ++it) {
        if (it.key() != "name" && it.key() != "type")
          field.attributes[it.key()] = it.value();
      }
      out.fields.push_back(std::move(field));
    }
    CopyAttributes(j, &out.attributes);
    if (!out.name.empty()) {
      defining_.erase(out.name);
      named_[out.name] = out;
    }
    return out;
  }

  arrow::Result<AvroSchema> ParseEnum(const Json& j, const std::string& ns) {
    AvroSchema out;
    out.type = AvroType::kEnum;
    std::string child_ns;
    TIMELAKE_ASSIGN_OR_RAISE(out.name, NameOf(j, ns, /*required=*/true, &child_ns));
    auto symbols = j.find("symbols");
    if (symbols == j.end() || !symbols->is_array()) {
      return Invalid("avro schema: enum \"" + out.name +
                     "\" without a \"symbols\" array");
    }
    for (const auto& s : *symbols) {
      if (!s.is_string()) return Invalid("avro schema: enum symbols must be strings");
      out.symbols.push_back(s.get<std::string>());
    }
    CopyAttributes(j, &out.attributes);
    named_[out.name] = out;
    return out;
  }

  arrow::Result<AvroSchema> ParseFixed(const Json& j, const std::string& ns) {
    AvroSchema out;
    out.type = AvroType::kFixed;
    std::string child_ns;
    TIMELAKE_ASSIGN_OR_RAISE(out.name, NameOf(j, ns, /*required=*/true, &child_ns));
    auto size = j.find("size");
    if (size == j.end() || !size->is_number_integer() ||
        (!size->is_number_unsigned() && size->get<int64_t>() < 0) ||
        (size->is_number_unsigned() &&
         size->get<uint64_t>() >
             static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))) {
      return Invalid("avro schema: fixed \"" + out.name +
                     "\" needs a non-negative integer \"size\"");
    }
    out.fixed_size = size->get<int64_t>();
    CopyAttributes(j, &out.attributes);
    named_[out.name] = out;
    return out;
  }

  std::map<std::string, AvroSchema> named_;
  std::set<std::string> defining_;
  int64_t nodes_ = 0;
};

Json SchemaToJson(const AvroSchema& s, std::set<std::string>* emitted) {
  auto with_attributes = [&s](Json j) {
    for (auto it = s.attributes.begin(); it != s.attributes.end(); ++it) {
      if (!IsStructuralKey(it.key())) j[it.key()] = it.value();
    }
    return j;
  };
  const std::string type_name(AvroTypeName(s.type));
  switch (s.type) {
    case AvroType::kUnion: {
      Json j = Json::array();
      for (const auto& c : s.children) j.push_back(SchemaToJson(c, emitted));
      return j;
    }
    case AvroType::kRecord:
    case AvroType::kEnum:
    case AvroType::kFixed: {
      if (!s.name.empty() && !emitted->insert(s.name).second) return Json(s.name);
      Json j = Json::object();
      j["type"] = type_name;
      if (!s.name.empty()) j["name"] = s.name;
      if (s.type == AvroType::kRecord) {
        Json fields = Json::array();
        for (const auto& f : s.fields) {
          Json fj = Json::object();
          fj["name"] = f.name;
          fj["type"] = SchemaToJson(f.schema, emitted);
          for (auto it = f.attributes.begin(); it != f.attributes.end(); ++it) {
            if (it.key() != "name" && it.key() != "type") fj[it.key()] = it.value();
          }
          fields.push_back(std::move(fj));
        }
        j["fields"] = std::move(fields);
      } else if (s.type == AvroType::kEnum) {
        j["symbols"] = s.symbols;
      } else {
        j["size"] = s.fixed_size;
      }
      return with_attributes(std::move(j));
    }
    case AvroType::kArray:
    case AvroType::kMap: {
      Json j = Json::object();
      j["type"] = type_name;
      j[s.type == AvroType::kArray ? "items" : "values"] =
          s.children.empty() ? Json("null") : SchemaToJson(s.children.front(), emitted);
      return with_attributes(std::move(j));
    }
    default:
      if (s.attributes.empty()) return Json(type_name);
      Json j = Json::object();
      j["type"] = type_name;
      return with_attributes(std::move(j));
  }
}

// ---------------------------------------------------------------------------
// Value encoding
// ---------------------------------------------------------------------------

// Whether `v` can be encoded as `s` (shallow: used to pick a union branch).
bool Accepts(const AvroSchema& s, const AvroValue& v) {
  const auto& var = v.variant();
  switch (s.type) {
    case AvroType::kNull:
      return v.is_null();
    case AvroType::kBoolean:
      return std::holds_alternative<bool>(var);
    case AvroType::kInt:
      return std::holds_alternative<int32_t>(var);
    case AvroType::kLong:
      return std::holds_alternative<int32_t>(var) || std::holds_alternative<int64_t>(var);
    case AvroType::kFloat:
      return std::holds_alternative<float>(var);
    case AvroType::kDouble:
      return std::holds_alternative<float>(var) || std::holds_alternative<double>(var);
    case AvroType::kBytes:
    case AvroType::kString:
      return std::holds_alternative<std::string>(var);
    case AvroType::kFixed: {
      const auto* str = v.get_if<std::string>();
      return str && static_cast<int64_t>(str->size()) == s.fixed_size;
    }
    case AvroType::kEnum: {
      const auto* str = v.get_if<std::string>();
      return str &&
             std::find(s.symbols.begin(), s.symbols.end(), *str) != s.symbols.end();
    }
    case AvroType::kRecord: {
      const auto* rec = v.get_if<AvroRecord>();
      return rec && rec->fields.size() == s.fields.size();
    }
    case AvroType::kArray:
      return std::holds_alternative<AvroArray>(var);
    case AvroType::kMap:
      return std::holds_alternative<AvroMap>(var);
    case AvroType::kUnion:
      return false;
  }
  return false;
}

arrow::Status Mismatch(const AvroSchema& s, const AvroValue& v) {
  std::string expected(AvroTypeName(s.type));
  if (s.type == AvroType::kFixed) expected += "(" + Str(s.fixed_size) + ")";
  if (s.type == AvroType::kRecord)
    expected += " with " + Str(s.fields.size()) + " fields";
  std::string got(v.kind_name());
  if (const auto* str = v.get_if<std::string>())
    got += " of " + Str(str->size()) + " bytes";
  if (const auto* rec = v.get_if<AvroRecord>()) {
    got += " with " + Str(rec->fields.size()) + " fields";
  }
  return Invalid("expected " + expected + ", got " + got);
}

arrow::Status Encode(const AvroSchema& s, const AvroValue& v, std::string* out) {
  if (s.type == AvroType::kUnion) {
    for (size_t i = 0; i < s.children.size(); ++i) {
      if (Accepts(s.children[i], v)) {
        AppendAvroLong(static_cast<int64_t>(i), out);
        return Encode(s.children[i], v, out);
      }
    }
    std::set<std::string> emitted;
    return Invalid(
        "no branch of union " +
        SchemaToJson(s, &emitted).dump(-1, ' ', false, Json::error_handler_t::replace) +
        " accepts " + std::string(v.kind_name()));
  }
  if (!Accepts(s, v)) return Mismatch(s, v);
  const auto& var = v.variant();
  switch (s.type) {
    case AvroType::kNull:
      return arrow::Status::OK();
    case AvroType::kBoolean:
      AppendAvroBoolean(std::get<bool>(var), out);
      return arrow::Status::OK();
    case AvroType::kInt:
      AppendAvroInt(std::get<int32_t>(var), out);
      return arrow::Status::OK();
    case AvroType::kLong:
      AppendAvroLong(std::holds_alternative<int32_t>(var) ? std::get<int32_t>(var)
                                                          : std::get<int64_t>(var),
                     out);
      return arrow::Status::OK();
    case AvroType::kFloat:
      AppendAvroFloat(std::get<float>(var), out);
      return arrow::Status::OK();
    case AvroType::kDouble:
      AppendAvroDouble(std::holds_alternative<float>(var) ? std::get<float>(var)
                                                          : std::get<double>(var),
                       out);
      return arrow::Status::OK();
    case AvroType::kBytes:
    case AvroType::kString:
      AppendAvroBytes(std::get<std::string>(var), out);
      return arrow::Status::OK();
    case AvroType::kFixed:
      out->append(std::get<std::string>(var));
      return arrow::Status::OK();
    case AvroType::kEnum: {
      const auto& sym = std::get<std::string>(var);
      auto idx = std::find(s.symbols.begin(), s.symbols.end(), sym) - s.symbols.begin();
      AppendAvroInt(static_cast<int32_t>(idx), out);
      return arrow::Status::OK();
    }
    case AvroType::kRecord: {
      const auto& rec = std::get<AvroRecord>(var);
      for (size_t i = 0; i < s.fields.size(); ++i) {
        auto st = Encode(s.fields[i].schema, rec.fields[i], out);
        if (!st.ok()) return WithContext(st, s.fields[i].name);
      }
      return arrow::Status::OK();
    }
    case AvroType::kArray: {
      const auto& arr = std::get<AvroArray>(var);
      if (!arr.items.empty()) {
        AppendAvroLong(static_cast<int64_t>(arr.items.size()), out);
        for (size_t i = 0; i < arr.items.size(); ++i) {
          auto st = Encode(s.items(), arr.items[i], out);
          if (!st.ok()) return WithContext(st, "[" + Str(static_cast<int64_t>(i)) + "]");
        }
      }
      AppendAvroLong(0, out);
      return arrow::Status::OK();
    }
    case AvroType::kMap: {
      const auto& map = std::get<AvroMap>(var);
      if (!map.entries.empty()) {
        AppendAvroLong(static_cast<int64_t>(map.entries.size()), out);
        for (const auto& [key, value] : map.entries) {
          AppendAvroBytes(key, out);
          auto st = Encode(s.values(), value, out);
          if (!st.ok()) return WithContext(st, "[\"" + key + "\"]");
        }
      }
      AppendAvroLong(0, out);
      return arrow::Status::OK();
    }
    case AvroType::kUnion:
      break;
  }
  return Invalid("unreachable avro type");
}

// ---------------------------------------------------------------------------
// Value decoding
// ---------------------------------------------------------------------------

arrow::Status CorruptAt(const AvroDecoder& d, const std::string& what) {
  return Corrupt("avro: " + what + " at offset " + Str(d.offset()));
}

// Reads one block header of an array or map; returns the item count (0 at the
// end) and, for negative counts, the declared byte size in *block_bytes.
arrow::Result<int64_t> ReadBlockCount(AvroDecoder* d, const char* what,
                                      int64_t* block_bytes) {
  TIMELAKE_ASSIGN_OR_RAISE(int64_t count, d->ReadLong());
  *block_bytes = -1;
  if (count < 0) {
    if (count == std::numeric_limits<int64_t>::min()) {
      return CorruptAt(*d, std::string(what) + " block count out of range");
    }
    count = -count;
    TIMELAKE_ASSIGN_OR_RAISE(*block_bytes, d->ReadLong());
    if (*block_bytes < 0 || static_cast<uint64_t>(*block_bytes) > d->remaining()) {
      return CorruptAt(
          *d, std::string(what) + " block size " + Str(*block_bytes) + " exceeds the " +
                  Str(static_cast<int64_t>(d->remaining())) + " bytes remaining");
    }
  }
  return count;
}

arrow::Result<AvroValue> Decode(const AvroSchema& s, AvroDecoder* d) {
  switch (s.type) {
    case AvroType::kNull:
      TIMELAKE_RETURN_NOT_OK(d->ChargeValues(1));
      return AvroValue::Null();
    case AvroType::kBoolean: {
      TIMELAKE_ASSIGN_OR_RAISE(bool v, d->ReadBoolean());
      return AvroValue::Boolean(v);
    }
    case AvroType::kInt: {
      TIMELAKE_ASSIGN_OR_RAISE(int32_t v, d->ReadInt());
      return AvroValue::Int(v);
    }
    case AvroType::kLong: {
      TIMELAKE_ASSIGN_OR_RAISE(int64_t v, d->ReadLong());
      return AvroValue::Long(v);
    }
    case AvroType::kFloat: {
      TIMELAKE_ASSIGN_OR_RAISE(float v, d->ReadFloat());
      return AvroValue::Float(v);
    }
    case AvroType::kDouble: {
      TIMELAKE_ASSIGN_OR_RAISE(double v, d->ReadDouble());
      return AvroValue::Double(v);
    }
    case AvroType::kBytes:
    case AvroType::kString: {
      TIMELAKE_ASSIGN_OR_RAISE(std::string_view v, d->ReadBytes());
      return AvroValue::String(std::string(v));
    }
    case AvroType::kFixed: {
      if (s.fixed_size == 0) TIMELAKE_RETURN_NOT_OK(d->ChargeValues(1));
      TIMELAKE_ASSIGN_OR_RAISE(std::string_view v, d->ReadFixed(s.fixed_size));
      return AvroValue::String(std::string(v));
    }
    case AvroType::kEnum: {
      const int64_t at = d->offset();
      TIMELAKE_ASSIGN_OR_RAISE(int32_t idx, d->ReadInt());
      if (idx < 0 || static_cast<size_t>(idx) >= s.symbols.size()) {
        return Corrupt("avro: enum index " + Str(idx) + " out of range for " +
                       Str(static_cast<int64_t>(s.symbols.size())) +
                       " symbols at offset " + Str(at));
      }
      return AvroValue::String(s.symbols[idx]);
    }
    case AvroType::kRecord: {
      TIMELAKE_RETURN_NOT_OK(d->ChargeValues(1));
      std::vector<AvroValue> fields;
      fields.reserve(s.fields.size());
      for (const auto& f : s.fields) {
        auto v = Decode(f.schema, d);
        if (!v.ok()) return WithContext(v.status(), f.name);
        fields.push_back(std::move(v).ValueUnsafe());
      }
      return AvroValue::Record(std::move(fields));
    }
    case AvroType::kArray:
    case AvroType::kMap: {
      const bool is_map = s.type == AvroType::kMap;
      const char* what = is_map ? "map" : "array";
      AvroArray arr;
      AvroMap map;
      while (true) {
        int64_t block_bytes;
        TIMELAKE_ASSIGN_OR_RAISE(int64_t count, ReadBlockCount(d, what, &block_bytes));
        if (count == 0) break;
        // Every item either occupies at least one byte or is charged to the
        // value budget, so a larger count cannot be genuine.
        const int64_t room = static_cast<int64_t>(d->remaining());
        if (count > room + d->value_budget()) {
          return CorruptAt(*d, std::string(what) + " block count " + Str(count) +
                                   " exceeds what the remaining " + Str(room) +
                                   " bytes can hold");
        }
        const size_t start = d->position();
        const size_t reserve = static_cast<size_t>(std::min<int64_t>(count, room));
        if (is_map) {
          map.entries.reserve(map.entries.size() + reserve);
        } else {
          arr.items.reserve(arr.items.size() + reserve);
        }
        for (int64_t i = 0; i < count; ++i) {
          std::string key;
          if (is_map) {
            TIMELAKE_ASSIGN_OR_RAISE(std::string_view k, d->ReadBytes());
            key.assign(k);
          }
          auto v = Decode(s.children.front(), d);
          if (!v.ok()) {
            return WithContext(
                v.status(),
                is_map ? "[\"" + key + "\"]"
                       : "[" + Str(static_cast<int64_t>(arr.items.size())) + "]");
          }
          if (is_map) {
            map.entries.emplace_back(std::move(key), std::move(v).ValueUnsafe());
          } else {
            arr.items.push_back(std::move(v).ValueUnsafe());
          }
        }
        if (block_bytes >= 0 &&
            static_cast<int64_t>(d->position() - start) != block_bytes) {
          return CorruptAt(*d, std::string(what) + " block declared " + Str(block_bytes) +
                                   " bytes but its items used " +
                                   Str(static_cast<int64_t>(d->position() - start)));
        }
      }
      if (is_map) return AvroValue::Map(std::move(map.entries));
      return AvroValue::Array(std::move(arr.items));
    }
    case AvroType::kUnion: {
      const int64_t at = d->offset();
      TIMELAKE_ASSIGN_OR_RAISE(int64_t idx, d->ReadLong());
      if (idx < 0 || static_cast<uint64_t>(idx) >= s.children.size()) {
        return Corrupt("avro: union branch " + Str(idx) + " out of range for " +
                       Str(static_cast<int64_t>(s.children.size())) +
                       " branches at offset " + Str(at));
      }
      return Decode(s.children[static_cast<size_t>(idx)], d);
    }
  }
  return Corrupt("avro: unknown schema type");
}

// ---------------------------------------------------------------------------
// Codecs
// ---------------------------------------------------------------------------

arrow::Result<std::string> Deflate(std::string_view in, int level) {
  if (in.size() > std::numeric_limits<uInt>::max()) {
    return Invalid("avro: a block of " + Str(static_cast<int64_t>(in.size())) +
                   " bytes is too large for deflate");
  }
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return MakeError(ErrorKind::kInternal,
                     "avro: deflateInit2 failed (level " + Str(level) + ")");
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const uLong produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return MakeError(ErrorKind::kInternal, "avro: deflate failed: " + Str(rc));
  }
  out.resize(produced);
  return out;
}

struct InflateGuard {
  z_stream* zs;
  ~InflateGuard() { inflateEnd(zs); }
};

arrow::Result<std::string> Inflate(std::string_view in, int64_t max_out) {
  if (in.size() > std::numeric_limits<uInt>::max()) {
    return Corrupt("avro: deflate block of " + Str(static_cast<int64_t>(in.size())) +
                   " bytes is too large");
  }
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) {
    return MakeError(ErrorKind::kInternal, "avro: inflateInit2 failed");
  }
  InflateGuard guard{&zs};
  max_out = std::clamp<int64_t>(max_out, 0, int64_t{1} << 50);  // no overflow below
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  size_t produced = 0;
  while (true) {
    if (produced == out.size()) {
      if (static_cast<int64_t>(out.size()) > max_out) {
        return Corrupt("avro: deflate block inflates to more than " + Str(max_out) +
                       " bytes");
      }
      // Grow geometrically, capped one byte past the limit to detect overflow.
      const int64_t grow = std::max<int64_t>(static_cast<int64_t>(out.size()),
                                             std::max<int64_t>(4096, in.size() * 3));
      out.resize(static_cast<size_t>(
          std::min<int64_t>(static_cast<int64_t>(out.size()) + grow, max_out + 1)));
    }
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    zs.avail_out = static_cast<uInt>(
        std::min<size_t>(out.size() - produced, std::numeric_limits<uInt>::max()));
    const int rc = inflate(&zs, Z_NO_FLUSH);
    produced = static_cast<size_t>(reinterpret_cast<char*>(zs.next_out) - out.data());
    // Bytes after the end of the deflate stream are ignored, as Java's and
    // Python's Avro readers do.
    if (rc == Z_STREAM_END) break;
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in > 0 && produced == out.size()) continue;
    if (rc == Z_BUF_ERROR) return Corrupt("avro: deflate block is truncated");
    return Corrupt(std::string("avro: deflate block does not inflate: ") +
                   (zs.msg ? zs.msg : ("zlib error " + Str(rc)).c_str()));
  }
  if (static_cast<int64_t>(produced) > max_out) {
    return Corrupt("avro: deflate block inflates to more than " + Str(max_out) +
                   " bytes");
  }
  out.resize(produced);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// AvroSchema / AvroField
// ---------------------------------------------------------------------------

std::string_view AvroTypeName(AvroType type) {
  switch (type) {
    case AvroType::kNull:
      return "null";
    case AvroType::kBoolean:
      return "boolean";
    case AvroType::kInt:
      return "int";
    case AvroType::kLong:
      return "long";
    case AvroType::kFloat:
      return "float";
    case AvroType::kDouble:
      return "double";
    case AvroType::kBytes:
      return "bytes";
    case AvroType::kString:
      return "string";
    case AvroType::kFixed:
      return "fixed";
    case AvroType::kEnum:
      return "enum";
    case AvroType::kRecord:
      return "record";
    case AvroType::kArray:
      return "array";
    case AvroType::kMap:
      return "map";
    case AvroType::kUnion:
      return "union";
  }
  return "unknown";
}

AvroSchema AvroSchema::Primitive(AvroType type) {
  AvroSchema s;
  s.type = type;
  return s;
}

AvroSchema AvroSchema::Record(std::string name, std::vector<AvroField> fields) {
  AvroSchema s;
  s.type = AvroType::kRecord;
  s.name = std::move(name);
  s.fields = std::move(fields);
  return s;
}

AvroSchema AvroSchema::Array(AvroSchema items) {
  AvroSchema s;
  s.type = AvroType::kArray;
  s.children.push_back(std::move(items));
  return s;
}

AvroSchema AvroSchema::Map(AvroSchema values) {
  AvroSchema s;
  s.type = AvroType::kMap;
  s.children.push_back(std::move(values));
  return s;
}

AvroSchema AvroSchema::Union(std::vector<AvroSchema> branches) {
  AvroSchema s;
  s.type = AvroType::kUnion;
  s.children = std::move(branches);
  return s;
}

AvroSchema AvroSchema::Optional(AvroSchema value) {
  std::vector<AvroSchema> branches;
  branches.push_back(Primitive(AvroType::kNull));
  branches.push_back(std::move(value));
  return Union(std::move(branches));
}

AvroSchema AvroSchema::Fixed(std::string name, int64_t size) {
  AvroSchema s;
  s.type = AvroType::kFixed;
  s.name = std::move(name);
  s.fixed_size = size;
  return s;
}

AvroSchema AvroSchema::Enum(std::string name, std::vector<std::string> symbols) {
  AvroSchema s;
  s.type = AvroType::kEnum;
  s.name = std::move(name);
  s.symbols = std::move(symbols);
  return s;
}

AvroSchema AvroSchema::With(std::string key, AvroAttributes value) && {
  attributes[std::move(key)] = std::move(value);
  return std::move(*this);
}

std::optional<int32_t> AvroSchema::IntAttribute(std::string_view key) const {
  auto it = attributes.find(std::string(key));
  if (it == attributes.end()) return std::nullopt;
  return JsonInt32(*it);
}

std::string_view AvroSchema::logical_type() const {
  auto it = attributes.find("logicalType");
  if (it == attributes.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

std::optional<size_t> AvroSchema::OptionalBranch() const {
  if (type != AvroType::kUnion || children.size() != 2) return std::nullopt;
  if (children[0].type == AvroType::kNull && children[1].type != AvroType::kNull)
    return 1;
  if (children[1].type == AvroType::kNull && children[0].type != AvroType::kNull)
    return 0;
  return std::nullopt;
}

nlohmann::ordered_json AvroSchema::ToJson() const {
  std::set<std::string> emitted;
  return SchemaToJson(*this, &emitted);
}

AvroField AvroField::Make(std::string name, AvroSchema schema,
                          std::optional<int32_t> field_id, bool optional) {
  AvroField f;
  f.name = std::move(name);
  f.schema = optional ? AvroSchema::Optional(std::move(schema)) : std::move(schema);
  if (field_id) f.attributes["field-id"] = *field_id;
  if (optional) f.attributes["default"] = nullptr;
  return f;
}

std::optional<int32_t> AvroField::field_id() const {
  auto it = attributes.find("field-id");
  if (it == attributes.end()) return std::nullopt;
  return JsonInt32(*it);
}

arrow::Result<AvroSchema> ParseAvroSchema(std::string_view json) {
  Json j = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Invalid("avro schema is not valid JSON");
  SchemaParser parser;
  return parser.Parse(j, "", 0);
}

// ---------------------------------------------------------------------------
// AvroValue
// ---------------------------------------------------------------------------

AvroValue AvroValue::Array(std::vector<AvroValue> items) {
  return AvroValue(std::in_place_type<AvroArray>, AvroArray{std::move(items)});
}

AvroValue AvroValue::Map(std::vector<std::pair<std::string, AvroValue>> entries) {
  return AvroValue(std::in_place_type<AvroMap>, AvroMap{std::move(entries)});
}

AvroValue AvroValue::Record(std::vector<AvroValue> fields) {
  return AvroValue(std::in_place_type<AvroRecord>, AvroRecord{std::move(fields)});
}

std::string_view AvroValue::kind_name() const {
  static constexpr std::string_view kNames[] = {"null",  "boolean", "int",    "long",
                                                "float", "double",  "string", "array",
                                                "map",   "record"};
  return kNames[value_.index()];
}

bool operator==(const AvroValue& a, const AvroValue& b) { return a.value_ == b.value_; }
bool operator==(const AvroArray& a, const AvroArray& b) { return a.items == b.items; }
bool operator==(const AvroMap& a, const AvroMap& b) { return a.entries == b.entries; }
bool operator==(const AvroRecord& a, const AvroRecord& b) { return a.fields == b.fields; }

// ---------------------------------------------------------------------------
// Primitive encoding
// ---------------------------------------------------------------------------

void AppendAvroLong(int64_t v, std::string* out) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out->push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out->push_back(static_cast<char>(z));
}

void AppendAvroInt(int32_t v, std::string* out) { AppendAvroLong(v, out); }

void AppendAvroBoolean(bool v, std::string* out) { out->push_back(v ? 1 : 0); }

void AppendAvroFloat(float v, std::string* out) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
}

void AppendAvroDouble(double v, std::string* out) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(bits >> (8 * i)));
}

void AppendAvroBytes(std::string_view v, std::string* out) {
  AppendAvroLong(static_cast<int64_t>(v.size()), out);
  out->append(v);
}

// ---------------------------------------------------------------------------
// AvroDecoder
// ---------------------------------------------------------------------------

AvroDecoder::AvroDecoder(std::string_view data, int64_t base_offset)
    : data_(data),
      base_offset_(base_offset),
      value_budget_(2 * static_cast<int64_t>(data.size()) + 4096) {}

arrow::Result<int64_t> AvroDecoder::ReadLong() {
  const int64_t start = offset();
  uint64_t z = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos_ >= data_.size())
      return Corrupt("avro: truncated varint at offset " + Str(start));
    const auto b = static_cast<uint8_t>(data_[pos_++]);
    if (shift == 63 && (b & 0xfe) != 0) {
      return Corrupt("avro: varint overflows 64 bits at offset " + Str(start));
    }
    z |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return static_cast<int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  return Corrupt("avro: varint longer than 10 bytes at offset " + Str(start));
}

arrow::Result<int32_t> AvroDecoder::ReadInt() {
  const int64_t start = offset();
  TIMELAKE_ASSIGN_OR_RAISE(int64_t v, ReadLong());
  if (v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    return Corrupt("avro: int " + Str(v) + " out of 32-bit range at offset " +
                   Str(start));
  }
  return static_cast<int32_t>(v);
}

arrow::Result<bool> AvroDecoder::ReadBoolean() {
  if (pos_ >= data_.size()) return CorruptAt(*this, "truncated boolean");
  const auto b = static_cast<uint8_t>(data_[pos_]);
  if (b > 1) return CorruptAt(*this, "boolean byte " + Str(b) + " is neither 0 nor 1");
  ++pos_;
  return b == 1;
}

arrow::Result<float> AvroDecoder::ReadFloat() {
  if (remaining() < 4) return CorruptAt(*this, "truncated float");
  uint32_t bits = 0;
  for (int i = 0; i < 4; ++i)
    bits |= uint32_t{static_cast<uint8_t>(data_[pos_ + i])} << (8 * i);
  pos_ += 4;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

arrow::Result<double> AvroDecoder::ReadDouble() {
  if (remaining() < 8) return CorruptAt(*this, "truncated double");
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i)
    bits |= uint64_t{static_cast<uint8_t>(data_[pos_ + i])} << (8 * i);
  pos_ += 8;
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

arrow::Result<std::string_view> AvroDecoder::ReadBytes() {
  const int64_t start = offset();
  TIMELAKE_ASSIGN_OR_RAISE(int64_t len, ReadLong());
  if (len < 0 || static_cast<uint64_t>(len) > remaining()) {
    return Corrupt("avro: byte length " + Str(len) + " at offset " + Str(start) +
                   " exceeds the " + Str(static_cast<int64_t>(remaining())) +
                   " bytes remaining");
  }
  std::string_view v = data_.substr(pos_, static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return v;
}

arrow::Result<std::string_view> AvroDecoder::ReadFixed(int64_t n) {
  if (n < 0 || static_cast<uint64_t>(n) > remaining()) {
    return CorruptAt(*this, "truncated " + Str(n) + "-byte fixed value (" +
                                Str(static_cast<int64_t>(remaining())) +
                                " bytes remaining)");
  }
  std::string_view v = data_.substr(pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return v;
}

arrow::Status AvroDecoder::ChargeValues(int64_t n) {
  if (n > value_budget_) {
    return CorruptAt(*this, "more values than " +
                                Str(static_cast<int64_t>(data_.size())) +
                                " bytes of input can plausibly hold");
  }
  value_budget_ -= n;
  return arrow::Status::OK();
}

arrow::Status EncodeAvroValue(const AvroSchema& schema, const AvroValue& value,
                              std::string* out) {
  return Encode(schema, value, out);
}

arrow::Result<AvroValue> DecodeAvroValue(const AvroSchema& schema, AvroDecoder* decoder) {
  return Decode(schema, decoder);
}

// ---------------------------------------------------------------------------
// Container files
// ---------------------------------------------------------------------------

arrow::Result<AvroFile> ReadAvroFile(std::string_view bytes,
                                     const AvroReadOptions& options) {
  if (bytes.size() < kAvroMagic.size() || bytes.substr(0, 4) != kAvroMagic) {
    return Corrupt("avro file: bad magic (expected \"Obj\\x01\" in the first 4 of " +
                   Str(static_cast<int64_t>(bytes.size())) + " bytes)");
  }
  AvroDecoder d(bytes.substr(4), 4);
  AvroFile file;
  // Header: the metadata map<bytes>, then the sync marker.
  while (true) {
    int64_t block_bytes;
    auto count = ReadBlockCount(&d, "header map", &block_bytes);
    if (!count.ok()) return WithContext(count.status(), "avro file header");
    if (*count == 0) break;
    for (int64_t i = 0; i < *count; ++i) {
      auto key = d.ReadBytes();
      if (!key.ok()) return WithContext(key.status(), "avro file header");
      auto value = d.ReadBytes();
      if (!value.ok()) return WithContext(value.status(), "avro file header");
      if (!file.metadata.emplace(std::string(*key), std::string(*value)).second) {
        return Corrupt("avro file header: duplicate metadata key \"" + std::string(*key) +
                       "\"");
      }
    }
  }
  auto sync = d.ReadFixed(16);
  if (!sync.ok()) return Corrupt("avro file header: truncated before the sync marker");

  auto schema_it = file.metadata.find("avro.schema");
  if (schema_it == file.metadata.end()) {
    return Corrupt("avro file header: no avro.schema");
  }
  auto schema = ParseAvroSchema(schema_it->second);
  if (!schema.ok()) {
    return Corrupt("avro file header: bad avro.schema: " + schema.status().message());
  }
  file.schema = std::move(schema).ValueUnsafe();
  auto codec_it = file.metadata.find("avro.codec");
  file.codec = codec_it == file.metadata.end() ? "null" : codec_it->second;
  if (file.codec != "null" && file.codec != "deflate") {
    if (file.codec == "snappy" || file.codec == "zstandard" || file.codec == "bzip2" ||
        file.codec == "xz") {
      return Unsupported("avro file: codec \"" + file.codec + "\" is not supported");
    }
    return Corrupt("avro file: unknown codec \"" + file.codec + "\"");
  }

  int64_t total_bytes = 0;
  for (int64_t block = 0; !d.at_end(); ++block) {
    const int64_t block_offset = d.offset();
    const std::string where =
        "avro file: block " + Str(block) + " at offset " + Str(block_offset);
    auto count = d.ReadLong();
    if (!count.ok()) return WithContext(count.status(), where);
    auto size = d.ReadLong();
    if (!size.ok()) return WithContext(size.status(), where);
    if (*count < 0 || *size < 0) {
      return Corrupt(where + ": negative record count " + Str(*count) + " or size " +
                     Str(*size));
    }
    if (static_cast<uint64_t>(*size) > d.remaining()) {
      return Corrupt(where + ": size " + Str(*size) + " exceeds the " +
                     Str(static_cast<int64_t>(d.remaining())) +
                     " bytes remaining (truncated file?)");
    }
    const int64_t data_offset = d.offset();
    std::string_view data = d.ReadFixed(*size).ValueUnsafe();
    auto marker = d.ReadFixed(16);
    if (!marker.ok()) return Corrupt(where + ": truncated before its sync marker");
    if (*marker != *sync)
      return Corrupt(where + ": sync marker does not match the header's");

    std::string inflated;
    if (file.codec == "deflate") {
      auto out = Inflate(data, options.max_block_bytes);
      if (!out.ok()) return WithContext(out.status(), where);
      inflated = std::move(out).ValueUnsafe();
      data = inflated;
    } else if (*size > options.max_block_bytes) {
      return Corrupt(where + ": " + Str(*size) + " bytes exceed the block limit of " +
                     Str(options.max_block_bytes));
    }
    total_bytes += static_cast<int64_t>(data.size());
    if (total_bytes > options.max_total_bytes) {
      return Corrupt(where + ": blocks exceed the total limit of " +
                     Str(options.max_total_bytes) + " decoded bytes");
    }
    AvroDecoder block_decoder(data, file.codec == "deflate" ? 0 : data_offset);
    const int64_t room = static_cast<int64_t>(data.size()) * 3 + 4096;
    if (*count > room) {
      return Corrupt(where + ": " + Str(*count) + " records cannot fit in " +
                     Str(static_cast<int64_t>(data.size())) + " bytes");
    }
    for (int64_t i = 0; i < *count; ++i) {
      auto record = Decode(file.schema, &block_decoder);
      if (!record.ok()) {
        return WithContext(record.status(),
                           where + (file.codec == "deflate" ? " (inflated)" : "") +
                               ": record " + Str(i));
      }
      file.records.push_back(std::move(record).ValueUnsafe());
    }
    if (!block_decoder.at_end()) {
      return Corrupt(where + ": " + Str(static_cast<int64_t>(block_decoder.remaining())) +
                     " bytes left over after its " + Str(*count) + " records");
    }
  }
  return file;
}

AvroFileWriter::AvroFileWriter(AvroSchema schema,
                               std::vector<std::pair<std::string, std::string>> metadata,
                               AvroWriteOptions options)
    : schema_(std::move(schema)),
      metadata_(std::move(metadata)),
      options_(std::move(options)) {
  if (options_.codec != "null" && options_.codec != "deflate") {
    status_ = Invalid("avro writer: unsupported codec \"" + options_.codec + "\"");
  }
  std::set<std::string> keys;
  for (const auto& [key, value] : metadata_) {
    if (key.rfind("avro.", 0) == 0) {
      status_ = Invalid("avro writer: metadata key \"" + key + "\" is reserved");
    } else if (!keys.insert(key).second) {
      status_ = Invalid("avro writer: duplicate metadata key \"" + key + "\"");
    }
  }
  std::array<uint8_t, 16> marker;
  if (options_.sync_marker) {
    marker = *options_.sync_marker;
  } else {
    std::random_device rd;
    for (size_t i = 0; i < marker.size(); i += 4) {
      const uint32_t r = rd();
      std::memcpy(marker.data() + i, &r, 4);
    }
  }
  sync_.assign(reinterpret_cast<const char*>(marker.data()), marker.size());
}

arrow::Status AvroFileWriter::Append(const AvroValue& record) {
  if (finished_) return Invalid("avro writer: Append after Finish");
  TIMELAKE_RETURN_NOT_OK(status_);
  auto st = EncodeAvroValue(schema_, record, &block_);
  if (!st.ok()) {
    status_ = WithContext(st, "avro writer: record " + Str(block_count_));
    return status_;
  }
  ++block_count_;
  if (static_cast<int64_t>(block_.size()) >= options_.block_target_bytes) {
    status_ = FlushBlock();
  }
  return status_;
}

arrow::Status AvroFileWriter::FlushBlock() {
  if (block_count_ == 0) return arrow::Status::OK();
  std::string compressed;
  std::string_view data = block_;
  if (options_.codec == "deflate") {
    TIMELAKE_ASSIGN_OR_RAISE(compressed, Deflate(block_, options_.deflate_level));
    data = compressed;
  }
  AppendAvroLong(block_count_, &body_);
  AppendAvroLong(static_cast<int64_t>(data.size()), &body_);
  body_.append(data);
  body_.append(sync_);
  block_.clear();
  block_count_ = 0;
  return arrow::Status::OK();
}

arrow::Result<std::string> AvroFileWriter::Finish() {
  if (finished_) return Invalid("avro writer: Finish called twice");
  TIMELAKE_RETURN_NOT_OK(status_);
  TIMELAKE_RETURN_NOT_OK(FlushBlock());
  finished_ = true;
  std::string out(kAvroMagic);
  AppendAvroLong(static_cast<int64_t>(metadata_.size() + 2), &out);
  AppendAvroBytes("avro.schema", &out);
  AppendAvroBytes(schema_.ToString(), &out);
  AppendAvroBytes("avro.codec", &out);
  AppendAvroBytes(options_.codec, &out);
  for (const auto& [key, value] : metadata_) {
    AppendAvroBytes(key, &out);
    AppendAvroBytes(value, &out);
  }
  AppendAvroLong(0, &out);
  out.append(sync_);
  out.append(body_);
  body_.clear();
  return out;
}

arrow::Result<std::string> WriteAvroFile(
    const AvroSchema& schema, std::vector<std::pair<std::string, std::string>> metadata,
    const std::vector<AvroValue>& records, const AvroWriteOptions& options) {
  AvroFileWriter writer(schema, std::move(metadata), options);
  for (const auto& r : records) TIMELAKE_RETURN_NOT_OK(writer.Append(r));
  return writer.Finish();
}

}  // namespace timelake::format
