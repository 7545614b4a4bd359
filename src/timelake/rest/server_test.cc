// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The REST catalog (catalog_server.h) in process, on a memory warehouse,
// with cpp-httplib's client: listings and loads by name, updateTable
// commits racing direct appends (every one lands), requirement mismatches
// and bad requests answered with the spec's error and nothing committed,
// the body limit and the bearer token. The engines themselves (Spark,
// PyIceberg, DuckDB) are tests/engines/.

#include <atomic>
#include <thread>

#include <arrow/api.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "timelake/catalog_server.h"
#include "timelake/testing/matchers.h"
#include "timelake/timelake.h"

namespace timelake {
namespace {

using nlohmann::json;

std::shared_ptr<arrow::RecordBatch> Rows(int64_t first, int n) {
  arrow::TimestampBuilder time(arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                               arrow::default_memory_pool());
  arrow::Int64Builder device;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(time.Append((first + i) * 1'000'000).ok());
    EXPECT_TRUE(device.Append((first + i) % 7).ok());
  }
  auto schema = arrow::schema(
      {arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       arrow::field("device", arrow::int64())});
  return arrow::RecordBatch::Make(
      schema, n, {time.Finish().ValueOrDie(), device.Finish().ValueOrDie()});
}

class CatalogServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TL_ASSERT_OK_AND_ASSIGN(auto lake, Lake::Open("memory://"));
    lake_ = std::make_unique<Lake>(lake);
    TableOptions options;
    options.time_column = "time";
    options.series_key = {"device"};
    TL_ASSERT_OK_AND_ASSIGN(
        auto table, lake.CreateTable("iot.readings", *Rows(0, 1)->schema(), options));
    TL_ASSERT_OK(table.Append({Rows(0, 10)}).status());
  }
  void TearDown() override {
    server_.reset();
    Flush();
  }

  void Start(CatalogServerOptions options = {}) {
    options.port = 0;
    TL_ASSERT_OK_AND_ASSIGN(server_, CatalogServer::Start(*lake_, options));
  }

  httplib::Client Client() const {
    httplib::Client client("127.0.0.1", server_->port());
    client.set_read_timeout(60, 0);
    return client;
  }

  // The status and JSON body of one request.
  std::pair<int, json> Call(const std::string& method, const std::string& path,
                            const std::string& body = "",
                            const httplib::Headers& headers = {}) const {
    auto client = Client();
    httplib::Result r = method == "GET"      ? client.Get(path.c_str(), headers)
                        : method == "DELETE" ? client.Delete(path.c_str(), headers)
                                             : client.Post(path.c_str(), headers, body,
                                                           "application/json");
    EXPECT_TRUE(r) << method << " " << path << ": " << httplib::to_string(r.error());
    if (!r) return {0, nullptr};
    return {r->status, r->body.empty() ? json() : json::parse(r->body, nullptr, false)};
  }

  int64_t Version() const {
    return lake_->LoadTable("iot.readings").ValueOrDie().version();
  }

  std::unique_ptr<Lake> lake_;
  std::unique_ptr<CatalogServer> server_;
};

TEST_F(CatalogServerTest, ListsAndLoadsByName) {
  Start();
  auto [status, config] = Call("GET", "/v1/config");
  EXPECT_EQ(status, 200);
  EXPECT_FALSE(config["endpoints"].empty());
  auto [s1, namespaces] = Call("GET", "/v1/namespaces");
  EXPECT_EQ(s1, 200);
  EXPECT_EQ(namespaces["namespaces"], json::parse(R"([["iot"]])"));
  auto [s2, tables] = Call("GET", "/v1/namespaces/iot/tables");
  EXPECT_EQ(s2, 200);
  EXPECT_EQ(tables["identifiers"],
            json::parse(R"([{"namespace": ["iot"], "name": "readings"}])"));
  auto [s3, table] = Call("GET", "/v1/namespaces/iot/tables/readings");
  EXPECT_EQ(s3, 200);
  EXPECT_EQ(table["metadata"]["properties"]["timelake.time-column"], "time");
  EXPECT_NE(table["metadata-location"].get<std::string>().find("/v2.metadata.json"),
            std::string::npos);
  auto [s4, missing] = Call("GET", "/v1/namespaces/iot/tables/nope");
  EXPECT_EQ(s4, 404);
  EXPECT_EQ(missing["error"]["type"], "NoSuchTableException");
  EXPECT_EQ(missing["error"]["code"], 404);
}

TEST_F(CatalogServerTest, CommitsRaceDirectAppendsAndAllLand) {
  Start();
  constexpr int kCommits = 12, kAppends = 6;
  std::atomic<int> failures{0};
  std::thread appender([&] {
    for (int i = 0; i < kAppends; ++i) {
      auto table = lake_->LoadTable("iot.readings");
      if (!table.ok() || !table->Append({Rows(100 + i * 10, 10)}).ok()) ++failures;
    }
  });
  std::vector<std::thread> committers;
  for (int t = 0; t < 3; ++t) {
    committers.emplace_back([&, t] {
      for (int i = t; i < kCommits; i += 3) {
        json body = {{"requirements", json::array()},
                     {"updates",
                      {{{"action", "set-properties"},
                        {"updates", {{"k" + std::to_string(i), "v"}}}}}}};
        auto [status, reply] =
            Call("POST", "/v1/namespaces/iot/tables/readings", body.dump());
        if (status != 200) ++failures;
      }
    });
  }
  appender.join();
  for (auto& c : committers) c.join();
  EXPECT_EQ(failures, 0);
  TL_ASSERT_OK_AND_ASSIGN(auto table, lake_->LoadTable("iot.readings"));
  for (int i = 0; i < kCommits; ++i) {
    EXPECT_EQ(table.properties().count("k" + std::to_string(i)), 1u) << i;
  }
  Session session(*lake_);
  TL_ASSERT_OK_AND_ASSIGN(auto rows, session.Sql("SELECT count(*) FROM iot.readings"));
  EXPECT_EQ(
      std::static_pointer_cast<arrow::Int64Array>(rows->column(0)->chunk(0))->Value(0),
      10 + kAppends * 10);
}

TEST_F(CatalogServerTest, RefusalsCommitNothing) {
  Start();
  const int64_t version = Version();
  auto [s0, table] = Call("GET", "/v1/namespaces/iot/tables/readings");
  const std::string uuid = table["metadata"]["table-uuid"];
  const json set = {{"action", "set-properties"}, {"updates", {{"k", "v"}}}};
  struct Case {
    json requirement;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{
           {{{"type", "assert-table-uuid"}, {"uuid", uuid + "x"}}, "assert-table-uuid"},
           {{{"type", "assert-ref-snapshot-id"}, {"ref", "main"}, {"snapshot-id", 1}},
            "assert-ref-snapshot-id"},
           {{{"type", "assert-current-schema-id"}, {"current-schema-id", 5}},
            "assert-current-schema-id"},
           {{{"type", "assert-create"}}, "assert-create"}}) {
    json body = {{"requirements", {c.requirement}}, {"updates", {set}}};
    auto [status, reply] =
        Call("POST", "/v1/namespaces/iot/tables/readings", body.dump());
    EXPECT_EQ(status, 409) << c.says;
    EXPECT_EQ(reply["error"]["type"], "CommitFailedException");
    EXPECT_NE(reply["error"]["message"].get<std::string>().find(c.says),
              std::string::npos);
  }
  for (const char* body :
       {"{", "[]", R"({"requirements": [], "updates": [{"action": 1}]})",
        R"({"requirements": [], "updates": [{"action": "add-schema"}]})"}) {
    auto [status, reply] = Call("POST", "/v1/namespaces/iot/tables/readings", body);
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(reply["error"]["type"], "BadRequestException") << body;
  }
  auto [s1, r1] = Call("POST", "/v1/namespaces/nope/tables/readings",
                       R"({"requirements": [], "updates": []})");
  EXPECT_EQ(s1, 404);
  auto [s2, r2] = Call("GET", "/v1/namespaces/nope");
  EXPECT_EQ(s2, 404);
  EXPECT_EQ(r2["error"]["type"], "NoSuchNamespaceException");
  EXPECT_EQ(Version(), version);
}

TEST_F(CatalogServerTest, BodyLimitAndToken) {
  CatalogServerOptions options;
  options.max_body_bytes = 1024;
  options.token = "t0ken";
  std::vector<std::string> log;
  std::mutex mu;
  options.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(line);
  };
  Start(options);
  const httplib::Headers auth = {{"Authorization", "Bearer t0ken"}};
  auto [s0, r0] = Call("GET", "/v1/namespaces");
  EXPECT_EQ(s0, 401);
  EXPECT_EQ(r0["error"]["type"], "NotAuthorizedException");
  auto [s1, r1] = Call("GET", "/v1/namespaces", "", {{"Authorization", "Bearer t0kem"}});
  EXPECT_EQ(s1, 401);
  auto [s2, r2] = Call("GET", "/v1/namespaces", "", auth);
  EXPECT_EQ(s2, 200);
  auto [s3, r3] =
      Call("POST", "/v1/namespaces/iot/tables/readings", std::string(2048, ' '), auth);
  EXPECT_EQ(s3, 413);
  EXPECT_EQ(r3["error"]["code"], 413);
  // The server logs a request after sending its response: stop it (joining its
  // threads) before reading the log, which lives on this frame.
  server_.reset();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(log.empty());
  for (const auto& line : log) EXPECT_EQ(line.find("t0ken"), std::string::npos) << line;
}

}  // namespace
}  // namespace timelake
