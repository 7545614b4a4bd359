// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// timelake_bench: the benchmark driver of bench/run.py (SPEC §12). It times
// Timelake through the public C++ API only, in one process, and prints one
// JSON object on stdout:
//
//   timelake_bench ingest -w WAREHOUSE -t bench.cpu FILE.parquet...
//     Creates the table (time column `time`, series key `hostname`, day
//     chunks) from the first file's schema, then appends each file as one
//     commit. Prints rows, files, seconds (create + all appends, reading the
//     files included, and the inline maintenance they started), the seconds
//     of each append, the peak RSS, and what maintenance did: compactions,
//     bytes written by them and per byte appended (`rewritten_per_byte`).
//
//   timelake_bench query -w WAREHOUSE -q QUERIES.json [--only NAME]
//                        [--repeats N] [--results DIR]
//     QUERIES.json is [{"name": ..., "sql": ...} | {"name": ..., "latest": TABLE}].
//     Opening the lake and the first run of each query are timed together as
//     "first_ms" (the cold time when the process runs a single query); then
//     each query runs N more times ("times_ms", "median_ms": warm). With
//     --results, each query's result is written to DIR/NAME.arrow (Arrow IPC)
//     for the cross-check. A query that fails is reported as {"name", "error"}.
//
// Errors go to stderr with exit code 1. Timing only: no checks of results.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <arrow/compute/initialize.h>
#include <arrow/io/file.h>
#include <arrow/ipc/writer.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "timelake/timelake.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The peak resident set of this process's own memory: VmHWM, which starts
// again at exec. (getrusage's ru_maxrss keeps the high-water mark of the
// process image before exec, so a child of a large bench/run.py reported
// run.py's size.)
int64_t PeakRssKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6));  // "  1234 kB"
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// Reads an input file as the Python peers do (pyarrow's read_table: columns
// decoded on Arrow's CPU pool, column chunks pre-buffered).
arrow::Result<std::shared_ptr<arrow::Table>> ReadParquet(const std::string& path) {
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::ReadableFile::Open(path));
  parquet::ArrowReaderProperties properties;
  properties.set_use_threads(true);
  properties.set_pre_buffer(true);
  parquet::arrow::FileReaderBuilder builder;
  ARROW_RETURN_NOT_OK(builder.Open(file));
  ARROW_ASSIGN_OR_RAISE(auto reader, builder.properties(properties)->Build());
  return reader->ReadTable();
}

arrow::Status Ingest(const std::string& warehouse, const std::string& table_name,
                     const std::vector<std::string>& files, bool no_maintain) {
  const auto start = Clock::now();
  TIMELAKE_ASSIGN_OR_RAISE(timelake::Lake lake, timelake::Lake::Open(warehouse));
  std::optional<timelake::Table> table;
  int64_t rows = 0;
  int64_t bytes = 0;
  std::vector<double> append_ms;
  // Inline maintenance (the default) runs in the background after each
  // append, overlapping the next file's reading and append, and is timed
  // with the ingest (the last run is waited for); what it did is reported
  // beside: compactions, and the bytes they wrote per byte appended (the
  // write amplification of compaction).
  int64_t compactions = 0, rewritten_bytes = 0;
  double maintain_ms = 0;
  auto count = [&](const timelake::MaintainReport& m) {
    compactions += m.partitions_compacted;
    rewritten_bytes += m.bytes_written;
    maintain_ms += static_cast<double>(m.duration.count()) / 1000;
  };
  for (const std::string& path : files) {
    ARROW_ASSIGN_OR_RAISE(auto data, ReadParquet(path));
    if (!table) {
      timelake::TableOptions options;
      options.time_column = "time";
      options.series_key = {"hostname"};
      options.chunk = timelake::Chunk::kDay;
      TIMELAKE_ASSIGN_OR_RAISE(table,
                               lake.CreateTable(table_name, *data->schema(), options));
    }
    const auto append_start = Clock::now();
    arrow::TableBatchReader batches(*data);
    ARROW_ASSIGN_OR_RAISE(auto batch_list, batches.ToRecordBatches());
    timelake::AppendOptions append_options;
    if (no_maintain) append_options.auto_maintain = false;
    TIMELAKE_ASSIGN_OR_RAISE(auto appended, table->Append(batch_list, append_options));
    append_ms.push_back(MillisSince(append_start));
    table = std::move(appended.first);
    rows += appended.second.rows;
    bytes += appended.second.bytes;
    count(appended.second.maintenance);
  }
  // The last append's maintenance, still running in the background, is
  // part of the ingest.
  if (table) {
    TIMELAKE_ASSIGN_OR_RAISE(auto finished, table->WaitForMaintenance());
    count(finished.second);
  }
  timelake::Flush();
  const double total_ms = MillisSince(start);
  json out = {{"rows", rows},
              {"files", files.size()},
              {"bytes_written", bytes},
              {"seconds", total_ms / 1000},
              {"append_ms", append_ms},
              {"peak_rss_kib", PeakRssKib()},
              {"memory_pool", arrow::default_memory_pool()->backend_name()},
              {"compactions", compactions},
              {"bytes_rewritten", rewritten_bytes},
              {"rewritten_per_byte",
               bytes > 0 ? static_cast<double>(rewritten_bytes) / bytes : 0.0},
              {"maintain_ms", maintain_ms}};
  std::cout << out.dump() << std::endl;
  return arrow::Status::OK();
}

struct Query {
  std::string name;
  std::string sql;     // empty for a Latest() call
  std::string latest;  // table of Session::Latest
};

arrow::Result<std::vector<Query>> ReadQueries(const std::string& path,
                                              const std::string& only) {
  std::ifstream in(path);
  if (!in) return arrow::Status::IOError("reading ", path, ": cannot open");
  std::vector<Query> queries;
  try {
    for (const auto& item : json::parse(in)) {
      Query q;
      q.name = item.at("name").get<std::string>();
      if (item.contains("sql")) q.sql = item["sql"].get<std::string>();
      if (item.contains("latest")) q.latest = item["latest"].get<std::string>();
      if (only.empty() || q.name == only) queries.push_back(std::move(q));
    }
  } catch (const json::exception& e) {
    return arrow::Status::Invalid("reading queries from ", path, ": ", e.what());
  }
  if (queries.empty()) return arrow::Status::Invalid("no query named '", only, "'");
  return queries;
}

arrow::Result<std::shared_ptr<arrow::Table>> RunOne(timelake::Session* session,
                                                    const Query& query) {
  if (!query.latest.empty()) return session->Latest(query.latest);
  return session->Sql(query.sql);
}

arrow::Status WriteArrow(const arrow::Table& table, const std::filesystem::path& path) {
  ARROW_ASSIGN_OR_RAISE(auto file, arrow::io::FileOutputStream::Open(path.string()));
  ARROW_ASSIGN_OR_RAISE(auto writer, arrow::ipc::MakeFileWriter(file, table.schema()));
  ARROW_RETURN_NOT_OK(writer->WriteTable(table));
  ARROW_RETURN_NOT_OK(writer->Close());
  return file->Close();
}

arrow::Status RunQueries(const std::string& warehouse, const std::string& queries_path,
                         const std::string& only, int repeats,
                         const std::string& results_dir) {
  ARROW_ASSIGN_OR_RAISE(auto queries, ReadQueries(queries_path, only));
  if (!results_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(results_dir, error);
    if (error) {
      return arrow::Status::IOError("creating ", results_dir, ": ", error.message());
    }
  }
  json results = json::array();
  const auto open_start = Clock::now();
  TIMELAKE_ASSIGN_OR_RAISE(timelake::Lake lake, timelake::Lake::Open(warehouse));
  timelake::Session session(lake);
  bool first_query = true;
  for (const Query& query : queries) {
    // The first query of the process also pays for opening the lake.
    const auto start = first_query ? open_start : Clock::now();
    first_query = false;
    auto first = RunOne(&session, query);
    const double first_ms = MillisSince(start);
    if (!first.ok()) {
      // A failing query is reported in its place; the others still run.
      results.push_back({{"name", query.name}, {"error", first.status().ToString()}});
      continue;
    }
    const std::shared_ptr<arrow::Table> result = *std::move(first);
    std::vector<double> times;
    for (int i = 0; i < repeats; ++i) {
      const auto again = Clock::now();
      TIMELAKE_RETURN_NOT_OK(RunOne(&session, query).status());
      times.push_back(MillisSince(again));
    }
    if (!results_dir.empty()) {
      ARROW_RETURN_NOT_OK(WriteArrow(
          *result, std::filesystem::path(results_dir) / (query.name + ".arrow")));
    }
    results.push_back({{"name", query.name},
                       {"rows", result->num_rows()},
                       {"first_ms", first_ms},
                       {"times_ms", times},
                       {"median_ms", Median(times)}});
  }
  json out = {{"queries", results}, {"peak_rss_kib", PeakRssKib()}};
  std::cout << out.dump() << std::endl;
  return arrow::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  timelake::PreferJemallocPool();
  CLI::App app{"timelake_bench: times Timelake's ingest and queries (bench/run.py)"};
  app.require_subcommand(1);
  std::string warehouse;
  app.add_option("-w,--warehouse", warehouse, "Warehouse path or URL")->required();

  std::string table = "bench.cpu";
  std::vector<std::string> files;
  auto* ingest = app.add_subcommand("ingest", "Create the table and append each file");
  ingest->add_option("-t,--table", table, "Table name");
  ingest->add_option("files", files, "Parquet files, one commit each")->required();
  bool no_maintain = false;
  ingest->add_flag("--no-maintain", no_maintain,
                   "Appends without inline maintenance (default: the table's, on)");

  std::string queries_path;
  std::string only;
  std::string results_dir;
  int repeats = 3;
  auto* query = app.add_subcommand("query", "Run queries and time them");
  query->add_option("-q,--queries", queries_path, "JSON list of queries")->required();
  query->add_option("--only", only, "Run only the query of this name");
  query->add_option("--repeats", repeats, "Warm runs after the first")
      ->check(CLI::NonNegativeNumber);
  query->add_option("--results", results_dir, "Write each result to DIR/NAME.arrow");

  CLI11_PARSE(app, argc, argv);

  arrow::Status status = arrow::compute::Initialize();
  if (status.ok()) {
    status = ingest->parsed()
                 ? Ingest(warehouse, table, files, no_maintain)
                 : RunQueries(warehouse, queries_path, only, repeats, results_dir);
  }
  timelake::Flush();
  if (!status.ok()) {
    std::cerr << "timelake_bench: error: " << status.ToString() << std::endl;
    return 1;
  }
  return 0;
}
