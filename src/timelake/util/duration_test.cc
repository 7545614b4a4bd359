// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <limits>

#include <gtest/gtest.h>

#include "timelake/timelake.h"

namespace timelake {
namespace {

using std::chrono::milliseconds;

TEST(Duration, ParsesShortAndSpelledOutUnits) {
  EXPECT_EQ(*ParseDuration("90d"), milliseconds(90LL * 86400 * 1000));
  EXPECT_EQ(*ParseDuration("12h"), milliseconds(12LL * 3600 * 1000));
  EXPECT_EQ(*ParseDuration("30m"), milliseconds(30LL * 60 * 1000));
  EXPECT_EQ(*ParseDuration("45s"), milliseconds(45000));
  EXPECT_EQ(*ParseDuration("2w"), milliseconds(14LL * 86400 * 1000));
  EXPECT_EQ(*ParseDuration("1y"), milliseconds(365LL * 86400 * 1000));
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("1 day"), milliseconds(86400LL * 1000));
  EXPECT_EQ(*ParseDuration(" 3 Hours "), milliseconds(3LL * 3600 * 1000));
  EXPECT_EQ(*ParseDuration("1h 30m"), milliseconds(90LL * 60 * 1000));
}

TEST(Duration, RejectsBadText) {
  for (const char* bad :
       {"", "  ", "d", "10", "10 parsecs", "-5s", "1h x", "99999999999999999999d"}) {
    auto r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(KindOf(r.status()), ErrorKind::kInvalid) << bad;
    EXPECT_NE(r.status().message().find("parsing duration"), std::string::npos);
  }
}

TEST(Duration, FormatsLargestExactUnitAndRoundTrips) {
  EXPECT_EQ(FormatDuration(milliseconds(90LL * 86400 * 1000)), "90d");
  EXPECT_EQ(FormatDuration(milliseconds(36LL * 3600 * 1000)), "36h");
  EXPECT_EQ(FormatDuration(milliseconds(45000)), "45s");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(FormatDuration(milliseconds(14LL * 86400 * 1000)), "2w");
  for (int64_t v : {1LL, 999LL, 60000LL, 3600000LL, 86400000LL * 3}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(milliseconds(v))), milliseconds(v));
  }
}

// Found by fuzz/duration_fuzz.cc: the overflow check refused the largest
// values, so FormatDuration(max) did not parse back.
TEST(Duration, LargestValueRoundTrips) {
  const milliseconds max(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(FormatDuration(max), "9223372036854775807ms");
  EXPECT_EQ(*ParseDuration("9223372036854775807ms"), max);
  EXPECT_FALSE(ParseDuration("9223372036854775808ms").ok());
  EXPECT_FALSE(ParseDuration("106751991167301d").ok());
}

}  // namespace
}  // namespace timelake
