// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/storage/io.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "timelake_platform.h"

namespace timelake::storage {

namespace {

constexpr int64_t kMinPartSize = int64_t{5} << 20;

std::string Str(int64_t v) { return std::to_string(v); }

}  // namespace

// --- StoreInputFile ------------------------------------------------------------

StoreInputFile::StoreInputFile(std::shared_ptr<const Store> store, std::string key,
                               std::optional<int64_t> size)
    : store_(std::move(store)), key_(std::move(key)), size_(size) {}

std::shared_ptr<StoreInputFile> StoreInputFile::Open(std::shared_ptr<const Store> store,
                                                     std::string key,
                                                     std::optional<int64_t> size) {
  return std::shared_ptr<StoreInputFile>(
      new StoreInputFile(std::move(store), std::move(key), size));
}

arrow::Status StoreInputFile::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  return arrow::Status::OK();
}

bool StoreInputFile::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

arrow::Result<int64_t> StoreInputFile::Tell() const {
  if (closed()) return Invalid("reading " + store_->Uri(key_) + ": file is closed");
  return position_;
}

arrow::Status StoreInputFile::Seek(int64_t position) {
  if (closed()) return Invalid("reading " + store_->Uri(key_) + ": file is closed");
  if (position < 0) {
    return Invalid("reading " + store_->Uri(key_) + ": seek to negative offset " +
                   Str(position));
  }
  position_ = position;
  return arrow::Status::OK();
}

arrow::Result<int64_t> StoreInputFile::GetSize() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return Invalid("reading " + store_->Uri(key_) + ": file is closed");
  // Asked under the lock, so that concurrent first callers make one request.
  if (!size_) {
    TIMELAKE_ASSIGN_OR_RAISE(uint64_t size, store_->Size(key_));
    size_ = static_cast<int64_t>(size);
  }
  return *size_;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> StoreInputFile::ReadAt(
    int64_t position, int64_t nbytes, bool allow_short_read) {
  std::optional<int64_t> size;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return Invalid("reading " + store_->Uri(key_) + ": file is closed");
    size = size_;
  }
  if (position < 0 || nbytes < 0) {
    return Invalid("reading " + store_->Uri(key_) + ": invalid range of " + Str(nbytes) +
                   " bytes at offset " + Str(position));
  }
  std::shared_ptr<arrow::Buffer> buffer;
  if (nbytes == 0 || (size && position >= *size)) {
    // Nothing to read: no request.
    buffer = std::make_shared<arrow::Buffer>(nullptr, 0);
  } else {
    TIMELAKE_ASSIGN_OR_RAISE(buffer,
                             store_->GetRange(key_, static_cast<uint64_t>(position),
                                              static_cast<uint64_t>(nbytes)));
  }
  if (!allow_short_read && buffer->size() < nbytes) {
    return Corrupt("reading " + store_->Uri(key_) + ": expected " + Str(nbytes) +
                   " bytes at offset " + Str(position) + ", the object has " +
                   Str(buffer->size()) + " (truncated?)");
  }
  return buffer;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> StoreInputFile::ReadAt(int64_t position,
                                                                     int64_t nbytes) {
  return ReadAt(position, nbytes, /*allow_short_read=*/true);
}

arrow::Result<int64_t> StoreInputFile::ReadAt(int64_t position, int64_t nbytes,
                                              bool allow_short_read, void* out) {
  TIMELAKE_ASSIGN_OR_RAISE(auto buffer, ReadAt(position, nbytes, allow_short_read));
  if (buffer->size() > 0) std::memcpy(out, buffer->data(), buffer->size());
  return buffer->size();
}

arrow::Result<int64_t> StoreInputFile::ReadAt(int64_t position, int64_t nbytes,
                                              void* out) {
  return ReadAt(position, nbytes, /*allow_short_read=*/true, out);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> StoreInputFile::Read(int64_t nbytes) {
  TIMELAKE_ASSIGN_OR_RAISE(auto buffer, ReadAt(position_, nbytes));
  position_ += buffer->size();
  return buffer;
}

arrow::Result<int64_t> StoreInputFile::Read(int64_t nbytes, void* out) {
  TIMELAKE_ASSIGN_OR_RAISE(int64_t n, ReadAt(position_, nbytes, out));
  position_ += n;
  return n;
}

// --- StoreOutputStream ---------------------------------------------------------

StoreOutputStream::StoreOutputStream(const Store& store, std::string key,
                                     OutputStreamOptions options)
    : store_(store), key_(std::move(key)), options_(options) {
  set_mode(arrow::io::FileMode::WRITE);
}

arrow::Result<std::shared_ptr<StoreOutputStream>> StoreOutputStream::Open(
    const Store& store, std::string key, OutputStreamOptions options) {
  if (options.keep_tail < 0 || options.keep_tail > options.part_size) {
    return Invalid("writing " + store.Uri(key) + ": tail of " + Str(options.keep_tail) +
                   " bytes is not within the part size of " + Str(options.part_size));
  }
  if (options.part_size < kMinPartSize) {
    return Invalid("writing " + store.Uri(key) + ": part size " + Str(options.part_size) +
                   " is under the minimum of " + Str(kMinPartSize) + " bytes");
  }
  return std::shared_ptr<StoreOutputStream>(
      new StoreOutputStream(store, std::move(key), options));
}

StoreOutputStream::~StoreOutputStream() { AbortUpload(); }

void StoreOutputStream::AbortUpload() {
  if (upload_ == nullptr) return;
  // Best effort: a failed abort leaves parts that S3 lifecycle rules expire,
  // but never an object.
  tl_store_upload_abort(upload_, nullptr);
  upload_ = nullptr;
}

arrow::Status StoreOutputStream::Fail(arrow::Status status) {
  status_ = status;
  AbortUpload();
  buffer_.reset();
  buffered_ = 0;
  return status;
}

std::string_view StoreOutputStream::Buffered() const {
  if (buffered_ == 0) return {};
  return {reinterpret_cast<const char*>(buffer_->data()), static_cast<size_t>(buffered_)};
}

arrow::Result<std::shared_ptr<arrow::Buffer>> StoreOutputStream::TakeBuffered() {
  if (buffered_ == 0) return std::make_shared<arrow::Buffer>(nullptr, 0);
  // Within the capacity: sets the size, moves nothing.
  TIMELAKE_RETURN_NOT_OK(buffer_->Resize(buffered_, /*shrink_to_fit=*/false));
  buffered_ = 0;
  return std::shared_ptr<arrow::Buffer>(std::exchange(buffer_, nullptr));
}

arrow::Status StoreOutputStream::Begin() {
  if (upload_ != nullptr) return arrow::Status::OK();
  char* err = nullptr;
  const int code = tl_store_upload_begin(store_.raw(), key_.c_str(), &upload_, &err);
  if (code == TL_OK) return arrow::Status::OK();
  upload_ = nullptr;
  return FromPlatform(code, err, "writing " + store_.Uri(key_));
}

arrow::Status StoreOutputStream::SendBuffered() {
  TIMELAKE_RETURN_NOT_OK(Begin());
  if (options_.keep_tail > 0) {
    const std::string_view part = Buffered();
    sent_tail_.assign(
        part.substr(part.size() - std::min<size_t>(part.size(), options_.keep_tail)));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto part, TakeBuffered());
  char* err = nullptr;
  const int code = tl_store_upload_part_lent(upload_, Lend(part), &err);
  return FromPlatform(code, err, "writing " + store_.Uri(key_));
}

arrow::Status StoreOutputStream::SendPart(const uint8_t* data, int64_t nbytes) {
  TIMELAKE_RETURN_NOT_OK(Begin());
  char* err = nullptr;
  const int code = tl_store_upload_part(upload_, data, static_cast<size_t>(nbytes), &err);
  if (code == TL_OK && options_.keep_tail > 0) {
    const int64_t keep = std::min(nbytes, options_.keep_tail);
    sent_tail_.assign(reinterpret_cast<const char*>(data) + (nbytes - keep),
                      static_cast<size_t>(keep));
  }
  return FromPlatform(code, err, "writing " + store_.Uri(key_));
}

std::string StoreOutputStream::Tail(int64_t max_bytes) const {
  const auto want = static_cast<size_t>(std::max<int64_t>(0, max_bytes));
  const std::string_view buffered = Buffered();
  if (buffered.size() >= want)
    return std::string(buffered.substr(buffered.size() - want));
  const size_t from_sent = std::min(sent_tail_.size(), want - buffered.size());
  return sent_tail_.substr(sent_tail_.size() - from_sent) + std::string(buffered);
}

arrow::Status StoreOutputStream::Write(const void* data, int64_t nbytes) {
  if (!status_.ok()) return status_;
  if (closed_) return Invalid("writing " + store_.Uri(key_) + ": stream is closed");
  if (nbytes < 0) {
    return Invalid("writing " + store_.Uri(key_) + ": negative length " + Str(nbytes));
  }
  const auto* bytes = static_cast<const uint8_t*>(data);
  const int64_t part = options_.part_size;
  int64_t left = nbytes;
  while (left > 0) {
    if (buffered_ == 0 && left >= part) {
      // A whole part straight from the caller's memory (copied by the call).
      if (auto st = SendPart(bytes, part); !st.ok()) return Fail(st);
      bytes += part;
      left -= part;
      continue;
    }
    const int64_t take = std::min(left, part - buffered_);
    // The buffer grows by doubling, up to a part: a small object takes
    // little memory.
    const int64_t need = buffered_ + take;
    if (buffer_ == nullptr || buffer_->capacity() < need) {
      const int64_t capacity =
          std::min(part, std::max({need, int64_t{64} << 10,
                                   buffer_ == nullptr ? 0 : 2 * buffer_->capacity()}));
      if (buffer_ == nullptr) {
        auto made = arrow::AllocateResizableBuffer(0);
        if (!made.ok()) return Fail(made.status());
        buffer_ = std::move(*made);
      }
      if (auto st = buffer_->Reserve(capacity); !st.ok()) return Fail(st);
    }
    std::memcpy(buffer_->mutable_data() + buffered_, bytes, static_cast<size_t>(take));
    buffered_ += take;
    bytes += take;
    left -= take;
    if (buffered_ == part) {
      if (auto st = SendBuffered(); !st.ok()) return Fail(st);
    }
  }
  written_ += nbytes;
  return arrow::Status::OK();
}

arrow::Status StoreOutputStream::Close() {
  if (closed_) return status_;
  closed_ = true;
  if (!status_.ok()) return status_;
  if (upload_ == nullptr) {
    // The whole object fits one part: one atomic put, of the buffer itself.
    auto whole = TakeBuffered();
    if (!whole.ok()) return Fail(whole.status());
    if (auto st = store_.Put(key_, std::move(*whole)); !st.ok()) return Fail(st);
    return arrow::Status::OK();
  }
  if (buffered_ > 0) {
    if (auto st = SendBuffered(); !st.ok()) return Fail(st);
  }
  buffer_.reset();
  char* err = nullptr;
  // Frees the upload whatever the outcome (and aborts it on failure).
  const int code = tl_store_upload_finish(upload_, nullptr, &err);
  upload_ = nullptr;
  if (code != TL_OK) return Fail(FromPlatform(code, err, "writing " + store_.Uri(key_)));
  return arrow::Status::OK();
}

arrow::Status StoreOutputStream::Abort() {
  closed_ = true;
  buffer_.reset();
  buffered_ = 0;
  if (upload_ == nullptr) return arrow::Status::OK();
  char* err = nullptr;
  const int code = tl_store_upload_abort(upload_, &err);
  upload_ = nullptr;
  return FromPlatform(code, err, "aborting the upload of " + store_.Uri(key_));
}

}  // namespace timelake::storage
