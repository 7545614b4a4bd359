// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"
#include "timelake/timelake.h"

namespace timelake {
namespace {

std::shared_ptr<arrow::RecordBatch> Rows(
    const std::vector<std::optional<std::string>>& hosts,
    const std::vector<int64_t>& times, const std::vector<std::optional<int64_t>>& ingest,
    const std::vector<int64_t>& values) {
  arrow::StringBuilder h;
  arrow::TimestampBuilder t(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                            arrow::default_memory_pool());
  arrow::TimestampBuilder in(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                             arrow::default_memory_pool());
  arrow::Int64Builder v;
  for (size_t i = 0; i < hosts.size(); ++i) {
    EXPECT_TRUE((hosts[i] ? h.Append(*hosts[i]) : h.AppendNull()).ok());
    EXPECT_TRUE(t.Append(times[i]).ok());
    EXPECT_TRUE((ingest[i] ? in.Append(*ingest[i]) : in.AppendNull()).ok());
    EXPECT_TRUE(v.Append(values[i]).ok());
  }
  auto schema = arrow::schema(
      {arrow::field("host", arrow::utf8()), arrow::field("time", t.type()),
       arrow::field("_ingest_ts", in.type()), arrow::field("v", arrow::int64())});
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(hosts.size()),
                                  {h.Finish().ValueOrDie(), t.Finish().ValueOrDie(),
                                   in.Finish().ValueOrDie(), v.Finish().ValueOrDie()});
}

std::vector<int64_t> Values(const std::shared_ptr<arrow::RecordBatch>& batch) {
  std::vector<int64_t> out;
  auto v = std::static_pointer_cast<arrow::Int64Array>(batch->GetColumnByName("v"));
  for (int64_t i = 0; i < v->length(); ++i) out.push_back(v->Value(i));
  return out;
}

TEST(LatestPerSeriesTest, NewestTimeThenLaterInsertionThenLaterRow) {
  auto a = Rows({"b", "a", "a", "b", std::nullopt}, {5, 9, 9, 5, 1}, {10, 20, 10, 10, 1},
                {1, 2, 3, 4, 5});
  // b: equal time and insertion -> the later row (4); a: equal time, the later
  // insertion (2) beats the later row (3).
  auto b = Rows({"a", "b"}, {8, 4}, {99, 99}, {6, 7});
  TL_ASSERT_OK_AND_ASSIGN(auto latest, LatestPerSeries({a, b}, "time", {"host"}));
  ASSERT_NE(latest, nullptr);
  // Sorted by series; the null series is one series of its own.
  EXPECT_EQ(Values(latest), (std::vector<int64_t>{2, 4, 5}));

  // Without an insertion column the later row wins among equal times.
  TL_ASSERT_OK_AND_ASSIGN(latest, LatestPerSeries({a}, "time", {"host"}, ""));
  EXPECT_EQ(Values(latest), (std::vector<int64_t>{3, 4, 5}));

  // No series key: one row, the newest.
  TL_ASSERT_OK_AND_ASSIGN(latest, LatestPerSeries({a, b}, "time", {}));
  EXPECT_EQ(Values(latest), (std::vector<int64_t>{2}));
}

TEST(LatestPerSeriesTest, NullInsertionTimeIsOldest) {
  auto a = Rows({"a", "a"}, {5, 5}, {7, std::nullopt}, {1, 2});
  TL_ASSERT_OK_AND_ASSIGN(auto latest, LatestPerSeries({a}, "time", {"host"}));
  EXPECT_EQ(Values(latest), (std::vector<int64_t>{1}));
}

TEST(LatestPerSeriesTest, NoRowsAndBadColumns) {
  TL_ASSERT_OK_AND_ASSIGN(auto none, LatestPerSeries({}, "time", {"host"}));
  EXPECT_EQ(none, nullptr);
  auto a = Rows({"a"}, {1}, {1}, {1});
  testing::ExpectError(LatestPerSeries({a}, "when", {"host"}).status(),
                       ErrorKind::kInvalid, "'when'");
  testing::ExpectError(LatestPerSeries({a}, "time", {"device"}).status(),
                       ErrorKind::kInvalid, "'device'");
}

TEST(FilePartitionTest, ReadsThePartitionFolder) {
  EXPECT_EQ(FilePartition("s3://b/w/default/cpu/data/time_day=2024-01-02/x.parquet"),
            "2024-01-02");
  EXPECT_EQ(FilePartition("data/time_hour=2024-01-02-07/x.parquet"), "2024-01-02-07");
  EXPECT_EQ(FilePartition("file:///w/default/dim/data/x.parquet"), std::nullopt);
  EXPECT_EQ(FilePartition("x.parquet"), std::nullopt);
}

}  // namespace
}  // namespace timelake
