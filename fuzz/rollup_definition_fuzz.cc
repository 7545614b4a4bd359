// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Fuzzes the decoder of a rollup's definition (src/timelake/read/
// rollup_definition.h) on a table's properties: the input is a JSON object
// as the "properties" of table metadata (string values; others skipped),
// read first as the contract (ParseContract) and then as a rollup
// definition (timelake.rollup-source, -bucket, -aggregates). Invariants:
// errors are kInvalid (the contract) or kCorrupt (the definition); a table
// without timelake.rollup-source is no rollup; a decoded definition stored
// again (RollupProperties) decodes to itself; its bucket text round-trips,
// and the bucket arithmetic holds (Floor <= t < Next(Floor), Floor a fixed
// point) for times taken from the input. The whole input is also tried as a
// bucket's text alone.

#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_check.h"
#include "timelake/read/rollup_definition.h"

namespace {

using timelake::ErrorKind;
using timelake::read::Bucket;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void CheckBucket(const Bucket& b, const uint8_t* data, size_t size) {
  TL_FUZZ_CHECK((b.width_us > 0) != (b.months > 0), "bucket %lld us, %lld months",
                static_cast<long long>(b.width_us), static_cast<long long>(b.months));
  TL_FUZZ_CHECK(b.width_us % 1'000'000 == 0, "width %lld us is not whole seconds",
                static_cast<long long>(b.width_us));
  auto again = Bucket::Parse(b.ToText());
  TL_FUZZ_CHECK(again.ok() && *again == b, "'%s' does not parse back",
                b.ToText().c_str());
  std::vector<int64_t> times = {0, -1, 1, kMin, kMax, 1'767'225'600'000'000LL};
  for (size_t i = 0; i + sizeof(int64_t) <= size && times.size() < 16; i += 8) {
    int64_t t;
    std::memcpy(&t, data + i, sizeof(t));
    times.push_back(t);
  }
  for (int64_t t : times) {
    const int64_t floor = b.Floor(t);
    const int64_t next = b.Next(floor);
    TL_FUZZ_CHECK(floor <= t, "%s: Floor(%lld) = %lld", b.ToText().c_str(),
                  static_cast<long long>(t), static_cast<long long>(floor));
    TL_FUZZ_CHECK(next > t || next == kMax, "%s: Next(Floor(%lld)) = %lld",
                  b.ToText().c_str(), static_cast<long long>(t),
                  static_cast<long long>(next));
    TL_FUZZ_CHECK(b.Ceil(t) >= t || b.Ceil(t) == kMax, "%s: Ceil(%lld)",
                  b.ToText().c_str(), static_cast<long long>(t));
    if (floor != kMin && next != kMax) {
      TL_FUZZ_CHECK(b.Floor(floor) == floor && b.Floor(next) == next,
                    "%s: bucket starts of %lld are not fixed points", b.ToText().c_str(),
                    static_cast<long long>(t));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace read = timelake::read;
  const std::string_view text = timelake::fuzz::AsText(data, size);

  auto bucket = Bucket::Parse(text);
  if (bucket.ok()) {
    CheckBucket(*bucket, data, size);
  } else {
    timelake::fuzz::CheckErrorKind(bucket.status(), {ErrorKind::kInvalid});
  }

  const nlohmann::json doc =
      nlohmann::json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return 0;
  std::map<std::string, std::string> props;
  for (const auto& [key, value] : doc.items()) {
    if (value.is_string()) props[key] = value.get<std::string>();
  }
  auto contract = timelake::internal::ParseContract(props);
  if (!contract.ok()) {
    timelake::fuzz::CheckErrorKind(contract.status(), {ErrorKind::kInvalid});
    return 0;
  }
  const auto name = *timelake::TableName::Parse("iot.readings_1h");
  auto def = read::RollupDefinitionOf(name, props, *contract);
  if (!def.ok()) {
    timelake::fuzz::CheckErrorKind(def.status(), {ErrorKind::kCorrupt});
    TL_FUZZ_CHECK(def.status().message().find("iot.readings_1h") != std::string::npos,
                  "the error does not name the table: %s",
                  def.status().ToString().c_str());
    return 0;
  }
  if (!*def) {
    TL_FUZZ_CHECK(!props.count(timelake::internal::property::kRollupSource),
                  "a rollup-source but no definition");
    return 0;
  }
  TL_FUZZ_CHECK((*def)->bucket_column == contract->time_column,
                "the bucket column is not the time column");
  CheckBucket((*def)->bucket, data, size);

  auto stored = props;
  for (const auto& [key, value] : read::RollupProperties(**def)) stored[key] = value;
  auto again = read::RollupDefinitionOf(name, stored, *contract);
  TL_FUZZ_CHECK(again.ok() && *again, "the stored definition does not decode: %s",
                again.ok() ? "not a rollup" : again.status().ToString().c_str());
  TL_FUZZ_CHECK((*again)->source == (*def)->source &&
                    (*again)->groups == (*def)->groups &&
                    (*again)->bucket_column == (*def)->bucket_column &&
                    (*again)->bucket == (*def)->bucket &&
                    (*again)->aggregates == (*def)->aggregates,
                "the definition does not round-trip: %s",
                read::AggregatesJson((*def)->aggregates).c_str());
  return 0;
}
