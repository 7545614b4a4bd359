// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Iceberg's binary single-value serialization (spec Appendix D), used for the
// `lower_bounds` / `upper_bounds` maps of manifest entries and for the
// partition summaries of manifest lists:
//
//   Iceberg type                 bytes
//   ---------------------------  ---------------------------------------------
//   boolean                      1 byte: 0x00 false, anything else true
//   int, date                    4-byte little-endian (date: days since epoch)
//   long, time, timestamp(tz),   8-byte little-endian (time/timestamp: micro-
//   timestamp_ns(tz)             seconds; the _ns types: nanoseconds)
//   float, double                IEEE 754 little-endian, 4 / 8 bytes
//   string                       the UTF-8 bytes, no length prefix
//   binary, fixed(L)             the bytes as they are
//   uuid                         16 bytes, big-endian (the canonical byte order)
//   decimal(P, S)                the unscaled value as big-endian two's
//                                complement in the fewest bytes that hold it
//
// How Arrow types map onto these (EncodeScalar / DecodeBound):
//
//   int8, int16, int32, uint8, uint16 -> int      uint32, int64 -> long
//   date32 -> date   date64 -> date (milliseconds <-> days; encoding rejects
//   dates that are not whole days)
//   time64[us] -> time   timestamp[us] (with or without zone) -> timestamp(tz)
//   timestamp[ns] -> timestamp_ns(tz)
//   float, double -> float, double
//   string, large_string, string_view -> string (decoding checks UTF-8)
//   binary, large_binary, binary_view, fixed_size_binary -> binary / fixed
//   arrow.uuid (extension on fixed_size_binary(16)) -> uuid
//   decimal32/64/128/256 -> decimal
//
// Anything else (uint64, half floats, time32, timestamp[s|ms], nested types)
// is kUnsupported. Timelake stores every timestamp in microseconds (SPEC §4.4).
//
// Readers accept the promoted encodings Iceberg allows after type evolution:
// a 4-byte int where a long is expected and a 4-byte float where a double is.
//
// All functions are pure and thread safe. Decoders read untrusted bytes and
// return kCorrupt naming the expected and actual lengths; they never read out
// of bounds.

#ifndef TIMELAKE_FORMAT_BOUNDS_H_
#define TIMELAKE_FORMAT_BOUNDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <arrow/type_fwd.h>
#include <arrow/util/decimal.h>

#include "timelake/status.h"

namespace timelake::format {

// Encoders. Strings, binary, fixed and uuid values are their own encoding
// (uuid bytes in big-endian order, as Arrow's uuid type stores them).
std::string EncodeBoolean(bool v);
std::string EncodeInt32(int32_t v);  // int, date
std::string EncodeInt64(int64_t v);  // long, time, timestamp, timestamptz, *_ns
std::string EncodeFloat(float v);
std::string EncodeDouble(double v);
// The unscaled value of a decimal, minimal big-endian two's complement:
// 0 -> 00, 127 -> 7f, 128 -> 00 80, -1 -> ff, -128 -> 80, -129 -> ff 7f.
std::string EncodeDecimal(const arrow::Decimal128& unscaled);
std::string EncodeDecimal(const arrow::Decimal256& unscaled);

// Decoders. Errors: kCorrupt when the length is wrong for the type.
arrow::Result<bool> DecodeBoolean(std::string_view bytes);   // exactly 1 byte
arrow::Result<int32_t> DecodeInt32(std::string_view bytes);  // exactly 4 bytes
// 8 bytes, or 4 bytes of a column promoted from int (sign-extended).
arrow::Result<int64_t> DecodeInt64(std::string_view bytes);
arrow::Result<float> DecodeFloat(std::string_view bytes);  // exactly 4 bytes
// 8 bytes, or 4 bytes of a column promoted from float.
arrow::Result<double> DecodeDouble(std::string_view bytes);
// 1 to 16 (Decimal128) or 1 to 32 (Decimal256) big-endian bytes, sign-extended.
arrow::Result<arrow::Decimal128> DecodeDecimal128(std::string_view bytes);
arrow::Result<arrow::Decimal256> DecodeDecimal256(std::string_view bytes);

// Encodes a valid Arrow scalar (see the type mapping above). Errors: kInvalid
// for a null scalar or a date64 that is not a whole day; kUnsupported for
// types without an Iceberg single-value encoding.
arrow::Result<std::string> EncodeScalar(const arrow::Scalar& scalar);

// Decodes a bound into a scalar of `type` (see the type mapping above).
// Errors: kCorrupt when the bytes do not fit the type (wrong length, a value
// outside an int8/int16/uint8/uint16/uint32 column's range, invalid UTF-8 for
// strings, a decimal that exceeds the type's precision, a fixed_size_binary of
// another width); kUnsupported for types without an encoding.
arrow::Result<std::shared_ptr<arrow::Scalar>> DecodeBound(
    std::string_view bytes, const std::shared_ptr<arrow::DataType>& type);

}  // namespace timelake::format

#endif  // TIMELAKE_FORMAT_BOUNDS_H_
