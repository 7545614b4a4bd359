// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes TableMetadata::Parse, the reader of v<N>.metadata.json. Invariants:
// errors are kCorrupt or kUnsupported (as the header documents); a parsed
// metadata serialises to text that parses again and serialises the same (the
// rewrite a commit does is stable); the accessors Parse() guarantees do not
// throw; and the change an append makes (log the previous file, add a
// snapshot) still serialises to metadata that parses.

#include <algorithm>

#include "fuzz/fuzz_check.h"
#include "timelake/format/schema.h"
#include "timelake/format/table_metadata.h"

using timelake::ErrorKind;
namespace format = timelake::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed =
      format::TableMetadata::Parse(timelake::fuzz::AsText(data, size), "fuzz.json");
  if (!parsed.ok()) {
    timelake::fuzz::CheckErrorKind(parsed.status(),
                                   {ErrorKind::kCorrupt, ErrorKind::kUnsupported});
    return 0;
  }
  format::TableMetadata& m = *parsed;

  // What Parse() guarantees.
  const nlohmann::json& schema = m.CurrentSchema();
  (void)m.DefaultSpec();
  if (m.current_snapshot_id) {
    TL_FUZZ_CHECK(m.CurrentSnapshot() != nullptr, "current snapshot missing");
  }
  for (const auto& s : m.snapshots) {
    (void)format::SummaryInt(s, format::summary::kTotalRecords);
  }
  auto arrow_schema = format::IcebergToArrow(schema);
  if (!arrow_schema.ok()) {
    timelake::fuzz::CheckErrorKind(arrow_schema.status(), {ErrorKind::kCorrupt});
  }

  // Serialise, parse, serialise: the same text.
  const std::string first = m.Serialize();
  auto again = format::TableMetadata::Parse(first, "fuzz.json (rewritten)");
  TL_FUZZ_CHECK(again.ok(), "serialised metadata does not parse: %s",
                again.status().ToString().c_str());
  const std::string second = again->Serialize();
  TL_FUZZ_CHECK(first == second, "serialisation is not stable:\n%s\n---\n%s",
                first.c_str(), second.c_str());

  // What an append does to the loaded metadata.
  format::Snapshot snapshot;
  snapshot.snapshot_id = 1;
  for (const auto& s : m.snapshots) {
    snapshot.snapshot_id = std::max(snapshot.snapshot_id, s.snapshot_id);
  }
  if (snapshot.snapshot_id < INT64_MAX) ++snapshot.snapshot_id;
  snapshot.parent_snapshot_id = m.current_snapshot_id;
  snapshot.sequence_number =
      m.last_sequence_number < INT64_MAX ? m.last_sequence_number + 1 : INT64_MAX;
  snapshot.timestamp_ms = m.last_updated_ms;
  snapshot.manifest_list = m.location + "/metadata/snap.avro";
  snapshot.summary[format::summary::kOperation] = "append";
  m.LogPreviousMetadata(m.location + "/metadata/v1.metadata.json", m.last_updated_ms, 3);
  m.AddSnapshot(std::move(snapshot));
  auto appended = format::TableMetadata::Parse(m.Serialize(), "fuzz.json (appended)");
  TL_FUZZ_CHECK(appended.ok(), "metadata after an append does not parse: %s",
                appended.status().ToString().c_str());
  return 0;
}
