// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The storage conformance suite: the same cases against every backend
// (memory, a local directory, an S3 server), as Arrow's
// GenericFileSystemTest does. The S3 server is a private one
// (s3_test_server.h).

#include "timelake/storage/store.h"

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "timelake/storage/s3_test_server.h"
#include "timelake/testing/backend.h"
#include "timelake/testing/matchers.h"

namespace timelake::storage {
namespace {

namespace fs = std::filesystem;
using ::timelake::storage::testing::S3TestServer;
using ::timelake::testing::Backend;
using ::timelake::testing::ExpectError;

std::string RandomSuffix() {
  std::random_device rd;
  return std::to_string(rd()) + std::to_string(rd());
}

std::vector<std::string> Keys(const std::vector<ObjectMeta>& objects) {
  std::vector<std::string> keys;
  for (const auto& o : objects) keys.push_back(o.key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string_view View(const std::shared_ptr<arrow::Buffer>& buffer) {
  return {reinterpret_cast<const char*>(buffer->data()),
          static_cast<size_t>(buffer->size())};
}

std::string AsString(const std::shared_ptr<arrow::Buffer>& buffer) {
  return std::string(View(buffer));
}

class StoreConformance : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    switch (GetParam()) {
      case Backend::kMemory: {
        TL_ASSERT_OK_AND_ASSIGN(store_, Store::Open("memory://", {}));
        expected_root_ = "memory://";
        break;
      }
      case Backend::kLocal: {
        dir_ = fs::temp_directory_path() / ("timelake-store-" + RandomSuffix());
        TL_ASSERT_OK_AND_ASSIGN(store_, Store::Open((dir_ / "wh").string(), {}));
        expected_root_ = "file://" + (dir_ / "wh").string();
        break;
      }
      case Backend::kS3: {
        TL_ASSERT_OK_AND_ASSIGN(auto server, S3TestServer::Get());
        const std::string root =
            "s3://" + server.bucket + "/store-test-" + RandomSuffix();
        TL_ASSERT_OK_AND_ASSIGN(store_, Store::Open(root, server.StoreOptions()));
        expected_root_ = root;
        break;
      }
    }
  }

  void TearDown() override {
    if (store_ != nullptr && GetParam() == Backend::kS3) {
      // Other tests share the bucket.
      auto listing = store_->List("", /*delimiter=*/false);
      if (listing.ok()) {
        for (const auto& o : listing->objects) EXPECT_TRUE(store_->Delete(o.key).ok());
      }
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Whether the backend has put-if-match (not the local file system).
  bool HasConditionalUpdate() const { return GetParam() != Backend::kLocal; }

  std::shared_ptr<Store> store_;
  std::string expected_root_;
  fs::path dir_;
};

TEST_P(StoreConformance, RootAndUris) {
  EXPECT_EQ(store_->root_url(), expected_root_);
  const std::string uri = store_->Uri("ns/t/metadata/v1.metadata.json");
  EXPECT_NE(uri.find("ns/t/metadata/v1.metadata.json"), std::string::npos) << uri;
  TL_ASSERT_OK_AND_ASSIGN(auto key, store_->KeyOf(uri));
  EXPECT_EQ(key, "ns/t/metadata/v1.metadata.json");
  EXPECT_EQ(KindOf(store_->KeyOf("s3://elsewhere/x").status()), ErrorKind::kInvalid);
}

TEST_P(StoreConformance, TableFilesOfACopyResolveWhereItIsFound) {
  const std::string here = store_->Uri("ns/t");
  const std::string old = "s3://old-bucket/wh/ns/renamed";
  // In the warehouse: the path as recorded, even when the table's metadata
  // records another place (other engines' absolute paths stay valid).
  TL_ASSERT_OK_AND_ASSIGN(auto key,
                          store_->TableKeyOf(here + "/data/a.parquet", "ns/t", old));
  EXPECT_EQ(key, "ns/t/data/a.parquet");
  TL_ASSERT_OK_AND_ASSIGN(
      key, store_->TableKeyOf(store_->Uri("ns/u/data/b.parquet"), "ns/t", here));
  EXPECT_EQ(key, "ns/u/data/b.parquet");
  // Below the recorded location of a table copied here (renamed, too).
  TL_ASSERT_OK_AND_ASSIGN(
      key, store_->TableKeyOf(old + "/metadata/snap-1.avro", "ns/t", old + "/"));
  EXPECT_EQ(key, "ns/t/metadata/snap-1.avro");
  // Below another root at the same relative path (moved twice).
  TL_ASSERT_OK_AND_ASSIGN(
      key, store_->TableKeyOf("file:///mnt/wh2/ns/t/data/d=1/c.parquet", "ns/t", old));
  EXPECT_EQ(key, "ns/t/data/d=1/c.parquet");
  // Anything else stays outside the warehouse.
  const std::vector<std::string> outside = {
      "s3://elsewhere/x", "s3://old-bucket/wh/ns/other/x", "file:///mnt/ns/t", old};
  for (const auto& uri : outside) {
    EXPECT_EQ(KindOf(store_->TableKeyOf(uri, "ns/t", old).status()), ErrorKind::kInvalid)
        << uri;
  }
}

TEST_P(StoreConformance, PutGetOverwrite) {
  TL_ASSERT_OK(store_->Put("a/b/one.json", "hello world"));
  TL_ASSERT_OK_AND_ASSIGN(auto got, store_->Get("a/b/one.json"));
  EXPECT_EQ(AsString(got), "hello world");
  TL_ASSERT_OK(store_->Put("a/b/one.json", "bye"));
  TL_ASSERT_OK_AND_ASSIGN(got, store_->Get("a/b/one.json"));
  EXPECT_EQ(AsString(got), "bye");
  TL_ASSERT_OK(store_->Put("empty", ""));
  TL_ASSERT_OK_AND_ASSIGN(got, store_->Get("empty"));
  EXPECT_EQ(got->size(), 0);
}

TEST_P(StoreConformance, PutIfAbsent) {
  TL_ASSERT_OK(store_->Put("m/v1.json", "first", PutMode::kCreate));
  ExpectError(store_->Put("m/v1.json", "second", PutMode::kCreate),
              ErrorKind::kAlreadyExists, "put-if-absent of " + store_->Uri("m/v1.json"));
  TL_ASSERT_OK_AND_ASSIGN(auto got, store_->Get("m/v1.json"));
  EXPECT_EQ(AsString(got), "first");
}

TEST_P(StoreConformance, PutIfAbsentHasOneWinner) {
  constexpr int kWriters = 8;
  for (int round = 0; round < 3; ++round) {
    const std::string key = "race/v" + std::to_string(round) + ".json";
    std::vector<arrow::Status> results(kWriters);
    std::vector<std::thread> threads;
    for (int i = 0; i < kWriters; ++i) {
      threads.emplace_back([&, i] {
        // Big enough that the uploads overlap on a server.
        results[i] = store_->Put(key, std::string(64 * 1024, static_cast<char>('a' + i)),
                                 PutMode::kCreate);
      });
    }
    for (auto& t : threads) t.join();
    int winner = -1;
    for (int i = 0; i < kWriters; ++i) {
      if (results[i].ok()) {
        EXPECT_EQ(winner, -1) << "two winners: " << winner << " and " << i;
        winner = i;
      } else {
        EXPECT_EQ(KindOf(results[i]), ErrorKind::kAlreadyExists) << results[i].ToString();
      }
    }
    ASSERT_NE(winner, -1);
    TL_ASSERT_OK_AND_ASSIGN(auto got, store_->Get(key));
    EXPECT_EQ(AsString(got), std::string(64 * 1024, static_cast<char>('a' + winner)));
  }
}

TEST_P(StoreConformance, PutIfMatch) {
  TL_ASSERT_OK(store_->Put("hint.text", "1"));
  TL_ASSERT_OK_AND_ASSIGN(auto head, store_->Head("hint.text"));
  ASSERT_TRUE(head.etag.has_value());
  if (!HasConditionalUpdate()) {
    ExpectError(store_->PutIfMatch("hint.text", "2", *head.etag).status(),
                ErrorKind::kUnsupported, store_->Uri("hint.text"));
    return;
  }
  // A stale etag fails and changes nothing.
  ExpectError(store_->PutIfMatch("hint.text", "2", "\"0123456789abcdef\"").status(),
              ErrorKind::kAlreadyExists, "put-if-match of " + store_->Uri("hint.text"));
  TL_ASSERT_OK_AND_ASSIGN(auto got, store_->Get("hint.text"));
  EXPECT_EQ(AsString(got), "1");
  // The current one succeeds, and makes itself stale.
  TL_ASSERT_OK_AND_ASSIGN(auto new_etag,
                          store_->PutIfMatch("hint.text", "3", *head.etag));
  TL_ASSERT_OK_AND_ASSIGN(got, store_->Get("hint.text"));
  EXPECT_EQ(AsString(got), "3");
  TL_ASSERT_OK_AND_ASSIGN(auto after, store_->Head("hint.text"));
  if (!new_etag.empty()) {
    EXPECT_EQ(after.etag, new_etag);
  }
  EXPECT_NE(after.etag, head.etag);
  ExpectError(store_->PutIfMatch("hint.text", "4", *head.etag).status(),
              ErrorKind::kAlreadyExists, store_->Uri("hint.text"));
  // A missing object matches no etag.
  ExpectError(store_->PutIfMatch("missing.text", "5", *head.etag).status(),
              ErrorKind::kAlreadyExists, store_->Uri("missing.text"));
}

TEST_P(StoreConformance, RangedGet) {
  TL_ASSERT_OK(store_->Put("r.bin", "hello world"));
  TL_ASSERT_OK_AND_ASSIGN(auto got, store_->GetRange("r.bin", 0, 5));
  EXPECT_EQ(AsString(got), "hello");
  TL_ASSERT_OK_AND_ASSIGN(got, store_->GetRange("r.bin", 6, 5));
  EXPECT_EQ(AsString(got), "world");
  // Clamped at the end; at or past the end: empty.
  TL_ASSERT_OK_AND_ASSIGN(got, store_->GetRange("r.bin", 6, 100));
  EXPECT_EQ(AsString(got), "world");
  TL_ASSERT_OK_AND_ASSIGN(got, store_->GetRange("r.bin", 11, 5));
  EXPECT_EQ(got->size(), 0);
  TL_ASSERT_OK_AND_ASSIGN(got, store_->GetRange("r.bin", 50, 5));
  EXPECT_EQ(got->size(), 0);
}

TEST_P(StoreConformance, SizeAndHead) {
  TL_ASSERT_OK(store_->Put("s/eleven", "hello world"));
  TL_ASSERT_OK_AND_ASSIGN(auto size, store_->Size("s/eleven"));
  EXPECT_EQ(size, 11u);
  TL_ASSERT_OK_AND_ASSIGN(auto head, store_->Head("s/eleven"));
  EXPECT_EQ(head.size, 11u);
  EXPECT_TRUE(head.etag.has_value());
}

TEST_P(StoreConformance, ListWithAndWithoutDelimiter) {
  for (const char* key :
       {"a/b/one.json", "a/b/two.json", "a/c/three.json", "a/once.json", "z.json"}) {
    TL_ASSERT_OK(store_->Put(key, "x"));
  }
  TL_ASSERT_OK_AND_ASSIGN(auto all, store_->List("a", /*delimiter=*/false));
  EXPECT_EQ(Keys(all.objects),
            (std::vector<std::string>{"a/b/one.json", "a/b/two.json", "a/c/three.json",
                                      "a/once.json"}));
  EXPECT_TRUE(all.prefixes.empty());
  for (const auto& o : all.objects) {
    EXPECT_EQ(o.size, 1u) << o.key;
    EXPECT_GT(o.last_modified_ms, 0) << o.key;
  }
  TL_ASSERT_OK_AND_ASSIGN(auto shallow, store_->List("a/", /*delimiter=*/true));
  EXPECT_EQ(Keys(shallow.objects), std::vector<std::string>{"a/once.json"});
  std::sort(shallow.prefixes.begin(), shallow.prefixes.end());
  EXPECT_EQ(shallow.prefixes, (std::vector<std::string>{"a/b", "a/c"}));
  TL_ASSERT_OK_AND_ASSIGN(auto root, store_->List("", /*delimiter=*/true));
  EXPECT_EQ(Keys(root.objects), std::vector<std::string>{"z.json"});
  EXPECT_EQ(root.prefixes, std::vector<std::string>{"a"});
  TL_ASSERT_OK_AND_ASSIGN(auto everything, store_->List("", /*delimiter=*/false));
  EXPECT_EQ(everything.objects.size(), 5u);
  // A missing prefix lists nothing.
  for (bool delimiter : {false, true}) {
    TL_ASSERT_OK_AND_ASSIGN(auto none, store_->List("nothing/here", delimiter));
    EXPECT_TRUE(none.objects.empty());
    EXPECT_TRUE(none.prefixes.empty());
  }
}

TEST_P(StoreConformance, Delete) {
  TL_ASSERT_OK(store_->Put("d/x.json", "x"));
  TL_ASSERT_OK(store_->Delete("d/x.json"));
  EXPECT_EQ(KindOf(store_->Get("d/x.json").status()), ErrorKind::kNotFound);
  // Deleting what is not there is fine.
  TL_ASSERT_OK(store_->Delete("d/x.json"));
  TL_ASSERT_OK(store_->Delete("never/was.json"));
  TL_ASSERT_OK_AND_ASSIGN(auto listing, store_->List("d", /*delimiter=*/false));
  EXPECT_TRUE(listing.objects.empty());
}

TEST_P(StoreConformance, LargeObjectGoesUpInParts) {
  // Over the 8 MiB multipart threshold, not a multiple of the part size.
  std::string big(8 * 1024 * 1024 + 1234, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i % 251);
  TL_ASSERT_OK(store_->Put("big/blob.bin", big));
  TL_ASSERT_OK_AND_ASSIGN(auto size, store_->Size("big/blob.bin"));
  EXPECT_EQ(size, big.size());
  TL_ASSERT_OK_AND_ASSIGN(auto got, store_->Get("big/blob.bin"));
  EXPECT_TRUE(View(got) == big);
  // A range across the part boundary.
  const uint64_t offset = 8 * 1024 * 1024 - 100;
  TL_ASSERT_OK_AND_ASSIGN(got, store_->GetRange("big/blob.bin", offset, 1000));
  EXPECT_TRUE(View(got) == std::string_view(big).substr(offset, 1000));
}

TEST_P(StoreConformance, MissingObjectsAreNotFound) {
  const std::string uri = store_->Uri("missing/x.json");
  ExpectError(store_->Get("missing/x.json").status(), ErrorKind::kNotFound,
              "reading " + uri);
  ExpectError(store_->GetRange("missing/x.json", 0, 4).status(), ErrorKind::kNotFound,
              "reading " + uri);
  ExpectError(store_->Size("missing/x.json").status(), ErrorKind::kNotFound,
              "inspecting " + uri);
  ExpectError(store_->Head("missing/x.json").status(), ErrorKind::kNotFound, uri);
  EXPECT_FALSE(IsRetryable(store_->Get("missing/x.json").status()));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreConformance, ::timelake::testing::kAllBackends,
                         ::timelake::testing::BackendParamName);

// A wrong secret is refused (403 is not transient, so not retried) and never
// quoted back.
TEST(S3Store, WrongCredentialsFailWithoutRetryOrSecret) {
  TL_ASSERT_OK_AND_ASSIGN(auto server, S3TestServer::Get());
  auto options = server.StoreOptions();
  const std::string secret = "wrong-" + server.secret_access_key;
  options["aws_secret_access_key"] = secret;
  TL_ASSERT_OK_AND_ASSIGN(auto store,
                          Store::Open("s3://" + server.bucket + "/denied", options));
  for (const arrow::Status& st :
       {store->Get("x.json").status(), store->Put("x.json", "1", PutMode::kCreate),
        store->List("", /*delimiter=*/false).status()}) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(KindOf(st), ErrorKind::kStorage) << st.ToString();
    EXPECT_FALSE(IsRetryable(st)) << st.ToString();
    EXPECT_EQ(st.message().find(secret), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find(server.secret_access_key), std::string::npos)
        << st.message();
  }
}

}  // namespace
}  // namespace timelake::storage
