// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes ReadManifest, the reader of Iceberg manifests written by any engine.
// Invariants: errors are kCorrupt or kUnsupported; the entries read can be
// summarised for a manifest list and inherit a manifest's fields without
// crashing; and entries that WriteManifest accepts read back unchanged.

#include <cmath>
#include <variant>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "timelake/format/manifest.h"

using timelake::ErrorKind;
namespace format = timelake::format;

namespace {

// NaN partition values compare unequal to themselves; such entries are not
// compared after the round trip.
bool HasNaN(const std::vector<format::ManifestEntry>& entries) {
  for (const auto& e : entries) {
    for (const auto& v : e.data_file.partition) {
      if (!v) continue;
      if (const float* f = std::get_if<float>(&*v); f && std::isnan(*f)) return true;
      if (const double* d = std::get_if<double>(&*v); d && std::isnan(*d)) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto manifest = format::ReadManifest(timelake::fuzz::AsText(data, size));
  if (!manifest.ok()) {
    timelake::fuzz::CheckErrorKind(manifest.status(),
                                   {ErrorKind::kCorrupt, ErrorKind::kUnsupported});
    return 0;
  }
  for (const auto& e : manifest->entries) {
    TL_FUZZ_CHECK(e.data_file.partition.size() == manifest->partition_type.size(),
                  "a partition tuple of %zu values for %zu fields",
                  e.data_file.partition.size(), manifest->partition_type.size());
  }

  auto summary = format::SummarizeManifest("m.avro", static_cast<int64_t>(size), 0, 1, 1,
                                           manifest->partition_type, manifest->entries);
  if (!summary.ok()) {
    timelake::fuzz::CheckErrorKind(summary.status(), {ErrorKind::kInvalid});
  } else {
    std::vector<format::ManifestEntry> inherited = manifest->entries;
    format::InheritManifestFileFields(*summary, &inherited);
    for (const auto& e : inherited) {
      TL_FUZZ_CHECK(e.snapshot_id.has_value(), "snapshot id not inherited");
    }
  }

  // Write the entries again (as a v2 manifest) and read them back.
  format::ManifestWriteOptions options;
  nlohmann::json spec = nlohmann::json::array();
  for (const auto& f : manifest->partition_type) {
    spec.push_back({{"source-id", 1},
                    {"field-id", f.field_id},
                    {"name", f.name},
                    {"transform", "identity"}});
  }
  options.partition_spec_json =
      spec.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  options.partition_type = manifest->partition_type;
  options.content = manifest->content;
  options.codec = "null";
  auto written = format::WriteManifest(options, manifest->entries);
  if (!written.ok()) {
    timelake::fuzz::CheckErrorKind(written.status(),
                                   {ErrorKind::kInvalid, ErrorKind::kUnsupported});
    return 0;
  }
  auto again = format::ReadManifest(*written);
  TL_FUZZ_CHECK(again.ok(), "a written manifest does not read: %s",
                again.status().ToString().c_str());
  TL_FUZZ_CHECK(again->partition_type == manifest->partition_type,
                "the partition type changed");
  TL_FUZZ_CHECK(again->entries.size() == manifest->entries.size(), "entries lost");
  if (!HasNaN(manifest->entries)) {
    TL_FUZZ_CHECK(again->entries == manifest->entries, "entries changed");
  }
  return 0;
}
