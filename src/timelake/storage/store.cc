// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/storage/store.h"

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "timelake_platform.h"

namespace timelake::storage {

namespace {

constexpr int kMaxAttempts = 5;

TlPutMode PlatformMode(PutMode mode) {
  return mode == PutMode::kCreate ? TL_PUT_CREATE : TL_PUT_OVERWRITE;
}

// Owns a Rust-allocated TlBytes as an arrow::Buffer, without copying.
class RustBuffer final : public arrow::Buffer {
 public:
  explicit RustBuffer(TlBytes bytes)
      : arrow::Buffer(bytes.data, static_cast<int64_t>(bytes.len)), bytes_(bytes) {}
  ~RustBuffer() override { tl_bytes_free(&bytes_); }

 private:
  TlBytes bytes_;
};

}  // namespace

TlLent Lend(const std::shared_ptr<arrow::Buffer>& buffer) {
  if (buffer == nullptr || buffer->size() == 0)
    return TlLent{nullptr, 0, nullptr, nullptr};
  return TlLent{
      buffer->data(), static_cast<size_t>(buffer->size()),
      [](void* owner) { delete static_cast<std::shared_ptr<arrow::Buffer>*>(owner); },
      new std::shared_ptr<arrow::Buffer>(buffer)};
}

namespace {

std::string TakeString(char* s) {
  if (s == nullptr) return {};
  std::string out(s);
  tl_string_free(s);
  return out;
}

// Runs `op` (returning a TlCode and filling *err) with retries of transient
// failures: exponential backoff from 50 ms with full jitter.
template <typename Op>
arrow::Status WithRetry(std::string_view context, Op&& op) {
  thread_local std::mt19937 rng(std::random_device{}());
  for (int attempt = 1;; ++attempt) {
    char* err = nullptr;
    const int code = op(&err);
    if (code == TL_OK) return arrow::Status::OK();
    if (code != TL_STORAGE_RETRYABLE || attempt >= kMaxAttempts) {
      std::string ctx(context);
      if (code == TL_STORAGE_RETRYABLE)
        ctx += " (after " + std::to_string(attempt) + " attempts)";
      return FromPlatform(code, err, ctx);
    }
    tl_string_free(err);
    const int cap_ms = 50 << attempt;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution<int>(0, cap_ms)(rng)));
  }
}

}  // namespace

arrow::Status FromPlatform(int code, char* message, std::string_view context) {
  std::string msg = TakeString(message);
  std::string full = std::string(context);
  if (!msg.empty()) full += ": " + msg;
  return FromPlatformMessage(code, std::move(full));
}

arrow::Status FromPlatformMessage(int code, std::string message) {
  switch (code) {
    case TL_OK:
      return arrow::Status::OK();
    case TL_NOT_FOUND:
      return MakeError(ErrorKind::kNotFound, std::move(message));
    case TL_ALREADY_EXISTS:
    case TL_PRECONDITION:
      return MakeError(ErrorKind::kAlreadyExists, std::move(message));
    case TL_INVALID:
      return MakeError(ErrorKind::kInvalid, std::move(message));
    case TL_STORAGE:
      return MakeError(ErrorKind::kStorage, std::move(message));
    case TL_STORAGE_RETRYABLE:
      return MakeError(ErrorKind::kStorage, std::move(message), /*retryable=*/true);
    case TL_UNSUPPORTED:
      return MakeError(ErrorKind::kUnsupported, std::move(message));
    case TL_EXECUTION:
      return MakeError(ErrorKind::kInvalid, std::move(message));
    case TL_CORRUPT:
      return MakeError(ErrorKind::kCorrupt, std::move(message));
    case TL_CANCELLED:
      return MakeError(ErrorKind::kCancelled, std::move(message));
    default:
      return MakeError(ErrorKind::kInternal, std::move(message));
  }
}

int ToPlatformCode(const arrow::Status& status) {
  if (status.ok()) return TL_OK;
  switch (KindOf(status)) {
    case ErrorKind::kNotFound:
      return TL_NOT_FOUND;
    case ErrorKind::kAlreadyExists:
      return TL_ALREADY_EXISTS;
    case ErrorKind::kInvalid:
    case ErrorKind::kConfig:
      return TL_INVALID;
    case ErrorKind::kConflict:
      return TL_EXECUTION;
    case ErrorKind::kCorrupt:
      return TL_CORRUPT;
    case ErrorKind::kStorage:
      return IsRetryable(status) ? TL_STORAGE_RETRYABLE : TL_STORAGE;
    case ErrorKind::kUnsupported:
      return TL_UNSUPPORTED;
    case ErrorKind::kInternal:
      return TL_INTERNAL;
    case ErrorKind::kCancelled:
      return TL_CANCELLED;
  }
  return TL_INTERNAL;
}

arrow::Result<std::shared_ptr<Store>> Store::Open(
    std::string_view url, const std::map<std::string, std::string>& options) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : options) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  const std::string url_s(url);
  TlStore* raw = nullptr;
  char* err = nullptr;
  const int code =
      tl_store_open(url_s.c_str(), keys.data(), values.data(), keys.size(), &raw, &err);
  if (code != TL_OK) {
    auto st = FromPlatform(code, err, "opening warehouse " + url_s);
    return MakeError(
        code == TL_STORAGE_RETRYABLE ? ErrorKind::kStorage : ErrorKind::kConfig,
        st.message(), IsRetryable(st));
  }
  std::string root = TakeString(tl_store_root_url(raw));
  while (!root.empty() && root.back() == '/') root.pop_back();
  // A store rooted at the top of its scheme ("memory:///") keeps its "//", so
  // that object URIs read "memory:///ns/table/...".
  if (!root.empty() && root.back() == ':') root += "//";
  return std::shared_ptr<Store>(new Store(raw, std::move(root)));
}

Store::~Store() { tl_store_free(store_); }

std::string Store::Uri(std::string_view key) const {
  return root_url_ + "/" + std::string(key);
}

arrow::Result<std::string> Store::KeyOf(std::string_view uri) const {
  std::string_view root = root_url_;
  if (uri.substr(0, root.size()) == root && uri.size() > root.size() &&
      uri[root.size()] == '/') {
    return std::string(uri.substr(root.size() + 1));
  }
  // file:/abs and /abs spellings of local paths written by other engines.
  if (root.substr(0, 7) == "file://") {
    std::string_view local_root = root.substr(7);  // "/abs/dir"
    std::string_view path = uri;
    if (path.substr(0, 7) == "file://") {
      path = path.substr(7);
    } else if (path.substr(0, 5) == "file:") {
      path = path.substr(5);
    }
    if (path.substr(0, local_root.size()) == local_root &&
        path.size() > local_root.size() && path[local_root.size()] == '/') {
      return std::string(path.substr(local_root.size() + 1));
    }
  }
  if (uri.find("://") == std::string_view::npos && !uri.empty() && uri[0] != '/') {
    return std::string(uri);  // already a key
  }
  return Invalid("location " + std::string(uri) + " lies outside the warehouse " +
                 root_url_);
}

arrow::Result<std::string> Store::TableKeyOf(std::string_view uri,
                                             std::string_view table_key,
                                             std::string_view recorded) const {
  auto key = KeyOf(uri);
  if (key.ok() || table_key.empty()) return key;
  while (!recorded.empty() && recorded.back() == '/') recorded.remove_suffix(1);
  if (!recorded.empty() && uri.size() > recorded.size() + 1 &&
      uri.substr(0, recorded.size()) == recorded && uri[recorded.size()] == '/') {
    return std::string(table_key) + std::string(uri.substr(recorded.size()));
  }
  // Moved again after commits made at the copy: files under the root the
  // table was at then, at the same place relative to it.
  const std::string marker = "/" + std::string(table_key) + "/";
  if (auto at = uri.find(marker);
      at != std::string_view::npos && at > 0 && uri.size() > at + marker.size()) {
    return std::string(uri.substr(at + 1));
  }
  return key;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> Store::Get(std::string_view key) const {
  const std::string k(key);
  TlBytes bytes{nullptr, 0};
  TIMELAKE_RETURN_NOT_OK(WithRetry("reading " + Uri(key), [&](char** err) {
    return tl_store_get(store_, k.c_str(), &bytes, err);
  }));
  return std::make_shared<RustBuffer>(bytes);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> Store::GetRange(std::string_view key,
                                                              uint64_t offset,
                                                              uint64_t length) const {
  const std::string k(key);
  TlBytes bytes{nullptr, 0};
  TIMELAKE_RETURN_NOT_OK(WithRetry("reading " + Uri(key), [&](char** err) {
    return tl_store_get_range(store_, k.c_str(), offset, length, &bytes, err);
  }));
  return std::make_shared<RustBuffer>(bytes);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> Store::FooterFromTail(
    std::string_view key, std::string_view tail, uint64_t file_size) const {
  const std::string k(key);
  TlBytes bytes{nullptr, 0};
  char* err = nullptr;
  const int code = tl_footer_from_tail(store_, k.c_str(),
                                       reinterpret_cast<const uint8_t*>(tail.data()),
                                       tail.size(), file_size, &bytes, &err);
  TIMELAKE_RETURN_NOT_OK(FromPlatform(code, err, "reading the footer of " + Uri(key)));
  return std::make_shared<RustBuffer>(bytes);
}

arrow::Status Store::RememberFooter(std::string_view key, uint64_t file_size,
                                    const arrow::Buffer& blob) const {
  const std::string k(key);
  char* err = nullptr;
  const int code = tl_footer_remember(store_, k.c_str(), file_size, blob.data(),
                                      static_cast<size_t>(blob.size()), &err);
  return FromPlatform(code, err, "reading the inlined footer of " + Uri(key));
}

arrow::Result<uint64_t> Store::Size(std::string_view key) const {
  TIMELAKE_ASSIGN_OR_RAISE(ObjectHead head, Head(key));
  return head.size;
}

arrow::Result<ObjectHead> Store::Head(std::string_view key) const {
  const std::string k(key);
  ObjectHead head;
  TIMELAKE_RETURN_NOT_OK(WithRetry("inspecting " + Uri(key), [&](char** err) {
    char* etag = nullptr;
    const int code = tl_store_head(store_, k.c_str(), &head.size, &etag, err);
    if (etag != nullptr) head.etag = TakeString(etag);
    return code;
  }));
  return head;
}

arrow::Status Store::Put(std::string_view key, std::string_view data,
                         PutMode mode) const {
  const std::string k(key);
  return WithRetry(PutContext(key, mode), [&](char** err) {
    return tl_store_put(store_, k.c_str(), reinterpret_cast<const uint8_t*>(data.data()),
                        data.size(), PlatformMode(mode), nullptr, nullptr, err);
  });
}

arrow::Status Store::Put(std::string_view key, std::shared_ptr<arrow::Buffer> data,
                         PutMode mode) const {
  const std::string k(key);
  return WithRetry(PutContext(key, mode), [&](char** err) {
    return tl_store_put_lent(store_, k.c_str(), Lend(data), PlatformMode(mode), nullptr,
                             nullptr, err);
  });
}

std::string Store::PutContext(std::string_view key, PutMode mode) const {
  return (mode == PutMode::kCreate ? "put-if-absent of " : "writing ") + Uri(key);
}

arrow::Result<std::string> Store::PutIfMatch(std::string_view key, std::string_view data,
                                             std::string_view etag) const {
  const std::string k(key);
  const std::string expected(etag);
  std::string new_etag;
  TIMELAKE_RETURN_NOT_OK(WithRetry("put-if-match of " + Uri(key), [&](char** err) {
    char* out = nullptr;
    const int code =
        tl_store_put(store_, k.c_str(), reinterpret_cast<const uint8_t*>(data.data()),
                     data.size(), TL_PUT_UPDATE, expected.c_str(), &out, err);
    new_etag = TakeString(out);
    return code;
  }));
  return new_etag;
}

arrow::Status Store::Delete(std::string_view key) const {
  const std::string k(key);
  return WithRetry("deleting " + Uri(key),
                   [&](char** err) { return tl_store_delete(store_, k.c_str(), err); });
}

arrow::Result<Listing> Store::List(std::string_view prefix, bool delimiter) const {
  const std::string p(prefix);
  TlListing raw{nullptr, 0, nullptr, 0};
  TIMELAKE_RETURN_NOT_OK(WithRetry("listing " + Uri(prefix), [&](char** err) {
    return tl_store_list(store_, p.c_str(), delimiter ? 1 : 0, &raw, err);
  }));
  Listing out;
  out.objects.reserve(raw.n_objects);
  for (size_t i = 0; i < raw.n_objects; ++i) {
    out.objects.push_back(
        {raw.objects[i].path, raw.objects[i].size, raw.objects[i].last_modified_ms});
  }
  for (size_t i = 0; i < raw.n_prefixes; ++i) out.prefixes.emplace_back(raw.prefixes[i]);
  tl_listing_free(&raw);
  return out;
}

}  // namespace timelake::storage
