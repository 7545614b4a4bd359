// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The in-memory path of a rewrite (RewriteWhole): for the usual tier, a few
// appends' files merged into one file. The inputs are fetched whole (one
// request each); the key columns (series…, time, insertion) of every row
// give the write order by sorting integers (write::WriteOrder), as an append
// sorts; then each column in turn is decoded from every input, put in that
// order and written (write::ColumnFileWriter), the next column decoded while
// one is encoded. Tag columns stay the dictionaries they are stored as: no
// tag value is hashed or compared. The streaming merge (read::MergeFiles)
// compares and copies every string of every row, on one core.

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
    in.readers.push_back(std::move(reader));
  }
  return in;
}

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
  if (!flat || rows == 0 || rows > layout.row_group_rows || bytes > target_bytes ||
      bytes > kWholeMaxBytes) {
    return std::nullopt;
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto in, OpenInputs(table, inputs));
  if (!in) return std::nullopt;

  // The write order, from the key columns alone.
  std::vector<std::string> keys = layout.series_key;
  keys.push_back(*table.contract.time_column);
  if (!layout.ingest_column.empty()) keys.push_back(layout.ingest_column);
  std::map<int, std::shared_ptr<arrow::Array>> key_columns;  // by column index
  for (const auto& name : keys) {
    const int i = schema.GetFieldIndex(name);
    if (i < 0) return Invalid("no column '" + name + "' in the table");
    TIMELAKE_ASSIGN_OR_RAISE(key_columns[i], in->Column(i));
  }
  std::shared_ptr<arrow::Array> order;
  {
    std::vector<std::shared_ptr<arrow::Field>> fields;
    std::vector<std::shared_ptr<arrow::Array>> arrays;
    for (const auto& [i, column] : key_columns) {
      fields.push_back(in->read_schema->field(i));
      arrays.push_back(column);
    }
    auto key_table =
        arrow::Table::Make(arrow::schema(std::move(fields)), std::move(arrays), in->rows);
    TIMELAKE_ASSIGN_OR_RAISE(order, write::WriteOrder(*key_table, layout));
  }

  const std::string key = dir + "/" + NewUuidV7(table.lake->clock->Now()) + ".parquet";
  TIMELAKE_ASSIGN_OR_RAISE(auto writer,
                           write::ColumnFileWriter::Open(*table.lake->store, key, layout,
                                                         partition, order->length()));
  // Column i in the write order: decoded (or the key column kept) and taken.
  auto ordered = [&](int i) -> arrow::Result<std::shared_ptr<arrow::Array>> {
    std::shared_ptr<arrow::Array> column;
    if (auto it = key_columns.find(i); it != key_columns.end()) {
      column = std::move(it->second);
    } else {
      TIMELAKE_ASSIGN_OR_RAISE(column, in->Column(i));
    }
    TIMELAKE_ASSIGN_OR_RAISE(
        auto taken, arrow::compute::Take(*column, *order,
                                         arrow::compute::TakeOptions::NoBoundsCheck()));
    return taken;
  };
  // Column i + 1 is prepared on the write path's pool while column i is
  // encoded here.
  auto* pool = write::EncodePool();
  using Prepared = arrow::Future<std::shared_ptr<arrow::Array>>;
  auto submit = [&](int i) -> Prepared {
    if (pool == nullptr) return Prepared::MakeFinished(ordered(i));  // no thread
    auto future = pool->Submit(ordered, i);
    return future.ok() ? *future : Prepared::MakeFinished(future.status());
  };
  const int n = schema.num_fields();
  Prepared next = submit(0);
  for (int i = 0; i < n; ++i) {
    auto column = next.result();
    if (i + 1 < n) next = submit(i + 1);
    arrow::Status st = column.status();
    if (st.ok()) st = writer->WriteColumn(*column);
    if (!st.ok()) {
      if (i + 1 < n) next.Wait();  // `ordered` uses this frame
      writer->Abort();
      return st;
    }
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto file, writer->Finish());
  *rows_written = order->length();
  return file;
}

}  // namespace timelake::internal
