// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/avro.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "timelake/testing/matchers.h"

namespace timelake::format {
namespace {

using timelake::testing::ExpectError;

std::string Bytes(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

std::string EncodeLong(int64_t v) {
  std::string out;
  AppendAvroLong(v, &out);
  return out;
}

constexpr std::array<uint8_t, 16> kSync = {1, 2,  3,  4,  5,  6,  7,  8,
                                           9, 10, 11, 12, 13, 14, 15, 16};

std::string SyncString() { return std::string(kSync.begin(), kSync.end()); }

// Builds a container file by hand, for inputs our writer would never make.
std::string BuildFile(const std::vector<std::pair<std::string, std::string>>& metadata,
                      const std::vector<std::pair<int64_t, std::string>>& blocks,
                      const std::string& sync = SyncString()) {
  std::string out(kAvroMagic);
  AppendAvroLong(static_cast<int64_t>(metadata.size()), &out);
  for (const auto& [k, v] : metadata) {
    AppendAvroBytes(k, &out);
    AppendAvroBytes(v, &out);
  }
  AppendAvroLong(0, &out);
  out += sync;
  for (const auto& [count, data] : blocks) {
    AppendAvroLong(count, &out);
    AppendAvroLong(static_cast<int64_t>(data.size()), &out);
    out += data;
    out += sync;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Primitive encoding
// ---------------------------------------------------------------------------

TEST(AvroPrimitives, ZigZagVarintsMatchTheSpecification) {
  // Examples from the Avro specification, plus the extremes.
  EXPECT_EQ(EncodeLong(0), Bytes({0x00}));
  EXPECT_EQ(EncodeLong(-1), Bytes({0x01}));
  EXPECT_EQ(EncodeLong(1), Bytes({0x02}));
  EXPECT_EQ(EncodeLong(-2), Bytes({0x03}));
  EXPECT_EQ(EncodeLong(2), Bytes({0x04}));
  EXPECT_EQ(EncodeLong(-64), Bytes({0x7f}));
  EXPECT_EQ(EncodeLong(64), Bytes({0x80, 0x01}));
  EXPECT_EQ(EncodeLong(std::numeric_limits<int64_t>::max()),
            Bytes({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  EXPECT_EQ(EncodeLong(std::numeric_limits<int64_t>::min()),
            Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  std::string out;
  AppendAvroInt(std::numeric_limits<int32_t>::min(), &out);
  EXPECT_EQ(out, Bytes({0xff, 0xff, 0xff, 0xff, 0x0f}));
}

TEST(AvroPrimitives, RoundTripThroughTheDecoder) {
  const std::vector<int64_t> longs = {0,
                                      1,
                                      -1,
                                      63,
                                      -64,
                                      64,
                                      1 << 20,
                                      -(int64_t{1} << 40),
                                      std::numeric_limits<int64_t>::max(),
                                      std::numeric_limits<int64_t>::min()};
  std::string buf;
  for (int64_t v : longs) AppendAvroLong(v, &buf);
  AppendAvroInt(std::numeric_limits<int32_t>::max(), &buf);
  AppendAvroInt(std::numeric_limits<int32_t>::min(), &buf);
  AppendAvroBoolean(true, &buf);
  AppendAvroBoolean(false, &buf);
  AppendAvroFloat(-1.25f, &buf);
  AppendAvroDouble(std::numeric_limits<double>::infinity(), &buf);
  AppendAvroBytes(std::string("a\0b", 3), &buf);
  AppendAvroBytes("", &buf);

  AvroDecoder d(buf);
  for (int64_t v : longs) {
    TL_ASSERT_OK_AND_ASSIGN(int64_t got, d.ReadLong());
    EXPECT_EQ(got, v);
  }
  TL_ASSERT_OK_AND_ASSIGN(int32_t imax, d.ReadInt());
  EXPECT_EQ(imax, std::numeric_limits<int32_t>::max());
  TL_ASSERT_OK_AND_ASSIGN(int32_t imin, d.ReadInt());
  EXPECT_EQ(imin, std::numeric_limits<int32_t>::min());
  TL_ASSERT_OK_AND_ASSIGN(bool t, d.ReadBoolean());
  EXPECT_TRUE(t);
  TL_ASSERT_OK_AND_ASSIGN(bool f, d.ReadBoolean());
  EXPECT_FALSE(f);
  TL_ASSERT_OK_AND_ASSIGN(float fl, d.ReadFloat());
  EXPECT_EQ(fl, -1.25f);
  TL_ASSERT_OK_AND_ASSIGN(double db, d.ReadDouble());
  EXPECT_TRUE(std::isinf(db));
  TL_ASSERT_OK_AND_ASSIGN(std::string_view b1, d.ReadBytes());
  EXPECT_EQ(b1, std::string_view("a\0b", 3));
  TL_ASSERT_OK_AND_ASSIGN(std::string_view b2, d.ReadBytes());
  EXPECT_EQ(b2, "");
  EXPECT_TRUE(d.at_end());
}

TEST(AvroPrimitives, FloatsAreLittleEndianIeee) {
  std::string out;
  AppendAvroFloat(1.0f, &out);
  AppendAvroDouble(1.0, &out);
  EXPECT_EQ(out, Bytes({0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
}

TEST(AvroPrimitives, DecoderRejectsMalformedInput) {
  {
    const std::string input = Bytes({0x80, 0x80});
    AvroDecoder d(input);
    ExpectError(d.ReadLong().status(), ErrorKind::kCorrupt,
                "truncated varint at offset 0");
  }
  {
    // Eleven bytes: longer than any 64-bit varint.
    const std::string input =
        Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
    AvroDecoder d(input);
    ExpectError(d.ReadLong().status(), ErrorKind::kCorrupt, "overflows 64 bits");
  }
  {
    // Tenth byte 0x02 would set bit 64.
    const std::string input =
        Bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02});
    AvroDecoder d(input);
    ExpectError(d.ReadLong().status(), ErrorKind::kCorrupt, "overflows 64 bits");
  }
  {
    const std::string input = EncodeLong(int64_t{1} << 31);
    AvroDecoder d(input);
    ExpectError(d.ReadInt().status(), ErrorKind::kCorrupt, "out of 32-bit range");
  }
  {
    const std::string input = EncodeLong(-3);
    AvroDecoder d(input);
    ExpectError(d.ReadBytes().status(), ErrorKind::kCorrupt, "byte length -3");
  }
  {
    const std::string input = EncodeLong(5) + "abc";
    AvroDecoder d(input, 100);
    ExpectError(d.ReadBytes().status(), ErrorKind::kCorrupt,
                "byte length 5 at offset 100 exceeds the 3 bytes remaining");
  }
  {
    const std::string input = EncodeLong(std::numeric_limits<int64_t>::max());
    AvroDecoder d(input);
    ExpectError(d.ReadBytes().status(), ErrorKind::kCorrupt, "exceeds");
  }
  {
    const std::string input = Bytes({0x02});
    AvroDecoder d(input);
    ExpectError(d.ReadBoolean().status(), ErrorKind::kCorrupt, "neither 0 nor 1");
  }
  {
    const std::string input = Bytes({0, 0, 0});
    AvroDecoder d(input);
    ExpectError(d.ReadFloat().status(), ErrorKind::kCorrupt, "truncated float");
    ExpectError(d.ReadDouble().status(), ErrorKind::kCorrupt, "truncated double");
    ExpectError(d.ReadFixed(4).status(), ErrorKind::kCorrupt, "truncated 4-byte fixed");
    ExpectError(d.ReadFixed(-1).status(), ErrorKind::kCorrupt, "fixed");
  }
  {
    AvroDecoder d("");
    ExpectError(d.ReadBoolean().status(), ErrorKind::kCorrupt, "truncated boolean");
  }
}

// ---------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------

constexpr char kIcebergLikeSchema[] = R"({
  "type": "record", "name": "manifest_entry", "fields": [
    {"name": "status", "type": "int", "field-id": 0},
    {"name": "snapshot_id", "type": ["null", "long"], "default": null, "field-id": 1},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros",
                            "adjust-to-utc": true}, "field-id": 7, "doc": "a time"},
    {"name": "offsets", "type": ["null", {"type": "array", "items": "long",
                                          "element-id": 133}], "field-id": 132},
    {"name": "sizes", "type": {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": "k117_v118", "fields": [
          {"name": "key", "type": "int", "field-id": 117},
          {"name": "value", "type": "long", "field-id": 118}]}}, "field-id": 108},
    {"name": "props", "type": {"type": "map", "values": "string", "key-id": 5,
                               "value-id": 6}, "field-id": 4}
  ]})";

TEST(AvroSchema, KeepsIcebergAttributes) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s, ParseAvroSchema(kIcebergLikeSchema));
  ASSERT_EQ(s.type, AvroType::kRecord);
  EXPECT_EQ(s.name, "manifest_entry");
  ASSERT_EQ(s.fields.size(), 6u);
  EXPECT_EQ(s.fields[0].field_id(), 0);
  EXPECT_EQ(s.fields[1].field_id(), 1);
  EXPECT_TRUE(s.fields[1].attributes.at("default").is_null());
  EXPECT_EQ(s.fields[1].schema.OptionalBranch(), 1u);
  EXPECT_EQ(s.fields[2].schema.type, AvroType::kLong);
  EXPECT_EQ(s.fields[2].schema.logical_type(), "timestamp-micros");
  EXPECT_EQ(s.fields[2].schema.attributes.at("adjust-to-utc"), true);
  EXPECT_EQ(s.fields[2].attributes.at("doc"), "a time");
  const AvroSchema& offsets = s.fields[3].schema.children[1];
  EXPECT_EQ(offsets.type, AvroType::kArray);
  EXPECT_EQ(offsets.IntAttribute("element-id"), 133);
  EXPECT_EQ(offsets.items().type, AvroType::kLong);
  const AvroSchema& sizes = s.fields[4].schema;
  EXPECT_EQ(sizes.logical_type(), "map");
  EXPECT_EQ(sizes.items().name, "k117_v118");
  EXPECT_EQ(sizes.items().fields[1].field_id(), 118);
  EXPECT_EQ(s.fields[5].schema.type, AvroType::kMap);
  EXPECT_EQ(s.fields[5].schema.IntAttribute("key-id"), 5);
  EXPECT_EQ(s.fields[5].schema.IntAttribute("value-id"), 6);
  EXPECT_EQ(s.fields[5].schema.values().type, AvroType::kString);
}

TEST(AvroSchema, WritesBackWhatItRead) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s, ParseAvroSchema(kIcebergLikeSchema));
  const std::string written = s.ToString();
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema again, ParseAvroSchema(written));
  EXPECT_EQ(again.ToString(), written);
  // Same JSON, modulo key order: compare as unordered JSON.
  EXPECT_EQ(nlohmann::json::parse(written), nlohmann::json::parse(kIcebergLikeSchema));
}

TEST(AvroSchema, PrimitivesWithoutAttributesAreWrittenAsNames) {
  EXPECT_EQ(AvroSchema::Primitive(AvroType::kInt).ToString(), "\"int\"");
  EXPECT_EQ(AvroSchema::Primitive(AvroType::kInt).With("logicalType", "date").ToString(),
            R"({"type":"int","logicalType":"date"})");
  EXPECT_EQ(AvroSchema::Optional(AvroSchema::Primitive(AvroType::kString)).ToString(),
            R"(["null","string"])");
}

TEST(AvroSchema, NamedTypesAreReferencedByName) {
  constexpr char kJson[] = R"({"type":"record","name":"outer","namespace":"ns","fields":[
      {"name":"a","type":{"type":"fixed","name":"md5","size":16}},
      {"name":"b","type":"md5"},
      {"name":"c","type":"ns.md5"},
      {"name":"d","type":{"type":"enum","name":"color","symbols":["RED","GREEN"]}},
      {"name":"e","type":["null","color"]}]})";
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s, ParseAvroSchema(kJson));
  EXPECT_EQ(s.name, "ns.outer");
  EXPECT_EQ(s.fields[0].schema.name, "ns.md5");
  EXPECT_EQ(s.fields[1].schema.type, AvroType::kFixed);
  EXPECT_EQ(s.fields[1].schema.fixed_size, 16);
  EXPECT_EQ(s.fields[2].schema.fixed_size, 16);
  EXPECT_EQ(s.fields[4].schema.children[1].symbols,
            (std::vector<std::string>{"RED", "GREEN"}));
  // The definition is written once, then referenced by its name.
  const auto j = s.ToJson();
  EXPECT_TRUE(j["fields"][0]["type"].is_object());
  EXPECT_EQ(j["fields"][1]["type"], "ns.md5");
  EXPECT_EQ(j["fields"][2]["type"], "ns.md5");
  EXPECT_EQ(j["fields"][4]["type"][1], "ns.color");
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema again, ParseAvroSchema(s.ToString()));
  EXPECT_EQ(again.ToString(), s.ToString());
}

TEST(AvroSchema, RejectsBadSchemas) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {"42", "expected a type name"},
      {R"("nope")", "unknown type \"nope\""},
      {R"({"name":"x"})", "without \"type\""},
      {R"({"type":"record","name":"r"})", "without a \"fields\" array"},
      {R"({"type":"record","name":"r","fields":[{"type":"int"}]})", "no string \"name\""},
      {R"({"type":"record","name":"r","fields":[{"name":"a"}]})", "has no \"type\""},
      {R"({"type":"record","name":"r","fields":[{"name":"a","type":"int"},
          {"name":"a","type":"int"}]})",
       "two fields named \"a\""},
      {R"({"type":"record","name":"r","fields":[{"name":"a","type":"r"}]})",
       "recursive reference"},
      {R"({"type":"record","name":"r","fields":[{"name":"a","type":
          {"type":"record","name":"r","fields":[]}}]})",
       "defined twice"},
      {R"({"type":"array"})", "without \"items\""},
      {R"({"type":"map"})", "without \"values\""},
      {R"({"type":"fixed","name":"f","size":-1})", "non-negative integer \"size\""},
      {R"({"type":"fixed","size":4})", "without \"name\""},
      {R"({"type":"enum","name":"e","symbols":[1]})", "symbols must be strings"},
      {R"(["null",["int"]])", "may not directly contain a union"},
  };
  for (const auto& [json, text] : cases) {
    SCOPED_TRACE(json);
    ExpectError(ParseAvroSchema(json).status(), ErrorKind::kInvalid, text);
  }
}

TEST(AvroSchema, RejectsDeepNestingAndExponentialExpansion) {
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += R"({"type":"array","items":)";
  deep += "\"int\"";
  for (int i = 0; i < 100; ++i) deep += "}";
  ExpectError(ParseAvroSchema(deep).status(), ErrorKind::kInvalid,
              "nests deeper than 64");

  // t0 has 2 fields of t(-1), t1 two fields of t0, ...: 2^40 nodes if expanded.
  std::string json =
      R"({"type":"record","name":"t0","fields":[{"name":"a","type":"int"}]})";
  for (int i = 1; i <= 40; ++i) {
    const std::string prev = "t" + std::to_string(i - 1);
    json = R"({"type":"record","name":"t)" + std::to_string(i) +
           R"(","fields":[{"name":"a","type":)" + json + R"(},{"name":"b","type":")" +
           prev + R"("}]})";
  }
  ExpectError(ParseAvroSchema(json).status(), ErrorKind::kInvalid,
              "more than 100000 nodes");
}

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------

constexpr char kAllTypesSchema[] = R"({"type":"record","name":"all","fields":[
    {"name":"n","type":"null"},
    {"name":"b","type":"boolean"},
    {"name":"i","type":"int"},
    {"name":"l","type":"long"},
    {"name":"f","type":"float"},
    {"name":"d","type":"double"},
    {"name":"by","type":"bytes"},
    {"name":"s","type":"string"},
    {"name":"fx","type":{"type":"fixed","name":"four","size":4}},
    {"name":"e","type":{"type":"enum","name":"suit","symbols":["CLUBS","HEARTS"]}},
    {"name":"arr","type":{"type":"array","items":"long"}},
    {"name":"m","type":{"type":"map","values":"int"}},
    {"name":"u1","type":["null","string"]},
    {"name":"u2","type":["null","string"]},
    {"name":"rec","type":{"type":"record","name":"inner","fields":[
        {"name":"x","type":"int"},{"name":"y","type":["null","inner2"]}]}},
    {"name":"recs","type":{"type":"array","items":"inner"}}
  ]})";

// "inner2" is not defined in kAllTypesSchema; substitute a defined type.
std::string AllTypesSchemaJson() {
  std::string s = kAllTypesSchema;
  s.replace(s.find("inner2"), 6, "four");
  return s;
}

AvroValue AllTypesValue() {
  return AvroValue::Record({
      AvroValue::Null(),
      AvroValue::Boolean(true),
      AvroValue::Int(std::numeric_limits<int32_t>::min()),
      AvroValue::Long(std::numeric_limits<int64_t>::max()),
      AvroValue::Float(3.5f),
      AvroValue::Double(-0.0),
      AvroValue::String(std::string("\0\xff\x01", 3)),
      AvroValue::String("héllo"),
      AvroValue::String("abcd"),
      AvroValue::String("HEARTS"),
      AvroValue::Array(
          {AvroValue::Long(1), AvroValue::Long(-2), AvroValue::Long(1 << 30)}),
      AvroValue::Map({{"one", AvroValue::Int(1)}, {"two", AvroValue::Int(2)}}),
      AvroValue::Null(),
      AvroValue::String("present"),
      AvroValue::Record({AvroValue::Int(7), AvroValue::String("wxyz")}),
      AvroValue::Array(
          {AvroValue::Record({AvroValue::Int(1), AvroValue::Null()}),
           AvroValue::Record({AvroValue::Int(2), AvroValue::String("1234")})}),
  });
}

TEST(AvroValues, EveryTypeRoundTrips) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s, ParseAvroSchema(AllTypesSchemaJson()));
  const AvroValue v = AllTypesValue();
  std::string buf;
  TL_ASSERT_OK(EncodeAvroValue(s, v, &buf));
  AvroDecoder d(buf);
  TL_ASSERT_OK_AND_ASSIGN(AvroValue back, DecodeAvroValue(s, &d));
  EXPECT_TRUE(d.at_end());
  EXPECT_EQ(back, v);
  EXPECT_TRUE(std::signbit(*back.get_if<AvroRecord>()->fields[5].get_if<double>()));
}

TEST(AvroValues, KnownEncodingOfASmallRecord) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s,
                          ParseAvroSchema(R"({"type":"record","name":"r","fields":[
          {"name":"a","type":"long"},{"name":"b","type":["null","string"]},
          {"name":"c","type":{"type":"array","items":"int"}}]})"));
  std::string buf;
  TL_ASSERT_OK(EncodeAvroValue(
      s,
      AvroValue::Record({AvroValue::Long(27), AvroValue::String("foo"),
                         AvroValue::Array({AvroValue::Int(1), AvroValue::Int(-1)})}),
      &buf));
  // long 27 = 0x36; union branch 1 = 0x02, length 3 = 0x06, "foo"; array block of
  // 2 = 0x04, items 0x02 0x01, end 0x00.
  EXPECT_EQ(buf, Bytes({0x36, 0x02, 0x06, 'f', 'o', 'o', 0x04, 0x02, 0x01, 0x00}));
}

TEST(AvroValues, DecodesNegativeBlockCountsWithByteSizes) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s,
                          ParseAvroSchema(R"({"type":"record","name":"r","fields":[
          {"name":"a","type":{"type":"array","items":"int"}},
          {"name":"m","type":{"type":"map","values":"long"}}]})"));
  std::string buf;
  // Array: block of -2 items, 2 bytes; then a block of 1 item; then end.
  AppendAvroLong(-2, &buf);
  AppendAvroLong(2, &buf);
  AppendAvroInt(5, &buf);
  AppendAvroInt(-5, &buf);
  AppendAvroLong(1, &buf);
  AppendAvroInt(9, &buf);
  AppendAvroLong(0, &buf);
  // Map: block of -1 entry, 3 bytes ("k" + long 3).
  AppendAvroLong(-1, &buf);
  AppendAvroLong(3, &buf);
  AppendAvroBytes("k", &buf);
  AppendAvroLong(3, &buf);
  AppendAvroLong(0, &buf);
  AvroDecoder d(buf);
  TL_ASSERT_OK_AND_ASSIGN(AvroValue v, DecodeAvroValue(s, &d));
  EXPECT_TRUE(d.at_end());
  EXPECT_EQ(v, AvroValue::Record({AvroValue::Array({AvroValue::Int(5), AvroValue::Int(-5),
                                                    AvroValue::Int(9)}),
                                  AvroValue::Map({{"k", AvroValue::Long(3)}})}));
}

TEST(AvroValues, RejectsABlockWhoseItemsDoNotFillItsDeclaredSize) {
  auto s = AvroSchema::Array(AvroSchema::Primitive(AvroType::kInt));
  std::string buf;
  AppendAvroLong(-1, &buf);
  AppendAvroLong(2, &buf);  // declares 2 bytes, but int 5 takes 1
  AppendAvroInt(5, &buf);
  AppendAvroInt(0, &buf);
  AppendAvroLong(0, &buf);
  AvroDecoder d(buf);
  ExpectError(DecodeAvroValue(s, &d).status(), ErrorKind::kCorrupt,
              "declared 2 bytes but its items used 1");
}

TEST(AvroValues, HugeCountsFailFastInsteadOfAllocating) {
  {
    auto s = AvroSchema::Array(AvroSchema::Primitive(AvroType::kLong));
    const std::string input = EncodeLong(int64_t{1} << 60) + "xyz";
    AvroDecoder d(input);
    ExpectError(DecodeAvroValue(s, &d).status(), ErrorKind::kCorrupt,
                "array block count");
  }
  {
    // Nulls occupy no bytes: only the value budget stops a billion of them.
    auto s = AvroSchema::Array(AvroSchema::Primitive(AvroType::kNull));
    const std::string input = EncodeLong(1000000000) + EncodeLong(0);
    AvroDecoder d(input);
    ExpectError(DecodeAvroValue(s, &d).status(), ErrorKind::kCorrupt, "exceeds what");
  }
  {
    // Nested arrays of nulls: each inner block passes the count check but the
    // budget runs out.
    auto s = AvroSchema::Array(AvroSchema::Array(AvroSchema::Primitive(AvroType::kNull)));
    std::string buf;
    AppendAvroLong(1000, &buf);
    for (int i = 0; i < 1000; ++i) {
      AppendAvroLong(1000, &buf);
      AppendAvroLong(0, &buf);
    }
    AppendAvroLong(0, &buf);
    AvroDecoder d(buf);
    ExpectError(DecodeAvroValue(s, &d).status(), ErrorKind::kCorrupt, "");
  }
  {
    auto s = AvroSchema::Map(AvroSchema::Primitive(AvroType::kInt));
    std::string buf;
    AppendAvroLong(std::numeric_limits<int64_t>::min(), &buf);
    AvroDecoder d(buf);
    ExpectError(DecodeAvroValue(s, &d).status(), ErrorKind::kCorrupt,
                "map block count out of range");
  }
}

TEST(AvroValues, RejectsBadUnionAndEnumIndexes) {
  auto u = AvroSchema::Optional(AvroSchema::Primitive(AvroType::kInt));
  {
    const std::string input = EncodeLong(2);
    AvroDecoder d(input);
    ExpectError(DecodeAvroValue(u, &d).status(), ErrorKind::kCorrupt,
                "union branch 2 out of range for 2 branches at offset 0");
  }
  {
    const std::string input = EncodeLong(-1);
    AvroDecoder d(input);
    ExpectError(DecodeAvroValue(u, &d).status(), ErrorKind::kCorrupt, "union branch -1");
  }
  auto e = AvroSchema::Enum("e", {"A"});
  const std::string input = EncodeLong(1);
  AvroDecoder d(input);
  ExpectError(DecodeAvroValue(e, &d).status(), ErrorKind::kCorrupt, "enum index 1");
}

TEST(AvroValues, UnionPicksTheFirstMatchingBranch) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s,
                          ParseAvroSchema(R"(["null","int","string","double"])"));
  struct Case {
    AvroValue value;
    std::string expected;
  };
  std::string enc_double;
  AppendAvroLong(3, &enc_double);
  AppendAvroDouble(2.5, &enc_double);
  const std::vector<Case> cases = {
      {AvroValue::Null(), Bytes({0x00})},
      {AvroValue::Int(3), Bytes({0x02, 0x06})},
      {AvroValue::String("x"), Bytes({0x04, 0x02, 'x'})},
      {AvroValue::Double(2.5), enc_double},
  };
  for (const auto& c : cases) {
    std::string buf;
    TL_ASSERT_OK(EncodeAvroValue(s, c.value, &buf));
    EXPECT_EQ(buf, c.expected);
    AvroDecoder d(buf);
    TL_ASSERT_OK_AND_ASSIGN(AvroValue back, DecodeAvroValue(s, &d));
    EXPECT_EQ(back, c.value);
  }
  // An int32 value may be written to a long branch (promotion).
  auto promoted = AvroSchema::Optional(AvroSchema::Primitive(AvroType::kLong));
  std::string buf;
  TL_ASSERT_OK(EncodeAvroValue(promoted, AvroValue::Int(-1), &buf));
  EXPECT_EQ(buf, Bytes({0x02, 0x01}));
}

TEST(AvroValues, EncodingAMismatchNamesThePath) {
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema s,
                          ParseAvroSchema(R"({"type":"record","name":"r","fields":[
          {"name":"outer","type":{"type":"record","name":"o","fields":[
              {"name":"xs","type":{"type":"array","items":"int"}}]}}]})"));
  std::string buf;
  auto bad = AvroValue::Record({AvroValue::Record(
      {AvroValue::Array({AvroValue::Int(1), AvroValue::String("two")})})});
  ExpectError(EncodeAvroValue(s, bad, &buf), ErrorKind::kInvalid,
              "outer: xs: [1]: expected int, got string");
  ExpectError(EncodeAvroValue(s, AvroValue::Record({}), &buf), ErrorKind::kInvalid,
              "expected record with 1 fields, got record with 0 fields");
  ExpectError(EncodeAvroValue(AvroSchema::Fixed("f", 4), AvroValue::String("abc"), &buf),
              ErrorKind::kInvalid, "expected fixed(4), got string of 3 bytes");
  ExpectError(EncodeAvroValue(AvroSchema::Enum("e", {"A"}), AvroValue::String("B"), &buf),
              ErrorKind::kInvalid, "expected enum");
  ExpectError(EncodeAvroValue(AvroSchema::Optional(AvroSchema::Primitive(AvroType::kInt)),
                              AvroValue::String("x"), &buf),
              ErrorKind::kInvalid, "no branch of union");
}

// ---------------------------------------------------------------------------
// Container files
// ---------------------------------------------------------------------------

AvroSchema SmallSchema() {
  return AvroSchema::Record(
      "row", {AvroField::Make("id", AvroSchema::Primitive(AvroType::kLong), 1),
              AvroField::Make("name", AvroSchema::Primitive(AvroType::kString), 2,
                              /*optional=*/true)});
}

std::vector<AvroValue> SmallRecords(int n) {
  std::vector<AvroValue> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(
        AvroValue::Record({AvroValue::Long(i * 1000003LL),
                           i % 3 == 0 ? AvroValue::Null()
                                      : AvroValue::String("name-" + std::to_string(i))}));
  }
  return out;
}

class AvroFileCodecTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AvroFileCodecTest, RoundTripsRecordsAndMetadata) {
  AvroWriteOptions options;
  options.codec = GetParam();
  options.block_target_bytes = 100;  // several blocks
  options.sync_marker = kSync;
  const auto records = SmallRecords(50);
  TL_ASSERT_OK_AND_ASSIGN(
      std::string bytes,
      WriteAvroFile(SmallSchema(),
                    {{"schema-id", "3"}, {"snapshot-id", "-7"}, {"empty", ""}}, records,
                    options));
  EXPECT_EQ(bytes.substr(0, 4), std::string("Obj\x01", 4));
  // The sync marker ends the header and every block: at least 3 blocks here.
  size_t markers = 0;
  for (size_t pos = 0; (pos = bytes.find(SyncString(), pos)) != std::string::npos;
       ++pos) {
    ++markers;
  }
  EXPECT_GE(markers, 4u);
  EXPECT_EQ(bytes.substr(bytes.size() - 16), SyncString());

  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_EQ(file.codec, GetParam());
  EXPECT_EQ(file.metadata.at("avro.codec"), GetParam());
  EXPECT_EQ(file.metadata.at("schema-id"), "3");
  EXPECT_EQ(file.metadata.at("snapshot-id"), "-7");
  EXPECT_EQ(file.metadata.at("empty"), "");
  EXPECT_EQ(file.schema.ToString(), SmallSchema().ToString());
  EXPECT_EQ(file.records, records);
}

TEST_P(AvroFileCodecTest, WritesAnEmptyFile) {
  AvroWriteOptions options;
  options.codec = GetParam();
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes,
                          WriteAvroFile(SmallSchema(), {}, {}, options));
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_TRUE(file.records.empty());
  EXPECT_EQ(file.schema.fields.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Codecs, AvroFileCodecTest, ::testing::Values("null", "deflate"));

TEST(AvroFile, DeflateCompresses) {
  std::vector<AvroValue> records;
  for (int i = 0; i < 200; ++i) {
    records.push_back(AvroValue::Record(
        {AvroValue::Long(1), AvroValue::String(std::string(100, 'z'))}));
  }
  AvroWriteOptions deflate;
  deflate.codec = "deflate";
  TL_ASSERT_OK_AND_ASSIGN(std::string small,
                          WriteAvroFile(SmallSchema(), {}, records, deflate));
  TL_ASSERT_OK_AND_ASSIGN(std::string big, WriteAvroFile(SmallSchema(), {}, records));
  EXPECT_LT(small.size() * 10, big.size());
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(small));
  EXPECT_EQ(file.records, records);
}

TEST(AvroFile, RandomSyncMarkersDiffer) {
  TL_ASSERT_OK_AND_ASSIGN(std::string a,
                          WriteAvroFile(SmallSchema(), {}, SmallRecords(1)));
  TL_ASSERT_OK_AND_ASSIGN(std::string b,
                          WriteAvroFile(SmallSchema(), {}, SmallRecords(1)));
  EXPECT_NE(a.substr(a.size() - 16), b.substr(b.size() - 16));
}

TEST(AvroFile, WriterRejectsBadInput) {
  AvroWriteOptions snappy;
  snappy.codec = "snappy";
  ExpectError(WriteAvroFile(SmallSchema(), {}, {}, snappy).status(), ErrorKind::kInvalid,
              "unsupported codec \"snappy\"");
  ExpectError(WriteAvroFile(SmallSchema(), {{"avro.codec", "x"}}, {}).status(),
              ErrorKind::kInvalid, "reserved");
  ExpectError(WriteAvroFile(SmallSchema(), {{"k", "1"}, {"k", "2"}}, {}).status(),
              ErrorKind::kInvalid, "duplicate metadata key");
  ExpectError(
      WriteAvroFile(SmallSchema(), {}, {AvroValue::Record({AvroValue::Int(1)})}).status(),
      ErrorKind::kInvalid, "record 0");

  AvroFileWriter writer(SmallSchema(), {});
  TL_ASSERT_OK(writer.Append(SmallRecords(1)[0]));
  TL_ASSERT_OK(writer.Finish().status());
  ExpectError(writer.Finish().status(), ErrorKind::kInvalid, "twice");
  ExpectError(writer.Append(SmallRecords(1)[0]), ErrorKind::kInvalid, "after Finish");
}

std::string ValidFile(const std::string& codec = "null", int records = 5,
                      int64_t block_target = 1 << 20) {
  AvroWriteOptions options;
  options.codec = codec;
  options.sync_marker = kSync;
  options.block_target_bytes = block_target;
  return WriteAvroFile(SmallSchema(), {{"k", "v"}}, SmallRecords(records), options)
      .ValueOrDie();
}

TEST(AvroFileCorrupt, BadMagic) {
  ExpectError(ReadAvroFile("").status(), ErrorKind::kCorrupt, "bad magic");
  ExpectError(ReadAvroFile("Obj").status(), ErrorKind::kCorrupt, "bad magic");
  std::string bytes = ValidFile();
  bytes[3] = '\x02';
  ExpectError(ReadAvroFile(bytes).status(), ErrorKind::kCorrupt, "bad magic");
}

// Every proper prefix of a file fails to read, except prefixes that end exactly
// after a block's sync marker, which are valid files with the earlier blocks.
void CheckEveryTruncation(const std::string& bytes) {
  TL_ASSERT_OK_AND_ASSIGN(AvroFile full, ReadAvroFile(bytes));
  std::vector<size_t> boundaries;
  for (size_t pos = 0; (pos = bytes.find(SyncString(), pos)) != std::string::npos;
       ++pos) {
    boundaries.push_back(pos + 16);
  }
  ASSERT_GE(boundaries.size(), 2u);
  size_t accepted = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto result = ReadAvroFile(std::string_view(bytes).substr(0, len));
    const bool boundary =
        std::find(boundaries.begin(), boundaries.end(), len) != boundaries.end();
    if (boundary) {
      ASSERT_TRUE(result.ok()) << "prefix " << len << ": " << result.status().ToString();
      ASSERT_LT(result->records.size(), full.records.size());
      ASSERT_TRUE(std::equal(result->records.begin(), result->records.end(),
                             full.records.begin()));
      ++accepted;
    } else {
      ASSERT_FALSE(result.ok()) << "prefix of " << len << " bytes was accepted";
      ASSERT_EQ(KindOf(result.status()), ErrorKind::kCorrupt)
          << len << ": " << result.status().ToString();
    }
  }
  EXPECT_EQ(accepted, boundaries.size() - 1);  // the last boundary is the full file
}

TEST(AvroFileCorrupt, TruncatedAtEveryOffset) {
  CheckEveryTruncation(ValidFile("null", 6, 40));
  CheckEveryTruncation(ValidFile("deflate", 6, 40));
}

TEST(AvroFileCorrupt, TruncationMessagesNameTheProblem) {
  const std::string bytes = ValidFile();
  const size_t header_end = bytes.find(SyncString()) + 16;
  ExpectError(ReadAvroFile(bytes.substr(0, header_end - 1)).status(), ErrorKind::kCorrupt,
              "truncated before the sync marker");
  ExpectError(ReadAvroFile(bytes.substr(0, bytes.size() - 1)).status(),
              ErrorKind::kCorrupt, "truncated before its sync marker");
  ExpectError(ReadAvroFile(bytes.substr(0, header_end + 4)).status(), ErrorKind::kCorrupt,
              "block 0 at offset " + std::to_string(header_end));
}

TEST(AvroFileCorrupt, SyncMismatch) {
  std::string bytes = ValidFile();
  bytes[bytes.size() - 3] ^= 0x55;
  ExpectError(ReadAvroFile(bytes).status(), ErrorKind::kCorrupt,
              "sync marker does not match");
}

TEST(AvroFileCorrupt, UnknownCodecs) {
  const std::string schema = SmallSchema().ToString();
  ExpectError(
      ReadAvroFile(BuildFile({{"avro.schema", schema}, {"avro.codec", "lzma4"}}, {}))
          .status(),
      ErrorKind::kCorrupt, "unknown codec \"lzma4\"");
  ExpectError(
      ReadAvroFile(BuildFile({{"avro.schema", schema}, {"avro.codec", "snappy"}}, {}))
          .status(),
      ErrorKind::kUnsupported, "codec \"snappy\" is not supported");
}

TEST(AvroFileCorrupt, HeaderProblems) {
  const std::string schema = SmallSchema().ToString();
  ExpectError(ReadAvroFile(BuildFile({{"k", "v"}}, {})).status(), ErrorKind::kCorrupt,
              "no avro.schema");
  ExpectError(ReadAvroFile(BuildFile({{"avro.schema", "{nope"}}, {})).status(),
              ErrorKind::kCorrupt, "bad avro.schema");
  ExpectError(
      ReadAvroFile(BuildFile({{"avro.schema", schema}, {"avro.schema", schema}}, {}))
          .status(),
      ErrorKind::kCorrupt, "duplicate metadata key \"avro.schema\"");
  // A metadata map whose value length runs past the end of the file.
  std::string bytes(kAvroMagic);
  AppendAvroLong(1, &bytes);
  AppendAvroBytes("avro.schema", &bytes);
  AppendAvroLong(1 << 30, &bytes);
  ExpectError(ReadAvroFile(bytes).status(), ErrorKind::kCorrupt,
              "byte length 1073741824 at offset");
}

std::string EncodedRecords(const std::vector<AvroValue>& records) {
  std::string out;
  for (const auto& r : records) EXPECT_TRUE(EncodeAvroValue(SmallSchema(), r, &out).ok());
  return out;
}

TEST(AvroFileCorrupt, BlockProblems) {
  const std::vector<std::pair<std::string, std::string>> header = {
      {"avro.schema", SmallSchema().ToString()}};
  const std::string two = EncodedRecords(SmallRecords(2));
  // Sanity: the hand-built file is valid.
  TL_ASSERT_OK_AND_ASSIGN(AvroFile ok, ReadAvroFile(BuildFile(header, {{2, two}})));
  EXPECT_EQ(ok.records, SmallRecords(2));

  ExpectError(ReadAvroFile(BuildFile(header, {{1, two}})).status(), ErrorKind::kCorrupt,
              "bytes left over after its 1 records");
  ExpectError(ReadAvroFile(BuildFile(header, {{3, two}})).status(), ErrorKind::kCorrupt,
              "record 2");
  ExpectError(ReadAvroFile(BuildFile(header, {{-1, two}})).status(), ErrorKind::kCorrupt,
              "negative record count");
  ExpectError(ReadAvroFile(BuildFile(header, {{int64_t{1} << 50, two}})).status(),
              ErrorKind::kCorrupt, "records cannot fit");

  // A block size larger than the rest of the file.
  std::string bytes = BuildFile(header, {});
  AppendAvroLong(2, &bytes);
  AppendAvroLong(int64_t{1} << 40, &bytes);
  bytes += two;
  ExpectError(ReadAvroFile(bytes).status(), ErrorKind::kCorrupt,
              "size 1099511627776 exceeds the");
}

TEST(AvroFileCorrupt, DeflateProblems) {
  const std::vector<std::pair<std::string, std::string>> header = {
      {"avro.schema", SmallSchema().ToString()}, {"avro.codec", "deflate"}};
  ExpectError(ReadAvroFile(BuildFile(header, {{1, "\xff\xff garbage"}})).status(),
              ErrorKind::kCorrupt, "does not inflate");
  // A valid deflate stream cut short.
  const std::string good = ValidFile("deflate", 20);
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(good));
  const size_t header_end = good.find(SyncString()) + 16;
  AvroDecoder d(std::string_view(good).substr(header_end));
  const int64_t count = d.ReadLong().ValueOrDie();
  const int64_t size = d.ReadLong().ValueOrDie();
  const std::string compressed(d.ReadFixed(size).ValueOrDie());
  ExpectError(
      ReadAvroFile(
          BuildFile(header, {{count, compressed.substr(0, compressed.size() / 2)}}))
          .status(),
      ErrorKind::kCorrupt, "truncated");
}

TEST(AvroFileCorrupt, DecompressionIsCapped) {
  // 100 records of 100 KB each compress to a few hundred bytes.
  std::vector<AvroValue> records;
  for (int i = 0; i < 100; ++i) {
    records.push_back(AvroValue::Record(
        {AvroValue::Long(i), AvroValue::String(std::string(100000, 'a'))}));
  }
  AvroWriteOptions options;
  options.codec = "deflate";
  options.block_target_bytes = int64_t{1} << 30;
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes,
                          WriteAvroFile(SmallSchema(), {}, records, options));
  EXPECT_LT(bytes.size(), 50000u);
  AvroReadOptions limits;
  limits.max_block_bytes = 1 << 20;
  ExpectError(ReadAvroFile(bytes, limits).status(), ErrorKind::kCorrupt,
              "inflates to more than 1048576 bytes");
  AvroReadOptions total;
  total.max_total_bytes = 1 << 20;
  ExpectError(ReadAvroFile(bytes, total).status(), ErrorKind::kCorrupt, "total limit");
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_EQ(file.records.size(), 100u);
}

// Flips random bytes of valid files: every outcome must be a clean result or a
// corrupt/unsupported error (sanitizer builds also catch memory errors).
TEST(AvroFileCorrupt, RandomMutationsNeverCrash) {
  const std::vector<std::string> seeds = {ValidFile("null", 8, 60),
                                          ValidFile("deflate", 8, 60)};
  std::mt19937 rng(12345);
  int errors = 0;
  for (const auto& seed : seeds) {
    for (int iter = 0; iter < 3000; ++iter) {
      std::string bytes = seed;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < flips; ++i) {
        bytes[rng() % bytes.size()] = static_cast<char>(rng());
      }
      auto result = ReadAvroFile(bytes);
      if (!result.ok()) {
        ++errors;
        const ErrorKind kind = KindOf(result.status());
        ASSERT_TRUE(kind == ErrorKind::kCorrupt || kind == ErrorKind::kUnsupported)
            << result.status().ToString();
      }
    }
  }
  EXPECT_GT(errors, 3000);  // most mutations must be detected
}

// ---------------------------------------------------------------------------
// Files written by other Avro implementations
// ---------------------------------------------------------------------------

#ifdef TIMELAKE_TEST_FIXTURES_DIR
std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(TIMELAKE_TEST_FIXTURES_DIR) + "/" + name,
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(AvroInterop, ReadsFilesWrittenByPyIceberg) {
  // PyIceberg writes Avro with its own encoder and the deflate codec.
  const std::string bytes = ReadFixture("pyiceberg/v2-manifest.avro");
  ASSERT_FALSE(bytes.empty());
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_EQ(file.codec, "deflate");
  EXPECT_EQ(file.records.size(), 2u);
  EXPECT_EQ(file.schema.name, "manifest_entry");
  EXPECT_EQ(file.metadata.at("format-version"), "2");
  // The schema survives a write/parse cycle with every field id intact.
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema again, ParseAvroSchema(file.schema.ToString()));
  EXPECT_EQ(nlohmann::json::parse(again.ToString()),
            nlohmann::json::parse(file.metadata.at("avro.schema")));
  // Re-encoding the decoded records with our writer yields the same records.
  AvroWriteOptions options;
  options.codec = "deflate";
  TL_ASSERT_OK_AND_ASSIGN(std::string rewritten,
                          WriteAvroFile(file.schema, {}, file.records, options));
  TL_ASSERT_OK_AND_ASSIGN(AvroFile back, ReadAvroFile(rewritten));
  EXPECT_EQ(back.records, file.records);
}
#endif

}  // namespace
}  // namespace timelake::format
