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

TEST(ParseTest, RollupStatements) {
  TL_ASSERT_OK_AND_ASSIGN(auto statements, Session::Parse(R"(
CREATE MATERIALIZED ROLLUP IF NOT EXISTS iot."Hourly" AS
  SELECT d, time_bucket(INTERVAL '1 hour', time) AS bucket, max(v) FROM iot.raw
  GROUP BY d, bucket
  WITH (refresh_interval = '10m', Other = 'it''s');
create materialized rollup r AS WITH x AS (SELECT 1) SELECT * FROM x;
REFRESH MATERIALIZED ROLLUP timelake.iot.hourly;
DROP MATERIALIZED ROLLUP IF EXISTS iot.hourly;
DROP MATERIALIZED ROLLUP iot.other)"));
  ASSERT_EQ(statements.size(), 5u);
  for (const auto& s : statements) {
    EXPECT_EQ(s.kind, Statement::Kind::kRollup);
    ASSERT_TRUE(s.rollup.has_value()) << s.text;
  }
  const auto& create = *statements[0].rollup;
  EXPECT_EQ(create.kind, RollupStatement::Kind::kCreate);
  EXPECT_TRUE(create.if_not_exists);
  EXPECT_EQ(create.name, "iot.Hourly");
  EXPECT_EQ(
      create.select,
      "SELECT d, time_bucket(INTERVAL '1 hour', time) AS bucket, max(v) FROM iot.raw\n"
      "  GROUP BY d, bucket");
  EXPECT_EQ(create.options.at("refresh_interval"), "10m");
  EXPECT_EQ(create.options.at("other"), "it's");
  // A CTE's WITH is part of the SELECT.
  EXPECT_EQ(statements[1].rollup->select, "WITH x AS (SELECT 1) SELECT * FROM x");
  EXPECT_TRUE(statements[1].rollup->options.empty());
  EXPECT_EQ(statements[2].rollup->kind, RollupStatement::Kind::kRefresh);
  EXPECT_EQ(statements[2].rollup->name, "iot.hourly");
  EXPECT_EQ(statements[3].rollup->kind, RollupStatement::Kind::kDrop);
  EXPECT_TRUE(statements[3].rollup->if_exists);
  EXPECT_FALSE(statements[4].rollup->if_exists);
  EXPECT_EQ(statements[4].name, "iot.other");
}

TEST(ParseTest, BadRollupStatementsSayWhatIsWrong) {
  for (const char* bad :
       {"CREATE MATERIALIZED ROLLUP r SELECT 1;", "CREATE MATERIALIZED ROLLUP r AS;",
        "REFRESH MATERIALIZED ROLLUP a.b.c.d;", "DROP MATERIALIZED ROLLUP r extra;",
        "CREATE MATERIALIZED ROLLUP r AS SELECT 1 WITH (x);"}) {
    auto parsed = Session::Parse(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(KindOf(parsed.status()), ErrorKind::kInvalid) << bad;
    EXPECT_NE(parsed.status().message().find("line 1"), std::string::npos)
        << parsed.status().message();
  }
  // Still being typed: not an error yet.
  TL_ASSERT_OK_AND_ASSIGN(auto typing, Session::Parse("CREATE MATERIALIZED ROLLUP r"));
  ASSERT_EQ(typing.size(), 1u);
  EXPECT_FALSE(typing[0].terminated);
}

}  // namespace
}  // namespace timelake
