// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// What DataFusion asks the engine while it plans a query: which namespaces
// and tables exist, a table's schema, and which data files a scan reads. The
// answers come from the newest committed version of each table, so every
// query sees every commit made before it started.

#ifndef TIMELAKE_READ_CATALOG_H_
#define TIMELAKE_READ_CATALOG_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <arrow/record_batch.h>

#include "timelake/format/manifest.h"
#include "timelake/state/state.h"
#include "timelake_platform.h"

namespace timelake::read {

// What file pruning did for one scan of one table.
struct ScanStats {
  std::string table;              // "ns.table"
  size_t live = 0;                // data files of the current snapshot
  size_t pruned = 0;              // skipped by partition values and column bounds
  size_t read = 0;                // handed to DataFusion
  size_t merged = 0;              // of those, merged by dedup on read
  std::vector<std::string> keys;  // the keys of the files read (a delete's candidates)

  std::string ToString() const;
};

// The scans of a session's queries, for EXPLAIN ANALYZE. Thread-safe.
class ScanLog {
 public:
  void Add(ScanStats stats);
  // The scans since the last call, oldest first.
  std::vector<ScanStats> Take();

 private:
  std::mutex mu_;
  std::vector<ScanStats> scans_;
};

// The version of each table that the statement being planned reads. The
// first ask for a table loads it (or finds it loaded while the session
// started: session.cc), and every later ask of the same statement (its
// schema, then its scan) gets that version, whatever the lake's table cache
// does meanwhile. The session clears it once the statement is planned.
// Thread-safe.
class StatementVersions {
 public:
  // Keeps the first version put for a table.
  void Put(std::shared_ptr<const internal::TableState> table);
  // The version of `name` ("ns.table") this statement reads, or nullptr.
  std::shared_ptr<const internal::TableState> Get(const std::string& name) const;
  void Clear();

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const internal::TableState>> tables_;
};

// The answer to a plan_scan request (a batch as timelake_platform.h lays it
// out): the files of the current snapshot that may match the request's
// filters, newest first, and the groups of them that dedup on read merges.
// Errors: kCorrupt, kStorage, kInvalid (a bad setting value).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlanScan(
    const internal::TableState& table, std::string_view request_json,
    ScanStats* stats = nullptr);

// Checks `SET timelake.<name> = value` against the settings registry.
// Errors: kInvalid naming the setting.
arrow::Status CheckSessionSetting(std::string_view name, std::string_view value);

// A scan decided in advance (compaction): a scan of `table` reads exactly
// `files`, merged into one stream in (series…, time, insertion, commit)
// order; with `dedup`, only the last row of equal (series…, time) is kept.
// Tables without a time column are read as they are, in no order.
struct PinnedScan {
  std::shared_ptr<const internal::TableState> table;
  std::vector<format::LiveFile> files;
  bool dedup = false;
};

// The plan_scan answer of a pinned scan (a batch as timelake_platform.h
// lays it out): every file in one merge group.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> PlanPinnedScan(
    const PinnedScan& pinned);

// Callbacks for tl_session_new over `lake`; scans are recorded in `log`
// when given; with `pinned`, its table is read as PinnedScan says; with
// `version`, its table is read at that version, not the newest (a rollup
// refresh reads the snapshot it records); with `statement`, the asks of one
// statement share each table's version. The returned struct owns a context
// that its release callback frees.
TlCatalogCallbacks MakeCatalogCallbacks(
    std::shared_ptr<internal::LakeState> lake, std::shared_ptr<ScanLog> log = nullptr,
    std::shared_ptr<const PinnedScan> pinned = nullptr,
    std::shared_ptr<const internal::TableState> version = nullptr,
    std::shared_ptr<StatementVersions> statement = nullptr);

}  // namespace timelake::read

#endif  // TIMELAKE_READ_CATALOG_H_
