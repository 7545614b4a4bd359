// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes ParseDuration (durations in table properties, e.g. retention) and its
// inverse FormatDuration. Invariants: a parsed duration is non-negative and
// formats to text that parses back to the same value; errors are kInvalid.
// The first 8 bytes, read as a non-negative count of milliseconds, must also
// survive FormatDuration -> ParseDuration.

#include <chrono>
#include <cstring>
#include <limits>

#include "fuzz/fuzz_check.h"
#include "timelake/timelake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using std::chrono::milliseconds;
  using timelake::fuzz::AsText;
  const std::string_view text = AsText(data, size);

  auto parsed = timelake::ParseDuration(text);
  if (parsed.ok()) {
    TL_FUZZ_CHECK(parsed->count() >= 0, "negative duration from '%.*s'",
                  static_cast<int>(size), text.data());
    const std::string formatted = timelake::FormatDuration(*parsed);
    auto again = timelake::ParseDuration(formatted);
    TL_FUZZ_CHECK(again.ok() && *again == *parsed, "'%s' does not parse back to %lld ms",
                  formatted.c_str(), static_cast<long long>(parsed->count()));
  } else {
    timelake::fuzz::CheckErrorKind(parsed.status(), {timelake::ErrorKind::kInvalid});
  }

  if (size >= sizeof(int64_t)) {
    int64_t raw;
    std::memcpy(&raw, data, sizeof(raw));
    const milliseconds value(raw & std::numeric_limits<int64_t>::max());
    const std::string formatted = timelake::FormatDuration(value);
    auto back = timelake::ParseDuration(formatted);
    TL_FUZZ_CHECK(
        back.ok() && *back == value, "FormatDuration(%lld) = '%s' %s",
        static_cast<long long>(value.count()), formatted.c_str(),
        back.ok() ? "parses to another value" : back.status().ToString().c_str());
  }
  return 0;
}
