// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// Errors. Timelake reports every failure as an arrow::Status (or the error of
// an arrow::Result<T>) carrying a Timelake detail: the ErrorKind, which tells
// the caller what to do differently, and whether retrying may help. Messages
// name the operation, the object (table, URI, snapshot id) and the cause, and
// never contain credentials. No exception crosses the API.

#ifndef TIMELAKE_STATUS_H_
#define TIMELAKE_STATUS_H_

#include <memory>
#include <string>
#include <string_view>

#include <arrow/result.h>
#include <arrow/status.h>

namespace timelake {

// One kind per thing the caller must do differently.
enum class ErrorKind {
  kNotFound,       // table, namespace, snapshot or object does not exist
  kAlreadyExists,  // table (or object) exists already
  kInvalid,        // bad name, schema, option, data or SQL
  kConflict,       // another writer won and a rebase was impossible
  kCorrupt,        // stored metadata or data that does not parse
  kStorage,        // storage failure; see IsRetryable()
  kConfig,         // bad storage or lake configuration
  kUnsupported,    // valid but not supported (yet, or by this backend)
  kInternal,       // a bug in Timelake
  kCancelled,      // the caller stopped it (Session::Interrupt); not a failure
};

// Lower-case name of a kind ("not found", "conflict", ...). The functions
// below never fail themselves and are safe from any thread.
std::string_view ErrorKindName(ErrorKind kind);

// The detail attached to every Timelake error status.
class ErrorDetail : public arrow::StatusDetail {
 public:
  ErrorDetail(ErrorKind kind, bool retryable) : kind_(kind), retryable_(retryable) {}
  const char* type_id() const override;
  std::string ToString() const override;
  ErrorKind kind() const { return kind_; }
  bool retryable() const { return retryable_; }

 private:
  ErrorKind kind_;
  bool retryable_;
};

// Makes an error status of `kind` with `message`; `retryable` is what
// IsRetryable reports (Timelake sets it on kStorage errors only). Its
// arrow::StatusCode follows the kind: kNotFound -> KeyError, kAlreadyExists
// -> AlreadyExists, kInvalid and kConfig -> Invalid, kStorage -> IOError,
// kUnsupported -> NotImplemented, kCancelled -> Cancelled, the others ->
// UnknownError.
arrow::Status MakeError(ErrorKind kind, std::string message, bool retryable = false);

// The kind of a non-OK status. Statuses without a Timelake detail (from Arrow
// itself) map by their code: IOError -> kStorage, Invalid/TypeError/IndexError
// -> kInvalid, KeyError -> kNotFound, AlreadyExists -> kAlreadyExists,
// NotImplemented -> kUnsupported, Cancelled -> kCancelled, others ->
// kInternal.
ErrorKind KindOf(const arrow::Status& status);

// Whether retrying the failed operation may succeed (transient storage error).
bool IsRetryable(const arrow::Status& status);

// Shorthands.
inline arrow::Status NotFound(std::string m) {
  return MakeError(ErrorKind::kNotFound, std::move(m));
}
inline arrow::Status AlreadyExists(std::string m) {
  return MakeError(ErrorKind::kAlreadyExists, std::move(m));
}
inline arrow::Status Invalid(std::string m) {
  return MakeError(ErrorKind::kInvalid, std::move(m));
}
inline arrow::Status Conflict(std::string m) {
  return MakeError(ErrorKind::kConflict, std::move(m));
}
inline arrow::Status Corrupt(std::string m) {
  return MakeError(ErrorKind::kCorrupt, std::move(m));
}
inline arrow::Status Unsupported(std::string m) {
  return MakeError(ErrorKind::kUnsupported, std::move(m));
}

// Prefixes the message of a non-OK status with "<context>: ", keeping its
// kind and retryable flag; an OK status is returned as it is.
arrow::Status WithContext(const arrow::Status& status, std::string_view context);

}  // namespace timelake

#define TIMELAKE_RETURN_NOT_OK(expr) ARROW_RETURN_NOT_OK(expr)
#define TIMELAKE_ASSIGN_OR_RAISE(lhs, rexpr) ARROW_ASSIGN_OR_RAISE(lhs, rexpr)

#endif  // TIMELAKE_STATUS_H_
