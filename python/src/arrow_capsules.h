// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The Arrow PyCapsule interface (the Arrow project's "Arrow PyCapsule
// Interface"): Python objects hand Arrow data to each other as PyCapsules
// named "arrow_schema", "arrow_array" and "arrow_array_stream" holding the
// structs of the Arrow C data and C stream interfaces. Importing moves the
// struct out of the capsule (its release callback then belongs to us);
// exporting makes a capsule whose destructor releases a struct nobody moved
// out. Buffers are never copied either way: pyarrow, polars and DuckDB hand
// over the memory they own, and the consumer keeps it alive through the
// struct's release callback.
//
// Every function here needs the GIL (it calls Python methods or makes
// Python objects).

#ifndef TIMELAKE_PYTHON_ARROW_CAPSULES_H_
#define TIMELAKE_PYTHON_ARROW_CAPSULES_H_

#include <memory>

#include <arrow/record_batch.h>
#include <arrow/type_fwd.h>
#include <nanobind/nanobind.h>

namespace timelake::python {

// The schema of `obj`: anything with __arrow_c_schema__ (pyarrow.Schema,
// polars.Schema), or an object whose `.schema` has one (pyarrow.Table,
// pyarrow.RecordBatch). Throws TypeError for anything else and a StatusError
// of kind kInvalid when the schema does not import.
std::shared_ptr<arrow::Schema> ImportSchema(nanobind::handle obj);

// A reader over the data of `obj`: anything with __arrow_c_stream__ (pyarrow
// Table and RecordBatchReader, polars DataFrame, DuckDB relations), or with
// __arrow_c_array__ of a struct array (pyarrow.RecordBatch), which gives a
// reader of one batch. Throws TypeError for anything else.
std::shared_ptr<arrow::RecordBatchReader> ImportReader(nanobind::handle obj);

// A new "arrow_schema" capsule holding `schema`.
nanobind::object ExportSchemaCapsule(const arrow::Schema& schema);

// A new "arrow_array_stream" capsule that reads `reader`.
nanobind::object ExportStreamCapsule(std::shared_ptr<arrow::RecordBatchReader> reader);

}  // namespace timelake::python

#endif  // TIMELAKE_PYTHON_ARROW_CAPSULES_H_
