// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/util/compute.h"

#include <arrow/compute/api.h>

#include "timelake/status.h"

namespace timelake::internal {

namespace cp = arrow::compute;

arrow::Result<std::shared_ptr<arrow::BooleanArray>> SameAsNext(
    const std::vector<std::shared_ptr<arrow::Array>>& keys, int64_t n) {
  arrow::Datum acc;
  for (const auto& key : keys) {
    auto a = key->Slice(0, n - 1);
    auto b = key->Slice(1, n - 1);
    TIMELAKE_ASSIGN_OR_RAISE(auto eq, cp::CallFunction("equal", {a, b}));
    TIMELAKE_ASSIGN_OR_RAISE(eq, cp::CallFunction("coalesce", {eq, arrow::Datum(false)}));
    if (key->null_count() > 0) {
      TIMELAKE_ASSIGN_OR_RAISE(auto na, cp::CallFunction("is_null", {a}));
      TIMELAKE_ASSIGN_OR_RAISE(auto nb, cp::CallFunction("is_null", {b}));
      TIMELAKE_ASSIGN_OR_RAISE(auto both, cp::CallFunction("and", {na, nb}));
      TIMELAKE_ASSIGN_OR_RAISE(eq, cp::CallFunction("or", {eq, both}));
    }
    if (acc.is_value()) {
      TIMELAKE_ASSIGN_OR_RAISE(acc, cp::CallFunction("and", {acc, eq}));
    } else {
      acc = eq;
    }
  }
  return std::static_pointer_cast<arrow::BooleanArray>(acc.make_array());
}

}  // namespace timelake::internal
