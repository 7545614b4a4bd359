// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/settings.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "timelake/settings/contract.h"
#include "timelake/testing/matchers.h"

namespace timelake::settings {
namespace {

// The format-version rule (settings/contract.h), for a build of format
// `ours`: each case for reading and for writing, with its message.
TEST(FormatVersionTest, PatchMinorMajorAndUntagged) {
  using internal::CheckFormatVersion;
  using internal::FormatAccess;
  struct Case {
    std::string ours, theirs;
    bool read, write;
  };
  const std::vector<Case> cases = {
      {"1.2.3", "1.2.3", true, true},    // the same
      {"1.2.3", "1.2.9", true, true},    // a newer patch
      {"1.2.3", "1.1.7", true, true},    // older
      {"1.2.3", "0.9.0", true, true},    // an older major
      {"1.2.3", "", true, true},         // untagged: 0.1.0
      {"1.2.3", "1.3.0", true, false},   // a newer minor: read only
      {"1.2.3", "2.0.0", false, false},  // a newer major
      {"0.3.0", "0.3.4", true, true},    // before 1.0, a newer patch
      {"0.3.0", "0.4.0", false, false},  // before 1.0 a newer minor breaks
      {"0.3.0", "1.0.0", false, false}, {"0.3.0", "", true, true},
      {"0.1.0", "", true, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.theirs + " read by " + c.ours);
    const auto read = CheckFormatVersion("ns.t", c.theirs, FormatAccess::kRead, c.ours);
    const auto write = CheckFormatVersion("ns.t", c.theirs, FormatAccess::kWrite, c.ours);
    EXPECT_EQ(read.ok(), c.read) << read.ToString();
    EXPECT_EQ(write.ok(), c.write) << write.ToString();
    const std::string shown = c.theirs.empty() ? "0.1.0" : c.theirs;
    const std::string prefix = "table ns.t has Timelake format " + shown +
                               ", written by a newer Timelake than this build (format " +
                               c.ours + "), which ";
    if (!c.read) {
      EXPECT_EQ(KindOf(read), ErrorKind::kUnsupported);
      EXPECT_EQ(read.message(), prefix + "cannot read it: upgrade Timelake");
    }
    if (c.read && !c.write) {
      EXPECT_EQ(KindOf(write), ErrorKind::kUnsupported);
      EXPECT_EQ(write.message(), prefix +
                                     "reads it but does not write it: upgrade Timelake "
                                     "to write to it");
    }
    if (!c.read) {
      EXPECT_EQ(write.message(), read.message());
    }
  }
  for (const std::string bad :
       {"1", "1.2", "1.2.3.4", "v1.2.3", "1.-2.3", "1.2.x", " 1.2.3"}) {
    const auto st = CheckFormatVersion("ns.t", bad, FormatAccess::kRead, "1.2.3");
    EXPECT_EQ(KindOf(st), ErrorKind::kCorrupt) << bad;
    EXPECT_NE(st.message().find("'" + bad + "'"), std::string::npos) << st.message();
  }
}

TEST(SettingsTest, EveryNameIsDeclaredOnceWithADescription) {
  std::set<std::string> names;
  for (const auto& s : All()) {
    EXPECT_TRUE(names.insert(std::string(s.name)).second) << s.name;
    EXPECT_FALSE(s.description.empty()) << s.name;
    EXPECT_NE(s.levels, 0u) << s.name;
    EXPECT_EQ(s.name.find('_'), std::string_view::npos) << s.name;
    if (!s.default_value.empty()) {
      EXPECT_TRUE(Validate(s, s.default_value).ok())
          << s.name << " default " << s.default_value;
    }
  }
  // SPEC §4.3 lists these; each must be in the registry.
  for (const char* name : {"time-column",
                           "series-key",
                           "chunk",
                           "dedup",
                           "ingest-time-column",
                           "retention",
                           "target-file-size",
                           "row-group-rows",
                           "data-page-rows",
                           "compression-codec",
                           "compression-level",
                           "auto-maintain",
                           "compact-min-files",
                           "compact-cold-after",
                           "snapshot-retention",
                           "min-snapshots",
                           "max-snapshots",
                           "keep-snapshots-until",
                           "read-dedup",
                           "read-dedup-strategy",
                           "filter-pushdown",
                           "in-list-pruning",
                           "newest-first",
                           "time-weighted-mean",
                           "head-format",
                           "head-inline-bytes",
                           "format-version",
                           "rollups",
                           "rollup-routing",
                           "rollup-refresh-interval",
                           "rollup-source",
                           "rollup-bucket",
                           "rollup-aggregates",
                           "version-check-interval"}) {
    EXPECT_NE(Find(name), nullptr) << name;
  }
}

TEST(SettingsTest, FindAcceptsAllFourSpellingsInAnyCase) {
  const Setting* s = Find("target-file-size");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Find("timelake.target-file-size"), s);
  EXPECT_EQ(Find("timelake.target_file_size"), s);
  EXPECT_EQ(Find("target_file_size"), s);
  EXPECT_EQ(Find("TIMELAKE.Target_File-Size"), s);
  EXPECT_EQ(s->PropertyKey(), "timelake.target-file-size");
  EXPECT_EQ(s->SqlName(), "timelake.target_file_size");
  EXPECT_EQ(Find("timelake.no-such-thing"), nullptr);
  EXPECT_EQ(Find(""), nullptr);
  // Timelake 0.7 stores chunk as chunk-interval.
  EXPECT_EQ(Find("timelake.chunk-interval"), Find("chunk"));
  EXPECT_EQ(Find("chunk")->PropertyKey(), "timelake.chunk-interval");
}

TEST(SettingsTest, ValidateChecksTypes) {
  TL_ASSERT_OK(Validate(*Find("auto-maintain"), "off"));
  testing::ExpectError(Validate(*Find("auto-maintain"), "maybe"), ErrorKind::kInvalid,
                       "timelake.auto-maintain");
  TL_ASSERT_OK(Validate(*Find("compact-min-files"), "4"));
  testing::ExpectError(Validate(*Find("compact-min-files"), "-1"), ErrorKind::kInvalid,
                       "non-negative integer");
  TL_ASSERT_OK_AND_ASSIGN(auto bytes, AsInt(*Find("target-file-size"), "128MiB"));
  EXPECT_EQ(bytes, 128ll << 20);
  TL_ASSERT_OK_AND_ASSIGN(bytes, AsInt(*Find("target-file-size"), "1048576"));
  EXPECT_EQ(bytes, 1ll << 20);
  testing::ExpectError(Validate(*Find("target-file-size"), "big"), ErrorKind::kInvalid,
                       "size");
  TL_ASSERT_OK_AND_ASSIGN(auto ms, AsMillis(*Find("retention"), "90d"));
  EXPECT_EQ(ms, 90ll * 24 * 3600 * 1000);
  testing::ExpectError(Validate(*Find("retention"), "soon"), ErrorKind::kInvalid,
                       "duration");
  TL_ASSERT_OK(Validate(*Find("read-dedup-strategy"), "keys-first"));
  testing::ExpectError(Validate(*Find("read-dedup-strategy"), "fast"),
                       ErrorKind::kInvalid, "merge,keys-first");
}

TEST(SettingsTest, PrecedenceIsCallSessionTableDefault) {
  const std::map<std::string, std::string> table = {{"timelake.compact-min-files", "3"},
                                                    {"timelake.read-dedup", "false"}};
  const std::map<std::string, std::string> session = {{"timelake.read_dedup", "true"},
                                                      {"compact_min_files", "5"}};
  const std::map<std::string, std::string> call = {{"compact-min-files", "7"}};
  EXPECT_EQ(Resolver(nullptr, nullptr, nullptr).Get("compact-min-files"), "2");
  EXPECT_EQ(Resolver(nullptr, nullptr, &table).Get("compact-min-files"), "3");
  EXPECT_EQ(Resolver(nullptr, &session, &table).Get("compact-min-files"), "5");
  EXPECT_EQ(Resolver(&call, &session, &table).Get("compact-min-files"), "7");
  TL_ASSERT_OK_AND_ASSIGN(auto dedup,
                          Resolver(nullptr, nullptr, &table).GetBool("read-dedup"));
  EXPECT_FALSE(dedup);
  TL_ASSERT_OK_AND_ASSIGN(dedup,
                          Resolver(nullptr, &session, &table).GetBool("read-dedup"));
  EXPECT_TRUE(dedup);
  EXPECT_EQ(Resolver(nullptr, nullptr, nullptr).Get("retention"), std::nullopt);
}

TEST(SettingsTest, TablePropertiesAreValidatedByTheRegistry) {
  TableOptions options;
  options.time_column = "time";
  options.series_key = {"host"};
  options.properties = {{"TIMELAKE.Compact_Min_Files", "4"}, {"owner", "ops"}};
  TL_ASSERT_OK_AND_ASSIGN(auto props, internal::NewTableProperties(options));
  EXPECT_EQ(props.at("timelake.compact-min-files"), "4");
  EXPECT_EQ(props.at("owner"), "ops");
  EXPECT_EQ(props.at("timelake.chunk-interval"), "day");
  EXPECT_EQ(props.at("timelake.dedup"), "true");

  options.properties = {{"timelake.compact-min-files", "four"}};
  testing::ExpectError(internal::NewTableProperties(options).status(),
                       ErrorKind::kInvalid, "timelake.compact-min-files");
  options.properties = {{"timelake.compact-min-filez", "4"}};
  testing::ExpectError(internal::NewTableProperties(options).status(),
                       ErrorKind::kInvalid, "unknown setting");
  options.properties = {{"timelake.format-version", "9.9.9"}};
  testing::ExpectError(internal::NewTableProperties(options).status(),
                       ErrorKind::kInvalid, "managed");
  options.properties = {{"timelake.time-column", "other"}};
  testing::ExpectError(internal::NewTableProperties(options).status(),
                       ErrorKind::kInvalid, "table options");
  options.properties = {{"timelake.dedup", "false"}};
  TL_ASSERT_OK_AND_ASSIGN(props, internal::NewTableProperties(options));
  EXPECT_EQ(props.at("timelake.dedup"), "false");

  TL_ASSERT_OK_AND_ASSIGN(auto key, internal::AlterableKey("timelake.Retention"));
  EXPECT_EQ(key, "timelake.retention");
  testing::ExpectError(internal::AlterableKey("timelake.chunk").status(),
                       ErrorKind::kInvalid, "fixed when the table is created");
  testing::ExpectError(internal::AlterableKey("timelake.rollups").status(),
                       ErrorKind::kInvalid, "managed");
}

TEST(SettingsTest, DocsAreGeneratedFromTheRegistry) {
  std::ifstream in(std::string(TIMELAKE_SOURCE_DIR) + "/docs/settings.md");
  ASSERT_TRUE(in) << "docs/settings.md missing";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), Markdown())
      << "docs/settings.md is stale: regenerate it with "
         "`build/release/timelake settings --format markdown > docs/settings.md`";
}

}  // namespace
}  // namespace timelake::settings
