// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/tsbs.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <arrow/array/builder_binary.h>
#include <arrow/array/builder_primitive.h>
#include <arrow/status.h>
#include <arrow/type.h>

namespace timelake::cli {
namespace {

// The tag vocabularies of TSBS's cpu-only use case (its `devops` generator).
struct Region {
  const char* name;
  std::vector<const char*> datacenters;
};
const std::vector<Region>& Regions() {
  static const std::vector<Region> kRegions = {
      {"us-east-1", {"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"}},
      {"us-west-1", {"us-west-1a", "us-west-1b"}},
      {"us-west-2", {"us-west-2a", "us-west-2b", "us-west-2c"}},
      {"eu-west-1", {"eu-west-1a", "eu-west-1b", "eu-west-1c"}},
      {"eu-central-1", {"eu-central-1a", "eu-central-1b"}},
      {"ap-southeast-1", {"ap-southeast-1a", "ap-southeast-1b"}},
      {"ap-southeast-2", {"ap-southeast-2a", "ap-southeast-2b"}},
      {"ap-northeast-1", {"ap-northeast-1a", "ap-northeast-1c"}},
      {"sa-east-1", {"sa-east-1a", "sa-east-1b", "sa-east-1c"}},
  };
  return kRegions;
}
constexpr std::array<const char*, 3> kOs = {"Ubuntu16.10", "Ubuntu16.04LTS",
                                            "Ubuntu15.10"};
constexpr std::array<const char*, 2> kArch = {"x64", "x86"};
constexpr std::array<const char*, 4> kTeam = {"SF", "NYC", "LON", "CHI"};
constexpr std::array<const char*, 3> kEnvironment = {"production", "staging", "test"};
constexpr int kRacks = 100;
constexpr int kServices = 20;
constexpr int kServiceVersions = 2;

constexpr std::array<const char*, 10> kTags = {
    "hostname", "region",          "datacenter",         "rack", "os", "arch", "team",
    "service",  "service_version", "service_environment"};
constexpr size_t kNumTags = kTags.size();
constexpr size_t kNumMetrics = kTsbsMetrics.size();

constexpr int64_t kMetricMin = 0;
constexpr int64_t kMetricMax = 100;
// A step of the walk is uniform in [-kMaxStep, kMaxStep].
constexpr int64_t kMaxStep = 2;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// xoshiro256**: small, fast and with a stable, documented output sequence, so
// the data set is the same on every platform (std:: distributions are not).
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (auto& word : s_) word = SplitMix64(seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n). The modulo bias is below 2^-50 for the small n used here.
  int64_t Below(int64_t n) {
    return static_cast<int64_t>(Next() % static_cast<uint64_t>(n));
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::array<uint64_t, 4> s_;
};

// Independent streams per (seed, host, purpose) so that adding hosts or
// changing batch sizes never shifts another host's values.
uint64_t StreamSeed(uint64_t seed, int host, uint64_t purpose) {
  uint64_t state = seed;
  uint64_t mixed =
      SplitMix64(state) ^ (static_cast<uint64_t>(host) * 0xD1B54A32D192ED03ULL);
  mixed ^= purpose * 0x8CB92BA72F3D8DD7ULL;
  return SplitMix64(mixed);
}

}  // namespace

struct TsbsGenerator::HostState {
  std::array<std::string, kNumTags> tags;
  std::array<int64_t, kNumMetrics> metrics{};
  Xoshiro256 walk{0};
};

std::shared_ptr<arrow::Schema> TsbsSchema() {
  arrow::FieldVector fields;
  fields.reserve(1 + kNumTags + kNumMetrics);
  fields.push_back(arrow::field("time", arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"),
                                /*nullable=*/false));
  for (const char* tag : kTags) fields.push_back(arrow::field(tag, arrow::utf8(), false));
  for (const char* metric : kTsbsMetrics) {
    fields.push_back(arrow::field(metric, arrow::int64(), false));
  }
  return arrow::schema(std::move(fields));
}

int64_t TotalSteps(const TsbsOptions& options) {
  const int64_t duration_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options.duration).count();
  const int64_t interval_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options.interval).count();
  if (duration_us <= 0 || interval_us <= 0) return 0;
  return (duration_us + interval_us - 1) / interval_us;
}

int64_t TotalRows(const TsbsOptions& options) {
  return options.hosts > 0 ? TotalSteps(options) * options.hosts : 0;
}

TsbsGenerator::TsbsGenerator(TsbsOptions options)
    : options_(options), schema_(TsbsSchema()), total_rows_(TotalRows(options)) {
  if (!Validate().ok()) return;
  hosts_.resize(static_cast<size_t>(options_.hosts));
  const auto& regions = Regions();
  for (int h = 0; h < options_.hosts; ++h) {
    HostState& host = hosts_[static_cast<size_t>(h)];
    Xoshiro256 rng(StreamSeed(options_.seed, h, /*purpose=*/1));
    const Region& region = regions[static_cast<size_t>(rng.Below(std::ssize(regions)))];
    host.tags = {
        "host_" + std::to_string(h),
        region.name,
        region
            .datacenters[static_cast<size_t>(rng.Below(std::ssize(region.datacenters)))],
        std::to_string(rng.Below(kRacks)),
        kOs[static_cast<size_t>(rng.Below(std::ssize(kOs)))],
        kArch[static_cast<size_t>(rng.Below(std::ssize(kArch)))],
        kTeam[static_cast<size_t>(rng.Below(std::ssize(kTeam)))],
        std::to_string(rng.Below(kServices)),
        std::to_string(rng.Below(kServiceVersions)),
        kEnvironment[static_cast<size_t>(rng.Below(std::ssize(kEnvironment)))],
    };
    host.walk = Xoshiro256(StreamSeed(options_.seed, h, /*purpose=*/2));
    for (auto& value : host.metrics) value = host.walk.Below(kMetricMax - kMetricMin + 1);
  }
}

TsbsGenerator::~TsbsGenerator() = default;

std::shared_ptr<arrow::Schema> TsbsGenerator::schema() const { return schema_; }

arrow::Status TsbsGenerator::Validate() const {
  if (options_.hosts < 1) {
    return arrow::Status::Invalid("TSBS generator: hosts must be at least 1, got ",
                                  options_.hosts);
  }
  if (options_.interval.count() <= 0) {
    return arrow::Status::Invalid("TSBS generator: interval must be positive");
  }
  if (options_.duration.count() <= 0) {
    return arrow::Status::Invalid("TSBS generator: duration must be positive");
  }
  if (options_.batch_rows < 1) {
    return arrow::Status::Invalid("TSBS generator: batch_rows must be at least 1");
  }
  return arrow::Status::OK();
}

arrow::Status TsbsGenerator::ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) {
  ARROW_RETURN_NOT_OK(Validate());
  *batch = nullptr;
  const int64_t n = std::min(options_.batch_rows, total_rows_ - next_row_);
  if (n <= 0) return arrow::Status::OK();

  const int64_t hosts = options_.hosts;
  const int64_t interval_us =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.interval).count();

  arrow::TimestampBuilder time_builder(schema_->field(0)->type(),
                                       arrow::default_memory_pool());
  ARROW_RETURN_NOT_OK(time_builder.Reserve(n));
  std::array<arrow::StringBuilder, kNumTags> tag_builders;
  for (size_t t = 0; t < kNumTags; ++t) {
    ARROW_RETURN_NOT_OK(tag_builders[t].Reserve(n));
    // Every tag of every host is shorter than 24 bytes ("host_" + 9 digits is
    // the longest), so this one reservation avoids regrowth.
    ARROW_RETURN_NOT_OK(tag_builders[t].ReserveData(n * 24));
  }
  std::array<arrow::Int64Builder, kNumMetrics> metric_builders;
  for (auto& builder : metric_builders) ARROW_RETURN_NOT_OK(builder.Reserve(n));

  for (int64_t row = next_row_; row < next_row_ + n; ++row) {
    const int64_t step = row / hosts;
    HostState& host = hosts_[static_cast<size_t>(row % hosts)];
    if (step > 0) {
      // Each row is generated exactly once, so each host advances once per step.
      for (auto& value : host.metrics) {
        value += host.walk.Below(2 * kMaxStep + 1) - kMaxStep;
        value = std::clamp(value, kMetricMin, kMetricMax);
      }
    }
    time_builder.UnsafeAppend(options_.start_us + step * interval_us);
    for (size_t t = 0; t < kNumTags; ++t) {
      tag_builders[t].UnsafeAppend(std::string_view(host.tags[t]));
    }
    for (size_t m = 0; m < kNumMetrics; ++m) {
      metric_builders[m].UnsafeAppend(host.metrics[m]);
    }
  }
  next_row_ += n;

  arrow::ArrayVector columns;
  columns.reserve(1 + kNumTags + kNumMetrics);
  ARROW_ASSIGN_OR_RAISE(auto time_array, time_builder.Finish());
  columns.push_back(std::move(time_array));
  for (auto& builder : tag_builders) {
    ARROW_ASSIGN_OR_RAISE(auto array, builder.Finish());
    columns.push_back(std::move(array));
  }
  for (auto& builder : metric_builders) {
    ARROW_ASSIGN_OR_RAISE(auto array, builder.Finish());
    columns.push_back(std::move(array));
  }
  *batch = arrow::RecordBatch::Make(schema_, n, std::move(columns));
  return arrow::Status::OK();
}

}  // namespace timelake::cli
