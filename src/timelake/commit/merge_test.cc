// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Manifest merging (commit.h): many small appends leave a bounded number of
// manifests in the snapshot's list, with every file, its snapshot and its
// sequence numbers kept, so reads (dedup on read among them) answer as
// before; with Iceberg's commit.manifest-merge.enabled=false, one manifest
// per append.

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "timelake/commit/commit.h"
#include "timelake/format/manifest.h"
#include "timelake/state/state.h"
#include "timelake/testing/matchers.h"
#include "timelake/timelake.h"

namespace timelake::commit {
namespace {

std::shared_ptr<arrow::RecordBatch> Row(int64_t time_us, const std::string& device,
                                        double value) {
  arrow::TimestampBuilder time(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                               arrow::default_memory_pool());
  arrow::StringBuilder dev;
  arrow::DoubleBuilder v;
  EXPECT_TRUE(time.Append(time_us).ok() && dev.Append(device).ok() &&
              v.Append(value).ok());
  auto schema = arrow::schema(
      {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("device", arrow::utf8()), arrow::field("v", arrow::float64())});
  return arrow::RecordBatch::Make(
      schema, 1,
      {time.Finish().ValueOrDie(), dev.Finish().ValueOrDie(), v.Finish().ValueOrDie()});
}

class ManifestMergeTest : public ::testing::TestWithParam<bool> {
 protected:
  void TearDown() override { Flush(); }
};

TEST_P(ManifestMergeTest, ManyAppendsPlanFromFewManifests) {
  const bool merge = GetParam();
  TL_ASSERT_OK_AND_ASSIGN(auto lake, Lake::Open("memory://"));
  TableOptions options;
  options.time_column = "time";
  options.series_key = {"device"};
  if (!merge) options.properties[kManifestMergeEnabled] = "false";
  TL_ASSERT_OK_AND_ASSIGN(auto table,
                          lake.CreateTable("ns.t", *Row(0, "a", 0)->schema(), options));
  AppendOptions append;
  append.auto_maintain = false;
  constexpr int kAppends = 40;
  for (int i = 0; i < kAppends; ++i) {
    // Device "a" at time 0 every time (dedup keeps the last), and one new
    // series per append, a day apart, in its own partition.
    TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({Row(0, "a", i)}, append));
    TL_ASSERT_OK_AND_ASSIGN(appended,
                            appended.first.Append({Row(int64_t{86'400'000'000} * (i + 1),
                                                       "s" + std::to_string(i), i)},
                                                  append));
    table = appended.first;
  }
  auto state = internal::LakeAccess::State(lake);
  TL_ASSERT_OK_AND_ASSIGN(auto loaded, internal::LoadTableState(
                                           state, TableName::Parse("ns.t").ValueOrDie()));
  const auto* snapshot = loaded->metadata.CurrentSnapshot();
  ASSERT_NE(snapshot, nullptr);
  TL_ASSERT_OK_AND_ASSIGN(auto manifests, LiveManifestsOf(*loaded, *snapshot, "test"));
  if (merge) {
    EXPECT_LE(manifests.size(), static_cast<size_t>(kDefaultManifestMergeCount) + 1);
  } else {
    EXPECT_EQ(manifests.size(), static_cast<size_t>(2 * kAppends));
  }
  // Every file once, with the sequence number of the commit that added it.
  loaded = std::make_shared<internal::TableState>(*loaded);
  TL_ASSERT_OK_AND_ASSIGN(auto files, internal::ListLiveFiles(*loaded));
  EXPECT_EQ(files.size(), static_cast<size_t>(2 * kAppends));
  std::set<int64_t> sequences;
  for (const auto& f : files) sequences.insert(f.sequence_number.value_or(-1));
  EXPECT_EQ(sequences.size(), static_cast<size_t>(2 * kAppends));
  EXPECT_EQ(*sequences.begin(), 1);
  EXPECT_EQ(*sequences.rbegin(), 2 * kAppends);

  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(
      auto rows, session.Sql("SELECT count(*) AS n, sum(v) AS s, "
                             "max(CASE WHEN device = 'a' THEN v END) AS a FROM ns.t"));
  auto row = rows->CombineChunksToBatch().ValueOrDie();
  // One row of "a" after dedup, the last appended; one of each other series.
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Array>(row->column(0))->Value(0),
            kAppends + 1);
  EXPECT_EQ(std::static_pointer_cast<arrow::DoubleArray>(row->column(2))->Value(0),
            kAppends - 1);
  EXPECT_EQ(std::static_pointer_cast<arrow::DoubleArray>(row->column(1))->Value(0),
            (kAppends - 1) + (kAppends - 1) * kAppends / 2);
}

INSTANTIATE_TEST_SUITE_P(MergeOnOff, ManifestMergeTest, ::testing::Bool(),
                         [](const auto& param) {
                           return param.param ? "Merged" : "Unmerged";
                         });

}  // namespace
}  // namespace timelake::commit
