// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// An Iceberg REST catalog over a warehouse (`timelake serve`), so that
// engines that find tables through a catalog (Spark, Trino, PyIceberg's
// RestCatalog, DuckDB's `ATTACH ... (TYPE iceberg)`) find and read
// Timelake tables by name, and append to them (Spark and PyIceberg tested). The contract
// is the Iceberg REST catalog's OpenAPI spec; docs/engines.md lists the endpoints served
// and those refused. Table commits (updateTable) go through the same put-if-absent commit
// as Timelake's own writers, so appends through the catalog and direct appends (the CLI,
// the C++ and Python APIs) may run at once and nothing is lost; the head object and
// last-value index follow.
//
//   TIMELAKE_ASSIGN_OR_RAISE(Lake lake, Lake::Open("/data/warehouse"));
//   CatalogServerOptions options;
//   options.port = 8181;
//   TIMELAKE_ASSIGN_OR_RAISE(auto server, CatalogServer::Start(lake, options));
//   server->Wait();   // until Stop() from another thread
//
// Clients read and write the data and metadata files themselves, by the
// paths the table metadata holds: they need their own access to the
// warehouse's storage (no credentials are vended).

#ifndef TIMELAKE_CATALOG_SERVER_H_
#define TIMELAKE_CATALOG_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "timelake/status.h"
#include "timelake/timelake.h"

namespace timelake {

struct CatalogServerOptions {
  // The address to listen on. Anything but a loopback address serves the
  // warehouse to the network: give a token then. Default: "127.0.0.1".
  std::string host = "127.0.0.1";
  // The port; 0 takes a free one (CatalogServer::port() says which).
  // Default: 8181.
  int port = 8181;
  // When not empty, every request must carry "Authorization: Bearer
  // <token>" (else 401 NotAuthorizedException). The token is never logged.
  // Default: empty (no check).
  std::string token;
  // Request bodies over this many bytes are refused with 413 from their
  // Content-Length, before they are read; bodies without a length
  // (chunked) are refused with 411. Default: 16 MiB.
  int64_t max_body_bytes = 16 << 20;
  // Threads answering requests. Default: 4.
  int threads = 4;
  // Called (from the request threads, one call at a time) with one line per
  // request: method, path, status, milliseconds. Never headers, query
  // strings or bodies. Default: none.
  std::function<void(const std::string&)> log;
};

// A running server. Not copyable; the destructor stops it.
class CatalogServer {
 public:
  // Binds host:port and serves in background threads until Stop().
  // Errors: kInvalid (options: threads < 1, max_body_bytes < 1, a port
  // outside 0..65535), kConfig (the address cannot be bound, e.g. the port
  // is taken).
  static arrow::Result<std::unique_ptr<CatalogServer>> Start(
      Lake lake, const CatalogServerOptions& options = {});

  ~CatalogServer();
  CatalogServer(const CatalogServer&) = delete;
  CatalogServer& operator=(const CatalogServer&) = delete;

  // The port listened on.
  int port() const;
  // "http://<host>:<port>", the catalog URI clients are given.
  std::string url() const;

  // Stops accepting requests and waits for those in flight. Idempotent;
  // safe from any thread but a request's own (not from a signal handler).
  void Stop();
  // Blocks until the server has stopped.
  void Wait();

  struct Impl;

 private:
  explicit CatalogServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace timelake

#endif  // TIMELAKE_CATALOG_SERVER_H_
