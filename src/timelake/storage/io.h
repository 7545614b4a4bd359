// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// arrow::io adapters over the one storage client (SPEC §2: C++ reads and
// writes Parquet through arrow::io over the C ABI, never through arrow::fs), so
// that Parquet readers and writers see objects of the warehouse as files:
//
//   auto file = StoreInputFile::Open(store, "ns/t/data/x.parquet");
//   auto reader = parquet::arrow::OpenFile(file, pool);            // ranged GETs
//
//   TIMELAKE_ASSIGN_OR_RAISE(auto out, StoreOutputStream::Open(*store, key));
//   auto writer = parquet::arrow::FileWriter::Open(schema, pool, out, ...);
//   ... writer->Close(); TIMELAKE_RETURN_NOT_OK(out->Close());    // object appears
//
// Errors are Timelake statuses (see timelake/status.h): kNotFound for a missing
// object, kStorage (retryable or not) for the client's failures, kInvalid for
// misuse (negative offsets, writing to a closed stream).

#ifndef TIMELAKE_STORAGE_IO_H_
#define TIMELAKE_STORAGE_IO_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>

#include "timelake/status.h"
#include "timelake/storage/store.h"

struct TlUpload;

namespace timelake::storage {

// A read-only random-access file over one object. Every read is one ranged GET
// (Store::GetRange, with its retries) and returns the client's buffer without a
// copy; nothing is cached but the size, which is asked once (a HEAD) on the
// first GetSize() unless the caller knows it (e.g. a manifest's
// file_size_in_bytes). Reads past the end are short, as with Arrow's own files.
//
// Thread safety: ReadAt and GetSize may be called from several threads at once
// (Arrow's contract, used by Parquet's pre-buffering); Read, Seek and Tell move
// one position and are not thread-safe.
class StoreInputFile final : public arrow::io::RandomAccessFile {
 public:
  // The object at `key` (relative to the store's root). No request is made
  // here: a missing object fails the first read or GetSize with kNotFound.
  // `size`, when given, is trusted.
  static std::shared_ptr<StoreInputFile> Open(std::shared_ptr<const Store> store,
                                              std::string key,
                                              std::optional<int64_t> size = std::nullopt);

  const std::string& key() const { return key_; }

  arrow::Status Close() override;
  bool closed() const override;
  arrow::Result<int64_t> Tell() const override;
  arrow::Status Seek(int64_t position) override;
  arrow::Result<int64_t> GetSize() override;

  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                void* out) override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes,
                                                       bool allow_short_read) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position,
                                                       int64_t nbytes) override;

 private:
  StoreInputFile(std::shared_ptr<const Store> store, std::string key,
                 std::optional<int64_t> size);

  std::shared_ptr<const Store> store_;
  std::string key_;
  mutable std::mutex mutex_;     // guards size_ and closed_
  std::optional<int64_t> size_;  // known or asked once
  bool closed_ = false;
  int64_t position_ = 0;  // for Read/Seek/Tell
};

// Options for StoreOutputStream.
struct OutputStreamOptions {
  // Bytes buffered before a part is sent. Objects up to this size are written
  // with one put on Close(); larger ones stream as a multipart upload in parts
  // of exactly this size (the last one shorter), so the stream holds at most
  // this much plus the parts in flight (tl_store_upload_part: 2). At least
  // 5 MiB, S3's minimum part size. Default: 8 MiB.
  int64_t part_size = int64_t{8} << 20;
  // Bytes at the end of the object that Tail() can still return after they
  // were sent (a Parquet writer's footer, for the head object). At most
  // part_size. Default: none beyond what is buffered.
  int64_t keep_tail = 0;
};

// A write-only stream that becomes one object, atomically: nothing is visible
// at the key until Close() succeeds, and then all of it is. Memory is bounded
// by OutputStreamOptions::part_size whatever the object's size. A stream that
// fails, is aborted (Abort()), or is destroyed without Close() leaves nothing
// at the key (the multipart upload, if any, is aborted). An existing object at
// the key is overwritten; there is no put-if-absent (data files have fresh
// UUIDv7 names).
//
// Not thread-safe (like every arrow::io::OutputStream). The Store must outlive
// the stream.
class StoreOutputStream final : public arrow::io::OutputStream {
 public:
  // Errors: kInvalid for a part size under 5 MiB.
  static arrow::Result<std::shared_ptr<StoreOutputStream>> Open(
      const Store& store, std::string key, OutputStreamOptions options = {});
  // Aborts unless Close() succeeded.
  ~StoreOutputStream() override;

  const std::string& key() const { return key_; }

  // Sends what is buffered (the last part, or the whole object in one put)
  // and completes the object. On failure the stream is aborted and the error
  // names the object. Closing a closed stream returns its first error again,
  // or OK.
  arrow::Status Close() override;
  // Discards everything written; nothing is left at the key. Idempotent.
  arrow::Status Abort() override;
  bool closed() const override { return closed_; }
  // Bytes written so far (after Close(): the object's size).
  arrow::Result<int64_t> Tell() const override { return written_; }
  // The last `max_bytes` bytes written (fewer if not kept), before Close():
  // from what is buffered and the OutputStreamOptions::keep_tail bytes kept
  // of the parts already sent.
  std::string Tail(int64_t max_bytes) const;
  // Buffers `data`, sending each part as it fills. After an error the stream
  // is aborted and every call returns that error.
  arrow::Status Write(const void* data, int64_t nbytes) override;
  using arrow::io::OutputStream::Write;
  // Does nothing: parts are sent when full, so that every part but the last
  // has the same size (S3 requires at least 5 MiB per part).
  arrow::Status Flush() override { return status_; }

 private:
  StoreOutputStream(const Store& store, std::string key, OutputStreamOptions options);
  // Sends one part, beginning the upload first if needed: the buffered bytes
  // (lent, not copied), or `data` (copied).
  arrow::Status SendBuffered();
  arrow::Status SendPart(const uint8_t* data, int64_t nbytes);
  arrow::Status Begin();
  // The buffered bytes, handed over; the stream starts a new buffer.
  arrow::Result<std::shared_ptr<arrow::Buffer>> TakeBuffered();
  std::string_view Buffered() const;
  arrow::Status Fail(arrow::Status status);
  void AbortUpload();

  const Store& store_;
  std::string key_;
  OutputStreamOptions options_;
  // At most part_size bytes, in Arrow's memory pool. Each part goes to the
  // platform as it is (tl_store_upload_part_lent), so the next part gets a
  // new buffer.
  std::shared_ptr<arrow::ResizableBuffer> buffer_;
  int64_t buffered_ = 0;
  std::string sent_tail_;  // the end of the last part sent, keep_tail bytes
  TlUpload* upload_ = nullptr;
  int64_t written_ = 0;
  bool closed_ = false;
  arrow::Status status_;  // the first error
};

}  // namespace timelake::storage

#endif  // TIMELAKE_STORAGE_IO_H_
