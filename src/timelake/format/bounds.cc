// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/bounds.h"

#include <array>
#include <cstring>
#include <limits>

#include <arrow/buffer.h>
#include <arrow/extension_type.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <arrow/util/checked_cast.h>
#include <arrow/util/utf8.h>

namespace timelake::format {

namespace {

using arrow::internal::checked_cast;

constexpr int64_t kMillisPerDay = 86400000;

template <typename T>
std::string LittleEndian(T v) {
  using U = std::make_unsigned_t<T>;
  U bits = static_cast<U>(v);
  std::string out(sizeof(T), '\0');
  for (size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<char>(bits >> (8 * i));
  return out;
}

template <typename U>
U ReadLittleEndian(std::string_view b) {
  U bits = 0;
  for (size_t i = 0; i < sizeof(U); ++i) bits |= U{static_cast<uint8_t>(b[i])} << (8 * i);
  return bits;
}

arrow::Status WrongLength(std::string_view what, size_t expected, size_t got) {
  return Corrupt("bound for " + std::string(what) + " must be " +
                 std::to_string(expected) + " bytes, got " + std::to_string(got));
}

// Drops leading bytes that only repeat the sign of the next byte.
std::string MinimalTwosComplement(const uint8_t* be, size_t n) {
  size_t i = 0;
  while (i + 1 < n && ((be[i] == 0x00 && (be[i + 1] & 0x80) == 0) ||
                       (be[i] == 0xff && (be[i + 1] & 0x80) != 0))) {
    ++i;
  }
  return std::string(reinterpret_cast<const char*>(be + i), n - i);
}

template <size_t kWords>
std::string DecimalWordsToBytes(const std::array<uint64_t, kWords>& little_endian_words) {
  std::array<uint8_t, kWords * 8> be;
  for (size_t w = 0; w < kWords; ++w) {
    const uint64_t word = little_endian_words[kWords - 1 - w];
    for (int b = 0; b < 8; ++b)
      be[w * 8 + b] = static_cast<uint8_t>(word >> (56 - 8 * b));
  }
  return MinimalTwosComplement(be.data(), be.size());
}

arrow::Result<int64_t> DecodeExactInt64(std::string_view bytes, std::string_view what) {
  if (bytes.size() != 8) return WrongLength(what, 8, bytes.size());
  return static_cast<int64_t>(ReadLittleEndian<uint64_t>(bytes));
}

arrow::Status OutOfRange(const arrow::DataType& type, int64_t v) {
  return Corrupt("bound " + std::to_string(v) + " is out of range for " +
                 type.ToString());
}

template <typename ScalarT, typename CType>
arrow::Result<std::shared_ptr<arrow::Scalar>> RangedInt(std::string_view bytes,
                                                        const arrow::DataType& type,
                                                        bool from_long) {
  int64_t v;
  if (from_long) {
    TIMELAKE_ASSIGN_OR_RAISE(v, DecodeInt64(bytes));
  } else {
    TIMELAKE_ASSIGN_OR_RAISE(v, DecodeInt32(bytes));
  }
  if (v < static_cast<int64_t>(std::numeric_limits<CType>::min()) ||
      v > static_cast<int64_t>(std::numeric_limits<CType>::max())) {
    return OutOfRange(type, v);
  }
  return std::make_shared<ScalarT>(static_cast<CType>(v));
}

arrow::Status CheckPrecision(bool fits, const arrow::DataType& type) {
  if (!fits) return Corrupt("decimal bound exceeds the precision of " + type.ToString());
  return arrow::Status::OK();
}

}  // namespace

std::string EncodeBoolean(bool v) { return std::string(1, v ? '\x01' : '\x00'); }
std::string EncodeInt32(int32_t v) { return LittleEndian(v); }
std::string EncodeInt64(int64_t v) { return LittleEndian(v); }

std::string EncodeFloat(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return LittleEndian(bits);
}

std::string EncodeDouble(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return LittleEndian(bits);
}

std::string EncodeDecimal(const arrow::Decimal128& unscaled) {
  return DecimalWordsToBytes<2>(
      {unscaled.low_bits(), static_cast<uint64_t>(unscaled.high_bits())});
}

std::string EncodeDecimal(const arrow::Decimal256& unscaled) {
  return DecimalWordsToBytes<4>(unscaled.little_endian_array());
}

arrow::Result<bool> DecodeBoolean(std::string_view bytes) {
  if (bytes.size() != 1) return WrongLength("boolean", 1, bytes.size());
  return bytes[0] != 0;
}

arrow::Result<int32_t> DecodeInt32(std::string_view bytes) {
  if (bytes.size() != 4) return WrongLength("int", 4, bytes.size());
  return static_cast<int32_t>(ReadLittleEndian<uint32_t>(bytes));
}

arrow::Result<int64_t> DecodeInt64(std::string_view bytes) {
  if (bytes.size() == 4) return static_cast<int64_t>(DecodeInt32(bytes).ValueUnsafe());
  if (bytes.size() != 8) return WrongLength("long", 8, bytes.size());
  return static_cast<int64_t>(ReadLittleEndian<uint64_t>(bytes));
}

arrow::Result<float> DecodeFloat(std::string_view bytes) {
  if (bytes.size() != 4) return WrongLength("float", 4, bytes.size());
  const uint32_t bits = ReadLittleEndian<uint32_t>(bytes);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

arrow::Result<double> DecodeDouble(std::string_view bytes) {
  if (bytes.size() == 4) return static_cast<double>(DecodeFloat(bytes).ValueUnsafe());
  if (bytes.size() != 8) return WrongLength("double", 8, bytes.size());
  const uint64_t bits = ReadLittleEndian<uint64_t>(bytes);
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

arrow::Result<arrow::Decimal128> DecodeDecimal128(std::string_view bytes) {
  if (bytes.empty() || bytes.size() > 16) {
    return Corrupt("decimal bound must be 1 to 16 bytes, got " +
                   std::to_string(bytes.size()));
  }
  return arrow::Decimal128::FromBigEndian(reinterpret_cast<const uint8_t*>(bytes.data()),
                                          static_cast<int32_t>(bytes.size()));
}

arrow::Result<arrow::Decimal256> DecodeDecimal256(std::string_view bytes) {
  if (bytes.empty() || bytes.size() > 32) {
    return Corrupt("decimal bound must be 1 to 32 bytes, got " +
                   std::to_string(bytes.size()));
  }
  return arrow::Decimal256::FromBigEndian(reinterpret_cast<const uint8_t*>(bytes.data()),
                                          static_cast<int32_t>(bytes.size()));
}

arrow::Result<std::string> EncodeScalar(const arrow::Scalar& scalar) {
  if (!scalar.is_valid) {
    return Invalid("cannot encode a null " + scalar.type->ToString() + " as a bound");
  }
  const arrow::DataType& type = *scalar.type;
  auto unsupported = [&type]() {
    return Unsupported("arrow type " + type.ToString() +
                       " has no Iceberg single-value serialization");
  };
  switch (type.id()) {
    case arrow::Type::BOOL:
      return EncodeBoolean(checked_cast<const arrow::BooleanScalar&>(scalar).value);
    case arrow::Type::INT8:
      return EncodeInt32(checked_cast<const arrow::Int8Scalar&>(scalar).value);
    case arrow::Type::INT16:
      return EncodeInt32(checked_cast<const arrow::Int16Scalar&>(scalar).value);
    case arrow::Type::INT32:
      return EncodeInt32(checked_cast<const arrow::Int32Scalar&>(scalar).value);
    case arrow::Type::UINT8:
      return EncodeInt32(checked_cast<const arrow::UInt8Scalar&>(scalar).value);
    case arrow::Type::UINT16:
      return EncodeInt32(checked_cast<const arrow::UInt16Scalar&>(scalar).value);
    case arrow::Type::UINT32:
      return EncodeInt64(checked_cast<const arrow::UInt32Scalar&>(scalar).value);
    case arrow::Type::INT64:
      return EncodeInt64(checked_cast<const arrow::Int64Scalar&>(scalar).value);
    case arrow::Type::DATE32:
      return EncodeInt32(checked_cast<const arrow::Date32Scalar&>(scalar).value);
    case arrow::Type::DATE64: {
      const int64_t ms = checked_cast<const arrow::Date64Scalar&>(scalar).value;
      const int64_t days = ms / kMillisPerDay;
      if (ms % kMillisPerDay != 0 || days < std::numeric_limits<int32_t>::min() ||
          days > std::numeric_limits<int32_t>::max()) {
        return Invalid("date64 value " + std::to_string(ms) +
                       " is not a whole day in range");
      }
      return EncodeInt32(static_cast<int32_t>(days));
    }
    case arrow::Type::TIME64:
      if (checked_cast<const arrow::Time64Type&>(type).unit() != arrow::TimeUnit::MICRO) {
        return unsupported();
      }
      return EncodeInt64(checked_cast<const arrow::Time64Scalar&>(scalar).value);
    case arrow::Type::TIMESTAMP: {
      const auto unit = checked_cast<const arrow::TimestampType&>(type).unit();
      if (unit != arrow::TimeUnit::MICRO && unit != arrow::TimeUnit::NANO) {
        return unsupported();
      }
      return EncodeInt64(checked_cast<const arrow::TimestampScalar&>(scalar).value);
    }
    case arrow::Type::FLOAT:
      return EncodeFloat(checked_cast<const arrow::FloatScalar&>(scalar).value);
    case arrow::Type::DOUBLE:
      return EncodeDouble(checked_cast<const arrow::DoubleScalar&>(scalar).value);
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW:
    case arrow::Type::BINARY:
    case arrow::Type::LARGE_BINARY:
    case arrow::Type::BINARY_VIEW:
    case arrow::Type::FIXED_SIZE_BINARY:
      return std::string(checked_cast<const arrow::BaseBinaryScalar&>(scalar).view());
    case arrow::Type::DECIMAL32:
      return EncodeDecimal(arrow::Decimal128(
          checked_cast<const arrow::Decimal32Scalar&>(scalar).value.value()));
    case arrow::Type::DECIMAL64:
      return EncodeDecimal(arrow::Decimal128(
          checked_cast<const arrow::Decimal64Scalar&>(scalar).value.value()));
    case arrow::Type::DECIMAL128:
      return EncodeDecimal(checked_cast<const arrow::Decimal128Scalar&>(scalar).value);
    case arrow::Type::DECIMAL256:
      return EncodeDecimal(checked_cast<const arrow::Decimal256Scalar&>(scalar).value);
    case arrow::Type::EXTENSION: {
      const auto& ext = checked_cast<const arrow::ExtensionScalar&>(scalar);
      if (!ext.value) return Invalid("extension scalar without a storage value");
      return EncodeScalar(*ext.value);
    }
    default:
      return unsupported();
  }
}

arrow::Result<std::shared_ptr<arrow::Scalar>> DecodeBound(
    std::string_view bytes, const std::shared_ptr<arrow::DataType>& type) {
  if (!type) return Invalid("DecodeBound: no type");
  auto unsupported = [&type]() {
    return Unsupported("arrow type " + type->ToString() +
                       " has no Iceberg single-value serialization");
  };
  switch (type->id()) {
    case arrow::Type::BOOL: {
      TIMELAKE_ASSIGN_OR_RAISE(bool v, DecodeBoolean(bytes));
      return std::make_shared<arrow::BooleanScalar>(v);
    }
    case arrow::Type::INT8:
      return RangedInt<arrow::Int8Scalar, int8_t>(bytes, *type, false);
    case arrow::Type::INT16:
      return RangedInt<arrow::Int16Scalar, int16_t>(bytes, *type, false);
    case arrow::Type::INT32:
      return RangedInt<arrow::Int32Scalar, int32_t>(bytes, *type, false);
    case arrow::Type::UINT8:
      return RangedInt<arrow::UInt8Scalar, uint8_t>(bytes, *type, false);
    case arrow::Type::UINT16:
      return RangedInt<arrow::UInt16Scalar, uint16_t>(bytes, *type, false);
    case arrow::Type::UINT32:
      return RangedInt<arrow::UInt32Scalar, uint32_t>(bytes, *type, true);
    case arrow::Type::INT64: {
      TIMELAKE_ASSIGN_OR_RAISE(int64_t v, DecodeInt64(bytes));
      return std::make_shared<arrow::Int64Scalar>(v);
    }
    case arrow::Type::DATE32: {
      TIMELAKE_ASSIGN_OR_RAISE(int32_t v, DecodeInt32(bytes));
      return std::make_shared<arrow::Date32Scalar>(v);
    }
    case arrow::Type::DATE64: {
      TIMELAKE_ASSIGN_OR_RAISE(int32_t v, DecodeInt32(bytes));
      return std::make_shared<arrow::Date64Scalar>(int64_t{v} * kMillisPerDay);
    }
    case arrow::Type::TIME64: {
      if (checked_cast<const arrow::Time64Type&>(*type).unit() !=
          arrow::TimeUnit::MICRO) {
        return unsupported();
      }
      TIMELAKE_ASSIGN_OR_RAISE(int64_t v, DecodeExactInt64(bytes, "time"));
      return std::make_shared<arrow::Time64Scalar>(v, type);
    }
    case arrow::Type::TIMESTAMP: {
      const auto unit = checked_cast<const arrow::TimestampType&>(*type).unit();
      if (unit != arrow::TimeUnit::MICRO && unit != arrow::TimeUnit::NANO) {
        return unsupported();
      }
      TIMELAKE_ASSIGN_OR_RAISE(int64_t v, DecodeExactInt64(bytes, "timestamp"));
      return std::make_shared<arrow::TimestampScalar>(v, type);
    }
    case arrow::Type::FLOAT: {
      TIMELAKE_ASSIGN_OR_RAISE(float v, DecodeFloat(bytes));
      return std::make_shared<arrow::FloatScalar>(v);
    }
    case arrow::Type::DOUBLE: {
      TIMELAKE_ASSIGN_OR_RAISE(double v, DecodeDouble(bytes));
      return std::make_shared<arrow::DoubleScalar>(v);
    }
    case arrow::Type::STRING:
    case arrow::Type::LARGE_STRING:
    case arrow::Type::STRING_VIEW: {
      arrow::util::InitializeUTF8();  // the validator's tables; idempotent and cheap
      if (!arrow::util::ValidateUTF8(bytes))
        return Corrupt("string bound is not valid UTF-8");
      auto buffer = arrow::Buffer::FromString(std::string(bytes));
      if (type->id() == arrow::Type::STRING) {
        return std::make_shared<arrow::StringScalar>(std::move(buffer));
      }
      if (type->id() == arrow::Type::LARGE_STRING) {
        return std::make_shared<arrow::LargeStringScalar>(std::move(buffer));
      }
      return std::make_shared<arrow::StringViewScalar>(std::move(buffer));
    }
    case arrow::Type::BINARY:
      return std::make_shared<arrow::BinaryScalar>(std::string(bytes));
    case arrow::Type::LARGE_BINARY:
      return std::make_shared<arrow::LargeBinaryScalar>(std::string(bytes));
    case arrow::Type::BINARY_VIEW:
      return std::make_shared<arrow::BinaryViewScalar>(std::string(bytes));
    case arrow::Type::FIXED_SIZE_BINARY: {
      const int32_t width =
          checked_cast<const arrow::FixedSizeBinaryType&>(*type).byte_width();
      if (bytes.size() != static_cast<size_t>(width)) {
        return WrongLength(type->ToString(), static_cast<size_t>(width), bytes.size());
      }
      return std::make_shared<arrow::FixedSizeBinaryScalar>(
          arrow::Buffer::FromString(std::string(bytes)), type);
    }
    case arrow::Type::DECIMAL32:
    case arrow::Type::DECIMAL64:
    case arrow::Type::DECIMAL128: {
      TIMELAKE_ASSIGN_OR_RAISE(auto v, DecodeDecimal128(bytes));
      const int32_t precision =
          checked_cast<const arrow::DecimalType&>(*type).precision();
      TIMELAKE_RETURN_NOT_OK(CheckPrecision(v.FitsInPrecision(precision), *type));
      if (type->id() == arrow::Type::DECIMAL32) {
        return std::make_shared<arrow::Decimal32Scalar>(
            arrow::Decimal32(static_cast<int32_t>(v.low_bits())), type);
      }
      if (type->id() == arrow::Type::DECIMAL64) {
        return std::make_shared<arrow::Decimal64Scalar>(
            arrow::Decimal64(static_cast<int64_t>(v.low_bits())), type);
      }
      return std::make_shared<arrow::Decimal128Scalar>(v, type);
    }
    case arrow::Type::DECIMAL256: {
      TIMELAKE_ASSIGN_OR_RAISE(auto v, DecodeDecimal256(bytes));
      const int32_t precision =
          checked_cast<const arrow::DecimalType&>(*type).precision();
      TIMELAKE_RETURN_NOT_OK(CheckPrecision(v.FitsInPrecision(precision), *type));
      return std::make_shared<arrow::Decimal256Scalar>(v, type);
    }
    case arrow::Type::EXTENSION: {
      const auto& ext = checked_cast<const arrow::ExtensionType&>(*type);
      TIMELAKE_ASSIGN_OR_RAISE(auto storage, DecodeBound(bytes, ext.storage_type()));
      return std::make_shared<arrow::ExtensionScalar>(std::move(storage), type);
    }
    default:
      return unsupported();
  }
}

}  // namespace timelake::format
