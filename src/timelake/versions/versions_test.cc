// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/versions/versions.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"

namespace timelake::versions {
namespace {

format::TableMetadata Fixture() {
  std::ifstream in(std::string(TIMELAKE_TEST_FIXTURES_DIR) +
                   "/timelake07/v3.metadata.json");
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = format::TableMetadata::Parse(ss.str(), "fixture");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return *m;
}

TEST(Versions, VersionNumbersFromFileNames) {
  EXPECT_EQ(VersionOfFileName("v12.metadata.json"), 12);
  EXPECT_EQ(VersionOfFileName("00003-1b2c.metadata.json"), 3);
  EXPECT_EQ(VersionOfFileName("v.metadata.json"), std::nullopt);
  EXPECT_EQ(VersionOfFileName("v1.metadata.json.tmp"), std::nullopt);
  EXPECT_EQ(VersionOfFileName("version-hint.text"), std::nullopt);
}

TEST(Versions, PutIfAbsentHasOneWinnerAndRecognisesItsOwnLandedRetry) {
  TL_ASSERT_OK_AND_ASSIGN(auto store, storage::Store::Open("memory://", {}));
  const auto mine = Fixture();
  TL_ASSERT_OK_AND_ASSIGN(bool won, TryCommit(*store, "ns/t", 4, mine));
  EXPECT_TRUE(won);
  // The same metadata again, as after a retry whose first put landed: ours.
  TL_ASSERT_OK_AND_ASSIGN(won, TryCommit(*store, "ns/t", 4, mine));
  EXPECT_TRUE(won);
  // Another writer's metadata for the same version: lost.
  auto theirs = mine;
  theirs.last_updated_ms += 1;
  TL_ASSERT_OK_AND_ASSIGN(won, TryCommit(*store, "ns/t", 4, theirs));
  EXPECT_FALSE(won);
  TL_ASSERT_OK_AND_ASSIGN(auto latest, FindLatestVersion(*store, "ns/t"));
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->number, 4);
  EXPECT_EQ(latest->key, "ns/t/metadata/v4.metadata.json");
}

}  // namespace
}  // namespace timelake::versions
