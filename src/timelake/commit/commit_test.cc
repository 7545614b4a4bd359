// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The commit transaction (commit.h) against races staged by the change
// itself: while it rebases, it lets another writer commit first, or makes
// its own put look lost, or has its base version deleted.

#include "timelake/commit/commit.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"
#include "timelake/timelake.h"
#include "timelake/versions/versions.h"

namespace timelake::commit {
namespace {

using internal::TableState;

// A property change whose Rebase first runs `before` (the race to stage),
// writes one object of its own per attempt and, when told, refuses to
// rebase onto any version but the first.
class TestChange : public Change {
 public:
  TestChange(const storage::Store& store, std::string key, std::string value)
      : store_(store), key_(std::move(key)), value_(std::move(value)) {}

  std::function<void(const TableState& base, int attempt)> before;
  bool refuse_rebase = false;

  arrow::Result<std::optional<format::TableMetadata>> Rebase(const TableState& base,
                                                             Attempt* attempt) override {
    ++rebases;
    if (before) before(base, attempt->number);
    if (refuse_rebase && attempt->number > 1) {
      return Conflict("test change: cannot rebase onto version " +
                      std::to_string(base.version));
    }
    const std::string object = base.table_key + "/metadata/test-attempt-" +
                               std::to_string(attempt->number) + ".bin";
    TIMELAKE_RETURN_NOT_OK(store_.Put(object, "x"));
    attempt->written.push_back(object);
    format::TableMetadata next = base.metadata;
    next.properties[key_] = value_;
    return next;
  }

  bool Landed(const TableState& base) const override {
    auto it = base.metadata.properties.find(key_);
    return it != base.metadata.properties.end() && it->second == value_;
  }

  void Abandon() override { ++abandoned; }

  int rebases = 0;
  int abandoned = 0;

 private:
  const storage::Store& store_;
  const std::string key_, value_;
};

class TransactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TL_ASSERT_OK_AND_ASSIGN(auto lake, Lake::Open("memory://"));
    lake_ = std::make_unique<Lake>(std::move(lake));
    auto schema = arrow::schema({arrow::field("v", arrow::int64())});
    TL_ASSERT_OK_AND_ASSIGN(auto table, lake_->CreateTable("ns.t", *schema));
    (void)table;
  }

  // Commits write heads and version hints in the background: they finish
  // before the lake (and the process) goes.
  void TearDown() override { Flush(); }

  std::shared_ptr<internal::LakeState> state() const {
    return internal::LakeAccess::State(*lake_);
  }
  const storage::Store& store() const { return *state()->store; }

  std::shared_ptr<const TableState> Load() const {
    auto loaded =
        internal::LoadTableState(state(), TableName::Parse("ns.t").ValueOrDie());
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    return *loaded;
  }

  // Puts `metadata` as version base.version + 1, as another writer would.
  void PutNext(const TableState& base, const format::TableMetadata& metadata) {
    auto won = versions::TryCommit(store(), base.table_key, base.version + 1, metadata,
                                   base.metadata_key);
    ASSERT_TRUE(won.ok() && *won);
  }

  // Another writer's commit of version base.version + 1.
  void CommitOther(const TableState& base, const std::string& value) {
    format::TableMetadata other = base.metadata;
    other.properties["other"] = value;
    PutNext(base, other);
  }

  bool Exists(const std::string& key) const { return store().Get(key).ok(); }

  std::unique_ptr<Lake> lake_;
};

TEST_F(TransactionTest, CommitsOverItsBase) {
  auto base = Load();
  TestChange change(store(), "k", "1");
  CommitOptions options;
  options.context = "test";
  TL_ASSERT_OK_AND_ASSIGN(auto outcome, Commit(base, &change, options));
  EXPECT_TRUE(outcome.committed);
  EXPECT_FALSE(outcome.landed_earlier);
  EXPECT_EQ(outcome.attempts, 1);
  EXPECT_EQ(outcome.conflicts_rebased, 0);
  EXPECT_EQ(outcome.state->version, base->version + 1);
  EXPECT_EQ(outcome.base->version, base->version);
  EXPECT_EQ(change.abandoned, 0);
  // The next version logs the one it replaced, and is what a load reads.
  ASSERT_FALSE(outcome.state->metadata.doc["metadata-log"].empty());
  EXPECT_EQ(outcome.state->metadata.doc["metadata-log"].back()["metadata-file"],
            store().Uri(base->metadata_key));
  auto loaded = Load();
  EXPECT_EQ(loaded->version, outcome.state->version);
  EXPECT_EQ(loaded->metadata.properties.at("k"), "1");
  EXPECT_TRUE(Exists(base->table_key + "/metadata/test-attempt-1.bin"));
}

TEST_F(TransactionTest, LostRaceIsRebasedOntoTheWinner) {
  auto base = Load();
  TestChange change(store(), "k", "1");
  change.before = [&](const TableState& b, int attempt) {
    if (attempt == 1) CommitOther(b, "won");
  };
  TL_ASSERT_OK_AND_ASSIGN(auto outcome, Commit(base, &change, CommitOptions{}));
  EXPECT_TRUE(outcome.committed);
  EXPECT_EQ(outcome.attempts, 2);
  EXPECT_EQ(outcome.conflicts_rebased, 1);
  EXPECT_EQ(outcome.base->version, base->version + 1);  // the winner's version
  EXPECT_EQ(outcome.state->version, base->version + 2);
  // Both changes are in: ours rebased onto theirs.
  EXPECT_EQ(outcome.state->metadata.properties.at("other"), "won");
  EXPECT_EQ(outcome.state->metadata.properties.at("k"), "1");
  // The lost attempt's object is gone, the winning attempt's kept.
  EXPECT_FALSE(Exists(base->table_key + "/metadata/test-attempt-1.bin"));
  EXPECT_TRUE(Exists(base->table_key + "/metadata/test-attempt-2.bin"));
  EXPECT_EQ(change.abandoned, 0);
}

TEST_F(TransactionTest, ImpossibleRebaseIsAConflictThatLeavesNothing) {
  auto base = Load();
  TestChange change(store(), "k", "1");
  change.refuse_rebase = true;
  change.before = [&](const TableState& b, int attempt) {
    if (attempt == 1) CommitOther(b, "won");
  };
  auto outcome = Commit(base, &change, CommitOptions{});
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(KindOf(outcome.status()), ErrorKind::kConflict);
  EXPECT_NE(outcome.status().message().find("cannot rebase onto version 2"),
            std::string::npos)
      << outcome.status().ToString();
  EXPECT_EQ(change.abandoned, 1);
  EXPECT_FALSE(Exists(base->table_key + "/metadata/test-attempt-1.bin"));
  // Only the other writer's version was committed.
  auto loaded = Load();
  EXPECT_EQ(loaded->version, base->version + 1);
  EXPECT_EQ(loaded->metadata.properties.count("k"), 0u);
}

TEST_F(TransactionTest, AmbiguousPutThatLandedIsRecognised) {
  // The put reports a lost race although the change is in the version that
  // won (its first put landed, the retry saw the version taken): the reload
  // finds it, and nothing is written again or deleted.
  auto base = Load();
  TestChange change(store(), "k", "1");
  change.before = [&](const TableState& b, int attempt) {
    if (attempt != 1) return;
    format::TableMetadata landed = b.metadata;
    landed.properties["k"] = "1";
    landed.last_updated_ms = b.metadata.last_updated_ms + 1;  // not byte-equal
    PutNext(b, landed);
  };
  TL_ASSERT_OK_AND_ASSIGN(auto outcome, Commit(base, &change, CommitOptions{}));
  EXPECT_TRUE(outcome.committed);
  EXPECT_TRUE(outcome.landed_earlier);
  EXPECT_EQ(outcome.attempts, 2);
  EXPECT_EQ(change.rebases, 1);
  EXPECT_EQ(outcome.state->version, base->version + 1);
  EXPECT_EQ(Load()->version, base->version + 1);
  EXPECT_TRUE(Exists(base->table_key + "/metadata/test-attempt-1.bin"));
  EXPECT_EQ(change.abandoned, 0);
}

TEST_F(TransactionTest, RetriedPutOfTheSameVersionCountsAsWon) {
  // A put-if-absent retried after its first try landed finds exactly its
  // own metadata: that is a win, not a lost race.
  auto base = Load();
  TestChange change(store(), "k", "1");
  change.before = [&](const TableState& b, int attempt) {
    if (attempt != 1) return;
    format::TableMetadata same = b.metadata;
    same.properties["k"] = "1";
    same.LogPreviousMetadata(store().Uri(b.metadata_key), b.metadata.last_updated_ms,
                             kMetadataLogLength);
    PutNext(b, same);
  };
  TL_ASSERT_OK_AND_ASSIGN(auto outcome, Commit(base, &change, CommitOptions{}));
  EXPECT_TRUE(outcome.committed);
  EXPECT_FALSE(outcome.landed_earlier);
  EXPECT_EQ(outcome.attempts, 1);
  EXPECT_EQ(outcome.state->version, base->version + 1);
}

TEST_F(TransactionTest, DeletedBaseVersionIsTakenBackAndRebased) {
  // Our base is version 1; versions 2 and 3 were committed since, and
  // maintenance deleted 1 and 2 as old. The put of version 2 succeeds on an
  // empty name, finds its base gone and takes itself back; the reload finds
  // version 3, and the change commits as 4.
  auto stale = Load();
  ASSERT_EQ(stale->version, 1);
  CommitOther(*stale, "a");
  auto v2 = Load();
  CommitOther(*v2, "b");
  ASSERT_TRUE(store().Delete(stale->metadata_key).ok());
  ASSERT_TRUE(store().Delete(v2->metadata_key).ok());
  TestChange change(store(), "k", "1");
  TL_ASSERT_OK_AND_ASSIGN(auto outcome, Commit(stale, &change, CommitOptions{}));
  EXPECT_TRUE(outcome.committed);
  EXPECT_EQ(outcome.attempts, 2);
  EXPECT_EQ(outcome.state->version, 4);
  EXPECT_EQ(outcome.state->metadata.properties.at("other"), "b");
  EXPECT_FALSE(Exists(v2->metadata_key));  // the taken-back put left nothing
  TL_ASSERT_OK_AND_ASSIGN(auto latest,
                          versions::FindLatestVersion(store(), stale->table_key));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->number, 4);
}

TEST_F(TransactionTest, GivesUpAfterMaxAttemptsAndCleansUp) {
  auto base = Load();
  TestChange change(store(), "k", "1");
  change.before = [&](const TableState& b, int) { CommitOther(b, "again"); };
  CommitOptions options;
  options.max_attempts = 3;
  options.context = "testing";
  auto outcome = Commit(base, &change, options);
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(KindOf(outcome.status()), ErrorKind::kConflict);
  EXPECT_NE(outcome.status().message().find(
                "testing: commit conflict: gave up after 3 commit attempts"),
            std::string::npos)
      << outcome.status().ToString();
  EXPECT_EQ(change.rebases, 3);
  EXPECT_EQ(change.abandoned, 1);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_FALSE(
        Exists(base->table_key + "/metadata/test-attempt-" + std::to_string(i) + ".bin"))
        << i;
  }
  EXPECT_EQ(Load()->version, base->version + 3);  // the other writer's three
}

TEST_F(TransactionTest, NothingToCommitReturnsTheBase) {
  class Noop : public Change {
   public:
    arrow::Result<std::optional<format::TableMetadata>> Rebase(const TableState&,
                                                               Attempt*) override {
      return std::nullopt;
    }
    void Abandon() override { ++abandoned; }
    int abandoned = 0;
  } noop;
  auto base = Load();
  TL_ASSERT_OK_AND_ASSIGN(auto outcome, Commit(base, &noop, CommitOptions{}));
  EXPECT_FALSE(outcome.committed);
  EXPECT_EQ(outcome.state, base);
  EXPECT_EQ(noop.abandoned, 1);
  EXPECT_EQ(Load()->version, base->version);
}

// The format-version rule at the entry points: a table a newer Timelake
// tagged is opened and committed to only as far as the rule says, and a
// refused write leaves nothing behind.
TEST_F(TransactionTest, FormatVersionDecidesWhatOpensAndWhatCommits) {
  struct Case {
    std::string version;
    bool usable;
  };
  const std::vector<Case> cases = {{"0.3.9", true}, {"0.4.0", false}, {"1.0.0", false}};
  auto schema = arrow::schema({arrow::field("v", arrow::int64())});
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.version);
    const std::string name = "ns.f" + std::to_string(n++);
    TL_ASSERT_OK_AND_ASSIGN(auto handle, lake_->CreateTable(name, *schema));
    const auto parsed = TableName::Parse(name).ValueOrDie();
    TL_ASSERT_OK_AND_ASSIGN(auto base, internal::LoadTableState(state(), parsed));
    format::TableMetadata tagged = base->metadata;
    tagged.properties["timelake.format-version"] = c.version;
    PutNext(*base, tagged);
    Flush();
    auto before = store().List(base->table_key + "/", /*delimiter=*/false);
    ASSERT_TRUE(before.ok());

    auto loaded = internal::LoadTableState(state(), parsed);
    // The stale handle's append writes its files, loses the race, reloads
    // and stops there; the commit of a property change likewise.
    arrow::Int64Builder values;
    ASSERT_TRUE(values.Append(1).ok());
    auto batch = arrow::RecordBatch::Make(schema, 1, {values.Finish().ValueOrDie()});
    auto appended = handle.Append({batch});
    TestChange change(store(), "k", "1");
    CommitOptions options;
    options.context = "test";
    auto committed = Commit(base, &change, options);
    if (c.usable) {
      EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
      EXPECT_TRUE(appended.ok()) << appended.status().ToString();
      EXPECT_TRUE(committed.ok()) << committed.status().ToString();
      continue;
    }
    const std::string expected =
        "table " + name + " has Timelake format " + c.version +
        ", written by a newer Timelake than this build (format " +
        std::string(kFormatVersion) + "), which cannot read it: upgrade Timelake";
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().message(), expected);
    for (const auto& st : {appended.status(), committed.status()}) {
      EXPECT_EQ(KindOf(st), ErrorKind::kUnsupported) << st.ToString();
      EXPECT_NE(st.message().find(expected), std::string::npos) << st.ToString();
    }
    EXPECT_GE(change.abandoned, 1);
    Flush();
    auto after = store().List(base->table_key + "/", /*delimiter=*/false);
    ASSERT_TRUE(after.ok());
    auto keys = [](const storage::Listing& l) {
      std::vector<std::string> out;
      for (const auto& o : l.objects) out.push_back(o.key);
      std::sort(out.begin(), out.end());
      return out;
    };
    // The test change's own attempt object is deleted again.
    EXPECT_EQ(keys(*after), keys(*before));
  }
}

// Every entry point that opens a table for reading or writing asks the rule,
// in each of its cases. The lake is given format 1.2.0, so that a read-only
// newer minor exists (this build's 0.3.0 has none); tables are tagged as
// another Timelake would have, or left untagged (0.1.0).
TEST_F(TransactionTest, FormatVersionAtEveryEntryPoint) {
  state()->format_version = "1.2.0";
  struct Case {
    std::string version;  // "": untagged
    bool read, write;
  };
  const std::vector<Case> cases = {
      {"1.2.0", true, true},    // the same
      {"1.2.7", true, true},    // a newer patch
      {"1.1.0", true, true},    // older
      {"", true, true},         // untagged: 0.1.0
      {"1.3.0", true, false},   // a newer minor: read only
      {"2.0.0", false, false},  // a newer major
  };
  auto schema = arrow::schema(
      {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("v", arrow::int64())});
  TableOptions ts;
  ts.time_column = "time";
  // Queries check for a newer version every time: they meet the tagged one.
  ts.properties = {{"timelake.version-check-interval", "0s"}};
  auto batch = [&](int64_t v) {
    arrow::TimestampBuilder t(schema->field(0)->type(), arrow::default_memory_pool());
    arrow::Int64Builder values;
    EXPECT_TRUE(t.Append(1767225600000000 + v).ok());
    EXPECT_TRUE(values.Append(v).ok());
    return arrow::RecordBatch::Make(
        schema, 1, {t.Finish().ValueOrDie(), values.Finish().ValueOrDie()});
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE("table format '" + c.version + "'");
    const std::string name = "ns.e" + std::to_string(n++);
    TL_ASSERT_OK_AND_ASSIGN(auto created, lake_->CreateTable(name, *schema, ts));
    EXPECT_EQ(created.properties().at("timelake.format-version"), "1.2.0");
    TL_ASSERT_OK_AND_ASSIGN(auto appended, created.Append({batch(1)}));
    const auto parsed = TableName::Parse(name).ValueOrDie();
    TL_ASSERT_OK_AND_ASSIGN(auto base, internal::LoadTableState(state(), parsed));
    format::TableMetadata tagged = base->metadata;
    if (c.version.empty()) {
      tagged.properties.erase("timelake.format-version");
    } else {
      tagged.properties["timelake.format-version"] = c.version;
    }
    PutNext(*base, tagged);
    Flush();
    auto before = store().List(base->table_key + "/", /*delimiter=*/false);
    ASSERT_TRUE(before.ok());

    const std::string shown = c.version.empty() ? "0.1.0" : c.version;
    const std::string prefix = "table " + name + " has Timelake format " + shown +
                               ", written by a newer Timelake than this build (format " +
                               "1.2.0), which ";
    const std::string no_read = prefix + "cannot read it: upgrade Timelake";
    const std::string no_write =
        prefix + "reads it but does not write it: upgrade Timelake to write to it";
    auto check = [&](const arrow::Status& st, bool allowed, const std::string& message,
                     const char* what) {
      SCOPED_TRACE(what);
      if (allowed) {
        EXPECT_TRUE(st.ok()) << st.ToString();
        return;
      }
      EXPECT_EQ(KindOf(st), ErrorKind::kUnsupported) << st.ToString();
      EXPECT_NE(st.message().find(message), std::string::npos) << st.ToString();
    };
    // Reading: loading, a query, the newest rows.
    auto loaded = lake_->LoadTable(name);
    check(loaded.status(), c.read, no_read, "LoadTable");
    Session session(*lake_);
    check(session.Sql("SELECT count(*) FROM " + name).status(), c.read, no_read, "Sql");
    check(session.Latest(name).status(), c.read, no_read, "Latest");
    if (!c.read) {
      // Writes need a loaded table: the stale handle's append loses the race
      // to the tagged version, reloads and stops there.
      check(appended.first.Append({batch(2)}).status(), false, no_read, "Append");
      Flush();
      auto after = store().List(base->table_key + "/", /*delimiter=*/false);
      ASSERT_TRUE(after.ok());
      EXPECT_EQ(after->objects.size(), before->objects.size());
      continue;
    }
    const Table table = *loaded;
    const std::string& refusal = no_write;
    // Writing, every kind of it; a refused one leaves storage as it was.
    check(table.Append({batch(2)}).status(), c.write, refusal, "Append");
    check(table.SetProperties({{"timelake.retention", "30d"}}).status(), c.write, refusal,
          "SetProperties");
    check(table.EvolveSchema({SchemaChange::AddColumn("extra", arrow::utf8())}).status(),
          c.write, refusal, "EvolveSchema");
    check(table.Delete("v = 1").status(), c.write, refusal, "Delete");
    MaintainOptions maintain;
    maintain.orphan_age = std::chrono::milliseconds(0);
    check(table.Maintain(maintain).status(), c.write, refusal, "Maintain");
    check(table.Rollback(*appended.first.current_snapshot_id()).status(), c.write,
          refusal, "Rollback");
    UpgradeOptions dry;
    dry.dry_run = true;
    auto upgraded = table.Upgrade(dry);
    check(upgraded.status(), c.write, refusal, "Upgrade");
    if (c.write) {
      // An older or untagged table is recorded at this format; a newer
      // patch keeps its own.
      const bool older = c.version.empty() || c.version == "1.1.0";
      bool records = false;
      for (const auto& step : upgraded->second.steps) {
        records = records || step.kind == UpgradeStep::Kind::kRecordFormatVersion;
      }
      EXPECT_EQ(records, older);
      EXPECT_EQ(upgraded->second.to_format, older ? "1.2.0" : c.version);
      continue;
    }
    Flush();
    auto after = store().List(base->table_key + "/", /*delimiter=*/false);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->objects.size(), before->objects.size());
  }
}

}  // namespace
}  // namespace timelake::commit
