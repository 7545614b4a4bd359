// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A small Apache Avro implementation: the subset that Iceberg manifests and
// manifest lists need, and nothing else.
//
//   * A schema model (AvroSchema / AvroField) parsed from and written back to
//     Avro schema JSON. Unlike Debian's avro-c it KEEPS every extra attribute
//     (Iceberg's `field-id`, `element-id`, `key-id`, `value-id`, `logicalType`,
//     `doc`, `default`, ...), because Iceberg readers resolve fields by id.
//   * A generic value tree (AvroValue) and the binary encoding of values
//     (https://avro.apache.org/docs/1.11.1/specification/#binary-encoding).
//   * Object container files (OCF): magic "Obj\x01", a header with a metadata
//     map and a 16-byte sync marker, then blocks of records, with the `null`
//     and `deflate` (raw RFC 1951) codecs.
//
// Supported types: null, boolean, int, long, float, double, bytes, string,
// fixed, enum, record, array, map and union. Named types may be referenced by
// name after their definition; recursive types are rejected (Iceberg never
// uses them, and refusing them keeps every decode bounded by the schema depth).
//
// Robustness: every parser here reads untrusted bytes and is fuzzed. Malformed
// input yields a kCorrupt error (see timelake/status.h) naming what was wrong
// and, where it makes sense, the byte offset. Lengths and counts read from the
// input are checked against the bytes that remain before anything is
// allocated, decompression is capped, and the number of values a decode may
// produce is bounded by the size of its input.
//
// Thread safety: all types here are plain values; const access from several
// threads is safe, mutation needs external synchronisation. Functions are
// reentrant.

#ifndef TIMELAKE_FORMAT_AVRO_H_
#define TIMELAKE_FORMAT_AVRO_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "timelake/status.h"

namespace timelake::format {

// ---------------------------------------------------------------------------
// Schema model
// ---------------------------------------------------------------------------

// The Avro types we read and write. Logical types (date, timestamp-micros,
// decimal, uuid, Iceberg's "map" on arrays) are attributes on these.
enum class AvroType {
  kNull,
  kBoolean,
  kInt,
  kLong,
  kFloat,
  kDouble,
  kBytes,
  kString,
  kFixed,
  kEnum,
  kRecord,
  kArray,
  kMap,
  kUnion,
};

// Lower-case Avro name of a type ("int", "record", "union", ...).
std::string_view AvroTypeName(AvroType type);

// Extra JSON attributes of a schema or field, in their original order.
using AvroAttributes = nlohmann::ordered_json;

struct AvroField;

// One node of a schema tree. A plain value: copying copies the whole subtree.
// A named type that the JSON references several times by name is held as
// separate copies of its definition; ToJson() writes the definition once and
// then the name again, as the Avro specification requires.
struct AvroSchema {
  AvroType type = AvroType::kNull;

  // Full name (namespace.name) of a record, enum or fixed; empty otherwise.
  std::string name;

  // Record fields, in order.
  std::vector<AvroField> fields;

  // Array: {items}. Map: {values} (keys are always strings). Union: the
  // branches in order. Empty for other types.
  std::vector<AvroSchema> children;

  // Fixed: the size in bytes.
  int64_t fixed_size = 0;

  // Enum: the symbols.
  std::vector<std::string> symbols;

  // Every other attribute of the JSON object (`logicalType`, `element-id`,
  // `doc`, ...), or an empty object. Never contains the structural keys
  // (type, name, namespace, fields, items, values, size, symbols).
  AvroAttributes attributes = AvroAttributes::object();

  // Builders. They do not validate names.
  static AvroSchema Primitive(AvroType type);
  static AvroSchema Record(std::string name, std::vector<AvroField> fields);
  static AvroSchema Array(AvroSchema items);
  static AvroSchema Map(AvroSchema values);
  static AvroSchema Union(std::vector<AvroSchema> branches);
  // The union ["null", value]: how Iceberg writes optional fields.
  static AvroSchema Optional(AvroSchema value);
  static AvroSchema Fixed(std::string name, int64_t size);
  static AvroSchema Enum(std::string name, std::vector<std::string> symbols);

  // Returns this schema with attribute `key` set to `value`, for chaining on
  // a builder: AvroSchema::Primitive(AvroType::kInt).With("logicalType", "date").
  AvroSchema With(std::string key, AvroAttributes value) &&;

  // Accessors for the single child of arrays (items) and maps (values).
  // Precondition: type is kArray (items) or kMap (values).
  const AvroSchema& items() const { return children.front(); }
  const AvroSchema& values() const { return children.front(); }

  // The integer attribute `key` (e.g. "element-id"), if present and integral
  // and within int32.
  std::optional<int32_t> IntAttribute(std::string_view key) const;

  // The `logicalType` attribute, or "" if there is none.
  std::string_view logical_type() const;

  // For the union [null, T] or [T, null]: the index of T. Otherwise nullopt.
  std::optional<size_t> OptionalBranch() const;

  // The schema JSON. Named types are written in full on first use and by
  // name afterwards. Attributes are written after the structural keys.
  nlohmann::ordered_json ToJson() const;
  // ToJson() as compact text; invalid UTF-8 in names is replaced by U+FFFD.
  std::string ToString() const {
    return ToJson().dump(-1, ' ', false,
                         nlohmann::ordered_json::error_handler_t::replace);
  }
};

// One field of a record.
struct AvroField {
  std::string name;
  AvroSchema schema;

  // Every other attribute of the field object (`field-id`, `doc`, `default`,
  // ...), or an empty object.
  AvroAttributes attributes = AvroAttributes::object();

  // A field with Iceberg's `field-id` attribute. When `optional`, the type is
  // wrapped in ["null", type] and the field gets `"default": null`.
  static AvroField Make(std::string name, AvroSchema schema,
                        std::optional<int32_t> field_id = std::nullopt,
                        bool optional = false);

  // The `field-id` attribute, if present, integral and within int32.
  std::optional<int32_t> field_id() const;
};

// Parses Avro schema JSON. Errors: kInvalid naming the problem (bad JSON,
// unknown type name, missing record fields, recursive reference, nesting
// deeper than 64 levels, more than 100,000 nodes once references are
// expanded, ...).
arrow::Result<AvroSchema> ParseAvroSchema(std::string_view json);

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

class AvroValue;

// The value of an Avro array.
struct AvroArray {
  std::vector<AvroValue> items;
};

// The value of an Avro map, entries in encoded order (duplicates kept).
struct AvroMap {
  std::vector<std::pair<std::string, AvroValue>> entries;
};

// The value of an Avro record: one value per schema field, in schema order.
struct AvroRecord {
  std::vector<AvroValue> fields;
};

// A generic Avro datum. The schema, not the value, says which Avro type a
// value has: std::string holds string, bytes, fixed and enum (the symbol)
// values alike. A union value is just the value of its branch; the encoder
// picks the branch (see EncodeAvroValue).
class AvroValue {
 public:
  using Variant = std::variant<std::monostate, bool, int32_t, int64_t, float, double,
                               std::string, AvroArray, AvroMap, AvroRecord>;

  // A null value.
  AvroValue() = default;
  explicit AvroValue(Variant v) : value_(std::move(v)) {}

  static AvroValue Null() { return AvroValue(); }
  static AvroValue Boolean(bool v) { return AvroValue(std::in_place_type<bool>, v); }
  static AvroValue Int(int32_t v) { return AvroValue(std::in_place_type<int32_t>, v); }
  static AvroValue Long(int64_t v) { return AvroValue(std::in_place_type<int64_t>, v); }
  static AvroValue Float(float v) { return AvroValue(std::in_place_type<float>, v); }
  static AvroValue Double(double v) { return AvroValue(std::in_place_type<double>, v); }
  // For string, bytes, fixed and enum values.
  static AvroValue String(std::string v) {
    return AvroValue(std::in_place_type<std::string>, std::move(v));
  }
  static AvroValue Array(std::vector<AvroValue> items);
  static AvroValue Map(std::vector<std::pair<std::string, AvroValue>> entries);
  static AvroValue Record(std::vector<AvroValue> fields);

  bool is_null() const { return std::holds_alternative<std::monostate>(value_); }

  // The alternative T, or nullptr.
  template <typename T>
  const T* get_if() const {
    return std::get_if<T>(&value_);
  }
  template <typename T>
  T* get_if() {
    return std::get_if<T>(&value_);
  }

  const Variant& variant() const { return value_; }
  Variant& variant() { return value_; }

  // A short name of the held alternative ("null", "long", "record", ...),
  // for error messages.
  std::string_view kind_name() const;

  friend bool operator==(const AvroValue&, const AvroValue&);

 private:
  // The factories construct the alternative in place: moving a temporary
  // Variant instead trips GCC 12's -Wmaybe-uninitialized (a false positive)
  // under -O1 with sanitizers.
  template <typename T>
  AvroValue(std::in_place_type_t<T> tag, T v) : value_(tag, std::move(v)) {}

  Variant value_;
};

bool operator==(const AvroArray& a, const AvroArray& b);
bool operator==(const AvroMap& a, const AvroMap& b);
bool operator==(const AvroRecord& a, const AvroRecord& b);

// ---------------------------------------------------------------------------
// Binary encoding
// ---------------------------------------------------------------------------

// Primitive encoders; each appends to *out.
void AppendAvroLong(int64_t v, std::string* out);  // zig-zag varint
void AppendAvroInt(int32_t v, std::string* out);   // zig-zag varint
void AppendAvroBoolean(bool v, std::string* out);
void AppendAvroFloat(float v, std::string* out);             // 4 bytes little-endian
void AppendAvroDouble(double v, std::string* out);           // 8 bytes little-endian
void AppendAvroBytes(std::string_view v, std::string* out);  // long length + bytes

// Reads primitives from a buffer it does not own (the buffer must outlive the
// decoder and the string_views it returns). Every read checks the remaining
// length first; errors are kCorrupt and name the value and its offset.
//
// The decoder also carries a value budget: DecodeAvroValue charges it for
// values that occupy no bytes of input (nulls, records, empty fixed), so that
// a small input cannot expand into an unbounded number of values.
class AvroDecoder {
 public:
  // `base_offset` is added to positions in error messages, so that errors
  // inside a block can report file offsets.
  explicit AvroDecoder(std::string_view data, int64_t base_offset = 0);

  arrow::Result<int64_t> ReadLong();
  arrow::Result<int32_t> ReadInt();
  arrow::Result<bool> ReadBoolean();
  arrow::Result<float> ReadFloat();
  arrow::Result<double> ReadDouble();
  // A length-prefixed byte string (bytes and string).
  arrow::Result<std::string_view> ReadBytes();
  // Exactly n bytes (fixed, sync markers).
  arrow::Result<std::string_view> ReadFixed(int64_t n);

  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }
  // position() + base_offset, for messages.
  int64_t offset() const { return base_offset_ + static_cast<int64_t>(pos_); }

  // Takes n from the value budget; kCorrupt once it is exhausted. The budget
  // starts at twice the input size plus 4096.
  arrow::Status ChargeValues(int64_t n);
  int64_t value_budget() const { return value_budget_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  int64_t base_offset_;
  int64_t value_budget_;
};

// Appends the binary encoding of `value` as `schema` to *out. Type rules:
// int accepts int32; long accepts int32 and int64; float accepts float;
// double accepts float and double; string, bytes, fixed (of the exact size)
// and enum (a listed symbol) accept std::string; records need one value per
// field. For a union, a null value selects the first null branch, any other
// value the first branch that accepts it. Errors: kInvalid naming the path of
// the offending value (e.g. "data_file.partition.ts_day: expected int, got
// string"); *out may then hold a partial encoding.
arrow::Status EncodeAvroValue(const AvroSchema& schema, const AvroValue& value,
                              std::string* out);

// Decodes one value of `schema`. Errors: kCorrupt (truncation, bad lengths,
// union or enum index out of range, boolean byte other than 0/1, value budget
// exhausted).
arrow::Result<AvroValue> DecodeAvroValue(const AvroSchema& schema, AvroDecoder* decoder);

// ---------------------------------------------------------------------------
// Object container files
// ---------------------------------------------------------------------------

// The four magic bytes that open every Avro object container file.
inline constexpr std::string_view kAvroMagic{"Obj\x01", 4};

// A whole container file, decoded.
struct AvroFile {
  // The header metadata, including `avro.schema` and `avro.codec` and any
  // application keys (Iceberg: `schema`, `partition-spec`, `format-version`,
  // `snapshot-id`, ...). Values are the raw bytes.
  std::map<std::string, std::string> metadata;
  // The writer schema from `avro.schema`.
  AvroSchema schema;
  // The codec from `avro.codec` ("null" when absent).
  std::string codec;
  // Every record of every block, in file order.
  std::vector<AvroValue> records;
};

// Limits for ReadAvroFile, so that hostile input cannot exhaust memory. The
// decoded value tree of crafted input can take up to about 100 bytes of memory
// per decoded byte (typical manifests: under 10); fuzz targets should lower
// these limits.
struct AvroReadOptions {
  // Largest decompressed size of one block. Default: 64 MiB.
  int64_t max_block_bytes = int64_t{64} << 20;
  // Largest decompressed size of all blocks together. Default: 256 MiB.
  int64_t max_total_bytes = int64_t{256} << 20;
};

// Reads a container file held in memory. Errors (all kCorrupt unless noted):
// bad magic; truncated header or block; a header map with a duplicate key or
// without `avro.schema`; an unparsable schema; a block count or size that is
// negative or exceeds the remaining bytes; a sync marker that differs from the
// header's; a block whose records do not use exactly its bytes; deflate data
// that does not inflate or inflates beyond the limits; an unknown codec.
// kUnsupported for codecs Avro defines but we do not implement (snappy,
// zstandard, bzip2, xz).
//
// Note: a file cut exactly after a block's sync marker is itself a valid
// container file (with fewer blocks); no reader can tell it was truncated.
arrow::Result<AvroFile> ReadAvroFile(std::string_view bytes,
                                     const AvroReadOptions& options = {});

// Options for writing container files.
struct AvroWriteOptions {
  // "null" or "deflate". Default: "null".
  std::string codec = "null";
  // zlib level for deflate, -1 for zlib's default (6). Default: -1.
  int deflate_level = -1;
  // A block is flushed once its encoded (uncompressed) records reach this
  // many bytes. Default: 64 KiB.
  int64_t block_target_bytes = int64_t{64} << 10;
  // The sync marker; nullopt draws 16 random bytes. Default: nullopt.
  std::optional<std::array<uint8_t, 16>> sync_marker;
};

// Writes a container file into memory, one record at a time. Not thread safe.
//
//   AvroFileWriter writer(schema, {{"format-version", "2"}}, options);
//   TIMELAKE_RETURN_NOT_OK(writer.Append(record));
//   TIMELAKE_ASSIGN_OR_RAISE(std::string bytes, writer.Finish());
class AvroFileWriter {
 public:
  // `metadata` are the application header keys, written in the given order
  // after `avro.schema` and `avro.codec` (keys starting with "avro." are
  // rejected by Finish with kInvalid).
  AvroFileWriter(AvroSchema schema,
                 std::vector<std::pair<std::string, std::string>> metadata,
                 AvroWriteOptions options = {});

  // Encodes one record (kInvalid if it does not match the schema, see
  // EncodeAvroValue; the writer is then unusable).
  arrow::Status Append(const AvroValue& record);

  // Flushes the last block and returns the whole file. Errors: kInvalid for a
  // bad codec, metadata key or earlier failed Append; kInternal for zlib.
  arrow::Result<std::string> Finish();

 private:
  arrow::Status FlushBlock();

  AvroSchema schema_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  AvroWriteOptions options_;
  std::string sync_;
  std::string body_;   // blocks written so far
  std::string block_;  // encoded records of the open block
  int64_t block_count_ = 0;
  arrow::Status status_;
  bool finished_ = false;
};

// Writes `records` into a container file in one call (see AvroFileWriter).
arrow::Result<std::string> WriteAvroFile(
    const AvroSchema& schema, std::vector<std::pair<std::string, std::string>> metadata,
    const std::vector<AvroValue>& records, const AvroWriteOptions& options = {});

}  // namespace timelake::format

#endif  // TIMELAKE_FORMAT_AVRO_H_
