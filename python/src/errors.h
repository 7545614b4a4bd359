// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Errors at the Python boundary. The engine reports failures as arrow::Status
// values with an ErrorKind (timelake/status.h); the binding code turns a
// failed status into a C++ StatusError, and one exception translator turns
// that into the Python class of its kind (timelake.NotFoundError, ...), with
// the message exactly as the engine wrote it and `.retryable` set. The
// classes live in Python (timelake/_errors.py) and are handed over once by
// SetErrorClasses when the package is imported.

#ifndef TIMELAKE_PYTHON_ERRORS_H_
#define TIMELAKE_PYTHON_ERRORS_H_

#include <exception>
#include <string>
#include <utility>

#include <nanobind/nanobind.h>

#include "timelake/status.h"

namespace timelake::python {

// A failed status on its way to Python. Thrown with or without the GIL; the
// translator runs with it.
class StatusError : public std::exception {
 public:
  explicit StatusError(arrow::Status status)
      : status_(std::move(status)), message_(status_.message()) {}
  const char* what() const noexcept override { return message_.c_str(); }
  const arrow::Status& status() const { return status_; }

 private:
  arrow::Status status_;
  std::string message_;
};

// Throws StatusError for a non-OK status.
inline void ThrowIfError(const arrow::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

// The value of an OK result; throws StatusError otherwise.
template <typename T>
T ValueOrThrow(arrow::Result<T> result) {
  if (!result.ok()) throw StatusError(result.status());
  return std::move(result).ValueUnsafe();
}

// The Python class name of each kind ("NotFoundError", ...).
const char* ErrorClassName(ErrorKind kind);

// Remembers the exception classes, a dict from ErrorClassName to class, plus
// "TimelakeError" for kinds without an entry. Called with the GIL held.
void SetErrorClasses(nanobind::dict classes);

// Registers the translator of StatusError.
void RegisterErrorTranslator();

}  // namespace timelake::python

#endif  // TIMELAKE_PYTHON_ERRORS_H_
