// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <chrono>
#include <memory>

#include <gtest/gtest.h>

#include "timelake/state/state.h"

namespace timelake::internal {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const TimePoint kT0{std::chrono::microseconds(1'700'000'000'000'000LL)};

TableState StateOf(int64_t version, const std::string& interval = "1h") {
  TableState s(TableName::Parse("ns.t").ValueOrDie());
  s.version = version;
  s.metadata.properties["timelake.version-check-interval"] = interval;
  return s;
}

TEST(TableCache, FreshForTheTablesIntervalOnTheClockGiven) {
  TableCache cache;
  const auto name = TableName::Parse("ns.t").ValueOrDie();
  EXPECT_EQ(cache.Fresh(name, kT0), nullptr);
  cache.Remember(StateOf(3), kT0);
  ASSERT_NE(cache.Fresh(name, kT0 + minutes(59)), nullptr);
  EXPECT_EQ(cache.Fresh(name, kT0 + minutes(59))->version, 3);
  EXPECT_EQ(cache.Fresh(name, kT0 + minutes(60)), nullptr);
  // A clock set back makes the entry stale rather than fresh for longer.
  EXPECT_EQ(cache.Fresh(name, kT0 - seconds(1)), nullptr);
  // Other tables are not affected.
  EXPECT_EQ(cache.Fresh(TableName::Parse("ns.u").ValueOrDie(), kT0), nullptr);
}

TEST(TableCache, ZeroIntervalIsNeverFresh) {
  TableCache cache;
  const auto name = TableName::Parse("ns.t").ValueOrDie();
  cache.Remember(StateOf(1, "0s"), kT0);
  EXPECT_EQ(cache.Fresh(name, kT0), nullptr);
}

TEST(TableCache, AnOlderVersionDoesNotReplaceAFreshNewerOne) {
  TableCache cache;
  const auto name = TableName::Parse("ns.t").ValueOrDie();
  cache.Remember(StateOf(5), kT0);
  cache.Remember(StateOf(4), kT0 + minutes(1));  // a slower load of an older version
  ASSERT_NE(cache.Fresh(name, kT0 + minutes(2)), nullptr);
  EXPECT_EQ(cache.Fresh(name, kT0 + minutes(2))->version, 5);
  // Once the newer entry is stale anything replaces it (the table may have
  // been dropped and created again).
  cache.Remember(StateOf(1), kT0 + minutes(61));
  ASSERT_NE(cache.Fresh(name, kT0 + minutes(62)), nullptr);
  EXPECT_EQ(cache.Fresh(name, kT0 + minutes(62))->version, 1);
  cache.Forget(name);
  EXPECT_EQ(cache.Fresh(name, kT0 + minutes(62)), nullptr);
}

}  // namespace
}  // namespace timelake::internal
