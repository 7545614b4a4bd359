// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes Session::Parse (src/timelake/read/statement.cc), Timelake's own
// reader of the SQL scripts users send through the CLI, Python and the C++
// API: the split on ';' outside strings and comments, and the statements it
// reads itself rather than DataFusion (SET, DELETE FROM, and CREATE /
// REFRESH / DROP MATERIALIZED ROLLUP with their WITH (…) options).
// Invariants: errors are kInvalid naming a line; statements are trimmed and
// non-empty, start on a line of the script, and all but the last ended with
// ';'; a statement's own text parses alone to the same statement.

#include <algorithm>
#include <cctype>
#include <string>

#include "fuzz/fuzz_check.h"
#include "timelake/timelake.h"

namespace {

using timelake::Statement;

bool Same(const Statement& a, const Statement& b) {
  if (a.kind != b.kind || a.text != b.text || a.name != b.name || a.value != b.value ||
      a.rollup.has_value() != b.rollup.has_value()) {
    return false;
  }
  if (!a.rollup) return true;
  const auto& x = *a.rollup;
  const auto& y = *b.rollup;
  return x.kind == y.kind && x.name == y.name && x.if_not_exists == y.if_not_exists &&
         x.if_exists == y.if_exists && x.select == y.select && x.options == y.options;
}

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view script = timelake::fuzz::AsText(data, size);
  auto statements = timelake::Session::Parse(script);
  if (!statements.ok()) {
    timelake::fuzz::CheckErrorKind(statements.status(), {timelake::ErrorKind::kInvalid});
    TL_FUZZ_CHECK(statements.status().message().find("line ") != std::string::npos,
                  "the error names no line: %s", statements.status().ToString().c_str());
    return 0;
  }
  const int lines = 1 + static_cast<int>(std::count(script.begin(), script.end(), '\n'));
  for (size_t i = 0; i < statements->size(); ++i) {
    const Statement& s = (*statements)[i];
    TL_FUZZ_CHECK(!s.text.empty() && !IsSpace(s.text.front()) && !IsSpace(s.text.back()),
                  "statement %zu is not trimmed: '%s'", i, s.text.c_str());
    TL_FUZZ_CHECK(s.line >= 1 && s.line <= lines, "statement %zu on line %d of %d", i,
                  s.line, lines);
    TL_FUZZ_CHECK(s.terminated || i + 1 == statements->size(),
                  "statement %zu is unterminated but not the last", i);
    // A rollup statement has its parts, except one still being typed (no ';'
    // yet) that does not parse so far.
    TL_FUZZ_CHECK(!s.rollup || s.kind == Statement::Kind::kRollup,
                  "statement %zu: a rollup's parts for another statement", i);
    TL_FUZZ_CHECK(s.rollup || s.kind != Statement::Kind::kRollup || !s.terminated,
                  "statement %zu: a rollup statement without its parts", i);
    if (s.kind == Statement::Kind::kSet) {
      TL_FUZZ_CHECK(!s.name.empty() && !s.value.empty(), "SET without a name or value");
    }
    auto alone = timelake::Session::Parse(s.text);
    TL_FUZZ_CHECK(alone.ok() && alone->size() == 1 && Same(alone->front(), s),
                  "statement %zu ('%s') parses otherwise alone: %s", i, s.text.c_str(),
                  alone.ok() ? std::to_string(alone->size()).c_str()
                             : alone.status().ToString().c_str());
  }
  return 0;
}
