// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes the checks `timelake serve` makes of a request's head before it
// routes it (src/timelake/rest/requests.h): PathStepsOut on the request
// target and ParseContentLength on the Content-Length header (the HTTP
// parsing itself is cpp-httplib's). The first byte picks the check, the
// rest is its input. Invariants: a target that passes, once its percent
// escapes are undone as the router does, has the same path segments as
// sent and none of them is "." or ".." or holds a backslash; a length that
// parses is the decimal number it spells, of at most 19 digits, and any
// other text is refused.

#include <algorithm>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "timelake/rest/requests.h"

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes undone (a '%' not followed by two hex digits stays).
std::string PercentDecoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
        HexValue(text[i + 2]) >= 0) {
      out += static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string> Segments(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input = timelake::fuzz::AsText(data + 1, size - 1);
  namespace rest = timelake::rest;
  if (data[0] % 2 == 0) {
    if (rest::PathStepsOut(input)) return 0;
    const std::string_view path = input.substr(0, input.find('?'));
    const auto raw = Segments(path);
    const auto decoded = Segments(PercentDecoded(path));
    TL_FUZZ_CHECK(raw.size() == decoded.size(), "'%.*s' gains a segment when decoded",
                  static_cast<int>(path.size()), path.data());
    for (const auto& segment : decoded) {
      TL_FUZZ_CHECK(
          segment != "." && segment != ".." && segment.find('\\') == std::string::npos,
          "'%.*s' passes with a segment '%s'", static_cast<int>(path.size()), path.data(),
          segment.c_str());
    }
  } else {
    const auto length = rest::ParseContentLength(input);
    const bool digits = !input.empty() && input.size() <= 19 &&
                        input.find_first_not_of("0123456789") == std::string_view::npos;
    TL_FUZZ_CHECK(length.has_value() == digits, "Content-Length '%.*s' %s",
                  static_cast<int>(input.size()), input.data(),
                  digits ? "refused" : "accepted");
    if (length) {
      const std::string spelled = std::to_string(*length);
      const size_t zeros = std::min(input.find_first_not_of('0'), input.size() - 1);
      TL_FUZZ_CHECK(spelled == input.substr(zeros), "Content-Length '%.*s' read as %s",
                    static_cast<int>(input.size()), input.data(), spelled.c_str());
    }
  }
  return 0;
}
