// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes the head object codec (metadata/timelake-head, format/head.h).
// Invariants: bad bytes are kCorrupt, never a crash; a head that decodes
// encodes and decodes again to the same version, metadata, files and index.

#include "fuzz/fuzz_check.h"
#include "timelake/format/head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using timelake::format::DecodeHead;
  using timelake::format::EncodeHead;
  auto head = DecodeHead(timelake::fuzz::AsText(data, size), "fuzz://timelake-head");
  if (!head.ok()) {
    timelake::fuzz::CheckErrorKind(head.status(), {timelake::ErrorKind::kCorrupt});
    return 0;
  }
  auto bytes = EncodeHead(*head);
  if (!bytes.ok()) {
    // Arrow may refuse to re-encode what it decoded only for data no writer
    // produces; that is an error value, never a crash.
    return 0;
  }
  auto again = DecodeHead((*bytes)->ToString(), "fuzz://re-encoded");
  TL_FUZZ_CHECK(again.ok(), "a re-encoded head does not decode: %s",
                again.status().ToString().c_str());
  TL_FUZZ_CHECK(again->version == head->version, "version changed");
  TL_FUZZ_CHECK(again->metadata_json == head->metadata_json, "metadata changed");
  TL_FUZZ_CHECK(again->files.size() == head->files.size(), "file count changed");
  for (size_t i = 0; i < head->files.size(); ++i) {
    TL_FUZZ_CHECK(again->files[i].data_file == head->files[i].data_file,
                  "file %zu changed", i);
  }
  TL_FUZZ_CHECK((again->last_values == nullptr) == (head->last_values == nullptr),
                "index presence changed");
  return 0;
}
