// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The data half of an append (SPEC §5): aligned batches in, sorted and
// deduplicated Parquet files out, one per time partition, with the column
// statistics that go into the manifest.

#ifndef TIMELAKE_WRITE_DATA_WRITER_H_
#define TIMELAKE_WRITE_DATA_WRITER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/record_batch.h>
#include <parquet/types.h>

#include "timelake/status.h"
#include "timelake/storage/store.h"
#include "timelake/timelake.h"
#include "timelake/util/clock.h"

namespace timelake::write {

// What the writer needs to know about the table.
struct Layout {
  std::shared_ptr<arrow::Schema> schema;  // table schema with field ids
  std::optional<std::string> time_column;
  std::vector<std::string> series_key;
  std::string ingest_column;  // empty for plain tables
  Chunk chunk = Chunk::kDay;
  bool dedup = false;
  bool partitioned = false;          // by the hour/day/month of the time column
  std::string partition_field_name;  // e.g. "time_day"; empty when unpartitioned
  parquet::Compression::type compression = parquet::Compression::ZSTD;
  int compression_level = 3;
  int64_t row_group_rows = 1 << 20;
  int64_t data_page_rows = 20000;
};

struct WrittenFile {
  std::string key;  // relative to the warehouse root
  int64_t rows = 0;
  int64_t bytes = 0;
  std::optional<int32_t> partition;  // transform value (days/hours/months since epoch)
  std::map<int32_t, int64_t> column_sizes, value_counts, null_value_counts;
  std::map<int32_t, std::string> lower_bounds, upper_bounds;
};

struct WriteOutput {
  std::vector<WrittenFile> files;
  int64_t input_rows = 0;
  int64_t rows = 0;  // after dedup
  // Time-series tables: the newest row of every series among the written
  // rows, by the tie rule (for the last-value index); null otherwise.
  std::shared_ptr<arrow::RecordBatch> latest;
};

// Partition value of a timestamp (microseconds since the epoch) for a chunk:
// hours, days or months since 1970-01-01, as Iceberg's transforms define.
int32_t PartitionOf(int64_t micros, Chunk chunk);
// Iceberg's human form of a partition value: "2026-01-01-05", "2026-01-01",
// "2026-01".
std::string PartitionLabel(int32_t value, Chunk chunk);

// Aligns, stamps insertion time `now` where null, sorts, deduplicates and
// writes the files under `data_prefix` (the table's "…/data" key). Each file
// streams to storage through a StoreOutputStream (storage/io.h): parts of
// 8 MiB, uploaded as they fill, so a file's bytes are never all in memory,
// and a file appears whole or not at all. On error the files written so far
// are deleted. Errors: kInvalid for bad data (nothing is written), kStorage.
arrow::Result<WriteOutput> WriteDataFiles(
    const storage::Store& store, const std::string& data_prefix, const Layout& layout,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    internal::TimePoint now);

}  // namespace timelake::write

#endif  // TIMELAKE_WRITE_DATA_WRITER_H_
