// Copyright 2026 The Timelake Authors. Apache-2.0.

#include "timelake/cli/commands.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "timelake/cli/demo.h"
#include "timelake/cli/util.h"
#include "timelake/settings.h"
#include "timelake/status.h"

namespace timelake::cli {
namespace {

// `timelake settings`: the registry, as an aligned table, Markdown or JSON.
class SettingsCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("--format", format_, "table, markdown (docs/settings.md) or json")
        ->check(CLI::IsMember({"table", "markdown", "json"}))
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs&) override { return Print(&std::cout); }

 private:
  arrow::Status Print(std::ostream* out) const {
    if (format_ == "markdown") {
      *out << settings::Markdown();
      return arrow::Status::OK();
    }
    if (format_ == "json") {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& s : settings::All()) {
        list.push_back({{"name", std::string(s.name)},
                        {"property", s.PropertyKey()},
                        {"sql", s.SqlName()},
                        {"type", std::string(settings::TypeName(s.type))},
                        {"choices", std::string(s.choices)},
                        {"default", std::string(s.default_value)},
                        {"levels", settings::LevelNames(s.levels)},
                        {"since", std::string(s.since)},
                        {"implemented", s.implemented},
                        {"description", std::string(s.description)}});
      }
      *out << list.dump(2) << "\n";
      return arrow::Status::OK();
    }
    size_t name_width = 0, type_width = 0, default_width = 0, level_width = 0;
    for (const auto& s : settings::All()) {
      name_width = std::max(name_width, s.PropertyKey().size());
      type_width = std::max(type_width, settings::TypeName(s.type).size());
      default_width = std::max(default_width, s.default_value.size());
      level_width = std::max(level_width, settings::LevelNames(s.levels).size());
    }
    *out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", "setting", name_width,
                        "type", type_width, "default", default_width, "levels",
                        level_width, "description");
    for (const auto& s : settings::All()) {
      std::string description(s.description);
      if (!s.choices.empty()) description += " [" + std::string(s.choices) + "]";
      if (!s.implemented) description = "(not implemented yet) " + description;
      *out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", s.PropertyKey(),
                          name_width, settings::TypeName(s.type), type_width,
                          s.default_value.empty() ? "-" : std::string(s.default_value),
                          default_width, settings::LevelNames(s.levels), level_width,
                          description);
    }
    return arrow::Status::OK();
  }

  std::string format_ = "table";
};

// `timelake demo`: RunDemo with the warehouse of its own -w, else the
// global one, else $TIMELAKE_WAREHOUSE (as every other command), else
// ./timelake-demo.
class DemoCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("-w,--warehouse", warehouse_,
                    "Warehouse (default: $TIMELAKE_WAREHOUSE, else ./timelake-demo)");
    app->add_option("--hosts", options_.hosts, "Hosts")->capture_default_str();
    app->add_option("--hours", options_.hours, "Hours of data, a row per host every 10 s")
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    const char* env = std::getenv("TIMELAKE_WAREHOUSE");
    options_.warehouse = !warehouse_.empty()              ? warehouse_
                         : !global.warehouse.empty()      ? global.warehouse
                         : env != nullptr && *env != '\0' ? std::string(env)
                                                          : "timelake-demo";
    ARROW_ASSIGN_OR_RAISE(options_.session_statements, SessionStatements(global.sets));
    return RunDemo(options_, &std::cout);
  }

 private:
  DemoOptions options_;
  std::string warehouse_;
};

constexpr std::array kSubcommands = {
    CommandSpec{"create", "",
                "Create a table with the schema of a data file or of a schema file",
                false, MakeCreateCommand},
    CommandSpec{"append", "import",
                "Append Parquet, CSV, TSV, NDJSON files (.gz for gzipped text) as one "
                "commit, all or nothing (or one per --commit-rows rows)",
                false, MakeAppendCommand},
    CommandSpec{"maintain", "",
                "Retention, compaction into sorted duplicate-free files of the target "
                "size, snapshot expiry and deletion of unreferenced files",
                false, MakeMaintainCommand},
    CommandSpec{"delete", "",
                "Delete the rows a predicate matches (--where): the files that hold them "
                "are rewritten without them, in one commit",
                false, MakeDeleteCommand},
    CommandSpec{"rollback", "",
                "Make an earlier snapshot the current one (metadata only; `info "
                "--snapshots` lists them)",
                false, MakeRollbackCommand},
    CommandSpec{"upgrade", "",
                "Bring a table (also a plain Iceberg table another engine wrote) to this "
                "format, one commit per step; --dry-run lists the steps",
                false, MakeUpgradeCommand},
    CommandSpec{"sql", "",
                "Run SQL: one QUERY, a script (-f FILE or stdin, statements end with "
                "';'), or an interactive shell when neither is given on a terminal",
                true, MakeSqlCommand},
    CommandSpec{"latest", "", "The newest row of every series", true, MakeLatestCommand},
    CommandSpec{"info", "", "Summary of a table", false, MakeInfoCommand},
    CommandSpec{"ls", "", "List tables (of one namespace)", false, MakeLsCommand},
    CommandSpec{"drop", "", "Delete a table and all its files", false, MakeDropCommand},
    CommandSpec{"alter", "",
                "Set or remove table properties, add, rename or widen columns "
                "(one commit, no new snapshot)",
                false, MakeAlterCommand},
    CommandSpec{
        "serve", "",
        "Serve the warehouse as an Iceberg REST catalog (Spark, Trino, PyIceberg, "
        "DuckDB)",
        false, MakeServeCommand},
    CommandSpec{"settings", "",
                "List every timelake.* setting: type, default, levels, description",
                false, MakeSettingsCommand},
    CommandSpec{"demo", "",
                "Load the TSBS cpu-only data set into demo.cpu and run example queries",
                true, MakeDemoCommand},
};

// The local directory `url` names: a path without a scheme, or a file://
// URL; nullopt for an object store (or memory://).
std::optional<std::string> LocalPathOf(const std::string& url) {
  constexpr std::string_view kFile = "file://";
  if (url.rfind(kFile, 0) == 0) return url.substr(kFile.size());
  if (url.find("://") == std::string::npos) return url;
  return std::nullopt;
}

}  // namespace

std::span<const CommandSpec> Subcommands() { return kSubcommands; }

std::unique_ptr<Command> MakeSettingsCommand() {
  return std::make_unique<SettingsCommand>();
}
std::unique_ptr<Command> MakeDemoCommand() { return std::make_unique<DemoCommand>(); }

arrow::Result<Lake> OpenLake(const GlobalArgs& global, WarehouseUse use) {
  std::string url = global.warehouse;
  if (url.empty()) {
    const char* env = std::getenv("TIMELAKE_WAREHOUSE");
    if (env != nullptr) url = env;
  }
  if (url.empty()) {
    return UsageError("no warehouse: pass -w WAREHOUSE or set TIMELAKE_WAREHOUSE");
  }
  ARROW_ASSIGN_OR_RAISE(auto options,
                        ParseKeyValues(global.storage_options, "--storage-option"));
  // The storage client creates a missing local root on open; object stores
  // have no directories to check (a missing bucket fails on first use).
  const std::optional<std::string> local = LocalPathOf(url);
  if (use == WarehouseUse::kExisting && local.has_value()) {
    std::error_code error;
    if (!std::filesystem::is_directory(*local, error)) {
      return NotFound(fmt::format(
          "no warehouse at {}{} (create, append and demo create one; check -w or "
          "TIMELAKE_WAREHOUSE)",
          url, std::filesystem::exists(*local, error) ? ": not a directory" : ""));
    }
  }
  return Lake::Open(url, options);
}

arrow::Result<std::vector<std::string>> SessionStatements(
    const std::vector<std::string>& sets) {
  std::vector<std::string> statements;
  for (const auto& item : sets) {
    ARROW_ASSIGN_OR_RAISE(auto kv, SplitKeyValue(item, "--set"));
    std::string key = kv.first;
    const std::string lower = ToLower(key);
    if (lower.rfind("timelake.", 0) != 0 || key.size() == 9) {
      return UsageError(fmt::format(
          "--set expects timelake.NAME=VALUE (a session setting), got '{}'", item));
    }
    for (char& c : key) {
      if (c == '-') c = '_';
    }
    std::string value;
    for (char c : kv.second) {
      value += c;
      if (c == '\'') value += '\'';
    }
    statements.push_back(fmt::format("SET {} = '{}'", key, value));
  }
  return statements;
}

}  // namespace timelake::cli
