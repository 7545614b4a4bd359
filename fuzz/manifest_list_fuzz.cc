// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes ReadManifestList, the reader of the manifest list a snapshot points
// at. Invariants: errors are kCorrupt or kUnsupported; a list that
// WriteManifestList accepts (v2: every count present) reads back unchanged.

#include "fuzz/fuzz_check.h"
#include "timelake/format/manifest.h"

using timelake::ErrorKind;
namespace format = timelake::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto manifests = format::ReadManifestList(timelake::fuzz::AsText(data, size));
  if (!manifests.ok()) {
    timelake::fuzz::CheckErrorKind(manifests.status(),
                                   {ErrorKind::kCorrupt, ErrorKind::kUnsupported});
    return 0;
  }
  auto written = format::WriteManifestList(7, 6, 3, *manifests, "null");
  if (!written.ok()) {
    timelake::fuzz::CheckErrorKind(written.status(), {ErrorKind::kInvalid});
    return 0;
  }
  auto again = format::ReadManifestList(*written);
  TL_FUZZ_CHECK(again.ok(), "a written manifest list does not read: %s",
                again.status().ToString().c_str());
  TL_FUZZ_CHECK(*again == *manifests, "manifest list changed in a round trip");
  return 0;
}
