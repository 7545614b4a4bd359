// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes TableName::Parse (table names come from users and from the folder
// names a listing of the warehouse returns). Invariants: a parsed name has two
// valid parts that are safe path segments and round-trips through ToString();
// errors are kInvalid and their message is one line.

#include "fuzz/fuzz_check.h"
#include "timelake/timelake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = timelake::fuzz::AsText(data, size);
  auto name = timelake::TableName::Parse(text);
  if (!name.ok()) {
    timelake::fuzz::CheckErrorKind(name.status(), {timelake::ErrorKind::kInvalid});
    TL_FUZZ_CHECK(name.status().message().find('\n') == std::string::npos,
                  "multi-line message: %s", name.status().ToString().c_str());
    return 0;
  }
  for (const std::string* part : {&name->ns(), &name->name()}) {
    TL_FUZZ_CHECK(timelake::ValidateNamePart(*part, "part").ok(), "invalid part '%s'",
                  part->c_str());
    TL_FUZZ_CHECK(*part != "." && *part != ".." && part->find('/') == std::string::npos,
                  "unsafe path segment '%s'", part->c_str());
  }
  auto again = timelake::TableName::Parse(name->ToString());
  TL_FUZZ_CHECK(again.ok() && *again == *name, "'%s' does not parse back",
                name->ToString().c_str());
  if (text.find('.') == std::string_view::npos) {
    TL_FUZZ_CHECK(name->ns() == timelake::kDefaultNamespace && name->name() == text,
                  "a bare name lands in the default namespace");
  } else {
    TL_FUZZ_CHECK(name->ToString() == text, "'%s' != '%.*s'", name->ToString().c_str(),
                  static_cast<int>(size), text.data());
  }
  return 0;
}
