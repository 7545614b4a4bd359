// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "streams.h"

#include <arrow/array.h>
#include <arrow/buffer.h>

#include "arrow_capsules.h"

namespace nb = nanobind;

namespace timelake::python {

nb::object ResultStream::ArrowCStream(nb::handle /*requested_schema*/) {
  if (table_ != nullptr) {
    // A TableBatchReader hands out the table's own chunks: no copy.
    return ExportStreamCapsule(std::make_shared<arrow::TableBatchReader>(table_));
  }
  if (reader_ == nullptr) {
    throw StatusError(Invalid(
        "exporting a streaming result: it was consumed already (a streaming result "
        "can be read once)"));
  }
  return ExportStreamCapsule(std::move(reader_));
}

nb::object ResultStream::ArrowCSchema() const {
  if (table_ != nullptr) return ExportSchemaCapsule(*table_->schema());
  if (reader_ == nullptr) {
    throw StatusError(
        Invalid("the schema of a streaming result: it was consumed already"));
  }
  return ExportSchemaCapsule(*reader_->schema());
}

std::optional<int64_t> ResultStream::num_rows() const {
  if (table_ == nullptr) return std::nullopt;
  return table_->num_rows();
}

std::vector<uintptr_t> ResultStream::BufferAddresses() const {
  std::vector<uintptr_t> addresses;
  if (table_ == nullptr) return addresses;
  for (const auto& column : table_->columns()) {
    for (const auto& chunk : column->chunks()) {
      for (const auto& buffer : chunk->data()->buffers) {
        addresses.push_back(
            buffer == nullptr ? 0 : reinterpret_cast<uintptr_t>(buffer->data()));
      }
    }
  }
  return addresses;
}

nb::object SchemaHolder::ArrowCSchema() const { return ExportSchemaCapsule(*schema); }

}  // namespace timelake::python
