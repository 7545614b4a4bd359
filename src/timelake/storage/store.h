// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// The engine's view of the one storage client (the Rust crate's object_store,
// reached through timelake_platform.h). Keys are relative to the warehouse
// root. Transient failures are retried here with exponential backoff and
// jitter; everything above sees either success or a final error whose kind
// says what happened.

#ifndef TIMELAKE_STORAGE_STORE_H_
#define TIMELAKE_STORAGE_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/buffer.h>

#include "timelake/status.h"

struct TlStore;
struct TlLent;

namespace timelake::storage {

struct ObjectMeta {
  std::string key;
  uint64_t size = 0;
  int64_t last_modified_ms = 0;
};

// What a HEAD request tells about an object.
struct ObjectHead {
  uint64_t size = 0;
  // The backend's version tag, for PutIfMatch; absent where the backend has
  // none.
  std::optional<std::string> etag;
};

struct Listing {
  std::vector<ObjectMeta> objects;
  std::vector<std::string> prefixes;  // with a delimiter: sub-folders
};

enum class PutMode { kOverwrite, kCreate };

class Store {
 public:
  // Opens the store of a warehouse URL. Errors: kConfig.
  static arrow::Result<std::shared_ptr<Store>> Open(
      std::string_view url, const std::map<std::string, std::string>& options);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // "file:///abs/dir", "s3://bucket/prefix", "memory:///" (no trailing '/').
  const std::string& root_url() const { return root_url_; }
  // The absolute URI of a key.
  std::string Uri(std::string_view key) const;
  // The key of an absolute URI (or of a key given as is), or kInvalid when the
  // URI lies outside the warehouse.
  arrow::Result<std::string> KeyOf(std::string_view uri) const;
  // The key of `uri`, a file of the table found at `table_key` whose
  // metadata records the location `recorded`: KeyOf(uri) when that lies in
  // the warehouse (other engines' absolute paths stay valid where they are);
  // else, for a table copied or moved here, the same file below where the
  // table is found: `uri` below `recorded`, or below another root at the
  // same relative path (".../<table_key>/..."). Errors: kInvalid, as KeyOf.
  arrow::Result<std::string> TableKeyOf(std::string_view uri, std::string_view table_key,
                                        std::string_view recorded) const;

  // Errors: kNotFound when absent, kStorage.
  arrow::Result<std::shared_ptr<arrow::Buffer>> Get(std::string_view key) const;
  arrow::Result<std::shared_ptr<arrow::Buffer>> GetRange(std::string_view key,
                                                         uint64_t offset,
                                                         uint64_t length) const;
  arrow::Result<uint64_t> Size(std::string_view key) const;
  // Size and etag. Errors: kNotFound when absent, kStorage.
  arrow::Result<ObjectHead> Head(std::string_view key) const;
  // kCreate fails with kAlreadyExists when the key exists (put-if-absent).
  // Payloads over 8 MiB written with kOverwrite go up in parts.
  arrow::Status Put(std::string_view key, std::string_view data,
                    PutMode mode = PutMode::kOverwrite) const;
  // Put of `data` without a copy: the store holds a reference until it is
  // written. For large objects (a data file, the head object), whose copies
  // would otherwise come and go in the allocator's arenas.
  arrow::Status Put(std::string_view key, std::shared_ptr<arrow::Buffer> data,
                    PutMode mode = PutMode::kOverwrite) const;
  // Replaces the object only while its etag is still `etag` (put-if-match,
  // S3 `If-Match`) and returns the new etag (empty when the backend reports
  // none). Errors: kAlreadyExists when the object changed or is gone (the
  // precondition failed; as with kCreate, a retried request whose first try
  // landed fails so too), kUnsupported where the backend has no conditional
  // update (the local file system), kStorage.
  arrow::Result<std::string> PutIfMatch(std::string_view key, std::string_view data,
                                        std::string_view etag) const;
  // Missing objects are fine.
  arrow::Status Delete(std::string_view key) const;
  arrow::Result<Listing> List(std::string_view prefix, bool delimiter) const;

  // Parquet footers held in memory for every session on this store (see
  // tl_footer_from_tail in timelake_platform.h). The self-contained footer
  // blob of the data file at `key` of `file_size` bytes, made from its last
  // bytes `tail`, or an empty buffer when `tail` does not reach back to the
  // page indexes; its metadata is cached. Errors: kInvalid (not a footer).
  arrow::Result<std::shared_ptr<arrow::Buffer>> FooterFromTail(std::string_view key,
                                                               std::string_view tail,
                                                               uint64_t file_size) const;
  // Caches the metadata of a footer blob of the file at `key`. Errors:
  // kInvalid (a blob that does not parse).
  arrow::Status RememberFooter(std::string_view key, uint64_t file_size,
                               const arrow::Buffer& blob) const;

  TlStore* raw() const { return store_; }

 private:
  Store(TlStore* store, std::string root_url)
      : store_(store), root_url_(std::move(root_url)) {}
  // "writing <uri>", or "put-if-absent of <uri>" for kCreate.
  std::string PutContext(std::string_view key, PutMode mode) const;

  TlStore* store_;
  std::string root_url_;
};

// Converts a platform status code and message (owned by Rust, freed here)
// into a Timelake status "<context>: <message>". TL_EXECUTION becomes
// kInvalid, TL_CORRUPT kCorrupt, TL_STORAGE_RETRYABLE a retryable kStorage.
arrow::Status FromPlatform(int code, char* message, std::string_view context);
// The same for a message the caller keeps: a status with `message` as is.
arrow::Status FromPlatformMessage(int code, std::string message);

// `buffer` lent to the platform (TlLent): a reference it holds until it
// releases it. Each call lends one more reference.
TlLent Lend(const std::shared_ptr<arrow::Buffer>& buffer);

// The TlCode of a Timelake status, for a callback's sink (tl_sink_set_code):
// the inverse of FromPlatform where one exists (kConflict and kConfig, which
// the platform has no code for, become TL_EXECUTION and TL_INVALID).
int ToPlatformCode(const arrow::Status& status);

}  // namespace timelake::storage

#endif  // TIMELAKE_STORAGE_STORE_H_
