// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/manifest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "timelake/format/bounds.h"

#include "timelake/testing/matchers.h"

namespace timelake::format {
namespace {

using timelake::testing::ExpectError;

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(
        static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

constexpr char kSchemaJson[] =
    R"({"type":"struct","schema-id":3,"fields":[)"
    R"({"id":1,"name":"ts","required":true,"type":"timestamptz"},)"
    R"({"id":2,"name":"sensor","required":false,"type":"string"},)"
    R"({"id":3,"name":"value","required":false,"type":"double"}]})";

// A Timelake-like spec: hour(ts) as an int, identity(sensor).
ManifestWriteOptions TimelakeOptions() {
  ManifestWriteOptions o;
  o.table_schema_json = kSchemaJson;
  o.schema_id = 3;
  o.partition_spec_json =
      R"([{"source-id":1,"field-id":1000,"transform":"hour","name":"ts_hour"},)"
      R"({"source-id":2,"field-id":1001,"transform":"identity","name":"sensor"}])";
  o.partition_spec_id = 5;
  o.partition_type = {{1000, "ts_hour", PartitionValueType::kInt, true},
                      {1001, "sensor", PartitionValueType::kString, false}};
  return o;
}

ManifestEntry MakeEntry(int i) {
  ManifestEntry e;
  e.status = kEntryAdded;
  e.snapshot_id = 1000 + i;
  DataFile& f = e.data_file;
  f.file_path = "s3://bucket/wh/iot/readings/data/f" + std::to_string(i) + ".parquet";
  f.partition = {PartitionValue(int32_t{473352 + i}),
                 i % 2 ? std::nullopt
                       : std::optional<PartitionValue>("sensor-" + std::to_string(i))};
  f.record_count = 100 + i;
  f.file_size_in_bytes = 4096 + i;
  f.column_sizes = {{1, 800}, {2, 300}, {3, 801}};
  f.value_counts = {{1, 100 + i}, {2, 100 + i}, {3, 100 + i}};
  f.null_value_counts = {{1, 0}, {2, i}, {3, 1}};
  f.nan_value_counts = {{3, 2}};
  f.lower_bounds = {
      {1, EncodeInt64(1704067200000000 + i)}, {2, "a"}, {3, EncodeDouble(-1)}};
  f.upper_bounds = {
      {1, EncodeInt64(1704070799999999 + i)}, {2, "z"}, {3, EncodeDouble(1e9)}};
  f.split_offsets = {4, 1 << 20};
  f.sort_order_id = 1;
  return e;
}

TEST(Manifest, RoundTripsEveryField) {
  std::vector<ManifestEntry> entries = {MakeEntry(0), MakeEntry(1), MakeEntry(2)};
  // Exercise the rarely set fields too.
  entries[1].status = kEntryExisting;
  entries[1].sequence_number = 7;
  entries[1].file_sequence_number = 8;
  entries[2].status = kEntryDeleted;
  entries[2].snapshot_id.reset();
  entries[2].data_file.key_metadata = std::string("\0key", 4);
  entries[2].data_file.equality_ids = {1, 2};
  entries[2].data_file.content = kContentEqualityDeletes;
  entries[2].data_file.referenced_data_file = "s3://bucket/x.parquet";
  entries[2].data_file.sort_order_id.reset();
  entries[2].data_file.file_format = "AVRO";

  for (const std::string codec : {"deflate", "null"}) {
    SCOPED_TRACE(codec);
    ManifestWriteOptions options = TimelakeOptions();
    options.codec = codec;
    TL_ASSERT_OK_AND_ASSIGN(std::string bytes, WriteManifest(options, entries));
    TL_ASSERT_OK_AND_ASSIGN(ManifestContents m, ReadManifest(bytes));
    EXPECT_EQ(m.entries, entries);
    EXPECT_EQ(m.partition_type, options.partition_type);
    EXPECT_EQ(m.format_version, 2);
    EXPECT_EQ(m.content, "data");
    EXPECT_EQ(m.schema_id, 3);
    EXPECT_EQ(m.partition_spec_id, 5);
    EXPECT_EQ(m.table_schema_json, kSchemaJson);
    EXPECT_EQ(m.partition_spec_json, options.partition_spec_json);
    EXPECT_EQ(m.metadata.at("avro.codec"), codec);
  }
}

TEST(Manifest, HeaderKeysAndSchemaMatchJavaIceberg) {
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes,
                          WriteManifest(TimelakeOptions(), {MakeEntry(0)}));
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_EQ(file.metadata.at("schema"), kSchemaJson);
  EXPECT_EQ(file.metadata.at("schema-id"), "3");
  EXPECT_EQ(file.metadata.at("partition-spec-id"), "5");
  EXPECT_EQ(file.metadata.at("format-version"), "2");
  EXPECT_EQ(file.metadata.at("content"), "data");
  EXPECT_EQ(file.codec, "deflate");

  // Spot-check the Avro schema against the spec's field ids.
  const AvroSchema& s = file.schema;
  EXPECT_EQ(s.name, "manifest_entry");
  std::vector<std::pair<std::string, int>> top;
  for (const auto& f : s.fields) top.emplace_back(f.name, f.field_id().value_or(-1));
  EXPECT_EQ(top, (std::vector<std::pair<std::string, int>>{{"status", 0},
                                                           {"snapshot_id", 1},
                                                           {"sequence_number", 3},
                                                           {"file_sequence_number", 4},
                                                           {"data_file", 2}}));
  const AvroSchema& df = s.fields[4].schema;
  EXPECT_EQ(df.name, "r2");
  std::vector<int> ids;
  for (const auto& f : df.fields) ids.push_back(f.field_id().value_or(-1));
  EXPECT_EQ(ids, (std::vector<int>{134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125,
                                   128, 131, 132, 135, 140, 143}));
  const AvroSchema& partition = df.fields[3].schema;
  EXPECT_EQ(partition.name, "r102");
  EXPECT_EQ(partition.fields[0].field_id(), 1000);
  EXPECT_EQ(partition.fields[0].schema.type, AvroType::kInt);  // required
  EXPECT_EQ(partition.fields[1].schema.OptionalBranch(), 1u);  // optional
  const AvroSchema& lower = df.fields[10].schema.children[1];
  EXPECT_EQ(lower.logical_type(), "map");
  EXPECT_EQ(lower.items().name, "k126_v127");
  EXPECT_EQ(lower.items().fields[0].field_id(), 126);
  EXPECT_EQ(lower.items().fields[1].field_id(), 127);
  EXPECT_EQ(lower.items().fields[1].schema.type, AvroType::kBytes);
  EXPECT_EQ(df.fields[13].schema.children[1].IntAttribute("element-id"), 133);
  EXPECT_EQ(df.fields[14].schema.children[1].IntAttribute("element-id"), 136);
}

TEST(Manifest, PartitionTypesRoundTrip) {
  ManifestWriteOptions o;
  const std::vector<std::pair<PartitionValueType, PartitionValue>> cases = {
      {PartitionValueType::kBoolean, PartitionValue(true)},
      {PartitionValueType::kInt, PartitionValue(int32_t{-5})},
      {PartitionValueType::kLong, PartitionValue(std::numeric_limits<int64_t>::min())},
      {PartitionValueType::kFloat, PartitionValue(1.5f)},
      {PartitionValueType::kDouble, PartitionValue(-2.25)},
      {PartitionValueType::kDate, PartitionValue(int32_t{19723})},
      {PartitionValueType::kTime, PartitionValue(int64_t{3600000000})},
      {PartitionValueType::kTimestamp, PartitionValue(int64_t{1704067200000000})},
      {PartitionValueType::kTimestampTz, PartitionValue(int64_t{-1})},
      {PartitionValueType::kString, PartitionValue(std::string("ü"))},
      {PartitionValueType::kBinary, PartitionValue(std::string("\0\1", 2))},
  };
  nlohmann::json spec = nlohmann::json::array();
  ManifestEntry with_values, with_nulls;
  for (size_t i = 0; i < cases.size(); ++i) {
    const int32_t id = 1000 + static_cast<int32_t>(i);
    const std::string name = "p" + std::to_string(i);
    o.partition_type.push_back({id, name, cases[i].first, false});
    spec.push_back(
        {{"source-id", 1}, {"field-id", id}, {"transform", "identity"}, {"name", name}});
    with_values.data_file.partition.push_back(cases[i].second);
    with_nulls.data_file.partition.push_back(std::nullopt);
  }
  o.partition_spec_json = spec.dump();
  with_values.data_file.file_path = "a";
  with_nulls.data_file.file_path = "b";
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes, WriteManifest(o, {with_values, with_nulls}));
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m, ReadManifest(bytes));
  EXPECT_EQ(m.partition_type, o.partition_type);
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0], with_values);
  EXPECT_EQ(m.entries[1], with_nulls);
}

TEST(Manifest, WriteRejectsBadArguments) {
  const auto entry = MakeEntry(0);
  {
    auto o = TimelakeOptions();
    o.format_version = 1;
    ExpectError(WriteManifest(o, {entry}).status(), ErrorKind::kUnsupported,
                "format version 1");
  }
  {
    auto o = TimelakeOptions();
    o.codec = "zstandard";
    ExpectError(WriteManifest(o, {entry}).status(), ErrorKind::kUnsupported, "zstandard");
  }
  {
    auto o = TimelakeOptions();
    o.content = "stuff";
    ExpectError(WriteManifest(o, {entry}).status(), ErrorKind::kInvalid,
                "not data or deletes");
  }
  {
    auto o = TimelakeOptions();
    o.partition_spec_json = "{}";
    ExpectError(WriteManifest(o, {entry}).status(), ErrorKind::kInvalid,
                "not a JSON array");
    o.partition_spec_json =
        R"([{"field-id":1000,"name":"ts_hour"},{"field-id":1002,"name":"sensor"}])";
    ExpectError(WriteManifest(o, {entry}).status(), ErrorKind::kInvalid,
                "field 1 does not match partition field \"sensor\" (id 1001)");
  }
  auto o = TimelakeOptions();
  auto bad = entry;
  bad.status = 3;
  ExpectError(
      WriteManifest(o, {entry, bad}).status(), ErrorKind::kInvalid,
      "writing manifest entry 1 (s3://bucket/wh/iot/readings/data/f0.parquet): status 3");
  bad = entry;
  bad.data_file.content = -1;
  ExpectError(WriteManifest(o, {bad}).status(), ErrorKind::kInvalid, "content -1");
  bad = entry;
  bad.data_file.partition.pop_back();
  ExpectError(WriteManifest(o, {bad}).status(), ErrorKind::kInvalid,
              "partition tuple has 1 values but the partition type has 2 fields");
  bad = entry;
  bad.data_file.partition[0] = int64_t{1};
  ExpectError(WriteManifest(o, {bad}).status(), ErrorKind::kInvalid,
              "\"ts_hour\" of type int holds a value of the wrong C++ type");
  bad = entry;
  bad.data_file.partition[0].reset();
  ExpectError(WriteManifest(o, {bad}).status(), ErrorKind::kInvalid,
              "\"ts_hour\" is required but null");
}

TEST(Manifest, EmptyManifestRoundTrips) {
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes, WriteManifest(TimelakeOptions(), {}));
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m, ReadManifest(bytes));
  EXPECT_TRUE(m.entries.empty());
  EXPECT_EQ(m.partition_type.size(), 2u);
}

// A manifest laid out the way another engine might: fields reordered, unknown
// fields, v1 names, [T, null] unions, a string-keyed Avro map, ints where
// longs are expected, and a partition field without a null branch.
TEST(Manifest, ReadsForeignLayoutsByFieldId) {
  constexpr char kSchema[] = R"({"type":"record","name":"entry","fields":[
    {"name":"data_file","field-id":2,"type":{"type":"record","name":"df","fields":[
      {"name":"partition","field-id":102,"type":{"type":"record","name":"p","fields":[
        {"name":"day","field-id":1000,"type":{"type":"int","logicalType":"date"}},
        {"name":"ts","field-id":1001,"type":[
          {"type":"long","logicalType":"timestamp-micros","adjust-to-utc":true},"null"]},
        {"name":"dec","field-id":1002,"type":["null",
          {"type":"fixed","name":"d9","size":4,"logicalType":"decimal",
           "precision":9}]}]}},
      {"name":"unknown_thing","field-id":9999,"type":{"type":"map","values":"string"}},
      {"name":"record_count","field-id":103,"type":"int"},
      {"name":"file_path","field-id":100,"type":"string"},
      {"name":"file_format","field-id":101,"type":"string"},
      {"name":"file_size_in_bytes","field-id":104,"type":"long"},
      {"name":"block_size_in_bytes","field-id":105,"type":"long"},
      {"name":"value_counts","field-id":109,
       "type":[{"type":"map","values":"long"},"null"]},
      {"name":"lower_bounds","field-id":125,"type":["null",
        {"type":"array","logicalType":"map","items":
          {"type":"record","name":"k126_v127","fields":[
          {"name":"value","type":"bytes","field-id":127},
          {"name":"key","type":"int","field-id":126}]}}]},
      {"name":"split_offsets","field-id":132,"type":{"type":"array","items":"int"}}]}},
    {"name":"snapshot_id","field-id":1,"type":"long"},
    {"name":"status","field-id":0,"type":"int"}]})";
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema schema, ParseAvroSchema(kSchema));
  auto record = AvroValue::Record(
      {AvroValue::Record({
           AvroValue::Record({AvroValue::Int(19723), AvroValue::Long(-5),
                              AvroValue::String(std::string("\0\0\1\0", 4))}),
           AvroValue::Map({{"x", AvroValue::String("y")}}),
           AvroValue::Int(42),
           AvroValue::String("gs://b/f.parquet"),
           AvroValue::String("parquet"),
           AvroValue::Long(1234),
           AvroValue::Long(67108864),
           AvroValue::Map({{"1", AvroValue::Long(42)}, {"17", AvroValue::Long(40)}}),
           AvroValue::Array(
               {AvroValue::Record({AvroValue::String("lo"), AvroValue::Int(17)})}),
           AvroValue::Array({AvroValue::Int(4), AvroValue::Int(100)}),
       }),
       AvroValue::Long(77), AvroValue::Int(0)});
  AvroWriteOptions options;
  options.codec = "deflate";
  TL_ASSERT_OK_AND_ASSIGN(
      std::string bytes,
      WriteAvroFile(schema, {{"format-version", "1"}}, {record}, options));
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m, ReadManifest(bytes));
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.content, "data");
  EXPECT_FALSE(m.schema_id.has_value());
  const std::vector<PartitionFieldType> expected_type = {
      {1000, "day", PartitionValueType::kDate, true},
      {1001, "ts", PartitionValueType::kTimestampTz, false},
      {1002, "dec", PartitionValueType::kBinary, false}};
  EXPECT_EQ(m.partition_type, expected_type);
  ASSERT_EQ(m.entries.size(), 1u);
  const ManifestEntry& e = m.entries[0];
  EXPECT_EQ(e.status, kEntryExisting);
  EXPECT_EQ(e.snapshot_id, 77);
  EXPECT_FALSE(e.sequence_number.has_value());
  const DataFile& f = e.data_file;
  EXPECT_EQ(f.content, kContentData);
  EXPECT_EQ(f.file_path, "gs://b/f.parquet");
  EXPECT_EQ(f.file_format, "parquet");
  EXPECT_EQ(f.record_count, 42);
  EXPECT_EQ(f.file_size_in_bytes, 1234);
  EXPECT_EQ(f.partition,
            (PartitionTuple{PartitionValue(int32_t{19723}), PartitionValue(int64_t{-5}),
                            PartitionValue(std::string("\0\0\1\0", 4))}));
  EXPECT_EQ(f.value_counts, (std::map<int32_t, int64_t>{{1, 42}, {17, 40}}));
  EXPECT_EQ(f.lower_bounds, (std::map<int32_t, std::string>{{17, "lo"}}));
  EXPECT_EQ(f.split_offsets, (std::vector<int64_t>{4, 100}));
  EXPECT_TRUE(f.column_sizes.empty());
}

TEST(Manifest, ReadRejectsManifestsMissingRequiredParts) {
  auto write = [](const std::string& schema_json, const AvroValue& record,
                  std::vector<std::pair<std::string, std::string>> metadata = {}) {
    auto schema = ParseAvroSchema(schema_json).ValueOrDie();
    return WriteAvroFile(schema, std::move(metadata), {record}).ValueOrDie();
  };
  const std::string partition = R"({"name":"partition","field-id":102,"type":
      {"type":"record","name":"p","fields":[]}})";
  // No data_file at all.
  ExpectError(ReadManifest(write(R"({"type":"record","name":"e","fields":[
                  {"name":"status","field-id":0,"type":"int"}]})",
                                 AvroValue::Record({AvroValue::Int(1)})))
                  .status(),
              ErrorKind::kCorrupt, "no data_file record (field id 2)");
  // data_file without file_path.
  const std::string no_path = R"({"type":"record","name":"e","fields":[
      {"name":"status","field-id":0,"type":"int"},
      {"name":"data_file","field-id":2,"type":{"type":"record","name":"df","fields":[)" +
                              partition + R"(]}}]})";
  ExpectError(
      ReadManifest(
          write(no_path, AvroValue::Record({AvroValue::Int(1),
                                            AvroValue::Record({AvroValue::Record({})})})))
          .status(),
      ErrorKind::kCorrupt,
      "manifest entry 0.data_file: required field file_path (id 100) is missing");
  // A null status.
  const std::string null_status = R"({"type":"record","name":"e","fields":[
      {"name":"status","field-id":0,"type":["null","int"]},
      {"name":"data_file","field-id":2,"type":{"type":"record","name":"df","fields":[)" +
                                  partition + R"(]}}]})";
  ExpectError(
      ReadManifest(write(null_status,
                         AvroValue::Record({AvroValue::Null(),
                                            AvroValue::Record({AvroValue::Record({})})})))
          .status(),
      ErrorKind::kCorrupt, "required field status (id 0) is missing or null");
  // A status of the wrong type.
  const std::string string_status = R"({"type":"record","name":"e","fields":[
      {"name":"status","field-id":0,"type":"string"},
      {"name":"data_file","field-id":2,"type":{"type":"record","name":"df","fields":[)" +
                                    partition + R"(]}}]})";
  ExpectError(
      ReadManifest(write(string_status,
                         AvroValue::Record({AvroValue::String("1"),
                                            AvroValue::Record({AvroValue::Record({})})})))
          .status(),
      ErrorKind::kCorrupt, "field status (id 0) should be int but is string");
  // A header that is not a number.
  TL_ASSERT_OK_AND_ASSIGN(std::string good,
                          WriteManifest(TimelakeOptions(), {MakeEntry(0)}));
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(good));
  TL_ASSERT_OK_AND_ASSIGN(
      std::string bad_header,
      WriteAvroFile(file.schema, {{"format-version", "two"}}, file.records));
  ExpectError(ReadManifest(bad_header).status(), ErrorKind::kCorrupt,
              "header format-version \"two\" is not an integer");
  // A root schema that is not a record.
  ExpectError(ReadManifest(WriteAvroFile(AvroSchema::Primitive(AvroType::kInt), {},
                                         {AvroValue::Int(1)})
                               .ValueOrDie())
                  .status(),
              ErrorKind::kCorrupt, "not a record");
}

TEST(Manifest, TruncationNeverCrashes) {
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes,
                          WriteManifest(TimelakeOptions(), {MakeEntry(0), MakeEntry(1)}));
  int errors = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    auto result = ReadManifest(std::string_view(bytes).substr(0, len));
    if (result.ok()) {
      // Only the header-only prefix is a valid (empty) container file.
      EXPECT_TRUE(result->entries.empty()) << len;
    } else {
      ++errors;
      EXPECT_EQ(KindOf(result.status()), ErrorKind::kCorrupt)
          << result.status().ToString();
    }
  }
  EXPECT_EQ(errors, static_cast<int>(bytes.size()) - 1);
}

// ---------------------------------------------------------------------------
// Manifest lists
// ---------------------------------------------------------------------------

ManifestFile MakeManifestFile(int i) {
  ManifestFile m;
  m.manifest_path =
      "s3://bucket/wh/iot/readings/metadata/m" + std::to_string(i) + ".avro";
  m.manifest_length = 5000 + i;
  m.partition_spec_id = 5;
  m.sequence_number = 10 + i;
  m.min_sequence_number = 3;
  m.added_snapshot_id = 99 + i;
  m.added_files_count = 2;
  m.existing_files_count = 3;
  m.deleted_files_count = 4;
  m.added_rows_count = 20;
  m.existing_rows_count = 30;
  m.deleted_rows_count = 40;
  m.partitions = {{false, false, EncodeInt32(473352), EncodeInt32(473360)},
                  {true, std::nullopt, std::nullopt, std::nullopt}};
  return m;
}

TEST(ManifestList, RoundTripsEveryField) {
  std::vector<ManifestFile> manifests = {MakeManifestFile(0), MakeManifestFile(1)};
  manifests[1].content = kManifestDeletes;
  manifests[1].key_metadata = "km";
  manifests[1].partitions.clear();
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes, WriteManifestList(100, 99, 11, manifests));
  TL_ASSERT_OK_AND_ASSIGN(std::vector<ManifestFile> back, ReadManifestList(bytes));
  EXPECT_EQ(back, manifests);

  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_EQ(file.metadata.at("snapshot-id"), "100");
  EXPECT_EQ(file.metadata.at("parent-snapshot-id"), "99");
  EXPECT_EQ(file.metadata.at("sequence-number"), "11");
  EXPECT_EQ(file.metadata.at("format-version"), "2");
  EXPECT_EQ(file.codec, "deflate");
  EXPECT_EQ(file.schema.name, "manifest_file");
  std::vector<int> ids;
  for (const auto& f : file.schema.fields) ids.push_back(f.field_id().value_or(-1));
  EXPECT_EQ(ids, (std::vector<int>{500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512,
                                   513, 514, 507, 519}));
  const AvroSchema& partitions = file.schema.fields[13].schema.children[1];
  EXPECT_EQ(partitions.IntAttribute("element-id"), 508);
  EXPECT_EQ(partitions.items().name, "r508");
  std::vector<int> summary_ids;
  for (const auto& f : partitions.items().fields) summary_ids.push_back(*f.field_id());
  EXPECT_EQ(summary_ids, (std::vector<int>{509, 518, 510, 511}));
}

TEST(ManifestList, ParentlessListsSayNull) {
  TL_ASSERT_OK_AND_ASSIGN(
      std::string bytes,
      WriteManifestList(1, std::nullopt, 1, {MakeManifestFile(0)}, "null"));
  TL_ASSERT_OK_AND_ASSIGN(AvroFile file, ReadAvroFile(bytes));
  EXPECT_EQ(file.metadata.at("parent-snapshot-id"), "null");
  EXPECT_EQ(file.codec, "null");
}

TEST(ManifestList, WriteRejectsMissingCounts) {
  auto m = MakeManifestFile(0);
  m.deleted_rows_count.reset();
  ExpectError(
      WriteManifestList(1, std::nullopt, 1, {m}).status(), ErrorKind::kInvalid,
      "writing manifest list entry 0 (s3://bucket/wh/iot/readings/metadata/m0.avro): "
      "file and row counts are required");
  m = MakeManifestFile(0);
  m.content = 2;
  ExpectError(WriteManifestList(1, std::nullopt, 1, {m}).status(), ErrorKind::kInvalid,
              "content 2 is not 0 or 1");
  ExpectError(WriteManifestList(1, std::nullopt, 1, {}, "bzip2").status(),
              ErrorKind::kUnsupported, "bzip2");
}

TEST(ManifestList, ReadsV1NamesAndDefaults) {
  // Java's v1 lists call the counts added_data_files_count etc.; ids decide.
  constexpr char kSchema[] = R"({"type":"record","name":"manifest_file","fields":[
      {"name":"manifest_path","type":"string","field-id":500},
      {"name":"manifest_length","type":"long","field-id":501},
      {"name":"partition_spec_id","type":"int","field-id":502},
      {"name":"added_snapshot_id","type":["null","long"],"field-id":503},
      {"name":"added_data_files_count","type":["null","int"],"field-id":504},
      {"name":"existing_data_files_count","type":["null","int"],"field-id":505},
      {"name":"deleted_data_files_count","type":["null","int"],"field-id":506},
      {"name":"partitions","type":["null",{"type":"array","element-id":508,"items":
        {"type":"record","name":"r508","fields":[
          {"name":"contains_null","type":"boolean","field-id":509},
          {"name":"lower_bound","type":["null","bytes"],"field-id":510},
          {"name":"upper_bound","type":["null","bytes"],"field-id":511}]}}],
       "field-id":507}]})";
  TL_ASSERT_OK_AND_ASSIGN(AvroSchema schema, ParseAvroSchema(kSchema));
  auto record = AvroValue::Record(
      {AvroValue::String("m.avro"), AvroValue::Long(10), AvroValue::Int(0),
       AvroValue::Long(5), AvroValue::Int(1), AvroValue::Null(), AvroValue::Int(0),
       AvroValue::Array({AvroValue::Record(
           {AvroValue::Boolean(true), AvroValue::String("a"), AvroValue::Null()})})});
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes,
                          WriteAvroFile(schema, {{"format-version", "1"}}, {record}));
  TL_ASSERT_OK_AND_ASSIGN(std::vector<ManifestFile> list, ReadManifestList(bytes));
  ASSERT_EQ(list.size(), 1u);
  const ManifestFile& m = list[0];
  EXPECT_EQ(m.manifest_path, "m.avro");
  EXPECT_EQ(m.content, kManifestData);
  EXPECT_EQ(m.sequence_number, 0);
  EXPECT_EQ(m.min_sequence_number, 0);
  EXPECT_EQ(m.added_snapshot_id, 5);
  EXPECT_EQ(m.added_files_count, 1);
  EXPECT_FALSE(m.existing_files_count.has_value());
  EXPECT_EQ(m.deleted_files_count, 0);
  EXPECT_FALSE(m.added_rows_count.has_value());
  ASSERT_EQ(m.partitions.size(), 1u);
  EXPECT_EQ(m.partitions[0], (FieldSummary{true, std::nullopt, "a", std::nullopt}));
}

// ---------------------------------------------------------------------------
// Summaries and inheritance
// ---------------------------------------------------------------------------

TEST(Summaries, BoundsNullsAndNaNs) {
  const std::vector<PartitionFieldType> type = {
      {1000, "h", PartitionValueType::kInt, false},
      {1001, "s", PartitionValueType::kString, false},
      {1002, "d", PartitionValueType::kDouble, false},
      {1003, "b", PartitionValueType::kBoolean, false}};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<PartitionTuple> tuples = {
      {int32_t{5}, std::string("b"), 0.0, true},
      {int32_t{-3}, std::string("\xff"), nan, std::nullopt},
      {int32_t{7}, std::nullopt, -0.0, false},
      {std::nullopt, std::string("a"), 2.5, true},
  };
  std::vector<const PartitionTuple*> ptrs;
  for (const auto& t : tuples) ptrs.push_back(&t);
  TL_ASSERT_OK_AND_ASSIGN(std::vector<FieldSummary> s, SummarizePartitions(type, ptrs));
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], (FieldSummary{true, false, EncodeInt32(-3), EncodeInt32(7)}));
  // Unsigned byte order: "\xff" sorts after "b".
  EXPECT_EQ(s[1], (FieldSummary{true, false, "a", "\xff"}));
  // NaN is counted, not used as a bound; -0.0 sorts before +0.0.
  EXPECT_EQ(s[2], (FieldSummary{false, true, EncodeDouble(-0.0), EncodeDouble(2.5)}));
  EXPECT_EQ(s[3], (FieldSummary{true, false, EncodeBoolean(false), EncodeBoolean(true)}));

  // All-null field: no bounds.
  const PartitionTuple only_null = {std::nullopt, std::nullopt, std::nullopt,
                                    std::nullopt};
  TL_ASSERT_OK_AND_ASSIGN(auto s2, SummarizePartitions(type, {&only_null}));
  EXPECT_EQ(s2[0], (FieldSummary{true, false, std::nullopt, std::nullopt}));

  const PartitionTuple short_tuple = {int32_t{1}};
  ExpectError(SummarizePartitions(type, {&short_tuple}).status(), ErrorKind::kInvalid,
              "1 values but the partition type has 4");
}

TEST(Summaries, SummarizeManifestCountsAndSequenceNumbers) {
  auto o = TimelakeOptions();
  std::vector<ManifestEntry> entries = {MakeEntry(0), MakeEntry(1), MakeEntry(2),
                                        MakeEntry(3)};
  entries[1].status = kEntryExisting;
  entries[1].sequence_number = 4;
  entries[2].status = kEntryDeleted;
  entries[2].sequence_number = 1;  // deleted entries do not count for the minimum
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes, WriteManifest(o, entries));
  TL_ASSERT_OK_AND_ASSIGN(
      ManifestFile m,
      SummarizeManifest("s3://m.avro", static_cast<int64_t>(bytes.size()),
                        o.partition_spec_id, 42, 9, o.partition_type, entries));
  EXPECT_EQ(m.manifest_path, "s3://m.avro");
  EXPECT_EQ(m.manifest_length, static_cast<int64_t>(bytes.size()));
  EXPECT_EQ(m.partition_spec_id, 5);
  EXPECT_EQ(m.content, kManifestData);
  EXPECT_EQ(m.sequence_number, 9);
  EXPECT_EQ(m.min_sequence_number, 4);
  EXPECT_EQ(m.added_snapshot_id, 42);
  EXPECT_EQ(m.added_files_count, 2);
  EXPECT_EQ(m.existing_files_count, 1);
  EXPECT_EQ(m.deleted_files_count, 1);
  EXPECT_EQ(m.added_rows_count, 100 + 103);
  EXPECT_EQ(m.existing_rows_count, 101);
  EXPECT_EQ(m.deleted_rows_count, 102);
  ASSERT_EQ(m.partitions.size(), 2u);
  EXPECT_EQ(m.partitions[0],
            (FieldSummary{false, false, EncodeInt32(473352), EncodeInt32(473355)}));
  EXPECT_EQ(m.partitions[1], (FieldSummary{true, false, "sensor-0", "sensor-2"}));
  // The result is accepted by the list writer.
  TL_ASSERT_OK(WriteManifestList(42, std::nullopt, 9, {m}).status());

  entries[3].data_file.content = kContentPositionDeletes;
  ExpectError(SummarizeManifest("x", 1, 0, 1, 1, o.partition_type, entries).status(),
              ErrorKind::kInvalid, "mixes data and delete files");
}

TEST(Summaries, InheritanceFollowsTheSpec) {
  ManifestFile m = MakeManifestFile(0);  // added_snapshot_id 99, sequence 10
  std::vector<ManifestEntry> entries(3);
  entries[0].status = kEntryAdded;
  entries[1].status = kEntryExisting;  // existing entries must carry their own numbers
  entries[2].status = kEntryAdded;
  entries[2].snapshot_id = 5;
  entries[2].sequence_number = 3;
  InheritManifestFileFields(m, &entries);
  EXPECT_EQ(entries[0].snapshot_id, 99);
  EXPECT_EQ(entries[0].sequence_number, 10);
  EXPECT_EQ(entries[0].file_sequence_number, 10);
  EXPECT_EQ(entries[1].snapshot_id, 99);
  EXPECT_FALSE(entries[1].sequence_number.has_value());
  EXPECT_EQ(entries[2].snapshot_id, 5);
  EXPECT_EQ(entries[2].sequence_number, 3);
  EXPECT_EQ(entries[2].file_sequence_number, 10);

  // v1: every sequence number is 0.
  m.sequence_number = 0;
  std::vector<ManifestEntry> v1(1);
  v1[0].status = kEntryExisting;
  InheritManifestFileFields(m, &v1);
  EXPECT_EQ(v1[0].sequence_number, 0);
  EXPECT_EQ(v1[0].file_sequence_number, 0);
}

// ---------------------------------------------------------------------------
// Files written by PyIceberg (tests/fixtures/pyiceberg, see make_fixtures.py)
// ---------------------------------------------------------------------------

#ifdef TIMELAKE_TEST_FIXTURES_DIR
std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(TIMELAKE_TEST_FIXTURES_DIR) + "/pyiceberg/" + name,
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void CheckPyIcebergEntries(const ManifestContents& m, int64_t snapshot_id) {
  const std::vector<PartitionFieldType> expected_type = {
      {1000, "ts_day", PartitionValueType::kDate, true},
      {1001, "sensor", PartitionValueType::kString, false}};
  EXPECT_EQ(m.partition_type, expected_type);
  EXPECT_EQ(m.partition_spec_id, 0);
  EXPECT_FALSE(m.schema_id.has_value());  // PyIceberg does not write schema-id
  EXPECT_NE(m.table_schema_json.find("\"name\":\"sensor\""), std::string::npos);
  EXPECT_NE(m.partition_spec_json.find("\"transform\":\"day\""), std::string::npos);
  ASSERT_EQ(m.entries.size(), 2u);

  const ManifestEntry& a = m.entries[0];
  EXPECT_EQ(a.status, kEntryAdded);
  EXPECT_EQ(a.snapshot_id, snapshot_id);
  EXPECT_FALSE(a.sequence_number.has_value());
  EXPECT_FALSE(a.file_sequence_number.has_value());
  EXPECT_EQ(a.data_file.content, kContentData);
  EXPECT_TRUE(a.data_file.file_path.find("/data/ts_day=2024-01-01/sensor=a/") !=
              std::string::npos)
      << a.data_file.file_path;
  EXPECT_TRUE(EndsWith(a.data_file.file_path, ".parquet"));
  EXPECT_EQ(a.data_file.file_format, "PARQUET");
  EXPECT_EQ(a.data_file.partition, (PartitionTuple{PartitionValue(int32_t{19723}),
                                                   PartitionValue(std::string("a"))}));
  EXPECT_EQ(a.data_file.record_count, 2);
  EXPECT_EQ(a.data_file.file_size_in_bytes, 1307);
  EXPECT_EQ(a.data_file.column_sizes,
            (std::map<int32_t, int64_t>{{1, 114}, {2, 75}, {3, 120}}));
  EXPECT_EQ(a.data_file.value_counts,
            (std::map<int32_t, int64_t>{{1, 2}, {2, 2}, {3, 2}}));
  EXPECT_EQ(a.data_file.null_value_counts,
            (std::map<int32_t, int64_t>{{1, 0}, {2, 0}, {3, 0}}));
  EXPECT_TRUE(a.data_file.nan_value_counts.empty());
  EXPECT_EQ(a.data_file.lower_bounds,
            (std::map<int32_t, std::string>{
                {1, EncodeInt64(1704067200000000)}, {2, "a"}, {3, EncodeDouble(1.5)}}));
  EXPECT_EQ(a.data_file.upper_bounds,
            (std::map<int32_t, std::string>{
                {1, EncodeInt64(1704085200000000)}, {2, "a"}, {3, EncodeDouble(1.5)}}));
  EXPECT_EQ(a.data_file.split_offsets, (std::vector<int64_t>{4}));
  EXPECT_FALSE(a.data_file.sort_order_id.has_value());
  EXPECT_FALSE(a.data_file.key_metadata.has_value());

  const ManifestEntry& b = m.entries[1];
  EXPECT_EQ(b.data_file.partition,
            (PartitionTuple{PartitionValue(int32_t{19724}), std::nullopt}));
  EXPECT_EQ(b.data_file.record_count, 1);
  EXPECT_EQ(b.data_file.null_value_counts,
            (std::map<int32_t, int64_t>{{1, 0}, {2, 1}, {3, 0}}));
  EXPECT_EQ(b.data_file.lower_bounds,
            (std::map<int32_t, std::string>{{1, Unhex("00248c04ec0d0600")},
                                            {3, EncodeDouble(-2.0)}}));
}

TEST(PyIcebergFixtures, ReadsAV2Manifest) {
  const std::string bytes = ReadFixture("v2-manifest.avro");
  ASSERT_FALSE(bytes.empty()) << "fixture missing";
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m, ReadManifest(bytes));
  EXPECT_EQ(m.format_version, 2);
  EXPECT_EQ(m.content, "data");
  CheckPyIcebergEntries(m, 7293390495625906167);
}

TEST(PyIcebergFixtures, ReadsAV1Manifest) {
  const std::string bytes = ReadFixture("v1-manifest.avro");
  ASSERT_FALSE(bytes.empty()) << "fixture missing";
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m, ReadManifest(bytes));
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.content, "data");  // v1 manifests have no content key
  EXPECT_EQ(m.metadata.count("content"), 0u);
  CheckPyIcebergEntries(m, 8724889839697522064);
}

TEST(PyIcebergFixtures, ReadsAV2ManifestList) {
  const std::string bytes = ReadFixture("v2-manifest-list.avro");
  ASSERT_FALSE(bytes.empty()) << "fixture missing";
  TL_ASSERT_OK_AND_ASSIGN(std::vector<ManifestFile> list, ReadManifestList(bytes));
  ASSERT_EQ(list.size(), 2u);
  const ManifestFile& newest = list[0];
  EXPECT_TRUE(
      EndsWith(newest.manifest_path, "6ec9b9b0-ff81-485c-a2f7-15c4b6279474-m0.avro"));
  EXPECT_EQ(newest.manifest_length, 4685);
  EXPECT_EQ(newest.sequence_number, 2);
  EXPECT_EQ(newest.min_sequence_number, 2);
  EXPECT_EQ(newest.added_snapshot_id, 8756780774306198287);
  EXPECT_EQ(newest.added_files_count, 1);
  EXPECT_EQ(newest.added_rows_count, 1);
  const ManifestFile& oldest = list[1];
  EXPECT_TRUE(
      EndsWith(oldest.manifest_path, "821789be-ff70-4720-856c-095c40781e05-m0.avro"));
  EXPECT_EQ(oldest.manifest_length, 4917);
  EXPECT_EQ(oldest.partition_spec_id, 0);
  EXPECT_EQ(oldest.content, kManifestData);
  EXPECT_EQ(oldest.sequence_number, 1);
  EXPECT_EQ(oldest.min_sequence_number, 1);
  EXPECT_EQ(oldest.added_snapshot_id, 7293390495625906167);
  EXPECT_EQ(oldest.added_files_count, 2);
  EXPECT_EQ(oldest.existing_files_count, 0);
  EXPECT_EQ(oldest.deleted_files_count, 0);
  EXPECT_EQ(oldest.added_rows_count, 3);
  EXPECT_EQ(oldest.existing_rows_count, 0);
  EXPECT_EQ(oldest.deleted_rows_count, 0);
  EXPECT_EQ(oldest.partitions, (std::vector<FieldSummary>{
                                   {false, false, EncodeInt32(19723), EncodeInt32(19724)},
                                   {true, false, "a", "a"}}));
  EXPECT_FALSE(oldest.key_metadata.has_value());

  // Our summary of the fixture manifest agrees with PyIceberg's.
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m,
                          ReadManifest(ReadFixture("v2-manifest.avro")));
  TL_ASSERT_OK_AND_ASSIGN(
      ManifestFile ours,
      SummarizeManifest(oldest.manifest_path, oldest.manifest_length, 0,
                        oldest.added_snapshot_id, 1, m.partition_type, m.entries));
  EXPECT_EQ(ours, oldest);
}

TEST(PyIcebergFixtures, ReadsAV1ManifestList) {
  const std::string bytes = ReadFixture("v1-manifest-list.avro");
  ASSERT_FALSE(bytes.empty()) << "fixture missing";
  TL_ASSERT_OK_AND_ASSIGN(std::vector<ManifestFile> list, ReadManifestList(bytes));
  ASSERT_EQ(list.size(), 2u);
  const ManifestFile& oldest = list[1];
  EXPECT_EQ(oldest.manifest_length, 4519);
  EXPECT_EQ(oldest.content, kManifestData);
  EXPECT_EQ(oldest.sequence_number, 0);  // v1: no sequence numbers
  EXPECT_EQ(oldest.min_sequence_number, 0);
  EXPECT_EQ(oldest.added_snapshot_id, 8724889839697522064);
  EXPECT_EQ(oldest.added_files_count, 2);
  EXPECT_EQ(oldest.added_rows_count, 3);
  EXPECT_EQ(oldest.partitions[1], (FieldSummary{true, false, "a", "a"}));
}

TEST(PyIcebergFixtures, RewritingAPyIcebergManifestPreservesIt) {
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents m,
                          ReadManifest(ReadFixture("v2-manifest.avro")));
  ManifestWriteOptions o;
  o.table_schema_json = m.table_schema_json;
  o.partition_spec_json = m.partition_spec_json;
  o.partition_spec_id = *m.partition_spec_id;
  o.partition_type = m.partition_type;
  TL_ASSERT_OK_AND_ASSIGN(std::string bytes, WriteManifest(o, m.entries));
  TL_ASSERT_OK_AND_ASSIGN(ManifestContents again, ReadManifest(bytes));
  EXPECT_EQ(again.entries, m.entries);
  EXPECT_EQ(again.partition_type, m.partition_type);
}
#endif

}  // namespace
}  // namespace timelake::format
