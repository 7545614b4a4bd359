// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/maintain/maintain.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/initialize.h>
#include <arrow/io/memory.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>

#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/read/catalog.h"
#include "timelake/read/session.h"
#include "timelake/storage/store.h"
#include "timelake/testing/matchers.h"
#include "timelake/testing/test_warehouse.h"
#include "timelake/timelake.h"
#include "timelake/util/clock.h"
#include "timelake/write/lvi.h"

namespace timelake::internal {
namespace {

constexpr int64_t kHourUs = 3600LL * 1000000;
constexpr int64_t kDayUs = 24 * kHourUs;
constexpr int64_t kT0 = 1767225600LL * 1000000;  // 2026-01-01T00:00:00Z

TEST(MaintainRules, TiersAreSixtyFourKibTimesPowersOfFour) {
  EXPECT_EQ(Tier(64 << 10), 0);
  EXPECT_EQ(Tier((256 << 10) - 1), 0);
  EXPECT_EQ(Tier(256 << 10), 1);
  EXPECT_EQ(Tier(1 << 20), 2);
  EXPECT_EQ(Tier(128LL << 20), 5);
  EXPECT_EQ(Tier((64 << 10) - 1), -1);
  EXPECT_EQ(Tier(16 << 10), -1);
  EXPECT_EQ(Tier((16 << 10) - 1), -2);
  EXPECT_EQ(Tier(2400), -3);  // 1 KiB .. 4 KiB
  EXPECT_EQ(Tier(1), -8);
  EXPECT_EQ(Tier(0), -9);
}

TEST(MaintainRules, PartitionRanges) {
  // 2026-01-01 is day 20454 and month 672 since the epoch.
  EXPECT_EQ(PartitionRange(20454, Chunk::kDay), std::make_pair(kT0, kT0 + kDayUs));
  EXPECT_EQ(PartitionRange(20454 * 24 + 5, Chunk::kHour),
            std::make_pair(kT0 + 5 * kHourUs, kT0 + 6 * kHourUs));
  EXPECT_EQ(PartitionRange(672, Chunk::kMonth), std::make_pair(kT0, kT0 + 31 * kDayUs));
  // February 2026 has 28 days; December 1969 ends at the epoch.
  EXPECT_EQ(PartitionRange(673, Chunk::kMonth).second -
                PartitionRange(673, Chunk::kMonth).first,
            28 * kDayUs);
  EXPECT_EQ(PartitionRange(-1, Chunk::kMonth).second, 0);
}

format::TableMetadata WithSnapshots(const std::vector<int64_t>& timestamps_ms) {
  format::TableMetadata m;
  int64_t seq = 0;
  for (int64_t ts : timestamps_ms) {
    format::Snapshot s;
    s.snapshot_id = 100 + seq;
    s.sequence_number = ++seq;
    s.timestamp_ms = ts;
    m.AddSnapshot(s);
  }
  return m;
}

TEST(MaintainRules, ExpiryKeepsMinSnapshotsAndRespectsMaxAndRetention) {
  constexpr int64_t kDayMs = 86400000;
  const int64_t now = 100 * kDayMs;
  // Ten snapshots, one a day, the newest today.
  std::vector<int64_t> ts;
  for (int i = 9; i >= 0; --i) ts.push_back(now - i * kDayMs);
  const auto m = WithSnapshots(ts);
  MaintainRules rules;
  rules.snapshot_retention = std::chrono::milliseconds(3 * kDayMs + 1);
  rules.min_snapshots = 1;
  rules.max_snapshots = 100;
  // Older than 3 days: the six oldest (ids 100..105).
  EXPECT_EQ(PlanExpiry(m, rules, now),
            (std::vector<int64_t>{105, 104, 103, 102, 101, 100}));
  rules.min_snapshots = 8;  // the newest eight stay whatever their age
  EXPECT_EQ(PlanExpiry(m, rules, now), (std::vector<int64_t>{101, 100}));
  rules.min_snapshots = 1;
  rules.snapshot_retention = std::chrono::milliseconds(365 * kDayMs);
  rules.max_snapshots = 7;  // young, but too many
  EXPECT_EQ(PlanExpiry(m, rules, now), (std::vector<int64_t>{102, 101, 100}));
  rules.keep_snapshots_until_ms = now + 1;  // a hold: nothing expires before it
  EXPECT_TRUE(PlanExpiry(m, rules, now).empty());
}

using ::timelake::testing::Backend;
using ::timelake::testing::TestWarehouse;

// Each test on a fresh warehouse (a temporary directory, or a prefix of its
// own in the S3 server's bucket) whose lake reads a FakeClock.
class Maintenance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(arrow::compute::Initialize().ok());
    TL_ASSERT_OK_AND_ASSIGN(warehouse_, TestWarehouse::Make(GetParam(), "maintain"));
    auto lake = Lake::Open(warehouse_.url(), warehouse_.options());
    ASSERT_TRUE(lake.ok()) << lake.status().ToString();
    lake_ = std::make_unique<Lake>(*lake);
    clock_ = std::make_shared<FakeClock>(TimePoint(std::chrono::microseconds(kT0)));
    LakeAccess::State(*lake_)->clock = clock_;
  }
  void TearDown() override {
    Flush();
    lake_.reset();
    warehouse_.Remove();
  }

  const storage::Store& store() const { return *LakeAccess::State(*lake_)->store; }

  // The keys of every object under the folder `prefix` (TestWarehouse::Keys).
  std::set<std::string> Keys(const std::string& prefix) const {
    return warehouse_.Keys(prefix);
  }

  // Whether the object `key` exists (a HEAD request).
  bool Exists(const std::string& key) const {
    auto head = store().Head(key);
    if (head.ok()) return true;
    EXPECT_EQ(KindOf(head.status()), ErrorKind::kNotFound) << head.status().ToString();
    return false;
  }

  static std::shared_ptr<arrow::Schema> Schema() {
    return arrow::schema(
        {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
         arrow::field("device", arrow::utf8()), arrow::field("v", arrow::float64())});
  }

  // One row per (device, time) for `devices` devices at `times`.
  static std::shared_ptr<arrow::RecordBatch> Rows(const std::vector<int64_t>& times,
                                                  int devices, double value) {
    arrow::TimestampBuilder t(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                              arrow::default_memory_pool());
    arrow::StringBuilder d;
    arrow::DoubleBuilder v;
    for (int64_t time : times) {
      for (int i = 0; i < devices; ++i) {
        EXPECT_TRUE(t.Append(time).ok());
        EXPECT_TRUE(d.Append("dev" + std::to_string(i)).ok());
        EXPECT_TRUE(v.Append(value + i).ok());
      }
    }
    const int64_t n = static_cast<int64_t>(times.size()) * devices;
    return arrow::RecordBatch::Make(Schema(), n, {*t.Finish(), *d.Finish(), *v.Finish()});
  }

  Table Create(std::map<std::string, std::string> properties = {}) {
    TableOptions o;
    o.time_column = "time";
    o.series_key = {"device"};
    o.properties = std::move(properties);
    auto t = lake_->CreateTable("m", *Schema(), o);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  }

  std::vector<format::LiveFile> Live(const Table& table) {
    auto state = LoadTableState(LakeAccess::State(*lake_), table.name());
    EXPECT_TRUE(state.ok());
    auto files = internal::ListLiveFiles(**state);
    EXPECT_TRUE(files.ok());
    return *files;
  }

  // Eight appends of one tier whose first file is gone from storage: the
  // merge the eighth starts in the background fails reading it.
  Table EightAppendsWithAFileMissing(Table table) {
    for (int a = 0; a < 8; ++a) {
      if (a == 7) {
        auto live = Live(table);
        EXPECT_EQ(live.size(), 7u);
        for (const auto& f : live) {
          if (f.sequence_number == std::optional<int64_t>(1)) {
            EXPECT_TRUE(store().Delete(f.key).ok());
          }
        }
      }
      auto appended = table.Append({Rows({kT0 + a * kHourUs}, 3, a)});
      EXPECT_TRUE(appended.ok()) << appended.status().ToString();
      if (!appended.ok()) return table;
      EXPECT_EQ(appended->second.maintenance_error, "") << "append " << a;
      table = appended->first;
    }
    return table;
  }

  std::shared_ptr<arrow::Table> Query(const std::string& sql) {
    Session session(*lake_);
    auto result = session.Sql(sql);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? *result : nullptr;
  }

  int64_t Count(const std::string& sql) {
    auto t = Query(sql);
    if (t == nullptr || t->num_rows() != 1) return -1;
    auto s = t->column(0)->GetScalar(0);
    return std::static_pointer_cast<arrow::Int64Scalar>(*s)->value;
  }

  // Data and metadata objects under the table that are not table versions,
  // the hint or the head, and that no snapshot of the newest version
  // references.
  std::set<std::string> Unreferenced(const Table& table) {
    auto state = LoadTableState(LakeAccess::State(*lake_), table.name());
    EXPECT_TRUE(state.ok());
    std::set<std::string> referenced;
    const auto& store = *LakeAccess::State(*lake_)->store;
    for (const auto& s : (*state)->metadata.snapshots) {
      referenced.insert(*store.KeyOf(s.manifest_list));
      if (auto uri = LviUri(s)) referenced.insert(*store.KeyOf(*uri));
      auto list = store.Get(*store.KeyOf(s.manifest_list));
      auto manifests = format::ReadManifestList(std::string_view(
          reinterpret_cast<const char*>((*list)->data()), (*list)->size()));
      for (const auto& m : *manifests) {
        referenced.insert(*store.KeyOf(m.manifest_path));
        auto bytes = store.Get(*store.KeyOf(m.manifest_path));
        auto contents = format::ReadManifest(std::string_view(
            reinterpret_cast<const char*>((*bytes)->data()), (*bytes)->size()));
        for (const auto& e : contents->entries) {
          if (e.status != format::kEntryDeleted)
            referenced.insert(*store.KeyOf(e.data_file.file_path));
        }
      }
    }
    std::set<std::string> out;
    for (const std::string& key : Keys("default/m")) {
      const std::string name = key.substr(key.rfind('/') + 1);
      if (name.ends_with(".metadata.json") || name == "version-hint.text" ||
          name == "timelake-head") {
        continue;
      }
      if (!referenced.count(key)) out.insert(key);
    }
    return out;
  }

  TestWarehouse warehouse_;
  std::unique_ptr<Lake> lake_;
  std::shared_ptr<FakeClock> clock_;
};

TEST_P(Maintenance, BigPartitionsAreMergedInGroupsWithinTheMergeBudget) {
  Table table = Create();
  auto state = *LoadTableState(LakeAccess::State(*lake_), table.name());
  const auto rules = *RulesOf(*state);
  const int64_t sort_order = state->metadata.doc.value("default-sort-order-id", 0);
  std::vector<format::LiveFile> files;
  for (int i = 0; i < 10; ++i) {
    format::LiveFile f;
    f.key = "default/m/data/time_day=2026-01-01/f" + std::to_string(i) + ".parquet";
    f.data_file.file_size_in_bytes = 100LL << 20;  // one 1M-row group of 100 MiB each
    f.data_file.record_count = 1 << 20;
    f.data_file.partition.push_back(format::PartitionValue(int32_t{20454}));
    f.data_file.sort_order_id = static_cast<int32_t>(sort_order);
    files.push_back(f);
  }
  auto jobs = PlanFull(files, *state, rules, /*cold_only=*/false, 100);
  ASSERT_EQ(jobs.size(), 5u);  // two files (200 MiB of row groups) per merge
  for (const auto& job : jobs) {
    EXPECT_EQ(job.inputs.size(), 2u);
    EXPECT_TRUE(job.partial);
  }
  // Files of 4M rows hold 4 row groups: a quarter of each is in flight.
  for (auto& f : files) f.data_file.record_count = 4 << 20;
  jobs = PlanFull(files, *state, rules, /*cold_only=*/false, 100);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].inputs.size(), 10u);
  EXPECT_FALSE(jobs[0].partial);
}

TEST_P(Maintenance, ManySmallAppendsKeepTheFileCountBounded) {
  Table table = Create();
  clock_->Set(TimePoint(std::chrono::microseconds(kT0 + 12 * kHourUs)));
  constexpr int kAppends = 500;
  int64_t appended_bytes = 0, rewritten_bytes = 0;
  size_t max_live = 0;
  int64_t compactions = 0;
  int64_t files_removed = 0;  // by compactions, as their reports say
  auto count = [&](const MaintainReport& m) {
    rewritten_bytes += m.bytes_written;
    compactions += m.partitions_compacted;
    files_removed += m.files_rewritten - m.files_written;
  };
  for (int a = 0; a < kAppends; ++a) {
    // 10 devices x 100 seconds: 1,000 rows of the current day.
    std::vector<int64_t> times;
    for (int s = 0; s < 100; ++s) times.push_back(kT0 + (a * 100 + s) * 1000000LL);
    auto appended = table.Append({Rows(times, 10, a)});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    table = appended->first;
    const AppendResult& r = appended->second;
    ASSERT_EQ(r.maintenance_error, "");
    // Maintenance runs in the background: this result reports the runs
    // it took, which the returned table includes.
    EXPECT_TRUE(r.maintenance_pending);
    appended_bytes += r.bytes;
    count(r.maintenance);
    max_live = std::max<size_t>(max_live, Live(table).size());
    clock_->Advance(std::chrono::seconds(10));
  }
  auto last = table.WaitForMaintenance();
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  table = last->first;
  count(last->second);
  // Each run reported once, whichever append (or the wait) took it: the
  // files the reports say were removed are the ones that are gone.
  EXPECT_EQ(static_cast<int64_t>(Live(table).size()), kAppends - files_removed);
  const double amplification =
      static_cast<double>(appended_bytes + rewritten_bytes) / appended_bytes;
  std::cout << "500 appends of 1,000 rows: at most " << max_live << " live files, "
            << Live(table).size() << " at the end, " << compactions
            << " compactions, write amplification " << amplification << " ("
            << appended_bytes << " bytes appended, " << rewritten_bytes << " rewritten), "
            << table.Info().snapshots << " snapshots kept" << std::endl;
  // Size tiers of 64 KiB x 4^n under the 128 MiB target, eight files of a
  // tier merged at once: at most 7 small files per tier between appends,
  // plus the new one and the one a background run has not merged yet, plus
  // those of the appends that handed their maintenance to a run still
  // running (AppendOptions::maintenance_backlog); these appends of ~2.4 KiB
  // climb 5 tiers (1 KiB .. 1 MiB) in 500 appends, each row rewritten about
  // twice (log8 of 500).
  EXPECT_LE(max_live, 26u + static_cast<size_t>(AppendOptions().maintenance_backlog));
  EXPECT_LT(amplification, 4.0);
  EXPECT_LE(table.Info().snapshots, 110);  // max-snapshots 100, expired in batches of 10
  // Old table versions go too: the newest 100 stay, and up to 32 more pile
  // up between two trims (up to 64 when appends that handed their
  // maintenance on passed a trim's turn). Version 1 went long ago.
  TL_ASSERT_OK_AND_ASSIGN(auto metadata, store().List("default/m/metadata/", true));
  int64_t versions = 0;
  for (const auto& o : metadata.objects) {
    if (o.key.find(".metadata.json") != std::string::npos) ++versions;
  }
  EXPECT_GT(table.version(), 500);
  EXPECT_GE(versions, 100);
  EXPECT_LE(versions, 164);
  EXPECT_FALSE(Exists("default/m/metadata/v1.metadata.json"));
  EXPECT_TRUE(Exists("default/m/metadata/v" + std::to_string(table.version()) +
                     ".metadata.json"));
  EXPECT_EQ(Count("SELECT count(*) FROM m"), kAppends * 1000);
  EXPECT_EQ(Count("SELECT count(*) FROM (SELECT DISTINCT device, time FROM m)"),
            kAppends * 1000);
  EXPECT_EQ(Count("SELECT CAST(sum(v) AS BIGINT) FROM m"),
            // sum over appends a and devices i of (a + i), 100 times each
            100LL * (10LL * kAppends * (kAppends - 1) / 2 + kAppends * 45LL));
}

TEST_P(Maintenance, MaintainLeavesSortedDuplicateFreeFilesAndNoUnreferencedFile) {
  Table table = Create(
      {{"timelake.snapshot-retention", "1h"}, {"timelake.auto-maintain", "false"}});
  // Two days, each appended in 6 commits; every key of day 1 is appended
  // twice (the second value wins).
  for (int round = 0; round < 2; ++round) {
    for (int a = 0; a < 6; ++a) {
      std::vector<int64_t> times;
      for (int s = 0; s < 50; ++s) {
        times.push_back(kT0 + (a * 50 + s) * 1000000LL);
        times.push_back(kT0 + kDayUs + (a * 50 + s) * 1000000LL);
      }
      auto appended = table.Append({Rows(times, 7, round * 1000)});
      ASSERT_TRUE(appended.ok()) << appended.status().ToString();
      table = appended->first;
      clock_->Advance(std::chrono::minutes(1));
    }
  }
  ASSERT_EQ(Live(table).size(), 24u);
  const std::string answer_sql =
      "SELECT device, count(*) AS n, sum(v) AS s, min(time) AS lo, max(time) AS hi "
      "FROM m GROUP BY device ORDER BY device";
  auto before = Query(answer_sql);
  clock_->Advance(std::chrono::hours(2));
  std::vector<std::string> progress;
  MaintainOptions options;
  options.orphan_age = std::chrono::milliseconds(0);
  options.progress = [&](const std::string& line) { progress.push_back(line); };
  auto maintained = table.Maintain(options);
  ASSERT_TRUE(maintained.ok()) << maintained.status().ToString();
  const MaintainReport& r = maintained->second;
  EXPECT_EQ(r.partitions_compacted, 2);
  EXPECT_EQ(r.files_rewritten, 24);
  EXPECT_EQ(r.files_written, 2);
  EXPECT_EQ(r.duplicates_removed, 2 * 6 * 50 * 7);
  // The 12 appends' snapshots, older than 1 h; the rewrites' are new.
  EXPECT_EQ(r.snapshots_expired, 12);
  EXPECT_GT(r.files_deleted, 24);
  EXPECT_FALSE(progress.empty());
  table = maintained->first;

  // Same answers (dedup on read already hid the duplicates).
  auto after = Query(answer_sql);
  ASSERT_NE(before, nullptr);
  ASSERT_NE(after, nullptr);
  EXPECT_TRUE(before->Equals(*after)) << before->ToString() << after->ToString();
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 2 * 6 * 50 * 7);

  // One file per partition, sorted by (device, time) with no repeated key.
  const auto live = Live(table);
  ASSERT_EQ(live.size(), 2u);
  for (const auto& f : live) {
    auto bytes = store().Get(f.key);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto reader = parquet::arrow::OpenFile(
        std::make_shared<arrow::io::BufferReader>(*bytes), arrow::default_memory_pool());
    ASSERT_TRUE(reader.ok());
    auto rows = (*reader)->ReadTable();
    ASSERT_TRUE(rows.ok());
    auto combined = *(*rows)->CombineChunksToBatch();
    const auto& device = static_cast<const arrow::StringArray&>(*combined->column(1));
    const auto& time = static_cast<const arrow::TimestampArray&>(*combined->column(0));
    for (int64_t i = 1; i < combined->num_rows(); ++i) {
      const auto a = std::make_pair(device.GetView(i - 1), time.Value(i - 1));
      const auto b = std::make_pair(device.GetView(i), time.Value(i));
      ASSERT_LT(a, b) << "row " << i << " of " << f.key;
    }
  }
  EXPECT_EQ(Unreferenced(table), std::set<std::string>{});
  // A second run has nothing to do.
  auto again = table.Maintain(options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->second.commits, 0);
  // Two hours on, the first rewrite's snapshot expires too: only the two
  // live files are left in data/.
  clock_->Advance(std::chrono::hours(2));
  again = table.Maintain(options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->second.snapshots_expired, 1);
  EXPECT_EQ(Unreferenced(table), std::set<std::string>{});
  EXPECT_EQ(Keys("default/m/data").size(), 2u);
}

TEST_P(Maintenance, RetentionDropsOldPartitionsByTheFakeClock) {
  Table table =
      Create({{"timelake.retention", "2d"}, {"timelake.auto-maintain", "false"}});
  // Days 0..4; dev0 only on day 0.
  for (int day = 0; day < 5; ++day) {
    auto appended =
        table.Append({Rows({kT0 + day * kDayUs + kHourUs}, day == 0 ? 3 : 2, 0)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  MaintainOptions options;
  options.compact = false;
  // Day 4, 12:00: days ending by day 2, 12:00 go, i.e. days 0 and 1.
  clock_->Set(TimePoint(std::chrono::microseconds(kT0 + 4 * kDayUs + 12 * kHourUs)));
  auto maintained = table.Maintain(options);
  ASSERT_TRUE(maintained.ok()) << maintained.status().ToString();
  EXPECT_EQ(maintained->second.partitions_dropped, 2);
  EXPECT_EQ(maintained->second.rows_dropped, 3 + 2);
  table = maintained->first;
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 3 * 2);
  EXPECT_EQ(Count("SELECT count(*) FROM m WHERE time < '2026-01-03T00:00:00Z'"), 0);
  // The index forgets dev2, whose rows were all in the dropped days.
  Session session(*lake_);
  auto latest = session.Latest("m");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ((*latest)->num_rows(), 2);
  // The clock moves on a day: day 2 goes too.
  clock_->Advance(std::chrono::hours(24));
  maintained = table.Maintain(options);
  ASSERT_TRUE(maintained.ok());
  EXPECT_EQ(maintained->second.partitions_dropped, 1);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 2 * 2);
}

TEST_P(Maintenance, AColdPartitionIsCompactedInlineOnceNewerDataIsPastIt) {
  Table table = Create({{"timelake.compact-min-files", "100"}});  // no tiered merges
  for (int a = 0; a < 4; ++a) {
    auto appended = table.Append({Rows({kT0 + a * kHourUs}, 3, a)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  EXPECT_EQ(Live(table).size(), 4u);
  // Newer data 30 min past day 0's end: not cold yet (compact-cold-after 1h).
  // The maintenance after each append runs in the background; waiting for
  // it gives what it did.
  auto appended = table.Append({Rows({kT0 + kDayUs + 30 * 60 * 1000000LL}, 3, 9)});
  ASSERT_TRUE(appended.ok());
  auto finished = appended->first.WaitForMaintenance();
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->second.partitions_compacted, 0);
  appended = finished->first.Append({Rows({kT0 + kDayUs + 2 * kHourUs}, 3, 9)});
  ASSERT_TRUE(appended.ok());
  finished = appended->first.WaitForMaintenance();
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->second.partitions_compacted, 1);
  EXPECT_EQ(finished->second.files_rewritten, 4);
  EXPECT_EQ(Live(finished->first).size(), 1u + 2u);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 6 * 3);
}

// Inline maintenance runs in the background by default: the append that
// crosses the threshold returns before it, the next append (with no
// maintenance_backlog: it waits for the run) or WaitForMaintenance reports
// it, and the table either returns includes it; with maintain_in_background
// off, the append reports its own run.
TEST_P(Maintenance, BackgroundMaintenanceIsReportedByTheNextAppend) {
  Table table = Create();
  AppendOptions next;
  next.maintenance_backlog = 0;  // each append waits for the run before it
  // Eight small files of one tier make the first merge (kTierFanIn).
  for (int a = 0; a < 8; ++a) {
    auto appended = table.Append({Rows({kT0 + a * kHourUs}, 3, a)}, next);
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    EXPECT_TRUE(appended->second.maintenance_pending);
    EXPECT_EQ(appended->second.maintenance.partitions_compacted, 0) << "append " << a;
    table = appended->first;
  }
  auto ninth = table.Append({Rows({kT0 + 9 * kHourUs}, 3, 9)}, next);
  ASSERT_TRUE(ninth.ok()) << ninth.status().ToString();
  EXPECT_EQ(ninth->second.maintenance.partitions_compacted, 1);
  EXPECT_EQ(ninth->second.maintenance.files_rewritten, 8);
  EXPECT_EQ(ninth->second.maintenance_error, "");
  // The merged file and the ninth append's.
  EXPECT_EQ(Live(ninth->first).size(), 2u);
  // The merge's commit lands before or after the ninth append's, which
  // rebases over it or returns the merge's newer version.
  EXPECT_GE(ninth->first.version(), ninth->second.version);
  // Nothing pending is reported twice.
  auto idle = ninth->first.WaitForMaintenance();
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->second.partitions_compacted, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 9 * 3);

  // The same in the foreground. The merged file is still small enough to be
  // of the small files' tier: with it, the ninth append's file and five
  // more waiting, the next append makes the eighth and reports the merge
  // itself.
  table = idle->first;
  AppendOptions now;
  now.maintain_in_background = false;
  for (int a = 10; a < 15; ++a) {
    auto appended = table.Append({Rows({kT0 + a * kHourUs}, 3, a)}, now);
    ASSERT_TRUE(appended.ok());
    EXPECT_FALSE(appended->second.maintenance_pending);
    EXPECT_EQ(appended->second.maintenance.partitions_compacted, 0);
    table = appended->first;
  }
  EXPECT_EQ(Live(table).size(), 7u);
  auto eighth = table.Append({Rows({kT0 + 15 * kHourUs}, 3, 15)}, now);
  ASSERT_TRUE(eighth.ok());
  EXPECT_FALSE(eighth->second.maintenance_pending);
  EXPECT_EQ(eighth->second.maintenance.partitions_compacted, 1);
  EXPECT_EQ(eighth->second.maintenance.files_rewritten, 8);
  EXPECT_EQ(Live(eighth->first).size(), 1u);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 15 * 3);
}

TEST_P(Maintenance, ABackgroundFailureIsReportedByTheNextAppend) {
  Table table = EightAppendsWithAFileMissing(Create());
  const int64_t before = table.version();
  AppendOptions wait;
  wait.maintenance_backlog = 0;  // it waits for the run the eighth left
  auto next = table.Append({Rows({kT0 + 9 * kHourUs}, 3, 9)}, wait);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  // The append stands; the merge's failure is its report.
  EXPECT_NE(next->second.maintenance_error, "");
  EXPECT_EQ(next->second.maintenance.partitions_compacted, 0);
  EXPECT_EQ(next->second.rows, 3);
  EXPECT_GT(next->second.version, before);
  EXPECT_EQ(Live(next->first).size(), 9u);
}

TEST_P(Maintenance, ABackgroundFailureIsWaitForMaintenancesError) {
  Table table = EightAppendsWithAFileMissing(Create());
  auto waited = table.WaitForMaintenance();
  ASSERT_FALSE(waited.ok());
  EXPECT_NE(waited.status().message().find("in the background after an append"),
            std::string::npos)
      << waited.status().ToString();
  // Taken once: nothing is pending now.
  auto again = table.WaitForMaintenance();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->second.partitions_compacted, 0);
  EXPECT_EQ(Live(table).size(), 8u);
}

// Two threads append to one table through one lake while each append's
// maintenance runs behind it: every row lands once, and what the runs merged
// adds up.
TEST_P(Maintenance, TwoThreadsAppendWhileMaintenanceRunsBehind) {
  const Table created = Create();
  constexpr int kEach = 12;
  std::atomic<int64_t> compacted{0};
  std::atomic<int> failures{0};
  auto writer = [&](int id) {
    Table table = created;
    for (int a = 0; a < kEach; ++a) {
      const int64_t hour = id * kEach + a;
      auto appended = table.Append({Rows({kT0 + hour * kHourUs}, 3, hour)});
      if (!appended.ok() || !appended->second.maintenance_error.empty()) {
        ++failures;
        continue;
      }
      compacted += appended->second.maintenance.partitions_compacted;
      table = appended->first;
    }
    auto last = table.WaitForMaintenance();
    if (!last.ok()) {
      ++failures;
    } else {
      compacted += last->second.partitions_compacted;
    }
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 2 * kEach * 3);
  EXPECT_EQ(Count("SELECT count(DISTINCT time) FROM m"), 2 * kEach);
  // 24 files of one tier: at least two merges of eight.
  EXPECT_GE(compacted.load(), 2);
  EXPECT_LT(Live(created).size(), 2u * kEach);
}

// Maintain and Delete wait for a pending run, and a dropped table gets no
// file from one.
TEST_P(Maintenance, ChangesAndDropsWaitForAPendingRun) {
  Table table = Create();
  for (int a = 0; a < 8; ++a) {
    auto appended = table.Append({Rows({kT0 + a * kHourUs}, 3, a)});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    table = appended->first;
  }
  // The eighth append's merge may still run; the delete lands after it.
  TL_ASSERT_OK_AND_ASSIGN(auto deleted, table.Delete("device = 'dev0'"));
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 8 * 2);
  EXPECT_EQ(Count("SELECT count(*) FROM m WHERE device = 'dev0'"), 0);
  for (int a = 8; a < 16; ++a) {
    auto appended = deleted.first.Append({Rows({kT0 + a * kHourUs}, 3, a)});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    deleted.first = appended->first;
  }
  ASSERT_TRUE(lake_->DropTable("m").ok());
  Flush();
  EXPECT_EQ(Keys(TableKey(table.name())), std::set<std::string>{});
}

// A written file's bounds (taken from the Parquet writer's row group
// statistics for most types) are its columns' min and max in Iceberg's
// serialization, across several row groups, with nulls, negative values
// and NaN among them.
TEST_P(Maintenance, FileBoundsAreEachColumnsMinAndMax) {
  auto schema = arrow::schema(
      {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("device", arrow::utf8()), arrow::field("b", arrow::boolean()),
       arrow::field("i32", arrow::int32()), arrow::field("i64", arrow::int64()),
       arrow::field("f32", arrow::float32()), arrow::field("f64", arrow::float64()),
       arrow::field("d", arrow::date32()), arrow::field("bin", arrow::binary()),
       arrow::field("t64", arrow::time64(arrow::TimeUnit::MICRO)),
       arrow::field("s", arrow::utf8())});
  TableOptions o;
  o.time_column = "time";
  o.series_key = {"device"};
  o.properties = {{"timelake.row-group-rows", "1000"},
                  {"timelake.auto-maintain", "false"}};
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake_->CreateTable("bounds", *schema, o));
  constexpr int kRows = 3500;
  std::mt19937 rng(5);
  auto pick = [&](int64_t lo, int64_t hi) {
    const uint64_t wide = (static_cast<uint64_t>(rng()) << 32) | rng();
    return lo + static_cast<int64_t>(wide % static_cast<uint64_t>(hi - lo + 1));
  };
  arrow::TimestampBuilder time(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                               arrow::default_memory_pool());
  arrow::StringBuilder device, str;
  arrow::BooleanBuilder b;
  arrow::Int32Builder i32;
  arrow::Int64Builder i64;
  arrow::FloatBuilder f32;
  arrow::DoubleBuilder f64;
  arrow::Date32Builder d;
  arrow::BinaryBuilder bin;
  arrow::Time64Builder t64(arrow::time64(arrow::TimeUnit::MICRO),
                           arrow::default_memory_pool());
  for (int r = 0; r < kRows; ++r) {
    const bool null = r % 7 == 3;
    // Distinct times: no row is a duplicate the write drops.
    ASSERT_TRUE(time.Append(kT0 + r * 1000000LL).ok());
    ASSERT_TRUE(device.Append("dev" + std::to_string(pick(0, 40))).ok());
    ASSERT_TRUE((null ? b.AppendNull() : b.Append(r % 5 == 0)).ok());
    ASSERT_TRUE((null ? i32.AppendNull() : i32.Append(pick(-100000, 100000))).ok());
    ASSERT_TRUE(i64.Append(pick(-(1LL << 40), 1LL << 40) * 1000).ok());
    ASSERT_TRUE(
        f32.Append(r == 11 ? NAN : static_cast<float>(pick(-5000, 5000)) / 7).ok());
    ASSERT_TRUE((null ? f64.AppendNull() : f64.Append(pick(-5000, 5000) / 3.0)).ok());
    ASSERT_TRUE(d.Append(static_cast<int32_t>(pick(-1000, 30000))).ok());
    const std::string bytes = {static_cast<char>(pick(0, 255)),
                               static_cast<char>(pick(0, 255))};
    ASSERT_TRUE(bin.Append(bytes).ok());
    ASSERT_TRUE(t64.Append(pick(0, 86399999999)).ok());
    ASSERT_TRUE(
        str.Append(std::string(static_cast<size_t>(pick(0, 12)), 'a' + r % 26)).ok());
  }
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (arrow::ArrayBuilder* builder : std::initializer_list<arrow::ArrayBuilder*>{
           &time, &device, &b, &i32, &i64, &f32, &f64, &d, &bin, &t64, &str}) {
    std::shared_ptr<arrow::Array> column;
    ASSERT_TRUE(builder->Finish(&column).ok());
    columns.push_back(column);
  }
  auto batch = arrow::RecordBatch::Make(schema, kRows, columns);
  TL_ASSERT_OK_AND_ASSIGN(auto appended, table.Append({batch}));
  EXPECT_EQ(appended.second.rows, kRows);
  auto live = Live(appended.first);
  ASSERT_EQ(live.size(), 1u);
  const auto& file = live[0].data_file;
  const auto& stored = *appended.first.schema();
  for (int c = 0; c < schema->num_fields(); ++c) {
    const std::string& name = schema->field(c)->name();
    SCOPED_TRACE(name);
    ASSERT_NE(stored.GetFieldByName(name), nullptr);
    const auto id = format::FieldId(*stored.GetFieldByName(name));
    ASSERT_TRUE(id.has_value());
    auto minmax = arrow::compute::MinMax(columns[static_cast<size_t>(c)]);
    ASSERT_TRUE(minmax.ok());
    const auto& s = minmax->scalar_as<arrow::StructScalar>();
    TL_ASSERT_OK_AND_ASSIGN(auto lo, format::EncodeScalar(*s.value[0]));
    TL_ASSERT_OK_AND_ASSIGN(auto hi, format::EncodeScalar(*s.value[1]));
    ASSERT_TRUE(file.lower_bounds.count(*id));
    ASSERT_TRUE(file.upper_bounds.count(*id));
    EXPECT_EQ(file.lower_bounds.at(*id), lo);
    EXPECT_EQ(file.upper_bounds.at(*id), hi);
  }
}

TEST_P(Maintenance, OldVersionsGoAndAStaleWriterStillCommitsOnTop) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  const Table stale = table;  // version 1
  for (int a = 0; a < 110; ++a) {
    auto appended = table.Append({Rows({kT0 + a * 1000000LL}, 1, a)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  ASSERT_EQ(table.version(), 111);
  MaintainOptions options;
  options.compact = false;
  options.expire = false;
  options.orphan_age = std::chrono::milliseconds(0);
  // The age rule compares the lake's clock with the files' times.
  clock_->Set(SystemClock().Now() + std::chrono::minutes(1));
  auto maintained = table.Maintain(options);
  ASSERT_TRUE(maintained.ok()) << maintained.status().ToString();
  EXPECT_EQ(maintained->second.orphans_deleted, 11);  // v1..v11; the newest 100 stay
  const std::string metadata = "default/m/metadata/";
  EXPECT_FALSE(Exists(metadata + "v11.metadata.json"));
  EXPECT_TRUE(Exists(metadata + "v12.metadata.json"));
  // A handle of version 1 appends: its put of v2 lands in the hole, is
  // taken back, and the append rebases onto v111.
  auto appended = stale.Append({Rows({kT0 + 500 * 1000000LL}, 1, 7)});
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  EXPECT_EQ(appended->first.version(), 112);
  EXPECT_GE(appended->second.commit.attempts, 2);
  Flush();
  EXPECT_FALSE(Exists(metadata + "v2.metadata.json"));
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 111);
}

TEST_P(Maintenance, ARewriteCommitsOverAnAppendButNotOverAnotherRewrite) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  for (int a = 0; a < 3; ++a) {
    auto appended = table.Append({Rows({kT0 + a * kHourUs}, 3, a)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  auto lake = LakeAccess::State(*lake_);
  auto planned_on = *LoadTableState(lake, table.name());
  auto rules = *RulesOf(*planned_on);
  auto jobs =
      PlanFull(*internal::ListLiveFiles(*planned_on), *planned_on, rules, false, 10);
  ASSERT_EQ(jobs.size(), 1u);

  // A concurrent append: the rewrite still commits on top of it.
  auto appended = table.Append({Rows({kT0 + 5 * kHourUs}, 3, 7)});
  ASSERT_TRUE(appended.ok());
  MaintainReport report;
  auto rewritten = RunRewrite(planned_on, jobs[0], rules, {}, &report);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  EXPECT_EQ(Live(table).size(), 2u);  // the rewrite's file and the append's
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 4 * 3);

  // Planned on the same old version again: its inputs are gone now.
  Flush();
  const std::set<std::string> files_before = Keys("");
  auto again = RunRewrite(planned_on, jobs[0], rules, {}, &report);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(KindOf(again.status()), ErrorKind::kConflict) << again.status().ToString();
  Flush();
  EXPECT_EQ(Keys(""), files_before);  // nothing left behind
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 4 * 3);
}

// --- Deletes (maintain/delete.cc) ---

TEST_P(Maintenance, DeleteRewritesOnlyTheFilesThatHoldMatchingRows) {
  Table table =
      Create({{"timelake.auto-maintain", "false"}, {"timelake.dedup", "false"}});
  for (int day = 0; day < 3; ++day) {
    auto appended = table.Append({Rows({kT0 + day * kDayUs}, 3, day * 10)});
    ASSERT_TRUE(appended.ok()) << appended.status().ToString();
    table = appended->first;
  }
  ASSERT_EQ(Live(table).size(), 3u);
  // One series' rows: every file holds one, so each is rewritten.
  TL_ASSERT_OK_AND_ASSIGN(auto one, table.Delete("device = 'dev1'"));
  EXPECT_EQ(one.second.rows_deleted, 3);
  EXPECT_EQ(one.second.files_removed, 3);
  EXPECT_EQ(one.second.files_rewritten, 3);
  EXPECT_EQ(one.second.files_written, 3);
  EXPECT_EQ(one.second.rows_rewritten, 6);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 6);
  EXPECT_EQ(Count("SELECT count(*) FROM m WHERE device = 'dev1'"), 0);
  // A wrong day: its file holds nothing else and is dropped, the others stay.
  const auto before = Live(one.first);
  TL_ASSERT_OK_AND_ASSIGN(
      auto day,
      one.first.Delete("time >= '2026-01-02T00:00:00Z' AND time < '2026-01-03'"));
  EXPECT_EQ(day.second.rows_deleted, 2);
  EXPECT_EQ(day.second.files_removed, 1);
  EXPECT_EQ(day.second.files_rewritten, 0);
  EXPECT_EQ(day.second.files_written, 0);
  const auto after = Live(day.first);
  ASSERT_EQ(after.size(), 2u);
  for (const auto& f : after) {
    EXPECT_TRUE(std::any_of(before.begin(), before.end(),
                            [&](const auto& b) { return b.key == f.key; }))
        << f.key << " was rewritten";
  }
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 4);
  // Nothing matches: no commit.
  TL_ASSERT_OK_AND_ASSIGN(auto none, day.first.Delete("v > 1000"));
  EXPECT_EQ(none.second.rows_deleted, 0);
  EXPECT_FALSE(none.second.snapshot_id.has_value());
  EXPECT_EQ(none.first.version(), day.first.version());
  // A NULL predicate keeps the row, as SQL's DELETE does.
  TL_ASSERT_OK_AND_ASSIGN(auto nulls, none.first.Delete("NULL"));
  EXPECT_EQ(nulls.second.rows_deleted, 0);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 4);
  EXPECT_TRUE(Unreferenced(nulls.first).empty());
}

TEST_P(Maintenance, ABadPredicateIsRefusedAndChangesNothing) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  auto appended = table.Append({Rows({kT0}, 3, 1)});
  ASSERT_TRUE(appended.ok());
  Flush();
  const auto keys = Keys("");
  for (const char* where : {"sensor = 'x'", "device = ", "v > 1; DROP TABLE m"}) {
    auto deleted = appended->first.Delete(where);
    ASSERT_FALSE(deleted.ok()) << where;
    EXPECT_EQ(KindOf(deleted.status()), ErrorKind::kInvalid)
        << where << ": " << deleted.status().ToString();
    EXPECT_NE(deleted.status().message().find("deleting from default.m"),
              std::string::npos)
        << deleted.status().ToString();
  }
  Flush();
  EXPECT_EQ(Keys(""), keys);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 3);
}

TEST_P(Maintenance, DeleteOnADedupTableBringsNoOlderDuplicateBack) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  // The same (device, time) twice, in two files of one partition: queries
  // see the newer value, 20 + i.
  for (double value : {1.0, 20.0}) {
    auto appended = table.Append({Rows({kT0}, 3, value)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  ASSERT_EQ(Live(table).size(), 2u);
  ASSERT_EQ(Count("SELECT count(*) FROM m WHERE v >= 20"), 3);
  // dev2's visible row (v = 22) goes; its older v = 3 must not reappear.
  TL_ASSERT_OK_AND_ASSIGN(auto deleted, table.Delete("v > 21"));
  EXPECT_EQ(deleted.second.rows_deleted, 1);
  EXPECT_EQ(deleted.second.partitions, 1);
  EXPECT_EQ(deleted.second.files_rewritten, 2);  // the partition, merged
  EXPECT_EQ(Count("SELECT count(*) FROM m WHERE device = 'dev2'"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM m WHERE v >= 20"), 2);
  // With dedup on read off, the older rows are gone too: not merely hidden.
  Session raw(*lake_);
  TL_ASSERT_OK(raw.Sql("SET timelake.read_dedup = false").status());
  TL_ASSERT_OK_AND_ASSIGN(auto all, raw.Sql("SELECT count(*) FROM m"));
  EXPECT_EQ(all->num_rows(), 1);
  EXPECT_EQ(
      std::static_pointer_cast<arrow::Int64Scalar>(*all->column(0)->GetScalar(0))->value,
      2);
}

TEST_P(Maintenance, DeleteKeepsTheLastValueIndexExact) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  for (int day = 0; day < 3; ++day) {
    auto appended = table.Append({Rows({kT0 + day * kDayUs}, 3, day * 10)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  // The newest day and all of dev0: every series' newest row changes or goes.
  TL_ASSERT_OK_AND_ASSIGN(auto deleted,
                          table.Delete("time >= '2026-01-03' OR device = 'dev0'"));
  EXPECT_EQ(deleted.second.rows_deleted, 5);
  Session session(*lake_);
  TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("m"));
  // The index answers (a snapshot of the delete has one) and equals the scan.
  auto state = *LoadTableState(LakeAccess::State(*lake_), table.name());
  ASSERT_TRUE(LviUri(*state->metadata.CurrentSnapshot()).has_value());
  TL_ASSERT_OK_AND_ASSIGN(
      auto scanned,
      session.Sql(
          "SELECT time, device, v FROM m WHERE time = '2026-01-02' ORDER BY device"));
  ASSERT_EQ(latest->num_rows(), 2);
  ASSERT_EQ(scanned->num_rows(), 2);
  for (int c = 0; c < 3; ++c) {
    const auto& name = scanned->schema()->field(c)->name();
    EXPECT_TRUE(latest->GetColumnByName(name)->Equals(*scanned->column(c))) << name;
  }
  // Everything: the index is empty, not missing, and a later append fills it.
  TL_ASSERT_OK_AND_ASSIGN(auto emptied, deleted.first.Delete("true"));
  TL_ASSERT_OK_AND_ASSIGN(auto none, session.Latest("m"));
  EXPECT_EQ(none->num_rows(), 0);
  auto appended = emptied.first.Append({Rows({kT0 + 5 * kDayUs}, 1, 7)});
  ASSERT_TRUE(appended.ok());
  state = *LoadTableState(LakeAccess::State(*lake_), table.name());
  ASSERT_TRUE(LviUri(*state->metadata.CurrentSnapshot()).has_value());
  TL_ASSERT_OK_AND_ASSIGN(auto one, session.Latest("m"));
  EXPECT_EQ(one->num_rows(), 1);
}

TEST_P(Maintenance, ADeleteRebasedOverAnAppendKeepsTheAppendsNewestRows) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  for (int day = 0; day < 2; ++day) {
    auto appended = table.Append({Rows({kT0 + day * kDayUs}, 3, day * 10)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  // Planned on this version; then another writer appends dev0's and dev1's
  // newest rows, so the delete's commit rebases over that append and its
  // index is decided over the append's (IndexAfterDelete's merge).
  auto planned = *LoadTableState(LakeAccess::State(*lake_), table.name());
  auto concurrent = table.Append({Rows({kT0 + 2 * kDayUs}, 2, 90)});
  ASSERT_TRUE(concurrent.ok());
  DeleteReport report;
  auto deleted =
      RunDelete(planned, "device = 'dev1' AND time < '2026-01-03'", {}, &report);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(report.rows_deleted, 2);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 6 - 2 + 2);
  // The index: dev0 and dev1 from the concurrent append (v 90, 91), dev2
  // from day 1 (v 12), as the scan says.
  Session session(*lake_);
  TL_ASSERT_OK_AND_ASSIGN(auto latest, session.Latest("m"));
  auto state = *LoadTableState(LakeAccess::State(*lake_), table.name());
  ASSERT_TRUE(LviUri(*state->metadata.CurrentSnapshot()).has_value());
  ASSERT_EQ(latest->num_rows(), 3);
  TL_ASSERT_OK_AND_ASSIGN(auto combined, latest->CombineChunksToBatch());
  const auto& v = static_cast<const arrow::DoubleArray&>(*combined->GetColumnByName("v"));
  EXPECT_EQ(v.Value(0), 90);
  EXPECT_EQ(v.Value(1), 91);
  EXPECT_EQ(v.Value(2), 12);
}

TEST_P(Maintenance, PurgeRemovesTheDeletedRowsFromStorageNow) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  for (int day = 0; day < 2; ++day) {
    auto appended = table.Append({Rows({kT0 + day * kDayUs}, 2, day)});
    ASSERT_TRUE(appended.ok());
    table = appended->first;
  }
  const auto old_files = Live(table);
  DeleteOptions options;
  options.purge = true;
  TL_ASSERT_OK_AND_ASSIGN(auto deleted, table.Delete("device = 'dev0'", options));
  EXPECT_EQ(deleted.second.rows_deleted, 2);
  EXPECT_EQ(deleted.second.snapshots_expired, 2);
  EXPECT_GE(deleted.second.files_deleted, 2);
  Flush();
  for (const auto& f : old_files) EXPECT_FALSE(Exists(f.key)) << f.key;
  auto state = *LoadTableState(LakeAccess::State(*lake_), table.name());
  EXPECT_EQ(state->metadata.snapshots.size(), 1u);
  EXPECT_TRUE(Unreferenced(deleted.first).empty());
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 2);
}

TEST_P(Maintenance, SqlDeleteAnswersWhatItDeleted) {
  Table table = Create({{"timelake.auto-maintain", "false"}});
  auto appended = table.Append({Rows({kT0, kT0 + kHourUs}, 3, 1)});
  ASSERT_TRUE(appended.ok());
  Session session(*lake_);
  TL_ASSERT_OK_AND_ASSIGN(
      auto answer,
      session.Sql("DELETE FROM timelake.\"default\".M WHERE device <> 'dev1'"));
  ASSERT_EQ(answer->num_rows(), 1);
  EXPECT_EQ(answer->schema()->field(0)->name(), "rows_deleted");
  EXPECT_EQ(std::static_pointer_cast<arrow::Int64Scalar>(*answer->column(0)->GetScalar(0))
                ->value,
            4);
  EXPECT_EQ(Count("SELECT count(*) FROM m"), 2);
  auto missing = session.Sql("DELETE FROM nope WHERE true");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(KindOf(missing.status()), ErrorKind::kNotFound)
      << missing.status().ToString();
}

// Six appends for the in-memory rewrite (RewriteWhole) to merge: duplicates
// across and within appends (the later insertion wins, then the later
// commit), rows out of time order, a null series, and series only some
// files hold.
Table SixAppendsToMerge(Table table, const std::shared_ptr<arrow::Schema>& schema,
                        FakeClock* clock) {
  std::mt19937_64 rng(7);
  for (int a = 0; a < 6; ++a) {
    arrow::TimestampBuilder t(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                              arrow::default_memory_pool());
    arrow::StringBuilder d;
    arrow::DoubleBuilder v;
    for (int i = 0; i < 400; ++i) {
      // 40 distinct times per append, shuffled; half of them again in the
      // next append; devices of each append a different subset.
      const int64_t time = kT0 + static_cast<int64_t>((a * 20 + rng() % 40) * 1000000);
      const int device = static_cast<int>(rng() % (3 + a));
      EXPECT_TRUE(t.Append(time).ok());
      EXPECT_TRUE(
          (device == 0 ? d.AppendNull() : d.Append("dev" + std::to_string(device))).ok());
      EXPECT_TRUE(v.Append(a * 1000 + i).ok());
    }
    auto batch =
        arrow::RecordBatch::Make(schema, 400, {*t.Finish(), *d.Finish(), *v.Finish()});
    auto appended = table.Append({batch});
    EXPECT_TRUE(appended.ok()) << appended.status().ToString();
    if (!appended.ok()) return table;
    table = appended->first;
    // Pairs of appends share an insertion time: the commit order decides.
    if (a % 2 == 1) clock->Advance(std::chrono::seconds(1));
  }
  return table;
}

// RewriteWhole writes exactly the rows the streaming merge (MergeFiles)
// gives, in its order: as one row group, and as several of whole series
// when the rows are more than a row group holds.
TEST_P(Maintenance, TheInMemoryRewriteWritesWhatTheMergeGives) {
  Table table = SixAppendsToMerge(Create({{"timelake.auto-maintain", "false"}}), Schema(),
                                  clock_.get());
  auto state = LoadTableState(LakeAccess::State(*lake_), table.name());
  ASSERT_TRUE(state.ok());
  const auto live = Live(table);
  ASSERT_EQ(live.size(), 6u);
  TL_ASSERT_OK_AND_ASSIGN(auto merge, MergeFiles(*state, live, /*dedup=*/true));
  TL_ASSERT_OK_AND_ASSIGN(auto merged, merge->ToTable());
  EXPECT_LT(merged->num_rows(), 6 * 400) << "duplicates were removed";
  TL_ASSERT_OK_AND_ASSIGN(auto expected, merged->CombineChunksToBatch());

  // 2,400 rows in: one row group, then row groups of at most 700 rows.
  for (const int64_t group_rows : {int64_t{1} << 20, int64_t{700}}) {
    SCOPED_TRACE("row groups of " + std::to_string(group_rows) + " rows");
    TL_ASSERT_OK_AND_ASSIGN(auto layout, LayoutOf(**state));
    layout.row_group_rows = group_rows;
    int64_t rows = 0;
    TL_ASSERT_OK_AND_ASSIGN(auto whole,
                            RewriteWhole(**state, layout, live, "default/m/test",
                                         PartitionValueOf(live[0]), 128 << 20, &rows));
    ASSERT_TRUE(whole.has_value()) << "the rewrite is for the in-memory path";
    EXPECT_EQ(whole->rows, rows);
    EXPECT_EQ(rows, expected->num_rows());
    TL_ASSERT_OK_AND_ASSIGN(auto bytes, store().Get(whole->key));
    TL_ASSERT_OK_AND_ASSIGN(
        auto reader,
        parquet::arrow::OpenFile(std::make_shared<arrow::io::BufferReader>(bytes),
                                 arrow::default_memory_pool()));
    TL_ASSERT_OK_AND_ASSIGN(auto written, reader->ReadTable());
    ASSERT_EQ(written->num_rows(), expected->num_rows());
    TL_ASSERT_OK_AND_ASSIGN(auto got, written->CombineChunksToBatch());
    for (int c = 0; c < got->num_columns(); ++c) {
      EXPECT_TRUE(got->column(c)->Equals(*expected->column(c)))
          << got->schema()->field(c)->name() << ":\n"
          << got->column(c)->ToString() << "\n"
          << expected->column(c)->ToString();
    }
    // Row groups of at most group_rows rows, each series in one of them.
    const int groups = reader->num_row_groups();
    EXPECT_EQ(groups > 1, group_rows < rows) << groups << " row groups";
    std::set<std::string> seen;
    for (int g = 0; g < groups; ++g) {
      TL_ASSERT_OK_AND_ASSIGN(auto group, reader->ReadRowGroup(g));
      EXPECT_LE(group->num_rows(), group_rows);
      std::set<std::string> devices;
      for (int64_t r = 0; r < group->num_rows(); ++r) {
        TL_ASSERT_OK_AND_ASSIGN(auto device,
                                group->GetColumnByName("device")->GetScalar(r));
        devices.insert(device->ToString());
      }
      for (const auto& d : devices) EXPECT_TRUE(seen.insert(d).second) << d;
    }
  }
}

// A series with more rows than a row group holds goes the streaming way:
// the in-memory path writes nothing.
TEST_P(Maintenance, TheInMemoryRewriteLeavesASeriesOverARowGroupToTheMerge) {
  Table table = SixAppendsToMerge(Create({{"timelake.auto-maintain", "false"}}), Schema(),
                                  clock_.get());
  auto state = LoadTableState(LakeAccess::State(*lake_), table.name());
  ASSERT_TRUE(state.ok());
  const auto live = Live(table);
  TL_ASSERT_OK_AND_ASSIGN(auto layout, LayoutOf(**state));
  layout.row_group_rows = 100;  // dev1 alone has more
  TL_ASSERT_OK_AND_ASSIGN(auto before, store().List("default/m/test", false));
  int64_t rows = 0;
  TL_ASSERT_OK_AND_ASSIGN(auto whole,
                          RewriteWhole(**state, layout, live, "default/m/test",
                                       PartitionValueOf(live[0]), 128 << 20, &rows));
  EXPECT_FALSE(whole.has_value());
  TL_ASSERT_OK_AND_ASSIGN(auto after, store().List("default/m/test", false));
  EXPECT_EQ(after.objects.size(), before.objects.size());
}

INSTANTIATE_TEST_SUITE_P(Backends, Maintenance, ::timelake::testing::kSharedBackends,
                         ::timelake::testing::BackendParamName);

}  // namespace
}  // namespace timelake::internal
