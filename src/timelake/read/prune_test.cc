// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/read/prune.h"

#include <arrow/type.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>

#include "timelake/format/bounds.h"

namespace timelake::read {
namespace {

std::shared_ptr<arrow::Field> Field(const std::string& name,
                                    std::shared_ptr<arrow::DataType> type, int id) {
  return arrow::field(
      name, std::move(type), true,
      arrow::key_value_metadata({"PARQUET:field_id"}, {std::to_string(id)}));
}

std::shared_ptr<arrow::Schema> Schema() {
  return arrow::schema(
      {Field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "+00:00"), 1),
       Field("device", arrow::utf8(), 2), Field("temp", arrow::float64(), 3),
       Field("n", arrow::int32(), 4)});
}

// A file with time in [100, 200], device in ["b", "d"], temp in [1.5, 2.5],
// n all null.
format::DataFile File() {
  format::DataFile f;
  f.record_count = 10;
  f.lower_bounds = {
      {1, format::EncodeInt64(100)}, {2, "b"}, {3, format::EncodeDouble(1.5)}};
  f.upper_bounds = {
      {1, format::EncodeInt64(200)}, {2, "d"}, {3, format::EncodeDouble(2.5)}};
  f.value_counts = {{1, 10}, {2, 10}, {3, 10}, {4, 10}};
  f.null_value_counts = {{1, 0}, {2, 0}, {3, 2}, {4, 10}};
  return f;
}

bool Match(const std::string& filters_json) {
  auto filters =
      ParseFilters(nlohmann::json::parse("{\"filters\": " + filters_json + "}"));
  return MayMatch(File(), filters, *Schema());
}

std::string Ts(const char* op, int64_t v) {
  return std::string("{\"column\":\"time\",\"op\":\"") + op +
         "\",\"value\":{\"type\":\"timestamp_us\",\"v\":" + std::to_string(v) + "}}";
}

TEST(Prune, TimeRanges) {
  EXPECT_TRUE(Match("[" + Ts("ge", 200) + "]"));
  EXPECT_FALSE(Match("[" + Ts("gt", 200) + "]"));
  EXPECT_TRUE(Match("[" + Ts("le", 100) + "]"));
  EXPECT_FALSE(Match("[" + Ts("lt", 100) + "]"));
  EXPECT_TRUE(Match("[" + Ts("eq", 150) + "]"));
  EXPECT_FALSE(Match("[" + Ts("eq", 99) + "]"));
  // Each conjunct alone may match; a file is kept only if all of them may.
  EXPECT_TRUE(Match("[" + Ts("ge", 120) + "," + Ts("lt", 110) + "]"));
  EXPECT_FALSE(Match("[" + Ts("ge", 120) + "," + Ts("lt", 90) + "]"));
}

TEST(Prune, StringsAndInLists) {
  auto in = [](std::vector<std::string> vs) {
    std::string j = "[{\"column\":\"device\",\"op\":\"in\",\"values\":[";
    for (size_t i = 0; i < vs.size(); ++i) {
      j += (i ? "," : "") + std::string("{\"type\":\"string\",\"v\":\"") + vs[i] + "\"}";
    }
    return j + "]}]";
  };
  EXPECT_TRUE(Match(in({"a", "c"})));
  EXPECT_FALSE(Match(in({"a", "e", "zz"})));
  EXPECT_TRUE(Match(in({"d"})));
  EXPECT_FALSE(
      Match("[{\"column\":\"device\",\"op\":\"eq\",\"value\":{\"type\":\"string\",\"v\":"
            "\"a\"}}]"));
}

TEST(Prune, NullsAndUnknowns) {
  // n is all null: comparisons cannot match, IS NULL can.
  EXPECT_FALSE(
      Match("[{\"column\":\"n\",\"op\":\"eq\",\"value\":{\"type\":\"int\",\"v\":1}}]"));
  EXPECT_TRUE(Match("[{\"column\":\"n\",\"op\":\"is_null\"}]"));
  EXPECT_FALSE(Match("[{\"column\":\"n\",\"op\":\"is_not_null\"}]"));
  EXPECT_FALSE(Match("[{\"column\":\"time\",\"op\":\"is_null\"}]"));
  // Unknown columns, ops, kinds and malformed conjuncts never prune.
  EXPECT_TRUE(Match(
      "[{\"column\":\"nope\",\"op\":\"eq\",\"value\":{\"type\":\"int\",\"v\":1}}]"));
  EXPECT_TRUE(Match(
      "[{\"column\":\"time\",\"op\":\"like\",\"value\":{\"type\":\"int\",\"v\":1}}]"));
  EXPECT_TRUE(Match(
      "[{\"column\":\"time\",\"op\":\"eq\",\"value\":{\"type\":\"date\",\"v\":1}}]"));
  EXPECT_TRUE(Match("[{\"column\":\"time\"}, 7, \"x\"]"));
  // Float columns never prune on comparisons: their bounds leave out NaN,
  // which matches `temp > 3` in DataFusion.
  EXPECT_TRUE(Match(
      "[{\"column\":\"temp\",\"op\":\"gt\",\"value\":{\"type\":\"int\",\"v\":3}}]"));
  EXPECT_TRUE(Match(
      "[{\"column\":\"temp\",\"op\":\"lt\",\"value\":{\"type\":\"float\",\"v\":0.5}}]"));
}

TEST(Prune, Disjunctions) {
  auto any = [](std::vector<std::string> groups) {
    std::string j = "[{\"op\":\"any\",\"of\":[";
    for (size_t i = 0; i < groups.size(); ++i) j += (i ? "," : "") + groups[i];
    return j + "]}]";
  };
  const std::string dev_a =
      "{\"column\":\"device\",\"op\":\"eq\",\"value\":{\"type\":\"string\","
      "\"v\":\"a\"}}";
  // (time < 50) OR (time >= 300): neither range holds the file's [100, 200].
  EXPECT_FALSE(Match(any({"[" + Ts("lt", 50) + "]", "[" + Ts("ge", 300) + "]"})));
  // (time < 50) OR (time >= 150 AND time < 300): the second may.
  EXPECT_TRUE(Match(
      any({"[" + Ts("lt", 50) + "]", "[" + Ts("ge", 150) + "," + Ts("lt", 300) + "]"})));
  // A group all of whose filters may match is enough; one that cannot is not.
  EXPECT_FALSE(Match(any({"[" + Ts("ge", 150) + "," + dev_a + "]"})));
  // An "any" with a group not understood could match anything: dropped.
  EXPECT_TRUE(Match(any({"[" + Ts("lt", 50) + "]", "[{\"column\":\"time\"}]"})));
  EXPECT_TRUE(Match("[{\"op\":\"any\",\"of\":[]}]"));
  // Nested: a group holding another disjunction.
  EXPECT_FALSE(Match(any({any({"[" + Ts("lt", 50) + "]", "[" + Ts("gt", 250) + "]"})})));
  EXPECT_TRUE(Match(any({any({"[" + Ts("lt", 50) + "]", "[" + Ts("gt", 150) + "]"})})));
}

}  // namespace
}  // namespace timelake::read
