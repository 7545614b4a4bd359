// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/format/head.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/api.h>

namespace timelake::format {

namespace {

constexpr char kMagic[] = "TLHD";
constexpr uint8_t kHeadFormat = 1;
constexpr char kCodec[] = "arrow";
constexpr char kSectionKey[] = "timelake.section";

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

arrow::Result<std::shared_ptr<arrow::Buffer>> Ipc(
    const std::shared_ptr<arrow::RecordBatch>& batch) {
  ARROW_ASSIGN_OR_RAISE(auto sink, arrow::io::BufferOutputStream::Create());
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeStreamWriter(sink, batch->schema()));
  if (batch->num_columns() > 0) ARROW_RETURN_NOT_OK(writer->WriteRecordBatch(*batch));
  ARROW_RETURN_NOT_OK(writer->Close());
  return sink->Finish();
}

std::shared_ptr<arrow::KeyValueMetadata> Section(const std::string& name) {
  return arrow::key_value_metadata({kSectionKey}, {name});
}

template <typename Builder>
std::shared_ptr<arrow::Array> Finish(Builder* b) {
  return b->Finish().ValueOrDie();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FilesSection(const Head& head) {
  arrow::StringBuilder path;
  arrow::UInt64Builder size, records;
  arrow::Int32Builder partition, sort_order;
  auto offsets_values = std::make_shared<arrow::Int64Builder>();
  arrow::ListBuilder offsets(arrow::default_memory_pool(), offsets_values);
  arrow::UInt8Builder added;
  arrow::Int64Builder snapshot, seq, file_seq;
  for (const auto& f : head.files) {
    const auto& d = f.data_file;
    ARROW_RETURN_NOT_OK(path.Append(d.file_path));
    ARROW_RETURN_NOT_OK(size.Append(static_cast<uint64_t>(d.file_size_in_bytes)));
    ARROW_RETURN_NOT_OK(records.Append(static_cast<uint64_t>(d.record_count)));
    const int32_t* p = nullptr;
    if (!d.partition.empty() && d.partition[0])
      p = std::get_if<int32_t>(&*d.partition[0]);
    ARROW_RETURN_NOT_OK(p ? partition.Append(*p) : partition.AppendNull());
    ARROW_RETURN_NOT_OK(d.sort_order_id ? sort_order.Append(*d.sort_order_id)
                                        : sort_order.AppendNull());
    ARROW_RETURN_NOT_OK(offsets.Append());
    for (int64_t o : d.split_offsets) ARROW_RETURN_NOT_OK(offsets_values->Append(o));
    ARROW_RETURN_NOT_OK(added.Append(f.added ? 1 : 0));
    ARROW_RETURN_NOT_OK(snapshot.Append(f.snapshot_id));
    ARROW_RETURN_NOT_OK(seq.Append(f.sequence_number.value_or(0)));
    ARROW_RETURN_NOT_OK(file_seq.Append(f.file_sequence_number));
  }
  auto schema =
      arrow::schema({arrow::field("path", arrow::utf8(), false),
                     arrow::field("size", arrow::uint64(), false),
                     arrow::field("records", arrow::uint64(), false),
                     arrow::field("partition", arrow::int32()),
                     arrow::field("sort_order_id", arrow::int32()),
                     arrow::field("split_offsets", arrow::list(arrow::int64())),
                     arrow::field("added", arrow::uint8(), false),
                     arrow::field("snapshot_id", arrow::int64(), false),
                     arrow::field("sequence_number", arrow::int64(), false),
                     arrow::field("file_sequence_number", arrow::int64(), false)},
                    Section("files"));
  return arrow::RecordBatch::Make(
      schema, static_cast<int64_t>(head.files.size()),
      {Finish(&path), Finish(&size), Finish(&records), Finish(&partition),
       Finish(&sort_order), Finish(&offsets), Finish(&added), Finish(&snapshot),
       Finish(&seq), Finish(&file_seq)});
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ColumnsSection(const Head& head) {
  arrow::UInt32Builder file;
  arrow::Int32Builder field_id;
  arrow::BinaryBuilder lower, upper;
  arrow::UInt64Builder values, nulls, nans, size;
  int64_t rows = 0;
  for (size_t i = 0; i < head.files.size(); ++i) {
    const auto& d = head.files[i].data_file;
    std::set<int32_t> ids;
    for (const auto* m :
         {&d.column_sizes, &d.value_counts, &d.null_value_counts, &d.nan_value_counts}) {
      for (const auto& [id, v] : *m) ids.insert(id);
    }
    for (const auto& [id, v] : d.lower_bounds) ids.insert(id);
    for (const auto& [id, v] : d.upper_bounds) ids.insert(id);
    for (int32_t id : ids) {
      auto count = [&](const std::map<int32_t, int64_t>& m, arrow::UInt64Builder* b) {
        auto it = m.find(id);
        return it == m.end() ? b->AppendNull()
                             : b->Append(static_cast<uint64_t>(it->second));
      };
      auto bound = [&](const std::map<int32_t, std::string>& m, arrow::BinaryBuilder* b) {
        auto it = m.find(id);
        return it == m.end() ? b->AppendNull() : b->Append(it->second);
      };
      ARROW_RETURN_NOT_OK(file.Append(static_cast<uint32_t>(i)));
      ARROW_RETURN_NOT_OK(field_id.Append(id));
      ARROW_RETURN_NOT_OK(bound(d.lower_bounds, &lower));
      ARROW_RETURN_NOT_OK(bound(d.upper_bounds, &upper));
      ARROW_RETURN_NOT_OK(count(d.value_counts, &values));
      ARROW_RETURN_NOT_OK(count(d.null_value_counts, &nulls));
      ARROW_RETURN_NOT_OK(count(d.nan_value_counts, &nans));
      ARROW_RETURN_NOT_OK(count(d.column_sizes, &size));
      ++rows;
    }
  }
  auto schema = arrow::schema(
      {arrow::field("file", arrow::uint32(), false),
       arrow::field("field_id", arrow::int32(), false),
       arrow::field("lower", arrow::binary()), arrow::field("upper", arrow::binary()),
       arrow::field("values", arrow::uint64()), arrow::field("nulls", arrow::uint64()),
       arrow::field("nans", arrow::uint64()), arrow::field("size", arrow::uint64())},
      Section("columns"));
  return arrow::RecordBatch::Make(
      schema, rows,
      {Finish(&file), Finish(&field_id), Finish(&lower), Finish(&upper), Finish(&values),
       Finish(&nulls), Finish(&nans), Finish(&size)});
}

// Typed column access for decoding; nullptr when absent or of another type.
template <typename ArrayType>
const ArrayType* Col(const arrow::RecordBatch& batch, const char* name) {
  auto column = batch.GetColumnByName(name);
  return column ? dynamic_cast<const ArrayType*>(column.get()) : nullptr;
}

arrow::Status DecodeFiles(const arrow::RecordBatch& batch, Head* head) {
  const auto* path = Col<arrow::StringArray>(batch, "path");
  const auto* size = Col<arrow::UInt64Array>(batch, "size");
  const auto* records = Col<arrow::UInt64Array>(batch, "records");
  const auto* partition = Col<arrow::Int32Array>(batch, "partition");
  const auto* sort_order = Col<arrow::Int32Array>(batch, "sort_order_id");
  const auto* offsets = Col<arrow::ListArray>(batch, "split_offsets");
  const auto* added = Col<arrow::UInt8Array>(batch, "added");
  const auto* snapshot = Col<arrow::Int64Array>(batch, "snapshot_id");
  const auto* seq = Col<arrow::Int64Array>(batch, "sequence_number");
  const auto* file_seq = Col<arrow::Int64Array>(batch, "file_sequence_number");
  if (!path || !size || !records || !snapshot || !seq) {
    return arrow::Status::Invalid("the files section lacks a required column");
  }
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    LiveFile f;
    auto& d = f.data_file;
    d.file_path = path->GetString(i);
    d.file_size_in_bytes = static_cast<int64_t>(size->Value(i));
    d.record_count = static_cast<int64_t>(records->Value(i));
    if (partition && partition->IsValid(i)) d.partition.push_back(partition->Value(i));
    if (sort_order && sort_order->IsValid(i)) d.sort_order_id = sort_order->Value(i);
    if (offsets && offsets->IsValid(i)) {
      auto values = std::static_pointer_cast<arrow::Int64Array>(offsets->value_slice(i));
      for (int64_t j = 0; j < values->length(); ++j)
        d.split_offsets.push_back(values->Value(j));
    }
    f.added = added && added->Value(i) != 0;
    f.snapshot_id = snapshot->Value(i);
    f.sequence_number = seq->Value(i);
    f.file_sequence_number = file_seq ? file_seq->Value(i) : seq->Value(i);
    head->files.push_back(std::move(f));
  }
  return arrow::Status::OK();
}

arrow::Status DecodeColumns(const arrow::RecordBatch& batch, Head* head) {
  const auto* file = Col<arrow::UInt32Array>(batch, "file");
  const auto* field_id = Col<arrow::Int32Array>(batch, "field_id");
  const auto* lower = Col<arrow::BinaryArray>(batch, "lower");
  const auto* upper = Col<arrow::BinaryArray>(batch, "upper");
  if (!file || !field_id)
    return arrow::Status::Invalid("the columns section lacks file ids");
  auto count = [&](const char* name, int64_t i, std::map<int32_t, int64_t>* m,
                   int32_t id) {
    const auto* a = Col<arrow::UInt64Array>(batch, name);
    if (a && a->IsValid(i)) (*m)[id] = static_cast<int64_t>(a->Value(i));
  };
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    const uint32_t index = file->Value(i);
    if (index >= head->files.size()) {
      return arrow::Status::Invalid("column statistics of file ", index, " of ",
                                    head->files.size());
    }
    auto& d = head->files[index].data_file;
    const int32_t id = field_id->Value(i);
    if (lower && lower->IsValid(i)) d.lower_bounds[id] = lower->GetString(i);
    if (upper && upper->IsValid(i)) d.upper_bounds[id] = upper->GetString(i);
    count("values", i, &d.value_counts, id);
    count("nulls", i, &d.null_value_counts, id);
    count("nans", i, &d.nan_value_counts, id);
    count("size", i, &d.column_sizes, id);
  }
  return arrow::Status::OK();
}

// Footer blobs stay slices of the section's buffer.
arrow::Status DecodeFooters(const arrow::RecordBatch& batch, Head* head) {
  const auto* path = Col<arrow::StringArray>(batch, "path");
  const auto* footer = Col<arrow::BinaryArray>(batch, "footer");
  if (path == nullptr || footer == nullptr) {
    return arrow::Status::Invalid("the footers section lacks path or footer");
  }
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    if (path->IsNull(i) || footer->IsNull(i)) continue;
    head->footers.emplace_back(
        path->GetString(i),
        arrow::SliceBuffer(footer->value_data(), footer->value_offset(i),
                           footer->value_length(i)));
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::Buffer>> EncodeHead(const Head& head) {
  std::string out(kMagic, 4);
  out.push_back(static_cast<char>(kHeadFormat));
  PutU64(&out, static_cast<uint64_t>(head.version));
  out.push_back(static_cast<char>(std::strlen(kCodec)));
  out += kCodec;
  std::vector<std::shared_ptr<arrow::RecordBatch>> sections;
  sections.push_back(arrow::RecordBatch::Make(
      arrow::schema({}, arrow::key_value_metadata({"layout"}, {"1"})), 0,
      arrow::ArrayVector{}));
  TIMELAKE_ASSIGN_OR_RAISE(auto columns, ColumnsSection(head));
  sections.push_back(columns);
  TIMELAKE_ASSIGN_OR_RAISE(auto files, FilesSection(head));
  sections.push_back(files);
  arrow::StringBuilder footer_path;
  arrow::BinaryBuilder footer;
  for (const auto& [path, blob] : head.footers) {
    TIMELAKE_RETURN_NOT_OK(footer_path.Append(path));
    TIMELAKE_RETURN_NOT_OK(footer.Append(blob->data(), blob->size()));
  }
  sections.push_back(arrow::RecordBatch::Make(
      arrow::schema({arrow::field("path", arrow::utf8(), false),
                     arrow::field("footer", arrow::binary(), false)},
                    Section("footers")),
      static_cast<int64_t>(head.footers.size()),
      {Finish(&footer_path), Finish(&footer)}));
  if (head.last_values != nullptr) {
    sections.push_back(head.last_values->ReplaceSchemaMetadata(Section("last_values")));
  }
  arrow::StringBuilder json;
  TIMELAKE_RETURN_NOT_OK(json.Append(head.metadata_json));
  sections.push_back(arrow::RecordBatch::Make(
      arrow::schema({arrow::field("json", arrow::utf8(), false)}, Section("metadata")), 1,
      {Finish(&json)}));
  // Assembled in Arrow's memory pool at its final size: the head of a large
  // table is megabytes, written after every commit.
  std::vector<std::shared_ptr<arrow::Buffer>> encoded;
  int64_t size = static_cast<int64_t>(out.size());
  for (const auto& s : sections) {
    TIMELAKE_ASSIGN_OR_RAISE(auto bytes, Ipc(s));
    size += 8 + bytes->size();
    encoded.push_back(std::move(bytes));
  }
  arrow::BufferBuilder builder;
  TIMELAKE_RETURN_NOT_OK(builder.Reserve(size));
  TIMELAKE_RETURN_NOT_OK(builder.Append(out.data(), static_cast<int64_t>(out.size())));
  for (const auto& bytes : encoded) {
    out.clear();
    PutU64(&out, static_cast<uint64_t>(bytes->size()));
    TIMELAKE_RETURN_NOT_OK(builder.Append(out.data(), 8));
    TIMELAKE_RETURN_NOT_OK(builder.Append(bytes->data(), bytes->size()));
  }
  return builder.Finish();
}

arrow::Result<Head> DecodeHead(std::string_view bytes, const std::string& uri) {
  auto corrupt = [&](const std::string& why) {
    return MakeError(ErrorKind::kCorrupt, "head object " + uri + ": " + why);
  };
  size_t at = 0;
  auto u64 = [&](uint64_t* v) {
    if (bytes.size() - at < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) {
      *v |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[at + i])) << (8 * i);
    }
    at += 8;
    return true;
  };
  if (bytes.size() < 5 || bytes.substr(0, 4) != kMagic)
    return corrupt("not a head (magic)");
  if (static_cast<uint8_t>(bytes[4]) != kHeadFormat) {
    return corrupt("unknown head format " +
                   std::to_string(static_cast<uint8_t>(bytes[4])));
  }
  at = 5;
  Head head;
  uint64_t version = 0;
  if (!u64(&version) || at >= bytes.size()) return corrupt("truncated");
  head.version = static_cast<int64_t>(version);
  const size_t codec_length = static_cast<uint8_t>(bytes[at++]);
  if (bytes.size() - at < codec_length) return corrupt("truncated");
  const std::string_view codec = bytes.substr(at, codec_length);
  at += codec_length;
  if (codec != kCodec) return corrupt("unknown codec '" + std::string(codec) + "'");
  bool has_metadata = false;
  std::shared_ptr<arrow::RecordBatch> columns;
  while (at < bytes.size()) {
    uint64_t length = 0;
    if (!u64(&length) || bytes.size() - at < length) return corrupt("truncated section");
    // Arrays read from the stream point into this buffer: it owns a copy,
    // so the batches outlive `bytes`.
    auto buffer = arrow::Buffer::FromString(std::string(bytes.substr(at, length)));
    at += length;
    auto reader = arrow::ipc::RecordBatchStreamReader::Open(
        std::make_shared<arrow::io::BufferReader>(buffer));
    if (!reader.ok()) return corrupt(reader.status().message());
    auto table = (*reader)->ToTable();
    if (!table.ok()) return corrupt(table.status().message());
    auto batch = (*table)->CombineChunksToBatch();
    if (!batch.ok()) return corrupt(batch.status().message());
    // The IPC reader checks framing, not contents: offsets past the data,
    // for one, would be read as they are (found by fuzz/head_fuzz.cc).
    if (auto st = (*batch)->ValidateFull(); !st.ok()) return corrupt(st.message());
    const auto metadata = (*batch)->schema()->metadata();
    std::string name;
    if (metadata && metadata->Contains(kSectionKey)) name = *metadata->Get(kSectionKey);
    arrow::Status st;
    if (name == "files") st = DecodeFiles(**batch, &head);
    if (name == "footers") st = DecodeFooters(**batch, &head);
    if (!st.ok()) return corrupt(st.message());
    // Statistics refer to files by index; 0.7 writes them first.
    if (name == "columns") columns = *batch;
    if (name == "last_values")
      head.last_values = (*batch)->ReplaceSchemaMetadata(nullptr);
    if (name == "metadata") {
      const auto* json = Col<arrow::StringArray>(**batch, "json");
      if (!json || json->length() != 1)
        return corrupt("the metadata section is malformed");
      head.metadata_json = json->GetString(0);
      has_metadata = true;
    }
  }
  if (!has_metadata) return corrupt("no metadata section");
  if (columns != nullptr) {
    auto st = DecodeColumns(*columns, &head);
    if (!st.ok()) return corrupt(st.message());
  }
  return head;
}

}  // namespace timelake::format
