// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes IcebergToArrow on Iceberg schema JSON (the "schemas" of table
// metadata and the `schema` header of manifests). Invariants: errors are
// kCorrupt; every Arrow schema it returns converts back to Iceberg
// (ArrowToIceberg), and after that one normalisation the conversions are a
// fixed point: Iceberg -> Arrow -> Iceberg -> Arrow gives the same schema,
// field ids included.

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "timelake/format/schema.h"

using timelake::ErrorKind;
namespace format = timelake::format;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(
      timelake::fuzz::AsText(data, size), /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  auto schema = format::IcebergToArrow(doc);
  if (!schema.ok()) {
    timelake::fuzz::CheckErrorKind(schema.status(), {ErrorKind::kCorrupt});
    return 0;
  }
  for (const auto& field : (*schema)->fields()) {
    TL_FUZZ_CHECK(format::FieldId(*field).has_value(), "field '%s' lost its id",
                  field->name().c_str());
  }

  int last_id = 0;
  auto iceberg = format::ArrowToIceberg(**schema, 0, &last_id);
  TL_FUZZ_CHECK(iceberg.ok(), "%s does not convert back: %s",
                (*schema)->ToString().c_str(), iceberg.status().ToString().c_str());
  auto normalised = format::IcebergToArrow(*iceberg);
  TL_FUZZ_CHECK(normalised.ok(), "%s: %s", iceberg->dump().c_str(),
                normalised.status().ToString().c_str());
  auto iceberg2 = format::ArrowToIceberg(**normalised, 0, &last_id);
  TL_FUZZ_CHECK(iceberg2.ok() && *iceberg2 == *iceberg, "not a fixed point: %s",
                iceberg->dump().c_str());
  auto again = format::IcebergToArrow(*iceberg2);
  TL_FUZZ_CHECK(again.ok() && (*again)->Equals(**normalised, /*check_metadata=*/true),
                "not a fixed point: %s", (*normalised)->ToString(true).c_str());
  return 0;
}
