// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A fresh warehouse for one test on one backend (backend.h): in memory, on
// local disk or on the private S3 server of s3_test_server.h (tests only),
// for suites that run on several:
//
//   class Suite : public ::testing::TestWithParam<testing::Backend> {
//     void SetUp() override {
//       TL_ASSERT_OK_AND_ASSIGN(warehouse_, testing::TestWarehouse::Make(GetParam(),
//       "suite"));
//     }
//     void TearDown() override { Flush(); warehouse_.Remove(); }
//   };
//   INSTANTIATE_TEST_SUITE_P(Backends, Suite, testing::kSharedBackends,
//                            testing::BackendParamName);
//
// A memory warehouse exists only in store(): Lake::Open(url()) would open
// another, empty one. Suites that open lakes on the warehouse use
// kSharedBackends.

#ifndef TIMELAKE_TESTING_TEST_WAREHOUSE_H_
#define TIMELAKE_TESTING_TEST_WAREHOUSE_H_

#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include <arrow/result.h>
#include <gtest/gtest.h>

#include "timelake/storage/s3_test_server.h"
#include "timelake/storage/store.h"
#include "timelake/testing/backend.h"

namespace timelake::testing {

class TestWarehouse {
 public:
  // A new memory store, a temporary directory "timelake-TAG-<random>", or
  // the prefix of that name in the S3 server's bucket (shared with other
  // tests).
  static arrow::Result<TestWarehouse> Make(Backend backend, const std::string& tag) {
    std::random_device rd;
    const std::string name =
        "timelake-" + tag + "-" + std::to_string(rd()) + std::to_string(rd());
    TestWarehouse w;
    switch (backend) {
      case Backend::kMemory:
        w.url_ = "memory://";
        break;
      case Backend::kLocal:
        w.dir_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::create_directories(w.dir_);
        w.url_ = w.dir_.string();
        break;
      case Backend::kS3: {
        ARROW_ASSIGN_OR_RAISE(auto server, storage::testing::S3TestServer::Get());
        w.url_ = "s3://" + server.bucket + "/" + name;
        w.options_ = server.StoreOptions();
        break;
      }
    }
    ARROW_ASSIGN_OR_RAISE(w.store_, storage::Store::Open(w.url_, w.options_));
    return w;
  }

  const std::string& url() const { return url_; }
  const std::map<std::string, std::string>& options() const { return options_; }
  const storage::Store& store() const { return *store_; }
  // The same store, for APIs that share its ownership (storage/io.h).
  const std::shared_ptr<storage::Store>& shared_store() const { return store_; }

  // The keys of every object under the folder `prefix` ("" for all). On
  // local disk, every file, including the local store's hidden staging files
  // ("name#N") that a listing skips; in memory and on S3, the listing.
  std::set<std::string> Keys(const std::string& prefix = "") const {
    std::set<std::string> out;
    if (!dir_.empty()) {
      if (!std::filesystem::exists(dir_ / prefix)) return out;
      for (const auto& e : std::filesystem::recursive_directory_iterator(dir_ / prefix)) {
        if (e.is_regular_file())
          out.insert(std::filesystem::relative(e.path(), dir_).string());
      }
      return out;
    }
    auto listing = store_->List(prefix, /*delimiter=*/false);
    EXPECT_TRUE(listing.ok()) << listing.status().ToString();
    if (listing.ok()) {
      for (const auto& o : listing->objects) out.insert(o.key);
    }
    return out;
  }

  // Deletes the warehouse and everything in it (after Flush(): background
  // writes would leave objects behind).
  void Remove() const {
    if (store_ == nullptr) return;
    if (!dir_.empty()) {
      std::filesystem::remove_all(dir_);
      return;
    }
    for (const auto& key : Keys()) EXPECT_TRUE(store_->Delete(key).ok()) << key;
  }

 private:
  std::string url_;
  std::map<std::string, std::string> options_;
  std::filesystem::path dir_;  // local only
  std::shared_ptr<storage::Store> store_;
};

}  // namespace timelake::testing

#endif  // TIMELAKE_TESTING_TEST_WAREHOUSE_H_
