// Copyright 2026 The Timelake Authors. Apache-2.0.
//
// `maintain`, `delete`, `rollback`, `upgrade`, `info`, `ls`, `drop` and
// `alter`: one table (or the list of them) as a whole.

#include <algorithm>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "timelake/cli/columns.h"
#include "timelake/cli/commands.h"
#include "timelake/cli/output.h"
#include "timelake/cli/util.h"
#include "timelake/timelake.h"

namespace timelake::cli {
namespace {

class MaintainCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_flag("--no-retention", no_retention_,
                  "Keep partitions past timelake.retention");
    app->add_flag("--no-compact", no_compact_, "Rewrite nothing");
    app->add_flag("--no-expire", no_expire_, "Expire no snapshot");
    app->add_flag("--no-orphans", no_orphans_, "Skip the sweep of unreferenced files");
    app->add_option("--orphan-age", orphan_age_,
                    "Unreferenced files younger than this stay (they may belong to a "
                    "commit in flight); 0s only when nothing else writes")
        ->capture_default_str();
    app->add_option("--format", format_, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    MaintainOptions options;
    options.retention = !no_retention_;
    options.compact = !no_compact_;
    options.expire = !no_expire_;
    options.clean_orphans = !no_orphans_;
    auto age = ParseDuration(orphan_age_);
    if (!age.ok()) return UsageError("--orphan-age: " + age.status().message());
    options.orphan_age = *age;
    if (format_ == "text") {
      options.progress = [](const std::string& line) { std::cerr << line << std::endl; };
    }
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(table_));
    ARROW_ASSIGN_OR_RAISE(auto maintained, table.Maintain(options));
    const MaintainReport& r = maintained.second;
    if (format_ == "json") {
      nlohmann::json out = {
          {"table", table.name().ToString()},
          {"version", r.version},
          {"partitions_dropped", r.partitions_dropped},
          {"files_dropped", r.files_dropped},
          {"rows_dropped", r.rows_dropped},
          {"partitions_compacted", r.partitions_compacted},
          {"files_rewritten", r.files_rewritten},
          {"files_written", r.files_written},
          {"rows_rewritten", r.rows_rewritten},
          {"duplicates_removed", r.duplicates_removed},
          {"bytes_rewritten", r.bytes_rewritten},
          {"bytes_written", r.bytes_written},
          {"snapshots_expired", r.snapshots_expired},
          {"files_deleted", r.files_deleted},
          {"orphans_deleted", r.orphans_deleted},
          {"commits", r.commits},
          {"seconds", static_cast<double>(r.duration.count()) / 1e6},
      };
      std::cout << out.dump() << std::endl;
      return arrow::Status::OK();
    }
    std::cout << fmt::format(
                     "maintained {} in {:.2f} s: version {}; {} partitions dropped; {} "
                     "partitions compacted ({} files -> {}, {} duplicates removed); {} "
                     "snapshots expired, {} files deleted; {} orphan files deleted",
                     table.name().ToString(),
                     static_cast<double>(r.duration.count()) / 1e6, r.version,
                     r.partitions_dropped, r.partitions_compacted, r.files_rewritten,
                     r.files_written, r.duplicates_removed, r.snapshots_expired,
                     r.files_deleted, r.orphans_deleted)
              << std::endl;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  bool no_retention_ = false;
  bool no_compact_ = false;
  bool no_expire_ = false;
  bool no_orphans_ = false;
  std::string orphan_age_ = "1d";
  std::string format_ = "text";
};

// Copy-on-write delete of the rows a predicate matches (Table::Delete).
class DeleteCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_option("--where", where_,
                    "SQL predicate over the table's columns; the rows for which it is "
                    "true are deleted, e.g. \"sensor = 's-17'\" or \"ts < '2026-01-01'\"")
        ->required();
    app->add_flag("--purge", purge_,
                  "Then expire the older snapshots and delete the files only they used, "
                  "so the rows leave storage now (time travel to before loses them)");
    app->add_option("--format", format_, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    if (where_.find_first_not_of(" \t\r\n") == std::string::npos) {
      return UsageError(
          "--where needs a predicate; to delete every row say so: --where true");
    }
    DeleteOptions options;
    options.purge = purge_;
    if (format_ == "text") {
      options.progress = [](const std::string& line) { std::cerr << line << std::endl; };
    }
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(table_));
    ARROW_ASSIGN_OR_RAISE(auto deleted, table.Delete(where_, options));
    const DeleteReport& r = deleted.second;
    const double seconds = static_cast<double>(r.duration.count()) / 1e6;
    if (format_ == "json") {
      nlohmann::json out = {
          {"table", table.name().ToString()}, {"version", r.version},
          {"rows_deleted", r.rows_deleted},   {"partitions", r.partitions},
          {"files_removed", r.files_removed}, {"files_rewritten", r.files_rewritten},
          {"files_written", r.files_written}, {"rows_rewritten", r.rows_rewritten},
          {"bytes_written", r.bytes_written}, {"snapshots_expired", r.snapshots_expired},
          {"files_deleted", r.files_deleted}, {"seconds", seconds},
      };
      std::cout << out.dump() << std::endl;
      return arrow::Status::OK();
    }
    if (!r.snapshot_id) {
      std::cout << fmt::format("no row of {} matches; nothing deleted",
                               table.name().ToString())
                << std::endl;
    } else {
      const auto counted = [](int64_t n, std::string_view what) {
        return fmt::format("{} {}{}", FormatInteger(n), what, n == 1 ? "" : "s");
      };
      std::cout << fmt::format(
                       "deleted {} from {} in {:.2f} s: version {}; {}, {} removed ({} "
                       "rewritten into {}, {} copied)",
                       counted(r.rows_deleted, "row"), table.name().ToString(), seconds,
                       r.version, counted(r.partitions, "partition"),
                       counted(r.files_removed, "file"), r.files_rewritten,
                       r.files_written, counted(r.rows_rewritten, "row"))
                << std::endl;
    }
    if (purge_) {
      std::cout << fmt::format("purged: {} snapshot{} expired, {} file{} deleted",
                               r.snapshots_expired, r.snapshots_expired == 1 ? "" : "s",
                               r.files_deleted, r.files_deleted == 1 ? "" : "s")
                << std::endl;
    } else if (r.snapshot_id) {
      std::cout << "the old files stay for older snapshots until snapshot expiry "
                   "(`maintain`); --purge removes them now"
                << std::endl;
    }
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  std::string where_;
  bool purge_ = false;
  std::string format_ = "text";
};

// The table's columns as "name type" (Arrow's names of the types), with
// "not null" where nulls are refused; the columns Timelake adds included.
std::vector<std::pair<std::string, std::string>> Columns(const arrow::Schema& schema) {
  std::vector<std::pair<std::string, std::string>> columns;
  for (const auto& field : schema.fields()) {
    columns.emplace_back(field->name(), field->type()->ToString() +
                                            (field->nullable() ? "" : " not null"));
  }
  return columns;
}

// What `rows` counts in a dedup table, where it and count(*) may differ.
std::string DedupNote(const TableInfo& info) {
  if (!info.dedup || !info.time_column.has_value()) return info.dedup ? "on" : "off";
  std::vector<std::string> key = info.series_key;
  key.push_back(*info.time_column);
  return fmt::format(
      "on: queries see one row per ({}); rows counts the rows stored, duplicates "
      "included until compaction (`maintain`) removes them, so count(*) may be lower",
      fmt::join(key, ", "));
}

// A UTC time of milliseconds since the epoch, "2026-12-03 11:00:50.123".
std::string UtcMillis(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03d}", text, static_cast<int>(ms % 1000));
}

std::string InfoJson(const TableInfo& info, const arrow::Schema& schema) {
  const auto optional_string = [](const std::optional<std::string>& value) {
    return value.has_value() ? JsonQuote(*value) : std::string("null");
  };
  std::vector<std::string> series_key;
  for (const auto& column : info.series_key) series_key.push_back(JsonQuote(column));
  std::vector<std::string> properties;
  for (const auto& [key, value] : info.properties) {
    properties.push_back(JsonQuote(key) + ": " + JsonQuote(value));
  }
  std::vector<std::string> columns;
  for (const auto& [name, type] : Columns(schema)) {
    columns.push_back(
        fmt::format("{{\"name\": {}, \"type\": {}}}", JsonQuote(name), JsonQuote(type)));
  }
  nlohmann::json rollups = nlohmann::json::array();
  for (const auto& r : info.rollups) {
    rollups.push_back(
        {{"name", r.name},
         {"bucket", r.bucket},
         {"source_snapshot_id",
          r.source_snapshot_id ? nlohmann::json(*r.source_snapshot_id) : nullptr},
         {"refreshed_ms", r.refreshed_ms ? nlohmann::json(*r.refreshed_ms) : nullptr},
         {"behind", r.behind},
         {"problem",
          r.problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.problem)}});
  }
  return fmt::format(
      "{{\"name\": {}, \"location\": {}, \"version\": {}, \"snapshot_id\": {}, "
      "\"time_column\": {}, \"series_key\": [{}], \"chunk\": {}, \"dedup\": {}, "
      "\"rows\": {}, \"files\": {}, \"bytes\": {}, \"snapshots\": {}, "
      "\"columns\": [{}], \"properties\": {{{}}}, \"rollup_of\": {}, "
      "\"rollups\": {}}}",
      JsonQuote(info.name), JsonQuote(info.location), info.version,
      info.snapshot_id.has_value() ? std::to_string(*info.snapshot_id) : "null",
      optional_string(info.time_column), fmt::join(series_key, ", "),
      JsonQuote(info.chunk), info.dedup ? "true" : "false", info.rows, info.files,
      info.bytes, info.snapshots, fmt::join(columns, ", "), fmt::join(properties, ", "),
      info.rollup_of.empty() ? std::string("null") : JsonQuote(info.rollup_of),
      rollups.dump());
}

std::string InfoText(const TableInfo& info, const arrow::Schema& schema) {
  std::string text;
  const auto row = [&](std::string_view key, const std::string& value) {
    text += fmt::format("{:<12} {}\n", key, value);
  };
  row("table", info.name);
  row("location", info.location);
  row("version", std::to_string(info.version));
  row("snapshot",
      info.snapshot_id.has_value() ? std::to_string(*info.snapshot_id) : "none");
  row("time column", info.time_column.value_or("none (plain table)"));
  row("series key", info.series_key.empty()
                        ? "none"
                        : fmt::format("{}", fmt::join(info.series_key, ",")));
  row("chunk", info.chunk);
  row("dedup", DedupNote(info));
  row("rows", FormatInteger(info.rows));
  row("files", FormatInteger(info.files));
  row("size",
      fmt::format("{} ({} bytes)", FormatBytes(info.bytes), FormatInteger(info.bytes)));
  row("snapshots", FormatInteger(info.snapshots));
  if (!info.rollup_of.empty()) {
    row("rollup of", info.rollup_of + " (its rows come from refreshes)");
  }
  if (!info.rollups.empty()) {
    text += "rollups\n";
    for (const auto& r : info.rollups) {
      std::string state;
      if (!r.problem.empty()) {
        state = r.problem;
      } else if (r.behind == 0) {
        state = "up to date";
      } else {
        state = fmt::format("{} commit{} behind (queries read those from raw data)",
                            r.behind, r.behind == 1 ? "" : "s");
      }
      if (r.refreshed_ms) state += ", refreshed " + UtcMillis(*r.refreshed_ms) + " UTC";
      text += fmt::format("  {} ({}): {}\n", r.name, r.bucket.empty() ? "?" : r.bucket,
                          state);
    }
  }
  text += "columns\n";
  const auto columns = Columns(schema);
  size_t width = 0;
  for (const auto& column : columns) width = std::max(width, column.first.size());
  for (const auto& [name, type] : columns) {
    text += fmt::format("  {:<{}}  {}\n", name, width, type);
  }
  if (!info.properties.empty()) {
    text += "properties\n";
    for (const auto& [key, value] : info.properties) {
      text += fmt::format("  {} = {}\n", key, value);
    }
  }
  return text;
}

// `info --snapshots`: one line (or JSON object) per snapshot kept.
void PrintSnapshots(const std::vector<SnapshotInfo>& snapshots, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : snapshots) {
      out.push_back({{"snapshot_id", s.snapshot_id},
                     {"parent_id", s.parent_id ? nlohmann::json(*s.parent_id) : nullptr},
                     {"sequence_number", s.sequence_number},
                     {"timestamp_ms", s.timestamp_ms},
                     {"operation", s.operation},
                     {"rows", s.rows},
                     {"batch_id", s.batch_id ? nlohmann::json(*s.batch_id) : nullptr},
                     {"current", s.current},
                     {"in_history", s.in_history}});
    }
    std::cout << out.dump() << std::endl;
    return;
  }
  std::string text = fmt::format("{:<20} {:>4} {:<23} {:<10} {:>12}  {}\n", "snapshot",
                                 "seq", "committed (UTC)", "operation", "rows", "");
  for (const auto& s : snapshots) {
    std::string marks = s.current ? "current" : s.in_history ? "" : "left by a rollback";
    if (s.batch_id) marks += (marks.empty() ? "" : ", ") + ("batch " + *s.batch_id);
    text += fmt::format("{:<20} {:>4} {:<23} {:<10} {:>12}  {}\n", s.snapshot_id,
                        s.sequence_number, UtcMillis(s.timestamp_ms), s.operation,
                        FormatInteger(s.rows), marks);
  }
  std::cout << text << std::flush;
}

class InfoCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_flag("--snapshots", snapshots_,
                  "List the snapshots kept (ids for `rollback`) instead of the summary");
    app->add_option("--format", format_, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(table_));
    if (snapshots_) {
      PrintSnapshots(table.Snapshots(), format_ == "json");
      return arrow::Status::OK();
    }
    const TableInfo info = table.Info();
    const auto schema = table.schema();
    std::cout << (format_ == "json" ? InfoJson(info, *schema) + "\n"
                                    : InfoText(info, *schema))
              << std::flush;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  bool snapshots_ = false;
  std::string format_ = "text";
};

// Restores an earlier snapshot (Table::Rollback).
class RollbackCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_option(
           "snapshot", snapshot_,
           "Snapshot id to restore (`timelake info TABLE --snapshots` lists them)")
        ->required();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(table_));
    if (table.current_snapshot_id() == snapshot_) {
      std::cout << fmt::format("{} is at snapshot {} already; nothing changed",
                               table.name().ToString(), snapshot_)
                << std::endl;
      return arrow::Status::OK();
    }
    ARROW_ASSIGN_OR_RAISE(Table rolled, table.Rollback(snapshot_));
    std::cout << fmt::format("rolled {} back to snapshot {}: version {}, {} rows",
                             rolled.name().ToString(), snapshot_, rolled.version(),
                             FormatInteger(rolled.Info().rows))
              << std::endl;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  int64_t snapshot_ = 0;
};

class LsCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("namespace", ns_, "Namespace");
  }

  arrow::Status Run(const GlobalArgs& global) override {
    if (!ns_.empty()) ARROW_RETURN_NOT_OK(ValidateNamePart(ns_, "namespace"));
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(auto tables, lake.ListTables(ns_));
    std::string text;
    for (const auto& name : tables) {
      text += name.ToString();
      // Rollup tables are marked with the table they roll up.
      auto table = lake.LoadTable(name.ToString());
      if (table.ok()) {
        auto source = table->properties().find("timelake.rollup-source");
        if (source != table->properties().end()) {
          text += "  (rollup of " + source->second + ")";
        }
      }
      text += "\n";
    }
    std::cout << text << std::flush;
    return arrow::Status::OK();
  }

 private:
  std::string ns_;
};

class DropCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_flag("--if-exists", if_exists_, "No error when the table does not exist");
  }

  arrow::Status Run(const GlobalArgs& global) override {
    auto lake = OpenLake(global, WarehouseUse::kExisting);
    std::vector<std::string> rollups;
    auto status = lake.ok() ? lake->DropTable(table_, &rollups) : lake.status();
    if (!status.ok() && if_exists_ && KindOf(status) == ErrorKind::kNotFound) {
      std::cerr << table_ << " does not exist" << std::endl;
      return arrow::Status::OK();
    }
    ARROW_RETURN_NOT_OK(status);
    std::cout << "dropped " << table_;
    if (!rollups.empty()) {
      std::cout << fmt::format(" and its rollup{} {}", rollups.size() == 1 ? "" : "s",
                               fmt::join(rollups, ", "));
    }
    std::cout << std::endl;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  bool if_exists_ = false;
};

// "OLD:NEW" or "NAME:TYPE" split at the last ':'; `flag` names the flag in
// errors.
arrow::Result<std::pair<std::string, std::string>> SplitPair(const std::string& text,
                                                             const std::string& flag,
                                                             std::string_view form) {
  const auto colon = text.rfind(':');
  const auto trim = [](std::string part) {
    part.erase(0, part.find_first_not_of(" \t"));
    part.erase(part.find_last_not_of(" \t") + 1);
    return part;
  };
  if (colon == std::string::npos || trim(text.substr(0, colon)).empty() ||
      trim(text.substr(colon + 1)).empty()) {
    return UsageError(fmt::format("{} '{}': expected {}", flag, text, form));
  }
  return std::make_pair(trim(text.substr(0, colon)), trim(text.substr(colon + 1)));
}

// Schema changes (one commit), then property changes (another).
class AlterCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_option("--set", sets_, "Property KEY=VALUE (repeatable)")
        ->allow_extra_args(false);
    app->add_option("--unset", unsets_, "Property KEY to remove (repeatable)")
        ->allow_extra_args(false);
    app->add_option("--add-column", adds_,
                    "NAME:TYPE, a new nullable column (repeatable); older rows read it "
                    "as null. TYPE as for create's --column, or decimal(P,S)")
        ->allow_extra_args(false);
    app->add_option("--rename-column", renames_,
                    "OLD:NEW, a new name for a column (repeatable); its data stays. "
                    "Renames apply first, then widenings, then additions, all in one "
                    "commit")
        ->allow_extra_args(false);
    app->add_option("--widen-column", widens_,
                    "NAME:TYPE, a wider type for a column (repeatable): int32 to int64, "
                    "float32 to float64, decimal(P,S) to a larger precision")
        ->allow_extra_args(false);
    app->add_option("--format", format_, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    if (sets_.empty() && unsets_.empty() && adds_.empty() && renames_.empty() &&
        widens_.empty()) {
      return UsageError(
          "alter needs at least one --set KEY=VALUE, --unset KEY, --add-column "
          "NAME:TYPE, --rename-column OLD:NEW or --widen-column NAME:TYPE");
    }
    // Renames first, then widenings (by the new names), then additions (which
    // may take a name a rename freed).
    std::vector<SchemaChange> schema_changes;
    std::vector<std::string> done;
    for (const auto& r : renames_) {
      ARROW_ASSIGN_OR_RAISE(auto pair, SplitPair(r, "--rename-column", "OLD:NEW"));
      done.push_back(fmt::format("renamed column {} to {}", pair.first, pair.second));
      schema_changes.push_back(SchemaChange::RenameColumn(pair.first, pair.second));
    }
    for (const auto& w : widens_) {
      ARROW_ASSIGN_OR_RAISE(auto pair, SplitPair(w, "--widen-column", "NAME:TYPE"));
      auto type = ParseColumnType(pair.second);
      if (!type.ok()) {
        return UsageError(
            fmt::format("--widen-column '{}': {}", w, type.status().message()));
      }
      done.push_back(
          fmt::format("widened column {} to {}", pair.first, ColumnTypeName(**type)));
      schema_changes.push_back(SchemaChange::WidenColumn(pair.first, *type));
    }
    for (const auto& a : adds_) {
      ARROW_ASSIGN_OR_RAISE(auto pair, SplitPair(a, "--add-column", "NAME:TYPE"));
      auto type = ParseColumnType(pair.second);
      if (!type.ok()) {
        return UsageError(
            fmt::format("--add-column '{}': {}", a, type.status().message()));
      }
      done.push_back(
          fmt::format("added column {} ({})", pair.first, ColumnTypeName(**type)));
      schema_changes.push_back(SchemaChange::AddColumn(pair.first, *type));
    }
    std::map<std::string, std::optional<std::string>> changes;
    ARROW_ASSIGN_OR_RAISE(auto sets, ParseKeyValues(sets_, "--set"));
    for (auto& [k, v] : sets) changes[k] = v;
    for (const auto& k : unsets_) changes[k] = std::nullopt;
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(table_));
    // One commit: a bad property value leaves the schema unchanged too.
    if (schema_changes.empty()) {
      ARROW_ASSIGN_OR_RAISE(table, table.SetProperties(changes));
    } else {
      ARROW_ASSIGN_OR_RAISE(table, table.EvolveSchema(schema_changes, changes));
    }
    for (const auto& [k, v] : changes) {
      done.push_back(v ? fmt::format("set {} = {}", k, *v) : fmt::format("unset {}", k));
    }
    if (format_ == "json") {
      nlohmann::json out = {
          {"table", table.name().ToString()},
          {"version", table.version()},
          {"changes", done},
      };
      std::cout << out.dump() << std::endl;
      return arrow::Status::OK();
    }
    std::cout << "altered " << table.name().ToString() << ": version " << table.version()
              << "; " << fmt::format("{}", fmt::join(done, "; ")) << std::endl;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  std::vector<std::string> sets_;
  std::vector<std::string> unsets_;
  std::vector<std::string> adds_;
  std::vector<std::string> renames_;
  std::vector<std::string> widens_;
  std::string format_ = "text";
};

// Brings a table to this build's format (Table::Upgrade).
class UpgradeCommand : public Command {
 public:
  void AddOptions(CLI::App* app) override {
    app->add_option("table", table_, "Table name")->required();
    app->add_flag("--dry-run", dry_run_, "List the steps without changing anything");
    app->add_flag("--no-compact", no_compact_, "Rewrite no data file");
    app->add_option("--keep-snapshots", keep_,
                    "Protect the snapshots from before the upgrade from expiry this long "
                    "(rollback stays possible)")
        ->capture_default_str();
    app->add_option("--time-column", time_column_,
                    "Adopting a plain Iceberg table: its timestamp column, which makes "
                    "it a time-series table");
    app->add_option("--series-key", series_key_,
                    "Adopting a plain Iceberg table: comma-separated columns "
                    "identifying one series")
        ->delimiter(',')
        ->allow_extra_args(false);
    app->add_option("--format", format_, "text or json")
        ->check(CLI::IsMember({"text", "json"}))
        ->capture_default_str();
  }

  arrow::Status Run(const GlobalArgs& global) override {
    UpgradeOptions options;
    options.dry_run = dry_run_;
    options.compact = !no_compact_;
    auto keep = ParseDuration(keep_);
    if (!keep.ok()) return UsageError("--keep-snapshots: " + keep.status().message());
    options.keep_snapshots = *keep;
    options.time_column = time_column_;
    options.series_key = series_key_;
    ARROW_ASSIGN_OR_RAISE(Lake lake, OpenLake(global, WarehouseUse::kExisting));
    ARROW_ASSIGN_OR_RAISE(Table table, lake.LoadTable(table_));
    ARROW_ASSIGN_OR_RAISE(auto upgraded, table.Upgrade(options));
    const UpgradeReport& r = upgraded.second;
    const double seconds = static_cast<double>(r.duration.count()) / 1e6;
    // An untagged table counts as 0.1.0 (the text output says it was untagged).
    const std::string from = r.from_format.empty() ? "0.1.0" : r.from_format;
    if (format_ == "json") {
      nlohmann::json steps = nlohmann::json::array();
      for (const auto& s : r.steps) {
        steps.push_back({{"step", std::string(UpgradeStepName(s.kind))},
                         {"description", s.description},
                         {"done", s.done},
                         {"version", s.version ? nlohmann::json(s.version) : nullptr}});
      }
      nlohmann::json out = {
          {"table", table.name().ToString()},
          {"dry_run", r.dry_run},
          {"from_format", from},
          {"from_untagged", r.from_format.empty()},
          {"to_format", r.to_format.empty() ? "0.1.0" : r.to_format},
          {"version", r.version},
          {"steps", steps},
          {"files_rewritten", r.files_rewritten},
          {"files_written", r.files_written},
          {"rows_rewritten", r.rows_rewritten},
          {"seconds", seconds},
      };
      std::cout << out.dump() << std::endl;
      return arrow::Status::OK();
    }
    const std::string name = table.name().ToString();
    const std::string from_text = r.from_format.empty() ? "0.1.0 (untagged)" : from;
    std::string text;
    if (!r.changed()) {
      text = fmt::format("{} is current (format {}, version {}); nothing to upgrade\n",
                         name, from_text, r.version);
    } else if (r.dry_run) {
      text = fmt::format(
          "{} (format {}, version {}) needs {} upgrade step{}{}; nothing was "
          "changed (dry run):\n",
          name, from_text, r.version, r.steps.size(), r.steps.size() == 1 ? "" : "s",
          r.to_format == r.from_format ? "" : " to format " + r.to_format);
    } else {
      text = fmt::format("upgraded {}{} in {:.2f} s: version {}\n", name,
                         r.to_format == r.from_format
                             ? ""
                             : " from format " + from_text + " to " + r.to_format,
                         seconds, r.version);
    }
    for (size_t i = 0; i < r.steps.size(); ++i) {
      const auto& s = r.steps[i];
      text +=
          fmt::format("  {}. {}: {}{}\n", i + 1, UpgradeStepName(s.kind), s.description,
                      s.version ? fmt::format(" (version {})", s.version) : "");
    }
    std::cout << text << std::flush;
    return arrow::Status::OK();
  }

 private:
  std::string table_;
  bool dry_run_ = false;
  bool no_compact_ = false;
  std::string keep_ = "7d";
  std::optional<std::string> time_column_;
  std::vector<std::string> series_key_;
  std::string format_ = "text";
};

}  // namespace

std::unique_ptr<Command> MakeMaintainCommand() {
  return std::make_unique<MaintainCommand>();
}
std::unique_ptr<Command> MakeDeleteCommand() { return std::make_unique<DeleteCommand>(); }
std::unique_ptr<Command> MakeInfoCommand() { return std::make_unique<InfoCommand>(); }
std::unique_ptr<Command> MakeRollbackCommand() {
  return std::make_unique<RollbackCommand>();
}
std::unique_ptr<Command> MakeLsCommand() { return std::make_unique<LsCommand>(); }
std::unique_ptr<Command> MakeDropCommand() { return std::make_unique<DropCommand>(); }
std::unique_ptr<Command> MakeAlterCommand() { return std::make_unique<AlterCommand>(); }
std::unique_ptr<Command> MakeUpgradeCommand() {
  return std::make_unique<UpgradeCommand>();
}

}  // namespace timelake::cli
