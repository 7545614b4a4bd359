// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Helpers shared by the fuzz targets in this folder. Each target is a libFuzzer
// entry point (LLVMFuzzerTestOneInput) over one decoder of stored bytes; the
// same source is linked either with libFuzzer (`make fuzz`, clang with
// ASAN+UBSAN) or with replay_main.cc, which runs the committed corpus as a
// regression test under `ctest`.
//
// A target fails by calling TL_FUZZ_CHECK (which prints and aborts, also in
// release builds where assert() is compiled out). Every decoder must return
// either a value that satisfies the target's invariants or an error of one of
// the kinds its header documents; an exception escaping a decoder aborts too,
// since fuzz targets are built without a handler for it.

#ifndef TIMELAKE_FUZZ_FUZZ_CHECK_H_
#define TIMELAKE_FUZZ_FUZZ_CHECK_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "timelake/status.h"

// Aborts with a message when `cond` is false, in every build type.
#define TL_FUZZ_CHECK(cond, ...)                                                         \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, "  " __VA_ARGS__);                                            \
      std::fprintf(stderr, "\n");                                                        \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

namespace timelake::fuzz {

// The input as a string_view.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Aborts unless `status` is an error of one of `kinds`: a decoder may reject
// bad bytes only in the ways its header documents.
inline void CheckErrorKind(const arrow::Status& status,
                           std::initializer_list<ErrorKind> kinds) {
  TL_FUZZ_CHECK(!status.ok(), "expected an error");
  const ErrorKind kind = KindOf(status);
  for (ErrorKind k : kinds) {
    if (k == kind) return;
  }
  TL_FUZZ_CHECK(false, "error of unexpected kind '%s': %s",
                std::string(ErrorKindName(kind)).c_str(), status.ToString().c_str());
}

}  // namespace timelake::fuzz

#endif  // TIMELAKE_FUZZ_FUZZ_CHECK_H_
