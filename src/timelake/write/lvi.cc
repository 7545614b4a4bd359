// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/write/lvi.h"

#include <arrow/io/memory.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>

#include "timelake/timelake.h"
#include "timelake/versions/versions.h"

namespace timelake::internal {

std::optional<std::string> LviUri(const format::Snapshot& snapshot) {
  auto it = snapshot.summary.find(kLastValueIndexKey);
  if (it == snapshot.summary.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> MergeLvi(
    const std::shared_ptr<arrow::RecordBatch>& previous,
    const std::shared_ptr<arrow::RecordBatch>& added, const Contract& contract,
    const arrow::Schema& table_schema) {
  if (!contract.time_column) return nullptr;
  std::vector<std::shared_ptr<arrow::RecordBatch>> parts;
  for (const auto& b : {previous, added}) {
    if (b == nullptr || b->num_rows() == 0) continue;
    TIMELAKE_ASSIGN_OR_RAISE(auto aligned, AlignBatch(*b, table_schema));
    parts.push_back(std::move(aligned));
  }
  return LatestPerSeries(parts, *contract.time_column, contract.series_key,
                         contract.ingest_column);
}

arrow::Result<std::string> WriteLvi(const storage::Store& store,
                                    const std::string& table_key, int64_t snapshot_id,
                                    const arrow::RecordBatch& index,
                                    const std::string& uuid) {
  const std::string key = versions::MetadataPrefix(table_key) + "/lvi-" +
                          std::to_string(snapshot_id) + "-" + uuid + ".parquet";
  const std::string context = "writing the last-value index " + store.Uri(key);
  auto sink = arrow::io::BufferOutputStream::Create();
  if (!sink.ok()) return WithContext(sink.status(), context);
  auto props = parquet::WriterProperties::Builder()
                   .compression(parquet::Compression::ZSTD)
                   ->compression_level(3)
                   ->build();
  auto arrow_props = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  auto table = arrow::Table::FromRecordBatches({index.Slice(0)});
  if (!table.ok()) return WithContext(table.status(), context);
  TIMELAKE_RETURN_NOT_OK(parquet::arrow::WriteTable(**table, arrow::default_memory_pool(),
                                                    *sink, index.num_rows() + 1, props,
                                                    arrow_props));
  auto buffer = (*sink)->Finish();
  if (!buffer.ok()) return WithContext(buffer.status(), context);
  auto st =
      store.Put(key, std::string_view(reinterpret_cast<const char*>((*buffer)->data()),
                                      static_cast<size_t>((*buffer)->size())));
  if (!st.ok()) return WithContext(st, context);
  return key;
}

}  // namespace timelake::internal
