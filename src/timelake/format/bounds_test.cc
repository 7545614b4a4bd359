// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/bounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <arrow/buffer.h>
#include <arrow/extension/uuid.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include "timelake/testing/matchers.h"

namespace timelake::format {
namespace {

using timelake::testing::ExpectError;

std::string Hex(std::string_view s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(
        static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(Bounds, FixedWidthEncodings) {
  EXPECT_EQ(Hex(EncodeBoolean(false)), "00");
  EXPECT_EQ(Hex(EncodeBoolean(true)), "01");
  EXPECT_EQ(Hex(EncodeInt32(1)), "01000000");
  EXPECT_EQ(Hex(EncodeInt32(-1)), "ffffffff");
  EXPECT_EQ(Hex(EncodeInt32(19723)), "0b4d0000");  // 2024-01-01 as days
  EXPECT_EQ(Hex(EncodeInt32(std::numeric_limits<int32_t>::min())), "00000080");
  EXPECT_EQ(Hex(EncodeInt64(1704067200000000)), "00202110d70d0600");  // 2024-01-01 in us
  EXPECT_EQ(Hex(EncodeInt64(std::numeric_limits<int64_t>::max())), "ffffffffffffff7f");
  EXPECT_EQ(Hex(EncodeInt64(-2)), "feffffffffffffff");
  EXPECT_EQ(Hex(EncodeFloat(1.0f)), "0000803f");
  EXPECT_EQ(Hex(EncodeFloat(-0.0f)), "00000080");
  EXPECT_EQ(Hex(EncodeDouble(1.5)), "000000000000f83f");
  EXPECT_EQ(Hex(EncodeDouble(-2.0)), "00000000000000c0");
  EXPECT_EQ(Hex(EncodeDouble(-std::numeric_limits<double>::infinity())),
            "000000000000f0ff");
}

TEST(Bounds, DecimalsUseMinimalBigEndianTwosComplement) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "00"},           {1, "01"},
      {127, "7f"},         {128, "0080"},
      {255, "00ff"},       {256, "0100"},
      {-1, "ff"},          {-128, "80"},
      {-129, "ff7f"},      {-256, "ff00"},
      {-32768, "8000"},    {32768, "008000"},
      {1234567, "12d687"}, {-1234567, "ed2979"},
  };
  for (const auto& [v, hex] : cases) {
    SCOPED_TRACE(v);
    EXPECT_EQ(Hex(EncodeDecimal(arrow::Decimal128(v))), hex);
    EXPECT_EQ(Hex(EncodeDecimal(arrow::Decimal256(v))), hex);
    TL_ASSERT_OK_AND_ASSIGN(auto d128, DecodeDecimal128(Unhex(hex)));
    EXPECT_EQ(d128, arrow::Decimal128(v));
    TL_ASSERT_OK_AND_ASSIGN(auto d256, DecodeDecimal256(Unhex(hex)));
    EXPECT_EQ(d256, arrow::Decimal256(v));
  }
  // The 38-digit extremes need all 16 bytes.
  const auto max38 = arrow::Decimal128::GetMaxValue(38);
  EXPECT_EQ(Hex(EncodeDecimal(max38)), "4b3b4ca85a86c47a098a223fffffffff");
  EXPECT_EQ(Hex(EncodeDecimal(-max38)), "b4c4b357a5793b85f675ddc000000001");
  TL_ASSERT_OK_AND_ASSIGN(auto back, DecodeDecimal128(EncodeDecimal(-max38)));
  EXPECT_EQ(back, -max38);
  // 2^64 needs a ninth byte.
  EXPECT_EQ(Hex(EncodeDecimal(arrow::Decimal128(1, 0))), "010000000000000000");
  EXPECT_EQ(Hex(EncodeDecimal(arrow::Decimal128(-1, 0))), "ff0000000000000000");
  // A 256-bit value beyond 128 bits.
  const auto big = arrow::Decimal256::GetMaxValue(76);
  TL_ASSERT_OK_AND_ASSIGN(auto big_back, DecodeDecimal256(EncodeDecimal(big)));
  EXPECT_EQ(big_back, big);
  EXPECT_EQ(EncodeDecimal(big).size(), 32u);
}

TEST(Bounds, DecodersCheckLengths) {
  ExpectError(DecodeBoolean("").status(), ErrorKind::kCorrupt,
              "bound for boolean must be 1 bytes, got 0");
  ExpectError(DecodeInt32("abc").status(), ErrorKind::kCorrupt,
              "int must be 4 bytes, got 3");
  ExpectError(DecodeInt64("abcdefg").status(), ErrorKind::kCorrupt,
              "long must be 8 bytes, got 7");
  ExpectError(DecodeFloat("abcdefgh").status(), ErrorKind::kCorrupt, "float must be 4");
  ExpectError(DecodeDouble("ab").status(), ErrorKind::kCorrupt, "double must be 8");
  ExpectError(DecodeDecimal128("").status(), ErrorKind::kCorrupt, "1 to 16 bytes, got 0");
  ExpectError(DecodeDecimal128(std::string(17, '\0')).status(), ErrorKind::kCorrupt,
              "1 to 16 bytes, got 17");
  ExpectError(DecodeDecimal256(std::string(33, '\0')).status(), ErrorKind::kCorrupt,
              "1 to 32 bytes, got 33");
}

TEST(Bounds, DecodersInvertEncodersAndAcceptPromotions) {
  TL_ASSERT_OK_AND_ASSIGN(bool b, DecodeBoolean(Unhex("02")));  // any non-zero is true
  EXPECT_TRUE(b);
  TL_ASSERT_OK_AND_ASSIGN(int32_t i, DecodeInt32(EncodeInt32(-123456)));
  EXPECT_EQ(i, -123456);
  TL_ASSERT_OK_AND_ASSIGN(int64_t l,
                          DecodeInt64(EncodeInt64(std::numeric_limits<int64_t>::min())));
  EXPECT_EQ(l, std::numeric_limits<int64_t>::min());
  // A column promoted from int to long keeps 4-byte bounds in old files.
  TL_ASSERT_OK_AND_ASSIGN(int64_t promoted, DecodeInt64(EncodeInt32(-7)));
  EXPECT_EQ(promoted, -7);
  TL_ASSERT_OK_AND_ASSIGN(float f, DecodeFloat(EncodeFloat(-0.0f)));
  EXPECT_TRUE(std::signbit(f));
  TL_ASSERT_OK_AND_ASSIGN(double d, DecodeDouble(EncodeDouble(std::nan(""))));
  EXPECT_TRUE(std::isnan(d));
  TL_ASSERT_OK_AND_ASSIGN(double from_float, DecodeDouble(EncodeFloat(0.25f)));
  EXPECT_EQ(from_float, 0.25);
}

// A scalar, its expected encoding, and the scalar decoding gives back.
struct ScalarCase {
  std::shared_ptr<arrow::Scalar> scalar;
  std::string hex;
};

// A string or binary scalar of `type` holding `value`.
std::shared_ptr<arrow::Scalar> BinaryLike(const std::shared_ptr<arrow::DataType>& type,
                                          std::string value) {
  auto buffer = arrow::Buffer::FromString(std::move(value));
  switch (type->id()) {
    case arrow::Type::STRING:
      return std::make_shared<arrow::StringScalar>(buffer);
    case arrow::Type::LARGE_STRING:
      return std::make_shared<arrow::LargeStringScalar>(buffer);
    case arrow::Type::STRING_VIEW:
      return std::make_shared<arrow::StringViewScalar>(buffer);
    case arrow::Type::BINARY:
      return std::make_shared<arrow::BinaryScalar>(buffer);
    case arrow::Type::LARGE_BINARY:
      return std::make_shared<arrow::LargeBinaryScalar>(buffer);
    default:
      return std::make_shared<arrow::BinaryViewScalar>(buffer);
  }
}

TEST(Bounds, ScalarsRoundTripForEveryMappedType) {
  const std::string uuid_bytes = Unhex("f79c3e09677c4bbd8e6c5ad2b57d1f3a");
  auto uuid_storage = std::make_shared<arrow::FixedSizeBinaryScalar>(
      arrow::Buffer::FromString(uuid_bytes), arrow::fixed_size_binary(16));
  auto uuid =
      std::make_shared<arrow::ExtensionScalar>(uuid_storage, arrow::extension::uuid());

  const std::vector<ScalarCase> cases = {
      {std::make_shared<arrow::BooleanScalar>(true), "01"},
      {std::make_shared<arrow::BooleanScalar>(false), "00"},
      {std::make_shared<arrow::Int8Scalar>(-128), "80ffffff"},
      {std::make_shared<arrow::Int16Scalar>(32767), "ff7f0000"},
      {std::make_shared<arrow::Int32Scalar>(std::numeric_limits<int32_t>::min()),
       "00000080"},
      {std::make_shared<arrow::UInt8Scalar>(255), "ff000000"},
      {std::make_shared<arrow::UInt16Scalar>(65535), "ffff0000"},
      {std::make_shared<arrow::UInt32Scalar>(4294967295u), "ffffffff00000000"},
      {std::make_shared<arrow::Int64Scalar>(std::numeric_limits<int64_t>::min()),
       "0000000000000080"},
      {std::make_shared<arrow::Date32Scalar>(-1), "ffffffff"},
      {std::make_shared<arrow::Date64Scalar>(int64_t{19723} * 86400000), "0b4d0000"},
      {std::make_shared<arrow::Time64Scalar>(int64_t{86399999999},
                                             arrow::time64(arrow::TimeUnit::MICRO)),
       "ff5fd71d14000000"},
      {std::make_shared<arrow::TimestampScalar>(1704067200000000,
                                                arrow::timestamp(arrow::TimeUnit::MICRO)),
       "00202110d70d0600"},
      {std::make_shared<arrow::TimestampScalar>(
           -1, arrow::timestamp(arrow::TimeUnit::MICRO, "UTC")),
       "ffffffffffffffff"},
      {std::make_shared<arrow::TimestampScalar>(1704067200000000001,
                                                arrow::timestamp(arrow::TimeUnit::NANO)),
       "010065011710a617"},
      {std::make_shared<arrow::FloatScalar>(-0.0f), "00000080"},
      {std::make_shared<arrow::FloatScalar>(std::numeric_limits<float>::infinity()),
       "0000807f"},
      {std::make_shared<arrow::DoubleScalar>(std::numeric_limits<double>::lowest()),
       "ffffffffffffefff"},
      {BinaryLike(arrow::utf8(), "héllo"), "68c3a96c6c6f"},
      {BinaryLike(arrow::utf8(), ""), ""},
      {BinaryLike(arrow::large_utf8(), "ab"), "6162"},
      {BinaryLike(arrow::utf8_view(), "a string longer than twelve bytes"),
       Hex("a string longer than twelve bytes")},
      {BinaryLike(arrow::binary(), std::string("\0\xff", 2)), "00ff"},
      {BinaryLike(arrow::large_binary(), "z"), "7a"},
      {BinaryLike(arrow::binary_view(), std::string("\x01\x02", 2)), "0102"},
      {std::make_shared<arrow::FixedSizeBinaryScalar>(arrow::Buffer::FromString("abc"),
                                                      arrow::fixed_size_binary(3)),
       "616263"},
      {uuid, "f79c3e09677c4bbd8e6c5ad2b57d1f3a"},
      {std::make_shared<arrow::Decimal32Scalar>(arrow::Decimal32(-12345),
                                                arrow::decimal32(9, 2)),
       "cfc7"},
      {std::make_shared<arrow::Decimal64Scalar>(arrow::Decimal64(123456789012LL),
                                                arrow::decimal64(18, 3)),
       "1cbe991a14"},
      {std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(-1),
                                                 arrow::decimal128(38, 10)),
       "ff"},
      {std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128(-129),
                                                 arrow::decimal128(10, 2)),
       "ff7f"},
      {std::make_shared<arrow::Decimal128Scalar>(arrow::Decimal128::GetMaxValue(38),
                                                 arrow::decimal128(38, 0)),
       "4b3b4ca85a86c47a098a223fffffffff"},
      {std::make_shared<arrow::Decimal256Scalar>(arrow::Decimal256(-256),
                                                 arrow::decimal256(40, 5)),
       "ff00"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.scalar->type->ToString() + " " + c.scalar->ToString());
    TL_ASSERT_OK_AND_ASSIGN(std::string encoded, EncodeScalar(*c.scalar));
    EXPECT_EQ(Hex(encoded), c.hex);
    TL_ASSERT_OK_AND_ASSIGN(auto decoded, DecodeBound(encoded, c.scalar->type));
    EXPECT_TRUE(decoded->type->Equals(*c.scalar->type)) << decoded->type->ToString();
    EXPECT_TRUE(decoded->Equals(*c.scalar)) << decoded->ToString();
    EXPECT_TRUE(decoded->ValidateFull().ok()) << decoded->ValidateFull().ToString();
  }
}

TEST(Bounds, NaNRoundTripsBitForBit) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TL_ASSERT_OK_AND_ASSIGN(std::string encoded, EncodeScalar(arrow::DoubleScalar(nan)));
  EXPECT_EQ(Hex(encoded), Hex(EncodeDouble(nan)));
  TL_ASSERT_OK_AND_ASSIGN(auto decoded, DecodeBound(encoded, arrow::float64()));
  EXPECT_TRUE(std::isnan(static_cast<const arrow::DoubleScalar&>(*decoded).value));
}

TEST(Bounds, UnsupportedAndInvalidScalars) {
  ExpectError(EncodeScalar(arrow::UInt64Scalar(1)).status(), ErrorKind::kUnsupported,
              "arrow type uint64 has no Iceberg single-value serialization");
  ExpectError(
      EncodeScalar(arrow::TimestampScalar(1, arrow::timestamp(arrow::TimeUnit::MILLI)))
          .status(),
      ErrorKind::kUnsupported, "timestamp[ms]");
  ExpectError(EncodeScalar(arrow::Time32Scalar(1, arrow::time32(arrow::TimeUnit::SECOND)))
                  .status(),
              ErrorKind::kUnsupported, "time32");
  ExpectError(EncodeScalar(arrow::HalfFloatScalar(1)).status(), ErrorKind::kUnsupported,
              "halffloat");
  ExpectError(EncodeScalar(*arrow::MakeNullScalar(arrow::int32())).status(),
              ErrorKind::kInvalid, "null int32");
  ExpectError(EncodeScalar(arrow::Date64Scalar(86400000 + 1)).status(),
              ErrorKind::kInvalid, "not a whole day");
  ExpectError(DecodeBound(EncodeInt64(1), arrow::uint64()).status(),
              ErrorKind::kUnsupported, "uint64");
  ExpectError(DecodeBound(EncodeInt64(1), arrow::list(arrow::int32())).status(),
              ErrorKind::kUnsupported, "list");
  ExpectError(
      DecodeBound(EncodeInt64(1), arrow::timestamp(arrow::TimeUnit::SECOND)).status(),
      ErrorKind::kUnsupported, "timestamp[s]");
}

TEST(Bounds, DecodeBoundRejectsBytesThatDoNotFitTheType) {
  ExpectError(DecodeBound(EncodeInt32(128), arrow::int8()).status(), ErrorKind::kCorrupt,
              "bound 128 is out of range for int8");
  ExpectError(DecodeBound(EncodeInt32(-1), arrow::uint16()).status(), ErrorKind::kCorrupt,
              "out of range for uint16");
  ExpectError(DecodeBound(EncodeInt64(int64_t{1} << 32), arrow::uint32()).status(),
              ErrorKind::kCorrupt, "out of range for uint32");
  ExpectError(DecodeBound("\xff\xfe", arrow::utf8()).status(), ErrorKind::kCorrupt,
              "not valid UTF-8");
  ExpectError(DecodeBound("abcd", arrow::fixed_size_binary(16)).status(),
              ErrorKind::kCorrupt, "must be 16 bytes, got 4");
  ExpectError(
      DecodeBound(EncodeDecimal(arrow::Decimal128(100000)), arrow::decimal128(5, 2))
          .status(),
      ErrorKind::kCorrupt, "exceeds the precision of decimal128(5, 2)");
  ExpectError(DecodeBound(EncodeDecimal(arrow::Decimal128(int64_t{1} << 40)),
                          arrow::decimal32(9, 0))
                  .status(),
              ErrorKind::kCorrupt, "exceeds the precision");
  ExpectError(
      DecodeBound(EncodeInt32(1), arrow::timestamp(arrow::TimeUnit::MICRO)).status(),
      ErrorKind::kCorrupt, "timestamp must be 8 bytes, got 4");
  ExpectError(DecodeBound("", arrow::boolean()).status(), ErrorKind::kCorrupt, "boolean");
  ExpectError(DecodeBound("x", arrow::extension::uuid()).status(), ErrorKind::kCorrupt,
              "must be 16 bytes, got 1");
  ExpectError(DecodeBound("x", nullptr).status(), ErrorKind::kInvalid, "no type");
}

}  // namespace
}  // namespace timelake::format
