// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <gtest/gtest.h>

#include "timelake/timelake.h"

namespace timelake {
namespace {

TEST(TableName, ParsesQualifiedAndBareNames) {
  auto a = TableName::Parse("iot.readings");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->ns(), "iot");
  EXPECT_EQ(a->name(), "readings");
  auto b = TableName::Parse("cpu-1_x");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->ns(), "default");
  EXPECT_EQ(b->ToString(), "default.cpu-1_x");
}

TEST(TableName, RejectsUnsafeNames) {
  for (const char* bad : {"", ".", "a.", ".b", "a.b.c", "../x", "a/b", "a b",
                          "caf\xc3\xa9", "x\n", "a..b"}) {
    auto r = TableName::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(KindOf(r.status()), ErrorKind::kInvalid);
    EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
  }
}

TEST(Chunk, ParsesNames) {
  EXPECT_EQ(*ParseChunk("hour"), Chunk::kHour);
  EXPECT_EQ(*ParseChunk("month"), Chunk::kMonth);
  EXPECT_FALSE(ParseChunk("week").ok());
}

}  // namespace
}  // namespace timelake
