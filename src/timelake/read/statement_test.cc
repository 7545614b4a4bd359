// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"
#include "timelake/timelake.h"

namespace timelake {
namespace {

TEST(ParseTest, SplitsOnSemicolonsOutsideQuotesAndComments) {
  constexpr const char* kScript = R"(
-- a comment; not a statement
SELECT 'a;b' AS "c;d";   /* block ; comment */
SET timelake.read_dedup = 'fal''se';
set datafusion.execution.batch_size TO 1024;
CREATE MATERIALIZED ROLLUP iot.r AS SELECT 1;
;;
SELECT 2)";
  TL_ASSERT_OK_AND_ASSIGN(auto statements, Session::Parse(kScript));
  ASSERT_EQ(statements.size(), 5u);
  EXPECT_EQ(statements[0].kind, Statement::Kind::kQuery);
  EXPECT_EQ(statements[0].text, R"(SELECT 'a;b' AS "c;d")");
  EXPECT_EQ(statements[0].line, 3);
  EXPECT_EQ(statements[1].kind, Statement::Kind::kSet);
  EXPECT_EQ(statements[1].name, "timelake.read_dedup");
  EXPECT_EQ(statements[1].value, "fal'se");
  EXPECT_EQ(statements[2].kind, Statement::Kind::kSet);
  EXPECT_EQ(statements[2].name, "datafusion.execution.batch_size");
  EXPECT_EQ(statements[2].value, "1024");
  EXPECT_EQ(statements[3].kind, Statement::Kind::kRollup);
  EXPECT_TRUE(statements[3].terminated);
  EXPECT_EQ(statements[4].text, "SELECT 2");
  EXPECT_EQ(statements[4].line, 8);
  EXPECT_FALSE(statements[4].terminated);
}

TEST(ParseTest, OpenStringsAndCommentsStayUnterminated) {
  TL_ASSERT_OK_AND_ASSIGN(auto statements, Session::Parse("SELECT 1; SELECT 'abc;\n"));
  ASSERT_EQ(statements.size(), 2u);
  EXPECT_FALSE(statements[1].terminated);
  EXPECT_EQ(statements[1].text, "SELECT 'abc;");
  TL_ASSERT_OK_AND_ASSIGN(statements, Session::Parse("/* open ; comment"));
  ASSERT_EQ(statements.size(), 1u);
  EXPECT_FALSE(statements[0].terminated);
  TL_ASSERT_OK_AND_ASSIGN(statements, Session::Parse("  -- only a comment\n"));
  EXPECT_TRUE(statements.empty());
}

TEST(ParseTest, MalformedSetIsAnErrorNamingTheLine) {
  testing::ExpectError(Session::Parse("SELECT 1;\nSET timelake.read_dedup;").status(),
                       ErrorKind::kInvalid, "line 2");
}

TEST(ParseTest, DeleteNamesItsTableAndPredicate) {
  TL_ASSERT_OK_AND_ASSIGN(
      auto statements,
      Session::Parse("delete from IoT.\"Read.ings\" where sensor = 's;1' -- why\n;"
                     "DELETE FROM timelake.iot.r;DELETE FROM r WHERE(v > 1)"));
  ASSERT_EQ(statements.size(), 3u);
  EXPECT_EQ(statements[0].kind, Statement::Kind::kDelete);
  EXPECT_EQ(statements[0].name, "iot.Read.ings");
  EXPECT_EQ(statements[0].value, "sensor = 's;1' -- why");
  EXPECT_EQ(statements[1].kind, Statement::Kind::kDelete);
  EXPECT_EQ(statements[1].name, "iot.r");
  EXPECT_EQ(statements[1].value, "");
  EXPECT_EQ(statements[2].name, "r");
  EXPECT_EQ(statements[2].value, "(v > 1)");
}

TEST(ParseTest, MalformedDeleteIsAnErrorSayingWhatWasExpected) {
  for (const char* text :
       {"DELETE r", "DELETE FROM", "DELETE FROM r USING s", "DELETE FROM r WHERE",
        "DELETE FROM a.b.c.d WHERE x", "DELETE FROM \"r WHERE x"}) {
    testing::ExpectError(Session::Parse(text).status(), ErrorKind::kInvalid,
                         "expected DELETE FROM table [WHERE predicate]");
  }
}

}  // namespace
}  // namespace timelake
