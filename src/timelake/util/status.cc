// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/status.h"

namespace timelake {

namespace {
constexpr char kTypeId[] = "timelake::ErrorDetail";

arrow::StatusCode CodeFor(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return arrow::StatusCode::KeyError;
    case ErrorKind::kAlreadyExists:
      return arrow::StatusCode::AlreadyExists;
    case ErrorKind::kInvalid:
    case ErrorKind::kConfig:
      return arrow::StatusCode::Invalid;
    case ErrorKind::kStorage:
      return arrow::StatusCode::IOError;
    case ErrorKind::kUnsupported:
      return arrow::StatusCode::NotImplemented;
    case ErrorKind::kCancelled:
      return arrow::StatusCode::Cancelled;
    case ErrorKind::kConflict:
    case ErrorKind::kCorrupt:
    case ErrorKind::kInternal:
      return arrow::StatusCode::UnknownError;
  }
  return arrow::StatusCode::UnknownError;
}
}  // namespace

std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return "not found";
    case ErrorKind::kAlreadyExists:
      return "already exists";
    case ErrorKind::kInvalid:
      return "invalid";
    case ErrorKind::kConflict:
      return "conflict";
    case ErrorKind::kCorrupt:
      return "corrupt";
    case ErrorKind::kStorage:
      return "storage";
    case ErrorKind::kConfig:
      return "config";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kInternal:
      return "internal";
    case ErrorKind::kCancelled:
      return "cancelled";
  }
  return "internal";
}

const char* ErrorDetail::type_id() const { return kTypeId; }

std::string ErrorDetail::ToString() const {
  std::string out(ErrorKindName(kind_));
  if (retryable_) out += ", retryable";
  return out;
}

arrow::Status MakeError(ErrorKind kind, std::string message, bool retryable) {
  return arrow::Status(CodeFor(kind), std::move(message),
                       std::make_shared<ErrorDetail>(kind, retryable));
}

ErrorKind KindOf(const arrow::Status& status) {
  if (auto detail = status.detail();
      detail && detail->type_id() == std::string_view(kTypeId)) {
    return static_cast<const ErrorDetail&>(*detail).kind();
  }
  switch (status.code()) {
    case arrow::StatusCode::IOError:
      return ErrorKind::kStorage;
    case arrow::StatusCode::Invalid:
    case arrow::StatusCode::TypeError:
    case arrow::StatusCode::IndexError:
      return ErrorKind::kInvalid;
    case arrow::StatusCode::KeyError:
      return ErrorKind::kNotFound;
    case arrow::StatusCode::AlreadyExists:
      return ErrorKind::kAlreadyExists;
    case arrow::StatusCode::NotImplemented:
      return ErrorKind::kUnsupported;
    case arrow::StatusCode::Cancelled:
      return ErrorKind::kCancelled;
    default:
      return ErrorKind::kInternal;
  }
}

bool IsRetryable(const arrow::Status& status) {
  if (auto detail = status.detail();
      detail && detail->type_id() == std::string_view(kTypeId)) {
    return static_cast<const ErrorDetail&>(*detail).retryable();
  }
  return false;
}

arrow::Status WithContext(const arrow::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return arrow::Status(status.code(), std::string(context) + ": " + status.message(),
                       status.detail());
}

}  // namespace timelake
