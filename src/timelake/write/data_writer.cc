// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/write/data_writer.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <thread>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_writer.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>

#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/storage/io.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"

namespace timelake::write {

namespace cp = arrow::compute;

namespace {

constexpr char kPartitionKey[] = "__timelake_partition";
constexpr char kRowKey[] = "__timelake_row";

int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// Howard Hinnant's civil_from_days: days since 1970-01-01 to (y, m, d).
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

// Parquet leaf columns of a type: one for primitives, the sum over children
// for nested types.
int LeafCount(const arrow::DataType& type) {
  if (type.num_fields() == 0) return 1;
  int n = 0;
  for (const auto& child : type.fields()) n += LeafCount(*child->type());
  return n;
}

struct Statistics {
  std::map<int32_t, int64_t> value_counts, null_value_counts;
  std::map<int32_t, std::string> lower_bounds, upper_bounds;
};

arrow::Result<Statistics> ColumnStatistics(const arrow::Table& table) {
  Statistics out;
  for (int i = 0; i < table.num_columns(); ++i) {
    const auto& field = table.schema()->field(i);
    auto id = format::FieldId(*field);
    if (!id) continue;
    const auto& column = table.column(i);
    out.value_counts[*id] = column->length();
    out.null_value_counts[*id] = column->null_count();
    if (field->type()->num_fields() > 0 || column->null_count() == column->length())
      continue;
    auto minmax = cp::MinMax(column);
    if (!minmax.ok()) continue;  // bounds are optional; types without min/max get none
    const auto& s = minmax->scalar_as<arrow::StructScalar>();
    if (!s.value[0]->is_valid || !s.value[1]->is_valid) continue;
    auto lo = format::EncodeScalar(*s.value[0]);
    auto hi = format::EncodeScalar(*s.value[1]);
    if (lo.ok() && hi.ok()) {
      out.lower_bounds[*id] = std::move(*lo);
      out.upper_bounds[*id] = std::move(*hi);
    }
  }
  return out;
}

// The stream of a data file: keeps what FooterOf() needs.
arrow::Result<std::shared_ptr<storage::StoreOutputStream>> OpenSink(
    const storage::Store& store, const std::string& key, const Layout& layout) {
  storage::OutputStreamOptions options;
  options.keep_tail = std::clamp<int64_t>(layout.footer_bytes, 0, options.part_size);
  return storage::StoreOutputStream::Open(store, key, options);
}

// The footer blob of a file complete in storage, from the tail its stream
// kept before Close(); null when none is wanted or the footer is larger. A
// footer that does not parse is only a missed shortcut: readers then read
// it from the file, which is complete and committed either way.
std::shared_ptr<arrow::Buffer> FooterOf(const storage::Store& store,
                                        const std::string& key, const std::string& tail,
                                        int64_t file_size) {
  if (tail.empty()) return nullptr;
  auto blob = store.FooterFromTail(key, tail, static_cast<uint64_t>(file_size));
  if (!blob.ok() || (*blob)->size() == 0) return nullptr;
  return *blob;
}

arrow::Result<WrittenFile> WriteOneFile(
    const storage::Store& store, const std::string& key, const arrow::Table& table,
    const Layout& layout, const std::vector<parquet::SortingColumn>& sorting) {
  parquet::WriterProperties::Builder builder;
  builder.compression(layout.compression);
  if (layout.compression == parquet::Compression::ZSTD ||
      layout.compression == parquet::Compression::GZIP) {
    builder.compression_level(layout.compression_level);
  }
  builder.enable_statistics()
      ->enable_write_page_index()
      ->max_row_group_length(layout.row_group_rows)
      ->max_rows_per_page(layout.data_page_rows)
      ->created_by("timelake-cpp 0.1.0")
      ->set_sorting_columns(sorting);
  auto props = builder.build();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();

  // Statistics first: once the file is streamed to storage, nothing may fail
  // before it is reported as written (the caller deletes only what it knows).
  WrittenFile file;
  file.key = key;
  file.rows = table.num_rows();
  TIMELAKE_ASSIGN_OR_RAISE(auto stats, ColumnStatistics(table));
  file.value_counts = std::move(stats.value_counts);
  file.null_value_counts = std::move(stats.null_value_counts);
  file.lower_bounds = std::move(stats.lower_bounds);
  file.upper_bounds = std::move(stats.upper_bounds);

  // The file streams to storage part by part (bounded memory) and appears
  // only on the stream's Close(). On any error the stream is aborted before
  // the Parquet writer goes away, so that the footer its destructor may write
  // is never committed: nothing is left at `key`.
  TIMELAKE_ASSIGN_OR_RAISE(auto sink, OpenSink(store, key, layout));
  auto fail = [&sink](const arrow::Status& st) {
    (void)sink->Abort();
    return st;
  };
  auto opened = parquet::arrow::FileWriter::Open(
      *table.schema(), arrow::default_memory_pool(), sink, props, arrow_props);
  if (!opened.ok()) return fail(opened.status());
  auto writer = std::move(opened).ValueUnsafe();
  if (auto st = writer->WriteTable(table, layout.row_group_rows); !st.ok()) {
    return fail(st);
  }
  if (auto st = writer->Close(); !st.ok()) return fail(st);
  // Column sizes per leaf; only flat schemas map leaves to field ids 1:1.
  auto metadata = writer->metadata();
  if (metadata && metadata->num_columns() == table.num_columns()) {
    for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
      auto group = metadata->RowGroup(rg);
      for (int c = 0; c < group->num_columns(); ++c) {
        if (auto id = format::FieldId(*table.schema()->field(c))) {
          file.column_sizes[*id] += group->ColumnChunk(c)->total_compressed_size();
        }
      }
    }
  }
  const std::string tail = sink->Tail(layout.footer_bytes);
  if (auto st = sink->Close(); !st.ok()) return fail(st);
  TIMELAKE_ASSIGN_OR_RAISE(file.bytes, sink->Tell());
  file.footer = FooterOf(store, key, tail, file.bytes);
  return file;
}

}  // namespace

int32_t PartitionOf(int64_t micros, Chunk chunk) {
  constexpr int64_t kHourUs = 3600LL * 1000000;
  switch (chunk) {
    case Chunk::kHour:
      return static_cast<int32_t>(FloorDiv(micros, kHourUs));
    case Chunk::kDay:
      return static_cast<int32_t>(FloorDiv(micros, 24 * kHourUs));
    case Chunk::kMonth: {
      int64_t y;
      unsigned m, d;
      CivilFromDays(FloorDiv(micros, 24 * kHourUs), &y, &m, &d);
      return static_cast<int32_t>((y - 1970) * 12 + (m - 1));
    }
  }
  return 0;
}

std::string PartitionLabel(int32_t value, Chunk chunk) {
  char buf[48];
  int64_t y;
  unsigned m, d;
  switch (chunk) {
    case Chunk::kHour:
      CivilFromDays(FloorDiv(value, 24), &y, &m, &d);
      std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u-%02lld",
                    static_cast<long long>(y), m, d,
                    static_cast<long long>(value - FloorDiv(value, 24) * 24));
      break;
    case Chunk::kDay:
      CivilFromDays(value, &y, &m, &d);
      std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02u", static_cast<long long>(y), m,
                    d);
      break;
    case Chunk::kMonth:
      std::snprintf(buf, sizeof(buf), "%04lld-%02lld",
                    static_cast<long long>(1970 + FloorDiv(value, 12)),
                    static_cast<long long>(value - FloorDiv(value, 12) * 12 + 1));
      break;
  }
  return buf;
}

namespace {

// An aligned batch refuses nulls in NOT NULL columns; the time column of a
// table adopted from another engine (Table::Upgrade) may be optional in its
// Iceberg schema, and Timelake still takes no row without a time.
arrow::Status CheckTimes(const arrow::RecordBatch& batch, const Layout& layout) {
  if (!layout.time_column) return arrow::Status::OK();
  const auto column = batch.GetColumnByName(*layout.time_column);
  if (column == nullptr || column->null_count() == 0) return arrow::Status::OK();
  return Invalid("time column '" + *layout.time_column + "' may not be null, but " +
                 std::to_string(column->null_count()) + " of " +
                 std::to_string(batch.num_rows()) + " rows are null");
}

}  // namespace

arrow::Result<WriteOutput> WriteDataFiles(
    const storage::Store& store, const std::string& data_prefix, const Layout& layout,
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    internal::TimePoint now) {
  WriteOutput out;
  std::vector<std::shared_ptr<arrow::RecordBatch>> aligned;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!batches[i]) return Invalid("batch " + std::to_string(i) + " is null");
    auto a = AlignBatch(*batches[i], *layout.schema);
    if (a.ok()) {
      if (auto st = CheckTimes(**a, layout); !st.ok()) a = st;
    }
    if (!a.ok()) {
      return WithContext(a.status(),
                         batches.size() > 1 ? "batch " + std::to_string(i) : "batch");
    }
    out.input_rows += (*a)->num_rows();
    if ((*a)->num_rows() > 0) aligned.push_back(std::move(*a));
  }
  if (out.input_rows == 0) return out;

  TIMELAKE_ASSIGN_OR_RAISE(auto table,
                           arrow::Table::FromRecordBatches(layout.schema, aligned));
  TIMELAKE_ASSIGN_OR_RAISE(table, table->CombineChunks());
  const int64_t n = table->num_rows();

  // Stamp the insertion time where the caller left it null.
  if (!layout.ingest_column.empty()) {
    const int idx = table->schema()->GetFieldIndex(layout.ingest_column);
    auto column = table->column(idx);
    if (column->null_count() > 0) {
      auto type = layout.schema->field(idx)->type();
      auto stamp =
          std::make_shared<arrow::TimestampScalar>(internal::ToMicros(now), type);
      TIMELAKE_ASSIGN_OR_RAISE(
          auto filled, cp::CallFunction("coalesce", {column, arrow::Datum(stamp)}));
      TIMELAKE_ASSIGN_OR_RAISE(table, table->SetColumn(idx, layout.schema->field(idx),
                                                       filled.chunked_array()));
    }
  }

  // Partition value per row.
  std::shared_ptr<arrow::Int32Array> partitions;
  if (layout.time_column && layout.partitioned) {
    const int idx = table->schema()->GetFieldIndex(*layout.time_column);
    auto times =
        std::static_pointer_cast<arrow::TimestampArray>(table->column(idx)->chunk(0));
    arrow::Int32Builder builder;
    TIMELAKE_RETURN_NOT_OK(builder.Reserve(n));
    for (int64_t i = 0; i < n; ++i) {
      builder.UnsafeAppend(PartitionOf(times->Value(i), layout.chunk));
    }
    TIMELAKE_ASSIGN_OR_RAISE(auto finished, builder.Finish());
    partitions = std::static_pointer_cast<arrow::Int32Array>(finished);
  }

  // Sort by (partition, series…, time, insertion, input position). Arrow's
  // sort is stable, and the input position key makes the order explicit.
  if (layout.time_column) {
    std::vector<cp::SortKey> keys;
    arrow::FieldVector extra_fields;
    arrow::ChunkedArrayVector extra_columns;
    if (partitions) {
      extra_fields.push_back(arrow::field(kPartitionKey, arrow::int32()));
      extra_columns.push_back(std::make_shared<arrow::ChunkedArray>(partitions));
    }
    arrow::Int64Builder rows;
    TIMELAKE_RETURN_NOT_OK(rows.Reserve(n));
    for (int64_t i = 0; i < n; ++i) rows.UnsafeAppend(i);
    TIMELAKE_ASSIGN_OR_RAISE(auto row_array, rows.Finish());
    extra_fields.push_back(arrow::field(kRowKey, arrow::int64()));
    extra_columns.push_back(std::make_shared<arrow::ChunkedArray>(row_array));
    arrow::FieldVector fields = table->schema()->fields();
    arrow::ChunkedArrayVector columns = table->columns();
    fields.insert(fields.end(), extra_fields.begin(), extra_fields.end());
    columns.insert(columns.end(), extra_columns.begin(), extra_columns.end());
    auto keyed = arrow::Table::Make(arrow::schema(fields), columns, n);

    auto key = [](const std::string& name) {
      return cp::SortKey(name, cp::SortOrder::Ascending, cp::NullPlacement::AtStart);
    };
    if (partitions) keys.push_back(key(kPartitionKey));
    for (const auto& k : layout.series_key) keys.push_back(key(k));
    keys.push_back(key(*layout.time_column));
    if (!layout.ingest_column.empty()) keys.push_back(key(layout.ingest_column));
    keys.push_back(key(kRowKey));
    cp::SortOptions options(keys);
    TIMELAKE_ASSIGN_OR_RAISE(auto indices, cp::SortIndices(arrow::Datum(keyed), options));
    TIMELAKE_ASSIGN_OR_RAISE(auto sorted,
                             cp::Take(arrow::Datum(keyed), arrow::Datum(indices)));
    keyed = sorted.table();
    TIMELAKE_ASSIGN_OR_RAISE(keyed, keyed->CombineChunks());

    // Dedup: within equal (series…, time) the last row in sort order wins,
    // which is the latest insertion, then the later input row.
    if (layout.dedup && n > 1) {
      std::vector<std::shared_ptr<arrow::Array>> key_arrays;
      for (const auto& k : layout.series_key) {
        key_arrays.push_back(keyed->GetColumnByName(k)->chunk(0));
      }
      key_arrays.push_back(keyed->GetColumnByName(*layout.time_column)->chunk(0));
      TIMELAKE_ASSIGN_OR_RAISE(auto same, internal::SameAsNext(key_arrays, n));
      arrow::BooleanBuilder keep;
      TIMELAKE_RETURN_NOT_OK(keep.Reserve(n));
      for (int64_t i = 0; i + 1 < n; ++i) keep.UnsafeAppend(!same->Value(i));
      keep.UnsafeAppend(true);
      TIMELAKE_ASSIGN_OR_RAISE(auto mask, keep.Finish());
      TIMELAKE_ASSIGN_OR_RAISE(auto filtered, cp::Filter(arrow::Datum(keyed), mask));
      TIMELAKE_ASSIGN_OR_RAISE(keyed, filtered.table()->CombineChunks());
    }
    if (partitions) {
      partitions = std::static_pointer_cast<arrow::Int32Array>(
          keyed->GetColumnByName(kPartitionKey)->chunk(0));
    }
    for (size_t i = 0; i < extra_fields.size(); ++i) {
      TIMELAKE_ASSIGN_OR_RAISE(keyed, keyed->RemoveColumn(keyed->num_columns() - 1));
    }
    table = keyed;
  }
  out.rows = table->num_rows();

  // The newest row per series: rows are sorted by (partition, series…, time,
  // insertion, input row), so the last row of each series within a partition
  // is that partition's candidate; the newest candidate of each series wins.
  if (layout.time_column && out.rows > 0) {
    const int64_t rows = table->num_rows();
    TIMELAKE_ASSIGN_OR_RAISE(auto sorted, table->CombineChunksToBatch());
    std::vector<std::shared_ptr<arrow::Array>> series;
    for (const auto& k : layout.series_key) series.push_back(sorted->GetColumnByName(k));
    std::shared_ptr<arrow::BooleanArray> same;
    if (!series.empty() && rows > 1) {
      TIMELAKE_ASSIGN_OR_RAISE(same, internal::SameAsNext(series, rows));
    }
    arrow::Int64Builder last;
    for (int64_t i = 0; i < rows; ++i) {
      const bool end = i + 1 == rows ||
                       (partitions && partitions->Value(i) != partitions->Value(i + 1)) ||
                       (same != nullptr && !same->Value(i));
      if (end) TIMELAKE_RETURN_NOT_OK(last.Append(i));
    }
    TIMELAKE_ASSIGN_OR_RAISE(auto indices, last.Finish());
    TIMELAKE_ASSIGN_OR_RAISE(auto candidates,
                             cp::Take(arrow::Datum(sorted), arrow::Datum(indices)));
    TIMELAKE_ASSIGN_OR_RAISE(
        out.latest, LatestPerSeries({candidates.record_batch()}, *layout.time_column,
                                    layout.series_key, layout.ingest_column));
  }

  // Runs of equal partition values become files.
  struct Slice {
    int64_t offset, length;
    std::optional<int32_t> partition;
  };
  std::vector<Slice> slices;
  if (partitions) {
    int64_t start = 0;
    for (int64_t i = 1; i <= table->num_rows(); ++i) {
      if (i == table->num_rows() || partitions->Value(i) != partitions->Value(start)) {
        slices.push_back({start, i - start, partitions->Value(start)});
        start = i;
      }
    }
  } else {
    slices.push_back({0, table->num_rows(), std::nullopt});
  }

  // Parquet's sorting columns count leaf columns, which differ from field
  // positions once a nested column comes first.
  std::vector<parquet::SortingColumn> sorting;
  auto leaf_index = [&](const std::string& name) {
    const int field = table->schema()->GetFieldIndex(name);
    int leaf = 0;
    for (int i = 0; i < field; ++i) leaf += LeafCount(*table->schema()->field(i)->type());
    return leaf;
  };
  for (const auto& k : layout.series_key) sorting.push_back({leaf_index(k), false, true});
  if (layout.time_column)
    sorting.push_back({leaf_index(*layout.time_column), false, true});

  // Partitions are written in parallel, a few at a time.
  std::vector<arrow::Result<WrittenFile>> results(slices.size(),
                                                  arrow::Status::UnknownError("not run"));
  const size_t workers = std::max<size_t>(
      1, std::min<size_t>(slices.size(), std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < slices.size(); i = next++) {
      const auto& s = slices[i];
      std::string dir = data_prefix;
      if (s.partition)
        dir += "/" + layout.partition_field_name + "=" +
               PartitionLabel(*s.partition, layout.chunk);
      const std::string key = dir + "/" + internal::NewUuidV7(now) + ".parquet";
      results[i] =
          WriteOneFile(store, key, *table->Slice(s.offset, s.length), layout, sorting);
      if (results[i].ok()) results[i]->partition = s.partition;
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();

  arrow::Status first_error;
  for (auto& r : results) {
    if (r.ok()) {
      out.files.push_back(std::move(*r));
    } else if (first_error.ok()) {
      first_error = r.status();
    }
  }
  if (!first_error.ok()) {
    for (const auto& f : out.files) (void)store.Delete(f.key);
    return first_error;
  }
  return out;
}

ChunkedWriter::ChunkedWriter(const storage::Store& store, std::string data_prefix,
                             Layout layout, int64_t chunk_rows,
                             const internal::Clock& clock)
    : store_(store),
      data_prefix_(std::move(data_prefix)),
      layout_(std::move(layout)),
      chunk_rows_(std::max<int64_t>(1, chunk_rows)),
      clock_(clock) {}

ChunkedWriter::~ChunkedWriter() { Abort(); }

arrow::Status ChunkedWriter::Add(const std::shared_ptr<arrow::RecordBatch>& batch) {
  const int64_t index = batches_++;
  if (!batch) return Invalid("batch " + std::to_string(index) + " is null");
  auto aligned = AlignBatch(*batch, *layout_.schema);
  if (aligned.ok()) {
    if (auto st = CheckTimes(**aligned, layout_); !st.ok()) aligned = st;
  }
  if (!aligned.ok()) {
    return WithContext(aligned.status(), "batch " + std::to_string(index));
  }
  std::shared_ptr<arrow::RecordBatch> rows = std::move(*aligned);
  out_.input_rows += rows->num_rows();
  // Cut at the chunk boundary (slices are zero-copy), so that a chunk is
  // chunk_rows rows whatever the caller's batch sizes.
  while (pending_rows_ + rows->num_rows() >= chunk_rows_) {
    const int64_t take = chunk_rows_ - pending_rows_;
    pending_.push_back(rows->Slice(0, take));
    pending_rows_ += take;
    TIMELAKE_RETURN_NOT_OK(WriteChunk());
    rows = rows->Slice(take);
  }
  if (rows->num_rows() > 0) {
    pending_rows_ += rows->num_rows();
    pending_.push_back(std::move(rows));
  }
  return arrow::Status::OK();
}

arrow::Status ChunkedWriter::WriteChunk() {
  if (pending_rows_ == 0) return arrow::Status::OK();
  auto stamp = clock_.Now();
  if (last_stamp_ && stamp <= *last_stamp_) {
    stamp = *last_stamp_ + std::chrono::microseconds(1);
  }
  last_stamp_ = stamp;
  // The batches are aligned already: WriteDataFiles's own alignment is a
  // check that costs no copy.
  auto written = WriteDataFiles(store_, data_prefix_, layout_, pending_, stamp);
  pending_.clear();
  pending_rows_ = 0;
  TIMELAKE_RETURN_NOT_OK(written.status());
  out_.rows += written->rows;
  for (auto& f : written->files) out_.files.push_back(std::move(f));
  if (written->latest != nullptr) {
    if (out_.latest == nullptr) {
      out_.latest = written->latest;
    } else {
      TIMELAKE_ASSIGN_OR_RAISE(
          out_.latest,
          LatestPerSeries({out_.latest, written->latest}, *layout_.time_column,
                          layout_.series_key, layout_.ingest_column));
    }
  }
  return arrow::Status::OK();
}

arrow::Result<WriteOutput> ChunkedWriter::Finish() {
  TIMELAKE_RETURN_NOT_OK(WriteChunk());
  WriteOutput out = std::move(out_);
  out_ = WriteOutput();
  return out;
}

void ChunkedWriter::Abort() {
  for (const auto& f : out_.files) (void)store_.Delete(f.key);
  out_ = WriteOutput();
  pending_.clear();
  pending_rows_ = 0;
}

// One open output file of a SortedFileWriter, with the statistics of what
// went into it: counts, and per column the min and max of every batch,
// reduced once the file is complete.
struct SortedFileWriter::Open {
  WrittenFile file;
  std::shared_ptr<storage::StoreOutputStream> sink;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  std::vector<arrow::ScalarVector> mins, maxes;  // per column
};

SortedFileWriter::SortedFileWriter(const storage::Store& store, std::string dir_key,
                                   Layout layout, std::optional<int32_t> partition,
                                   int64_t target_rows, int64_t target_bytes,
                                   internal::TimePoint now)
    : store_(store),
      dir_key_(std::move(dir_key)),
      layout_(std::move(layout)),
      partition_(partition),
      target_rows_(std::max<int64_t>(1, target_rows)),
      target_bytes_(std::max<int64_t>(1, target_bytes)),
      now_(now) {}

SortedFileWriter::~SortedFileWriter() {
  if (open_ != nullptr) (void)open_->sink->Abort();
}

arrow::Status SortedFileWriter::StartFile() {
  auto open = std::make_unique<Open>();
  open->file.key = dir_key_ + "/" + internal::NewUuidV7(now_) + ".parquet";
  open->file.partition = partition_;
  parquet::WriterProperties::Builder builder;
  builder.compression(layout_.compression);
  if (layout_.compression == parquet::Compression::ZSTD ||
      layout_.compression == parquet::Compression::GZIP) {
    builder.compression_level(layout_.compression_level);
  }
  const auto& schema = *layout_.schema;
  std::vector<parquet::SortingColumn> sorting;
  auto leaf_index = [&](const std::string& name) {
    const int field = schema.GetFieldIndex(name);
    int leaf = 0;
    for (int i = 0; i < field; ++i) leaf += LeafCount(*schema.field(i)->type());
    return leaf;
  };
  for (const auto& k : layout_.series_key)
    sorting.push_back({leaf_index(k), false, true});
  if (layout_.time_column) {
    sorting.push_back({leaf_index(*layout_.time_column), false, true});
  }
  builder.enable_statistics()
      ->enable_write_page_index()
      ->max_row_group_length(layout_.row_group_rows)
      ->max_rows_per_page(layout_.data_page_rows)
      ->created_by("timelake-cpp 0.1.0")
      ->set_sorting_columns(sorting);
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  TIMELAKE_ASSIGN_OR_RAISE(open->sink, OpenSink(store_, open->file.key, layout_));
  auto writer = parquet::arrow::FileWriter::Open(
      schema, arrow::default_memory_pool(), open->sink, builder.build(), arrow_props);
  if (!writer.ok()) {
    (void)open->sink->Abort();
    return writer.status();
  }
  open->writer = std::move(*writer);
  open->mins.resize(schema.num_fields());
  open->maxes.resize(schema.num_fields());
  open_ = std::move(open);
  return arrow::Status::OK();
}

arrow::Status SortedFileWriter::FinishFile() {
  auto open = std::move(open_);
  auto fail = [&](const arrow::Status& st) {
    (void)open->sink->Abort();
    return st;
  };
  if (auto st = open->writer->Close(); !st.ok()) return fail(st);
  const auto& schema = *layout_.schema;
  auto metadata = open->writer->metadata();
  if (metadata && metadata->num_columns() == schema.num_fields()) {
    for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
      auto group = metadata->RowGroup(rg);
      for (int c = 0; c < group->num_columns(); ++c) {
        if (auto id = format::FieldId(*schema.field(c))) {
          open->file.column_sizes[*id] += group->ColumnChunk(c)->total_compressed_size();
        }
      }
    }
  }
  // The bounds: min of the batches' mins, max of their maxes.
  for (int c = 0; c < schema.num_fields(); ++c) {
    auto id = format::FieldId(*schema.field(c));
    if (!id || open->mins[c].empty()) continue;
    auto reduce = [&](const arrow::ScalarVector& values,
                      bool want_max) -> std::shared_ptr<arrow::Scalar> {
      std::unique_ptr<arrow::ArrayBuilder> b;
      if (!arrow::MakeBuilder(arrow::default_memory_pool(), values[0]->type, &b).ok() ||
          !b->AppendScalars(values).ok()) {
        return nullptr;
      }
      auto array = b->Finish();
      if (!array.ok()) return nullptr;
      auto minmax = cp::MinMax(*array);
      if (!minmax.ok()) return nullptr;
      const auto& s = minmax->scalar_as<arrow::StructScalar>();
      return s.value[want_max ? 1 : 0];
    };
    auto lo = reduce(open->mins[c], false);
    auto hi = reduce(open->maxes[c], true);
    if (!lo || !hi || !lo->is_valid || !hi->is_valid) continue;
    auto lo_bytes = format::EncodeScalar(*lo);
    auto hi_bytes = format::EncodeScalar(*hi);
    if (lo_bytes.ok() && hi_bytes.ok()) {
      open->file.lower_bounds[*id] = std::move(*lo_bytes);
      open->file.upper_bounds[*id] = std::move(*hi_bytes);
    }
  }
  const std::string tail = open->sink->Tail(layout_.footer_bytes);
  if (auto st = open->sink->Close(); !st.ok()) return fail(st);
  TIMELAKE_ASSIGN_OR_RAISE(open->file.bytes, open->sink->Tell());
  open->file.footer = FooterOf(store_, open->file.key, tail, open->file.bytes);
  done_.push_back(std::move(open->file));
  last_series_ = nullptr;
  return arrow::Status::OK();
}

arrow::Status SortedFileWriter::Append(const arrow::RecordBatch& slice) {
  TIMELAKE_RETURN_NOT_OK(open_->writer->WriteRecordBatch(slice));
  open_->file.rows += slice.num_rows();
  for (int c = 0; c < slice.num_columns(); ++c) {
    const auto& column = slice.column(c);
    auto id = format::FieldId(*slice.schema()->field(c));
    if (!id) continue;
    open_->file.value_counts[*id] += column->length();
    open_->file.null_value_counts[*id] += column->null_count();
    if (column->type()->num_fields() > 0 || column->null_count() == column->length())
      continue;
    auto minmax = cp::MinMax(column);
    if (!minmax.ok()) continue;  // types without min/max get no bounds
    const auto& s = minmax->scalar_as<arrow::StructScalar>();
    if (!s.value[0]->is_valid || !s.value[1]->is_valid) continue;
    open_->mins[c].push_back(s.value[0]);
    open_->maxes[c].push_back(s.value[1]);
  }
  if (series_column_ >= 0 && slice.num_rows() > 0) {
    TIMELAKE_ASSIGN_OR_RAISE(
        last_series_, slice.column(series_column_)->GetScalar(slice.num_rows() - 1));
  }
  return arrow::Status::OK();
}

arrow::Result<int64_t> SortedFileWriter::SeriesRunEnd(const arrow::RecordBatch& batch,
                                                      int64_t offset) const {
  const auto column = batch.column(series_column_)->Slice(offset);
  arrow::Datum same;
  if (!last_series_->is_valid) {
    TIMELAKE_ASSIGN_OR_RAISE(same, cp::IsNull(column));
  } else {
    TIMELAKE_ASSIGN_OR_RAISE(same, cp::CallFunction("equal", {column, last_series_}));
  }
  const auto& flags = *same.array_as<arrow::BooleanArray>();
  for (int64_t i = 0; i < flags.length(); ++i) {
    if (flags.IsNull(i) || !flags.Value(i)) return offset + i;
  }
  return batch.num_rows();
}

arrow::Status SortedFileWriter::Write(const std::shared_ptr<arrow::RecordBatch>& batch) {
  if (series_column_ < 0 && !layout_.series_key.empty()) {
    series_column_ = layout_.schema->GetFieldIndex(layout_.series_key[0]);
  }
  int64_t offset = 0;
  while (offset < batch->num_rows()) {
    if (open_ == nullptr) TIMELAKE_RETURN_NOT_OK(StartFile());
    TIMELAKE_ASSIGN_OR_RAISE(const int64_t bytes, open_->sink->Tell());
    const bool full = open_->file.rows >= target_rows_ || bytes >= target_bytes_;
    if (!full) {
      const int64_t n =
          std::min(target_rows_ - open_->file.rows, batch->num_rows() - offset);
      TIMELAKE_RETURN_NOT_OK(Append(*batch->Slice(offset, n)));
      offset += n;
      continue;
    }
    // Full: the file ends where the series it ends with does, so that the
    // files of a partition hold disjoint series and dedup on read never
    // merges them; a series over twice the target is split anyway.
    if (series_column_ < 0 || last_series_ == nullptr ||
        open_->file.rows >= 2 * target_rows_) {
      TIMELAKE_RETURN_NOT_OK(FinishFile());
      continue;
    }
    TIMELAKE_ASSIGN_OR_RAISE(const int64_t end, SeriesRunEnd(*batch, offset));
    if (end > offset) {
      TIMELAKE_RETURN_NOT_OK(Append(*batch->Slice(offset, end - offset)));
      offset = end;
    }
    if (offset < batch->num_rows()) TIMELAKE_RETURN_NOT_OK(FinishFile());
  }
  return arrow::Status::OK();
}

arrow::Result<std::vector<WrittenFile>> SortedFileWriter::Finish() {
  if (open_ != nullptr) TIMELAKE_RETURN_NOT_OK(FinishFile());
  return std::move(done_);
}

void SortedFileWriter::Abort() {
  if (open_ != nullptr) {
    (void)open_->sink->Abort();
    open_.reset();
  }
  for (const auto& f : done_) (void)store_.Delete(f.key);
  done_.clear();
}

}  // namespace timelake::write
