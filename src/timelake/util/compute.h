// Copyright 2026 The Timelake Authors. Apache-2.0.

#ifndef TIMELAKE_UTIL_COMPUTE_H_
#define TIMELAKE_UTIL_COMPUTE_H_

#include <memory>
#include <vector>

#include <arrow/array.h>
#include <arrow/compute/initialize.h>
#include <arrow/result.h>

namespace timelake::internal {

// Registers Arrow's compute kernels (sort, take, cast, ...) once per
// process; library entry points that use them call this first, so C++
// users need not know about arrow::compute::Initialize().
inline arrow::Status EnsureCompute() {
  static const arrow::Status status = arrow::compute::Initialize();
  return status;
}

// Whether row i equals row i + 1 on every one of `keys` (arrays of `n` rows,
// n >= 2), nulls equal to nulls: n - 1 values.
arrow::Result<std::shared_ptr<arrow::BooleanArray>> SameAsNext(
    const std::vector<std::shared_ptr<arrow::Array>>& keys, int64_t n);

}  // namespace timelake::internal

#endif  // TIMELAKE_UTIL_COMPUTE_H_
