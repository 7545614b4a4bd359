// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The decoders of `timelake serve`'s requests: what Spark, PyIceberg and
// DuckDB send decodes; malformed, mistyped and unsupported input is an
// error of the documented kind naming what was wrong.

#include "timelake/rest/requests.h"

#include <gtest/gtest.h>

#include "timelake/testing/matchers.h"

namespace timelake::rest {
namespace {

TEST(RestRequests, NamesAreSafePathSegments) {
  TL_ASSERT_OK_AND_ASSIGN(auto ns, DecodeNamespace("iot"));
  EXPECT_EQ(ns, "iot");
  for (const char* bad : {"..", ".", "a/b", "", "a b", "a%2Fb"}) {
    EXPECT_EQ(KindOf(DecodeNamespace(bad).status()), ErrorKind::kInvalid) << bad;
    EXPECT_EQ(KindOf(DecodeTableName(bad).status()), ErrorKind::kInvalid) << bad;
  }
  EXPECT_EQ(KindOf(DecodeNamespace("a\x1f"
                                   "b")
                       .status()),
            ErrorKind::kNotFound);
}

TEST(RestRequests, CommitOfAnAppend) {
  const char* body = R"({
    "identifier": {"namespace": ["iot"], "name": "t"},
    "requirements": [{"type": "assert-table-uuid", "uuid": "u-1"},
                     {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 5}],
    "updates": [
      {"action": "add-snapshot", "snapshot": {"snapshot-id": 6, "parent-snapshot-id": 5,
        "sequence-number": 3, "timestamp-ms": 1764950000000,
        "manifest-list": "file:///w/iot/t/metadata/snap-6.avro",
        "summary": {"operation": "append", "added-records": "2"}, "schema-id": 0}},
      {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 6}]})";
  TL_ASSERT_OK_AND_ASSIGN(auto request, ParseCommitTableRequest(body));
  ASSERT_EQ(request.requirements.size(), 2u);
  EXPECT_EQ(request.requirements[0].kind, Requirement::Kind::kAssertTableUuid);
  EXPECT_EQ(request.requirements[0].uuid, "u-1");
  EXPECT_EQ(request.requirements[1].snapshot_id, 5);
  ASSERT_EQ(request.updates.size(), 2u);
  EXPECT_EQ(request.updates[0].kind, Update::Kind::kAddSnapshot);
  EXPECT_EQ(request.updates[0].snapshot.snapshot_id, 6);
  EXPECT_EQ(request.updates[0].snapshot.summary.at("added-records"), "2");
  EXPECT_EQ(request.updates[1].snapshot_id, 6);

  // A new table asserts that main has no snapshot: snapshot-id null.
  TL_ASSERT_OK_AND_ASSIGN(
      request, ParseCommitTableRequest(
                   R"({"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                       "snapshot-id": null}], "updates": []})"));
  EXPECT_FALSE(request.requirements[0].snapshot_id.has_value());
}

TEST(RestRequests, BadBodiesAreErrorsNamingTheCause) {
  struct Case {
    std::string body;
    ErrorKind kind;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{
           {"{not json", ErrorKind::kInvalid, "malformed JSON"},
           {"[]", ErrorKind::kInvalid, "not a JSON object"},
           {R"({"updates": []})", ErrorKind::kInvalid, "\"requirements\""},
           {R"({"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                "snapshot-id": 1.5}], "updates": []})",
            ErrorKind::kInvalid, "snapshot-id"},
           {R"({"requirements": [], "updates": [{"action": "add-schema"}]})",
            ErrorKind::kUnsupported, "add-schema"},
           {R"({"requirements": [{"type": "assert-something"}], "updates": []})",
            ErrorKind::kUnsupported, "assert-something"},
           {R"({"requirements": [], "updates": [{"action": "add-snapshot",
                "snapshot": {"snapshot-id": "x"}}]})",
            ErrorKind::kInvalid, "add-snapshot"},
           {std::string("{\"requirements\": ") + std::string(100000, '['),
            ErrorKind::kInvalid, "deeper"},
       }) {
    auto st = ParseCommitTableRequest(c.body).status();
    EXPECT_EQ(KindOf(st), c.kind) << c.body << ": " << st.ToString();
    EXPECT_NE(st.message().find(c.says), std::string::npos) << st.message();
  }
  EXPECT_EQ(KindOf(ParseCreateNamespaceRequest(R"({"namespace": ["a", "b"]})").status()),
            ErrorKind::kInvalid);
  EXPECT_EQ(KindOf(ParseCreateNamespaceRequest(R"({"namespace": [".."]})").status()),
            ErrorKind::kInvalid);
  EXPECT_EQ(KindOf(ParseCreateTableRequest(R"({"name": "t"})").status()),
            ErrorKind::kInvalid);
}

}  // namespace
}  // namespace timelake::rest
