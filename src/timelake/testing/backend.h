// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The storage backends that backend-dependent suites run on, as one
// GoogleTest parameter (tests only). Every such suite is instantiated the
// same way, so its tests are named after the backend
// ("Backends/StoreIo.LargeObjectStreamsInParts/S3"):
//
//   class Suite : public ::testing::TestWithParam<testing::Backend> { ... };
//   INSTANTIATE_TEST_SUITE_P(Backends, Suite, testing::kAllBackends,
//                            testing::BackendParamName);
//
// The S3 backend is the private server of storage/s3_test_server.h.

#ifndef TIMELAKE_TESTING_BACKEND_H_
#define TIMELAKE_TESTING_BACKEND_H_

#include <ostream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace timelake::testing {

enum class Backend {
  kMemory,  // "memory://": a private store per Store::Open
  kLocal,   // a temporary directory
  kS3,      // a prefix of the S3 test server's bucket
};

// "Memory", "Local", "S3": the suffix of a test's name.
inline constexpr std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kMemory:
      return "Memory";
    case Backend::kLocal:
      return "Local";
    case Backend::kS3:
      return "S3";
  }
  return "Unknown";
}

// How GoogleTest prints the parameter (in failure messages and listings).
inline void PrintTo(Backend backend, std::ostream* os) { *os << BackendName(backend); }

// The name generator of INSTANTIATE_TEST_SUITE_P.
inline std::string BackendParamName(const ::testing::TestParamInfo<Backend>& info) {
  return std::string(BackendName(info.param));
}

// Every backend: for suites that use one store object directly.
inline const auto kAllBackends =
    ::testing::Values(Backend::kMemory, Backend::kLocal, Backend::kS3);

// The backends a warehouse can be opened on more than once (several lakes,
// or a lake and the test looking at its objects): not memory, whose every
// open starts an empty store.
inline const auto kSharedBackends = ::testing::Values(Backend::kLocal, Backend::kS3);

}  // namespace timelake::testing

#endif  // TIMELAKE_TESTING_BACKEND_H_
