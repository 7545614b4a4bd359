// Copyright 2026 The Timelake Authors. Apache-2.0.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <future>
#include <string>
#include <string_view>
#include <vector>

#include <arrow/c/bridge.h>
#include <arrow/record_batch.h>
#include <arrow/scalar.h>
#include <arrow/table.h>

#include "timelake/read/catalog.h"
#include "timelake/read/session.h"
#include "timelake/settings.h"
#include "timelake/state/state.h"
#include "timelake/storage/store.h"
#include "timelake/write/lvi.h"
#include "timelake_platform.h"

namespace timelake {

namespace {

// A SQL identifier in double quotes.
std::string Quote(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// `SET timelake.read-dedup = false` and `SHOW timelake.read-dedup`, the
// spelling of the table properties and of --set, as the SQL parser takes
// them (a '-' ends an identifier there): hyphens in the timelake.* name
// become underscores. Any other statement is returned unchanged.
std::string NormalizeSettingName(std::string_view sql) {
  const auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  const auto starts_with = [&](size_t at, std::string_view word) {
    if (sql.size() < at + word.size()) return false;
    for (size_t i = 0; i < word.size(); ++i) {
      if (lower(sql[at + i]) != word[i]) return false;
    }
    return true;
  };
  const auto is_space = [](char c) {
    return std::isspace(static_cast<unsigned char>(c));
  };
  size_t at = 0;
  while (at < sql.size() && is_space(sql[at])) ++at;
  if (starts_with(at, "set") && at + 3 < sql.size() && is_space(sql[at + 3])) {
    at += 3;
  } else if (starts_with(at, "show") && at + 4 < sql.size() && is_space(sql[at + 4])) {
    at += 4;
  } else {
    return std::string(sql);
  }
  while (at < sql.size() && is_space(sql[at])) ++at;
  if (!starts_with(at, "timelake.")) return std::string(sql);
  std::string out(sql);
  for (size_t i = at;
       i < out.size() && !is_space(out[i]) && out[i] != '=' && out[i] != ';'; ++i) {
    if (out[i] == '-') out[i] = '_';
  }
  return out;
}

}  // namespace

namespace internal {

namespace {

// The result stream of tl_session_sql as a RecordBatchReader whose errors
// keep their kind (tl_stream_error_code): Arrow's ImportRecordBatchReader
// would turn every one into an IOError.
class PlatformStream : public arrow::RecordBatchReader {
 public:
  // Takes ownership of `*stream` (marked released).
  static arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Import(
      struct ArrowArrayStream* stream) {
    std::shared_ptr<PlatformStream> reader(new PlatformStream(stream));
    struct ArrowSchema c_schema;
    TIMELAKE_RETURN_NOT_OK(
        reader->Check(reader->stream_.get_schema(&reader->stream_, &c_schema)));
    TIMELAKE_ASSIGN_OR_RAISE(reader->schema_, arrow::ImportSchema(&c_schema));
    return reader;
  }
  ~PlatformStream() override { Release(); }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    *batch = nullptr;
    if (stream_.release == nullptr) return arrow::Status::OK();  // closed
    struct ArrowArray c_array;
    TIMELAKE_RETURN_NOT_OK(Check(stream_.get_next(&stream_, &c_array)));
    if (c_array.release == nullptr) return arrow::Status::OK();  // the end
    TIMELAKE_ASSIGN_OR_RAISE(*batch, arrow::ImportRecordBatch(&c_array, schema_));
    return arrow::Status::OK();
  }
  arrow::Status Close() override {
    Release();
    return arrow::Status::OK();
  }

 private:
  explicit PlatformStream(struct ArrowArrayStream* stream) : stream_(*stream) {
    stream->release = nullptr;
  }
  void Release() {
    if (stream_.release != nullptr) stream_.release(&stream_);
    stream_.release = nullptr;
  }
  // The status of a stream callback's errno: the message get_last_error
  // gives (as Arrow's import reports it) with the kind of its TlCode.
  arrow::Status Check(int errno_like) {
    if (errno_like == 0) return arrow::Status::OK();
    const char* text = stream_.get_last_error(&stream_);
    const int code = tl_stream_error_code(&stream_);
    return storage::FromPlatformMessage(code == TL_OK ? TL_INTERNAL : code,
                                        text != nullptr ? text : "query stream failed");
  }

  struct ArrowArrayStream stream_;
  std::shared_ptr<arrow::Schema> schema_;
};

// A result stream that owns the session it comes from and, given the table
// schema, aligns its batches to it (field ids, exact types).
class MergedReader : public arrow::RecordBatchReader {
 public:
  MergedReader(std::unique_ptr<SessionState> session,
               std::shared_ptr<arrow::RecordBatchReader> inner,
               std::shared_ptr<arrow::Schema> schema, std::string context)
      : session_(std::move(session)),
        inner_(std::move(inner)),
        schema_(std::move(schema)),
        context_(std::move(context)) {}
  ~MergedReader() override {
    inner_.reset();  // the stream goes before its session
  }
  std::shared_ptr<arrow::Schema> schema() const override {
    return schema_ != nullptr ? schema_ : inner_->schema();
  }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    std::shared_ptr<arrow::RecordBatch> next;
    auto st = inner_->ReadNext(&next);
    if (!st.ok()) return WithContext(st, context_);
    if (next == nullptr) {
      *batch = nullptr;
      return arrow::Status::OK();
    }
    if (schema_ == nullptr) {
      *batch = std::move(next);
      return arrow::Status::OK();
    }
    auto aligned = AlignBatch(*next, *schema_);
    if (!aligned.ok()) return WithContext(aligned.status(), context_);
    *batch = std::move(*aligned);
    return arrow::Status::OK();
  }

 private:
  std::unique_ptr<SessionState> session_;
  std::shared_ptr<arrow::RecordBatchReader> inner_;
  std::shared_ptr<arrow::Schema> schema_;
  std::string context_;
};

}  // namespace

namespace {

// Runs `sql` on a session of its own over `lake` (pinning `pinned`'s table to
// its files when given; scans logged in `log` when given); the reader owns
// the session and aligns batches to `schema` when given.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> RunInternal(
    std::shared_ptr<LakeState> lake, std::shared_ptr<const read::PinnedScan> pinned,
    std::shared_ptr<read::ScanLog> log, const std::string& sql,
    std::shared_ptr<arrow::Schema> schema, const std::string& context,
    std::shared_ptr<const TableState> version = nullptr, uint32_t partitions = 1) {
  auto state = std::make_unique<SessionState>();
  state->lake = lake;
  char* err = nullptr;
  // One partition by default: a merge is one sorted stream anyway, and this
  // work runs beside the caller's own.
  const int code =
      tl_session_new(lake->store->raw(),
                     read::MakeCatalogCallbacks(lake, std::move(log), std::move(pinned),
                                                std::move(version)),
                     partitions, &state->session, &err);
  TIMELAKE_RETURN_NOT_OK(storage::FromPlatform(code, err, context));
  // Maintenance and deletes read files they then replace: caching their
  // blocks would only push out the blocks queries read.
  tl_session_bypass_cache(state->session);
  // The engine's own queries read tables, never rollups in their place.
  const int set =
      tl_session_set_option(state->session, "timelake.rollup_routing", "false", &err);
  TIMELAKE_RETURN_NOT_OK(storage::FromPlatform(set, err, context));
  struct ArrowArrayStream stream;
  const int rc = tl_session_sql(state->session, sql.c_str(), &stream, &err);
  if (rc != TL_OK) return storage::FromPlatform(rc, err, context);
  auto reader = PlatformStream::Import(&stream);
  if (!reader.ok()) return WithContext(reader.status(), context);
  return std::make_shared<MergedReader>(std::move(state), *reader, std::move(schema),
                                        context);
}

// A predicate a user wrote, in parentheses; the newline ends a trailing
// -- comment in it.
std::string Parenthesized(const std::string& predicate) {
  return "(" + predicate + "\n)";
}

std::string FromOf(const TableName& name) {
  return Quote(name.ns()) + "." + Quote(name.name());
}

// The one row of `n` counts a result holds.
arrow::Result<std::vector<int64_t>> ReadCounts(arrow::RecordBatchReader* reader, int n) {
  TIMELAKE_ASSIGN_OR_RAISE(auto table, reader->ToTable());
  if (table->num_rows() != 1 || table->num_columns() != n) {
    return MakeError(ErrorKind::kInternal,
                     "a count gave " + std::to_string(table->num_rows()) + " rows");
  }
  std::vector<int64_t> counts;
  for (int c = 0; c < n; ++c) {
    TIMELAKE_ASSIGN_OR_RAISE(auto scalar, table->column(c)->GetScalar(0));
    if (scalar->type->id() != arrow::Type::INT64 || !scalar->is_valid)
      return MakeError(ErrorKind::kInternal, "a count gave " + scalar->ToString());
    counts.push_back(static_cast<const arrow::Int64Scalar&>(*scalar).value);
  }
  return counts;
}

std::shared_ptr<read::PinnedScan> Pin(std::shared_ptr<const TableState> table,
                                      std::vector<format::LiveFile> files, bool dedup) {
  auto pinned = std::make_shared<read::PinnedScan>();
  pinned->table = std::move(table);
  pinned->files = std::move(files);
  pinned->dedup = dedup;
  return pinned;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> MergeFiles(
    std::shared_ptr<const TableState> table, std::vector<format::LiveFile> files,
    bool dedup, const std::string& drop_where) {
  const std::string context =
      "merging " + std::to_string(files.size()) + " files of " + table->name.ToString();
  std::string sql = "SELECT * FROM " + FromOf(table->name);
  if (!drop_where.empty()) sql += " WHERE " + Parenthesized(drop_where) + " IS NOT TRUE";
  const auto& contract = table->contract;
  if (contract.time_column) {
    // The merge's own order (nulls first), so DataFusion adds no sort.
    std::string order;
    for (const auto& k : contract.series_key) order += Quote(k) + " NULLS FIRST, ";
    order += Quote(*contract.time_column) + " NULLS FIRST";
    if (!contract.ingest_column.empty() &&
        table->schema->GetFieldIndex(contract.ingest_column) >= 0) {
      order += ", " + Quote(contract.ingest_column) + " NULLS FIRST";
    }
    sql += " ORDER BY " + order;
  }
  auto lake = table->lake;
  auto schema = table->schema;
  return RunInternal(std::move(lake), Pin(std::move(table), std::move(files), dedup),
                     nullptr, sql, std::move(schema), context);
}

arrow::Result<PinnedCount> CountPinned(std::shared_ptr<const TableState> table,
                                       std::vector<format::LiveFile> files, bool dedup,
                                       const std::string& where, bool with_total) {
  const std::string context =
      "counting the matching rows of " + std::to_string(files.size()) + " files";
  // Without the total, the predicate filters the scan, which then skips row
  // groups by their statistics.
  const std::string sql = with_total
                              ? "SELECT count(*) FILTER (WHERE " + Parenthesized(where) +
                                    "), count(*) FROM " + FromOf(table->name)
                              : "SELECT count(*) FROM " + FromOf(table->name) +
                                    " WHERE " + Parenthesized(where);
  auto lake = table->lake;
  TIMELAKE_ASSIGN_OR_RAISE(
      auto reader,
      RunInternal(std::move(lake), Pin(std::move(table), std::move(files), dedup),
                  nullptr, sql, nullptr, context));
  auto counts = ReadCounts(reader.get(), with_total ? 2 : 1);
  if (!counts.ok()) return WithContext(counts.status(), context);
  PinnedCount out;
  out.matching = (*counts)[0];
  if (with_total) out.total = (*counts)[1];
  return out;
}

arrow::Result<MatchCount> CountMatches(std::shared_ptr<LakeState> lake,
                                       const TableName& table, const std::string& where) {
  const std::string context = "counting the matching rows";
  auto log = std::make_shared<read::ScanLog>();
  const std::string sql =
      "SELECT count(*) FROM " + FromOf(table) + " WHERE " + Parenthesized(where);
  TIMELAKE_ASSIGN_OR_RAISE(
      auto reader, RunInternal(std::move(lake), nullptr, log, sql, nullptr, context));
  MatchCount out;
  auto count = ReadCounts(reader.get(), 1);
  if (!count.ok()) return WithContext(count.status(), context);
  out.rows = (*count)[0];
  const std::string name = table.ToString();
  for (auto& scan : log->Take()) {
    if (scan.table != name) continue;  // a subquery's table
    for (auto& key : scan.keys) out.files.push_back(std::move(key));
  }
  return out;
}

std::string LatestSql(const TableState& table, const std::string& unless) {
  const auto& contract = table.contract;
  std::string order = Quote(*contract.time_column) + " DESC";
  if (!contract.ingest_column.empty())
    order += ", " + Quote(contract.ingest_column) + " DESC";
  std::string from = FromOf(table.name);
  if (!unless.empty()) from += " WHERE " + Parenthesized(unless) + " IS NOT TRUE";
  // With no series key the whole table is one series.
  if (contract.series_key.empty())
    return "SELECT * FROM " + from + " ORDER BY " + order + " LIMIT 1";
  std::string partition;
  for (const auto& k : contract.series_key)
    partition += (partition.empty() ? "" : ", ") + Quote(k);
  return "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY " + partition +
         " ORDER BY " + order + ") AS " + kLatestRowNumber + " FROM " + from +
         ") WHERE " + kLatestRowNumber + " = 1 ORDER BY " + partition;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> LatestUnless(
    std::shared_ptr<const TableState> table, const std::string& unless) {
  const std::string context = "finding the newest rows that stay";
  TIMELAKE_ASSIGN_OR_RAISE(
      auto reader, RunInternal(table->lake, nullptr, nullptr, LatestSql(*table, unless),
                               nullptr, context));
  auto rows = reader->ToTable();
  if (!rows.ok()) return WithContext(rows.status(), context);
  auto result = *rows;
  if (result->num_rows() == 0) return nullptr;
  const int rn = result->schema()->GetFieldIndex(kLatestRowNumber);
  if (rn >= 0) {
    TIMELAKE_ASSIGN_OR_RAISE(result, result->RemoveColumn(rn));
  }
  TIMELAKE_ASSIGN_OR_RAISE(auto combined, result->CombineChunksToBatch());
  auto aligned = AlignBatch(*combined, *table->schema);
  if (!aligned.ok()) return WithContext(aligned.status(), context);
  return *aligned;
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> QueryAt(
    std::shared_ptr<const TableState> version, const std::string& sql,
    const std::string& context) {
  auto lake = version->lake;
  return RunInternal(std::move(lake), nullptr, nullptr, sql, nullptr, context,
                     std::move(version), /*partitions=*/0);
}

arrow::Result<std::string> DescribeRollup(std::shared_ptr<LakeState> lake,
                                          const std::string& select) {
  SessionState state;
  state.lake = lake;
  char* err = nullptr;
  const int code = tl_session_new(lake->store->raw(), read::MakeCatalogCallbacks(lake), 1,
                                  &state.session, &err);
  TIMELAKE_RETURN_NOT_OK(storage::FromPlatform(code, err, "reading the rollup's SELECT"));
  char* json = nullptr;
  const int rc = tl_session_describe_rollup(state.session, select.c_str(), &json, &err);
  TIMELAKE_RETURN_NOT_OK(storage::FromPlatform(rc, err, "reading the rollup's SELECT"));
  std::string out(json);
  tl_string_free(json);
  return out;
}

}  // namespace internal

namespace {

// A result stream whose errors carry `context`.
class NamedReader : public arrow::RecordBatchReader {
 public:
  NamedReader(std::shared_ptr<arrow::RecordBatchReader> inner, std::string context)
      : inner_(std::move(inner)), context_(std::move(context)) {}
  std::shared_ptr<arrow::Schema> schema() const override { return inner_->schema(); }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    auto st = inner_->ReadNext(batch);
    return st.ok() ? st : WithContext(st, context_);
  }
  arrow::Status Close() override { return inner_->Close(); }

 private:
  std::shared_ptr<arrow::RecordBatchReader> inner_;
  std::string context_;
};

}  // namespace

arrow::Status SessionSettings::Set(std::string_view name, std::string_view value) {
  TIMELAKE_RETURN_NOT_OK(read::CheckSessionSetting(name, value));
  values[settings::Find(name)->SqlName()] = std::string(value);
  return arrow::Status::OK();
}

Session::Session(Lake lake, SessionSettings settings)
    : state_(std::make_unique<internal::SessionState>()) {
  state_->lake = std::move(lake.state_);
  state_->settings = settings;
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

namespace {

// The tables of the lake that `sql` reads, found by parsing it alone; none
// when it does not parse (planning reports that).
std::vector<TableName> TablesNamedIn(std::string_view sql) {
  const std::string text(sql);
  char* out = nullptr;
  char* err = nullptr;
  std::vector<TableName> tables;
  if (tl_sql_tables(text.c_str(), &out, &err) != TL_OK) {
    tl_string_free(err);
    return tables;
  }
  std::string_view names = out;
  while (!names.empty()) {
    const size_t end = std::min(names.find('\n'), names.size());
    if (auto name = TableName::Parse(names.substr(0, end)); name.ok()) {
      tables.push_back(*std::move(name));
    }
    names.remove_prefix(std::min(end + 1, names.size()));
  }
  tl_string_free(out);
  return tables;
}

}  // namespace

arrow::Status Session::EnsureStarted(std::string_view sql) {
  if (state_->session != nullptr) return arrow::Status::OK();
  // A new process's first statement waits for the engine to start (its
  // functions registered, its code paged in) and for its tables' heads and
  // listings: the two overlap. The versions loaded here are the ones the
  // statement reads. A table that fails to load here is loaded again while
  // planning, which reports why.
  auto started = std::async(std::launch::async, [this]() -> arrow::Status {
    char* err = nullptr;
    TlSession* session = nullptr;
    const int code =
        tl_session_new(state_->lake->store->raw(),
                       read::MakeCatalogCallbacks(state_->lake, state_->scans, nullptr,
                                                  nullptr, state_->statement),
                       state_->settings.target_partitions, &session, &err);
    TIMELAKE_RETURN_NOT_OK(storage::FromPlatform(code, err, "starting a SQL session"));
    for (const auto& [name, value] : state_->settings.values) {
      const settings::Setting* s = settings::Find(name);
      const std::string key = s != nullptr ? s->SqlName() : name;
      const int rc = tl_session_set_option(session, key.c_str(), value.c_str(), &err);
      if (rc != TL_OK) {
        tl_session_free(session);
        return storage::FromPlatform(rc, err, "setting " + key);
      }
    }
    state_->session = session;
    return arrow::Status::OK();
  });
  for (const auto& name : TablesNamedIn(sql)) {
    auto table = internal::LoadTableStateForRead(state_->lake, name);
    if (table.ok()) state_->statement->Put(*std::move(table));
  }
  if (auto st = started.get(); !st.ok()) {
    state_->statement->Clear();
    return st;
  }
  state_->started.store(state_->session, std::memory_order_release);
  return arrow::Status::OK();
}

void Session::Interrupt() {
  if (state_ == nullptr) return;  // moved from
  // Before the first statement there is nothing to stop.
  TlSession* session = state_->started.load(std::memory_order_acquire);
  if (session != nullptr) tl_session_interrupt(session);
}

arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> Session::Query(
    std::string_view sql) {
  TIMELAKE_RETURN_NOT_OK(EnsureStarted(sql));
  const std::string text = NormalizeSettingName(sql);
  struct ArrowArrayStream stream;
  char* err = nullptr;
  const int code = tl_session_sql(state_->session, text.c_str(), &stream, &err);
  // The next statement reads the versions it finds.
  state_->statement->Clear();
  if (code != TL_OK) return storage::FromPlatform(code, err, "running SQL");
  auto reader = internal::PlatformStream::Import(&stream);
  if (!reader.ok()) return WithContext(reader.status(), "running SQL");
  // Planning is over: the scans it logged are this query's. Errors while
  // reading (a damaged data file) then name the tables being read.
  std::string tables;
  for (const auto& scan : state_->scans->Take()) {
    if (tables.find(scan.table) == std::string::npos)
      tables += (tables.empty() ? "" : ", ") + scan.table;
  }
  if (tables.empty()) return *reader;
  return std::make_shared<NamedReader>(*reader, "reading " + tables);
}

arrow::Result<std::shared_ptr<arrow::Table>> Session::Sql(std::string_view sql) {
  TIMELAKE_ASSIGN_OR_RAISE(auto reader, SqlStream(sql));
  auto table = reader->ToTable();
  // Execution errors surface while reading the stream, with their kind
  // (a data file that is gone, a storage outage, a corrupt file).
  if (!table.ok()) return WithContext(table.status(), "running SQL");
  return *table;
}

arrow::Result<std::string> Session::ExplainAnalyze(std::string_view sql) {
  TIMELAKE_RETURN_NOT_OK(EnsureStarted(sql));
  const std::string text(sql);
  char* out = nullptr;
  char* err = nullptr;
  state_->scans->Take();
  const int code = tl_session_explain_analyze(state_->session, text.c_str(), &out, &err);
  state_->statement->Clear();
  if (code != TL_OK) return storage::FromPlatform(code, err, "EXPLAIN ANALYZE");
  // File pruning happens in the engine, before DataFusion sees the files:
  // its counts come first, then DataFusion's plan with row-group and page
  // metrics.
  std::string plan;
  for (const auto& scan : state_->scans->Take()) plan += scan.ToString() + "\n";
  plan += out ? out : "";
  tl_string_free(out);
  return plan;
}

arrow::Result<std::shared_ptr<arrow::Table>> Session::Latest(
    std::string_view table_name) {
  TIMELAKE_ASSIGN_OR_RAISE(auto name, TableName::Parse(table_name));
  TIMELAKE_ASSIGN_OR_RAISE(auto state,
                           internal::LoadTableStateForRead(state_->lake, name));
  const auto& contract = state->contract;
  if (!contract.time_column) {
    return Invalid("latest of " + name.ToString() +
                   ": not a time-series table (no time column)");
  }
  // The snapshot's last-value index answers in one read (the head's copy
  // or the index file, read in the current schema by field id). A missing or
  // unreadable index falls back to the scan, which gives the same answer.
  if (auto index = internal::ReadCurrentLvi(*state); index.ok() && *index != nullptr) {
    auto table = arrow::Table::FromRecordBatches(state->schema, {*index});
    if (table.ok()) return *table;
  }
  // The scan fallback: newest row per series by the tie rule's first two
  // keys (time, then insertion time).
  const std::string sql = internal::LatestSql(*state);
  auto result = Sql(sql);
  if (!result.ok()) return WithContext(result.status(), "latest of " + name.ToString());
  auto table = *result;
  const int rn = table->schema()->GetFieldIndex(internal::kLatestRowNumber);
  if (rn >= 0) {
    TIMELAKE_ASSIGN_OR_RAISE(table, table->RemoveColumn(rn));
  }
  return table;
}

}  // namespace timelake
