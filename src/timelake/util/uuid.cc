// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/util/uuid.h"

#include <array>
#include <mutex>
#include <random>

namespace timelake::internal {

namespace {

uint64_t RandomU64() {
  static std::mutex mu;
  static std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  std::lock_guard<std::mutex> lock(mu);
  return rng();
}

std::string Format(const std::array<uint8_t, 16>& b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

}  // namespace

std::string NewUuidV7(TimePoint now) {
  std::array<uint8_t, 16> b{};
  const uint64_t ms = static_cast<uint64_t>(ToMillis(now));
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  const uint64_t r1 = RandomU64(), r2 = RandomU64();
  for (int i = 6; i < 16; ++i)
    b[i] = static_cast<uint8_t>((i < 8 ? r1 : r2) >> (8 * (i % 8)));
  b[6] = static_cast<uint8_t>(0x70 | (b[6] & 0x0f));
  b[8] = static_cast<uint8_t>(0x80 | (b[8] & 0x3f));
  return Format(b);
}

std::string NewUuidV4() {
  std::array<uint8_t, 16> b{};
  const uint64_t r1 = RandomU64(), r2 = RandomU64();
  for (int i = 0; i < 16; ++i)
    b[i] = static_cast<uint8_t>((i < 8 ? r1 : r2) >> (8 * (i % 8)));
  b[6] = static_cast<uint8_t>(0x40 | (b[6] & 0x0f));
  b[8] = static_cast<uint8_t>(0x80 | (b[8] & 0x3f));
  return Format(b);
}

int64_t NewSnapshotId() {
  int64_t id = 0;
  while (id == 0) id = static_cast<int64_t>(RandomU64() >> 1);
  return id;
}

}  // namespace timelake::internal
