// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "errors.h"

namespace nb = nanobind;

namespace timelake::python {
namespace {

// The classes handed over by SetErrorClasses. A new reference that is never
// released: the translator may run until the interpreter is gone.
PyObject* error_classes = nullptr;

void Translate(const std::exception_ptr& error, void*) {
  try {
    std::rethrow_exception(error);
  } catch (const StatusError& e) {
    const arrow::Status& status = e.status();
    const ErrorKind kind = KindOf(status);
    PyObject* cls = nullptr;
    if (error_classes != nullptr) {
      cls = PyDict_GetItemString(error_classes, ErrorClassName(kind));
      if (cls == nullptr) cls = PyDict_GetItemString(error_classes, "TimelakeError");
    }
    if (cls == nullptr) cls = PyExc_RuntimeError;
    nb::object instance;
    try {
      instance = nb::borrow(cls)(nb::str(e.what()));
      if (cls != PyExc_RuntimeError) {
        instance.attr("kind") = nb::str(std::string(ErrorKindName(kind)).c_str());
        instance.attr("retryable") = nb::bool_(IsRetryable(status));
      }
    } catch (nb::python_error& failed) {
      failed.restore();
      return;
    }
    PyErr_SetObject(cls, instance.ptr());
  }
}

}  // namespace

const char* ErrorClassName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return "NotFoundError";
    case ErrorKind::kAlreadyExists:
      return "AlreadyExistsError";
    case ErrorKind::kInvalid:
      return "InvalidError";
    case ErrorKind::kConflict:
      return "ConflictError";
    case ErrorKind::kCorrupt:
      return "CorruptError";
    case ErrorKind::kStorage:
      return "StorageError";
    case ErrorKind::kConfig:
      return "ConfigError";
    case ErrorKind::kUnsupported:
      return "UnsupportedError";
    case ErrorKind::kInternal:
      return "InternalError";
    case ErrorKind::kCancelled:
      // Python has no Session::Interrupt, so no call of its ends this way;
      // the base class (kind "cancelled") is exact enough.
      return "TimelakeError";
  }
  return "TimelakeError";
}

void SetErrorClasses(nb::dict classes) {
  PyObject* previous = error_classes;
  error_classes = classes.release().ptr();
  Py_XDECREF(previous);
}

void RegisterErrorTranslator() { nb::register_exception_translator(&Translate); }

}  // namespace timelake::python
