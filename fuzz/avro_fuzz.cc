// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes ReadAvroFile, the Avro object container reader under manifests and
// manifest lists (with lowered limits, as avro.h advises for fuzzing).
// Invariants: errors are kCorrupt or kUnsupported; the writer schema written
// back as JSON parses to the same schema; every record read encodes again
// with that schema, and a container file written from the records reads back
// to records with the same encoding.

#include <utility>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "timelake/format/avro.h"

using timelake::ErrorKind;
namespace format = timelake::format;

namespace {

// The binary encoding of every record, concatenated.
std::string EncodeAll(const format::AvroSchema& schema,
                      const std::vector<format::AvroValue>& records) {
  std::string out;
  for (const auto& record : records) {
    auto st = format::EncodeAvroValue(schema, record, &out);
    TL_FUZZ_CHECK(st.ok(), "a decoded record does not encode: %s", st.ToString().c_str());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  format::AvroReadOptions options;
  options.max_block_bytes = 1 << 20;
  options.max_total_bytes = 4 << 20;
  auto file = format::ReadAvroFile(timelake::fuzz::AsText(data, size), options);
  if (!file.ok()) {
    timelake::fuzz::CheckErrorKind(file.status(),
                                   {ErrorKind::kCorrupt, ErrorKind::kUnsupported});
    return 0;
  }

  const std::string schema_json = file->schema.ToString();
  auto reparsed = format::ParseAvroSchema(schema_json);
  TL_FUZZ_CHECK(reparsed.ok(), "the schema written back does not parse: %s\n%s",
                reparsed.status().ToString().c_str(), schema_json.c_str());
  TL_FUZZ_CHECK(reparsed->ToString() == schema_json, "schema JSON is not stable: %s",
                schema_json.c_str());

  const std::string encoded = EncodeAll(file->schema, file->records);

  std::vector<std::pair<std::string, std::string>> metadata;
  for (const auto& [key, value] : file->metadata) {
    if (key.rfind("avro.", 0) != 0) metadata.emplace_back(key, value);
  }
  format::AvroWriteOptions write_options;
  write_options.codec = "deflate";
  auto written =
      format::WriteAvroFile(file->schema, metadata, file->records, write_options);
  TL_FUZZ_CHECK(written.ok(), "records read do not write: %s",
                written.status().ToString().c_str());
  auto again = format::ReadAvroFile(*written, options);
  TL_FUZZ_CHECK(again.ok(), "a file written from read records does not read: %s",
                again.status().ToString().c_str());
  for (const auto& [key, value] : metadata) {
    auto it = again->metadata.find(key);
    TL_FUZZ_CHECK(it != again->metadata.end() && it->second == value,
                  "header key \"%s\" lost", key.c_str());
  }
  TL_FUZZ_CHECK(again->records.size() == file->records.size(), "records lost");
  TL_FUZZ_CHECK(EncodeAll(again->schema, again->records) == encoded,
                "records changed in a write/read round trip");
  return 0;
}
