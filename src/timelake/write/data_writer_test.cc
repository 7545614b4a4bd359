// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/write/data_writer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>

#include "timelake/storage/store.h"
#include "timelake/testing/matchers.h"

namespace timelake::write {
namespace {

constexpr int64_t kHour = int64_t{3600} * 1000000;

// Rows of a time-series batch: a nullable string site and an int sensor as
// the series key, time, and an insertion time.
struct Rows {
  std::vector<std::optional<std::string>> site;
  std::vector<std::optional<int32_t>> sensor;
  std::vector<int64_t> time, ingest;

  size_t size() const { return time.size(); }

  // Key of row i in the write order, the row's position breaking ties.
  auto Key(size_t i, bool by_hour) const {
    return std::make_tuple(by_hour ? time[i] / kHour : 0, site[i].has_value(),
                           site[i].value_or(""), sensor[i].has_value(),
                           sensor[i].value_or(0), time[i], ingest[i], i);
  }
};

// `n` rows of `series` series over `hours` hours, times in order per series
// except that a share of them are swapped; a fifth of the rows repeat the
// series and time of the row before them (for dedup).
Rows RandomRows(std::mt19937* rng, int n, int series, int hours) {
  Rows rows;
  for (int i = 0; i < n; ++i) {
    const int s = static_cast<int>((*rng)() % series);
    rows.site.push_back(
        s % 7 == 0 ? std::nullopt
                   : std::optional<std::string>("site-" + std::to_string(s % 97)));
    rows.sensor.push_back(s % 11 == 0 ? std::nullopt : std::optional<int32_t>(s));
    rows.time.push_back(static_cast<int64_t>(i) * hours * kHour / n);
    rows.ingest.push_back(static_cast<int64_t>((*rng)() % 3));
    if (i > 0 && (*rng)() % 5 == 0) {
      rows.site[i] = rows.site[i - 1];
      rows.sensor[i] = rows.sensor[i - 1];
      rows.time[i] = rows.time[i - 1];
    }
  }
  for (int k = 0; k < n / 20; ++k) {  // out of order
    std::swap(rows.time[(*rng)() % n], rows.time[(*rng)() % n]);
  }
  return rows;
}

std::shared_ptr<arrow::Schema> RowsSchema(bool ids) {
  auto id = [&](int i) {
    return ids ? arrow::key_value_metadata({"PARQUET:field_id"}, {std::to_string(i)})
               : nullptr;
  };
  auto ts = arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  return arrow::schema({arrow::field("site", arrow::utf8(), true, id(1)),
                        arrow::field("sensor", arrow::int32(), true, id(2)),
                        arrow::field("time", ts, false, id(3)),
                        arrow::field("ingest", ts, false, id(4)),
                        arrow::field("pos", arrow::int64(), false, id(5))});
}

std::shared_ptr<arrow::RecordBatch> ToBatch(const Rows& rows, bool ids) {
  arrow::StringBuilder site;
  arrow::Int32Builder sensor;
  auto ts = arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
  arrow::TimestampBuilder time(ts, arrow::default_memory_pool());
  arrow::TimestampBuilder ingest(ts, arrow::default_memory_pool());
  arrow::Int64Builder pos;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_TRUE((rows.site[i] ? site.Append(*rows.site[i]) : site.AppendNull()).ok());
    EXPECT_TRUE(
        (rows.sensor[i] ? sensor.Append(*rows.sensor[i]) : sensor.AppendNull()).ok());
    EXPECT_TRUE(time.Append(rows.time[i]).ok());
    EXPECT_TRUE(ingest.Append(rows.ingest[i]).ok());
    EXPECT_TRUE(pos.Append(static_cast<int64_t>(i)).ok());
  }
  std::vector<std::shared_ptr<arrow::Array>> columns(5);
  EXPECT_TRUE(site.Finish(&columns[0]).ok());
  EXPECT_TRUE(sensor.Finish(&columns[1]).ok());
  EXPECT_TRUE(time.Finish(&columns[2]).ok());
  EXPECT_TRUE(ingest.Finish(&columns[3]).ok());
  EXPECT_TRUE(pos.Finish(&columns[4]).ok());
  return arrow::RecordBatch::Make(RowsSchema(ids), static_cast<int64_t>(rows.size()),
                                  columns);
}

// The write order by a plain sort of the rows' values: positions sorted by
// (hour when `by_hour`, site, sensor, time, insertion, position), nulls
// first; with dedup only the last of each (hour, site, sensor, time).
std::vector<int64_t> PlainOrder(const Rows& rows, bool dedup, bool by_hour) {
  std::vector<int64_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return rows.Key(a, by_hour) < rows.Key(b, by_hour);
  });
  if (!dedup) return order;
  std::vector<int64_t> kept;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k + 1 < order.size()) {
      auto a = rows.Key(order[k], by_hour), b = rows.Key(order[k + 1], by_hour);
      std::get<6>(a) = std::get<6>(b) = 0;  // insertion and position aside
      std::get<7>(a) = std::get<7>(b) = 0;
      if (a == b) continue;
    }
    kept.push_back(order[k]);
  }
  return kept;
}

Layout RowsLayout(bool dedup) {
  Layout layout;
  layout.schema = RowsSchema(true);
  layout.time_column = "time";
  layout.series_key = {"site", "sensor"};
  layout.ingest_column = "ingest";
  layout.dedup = dedup;
  return layout;
}

class WriteOrderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(arrow::compute::Initialize().ok()); }
};

// Against the plain sort: few series and many (their site and sensor pairs
// then number more than the rows, so groups are ranked), with and without
// dedup, strings plain and as a dictionary (as a compaction reads them).
TEST_F(WriteOrderTest, MatchesAPlainSortOfTheValues) {
  std::mt19937 rng(11);
  for (const int series : {1, 40, 5000}) {
    for (const bool dedup : {false, true}) {
      for (const bool dictionary : {false, true}) {
        SCOPED_TRACE("series " + std::to_string(series) + (dedup ? " dedup" : "") +
                     (dictionary ? " dictionary" : ""));
        const Rows rows = RandomRows(&rng, 3000, series, 1);
        TL_ASSERT_OK_AND_ASSIGN(auto table,
                                arrow::Table::FromRecordBatches({ToBatch(rows, false)}));
        if (dictionary) {
          TL_ASSERT_OK_AND_ASSIGN(auto encoded,
                                  arrow::compute::DictionaryEncode(table->column(0)));
          auto column = encoded.chunked_array();
          TL_ASSERT_OK_AND_ASSIGN(
              table, table->SetColumn(0, arrow::field("site", column->type()), column));
        }
        TL_ASSERT_OK_AND_ASSIGN(auto order, WriteOrder(*table, RowsLayout(dedup)));
        const auto& got = static_cast<const arrow::Int64Array&>(*order);
        const auto want = PlainOrder(rows, dedup, false);
        ASSERT_EQ(got.length(), static_cast<int64_t>(want.size()));
        if (dedup) {
          ASSERT_LT(want.size(), rows.size());  // something was dropped
        }
        for (int64_t k = 0; k < got.length(); ++k) {
          ASSERT_EQ(got.Value(k), want[k]) << "at " << k;
        }
      }
    }
  }
}

TEST_F(WriteOrderTest, NeedsATimeColumn) {
  Layout layout = RowsLayout(false);
  layout.time_column.reset();
  TL_ASSERT_OK_AND_ASSIGN(auto table, arrow::Table::FromRecordBatches(
                                          {ToBatch(Rows{{"a"}, {1}, {0}, {0}}, false)}));
  EXPECT_FALSE(WriteOrder(*table, layout).ok());
}

// An append spanning hours of an hourly-partitioned table: each file holds
// one hour's rows, in the order of the plain sort, dedup applied; `latest`
// holds each series' newest row.
TEST_F(WriteOrderTest, EachPartitionsFileIsInTheWriteOrder) {
  const auto dir = std::filesystem::temp_directory_path() / "timelake_write_order_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  TL_ASSERT_OK_AND_ASSIGN(auto store, storage::Store::Open(dir.string(), {}));
  std::mt19937 rng(5);
  const Rows rows = RandomRows(&rng, 4000, 300, 5);
  Layout layout = RowsLayout(true);
  layout.partitioned = true;
  layout.chunk = Chunk::kHour;
  layout.partition_field_name = "time_hour";
  TL_ASSERT_OK_AND_ASSIGN(
      auto output, WriteDataFiles(*store, "ns/t/data", layout, {ToBatch(rows, true)},
                                  internal::TimePoint(std::chrono::hours(1))));
  ASSERT_EQ(output.files.size(), 5u);
  const auto want = PlainOrder(rows, true, true);
  auto files = output.files;
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return *a.partition < *b.partition; });
  std::vector<int64_t> got;
  for (const auto& f : files) {
    TL_ASSERT_OK_AND_ASSIGN(auto bytes, store->Get(f.key));
    TL_ASSERT_OK_AND_ASSIGN(
        auto reader,
        parquet::arrow::OpenFile(std::make_shared<arrow::io::BufferReader>(bytes),
                                 arrow::default_memory_pool()));
    TL_ASSERT_OK_AND_ASSIGN(auto table, reader->ReadTable());
    TL_ASSERT_OK_AND_ASSIGN(auto pos,
                            arrow::Concatenate(table->GetColumnByName("pos")->chunks()));
    const auto& positions = static_cast<const arrow::Int64Array&>(*pos);
    for (int64_t k = 0; k < positions.length(); ++k) {
      got.push_back(positions.Value(k));
      EXPECT_EQ(rows.time[positions.Value(k)] / kHour, *f.partition) << f.key;
    }
  }
  EXPECT_EQ(got, want);

  // The newest row of each series: the last in the order among its rows.
  std::map<std::tuple<bool, std::string, bool, int32_t>, int64_t> newest;
  for (const int64_t r : want) {
    newest[{rows.site[r].has_value(), rows.site[r].value_or(""),
            rows.sensor[r].has_value(), rows.sensor[r].value_or(0)}] = r;
  }
  ASSERT_NE(output.latest, nullptr);
  const auto& latest_pos =
      static_cast<const arrow::Int64Array&>(*output.latest->GetColumnByName("pos"));
  std::vector<int64_t> latest(latest_pos.raw_values(),
                              latest_pos.raw_values() + latest_pos.length());
  std::vector<int64_t> expected;
  for (const auto& [key, r] : newest) expected.push_back(r);
  std::sort(latest.begin(), latest.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(latest, expected);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace timelake::write
