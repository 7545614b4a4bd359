// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/write/data_writer.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <string_view>
#include <thread>
#include <tuple>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/scalar.h>
#include <arrow/table.h>
#include <arrow/util/parallel.h>
#include <arrow/util/thread_pool.h>
#include <parquet/arrow/writer.h>
#include <parquet/file_writer.h>
#include <parquet/metadata.h>
#include <parquet/properties.h>
#include <parquet/statistics.h>

#include "timelake/format/bounds.h"
#include "timelake/format/schema.h"
#include "timelake/storage/io.h"
#include "timelake/util/compute.h"
#include "timelake/util/uuid.h"

namespace timelake::write {

namespace cp = arrow::compute;

namespace {

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

// Parquet's sorting columns of the layout (series key, then time), by leaf
// column: leaf and field positions differ once a nested column comes first.
std::vector<parquet::SortingColumn> SortingOf(const Layout& layout,
                                              const arrow::Schema& schema) {
  auto leaf_index = [&](const std::string& name) {
    const int field = schema.GetFieldIndex(name);
    int leaf = 0;
    for (int i = 0; i < field; ++i) leaf += LeafCount(*schema.field(i)->type());
    return leaf;
  };
  std::vector<parquet::SortingColumn> sorting;
  for (const auto& k : layout.series_key) sorting.push_back({leaf_index(k), false, true});
  if (layout.time_column)
    sorting.push_back({leaf_index(*layout.time_column), false, true});
  return sorting;
}

std::shared_ptr<parquet::WriterProperties> WriterPropertiesOf(
    const Layout& layout, const arrow::Schema& schema) {
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
      ->set_sorting_columns(SortingOf(layout, schema));
  // Times rise within each series: delta encoding makes them a tenth of a
  // dictionary's size and decodes faster (Timelake 0.7 writes them so).
  if (layout.time_column) {
    builder.disable_dictionary(*layout.time_column)
        ->encoding(*layout.time_column, parquet::Encoding::DELTA_BINARY_PACKED);
  }
  return builder.build();
}

}  // namespace

// An eternal pool, held by a pointer never freed.
arrow::internal::Executor* EncodePool() {
  static const auto* pool = [] {
    const int n = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
    auto made = arrow::internal::ThreadPool::MakeEternal(n);
    return new std::shared_ptr<arrow::internal::ThreadPool>(made.ValueOr(nullptr));
  }();
  return pool->get();
}

namespace {

// Written in buffered row groups (FileWriter::WriteRecordBatch), whose
// columns are encoded and compressed on EncodePool's threads at once: an
// append of one partition, and every compaction, uses every core.
std::shared_ptr<parquet::ArrowWriterProperties> ArrowPropertiesOf() {
  parquet::ArrowWriterProperties::Builder builder;
  builder.store_schema();
  if (auto* pool = EncodePool()) builder.set_use_threads(true)->set_executor(pool);
  return builder.build();
}

struct Statistics {
  std::map<int32_t, int64_t> value_counts, null_value_counts;
  std::map<int32_t, std::string> lower_bounds, upper_bounds;
};

// Whether the Parquet writer's statistics give a column's bounds: a flat
// column whose type's plain Parquet encoding (that of the statistics' min
// and max) is Iceberg's single-value serialization of its values.
bool BoundsFromWriter(const arrow::DataType& type) {
  switch (type.id()) {
    case arrow::Type::BOOL:
    case arrow::Type::INT32:
    case arrow::Type::INT64:
    case arrow::Type::FLOAT:
    case arrow::Type::DOUBLE:
    case arrow::Type::DATE32:
    case arrow::Type::STRING:
    case arrow::Type::BINARY:
      return true;
    case arrow::Type::TIMESTAMP:
      return static_cast<const arrow::TimestampType&>(type).unit() ==
             arrow::TimeUnit::MICRO;
    case arrow::Type::TIME64:
      return static_cast<const arrow::Time64Type&>(type).unit() == arrow::TimeUnit::MICRO;
    default:
      return false;
  }
}

// a < b for two plain-encoded values of `type` (BoundsFromWriter), which
// for these types is Iceberg's single-value serialization (format/bounds.h).
bool PlainLess(const arrow::DataType& type, const std::string& a, const std::string& b) {
  switch (type.id()) {
    case arrow::Type::INT32:
    case arrow::Type::DATE32:
      return format::DecodeInt32(a).ValueOr(0) < format::DecodeInt32(b).ValueOr(0);
    case arrow::Type::INT64:
    case arrow::Type::TIMESTAMP:
    case arrow::Type::TIME64:
      return format::DecodeInt64(a).ValueOr(0) < format::DecodeInt64(b).ValueOr(0);
    case arrow::Type::FLOAT:
      return format::DecodeFloat(a).ValueOr(0) < format::DecodeFloat(b).ValueOr(0);
    case arrow::Type::DOUBLE:
      return format::DecodeDouble(a).ValueOr(0) < format::DecodeDouble(b).ValueOr(0);
    default:  // bool (one byte), strings and binary: unsigned bytes
      return std::string_view(a) < std::string_view(b);
  }
}

// The bounds of the columns BoundsFromWriter accepts, from the statistics
// the Parquet writer kept of every row group (its page statistics, which it
// computes anyway): the least min and the greatest max. A column without
// exact statistics in some row group (all nulls, or values too long to
// keep) gets no bounds, which only means no pruning on it. `schema` is
// flat: its fields are the file's leaf columns.
void WriterBounds(const parquet::FileMetaData& md, const arrow::Schema& schema,
                  std::map<int32_t, std::string>* lower,
                  std::map<int32_t, std::string>* upper) {
  if (md.num_columns() != schema.num_fields()) return;
  for (int c = 0; c < schema.num_fields(); ++c) {
    const auto& type = *schema.field(c)->type();
    const auto id = format::FieldId(*schema.field(c));
    if (!id || !BoundsFromWriter(type) || md.num_row_groups() == 0) continue;
    std::optional<std::string> lo, hi;
    bool exact = true;
    for (int rg = 0; rg < md.num_row_groups() && exact; ++rg) {
      auto stats = md.RowGroup(rg)->ColumnChunk(c)->encoded_statistics();
      if (stats == nullptr || !stats->has_min || !stats->has_max ||
          !stats->is_min_value_exact.value_or(true) ||
          !stats->is_max_value_exact.value_or(true)) {
        exact = false;
        break;
      }
      if (!lo || PlainLess(type, stats->min(), *lo)) lo = stats->min();
      if (!hi || PlainLess(type, *hi, stats->max())) hi = stats->max();
    }
    if (!exact || !lo || !hi) continue;
    (*lower)[*id] = std::move(*lo);
    (*upper)[*id] = std::move(*hi);
  }
}

// The min and max of a column, or nullopt (no values, or a type without
// them), in Iceberg's serialization.
// What a written file's footer tells of it: each column's compressed size,
// and the bounds WriterBounds gives. Only flat schemas map leaves to field
// ids 1:1; others get neither.
void FooterFacts(const std::shared_ptr<parquet::FileMetaData>& metadata,
                 const arrow::Schema& schema, WrittenFile* file) {
  if (!metadata || metadata->num_columns() != schema.num_fields()) return;
  for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
    auto group = metadata->RowGroup(rg);
    for (int c = 0; c < group->num_columns(); ++c) {
      if (auto id = format::FieldId(*schema.field(c))) {
        file->column_sizes[*id] += group->ColumnChunk(c)->total_compressed_size();
      }
    }
  }
  WriterBounds(*metadata, schema, &file->lower_bounds, &file->upper_bounds);
}

std::optional<std::pair<std::string, std::string>> MinMaxBounds(
    const arrow::Datum& column) {
  auto minmax = cp::MinMax(column);
  if (!minmax.ok()) return std::nullopt;  // bounds are optional
  const auto& s = minmax->scalar_as<arrow::StructScalar>();
  if (!s.value[0]->is_valid || !s.value[1]->is_valid) return std::nullopt;
  auto lo = format::EncodeScalar(*s.value[0]);
  auto hi = format::EncodeScalar(*s.value[1]);
  if (!lo.ok() || !hi.ok()) return std::nullopt;
  return std::make_pair(std::move(*lo), std::move(*hi));
}

// The bounds of a column written in parts (the `mins` and `maxes` of the
// parts): nullopt when there are none or they cannot be compared.
std::optional<std::pair<std::string, std::string>> ReducedBounds(
    const arrow::ScalarVector& mins, const arrow::ScalarVector& maxes) {
  if (mins.empty() || maxes.empty()) return std::nullopt;
  auto reduce = [](const arrow::ScalarVector& values,
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
  auto lo = reduce(mins, false);
  auto hi = reduce(maxes, true);
  if (!lo || !hi || !lo->is_valid || !hi->is_valid) return std::nullopt;
  auto lo_bytes = format::EncodeScalar(*lo);
  auto hi_bytes = format::EncodeScalar(*hi);
  if (!lo_bytes.ok() || !hi_bytes.ok()) return std::nullopt;
  return std::make_pair(std::move(*lo_bytes), std::move(*hi_bytes));
}

// Sets the bounds of `file`'s columns written in parts from each column's
// parts' `mins` and `maxes` (per column of `schema`; empty for the columns
// the writer's statistics bound).
void AddReducedBounds(const arrow::Schema& schema,
                      const std::vector<arrow::ScalarVector>& mins,
                      const std::vector<arrow::ScalarVector>& maxes, WrittenFile* file) {
  for (int c = 0; c < schema.num_fields(); ++c) {
    auto id = format::FieldId(*schema.field(c));
    if (!id) continue;
    if (auto bounds = ReducedBounds(mins[c], maxes[c])) {
      file->lower_bounds[*id] = std::move(bounds->first);
      file->upper_bounds[*id] = std::move(bounds->second);
    }
  }
}

// Counts of every column, and the bounds of those the writer's statistics
// do not give (WriterBounds gives the others once the file is written).
// `schema` is the file's: `table` holds its columns, some of them
// dictionary-encoded (EncodeStrings).
arrow::Result<Statistics> ColumnStatistics(const arrow::Table& table,
                                           const arrow::Schema& schema) {
  Statistics out;
  const bool flat =
      std::all_of(schema.fields().begin(), schema.fields().end(),
                  [](const auto& f) { return f->type()->num_fields() == 0; });
  for (int i = 0; i < table.num_columns(); ++i) {
    const auto& field = schema.field(i);
    auto id = format::FieldId(*field);
    if (!id) continue;
    const auto& column = table.column(i);
    out.value_counts[*id] = column->length();
    out.null_value_counts[*id] = column->null_count();
    if (field->type()->num_fields() > 0 || column->null_count() == column->length())
      continue;
    if (flat && BoundsFromWriter(*field->type())) continue;
    if (auto bounds = MinMaxBounds(column)) {
      out.lower_bounds[*id] = std::move(bounds->first);
      out.upper_bounds[*id] = std::move(bounds->second);
    }
  }
  return out;
}

// The dense rank of each row's value of `column` in ascending order: 0 for
// null, 1 for the smallest value, …; `*distinct` is the highest rank. The
// distinct values are found by hashing and only they are sorted, so a batch
// of many rows of few series costs O(rows), not O(rows log rows) string
// comparisons. Types without a hash kernel rank by a sort of the column.
arrow::Result<RowVector<uint32_t>> DenseRanks(const std::shared_ptr<arrow::Array>& column,
                                              uint32_t* distinct) {
  const int64_t n = column->length();
  RowVector<uint32_t> ranks(static_cast<size_t>(n), 0);
  auto encoded = column->type_id() == arrow::Type::DICTIONARY
                     ? arrow::Result<arrow::Datum>(arrow::Datum(column))
                     : cp::DictionaryEncode(column);
  // DictionaryEncode makes int32 indices (so EncodeStrings' columns have).
  if (encoded.ok() &&
      static_cast<const arrow::DictionaryType&>(*encoded->type()).index_type()->id() ==
          arrow::Type::INT32) {
    const auto array = encoded->make_array();
    const auto& dict = static_cast<const arrow::DictionaryArray&>(*array);
    TIMELAKE_ASSIGN_OR_RAISE(
        auto order, cp::SortIndices(*dict.dictionary(),
                                    cp::ArraySortOptions(cp::SortOrder::Ascending,
                                                         cp::NullPlacement::AtStart)));
    const auto& positions = static_cast<const arrow::UInt64Array&>(*order);
    std::vector<uint32_t> rank_of(static_cast<size_t>(positions.length()));
    for (int64_t i = 0; i < positions.length(); ++i) {
      rank_of[positions.Value(i)] = static_cast<uint32_t>(i + 1);
    }
    const auto& indices = static_cast<const arrow::Int32Array&>(*dict.indices());
    for (int64_t i = 0; i < n; ++i) {
      if (indices.IsValid(i)) ranks[i] = rank_of[indices.Value(i)];
    }
    *distinct = static_cast<uint32_t>(positions.length());
    return ranks;
  }
  cp::RankOptions options(cp::SortOrder::Ascending, cp::NullPlacement::AtStart,
                          cp::RankOptions::Dense);
  TIMELAKE_ASSIGN_OR_RAISE(auto ranked, cp::CallFunction("rank", {column}, &options));
  const auto ranked_array = ranked.make_array();
  const auto& values = static_cast<const arrow::UInt64Array&>(*ranked_array);
  uint32_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    // Dense ranks count nulls as one value of their own (first).
    ranks[i] = column->IsNull(i) ? 0 : static_cast<uint32_t>(values.Value(i));
    top = std::max(top, ranks[i]);
  }
  *distinct = top;
  return ranks;
}

// The series of every row of `table` (one chunk per column) as one rank:
// the series key columns' dense ranks, combined in order, so that ranks
// order as the key columns do (nulls first). All 0 without a series key.
arrow::Result<RowVector<uint32_t>> SeriesRanks(const arrow::Table& table,
                                               const Layout& layout) {
  const int64_t n = table.num_rows();
  RowVector<uint32_t> series(static_cast<size_t>(n), 0);
  for (const auto& k : layout.series_key) {
    uint32_t distinct = 0;
    TIMELAKE_ASSIGN_OR_RAISE(auto ranks,
                             DenseRanks(table.GetColumnByName(k)->chunk(0), &distinct));
    const uint64_t base = uint64_t{distinct} + 1;
    uint64_t top = 0;
    for (int64_t i = 0; i < n; ++i) top = std::max<uint64_t>(top, series[i]);
    if ((top + 1) * base <= UINT32_MAX) {
      for (int64_t i = 0; i < n; ++i) {
        series[i] = static_cast<uint32_t>(series[i] * base + ranks[i]);
      }
      continue;
    }
    // Too many combinations for 32 bits: rank the pairs themselves.
    RowVector<uint64_t> pairs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pairs[i] = uint64_t{series[i]} << 32 | ranks[i];
    RowVector<uint64_t> distinct_pairs = pairs;
    std::sort(distinct_pairs.begin(), distinct_pairs.end());
    distinct_pairs.erase(std::unique(distinct_pairs.begin(), distinct_pairs.end()),
                         distinct_pairs.end());
    for (int64_t i = 0; i < n; ++i) {
      series[i] = static_cast<uint32_t>(
          std::lower_bound(distinct_pairs.begin(), distinct_pairs.end(), pairs[i]) -
          distinct_pairs.begin());
    }
  }
  return series;
}

// Turns `series` (SeriesRanks) into each row's group: its (partition,
// series) as a rank in that order, returning the number of slots (the
// highest rank plus one, or more). Partitions are few per batch, so a group
// is usually the partition's rank times the series' count plus the series;
// when that numbering would be much sparser than the rows (series ranks of
// several key columns combine sparsely), the pairs present are ranked.
size_t GroupRanks(const arrow::Int32Array* partitions, RowVector<uint32_t>* series) {
  const size_t n = series->size();
  uint32_t max_series = 0;
  for (const uint32_t s : *series) max_series = std::max(max_series, s);
  const uint64_t series_slots = uint64_t{max_series} + 1;
  // Partitions as unsigned numbers in the order of their signed values.
  auto partition = [&](size_t i) -> uint32_t {
    if (partitions == nullptr) return 0;
    return static_cast<uint32_t>(partitions->Value(static_cast<int64_t>(i))) ^
           0x80000000u;
  };
  std::vector<uint32_t> values;
  for (size_t i = 0; i < n; ++i) {
    if (values.empty() || values.back() != partition(i)) values.push_back(partition(i));
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  const uint64_t slots = std::max<uint64_t>(values.size(), 1) * series_slots;
  if (slots <= 4 * uint64_t{n} + 1024 && slots <= UINT32_MAX) {
    if (values.size() <= 1) return static_cast<size_t>(slots);
    uint32_t last = 0, rank = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t p = partition(i);
      if (i == 0 || p != last) {  // rows come in runs of one partition
        rank = static_cast<uint32_t>(std::lower_bound(values.begin(), values.end(), p) -
                                     values.begin());
        last = p;
      }
      (*series)[i] = static_cast<uint32_t>(rank * series_slots + (*series)[i]);
    }
    return static_cast<size_t>(slots);
  }
  RowVector<uint64_t> pairs(n);
  for (size_t i = 0; i < n; ++i) pairs[i] = uint64_t{partition(i)} << 32 | (*series)[i];
  RowVector<uint64_t> distinct = pairs;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (size_t i = 0; i < n; ++i) {
    (*series)[i] = static_cast<uint32_t>(
        std::lower_bound(distinct.begin(), distinct.end(), pairs[i]) - distinct.begin());
  }
  return distinct.size();
}

// The positions of the rows of `table` (one chunk per column) in the write
// order (partition, series…, time, insertion, input position); with
// layout.dedup only the last of each (partition, series…, time), which by
// that order is the latest insertion, then the later input row. With
// `series_ends`, also the positions in the result that end a (partition,
// series): each series' newest-row candidate.
//
// The rows' positions are put in order where the result is built, by a
// stable counting sort on their (partition, series) group, O(rows). A
// group's rows then stand in input order, which is usually already their
// time order (data arrives in time order; a compaction's inputs are sorted
// files of successive appends), so each group only needs checking, and is
// sorted on its own when it is not. Only the groups (4 bytes a row) and the
// result (8) are allocated, and times are read where they are.
arrow::Result<std::shared_ptr<arrow::Array>> OrderRows(
    const arrow::Table& table, const Layout& layout, const arrow::Int32Array* partitions,
    std::shared_ptr<arrow::Array>* series_ends) {
  const int64_t n = table.num_rows();
  if (static_cast<uint64_t>(n) > UINT32_MAX) {
    return Invalid("a batch of " + std::to_string(n) + " rows; at most " +
                   std::to_string(UINT32_MAX) + " are written at once");
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto group, SeriesRanks(table, layout));
  const size_t slots = GroupRanks(partitions, &group);
  const int64_t* times = static_cast<const arrow::TimestampArray&>(
                             *table.GetColumnByName(*layout.time_column)->chunk(0))
                             .raw_values();
  // Stamped before: no null insertion times are left.
  const int64_t* ingest =
      layout.ingest_column.empty()
          ? nullptr
          : static_cast<const arrow::TimestampArray&>(
                *table.GetColumnByName(layout.ingest_column)->chunk(0))
                .raw_values();

  TIMELAKE_ASSIGN_OR_RAISE(auto buffer, arrow::AllocateResizableBuffer(n * 8));
  auto* order = reinterpret_cast<int64_t*>(buffer->mutable_data());
  RowVector<uint32_t> starts(slots + 1, 0);
  for (const uint32_t g : group) ++starts[g + 1];
  for (size_t g = 1; g <= slots; ++g) starts[g] += starts[g - 1];
  {
    RowVector<uint32_t> next(starts.begin(), starts.end() - 1);
    for (int64_t i = 0; i < n; ++i) order[next[group[i]]++] = i;
  }
  // Each group, in input order: sorted already when its (time, insertion)
  // never falls.
  auto before = [&](int64_t a, int64_t b) {
    const int64_t ia = ingest ? ingest[a] : 0, ib = ingest ? ingest[b] : 0;
    return std::tie(times[a], ia, a) < std::tie(times[b], ib, b);
  };
  for (size_t g = 0; g < slots; ++g) {
    int64_t* begin = order + starts[g];
    int64_t* end = order + starts[g + 1];
    if (!std::is_sorted(begin, end, before)) std::sort(begin, end, before);
  }

  arrow::Int64Builder last;
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = order[i];
    const bool group_ends = i + 1 == n || group[row] != group[order[i + 1]];
    const bool last_of_key = group_ends || times[row] != times[order[i + 1]];
    if (layout.dedup && !last_of_key) continue;
    order[kept] = row;  // kept <= i: nothing unread is overwritten
    if (series_ends != nullptr && group_ends) TIMELAKE_RETURN_NOT_OK(last.Append(kept));
    ++kept;
  }
  if (series_ends != nullptr) {
    TIMELAKE_ASSIGN_OR_RAISE(*series_ends, last.Finish());
  }
  TIMELAKE_RETURN_NOT_OK(buffer->Resize(kept * 8));
  return std::make_shared<arrow::Int64Array>(kept, std::move(buffer));
}

// Dictionary-encodes the string and binary columns of `table` (one chunk
// per column) that repeat values, as time series' tags do: sorting then
// moves 4-byte indices instead of strings, and the Parquet writer takes the
// dictionary as it is. A column with more distinct values than half its
// rows stays as it is (hashing it would gain nothing). Fields keep their
// metadata (field ids).
// The columns are encoded in parallel, on EncodePool.
arrow::Result<std::shared_ptr<arrow::Table>> EncodeStrings(
    std::shared_ptr<arrow::Table> table) {
  const int64_t n = table->num_rows();
  if (n < 2) return table;
  std::vector<int> strings;
  for (int i = 0; i < table->num_columns(); ++i) {
    const auto id = table->schema()->field(i)->type()->id();
    if (id == arrow::Type::STRING || id == arrow::Type::BINARY) strings.push_back(i);
  }
  std::vector<std::shared_ptr<arrow::Array>> encoded(strings.size());
  auto encode = [&](int k) {
    auto done = cp::DictionaryEncode(table->column(strings[k])->chunk(0));
    if (!done.ok()) return arrow::Status::OK();  // stays as it is
    auto array = done->make_array();
    if (static_cast<const arrow::DictionaryArray&>(*array).dictionary()->length() <=
        n / 2) {
      encoded[k] = std::move(array);
    }
    return arrow::Status::OK();
  };
  TIMELAKE_RETURN_NOT_OK(arrow::internal::OptionalParallelFor(
      EncodePool() != nullptr, static_cast<int>(strings.size()), encode, EncodePool()));
  for (size_t k = 0; k < strings.size(); ++k) {
    if (encoded[k] == nullptr) continue;
    const auto& field = table->schema()->field(strings[k]);
    TIMELAKE_ASSIGN_OR_RAISE(
        table, table->SetColumn(strings[k], field->WithType(encoded[k]->type()),
                                std::make_shared<arrow::ChunkedArray>(encoded[k])));
  }
  return table;
}

// The rows `indices` (valid positions, int64) of `table` (one chunk per
// column), column by column in parallel on EncodePool.
arrow::Result<std::shared_ptr<arrow::Table>> TakeRows(const arrow::Table& table,
                                                      const arrow::Array& indices) {
  std::vector<std::shared_ptr<arrow::ChunkedArray>> columns(
      static_cast<size_t>(table.num_columns()));
  auto take = [&](int i) -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto taken, cp::Take(*table.column(i)->chunk(0), indices,
                                               cp::TakeOptions::NoBoundsCheck()));
    columns[i] = std::make_shared<arrow::ChunkedArray>(std::move(taken));
    return arrow::Status::OK();
  };
  TIMELAKE_RETURN_NOT_OK(arrow::internal::OptionalParallelFor(
      EncodePool() != nullptr, table.num_columns(), take, EncodePool()));
  return arrow::Table::Make(table.schema(), std::move(columns), indices.length());
}

// `batch` (of the columns of `schema`, some maybe dictionary-encoded) with
// every column of `schema`'s type.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> Densify(
    const std::shared_ptr<arrow::RecordBatch>& batch,
    const std::shared_ptr<arrow::Schema>& schema) {
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    auto column = batch->column(i);
    if (column->type_id() == arrow::Type::DICTIONARY) {
      TIMELAKE_ASSIGN_OR_RAISE(auto dense, cp::Cast(*column, schema->field(i)->type()));
      column = std::move(dense);
    }
    columns.push_back(std::move(column));
  }
  return arrow::RecordBatch::Make(schema, batch->num_rows(), std::move(columns));
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

// Writes `table`, whose columns are those of layout.schema (strings maybe
// dictionary-encoded: EncodeStrings), as one file of that schema.
arrow::Result<WrittenFile> WriteOneFile(const storage::Store& store,
                                        const std::string& key, const arrow::Table& table,
                                        const Layout& layout) {
  const arrow::Schema& schema = *layout.schema;
  auto props = WriterPropertiesOf(layout, schema);
  auto arrow_props = ArrowPropertiesOf();

  // Statistics first: once the file is streamed to storage, nothing may fail
  // before it is reported as written (the caller deletes only what it knows).
  WrittenFile file;
  file.key = key;
  file.rows = table.num_rows();
  TIMELAKE_ASSIGN_OR_RAISE(auto stats, ColumnStatistics(table, schema));
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
  // Opened with the file's schema, which the file stores; a dictionary
  // column goes in as its dictionary and indices, written as Parquet's
  // dictionary encoding of the values without hashing each value again.
  auto opened = parquet::arrow::FileWriter::Open(schema, arrow::default_memory_pool(),
                                                 sink, props, arrow_props);
  if (!opened.ok()) return fail(opened.status());
  auto writer = std::move(opened).ValueUnsafe();
  // One batch: the writer cuts it into row groups of max_row_group_length.
  auto batch = table.CombineChunksToBatch();
  if (!batch.ok()) return fail(batch.status());
  if (auto st = writer->WriteRecordBatch(**batch); !st.ok()) return fail(st);
  if (auto st = writer->Close(); !st.ok()) return fail(st);
  FooterFacts(writer->metadata(), schema, &file);
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

arrow::Result<RowVector<uint32_t>> SeriesValueRanks(
    const std::shared_ptr<arrow::Array>& column) {
  uint32_t distinct = 0;
  return DenseRanks(column, &distinct);
}

arrow::Result<std::shared_ptr<arrow::Array>> WriteOrder(const arrow::Table& table,
                                                        const Layout& layout) {
  if (!layout.time_column) return Invalid("the write order needs a time column");
  return OrderRows(table, layout, nullptr, nullptr);
}

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

  if (layout.time_column) {
    TIMELAKE_ASSIGN_OR_RAISE(table, EncodeStrings(std::move(table)));
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

  // Sort by (partition, series…, time, insertion, input position), nulls
  // first; with dedup keep the last row of each (series…, time); and take the
  // last row of each series in each partition as its newest-row candidate.
  // All three work on the rows' keys as integers (OrderRows), not on the
  // columns.
  if (layout.time_column) {
    std::shared_ptr<arrow::Array> ends;
    TIMELAKE_ASSIGN_OR_RAISE(auto indices,
                             OrderRows(*table, layout, partitions.get(), &ends));
    TIMELAKE_ASSIGN_OR_RAISE(table, TakeRows(*table, *indices));
    if (partitions) {
      TIMELAKE_ASSIGN_OR_RAISE(auto taken, cp::Take(*partitions, *indices));
      partitions = std::static_pointer_cast<arrow::Int32Array>(taken);
    }
    // The newest row per series: the last row of each series within a
    // partition is that partition's candidate; the newest candidate of each
    // series wins (LatestPerSeries, by the tie rule).
    TIMELAKE_ASSIGN_OR_RAISE(auto candidates, TakeRows(*table, *ends));
    TIMELAKE_ASSIGN_OR_RAISE(auto batch, candidates->CombineChunksToBatch());
    TIMELAKE_ASSIGN_OR_RAISE(batch, Densify(batch, layout.schema));
    TIMELAKE_ASSIGN_OR_RAISE(
        out.latest, LatestPerSeries({batch}, *layout.time_column, layout.series_key,
                                    layout.ingest_column));
  }
  out.rows = table->num_rows();

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
      results[i] = WriteOneFile(store, key, *table->Slice(s.offset, s.length), layout);
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
      flat_(std::all_of(layout_.schema->fields().begin(), layout_.schema->fields().end(),
                        [](const auto& f) { return f->type()->num_fields() == 0; })),
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
  const auto& schema = *layout_.schema;
  TIMELAKE_ASSIGN_OR_RAISE(open->sink, OpenSink(store_, open->file.key, layout_));
  auto writer = parquet::arrow::FileWriter::Open(
      schema, arrow::default_memory_pool(), open->sink,
      WriterPropertiesOf(layout_, schema), ArrowPropertiesOf());
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
  FooterFacts(open->writer->metadata(), schema, &open->file);
  // The other columns' bounds: min of the batches' mins, max of their
  // maxes.
  AddReducedBounds(schema, open->mins, open->maxes, &open->file);
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
    // The writer's statistics bound these (FinishFile).
    if (flat_ && BoundsFromWriter(*column->type())) continue;
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

struct ColumnFileWriter::Open_ {
  const storage::Store* store;
  Layout layout;
  WrittenFile file;
  std::shared_ptr<storage::StoreOutputStream> sink;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  int64_t group_rows = 0;  // rows of the row group being written
  bool started = false;    // a row group was started
  int next = 0;            // the column due in it
  // Per column not bounded by the writer's statistics: each row group's
  // min and max.
  std::vector<arrow::ScalarVector> mins, maxes;
};

ColumnFileWriter::ColumnFileWriter(std::unique_ptr<Open_> open)
    : open_(std::move(open)) {}

ColumnFileWriter::~ColumnFileWriter() { Abort(); }

arrow::Result<std::unique_ptr<ColumnFileWriter>> ColumnFileWriter::Open(
    const storage::Store& store, std::string key, Layout layout,
    std::optional<int32_t> partition) {
  auto open = std::make_unique<Open_>();
  open->store = &store;
  open->layout = std::move(layout);
  open->file.key = std::move(key);
  open->file.partition = partition;
  const auto& schema = *open->layout.schema;
  open->mins.resize(schema.num_fields());
  open->maxes.resize(schema.num_fields());
  TIMELAKE_ASSIGN_OR_RAISE(open->sink, OpenSink(store, open->file.key, open->layout));
  auto writer = parquet::arrow::FileWriter::Open(
      schema, arrow::default_memory_pool(), open->sink,
      WriterPropertiesOf(open->layout, schema), ArrowPropertiesOf());
  if (!writer.ok()) {
    (void)open->sink->Abort();
    return writer.status();
  }
  open->writer = std::move(*writer);
  return std::unique_ptr<ColumnFileWriter>(new ColumnFileWriter(std::move(open)));
}

arrow::Status ColumnFileWriter::StartRowGroup(int64_t rows) {
  auto& open = *open_;
  const int columns = open.layout.schema->num_fields();
  if (open.started && open.next != columns) {
    return Invalid(std::to_string(columns - open.next) +
                   " columns of the row group are not written");
  }
  if (rows < 1) return Invalid("a row group of " + std::to_string(rows) + " rows");
  TIMELAKE_RETURN_NOT_OK(open.writer->NewRowGroup());
  open.started = true;
  open.group_rows = rows;
  open.file.rows += rows;
  open.next = 0;
  return arrow::Status::OK();
}

arrow::Status ColumnFileWriter::WriteColumn(const std::shared_ptr<arrow::Array>& column) {
  auto& open = *open_;
  const auto& schema = *open.layout.schema;
  if (!open.started || open.next >= schema.num_fields()) {
    return Invalid("no row group is started for the column");
  }
  const auto& field = *schema.field(open.next);
  const arrow::DataType* type = column->type().get();
  if (type->id() == arrow::Type::DICTIONARY) {
    type = static_cast<const arrow::DictionaryType&>(*type).value_type().get();
  }
  if (column->length() != open.group_rows || !type->Equals(*field.type())) {
    return Invalid("column '" + field.name() + "': " + std::to_string(column->length()) +
                   " values of " + column->type()->ToString() + ", not " +
                   std::to_string(open.group_rows) + " of " + field.type()->ToString());
  }
  TIMELAKE_RETURN_NOT_OK(open.writer->WriteColumnChunk(*column));
  if (auto id = format::FieldId(field)) {
    open.file.value_counts[*id] += column->length();
    open.file.null_value_counts[*id] += column->null_count();
    // The writer's statistics bound the others (Finish).
    if (column->null_count() < column->length() && !BoundsFromWriter(*field.type())) {
      auto minmax = cp::MinMax(column);
      if (minmax.ok()) {  // types without min/max get no bounds
        const auto& s = minmax->scalar_as<arrow::StructScalar>();
        if (s.value[0]->is_valid && s.value[1]->is_valid) {
          open.mins[open.next].push_back(s.value[0]);
          open.maxes[open.next].push_back(s.value[1]);
        }
      }
    }
  }
  ++open.next;
  return arrow::Status::OK();
}

arrow::Result<WrittenFile> ColumnFileWriter::Finish() {
  auto open = std::move(open_);
  auto fail = [&](const arrow::Status& st) {
    (void)open->sink->Abort();
    return st;
  };
  const auto& schema = *open->layout.schema;
  if (!open->started) return fail(Invalid("no row group is written"));
  if (open->next != schema.num_fields()) {
    return fail(Invalid(std::to_string(schema.num_fields() - open->next) +
                        " columns of the last row group are not written"));
  }
  if (auto st = open->writer->Close(); !st.ok()) return fail(st);
  FooterFacts(open->writer->metadata(), schema, &open->file);
  AddReducedBounds(schema, open->mins, open->maxes, &open->file);
  const std::string tail = open->sink->Tail(open->layout.footer_bytes);
  if (auto st = open->sink->Close(); !st.ok()) return fail(st);
  TIMELAKE_ASSIGN_OR_RAISE(open->file.bytes, open->sink->Tell());
  open->file.footer = FooterOf(*open->store, open->file.key, tail, open->file.bytes);
  return std::move(open->file);
}

void ColumnFileWriter::Abort() {
  if (open_ != nullptr) {
    (void)open_->sink->Abort();
    open_.reset();
  }
}

}  // namespace timelake::write
