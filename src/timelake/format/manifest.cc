// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/manifest.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "timelake/format/bounds.h"

namespace timelake::format {

namespace {

using Json = nlohmann::ordered_json;

std::string Str(int64_t v) { return std::to_string(v); }

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

AvroSchema Prim(AvroType t) { return AvroSchema::Primitive(t); }

AvroField Required(std::string name, int32_t id, AvroSchema schema) {
  return AvroField::Make(std::move(name), std::move(schema), id, /*optional=*/false);
}

AvroField Opt(std::string name, int32_t id, AvroSchema schema) {
  return AvroField::Make(std::move(name), std::move(schema), id, /*optional=*/true);
}

// Iceberg writes map<int, V> as an array of {key, value} records.
AvroSchema IntKeyMap(int32_t key_id, int32_t value_id, AvroType value_type) {
  std::vector<AvroField> kv;
  kv.push_back(Required("key", key_id, Prim(AvroType::kInt)));
  kv.push_back(Required("value", value_id, Prim(value_type)));
  return AvroSchema::Array(
             AvroSchema::Record("k" + Str(key_id) + "_v" + Str(value_id), std::move(kv)))
      .With("logicalType", "map");
}

AvroSchema List(int32_t element_id, AvroType element_type) {
  return AvroSchema::Array(Prim(element_type)).With("element-id", element_id);
}

AvroSchema PartitionAvroType(PartitionValueType type) {
  switch (type) {
    case PartitionValueType::kBoolean:
      return Prim(AvroType::kBoolean);
    case PartitionValueType::kInt:
      return Prim(AvroType::kInt);
    case PartitionValueType::kLong:
      return Prim(AvroType::kLong);
    case PartitionValueType::kFloat:
      return Prim(AvroType::kFloat);
    case PartitionValueType::kDouble:
      return Prim(AvroType::kDouble);
    case PartitionValueType::kDate:
      return Prim(AvroType::kInt).With("logicalType", "date");
    case PartitionValueType::kTime:
      return Prim(AvroType::kLong).With("logicalType", "time-micros");
    case PartitionValueType::kTimestamp:
      return Prim(AvroType::kLong)
          .With("logicalType", "timestamp-micros")
          .With("adjust-to-utc", false);
    case PartitionValueType::kTimestampTz:
      return Prim(AvroType::kLong)
          .With("logicalType", "timestamp-micros")
          .With("adjust-to-utc", true);
    case PartitionValueType::kString:
      return Prim(AvroType::kString);
    case PartitionValueType::kBinary:
      return Prim(AvroType::kBytes);
  }
  return Prim(AvroType::kNull);
}

// The reverse of PartitionAvroType, lenient about what other engines write.
arrow::Result<PartitionValueType> PartitionTypeFromAvro(const AvroSchema& s,
                                                        const std::string& field) {
  const std::string_view logical = s.logical_type();
  switch (s.type) {
    case AvroType::kBoolean:
      return PartitionValueType::kBoolean;
    case AvroType::kInt:
      return logical == "date" ? PartitionValueType::kDate : PartitionValueType::kInt;
    case AvroType::kLong: {
      if (logical == "time-micros") return PartitionValueType::kTime;
      if (logical == "timestamp-micros") {
        auto it = s.attributes.find("adjust-to-utc");
        const bool utc = it != s.attributes.end() && it->is_boolean() && it->get<bool>();
        return utc ? PartitionValueType::kTimestampTz : PartitionValueType::kTimestamp;
      }
      return PartitionValueType::kLong;
    }
    case AvroType::kFloat:
      return PartitionValueType::kFloat;
    case AvroType::kDouble:
      return PartitionValueType::kDouble;
    case AvroType::kString:
      return PartitionValueType::kString;
    case AvroType::kBytes:
    case AvroType::kFixed:
      return PartitionValueType::kBinary;
    default:
      return Corrupt("manifest: partition field \"" + field +
                     "\" has unsupported Avro type " + std::string(AvroTypeName(s.type)));
  }
}

// Which PartitionValue alternative a field type takes.
size_t PartitionAlternative(PartitionValueType type) {
  switch (type) {
    case PartitionValueType::kBoolean:
      return 0;
    case PartitionValueType::kInt:
    case PartitionValueType::kDate:
      return 1;
    case PartitionValueType::kLong:
    case PartitionValueType::kTime:
    case PartitionValueType::kTimestamp:
    case PartitionValueType::kTimestampTz:
      return 2;
    case PartitionValueType::kFloat:
      return 3;
    case PartitionValueType::kDouble:
      return 4;
    case PartitionValueType::kString:
    case PartitionValueType::kBinary:
      return 5;
  }
  return 5;
}

arrow::Status CheckTuple(const std::vector<PartitionFieldType>& type,
                         const PartitionTuple& tuple) {
  if (tuple.size() != type.size()) {
    return Invalid("partition tuple has " + Str(static_cast<int64_t>(tuple.size())) +
                   " values but the partition type has " +
                   Str(static_cast<int64_t>(type.size())) + " fields");
  }
  for (size_t i = 0; i < type.size(); ++i) {
    if (!tuple[i]) {
      if (type[i].required) {
        return Invalid("partition field \"" + type[i].name + "\" is required but null");
      }
      continue;
    }
    if (tuple[i]->index() != PartitionAlternative(type[i].type)) {
      return Invalid("partition field \"" + type[i].name + "\" of type " +
                     std::string(PartitionValueTypeName(type[i].type)) +
                     " holds a value of the wrong C++ type");
    }
  }
  return arrow::Status::OK();
}

AvroValue PartitionToAvro(const PartitionValue& v) {
  return std::visit(
      [](const auto& x) -> AvroValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return AvroValue::Boolean(x);
        if constexpr (std::is_same_v<T, int32_t>) return AvroValue::Int(x);
        if constexpr (std::is_same_v<T, int64_t>) return AvroValue::Long(x);
        if constexpr (std::is_same_v<T, float>) return AvroValue::Float(x);
        if constexpr (std::is_same_v<T, double>) return AvroValue::Double(x);
        if constexpr (std::is_same_v<T, std::string>) return AvroValue::String(x);
      },
      v);
}

std::string EncodePartitionValue(const PartitionValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return EncodeBoolean(x);
        if constexpr (std::is_same_v<T, int32_t>) return EncodeInt32(x);
        if constexpr (std::is_same_v<T, int64_t>) return EncodeInt64(x);
        if constexpr (std::is_same_v<T, float>) return EncodeFloat(x);
        if constexpr (std::is_same_v<T, double>) return EncodeDouble(x);
        if constexpr (std::is_same_v<T, std::string>) return x;
      },
      v);
}

// a < b in Iceberg's order for values of the same alternative.
bool PartitionLess(const PartitionValue& a, const PartitionValue& b) {
  return std::visit(
      [&b](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_floating_point_v<T>) {
          if (x == y) return std::signbit(x) && !std::signbit(y);  // -0.0 < +0.0
        }
        return x < y;
      },
      a);
}

bool IsNaN(const PartitionValue& v) {
  if (const auto* f = std::get_if<float>(&v)) return std::isnan(*f);
  if (const auto* d = std::get_if<double>(&v)) return std::isnan(*d);
  return false;
}

// ---------------------------------------------------------------------------
// Reading records of a writer schema
// ---------------------------------------------------------------------------

// A record value together with its writer schema, for lookups by field id.
class RecordView {
 public:
  RecordView(const AvroSchema* schema, const AvroRecord* record, std::string context)
      : schema_(schema), record_(record), context_(std::move(context)) {}

  struct Field {
    const AvroSchema* schema = nullptr;  // union unwrapped
    const AvroValue* value = nullptr;    // nullptr when the field is absent or null
    bool present = false;                // whether the writer schema has the field
  };

  // Finds a field by Iceberg id, or by name when the writer field has no id.
  arrow::Result<Field> Get(int32_t id, std::string_view name) const {
    Field out;
    int index = -1;
    for (size_t i = 0; i < schema_->fields.size(); ++i) {
      const auto& f = schema_->fields[i];
      const auto fid = f.field_id();
      if (fid ? *fid == id : f.name == name) {
        index = static_cast<int>(i);
        break;
      }
    }
    if (index < 0) return out;
    out.present = true;
    const AvroSchema* s = &schema_->fields[index].schema;
    const AvroValue* v = &record_->fields[index];
    if (s->type == AvroType::kUnion) {
      auto branch = s->OptionalBranch();
      if (!branch) {
        return Corrupt(context_ + ": field " + std::string(name) + " (id " + Str(id) +
                       ") is a union other than [null, T]");
      }
      s = &s->children[*branch];
    }
    out.schema = s;
    out.value = v->is_null() ? nullptr : v;
    return out;
  }

  arrow::Status Missing(int32_t id, std::string_view name) const {
    return Corrupt(context_ + ": required field " + std::string(name) + " (id " +
                   Str(id) + ") is missing or null");
  }
  arrow::Status WrongType(int32_t id, std::string_view name, std::string_view expected,
                          const AvroValue& got) const {
    return Corrupt(context_ + ": field " + std::string(name) + " (id " + Str(id) +
                   ") should be " + std::string(expected) + " but is " +
                   std::string(got.kind_name()));
  }

  arrow::Result<std::optional<int64_t>> OptLong(int32_t id, std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return std::nullopt;
    if (const auto* l = f.value->get_if<int64_t>()) return *l;
    if (const auto* i = f.value->get_if<int32_t>()) return int64_t{*i};
    return WrongType(id, name, "long", *f.value);
  }
  arrow::Result<int64_t> Long(int32_t id, std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(auto v, OptLong(id, name));
    if (!v) return Missing(id, name);
    return *v;
  }
  arrow::Result<std::optional<int32_t>> OptInt(int32_t id, std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return std::nullopt;
    if (const auto* i = f.value->get_if<int32_t>()) return *i;
    if (const auto* l = f.value->get_if<int64_t>();
        l && *l >= std::numeric_limits<int32_t>::min() &&
        *l <= std::numeric_limits<int32_t>::max()) {
      return static_cast<int32_t>(*l);
    }
    return WrongType(id, name, "int", *f.value);
  }
  arrow::Result<int32_t> Int(int32_t id, std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(auto v, OptInt(id, name));
    if (!v) return Missing(id, name);
    return *v;
  }
  arrow::Result<std::optional<bool>> OptBool(int32_t id, std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return std::nullopt;
    if (const auto* b = f.value->get_if<bool>()) return *b;
    return WrongType(id, name, "boolean", *f.value);
  }
  arrow::Result<std::optional<std::string>> OptString(int32_t id,
                                                      std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return std::nullopt;
    if (const auto* s = f.value->get_if<std::string>()) return *s;
    return WrongType(id, name, "string or bytes", *f.value);
  }
  arrow::Result<std::string> String(int32_t id, std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(auto v, OptString(id, name));
    if (!v) return Missing(id, name);
    return *std::move(v);
  }

  // A nested record (required when `required`).
  arrow::Result<std::optional<RecordView>> OptRecord(int32_t id,
                                                     std::string_view name) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return std::nullopt;
    const auto* rec = f.value->get_if<AvroRecord>();
    if (!rec || f.schema->type != AvroType::kRecord) {
      return WrongType(id, name, "record", *f.value);
    }
    return RecordView(f.schema, rec, context_ + "." + std::string(name));
  }

  // map<int, V> written as an array of key/value records, or as an Avro map
  // with decimal string keys.
  template <typename V>
  arrow::Status IntMap(int32_t id, std::string_view name,
                       std::map<int32_t, V>* out) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return arrow::Status::OK();
    auto convert = [&](const AvroValue& v) -> arrow::Result<V> {
      if constexpr (std::is_same_v<V, int64_t>) {
        if (const auto* l = v.get_if<int64_t>()) return *l;
        if (const auto* i = v.get_if<int32_t>()) return int64_t{*i};
        return WrongType(id, name, "map of long", v);
      } else {
        if (const auto* s = v.get_if<std::string>()) return *s;
        return WrongType(id, name, "map of bytes", v);
      }
    };
    if (const auto* arr = f.value->get_if<AvroArray>()) {
      const AvroSchema& item = f.schema->items();
      if (item.type != AvroType::kRecord)
        return WrongType(id, name, "key/value records", *f.value);
      int key_index = -1, value_index = -1;
      for (size_t i = 0; i < item.fields.size(); ++i) {
        if (item.fields[i].name == "key") key_index = static_cast<int>(i);
        if (item.fields[i].name == "value") value_index = static_cast<int>(i);
      }
      if (key_index < 0 || value_index < 0) {
        return Corrupt(context_ + ": map field " + std::string(name) + " (id " + Str(id) +
                       ") has records without key and value fields");
      }
      for (const auto& entry : arr->items) {
        const auto* kv_record = entry.get_if<AvroRecord>();
        if (!kv_record) return WrongType(id, name, "key/value records", entry);
        const auto& kv = *kv_record;
        const AvroValue& k = kv.fields[key_index];
        const int32_t* key = k.get_if<int32_t>();
        if (!key) return WrongType(id, name, "map with int keys", k);
        TIMELAKE_ASSIGN_OR_RAISE((*out)[*key], convert(kv.fields[value_index]));
      }
      return arrow::Status::OK();
    }
    if (const auto* map = f.value->get_if<AvroMap>()) {
      for (const auto& [k, v] : map->entries) {
        int32_t key = 0;
        auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), key);
        if (ec != std::errc() || ptr != k.data() + k.size()) {
          return Corrupt(context_ + ": map field " + std::string(name) + " has key \"" +
                         k + "\" that is not an int");
        }
        TIMELAKE_ASSIGN_OR_RAISE((*out)[key], convert(v));
      }
      return arrow::Status::OK();
    }
    return WrongType(id, name, "map", *f.value);
  }

  template <typename T>
  arrow::Status IntList(int32_t id, std::string_view name, std::vector<T>* out) const {
    TIMELAKE_ASSIGN_OR_RAISE(Field f, Get(id, name));
    if (!f.value) return arrow::Status::OK();
    const auto* arr = f.value->get_if<AvroArray>();
    if (!arr) return WrongType(id, name, "array", *f.value);
    for (const auto& item : arr->items) {
      int64_t v;
      if (const auto* l = item.get_if<int64_t>()) {
        v = *l;
      } else if (const auto* i = item.get_if<int32_t>()) {
        v = *i;
      } else {
        return WrongType(id, name, "array of int or long", item);
      }
      if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) {
        return Corrupt(context_ + ": field " + std::string(name) +
                       " has out-of-range value " + Str(v));
      }
      out->push_back(static_cast<T>(v));
    }
    return arrow::Status::OK();
  }

  const AvroSchema& schema() const { return *schema_; }
  const AvroRecord& record() const { return *record_; }
  const std::string& context() const { return context_; }

 private:
  const AvroSchema* schema_;
  const AvroRecord* record_;
  std::string context_;
};

arrow::Result<std::optional<int32_t>> HeaderInt(
    const std::map<std::string, std::string>& m, const std::string& key,
    const std::string& what) {
  auto it = m.find(key);
  if (it == m.end()) return std::nullopt;
  int32_t v = 0;
  const std::string& s = it->second;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    return Corrupt(what + ": header " + key + " \"" + s + "\" is not an integer");
  }
  return v;
}

// The root record schema of a manifest or manifest list.
arrow::Status CheckRootRecord(const AvroFile& file, const std::string& what) {
  if (file.schema.type != AvroType::kRecord) {
    return Corrupt(what + ": the Avro schema is a " +
                   std::string(AvroTypeName(file.schema.type)) + ", not a record");
  }
  for (const auto& r : file.records) {
    if (!r.get_if<AvroRecord>()) return Corrupt(what + ": a record is not a record");
  }
  return arrow::Status::OK();
}

arrow::Status CheckCodec(std::string_view codec) {
  if (codec != "null" && codec != "deflate") {
    return Unsupported("Avro codec \"" + std::string(codec) + "\" is not supported");
  }
  return arrow::Status::OK();
}

// ---------------------------------------------------------------------------
// Manifest entries
// ---------------------------------------------------------------------------

template <typename V>
AvroValue IntMapValue(const std::map<int32_t, V>& m) {
  if (m.empty()) return AvroValue::Null();
  std::vector<AvroValue> items;
  items.reserve(m.size());
  for (const auto& [k, v] : m) {
    AvroValue value;
    if constexpr (std::is_same_v<V, int64_t>) {
      value = AvroValue::Long(v);
    } else {
      value = AvroValue::String(v);
    }
    items.push_back(AvroValue::Record({AvroValue::Int(k), std::move(value)}));
  }
  return AvroValue::Array(std::move(items));
}

AvroValue OptLongValue(const std::optional<int64_t>& v) {
  return v ? AvroValue::Long(*v) : AvroValue::Null();
}
AvroValue OptStringValue(const std::optional<std::string>& v) {
  return v ? AvroValue::String(*v) : AvroValue::Null();
}

arrow::Result<AvroValue> EntryToAvro(
    const std::vector<PartitionFieldType>& partition_type, const ManifestEntry& e) {
  if (e.status < kEntryExisting || e.status > kEntryDeleted) {
    return Invalid("status " + Str(e.status) + " is not 0, 1 or 2");
  }
  const DataFile& f = e.data_file;
  if (f.content < kContentData || f.content > kContentEqualityDeletes) {
    return Invalid("data_file.content " + Str(f.content) + " is not 0, 1 or 2");
  }
  TIMELAKE_RETURN_NOT_OK(CheckTuple(partition_type, f.partition));
  std::vector<AvroValue> partition;
  for (const auto& v : f.partition) {
    partition.push_back(v ? PartitionToAvro(*v) : AvroValue::Null());
  }
  auto long_list = [](const auto& list) {
    if (list.empty()) return AvroValue::Null();
    std::vector<AvroValue> items;
    for (auto v : list) {
      if constexpr (std::is_same_v<std::decay_t<decltype(v)>, int64_t>) {
        items.push_back(AvroValue::Long(v));
      } else {
        items.push_back(AvroValue::Int(v));
      }
    }
    return AvroValue::Array(std::move(items));
  };
  std::vector<AvroValue> df;
  df.push_back(AvroValue::Int(f.content));
  df.push_back(AvroValue::String(f.file_path));
  df.push_back(AvroValue::String(f.file_format));
  df.push_back(AvroValue::Record(std::move(partition)));
  df.push_back(AvroValue::Long(f.record_count));
  df.push_back(AvroValue::Long(f.file_size_in_bytes));
  df.push_back(IntMapValue(f.column_sizes));
  df.push_back(IntMapValue(f.value_counts));
  df.push_back(IntMapValue(f.null_value_counts));
  df.push_back(IntMapValue(f.nan_value_counts));
  df.push_back(IntMapValue(f.lower_bounds));
  df.push_back(IntMapValue(f.upper_bounds));
  df.push_back(OptStringValue(f.key_metadata));
  df.push_back(long_list(f.split_offsets));
  df.push_back(long_list(f.equality_ids));
  df.push_back(f.sort_order_id ? AvroValue::Int(*f.sort_order_id) : AvroValue::Null());
  df.push_back(OptStringValue(f.referenced_data_file));
  return AvroValue::Record({AvroValue::Int(e.status), OptLongValue(e.snapshot_id),
                            OptLongValue(e.sequence_number),
                            OptLongValue(e.file_sequence_number),
                            AvroValue::Record(std::move(df))});
}

arrow::Result<std::vector<PartitionFieldType>> PartitionTypeOf(
    const AvroSchema& partition) {
  std::vector<PartitionFieldType> out;
  for (const auto& f : partition.fields) {
    PartitionFieldType t;
    t.name = f.name;
    t.field_id = f.field_id().value_or(0);
    const AvroSchema* s = &f.schema;
    t.required = true;
    if (s->type == AvroType::kUnion) {
      auto branch = s->OptionalBranch();
      if (!branch) {
        return Corrupt("manifest: partition field \"" + f.name +
                       "\" is a union other than [null, T]");
      }
      s = &s->children[*branch];
      t.required = false;
    }
    TIMELAKE_ASSIGN_OR_RAISE(t.type, PartitionTypeFromAvro(*s, f.name));
    out.push_back(std::move(t));
  }
  return out;
}

arrow::Result<std::optional<PartitionValue>> PartitionFromAvro(
    const PartitionFieldType& t, const AvroValue& v, const std::string& context) {
  if (v.is_null()) return std::nullopt;
  auto wrong = [&]() {
    return Corrupt(context + ": partition field \"" + t.name + "\" of type " +
                   std::string(PartitionValueTypeName(t.type)) + " holds a " +
                   std::string(v.kind_name()));
  };
  switch (PartitionAlternative(t.type)) {
    case 0:
      if (const auto* b = v.get_if<bool>()) return PartitionValue(*b);
      return wrong();
    case 1:
      if (const auto* i = v.get_if<int32_t>()) return PartitionValue(*i);
      return wrong();
    case 2:
      if (const auto* l = v.get_if<int64_t>()) return PartitionValue(*l);
      if (const auto* i = v.get_if<int32_t>()) return PartitionValue(int64_t{*i});
      return wrong();
    case 3:
      if (const auto* f = v.get_if<float>()) return PartitionValue(*f);
      return wrong();
    case 4:
      if (const auto* d = v.get_if<double>()) return PartitionValue(*d);
      if (const auto* f = v.get_if<float>()) return PartitionValue(double{*f});
      return wrong();
    default:
      if (const auto* s = v.get_if<std::string>()) return PartitionValue(*s);
      return wrong();
  }
}

arrow::Result<ManifestEntry> EntryFromAvro(const RecordView& entry,
                                           const std::vector<PartitionFieldType>& ptype) {
  ManifestEntry e;
  TIMELAKE_ASSIGN_OR_RAISE(e.status, entry.Int(0, "status"));
  if (e.status < kEntryExisting || e.status > kEntryDeleted) {
    return Corrupt(entry.context() + ": status " + Str(e.status) + " is not 0, 1 or 2");
  }
  TIMELAKE_ASSIGN_OR_RAISE(e.snapshot_id, entry.OptLong(1, "snapshot_id"));
  TIMELAKE_ASSIGN_OR_RAISE(e.sequence_number, entry.OptLong(3, "sequence_number"));
  TIMELAKE_ASSIGN_OR_RAISE(e.file_sequence_number,
                           entry.OptLong(4, "file_sequence_number"));
  TIMELAKE_ASSIGN_OR_RAISE(auto df_view, entry.OptRecord(2, "data_file"));
  if (!df_view) return entry.Missing(2, "data_file");
  const RecordView& df = *df_view;
  DataFile& f = e.data_file;
  TIMELAKE_ASSIGN_OR_RAISE(auto content, df.OptInt(134, "content"));
  f.content = content.value_or(kContentData);
  TIMELAKE_ASSIGN_OR_RAISE(f.file_path, df.String(100, "file_path"));
  TIMELAKE_ASSIGN_OR_RAISE(f.file_format, df.String(101, "file_format"));
  TIMELAKE_ASSIGN_OR_RAISE(auto partition, df.OptRecord(102, "partition"));
  if (!partition) return df.Missing(102, "partition");
  for (size_t i = 0; i < ptype.size(); ++i) {
    TIMELAKE_ASSIGN_OR_RAISE(
        auto v,
        PartitionFromAvro(ptype[i], partition->record().fields[i], partition->context()));
    f.partition.push_back(std::move(v));
  }
  TIMELAKE_ASSIGN_OR_RAISE(f.record_count, df.Long(103, "record_count"));
  TIMELAKE_ASSIGN_OR_RAISE(f.file_size_in_bytes, df.Long(104, "file_size_in_bytes"));
  TIMELAKE_RETURN_NOT_OK(df.IntMap(108, "column_sizes", &f.column_sizes));
  TIMELAKE_RETURN_NOT_OK(df.IntMap(109, "value_counts", &f.value_counts));
  TIMELAKE_RETURN_NOT_OK(df.IntMap(110, "null_value_counts", &f.null_value_counts));
  TIMELAKE_RETURN_NOT_OK(df.IntMap(137, "nan_value_counts", &f.nan_value_counts));
  TIMELAKE_RETURN_NOT_OK(df.IntMap(125, "lower_bounds", &f.lower_bounds));
  TIMELAKE_RETURN_NOT_OK(df.IntMap(128, "upper_bounds", &f.upper_bounds));
  TIMELAKE_ASSIGN_OR_RAISE(f.key_metadata, df.OptString(131, "key_metadata"));
  TIMELAKE_RETURN_NOT_OK(df.IntList(132, "split_offsets", &f.split_offsets));
  TIMELAKE_RETURN_NOT_OK(df.IntList(135, "equality_ids", &f.equality_ids));
  TIMELAKE_ASSIGN_OR_RAISE(f.sort_order_id, df.OptInt(140, "sort_order_id"));
  TIMELAKE_ASSIGN_OR_RAISE(f.referenced_data_file,
                           df.OptString(143, "referenced_data_file"));
  return e;
}

// Checks that the partition spec JSON is an array whose field ids and names
// match the partition type, so that header and records cannot disagree.
arrow::Status CheckPartitionSpec(const ManifestWriteOptions& options) {
  Json spec =
      Json::parse(options.partition_spec_json, nullptr, /*allow_exceptions=*/false);
  if (spec.is_discarded() || !spec.is_array()) {
    return Invalid("partition_spec_json is not a JSON array");
  }
  if (spec.size() != options.partition_type.size()) {
    return Invalid("partition_spec_json has " + Str(static_cast<int64_t>(spec.size())) +
                   " fields but partition_type has " +
                   Str(static_cast<int64_t>(options.partition_type.size())));
  }
  for (size_t i = 0; i < spec.size(); ++i) {
    const auto& field = spec[i];
    const auto& t = options.partition_type[i];
    auto id = field.is_object() ? field.find("field-id") : field.end();
    auto name = field.is_object() ? field.find("name") : field.end();
    if (id == field.end() || !id->is_number_integer() ||
        id->get<int64_t>() != t.field_id || name == field.end() || !name->is_string() ||
        name->get<std::string>() != t.name) {
      return Invalid("partition_spec_json field " + Str(static_cast<int64_t>(i)) +
                     " does not match partition field \"" + t.name + "\" (id " +
                     Str(t.field_id) + ")");
    }
  }
  return arrow::Status::OK();
}

// ---------------------------------------------------------------------------
// Manifest list entries
// ---------------------------------------------------------------------------

AvroSchema FieldSummarySchema() {
  std::vector<AvroField> fields;
  fields.push_back(Required("contains_null", 509, Prim(AvroType::kBoolean)));
  fields.push_back(Opt("contains_nan", 518, Prim(AvroType::kBoolean)));
  fields.push_back(Opt("lower_bound", 510, Prim(AvroType::kBytes)));
  fields.push_back(Opt("upper_bound", 511, Prim(AvroType::kBytes)));
  return AvroSchema::Record("r508", std::move(fields));
}

arrow::Result<AvroValue> ManifestFileToAvro(const ManifestFile& m) {
  if (m.content != kManifestData && m.content != kManifestDeletes) {
    return Invalid("content " + Str(m.content) + " is not 0 or 1");
  }
  if (!m.added_files_count || !m.existing_files_count || !m.deleted_files_count ||
      !m.added_rows_count || !m.existing_rows_count || !m.deleted_rows_count) {
    return Invalid("file and row counts are required in a v2 manifest list");
  }
  std::vector<AvroValue> partitions;
  for (const auto& p : m.partitions) {
    partitions.push_back(AvroValue::Record(
        {AvroValue::Boolean(p.contains_null),
         p.contains_nan ? AvroValue::Boolean(*p.contains_nan) : AvroValue::Null(),
         OptStringValue(p.lower_bound), OptStringValue(p.upper_bound)}));
  }
  return AvroValue::Record({
      AvroValue::String(m.manifest_path),
      AvroValue::Long(m.manifest_length),
      AvroValue::Int(m.partition_spec_id),
      AvroValue::Int(m.content),
      AvroValue::Long(m.sequence_number),
      AvroValue::Long(m.min_sequence_number),
      AvroValue::Long(m.added_snapshot_id),
      AvroValue::Int(*m.added_files_count),
      AvroValue::Int(*m.existing_files_count),
      AvroValue::Int(*m.deleted_files_count),
      AvroValue::Long(*m.added_rows_count),
      AvroValue::Long(*m.existing_rows_count),
      AvroValue::Long(*m.deleted_rows_count),
      AvroValue::Array(std::move(partitions)),
      OptStringValue(m.key_metadata),
  });
}

arrow::Result<ManifestFile> ManifestFileFromAvro(const RecordView& r) {
  ManifestFile m;
  TIMELAKE_ASSIGN_OR_RAISE(m.manifest_path, r.String(500, "manifest_path"));
  TIMELAKE_ASSIGN_OR_RAISE(m.manifest_length, r.Long(501, "manifest_length"));
  TIMELAKE_ASSIGN_OR_RAISE(m.partition_spec_id, r.Int(502, "partition_spec_id"));
  TIMELAKE_ASSIGN_OR_RAISE(auto content, r.OptInt(517, "content"));
  m.content = content.value_or(kManifestData);
  TIMELAKE_ASSIGN_OR_RAISE(auto seq, r.OptLong(515, "sequence_number"));
  m.sequence_number = seq.value_or(0);
  TIMELAKE_ASSIGN_OR_RAISE(auto min_seq, r.OptLong(516, "min_sequence_number"));
  m.min_sequence_number = min_seq.value_or(0);
  TIMELAKE_ASSIGN_OR_RAISE(m.added_snapshot_id, r.Long(503, "added_snapshot_id"));
  TIMELAKE_ASSIGN_OR_RAISE(m.added_files_count, r.OptInt(504, "added_files_count"));
  TIMELAKE_ASSIGN_OR_RAISE(m.existing_files_count, r.OptInt(505, "existing_files_count"));
  TIMELAKE_ASSIGN_OR_RAISE(m.deleted_files_count, r.OptInt(506, "deleted_files_count"));
  TIMELAKE_ASSIGN_OR_RAISE(m.added_rows_count, r.OptLong(512, "added_rows_count"));
  TIMELAKE_ASSIGN_OR_RAISE(m.existing_rows_count, r.OptLong(513, "existing_rows_count"));
  TIMELAKE_ASSIGN_OR_RAISE(m.deleted_rows_count, r.OptLong(514, "deleted_rows_count"));
  TIMELAKE_ASSIGN_OR_RAISE(auto partitions, r.Get(507, "partitions"));
  if (partitions.value) {
    const auto* arr = partitions.value->get_if<AvroArray>();
    if (!arr || partitions.schema->type != AvroType::kArray) {
      return r.WrongType(507, "partitions", "array", *partitions.value);
    }
    const AvroSchema& item = partitions.schema->items();
    for (size_t i = 0; i < arr->items.size(); ++i) {
      const auto* rec = arr->items[i].get_if<AvroRecord>();
      if (!rec || item.type != AvroType::kRecord) {
        return r.WrongType(508, "partitions element", "record", arr->items[i]);
      }
      RecordView s(&item, rec,
                   r.context() + ".partitions[" + Str(static_cast<int64_t>(i)) + "]");
      FieldSummary summary;
      TIMELAKE_ASSIGN_OR_RAISE(auto contains_null, s.OptBool(509, "contains_null"));
      if (!contains_null) return s.Missing(509, "contains_null");
      summary.contains_null = *contains_null;
      TIMELAKE_ASSIGN_OR_RAISE(summary.contains_nan, s.OptBool(518, "contains_nan"));
      TIMELAKE_ASSIGN_OR_RAISE(summary.lower_bound, s.OptString(510, "lower_bound"));
      TIMELAKE_ASSIGN_OR_RAISE(summary.upper_bound, s.OptString(511, "upper_bound"));
      m.partitions.push_back(std::move(summary));
    }
  }
  TIMELAKE_ASSIGN_OR_RAISE(m.key_metadata, r.OptString(519, "key_metadata"));
  return m;
}

}  // namespace

std::string_view PartitionValueTypeName(PartitionValueType type) {
  switch (type) {
    case PartitionValueType::kBoolean:
      return "boolean";
    case PartitionValueType::kInt:
      return "int";
    case PartitionValueType::kLong:
      return "long";
    case PartitionValueType::kFloat:
      return "float";
    case PartitionValueType::kDouble:
      return "double";
    case PartitionValueType::kDate:
      return "date";
    case PartitionValueType::kTime:
      return "time";
    case PartitionValueType::kTimestamp:
      return "timestamp";
    case PartitionValueType::kTimestampTz:
      return "timestamptz";
    case PartitionValueType::kString:
      return "string";
    case PartitionValueType::kBinary:
      return "binary";
  }
  return "unknown";
}

AvroSchema ManifestEntrySchema(const std::vector<PartitionFieldType>& partition_type) {
  std::vector<AvroField> partition_fields;
  for (const auto& p : partition_type) {
    partition_fields.push_back(AvroField::Make(p.name, PartitionAvroType(p.type),
                                               p.field_id,
                                               /*optional=*/!p.required));
  }
  std::vector<AvroField> df;
  df.push_back(Required("content", 134, Prim(AvroType::kInt)));
  df.push_back(Required("file_path", 100, Prim(AvroType::kString)));
  df.push_back(Required("file_format", 101, Prim(AvroType::kString)));
  df.push_back(Required("partition", 102,
                        AvroSchema::Record("r102", std::move(partition_fields))));
  df.push_back(Required("record_count", 103, Prim(AvroType::kLong)));
  df.push_back(Required("file_size_in_bytes", 104, Prim(AvroType::kLong)));
  df.push_back(Opt("column_sizes", 108, IntKeyMap(117, 118, AvroType::kLong)));
  df.push_back(Opt("value_counts", 109, IntKeyMap(119, 120, AvroType::kLong)));
  df.push_back(Opt("null_value_counts", 110, IntKeyMap(121, 122, AvroType::kLong)));
  df.push_back(Opt("nan_value_counts", 137, IntKeyMap(138, 139, AvroType::kLong)));
  df.push_back(Opt("lower_bounds", 125, IntKeyMap(126, 127, AvroType::kBytes)));
  df.push_back(Opt("upper_bounds", 128, IntKeyMap(129, 130, AvroType::kBytes)));
  df.push_back(Opt("key_metadata", 131, Prim(AvroType::kBytes)));
  df.push_back(Opt("split_offsets", 132, List(133, AvroType::kLong)));
  df.push_back(Opt("equality_ids", 135, List(136, AvroType::kInt)));
  df.push_back(Opt("sort_order_id", 140, Prim(AvroType::kInt)));
  df.push_back(Opt("referenced_data_file", 143, Prim(AvroType::kString)));

  std::vector<AvroField> entry;
  entry.push_back(Required("status", 0, Prim(AvroType::kInt)));
  entry.push_back(Opt("snapshot_id", 1, Prim(AvroType::kLong)));
  entry.push_back(Opt("sequence_number", 3, Prim(AvroType::kLong)));
  entry.push_back(Opt("file_sequence_number", 4, Prim(AvroType::kLong)));
  entry.push_back(Required("data_file", 2, AvroSchema::Record("r2", std::move(df))));
  return AvroSchema::Record("manifest_entry", std::move(entry));
}

arrow::Result<std::string> WriteManifest(const ManifestWriteOptions& options,
                                         const std::vector<ManifestEntry>& entries) {
  if (options.format_version != 2) {
    return Unsupported("writing format version " + Str(options.format_version) +
                       " manifests is not supported (only 2)");
  }
  TIMELAKE_RETURN_NOT_OK(CheckCodec(options.codec));
  if (options.content != "data" && options.content != "deletes") {
    return Invalid("manifest content \"" + options.content + "\" is not data or deletes");
  }
  TIMELAKE_RETURN_NOT_OK(CheckPartitionSpec(options));
  AvroWriteOptions avro_options;
  avro_options.codec = options.codec;
  AvroFileWriter writer(ManifestEntrySchema(options.partition_type),
                        {{"schema", options.table_schema_json},
                         {"schema-id", Str(options.schema_id)},
                         {"partition-spec", options.partition_spec_json},
                         {"partition-spec-id", Str(options.partition_spec_id)},
                         {"format-version", Str(options.format_version)},
                         {"content", options.content}},
                        avro_options);
  for (size_t i = 0; i < entries.size(); ++i) {
    auto record = EntryToAvro(options.partition_type, entries[i]);
    if (!record.ok()) {
      return WithContext(record.status(), "writing manifest entry " +
                                              Str(static_cast<int64_t>(i)) + " (" +
                                              entries[i].data_file.file_path + ")");
    }
    TIMELAKE_RETURN_NOT_OK(writer.Append(*record));
  }
  return writer.Finish();
}

arrow::Result<ManifestContents> ReadManifest(std::string_view bytes) {
  auto file_result = ReadAvroFile(bytes);
  if (!file_result.ok()) return WithContext(file_result.status(), "reading manifest");
  const AvroFile& file = *file_result;
  TIMELAKE_RETURN_NOT_OK(CheckRootRecord(file, "manifest"));
  ManifestContents out;
  out.metadata = file.metadata;
  TIMELAKE_ASSIGN_OR_RAISE(auto version,
                           HeaderInt(file.metadata, "format-version", "manifest"));
  out.format_version = version.value_or(1);
  TIMELAKE_ASSIGN_OR_RAISE(out.schema_id,
                           HeaderInt(file.metadata, "schema-id", "manifest"));
  TIMELAKE_ASSIGN_OR_RAISE(out.partition_spec_id,
                           HeaderInt(file.metadata, "partition-spec-id", "manifest"));
  if (auto it = file.metadata.find("content"); it != file.metadata.end()) {
    out.content = it->second;
  }
  if (auto it = file.metadata.find("schema"); it != file.metadata.end()) {
    out.table_schema_json = it->second;
  }
  if (auto it = file.metadata.find("partition-spec"); it != file.metadata.end()) {
    out.partition_spec_json = it->second;
  }

  // Resolve data_file and partition in the writer schema once.
  const AvroSchema* data_file = nullptr;
  for (const auto& f : file.schema.fields) {
    if (f.field_id() ? *f.field_id() == 2 : f.name == "data_file") data_file = &f.schema;
  }
  if (data_file && data_file->OptionalBranch()) {
    data_file = &data_file->children[*data_file->OptionalBranch()];
  }
  if (!data_file || data_file->type != AvroType::kRecord) {
    return Corrupt("manifest: the schema has no data_file record (field id 2)");
  }
  const AvroSchema* partition = nullptr;
  for (const auto& f : data_file->fields) {
    if (f.field_id() ? *f.field_id() == 102 : f.name == "partition")
      partition = &f.schema;
  }
  if (partition && partition->OptionalBranch()) {
    partition = &partition->children[*partition->OptionalBranch()];
  }
  if (!partition || partition->type != AvroType::kRecord) {
    return Corrupt("manifest: data_file has no partition record (field id 102)");
  }
  TIMELAKE_ASSIGN_OR_RAISE(out.partition_type, PartitionTypeOf(*partition));

  out.entries.reserve(file.records.size());
  for (size_t i = 0; i < file.records.size(); ++i) {
    RecordView entry(&file.schema, file.records[i].get_if<AvroRecord>(),
                     "manifest entry " + Str(static_cast<int64_t>(i)));
    TIMELAKE_ASSIGN_OR_RAISE(auto e, EntryFromAvro(entry, out.partition_type));
    out.entries.push_back(std::move(e));
  }
  return out;
}

AvroSchema ManifestFileSchema() {
  std::vector<AvroField> f;
  f.push_back(Required("manifest_path", 500, Prim(AvroType::kString)));
  f.push_back(Required("manifest_length", 501, Prim(AvroType::kLong)));
  f.push_back(Required("partition_spec_id", 502, Prim(AvroType::kInt)));
  f.push_back(Required("content", 517, Prim(AvroType::kInt)));
  f.push_back(Required("sequence_number", 515, Prim(AvroType::kLong)));
  f.push_back(Required("min_sequence_number", 516, Prim(AvroType::kLong)));
  f.push_back(Required("added_snapshot_id", 503, Prim(AvroType::kLong)));
  f.push_back(Required("added_files_count", 504, Prim(AvroType::kInt)));
  f.push_back(Required("existing_files_count", 505, Prim(AvroType::kInt)));
  f.push_back(Required("deleted_files_count", 506, Prim(AvroType::kInt)));
  f.push_back(Required("added_rows_count", 512, Prim(AvroType::kLong)));
  f.push_back(Required("existing_rows_count", 513, Prim(AvroType::kLong)));
  f.push_back(Required("deleted_rows_count", 514, Prim(AvroType::kLong)));
  f.push_back(Opt("partitions", 507,
                  AvroSchema::Array(FieldSummarySchema()).With("element-id", 508)));
  f.push_back(Opt("key_metadata", 519, Prim(AvroType::kBytes)));
  return AvroSchema::Record("manifest_file", std::move(f));
}

arrow::Result<std::string> WriteManifestList(int64_t snapshot_id,
                                             std::optional<int64_t> parent_snapshot_id,
                                             int64_t sequence_number,
                                             const std::vector<ManifestFile>& manifests,
                                             std::string_view codec) {
  TIMELAKE_RETURN_NOT_OK(CheckCodec(codec));
  AvroWriteOptions avro_options;
  avro_options.codec = std::string(codec);
  AvroFileWriter writer(
      ManifestFileSchema(),
      {{"snapshot-id", Str(snapshot_id)},
       {"parent-snapshot-id", parent_snapshot_id ? Str(*parent_snapshot_id) : "null"},
       {"sequence-number", Str(sequence_number)},
       {"format-version", "2"}},
      avro_options);
  for (size_t i = 0; i < manifests.size(); ++i) {
    auto record = ManifestFileToAvro(manifests[i]);
    if (!record.ok()) {
      return WithContext(record.status(), "writing manifest list entry " +
                                              Str(static_cast<int64_t>(i)) + " (" +
                                              manifests[i].manifest_path + ")");
    }
    TIMELAKE_RETURN_NOT_OK(writer.Append(*record));
  }
  return writer.Finish();
}

arrow::Result<std::vector<ManifestFile>> ReadManifestList(std::string_view bytes) {
  auto file_result = ReadAvroFile(bytes);
  if (!file_result.ok())
    return WithContext(file_result.status(), "reading manifest list");
  const AvroFile& file = *file_result;
  TIMELAKE_RETURN_NOT_OK(CheckRootRecord(file, "manifest list"));
  std::vector<ManifestFile> out;
  out.reserve(file.records.size());
  for (size_t i = 0; i < file.records.size(); ++i) {
    RecordView r(&file.schema, file.records[i].get_if<AvroRecord>(),
                 "manifest list entry " + Str(static_cast<int64_t>(i)));
    TIMELAKE_ASSIGN_OR_RAISE(auto m, ManifestFileFromAvro(r));
    out.push_back(std::move(m));
  }
  return out;
}

arrow::Result<std::vector<FieldSummary>> SummarizePartitions(
    const std::vector<PartitionFieldType>& partition_type,
    const std::vector<const PartitionTuple*>& tuples) {
  const size_t n = partition_type.size();
  std::vector<FieldSummary> out(n);
  std::vector<std::optional<PartitionValue>> lower(n), upper(n);
  for (auto& s : out) s.contains_nan = false;
  for (const PartitionTuple* tuple : tuples) {
    TIMELAKE_RETURN_NOT_OK(CheckTuple(partition_type, *tuple));
    for (size_t i = 0; i < n; ++i) {
      const auto& v = (*tuple)[i];
      if (!v) {
        out[i].contains_null = true;
      } else if (IsNaN(*v)) {
        out[i].contains_nan = true;
      } else {
        if (!lower[i] || PartitionLess(*v, *lower[i])) lower[i] = v;
        if (!upper[i] || PartitionLess(*upper[i], *v)) upper[i] = v;
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (lower[i]) out[i].lower_bound = EncodePartitionValue(*lower[i]);
    if (upper[i]) out[i].upper_bound = EncodePartitionValue(*upper[i]);
  }
  return out;
}

arrow::Result<ManifestFile> SummarizeManifest(
    std::string manifest_path, int64_t manifest_length, int32_t partition_spec_id,
    int64_t added_snapshot_id, int64_t sequence_number,
    const std::vector<PartitionFieldType>& partition_type,
    const std::vector<ManifestEntry>& entries) {
  ManifestFile m;
  m.manifest_path = std::move(manifest_path);
  m.manifest_length = manifest_length;
  m.partition_spec_id = partition_spec_id;
  m.added_snapshot_id = added_snapshot_id;
  m.sequence_number = sequence_number;
  int64_t files[3] = {0, 0, 0};
  int64_t rows[3] = {0, 0, 0};
  std::optional<int64_t> min_seq;
  bool any_data = false, any_deletes = false;
  std::vector<const PartitionTuple*> tuples;
  tuples.reserve(entries.size());
  for (const auto& e : entries) {
    if (e.status < kEntryExisting || e.status > kEntryDeleted) {
      return Invalid("manifest entry status " + Str(e.status) + " is not 0, 1 or 2");
    }
    files[e.status] += 1;
    rows[e.status] += e.data_file.record_count;
    (e.data_file.content == kContentData ? any_data : any_deletes) = true;
    if (e.status != kEntryDeleted) {
      const int64_t seq = e.sequence_number.value_or(sequence_number);
      if (!min_seq || seq < *min_seq) min_seq = seq;
    }
    tuples.push_back(&e.data_file.partition);
  }
  if (any_data && any_deletes) {
    return Invalid("manifest " + m.manifest_path + " mixes data and delete files");
  }
  for (int64_t count : files) {
    if (count > std::numeric_limits<int32_t>::max()) {
      return Invalid("manifest " + m.manifest_path + " has more than 2^31 entries");
    }
  }
  m.content = any_deletes ? kManifestDeletes : kManifestData;
  m.min_sequence_number = min_seq.value_or(sequence_number);
  m.existing_files_count = static_cast<int32_t>(files[kEntryExisting]);
  m.added_files_count = static_cast<int32_t>(files[kEntryAdded]);
  m.deleted_files_count = static_cast<int32_t>(files[kEntryDeleted]);
  m.existing_rows_count = rows[kEntryExisting];
  m.added_rows_count = rows[kEntryAdded];
  m.deleted_rows_count = rows[kEntryDeleted];
  TIMELAKE_ASSIGN_OR_RAISE(m.partitions, SummarizePartitions(partition_type, tuples));
  return m;
}

void InheritManifestFileFields(const ManifestFile& manifest,
                               std::vector<ManifestEntry>* entries) {
  for (auto& e : *entries) {
    if (!e.snapshot_id) e.snapshot_id = manifest.added_snapshot_id;
    const bool inherit = e.status == kEntryAdded || manifest.sequence_number == 0;
    if (inherit && !e.sequence_number) e.sequence_number = manifest.sequence_number;
    if (inherit && !e.file_sequence_number)
      e.file_sequence_number = manifest.sequence_number;
  }
}

}  // namespace timelake::format
