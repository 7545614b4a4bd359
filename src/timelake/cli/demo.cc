// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/demo.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <ostream>
#include <system_error>
#include <utility>

#include <arrow/array.h>
#include <arrow/builder.h>
#include <arrow/compute/api.h>
#include <arrow/table.h>
#include <fmt/format.h>

#include "timelake/cli/committer.h"
#include "timelake/cli/output.h"
#include "timelake/cli/tsbs.h"
#include "timelake/cli/util.h"
#include "timelake/timelake.h"

namespace timelake::cli {
namespace {

constexpr std::string_view kDemoTable = "demo.cpu";
constexpr int64_t kCommitRows = 1000000;
constexpr int64_t kShownRows = 10;

// Quotes `text` for a POSIX shell when it holds anything but safe characters.
std::string ShellQuote(std::string_view text) {
  const bool safe =
      !text.empty() && text.find_first_not_of(
                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                           "0123456789@%+=:,./_-") == std::string_view::npos;
  if (safe) return std::string(text);
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// "2024-01-01T23:00:00Z" for a microsecond timestamp.
std::string IsoUtc(int64_t micros) {
  const std::chrono::sys_time<std::chrono::seconds> t{
      std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::microseconds{micros})};
  const auto day = std::chrono::floor<std::chrono::days>(t);
  const std::chrono::year_month_day ymd{day};
  const std::chrono::hh_mm_ss hms{t - day};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z",
                     static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                     static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count());
}

// Local paths are made absolute (and created) so that the example command
// printed at the end works from any directory.
arrow::Result<std::string> PrepareWarehouse(const std::string& warehouse) {
  if (warehouse.find("://") != std::string::npos) return warehouse;
  std::error_code error;
  const auto path = std::filesystem::absolute(warehouse, error);
  if (!error) std::filesystem::create_directories(path, error);
  if (error) {
    return arrow::Status::IOError("creating the demo warehouse ", warehouse, ": ",
                                  error.message());
  }
  return path.lexically_normal().string();
}

// The newest row of every host, a few columns of it, sorted by host name.
arrow::Result<std::shared_ptr<arrow::Table>> LatestPerHost(Session* session) {
  ARROW_ASSIGN_OR_RAISE(auto latest, session->Latest(kDemoTable));
  std::vector<int> columns;
  for (const char* name :
       {"hostname", "time", "usage_user", "usage_system", "usage_idle"}) {
    const int index = latest->schema()->GetFieldIndex(name);
    if (index < 0) {
      return arrow::Status::Invalid("Latest(", kDemoTable, ") has no column ", name);
    }
    columns.push_back(index);
  }
  ARROW_ASSIGN_OR_RAISE(latest, latest->SelectColumns(columns));
  ARROW_ASSIGN_OR_RAISE(latest, latest->CombineChunks());
  if (latest->num_rows() == 0) return latest;
  // The engine may hand strings back as string views: sort on plain strings.
  ARROW_ASSIGN_OR_RAISE(
      auto name_array, arrow::compute::Cast(*latest->column(0)->chunk(0), arrow::utf8()));
  const auto& names = static_cast<const arrow::StringArray&>(*name_array);
  // Ordering by (length, name) puts "host_2" before "host_10".
  std::vector<int64_t> order(static_cast<size_t>(latest->num_rows()));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto x = names.GetView(a);
    const auto y = names.GetView(b);
    return x.size() != y.size() ? x.size() < y.size() : x < y;
  });
  arrow::Int64Builder indices;
  ARROW_RETURN_NOT_OK(indices.AppendValues(order));
  ARROW_ASSIGN_OR_RAISE(auto index_array, indices.Finish());
  ARROW_ASSIGN_OR_RAISE(auto sorted, arrow::compute::Take(latest, index_array));
  return sorted.table();
}

arrow::Status ShowResult(std::ostream* out, std::string_view title, std::string_view sql,
                         const arrow::Table& result, double seconds) {
  *out << fmt::format("\n{} ({})\n", title, FormatSeconds(seconds));
  if (!sql.empty()) *out << "  " << sql << "\n";
  TextTableOptions options;
  options.max_rows = kShownRows;
  return PrintTable(result, out, options);
}

arrow::Status Ingest(const Lake& lake, const TsbsOptions& tsbs, std::ostream* out) {
  TableOptions table_options;
  table_options.time_column = "time";
  table_options.series_key = {"hostname"};
  table_options.chunk = Chunk::kDay;
  ARROW_ASSIGN_OR_RAISE(Table table,
                        lake.CreateTable(kDemoTable, *TsbsSchema(), table_options));

  const auto start = std::chrono::steady_clock::now();
  TsbsGenerator generator(tsbs);
  BatchCommitter committer(std::move(table), kCommitRows, std::nullopt);
  Progress progress("appending", generator.total_rows());
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(generator.ReadNext(&batch));
    if (batch == nullptr) break;
    ARROW_RETURN_NOT_OK(committer.Add(batch));
    progress.Update(generator.rows_generated(), generator.rows_generated());
  }
  ARROW_RETURN_NOT_OK(committer.Flush());
  progress.Finish();
  *out << DescribeTotals("ingested", "", committer.totals(), SecondsSince(start),
                         committer.dedup_key())
       << "\n";
  return arrow::Status::OK();
}

arrow::Status RunQueries(Session* session, const TsbsOptions& tsbs, std::ostream* out) {
  auto start = std::chrono::steady_clock::now();
  // Every commit of the fresh demo table writes its last-value index, so
  // Latest reads that (from the head object or its own small file) and scans
  // no data file.
  ARROW_ASSIGN_OR_RAISE(auto latest, LatestPerHost(session));
  ARROW_RETURN_NOT_OK(ShowResult(
      out, "Newest row per host (read from the last-value index, not a scan)",
      fmt::format("Session::Latest(\"{}\")", kDemoTable), *latest, SecondsSince(start)));

  const int64_t end_us =
      tsbs.start_us +
      std::chrono::duration_cast<std::chrono::microseconds>(tsbs.duration).count();
  const std::string last_hour = IsoUtc(end_us - int64_t{3600} * 1000000);
  const std::pair<std::string, std::string> queries[] = {
      {"Hourly average usage_user of host_0",
       fmt::format("SELECT date_bin(INTERVAL '1 hour', time) AS hour, "
                   "round(avg(usage_user), 2) AS avg_usage_user FROM {} "
                   "WHERE hostname = 'host_0' GROUP BY 1 ORDER BY 1",
                   kDemoTable)},
      {"Busiest hosts in the last hour of data",
       fmt::format("SELECT hostname, round(avg(usage_user), 1) AS avg_usage_user, "
                   "max(usage_user) AS max_usage_user FROM {} WHERE time >= '{}' "
                   "GROUP BY hostname ORDER BY avg_usage_user DESC, hostname",
                   kDemoTable, last_hour)},
      {"Rows per day",
       fmt::format("SELECT date_trunc('day', time) AS day, count(*) AS row_count FROM {} "
                   "GROUP BY 1 ORDER BY 1",
                   kDemoTable)},
  };
  for (const auto& [title, sql] : queries) {
    start = std::chrono::steady_clock::now();
    ARROW_ASSIGN_OR_RAISE(auto result, session->Sql(sql));
    ARROW_RETURN_NOT_OK(ShowResult(out, title, sql, *result, SecondsSince(start)));
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Status RunDemo(const DemoOptions& options, std::ostream* out) {
  if (options.hosts < 1)
    return arrow::Status::Invalid("demo: --hosts must be at least 1");
  if (options.hours < 1)
    return arrow::Status::Invalid("demo: --hours must be at least 1");
  TsbsOptions tsbs;
  tsbs.hosts = options.hosts;
  tsbs.duration = std::chrono::hours(options.hours);

  ARROW_ASSIGN_OR_RAISE(const std::string warehouse, PrepareWarehouse(options.warehouse));
  ARROW_ASSIGN_OR_RAISE(Lake lake, Lake::Open(warehouse));
  *out << fmt::format(
      "Timelake demo: TSBS cpu-only, {} hosts x {} h, one row per host every {} s = {} "
      "rows\n"
      "warehouse: {}\n",
      tsbs.hosts, options.hours, tsbs.interval.count(), FormatInteger(TotalRows(tsbs)),
      lake.url());

  // A re-run starts from a fresh table; nothing else in the warehouse is touched.
  auto dropped = lake.DropTable(kDemoTable);
  if (!dropped.ok() && KindOf(dropped) != ErrorKind::kNotFound) return dropped;
  ARROW_RETURN_NOT_OK(Ingest(lake, tsbs, out));

  Session session(lake);
  for (const auto& statement : options.session_statements) {
    ARROW_RETURN_NOT_OK(session.Sql(statement).status());
  }
  ARROW_RETURN_NOT_OK(RunQueries(&session, tsbs, out));

  *out << fmt::format(
      "\nThe table {} is in {}. Query it yourself:\n"
      "  timelake -w {} sql \"SELECT hostname, avg(usage_user) AS avg_usage_user FROM {} "
      "GROUP BY hostname ORDER BY avg_usage_user DESC LIMIT 5\"\n",
      kDemoTable, warehouse, ShellQuote(warehouse), kDemoTable);
  out->flush();
  if (!*out) return arrow::Status::IOError("writing the demo output failed");
  return arrow::Status::OK();
}

}  // namespace timelake::cli
