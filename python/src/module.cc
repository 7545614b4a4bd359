// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// timelake._timelake: the native half of the Python package, over the public
// C++ API only. The Python half (python/timelake/__init__.py) gives it the
// Timelake 0.7 API, docstrings and exception classes; this file keeps to
// moving values across: Arrow through the PyCapsule interface
// (arrow_capsules.h), reports as dicts, failures as StatusError
// (errors.h). Every engine call runs without the GIL; queries run through
// RunInterruptible so Ctrl-C stops them.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "arrow_capsules.h"
#include "errors.h"
#include "streams.h"
#include "timelake/timelake.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace timelake::python {
namespace {

double Millis(std::chrono::microseconds us) {
  return static_cast<double>(us.count()) / 1e3;
}

nb::dict MaintainDict(const MaintainReport& r) {
  nb::dict d;
  d["partitions_compacted"] = r.partitions_compacted;
  d["files_rewritten"] = r.files_rewritten;
  d["files_written"] = r.files_written;
  d["rows_rewritten"] = r.rows_rewritten;
  d["duplicates_removed"] = r.duplicates_removed;
  d["bytes_rewritten"] = r.bytes_rewritten;
  d["bytes_written"] = r.bytes_written;
  d["partitions_dropped"] = r.partitions_dropped;
  d["files_dropped"] = r.files_dropped;
  d["rows_dropped"] = r.rows_dropped;
  d["snapshots_expired"] = r.snapshots_expired;
  d["files_deleted"] = r.files_deleted;
  d["orphans_deleted"] = r.orphans_deleted;
  d["objects_deleted"] = r.files_deleted + r.orphans_deleted;
  d["commits"] = r.commits;
  d["conflicts"] = r.conflicts;
  d["version"] = r.version;
  d["seconds"] = static_cast<double>(r.duration.count()) / 1e6;
  return d;
}

// Rollup refreshes as a list of dicts (an append's, or maintain's).
nb::list RollupsList(const std::vector<RollupRefreshReport>& reports) {
  nb::list out;
  for (const auto& r : reports) {
    nb::dict d;
    d["rollup"] = r.rollup;
    d["rows"] = r.rows;
    d["ranges"] = r.ranges;
    d["rebuilt"] = r.rebuilt;
    d["source_snapshot_id"] = r.source_snapshot_id;
    if (!r.error.empty()) d["error"] = r.error;
    d["files_rewritten"] = r.files_rewritten;
    if (!r.maintenance_error.empty()) d["maintenance_error"] = r.maintenance_error;
    out.append(d);
  }
  return out;
}

void AddReport(MaintainReport& into, const MaintainReport& r) {
  into.partitions_dropped += r.partitions_dropped;
  into.files_dropped += r.files_dropped;
  into.rows_dropped += r.rows_dropped;
  into.partitions_compacted += r.partitions_compacted;
  into.files_rewritten += r.files_rewritten;
  into.files_written += r.files_written;
  into.rows_rewritten += r.rows_rewritten;
  into.duplicates_removed += r.duplicates_removed;
  into.bytes_rewritten += r.bytes_rewritten;
  into.bytes_written += r.bytes_written;
  into.snapshots_expired += r.snapshots_expired;
  into.files_deleted += r.files_deleted;
  into.orphans_deleted += r.orphans_deleted;
  into.commits += r.commits;
  into.conflicts += r.conflicts;
  into.version = r.version;
  into.duration += r.duration;
}

// A lake and its one SQL session. A Session is not thread-safe, so calls on
// it take `mu`; Python threads sharing a Lake take turns planning, and read
// their results concurrently.
struct LakeHandle {
  LakeHandle(Lake l, SessionSettings settings)
      : lake(std::move(l)), session(lake, std::move(settings)) {}
  Lake lake;
  std::mutex mu;
  Session session;
};

// Plans `sql` with unqualified names resolving in `ns`, under the session's
// lock; the returned reader runs the query as it is read.
arrow::Result<std::shared_ptr<arrow::RecordBatchReader>> PlanSql(LakeHandle& h,
                                                                 const std::string& sql,
                                                                 const std::string& ns) {
  std::lock_guard<std::mutex> lock(h.mu);
  if (ns == kDefaultNamespace) return h.session.SqlStream(sql);
  // A valid namespace needs no quoting inside the SQL string literal.
  TIMELAKE_RETURN_NOT_OK(ValidateNamePart(ns, "namespace"));
  auto set = [&](std::string_view schema) -> arrow::Status {
    return h.session
        .Sql(fmt::format("SET datafusion.catalog.default_schema = '{}'", schema))
        .status();
  };
  TIMELAKE_RETURN_NOT_OK(set(ns));
  auto reader = h.session.SqlStream(sql);
  arrow::Status reset = set(kDefaultNamespace);
  if (!reader.ok()) return reader;
  TIMELAKE_RETURN_NOT_OK(reset);
  return reader;
}

// Reads `reader` to the end, giving up when cancelled.
arrow::Result<std::shared_ptr<arrow::Table>> Collect(arrow::RecordBatchReader& reader,
                                                     const std::atomic<bool>& cancelled) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> batches;
  while (true) {
    if (cancelled) return arrow::Status::Cancelled("query interrupted");
    std::shared_ptr<arrow::RecordBatch> batch;
    arrow::Status st = reader.ReadNext(&batch);
    // As Session::Sql words them: execution errors surface while reading.
    if (!st.ok()) return WithContext(st, "running SQL");
    if (batch == nullptr) break;
    batches.push_back(std::move(batch));
  }
  return arrow::Table::FromRecordBatches(reader.schema(), std::move(batches));
}

class PyLake {
 public:
  PyLake(const std::string& url, const std::map<std::string, std::string>& options,
         const std::map<std::string, std::string>& settings, uint32_t target_partitions) {
    SessionSettings session_settings;
    session_settings.target_partitions = target_partitions;
    for (const auto& [name, value] : settings) {
      ThrowIfError(WithContext(session_settings.Set(name, value), "opening a lake"));
    }
    nb::gil_scoped_release release;
    Lake lake = ValueOrThrow(Lake::Open(url, options));
    handle_ = std::make_shared<LakeHandle>(std::move(lake), std::move(session_settings));
  }

  const std::string& url() const { return handle_->lake.url(); }
  const Lake& lake() const { return handle_->lake; }

  std::vector<std::string> ListNamespaces() const {
    nb::gil_scoped_release release;
    return ValueOrThrow(handle_->lake.ListNamespaces());
  }

  std::vector<std::string> ListTables(const std::string& ns) const {
    std::vector<TableName> names;
    {
      nb::gil_scoped_release release;
      names = ValueOrThrow(handle_->lake.ListTables(ns));
    }
    std::vector<std::string> out;
    for (const auto& name : names) out.push_back(name.ToString());
    return out;
  }

  Table CreateTable(const std::string& name, nb::handle schema_obj,
                    std::optional<std::string> time_column,
                    std::vector<std::string> series_key, std::optional<std::string> chunk,
                    std::optional<bool> dedup,
                    std::map<std::string, std::string> properties) const {
    std::shared_ptr<arrow::Schema> schema = ImportSchema(schema_obj);
    TableOptions options;
    options.time_column = std::move(time_column);
    options.series_key = std::move(series_key);
    if (chunk.has_value()) {
      options.chunk = ValueOrThrow(ParseChunk(*chunk));
    }
    options.dedup = dedup;
    options.properties = std::move(properties);
    nb::gil_scoped_release release;
    return ValueOrThrow(handle_->lake.CreateTable(name, *schema, options));
  }

  Table LoadTable(const std::string& name) const {
    nb::gil_scoped_release release;
    return ValueOrThrow(handle_->lake.LoadTable(name));
  }

  void DropTable(const std::string& name) const {
    nb::gil_scoped_release release;
    ThrowIfError(handle_->lake.DropTable(name));
  }

  ResultStream Sql(const std::string& sql, const std::string& ns) const {
    std::shared_ptr<LakeHandle> h = handle_;
    return ResultStream(ValueOrThrow(RunInterruptible<std::shared_ptr<arrow::Table>>(
        [h, sql, ns](const std::atomic<bool>& cancelled)
            -> arrow::Result<std::shared_ptr<arrow::Table>> {
          TIMELAKE_ASSIGN_OR_RAISE(auto reader, PlanSql(*h, sql, ns));
          return Collect(*reader, cancelled);
        })));
  }

  ResultStream SqlReader(const std::string& sql, const std::string& ns) const {
    std::shared_ptr<LakeHandle> h = handle_;
    return ResultStream(
        ValueOrThrow(RunInterruptible<std::shared_ptr<arrow::RecordBatchReader>>(
            [h, sql, ns](const std::atomic<bool>&) { return PlanSql(*h, sql, ns); })));
  }

  ResultStream Latest(const std::string& table) const {
    std::shared_ptr<LakeHandle> h = handle_;
    return ResultStream(ValueOrThrow(RunInterruptible<std::shared_ptr<arrow::Table>>(
        [h, table](
            const std::atomic<bool>&) -> arrow::Result<std::shared_ptr<arrow::Table>> {
          std::lock_guard<std::mutex> lock(h->mu);
          return h->session.Latest(table);
        })));
  }

  std::string ExplainAnalyze(const std::string& sql) const {
    std::shared_ptr<LakeHandle> h = handle_;
    return ValueOrThrow(RunInterruptible<std::string>(
        [h, sql](const std::atomic<bool>&) -> arrow::Result<std::string> {
          std::lock_guard<std::mutex> lock(h->mu);
          return h->session.ExplainAnalyze(sql);
        }));
  }

 private:
  std::shared_ptr<LakeHandle> handle_;
};

nb::dict InfoDict(const Table& table) {
  const TableInfo info = table.Info();
  nb::dict d;
  d["name"] = info.name;
  d["version"] = info.version;
  d["location"] = info.location;
  d["snapshot_id"] = info.snapshot_id;
  d["time_column"] = info.time_column;
  d["series_key"] = info.series_key;
  d["chunk"] =
      info.time_column.has_value() ? nb::object(nb::str(info.chunk.c_str())) : nb::none();
  d["dedup"] = info.dedup;
  d["rows"] = info.rows;
  d["files"] = info.files;
  d["bytes"] = info.bytes;
  d["snapshots"] = info.snapshots;
  d["properties"] = info.properties;
  d["rollup_of"] = info.rollup_of.empty() ? nb::object(nb::none())
                                          : nb::object(nb::str(info.rollup_of.c_str()));
  nb::list rollups;
  for (const auto& r : info.rollups) {
    nb::dict e;
    e["name"] = r.name;
    e["bucket"] = r.bucket;
    e["source_snapshot_id"] = r.source_snapshot_id;
    e["refreshed_ms"] = r.refreshed_ms;
    e["behind"] = r.behind;
    e["problem"] = r.problem.empty() ? nb::object(nb::none())
                                     : nb::object(nb::str(r.problem.c_str()));
    rollups.append(e);
  }
  d["rollups"] = rollups;
  return d;
}

// What one append of possibly several commits did.
struct AppendTotals {
  int64_t rows = 0;
  int64_t input_rows = 0;
  int64_t files = 0;
  int64_t bytes = 0;
  int64_t partitions = 0;
  int64_t commits = 0;
  int64_t duplicate_commits = 0;
  int attempts = 0;
  int conflicts_rebased = 0;
  std::chrono::microseconds write{0};
  std::chrono::microseconds commit{0};
  std::optional<int64_t> snapshot_id;
  int64_t sequence_number = 0;
  bool maintenance_ran = false;
  MaintainReport maintenance;
  std::string maintenance_error;
  std::vector<RollupRefreshReport> rollups;
};

// Appends what `reader` yields to `table`: one commit of everything when
// `commit_rows` is unset, otherwise one commit per `commit_rows` rows (the
// last one smaller), so memory holds at most one commit's rows. Batch ids of
// several commits are "<id>#<first row>-<end row>", the rule of the CLI's
// `timelake append --commit-rows`: re-running the same input skips what
// committed before. Runs without the GIL.
arrow::Result<std::pair<Table, AppendTotals>> AppendReader(
    Table table, arrow::RecordBatchReader& reader, std::optional<std::string> batch_id,
    std::optional<bool> auto_maintain, std::optional<int64_t> commit_rows,
    int max_commit_attempts) {
  AppendTotals totals;
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending;
  int64_t pending_rows = 0;
  int64_t committed_rows = 0;
  auto commit = [&](bool end_of_input) -> arrow::Status {
    if (pending.empty()) return arrow::Status::OK();
    AppendOptions options;
    options.auto_maintain = auto_maintain;
    options.max_commit_attempts = max_commit_attempts;
    if (batch_id.has_value()) {
      const bool only = totals.commits + totals.duplicate_commits == 0 && end_of_input;
      options.batch_id = only ? *batch_id
                              : fmt::format("{}#{}-{}", *batch_id, committed_rows,
                                            committed_rows + pending_rows);
    }
    committed_rows += pending_rows;
    TIMELAKE_ASSIGN_OR_RAISE(auto appended, table.Append(pending, options));
    pending.clear();
    pending_rows = 0;
    table = std::move(appended.first);
    const AppendResult& r = appended.second;
    totals.input_rows += r.input_rows;
    totals.attempts += r.commit.attempts;
    totals.commit += r.commit.commit_duration;
    totals.write += r.commit.write_duration;
    if (r.duplicate_batch) {
      ++totals.duplicate_commits;
      return arrow::Status::OK();
    }
    ++totals.commits;
    totals.rows += r.rows;
    totals.files += r.files;
    totals.bytes += r.bytes;
    totals.partitions += r.partitions;
    totals.conflicts_rebased += r.commit.conflicts_rebased;
    if (r.snapshot_id.has_value()) totals.snapshot_id = r.snapshot_id;
    totals.sequence_number = r.sequence_number;
    if (r.maintenance.commits > 0 || r.maintenance.duration.count() > 0) {
      totals.maintenance_ran = true;
      AddReport(totals.maintenance, r.maintenance);
    }
    if (!r.maintenance_error.empty()) totals.maintenance_error = r.maintenance_error;
    totals.rollups.insert(totals.rollups.end(), r.rollups.begin(), r.rollups.end());
    return arrow::Status::OK();
  };
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    TIMELAKE_RETURN_NOT_OK(
        WithContext(reader.ReadNext(&batch), "reading the data to append"));
    if (batch == nullptr) break;
    if (batch->num_rows() == 0) continue;
    // Commits are cut at exactly commit_rows rows (slices share the batch's
    // buffers), so the same input always gets the same batch ids.
    while (commit_rows.has_value() && pending_rows + batch->num_rows() >= *commit_rows) {
      const int64_t take = *commit_rows - pending_rows;
      pending.push_back(batch->Slice(0, take));
      pending_rows += take;
      TIMELAKE_RETURN_NOT_OK(commit(/*end_of_input=*/false));
      batch = batch->Slice(take);
    }
    if (batch->num_rows() > 0) {
      pending_rows += batch->num_rows();
      pending.push_back(std::move(batch));
    }
  }
  TIMELAKE_RETURN_NOT_OK(commit(/*end_of_input=*/true));
  return std::make_pair(std::move(table), std::move(totals));
}

std::pair<Table, nb::dict> Append(const Table& table, nb::handle data,
                                  std::optional<std::string> batch_id,
                                  std::optional<bool> auto_maintain,
                                  std::optional<int64_t> commit_rows,
                                  int max_commit_attempts) {
  if (commit_rows.has_value() && *commit_rows < 1) {
    throw StatusError(
        Invalid(fmt::format("appending to {}: commit_rows must be at least 1, not {}",
                            table.name().ToString(), *commit_rows)));
  }
  std::shared_ptr<arrow::RecordBatchReader> reader = ImportReader(data);
  std::pair<Table, AppendTotals> result = [&] {
    nb::gil_scoped_release release;
    return ValueOrThrow(AppendReader(table, *reader, std::move(batch_id), auto_maintain,
                                     commit_rows, max_commit_attempts));
  }();
  const AppendTotals& t = result.second;
  nb::dict d;
  d["rows"] = t.rows;
  d["input_rows"] = t.input_rows;
  d["files"] = t.files;
  d["bytes"] = t.bytes;
  d["partitions"] = t.partitions;
  d["version"] = result.first.version();
  d["snapshot_id"] = t.snapshot_id;
  d["sequence_number"] = t.sequence_number;
  d["commit_ms"] = Millis(t.commit);
  d["write_ms"] = Millis(t.write);
  d["attempts"] = t.attempts;
  d["conflicts_rebased"] = t.conflicts_rebased;
  d["commits"] = t.commits;
  d["duplicate"] = t.commits == 0 && t.duplicate_commits > 0;
  if (t.maintenance_ran) d["maintenance"] = MaintainDict(t.maintenance);
  if (!t.maintenance_error.empty()) d["maintenance_error"] = t.maintenance_error;
  if (!t.rollups.empty()) d["rollups"] = RollupsList(t.rollups);
  return {std::move(result.first), std::move(d)};
}

std::pair<Table, nb::dict> Maintain(const Table& table, bool retention, bool compact,
                                    bool expire, bool clean_orphans,
                                    std::optional<int64_t> orphan_age_ms,
                                    int max_commit_attempts, bool rollups) {
  MaintainOptions options;
  options.max_commit_attempts = max_commit_attempts;
  options.refresh_rollups = rollups ? RollupRefresh::kAll : RollupRefresh::kNone;
  options.retention = retention;
  options.compact = compact;
  options.expire = expire;
  options.clean_orphans = clean_orphans;
  if (orphan_age_ms.has_value()) {
    if (*orphan_age_ms < 0) {
      throw StatusError(Invalid(fmt::format(
          "maintaining {}: orphan_age must not be negative", table.name().ToString())));
    }
    options.orphan_age = std::chrono::milliseconds(*orphan_age_ms);
  }
  std::pair<Table, MaintainReport> done = [&] {
    nb::gil_scoped_release release;
    return ValueOrThrow(table.Maintain(options));
  }();
  nb::dict report = MaintainDict(done.second);
  if (!done.second.rollups.empty()) report["rollups"] = RollupsList(done.second.rollups);
  return {std::move(done.first), report};
}

Table SetProperties(const Table& table,
                    const std::map<std::string, std::optional<std::string>>& changes) {
  nb::gil_scoped_release release;
  return ValueOrThrow(table.SetProperties(changes));
}

nb::dict UpgradeDict(const UpgradeReport& r) {
  nb::list steps;
  for (const auto& step : r.steps) {
    nb::dict d;
    d["step"] = std::string(UpgradeStepName(step.kind));
    d["description"] = step.description;
    d["done"] = step.done;
    if (step.version > 0) {
      d["version"] = step.version;
    } else {
      d["version"] = nb::none();
    }
    steps.append(d);
  }
  nb::dict d;
  d["dry_run"] = r.dry_run;
  d["from_format"] = r.from_format.empty() ? std::string("0.1.0") : r.from_format;
  d["to_format"] = r.to_format.empty() ? std::string("0.1.0") : r.to_format;
  d["steps"] = steps;
  d["files_rewritten"] = r.files_rewritten;
  d["files_written"] = r.files_written;
  d["rows_rewritten"] = r.rows_rewritten;
  d["version"] = r.version;
  d["seconds"] = static_cast<double>(r.duration.count()) / 1e6;
  return d;
}

std::pair<Table, nb::dict> Upgrade(const Table& table, bool dry_run, bool compact,
                                   std::optional<int64_t> keep_snapshots_ms,
                                   std::optional<std::string> time_column,
                                   std::vector<std::string> series_key,
                                   std::optional<bool> dedup, int max_commit_attempts) {
  UpgradeOptions options;
  options.dry_run = dry_run;
  options.compact = compact;
  if (keep_snapshots_ms.has_value()) {
    if (*keep_snapshots_ms < 0) {
      throw StatusError(Invalid(fmt::format(
          "upgrading {}: keep_snapshots must not be negative", table.name().ToString())));
    }
    options.keep_snapshots = std::chrono::milliseconds(*keep_snapshots_ms);
  }
  options.time_column = std::move(time_column);
  options.series_key = std::move(series_key);
  options.dedup = dedup;
  options.max_commit_attempts = max_commit_attempts;
  std::pair<Table, UpgradeReport> done = [&] {
    nb::gil_scoped_release release;
    return ValueOrThrow(table.Upgrade(options));
  }();
  return {std::move(done.first), UpgradeDict(done.second)};
}

Table Rollback(const Table& table, int64_t snapshot_id) {
  nb::gil_scoped_release release;
  return ValueOrThrow(table.Rollback(snapshot_id));
}

// `changes`: (kind, column, new name, a schema of one field whose type is the
// type) with kind "add", "rename" or "widen".
Table EvolveSchema(
    const Table& table,
    const std::vector<std::tuple<std::string, std::string, std::string, nb::object>>&
        changes) {
  std::vector<SchemaChange> converted;
  for (const auto& [kind, column, new_name, type] : changes) {
    std::shared_ptr<arrow::DataType> arrow_type;
    if (!type.is_none()) arrow_type = ImportSchema(type)->field(0)->type();
    if (kind == "add") {
      converted.push_back(SchemaChange::AddColumn(column, arrow_type));
    } else if (kind == "rename") {
      converted.push_back(SchemaChange::RenameColumn(column, new_name));
    } else if (kind == "widen") {
      converted.push_back(SchemaChange::WidenColumn(column, arrow_type));
    } else {
      throw StatusError(Invalid("unknown schema change '" + kind + "'"));
    }
  }
  nb::gil_scoped_release release;
  return ValueOrThrow(table.EvolveSchema(converted));
}

Table Refresh(const Table& table) {
  nb::gil_scoped_release release;
  return ValueOrThrow(table.Refresh());
}

}  // namespace
}  // namespace timelake::python

NB_MODULE(_timelake, m) {
  using namespace timelake;
  using namespace timelake::python;
  m.doc() =
      "The native half of the timelake package: the C++ API's Lake, Table and SQL "
      "session. "
      "Use the timelake package, not this module.";
  m.attr("__version__") = TIMELAKE_VERSION;
  m.attr("FORMAT_VERSION") = std::string(kFormatVersion);
  RegisterErrorTranslator();
  m.def("_set_error_classes", &SetErrorClasses, "classes"_a,
        "Hands over the exception classes, by name (NotFoundError, ...).");
  m.def("flush", &Flush, nb::call_guard<nb::gil_scoped_release>(),
        "Waits for this process's background writes (version hints, head objects).");
  m.def(
      "parse_duration",
      [](const std::string& text) {
        return static_cast<int64_t>(ValueOrThrow(ParseDuration(text)).count());
      },
      "text"_a, "Milliseconds of a duration such as \"90d\" or \"3 hours\".");

  nb::class_<ResultStream>(m, "ResultStream",
                           "A query result: Arrow data through __arrow_c_stream__.")
      .def("__arrow_c_stream__", &ResultStream::ArrowCStream,
           "requested_schema"_a = nb::none(),
           "A PyCapsule of an ArrowArrayStream over the result (Arrow PyCapsule "
           "interface).")
      .def("__arrow_c_schema__", &ResultStream::ArrowCSchema,
           "A PyCapsule of the result's ArrowSchema.")
      .def_prop_ro("num_rows", &ResultStream::num_rows,
                   "Rows of a collected result; None for a streaming one.")
      .def("buffer_addresses", &ResultStream::BufferAddresses,
           "Addresses of the collected result's buffers (0 for an absent one), column by "
           "column, chunk by chunk.");

  nb::class_<SchemaHolder>(m, "Schema", "An Arrow schema through __arrow_c_schema__.")
      .def("__arrow_c_schema__", &SchemaHolder::ArrowCSchema,
           "A PyCapsule of the ArrowSchema.");

  nb::class_<Table>(m, "Table", "One committed version of a table.")
      .def_prop_ro(
          "name", [](const Table& t) { return t.name().ToString(); },
          "\"namespace.table\".")
      .def_prop_ro("location", &Table::location, "The table's root URL.")
      .def_prop_ro("version", &Table::version, "The metadata version number.")
      .def_prop_ro("snapshot_id", &Table::current_snapshot_id,
                   "The current snapshot id, None before the first append.")
      .def_prop_ro("time_column", &Table::time_column, "The time column, or None.")
      .def_prop_ro("series_key", &Table::series_key, "The series key columns.")
      .def_prop_ro("properties", &Table::properties, "Table properties.")
      .def_prop_ro(
          "schema", [](const Table& t) { return SchemaHolder{t.schema()}; },
          "The table schema (with PARQUET:field_id metadata).")
      .def("info", &InfoDict, "Summary of this version.")
      .def("refresh", &Refresh, "The newest committed version.")
      .def("set_properties", &SetProperties, "changes"_a,
           "Sets (a value) or removes (None) properties; returns the new version.")
      .def("append", &Append, "data"_a, "batch_id"_a = nb::none(),
           "auto_maintain"_a = nb::none(), "commit_rows"_a = nb::none(),
           "max_commit_attempts"_a = 20,
           "Appends Arrow data; returns the new version and the statistics.")
      .def("maintain", &Maintain, "retention"_a = true, "compact"_a = true,
           "expire"_a = true, "clean_orphans"_a = true, "orphan_age_ms"_a = nb::none(),
           "max_commit_attempts"_a = 20, "rollups"_a = true,
           "Runs maintenance; returns the new version and the report.")
      .def("upgrade", &Upgrade, "dry_run"_a = false, "compact"_a = true,
           "keep_snapshots_ms"_a = nb::none(), "time_column"_a = nb::none(),
           "series_key"_a = std::vector<std::string>{}, "dedup"_a = nb::none(),
           "max_commit_attempts"_a = 20,
           "Upgrades the table; returns the new version and the report.")
      .def("rollback", &Rollback, "snapshot_id"_a,
           "Makes a kept snapshot the current one; returns the new version.")
      .def("evolve_schema", &EvolveSchema, "changes"_a,
           "Changes the schema in one commit: (kind, column, new_name, type schema) "
           "tuples; returns the new version.")
      .def(
          "snapshots",
          [](const Table& t) {
            nb::list out;
            for (const auto& s : t.Snapshots()) {
              nb::dict d;
              d["snapshot_id"] = s.snapshot_id;
              if (s.parent_id) {
                d["parent_id"] = *s.parent_id;
              } else {
                d["parent_id"] = nb::none();
              }
              d["sequence_number"] = s.sequence_number;
              d["timestamp_ms"] = s.timestamp_ms;
              d["operation"] = s.operation;
              d["rows"] = s.rows;
              d["files"] = s.files;
              if (s.batch_id) {
                d["batch_id"] = *s.batch_id;
              } else {
                d["batch_id"] = nb::none();
              }
              d["current"] = s.current;
              d["in_history"] = s.in_history;
              out.append(d);
            }
            return out;
          },
          "The snapshots this version keeps, oldest first.");

  nb::class_<PyLake>(m, "Lake", "A warehouse and its SQL session.")
      .def(nb::init<const std::string&, const std::map<std::string, std::string>&,
                    const std::map<std::string, std::string>&, uint32_t>(),
           "url"_a, "options"_a, "settings"_a, "target_partitions"_a = 0)
      .def_prop_ro("url", &PyLake::url, "The warehouse root URL.")
      .def("list_namespaces", &PyLake::ListNamespaces, "Namespaces with tables.")
      .def("list_tables", &PyLake::ListTables, "ns"_a = "",
           "Tables as \"namespace.table\" (of one namespace, or all).")
      .def("create_table", &PyLake::CreateTable, "name"_a, "schema"_a,
           "time_column"_a = nb::none(), "series_key"_a = std::vector<std::string>{},
           "chunk"_a = nb::none(), "dedup"_a = nb::none(),
           "properties"_a = std::map<std::string, std::string>{}, "Creates a table.")
      .def("load_table", &PyLake::LoadTable, "name"_a, "Opens a table.")
      .def("drop_table", &PyLake::DropTable, "name"_a, "Deletes a table and its files.")
      .def("sql", &PyLake::Sql, "query"_a, "namespace"_a = "default",
           "Runs one statement and collects its result.")
      .def("sql_reader", &PyLake::SqlReader, "query"_a, "namespace"_a = "default",
           "Plans one statement; its result is computed as it is read.")
      .def("latest", &PyLake::Latest, "table"_a, "The newest row of every series.")
      .def("explain_analyze", &PyLake::ExplainAnalyze, "query"_a,
           "EXPLAIN ANALYZE with Timelake's scan lines.");
}
