// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// GoogleTest helpers for arrow::Status / arrow::Result and Timelake's error
// kinds, shared by every test.

#ifndef TIMELAKE_TESTING_MATCHERS_H_
#define TIMELAKE_TESTING_MATCHERS_H_

#include <string_view>

#include <gtest/gtest.h>

#include "timelake/status.h"

// Asserts that a Status (or a Result's status()) is OK, printing it if not.
#define TL_ASSERT_OK(expr)                                    \
  do {                                                        \
    auto _st = (expr);                                        \
    ASSERT_TRUE(_st.ok()) << #expr << ": " << _st.ToString(); \
  } while (false)

#define TL_CONCAT_INNER(a, b) a##b
#define TL_CONCAT(a, b) TL_CONCAT_INNER(a, b)

// Asserts that a Result is OK and assigns its value: `lhs` may declare
// (`auto x`) or name an existing variable.
#define TL_ASSERT_OK_AND_ASSIGN(lhs, rexpr)                                \
  auto TL_CONCAT(_res_, __LINE__) = (rexpr);                               \
  ASSERT_TRUE(TL_CONCAT(_res_, __LINE__).ok())                             \
      << #rexpr << ": " << TL_CONCAT(_res_, __LINE__).status().ToString(); \
  lhs = std::move(TL_CONCAT(_res_, __LINE__)).ValueUnsafe()

namespace timelake::testing {

// Asserts that `status` is an error of `kind` whose message contains `text`.
inline void ExpectError(const arrow::Status& status, ErrorKind kind,
                        std::string_view text) {
  ASSERT_FALSE(status.ok()) << "expected an error containing \"" << text << "\"";
  EXPECT_EQ(KindOf(status), kind) << status.ToString();
  EXPECT_NE(status.message().find(text), std::string::npos)
      << "message \"" << status.message() << "\" lacks \"" << text << "\"";
}

}  // namespace timelake::testing

#endif  // TIMELAKE_TESTING_MATCHERS_H_
