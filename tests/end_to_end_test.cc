// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The whole path on a local warehouse and on an S3 one (the private server of
// s3_test_server.h): create, append, commit, query through DataFusion, and
// the errors that must leave storage unchanged.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include <arrow/api.h>
#include <arrow/compute/initialize.h>
#include <gtest/gtest.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "timelake/testing/matchers.h"
#include "timelake/testing/test_warehouse.h"
#include "timelake/timelake.h"

namespace timelake {
namespace {

constexpr int64_t kDayUs = 86400LL * 1000000;
constexpr int64_t kT0 = 1767225600LL * 1000000;  // 2026-01-01T00:00:00Z

std::shared_ptr<arrow::Schema> Schema() {
  return arrow::schema(
      {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("device_id", arrow::int32()),
       arrow::field("temp", arrow::float64())});
}

std::shared_ptr<arrow::RecordBatch> Batch(const std::vector<int64_t>& times,
                                          const std::vector<int32_t>& devices,
                                          const std::vector<double>& temps) {
  arrow::TimestampBuilder t(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                            arrow::default_memory_pool());
  arrow::Int32Builder d;
  arrow::DoubleBuilder v;
  EXPECT_TRUE(t.AppendValues(times).ok());
  EXPECT_TRUE(d.AppendValues(devices).ok());
  EXPECT_TRUE(v.AppendValues(temps).ok());
  return arrow::RecordBatch::Make(Schema(), static_cast<int64_t>(times.size()),
                                  {*t.Finish(), *d.Finish(), *v.Finish()});
}

TableOptions TsOptions() {
  TableOptions o;
  o.time_column = "time";
  o.series_key = {"device_id"};
  return o;
}

using ::timelake::testing::Backend;
using ::timelake::testing::TestWarehouse;

// Each test on a fresh warehouse: a temporary directory, or a prefix of its
// own in the S3 server's bucket.
class EndToEnd : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(arrow::compute::Initialize().ok());
    TL_ASSERT_OK_AND_ASSIGN(warehouse_, TestWarehouse::Make(GetParam(), "e2e"));
  }
  void TearDown() override {
    Flush();
    warehouse_.Remove();
  }

  arrow::Result<Lake> OpenLake() const {
    return Lake::Open(warehouse_.url(), warehouse_.options());
  }

  // Every object below the warehouse, relative (TestWarehouse::Keys).
  std::set<std::string> Files() const { return warehouse_.Keys(); }

  TestWarehouse warehouse_;
};

int64_t ScalarInt(const std::shared_ptr<arrow::Table>& t, int col, int64_t row = 0) {
  auto s = t->column(col)->GetScalar(row);
  EXPECT_TRUE(s.ok());
  auto cast = (*s)->CastTo(arrow::int64());
  EXPECT_TRUE(cast.ok()) << cast.status().ToString();
  return std::static_pointer_cast<arrow::Int64Scalar>(*cast)->value;
}

double ScalarDouble(const std::shared_ptr<arrow::Table>& t, int col, int64_t row = 0) {
  auto s = t->column(col)->GetScalar(row);
  EXPECT_TRUE(s.ok());
  return std::static_pointer_cast<arrow::DoubleScalar>(*s)->value;
}

TEST_P(EndToEnd, CreateAppendQuery) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table,
                          lake.CreateTable("iot.readings", *Schema(), TsOptions()));
  EXPECT_EQ(table.version(), 1);
  EXPECT_FALSE(table.current_snapshot_id().has_value());
  // The stored schema is normalised: time NOT NULL UTC microseconds, plus _ingest_ts.
  ASSERT_EQ(table.schema()->num_fields(), 4);
  EXPECT_FALSE(table.schema()->field(0)->nullable());
  EXPECT_EQ(table.schema()->field(3)->name(), "_ingest_ts");

  // Two days, two devices, unsorted input.
  auto batch = Batch({kT0 + kDayUs + 5, kT0 + 10, kT0 + 5, kT0 + kDayUs}, {2, 1, 2, 1},
                     {4.0, 2.0, 3.0, 1.0});
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}));
  auto& [t2, result] = appended;
  EXPECT_EQ(result.rows, 4);
  EXPECT_EQ(result.files, 2);  // one per day
  EXPECT_EQ(result.version, 2);
  EXPECT_EQ(result.commit.attempts, 1);
  EXPECT_EQ(t2.version(), 2);
  ASSERT_TRUE(t2.current_snapshot_id().has_value());
  EXPECT_EQ(t2.Info().rows, 4);

  // A real Iceberg layout in storage.
  auto files = Files();
  EXPECT_TRUE(files.count("iot/readings/metadata/v1.metadata.json"));
  EXPECT_TRUE(files.count("iot/readings/metadata/v2.metadata.json"));
  int parquet = 0, avro = 0;
  for (const auto& f : files) {
    if (f.find("iot/readings/data/time_day=2026-01-0") == 0 && f.ends_with(".parquet"))
      ++parquet;
    if (f.ends_with(".avro")) ++avro;
  }
  EXPECT_EQ(parquet, 2);
  EXPECT_EQ(avro, 2);  // one manifest, one manifest list

  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(auto rows,
                          session.Sql("SELECT count(*), sum(temp) FROM iot.readings"));
  EXPECT_EQ(ScalarInt(rows, 0), 4);
  EXPECT_DOUBLE_EQ(ScalarDouble(rows, 1), 10.0);

  TL_ASSERT_OK_AND_ASSIGN(
      auto one,
      session.Sql("SELECT temp FROM iot.readings WHERE device_id = 2 ORDER BY time"));
  ASSERT_EQ(one->num_rows(), 2);
  EXPECT_DOUBLE_EQ(ScalarDouble(one, 0, 0), 3.0);
  EXPECT_DOUBLE_EQ(ScalarDouble(one, 0, 1), 4.0);

  // A second append is visible to the same session at once.
  TL_ASSERT_OK_AND_ASSIGN(auto appended2, t2.Append({Batch({kT0 + 20}, {1}, {7.0})}));
  EXPECT_EQ(appended2.second.version, 3);
  TL_ASSERT_OK_AND_ASSIGN(auto rows2, session.Sql("SELECT count(*) FROM iot.readings"));
  EXPECT_EQ(ScalarInt(rows2, 0), 5);

  // SHOW TABLES and information_schema see the table.
  TL_ASSERT_OK_AND_ASSIGN(auto tables,
                          session.Sql("SELECT table_schema, table_name FROM "
                                      "information_schema.tables WHERE table_catalog = "
                                      "'timelake' AND table_schema = 'iot'"));
  EXPECT_EQ(tables->num_rows(), 1);
}

TEST_P(EndToEnd, FilesAreSortedBySeriesThenTime) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("cpu", *Schema(), TsOptions()));
  std::vector<int64_t> times;
  std::vector<int32_t> devices;
  std::vector<double> temps;
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; ++i) {
    times.push_back(kT0 + static_cast<int64_t>(rng() % 3600) * 1000000);
    devices.push_back(static_cast<int32_t>(rng() % 13));
    temps.push_back(i);
  }
  TL_ASSERT_OK(table.Append({Batch(times, devices, temps)}).status());
  Session session(lake);
  // Reading in file order (single partition, one file) must give sorted rows.
  TL_ASSERT_OK_AND_ASSIGN(auto rows, session.Sql("SELECT device_id, time FROM cpu"));
  TL_ASSERT_OK_AND_ASSIGN(auto combined, rows->CombineChunksToBatch());
  auto dev = std::static_pointer_cast<arrow::Int32Array>(combined->column(0));
  auto ts = std::static_pointer_cast<arrow::TimestampArray>(combined->column(1));
  ASSERT_GT(combined->num_rows(), 900);  // dedup removes equal (device, time) pairs only
  for (int64_t i = 1; i < combined->num_rows(); ++i) {
    const bool ordered =
        dev->Value(i - 1) < dev->Value(i) ||
        (dev->Value(i - 1) == dev->Value(i) && ts->Value(i - 1) < ts->Value(i));
    ASSERT_TRUE(ordered) << "row " << i;
  }
}

// The write order with a series key of two columns, one of them a nullable
// string, against a plain sort of the input: nulls first, then by value;
// with enough distinct values of both that their pairs do not fit 32 bits;
// dedup keeps the later input row of equal (site, sensor, time); and a
// string column of distinct values (written as it is, not as a dictionary)
// keeps its values.
TEST_P(EndToEnd, FilesAreSortedByAMultiColumnSeriesKeyNullsFirst) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  auto schema = arrow::schema(
      {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("site", arrow::utf8()), arrow::field("sensor", arrow::int64()),
       arrow::field("note", arrow::utf8())});
  TableOptions options;
  options.time_column = "time";
  options.series_key = {"site", "sensor"};
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("multi", *schema, options));
  struct Row {
    std::optional<std::string> site;
    int64_t sensor, time;
    std::string note;
  };
  constexpr int kRows = 150000;
  std::mt19937 rng(11);
  std::vector<Row> input;
  for (int i = 0; i < kRows; ++i) {
    Row r;
    // Mostly distinct sites and sensors (about 70,000 of each), some nulls,
    // and some repeated keys (a small range of both) for dedup.
    const bool repeat = rng() % 10 == 0;
    if (rng() % 50 != 0)
      r.site = "s" + std::to_string(repeat ? rng() % 3 : rng() % 70000);
    r.sensor =
        repeat ? static_cast<int64_t>(rng() % 3) : static_cast<int64_t>(rng() % 70000);
    r.time = kT0 + static_cast<int64_t>(repeat ? rng() % 4 : rng() % 3600) * 1000000;
    r.note = "n" + std::to_string(i);
    input.push_back(std::move(r));
  }
  arrow::TimestampBuilder t(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                            arrow::default_memory_pool());
  arrow::StringBuilder site, note;
  arrow::Int64Builder sensor;
  for (const auto& r : input) {
    TL_ASSERT_OK(t.Append(r.time));
    TL_ASSERT_OK(r.site ? site.Append(*r.site) : site.AppendNull());
    TL_ASSERT_OK(sensor.Append(r.sensor));
    TL_ASSERT_OK(note.Append(r.note));
  }
  auto batch = arrow::RecordBatch::Make(
      schema, kRows, {*t.Finish(), *site.Finish(), *sensor.Finish(), *note.Finish()});
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}));
  EXPECT_EQ(appended.second.files, 1);

  // The expected file: a stable sort of the input by the key, then the last
  // row of each (site, sensor, time).
  std::vector<size_t> order(input.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](size_t i) {
    const Row& r = input[i];
    return std::make_tuple(r.site.has_value(), r.site.value_or(""), r.sensor, r.time);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<size_t> expected;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k + 1 < order.size() && key(order[k]) == key(order[k + 1])) continue;
    expected.push_back(order[k]);
  }
  EXPECT_EQ(appended.second.rows, static_cast<int64_t>(expected.size()));
  ASSERT_LT(expected.size(), input.size());  // some keys repeated

  // Read in file order: one file, one partition (with more, a file this
  // size is split into row ranges read side by side).
  SessionSettings one;
  one.target_partitions = 1;
  Session session(lake, one);
  TL_ASSERT_OK_AND_ASSIGN(auto rows, session.Sql("SELECT note FROM multi"));
  TL_ASSERT_OK_AND_ASSIGN(auto combined, rows->CombineChunksToBatch());
  ASSERT_EQ(combined->num_rows(), static_cast<int64_t>(expected.size()));
  const auto& notes = *combined->column(0);
  for (int64_t i = 0; i < combined->num_rows(); ++i) {
    TL_ASSERT_OK_AND_ASSIGN(auto value, notes.GetScalar(i));
    ASSERT_EQ(value->ToString(), input[expected[i]].note) << "row " << i;
  }
}

TEST_P(EndToEnd, DedupKeepsLaterInputRowOnEqualKeys) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("d", *Schema(), TsOptions()));
  TL_ASSERT_OK_AND_ASSIGN(auto appended,
                          table.Append({Batch({kT0, kT0, kT0, kT0 + 1}, {1, 1, 2, 1},
                                              {1.0, 2.0, 3.0, 4.0})}));
  EXPECT_EQ(appended.second.input_rows, 4);
  EXPECT_EQ(appended.second.rows, 3);
  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(
      auto rows, session.Sql("SELECT temp FROM d WHERE device_id = 1 ORDER BY time"));
  ASSERT_EQ(rows->num_rows(), 2);
  EXPECT_DOUBLE_EQ(ScalarDouble(rows, 0, 0), 2.0);  // the later input row wins
}

TEST_P(EndToEnd, LatestGivesNewestRowPerSeries) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("l", *Schema(), TsOptions()));
  TL_ASSERT_OK_AND_ASSIGN(
      auto a, table.Append({Batch({kT0, kT0 + 9, kT0 + 3}, {1, 1, 2}, {1, 2, 3})}));
  TL_ASSERT_OK_AND_ASSIGN(auto b,
                          a.first.Append({Batch({kT0 + 1, kT0 + 9}, {2, 1}, {4, 5})}));
  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("l"));
  ASSERT_EQ(latest->num_rows(), 2);
  // Device 1: two rows at kT0+9 in two commits; the later insertion (5) wins.
  EXPECT_DOUBLE_EQ(ScalarDouble(latest, 2, 0), 5.0);
  EXPECT_DOUBLE_EQ(ScalarDouble(latest, 2, 1), 3.0);
}

// The newest-row SQL is answered from the index, whose decoded rows the
// session's lake reuses: a later append (a new index) must show at once.
TEST_P(EndToEnd, NewestRowSqlInOneSessionFollowsAppends) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("w", *Schema(), TsOptions()));
  TL_ASSERT_OK_AND_ASSIGN(auto a, table.Append({Batch({kT0, kT0}, {1, 2}, {1, 2})}));
  Session session(lake);
  const std::string sql =
      "SELECT device_id, temp FROM (SELECT *, row_number() OVER (PARTITION BY "
      "device_id ORDER BY time DESC) AS rn FROM w) WHERE rn = 1 ORDER BY device_id";
  auto temps = [&]() {
    std::vector<double> out;
    auto rows = session.Sql(sql);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    if (!rows.ok()) return out;
    for (int64_t i = 0; i < (*rows)->num_rows(); ++i)
      out.push_back(ScalarDouble(*rows, 1, i));
    return out;
  };
  EXPECT_EQ(temps(), (std::vector<double>{1, 2}));
  EXPECT_EQ(temps(), (std::vector<double>{1, 2}));  // the rows decoded before
  TL_ASSERT_OK(a.first.Append({Batch({kT0 + 5}, {1}, {7})}).status());
  EXPECT_EQ(temps(), (std::vector<double>{7, 2}));
}

TEST_P(EndToEnd, RepeatedBatchIdCommitsNothing) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("b", *Schema(), TsOptions()));
  AppendOptions opts;
  opts.batch_id = "load-42";
  TL_ASSERT_OK_AND_ASSIGN(auto first, table.Append({Batch({kT0}, {1}, {1})}, opts));
  EXPECT_EQ(first.second.rows, 1);
  Flush();  // the head object and version hint of the first append
  const auto before = Files();
  TL_ASSERT_OK_AND_ASSIGN(auto second, table.Append({Batch({kT0 + 1}, {1}, {2})}, opts));
  EXPECT_TRUE(second.second.duplicate_batch);
  EXPECT_EQ(second.second.rows, 0);
  EXPECT_EQ(second.first.version(), 2);
  Flush();
  EXPECT_EQ(Files(), before);
}

TEST_P(EndToEnd, BadInputChangesNothing) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("bad", *Schema(), TsOptions()));
  Flush();
  const auto before = Files();

  // Extra column.
  auto extra_schema =
      Schema()->AddField(3, arrow::field("humidity", arrow::float64())).ValueOrDie();
  auto base = Batch({kT0}, {1}, {1.0});
  arrow::DoubleBuilder hb;
  TL_ASSERT_OK(hb.Append(0.5));
  auto extra = arrow::RecordBatch::Make(
      extra_schema, 1, {base->column(0), base->column(1), base->column(2), *hb.Finish()});
  auto r1 = table.Append({extra});
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(KindOf(r1.status()), ErrorKind::kInvalid);
  EXPECT_NE(r1.status().message().find("humidity"), std::string::npos)
      << r1.status().message();

  // Null times.
  arrow::TimestampBuilder tb(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                             arrow::default_memory_pool());
  TL_ASSERT_OK(tb.AppendNull());
  TL_ASSERT_OK(tb.Append(kT0));
  TL_ASSERT_OK(tb.AppendNull());
  arrow::Int32Builder db;
  TL_ASSERT_OK(db.AppendValues({1, 2, 3}));
  arrow::DoubleBuilder vb;
  TL_ASSERT_OK(vb.AppendValues({1.0, 2.0, 3.0}));
  auto nulls =
      arrow::RecordBatch::Make(Schema(), 3, {*tb.Finish(), *db.Finish(), *vb.Finish()});
  auto r2 = table.Append({nulls});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(KindOf(r2.status()), ErrorKind::kInvalid);
  EXPECT_NE(r2.status().message().find("2 of 3 rows are null"), std::string::npos)
      << r2.status().message();

  // Wrong type: text that is not a number for device_id.
  arrow::StringBuilder sb;
  TL_ASSERT_OK(sb.Append("seven"));
  auto wrong_schema = arrow::schema(
      {Schema()->field(0), arrow::field("device_id", arrow::utf8()), Schema()->field(2)});
  auto wrong = arrow::RecordBatch::Make(wrong_schema, 1,
                                        {base->column(0), *sb.Finish(), base->column(2)});
  auto r3 = table.Append({wrong});
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(KindOf(r3.status()), ErrorKind::kInvalid);
  EXPECT_NE(r3.status().message().find("device_id"), std::string::npos)
      << r3.status().message();

  Flush();
  EXPECT_EQ(Files(), before);
  TL_ASSERT_OK_AND_ASSIGN(auto reloaded, table.Refresh());
  EXPECT_EQ(reloaded.version(), 1);
}

// Serves batches one at a time; instead of batch `fail_at` (if given) it
// fails, as a source that goes away part-way does.
class VectorReader : public arrow::RecordBatchReader {
 public:
  explicit VectorReader(std::vector<std::shared_ptr<arrow::RecordBatch>> batches,
                        std::optional<size_t> fail_at = std::nullopt)
      : batches_(std::move(batches)), fail_at_(fail_at) {}

  std::shared_ptr<arrow::Schema> schema() const override { return Schema(); }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    if (fail_at_ && next_ == *fail_at_)
      return arrow::Status::IOError("the source went away");
    *batch = next_ < batches_.size() ? batches_[next_++] : nullptr;
    return arrow::Status::OK();
  }
  // Batches handed out so far.
  size_t read() const { return next_; }

 private:
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches_;
  std::optional<size_t> fail_at_;
  size_t next_ = 0;
};

// Six batches of 50 rows over two days, three devices: rows 0..199 in
// batches 0-3, then batches 4 and 5 give rows 100..199 again with new
// temperatures (so the newest row of every device is given twice, and the
// later one must win).
std::vector<std::shared_ptr<arrow::RecordBatch>> StreamBatches() {
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  for (int b = 0; b < 6; ++b) {
    std::vector<int64_t> times;
    std::vector<int32_t> devices;
    std::vector<double> temps;
    const int first = (b < 4 ? b : b - 2) * 50;
    for (int i = 0; i < 50; ++i) {
      times.push_back(kT0 + (first + i) * (kDayUs / 100));
      devices.push_back((first + i) % 3);
      temps.push_back(b * 1000 + i);
    }
    out.push_back(Batch(times, devices, temps));
  }
  return out;
}

// The stream in 80-row buffers: four buffers, and the repeated rows in other
// buffers than the rows they repeat. No inline maintenance: it would compact
// the files this test counts.
AppendOptions SmallBuffers() {
  AppendOptions options;
  options.buffer_rows = 80;
  options.auto_maintain = false;
  return options;
}

int64_t DataFiles(const std::set<std::string>& keys) {
  int64_t n = 0;
  for (const auto& k : keys) n += k.find("/data/") != std::string::npos;
  return n;
}

TEST_P(EndToEnd, StreamedAppendIsOneSnapshotWithThePlainAppendsRows) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto plain, lake.CreateTable("plain", *Schema(), TsOptions()));
  TL_ASSERT_OK_AND_ASSIGN(auto streamed,
                          lake.CreateTable("streamed", *Schema(), TsOptions()));
  TL_ASSERT_OK_AND_ASSIGN(auto one, plain.Append(StreamBatches()));
  VectorReader reader(StreamBatches());
  TL_ASSERT_OK_AND_ASSIGN(auto chunked, streamed.Append(&reader, SmallBuffers()));
  EXPECT_EQ(reader.read(), 6u);

  const AppendResult& r = chunked.second;
  EXPECT_EQ(r.input_rows, one.second.input_rows);
  EXPECT_EQ(r.input_rows, 300);
  EXPECT_EQ(one.second.rows, 200);  // one batch: the repeated rows deduplicated
  EXPECT_EQ(r.rows, 300);           // in other buffers: left to dedup on read
  EXPECT_EQ(r.partitions, 2);
  EXPECT_GT(r.files, one.second.files);
  EXPECT_EQ(r.version, 2);
  EXPECT_EQ(chunked.first.version(), 2);
  EXPECT_EQ(chunked.first.Info().snapshots, 1);
  ASSERT_TRUE(r.snapshot_id.has_value());
  EXPECT_EQ(chunked.first.current_snapshot_id(), r.snapshot_id);
  int64_t files = 0;
  for (const auto& k : Files()) files += k.rfind("default/streamed/data/", 0) == 0;
  EXPECT_EQ(files, r.files);

  Session session(lake);
  auto query = [&](const std::string& table) {
    return session.Sql("SELECT device_id, time, temp FROM " + table +
                       " ORDER BY device_id, time");
  };
  TL_ASSERT_OK_AND_ASSIGN(auto want, query("plain"));
  TL_ASSERT_OK_AND_ASSIGN(auto got, query("streamed"));
  EXPECT_EQ(want->num_rows(), 200);
  EXPECT_TRUE(got->Equals(*want)) << got->ToString() << "\n" << want->ToString();

  // The last-value index merged over the buffers: the repeated newest rows
  // (batch 5) win, as in the single batch.
  TL_ASSERT_OK_AND_ASSIGN(auto latest_want, session.Latest("plain"));
  TL_ASSERT_OK_AND_ASSIGN(auto latest_got, session.Latest("streamed"));
  ASSERT_EQ(latest_got->num_rows(), 3);
  for (int c = 0; c < 3; ++c) {
    EXPECT_TRUE(latest_got->column(c)->Equals(latest_want->column(c))) << c;
  }
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_GE(ScalarDouble(latest_got, 2, i), 5000.0) << i;
  }

  // The same batch id again: the reader is not even read.
  AppendOptions tagged = SmallBuffers();
  tagged.batch_id = "stream-1";
  VectorReader first(StreamBatches());
  TL_ASSERT_OK_AND_ASSIGN(auto a, chunked.first.Append(&first, tagged));
  EXPECT_FALSE(a.second.duplicate_batch);
  VectorReader again(StreamBatches());
  TL_ASSERT_OK_AND_ASSIGN(auto b, a.first.Append(&again, tagged));
  EXPECT_TRUE(b.second.duplicate_batch);
  EXPECT_EQ(again.read(), 0u);
  EXPECT_EQ(b.first.version(), a.first.version());
}

TEST_P(EndToEnd, FailedStreamedAppendLeavesNothing) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("s", *Schema(), TsOptions()));
  Flush();
  const auto before = Files();

  // The reader fails after four batches, two buffers of which are written.
  VectorReader failing(StreamBatches(), /*fail_at=*/4);
  auto r1 = table.Append(&failing, SmallBuffers());
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.status().message(), "the source went away");  // the reader's own
  EXPECT_EQ(KindOf(r1.status()), ErrorKind::kStorage);

  // A bad batch half-way: an extra column.
  auto batches = StreamBatches();
  auto extra_schema =
      Schema()->AddField(3, arrow::field("humidity", arrow::float64())).ValueOrDie();
  auto bad = batches[3];
  TL_ASSERT_OK_AND_ASSIGN(auto humidity, arrow::MakeArrayOfNull(arrow::float64(), 50));
  batches[3] = arrow::RecordBatch::Make(
      extra_schema, 50, {bad->column(0), bad->column(1), bad->column(2), humidity});
  VectorReader extra(batches);
  auto r2 = table.Append(&extra, SmallBuffers());
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(KindOf(r2.status()), ErrorKind::kInvalid);
  EXPECT_NE(r2.status().message().find("batch 3"), std::string::npos)
      << r2.status().message();
  EXPECT_NE(r2.status().message().find("humidity"), std::string::npos)
      << r2.status().message();

  EXPECT_EQ(table.Append(nullptr).status().code(), arrow::StatusCode::Invalid);

  Flush();
  EXPECT_EQ(Files(), before);
  EXPECT_EQ(DataFiles(Files()), 0);
  TL_ASSERT_OK_AND_ASSIGN(auto reloaded, table.Refresh());
  EXPECT_EQ(reloaded.version(), 1);
  EXPECT_FALSE(reloaded.current_snapshot_id().has_value());
}

TEST_P(EndToEnd, CreateErrors) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK(lake.CreateTable("x", *Schema(), TsOptions()).status());
  auto again = lake.CreateTable("x", *Schema(), TsOptions());
  EXPECT_EQ(KindOf(again.status()), ErrorKind::kAlreadyExists);
  TableOptions missing;
  missing.time_column = "ts";
  EXPECT_EQ(KindOf(lake.CreateTable("y", *Schema(), missing).status()),
            ErrorKind::kInvalid);
  TableOptions unknown = TsOptions();
  unknown.properties["timelake.no-such-setting"] = "1";
  auto u = lake.CreateTable("z", *Schema(), unknown);
  EXPECT_EQ(KindOf(u.status()), ErrorKind::kInvalid);
  EXPECT_NE(u.status().message().find("no-such-setting"), std::string::npos);
  EXPECT_EQ(KindOf(lake.CreateTable("../etc", *Schema(), TsOptions()).status()),
            ErrorKind::kInvalid);
  EXPECT_EQ(KindOf(lake.LoadTable("nope").status()), ErrorKind::kNotFound);
}

TEST_P(EndToEnd, ListAndDrop) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK(lake.CreateTable("a.one", *Schema(), TsOptions()).status());
  TL_ASSERT_OK(lake.CreateTable("b.two", *Schema(), {}).status());
  TL_ASSERT_OK_AND_ASSIGN(auto tables, lake.ListTables());
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].ToString(), "a.one");
  TL_ASSERT_OK_AND_ASSIGN(auto namespaces, lake.ListNamespaces());
  EXPECT_EQ(namespaces, (std::vector<std::string>{"a", "b"}));
  TL_ASSERT_OK(lake.DropTable("a.one"));
  EXPECT_EQ(KindOf(lake.LoadTable("a.one").status()), ErrorKind::kNotFound);
  EXPECT_EQ(KindOf(lake.DropTable("a.one")), ErrorKind::kNotFound);
}

// The one int64 a query answers.
int64_t ScalarOf(Session& session, const std::string& sql) {
  auto result = session.Sql(sql);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok() || (*result)->num_rows() != 1) return -1;
  auto scalar = (*result)->column(0)->GetScalar(0);
  return std::static_pointer_cast<arrow::Int64Scalar>(*scalar)->value;
}

TEST_P(EndToEnd, RollbackReadsAsTheSnapshotDidAndForgetsTheBatchIdsItLeaves) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("r", *Schema(), TsOptions()));
  std::vector<int64_t> snapshots;
  for (int i = 0; i < 3; ++i) {
    AppendOptions options;
    options.batch_id = "batch-" + std::to_string(i);
    // Batch i: devices 0..i at time kT0 + i, temperature 10 * i.
    std::vector<int64_t> times(i + 1, kT0 + i);
    std::vector<int32_t> devices;
    for (int d = 0; d <= i; ++d) devices.push_back(d);
    TL_ASSERT_OK_AND_ASSIGN(
        auto appended,
        table.Append({Batch(times, devices, std::vector<double>(i + 1, 10.0 * i))},
                     options));
    table = appended.first;
    snapshots.push_back(*table.current_snapshot_id());
  }
  Session session(lake);
  ASSERT_EQ(ScalarOf(session, "SELECT count(*) FROM r"), 6);

  TL_ASSERT_OK_AND_ASSIGN(auto rolled, table.Rollback(snapshots[0]));
  EXPECT_EQ(rolled.current_snapshot_id(), snapshots[0]);
  EXPECT_EQ(rolled.version(), table.version() + 1);
  EXPECT_EQ(ScalarOf(session, "SELECT count(*) FROM r"), 1);
  TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("r"));
  EXPECT_EQ(latest->num_rows(), 1);
  const auto listed = rolled.Snapshots();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_TRUE(listed[0].current && listed[0].in_history);
  EXPECT_FALSE(listed[1].in_history || listed[2].in_history);
  EXPECT_EQ(listed[2].batch_id, "batch-2");

  // batch-1 was left behind: it appends again. batch-0 is still in the table.
  AppendOptions again;
  again.batch_id = "batch-1";
  TL_ASSERT_OK_AND_ASSIGN(
      auto reappended,
      rolled.Append({Batch({kT0 + 1, kT0 + 1}, {0, 1}, {10, 10})}, again));
  EXPECT_FALSE(reappended.second.duplicate_batch);
  again.batch_id = "batch-0";
  TL_ASSERT_OK_AND_ASSIGN(auto dup,
                          reappended.first.Append({Batch({kT0}, {0}, {0})}, again));
  EXPECT_TRUE(dup.second.duplicate_batch);
  EXPECT_EQ(ScalarOf(session, "SELECT count(*) FROM r"), 3);
  // A snapshot left behind is still kept: rolling forward to it undoes it all.
  TL_ASSERT_OK_AND_ASSIGN(auto forward, dup.first.Rollback(snapshots[2]));
  EXPECT_EQ(ScalarOf(session, "SELECT count(*) FROM r"), 6);
  TL_ASSERT_OK_AND_ASSIGN(latest, session.Latest("r"));
  EXPECT_EQ(latest->num_rows(), 3);

  // An unknown snapshot: kNotFound, nothing written.
  Flush();
  const auto before = Files();
  auto unknown = forward.Rollback(42);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(KindOf(unknown.status()), ErrorKind::kNotFound)
      << unknown.status().ToString();
  EXPECT_NE(unknown.status().message().find("no snapshot 42"), std::string::npos);
  Flush();
  EXPECT_EQ(Files(), before);
  // The current one: nothing to commit.
  TL_ASSERT_OK_AND_ASSIGN(auto same, forward.Rollback(snapshots[2]));
  EXPECT_EQ(same.version(), forward.version());
}

TEST_P(EndToEnd, AHandleFromBeforeADropAndCreateCommitsNothingToTheNewTable) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto stale, lake.CreateTable("t", *Schema(), TsOptions()));
  for (int i = 0; i < 3; ++i) {
    TL_ASSERT_OK_AND_ASSIGN(auto appended, stale.Append({Batch({kT0 + i}, {1}, {1})}));
    stale = appended.first;
  }
  ASSERT_EQ(stale.version(), 4);
  TL_ASSERT_OK(lake.DropTable("t"));
  // The same name again, with another schema.
  auto other =
      arrow::schema({arrow::field("ts", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
                     arrow::field("station", arrow::utf8())});
  TableOptions options;
  options.time_column = "ts";
  options.series_key = {"station"};
  TL_ASSERT_OK_AND_ASSIGN(auto fresh, lake.CreateTable("t", *other, options));
  Flush();
  const auto before = Files();

  auto appended = stale.Append({Batch({kT0 + 9}, {1}, {1})});
  ASSERT_FALSE(appended.ok());
  EXPECT_EQ(KindOf(appended.status()), ErrorKind::kNotFound)
      << appended.status().ToString();
  EXPECT_NE(appended.status().message().find("dropped and created again"),
            std::string::npos)
      << appended.status().ToString();
  auto altered = stale.SetProperties({{"timelake.retention", "30d"}});
  ASSERT_FALSE(altered.ok());
  EXPECT_EQ(KindOf(altered.status()), ErrorKind::kNotFound)
      << altered.status().ToString();
  Flush();
  EXPECT_EQ(Files(), before);
  TL_ASSERT_OK_AND_ASSIGN(auto loaded, lake.LoadTable("t"));
  EXPECT_EQ(loaded.version(), 1);
  EXPECT_TRUE(loaded.schema()->Equals(*fresh.schema()));
}

// Memory only: not a test of the backends.
TEST(EndToEndMemory, MemoryWarehouse) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, Lake::Open("memory://"));
  EXPECT_EQ(lake.url(), "memory://");
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("m", *Schema(), TsOptions()));
  EXPECT_EQ(table.location(), "memory:///default/m");
  TL_ASSERT_OK(table.Append({Batch({kT0, kT0 + 1}, {1, 2}, {1, 2})}).status());
  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(auto rows, session.Sql("SELECT count(*) FROM m"));
  EXPECT_EQ(ScalarInt(rows, 0), 2);
  Flush();  // background writes end with the test, as in EndToEnd's TearDown
}

// Memory only: interrupting is the engine's, not a backend's.
TEST(EndToEndMemory, InterruptFromAnotherThreadCancelsAStreamReadAndTheSessionGoesOn) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, Lake::Open("memory://"));
  Session session(lake);
  TL_ASSERT_OK(session.Sql("SET timelake.read_dedup = false").status());
  // Minutes of work before the first batch; the filter keeps DataFusion from
  // answering from statistics.
  TL_ASSERT_OK_AND_ASSIGN(
      auto reader,
      session.SqlStream("SELECT count(*) FROM range(100000000000) WHERE value % 7 = 3"));
  std::thread interrupter([&session] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    session.Interrupt();
  });
  std::shared_ptr<arrow::RecordBatch> batch;
  const arrow::Status status = reader->ReadNext(&batch);
  interrupter.join();
  EXPECT_TRUE(status.IsCancelled()) << status.ToString();
  EXPECT_EQ(KindOf(status), ErrorKind::kCancelled);
  EXPECT_NE(status.message().find("interrupted"), std::string::npos) << status.message();
  // The stream has ended; the next statement clears the interrupt and sees
  // the session's SET.
  TL_ASSERT_OK(reader->ReadNext(&batch));
  EXPECT_EQ(batch, nullptr);
  TL_ASSERT_OK_AND_ASSIGN(auto shown, session.Sql("SHOW timelake.read_dedup"));
  ASSERT_EQ(shown->num_rows(), 1);
  auto value = shown->GetColumnByName("value")->GetScalar(0);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ((*value)->ToString(), "false");
  // An interrupt made while nothing runs is forgotten by the next statement.
  session.Interrupt();
  TL_ASSERT_OK_AND_ASSIGN(auto one, session.Sql("SELECT 1 AS one"));
  EXPECT_EQ(ScalarInt(one, 0), 1);
}

TEST_P(EndToEnd, BadSqlIsAnInvalidErrorNamingTheProblem) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  Session session(lake);
  auto r = session.Sql("SELEC 1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(KindOf(r.status()), ErrorKind::kInvalid);
  auto missing = session.Sql("SELECT * FROM no_such_table");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_table"), std::string::npos)
      << missing.status().message();
}

// Read errors keep their kind through the engine: a manifest that does not
// parse while a query is planned is kCorrupt, a data file that is gone while
// it runs is kNotFound, each naming the object (not kInvalid).
TEST_P(EndToEnd, ReadErrorsKeepTheirKindThroughSql) {
  TableOptions opts = TsOptions();
  opts.properties["timelake.auto-maintain"] = "false";
  {
    TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
    for (const char* name : {"manifest", "datafile"}) {
      TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable(name, *Schema(), opts));
      TL_ASSERT_OK(table.Append({Batch({kT0, kT0 + 1}, {1, 2}, {1, 2})}).status());
    }
    Flush();
  }
  std::string manifest, data_file;
  for (const auto& key : Files()) {
    // Without the head objects, planning reads the manifests themselves.
    if (key.ends_with("/metadata/timelake-head")) {
      TL_ASSERT_OK(warehouse_.store().Delete(key));
    }
    if (key.starts_with("default/manifest/metadata/") && key.find("-m") != key.npos &&
        key.ends_with(".avro")) {
      manifest = key;
    }
    if (key.starts_with("default/datafile/data/") && key.ends_with(".parquet")) {
      data_file = key;
    }
  }
  ASSERT_FALSE(manifest.empty());
  ASSERT_FALSE(data_file.empty());
  TL_ASSERT_OK(warehouse_.store().Put(manifest, "Obj\x01 not a manifest"));
  TL_ASSERT_OK(warehouse_.store().Delete(data_file));

  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());  // caches nothing of the above
  Session session(lake);
  auto corrupt = session.Sql("SELECT count(*) FROM manifest");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(KindOf(corrupt.status()), ErrorKind::kCorrupt) << corrupt.status().ToString();
  EXPECT_FALSE(IsRetryable(corrupt.status()));
  const std::string manifest_name = manifest.substr(manifest.rfind('/') + 1);
  EXPECT_NE(corrupt.status().message().find(manifest_name), std::string::npos)
      << corrupt.status().message();

  auto gone = session.Sql("SELECT * FROM datafile");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(KindOf(gone.status()), ErrorKind::kNotFound) << gone.status().ToString();
  const std::string data_name = data_file.substr(data_file.rfind('/') + 1);
  EXPECT_NE(gone.status().message().find(data_name), std::string::npos)
      << gone.status().message();
  // The queries that do not touch the damage still run.
  TL_ASSERT_OK(session.Sql("SELECT 1").status());
}

TEST_P(EndToEnd, ConcurrentAppendersLoseNoRows) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK(lake.CreateTable("c", *Schema(), TsOptions()).status());
  constexpr int kThreads = 4, kAppends = 5;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int w = 0; w < kThreads; ++w) {
    threads.emplace_back([&, w] {
      auto t = lake.LoadTable("c");
      if (!t.ok()) {
        ++failures;
        return;
      }
      Table table = *t;
      for (int i = 0; i < kAppends; ++i) {
        AppendOptions o;
        o.max_commit_attempts = 50;
        o.auto_maintain = false;  // one commit per append: the count below
        auto r = table.Append({Batch({kT0 + i}, {w}, {double(i)})}, o);
        if (!r.ok()) {
          ++failures;
          ADD_FAILURE() << r.status().ToString();
          return;
        }
        table = r->first;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(
      auto rows, session.Sql("SELECT count(*), count(DISTINCT device_id) FROM c"));
  EXPECT_EQ(ScalarInt(rows, 0), kThreads * kAppends);
  EXPECT_EQ(ScalarInt(rows, 1), kThreads);
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.LoadTable("c"));
  EXPECT_EQ(table.version(), 1 + kThreads * kAppends);
}

TEST_P(EndToEnd, SetPropertiesIsAMetadataOnlyCommitThatRebases) {
  TL_ASSERT_OK_AND_ASSIGN(auto lake, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake.CreateTable("p", *Schema(), TsOptions()));
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({Batch({kT0}, {1}, {1.0})}));
  const auto snapshot = appended.first.current_snapshot_id();

  // `table` is stale (version 1): the change rebases over the append.
  TL_ASSERT_OK_AND_ASSIGN(
      auto altered,
      table.SetProperties({{"owner", "ops"}, {"TIMELAKE.Compression_Level", "5"}}));
  EXPECT_EQ(altered.version(), 3);
  EXPECT_EQ(altered.current_snapshot_id(), snapshot);  // no new snapshot
  EXPECT_EQ(altered.properties().at("owner"), "ops");
  EXPECT_EQ(altered.properties().at("timelake.compression-level"), "5");
  EXPECT_EQ(altered.Info().rows, 1);

  TL_ASSERT_OK_AND_ASSIGN(auto removed, altered.SetProperties({{"owner", std::nullopt}}));
  EXPECT_EQ(removed.properties().count("owner"), 0u);
  EXPECT_EQ(removed.version(), 4);

  Flush();
  const auto before = Files();
  for (const auto& bad : std::vector<std::pair<std::string, std::string>>{
           {"timelake.no-such-thing", "1"},
           {"timelake.time-column", "other"},
           {"timelake.format-version", "9.0.0"},
           {"timelake.compression-level", "99"},
           {"timelake.dedup", "maybe"}}) {
    auto r = removed.SetProperties({{bad.first, bad.second}});
    ASSERT_FALSE(r.ok()) << bad.first;
    EXPECT_EQ(KindOf(r.status()), ErrorKind::kInvalid) << r.status().ToString();
    EXPECT_NE(r.status().message().find("altering default.p"), std::string::npos);
  }
  Flush();
  EXPECT_EQ(Files(), before);
  Session session(lake);
  TL_ASSERT_OK_AND_ASSIGN(auto rows, session.Sql("SELECT count(*) FROM p"));
  EXPECT_EQ(ScalarInt(rows, 0), 1);
}

TEST_P(EndToEnd, QueriesSeeOwnCommitsAtOnceAndOthersAfterTheCheckInterval) {
  TL_ASSERT_OK_AND_ASSIGN(auto mine, OpenLake());
  TL_ASSERT_OK_AND_ASSIGN(auto other, OpenLake());
  TableOptions opts = TsOptions();
  opts.properties["timelake.version-check-interval"] = "1h";
  opts.properties["timelake.auto-maintain"] = "false";  // versions counted below
  TL_ASSERT_OK_AND_ASSIGN(auto table, mine.CreateTable("v", *Schema(), opts));
  Session session(mine);
  auto count = [&]() -> int64_t {
    auto rows = session.Sql("SELECT count(*) FROM v");
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok()
               ? std::static_pointer_cast<arrow::Int64Array>((*rows)->column(0)->chunk(0))
                     ->Value(0)
               : -1;
  };
  EXPECT_EQ(count(), 0);
  // Own commit (same lake): visible at once.
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({Batch({kT0}, {1}, {1.0})}));
  EXPECT_EQ(count(), 1);
  // Another lake's commit: this lake keeps reading the version it loaded
  // for the table's version-check-interval (1h here)...
  TL_ASSERT_OK_AND_ASSIGN(auto theirs, other.LoadTable("v"));
  TL_ASSERT_OK(theirs.Append({Batch({kT0 + 1}, {1}, {2.0})}).status());
  EXPECT_EQ(count(), 1);
  // ...but a Refresh()ed handle sees it, and so does a lake whose interval
  // is 0: the property is changed through `other`, then `mine` reloads.
  TL_ASSERT_OK_AND_ASSIGN(auto fresh, appended.first.Refresh());
  EXPECT_EQ(fresh.version(), 3);
  EXPECT_EQ(count(), 2);  // the Refresh() loaded the newest version into the cache
  TL_ASSERT_OK_AND_ASSIGN(auto latest_other, other.LoadTable("v"));
  TL_ASSERT_OK_AND_ASSIGN(
      auto zero, latest_other.SetProperties({{"timelake.version-check-interval", "0s"}}));
  TL_ASSERT_OK(zero.Append({Batch({kT0 + 2}, {1}, {3.0})}).status());
  TL_ASSERT_OK(mine.LoadTable("v").status());  // loads v5 (interval 0) into mine
  TL_ASSERT_OK(zero.Refresh().status());
  TL_ASSERT_OK_AND_ASSIGN(auto again, other.LoadTable("v"));
  TL_ASSERT_OK(again.Append({Batch({kT0 + 3}, {1}, {4.0})}).status());
  EXPECT_EQ(count(), 4);  // interval 0: every query checks for a newer version
}

INSTANTIATE_TEST_SUITE_P(Backends, EndToEnd, ::timelake::testing::kSharedBackends,
                         ::timelake::testing::BackendParamName);

}  // namespace
}  // namespace timelake
