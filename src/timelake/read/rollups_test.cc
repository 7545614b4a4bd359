// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/rollups.h"

#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"

namespace timelake::read {
namespace {

constexpr int64_t kHour = 3'600'000'000;
constexpr int64_t kDay = 24 * kHour;

TEST(RollupBucketTest, TextIsTimelake07s) {
  for (const auto& [text, width] :
       std::vector<std::pair<std::string, int64_t>>{{"1h", kHour},
                                                    {"90m", 90 * 60'000'000LL},
                                                    {"7d", 7 * kDay},
                                                    {"25h", 25 * kHour},
                                                    {"36h", 36 * kHour},
                                                    {"2s", 2'000'000}}) {
    Bucket b;
    b.width_us = width;
    EXPECT_EQ(b.ToText(), text);
    TL_ASSERT_OK_AND_ASSIGN(auto parsed, Bucket::Parse(text));
    EXPECT_EQ(parsed, b) << text;
  }
  TL_ASSERT_OK_AND_ASSIGN(auto minutes, Bucket::Parse("15 minutes"));
  EXPECT_EQ(minutes.width_us, 15 * 60'000'000LL);
  TL_ASSERT_OK_AND_ASSIGN(auto quarter, Bucket::Parse("3mo"));
  EXPECT_EQ(quarter.months, 3);
  EXPECT_EQ(quarter.ToText(), "3mo");
  for (const char* bad : {"", "0s", "500ms", "xmo", "0mo", "1 fortnight"}) {
    EXPECT_FALSE(Bucket::Parse(bad).ok()) << bad;
  }
}

TEST(RollupBucketTest, FloorAndCeil) {
  Bucket hour;
  hour.width_us = kHour;
  EXPECT_EQ(hour.Floor(kHour + 5), kHour);
  EXPECT_EQ(hour.Floor(-5), -kHour);
  EXPECT_EQ(hour.Ceil(kHour + 5), 2 * kHour);
  EXPECT_EQ(hour.Ceil(kHour), kHour);
  Bucket month;
  month.months = 1;
  // 2026-02-10 -> 2026-02-01 and 2026-03-01.
  const int64_t feb1 = 20485 * kDay, mar1 = 20513 * kDay;
  EXPECT_EQ(month.Floor(feb1 + 9 * kDay), feb1);
  EXPECT_EQ(month.Ceil(feb1 + 9 * kDay), mar1);
  EXPECT_EQ(month.Next(feb1), mar1);
  // 1969-12-31 -> 1969-12-01.
  EXPECT_EQ(month.Floor(-1), -31 * kDay);
  Bucket quarter;
  quarter.months = 3;
  EXPECT_EQ(quarter.Floor(mar1), 20454 * kDay);  // 2026-01-01
}

}  // namespace
}  // namespace timelake::read
