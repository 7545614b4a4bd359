// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The in-memory path of a rewrite (RewriteWhole): a few appends' files, or
// a few such merges' files, merged into one file. The inputs are fetched
// whole (one request each); the key columns (series…, time, insertion) of
// every row give the write order by sorting integers (write::WriteOrder), as
// an append sorts; then row group by row group, each column in turn is
// decoded from every input, put in that order and written
// (write::ColumnFileWriter), the next column decoded while one is encoded.
// Tag columns stay the dictionaries they are stored as: no tag value is
// hashed or compared. The streaming merge (read::MergeFiles) compares and
// copies every string of every row, on one core.
//
// Over one row group of rows, each row group holds whole series: a range
// of the first series key column's values, which in inputs in the write
// order (every file an append or a merge of ours wrote) is a run of each
// input's rows, the next row group's the runs after them. Each row group is
// sorted alone, and every column of every input is decoded once, forward.
// Inputs that are not in the write order (another engine's unsorted file),
// and a series with more rows than a row group, go the streaming way.

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/thread_pool.h>
#include <parquet/arrow/reader.h>
#include <parquet/properties.h>

#include "timelake/format/schema.h"
#include "timelake/maintain/maintain.h"
#include "timelake/util/uuid.h"

namespace timelake::internal {

namespace {

bool IsString(const arrow::DataType& type) {
  return type.id() == arrow::Type::STRING || type.id() == arrow::Type::BINARY;
}

// Whether a file's Arrow schema, as read with dictionaries for strings, is
// `want`'s column for column: the same field ids in the same order and the
// same types (a string column as a dictionary of it). A file written before
// a schema change is not, and goes the streaming way, which maps columns.
bool SameColumns(const arrow::Schema& file, const arrow::Schema& want) {
  if (file.num_fields() != want.num_fields()) return false;
  for (int i = 0; i < want.num_fields(); ++i) {
    const auto& f = *file.field(i);
    const auto& w = *want.field(i);
    const auto id = format::FieldId(f);
    if (!id || id != format::FieldId(w)) return false;
    const arrow::DataType* type = f.type().get();
    if (type->id() == arrow::Type::DICTIONARY) {
      type = static_cast<const arrow::DictionaryType&>(*type).value_type().get();
    }
    if (!type->Equals(*w.type())) return false;
  }
  return true;
}

// One column of every input, appended file by file into one array.
// Dictionary chunks (each row group of each file has its own dictionary)
// share one dictionary: their indices are mapped onto the union's.
class ColumnSink {
 public:
  static arrow::Result<ColumnSink> Make(const std::shared_ptr<arrow::DataType>& type,
                                        int64_t rows) {
    ColumnSink sink;
    sink.type_ = type;
    if (type->id() == arrow::Type::DICTIONARY) {
      const auto& dict = static_cast<const arrow::DictionaryType&>(*type);
      TIMELAKE_ASSIGN_OR_RAISE(sink.unifier_,
                               arrow::DictionaryUnifier::Make(dict.value_type()));
      TIMELAKE_RETURN_NOT_OK(sink.indices_.Reserve(rows));
    } else {
      TIMELAKE_ASSIGN_OR_RAISE(sink.values_, arrow::MakeBuilder(type));
      TIMELAKE_RETURN_NOT_OK(sink.values_->Reserve(rows));
    }
    return sink;
  }

  arrow::Status Append(const arrow::Array& chunk) {
    if (!chunk.type()->Equals(*type_)) {
      return Invalid("a chunk of " + chunk.type()->ToString() + " in a column of " +
                     type_->ToString());
    }
    if (unifier_ == nullptr) {
      return values_->AppendArraySlice(*chunk.data(), 0, chunk.length());
    }
    const auto& dict = static_cast<const arrow::DictionaryArray&>(chunk);
    std::shared_ptr<arrow::Buffer> transpose;
    TIMELAKE_RETURN_NOT_OK(unifier_->Unify(*dict.dictionary(), &transpose));
    const auto* map = reinterpret_cast<const int32_t*>(transpose->data());
    const auto& indices = static_cast<const arrow::Int32Array&>(*dict.indices());
    TIMELAKE_RETURN_NOT_OK(indices_.Reserve(indices.length()));
    const int32_t* values = indices.raw_values();
    if (indices.null_count() == 0) {
      for (int64_t i = 0; i < indices.length(); ++i)
        indices_.UnsafeAppend(map[values[i]]);
      return arrow::Status::OK();
    }
    for (int64_t i = 0; i < indices.length(); ++i) {
      if (indices.IsNull(i)) {
        indices_.UnsafeAppendNull();
      } else {
        indices_.UnsafeAppend(map[values[i]]);
      }
    }
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Array>> Finish() {
    if (unifier_ == nullptr) return values_->Finish();
    std::shared_ptr<arrow::DataType> type;
    std::shared_ptr<arrow::Array> dictionary;
    TIMELAKE_RETURN_NOT_OK(unifier_->GetResult(&type, &dictionary));
    TIMELAKE_ASSIGN_OR_RAISE(auto indices, indices_.Finish());
    return std::make_shared<arrow::DictionaryArray>(type_, std::move(indices),
                                                    std::move(dictionary));
  }

 private:
  std::shared_ptr<arrow::DataType> type_;  // dictionaries: int32 indices
  std::unique_ptr<arrow::ArrayBuilder> values_;
  std::unique_ptr<arrow::DictionaryUnifier> unifier_;
  arrow::Int32Builder indices_;
};

// The inputs, fetched whole and open for reading column by column.
struct Inputs {
  std::shared_ptr<arrow::Schema> read_schema;  // the table's, strings as dictionaries
  std::vector<std::unique_ptr<parquet::arrow::FileReader>> readers;
  int64_t rows = 0;
  // Where each input's rows start among all (one more: `rows`).
  std::vector<int64_t> starts = {0};

  // Column `i` of every input, in their order.
  arrow::Result<std::shared_ptr<arrow::Array>> Column(int i) const {
    TIMELAKE_ASSIGN_OR_RAISE(auto sink,
                             ColumnSink::Make(read_schema->field(i)->type(), rows));
    for (const auto& reader : readers) {
      std::shared_ptr<arrow::ChunkedArray> column;
      TIMELAKE_RETURN_NOT_OK(reader->ReadColumn(i, &column));
      for (const auto& chunk : column->chunks())
        TIMELAKE_RETURN_NOT_OK(sink.Append(*chunk));
    }
    return sink.Finish();
  }
};

// The inputs open, in commit order (the data sequence number, so that a
// row's position breaks ties of (series…, time, insertion) as the merge's
// order does); nullopt when a file's columns are not the table's.
arrow::Result<std::optional<Inputs>> OpenInputs(
    const TableState& table, const std::vector<format::LiveFile>& files) {
  const arrow::Schema& schema = *table.schema;
  Inputs in;
  std::vector<std::shared_ptr<arrow::Field>> fields;
  for (const auto& field : schema.fields()) {
    fields.push_back(IsString(*field->type()) ? field->WithType(arrow::dictionary(
                                                    arrow::int32(), field->type()))
                                              : field);
  }
  in.read_schema = arrow::schema(std::move(fields), schema.metadata());
  std::vector<const format::LiveFile*> ordered;
  for (const auto& f : files) ordered.push_back(&f);
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto* a, const auto* b) {
    return a->sequence_number.value_or(0) < b->sequence_number.value_or(0);
  });
  parquet::ArrowReaderProperties properties;
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (IsString(*schema.field(i)->type())) properties.set_read_dictionary(i, true);
  }
  for (const auto* f : ordered) {
    TIMELAKE_ASSIGN_OR_RAISE(auto bytes, table.lake->store->Get(f->key));
    parquet::arrow::FileReaderBuilder builder;
    TIMELAKE_RETURN_NOT_OK(
        builder.Open(std::make_shared<arrow::io::BufferReader>(bytes)));
    TIMELAKE_ASSIGN_OR_RAISE(auto reader, builder.properties(properties)->Build());
    std::shared_ptr<arrow::Schema> file_schema;
    TIMELAKE_RETURN_NOT_OK(reader->GetSchema(&file_schema));
    if (!SameColumns(*file_schema, schema)) return std::nullopt;
    in.rows += reader->parquet_reader()->metadata()->num_rows();
    in.starts.push_back(in.rows);
    in.readers.push_back(std::move(reader));
  }
  return in;
}

// The rows [lo, hi) of one input.
struct Range {
  int64_t lo = 0, hi = 0;
};

// What one row group of the output reads: a range of each input.
struct GroupPlan {
  std::vector<Range> ranges;
  int64_t rows_read = 0;
};

// One column of every input read forward, range by range: a reader per
// input, created at its first range, skipping the rows between ranges.
class ColumnCursor {
 public:
  static constexpr int64_t kBatchRows = 16 << 10;

  ColumnCursor(const Inputs& in, int column)
      : in_(in), column_(column), readers_(in.readers.size()), at_(in.readers.size()) {}

  // The rows of `plan`, input after input, in one array.
  arrow::Result<std::shared_ptr<arrow::Array>> Read(const GroupPlan& plan) {
    TIMELAKE_ASSIGN_OR_RAISE(
        auto sink,
        ColumnSink::Make(in_.read_schema->field(column_)->type(), plan.rows_read));
    for (size_t j = 0; j < readers_.size(); ++j) {
      const Range& r = plan.ranges[j];
      if (r.lo >= r.hi) continue;
      if (readers_[j] == nullptr) {
        TIMELAKE_RETURN_NOT_OK(in_.readers[j]->GetColumn(column_, &readers_[j]));
      }
      if (r.lo < at_[j]) return Invalid("an input's rows are read twice");
      // In batches of at most kBatchRows: a reader keeps buffers the size of
      // the largest batch it gave, and a rewrite keeps one per column and
      // input.
      std::shared_ptr<arrow::ChunkedArray> chunks;
      while (at_[j] < r.hi) {
        const int64_t skip = std::max<int64_t>(0, r.lo - at_[j]);  // dropped rows
        const int64_t want = std::min(kBatchRows, skip > 0 ? skip : r.hi - at_[j]);
        TIMELAKE_RETURN_NOT_OK(readers_[j]->NextBatch(want, &chunks));
        if (chunks->length() != want) return Invalid("an input ends early");
        at_[j] += want;
        if (skip > 0) continue;
        for (const auto& chunk : chunks->chunks()) {
          TIMELAKE_RETURN_NOT_OK(sink.Append(*chunk));
        }
      }
    }
    return sink.Finish();
  }

 private:
  const Inputs& in_;
  int column_;
  std::vector<std::unique_ptr<parquet::arrow::ColumnReader>> readers_;
  std::vector<int64_t> at_;  // per input: the next row its reader gives
};

// The chunks of the inputs that make the output's row groups. With at
// most `max_rows` rows, one chunk of every input whole. Otherwise, when the
// inputs are in the write order (their first series key column ascending),
// chunks of whole series: ranges of the first series key column's values,
// each a run of each input, of at most `max_rows` rows unless one value has
// more. Then, or when an input is not in the write order, nullopt: the
// rewrite is not for this path.
arrow::Result<std::optional<std::vector<GroupPlan>>> PlanChunks(
    const Inputs& in, const write::Layout& layout, int64_t max_rows) {
  const size_t inputs = in.readers.size();
  if (in.rows <= max_rows) {
    GroupPlan whole;
    for (size_t j = 0; j < inputs; ++j) {
      whole.ranges.push_back({0, in.starts[j + 1] - in.starts[j]});
    }
    whole.rows_read = in.rows;
    return std::vector<GroupPlan>{std::move(whole)};
  }
  if (layout.series_key.empty()) return std::nullopt;
  const int first = in.read_schema->GetFieldIndex(layout.series_key[0]);
  if (first < 0) return Invalid("no column '" + layout.series_key[0] + "' in the table");
  write::RowVector<uint32_t> ranks;
  {
    TIMELAKE_ASSIGN_OR_RAISE(auto column, in.Column(first));
    TIMELAKE_ASSIGN_OR_RAISE(ranks, write::SeriesValueRanks(column));
  }
  for (size_t j = 0; j < inputs; ++j) {
    if (!std::is_sorted(ranks.begin() + in.starts[j], ranks.begin() + in.starts[j + 1]))
      return std::nullopt;
  }
  // Each input's rows of the smallest value left, all inputs at once.
  std::vector<GroupPlan> plans;
  std::vector<int64_t> at(in.starts.begin(), in.starts.end() - 1);
  GroupPlan chunk;
  auto close = [&] {
    if (chunk.rows_read == 0) return;
    for (size_t j = 0; j < inputs; ++j) {
      chunk.ranges[j].lo -= in.starts[j];
      chunk.ranges[j].hi -= in.starts[j];
    }
    plans.push_back(std::move(chunk));
    chunk = GroupPlan{};
  };
  for (;;) {
    uint32_t value = UINT32_MAX;
    bool any = false;
    for (size_t j = 0; j < inputs; ++j) {
      if (at[j] < in.starts[j + 1]) {
        value = std::min(value, ranks[at[j]]);
        any = true;
      }
    }
    if (!any) break;
    std::vector<Range> runs(inputs);
    int64_t rows = 0;
    for (size_t j = 0; j < inputs; ++j) {
      int64_t end = at[j];
      while (end < in.starts[j + 1] && ranks[end] == value) ++end;
      runs[j] = {at[j], end};
      rows += end - at[j];
      at[j] = end;
    }
    if (rows > max_rows) return std::nullopt;  // one series over a row group
    if (chunk.rows_read + rows > max_rows) close();
    if (chunk.ranges.empty()) {
      for (size_t j = 0; j < inputs; ++j)
        chunk.ranges.push_back({runs[j].lo, runs[j].lo});
    }
    for (size_t j = 0; j < inputs; ++j) chunk.ranges[j].hi = runs[j].hi;
    chunk.rows_read += rows;
  }
  close();
  return plans;
}

// One chunk's write order, and its key columns (by column index) as read.
struct ChunkOrder {
  std::shared_ptr<arrow::Array> order;
  std::map<int, std::shared_ptr<arrow::Array>> keys;
};

}  // namespace

arrow::Result<std::optional<write::WrittenFile>> RewriteWhole(
    const TableState& table, const write::Layout& layout,
    const std::vector<format::LiveFile>& inputs, const std::string& dir,
    std::optional<int32_t> partition, int64_t target_bytes, int64_t* rows_written) {
  const arrow::Schema& schema = *table.schema;
  if (!table.contract.time_column || inputs.empty()) return std::nullopt;
  int64_t rows = 0, bytes = 0;
  for (const auto& f : inputs) {
    rows += f.data_file.record_count;
    bytes += f.data_file.file_size_in_bytes;
  }
  const bool flat =
      std::all_of(schema.fields().begin(), schema.fields().end(),
                  [](const auto& f) { return f->type()->num_fields() == 0; });
  if (!flat || rows == 0 || rows > kWholeMaxRows || bytes > target_bytes ||
      bytes > kWholeMaxBytes) {
    return std::nullopt;
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto in, OpenInputs(table, inputs));
  if (!in) return std::nullopt;
  TIMELAKE_ASSIGN_OR_RAISE(auto plans, PlanChunks(*in, layout, layout.row_group_rows));
  if (!plans) return std::nullopt;

  std::vector<int> keys;
  for (const auto& name : layout.series_key) keys.push_back(schema.GetFieldIndex(name));
  keys.push_back(schema.GetFieldIndex(*table.contract.time_column));
  if (!layout.ingest_column.empty())
    keys.push_back(schema.GetFieldIndex(layout.ingest_column));
  if (std::find(keys.begin(), keys.end(), -1) != keys.end())
    return Invalid("a key column is not in the table");
  const int n = schema.num_fields();
  std::vector<ColumnCursor> cursors;
  for (int i = 0; i < n; ++i) cursors.emplace_back(*in, i);

  // Chunk c's write order, from its key columns alone.
  ChunkOrder chunk;
  auto order_chunk = [&](size_t c) -> arrow::Status {
    chunk = ChunkOrder{};
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<std::shared_ptr<arrow::Array>> arrays;
    for (int i : keys) {
      if (chunk.keys.count(i)) continue;
      TIMELAKE_ASSIGN_OR_RAISE(chunk.keys[i], cursors[i].Read((*plans)[c]));
      fields.push_back(in->read_schema->field(i));
      arrays.push_back(chunk.keys[i]);
    }
    auto key_table = arrow::Table::Make(arrow::schema(std::move(fields)),
                                        std::move(arrays), (*plans)[c].rows_read);
    TIMELAKE_ASSIGN_OR_RAISE(chunk.order, write::WriteOrder(*key_table, layout));
    return arrow::Status::OK();
  };
  // Step t: column t % n of chunk t / n (its order found first), read or
  // kept from the keys, and taken into the write order.
  auto ordered = [&](int64_t t) -> arrow::Result<std::shared_ptr<arrow::Array>> {
    const auto c = static_cast<size_t>(t / n);
    const int i = static_cast<int>(t % n);
    if (i == 0) TIMELAKE_RETURN_NOT_OK(order_chunk(c));
    std::shared_ptr<arrow::Array> column;
    if (auto it = chunk.keys.find(i); it != chunk.keys.end()) {
      column = std::move(it->second);
      chunk.keys.erase(it);
    } else {
      TIMELAKE_ASSIGN_OR_RAISE(column, cursors[i].Read((*plans)[c]));
    }
    return arrow::compute::Take(*column, *chunk.order,
                                arrow::compute::TakeOptions::NoBoundsCheck())
        .Map([](arrow::Datum d) { return d.make_array(); });
  };

  const std::string key = dir + "/" + NewUuidV7(table.lake->clock->Now()) + ".parquet";
  TIMELAKE_ASSIGN_OR_RAISE(auto writer, write::ColumnFileWriter::Open(
                                            *table.lake->store, key, layout, partition));
  // Step t + 1 is prepared on the write path's pool while step t is encoded
  // here; the steps run one after another, so `chunk` is shared safely.
  auto* pool = write::EncodePool();
  using Prepared = arrow::Future<std::shared_ptr<arrow::Array>>;
  auto submit = [&](int64_t t) -> Prepared {
    if (pool == nullptr) return Prepared::MakeFinished(ordered(t));  // no thread
    auto future = pool->Submit(ordered, t);
    return future.ok() ? *future : Prepared::MakeFinished(future.status());
  };
  const int64_t steps = static_cast<int64_t>(plans->size()) * n;
  int64_t out_rows = 0;
  Prepared next = submit(0);
  for (int64_t t = 0; t < steps; ++t) {
    auto column = next.result();
    // Chunk t / n's order is found: the next step may start on it.
    int64_t group_rows = 0;
    if (column.ok() && t % n == 0) group_rows = chunk.order->length();
    if (t + 1 < steps) next = submit(t + 1);
    arrow::Status st = column.status();
    if (st.ok() && t % n == 0) {
      st = writer->StartRowGroup(group_rows);
      out_rows += group_rows;
    }
    if (st.ok()) st = writer->WriteColumn(*column);
    if (!st.ok()) {
      if (t + 1 < steps) next.Wait();  // `ordered` uses this frame
      writer->Abort();
      return st;
    }
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto file, writer->Finish());
  *rows_written = out_rows;
  return file;
}

}  // namespace timelake::internal
