// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A table's life through the public API (issue #18), on a local warehouse
// and on an S3 one: schema evolution by field id (add, rename, widen; the
// refusals that leave storage as it was), time travel in SQL (as_of,
// snapshots), and Table::Upgrade of a plain table (dry run, adoption, a
// second run that finds nothing to do, rollback to before it).

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"
#include "timelake/testing/test_warehouse.h"
#include "timelake/timelake.h"

namespace timelake {
namespace {

using ::timelake::testing::Backend;
using ::timelake::testing::ExpectError;
using ::timelake::testing::TestWarehouse;

constexpr int64_t kHourUs = 3600LL * 1000000;
constexpr int64_t kDayUs = 24 * kHourUs;
constexpr int64_t kT0 = 1767225600LL * 1000000;  // 2026-01-01T00:00:00Z

std::shared_ptr<arrow::DataType> Utc() {
  return arrow::timestamp(arrow::TimeUnit::MICRO, "UTC");
}

// A column of a numeric or timestamp type from doubles (nullopt: null):
// floating types from the doubles, the others from their integer values.
std::shared_ptr<arrow::Array> Column(const std::shared_ptr<arrow::DataType>& type,
                                     const std::vector<std::optional<double>>& values) {
  const bool floating = arrow::is_floating(type->id());
  arrow::DoubleBuilder doubles;
  arrow::Int64Builder ints;
  for (const auto& v : values) {
    if (floating) {
      EXPECT_TRUE((v ? doubles.Append(*v) : doubles.AppendNull()).ok());
    } else {
      EXPECT_TRUE((v ? ints.Append(static_cast<int64_t>(*v)) : ints.AppendNull()).ok());
    }
  }
  std::shared_ptr<arrow::Array> built =
      floating ? doubles.Finish().ValueOrDie() : ints.Finish().ValueOrDie();
  auto cast = arrow::compute::Cast(*built, type);
  EXPECT_TRUE(cast.ok()) << cast.status().ToString();
  return *cast;
}

std::shared_ptr<arrow::Array> Times(const std::vector<int64_t>& micros) {
  arrow::TimestampBuilder b(Utc(), arrow::default_memory_pool());
  EXPECT_TRUE(b.AppendValues(micros).ok());
  return *b.Finish();
}

std::shared_ptr<arrow::Array> Strings(const std::vector<std::string>& values) {
  arrow::StringBuilder b;
  EXPECT_TRUE(b.AppendValues(values).ok());
  return *b.Finish();
}

// Every object of the warehouse with its size: what "nothing changed on
// storage" compares.
std::map<std::string, uint64_t> Listing(const TestWarehouse& w) {
  std::map<std::string, uint64_t> out;
  auto listing = w.store().List("", /*delimiter=*/false);
  EXPECT_TRUE(listing.ok()) << listing.status().ToString();
  if (listing.ok()) {
    for (const auto& o : listing->objects) out[o.key] = o.size;
  }
  return out;
}

// The rows of a query as text, one line per row, sorted.
std::vector<std::string> Rows(Session& session, const std::string& sql) {
  auto result = session.Sql(sql);
  EXPECT_TRUE(result.ok()) << sql << ": " << result.status().ToString();
  std::vector<std::string> rows;
  if (!result.ok()) return rows;
  auto table = (*result)->CombineChunks().ValueOrDie();
  for (int64_t r = 0; r < table->num_rows(); ++r) {
    std::string line;
    for (int c = 0; c < table->num_columns(); ++c) {
      auto scalar = table->column(c)->GetScalar(r).ValueOrDie();
      line += (c ? "|" : "") + scalar->ToString();
    }
    rows.push_back(line);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

int64_t Count(Session& session, const std::string& sql) {
  auto result = session.Sql(sql);
  EXPECT_TRUE(result.ok()) << sql << ": " << result.status().ToString();
  if (!result.ok()) return -1;
  auto scalar = (*result)->column(0)->GetScalar(0).ValueOrDie();
  return std::static_pointer_cast<arrow::Int64Scalar>(scalar)->value;
}

class Lifecycle : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(arrow::compute::Initialize().ok());
    TL_ASSERT_OK_AND_ASSIGN(warehouse_, TestWarehouse::Make(GetParam(), "life"));
    TL_ASSERT_OK_AND_ASSIGN(lake_, Lake::Open(warehouse_.url(), warehouse_.options()));
  }
  void TearDown() override {
    Flush();
    warehouse_.Remove();
  }

  std::map<std::string, uint64_t> Stored() const {
    Flush();
    return Listing(warehouse_);
  }

  TestWarehouse warehouse_;
  Lake lake_ = Lake::Open("memory://").ValueOrDie();
};

// readings(time, device, temp float32, count int32), series key device.
std::shared_ptr<arrow::Schema> ReadingsSchema() {
  return arrow::schema(
      {arrow::field("time", Utc()), arrow::field("device", arrow::utf8()),
       arrow::field("temp", arrow::float32()), arrow::field("count", arrow::int32())});
}

TEST_P(Lifecycle, SchemaEvolvesByFieldIdAndOlderFilesReadUnderTheNewSchema) {
  TableOptions options;
  options.time_column = "time";
  options.series_key = {"device"};
  TL_ASSERT_OK_AND_ASSIGN(auto table,
                          lake_.CreateTable("ev.readings", *ReadingsSchema(), options));
  // Before: day 0, two devices.
  auto before = arrow::RecordBatch::Make(
      ReadingsSchema(), 2,
      {Times({kT0, kT0 + kHourUs}), Strings({"a", "b"}),
       Column(arrow::float32(), {1.5, 2.5}), Column(arrow::int32(), {10, 20})});
  AppendOptions no_maintain;
  no_maintain.auto_maintain = false;
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({before}, no_maintain));
  table = appended.first;
  const int64_t before_snapshot = *table.current_snapshot_id();

  TL_ASSERT_OK_AND_ASSIGN(
      auto evolved,
      table.EvolveSchema({SchemaChange::RenameColumn("temp", "temperature"),
                          SchemaChange::WidenColumn("temperature", arrow::float64()),
                          SchemaChange::WidenColumn("count", arrow::int64()),
                          SchemaChange::AddColumn("humidity", arrow::float64())}));
  // Metadata only: a new version, the same snapshot.
  EXPECT_EQ(evolved.version(), table.version() + 1);
  EXPECT_EQ(evolved.current_snapshot_id(), before_snapshot);
  const auto schema = evolved.schema();
  ASSERT_EQ(schema->num_fields(), 6);
  EXPECT_EQ(schema->field(2)->name(), "temperature");
  EXPECT_TRUE(schema->field(2)->type()->Equals(arrow::float64()));
  EXPECT_TRUE(schema->field(3)->type()->Equals(arrow::int64()));
  EXPECT_EQ(schema->field(5)->name(), "humidity");
  // Ids stay with the columns; the added one takes the next id.
  EXPECT_EQ(schema->field(2)->metadata()->Get("PARQUET:field_id").ValueOrDie(),
            table.schema()->field(2)->metadata()->Get("PARQUET:field_id").ValueOrDie());
  EXPECT_EQ(schema->field(5)->metadata()->Get("PARQUET:field_id").ValueOrDie(), "6");

  // The index written before the evolution answers in the new schema.
  {
    Session session(lake_);
    TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("ev.readings"));
    ASSERT_EQ(latest->num_rows(), 2);
    ASSERT_TRUE(latest->schema()->Equals(*schema)) << latest->schema()->ToString();
    EXPECT_EQ(latest->GetColumnByName("temperature")->null_count(), 0)
        << latest->ToString();
    EXPECT_EQ(latest->GetColumnByName("humidity")->null_count(), 2) << latest->ToString();
    // From the index, not a scan (a scan would give the same rows: every
    // reader of an index falls back to one when it cannot read it).
    TL_ASSERT_OK_AND_ASSIGN(
        auto plan, session.ExplainAnalyze(
                       "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY device "
                       "ORDER BY time DESC) AS rn FROM ev.readings) WHERE rn = 1"));
    EXPECT_EQ(plan.find("timelake scan:"), std::string::npos) << plan;
  }

  // After: day 1, with the new column, by the new names.
  auto after_schema =
      arrow::schema({arrow::field("time", Utc()), arrow::field("device", arrow::utf8()),
                     arrow::field("temperature", arrow::float64()),
                     arrow::field("count", arrow::int64()),
                     arrow::field("humidity", arrow::float64())});
  auto after = arrow::RecordBatch::Make(
      after_schema, 2,
      {Times({kT0 + kDayUs, kT0 + kDayUs + kHourUs}), Strings({"a", "c"}),
       Column(arrow::float64(), {3.25, 4.25}), Column(arrow::int64(), {5000000000.0, 40}),
       Column(arrow::float64(), {0.5, 0.75})});
  TL_ASSERT_OK_AND_ASSIGN(appended, evolved.Append({after}, no_maintain));
  table = appended.first;

  Session session(lake_);
  const std::vector<std::string> want = {"a|1.5|10|null", "a|3.25|5000000000|0.5",
                                         "b|2.5|20|null", "c|4.25|40|0.75"};
  const std::string query =
      "SELECT device, temperature, count, humidity FROM ev.readings";
  EXPECT_EQ(Rows(session, query), want);
  // Filters on evolved columns: by the new name, over files of both schemas.
  EXPECT_EQ(Count(session, "SELECT count(*) FROM ev.readings WHERE count >= 20"), 3);
  EXPECT_EQ(Count(session, "SELECT count(*) FROM ev.readings WHERE temperature < 3"), 2);
  EXPECT_EQ(Count(session, "SELECT count(*) FROM ev.readings WHERE humidity IS NULL"), 2);
  // The newest row per series: device b's is from before the rename, in the
  // index written then.
  TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("ev.readings"));
  auto latest_rows = Rows(session,
                          "SELECT device, temperature, humidity FROM (SELECT *, "
                          "row_number() OVER (PARTITION BY device ORDER BY time DESC) AS "
                          "rn FROM ev.readings) WHERE rn = 1");
  EXPECT_EQ(latest_rows,
            (std::vector<std::string>{"a|3.25|0.5", "b|2.5|null", "c|4.25|0.75"}));
  ASSERT_EQ(latest->num_rows(), 3);
  auto temps = latest->GetColumnByName("temperature");
  ASSERT_NE(temps, nullptr);
  EXPECT_EQ(temps->null_count(), 0) << latest->ToString();

  // Maintenance rewrites the files written before the rename, also where a
  // partition holds only one (day 0's, day 1's is after the rename): then
  // readers that match columns by name (Timelake 0.7) read them right too.
  MaintainOptions maintain;
  maintain.orphan_age = std::chrono::milliseconds(0);
  TL_ASSERT_OK_AND_ASSIGN(auto maintained, table.Maintain(maintain));
  EXPECT_EQ(maintained.second.files_rewritten, 1);
  EXPECT_EQ(Rows(session, query), want);
  TL_ASSERT_OK_AND_ASSIGN(auto again, maintained.first.Maintain(maintain));
  EXPECT_EQ(again.second.files_rewritten, 0);

  // As of the snapshot before the evolution: its rows in its schema.
  EXPECT_EQ(Rows(session, "SELECT device, temp, count FROM as_of('ev.readings', " +
                              std::to_string(before_snapshot) + ")"),
            (std::vector<std::string>{"a|1.5|10", "b|2.5|20"}));
}

TEST_P(Lifecycle, BadSchemaChangesAreRefusedAndChangeNothing) {
  TableOptions options;
  options.time_column = "time";
  options.series_key = {"device"};
  TL_ASSERT_OK_AND_ASSIGN(auto table,
                          lake_.CreateTable("ev.bad", *ReadingsSchema(), options));
  auto batch = arrow::RecordBatch::Make(
      ReadingsSchema(), 1,
      {Times({kT0}), Strings({"a"}), Column(arrow::float32(), {1}),
       Column(arrow::int32(), {1})});
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}));
  table = appended.first;
  const auto stored = Stored();
  struct Case {
    SchemaChange change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {SchemaChange::WidenColumn("time", arrow::int64()),
       "widening column 'time': it is the time column, whose type is fixed"},
      {SchemaChange::RenameColumn("temp", "count"),
       "renaming column 'temp' to 'count': the table has a column 'count' already"},
      {SchemaChange::RenameColumn("time", "ts"),
       "renaming column 'time' to 'ts': it is the time column"},
      {SchemaChange::RenameColumn("device", "sensor"), "it is a series key column"},
      {SchemaChange::WidenColumn("device", arrow::large_utf8()),
       "it is a series key column, whose type is fixed"},
      {SchemaChange::WidenColumn("count", arrow::int32()),
       "widening column 'count' from int to int: not a widening"},
      {SchemaChange::WidenColumn("temp", arrow::int64()),
       "widening column 'temp' from float to long: not a widening"},
      {SchemaChange::AddColumn("temp", arrow::float64()),
       "adding column 'temp': the table has a column 'temp' already"},
      {SchemaChange::AddColumn("tags", arrow::list(arrow::utf8())), "is nested"},
      {SchemaChange::RenameColumn("nope", "x"),
       "renaming column 'nope' to 'x': the table has no such column"},
      {SchemaChange::RenameColumn("_ingest_ts", "ingested"),
       "it is the insertion-time column"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    // Valid changes before a bad one commit nothing either.
    auto changed =
        table.EvolveSchema({SchemaChange::AddColumn("fine", arrow::float64()), c.change});
    ExpectError(changed.status(), ErrorKind::kInvalid, c.message);
    EXPECT_NE(changed.status().message().find("changing the schema of ev.bad"),
              std::string::npos)
        << changed.status().ToString();
  }
  ExpectError(table.EvolveSchema({}).status(), ErrorKind::kInvalid, "no change given");
  // Property edits in the same commit (`alter` with both): a bad one refuses
  // the schema change too, whether its key or its value is wrong.
  const auto fine = SchemaChange::AddColumn("fine", arrow::float64());
  ExpectError(table.EvolveSchema({fine}, {{"timelake.chunk", "hour"}}).status(),
              ErrorKind::kInvalid, "fixed when the table is created");
  ExpectError(table.EvolveSchema({fine}, {{"timelake.row-group-rows", "10"}}).status(),
              ErrorKind::kInvalid,
              "timelake.row-group-rows = '10': expected at least 1000");
  EXPECT_EQ(Stored(), stored);
  TL_ASSERT_OK_AND_ASSIGN(auto loaded, lake_.LoadTable("ev.bad"));
  EXPECT_EQ(loaded.version(), table.version());
}

TEST_P(Lifecycle, TimeTravelReadsASnapshotByIdOrTimeAndListsThem) {
  TableOptions options;
  options.time_column = "time";
  options.series_key = {"device"};
  TL_ASSERT_OK_AND_ASSIGN(auto table,
                          lake_.CreateTable("tt.m", *ReadingsSchema(), options));
  AppendOptions no_maintain;
  no_maintain.auto_maintain = false;
  // Snapshot i adds device d<i> on day i (a partition each: pruning shows).
  for (int i = 0; i < 3; ++i) {
    auto batch = arrow::RecordBatch::Make(
        ReadingsSchema(), 2,
        {Times({kT0 + i * kDayUs, kT0 + i * kDayUs + 1}),
         Strings({"d" + std::to_string(i), "d" + std::to_string(i)}),
         Column(arrow::float32(), {1.0 * i, 1.0 * i}), Column(arrow::int32(), {i, i})});
    TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}, no_maintain));
    table = appended.first;
  }
  const auto snapshots = table.Snapshots();
  ASSERT_EQ(snapshots.size(), 3u);
  Session session(lake_);
  for (size_t i = 0; i < snapshots.size(); ++i) {
    const std::string at = std::to_string(snapshots[i].snapshot_id);
    EXPECT_EQ(Count(session, "SELECT count(*) FROM as_of('tt.m', " + at + ")"),
              2 * static_cast<int64_t>(i + 1));
    // By the time it was committed (the snapshot current then).
    EXPECT_EQ(Count(session,
                    "SELECT count(*) FROM as_of('tt.m', "
                    "to_timestamp_millis(" +
                        std::to_string(snapshots[i].timestamp_ms) + "))"),
              2 * static_cast<int64_t>(i + 1));
    // The newest row per series of that snapshot, from its index.
    EXPECT_EQ(Count(session,
                    "SELECT count(*) FROM (SELECT *, row_number() OVER (PARTITION BY "
                    "device ORDER BY time DESC) AS rn FROM as_of('tt.m', " +
                        at + ")) WHERE rn = 1"),
              static_cast<int64_t>(i + 1));
  }
  // Pruning still works: one day of the second snapshot reads one file.
  TL_ASSERT_OK_AND_ASSIGN(
      auto plan,
      session.ExplainAnalyze("SELECT count(*) FROM as_of('tt.m', " +
                             std::to_string(snapshots[1].snapshot_id) +
                             ") WHERE time >= TIMESTAMP '2026-01-02 00:00:00+00:00'"));
  EXPECT_NE(plan.find("2 live files, 1 pruned, 1 read"), std::string::npos) << plan;
  // snapshots(): one row per snapshot, the current one marked.
  EXPECT_EQ(
      Rows(session, "SELECT operation, rows, current FROM snapshots('tt.m')"),
      (std::vector<std::string>{"append|2|false", "append|4|false", "append|6|true"}));
  // Errors: an unknown snapshot, a time before the first, a bad argument.
  auto unknown = session.Sql("SELECT * FROM as_of('tt.m', 42)");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("has no snapshot 42"), std::string::npos)
      << unknown.status().ToString();
  auto early =
      session.Sql("SELECT * FROM as_of('tt.m', TIMESTAMP '2000-01-01 00:00:00')");
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("had no snapshot at 2000-01-01 00:00:00 UTC"),
            std::string::npos)
      << early.status().ToString();
  auto bad = session.Sql("SELECT * FROM as_of('tt.m', true)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(KindOf(bad.status()), ErrorKind::kInvalid) << bad.status().ToString();
  auto missing = session.Sql("SELECT * FROM as_of('tt.nope', 1)");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("table 'tt.nope' not found"),
            std::string::npos)
      << missing.status().ToString();
}

// A plain table (as another engine writes one: no contract, several small
// unsorted files) adopted as a time-series table.
TEST_P(Lifecycle, UpgradeAdoptsAPlainTableAndASecondRunFindsNothingToDo) {
  auto schema =
      arrow::schema({arrow::field("ts", Utc()), arrow::field("host", arrow::utf8()),
                     arrow::field("v", arrow::float64())});
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake_.CreateTable("up.plain", *schema));
  EXPECT_FALSE(table.time_column().has_value());
  std::vector<std::string> want;
  for (int i = 0; i < 3; ++i) {
    // Unsorted within each batch, two days.
    std::vector<int64_t> times = {kT0 + kDayUs + i, kT0 + i, kT0 + kDayUs + 10 + i};
    std::vector<std::string> hosts = {"h2", "h1", "h1"};
    auto batch =
        arrow::RecordBatch::Make(schema, 3,
                                 {Times(times), Strings(hosts),
                                  Column(arrow::float64(), {1.0 * i, 2.0 * i, 3.0 * i})});
    TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}));
    table = appended.first;
  }
  const int64_t before_snapshot = *table.current_snapshot_id();
  Session session(lake_);
  const std::string query = "SELECT ts, host, v FROM up.plain";
  const auto rows_before = Rows(session, query);
  ASSERT_EQ(rows_before.size(), 9u);

  UpgradeOptions options;
  options.time_column = "ts";
  options.series_key = {"host"};
  options.dry_run = true;
  const auto stored = Stored();
  TL_ASSERT_OK_AND_ASSIGN(auto dry, table.Upgrade(options));
  EXPECT_EQ(Stored(), stored);
  std::vector<UpgradeStep::Kind> kinds;
  for (const auto& s : dry.second.steps) {
    kinds.push_back(s.kind);
    EXPECT_FALSE(s.done);
  }
  using K = UpgradeStep::Kind;
  EXPECT_EQ(kinds,
            (std::vector<K>{K::kProtectSnapshots, K::kAddContract,
                            K::kBuildLastValueIndex, K::kRewriteFiles, K::kWriteHead}));
  EXPECT_NE(dry.second.steps[1].description.find(
                "time column ts, series key host, unpartitioned, dedup on"),
            std::string::npos)
      << dry.second.steps[1].description;
  EXPECT_NE(dry.second.steps[3].description.find("3 files (3 unsorted"),
            std::string::npos)
      << dry.second.steps[3].description;

  options.dry_run = false;
  TL_ASSERT_OK_AND_ASSIGN(auto upgraded, table.Upgrade(options));
  const auto& report = upgraded.second;
  kinds.clear();
  for (const auto& s : report.steps) {
    kinds.push_back(s.kind);
    EXPECT_TRUE(s.done);
  }
  EXPECT_EQ(kinds,
            (std::vector<K>{K::kProtectSnapshots, K::kAddContract,
                            K::kBuildLastValueIndex, K::kRewriteFiles, K::kWriteHead}));
  EXPECT_EQ(report.files_rewritten, 3);
  table = upgraded.first;
  EXPECT_EQ(table.time_column(), "ts");
  EXPECT_EQ(table.series_key(), std::vector<std::string>{"host"});
  EXPECT_EQ(table.schema()->field(3)->name(), "_ingest_ts");
  EXPECT_TRUE(table.schema()->field(3)->nullable());
  EXPECT_GT(std::stoll(table.properties().at("timelake.keep-snapshots-until")), 0);
  EXPECT_EQ(Rows(session, query), rows_before);
  TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("up.plain"));
  EXPECT_EQ(latest->num_rows(), 2);

  // The second run finds nothing to do and commits nothing.
  const auto done = Stored();
  TL_ASSERT_OK_AND_ASSIGN(auto again, table.Upgrade(options));
  EXPECT_TRUE(again.second.steps.empty());
  EXPECT_EQ(Stored(), done);

  // Appends now carry insertion times and follow the contract.
  auto batch = arrow::RecordBatch::Make(
      schema, 1,
      {Times({kT0 + 2 * kDayUs}), Strings({"h1"}), Column(arrow::float64(), {9})});
  TL_ASSERT_OK_AND_ASSIGN(auto appended, again.first.Append({batch}));
  EXPECT_EQ(Count(session, "SELECT count(*) FROM up.plain WHERE _ingest_ts IS NOT NULL"),
            1);
  // A time is needed on every row now.
  auto null_time = arrow::RecordBatch::Make(
      schema, 1,
      {Column(Utc(), {std::nullopt}), Strings({"h1"}), Column(arrow::float64(), {1})});
  ExpectError(appended.first.Append({null_time}).status(), ErrorKind::kInvalid,
              "time column 'ts' may not be null, but 1 of 1 rows are null");

  // Rollback to the snapshot before the upgrade reads the old rows.
  TL_ASSERT_OK_AND_ASSIGN(auto rolled, appended.first.Rollback(before_snapshot));
  EXPECT_EQ(Rows(session, query), rows_before);
}

TEST_P(Lifecycle, UpgradeRefusesWhatCannotBeAdoptedAndWritesNothing) {
  auto schema =
      arrow::schema({arrow::field("ts", Utc()), arrow::field("n", arrow::int64()),
                     arrow::field("host", arrow::utf8())});
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake_.CreateTable("up.bad", *schema));
  auto batch =
      arrow::RecordBatch::Make(schema, 2,
                               {Column(Utc(), {1.0 * kT0, std::nullopt}),
                                Column(arrow::int64(), {1, 2}), Strings({"a", "b"})});
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}));
  table = appended.first;
  const auto stored = Stored();
  struct Case {
    std::optional<std::string> time;
    std::vector<std::string> series;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"when",
       {},
       "the table has no column 'when' for the time column (its columns: ts, n, host)"},
      {"n", {}, "column 'n' is int64, not a timestamp"},
      {"ts", {"nope"}, "the table has no column 'nope' for the series key"},
      {"ts", {"host", "host"}, "'host' is in the series key twice"},
      {"ts", {"host"}, "time column 'ts' is null in 1 rows of 1 data files"},
      {std::nullopt, {"host"}, "a series key needs a time column"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    for (bool dry_run : {true, false}) {
      UpgradeOptions options;
      options.time_column = c.time;
      options.series_key = c.series;
      options.dry_run = dry_run;
      auto upgraded = table.Upgrade(options);
      ExpectError(upgraded.status(), ErrorKind::kInvalid, c.message);
      EXPECT_NE(upgraded.status().message().find("upgrading up.bad"), std::string::npos);
    }
  }
  EXPECT_EQ(Stored(), stored);
}

INSTANTIATE_TEST_SUITE_P(Backends, Lifecycle, ::timelake::testing::kSharedBackends,
                         ::timelake::testing::BackendParamName);

}  // namespace
}  // namespace timelake
