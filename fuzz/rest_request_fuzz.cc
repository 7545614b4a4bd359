// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes the decoders of what clients send `timelake serve`
// (src/timelake/rest/requests.h): the first byte picks the decoder, the
// rest is its input (a path segment or a JSON body). Invariants: errors are
// kInvalid, kNotFound (multi-level namespaces) or kUnsupported (updates of
// other kinds) with a one-line message; decoded names are safe path
// segments; a decoded add-snapshot survives its JSON round trip.

#include "fuzz/fuzz_check.h"
#include "timelake/rest/requests.h"
#include "timelake/timelake.h"

namespace {

using timelake::ErrorKind;

void CheckError(const arrow::Status& st) {
  timelake::fuzz::CheckErrorKind(
      st, {ErrorKind::kInvalid, ErrorKind::kNotFound, ErrorKind::kUnsupported});
}

void CheckName(const std::string& part) {
  TL_FUZZ_CHECK(timelake::ValidateNamePart(part, "part").ok(), "invalid name '%s'",
                part.c_str());
  TL_FUZZ_CHECK(part != "." && part != ".." && part.find('/') == std::string::npos,
                "unsafe path segment '%s'", part.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input = timelake::fuzz::AsText(data + 1, size - 1);
  namespace rest = timelake::rest;
  switch (data[0] % 5) {
    case 0: {
      auto ns = rest::DecodeNamespace(input);
      if (!ns.ok()) return CheckError(ns.status()), 0;
      CheckName(*ns);
      break;
    }
    case 1: {
      auto name = rest::DecodeTableName(input);
      if (!name.ok()) return CheckError(name.status()), 0;
      CheckName(*name);
      break;
    }
    case 2: {
      auto request = rest::ParseCreateNamespaceRequest(input);
      if (!request.ok()) return CheckError(request.status()), 0;
      CheckName(request->ns);
      break;
    }
    case 3: {
      auto request = rest::ParseCreateTableRequest(input);
      if (!request.ok()) return CheckError(request.status()), 0;
      CheckName(request->name);
      TL_FUZZ_CHECK(request->schema.is_object(), "schema is not an object");
      break;
    }
    case 4: {
      auto request = rest::ParseCommitTableRequest(input);
      if (!request.ok()) return CheckError(request.status()), 0;
      for (const auto& u : request->updates) {
        if (u.kind != rest::Update::Kind::kAddSnapshot) continue;
        auto again = timelake::format::SnapshotFromJson(
            timelake::format::SnapshotToJson(u.snapshot));
        TL_FUZZ_CHECK(again.ok() && again->snapshot_id == u.snapshot.snapshot_id &&
                          again->manifest_list == u.snapshot.manifest_list &&
                          again->summary == u.snapshot.summary,
                      "add-snapshot does not round-trip");
      }
      break;
    }
  }
  return 0;
}
