// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// ParseDuration / FormatDuration (public API, timelake.h).

#include <cctype>
#include <cstdint>
#include <limits>
#include <string>

#include "timelake/timelake.h"

namespace timelake {

namespace {

struct Unit {
  std::string_view names[4];
  int64_t ms;
};

constexpr int64_t kSecond = 1000;
constexpr int64_t kMinute = 60 * kSecond;
constexpr int64_t kHour = 60 * kMinute;
constexpr int64_t kDay = 24 * kHour;

// Largest first, as FormatDuration picks the largest exact unit.
constexpr Unit kUnits[] = {
    {{"y", "year", "years", "yr"}, 365 * kDay},
    {{"w", "week", "weeks", "wk"}, 7 * kDay},
    {{"d", "day", "days", ""}, kDay},
    {{"h", "hour", "hours", "hr"}, kHour},
    {{"m", "minute", "minutes", "min"}, kMinute},
    {{"s", "second", "seconds", "sec"}, kSecond},
    {{"ms", "millisecond", "milliseconds", "msec"}, 1},
};

arrow::Status Bad(std::string_view text, std::string_view why) {
  return Invalid("parsing duration '" + std::string(text) + "': " + std::string(why) +
                 " (expected e.g. 90d, 12h, 30m, 45s, 2w, 1y, 500ms or '3 hours')");
}

}  // namespace

arrow::Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  auto skip_space = [&] {
    while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  int64_t total = 0;
  int parts = 0;
  skip_space();
  while (i < n) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      return Bad(text, "expected a number at position " + std::to_string(i));
    }
    int64_t value = 0;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i]))) {
      const int digit = text[i] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        return Bad(text, "too large");
      value = value * 10 + digit;
      ++i;
    }
    skip_space();
    size_t start = i;
    while (i < n && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit(text.substr(start, i - start));
    for (auto& c : unit)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (unit.empty()) return Bad(text, "missing unit");
    const Unit* found = nullptr;
    for (const auto& u : kUnits) {
      for (auto name : u.names) {
        if (!name.empty() && name == unit) found = &u;
      }
    }
    if (found == nullptr) return Bad(text, "unknown unit '" + unit + "'");
    if (value > std::numeric_limits<int64_t>::max() / found->ms ||
        total > std::numeric_limits<int64_t>::max() - value * found->ms) {
      return Bad(text, "too large");
    }
    total += value * found->ms;
    ++parts;
    skip_space();
    if (i < n && text[i] == ',') {
      ++i;
      skip_space();
    }
  }
  if (parts == 0) return Bad(text, "empty");
  return std::chrono::milliseconds(total);
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  const int64_t ms = duration.count();
  if (ms == 0) return "0s";
  for (const auto& u : kUnits) {
    if (ms % u.ms == 0) return std::to_string(ms / u.ms) + std::string(u.names[0]);
  }
  return std::to_string(ms) + "ms";
}

}  // namespace timelake
