// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// LatestPerSeries and FilePartition (public API, timelake.h).

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "timelake/timelake.h"
#include "timelake/util/compute.h"

namespace timelake {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> LatestPerSeries(
    const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches,
    const std::string& time_column, const std::vector<std::string>& series_key,
    const std::string& ingest_column) {
  TIMELAKE_RETURN_NOT_OK(internal::EnsureCompute());
  std::vector<std::shared_ptr<arrow::RecordBatch>> nonempty;
  for (const auto& b : batches) {
    if (b != nullptr && b->num_rows() > 0) nonempty.push_back(b);
  }
  if (nonempty.empty()) return nullptr;
  const auto schema = nonempty[0]->schema();
  for (const auto& b : nonempty) {
    if (!b->schema()->Equals(*schema, /*check_metadata=*/false)) {
      return Invalid("latest per series: the batches have different schemas");
    }
  }
  auto need = [&](const std::string& name) -> arrow::Status {
    if (schema->GetFieldIndex(name) < 0) {
      return Invalid("latest per series: no column '" + name + "' in the batches");
    }
    return arrow::Status::OK();
  };
  TIMELAKE_RETURN_NOT_OK(need(time_column));
  for (const auto& k : series_key) TIMELAKE_RETURN_NOT_OK(need(k));

  auto combined = arrow::Table::FromRecordBatches(schema, nonempty);
  if (!combined.ok()) return WithContext(combined.status(), "latest per series");
  TIMELAKE_ASSIGN_OR_RAISE(auto batch, (*combined)->CombineChunksToBatch());
  const int64_t n = batch->num_rows();

  // Sort by series ascending, then newest first: time, insertion, input row.
  arrow::Int64Builder row_builder;
  TIMELAKE_RETURN_NOT_OK(row_builder.Reserve(n));
  for (int64_t i = 0; i < n; ++i) row_builder.UnsafeAppend(i);
  std::shared_ptr<arrow::Array> rows;
  TIMELAKE_RETURN_NOT_OK(row_builder.Finish(&rows));
  constexpr char kRow[] = "__timelake_row";
  TIMELAKE_ASSIGN_OR_RAISE(auto keyed,
                           batch->AddColumn(batch->num_columns(), kRow, rows));
  std::vector<arrow::compute::SortKey> keys;
  for (const auto& k : series_key) {
    keys.emplace_back(k, arrow::compute::SortOrder::Ascending);
  }
  keys.emplace_back(time_column, arrow::compute::SortOrder::Descending);
  if (!ingest_column.empty() && schema->GetFieldIndex(ingest_column) >= 0) {
    keys.emplace_back(ingest_column, arrow::compute::SortOrder::Descending);
  }
  keys.emplace_back(kRow, arrow::compute::SortOrder::Descending);
  // Null series values sort (and group) together, first; a null insertion
  // time counts as oldest.
  arrow::compute::SortOptions options(keys);
  auto indices = arrow::compute::SortIndices(arrow::Datum(keyed), options);
  if (!indices.ok()) return WithContext(indices.status(), "latest per series");
  auto sorted = arrow::compute::Take(arrow::Datum(batch), arrow::Datum(*indices));
  if (!sorted.ok()) return WithContext(sorted.status(), "latest per series");
  const auto sorted_batch = sorted->record_batch();

  // The first row of every run of equal series keys.
  std::vector<bool> first(n, false);
  first[0] = true;
  if (series_key.empty()) {
    return sorted_batch->Slice(0, 1);
  }
  std::vector<std::shared_ptr<arrow::Array>> keys_of_series;
  for (const auto& k : series_key)
    keys_of_series.push_back(sorted_batch->GetColumnByName(k));
  if (n > 1) {
    TIMELAKE_ASSIGN_OR_RAISE(auto same, internal::SameAsNext(keys_of_series, n));
    for (int64_t i = 1; i < n; ++i) first[i] = !same->Value(i - 1);
  }
  arrow::Int64Builder take_builder;
  for (int64_t i = 0; i < n; ++i) {
    if (first[i]) TIMELAKE_RETURN_NOT_OK(take_builder.Append(i));
  }
  std::shared_ptr<arrow::Array> take;
  TIMELAKE_RETURN_NOT_OK(take_builder.Finish(&take));
  auto out = arrow::compute::Take(arrow::Datum(sorted_batch), arrow::Datum(take));
  if (!out.ok()) return WithContext(out.status(), "latest per series");
  return out->record_batch();
}

std::optional<std::string> FilePartition(std::string_view path) {
  // The folder the file sits in, when it is a "<column>_<transform>=<value>"
  // folder under data/.
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view dir = path.substr(0, slash);
  const size_t start = dir.rfind('/');
  const std::string_view folder =
      start == std::string_view::npos ? dir : dir.substr(start + 1);
  const size_t eq = folder.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return std::string(folder.substr(eq + 1));
}

}  // namespace timelake
