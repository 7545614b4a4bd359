// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// A deterministic generator of the TSBS `cpu-only` data set (SPEC §12), used by
// `timelake demo` and the benchmarks: one row per host every `interval`, with
// the 10 TSBS string tags and 10 int64 CPU metrics in 0..100.
//
//   TsbsOptions options;
//   options.hosts = 10;
//   TsbsGenerator gen(options);
//   std::shared_ptr<arrow::RecordBatch> batch;
//   while (gen.ReadNext(&batch).ok() && batch != nullptr) { ... }
//
// Rows are time-major (every host at t0, then every host at t1, ...). The data
// depends only on the options' hosts/duration/interval/start/seed, never on
// batch_rows: a host's tags come from a PRNG seeded by (seed, host) and each
// metric follows a bounded random walk driven by that host's own PRNG, so two
// runs (or two batch sizes) produce identical rows.

#ifndef TIMELAKE_CLI_TSBS_H_
#define TIMELAKE_CLI_TSBS_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/record_batch.h>
#include <arrow/type_fwd.h>

namespace timelake::cli {

struct TsbsOptions {
  // Number of hosts ("host_0" .. "host_<hosts-1>"). Default: 100.
  int hosts = 100;
  // Length of the time range [start, start + duration). Default: 24 h.
  std::chrono::hours duration{24};
  // Time between two readings of one host. Default: 10 s.
  std::chrono::seconds interval{10};
  // First timestamp, microseconds since the Unix epoch (UTC).
  // Default: 2024-01-01T00:00:00Z.
  int64_t start_us = 1704067200000000;
  // Seed of every PRNG. Default: 42.
  uint64_t seed = 42;
  // Rows per generated batch (the last one may be shorter). Default: 100,000.
  int64_t batch_rows = 100000;
};

// Column names of the ten metrics, in schema order.
inline constexpr std::array<const char*, 10> kTsbsMetrics = {
    "usage_user", "usage_system",  "usage_idle",  "usage_nice",  "usage_iowait",
    "usage_irq",  "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"};

// The cpu-only schema: `time` (timestamp[us, UTC], not null), the ten tags
// (utf8, not null), then the ten metrics (int64, not null).
std::shared_ptr<arrow::Schema> TsbsSchema();

// Number of timestamps per host: ceil(duration / interval).
int64_t TotalSteps(const TsbsOptions& options);
// Rows the generator yields in all: hosts * TotalSteps(options).
int64_t TotalRows(const TsbsOptions& options);

// Yields the data set as record batches of TsbsSchema(). Not thread-safe.
class TsbsGenerator : public arrow::RecordBatchReader {
 public:
  // Invalid options (hosts < 1, non-positive interval or batch_rows) make the
  // first ReadNext fail with Invalid.
  explicit TsbsGenerator(TsbsOptions options);
  ~TsbsGenerator() override;

  std::shared_ptr<arrow::Schema> schema() const override;
  // The next batch, or nullptr once all TotalRows() rows were returned.
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override;

  int64_t rows_generated() const { return next_row_; }
  int64_t total_rows() const { return total_rows_; }

 private:
  struct HostState;

  arrow::Status Validate() const;

  TsbsOptions options_;
  std::shared_ptr<arrow::Schema> schema_;
  int64_t total_rows_ = 0;
  int64_t next_row_ = 0;  // index of the next row: step * hosts + host
  std::vector<HostState> hosts_;
};

}  // namespace timelake::cli

#endif  // TIMELAKE_CLI_TSBS_H_
