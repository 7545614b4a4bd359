// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/schema.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"

namespace timelake::format {
namespace {

using nlohmann::json;
using ::timelake::testing::ExpectError;

json Schema() {
  return json::parse(
      R"json({"type": "struct", "schema-id": 0, "identifier-field-ids": [2],
    "fields": [
      {"id": 1, "name": "time", "required": true, "type": "timestamptz"},
      {"id": 2, "name": "device", "required": false, "type": "string"},
      {"id": 3, "name": "temp", "required": false, "type": "float"},
      {"id": 4, "name": "count", "required": false, "type": "int"},
      {"id": 5, "name": "price", "required": false, "type": "decimal(9, 2)"},
      {"id": 6, "name": "tags", "required": false,
       "type": {"type": "list", "element-id": 7, "element": "string",
                "element-required": false}}]})json");
}

TEST(SchemaEvolutionTest, ChangesApplyInOrderAndFieldsKeepTheirIds) {
  int last_column_id = 7;
  TL_ASSERT_OK_AND_ASSIGN(
      auto evolved,
      EvolveSchema(Schema(),
                   {SchemaChange::RenameColumn("temp", "temperature"),
                    SchemaChange::WidenColumn("temperature", arrow::float64()),
                    SchemaChange::WidenColumn("count", arrow::int64()),
                    SchemaChange::WidenColumn("price", arrow::decimal128(18, 2)),
                    SchemaChange::AddColumn("temp", arrow::int16()),
                    SchemaChange::AddColumn("note", arrow::large_utf8())},
                   {{"time", "the time column"}}, 4, &last_column_id));
  EXPECT_EQ(evolved["schema-id"], 4);
  EXPECT_EQ(evolved["identifier-field-ids"], json::array({2}));
  EXPECT_EQ(last_column_id, 9);
  const auto& f = evolved["fields"];
  ASSERT_EQ(f.size(), 8u);
  EXPECT_EQ(f[2], json::parse(
                      R"({"id": 3, "name": "temperature", "required": false,
                          "type": "double"})"));
  EXPECT_EQ(f[3]["type"], "long");
  EXPECT_EQ(f[4]["type"], "decimal(18, 2)");
  // A new column under a name the rename freed: a new id, optional.
  EXPECT_EQ(f[6], json::parse(
                      R"({"id": 8, "name": "temp", "required": false, "type": "int"})"));
  EXPECT_EQ(f[7]["id"], 9);
  EXPECT_EQ(f[7]["type"], "string");
  // The schema given is not changed.
  EXPECT_EQ(Schema()["fields"][2]["name"], "temp");
}

TEST(SchemaEvolutionTest, ARefusedChangeNamesItselfAndTheReason) {
  struct Case {
    SchemaChange change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {SchemaChange::AddColumn("device", arrow::utf8()),
       "adding column 'device': the table has a column 'device' already"},
      {SchemaChange::AddColumn("", arrow::utf8()), "adding column '': no column name"},
      {SchemaChange::AddColumn("x", nullptr), "adding column 'x': no type"},
      {SchemaChange::AddColumn("x", arrow::null()), "adding column 'x': type null has"},
      {SchemaChange::AddColumn("x", arrow::struct_({arrow::field("a", arrow::int32())})),
       "is nested; only columns of a primitive type can be added"},
      {SchemaChange::RenameColumn("temp", "count"),
       "renaming column 'temp' to 'count': the table has a column 'count' already"},
      {SchemaChange::RenameColumn("temp", "temp"), "the name is the same"},
      {SchemaChange::RenameColumn("temp", ""), "no new name"},
      {SchemaChange::RenameColumn("missing", "x"), "the table has no such column"},
      {SchemaChange::RenameColumn("time", "ts"),
       "renaming column 'time' to 'ts': it is the time column, which the table's "
       "timelake.* properties name; it keeps its name"},
      {SchemaChange::WidenColumn("time", arrow::timestamp(arrow::TimeUnit::NANO)),
       "widening column 'time': it is the time column, whose type is fixed"},
      {SchemaChange::WidenColumn("count", arrow::int32()),
       "widening column 'count' from int to int: not a widening Iceberg allows"},
      {SchemaChange::WidenColumn("temp", arrow::int64()), "from float to long"},
      {SchemaChange::WidenColumn("device", arrow::binary()), "from string to binary"},
      {SchemaChange::WidenColumn("price", arrow::decimal128(9, 3)),
       "from decimal(9, 2) to decimal(9, 3)"},
      {SchemaChange::WidenColumn("price", arrow::decimal128(12, 3)),
       "from decimal(9, 2) to decimal(12, 3)"},
      {SchemaChange::WidenColumn("tags", arrow::list(arrow::large_utf8())),
       "it is a nested column"},
      {SchemaChange::WidenColumn("missing", arrow::int64()),
       "the table has no such column"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    int last_column_id = 7;
    auto evolved = EvolveSchema(Schema(), {c.change}, {{"time", "the time column"}}, 1,
                                &last_column_id);
    ExpectError(evolved.status(), ErrorKind::kInvalid, c.message);
  }
  // A change sees the schema the changes before it made.
  int last_column_id = 7;
  auto twice = EvolveSchema(Schema(),
                            {SchemaChange::WidenColumn("count", arrow::int64()),
                             SchemaChange::WidenColumn("count", arrow::int64())},
                            {}, 1, &last_column_id);
  ExpectError(twice.status(), ErrorKind::kInvalid, "from long to long");
}

TEST(SchemaEvolutionTest, WideningsAreIcebergs) {
  EXPECT_TRUE(IsWidening("int", "long"));
  EXPECT_TRUE(IsWidening("float", "double"));
  EXPECT_TRUE(IsWidening("decimal(9, 2)", "decimal(10, 2)"));
  EXPECT_TRUE(IsWidening("decimal(9,2)", "decimal(38, 2)"));
  EXPECT_FALSE(IsWidening("long", "int"));
  EXPECT_FALSE(IsWidening("int", "double"));
  EXPECT_FALSE(IsWidening("decimal(9, 2)", "decimal(9, 2)"));
  EXPECT_FALSE(IsWidening("decimal(9, 2)", "decimal(10, 3)"));
  EXPECT_FALSE(IsWidening("date", "timestamp"));
}

}  // namespace
}  // namespace timelake::format
