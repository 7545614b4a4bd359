// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/head.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"

namespace timelake::format {
namespace {

Head SampleHead() {
  Head head;
  head.version = 7;
  head.metadata_json = R"({"format-version":2})";
  LiveFile f;
  f.data_file.file_path = "file:///w/default/t/data/time_day=2024-01-02/a.parquet";
  f.data_file.file_size_in_bytes = 1234;
  f.data_file.record_count = 10;
  f.data_file.partition.push_back(int32_t{19724});
  f.data_file.sort_order_id = 1;
  f.data_file.split_offsets = {4};
  f.data_file.value_counts = {{1, 10}, {2, 10}};
  f.data_file.null_value_counts = {{1, 0}, {2, 3}};
  f.data_file.column_sizes = {{1, 50}};
  f.data_file.lower_bounds = {{1, std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8)}};
  f.data_file.upper_bounds = {{1, std::string("\x09\x02\x03\x04\x05\x06\x07\x08", 8)}};
  f.sequence_number = 3;
  f.file_sequence_number = 3;
  f.snapshot_id = 42;
  f.added = true;
  head.files.push_back(f);
  f.data_file.file_path = "file:///w/default/t/data/other.parquet";
  f.data_file.partition.clear();
  f.data_file.sort_order_id.reset();
  f.added = false;
  head.files.push_back(f);
  arrow::Int64Builder v;
  EXPECT_TRUE(v.AppendValues({1, 2}).ok());
  head.last_values = arrow::RecordBatch::Make(
      arrow::schema({arrow::field("v", arrow::int64())}), 2, {v.Finish().ValueOrDie()});
  head.footers.emplace_back(
      head.files[1].data_file.file_path,
      arrow::Buffer::FromString(std::string("idx\0meta\x05PAR1", 13)));
  return head;
}

TEST(HeadTest, RoundTrips) {
  const Head head = SampleHead();
  TL_ASSERT_OK_AND_ASSIGN(auto encoded, EncodeHead(head));
  const std::string bytes = encoded->ToString();
  EXPECT_EQ(bytes.substr(0, 4), "TLHD");
  TL_ASSERT_OK_AND_ASSIGN(auto back, DecodeHead(bytes, "mem://head"));
  EXPECT_EQ(back.version, 7);
  EXPECT_EQ(back.metadata_json, head.metadata_json);
  ASSERT_EQ(back.files.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.files[i].data_file, head.files[i].data_file) << i;
    EXPECT_EQ(back.files[i].sequence_number, head.files[i].sequence_number);
    EXPECT_EQ(back.files[i].snapshot_id, 42);
    EXPECT_EQ(back.files[i].added, head.files[i].added);
  }
  ASSERT_NE(back.last_values, nullptr);
  EXPECT_TRUE(back.last_values->Equals(*head.last_values));
  // Footer blobs come back byte for byte (the bytes are opaque here).
  ASSERT_EQ(back.footers.size(), 1u);
  EXPECT_EQ(back.footers[0].first, head.files[1].data_file.file_path);
  EXPECT_EQ(back.footers[0].second->ToString(), head.footers[0].second->ToString());
}

TEST(HeadTest, BadBytesAreCorruptNamingTheObject) {
  TL_ASSERT_OK_AND_ASSIGN(auto encoded, EncodeHead(SampleHead()));
  const std::string bytes = encoded->ToString();
  for (const std::string& bad :
       {std::string(), std::string("TLHD"), std::string("XXXX") + bytes.substr(4),
        bytes.substr(0, bytes.size() / 2), bytes.substr(0, 20),
        std::string("TLHD\x02") + bytes.substr(5)}) {
    testing::ExpectError(DecodeHead(bad, "mem://w/t/metadata/timelake-head").status(),
                         ErrorKind::kCorrupt, "mem://w/t/metadata/timelake-head");
  }
  std::string json_codec = bytes;
  json_codec.replace(13, 6, std::string("\x05") + "jsonx");
  testing::ExpectError(DecodeHead(json_codec, "h").status(), ErrorKind::kCorrupt,
                       "unknown codec");
}

}  // namespace
}  // namespace timelake::format
