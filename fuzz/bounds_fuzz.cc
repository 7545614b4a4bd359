// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes the decoders of Iceberg's single-value serialization (the column
// bounds of manifests and the partition summaries of manifest lists). The
// first input byte picks an Arrow column type, the rest are the stored bound.
// Invariants: DecodeBound errors are kCorrupt (kUnsupported only for the
// types without an encoding); a decoded bound is valid, encodes again, and
// that encoding decodes to an equal scalar; the primitive decoders either
// succeed or fail with kCorrupt.

#include <memory>
#include <vector>

#include <arrow/extension/uuid.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "fuzz/fuzz_check.h"
#include "timelake/format/bounds.h"

using timelake::ErrorKind;
namespace format = timelake::format;

namespace {

struct Target {
  std::shared_ptr<arrow::DataType> type;
  bool supported;
};

const std::vector<Target>& Targets() {
  static const auto* targets = new std::vector<Target>{
      {arrow::boolean(), true},
      {arrow::int8(), true},
      {arrow::int16(), true},
      {arrow::int32(), true},
      {arrow::uint8(), true},
      {arrow::uint16(), true},
      {arrow::uint32(), true},
      {arrow::int64(), true},
      {arrow::date32(), true},
      {arrow::date64(), true},
      {arrow::time64(arrow::TimeUnit::MICRO), true},
      {arrow::timestamp(arrow::TimeUnit::MICRO), true},
      {arrow::timestamp(arrow::TimeUnit::MICRO, "+00:00"), true},
      {arrow::timestamp(arrow::TimeUnit::NANO, "UTC"), true},
      {arrow::float32(), true},
      {arrow::float64(), true},
      {arrow::utf8(), true},
      {arrow::large_utf8(), true},
      {arrow::utf8_view(), true},
      {arrow::binary(), true},
      {arrow::large_binary(), true},
      {arrow::binary_view(), true},
      {arrow::fixed_size_binary(16), true},
      {arrow::extension::uuid(), true},
      {arrow::decimal32(9, 2), true},
      {arrow::decimal64(18, 3), true},
      {arrow::decimal128(38, 10), true},
      {arrow::decimal128(5, 0), true},
      {arrow::decimal256(76, 20), true},
      {arrow::uint64(), false},
      {arrow::time32(arrow::TimeUnit::MILLI), false},
      {arrow::timestamp(arrow::TimeUnit::SECOND), false},
  };
  return *targets;
}

template <typename T>
void CheckPrimitive(const arrow::Result<T>& result) {
  if (!result.ok())
    timelake::fuzz::CheckErrorKind(result.status(), {ErrorKind::kCorrupt});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Target& target = Targets()[data[0] % Targets().size()];
  const std::string_view bytes = timelake::fuzz::AsText(data + 1, size - 1);

  CheckPrimitive(format::DecodeBoolean(bytes));
  CheckPrimitive(format::DecodeInt32(bytes));
  CheckPrimitive(format::DecodeInt64(bytes));
  CheckPrimitive(format::DecodeFloat(bytes));
  CheckPrimitive(format::DecodeDouble(bytes));
  CheckPrimitive(format::DecodeDecimal128(bytes));
  CheckPrimitive(format::DecodeDecimal256(bytes));

  auto decoded = format::DecodeBound(bytes, target.type);
  if (!decoded.ok()) {
    if (target.supported) {
      timelake::fuzz::CheckErrorKind(decoded.status(), {ErrorKind::kCorrupt});
    } else {
      timelake::fuzz::CheckErrorKind(decoded.status(), {ErrorKind::kUnsupported});
    }
    return 0;
  }
  TL_FUZZ_CHECK(target.supported, "%s decoded", target.type->ToString().c_str());
  const arrow::Scalar& scalar = **decoded;
  TL_FUZZ_CHECK(scalar.is_valid && scalar.type->Equals(*target.type), "decoded %s as %s",
                target.type->ToString().c_str(), scalar.ToString().c_str());
  TL_FUZZ_CHECK(scalar.ValidateFull().ok(), "%s", scalar.ToString().c_str());

  auto encoded = format::EncodeScalar(scalar);
  TL_FUZZ_CHECK(encoded.ok(), "%s does not encode: %s", scalar.ToString().c_str(),
                encoded.status().ToString().c_str());
  auto again = format::DecodeBound(*encoded, target.type);
  TL_FUZZ_CHECK(again.ok(), "the encoding of %s does not decode: %s",
                scalar.ToString().c_str(), again.status().ToString().c_str());
  TL_FUZZ_CHECK(
      (*again)->Equals(scalar, arrow::EqualOptions::Defaults().nans_equal(true)),
      "%s decodes as %s after a round trip", scalar.ToString().c_str(),
      (*again)->ToString().c_str());
  return 0;
}
