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
#include <arrow/stl_allocator.h>
#include <arrow/util/thread_pool.h>
#include <parquet/types.h>

#include "timelake/status.h"
#include "timelake/storage/store.h"
#include "timelake/timelake.h"
#include "timelake/util/clock.h"

namespace timelake::write {

// A vector of one value per row, in Arrow's memory pool like the columns.
// These run to tens of MB in a compaction; from the C++ heap they would stay
// in the arenas of the threads that freed them (glibc trims an arena's top
// only past a threshold that grows with the largest allocation seen).
template <typename T>
using RowVector = std::vector<T, arrow::stl::allocator<T>>;

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
  // Keep a self-contained footer blob of each file whose footer (with page
  // indexes) fits this many bytes, for the head object (WrittenFile::footer).
  // 0: none.
  int64_t footer_bytes = 0;
};

struct WrittenFile {
  std::string key;  // relative to the warehouse root
  int64_t rows = 0;
  int64_t bytes = 0;
  std::optional<int32_t> partition;  // transform value (days/hours/months since epoch)
  std::map<int32_t, int64_t> column_sizes, value_counts, null_value_counts;
  std::map<int32_t, std::string> lower_bounds, upper_bounds;
  // The file's footer blob (storage::Store::FooterFromTail), when
  // Layout::footer_bytes asked for one and it fit; its metadata is then in
  // the store's footer cache too.
  std::shared_ptr<arrow::Buffer> footer;
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

// The dense rank of each value of `column` in the write order's order of a
// series key column: 0 for null, 1 for the smallest value, … (strings by
// their bytes). Dictionary arrays with int32 indices are ranked by their
// dictionaries.
arrow::Result<RowVector<uint32_t>> SeriesValueRanks(
    const std::shared_ptr<arrow::Array>& column);

// The positions of the rows of `table` in the write order (series…, time,
// insertion, input position), nulls first; with layout.dedup only the last
// row of each (series…, time). `table` has one chunk per column, its rows in
// commit order (so that the input position breaks ties as the commit order
// does), all of one partition; string columns may be dictionary-encoded with
// int32 indices. For a compaction that reads its inputs whole. Errors:
// kInvalid without a time column.
arrow::Result<std::shared_ptr<arrow::Array>> WriteOrder(const arrow::Table& table,
                                                        const Layout& layout);

// Writes the batches of one append as they arrive, a chunk at a time: once
// `chunk_rows` rows wait (batches are cut at the boundary), WriteDataFiles
// writes them, so memory holds about one chunk of aligned rows however long
// the stream. Every chunk's output adds up into one WriteOutput for one
// commit: files in order, counts summed, and the newest row per series merged
// (a later chunk wins full ties, as a later row of one batch does). Dedup is
// within a chunk; rows of equal keys in different chunks land in different
// files of the same snapshot, and dedup on read keeps the later one, because
// each chunk is stamped with an insertion time strictly later than the
// chunk's before it (the clock's time, or one microsecond after the previous
// chunk's). Files written and not handed out by Finish() are deleted by
// Abort() and by the destructor. Not thread-safe.
class ChunkedWriter {
 public:
  ChunkedWriter(const storage::Store& store, std::string data_prefix, Layout layout,
                int64_t chunk_rows, const internal::Clock& clock);
  ~ChunkedWriter();
  ChunkedWriter(const ChunkedWriter&) = delete;
  ChunkedWriter& operator=(const ChunkedWriter&) = delete;

  // Aligns `batch` to the table schema (an error names it by its position
  // in the stream, from 0) and writes a chunk once enough rows wait.
  // Errors: kInvalid for bad data, kStorage; then Abort() is due.
  arrow::Status Add(const std::shared_ptr<arrow::RecordBatch>& batch);
  // Writes the rows still waiting and hands out everything written; the
  // caller owns the files from then on. Errors: those of Add.
  arrow::Result<WriteOutput> Finish();
  // Deletes every file written so far and drops the rows waiting.
  void Abort();

 private:
  arrow::Status WriteChunk();

  const storage::Store& store_;
  std::string data_prefix_;
  Layout layout_;
  int64_t chunk_rows_;
  const internal::Clock& clock_;
  std::optional<internal::TimePoint> last_stamp_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending_;
  int64_t pending_rows_ = 0;
  int64_t batches_ = 0;  // batches given to Add
  WriteOutput out_;
};

// Writes rows that arrive already sorted and deduplicated (a compaction's
// merge) into the files of one partition, streaming: a new file starts once
// the current one holds `target_rows` rows or `target_bytes` bytes, so about
// one file's row group is in memory at a time. Not thread-safe.
class SortedFileWriter {
 public:
  SortedFileWriter(const storage::Store& store, std::string dir_key, Layout layout,
                   std::optional<int32_t> partition, int64_t target_rows,
                   int64_t target_bytes, internal::TimePoint now);
  ~SortedFileWriter();

  // Errors: kStorage; then Abort() is due.
  arrow::Status Write(const std::shared_ptr<arrow::RecordBatch>& batch);
  // Closes the last file; the files written, in order.
  arrow::Result<std::vector<WrittenFile>> Finish();
  // Deletes every file written so far and discards the open one.
  void Abort();

 private:
  struct Open;
  arrow::Status StartFile();
  arrow::Status FinishFile();
  // Writes rows into the open file and keeps its statistics.
  arrow::Status Append(const arrow::RecordBatch& slice);
  // The first row at or after `offset` of another series than the last
  // one written.
  arrow::Result<int64_t> SeriesRunEnd(const arrow::RecordBatch& batch,
                                      int64_t offset) const;

  const storage::Store& store_;
  std::string dir_key_;
  Layout layout_;
  std::optional<int32_t> partition_;
  bool flat_;  // no nested column: the writer's statistics give bounds
  int64_t target_rows_, target_bytes_;
  internal::TimePoint now_;
  std::unique_ptr<Open> open_;
  std::vector<WrittenFile> done_;
  int series_column_ = -1;  // the first series key column, when there is one
  std::shared_ptr<arrow::Scalar> last_series_;  // its value in the last row written
};

// The write path's own threads (a pool of one per core, never destroyed, so
// that background writers may still use it at exit): the columns of a row
// group encoded in parallel, and the next column of a rewrite prepared
// (maintain/whole.cc). Its tasks never wait for others of it, and a caller
// on Arrow's CPU pool cannot deadlock waiting for tasks queued behind it.
// Null if the pool could not be made.
arrow::internal::Executor* EncodePool();

// Writes one file a column at a time, row group by row group: for a
// rewrite that holds one column of a row group in memory at a time
// (maintain/whole.cc). Open() starts the file; StartRowGroup() starts a row
// group of `rows` rows (at least 1); then WriteColumn() takes each column of
// layout.schema in order, all of the row group's rows (strings may be
// dictionary arrays: written as their dictionary and indices); Finish()
// closes the file once the last row group is complete. Not thread-safe.
class ColumnFileWriter {
 public:
  static arrow::Result<std::unique_ptr<ColumnFileWriter>> Open(
      const storage::Store& store, std::string key, Layout layout,
      std::optional<int32_t> partition);
  ~ColumnFileWriter();

  // Errors: kInvalid before the last one's columns are all written.
  arrow::Status StartRowGroup(int64_t rows);

  // Errors: kInvalid for a column of another length or type than the next
  // one due, kStorage; then Abort() is due.
  arrow::Status WriteColumn(const std::shared_ptr<arrow::Array>& column);
  // Closes the file once every row group is written; the caller owns it
  // then.
  arrow::Result<WrittenFile> Finish();
  // Discards the file: nothing is left at its key.
  void Abort();

 private:
  struct Open_;
  explicit ColumnFileWriter(std::unique_ptr<Open_> open);
  std::unique_ptr<Open_> open_;
};

}  // namespace timelake::write

#endif  // TIMELAKE_WRITE_DATA_WRITER_H_
