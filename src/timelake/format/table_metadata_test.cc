// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/table_metadata.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "timelake/format/schema.h"

namespace timelake::format {
namespace {

std::string ReadFixture(const std::string& rel) {
  std::ifstream in(std::string(TIMELAKE_TEST_FIXTURES_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TableMetadata, ParsesTimelake07Metadata) {
  const std::string text = ReadFixture("timelake07/v3.metadata.json");
  ASSERT_FALSE(text.empty());
  auto m = TableMetadata::Parse(text, "v3.metadata.json");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->format_version, 2);
  EXPECT_EQ(m->location, "file:///tmp/tl07wh/iot/readings");
  EXPECT_EQ(m->last_sequence_number, 2);
  EXPECT_EQ(m->snapshots.size(), 2u);
  ASSERT_NE(m->CurrentSnapshot(), nullptr);
  EXPECT_EQ(m->CurrentSnapshot()->sequence_number, 2);
  EXPECT_EQ(SummaryInt(*m->CurrentSnapshot(), summary::kTotalRecords), 4);
  EXPECT_EQ(m->properties.at("timelake.time-column"), "time");
  ASSERT_EQ(m->DefaultSpec().fields.size(), 1u);
  EXPECT_EQ(m->DefaultSpec().fields[0].transform, "day");
  EXPECT_EQ(m->DefaultSpec().fields[0].field_id, 1000);

  auto schema = IcebergToArrow(m->CurrentSchema());
  ASSERT_TRUE(schema.ok());
  EXPECT_EQ((*schema)->num_fields(), 4);
  EXPECT_FALSE((*schema)->field(0)->nullable());
  EXPECT_EQ(FieldId(*(*schema)->field(3)), 4);
}

TEST(TableMetadata, RoundTripKeepsFieldsItDoesNotModel) {
  std::string text = ReadFixture("timelake07/v3.metadata.json");
  auto doc = nlohmann::json::parse(text);
  doc["some-future-field"] = {{"a", 1}};
  doc["snapshots"][0]["added-rows"] = 17;
  auto m = TableMetadata::Parse(doc.dump(), "x");
  ASSERT_TRUE(m.ok());
  auto again = nlohmann::json::parse(m->Serialize());
  EXPECT_EQ(again["some-future-field"]["a"], 1);
  EXPECT_EQ(again["snapshots"][0]["added-rows"], 17);
  EXPECT_EQ(again["sort-orders"], doc["sort-orders"]);
  auto m2 = TableMetadata::Parse(m->Serialize(), "y");
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(m2->Serialize(), m->Serialize());
}

TEST(TableMetadata, CorruptInputIsACorruptError) {
  const std::string good = ReadFixture("timelake07/v3.metadata.json");
  for (size_t cut :
       {size_t{0}, size_t{1}, good.size() / 3, good.size() / 2, good.size() - 2}) {
    auto m = TableMetadata::Parse(good.substr(0, cut), "truncated.json");
    ASSERT_FALSE(m.ok()) << cut;
    EXPECT_EQ(KindOf(m.status()), ErrorKind::kCorrupt);
    EXPECT_NE(m.status().message().find("truncated.json"), std::string::npos);
  }
  auto doc = nlohmann::json::parse(good);
  doc.erase("location");
  EXPECT_EQ(KindOf(TableMetadata::Parse(doc.dump(), "x").status()), ErrorKind::kCorrupt);
  doc = nlohmann::json::parse(good);
  doc["current-snapshot-id"] = 12345;
  EXPECT_EQ(KindOf(TableMetadata::Parse(doc.dump(), "x").status()), ErrorKind::kCorrupt);
  doc = nlohmann::json::parse(good);
  doc["format-version"] = 3;
  EXPECT_EQ(KindOf(TableMetadata::Parse(doc.dump(), "x").status()),
            ErrorKind::kUnsupported);
  doc = nlohmann::json::parse(good);
  doc["schemas"][0]["fields"][1]["type"] = "varchar";
  auto m = TableMetadata::Parse(doc.dump(), "x");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(KindOf(IcebergToArrow(m->CurrentSchema()).status()), ErrorKind::kCorrupt);
}

// Found by fuzz/table_metadata_fuzz.cc: nlohmann's get<int>() converted
// "format-version": 1e300 with undefined behaviour, truncated 1.5 to 1 and
// wrapped ids beyond 32 bits. Integers must be JSON integers in range.
TEST(TableMetadata, NonIntegerOrOutOfRangeNumbersAreCorrupt) {
  const std::string good = ReadFixture("timelake07/v3.metadata.json");
  const std::vector<std::pair<std::string, nlohmann::json>> bad = {
      {"format-version", 1e300},
      {"format-version", 1.5},
      {"last-column-id", 4294967296LL},
      {"current-schema-id", -4294967296LL},
      {"last-sequence-number", 1e19},
      {"default-spec-id", "0"},
      {"last-updated-ms", 18446744073709551615ULL},
  };
  for (const auto& [key, value] : bad) {
    auto doc = nlohmann::json::parse(good);
    doc[key] = value;
    auto m = TableMetadata::Parse(doc.dump(), "x.json");
    ASSERT_FALSE(m.ok()) << key << " = " << value.dump();
    EXPECT_EQ(KindOf(m.status()), ErrorKind::kCorrupt) << m.status().ToString();
  }
  auto doc = nlohmann::json::parse(good);
  doc["snapshots"][0]["snapshot-id"] = 2.5;
  EXPECT_EQ(KindOf(TableMetadata::Parse(doc.dump(), "x").status()), ErrorKind::kCorrupt);
  doc = nlohmann::json::parse(good);
  doc["schemas"][0]["fields"][0]["id"] = 1e10;
  auto m = TableMetadata::Parse(doc.dump(), "x");
  ASSERT_TRUE(m.ok()) << m.status().ToString();  // field ids are the schema's
  EXPECT_EQ(KindOf(IcebergToArrow(m->CurrentSchema()).status()), ErrorKind::kCorrupt);
}

}  // namespace
}  // namespace timelake::format
