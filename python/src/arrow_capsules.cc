// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "arrow_capsules.h"

#include <string>
#include <utility>

#include <arrow/c/abi.h>
#include <arrow/c/bridge.h>

#include "errors.h"

namespace nb = nanobind;

namespace timelake::python {
namespace {

constexpr const char* kSchemaCapsule = "arrow_schema";
constexpr const char* kArrayCapsule = "arrow_array";
constexpr const char* kStreamCapsule = "arrow_array_stream";

// The struct a capsule of `name` holds; TypeError when `capsule` is not one.
template <typename Struct>
Struct* CapsuleStruct(nb::handle capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule.ptr(), name)) {
    throw nb::type_error(
        (std::string("expected a PyCapsule named \"") + name + "\"").c_str());
  }
  return static_cast<Struct*>(PyCapsule_GetPointer(capsule.ptr(), name));
}

std::string TypeName(nb::handle obj) {
  return nb::cast<std::string>(nb::str(
      nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("__qualname__")));
}

// Capsule destructors: release what no consumer moved out, then free.
void DeleteSchemaCapsule(PyObject* capsule) {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(capsule, kSchemaCapsule));
  if (schema == nullptr) return;
  if (schema->release != nullptr) schema->release(schema);
  delete schema;
}

void DeleteStreamCapsule(PyObject* capsule) {
  auto* stream =
      static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(capsule, kStreamCapsule));
  if (stream == nullptr) return;
  if (stream->release != nullptr) stream->release(stream);
  delete stream;
}

}  // namespace

std::shared_ptr<arrow::Schema> ImportSchema(nb::handle obj) {
  nb::object source = nb::borrow(obj);
  if (!nb::hasattr(source, "__arrow_c_schema__") && nb::hasattr(source, "schema")) {
    source = source.attr("schema");
  }
  if (!nb::hasattr(source, "__arrow_c_schema__")) {
    throw nb::type_error(("expected an Arrow schema (an object with __arrow_c_schema__, "
                          "such as pyarrow.Schema), got " +
                          TypeName(obj))
                             .c_str());
  }
  nb::object capsule = source.attr("__arrow_c_schema__")();
  auto* c_schema = CapsuleStruct<ArrowSchema>(capsule, kSchemaCapsule);
  return ValueOrThrow(arrow::ImportSchema(c_schema));
}

std::shared_ptr<arrow::RecordBatchReader> ImportReader(nb::handle obj) {
  if (nb::hasattr(obj, "__arrow_c_stream__")) {
    nb::object capsule = obj.attr("__arrow_c_stream__")();
    auto* c_stream = CapsuleStruct<ArrowArrayStream>(capsule, kStreamCapsule);
    return ValueOrThrow(arrow::ImportRecordBatchReader(c_stream));
  }
  if (nb::hasattr(obj, "__arrow_c_array__")) {
    nb::object pair = obj.attr("__arrow_c_array__")();
    if (!nb::isinstance<nb::tuple>(pair) || nb::len(pair) != 2) {
      throw nb::type_error(
          "__arrow_c_array__ must return a (schema, array) pair of capsules");
    }
    nb::tuple capsules = nb::borrow<nb::tuple>(pair);
    auto* c_schema = CapsuleStruct<ArrowSchema>(capsules[0], kSchemaCapsule);
    auto* c_array = CapsuleStruct<ArrowArray>(capsules[1], kArrayCapsule);
    auto batch = arrow::ImportRecordBatch(c_array, c_schema);
    if (!batch.ok()) {
      throw StatusError(Invalid("importing the Arrow array of a " + TypeName(obj) +
                                " (it must be a struct array, as a record batch): " +
                                batch.status().message()));
    }
    return ValueOrThrow(arrow::RecordBatchReader::Make({*batch}, (*batch)->schema()));
  }
  throw nb::type_error(
      ("expected Arrow data (an object with __arrow_c_stream__ or "
       "__arrow_c_array__, such as a pyarrow.Table, RecordBatch or "
       "RecordBatchReader, a polars DataFrame or a DuckDB relation), got " +
       TypeName(obj))
          .c_str());
}

nb::object ExportSchemaCapsule(const arrow::Schema& schema) {
  auto c_schema = std::make_unique<ArrowSchema>();
  ThrowIfError(arrow::ExportSchema(schema, c_schema.get()));
  PyObject* capsule = PyCapsule_New(c_schema.get(), kSchemaCapsule, &DeleteSchemaCapsule);
  if (capsule == nullptr) {
    c_schema->release(c_schema.get());
    throw nb::python_error();
  }
  c_schema.release();
  return nb::steal(capsule);
}

nb::object ExportStreamCapsule(std::shared_ptr<arrow::RecordBatchReader> reader) {
  auto c_stream = std::make_unique<ArrowArrayStream>();
  ThrowIfError(arrow::ExportRecordBatchReader(std::move(reader), c_stream.get()));
  PyObject* capsule = PyCapsule_New(c_stream.get(), kStreamCapsule, &DeleteStreamCapsule);
  if (capsule == nullptr) {
    c_stream->release(c_stream.get());
    throw nb::python_error();
  }
  c_stream.release();
  return nb::steal(capsule);
}

}  // namespace timelake::python
